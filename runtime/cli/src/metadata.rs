//! Cargo metadata: the package whose surface is read, its runtime
//! dependency, the binary to run and the crates the source scan reads, from
//! `cargo metadata`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::Fatal;
use crate::args::Options;
use crate::ways::Ways;

/// The package whose surface is read, as cargo metadata describes it.
#[derive(Clone, Debug)]
pub(crate) struct Package {
    /// The package name.
    pub(crate) name: String,
    /// The directory holding its Cargo.toml.
    pub(crate) dir: PathBuf,
    /// Its Cargo.toml.
    pub(crate) manifest: PathBuf,
    /// Crate names of its own targets linked into what is read: the
    /// library, and the binary read with `--bin` (never need approval).
    pub(crate) own_crates: Vec<String>,
    /// `[package.metadata.agent-surface]`, or null.
    pub(crate) settings: Value,
    /// The workspace root.
    pub(crate) workspace_root: PathBuf,
    /// The target directory.
    pub(crate) target_dir: PathBuf,
    /// The binary whose catalog is read, or `None` for the library.
    pub(crate) bin: Option<String>,
    /// Every feature the package declares (for `--all-features`).
    pub(crate) features: Vec<String>,
    /// The dependency line of `agent-surface` as the package resolves it.
    pub(crate) runtime: Option<toml::Table>,
    /// The source the gate reads beyond the build.
    pub(crate) scan_roots: Vec<ScanRoot>,
    /// Local proc-macro crates the package depends on (`name version`,
    /// and the directories of the crate and of every local crate it links,
    /// whose code runs when it generates): generators whose output review
    /// cannot read.
    pub(crate) generators: Vec<(String, Vec<PathBuf>)>,
    /// The directories of the local crates the package's build script
    /// links (its build-dependencies, and theirs).
    pub(crate) build_dependencies: Vec<PathBuf>,
}

pub(crate) fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

pub(crate) fn str_of<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn array_of<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value
        .get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

pub(crate) fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The Cargo.toml the command is about: `--manifest-path`, else the nearest
/// one at or above the current directory.
fn manifest_of(options: &Options) -> Result<PathBuf, Fatal> {
    if let Some(path) = &options.manifest_path {
        if !path.is_file() {
            return Err(Fatal(format!("no manifest at {}", path.display())));
        }
        return Ok(canonical(path));
    }
    let cwd = std::env::current_dir()
        .map_err(|err| Fatal(format!("cannot read the current directory: {err}")))?;
    cwd.ancestors()
        .map(|dir| dir.join("Cargo.toml"))
        .find(|candidate| candidate.is_file())
        .map(|found| canonical(&found))
        .ok_or_else(|| Fatal("no Cargo.toml here or above; pass --manifest-path".to_owned()))
}

/// The dependency spec reproducing how `package` resolves `agent-surface`.
fn runtime_dependency(metadata: &Value, package_id: &str) -> Option<toml::Table> {
    let nodes = metadata.get("resolve").map(|r| array_of(r, "nodes"))?;
    let node = nodes.iter().find(|node| str_of(node, "id") == package_id)?;
    let packages = array_of(metadata, "packages");
    let runtime = array_of(node, "deps").iter().find_map(|dep| {
        let pkg = str_of(dep, "pkg");
        packages
            .iter()
            .find(|p| str_of(p, "id") == pkg && str_of(p, "name") == "agent-surface")
    })?;
    let mut spec = toml::Table::new();
    spec.insert("package".into(), "agent-surface".into());
    let source = str_of(runtime, "source");
    if source.is_empty() {
        let dir = Path::new(str_of(runtime, "manifest_path")).parent()?;
        spec.insert("path".into(), dir.to_string_lossy().into_owned().into());
    } else if let Some(git) = source.strip_prefix("git+") {
        let (url, rev) = git.split_once('#').unwrap_or((git, ""));
        let url = url.split('?').next().unwrap_or(url);
        spec.insert("git".into(), url.into());
        if !rev.is_empty() {
            spec.insert("rev".into(), rev.into());
        }
    } else {
        let version = format!("={}", str_of(runtime, "version"));
        spec.insert("version".into(), version.into());
    }
    Some(spec)
}

/// The binary whose catalog is read: `--bin`, else the only binary of a
/// package without a library; `None` reads the library.
fn chosen_bin(
    options: &Options,
    package: &str,
    lib: Option<&str>,
    bins: &[String],
) -> Result<Option<String>, Fatal> {
    match (&options.bin, lib, bins) {
        (Some(bin), _, _) => Ok(Some(bin.clone())),
        (None, None, [only]) => Ok(Some(only.clone())),
        (None, None, []) => Err(Fatal(format!(
            "package {package} has neither a library nor a binary"
        ))),
        (None, None, _) => Err(Fatal(format!(
            "package {package} has several binaries; choose one with --bin"
        ))),
        (None, Some(_), _) => Ok(None),
    }
}

