//! A response body that holds something until the body is done: the MCP
//! endpoint's share of the listener's connections (a permit), held for as
//! long as a request's response lives (an SSE stream, a
//! `subscriptions/listen` stream), so streams alone can never use up the
//! connections the pages beside `/mcp` need; or its connection's busy
//! state, which ends with the response.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use http_body::Frame;
use tokio::sync::OwnedSemaphorePermit;

/// `body`, holding `guard` until it ends or is dropped.
pub(in crate::mcp) struct Held<G = OwnedSemaphorePermit> {
    body: Body,
    _guard: G,
}

impl<G> Held<G> {
    pub(in crate::mcp) fn new(body: Body, guard: G) -> Held<G> {
        Held {
            body,
            _guard: guard,
        }
    }
}

impl<G: Unpin> http_body::Body for Held<G> {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}
