//! Code generation of the reach declared beside a component's capabilities:
//! the capabilities under `#[cfg]` (recorded whether or not the build
//! includes them) and the `#[reference(Procedure, …)]` declarations of the
//! impl block (see `reference` for their model).

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned as _;

use crate::ast::Component;
use crate::tokens::{confirmation_tokens, effect_tokens, policies_fn};
use agent_surface_rules::{Effect, Kind};

/// The `.gated(&[…])` and `.references(&[…])` calls of the component
/// contract, and the items they use (policy functions).
pub(crate) fn contract_calls(component: &Component<'_>) -> (TokenStream, TokenStream) {
    let mut calls = TokenStream::new();
    let gated: Vec<TokenStream> = component
        .capabilities
        .iter()
        .filter_map(|capability| {
            let attrs = capability.cfg_attributes();
            let predicate = crate::cfg::predicate(&attrs)?;
            let condition: Vec<String> = crate::cfg::cfgs(&attrs)
                .into_iter()
                .filter_map(|attr| match &attr.meta {
                    syn::Meta::List(list) => Some(list.tokens.to_string()),
                    _ => None,
                })
                .collect();
            let condition = match condition.as_slice() {
                [one] => one.clone(),
                many => format!("all({})", many.join(", ")),
            };
            let (kind, effect) = match capability.kind {
                Kind::Observation => (quote!(Observation), Effect::Read),
                _ => (
                    quote!(Action),
                    capability.effect.as_ref().map_or(Effect::Read, |e| e.value),
                ),
            };
            let effect = effect_tokens(effect);
            let name = &capability.name.value;
            let method = capability.method;
            let text = quote!(#method).to_string();
            // What review compares for a method outside the build: SHA-256,
            // so no other text can be swapped in under the same digest.
            let digest = crate::digest::sha256_hex(&text);
            Some(quote! {
                ::agent_surface::macro_support::GatedCapability::new(
                    ::agent_surface::macro_support::Kind::#kind, #name, #effect, #condition, #predicate, #digest,
                )
            })
        })
        .collect();
    if !gated.is_empty() {
        calls.extend(quote!(.gated(&[#(#gated),*])));
    }
    let mut items = TokenStream::new();
    let declared: Vec<TokenStream> = component
        .references
        .iter()
        .enumerate()
        .map(|(index, reference)| {
            let procedure = &reference.procedure;
            let as_procedure = quote_spanned!(procedure.span()=> <#procedure as ::agent_surface::macro_support::Procedure>);
            let locked = reference.locked.iter().map(|field| {
                quote_spanned!(field.span()=> #as_procedure::fields().#field.name())
            });
            let mut tokens = quote! {
                ::agent_surface::macro_support::DeclaredReference::new(
                    || #as_procedure::contract().id(),
                    || ::std::vec![#(#locked),*],
                )
            };
            if reference.when {
                tokens.extend(quote!(.with_when()));
            }
            if let Some(confirmation) = reference.confirmation {
                let confirmation = confirmation_tokens(confirmation);
                tokens.extend(quote!(.with_confirmation(#confirmation)));
            }
            if !reference.policies.is_empty() {
                let holder = format_ident!("__reference_{}", index);
                let policies = policies_fn(&reference.policies, component.self_ty);
                items.extend(quote! {
                    #[allow(non_camel_case_types)]
                    enum #holder {}
                    impl #holder { #policies }
                });
                tokens.extend(quote!(.with_policies(#holder::policies)));
            }
            tokens
        })
        .collect();
    if !declared.is_empty() {
        calls.extend(quote!(.references(&[#(#declared),*])));
    }
    (calls, items)
}
