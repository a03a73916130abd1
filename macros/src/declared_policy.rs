//! A `policies = [...]` expression as the generated code installs it. When
//! its runtime identity cannot show what it does — it holds a closure (a
//! confirmation `when`, a custom check) or reads `cfg!(…)` (parameters
//! chosen by build) — the policy is installed with a digest of the
//! expression's tokens and the `cfg!` conditions it reads, which its
//! identity (the catalog, the contract artifact, the review gate) carries.

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned as _;

/// The tokens as one canonical text: every token once, separated by
/// spaces (independent of the source's layout and of the compiler's
/// printing).
fn canonical(tokens: TokenStream, out: &mut String) {
    for tree in tokens {
        match tree {
            TokenTree::Group(group) => {
                let (open, close) = match group.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Brace => ("{", "}"),
                    Delimiter::Bracket => ("[", "]"),
                    Delimiter::None => ("", ""),
                };
                out.push_str(open);
                out.push(' ');
                canonical(group.stream(), out);
                out.push_str(close);
            }
            TokenTree::Ident(ident) => out.push_str(&ident.to_string()),
            TokenTree::Punct(punct) => out.push(punct.as_char()),
            TokenTree::Literal(literal) => out.push_str(&literal.to_string()),
        }
        out.push(' ');
    }
}

/// FNV-1a (64 bits) of `text`, in hex: a stable digest of the expression.
fn digest(text: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// What the expression reads that its identity cannot show: whether it
/// holds a closure, and the conditions of its `cfg!(…)`s.
fn hidden(tokens: TokenStream, closure: &mut bool, conditions: &mut Vec<String>) {
    let mut trees = tokens.into_iter().peekable();
    while let Some(tree) = trees.next() {
        match tree {
            TokenTree::Punct(punct) if punct.as_char() == '|' => *closure = true,
            TokenTree::Ident(ident) if ident == "cfg" => {
                let bang = matches!(trees.peek(), Some(TokenTree::Punct(p)) if p.as_char() == '!');
                if bang {
                    let _ = trees.next();
                    if let Some(TokenTree::Group(group)) = trees.next() {
                        let mut condition = String::new();
                        canonical(group.stream(), &mut condition);
                        conditions.push(condition.trim().to_owned());
                    }
                }
            }
            TokenTree::Group(group) => hidden(group.stream(), closure, conditions),
            _ => {}
        }
    }
}

/// The call installing the policy `expr` (whose `Self` is already the
/// component type).
pub(crate) fn install(expr: TokenStream) -> TokenStream {
    let mut closure = false;
    let mut conditions = Vec::new();
    hidden(expr.clone(), &mut closure, &mut conditions);
    if !closure && conditions.is_empty() {
        return quote_spanned! {expr.span()=> ::agent_surface::policy::policy(#expr) };
    }
    conditions.sort();
    conditions.dedup();
    let mut text = String::new();
    canonical(expr.clone(), &mut text);
    let source = digest(&text);
    let call = quote! {
        ::agent_surface::policy::__declared(#expr, #source, &[#(#conditions),*])
    };
    quote_spanned! {expr.span()=> #call }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn installed(expr: TokenStream) -> String {
        install(expr).to_string()
    }

    #[test]
    fn a_plain_policy_is_installed_as_it_is() {
        assert!(
            installed(quote!(rate_limit(10, Duration::from_secs(60))))
                .contains(":: policy :: policy")
        );
    }

    #[test]
    fn a_closure_or_a_cfg_is_declared_with_its_digest_and_conditions() {
        let cfg = installed(quote!(rate_limit(
            if cfg!(debug_assertions) {
                10
            } else {
                1_000_000
            },
            WINDOW
        )));
        assert!(cfg.contains("__declared"), "{cfg}");
        assert!(cfg.contains("\"debug_assertions\""), "{cfg}");
        let a = installed(quote!(
            require_confirmation().when(|ctx| ctx.input().is_some())
        ));
        let b = installed(quote!(
            require_confirmation().when(|ctx| ctx.input().is_none())
        ));
        assert!(a.contains("__declared") && b.contains("__declared"));
        assert_ne!(a, b, "a flipped body is another digest");
        let spaced = installed(quote!(
            require_confirmation().when(|ctx| ctx.input().is_some())
        ));
        assert_eq!(a, spaced, "layout is not a change");
    }
}
