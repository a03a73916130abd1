//! Parsing of attribute arguments: `key = value`, `key`, `key(...)`,
//! `key = [...]`, `key = path::Type`.
//!
//! Arguments are split at top-level commas first and parsed one by one, so a
//! syntax error in one argument is reported at its token and the others are
//! still read: one typo never turns into "missing `effect`" elsewhere.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{Ident, Lit, LitStr, Token};

use agent_surface_rules::{Audit, Confirmation};

use crate::ctxt::Ctxt;

/// One `key`, `key = value` or `key(...)` argument.
pub(crate) struct Arg {
    pub(crate) key: String,
    pub(crate) key_span: Span,
    pub(crate) value: ArgValue,
}

/// The value part of an argument.
pub(crate) enum ArgValue {
    /// `key` alone.
    Flag,
    /// `key = "text"`, `key = 3`, `key = true`.
    Lit(Lit),
    /// `key = -3`.
    Negative(Lit, Span),
    /// `key = some_method`.
    Ident(Ident),
    /// `key(a = 1, b)`.
    List(Vec<Arg>, Span),
    /// `key = [expr, expr]`.
    Exprs(Vec<syn::Expr>, Span),
    /// `key = path::Type` or `key = Vec<T>`.
    Type(Box<syn::Type>),
    /// A syntax error, already reported: the key was given, its value is
    /// unusable, and nothing more is said about it.
    Broken,
}

impl ArgValue {
    fn span(&self, key_span: Span) -> Span {
        match self {
            ArgValue::Flag => key_span,
            ArgValue::Lit(lit) => lit.span(),
            ArgValue::Negative(_, span) | ArgValue::List(_, span) | ArgValue::Exprs(_, span) => {
                *span
            }
            ArgValue::Ident(ident) => ident.span(),
            ArgValue::Type(ty) => syn::spanned::Spanned::span(&**ty),
            ArgValue::Broken => key_span,
        }
    }
}

impl Parse for Arg {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let (key, key_span) = if input.peek(LitStr) {
            let lit: LitStr = input.parse()?;
            (lit.value(), lit.span())
        } else {
            let ident = Ident::parse_any(input)?;
            (ident.unraw().to_string(), ident.span())
        };
        let value = if input.peek(Token![=]) {
            let eq: Token![=] = input.parse()?;
            if input.is_empty() {
                return Err(syn::Error::new(
                    key_span.join(eq.span).unwrap_or(key_span),
                    format!(
                        "`{key} =` has no value; write `{key} = \"…\"`, `{key} = true`, `{key} = 10` or `{key} = method`, or remove it"
                    ),
                ));
            }
            if input.peek(Token![-]) {
                let minus: Token![-] = input.parse()?;
                let lit: Lit = input.parse()?;
                let span = minus.span.join(lit.span()).unwrap_or(lit.span());
                ArgValue::Negative(lit, span)
            } else if input.peek(syn::token::Bracket) {
                let content;
                let bracket = syn::bracketed!(content in input);
                let exprs = Punctuated::<syn::Expr, Token![,]>::parse_terminated(&content)?;
                ArgValue::Exprs(exprs.into_iter().collect(), bracket.span.join())
            } else if input.peek(Lit) {
                ArgValue::Lit(input.parse()?)
            } else if input.peek(Ident::peek_any) && {
                let fork = input.fork();
                Ident::parse_any(&fork).is_ok() && fork.is_empty()
            } {
                ArgValue::Ident(Ident::parse_any(input)?)
            } else if input.peek(Ident::peek_any) || input.peek(Token![::]) || input.peek(Token![<])
            {
                let ty: syn::Type = input.parse()?;
                ArgValue::Type(Box::new(ty))
            } else {
                return Err(input.error("expected a literal (\"text\", 42, true) or a method name"));
            }
        } else if input.peek(syn::token::Paren) {
            let content;
            let paren = syn::parenthesized!(content in input);
            let tokens: TokenStream = content.parse()?;
            let mut errors = Vec::new();
            let args = args_of(tokens, &mut errors);
            if let Some(error) = errors.into_iter().reduce(|mut all, next| {
                all.combine(next);
                all
            }) {
                return Err(error);
            }
            ArgValue::List(args, paren.span.join())
        } else {
            ArgValue::Flag
        };
        Ok(Arg {
            key,
            key_span,
            value,
        })
    }
}

