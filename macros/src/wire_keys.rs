//! The keys a schema type's `#[serde(…)]` and `#[schemars(…)]` attributes
//! may hold, and the form each is written in, checked before the derives
//! run: an unknown or misshapen key is reported once, at its token, with
//! the spelling meant, and the derives are then not run, so nothing else
//! is reported (their own errors and the trait errors their missing
//! impls would cause elsewhere never appear).

use syn::Attribute;

use crate::ctxt::Ctxt;
use crate::wire_attrs::{Form, Meta, metas};

/// serde's attributes, by where they go (serde.rs/attributes).
pub(crate) const SERDE_CONTAINER: &[&str] = &[
    "rename",
    "rename_all",
    "rename_all_fields",
    "deny_unknown_fields",
    "tag",
    "content",
    "untagged",
    "bound",
    "default",
    "remote",
    "transparent",
    "from",
    "try_from",
    "into",
    "crate",
    "expecting",
    "variant_identifier",
    "field_identifier",
];
pub(crate) const SERDE_VARIANT: &[&str] = &[
    "rename",
    "alias",
    "rename_all",
    "skip",
    "skip_serializing",
    "skip_deserializing",
    "serialize_with",
    "deserialize_with",
    "with",
    "bound",
    "borrow",
    "other",
    "untagged",
];
pub(crate) const SERDE_FIELD: &[&str] = &[
    "rename",
    "alias",
    "default",
    "flatten",
    "skip",
    "skip_serializing",
    "skip_deserializing",
    "skip_serializing_if",
    "serialize_with",
    "deserialize_with",
    "with",
    "borrow",
    "bound",
    "getter",
];
/// The keys inside schemars' `length(…)` and `range(…)`.
/// The keys of `length(…)` and `range(…)`.
const BOUND_KEYS: &[&str] = &["min", "max", "equal"];

/// `#[schemars(…)]` keys written alone: `#[schemars(email)]`.
const SCHEMARS_PATHS: &[&str] = &[
    "deny_unknown_fields",
    "untagged",
    "skip",
    "skip_serializing",
    "skip_deserializing",
    "flatten",
    "transparent",
    "inline",
    "required",
    "email",
    "url",
    "ip",
    "ipv4",
    "ipv6",
    "_unstable_ref_variants",
];

/// `#[schemars(…)]` keys that take a list: `length(max = 10)`.
const SCHEMARS_LISTS: &[(&str, &str)] = &[
    ("length", "length(max = 100)"),
    ("range", "range(min = 1, max = 10)"),
    ("regex", "regex(pattern = r\"^[a-z]+$\")"),
    ("pattern", "pattern(r\"^[a-z]+$\")"),
    ("inner", "inner(length(max = 100))"),
    ("extend", "extend(\"x-unit\" = \"ms\")"),
];

/// `#[schemars(…)]` keys that take a value other than a string literal
/// (an expression); the string-valued keys are [`STRING_VALUES`].
const EXPRESSION_VALUES: &[&str] = &["example", "transform"];

/// `#[schemars(…)]` keys written either way: `rename = "…"` or
/// `rename(deserialize = "…")`, `default` or `default = "path"`.
const SCHEMARS_EITHER: &[&str] = &[
    "rename",
    "rename_all",
    "rename_all_fields",
    "default",
    "contains",
];

fn schemars_keys() -> Vec<&'static str> {
    SCHEMARS_PATHS
        .iter()
        .chain(SCHEMARS_LISTS.iter().map(|(key, _)| key))
        .chain(STRING_VALUES)
        .chain(EXPRESSION_VALUES)
        .chain(SCHEMARS_EITHER)
        .copied()
        .collect()
}

