use agent_surface::prelude::*;

struct Table;

/// A table.
#[agent_component(type = "devices.table")]
impl Table {
    /// Flushes the rows.
    #[observation]
    async fn flush(&self, _ctx: &ReadContext) -> std::io::Result<()> {
        Ok(())
    }
}

fn main() {}
