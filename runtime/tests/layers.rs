//! The layer rule of `runtime/src`: imports go one way, bottom to top. Every
//! `crate::…` path in a file must name a module of the same or a lower layer
//! (comments and unit-test modules are ignored). Fails on any upward import,
//! and on a source file over 600 lines or without an opening `//!` comment
//! naming its concept.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::string_slice,
    missing_docs
)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Bottom to top. A module path not listed belongs to its longest listed
/// prefix. The crate docs show the same map.
const LAYERS: &[&str] = &[
    // foundations: no imports but from the list before them
    "rules",
    "util",
    "ids",
    "canonical",
    "wire",
    "clock",
    "schema",
    "error",
    "audit",
    "context",
    "events",
    "call",
    "meta",
    // policies, the contracts that declare them, and the authority over them
    "policy",
    "contract",
    "component",
    "procedure",
    "hashes",
    "catalog",
    // primitives the registry is built from
    "primitives",
    "confirmation",
    "procedure::executor",
    // the registry, the pipeline, and the views over them
    "registry",
    "procedure::binding",
    "invoke",
    "snapshot",
    "explain",
    // adapters, over the public API of the core
    "toolset",
    "mcp",
    "procedure::mcp",
    "testing",
    "macro_support",
    "lib",
];

fn rank(layer: &str) -> usize {
    LAYERS
        .iter()
        .position(|l| *l == layer)
        .unwrap_or_else(|| panic!("`{layer}` is not in LAYERS"))
}

/// The layer of a module path (`registry::mount` → `registry`).
fn layer_of(path: &[&str]) -> String {
    for n in (1..=path.len()).rev() {
        let key = path[..n].join("::");
        if LAYERS.contains(&key.as_str()) {
            return key;
        }
    }
    "lib".to_owned()
}

/// The module path of a source file (`registry/mount.rs` → `registry::mount`).
fn module_of(file: &Path, root: &Path) -> Vec<String> {
    let relative = file.strip_prefix(root).unwrap().with_extension("");
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without comments and without its unit-test module.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every `crate::a::b::Name` path in `code`, as its segments.
fn crate_paths(code: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let tail = &rest[at + "crate::".len()..];
        let end = tail
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(tail.len());
        let path: Vec<String> = tail[..end]
            .split("::")
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        if !path.is_empty() {
            paths.push(path);
        }
        rest = &tail[end..];
    }
    paths
}

/// Names the crate root re-exports, with the layer they come from.
fn root_exports(lib: &str) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    let code = code(lib);
    for statement in code.split(';') {
        let Some(at) = statement.find("pub use ") else {
            continue;
        };
        let used = statement[at + "pub use ".len()..].trim();
        if used.starts_with("crate::") {
            continue;
        }
        let (module, items) = match used.split_once("::{") {
            Some((module, items)) => (module, items.trim_end_matches('}')),
            None => match used.rsplit_once("::") {
                Some((module, item)) => (module, item),
                None => continue,
            },
        };
        let layer = match module {
            "agent_surface_rules" | "agent_surface_macros" => "rules".to_owned(),
            module => layer_of(&module.split("::").collect::<Vec<_>>()),
        };
        for item in items.split(',') {
            let item = item.trim();
            if !item.is_empty() {
                names.insert(item.to_owned(), layer.clone());
            }
        }
    }
    names
}

#[test]
fn imports_go_one_way_bottom_to_top() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(root.join("lib.rs")).unwrap();
    let exports = root_exports(&lib);
    let mut files = Vec::new();
    sources(&root, &mut files);
    assert!(files.len() > 40, "found the sources ({})", files.len());

    let mut upward: BTreeSet<(String, String, String)> = BTreeSet::new();
    for file in &files {
        let module = module_of(file, &root);
        let module: Vec<&str> = module.iter().map(String::as_str).collect();
        let own = layer_of(&module);
        let text = std::fs::read_to_string(file).unwrap();
        for path in crate_paths(&code(&text)) {
            let segments: Vec<&str> = path.iter().map(String::as_str).collect();
            // `crate::Effect::Destructive`: a root re-export; otherwise the
            // longest listed module prefix.
            let target = match segments.first().and_then(|first| exports.get(*first)) {
                Some(layer) => layer.clone(),
                None => layer_of(&segments),
            };
            if rank(&target) > rank(&own) {
                let relative = file
                    .strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                upward.insert((relative, target, path.join("::")));
            }
        }
    }

    let unexpected: Vec<String> = upward
        .iter()
        .map(|(file, target, path)| format!("{file} imports `crate::{path}` from layer `{target}`"))
        .collect();
    assert!(
        unexpected.is_empty(),
        "upward imports:\n{}",
        unexpected.join("\n")
    );
}

#[test]
fn no_source_file_is_over_600_lines_and_each_names_its_concept() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let mut problems = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let relative = file
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if !text.starts_with("//!") {
            problems.push(format!("{relative}: does not open with a `//!` comment"));
        }
        let lines = text.lines().count();
        if lines > 600 {
            problems.push(format!("{relative}: {lines} lines"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_crate_docs_show_every_public_module_in_the_layer_map() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(root.join("lib.rs")).unwrap();
    let start = lib
        .find("//! # Layers")
        .expect("lib.rs documents the layers");
    let table: String = lib[start..]
        .lines()
        .skip(1)
        .take_while(|line| !line.starts_with("//! #"))
        .collect::<Vec<_>>()
        .join("\n");
    let missing: Vec<&str> = lib
        .lines()
        .filter_map(|line| line.strip_prefix("pub mod "))
        .filter_map(|rest| rest.strip_suffix(';'))
        .filter(|name| !name.starts_with("__"))
        .filter(|name| {
            rank(name);
            !table.contains(&format!("`{name}`"))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "public modules missing from the layer map in lib.rs: {missing:?}"
    );
}
