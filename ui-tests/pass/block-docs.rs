//! `/** … */` doc comments become descriptions: the leading ` * ` goes,
//! paragraphs and markdown list items stay.

use agent_surface::prelude::*;

pub struct Table;

/**
 * A table of devices.
 *
 * Rows are devices.
 */
#[agent_component(type = "devices.table")]
impl Table {
    /**
     * Selects rows.
     *
     * - by id
     * - by range
     */
    #[action(effect = "local-state")]
    fn select(&self) {}

    /** The row count. */
    #[observation]
    fn count(&self) -> u32 {
        0
    }
}

fn main() {
    let contract = Table::contract().checked().expect("valid contract");
    assert_eq!(&**contract.description(), "A table of devices.\n\nRows are devices.");
    let select = contract.capability("select").unwrap();
    assert_eq!(&**select.description(), "Selects rows.\n\n- by id\n- by range");
    assert_eq!(&**contract.capability("count").unwrap().description(), "The row count.");
}
