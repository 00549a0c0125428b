//! Workspaces (called organizations in paths), their members and invitations.

use crate::accounts::{self, Inviter};
use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::{Body, PathParams, QueryParams, WholeList, WriteBody};
use crate::routes::paths::OrgPath;
use crate::routes::rfc3339;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use lector_core::validate::{MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, Problems};
use lector_core::{Action, Role};
use lector_store::{
    Invitation, MAX_MEMBERS_PER_WORKSPACE, Membership, MyWorkspace, Workspace, WorkspaceChanges, WorkspaceRef,
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_workspaces, create_workspace))
        .routes(routes!(get_workspace, update_workspace, deactivate_workspace))
        .routes(routes!(set_default_workspace))
        .routes(routes!(invite_users))
        .routes(routes!(list_invitations))
        .routes(routes!(list_members, add_workspace_member))
        .routes(routes!(update_member_role, remove_member))
        .routes(routes!(cancel_invitation))
        .routes(routes!(resend_invitation))
}

/// Most addresses one invitation call takes.
pub const MAX_INVITES_PER_CALL: usize = 100;

#[derive(Debug, Serialize, ToSchema)]
pub struct WorkspaceDto {
    pub id: i64,
    pub name: String,
    pub description: String,
    pub created: String,
    pub is_beta: bool,
    pub is_read_only: bool,
    pub is_active: bool,
    /// The id of the user whose personal workspace this is (made with their account); null for
    /// any other workspace. Its owner cannot leave it (409), nor be given a lower role in it
    /// except by a superuser (409).
    pub owner_id: Option<i64>,
}

impl From<Workspace> for WorkspaceDto {
    fn from(w: Workspace) -> Self {
        Self {
            id: w.id,
            name: w.name,
            description: w.description,
            created: rfc3339(w.created),
            is_beta: w.is_beta,
            is_read_only: w.is_read_only,
            is_active: w.is_active,
            owner_id: w.owner_id,
        }
    }
}

/// A workspace of the caller's, with the caller's role and default flag.
#[derive(Debug, Serialize, ToSchema)]
pub struct MyWorkspaceDto {
    #[serde(flatten)]
    pub workspace: WorkspaceDto,
    pub role: String,
    pub is_default: bool,
}

