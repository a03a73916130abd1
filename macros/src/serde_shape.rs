//! serde attribute combinations serde's derive rejects, checked before the
//! derives run: a key given twice, `untagged` beside `tag` or `content`, an
//! internal tag a struct variant's field also answers to, `transparent`
//! without exactly one field, a container `default` on an enum, `borrow` on
//! a field with no lifetime. Each is reported once, at its token, with the
//! rule and the fix, and the derives are then not run (see `wire_keys`), so
//! no trait error follows elsewhere.

use syn::visit::Visit;
use syn::{Data, DeriveInput, Fields, LitStr, Type};

use crate::ctxt::Ctxt;
use crate::wire_attrs::{Form, Meta, find, metas};

/// Checks `item`'s serde attributes; `serialize`/`deserialize` say which
/// derives run.
pub(crate) fn check(cx: &Ctxt, item: &DeriveInput, serialize: bool, deserialize: bool) {
    let container = metas(&item.attrs, "serde");
    given_once(cx, &container, "container");
    match &item.data {
        Data::Struct(data) => {
            for field in &data.fields {
                field_keys(cx, field);
            }
            transparent(cx, item, &container, &data.fields, serialize, deserialize);
        }
        Data::Enum(data) => {
            for variant in &data.variants {
                given_once(cx, &metas(&variant.attrs, "serde"), "variant");
                for field in &variant.fields {
                    field_keys(cx, field);
                }
            }
            if let Some(transparent) = find(&container, "transparent") {
                cx.error_at(
                    transparent.span,
                    "`transparent` makes a type its one field on the wire, and an enum has no one field: \
                     remove `transparent`",
                );
            }
            if let Some(default) = find(&container, "default") {
                cx.error_at(
                    default.span,
                    "a container's `default` fills the fields an agent leaves out from `Default::default()`, \
                     so it goes on a struct; an enum has no fields of its own: remove it, or put \
                     `#[serde(default)]` on the fields of a struct variant",
                );
            }
            tagging(cx, &container);
            internal_tag(cx, &container, data);
        }
        Data::Union(_) => {}
    }
}

fn field_keys(cx: &Ctxt, field: &syn::Field) {
    let serde = metas(&field.attrs, "serde");
    given_once(cx, &serde, "field");
    if let Some(borrow) = find(&serde, "borrow")
        && !has_lifetime(&field.ty)
    {
        let ty = crate::types::type_text(&field.ty);
        cx.error_at(
            borrow.span,
            format!(
                "`borrow` borrows from the input, but `{ty}` has no lifetime to borrow with \
                 (and an agent's input is owned by the handler): remove `borrow`"
            ),
        );
    }
}

/// What one serde key sets: `rename = "…"` sets the name both ways,
/// `rename(deserialize = "…")` one way, `with` both `serialize_with` and
/// `deserialize_with`; `alias` may repeat.
fn slots(meta: &Meta) -> Vec<String> {
    let key = meta.key.as_str();
    match key {
        "alias" => Vec::new(),
        "with" => vec!["serialize_with".to_owned(), "deserialize_with".to_owned()],
        _ if meta.form == Form::List => meta
            .nested
            .iter()
            .map(|inner| format!("{key}({})", inner.key))
            .collect(),
        "rename" | "rename_all" | "rename_all_fields" | "bound" => {
            vec![format!("{key}(serialize)"), format!("{key}(deserialize)")]
        }
        _ => vec![key.to_owned()],
    }
}

/// Each serde key once among one container's, variant's or field's
/// `#[serde(…)]` attributes: serde takes each once.
fn given_once(cx: &Ctxt, metas: &[Meta], place: &str) {
    let mut seen: Vec<String> = Vec::new();
    for meta in metas {
        let slots = slots(meta);
        if let Some(slot) = slots.iter().find(|slot| seen.contains(slot)) {
            let what = if meta.form == Form::List {
                format!("`{}`", slot.replace(')', " = …)"))
            } else if meta.key == "with" {
                format!("`with` (which sets `{slot}`)")
            } else {
                format!("`{}`", meta.key)
            };
            cx.error_at(
                meta.span,
                format!("serde's {what} is given twice on this {place}; keep one"),
            );
        } else {
            seen.extend(slots);
        }
    }
}

/// `untagged` beside `tag` or `content`, and `content` without `tag`.
fn tagging(cx: &Ctxt, container: &[Meta]) {
    let untagged = find(container, "untagged");
    let tag = find(container, "tag");
    let content = find(container, "content");
    match (untagged, tag, content) {
        (Some(_), Some(tag), _) => cx.error_at(
            tag.span,
            "`untagged` and `tag` contradict each other: an untagged enum writes no tag, only the variant's data; \
             remove `tag = \"…\"` (and `content`), or remove `untagged`",
        ),
        (Some(_), None, Some(content)) => cx.error_at(
            content.span,
            "`untagged` and `content` contradict each other: an untagged enum writes only the variant's data; \
             remove `content = \"…\"`, or remove `untagged` and add `tag = \"…\"`",
        ),
        (None, None, Some(content)) => cx.error_at(
            content.span,
            "`content` needs `tag`: an adjacently tagged enum writes the variant's name under `tag` and its data \
             under `content`; add `tag = \"…\"`",
        ),
        _ => {}
    }
}

