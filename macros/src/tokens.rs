//! Token builders shared by the expansions of `#[agent_component]` and
//! `#[agent_procedure]`: the rules' values as `macro_support` paths, the
//! `Source` of an authored item, call-site hygiene at a user's span, and
//! the `fn policies()` of a `policies = [...]` attribute.

use agent_surface_rules::{Audit, Confirmation, Effect};
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::LitStr;

/// `span`'s location with the call site's hygiene: identifiers the
/// expansion introduces (`input`, `_ctx`) resolve where the expansion is,
/// even when the span comes from a `macro_rules!` fragment.
pub(crate) fn hygienic(span: proc_macro2::Span) -> proc_macro2::Span {
    proc_macro2::Span::call_site().located_at(span)
}

pub(crate) fn effect_tokens(effect: Effect) -> TokenStream {
    let variant = match effect {
        Effect::Read => quote!(Read),
        Effect::LocalState => quote!(LocalState),
        Effect::Navigation => quote!(Navigation),
        Effect::ServerQuery => quote!(ServerQuery),
        Effect::ServerMutation => quote!(ServerMutation),
        Effect::ExternalSideEffect => quote!(ExternalSideEffect),
        Effect::Destructive => quote!(Destructive),
    };
    quote!(::agent_surface::macro_support::Effect::#variant)
}

pub(crate) fn confirmation_tokens(confirmation: Confirmation) -> TokenStream {
    let variant = match confirmation {
        Confirmation::Never => quote!(Never),
        Confirmation::Optional => quote!(Optional),
        Confirmation::Required => quote!(Required),
    };
    quote!(::agent_surface::macro_support::Confirmation::#variant)
}

pub(crate) fn audit_tokens(audit: Audit) -> TokenStream {
    let variant = match audit {
        Audit::None => quote!(None),
        Audit::Metadata => quote!(Metadata),
        Audit::Full => quote!(Full),
    };
    quote!(::agent_surface::macro_support::Audit::#variant)
}

/// The `Source` of an authored item: its module, Rust type and the file and
/// line of `at`.
pub(crate) fn source_tokens(rust_type: &LitStr, at: Span) -> TokenStream {
    quote_spanned! {at=>
        ::agent_surface::macro_support::Source::new(
            ::core::module_path!(),
            #rust_type,
            ::core::file!(),
            ::core::line!(),
        )
    }
}

/// `fn policies()` building a fresh chain from an attribute's `policies =
/// [...]` expressions, each checked against `Policy` where it was written
/// (`Self` in them naming `self_ty`).
pub(crate) fn policies_fn(policies: &[syn::Expr], self_ty: &syn::Type) -> TokenStream {
    let items = policies.iter().map(|expr| {
        crate::declared_policy::install(crate::self_type::replace(quote!(#expr), self_ty))
    });
    quote! {
        fn policies() -> ::std::vec::Vec<::agent_surface::policy::PolicyRef> {
            ::std::vec![#(#items),*]
        }
    }
}
