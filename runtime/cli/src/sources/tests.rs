//! The source scan against small crates written for each case.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use super::{Scan, scan};
use crate::metadata::ScanRoot;

/// Scans a crate made of `lib` (and `extra` files beside it), linked
/// under `condition`.
pub(super) fn scan_text(name: &str, lib: &str, extra: &[(&str, &str)], condition: &[&str]) -> Scan {
    let dir = std::env::temp_dir().join(format!("as-scan-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/lib.rs"), lib).unwrap();
    for (file, text) in extra {
        std::fs::write(dir.join("src").join(file), text).unwrap();
    }
    let scan = scan(&[ScanRoot {
        label: None,
        dir: dir.clone(),
        entry_points: vec![dir.join("src/lib.rs")],
        condition: condition.iter().map(|c| (*c).to_owned()).collect(),
    }]);
    let _ = std::fs::remove_dir_all(&dir);
    scan
}

pub(super) const COMPONENT: &str = r#"
    /// Hidden panel.
    #[agent_component(type = "hidden.panel")]
    impl Panel {
        /// Wipes everything.
        #[action(effect = "local-state")]
        fn wipe(&self) {}
    }
    struct Panel;
"#;

pub(super) const RELEASE: &str = "not(debug_assertions)";
/// How the scan prints that condition (token spacing).
pub(super) const RELEASE_SHOWN: &str = "not (debug_assertions)";

/// Runs `scan` on a stack as large as the scan's own (deep sources), not a
/// test thread's.
fn on_large_stack(scan: impl FnOnce() -> Scan + Send + 'static) -> Scan {
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(scan)
        .unwrap()
        .join()
        .unwrap()
}

/// What the scan says of files it did not read (one line each).
pub(super) fn files_said(scan: &Scan) -> Vec<String> {
    scan.link_level
        .iter()
        .filter(|line| line.starts_with("src/"))
        .cloned()
        .collect()
}

pub(super) fn keys(scan: &Scan) -> Vec<(&str, &str)> {
    scan.gated
        .iter()
        .map(|g| (g.key.as_str(), g.condition.as_str()))
        .collect()
}

/// `lib` (named `name` in failures) shows the component under the
/// release condition, once.
fn assert_the_component_is_gated(name: &str, lib: &str) {
    let scan = scan_text(name, lib, &[], &[]);
    assert_eq!(
        keys(&scan),
        [("component hidden.panel", RELEASE_SHOWN)],
        "{name}: {lib}"
    );
}

#[test]
fn a_component_under_cfg_in_a_module_is_seen() {
    let lib = format!("#[cfg({RELEASE})]\nmod m {{ {COMPONENT} }}");
    let scan = scan_text("module", &lib, &[], &[]);
    assert_eq!(keys(&scan), [("component hidden.panel", RELEASE_SHOWN)]);
}

#[test]
fn a_component_in_any_block_under_cfg_is_seen() {
    for (name, lib) in [
        (
            "trait",
            format!("#[cfg({RELEASE})]\npub trait Hidden {{ fn install() {{ {COMPONENT} }} }}"),
        ),
        (
            "trait-method",
            format!("pub trait Hidden {{ #[cfg({RELEASE})] fn install() {{ {COMPONENT} }} }}"),
        ),
        (
            "impl-method",
            format!("struct S; impl S {{ #[cfg({RELEASE})] fn f() {{ {COMPONENT} }} }}"),
        ),
        (
            "enum",
            format!("#[cfg({RELEASE})]\npub enum E {{ A = {{ {COMPONENT} 0 }} }}"),
        ),
        (
            "array-length",
            format!("#[cfg({RELEASE})]\npub struct A([u8; {{ {COMPONENT} 1 }}]);"),
        ),
        (
            "type-alias",
            format!("#[cfg({RELEASE})]\npub type T = [u8; {{ {COMPONENT} 1 }}];"),
        ),
        (
            "block-statement",
            format!("fn f() {{ #[cfg({RELEASE})] {{ {COMPONENT} }} }}"),
        ),
        (
            "let-statement",
            format!("fn f() {{ #[cfg({RELEASE})] let _x = {{ {COMPONENT} 1 }}; }}"),
        ),
    ] {
        assert_the_component_is_gated(name, &lib);
    }
}

