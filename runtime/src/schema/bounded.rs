//! Bounded input: whether every string, list, map and free-form value an
//! agent can send into an input type carries a bound, or the author
//! declared the choice to leave it to the registry's input limit.
//!
//! `#[agent_schema]` implements [`Bounded`] for each type agents can send,
//! at every depth: at depth `Next<D>` a type's answer is its own fields'
//! and, through them, its nested types' at depth `D`, so a recursive type
//! is checked to a fixed depth ([`Deepest`], twelve types) and never forms a cycle. The
//! nested answers are where-clauses of a generic impl, so a field type that
//! is no agent schema type (an error of its own) adds no error here. The
//! component and procedure macros evaluate it for each input type at
//! compile time: an unbounded field stops the build, naming the field and
//! both fixes.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::Arc;

use std::marker::PhantomData;

/// Depth zero: a type's own fields only.
pub struct Zero;

/// One level deeper than `D`.
pub struct Next<D>(PhantomData<D>);

/// How deep the macros' checks look into nested types: twelve levels.
pub type Deepest = Next<Next<Next<Next<Next<Next<Next<Next<Next<Next<Next<Next<Zero>>>>>>>>>>>>;

/// Whether a type agents can send is bounded, looked at `D` types deep:
/// `UNBOUNDED` names the first field that is not, with the fixes.
/// Implemented by `#[agent_schema]`; by hand only beside a hand-written
/// [`AgentSchema`](super::AgentSchema).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be checked for bounds on agent input",
    label = "not a type `#[agent_schema]` declared for input",
    note = "annotate it with `#[agent_schema]` (not `output`); a hand-written `AgentSchema` implements `agent_surface::schema::Bounded` too"
)]
pub trait Bounded<D> {
    /// The first unbounded field, as the message that stops the build.
    const UNBOUNDED: Option<&'static str>;
    /// Whether the type itself is a string, list, map or free-form value:
    /// reached where the macro could not see it (through a generic
    /// parameter, a tuple, an alias), it is unbounded, and the field that
    /// holds it is named in the message.
    const UNSEEN: bool = false;
    /// Whether a `length(max = …)` on the field that holds it bounds all
    /// of it (a string's characters; not a map, free-form JSON, or a list
    /// or tuple of strings, whose inner strings stay unbounded).
    const LENGTH_BOUNDS: bool = true;
}

/// The first of `answers` that names an unbounded field.
pub const fn first_unbounded(answers: &[Option<&'static str>]) -> Option<&'static str> {
    let mut rest = answers;
    while let [first, tail @ ..] = rest {
        if let Some(message) = *first {
            return Some(message);
        }
        rest = tail;
    }
    None
}

/// What a field holding `T` answers: `unseen` (its own message, naming the
/// field) when `T` is a string or list the macro could not see, else `T`'s
/// own answer.
pub const fn field_answer(
    unseen: bool,
    field: &'static str,
    answer: Option<&'static str>,
) -> Option<&'static str> {
    if unseen { Some(field) } else { answer }
}

/// What a field holding `T` answers when the field carries a
/// `length(max = …)`: bounded when that bounds all of `T`, else `refused`
/// (naming the field), and `T`'s own answer for a schema type.
pub const fn field_answer_with_length(
    unseen: bool,
    length_bounds: bool,
    refused: &'static str,
    answer: Option<&'static str>,
) -> Option<&'static str> {
    match (unseen, length_bounds) {
        (true, true) => None,
        (true, false) => Some(refused),
        (false, _) => answer,
    }
}

/// The answer of a string, list, map or free-form value reached unseen.
const UNSEEN: Option<&'static str> = Some(
    "a string, list, map or free-form JSON value reached through a generic parameter, a tuple or an alias has no bound: bound the field that holds it (`#[schemars(length(max = …))]`, `inner(length(max = …))` for a list's items) or mark that field `#[agent_schema(unbounded)]`",
);

macro_rules! bounded_leaf {
    ($($ty:ty),* $(,)?) => {
        $(impl<D> Bounded<D> for $ty {
            const UNBOUNDED: Option<&'static str> = None;
        })*
    };
}

macro_rules! unseen_leaf {
    ($($ty:ty),* $(,)?) => {
        $(impl<D> Bounded<D> for $ty {
            const UNBOUNDED: Option<&'static str> = UNSEEN;
            const UNSEEN: bool = true;
        })*
    };
}

// Scalars: a range bounds them, and they are small whatever they hold.
bounded_leaf!(
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
    std::num::NonZeroU8,
    std::num::NonZeroU16,
    std::num::NonZeroU32,
    std::num::NonZeroU64,
    std::num::NonZeroI8,
    std::num::NonZeroI16,
    std::num::NonZeroI32,
    std::num::NonZeroI64,
    (),
    // Outside the subset (reported where they are written), never twice.
    u128,
    i128,
);

// Strings and free-form values: bounded only by their field's attributes,
// which the macro reads where it sees them.
unseen_leaf!(String, str);

