use agent_surface::prelude::*;

pub struct Player;

/// A player.
#[agent_component(type = "media.player")]
impl Player {
    /// Plays.
    #[action(effect = "local-state", when = ready, unavailable_reason = why_maybe)]
    fn play(&self) {}

    /// Pauses.
    #[action(effect = "local-state", when = ready, unavailable_reason = why_with_argument)]
    fn pause(&self) {}

    /// Stops.
    #[action(effect = "local-state", when = ready, unavailable_reason = why_later)]
    fn stop(&self) {}

    fn ready(&self) -> bool {
        true
    }

    fn why_maybe(&self) -> Option<String> {
        None
    }

    fn why_with_argument(&self, code: u32) -> String {
        code.to_string()
    }

    async fn why_later(&self) -> String {
        String::new()
    }
}

fn main() {}
