//! Where a schema type's schema and its JSON would part, reported at the
//! attribute that parts them. The schema is schemars' view of what serde
//! reads, so:
//! - a `#[schemars(…)]` key that mirrors one of serde's (a rename, a skip,
//!   a default, a tagging) changes the schema alone: serde's is written;
//! - in a type that writes JSON, the name written is the name read (the
//!   schema shows the name read);
//! - a field left out in one direction only is out of the schema in a
//!   type that writes JSON (an output's schema says what it writes; an
//!   input-only type may skip what it never writes), and so is a variant
//!   of an output-only enum;
//! - every name that becomes a property (a field's, a data variant's in an
//!   externally tagged enum, a `tag` or `content`) is one tool schemas
//!   take, and a name serde's renaming rules would cut inside a character
//!   is renamed first;
//! - serde's crate is the macro's to name.

use syn::{Attribute, Ident, LitStr};

use crate::ctxt::Ctxt;
use crate::wire_attrs::{Meta, find, metas_with_cfg_attr};

/// The longest property name tool schemas take.
const MAX_PROPERTY_NAME: usize = 64;

/// The `#[schemars(…)]` keys that mirror serde's, by where they go.
const MIRRORED_ON_CONTAINERS: &[&str] = &[
    "rename_all",
    "rename_all_fields",
    "tag",
    "content",
    "untagged",
    "transparent",
    "from",
    "try_from",
    "into",
    "deny_unknown_fields",
    "default",
    "remote",
];
const MIRRORED_ON_VARIANTS: &[&str] = &[
    "rename",
    "rename_all",
    "alias",
    "skip",
    "skip_serializing",
    "skip_deserializing",
    "untagged",
];
/// `skip` is not here: it is checked against serde's own skip.
const MIRRORED_ON_FIELDS: &[&str] = &[
    "rename",
    "alias",
    "default",
    "flatten",
    "skip_serializing",
    "skip_deserializing",
    "skip_serializing_if",
];

