//! The source's items by name, and what a declared policy reads from them.
//! A policy whose behaviour its runtime identity cannot show (a closure, a
//! predicate passed by name, a custom policy) names what it reads; review
//! digests the source of those items of the package and its local
//! dependencies — and of what they read in turn — so a flipped predicate
//! body or a const it compares with is a change review sees.

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use serde_json::{Value, json};
use syn::visit::Visit;

use crate::source_attrs::digest;

/// At most this many names are indexed per scan.
const MAX_NAMES: usize = 200_000;
/// At most this many names an item reads are kept (the rest is in its
/// digest still, only not followed further).
const MAX_READS_PER_ITEM: usize = 4_096;
/// At most this many items are followed from one policy.
const MAX_FOLLOWED: usize = 4_096;

/// One item's text as review digests it, with the names it reads.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct ItemText {
    /// SHA-256 of the item's tokens.
    pub(crate) digest: String,
    /// The names in it that may be other items (`Type::item` for a type's
    /// own).
    pub(crate) reads: Vec<String>,
    /// The conditions of the `cfg!(…)`s in it (a value chosen by build).
    pub(crate) conditions: Vec<String>,
}

/// Items by the name a declaration reads them with: a free function, a
/// const, a static, a type (its definition and its trait impls) under its
/// name; a method or associated const under `Type::name`.
pub(crate) type Items = BTreeMap<String, BTreeSet<ItemText>>;

/// Names in `tokens` that may be items: every identifier that is not a
/// keyword or a local binding (`let x`), `Type::item` where a capitalized
/// name is followed by a path segment (`Self::item` as the impl's own
/// type's), `.method` for a method called, and `name!` for a macro.
fn names_in(tokens: TokenStream, within: Option<&str>, out: &mut Reads) {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let punct = |i: usize, c: char| {
        trees
            .get(i)
            .is_some_and(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == c))
    };
    for (i, tree) in trees.iter().enumerate() {
        if out.names.len() >= MAX_READS_PER_ITEM {
            out.partial = true;
            return;
        }
        match tree {
            TokenTree::Group(group) => names_in(group.stream(), within, out),
            TokenTree::Ident(ident) => {
                let after_dot = i.checked_sub(1).is_some_and(|j| punct(j, '.'));
                let is_macro = punct(i + 1, '!');
                let called = matches!(
                    trees.get(i + 1),
                    Some(TokenTree::Group(g)) if g.delimiter() == proc_macro2::Delimiter::Parenthesis
                );
                if ident == "cfg"
                    && is_macro
                    && let Some(TokenTree::Group(group)) = trees.get(i + 2)
                {
                    // As the macros write a condition: tokens spaced.
                    let text: Vec<String> =
                        group.stream().into_iter().map(|t| t.to_string()).collect();
                    out.conditions.insert(text.join(" "));
                    continue;
                }
                // `let x` / `let mut x`: a local, never an item.
                let after_let = i
                    .checked_sub(1)
                    .and_then(|j| trees.get(j))
                    .is_some_and(|t| {
                        matches!(t, TokenTree::Ident(p) if p == "let")
                            || matches!(t, TokenTree::Ident(p) if p == "mut")
                                && i.checked_sub(2)
                                    .and_then(|k| trees.get(k))
                                    .is_some_and(|t| matches!(t, TokenTree::Ident(p) if p == "let"))
                    });
                if after_let && !is_keyword(ident) {
                    out.locals.insert(ident.to_string());
                    continue;
                }
                if after_dot {
                    if called {
                        out.names.insert(format!(".{ident}"));
                    }
                    continue;
                }
                if is_macro {
                    out.names.insert(format!("{ident}!"));
                    continue;
                }
                let path_follows = punct(i + 1, ':') && punct(i + 2, ':');
                if ident == "Self"
                    && path_follows
                    && let (Some(own), Some(TokenTree::Ident(item))) = (within, trees.get(i + 3))
                {
                    out.names.insert(format!("{own}::{item}"));
                    continue;
                }
                if is_keyword(ident) {
                    continue;
                }
                let name = ident.to_string();
                let typed = name.starts_with(|c: char| c.is_ascii_uppercase());
                if typed
                    && path_follows
                    && let Some(TokenTree::Ident(item)) = trees.get(i + 3)
                {
                    out.names.insert(format!("{name}::{item}"));
                }
                // A module on the way (`config::`) is no item.
                if typed || !punct(i + 1, ':') {
                    out.names.insert(name);
                }
            }
            _ => {}
        }
    }
}

