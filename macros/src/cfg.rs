//! `#[cfg]` on what a macro reads: a capability method, a schema field or
//! variant, a procedure field. The generated code that mentions the item
//! carries the same `#[cfg]`, so an item compiled out leaves nothing behind
//! (no call to a method that is gone, no check of a type that is absent).

use proc_macro2::TokenStream;
use quote::quote;
use syn::Attribute;

/// The `#[cfg(...)]` attributes among `attrs`.
pub(crate) fn cfgs(attrs: &[Attribute]) -> Vec<&Attribute> {
    attrs
        .iter()
        .filter(|attr| attr.path().is_ident("cfg"))
        .collect()
}

/// One predicate that holds when every `#[cfg]` of `attrs` holds, as
/// `cfg!(…)` tokens evaluating to a `bool`; `None` without `#[cfg]`.
pub(crate) fn predicate(attrs: &[Attribute]) -> Option<TokenStream> {
    let predicates: Vec<TokenStream> = cfgs(attrs)
        .into_iter()
        .filter_map(|attr| match &attr.meta {
            syn::Meta::List(list) => Some(list.tokens.clone()),
            _ => None,
        })
        .collect();
    if predicates.is_empty() {
        None
    } else {
        Some(quote!(::core::cfg!(all(#(#predicates),*))))
    }
}

/// A helper attribute (`#[action(…)]`, `#[observation]`) applied through
/// `#[cfg_attr(predicate, …)]`: the method is that capability when the
/// predicate holds, a plain method otherwise.
pub(crate) struct Wrapped {
    /// The helper, as the attribute it would be written as.
    pub(crate) helper: Attribute,
    /// `#[cfg(predicate)]`, for everything generated for the capability.
    pub(crate) gate: Attribute,
}

/// The `cfg_attr` predicate and the attributes it applies.
fn cfg_attr_parts(attr: &Attribute) -> Option<(TokenStream, Vec<syn::Meta>)> {
    if !attr.path().is_ident("cfg_attr") {
        return None;
    }
    attr.parse_args_with(|input: syn::parse::ParseStream<'_>| {
        let predicate: syn::Meta = input.parse()?;
        input.parse::<syn::Token![,]>()?;
        let metas =
            syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated(input)?;
        Ok((quote!(#predicate), metas.into_iter().collect()))
    })
    .ok()
}

/// The helpers among `attrs` applied through `cfg_attr`, for which `is_helper` holds.
pub(crate) fn wrapped(attrs: &[Attribute], is_helper: impl Fn(&Attribute) -> bool) -> Vec<Wrapped> {
    let mut out = Vec::new();
    for attr in attrs {
        let Some((predicate, metas)) = cfg_attr_parts(attr) else {
            continue;
        };
        for meta in metas {
            // Spanned at the helper as written inside the `cfg_attr`, so
            // an error about it points there, not at the macro's call.
            let span = syn::spanned::Spanned::span(&meta);
            let helper: Attribute = syn::parse_quote_spanned!(span=> #[#meta]);
            if is_helper(&helper) {
                let gate: Attribute = syn::parse_quote_spanned!(span=> #[cfg(#predicate)]);
                out.push(Wrapped { helper, gate });
            }
        }
    }
    out
}

/// `attrs` without the helpers `is_helper` names inside `cfg_attr`s (a
/// `cfg_attr` left with nothing to apply is dropped).
pub(crate) fn unwrap_helpers(attrs: &mut Vec<Attribute>, is_helper: impl Fn(&Attribute) -> bool) {
    let mut kept = Vec::with_capacity(attrs.len());
    for attr in attrs.drain(..) {
        let Some((predicate, metas)) = cfg_attr_parts(&attr) else {
            kept.push(attr);
            continue;
        };
        let rest: Vec<syn::Meta> = metas
            .into_iter()
            .filter(|meta| {
                let helper: Attribute = syn::parse_quote!(#[#meta]);
                !is_helper(&helper)
            })
            .collect();
        if !rest.is_empty() {
            kept.push(syn::parse_quote!(#[cfg_attr(#predicate, #(#rest),*)]));
        }
    }
    *attrs = kept;
}
