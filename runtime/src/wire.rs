//! Wire names: capability ids encoded into the alphabet and length that model
//! providers accept for tool names (`[A-Za-z0-9_-]`, at most 64 characters).
//! Use it to name tools for a provider and to map a tool name back to its
//! capability id.
//!
//! - `:` becomes `_` and `.` becomes `__`:
//!   `view:devices.table.selectRows` → `view_devices__table__selectRows`.
//! - When several instances are live, `_at_<instanceId>` is appended.
//! - A name longer than 64 characters keeps its first 56 characters and ends
//!   with 8 hex digits of the FNV-1a hash of the full name; if two entries of
//!   one catalog still collide, they are re-encoded with a longer hash.
//! - [`decode`] returns `None` for shortened, instance-qualified or
//!   non-canonical names rather than a wrong id: hosts map names back only
//!   through a catalog's [`WireNames`].
//!
//! # Example
//! ```
//! use agent_surface::ids::{CapabilityId, InstanceId};
//! use agent_surface::wire::{self, WireNames};
//!
//! let id: CapabilityId = "view:devices.table.selectRows".parse()?;
//! assert_eq!(wire::encode(&id), "view_devices__table__selectRows");
//! assert_eq!(wire::decode("view_devices__table__selectRows"), Some(id.clone()));
//!
//! let main = InstanceId::new("main")?;
//! let names = WireNames::assign([(id.clone(), Some(main.clone()))]);
//! assert_eq!(names.name_of(&id, Some(&main)), Some("view_devices__table__selectRows_at_main"));
//! assert_eq!(wire::decode("view_devices__table__selectRows_at_main"), None);
//! # Ok::<(), agent_surface::ids::IdError>(())
//! ```

use std::collections::{BTreeMap, HashMap};

use crate::canonical::Fnv1a64;
use crate::ids::{CapabilityId, InstanceId};

/// The provider limit on tool-name length.
pub const MAX_WIRE_NAME: usize = 64;
/// Characters of the original name kept by a shortened name.
pub const SHORTENED_PREFIX: usize = 56;

/// Whether `name` uses only the provider-safe alphabet and fits the limit.
pub fn is_wire_safe(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_WIRE_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The canonical (unshortened, unqualified) wire encoding of a capability id.
pub fn encode(id: &CapabilityId) -> String {
    let text = id.as_str();
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            ':' => out.push('_'),
            '.' => out.push_str("__"),
            c => out.push(c),
        }
    }
    out
}

/// The full wire name of an entry before shortening: the canonical encoding,
/// plus `_at_<instance>` when `instance` is given.
pub fn full_name(id: &CapabilityId, instance: Option<&InstanceId>) -> String {
    let mut name = encode(id);
    if let Some(instance) = instance {
        name.push_str("_at_");
        name.push_str(instance.as_str());
    }
    name
}

/// Decodes a canonical wire name back to its capability id.
///
/// Returns `None` for anything that is not exactly the canonical encoding of a
/// valid id: instance-qualified names, names at the 64-character limit (they
/// may be shortened), and malformed text.
pub fn decode(name: &str) -> Option<CapabilityId> {
    if name.len() >= MAX_WIRE_NAME {
        return None;
    }
    let (plane, rest) = name.split_once('_')?;
    let mut id = String::with_capacity(name.len());
    id.push_str(plane);
    id.push(':');
    for (index, part) in rest.split("__").enumerate() {
        if part.is_empty() || part.contains('_') {
            return None;
        }
        if index > 0 {
            id.push('.');
        }
        id.push_str(part);
    }
    let id = CapabilityId::new(&id).ok()?;
    (encode(&id) == name).then_some(id)
}

/// Decodes a [full name](full_name) back to its capability id and instance:
/// what an adapter does with a tool name that is no longer in a consumer's
/// catalog, so the pipeline can say precisely why it is gone.
///
/// ```
/// use agent_surface::wire::decode_full_name;
///
/// let (id, instance) = decode_full_name("view_devices__table__selectRows_at_main").unwrap();
/// assert_eq!(id.as_str(), "view:devices.table.selectRows");
/// assert_eq!(instance.unwrap().as_str(), "main");
/// assert!(decode_full_name("not a tool").is_none());
/// ```
pub fn decode_full_name(name: &str) -> Option<(CapabilityId, Option<InstanceId>)> {
    if let Some(id) = decode(name) {
        return Some((id, None));
    }
    let (base, instance) = name.rsplit_once("_at_")?;
    let id = decode(base)?;
    let instance = InstanceId::new(instance).ok()?;
    Some((id, Some(instance)))
}

