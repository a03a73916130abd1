//! The typed model of what the user wrote: an annotated `impl` block, its
//! capability methods and their attributes. Building it reports every
//! malformed attribute at its token.

use agent_surface_rules::{Audit, Confirmation, Effect, Kind};
use proc_macro2::{Span, TokenStream};
use syn::ext::IdentExt;
use syn::spanned::Spanned as _;
use syn::{Ident, ImplItem, ImplItemFn, ItemImpl, LitStr, Type};

use crate::attr::{self, ArgSet};
use crate::ctxt::Ctxt;
use crate::reference::Reference;
use crate::signature::Param;
use crate::symbol::*;

/// A string with the span it came from.
pub(crate) struct Spanned<T> {
    pub(crate) value: T,
    pub(crate) span: Span,
}

/// The annotated impl block.
pub(crate) struct Component<'a> {
    pub(crate) item: &'a ItemImpl,
    pub(crate) self_ty: &'a Type,
    pub(crate) attrs: ComponentAttrs,
    pub(crate) capabilities: Vec<Capability<'a>>,
    pub(crate) methods: Vec<&'a ImplItemFn>,
    pub(crate) references: Vec<Reference>,
    pub(crate) attr_span: Span,
}

/// `#[agent_component(...)]` plus the impl block's doc comment.
#[derive(Default)]
pub(crate) struct ComponentAttrs {
    pub(crate) component_type: Option<LitStr>,
    /// Whether `type` was written (possibly malformed, already reported).
    pub(crate) type_given: bool,
    pub(crate) description: Option<Spanned<String>>,
    /// Whether `description` was written (possibly malformed, already reported).
    pub(crate) description_given: bool,
    pub(crate) instance: Option<LitStr>,
    pub(crate) priority: Option<i32>,
    pub(crate) origin: Option<LitStr>,
    pub(crate) enabled: Option<bool>,
    pub(crate) parent: Option<(LitStr, Option<LitStr>)>,
    pub(crate) meta: Option<Spanned<String>>,
    pub(crate) internal: Option<String>,
    pub(crate) policies: Option<Vec<syn::Expr>>,
    /// The description as an expression the compiler computes.
    pub(crate) doc_expr: Option<TokenStream>,
}

/// A declared concurrency group.
pub(crate) enum ConcurrencySpec {
    Instance,
    Capability,
    Key(String),
    Parallel(u32),
}

impl ConcurrencySpec {
    fn parse(text: &str) -> Result<ConcurrencySpec, String> {
        let invalid = || {
            format!(
                "`{text}` is not a concurrency group; write \"instance\" (default), \"capability\", \"key:<name>\" or \"parallel(<n>)\" with n ≥ 1"
            )
        };
        Ok(match text {
            "instance" => ConcurrencySpec::Instance,
            "capability" => ConcurrencySpec::Capability,
            _ => {
                if let Some(key) = text.strip_prefix("key:") {
                    if key.is_empty()
                        || !key
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                    {
                        return Err(invalid());
                    }
                    ConcurrencySpec::Key(key.to_owned())
                } else if let Some(n) = text
                    .strip_prefix("parallel(")
                    .and_then(|rest| rest.strip_suffix(')'))
                {
                    match n.parse::<u32>() {
                        Ok(n) if n >= 1 => ConcurrencySpec::Parallel(n),
                        Err(_) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
                            return Err(format!(
                                "`{text}` allows more calls at once than a 32-bit count holds; \
                                 write \"parallel(<n>)\" with 1 ≤ n ≤ {}",
                                u32::MAX
                            ));
                        }
                        _ => return Err(invalid()),
                    }
                } else {
                    return Err(invalid());
                }
            }
        })
    }
}

