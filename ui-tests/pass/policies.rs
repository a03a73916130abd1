//! Policies attach at component and capability level; each registration
//! gets a fresh chain, and the catalog lists them by identity: a custom
//! policy by its name and Rust type.

use agent_surface::policy::{Decision, Policy, PolicyContext};
use agent_surface::prelude::*;

struct BetaOnly;

impl Policy for BetaOnly {
    fn name(&self) -> &str {
        "betaOnly"
    }
    fn on_discovery(&self, ctx: &PolicyContext<'_>) -> Decision {
        if ctx.consumer().grants().iter().any(|grant| grant == "beta") {
            Decision::Expose
        } else {
            Decision::Hide
        }
    }
}

struct Named(&'static str);

impl Policy for Named {
    fn name(&self) -> &str {
        self.0
    }
}

fn audited() -> Named {
    Named("audited")
}

pub struct Reports;

/// Reports.
#[agent_component(type = "reports.panel", policies = [BetaOnly, audited()])]
impl Reports {
    /// The report count.
    #[observation(policies = [Named("countPolicy")])]
    fn count(&self) -> u32 {
        0
    }

    /// Export.
    #[action(effect = "local-state", policies = [])]
    fn export(&self) {}
}

fn main() {
    let contract = Reports::contract().checked().expect("valid contract");
    let names: Vec<String> = contract.policies().iter().map(|p| p.name().to_owned()).collect();
    assert_eq!(names, ["betaOnly", "audited"]);
    let count = contract.capability("count").unwrap();
    assert_eq!(count.policies().len(), 1);
    let json = serde_json::to_value(contract).unwrap();
    let custom = |name: &str, rust_type: &str| {
        let rust_type = format!("{}::{rust_type}", module_path!());
        serde_json::json!({"policy": "custom", "name": name, "type": rust_type})
    };
    // A custom policy is declared with the names it reads (for review);
    // its identity is otherwise its name and type.
    assert_eq!(json["policies"][0]["declared"]["reads"], serde_json::json!(["BetaOnly"]));
    assert_eq!(json["policies"][1]["declared"]["reads"], serde_json::json!(["audited"]));
    let identity = |value: &serde_json::Value| {
        let mut value = value.clone();
        for policy in value.as_array_mut().into_iter().flatten() {
            policy.as_object_mut().map(|policy| policy.remove("declared"));
        }
        value
    };
    assert_eq!(
        identity(&json["policies"]),
        serde_json::json!([custom("betaOnly", "BetaOnly"), custom("audited", "Named")])
    );
    assert_eq!(
        identity(&json["observations"][0]["policies"]),
        serde_json::json!([custom("countPolicy", "Named")])
    );
}
