//! `cargo agent-surface` run on fixture crates generated under the
//! workspace's `target/agent-surface-fixtures/`, each a path dependent of
//! this workspace's runtime; every fixture build shares one target
//! directory, so the runtime compiles once.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)] // test code

use serde_json::Value;

mod support;

use support::*;

#[test]
fn a_new_action_is_widening_and_fails_the_check() {
    let dir = committed("new_action");
    let clean = run(&dir, &["check", "--base", "main"]);
    assert_eq!(clean.status.code(), Some(0), "{}", describe(&clean));
    edit(
        &dir,
        "//EXTRA",
        "/// Reload the rows.\n    #[action(effect = \"navigation\")]\n    fn reload(&self) {}",
    );
    let (code, findings, output) = drift(&dir, "widening");
    assert_eq!(code, Some(1), "{}", describe(&output));
    assert!(
        has(
            &findings,
            "widening",
            "view:fixture.table.reload",
            "new action"
        ),
        "{findings:?}"
    );
    // Human output names the class in words, and every row is printed.
    let human = run(&dir, &["check", "--base", "main"]);
    assert_eq!(human.status.code(), Some(1));
    let text = stdout(&human);
    assert!(text.contains("FAIL") && text.contains("widening"), "{text}");
    assert!(!text.contains('\x1b'), "{text}");
    // --policy none fails on nothing from drift.
    let none = run(&dir, &["check", "--base", "main", "--policy", "none"]);
    assert_eq!(none.status.code(), Some(0), "{}", describe(&none));
}

#[test]
fn lowered_confirmation_is_widening_and_a_description_edit_is_neutral() {
    let dir = committed("confirmation");
    edit(
        &dir,
        "confirmation = \"required\"",
        "confirmation = \"never\"",
    );
    edit(&dir, "/// Visible rows.", "/// The rows on screen.");
    let (code, findings, output) = drift(&dir, "widening");
    assert_eq!(code, Some(1), "{}", describe(&output));
    assert!(
        has(
            &findings,
            "widening",
            "view:fixture.table.clear",
            "confirmation lowered: required → never"
        ),
        "{findings:?}"
    );
    assert!(
        has(
            &findings,
            "neutral",
            "view:fixture.table.rows",
            "description changed"
        ),
        "{findings:?}"
    );
    assert_eq!(findings.len(), 2, "{findings:?}");
}

#[test]
fn an_added_policy_is_narrowing_and_a_description_only_edit_passes() {
    let dir = committed("policy");
    edit(
        &dir,
        "/// Devices of the fleet.",
        "/// Every device of the fleet.",
    );
    let (code, findings, output) = drift(&dir, "widening");
    assert_eq!(code, Some(0), "{}", describe(&output));
    assert!(
        has(
            &findings,
            "neutral",
            "component fixture.table",
            "description changed"
        ),
        "{findings:?}"
    );
    let (code, _, _) = drift(&dir, "neutral");
    assert_eq!(code, Some(1));
    edit(
        &dir,
        "#[action(effect = \"local-state\", confirmation = \"required\")]",
        "#[action(effect = \"local-state\", confirmation = \"required\", policies = [has_permission(\"fleet:write\")])]",
    );
    let (code, findings, output) = drift(&dir, "widening");
    assert_eq!(code, Some(0), "{}", describe(&output));
    assert!(
        has(&findings, "narrowing", "view:fixture.table.clear", "added"),
        "{findings:?}"
    );
    let (code, _, _) = drift(&dir, "narrowing");
    assert_eq!(code, Some(1));
}

