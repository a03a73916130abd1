//! An `#[agent_component]` impl block that syn cannot parse: a syntax error
//! inside a method body. rustc reports that error itself when it reads the
//! block back, so the macro adds none of its own; it reads the block with
//! the bodies emptied, reports what is wrong with the attributes and
//! signatures as usual, and emits the block unchanged minus the helper
//! attributes, with the placeholder `Component` impl, so the one mistake
//! raises no follow-on errors (no "#[observation] only works inside…", no
//! "not an agent component" where the type is mounted).

use proc_macro2::{Delimiter, Group, TokenStream, TokenTree};

/// Whether the top-level tokens contain the `impl` keyword.
pub(crate) fn is_impl(input: &TokenStream) -> bool {
    input
        .clone()
        .into_iter()
        .any(|tree| matches!(&tree, TokenTree::Ident(ident) if ident == "impl"))
}

/// The tokens with every brace group inside the impl body emptied: method
/// bodies (and any other braced value) become `{}`.
pub(crate) fn without_bodies(input: TokenStream) -> TokenStream {
    map_body(input, |body| {
        body.into_iter()
            .map(|tree| match tree {
                TokenTree::Group(group) if group.delimiter() == Delimiter::Brace => {
                    let mut empty = Group::new(Delimiter::Brace, TokenStream::new());
                    empty.set_span(group.span());
                    TokenTree::Group(empty)
                }
                other => other,
            })
            .collect()
    })
}

/// The tokens with the `#[observation]` and `#[action]` attributes of the
/// impl body's items removed.
pub(crate) fn without_helpers(input: TokenStream) -> TokenStream {
    map_body(input, |body| {
        let mut out: Vec<TokenTree> = Vec::new();
        let mut trees = body.into_iter().peekable();
        while let Some(tree) = trees.next() {
            if let TokenTree::Punct(pound) = &tree
                && pound.as_char() == '#'
                && let Some(TokenTree::Group(group)) = trees.peek()
                && group.delimiter() == Delimiter::Bracket
                && names_helper(group.stream())
            {
                trees.next();
                continue;
            }
            out.push(tree);
        }
        out.into_iter().collect()
    })
}

/// Whether an attribute's content is `observation…` or `action…` (also
/// `agent_surface::…::observation…`).
fn names_helper(content: TokenStream) -> bool {
    let Ok(meta) = syn::parse2::<syn::Meta>(content) else {
        return false;
    };
    let path = meta.path();
    let last = path
        .segments
        .last()
        .map(|segment| segment.ident.to_string());
    matches!(last.as_deref(), Some("observation" | "action"))
        && (path.segments.len() == 1
            || path
                .segments
                .first()
                .is_some_and(|first| first.ident == "agent_surface"))
}

/// Applies `f` to the contents of the impl body (the last top-level brace
/// group).
fn map_body(input: TokenStream, f: impl FnOnce(TokenStream) -> TokenStream) -> TokenStream {
    let mut trees: Vec<TokenTree> = input.into_iter().collect();
    let body = trees.iter_mut().rev().find_map(|tree| match tree {
        TokenTree::Group(group) if group.delimiter() == Delimiter::Brace => Some(tree),
        _ => None,
    });
    if let Some(tree) = body
        && let TokenTree::Group(group) = &*tree
    {
        let mut mapped = Group::new(Delimiter::Brace, f(group.stream()));
        mapped.set_span(group.span());
        *tree = TokenTree::Group(mapped);
    }
    trees.into_iter().collect()
}