#[test]
fn a_cfg_anywhere_around_a_component_is_its_condition() {
    for (name, lib) in [
        (
            "match-arm",
            format!("fn f(x: u8) {{ match x {{ #[cfg({RELEASE})] _ => {{ {COMPONENT} }} }} }}"),
        ),
        (
            "variant",
            format!("pub enum E {{ #[cfg({RELEASE})] A = {{ {COMPONENT} 0 }} }}"),
        ),
        (
            "field",
            format!("pub struct S {{ #[cfg({RELEASE})] a: [u8; {{ {COMPONENT} 1 }}] }}"),
        ),
        (
            "field-value",
            format!(
                "struct S {{ a: u8 }}\nfn f() -> S {{ S {{ #[cfg({RELEASE})] a: {{ {COMPONENT} 1 }} }} }}"
            ),
        ),
        (
            "fn-arg",
            format!("fn f(#[cfg({RELEASE})] _a: [u8; {{ {COMPONENT} 1 }}]) {{}}"),
        ),
        (
            "generic",
            format!("fn f<#[cfg({RELEASE})] const N: usize = {{ {COMPONENT} 1 }}>() {{}}"),
        ),
    ] {
        assert_the_component_is_gated(name, &lib);
    }
}

#[test]
fn declarations_in_a_macros_arguments_under_a_condition_are_seen() {
    let passing = "macro_rules! id { ($($t:tt)*) => { $($t)* } }\n";
    for (name, lib, key, condition) in [
        (
            "cfg-if",
            format!("cfg_if::cfg_if! {{ if #[cfg({RELEASE})] {{ {COMPONENT} }} }}"),
            "declarations in the arguments of cfg_if!",
            "#[cfg] inside the macro's arguments",
        ),
        (
            "pass-through",
            format!("{passing}#[cfg({RELEASE})]\nid! {{ {COMPONENT} }}"),
            "declarations in the arguments of id!",
            RELEASE_SHOWN,
        ),
        (
            "vec",
            format!("#[cfg({RELEASE})]\nfn f() {{ let _ = vec![{{ {COMPONENT} 1 }}]; }}"),
            "declarations in the arguments of vec!",
            RELEASE_SHOWN,
        ),
    ] {
        let scan = scan_text(name, &lib, &[], &[]);
        assert_eq!(keys(&scan), [(key, condition)], "{name}");
    }
    // Unconditional, with no condition inside: in the build, nothing to list.
    let scan = scan_text(
        "plain-vec",
        &format!("fn f() {{ let _ = vec![{{ {COMPONENT} 1 }}]; }}"),
        &[],
        &[],
    );
    assert!(scan.gated.is_empty(), "{:?}", scan.gated);
}

#[test]
fn a_wrapper_of_a_generator_and_long_rename_chains_are_followed() {
    let generator = format!("macro_rules! panel {{ () => {{ {COMPONENT} }} }}\n");
    let wrapper = format!(
        "{generator}macro_rules! wrap {{ () => {{ panel!{{}} }} }}\n#[cfg({RELEASE})]\nwrap!{{}}"
    );
    let scan = scan_text("wrapper", &wrapper, &[], &[]);
    assert_eq!(
        keys(&scan),
        [("declarations generated by wrap!", RELEASE_SHOWN)]
    );
    // Seventy renames in a chain, and decoys renamed to the same name.
    let mut chain = generator.clone();
    let mut last = "panel".to_owned();
    for n in 0..70 {
        chain.push_str(&format!("pub(crate) use {last} as r{n};\n"));
        last = format!("r{n}");
    }
    for n in 0..100 {
        chain.push_str(&format!("pub(crate) use junk{n} as {last};\n"));
    }
    chain.push_str(&format!("#[cfg({RELEASE})]\n{last}!{{}}"));
    let scan = scan_text("chain", &chain, &[], &[]);
    assert_eq!(
        keys(&scan),
        [("declarations generated by r69!", RELEASE_SHOWN)]
    );
}

#[test]
fn an_included_expression_is_read_and_a_file_that_does_not_parse_is_said() {
    let lib = format!("#[cfg({RELEASE})]\nfn f() -> u8 {{ include!(\"expr.rs\") }}");
    let expression = format!("{{ {COMPONENT} 1 }}");
    let scan = scan_text("include-expr", &lib, &[("expr.rs", &expression)], &[]);
    assert_eq!(keys(&scan), [("component hidden.panel", RELEASE_SHOWN)]);
    let lib = "mod broken;";
    let scan = scan_text("unparsed", lib, &[("broken.rs", "fn (")], &[]);
    assert!(
        scan.link_level
            .iter()
            .any(|line| line.contains("broken.rs") && line.contains("not read")),
        "{:?}",
        scan.link_level
    );
}

