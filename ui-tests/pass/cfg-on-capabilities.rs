//! `#[cfg]` on a capability method: compiled out, the capability is not in
//! the contract and nothing refers to the method; the capabilities after it
//! dispatch to their own handlers. One method name under two exclusive
//! `#[cfg]`s is one capability.

use agent_surface::prelude::*;

pub struct Player;

/// A player.
#[agent_component(type = "media.player")]
impl Player {
    const VOLUME: u32 = 7;

    /// Only in test builds.
    #[cfg(test)]
    #[observation]
    fn hidden(&self) -> u32 {
        0
    }

    /// The volume.
    #[allow(clippy::unused_self)]
    #[observation]
    #[inline]
    fn volume(&self) -> u32 {
        Self::VOLUME
    }

    #[doc = "The state, one way."]
    #[cfg(not(test))]
    #[observation(when = ready, unavailable_reason = reason)]
    fn state(&self) -> String {
        "stopped".to_owned()
    }

    /// The state, the other way.
    #[cfg(test)]
    #[observation]
    fn state(&self) -> String {
        "playing".to_owned()
    }

    /// Stops.
    #[action(effect = "local-state")]
    #[must_use]
    fn stop(&self) -> bool {
        true
    }

    fn ready(&self) -> bool {
        true
    }

    fn reason(&self) -> String {
        "not ready".to_owned()
    }

    /// Not a capability.
    pub(crate) fn plain(&self) -> u32 {
        3
    }
}

fn main() {
    let contract = Player::contract().checked().unwrap();
    let names: Vec<String> = contract
        .capabilities()
        .iter()
        .map(|capability| capability.name().to_string())
        .collect();
    assert_eq!(names, ["volume", "state", "stop"]);
    assert_eq!(Player.plain(), 3);
}
