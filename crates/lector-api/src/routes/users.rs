//! Users: profiles, permission flags, product keys, and accounts created by a superuser.

use crate::accounts::{self, NewAccount};
use crate::auth::{Caller, PRODUCT_KEY_PREFIX, random_token, token_hash};
use crate::error::ApiResult;
use crate::extract::{Body, PathParams, WriteBody};
use crate::login_limits::LoginAttempt;
use crate::routes::rfc3339;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::http::request::Parts;
use lector_core::validate::{MAX_NAME_CHARS, Problems, normalize_email};
use lector_core::{ErrorCode, Result};
use lector_store::{ProductKey, User, UserChanges};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_user))
        .routes(routes!(get_user, update_user))
        .routes(routes!(get_user_permissions, update_user_permissions))
        .routes(routes!(list_product_keys, create_product_key))
        .routes(routes!(delete_product_key))
}

/// A user as served.
#[derive(Debug, Serialize, ToSchema)]
pub struct UserDto {
    pub id: i64,
    pub email: String,
    pub first_name: String,
    pub last_name: String,
    pub is_superuser: bool,
    pub is_betauser: bool,
    pub created: String,
}

impl From<&User> for UserDto {
    fn from(u: &User) -> Self {
        Self {
            id: u.id,
            email: u.email.clone(),
            first_name: u.first_name.clone(),
            last_name: u.last_name.clone(),
            is_superuser: u.is_superuser,
            is_betauser: u.is_betauser,
            created: rfc3339(u.created),
        }
    }
}

/// Server-owned fields of a user, refused in request bodies.
const USER_IMMUTABLE: &[&str] = &["id", "created", "is_superuser", "is_betauser"];

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateUserBody {
    pub email: Option<String>,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    /// A new password (at least 8 characters); revokes every earlier access token (product keys
    /// stay valid).
    pub password: Option<String>,
    /// The caller's present password: required to change `password` or `email` of one's own
    /// account, unless it has none yet (a first-time login). Superusers changing someone else's
    /// account need not send it.
    pub current_password: Option<String>,
}

impl WriteBody for UpdateUserBody {
    const IMMUTABLE: &'static [&'static str] = USER_IMMUTABLE;

    fn validate(&self, problems: &mut Problems) {
        if let Some(email) = &self.email {
            problems.email("email", email);
        }
        if let Some(password) = &self.password {
            problems.password("password", password);
        }
        for (field, value) in [("first_name", &self.first_name), ("last_name", &self.last_name)] {
            if let Some(value) = value {
                problems.max_len(field, value, MAX_NAME_CHARS);
            }
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct UserPath {
    user_id: i64,
}

/// A user: the caller itself, or anyone for a superuser.
#[utoipa::path(get, path = "/users/{user_id}", tag = "users",
    params(("user_id" = i64, Path)), responses((status = 200, body = UserDto)))]
pub async fn get_user(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<UserPath>,
) -> ApiResult<Json<UserDto>> {
    Ok(Json(UserDto::from(&state.store.user(&caller.scope, p.user_id).await?)))
}

/// Changes a profile; a new password revokes every earlier token, the caller's included.
/// Changing one's own password or e-mail needs `current_password`.
#[utoipa::path(put, path = "/users/{user_id}", tag = "users", params(("user_id" = i64, Path)),
    request_body = UpdateUserBody, responses((status = 200, body = UserDto)))]
pub async fn update_user(
    State(state): State<AppState>,
    parts: Parts,
    caller: Caller,
    PathParams(p): PathParams<UserPath>,
    Body(body): Body<UpdateUserBody>,
) -> ApiResult<Json<UserDto>> {
    // The user itself or a superuser: refused before any password is hashed for it.
    state.store.user(&caller.scope, p.user_id).await?;
    let email = body.email.as_deref().map(normalize_email);
    let changes_email = email.as_ref().is_some_and(|e| *e != caller.user.email);
    if body.password.is_some() || changes_email {
        let current = body.current_password.as_deref();
        require_current_password(&state, &parts, &caller, p.user_id, current).await?;
    }
    if changes_email {
        // A taken address answers 409, so each try tells whether an address is registered: an
        // account gets as many an hour as an address gets registrations.
        let limit = state.config.rate_limits.register_per_hour;
        state
            .store
            .hit_rate_limit(&format!("email-change:{}", caller.user.id), limit, 3600)
            .await?;
    }
    let password_hash = match &body.password {
        Some(password) => Some(state.auth.hash_password(password).await?),
        None => None,
    };
    let changes = UserChanges {
        email,
        first_name: body.first_name.map(|s| s.trim().to_owned()),
        last_name: body.last_name.map(|s| s.trim().to_owned()),
        password_hash,
    };
    Ok(Json(UserDto::from(
        &state.store.update_user(&caller.scope, p.user_id, changes).await?,
    )))
}

