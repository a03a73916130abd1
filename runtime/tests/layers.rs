//! The layer rule of `runtime/src`: imports go one way, bottom to top. Every
//! `crate::…` path in a file must name a module of the same or a lower layer
//! (comments and unit-test modules are ignored). Fails on any upward import,
//! on an import cycle (here, in the macros, the review gate and the
//! example), and on a source file without an opening `//!` comment naming
//! its concept.

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
    "store",
    "schema",
    "error",
    "audit",
    "context",
    "events",
    "invocation",
    "internal_meta",
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
    "procedure::binding",
    // the registry, the pipeline, and the views over them
    "registry",
    "invoke",
    "snapshot",
    "explain",
    // the registry's calls over the pipeline and the snapshot
    "registry::calls",
    "adapter",
    // adapters, over the public API of the core
    "toolset",
    "mcp",
    "webmcp",
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
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") || parts == ["main"] {
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

/// Whether an item is compiled only for the crate's unit tests.
fn test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .parse_args::<syn::Meta>()
                .is_ok_and(|meta| meta.path().is_ident("test"))
    })
}

/// One module of the crate: its path, its file, and its parsed items.
struct Module {
    path: Vec<String>,
    file: String,
    items: Vec<syn::Item>,
}

/// Every file of `runtime/src` as a module, with the inline modules it
/// declares (unit-test modules left out).
fn modules(root: &Path) -> Vec<Module> {
    let mut files = Vec::new();
    sources(root, &mut files);
    // A binary beside a library is a crate of its own.
    if root.join("lib.rs").is_file() {
        files.retain(|file| file != &root.join("main.rs"));
    }
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let relative = file
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let path = module_of(&file, root);
        inline_modules(&path, &relative, ast.items, &mut out);
    }
    out
}

fn inline_modules(path: &[String], file: &str, items: Vec<syn::Item>, out: &mut Vec<Module>) {
    let mut kept = Vec::new();
    for item in items {
        match item {
            syn::Item::Mod(module) if test_only(&module.attrs) => {}
            syn::Item::Mod(mut module) if module.content.is_some() => {
                let mut child = path.to_vec();
                child.push(module.ident.to_string());
                let inner = module
                    .content
                    .take()
                    .map(|(_, items)| items)
                    .unwrap_or_default();
                inline_modules(&child, file, inner, out);
                // The declaration stays, without its items (its visibility
                // is what `public` reads).
                kept.push(syn::Item::Mod(module));
            }
            item if item_attrs(&item).is_some_and(test_only) => {}
            item => kept.push(item),
        }
    }
    out.push(Module {
        path: path.to_vec(),
        file: file.to_owned(),
        items: kept,
    });
}

