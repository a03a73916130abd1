//! The wire shape a schema type's serde and schemars attributes give it,
//! checked against what the schema says, at the attribute's token: a field
//! the serializer may omit while the schema requires it, a `flatten` of
//! something that is not an object, an internally tagged enum whose newtype
//! variant carries no object, bounds that admit no value, a pattern the
//! runtime cannot compile, two fields or variants with one wire name, a
//! `transparent` type offered as an object input, an `Option` read with
//! `deserialize_with` and no `default`, an `Option<Option<T>>` read without
//! `deserialize_with` (absent and `null` both `None`), and a map whose
//! values hold the type itself.

use std::collections::BTreeMap;

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Attribute, Data, DeriveInput, Fields, Ident, LitStr, Type};

use crate::ctxt::Ctxt;
use crate::wire_attrs::{find, metas, metas_with_cfg_attr, wire_names};

/// The last path segment of a type, and its generic arguments' first type.
fn head(ty: &Type) -> Option<(String, Option<&Type>)> {
    match ty {
        Type::Path(path) => {
            let segment = path.path.segments.last()?;
            let inner = match &segment.arguments {
                syn::PathArguments::AngleBracketed(args) => {
                    args.args.iter().find_map(|arg| match arg {
                        syn::GenericArgument::Type(ty) => Some(ty),
                        _ => None,
                    })
                }
                _ => None,
            };
            Some((segment.ident.to_string(), inner))
        }
        Type::Group(group) => head(&group.elem),
        Type::Paren(paren) => head(&paren.elem),
        _ => None,
    }
}

const SCALARS: [&str; 18] = [
    "bool", "char", "str", "String", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16",
    "i32", "i64", "i128", "isize", "f32", "f64",
];
const SEQUENCES: [&str; 6] = [
    "Vec",
    "VecDeque",
    "HashSet",
    "BTreeSet",
    "LinkedList",
    "BinaryHeap",
];

/// What a type is on the wire when the macro can tell from its spelling:
/// `Some("a string")`, `Some("an array")`, … — never an object.
fn not_an_object(ty: &Type) -> Option<&'static str> {
    match ty {
        Type::Array(_) | Type::Slice(_) => Some("an array"),
        Type::Tuple(tuple) if tuple.elems.is_empty() => Some("null"),
        Type::Tuple(_) => Some("an array"),
        Type::Reference(reference) => not_an_object(&reference.elem),
        _ => {
            let (name, inner) = head(ty)?;
            if SCALARS.contains(&name.as_str()) {
                Some(if matches!(name.as_str(), "String" | "str" | "char") {
                    "a string"
                } else if name == "bool" {
                    "a boolean"
                } else {
                    "a number"
                })
            } else if SEQUENCES.contains(&name.as_str()) {
                Some("an array")
            } else if matches!(name.as_str(), "Option" | "Box" | "Arc" | "Rc") {
                inner.and_then(not_an_object)
            } else {
                None
            }
        }
    }
}

pub(crate) fn is_option(ty: &Type) -> bool {
    head(ty).is_some_and(|(name, _)| name == "Option")
}

fn skipped(attrs: &[Attribute]) -> bool {
    metas(attrs, "serde")
        .iter()
        .any(|meta| matches!(meta.key.as_str(), "skip" | "skip_deserializing" | "flatten"))
}

/// Reports two members answering to one wire name, naming both.
fn collisions<'a>(
    cx: &Ctxt,
    members: impl Iterator<Item = (&'a [Attribute], String, Span)>,
    rule: Option<&str>,
    what: &str,
    variant: bool,
) {
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    for (attrs, rust, span) in members {
        if skipped(attrs) || !crate::cfg::cfgs(attrs).is_empty() {
            continue;
        }
        for name in wire_names(attrs, &rust, rule, variant) {
            if let Some(earlier) = seen.get(&name) {
                if earlier != &rust {
                    cx.error_at(
                        span,
                        format!(
                            "{what}s `{earlier}` and `{rust}` both appear on the wire as `{name}`: \
                             rename one with `#[serde(rename = \"…\")]`"
                        ),
                    );
                }
            } else {
                seen.insert(name, rust.clone());
            }
        }
    }
}

