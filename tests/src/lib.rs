//! Components shared by the conformance tests.
//!
//! This library is built without its own unit tests (`test = false`): it holds
//! a deliberately defective component whose generated schema test would fail,
//! so the conformance suite can observe that failure instead.

use std::sync::Mutex;

/// The README's examples and the `cargo agent-surface` guide, compiled as
/// doctests (with the MCP features, which some of them use): here, in the
/// workspace's tests, so the published crates include nothing from outside
/// their packages.
#[cfg(all(doctest, feature = "readme-doctests"))]
#[doc = include_str!("../../README.md")]
#[doc = include_str!("../../runtime/cli/README.md")]
pub struct ReadmeDoctests;

use agent_surface::prelude::*;

/// Marker carried in internal metadata; it must never appear in any output.
pub const INTERNAL_MARKER: &str = "internal-marker-7f3a9c";

/// How a selection changes.
#[agent_schema]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SelectMode {
    /// Replace the selection.
    #[default]
    Replace,
    /// Add to the selection.
    Add,
    /// Remove from the selection.
    Remove,
}

/// Replace, extend or reduce the row selection.
#[agent_schema]
#[derive(Clone, Debug)]
pub struct SelectRows {
    /// Device ids to select.
    #[schemars(length(min = 1, max = 100), inner(length(max = 64)))]
    pub ids: Vec<String>,
    /// How to combine with the current selection.
    #[serde(default)]
    pub mode: SelectMode,
}

/// One visible row.
#[agent_schema]
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Device id.
    pub id: String,
    /// Display name.
    pub name: String,
}

/// What the table shows.
#[agent_schema]
#[derive(Clone, Debug, PartialEq)]
pub struct TableState {
    /// Rows matching the filters.
    pub visible_rows: Vec<Row>,
    /// Selected ids.
    pub selected_ids: Vec<String>,
    /// Rows per page.
    pub page_size: u8,
}

/// A table fixture with state behind a mutex.
#[derive(Debug, Default)]
pub struct Table {
    /// Rows.
    pub rows: Vec<Row>,
    /// Selected ids.
    pub selected: Mutex<Vec<String>>,
}

/// Table of devices matching the active filters.
#[agent_component(
    type = "fixtures.table",
    instance = "main",
    priority = 5,
    meta(team = "fleet", columns = 2),
    internal(secret = "internal-marker-7f3a9c", tenant = "acme")
)]
impl Table {
    /// Visible rows and the current selection.
    #[observation]
    fn read_state(&self) -> TableState {
        TableState {
            visible_rows: self.rows.clone(),
            selected_ids: self.selection(),
            page_size: 20,
        }
    }

    /// Replace, extend or reduce the row selection.
    #[action(
        effect = "local-state",
        when = has_rows,
        unavailable_reason = "No rows are loaded",
        precondition = ids_are_visible,
        internal(owner = "internal-marker-7f3a9c")
    )]
    fn select_rows(&self, input: SelectRows) -> Result<(), ActionError> {
        let mut selected = self
            .selected
            .lock()
            .map_err(|_| ActionError::failed("selection lock poisoned"))?;
        match input.mode {
            SelectMode::Replace => *selected = input.ids,
            SelectMode::Add => selected.extend(input.ids),
            SelectMode::Remove => selected.retain(|id| !input.ids.contains(id)),
        }
        Ok(())
    }

    /// Clear the selection.
    #[action(effect = "local-state", idempotent, name = "clearSelection")]
    async fn clear(&self, ctx: &ActionContext) {
        let _ = ctx.invocation_id();
        if let Ok(mut selected) = self.selected.lock() {
            selected.clear();
        }
    }

    fn has_rows(&self) -> bool {
        !self.rows.is_empty()
    }

    fn ids_are_visible(&self, input: &SelectRows) -> Result<(), PreconditionFailure> {
        let unknown: Vec<&String> = input
            .ids
            .iter()
            .filter(|id| !self.rows.iter().any(|row| &row.id == *id))
            .collect();
        if unknown.is_empty() {
            Ok(())
        } else {
            Err(
                PreconditionFailure::new("Some ids are not visible; read the table state first")
                    .with_detail("unknownIds", serde_json::json!(unknown)),
            )
        }
    }

    /// The current selection (an ordinary method).
    pub fn selection(&self) -> Vec<String> {
        self.selected.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

/// A component whose output schema only schemars can show to be outside the
/// subset: an `ipv4` format. Its contract fails to check.
pub struct Defective;

/// An address with a format outside the subset.
#[agent_schema]
pub struct Address {
    /// The address.
    #[schemars(extend("format" = "ipv4"))]
    pub ip: String,
}

/// A component with a schema defect that only the generated schema shows.
#[agent_component(type = "fixtures.defective")]
impl Defective {
    /// The address.
    #[observation]
    fn address(&self) -> Address {
        Address {
            ip: "127.0.0.1".to_owned(),
        }
    }
}

pub mod supplied;
