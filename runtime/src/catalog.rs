//! The catalog: every component and procedure contract authored anywhere in
//! the binary, collected at link time, known before anything mounts. Use it
//! to review, diff or export everything an agent could ever reach.
//!
//! Reviewers use it to see everything an agent could ever reach; the runtime
//! uses it for checks such as "authored but never mounted".
//!
//! # Example
//! ```
//! use agent_surface::prelude::*;
//!
//! /// Application navigation.
//! #[agent_component(type = "app.navigation")]
//! impl Navigation {
//!     /// The current route.
//!     #[observation]
//!     fn current(&self) -> String {
//!         "/devices".to_owned()
//!     }
//! }
//! struct Navigation;
//!
//! // `load` fails on the first defective contract; `load_valid` keeps the
//! // valid ones and lists the defects of the others.
//! let (catalog, _defects) = agent_surface::catalog::Catalog::load_valid();
//! assert!(catalog.get("app.navigation").is_some());
//! let json = catalog.to_json();
//! assert_eq!(json["components"][0]["observations"][0]["capabilityId"], "view:app.navigation.current");
//! // Each declaration and capability carries its content hash.
//! let navigation = catalog.get("app.navigation").unwrap();
//! assert_eq!(json["components"][0]["declarationHash"], navigation.declaration_hash());
//! assert_eq!(json["manifestHash"], catalog.manifest_hash());
//! ```

use serde::Serialize;
use serde_json::Value;

use crate::contract::{CheckedContract, ComponentContract};
use crate::error::{DefinitionError, DefinitionErrorKind};
use crate::procedure::{self, CheckedProcedure, ProcedureContract};

/// One authored component, submitted by `#[agent_component]`.
#[doc(hidden)]
pub struct CatalogEntry {
    contract: fn() -> &'static ComponentContract,
}

impl CatalogEntry {
    #[doc(hidden)]
    pub const fn new(contract: fn() -> &'static ComponentContract) -> CatalogEntry {
        CatalogEntry { contract }
    }
}

inventory::collect!(CatalogEntry);

/// Every authored contract, unchecked, sorted by component type then Rust path.
pub fn contracts() -> Vec<&'static ComponentContract> {
    let mut all: Vec<&'static ComponentContract> = inventory::iter::<CatalogEntry>
        .into_iter()
        .map(|entry| (entry.contract)())
        .collect();
    all.sort_by_key(|contract| {
        let source = contract.source();
        (contract.component_type(), source.module, source.rust_type)
    });
    all.dedup_by(|a, b| std::ptr::eq(*a, *b));
    all
}

/// A component type declared by two Rust types (`components` sorted by
/// type): which one a mount, the catalog or an agent would mean is
/// undecidable, so each later one is an error naming both.
fn declared_twice<'a>(
    components: &'a [&'static CheckedContract],
) -> impl Iterator<Item = DefinitionError> + 'a {
    components.windows(2).filter_map(|pair| {
        let [first, second] = pair else { return None };
        (first.component_type() == second.component_type()).then(|| {
            let (a, b) = (first.source(), second.source());
            DefinitionError::new(
                DefinitionErrorKind::InvalidDefinition,
                first.component_type().as_str(),
                format!(
                    "component type `{}` is declared twice: by `{}::{}` ({}:{}) and by `{}::{}` ({}:{}); \
                     give one of them another type",
                    first.component_type().as_str(),
                    a.module,
                    a.rust_type,
                    a.file,
                    a.line,
                    b.module,
                    b.rust_type,
                    b.file,
                    b.line
                ),
            )
        })
    })
}

/// The checked contracts of the binary, in deterministic order.
#[derive(Debug, Serialize)]
pub struct Catalog {
    components: Vec<&'static CheckedContract>,
    procedures: Vec<&'static CheckedProcedure>,
}

