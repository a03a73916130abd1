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
const MAX_READS_PER_ITEM: usize = 1_024;
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

/// Names in `tokens` that may be items: every identifier not after `.`
/// (a method or field), not a macro's name and not a keyword, and
/// `Type::item` where a capitalized name is followed by a path segment.
fn names_in(tokens: TokenStream, out: &mut BTreeSet<String>, conditions: &mut BTreeSet<String>) {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let punct = |i: usize, c: char| {
        trees
            .get(i)
            .is_some_and(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == c))
    };
    for (i, tree) in trees.iter().enumerate() {
        if out.len() >= MAX_READS_PER_ITEM {
            return;
        }
        match tree {
            TokenTree::Group(group) => names_in(group.stream(), out, conditions),
            TokenTree::Ident(ident) => {
                let after_dot = i.checked_sub(1).is_some_and(|j| punct(j, '.'));
                if ident == "cfg"
                    && punct(i + 1, '!')
                    && let Some(TokenTree::Group(group)) = trees.get(i + 2)
                {
                    // As the macros write a condition: tokens spaced.
                    let text: Vec<String> =
                        group.stream().into_iter().map(|t| t.to_string()).collect();
                    conditions.insert(text.join(" "));
                }
                if after_dot || punct(i + 1, '!') || is_keyword(ident) {
                    continue;
                }
                let name = ident.to_string();
                let typed = name.starts_with(|c: char| c.is_ascii_uppercase());
                if typed
                    && punct(i + 1, ':')
                    && punct(i + 2, ':')
                    && let Some(TokenTree::Ident(item)) = trees.get(i + 3)
                {
                    out.insert(format!("{name}::{item}"));
                }
                // A module on the way (`config::`) is no item.
                if typed || !punct(i + 1, ':') {
                    out.insert(name);
                }
            }
            _ => {}
        }
    }
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

/// Records `item` under `name`.
fn record(items: &mut Items, name: String, item: &impl ToTokens) {
    if items.len() >= MAX_NAMES && !items.contains_key(&name) {
        return;
    }
    let (mut reads, mut conditions) = (BTreeSet::new(), BTreeSet::new());
    names_in(item.to_token_stream(), &mut reads, &mut conditions);
    items.entry(name).or_default().insert(ItemText {
        digest: digest(item),
        reads: reads.into_iter().collect(),
        conditions: conditions.into_iter().collect(),
    });
}

/// The name of an impl's self type (its last path segment).
fn self_type(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(path) => path.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
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
            record(self.0, name, item);
        }
        if let Item::Impl(i) = item
            && let Some(ty) = self_type(&i.self_ty)
        {
            // A trait impl is what the type does as that trait (a
            // custom policy's checks): part of the type.
            if i.trait_.is_some() {
                record(self.0, ty.clone(), i);
            }
            for impl_item in &i.items {
                match impl_item {
                    syn::ImplItem::Fn(f) => {
                        record(self.0, format!("{ty}::{}", f.sig.ident), f);
                    }
                    syn::ImplItem::Const(c) => {
                        record(self.0, format!("{ty}::{}", c.ident), c);
                    }
                    _ => {}
                }
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
    while let Some(name) = queue.pop() {
        if seen.len() >= MAX_FOLLOWED || !seen.insert(name.clone()) {
            continue;
        }
        let Some(defined) = items.get(&name) else {
            continue;
        };
        if reads.contains(&name.as_str()) {
            found.push(name);
        }
        for text in defined {
            texts.insert(&text.digest);
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
                    let read = json!({
                        "names": read.names,
                        "digest": read.digest,
                        "conditions": read.conditions,
                    });
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
        let b = followed(&reads, &indexed(&text("fn on_discovery(&self) {}"))).unwrap();
        assert_ne!(a.digest, b.digest, "the trait impl changed");
        let c = text("").replace("fn other() {}", "fn other() { let _ = 2; }");
        assert_eq!(a.digest, followed(&reads, &indexed(&c)).unwrap().digest);
    }
}
