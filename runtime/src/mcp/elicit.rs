//! An elicitation the server withdraws when the call it asks for stops
//! waiting: the call was answered in the application, expired, or was
//! cancelled by the client. The client is sent `notifications/cancelled`
//! for the elicitation request, so its dialog closes instead of asking the
//! person about a call that is gone, and the transport forgets the request
//! (a client that never answers it holds nothing).

use rmcp::RoleServer;
use rmcp::model::{
    CancelledNotificationParam, ClientResult, ElicitRequest, ElicitRequestParams, ElicitResult,
    RequestId, ServerRequest,
};
use rmcp::service::{Peer, PeerRequestOptions};

/// Asks the client's person through `peer`: the answer, or `None` when the
/// client failed or the session ended. Dropped before an answer (the call
/// no longer waits), the request is withdrawn.
pub(super) async fn elicit(
    peer: &Peer<RoleServer>,
    params: ElicitRequestParams,
) -> Option<ElicitResult> {
    let request = ServerRequest::ElicitRequest(ElicitRequest::new(params));
    let handle = peer
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .ok()?;
    let mut asked = Asked {
        peer: peer.clone(),
        id: Some(handle.id.clone()),
    };
    let answer = handle.rx.await;
    // Answered, or the session is gone: nothing to withdraw.
    asked.id = None;
    match answer {
        Ok(Ok(ClientResult::ElicitResult(result))) => Some(result),
        _ => None,
    }
}

/// An elicitation request not answered yet.
struct Asked {
    peer: Peer<RoleServer>,
    id: Option<RequestId>,
}

impl Drop for Asked {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        // Notifications go out through the session's loop: sent from a
        // task of its own, so nothing here waits.
        runtime.spawn(async move {
            let withdrawn = CancelledNotificationParam::new(
                Some(id),
                Some("the call no longer waits for this answer".to_owned()),
            );
            let _ = peer.notify_cancelled(withdrawn).await;
        });
    }
}
