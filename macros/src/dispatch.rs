//! Code generation of the dispatch in the generated `Component` impl:
//! which capability a call names (`when`, unavailable reasons and
//! preconditions by index), and the arm that runs its handler.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::Ident;
use syn::spanned::Spanned;

use crate::ast::{Capability, Component};
use crate::marker::{cfg_attrs, marker};
use crate::signature::Param;
use crate::tokens::hygienic;

/// `fn __when`: one arm per capability with a `when` method.
pub(crate) fn when_method(component: &Component<'_>, patterns: &[TokenStream]) -> TokenStream {
    let arms: Vec<TokenStream> = component
        .capabilities
        .iter()
        .zip(patterns)
        .filter_map(|(capability, pattern)| {
            let when = capability.when.as_ref()?;
            let cfg = cfg_attrs(capability);
            let call = quote_spanned! {when.span()=> Self::#when(self) };
            Some(quote!(#cfg #pattern => #call,))
        })
        .collect();
    if arms.is_empty() {
        return TokenStream::new();
    }
    quote! {
        fn __when(&self, capability: usize) -> bool {
            match capability {
                #(#arms)*
                _ => true,
            }
        }
    }
}

/// `fn __unavailable_reason`: one arm per capability with a reason method.
pub(crate) fn reason_method(component: &Component<'_>, patterns: &[TokenStream]) -> TokenStream {
    let arms: Vec<TokenStream> = component
        .capabilities
        .iter()
        .zip(patterns)
        .filter_map(|(capability, pattern)| {
            let Some(Err(method)) = &capability.reason else {
                return None;
            };
            let cfg = cfg_attrs(capability);
            let output_span =
                component
                    .method(method)
                    .map_or(method.span(), |target| match &target.sig.output {
                        syn::ReturnType::Type(_, ty) => ty.span(),
                        syn::ReturnType::Default => method.span(),
                    });
            let call = quote_spanned!(method.span()=> Self::#method(self));
            let text =
                quote_spanned! {output_span=> ::agent_surface::macro_support::reason_text(#call) };
            let reason = quote!(::core::option::Option::Some(#text));
            Some(quote!(#cfg #pattern => #reason,))
        })
        .collect();
    if arms.is_empty() {
        return TokenStream::new();
    }
    quote! {
        fn __unavailable_reason(&self, capability: usize) -> ::core::option::Option<::std::string::String> {
            match capability {
                #(#arms)*
                _ => ::core::option::Option::None,
            }
        }
    }
}

/// `fn __precondition`: one arm per capability with a precondition method.
pub(crate) fn precondition_method(
    component: &Component<'_>,
    patterns: &[TokenStream],
) -> TokenStream {
    let arms: Vec<TokenStream> = component
        .capabilities
        .iter()
        .zip(patterns)
        .filter_map(|(capability, pattern)| {
            let precondition = capability.precondition.as_ref()?;
            capability.input()?;
            let marker = marker(capability);
            // Pass the context only when the check declares it (by type).
            let target = component.method(precondition);
            let with_context = target.is_some_and(crate::helpers::precondition_takes_context);
            // The input as the type the check borrows, and its result,
            // each checked where the check's signature writes it.
            let borrowed = target.and_then(crate::helpers::precondition_input_type);
            let input = match borrowed {
                Some(ty) => {
                    let input = Ident::new("input", hygienic(ty.span()));
                    quote_spanned! {ty.span()=>
                        ::agent_surface::macro_support::precondition_input::<#ty, _>(#input)
                    }
                }
                None => quote!(input),
            };
            let output_span = target.map_or(precondition.span(), |target| match &target.sig.output {
                syn::ReturnType::Type(_, ty) => ty.span(),
                syn::ReturnType::Default => precondition.span(),
            });
            let call = if with_context {
                quote_spanned!(precondition.span()=> Self::#precondition(self, #input, _ctx))
            } else {
                quote_spanned!(precondition.span()=> Self::#precondition(self, #input))
            };
            let call = quote_spanned!{output_span=> ::agent_surface::macro_support::precondition_result(#call) };
            let cfg = cfg_attrs(capability);
            Some(quote! {
                #cfg
                #pattern => match ::agent_surface::macro_support::input_ref::<#marker>(_input) {
                    ::core::option::Option::Some(input) => #call,
                    ::core::option::Option::None => ::core::result::Result::Err(
                        ::agent_surface::macro_support::precondition_input_missing(),
                    ),
                },
            })
        })
        .collect();
    if arms.is_empty() {
        return TokenStream::new();
    }
    quote! {
        fn __precondition(
            &self,
            capability: usize,
            _input: &::agent_surface::macro_support::TypedInput,
            _ctx: &::agent_surface::macro_support::ReadContext,
        ) -> ::core::result::Result<(), ::agent_surface::macro_support::PreconditionFailure> {
            match capability {
                #(#arms)*
                _ => ::core::result::Result::Ok(()),
            }
        }
    }
}

/// One arm of `fn __invoke`: call the handler with its parameters in the
/// order the user wrote them; an async handler inside a boxed `Send`
/// future, a synchronous one at once.
pub(crate) fn invoke_arm(pattern: &TokenStream, capability: &Capability<'_>) -> TokenStream {
    let method = capability.ident();
    let args = capability.params.iter().map(|param| match param {
        Param::Input(ty) => {
            let input = Ident::new("input", hygienic(ty.span()));
            quote_spanned!(ty.span()=> #input)
        }
        Param::Context(ty) => {
            let ctx = Ident::new("_ctx", hygienic(ty.span()));
            // The handler's own lifetime name (`&'a ReadContext`) is not in
            // scope here: the borrow is elided.
            let mut elided = (*ty).clone();
            if let syn::Type::Reference(reference) = &mut elided {
                reference.lifetime = None;
            }
            quote_spanned!(ty.span()=> <#elided as ::agent_surface::context::HandlerContext<'_>>::lend(&#ctx))
        }
    });
    let call = quote!(Self::#method(&*self, #(#args),*));
    let marker = marker(capability);
    let span = capability.method.sig.span();
    // An async handler runs when the pipeline polls its boxed future; a
    // synchronous one runs here, and its outcome needs no future at all.
    let future = if capability.method.sig.asyncness.is_some() {
        quote_spanned! {span=>
            ::agent_surface::macro_support::handler(
                ::agent_surface::macro_support::cancellation_of(&_ctx),
                async move {
                    ::agent_surface::macro_support::into_outcome::<#marker>(#call.await)
                },
            )
        }
    } else {
        quote_spanned! {span=>
            ::agent_surface::macro_support::ready(
                ::agent_surface::macro_support::into_outcome::<#marker>(#call)
            )
        }
    };
    let cfg = cfg_attrs(capability);
    // The context is made only for a handler that takes one, or an async
    // one (its future listens on the context's cancellation signal).
    let takes_context = capability.method.sig.asyncness.is_some()
        || capability
            .params
            .iter()
            .any(|param| matches!(param, Param::Context(_)));
    let context = takes_context.then(|| {
        quote! {
            let _ctx = ::agent_surface::macro_support::ContextSource::into_context(_ctx);
        }
    });
    match capability.input() {
        Some(_) => quote! {
            #cfg
            #pattern => {
                #context
                match ::agent_surface::macro_support::take_input::<#marker>(_input) {
                    ::core::result::Result::Ok(input) => #future,
                    ::core::result::Result::Err(error) => ::agent_surface::macro_support::failed(error),
                }
            }
        },
        None => quote!(#cfg #pattern => { #context #future }),
    }
}
