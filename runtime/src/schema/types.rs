//! Which Rust types may cross the agent boundary, decided by the compiler.
//!
//! [`AgentSchema`] marks types whose schemars schema lies inside the subset
//! (or is normalized into it). `#[agent_schema]` implements it for your own
//! structs and enums after checking every field type; the impls below cover
//! the standard types. A type that is not marked fails to compile with a
//! message naming it and the fix, at the place it is used.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::Arc;

/// A type whose JSON Schema lies inside the agent-surface subset.
///
/// Implement it with `#[agent_schema]` on your own types. Implementing it by
/// hand is possible for types with a hand-written `JsonSchema`; their schema is
/// still checked against the subset by the test `#[agent_component]` generates
/// and at registration. Such a type used inside an input also answers the
/// bounds check: implement [`Bounded`](super::Bounded) for every depth, with
/// `None` when its schema bounds what it holds:
///
/// ```
/// # use std::borrow::Cow;
/// # struct Code;
/// # impl schemars::JsonSchema for Code {
/// #     fn schema_name() -> Cow<'static, str> { "Code".into() }
/// #     fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
/// #         schemars::json_schema!({ "type": "string", "maxLength": 8 })
/// #     }
/// # }
/// # impl serde::Serialize for Code {
/// #     fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> { s.serialize_str("c") }
/// # }
/// # impl<'de> serde::Deserialize<'de> for Code {
/// #     fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
/// #         <String as serde::Deserialize>::deserialize(d).map(|_| Code)
/// #     }
/// # }
/// impl agent_surface::AgentSchema for Code {}
/// impl<D> agent_surface::schema::Bounded<D> for Code {
///     const UNBOUNDED: Option<&'static str> = None;
/// }
///
/// // Usable inside an input like any other schema type.
/// use agent_surface::prelude::*;
///
/// /// An order.
/// #[agent_schema]
/// pub struct Order {
///     /// The product code.
///     pub code: Code,
/// }
///
/// struct Shop;
///
/// /// A shop.
/// #[agent_component(type = "demo.shop")]
/// impl Shop {
///     /// Orders.
///     #[action(effect = "local-state")]
///     fn order(&self, input: Order) {
///         let _ = input.code;
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot cross the agent boundary: it has no JSON Schema inside the agent-surface subset",
    label = "not an agent schema type",
    note = "annotate your own structs and enums with `#[agent_schema]`",
    note = "supported as they are: bool, integers up to 64 bits, f32, f64, char, String, Option, Vec, VecDeque, arrays, sets, Box, Arc, homogeneous tuples and serde_json::Value; 128-bit integers do not fit JSON numbers"
)]
pub trait AgentSchema: schemars::JsonSchema {
    /// Whether serde can flatten a field of this type into the object that
    /// holds it (`#[serde(flatten)]`): a struct with named fields, a map or
    /// an enum with data can; a number, string, list, tuple or an enum of
    /// unit variants cannot (serde fails every value at run time).
    /// `#[agent_schema]` checks it at compile time where a field is
    /// flattened; a hand-written implementation keeps the default.
    #[doc(hidden)]
    const FLATTENS: bool = true;

    /// The property names its values hold on the wire when flattened into
    /// another object (`#[agent_schema]` declares them for a struct with
    /// named fields; unknown, and clashing with nothing, by default).
    #[doc(hidden)]
    const WIRE_NAMES: super::WireNames = super::WireNames::NONE;

    /// [`WIRE_NAMES`](Self::WIRE_NAMES), kept for the whole program (what
    /// a type that flattens this one lists).
    #[doc(hidden)]
    const WIRE_NAMES_REF: &'static super::WireNames = &Self::WIRE_NAMES;
}

/// A type an action takes as its input: a JSON object (a struct with named
/// fields) that can be deserialized, whose strings and lists are bounded
/// or declared unbounded (`Bounded`, checked at compile time where the
/// type is taken as an input).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be an action input: tool inputs are JSON objects",
    label = "not an object input type",
    note = "use a struct with named fields annotated with `#[agent_schema]`; wrap a single value in a field, e.g. `struct Rename {{ name: String }}`",
    note = "a type annotated with `#[agent_schema(output)]` only serializes: remove `output` to take it as an input"
)]
pub trait AgentInput:
    AgentSchema
    + serde::de::DeserializeOwned
    + Send
    + 'static
    + super::bounded::Bounded<super::bounded::Deepest>
{
    /// The first unbounded field, read where the type is taken as an
    /// input (a type that is no input at all is reported once, as such).
    #[doc(hidden)]
    const UNBOUNDED_FIELD: Option<&'static str> =
        <Self as super::bounded::Bounded<super::bounded::Deepest>>::UNBOUNDED;
}

/// A type a handler may return as its output.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned to an agent",
    label = "not an agent output type",
    note = "return a type annotated with `#[agent_schema]` (or a standard type such as String, Vec<T>, bool), `()` for no output, or `Result<T, E>` with `E: Into<ActionError>`"
)]
pub trait AgentOutput: AgentSchema + serde::Serialize {}

impl<T: AgentSchema + serde::Serialize + ?Sized> AgentOutput for T {}

