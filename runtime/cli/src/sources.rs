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

use crate::cargo::ScanRoot;

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

/// The attributes that declare reach.
const AGENT_ATTRIBUTES: [&str; 6] = [
    "agent_component",
    "agent_procedure",
    "agent_schema",
    "reference",
    "action",
    "observation",
];

/// Attributes that place code at link level.
const LINK_LEVEL: [&str; 3] = ["no_mangle", "export_name", "link_section"];

fn last_segment(path: &syn::Path) -> String {
    path.segments
        .last()
        .map(|segment| segment.ident.to_string())
        .unwrap_or_default()
}

fn digest(tokens: &impl ToTokens) -> String {
    let text = tokens.to_token_stream().to_string();
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("{hash:016x}")
}

/// A `cfg_attr`'s predicate and the attributes it applies.
fn cfg_attr_parts(attr: &Attribute) -> Option<(String, Vec<syn::Meta>)> {
    if !attr.path().is_ident("cfg_attr") {
        return None;
    }
    let parsed = attr.parse_args_with(|input: syn::parse::ParseStream<'_>| {
        let predicate: syn::Meta = input.parse()?;
        input.parse::<syn::Token![,]>()?;
        let metas =
            syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated(input)?;
        Ok((predicate, metas.into_iter().collect::<Vec<_>>()))
    });
    parsed
        .ok()
        .map(|(predicate, metas)| (predicate.to_token_stream().to_string(), metas))
}

/// Whether a meta names an agent attribute, or a `cfg_attr` holding one.
fn is_agent(meta: &syn::Meta) -> bool {
    AGENT_ATTRIBUTES.contains(&last_segment(meta.path()).as_str())
}

/// The item's own `#[cfg(…)]` conditions.
fn cfgs(attrs: &[Attribute]) -> Vec<String> {
    attrs
        .iter()
        .filter_map(|attr| match &attr.meta {
            syn::Meta::List(list) if attr.path().is_ident("cfg") => Some(list.tokens.to_string()),
            _ => None,
        })
        .collect()
}

/// The `cfg_attr` predicates that apply an agent attribute.
fn agent_cfg_attrs(attrs: &[Attribute]) -> Vec<String> {
    attrs
        .iter()
        .filter_map(cfg_attr_parts)
        .filter(|(_, metas)| metas.iter().any(is_agent))
        .map(|(predicate, _)| predicate)
        .collect()
}

/// Whether the item carries agent attribute `name` (directly, renamed on
/// import — any path ending in a name the scan was told is an alias — or
/// inside a `cfg_attr`).
fn has_agent(attrs: &[Attribute], name: &str, aliases: &[(String, String)]) -> bool {
    let names = |candidate: &str| {
        candidate == name
            || aliases
                .iter()
                .any(|(alias, target)| alias == candidate && target == name)
    };
    attrs.iter().any(|attr| {
        names(&last_segment(attr.path()))
            || cfg_attr_parts(attr)
                .is_some_and(|(_, metas)| metas.iter().any(|m| names(&last_segment(m.path()))))
    })
}

/// `type = "…"` or `id = "…"` in the attribute `name` (or an alias of it),
/// or in a `cfg_attr` applying it.
fn declared_name(
    attrs: &[Attribute],
    name: &str,
    key: &str,
    aliases: &[(String, String)],
) -> String {
    attrs
        .iter()
        .find_map(|attr| {
            let text = attr.meta.to_token_stream().to_string();
            let head = last_segment(attr.path());
            let named = head == name
                || aliases
                    .iter()
                    .any(|(alias, target)| *alias == head && target == name)
                || attr.path().is_ident("cfg_attr") && text.contains(name);
            if !named {
                return None;
            }
            let after = text.split(&format!("{key} =")).nth(1)?;
            let start = after.find('"')? + 1;
            let rest = after.get(start..)?;
            Some(rest.get(..rest.find('"')?)?.to_owned())
        })
        .unwrap_or_default()
}

/// Link-level attributes among `attrs`, plainly or inside `unsafe(…)`.
fn link_level(attrs: &[Attribute]) -> Option<&'static str> {
    attrs.iter().find_map(|attr| {
        let text = match &attr.meta {
            syn::Meta::List(list) if attr.path().is_ident("unsafe") => list.tokens.to_string(),
            meta => last_segment(meta.path()),
        };
        LINK_LEVEL
            .iter()
            .copied()
            .find(|word| text.starts_with(word))
    })
}

fn joined(conditions: &[String]) -> String {
    match conditions {
        [] => String::new(),
        [one] => one.clone(),
        many => format!("all({})", many.join(", ")),
    }
}

/// Conditions that only test builds have: nothing under them ships.
fn test_only(conditions: &[String]) -> bool {
    conditions.iter().any(|condition| condition == "test")
}

