//! A schema type's `#[serde(…)]` and `#[schemars(…)]` attributes read as
//! written: every key with its span, form and value (`Meta`), the plain
//! `key = "…"` arguments, the wire name each field and variant answers to,
//! the derives the item carries, and whether `#[agent_schema]` already
//! expanded on it. The wire checks and the schema and procedure expansions
//! read these; reading reports nothing (serde and schemars report what
//! does not parse).

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Attribute, Data, DeriveInput, LitStr};

/// One `key` or `key = value` of a `#[serde(…)]`/`#[schemars(…)]`, with its
/// span; `nested` holds `key(…)`'s own keys.
pub(crate) struct Meta {
    pub(crate) key: String,
    pub(crate) span: Span,
    pub(crate) form: Form,
    pub(crate) text: Option<LitStr>,
    pub(crate) number: Option<f64>,
    pub(crate) nested: Vec<Meta>,
}

/// How a meta is written: `key`, `key = value` or `key(…)`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// `key`.
    Path,
    /// `key = value`.
    Value,
    /// `key(…)`.
    List,
}

fn number_of(expr: &syn::Expr) -> Option<f64> {
    match expr {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(int),
            ..
        }) => int.base10_parse().ok(),
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Float(float),
            ..
        }) => float.base10_parse().ok(),
        syn::Expr::Unary(syn::ExprUnary {
            op: syn::UnOp::Neg(_),
            expr,
            ..
        }) => number_of(expr).map(|n| -n),
        syn::Expr::Group(group) => number_of(&group.expr),
        _ => None,
    }
}

fn metas_of(input: syn::meta::ParseNestedMeta<'_>, out: &mut Vec<Meta>) -> syn::Result<()> {
    let key = input
        .path
        .segments
        .last()
        .map(|segment| segment.ident.to_string())
        .unwrap_or_default();
    let span = input.path.span();
    let mut meta = Meta {
        key,
        span,
        form: Form::Path,
        text: None,
        number: None,
        nested: Vec::new(),
    };
    if input.input.peek(syn::Token![=]) {
        meta.form = Form::Value;
        let expr: syn::Expr = input.value()?.parse()?;
        if let syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(lit),
            ..
        }) = &expr
        {
            meta.text = Some(lit.clone());
        }
        meta.number = number_of(&expr);
    } else if input.input.peek(syn::token::Paren) {
        meta.form = Form::List;
        let content;
        syn::parenthesized!(content in input.input);
        let fork = content.fork();
        let nested = syn::meta::parser(|inner| metas_of(inner, &mut meta.nested));
        if syn::parse::Parser::parse2(nested, fork.parse::<proc_macro2::TokenStream>()?).is_err() {
            // `pattern("…")` and other expression arguments.
            if let Ok(lit) = content.parse::<LitStr>() {
                meta.text = Some(lit);
            }
        }
        let _ = content.parse::<proc_macro2::TokenStream>();
    }
    out.push(meta);
    Ok(())
}

/// The metas of every `#[namespace(…)]` among `attrs` (unparsable ones are
/// left to serde and schemars to report).
pub(crate) fn metas(attrs: &[Attribute], namespace: &str) -> Vec<Meta> {
    let mut out = Vec::new();
    for attr in attrs.iter().filter(|attr| attr.path().is_ident(namespace)) {
        let _ = attr.parse_nested_meta(|meta| metas_of(meta, &mut out));
    }
    out
}

/// [`metas`], and those inside `#[cfg_attr(pred, namespace(…))]` as well:
/// what the schema may hold (a bound under `cfg_attr` counts).
pub(crate) fn metas_with_cfg_attr(attrs: &[Attribute], namespace: &str) -> Vec<Meta> {
    let mut out = Vec::new();
    for attr in attrs {
        if attr.path().is_ident(namespace) {
            let _ = attr.parse_nested_meta(|meta| metas_of(meta, &mut out));
        } else if attr.path().is_ident("cfg_attr") {
            // `#[cfg_attr(pred, schemars(…))]`: read as if written alone
            // (the schema then has it whenever the predicate holds).
            let mut first = true;
            let _ = attr.parse_nested_meta(|meta| {
                if std::mem::take(&mut first) {
                    if meta.input.peek(syn::token::Paren) {
                        let _content;
                        syn::parenthesized!(_content in meta.input);
                    } else if meta.input.peek(syn::Token![=]) {
                        let _ = meta.value()?.parse::<syn::Expr>()?;
                    }
                    return Ok(());
                }
                if meta.path.is_ident(namespace) {
                    meta.parse_nested_meta(|inner| metas_of(inner, &mut out))
                } else {
                    let _ = meta.input.parse::<proc_macro2::TokenStream>();
                    Ok(())
                }
            });
        }
    }
    out
}

/// The meta of `key` among `metas`, if one is there.
pub(crate) fn find<'a>(metas: &'a [Meta], key: &str) -> Option<&'a Meta> {
    metas.iter().find(|meta| meta.key == key)
}