fn item_attrs(item: &syn::Item) -> Option<&[syn::Attribute]> {
    Some(match item {
        syn::Item::Use(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        _ => return None,
    })
}

/// A path as written, made absolute from the module it is written in:
/// `crate::a::b`, `super::b` and `self::b` all resolve; other paths (std,
/// dependencies, local names) give `None`.
fn absolute(module: &[String], segments: &[String]) -> Option<Vec<String>> {
    let (first, rest) = segments.split_first()?;
    match first.as_str() {
        "crate" => Some(rest.to_vec()),
        "self" => Some(module.iter().cloned().chain(rest.iter().cloned()).collect()),
        "super" => {
            let mut base = module.to_vec();
            let mut rest = segments;
            while let Some((first, tail)) = rest.split_first() {
                if first != "super" {
                    break;
                }
                base.pop()?;
                rest = tail;
            }
            base.extend(rest.iter().cloned());
            Some(base)
        }
        _ => None,
    }
}

/// Every path of a `use` tree, flattened (`a::{b, c::{d}}` → `a::b`,
/// `a::c::d`), with the name it binds (`None` for globs).
fn flatten(
    tree: &syn::UseTree,
    prefix: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    match tree {
        syn::UseTree::Path(path) => {
            prefix.push(path.ident.to_string());
            flatten(&path.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(name) => {
            let mut full = prefix.clone();
            full.push(name.ident.to_string());
            out.push((full, Some(name.ident.to_string())));
        }
        syn::UseTree::Rename(rename) => {
            let mut full = prefix.clone();
            full.push(rename.ident.to_string());
            out.push((full, Some(rename.rename.to_string())));
        }
        syn::UseTree::Glob(_) => out.push((prefix.clone(), None)),
        syn::UseTree::Group(group) => {
            for tree in &group.items {
                flatten(tree, prefix, out);
            }
        }
    }
}

/// Every crate-relative path a module names: its `use` trees (every form)
/// and the paths in its code (`crate::x::Y::new()`, `super::z`).
fn named_paths(module: &Module) -> Vec<Vec<String>> {
    struct Paths<'a> {
        module: &'a [String],
        out: Vec<Vec<String>>,
    }
    impl<'ast> syn::visit::Visit<'ast> for Paths<'_> {
        fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
            let mut flat = Vec::new();
            flatten(&item.tree, &mut Vec::new(), &mut flat);
            for (path, _) in flat {
                if let Some(path) = absolute(self.module, &path)
                    && !path.is_empty()
                {
                    self.out.push(path);
                }
            }
        }
        fn visit_path(&mut self, path: &'ast syn::Path) {
            let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
            if let Some(path) = absolute(self.module, &segments)
                && !path.is_empty()
            {
                self.out.push(path);
            }
            syn::visit::visit_path(self, path);
        }
        fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
            // Inline modules are modules of their own.
            if item.content.is_none() {
                syn::visit::visit_item_mod(self, item);
            }
        }
        // Paths an attribute's arguments name (`#[reference(crate::x::Y)]`,
        // a policy built from `crate::x::Z`) are dependencies too; doc
        // comments (intra-doc links) are not.
        fn visit_attribute(&mut self, attr: &'ast syn::Attribute) {
            if attr.path().is_ident("doc") {
                return;
            }
            if let syn::Meta::List(list) = &attr.meta {
                let mut found = Vec::new();
                token_paths(list.tokens.clone(), &mut found);
                for segments in found {
                    if let Some(path) = absolute(self.module, &segments)
                        && !path.is_empty()
                    {
                        self.out.push(path);
                    }
                }
            }
        }
        // `pub(crate)`, `pub(super)`: visibility, not a dependency.
        fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}
    }
    let mut paths = Paths {
        module: &module.path,
        out: Vec::new(),
    };
    for item in &module.items {
        syn::visit::Visit::visit_item(&mut paths, item);
    }
    paths.out
}

/// The `a::b::c` paths in a token stream (inside groups too), each as its
/// segments.
fn token_paths(tokens: proc_macro2::TokenStream, out: &mut Vec<Vec<String>>) {
    let mut current: Vec<String> = Vec::new();
    let mut colons = 0;
    let flush = |current: &mut Vec<String>, out: &mut Vec<Vec<String>>| {
        if current.len() > 1 {
            out.push(std::mem::take(current));
        }
        current.clear();
    };
    for token in tokens {
        match token {
            proc_macro2::TokenTree::Ident(ident) => {
                if !current.is_empty() && colons != 2 {
                    flush(&mut current, out);
                }
                current.push(ident.to_string());
                colons = 0;
            }
            proc_macro2::TokenTree::Punct(punct) if punct.as_char() == ':' => colons += 1,
            proc_macro2::TokenTree::Group(group) => {
                flush(&mut current, out);
                colons = 0;
                token_paths(group.stream(), out);
            }
            _ => {
                flush(&mut current, out);
                colons = 0;
            }
        }
    }
    flush(&mut current, out);
}

/// The crate's modules, indexed, with what each re-exports.
struct Crate {
    modules: Vec<Module>,
    /// `module path` → index.
    index: BTreeMap<Vec<String>, usize>,
}

impl Crate {
    fn load() -> Crate {
        let krate = Crate::at(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
        assert!(
            krate.modules.len() > 40,
            "found the sources ({})",
            krate.modules.len()
        );
        krate
    }

    /// The crate whose sources are under `root`.
    fn at(root: &Path) -> Crate {
        let modules = modules(root);
        let index = modules
            .iter()
            .enumerate()
            .map(|(i, m)| (m.path.clone(), i))
            .collect();
        Crate { modules, index }
    }

    /// The longest prefix of `path` that is a module, and the rest.
    fn split<'a>(&self, path: &'a [String]) -> (Vec<String>, &'a [String]) {
        for n in (0..=path.len()).rev() {
            if self.index.contains_key(&path[..n]) {
                return (path[..n].to_vec(), &path[n..]);
            }
        }
        (Vec::new(), path)
    }

