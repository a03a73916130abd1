//! What the build cannot show, read from the package's own source files:
//! declarations under `#[cfg]` (a component, a procedure, or a module
//! holding them) and code that runs outside what the gate checks
//! (unmangled or exported symbols, link sections such as constructors,
//! `global_asm!`). The macro records capabilities under `#[cfg]` inside a
//! component it expands; a `#[cfg]` on the item itself, or on a module
//! around it, removes it before any macro runs, so only the source shows it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use syn::{Attribute, Item};

/// A declaration under `#[cfg]`, found in the source.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct GatedDeclaration {
    /// The declaration key (`component <type>`, `procedure <id>`).
    pub(crate) key: String,
    /// Every condition on the way to it, joined with `all(…)` when several.
    pub(crate) condition: String,
    /// The file, relative to the package.
    pub(crate) file: String,
}

/// What the source shows.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    /// Declarations under `#[cfg]`.
    pub(crate) gated: Vec<GatedDeclaration>,
    /// Code at link level (`file: what`).
    pub(crate) link_level: Vec<String>,
}

fn is_named(attr: &Attribute, name: &str) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|segment| segment.ident == name)
}

/// The `#[cfg(…)]` conditions of `attrs`, and the `cfg_attr(pred, …)`
/// predicates guarding an agent attribute.
fn conditions(attrs: &[Attribute]) -> Vec<String> {
    attrs
        .iter()
        .filter_map(|attr| match &attr.meta {
            syn::Meta::List(list) if attr.path().is_ident("cfg") => Some(list.tokens.to_string()),
            syn::Meta::List(list) if attr.path().is_ident("cfg_attr") => {
                let text = list.tokens.to_string();
                let agent = AGENT_ATTRIBUTES.iter().any(|name| text.contains(name));
                agent.then(|| first_argument(&list.tokens))
            }
            _ => None,
        })
        .collect()
}

/// The attributes that declare reach.
const AGENT_ATTRIBUTES: [&str; 4] = [
    "agent_component",
    "agent_procedure",
    "agent_schema",
    "reference",
];

/// The tokens before the first top-level comma (a `cfg_attr` predicate).
fn first_argument(tokens: &proc_macro2::TokenStream) -> String {
    let mut out = proc_macro2::TokenStream::new();
    for tree in tokens.clone() {
        if matches!(&tree, proc_macro2::TokenTree::Punct(p) if p.as_char() == ',') {
            break;
        }
        out.extend([tree]);
    }
    out.to_string()
}

/// Conditions that only test builds have: nothing under them ships.
fn test_only(conditions: &[String]) -> bool {
    conditions.iter().any(|condition| condition == "test")
}

/// `type = "…"` or `id = "…"` in an agent attribute's arguments.
fn declared_name(attrs: &[Attribute], macro_name: &str, key: &str) -> Option<String> {
    attrs.iter().find_map(|attr| {
        let text = match &attr.meta {
            syn::Meta::List(list)
                if is_named(attr, macro_name) || attr.path().is_ident("cfg_attr") =>
            {
                list.tokens.to_string()
            }
            _ => return None,
        };
        if !text.contains(macro_name) && !is_named(attr, macro_name) {
            return None;
        }
        let after = text.split(&format!("{key} =")).nth(1)?;
        let start = after.find('"')? + 1;
        let rest = after.get(start..)?;
        Some(rest.get(..rest.find('"')?)?.to_owned())
    })
}

fn has_agent(attrs: &[Attribute], name: &str) -> bool {
    attrs.iter().any(|attr| {
        is_named(attr, name)
            || (attr.path().is_ident("cfg_attr")
                && matches!(&attr.meta, syn::Meta::List(list) if list.tokens.to_string().contains(name)))
    })
}

