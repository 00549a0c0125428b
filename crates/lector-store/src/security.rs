//! Secrets at rest: one-time tokens, product keys, revoked access tokens, and the shared
//! rate-limit counters. Tokens arrive here already hashed; the store never sees a raw secret.

use crate::accounts::ensure_self_or_superuser;
use crate::records::{FromAnyRow, PRODUCT_KEY_COLUMNS, ProductKey, USER_COLUMNS, User, fetch_records};
use crate::{Store, db};
use lector_core::time::Timestamp;
use lector_core::{Error, Result, Scope};
use sqlx::Row;

/// What a one-time token is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenPurpose {
    PasswordReset,
    FirstLogin,
}

impl TokenPurpose {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            TokenPurpose::PasswordReset => "password_reset",
            TokenPurpose::FirstLogin => "first_login",
        }
    }
}

/// Keys a user may hold at once.
pub const MAX_PRODUCT_KEYS: i64 = 50;

impl Store {
    pub async fn create_one_time_token(
        &self,
        user_id: i64,
        purpose: TokenPurpose,
        token_hash: &str,
        expires: Timestamp,
    ) -> Result<()> {
        // Once: a job that records a token and runs again finds it recorded.
        sqlx::query(
            "INSERT INTO one_time_tokens (user_id, purpose, token_hash, created, expires) \
             SELECT $1, $2, $3, $4, $5 WHERE NOT EXISTS (SELECT 1 FROM one_time_tokens WHERE token_hash = $3)",
        )
        .bind(user_id)
        .bind(purpose.as_str())
        .bind(token_hash)
        .bind(Timestamp::now().micros())
        .bind(expires.micros())
        .execute(&self.pool)
        .await
        .map_err(db)?;
        Ok(())
    }

    /// Records a password-reset token for the active account whose address is `email`, once
    /// (a job run again finds it recorded); answers whether there is such an account.
    pub async fn record_reset_token(&self, email: &str, token_hash: &str, expires: Timestamp) -> Result<bool> {
        let user_id: Option<i64> = sqlx::query_scalar("SELECT id FROM users WHERE email = $1 AND is_active = TRUE")
            .bind(email)
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?;
        let Some(user_id) = user_id else {
            return Ok(false);
        };
        self.create_one_time_token(user_id, TokenPurpose::PasswordReset, token_hash, expires)
            .await?;
        Ok(true)
    }

    /// The user an unused, unexpired one-time token belongs to, leaving it unused (a check
    /// before work that the token's use then commits with, as a password reset's hash).
    pub async fn one_time_token_user(&self, purpose: TokenPurpose, token_hash: &str) -> Result<Option<i64>> {
        sqlx::query_scalar(
            "SELECT user_id FROM one_time_tokens WHERE token_hash = $1 AND purpose = $2 AND used IS NULL \
             AND expires > $3",
        )
        .bind(token_hash)
        .bind(purpose.as_str())
        .bind(Timestamp::now().micros())
        .fetch_optional(&self.pool)
        .await
        .map_err(db)
    }

    /// Uses a one-time token up: the first caller gets the user id, every later one `None`.
    pub async fn consume_one_time_token(&self, purpose: TokenPurpose, token_hash: &str) -> Result<Option<i64>> {
        let now = Timestamp::now().micros();
        sqlx::query_scalar(
            "UPDATE one_time_tokens SET used = $1 WHERE token_hash = $2 AND purpose = $3 AND used IS NULL \
             AND expires > $1 RETURNING user_id",
        )
        .bind(now)
        .bind(token_hash)
        .bind(purpose.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(db)
    }

    /// Refuses an access token's id until the token would have expired anyway.
    pub async fn revoke_token(&self, jti: &str, expires: Timestamp) -> Result<()> {
        sqlx::query("INSERT INTO revoked_tokens (jti, expires) VALUES ($1, $2) ON CONFLICT (jti) DO NOTHING")
            .bind(jti)
            .bind(expires.micros())
            .execute(&self.pool)
            .await
            .map_err(db)?;
        // Entries whose tokens have expired can no longer matter.
        sqlx::query("DELETE FROM revoked_tokens WHERE expires < $1")
            .bind(Timestamp::now().micros())
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(())
    }

    /// Deletes the rate-limit counters whose window started more than `longest_window_secs`
    /// ago (they count nothing: the next event starts a new window) and the one-time tokens that
    /// expired more than a day ago; answers how many rows went. Both tables gain a row per
    /// client address or request and would otherwise grow for ever.
    pub async fn prune_spent_counters(&self, longest_window_secs: i64) -> Result<u64> {
        let now = Timestamp::now();
        let counters = sqlx::query("DELETE FROM rate_limits WHERE window_start < $1")
            .bind(now.plus_seconds(-longest_window_secs).micros())
            .execute(&self.pool)
            .await
            .map_err(db)?;
        let tokens = sqlx::query("DELETE FROM one_time_tokens WHERE expires < $1")
            .bind(now.plus_seconds(-24 * 3600).micros())
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(counters.rows_affected() + tokens.rows_affected())
    }

    pub async fn create_product_key(
        &self,
        scope: &Scope,
        user_id: i64,
        name: &str,
        prefix: &str,
        token_hash: &str,
    ) -> Result<ProductKey> {
        ensure_self_or_superuser(scope, user_id)?;
        let mut tx = self.begin_write().await?;
        let held = crate::count_under_lock(
            &mut tx,
            ("users", user_id),
            "SELECT COUNT(*) FROM product_keys WHERE user_id = $1",
        )
        .await?;
        if held >= MAX_PRODUCT_KEYS {
            return Err(Error::conflict(format!(
                "a user holds at most {MAX_PRODUCT_KEYS} product keys"
            )));
        }
        let sql = format!(
            "INSERT INTO product_keys (user_id, name, prefix, token_hash, created) VALUES ($1, $2, $3, $4, $5) \
             RETURNING {PRODUCT_KEY_COLUMNS}"
        );
        let row = sqlx::query(&sql)
            .bind(user_id)
            .bind(name)
            .bind(prefix)
            .bind(token_hash)
            .bind(Timestamp::now().micros())
            .fetch_one(&mut *tx)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)?;
        ProductKey::decode(&row)
    }

