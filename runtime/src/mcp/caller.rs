//! Who a request acts as. An identity comes only from something the server
//! issued and still holds, never from what a client claims:
//!
//! - **Session**: a transport session (stdio, a socket) or an HTTP session
//!   is its own consumer (`mcp:session-<n>-…`), issued with the session and
//!   forgotten when it ends — its view, its settled dedupe records and its
//!   open confirmations. A session id the server no longer holds is a 404
//!   at the transport, before any handler runs.
//! - **Credential**: with [`auth`](super::McpServerBuilder::auth), the
//!   identity of the request's bearer token (`mcp:auth-<subject>-<hash>`),
//!   evaluated with that identity's host context; it acts as a principal.
//! - **Principal**: the [`identify`](super::McpServerBuilder::identify)
//!   hook's answer for an HTTP request (the authenticated user).
//! - **Anonymous**: a 2026-07-28 HTTP request has no session. Without a
//!   hook, each request is its own consumer (`mcp:http-<n>-…`); an
//!   `Mcp-Session-Id` it carries is ignored. What spans requests is a token
//!   the server issued to that caller alone: the confirmation id of a
//!   two-phase call (or the secret `requestState` of an input request)
//!   carries the identity that was asked, so the caller that received it can
//!   present it — an unguessable, single-use capability bound to the exact
//!   tool and input. A principal's input request is answerable by that
//!   principal only. Anonymous callers together hold at most
//!   `max_pending_confirmations_per_consumer` open confirmations; the
//!   oldest expires when another is asked (on replicas sharing a store,
//!   only one held by the replica asked gives way: a full share elsewhere
//!   refuses the request, `RATE_LIMITED`, until a place frees up).

use std::sync::{Arc, PoisonError};

use rmcp::RoleServer;
use rmcp::model::{Extensions, RequestId};
use rmcp::service::Peer;

use super::McpSession;
use super::auth::Authenticated;
use crate::adapter::ConsumerView;
use crate::canonical::Sha256Digest;
use crate::context::{Consumer, ConsumerKind};

/// How a request's identity was established.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Caller {
    /// The session's own identity.
    Session,
    /// The `identify` hook's principal.
    Principal,
    /// A stateless request's own identity (or one adopted from a token).
    Anonymous,
}

/// The consumer a request acts as, and its view.
#[derive(Clone)]
pub(super) struct Acting {
    pub(super) consumer: String,
    pub(super) caller: Caller,
    pub(super) view: Arc<ConsumerView>,
}

impl McpSession {
    /// Who a request (or notification) acts as; `None` once the registry is
    /// disposed.
    pub(super) fn acting(
        &self,
        extensions: &Extensions,
        peer: &Peer<RoleServer>,
    ) -> Option<Acting> {
        let acting = self.identify(extensions, peer)?;
        acting.view.seen(self.shared.registry.now_ms());
        Some(acting)
    }

    /// Who a request acts as, before it is noted as seen.
    fn identify(&self, extensions: &Extensions, peer: &Peer<RoleServer>) -> Option<Acting> {
        let parts = extensions.get::<::http::request::Parts>();
        // Only for a label, when a view is made: not on every call.
        let client = || client_name(peer);
        if let Some(authenticated) = parts.and_then(|p| p.extensions.get::<Authenticated>()) {
            return self.authenticated(authenticated, client().as_deref());
        }
        if let (Some(identify), Some(parts)) = (&self.shared.identify, parts)
            && let Ok(Some(principal)) = crate::adapter::contain::catch(|| identify(parts))
        {
            let label = Some(match client() {
                Some(client) => format!("{client} ({principal})"),
                None => principal.clone(),
            });
            let view = self
                .shared
                .views
                .get_principal(&principal, label.as_deref())?;
            return Some(Acting {
                consumer: principal,
                caller: Caller::Principal,
                view,
            });
        }
        if let Some(session) = self.life.session.get() {
            let view = match self.life.held.get() {
                Some(view) => Arc::clone(view),
                None => {
                    let label = Some(client().unwrap_or_else(|| UNNAMED.to_owned()));
                    let view = self.shared.view(session, label.as_deref())?;
                    Arc::clone(self.life.held.get_or_init(|| view))
                }
            };
            return Some(Acting {
                consumer: session.clone(),
                caller: Caller::Session,
                view,
            });
        }
        let (consumer, view) = self
            .life
            .anonymous
            .get_or_init(|| {
                let consumer = self.shared.anonymous_id();
                let label = client().unwrap_or_else(|| UNNAMED.to_owned());
                let view = self.shared.views.detached(&consumer, true, Some(&label))?;
                Some((consumer, view))
            })
            .as_ref()?;
        Some(Acting {
            consumer: consumer.clone(),
            caller: Caller::Anonymous,
            view: Arc::clone(view),
        })
    }

