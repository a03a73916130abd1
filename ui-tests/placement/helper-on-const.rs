use agent_surface::prelude::*;

pub struct Player;

/// A player.
#[agent_component(type = "media.player")]
impl Player {
    /// The volume.
    #[observation]
    const VOLUME: u32 = 7;

    /// The volume, read.
    #[observation]
    fn volume(&self) -> u32 {
        Self::VOLUME
    }
}

fn main() {}
