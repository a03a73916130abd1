//! One million invocations with distinct invocation ids: memory stays flat
//! because the dedupe window, the audit buffer and every other store are
//! bounded. Prints the peak resident set size as it goes (Linux).
//!
//! `cargo run --release -p agent-surface --example dedupe_memory`

use std::sync::Arc;

use agent_surface::prelude::*;
use serde_json::json;

/// Ids to poke.
#[agent_schema]
pub struct Poke {
    /// Ids.
    #[agent_schema(unbounded)]
    pub ids: Vec<String>,
}

/// A widget.
pub struct Widget;

/// A memory-test widget.
#[agent_component(type = "bench.widget")]
impl Widget {
    /// Poke some ids.
    #[action(effect = "local-state")]
    fn poke(&self, input: Poke) -> usize {
        input.ids.len()
    }
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    let registry = Registry::builder().build();
    let _mounted = registry.mount(Arc::new(Widget))?;
    runtime.block_on(async {
        for n in 1..=1_000_000u32 {
            let request = Invocation::new("view:bench.widget.poke")
                .input(json!({"ids": ["d1", "d2"]}))
                .invocation_id(format!("toolu_{n:08}"));
            let result = registry.invoke(request, InvokeOptions::default()).await;
            if let Some(error) = result.error() {
                eprintln!("unexpected: {error}");
                return;
            }
            if matches!(n, 1_000 | 10_000 | 100_000 | 1_000_000) {
                println!(
                    "{n:>9} invocations: peak RSS {} KiB, dedupe entries {}, audit events {}",
                    peak_rss_kib().map_or_else(|| "?".to_owned(), |kib| kib.to_string()),
                    registry.dedupe_len(),
                    registry.audit_log().len(),
                );
            }
        }
    });
    Ok(())
}