/// One `#[observation]` or `#[action]` method.
pub(crate) struct Capability<'a> {
    pub(crate) kind: Kind,
    pub(crate) method: &'a ImplItemFn,
    pub(crate) name: Spanned<String>,
    /// Whether the name comes from the method name (no `name = …`).
    pub(crate) name_derived: bool,
    pub(crate) description: Option<Spanned<String>>,
    /// Whether `description` was written (possibly malformed, already reported).
    pub(crate) description_given: bool,
    pub(crate) effect: Option<Spanned<Effect>>,
    /// Whether `effect` was written (possibly malformed, already reported).
    pub(crate) effect_given: bool,
    pub(crate) idempotent: Option<bool>,
    pub(crate) reversible: Option<bool>,
    pub(crate) confirmation: Option<Confirmation>,
    pub(crate) audit: Option<Audit>,
    pub(crate) when: Option<Ident>,
    pub(crate) reason: Option<Result<LitStr, Ident>>,
    pub(crate) reason_span: Option<Span>,
    pub(crate) precondition: Option<Ident>,
    pub(crate) timeout_ms: Option<u64>,
    pub(crate) meta: Option<Spanned<String>>,
    pub(crate) internal: Option<String>,
    pub(crate) policies: Option<Vec<syn::Expr>>,
    pub(crate) concurrency: Option<ConcurrencySpec>,
    pub(crate) queue_depth: Option<u32>,
    pub(crate) params: Vec<Param<'a>>,
    pub(crate) output: Option<&'a Type>,
    /// Whether the signature raised no error, so its input and return
    /// types can still be checked after errors elsewhere.
    pub(crate) signature_ok: bool,
    pub(crate) attr_span: Span,
    /// `#[cfg(…)]` of the `cfg_attr`s the helper was applied through.
    pub(crate) gates: Vec<syn::Attribute>,
    /// The description as an expression the compiler computes.
    pub(crate) doc_expr: Option<TokenStream>,
}

impl Capability<'_> {
    /// The input type, if the handler takes one.
    pub(crate) fn input(&self) -> Option<&Type> {
        self.params.iter().find_map(|param| match param {
            Param::Input(ty) => Some(*ty),
            Param::Context(_) => None,
        })
    }

    /// The Rust method name.
    pub(crate) fn ident(&self) -> &Ident {
        &self.method.sig.ident
    }

    /// Every `#[cfg]` the capability is under: the method's own, and those
    /// of a `cfg_attr` that applied its helper.
    pub(crate) fn cfg_attributes(&self) -> Vec<syn::Attribute> {
        let mut attrs: Vec<syn::Attribute> = crate::cfg::cfgs(&self.method.attrs)
            .into_iter()
            .cloned()
            .collect();
        attrs.extend(self.gates.iter().cloned());
        attrs
    }
}

/// One `#[doc = …]` of an item (a `///` line is one), or one `doc = …` a
/// `#[cfg_attr(pred, …)]` applies, with its predicate.
struct DocPart {
    value: syn::Expr,
    condition: Option<syn::Meta>,
    span: Span,
}

/// The `doc = …` values among `attrs`, in order: `#[doc = …]` (and `///`),
/// and those inside `#[cfg_attr(pred, doc = …)]`, which rustc has not
/// applied yet on a method (only on the attributes above the macro's own).
fn doc_parts(attrs: &[syn::Attribute]) -> Vec<DocPart> {
    let mut parts = Vec::new();
    for attr in attrs {
        if attr.path().is_ident("doc") {
            if let syn::Meta::NameValue(pair) = &attr.meta {
                parts.push(DocPart {
                    value: pair.value.clone(),
                    condition: None,
                    span: attr.span(),
                });
            }
        } else if let Some((condition, values)) = cfg_attr_docs(attr) {
            parts.extend(values.into_iter().map(|value| DocPart {
                value,
                condition: Some(condition.clone()),
                span: attr.span(),
            }));
        }
    }
    parts
}