/// Source files the gate reads beyond the build: a crate's entry points.
#[derive(Clone, Debug)]
pub(crate) struct ScanRoot {
    /// `None` for the package itself; else the dependency (`name version`).
    pub(crate) label: Option<String>,
    /// The directory paths are shown relative to.
    pub(crate) dir: PathBuf,
    /// The crate roots (`src_path` of each linked target).
    pub(crate) entry_points: Vec<PathBuf>,
    /// The platform conditions under which it is linked at all (a
    /// `[target.'cfg(…)'.dependencies]` entry on the way to it); empty when
    /// it is linked on every platform. What it declares is then outside
    /// the build on other platforms.
    pub(crate) condition: Vec<String>,
}

/// A linked library of a dependency.
struct Linked {
    /// The package's id in the metadata.
    id: String,
    crate_name: String,
    label: String,
    /// Platform conditions on the way to it (empty: every platform).
    condition: Vec<String>,
    /// For a registry crate linked only on some platforms: whether it
    /// links the framework (so it can declare reach). `false` otherwise.
    declares: bool,
    /// Its package directory and crate root, when its source is local
    /// (a path dependency or a workspace member).
    local: Option<(PathBuf, PathBuf)>,
    /// Whether it is a proc-macro crate (code that generates code).
    generator: bool,
}

/// The platform condition of one dependency edge: `None` when it is a
/// normal dependency on every platform, `Some(condition)` when only under
/// `[target.'…'.dependencies]`, and no entry when it is not a normal
/// dependency at all (dev, build).
fn edge_condition(dep: &Value) -> Option<Option<String>> {
    let kinds = array_of(dep, "dep_kinds");
    if kinds.is_empty() {
        return Some(None);
    }
    let normal: Vec<&Value> = kinds
        .iter()
        .filter(|kind| kind.get("kind").is_none_or(Value::is_null))
        .collect();
    if normal.is_empty() {
        return None;
    }
    let mut targets: Vec<String> = Vec::new();
    for kind in normal {
        match kind.get("target").and_then(Value::as_str) {
            None => return Some(None),
            Some(target) => targets.push(target.to_owned()),
        }
    }
    targets.sort();
    targets.dedup();
    Some(Some(if targets.len() == 1 {
        targets.concat()
    } else {
        format!("any({})", targets.join(", "))
    }))
}

/// Whether package `id` can declare reach: it links the framework
/// (`agent-surface…`) through normal dependencies, directly or through a
/// crate that re-exports it.
fn can_declare(metadata: &Value, id: &str) -> bool {
    let nodes = metadata
        .get("resolve")
        .map_or(&[][..], |r| array_of(r, "nodes"));
    let packages = array_of(metadata, "packages");
    let framework = |pkg: &str| {
        packages
            .iter()
            .find(|p| str_of(p, "id") == pkg)
            .is_some_and(|p| str_of(p, "name").starts_with("agent-surface"))
    };
    let mut seen: Vec<&str> = vec![id];
    let mut queue: Vec<&str> = vec![id];
    while let Some(current) = queue.pop() {
        let Some(node) = nodes.iter().find(|node| str_of(node, "id") == current) else {
            continue;
        };
        for dep in array_of(node, "deps") {
            if edge_condition(dep).is_none() {
                continue;
            }
            let pkg = str_of(dep, "pkg");
            if framework(pkg) {
                return true;
            }
            if !seen.contains(&pkg) {
                seen.push(pkg);
                queue.push(pkg);
            }
        }
    }
    false
}

