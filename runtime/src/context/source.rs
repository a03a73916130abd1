//! A handler's context, made only if its handler takes one: what the
//! registry hands a component's dispatch.
//!
//! Most handlers declare no context parameter; for them nothing of the
//! call (its capability and registration ids, consumer, invocation id) is
//! copied out. A handler that takes `&ActionContext` or `&ReadContext`, or
//! any `async` handler (whose future listens on the context's cancellation
//! signal), gets the context as before.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::{ActionContext, ConfirmationEvidence, Consumer, HostContext, ReadContext};
use crate::ids::CapabilityId;

/// What an [`ActionContext`] is made of, borrowed from the call, or one
/// already made. Turned into the context by
/// [`into_context`](ContextSource::into_context) when a handler needs it.
#[doc(hidden)]
pub struct ContextSource<'a>(Source<'a>);

enum Source<'a> {
    Made(ActionContext),
    Parts(Parts<'a>),
}

/// The call's parts, borrowed.
pub(crate) struct Parts<'a> {
    pub(crate) capability_id: &'a CapabilityId,
    pub(crate) registration_id: &'a Arc<str>,
    pub(crate) consumer: &'a Consumer,
    pub(crate) host: HostContext,
    pub(crate) invocation_id: &'a Arc<str>,
    /// A navigation's signal, made by the registry; otherwise the context
    /// makes one when asked.
    pub(crate) signal: Option<CancellationToken>,
    pub(crate) evidence: Option<ConfirmationEvidence>,
}

impl<'a> ContextSource<'a> {
    /// A source the context is made from on demand.
    pub(crate) fn parts(parts: Parts<'a>) -> ContextSource<'a> {
        ContextSource(Source::Parts(parts))
    }

    /// The handler's context.
    pub fn into_context(self) -> ActionContext {
        match self.0 {
            Source::Made(ctx) => ctx,
            Source::Parts(parts) => {
                let read = ReadContext::new(
                    parts.capability_id.clone(),
                    Arc::clone(parts.registration_id),
                    Consumer::clone(parts.consumer),
                    parts.host,
                );
                let invocation_id = Arc::clone(parts.invocation_id);
                match parts.signal {
                    Some(signal) => ActionContext::new(read, invocation_id, signal, parts.evidence),
                    None => ActionContext::lazy(read, invocation_id, parts.evidence),
                }
            }
        }
    }
}

impl From<ActionContext> for ContextSource<'static> {
    fn from(ctx: ActionContext) -> ContextSource<'static> {
        ContextSource(Source::Made(ctx))
    }
}
