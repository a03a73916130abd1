//! Typed identities: component types, capability names, instance ids and
//! capability ids, each parsed and validated once against the grammar of the
//! specification (see [`agent_surface_rules::ids`]). Parse an id once here
//! and pass the typed value on.
//!
//! Each type is a cheap-to-clone validated string: once you hold one, it is
//! well formed. They serialize as plain strings and validate when deserialized.
//!
//! # Example
//! ```
//! use agent_surface::ids::{CapabilityId, ComponentType, InstanceId, Plane};
//!
//! let id: CapabilityId = "view:devices.table.selectRows".parse()?;
//! assert_eq!(id.plane(), Plane::View);
//! assert_eq!(id.component_type().map(|t| t.to_string()).as_deref(), Some("devices.table"));
//! assert_eq!(id.name(), Some("selectRows"));
//! assert!("view:devices.Table.x".parse::<CapabilityId>().is_err());
//! assert!(ComponentType::new("devices.table").is_ok());
//! assert!(InstanceId::new("main room").is_err());
//! # Ok::<(), agent_surface::ids::IdError>(())
//! ```

use std::borrow::Borrow;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

pub use agent_surface_rules::Plane;
use agent_surface_rules::ids as grammar;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A string that does not match the identity grammar.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdError {
    kind: &'static str,
    message: String,
}

impl IdError {
    /// Which kind of id was expected (`"component type"`, `"capability id"`, …).
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// What is wrong and how to write it instead.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for IdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid {}: {}", self.kind, self.message)
    }
}

impl std::error::Error for IdError {}

macro_rules! validated_string {
    ($(#[$doc:meta])* $name:ident, $kind:literal, $check:path) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(Arc<str>);

        impl $name {
            /// Validates `text` against the grammar.
            pub fn new(text: &str) -> Result<Self, IdError> {
                $check(text).map_err(|message| IdError { kind: $kind, message })?;
                Ok($name(Arc::from(text)))
            }

            /// The id as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The shared string, for cheap clones into descriptors.
            pub fn as_arc(&self) -> &Arc<str> {
                &self.0
            }
        }

        impl FromStr for $name {
            type Err = IdError;
            fn from_str(text: &str) -> Result<Self, IdError> {
                Self::new(text)
            }
        }

        impl TryFrom<&str> for $name {
            type Error = IdError;
            fn try_from(text: &str) -> Result<Self, IdError> {
                Self::new(text)
            }
        }

        impl TryFrom<String> for $name {
            type Error = IdError;
            fn try_from(text: String) -> Result<Self, IdError> {
                Self::new(&text)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                &*self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                &*self.0 == *other
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?})", stringify!($name), &*self.0)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                Self::new(&text).map_err(serde::de::Error::custom)
            }
        }
    };
}

validated_string!(
    /// A component type such as `devices.table`: dot-separated segments of
    /// lowercase letters, digits and `-`, each starting with a letter.
    ComponentType,
    "component type",
    grammar::check_component_type
);

validated_string!(
    /// A capability name such as `selectRows`: camelCase, no dots.
    CapabilityName,
    "capability name",
    grammar::check_capability_name
);

validated_string!(
    /// An instance id such as `main` or `device_456`: letters, digits, `-`, `_`.
    ///
    /// Instance ids distinguish simultaneous mounts of one component type and
    /// must be derived from data (an entity id, a semantic slot), never from
    /// render or mount order.
    InstanceId,
    "instance id",
    grammar::check_instance_id
);

impl CapabilityName {
    /// The name slot of a domain reference: the procedure path, which is
    /// opaque (not a camelCase name).
    pub(crate) fn of_procedure(path: &str) -> CapabilityName {
        CapabilityName(Arc::from(path))
    }
}

impl InstanceId {
    /// The instance id used when none is given: `default`.
    pub fn default_instance() -> InstanceId {
        InstanceId(Arc::from(grammar::DEFAULT_INSTANCE))
    }
}

impl Default for InstanceId {
    fn default() -> Self {
        InstanceId::default_instance()
    }
}

/// A capability id such as `view:devices.table.selectRows` or
/// `domain:devices.disable`.
///
/// For view ids the component type is everything between the colon and the
/// last dot, and the capability name everything after it. For domain ids the
/// path after `domain:` is opaque.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CapabilityId {
    text: Arc<str>,
    plane: Plane,
    /// Byte offset of the last dot in view ids (0 for domain ids).
    name_dot: usize,
}

/// Where a requested capability id splits (see
/// [`CapabilityId::split_requested`]), for the text it was split from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Requested {
    plane: Plane,
    name_dot: usize,
}

impl Requested {
    /// The plane.
    pub(crate) fn plane(self) -> Plane {
        self.plane
    }

    /// The component type of a view id (`text` is the id it was split
    /// from); `None` for domain ids.
    pub(crate) fn component_type(self, text: &str) -> Option<&str> {
        match self.plane {
            Plane::View => text.get(5..self.name_dot),
            Plane::Domain => None,
        }
    }
}

impl CapabilityId {
    /// Validates and parses `text`.
    pub fn new(text: &str) -> Result<CapabilityId, IdError> {
        let parts = grammar::parse_capability_id(text).map_err(|message| IdError {
            kind: "capability id",
            message,
        })?;
        let name_dot = match parts.name {
            Some(name) => text.len() - name.len() - 1,
            None => 0,
        };
        Ok(CapabilityId {
            text: Arc::from(text),
            plane: parts.plane,
            name_dot,
        })
    }

