//! `#[agent_schema]`: serde + schemars derives with the surface's wire
//! conventions, and a compile-time check that every field type has a schema
//! inside the subset, reported at the field's type.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::{Attribute, Data, DeriveInput, Fields, Generics, Ident, Type};

use crate::ast::SchemaOptions;
use crate::ctxt::Ctxt;
use crate::wire;
use crate::wire_attrs::{self, already_expanded, attr_args, attr_keys, derives, inner_attrs_mut};

/// Field attributes after which the field's own type no longer decides its
/// schema (skipped, or replaced by `with`): the runtime check covers those.
fn field_schema_is_replaced(attrs: &[Attribute]) -> bool {
    let serde = attr_keys(attrs, "serde");
    let schemars = attr_keys(attrs, "schemars");
    let replaced = [
        "skip",
        "with",
        "serialize_with",
        "deserialize_with",
        "schema_with",
    ];
    serde
        .iter()
        .chain(schemars.iter())
        .any(|key| replaced.contains(&key.as_str()))
}

/// Whether `ty` holds the item named `ident` again (a recursive type).
fn holds_itself(ty: &Type, ident: &Ident) -> bool {
    struct Finder<'a> {
        ident: &'a Ident,
        found: bool,
    }
    impl<'ast> Visit<'ast> for Finder<'_> {
        fn visit_path(&mut self, path: &'ast syn::Path) {
            if path.segments.len() == 1
                && path
                    .segments
                    .first()
                    .is_some_and(|s| s.ident == *self.ident)
            {
                self.found = true;
            }
            syn::visit::visit_path(self, path);
        }
    }
    let mut finder = Finder {
        ident,
        found: false,
    };
    finder.visit_type(ty);
    finder.found
}

/// Whether a type mentions one of the item's generic parameters (a type
/// or a lifetime: a check placed outside the item cannot name either).
fn mentions_generics(ty: &Type, generics: &Generics) -> bool {
    struct Finder<'a> {
        params: Vec<&'a Ident>,
        lifetimes: Vec<&'a Ident>,
        found: bool,
    }
    impl<'ast> Visit<'ast> for Finder<'_> {
        fn visit_ident(&mut self, ident: &'ast Ident) {
            if self.params.contains(&ident) {
                self.found = true;
            }
        }
        fn visit_lifetime(&mut self, lifetime: &'ast syn::Lifetime) {
            if self.lifetimes.contains(&&lifetime.ident) {
                self.found = true;
            }
        }
    }
    // Const parameters too: `Tagged<N>` names the item's `N`.
    let params: Vec<&Ident> = generics
        .type_params()
        .map(|param| &param.ident)
        .chain(generics.const_params().map(|param| &param.ident))
        .collect();
    let lifetimes: Vec<&Ident> = generics
        .lifetimes()
        .map(|param| &param.lifetime.ident)
        .collect();
    if params.is_empty() && lifetimes.is_empty() {
        return false;
    }
    let mut finder = Finder {
        params,
        lifetimes,
        found: false,
    };
    finder.visit_type(ty);
    finder.found
}

