//! The marker type of one capability: the item naming its input and
//! return types (`Takes`/`Returns`/`Observes`) and holding its policies,
//! where those types are checked at the tokens the user wrote; with the
//! `#[cfg]` every item generated for the capability carries.

use agent_surface_rules::Kind;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;

use crate::ast::{Capability, Component};
use crate::tokens::policies_fn;

/// The handler's return type (`()` when it declares none).
fn return_type(capability: &Capability<'_>) -> TokenStream {
    match capability.output {
        Some(ty) => quote!(#ty),
        None => quote!(()),
    }
}

/// The marker type naming one capability's input and return types:
/// `__cap_<method>`, a name no other generated item starts with (a method
/// named `component` is no clash with the component's own holder).
pub(crate) fn marker(capability: &Capability<'_>) -> syn::Ident {
    format_ident!("__cap_{}", capability.ident().unraw())
}

/// The `#[cfg]` attributes of a capability's method, for every item and arm
/// generated for it.
pub(crate) fn cfg_attrs(capability: &Capability<'_>) -> TokenStream {
    let attrs = capability.cfg_attributes();
    quote!(#(#attrs)*)
}

/// The marker type and its `Takes`/`Returns` impls: the one place where the
/// input and return types are checked, at the tokens the user wrote.
pub(crate) fn marker_items(
    capability: &Capability<'_>,
    self_ty: &syn::Type,
    check_bounds: bool,
) -> TokenStream {
    let policies = capability
        .policies
        .as_deref()
        .map_or_else(TokenStream::new, |policies| policies_fn(policies, self_ty));
    marker_items_with(capability, self_ty, policies, check_bounds)
}

/// After errors: the marker items of every capability whose signature is
/// well formed (one per method name), without policies, so the input and
/// return types are still checked in the same build.
pub(crate) fn type_checks(component: &Component<'_>) -> TokenStream {
    let mut seen = Vec::new();
    let markers = component.capabilities.iter().filter_map(|capability| {
        // An observation without a return type is reported already.
        let reported = !capability.signature_ok
            || (capability.kind == Kind::Observation && capability.output.is_none());
        if reported || seen.contains(&capability.ident()) {
            return None;
        }
        seen.push(capability.ident());
        // Bounds are a finding of their own, reported once the rest holds.
        Some(marker_items_with(
            capability,
            component.self_ty,
            TokenStream::new(),
            false,
        ))
    });
    quote! {
        #[allow(dead_code)]
        const _: () = {
            #(#markers)*
        };
    }
}

fn marker_items_with(
    capability: &Capability<'_>,
    self_ty: &syn::Type,
    policies: TokenStream,
    check_bounds: bool,
) -> TokenStream {
    let marker = marker(capability);
    let cfg = cfg_attrs(capability);
    let returns = crate::self_type::replace(return_type(capability), self_ty);
    let returns_span = capability
        .output
        .map_or(capability.ident().span(), Spanned::span);
    let output = quote_spanned! {returns_span=> type Output = #returns; };
    let returns_impl = match capability.kind {
        Kind::Observation => quote! {
            #cfg
            impl ::agent_surface::macro_support::Observes for #marker {
                #output
            }
        },
        _ => quote! {
            #cfg
            impl ::agent_surface::macro_support::Returns for #marker {
                #output
            }
        },
    };
    let takes = capability.input().map(|input| {
        let span = input.span();
        let input = crate::self_type::replace(quote!(#input), self_ty);
        let ty = quote_spanned! {span=> type Input = #input; };
        let bounded = check_bounds.then(|| crate::bounded::assert_input(&quote!(#marker), span));
        quote! {
            #cfg
            impl ::agent_surface::macro_support::Takes for #marker {
                #ty
            }
            #cfg
            #bounded
        }
    });
    let inherent = (!policies.is_empty()).then(|| quote!(#cfg impl #marker { #policies }));
    quote! {
        #cfg
        #[allow(non_camel_case_types)]
        enum #marker {}

        #inherent
        #takes
        #returns_impl
    }
}
