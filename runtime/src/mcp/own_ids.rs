//! The ids rmcp knows a client's requests by.
//!
//! A transport between a client and rmcp hands rmcp each request under
//! an id of its own (a counter, never used twice); the client's id rides
//! in the request's extensions ([`ClientId`]), and rmcp's answer goes
//! back under it. rmcp pairs an answer with whatever request it holds
//! under the answer's id, and its session routes the answer the same
//! way: under the client's ids, the late answer of a request the client
//! cancelled (or stopped reading) could go to a new request the client
//! sent under the same id. Under ids of the transport's own it names a
//! request no longer in flight: it is nobody's and is not sent.
//!
//! The line transport (`lines.rs`) and each HTTP session's transport
//! (`http_sessions.rs`) keep one table each.

use std::collections::HashMap;

use rmcp::RoleServer;
use rmcp::model::{
    ClientNotification, ClientRequest, GetExtensions as _, GetMeta as _, JsonRpcMessage,
    JsonRpcRequest, NumberOrString, RequestId, ServerResult,
};
use rmcp::service::{OriginatingRequestId, RequestContext, RxJsonRpcMessage, TxJsonRpcMessage};

/// The id a request was sent under by the client, in its extensions.
#[derive(Clone, Debug)]
pub(super) struct ClientId(pub(super) RequestId);

impl ClientId {
    /// The client's id of the request `context` handles.
    pub(super) fn of(context: &RequestContext<RoleServer>) -> &RequestId {
        context
            .extensions
            .get::<ClientId>()
            .map_or(&context.id, |client| &client.0)
    }
}

/// One client's requests in flight (not answered, not cancelled), each
/// with what it holds (`H`) until then.
pub(super) struct OwnIds<H> {
    /// rmcp's id of each request in flight, by the client's.
    by_client: HashMap<RequestId, i64>,
    /// The client's id of each request in flight and what it holds, by
    /// rmcp's.
    by_own: HashMap<i64, (RequestId, H)>,
    /// The id the next request is given.
    next: i64,
}

/// What a message rmcp sends is, once renamed.
pub(super) enum Outgoing<H> {
    /// The answer to the request rmcp knows as `own`, now under the
    /// client's id, with what the request held.
    Answer {
        /// rmcp's id of the request.
        own: i64,
        /// What the request held until its answer.
        held: H,
    },
    /// It names a request no longer in flight: nobody's, not to be sent.
    Nobodys,
    /// Anything else, to be sent.
    Other,
}

impl<H> OwnIds<H> {
    /// A table with nothing in flight.
    pub(super) fn new() -> OwnIds<H> {
        OwnIds {
            by_client: HashMap::new(),
            by_own: HashMap::new(),
            next: 0,
        }
    }

    /// How many requests are in flight.
    pub(super) fn len(&self) -> usize {
        self.by_own.len()
    }

    /// Whether the client has a request under `client` in flight.
    pub(super) fn contains(&self, client: &RequestId) -> bool {
        self.by_client.contains_key(client)
    }

    /// Takes `request` in flight under an id of the table's own, holding
    /// `held` until it is answered or cancelled. A request of the client's
    /// still in flight under the same id is no longer: its answer will be
    /// nobody's.
    pub(super) fn take(&mut self, request: &mut JsonRpcRequest<ClientRequest>, held: H) -> i64 {
        let own = self.next;
        self.next = self.next.wrapping_add(1);
        let client = std::mem::replace(&mut request.id, NumberOrString::Number(own));
        if let Some(older) = self.by_client.insert(client.clone(), own) {
            self.by_own.remove(&older);
        }
        request
            .request
            .extensions_mut()
            .insert(ClientId(client.clone()));
        self.by_own.insert(own, (client, held));
        own
    }

    /// Whether `message`, a notification or an answer of the client's,
    /// goes on to rmcp. A cancel goes renamed to rmcp's id of the request
    /// it names, and only if that request is in flight
    /// ([`cancel`](Self::cancel)). An answer goes only under an id of the
    /// kind rmcp gives its own requests, a number: rmcp would take a
    /// string of digits for one (`"0"` answering its request `0`), which
    /// in JSON-RPC is another id.
    pub(super) fn incoming(&mut self, message: &mut RxJsonRpcMessage<RoleServer>) -> bool {
        match message {
            JsonRpcMessage::Notification(notification) => {
                self.cancel(&mut notification.notification)
            }
            JsonRpcMessage::Response(response) => {
                matches!(response.id, NumberOrString::Number(_))
            }
            JsonRpcMessage::Error(error) => !matches!(error.id, Some(NumberOrString::String(_))),
            JsonRpcMessage::Request(_) => true,
        }
    }

