//! Checks that need the whole impl block: the identity grammar, descriptions
//! and their limits, the plane rule, unique capability names, and that every
//! method an attribute names exists.

use agent_surface_rules::{
    Effect, Kind, MAX_CAPABILITY_DESCRIPTION, MAX_COMPONENT_DESCRIPTION, MAX_META_BYTES, ids,
};

use proc_macro2::TokenStream;
use quote::quote;

use crate::ast::{Capability, Component, Spanned};
use crate::ctxt::Ctxt;

pub(crate) fn check(cx: &Ctxt, component: &Component<'_>) {
    check_component(cx, component);
    for capability in &component.capabilities {
        check_capability(cx, component, capability);
    }
    check_unique_names(cx, component);
}

/// The shared description rule, or `missing` when there is none.
pub(crate) fn check_description(
    cx: &Ctxt,
    description: Option<&Spanned<String>>,
    limit: usize,
    missing: impl FnOnce(),
) {
    match description {
        None => missing(),
        Some(text) => {
            if let Err(message) =
                agent_surface_rules::check_description("the description", &text.value, limit)
            {
                cx.error_at(text.span, message);
            }
        }
    }
}

fn check_component(cx: &Ctxt, component: &Component<'_>) {
    let attrs = &component.attrs;
    match &attrs.component_type {
        Some(lit) => {
            if let Err(message) = ids::check_component_type(&lit.value()) {
                cx.error_spanned_by(lit, message);
            }
        }
        None if attrs.type_given => {}
        None => cx.error_at(
            component.attr_span,
            "missing `type = \"…\"`: every component declares its type, e.g. `#[agent_component(type = \"devices.table\")]`",
        ),
    }
    // A computed doc comment (`include_str!`, `concat!`) is checked by a
    // constant the expansion evaluates (`expand::computed_descriptions`).
    // A malformed `description = …` was reported where it is written.
    if attrs.doc_expr.is_none() && !(attrs.description_given && attrs.description.is_none()) {
        check_description(
            cx,
            attrs.description.as_ref(),
            MAX_COMPONENT_DESCRIPTION,
            || {
                cx.error_at(
            component.item.impl_token.span,
            "missing description: add a doc comment (`/// …`) on the impl block or `description = \"…\"`",
        );
            },
        );
    }
    if let Some(lit) = &attrs.instance
        && let Err(message) = ids::check_instance_id(&lit.value())
    {
        cx.error_spanned_by(lit, message);
    }
    if let Some((parent_type, instance)) = &attrs.parent {
        if let Err(message) = ids::check_component_type(&parent_type.value()) {
            cx.error_spanned_by(parent_type, message);
        }
        if let Some(lit) = instance
            && let Err(message) = ids::check_instance_id(&lit.value())
        {
            cx.error_spanned_by(lit, message);
        }
    }
    if let Some(lit) = &attrs.origin
        && lit.value().trim().is_empty()
    {
        cx.error_spanned_by(lit, "the origin label is empty; omit it for `first-party`");
    }
    if let Some(meta) = &attrs.meta {
        check_meta(cx, meta);
    }
}

fn check_meta(cx: &Ctxt, meta: &Spanned<String>) {
    if meta.value.len() > MAX_META_BYTES {
        cx.error_at(
            meta.span,
            format!(
                "meta is {} bytes as JSON; the limit is {MAX_META_BYTES}. Keep agent-visible metadata short",
                meta.value.len()
            ),
        );
    }
}