impl From<MyWorkspace> for MyWorkspaceDto {
    fn from(w: MyWorkspace) -> Self {
        Self {
            workspace: w.workspace.into(),
            role: w.role.as_str().into(),
            is_default: w.is_default,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MembershipDto {
    pub id: i64,
    pub role: String,
    /// The member's e-mail.
    pub user: String,
    pub user_id: i64,
    pub organization_id: i64,
    pub created: String,
}

impl From<Membership> for MembershipDto {
    fn from(m: Membership) -> Self {
        Self {
            id: m.id,
            role: m.role.as_str().into(),
            user: m.user_email,
            user_id: m.user_id,
            organization_id: m.workspace_id,
            created: rfc3339(m.created),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct InvitationDto {
    pub id: i64,
    pub role: String,
    pub email: String,
    pub invited_by_id: i64,
    pub organization_id: i64,
    pub created: String,
    pub expires: String,
    /// PENDING, ACCEPTED or CANCELLED.
    pub status: String,
    /// Where the invited person sends the token from the invitation mail.
    pub invitation_link: String,
}

fn invitation_dto(state: &AppState, i: Invitation) -> InvitationDto {
    InvitationDto {
        id: i.id,
        role: i.role.as_str().into(),
        email: i.email,
        invited_by_id: i.invited_by_id,
        organization_id: i.workspace_id,
        created: rfc3339(i.created),
        expires: rfc3339(i.expires),
        status: i.status.as_str().into(),
        invitation_link: format!("{}/organizations/users/invite/accept", state.config.public_url()),
    }
}

const WORKSPACE_IMMUTABLE: &[&str] = &["id", "created", "is_active", "owner_id"];

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceBody {
    pub name: String,
    #[serde(default)]
    pub description: String,
}

impl WriteBody for WorkspaceBody {
    const IMMUTABLE: &'static [&'static str] = WORKSPACE_IMMUTABLE;

    fn validate(&self, problems: &mut Problems) {
        validate_workspace_name(problems, &self.name);
        problems.max_len("description", &self.description, MAX_DESCRIPTION_CHARS);
    }
}

fn validate_workspace_name(problems: &mut Problems, name: &str) {
    problems.name("name", name, MAX_NAME_CHARS);
    // Digits address a workspace by id in `{organization}`, so a name must not be all digits.
    problems.check(name.trim().parse::<i64>().is_err(), "name", "must not be a number");
    // `.` and `..` address nothing: clients resolve them away before the path is sent.
    problems.check(!matches!(name.trim(), "." | ".."), "name", "must not be . or ..");
    // Personal workspaces were once named after e-mails; a name that is one could tell a
    // stranger (by 409) who is registered, so no workspace takes such a name.
    problems.check(
        !name.split_whitespace().any(lector_core::validate::is_email),
        "name",
        "must not contain an e-mail address",
    );
}

/// The caller's workspaces, with its role in each and which is the default.
#[utoipa::path(get, path = "/organizations", tag = "workspaces", responses((status = 200, body = Vec<MyWorkspaceDto>)))]
pub async fn list_workspaces(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<Vec<MyWorkspaceDto>>> {
    let workspaces = state.store.my_workspaces(&caller.scope).await?;
    Ok(Json(workspaces.into_iter().map(MyWorkspaceDto::from).collect()))
}

/// Creates a workspace with the caller as its ADMIN (`rate_limits.workspaces_per_hour` a user
/// an hour, superusers aside; 429 past it).
#[utoipa::path(post, path = "/organizations", tag = "workspaces",
    request_body = WorkspaceBody, responses((status = 200, body = WorkspaceDto)))]
pub async fn create_workspace(
    State(state): State<AppState>,
    caller: Caller,
    Body(body): Body<WorkspaceBody>,
) -> ApiResult<Json<WorkspaceDto>> {
    let (name, description) = (body.name.trim(), body.description.trim());
    let workspace = crate::accounts::create_workspace(&state, &caller.scope, name, description).await?;
    tracing::info!(
        workspace.id = workspace.id,
        user.id = caller.user.id,
        "workspace created"
    );
    Ok(Json(workspace.into()))
}

/// The workspace a create request names in `organization_id`, else the caller's default one;
/// 400 when there is neither.
pub(crate) async fn named_or_default_workspace(
    state: &AppState,
    caller: &Caller,
    organization_id: Option<i64>,
) -> lector_core::Result<i64> {
    match organization_id {
        Some(id) => Ok(id),
        None => state
            .store
            .default_workspace_id(caller.user.id)
            .await?
            .ok_or_else(|| lector_core::Error::bad_request("name a workspace in organization_id")),
    }
}

/// A workspace, by id or by name.
#[utoipa::path(get, path = "/organizations/{organization}", tag = "workspaces",
    params(("organization" = String, Path, description = "workspace id or name")), responses((status = 200, body = WorkspaceDto)))]
pub async fn get_workspace(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<OrgPath>,
) -> ApiResult<Json<WorkspaceDto>> {
    let (workspace, _) = state
        .store
        .workspace_access(&caller.scope, &p.workspace(), Action::Read)
        .await?;
    Ok(Json(workspace.into()))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateWorkspaceBody {
    pub name: String,
    pub description: Option<String>,
    /// A read-only workspace refuses every change but to these settings.
    pub is_read_only: Option<bool>,
    /// Superusers only.
    pub is_beta: Option<bool>,
}

impl WriteBody for UpdateWorkspaceBody {
    const IMMUTABLE: &'static [&'static str] = WORKSPACE_IMMUTABLE;

    fn validate(&self, problems: &mut Problems) {
        validate_workspace_name(problems, &self.name);
        if let Some(description) = &self.description {
            problems.max_len("description", description, MAX_DESCRIPTION_CHARS);
        }
    }
}

/// Changes a workspace (ADMIN).
#[utoipa::path(put, path = "/organizations/{organization}", tag = "workspaces",
    params(("organization" = String, Path, description = "workspace id or name")),
    request_body = UpdateWorkspaceBody, responses((status = 200, body = WorkspaceDto)))]
pub async fn update_workspace(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<OrgPath>,
    Body(body): Body<UpdateWorkspaceBody>,
) -> ApiResult<Json<WorkspaceDto>> {
    let changes = WorkspaceChanges {
        name: Some(body.name.trim().to_owned()),
        description: body.description.map(|d| d.trim().to_owned()),
        is_read_only: body.is_read_only,
        is_beta: body.is_beta,
    };
    let workspace = state
        .store
        .update_workspace(&caller.scope, &p.workspace(), changes)
        .await?;
    Ok(Json(workspace.into()))
}

