//! Reach declared beside a component's capabilities: the capabilities under
//! `#[cfg]` (recorded whether or not the build includes them) and the
//! `#[reference(Procedure, …)]` attributes of the impl block.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned as _;
use syn::{Ident, ItemImpl};

use crate::ast::{Component, is_helper};
use crate::attr::{self, ArgSet};
use crate::ctxt::Ctxt;
use crate::expand::{confirmation_tokens, effect_tokens};
use agent_surface_rules::{Confirmation, Effect, Kind};

/// The helper attribute declaring a reference.
pub(crate) const REFERENCE: &str = "reference";

const LOCKED: &str = "locked";
const WHEN: &str = "when";
const CONFIRMATION: &str = "confirmation";
const POLICIES: &str = "policies";
const REFERENCE_KEYS: &[&str] = &[LOCKED, WHEN, CONFIRMATION, POLICIES];

/// One `#[reference(Procedure, …)]`.
pub(crate) struct Reference {
    procedure: syn::Path,
    locked: Vec<Ident>,
    when: bool,
    confirmation: Option<Confirmation>,
    policies: Vec<syn::Expr>,
}

fn parse_one(cx: &Ctxt, attr: &syn::Attribute) -> Option<Reference> {
    let usage = "write `#[reference(ProcedureType, locked = [field, …], when, confirmation = \"required\", policies = [policy(), …])]`";
    let syn::Meta::List(list) = &attr.meta else {
        cx.error_spanned_by(attr, format!("`#[reference]` names a procedure: {usage}"));
        return None;
    };
    let parsed = list.parse_args_with(|input: syn::parse::ParseStream<'_>| {
        let procedure: syn::Path = input.parse()?;
        let rest: TokenStream = if input.is_empty() {
            TokenStream::new()
        } else {
            input.parse::<syn::Token![,]>()?;
            input.parse()?
        };
        Ok((procedure, rest))
    });
    let (procedure, rest) = match parsed {
        Ok(parsed) => parsed,
        Err(err) => {
            cx.error_at(err.span(), format!("{err}: {usage}"));
            return None;
        }
    };
    let mut set = ArgSet::new(
        cx,
        "#[reference(…)]",
        REFERENCE_KEYS,
        attr::parse_args(cx, rest),
    );
    let locked = set
        .exprs(LOCKED)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|expr| match expr {
            syn::Expr::Path(path) if path.path.get_ident().is_some() => path.path.get_ident().cloned(),
            other => {
                cx.error_spanned_by(
                    &other,
                    "`locked = [...]` lists field names of the procedure's input, e.g. `locked = [device_ids]`",
                );
                None
            }
        })
        .collect();
    Some(Reference {
        procedure,
        locked,
        when: set.flag(WHEN).is_some_and(|(on, _)| on),
        confirmation: set.confirmation(CONFIRMATION).map(|(c, _)| c),
        policies: set.exprs(POLICIES).unwrap_or_default(),
    })
}

/// The `#[reference(…)]` attributes of the impl block.
pub(crate) fn references(cx: &Ctxt, item: &ItemImpl) -> Vec<Reference> {
    item.attrs
        .iter()
        .filter(|attr| is_helper(attr, REFERENCE))
        .filter_map(|attr| parse_one(cx, attr))
        .collect()
}

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
            let digest = crate::helpers::sha256_hex(&text);
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
                let policies = reference.policies.iter().map(|expr| {
                    crate::declared_policy::install(crate::self_type::replace(
                        quote!(#expr),
                        component.self_ty,
                    ))
                });
                items.extend(quote! {
                    #[allow(non_camel_case_types)]
                    enum #holder {}
                    impl #holder {
                        fn policies() -> ::std::vec::Vec<::agent_surface::policy::PolicyRef> {
                            ::std::vec![#(#policies),*]
                        }
                    }
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
