//! `cargo run -p devices`: prints the catalog of everything the devices
//! console lets an agent observe and do, as deterministic JSON.

use std::process::ExitCode;

use agent_surface::catalog::Catalog;

// Link the components so their contracts are in the catalog.
use devices as _;

fn main() -> ExitCode {
    match Catalog::load() {
        Ok(catalog) => {
            println!("{}", catalog.to_json_pretty());
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}
