//! The walk of one source file: every item, block, statement and
//! expression with the `#[cfg]` conditions on the way to it, recording
//! declarations outside the build, generator invocations and code at link
//! level.

use std::path::PathBuf;

use quote::ToTokens;
use syn::visit::Visit;
use syn::{Attribute, Item};

use super::tokens::{attributes_in, expr_attrs, invoked_in};
use super::{GatedDeclaration, Scan};

use crate::source_attrs::{
    AGENT_ATTRIBUTES, LINK_LEVEL, agent_cfg_attrs, cfg_attr_metas, cfgs, declared_name, digest,
    has_agent, is_agent, joined, last_segment, link_level, test_only,
};

pub(super) struct Visitor<'a> {
    /// The directory of the package (`CARGO_MANIFEST_DIR`), where a path
    /// built from it resolves.
    pub(super) package_dir: &'a std::path::Path,
    pub(super) label: Option<&'a str>,
    pub(super) file: String,
    /// The directory a `mod name;` here resolves in.
    pub(super) child_dir: PathBuf,
    /// The directory `#[path]` resolves in (the module's).
    pub(super) dir: PathBuf,
    /// The directory of the current file (`include!` resolves in it).
    pub(super) file_dir: PathBuf,
    pub(super) cfg: Vec<String>,
    /// Files to read next, each with the conditions on the way.
    pub(super) files: &'a mut Vec<(PathBuf, Vec<String>)>,
    /// `use … as alias` of agent attributes: (alias, attribute).
    pub(super) aliases: &'a [(String, String)],
    /// Item macros invoked under `#[cfg]`: (name, condition, file, digest).
    pub(super) invocations: &'a mut Vec<(String, String, String, String)>,
    /// `macro_rules!` that declare reach, and those at link level.
    pub(super) generators: &'a mut Vec<String>,
    /// Every other `macro_rules!`: what it invokes, so one wrapping a
    /// generator is found to be one too.
    pub(super) bodies: &'a mut Vec<MacroBody>,
    pub(super) scan: &'a mut Scan,
}

