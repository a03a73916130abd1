//! What the build cannot show, read from source: declarations under
//! `#[cfg]` or `#[cfg_attr]` (a component, a procedure, a reference, a
//! schema field or variant, a module, function or `const` block holding
//! them, a generator macro or an `include!`), and code that runs outside
//! what the gate checks (unmangled or exported symbols, link sections such
//! as constructors, `global_asm!`, and macros that emit them). The package
//! and its local dependencies (path dependencies, workspace members) are
//! read from their crate roots as cargo describes them. The macro records
//! capabilities under `#[cfg]` inside a component it expands; a `#[cfg]` on
//! the item itself, or around it, removes it before any macro runs, so only
//! the source shows it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use quote::ToTokens;
use syn::visit::Visit;
use syn::{Attribute, Item};

use crate::metadata::ScanRoot;

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
}

use crate::source_attrs::{
    AGENT_ATTRIBUTES, LINK_LEVEL, agent_cfg_attrs, cfg_attr_metas, cfgs, declared_name, digest,
    has_agent, is_agent, joined, last_segment, link_level, test_only,
};

struct Visitor<'a> {
    label: Option<&'a str>,
    file: String,
    /// The directory a `mod name;` here resolves in.
    child_dir: PathBuf,
    /// The directory `#[path]` resolves in (the module's).
    dir: PathBuf,
    /// The directory of the current file (`include!` resolves in it).
    file_dir: PathBuf,
    cfg: Vec<String>,
    /// Files to read next, each with the conditions on the way.
    files: &'a mut Vec<(PathBuf, Vec<String>)>,
    /// `use … as alias` of agent attributes: (alias, attribute).
    aliases: &'a [(String, String)],
    /// Item macros invoked under `#[cfg]`: (name, condition, file, digest).
    invocations: &'a mut Vec<(String, String, String, String)>,
    /// `macro_rules!` that declare reach, and those at link level.
    generators: &'a mut Vec<String>,
    scan: &'a mut Scan,
}

impl Visitor<'_> {
    fn key(&self, key: String) -> String {
        match self.label {
            Some(label) => format!("{key} (crate {label})"),
            None => key,
        }
    }

    fn declared(&mut self, key: String, extra: &[String], item: &impl ToTokens) {
        let mut all = self.cfg.clone();
        all.extend_from_slice(extra);
        if all.is_empty() || test_only(&all) {
            return;
        }
        let key = self.key(key);
        self.scan.gated.push(GatedDeclaration {
            key,
            condition: joined(&all),
            file: self.file.clone(),
            digest: digest(item),
        });
    }

    fn link(&mut self, what: &str, name: &str) {
        let line = match self.label {
            Some(label) => format!("{label}: {}: {what} {name}", self.file),
            None => format!("{}: {what} {name}", self.file),
        };
        self.scan.link_level.push(line);
    }

    /// Runs `visit` with the item's `#[cfg]` pushed (each condition once).
    fn within(&mut self, attrs: &[Attribute], visit: impl FnOnce(&mut Self)) {
        let pushed: Vec<String> = cfgs(attrs)
            .into_iter()
            .filter(|c| !self.cfg.contains(c))
            .collect();
        let depth = self.cfg.len();
        self.cfg.extend(pushed);
        visit(self);
        self.cfg.truncate(depth);
    }

    /// `mod name;` written inside macro tokens (a `macro_rules!` body or an
    /// invocation): the files it can name are read too.
    fn modules_in(&mut self, tokens: &proc_macro2::TokenStream) {
        let trees: Vec<proc_macro2::TokenTree> = tokens.clone().into_iter().collect();
        for (i, tree) in trees.iter().enumerate() {
            match tree {
                proc_macro2::TokenTree::Group(group) => self.modules_in(&group.stream()),
                proc_macro2::TokenTree::Ident(ident) if ident == "mod" => {
                    if let (
                        Some(proc_macro2::TokenTree::Ident(name)),
                        Some(proc_macro2::TokenTree::Punct(semi)),
                    ) = (trees.get(i + 1), trees.get(i + 2))
                        && semi.as_char() == ';'
                    {
                        let name = name.to_string();
                        let cfg = self.cfg.clone();
                        self.files
                            .push((self.child_dir.join(format!("{name}.rs")), cfg.clone()));
                        self.files
                            .push((self.child_dir.join(&name).join("mod.rs"), cfg));
                    }
                }
                _ => {}
            }
        }
    }

    fn fields(&mut self, ty: &syn::Ident, fields: &syn::Fields, prefix: &str) {
        for field in fields {
            let own = cfgs(&field.attrs);
            if own.is_empty() {
                continue;
            }
            let name = field
                .ident
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default();
            self.declared(format!("schema field {ty}.{prefix}{name}"), &own, field);
        }
    }

    fn module_file(&mut self, module: &syn::ItemMod) {
        let name = module.ident.to_string();
        let mut candidates: Vec<(PathBuf, Vec<String>)> = Vec::new();
        for attr in &module.attrs {
            if let syn::Meta::NameValue(pair) = &attr.meta
                && attr.path().is_ident("path")
                && let syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(lit),
                    ..
                }) = &pair.value
            {
                candidates.push((self.dir.join(lit.value()), Vec::new()));
            }
        }
        // `#[cfg_attr(pred, path = "…")]`: that file, under `pred`.
        for (predicate, meta) in cfg_attr_metas(&module.attrs) {
            if let syn::Meta::NameValue(pair) = meta
                && pair.path.is_ident("path")
                && let syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(lit),
                    ..
                }) = &pair.value
            {
                candidates.push((self.dir.join(lit.value()), vec![predicate.clone()]));
            }
        }
        candidates.push((self.child_dir.join(format!("{name}.rs")), Vec::new()));
        candidates.push((self.child_dir.join(&name).join("mod.rs"), Vec::new()));
        for (path, extra) in candidates {
            let mut cfg = self.cfg.clone();
            cfg.extend(extra);
            self.files.push((path, cfg));
        }
    }
}

