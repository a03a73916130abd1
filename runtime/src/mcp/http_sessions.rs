//! The HTTP sessions of the `/mcp` route: rmcp's local sessions, each
//! served through a transport that hands rmcp the client's requests under
//! ids of its own (`own_ids.rs`) and holds each request's id in its
//! session ([`InFlight::hold`]) until the request's answer has been routed
//! to its stream, or the client cancelled it.
//!
//! rmcp's session routes an answer to the stream of the request it holds
//! under the answer's id, and rmcp's service pairs it with the request
//! it holds under that id. Without both, a call whose client cancelled it
//! or stopped reading it could, on finishing, be routed to a new request
//! the client sent under the same id in the instant after the call's
//! handler returned: the gate lets an id in again once no one holds it.
//! Now the late answer of a cancelled request names a request no longer
//! in flight and is not sent, and an answered request's id is free only
//! once its answer is on its stream.

use std::sync::Arc;

use futures_util::future::Either;
use futures_util::{FutureExt as _, Stream};
use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::WorkerTransport;
use rmcp::transport::common::server_side_http::{ServerSseMessage, SessionId};
use rmcp::transport::streamable_http_server::session::EventStore;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
};
use rmcp::transport::streamable_http_server::session::{RestoreOutcome, SessionManager};

use super::in_flight::{Hold, InFlight};
use super::own_ids::{Outgoing, OwnIds};

/// rmcp's local sessions, each served under ids of its own.
pub(super) struct Sessions {
    local: Arc<LocalSessionManager>,
    ids: Arc<InFlight>,
}

impl Sessions {
    /// The sessions of `local`, their requests' ids held in `ids`.
    pub(super) fn new(local: Arc<LocalSessionManager>, ids: Arc<InFlight>) -> Sessions {
        Sessions { local, ids }
    }

    fn served<T>(&self, session: SessionId, inner: T) -> Renamed<T> {
        Renamed {
            local: inner,
            session,
            table: Arc::clone(&self.ids),
            ids: OwnIds::new(),
        }
    }
}

impl SessionManager for Sessions {
    type Error = LocalSessionManagerError;
    type Transport = Renamed<WorkerTransport<LocalSessionWorker>>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (session, inner) = self.local.create_session().await?;
        let served = self.served(Arc::clone(&session), inner);
        Ok((session, served))
    }

    // Each of these is the local sessions' own future, not one around it
    // (no state of its own to move).
    fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<ServerJsonRpcMessage, Self::Error>> + Send {
        self.local.initialize_session(id, message)
    }

    fn has_session(
        &self,
        id: &SessionId,
    ) -> impl Future<Output = Result<bool, Self::Error>> + Send {
        self.local.has_session(id)
    }

    fn close_session(
        &self,
        id: &SessionId,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.local.close_session(id)
    }

    fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> impl Future<
        Output = Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>,
    > + Send {
        self.local.create_stream(id, message)
    }

    fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.local.accept_message(id, message)
    }

    fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> impl Future<
        Output = Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>,
    > + Send {
        self.local.create_standalone_stream(id)
    }

    fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> impl Future<
        Output = Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>,
    > + Send {
        self.local.resume(id, last_event_id)
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        Ok(match self.local.restore_session(Arc::clone(&id)).await? {
            RestoreOutcome::Restored(inner) => RestoreOutcome::Restored(self.served(id, inner)),
            RestoreOutcome::AlreadyPresent => RestoreOutcome::AlreadyPresent,
            _ => RestoreOutcome::NotSupported,
        })
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.local.event_store()
    }
}

/// A session's transport with the client's requests under ids of its own.
pub(super) struct Renamed<T> {
    /// The local session's transport.
    local: T,
    session: SessionId,
    table: Arc<InFlight>,
    /// Each request in flight holds its client's id in the session.
    ids: OwnIds<Hold>,
}

impl<T> Transport<RoleServer> for Renamed<T>
where
    T: Transport<RoleServer>,
{
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let mut item = item;
        let held = match self.ids.outgoing(&mut item) {
            Outgoing::Answer { held, .. } => Some(held),
            // A late answer to a request the client cancelled: not sent.
            Outgoing::Nobodys => return Either::Right(std::future::ready(Ok(()))),
            Outgoing::Other => None,
        };
        // The local session's own send future, with the hold dropped once it is
        // done (the session has routed the answer: its id is free). No
        // state of its own: rmcp moves the future into a task.
        Either::Left(self.local.send(item).map(move |sent| {
            drop(held);
            sent
        }))
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let mut message = self.local.receive().await?;
            let passes = match &mut message {
                JsonRpcMessage::Request(request) => {
                    let held = self
                        .table
                        .hold(Arc::clone(&self.session), request.id.clone());
                    self.ids.take(request, held);
                    true
                }
                _ => self.ids.incoming(&mut message),
            };
            if passes {
                return Some(message);
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.local.close()
    }
}
