//! Parsing of attribute arguments: `key = value`, `key`, `key(...)`, `key = [...]`.

use proc_macro2::{Span, TokenStream};
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
            input.parse::<Token![=]>()?;
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
            } else if input.peek(Ident::peek_any) {
                ArgValue::Ident(Ident::parse_any(input)?)
            } else {
                return Err(input.error("expected a literal (\"text\", 42, true) or a method name"));
            }
        } else if input.peek(syn::token::Paren) {
            let content;
            let paren = syn::parenthesized!(content in input);
            let args = Punctuated::<Arg, Token![,]>::parse_terminated(&content)?;
            ArgValue::List(args.into_iter().collect(), paren.span.join())
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

/// Parses a comma-separated argument list.
pub(crate) fn parse_args(tokens: TokenStream) -> syn::Result<Vec<Arg>> {
    let parser = Punctuated::<Arg, Token![,]>::parse_terminated;
    Ok(parser.parse2(tokens)?.into_iter().collect())
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
    options
        .iter()
        .map(|option| (edit_distance(wrong, option), option))
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

    fn take(&mut self, key: &str) -> Option<Arg> {
        let index = self.args.iter().position(|arg| arg.key == key)?;
        Some(self.args.remove(index))
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
            ArgValue::Lit(Lit::Int(lit)) => lit.base10_parse::<i32>().ok().map(|n| (n, lit.span())),
            ArgValue::Negative(Lit::Int(lit), span) => {
                lit.base10_parse::<i32>().ok().map(|n| (-n, *span))
            }
            _ => None,
        };
        if parsed.is_none() {
            self.mismatch(&arg, "an integer literal within i32");
        }
        parsed
    }

    /// `key = method` or `key = "method"`: a method name.
    pub(crate) fn method(&mut self, key: &str) -> Option<Ident> {
        let arg = self.take(key)?;
        match &arg.value {
            ArgValue::Ident(ident) => Some(ident.clone()),
            ArgValue::Lit(Lit::Str(lit)) => match lit.parse_with(Ident::parse_any) {
                Ok(ident) => Some(Ident::new(&ident.to_string(), lit.span())),
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

    /// `key = "text"` or `key = method`.
    pub(crate) fn string_or_method(&mut self, key: &str) -> Option<Result<LitStr, Ident>> {
        let arg = self.take(key)?;
        match arg.value {
            ArgValue::Lit(Lit::Str(lit)) => Some(Ok(lit)),
            ArgValue::Ident(ident) => Some(Err(ident)),
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
            ArgValue::Exprs(exprs, _) => Some(exprs),
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
            ArgValue::Lit(Lit::Int(lit)) => lit.base10_digits().to_owned(),
            ArgValue::Lit(Lit::Float(lit)) => lit.base10_digits().to_owned(),
            ArgValue::Lit(Lit::Bool(lit)) => lit.value.to_string(),
            ArgValue::Negative(Lit::Int(lit), _) => format!("-{}", lit.base10_digits()),
            ArgValue::Negative(Lit::Float(lit), _) => format!("-{}", lit.base10_digits()),
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
