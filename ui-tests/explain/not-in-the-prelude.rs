use agent_surface::prelude::*;

fn main() {
    // The developer-only explain view is not reachable from the prelude.
    let registry = Registry::builder().build();
    let _ = explain_surface(&registry, &SnapshotOptions::default());
    let _: Option<Explanation> = None;
}
