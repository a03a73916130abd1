//! Reading the catalog out of the user's crate with cargo: building the probe
//! crate or the binary and running it once (metadata is `metadata.rs`, the
//! probe crate `probe.rs`).
//!
//! The catalog lives in linked binaries (each `#[agent_component]` and
//! `#[agent_procedure]` submits its contract at link time), so it is read by
//! running one:
//! - a **library** needs nothing: a throw-away probe binary crate under
//!   `target/agent-surface/agent-surface-probe-<package>-<hash>/` depends on it by path, links it
//!   (`use <lib> as _;`) and calls
//!   `agent_surface::catalog::export_if_requested()`; the probe reuses the
//!   workspace's `Cargo.lock`, profiles, patches and target directory;
//! - a **binary** (`--bin`, or a package without a library) is built and run
//!   once with `AGENT_SURFACE_CATALOG_EXPORT` set; its `main` starts with the
//!   one documented line `agent_surface::catalog::export_if_requested();`.
//!
//! Every failure here (cargo metadata, the build, the run) is a [`Fatal`]:
//! exit status 2 with cargo's own output.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::Fatal;
use crate::args::Options;

use crate::metadata::{Package, cargo, str_of};
use crate::probe::{PROBE_MAIN, probe_manifest, probe_name, write};

/// `--target` and `--profile`, passed on to cargo.
fn build_options(command: &mut Command, options: &Options) {
    if let Some(target) = &options.target {
        command.args(["--target", target]);
    }
    if let Some(profile) = &options.profile {
        command.args(["--profile", profile]);
    }
}

/// Builds with cargo (`rustc_args` after `--`); returns the path of the
/// executable named `name`.
fn build(
    mut command: Command,
    rustc_args: Vec<String>,
    name: &str,
    target_dir: &Path,
) -> Result<PathBuf, Fatal> {
    command.args(["--message-format", "json-render-diagnostics"]);
    if !rustc_args.is_empty() {
        command.arg("--").args(rustc_args);
    }
    command
        .env("CARGO_TARGET_DIR", target_dir)
        .stdin(Stdio::null());
    let output = command
        .output()
        .map_err(|err| Fatal(format!("cannot run cargo: {err}")))?;
    if !output.status.success() {
        return Err(Fatal(format!(
            "the build failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    stdout
        .lines()
        .rev()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|message| str_of(message, "reason") == "compiler-artifact")
        .filter(|message| {
            message
                .get("target")
                .is_some_and(|t| str_of(t, "name") == name)
        })
        .find_map(|message| message.get("executable")?.as_str().map(PathBuf::from))
        .ok_or_else(|| Fatal(format!("cargo built no executable `{name}`")))
}

/// Builds what holds the package's catalog, runs it, and returns the
/// catalog JSON (`Catalog::to_json`).
pub(crate) fn catalog(package: &Package, options: &Options) -> Result<Value, Fatal> {
    let work = package
        .target_dir
        .join("agent-surface")
        .join(probe_name(package));
    std::fs::create_dir_all(&work)
        .map_err(|err| Fatal(format!("cannot create {}: {err}", work.display())))?;
    let out = work.join("catalog.json");
    eprintln!(
        "agent-surface: building {} to read its catalog",
        package.name
    );
    if let Some(bin) = &package.bin {
        let guarded = crate::export::before_main_supported(options.target.as_deref());
        let mut command = cargo();
        command
            .arg(if guarded { "rustc" } else { "build" })
            .arg("--manifest-path")
            .arg(&package.manifest)
            .args(["-p", &package.name, "--bin", bin]);
        if options.all_features {
            command.arg("--all-features");
        } else if !options.features.is_empty() {
            command.args(["--features", &options.features.join(",")]);
        }
        if options.no_default_features && !options.all_features {
            command.arg("--no-default-features");
        }
        build_options(&mut command, options);
        let rustc_args = if guarded {
            crate::export::link_args(&work, options.target.as_deref(), &package.dir)?
        } else {
            eprintln!("agent-surface: note: {}", crate::export::UNGUARDED);
            Vec::new()
        };
        let executable = build(command, rustc_args, bin, &package.target_dir)?;
        let hint = if guarded {
            "the catalog is exported before `main`; code that runs even earlier (a static \
             constructor in the binary or a dependency) kept the process from exiting"
        } else {
            "add `agent_surface::catalog::export_if_requested();` as the first line of `main`"
        };
        return crate::run::run(
            &executable,
            &out,
            &package.dir,
            hint,
            options.export_timeout,
        );
    }
    let Some(runtime) = &package.runtime else {
        return Err(Fatal(format!(
            "package {} does not depend on agent-surface",
            package.name
        )));
    };
    write(
        &work.join("Cargo.toml"),
        probe_manifest(package, options, runtime).as_bytes(),
    )?;
    write(&work.join("main.rs"), PROBE_MAIN.as_bytes())?;
    if let Ok(lock) = std::fs::read(package.workspace_root.join("Cargo.lock")) {
        write(&work.join("Cargo.lock"), &lock)?;
    }
    let mut command = cargo();
    command
        .args(["build", "--manifest-path"])
        .arg(work.join("Cargo.toml"))
        .current_dir(&work);
    build_options(&mut command, options);
    let executable = build(
        command,
        Vec::new(),
        &probe_name(package),
        &package.target_dir,
    )?;
    let hint = "the probe wrote no catalog; code that runs before its `main` (a static \
                constructor in a dependency) kept it from exiting";
    crate::run::run(
        &executable,
        &out,
        &package.dir,
        hint,
        options.export_timeout,
    )
}
