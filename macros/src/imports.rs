//! Helper imports: the helper attributes a component's impl block uses
//! (`#[action]`, `#[observation]`, `#[reference]`) are read and removed by
//! `#[agent_component]`, so rustc never resolves their names and an
//! explicit `use agent_surface::{action, observation};` would be reported
//! unused (an error under `-D warnings`). The expansion names each one
//! again, at the user's token, so the import counts as used; a fallback
//! glob import (lower priority than any explicit import) keeps the name
//! resolvable when the user imported nothing.

use proc_macro2::{Ident, TokenStream, TokenTree};
use quote::quote;
use syn::{Attribute, ImplItem, ItemImpl};

/// The helper names, as written alone.
const HELPERS: [&str; 3] = ["action", "observation", "reference"];

/// The single-ident helper paths of `attrs`, directly or inside
/// `cfg_attr(…)`.
fn helper_idents(attrs: &[Attribute], out: &mut Vec<Ident>) {
    for attr in attrs {
        if let Some(ident) = attr.path().get_ident() {
            if HELPERS.contains(&ident.to_string().as_str()) {
                out.push(ident.clone());
            } else if ident == "cfg_attr"
                && let syn::Meta::List(list) = &attr.meta
            {
                // After the predicate, each top-level `name` or `name(…)`.
                let mut past_predicate = false;
                for token in list.tokens.clone() {
                    match token {
                        TokenTree::Punct(punct) if punct.as_char() == ',' => past_predicate = true,
                        TokenTree::Ident(ident)
                            if past_predicate && HELPERS.contains(&ident.to_string().as_str()) =>
                        {
                            out.push(ident);
                        }
                        _ => {}
                    }
                }
            }
        }
    }
}

/// `use <helper> as _;` for each helper named alone in `item`, after a
/// fallback glob import of the three.
pub(crate) fn helper_uses(item: &ItemImpl) -> TokenStream {
    let mut idents = Vec::new();
    helper_idents(&item.attrs, &mut idents);
    for impl_item in &item.items {
        if let ImplItem::Fn(method) = impl_item {
            helper_idents(&method.attrs, &mut idents);
        }
    }
    let mut seen: Vec<String> = Vec::new();
    idents.retain(|ident| {
        let name = ident.to_string();
        let first = !seen.contains(&name);
        seen.push(name);
        first
    });
    if idents.is_empty() {
        return TokenStream::new();
    }
    quote! {
        #[allow(unused_imports)]
        use ::agent_surface::macro_support::helpers::*;
        #(
            #[allow(unused_imports)]
            use #idents as _;
        )*
    }
}
