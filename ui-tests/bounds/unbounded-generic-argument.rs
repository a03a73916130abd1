use agent_surface::prelude::*;

/// A page of items.
#[agent_schema]
pub struct Page<T> {
    /// The items: the list is bounded, what it holds is the argument's.
    #[schemars(length(max = 20))]
    pub items: Vec<T>,
}

/// Tags.
#[agent_schema]
pub struct Tags {
    /// A page of tags.
    pub page: Page<String>,
}

pub struct Panel;

/// A panel.
#[agent_component(type = "demo.panel")]
impl Panel {
    /// Does it.
    #[action(effect = "local-state")]
    fn act(&self, input: Tags) {
        let _ = input;
    }
}

fn main() {}