#[test]
fn a_generator_invoked_anywhere_under_cfg_is_seen() {
    let generator = format!("macro_rules! panel {{ () => {{ {COMPONENT} }} }}\n");
    for (name, call) in [
        ("item", format!("#[cfg({RELEASE})]\npanel!{{}}")),
        (
            "const-block",
            format!("#[cfg({RELEASE})]\nconst _: () = {{ panel!{{}} }};"),
        ),
        (
            "statement",
            format!("#[cfg({RELEASE})]\nfn f() {{ panel!(); }}"),
        ),
        (
            "expression",
            format!("#[cfg({RELEASE})]\nfn f() -> u8 {{ let _ = panel!(); 0 }}"),
        ),
        (
            "renamed",
            format!("pub(crate) use panel as quiet;\n#[cfg({RELEASE})]\nquiet!{{}}"),
        ),
        (
            "renamed-twice",
            format!(
                "pub(crate) use panel as quiet;\npub(crate) use quiet as hush;\n\
                 #[cfg({RELEASE})]\nfn f() {{ hush!(); }}"
            ),
        ),
    ] {
        let scan = scan_text(name, &format!("{generator}{call}"), &[], &[]);
        assert_eq!(
            keys(&scan),
            [("declarations generated by panel!", RELEASE_SHOWN)].map(|(k, c)| {
                let k = match name {
                    "renamed" => "declarations generated by quiet!",
                    "renamed-twice" => "declarations generated by hush!",
                    _ => k,
                };
                (k, c)
            }),
            "{name}"
        );
    }
}

#[test]
fn an_include_in_a_statement_under_cfg_is_read() {
    let lib = format!("#[cfg({RELEASE})]\nfn f() {{ include!(\"hidden.rs\"); }}");
    let scan = scan_text("include", &lib, &[("hidden.rs", COMPONENT)], &[]);
    assert_eq!(keys(&scan), [("component hidden.panel", RELEASE_SHOWN)]);
}

#[test]
fn a_crate_linked_only_on_some_platforms_declares_under_that_condition() {
    let read = scan_text("platform", COMPONENT, &[], &["cfg(windows)"]);
    assert_eq!(keys(&read), [("component hidden.panel", "cfg(windows)")]);
    // A registry crate is not read: the crate itself is listed.
    let unread = scan(&[ScanRoot {
        label: Some("hidden 1.0.0".to_owned()),
        dir: PathBuf::new(),
        entry_points: Vec::new(),
        condition: vec!["cfg(windows)".to_owned()],
    }]);
    assert_eq!(
        keys(&unread),
        [(
            "declarations of a crate linked only on some platforms (crate hidden 1.0.0)",
            "cfg(windows)"
        )]
    );
}

#[test]
fn a_file_reached_under_two_conditions_declares_under_both() {
    let lib = "#[cfg(windows)]\n#[path = \"panel.rs\"]\nmod on_windows;\n\
               #[cfg(target_os = \"macos\")]\n#[path = \"panel.rs\"]\nmod on_macos;\n";
    let scan = scan_text("two-ways", lib, &[("panel.rs", COMPONENT)], &[]);
    assert_eq!(
        keys(&scan),
        [
            ("component hidden.panel", "target_os = \"macos\""),
            ("component hidden.panel", "windows"),
        ]
    );
    // One way on every platform covers the others: nothing is gated.
    let lib = format!("{lib}#[path = \"panel.rs\"]\nmod everywhere;\n");
    let scan = scan_text("every-way", &lib, &[("panel.rs", COMPONENT)], &[]);
    assert_eq!(keys(&scan), []);
}

/// `lib` with `first` and then eight more ways to `panel.rs`.
fn eight_ways(first: &str, condition: &str) -> String {
    let mut lib = first.to_owned();
    for i in 0..8 {
        lib.push_str(&format!(
            "#[cfg({condition})]\n#[cfg(c{i})]\n#[path = \"panel.rs\"]\nmod on_{i};\n"
        ));
    }
    lib
}

#[test]
fn a_way_on_every_platform_covers_any_number_of_conditional_ones() {
    for (name, lib) in [
        ("every-last", eight_ways("mod panel;\n", "unix")),
        (
            "every-first",
            format!("{}mod panel;\n", eight_ways("", "unix")),
        ),
    ] {
        let scan = scan_text(name, &lib, &[("panel.rs", COMPONENT)], &[]);
        assert_eq!(keys(&scan), [], "{name}");
        assert_eq!(scan.link_level, Vec::<String>::new(), "{name}");
    }
}