/// Proof for a password or e-mail change: the caller's own present password. A superuser
/// changing another account is exempt, and the change is logged; callers who may not change the
/// account at all were refused before (`update_user`'s first line). A wrong password
/// counts as a failed log-in of the account from the caller's address, and the log-in limits
/// refuse further tries (429) before the password is checked: a stolen access token or product
/// key cannot be used to guess the password it does not carry.
async fn require_current_password(
    state: &AppState,
    parts: &Parts,
    caller: &Caller,
    user_id: i64,
    current: Option<&str>,
) -> Result<()> {
    if caller.user.id != user_id {
        if caller.scope.is_superuser {
            tracing::warn!(
                user.id = caller.user.id,
                target.user.id = user_id,
                "a superuser changes the password or e-mail of another account"
            );
        }
        return Ok(());
    }
    let stored = match state.store.login_candidate(&caller.user.email).await? {
        Some((_, stored)) => stored,
        None => return Err(lector_core::Error::not_found("user")),
    };
    // An account made by a superuser has no password until its first-time login sets one.
    if stored.is_none() {
        return Ok(());
    }
    let field = |code, detail: &str, message: &str| {
        let mut error = lector_core::Error::new(code, detail);
        error
            .errors
            .push(lector_core::FieldError::new("current_password", message));
        error
    };
    let Some(current) = current else {
        return Err(field(
            ErrorCode::BadRequest,
            "changing the password or e-mail needs current_password",
            "is required to change the password or e-mail",
        ));
    };
    let attempt = LoginAttempt::new(state, parts, Some(&caller.user.email));
    attempt.reserve(state, true).await?;
    if !state.auth.verify_password(current, stored.as_deref()).await {
        return Err(field(
            ErrorCode::Forbidden,
            "current_password is not the account's password",
            "is not the account's password",
        ));
    }
    attempt.did_not_fail(state, true).await
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PermissionsDto {
    pub user_id: i64,
    pub is_superuser: bool,
    pub is_betauser: bool,
    /// The user's workspaces and its role in each.
    pub workspaces: Vec<WorkspaceRole>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WorkspaceRole {
    pub organization_id: i64,
    pub role: String,
}

async fn permissions(state: &AppState, caller: &Caller, user_id: i64) -> Result<PermissionsDto> {
    let user = state.store.user(&caller.scope, user_id).await?;
    let (_, scope) = state
        .store
        .principal(user.id)
        .await?
        .ok_or_else(|| lector_core::Error::not_found("user"))?;
    Ok(PermissionsDto {
        user_id: user.id,
        is_superuser: user.is_superuser,
        is_betauser: user.is_betauser,
        workspaces: scope
            .workspaces
            .iter()
            .map(|w| WorkspaceRole {
                organization_id: w.workspace_id,
                role: w.role.as_str().into(),
            })
            .collect(),
    })
}

/// The user's permission flags and workspace roles.
#[utoipa::path(get, path = "/users/{user_id}/permissions", tag = "users",
    params(("user_id" = i64, Path)), responses((status = 200, body = PermissionsDto)))]
pub async fn get_user_permissions(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<UserPath>,
) -> ApiResult<Json<PermissionsDto>> {
    Ok(Json(permissions(&state, &caller, p.user_id).await?))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PermissionsBody {
    pub is_superuser: Option<bool>,
    pub is_betauser: Option<bool>,
}

impl WriteBody for PermissionsBody {
    const IMMUTABLE: &'static [&'static str] = &["user_id", "workspaces"];
}

/// Sets `is_superuser` and `is_betauser` (superusers only).
#[utoipa::path(put, path = "/users/{user_id}/permissions", tag = "users", params(("user_id" = i64, Path)),
    request_body = PermissionsBody, responses((status = 200, body = PermissionsDto)))]
pub async fn update_user_permissions(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<UserPath>,
    Body(body): Body<PermissionsBody>,
) -> ApiResult<Json<PermissionsDto>> {
    state
        .store
        .set_permissions(&caller.scope, p.user_id, body.is_superuser, body.is_betauser)
        .await?;
    Ok(Json(permissions(&state, &caller, p.user_id).await?))
}

/// A product key as served; `token` is whole only in the answer that creates it.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProductKeyDto {
    pub id: i64,
    pub name: String,
    pub created: String,
    /// The whole token when just created; afterwards its first characters and an ellipsis.
    pub token: String,
}