/// The predicate of a `#[cfg_attr(pred, …)]` and the values of the
/// `doc = …` it applies (none when it applies no doc).
fn cfg_attr_docs(attr: &syn::Attribute) -> Option<(syn::Meta, Vec<syn::Expr>)> {
    if !attr.path().is_ident("cfg_attr") {
        return None;
    }
    let syn::Meta::List(list) = &attr.meta else {
        return None;
    };
    list.parse_args_with(|input: syn::parse::ParseStream<'_>| {
        let condition: syn::Meta = input.parse()?;
        input.parse::<syn::Token![,]>()?;
        let metas =
            syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated(input)?;
        let values = metas
            .into_iter()
            .filter_map(|meta| match meta {
                syn::Meta::NameValue(pair) if pair.path.is_ident("doc") => Some(pair.value),
                _ => None,
            })
            .collect();
        Ok((condition, values))
    })
    .ok()
}

fn is_literal(value: &syn::Expr) -> bool {
    matches!(
        value,
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(_),
            ..
        })
    )
}

/// The doc comment of an item, joined into a description, when every part
/// of it is a literal written unconditionally (else see [`doc_expression`]).
pub(crate) fn doc_description(attrs: &[syn::Attribute]) -> Option<Spanned<String>> {
    let mut lines = Vec::new();
    let mut span = None;
    for part in doc_parts(attrs) {
        if part.condition.is_some() {
            continue;
        }
        if let syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(lit),
            ..
        }) = &part.value
        {
            span.get_or_insert(part.span);
            lines.push(lit.value());
        }
    }
    let span = span?;
    let text = agent_surface_rules::description_from_doc_lines(lines.iter().map(String::as_str));
    Some(Spanned { value: text, span })
}

