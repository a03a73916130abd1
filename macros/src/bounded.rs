//! Bounded input: every string, list, map or free-form JSON value an agent
//! can send into an input type carries a `length(max = …)` (for a list's
//! items, `inner(length(max = …))`), or the author declares the choice to
//! leave it to the registry's `Limits::max_input_bytes` with
//! `#[agent_schema(unbounded)]` on the field (its whole value) or on the
//! type.
//!
//! Unbounded agent input is a decision, not an accident: the check is a
//! compile error with both fixes, never a silent default. The macro reads
//! what it sees (`String`, `Vec<T>`, `Option<…>`, arrays, and the field's
//! attributes); every other field type answers through the `Bounded`
//! trait, so a string reached through a generic parameter, a tuple, an
//! alias or another schema type is found too, and the field that holds it
//! is named.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::{Attribute, Data, DeriveInput, GenericArgument, Ident, PathArguments, Type};

use crate::ctxt::Ctxt;
use crate::wire_attrs::{Form, Meta, metas, metas_with_cfg_attr};

/// What the macro sees of a field type.
enum Shape<'a> {
    /// A string: bounded by `length(max)`.
    Text,
    /// A list of `T`: bounded by `length(max)`, its items by `inner(…)`.
    Sequence(&'a Type),
    /// A fixed-size array of `T`: its items by `inner(…)`.
    Array(&'a Type),
    /// A map with `serde_json::Value` values: no schema keyword bounds it.
    Map,
    /// A map with other values: outside the subset, reported elsewhere.
    OtherMap,
    /// Anything else: its `Bounded` answer decides.
    Unseen,
}

/// The single type argument of the last segment of `ty`'s path.
fn arguments(ty: &Type) -> Vec<&Type> {
    let Type::Path(path) = ty else {
        return Vec::new();
    };
    let Some(segment) = path.path.segments.last() else {
        return Vec::new();
    };
    let PathArguments::AngleBracketed(args) = &segment.arguments else {
        return Vec::new();
    };
    args.args
        .iter()
        .filter_map(|arg| match arg {
            GenericArgument::Type(ty) => Some(ty),
            _ => None,
        })
        .collect()
}

/// Whether `ty` is written `Value` (any, for a map's values: maps of
/// other types are outside the subset anyway).
fn is_json_value(ty: &Type) -> bool {
    matches!(ty, Type::Path(path) if path.path.segments.last().is_some_and(|s| s.ident == "Value"))
}

/// Whether `ty` is written `krate::name` (a bare `Value` may be the
/// application's own type: its `Bounded` answer decides).
fn is_qualified(ty: &Type, krate: &str, name: &str) -> bool {
    let Type::Path(path) = ty else { return false };
    let names: Vec<String> = path
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    names.len() >= 2 && names.ends_with(&[krate.to_owned(), name.to_owned()])
}

fn is_qualified_json_value(ty: &Type) -> bool {
    is_qualified(ty, "serde_json", "Value")
}

/// The shape of `ty`, seen through `Option`, `Box`, `Arc`, `Rc` and `Cow`
/// (a bound on the field applies to what they wrap).
fn shape(ty: &Type) -> Shape<'_> {
    match ty {
        Type::Paren(inner) => shape(&inner.elem),
        Type::Group(inner) => shape(&inner.elem),
        Type::Array(array) => Shape::Array(&array.elem),
        Type::Slice(slice) => Shape::Sequence(&slice.elem),
        Type::Path(path) if path.qself.is_none() => {
            let Some(last) = path.path.segments.last() else {
                return Shape::Unseen;
            };
            let args = arguments(ty);
            match (last.ident.to_string().as_str(), args.as_slice()) {
                ("String" | "str", []) => Shape::Text,
                ("Option" | "Box" | "Arc" | "Rc" | "Cow", [inner]) => shape(inner),
                (
                    "Vec" | "VecDeque" | "HashSet" | "BTreeSet" | "LinkedList" | "BinaryHeap",
                    [item, ..],
                ) => Shape::Sequence(item),
                ("HashMap" | "BTreeMap" | "Map", [_, value, ..]) if is_json_value(value) => {
                    Shape::Map
                }
                ("HashMap" | "BTreeMap", [_, _, ..]) => Shape::OtherMap,
                ("Map", []) if is_qualified(ty, "serde_json", "Map") => Shape::Map,
                _ => Shape::Unseen,
            }
        }
        _ => Shape::Unseen,
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

/// What the macro finds for one field type: the first thing it sees
/// unbounded (the attribute that fixes it, and what it is), and the types
/// it cannot see, whose `Bounded` answers decide.
struct Finding<'a> {
    missing: Option<(String, String)>,
    /// Each with whether its field bounds its length.
    unseen: Vec<(&'a Type, bool)>,
}

fn analyze<'a>(ty: &'a Type, metas: &[&Meta], depth: usize, out: &mut Finding<'a>) {
    let wrap = |text: &str| (0..depth).fold(text.to_owned(), |text, _| format!("inner({text})"));
    let takes = |one: &str, many: &str| {
        if depth == 0 {
            one.to_owned()
        } else {
            format!("a list whose items are {many}")
        }
    };
    let mut miss = |fix: String, what: String| {
        if out.missing.is_none() {
            out.missing = Some((fix, what));
        }
    };
    match shape(ty) {
        Shape::Text if !has_max(metas) => miss(
            wrap("length(max = …)"),
            takes("a string of any length", "strings of any length"),
        ),
        Shape::Text | Shape::OtherMap => {}
        Shape::Sequence(item) => {
            if !has_max(metas) {
                miss(
                    wrap("length(max = …)"),
                    takes("a list of any length", "lists of any length"),
                );
            }
            analyze(item, &inner_of(metas), depth + 1, out);
        }
        Shape::Array(item) => analyze(item, &inner_of(metas), depth + 1, out),
        Shape::Map => miss(String::new(), takes("a map", "maps")),
        Shape::Unseen if is_qualified_json_value(ty) => {
            miss(String::new(), takes("free-form JSON", "free-form JSON"))
        }
        // Its own answer decides; a `length(max)` written on it (a `Url`,
        // an alias of `String`) counts where a length bounds all of it.
        Shape::Unseen => out.unseen.push((ty, has_max(metas))),
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
                if meta.input.peek(syn::Token![=]) {
                    let _ = meta.value()?.parse::<syn::Expr>()?;
                }
                Ok(())
            });
            found
        })
}

