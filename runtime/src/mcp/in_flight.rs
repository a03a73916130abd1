//! The JSON-RPC ids of the requests in flight in each HTTP session: a
//! client's request under an id it already has in flight in the session
//! is refused at the gate, so the transport never holds two requests
//! under one id (it would route both answers to one of them and leave
//! the other's stream open with nothing to come).
//!
//! An id is claimed when its request passes the gate and released when
//! the request's response ends or is dropped. Each claim lives inside
//! one of the endpoint's in-flight places, so the table holds at most as
//! many entries as those places, each no longer than the id bound.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::RequestId;

/// A session's header value and an id.
type Key = (Arc<str>, RequestId);

/// The ids in flight, by session.
#[derive(Default)]
pub(super) struct InFlight {
    ids: Mutex<HashSet<Key>>,
}

/// An id claimed in its session, released on drop.
pub(super) struct Claim {
    table: Arc<InFlight>,
    key: Option<Key>,
}

impl InFlight {
    /// Claims `id` in `session`, or `None` when a request of the session
    /// holds it.
    pub(super) fn claim(self: &Arc<Self>, session: Arc<str>, id: RequestId) -> Option<Claim> {
        let key: Key = (session, id);
        let mut ids = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        if ids.contains(&key) {
            return None;
        }
        ids.insert(key.clone());
        Some(Claim {
            table: Arc::clone(self),
            key: Some(key),
        })
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.ids
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.table
                .ids
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::NumberOrString;

    #[test]
    fn an_id_is_held_in_its_session_until_its_claim_ends() {
        let table = Arc::new(InFlight::default());
        let one = NumberOrString::Number(1);
        let claim = table.claim("s1".into(), one.clone()).expect("free");
        assert!(
            table.claim("s1".into(), one.clone()).is_none(),
            "held in s1"
        );
        let other = table
            .claim("s2".into(), one.clone())
            .expect("another session");
        let text = table
            .claim("s1".into(), NumberOrString::String("1".into()))
            .expect("\"1\" is another id than 1");
        assert_eq!(table.len(), 3);
        drop(claim);
        assert!(table.claim("s1".into(), one).is_some(), "released");
        drop((other, text));
        assert_eq!(table.len(), 0);
    }
}
