use agent_surface::prelude::*;

#[agent_schema]
pub union Bits {
    a: u32,
    b: f32,
}

/// Holds bits; the union is reported once, its uses raise nothing more.
#[agent_component(type = "demo.bits")]
impl Holder {
    /// Stores the bits.
    #[action(effect = "local-state")]
    fn store(&self, input: Bits) {
        let _ = input;
    }
}

pub struct Holder;

#[agent_schema]
pub struct Wrapper {
    /// The bits.
    pub bits: Bits,
}

fn main() {}