/// The library crate names of every package `package_id` links through
/// normal dependencies, transitively (itself excluded), each with the
/// package that builds it (`name version`) and the platform conditions of
/// every way to it: none when some way links it on every platform, else
/// `any(…)` of the ways when they differ.
fn linked_dependency_crates(metadata: &Value, package_id: &str) -> Vec<Linked> {
    let nodes = metadata
        .get("resolve")
        .map_or(&[][..], |r| array_of(r, "nodes"));
    let packages = array_of(metadata, "packages");
    // Each package reached, with the ways found to it so far. A package is
    // walked again for each way that adds a platform, shortest ways first
    // (at most `MAX_WAYS + 1` ways each, so the walk is bounded).
    let mut reached: Vec<(&str, Ways)> = vec![(package_id, Ways::everywhere())];
    let mut queue = crate::ways::Queue::new();
    queue.push(package_id, Vec::new());
    while let Some((id, conditions)) = queue.pop() {
        let Some(node) = nodes.iter().find(|node| str_of(node, "id") == id) else {
            continue;
        };
        for dep in array_of(node, "deps") {
            let Some(edge) = edge_condition(dep) else {
                continue;
            };
            let mut way = conditions.clone();
            if let Some(edge) = edge
                && !way.contains(&edge)
            {
                way.push(edge);
            }
            let pkg = str_of(dep, "pkg");
            let index = match reached.iter().position(|(id, _)| *id == pkg) {
                Some(index) => index,
                None => {
                    reached.push((pkg, Ways::default()));
                    reached.len() - 1
                }
            };
            let Some((_, ways)) = reached.get_mut(index) else {
                continue;
            };
            if let Some(way) = ways.add(way) {
                queue.push(pkg, way);
            }
        }
    }
    let mut out = Vec::new();
    for (pkg, ways) in reached.into_iter().skip(1) {
        let condition = ways.condition();
        let Some(package) = packages.iter().find(|p| str_of(p, "id") == pkg) else {
            continue;
        };
        // Asked only where it decides anything: an unread (registry)
        // crate linked only on some platforms.
        let declares = !condition.is_empty()
            && !str_of(package, "source").is_empty()
            && can_declare(metadata, pkg);
        for target in array_of(package, "targets") {
            let kinds: Vec<&str> = array_of(target, "kind")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            let generator = kinds.contains(&"proc-macro");
            let linked = generator
                || kinds
                    .iter()
                    .any(|kind| matches!(*kind, "lib" | "rlib" | "dylib"));
            if linked {
                let local = str_of(package, "source").is_empty().then(|| {
                    let manifest = Path::new(str_of(package, "manifest_path"));
                    let dir = manifest.parent().map(Path::to_path_buf).unwrap_or_default();
                    (dir, PathBuf::from(str_of(target, "src_path")))
                });
                out.push(Linked {
                    id: pkg.to_owned(),
                    crate_name: str_of(target, "name").replace('-', "_"),
                    label: format!("{} {}", str_of(package, "name"), str_of(package, "version")),
                    condition: condition.clone(),
                    declares,
                    local,
                    generator,
                });
            }
        }
    }
    out
}

/// The directories of the local packages reached from `start` (the ids of
/// packages) through dependency edges of the given kinds (`None` for
/// normal, `Some("build")` for build), then through normal ones; the
/// framework's own crates left out.
fn local_closure(metadata: &Value, start: &[&str], first: Option<&str>) -> Vec<PathBuf> {
    let nodes = metadata
        .get("resolve")
        .map_or(&[][..], |r| array_of(r, "nodes"));
    let packages = array_of(metadata, "packages");
    let kind_of = |dep: &Value, wanted: Option<&str>| {
        let kinds = array_of(dep, "dep_kinds");
        kinds.is_empty() && wanted.is_none()
            || kinds
                .iter()
                .any(|kind| kind.get("kind").and_then(Value::as_str) == wanted)
    };
    let mut seen: Vec<&str> = start.to_vec();
    let mut queue: Vec<(&str, bool)> = start.iter().map(|id| (*id, true)).collect();
    let mut dirs = Vec::new();
    while let Some((current, at_start)) = queue.pop() {
        let Some(node) = nodes.iter().find(|node| str_of(node, "id") == current) else {
            continue;
        };
        let wanted = if at_start { first } else { None };
        for dep in array_of(node, "deps") {
            let pkg = str_of(dep, "pkg");
            if !kind_of(dep, wanted) || seen.contains(&pkg) {
                continue;
            }
            seen.push(pkg);
            let Some(package) = packages.iter().find(|p| str_of(p, "id") == pkg) else {
                continue;
            };
            if !str_of(package, "source").is_empty()
                || str_of(package, "name").starts_with("agent-surface")
            {
                continue;
            }
            let manifest = Path::new(str_of(package, "manifest_path"));
            dirs.extend(manifest.parent().map(Path::to_path_buf));
            queue.push((pkg, false));
        }
    }
    dirs.sort();
    dirs.dedup();
    dirs
}

