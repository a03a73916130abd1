//! Code generation for `#[agent_procedure]`: the `{Name}Fields` struct of
//! typed field handles, the `Procedure` impl with the `'static` contract,
//! the catalog entry and the contract test, or after errors the fallback
//! (the schema impls, the `…Fields` type and a `Procedure` impl that is
//! never run, so uses of the type raise no follow-on errors).

use agent_surface_rules::Effect;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, LitStr};

use super::parse::{Attrs, Handle};
use crate::tokens::{audit_tokens, confirmation_tokens, effect_tokens, source_tokens};

/// The `{Name}Fields` struct: one typed handle per field the agent sends.
fn fields_struct(item: &DeriveInput, handles: &[Handle<'_>]) -> TokenStream {
    let ident = &item.ident;
    let vis = &item.vis;
    let fields_ident = format_ident!("{}Fields", ident);
    let fields_doc = format!(
        "Typed handles of the fields of [`{ident}`], for binding them to live state in a `ProcedureRef`."
    );
    let handle_fields = handles.iter().map(|handle| {
        let field = handle.field;
        let name = &field.ident;
        let field_vis = &field.vis;
        let ty = &field.ty;
        let doc = format!("The `{}` field.", handle.wire);
        let cfgs = crate::cfg::cfgs(&field.attrs);
        // The field's own lint allowances (`non_snake_case` on `ID`) go
        // with its handle.
        let lints = field
            .attrs
            .iter()
            .filter(|attr| attr.path().is_ident("allow"));
        quote! {
            #(#cfgs)*
            #(#lints)*
            #[doc = #doc]
            #field_vis #name: ::agent_surface::macro_support::Field<#ident, #ty>
        }
    });
    // The type's own lint allowances (`non_snake_case` for a field `ID`)
    // go with its handles.
    let lints = item
        .attrs
        .iter()
        .filter(|attr| attr.path().is_ident("allow"));
    quote! {
        #[doc = #fields_doc]
        #[derive(Clone, Copy, Debug)]
        #(#lints)*
        #vis struct #fields_ident {
            #(#handle_fields,)*
        }
    }
}

/// `impl Procedure` whose `contract()` body is `contract`.
fn procedure_impl(
    item: &DeriveInput,
    handles: &[Handle<'_>],
    contract: TokenStream,
) -> TokenStream {
    let ident = &item.ident;
    let fields_ident = format_ident!("{}Fields", ident);
    let handle_values = handles.iter().map(|handle| {
        let name = &handle.field.ident;
        let wire = &handle.wire;
        let cfgs = crate::cfg::cfgs(&handle.field.attrs);
        quote!(#(#cfgs)* #name: ::agent_surface::macro_support::Field::new(#wire))
    });
    quote! {
        #[automatically_derived]
        impl ::agent_surface::macro_support::Procedure for #ident {
            type Fields = #fields_ident;

            fn contract() -> &'static ::agent_surface::macro_support::ProcedureContract {
                #contract
            }

            fn fields() -> #fields_ident {
                #fields_ident {
                    #(#handle_values,)*
                }
            }

            fn __sealed(_: ::agent_surface::macro_support::Sealed) {}
        }
    }
}

/// After errors: `schema`, the `…Fields` type and a `Procedure` impl that
/// is never run (none for a serialize-only input), then `errors`; or only
/// `schema` and `errors` when the item cannot carry them.
pub(super) fn fallback(
    item: &DeriveInput,
    handles: &[Handle<'_>],
    output_only: bool,
    schema: TokenStream,
    errors: TokenStream,
) -> TokenStream {
    let representable = matches!(&item.data, Data::Struct(data) if matches!(data.fields, Fields::Named(_)))
        && item.generics.params.is_empty();
    if !representable {
        return quote!(#schema #errors);
    }
    let fields_struct = fields_struct(item, handles);
    let fallback_impl =
        (!output_only).then(|| procedure_impl(item, handles, quote!(::core::unreachable!())));
    quote! {
        #schema
        #fields_struct
        const _: () = { #fallback_impl };
        #errors
    }
}

/// `schema`, then the procedure's contract, `Procedure` impl, catalog entry
/// and contract test.
pub(super) fn contract(
    item: &DeriveInput,
    attrs: &Attrs,
    handles: &[Handle<'_>],
    schema: TokenStream,
) -> TokenStream {
    let ident = &item.ident;
    let fields_struct = fields_struct(item, handles);
    let id = attrs
        .id
        .clone()
        .unwrap_or_else(|| LitStr::new("", Span::call_site()));
    let description = LitStr::new(
        attrs
            .description
            .as_ref()
            .map_or("", |text| text.value.trim()),
        Span::call_site(),
    );
    let effect = effect_tokens(
        attrs
            .effect
            .as_ref()
            .map_or(Effect::ServerMutation, |e| e.value),
    );
    let rust_type = LitStr::new(&ident.unraw().to_string(), Span::call_site());
    let source = source_tokens(&rust_type, ident.span());
    let mut contract = quote! {
        ::agent_surface::macro_support::ProcedureContract::new(
            #id,
            #description,
            #effect,
            ::agent_surface::macro_support::procedure_input_schema::<#ident>,
            #source,
        )
    };
    if let Some(confirmation) = &attrs.confirmation {
        let tokens = confirmation_tokens(confirmation.value);
        contract.extend(quote!(.confirmation(#tokens)));
    }
    if let Some(audit) = attrs.audit {
        let tokens = audit_tokens(audit);
        contract.extend(quote!(.audit(#tokens)));
    }
    if let Some(idempotent) = attrs.idempotent {
        contract.extend(quote!(.idempotent(#idempotent)));
    }
    if let Some(output) = &attrs.output {
        let check = quote_spanned! {output.span()=>
            ::agent_surface::macro_support::procedure_output_schema::<#output>
        };
        contract.extend(quote!(.output(#check)));
    }
    if let Some(ms) = attrs.timeout_ms {
        contract.extend(quote!(.timeout_ms(#ms)));
    }
    let test_name = format_ident!("agent_surface_procedure_contract_of_{}", ident.unraw());
    let procedure_impl = procedure_impl(item, handles, quote!(&CONTRACT));
    let bounded = crate::bounded::assert_type(&quote!(#ident), ident.span());

    quote! {
        #schema

        #bounded

        #fields_struct

        #[doc(hidden)]
        const _: () = {
            static CONTRACT: ::agent_surface::macro_support::ProcedureContract = #contract;

            #procedure_impl

            ::agent_surface::macro_support::inventory::submit! {
                ::agent_surface::macro_support::ProcedureEntry::new(
                    <#ident as ::agent_surface::macro_support::Procedure>::contract
                )
            }
        };

        /// Fails `cargo test` when the procedure contract is invalid.
        #[cfg(test)]
        #[test]
        #[allow(non_snake_case, unnameable_test_items)]
        fn #test_name() {
            ::agent_surface::macro_support::check_procedure(
                <#ident as ::agent_surface::macro_support::Procedure>::contract(),
            );
        }
    }
}
