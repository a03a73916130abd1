//! Rust types as the user wrote them, read from their tokens: which names a
//! handler's context, whether a receiver is `&self`, and a type's text as
//! the user would write it in a message.

use syn::Type;

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
