//! One caller's requests take turns: at most `http.requests_per_caller` of them are handled at
//! once, and the caller's further ones wait, in order, for a turn.
//!
//! Without it one caller could take every database connection: SQLite's pool has four, and a
//! user who sent thirty requests at once that each write tens of thousands of rows (a labeling
//! session over every document of a large project) held them all, so every other user's
//! requests, even `/auth/status`, waited ten seconds and answered 503. Now the burst is that
//! caller's own queue. A caller is an access token that verifies, or a product key; a request
//! without valid credentials takes no turn (`auth::caller_key` says why). A turn lasts until
//! the answer's body has been sent. More than [`MAX_WAITING`] waiting requests of one caller
//! answer 429 with `Retry-After` at once.

use crate::state::AppState;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use lector_core::Error;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;

/// Requests of one caller that may wait for a turn; more answer 429.
pub const MAX_WAITING: usize = 64;

/// The callers with requests in hand, each with its turns.
#[derive(Clone, Default)]
pub struct Turns {
    callers: Arc<Mutex<HashMap<String, Arc<Caller>>>>,
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
    /// The caller's entry, counting one more request in hand; `None` when too many wait.
    fn enter(&self, key: String, per_caller: usize) -> Option<Arc<Caller>> {
        use std::sync::atomic::Ordering;
        let mut callers = self.callers.lock().unwrap_or_else(|e| e.into_inner());
        let caller = callers.entry(key).or_insert_with(|| {
            Arc::new(Caller {
                turns: Arc::new(Semaphore::new(per_caller)),
                in_hand: Default::default(),
            })
        });
        if caller.in_hand.load(Ordering::Relaxed) >= per_caller + MAX_WAITING {
            return None;
        }
        caller.in_hand.fetch_add(1, Ordering::Relaxed);
        Some(caller.clone())
    }

    /// Counts a request out; forgets a caller with none left.
    fn leave(&self, key: &str, caller: &Caller) {
        use std::sync::atomic::Ordering;
        let mut callers = self.callers.lock().unwrap_or_else(|e| e.into_inner());
        if caller.in_hand.fetch_sub(1, Ordering::Relaxed) == 1 {
            callers.remove(key);
        }
    }

    /// Callers with requests in hand (for tests).
    pub fn callers(&self) -> usize {
        self.callers.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

/// Counts a request out when its answer has been sent (or dropped), holding its turn till then.
struct Held {
    _turn: tokio::sync::OwnedSemaphorePermit,
    turns: Turns,
    key: String,
    caller: Arc<Caller>,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.turns.leave(&self.key, &self.caller);
    }
}

/// Waits for one of the caller's turns, and holds it until the answer's body has been sent: a
/// download answers its head at once and reads the database page by page while its body is
/// written, so a turn given back with the head would let a caller's downloads all read at once.
pub async fn callers_take_turns(State(state): State<AppState>, request: Request, next: Next) -> Response {
    use http_body_util::BodyExt;
    let (parts, body) = request.into_parts();
    let Some(key) = crate::auth::caller_key(&state, &parts) else {
        return next.run(Request::from_parts(parts, body)).await;
    };
    let request = Request::from_parts(parts, body);
    let per_caller = state.config.http.requests_per_caller;
    let Some(caller) = state.turns.enter(key.clone(), per_caller) else {
        let mut error = Error::rate_limited(1);
        error.detail = format!(
            "more than {MAX_WAITING} of your requests are waiting for their turn; {per_caller} are handled at once"
        );
        return crate::error::ApiError(error).into_response();
    };
    // Counted out however this ends: answered, or dropped while waiting or running.
    let waiting = Waiting {
        turns: &state.turns,
        key: &key,
        caller: Some(caller),
    };
    let turn = waiting.caller.as_ref().map(|c| c.turns.clone()).expect("a caller");
    let turn = turn.acquire_owned().await.expect("a caller's turns are never closed");
    let held = waiting.into_held(turn);
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

/// A request counted in that has no turn yet; counts itself out when dropped.
struct Waiting<'a> {
    turns: &'a Turns,
    key: &'a str,
    caller: Option<Arc<Caller>>,
}

impl Waiting<'_> {
    fn into_held(mut self, turn: tokio::sync::OwnedSemaphorePermit) -> Held {
        Held {
            _turn: turn,
            turns: self.turns.clone(),
            key: self.key.to_owned(),
            caller: self.caller.take().expect("a caller"),
        }
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if let Some(caller) = &self.caller {
            self.turns.leave(self.key, caller);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caller_is_forgotten_when_its_last_request_leaves() {
        let turns = Turns::default();
        let first = turns.enter("user:1".into(), 2).unwrap();
        let second = turns.enter("user:1".into(), 2).unwrap();
        let other = turns.enter("user:2".into(), 2).unwrap();
        turns.leave("user:2", &other);
        assert_eq!(turns.callers(), 1);
        turns.leave("user:1", &first);
        assert_eq!(turns.callers(), 1);
        turns.leave("user:1", &second);
        assert_eq!(turns.callers(), 0);
    }

    #[test]
    fn too_many_waiting_are_refused() {
        let turns = Turns::default();
        let held: Vec<_> = (0..2 + MAX_WAITING)
            .map(|_| turns.enter("user:1".into(), 2).expect("within the queue"))
            .collect();
        assert!(turns.enter("user:1".into(), 2).is_none());
        assert!(
            turns.enter("user:2".into(), 2).is_some(),
            "another caller is not held up"
        );
        turns.leave("user:1", &held[0]);
        assert!(turns.enter("user:1".into(), 2).is_some());
    }
}
