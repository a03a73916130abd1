//! A `policies = [...]` expression as the generated code installs it. When
//! its runtime identity cannot show what it does — it holds a closure (a
//! confirmation `when`, a custom check), passes a predicate by name, builds
//! a custom policy, reads a const (whose value may be chosen by build) or
//! reads `cfg!(…)` — the policy is installed with a digest of the
//! expression's tokens, the `cfg!` conditions it reads and the names it
//! reads, which its identity (the catalog, the contract artifact, the review
//! gate) carries; the gate digests the source of those names.

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use quote::quote_spanned;
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

/// The constructors of the built-in policies: their runtime identity shows
/// every parameter (a const they read shows as its value).
const BUILT_IN: &[&str] = &[
    "audit",
    "authenticated",
    "authenticated_by",
    "environment",
    "has_permission",
    "has_permission_with",
    "rate_limit",
    "require_confirmation",
    "tenant_boundary",
];

/// The builder methods of the built-in policies (their effect shows in the
/// identity: a `when` as `when=custom`, a summary by its text).
const BUILDER_METHODS: &[&str] = &["level", "summary", "when"];

/// Whether a `|` after `previous` starts a closure (an expression begins
/// there) rather than being an operator after an operand.
fn starts_expression(previous: Option<&TokenTree>) -> bool {
    match previous {
        None => true,
        Some(TokenTree::Punct(p)) => matches!(p.as_char(), ',' | '=' | ';' | '(' | '!' | '&' | '|'),
        Some(TokenTree::Ident(ident)) => ident == "move" || ident == "return",
        _ => false,
    }
}

/// Words that never name an item of the user's crate.
const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "false",
    "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref",
    "return", "self", "Self", "static", "struct", "super", "trait", "true", "type", "unsafe",
    "use", "where", "while",
];

/// What the expression reads that its identity cannot show.
#[derive(Default)]
struct Hidden {
    /// It holds a closure.
    closure: bool,
    /// It passes a function (or another value named in lower case, such as
    /// a predicate) by name.
    named_value: bool,
    /// It reads a const or a static (named in upper case), whose value may
    /// itself be chosen by build.
    constant: bool,
    /// The conditions of its `cfg!(…)`s.
    conditions: Vec<String>,
    /// Every name it reads that may be an item of the user's crate (a
    /// function, a const, a type; `Type::item` for a type's own), for the
    /// review gate to digest.
    reads: Vec<String>,
    /// The closures' own parameters (never an item).
    locals: Vec<String>,
    /// Within a closure's parameter list.
    params: bool,
}

impl Hidden {
    fn walk(&mut self, tokens: TokenStream) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let punct = |i: Option<usize>, c: char| {
            i.and_then(|i| trees.get(i))
                .is_some_and(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == c))
        };
        let mut i = 0;
        while let Some(tree) = trees.get(i) {
            match tree {
                TokenTree::Punct(p) if p.as_char() == '|' => {
                    let joint =
                        p.spacing() == proc_macro2::Spacing::Joint && punct(Some(i + 1), '|');
                    if self.params {
                        // The end of a closure's parameter list.
                        self.params = false;
                    } else if starts_expression(i.checked_sub(1).and_then(|j| trees.get(j))) {
                        // A closure: `||` has no parameters; otherwise the
                        // names up to the next `|` are its own.
                        self.closure = true;
                        if joint {
                            i += 1;
                        } else {
                            self.params = true;
                        }
                    } else if joint {
                        // `a || b`, after an operand: an operator.
                        i += 1;
                    }
                }
                TokenTree::Ident(ident) if ident == "cfg" && punct(Some(i + 1), '!') => {
                    if let Some(TokenTree::Group(group)) = trees.get(i + 2) {
                        let mut condition = String::new();
                        canonical(group.stream(), &mut condition);
                        self.conditions.push(condition.trim().to_owned());
                    }
                    i += 2;
                }
                TokenTree::Ident(ident) => {
                    let name = ident.to_string();
                    let after_dot = i.checked_sub(1).is_some_and(|j| punct(Some(j), '.'));
                    let after_path = i.checked_sub(1).is_some_and(|j| punct(Some(j), ':'));
                    let is_macro = punct(Some(i + 1), '!');
                    let called = matches!(
                        trees.get(i + 1),
                        Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis
                    );
                    if self.params {
                        self.locals.push(name);
                    } else if after_dot {
                        // A method of the user's (`Checks::default().risky()`):
                        // what it returns is not in the expression.
                        if called && !BUILDER_METHODS.contains(&name.as_str()) {
                            self.named_value = true;
                            self.reads.push(format!(".{name}"));
                        }
                    } else if is_macro {
                        // A macro's expansion is not in the expression either.
                        if !matches!(name.as_str(), "cfg" | "vec") {
                            self.named_value = true;
                            self.reads.push(format!("{name}!"));
                        }
                    } else if !KEYWORDS.contains(&name.as_str()) {
                        let path = punct(Some(i + 1), ':');
                        let lower = name.starts_with(|c: char| c.is_ascii_lowercase());
                        // A value named (a predicate), or a function of the
                        // user's called (`pick()`): its body decides.
                        let user_call = called && !after_path && !BUILT_IN.contains(&name.as_str());
                        if lower && ((!called && !path) || user_call) {
                            self.named_value = true;
                        }
                        if name.chars().any(|c| c.is_ascii_uppercase())
                            && !name.chars().any(|c| c.is_ascii_lowercase())
                        {
                            self.constant = true;
                        }
                        // `Type::item`: the item of that type (a method, an
                        // associated const), read as such.
                        if path
                            && !lower
                            && punct(Some(i + 2), ':')
                            && let Some(TokenTree::Ident(item)) = trees.get(i + 3)
                        {
                            self.reads.push(format!("{name}::{item}"));
                        }
                        // A module on the way (`policy::`) is no item.
                        if !(path && lower) {
                            self.reads.push(name);
                        }
                    }
                }
                TokenTree::Group(group) => self.walk(group.stream()),
                _ => {}
            }
            i += 1;
        }
    }
}

