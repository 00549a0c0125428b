//! A memory budget for large request bodies: bulk uploads take turns instead of all being read
//! and parsed at once.
//!
//! A request whose body is over [`LARGE_BODY_BYTES`] (by `Content-Length`; without one, counted
//! as `max_body_bytes`) holds one permit per MiB from a budget of `http.large_bodies_mib` for as
//! long as it is handled; a body larger than the whole budget takes all of it. Small requests
//! never wait. The byte limits themselves stay with the extractors (`Body`, multipart).

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::Response;
use std::sync::Arc;
use tokio::sync::Semaphore;

/// Bodies up to this size are not counted.
pub const LARGE_BODY_BYTES: u64 = 4 * 1024 * 1024;

/// The shared budget and the size charged for a body of unknown length.
#[derive(Clone)]
pub struct BodyBudget {
    permits: Arc<Semaphore>,
    mib: u32,
    unknown_length: u64,
}

impl BodyBudget {
    pub fn new(mib: usize, max_body_bytes: usize) -> Self {
        let mib = u32::try_from(mib)
            .unwrap_or(u32::MAX)
            .min(Semaphore::MAX_PERMITS as u32);
        Self {
            permits: Arc::new(Semaphore::new(mib as usize)),
            mib,
            unknown_length: max_body_bytes as u64,
        }
    }
}

/// Waits for its share of the budget before a large body is read, and holds it until answered.
pub async fn large_bodies_take_turns(State(budget): State<BodyBudget>, request: Request, next: Next) -> Response {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let has_body = declared.is_some() || request.headers().contains_key(header::TRANSFER_ENCODING);
    let size = declared.unwrap_or(if has_body { budget.unknown_length } else { 0 });
    if size <= LARGE_BODY_BYTES {
        return next.run(request).await;
    }
    let wanted = u32::try_from(size.div_ceil(1024 * 1024))
        .unwrap_or(u32::MAX)
        .min(budget.mib);
    let _permit = budget
        .permits
        .clone()
        .acquire_many_owned(wanted)
        .await
        .expect("the budget is never closed");
    next.run(request).await
}
