//! `#[agent_procedure]`: the contract of a backend procedure, declared on
//! its input struct.
//!
//! The struct gets the `#[agent_schema]` treatment (unless it carries that
//! attribute itself), an `impl Procedure` with the `'static` contract, a
//! `{Name}Fields` struct of typed field handles for bindings, a catalog
//! entry, and a test that checks the contract.
//!
//! The stages, as for `#[agent_component]`: `parse` (the model of the
//! attribute and the field handles) → `check` → `expand` (the contract, or
//! after errors the fallback that keeps uses of the type quiet).

mod check;
mod expand;
mod parse;

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::DeriveInput;

use crate::ctxt::Ctxt;
use crate::symbol::is_helper;
use crate::wire_attrs::already_expanded;

pub(crate) fn expand(args: TokenStream, input: TokenStream) -> TokenStream {
    let item: DeriveInput = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(_) => {
            let error = syn::Error::new(
                Span::call_site(),
                "#[agent_procedure] goes on the input struct of a procedure: `#[agent_procedure(id = \"domain:…\", effect = \"…\")] struct MyInput { … }`",
            )
            .to_compile_error();
            return quote!(#input #error);
        }
    };
    // A second `#[agent_procedure]` on the same struct: one error at it,
    // and the struct expands once.
    if let Some(at) = item.attrs.iter().position(|attr| {
        attr.path()
            .segments
            .last()
            .is_some_and(|segment| segment.ident == "agent_procedure")
    }) {
        let mut item = item;
        let duplicate = item.attrs.remove(at);
        let error = syn::Error::new_spanned(
            duplicate,
            "#[agent_procedure] is applied twice to this struct; remove one of them",
        )
        .to_compile_error();
        let once = expand(args, quote!(#item));
        return quote!(#once #error);
    }
    let cx = Ctxt::default();
    let attrs = parse::attrs(&cx, args, &item);
    check::attrs(&cx, &attrs, &item);
    let fields = parse::named_fields(&cx, &item);
    check::generics(&cx, &item);
    let handles = parse::handles(&item, &fields);
    let expanded = already_expanded(&item.attrs);
    let has_schema = expanded.is_some()
        || item
            .attrs
            .iter()
            .any(|attr| is_helper(attr, "agent_schema"));
    let output_only = check::output_only(&cx, &item, expanded);
    let schema = if has_schema {
        input
    } else {
        crate::schema::expand(TokenStream::new(), input)
    };
    if cx.has_errors() {
        let errors = cx.into_compile_errors();
        return expand::fallback(&item, &handles, output_only, schema, errors);
    }
    expand::contract(&item, &attrs, &handles, schema)
}
