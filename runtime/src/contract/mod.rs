//! Component contracts: what a component lets an agent observe and do. Read a
//! component's checked contract (`T::contract().checked()`) to inspect or
//! test what it declares.
//!
//! A [`ComponentContract`] is the `'static` value `#[agent_component]`
//! generates from an annotated `impl` block: identity, descriptions, effects,
//! confirmation posture, metadata and schema generators. Its fields are
//! private and its builder is reachable only from generated code, so every
//! contract in a program comes from the macro.
//!
//! [`ComponentContract::checked`] turns it, once per process, into a
//! [`CheckedContract`]: ids parsed, the defaults table applied, limits
//! enforced, schemas generated, normalized, checked against the subset and
//! compiled into validators. The registry binds only checked contracts, so
//! nothing structural is checked again per mount or per call.
//!
//! # Example
//! ```
//! use agent_surface::prelude::*;
//!
//! /// The table of devices matching the active filters.
//! #[agent_component(type = "devices.table")]
//! impl Table {
//!     /// Visible row count.
//!     #[observation]
//!     fn row_count(&self) -> u32 {
//!         self.rows
//!     }
//! }
//! struct Table {
//!     rows: u32,
//! }
//!
//! let contract = Table::contract().checked()?;
//! assert_eq!(contract.component_type(), "devices.table");
//! let capability = contract.capability("rowCount").unwrap();
//! assert_eq!(capability.id(), "view:devices.table.rowCount");
//! assert_eq!(capability.effect(), Effect::Read);
//! assert!(capability.idempotent());
//! # Ok::<(), agent_surface::error::DefinitionError>(())
//! ```

mod authored;
mod catalog_form;
mod checked;
mod reach;
mod structural;
mod vocabulary;

pub use crate::internal_meta::Internal;
pub use authored::{CapabilityContract, ComponentContract};
pub use checked::{CheckedCapability, CheckedContract, CheckedSchema};
pub use reach::{DeclaredReference, GatedCapability};
pub(crate) use structural::{
    ProcedureIdentity, check_description, confirmation_for, defaults_for, parse_empty_input,
};
pub use vocabulary::{
    Concurrency, OutputSchemaFn, ParseFn, PoliciesFn, ReasonSource, SchemaFn, Source, TypedInput,
};