/// Unknown serde keys, unknown or misshapen schemars keys, and unknown keys
/// inside `length(…)`/`range(…)`/`regex(…)`, reported with a suggestion.
pub(crate) fn known_keys(cx: &Ctxt, attrs: &[Attribute], allowed: &[&str], place: &str) {
    // Every `key = value` of serde's takes a string literal; anything else
    // is reported here, once, before serde's derive would fail and leave
    // the type without the traits every use of it needs.
    fn string_values(cx: &Ctxt, metas: &[Meta]) {
        for meta in metas {
            if meta.form == Form::Value && meta.text.is_none() {
                cx.error_at(
                    meta.span,
                    format!(
                        "serde's `{key}` takes a string: `{key} = \"…\"`",
                        key = meta.key
                    ),
                );
            }
            string_values(cx, &meta.nested);
        }
    }
    string_values(cx, &metas(attrs, "serde"));
    // A rename rule serde does not know fails serde's derive the same way.
    for meta in metas(attrs, "serde") {
        if !matches!(meta.key.as_str(), "rename_all" | "rename_all_fields") {
            continue;
        }
        let rules = std::iter::once(&meta).chain(meta.nested.iter());
        for rule in rules {
            if let Some(text) = &rule.text
                && agent_surface_rules::rename_field("x", &text.value()).is_none()
            {
                cx.error_spanned_by(
                    text,
                    format!(
                        "`{}` is not a rename rule; the rules are lowercase, UPPERCASE, PascalCase, \
                         camelCase, snake_case, SCREAMING_SNAKE_CASE, kebab-case, SCREAMING-KEBAB-CASE",
                        text.value()
                    ),
                );
            }
        }
    }
    for meta in metas(attrs, "serde") {
        if !allowed.contains(&meta.key.as_str()) {
            cx.error_at(
                meta.span,
                format!(
                    "unknown serde attribute `{}` on {place}; {}see serde.rs/attributes for the list",
                    meta.key,
                    crate::attr::did_you_mean(&meta.key, allowed)
                ),
            );
        }
    }
    schemars_forms(cx, &metas(attrs, "schemars"));
    for namespace in ["schemars", "validate", "garde"] {
        for meta in metas(attrs, namespace) {
            if !matches!(meta.key.as_str(), "length" | "range") || meta.form != Form::List {
                continue;
            }
            let mut seen: Vec<&str> = Vec::new();
            for inner in &meta.nested {
                if !BOUND_KEYS.contains(&inner.key.as_str()) {
                    cx.error_at(
                        inner.span,
                        format!(
                            "unknown key `{}` in `{}(…)`; {}the keys are min, max, equal",
                            inner.key,
                            meta.key,
                            crate::attr::did_you_mean(&inner.key, BOUND_KEYS)
                        ),
                    );
                } else if inner.form != Form::Value {
                    cx.error_at(
                        inner.span,
                        format!(
                            "`{}` takes a number: `{}({} = 10)`",
                            inner.key, meta.key, inner.key
                        ),
                    );
                } else if seen.contains(&inner.key.as_str())
                    || (inner.key == "equal" && !seen.is_empty())
                    || (inner.key != "equal" && seen.contains(&"equal"))
                {
                    cx.error_at(
                        inner.span,
                        format!(
                            "`{}(…)` takes `min` and `max`, or `equal` alone, each once",
                            meta.key
                        ),
                    );
                } else {
                    seen.push(&inner.key);
                }
            }
        }
    }
}