/// Deactivates a workspace (ADMIN); it disappears for its members.
#[utoipa::path(delete, path = "/organizations/{organization}", tag = "workspaces",
    params(("organization" = String, Path, description = "workspace id or name")), responses((status = 200, body = WorkspaceDto)))]
pub async fn deactivate_workspace(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<OrgPath>,
) -> ApiResult<Json<WorkspaceDto>> {
    let workspace = state.store.deactivate_workspace(&caller.scope, &p.workspace()).await?;
    tracing::info!(
        workspace.id = workspace.id,
        user.id = caller.user.id,
        "workspace deactivated"
    );
    Ok(Json(workspace.into()))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DefaultBody {
    /// `true` makes the workspace the default; `false` returns the default to the personal workspace.
    pub default: bool,
}

impl WriteBody for DefaultBody {}

/// Makes a workspace the caller's default, or stops it being the default.
#[utoipa::path(post, path = "/organizations/{organization}/default", tag = "workspaces",
    params(("organization" = String, Path, description = "workspace id or name")),
    request_body = DefaultBody, responses((status = 200, body = MyWorkspaceDto)))]
pub async fn set_default_workspace(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<OrgPath>,
    Body(body): Body<DefaultBody>,
) -> ApiResult<Json<MyWorkspaceDto>> {
    let my_workspace = state
        .store
        .set_default_workspace(&caller.scope, &p.workspace(), body.default)
        .await?;
    Ok(Json(my_workspace.into()))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InviteBody {
    /// The role every invited person gets; no higher than the caller's.
    #[schema(value_type = String, example = "USER")]
    pub role: Role,
    pub emails: Vec<String>,
}

impl WriteBody for InviteBody {
    fn validate(&self, problems: &mut Problems) {
        problems.check(!self.emails.is_empty(), "emails", "must name at least one address");
        problems.check(
            self.emails.len() <= MAX_INVITES_PER_CALL,
            "emails",
            &format!("must name at most {MAX_INVITES_PER_CALL} addresses"),
        );
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct NotInvited {
    pub email: String,
    pub reason: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct InviteAnswer {
    pub not_invited: Vec<NotInvited>,
    pub invitations: Vec<InvitationDto>,
}

/// Invites people by e-mail; addresses that cannot be invited come back with a reason.
#[utoipa::path(post, path = "/organizations/{organization}/users/invite", tag = "workspaces",
    params(("organization" = String, Path, description = "workspace id or name")),
    request_body = InviteBody, responses((status = 200, body = InviteAnswer)))]
pub async fn invite_users(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<OrgPath>,
    Body(body): Body<InviteBody>,
) -> ApiResult<Json<InviteAnswer>> {
    let inviter = Inviter {
        scope: &caller.scope,
        user: &caller.user,
    };
    let invited = accounts::invite(&state, inviter, &p.workspace(), body.role, &body.emails).await?;
    Ok(Json(InviteAnswer {
        not_invited: invited
            .not_invited
            .into_iter()
            .map(|(email, reason)| NotInvited {
                email,
                reason: reason.into(),
            })
            .collect(),
        invitations: invited
            .invitations
            .into_iter()
            .map(|i| invitation_dto(&state, i))
            .collect(),
    }))
}

/// Pending invitations of a workspace.
#[utoipa::path(get, path = "/organizations/{organization}/users/invites", tag = "workspaces",
    params(("organization" = String, Path, description = "workspace id or name")), responses((status = 200, body = Vec<InvitationDto>)))]
pub async fn list_invitations(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<OrgPath>,
) -> ApiResult<Json<Vec<InvitationDto>>> {
    let invitations = state.store.pending_invitations(&caller.scope, &p.workspace()).await?;
    Ok(Json(
        invitations.into_iter().map(|i| invitation_dto(&state, i)).collect(),
    ))
}

// The member list's default page (`WholeList`) holds a whole workspace.
const _: () = assert!(MAX_MEMBERS_PER_WORKSPACE <= crate::extract::Paging::MAX_LIMIT);

/// Members of a workspace, oldest membership first: all of them unless `offset` and `limit`
/// ask for one page.
#[utoipa::path(get, path = "/organizations/{organization}/permissions", tag = "workspaces",
    params(("organization" = String, Path, description = "workspace id or name"), WholeList),
    responses((status = 200, body = Vec<MembershipDto>)))]