/// The name the expression starts with (`rate_limit` in
/// `policy::rate_limit(…).when(…)`): a built-in constructor or the user's.
fn head(expr: &TokenStream) -> Option<String> {
    let mut last = None;
    for tree in expr.clone() {
        match tree {
            TokenTree::Ident(ident) => last = Some(ident.to_string()),
            TokenTree::Punct(p) if p.as_char() == ':' => {}
            _ => break,
        }
    }
    last
}

/// The call installing the policy `expr` (whose `Self` is already the
/// component type).
pub(crate) fn install(expr: TokenStream) -> TokenStream {
    let mut hidden = Hidden::default();
    hidden.walk(expr.clone());
    // The user's own policy type (whose source review reads), unless the
    // expression names nothing at all (then it is no policy either, and
    // the bound on `policy` says so).
    let custom = head(&expr).is_none_or(|head| !BUILT_IN.contains(&head.as_str()))
        && !hidden.reads.is_empty();
    let plain = !hidden.closure && !hidden.named_value && !hidden.constant && !custom;
    if plain && hidden.conditions.is_empty() {
        return quote_spanned! {expr.span()=> ::agent_surface::policy::policy(#expr) };
    }
    let Hidden {
        mut conditions,
        mut reads,
        locals,
        ..
    } = hidden;
    reads.retain(|name| !locals.contains(name));
    conditions.sort();
    conditions.dedup();
    reads.sort();
    reads.dedup();
    let mut text = String::new();
    canonical(expr.clone(), &mut text);
    let source = digest(&text);
    // The bound is `policy`'s, as for any other policy: a value that is no
    // policy gets the same error at its own tokens.
    let span = expr.span();
    let policy = quote_spanned! {span=> ::agent_surface::policy::policy(#expr) };
    quote_spanned! {span=>
        ::agent_surface::policy::__declared(#policy, #source, &[#(#conditions),*], &[#(#reads),*])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

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

    #[test]
    fn a_named_predicate_or_a_custom_policy_is_declared_with_what_it_reads() {
        let named = installed(quote!(require_confirmation().when(is_risky)));
        assert!(named.contains("__declared"), "{named}");
        assert!(named.contains("\"is_risky\""), "{named}");
        let custom = installed(quote!(Quota::new(LIMIT)));
        assert!(custom.contains("\"Quota::new\""), "{custom}");
        assert!(custom.contains("\"LIMIT\""), "{custom}");
        let closure = installed(quote!(
            require_confirmation().when(|ctx| ctx.input().len() > THRESHOLD)
        ));
        assert!(closure.contains("\"THRESHOLD\""), "{closure}");
        assert!(
            !closure.contains("\"ctx\""),
            "a closure's parameter is its own: {closure}"
        );
        assert!(
            !closure.contains("\"len\""),
            "a method is not an item: {closure}"
        );
        // `a | b` is an operator, not a closure's parameters: both are read.
        let or = installed(quote!(
            require_confirmation().when(|ctx| never(ctx) | bor_risky(ctx))
        ));
        assert!(
            or.contains("\"bor_risky\"") && or.contains("\"never\""),
            "{or}"
        );
        // A method of the user's or a function called: declared.
        let method = installed(quote!(
            require_confirmation().when(Checks::default().risky())
        ));
        assert!(method.contains("\".risky\""), "{method}");
        let called = installed(quote!(require_confirmation().when(pick())));
        assert!(
            called.contains("__declared") && called.contains("\"pick\""),
            "{called}"
        );
        // A built-in whose parameters are written out needs no declaration;
        // one reading a const does (its value may be chosen by build).
        let plain = installed(quote!(policy::rate_limit(10, Duration::from_secs(60))));
        assert!(!plain.contains("__declared"), "{plain}");
        let constant = installed(quote!(policy::rate_limit(LIMIT, WINDOW)));
        assert!(constant.contains("\"LIMIT\""), "{constant}");
    }
}