/// Each `#[schemars(…)]` key is known, written in its form, and given once.
fn schemars_forms(cx: &Ctxt, metas: &[Meta]) {
    let known = schemars_keys();
    let mut seen: Vec<&str> = Vec::new();
    for meta in metas {
        let key = meta.key.as_str();
        if !known.contains(&key) {
            cx.error_at(
                meta.span,
                format!(
                    "unknown schemars attribute `{key}`; {}see graham.cool/schemars/deriving/attributes for the list",
                    crate::attr::did_you_mean(key, &known)
                ),
            );
            continue;
        }
        if seen.contains(&key) && key != "extend" {
            cx.error_at(
                meta.span,
                format!("`{key}` is given twice in `#[schemars(…)]`; keep one"),
            );
            continue;
        }
        seen.push(key);
        if SCHEMARS_PATHS.contains(&key) && meta.form != Form::Path {
            cx.error_at(
                meta.span,
                format!("`{key}` takes no value: write `#[schemars({key})]`"),
            );
        } else if let Some((_, example)) = SCHEMARS_LISTS.iter().find(|(k, _)| *k == key)
            && meta.form != Form::List
        {
            cx.error_at(
                meta.span,
                format!("`{key}` takes its settings in parentheses: `#[schemars({example})]`"),
            );
        } else if (STRING_VALUES.contains(&key) || EXPRESSION_VALUES.contains(&key))
            && meta.form != Form::Value
        {
            cx.error_at(
                meta.span,
                format!("`{key}` takes a value: `#[schemars({key} = …)]`"),
            );
        } else if STRING_VALUES.contains(&key) && meta.form == Form::Value && meta.text.is_none() {
            cx.error_at(
                meta.span,
                format!("`{key}` takes a string: `#[schemars({key} = \"…\")]`"),
            );
        } else if key == "regex" {
            regex_keys(cx, meta);
        } else if key == "inner" && meta.form == Form::List {
            // The items' own keys, checked the same way.
            let nested: Vec<&Meta> = meta.nested.iter().collect();
            inner_forms(cx, &nested);
        }
    }
}

/// `#[schemars(…)]` keys that take a value, a string literal: `title = "…"`.
const STRING_VALUES: &[&str] = &[
    "title",
    "description",
    "crate",
    "with",
    "schema_with",
    "tag",
    "content",
    "bound",
    "skip_serializing_if",
    "remote",
    "into",
    "from",
    "try_from",
];

/// The keys inside `inner(…)`: the validation keys, each in its form.
fn inner_forms(cx: &Ctxt, metas: &[&Meta]) {
    const INNER: &[&str] = &[
        "length", "range", "regex", "pattern", "contains", "inner", "required", "email", "url",
        "ip", "ipv4", "ipv6",
    ];
    for meta in metas {
        let key = meta.key.as_str();
        if !INNER.contains(&key) {
            cx.error_at(
                meta.span,
                format!(
                    "unknown key `{key}` in `inner(…)`; {}it takes the validation keys: {}",
                    crate::attr::did_you_mean(key, INNER),
                    INNER.join(", ")
                ),
            );
        } else if matches!(key, "length" | "range") {
            if meta.form != Form::List {
                cx.error_at(
                    meta.span,
                    format!("`{key}` takes its settings in parentheses: `inner({key}(max = 10))`"),
                );
            } else {
                for inner in &meta.nested {
                    if !BOUND_KEYS.contains(&inner.key.as_str()) {
                        cx.error_at(
                            inner.span,
                            format!(
                                "unknown key `{}` in `{key}(…)`; {}the keys are min, max, equal",
                                inner.key,
                                crate::attr::did_you_mean(&inner.key, BOUND_KEYS)
                            ),
                        );
                    } else if inner.form != Form::Value {
                        cx.error_at(
                            inner.span,
                            format!(
                                "`{}` takes a number: `{key}({} = 10)`",
                                inner.key, inner.key
                            ),
                        );
                    }
                }
            }
        } else if key == "inner" && meta.form == Form::List {
            let nested: Vec<&Meta> = meta.nested.iter().collect();
            inner_forms(cx, &nested);
        }
    }
}

/// `regex(pattern = …)` holds `pattern` once, and nothing else.
fn regex_keys(cx: &Ctxt, meta: &Meta) {
    let mut patterns = 0;
    for inner in &meta.nested {
        if inner.key == "pattern" && inner.form == Form::Value {
            patterns += 1;
        } else {
            cx.error_at(
                inner.span,
                format!(
                    "`regex(…)` takes one key, `pattern`: `#[schemars(regex(pattern = r\"^[a-z]+$\"))]`{}",
                    if inner.key == "path" {
                        "; a regex named by path is not supported"
                    } else {
                        ""
                    }
                ),
            );
            return;
        }
    }
    if patterns != 1 {
        cx.error_at(
            meta.span,
            "`regex(…)` takes one `pattern`: `#[schemars(regex(pattern = r\"^[a-z]+$\"))]`",
        );
    }
}
