//! Bounded input: every string, sequence, map or free-form JSON value an
//! agent can send into an input type carries a `length(max = …)` (at each
//! level the macro can see), or the author declares the choice to leave it
//! to the registry's `Limits::max_input_bytes` with
//! `#[agent_schema(unbounded)]`, on the field or on the type.
//!
//! Unbounded agent input is a decision, not an accident: the check is a
//! compile error with both fixes, never a silent default. Types the macro
//! cannot see through (aliases, your own types) are checked where they are
//! declared, by their own `#[agent_schema]`.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Attribute, Data, DeriveInput, GenericArgument, Ident, PathArguments, Type};

use crate::ctxt::Ctxt;
use crate::wire::{Form, Meta, metas};

/// What a type holds, as far as bounds go.
enum Shape<'a> {
    /// A string: bounded by `length(max)`.
    Text,
    /// A sequence of `T`: bounded by `length(max)`, its items by `inner(…)`.
    Sequence(&'a Type),
    /// A fixed-size array of `T`: its items by `inner(…)`.
    Array(&'a Type),
    /// A map or a free-form JSON value: no schema keyword bounds it (named
    /// as one, and as a list's items).
    Unboundable(&'static str, &'static str),
    /// Anything else: bounded, or checked where it is declared.
    Bounded,
}

/// The single type argument of the last segment of `ty`'s path.
fn argument(ty: &Type) -> Option<&Type> {
    let Type::Path(path) = ty else { return None };
    let segment = path.path.segments.last()?;
    let PathArguments::AngleBracketed(args) = &segment.arguments else {
        return None;
    };
    args.args.iter().find_map(|arg| match arg {
        GenericArgument::Type(ty) => Some(ty),
        _ => None,
    })
}

/// The shape of `ty`, seen through `Option`, `Box`, `Arc` and `Rc` (a
/// bound on the field applies to what they wrap).
fn shape(ty: &Type) -> Shape<'_> {
    match ty {
        Type::Paren(inner) => shape(&inner.elem),
        Type::Group(inner) => shape(&inner.elem),
        Type::Array(array) => Shape::Array(&array.elem),
        Type::Slice(slice) => Shape::Sequence(&slice.elem),
        Type::Path(path) if path.qself.is_none() => {
            let Some(last) = path.path.segments.last() else {
                return Shape::Bounded;
            };
            match last.ident.to_string().as_str() {
                "String" | "str" | "OsString" | "PathBuf" | "Url" => Shape::Text,
                "Option" | "Box" | "Arc" | "Rc" | "Cow" => match argument(ty) {
                    Some(inner) => shape(inner),
                    None => Shape::Bounded,
                },
                "Vec" | "VecDeque" | "HashSet" | "BTreeSet" | "LinkedList" | "BinaryHeap" => {
                    match argument(ty) {
                        Some(item) => Shape::Sequence(item),
                        None => Shape::Bounded,
                    }
                }
                "HashMap" | "BTreeMap" | "IndexMap" | "Map" => Shape::Unboundable("a map", "maps"),
                "Value" => Shape::Unboundable("free-form JSON", "free-form JSON"),
                _ => Shape::Bounded,
            }
        }
        _ => Shape::Bounded,
    }
}

/// Whether `metas` hold `length(max = …)` or `length(equal = …)`.
fn has_max(metas: &[&Meta]) -> bool {
    metas.iter().any(|meta| {
        meta.key == "length"
            && meta.form == Form::List
            && meta
                .nested
                .iter()
                .any(|inner| matches!(inner.key.as_str(), "max" | "equal"))
    })
}

/// The keys inside `inner(…)` among `metas`.
fn inner_of<'a>(metas: &[&'a Meta]) -> Vec<&'a Meta> {
    metas
        .iter()
        .filter(|meta| meta.key == "inner" && meta.form == Form::List)
        .flat_map(|meta| meta.nested.iter())
        .collect()
}

