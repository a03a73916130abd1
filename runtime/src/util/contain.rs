//! Containment of host-, policy- and component-supplied code: a callback or
//! a destructor that panics is logged and never unwinds into the registry.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// What a contained panic said; its payload is already disposed of.
#[derive(Debug)]
pub struct Panicked {
    /// The panic message (or a note that the payload was not a string).
    pub message: String,
}

/// Runs `f`, catching a panic. The payload never outlives this call: its
/// message is read and the payload dropped contained, so a payload
/// whose own destructor panics cannot unwind out of the containment.
pub fn catch<T>(f: impl FnOnce() -> T) -> Result<T, Panicked> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| Panicked {
        message: dispose(payload),
    })
}

/// Reads a panic payload's message and drops the payload contained: a
/// payload whose destructor panics again is forgotten instead (its own
/// payload could do the same, without end).
pub(crate) fn dispose(payload: Box<dyn Any + Send>) -> String {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string panic payload".to_owned());
    if let Err(nested) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        std::mem::forget(nested);
    }
    message
}

/// Runs `f`, turning a panic into `None` (logged with `what`).
pub(crate) fn contained<T>(what: &'static str, f: impl FnOnce() -> T) -> Option<T> {
    match catch(f) {
        Ok(value) => Some(value),
        Err(_) => {
            tracing::error!(
                callback = what,
                "a host-supplied callback panicked; contained"
            );
            None
        }
    }
}

/// Drops `value` with a panicking destructor contained. Call it after every
/// lock is released: a destructor may itself unmount other components.
pub fn drop_contained<T>(what: &'static str, value: T) {
    contained(what, move || drop(value));
}

/// An owned value whose drop is contained (held by in-flight calls, which
/// may be the last owner of a component that was unmounted meanwhile).
pub(crate) struct Contained<T> {
    value: Option<T>,
    what: &'static str,
}

impl<T> Contained<T> {
    pub(crate) fn new(what: &'static str, value: T) -> Contained<T> {
        Contained {
            value: Some(value),
            what,
        }
    }
}

impl<T> std::ops::Deref for Contained<T> {
    type Target = T;

    fn deref(&self) -> &T {
        match &self.value {
            Some(value) => value,
            None => unreachable!("the value is taken only by the destructor"),
        }
    }
}

/// A contained future polls the future it holds.
impl<F: std::future::Future + Unpin> std::future::Future for Contained<F> {
    type Output = F::Output;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<F::Output> {
        match self.value.as_mut() {
            Some(future) => std::pin::Pin::new(future).poll(cx),
            None => std::task::Poll::Pending,
        }
    }
}

impl<T> Drop for Contained<T> {
    fn drop(&mut self) {
        if let Some(value) = self.value.take() {
            drop_contained(self.what, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Bomb;
    impl Drop for Bomb {
        fn drop(&mut self) {
            panic!("boom");
        }
    }

    #[test]
    fn panicking_destructors_are_contained() {
        drop_contained("test", Bomb);
        drop(Contained::new("test", Bomb));
        assert_eq!(contained("test", || 7), Some(7));
        assert_eq!(contained("test", || -> u8 { panic!("no") }), None);
    }
}
