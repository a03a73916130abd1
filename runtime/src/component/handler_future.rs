//! The handler future: what a component's dispatch hands the pipeline for
//! one call — the outcome of a synchronous handler that already ran (no
//! allocation), or the boxed future of an `async` one.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::HandlerOutcome;
use crate::error::ActionError;
use tokio_util::sync::CancellationToken;

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
    Boxed(
        Pin<Box<dyn Future<Output = HandlerOutcome> + Send + 'static>>,
        Option<CancellationToken>,
    ),
}

impl HandlerFuture {
    /// A handler that already settled with `outcome`.
    pub fn ready(outcome: HandlerOutcome) -> HandlerFuture {
        HandlerFuture(State::Ready(Some(outcome)))
    }

    /// A handler still to run: `future`, boxed. Nothing signals it when
    /// the call is interrupted (see [`cancellable`](Self::cancellable)).
    pub fn boxed<F>(future: F) -> HandlerFuture
    where
        F: Future<Output = HandlerOutcome> + Send + 'static,
    {
        HandlerFuture(State::Boxed(Box::pin(future), None))
    }

    /// A handler still to run, listening on `cancellation` (its context's
    /// [`cancellation`](crate::context::ActionContext::cancellation)): the
    /// registry fires it when the call times out, is cancelled or its
    /// component is unmounted.
    pub fn cancellable<F>(future: F, cancellation: CancellationToken) -> HandlerFuture
    where
        F: Future<Output = HandlerOutcome> + Send + 'static,
    {
        HandlerFuture(State::Boxed(Box::pin(future), Some(cancellation)))
    }

    /// The signal of a [`cancellable`](Self::cancellable) handler.
    pub(crate) fn cancellation(&self) -> Option<&CancellationToken> {
        match &self.0 {
            State::Boxed(_, cancellation) => cancellation.as_ref(),
            State::Ready(_) => None,
        }
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
            State::Boxed(future, _) => future.as_mut().poll(cx),
        }
    }
}

impl fmt::Debug for HandlerFuture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            State::Ready(Some(_)) => "HandlerFuture::Ready",
            State::Ready(None) => "HandlerFuture::Taken",
            State::Boxed(..) => "HandlerFuture::Boxed",
        })
    }
}