/// What is missing for `ty` under `metas`, as the attribute that would fix
/// it, or `None` when it is bounded.
fn missing(ty: &Type, metas: &[&Meta], depth: usize) -> Option<(String, String)> {
    let wrap = |text: &str| (0..depth).fold(text.to_owned(), |text, _| format!("inner({text})"));
    // What the field takes: `one` at the top, `many` as a list's items.
    let takes = |one: &str, many: &str| {
        if depth == 0 {
            one.to_owned()
        } else {
            format!("a list whose items are {many}")
        }
    };
    match shape(ty) {
        Shape::Text if !has_max(metas) => Some((
            wrap("length(max = …)"),
            takes("a string of any length", "strings of any length"),
        )),
        Shape::Sequence(_) if !has_max(metas) => Some((
            wrap("length(max = …)"),
            takes("a list of any length", "lists of any length"),
        )),
        Shape::Sequence(item) | Shape::Array(item) => missing(item, &inner_of(metas), depth + 1),
        Shape::Unboundable(one, many) => Some((String::new(), takes(one, many))),
        Shape::Text | Shape::Bounded => None,
    }
}

/// Whether `attrs` hold `#[agent_schema(unbounded)]`.
pub(crate) fn opted_out(attrs: &[Attribute]) -> bool {
    attrs
        .iter()
        .filter(|attr| attr.path().is_ident("agent_schema"))
        .any(|attr| {
            let mut found = false;
            let _ = attr.parse_nested_meta(|meta| {
                found |= meta.path.is_ident("unbounded");
                Ok(())
            });
            found
        })
}

/// Removes the `#[agent_schema(unbounded)]` markers of `item`'s fields:
/// they are this macro's, and nothing after it knows them.
pub(crate) fn strip_markers(item: &mut DeriveInput) {
    let strip =
        |attrs: &mut Vec<Attribute>| attrs.retain(|attr| !attr.path().is_ident("agent_schema"));
    match &mut item.data {
        Data::Struct(data) => data.fields.iter_mut().for_each(|f| strip(&mut f.attrs)),
        Data::Enum(data) => {
            for variant in &mut data.variants {
                strip(&mut variant.attrs);
                variant.fields.iter_mut().for_each(|f| strip(&mut f.attrs));
            }
        }
        Data::Union(_) => {}
    }
}

