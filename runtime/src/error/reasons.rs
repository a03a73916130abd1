//! The typed reasons some errors carry in their details: where a component
//! was found unmounted, why a capability is stale, where an authorization
//! refusal came from, why a call was rate limited, why confirmation evidence
//! was refused. Each writes the
//! specification's wire string, and nothing else can be written.

use std::fmt;

/// Where `COMPONENT_UNMOUNTED` was decided (`details.phase`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum UnmountedPhase {
    /// At resolution: the component had already gone (a tombstone).
    Resolve,
    /// While the call ran: the component unmounted under it.
    MidFlight,
}

/// Why `STALE_CAPABILITY` (`details.reason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StaleReason {
    /// The registration was replaced by another one of the same component.
    RegistrationReplaced,
    /// The registration id came from another registry (a reload).
    SurfaceReloaded,
    /// A destructive or external call carried an old surface version.
    SurfaceVersionMismatch,
}

/// Who refused with `NOT_AUTHORIZED` (`details.origin`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Origin {
    /// This process: a policy or the handler.
    Client,
    /// The backend behind a procedure.
    Server,
}

/// Why `RATE_LIMITED` (`details.reason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RateLimitReason {
    /// An advisory rate limit (`rate_limit`).
    Rate,
    /// A full queue: an action queue, observation admission, pending
    /// confirmations or in-flight calls.
    QueueFull,
    /// The MCP server holds as many sessions as it may.
    SessionsFull,
}

/// Why `CONFIRMATION_INVALID` (`details.reason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConfirmationInvalidReason {
    /// The evidence does not belong to this exact call (or is unknown).
    Mismatch,
    /// Nobody answered in time (or the registry went away).
    Expired,
    /// The user denied the call.
    Denied,
    /// The evidence was already used (single use).
    Consumed,
    /// The request was withdrawn before anyone answered it: the component
    /// that would run it went away (a reload, another tab, an unmount), or
    /// the host withdrew it.
    Withdrawn,
}

impl ConfirmationInvalidReason {
    /// The wire string.
    pub const fn as_str(self) -> &'static str {
        match self {
            ConfirmationInvalidReason::Mismatch => "mismatch",
            ConfirmationInvalidReason::Expired => "expired",
            ConfirmationInvalidReason::Denied => "denied",
            ConfirmationInvalidReason::Consumed => "consumed",
            ConfirmationInvalidReason::Withdrawn => "withdrawn",
        }
    }
}

impl UnmountedPhase {
    /// The wire string.
    pub const fn as_str(self) -> &'static str {
        match self {
            UnmountedPhase::Resolve => "resolve",
            UnmountedPhase::MidFlight => "mid-flight",
        }
    }
}

impl StaleReason {
    /// The wire string.
    pub const fn as_str(self) -> &'static str {
        match self {
            StaleReason::RegistrationReplaced => "registration-replaced",
            StaleReason::SurfaceReloaded => "surface-reloaded",
            StaleReason::SurfaceVersionMismatch => "surface-version-mismatch",
        }
    }
}

impl Origin {
    /// The wire string.
    pub const fn as_str(self) -> &'static str {
        match self {
            Origin::Client => "client",
            Origin::Server => "server",
        }
    }
}

impl RateLimitReason {
    /// The wire string.
    pub const fn as_str(self) -> &'static str {
        match self {
            RateLimitReason::Rate => "rate",
            RateLimitReason::QueueFull => "queue-full",
            RateLimitReason::SessionsFull => "sessions-full",
        }
    }
}

macro_rules! display_as_str {
    ($($ty:ty),*) => {$(
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )*};
}

display_as_str!(
    UnmountedPhase,
    StaleReason,
    Origin,
    RateLimitReason,
    ConfirmationInvalidReason
);
