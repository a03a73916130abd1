// The developer-only explain view is not re-exported at the crate root:
// adapters and applications that import `agent_surface::*` never see it.
use agent_surface::*;

fn main() {
    let registry = Registry::builder().build();
    let _ = explain_surface(&registry, &SnapshotOptions::default());
    let _: Option<Explanation> = None;
    let _ = agent_surface::explain_surface;
}
