//! One caller's requests take turns: at most `http.requests_per_caller` of them are handled at
//! once, and the caller's further ones wait, in order, for a turn.
//!
//! Without it one caller could take every database connection: SQLite's pool has four, and a
//! user who sent thirty requests at once that each write tens of thousands of rows (a labeling
//! session over every document of a large project) held them all, so every other user's
//! requests, even `/auth/status`, waited ten seconds and answered 503. Now the burst is that
//! caller's own queue. A caller is a user (by a verified access token) or a product key; a
//! request without valid credentials takes no turn (`auth::caller_key` says why). More than
//! [`MAX_WAITING`] waiting requests of one caller answer 429 with `Retry-After` at once.

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

/// Counts a request out when it is answered, or dropped while it waited or ran.
struct InHand<'a> {
    turns: &'a Turns,
    key: &'a str,
    caller: Arc<Caller>,
}

impl Drop for InHand<'_> {
    fn drop(&mut self) {
        self.turns.leave(self.key, &self.caller);
    }
}

/// Waits for one of the caller's turns, holds it while the request is handled.
pub async fn callers_take_turns(State(state): State<AppState>, request: Request, next: Next) -> Response {
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
    let in_hand = InHand {
        turns: &state.turns,
        key: &key,
        caller,
    };
    let _turn = in_hand
        .caller
        .turns
        .acquire()
        .await
        .expect("a caller's turns are never closed");
    next.run(request).await
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