/// Splits `tokens` at top-level commas (outside groups and `<…>`).
fn split_commas(tokens: TokenStream, errors: &mut Vec<syn::Error>) -> Vec<TokenStream> {
    let mut chunks = Vec::new();
    let mut current = TokenStream::new();
    let mut angle_depth = 0usize;
    for tree in tokens {
        if let TokenTree::Punct(punct) = &tree {
            match punct.as_char() {
                // Nothing before this comma (`a,, b`, `(, a)`): an empty
                // argument, reported at the comma.
                ',' if angle_depth == 0 && current.is_empty() => {
                    errors.push(syn::Error::new(
                        punct.span(),
                        "an empty argument: remove this `,`",
                    ));
                    continue;
                }
                ',' if angle_depth == 0 => {
                    chunks.push(std::mem::take(&mut current));
                    continue;
                }
                '<' => angle_depth += 1,
                '>' => angle_depth = angle_depth.saturating_sub(1),
                _ => {}
            }
        }
        current.extend([tree]);
    }
    if !current.is_empty() {
        chunks.push(current);
    }
    chunks
}

/// Parses each argument on its own; a malformed one becomes an error plus a
/// `Broken` argument under its key (when the key can be read).
fn args_of(tokens: TokenStream, errors: &mut Vec<syn::Error>) -> Vec<Arg> {
    let mut args = Vec::new();
    for chunk in split_commas(tokens, errors) {
        let keys = keys_in(&chunk);
        let parser = |input: ParseStream<'_>| {
            let arg = Arg::parse(input)?;
            if !input.is_empty() {
                // `when = is_open()`: a method is named, not called.
                let named = match &arg.value {
                    ArgValue::Ident(method) => Some(method.to_string()),
                    ArgValue::Type(ty) => match &**ty {
                        syn::Type::Path(path) => path.path.get_ident().map(ToString::to_string),
                        _ => None,
                    },
                    _ => None,
                };
                if let Some(method) = named
                    && input.peek(syn::token::Paren)
                {
                    // Policies are expressions, in a list: the call stays.
                    if arg.key == crate::symbol::POLICIES {
                        let call = input
                            .fork()
                            .parse::<proc_macro2::TokenTree>()
                            .map_or_else(|_| "(…)".to_owned(), |args| args.to_string());
                        return Err(input.error(format!(
                            "`policies` takes a bracketed list of policy expressions: write \
                             `policies = [{method}{call}]`"
                        )));
                    }
                    return Err(input.error(format!(
                        "`{}` names a method, it does not call it: write `{} = {method}` without `()`",
                        arg.key, arg.key
                    )));
                }
                return Err(input.error(
                    "unexpected token after the argument: separate arguments with `,`, and quote text values (`key = \"…\"`)",
                ));
            }
            Ok(arg)
        };
        match parser.parse2(chunk) {
            Ok(arg) => args.push(arg),
            Err(err) => {
                errors.push(err);
                // Every key written in the broken argument (a missing comma
                // joins two) counts as given, so no "missing" error follows.
                args.extend(keys.into_iter().map(|(key, key_span)| Arg {
                    key,
                    key_span,
                    value: ArgValue::Broken,
                }));
            }
        }
    }
    args
}

/// The keys of a chunk: its first identifier (or string), and every
/// identifier directly followed by a single `=`.
fn keys_in(chunk: &TokenStream) -> Vec<(String, Span)> {
    let trees: Vec<TokenTree> = chunk.clone().into_iter().collect();
    let mut keys = Vec::new();
    let is_eq = |tree: Option<&TokenTree>| matches!(tree, Some(TokenTree::Punct(punct)) if punct.as_char() == '=' && punct.spacing() == proc_macro2::Spacing::Alone);
    for (index, tree) in trees.iter().enumerate() {
        let key = match tree {
            TokenTree::Ident(ident) if index == 0 || is_eq(trees.get(index + 1)) => {
                Some((ident.unraw().to_string(), ident.span()))
            }
            TokenTree::Literal(lit) if index == 0 => {
                syn::parse2::<LitStr>(TokenTree::Literal(lit.clone()).into())
                    .ok()
                    .map(|lit| (lit.value(), lit.span()))
            }
            _ => None,
        };
        // A value that is an identifier (`when = ready`) is not a key.
        let after_eq = index > 0 && is_eq(trees.get(index - 1));
        if let Some(key) = key
            && !after_eq
        {
            keys.push(key);
        }
    }
    keys
}

