//! What the build cannot show, read from source: declarations under
//! `#[cfg]` or `#[cfg_attr]` (a component, a procedure, a reference, a
//! schema field or variant — or anything around them: a module, function,
//! trait, block, statement, expression, a generator macro wherever it is
//! invoked, a macro's arguments, an `include!`), and code that runs outside
//! what the gate checks (unmangled or exported symbols, link sections such
//! as constructors, `global_asm!`, and macros that emit them). The package
//! and its local dependencies (path dependencies, workspace members) are
//! read from their crate roots as cargo describes them. The macro records
//! capabilities under `#[cfg]` inside a component it expands; a `#[cfg]` on
//! the item itself, or around it, removes it before any macro runs, so only
//! the source shows it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

use crate::metadata::ScanRoot;
use crate::ways::Ways;

pub(crate) mod build_script;
pub(crate) mod digest;
pub(crate) mod isolated;
pub(crate) mod items;
mod tokens;
mod visitor;

use visitor::{MacroBody, Visitor};

use crate::source_attrs::{AGENT_ATTRIBUTES, cfgs, digest, joined};

/// A declaration under `#[cfg]`, found in the source.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct GatedDeclaration {
    /// The declaration key (`component <type>`, `procedure <id>`, …), with
    /// ` (crate <dependency>)` for a dependency's.
    pub(crate) key: String,
    /// Every condition on the way to it, joined with `all(…)` when several.
    pub(crate) condition: String,
    /// The file, relative to its package.
    pub(crate) file: String,
    /// A digest of the item's text: a change to a declaration outside the
    /// build changes it.
    pub(crate) digest: String,
}

/// What the source shows.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    /// Declarations under `#[cfg]`.
    pub(crate) gated: Vec<GatedDeclaration>,
    /// Code at link level, one line per occurrence (`file: what name`).
    pub(crate) link_level: Vec<String>,
    /// The source's items by name (what declared policies read).
    pub(crate) items: items::Items,
}

/// `use path::agent_component as alias;` anywhere in `file`: (alias, name)
/// into `out`; every other `use … as alias` (a generator macro may be
/// renamed) into `renames`.
fn aliases_in(file: &syn::File, out: &mut Vec<(String, String)>, shared: &mut Shared) {
    struct Uses<'a>(&'a mut Vec<(String, String)>, &'a mut Shared);
    impl<'ast> Visit<'ast> for Uses<'_> {
        fn visit_use_rename(&mut self, rename: &'ast syn::UseRename) {
            let target = rename.ident.to_string();
            let pair = (rename.rename.to_string(), target);
            if AGENT_ATTRIBUTES.contains(&pair.1.as_str()) {
                self.0.push(pair);
            } else if self.1.renames.len() < MAX_RENAMES {
                self.1.renames.push(pair);
            } else {
                self.1.renames_dropped = true;
            }
        }
    }
    Uses(out, shared).visit_file(file);
}

/// At most this many `use … as …` renames are followed per scan.
const MAX_RENAMES: usize = 10_000;

/// Every name that invokes a generator: the generators, the
/// `macro_rules!` whose bodies invoke one (wrappers), and the names
/// `use … as …` gives any of them — closed under both, however long the
/// chains.
fn generator_names(shared: &Shared) -> std::collections::HashSet<String> {
    let mut names: std::collections::HashSet<String> = shared.generators.iter().cloned().collect();
    loop {
        let before = names.len();
        for body in &shared.bodies {
            if !names.contains(&body.defined) && body.invokes.iter().any(|n| names.contains(n)) {
                names.insert(body.defined.clone());
            }
        }
        for (alias, target) in &shared.renames {
            if names.contains(target) && !names.contains(alias) {
                names.insert(alias.clone());
            }
        }
        if names.len() == before {
            return names;
        }
    }
}

/// Marks the digest of a call whose files the scan could not name (see
/// `Visitor::files_named_in`).
const COMPUTED: &str = "\u{0}computed";

