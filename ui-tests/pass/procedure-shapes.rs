//! Procedure inputs written in every order, with unquoted output types.

use agent_surface::prelude::*;

mod reports {
    use agent_surface::prelude::*;

    #[agent_schema]
    pub struct Row {
        /// The row id.
        pub id: String,
    }
}

/// Lists rows: `#[agent_schema]` above `#[agent_procedure]`.
#[agent_schema]
#[agent_procedure(id = "domain:reports.rows", effect = "server-query", output = Vec<reports::Row>)]
pub struct ListRows {
    /// The report.
    #[agent_schema(unbounded)] pub report_id: String,
}

/// Counts rows: a path as the output type.
#[agent_procedure(id = "domain:reports.count", effect = "server-query", output = reports::Row)]
#[agent_schema]
pub struct CountRows {
    /// The report.
    #[agent_schema(unbounded)] pub report_id: String,
}

/**
 * Deletes rows.
 *
 * - every listed row
 * - nothing else
 */
#[agent_procedure(id = "domain:reports.delete", effect = "destructive", output = std::vec::Vec<String>)]
pub struct DeleteRows {
    /// The rows.
    #[agent_schema(unbounded)] pub ids: Vec<String>,
}

fn main() {
    let rows = ListRows::contract().checked().unwrap();
    assert!(rows.output_schema().is_some());
    assert_eq!(ListRows::fields().report_id.name(), "reportId");
    assert!(CountRows::contract().checked().unwrap().output_schema().is_some());
    let delete = DeleteRows::contract().checked().unwrap();
    assert_eq!(&**delete.description(), "Deletes rows.\n\n- every listed row\n- nothing else");
}