    /// Renames the cancellation `notification` to rmcp's id of the request
    /// it names, which is no longer in flight (the client's id is free at
    /// once; what it held is dropped). `false`: it names no request in
    /// flight, and must not reach rmcp (under the client's id it would name
    /// another request of rmcp's).
    fn cancel(&mut self, notification: &mut ClientNotification) -> bool {
        let ClientNotification::CancelledNotification(cancelled) = notification else {
            return true;
        };
        let Some(client) = &cancelled.params.request_id else {
            return true;
        };
        let Some(own) = self.by_client.remove(client) else {
            return false;
        };
        self.by_own.remove(&own);
        cancelled.params.request_id = Some(NumberOrString::Number(own));
        true
    }

    /// The client's id of the request rmcp knows as `own`, while in flight.
    fn client_of(&self, own: Option<&RequestId>) -> Option<RequestId> {
        match own? {
            NumberOrString::Number(own) => self.by_own.get(own).map(|(client, _)| client.clone()),
            NumberOrString::String(_) => None,
        }
    }

    /// Renames what `item` says of the client's requests to the client's
    /// ids: an answer's id (the request is then no longer in flight), the
    /// subscription a listen stream's notifications and result name, the
    /// request a request of the server's is asked for.
    pub(super) fn outgoing(&mut self, item: &mut TxJsonRpcMessage<RoleServer>) -> Outgoing<H> {
        match item {
            JsonRpcMessage::Notification(notification) => {
                // Read first: asking for the metadata to change adds an
                // empty `_meta` to a notification that has none.
                if let Some(own) = notification.notification.get_meta().subscription_id() {
                    // A stream the client cancelled (its handler winding
                    // down) is nobody's.
                    match self.client_of(Some(&own)) {
                        Some(client) => notification
                            .notification
                            .get_meta_mut()
                            .set_subscription_id(client),
                        None => return Outgoing::Nobodys,
                    }
                }
                Outgoing::Other
            }
            JsonRpcMessage::Request(request) => {
                let extensions = request.request.extensions_mut();
                if let Some(originating) = extensions.get_mut::<OriginatingRequestId>() {
                    // Asked for a request no longer in flight: on no
                    // request's stream.
                    match self.client_of(Some(&originating.0)) {
                        Some(client) => originating.0 = client,
                        None => {
                            extensions.remove::<OriginatingRequestId>();
                        }
                    }
                }
                Outgoing::Other
            }
            JsonRpcMessage::Response(response) => {
                if let ServerResult::SubscriptionsListenResult(result) = &mut response.result
                    && let Some(client) = self.client_of(result.meta.subscription_id().as_ref())
                {
                    result.meta.set_subscription_id(client);
                }
                self.answered(&mut response.id)
            }
            JsonRpcMessage::Error(error) => match &mut error.id {
                Some(id) => self.answered(id),
                None => Outgoing::Other,
            },
        }
    }

