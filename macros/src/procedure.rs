//! `#[agent_procedure]`: the contract of a backend procedure, declared on
//! its input struct.
//!
//! The struct gets the `#[agent_schema]` treatment (unless it carries that
//! attribute itself), an `impl Procedure` with the `'static` contract, a
//! `{Name}Fields` struct of typed field handles for bindings, a catalog
//! entry, and a test that checks the contract.

use agent_surface_rules::{Confirmation, Defaults, Effect, Kind};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, LitStr};

use crate::ast::{Spanned as At, doc_description, is_helper};
use crate::attr::{self, ArgSet};
use crate::ctxt::Ctxt;
use crate::expand::{audit_tokens, confirmation_tokens, effect_tokens, source_tokens};
use crate::schema::attr_args;
use crate::symbol::{
    AUDIT, CONFIRMATION, DESCRIPTION, EFFECT, ID, IDEMPOTENT, OUTPUT, PROCEDURE_KEYS, TIMEOUT,
};

/// The parsed attribute.
struct Attrs {
    id: Option<LitStr>,
    description: Option<At<String>>,
    effect: Option<At<Effect>>,
    confirmation: Option<At<Confirmation>>,
    audit: Option<agent_surface_rules::Audit>,
    idempotent: Option<bool>,
    output: Option<syn::Type>,
    timeout_ms: Option<u64>,
}

/// One field handle: the Rust field, its type and its wire name.
struct Handle<'a> {
    field: &'a syn::Field,
    wire: String,
}

fn parse_attrs(cx: &Ctxt, args: TokenStream, item: &DeriveInput) -> Attrs {
    let args = attr::parse_args(cx, args);
    let mut set = ArgSet::new(cx, "#[agent_procedure]", PROCEDURE_KEYS, args);
    let quiet = set.had_unknown_keys();
    let id_given = set.has(ID);
    let id = set.string(ID);
    if !id_given && !quiet {
        cx.error_spanned_by(
            &item.ident,
            "missing `id`: write `#[agent_procedure(id = \"domain:<path>\", effect = \"…\")]`",
        );
    }
    let effect_given = set.has(EFFECT);
    let effect = set.string(EFFECT).and_then(|lit| {
        let allowed: Vec<&str> = Effect::allowed(Kind::Procedure)
            .map(Effect::as_str)
            .collect();
        match Effect::parse(&lit.value()) {
            Some(effect) if effect.allowed_for(Kind::Procedure) => Some(At {
                value: effect,
                span: lit.span(),
            }),
            Some(effect) => {
                cx.error_spanned_by(
                    &lit,
                    format!(
                        "`{}` is a view effect; procedures run on the backend and declare one of: {}",
                        effect.as_str(),
                        allowed.join(", ")
                    ),
                );
                None
            }
            None => {
                cx.error_spanned_by(
                    &lit,
                    format!(
                        "unknown effect `{}`; {}procedures declare one of: {}",
                        lit.value(),
                        attr::did_you_mean(&lit.value(), &allowed),
                        allowed.join(", ")
                    ),
                );
                None
            }
        }
    });
    if !effect_given && !quiet {
        cx.error_spanned_by(
            &item.ident,
            "missing `effect`: one of server-query, server-mutation, external-side-effect, destructive",
        );
    }
    let description = set
        .string(DESCRIPTION)
        .map(|lit| At {
            value: lit.value(),
            span: lit.span(),
        })
        .or_else(|| doc_description(&item.attrs));
    let confirmation = set
        .confirmation(CONFIRMATION)
        .map(|(value, span)| At { value, span });
    let audit = set.audit(AUDIT);
    let timeout_ms = set.duration_ms(TIMEOUT);
    let output = set.ty(OUTPUT);
    Attrs {
        id,
        description,
        effect,
        confirmation,
        audit,
        idempotent: set.flag(IDEMPOTENT).map(|(b, _)| b),
        output,
        timeout_ms,
    }
}

