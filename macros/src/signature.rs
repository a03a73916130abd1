//! Handler signatures, read into the model of a capability: its parameters
//! classified as the input or the context, and its return type. Reading
//! one reports every mismatch with the expected shape (`&self`, at most one
//! input taken by value, at most one context borrowed, recognised by place
//! and checked by trait, and an owned, `Send` return type) at its token,
//! with the signature that is expected.

use agent_surface_rules::Kind;
use proc_macro2::TokenStream;
use syn::{FnArg, ImplItemFn, Pat, ReturnType, Type};

use crate::ctxt::Ctxt;

/// How a handler parameter is used.
pub(crate) enum Param<'a> {
    /// The typed input (by value).
    Input(&'a Type),
    /// The context (`&ActionContext` or `&ReadContext`).
    Context(&'a Type),
}

/// Checks the handler signature and classifies its parameters.
pub(crate) fn signature<'a>(
    cx: &Ctxt,
    kind: Kind,
    method: &'a ImplItemFn,
) -> (Vec<Param<'a>>, Option<&'a Type>) {
    let sig = &method.sig;
    if let Some(unsafety) = &sig.unsafety {
        cx.error_spanned_by(unsafety, "handlers cannot be `unsafe fn`");
    }
    if let Some(abi) = &sig.abi {
        cx.error_spanned_by(abi, "handlers cannot declare an ABI");
    }
    // Lifetime parameters alone change no schema; a borrowed input or
    // return type is reported where it is written.
    let only_lifetimes = sig
        .generics
        .params
        .iter()
        .all(|param| matches!(param, syn::GenericParam::Lifetime(_)));
    // A `where` clause without generic parameters (`where Self: Sized`)
    // only restates what holds: it changes no schema.
    if !only_lifetimes {
        cx.error_spanned_by(
            &sig.generics,
            "handlers cannot be generic: the input and output types define the capability's schemas",
        );
    }
    if let Some(variadic) = &sig.variadic {
        cx.error_spanned_by(variadic, "handlers cannot be variadic");
    }
    let mut inputs = sig.inputs.iter();
    match inputs.next() {
        Some(FnArg::Receiver(receiver)) => {
            if let Some((_, Some(lifetime))) = &receiver.reference
                && lifetime.ident == "static"
            {
                cx.error_spanned_by(
                    lifetime,
                    "handlers borrow the component for the call only: write `&self` (the registry \
                     holds it in an `Arc`, which lends no `'static` borrow)",
                );
            } else if crate::types::is_shared_self(receiver) {
                // `&self`, or `self: &Self`.
            } else if receiver.colon_token.is_some() {
                cx.error_spanned_by(
                    receiver,
                    "handlers take `&self`; the registry holds the component in an `Arc` and calls it by reference",
                );
            } else if receiver.mutability.is_some() && receiver.reference.is_some() {
                cx.error_spanned_by(
                    receiver,
                    "handlers take `&self`, not `&mut self`: a mounted component is shared; keep mutable state behind a Mutex, RwLock or atomics",
                );
            } else if receiver.reference.is_none() {
                cx.error_spanned_by(
                    receiver,
                    "handlers take `&self`, not `self`: a mounted component lives on across calls",
                );
            }
        }
        Some(FnArg::Typed(first)) => cx.error_spanned_by(
            first,
            "handlers are methods: add `&self` as the first parameter",
        ),
        None => cx.error_spanned_by(
            &sig.ident,
            "handlers are methods: add `&self` as the first parameter",
        ),
    }
    let mut params = Vec::new();
    let mut seen_input: Option<&Type> = None;
    let mut seen_context = false;
    // Beside a parameter named as a context, another borrowed one is a
    // misplaced input, not a second context.
    let names_a_context = sig
        .inputs
        .iter()
        .any(|arg| matches!(arg, FnArg::Typed(typed) if crate::types::is_context_ref(&typed.ty)));
    for arg in inputs {
        let FnArg::Typed(typed) = arg else { continue };
        if !matches!(
            &*typed.pat,
            Pat::Ident(_) | Pat::Wild(_) | Pat::Struct(_) | Pat::TupleStruct(_)
        ) {
            cx.error_spanned_by(&typed.pat, "use a plain parameter name here");
        }
        let ty = &*typed.ty;
        if crate::types::is_handler_context(ty)
            && (!names_a_context || crate::types::is_context_ref(ty))
        {
            match ty {
                Type::Reference(reference) if reference.mutability.is_some() => cx.error_spanned_by(
                    ty,
                    "the context parameter is a shared reference: `&ActionContext` or `&ReadContext`",
                ),
                Type::Reference(reference)
                    if reference
                        .lifetime
                        .as_ref()
                        .is_some_and(|lifetime| lifetime.ident == "static") =>
                {
                    if let Some(lifetime) = &reference.lifetime {
                        cx.error_spanned_by(
                            lifetime,
                            "the context is lent for the call only: write `&ActionContext` (or \
                             `&ReadContext`) without `'static`",
                        );
                    }
                }
                _ if seen_context => {
                    cx.error_spanned_by(ty, "a handler takes at most one context parameter");
                }
                _ => {
                    seen_context = true;
                    params.push(Param::Context(ty));
                }
            }
            continue;
        }
        match ty {
            Type::Reference(reference) if kind == Kind::Observation => cx.error_spanned_by(
                reference,
                "observations take no input: they read current state; make this an `#[action]`, or read the value from `&self`",
            ),
            Type::Reference(reference) => cx.error_spanned_by(
                reference.and_token,
                format!(
                    "an action takes its input by value: write `{}: {}` without `&`; only the context is borrowed (`&ActionContext` or `&ReadContext`, or an alias of one)",
                    param_name(&typed.pat),
                    crate::types::type_text(&reference.elem)
                ),
            ),
            Type::ImplTrait(_) => cx.error_spanned_by(
                ty,
                "`impl Trait` inputs have no schema; use a struct annotated with `#[agent_schema]`",
            ),
            ty if crate::types::is_context_name(ty) => cx.error_spanned_by(
                ty,
                format!(
                    "the context is borrowed: write `{}: &{}`",
                    param_name(&typed.pat),
                    crate::types::type_text(ty)
                ),
            ),
            ty => {
                if kind == Kind::Observation {
                    cx.error_spanned_by(
                        ty,
                        "observations take no input: they read current state; make this an `#[action]`, or read the value from `&self`",
                    );
                } else if seen_input.is_some() {
                    cx.error_spanned_by(
                        ty,
                        "an action takes at most one input; gather the fields into one struct annotated with `#[agent_schema]`",
                    );
                } else if let Some(borrowed) = borrowed_part(ty) {
                    cx.error_spanned_by(
                        borrowed,
                        "an action's input is deserialized from the agent's JSON and owned by the handler, so it cannot borrow: take a type without lifetime parameters (`String` instead of `&str` or `Cow<str>`)",
                    );
                } else {
                    seen_input = Some(ty);
                    params.push(Param::Input(ty));
                }
            }
        }
    }
    let output = match &sig.output {
        ReturnType::Default => None,
        ReturnType::Type(_, ty) => {
            if let Type::ImplTrait(_) = &**ty {
                cx.error_spanned_by(
                    ty,
                    "return a concrete type; for asynchronous handlers write `async fn`",
                );
            } else if let Some(output) = boxed_future_output(ty) {
                cx.error_spanned_by(
                    ty,
                    format!(
                        "a handler returning a future is written `async fn` returning its output: \
                         `async fn {}(…) -> {}` (a `Pin<Box<dyn Future>>` return would be read as the result itself)",
                        sig.ident,
                        output.map_or_else(
                            || "…".to_owned(),
                            |output| quote::ToTokens::to_token_stream(output).to_string()
                        )
                    ),
                );
            } else if let Some(borrowed) = borrowed_part(ty) {
                cx.error_spanned_by(
                    borrowed,
                    "return an owned value (`String` for `&str` or `Cow<str>`, `Vec<T>` for `&[T]`, `T` for `&T`): the result is serialized after the handler returns, so it cannot borrow",
                );
            } else if let Some(error) = unsendable_boxed_error(ty) {
                cx.error_spanned_by(
                    error,
                    "this error is not `Send + Sync`: a handler's error crosses threads on its way to the caller; write `Box<dyn std::error::Error + Send + Sync>`",
                );
            }
            Some(&**ty)
        }
    };
    (params, output)
}

