//! `cargo agent-surface`: review the agent surface a crate declares.
//!
//! - `inspect` — the inventory as a table, with a headline (counts, how much
//!   is gated, the committed snapshot's integrity); `--base <ref>` adds drift.
//! - `snapshot` — writes the committed artifact, `agent-surface.contract.json`
//!   beside the package's Cargo.toml.
//! - `check` — fails when the artifact is stale, a contributing dependency is
//!   unapproved, or drift since `--base` is selected by `--policy`.
//!
//! Exit status: 0 clean, 1 integrity failure, unapproved contributor or
//! selected finding, 2 build, contract, artifact or git failure (and usage
//! errors).
#![doc = include_str!("../README.md")]
#![allow(
    clippy::needless_doctest_main,
    reason = "the guide shows the line a binary's `main` starts with"
)]

mod args;
mod artifact;
mod audit;
mod cargo;
mod check;
mod classify;
mod contributors;
mod export;
mod finding;
mod gates_diff;
mod generated_reach;
mod git;
mod inspect;
mod metadata;
mod probe;
mod reach_diff;
mod run;
mod schema_diff;
mod source_attrs;
mod sources;
mod style;
mod surface;
mod ways;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::Value;

use crate::args::{Mode, Options};
use crate::style::Style;

/// A failure that ends the command with exit status 2: the build, a
/// contract, the artifact, git or the command line.
#[derive(Debug)]
pub(crate) struct Fatal(pub(crate) String);

