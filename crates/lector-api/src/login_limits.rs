//! Log-in limits: failures are counted, successes are not, per client address, per account and
//! per account and address, in the shared `rate_limits` table (so every node sees them).
//!
//! A log-in is refused with 429 and `Retry-After` before its password is checked when its
//! address has too many failures, when this account has too many from this address, or when
//! the account has too many from everywhere *and* this address has failed on it before. So the
//! attempt that reaches a limit is still answered like any wrong password, a guesser spread over
//! many addresses is stopped at the account's limit, and the owner signing in from an address
//! with no failures is not locked out by someone else's guesses. Unknown e-mail addresses are
//! counted exactly like known ones, so the limits tell nothing about who is registered.
//!
//! An account's counts are kept under a digest of its e-mail address, never the address: the
//! table's keys stay short and say nothing about who tried which account.
//!
//! Each attempt is counted as a failure *before* its password is checked, and the count is
//! taken back when it did not fail (it succeeded, or was refused): so attempts sent all at once
//! see each other, and no more of them reach the password check than the limits allow.

use crate::keys::token_hash;
use crate::state::AppState;
use axum::http::request::Parts;
use lector_core::{Error, Result};

/// The keys one log-in attempt is counted under.
pub struct LoginAttempt {
    address: String,
    account: String,
    pair: String,
}

impl LoginAttempt {
    /// `email` normalised; without one (a first-time-login token), the account keys are unused.
    pub fn new(state: &AppState, parts: &Parts, email: Option<&str>) -> Self {
        let client = state.client_key(parts);
        let email = token_hash(email.unwrap_or_default());
        Self {
            address: format!("login-fail:address:{client}"),
            account: format!("login-fail:account:{email}"),
            pair: format!("login-fail:pair:{client}:{email}"),
        }
    }

    /// Counts this attempt as a failure ahead of its outcome, and refuses it with 429 (its
    /// counts taken back) when that passes a limit. An attempt that then does not fail takes
    /// its counts back with [`LoginAttempt::did_not_fail`].
    pub async fn reserve(&self, state: &AppState, by_password: bool) -> Result<()> {
        let limits = state.config.rate_limits;
        let store = &state.store;
        let (address, retry) = store.count_attempt(&self.address, 60).await?;
        if address > limits.login_per_minute {
            self.did_not_fail(state, false).await?;
            return Err(Error::rate_limited(retry));
        }
        if !by_password {
            return Ok(());
        }
        let window = limits.login_failure_window_secs;
        let (pair, pair_retry) = store.count_attempt(&self.pair, window).await?;
        if pair > limits.login_failures_per_account_address {
            // Refused before the account is counted: attempts refused here never make the
            // account's count pass its limit, even for a moment, and refuse one that may go on.
            store.uncount_attempt(&self.pair, window).await?;
            self.did_not_fail(state, false).await?;
            return Err(Error::rate_limited(pair_retry));
        }
        let (account, account_retry) = store.count_attempt(&self.account, window).await?;
        // The counts include this attempt: `pair > 1` is "this address failed on it before".
        if pair > 1 && account > limits.login_failures_per_account {
            self.did_not_fail(state, true).await?;
            return Err(Error::rate_limited(account_retry));
        }
        Ok(())
    }

    /// Takes back the counts [`LoginAttempt::reserve`] made: the attempt did not fail.
    pub async fn did_not_fail(&self, state: &AppState, by_password: bool) -> Result<()> {
        let store = &state.store;
        store.uncount_attempt(&self.address, 60).await?;
        if by_password {
            let window = state.config.rate_limits.login_failure_window_secs;
            store.uncount_attempt(&self.account, window).await?;
            store.uncount_attempt(&self.pair, window).await?;
        }
        Ok(())
    }
}
