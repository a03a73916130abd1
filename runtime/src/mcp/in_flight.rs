//! What each HTTP session and the streams have in flight: the share of
//! the endpoint's in-flight places no one caller or kind of request may
//! exceed, and the JSON-RPC ids a session's requests hold.
//!
//! - **Ids**: a request under an id its session already has in flight is
//!   refused, so the transport never holds two requests under one id (it
//!   would route both answers to one of them and leave the other's stream
//!   open with nothing to come).
//! - **A session's share**: one session holds at most half of the
//!   endpoint's places, so its streams and held calls never lock the other
//!   sessions out.
//! - **The streams' share**: streams (`GET` event streams and
//!   `subscriptions/listen`) hold at most half of the places, whoever opens
//!   them, so calls always have the other half.
//!
//! A claim is taken when a request passes the gate and released when its
//! response ends or is dropped. Every claim lives inside one of the
//! endpoint's places, so the table holds at most as many entries as those
//! places, each id no longer than the id bound.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::RequestId;

/// A session's header value and an id.
type Key = (Arc<str>, RequestId);

/// What the sessions and the streams hold.
pub(super) struct InFlight {
    /// The most one session, or all streams together, may hold.
    half: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    ids: HashSet<Key>,
    per_session: HashMap<Arc<str>, usize>,
    streams: usize,
}

/// Why a request was not let in.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Refused {
    /// Its session has a request under the same id in flight.
    IdInFlight,
    /// Its session holds its share of the places.
    SessionFull,
    /// It opens a stream and the streams hold their share.
    StreamsFull,
}

/// What one request holds, released on drop.
pub(super) struct Claim {
    table: Arc<InFlight>,
    session: Option<Arc<str>>,
    id: Option<RequestId>,
    stream: bool,
}

/// What a request is, for the table.
pub(super) struct Entry {
    /// Its `mcp-session-id`.
    pub(super) session: Option<Arc<str>>,
    /// Its JSON-RPC id, when it is a request (not for a notification or a
    /// response).
    pub(super) id: Option<RequestId>,
    /// Whether it opens a stream.
    pub(super) stream: bool,
}

impl InFlight {
    /// A table for an endpoint with `places` in-flight places.
    pub(super) fn new(places: usize) -> InFlight {
        InFlight {
            half: (places / 2).max(1),
            state: Mutex::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Lets `entry` in, or says why not.
    pub(super) fn enter(self: &Arc<Self>, entry: Entry) -> Result<Claim, Refused> {
        let mut state = self.state();
        let id = match (&entry.session, entry.id) {
            (Some(session), Some(id)) => {
                let key = (Arc::clone(session), id);
                if state.ids.contains(&key) {
                    return Err(Refused::IdInFlight);
                }
                Some(key)
            }
            _ => None,
        };
        if let Some(session) = &entry.session
            && state.per_session.get(session).copied().unwrap_or(0) >= self.half
        {
            return Err(Refused::SessionFull);
        }
        if entry.stream && state.streams >= self.half {
            return Err(Refused::StreamsFull);
        }
        if let Some(session) = &entry.session {
            *state.per_session.entry(Arc::clone(session)).or_default() += 1;
        }
        state.streams += usize::from(entry.stream);
        let id = id.map(|key| {
            state.ids.insert(key.clone());
            key.1
        });
        Ok(Claim {
            table: Arc::clone(self),
            session: entry.session,
            id,
            stream: entry.stream,
        })
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        let state = self.state();
        state.ids.is_empty() && state.per_session.is_empty() && state.streams == 0
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        let mut state = self.table.state();
        state.streams -= usize::from(self.stream);
        let Some(session) = self.session.take() else {
            return;
        };
        if let Some(id) = self.id.take() {
            state.ids.remove(&(Arc::clone(&session), id));
        }
        if let Some(held) = state.per_session.get_mut(&session) {
            *held = held.saturating_sub(1);
            if *held == 0 {
                state.per_session.remove(&session);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::NumberOrString;

    fn entry(session: &str, id: Option<i64>, stream: bool) -> Entry {
        Entry {
            session: Some(session.into()),
            id: id.map(NumberOrString::Number),
            stream,
        }
    }

    #[test]
    fn an_id_is_held_in_its_session_until_its_claim_ends() {
        let table = Arc::new(InFlight::new(100));
        let claim = table.enter(entry("s1", Some(1), false)).expect("free");
        assert_eq!(
            table.enter(entry("s1", Some(1), false)).err(),
            Some(Refused::IdInFlight)
        );
        let other = table
            .enter(entry("s2", Some(1), false))
            .expect("another session");
        let text = table
            .enter(Entry {
                id: Some(NumberOrString::String("1".into())),
                ..entry("s1", None, false)
            })
            .expect("\"1\" is another id than 1");
        drop(claim);
        let again = table.enter(entry("s1", Some(1), false)).expect("released");
        drop((other, text, again));
        assert!(table.is_empty());
    }

    #[test]
    fn a_session_and_the_streams_hold_at_most_half_of_the_places() {
        let table = Arc::new(InFlight::new(8));
        let mut held: Vec<Claim> = (0..4)
            .map(|n| table.enter(entry("s1", Some(n), n % 2 == 0)).unwrap())
            .collect();
        assert_eq!(
            table.enter(entry("s1", Some(9), false)).err(),
            Some(Refused::SessionFull)
        );
        held.push(table.enter(entry("s2", None, true)).unwrap());
        held.push(table.enter(entry("s3", None, true)).unwrap());
        assert_eq!(
            table.enter(entry("s4", None, true)).err(),
            Some(Refused::StreamsFull)
        );
        let stateless = Entry {
            session: None,
            id: None,
            stream: true,
        };
        assert_eq!(table.enter(stateless).err(), Some(Refused::StreamsFull));
        // Calls still pass for another session.
        held.push(table.enter(entry("s4", Some(1), false)).unwrap());
        held.clear();
        assert!(table.is_empty());
    }
}
