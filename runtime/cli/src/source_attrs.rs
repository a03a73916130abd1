//! Attributes as the source scan reads them: `cfg` conditions (written
//! plainly, or applied by a `cfg_attr`, nested or not), agent attributes
//! (also under a renamed import or inside a `cfg_attr`), the names they
//! declare, and attributes that place code at link level.

use quote::ToTokens;
use syn::Attribute;

/// The attributes that declare reach.
pub(crate) const AGENT_ATTRIBUTES: [&str; 6] = [
    "agent_component",
    "agent_procedure",
    "agent_schema",
    "reference",
    "action",
    "observation",
];

/// Attributes that place code at link level.
pub(crate) const LINK_LEVEL: [&str; 3] = ["no_mangle", "export_name", "link_section"];

/// The last segment of a path.
pub(crate) fn last_segment(path: &syn::Path) -> String {
    path.segments
        .last()
        .map(|segment| segment.ident.to_string())
        .unwrap_or_default()
}

/// The SHA-256 of an item's text, in lowercase hex.
pub(crate) fn digest(tokens: &impl ToTokens) -> String {
    use sha2::Digest as _;
    let text = tokens.to_token_stream().to_string();
    // SHA-256: the digest stands for the text in the reviewed artifact, so
    // two texts with one digest (a benign one committed, another swapped
    // in) must be out of reach — a 64-bit hash is not.
    hex(&sha2::Sha256::digest(text.as_bytes()))
}

/// `bytes` as lowercase hex digits (how every digest is written).
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// `cfg_attr(p, metas…)` split into its predicate and metas.
fn split(meta: &syn::Meta) -> Option<(String, Vec<syn::Meta>)> {
    let syn::Meta::List(list) = meta else {
        return None;
    };
    if !list.path.is_ident("cfg_attr") {
        return None;
    }
    let parsed = list.parse_args_with(|input: syn::parse::ParseStream<'_>| {
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

fn flatten(meta: &syn::Meta, predicates: &[String], out: &mut Vec<(String, syn::Meta)>) {
    match split(meta) {
        // Past the limit, deeper predicates are told as one (no copy per
        // level: linear however deep `cfg_attr`s nest).
        Some((_, metas)) if predicates.len() >= MAX_CONDITIONS => {
            for inner in &metas {
                flatten(inner, predicates, out);
            }
        }
        Some((predicate, metas)) => {
            let mut all = predicates.to_vec();
            if all.len() + 1 >= MAX_CONDITIONS {
                all.push(MORE_CONDITIONS.to_owned());
            } else {
                all.push(predicate);
            }
            for inner in &metas {
                flatten(inner, &all, out);
            }
        }
        None if !predicates.is_empty() => out.push((joined(predicates), meta.clone())),
        None => {}
    }
}

/// Every attribute a `cfg_attr` among `attrs` applies (nested ones
/// flattened), each with the condition under which it applies.
pub(crate) fn cfg_attr_metas(attrs: &[Attribute]) -> Vec<(String, syn::Meta)> {
    let mut out = Vec::new();
    for attr in attrs {
        flatten(&attr.meta, &[], &mut out);
    }
    out
}

/// Whether a meta names an agent attribute.
pub(crate) fn is_agent(meta: &syn::Meta) -> bool {
    AGENT_ATTRIBUTES.contains(&last_segment(meta.path()).as_str())
}

/// The conditions the item is under: each `#[cfg(…)]`, and each `cfg` a
/// `cfg_attr` applies (`cfg_attr(p, cfg(q))` holds the item under
/// `any(not(p), q)`).
pub(crate) fn cfgs(attrs: &[Attribute]) -> Vec<String> {
    let mut out: Vec<String> = attrs
        .iter()
        .filter_map(|attr| match &attr.meta {
            syn::Meta::List(list) if attr.path().is_ident("cfg") => Some(list.tokens.to_string()),
            _ => None,
        })
        .collect();
    for (predicate, meta) in cfg_attr_metas(attrs) {
        if let syn::Meta::List(list) = &meta
            && list.path.is_ident("cfg")
        {
            out.push(format!("any(not({predicate}), {})", list.tokens));
        }
    }
    out
}

/// The conditions under which a `cfg_attr` applies attribute `name` (or an
/// alias of it).
pub(crate) fn agent_cfg_attrs(
    attrs: &[Attribute],
    name: &str,
    aliases: &[(String, String)],
) -> Vec<String> {
    cfg_attr_metas(attrs)
        .into_iter()
        .filter(|(_, meta)| names(&last_segment(meta.path()), name, aliases))
        .map(|(predicate, _)| predicate)
        .collect()
}

fn names(candidate: &str, name: &str, aliases: &[(String, String)]) -> bool {
    candidate == name
        || aliases
            .iter()
            .any(|(alias, target)| alias == candidate && target == name)
}

/// Whether the item carries agent attribute `name` (directly, under a
/// renamed import, or applied by a `cfg_attr`).
pub(crate) fn has_agent(attrs: &[Attribute], name: &str, aliases: &[(String, String)]) -> bool {
    attrs
        .iter()
        .any(|attr| names(&last_segment(attr.path()), name, aliases))
        || !agent_cfg_attrs(attrs, name, aliases).is_empty()
}

/// `key = "…"` (`type`, `id`) in the attribute `name`, wherever it is
/// written (plainly, under an alias, or in a `cfg_attr`).
pub(crate) fn declared_name(
    attrs: &[Attribute],
    name: &str,
    key: &str,
    aliases: &[(String, String)],
) -> String {
    let direct = attrs
        .iter()
        .filter(|attr| names(&last_segment(attr.path()), name, aliases))
        .map(|attr| attr.meta.clone());
    let wrapped = cfg_attr_metas(attrs)
        .into_iter()
        .filter(|(_, meta)| names(&last_segment(meta.path()), name, aliases))
        .map(|(_, meta)| meta);
    direct
        .chain(wrapped)
        .find_map(|meta| {
            let text = meta.to_token_stream().to_string();
            let after = text.split(&format!("{key} =")).nth(1)?;
            let start = after.find('"')? + 1;
            let rest = after.get(start..)?;
            Some(rest.get(..rest.find('"')?)?.to_owned())
        })
        .unwrap_or_default()
}

fn link_word(meta: &syn::Meta) -> Option<&'static str> {
    let text = match meta {
        syn::Meta::List(list) if list.path.is_ident("unsafe") => list.tokens.to_string(),
        meta => last_segment(meta.path()),
    };
    LINK_LEVEL
        .iter()
        .copied()
        .find(|word| text.starts_with(word))
}

/// A link-level attribute among `attrs`, plainly, inside `unsafe(…)` or
/// applied by a `cfg_attr`.
pub(crate) fn link_level(attrs: &[Attribute]) -> Option<&'static str> {
    attrs
        .iter()
        .find_map(|attr| link_word(&attr.meta))
        .or_else(|| {
            cfg_attr_metas(attrs)
                .iter()
                .find_map(|(_, meta)| link_word(meta))
        })
}

