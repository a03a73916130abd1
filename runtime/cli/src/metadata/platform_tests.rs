//! Platform conditions on the way to each linked crate.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
use super::*;
use serde_json::json;

/// A package `id` with a library target, local (no source) or not.
fn package(id: &str, local: bool, deps: &[&str]) -> Value {
    json!({
        "id": id, "name": id, "version": "1.0.0",
        "source": if local { Value::Null } else { json!("registry+https://example") },
        "manifest_path": format!("/src/{id}/Cargo.toml"),
        "dependencies": deps.iter().map(|d| json!({"name": d})).collect::<Vec<_>>(),
        "targets": [{"name": id, "kind": ["lib"], "src_path": format!("/src/{id}/src/lib.rs")}],
    })
}

fn edge(pkg: &str, target: Option<&str>) -> Value {
    json!({"pkg": pkg, "dep_kinds": [{"kind": null, "target": target}]})
}

#[test]
fn a_dependency_linked_only_on_some_platforms_carries_its_condition() {
    let metadata = json!({
        "packages": [
            package("app", true, &["agent-surface", "hidden", "shared", "tool"]),
            package("hidden", true, &["agent-surface"]),
            package("shared", true, &[]),
            package("tool", false, &["kit"]),
            package("kit", false, &["agent-surface"]),
            package("sys", false, &[]),
            package("agent-surface", false, &[]),
        ],
        "resolve": {"nodes": [
            {"id": "app", "deps": [
                edge("hidden", Some("cfg(windows)")),
                edge("tool", Some("cfg(target_os = \"macos\")")),
                edge("shared", Some("cfg(windows)")),
                {"pkg": "sys", "dep_kinds": [{"kind": "dev", "target": null}]},
            ]},
            // `tool` reaches the framework through `kit`, which
            // re-exports it.
            {"id": "kit", "deps": [edge("agent-surface", None)]},
            // `shared` is reached directly and through `hidden`, both
            // only on Windows: it stays conditional.
            {"id": "hidden", "deps": [edge("shared", None), edge("agent-surface", None)]},
            {"id": "tool", "deps": [edge("sys", None), edge("kit", None)]},
        ]},
    });
    let linked = linked_dependency_crates(&metadata, "app");
    let find = |name: &str| linked.iter().find(|l| l.crate_name == name).unwrap();
    assert_eq!(find("hidden").condition, ["cfg(windows)"]);
    // A path crate is read, never judged by its dependencies.
    assert!(!find("hidden").declares);
    assert_eq!(find("tool").condition, ["cfg(target_os = \"macos\")"]);
    assert!(
        find("tool").declares,
        "through a crate re-exporting the framework"
    );
    assert_eq!(find("shared").condition, ["cfg(windows)"]);
    // Linked through `tool`, under its condition; never as a dev
    // dependency of the app.
    assert_eq!(find("sys").condition, ["cfg(target_os = \"macos\")"]);
    assert!(!find("sys").declares);
}

#[test]
fn a_dependency_reached_under_two_platforms_carries_both() {
    let metadata = json!({
        "packages": [
            package("app", true, &[]),
            package("win", true, &[]),
            package("mac", true, &[]),
            package("kit", false, &[]),
            package("deep", false, &[]),
            package("agent-surface", false, &[]),
        ],
        "resolve": {"nodes": [
            {"id": "app", "deps": [
                edge("win", Some("cfg(windows)")),
                edge("mac", Some("cfg(target_os = \"macos\")")),
            ]},
            {"id": "win", "deps": [edge("kit", None)]},
            {"id": "mac", "deps": [edge("kit", None)]},
            {"id": "kit", "deps": [edge("agent-surface", None), edge("deep", Some("unix"))]},
        ]},
    });
    let linked = linked_dependency_crates(&metadata, "app");
    let find = |name: &str| linked.iter().find(|l| l.crate_name == name).unwrap();
    // Both ways are told, never only the first one found.
    assert_eq!(
        find("kit").condition,
        ["any(cfg(target_os = \"macos\"), cfg(windows))"]
    );
    assert!(find("kit").declares);
    assert_eq!(
        find("deep").condition,
        ["any(all(cfg(target_os = \"macos\"), unix), all(cfg(windows), unix))"]
    );
}

