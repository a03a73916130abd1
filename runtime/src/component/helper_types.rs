//! The return types of the helper methods an attribute names, checked by
//! the compiler where the user wrote them: a precondition's result, the
//! input it borrows, and the text of an `unavailable_reason = method`.

use crate::error::PreconditionFailure;

/// What a precondition returns. Only `Result<(), PreconditionFailure>`: the
/// failure's text is the reason the agent reads.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a precondition result",
    label = "a precondition returns `Result<(), PreconditionFailure>`",
    note = "return `Ok(())` to let the call go on, or `Err(PreconditionFailure::new(\"…\"))` with the reason the agent reads"
)]
pub trait PreconditionResult {
    /// The result the pipeline uses.
    fn into_result(self) -> Result<(), PreconditionFailure>;
}

impl PreconditionResult for Result<(), PreconditionFailure> {
    fn into_result(self) -> Result<(), PreconditionFailure> {
        self
    }
}

/// The action's input as the type a precondition borrows: the same type.
#[diagnostic::on_unimplemented(
    message = "the precondition borrows `{Expected}`, but the action's input is `{Self}`",
    label = "a precondition borrows the input of its action: write `&{Self}` here"
)]
pub trait SameInput<Expected: ?Sized> {
    /// The input, as the expected type.
    fn same(&self) -> &Expected;
}

impl<T: ?Sized> SameInput<T> for T {
    fn same(&self) -> &T {
        self
    }
}

/// What an `unavailable_reason = method` returns: text.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be an unavailable reason",
    label = "an unavailable reason method returns the text the agent reads: `String`, `&'static str` or `Cow<'static, str>`"
)]
pub trait ReasonText {
    /// The text.
    fn into_text(self) -> String;
}

impl ReasonText for String {
    fn into_text(self) -> String {
        self
    }
}

impl ReasonText for &str {
    fn into_text(self) -> String {
        self.to_owned()
    }
}

impl ReasonText for std::borrow::Cow<'_, str> {
    fn into_text(self) -> String {
        self.into_owned()
    }
}

impl ReasonText for Box<str> {
    fn into_text(self) -> String {
        self.into()
    }
}