/// Checks the `#[agent_schema(…)]` markers on fields and variants: only a
/// field takes one, and it says `unbounded`, once.
fn check_markers(cx: &Ctxt, item: &DeriveInput, deserialize: bool) {
    let check_field = |attrs: &[Attribute]| {
        for attr in attrs
            .iter()
            .filter(|attr| attr.path().is_ident("agent_schema"))
        {
            let mut seen = 0;
            let result = attr.parse_nested_meta(|meta| {
                if !meta.path.is_ident("unbounded") {
                    let key = meta
                        .path
                        .get_ident()
                        .map_or_else(String::new, ToString::to_string);
                    let guess = crate::attr::did_you_mean(&key, &["unbounded"]);
                    return Err(meta.error(if guess.is_empty() {
                        format!("`{key}` goes on the type's `#[agent_schema(…)]`; a field's takes one key, `unbounded`")
                    } else {
                        format!("unknown key `{key}` in a field's `#[agent_schema(…)]`; {guess}it takes one key, `unbounded`")
                    }));
                }
                if !meta.input.is_empty() && !meta.input.peek(syn::Token![,]) {
                    return Err(meta.error("`unbounded` takes no value: write `#[agent_schema(unbounded)]`"));
                }
                seen += 1;
                if seen > 1 {
                    return Err(meta.error("`unbounded` is given twice; keep one"));
                }
                Ok(())
            });
            match result {
                Err(error) => cx.syn_error(error),
                Ok(()) if seen == 0 => cx.error_spanned_by(attr, "write `#[agent_schema(unbounded)]`, or remove the attribute"),
                Ok(()) if !deserialize => cx.error_spanned_by(
                    attr,
                    "`#[agent_schema(unbounded)]` is for inputs: this type is `output` only, so agents never send it",
                ),
                Ok(()) => {}
            }
        }
    };
    match &item.data {
        Data::Struct(data) => data.fields.iter().for_each(|f| check_field(&f.attrs)),
        Data::Enum(data) => {
            for variant in &data.variants {
                for attr in variant
                    .attrs
                    .iter()
                    .filter(|a| a.path().is_ident("agent_schema"))
                {
                    cx.error_spanned_by(
                        attr,
                        "`#[agent_schema(unbounded)]` goes on a field (or on the type), not on a variant",
                    );
                }
                variant.fields.iter().for_each(|f| check_field(&f.attrs));
            }
        }
        Data::Union(_) => {}
    }
}

/// Removes the `#[agent_schema(unbounded)]` markers of `item`'s fields:
/// they are this macro's, and nothing after it knows them.
pub(crate) fn strip_markers(item: &mut DeriveInput) {
    crate::wire_attrs::inner_attrs_mut(item, |attrs| {
        attrs.retain(|attr| !attr.path().is_ident("agent_schema"));
    });
}