/// Checks across keys: the plane of the id, the description, the
/// confirmation floor of the effect.
fn check(cx: &Ctxt, attrs: &Attrs, item: &DeriveInput) {
    if let Some(id) = &attrs.id {
        let text = id.value();
        match text.split_once(':') {
            Some(("domain", path)) => {
                if let Err(message) = agent_surface_rules::ids::parse_capability_id(&text)
                    .map(|_| ())
                    .and_then(|()| agent_surface_rules::ids::check_procedure_path(path))
                {
                    cx.error_spanned_by(id, message);
                }
            }
            Some(("view", path)) => cx.error_spanned_by(
                id,
                format!(
                    "procedure ids are on the domain plane: write `domain:{path}`; `view:` ids belong to component capabilities"
                ),
            ),
            Some((plane, path)) => cx.error_spanned_by(
                id,
                format!(
                    "procedure id `{text}` has plane `{plane}`; procedure ids start with `domain:`, as in `domain:{path}`"
                ),
            ),
            None => cx.error_spanned_by(
                id,
                format!(
                    "procedure id `{text}` has no plane; procedure ids start with `domain:`, as in `domain:{}`",
                    if text.is_empty() { "devices.disable" } else { &text }
                ),
            ),
        }
    }
    crate::valid::check_description(
        cx,
        attrs.description.as_ref(),
        agent_surface_rules::MAX_CAPABILITY_DESCRIPTION,
        || {
            cx.error_spanned_by(
                &item.ident,
                "missing description: add a doc comment (`/// …`) on the struct or `description = \"…\"`",
            );
        },
    );
    if let (Some(effect), Some(confirmation)) = (&attrs.effect, &attrs.confirmation)
        && let Some(defaults) = Defaults::of(Kind::Procedure, effect.value)
        && confirmation.value < defaults.confirmation_floor
    {
        cx.error_at(
            confirmation.span,
            format!(
                "a `{}` procedure cannot lower confirmation below `{}`",
                effect.value.as_str(),
                defaults.confirmation_floor.as_str()
            ),
        );
    }
}

/// The named fields of a struct, or an error at what makes it not an object.
fn named_fields<'a>(cx: &Ctxt, item: &'a DeriveInput) -> Vec<&'a syn::Field> {
    const NOT_OBJECT: &str =
        "procedure inputs must be JSON objects: use a struct with named fields";
    match &item.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(named) => named.named.iter().collect(),
            Fields::Unnamed(unnamed) => {
                cx.error_spanned_by(unnamed, NOT_OBJECT);
                Vec::new()
            }
            Fields::Unit => {
                cx.error_spanned_by(&item.ident, NOT_OBJECT);
                Vec::new()
            }
        },
        Data::Enum(data) => {
            cx.error_spanned_by(data.enum_token, NOT_OBJECT);
            Vec::new()
        }
        Data::Union(data) => {
            cx.error_spanned_by(data.union_token, NOT_OBJECT);
            Vec::new()
        }
    }
}

/// Reports `#[agent_schema(output)]` on a procedure input, at `output`:
/// the agent's call is deserialized into it.
fn output_only_schema(cx: &Ctxt, item: &DeriveInput) -> bool {
    let mut found = false;
    for attr in item
        .attrs
        .iter()
        .filter(|attr| is_helper(attr, "agent_schema"))
    {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident(crate::symbol::SCHEMA_OUTPUT) {
                found = true;
                cx.error_spanned_by(
                    &meta.path,
                    format!(
                        "`{}` is a procedure's input: the agent's call is deserialized into it, and `#[agent_schema(output)]` makes it serialize-only; remove `output`",
                        item.ident
                    ),
                );
            }
            if meta.input.peek(syn::Token![=]) {
                let _: syn::Expr = meta.value()?.parse()?;
            }
            Ok(())
        });
    }
    found
}

