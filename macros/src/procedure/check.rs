//! The checks of an `#[agent_procedure]` across its keys and its struct:
//! the plane of the id, the description, the confirmation floor of the
//! effect, a concrete (non-generic) input, and an input that is not made
//! serialize-only by `#[agent_schema(output)]`.

use agent_surface_rules::{Defaults, Kind};
use syn::DeriveInput;

use super::parse::Attrs;
use crate::ctxt::Ctxt;
use crate::symbol::{SCHEMA_OUTPUT, is_helper};

/// Checks across keys: the plane of the id, the description, the
/// confirmation floor of the effect.
pub(super) fn attrs(cx: &Ctxt, attrs: &Attrs, item: &DeriveInput) {
    if let Some(id) = &attrs.id {
        let text = id.value();
        match text.split_once(':') {
            Some(("domain", path)) => {
                if let Err(message) = agent_surface_rules::ids::parse_capability_id(&text)
                    .map(|_| ())
                    .and_then(|()| agent_surface_rules::ids::check_procedure_path(path))
                {
                    cx.error_spanned_by(id, message);
                }
            }
            Some(("view", path)) => cx.error_spanned_by(
                id,
                format!(
                    "procedure ids are on the domain plane: write `domain:{path}`; `view:` ids belong to component capabilities"
                ),
            ),
            Some((plane, path)) => cx.error_spanned_by(
                id,
                format!(
                    "procedure id `{text}` has plane `{plane}`; procedure ids start with `domain:`, as in `domain:{path}`"
                ),
            ),
            None => cx.error_spanned_by(
                id,
                format!(
                    "procedure id `{text}` has no plane; procedure ids start with `domain:`, as in `domain:{}`",
                    if text.is_empty() { "devices.disable" } else { &text }
                ),
            ),
        }
    }
    crate::valid::check_description(
        cx,
        attrs.description.as_ref(),
        agent_surface_rules::MAX_CAPABILITY_DESCRIPTION,
        || {
            cx.error_spanned_by(
                &item.ident,
                "missing description: add a doc comment (`/// …`) on the struct or `description = \"…\"`",
            );
        },
    );
    if let (Some(effect), Some(confirmation)) = (&attrs.effect, &attrs.confirmation)
        && let Some(defaults) = Defaults::of(Kind::Procedure, effect.value)
        && confirmation.value < defaults.confirmation_floor
    {
        cx.error_at(
            confirmation.span,
            format!(
                "a `{}` procedure cannot lower confirmation below `{}`",
                effect.value.as_str(),
                defaults.confirmation_floor.as_str()
            ),
        );
    }
}

/// Generic parameters, reported at them: a procedure input is one
/// concrete type.
pub(super) fn generics(cx: &Ctxt, item: &DeriveInput) {
    if !item.generics.params.is_empty() {
        cx.error_spanned_by(
            &item.generics,
            "procedure inputs are concrete types; remove the generic parameters",
        );
    }
}

/// Whether the input is serialize-only (an `output` schema), each way of
/// making it so reported: `#[agent_schema(output)]` on it, at `output`, or
/// an `#[agent_schema(output)]` that already expanded (`expanded` is
/// `Some(true)`), at the struct's name.
pub(super) fn output_only(cx: &Ctxt, item: &DeriveInput, expanded: Option<bool>) -> bool {
    let mut output_only = output_only_schema(cx, item);
    if expanded == Some(true) {
        output_only = true;
        cx.error_spanned_by(
            &item.ident,
            format!(
                "`{}` is a procedure's input: the agent's call is deserialized into it, and `#[agent_schema(output)]` makes it serialize-only; remove `output`",
                item.ident
            ),
        );
    }
    output_only
}

/// Reports `#[agent_schema(output)]` on a procedure input, at `output`:
/// the agent's call is deserialized into it.
fn output_only_schema(cx: &Ctxt, item: &DeriveInput) -> bool {
    let mut found = false;
    for attr in item
        .attrs
        .iter()
        .filter(|attr| is_helper(attr, "agent_schema"))
    {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident(SCHEMA_OUTPUT) {
                found = true;
                cx.error_spanned_by(
                    &meta.path,
                    format!(
                        "`{}` is a procedure's input: the agent's call is deserialized into it, and `#[agent_schema(output)]` makes it serialize-only; remove `output`",
                        item.ident
                    ),
                );
            }
            if meta.input.peek(syn::Token![=]) {
                let _: syn::Expr = meta.value()?.parse()?;
            }
            Ok(())
        });
    }
    found
}