/// Link-level attributes: `no_mangle`, `export_name`, `link_section`,
/// written plainly or inside `unsafe(…)`.
fn link_level(attrs: &[Attribute]) -> Option<String> {
    attrs.iter().find_map(|attr| {
        let text = match &attr.meta {
            syn::Meta::List(list) if attr.path().is_ident("unsafe") => list.tokens.to_string(),
            meta => quote_path(meta),
        };
        ["no_mangle", "export_name", "link_section"]
            .iter()
            .find(|word| text.starts_with(*word))
            .map(|word| format!("#[{word}]"))
    })
}

fn quote_path(meta: &syn::Meta) -> String {
    meta.path()
        .segments
        .last()
        .map(|segment| segment.ident.to_string())
        .unwrap_or_default()
}

fn joined(conditions: &[String]) -> String {
    match conditions {
        [one] => one.clone(),
        many => format!("all({})", many.join(", ")),
    }
}

struct Visitor<'a> {
    file: &'a str,
    /// Item macros invoked under `#[cfg]`: (name, condition, file).
    invocations: &'a mut Vec<(String, String, String)>,
    /// `macro_rules!` whose body declares reach.
    generators: &'a mut Vec<String>,
    dir: PathBuf,
    child_dir: PathBuf,
    modules: &'a mut Vec<(PathBuf, Vec<String>)>,
    scan: &'a mut Scan,
}

impl Visitor<'_> {
    /// Fields of a schema type under `#[cfg]`: the input an agent may send
    /// differs between builds.
    fn fields(&mut self, ty: &syn::Ident, fields: &syn::Fields, cfg: &[String]) {
        for field in fields {
            let own = conditions(&field.attrs);
            if own.is_empty() {
                continue;
            }
            let name = field
                .ident
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default();
            let mut all = cfg.to_vec();
            all.extend(own);
            self.declared(format!("schema field {ty}.{name}"), &all);
        }
    }

    fn items(&mut self, items: &[Item], cfg: &[String]) {
        for item in items {
            self.item(item, cfg);
        }
    }

    fn declared(&mut self, key: String, cfg: &[String]) {
        if !cfg.is_empty() && !test_only(cfg) {
            self.scan.gated.push(GatedDeclaration {
                key,
                condition: joined(cfg),
                file: self.file.to_owned(),
            });
        }
    }

    fn item(&mut self, item: &Item, cfg: &[String]) {
        let attrs: &[Attribute] = match item {
            Item::Impl(item) => &item.attrs,
            Item::Struct(item) => &item.attrs,
            Item::Mod(item) => &item.attrs,
            Item::Fn(item) => &item.attrs,
            Item::Static(item) => &item.attrs,
            Item::Macro(item) => &item.attrs,
            _ => return,
        };
        let mut here = cfg.to_vec();
        here.extend(conditions(attrs));
        if let Some(what) = link_level(attrs) {
            self.scan.link_level.push(format!("{}: {what}", self.file));
        }
        match item {
            Item::Impl(item) if has_agent(&item.attrs, "agent_component") => {
                let name =
                    declared_name(&item.attrs, "agent_component", "type").unwrap_or_default();
                self.declared(format!("component {name}"), &here);
            }
            Item::Struct(item) if has_agent(&item.attrs, "agent_procedure") => {
                let name = declared_name(&item.attrs, "agent_procedure", "id").unwrap_or_default();
                self.declared(format!("procedure {name}"), &here);
                self.fields(&item.ident, &item.fields, &here);
            }
            Item::Struct(item) if has_agent(&item.attrs, "agent_schema") => {
                self.fields(&item.ident, &item.fields, &here);
            }
            Item::Macro(item) if item.mac.path.is_ident("macro_rules") => {
                let body = item.mac.tokens.to_string();
                if AGENT_ATTRIBUTES.iter().any(|name| body.contains(name))
                    && let Some(ident) = &item.ident
                {
                    self.generators.push(ident.to_string());
                }
            }
            Item::Macro(item) if !here.is_empty() && !item.mac.path.is_ident("global_asm") => {
                let name = item
                    .mac
                    .path
                    .segments
                    .last()
                    .map(|segment| segment.ident.to_string())
                    .unwrap_or_default();
                self.invocations
                    .push((name, joined(&here), self.file.to_owned()));
            }
            Item::Mod(module) => match &module.content {
                Some((_, items)) => {
                    let saved = (self.dir.clone(), self.child_dir.clone());
                    self.child_dir = self.child_dir.join(module.ident.to_string());
                    self.dir = self.child_dir.clone();
                    self.items(items, &here);
                    (self.dir, self.child_dir) = saved;
                }
                None => {
                    let path = module.attrs.iter().find_map(|attr| match &attr.meta {
                        syn::Meta::NameValue(pair) if attr.path().is_ident("path") => {
                            match &pair.value {
                                syn::Expr::Lit(syn::ExprLit {
                                    lit: syn::Lit::Str(lit),
                                    ..
                                }) => Some(self.dir.join(lit.value())),
                                _ => None,
                            }
                        }
                        _ => None,
                    });
                    let name = module.ident.to_string();
                    let candidates = match path {
                        Some(path) => vec![path],
                        None => vec![
                            self.child_dir.join(format!("{name}.rs")),
                            self.child_dir.join(&name).join("mod.rs"),
                        ],
                    };
                    for candidate in candidates {
                        self.modules.push((candidate, here.clone()));
                    }
                }
            },
            Item::Macro(item) if item.mac.path.is_ident("global_asm") => {
                self.scan
                    .link_level
                    .push(format!("{}: global_asm!", self.file));
            }
            _ => {}
        }
    }
}

