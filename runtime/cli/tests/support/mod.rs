//! Shared by the CLI tests: fixture crates generated under the
//! workspace's `target/agent-surface-fixtures/`, each a path dependent of
//! this workspace's runtime, and the command run on them.

#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)] // test code

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub(crate) fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

pub(crate) fn fixtures() -> PathBuf {
    workspace().join("target/agent-surface-fixtures")
}

pub(crate) const COMPONENT: &str = r#"use agent_surface::policy::has_permission;
use agent_surface::prelude::*;

/// Devices of the fleet.
#[agent_component(type = "fixture.table")]
impl Table {
    /// Visible rows.
    #[observation]
    fn rows(&self) -> Vec<String> {
        Vec::new()
    }

    /// Clear the selection.
    #[action(effect = "local-state", confirmation = "required")]
    fn clear(&self) -> Result<(), ActionError> {
        Ok(())
    }
    //EXTRA
}

/// The table.
pub struct Table;

#[allow(dead_code)]
pub(crate) fn policy_in_scope() {
    let _ = has_permission("x");
}
"#;

/// A fixture crate at `dir` named `name`, with `lib` as src/lib.rs and
/// `extra` appended to its Cargo.toml.
pub(crate) fn fixture(dir: &Path, name: &str, lib: &str, extra: &str) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let runtime = workspace().join("runtime");
    let manifest = format!(
        "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\npublish = false\n\n\
         [dependencies]\nagent-surface = {{ path = {:?} }}\n{extra}\n[workspace]\n",
        runtime.to_string_lossy()
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::write(dir.join("src/lib.rs"), lib).unwrap();
    std::fs::copy(workspace().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
}

pub(crate) fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cargo-agent-surface"))
        .arg("agent-surface")
        .args(args)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", fixtures().join("target"))
        .env("NO_COLOR", "1")
        .env_remove("CARGO_BUILD_TARGET_DIR")
        .output()
        .unwrap()
}

pub(crate) fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub(crate) fn describe(output: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        stdout(output),
        String::from_utf8_lossy(&output.stderr)
    )
}

pub(crate) fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(status.status.success(), "git {args:?}: {status:?}");
}

/// A committed fixture: snapshot taken, the repository at one commit.
pub(crate) fn committed(name: &str) -> PathBuf {
    committed_with(name, COMPONENT, "")
}

/// A committed fixture with `lib` as src/lib.rs and `extra` in Cargo.toml.
pub(crate) fn committed_with(name: &str, lib: &str, extra: &str) -> PathBuf {
    let dir = fixtures().join(name);
    fixture(&dir, name, lib, extra);
    commit_snapshot(&dir, &[]);
    dir
}

/// Snapshots the fixture at `dir` (with `args` after `snapshot`), then
/// commits it as the base review compares with.
pub(crate) fn commit_snapshot(dir: &Path, args: &[&str]) {
    let args: Vec<&str> = std::iter::once("snapshot")
        .chain(args.iter().copied())
        .collect();
    let snapshot = run(dir, &args);
    assert_eq!(snapshot.status.code(), Some(0), "{}", describe(&snapshot));
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "base"]);
}

pub(crate) fn edit(dir: &Path, from: &str, to: &str) {
    let path = dir.join("src/lib.rs");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{from}");
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
}

/// Re-snapshots, then checks against the base commit: (exit, findings).
pub(crate) fn drift(dir: &Path, policy: &str) -> (Option<i32>, Vec<Value>, Output) {
    let snapshot = run(dir, &["snapshot"]);
    assert_eq!(snapshot.status.code(), Some(0), "{}", describe(&snapshot));
    let output = run(
        dir,
        &[
            "check", "--base", "main", "--policy", policy, "--format", "json",
        ],
    );
    let report: Value =
        serde_json::from_slice(&output.stdout).unwrap_or_else(|_| panic!("{}", describe(&output)));
    assert_eq!(report["integrity"]["status"], "ok", "{report}");
    let findings = report["drift"]["findings"].as_array().cloned().unwrap();
    (output.status.code(), findings, output)
}

pub(crate) fn has(findings: &[Value], class: &str, subject: &str, change: &str) -> bool {
    findings.iter().any(|f| {
        f["class"] == class
            && f["subject"] == subject
            && f["change"].as_str().unwrap().contains(change)
    })
}