/// Shortens `full` to [`MAX_WIRE_NAME`] characters at the given hash strength.
fn shorten(full: &str, level: u8) -> String {
    let hash = Fnv1a64::hash(full.as_bytes());
    let suffix = match level {
        0 => format!("{:08x}", hash >> 32),
        1 => format!("{hash:016x}"),
        _ => {
            let second = Fnv1a64::hash(format!("{full}#{hash:016x}").as_bytes());
            format!("{hash:016x}{second:016x}")
        }
    };
    let keep = MAX_WIRE_NAME - suffix.len();
    // Wire names are ASCII, so any byte offset is a character boundary.
    let mut name = full.get(..keep).unwrap_or(full).to_owned();
    name.push_str(&suffix);
    name
}

/// The wire names of one emitted catalog: unique, at most 64 characters,
/// deterministic, and independent of the order entries were given in.
#[derive(Clone, Debug, Default)]
pub struct WireNames {
    by_entry: HashMap<(CapabilityId, Option<InstanceId>), String>,
    by_name: BTreeMap<String, (CapabilityId, Option<InstanceId>)>,
}

impl WireNames {
    /// Assigns a wire name to every `(capability, instance)` entry.
    ///
    /// `instance` is `Some` for entries that must be instance-qualified
    /// (several live instances of one component). Duplicate entries are merged.
    pub fn assign(
        entries: impl IntoIterator<Item = (CapabilityId, Option<InstanceId>)>,
    ) -> WireNames {
        // Work on the sorted set of full names so the outcome cannot depend on
        // the order entries arrive in.
        let mut full: BTreeMap<String, (CapabilityId, Option<InstanceId>)> = BTreeMap::new();
        for (id, instance) in entries {
            full.insert(full_name(&id, instance.as_ref()), (id, instance));
        }
        let mut level: BTreeMap<&str, u8> = full
            .keys()
            .filter(|name| name.len() > MAX_WIRE_NAME)
            .map(|name| (name.as_str(), 0))
            .collect();
        let mut names: BTreeMap<&str, String>;
        loop {
            names = full
                .keys()
                .map(|name| {
                    let wire = match level.get(name.as_str()) {
                        Some(&strength) => shorten(name, strength),
                        None => name.clone(),
                    };
                    (name.as_str(), wire)
                })
                .collect();
            let mut owners: HashMap<&str, Vec<&str>> = HashMap::new();
            for (full_name, wire) in &names {
                owners.entry(wire.as_str()).or_default().push(full_name);
            }
            // Canonical names never collide with each other (distinct ids);
            // only shortened members of a colliding group get a longer hash.
            let mut bumped = false;
            for group in owners.values().filter(|group| group.len() > 1) {
                for full_name in group {
                    if let Some(strength) = level.get_mut(full_name)
                        && *strength < 2
                    {
                        *strength += 1;
                        bumped = true;
                    }
                }
            }
            if !bumped {
                break;
            }
        }
        let mut assigned = WireNames::default();
        let mut taken: HashMap<String, usize> = HashMap::new();
        for (full_name, entry) in &full {
            let mut wire = names.get(full_name.as_str()).cloned().unwrap_or_default();
            // A 128-bit hash collision between distinct names: keep the names
            // unique with an ordinal, deterministically by sorted position.
            let seen = taken.entry(wire.clone()).or_insert(0);
            if *seen > 0 {
                let ordinal = seen.to_string();
                wire.truncate(MAX_WIRE_NAME - ordinal.len());
                wire.push_str(&ordinal);
            }
            *seen += 1;
            assigned.by_entry.insert(entry.clone(), wire.clone());
            assigned.by_name.insert(wire, entry.clone());
        }
        assigned
    }

    /// The wire name of an entry.
    pub fn name_of(&self, id: &CapabilityId, instance: Option<&InstanceId>) -> Option<&str> {
        self.by_entry
            .get(&(id.clone(), instance.cloned()))
            .map(String::as_str)
    }

    /// The entry a wire name stands for: the authoritative reverse mapping.
    pub fn resolve(&self, name: &str) -> Option<(&CapabilityId, Option<&InstanceId>)> {
        self.by_name
            .get(name)
            .map(|(id, instance)| (id, instance.as_ref()))
    }

    /// Every `(wire name, capability, instance)`, sorted by wire name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &CapabilityId, Option<&InstanceId>)> {
        self.by_name
            .iter()
            .map(|(name, (id, instance))| (name.as_str(), id, instance.as_ref()))
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}