fn check_capability(cx: &Ctxt, component: &Component<'_>, capability: &Capability<'_>) {
    let name = &capability.name;
    match ids::check_capability_name(&name.value) {
        Err(message) if capability.name_derived => cx.error_at(
            name.span,
            format!(
                "method `{}` gives an invalid capability name: {message}; choose one with `name = \"…\"`",
                capability.ident()
            ),
        ),
        Err(message) => cx.error_at(name.span, message),
        Ok(()) => {
            if let Some(lit) = &component.attrs.component_type {
                let id = ids::view_capability_id(&lit.value(), &name.value);
                if id.len() > ids::MAX_ID_LEN {
                    cx.error_at(
                        name.span,
                        format!(
                            "capability id `{id}` is {} characters; ids are at most {}. Shorten the type or the name",
                            id.len(),
                            ids::MAX_ID_LEN
                        ),
                    );
                }
            }
        }
    }
    let label = match capability.kind {
        Kind::Observation => "observation",
        _ => "action",
    };
    // A malformed `description = …` was reported where it is written.
    if capability.doc_expr.is_none()
        && !(capability.description_given && capability.description.is_none())
    {
        check_description(
            cx,
            capability.description.as_ref(),
            MAX_CAPABILITY_DESCRIPTION,
            || {
                cx.error_at(
            capability.ident().span(),
            format!("missing description for {label} `{}`: add a doc comment (`/// …`) or `description = \"…\"`", name.value),
        );
            },
        );
    }

    if capability.kind == Kind::Action {
        match &capability.effect {
            None if capability.effect_given => {}
            None => cx.error_at(
                capability.attr_span,
                "missing `effect`: view actions declare `effect = \"local-state\"` or `effect = \"navigation\"`",
            ),
            Some(effect) if effect.value == Effect::Read => cx.error_at(
                effect.span,
                "`read` is the effect of observations; mark this method `#[observation]`",
            ),
            Some(effect) if !effect.value.allowed_for(Kind::Action) => cx.error_at(
                effect.span,
                format!(
                    "PLANE_VIOLATION: effect `{}` belongs to the domain plane; a view action may only be `local-state` or `navigation`. Reference the backend operation as a procedure instead",
                    effect.value.as_str()
                ),
            ),
            Some(_) => {}
        }
    }
    if capability.kind == Kind::Observation && capability.output.is_none() {
        cx.error_spanned_by(
            &capability.method.sig,
            "an observation returns the state it reads; add a return type",
        );
    }

    if let Some(method) =
        check_named_method(cx, component, capability, capability.when.as_ref(), "when")
    {
        crate::helpers::check_when(cx, method);
    }
    match &capability.reason {
        Some(_) if capability.when.is_none() => cx.error_at(
            capability.reason_span.unwrap_or(capability.attr_span),
            "`unavailable_reason` explains a `when` condition; add `when = method` or remove it",
        ),
        Some(Ok(lit)) if lit.value().trim().is_empty() => cx.error_spanned_by(
            lit,
            "the unavailable reason is empty; say what enables the capability",
        ),
        Some(Ok(lit)) => {
            if let Err(message) = agent_surface_rules::check_description(
                "the unavailable reason",
                &lit.value(),
                MAX_CAPABILITY_DESCRIPTION,
            ) {
                cx.error_spanned_by(lit, message);
            }
        }
        Some(Err(method)) => {
            if let Some(method) = check_named_method(
                cx,
                component,
                capability,
                Some(method),
                "unavailable_reason",
            ) {
                crate::helpers::check_reason(cx, method);
            }
        }
        None => {}
    }
    if let Some(precondition) = &capability.precondition {
        let method = check_named_method(
            cx,
            component,
            capability,
            Some(precondition),
            "precondition",
        );
        if let (Some(method), Some(input)) = (method, capability.input()) {
            crate::helpers::check_precondition(cx, method, input);
        }
        if capability.input().is_none() {
            cx.error_spanned_by(
                precondition,
                "a precondition checks the action's input, and this action takes none; use `when` for state-only conditions",
            );
        }
    }
    if let Some(meta) = &capability.meta {
        check_meta(cx, meta);
    }
}

