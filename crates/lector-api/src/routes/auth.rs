//! Registration, log-in and log-out, accepting an invitation (which answers like log-in), the
//! caller's status, and password resets by mail.

use crate::accounts::{self, Acceptance, NewAccount};
use crate::auth::{Caller, token_hash};
use crate::error::{ApiError, ApiResult};
use crate::extract::{Body, WriteBody};
use crate::login_limits::LoginAttempt;
use crate::routes::Message;
use crate::routes::users::UserDto;
use crate::routes::workspaces::MyWorkspaceDto;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::request::Parts;
use lector_core::time::Timestamp;
use lector_core::validate::{MAX_NAME_CHARS, Problems, normalize_email};
use lector_core::{Error, ErrorCode};
use lector_store::{TokenPurpose, User};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(register))
        .routes(routes!(accept_invitation))
        .routes(routes!(login))
        .routes(routes!(logout))
        .routes(routes!(auth_status))
        .routes(routes!(send_password_reset_email))
        .routes(routes!(reset_password))
}

/// The answer of register, login and accept_invitation.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuthAnswer {
    /// The access token, for `Authorization: Bearer`.
    pub auth_token: String,
    pub message: String,
    /// `CREATED` after registration, `OK` after log-in.
    pub status: String,
    pub user_id: i64,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterBody {
    pub email: String,
    /// At least 8 characters.
    pub password: String,
    #[serde(default)]
    pub first_name: String,
    #[serde(default)]
    pub last_name: String,
}

impl WriteBody for RegisterBody {
    fn validate(&self, problems: &mut Problems) {
        problems.email("email", &self.email);
        problems.password("password", &self.password);
        problems.max_len("first_name", &self.first_name, MAX_NAME_CHARS);
        problems.max_len("last_name", &self.last_name, MAX_NAME_CHARS);
    }
}

/// Checks an attempt against a per-client-address limit.
pub(crate) async fn limit_by_client(
    state: &AppState,
    parts: &Parts,
    what: &str,
    limit: i64,
    window_secs: i64,
) -> ApiResult<()> {
    let client = state.client_key(parts);
    state
        .store
        .hit_rate_limit(&format!("{what}:{client}"), limit, window_secs)
        .await?;
    Ok(())
}

/// Creates an account with a personal workspace and logs it in.
#[utoipa::path(post, path = "/auth/register", tag = "auth",
    request_body = RegisterBody, responses((status = 200, body = AuthAnswer)))]
pub async fn register(
    State(state): State<AppState>,
    parts: Parts,
    Body(body): Body<RegisterBody>,
) -> ApiResult<Json<AuthAnswer>> {
    limit_by_client(
        &state,
        &parts,
        "register",
        state.config.rate_limits.register_per_hour,
        3600,
    )
    .await?;
    let account = NewAccount {
        email: body.email,
        first_name: body.first_name,
        last_name: body.last_name,
        password: Some(body.password),
        is_superuser: false,
    };
    let (user, _) = accounts::create_account(&state, account).await?;
    tracing::info!(user.id = user.id, "user registered");
    answer(&state, &user, "registered", "CREATED")
}

pub(crate) fn answer(state: &AppState, user: &User, message: &str, status: &str) -> ApiResult<Json<AuthAnswer>> {
    Ok(Json(AuthAnswer {
        auth_token: state.auth.issue(user)?,
        message: message.into(),
        status: status.into(),
        user_id: user.id,
    }))
}

/// E-mail and password, or a first-time-login token.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LoginBody {
    pub email: Option<String>,
    pub password: Option<String>,
    /// A first-time-login token from the mail sent to users an administrator created.
    pub token: Option<String>,
}

impl WriteBody for LoginBody {
    fn validate(&self, problems: &mut Problems) {
        let by_password = self.email.is_some() && self.password.is_some();
        problems.check(
            by_password != self.token.is_some(),
            "token",
            "send either email and password, or token",
        );
        // In the form it is looked up in (no account has another), so no more than an address
        // reaches the log-in limits.
        if let Some(email) = &self.email {
            problems.email("email", &normalize_email(email));
        }
    }
}