/// An internally tagged enum writes the variant's name under the tag in
/// the same object as a struct variant's fields: no field may answer to it.
fn internal_tag(cx: &Ctxt, container: &[Meta], data: &syn::DataEnum) {
    if find(container, "content").is_some() || find(container, "untagged").is_some() {
        return;
    }
    let Some(tag) = find(container, "tag").and_then(|meta| meta.text.as_ref()) else {
        return;
    };
    let tag = tag.value();
    let fields_rule = rule_of(container, "rename_all_fields").unwrap_or_else(|| "camelCase".into());
    for variant in &data.variants {
        let Fields::Named(fields) = &variant.fields else {
            continue;
        };
        let variant_serde = metas(&variant.attrs, "serde");
        if skips(&variant_serde) || find(&variant_serde, "untagged").is_some() {
            continue;
        }
        let rule = rule_of(&variant_serde, "rename_all").unwrap_or_else(|| fields_rule.clone());
        for field in &fields.named {
            let serde = metas(&field.attrs, "serde");
            if skips(&serde) {
                continue;
            }
            let Some(ident) = &field.ident else { continue };
            let rust = ident.to_string();
            let rust = rust.strip_prefix("r#").unwrap_or(&rust);
            // The literals the field is named by: its `rename`s and aliases.
            let mut written: Vec<&LitStr> = Vec::new();
            for meta in &serde {
                match meta.key.as_str() {
                    "rename" | "alias" => {
                        written.extend(meta.text.iter());
                        written.extend(meta.nested.iter().filter_map(|m| m.text.as_ref()));
                    }
                    _ => {}
                }
            }
            let renamed = find(&serde, "rename").is_some();
            let derived = (!renamed)
                .then(|| agent_surface_rules::rename_field(rust, &rule))
                .flatten();
            let clash = written
                .iter()
                .find(|lit| lit.value() == tag)
                .map(|lit| lit.span())
                .or_else(|| (derived.as_deref() == Some(tag.as_str())).then(|| ident.span()));
            if let Some(span) = clash {
                cx.error_at(
                    span,
                    format!(
                        "`{tag}` is this enum's tag (`tag = \"{tag}\"`): an internally tagged enum writes the variant's \
                         name under `{tag}` in the same object as the variant's fields, so no field can answer to `{tag}` too; \
                         rename the field (`#[serde(rename = \"…\")]`) or its alias, or choose another `tag`"
                    ),
                );
            }
        }
    }
}

/// The rename rule `key` sets (or sets for deserializing).
fn rule_of(metas: &[Meta], key: &str) -> Option<String> {
    find(metas, key).and_then(|meta| {
        meta.text.as_ref().map(LitStr::value).or_else(|| {
            find(&meta.nested, "deserialize").and_then(|m| m.text.as_ref().map(LitStr::value))
        })
    })
}

fn skips(metas: &[Meta]) -> bool {
    metas.iter().any(|meta| {
        matches!(
            meta.key.as_str(),
            "skip" | "skip_serializing" | "skip_deserializing"
        )
    })
}

/// `transparent`: a struct with exactly one field serde reads and writes
/// (the others skipped, or defaulted when read), and no `from`/`try_from`/
/// `into`.
fn transparent(
    cx: &Ctxt,
    item: &DeriveInput,
    container: &[Meta],
    fields: &Fields,
    serialize: bool,
    deserialize: bool,
) {
    let Some(transparent) = find(container, "transparent") else {
        return;
    };
    if let Some(conversion) = ["from", "try_from", "into"]
        .iter()
        .find_map(|key| find(container, key))
    {
        cx.error_at(
            conversion.span,
            format!(
                "`transparent` makes `{}` its one field on the wire, and `{}` makes it another type: keep one of them",
                item.ident, conversion.key
            ),
        );
        return;
    }
    // A field under `#[cfg]` or `cfg_attr` may or may not count: serde,
    // which sees the build's attributes, decides.
    if fields.iter().any(|field| {
        field
            .attrs
            .iter()
            .any(|attr| attr.path().is_ident("cfg") || attr.path().is_ident("cfg_attr"))
    }) {
        return;
    }
    let counted = |way: &str| {
        fields
            .iter()
            .filter(|field| !is_phantom(&field.ty))
            .filter(|field| {
                let serde = metas(&field.attrs, "serde");
                let has = |key: &str| find(&serde, key).is_some();
                if way == "serialize" {
                    !has("skip") && !has("skip_serializing")
                } else {
                    !has("skip") && !has("skip_deserializing") && !has("default")
                }
            })
            .count()
    };
    let ways = [("serialize", serialize), ("deserialize", deserialize)];
    let wrong = ways
        .iter()
        .filter(|(_, runs)| *runs)
        .map(|(way, _)| counted(way))
        .find(|count| *count != 1);
    let Some(count) = wrong else { return };
    let ident = &item.ident;
    let message = if matches!(fields, Fields::Unit) || fields.is_empty() {
        format!(
            "`transparent` makes `{ident}` its one field on the wire, and it has none: \
             give it one field, or remove `transparent`"
        )
    } else if count == 0 {
        format!(
            "`transparent` makes `{ident}` its one field on the wire, and every field is skipped: \
             leave one field without `skip`/`default`, or remove `transparent`"
        )
    } else {
        format!(
            "`transparent` makes `{ident}` its one field on the wire, and {count} fields are on it: \
             keep one field, skip the others (`#[serde(skip)]`, filled from `Default`), or remove `transparent`"
        )
    };
    cx.error_at(transparent.span, message);
}

fn is_phantom(ty: &Type) -> bool {
    match ty {
        Type::Path(path) => path
            .path
            .segments
            .last()
            .is_some_and(|segment| segment.ident == "PhantomData"),
        Type::Group(group) => is_phantom(&group.elem),
        _ => false,
    }
}

/// Whether `ty` names a lifetime anywhere (what `borrow` borrows with).
fn has_lifetime(ty: &Type) -> bool {
    struct Finder(bool);
    impl<'ast> Visit<'ast> for Finder {
        fn visit_lifetime(&mut self, _: &'ast syn::Lifetime) {
            self.0 = true;
        }
    }
    let mut finder = Finder(false);
    finder.visit_type(ty);
    finder.0
}
