//! What generators run or read, as the artifact's link-level lines: the
//! lines written for a package (a local proc-macro crate, the build script
//! and what it links, the data files a generator may read) and the test
//! that tells such a line from other link-level code when the gate compares
//! two artifacts. Both sides use the markers below, so the wording of a
//! line and its classification cannot drift apart.

use std::path::{Path, PathBuf};

use crate::metadata::Package;

/// Names a local proc-macro crate the package uses.
const PROC_MACRO: &str = "a local proc-macro crate";
/// Opens the line for the local crates the build script links.
const BUILD_SCRIPT_LINKS: &str = "the build script links local crates";
/// Opens the line for the build script itself.
const BUILD_SCRIPT: &str = "the package's build script";
/// Opens the line for the package's data files.
const DATA_FILES: &str = "files a generator may read";

/// Whether a link-level line says what a generator runs or reads (what it
/// generates from it is not in this build's catalog when it declares reach
/// only in others), rather than code linked in.
pub(crate) fn is_generator_input(line: &str) -> bool {
    line.starts_with(DATA_FILES)
        || line.starts_with(BUILD_SCRIPT)
        || line.starts_with(BUILD_SCRIPT_LINKS)
        || line.contains(&format!(": {PROC_MACRO},"))
}

/// What decides the code that generators write, by digest: a local
/// proc-macro crate with the local crates it links (their code runs when it
/// generates), the local crates the build script links, and — when either
/// kind of generator is there — the package's data files, which a
/// generator may read (a spec, a data file, a template, a `.rs` file
/// outside the module tree); and the build script itself, always (it can
/// emit cfgs and environment variables). A change to any is a change review sees (a new
/// line, or a changed one, is widening).
pub(crate) fn lines(package: &Package, artifact: &Path) -> Vec<String> {
    let mut budget = crate::sources::digest::MAX_DIGESTED_BYTES;
    let mut trees = |dirs: &[PathBuf]| {
        let digests: Vec<String> = dirs
            .iter()
            .map(|dir| crate::sources::digest::of_tree(dir, &mut budget))
            .collect();
        crate::sources::bytes_digest(digests.join("\n").as_bytes())
    };
    let mut lines = Vec::new();
    for (label, dirs) in &package.generators {
        lines.push(format!(
            "{label}: {PROC_MACRO}, whose output is decided when it runs: its files \
             and those of the local crates it links ({}) have digest {}",
            dirs.len().saturating_sub(1),
            trees(dirs)
        ));
    }
    if !package.build_dependencies.is_empty() {
        lines.push(format!(
            "{BUILD_SCRIPT_LINKS} ({}), whose files have digest {}",
            package.build_dependencies.len(),
            trees(&package.build_dependencies)
        ));
    }
    // A build script can emit cfgs and environment variables as well as
    // files: any change to it is a change review sees.
    let build_script = crate::sources::build_script::generator_of(&package.dir);
    if let Some(script) = &build_script {
        lines.push(format!("{BUILD_SCRIPT}: {script}"));
    }
    if !package.generators.is_empty() || build_script.is_some() {
        let artifact = std::fs::canonicalize(artifact).unwrap_or_else(|_| artifact.to_path_buf());
        let ignored = ignored_by_git(&package.dir);
        let source = package.dir.join("src");
        let left_out = |path: &Path| {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            // The module tree the scan reads; the manifest and lock file
            // (dependency changes); prose; what git ignores (local files
            // of one machine); the artifact itself.
            (path.starts_with(&source) && path.extension().is_some_and(|ext| ext == "rs"))
                || matches!(name.as_str(), "Cargo.toml" | "Cargo.lock" | ".gitignore")
                || name.ends_with(".md")
                || name.starts_with("LICENSE")
                || ignored.iter().any(|ignored| path.starts_with(ignored))
                || std::fs::canonicalize(path).is_ok_and(|p| p == artifact)
        };
        lines.push(format!(
            "{DATA_FILES}: the package's data files (all but its module tree, \
             manifest, lock file, prose, what git ignores and the artifact) have digest {}",
            crate::sources::digest::of_tree_except(&package.dir, &mut budget, &left_out)
        ));
    }
    lines
}

/// What git ignores under `dir` (files and directories not tracked and
/// ignored), as absolute paths; empty outside a git checkout.
fn ignored_by_git(dir: &Path) -> Vec<PathBuf> {
    let output = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "ls-files",
            "--others",
            "--ignored",
            "--exclude-standard",
            "--directory",
            "-z",
        ])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    let Some(output) = output.ok().filter(|o| o.status.success()) else {
        return Vec::new();
    };
    output
        .stdout
        .split(|byte| *byte == 0)
        .filter(|entry| !entry.is_empty())
        .map(|entry| dir.join(String::from_utf8_lossy(entry).trim_end_matches('/')))
        .collect()
}