/// Logs in with a password or a first-time-login token.
///
/// Failed attempts are limited per address, per account and per both (429 with `Retry-After`);
/// successful ones are not counted.
#[utoipa::path(post, path = "/auth/login", tag = "auth",
    request_body = LoginBody, responses((status = 200, body = AuthAnswer)))]
pub async fn login(
    State(state): State<AppState>,
    parts: Parts,
    Body(body): Body<LoginBody>,
) -> ApiResult<Json<AuthAnswer>> {
    let by_password = body.token.is_none();
    let email = body.email.as_deref().map(normalize_email);
    let attempt = LoginAttempt::new(&state, &parts, email.as_deref());
    attempt.reserve(&state, by_password).await?;
    let outcome = login_once(&state, body, email).await;
    let failed = matches!(&outcome, Err(ApiError(e)) if e.code == ErrorCode::InvalidCredentials);
    if !failed {
        attempt.did_not_fail(&state, by_password).await?;
    }
    outcome
}

/// One log-in attempt, by a first-time-login token or by e-mail and password.
async fn login_once(state: &AppState, body: LoginBody, email: Option<String>) -> ApiResult<Json<AuthAnswer>> {
    let refused = || {
        ApiError(Error::new(
            ErrorCode::InvalidCredentials,
            "the e-mail or password is wrong",
        ))
    };
    if let Some(token) = &body.token {
        let user_id = state
            .store
            .consume_one_time_token(TokenPurpose::FirstLogin, &token_hash(token))
            .await?
            .ok_or_else(|| {
                ApiError(Error::new(
                    ErrorCode::InvalidCredentials,
                    "the token is unknown, used or expired",
                ))
            })?;
        let (user, _) = state.store.principal(user_id).await?.ok_or_else(refused)?;
        return answer(
            state,
            &user,
            "logged in with a first-time-login token; set a password next",
            "OK",
        );
    }
    let password = body.password.unwrap_or_default();
    let candidate = state.store.login_candidate(&email.unwrap_or_default()).await?;
    let stored = candidate.as_ref().and_then(|(_, hash)| hash.as_deref());
    let verified = state.auth.verify_password(&password, stored).await;
    match candidate {
        Some((user, stored)) if verified && user.is_active => {
            if let Some(stored) = stored.filter(|hash| state.auth.needs_rehash(hash)) {
                rehash(state, user.id, &stored, &password).await;
            }
            answer(state, &user, "logged in", "OK")
        }
        _ => Err(refused()),
    }
}

/// Hashes a password that just verified again with the configured parameters; a failure is
/// logged, and the log-in goes on (the next one tries again).
async fn rehash(state: &AppState, user_id: i64, stored: &str, password: &str) {
    let rehashed = match state.auth.hash_password(password).await {
        Ok(new) => state.store.rehash_password(user_id, stored, &new).await,
        Err(e) => Err(e),
    };
    if let Err(e) = rehashed {
        tracing::warn!(user.id = user_id, error = %e.detail, "cannot hash a password again");
    }
}