/// A variant's name under `rename_all = rule` (`None` for an unknown rule).
fn rename_variant(variant: &str, rule: &str) -> Option<String> {
    // Exactly as serde's derive renames a variant (ASCII case changes).
    let snake = || {
        let mut out = String::new();
        for (i, c) in variant.char_indices() {
            if c.is_uppercase() && i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        }
        out
    };
    Some(match rule {
        "lowercase" => variant.to_ascii_lowercase(),
        "UPPERCASE" => variant.to_ascii_uppercase(),
        "PascalCase" => variant.to_owned(),
        "camelCase" => {
            let mut chars = variant.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_lowercase().to_string() + chars.as_str()
            })
        }
        "snake_case" => snake(),
        "SCREAMING_SNAKE_CASE" => snake().to_ascii_uppercase(),
        "kebab-case" => snake().replace('_', "-"),
        "SCREAMING-KEBAB-CASE" => snake().to_ascii_uppercase().replace('_', "-"),
        _ => return None,
    })
}

/// The names one field or variant answers to on the wire (its name, and
/// its aliases when it is read), given the container's rule.
pub(crate) fn wire_names(
    attrs: &[Attribute],
    rust: &str,
    rule: Option<&str>,
    variant: bool,
) -> Vec<String> {
    // `cfg_attr(…, serde(rename = …))` renames too.
    let serde = metas_with_cfg_attr(attrs, "serde");
    let renamed = find(&serde, "rename").and_then(|meta| {
        meta.text.as_ref().map(LitStr::value).or_else(|| {
            // `rename(deserialize = "…")`: what the agent sends.
            find(&meta.nested, "deserialize").and_then(|m| m.text.as_ref().map(LitStr::value))
        })
    });
    let rust = rust.strip_prefix("r#").unwrap_or(rust);
    let mut names = vec![renamed.unwrap_or_else(|| {
        rule.and_then(|rule| {
            if variant {
                rename_variant(rust, rule)
            } else {
                agent_surface_rules::rename_field(rust, rule)
            }
        })
        .unwrap_or_else(|| rust.to_owned())
    })];
    names.extend(
        serde
            .iter()
            .filter(|meta| meta.key == "alias")
            .filter_map(|meta| meta.text.as_ref().map(LitStr::value)),
    );
    names
}

/// The wire name of a field as the agent sends it: its `rename` (or
/// `rename(deserialize = …)`), else `rule` applied to its Rust name.
pub(crate) fn field_wire_name(attrs: &[Attribute], rust: &str, rule: Option<&str>) -> String {
    wire_names(attrs, rust, rule, false)
        .into_iter()
        .next()
        .unwrap_or_default()
}

/// Whether the item already derives the trait named `name`.
pub(crate) fn derives(attrs: &[Attribute], name: &str) -> bool {
    attrs
        .iter()
        .filter(|attr| attr.path().is_ident("derive"))
        .any(|attr| {
            let mut found = false;
            let _ = attr.parse_nested_meta(|meta| {
                if meta
                    .path
                    .segments
                    .last()
                    .is_some_and(|segment| segment.ident == name)
                {
                    found = true;
                }
                Ok(())
            });
            found
        })
}

/// Whether `#[agent_schema]` already expanded on this item (it was written
/// above another attribute macro), read from its `#[serde(crate = …)]`:
/// `Some(true)` when it made the type serialize-only.
pub(crate) fn already_expanded(attrs: &[Attribute]) -> Option<bool> {
    attr_args(attrs, "serde").iter().find_map(|(key, value)| {
        match value.as_ref().map(LitStr::value) {
            Some(path) if key == "crate" && path == "::agent_surface::macro_support::serde" => {
                Some(false)
            }
            Some(path)
                if key == "crate"
                    && path == "::agent_surface::macro_support::serde_output_only" =>
            {
                Some(true)
            }
            _ => None,
        }
    })
}

/// The arguments of the item's `#[serde(...)]` (or `#[schemars(...)]`)
/// attributes: each key, with its value when it is a string literal.
pub(crate) fn attr_args(attrs: &[Attribute], namespace: &str) -> Vec<(String, Option<LitStr>)> {
    let mut args = Vec::new();
    for attr in attrs.iter().filter(|attr| attr.path().is_ident(namespace)) {
        let _ = attr.parse_nested_meta(|meta| {
            let key = meta.path.get_ident().map(ToString::to_string);
            // Read (or skip) the value, whatever its shape.
            let mut value = None;
            if meta.input.peek(syn::Token![=]) {
                if let syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(lit),
                    ..
                }) = meta.value()?.parse::<syn::Expr>()?
                {
                    value = Some(lit);
                }
            } else if meta.input.peek(syn::token::Paren) {
                let _content;
                syn::parenthesized!(_content in meta.input);
            }
            if let Some(key) = key {
                args.push((key, value));
            }
            Ok(())
        });
    }
    args
}

/// The keys used in the item's `#[serde(...)]` (or `#[schemars(...)]`) attributes.
pub(crate) fn attr_keys(attrs: &[Attribute], namespace: &str) -> Vec<String> {
    attr_args(attrs, namespace)
        .into_iter()
        .map(|(key, _)| key)
        .collect()
}

/// Calls `f` on the attributes of every variant and field of `item`.
pub(crate) fn inner_attrs_mut(item: &mut DeriveInput, mut f: impl FnMut(&mut Vec<Attribute>)) {
    match &mut item.data {
        Data::Struct(data) => data.fields.iter_mut().for_each(|field| f(&mut field.attrs)),
        Data::Enum(data) => {
            for variant in &mut data.variants {
                f(&mut variant.attrs);
                variant
                    .fields
                    .iter_mut()
                    .for_each(|field| f(&mut field.attrs));
            }
        }
        Data::Union(_) => {}
    }
}