/// What one item reads.
#[derive(Default)]
struct Reads {
    names: BTreeSet<String>,
    locals: BTreeSet<String>,
    conditions: BTreeSet<String>,
    /// Past [`MAX_READS_PER_ITEM`]: the rest is not followed.
    partial: bool,
}

fn is_keyword(ident: &proc_macro2::Ident) -> bool {
    const KEYWORDS: &[&str] = &[
        "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum",
        "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut",
        "pub", "ref", "return", "self", "Self", "static", "struct", "super", "trait", "true",
        "type", "unsafe", "use", "where", "while",
    ];
    KEYWORDS.iter().any(|k| ident == k)
}

/// Records `item` under `name` (`within`: the type of the impl it is
/// part of, for `Self::…`). Its digest leaves out its doc comments: what
/// it does is its code.
fn record(items: &mut Items, name: String, within: Option<&str>, item: &impl ToTokens) {
    record_as(items, &[name], within, item);
}

/// [`record`] under each of `names` (one item read once, filed under every
/// name it is called by).
fn record_as(items: &mut Items, names: &[String], within: Option<&str>, item: &impl ToTokens) {
    let names: Vec<&String> = names
        .iter()
        .filter(|name| within_bound(items, name))
        .collect();
    if names.is_empty() {
        return;
    }
    let tokens = without_docs(item.to_token_stream());
    let mut reads = Reads::default();
    names_in(tokens.clone(), within, &mut reads);
    let mut read: Vec<String> = reads.names.difference(&reads.locals).cloned().collect();
    if reads.partial {
        read.push(PARTIAL.to_owned());
    }
    let text = ItemText {
        digest: digest(&tokens),
        reads: read,
        conditions: reads.conditions.into_iter().collect(),
    };
    for name in names {
        items.entry(name.clone()).or_default().insert(text.clone());
    }
}

/// Whether `name` may be filed: the index is under its bound, or already
/// has it. Past the bound the index says so (under [`PARTIAL`]), and every
/// policy that reads from it is labelled partially followed: what was
/// left out is never taken for nothing.
fn within_bound(items: &mut Items, name: &str) -> bool {
    if items.len() < MAX_NAMES || items.contains_key(name) {
        return true;
    }
    items.entry(PARTIAL.to_owned()).or_default();
    false
}

/// Marks the reads of an item too long to follow whole.
const PARTIAL: &str = "…";

/// `tokens` without `#[doc = …]` attributes (what `///` lines become).
fn without_docs(tokens: TokenStream) -> TokenStream {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let mut out = Vec::with_capacity(trees.len());
    let mut i = 0;
    while let Some(tree) = trees.get(i) {
        let is_doc = matches!(tree, TokenTree::Punct(p) if p.as_char() == '#')
            && matches!(trees.get(i + 1), Some(TokenTree::Group(g))
                if g.delimiter() == proc_macro2::Delimiter::Bracket
                    && g.stream().into_iter().next().is_some_and(|t| t.to_string() == "doc"));
        if is_doc {
            i += 2;
            continue;
        }
        out.push(match tree {
            TokenTree::Group(group) => {
                let mut inner =
                    proc_macro2::Group::new(group.delimiter(), without_docs(group.stream()));
                inner.set_span(group.span());
                TokenTree::Group(inner)
            }
            other => other.clone(),
        });
        i += 1;
    }
    out.into_iter().collect()
}

/// The name of an impl's self type (its last path segment).
fn self_type(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(path) => path.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

/// `(original, renamed)` of every `… as renamed` in a `use` tree.
fn renames_in(tree: &syn::UseTree, out: &mut Vec<(String, String)>) {
    match tree {
        syn::UseTree::Path(path) => renames_in(&path.tree, out),
        syn::UseTree::Rename(rename) => {
            out.push((rename.ident.to_string(), rename.rename.to_string()));
        }
        syn::UseTree::Group(group) => {
            for tree in &group.items {
                renames_in(tree, out);
            }
        }
        syn::UseTree::Name(_) | syn::UseTree::Glob(_) => {}
    }
}

struct Indexer<'a>(&'a mut Items);