    /// Where `name` in `module` is defined, following `use` re-exports
    /// inside the crate (at most 8 hops).
    fn defining(&self, module: &[String], name: &str, hops: usize) -> Vec<String> {
        let Some(&at) = self.index.get(module) else {
            return module.to_vec();
        };
        if hops < 8 {
            for item in &self.modules[at].items {
                let syn::Item::Use(used) = item else { continue };
                let mut flat = Vec::new();
                flatten(&used.tree, &mut Vec::new(), &mut flat);
                for (path, bound) in flat {
                    if bound.as_deref() != Some(name) {
                        continue;
                    }
                    // `use child::Item` names a child module relatively.
                    let relative = path.first().is_some_and(|first| {
                        let mut child = module.to_vec();
                        child.push(first.clone());
                        self.index.contains_key(&child)
                    });
                    let target = if relative {
                        Some(module.iter().cloned().chain(path.iter().cloned()).collect())
                    } else {
                        absolute(module, &path)
                    };
                    if let Some(target) = target {
                        let (target_module, rest) = self.split(&target);
                        return match rest.first() {
                            Some(item) if rest.len() == 1 => {
                                self.defining(&target_module, item, hops + 1)
                            }
                            _ => target_module,
                        };
                    }
                }
            }
        }
        module.to_vec()
    }

    /// The module a named path really reaches: its module prefix, through
    /// the re-export of its first item there.
    fn target(&self, path: &[String]) -> Vec<String> {
        let (module, rest) = self.split(path);
        match rest.first() {
            Some(item) => self.defining(&module, item, 0),
            None => module,
        }
    }

    /// Whether `name` is declared `pub` (or re-exported `pub`) in `module`,
    /// and every module on the way to it is `pub`.
    fn public(&self, module: &[String], name: Option<&str>) -> bool {
        for n in 1..=module.len() {
            let (parent, child) = (&module[..n - 1], &module[n - 1]);
            let Some(&at) = self.index.get(parent) else {
                return false;
            };
            let declared_pub = self.modules[at].items.iter().any(|item| {
                matches!(item, syn::Item::Mod(m) if m.ident == child && matches!(m.vis, syn::Visibility::Public(_)))
            });
            if !declared_pub {
                return false;
            }
        }
        let Some(name) = name else { return true };
        let Some(&at) = self.index.get(module) else {
            return false;
        };
        self.modules[at]
            .items
            .iter()
            .any(|item| item_is_pub(item, name))
    }
}

/// Whether `item` declares or re-exports `name` as `pub`.
fn item_is_pub(item: &syn::Item, name: &str) -> bool {
    let public = |vis: &syn::Visibility| matches!(vis, syn::Visibility::Public(_));
    match item {
        syn::Item::Struct(i) => i.ident == name && public(&i.vis),
        syn::Item::Enum(i) => i.ident == name && public(&i.vis),
        syn::Item::Fn(i) => i.sig.ident == name && public(&i.vis),
        syn::Item::Trait(i) => i.ident == name && public(&i.vis),
        syn::Item::Type(i) => i.ident == name && public(&i.vis),
        syn::Item::Const(i) => i.ident == name && public(&i.vis),
        syn::Item::Static(i) => i.ident == name && public(&i.vis),
        syn::Item::Mod(i) => i.ident == name && public(&i.vis),
        syn::Item::Use(i) if public(&i.vis) => {
            let mut flat = Vec::new();
            flatten(&i.tree, &mut Vec::new(), &mut flat);
            flat.iter().any(|(_, bound)| bound.as_deref() == Some(name))
        }
        // Items a macro declares (`pub struct $name`): public when the
        // invocation names them after `pub`.
        syn::Item::Macro(i) => {
            let tokens: Vec<String> = i
                .mac
                .tokens
                .clone()
                .into_iter()
                .map(|t| t.to_string())
                .collect();
            tokens
                .windows(2)
                .any(|w| w[1] == name && (w[0] == "pub" || w[0] == "struct"))
                || tokens.iter().any(|t| t == name)
        }
        _ => false,
    }
}

