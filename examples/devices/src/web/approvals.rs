//! `Approvals`: what the console's approvals need before it serves — the
//! proofs that the person approves (passkeys, terminal codes) and the
//! approval pages of remote agents' requests — made once and handed to the
//! registry, the MCP server and the console.

use agent_surface::confirmation::PresenceChallenge;
use agent_surface_passkeys::PasskeyError;

use super::{ApprovalPages, Presence};

/// The console's proofs of presence and approval pages.
#[derive(Clone, Debug)]
pub struct Approvals {
    presence: Presence,
    pages: ApprovalPages,
}

impl Approvals {
    /// Fresh passkeys and codes, and no approval pages yet (both start
    /// when the console serves).
    pub fn new() -> Result<Approvals, PasskeyError> {
        Ok(Approvals {
            presence: Presence::new()?,
            pages: ApprovalPages::new(),
        })
    }

    /// The proofs that the person approves.
    pub fn presence(&self) -> &Presence {
        &self.presence
    }

    /// The approval pages (give [`ApprovalPages::hook`] to the MCP server).
    pub fn pages(&self) -> &ApprovalPages {
        &self.pages
    }

    /// The one-time code the terminal shows for the request `challenge`
    /// stands for.
    pub fn code_for(&self, challenge: &PresenceChallenge) -> String {
        self.presence.code_for(challenge)
    }
}