/// The doc comment as an expression the compiler computes, when a part of
/// it is not a literal (`#[doc = include_str!("…")]`, `#[doc = concat!(…)]`)
/// or is applied by a `#[cfg_attr(pred, doc = …)]`: its text is known only
/// to the compiler, so the runtime normalizes and checks it (at
/// registration and in the generated test), and a constant of the
/// expansion checks its limits. Unconditional parts are one `concat!`; a
/// part under a predicate is in the text when `cfg!(pred)` holds, joined
/// by a constant evaluation.
pub(crate) fn doc_expression(attrs: &[syn::Attribute]) -> Option<TokenStream> {
    let parts = doc_parts(attrs);
    if parts.iter().all(|part| part.condition.is_none()) {
        let values: Vec<&syn::Expr> = parts.iter().map(|part| &part.value).collect();
        let computed = values.iter().any(|value| !is_literal(value));
        return computed.then(|| quote::quote!(::core::concat!(#(#values, "\n"),*)));
    }
    let pieces = parts.iter().map(|part| {
        let value = &part.value;
        match &part.condition {
            None => quote::quote!(::core::concat!(#value, "\n")),
            Some(condition) => quote::quote! {
                if ::core::cfg!(#condition) { ::core::concat!(#value, "\n") } else { "" }
            },
        }
    });
    Some(quote::quote! {{
        const PARTS: &[&str] = &[#(#pieces),*];
        const LEN: usize = {
            let mut len = 0;
            let mut i = 0;
            while i < PARTS.len() {
                len += PARTS[i].len();
                i += 1;
            }
            len
        };
        const BYTES: [u8; LEN] = {
            let mut out = [0u8; LEN];
            let mut at = 0;
            let mut i = 0;
            while i < PARTS.len() {
                let bytes = PARTS[i].as_bytes();
                let mut j = 0;
                while j < bytes.len() {
                    out[at] = bytes[j];
                    at += 1;
                    j += 1;
                }
                i += 1;
            }
            out
        };
        // Whole `&str`s joined: valid UTF-8 by construction.
        const TEXT: &str = match ::core::str::from_utf8(&BYTES) {
            ::core::result::Result::Ok(text) => text,
            ::core::result::Result::Err(_) => "",
        };
        TEXT
    }})
}

/// `meta(k = v, …)` or `internal(k = v, …)` as JSON object text.
fn metadata(cx: &Ctxt, set: &mut ArgSet<'_>, key: &str) -> Option<Spanned<String>> {
    set.list(key).map(|(args, span)| Spanned {
        value: attr::json_object(cx, &format!("{key}(…)"), &args),
        span,
    })
}

fn helper_kind(attr: &syn::Attribute) -> Option<Kind> {
    if is_helper(attr, OBSERVATION) {
        Some(Kind::Observation)
    } else if is_helper(attr, ACTION) {
        Some(Kind::Action)
    } else {
        None
    }
}

impl<'a> Component<'a> {
    pub(crate) fn from_ast(cx: &Ctxt, args: TokenStream, item: &'a ItemImpl) -> Component<'a> {
        // The whole `#[agent_component(...)]` attribute.
        let attr_span = Span::call_site();
        let attrs = ComponentAttrs::parse(cx, args, item);
        if let Some((_, path, _)) = &item.trait_ {
            cx.error_spanned_by(
                path,
                "#[agent_component] goes on an inherent impl block (`impl MyComponent { … }`), not a trait impl",
            );
        }
        if !item.generics.params.is_empty()
            && item.generics.type_params().next().is_none()
            && item.generics.const_params().next().is_none()
        {
            cx.error_spanned_by(
                &item.generics,
                "a component cannot borrow: the registry keeps a mounted component in an `Arc` for as long as it is mounted (`'static`); own the data, or hold an `Arc<…>` instead of a `&'a` reference",
            );
        } else if !item.generics.params.is_empty() || item.generics.where_clause.is_some() {
            cx.error_spanned_by(
                &item.generics,
                "generic components are not supported: a component's contract is static; implement it on a concrete type",
            );
        }
        for other in &item.items {
            let attrs = match other {
                ImplItem::Const(item) => &item.attrs,
                ImplItem::Type(item) => &item.attrs,
                ImplItem::Macro(item) => &item.attrs,
                _ => continue,
            };
            for attr in attrs.iter().filter(|attr| helper_kind(attr).is_some()) {
                cx.error_spanned_by(
                    attr,
                    "observations and actions are methods: put this attribute on a `fn name(&self) …` of this impl block",
                );
            }
        }
        let methods: Vec<&ImplItemFn> = item
            .items
            .iter()
            .filter_map(|item| match item {
                ImplItem::Fn(method) => Some(method),
                _ => None,
            })
            .collect();
        let capabilities = methods
            .iter()
            .filter_map(|method| Capability::from_method(cx, method))
            .collect();
        Component {
            item,
            self_ty: &item.self_ty,
            attrs,
            capabilities,
            methods,
            references: crate::reference::references(cx, item),
            attr_span,
        }
    }

    /// The method named `ident`, if the impl block has one.
    pub(crate) fn method(&self, ident: &Ident) -> Option<&'a ImplItemFn> {
        self.methods
            .iter()
            .copied()
            // `r#ready` and `ready` are one identifier to Rust.
            .find(|method| method.sig.ident.unraw() == ident.unraw())
    }

    /// The Rust type's name, for diagnostics.
    pub(crate) fn rust_type_name(&self) -> String {
        match self.self_ty {
            Type::Path(path) => path
                .path
                .segments
                .last()
                .map(|segment| segment.ident.to_string())
                .unwrap_or_default(),
            other => quote::quote!(#other).to_string(),
        }
    }
}

impl ComponentAttrs {
    fn parse(cx: &Ctxt, args: TokenStream, item: &ItemImpl) -> ComponentAttrs {
        let args = attr::parse_args(cx, args);
        let mut set = ArgSet::new(cx, "#[agent_component]", COMPONENT_KEYS, args);
        let has_description = set.has(DESCRIPTION);
        let description = set
            .string(DESCRIPTION)
            .map(|lit| Spanned {
                value: lit.value(),
                span: lit.span(),
            })
            .or_else(|| {
                doc_expression(&item.attrs)
                    .is_none()
                    .then(|| doc_description(&item.attrs))
                    .flatten()
            });
        let parent = set.list(PARENT).and_then(|(args, span)| {
            let mut parent = ArgSet::new(cx, "parent(…)", PARENT_KEYS, args);
            // A `type` written wrong is reported as such, once.
            let type_written = parent.has(TYPE);
            let parent_type = parent.string(TYPE);
            if parent_type.is_none() && !type_written {
                cx.error_at(span, "`parent(…)` needs `type = \"…\"`");
            }
            parent_type.map(|parent_type| (parent_type, parent.string(INSTANCE)))
        });
        ComponentAttrs {
            type_given: set.has(TYPE) || set.had_unknown_keys(),
            component_type: set.string(TYPE),
            description,
            description_given: has_description,
            instance: set.string(INSTANCE),
            priority: set.int(PRIORITY).map(|(n, _)| n),
            origin: set.string(ORIGIN),
            enabled: set.flag(ENABLED).map(|(b, _)| b),
            parent,
            meta: metadata(cx, &mut set, META),
            internal: metadata(cx, &mut set, INTERNAL).map(|json| json.value),
            policies: set.exprs(POLICIES),
            doc_expr: if has_description {
                None
            } else {
                doc_expression(&item.attrs)
            },
        }
    }
}

impl<'a> Capability<'a> {
    fn from_method(cx: &Ctxt, method: &'a ImplItemFn) -> Option<Capability<'a>> {
        // A helper behind `cfg_attr` makes a capability under that
        // condition (the method stays a plain method otherwise).
        let wrapped = crate::cfg::wrapped(&method.attrs, |attr| helper_kind(attr).is_some());
        let gates: Vec<syn::Attribute> = wrapped.iter().map(|w| w.gate.clone()).collect();
        let mut helpers = method
            .attrs
            .iter()
            .chain(wrapped.iter().map(|w| &w.helper))
            .filter_map(|attr| helper_kind(attr).map(|kind| (kind, attr)));
        let (kind, attr) = helpers.next()?;
        for (_, extra) in helpers {
            cx.error_spanned_by(
                extra,
                "a method is either one observation or one action; remove this attribute",
            );
        }
        let (name, allowed) = match kind {
            Kind::Observation => ("observation", OBSERVATION_KEYS),
            _ => ("action", ACTION_KEYS),
        };
        let args = match &attr.meta {
            syn::Meta::Path(_) => Vec::new(),
            syn::Meta::List(list) => attr::parse_args(cx, list.tokens.clone()),
            syn::Meta::NameValue(value) => {
                cx.error_spanned_by(
                    value,
                    format!("write `#[{name}]` or `#[{name}(key = value, …)]`"),
                );
                Vec::new()
            }
        };
        let args = match kind {
            Kind::Observation => without_action_only_keys(cx, args),
            _ => args,
        };
        let label = match kind {
            Kind::Observation => "#[observation]",
            _ => "#[action]",
        };
        let mut set = ArgSet::new(cx, label, allowed, args);
        let rust_name = method.sig.ident.unraw().to_string();
        let name_derived = !set.has(NAME);
        let name = match set.string(NAME) {
            Some(lit) => Spanned {
                value: lit.value(),
                span: lit.span(),
            },
            None => Spanned {
                value: agent_surface_rules::ids::snake_to_camel(&rust_name),
                span: method.sig.ident.span(),
            },
        };
        let description_given = set.has(DESCRIPTION);
        let doc_expr = if description_given {
            None
        } else {
            doc_expression(&method.attrs)
        };
        let description = set
            .string(DESCRIPTION)
            .map(|lit| Spanned {
                value: lit.value(),
                span: lit.span(),
            })
            .or_else(|| {
                doc_expr
                    .is_none()
                    .then(|| doc_description(&method.attrs))
                    .flatten()
            });
        let effect_given = set.has(EFFECT) || set.had_unknown_keys();
        let effect = set
            .string(EFFECT)
            .and_then(|lit| match Effect::parse(&lit.value()) {
                Some(effect) => Some(Spanned {
                    value: effect,
                    span: lit.span(),
                }),
                None => {
                    let allowed: Vec<&str> =
                        Effect::allowed(Kind::Action).map(Effect::as_str).collect();
                    cx.error_spanned_by(
                        &lit,
                        format!(
                            "unknown effect `{}`; {}view actions declare one of: {}",
                            lit.value(),
                            attr::did_you_mean(&lit.value(), &allowed),
                            allowed.join(", ")
                        ),
                    );
                    None
                }
            });
        let confirmation = set.confirmation(CONFIRMATION).map(|(value, _)| value);
        let audit = set.audit(AUDIT);
        let timeout_ms = set.duration_ms(TIMEOUT);
        let reason_span = set.span_of(UNAVAILABLE_REASON);
        let concurrency = set.string(CONCURRENCY).and_then(|lit| {
            ConcurrencySpec::parse(&lit.value())
                .map_err(|message| cx.error_spanned_by(&lit, message))
                .ok()
        });
        let queue_depth =
            set.int(QUEUE_DEPTH)
                .and_then(|(depth, span)| match u32::try_from(depth) {
                    Ok(depth) => Some(depth),
                    Err(_) => {
                        cx.error_at(
                            span,
                            "`queue_depth` is the number of waiting calls; it cannot be negative",
                        );
                        None
                    }
                });
        let errors_before = cx.error_count();
        let (params, output) = crate::signature::signature(cx, kind, method);
        let signature_ok = cx.error_count() == errors_before;
        Some(Capability {
            kind,
            method,
            name,
            name_derived,
            description,
            description_given,
            effect,
            effect_given,
            idempotent: set.flag(IDEMPOTENT).map(|(b, _)| b),
            reversible: set.flag(REVERSIBLE).map(|(b, _)| b),
            confirmation,
            audit,
            when: set.method(WHEN),
            reason: set.string_or_method(UNAVAILABLE_REASON),
            reason_span,
            precondition: set.method(PRECONDITION),
            timeout_ms,
            meta: metadata(cx, &mut set, META),
            internal: metadata(cx, &mut set, INTERNAL).map(|json| json.value),
            policies: set.exprs(POLICIES),
            concurrency,
            queue_depth,
            params,
            output,
            signature_ok,
            attr_span: attr.span(),
            gates,
            doc_expr,
        })
    }
}

/// Observations read; they cannot carry action-only keys. Give each such key
/// a message that says why, instead of a bare "unknown key".
fn without_action_only_keys(cx: &Ctxt, args: Vec<attr::Arg>) -> Vec<attr::Arg> {
    let mut kept = Vec::with_capacity(args.len());
    for arg in args {
        let why = match arg.key.as_str() {
            EFFECT => {
                "observations have no effect: they only read state (effect `read` is implied)"
            }
            CONFIRMATION => "observations never ask for confirmation: they only read state",
            IDEMPOTENT | REVERSIBLE => "observations are always idempotent and change nothing",
            AUDIT => "observations are not audited by level; use an `audit` policy",
            PRECONDITION => {
                "observations take no input, so there is nothing to check; use `when` for availability"
            }
            _ => {
                kept.push(arg);
                continue;
            }
        };
        cx.error_at(arg.key_span, why);
    }
    kept
}

/// `#[agent_schema(...)]` options.
pub(crate) struct SchemaOptions {
    pub(crate) serialize: bool,
    pub(crate) deserialize: bool,
    pub(crate) allow_unknown_fields: bool,
    pub(crate) unbounded: bool,
}

impl SchemaOptions {
    pub(crate) fn parse(cx: &Ctxt, args: TokenStream) -> SchemaOptions {
        let args = attr::parse_args(cx, args);
        let mut set = ArgSet::new(cx, "#[agent_schema]", SCHEMA_KEYS, args);
        let input = set.flag(SCHEMA_INPUT).map(|(b, _)| b).unwrap_or(false);
        let output = set.flag(SCHEMA_OUTPUT).map(|(b, _)| b).unwrap_or(false);
        SchemaOptions {
            serialize: output || !input,
            deserialize: input || !output,
            allow_unknown_fields: set
                .flag(ALLOW_UNKNOWN_FIELDS)
                .map(|(b, _)| b)
                .unwrap_or(false),
            unbounded: set.flag(SCHEMA_UNBOUNDED).map(|(b, _)| b).unwrap_or(false),
        }
    }
}