#[test]
fn a_wider_way_replaces_a_narrower_one_and_many_ways_stay_bounded() {
    // `kit` is reached under `cfg(unix)` and, through `a`, under
    // `all(cfg(unix), cfg(feature))`: the narrower way adds nothing.
    let mut packages = vec![
        package("app", true, &[]),
        package("a", true, &[]),
        package("kit", false, &[]),
    ];
    let mut app_deps = vec![edge("a", Some("cfg(unix)")), edge("kit", Some("cfg(unix)"))];
    let mut nodes = vec![json!({"id": "a", "deps": [edge("kit", Some("cfg(feature)"))]})];
    // And twenty more ways to `many`, each under its own condition.
    packages.push(package("many", false, &[]));
    for i in 0..20 {
        let id = format!("via{i}");
        packages.push(package(&id, true, &[]));
        app_deps.push(edge(&id, Some(&format!("cfg(p{i:02})"))));
        nodes.push(json!({"id": id, "deps": [edge("many", None)]}));
    }
    nodes.push(json!({"id": "app", "deps": app_deps}));
    let metadata = json!({"packages": packages, "resolve": {"nodes": nodes}});
    let linked = linked_dependency_crates(&metadata, "app");
    let find = |name: &str| linked.iter().find(|l| l.crate_name == name).unwrap();
    assert_eq!(find("kit").condition, ["cfg(unix)"]);
    let many = &find("many").condition;
    assert_eq!(many.len(), 1, "{many:?}");
    let told = &many[0];
    assert!(
        told.starts_with("any(") && told.contains(crate::ways::OTHER_WAYS),
        "{told}"
    );
    assert_eq!(
        told.matches("cfg(p").count(),
        crate::ways::MAX_WAYS,
        "{told}"
    );
}

#[test]
fn an_unconditional_way_wins_over_a_conditional_one() {
    let metadata = json!({
        "packages": [
            package("app", true, &[]),
            package("a", true, &[]),
            package("b", true, &[]),
        ],
        "resolve": {"nodes": [
            {"id": "app", "deps": [edge("a", Some("cfg(windows)")), edge("b", None)]},
            {"id": "a", "deps": [edge("b", None)]},
            {"id": "b", "deps": [edge("a", None)]},
        ]},
    });
    let linked = linked_dependency_crates(&metadata, "app");
    for name in ["a", "b"] {
        let found = linked.iter().find(|l| l.crate_name == name).unwrap();
        assert!(found.condition.is_empty(), "{name}: {:?}", found.condition);
    }
    assert_eq!(linked.len(), 2);
}

#[test]
fn a_way_on_every_platform_covers_eight_conditional_ones_whatever_the_order() {
    // app -> i0..i7 (each under its own cfg) -> shared; app -> wrap -> shared
    // on every platform.
    for wrap_first in [true, false] {
        let mut packages = vec![
            package("app", true, &[]),
            package("shared", true, &[]),
            package("wrap", true, &[]),
        ];
        let mut app_deps = Vec::new();
        if wrap_first {
            app_deps.push(edge("wrap", None));
        }
        let mut nodes = vec![json!({"id": "wrap", "deps": [edge("shared", None)]})];
        for i in 0..8 {
            let id = format!("i{i}");
            packages.push(package(&id, true, &[]));
            app_deps.push(edge(&id, Some(&format!("cfg(c{i})"))));
            nodes.push(json!({"id": id, "deps": [edge("shared", None)]}));
        }
        if !wrap_first {
            app_deps.push(edge("wrap", None));
        }
        nodes.push(json!({"id": "app", "deps": app_deps}));
        let metadata = json!({"packages": packages, "resolve": {"nodes": nodes}});
        let linked = linked_dependency_crates(&metadata, "app");
        let shared = linked.iter().find(|l| l.crate_name == "shared").unwrap();
        assert!(shared.condition.is_empty(), "{:?}", shared.condition);
    }
}