/// At most this much source is read per scan (bytes).
const MAX_SOURCE_BYTES: u64 = if cfg!(test) { 4 << 20 } else { 64 << 20 };
/// At most this many files are read per scan.
const MAX_FILES: usize = 10_000;
/// At most this many declarations outside the build are listed one by one.
const MAX_GATED: usize = 10_000;

/// What one scan collects across crate trees: generators defined in one
/// crate may be invoked in another.
#[derive(Default)]
struct Shared {
    invocations: Vec<(String, String, String, String, Option<String>)>,
    generators: Vec<String>,
    /// `use … as …` of anything but agent attributes: (alias, name).
    renames: Vec<(String, String)>,
    /// Whether renames beyond [`MAX_RENAMES`] were left unread.
    renames_dropped: bool,
    /// `macro_rules!` naming no agent attribute, with what they invoke.
    bodies: Vec<MacroBody>,
    /// Files reached that do not parse (as items, or as a block's body).
    unparsed: Vec<(String, String)>,
    /// Files that stopped an earlier scan (they nest deeper than the
    /// parser's stack): not read again.
    set_aside: Vec<PathBuf>,
    /// Those of them this scan reached.
    too_deep: Vec<(String, String)>,
    /// Files reached that cannot be read at all (a pipe, a device, no
    /// permission).
    unreadable: Vec<String>,
    /// Files reached beyond the scan's budget, with their digests.
    over_budget: Vec<(String, Option<String>)>,
    /// What is left of the budget for digesting files not read.
    digest_budget: u64,
    /// Whether a file of the current tree was not read (it may name
    /// others): the whole tree is then digested.
    tree_unread: bool,
    bytes: u64,
    files: usize,
}

/// SHA-256 of `bytes`, in hex: what stands for a file the scan could not
/// read, so a change to it still changes what review sees.
pub(crate) fn bytes_digest(bytes: &[u8]) -> String {
    digest::of_bytes(bytes)
}

/// `path` relative to `base` (both canonical), with `..` for a path
/// outside it: what the scan shows never holds where the checkout lives.
fn relative_to(base: &Path, path: &Path) -> String {
    use std::path::Component;
    let mut base_parts = base.components().peekable();
    let mut path_parts = path.components().peekable();
    while let (Some(a), Some(b)) = (base_parts.peek(), path_parts.peek()) {
        if a != b {
            break;
        }
        base_parts.next();
        path_parts.next();
    }
    let ups = base_parts
        .filter(|part| matches!(part, Component::Normal(_)))
        .count();
    let mut parts: Vec<String> = vec!["..".to_owned(); ups];
    parts.extend(path_parts.map(|part| part.as_os_str().to_string_lossy().into_owned()));
    parts.join("/")
}

/// The file at `path` (`shown` as the scan reports it), parsed; a file
/// that does not parse is recorded as not read.
fn read(path: &Path, shown: &str, shared: &mut Shared) -> Option<syn::File> {
    if shared.set_aside.iter().any(|aside| aside == path) {
        // Not parsed, but its text is digested (streamed, within the
        // digest budget): a change to it shows.
        let digest = digest::of_file(path, &mut shared.digest_budget)
            .unwrap_or_else(|| "not digested: over the digest budget".to_owned());
        shared.too_deep.push((shown.to_owned(), digest));
        shared.tree_unread = true;
        return None;
    }
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        // A candidate that is not there (`name.rs` or `name/mod.rs`).
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return None,
        Err(_) => {
            shared.unreadable.push(shown.to_owned());
            shared.tree_unread = true;
            return None;
        }
    };
    if !meta.is_file() {
        if !meta.is_dir() {
            // A pipe, a device: never read, but said.
            shared.unreadable.push(shown.to_owned());
            shared.tree_unread = true;
        }
        return None;
    }
    if shared.bytes + meta.len() > MAX_SOURCE_BYTES || shared.files >= MAX_FILES {
        // Said, never skipped in silence.
        let digest = digest::of_file(path, &mut shared.digest_budget);
        shared.over_budget.push((shown.to_owned(), digest));
        shared.tree_unread = true;
        return None;
    }
    shared.bytes += meta.len();
    shared.files += 1;
    // At most the length it reports (a file of `/proc` reports none and
    // would stream without end).
    let mut text = String::new();
    let read = std::fs::File::open(path).and_then(|file| {
        use std::io::Read as _;
        file.take(meta.len()).read_to_string(&mut text)
    });
    if read.is_err() {
        // Not UTF-8, or not readable: said with its digest.
        let digest = digest::of_file(path, &mut shared.digest_budget)
            .unwrap_or_else(|| "not digested".to_owned());
        shared.unparsed.push((shown.to_owned(), digest));
        shared.tree_unread = true;
        return None;
    }
    isolated::at(path);
    // An `include!` in expression or statement position includes an
    // expression or statements: read as a function's body.
    match syn::parse_file(&text)
        .or_else(|_| syn::parse_file(&format!("fn __included() {{\n{text}\n}}")))
    {
        Ok(file) => Some(file),
        Err(_) => {
            shared
                .unparsed
                .push((shown.to_owned(), bytes_digest(text.as_bytes())));
            shared.tree_unread = true;
            None
        }
    }
}