/// Map values the subset can describe: only untyped JSON (`additionalProperties: true`).
#[diagnostic::on_unimplemented(
    message = "maps with `{Self}` values are outside the agent-surface subset",
    label = "a typed map value needs `additionalProperties: {{schema}}`, which the subset does not allow",
    note = "use a Vec of `#[agent_schema]` entry structs with named `key` and `value` fields, or a struct with named fields, or serde_json::Value values"
)]
pub trait MapValue {}

impl MapValue for serde_json::Value {}

/// The elements of a tuple struct or tuple variant share one type: with
/// mixed types its schema needs `prefixItems`, outside the subset.
#[diagnostic::on_unimplemented(
    message = "a tuple struct or tuple variant mixing `{First}` and `{Self}` is outside the agent-surface subset",
    label = "its elements become a JSON array whose items differ in type (`prefixItems`), which the subset does not allow",
    note = "name the fields (`Reading {{ label: String, value: f64 }}`), or give every element the same type"
)]
pub trait SameField<First: ?Sized> {}

impl<T: ?Sized> SameField<T> for T {}

/// Tuple elements must share one type (then the tuple is an array of it).
#[diagnostic::on_unimplemented(
    message = "a tuple mixing `{First}` and `{Self}` is outside the agent-surface subset",
    label = "mixed tuples need `prefixItems`, which the subset does not allow",
    note = "use a struct with named fields annotated with `#[agent_schema]`, or a tuple or array whose elements share one type"
)]
pub trait SameElement<First> {}

impl<T> SameElement<T> for T {}

macro_rules! agent_schema_for {
    ($($ty:ty),* $(,)?) => { $(impl AgentSchema for $ty {
        const FLATTENS: bool = false;
    })* };
}

agent_schema_for!(
    bool,
    i8,
    i16,
    i32,
    i64,
    isize,
    u8,
    u16,
    u32,
    u64,
    usize,
    f32,
    f64,
    char,
    String,
    str,
    std::num::NonZeroU8,
    std::num::NonZeroU16,
    std::num::NonZeroU32,
    std::num::NonZeroU64,
    std::num::NonZeroI8,
    std::num::NonZeroI16,
    std::num::NonZeroI32,
    std::num::NonZeroI64,
);

// Free-form JSON flattens (the rest of the object, as a map).
impl AgentSchema for serde_json::Value {}
impl AgentSchema for serde_json::Map<String, serde_json::Value> {}
impl<T: AgentSchema> AgentSchema for Option<T> {
    const FLATTENS: bool = T::FLATTENS;
    const WIRE_NAMES: super::WireNames = T::WIRE_NAMES;
}
impl<T: AgentSchema> AgentSchema for Vec<T> {
    const FLATTENS: bool = false;
}
impl<T: AgentSchema> AgentSchema for VecDeque<T> {
    const FLATTENS: bool = false;
}
impl<T: AgentSchema> AgentSchema for [T] {
    const FLATTENS: bool = false;
}
impl<T: AgentSchema, const N: usize> AgentSchema for [T; N]
where
    Self: schemars::JsonSchema,
{
    const FLATTENS: bool = false;
}
impl<T: AgentSchema> AgentSchema for BTreeSet<T> {
    const FLATTENS: bool = false;
}
impl<T: AgentSchema, S> AgentSchema for HashSet<T, S> {
    const FLATTENS: bool = false;
}
impl<T: AgentSchema + ?Sized> AgentSchema for Box<T> {
    const FLATTENS: bool = T::FLATTENS;
    const WIRE_NAMES: super::WireNames = T::WIRE_NAMES;
}
impl<T: AgentSchema + ?Sized> AgentSchema for Arc<T> {
    const FLATTENS: bool = T::FLATTENS;
    const WIRE_NAMES: super::WireNames = T::WIRE_NAMES;
}
impl<T: AgentSchema + ?Sized> AgentSchema for &T {
    const FLATTENS: bool = T::FLATTENS;
    const WIRE_NAMES: super::WireNames = T::WIRE_NAMES;
}
impl<T: AgentSchema + ToOwned + ?Sized> AgentSchema for Cow<'_, T> {
    const FLATTENS: bool = T::FLATTENS;
    const WIRE_NAMES: super::WireNames = T::WIRE_NAMES;
}
impl<V: MapValue> AgentSchema for BTreeMap<String, V> where Self: schemars::JsonSchema {}
impl<V: MapValue, S> AgentSchema for HashMap<String, V, S> where Self: schemars::JsonSchema {}

// Tuples are arrays on the wire: `#[agent_schema]` refuses to flatten one
// where it sees it; left at the default here, so that what the compiler
// quotes of these impls stays as it reads.
impl<A: AgentSchema> AgentSchema for (A,) {}
impl<A: AgentSchema, B: SameElement<A>> AgentSchema for (A, B) where Self: schemars::JsonSchema {}
impl<A: AgentSchema, B: SameElement<A>, C: SameElement<A>> AgentSchema for (A, B, C) where
    Self: schemars::JsonSchema
{
}
impl<A: AgentSchema, B: SameElement<A>, C: SameElement<A>, D: SameElement<A>> AgentSchema
    for (A, B, C, D)
where
    Self: schemars::JsonSchema,
{
}
