//! What to emit after reporting errors: the user's items unchanged (minus the
//! helper attributes) and a `Component` impl with unreachable bodies, so one
//! mistake does not cascade into errors wherever the type is used.

use proc_macro2::TokenStream;
use quote::quote;

use crate::ast::Component;
use crate::expand::strip_helpers;
use crate::marker::type_checks;

pub(crate) fn expand(component: &Component<'_>) -> TokenStream {
    let item = strip_helpers(component.item);
    let placeholder = component_impl(component);
    let type_checks = type_checks(component);
    quote! {
        #item

        #placeholder
        #type_checks
    }
}

/// The `Component` impl with unreachable bodies (nothing for a trait impl
/// or a generic block, which cannot have one).
pub(crate) fn component_impl(component: &Component<'_>) -> TokenStream {
    let self_ty = component.self_ty;
    let representable =
        component.item.trait_.is_none() && component.item.generics.params.is_empty();
    if !representable {
        return TokenStream::new();
    }
    quote! {
        const _: () = {
            #[automatically_derived]
            impl ::agent_surface::Component for #self_ty {
                fn contract() -> &'static ::agent_surface::macro_support::ComponentContract {
                    ::core::unreachable!()
                }

                fn __contract(&self) -> &'static ::agent_surface::macro_support::ComponentContract {
                    ::core::unreachable!()
                }

                fn __invoke(
                    self: ::agent_surface::macro_support::Arc<Self>,
                    _: usize,
                    _: ::core::option::Option<::agent_surface::macro_support::TypedInput>,
                    _: ::agent_surface::macro_support::ActionContext,
                ) -> ::agent_surface::macro_support::HandlerFuture {
                    ::core::unreachable!()
                }
            }
        };
    }
}