/// The rule an `Option` field read with `deserialize_with` (or `with`)
/// and no `default` breaks.
pub(crate) fn option_read_without_default(name: &str, key: &str) -> String {
    format!(
        "`{name}` is read with `{key}`, so serde no longer takes a missing `{name}` as `None`: \
         an agent that leaves it out (as the schema allows) gets INVALID_INPUT; \
         add `default` (`#[serde(default, {key} = …)]`)"
    )
}

/// Whether `ty` names the item (`Self`, or its own name) anywhere.
pub(crate) fn holds_item(ty: &Type, item: &Ident) -> bool {
    struct Finder<'a> {
        item: &'a Ident,
        found: bool,
    }
    impl<'ast> syn::visit::Visit<'ast> for Finder<'_> {
        fn visit_path(&mut self, path: &'ast syn::Path) {
            if path.segments.len() == 1
                && path
                    .segments
                    .first()
                    .is_some_and(|s| s.ident == *self.item || s.ident == "Self")
            {
                self.found = true;
            }
            syn::visit::visit_path(self, path);
        }
    }
    let mut finder = Finder { item, found: false };
    syn::visit::Visit::visit_type(&mut finder, ty);
    finder.found
}

/// A map whose values hold the item itself (`HashMap<String, Self>`,
/// `BTreeMap<String, Tree>` inside `Tree`), anywhere in `ty`: a typed map
/// value, outside the subset like any other. The check the other field
/// types get (a trait bound on the field's type) is not made for a field
/// that holds the item, so the rule is stated here.
fn typed_self_maps(cx: &Ctxt, ty: &Type, item: &Ident) {
    struct Maps<'c, 'a> {
        cx: &'c Ctxt,
        item: &'a Ident,
    }
    impl<'ast> syn::visit::Visit<'ast> for Maps<'_, '_> {
        fn visit_type_path(&mut self, path: &'ast syn::TypePath) {
            if let Some(segment) = path.path.segments.last()
                && matches!(segment.ident.to_string().as_str(), "HashMap" | "BTreeMap")
                && let syn::PathArguments::AngleBracketed(args) = &segment.arguments
                && let Some(value) = args
                    .args
                    .iter()
                    .filter_map(|arg| match arg {
                        syn::GenericArgument::Type(ty) => Some(ty),
                        _ => None,
                    })
                    .nth(1)
                && holds_item(value, self.item)
            {
                let shown = if matches!(value, Type::Path(p) if p.path.is_ident("Self")) {
                    self.item.to_string()
                } else {
                    crate::types::type_text(value)
                };
                self.cx.error_spanned_by(
                    path,
                    format!(
                        "maps with `{shown}` values are outside the agent-surface subset: \
                         a typed map value needs `additionalProperties: {{schema}}`, which the subset does not allow; \
                         use a Vec of `#[agent_schema]` entry structs with named `key` and `value` fields, \
                         or a struct with named fields, or serde_json::Value values"
                    ),
                );
                return;
            }
            syn::visit::visit_type_path(self, path);
        }
    }
    syn::visit::Visit::visit_type(&mut Maps { cx, item }, ty);
}

fn bounds(cx: &Ctxt, attrs: &[Attribute]) {
    for namespace in ["schemars", "validate", "garde"] {
        for meta in metas(attrs, namespace) {
            match meta.key.as_str() {
                "range" | "length" => {
                    if meta.key == "length"
                        && let Some(negative) = meta
                            .nested
                            .iter()
                            .find(|inner| inner.number.is_some_and(|n| n < 0.0))
                    {
                        cx.error_at(
                            negative.span,
                            "a length counts characters or items: it cannot be negative",
                        );
                    }
                    let (min, max) = (find(&meta.nested, "min"), find(&meta.nested, "max"));
                    if let (Some(min), Some(max)) = (min, max)
                        && let (Some(low), Some(high)) = (min.number, max.number)
                        && low > high
                    {
                        cx.error_at(
                            meta.span,
                            format!(
                                "`{}(min = {low}, max = {high})` admits no value: its `min` is above its `max`",
                                meta.key
                            ),
                        );
                    }
                }
                "regex" | "pattern" => {
                    let pattern = if meta.key == "regex" {
                        find(&meta.nested, "pattern").and_then(|m| m.text.clone())
                    } else {
                        meta.text.clone()
                    };
                    if let Some(pattern) = pattern
                        && let Err(err) = regex_syntax::Parser::new().parse(&pattern.value())
                    {
                        let reason = err.to_string();
                        let reason = reason.lines().last().unwrap_or_default().trim();
                        let reason = reason.strip_prefix("error: ").unwrap_or(reason);
                        cx.error_spanned_by(
                            &pattern,
                            format!(
                                "this pattern is not a regular expression the runtime can compile: {reason}"
                            ),
                        );
                    }
                }
                _ => {}
            }
        }
    }
}