/// Checks that an attribute names a plain method of this impl block (for
/// `when`, a synchronous boolean observation also serves), and returns it.
fn check_named_method<'a>(
    cx: &Ctxt,
    component: &Component<'a>,
    capability: &Capability<'_>,
    named: Option<&syn::Ident>,
    key: &str,
) -> Option<&'a syn::ImplItemFn> {
    let ident = named?;
    match component.method(ident) {
        None => {
            cx.error_spanned_by(
                ident,
                format!(
                    "`{key} = {ident}` names no method of this impl block; add `fn {ident}(&self) …` here"
                ),
            );
            None
        }
        Some(_)
            if syn::ext::IdentExt::unraw(ident)
                == syn::ext::IdentExt::unraw(capability.ident()) =>
        {
            cx.error_spanned_by(ident, format!("`{key}` cannot name the capability itself"));
            None
        }
        Some(method) => {
            let target = component
                .capabilities
                .iter()
                .find(|c| c.ident() == &method.sig.ident);
            match target {
                Some(target) if key == "when" && target.kind == Kind::Observation => Some(method),
                Some(_) if key == "when" => {
                    cx.error_spanned_by(
                        ident,
                        format!("`when` must name a helper method or a boolean observation, not the action `{ident}`"),
                    );
                    None
                }
                Some(_) => {
                    cx.error_spanned_by(
                        ident,
                        format!("`{key}` must name a helper method, not the capability `{ident}`"),
                    );
                    None
                }
                None => Some(method),
            }
        }
    }
}

fn check_unique_names(cx: &Ctxt, component: &Component<'_>) {
    for (index, capability) in component.capabilities.iter().enumerate() {
        if let Some(earlier) = component.capabilities.iter().take(index).find(|earlier| {
            earlier.name.value == capability.name.value && same_conditions(earlier, capability)
        }) {
            cx.error_at(capability.name.span, duplicate_message(earlier, capability));
        }
    }
}

fn duplicate_message(earlier: &Capability<'_>, capability: &Capability<'_>) -> String {
    format!(
        "DUPLICATE_CAPABILITY: `{}` already declares capability `{}`; give one of them another `name = \"…\"`",
        earlier.ident(),
        capability.name.value
    )
}

/// The `#[cfg]`s a capability is under, as written, sorted and deduplicated.
fn written_conditions(capability: &Capability<'_>) -> Vec<String> {
    let mut written: Vec<String> = capability
        .cfg_attributes()
        .iter()
        .map(|attr| quote::ToTokens::to_token_stream(&attr.meta).to_string())
        .collect();
    written.sort();
    written.dedup();
    written
}

/// Two capabilities of one name under the same written `#[cfg]`s (or none):
/// both are compiled in, or neither — a duplicate whatever the build,
/// reported at once by `check_unique_names`.
fn same_conditions(a: &Capability<'_>, b: &Capability<'_>) -> bool {
    written_conditions(a) == written_conditions(b)
}

/// One predicate holding when the capability is compiled in: `all(…)` of
/// its `#[cfg]`s (`all()`, always true, without any).
fn condition(capability: &Capability<'_>) -> TokenStream {
    let predicates = capability
        .cfg_attributes()
        .into_iter()
        .filter_map(|attr| match attr.meta {
            syn::Meta::List(list) => Some(list.tokens),
            _ => None,
        });
    quote!(all(#(#predicates),*))
}

/// Two capabilities of one name under different `#[cfg]`s: the usual way to
/// give one capability two implementations (one method or two), when the
/// conditions exclude each other. Whether they do is the compiler's to
/// decide, not the spelling's (`all(unix, test)` and `all(test, unix)`,
/// stacked `#[cfg]`s, `not(not(unix))`, or `unix` beside `test`): each
/// later declaration gets `#[cfg(all(<its>, <earlier>))] compile_error!(…)`
/// at its name, so a build compiling both in fails with the duplicate, and
/// only one error per declaration (the pair with the first earlier
/// declaration compiled in).
pub(crate) fn conditional_duplicates(component: &Component<'_>) -> TokenStream {
    let mut out = TokenStream::new();
    for (index, capability) in component.capabilities.iter().enumerate() {
        let earlier: Vec<&Capability<'_>> = component
            .capabilities
            .iter()
            .take(index)
            .filter(|earlier| earlier.name.value == capability.name.value)
            .collect();
        if earlier
            .iter()
            .any(|earlier| same_conditions(earlier, capability))
        {
            continue;
        }
        let own = condition(capability);
        let mut before: Vec<TokenStream> = Vec::new();
        for earlier in earlier {
            let theirs = condition(earlier);
            let error =
                syn::Error::new(capability.name.span, duplicate_message(earlier, capability))
                    .to_compile_error();
            out.extend(quote! {
                #[cfg(all(#own, #theirs, not(any(#(#before),*))))]
                #error
            });
            before.push(theirs);
        }
    }
    out
}
