//! The console's approval pages: one link per request, for a person far
//! from the console (the person of a remote agent's client).
//!
//! A link (`/approve?request=…`) carries 256 random bits, is bound to one
//! request (its confirmation id and digest), lives as long as the request
//! and grants nothing by itself: the page opens only in a browser signed in
//! to the console, and answers only with the person's proof of presence.
//! At most [`MAX_LINKS`] links are kept; past that a link whose request
//! ended goes first, else the oldest stops working (its page says so),
//! never becoming another request's.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use agent_surface::confirmation::{Confirmations, PendingConfirmation};

use super::login::{same, secret};

/// Links kept at once.
pub(crate) const MAX_LINKS: usize = 256;

struct Link {
    token: String,
    confirmation_id: Arc<str>,
    digest: Arc<str>,
}

#[derive(Default)]
struct Inner {
    origin: OnceLock<String>,
    /// The console's requests, to tell which links' requests ended.
    confirmations: OnceLock<Confirmations>,
    links: Mutex<VecDeque<Link>>,
}

/// The console's approval pages (a handle: clones share the links).
#[derive(Clone, Default)]
pub struct ApprovalPages {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ApprovalPages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalPages").finish_non_exhaustive()
    }
}

impl ApprovalPages {
    /// No links yet; none are made until the console serves.
    pub fn new() -> ApprovalPages {
        ApprovalPages::default()
    }

    /// The console serves at `origin` (`http://localhost:PORT`), for the
    /// requests of `confirmations`.
    pub(crate) fn serve_at(&self, origin: String, confirmations: Confirmations) {
        let _ = self.inner.origin.set(origin);
        let _ = self.inner.confirmations.set(confirmations);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Link>> {
        self.inner
            .links
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The approval page of `request`: the same link for the same request
    /// as shown; `None` before the console serves or without randomness.
    pub fn link_for(&self, request: &PendingConfirmation) -> Option<String> {
        let origin = self.inner.origin.get()?;
        let mut links = self.lock();
        let known = links
            .iter()
            .find(|l| l.confirmation_id == request.confirmation_id && l.digest == request.digest)
            .map(|l| l.token.clone());
        let token = match known {
            Some(token) => token,
            None => {
                let token = secret()?;
                if links.len() >= MAX_LINKS {
                    // A link whose request ended goes first: however many
                    // requests come and go, a waiting one keeps its link.
                    let ended = self.inner.confirmations.get().and_then(|confirmations| {
                        links
                            .iter()
                            .position(|l| confirmations.find(&l.confirmation_id).is_none())
                    });
                    match ended {
                        Some(at) => {
                            links.remove(at);
                        }
                        None => {
                            links.pop_front();
                        }
                    }
                }
                links.push_back(Link {
                    token: token.clone(),
                    confirmation_id: Arc::clone(&request.confirmation_id),
                    digest: Arc::clone(&request.digest),
                });
                token
            }
        };
        Some(format!("{origin}/approve?request={token}"))
    }

    /// The request a link's token stands for: its confirmation id and
    /// digest; `None` for a token never issued or no longer kept.
    pub(crate) fn request_for(&self, token: &str) -> Option<(Arc<str>, Arc<str>)> {
        let links = self.lock();
        let mut found = None;
        // Every link compared, so timing says nothing about which matched.
        for link in links.iter() {
            if same(&link.token, token) {
                found = Some((Arc::clone(&link.confirmation_id), Arc::clone(&link.digest)));
            }
        }
        found
    }

    /// The hook for [`McpServerBuilder::approval_page`](agent_surface::mcp::McpServerBuilder::approval_page).
    pub fn hook(&self) -> impl Fn(&PendingConfirmation) -> Option<String> + Send + Sync + 'static {
        let pages = self.clone();
        move |request| pages.link_for(request)
    }
}