impl<'ast> Visit<'ast> for Visitor<'_> {
    fn visit_impl_item_fn(&mut self, method: &'ast syn::ImplItemFn) {
        if let Some(what) = link_level(&method.attrs) {
            self.link(&format!("#[{what}]"), &format!("fn {}", method.sig.ident));
        }
        syn::visit::visit_impl_item_fn(self, method);
    }

    fn visit_item(&mut self, item: &'ast Item) {
        let attrs: &[Attribute] = match item {
            Item::Const(i) => &i.attrs,
            Item::Enum(i) => &i.attrs,
            Item::Fn(i) => &i.attrs,
            Item::Impl(i) => &i.attrs,
            Item::Macro(i) => &i.attrs,
            Item::Mod(i) => &i.attrs,
            Item::Static(i) => &i.attrs,
            Item::Struct(i) => &i.attrs,
            Item::Use(i) => &i.attrs,
            _ => &[],
        };
        if let Some(what) = link_level(attrs) {
            let name = match item {
                Item::Fn(i) => format!("fn {}", i.sig.ident),
                Item::Static(i) => format!("static {}", i.ident),
                _ => "item".to_owned(),
            };
            self.link(&format!("#[{what}]"), &name);
        }
        self.within(attrs, |this| match item {
            Item::Impl(i) if has_agent(&i.attrs, "agent_component", this.aliases) => {
                let name = declared_name(&i.attrs, "agent_component", "type", this.aliases);
                let extra = agent_cfg_attrs(&i.attrs, "agent_component", this.aliases);
                this.declared(format!("component {name}"), &extra, i);
                // References (and other agent attributes) under `cfg_attr`:
                // the build shows one variant; each is recorded with its text.
                for (predicate, meta) in cfg_attr_metas(&i.attrs) {
                    if is_agent(&meta) && last_segment(meta.path()) != "agent_component" {
                        this.declared(
                            format!("component {name}: #[cfg_attr] variant"),
                            &[predicate],
                            &meta,
                        );
                    }
                }
                for impl_item in &i.items {
                    if let syn::ImplItem::Fn(method) = impl_item {
                        let extra: Vec<String> = cfg_attr_metas(&method.attrs)
                            .into_iter()
                            .filter(|(_, meta)| is_agent(meta))
                            .map(|(predicate, _)| predicate)
                            .collect();
                        if !extra.is_empty() {
                            let key = format!("component {name}: method {}", method.sig.ident);
                            this.declared(key, &extra, method);
                        }
                    }
                }
                syn::visit::visit_item_impl(this, i);
            }
            Item::Struct(i) if has_agent(&i.attrs, "agent_procedure", this.aliases) => {
                let name = declared_name(&i.attrs, "agent_procedure", "id", this.aliases);
                let extra = agent_cfg_attrs(&i.attrs, "agent_procedure", this.aliases);
                this.declared(format!("procedure {name}"), &extra, i);
                this.fields(&i.ident, &i.fields, "");
            }
            Item::Struct(i) if has_agent(&i.attrs, "agent_schema", this.aliases) => {
                this.fields(&i.ident, &i.fields, "");
            }
            Item::Enum(i) if has_agent(&i.attrs, "agent_schema", this.aliases) => {
                for variant in &i.variants {
                    let own = cfgs(&variant.attrs);
                    if !own.is_empty() {
                        this.declared(
                            format!("schema variant {}.{}", i.ident, variant.ident),
                            &own,
                            variant,
                        );
                    }
                    this.fields(&i.ident, &variant.fields, &format!("{}.", variant.ident));
                }
            }
            Item::Mod(module) => match &module.content {
                Some(_) => {
                    let saved = (this.dir.clone(), this.child_dir.clone());
                    this.child_dir = this.child_dir.join(module.ident.to_string());
                    this.dir = this.child_dir.clone();
                    syn::visit::visit_item_mod(this, module);
                    (this.dir, this.child_dir) = saved;
                }
                None => this.module_file(module),
            },
            Item::Macro(i) => {
                let name = last_segment(&i.mac.path);
                let body = i.mac.tokens.to_string();
                if name == "macro_rules" {
                    let defined = i
                        .ident
                        .as_ref()
                        .map(ToString::to_string)
                        .unwrap_or_default();
                    if AGENT_ATTRIBUTES.iter().any(|a| body.contains(a)) {
                        this.generators.push(defined.clone());
                        // Conditions inside the generator's own body: what
                        // it declares depends on the build wherever it runs.
                        if body.contains("cfg") {
                            let condition = "#[cfg] inside the macro's body".to_owned();
                            this.declared(
                                format!("declarations generated by {defined}!"),
                                &[condition],
                                i,
                            );
                        }
                    }
                    if LINK_LEVEL.iter().any(|a| body.contains(a)) || body.contains("global_asm") {
                        this.link("macro_rules! emitting link-level code:", &defined);
                    }
                    this.modules_in(&i.mac.tokens);
                } else if name == "global_asm" {
                    this.link("global_asm!", "");
                } else if name == "include" {
                    // Relative to the file it is written in, as rustc reads it.
                    if let Ok(lit) = syn::parse2::<syn::LitStr>(i.mac.tokens.clone()) {
                        let cfg = this.cfg.clone();
                        this.files.push((this.file_dir.join(lit.value()), cfg));
                    } else {
                        let mut condition = this.cfg.clone();
                        condition.push("a path computed at build time, not read".to_owned());
                        this.declared("file included by include!".to_owned(), &condition, i);
                    }
                } else {
                    // Any other item macro: a generator, if it is one; what
                    // its tokens hold at link level shows.
                    if LINK_LEVEL.iter().any(|a| body.contains(a)) || body.contains("global_asm") {
                        this.link(&format!("{name}! invoked with link-level code"), "");
                    }
                    this.modules_in(&i.mac.tokens);
                    let entry = (name, joined(&this.cfg), this.file.clone(), digest(i));
                    this.invocations.push(entry);
                }
            }
            Item::Fn(i) => syn::visit::visit_item_fn(this, i),
            Item::Const(i) => syn::visit::visit_item_const(this, i),
            Item::Static(i) => syn::visit::visit_item_static(this, i),
            Item::Impl(i) => syn::visit::visit_item_impl(this, i),
            _ => {}
        });
    }
}