/// Parses a comma-separated argument list, reporting each malformed
/// argument at its token and keeping the others.
pub(crate) fn parse_args(cx: &Ctxt, tokens: TokenStream) -> Vec<Arg> {
    let mut errors = Vec::new();
    let args = args_of(tokens, &mut errors);
    for error in errors {
        cx.syn_error(error);
    }
    args
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous.get(j).copied().unwrap_or(0) + usize::from(ca != *cb);
            let insertion = current.get(j).copied().unwrap_or(0) + 1;
            let deletion = previous.get(j + 1).copied().unwrap_or(0) + 1;
            current.push(substitution.min(insertion).min(deletion));
        }
        previous = current;
    }
    previous.last().copied().unwrap_or(0)
}

/// Suggests the closest of `options` to `wrong`, if it is close.
pub(crate) fn did_you_mean(wrong: &str, options: &[&str]) -> String {
    let wrong_lower = wrong.to_lowercase();
    // A shortening or a lengthening of a key (`confirm`, `desc`,
    // `effects`) is as good a guess as a typo.
    let related = |option: &str| {
        wrong_lower.len() >= 4
            && (option.starts_with(&wrong_lower) || wrong_lower.starts_with(option))
    };
    options
        .iter()
        .map(|option| {
            let distance = if related(option) {
                1
            } else {
                edit_distance(&wrong_lower, option)
            };
            (distance, option)
        })
        .filter(|(distance, _)| *distance <= 2 || (wrong.len() > 5 && *distance <= 3))
        .min()
        .map(|(_, option)| format!("did you mean `{option}`? "))
        .unwrap_or_default()
}

/// The arguments of one attribute, checked for unknown and duplicate keys,
/// with typed accessors that report type mismatches.
pub(crate) struct ArgSet<'c> {
    cx: &'c Ctxt,
    attribute: &'static str,
    args: Vec<Arg>,
    unknown: bool,
}

impl<'c> ArgSet<'c> {
    /// Reports unknown keys (with a suggestion) and duplicates.
    pub(crate) fn new(
        cx: &'c Ctxt,
        attribute: &'static str,
        allowed: &[&str],
        args: Vec<Arg>,
    ) -> Self {
        let mut kept: Vec<Arg> = Vec::with_capacity(args.len());
        let mut unknown = false;
        for arg in args {
            if !allowed.contains(&arg.key.as_str()) {
                unknown = true;
                // A string written alone (`#[agent_component("a.b")]`)
                // reads as a key no identifier spells.
                let alone =
                    arg.key.is_empty() || !arg.key.chars().all(|c| c.is_alphanumeric() || c == '_');
                if alone {
                    let named = ["type", "id"]
                        .into_iter()
                        .find(|key| allowed.contains(key))
                        .map(|key| format!(": write `{key} = \"{}\"`", arg.key))
                        .unwrap_or_default();
                    cx.error_at(
                        arg.key_span,
                        format!(
                            "\"{}\" is a value without a key in `{attribute}`{named} (the keys are: {})",
                            arg.key,
                            allowed.join(", ")
                        ),
                    );
                    continue;
                }
                cx.error_at(
                    arg.key_span,
                    format!(
                        "unknown key `{}` in `{attribute}`; {}the keys are: {}",
                        arg.key,
                        did_you_mean(&arg.key, allowed),
                        allowed.join(", ")
                    ),
                );
            } else if kept.iter().any(|earlier| earlier.key == arg.key) {
                cx.error_at(
                    arg.key_span,
                    format!("`{}` is given twice in `{attribute}`; keep one", arg.key),
                );
            } else {
                kept.push(arg);
            }
        }
        ArgSet {
            cx,
            attribute,
            args: kept,
            unknown,
        }
    }

