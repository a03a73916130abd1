use agent_surface::prelude::*;

fn main() {
    // The registry handle an adapter holds has no way to the explain view:
    // only the explicit `agent_surface::explain` path reaches it.
    let registry = Registry::builder().build();
    let _ = registry.explain(&SnapshotOptions::default());
    let _ = registry.explain_surface(&SnapshotOptions::default());
}