/// `use path::agent_component as alias;` anywhere in `file`: (alias, name).
fn aliases_in(file: &syn::File, out: &mut Vec<(String, String)>) {
    struct Uses<'a>(&'a mut Vec<(String, String)>);
    impl<'ast> Visit<'ast> for Uses<'_> {
        fn visit_use_rename(&mut self, rename: &'ast syn::UseRename) {
            let target = rename.ident.to_string();
            if AGENT_ATTRIBUTES.contains(&target.as_str()) {
                self.0.push((rename.rename.to_string(), target));
            }
        }
    }
    Uses(out).visit_file(file);
}

/// At most this much source is read per scan (bytes).
const MAX_SOURCE_BYTES: u64 = 64 << 20;
/// At most this many files are read per scan.
const MAX_FILES: usize = 10_000;

/// What one scan collects across crate trees: generators defined in one
/// crate may be invoked in another.
#[derive(Default)]
struct Shared {
    invocations: Vec<(String, String, String, String, Option<String>)>,
    generators: Vec<String>,
    bytes: u64,
    files: usize,
}

fn read(path: &Path, shared: &mut Shared) -> Option<syn::File> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || shared.bytes + meta.len() > MAX_SOURCE_BYTES || shared.files >= MAX_FILES
    {
        return None;
    }
    shared.bytes += meta.len();
    shared.files += 1;
    syn::parse_file(&std::fs::read_to_string(path).ok()?).ok()
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