    /// Whether an unknown (probably misspelled) key was reported: checks for
    /// missing keys stay quiet then.
    pub(crate) fn had_unknown_keys(&self) -> bool {
        self.unknown
    }

    /// Removes `key`'s argument; a `Broken` one (already reported) yields
    /// nothing.
    fn take(&mut self, key: &str) -> Option<Arg> {
        let index = self.args.iter().position(|arg| arg.key == key)?;
        let arg = self.args.remove(index);
        (!matches!(arg.value, ArgValue::Broken)).then_some(arg)
    }

    /// Whether `key` was given.
    pub(crate) fn has(&self, key: &str) -> bool {
        self.args.iter().any(|arg| arg.key == key)
    }

    /// The span of `key`'s argument, if given.
    pub(crate) fn span_of(&self, key: &str) -> Option<Span> {
        self.args
            .iter()
            .find(|arg| arg.key == key)
            .map(|arg| arg.value.span(arg.key_span))
    }

    fn mismatch(&self, arg: &Arg, expected: &str) {
        self.cx.error_at(
            arg.value.span(arg.key_span),
            format!("`{}` in `{}` expects {expected}", arg.key, self.attribute),
        );
    }

    /// `key = "text"`.
    pub(crate) fn string(&mut self, key: &str) -> Option<LitStr> {
        let arg = self.take(key)?;
        match arg.value {
            ArgValue::Lit(Lit::Str(lit)) => Some(lit),
            _ => {
                self.mismatch(&arg, "a string literal, e.g. `key = \"…\"`");
                None
            }
        }
    }

    /// `key`, `key = true`, `key = false`.
    pub(crate) fn flag(&mut self, key: &str) -> Option<(bool, Span)> {
        let arg = self.take(key)?;
        match &arg.value {
            ArgValue::Flag => Some((true, arg.key_span)),
            ArgValue::Lit(Lit::Bool(lit)) => Some((lit.value, lit.span)),
            _ => {
                self.mismatch(&arg, "`true` or `false` (or the bare key for `true`)");
                None
            }
        }
    }

    /// `key = 42` or `key = -42`, within `i32`.
    pub(crate) fn int(&mut self, key: &str) -> Option<(i32, Span)> {
        let arg = self.take(key)?;
        let parsed = match &arg.value {
            // Unsuffixed: `5u8` is no `i32` literal.
            ArgValue::Lit(Lit::Int(lit)) if lit.suffix().is_empty() => {
                lit.base10_parse::<i32>().ok().map(|n| (n, lit.span()))
            }
            // The magnitude read wider: `-2147483648` is `i32::MIN`.
            ArgValue::Negative(Lit::Int(lit), span) if lit.suffix().is_empty() => lit
                .base10_parse::<i64>()
                .ok()
                .and_then(|n| i32::try_from(-n).ok())
                .map(|n| (n, *span)),
            _ => None,
        };
        if parsed.is_none() {
            self.mismatch(&arg, "an integer literal within i32, without a type suffix");
        }
        parsed
    }

    /// `key = method` or `key = "method"`: a method name.
    pub(crate) fn method(&mut self, key: &str) -> Option<Ident> {
        let arg = self.take(key)?;
        match &arg.value {
            // Path keywords can name no method, not even as raw identifiers.
            ArgValue::Ident(ident)
                if matches!(
                    ident.to_string().as_str(),
                    "self" | "Self" | "super" | "crate" | "_"
                ) =>
            {
                self.cx.error_spanned_by(
                    ident,
                    format!(
                        "`{ident}` cannot name a method: `{key}` takes the name of a method of this \
                         impl block, e.g. `{key} = can_open` for `fn can_open(&self) -> bool`"
                    ),
                );
                None
            }
            ArgValue::Ident(ident) => Some(method_name(ident, ident.span())),
            ArgValue::Lit(Lit::Str(lit)) => match lit.parse_with(Ident::parse_any) {
                // `"r#type"` names the method `r#type`, at the string.
                Ok(ident) => Some(method_name(&ident, lit.span())),
                Err(_) => {
                    self.mismatch(&arg, "the name of a method of this impl block");
                    None
                }
            },
            _ => {
                self.mismatch(&arg, "the name of a method of this impl block");
                None
            }
        }
    }