/// Whether tool schemas take `name` as a property name: 1 to 64 ASCII
/// letters, digits, `_`, `.` and `-`.
fn is_property_name(name: &str) -> bool {
    (1..=MAX_PROPERTY_NAME).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

fn not_a_property_name(name: &str) -> String {
    format!(
        "{name:?} is no property name tool schemas take: 1 to {MAX_PROPERTY_NAME} ASCII letters, digits, `_`, `.` or `-`"
    )
}

/// Reports the schemars keys in `mirrored`.
fn schema_only_keys(cx: &Ctxt, schemars: &[Meta], mirrored: &[&str]) {
    for meta in schemars
        .iter()
        .filter(|meta| mirrored.contains(&meta.key.as_str()))
    {
        cx.error_at(
            meta.span,
            format!(
                "`#[schemars({key})]` changes the schema alone, so the schema and the JSON disagree: \
                 write it as serde's, `#[serde({key} …)]` (schemars reads serde's)",
                key = meta.key
            ),
        );
    }
}

/// Reports a serde renaming that gives the JSON a name the schema does not
/// say: in a type that writes JSON, the name written (its `serialize`
/// side) must be the name read (its `deserialize` side, which the schema
/// shows). `rename(serialize = "a")` beside `rename(deserialize = "a")` is
/// one name; an input-only type names only what it reads.
fn one_name_both_ways(cx: &Ctxt, serde: &[Meta], serialize: bool) {
    if !serialize {
        return;
    }
    for key in ["rename", "rename_all", "rename_all_fields"] {
        let metas: Vec<&Meta> = serde.iter().filter(|meta| meta.key == key).collect();
        let side = |direction: &str| named(serde, key, direction);
        if side("serialize") != side("deserialize")
            && let Some(meta) = metas.iter().find(|meta| !meta.nested.is_empty())
        {
            cx.error_at(
                meta.span,
                format!(
                    "`{key}` gives the JSON it writes a name the schema does not say (the schema shows the \
                     name read): give one both ways, `{key} = \"…\"`"
                ),
            );
        }
    }
}

/// What serde's `key` (`rename`, `rename_all`…) names for `direction`
/// (`serialize` or `deserialize`): a plain `key = "…"` or the direction's
/// own `key(direction = "…")`, in whichever attribute it is written.
fn named(serde: &[Meta], key: &str, direction: &str) -> Option<String> {
    serde
        .iter()
        .filter(|meta| meta.key == key)
        .find_map(|meta| match &meta.text {
            Some(text) => Some(text.value()),
            None => find(&meta.nested, direction)
                .and_then(|nested| nested.text.as_ref())
                .map(LitStr::value),
        })
}

/// The plain `rename = "…"`, if the item has one.
fn plain_rename(serde: &[Meta]) -> Option<&LitStr> {
    find(serde, "rename")
        .filter(|meta| meta.nested.is_empty())
        .and_then(|meta| meta.text.as_ref())
}

/// Reports a skip in one direction only in a type that writes JSON.
fn one_way_skip(cx: &Ctxt, serde: &[Meta], name: &Ident, serialize: bool, deserialize: bool) {
    if !serialize || find(serde, "skip").is_some() {
        return;
    }
    let has = |key: &str| find(serde, key).is_some();
    for (key, other) in [
        ("skip_serializing", "skip_deserializing"),
        ("skip_deserializing", "skip_serializing"),
    ] {
        if let Some(meta) = find(serde, key)
            && !has(other)
        {
            let fix = match (deserialize, key) {
                (true, "skip_serializing") => {
                    ", or make the type `#[agent_schema(input)]` (it is never written then)"
                }
                (true, _) => "",
                (false, _) => " (an output's schema says what it writes)",
            };
            cx.error_at(
                meta.span,
                format!(
                    "`{key}` leaves `{name}` out in one direction only, which its schema cannot say: \
                     skip it both ways with `#[serde(skip)]`{fix}"
                ),
            );
        }
    }
}

/// Reports `name` (the item's Rust name) when serde's renaming rules could
/// cut it inside a character or past its end: one that starts with a
/// non-ASCII letter, or is only underscores, and is not renamed both ways.
/// serde's derive renames every item for both directions, whichever the
/// type goes and whether or not the item is skipped, so the name must be
/// given for both (a plain `rename = "…"` gives both).
fn renamable(cx: &Ctxt, serde: &[Meta], name: &Ident, skipped: bool) -> bool {
    let text = name.to_string();
    let text = text.strip_prefix("r#").unwrap_or(&text);
    let read = named(serde, "rename", "deserialize").is_some();
    let written = named(serde, "rename", "serialize").is_some();
    let renamed = read && written;
    let cut = !text.starts_with(|c: char| c.is_ascii()) || text.chars().all(|c| c == '_');
    if renamed || !cut {
        return true;
    }
    let message = if read || written {
        format!(
            "serde's derive spells `{text}` for both directions, whichever the type goes: \
             name it both ways with `#[serde(rename = \"…\")]` (ASCII letters, digits, `_`, `.`, `-`)"
        )
    } else if skipped {
        format!(
            "serde's renaming cannot spell `{text}`, even for an item it skips: \
             give it a name with `#[serde(rename = \"…\")]` (ASCII letters, digits, `_`, `.`, `-`)"
        )
    } else {
        format!(
            "`{text}` is no name on the wire (tool schemas take ASCII letters, digits, `_`, `.` and `-`): \
             give it one with `#[serde(rename = \"…\")]`"
        )
    };
    cx.error_spanned_by(name, message);
    false
}

/// The container's own checks.
pub(crate) fn check_container(cx: &Ctxt, attrs: &[Attribute], serialize: bool) {
    let serde = metas_with_cfg_attr(attrs, "serde");
    if let Some(meta) = find(&serde, "crate") {
        cx.error_at(
            meta.span,
            "#[agent_schema] names serde's crate itself (the one agent-surface re-exports): remove `crate = …`",
        );
    }
    schema_only_keys(
        cx,
        &metas_with_cfg_attr(attrs, "schemars"),
        MIRRORED_ON_CONTAINERS,
    );
    one_name_both_ways(cx, &serde, serialize);
    // Names the schema uses as property names or as its definition's key.
    for key in ["tag", "content", "rename"] {
        if let Some(lit) = find(&serde, key)
            .filter(|meta| meta.nested.is_empty())
            .and_then(|meta| meta.text.as_ref())
            && !is_property_name(&lit.value())
        {
            cx.error_spanned_by(lit, not_a_property_name(&lit.value()));
        }
    }
}

/// A variant's checks: `wire_name` is its name on the wire, a property
/// name when `is_key` (a variant with data in an externally tagged enum).
pub(crate) fn check_variant(
    cx: &Ctxt,
    attrs: &[Attribute],
    name: &Ident,
    direction: (bool, bool),
    wire_name: &str,
    is_key: bool,
) {
    let (serialize, deserialize) = direction;
    let serde = metas_with_cfg_attr(attrs, "serde");
    schema_only_keys(
        cx,
        &metas_with_cfg_attr(attrs, "schemars"),
        MIRRORED_ON_VARIANTS,
    );
    one_name_both_ways(cx, &serde, serialize);
    // In a type that is read too, a variant the agent may not send
    // (`skip_deserializing`) is the schema's to leave out; in an output
    // alone, the schema says what is written.
    if !deserialize {
        one_way_skip(cx, &serde, name, serialize, deserialize);
    }
    let skipped = find(&serde, "skip").is_some();
    if !renamable(cx, &serde, name, skipped) || skipped {
        return;
    }
    if is_key && !is_property_name(wire_name) {
        match plain_rename(&serde) {
            Some(lit) => cx.error_spanned_by(lit, not_a_property_name(wire_name)),
            None => cx.error_spanned_by(name, not_a_property_name(wire_name)),
        }
    }
}

/// A named field's checks (`serde` its serde metas, `cfg_attr`s
/// included; `name` its Rust name, `wire_name` its name on the wire), in a
/// type that serializes and/or deserializes.
pub(crate) fn check_field(
    cx: &Ctxt,
    attrs: &[Attribute],
    serde: &[Meta],
    name: &Ident,
    direction: (bool, bool),
    wire_name: &str,
) {
    let (serialize, deserialize) = direction;
    let schemars = metas_with_cfg_attr(attrs, "schemars");
    let has = |key: &str| find(serde, key).is_some();
    schema_only_keys(cx, &schemars, MIRRORED_ON_FIELDS);
    one_name_both_ways(cx, serde, serialize);
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
    one_way_skip(cx, serde, name, serialize, deserialize);
    if !renamable(cx, serde, name, skipped_by_serde) || skipped_by_serde {
        return;
    }
    if !is_property_name(wire_name) {
        match plain_rename(serde) {
            Some(lit) => cx.error_spanned_by(lit, not_a_property_name(wire_name)),
            None => cx.error_spanned_by(name, not_a_property_name(wire_name)),
        }
    }
}

/// A field read with `#[serde(default)]` whose type's default the schema's
/// own bounds refuse (`0` below a `range(min = 1)`, an empty string or
/// list below a `length(min = 1)`): an agent that leaves the field out
/// hands the handler a value the schema says cannot be, and the schema
/// shows a `default` it forbids. Only the types whose default the macro
/// knows are checked (numbers, `String`, lists and sets); a
/// `default = "path"` is the author's own value.
pub(crate) fn default_within_bounds(
    cx: &Ctxt,
    attrs: &[Attribute],
    serde: &[Meta],
    name: &Ident,
    ty: &syn::Type,
) {
    let Some(default) = find(serde, "default") else {
        return;
    };
    if default.form != crate::wire_attrs::Form::Path {
        return;
    }
    let syn::Type::Path(path) = ty else { return };
    let Some(last) = path.path.segments.last() else {
        return;
    };
    let type_name = last.ident.to_string();
    const NUMBERS: &[&str] = &[
        "u8", "u16", "u32", "u64", "usize", "i8", "i16", "i32", "i64", "isize", "f32", "f64",
    ];
    const SIZED: &[&str] = &["String", "Vec", "VecDeque", "BTreeSet", "HashSet"];
    let schemars = metas_with_cfg_attr(attrs, "schemars");
    let bound = |key: &str, side: &str| {
        find(&schemars, key)
            .and_then(|meta| find(&meta.nested, side))
            .and_then(|meta| meta.number)
    };
    let refused = if NUMBERS.contains(&type_name.as_str()) {
        match (bound("range", "min"), bound("range", "max")) {
            (Some(min), _) if min > 0.0 => Some(format!("`0` is below its `range(min = {min})`")),
            (_, Some(max)) if max < 0.0 => Some(format!("`0` is above its `range(max = {max})`")),
            _ => None,
        }
    } else if SIZED.contains(&type_name.as_str()) {
        bound("length", "min")
            .filter(|min| *min > 0.0)
            .map(|min| format!("an empty value is below its `length(min = {min})`"))
    } else {
        None
    };
    if let Some(refused) = refused {
        cx.error_at(
            default.span,
            format!(
                "`{name}` defaults to `{type_name}::default()` when the agent leaves it out, but {refused}: \
                 the handler would get a value the schema refuses; give a default within the bounds \
                 (`#[serde(default = \"path\")]`), or make the field required"
            ),
        );
    }
}