/// Conditions joined into one (`all(…)` when several, empty when none).
pub(crate) fn joined(conditions: &[String]) -> String {
    match conditions {
        [] => String::new(),
        [one] => one.clone(),
        many => format!("all({})", many.join(", ")),
    }
}

/// At most this many conditions are told on one way to a declaration;
/// deeper ones are told as [`MORE_CONDITIONS`] (a declaration then reads as
/// built on more platforms than it is, never fewer), so the scan stays
/// linear however deep `#[cfg]`s nest.
pub(crate) const MAX_CONDITIONS: usize = 32;

/// What stands for the conditions beyond [`MAX_CONDITIONS`].
pub(crate) const MORE_CONDITIONS: &str = "more conditions than the gate tells apart";

/// Adds `more` to `conditions`, each once, up to [`MAX_CONDITIONS`]; those
/// beyond are folded into a last [`MORE_CONDITIONS`] entry with a digest of
/// them, so a change among them still changes what review sees. Only the
/// last entry is ever rewritten.
pub(crate) fn add_conditions(conditions: &mut Vec<String>, more: impl IntoIterator<Item = String>) {
    use sha2::Digest as _;
    for condition in more {
        if conditions.contains(&condition) {
            continue;
        }
        let folded = conditions
            .last()
            .filter(|last| last.starts_with(MORE_CONDITIONS))
            .cloned();
        if folded.is_none() && conditions.len() + 1 < MAX_CONDITIONS {
            conditions.push(condition);
            continue;
        }
        let mut hasher = sha2::Sha256::new();
        hasher.update(folded.as_deref().unwrap_or_default().as_bytes());
        hasher.update([0]);
        hasher.update(condition.as_bytes());
        let digest = hex(hasher.finalize().get(..16).unwrap_or_default());
        let marker = format!("{MORE_CONDITIONS} (digest {digest})");
        match (folded, conditions.last_mut()) {
            (Some(_), Some(last)) => *last = marker,
            _ => conditions.push(marker),
        }
    }
}

/// Conditions that only test builds have: nothing under them ships.
pub(crate) fn test_only(conditions: &[String]) -> bool {
    conditions.iter().any(|condition| condition == "test")
}