impl From<ProductKey> for ProductKeyDto {
    fn from(k: ProductKey) -> Self {
        Self {
            id: k.id,
            name: k.name,
            created: rfc3339(k.created),
            token: format!("{}…", k.prefix),
        }
    }
}

/// The user's product keys (tokens shortened).
#[utoipa::path(get, path = "/users/{user_id}/keys", tag = "users",
    params(("user_id" = i64, Path)), responses((status = 200, body = Vec<ProductKeyDto>)))]
pub async fn list_product_keys(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<UserPath>,
) -> ApiResult<Json<Vec<ProductKeyDto>>> {
    let keys = state.store.product_keys(&caller.scope, p.user_id).await?;
    Ok(Json(keys.into_iter().map(ProductKeyDto::from).collect()))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProductKeyBody {
    /// Default: "Key " and the key's first characters (the original client sends `{}`).
    pub name: Option<String>,
}

impl WriteBody for ProductKeyBody {
    const IMMUTABLE: &'static [&'static str] = &["id", "created", "token"];

    fn validate(&self, problems: &mut Problems) {
        if let Some(name) = &self.name {
            problems.name("name", name, MAX_NAME_CHARS);
        }
    }
}

/// Creates a product key: a long-lived bearer token shown whole only in this answer. Without a
/// `name` (the original client sends `{}`) the key is named "Key " and its first characters.
#[utoipa::path(post, path = "/users/{user_id}/keys", tag = "users", params(("user_id" = i64, Path)),
    request_body = ProductKeyBody, responses((status = 201, body = ProductKeyDto)))]
pub async fn create_product_key(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<UserPath>,
    Body(body): Body<ProductKeyBody>,
) -> ApiResult<(StatusCode, Json<ProductKeyDto>)> {
    let token = format!("{PRODUCT_KEY_PREFIX}{}", random_token());
    let prefix: String = token.chars().take(PRODUCT_KEY_PREFIX.len() + 6).collect();
    let name = match &body.name {
        Some(name) => name.trim().to_owned(),
        None => format!("Key {prefix}"),
    };
    let key = state
        .store
        .create_product_key(&caller.scope, p.user_id, &name, &prefix, &token_hash(&token))
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(ProductKeyDto {
            token,
            ..ProductKeyDto::from(key)
        }),
    ))
}

#[derive(Debug, Deserialize)]
pub struct KeyPath {
    user_id: i64,
    key_id: i64,
}

/// Deletes a product key and answers the keys that remain.
#[utoipa::path(delete, path = "/users/{user_id}/keys/{key_id}", tag = "users",
    params(("user_id" = i64, Path), ("key_id" = i64, Path)), responses((status = 200, body = Vec<ProductKeyDto>)))]
pub async fn delete_product_key(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<KeyPath>,
) -> ApiResult<Json<Vec<ProductKeyDto>>> {
    let keys = state
        .store
        .delete_product_key(&caller.scope, p.user_id, p.key_id)
        .await?;
    Ok(Json(keys.into_iter().map(ProductKeyDto::from).collect()))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateUserBody {
    pub email: String,
    #[serde(default)]
    pub first_name: String,
    #[serde(default)]
    pub last_name: String,
    /// Without a password the user gets a first-time-login token by mail.
    pub password: Option<String>,
    #[serde(default)]
    pub is_superuser: bool,
}

impl WriteBody for CreateUserBody {
    const IMMUTABLE: &'static [&'static str] = &["id", "created"];

    fn validate(&self, problems: &mut Problems) {
        problems.email("email", &self.email);
        if let Some(password) = &self.password {
            problems.password("password", password);
        }
        problems.max_len("first_name", &self.first_name, MAX_NAME_CHARS);
        problems.max_len("last_name", &self.last_name, MAX_NAME_CHARS);
    }
}

impl From<CreateUserBody> for NewAccount {
    fn from(body: CreateUserBody) -> Self {
        NewAccount {
            email: body.email,
            first_name: body.first_name,
            last_name: body.last_name,
            password: body.password,
            is_superuser: body.is_superuser,
        }
    }
}

/// Creates a user (superusers only); without a password, mails a first-time-login token.
#[utoipa::path(post, path = "/users", tag = "users",
    request_body = CreateUserBody, responses((status = 201, body = UserDto)))]
pub async fn create_user(
    State(state): State<AppState>,
    caller: Caller,
    Body(body): Body<CreateUserBody>,
) -> ApiResult<(StatusCode, Json<UserDto>)> {
    caller.require_superuser()?;
    let (user, token) = accounts::create_account(&state, body.into()).await?;
    if let Some(token) = token {
        accounts::mail_first_login(&state, &caller.user, &user, &token).await?;
    }
    Ok((StatusCode::CREATED, Json(UserDto::from(&user))))
}