    pub async fn product_keys(&self, scope: &Scope, user_id: i64) -> Result<Vec<ProductKey>> {
        ensure_self_or_superuser(scope, user_id)?;
        let sql = format!("SELECT {PRODUCT_KEY_COLUMNS} FROM product_keys WHERE user_id = $1 ORDER BY id");
        fetch_records(sqlx::query(&sql).bind(user_id), &self.pool).await
    }

    /// Deletes a key and answers the keys that remain.
    pub async fn delete_product_key(&self, scope: &Scope, user_id: i64, key_id: i64) -> Result<Vec<ProductKey>> {
        ensure_self_or_superuser(scope, user_id)?;
        let done = sqlx::query("DELETE FROM product_keys WHERE id = $1 AND user_id = $2")
            .bind(key_id)
            .bind(user_id)
            .execute(&self.pool)
            .await
            .map_err(db)?;
        if done.rows_affected() == 0 {
            return Err(Error::not_found("product key"));
        }
        self.product_keys(scope, user_id).await
    }

    /// The user a product key belongs to (system look-up for authentication).
    pub async fn user_for_product_key(&self, token_hash: &str) -> Result<Option<User>> {
        let sql = format!(
            "SELECT {} FROM users u JOIN product_keys k ON k.user_id = u.id WHERE k.token_hash = $1",
            USER_COLUMNS
                .split(", ")
                .map(|c| format!("u.{c}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let row = sqlx::query(&sql)
            .bind(token_hash)
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?;
        row.as_ref().map(User::decode).transpose()
    }

    /// Counts one attempt against `key` in a fixed window; past `limit`, answers 429 with the
    /// seconds until the window ends.
    pub async fn hit_rate_limit(&self, key: &str, limit: i64, window_secs: i64) -> Result<()> {
        let (count, retry_after) = self.count_attempt(key, window_secs).await?;
        if count > limit {
            return Err(Error::rate_limited(retry_after));
        }
        Ok(())
    }

    /// Counts one event against `key` in a fixed window: the window's count after it, and the
    /// seconds until the window ends.
    pub async fn count_attempt(&self, key: &str, window_secs: i64) -> Result<(i64, u64)> {
        let (now, window_start) = window(window_secs);
        let row = sqlx::query(
            "INSERT INTO rate_limits (key, window_start, count) VALUES ($1, $2, 1) \
             ON CONFLICT (key) DO UPDATE SET \
               count = CASE WHEN rate_limits.window_start = excluded.window_start THEN rate_limits.count + 1 ELSE 1 END, \
               window_start = excluded.window_start \
             RETURNING count",
        )
        .bind(key)
        .bind(window_start)
        .fetch_one(&self.pool)
        .await
        .map_err(db)?;
        let count: i64 = row.try_get("count").map_err(db)?;
        Ok((count, seconds_left(now, window_start, window_secs)))
    }

    /// Takes back one count of `key` in the current window (one [`Store::count_attempt`] made
    /// ahead of an outcome that turned out not to count); nothing once that window has ended.
    pub async fn uncount_attempt(&self, key: &str, window_secs: i64) -> Result<()> {
        let (_, window_start) = window(window_secs);
        sqlx::query("UPDATE rate_limits SET count = count - 1 WHERE key = $1 AND window_start = $2 AND count > 0")
            .bind(key)
            .bind(window_start)
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(())
    }

    /// The count of `key` in the current window, without counting anything, and the seconds
    /// until the window ends.
    pub async fn rate_count(&self, key: &str, window_secs: i64) -> Result<(i64, u64)> {
        let (now, window_start) = window(window_secs);
        let count: Option<i64> =
            sqlx::query_scalar("SELECT count FROM rate_limits WHERE key = $1 AND window_start = $2")
                .bind(key)
                .bind(window_start)
                .fetch_optional(&self.pool)
                .await
                .map_err(db)?;
        Ok((count.unwrap_or(0), seconds_left(now, window_start, window_secs)))
    }
}

/// Now and the start of the fixed window of `window_secs` it falls in, in microseconds.
fn window(window_secs: i64) -> (i64, i64) {
    let now = Timestamp::now().micros();
    (now, now - now.rem_euclid(window_secs * 1_000_000))
}

fn seconds_left(now: i64, window_start: i64, window_secs: i64) -> u64 {
    let window_end = window_start + window_secs * 1_000_000;
    ((window_end - now).div_euclid(1_000_000) + 1).max(1) as u64
}

#[cfg(test)]
mod tests {
    use super::TokenPurpose;
    use crate::testing::{TestDatabase, count, owner};
    use crate::{Backend, Store};
    use lector_core::time::Timestamp;

    /// Counters whose window has ended and tokens expired a day ago go; the rest stay, and a
    /// pruned address counts from one again.
    async fn spent_counters_and_tokens_are_pruned(backend: Backend) {
        let Some(database) = TestDatabase::create(backend).await else {
            return;
        };
        let store = Store::open(&database.url, 4).await.expect("store");
        let (user, _) = owner(&store).await;
        for key in ["old", "current"] {
            store.count_attempt(key, 3600).await.unwrap();
            store.count_attempt(key, 3600).await.unwrap();
        }
        sqlx::query("UPDATE rate_limits SET window_start = window_start - $1 WHERE key = 'old'")
            .bind(2 * 3600 * 1_000_000_i64)
            .execute(&store.pool)
            .await
            .unwrap();
        let now = Timestamp::now();
        for (hash, expires) in [
            ("stale", now.plus_seconds(-2 * 24 * 3600)),
            ("live", now.plus_seconds(600)),
        ] {
            store
                .create_one_time_token(user.id, TokenPurpose::PasswordReset, hash, expires)
                .await
                .unwrap();
        }

        assert_eq!(store.prune_spent_counters(3600).await.unwrap(), 2);
        assert_eq!(
            count(&store, "SELECT COUNT(*) FROM rate_limits WHERE count > $1", 0).await,
            1
        );
        assert_eq!(
            count(
                &store,
                "SELECT COUNT(*) FROM one_time_tokens WHERE user_id = $1",
                user.id
            )
            .await,
            1
        );
        assert_eq!(
            store.count_attempt("current", 3600).await.unwrap().0,
            3,
            "a live window counts on"
        );
        assert_eq!(store.count_attempt("old", 3600).await.unwrap().0, 1);
        assert_eq!(
            store
                .consume_one_time_token(TokenPurpose::PasswordReset, "live")
                .await
                .unwrap(),
            Some(user.id)
        );
        assert_eq!(store.prune_spent_counters(3600).await.unwrap(), 0);
    }

    /// A reset uses its token and sets the password in one transaction: a token that did not
    /// set a password (unknown, or used meanwhile) changes nothing, and one that did is used.
    async fn a_reset_uses_its_token_with_the_password(backend: Backend) {
        let Some(database) = TestDatabase::create(backend).await else {
            return;
        };
        let store = Store::open(&database.url, 4).await.expect("store");
        let (user, _) = owner(&store).await;
        let expires = Timestamp::now().plus_seconds(600);
        store
            .create_one_time_token(user.id, TokenPurpose::PasswordReset, "mailed", expires)
            .await
            .unwrap();
        let hash_of = |store: &Store| {
            let store = store.clone();
            async move { store.login_candidate("ada@example.org").await.unwrap().unwrap().1 }
        };
        let before = hash_of(&store).await;
        assert_eq!(store.reset_password("unknown", "new-hash").await.unwrap(), None);
        assert_eq!(hash_of(&store).await, before);
        let checked = store.one_time_token_user(TokenPurpose::PasswordReset, "mailed").await;
        assert_eq!(checked.unwrap(), Some(user.id), "a check leaves the token unused");
        assert_eq!(store.reset_password("mailed", "new-hash").await.unwrap(), Some(user.id));
        assert_eq!(hash_of(&store).await.as_deref(), Some("new-hash"));
        assert_eq!(
            store.reset_password("mailed", "other-hash").await.unwrap(),
            None,
            "used"
        );
        assert_eq!(hash_of(&store).await.as_deref(), Some("new-hash"));
    }

    #[tokio::test]
    async fn a_reset_uses_its_token_with_the_password_sqlite() {
        a_reset_uses_its_token_with_the_password(Backend::Sqlite).await;
    }

    #[tokio::test]
    async fn a_reset_uses_its_token_with_the_password_postgres() {
        a_reset_uses_its_token_with_the_password(Backend::Postgres).await;
    }

    #[tokio::test]
    async fn spent_counters_and_tokens_are_pruned_sqlite() {
        spent_counters_and_tokens_are_pruned(Backend::Sqlite).await;
    }

    #[tokio::test]
    async fn spent_counters_and_tokens_are_pruned_postgres() {
        spent_counters_and_tokens_are_pruned(Backend::Postgres).await;
    }
}