impl Catalog {
    /// Checks every authored contract; fails with the first defect.
    pub fn load() -> Result<Catalog, DefinitionError> {
        let components = contracts()
            .into_iter()
            .map(ComponentContract::checked)
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(error) = declared_twice(&components).next() {
            return Err(error);
        }
        let procedures = procedure::contracts()
            .into_iter()
            .map(ProcedureContract::checked)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Catalog {
            components,
            procedures,
        })
    }

    /// Checks every authored contract, keeping the valid ones and returning
    /// the defects of the others.
    pub fn load_valid() -> (Catalog, Vec<DefinitionError>) {
        let mut components = Vec::new();
        let mut errors = Vec::new();
        for contract in contracts() {
            match contract.checked() {
                Ok(checked) => components.push(checked),
                Err(err) => errors.push(err),
            }
        }
        // A type declared again by another Rust type: the first stays.
        let twice: Vec<DefinitionError> = declared_twice(&components).collect();
        if !twice.is_empty() {
            let mut seen: Option<&str> = None;
            components.retain(|contract| {
                let kind = contract.component_type().as_str();
                let first = seen != Some(kind);
                seen = Some(kind);
                first
            });
            errors.extend(twice);
        }
        let mut procedures = Vec::new();
        for contract in procedure::contracts() {
            match contract.checked() {
                Ok(checked) => procedures.push(checked),
                Err(err) => errors.push(err),
            }
        }
        (
            Catalog {
                components,
                procedures,
            },
            errors,
        )
    }

    /// The checked contracts.
    pub fn components(&self) -> &[&'static CheckedContract] {
        &self.components
    }

    /// The checked procedure contracts, sorted by id.
    pub fn procedures(&self) -> &[&'static CheckedProcedure] {
        &self.procedures
    }

    /// The procedure contract of `id`.
    pub fn procedure(&self, id: &str) -> Option<&'static CheckedProcedure> {
        self.procedures
            .iter()
            .copied()
            .find(|procedure| procedure.id().as_str() == id)
    }

    /// The first contract of a component type.
    pub fn get(&self, component_type: &str) -> Option<&'static CheckedContract> {
        self.components
            .iter()
            .copied()
            .find(|contract| contract.component_type().as_str() == component_type)
    }

    /// The catalog's manifest hash: 64 lowercase hex digits over the sorted
    /// declaration hashes of every component and procedure it holds. Two
    /// builds of the same source give the same manifest hash.
    pub fn manifest_hash(&self) -> String {
        let components = self.components.iter().map(|c| c.declaration_hash());
        let procedures = self.procedures.iter().map(|p| p.declaration_hash());
        crate::hashes::manifest_of(components.chain(procedures).collect())
    }

    /// The catalog as JSON: `{"components": [...], "procedures": [...],
    /// "manifestHash": "…"}`, each component and procedure with its
    /// `declarationHash` and each capability with its `capabilityHash`.
    /// Deterministic: the same
    /// binary always produces the same bytes. Internal metadata never appears.
    pub fn to_json(&self) -> Value {
        let mut json = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Some(entries) = json.get_mut("components").and_then(Value::as_array_mut) {
            for (entry, contract) in entries.iter_mut().zip(&self.components) {
                annotate_component(entry, contract);
            }
        }
        if let Some(entries) = json.get_mut("procedures").and_then(Value::as_array_mut) {
            for (entry, procedure) in entries.iter_mut().zip(&self.procedures) {
                if let Some(entry) = entry.as_object_mut() {
                    entry.insert(
                        "declarationHash".into(),
                        procedure.declaration_hash().into(),
                    );
                }
            }
        }
        if let Some(object) = json.as_object_mut() {
            object.insert("manifestHash".into(), self.manifest_hash().into());
        }
        json
    }

    /// The catalog as pretty-printed JSON text (the same content as
    /// [`Catalog::to_json`]).
    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(&self.to_json()).unwrap_or_default()
    }
}

/// Adds the declaration hash to a serialized component and the capability
/// hash to each of its serialized observations and actions (both lists keep
/// authoring order).
fn annotate_component(entry: &mut Value, contract: &CheckedContract) {
    let Some(entry) = entry.as_object_mut() else {
        return;
    };
    entry.insert("declarationHash".into(), contract.declaration_hash().into());
    let lists = [
        ("observations", contract.observations().collect::<Vec<_>>()),
        ("actions", contract.actions().collect::<Vec<_>>()),
    ];
    for (key, capabilities) in lists {
        if let Some(items) = entry.get_mut(key).and_then(Value::as_array_mut) {
            for (item, capability) in items.iter_mut().zip(capabilities) {
                if let Some(item) = item.as_object_mut() {
                    item.insert("capabilityHash".into(), capability.capability_hash().into());
                }
            }
        }
    }
}

