//! The model of an `#[agent_procedure]`: its attribute's keys (the
//! description from the doc comment when not given), the named fields of
//! the input struct, and the typed handle of each field the agent sends,
//! with its wire name. Reading it reports every malformed key at its token.

use agent_surface_rules::{Confirmation, Effect, Kind};
use proc_macro2::TokenStream;
use syn::ext::IdentExt;
use syn::{Data, DeriveInput, Fields, LitStr};

use crate::ast::{Spanned as At, doc_description};
use crate::attr::{self, ArgSet};
use crate::ctxt::Ctxt;
use crate::symbol::{
    AUDIT, CONFIRMATION, DESCRIPTION, EFFECT, ID, IDEMPOTENT, OUTPUT, PROCEDURE_KEYS, TIMEOUT,
};
use crate::wire_attrs::field_wire_name;

/// The parsed attribute.
pub(super) struct Attrs {
    pub(super) id: Option<LitStr>,
    pub(super) description: Option<At<String>>,
    pub(super) effect: Option<At<Effect>>,
    pub(super) confirmation: Option<At<Confirmation>>,
    pub(super) audit: Option<agent_surface_rules::Audit>,
    pub(super) idempotent: Option<bool>,
    pub(super) output: Option<syn::Type>,
    pub(super) timeout_ms: Option<u64>,
}

/// One field handle: the Rust field, its type and its wire name.
pub(super) struct Handle<'a> {
    pub(super) field: &'a syn::Field,
    pub(super) wire: String,
}

/// `#[agent_procedure(…)]` (and the struct's doc comment), with a missing
/// `id` or `effect` and a malformed value reported at its token.
pub(super) fn attrs(cx: &Ctxt, args: TokenStream, item: &DeriveInput) -> Attrs {
    let args = attr::parse_args(cx, args);
    let mut set = ArgSet::new(cx, "#[agent_procedure]", PROCEDURE_KEYS, args);
    let quiet = set.had_unknown_keys();
    let id_given = set.has(ID);
    let id = set.string(ID);
    if !id_given && !quiet {
        cx.error_spanned_by(
            &item.ident,
            "missing `id`: write `#[agent_procedure(id = \"domain:<path>\", effect = \"…\")]`",
        );
    }
    let effect_given = set.has(EFFECT);
    let effect = set.string(EFFECT).and_then(|lit| {
        let allowed: Vec<&str> = Effect::allowed(Kind::Procedure)
            .map(Effect::as_str)
            .collect();
        match Effect::parse(&lit.value()) {
            Some(effect) if effect.allowed_for(Kind::Procedure) => Some(At {
                value: effect,
                span: lit.span(),
            }),
            Some(effect) => {
                cx.error_spanned_by(
                    &lit,
                    format!(
                        "`{}` is a view effect; procedures run on the backend and declare one of: {}",
                        effect.as_str(),
                        allowed.join(", ")
                    ),
                );
                None
            }
            None => {
                cx.error_spanned_by(
                    &lit,
                    format!(
                        "unknown effect `{}`; {}procedures declare one of: {}",
                        lit.value(),
                        attr::did_you_mean(&lit.value(), &allowed),
                        allowed.join(", ")
                    ),
                );
                None
            }
        }
    });
    if !effect_given && !quiet {
        cx.error_spanned_by(
            &item.ident,
            "missing `effect`: one of server-query, server-mutation, external-side-effect, destructive",
        );
    }
    let description = set
        .string(DESCRIPTION)
        .map(|lit| At {
            value: lit.value(),
            span: lit.span(),
        })
        .or_else(|| doc_description(&item.attrs));
    let confirmation = set
        .confirmation(CONFIRMATION)
        .map(|(value, span)| At { value, span });
    let audit = set.audit(AUDIT);
    let timeout_ms = set.duration_ms(TIMEOUT);
    let output = set.ty(OUTPUT);
    Attrs {
        id,
        description,
        effect,
        confirmation,
        audit,
        idempotent: set.flag(IDEMPOTENT).map(|(b, _)| b),
        output,
        timeout_ms,
    }
}

/// The named fields of a struct, or an error at what makes it not an object.
pub(super) fn named_fields<'a>(cx: &Ctxt, item: &'a DeriveInput) -> Vec<&'a syn::Field> {
    const NOT_OBJECT: &str =
        "procedure inputs must be JSON objects: use a struct with named fields";
    match &item.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(named) => named.named.iter().collect(),
            Fields::Unnamed(unnamed) => {
                cx.error_spanned_by(unnamed, NOT_OBJECT);
                Vec::new()
            }
            Fields::Unit => {
                cx.error_spanned_by(&item.ident, NOT_OBJECT);
                Vec::new()
            }
        },
        Data::Enum(data) => {
            cx.error_spanned_by(data.enum_token, NOT_OBJECT);
            Vec::new()
        }
        Data::Union(data) => {
            cx.error_spanned_by(data.union_token, NOT_OBJECT);
            Vec::new()
        }
    }
}

/// The field handles of the struct: every field the agent sends, with its
/// wire name.
pub(super) fn handles<'a>(item: &'a DeriveInput, fields: &[&'a syn::Field]) -> Vec<Handle<'a>> {
    // The rule the agent's JSON is read under: `rename_all = "…"` or its
    // `deserialize` side, in a `cfg_attr` too.
    let container = crate::wire_attrs::metas_with_cfg_attr(&item.attrs, "serde");
    let rule_text = crate::wire_attrs::find(&container, "rename_all")
        .and_then(|meta| {
            meta.text.as_ref().map(LitStr::value).or_else(|| {
                crate::wire_attrs::find(&meta.nested, "deserialize")
                    .and_then(|nested| nested.text.as_ref())
                    .map(LitStr::value)
            })
        })
        .unwrap_or_else(|| "camelCase".to_owned());
    let mut out = Vec::new();
    for field in fields {
        let Some(ident) = &field.ident else { continue };
        if crate::wire_attrs::metas_with_cfg_attr(&field.attrs, "serde")
            .iter()
            .any(|meta| matches!(meta.key.as_str(), "skip" | "skip_deserializing" | "flatten"))
        {
            continue;
        }
        // An unknown rule is reported once, by the schema's checks
        // (`wire_keys::known_keys`); no handle is made from it.
        if agent_surface_rules::rename_field("x", &rule_text).is_none() {
            return Vec::new();
        }
        let rust = ident.unraw().to_string();
        let wire = field_wire_name(&field.attrs, &rust, Some(&rule_text));
        out.push(Handle { field, wire });
    }
    out
}