/// Where a file's `mod name;` resolve: beside it for a crate root or a
/// `mod.rs`, else in the directory of its name.
fn child_dir_of(path: &Path, roots: &[PathBuf]) -> (PathBuf, PathBuf) {
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    let root_like = stem == "mod" || roots.iter().any(|root| root == path);
    let child = if root_like {
        dir.clone()
    } else {
        dir.join(stem)
    };
    (dir, child)
}

/// Scans one crate tree from its roots. Each file is read once and
/// visited under every platform way to it (a file reached under two
/// conditions declares under both; one reached on every platform under
/// none), at most [`MAX_WAYS`](crate::ways::MAX_WAYS) ways apart.
fn scan_root(root: &ScanRoot, scan: &mut Scan, shared: &mut Shared) {
    let base = std::fs::canonicalize(&root.dir).unwrap_or_else(|_| root.dir.clone());
    let roots: Vec<PathBuf> = root
        .entry_points
        .iter()
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .collect();
    // A crate linked only on some platforms: everything in it is under
    // that condition.
    let mut queue = crate::ways::Queue::new();
    for path in &roots {
        queue.push(path.clone(), root.condition.clone());
    }
    if root.entry_points.is_empty() && !root.condition.is_empty() {
        // Not read (a registry crate that can declare reach): the crate
        // itself is what the build does not show.
        let label = root.label.clone().unwrap_or_default();
        scan.gated.push(GatedDeclaration {
            key: format!("declarations of a crate linked only on some platforms (crate {label})"),
            condition: joined(&root.condition),
            file: "Cargo.toml".to_owned(),
            digest: digest(&label),
        });
    }
    // Each file read, with the ways to it found so far.
    let mut parsed: Vec<(PathBuf, syn::File, Ways)> = Vec::new();
    let mut index: BTreeMap<PathBuf, usize> = BTreeMap::new();
    let mut unread: BTreeSet<PathBuf> = BTreeSet::new();
    let mut aliases = Vec::new();
    let relative = |path: &Path| relative_to(&base, path);
    // How a file is named in what the scan says of it: with its crate, for
    // a dependency's.
    let said = |path: &Path| match &root.label {
        Some(label) => format!("{} (crate {label})", relative(path)),
        None => relative(path),
    };
    // First, every file the tree reaches, under every way to it (aliases
    // apply to all of them). A file is walked again for each way that adds
    // a platform, so its children get that way too.
    while let Some((path, cfg)) = queue.pop() {
        let Ok(path) = std::fs::canonicalize(&path) else {
            continue;
        };
        if unread.contains(&path) {
            continue;
        }
        let slot = match index.get(&path) {
            Some(&slot) => slot,
            None => {
                let Some(file) = read(&path, &said(&path), shared) else {
                    unread.insert(path);
                    continue;
                };
                aliases_in(&file, &mut aliases, shared);
                parsed.push((path.clone(), file, Ways::default()));
                index.insert(path.clone(), parsed.len() - 1);
                parsed.len() - 1
            }
        };
        let Some((_, file, ways)) = parsed.get_mut(slot) else {
            continue;
        };
        let mut cfg = cfg;
        crate::source_attrs::add_conditions(&mut cfg, cfgs(&file.attrs));
        // Test builds only: nothing reached this way ships.
        if crate::source_attrs::test_only(&cfg) {
            continue;
        }
        let Some(cfg) = ways.add(cfg) else {
            continue;
        };
        let (file_dir, child_dir) = child_dir_of(&path, &roots);
        isolated::at(&path);
        let mut found = Vec::new();
        Visitor {
            package_dir: &base,
            label: root.label.as_deref(),
            file: relative(&path),
            child_dir,
            dir: file_dir.clone(),
            file_dir,
            cfg,
            files: &mut found,
            aliases: &[],
            invocations: &mut Vec::new(),
            generators: &mut Vec::new(),
            bodies: &mut Vec::new(),
            scan: &mut Scan::default(),
        }
        .visit_file(file);
        for (child, way) in found {
            queue.push(child, way);
        }
    }
    let mut invocations = Vec::new();
    for (path, file, ways) in &parsed {
        isolated::at(path);
        items::index(file, &mut scan.items);
        // Ways beyond those told apart still change what review sees.
        if let Some(beyond) = ways.beyond_told() {
            scan.link_level.push(format!(
                "{}: reached under more platform conditions than the gate tells apart: \
                 told as {beyond}",
                said(path)
            ));
        }
        for cfg in ways.each() {
            isolated::at(path);
            let (file_dir, child_dir) = child_dir_of(path, &roots);
            Visitor {
                package_dir: &base,
                label: root.label.as_deref(),
                file: relative(path),
                child_dir,
                dir: file_dir.clone(),
                file_dir,
                cfg,
                files: &mut Vec::new(),
                aliases: &aliases,
                invocations: &mut invocations,
                generators: &mut shared.generators,
                bodies: &mut shared.bodies,
                scan,
            }
            .visit_file(file);
        }
    }
    // The files read (a call pulling one of them in is read with it).
    let read: BTreeSet<PathBuf> = parsed.iter().map(|(path, _, _)| path.clone()).collect();
    // Dropping a syntax tree recurses as deep as parsing it did.
    for (path, file, _) in parsed {
        isolated::at(&path);
        drop(file);
    }
    // A call whose files are computed or not found may pull in any Rust
    // file of the package the scan did not read: their digest stands for
    // them (taken once).
    let mut rust_files = None;
    for (_, _, _, digest) in &mut invocations {
        if let Some(call) = digest.strip_suffix(COMPUTED) {
            let tree = rust_files.get_or_insert_with(|| {
                let other = |path: &Path| {
                    path.extension().is_none_or(|ext| ext != "rs")
                        || std::fs::canonicalize(path).is_ok_and(|path| read.contains(&path))
                };
                digest::of_tree_except(&base, &mut shared.digest_budget, &other)
            });
            *digest = format!(
                "{call}, may pull in any Rust file of the package it does not read as a module: {tree}"
            );
        }
    }
    shared.invocations.extend(
        invocations
            .into_iter()
            .map(|(name, condition, file, digest)| {
                (name, condition, file, digest, root.label.clone())
            }),
    );
}