/// A `macro_rules!` that names no agent attribute itself.
#[derive(Clone)]
pub(super) struct MacroBody {
    pub(super) defined: String,
    /// The macros its body invokes (`name !`).
    pub(super) invokes: Vec<String>,
    /// Whether its body holds a `cfg`.
    pub(super) conditional: bool,
    pub(super) file: String,
    pub(super) label: Option<String>,
    pub(super) digest: String,
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
        crate::source_attrs::add_conditions(&mut all, extra.iter().cloned());
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
        let depth = self.cfg.len();
        // Past the limit only the last entry (the folded conditions) is
        // rewritten: it is put back on the way out.
        let last = self.cfg.last().cloned();
        crate::source_attrs::add_conditions(&mut self.cfg, cfgs(attrs));
        visit(self);
        self.cfg.truncate(depth);
        if let (Some(last), Some(slot)) = (last, self.cfg.last_mut()) {
            *slot = last;
        }
    }

    /// `mod name;` written inside macro tokens (a `macro_rules!` body or an
    /// invocation): the files it can name are read too. Walked with a stack
    /// of its own, however deep the tokens nest.
    fn modules_in(&mut self, tokens: &proc_macro2::TokenStream) {
        let mut pending = vec![tokens.clone()];
        while let Some(stream) = pending.pop() {
            let trees: Vec<proc_macro2::TokenTree> = stream.into_iter().collect();
            for (i, tree) in trees.iter().enumerate() {
                match tree {
                    proc_macro2::TokenTree::Group(group) => pending.push(group.stream()),
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
    }

    /// A macro invoked anywhere but as `macro_rules!` (an item, a
    /// statement, an expression): `include!` is followed, `global_asm!`
    /// is code at link level, and any other is recorded as an invocation —
    /// a generator's, if it is one (decided once every crate is read).
    fn macro_call(&mut self, mac: &syn::Macro, whole: &impl ToTokens) {
        let name = last_segment(&mac.path);
        if name == "global_asm" {
            self.link("global_asm!", "");
        } else if name == "include" {
            // Relative to the file it is written in, as rustc reads it.
            if let Ok(lit) = syn::parse2::<syn::LitStr>(mac.tokens.clone()) {
                let cfg = self.cfg.clone();
                self.files.push((self.file_dir.join(lit.value()), cfg));
            } else {
                let mut condition = vec!["a path computed at build time, not read".to_owned()];
                // Under `OUT_DIR`: what the build script wrote, so its source counts.
                if mac.tokens.to_string().contains("OUT_DIR")
                    && let Some(generator) = super::build_script::generator_of(&self.file_dir)
                {
                    condition.push(generator);
                }
                self.declared("file included by include!".to_owned(), &condition, whole);
            }
        } else {
            let body = mac.tokens.to_string();
            if LINK_LEVEL.iter().any(|a| body.contains(a)) || body.contains("global_asm") {
                self.link(&format!("{name}! invoked with link-level code"), "");
            }
            self.modules_in(&mac.tokens);
            // Declarations written in the arguments (`cfg_if!`, a macro
            // passing its tokens through, `vec![{ … }]`): what the build
            // keeps of them depends on the macro, so under a condition —
            // around the call or inside its arguments — they are listed.
            let attributes = attributes_in(&mac.tokens);
            if attributes
                .iter()
                .any(|a| AGENT_ATTRIBUTES.contains(&a.as_str()) || self.is_alias(a))
            {
                let mut extra = Vec::new();
                if attributes.iter().any(|a| a == "cfg" || a == "cfg_attr") {
                    extra.push("#[cfg] inside the macro's arguments".to_owned());
                }
                self.declared(
                    format!("declarations in the arguments of {name}!"),
                    &extra,
                    whole,
                );
            }
            // A file the arguments name (`pull!("extra.rs")` of a macro that
            // `include!`s or `#[path]`s its argument): read too, under the
            // conditions of the call.
            let mut resolved = true;
            if name != "include_str" && name != "include_bytes" {
                resolved = self.files_named_in(&mac.tokens);
            }
            // A generator's invocation matters only under a condition.
            if !self.cfg.is_empty() && !test_only(&self.cfg) {
                let mut digest = digest(whole);
                // A path computed at build time (`concat!(env!(…), …)`), or
                // a file named that is not there: the call may pull in any
                // file of the package, so their digest is the call's too.
                // (Digested once per package, for a generator's calls only:
                // see `COMPUTED`.)
                if !resolved {
                    digest.push_str(super::COMPUTED);
                }
                let entry = (name, joined(&self.cfg), self.file.clone(), digest);
                self.invocations.push(entry);
            }
        }
    }

    /// Every `"….rs"` literal in `tokens` that names a file beside this one
    /// (as `include!` resolves) or in this module's directory (as
    /// `#[path]` does): queued to be read under the current conditions.
    ///
    /// Also resolved in the package's directory (a path built with
    /// `concat!(env!("CARGO_MANIFEST_DIR"), "/src/x.rs")`). Returns whether
    /// the call names its files plainly: every `"….rs"` found, no path
    /// computed with `env!`.
    fn files_named_in(&mut self, tokens: &proc_macro2::TokenStream) -> bool {
        let mut resolved = !tokens.to_string().contains("env !");
        let mut pending = vec![tokens.clone()];
        while let Some(stream) = pending.pop() {
            for tree in stream {
                match tree {
                    proc_macro2::TokenTree::Group(group) => pending.push(group.stream()),
                    proc_macro2::TokenTree::Literal(literal) => {
                        let Ok(lit) = syn::parse_str::<syn::LitStr>(&literal.to_string()) else {
                            continue;
                        };
                        let named = lit.value();
                        if !named.ends_with(".rs") {
                            continue;
                        }
                        let in_package = self.package_dir.join(named.trim_start_matches('/'));
                        let found = [
                            self.file_dir.join(&named),
                            self.dir.join(&named),
                            in_package,
                        ]
                        .into_iter()
                        .find(|path| path.is_file());
                        match found {
                            Some(path) => {
                                let cfg = self.cfg.clone();
                                self.files.push((path, cfg));
                            }
                            None => resolved = false,
                        }
                    }
                    _ => {}
                }
            }
        }
        resolved
    }

    fn is_alias(&self, name: &str) -> bool {
        self.aliases.iter().any(|(alias, _)| alias == name)
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
            crate::source_attrs::add_conditions(&mut cfg, extra);
            self.files.push((path, cfg));
        }
    }
}

impl<'ast> Visit<'ast> for Visitor<'_> {
    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        let attrs: &[Attribute] = match item {
            syn::ImplItem::Const(i) => &i.attrs,
            syn::ImplItem::Fn(i) => &i.attrs,
            syn::ImplItem::Type(i) => &i.attrs,
            syn::ImplItem::Macro(i) => &i.attrs,
            _ => &[],
        };
        if let syn::ImplItem::Fn(method) = item
            && let Some(what) = link_level(&method.attrs)
        {
            self.link(&format!("#[{what}]"), &format!("fn {}", method.sig.ident));
        }
        self.within(attrs, |this| match item {
            syn::ImplItem::Macro(i) => this.macro_call(&i.mac, i),
            _ => syn::visit::visit_impl_item(this, item),
        });
    }

    /// A trait's items, default method bodies included (an item declared
    /// in one is compiled like any other).
    fn visit_trait_item(&mut self, item: &'ast syn::TraitItem) {
        let attrs: &[Attribute] = match item {
            syn::TraitItem::Const(i) => &i.attrs,
            syn::TraitItem::Fn(i) => &i.attrs,
            syn::TraitItem::Type(i) => &i.attrs,
            syn::TraitItem::Macro(i) => &i.attrs,
            _ => &[],
        };
        self.within(attrs, |this| match item {
            syn::TraitItem::Macro(i) => this.macro_call(&i.mac, i),
            _ => syn::visit::visit_trait_item(this, item),
        });
    }

    /// Statements carry `#[cfg]` too; a macro in statement position may be
    /// a generator or an `include!`.
    fn visit_stmt(&mut self, stmt: &'ast syn::Stmt) {
        match stmt {
            syn::Stmt::Local(local) => {
                self.within(&local.attrs, |this| syn::visit::visit_local(this, local));
            }
            syn::Stmt::Macro(i) => self.within(&i.attrs, |this| this.macro_call(&i.mac, i)),
            _ => syn::visit::visit_stmt(self, stmt),
        }
    }

    // Every other place a `#[cfg]` may stand: what it holds (a block in a
    // match arm, a discriminant, a field's array length, a field value, a
    // parameter's type, a const generic's default) is under it.
    fn visit_arm(&mut self, arm: &'ast syn::Arm) {
        self.within(&arm.attrs, |this| syn::visit::visit_arm(this, arm));
    }

    fn visit_variant(&mut self, variant: &'ast syn::Variant) {
        self.within(&variant.attrs, |this| {
            syn::visit::visit_variant(this, variant)
        });
    }

    fn visit_field(&mut self, field: &'ast syn::Field) {
        self.within(&field.attrs, |this| syn::visit::visit_field(this, field));
    }

    fn visit_field_value(&mut self, field: &'ast syn::FieldValue) {
        self.within(&field.attrs, |this| {
            syn::visit::visit_field_value(this, field)
        });
    }

    fn visit_foreign_item(&mut self, item: &'ast syn::ForeignItem) {
        let attrs: &[Attribute] = match item {
            syn::ForeignItem::Fn(i) => &i.attrs,
            syn::ForeignItem::Static(i) => &i.attrs,
            syn::ForeignItem::Type(i) => &i.attrs,
            syn::ForeignItem::Macro(i) => &i.attrs,
            _ => &[],
        };
        self.within(attrs, |this| match item {
            syn::ForeignItem::Macro(i) => this.macro_call(&i.mac, i),
            _ => syn::visit::visit_foreign_item(this, item),
        });
    }

    fn visit_fn_arg(&mut self, arg: &'ast syn::FnArg) {
        let attrs: &[Attribute] = match arg {
            syn::FnArg::Receiver(r) => &r.attrs,
            syn::FnArg::Typed(t) => &t.attrs,
        };
        self.within(attrs, |this| syn::visit::visit_fn_arg(this, arg));
    }

    fn visit_bare_fn_arg(&mut self, arg: &'ast syn::BareFnArg) {
        self.within(&arg.attrs, |this| syn::visit::visit_bare_fn_arg(this, arg));
    }

    fn visit_generic_param(&mut self, param: &'ast syn::GenericParam) {
        let attrs: &[Attribute] = match param {
            syn::GenericParam::Lifetime(p) => &p.attrs,
            syn::GenericParam::Type(p) => &p.attrs,
            syn::GenericParam::Const(p) => &p.attrs,
        };
        self.within(attrs, |this| syn::visit::visit_generic_param(this, param));
    }

    /// A macro in type position may expand to an array type whose length
    /// is a block declaring items.
    fn visit_type_macro(&mut self, ty: &'ast syn::TypeMacro) {
        self.macro_call(&ty.mac, ty);
    }

    /// An expression's `#[cfg]` holds for what it contains; a macro in
    /// expression position may expand to a block declaring items.
    fn visit_expr(&mut self, expr: &'ast syn::Expr) {
        let attrs = expr_attrs(expr);
        self.within(attrs, |this| match expr {
            syn::Expr::Macro(i) => this.macro_call(&i.mac, i),
            _ => syn::visit::visit_expr(this, expr),
        });
    }

    fn visit_item(&mut self, item: &'ast Item) {
        let attrs: &[Attribute] = match item {
            Item::Const(i) => &i.attrs,
            Item::Enum(i) => &i.attrs,
            Item::ExternCrate(i) => &i.attrs,
            Item::Fn(i) => &i.attrs,
            Item::ForeignMod(i) => &i.attrs,
            Item::Impl(i) => &i.attrs,
            Item::Macro(i) => &i.attrs,
            Item::Mod(i) => &i.attrs,
            Item::Static(i) => &i.attrs,
            Item::Struct(i) => &i.attrs,
            Item::Trait(i) => &i.attrs,
            Item::TraitAlias(i) => &i.attrs,
            Item::Type(i) => &i.attrs,
            Item::Union(i) => &i.attrs,
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
                syn::visit::visit_item_struct(this, i);
            }
            Item::Struct(i) if has_agent(&i.attrs, "agent_schema", this.aliases) => {
                this.fields(&i.ident, &i.fields, "");
                syn::visit::visit_item_struct(this, i);
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
                syn::visit::visit_item_enum(this, i);
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
                    if !AGENT_ATTRIBUTES.iter().any(|a| body.contains(a)) {
                        this.bodies.push(MacroBody {
                            defined: defined.clone(),
                            invokes: invoked_in(&i.mac.tokens),
                            conditional: body.contains("cfg"),
                            file: this.file.clone(),
                            label: this.label.map(str::to_owned),
                            digest: digest(i),
                        });
                    }
                    // A macro that pulls in a file its caller names
                    // (`include!($p)`, `#[path = $p]`) generates whatever
                    // that file declares: its calls under a condition count.
                    let pulls_files = body.contains('$')
                        && (body.contains("include !") || body.contains("path ="));
                    if pulls_files && !AGENT_ATTRIBUTES.iter().any(|a| body.contains(a)) {
                        this.generators.push(defined.clone());
                    }
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
                } else {
                    this.macro_call(&i.mac, i);
                }
            }
            // Everything else is walked whole: an item may hide in any
            // block (a function body, a trait's default method, a `const`,
            // an array length, an enum discriminant).
            _ => syn::visit::visit_item(this, item),
        });
    }
}
