//! The property names a struct's values hold on the wire, and the checks
//! that no two of its fields are read from one key across types: a field
//! and a field of a flattened type, two flattened types' fields, or an
//! internally tagged enum's tag and a field of a variant's type. One
//! type's expansion cannot see another's fields, so each type declares its
//! names (`AgentSchema::WIRE_NAMES`) and the checks compare them at
//! compile time, each reported at the flattened field or the variant's
//! type.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Attribute, Data, DeriveInput, Fields, LitStr, Type};

use crate::wire_attrs::{find, metas, metas_with_cfg_attr, wire_names};

/// A flattened field of a concrete type, checked here.
pub(crate) struct Flattened {
    pub(crate) ty: Type,
    /// Its message when serde cannot flatten the type.
    pub(crate) not_flattenable: String,
    /// Its Rust name, for the clash message.
    pub(crate) name: String,
}

/// The rule serde renames fields with as agents send them (the
/// container's `rename_all`, else our default `camelCase`).
pub(crate) fn field_rule(attrs: &[Attribute]) -> Option<String> {
    let container = metas(attrs, "serde");
    find(&container, "rename_all")
        .and_then(|meta| {
            meta.text.as_ref().map(LitStr::value).or_else(|| {
                find(&meta.nested, "deserialize").and_then(|m| m.text.as_ref().map(LitStr::value))
            })
        })
        .or_else(|| (find(&container, "transparent").is_none()).then(|| "camelCase".to_owned()))
}

/// The names of the struct's own fields that are read from a key: not
/// flattened, not skipped, not under `#[cfg]` (which may leave them out).
fn own_names(item: &DeriveInput) -> Vec<String> {
    let Data::Struct(data) = &item.data else {
        return Vec::new();
    };
    let Fields::Named(named) = &data.fields else {
        return Vec::new();
    };
    let rule = field_rule(&item.attrs);
    let mut names = Vec::new();
    for field in &named.named {
        let serde = metas_with_cfg_attr(&field.attrs, "serde");
        let keyless = serde
            .iter()
            .any(|meta| matches!(meta.key.as_str(), "flatten" | "skip" | "skip_deserializing"));
        if keyless || !crate::cfg::cfgs(&field.attrs).is_empty() {
            continue;
        }
        if let Some(ident) = &field.ident {
            names.extend(wire_names(
                &field.attrs,
                &ident.to_string(),
                rule.as_deref(),
                false,
            ));
        }
    }
    names
}

/// The checks and the names of a struct with named fields that flattens
/// `flattened` (concrete types, in field order): consts naming each
/// flattened type's names (failing where serde cannot flatten it), a
/// clash check at each, and the body of `WIRE_NAMES`. `generic_flattened`
/// are flattened field types over the item's generics (named only).
pub(crate) fn checks(
    item: &DeriveInput,
    flattened: &[Flattened],
    generic_flattened: &[Type],
) -> (TokenStream, Option<TokenStream>) {
    let named_struct =
        matches!(&item.data, Data::Struct(data) if matches!(data.fields, Fields::Named(_)));
    if !named_struct {
        // Only a struct with named fields lists names (anything else
        // flattens as no names, and clashes with nothing).
        let consts = flattened.iter().map(|flat| {
            let ty = &flat.ty;
            let message = &flat.not_flattenable;
            quote_spanned! {ty.span()=>
                const _: () = if ::agent_surface::macro_support::flatten::<#ty>().is_none() {
                    ::core::panic!(#message)
                };
            }
        });
        return (quote!(#(#consts)*), None);
    }
    let own = own_names(item);
    let slots: Vec<_> = (0..flattened.len())
        .map(|at| {
            format_ident!(
                "__AGENT_SURFACE_FLATTENED_{}",
                at,
                span = Span::mixed_site()
            )
        })
        .collect();
    let mut consts = TokenStream::new();
    for (flat, slot) in flattened.iter().zip(&slots) {
        let ty = &flat.ty;
        let message = &flat.not_flattenable;
        // One call at the type: one error where it is no schema type.
        consts.extend(quote_spanned! {ty.span()=>
            const #slot: ::core::option::Option<&'static ::agent_surface::macro_support::WireNames> =
                ::agent_surface::macro_support::flatten::<#ty>();
            const _: () = if #slot.is_none() {
                ::core::panic!(#message)
            };
        });
    }
    let named = |slot| quote!(::agent_surface::macro_support::WireNames::or_none(#slot));
    let ident = &item.ident;
    for (at, (flat, slot)) in flattened.iter().zip(&slots).enumerate() {
        let ty = &flat.ty;
        let later = slots.get(at + 1..).unwrap_or_default();
        let message = format!(
            "a property of the flattened `{}` has the name of another property of `{ident}` (one of its own \
             fields, aliases included, or a field of a type flattened after it): serde reads that key into \
             one of them only, so the other is never read; rename one of the two",
            flat.name
        );
        let slot = named(slot);
        let later = later.iter().map(named);
        consts.extend(quote_spanned! {ty.span()=>
            const _: () = if #slot.overlaps(&::agent_surface::macro_support::WireNames {
                own: &[#(#own),*],
                flattened: &[#(#later),*],
            }) {
                ::core::panic!(#message)
            };
        });
    }
    let generic = generic_flattened
        .iter()
        .map(|ty| quote!(<#ty as ::agent_surface::macro_support::AgentSchema>::WIRE_NAMES_REF));
    let slots = slots.iter().map(named);
    let wire_names = quote! {
        const WIRE_NAMES: ::agent_surface::macro_support::WireNames =
            ::agent_surface::macro_support::WireNames {
                own: &[#(#own),*],
                flattened: &[#(#slots,)* #(#generic),*],
            };
    };
    (consts, Some(wire_names))
}

/// The tag of an internally tagged enum (`tag` without `content`).
pub(crate) fn internal_tag(item: &DeriveInput) -> Option<String> {
    let container = metas(&item.attrs, "serde");
    if find(&container, "content").is_some() || !matches!(item.data, Data::Enum(_)) {
        return None;
    }
    find(&container, "tag").and_then(|meta| meta.text.as_ref().map(LitStr::value))
}

/// The check at a newtype variant's type of an internally tagged enum: the
/// type has no property named as the tag.
pub(crate) fn tag_check(tag: &str, variant: &str, ty: &Type) -> TokenStream {
    let message = format!(
        "`{variant}` carries a type with a property named `{tag}`, which is this internally tagged enum's tag: \
         serde reads the key as the tag, so the field is never read; rename the field or the tag \
         (`#[serde(tag = \"…\")]`)"
    );
    quote_spanned! {ty.span()=>
        const _: () = if ::agent_surface::macro_support::holds_tag::<#ty>(#tag) {
            ::core::panic!(#message)
        };
    }
}