#[test]
fn ways_of_test_builds_never_crowd_out_a_shipping_platform() {
    let lib = eight_ways(
        "#[cfg(target_os = \"macos\")]\n#[path = \"panel.rs\"]\nmod mac;\n",
        "test",
    );
    let scan = scan_text("test-ways", &lib, &[("panel.rs", COMPONENT)], &[]);
    assert_eq!(
        keys(&scan),
        [("component hidden.panel", "target_os = \"macos\"")]
    );
}

#[test]
fn a_way_beyond_those_told_apart_still_changes_what_review_sees() {
    let before = eight_ways(
        "#[cfg(windows)]\n#[path = \"panel.rs\"]\nmod win;\n",
        "unix",
    );
    let after =
        format!("#[cfg(target_os = \"macos\")]\n#[path = \"panel.rs\"]\nmod mac;\n{before}");
    let a = scan_text("beyond-a", &before, &[("panel.rs", COMPONENT)], &[]);
    let b = scan_text("beyond-b", &after, &[("panel.rs", COMPONENT)], &[]);
    assert_ne!(a.gated, b.gated);
    assert_ne!(a.link_level, b.link_level);
    assert!(
        b.link_level
            .iter()
            .any(|line| line.contains("more platform conditions than the gate tells apart")),
        "{:?}",
        b.link_level
    );
}

#[test]
fn a_chain_of_ever_narrower_ways_is_walked_once() {
    // `f.rs` is included at every depth of 1,500 nested modules, each under
    // one more condition: the shortest way covers the rest.
    let depth = 1_500;
    let mut lib = String::new();
    for i in 0..depth {
        lib.push_str(&format!("#[cfg(c{i})] mod m {{ include!(\"f.rs\");\n"));
    }
    lib.push_str(&"}\n".repeat(depth));
    let f = format!("#[cfg(y)]\nmod hidden {{ {COMPONENT} }}\n");
    let scan = on_large_stack(move || scan_text("narrowing-chain", &lib, &[("f.rs", &f)], &[]));
    assert_eq!(keys(&scan), [("component hidden.panel", "all(c0, y)")]);
}

#[test]
fn declarations_beyond_those_listed_are_said_with_a_digest() {
    let mut methods = String::new();
    for i in 0..10_000 {
        methods.push_str(&format!(
            "#[cfg_attr(x, action(effect = \"local-state\"))] fn m{i}(&self) {{}}\n"
        ));
    }
    let lib = format!(
        "#[agent_component(type = \"a\")]\nimpl A {{\n{methods}}}\npub struct A;\n\
         #[cfg(target_os = \"macos\")]\nmod mac {{ {} }}\n",
        COMPONENT.replace("hidden.panel", "zz.hidden")
    );
    let scan = scan_text("flood", &lib, &[], &[]);
    assert_eq!(scan.gated.len(), 10_000);
    assert!(
        scan.link_level
            .iter()
            .any(|line| line.starts_with("1 more declarations outside the build")),
        "{:?}",
        scan.link_level
    );
}

#[test]
fn which_ways_are_told_apart_does_not_depend_on_the_declarations_order() {
    let ways: Vec<String> = (0..10)
        .map(|i| format!("#[cfg(c{i})]\n#[path = \"panel.rs\"]\nmod on_{i};\n"))
        .collect();
    let forward = ways.concat();
    let backward: String = ways.iter().rev().cloned().collect();
    let a = scan_text("order-forward", &forward, &[("panel.rs", COMPONENT)], &[]);
    let b = scan_text("order-backward", &backward, &[("panel.rs", COMPONENT)], &[]);
    assert_eq!(a.gated, b.gated);
    assert_eq!(a.link_level, b.link_level);
    assert!(
        a.link_level
            .iter()
            .any(|line| line.contains("(2 more, digest "))
    );
}

#[test]
fn conditions_nested_past_the_limit_are_told_as_more_and_stay_linear() {
    let depth = 1_000;
    let mut lib = String::new();
    for i in 0..depth {
        lib.push_str(&format!("#[cfg(c{i})] mod m{i} {{\n"));
    }
    lib.push_str(COMPONENT);
    lib.push_str(&"}\n".repeat(depth));
    let scan = on_large_stack(move || scan_text("deep-conditions", &lib, &[], &[]));
    let told = keys(&scan);
    assert_eq!(told.len(), 1, "{told:?}");
    let condition = told[0].1;
    assert!(condition.starts_with("all(c0, c1, "), "{condition}");
    assert!(
        condition.contains(", more conditions than the gate tells apart (digest "),
        "{condition}"
    );
    assert_eq!(
        condition.matches(", ").count() + 1,
        crate::source_attrs::MAX_CONDITIONS
    );
}
