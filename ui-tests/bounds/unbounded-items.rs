use agent_surface::prelude::*;

/// Tags to add.
#[agent_schema]
pub struct Tag {
    /// The tags: the list is bounded, its strings are not.
    #[schemars(length(max = 10))]
    pub tags: Vec<String>,
    /// A note.
    pub note: Option<String>,
}

pub struct Panel;

/// A panel.
#[agent_component(type = "demo.panel")]
impl Panel {
    /// Tags the panel.
    #[action(effect = "local-state")]
    fn tag(&self, input: Tag) {
        let _ = input;
    }
}

fn main() {}
