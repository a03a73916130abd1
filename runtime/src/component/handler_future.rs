//! The handler future: what a component's dispatch hands the pipeline for
//! one call — the outcome of a synchronous handler that already ran (no
//! allocation), or the boxed future of an `async` one.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::HandlerOutcome;
use crate::error::ActionError;

/// The future of one handler call, settling with its [`HandlerOutcome`].
///
/// Generated dispatch builds it: a synchronous handler runs at once and its
/// outcome is [`ready`](Self::ready); an `async` one is [`boxed`](Self::boxed)
/// and runs when the pipeline polls it (against its timeout, cancellation
/// and unmount).
#[must_use = "a handler future does nothing unless polled"]
pub struct HandlerFuture(State);

enum State {
    Ready(Option<HandlerOutcome>),
    Boxed(Pin<Box<dyn Future<Output = HandlerOutcome> + Send + 'static>>),
}

impl HandlerFuture {
    /// A handler that already settled with `outcome`.
    pub fn ready(outcome: HandlerOutcome) -> HandlerFuture {
        HandlerFuture(State::Ready(Some(outcome)))
    }

    /// A handler still to run: `future`, boxed.
    pub fn boxed<F>(future: F) -> HandlerFuture
    where
        F: Future<Output = HandlerOutcome> + Send + 'static,
    {
        HandlerFuture(State::Boxed(Box::pin(future)))
    }
}

impl Future for HandlerFuture {
    type Output = HandlerOutcome;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<HandlerOutcome> {
        match &mut self.0 {
            State::Ready(outcome) => Poll::Ready(outcome.take().unwrap_or_else(|| {
                Err(ActionError::failed(
                    "internal: a settled handler future was polled again",
                ))
            })),
            State::Boxed(future) => future.as_mut().poll(cx),
        }
    }
}

impl fmt::Debug for HandlerFuture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            State::Ready(Some(_)) => "HandlerFuture::Ready",
            State::Ready(None) => "HandlerFuture::Taken",
            State::Boxed(_) => "HandlerFuture::Boxed",
        })
    }
}
