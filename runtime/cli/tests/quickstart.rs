//! The README's quick start, as a stranger would build it: the library
//! crates packaged (`cargo package`, as they would be published), unpacked,
//! and a new crate outside this workspace — its `Cargo.toml` dependencies
//! and `src/main.rs` exactly as the README writes them — built and run
//! against those packages (the crates.io names patched to the unpacked
//! packages), never against the workspace's paths. A file a package leaves
//! out fails here. The other published crates (the Dioxus binding, the
//! passkeys) are checked from their packages the same way.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::*;

/// The crates a user depends on, in dependency order.
const PUBLISHED: &[&str] = &[
    "agent-surface-rules",
    "agent-surface-macros",
    "agent-surface",
    "agent-surface-dioxus",
    "agent-surface-passkeys",
    "cargo-agent-surface",
];

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

fn cargo() -> Command {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command.env_remove("CARGO_BUILD_TARGET_DIR");
    command
}

/// Packages the published crates and unpacks them: the directory of each,
/// by name.
fn packaged() -> Vec<(&'static str, PathBuf)> {
    let target = fixtures().join("package-target");
    let mut package = cargo();
    package
        .current_dir(workspace())
        .args(["package", "--no-verify", "--allow-dirty", "--quiet"])
        .env("CARGO_TARGET_DIR", &target);
    for name in PUBLISHED {
        package.args(["-p", name]);
    }
    let output = package.output().unwrap();
    assert!(
        output.status.success(),
        "cargo package: {}",
        describe(&output)
    );
    let unpacked = fixtures().join("packages");
    let _ = std::fs::remove_dir_all(&unpacked);
    std::fs::create_dir_all(&unpacked).unwrap();
    let version = env!("CARGO_PKG_VERSION");
    PUBLISHED
        .iter()
        .map(|name| {
            let file = target.join(format!("package/{name}-{version}.crate"));
            let output = Command::new("tar")
                .arg("xzf")
                .arg(&file)
                .arg("-C")
                .arg(&unpacked)
                .output()
                .unwrap();
            assert!(
                output.status.success(),
                "unpacking {name}: {}",
                describe(&output)
            );
            (*name, unpacked.join(format!("{name}-{version}")))
        })
        .collect()
}

/// `[patch.crates-io]`: each of `names` from its unpacked package (a patch
/// the crate graph does not use would be a warning).
fn patches(packages: &[(&str, PathBuf)], names: &[&str]) -> String {
    let mut patch = String::from("[patch.crates-io]\n");
    for (name, dir) in packages.iter().filter(|(name, _)| names.contains(name)) {
        patch.push_str(&format!(
            "{name} = {{ path = {:?} }}\n",
            dir.to_string_lossy()
        ));
    }
    patch
}

/// A new crate at `dir` with `dependencies` and `main`, outside the workspace.
fn new_crate(dir: &Path, dependencies: &str, patch: &str, main: &str) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let manifest = format!(
        "[package]\nname = \"quickstart\"\nversion = \"0.1.0\"\nedition = \"2024\"\npublish = false\n\n\
         {dependencies}\n\n{patch}\n[workspace]\n"
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::write(dir.join("src/main.rs"), main).unwrap();
    // The versions this workspace is tested with.
    std::fs::copy(workspace().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
}

#[test]
fn the_readme_quick_start_builds_and_runs_against_the_packaged_crates() {
    let readme = std::fs::read_to_string(workspace().join("README.md")).unwrap();
    let dependencies = block(&readme, "## Quick start", "toml");
    let main = block(&readme, "## Quick start", "rust");
    assert!(
        dependencies.contains("agent-surface = \""),
        "the quick start depends on the crates.io name:\n{dependencies}"
    );
    let packages = packaged();
    let core = [
        "agent-surface-rules",
        "agent-surface-macros",
        "agent-surface",
    ];
    let patch = patches(&packages, &core);

    let dir = fixtures().join("quickstart");
    new_crate(&dir, &dependencies, &patch, &main);
    let output = cargo()
        .args(["run", "-q", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", fixtures().join("target"))
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

    // The binding and the passkeys, from their packages too.
    let version = env!("CARGO_PKG_VERSION");
    let others = format!(
        "[dependencies]\nagent-surface-dioxus = \"{version}\"\nagent-surface-passkeys = \"{version}\"\n"
    );
    let dir = fixtures().join("packaged-others");
    let patch = patches(
        &packages,
        &[
            &core[..],
            &["agent-surface-dioxus", "agent-surface-passkeys"],
        ]
        .concat(),
    );
    new_crate(
        &dir,
        &others,
        &patch,
        "use agent_surface_dioxus as _;\nuse agent_surface_passkeys as _;\nfn main() {}\n",
    );
    let output = cargo()
        .args(["check", "-q", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", fixtures().join("target"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", describe(&output));
}