/// One field an agent can fill, with the `#[cfg]`s it sits under and how
/// the message names it.
struct Slot<'a> {
    field: &'a syn::Field,
    cfgs: Vec<&'a Attribute>,
    name: String,
}

fn slots<'a>(item: &'a DeriveInput) -> Vec<Slot<'a>> {
    let name_of =
        |field: &syn::Field, index: usize, variant: Option<&Ident>| match (&field.ident, variant) {
            (Some(ident), _) => format!("`{ident}`"),
            (None, Some(variant)) => format!("field {index} of variant `{variant}`"),
            (None, None) => format!("field {index}"),
        };
    let mut out = Vec::new();
    match &item.data {
        Data::Struct(data) => {
            for (index, field) in data.fields.iter().enumerate() {
                out.push(Slot {
                    field,
                    cfgs: crate::cfg::cfgs(&field.attrs),
                    name: name_of(field, index, None),
                });
            }
        }
        Data::Enum(data) => {
            for variant in &data.variants {
                if never_read(&variant.attrs) {
                    continue;
                }
                let outer = crate::cfg::cfgs(&variant.attrs);
                for (index, field) in variant.fields.iter().enumerate() {
                    let mut cfgs = outer.clone();
                    cfgs.extend(crate::cfg::cfgs(&field.attrs));
                    out.push(Slot {
                        field,
                        cfgs,
                        name: name_of(field, index, Some(&variant.ident)),
                    });
                }
            }
        }
        Data::Union(_) => {}
    }
    out
}

/// Whether serde never reads it from the agent.
fn never_read(attrs: &[Attribute]) -> bool {
    ["serde", "schemars"]
        .into_iter()
        .flat_map(|namespace| metas(attrs, namespace))
        .any(|meta| matches!(meta.key.as_str(), "skip" | "skip_deserializing"))
}