pub async fn list_members(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<OrgPath>,
    QueryParams(query): QueryParams<WholeList>,
) -> ApiResult<Json<Vec<MembershipDto>>> {
    let paging = query.paging()?;
    let members = state
        .store
        .members(&caller.scope, &p.workspace(), paging.offset, paging.limit)
        .await?;
    Ok(Json(members.into_iter().map(MembershipDto::from).collect()))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AddMemberBody {
    #[schema(value_type = String, example = "ANNOTATOR")]
    pub role: Role,
    pub user_id: i64,
}

impl WriteBody for AddMemberBody {
    const IMMUTABLE: &'static [&'static str] = &["id", "created"];
}

/// Adds an existing user to a workspace (MANAGER; no role above the caller's).
#[utoipa::path(post, path = "/organizations/{organization}/permissions", tag = "workspaces",
    params(("organization" = String, Path, description = "workspace id or name")),
    request_body = AddMemberBody, responses((status = 200, body = MembershipDto)))]
pub async fn add_workspace_member(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<OrgPath>,
    Body(body): Body<AddMemberBody>,
) -> ApiResult<Json<MembershipDto>> {
    let membership = state
        .store
        .add_member(&caller.scope, &p.workspace(), body.user_id, body.role)
        .await?;
    Ok(Json(membership.into()))
}

#[derive(Debug, Deserialize)]
pub struct MemberPath {
    organization: String,
    permission_id: i64,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RoleBody {
    #[schema(value_type = String, example = "MANAGER")]
    pub role: Role,
}

impl WriteBody for RoleBody {
    const IMMUTABLE: &'static [&'static str] = &["id", "user", "user_id", "created"];
}

/// Changes a member's role (MANAGER; never above the caller's own).
#[utoipa::path(put, path = "/organizations/{organization}/permissions/{permission_id}", tag = "workspaces",
    params(("organization" = String, Path, description = "workspace id or name"), ("permission_id" = i64, Path)),
    request_body = RoleBody, responses((status = 200, body = MembershipDto)))]
pub async fn update_member_role(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<MemberPath>,
    Body(body): Body<RoleBody>,
) -> ApiResult<Json<MembershipDto>> {
    let workspace = WorkspaceRef::parse(&p.organization);
    let membership = state
        .store
        .update_member_role(&caller.scope, &workspace, p.permission_id, body.role)
        .await?;
    Ok(Json(membership.into()))
}

/// Removes a member (MANAGER), or lets a member leave; answers the removed membership.
#[utoipa::path(delete, path = "/organizations/{organization}/permissions/{permission_id}", tag = "workspaces",
    params(("organization" = String, Path, description = "workspace id or name"), ("permission_id" = i64, Path)),
    responses((status = 200, body = MembershipDto)))]
pub async fn remove_member(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<MemberPath>,
) -> ApiResult<Json<MembershipDto>> {
    let workspace = WorkspaceRef::parse(&p.organization);
    let membership = state
        .store
        .remove_member(&caller.scope, &workspace, p.permission_id)
        .await?;
    Ok(Json(membership.into()))
}

#[derive(Debug, Deserialize)]
pub struct InvitationPath {
    organization: String,
    invitation_id: i64,
}

/// Cancels a pending invitation; its token stops working.
#[utoipa::path(delete, path = "/organizations/{organization}/invitation/{invitation_id}", tag = "workspaces",
    params(("organization" = String, Path, description = "workspace id or name"), ("invitation_id" = i64, Path)),
    responses((status = 200, body = InvitationDto)))]
pub async fn cancel_invitation(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<InvitationPath>,
) -> ApiResult<Json<InvitationDto>> {
    let workspace = WorkspaceRef::parse(&p.organization);
    let invitation = state
        .store
        .cancel_invitation(&caller.scope, &workspace, p.invitation_id)
        .await?;
    Ok(Json(invitation_dto(&state, invitation)))
}

/// Mails a pending invitation again with a fresh token (the old one stops working).
#[utoipa::path(post, path = "/organizations/{organization}/invitation/{invitation_id}/resend", tag = "workspaces",
    params(("organization" = String, Path, description = "workspace id or name"), ("invitation_id" = i64, Path)),
    responses((status = 200, body = InvitationDto)))]
pub async fn resend_invitation(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<InvitationPath>,
) -> ApiResult<Json<InvitationDto>> {
    let inviter = Inviter {
        scope: &caller.scope,
        user: &caller.user,
    };
    let workspace = WorkspaceRef::parse(&p.organization);
    let invitation = accounts::resend_invitation(&state, inviter, &workspace, p.invitation_id).await?;
    Ok(Json(invitation_dto(&state, invitation)))
}
