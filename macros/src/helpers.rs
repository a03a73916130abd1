//! The signatures of the helper methods an attribute names: `when` and
//! `precondition`. Each mismatch is reported at the part of the signature
//! that is wrong, with the signature that is expected.

use syn::{FnArg, ImplItemFn, ReturnType, Type};

use crate::ctxt::Ctxt;
use crate::types::{is_context_ref, is_handler_context, is_shared_self, type_text};

/// Whether `ty` is written `bool` (or `core::primitive::bool`, as
/// generated code spells it).
fn is_bool(ty: &Type) -> bool {
    let Type::Path(path) = ty else { return false };
    let segments = &path.path.segments;
    let primitive = |crate_name: &str| {
        segments.len() == 3
            && segments
                .iter()
                .zip([crate_name, "primitive", "bool"])
                .all(|(segment, name)| segment.ident == name && segment.arguments.is_empty())
    };
    path.qself.is_none() && (path.path.is_ident("bool") || primitive("core") || primitive("std"))
}

/// Whether `ty` may be `bool`: `bool` itself, or a plain path that is no
/// other type the macro knows (an alias of `bool` is one; the compiler
/// checks what it stands for where the helper is called).
fn may_be_bool(ty: &Type) -> bool {
    const NOT_BOOL: &[&str] = &[
        "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize",
        "f32", "f64", "char", "str", "String", "Option", "Result", "Vec", "Box",
    ];
    if is_bool(ty) {
        return true;
    }
    let Type::Path(path) = ty else { return false };
    path.qself.is_none()
        && path
            .path
            .segments
            .iter()
            .all(|segment| segment.arguments.is_empty())
        && path
            .path
            .segments
            .last()
            .is_some_and(|last| !NOT_BOOL.iter().any(|name| last.ident == name))
}

/// A helper the macro calls: neither generic (nothing names its
/// parameters) nor `unsafe` (the macro's call would need a block it must
/// not write).
fn check_plain(cx: &Ctxt, sig: &syn::Signature, rule: &str) {
    let name = &sig.ident;
    if !sig.generics.params.is_empty() {
        cx.error_spanned_by(
            &sig.generics,
            format!("{rule}: `{name}` takes no generic parameters; remove them"),
        );
    }
    if let Some(unsafety) = &sig.unsafety {
        cx.error_spanned_by(
            unsafety,
            format!("{rule}: `{name}` is `unsafe`; the macro calls it from safe code"),
        );
    }
}

/// `when = method`: a synchronous `fn(&self) -> bool`.
pub(crate) fn check_when(cx: &Ctxt, method: &ImplItemFn) {
    let sig = &method.sig;
    let name = &sig.ident;
    let rule = "`when` must name a synchronous `fn(&self) -> bool` in this impl block";
    check_self_only(
        cx,
        sig,
        rule,
        "availability is decided synchronously, so read the state from `&self`",
    );
    match &sig.output {
        ReturnType::Type(_, ty) if may_be_bool(ty) => {}
        ReturnType::Type(_, ty) => cx.error_spanned_by(
            ty,
            format!(
                "{rule}: `{name}` must return `bool`, not `{}`",
                type_text(ty)
            ),
        ),
        ReturnType::Default => cx.error_spanned_by(
            &sig.ident,
            format!("{rule}: `{name}` returns nothing; add `-> bool`"),
        ),
    }
}

/// The shape `when` and `unavailable_reason` share: synchronous, `&self`
/// and nothing else. `why_sync` says why `async` is refused.
fn check_self_only(cx: &Ctxt, sig: &syn::Signature, rule: &str, why_sync: &str) {
    let name = &sig.ident;
    check_plain(cx, sig, rule);
    if let Some(asyncness) = &sig.asyncness {
        cx.error_spanned_by(
            asyncness,
            format!("{rule}: `{name}` is `async`; {why_sync}"),
        );
    }
    let mut inputs = sig.inputs.iter();
    match inputs.next() {
        Some(FnArg::Receiver(receiver)) if is_shared_self(receiver) => {}
        Some(FnArg::Receiver(receiver)) => {
            cx.error_spanned_by(receiver, format!("{rule}: take `&self` here"))
        }
        Some(FnArg::Typed(first)) => cx.error_spanned_by(
            first,
            format!("{rule}: `{name}` has no `self`; add `&self` as its only parameter"),
        ),
        None => cx.error_spanned_by(
            &sig.ident,
            format!("{rule}: `{name}` has no `self`; add `&self` as its only parameter"),
        ),
    }
    for extra in inputs {
        cx.error_spanned_by(
            extra,
            format!("{rule}: `{name}` takes no other parameter; remove this one"),
        );
    }
}