struct Visitor<'a> {
    label: Option<&'a str>,
    file: String,
    /// The directory a `mod name;` here resolves in.
    child_dir: PathBuf,
    /// The directory of the current file (for `#[path]` and `include!`).
    dir: PathBuf,
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

    /// Runs `visit` with the item's `#[cfg]` pushed.
    fn within(&mut self, attrs: &[Attribute], visit: impl FnOnce(&mut Self)) {
        let pushed = cfgs(attrs);
        let depth = self.cfg.len();
        self.cfg.extend(pushed);
        visit(self);
        self.cfg.truncate(depth);
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
            // `#[cfg_attr(pred, path = "…")]`: that file, under `pred`.
            if let Some((predicate, metas)) = cfg_attr_parts(attr) {
                for meta in metas {
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
                let extra = agent_cfg_attrs(&i.attrs);
                this.declared(format!("component {name}"), &extra, i);
                // References (and capabilities) under `cfg_attr`: the build
                // shows one variant; each is recorded with its text.
                for attr in &i.attrs {
                    if let Some((predicate, metas)) = cfg_attr_parts(attr)
                        && metas.iter().any(is_agent)
                    {
                        this.declared(
                            format!("component {name}: #[cfg_attr] variant"),
                            &[predicate],
                            attr,
                        );
                    }
                }
                for impl_item in &i.items {
                    if let syn::ImplItem::Fn(method) = impl_item {
                        let extra = agent_cfg_attrs(&method.attrs);
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
                let extra = agent_cfg_attrs(&i.attrs);
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
                } else if name == "global_asm" {
                    this.link("global_asm!", "");
                } else if name == "include" {
                    if let Ok(lit) = syn::parse2::<syn::LitStr>(i.mac.tokens.clone()) {
                        let cfg = this.cfg.clone();
                        this.files.push((this.dir.join(lit.value()), cfg));
                    } else if !this.cfg.is_empty() {
                        let entry = (name, joined(&this.cfg), this.file.clone(), digest(i));
                        this.invocations.push(entry);
                    }
                } else {
                    // Any other item macro: a generator, if it is one.
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

fn read(path: &Path) -> Option<syn::File> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > 8 << 20 {
        return None;
    }
    syn::parse_file(&std::fs::read_to_string(path).ok()?).ok()
}

/// Scans one crate tree from its roots.
fn scan_root(root: &ScanRoot, scan: &mut Scan) {
    let base = std::fs::canonicalize(&root.dir).unwrap_or_else(|_| root.dir.clone());
    let mut queue: Vec<(PathBuf, Vec<String>)> = root
        .entry_points
        .iter()
        .map(|path| (path.clone(), Vec::new()))
        .collect();
    let mut parsed: Vec<(PathBuf, Vec<String>, syn::File)> = Vec::new();
    let mut seen: BTreeSet<(PathBuf, Vec<String>)> = BTreeSet::new();
    let mut aliases = Vec::new();
    let mut invocations = Vec::new();
    let mut generators = Vec::new();
    let roots: Vec<PathBuf> = root
        .entry_points
        .iter()
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .collect();
    // Files are visited as they are found; aliases from files read later
    // apply on a second pass over what was parsed.
    while let Some((path, cfg)) = queue.pop() {
        let Ok(path) = std::fs::canonicalize(&path) else {
            continue;
        };
        if !seen.insert((path.clone(), cfg.clone())) || seen.len() > 10_000 {
            continue;
        }
        let Some(file) = read(&path) else {
            continue;
        };
        aliases_in(&file, &mut aliases);
        let mut found = Vec::new();
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        let root_like = stem == "mod" || roots.contains(&path);
        let child_dir = if root_like {
            dir.clone()
        } else {
            dir.join(stem)
        };
        let mut cfg = cfg;
        cfg.extend(cfgs(&file.attrs));
        let relative = path
            .strip_prefix(&base)
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .unwrap_or_else(|_| path.to_string_lossy().into_owned());
        let mut scratch = Scan::default();
        let mut visitor = Visitor {
            label: root.label.as_deref(),
            file: relative,
            child_dir,
            dir,
            cfg: cfg.clone(),
            files: &mut found,
            aliases: &[],
            invocations: &mut Vec::new(),
            generators: &mut Vec::new(),
            scan: &mut scratch,
        };
        visitor.visit_file(&file);
        queue.extend(found);
        parsed.push((path, cfg, file));
    }
    for (path, cfg, file) in &parsed {
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        let root_like = stem == "mod" || roots.contains(path);
        let relative = path
            .strip_prefix(&base)
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .unwrap_or_else(|_| path.to_string_lossy().into_owned());
        Visitor {
            label: root.label.as_deref(),
            file: relative,
            child_dir: if root_like {
                dir.clone()
            } else {
                dir.join(stem)
            },
            dir,
            cfg: cfg.clone(),
            files: &mut Vec::new(),
            aliases: &aliases,
            invocations: &mut invocations,
            generators: &mut generators,
            scan,
        }
        .visit_file(file);
    }
    // A generator invoked under `#[cfg]`, or a file included under one
    // that could not be read: what it declares is unknown until built.
    for (name, condition, file, digest) in invocations {
        if (name == "include" || generators.contains(&name))
            && condition != "test"
            && !condition.is_empty()
        {
            let key = match &root.label {
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
}

/// Scans the package and its local dependencies.
pub(crate) fn scan(roots: &[ScanRoot]) -> Scan {
    let mut scan = Scan::default();
    for root in roots {
        scan_root(root, &mut scan);
    }
    scan.gated.sort();
    scan.gated.dedup();
    scan.link_level.sort();
    scan.link_level.dedup();
    scan
}
