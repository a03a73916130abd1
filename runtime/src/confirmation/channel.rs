//! Approval channels: the routes by which a person's answer reaches a
//! confirmation, who stood behind each answer, and the token of what the
//! person was shown.
//!
//! A confirmation protects the person from the agent, so an answer counts
//! only when it comes through a channel the host trusts:
//!
//! - an **in-app** channel is a UI of the host's own that the person uses —
//!   a page, a desktop dialog, a terminal prompt. The host declares it with
//!   [`RegistryBuilder::approval_channel`](crate::registry::RegistryBuilder::approval_channel)
//!   and answers through an [`Approver`] from
//!   [`Confirmations::approver`](super::Confirmations::approver). Every
//!   registry also has the in-app channel [`HOST_CHANNEL`], which the plain
//!   [`Confirmations::approve`](super::Confirmations::approve) uses: host
//!   code calling the registry is, by definition, the host.
//! - an **agent-connection** channel is the requesting agent's own
//!   connection, shown to a person by the agent's client (MCP elicitation
//!   in a desktop client). It answers only requests of the consumer it
//!   belongs to, never another's, and exists only where the host opted in
//!   (for MCP: [`McpServerBuilder::elicitation`](crate::mcp::McpServerBuilder::elicitation)).
//!   Its trust assumption is the client's: that it shows the request to its
//!   person and does not answer for them.
//!
//! An answer names what was shown ([`ShownRequest`]: the confirmation id and
//! the digest of the exact request), so a click on a dialog that showed
//! request A never resolves request B. Every resolution is recorded with its
//! channel and approver, in the audit trail and as a [`Resolution`].

use std::sync::Arc;

use serde::Serialize;

/// The in-app channel every registry has: the host's own code.
pub const HOST_CHANNEL: &str = "host";

/// What kind of route an approval channel is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ChannelKind {
    /// A UI of the host's own that the person uses; answers any request.
    InApp,
    /// The requesting agent's own connection, shown to a person by its
    /// client; answers only that connection's own requests.
    AgentConnection,
}

impl ChannelKind {
    /// The wire string: `in-app` or `agent-connection`.
    pub fn as_str(self) -> &'static str {
        match self {
            ChannelKind::InApp => "in-app",
            ChannelKind::AgentConnection => "agent-connection",
        }
    }
}

/// An approval channel a registry declares: a named route by which the
/// person's answers arrive.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ApprovalChannel {
    name: Arc<str>,
    kind: ChannelKind,
}

impl ApprovalChannel {
    /// An in-app channel: a UI of the host's own that the person uses (the
    /// web console's dialog, a desktop prompt).
    pub fn in_app(name: &str) -> ApprovalChannel {
        ApprovalChannel {
            name: Arc::from(name),
            kind: ChannelKind::InApp,
        }
    }

    /// The channel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The channel's kind.
    pub fn kind(&self) -> ChannelKind {
        self.kind
    }
}

/// Who answers a confirmation, through which channel. Obtain one from
/// [`Confirmations::approver`](super::Confirmations::approver) (an in-app
/// channel the registry declares) or
/// [`Confirmations::connection_approver`](super::Confirmations::connection_approver)
/// (an agent's own connection, for adapters that opted in).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Approver {
    pub(super) channel: Arc<str>,
    pub(super) kind: ChannelKind,
    pub(super) approver: Arc<str>,
    /// For an agent-connection channel: the consumer key it belongs to.
    pub(super) connection: Option<Arc<str>>,
}

impl Approver {
    /// The channel's name (`console`, `mcp-elicitation`, `host`…).
    pub fn channel(&self) -> &str {
        &self.channel
    }

    /// The channel's kind.
    pub fn kind(&self) -> ChannelKind {
        self.kind
    }

    /// Who stands behind the answers (the signed-in person, a client name).
    pub fn approver(&self) -> &str {
        &self.approver
    }

    /// Whether this approver may answer a request of `consumer_key`: an
    /// in-app channel answers any; an agent connection only its own.
    pub(super) fn may_answer(&self, consumer_key: &str) -> bool {
        match self.kind {
            ChannelKind::InApp => true,
            ChannelKind::AgentConnection => self.connection.as_deref() == Some(consumer_key),
        }
    }
}

/// The token of a request as the person saw it: its confirmation id and the
/// digest of the exact request. Take it from the pending record you render
/// ([`PendingConfirmation::shown`](super::PendingConfirmation::shown)) and
/// keep it with what you show; answer with it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ShownRequest {
    /// `cnf_…`.
    pub confirmation_id: Arc<str>,
    /// Hex SHA-256 of the canonical request the person was shown.
    pub digest: Arc<str>,
}

/// How a resolved confirmation was answered, and by whom.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Resolution {
    /// The confirmation.
    pub confirmation_id: Arc<str>,
    /// `approved`, `denied`, `expired` or `withdrawn`.
    pub outcome: super::ConfirmationOutcome,
    /// The channel of an answer (`None` for an expiry or a withdrawal).
    pub channel: Option<Arc<str>>,
    /// The channel's kind.
    pub channel_kind: Option<ChannelKind>,
    /// Who answered (`None` for an expiry or a withdrawal).
    pub approver: Option<Arc<str>>,
    /// Why it was withdrawn, for a withdrawal.
    pub reason: Option<&'static str>,
    /// For an approval proven to come from the person (a passkey, an
    /// out-of-band code): how, and with which credential. `None` for an
    /// approval on the channel's word alone, and for every other outcome.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub person_verified: Option<super::PersonVerified>,
    /// When (RFC 3339).
    pub at: String,
}

/// Why an [`Approver`] could not be had.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChannelError {
    /// The registry declares no in-app channel of that name.
    Undeclared(String),
}

impl std::fmt::Display for ChannelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChannelError::Undeclared(name) => write!(
                f,
                "no approval channel `{name}` is declared: add \
                 `.approval_channel(\"{name}\")` to the registry builder"
            ),
        }
    }
}

impl std::error::Error for ChannelError {}
