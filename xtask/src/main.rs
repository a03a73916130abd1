//! Development tasks of the workspace, run by hand (not part of the test run).
//!
//! - `cargo run -p xtask --release -- compile-bench [--sizes 10,50,200] [--runs 1]`:
//!   the compile-time benchmark (see `compile_bench`).
//! - `cargo run -p xtask -- devices-web [--check] [--out DIR]`: builds the
//!   browser example into `target/devices-web/` and measures its size
//!   (`--check`: against its budget; see `devices_web`).

mod compile_bench;
mod devices_web;
mod generate;

use std::process::ExitCode;

/// Set on the process when it stands in for rustc (see `compile_bench`).
const WRAPPER_ENV: &str = "XTASK_RUSTC_BOOTSTRAP_WRAPPER";

fn main() -> ExitCode {
    if std::env::var_os(WRAPPER_ENV).is_some() {
        return compile_bench::bootstrap_wrapper();
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("compile-bench") => {
            compile_bench::Options::parse(args.get(1..).unwrap_or_default())
                .and_then(|options| compile_bench::run(&options))
        }
        Some("devices-web") => devices_web::Options::parse(args.get(1..).unwrap_or_default())
            .and_then(|options| devices_web::run_task(&options)),
        _ => Err(
            "usage: cargo run -p xtask --release -- compile-bench [--sizes 10,50,200] [--runs N] [--flavours agent-surface,rmcp,floor]\n       cargo run -p xtask -- devices-web [--check] [--out DIR]"
                .to_owned(),
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}
