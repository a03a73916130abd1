use agent_surface::prelude::*;

/// One line of an order: its own type, bounded where it is declared.
#[agent_schema]
pub struct Line {
    /// The product.
    pub product: String,
}

/// An order.
#[agent_schema]
pub struct Order {
    /// The lines.
    #[schemars(length(max = 50))]
    pub lines: Vec<Line>,
}

pub struct Shop;

/// A shop.
#[agent_component(type = "demo.shop")]
impl Shop {
    /// Places an order.
    #[action(effect = "local-state")]
    fn order(&self, input: Order) {
        let _ = input;
    }
}

fn main() {}