/// Checks `item`'s wire shape; `serialize`/`deserialize` say which ways it
/// goes.
pub(crate) fn check(cx: &Ctxt, item: &DeriveInput, serialize: bool, deserialize: bool) {
    use crate::wire_keys::{SERDE_CONTAINER, SERDE_FIELD, SERDE_VARIANT, known_keys};
    known_keys(cx, &item.attrs, SERDE_CONTAINER, "a container");
    match &item.data {
        Data::Struct(data) => {
            for field in &data.fields {
                known_keys(cx, &field.attrs, SERDE_FIELD, "a field");
            }
        }
        Data::Enum(data) => {
            for variant in &data.variants {
                known_keys(cx, &variant.attrs, SERDE_VARIANT, "a variant");
                for field in &variant.fields {
                    known_keys(cx, &field.attrs, SERDE_FIELD, "a field");
                }
            }
        }
        Data::Union(_) => {}
    }
    crate::agreement::check_container(cx, &item.attrs, serialize);
    let container = metas(&item.attrs, "serde");
    let has_default = find(&metas_with_cfg_attr(&item.attrs, "serde"), "default").is_some();
    let rule = crate::names::field_rule(&item.attrs);
    let fields_rule = find(&container, "rename_all_fields")
        .and_then(|meta| meta.text.as_ref().map(LitStr::value))
        .or_else(|| Some("camelCase".to_owned()));
    let check_fields = |fields: &Fields, rule: Option<&str>| {
        for field in fields {
            bounds(cx, &field.attrs);
            let serde = metas(&field.attrs, "serde");
            if let Some(skip) = find(&serde, "skip_serializing_if")
                && serialize
                && !is_option(&field.ty)
                && find(&serde, "default").is_none()
                && !has_default
            {
                let name = field
                    .ident
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default();
                cx.error_at(
                    skip.span,
                    format!(
                        "`skip_serializing_if` can leave `{name}` out of the output, but the schema requires it, \
                         so such a result fails its schema: make the field `Option<…>`, or remove `skip_serializing_if`"
                    ),
                );
            }
            // What serde reads the field with, `cfg_attr(…, serde(…))` included.
            let read = metas_with_cfg_attr(&field.attrs, "serde");
            if let Some(ident) = &field.ident {
                let wire_name =
                    crate::wire_attrs::field_wire_name(&field.attrs, &ident.to_string(), rule);
                crate::agreement::check_field(
                    cx,
                    &field.attrs,
                    &read,
                    ident,
                    (serialize, deserialize),
                    &wire_name,
                );
                if deserialize {
                    crate::agreement::default_within_bounds(
                        cx,
                        &field.attrs,
                        &read,
                        ident,
                        &field.ty,
                    );
                }
            }
            let reader = find(&read, "deserialize_with").or_else(|| find(&read, "with"));
            let name = field
                .ident
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default();
            if deserialize
                && is_option(&field.ty)
                && find(&read, "default").is_none()
                && !has_default
                && let Some(reader) = reader
            {
                cx.error_at(reader.span, option_read_without_default(&name, &reader.key));
            }
            if deserialize
                && reader.is_none()
                && !read
                    .iter()
                    .any(|meta| matches!(meta.key.as_str(), "skip" | "skip_deserializing"))
                && let Some((outer, Some(inner))) = head(&field.ty)
                && outer == "Option"
                && is_option(inner)
            {
                let inner = crate::types::type_text(inner);
                cx.error_spanned_by(
                    &field.ty,
                    format!(
                        "serde reads both a missing `{name}` and `null` as `None`, so this `Option<Option<…>>` \
                         never holds `Some(None)`: read it with `#[serde(default, deserialize_with = \"present\")]` \
                         and `fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<{inner}>, D::Error> \
                         {{ Option::deserialize(d).map(Some) }}` (absent is `None`, `null` is `Some(None)`), \
                         or make it `{inner}`"
                    ),
                );
            }
            typed_self_maps(cx, &field.ty, &item.ident);
            if let Some(flatten) = find(&serde, "flatten")
                && let Some(shape) = not_an_object(&field.ty)
            {
                let _ = flatten;
                cx.error_spanned_by(
                    &field.ty,
                    format!(
                        "`#[serde(flatten)]` merges an object's properties into this one, but this type is {shape} on the wire: \
                         flatten a struct or a map, or remove `flatten`"
                    ),
                );
            }
        }
        if let Fields::Named(named) = fields {
            collisions(
                cx,
                named.named.iter().map(|field| {
                    let rust = field
                        .ident
                        .as_ref()
                        .map(ToString::to_string)
                        .unwrap_or_default();
                    let span = field
                        .ident
                        .as_ref()
                        .map_or_else(|| field.span(), Ident::span);
                    (field.attrs.as_slice(), rust, span)
                }),
                rule,
                "field",
                false,
            );
        }
    };
    match &item.data {
        Data::Struct(data) => check_fields(&data.fields, rule.as_deref()),
        Data::Enum(data) => {
            let tag = find(&container, "tag");
            let content = find(&container, "content");
            let adjacent = content.is_some();
            if let (Some(tag), Some(content)) = (tag, content)
                && let (Some(tag_name), Some(content_name)) = (&tag.text, &content.text)
                && tag_name.value() == content_name.value()
            {
                cx.error_spanned_by(
                    content_name,
                    format!(
                        "`tag` and `content` are both \"{}\": an adjacently tagged enum writes the variant's name \
                         and its data under two different keys; name them apart (`tag = \"kind\", content = \"value\"`)",
                        tag_name.value()
                    ),
                );
            }
            if data.variants.is_empty() {
                cx.error_spanned_by(
                    &item.ident,
                    format!(
                        "`{}` has no variants, so no value of it exists for an agent to send or read; \
                         give it a variant, or leave it out of the surface",
                        item.ident
                    ),
                );
            }
            // Externally tagged (no `tag`, not untagged): a variant with
            // data is an object with one property, its name.
            let external = tag.is_none() && find(&container, "untagged").is_none();
            for variant in &data.variants {
                let wire_name = wire_names(
                    &variant.attrs,
                    &variant.ident.to_string(),
                    rule.as_deref(),
                    true,
                )
                .into_iter()
                .next()
                .unwrap_or_default();
                let is_key = external
                    && !variant.fields.is_empty()
                    && find(&metas(&variant.attrs, "serde"), "untagged").is_none();
                crate::agreement::check_variant(
                    cx,
                    &variant.attrs,
                    &variant.ident,
                    (serialize, deserialize),
                    &wire_name,
                    is_key,
                );
                check_fields(&variant.fields, fields_rule.as_deref());
                if let (Some(tag), false, Fields::Unnamed(fields)) =
                    (tag, adjacent, &variant.fields)
                    && fields.unnamed.len() == 1
                    && let Some(field) = fields.unnamed.first()
                    && let Some(shape) = not_an_object(&field.ty)
                {
                    let tag = tag.text.as_ref().map(LitStr::value).unwrap_or_default();
                    let name = &variant.ident;
                    cx.error_spanned_by(
                        &field.ty,
                        format!(
                            "an internally tagged enum (`tag = \"{tag}\"`) puts `{tag}` inside each variant's object, \
                             but `{name}` carries {shape}: give it named fields (`{name} {{ value: … }}`), \
                             or add `content = \"…\"` to the `#[serde(…)]` of the enum"
                        ),
                    );
                }
            }
            collisions(
                cx,
                data.variants.iter().map(|variant| {
                    (
                        variant.attrs.as_slice(),
                        variant.ident.to_string(),
                        variant.ident.span(),
                    )
                }),
                rule.as_deref(),
                "variant",
                true,
            );
        }
        Data::Union(_) => {}
    }
}