/// The environment variable `cargo agent-surface` sets when it runs a binary
/// to read its catalog: the file [`export_if_requested`] writes to.
pub const EXPORT_ENV: &str = "AGENT_SURFACE_CATALOG_EXPORT";

/// The one line a binary crate adds at the top of `main` so that
/// `cargo agent-surface` can read its catalog.
///
/// Without [`EXPORT_ENV`] in the environment it returns at once and the
/// program runs as usual. With it, the process writes the catalog
/// ([`Catalog::to_json`]) to the named file and exits with status 0; when a
/// contract is defective or the file cannot be written it prints the reason
/// to stderr and exits with status 2. A library crate needs no line: the
/// command builds a probe binary that links it.
///
/// # Example
/// ```
/// fn main() {
///     agent_surface::catalog::export_if_requested();
///     // … the application …
/// }
/// # main();
/// ```
pub fn export_if_requested() {
    let Some(path) = std::env::var_os(EXPORT_ENV) else {
        return;
    };
    // The contracts' own code (policy constructors, supplied schemas) runs
    // while the catalog is built: it is not told that it is being read.
    // SAFETY: the export runs before `main` (or as its first line), when no
    // other thread of the program reads the environment.
    #[allow(unsafe_code)]
    unsafe {
        std::env::remove_var(EXPORT_ENV);
    }
    let code = match Catalog::load() {
        Ok(catalog) => match std::fs::write(&path, catalog.to_json_pretty()) {
            Ok(()) => 0,
            Err(err) => {
                eprintln!("agent-surface: cannot write the catalog to {path:?}: {err}");
                2
            }
        },
        Err(err) => {
            eprintln!("agent-surface: a contract is defective: {err}");
            2
        }
    };
    std::process::exit(code);
}

/// The export as `cargo agent-surface` runs it in a binary it reads: the
/// command links a shim that calls this before the binary's `main` (on
/// Linux, with the linker's `--wrap=main`), so the catalog is written from
/// the linked contracts before any code the binary controls can run.
/// Without [`EXPORT_ENV`] it returns at once and `main` runs as usual.
#[doc(hidden)]
// The one unmangled symbol of the crate: the shim must find it by name. It
// takes nothing, returns nothing and unwinds nothing.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
pub extern "C" fn agent_surface_export_before_main() {
    if std::env::var_os(EXPORT_ENV).is_none() {
        return;
    }
    // `export_if_requested` exits; a panic must not unwind into C.
    if std::panic::catch_unwind(export_if_requested).is_err() {
        std::process::exit(2);
    }
}

/// The format tag of the committed contract artifact.
pub const ARTIFACT_FORMAT: &str = "agent-surface.contract/1";

/// The largest contract artifact read, in bytes (8 MiB).
pub const MAX_ARTIFACT_BYTES: usize = 8 << 20;

/// The manifest hash of a committed contract artifact's text (what
/// `cargo agent-surface snapshot` writes), or why it cannot be read.
///
/// ```
/// let hash = "6bdfc672133a849a4f3810dca968c8c4bededc9e8c0dafc190af4bc808dc8a21";
/// let text = format!(r#"{{"format": "agent-surface.contract/1", "manifestHash": "{hash}"}}"#);
/// assert_eq!(
///     agent_surface::catalog::artifact_manifest_hash(&text).as_deref(),
///     Ok(hash)
/// );
/// assert!(agent_surface::catalog::artifact_manifest_hash("[]").is_err());
/// ```
pub fn artifact_manifest_hash(artifact: &str) -> Result<String, String> {
    if artifact.len() > MAX_ARTIFACT_BYTES {
        return Err(format!(
            "{} bytes, over the {MAX_ARTIFACT_BYTES} an artifact may have",
            artifact.len()
        ));
    }
    let value: serde_json::Value =
        serde_json::from_str(artifact).map_err(|err| format!("not JSON: {err}"))?;
    if value.get("format").and_then(serde_json::Value::as_str) != Some(ARTIFACT_FORMAT) {
        return Err(format!("its `format` is not \"{ARTIFACT_FORMAT}\""));
    }
    value
        .get("manifestHash")
        .and_then(serde_json::Value::as_str)
        .filter(|hash| hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()))
        .map(str::to_owned)
        .ok_or_else(|| "it has no `manifestHash` (64 hex digits)".to_owned())
}