/// Every field, with the `#[cfg]` of its variant and its own: a check of
/// the field's type carries them, so a field compiled out is not checked.
fn fields_of(data: &Data) -> Vec<(&syn::Field, Vec<&Attribute>)> {
    fn with_cfgs<'a>(field: &'a syn::Field, outer: &[&'a Attribute]) -> Vec<&'a Attribute> {
        let mut cfgs = outer.to_vec();
        cfgs.extend(crate::cfg::cfgs(&field.attrs));
        cfgs
    }
    match data {
        Data::Struct(data) => data
            .fields
            .iter()
            .map(|field| (field, with_cfgs(field, &[])))
            .collect(),
        // A variant serde skips (or reads and writes its own way) has no
        // schema of its fields to check.
        Data::Enum(data) => data
            .variants
            .iter()
            .filter(|variant| !field_schema_is_replaced(&variant.attrs))
            .flat_map(|variant| {
                let outer = crate::cfg::cfgs(&variant.attrs);
                variant
                    .fields
                    .iter()
                    .map(move |field| (field, with_cfgs(field, &outer)))
            })
            .collect(),
        Data::Union(_) => Vec::new(),
    }
}

/// The element lists of the tuple struct or of each tuple variant with two
/// or more elements (without elements under `#[cfg]`), with the variant's
/// `#[cfg]`.
fn tuple_groups(data: &Data) -> Vec<(Vec<&syn::Field>, Vec<&Attribute>)> {
    fn unnamed(fields: &Fields) -> Option<Vec<&syn::Field>> {
        match fields {
            Fields::Unnamed(fields) if fields.unnamed.len() > 1 => Some(
                fields
                    .unnamed
                    .iter()
                    .filter(|field| crate::cfg::cfgs(&field.attrs).is_empty())
                    .collect(),
            ),
            _ => None,
        }
    }
    match data {
        Data::Struct(data) => unnamed(&data.fields)
            .map(|group| (group, Vec::new()))
            .into_iter()
            .collect(),
        Data::Enum(data) => data
            .variants
            .iter()
            .filter_map(|variant| {
                unnamed(&variant.fields).map(|group| (group, crate::cfg::cfgs(&variant.attrs)))
            })
            .collect(),
        Data::Union(_) => Vec::new(),
    }
}

/// What a rejected union still gets, so that its uses (an action input, a
/// field of another schema type) raise no follow-on errors: the traits an
/// `#[agent_schema]` type has, with bodies that never run (the crate does
/// not compile).
fn union_fallback(item: &DeriveInput) -> TokenStream {
    if !item.generics.params.is_empty() {
        return TokenStream::new();
    }
    let ident = &item.ident;
    let name = ident.to_string();
    let serialize = (!derives(&item.attrs, "Serialize")).then(|| {
        quote! {
            #[automatically_derived]
            impl serde::Serialize for #ident {
                fn serialize<S: serde::Serializer>(&self, _: S) -> ::core::result::Result<S::Ok, S::Error> {
                    ::core::result::Result::Err(<S::Error as serde::ser::Error>::custom(#name))
                }
            }
        }
    });
    let deserialize = (!derives(&item.attrs, "Deserialize")).then(|| {
        quote! {
            #[automatically_derived]
            impl<'de> serde::Deserialize<'de> for #ident {
                fn deserialize<D: serde::Deserializer<'de>>(_: D) -> ::core::result::Result<Self, D::Error> {
                    ::core::result::Result::Err(<D::Error as serde::de::Error>::custom(#name))
                }
            }
        }
    });
    let schema = (!derives(&item.attrs, "JsonSchema")).then(|| {
        quote! {
            #[automatically_derived]
            impl schemars::JsonSchema for #ident {
                fn schema_name() -> ::std::borrow::Cow<'static, str> {
                    ::std::borrow::Cow::Borrowed(#name)
                }
                fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                    schemars::Schema::default()
                }
            }
        }
    });
    quote! {
        #[doc(hidden)]
        const _: () = {
            use ::agent_surface::macro_support::{schemars, serde};
            #[automatically_derived]
            impl ::agent_surface::macro_support::AgentSchema for #ident {}
            #[automatically_derived]
            impl ::agent_surface::macro_support::AgentInput for #ident {}
            #[automatically_derived]
            impl<D> ::agent_surface::macro_support::Bounded<D> for #ident {
                const UNBOUNDED: ::core::option::Option<&'static str> = ::core::option::Option::None;
            }
            #schema
            #serialize
            #deserialize
        };
    }
}

/// `item` without the serde and schemars helper attributes our derives
/// would have read (the user's own derives keep theirs).
fn without_helpers(item: &DeriveInput) -> DeriveInput {
    let mut item = item.clone();
    let keep_serde = derives(&item.attrs, "Serialize") || derives(&item.attrs, "Deserialize");
    let keep_schemars = derives(&item.attrs, "JsonSchema");
    let ours = |attr: &Attribute| {
        (attr.path().is_ident("serde") && !keep_serde)
            || (attr.path().is_ident("schemars") && !keep_schemars)
    };
    // Those inside `cfg_attr(pred, serde(…))` too: with no derive to
    // declare them, each would be an unknown attribute.
    let strip = |attrs: &mut Vec<Attribute>| {
        attrs.retain(|attr| !ours(attr));
        crate::cfg::unwrap_helpers(attrs, ours);
    };
    strip(&mut item.attrs);
    inner_attrs_mut(&mut item, strip);
    item
}