    /// The answer under `id` back under the client's id.
    fn answered(&mut self, id: &mut RequestId) -> Outgoing<H> {
        let NumberOrString::Number(own) = *id else {
            return Outgoing::Nobodys;
        };
        let Some((client, held)) = self.by_own.remove(&own) else {
            return Outgoing::Nobodys;
        };
        self.by_client.remove(&client);
        *id = client;
        Outgoing::Answer { own, held }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{
        CancelledNotification, CancelledNotificationParam, ClientJsonRpcMessage, EmptyResult,
        ServerJsonRpcMessage,
    };

    fn request(id: RequestId) -> JsonRpcRequest<ClientRequest> {
        let message: ClientJsonRpcMessage = serde_json::from_value(serde_json::json!({
            "jsonrpc": "2.0", "id": id, "method": "ping"
        }))
        .expect("a ping");
        match message {
            JsonRpcMessage::Request(request) => request,
            _ => unreachable!("a request"),
        }
    }

    fn cancel(id: RequestId) -> ClientNotification {
        ClientNotification::CancelledNotification(CancelledNotification::new(
            CancelledNotificationParam::new(Some(id), None),
        ))
    }

    fn answer(own: i64) -> ServerJsonRpcMessage {
        ServerJsonRpcMessage::response(
            ServerResult::EmptyResult(EmptyResult {}),
            NumberOrString::Number(own),
        )
    }

    #[test]
    fn a_cancelled_requests_late_answer_never_reaches_a_new_request_under_its_id() {
        let mut ids = OwnIds::new();
        let client = NumberOrString::Number(7);
        let mut first = request(client.clone());
        let first_own = ids.take(&mut first, "first");
        assert_eq!(
            first
                .request
                .extensions()
                .get::<ClientId>()
                .map(|id| id.0.clone()),
            Some(client.clone())
        );
        let mut cancelled = cancel(client.clone());
        assert!(ids.cancel(&mut cancelled));
        assert!(!ids.contains(&client), "free at once");
        let mut second = request(client.clone());
        let second_own = ids.take(&mut second, "second");
        assert_ne!(first_own, second_own);
        let mut late = answer(first_own);
        assert!(matches!(ids.outgoing(&mut late), Outgoing::Nobodys));
        let mut own = answer(second_own);
        assert!(matches!(
            ids.outgoing(&mut own),
            Outgoing::Answer { held: "second", .. }
        ));
        let JsonRpcMessage::Response(own) = own else {
            unreachable!("a response")
        };
        assert_eq!(own.id, client);
        assert_eq!(ids.len(), 0);
    }

    #[test]
    fn an_answer_reaches_rmcp_only_under_a_number_as_rmcp_gives_its_requests() {
        let mut ids = OwnIds::<()>::new();
        let mut passes = |answer: serde_json::Value| {
            let mut message: ClientJsonRpcMessage =
                serde_json::from_value(answer).expect("a client message");
            ids.incoming(&mut message)
        };
        assert!(passes(
            serde_json::json!({"jsonrpc": "2.0", "id": 0, "result": {}})
        ));
        assert!(!passes(
            serde_json::json!({"jsonrpc": "2.0", "id": "0", "result": {}})
        ));
        let error = serde_json::json!({"code": -1, "message": "no"});
        assert!(passes(
            serde_json::json!({"jsonrpc": "2.0", "id": 0, "error": error})
        ));
        assert!(!passes(
            serde_json::json!({"jsonrpc": "2.0", "id": "0", "error": error})
        ));
    }

    #[test]
    fn a_notification_without_metadata_goes_out_as_it_came() {
        let mut ids = OwnIds::<()>::new();
        let mut changed = ServerJsonRpcMessage::notification(
            rmcp::model::ServerNotification::ToolListChangedNotification(Default::default()),
        );
        assert!(matches!(ids.outgoing(&mut changed), Outgoing::Other));
        assert_eq!(
            serde_json::to_value(&changed).expect("serializable"),
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        );
    }

    #[test]
    fn a_cancel_that_names_nothing_in_flight_does_not_reach_rmcp() {
        let mut ids = OwnIds::<()>::new();
        let mut taken = request(NumberOrString::Number(0));
        let own = ids.take(&mut taken, ());
        // The client's 5 is not in flight; rmcp's 0 is, and a cancel of
        // the client's 0 reaches it under rmcp's id.
        assert!(!ids.cancel(&mut cancel(NumberOrString::Number(5))));
        let mut named = cancel(NumberOrString::Number(0));
        assert!(ids.cancel(&mut named));
        let ClientNotification::CancelledNotification(named) = named else {
            unreachable!("a cancel")
        };
        assert_eq!(named.params.request_id, Some(NumberOrString::Number(own)));
    }

    #[test]
    fn a_request_of_the_servers_names_the_clients_request_it_is_asked_for() {
        let mut ids = OwnIds::new();
        let mut taken = request(NumberOrString::String("call-1".into()));
        let own = ids.take(&mut taken, ());
        let asked = |originating: i64| {
            let mut ping = rmcp::model::ServerRequest::PingRequest(Default::default());
            ping.extensions_mut()
                .insert(OriginatingRequestId(NumberOrString::Number(originating)));
            ServerJsonRpcMessage::request(ping, NumberOrString::Number(0))
        };
        let originating = |message: &ServerJsonRpcMessage| match message {
            JsonRpcMessage::Request(request) => request
                .request
                .extensions()
                .get::<OriginatingRequestId>()
                .map(|id| id.0.clone()),
            _ => None,
        };
        let mut in_flight = asked(own);
        assert!(matches!(ids.outgoing(&mut in_flight), Outgoing::Other));
        assert_eq!(
            originating(&in_flight),
            Some(NumberOrString::String("call-1".into()))
        );
        let mut gone = asked(own + 1);
        assert!(matches!(ids.outgoing(&mut gone), Outgoing::Other));
        assert_eq!(originating(&gone), None, "on no request's stream");
    }
}