/// Revokes the presented access token.
#[utoipa::path(post, path = "/auth/logout", tag = "auth", responses((status = 200, body = Message)))]
pub async fn logout(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<Message>> {
    let Some(claims) = caller.claims else {
        return Err(Error::bad_request("product keys are deleted, not logged out").into());
    };
    // Kept until the token can no longer verify: its expiry and the verifier's leeway.
    let verifies_until = claims
        .exp
        .saturating_add(crate::keys::TOKEN_LEEWAY_SECS as i64)
        .saturating_mul(1_000_000);
    state.store.revoke_token(&claims.jti, Timestamp(verifies_until)).await?;
    Ok(Message::new("logged out"))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AuthStatus {
    pub user: UserDto,
    pub workspaces: Vec<MyWorkspaceDto>,
    pub default_workspace_id: Option<i64>,
}

/// The caller, its workspaces and its default workspace.
#[utoipa::path(get, path = "/auth/status", tag = "auth", responses((status = 200, body = AuthStatus)))]
pub async fn auth_status(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<AuthStatus>> {
    let workspaces = state.store.my_workspaces(&caller.scope).await?;
    let default_workspace_id = workspaces.iter().find(|w| w.is_default).map(|w| w.workspace.id);
    Ok(Json(AuthStatus {
        user: UserDto::from(&caller.user),
        workspaces: workspaces.into_iter().map(MyWorkspaceDto::from).collect(),
        default_workspace_id,
    }))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResetMailBody {
    pub email: String,
}

impl WriteBody for ResetMailBody {}

/// Mails a password-reset token if the address is registered; answers the same either way.
/// A client, and an address, get a few an hour (429 past that).
#[utoipa::path(post, path = "/password/email", tag = "auth",
    request_body = ResetMailBody, responses((status = 200, body = Message)))]
pub async fn send_password_reset_email(
    State(state): State<AppState>,
    parts: Parts,
    Body(body): Body<ResetMailBody>,
) -> ApiResult<Json<Message>> {
    limit_by_client(
        &state,
        &parts,
        "reset-mail",
        state.config.rate_limits.reset_mail_per_hour,
        3600,
    )
    .await?;
    accounts::request_password_reset(&state, &body.email, &state.client_key(&parts)).await?;
    Ok(Message::new(
        "if the address is registered, a reset token is on its way",
    ))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResetPasswordBody {
    /// The one-time token from the reset mail.
    pub reset_password_token: String,
    /// The new password, at least 8 characters.
    pub password: String,
}

impl WriteBody for ResetPasswordBody {
    fn validate(&self, problems: &mut Problems) {
        problems.password("password", &self.password);
    }
}

/// Sets a new password with a reset token; every earlier access token stops working and the
/// account's product keys are deleted.
#[utoipa::path(post, path = "/password/reset", tag = "auth",
    request_body = ResetPasswordBody, responses((status = 200, body = Message)))]
pub async fn reset_password(
    State(state): State<AppState>,
    Body(body): Body<ResetPasswordBody>,
) -> ApiResult<Json<Message>> {
    accounts::reset_password(&state, &body.reset_password_token, &body.password).await?;
    Ok(Message::new(
        "password changed and product keys deleted; log in with the new password",
    ))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AcceptBody {
    /// The token from the invitation mail.
    pub token: String,
    /// A new account's password, or the existing account's.
    pub password: String,
    /// If given, must be the invited address.
    pub email: Option<String>,
    #[serde(default)]
    pub first_name: String,
    #[serde(default)]
    pub last_name: String,
}

impl WriteBody for AcceptBody {
    fn validate(&self, problems: &mut Problems) {
        problems.password("password", &self.password);
        problems.max_len("first_name", &self.first_name, MAX_NAME_CHARS);
        problems.max_len("last_name", &self.last_name, MAX_NAME_CHARS);
    }
}

/// Accepts an invitation: creates the account (or, for an existing one, checks its password)
/// and adds the membership. Answers like log-in.
#[utoipa::path(post, path = "/organizations/users/invite/accept", tag = "workspaces",
    request_body = AcceptBody, responses((status = 200, body = AuthAnswer)))]
pub async fn accept_invitation(
    State(state): State<AppState>,
    Body(body): Body<AcceptBody>,
) -> ApiResult<Json<AuthAnswer>> {
    let acceptance = Acceptance {
        token: body.token,
        password: body.password,
        email: body.email,
        first_name: body.first_name,
        last_name: body.last_name,
    };
    let (user, workspace_id) = accounts::accept_invitation(&state, acceptance).await?;
    tracing::info!(user.id = user.id, workspace.id = workspace_id, "invitation accepted");
    answer(&state, &user, "invitation accepted", "OK")
}
