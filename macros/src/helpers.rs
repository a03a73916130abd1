//! The signatures of the helper methods an attribute names: `when` and
//! `precondition`. Each mismatch is reported at the part of the signature
//! that is wrong, with the signature that is expected.

use syn::{FnArg, ImplItemFn, ReturnType, Type};

use crate::ctxt::Ctxt;

/// The context types a handler or precondition may borrow.
const CONTEXTS: [&str; 2] = ["ActionContext", "ReadContext"];

/// The last path segment of `ty`, when it is a plain path.
fn last_ident(ty: &Type) -> Option<&syn::Ident> {
    match ty {
        Type::Path(path) if path.qself.is_none() => {
            path.path.segments.last().map(|segment| &segment.ident)
        }
        Type::Paren(inner) => last_ident(&inner.elem),
        Type::Group(inner) => last_ident(&inner.elem),
        _ => None,
    }
}

/// Whether `ty` names one of the context types (by value): `ActionContext`
/// or `ReadContext`, or a type alias or renamed import of one whose name
/// ends in `Context` or `Ctx` (the `HandlerContext` bound then checks that
/// it is one).
pub(crate) fn names_context(ty: &Type) -> bool {
    last_ident(ty).is_some_and(|ident| {
        let name = ident.to_string();
        CONTEXTS.contains(&name.as_str()) || name.ends_with("Context") || name.ends_with("Ctx")
    })
}

/// Whether `ty` is `ActionContext` or `ReadContext` by value, exactly: a
/// context taken by value (an input type merely named `…Context` is not).
pub(crate) fn is_context_name(ty: &Type) -> bool {
    last_ident(ty).is_some_and(|ident| CONTEXTS.contains(&ident.to_string().as_str()))
}

/// Whether `ty` is `&ActionContext` or `&ReadContext` (shared or not).
pub(crate) fn is_context_ref(ty: &Type) -> bool {
    matches!(ty, Type::Reference(reference) if names_context(&reference.elem))
}

/// Standard types a handler could borrow but that are never a context: a
/// borrowed parameter of one of them is a misplaced input.
const NEVER_CONTEXTS: [&str; 20] = [
    "str", "String", "bool", "char", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16",
    "i32", "i64", "i128", "isize", "f32", "f64", "Value", "PathBuf",
];

/// Whether a handler parameter of type `ty` is its context. Inputs are taken
/// by value, so a borrowed parameter is the context, whatever its type is
/// called (an alias, a renamed import): the `HandlerContext` bound checks
/// that it is one. Borrowed standard types, slices and generic types are
/// misplaced inputs, reported as such.
pub(crate) fn is_handler_context(ty: &Type) -> bool {
    let Type::Reference(reference) = ty else {
        return false;
    };
    if names_context(&reference.elem) {
        return true;
    }
    if reference.mutability.is_some() {
        return false;
    }
    match &*reference.elem {
        Type::Path(path) if path.qself.is_none() => {
            path.path
                .segments
                .iter()
                .all(|segment| segment.arguments.is_none())
                && path
                    .path
                    .segments
                    .last()
                    .is_some_and(|last| !NEVER_CONTEXTS.contains(&last.ident.to_string().as_str()))
        }
        _ => false,
    }
}

/// A type as the user would write it: `Option<bool>`, not `Option < bool >`.
pub(crate) fn type_text(ty: &Type) -> String {
    let text = quote::quote!(#ty).to_string();
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ' ' {
            let previous = out.chars().last();
            let next = chars.peek().copied();
            let tight = matches!(previous, Some('<' | '&' | ':' | '('))
                || matches!(next, Some('<' | '>' | ',' | ':' | ')'));
            if tight {
                continue;
            }
        }
        out.push(c);
    }
    out
}

/// Whether a receiver borrows the component shared: `&self`, or the same
/// written out as `self: &Self`.
pub(crate) fn is_shared_self(receiver: &syn::Receiver) -> bool {
    matches!(&*receiver.ty, Type::Reference(reference)
        if reference.mutability.is_none()
            && matches!(&*reference.elem, Type::Path(path)
                if path.qself.is_none() && path.path.is_ident("Self")))
}

/// Whether `ty` is literally `bool`.
fn is_bool(ty: &Type) -> bool {
    matches!(ty, Type::Path(path) if path.qself.is_none() && path.path.is_ident("bool"))
}

/// `when = method`: a synchronous `fn(&self) -> bool`.
pub(crate) fn check_when(cx: &Ctxt, method: &ImplItemFn) {
    let sig = &method.sig;
    let name = &sig.ident;
    let rule = "`when` must name a synchronous `fn(&self) -> bool` in this impl block";
    if let Some(asyncness) = &sig.asyncness {
        cx.error_spanned_by(
            asyncness,
            format!("{rule}: `{name}` is `async`; availability is decided synchronously, so read the state from `&self`"),
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
    match &sig.output {
        ReturnType::Type(_, ty) if is_bool(ty) => {}
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

/// `precondition = method`: `fn(&self, input: &Input) -> Result<(),
/// PreconditionFailure>`, optionally with `ctx: &ReadContext` after the input.
pub(crate) fn check_precondition(cx: &Ctxt, method: &ImplItemFn, input: &Type) {
    let sig = &method.sig;
    let name = &sig.ident;
    let expected = format!(
        "a precondition is `fn {name}(&self, input: &{}) -> Result<(), PreconditionFailure>`, optionally with `ctx: &ReadContext` after the input",
        type_text(input)
    );
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
    let params: Vec<&syn::PatType> = inputs
        .filter_map(|arg| match arg {
            FnArg::Typed(typed) => Some(typed),
            FnArg::Receiver(_) => None,
        })
        .collect();
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
    if let Some(asyncness) = &sig.asyncness {
        cx.error_spanned_by(
            asyncness,
            format!("{rule}: `{name}` is `async`; the reason is read synchronously, from `&self`"),
        );
    }
    let mut inputs = sig.inputs.iter();
    match inputs.next() {
        Some(FnArg::Receiver(receiver)) if is_shared_self(receiver) => {}
        Some(other) => cx.error_spanned_by(other, format!("{rule}: take `&self` here")),
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
    if matches!(sig.output, ReturnType::Default) {
        cx.error_spanned_by(
            &sig.ident,
            format!("{rule}: `{name}` returns nothing; add `-> String`"),
        );
    }
}

/// The SHA-256 of `text`, in lowercase hex: a digest that stands for the
/// text where review compares digests, not texts (gated capabilities).
pub(crate) fn sha256_hex(text: &str) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// The FNV-1a 64 hash of `text`: what tells generated items apart (test
/// names); never a digest review relies on.
pub(crate) fn fnv64(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