/// For each field read with `deserialize_with` (or `with`) and no
/// `default`, whose type the macro cannot see is an `Option` (an alias,
/// `type MaybeText = Option<String>`): a constant the compiler evaluates,
/// failing with the rule when the type is an `Option` after all (the
/// inherent `OPTION` of a probe over `Option<T>` shadows the trait's
/// `false` for every other type). Fields over the item's generics are not
/// probed (the constant is outside the item).
fn option_read_probes(item: &DeriveInput, deserialize: bool) -> proc_macro2::TokenStream {
    if !deserialize
        || wire_attrs::find(
            &wire_attrs::metas_with_cfg_attr(&item.attrs, "serde"),
            "default",
        )
        .is_some()
    {
        return proc_macro2::TokenStream::new();
    }
    let mut probes = Vec::new();
    for (field, cfgs) in fields_of(&item.data) {
        let read = wire_attrs::metas_with_cfg_attr(&field.attrs, "serde");
        let Some(reader) =
            wire_attrs::find(&read, "deserialize_with").or_else(|| wire_attrs::find(&read, "with"))
        else {
            continue;
        };
        if wire_attrs::find(&read, "default").is_some()
            || wire::is_option(&field.ty)
            || mentions_generics(&field.ty, &item.generics)
            || wire::holds_item(&field.ty, &item.ident)
        {
            continue;
        }
        let name = field
            .ident
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default();
        let message = wire::option_read_without_default(&name, &reader.key);
        let ty = &field.ty;
        probes.push(quote_spanned! {ty.span()=>
            #(#cfgs)*
            const _: () = ::core::assert!(!__AgentSurfaceProbe::<#ty>::OPTION, "{}", #message);
        });
    }
    if probes.is_empty() {
        return proc_macro2::TokenStream::new();
    }
    quote! {
        #[doc(hidden)]
        #[allow(dead_code)]
        const _: () = {
            struct __AgentSurfaceProbe<T: ?::core::marker::Sized>(::core::marker::PhantomData<T>);
            impl<T> __AgentSurfaceProbe<::core::option::Option<T>> {
                const OPTION: bool = true;
            }
            trait __AgentSurfaceNotOption {
                const OPTION: bool = false;
            }
            impl<T: ?::core::marker::Sized> __AgentSurfaceNotOption for __AgentSurfaceProbe<T> {}
            #(#probes)*
        };
    }
}

/// What a second `#[agent_schema]` on one type is told.
const APPLIED_TWICE: &str = "#[agent_schema] is applied twice to this type; remove one of them";

pub(crate) fn expand(args: TokenStream, input: TokenStream) -> TokenStream {
    let cx = Ctxt::default();
    let options = SchemaOptions::parse(&cx, args);
    let mut item: DeriveInput = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(_) => {
            let message = syn::Error::new(
                proc_macro2::Span::call_site(),
                "#[agent_schema] goes on a struct or an enum",
            );
            let error = message.to_compile_error();
            // The arguments' own mistakes are reported too.
            let errors = cx.into_compile_errors();
            return quote!(#input #error #errors);
        }
    };
    if already_expanded(&item.attrs).is_some() {
        // An `#[agent_schema]` above this one already expanded the item:
        // one error, at this attribute, and the item as it made it.
        let error =
            syn::Error::new(proc_macro2::Span::call_site(), APPLIED_TWICE).to_compile_error();
        let errors = cx.into_compile_errors();
        return quote!(#input #error #errors);
    }
    if let Data::Union(union) = &item.data {
        cx.error_spanned_by(
            union.union_token,
            "unions have no JSON Schema; use an enum (`#[agent_schema]` supports structs and enums)",
        );
        let errors = cx.into_compile_errors();
        let fallback = union_fallback(&item);
        return quote!(#input #fallback #errors);
    }
    // Malformed options were reported; the expansion goes on with the
    // defaults, so uses of the type raise no follow-on errors.

    crate::wire::check(&cx, &item, options.serialize, options.deserialize);
    crate::serde_shape::check(&cx, &item, options.serialize, options.deserialize);
    // Read `from` another type (`#[serde(from = "…")]`, `try_from`): on the
    // wire it is that type, so it is an action input where that type is
    // one (a `String` is not: using it as one names the rule).
    let converted_from = attr_args(&item.attrs, "serde")
        .into_iter()
        .find(|(key, _)| key == "from" || key == "try_from")
        .and_then(|(_, value)| value)
        .and_then(|lit| {
            syn::parse_str::<Type>(&lit.value())
                .ok()
                .map(|ty| (ty, lit.span()))
        });
    let bounded = crate::bounded::impls(
        &cx,
        &item,
        options.deserialize,
        options.unbounded,
        converted_from.as_ref().map(|(source, _)| source),
    );
    crate::bounded::strip_markers(&mut item);
    if cx.has_errors() && item.generics.params.is_empty() {
        // The wire shape is wrong: the type gets the traits it would have,
        // with bodies that never run, so its uses report nothing more.
        let mut bare = without_helpers(&item);
        // A second `#[agent_schema]` below this one would expand the item
        // again (its traits twice): it goes, named as the mistake it is.
        let twice = bare.attrs.iter().position(|attr| {
            attr.path()
                .segments
                .last()
                .is_some_and(|segment| segment.ident == "agent_schema")
        });
        if let Some(at) = twice {
            let attr = bare.attrs.remove(at);
            cx.error_spanned_by(attr, APPLIED_TWICE);
        }
        let fallback = union_fallback(&item);
        let errors = cx.into_compile_errors();
        return quote!(#bare #fallback #errors);
    }
    let ident = &item.ident;
    let serde_keys = attr_keys(&item.attrs, "serde");
    let fields = fields_of(&item.data);
    let named_struct =
        matches!(&item.data, Data::Struct(data) if matches!(data.fields, Fields::Named(_)));
    let has_flatten = fields.iter().any(|(field, _)| {
        attr_keys(&field.attrs, "serde")
            .iter()
            .any(|key| key == "flatten")
    });

    let mut derive_paths = Vec::new();
    if options.serialize && !derives(&item.attrs, "Serialize") {
        derive_paths.push(quote!(::agent_surface::macro_support::serde::Serialize));
    }
    if options.deserialize && !derives(&item.attrs, "Deserialize") {
        derive_paths.push(quote!(::agent_surface::macro_support::serde::Deserialize));
    }
    let add_schema_derive = !derives(&item.attrs, "JsonSchema");
    if add_schema_derive {
        derive_paths.push(quote!(::agent_surface::macro_support::schemars::JsonSchema));
    }
    let mut container = vec![
        if derive_paths.is_empty() {
            TokenStream::new()
        } else {
            quote!(#[derive(#(#derive_paths),*)])
        },
        if options.deserialize {
            quote!(#[serde(crate = "::agent_surface::macro_support::serde")])
        } else {
            quote!(#[serde(crate = "::agent_surface::macro_support::serde_output_only")])
        },
    ];
    if add_schema_derive {
        container.push(quote!(#[schemars(crate = "::agent_surface::macro_support::schemars")]));
    }
    let has = |key: &str| serde_keys.iter().any(|k| k == key);
    if !has("rename_all") && !has("transparent") {
        container.push(quote!(#[serde(rename_all = "camelCase")]));
    }
    if matches!(item.data, Data::Enum(_)) && !has("rename_all_fields") {
        let has_struct_variants = matches!(&item.data, Data::Enum(data)
            if data.variants.iter().any(|v| matches!(v.fields, Fields::Named(_))));
        if has_struct_variants {
            container.push(quote!(#[serde(rename_all_fields = "camelCase")]));
        }
    }
    // An enum's struct variants are structs on the wire: they reject
    // unknown fields alike (serde applies the container's attribute to
    // each of them).
    let struct_variants = matches!(&item.data, Data::Enum(data)
        if data.variants.iter().any(|v| matches!(v.fields, Fields::Named(_))));
    if (named_struct || struct_variants)
        && options.deserialize
        && !options.allow_unknown_fields
        && !has_flatten
        && !has("deny_unknown_fields")
    {
        container.push(quote!(#[serde(deny_unknown_fields)]));
    }

    // Field checks: concrete types are asserted where they are written;
    // types over the item's generics become bounds of the impl. `Self` in a
    // field type is the item (the checks live outside it), and a field
    // that holds the item again (a tree) is checked by the item's own
    // other fields: as a bound it would ask the compiler to prove the
    // item's impl from itself.
    let self_ty: Type = {
        let (_, ty_generics, _) = item.generics.split_for_impl();
        syn::parse_quote!(#ident #ty_generics)
    };
    let mut assertions = Vec::new();
    let mut flatten_checks = Vec::new();
    let mut flattened = Vec::new();
    let mut generic_flattened = Vec::new();
    let mut bounds = Vec::new();
    // The newtype variants of an internally tagged enum: their type is
    // checked for a property named as the tag.
    let tag = crate::names::internal_tag(&item);
    let tagged: Vec<(&syn::Field, String)> = match (&item.data, &tag) {
        (Data::Enum(data), Some(_)) => data
            .variants
            .iter()
            .filter_map(|variant| match &variant.fields {
                Fields::Unnamed(fields) if fields.unnamed.len() == 1 => fields
                    .unnamed
                    .first()
                    .map(|field| (field, variant.ident.to_string())),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    for (field, cfgs) in fields
        .iter()
        .filter(|(field, _)| !field_schema_is_replaced(&field.attrs))
    {
        let replaced: Type = syn::parse2(crate::self_type::replace(
            {
                let field_ty = &field.ty;
                quote!(#field_ty)
            },
            &self_ty,
        ))
        .unwrap_or_else(|_| field.ty.clone());
        let ty = &replaced;
        if holds_itself(ty, ident) {
            continue;
        }
        let is_flattened = attr_keys(&field.attrs, "serde")
            .iter()
            .any(|key| key == "flatten");
        if mentions_generics(ty, &item.generics) {
            // A bound cannot carry `#[cfg]`; a field compiled out adds none.
            if cfgs.is_empty() {
                bounds.push(quote!(#ty: ::agent_surface::macro_support::AgentSchema));
                if is_flattened {
                    generic_flattened.push(ty.clone());
                }
            }
        } else {
            let variant = tagged
                .iter()
                .find(|(tagged, _)| std::ptr::eq(*tagged, *field))
                .map(|(_, variant)| variant);
            if let (Some(variant), Some(tag)) = (variant, &tag) {
                // The check's bound asserts the schema too.
                let check = crate::names::tag_check(tag, variant, ty);
                flatten_checks.push(quote!(#(#cfgs)* #check));
            } else if is_flattened {
                // The check's bound asserts the schema too: one error for
                // a type that is none.
                let message = format!(
                    "`{}` is flattened, but serde cannot flatten `{}` into an object (a number, string, \
                     list, tuple or an enum of unit variants fails every value): flatten a struct with \
                     named fields, a map or an enum with data, or drop `#[serde(flatten)]`",
                    field
                        .ident
                        .as_ref()
                        .map_or_else(|| "the field".to_owned(), ToString::to_string),
                    quote!(#ty).to_string().replace(' ', "")
                );
                if cfgs.is_empty() {
                    // Checked with the names it brings (see `names`).
                    flattened.push(crate::names::Flattened {
                        ty: ty.clone(),
                        not_flattenable: message,
                        name: quote!(#ty).to_string().replace(' ', ""),
                    });
                } else {
                    let check = quote_spanned! {ty.span()=>
                        const _: () = if !::agent_surface::macro_support::flattens::<#ty>() {
                            ::core::panic!(#message)
                        };
                    };
                    flatten_checks.push(quote!(#(#cfgs)* #check));
                }
            } else {
                let assertion = quote_spanned! {ty.span()=>
                    ::agent_surface::macro_support::assert_schema::<#ty>();
                };
                assertions.push(quote!(#(#cfgs)* #assertion));
            }
        }
    }
    // Tuple structs and tuple variants are JSON arrays: with two or more
    // elements they must share one type (mixed ones need `prefixItems`).
    for (group, cfgs) in tuple_groups(&item.data) {
        let mut kept = group
            .iter()
            .filter(|field| !field_schema_is_replaced(&field.attrs));
        let Some(first) = kept.next() else { continue };
        let first = &first.ty;
        for field in kept {
            let ty = &field.ty;
            if mentions_generics(ty, &item.generics) || mentions_generics(first, &item.generics) {
                if cfgs.is_empty() {
                    bounds.push(quote!(#ty: ::agent_surface::macro_support::SameField<#first>));
                }
            } else {
                let assertion = quote_spanned! {ty.span()=>
                    ::agent_surface::macro_support::assert_same_field::<#first, #ty>();
                };
                assertions.push(quote!(#(#cfgs)* #assertion));
            }
        }
    }
    let (impl_generics, ty_generics, where_clause) = item.generics.split_for_impl();
    let mut predicates: Vec<TokenStream> = where_clause
        .map(|clause| clause.predicates.iter().map(|p| quote!(#p)).collect())
        .unwrap_or_default();
    predicates.extend(item.generics.type_params().map(|param| {
        let ident = &param.ident;
        quote!(#ident: ::agent_surface::macro_support::AgentSchema)
    }));
    predicates.extend(bounds);
    let where_tokens = if predicates.is_empty() {
        TokenStream::new()
    } else {
        quote!(where #(#predicates),*)
    };
    let concrete = item.generics.params.is_empty();
    // A `transparent` struct is its one field on the wire, not an object:
    // it is no action input (using it as one names the rule).
    let input_impl = (named_struct && options.deserialize && !has("transparent")).then(|| {
        if let Some((source, span)) = &converted_from {
            let source = quote_spanned!(*span=> #source);
            quote! {
                #[automatically_derived]
                impl #impl_generics ::agent_surface::macro_support::AgentInput for #ident #ty_generics
                where
                    // Higher-ranked: checked where the type is taken as an
                    // input, not here (a `String` source is not trivially an
                    // error of the type itself).
                    for<'__agent_surface> #source: ::agent_surface::macro_support::AgentInput,
                    #(#predicates),*
                {}
            }
        } else if concrete {
            // The bounds are checked where the type is taken as an input:
            // a higher-ranked clause is not trivially false, so a field type
            // that is no agent schema type (reported at the field) adds no
            // error here.
            quote! {
                #[automatically_derived]
                impl ::agent_surface::macro_support::AgentInput for #ident
                where
                    for<'__agent_surface> #ident: ::agent_surface::macro_support::Bounded<::agent_surface::macro_support::Deepest>
                {}
            }
        } else {
            // A generic input is an input wherever its arguments make it one.
            let mut predicates = predicates.clone();
            predicates.push(quote! {
                Self: ::agent_surface::macro_support::serde::de::DeserializeOwned
                    + ::core::marker::Send
                    + 'static
                    + ::agent_surface::macro_support::Bounded<::agent_surface::macro_support::Deepest>
            });
            quote! {
                #[automatically_derived]
                impl #impl_generics ::agent_surface::macro_support::AgentInput for #ident #ty_generics
                where #(#predicates),* {}
            }
        }
    });
    // What serde can flatten: not a tuple struct of other than one
    // element, a unit struct, nor an enum of unit variants (a newtype is
    // what it wraps; left at the default, as every other shape).
    let flattens = match &item.data {
        Data::Enum(data)
            if data
                .variants
                .iter()
                .all(|v| matches!(v.fields, Fields::Unit)) =>
        {
            Some(quote!(
                const FLATTENS: bool = false;
            ))
        }
        Data::Struct(data) if matches!(data.fields, Fields::Unit) => Some(quote!(
            const FLATTENS: bool = false;
        )),
        Data::Struct(data) if matches!(&data.fields, Fields::Unnamed(f) if f.unnamed.len() != 1) => {
            Some(quote!(
                const FLATTENS: bool = false;
            ))
        }
        _ => None,
    };
    let (name_checks, wire_names) = crate::names::checks(&item, &flattened, &generic_flattened);
    let assert_fields = (!assertions.is_empty()).then(|| {
        quote! {
            const _: fn() = || {
                #(#assertions)*
            };
        }
    });

    // The item's own derives come first, then ours, then every helper
    // attribute: each helper follows the derive that introduces it.
    let (user_derives, other_attrs): (Vec<&Attribute>, Vec<&Attribute>) = item
        .attrs
        .iter()
        .partition(|attr| attr.path().is_ident("derive"));
    let (our_derive, helpers) = container.split_at(1);
    let mut bare = item.clone();
    bare.attrs.clear();

    let option_reads = option_read_probes(&item, options.deserialize);
    let errors = cx.into_compile_errors();
    quote! {
        #(#user_derives)*
        #(#our_derive)*
        #(#helpers)*
        #(#other_attrs)*
        #bare

        #[doc(hidden)]
        const _: () = {
            #[automatically_derived]
            impl #impl_generics ::agent_surface::macro_support::AgentSchema for #ident #ty_generics #where_tokens {
                #flattens
                #wire_names
            }
            #(#flatten_checks)*
            #name_checks

            #input_impl
            #bounded
            #assert_fields
        };

        #option_reads

        #errors
    }
}
