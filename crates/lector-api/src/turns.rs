//! One caller's requests take turns: at most `http.requests_per_caller` of them are handled at
//! once, and the caller's further ones wait, in order, for a turn.
//!
//! Without it one caller could take every database connection: SQLite's pool has four, and a
//! user who sent thirty requests at once that each write tens of thousands of rows (a labeling
//! session over every document of a large project) held them all, so every other user's
//! requests, even `/auth/status`, waited ten seconds and answered 503. Now the burst is that
//! caller's own queue. A caller is the user a request's token or product key authenticates
//! (every log-in and key of one user share the user's turns: keyed by token, twenty log-ins
//! had twenty times the turns); a request without valid credentials takes no turn
//! (`auth::authenticated_for_turns` says why). A turn lasts until
//! the answer's body has been sent. More than [`MAX_WAITING`] waiting requests of one caller
//! answer 429 with `Retry-After` at once.

use crate::state::AppState;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use lector_core::Error;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// Requests of one caller that may wait for a turn; more answer 429.
pub const MAX_WAITING: usize = 64;

/// The callers with requests in hand, each with its turns.
#[derive(Clone, Default)]
pub struct Turns {
    callers: Arc<Mutex<HashMap<String, Arc<Caller>>>>,
    /// Product keys this node has authenticated, by digest, with their user and when: while
    /// the database does not answer, a key seen lately still takes its user's turns, and one
    /// not seen lately those of its client's address ([`Turns::key_of_unchecked`]).
    known_keys: Arc<Mutex<HashMap<String, KnownKey>>>,
}

/// Product keys a node remembers at most; past it, it forgets them all and starts again.
const MAX_KNOWN_KEYS: usize = 10_000;

/// How long a node takes a product key it authenticated for its user's, while the database
/// does not answer: a key deleted meanwhile (on any node) is its user's no longer than this.
const KNOWN_KEY_LIFETIME: Duration = Duration::from_secs(15 * 60);

#[derive(Clone, Copy)]
struct KnownKey {
    user_id: i64,
    seen: Instant,
}

impl std::fmt::Debug for Turns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Turns").field("callers", &self.callers()).finish()
    }
}

struct Caller {
    turns: Arc<Semaphore>,
    /// Requests holding or waiting for a turn.
    in_hand: std::sync::atomic::AtomicUsize,
}

impl Turns {
    /// Counts one more request of the caller in; `None` when too many of its requests wait.
    fn enter(&self, key: String, per_caller: usize) -> Option<InHand> {
        use std::sync::atomic::Ordering;
        let mut callers = self.callers.lock().unwrap_or_else(|e| e.into_inner());
        let caller = callers.entry(key.clone()).or_insert_with(|| {
            Arc::new(Caller {
                turns: Arc::new(Semaphore::new(per_caller)),
                in_hand: Default::default(),
            })
        });
        if caller.in_hand.load(Ordering::Relaxed) >= per_caller + MAX_WAITING {
            return None;
        }
        caller.in_hand.fetch_add(1, Ordering::Relaxed);
        Some(InHand {
            turns: self.clone(),
            key,
            caller: caller.clone(),
        })
    }

    /// Counts a request out; forgets a caller with none left.
    fn leave(&self, key: &str, caller: &Caller) {
        use std::sync::atomic::Ordering;
        let mut callers = self.callers.lock().unwrap_or_else(|e| e.into_inner());
        if caller.in_hand.fetch_sub(1, Ordering::Relaxed) == 1 {
            callers.remove(key);
        }
    }

    /// Remembers that the product key of digest `digest` belongs to `user_id`.
    pub(crate) fn remember_key(&self, digest: &str, user_id: i64) {
        let mut known = self.known_keys.lock().unwrap_or_else(|e| e.into_inner());
        if known.len() >= MAX_KNOWN_KEYS && !known.contains_key(digest) {
            known.clear();
        }
        let seen = Instant::now();
        known.insert(digest.to_owned(), KnownKey { user_id, seen });
    }

    /// Forgets the product key of digest `digest` (it was refused: deleted, or its user gone).
    pub(crate) fn forget_key(&self, digest: &str) {
        let mut known = self.known_keys.lock().unwrap_or_else(|e| e.into_inner());
        known.remove(digest);
    }

    /// Whose turns a product key takes that could not be checked (the database did not
    /// answer): its user's when this node authenticated it within [`KNOWN_KEY_LIFETIME`], else
    /// those of the client address it came from (`client`), so that neither a user's many keys
    /// nor made-up or deleted ones get turns of their own, and those hold up only their sender.
    pub(crate) fn key_of_unchecked(&self, digest: &str, client: &str) -> String {
        self.key_of_unchecked_at(digest, client, Instant::now())
    }

    fn key_of_unchecked_at(&self, digest: &str, client: &str, now: Instant) -> String {
        let known = self.known_keys.lock().unwrap_or_else(|e| e.into_inner());
        match known.get(digest) {
            Some(key) if now.saturating_duration_since(key.seen) < KNOWN_KEY_LIFETIME => {
                format!("user:{}", key.user_id)
            }
            _ => format!("unchecked-keys:{client}"),
        }
    }