/// `precondition = method`: `fn(&self, input: &Input) -> Result<(),
/// PreconditionFailure>`, optionally with `ctx: &ReadContext` after the input.
pub(crate) fn check_precondition(cx: &Ctxt, method: &ImplItemFn, input: &Type) {
    let sig = &method.sig;
    let name = &sig.ident;
    let expected = format!(
        "a precondition is `fn {name}(&self, input: &{}) -> Result<(), PreconditionFailure>`, optionally with `ctx: &ReadContext` after the input",
        type_text(input)
    );
    check_plain(cx, sig, &expected);
    if let Some(asyncness) = &sig.asyncness {
        cx.error_spanned_by(
            asyncness,
            format!("{expected}; it runs before the handler and cannot be `async`"),
        );
    }
    let mut inputs = sig.inputs.iter();
    match inputs.next() {
        Some(FnArg::Receiver(receiver)) if is_shared_self(receiver) => {}
        Some(other) => {
            cx.error_spanned_by(other, format!("{expected}; take `&self` first"));
            return;
        }
        None => {
            cx.error_spanned_by(&sig.ident, format!("{expected}; it has no parameters"));
            return;
        }
    }
    let params: Vec<&syn::PatType> = typed_params(method).collect();
    match params.as_slice() {
        [] => cx.error_spanned_by(&sig.inputs, format!("{expected}; add the input parameter")),
        [first, rest @ ..] => {
            if !matches!(&*first.ty, Type::Reference(reference) if reference.mutability.is_none())
                || is_context_ref(&first.ty)
            {
                cx.error_spanned_by(
                    &first.ty,
                    format!("{expected}; the input comes first, borrowed"),
                );
            }
            match rest {
                [] => {}
                // The second parameter is the context by position; the
                // compiler checks its type (an alias or renamed import of
                // `ReadContext` is fine).
                [ctx]
                    if is_handler_context(&ctx.ty)
                        && matches!(&*ctx.ty, Type::Reference(reference) if reference.mutability.is_none()) =>
                    {}
                [ctx] => cx.error_spanned_by(
                    &ctx.ty,
                    format!("{expected}; the second parameter can only be the context"),
                ),
                [_, extra, ..] => {
                    cx.error_spanned_by(extra, format!("{expected}; remove this parameter"))
                }
            }
        }
    }
    if matches!(sig.output, ReturnType::Default) {
        cx.error_at(
            sig.paren_token.span.join(),
            format!("{expected}; add the return type"),
        );
    }
}

/// The typed parameters of a method, after `self`.
fn typed_params(method: &ImplItemFn) -> impl Iterator<Item = &syn::PatType> {
    method.sig.inputs.iter().filter_map(|arg| match arg {
        FnArg::Typed(typed) => Some(typed),
        FnArg::Receiver(_) => None,
    })
}

/// Whether the precondition method takes the context: its second
/// parameter, by position (`check_precondition` reports any other shape).
pub(crate) fn precondition_takes_context(method: &ImplItemFn) -> bool {
    typed_params(method).nth(1).is_some()
}

/// The type a precondition borrows as its input (`T` in `input: &T`): its
/// first parameter.
pub(crate) fn precondition_input_type(method: &ImplItemFn) -> Option<&Type> {
    typed_params(method)
        .next()
        .and_then(|typed| match &*typed.ty {
            Type::Reference(reference) if !is_context_ref(&typed.ty) => Some(&*reference.elem),
            _ => None,
        })
}

/// `unavailable_reason = method`: a synchronous `fn(&self) -> String` (or
/// another text type, checked by the compiler).
pub(crate) fn check_reason(cx: &Ctxt, method: &ImplItemFn) {
    let sig = &method.sig;
    let name = &sig.ident;
    let rule = "`unavailable_reason = method` must name a synchronous `fn(&self) -> String` in this impl block";
    check_self_only(
        cx,
        sig,
        rule,
        "the reason is read synchronously, from `&self`",
    );
    if matches!(sig.output, ReturnType::Default) {
        cx.error_spanned_by(
            &sig.ident,
            format!("{rule}: `{name}` returns nothing; add `-> String`"),
        );
    }
}