/// The `Bounded` impls of `item`: at depth `Zero` the fields' own verdicts,
/// at `Next<D>` those and the unseen field types' verdicts at `D`. The
/// nested verdicts are where-clauses over `D`, so a field type that is no
/// agent schema type (reported where it is written) adds no error here.
/// An output-only type answers `None`: agents never send it.
pub(crate) fn impls(
    cx: &Ctxt,
    item: &DeriveInput,
    deserialize: bool,
    container_unbounded: bool,
    converted: Option<&Type>,
) -> TokenStream {
    check_markers(cx, item, deserialize);
    let ident = &item.ident;
    let (impl_generics, ty_generics, where_clause) = item.generics.split_for_impl();
    let depth = Ident::new("__AgentSurfaceDepth", Span::mixed_site());
    let mut deeper = item.generics.clone();
    deeper.params.push(syn::parse_quote!(#depth));
    let (deeper_generics, _, _) = deeper.split_for_impl();
    if !deserialize && container_unbounded {
        cx.error_spanned_by(
            ident,
            "`#[agent_schema(unbounded)]` is for inputs: this type is `output` only, so agents never send it",
        );
    }
    if !deserialize || container_unbounded {
        return quote! {
            #[automatically_derived]
            impl #deeper_generics ::agent_surface::macro_support::Bounded<#depth> for #ident #ty_generics #where_clause {
                const UNBOUNDED: ::core::option::Option<&'static str> = ::core::option::Option::None;
            }
        };
    }
    // Read `from`/`try_from` another type: on the wire it is that type, so
    // it is bounded as that type is: a `String` source is an unbounded
    // string wherever the type is a field (the field that holds it is
    // named); the fix is a bounded source type.
    if let Some(source) = converted {
        let bounded = quote!(<#source as ::agent_surface::macro_support::Bounded<#depth>>);
        let mut predicates: Vec<TokenStream> = where_clause
            .map(|clause| clause.predicates.iter().map(|p| quote!(#p)).collect())
            .unwrap_or_default();
        predicates.push(quote!(#source: ::agent_surface::macro_support::Bounded<#depth>));
        return quote! {
            #[automatically_derived]
            impl #deeper_generics ::agent_surface::macro_support::Bounded<#depth> for #ident #ty_generics
            where #(#predicates),*
            {
                // Unseen: named at the field that holds it (taken directly
                // as an input, the source type's own rule applies).
                const UNBOUNDED: ::core::option::Option<&'static str> =
                    if #bounded::UNSEEN { ::core::option::Option::None } else { #bounded::UNBOUNDED };
                const UNSEEN: bool = #bounded::UNSEEN;
                // Its schema is a reference to the source's: a length on
                // the field holding it does not reach the string.
                const LENGTH_BOUNDS: bool = false;
            }
        };
    }
    let type_name = ident.to_string();
    // Per field: its own verdict (a message, or none), and its unseen
    // types, each answered through `Bounded` one level down.
    let mut own: Vec<(TokenStream, bool, String, String)> = Vec::new();
    let mut nested: Vec<(Vec<&Attribute>, &Type, bool, String)> = Vec::new();
    let slots = slots(item);
    // `#[schemars(with = "Type")]`: the schema is that type's, so it is
    // what is checked.
    let with_types: Vec<Option<Type>> = slots
        .iter()
        .map(|slot| {
            ["schemars"]
                .into_iter()
                .flat_map(|namespace| metas(&slot.field.attrs, namespace))
                .find(|meta| meta.key == "with")
                .and_then(|meta| meta.text)
                .and_then(|text| text.parse::<Type>().ok())
        })
        .collect();
    for (slot, with) in slots.iter().zip(&with_types) {
        let attrs = &slot.field.attrs;
        let all: Vec<Meta> = ["schemars", "validate", "garde"]
            .into_iter()
            .flat_map(|namespace| metas_with_cfg_attr(attrs, namespace))
            .collect();
        let ty: &Type = with.as_ref().unwrap_or(&slot.field.ty);
        if opted_out(attrs)
            || never_read(attrs)
            || all.iter().any(|meta| meta.key == "schema_with")
            || (all.iter().any(|meta| meta.key == "with") && with.is_none())
        {
            continue;
        }
        let refs: Vec<&Meta> = all.iter().collect();
        let mut finding = Finding {
            missing: None,
            unseen: Vec::new(),
        };
        analyze(ty, &refs, 0, &mut finding);
        // Bounded only by attributes under `cfg_attr`: where none of their
        // predicates holds, the schema has no bound, and neither may the
        // check (the field is named under the negated predicates).
        let mut gate = TokenStream::new();
        if finding.missing.is_none() {
            let predicates = cfg_attr_predicates(attrs, &["schemars", "validate", "garde"]);
            if !predicates.is_empty() {
                let plain: Vec<Meta> = ["schemars", "validate", "garde"]
                    .into_iter()
                    .flat_map(|namespace| metas(attrs, namespace))
                    .collect();
                let plain_refs: Vec<&Meta> = plain.iter().collect();
                let mut without = Finding {
                    missing: None,
                    unseen: Vec::new(),
                };
                analyze(ty, &plain_refs, 0, &mut without);
                if without.missing.is_some() {
                    finding.missing = without.missing;
                    gate = quote!(#[cfg(not(any(#(#predicates),*)))]);
                }
            }
        }
        if let Some((fix, what)) = finding.missing {
            let bound = if fix.is_empty() {
                "no schema keyword bounds it, so ".to_owned()
            } else {
                format!("bound it with `#[schemars({fix})]`, or ")
            };
            let message = format!(
                "{} of `{type_name}` takes {what} from the agent: {bound}mark the field \
                 `#[agent_schema(unbounded)]` to leave it to the registry's `Limits::max_input_bytes`",
                slot.name
            );
            let conditional = !slot.cfgs.is_empty() || !gate.is_empty();
            let cfgs = &slot.cfgs;
            own.push((
                quote!(#(#cfgs)* #gate),
                conditional,
                message,
                slot.name.clone(),
            ));
        }
        for (unseen, length) in finding.unseen {
            let message = if length {
                format!(
                    "{} of `{type_name}`: its `length(max = …)` bounds how many, not what each holds (free-form \
                     JSON, a map, or a list or tuple of strings reached through a generic parameter or an alias, \
                     or a type read `from` one): bound the strings where their type is declared, or mark the \
                     field `#[agent_schema(unbounded)]`",
                    slot.name
                )
            } else {
                format!(
                    "{} of `{type_name}` holds a string, list, map or free-form JSON with no bound (through a generic \
                     parameter, a tuple, an alias or a type read `from` one): bound the field (`#[schemars(length(max = …))]`, \
                     `inner(length(max = …))` for a list's items; a type read `from` a string: read it from a bounded \
                     `#[agent_schema]` type instead) or mark it `#[agent_schema(unbounded)]`",
                    slot.name
                )
            };
            nested.push((slot.cfgs.clone(), unseen, length, message));
        }
    }
    // Every field found so far is named in the first message, so one
    // build lists them all.
    let always: Vec<&str> = own
        .iter()
        .filter(|(_, conditional, _, _)| !conditional)
        .map(|(_, _, _, name)| name.as_str())
        .collect();
    let own_lets = own.iter().map(|(cfgs, _, message, name)| {
        let others: Vec<&str> = always
            .iter()
            .copied()
            .filter(|other| other != name)
            .collect();
        let message = if others.is_empty() {
            message.clone()
        } else {
            format!("{message} (no bound either: {})", others.join(", "))
        };
        quote! {
            #cfgs
            let found = ::agent_surface::macro_support::first_unbounded(
                &[found, ::core::option::Option::Some(#message)],
            );
        }
    });
    let own_verdict = quote! {{
        let found: ::core::option::Option<&'static str> = ::core::option::Option::None;
        #(#own_lets)*
        found
    }};
    // Nested types under `#[cfg]` may not exist: their bounds cannot be
    // where-clauses, so only their own verdicts above are checked.
    let uncfg: Vec<&(Vec<&Attribute>, &Type, bool, String)> = nested
        .iter()
        .filter(|(cfgs, _, _, _)| cfgs.is_empty())
        .collect();
    let mut predicates: Vec<TokenStream> = where_clause
        .map(|clause| clause.predicates.iter().map(|p| quote!(#p)).collect())
        .unwrap_or_default();
    predicates.extend(
        uncfg
            .iter()
            .map(|(_, ty, _, _)| quote!(#ty: ::agent_surface::macro_support::Bounded<#depth>)),
    );
    let answers = uncfg.iter().map(|(_, ty, length, message)| {
        let bounded = quote!(<#ty as ::agent_surface::macro_support::Bounded<#depth>>);
        if *length {
            quote! {
                ::agent_surface::macro_support::field_answer_with_length(
                    #bounded::UNSEEN, #bounded::LENGTH_BOUNDS, #message, #bounded::UNBOUNDED,
                )
            }
        } else {
            quote! {
                ::agent_surface::macro_support::field_answer(#bounded::UNSEEN, #message, #bounded::UNBOUNDED)
            }
        }
    });
    quote! {
        #[automatically_derived]
        impl #impl_generics ::agent_surface::macro_support::Bounded<::agent_surface::macro_support::Zero>
            for #ident #ty_generics #where_clause
        {
            const UNBOUNDED: ::core::option::Option<&'static str> = #own_verdict;
        }
        #[automatically_derived]
        impl #deeper_generics ::agent_surface::macro_support::Bounded<::agent_surface::macro_support::Next<#depth>>
            for #ident #ty_generics
        where #(#predicates),*
        {
            // The own fields' verdict is the depth-zero answer's, evaluated
            // once for every depth (not written out again here).
            const UNBOUNDED: ::core::option::Option<&'static str> =
                ::agent_surface::macro_support::first_unbounded(&[
                    <#ident #ty_generics as ::agent_surface::macro_support::Bounded<
                        ::agent_surface::macro_support::Zero,
                    >>::UNBOUNDED,
                    #(#answers),*
                ]);
        }
    }
}

/// A compile-time check, spanned at the input type, that a capability's
/// input (named through its marker's `Takes`) is bounded.
pub(crate) fn assert_input(marker: &TokenStream, span: Span) -> TokenStream {
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
pub(crate) fn assert_type(ty: &TokenStream, span: Span) -> TokenStream {
    quote::quote_spanned! {span=>
        const _: () = if let ::core::option::Option::Some(message) =
            <#ty as ::agent_surface::macro_support::Bounded<::agent_surface::macro_support::Deepest>>::UNBOUNDED
        {
            ::core::panic!("{}", message)
        };
    }
}

/// The predicates of the `#[cfg_attr(pred, …)]` attributes in `attrs` that
/// carry an attribute of one of `namespaces`.
fn cfg_attr_predicates(attrs: &[Attribute], namespaces: &[&str]) -> Vec<TokenStream> {
    attrs
        .iter()
        .filter(|attr| attr.path().is_ident("cfg_attr"))
        .filter_map(|attr| {
            let list = attr.meta.require_list().ok()?;
            let mut tokens = list.tokens.clone().into_iter();
            let predicate: TokenStream = tokens
                .by_ref()
                .take_while(
                    |tree| !matches!(tree, proc_macro2::TokenTree::Punct(p) if p.as_char() == ','),
                )
                .collect();
            let carries = tokens.any(|tree| {
                matches!(&tree, proc_macro2::TokenTree::Ident(ident)
                    if namespaces.iter().any(|namespace| ident == namespace))
            });
            (carries && !predicate.is_empty()).then_some(predicate)
        })
        .collect()
}
