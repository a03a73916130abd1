//! Names and literals the macros once stumbled on: a raw or parenthesised
//! self type, a helper named as a raw identifier (in a string too, or raw
//! against a plain method), `i32::MIN` as a priority, a `bool` spelled by
//! its path, a deprecated capability under `deny(warnings)`, a variant serde
//! skips holding a type with no schema, and const generics.
#![deny(warnings)]
#![allow(non_camel_case_types, unused_parens)]

use agent_surface::prelude::*;

pub struct r#match;

/// A raw-named component.
#[agent_component(type = "odd.raw", priority = -2147483648)]
impl r#match {
    /// Read.
    #[observation(when = "r#type")]
    fn read(&self) -> u32 {
        1
    }

    /// Read again.
    #[observation(when = r#ready)]
    fn again(&self) -> u32 {
        2
    }

    /// Old.
    #[deprecated = "use read"]
    #[observation]
    fn old(&self) -> u32 {
        3
    }

    fn r#type(&self) -> bool {
        true
    }

    fn ready(&self) -> core::primitive::bool {
        true
    }
}

pub struct Parenthesised;

/// A parenthesised self type.
#[agent_component(type = "odd.paren")]
impl (Parenthesised) {
    /// Read.
    #[observation]
    fn read(&self) -> u32 {
        1
    }
}

pub struct Opaque;

/// A choice, one of them internal.
#[agent_schema]
pub enum Pick {
    /// A.
    A,
    /// Internal: never on the wire.
    #[serde(skip)]
    #[allow(dead_code)]
    Hidden(Opaque),
}

/// Tagged by a constant.
#[agent_schema]
pub struct Tagged<const N: usize> {
    /// The value.
    pub v: u32,
}

/// Holds a tagged value.
#[agent_schema]
pub struct Wrap<const N: usize> {
    /// The inner value.
    pub inner: Tagged<N>,
}

fn main() {
    let _ = (Pick::A, Wrap::<3> { inner: Tagged { v: 1 } });
}