/// Scans the package's `src/` tree from its crate roots.
pub(crate) fn scan(package_dir: &Path) -> Scan {
    let src = package_dir.join("src");
    let mut scan = Scan::default();
    let mut queue: Vec<(PathBuf, Vec<String>)> = ["lib.rs", "main.rs"]
        .iter()
        .map(|root| (src.join(root), Vec::new()))
        .collect();
    if let Ok(entries) = std::fs::read_dir(src.join("bin")) {
        queue.extend(entries.flatten().map(|entry| (entry.path(), Vec::new())));
    }
    let mut seen: BTreeMap<PathBuf, ()> = BTreeMap::new();
    let mut invocations = Vec::new();
    let mut generators = Vec::new();
    while let Some((path, cfg)) = queue.pop() {
        let Ok(path) = std::fs::canonicalize(&path) else {
            continue;
        };
        if seen.insert(path.clone(), ()).is_some() || seen.len() > 10_000 {
            continue;
        }
        let Some(file) = std::fs::read_to_string(&path)
            .ok()
            .and_then(|text| syn::parse_file(&text).ok())
        else {
            continue;
        };
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        let root_like =
            matches!(stem, "lib" | "main" | "mod") || path.parent() == Some(&src.join("bin"));
        let child_dir = if root_like {
            dir.clone()
        } else {
            dir.join(stem)
        };
        let mut cfg = cfg;
        cfg.extend(conditions(&file.attrs));
        let relative = path
            .strip_prefix(std::fs::canonicalize(package_dir).unwrap_or_default())
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .unwrap_or_else(|_| path.to_string_lossy().into_owned());
        let mut modules = Vec::new();
        Visitor {
            file: &relative,
            invocations: &mut invocations,
            generators: &mut generators,
            dir,
            child_dir,
            modules: &mut modules,
            scan: &mut scan,
        }
        .items(&file.items, &cfg);
        queue.extend(modules);
    }
    // A generator invoked under `#[cfg]`, or a file included under one:
    // what it declares is unknown until it is built.
    for (name, condition, file) in invocations {
        if (name == "include" || generators.contains(&name)) && condition != "test" {
            scan.gated.push(GatedDeclaration {
                key: format!("declarations generated by {name}!"),
                condition,
                file,
            });
        }
    }
    scan.gated.sort();
    scan.gated.dedup();
    scan.link_level.sort();
    scan.link_level.dedup();
    scan
}