    /// `key = Type`, `key = path::Type`, `key = Vec<T>` or `key = "Type"`.
    pub(crate) fn ty(&mut self, key: &str) -> Option<syn::Type> {
        let arg = self.take(key)?;
        match arg.value {
            ArgValue::Ident(ident) => Some(syn::parse_quote!(#ident)),
            ArgValue::Type(ty) => Some(*ty),
            ArgValue::Lit(Lit::Str(lit)) => match lit.parse::<syn::Type>() {
                Ok(ty) => Some(ty),
                Err(_) => {
                    self.cx.error_spanned_by(
                        &lit,
                        format!("`{}` is not a type; write `{key} = MyOutput` or `{key} = path::MyOutput`", lit.value()),
                    );
                    None
                }
            },
            _ => {
                let expected =
                    format!("a type, e.g. `{key} = MyOutput` or `{key} = Vec<MyOutput>`");
                self.mismatch(&arg, &expected);
                None
            }
        }
    }

    /// `key = "text"` or `key = method`.
    pub(crate) fn string_or_method(&mut self, key: &str) -> Option<Result<LitStr, Ident>> {
        let arg = self.take(key)?;
        match arg.value {
            ArgValue::Lit(Lit::Str(lit)) => Some(Ok(lit)),
            ArgValue::Ident(ident) => Some(Err(method_name(&ident, ident.span()))),
            _ => {
                self.mismatch(
                    &arg,
                    "a string literal or the name of a method returning the text",
                );
                None
            }
        }
    }

    /// `key = "never" | "optional" | "required"`, with the literal's span.
    pub(crate) fn confirmation(&mut self, key: &str) -> Option<(Confirmation, Span)> {
        let lit = self.string(key)?;
        match Confirmation::parse(&lit.value()) {
            Some(value) => Some((value, lit.span())),
            None => {
                self.cx
                    .error_spanned_by(&lit, "confirmation is one of: never, optional, required");
                None
            }
        }
    }

    /// `key = "none" | "metadata" | "full"`.
    pub(crate) fn audit(&mut self, key: &str) -> Option<Audit> {
        let lit = self.string(key)?;
        Audit::parse(&lit.value()).or_else(|| {
            self.cx
                .error_spanned_by(&lit, "audit is one of: none, metadata, full");
            None
        })
    }

    /// `key = "10s"` (or `"250ms"`…), in milliseconds.
    pub(crate) fn duration_ms(&mut self, key: &str) -> Option<u64> {
        let lit = self.string(key)?;
        agent_surface_rules::parse_duration_ms(&lit.value())
            .map_err(|message| self.cx.error_spanned_by(&lit, message))
            .ok()
    }

    /// `key = [expr, …]`.
    pub(crate) fn exprs(&mut self, key: &str) -> Option<Vec<syn::Expr>> {
        let arg = self.take(key)?;
        match arg.value {
            ArgValue::Exprs(exprs, _) => {
                // The same policy twice runs the same check twice: a slip
                // (a copied line, a parameter not changed). Other lists
                // name their repeats themselves.
                let mut seen = std::collections::HashSet::new();
                for expr in exprs.iter().filter(|_| key == "policies") {
                    let text = expr.to_token_stream().to_string();
                    if !seen.insert(text) {
                        self.cx.error_spanned_by(
                            expr,
                            format!(
                                "this entry is listed twice in `{key}`: each entry runs on every \
                                 call, so remove the repeat (or change its arguments if another \
                                 was meant)"
                            ),
                        );
                    }
                }
                Some(exprs)
            }
            _ => {
                let expected =
                    format!("a bracketed list of expressions, e.g. `{key} = [authenticated()]`");
                self.mismatch(&arg, &expected);
                None
            }
        }
    }

    /// `key(...)`.
    pub(crate) fn list(&mut self, key: &str) -> Option<(Vec<Arg>, Span)> {
        let arg = self.take(key)?;
        match arg.value {
            ArgValue::List(args, span) => Some((args, span)),
            _ => {
                let expected = format!("a parenthesized list, e.g. `{key}(…)`");
                self.mismatch(&arg, &expected);
                None
            }
        }
    }
}

/// Escapes a string for JSON.
fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A numeric literal as JSON text: `None` when JSON (as `serde_json`
/// reads it) has no such number.
fn json_number(value: &ArgValue) -> Option<String> {
    let (lit, negative) = match value {
        ArgValue::Lit(lit) => (lit, false),
        ArgValue::Negative(lit, _) => (lit, true),
        _ => return None,
    };
    match lit {
        Lit::Int(lit) => {
            let magnitude = i128::from(lit.base10_parse::<u64>().ok()?);
            let n = if negative { -magnitude } else { magnitude };
            (n >= i128::from(i64::MIN)).then(|| n.to_string())
        }
        Lit::Float(lit) => {
            let magnitude = lit.base10_parse::<f64>().ok()?;
            // `1e-400` is no zero: a literal that underflows has no form.
            let underflows = magnitude == 0.0
                && lit
                    .base10_digits()
                    .split(['e', 'E'])
                    .next()
                    .is_some_and(|mantissa| mantissa.bytes().any(|b| matches!(b, b'1'..=b'9')));
            let x = if negative { -magnitude } else { magnitude };
            (x.is_finite() && !underflows).then(|| x.to_string())
        }
        _ => None,
    }
}

/// A method named as `ident`, at `span`: a keyword names the method it is
/// the raw form of (`type` is `r#type`), as the call the macro writes must
/// spell it (the keywords no raw identifier takes stay as written, for the
/// error they make).
fn method_name(ident: &Ident, span: Span) -> Ident {
    let text = ident.to_string();
    let keyword = !text.starts_with("r#")
        && syn::parse_str::<Ident>(&text).is_err()
        && !matches!(text.as_str(), "self" | "Self" | "super" | "crate" | "_");
    if keyword {
        Ident::new_raw(&text, span)
    } else {
        let mut ident = ident.clone();
        ident.set_span(span);
        ident
    }
}

/// Turns `meta(key = literal, ...)` into a JSON object text.
///
/// Values may be strings, integers, floats and booleans; keys identifiers or
/// string literals. Reports duplicates and other value kinds.
pub(crate) fn json_object(cx: &Ctxt, attribute: &str, args: &[Arg]) -> String {
    let mut out = String::from("{");
    let mut seen: Vec<&str> = Vec::new();
    for arg in args {
        if seen.contains(&arg.key.as_str()) {
            cx.error_at(
                arg.key_span,
                format!("key `{}` is given twice in `{attribute}`", arg.key),
            );
            continue;
        }
        seen.push(&arg.key);
        let value = match &arg.value {
            ArgValue::Lit(Lit::Str(lit)) => json_string(&lit.value()),
            ArgValue::Lit(Lit::Bool(lit)) => lit.value.to_string(),
            // Numbers are written as JSON reads them back: integers within
            // 64 bits, floats finite (`1.` is `1`, `1e999` no number).
            ArgValue::Lit(Lit::Int(_) | Lit::Float(_))
            | ArgValue::Negative(Lit::Int(_) | Lit::Float(_), _) => match json_number(&arg.value) {
                Some(number) => number,
                None => {
                    cx.error_at(
                            arg.value.span(arg.key_span),
                            format!(
                                "this number has no JSON form in `{attribute}`: integers fit in 64 bits, floats are finite and not so small they read as 0"
                            ),
                        );
                    continue;
                }
            },
            ArgValue::Flag => "true".to_owned(),
            _ => {
                cx.error_at(
                    arg.value.span(arg.key_span),
                    format!("values in `{attribute}` must be string, number or boolean literals"),
                );
                continue;
            }
        };
        if out.len() > 1 {
            out.push(',');
        }
        out.push_str(&json_string(&arg.key));
        out.push(':');
        out.push_str(&value);
    }
    out.push('}');
    out
}
