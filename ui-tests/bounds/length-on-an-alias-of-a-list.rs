use agent_surface::prelude::*;

/// Names, through an alias the macro cannot read.
pub type Names = Vec<String>;

/// A rename.
#[agent_schema]
pub struct Rename {
    /// How many names is bounded; each name is not.
    #[schemars(length(max = 5))]
    pub names: Names,
    /// Two labels.
    pub labels: (u8, u8),
}

pub struct Panel;

/// A panel.
#[agent_component(type = "demo.panel")]
impl Panel {
    /// Renames.
    #[action(effect = "local-state")]
    fn rename(&self, input: Rename) {
        let _ = input;
    }
}

fn main() {}
