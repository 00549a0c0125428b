//! Who is calling: the [`Caller`] extractor turns a bearer token (an access token or a
//! product key) into a user and its scope, or answers 401. The keys themselves live in
//! [`crate::keys`].

use crate::error::ApiError;
pub use crate::keys::{AuthKeys, Claims, PRODUCT_KEY_PREFIX, random_token, token_hash};
use crate::state::AppState;
use axum::extract::FromRequestParts;
use axum::http::header;
use axum::http::request::Parts;
use lector_core::{Error, ErrorCode, Result, Scope};
use lector_store::User;

/// The authenticated caller of a request.
#[derive(Debug, Clone)]
pub struct Caller {
    pub user: User,
    pub scope: Scope,
    /// The access token's claims; `None` when a product key was presented.
    pub claims: Option<Claims>,
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        // Authenticated already when the request took its turn ([`authenticated_for_turns`]).
        if let Some(caller) = parts.extensions.get::<Caller>() {
            return Ok(caller.clone());
        }
        let token = bearer(parts).ok_or_else(|| Error::unauthorized("send Authorization: Bearer <token>"))?;
        authenticate(state, token).await.map_err(ApiError)
    }
}

/// Who a request comes from, for taking turns ([`crate::turns`]): the user its credentials
/// authenticate, whatever they are (each log-in's token and each product key of one user take
/// that user's turns, not turns of their own), kept in the request's extensions for the
/// handler's [`Caller`] (the turn's taker drops it when the request had to wait: a role or a
/// token may change meanwhile). `None` for a request without credentials or with credentials
/// that do not authenticate (a forged, revoked or unknown token or key): those are answered
/// without the database's heavy work (or are limited on their own, as log-ins and webhooks),
/// and must not make the user they name wait. While the database does not answer within
/// [`crate::metrics::DATABASE_WAIT`], a token is taken at its word (its signed user) and a
/// product key by what this node remembers of it, else by its client's address
/// ([`crate::turns::Turns::key_of_unchecked`]),
/// as nothing can be checked; the handler then checks again. `/metrics` takes no turn: it has
/// its own rule for an outage ([`MetricsReader`]), and waiting here too would take a scrape
/// past its timeout.
pub(crate) async fn authenticated_for_turns(state: &AppState, parts: &mut Parts) -> Option<String> {
    if parts.uri.path() == "/metrics" {
        return None;
    }
    let token = bearer(parts)?;
    let checked = tokio::time::timeout(crate::metrics::DATABASE_WAIT, authenticate(state, token)).await;
    let key = token.starts_with(PRODUCT_KEY_PREFIX).then(|| token_hash(token));
    match checked {
        Ok(Ok(caller)) => {
            if let Some(digest) = &key {
                state.turns.remember_key(digest, caller.user.id);
            }
            let turns = format!("user:{}", caller.user.id);
            parts.extensions.insert(caller);
            Some(turns)
        }
        Ok(Err(e)) if matches!(e.code, ErrorCode::Unauthorized | ErrorCode::InvalidCredentials) => {
            if let Some(digest) = &key {
                state.turns.forget_key(digest);
            }
            None
        }
        // Unchecked: the database is slow or down.
        _ => match key {
            Some(digest) => Some(state.turns.key_of_unchecked(&digest, &state.client_key(parts))),
            None => state
                .auth
                .verify(token)
                .ok()
                .map(|claims| format!("user:{}", claims.sub)),
        },
    }
}

fn bearer(parts: &Parts) -> Option<&str> {
    let value = parts.headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
        .filter(|t| !t.is_empty())
}

async fn authenticate(state: &AppState, token: &str) -> Result<Caller> {
    let refused = || Error::unauthorized("the token is invalid or expired; log in again");
    if token.starts_with(PRODUCT_KEY_PREFIX) {
        let user = state
            .store
            .user_for_product_key(&token_hash(token))
            .await?
            .ok_or_else(refused)?;
        let (user, scope) = state.store.principal(user.id).await?.ok_or_else(refused)?;
        if !user.is_active {
            return Err(refused());
        }
        return Ok(Caller {
            user,
            scope,
            claims: None,
        });
    }
    let claims = state.auth.verify(token)?;
    let user_id: i64 = claims.sub.parse().map_err(|_| refused())?;
    let (user, scope) = state
        .store
        .principal_unless_revoked(user_id, &claims.jti)
        .await?
        .ok_or_else(refused)?;
    if !user.is_active || user.token_version != claims.ver {
        return Err(refused());
    }
    Ok(Caller {
        user,
        scope,
        claims: Some(claims),
    })
}

impl Caller {
    /// Refuses callers who are not superusers.
    pub fn require_superuser(&self) -> Result<()> {
        if self.scope.is_superuser {
            Ok(())
        } else {
            Err(Error::new(ErrorCode::Forbidden, "only superusers may do this"))
        }
    }
}

/// Who may read `/metrics`: a superuser. While the database does not answer, no token can be
/// checked, yet that is when a node's metrics matter most: then the token that last read them
/// on this node as a superuser's is let through (and only to `/metrics`). A token refused for
/// any other reason is forgotten, so a revoked key does not outlive its revocation here.
#[derive(Debug, Clone, Copy)]
pub struct MetricsReader;

impl FromRequestParts<AppState> for MetricsReader {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let token = bearer(parts).ok_or_else(|| Error::unauthorized("send Authorization: Bearer <token>"))?;
        let hash = token_hash(token);
        let known = &state.metrics.reader;
        // A database that does not answer would hold the scrape for the pool's whole wait, past
        // a scraper's own timeout: after a moment it counts as down.
        let checked = tokio::time::timeout(crate::metrics::DATABASE_WAIT, authenticate(state, token))
            .await
            .unwrap_or_else(|_| Err(lector_store::database_unreachable()));
        match checked {
            Ok(caller) => {
                let allowed = caller.require_superuser();
                known.remember(&hash, allowed.is_ok());
                allowed.map(|()| Self).map_err(ApiError)
            }
            Err(e) if e.code == ErrorCode::Unavailable && known.is(&hash) => Ok(Self),
            Err(e) => {
                if e.code != ErrorCode::Unavailable {
                    known.remember(&hash, false);
                }
                Err(ApiError(e))
            }
        }
    }
}

/// The hash of the token that last read `/metrics` as a superuser's, on this node.
#[derive(Debug, Default)]
pub struct KnownMetricsReader(std::sync::Mutex<Option<String>>);

impl KnownMetricsReader {
    /// Remembers `hash` as the reader's when `allowed`; forgets it if it was and is not any more.
    fn remember(&self, hash: &str, allowed: bool) {
        let mut known = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if allowed {
            *known = Some(hash.to_owned());
        } else if known.as_deref() == Some(hash) {
            *known = None;
        }
    }

    fn is(&self, hash: &str) -> bool {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_deref()
            == Some(hash)
    }
}