#[test]
fn a_surface_change_without_a_refreshed_artifact_fails_integrity() {
    let dir = committed("stale");
    let clean = run(&dir, &["check"]);
    assert_eq!(clean.status.code(), Some(0), "{}", describe(&clean));
    edit(
        &dir,
        "confirmation = \"required\"",
        "confirmation = \"optional\"",
    );
    let stale = run(&dir, &["check", "--format", "json"]);
    assert_eq!(stale.status.code(), Some(1), "{}", describe(&stale));
    let report: Value = serde_json::from_slice(&stale.stdout).unwrap();
    assert_eq!(report["integrity"]["status"], "stale");
    let findings = report["integrity"]["findings"].as_array().unwrap();
    assert!(
        has(
            findings,
            "widening",
            "view:fixture.table.clear",
            "confirmation lowered"
        ),
        "{report}"
    );
    // A malformed artifact is a contract failure, exit 2, with a message.
    std::fs::write(dir.join("agent-surface.contract.json"), "{ not json").unwrap();
    let malformed = run(&dir, &["check"]);
    assert_eq!(malformed.status.code(), Some(2), "{}", describe(&malformed));
    assert!(String::from_utf8_lossy(&malformed.stderr).contains("not valid JSON"));
    // An unknown git ref is exit 2 as well.
    let _ = run(&dir, &["snapshot"]);
    let bad_ref = run(&dir, &["check", "--base", "no-such-ref"]);
    assert_eq!(bad_ref.status.code(), Some(2), "{}", describe(&bad_ref));
}

#[test]
fn an_unapproved_dependency_contract_fails_with_the_entry_to_add() {
    let root = fixtures().join("contributors");
    let widgets = root.join("widgets");
    fixture(
        &widgets,
        "widgets",
        &COMPONENT.replace("fixture.table", "widgets.table"),
        "",
    );
    let app = root.join("app");
    let dependency = format!("widgets = {{ path = {:?} }}\n", widgets.to_string_lossy());
    fixture(&app, "app", "pub use widgets::Table;\n", &dependency);
    let snapshot = run(&app, &["snapshot"]);
    assert_eq!(snapshot.status.code(), Some(0), "{}", describe(&snapshot));
    let output = run(&app, &["check"]);
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    let text = stdout(&output);
    let entry = text
        .lines()
        .find(|line| line.contains("{ crate = \"widgets\", digest = \"sha256:"))
        .unwrap_or_else(|| panic!("{text}"))
        .trim()
        .trim_end_matches(',')
        .to_owned();
    assert!(text.contains("approved-contributors"), "{text}");
    // Adding the printed entry approves it.
    let manifest = app.join("Cargo.toml");
    let mut toml = std::fs::read_to_string(&manifest).unwrap();
    toml.push_str(&format!(
        "\n[package.metadata.agent-surface]\napproved-contributors = [{entry}]\n"
    ));
    std::fs::write(&manifest, toml).unwrap();
    let approved = run(&app, &["check"]);
    assert_eq!(approved.status.code(), Some(0), "{}", describe(&approved));
    // A changed contributor needs approval again.
    let lib = widgets.join("src/lib.rs");
    let text = std::fs::read_to_string(&lib).unwrap();
    std::fs::write(&lib, text.replace("Visible rows.", "Rows.")).unwrap();
    let _ = run(&app, &["snapshot"]);
    let changed = run(&app, &["check"]);
    assert_eq!(changed.status.code(), Some(1), "{}", describe(&changed));
    assert!(
        stdout(&changed).contains("changed widgets"),
        "{}",
        describe(&changed)
    );
}

