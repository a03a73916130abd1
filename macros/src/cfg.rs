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