fn main() -> ExitCode {
    if std::env::args_os().nth(1).as_deref() == Some(sources::isolated::CHILD_ARG.as_ref()) {
        return sources::isolated::child_main();
    }
    let options = match args::parse(std::env::args_os().collect()) {
        Ok(options) => options,
        Err(err) => {
            let _ = err.print();
            return if err.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let ran = match &options.audit {
        Some(audit) => audit::run(audit),
        None => run(&options),
    };
    match ran {
        Ok(code) => ExitCode::from(code),
        Err(Fatal(message)) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

/// The artifact's path and the name it is shown under: relative to the
/// package directory when inside it, so output does not depend on where
/// the checkout lives.
fn artifact_location(options: &Options, package_dir: &Path) -> (PathBuf, String) {
    let path = options
        .artifact
        .clone()
        .unwrap_or_else(|| package_dir.join(artifact::DEFAULT_NAME));
    let absolute = std::path::absolute(&path).unwrap_or_else(|_| path.clone());
    let dir = std::fs::canonicalize(package_dir).unwrap_or_else(|_| package_dir.to_path_buf());
    let resolved = match (absolute.parent(), absolute.file_name()) {
        (Some(parent), Some(name)) => std::fs::canonicalize(parent)
            .map(|parent| parent.join(name))
            .unwrap_or(absolute.clone()),
        _ => absolute.clone(),
    };
    let name = resolved
        .strip_prefix(&dir)
        .map(|relative| relative.to_string_lossy().replace('\\', "/"))
        .unwrap_or_else(|_| path.to_string_lossy().into_owned());
    (path, name)
}

/// The artifact at `--base`, or an empty one when it did not exist there.
fn base_artifact(path: &Path, reference: &str) -> Result<Value, Fatal> {
    match git::show(path, reference)? {
        Some(text) => artifact::parse_canonical(&text, &format!("the artifact at {reference}")),
        None => Ok(artifact::empty()),
    }
}

fn print(text: &str) {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

/// What the gate could not see, in words: declarations and capabilities
/// under `#[cfg]` that this build excludes (link-level code is said before
/// the build).
fn unseen(artifact: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let list = |key: &str| {
        artifact
            .get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    for gated in list("gatedDeclarations") {
        if gated.get("inBuild") != Some(&Value::Bool(true)) {
            out.push(format!(
                "{} under cfg({}) in {}: its contract may not be in the artifact; build with \
                 the features, --profile or --target that include it to review it",
                surface::text(&gated, "declaration"),
                surface::text(&gated, "cfg"),
                surface::text(&gated, "file"),
            ));
        }
    }
    for component in artifact::components(artifact) {
        for gated in component
            .get("gated")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if gated.get("inBuild") == Some(&Value::Bool(false)) {
                out.push(format!(
                    "{} {} under cfg({}): its schemas and policies are not in the artifact",
                    surface::text(gated, "kind"),
                    surface::text(gated, "capabilityId"),
                    surface::text(gated, "cfg"),
                ));
            }
        }
    }
    out
}

fn run(options: &Options) -> Result<u8, Fatal> {
    let package = metadata::locate(options)?;
    let (path, name) = artifact_location(options, &package.dir);
    let mut scan = sources::isolated::scan(&package.scan_roots);
    for line in &scan.link_level {
        eprintln!(
            "agent-surface: not seen by this build: {line}: code at link level runs outside \
             what the gate checks; review it by hand"
        );
    }
    for line in generated_reach::lines(&package, &path) {
        eprintln!("agent-surface: not seen by this build: {line}; review it by hand");
        scan.link_level.push(line);
    }
    let catalog = cargo::catalog(&package, options)?;
    let fresh = artifact::from_catalog(&catalog, &package.name, &package.own_crates, &scan);
    for line in unseen(&fresh) {
        eprintln!("agent-surface: not seen by this build: {line}");
    }
    let style = Style::detect(false);
    match options.mode {
        Mode::Snapshot => {
            artifact::store(&path, &artifact::to_text(&fresh))?;
            let declarations = artifact::keyed(&fresh).len();
            print(&format!(
                "wrote {name}: {declarations} declarations, manifest {}\n",
                surface::text(&fresh, "manifestHash")
            ));
            let contributing = artifact::contributors(&catalog, &package.own_crates);
            for contributor in contributors::review(&contributing, &package.settings)? {
                if contributor.fails() {
                    eprintln!(
                        "warning: {} dependency {} contributes capabilities; `check` fails until \
                         [package.metadata.agent-surface] approved-contributors has {}",
                        contributor.status,
                        contributor.name,
                        contributor.entry()
                    );
                }
            }
            Ok(0)
        }
        Mode::Inspect => {
            let integrity = match artifact::load(&path)? {
                None => "missing",
                Some(committed) if check::same(&committed, &fresh) => "matches",
                Some(_) => "stale",
            };
            let drift = match &options.base {
                Some(base) => {
                    let before = base_artifact(&path, base)?;
                    Some((base.as_str(), classify::diff(&before, &fresh)))
                }
                None => None,
            };
            let report = inspect::Inspection {
                package: &package.name,
                fresh: &fresh,
                artifact_name: &name,
                integrity,
                drift,
            };
            print(&inspect::render(
                &report,
                options.format,
                options.verbosity,
                &style,
            ));
            Ok(0)
        }
        // Read before any build, in `main`.
        Mode::Audit => Ok(0),
        Mode::Check => {
            let committed = artifact::load(&path)?;
            let (integrity, stale) = match &committed {
                None => ("missing", Vec::new()),
                Some(committed) if check::same(committed, &fresh) => ("ok", Vec::new()),
                Some(committed) => ("stale", classify::diff(committed, &fresh)),
            };
            let contributing = artifact::contributors(&catalog, &package.own_crates);
            let contributors = contributors::review(&contributing, &package.settings)?;
            let drift = match &options.base {
                Some(base) => {
                    let before = base_artifact(&path, base)?;
                    let after = committed.as_ref().unwrap_or(&fresh);
                    Some((base.as_str(), classify::diff(&before, after)))
                }
                None => None,
            };
            let annotation_file = std::env::current_dir()
                .ok()
                .and_then(|cwd| {
                    std::path::absolute(&path)
                        .ok()?
                        .strip_prefix(cwd)
                        .ok()
                        .map(Path::to_path_buf)
                })
                .map_or_else(|| name.clone(), |p| p.to_string_lossy().replace('\\', "/"));
            let mut unseen_lines: Vec<String> = scan
                .link_level
                .iter()
                .map(|line| format!("{line}: code at link level runs outside what the gate checks"))
                .collect();
            unseen_lines.extend(unseen(&fresh));
            let report = check::Checked {
                unseen: unseen_lines,
                package: &package.name,
                artifact_name: &name,
                annotation_file: &annotation_file,
                integrity,
                stale,
                contributors,
                drift,
                fail_on: options.fail_on,
            };
            print(&check::render(&report, options.format, &style));
            Ok(u8::from(report.failed()))
        }
    }
}