macro_rules! unseen_free_form {
    ($($ty:ty),* $(,)?) => {
        $(impl<D> Bounded<D> for $ty {
            const UNBOUNDED: Option<&'static str> = UNSEEN;
            const UNSEEN: bool = true;
            const LENGTH_BOUNDS: bool = false;
        })*
    };
}

// Free-form values: no schema keyword bounds them.
unseen_free_form!(serde_json::Value, serde_json::Map<String, serde_json::Value>);

macro_rules! bounded_wrapper {
    ($($ty:ty),* $(,)?) => {
        $(impl<T: Bounded<D> + ?Sized, D> Bounded<D> for $ty {
            const UNBOUNDED: Option<&'static str> = T::UNBOUNDED;
            const UNSEEN: bool = T::UNSEEN;
            const LENGTH_BOUNDS: bool = T::LENGTH_BOUNDS;
        })*
    };
}

// Wrappers: what they wrap decides.
bounded_wrapper!(Box<T>, Arc<T>, &T);

impl<T: Bounded<D>, D> Bounded<D> for Option<T> {
    const UNBOUNDED: Option<&'static str> = T::UNBOUNDED;
    const UNSEEN: bool = T::UNSEEN;
    const LENGTH_BOUNDS: bool = T::LENGTH_BOUNDS;
}

impl<T: Bounded<D> + ToOwned + ?Sized, D> Bounded<D> for Cow<'_, T> {
    const UNBOUNDED: Option<&'static str> = T::UNBOUNDED;
    const UNSEEN: bool = T::UNSEEN;
    const LENGTH_BOUNDS: bool = T::LENGTH_BOUNDS;
}

macro_rules! unseen_collection {
    ($($ty:ty),* $(,)?) => {
        $(impl<T: Bounded<D>, D> Bounded<D> for $ty {
            const UNBOUNDED: Option<&'static str> = UNSEEN;
            const UNSEEN: bool = true;
            const LENGTH_BOUNDS: bool = !T::UNSEEN;
        })*
    };
}

// Lists and maps: their length is their field's to bound.
unseen_collection!(Vec<T>, VecDeque<T>, [T], BTreeSet<T>);

impl<V, D> Bounded<D> for BTreeMap<String, V> {
    const UNBOUNDED: Option<&'static str> = UNSEEN;
    const UNSEEN: bool = true;
    const LENGTH_BOUNDS: bool = false;
}

impl<T: Bounded<D>, S, D> Bounded<D> for HashSet<T, S> {
    const UNBOUNDED: Option<&'static str> = UNSEEN;
    const UNSEEN: bool = true;
    const LENGTH_BOUNDS: bool = !T::UNSEEN;
}
impl<V, S, D> Bounded<D> for HashMap<String, V, S> {
    const UNBOUNDED: Option<&'static str> = UNSEEN;
    const UNSEEN: bool = true;
    const LENGTH_BOUNDS: bool = false;
}
// A fixed-size array: its items decide.
impl<T: Bounded<D>, D, const L: usize> Bounded<D> for [T; L] {
    const UNBOUNDED: Option<&'static str> = T::UNBOUNDED;
    const UNSEEN: bool = T::UNSEEN;
    const LENGTH_BOUNDS: bool = !T::UNSEEN;
}
// Tuples: their elements decide (no attribute can bound an element).
impl<A: Bounded<D>, D> Bounded<D> for (A,) {
    const UNBOUNDED: Option<&'static str> = A::UNBOUNDED;
    const UNSEEN: bool = A::UNSEEN;
    const LENGTH_BOUNDS: bool = !A::UNSEEN;
}
impl<A: Bounded<D>, B: Bounded<D>, D> Bounded<D> for (A, B) {
    const UNBOUNDED: Option<&'static str> = first_unbounded(&[A::UNBOUNDED, B::UNBOUNDED]);
    const UNSEEN: bool = A::UNSEEN || B::UNSEEN;
    const LENGTH_BOUNDS: bool = !(A::UNSEEN || B::UNSEEN);
}
impl<A: Bounded<D>, B: Bounded<D>, C: Bounded<D>, D> Bounded<D> for (A, B, C) {
    const UNBOUNDED: Option<&'static str> =
        first_unbounded(&[A::UNBOUNDED, B::UNBOUNDED, C::UNBOUNDED]);
    const UNSEEN: bool = A::UNSEEN || B::UNSEEN || C::UNSEEN;
    const LENGTH_BOUNDS: bool = !(A::UNSEEN || B::UNSEEN || C::UNSEEN);
}
impl<A: Bounded<L>, B: Bounded<L>, C: Bounded<L>, E: Bounded<L>, L> Bounded<L> for (A, B, C, E) {
    const UNBOUNDED: Option<&'static str> =
        first_unbounded(&[A::UNBOUNDED, B::UNBOUNDED, C::UNBOUNDED, E::UNBOUNDED]);
    const UNSEEN: bool = A::UNSEEN || B::UNSEEN || C::UNSEEN || E::UNSEEN;
    const LENGTH_BOUNDS: bool = !(A::UNSEEN || B::UNSEEN || C::UNSEEN || E::UNSEEN);
}