    /// Callers with requests in hand (for tests).
    pub fn callers(&self) -> usize {
        self.callers.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

/// A request counted in: counted out when dropped, however it ends (answered, or dropped
/// while it waited or ran).
struct InHand {
    turns: Turns,
    key: String,
    caller: Arc<Caller>,
}

impl Drop for InHand {
    fn drop(&mut self) {
        self.turns.leave(&self.key, &self.caller);
    }
}

/// Waits for one of the caller's turns, and holds it until the answer's body has been sent: a
/// download answers its head at once and reads the database page by page while its body is
/// written, so a turn given back with the head would let a caller's downloads all read at once.
pub async fn callers_take_turns(State(state): State<AppState>, request: Request, next: Next) -> Response {
    use http_body_util::BodyExt;
    let (mut parts, body) = request.into_parts();
    let Some(key) = crate::auth::authenticated_for_turns(&state, &mut parts).await else {
        return next.run(Request::from_parts(parts, body)).await;
    };
    let mut request = Request::from_parts(parts, body);
    let per_caller = state.config.http.requests_per_caller;
    let Some(in_hand) = state.turns.enter(key, per_caller) else {
        let mut error = Error::rate_limited(1);
        error.detail = format!(
            "more than {MAX_WAITING} of your requests are waiting for their turn; {per_caller} are handled at once"
        );
        return crate::error::ApiError(error).into_response();
    };
    let turns = in_hand.caller.turns.clone();
    let turn = match turns.clone().try_acquire_owned() {
        Ok(turn) => Ok(turn),
        Err(_) => {
            let turn = turns.acquire_owned().await;
            // It waited, maybe long (a turn lasts until an answer's body is sent): the caller
            // is authenticated again by the handler, so a role taken away or a token revoked
            // meanwhile counts.
            request.extensions_mut().remove::<crate::auth::Caller>();
            turn
        }
    };
    // The turn is given back first, then the request counted out (a tuple drops in order).
    let held = (turn.expect("a caller's turns are never closed"), in_hand);
    let response = next.run(request).await;
    if axum::body::HttpBody::size_hint(response.body()).exact().is_some() {
        // A body of known size is in hand already: nothing more to read for it. (Its length
        // and the problem's request id, stamped around this layer, need the size kept.)
        return response;
    }
    response.map(|body| {
        axum::body::Body::new(body.map_frame(move |frame| {
            let _ = &held;
            frame
        }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caller_is_forgotten_when_its_last_request_leaves() {
        let turns = Turns::default();
        let first = turns.enter("user:1".into(), 2).unwrap();
        let second = turns.enter("user:1".into(), 2).unwrap();
        drop(turns.enter("user:2".into(), 2).unwrap());
        assert_eq!(turns.callers(), 1);
        drop(first);
        assert_eq!(turns.callers(), 1);
        drop(second);
        assert_eq!(turns.callers(), 0);
    }

    #[test]
    fn unchecked_keys_take_their_users_turns_or_share_one() {
        let turns = Turns::default();
        assert_eq!(turns.key_of_unchecked("a", "192.0.2.1"), "unchecked-keys:192.0.2.1");
        turns.remember_key("a", 7);
        assert_eq!(turns.key_of_unchecked("a", "192.0.2.1"), "user:7");
        assert_eq!(turns.key_of_unchecked("b", "192.0.2.1"), "unchecked-keys:192.0.2.1");
        turns.forget_key("a");
        assert_eq!(turns.key_of_unchecked("a", "192.0.2.2"), "unchecked-keys:192.0.2.2");
    }

    /// A key deleted on another node is never refused here while the database is down: it is
    /// its former user's only until the node's memory of it runs out.
    #[test]
    fn a_remembered_key_is_its_users_for_a_while_only() {
        let turns = Turns::default();
        turns.remember_key("a", 7);
        let later = |secs| std::time::Instant::now() + Duration::from_secs(secs);
        assert_eq!(turns.key_of_unchecked_at("a", "192.0.2.1", later(60)), "user:7");
        let past = later(KNOWN_KEY_LIFETIME.as_secs() + 1);
        assert_eq!(
            turns.key_of_unchecked_at("a", "192.0.2.1", past),
            "unchecked-keys:192.0.2.1"
        );
    }

    #[test]
    fn too_many_waiting_are_refused() {
        let turns = Turns::default();
        let mut held: Vec<_> = (0..2 + MAX_WAITING)
            .map(|_| turns.enter("user:1".into(), 2).expect("within the queue"))
            .collect();
        assert!(turns.enter("user:1".into(), 2).is_none());
        assert!(
            turns.enter("user:2".into(), 2).is_some(),
            "another caller is not held up"
        );
        held.pop();
        assert!(turns.enter("user:1".into(), 2).is_some());
    }
}