#[test]
fn an_unbuildable_crate_exits_2() {
    let dir = fixtures().join("unbuildable");
    fixture(
        &dir,
        "unbuildable",
        "pub fn broken() -> u32 { \"text\" }\n",
        "",
    );
    let output = run(&dir, &["check"]);
    assert_eq!(output.status.code(), Some(2), "{}", describe(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("mismatched types"),
        "{}",
        describe(&output)
    );
}

#[test]
fn as_contract_002_json_output_and_hashes_are_byte_identical_from_two_checkout_paths() {
    let outputs: Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> = ["checkout_a", "elsewhere/checkout_b"]
        .iter()
        .map(|place| {
            let dir = fixtures().join(place);
            fixture(&dir, "twice", COMPONENT, "");
            let snapshot = run(&dir, &["snapshot"]);
            assert_eq!(snapshot.status.code(), Some(0), "{}", describe(&snapshot));
            let check = run(&dir, &["check", "--format", "json"]);
            assert_eq!(check.status.code(), Some(0), "{}", describe(&check));
            let inspect = run(&dir, &["inspect", "--format", "json"]);
            let artifact = std::fs::read(dir.join("agent-surface.contract.json")).unwrap();
            (check.stdout, inspect.stdout, artifact)
        })
        .collect();
    let (first, second) = (&outputs[0], &outputs[1]);
    assert_eq!(first.0, second.0);
    assert_eq!(first.1, second.1);
    assert_eq!(first.2, second.2);
    let artifact = String::from_utf8(first.2.clone()).unwrap();
    assert!(!artifact.contains("agent-surface-fixtures"), "{artifact}");
}

#[test]
fn inspect_prints_the_table_with_reach_in_words_and_a_binary_exports_with_one_line() {
    let dir = fixtures().join("binary");
    fixture(&dir, "binary", COMPONENT, "");
    std::fs::remove_file(dir.join("src/lib.rs")).unwrap();
    let main = format!(
        "{}\nfn main() {{\n    agent_surface::catalog::export_if_requested();\n}}\n",
        COMPONENT
    );
    std::fs::write(dir.join("src/main.rs"), main).unwrap();
    let output = run(&dir, &["inspect"]);
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let text = stdout(&output);
    for word in [
        "CAPABILITY",
        "KIND",
        "EFFECT",
        "REACH",
        "CONFIRM",
        "POLICIES",
        "view:fixture.table.clear",
        "local-state",
        "low",
        "required",
        "snapshot agent-surface.contract.json missing",
        "1 of 1 actions and procedures gated",
    ] {
        assert!(text.contains(word), "{word}: {text}");
    }
    let detail = run(&dir, &["inspect", "--verbosity", "detail"]);
    assert!(
        stdout(&detail).contains("Clear the selection."),
        "{}",
        describe(&detail)
    );
}

/// A static constructor: code the binary runs before `main`.
fn constructor(body: &str) -> String {
    format!(
        "#[used]\n#[unsafe(link_section = \".init_array\")]\nstatic EARLY: extern \"C\" fn() = {{\n    \
         extern \"C\" fn early() {{\n        {body}\n    }}\n    early\n}};\n"
    )
}

#[cfg(target_os = "linux")]
#[test]
fn a_binary_that_never_exits_before_main_is_stopped_with_exit_2() {
    let dir = fixtures().join("server");
    fixture(&dir, "server", COMPONENT, "");
    std::fs::remove_file(dir.join("src/lib.rs")).unwrap();
    // A server without the export line is read anyway (before its `main`);
    // code that runs even earlier and never returns is stopped.
    let forever = "loop { std::thread::sleep(std::time::Duration::from_secs(1)); }";
    let main = format!(
        "{COMPONENT}\n{}\nfn main() {{\n    loop {{\n        std::thread::sleep(std::time::Duration::from_secs(1));\n    }}\n}}\n",
        constructor(forever)
    );
    std::fs::write(dir.join("src/main.rs"), main).unwrap();
    let output = run(&dir, &["inspect", "--export-timeout", "2"]);
    assert_eq!(output.status.code(), Some(2), "{}", describe(&output));
    let text = String::from_utf8_lossy(&output.stderr);
    assert!(
        text.contains("did not exit within 2 s") && text.contains("static constructor"),
        "{text}"
    );
    // The source scan says the constructor runs outside what the gate checks.
    assert!(text.contains("code at link level"), "{text}");
}

#[cfg(target_os = "linux")]
#[test]
fn a_process_left_holding_stderr_does_not_hold_the_command() {
    let dir = fixtures().join("daemon");
    fixture(&dir, "daemon", COMPONENT, "");
    std::fs::remove_file(dir.join("src/lib.rs")).unwrap();
    // Before `main`, the binary leaves a process behind that inherited its
    // stderr, and exits.
    let spawn = "let _ = std::process::Command::new(\"sh\")\n            .args([\"-c\", \"echo $$ > daemon.pid; exec sleep 300\"])\n            .spawn();\n        std::thread::sleep(std::time::Duration::from_millis(200));\n        std::process::exit(3);";
    let main = format!("{COMPONENT}\n{}\nfn main() {{}}\n", constructor(spawn));
    std::fs::write(dir.join("src/main.rs"), main).unwrap();
    let output = run(&dir, &["inspect"]);
    assert_eq!(output.status.code(), Some(2), "{}", describe(&output));
    let pid = std::fs::read_to_string(dir.join("daemon.pid")).unwrap();
    let pid = pid.trim();
    // The command answered while the process holding its stderr still ran.
    assert!(
        std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "the left-behind process should still run"
    );
    let _ = std::process::Command::new("kill").arg(pid).status();
}

#[cfg(unix)]
#[test]
fn a_symlinked_artifact_is_refused_and_snapshot_never_writes_through_one() {
    let dir = committed("symlinked");
    // A change widens the code and makes the artifact a link to a file
    // holding the widened surface (or to one outside the repository).
    edit(
        &dir,
        "confirmation = \"required\"",
        "confirmation = \"never\"",
    );
    let artifact = dir.join("agent-surface.contract.json");
    let outside = fixtures().join("symlinked-outside.json");
    std::fs::write(&outside, "{}\n").unwrap();
    std::fs::remove_file(&artifact).unwrap();
    std::os::unix::fs::symlink(&outside, &artifact).unwrap();
    let output = run(&dir, &["check", "--base", "main", "--format", "json"]);
    assert_eq!(output.status.code(), Some(2), "{}", describe(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("symbolic link"),
        "{}",
        describe(&output)
    );
    // `snapshot` refuses too: the file outside the repository is untouched.
    let snapshot = run(&dir, &["snapshot"]);
    assert_eq!(snapshot.status.code(), Some(2), "{}", describe(&snapshot));
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "{}\n");
    assert!(
        std::fs::symlink_metadata(&artifact)
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn oversized_non_canonical_and_duplicate_key_artifacts_are_refused_with_run_snapshot() {
    let dir = committed("hygiene");
    let artifact = dir.join("agent-surface.contract.json");
    let text = std::fs::read_to_string(&artifact).unwrap();
    let refused = |contents: &str, says: &str| {
        std::fs::write(&artifact, contents).unwrap();
        let output = run(&dir, &["check"]);
        assert_eq!(output.status.code(), Some(2), "{}", describe(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(says) && stderr.contains("snapshot"),
            "{}",
            describe(&output)
        );
    };
    // Padded past the documented 8 MiB: refused before it is read.
    let padded = format!("{text}{}", " ".repeat(9 << 20));
    refused(&padded, "over the");
    // Reformatted (the same JSON on one line).
    let reformatted =
        serde_json::to_string(&serde_json::from_str::<Value>(&text).unwrap()).unwrap();
    assert_ne!(reformatted, text);
    refused(&format!("{reformatted}\n"), "canonical");
    // A duplicate key (JSON parsers keep one of the two silently).
    let duplicated = text.replacen("{\n", "{\n  \"components\": [],\n", 1);
    refused(&duplicated, "canonical");
    // The committed text itself passes.
    std::fs::write(&artifact, &text).unwrap();
    let output = run(&dir, &["check"]);
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
}

#[test]
fn a_dependency_building_a_crate_of_the_package_own_name_is_refused_not_taken_as_own() {
    let root = fixtures().join("same_name");
    let old = root.join("old");
    fixture(
        &old,
        "app",
        &COMPONENT.replace("fixture.table", "old.table"),
        "",
    );
    let manifest = old.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, text.replace("0.1.0", "0.2.0")).unwrap();
    let app = root.join("app");
    let dependency = format!(
        "old = {{ path = {:?}, package = \"app\" }}\n",
        old.to_string_lossy()
    );
    fixture(&app, "app", "pub use old::Table;\n", &dependency);
    let output = run(&app, &["check"]);
    assert_eq!(output.status.code(), Some(2), "{}", describe(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("app 0.2.0 builds a crate named `app`"),
        "{}",
        describe(&output)
    );
}

#[test]
fn a_dependency_named_like_a_binary_of_the_package_still_needs_approval_when_the_library_is_read() {
    let root = fixtures().join("bin_named");
    let widgets = root.join("widgets");
    fixture(
        &widgets,
        "widgets",
        &COMPONENT.replace("fixture.table", "widgets.table"),
        "",
    );
    let app = root.join("app");
    let dependency = format!("widgets = {{ path = {:?} }}\n", widgets.to_string_lossy());
    fixture(&app, "app", "pub use widgets::Table;\n", &dependency);
    std::fs::create_dir_all(app.join("src/bin")).unwrap();
    std::fs::write(app.join("src/bin/widgets.rs"), "fn main() {}\n").unwrap();
    let snapshot = run(&app, &["snapshot"]);
    assert_eq!(snapshot.status.code(), Some(0), "{}", describe(&snapshot));
    let output = run(&app, &["check", "--format", "json"]);
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["contributors"][0]["crate"], "widgets", "{report}");
    assert_eq!(
        report["contributors"][0]["status"], "unapproved",
        "{report}"
    );
}

/// `cargo agent-surface audit`: an application's durable record, printed
/// and filtered without the application running.
#[test]
fn audit_prints_and_filters_a_durable_record() {
    use agent_surface::audit::{AuditEvent, AuditKind, AuditLog, AuditSink as _};
    use std::sync::Arc;

    let dir = fixtures().join("audit-record");
    let _ = std::fs::remove_dir_all(&dir);
    {
        let log = AuditLog::builder(&dir).open().unwrap();
        let mut approved = AuditEvent::new(AuditKind::ConfirmationApproved, 1_765_000_000_000);
        approved.capability_id = Some(Arc::from("domain:devices.disable"));
        approved.consumer_id = Some(Arc::from("mcp:claude"));
        approved.detail = Some(serde_json::Map::from_iter([
            ("approver".to_owned(), serde_json::json!("dana")),
            ("channel".to_owned(), serde_json::json!("console")),
            ("personVerified".to_owned(), serde_json::json!("webauthn")),
            (
                "title".to_owned(),
                serde_json::json!("Disable 2 devices\u{1b}[2J"),
            ),
        ]));
        log.record(&approved);
        let mut settled = AuditEvent::new(AuditKind::InvocationSettled, 1_765_000_001_000);
        settled.capability_id = Some(Arc::from("domain:devices.disable"));
        settled.consumer_id = Some(Arc::from("mcp:claude"));
        settled.status = Some("ok");
        log.record(&settled);
        let mut other = AuditEvent::new(AuditKind::InvocationSettled, 1_765_000_002_000);
        other.capability_id = Some(Arc::from("view:devices.table.readState"));
        other.consumer_id = Some(Arc::from("mcp:other\u{202e}\u{9b}"));
        other.status = Some("ok");
        log.record(&other);
    }
    let dir_arg = dir.to_string_lossy().into_owned();
    let all = run(&dir, &["audit", "--dir", &dir_arg]);
    assert!(all.status.success(), "{}", describe(&all));
    let text = stdout(&all);
    assert!(text.contains("3 records"), "{text}");
    assert!(
        text.contains("confirmation-approved  domain:devices.disable  by mcp:claude  answered by dana through console  proven with webauthn"),
        "{text}"
    );
    assert!(
        !text.contains('\u{1b}'),
        "agent text cannot drive the terminal: {text}"
    );

    let approvals = run(
        &dir,
        &[
            "audit",
            "--dir",
            &dir_arg,
            "--kind",
            "confirmation-approved",
        ],
    );
    let records = stdout(&approvals)
        .lines()
        .filter(|line| line.contains("  #"))
        .count();
    assert_eq!(records, 1, "{}", describe(&approvals));
    let theirs = run(
        &dir,
        &[
            "audit",
            "--dir",
            &dir_arg,
            "--capability",
            "view:devices.table.readState",
            "--format",
            "json",
        ],
    );
    let lines: Vec<serde_json::Value> = stdout(&theirs)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{}", describe(&theirs));
    assert_eq!(lines[0]["capabilityId"], "view:devices.table.readState");
    // The same JSON, and nothing but printable ASCII reaches the terminal.
    assert_eq!(lines[0]["consumerId"], "mcp:other\u{202e}\u{9b}");
    assert!(
        stdout(&theirs)
            .chars()
            .all(|c| c == '\n' || (' '..='~').contains(&c))
    );
    assert!(
        !text.contains('\u{202e}') && !text.contains('\u{9b}'),
        "{text}"
    );

    let wrong = run(&dir, &["audit", "--dir", &dir_arg, "--kind", "approved"]);
    assert_eq!(wrong.status.code(), Some(2), "{}", describe(&wrong));
    let missing = run(&dir, &["audit", "--dir", "/nonexistent/audit"]);
    assert_eq!(missing.status.code(), Some(2), "{}", describe(&missing));
}