impl<'ast> Visit<'ast> for Indexer<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        use syn::Item;
        let name = match item {
            Item::Const(i) => Some(i.ident.to_string()),
            Item::Enum(i) => Some(i.ident.to_string()),
            Item::Fn(i) => Some(i.sig.ident.to_string()),
            Item::Static(i) => Some(i.ident.to_string()),
            Item::Struct(i) => Some(i.ident.to_string()),
            Item::Trait(i) => Some(i.ident.to_string()),
            Item::Type(i) => Some(i.ident.to_string()),
            Item::Union(i) => Some(i.ident.to_string()),
            _ => None,
        };
        if let Some(name) = name {
            record(self.0, name, None, item);
        }
        // `use path::item as name`: the name reads the item.
        if let Item::Use(used) = item {
            let mut renames = Vec::new();
            renames_in(&used.tree, &mut renames);
            for (original, renamed) in renames {
                if !within_bound(self.0, &renamed) {
                    continue;
                }
                let entry = self.0.entry(renamed).or_default();
                entry.insert(ItemText {
                    digest: digest(used),
                    reads: vec![original],
                    conditions: Vec::new(),
                });
            }
        }
        // `macro_rules! name`: what `name!(…)` expands to.
        if let Item::Macro(mac) = item
            && mac.mac.path.is_ident("macro_rules")
            && let Some(ident) = &mac.ident
        {
            record(self.0, format!("{ident}!"), None, item);
        }
        if let Item::Impl(i) = item
            && let Some(ty) = self_type(&i.self_ty)
        {
            // A trait impl is what the type does as that trait (a custom
            // policy's checks): followed with the type when the type is
            // the crate's own.
            if i.trait_.is_some() {
                record(self.0, format!("impl {ty}"), Some(&ty), i);
            }
            for impl_item in &i.items {
                let (item_name, tokens): (String, &dyn ToTokens) = match impl_item {
                    syn::ImplItem::Fn(f) => (f.sig.ident.to_string(), f),
                    syn::ImplItem::Const(c) => (c.ident.to_string(), c),
                    _ => continue,
                };
                // Called by path (`Type::item`) or as a method (`x.item()`,
                // by name alone): one reading, filed under both.
                let names = [format!("{ty}::{item_name}"), format!(".{item_name}")];
                record_as(self.0, &names, Some(&ty), &tokens.to_token_stream());
            }
        }
        syn::visit::visit_item(self, item);
    }
}

/// Adds the items of `file` to `items`.
pub(super) fn index(file: &syn::File, items: &mut Items) {
    Indexer(items).visit_file(file);
}

/// What a policy reads, as the source has it.
#[derive(Debug)]
struct Followed {
    /// The names it reads that the source defines.
    names: Vec<String>,
    /// One digest over the texts of every item followed.
    digest: String,
    /// The `cfg!(…)` conditions in them.
    conditions: Vec<String>,
    /// Whether what they read was too much to follow whole (an item past
    /// its reads' bound, or more items than one policy follows).
    partial: bool,
}

/// The items `reads` names, and those they read in turn, as found in the
/// source. `None` when
/// none of them is in the source (they are the framework's or a registry
/// crate's, whose versions the lockfile pins).
fn followed(reads: &[&str], items: &Items) -> Option<Followed> {
    let mut queue: Vec<String> = reads.iter().map(|s| (*s).to_owned()).collect();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut found: Vec<String> = Vec::new();
    let mut texts: BTreeSet<&str> = BTreeSet::new();
    let mut conditions: BTreeSet<String> = BTreeSet::new();
    // An index past its bound may lack what is read.
    let mut partial = items.contains_key(PARTIAL);
    while let Some(name) = queue.pop() {
        if seen.contains(&name) {
            continue;
        }
        if seen.len() >= MAX_FOLLOWED {
            partial = true;
            break;
        }
        seen.insert(name.clone());
        let Some(defined) = items.get(&name) else {
            continue;
        };
        // A type of the crate's own: its trait impls are what it does.
        if name.starts_with(|c: char| c.is_ascii_uppercase()) && !name.contains("::") {
            queue.push(format!("impl {name}"));
        }
        if reads.contains(&name.as_str()) {
            found.push(name);
        }
        for text in defined {
            texts.insert(&text.digest);
            partial |= text.reads.iter().any(|read| read == PARTIAL);
            queue.extend(text.reads.iter().cloned());
            conditions.extend(text.conditions.iter().cloned());
        }
    }
    if texts.is_empty() {
        return None;
    }
    found.sort();
    let joined: Vec<&str> = texts.into_iter().collect();
    Some(Followed {
        names: found,
        digest: super::bytes_digest(joined.join("\n").as_bytes()),
        conditions: conditions.into_iter().collect(),
        partial,
    })
}