/// Scans the package and its local dependencies.
#[cfg(test)]
pub(crate) fn scan(roots: &[ScanRoot]) -> Scan {
    scan_setting_aside(roots, &[])
}

/// Scans the package and its local dependencies, without reading the
/// files `set_aside` (each said as not read).
pub(crate) fn scan_setting_aside(roots: &[ScanRoot], set_aside: &[PathBuf]) -> Scan {
    let mut scan = Scan::default();
    let mut shared = Shared {
        set_aside: set_aside.to_vec(),
        digest_budget: digest::MAX_DIGESTED_BYTES,
        ..Shared::default()
    };
    for root in roots {
        shared.tree_unread = false;
        scan_root(root, &mut scan, &mut shared);
        if shared.tree_unread {
            // A file not read may name others (its modules, its includes):
            // the whole tree stands for them.
            let tree = digest::of_tree(&root.dir, &mut shared.digest_budget);
            let crate_name = root
                .label
                .as_deref()
                .map_or_else(String::new, |label| format!(" (crate {label})"));
            scan.link_level.push(format!(
                "files not read{crate_name} may name others: the files under the crate \
                 have digest {tree}"
            ));
        }
    }
    // A generator invoked under `#[cfg]` (wherever it is defined): what it
    // declares is unknown until it is built.
    let generators = generator_names(&shared);
    // A wrapper of a generator with a condition in its own body.
    for body in &shared.bodies {
        if body.conditional && generators.contains(&body.defined) {
            let key = match &body.label {
                Some(label) => format!(
                    "declarations generated by {}! (crate {label})",
                    body.defined
                ),
                None => format!("declarations generated by {}!", body.defined),
            };
            scan.gated.push(GatedDeclaration {
                key,
                condition: "#[cfg] inside the macro's body".to_owned(),
                file: body.file.clone(),
                digest: body.digest.clone(),
            });
        }
    }
    if shared.renames_dropped {
        scan.link_level.push(format!(
            "more than {MAX_RENAMES} `use … as …` renames: those beyond were not followed, so a \
             generator invoked through one of them is not recognized"
        ));
    }
    for (path, digest) in &shared.too_deep {
        scan.link_level.push(format!(
            "{path}: nests deeper than the source scan can parse: not read (digest {digest})"
        ));
    }
    for path in &shared.unreadable {
        scan.link_level
            .push(format!("{path}: cannot be read as a source file: not read"));
    }
    const MAX_TOLD: usize = 1_000;
    for (path, digest) in shared.over_budget.iter().take(MAX_TOLD) {
        let digest = digest
            .as_deref()
            .unwrap_or("not digested: over the digest budget");
        scan.link_level.push(format!(
            "{path}: beyond the scan's budget ({MAX_FILES} files, {} MiB): not read \
             (digest {digest})",
            MAX_SOURCE_BYTES >> 20
        ));
    }
    if shared.over_budget.len() > MAX_TOLD {
        let rest: Vec<String> = shared
            .over_budget
            .iter()
            .skip(MAX_TOLD)
            .map(|(path, digest)| format!("{path}\0{}", digest.as_deref().unwrap_or("")))
            .collect();
        scan.link_level.push(format!(
            "{} more files beyond the scan's budget, not read (digest {})",
            rest.len(),
            bytes_digest(rest.join("\n").as_bytes())
        ));
    }
    for (path, digest) in &shared.unparsed {
        scan.link_level.push(format!(
            "{path}: does not parse (as items or as a block's body): not read (digest {digest})"
        ));
    }
    for (name, condition, file, digest, label) in shared.invocations {
        if generators.contains(&name) && !condition.is_empty() && condition != "test" {
            let key = match &label {
                Some(label) => format!("declarations generated by {name}! (crate {label})"),
                None => format!("declarations generated by {name}!"),
            };
            scan.gated.push(GatedDeclaration {
                key,
                condition,
                file,
                digest,
            });
        }
    }
    if shared.bytes >= MAX_SOURCE_BYTES || shared.files >= MAX_FILES {
        scan.link_level.push(format!(
            "the scan stopped after {} files and {} bytes of source: what lies beyond was not read",
            shared.files, shared.bytes
        ));
    }
    scan.gated.sort();
    scan.gated.dedup();
    if scan.gated.len() > MAX_GATED {
        // Those beyond are still said, and a change among them still shows.
        use sha2::Digest as _;
        let beyond = scan.gated.split_off(MAX_GATED);
        let mut hasher = sha2::Sha256::new();
        for gated in &beyond {
            for part in [&gated.key, &gated.condition, &gated.file, &gated.digest] {
                hasher.update(part.as_bytes());
                hasher.update([0]);
            }
        }
        let digest = crate::source_attrs::hex(&hasher.finalize());
        scan.link_level.push(format!(
            "{} more declarations outside the build than the gate lists (digest {digest}): \
             review the source by hand",
            beyond.len()
        ));
    }
    scan.link_level.sort();
    scan.link_level.dedup();
    scan
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod unread_tests;