    /// The consumer of a credential's identity, evaluated with its host
    /// context: the consumer carries it (its id fingerprints it), so every
    /// call it makes runs with it from here to settlement.
    fn authenticated(&self, authenticated: &Authenticated, client: Option<&str>) -> Option<Acting> {
        let subject = crate::adapter::text::escape(&authenticated.subject);
        let subject = crate::adapter::text::truncate(&subject, MAX_CLIENT_NAME_CHARS);
        let label = match client {
            Some(client) => format!("{client} ({subject})"),
            None => subject.into_owned(),
        };
        let principal = format!("mcp-principal:{}", authenticated.subject);
        let view = self.shared.views.get_authenticated(
            &authenticated.consumer,
            Some(&label),
            &authenticated.host,
            &principal,
        )?;
        Some(Acting {
            consumer: authenticated.consumer.clone(),
            caller: Caller::Principal,
            view,
        })
    }

    /// The invocation id of a JSON-RPC request: request ids identify
    /// attempts only within a session (a principal's sessions each number
    /// their own).
    pub(super) fn invocation_id(&self, acting: &Acting, id: &RequestId) -> Option<String> {
        let session = match (acting.caller, self.life.session.get()) {
            (Caller::Session, _) => None,
            (Caller::Principal, Some(session)) => Some(session.as_str()),
            _ => return None,
        };
        // One request id, one invocation id, and never another's: `mcp-7`
        // for the number 7, `mcp-s:7` for the string "7" (JSON-RPC tells
        // them apart), the session before a `:` (no session id holds one),
        // and nothing shaped as `mcp-key-…` (an `_meta` key's). Written into
        // one allocation of the right size (this runs for every call).
        let mut out = String::with_capacity(
            6 + session.map_or(0, |session| session.len() + 1)
                + match id {
                    RequestId::Number(_) => 20,
                    RequestId::String(text) => text.len() + 2,
                },
        );
        out.push_str("mcp-");
        if let Some(session) = session {
            out.push_str(session);
            out.push(':');
        }
        match id {
            RequestId::Number(number) => out.push_str(itoa::Buffer::new().format(*number)),
            RequestId::String(text) => {
                out.push_str("s:");
                out.push_str(text);
            }
        }
        // A request id the transport takes (up to 1 KiB) may name an
        // invocation longer than the registry keeps: named by its digest
        // instead, so the call still runs and its retries still find it.
        if out.len() > self.shared.registry.limits().max_id_bytes {
            use sha2::Digest as _;
            let digest = Sha256Digest(sha2::Sha256::digest(out.as_bytes()).into());
            // Its first 16 bytes, as 32 hex digits.
            return Some(format!("mcp-h:{}", digest.to_string().get(..32)?));
        }
        Some(out)
    }

    /// Acts as `recorded`, the consumer a server-issued token (a
    /// confirmation id, a `requestState`) was issued to: the same caller, or
    /// an anonymous caller presenting a token issued to an anonymous
    /// caller. `None`: not this caller's token.
    pub(super) fn adopt(
        &self,
        acting: &Acting,
        recorded: &str,
        recorded_anonymous: bool,
    ) -> Option<Acting> {
        if acting.consumer == recorded {
            return Some(acting.clone());
        }
        if acting.caller != Caller::Anonymous || !recorded_anonymous {
            return None;
        }
        let view = self.shared.views.detached(recorded, false, None)?;
        Some(Acting {
            consumer: recorded.to_owned(),
            caller: Caller::Anonymous,
            view,
        })
    }

    /// The consumer an anonymous caller's confirmation was issued to.
    pub(super) fn issued_to(&self, confirmation_id: &str) -> Option<String> {
        let now = self.shared.registry.now_ms();
        self.shared
            .issued
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .peek(confirmation_id, now)
            .cloned()
    }

    /// Records a confirmation asked of an anonymous caller, so that caller
    /// can present its id from a later request. The pool is bounded: the
    /// oldest entry's consumer gives up its open confirmations.
    pub(super) fn issue(&self, acting: &Acting, confirmation_id: &str) {
        if acting.caller != Caller::Anonymous {
            return;
        }
        let now = self.shared.registry.now_ms();
        let evicted = self
            .shared
            .issued
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(confirmation_id.to_owned(), acting.consumer.clone(), now);
        if let Some((_, consumer)) = evicted
            && consumer != acting.consumer
        {
            self.shared
                .registry
                .forget_consumer(&Consumer::new(ConsumerKind::Mcp, consumer));
        }
    }
}

/// How an agent that gave no name is called.
const UNNAMED: &str = "An unnamed agent";

/// Longest self-chosen client name kept, in characters: the part the
/// server assigns (the session) always stays in view.
const MAX_CLIENT_NAME_CHARS: usize = 40;

/// The client's own name as a person would say it (`clientInfo`: its title, else its
/// name), cut to a bound; `None` when it gave neither. Self-reported: a
/// client may call itself anything.
fn client_name(peer: &Peer<RoleServer>) -> Option<String> {
    let info = peer.peer_info()?;
    let title = info.client_info.title.as_deref().map(str::trim);
    let name = match title {
        Some(title) if !title.is_empty() => title,
        _ => info.client_info.name.trim(),
    };
    if name.is_empty() {
        return None;
    }
    // As a person names it: the client's title or name, without its
    // version or any session plumbing. Escaped before it is cut: no bidi,
    // zero-width or control character of the client's reaches a person as
    // is, wherever the label shows.
    let full = crate::adapter::text::escape(name);
    Some(crate::adapter::text::truncate(&full, MAX_CLIENT_NAME_CHARS).into_owned())
}