/// What adapters still take from the core's crate-private API, each to
/// become public adapter-kit API (and leave this list). The list can only
/// shrink: any other private use fails.
const KNOWN_PRIVATE_USES: &[&str] = &[];

/// The layers adapters sit in: over the public API of the core only.
const ADAPTERS: &[&str] = &["toolset", "mcp", "webmcp", "procedure::mcp", "testing"];

#[test]
fn imports_go_one_way_bottom_to_top() {
    let krate = Crate::load();
    let mut problems = BTreeSet::new();
    for module in &krate.modules {
        let own: Vec<&str> = module.path.iter().map(String::as_str).collect();
        let own_layer = layer_of(&own);
        for path in named_paths(module) {
            // Through the crate root: only `lib.rs` itself may.
            let (prefix, rest) = krate.split(&path);
            // `lib.rs` (the prelude included) curates the root.
            if prefix.is_empty() && module.file != "lib.rs" && !rest.is_empty() {
                problems.insert(format!(
                    "{} names `crate::{}` through the crate root: import it from its module",
                    module.file,
                    path.join("::")
                ));
                continue;
            }
            let target = krate.target(&path);
            let segments: Vec<&str> = target.iter().map(String::as_str).collect();
            let target_layer = layer_of(&segments);
            if rank(&target_layer) > rank(&own_layer) {
                problems.insert(format!(
                    "{} imports `crate::{}` from the higher layer `{target_layer}`",
                    module.file,
                    path.join("::")
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{}",
        problems.into_iter().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn no_two_modules_import_each_other() {
    if let Err(cycles) = no_import_cycle(&Crate::load()) {
        panic!("{cycles}");
    }
}

/// The other crates of the workspace keep their stages one way too: the
/// macros (model → checks → expansion), the review gate and the example.
#[test]
fn no_import_cycle_in_the_macros_the_gate_or_the_example() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut problems = Vec::new();
    for dir in ["../macros/src", "cli/src", "../examples/devices/src"] {
        let root = manifest.join(dir);
        if let Err(cycles) = no_import_cycle(&Crate::at(&root)) {
            problems.push(format!("{dir}: {cycles}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

/// `Err` with the modules on an import cycle and the edges among them.
fn no_import_cycle(krate: &Crate) -> Result<(), String> {
    // Edges between modules neither of which contains the other (a parent
    // declaring and re-exporting its children is not a dependency).
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for module in &krate.modules {
        for path in named_paths(module) {
            let target = krate.target(&path);
            let related = target.starts_with(&module.path) || module.path.starts_with(&target);
            if !related {
                edges.entry(module.path.clone()).or_default().insert(target);
            }
        }
    }
    // Reachability from each module: a cycle through it is a problem.
    let mut problems = BTreeSet::new();
    for start in edges.keys() {
        let mut seen: BTreeSet<&Vec<String>> = BTreeSet::new();
        let mut stack: Vec<&Vec<String>> = edges[start].iter().collect();
        while let Some(next) = stack.pop() {
            if next == start {
                problems.insert(start.join("::"));
                break;
            }
            if seen.insert(next)
                && let Some(out) = edges.get(next)
            {
                stack.extend(out.iter());
            }
        }
    }
    let on_cycle: Vec<String> = problems.iter().cloned().collect();
    let detail: Vec<String> = edges
        .iter()
        .filter(|(from, _)| on_cycle.contains(&from.join("::")))
        .flat_map(|(from, to)| {
            to.iter()
                .filter(|to| {
                    on_cycle.iter().any(|c| {
                        c.starts_with(&to.join("::")) || to.join("::").starts_with(c.as_str())
                    })
                })
                .map(move |to| format!("  {} -> {}", from.join("::"), to.join("::")))
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "modules on an import cycle:\n{}\nedges among them:\n{}",
            on_cycle.join("\n"),
            detail.join("\n")
        ))
    }
}

#[test]
fn no_two_top_level_modules_depend_on_each_other() {
    let krate = Crate::load();
    let mut edges: BTreeSet<(String, String)> = BTreeSet::new();
    // By layer entry (a top-level module, or a submodule listed as a layer
    // of its own, such as `registry::calls`).
    let unit = |path: &[String]| {
        let parts: Vec<&str> = path.iter().map(String::as_str).collect();
        layer_of(&parts)
    };
    for module in &krate.modules {
        if module.path.is_empty() {
            continue;
        }
        let from = unit(&module.path);
        for path in named_paths(module) {
            let target = krate.target(&path);
            if target.is_empty() {
                continue;
            }
            let to = unit(&target);
            if to != from {
                edges.insert((from.clone(), to));
            }
        }
    }
    let two_way: Vec<String> = edges
        .iter()
        .filter(|(a, b)| a < b && edges.contains(&(b.clone(), a.clone())))
        .map(|(a, b)| format!("{a} <-> {b}"))
        .collect();
    assert!(
        two_way.is_empty(),
        "two-way module dependencies:\n{}",
        two_way.join("\n")
    );
}

#[test]
fn adapters_use_only_the_public_api_of_the_core() {
    let krate = Crate::load();
    let mut problems = BTreeSet::new();
    for module in &krate.modules {
        let own: Vec<&str> = module.path.iter().map(String::as_str).collect();
        let own_layer = layer_of(&own);
        if !ADAPTERS.contains(&own_layer.as_str()) {
            continue;
        }
        for path in named_paths(module) {
            let (prefix, rest) = krate.split(&path);
            let segments: Vec<&str> = prefix.iter().map(String::as_str).collect();
            let target_layer = layer_of(&segments);
            if ADAPTERS.contains(&target_layer.as_str()) {
                continue;
            }
            if !krate.public(&prefix, rest.first().map(String::as_str)) {
                let finding = format!("{} uses `crate::{}`", module.file, path.join("::"));
                if !KNOWN_PRIVATE_USES.contains(&finding.as_str()) {
                    problems.insert(format!("{finding}, which is not public API of the core"));
                }
            }
        }
    }
    // Nor the registry's private state: no `.inner` field access.
    struct InnerAccess(usize);
    impl<'ast> syn::visit::Visit<'ast> for InnerAccess {
        fn visit_expr_field(&mut self, field: &'ast syn::ExprField) {
            if matches!(&field.member, syn::Member::Named(name) if name == "inner") {
                self.0 += 1;
            }
            syn::visit::visit_expr_field(self, field);
        }
    }
    for module in &krate.modules {
        let own: Vec<&str> = module.path.iter().map(String::as_str).collect();
        if !ADAPTERS.contains(&layer_of(&own).as_str()) {
            continue;
        }
        let mut access = InnerAccess(0);
        for item in &module.items {
            syn::visit::Visit::visit_item(&mut access, item);
        }
        if access.0 > 0 {
            problems.insert(format!("{} reaches a private `.inner` field", module.file));
        }
    }
    assert!(
        problems.is_empty(),
        "{}",
        problems.into_iter().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn the_known_exceptions_are_still_true() {
    // An entry that no longer holds must leave its list.
    let krate = Crate::load();
    let mut uses = BTreeSet::new();
    for module in &krate.modules {
        for path in named_paths(module) {
            uses.insert(format!("{} uses `crate::{}`", module.file, path.join("::")));
        }
    }
    let stale: Vec<&&str> = KNOWN_PRIVATE_USES
        .iter()
        .filter(|known| !uses.contains(**known))
        .collect();
    assert!(
        stale.is_empty(),
        "no longer used, remove from KNOWN_PRIVATE_USES: {stale:?}"
    );
}

/// Files are sized by their concept, not by a cap (CONTRIBUTING.md says how
/// to judge): each opens by naming it.
#[test]
fn each_source_file_names_its_concept() {
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

/// ARCHITECTURE.md is true to the code: every path it names exists (a path
/// with a `/` from the repository's root; a bare file name somewhere in the
/// repository), so a move or a rename that leaves it behind fails here.
#[test]
fn architecture_md_names_only_paths_that_exist() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let text = std::fs::read_to_string(repo.join("ARCHITECTURE.md")).unwrap();
    let mut names = BTreeSet::new();
    let mut dirs = vec![repo.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == "target" || name.starts_with('.') {
                continue;
            }
            if entry.path().is_dir() {
                dirs.push(entry.path());
            }
            names.insert(name);
        }
    }
    let extensions = [".rs", ".md", ".toml", ".json", ".js", ".css"];
    let mut missing = Vec::new();
    for (i, piece) in text.split('`').enumerate() {
        // Odd pieces are inside backticks.
        let placeholder = piece.contains(['<', '…', '*', ' ', '(']) || piece.starts_with("//");
        if i % 2 == 0 || placeholder {
            continue;
        }
        let bare_dir = piece
            .strip_suffix('/')
            .is_some_and(|name| !name.contains('/'));
        if bare_dir {
            if !names.contains(piece.trim_end_matches('/')) {
                missing.push(piece.to_owned());
            }
        } else if piece.contains('/') && !piece.starts_with("..") && !piece.contains("::") {
            if !repo.join(piece.trim_end_matches('/')).exists() {
                missing.push(piece.to_owned());
            }
        } else if extensions.iter().any(|ext| piece.ends_with(ext)) && !names.contains(piece) {
            missing.push(piece.to_owned());
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names paths that do not exist: {missing:?}"
    );
}

/// The registry's state has walls: the fields of its services handle, its
/// state and the `Registry` itself are visible only inside `registry/`
/// (the compiler then refuses any field access from another layer); the
/// pipeline, snapshots and explanations use the handle's methods.
#[test]
fn the_registry_state_is_private_to_the_registry() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/registry");
    let walled = [
        "Services",
        "State",
        "Recent",
        "Registry",
        "Registration",
        "Tombstone",
    ];
    let mut problems = Vec::new();
    let mut found = BTreeSet::new();
    for file in ["mod.rs", "state.rs", "registration.rs"] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let ast = syn::parse_file(&text).unwrap();
        for item in &ast.items {
            let syn::Item::Struct(item) = item else {
                continue;
            };
            let name = item.ident.to_string();
            if !walled.contains(&name.as_str()) {
                continue;
            }
            found.insert(name.clone());
            for field in &item.fields {
                // `pub(super)` in `registry/mod.rs` reaches the whole crate.
                let outside = match &field.vis {
                    syn::Visibility::Inherited => false,
                    syn::Visibility::Restricted(r) => {
                        let own = r.path.is_ident("self");
                        let within = r.path.is_ident("super") && file != "mod.rs";
                        !(own || within)
                    }
                    syn::Visibility::Public(_) => true,
                };
                if outside {
                    let field = field
                        .ident
                        .as_ref()
                        .map_or_else(|| "(tuple field)".to_owned(), ToString::to_string);
                    problems.push(format!(
                        "registry/{file}: {name}.{field} is visible outside registry/"
                    ));
                }
            }
        }
    }
    assert_eq!(
        found.len(),
        walled.len(),
        "found the walled structs: {found:?}"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// `impl Registry` lives in `registry/`: a reader (or a tool) finds every
/// method of the registry there.
#[test]
fn every_method_of_the_registry_is_in_the_registry_folder() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let mut outside = Vec::new();
    for file in files {
        if file.starts_with(root.join("registry")) {
            continue;
        }
        let ast = syn::parse_file(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let mut impls = Vec::new();
        collect_impls(&ast.items, &mut impls);
        if impls.iter().any(|ty| ty == "Registry") {
            outside.push(file.strip_prefix(&root).unwrap().display().to_string());
        }
    }
    assert!(
        outside.is_empty(),
        "impl Registry outside registry/: {outside:?}"
    );
}

/// The self types of the inherent impls in `items` (inline modules too).
fn collect_impls(items: &[syn::Item], out: &mut Vec<String>) {
    for item in items {
        match item {
            syn::Item::Impl(i) if i.trait_.is_none() => {
                if let syn::Type::Path(path) = &*i.self_ty
                    && let Some(last) = path.path.segments.last()
                {
                    out.push(last.ident.to_string());
                }
            }
            syn::Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    collect_impls(inner, out);
                }
            }
            _ => {}
        }
    }
}
