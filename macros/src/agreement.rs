//! Where a schema type's schema and its JSON would part, reported at the
//! attribute that parts them: a `#[schemars(…)]` that renames or leaves
//! out what serde still writes and reads, a serde skip in one direction of
//! a type that goes both ways (the schema subset has no `readOnly` or
//! `writeOnly`), and a wire name that tool schemas do not take as a
//! property name — and a serde `crate` the macro names itself.

use syn::{Attribute, Ident, LitStr};

use crate::ctxt::Ctxt;
use crate::wire_attrs::{Meta, find, metas_with_cfg_attr};

/// The longest property name tool schemas take.
const MAX_PROPERTY_NAME: usize = 64;

/// Whether tool schemas take `name` as a property name: 1 to 64 ASCII
/// letters, digits, `_`, `.` and `-`.
fn is_property_name(name: &str) -> bool {
    (1..=MAX_PROPERTY_NAME).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// The names a serde `rename` writes: `rename = "…"` or
/// `rename(serialize = "…", deserialize = "…")`.
fn renamed_to(meta: &Meta) -> Vec<&LitStr> {
    meta.text
        .iter()
        .chain(meta.nested.iter().filter_map(|nested| nested.text.as_ref()))
        .collect()
}

/// The container's own: a schemars renaming rule renames the schema only,
/// and serde's crate is the macro's to name.
pub(crate) fn check_container(cx: &Ctxt, attrs: &[Attribute]) {
    if let Some(meta) = find(&metas_with_cfg_attr(attrs, "serde"), "crate") {
        cx.error_at(
            meta.span,
            "#[agent_schema] names serde's crate itself (the one agent-surface re-exports): remove `crate = …`",
        );
    }
    let schemars = metas_with_cfg_attr(attrs, "schemars");
    for key in ["rename_all", "rename_all_fields"] {
        if let Some(meta) = find(&schemars, key) {
            cx.error_at(
                meta.span,
                format!(
                    "`#[schemars({key})]` renames in the schema only, so the schema and the JSON disagree: \
                     write `#[serde({key} = \"…\")]` (schemars reads serde's)"
                ),
            );
        }
    }
}

/// A variant's: a schemars `rename` renames it in the schema only.
pub(crate) fn check_variant(cx: &Ctxt, attrs: &[Attribute], name: &Ident) {
    let schemars = metas_with_cfg_attr(attrs, "schemars");
    if let Some(meta) = find(&schemars, "rename") {
        cx.error_at(
            meta.span,
            format!(
                "`#[schemars(rename)]` renames `{name}` in the schema only, so the schema and the JSON disagree: \
                 write `#[serde(rename = \"…\")]` (schemars reads serde's)"
            ),
        );
    }
}

/// A named field's (`name` its Rust name), in a type that serializes
/// and/or deserializes.
pub(crate) fn check_field(
    cx: &Ctxt,
    attrs: &[Attribute],
    name: &Ident,
    serialize: bool,
    deserialize: bool,
) {
    let schemars = metas_with_cfg_attr(attrs, "schemars");
    let serde = metas_with_cfg_attr(attrs, "serde");
    let has = |key: &str| find(&serde, key).is_some();
    if let Some(meta) = find(&schemars, "rename") {
        cx.error_at(
            meta.span,
            format!(
                "`#[schemars(rename)]` renames `{name}` in the schema only, so the schema and the JSON disagree: \
                 write `#[serde(rename = \"…\")]` (schemars reads serde's)"
            ),
        );
    }
    // A field serde leaves out in every direction the type goes is out of
    // the schema already; anything less and the schema hides a field serde
    // still writes or requires.
    let skipped_by_serde = has("skip")
        || ((!serialize || has("skip_serializing")) && (!deserialize || has("skip_deserializing")));
    if let Some(meta) = find(&schemars, "skip")
        && !skipped_by_serde
    {
        cx.error_at(
            meta.span,
            format!(
                "`#[schemars(skip)]` leaves `{name}` out of the schema while serde still {} it: \
                 write `#[serde(skip)]` (a field serde skips is out of the schema too), or remove this",
                match (serialize, deserialize) {
                    (true, true) => "writes and reads",
                    (true, false) => "writes",
                    _ => "reads",
                }
            ),
        );
    }
    if serialize && deserialize && !has("skip") {
        for (key, only, option) in [
            ("skip_serializing", "write-only", "input"),
            ("skip_deserializing", "read-only", "output"),
        ] {
            let other = if key == "skip_serializing" {
                "skip_deserializing"
            } else {
                "skip_serializing"
            };
            if let Some(meta) = find(&serde, key)
                && !has(other)
            {
                cx.error_at(
                    meta.span,
                    format!(
                        "`{key}` makes `{name}` {only} in a type that goes both ways, which agent schemas do not \
                         express: skip it both ways with `#[serde(skip)]`, or make the type `#[agent_schema({option})]`"
                    ),
                );
            }
        }
    }
    // The name on the wire: a property of the schema.
    match find(&serde, "rename") {
        Some(meta) => {
            for lit in renamed_to(meta) {
                if !is_property_name(&lit.value()) {
                    cx.error_spanned_by(
                        lit,
                        format!(
                            "{:?} is no property name tool schemas take: 1 to {MAX_PROPERTY_NAME} ASCII letters, digits, `_`, `.` or `-`",
                            lit.value()
                        ),
                    );
                }
            }
        }
        None if !has("skip") && !name.to_string().is_ascii() => cx.error_spanned_by(
            name,
            format!(
                "`{name}` is no property name tool schemas take (ASCII letters, digits, `_`, `.` or `-`): \
                 give it one with `#[serde(rename = \"…\")]`"
            ),
        ),
        None => {}
    }
}
