//! Reading tokens and syntax the visitor cannot ask `syn` for: the
//! attributes written in a macro's arguments, the macros a `macro_rules!`
//! body invokes, and the attributes of any expression. Token walks keep
//! their own stacks, however deep the tokens nest.

use syn::Attribute;

/// The names of the attributes written anywhere in `tokens` (`#[name…]`,
/// the last segment of its path), walked without recursion.
pub(super) fn attributes_in(tokens: &proc_macro2::TokenStream) -> Vec<String> {
    use proc_macro2::{Delimiter, TokenTree};
    let mut names = Vec::new();
    let mut pending = vec![tokens.clone()];
    while let Some(stream) = pending.pop() {
        let trees: Vec<TokenTree> = stream.into_iter().collect();
        for (i, tree) in trees.iter().enumerate() {
            let TokenTree::Group(group) = tree else {
                continue;
            };
            pending.push(group.stream());
            let after_pound = i
                .checked_sub(1)
                .and_then(|j| trees.get(j))
                .is_some_and(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == '#'));
            if after_pound && group.delimiter() == Delimiter::Bracket {
                let last = group
                    .stream()
                    .into_iter()
                    .take_while(|t| !matches!(t, TokenTree::Group(_)))
                    .filter_map(|t| match t {
                        TokenTree::Ident(ident) => Some(ident.to_string()),
                        _ => None,
                    })
                    .last();
                names.extend(last);
            }
        }
    }
    names
}

/// The macros a `macro_rules!` body invokes (`name !`), walked without
/// recursion.
pub(super) fn invoked_in(tokens: &proc_macro2::TokenStream) -> Vec<String> {
    use proc_macro2::TokenTree;
    let mut names = Vec::new();
    let mut pending = vec![tokens.clone()];
    while let Some(stream) = pending.pop() {
        let trees: Vec<TokenTree> = stream.into_iter().collect();
        for (i, tree) in trees.iter().enumerate() {
            match tree {
                TokenTree::Group(group) => pending.push(group.stream()),
                TokenTree::Ident(ident) => {
                    if matches!(trees.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == '!') {
                        let name = ident.to_string();
                        if !names.contains(&name) {
                            names.push(name);
                        }
                    }
                }
                TokenTree::Punct(_) | TokenTree::Literal(_) => {}
            }
        }
    }
    names
}

/// The attributes written on an expression.
pub(super) fn expr_attrs(expr: &syn::Expr) -> &[Attribute] {
    use syn::Expr as E;
    match expr {
        E::Array(e) => &e.attrs,
        E::Assign(e) => &e.attrs,
        E::Async(e) => &e.attrs,
        E::Await(e) => &e.attrs,
        E::Binary(e) => &e.attrs,
        E::Block(e) => &e.attrs,
        E::Break(e) => &e.attrs,
        E::Call(e) => &e.attrs,
        E::Cast(e) => &e.attrs,
        E::Closure(e) => &e.attrs,
        E::Const(e) => &e.attrs,
        E::Continue(e) => &e.attrs,
        E::Field(e) => &e.attrs,
        E::ForLoop(e) => &e.attrs,
        E::Group(e) => &e.attrs,
        E::If(e) => &e.attrs,
        E::Index(e) => &e.attrs,
        E::Infer(e) => &e.attrs,
        E::Let(e) => &e.attrs,
        E::Lit(e) => &e.attrs,
        E::Loop(e) => &e.attrs,
        E::Macro(e) => &e.attrs,
        E::Match(e) => &e.attrs,
        E::MethodCall(e) => &e.attrs,
        E::Paren(e) => &e.attrs,
        E::Path(e) => &e.attrs,
        E::Range(e) => &e.attrs,
        E::RawAddr(e) => &e.attrs,
        E::Reference(e) => &e.attrs,
        E::Repeat(e) => &e.attrs,
        E::Return(e) => &e.attrs,
        E::Struct(e) => &e.attrs,
        E::Try(e) => &e.attrs,
        E::TryBlock(e) => &e.attrs,
        E::Tuple(e) => &e.attrs,
        E::Unary(e) => &e.attrs,
        E::Unsafe(e) => &e.attrs,
        E::While(e) => &e.attrs,
        E::Yield(e) => &e.attrs,
        _ => &[],
    }
}
