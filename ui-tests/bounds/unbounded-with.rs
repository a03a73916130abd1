use agent_surface::prelude::*;

/// A code.
#[agent_schema]
pub struct Code {
    /// The code, as a string on the wire.
    #[schemars(with = "String")]
    pub code: u32,
}

pub struct Panel;

/// A panel.
#[agent_component(type = "demo.panel")]
impl Panel {
    /// Does it.
    #[action(effect = "local-state")]
    fn act(&self, input: Code) {
        let _ = input;
    }
}

fn main() {}