    /// The plane and parts of a requested id, split without the grammar
    /// check (the pipeline's entry: an id outside the grammar names nothing
    /// mounted, so its lookup fails like any unknown id's, and the full
    /// check would cost more than the rest of resolution). `None` when it
    /// has no plane, or a view id has no component type or name. Nothing
    /// is copied: the parts are read from `text` again.
    pub(crate) fn split_requested(text: &str) -> Option<Requested> {
        let (plane, name_dot) = if let Some(rest) = text.strip_prefix("view:") {
            // The last dot, found by a plain scan (ids are short: no
            // vectorised search to set up).
            let dot = rest.bytes().rposition(|byte| byte == b'.')?;
            if dot == 0 || dot + 1 == rest.len() {
                return None;
            }
            (Plane::View, "view:".len() + dot)
        } else {
            let rest = text.strip_prefix("domain:")?;
            if rest.is_empty() {
                return None;
            }
            (Plane::Domain, 0)
        };
        Some(Requested { plane, name_dot })
    }

    /// The id of capability `name` of component type `component_type` (view plane).
    pub fn view(component_type: &ComponentType, name: &CapabilityName) -> CapabilityId {
        let text = grammar::view_capability_id(component_type.as_str(), name.as_str());
        let name_dot = text.len() - name.as_str().len() - 1;
        CapabilityId {
            text: Arc::from(text),
            plane: Plane::View,
            name_dot,
        }
    }

    /// The plane of the capability.
    pub fn plane(&self) -> Plane {
        self.plane
    }

    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The shared string, for cheap clones into results and events.
    pub fn as_arc(&self) -> &Arc<str> {
        &self.text
    }

    /// The component type of a view capability; `None` for domain ids.
    pub fn component_type(&self) -> Option<ComponentType> {
        self.component_type_str()
            .map(|text| ComponentType(Arc::from(text)))
    }

    /// The component-type part of a view id, as a string slice.
    pub fn component_type_str(&self) -> Option<&str> {
        match self.plane {
            Plane::View => self.text.get(5..self.name_dot),
            Plane::Domain => None,
        }
    }

    /// The capability name of a view capability; `None` for domain ids.
    pub fn name(&self) -> Option<&str> {
        match self.plane {
            Plane::View => self.text.get(self.name_dot + 1..),
            Plane::Domain => None,
        }
    }

    /// Everything after the plane prefix (`devices.table.selectRows`, `devices.disable`).
    pub fn path(&self) -> &str {
        let prefix = self.plane.as_str().len() + 1;
        self.text.get(prefix..).unwrap_or_default()
    }
}

impl FromStr for CapabilityId {
    type Err = IdError;
    fn from_str(text: &str) -> Result<Self, IdError> {
        CapabilityId::new(text)
    }
}

impl TryFrom<&str> for CapabilityId {
    type Error = IdError;
    fn try_from(text: &str) -> Result<Self, IdError> {
        CapabilityId::new(text)
    }
}

impl AsRef<str> for CapabilityId {
    fn as_ref(&self) -> &str {
        &self.text
    }
}

impl Borrow<str> for CapabilityId {
    fn borrow(&self) -> &str {
        &self.text
    }
}

impl PartialEq<str> for CapabilityId {
    fn eq(&self, other: &str) -> bool {
        &*self.text == other
    }
}

impl PartialEq<&str> for CapabilityId {
    fn eq(&self, other: &&str) -> bool {
        &*self.text == *other
    }
}

impl fmt::Display for CapabilityId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Debug for CapabilityId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CapabilityId({:?})", &*self.text)
    }
}

impl Serialize for CapabilityId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for CapabilityId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        CapabilityId::new(&text).map_err(serde::de::Error::custom)
    }
}

/// Whether `component_type` falls under one of the `prefixes` (segment-wise).
pub fn in_scope(component_type: &str, prefixes: &[String]) -> bool {
    prefixes.is_empty()
        || prefixes.iter().any(|prefix| {
            component_type == prefix
                || component_type
                    .strip_prefix(prefix.as_str())
                    .is_some_and(|rest| rest.starts_with('.'))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_requested_id_is_split_by_plane_and_last_dot() {
        let text = "view:devices.table.sort";
        let view = CapabilityId::split_requested(text).unwrap();
        assert_eq!(view.plane(), Plane::View);
        assert_eq!(view.component_type(text), Some("devices.table"));
        let text = "domain:devices.disable";
        let domain = CapabilityId::split_requested(text).unwrap();
        assert_eq!(domain.plane(), Plane::Domain);
        assert_eq!(domain.component_type(text), None);
        for text in [
            "",
            "view:",
            "view:table",
            "view:.sort",
            "view:table.",
            "domain:",
            "other:x.y",
        ] {
            assert!(CapabilityId::split_requested(text).is_none(), "{text}");
        }
    }

    #[test]
    fn view_ids_split_at_the_last_dot() {
        let id = CapabilityId::new("view:devices.table.selectRows").unwrap();
        assert_eq!(id.component_type_str(), Some("devices.table"));
        assert_eq!(id.name(), Some("selectRows"));
        assert_eq!(id.path(), "devices.table.selectRows");
        let built = CapabilityId::view(
            &ComponentType::new("devices.table").unwrap(),
            &CapabilityName::new("selectRows").unwrap(),
        );
        assert_eq!(built, id);
    }

    #[test]
    fn domain_ids_are_opaque_paths() {
        let id = CapabilityId::new("domain:devices.disable").unwrap();
        assert_eq!(id.plane(), Plane::Domain);
        assert_eq!(id.name(), None);
        assert_eq!(id.component_type(), None);
        assert_eq!(id.path(), "devices.disable");
    }

    #[test]
    fn ids_round_trip_through_serde() {
        let id: CapabilityId = serde_json::from_str("\"view:a.b\"").unwrap();
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"view:a.b\"");
        assert!(serde_json::from_str::<CapabilityId>("\"view:A.b\"").is_err());
        assert!(serde_json::from_str::<InstanceId>("\"a b\"").is_err());
    }
}