/// Finds the package with cargo metadata.
pub(crate) fn locate(options: &Options) -> Result<Package, Fatal> {
    let manifest = manifest_of(options)?;
    let output = cargo()
        .args(["metadata", "--format-version", "1", "--manifest-path"])
        .arg(&manifest)
        .args(options.all_features.then_some("--all-features"))
        .stdin(Stdio::null())
        .output()
        .map_err(|err| Fatal(format!("cannot run cargo: {err}")))?;
    if !output.status.success() {
        return Err(Fatal(format!(
            "cargo metadata failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    let metadata: Value = serde_json::from_slice(&output.stdout)
        .map_err(|err| Fatal(format!("cargo metadata printed no JSON: {err}")))?;
    let members: Vec<&str> = array_of(&metadata, "workspace_members")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let candidates: Vec<&Value> = array_of(&metadata, "packages")
        .iter()
        .filter(|p| members.contains(&str_of(p, "id")))
        .collect();
    let chosen = match &options.package {
        Some(name) => candidates.iter().find(|p| str_of(p, "name") == name),
        None => candidates
            .iter()
            .find(|p| canonical(Path::new(str_of(p, "manifest_path"))) == manifest)
            .or(if candidates.len() == 1 {
                candidates.first()
            } else {
                None
            }),
    };
    let Some(package) = chosen else {
        let names: Vec<&str> = candidates.iter().map(|p| str_of(p, "name")).collect();
        return Err(Fatal(format!(
            "choose a package with -p (workspace members: {})",
            names.join(", ")
        )));
    };
    let manifest = PathBuf::from(str_of(package, "manifest_path"));
    let mut lib = None;
    let mut bins = Vec::new();
    for target in array_of(package, "targets") {
        let kinds: Vec<&str> = array_of(target, "kind")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let name = str_of(target, "name").to_owned();
        if kinds.contains(&"bin") {
            bins.push(name);
        } else if kinds
            .iter()
            .any(|kind| matches!(*kind, "lib" | "rlib" | "dylib"))
        {
            lib = Some(name.replace('-', "_"));
        }
    }
    let name = str_of(package, "name");
    let bin = chosen_bin(options, name, lib.as_deref(), &bins)?;
    // Only the crates linked into what is read are the package's own: the
    // library, and the binary when one is read (never other binaries).
    let mut own_crates: Vec<String> = bin.iter().map(|b| b.replace('-', "_")).collect();
    own_crates.extend(lib.clone());
    let package_id = str_of(package, "id");
    let mut own_roots = Vec::new();
    for target in array_of(package, "targets") {
        let target_name = str_of(target, "name").replace('-', "_");
        if own_crates.contains(&target_name) {
            own_roots.push(PathBuf::from(str_of(target, "src_path")));
        }
    }
    let mut generators = Vec::new();
    let mut scan_roots = vec![ScanRoot {
        label: None,
        dir: manifest.parent().map(Path::to_path_buf).unwrap_or_default(),
        entry_points: own_roots,
        condition: Vec::new(),
    }];
    for linked in linked_dependency_crates(&metadata, package_id) {
        let (crate_name, dependency) = (linked.crate_name, linked.label);
        // The framework's own crates are what the gate runs on, not what
        // it reviews.
        let framework = dependency.starts_with("agent-surface");
        if linked.generator {
            // A proc-macro crate: what it generates is decided when it
            // runs, so review sees its source by digest (a local one; a
            // registry one is pinned by the lock file).
            if let (Some((dir, _)), false) = (linked.local, framework) {
                let mut dirs = vec![dir];
                dirs.extend(local_closure(&metadata, &[&linked.id], None));
                generators.push((dependency, dirs));
            }
            continue;
        }
        match (linked.local, framework) {
            (_, true) => {}
            // Read from source, under its platform conditions if any.
            (Some((dir, root)), false) => scan_roots.push(ScanRoot {
                label: Some(dependency.clone()),
                dir,
                entry_points: vec![root],
                condition: linked.condition,
            }),
            // Not read (a registry crate): if it can declare reach and is
            // linked only on some platforms, that is what review sees.
            (None, false) if linked.declares && !linked.condition.is_empty() => {
                scan_roots.push(ScanRoot {
                    label: Some(dependency.clone()),
                    dir: PathBuf::new(),
                    entry_points: Vec::new(),
                    condition: linked.condition,
                });
            }
            (None, false) => {}
        }
        if own_crates.contains(&crate_name) {
            return Err(Fatal(format!(
                "dependency {dependency} builds a crate named `{crate_name}`, as package {name} \
                 does: declarations are attributed to crates by name, so its contracts could \
                 not be told from the package's own; rename one of the two crates"
            )));
        }
    }
    Ok(Package {
        name: name.to_owned(),
        dir: manifest.parent().map(Path::to_path_buf).unwrap_or_default(),
        manifest,
        own_crates,
        settings: package
            .get("metadata")
            .and_then(|m| m.get("agent-surface"))
            .cloned()
            .unwrap_or(Value::Null),
        workspace_root: PathBuf::from(str_of(&metadata, "workspace_root")),
        target_dir: PathBuf::from(str_of(&metadata, "target_directory")),
        bin,
        features: package
            .get("features")
            .and_then(Value::as_object)
            .map(|features| features.keys().cloned().collect())
            .unwrap_or_default(),
        runtime: runtime_dependency(&metadata, package_id),
        scan_roots,
        generators,
        build_dependencies: local_closure(&metadata, &[package_id], Some("build")),
    })
}

#[cfg(test)]
mod platform_tests;
