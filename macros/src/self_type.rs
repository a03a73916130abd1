//! `Self` in a handler signature names the component, but the generated
//! items that repeat the signature's types (the per-capability marker
//! impls, the policy functions) have a `Self` of their own. The types and
//! expressions copied there have `Self` replaced by the component type, at
//! the span of the `Self` the user wrote.

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::ToTokens;

/// `tokens` with every `Self` replaced by `self_ty`.
pub(crate) fn replace(tokens: TokenStream, self_ty: &syn::Type) -> TokenStream {
    tokens
        .into_iter()
        .flat_map(|tree| -> Vec<TokenTree> {
            match tree {
                TokenTree::Ident(ident) if ident == "Self" => {
                    respan(self_ty.to_token_stream(), ident.span())
                        .into_iter()
                        .collect()
                }
                TokenTree::Group(group) => {
                    let mut inner = Group::new(group.delimiter(), replace(group.stream(), self_ty));
                    inner.set_span(group.span());
                    vec![TokenTree::Group(inner)]
                }
                other => vec![other],
            }
        })
        .collect()
}

fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|tree| match tree {
            TokenTree::Group(group) => {
                let mut inner = Group::new(group.delimiter(), respan(group.stream(), span));
                inner.set_span(span);
                TokenTree::Group(inner)
            }
            mut other => {
                other.set_span(span);
                other
            }
        })
        .collect()
}