/// A future written by hand as the return type: `Some(Some(T))` for a
/// `Pin<Box<dyn Future<Output = T> …>>` (or a `Box<dyn Future …>`), and for
/// a type whose name ends in `Fut` or `Future` (`BoxFuture<'_, T>`,
/// `LocalBoxFuture`, an alias such as `BoxFut<'a, T>`), with its first type
/// argument taken as the output (`Some(None)` without one).
fn boxed_future_output(ty: &Type) -> Option<Option<&Type>> {
    let Type::Path(path) = ty else { return None };
    let last = path.path.segments.last()?;
    fn inner(segment: &syn::PathSegment) -> Vec<&Type> {
        match &segment.arguments {
            syn::PathArguments::AngleBracketed(args) => args
                .args
                .iter()
                .filter_map(|arg| match arg {
                    syn::GenericArgument::Type(ty) => Some(ty),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }
    let name = last.ident.to_string();
    if name.ends_with("Fut") || name.ends_with("Future") {
        return Some(inner(last).first().copied());
    }
    let boxed = if last.ident == "Pin" {
        match inner(last).first() {
            Some(Type::Path(boxed)) => boxed.path.segments.last()?,
            _ => return None,
        }
    } else {
        last
    };
    if boxed.ident != "Box" {
        return None;
    }
    let Some(Type::TraitObject(object)) = inner(boxed).first().copied() else {
        return None;
    };
    let output = object.bounds.iter().find_map(|bound| {
        let syn::TypeParamBound::Trait(bound) = bound else {
            return None;
        };
        let future = bound.path.segments.last().filter(|s| s.ident == "Future")?;
        let syn::PathArguments::AngleBracketed(args) = &future.arguments else {
            return None;
        };
        args.args.iter().find_map(|arg| match arg {
            syn::GenericArgument::AssocType(assoc) if assoc.ident == "Output" => Some(&assoc.ty),
            _ => None,
        })
    });
    output.map(Some)
}

/// The error type of `Result<_, Box<dyn Trait>>` when the trait object
/// lacks `Send` or `Sync`.
fn unsendable_boxed_error(ty: &Type) -> Option<&Type> {
    let Type::Path(path) = ty else { return None };
    let result = path.path.segments.last().filter(|s| s.ident == "Result")?;
    let syn::PathArguments::AngleBracketed(args) = &result.arguments else {
        return None;
    };
    let error = args
        .args
        .iter()
        .filter_map(|arg| match arg {
            syn::GenericArgument::Type(ty) => Some(ty),
            _ => None,
        })
        .nth(1)?;
    let Type::Path(boxed) = error else {
        return None;
    };
    let segment = boxed.path.segments.last().filter(|s| s.ident == "Box")?;
    let syn::PathArguments::AngleBracketed(inner) = &segment.arguments else {
        return None;
    };
    let Some(syn::GenericArgument::Type(Type::TraitObject(object))) = inner.args.first() else {
        return None;
    };
    let has = |name: &str| {
        object.bounds.iter().any(|bound| match bound {
            syn::TypeParamBound::Trait(t) => {
                t.path.segments.last().is_some_and(|s| s.ident == name)
            }
            _ => false,
        })
    };
    (!(has("Send") && has("Sync"))).then_some(error)
}

/// The first borrowed part of a return type: a reference, or a type with
/// a lifetime argument, that is not `'static` (`&str`, `Cow<'_, str>`, or
/// `Cow<str>` with its lifetime elided).
fn borrowed_part(ty: &Type) -> Option<TokenStream> {
    struct Finder {
        found: Option<TokenStream>,
    }
    fn is_static(lifetime: &syn::Lifetime) -> bool {
        lifetime.ident == "static"
    }
    impl<'a> syn::visit::Visit<'a> for Finder {
        fn visit_type_reference(&mut self, reference: &'a syn::TypeReference) {
            if !reference.lifetime.as_ref().is_some_and(is_static) && self.found.is_none() {
                self.found = Some(quote::ToTokens::to_token_stream(reference));
            }
            syn::visit::visit_type_reference(self, reference);
        }
        fn visit_type_path(&mut self, path: &'a syn::TypePath) {
            let borrows = path.path.segments.iter().any(|segment| {
                let lifetimes: Vec<&syn::Lifetime> = match &segment.arguments {
                    syn::PathArguments::AngleBracketed(args) => args
                        .args
                        .iter()
                        .filter_map(|arg| match arg {
                            syn::GenericArgument::Lifetime(lifetime) => Some(lifetime),
                            _ => None,
                        })
                        .collect(),
                    _ => Vec::new(),
                };
                lifetimes.iter().any(|lifetime| !is_static(lifetime))
                    || (segment.ident == "Cow" && lifetimes.is_empty())
            });
            if borrows && self.found.is_none() {
                self.found = Some(quote::ToTokens::to_token_stream(path));
            }
            syn::visit::visit_type_path(self, path);
        }
    }
    let mut finder = Finder { found: None };
    syn::visit::Visit::visit_type(&mut finder, ty);
    finder.found
}

/// The name of a parameter, for messages (`input` when it is a pattern).
fn param_name(pat: &Pat) -> String {
    match pat {
        Pat::Ident(ident) => ident.ident.to_string(),
        _ => "input".to_owned(),
    }
}
