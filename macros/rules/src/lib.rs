//! The rules of the agent-surface specification that both the compiler side
//! (`agent-surface-macros`) and the runtime side (`agent-surface`) enforce:
//! the identity grammar, the description and metadata limits, the planes and
//! effects, and the table of defaults by capability kind and effect.
//!
//! Keeping them in one small dependency-free crate means a component that
//! compiles is checked by exactly the rules the runtime re-checks at
//! registration. Users never depend on this crate directly; `agent-surface`
//! re-exports what they need.
//!
//! # Example
//! ```
//! use agent_surface_rules::{ids, Effect, Plane};
//!
//! assert!(ids::check_component_type("devices.table").is_ok());
//! assert!(ids::check_component_type("Devices.Table").is_err());
//! assert_eq!(ids::snake_to_camel("select_rows"), "selectRows");
//! assert_eq!(Effect::parse("destructive").map(Effect::plane), Some(Plane::Domain));
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

mod doc_length;
pub mod ids;
mod serde_names;
mod text;

pub use doc_length::doc_description_chars;
pub use serde_names::rename_field;
pub use text::{check_description, description_from_doc_lines, parse_duration_ms};

/// Maximum length, in characters, of a component description.
pub const MAX_COMPONENT_DESCRIPTION: usize = 500;
/// Maximum length, in characters, of an observation, action or procedure description.
pub const MAX_CAPABILITY_DESCRIPTION: usize = 300;
/// Maximum size, in bytes, of serialized agent-visible metadata (`meta`).
pub const MAX_META_BYTES: usize = 2048;

/// The two planes of the surface.
///
/// `view` capabilities terminate inside the application (handlers registered by
/// mounted components); `domain` capabilities are forwarded to a backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum Plane {
    /// In-application UI state: observations and view actions.
    View,
    /// Backend operations: procedure references.
    Domain,
}

impl Plane {
    /// The id prefix of this plane without the colon: `"view"` or `"domain"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Plane::View => "view",
            Plane::Domain => "domain",
        }
    }

    /// Parses `"view"` or `"domain"`.
    pub fn parse(text: &str) -> Option<Plane> {
        match text {
            "view" => Some(Plane::View),
            "domain" => Some(Plane::Domain),
            _ => None,
        }
    }
}

/// The kind of a capability.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum Kind {
    /// Reads semantic state; side-effect free.
    Observation,
    /// Changes view state.
    Action,
    /// References a backend operation.
    Procedure,
}

impl Kind {
    /// The kind's name as written on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Kind::Observation => "observation",
            Kind::Action => "action",
            Kind::Procedure => "procedure",
        }
    }
}

/// What invoking a capability does to the world.
///
/// View actions may only declare [`LocalState`](Effect::LocalState) or
/// [`Navigation`](Effect::Navigation); procedures only the four server effects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum Effect {
    /// Observations only: reads state.
    Read,
    /// Changes in-application state (selection, filters, sorting).
    LocalState,
    /// Changes the route; may unmount the component that owns the action.
    Navigation,
    /// Reads from the backend.
    ServerQuery,
    /// Changes backend state.
    ServerMutation,
    /// Reaches outside the system (sends mail, charges a card).
    ExternalSideEffect,
    /// Destroys or disables backend state.
    Destructive,
}

impl Effect {
    /// Every effect, in specification order.
    pub const ALL: [Effect; 7] = [
        Effect::Read,
        Effect::LocalState,
        Effect::Navigation,
        Effect::ServerQuery,
        Effect::ServerMutation,
        Effect::ExternalSideEffect,
        Effect::Destructive,
    ];

    /// The effect's kebab-case name, as written in attributes and on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Effect::Read => "read",
            Effect::LocalState => "local-state",
            Effect::Navigation => "navigation",
            Effect::ServerQuery => "server-query",
            Effect::ServerMutation => "server-mutation",
            Effect::ExternalSideEffect => "external-side-effect",
            Effect::Destructive => "destructive",
        }
    }

    /// Parses a kebab-case effect name.
    pub fn parse(text: &str) -> Option<Effect> {
        Effect::ALL
            .into_iter()
            .find(|effect| effect.as_str() == text)
    }

    /// The plane an effect belongs to. [`Effect::Read`] is a view effect.
    pub const fn plane(self) -> Plane {
        match self {
            Effect::Read | Effect::LocalState | Effect::Navigation => Plane::View,
            _ => Plane::Domain,
        }
    }

    /// Whether a capability of `kind` may declare this effect (the plane rule).
    pub const fn allowed_for(self, kind: Kind) -> bool {
        match kind {
            Kind::Observation => matches!(self, Effect::Read),
            Kind::Action => matches!(self, Effect::LocalState | Effect::Navigation),
            Kind::Procedure => matches!(
                self,
                Effect::ServerQuery
                    | Effect::ServerMutation
                    | Effect::ExternalSideEffect
                    | Effect::Destructive
            ),
        }
    }

    /// The effects a capability of `kind` may declare.
    pub fn allowed(kind: Kind) -> impl Iterator<Item = Effect> {
        Effect::ALL
            .into_iter()
            .filter(move |effect| effect.allowed_for(kind))
    }

    /// Whether the surface-version hint is enforced for calls with this effect
    /// (destructive and external side effects only).
    pub const fn enforces_version_hint(self) -> bool {
        matches!(self, Effect::Destructive | Effect::ExternalSideEffect)
    }
}

