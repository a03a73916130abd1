//! The README's quick start, as a new crate outside this workspace: its
//! `Cargo.toml` dependencies and `src/main.rs` exactly as written (only the
//! `agent-surface` line points at this checkout), built and run.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod support;

use support::*;

/// The first fenced block of `language` after `heading` in the README.
fn block(readme: &str, heading: &str, language: &str) -> String {
    let section = readme
        .split(heading)
        .nth(1)
        .expect("the quick start section");
    let fence = format!("```{language}\n");
    let start = section.find(&fence).expect("a fenced block") + fence.len();
    let rest = &section[start..];
    rest[..rest.find("```").expect("a closing fence")].to_owned()
}

#[test]
fn the_readme_quick_start_builds_and_runs_as_a_new_crate() {
    let readme = std::fs::read_to_string(workspace().join("README.md")).unwrap();
    let dependencies = block(&readme, "## Quick start", "toml");
    let main = block(&readme, "## Quick start", "rust");
    let runtime = workspace().join("runtime");
    let dependencies = dependencies
        .lines()
        .map(|line| {
            if line.starts_with("agent-surface") {
                format!(
                    "agent-surface = {{ path = {:?} }}",
                    runtime.to_string_lossy()
                )
            } else {
                line.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let dir = fixtures().join("quickstart");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let manifest = format!(
        "[package]\nname = \"quickstart\"\nversion = \"0.1.0\"\nedition = \"2024\"\npublish = false\n\n\
         {dependencies}\n\n[workspace]\n"
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::write(dir.join("src/main.rs"), main).unwrap();
    std::fs::copy(workspace().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    let output =
        std::process::Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
            .args(["run", "-q", "--manifest-path"])
            .arg(dir.join("Cargo.toml"))
            .env("CARGO_TARGET_DIR", fixtures().join("target"))
            .env_remove("CARGO_BUILD_TARGET_DIR")
            .output()
            .unwrap();
    assert!(output.status.success(), "{}", describe(&output));
    assert!(
        stdout(&output).contains("the agent selected d1"),
        "{}",
        describe(&output)
    );
    // Pasted as written, it compiles without a warning.
    assert!(
        !String::from_utf8_lossy(&output.stderr).contains("warning"),
        "{}",
        describe(&output)
    );
}
