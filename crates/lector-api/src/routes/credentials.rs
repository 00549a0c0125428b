//! Credentials of external sources, per workspace (`/organizations/{organization}/credentials`).
//! MANAGERs create and delete them; every member lists them. A secret goes in once, is sealed
//! with the service's key before it is stored, and is never answered.

use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::{Body, PathParams, WriteBody};
use crate::routes::paths::OrgPath;
use crate::routes::rfc3339;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use lector_core::validate::{MAX_NAME_CHARS, Problems};
use lector_core::{Action, SourceKind};
use lector_sources::CredentialSecret;
use lector_store::{Credential, NewCredential, WorkspaceRef};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_credentials, create_credential))
        .routes(routes!(delete_credential))
}

/// A credential as served: everything but its secret.
#[derive(Debug, Serialize, ToSchema)]
pub struct CredentialDto {
    pub id: i64,
    pub name: String,
    /// The kind of source it opens: http, postgres or s3.
    pub source: String,
    pub organization_id: i64,
    pub created: String,
    /// The user who created it (null once that user is gone).
    pub created_by: Option<i64>,
}

impl From<Credential> for CredentialDto {
    fn from(c: Credential) -> Self {
        Self {
            id: c.id,
            name: c.name,
            source: c.source.as_str().into(),
            organization_id: c.workspace_id,
            created: rfc3339(c.created),
            created_by: c.created_by,
        }
    }
}

/// A new credential. `secret` depends on `source`:
/// http `{headers?: {name: value}, base_url?}` (`base_url`, `https://host[:port]`, is the one
/// origin the credential fetches from; required with headers), postgres `{url}` (`postgres://user:password@host:port/db`),
/// s3 `{access_key_id, secret_access_key, region, endpoint?, session_token?}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CredentialBody {
    pub name: String,
    #[schema(value_type = String, example = "postgres")]
    pub source: SourceKind,
    #[schema(value_type = Object)]
    pub secret: serde_json::Value,
}

impl WriteBody for CredentialBody {
    const IMMUTABLE: &'static [&'static str] = &["id", "created", "created_by", "organization_id"];

    fn validate(&self, problems: &mut Problems) {
        problems.name("name", &self.name, MAX_NAME_CHARS);
    }
}

#[derive(Debug, Deserialize)]
pub struct CredentialPath {
    organization: String,
    credential_id: i64,
}

/// The credentials of a workspace, without their secrets (any member).
#[utoipa::path(get, path = "/organizations/{organization}/credentials", tag = "credentials",
    params(("organization" = String, Path, description = "workspace id or name")),
    responses((status = 200, body = Vec<CredentialDto>)))]
pub async fn list_credentials(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<OrgPath>,
) -> ApiResult<Json<Vec<CredentialDto>>> {
    let workspace = p.workspace();
    let credentials = state.store.credentials(&caller.scope, &workspace).await?;
    Ok(Json(credentials.into_iter().map(CredentialDto::from).collect()))
}

/// Stores a credential (MANAGER); its secret is sealed and never answered.
#[utoipa::path(post, path = "/organizations/{organization}/credentials", tag = "credentials",
    params(("organization" = String, Path, description = "workspace id or name")),
    request_body = CredentialBody, responses((status = 201, body = CredentialDto)))]
pub async fn create_credential(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<OrgPath>,
    Body(body): Body<CredentialBody>,
) -> ApiResult<(StatusCode, Json<CredentialDto>)> {
    let (workspace, _) = state
        .store
        .workspace_access(&caller.scope, &p.workspace(), Action::Manage)
        .await?;
    let secret = CredentialSecret::parse(body.source, &body.secret)?;
    let credential = NewCredential {
        name: body.name.trim().to_owned(),
        source: body.source,
        sealed_secret: state.sources.seal(workspace.id, &secret),
    };
    let created = state
        .store
        .create_credential(&caller.scope, &workspace, credential)
        .await?;
    tracing::info!(
        credential.id = created.id,
        workspace.id = workspace.id,
        user.id = caller.user.id,
        "credential created"
    );
    Ok((StatusCode::CREATED, Json(created.into())))
}

/// Deletes a credential (MANAGER); answers the deleted credential.
#[utoipa::path(delete, path = "/organizations/{organization}/credentials/{credential_id}", tag = "credentials",
    params(("organization" = String, Path, description = "workspace id or name"), ("credential_id" = i64, Path)),
    responses((status = 200, body = CredentialDto)))]
pub async fn delete_credential(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<CredentialPath>,
) -> ApiResult<Json<CredentialDto>> {
    let workspace = WorkspaceRef::parse(&p.organization);
    let deleted = state
        .store
        .delete_credential(&caller.scope, &workspace, p.credential_id)
        .await?;
    tracing::info!(
        credential.id = deleted.id,
        user.id = caller.user.id,
        "credential deleted"
    );
    Ok(Json(deleted.into()))
}
