//! `when` may name a boolean observation of the same impl block: the agent
//! reads it, and the surface uses it to decide availability.

use std::sync::atomic::{AtomicBool, Ordering};

use agent_surface::prelude::*;

pub struct Player {
    playing: AtomicBool,
}

/// A media player.
#[agent_component(type = "media.player")]
impl Player {
    /// Whether something is playing.
    #[observation]
    fn is_playing(&self) -> bool {
        self.playing.load(Ordering::Relaxed)
    }

    /// Pauses playback.
    #[action(effect = "local-state", when = is_playing, unavailable_reason = "Nothing is playing")]
    fn pause(&self) {
        self.playing.store(false, Ordering::Relaxed);
    }
}

fn main() {
    let contract = Player::contract().checked().expect("valid contract");
    assert!(contract.capability("isPlaying").is_some());
    assert!(contract.capability("pause").is_some());
    let player = Player { playing: AtomicBool::new(false) };
    assert!(!player.is_playing());
}