/// The confirmation posture of a capability.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum Confirmation {
    /// Never asks the user.
    Never,
    /// A policy or consumer configuration may escalate it to required.
    Optional,
    /// Every call needs the user's approval.
    Required,
}

impl Confirmation {
    /// The posture's name as written in attributes and on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Confirmation::Never => "never",
            Confirmation::Optional => "optional",
            Confirmation::Required => "required",
        }
    }

    /// Parses `never`, `optional` or `required`.
    pub fn parse(text: &str) -> Option<Confirmation> {
        [
            Confirmation::Never,
            Confirmation::Optional,
            Confirmation::Required,
        ]
        .into_iter()
        .find(|posture| posture.as_str() == text)
    }
}

/// How much of an invocation the audit trail records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum Audit {
    /// Nothing.
    None,
    /// Identity, timing and status.
    Metadata,
    /// Metadata plus input and output payloads (redacted, size-capped).
    Full,
}

impl Audit {
    /// The level's name as written in attributes and on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Audit::None => "none",
            Audit::Metadata => "metadata",
            Audit::Full => "full",
        }
    }

    /// Parses `none`, `metadata` or `full`.
    pub fn parse(text: &str) -> Option<Audit> {
        [Audit::None, Audit::Metadata, Audit::Full]
            .into_iter()
            .find(|level| level.as_str() == text)
    }
}

/// The values a capability gets for the properties its author omitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Defaults {
    /// Whether repeating the call has no further effect.
    pub idempotent: bool,
    /// Whether the effect can be undone; `None` where the notion does not apply.
    pub reversible: Option<bool>,
    /// The confirmation posture.
    pub confirmation: Confirmation,
    /// The audit level.
    pub audit: Audit,
    /// The lowest confirmation posture an author may declare.
    pub confirmation_floor: Confirmation,
}

impl Defaults {
    /// The defaults table of the specification (concepts, "defaults by kind/effect").
    ///
    /// Returns `None` for a combination the plane rule forbids.
    pub const fn of(kind: Kind, effect: Effect) -> Option<Defaults> {
        use Confirmation::{Never, Optional, Required};
        const fn row(
            idempotent: bool,
            reversible: Option<bool>,
            confirmation: Confirmation,
            audit: Audit,
            confirmation_floor: Confirmation,
        ) -> Defaults {
            Defaults {
                idempotent,
                reversible,
                confirmation,
                audit,
                confirmation_floor,
            }
        }
        Some(match (kind, effect) {
            (Kind::Observation, Effect::Read) => row(true, None, Never, Audit::None, Never),
            (Kind::Action, Effect::LocalState | Effect::Navigation) => {
                row(false, Some(true), Never, Audit::Metadata, Never)
            }
            (Kind::Procedure, Effect::ServerQuery) => {
                row(true, None, Never, Audit::Metadata, Never)
            }
            (Kind::Procedure, Effect::ServerMutation) => {
                row(false, Some(false), Optional, Audit::Metadata, Never)
            }
            (Kind::Procedure, Effect::ExternalSideEffect) => {
                row(false, Some(false), Required, Audit::Full, Never)
            }
            (Kind::Procedure, Effect::Destructive) => {
                row(false, Some(false), Required, Audit::Full, Optional)
            }
            _ => return None,
        })
    }
}

/// Length of a description as the limits count it: Unicode scalar values.
pub fn char_len(text: &str) -> usize {
    text.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_specification_table() {
        let obs = Defaults::of(Kind::Observation, Effect::Read).unwrap();
        assert!(obs.idempotent);
        assert_eq!(obs.audit, Audit::None);
        let destructive = Defaults::of(Kind::Procedure, Effect::Destructive).unwrap();
        assert_eq!(destructive.confirmation, Confirmation::Required);
        assert_eq!(destructive.confirmation_floor, Confirmation::Optional);
        assert_eq!(destructive.audit, Audit::Full);
        assert!(Defaults::of(Kind::Action, Effect::Destructive).is_none());
        assert!(Defaults::of(Kind::Procedure, Effect::LocalState).is_none());
    }

    #[test]
    fn plane_rule() {
        assert!(Effect::LocalState.allowed_for(Kind::Action));
        assert!(!Effect::ServerMutation.allowed_for(Kind::Action));
        assert!(!Effect::Navigation.allowed_for(Kind::Procedure));
        assert_eq!(
            Effect::allowed(Kind::Action).collect::<Vec<_>>(),
            [Effect::LocalState, Effect::Navigation]
        );
    }
}
