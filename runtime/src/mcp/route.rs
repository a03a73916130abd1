//! The `/mcp` route: a request's one way through the credential gate (with
//! [`auth`](super::McpServerBuilder::auth)), the [HTTP gate](super::http_gate)
//! and the streamable HTTP transport, each called directly by the one
//! before it. Every refusal on the way is a JSON-RPC error body.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, SessionConfig};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::auth::{AuthGate, auth_gate};
use super::http_gate::{Gate, as_json_rpc, gate, mcp_share};
use super::http_sessions::Sessions;
use super::{McpServer, McpSession};

/// The `/mcp` route of a server.
pub(super) struct McpRoute {
    transport: StreamableHttpService<McpSession, Sessions>,
    gate: Gate,
    auth: Option<AuthGate>,
}

impl McpRoute {
    /// The route of `server`, its sessions ended by `stop`. `checked_in_front`:
    /// whoever calls [`serve`](Self::serve) has refused every request whose
    /// `Origin` or `Host` (or target) is not allowed
    /// ([`OriginGate::refuse_request`](super::OriginGate::refuse_request)),
    /// so the gates do not check again; otherwise the first gate does.
    pub(super) fn new(
        server: &McpServer,
        stop: CancellationToken,
        checked_in_front: bool,
    ) -> McpRoute {
        let options = &server.shared.http;
        let mut sessions = LocalSessionManager::default();
        let mut config = SessionConfig::default();
        config.keep_alive = Some(options.session_idle);
        sessions.session_config = config;
        let sessions = Arc::new(sessions);
        let shared = Arc::clone(&server.shared);
        let served = Sessions::new(Arc::clone(&sessions), Arc::clone(&server.shared.in_flight));
        let transport = StreamableHttpService::new(
            move || Ok(McpSession::new(&shared, None)),
            Arc::new(served),
            StreamableHttpServerConfig::default()
                .with_cancellation_token(stop)
                .with_allowed_hosts(options.hosts.clone())
                .with_allowed_origins(options.origins.clone())
                .enforce_origin_validation()
                .with_max_request_body_bytes(options.max_body_bytes),
        );
        let share = mcp_share(options.max_connections);
        // The origin is checked once: in front, or by the first gate.
        let check = |here: bool| (here && !checked_in_front).then(|| server.origin_gate());
        let auth = server.shared.auth.as_ref().map(|auth| {
            AuthGate::new(
                auth.clone(),
                check(true),
                Arc::clone(&sessions),
                options.max_sessions,
                share,
            )
        });
        let gate = Gate {
            origin: check(auth.is_none()),
            sessions,
            max_sessions: options.max_sessions,
            read_timeout: options.read_timeout,
            max_body_bytes: options.max_body_bytes,
            max_id_bytes: server.shared.registry.limits().max_id_bytes,
            admission: tokio::sync::Mutex::new(()),
            ids: Arc::clone(&server.shared.in_flight),
            in_flight: Arc::new(Semaphore::new(share)),
        };
        McpRoute {
            transport,
            gate,
            auth,
        }
    }

    /// Answers `request`. The credential gate comes first: nothing of a
    /// request is interpreted before its credential.
    pub(super) async fn serve(&self, request: Request) -> Response {
        let response = match &self.auth {
            Some(auth) => auth_gate(auth, request, |request| self.gated(request)).await,
            None => self.gated(request).await,
        };
        as_json_rpc(response, None).await
    }

    async fn gated(&self, request: Request) -> Response {
        // The transport's future is large: on the heap, so that the gates'
        // futures around it stay small and moving them copies little.
        gate(&self.gate, request, |request| async move {
            Box::pin(self.transport.handle(request))
                .await
                .map(Body::new)
        })
        .await
    }
}