/// Scans one crate tree from its roots. Each file is read once, under the
/// conditions of the first way to it (a file reachable several ways, or
/// including itself, is not read again).
fn scan_root(root: &ScanRoot, scan: &mut Scan, shared: &mut Shared) {
    let base = std::fs::canonicalize(&root.dir).unwrap_or_else(|_| root.dir.clone());
    let roots: Vec<PathBuf> = root
        .entry_points
        .iter()
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .collect();
    let mut queue: Vec<(PathBuf, Vec<String>)> = roots
        .iter()
        .map(|path| (path.clone(), Vec::new()))
        .collect();
    let mut parsed: Vec<(PathBuf, Vec<String>, syn::File)> = Vec::new();
    let mut seen: BTreeSet<PathBuf> = BTreeSet::new();
    let mut aliases = Vec::new();
    let relative = |path: &Path| {
        path.strip_prefix(&base)
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .unwrap_or_else(|_| path.to_string_lossy().into_owned())
    };
    // First, every file the tree reaches (aliases apply to all of them).
    while let Some((path, cfg)) = queue.pop() {
        let Ok(path) = std::fs::canonicalize(&path) else {
            continue;
        };
        if !seen.insert(path.clone()) {
            continue;
        }
        let Some(file) = read(&path, shared) else {
            continue;
        };
        aliases_in(&file, &mut aliases);
        let (file_dir, child_dir) = child_dir_of(&path, &roots);
        let mut cfg = cfg;
        cfg.extend(
            cfgs(&file.attrs)
                .into_iter()
                .filter(|c| !cfg.contains(c))
                .collect::<Vec<_>>(),
        );
        let mut found = Vec::new();
        Visitor {
            label: root.label.as_deref(),
            file: relative(&path),
            child_dir,
            dir: file_dir.clone(),
            file_dir,
            cfg: cfg.clone(),
            files: &mut found,
            aliases: &[],
            invocations: &mut Vec::new(),
            generators: &mut Vec::new(),
            scan: &mut Scan::default(),
        }
        .visit_file(&file);
        queue.extend(found);
        parsed.push((path, cfg, file));
    }
    let mut invocations = Vec::new();
    for (path, cfg, file) in &parsed {
        let (file_dir, child_dir) = child_dir_of(path, &roots);
        Visitor {
            label: root.label.as_deref(),
            file: relative(path),
            child_dir,
            dir: file_dir.clone(),
            file_dir,
            cfg: cfg.clone(),
            files: &mut Vec::new(),
            aliases: &aliases,
            invocations: &mut invocations,
            generators: &mut shared.generators,
            scan,
        }
        .visit_file(file);
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
pub(crate) fn scan(roots: &[ScanRoot]) -> Scan {
    let mut scan = Scan::default();
    let mut shared = Shared::default();
    for root in roots {
        scan_root(root, &mut scan, &mut shared);
    }
    // A generator invoked under `#[cfg]` (wherever it is defined): what it
    // declares is unknown until it is built.
    for (name, condition, file, digest, label) in shared.invocations {
        if shared.generators.contains(&name) && !condition.is_empty() && condition != "test" {
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
    scan.gated.truncate(10_000);
    scan.link_level.sort();
    scan.link_level.dedup();
    scan
}
