use agent_surface::prelude::*;

#[agent_schema]
pub struct Page {
    /// Page number.
    pub page: u32,
}

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Rows of a page.
    #[observation]
    fn rows(&self, _page: Page) -> Vec<String> {
        Vec::new()
    }
}

fn main() {}
