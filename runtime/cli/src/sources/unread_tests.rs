//! The source scan and files it cannot read: set aside (too deep), not
//! parsed, beyond its budget, or outside the crate.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use super::tests::{COMPONENT, RELEASE, RELEASE_SHOWN, files_said, keys, scan_text};
use crate::metadata::ScanRoot;

#[test]
fn a_file_set_aside_is_said_as_not_read_and_the_rest_is_scanned() {
    let dir = std::env::temp_dir().join(format!("as-scan-aside-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let lib = format!("#[cfg({RELEASE})]\nmod deep;\n#[cfg({RELEASE})]\nmod m {{ {COMPONENT} }}");
    std::fs::write(dir.join("src/lib.rs"), lib).unwrap();
    std::fs::write(dir.join("src/deep.rs"), COMPONENT).unwrap();
    let deep = std::fs::canonicalize(dir.join("src/deep.rs")).unwrap();
    let scan = super::scan_setting_aside(
        &[ScanRoot {
            label: None,
            dir: dir.clone(),
            entry_points: vec![dir.join("src/lib.rs")],
            condition: Vec::new(),
        }],
        &[deep],
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(keys(&scan), [("component hidden.panel", RELEASE_SHOWN)]);
    assert_eq!(
        files_said(&scan),
        [format!(
            "src/deep.rs: nests deeper than the source scan can parse: not read (digest {})",
            super::bytes_digest(COMPONENT.as_bytes())
        )]
    );
}

#[test]
fn a_file_set_aside_in_a_dependency_is_said_with_its_crate() {
    let base = std::env::temp_dir().join(format!("as-scan-dep-aside-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let (app, dep) = (base.join("app"), base.join("dep"));
    for dir in [&app, &dep] {
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join("src/lib.rs"), "#[cfg(any())]\nmod deep;\n").unwrap();
        std::fs::write(dir.join("src/deep.rs"), "fn f() {}").unwrap();
    }
    let aside = [
        std::fs::canonicalize(app.join("src/deep.rs")).unwrap(),
        std::fs::canonicalize(dep.join("src/deep.rs")).unwrap(),
    ];
    let root = |dir: &PathBuf, label: Option<&str>| ScanRoot {
        label: label.map(str::to_owned),
        dir: dir.clone(),
        entry_points: vec![dir.join("src/lib.rs")],
        condition: Vec::new(),
    };
    let scan =
        super::scan_setting_aside(&[root(&app, None), root(&dep, Some("dep 0.1.0"))], &aside);
    let _ = std::fs::remove_dir_all(&base);
    let digest = super::bytes_digest(b"fn f() {}");
    assert_eq!(
        scan.link_level
            .iter()
            .filter(|line| line.starts_with("files not read"))
            .count(),
        2,
        "one digest of each crate's tree: {:?}",
        scan.link_level
    );
    assert_eq!(
        files_said(&scan),
        [
            format!(
                "src/deep.rs (crate dep 0.1.0): nests deeper than the source scan can parse: \
                 not read (digest {digest})"
            ),
            format!(
                "src/deep.rs: nests deeper than the source scan can parse: not read (digest {digest})"
            ),
        ]
    );
}

#[test]
fn a_change_to_a_file_the_scan_cannot_read_still_shows() {
    let lib = "#[cfg(unix)]\nmod x;\n";
    let before = scan_text("unread-a", lib, &[("x.rs", "fn (")], &[]);
    let after = scan_text("unread-b", lib, &[("x.rs", "fn ( hidden")], &[]);
    assert_eq!(files_said(&before).len(), 1);
    assert_ne!(files_said(&before), files_said(&after));
    // A file only the unread one names: the crate's tree stands for it.
    let child = |text: &str| {
        scan_text(
            &format!("unread-child-{}", text.len()),
            lib,
            &[("x.rs", "fn ( mod child;"), ("child.rs", text)],
            &[],
        )
    };
    let (empty, hidden) = (child(""), child(COMPONENT));
    assert_eq!(files_said(&empty), files_said(&hidden));
    assert_ne!(empty.link_level, hidden.link_level);
}

#[test]
fn a_file_beyond_the_scans_budget_is_said_never_skipped() {
    let big = format!("{COMPONENT}\n// {}\n", "x".repeat(5 << 20));
    let scan = scan_text(
        "over-budget",
        "#[cfg(windows)]\nmod big;\n",
        &[("big.rs", &big)],
        &[],
    );
    assert_eq!(keys(&scan), []);
    let said = files_said(&scan);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].starts_with("src/big.rs: beyond the scan's budget"),
        "{said:?}"
    );
    assert!(
        said[0].contains(&super::bytes_digest(big.as_bytes())),
        "{said:?}"
    );
}

#[test]
fn a_file_outside_the_crate_is_shown_relative_to_it() {
    let outside = std::env::temp_dir().join(format!("as-scan-outside-{}.rs", std::process::id()));
    std::fs::write(&outside, COMPONENT).unwrap();
    let name = outside.file_name().unwrap().to_string_lossy().into_owned();
    let lib = format!("#[cfg(windows)]\n#[path = \"../../{name}\"]\nmod shared;\n");
    let scan = scan_text("outside", &lib, &[], &[]);
    let _ = std::fs::remove_file(&outside);
    assert_eq!(scan.gated.len(), 1, "{:?}", scan.gated);
    assert_eq!(scan.gated[0].file, format!("../{name}"));
}

#[test]
fn a_module_file_that_cannot_be_read_is_said_never_skipped() {
    let lib = "#[cfg(windows)]\nmod f;\n";
    let not_utf8 = {
        let dir = std::env::temp_dir().join(format!("as-scan-not-utf8-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join("src/lib.rs"), lib).unwrap();
        let mut text = vec![0xff_u8];
        text.extend_from_slice(COMPONENT.as_bytes());
        std::fs::write(dir.join("src/f.rs"), text).unwrap();
        let scan = super::scan_setting_aside(
            &[ScanRoot {
                label: None,
                dir: dir.clone(),
                entry_points: vec![dir.join("src/lib.rs")],
                condition: Vec::new(),
            }],
            &[],
        );
        let _ = std::fs::remove_dir_all(&dir);
        scan
    };
    let said = files_said(&not_utf8);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(said[0].starts_with("src/f.rs: does not parse"), "{said:?}");
}

#[test]
fn conditions_folded_past_the_limit_still_show_a_change() {
    let told = |platform: &str| {
        let mut lib = String::new();
        for i in 0..31 {
            lib.push_str(&format!("#[cfg(feature = \"f{i}\")] mod m{i} {{\n"));
        }
        lib.push_str(&format!(
            "#[cfg(target_os = \"{platform}\")] mod inner {{ {COMPONENT} }}\n"
        ));
        lib.push_str(&"}\n".repeat(31));
        let scan = scan_text(&format!("folded-{platform}"), &lib, &[], &[]);
        keys(&scan)
            .into_iter()
            .map(|(key, condition)| (key.to_owned(), condition.to_owned()))
            .collect::<Vec<_>>()
    };
    let (windows, macos) = (told("windows"), told("macos"));
    assert_eq!(windows.len(), 1);
    assert!(
        windows[0]
            .1
            .contains("more conditions than the gate tells apart (digest ")
    );
    assert_ne!(windows, macos);
}
