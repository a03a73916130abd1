use agent_surface::prelude::*;

pub struct Player;

/// A player.
#[agent_component(type = "media.player")]
impl Player {
    /// Plays.
    #[action(effect = "local-state", when = ready, unavailable_reason = why)]
    fn play(&self) {}

    fn ready(&self) -> bool {
        true
    }

    fn why(&self) -> Option<String> {
        None
    }
}

fn main() {}