/// The value of `key = "…"` in the item's or a field's `#[serde(...)]`.
fn serde_string(attrs: &[syn::Attribute], key: &str) -> Option<LitStr> {
    attr_args(attrs, "serde")
        .into_iter()
        .find_map(|(k, value)| (k == key).then_some(value).flatten())
}

/// Whether a field's `#[serde(...)]` has one of `keys`.
fn serde_flag(attrs: &[syn::Attribute], keys: &[&str]) -> bool {
    attr_args(attrs, "serde")
        .iter()
        .any(|(key, _)| keys.contains(&key.as_str()))
}

fn handles<'a>(item: &'a DeriveInput, fields: &[&'a syn::Field]) -> Vec<Handle<'a>> {
    let rule = serde_string(&item.attrs, "rename_all");
    let rule_text = rule
        .as_ref()
        .map_or_else(|| "camelCase".to_owned(), LitStr::value);
    let mut out = Vec::new();
    for field in fields {
        let Some(ident) = &field.ident else { continue };
        if serde_flag(&field.attrs, &["skip", "skip_deserializing", "flatten"]) {
            continue;
        }
        // An unknown rule is reported once, by the schema's checks
        // (`wire_keys::known_keys`); no handle is made from it.
        if agent_surface_rules::rename_field("x", &rule_text).is_none() {
            return Vec::new();
        }
        let rust = ident.unraw().to_string();
        let wire = crate::wire::field_wire_name(&field.attrs, &rust, Some(&rule_text));
        out.push(Handle { field, wire });
    }
    out
}

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
    let cx = Ctxt::default();
    let attrs = parse_attrs(&cx, args, &item);
    check(&cx, &attrs, &item);
    let fields = named_fields(&cx, &item);
    if !item.generics.params.is_empty() {
        cx.error_spanned_by(
            &item.generics,
            "procedure inputs are concrete types; remove the generic parameters",
        );
    }
    let handles = handles(&item, &fields);
    let expanded = crate::schema::already_expanded(&item.attrs);
    let has_schema = expanded.is_some()
        || item
            .attrs
            .iter()
            .any(|attr| is_helper(attr, "agent_schema"));
    let mut output_only = output_only_schema(&cx, &item);
    if expanded == Some(true) {
        output_only = true;
        cx.error_spanned_by(
            &item.ident,
            format!(
                "`{}` is a procedure's input: the agent's call is deserialized into it, and `#[agent_schema(output)]` makes it serialize-only; remove `output`",
                item.ident
            ),
        );
    }
    let schema = if has_schema {
        input
    } else {
        crate::schema::expand(TokenStream::new(), input)
    };
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
        quote! {
            #(#cfgs)*
            #[doc = #doc]
            #field_vis #name: ::agent_surface::macro_support::Field<#ident, #ty>
        }
    });
    let handle_values = handles.iter().map(|handle| {
        let name = &handle.field.ident;
        let wire = &handle.wire;
        let cfgs = crate::cfg::cfgs(&handle.field.attrs);
        quote!(#(#cfgs)* #name: ::agent_surface::macro_support::Field::new(#wire))
    });
    let fields_struct = quote! {
        #[doc = #fields_doc]
        #[derive(Clone, Copy, Debug)]
        #vis struct #fields_ident {
            #(#handle_fields,)*
        }
    };
    let procedure_impl = |contract: TokenStream| {
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
    };
    if cx.has_errors() {
        // Fallback: the schema impls, the `…Fields` type and a `Procedure`
        // impl that is never run, so uses of the type raise no follow-on
        // errors.
        let errors = cx.into_compile_errors();
        let representable = matches!(&item.data, Data::Struct(data) if matches!(data.fields, Fields::Named(_)))
            && item.generics.params.is_empty();
        if !representable {
            return quote!(#schema #errors);
        }
        let fallback_impl = (!output_only).then(|| procedure_impl(quote!(::core::unreachable!())));
        return quote! {
            #schema
            #fields_struct
            const _: () = { #fallback_impl };
            #errors
        };
    }
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
    let procedure_impl = procedure_impl(quote!(&CONTRACT));
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
