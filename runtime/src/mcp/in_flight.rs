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
//! response ends or is dropped. Two more hold an id ([`InFlight::hold`]):
//! the session's transport, from the request's arrival until its answer
//! has been routed to its stream (or the client cancels it), and a call's
//! handler, until it returns. A client that drops the connection does not
//! end the call (the transport keeps running it), so neither its id nor
//! its place in the session's share is free before the call ends — and
//! never before its answer has left, so a new request under the id cannot
//! be routed the old one's answer. The ids held are at most the endpoint's
//! places plus the requests running, each no longer than the id bound.

use std::collections::HashMap;
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
    /// Each id held, and by how many holders (its request's claim, its
    /// call's handler).
    ids: HashMap<Key, u32>,
    /// What each session holds: its streams, and its ids.
    per_session: HashMap<Arc<str>, usize>,
    streams: usize,
}

impl State {
    /// One more holder of `key`: a new id counts against its session.
    fn hold(&mut self, key: Key) {
        let holders = self.ids.entry(key.clone()).or_default();
        *holders += 1;
        if *holders == 1 {
            *self.per_session.entry(key.0).or_default() += 1;
        }
    }

    /// One holder of `key` fewer: an id no one holds leaves its session.
    fn release(&mut self, key: &Key) {
        let Some(holders) = self.ids.get_mut(key) else {
            return;
        };
        *holders = holders.saturating_sub(1);
        if *holders == 0 {
            self.ids.remove(key);
            self.leave(&key.0);
        }
    }

    /// One holder fewer in `session`.
    fn leave(&mut self, session: &Arc<str>) {
        if let Some(held) = self.per_session.get_mut(session) {
            *held = held.saturating_sub(1);
            if *held == 0 {
                self.per_session.remove(session);
            }
        }
    }
}

/// A hold on an id in its session, released on drop.
pub(super) struct Hold {
    table: Arc<InFlight>,
    key: Option<Key>,
}

impl Drop for Hold {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.table.state().release(&key);
        }
    }
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
    held: Held,
    stream: bool,
}

/// What a claim counts in its session.
enum Held {
    Nothing,
    /// A place in the session's share.
    Session(Arc<str>),
    /// An id (and, while it is held, a place).
    Id(Key),
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
        let key = match (&entry.session, entry.id) {
            (Some(session), Some(id)) => {
                let key = (Arc::clone(session), id);
                if state.ids.contains_key(&key) {
                    return Err(Refused::IdInFlight);
                }
                Some(key)
            }
            _ => None,
        };
        // A notification or a response (no id, no stream) holds nothing and
        // is never refused: it is answered at once, and it is how a client
        // frees what it holds (an answer to the server's question, a
        // cancel), however full its share.
        let holds = key.is_some() || entry.stream;
        if holds
            && let Some(session) = &entry.session
            && state.per_session.get(session).copied().unwrap_or(0) >= self.half
        {
            return Err(Refused::SessionFull);
        }
        if entry.stream && state.streams >= self.half {
            return Err(Refused::StreamsFull);
        }
        state.streams += usize::from(entry.stream);
        let held = match (key, entry.session) {
            (Some(key), _) => {
                state.hold(key.clone());
                Held::Id(key)
            }
            (None, Some(session)) if holds => {
                *state.per_session.entry(Arc::clone(&session)).or_default() += 1;
                Held::Session(session)
            }
            (None, _) => Held::Nothing,
        };
        Ok(Claim {
            table: Arc::clone(self),
            held,
            stream: entry.stream,
        })
    }

    /// Holds `id` in `session` for the guard's life, whether or not its
    /// request's response is still read.
    pub(super) fn hold(self: &Arc<Self>, session: Arc<str>, id: RequestId) -> Hold {
        let key = (session, id);
        self.state().hold(key.clone());
        Hold {
            table: Arc::clone(self),
            key: Some(key),
        }
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
        match std::mem::replace(&mut self.held, Held::Nothing) {
            Held::Nothing => {}
            Held::Session(session) => state.leave(&session),
            Held::Id(key) => state.release(&key),
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
    fn a_running_call_keeps_its_id_and_its_place_after_its_response_is_dropped() {
        let table = Arc::new(InFlight::new(4));
        let claim = table.enter(entry("s1", Some(1), false)).unwrap();
        let running = table.hold("s1".into(), NumberOrString::Number(1));
        // The client went away: the call runs on.
        drop(claim);
        assert_eq!(
            table.enter(entry("s1", Some(1), false)).err(),
            Some(Refused::IdInFlight)
        );
        let other = table.enter(entry("s1", Some(2), false)).unwrap();
        assert_eq!(
            table.enter(entry("s1", Some(3), false)).err(),
            Some(Refused::SessionFull),
            "the running call still counts in the session's half"
        );
        drop((running, other));
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

    #[test]
    fn a_full_session_still_sends_its_answers_and_cancels() {
        let table = Arc::new(InFlight::new(4));
        let held: Vec<Claim> = (0..2)
            .map(|n| table.enter(entry("s1", Some(n), false)).unwrap())
            .collect();
        assert_eq!(
            table.enter(entry("s1", Some(9), false)).err(),
            Some(Refused::SessionFull)
        );
        // A notification or a response: let in, holding nothing.
        let answer = table.enter(entry("s1", None, false)).unwrap();
        assert_eq!(
            table.enter(entry("s1", Some(9), false)).err(),
            Some(Refused::SessionFull)
        );
        drop((answer, held));
        assert!(table.is_empty());
    }
}