/// `items` as the scan's process prints them:
/// `{name: [[digest, [reads…], [conditions…]]…]}`.
pub(super) fn to_json(items: &Items) -> Value {
    items
        .iter()
        .map(|(name, texts)| {
            let texts: Vec<Value> = texts
                .iter()
                .map(|text| json!([text.digest, text.reads, text.conditions]))
                .collect();
            (name.clone(), Value::Array(texts))
        })
        .collect::<serde_json::Map<String, Value>>()
        .into()
}

/// What [`to_json`] printed; `None` unless it is exactly that shape.
pub(super) fn from_json(value: &Value) -> Option<Items> {
    let mut items = Items::new();
    for (name, texts) in value.as_object()? {
        let mut set = BTreeSet::new();
        for text in texts.as_array()? {
            let digest = text.get(0)?.as_str()?.to_owned();
            let strings = |i: usize| {
                text.get(i)?
                    .as_array()?
                    .iter()
                    .map(|read| read.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
            };
            set.insert(ItemText {
                digest,
                reads: strings(1)?,
                conditions: strings(2)?,
            });
        }
        items.insert(name.clone(), set);
    }
    Some(items)
}

/// Every `declared` policy identity in `value` that names what it reads
/// gets `readsSource`: the names found in the source and the digest of
/// their texts (see [`followed`]).
pub(crate) fn annotate(value: &mut Value, items: &Items) {
    match value {
        Value::Object(object) => {
            if let Some(Value::Object(declared)) = object.get_mut("declared") {
                let reads: Vec<&str> = declared
                    .get("reads")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                if let Some(read) = followed(&reads, items) {
                    let mut read_json = json!({
                        "names": read.names,
                        "digest": read.digest,
                        "conditions": read.conditions,
                    });
                    if read.partial
                        && let Some(object) = read_json.as_object_mut()
                    {
                        object.insert("partial".into(), Value::Bool(true));
                    }
                    let read = read_json;
                    declared.insert("readsSource".into(), read);
                }
            }
            for (_, child) in object.iter_mut() {
                annotate(child, items);
            }
        }
        Value::Array(values) => {
            for child in values {
                annotate(child, items);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn indexed(text: &str) -> Items {
        let mut items = Items::new();
        index(&syn::parse_file(text).unwrap(), &mut items);
        items
    }

    #[test]
    fn a_predicate_and_the_const_it_reads_are_followed() {
        let before = indexed(
            "const THRESHOLD: usize = 3;\n\
             fn is_risky(ctx: &Ctx) -> bool { ctx.count() > THRESHOLD }\n\
             fn unrelated() {}",
        );
        let first = followed(&["is_risky", "require_confirmation"], &before).unwrap();
        assert_eq!(first.names, ["is_risky"]);
        let digest = first.digest;
        let after = indexed(
            "const THRESHOLD: usize = 3_000;\n\
             fn is_risky(ctx: &Ctx) -> bool { ctx.count() > THRESHOLD }\n\
             fn unrelated() {}",
        );
        let changed = followed(&["is_risky"], &after).unwrap().digest;
        assert_ne!(digest, changed, "the const it reads changed");
        let elsewhere = indexed(
            "const THRESHOLD: usize = 3;\n\
             fn is_risky(ctx: &Ctx) -> bool { ctx.count() > THRESHOLD }\n\
             fn unrelated() { let _ = 1; }",
        );
        assert_eq!(followed(&["is_risky"], &elsewhere).unwrap().digest, digest);
        let by_build =
            indexed("const LIMIT: u32 = if cfg!(debug_assertions) { 10 } else { 1_000_000 };");
        let read = followed(&["LIMIT"], &by_build).unwrap();
        assert_eq!(read.conditions, ["debug_assertions"]);
        assert!(followed(&["rate_limit"], &before).is_none());
    }

    #[test]
    fn a_custom_policy_is_its_type_its_trait_impls_and_the_methods_named() {
        let text = |check: &str| {
            format!(
                "struct Quota {{ limit: u32 }}\n\
                 impl Quota {{ fn new(limit: u32) -> Self {{ Self {{ limit }} }} fn other() {{}} }}\n\
                 impl Policy for Quota {{ fn name(&self) -> &str {{ \"quota\" }} {check} }}"
            )
        };
        let reads = ["Quota", "Quota::new"];
        let a = followed(&reads, &indexed(&text(""))).unwrap();
        assert_eq!(a.names, ["Quota", "Quota::new"]);
        // Its doc comment is not what it does.
        let documented = text("").replace("struct Quota", "/// Quota.\nstruct Quota");
        assert_eq!(
            a.digest,
            followed(&reads, &indexed(&documented)).unwrap().digest
        );
        let b = followed(&reads, &indexed(&text("fn on_discovery(&self) {}"))).unwrap();
        assert_ne!(a.digest, b.digest, "the trait impl changed");
        let c = text("").replace("fn other() {}", "fn other() { let _ = 2; }");
        assert_eq!(a.digest, followed(&reads, &indexed(&c)).unwrap().digest);
    }

    #[test]
    fn locals_renames_methods_macros_and_self_paths_are_read_as_they_are() {
        // `let limit` is a local: the free `limit` is not read.
        let local = indexed(
            "fn limit() -> u32 { 1 }\n\
             fn is_risky() -> bool { let limit = 3; limit > 2 }",
        );
        let changed = indexed(
            "fn limit() -> u32 { 2 }\n\
             fn is_risky() -> bool { let limit = 3; limit > 2 }",
        );
        let read = |items: &Items| followed(&["is_risky"], items).unwrap().digest;
        assert_eq!(read(&local), read(&changed));
        // `use … as renamed`, a method called, a macro, `Self::item`.
        let text = |body: &str| {
            format!(
                "mod preds {{ pub fn really_risky() -> bool {{ {body} }} }}\n\
                 use preds::really_risky as renamed;\n\
                 macro_rules! threshold {{ () => {{ 3 }} }}\n\
                 const T: u32 = threshold!();\n\
                 struct Gate;\n\
                 impl Gate {{ fn shut() -> bool {{ T > 1 }} fn over(&self) -> bool {{ Self::shut() }} }}"
            )
        };
        let (a, b) = (indexed(&text("true")), indexed(&text("false")));
        let via = |items: &Items, name: &str| followed(&[name], items).unwrap().digest;
        assert_ne!(via(&a, "renamed"), via(&b, "renamed"));
        let macro_changed = indexed(&text("true").replace("{ 3 }", "{ 30 }"));
        assert_ne!(via(&a, ".over"), via(&macro_changed, ".over"));
    }

    #[test]
    fn past_the_bound_the_reads_are_said_to_be_partial() {
        let lets: String = (0..5_000).map(|i| format!("let v{i} = x{i};")).collect();
        let items = indexed(&format!(
            "fn padded() -> bool {{ {lets} tail() }}\nfn tail() -> bool {{ true }}"
        ));
        assert!(followed(&["padded"], &items).unwrap().partial);
    }

    #[test]
    fn an_index_past_its_bound_labels_every_policy_partial() {
        let mut items = indexed("fn is_risky() -> bool { true }");
        assert!(!followed(&["is_risky"], &items).unwrap().partial);
        for i in 0..MAX_NAMES {
            items.entry(format!("filler{i}")).or_default();
        }
        assert!(!within_bound(&mut items, "late"));
        assert!(within_bound(&mut items, "is_risky"), "a name it has stays");
        assert!(followed(&["is_risky"], &items).unwrap().partial);
    }
}