/// The two `Bounded` impls of `item` (nothing for an output-only type:
/// agents never send it): at depth `Zero` the fields' own verdicts, at
/// `Next<D>` those and the fields' types' verdicts at `D`. The nested
/// verdicts are where-clauses over `D`, so a field type that is no agent
/// schema type (reported where it is written) adds no error here.
pub(crate) fn impls(
    cx: &Ctxt,
    item: &DeriveInput,
    deserialize: bool,
    container_unbounded: bool,
) -> TokenStream {
    // A variant or field under `#[cfg]` may be compiled out (with the
    // types it names): it is left unchecked rather than checked wrongly.
    let fields: Vec<&syn::Field> = match &item.data {
        Data::Struct(data) => data.fields.iter().collect(),
        Data::Enum(data) => data
            .variants
            .iter()
            .filter(|variant| crate::cfg::cfgs(&variant.attrs).is_empty())
            .flat_map(|v| v.fields.iter())
            .collect(),
        Data::Union(_) => Vec::new(),
    };
    let ident = &item.ident;
    if !deserialize {
        for field in fields.iter().filter(|field| opted_out(&field.attrs)) {
            cx.error_spanned_by(
                field,
                "`#[agent_schema(unbounded)]` is for inputs: this type is `output` only, so agents never send it",
            );
        }
        // Never an input: its misuse as one is reported by `AgentInput`.
        let (_, ty_generics, where_clause) = item.generics.split_for_impl();
        let depth = Ident::new("__AgentSurfaceDepth", proc_macro2::Span::mixed_site());
        let mut deeper = item.generics.clone();
        deeper.params.push(syn::parse_quote!(#depth));
        let (deeper_generics, _, _) = deeper.split_for_impl();
        return quote! {
            #[automatically_derived]
            impl #deeper_generics ::agent_surface::macro_support::Bounded<#depth> for #ident #ty_generics #where_clause {
                const UNBOUNDED: ::core::option::Option<&'static str> = ::core::option::Option::None;
            }
        };
    }
    let mut own = Vec::new();
    let mut nested: Vec<&Type> = Vec::new();
    for field in fields {
        if container_unbounded
            || opted_out(&field.attrs)
            || skipped(&field.attrs)
            || !crate::cfg::cfgs(&field.attrs).is_empty()
        {
            continue;
        }
        let all: Vec<Meta> = ["schemars", "validate", "garde"]
            .into_iter()
            .flat_map(|namespace| metas(&field.attrs, namespace))
            .collect();
        if all
            .iter()
            .any(|meta| matches!(meta.key.as_str(), "with" | "schema_with"))
        {
            continue;
        }
        let refs: Vec<&Meta> = all.iter().collect();
        let name = field
            .ident
            .as_ref()
            .map_or_else(|| "a field".to_owned(), |ident| format!("`{ident}`"));
        if let Some((fix, what)) = missing(&field.ty, &refs, 0) {
            own.push((name, fix, what));
        }
        nested.push(&field.ty);
    }
    let verdict = match own.as_slice() {
        [] => quote!(::core::option::Option::None),
        [(name, fix, what), ..] => {
            let bound = if fix.is_empty() {
                "no schema keyword bounds it, so ".to_owned()
            } else {
                format!("bound it with `#[schemars({fix})]`, or ")
            };
            let others = if own.len() > 1 {
                let rest: Vec<&str> = own
                    .iter()
                    .skip(1)
                    .map(|(name, _, _)| name.as_str())
                    .collect();
                format!(" (and so do {})", rest.join(", "))
            } else {
                String::new()
            };
            let message = format!(
                "{name} of `{ident}` takes {what} from the agent{others}: {bound}mark the field \
                 `#[agent_schema(unbounded)]` to leave it to the registry's `Limits::max_input_bytes`"
            );
            quote!(::core::option::Option::Some(#message))
        }
    };
    let (impl_generics, ty_generics, where_clause) = item.generics.split_for_impl();
    let depth = Ident::new("__AgentSurfaceDepth", proc_macro2::Span::mixed_site());
    let mut deeper = item.generics.clone();
    deeper.params.push(syn::parse_quote!(#depth));
    let (deeper_generics, _, _) = deeper.split_for_impl();
    let mut predicates: Vec<TokenStream> = where_clause
        .map(|clause| clause.predicates.iter().map(|p| quote!(#p)).collect())
        .unwrap_or_default();
    predicates.extend(
        nested
            .iter()
            .map(|ty| quote!(#ty: ::agent_surface::macro_support::Bounded<#depth>)),
    );
    let answers = nested
        .iter()
        .map(|ty| quote!(<#ty as ::agent_surface::macro_support::Bounded<#depth>>::UNBOUNDED));
    quote! {
        #[automatically_derived]
        impl #impl_generics ::agent_surface::macro_support::Bounded<::agent_surface::macro_support::Zero>
            for #ident #ty_generics #where_clause
        {
            const UNBOUNDED: ::core::option::Option<&'static str> = #verdict;
        }
        #[automatically_derived]
        impl #deeper_generics ::agent_surface::macro_support::Bounded<::agent_surface::macro_support::Next<#depth>>
            for #ident #ty_generics
        where #(#predicates),*
        {
            const UNBOUNDED: ::core::option::Option<&'static str> =
                ::agent_surface::macro_support::first_unbounded(&[#verdict, #(#answers),*]);
        }
    }
}

/// A compile-time check, spanned at the input type, that a capability's
/// input (named through its marker's `Takes`) is bounded.
pub(crate) fn assert_input(marker: &TokenStream, span: proc_macro2::Span) -> TokenStream {
    quote::quote_spanned! {span=>
        const _: () = if let ::core::option::Option::Some(message) =
            <#marker as ::agent_surface::macro_support::Takes>::UNBOUNDED
        {
            ::core::panic!("{}", message)
        };
    }
}

/// A compile-time check, spanned at `ty`, that a procedure's input type is
/// bounded.
pub(crate) fn assert_type(ty: &TokenStream, span: proc_macro2::Span) -> TokenStream {
    quote::quote_spanned! {span=>
        const _: () = if let ::core::option::Option::Some(message) =
            <#ty as ::agent_surface::macro_support::Bounded<::agent_surface::macro_support::Deepest>>::UNBOUNDED
        {
            ::core::panic!("{}", message)
        };
    }
}

/// Whether serde never reads the field from the agent.
fn skipped(attrs: &[Attribute]) -> bool {
    metas(attrs, "serde")
        .iter()
        .any(|meta| matches!(meta.key.as_str(), "skip" | "skip_deserializing"))
}
