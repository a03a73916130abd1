//! The model of a `#[reference(Procedure, …)]` attribute on an
//! `#[agent_component]` impl block: the backend procedure a component may
//! reference and the least gating every mount gives it. Reading it reports
//! every malformed argument at its token.

use agent_surface_rules::Confirmation;
use proc_macro2::TokenStream;
use syn::{Ident, ItemImpl};

use crate::attr::{self, ArgSet};
use crate::ctxt::Ctxt;
use crate::symbol::{REFERENCE, is_helper};

const LOCKED: &str = "locked";
const WHEN: &str = "when";
const CONFIRMATION: &str = "confirmation";
const POLICIES: &str = "policies";
const REFERENCE_KEYS: &[&str] = &[LOCKED, WHEN, CONFIRMATION, POLICIES];

/// One `#[reference(Procedure, …)]`.
pub(crate) struct Reference {
    /// The procedure's input type.
    pub(crate) procedure: syn::Path,
    /// `locked = [field, …]`: the fields every mount binds.
    pub(crate) locked: Vec<Ident>,
    /// `when`: every mount gives the reference a `.when(…)` rule.
    pub(crate) when: bool,
    /// `confirmation = "…"`: the least confirmation posture.
    pub(crate) confirmation: Option<Confirmation>,
    /// `policies = [...]`: installed on every mounted reference.
    pub(crate) policies: Vec<syn::Expr>,
}

fn parse_one(cx: &Ctxt, attr: &syn::Attribute) -> Option<Reference> {
    let usage = "write `#[reference(ProcedureType, locked = [field, …], when, confirmation = \"required\", policies = [policy(), …])]`";
    let syn::Meta::List(list) = &attr.meta else {
        cx.error_spanned_by(attr, format!("`#[reference]` names a procedure: {usage}"));
        return None;
    };
    let parsed = list.parse_args_with(|input: syn::parse::ParseStream<'_>| {
        let procedure: syn::Path = input.parse()?;
        let rest: TokenStream = if input.is_empty() {
            TokenStream::new()
        } else {
            input.parse::<syn::Token![,]>()?;
            input.parse()?
        };
        Ok((procedure, rest))
    });
    let (procedure, rest) = match parsed {
        Ok(parsed) => parsed,
        Err(err) => {
            cx.error_at(err.span(), format!("{err}: {usage}"));
            return None;
        }
    };
    let mut set = ArgSet::new(
        cx,
        "#[reference(…)]",
        REFERENCE_KEYS,
        attr::parse_args(cx, rest),
    );
    let locked = set
        .exprs(LOCKED)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|expr| match expr {
            syn::Expr::Path(path) if path.path.get_ident().is_some() => path.path.get_ident().cloned(),
            other => {
                cx.error_spanned_by(
                    &other,
                    "`locked = [...]` lists field names of the procedure's input, e.g. `locked = [device_ids]`",
                );
                None
            }
        })
        .collect::<Vec<Ident>>();
    for (at, field) in locked.iter().enumerate() {
        if locked
            .get(..at)
            .is_some_and(|before| before.contains(field))
        {
            cx.error_spanned_by(field, format!("`{field}` is locked twice: list it once"));
        }
    }
    Some(Reference {
        procedure,
        locked,
        when: set.flag(WHEN).is_some_and(|(on, _)| on),
        confirmation: set.confirmation(CONFIRMATION).map(|(c, _)| c),
        policies: set.exprs(POLICIES).unwrap_or_default(),
    })
}

/// The `#[reference(…)]` attributes of the impl block.
pub(crate) fn references(cx: &Ctxt, item: &ItemImpl) -> Vec<Reference> {
    item.attrs
        .iter()
        .filter(|attr| is_helper(attr, REFERENCE))
        .filter_map(|attr| parse_one(cx, attr))
        .collect()
}
