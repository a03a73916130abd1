//! The toolset builder: mode, topology, confirmation mode and scope, and
//! why a toolset could not be built.

use std::fmt;
use std::sync::{Arc, Mutex};

use super::{Shared, Toolset};
use crate::context::Consumer;
use crate::registry::Registry;
use crate::snapshot::{Budget, SnapshotOptions};
use crate::util::listeners::Listeners;

/// One tool per capability, or three generic tools.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// One tool per visible capability and procedure reference.
    #[default]
    Direct,
    /// `surface_discover`, `surface_read`, `surface_act`.
    Meta,
}

/// Where the agent loop runs, which decides how confirmations are handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Topology {
    /// In the application's process: wait for the user and retry.
    Embedded,
    /// Elsewhere (a remote model loop): hand the confirmation to the model.
    Remote,
}

/// How `CONFIRMATION_REQUIRED` is handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfirmationMode {
    /// Wait for the user's decision (up to the TTL) and retry with the
    /// evidence: the model sees one call and one final result.
    Wait,
    /// Return `CONFIRMATION_REQUIRED` to the model, which retries with the
    /// confirmation id.
    TwoPhase,
}

impl Topology {
    /// The confirmation mode this topology implies.
    pub fn confirmations(self) -> ConfirmationMode {
        match self {
            Topology::Embedded => ConfirmationMode::Wait,
            Topology::Remote => ConfirmationMode::TwoPhase,
        }
    }
}

/// Why a toolset could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolsetError {
    /// Neither a topology nor a confirmation mode was given; there is no
    /// global default because the right one depends on where the loop runs.
    TopologyRequired,
    /// The registry was disposed.
    Disposed,
}

impl fmt::Display for ToolsetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolsetError::TopologyRequired => f.write_str(
                "a toolset needs `.topology(Topology::Embedded | Topology::Remote)` or an explicit `.confirmations(...)`",
            ),
            ToolsetError::Disposed => f.write_str("the registry was disposed"),
        }
    }
}

impl std::error::Error for ToolsetError {}

/// Builds a [`Toolset`].
#[must_use]
#[derive(Debug)]
pub struct ToolsetBuilder {
    pub(in crate::adapter) registry: Registry,
    pub(in crate::adapter) consumer: Option<Consumer>,
    pub(in crate::adapter) mode: Mode,
    pub(in crate::adapter) topology: Option<Topology>,
    pub(in crate::adapter) confirmations: Option<ConfirmationMode>,
    pub(in crate::adapter) scope: Vec<String>,
    pub(in crate::adapter) budget: Option<Budget>,
}

impl ToolsetBuilder {
    /// The consumer every call is made as (default `embedded:anonymous`).
    /// Give each agent loop its own stable identity.
    pub fn consumer(mut self, consumer: Consumer) -> Self {
        self.consumer = Some(consumer);
        self
    }

    /// Direct (default) or meta mode.
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// Where the loop runs (sets the confirmation mode's default).
    pub fn topology(mut self, topology: Topology) -> Self {
        self.topology = Some(topology);
        self
    }

    /// The confirmation mode, overriding the topology's default.
    pub fn confirmations(mut self, mode: ConfirmationMode) -> Self {
        self.confirmations = Some(mode);
        self
    }

    /// Component-type prefixes the toolset is limited to: a floor that a
    /// model-supplied scope may narrow and never widen.
    pub fn scope(mut self, prefixes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scope = prefixes.into_iter().map(Into::into).collect();
        self
    }

    /// A snapshot budget for `surface_discover` (meta mode only).
    pub fn budget(mut self, budget: Budget) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Builds the toolset; fails without a topology or confirmation mode.
    pub fn build(self) -> Result<Toolset, ToolsetError> {
        let confirmations = match (self.confirmations, self.topology) {
            (Some(mode), _) => mode,
            (None, Some(topology)) => topology.confirmations(),
            (None, None) => return Err(ToolsetError::TopologyRequired),
        };
        if self.registry.is_disposed() {
            return Err(ToolsetError::Disposed);
        }
        let consumer = self
            .consumer
            .unwrap_or_else(|| self.registry.anonymous_consumer().clone());
        Ok(Toolset {
            shared: Arc::new(Shared {
                options: SnapshotOptions {
                    consumer,
                    scope: self.scope,
                    include_unavailable: true,
                    budget: None,
                },
                registry: self.registry,
                mode: self.mode,
                confirmations,
                budget: self.budget,
                built: Mutex::new(None),
                listeners: Listeners::default(),
                watch: Mutex::new(None),
                notified: Mutex::new(None),
                asked: Mutex::new(Vec::new()),
                disposed: crate::util::disposal::Disposal::default(),
            }),
        })
    }
}
