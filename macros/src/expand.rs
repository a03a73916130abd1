//! Code generation for `#[agent_component]`.
//!
//! The output reads like careful hand-written code:
//! - the user's impl block, with the helper attributes removed;
//! - one `const _: () = { … };` holding the `'static` contract, the
//!   `Component` impl that dispatches to the handlers, and the catalog entry;
//! - a `#[test]` that checks the generated schemas against the subset.

use agent_surface_rules::{Effect, Kind};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::{ImplItem, ItemImpl, LitStr};

use crate::ast::{Capability, Component, ConcurrencySpec};
use crate::dispatch::{invoke_arm, precondition_method, reason_method, when_method};
use crate::marker::{cfg_attrs, marker, marker_items};
use crate::symbol::{ACTION, OBSERVATION, REFERENCE, is_helper};
use crate::tokens::{audit_tokens, confirmation_tokens, effect_tokens, policies_fn, source_tokens};

/// What tells two components' generated tests apart in one module: the
/// full self type (`ListView<Device>`, `a::Panel`) and the component type,
/// hashed (FNV-1a).
fn test_suffix(component: &Component<'_>) -> u32 {
    let self_ty = component.self_ty;
    let component_type = component
        .attrs
        .component_type
        .as_ref()
        .map(LitStr::value)
        .unwrap_or_default();
    let text = format!("{} {component_type}", quote!(#self_ty));
    // The low 32 bits: short, and enough to tell a module's components apart.
    (crate::digest::fnv64(&text) & 0xffff_ffff) as u32
}

/// The user's impl block without `#[observation]` / `#[action]` attributes.
pub(crate) fn strip_helpers(item: &ItemImpl) -> ItemImpl {
    let mut item = item.clone();
    item.attrs.retain(|attr| !is_helper(attr, REFERENCE));
    for inner in &mut item.items {
        let attrs = match inner {
            ImplItem::Fn(item) => &mut item.attrs,
            ImplItem::Const(item) => &mut item.attrs,
            ImplItem::Type(item) => &mut item.attrs,
            ImplItem::Macro(item) => &mut item.attrs,
            _ => continue,
        };
        attrs.retain(|attr| !is_helper(attr, OBSERVATION) && !is_helper(attr, ACTION));
        crate::cfg::unwrap_helpers(attrs, |attr| {
            is_helper(attr, OBSERVATION) || is_helper(attr, ACTION)
        });
    }
    item
}

fn lit(text: &str) -> LitStr {
    LitStr::new(text, Span::call_site())
}

/// The match pattern selecting each capability by its index in the
/// contract: the literal index, or, when a capability before it carries
/// `#[cfg]`, a guard counting the capabilities compiled in before it.
fn index_patterns(component: &Component<'_>) -> Vec<TokenStream> {
    let predicates: Vec<Option<TokenStream>> = component
        .capabilities
        .iter()
        .map(|capability| crate::cfg::predicate(&capability.cfg_attributes()))
        .collect();
    let conditional = predicates.iter().any(Option::is_some);
    (0..predicates.len())
        .map(|index| {
            if !conditional {
                return quote!(#index);
            }
            let terms = predicates
                .iter()
                .take(index)
                .map(|predicate| match predicate {
                    Some(predicate) => quote!((#predicate as usize)),
                    None => quote!(1usize),
                });
            quote!(__index if __index == 0usize #(+ #terms)*)
        })
        .collect()
}

fn capability_contract(capability: &Capability<'_>) -> TokenStream {
    let name = lit(&capability.name.value);
    let method = lit(&capability.ident().to_string());
    let description = capability.doc_expr.clone().unwrap_or_else(|| {
        let text = lit(capability
            .description
            .as_ref()
            .map_or("", |text| text.value.as_str()));
        quote!(#text)
    });
    let mut tokens = match capability.kind {
        Kind::Observation => quote! {
            ::agent_surface::macro_support::CapabilityContract::observation(#name, #method, #description)
        },
        _ => {
            let effect = effect_tokens(
                capability
                    .effect
                    .as_ref()
                    .map_or(Effect::LocalState, |e| e.value),
            );
            quote! {
                ::agent_surface::macro_support::CapabilityContract::action(#name, #method, #description, #effect)
            }
        }
    };
    let marker = marker(capability);
    if capability.input().is_some() {
        tokens.extend(quote! {
            .input(
                ::agent_surface::macro_support::input_schema::<#marker>,
                ::agent_surface::macro_support::parse_input::<#marker>,
            )
        });
    }
    tokens.extend(quote!(.output(::agent_surface::macro_support::output_schema::<#marker>)));
    if let Some(value) = capability.idempotent {
        tokens.extend(quote!(.idempotent(#value)));
    }
    if let Some(value) = capability.reversible {
        tokens.extend(quote!(.reversible(#value)));
    }
    if let Some(value) = capability.confirmation {
        let value = confirmation_tokens(value);
        tokens.extend(quote!(.confirmation(#value)));
    }
    if let Some(value) = capability.audit {
        let value = audit_tokens(value);
        tokens.extend(quote!(.audit(#value)));
    }
    if capability.when.is_some() {
        tokens.extend(quote!(.when()));
    }
    match &capability.reason {
        Some(Ok(text)) => tokens.extend(quote!(.unavailable_reason(#text))),
        Some(Err(_)) => tokens.extend(quote!(.dynamic_unavailable_reason())),
        None => {}
    }
    if capability.precondition.is_some() {
        tokens.extend(quote!(.precondition()));
    }
    if let Some(ms) = capability.timeout_ms {
        tokens.extend(quote!(.timeout_ms(#ms)));
    }
    if let Some(meta) = &capability.meta {
        let json = lit(&meta.value);
        tokens.extend(quote!(.meta(#json)));
    }
    if let Some(internal) = &capability.internal {
        let json = lit(internal);
        tokens.extend(quote!(.internal(#json)));
    }
    if capability.policies.is_some() {
        tokens.extend(quote!(.policies(#marker::policies)));
    }
    match &capability.concurrency {
        None | Some(ConcurrencySpec::Instance) => {}
        Some(ConcurrencySpec::Capability) => {
            tokens.extend(
                quote!(.concurrency(::agent_surface::macro_support::Concurrency::Capability)),
            );
        }
        Some(ConcurrencySpec::Key(key)) => {
            tokens.extend(
                quote!(.concurrency(::agent_surface::macro_support::Concurrency::Key(#key))),
            );
        }
        Some(ConcurrencySpec::Parallel(n)) => {
            tokens.extend(
                quote!(.concurrency(::agent_surface::macro_support::Concurrency::Parallel(#n))),
            );
        }
    }
    if let Some(depth) = capability.queue_depth {
        tokens.extend(quote!(.queue_depth(#depth)));
    }
    if capability.doc_expr.is_some() {
        tokens.extend(quote!(.doc_text()));
    }
    tokens
}

/// Compile-time checks of the descriptions the compiler computes (a
/// `#[doc = include_str!(…)]` or `concat!(…)` doc comment): blank, or over
/// the limit once built as the runtime builds it, is a compile error at
/// the item, with the rule and the fix.
fn computed_descriptions(component: &Component<'_>) -> TokenStream {
    let check = |doc: &TokenStream, span: proc_macro2::Span, what: String, limit: usize| {
        let over = format!(
            "{what} (a computed doc comment) is over its limit of {limit} characters: \
             shorten the text it includes, or write `description = \"…\"`"
        );
        let blank = format!(
            "{what} (a computed doc comment) is blank: include text, or write `description = \"…\"`"
        );
        quote_spanned! {span=>
            const _: () = {
                let chars = ::agent_surface::macro_support::doc_description_chars(#doc);
                if chars > #limit {
                    ::core::panic!(#over)
                } else if chars == 0 {
                    ::core::panic!(#blank)
                }
            };
        }
    };
    let mut checks = TokenStream::new();
    if let Some(doc) = &component.attrs.doc_expr {
        checks.extend(check(
            doc,
            component.item.impl_token.span,
            "the component's description".to_owned(),
            agent_surface_rules::MAX_COMPONENT_DESCRIPTION,
        ));
    }
    for capability in &component.capabilities {
        if let Some(doc) = &capability.doc_expr {
            let cfgs = cfg_attrs(capability);
            let one = check(
                doc,
                capability.ident().span(),
                format!("the description of `{}`", capability.ident()),
                agent_surface_rules::MAX_CAPABILITY_DESCRIPTION,
            );
            checks.extend(quote!(#cfgs #one));
        }
    }
    checks
}

fn component_contract(component: &Component<'_>) -> TokenStream {
    let attrs = &component.attrs;
    let component_type = attrs.component_type.clone().unwrap_or_else(|| lit(""));
    let description = attrs.doc_expr.clone().unwrap_or_else(|| {
        let text = lit(attrs
            .description
            .as_ref()
            .map_or("", |text| text.value.as_str()));
        quote!(#text)
    });
    let capabilities = component.capabilities.iter().map(|capability| {
        let cfg = cfg_attrs(capability);
        let contract = capability_contract(capability);
        quote!(#cfg #contract)
    });
    let source = source_tokens(
        &lit(&component.rust_type_name()),
        component.item.impl_token.span,
    );
    let mut tokens = quote! {
        ::agent_surface::macro_support::ComponentContract::new(
            #component_type,
            #description,
            &[#(#capabilities),*],
            #source,
        )
    };
    if let Some(instance) = &attrs.instance {
        tokens.extend(quote!(.instance(#instance)));
    }
    if let Some(priority) = attrs.priority {
        tokens.extend(quote!(.priority(#priority)));
    }
    if let Some(origin) = &attrs.origin {
        tokens.extend(quote!(.origin(#origin)));
    }
    if let Some(enabled) = attrs.enabled {
        tokens.extend(quote!(.enabled(#enabled)));
    }
    if let Some((parent_type, instance)) = &attrs.parent {
        let instance = match instance {
            Some(instance) => quote!(::core::option::Option::Some(#instance)),
            None => quote!(::core::option::Option::None),
        };
        tokens.extend(quote!(.parent(#parent_type, #instance)));
    }
    if let Some(meta) = &attrs.meta {
        let json = lit(&meta.value);
        tokens.extend(quote!(.meta(#json)));
    }
    if let Some(internal) = &attrs.internal {
        let json = lit(internal);
        tokens.extend(quote!(.internal(#json)));
    }
    if attrs.policies.is_some() {
        tokens.extend(quote!(.policies(__component::policies)));
    }
    if attrs.doc_expr.is_some() {
        tokens.extend(quote!(.doc_text()));
    }
    tokens.extend(crate::reach::contract_calls(component).0);
    tokens
}

pub(crate) fn expand(component: &Component<'_>) -> TokenStream {
    let item = strip_helpers(component.item);
    let self_ty = component.self_ty;
    let contract = component_contract(component);
    let patterns = index_patterns(component);
    let when = when_method(component, &patterns);
    let reason = reason_method(component, &patterns);
    let precondition = precondition_method(component, &patterns);
    let arms = component
        .capabilities
        .iter()
        .zip(&patterns)
        .map(|(capability, pattern)| invoke_arm(pattern, capability));
    // The type's name as identifier characters (a raw, parenthesised or
    // `dyn` self type is no identifier as written).
    let type_part: String = component
        .rust_type_name()
        .trim_start_matches("r#")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let test_name = format_ident!(
        "agent_surface_contract_of_{}_{:08x}",
        type_part,
        test_suffix(component)
    );
    // One input type taken by several capabilities is checked for bounds
    // once (at its first use), so one unbounded field is one error.
    let mut checked_inputs: Vec<String> = Vec::new();
    let markers: Vec<TokenStream> = component
        .capabilities
        .iter()
        .map(|capability| {
            let first_use = capability.input().is_some_and(|input| {
                let key = format!("{}{}", quote!(#input), cfg_attrs(capability));
                let first = !checked_inputs.contains(&key);
                checked_inputs.push(key);
                first
            });
            marker_items(capability, self_ty, first_use)
        })
        .collect();
    let description_checks = computed_descriptions(component);
    let component_policies = component
        .attrs
        .policies
        .as_deref()
        .map_or_else(TokenStream::new, |policies| policies_fn(policies, self_ty));
    let reference_items = crate::reach::contract_calls(component).1;
    let component_marker = (!component_policies.is_empty()).then(|| {
        quote! {
            #[allow(non_camel_case_types)]
            enum __component {}
            impl __component { #component_policies }
        }
    });

    quote! {
        #item

        #[doc(hidden)]
        const _: () = {
            #description_checks
            #component_marker
            #reference_items
            #(#markers)*

            static CONTRACT: ::agent_surface::macro_support::ComponentContract = #contract;

            // A deprecated capability method is the user's to call: its
            // dispatch here warns nobody.
            #[automatically_derived]
            #[allow(deprecated)]
            impl ::agent_surface::Component for #self_ty {
                fn contract() -> &'static ::agent_surface::macro_support::ComponentContract {
                    &CONTRACT
                }

                fn __contract(&self) -> &'static ::agent_surface::macro_support::ComponentContract {
                    &CONTRACT
                }

                #when
                #reason
                #precondition

                fn __invoke(
                    self: ::agent_surface::macro_support::Arc<Self>,
                    capability: usize,
                    input: ::core::option::Option<::agent_surface::macro_support::TypedInput>,
                    ctx: ::agent_surface::macro_support::ActionContext,
                ) -> ::agent_surface::macro_support::HandlerFuture {
                    <Self as ::agent_surface::Component>::__invoke_with(
                        self,
                        capability,
                        input,
                        ::core::convert::From::from(ctx),
                    )
                }

                fn __invoke_with(
                    self: ::agent_surface::macro_support::Arc<Self>,
                    capability: usize,
                    _input: ::core::option::Option<::agent_surface::macro_support::TypedInput>,
                    _ctx: ::agent_surface::macro_support::ContextSource<'_>,
                ) -> ::agent_surface::macro_support::HandlerFuture {
                    match capability {
                        #(#arms)*
                        _ => ::agent_surface::macro_support::unknown_capability(capability),
                    }
                }
            }

            ::agent_surface::macro_support::inventory::submit! {
                ::agent_surface::macro_support::CatalogEntry::new(
                    <#self_ty as ::agent_surface::Component>::contract
                )
            }
        };

        /// Fails `cargo test` when a generated schema leaves the supported subset.
        #[cfg(test)]
        #[allow(non_snake_case, unnameable_test_items)]
        #[test]
        fn #test_name() {
            ::agent_surface::macro_support::check_contract(
                <#self_ty as ::agent_surface::Component>::contract(),
            );
        }
    }
}
