//! Projects: the four project types, CRUD, transfer between workspaces, and the type list.

use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::{Body, PathParams, QueryParams, WriteBody, also_immutable};
use crate::routes::rfc3339;
use crate::routes::workspaces::named_or_default_workspace;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use lector_core::validate::{MAX_NAME_CHARS, Problems};
use lector_core::{Action, NotificationType, ProjectType};
use lector_store::{Project, ProjectChanges, ProjectFields, WorkspaceRef};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_types))
        .routes(routes!(list_projects, create_project))
        .routes(routes!(get_project, update_project, delete_project))
        .routes(routes!(transfer_project))
        .routes(routes!(clone_project))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ProjectDto {
    pub id: i64,
    pub name: String,
    /// ABSA, CLASS, LABEL or CLASSLABEL.
    #[serde(rename = "type")]
    pub kind: String,
    /// CREATED; CLONING while a clone job fills the copy; FAILED when that job failed.
    pub status: String,
    pub created: String,
    pub organization_id: i64,
    pub external_id: Option<i64>,
    /// en, de or ar: the sentence rules of the project's documents.
    pub language: String,
    /// Class names (with `details`, and always for a single project).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub classes: Option<Vec<String>>,
    /// Label names (with `details`, and always for a single project).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<Vec<String>>,
    /// The project's models, oldest first (with `details`, and always for a single project).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub models: Option<Vec<crate::routes::models::ModelDto>>,
    /// The task filling the project (a clone's copy job); poll it with `get_project_task`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<i64>,
}

impl ProjectDto {
    fn plain(p: Project) -> Self {
        Self {
            id: p.id,
            name: p.name,
            kind: p.kind.as_str().into(),
            status: p.status,
            created: rfc3339(p.created),
            organization_id: p.workspace_id,
            external_id: p.external_id,
            language: p.language,
            classes: None,
            labels: None,
            models: None,
            task_id: None,
        }
    }

    /// With class and label names and the models, as the caller sees them.
    pub async fn detailed(state: &AppState, scope: &lector_core::Scope, p: Project) -> lector_core::Result<Self> {
        let classes = state.store.classes_of(&p).await?.into_iter().map(|c| c.name).collect();
        let labels = state.store.labels_of(&p).await?.into_iter().map(|l| l.name).collect();
        let models = state
            .store
            .models_of(scope, &p)
            .await?
            .into_iter()
            .map(Into::into)
            .collect();
        Ok(Self {
            classes: Some(classes),
            labels: Some(labels),
            models: Some(models),
            ..Self::plain(p)
        })
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TypeDto {
    pub id: u8,
    pub name: String,
    /// What a tag of this type says.
    pub description: String,
}

/// The project types and their numbers in the original interface.
#[utoipa::path(get, path = "/types", tag = "projects", responses((status = 200, body = Vec<TypeDto>)))]
pub async fn list_types(_caller: Caller) -> Json<Vec<TypeDto>> {
    let mut types: Vec<TypeDto> = ProjectType::ALL
        .iter()
        .map(|t| TypeDto {
            id: t.number(),
            name: t.as_str().into(),
            description: t.description().into(),
        })
        .collect();
    types.sort_by_key(|t| t.id);
    Json(types)
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListProjectsQuery {
    /// Adds the class and label names.
    #[serde(default, deserialize_with = "crate::extract::query_flag")]
    pub details: bool,
    /// Only the projects of this workspace.
    pub organization_id: Option<i64>,
}

/// The projects of the caller's workspaces.
#[utoipa::path(get, path = "/projects", tag = "projects", params(ListProjectsQuery),
    responses((status = 200, body = Vec<ProjectDto>)))]
pub async fn list_projects(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(query): QueryParams<ListProjectsQuery>,
) -> ApiResult<Json<Vec<ProjectDto>>> {
    let projects = state.store.projects(&caller.scope, query.organization_id).await?;
    let mut answer = Vec::with_capacity(projects.len());
    for project in projects {
        answer.push(if query.details {
            ProjectDto::detailed(&state, &caller.scope, project).await?
        } else {
            ProjectDto::plain(project)
        });
    }
    Ok(Json(answer))
}

const PROJECT_IMMUTABLE: &[&str] = &["id", "created", "status", "classes", "labels", "models"];

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateProjectBody {
    pub name: String,
    #[serde(rename = "type")]
    #[schema(value_type = String, example = "CLASS")]
    pub kind: ProjectType,
    /// The workspace; default: the caller's default workspace.
    pub organization_id: Option<i64>,
    pub external_id: Option<i64>,
    /// en (default), de or ar: how the project's documents are split into sentences, unless a
    /// request names another language.
    pub language: Option<String>,
}

impl WriteBody for CreateProjectBody {
    const IMMUTABLE: &'static [&'static str] = PROJECT_IMMUTABLE;

    fn validate(&self, problems: &mut Problems) {
        problems.name("name", &self.name, MAX_NAME_CHARS);
        crate::routes::documents::language(&self.language, problems);
    }
}

/// Creates a project (MANAGER) in the default workspace or the one named.
#[utoipa::path(post, path = "/projects", tag = "projects", request_body = CreateProjectBody,
    responses((status = 201, body = ProjectDto)))]
pub async fn create_project(
    State(state): State<AppState>,
    caller: Caller,
    Body(body): Body<CreateProjectBody>,
) -> ApiResult<(StatusCode, Json<ProjectDto>)> {
    let workspace_id = named_or_default_workspace(&state, &caller, body.organization_id).await?;
    let (workspace, _) = state
        .store
        .workspace_access(&caller.scope, &WorkspaceRef::Id(workspace_id), Action::Manage)
        .await?;
    let fields = ProjectFields {
        name: body.name.trim().to_owned(),
        kind: body.kind,
        external_id: body.external_id,
        language: body.language.unwrap_or_else(|| "en".into()),
    };
    let project = state.store.create_project(&caller.scope, &workspace, fields).await?;
    tracing::info!(project.id = project.id, workspace.id = workspace.id, "project created");
    Ok((
        StatusCode::CREATED,
        Json(ProjectDto::detailed(&state, &caller.scope, project).await?),
    ))
}

#[derive(Debug, Deserialize)]
pub struct ProjectPath {
    project_id: i64,
}

/// A project with its class and label names.
#[utoipa::path(get, path = "/projects/{project_id}", tag = "projects", params(("project_id" = i64, Path)),
    responses((status = 200, body = ProjectDto)))]
pub async fn get_project(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
) -> ApiResult<Json<ProjectDto>> {
    let (project, _) = state
        .store
        .project_access(&caller.scope, p.project_id, Action::Read)
        .await?;
    Ok(Json(ProjectDto::detailed(&state, &caller.scope, project).await?))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateProjectBody {
    pub name: Option<String>,
    #[serde(rename = "type")]
    #[schema(value_type = Option<String>, example = "LABEL")]
    pub kind: Option<ProjectType>,
    pub external_id: Option<i64>,
    /// en, de or ar.
    pub language: Option<String>,
}

impl WriteBody for UpdateProjectBody {
    const IMMUTABLE: &'static [&'static str] = &also_immutable::<7>(PROJECT_IMMUTABLE, &["organization_id"]);

    fn validate(&self, problems: &mut Problems) {
        if let Some(name) = &self.name {
            problems.name("name", name, MAX_NAME_CHARS);
        }
        crate::routes::documents::language(&self.language, problems);
    }
}

/// Renames a project or changes its type (only while it has no classes or labels).
#[utoipa::path(put, path = "/projects/{project_id}", tag = "projects", params(("project_id" = i64, Path)),
    request_body = UpdateProjectBody, responses((status = 200, body = ProjectDto)))]
pub async fn update_project(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
    Body(body): Body<UpdateProjectBody>,
) -> ApiResult<Json<ProjectDto>> {
    let changes = ProjectChanges {
        name: body.name.map(|n| n.trim().to_owned()),
        kind: body.kind,
        external_id: body.external_id,
        language: body.language,
    };
    let project = state.store.update_project(&caller.scope, p.project_id, changes).await?;
    Ok(Json(ProjectDto::detailed(&state, &caller.scope, project).await?))
}

/// Deletes a project with its classes and labels; answers the deleted project. Not while an
/// active workflow of its workspace runs one of its models (409).
#[utoipa::path(delete, path = "/projects/{project_id}", tag = "projects", params(("project_id" = i64, Path)),
    responses((status = 200, body = ProjectDto),
        (status = 409, description = "an active workflow runs one of the project's models, or a job holds it")))]
pub async fn delete_project(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
) -> ApiResult<Json<ProjectDto>> {
    // A MANAGER's, checked before the workflows are (a USER is refused, not told of them).
    state
        .store
        .project_access(&caller.scope, p.project_id, Action::Manage)
        .await?;
    crate::workflow_refs::project_models_not_in_use(&state, &caller.scope, p.project_id).await?;
    let project = state.store.delete_project(&caller.scope, p.project_id).await?;
    tracing::info!(project.id = project.id, "project deleted");
    Ok(Json(ProjectDto::plain(project)))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TransferBody {
    /// The target workspace; the caller must manage projects there too.
    pub organization_id: i64,
}

impl WriteBody for TransferBody {}

/// Moves a project, with everything in it, to another workspace; not while an active workflow
/// of its workspace runs one of its models (409: the models go with it). A move to the
/// workspace it is in moves nothing.
#[utoipa::path(post, path = "/projects/{project_id}/transfer", tag = "projects", params(("project_id" = i64, Path)),
    request_body = TransferBody, responses((status = 200, body = ProjectDto),
        (status = 409, description = "an active workflow of its workspace runs one of the project's models, \
            or the target has no room")))]
pub async fn transfer_project(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
    Body(body): Body<TransferBody>,
) -> ApiResult<Json<ProjectDto>> {
    let (target, _) = state
        .store
        .workspace_access(&caller.scope, &WorkspaceRef::Id(body.organization_id), Action::Manage)
        .await?;
    let (before, _) = state
        .store
        .project_access(&caller.scope, p.project_id, Action::Manage)
        .await?;
    if before.workspace_id == target.id {
        // Nothing moves, and nobody is told it did.
        return Ok(Json(ProjectDto::detailed(&state, &caller.scope, before).await?));
    }
    crate::workflow_refs::project_models_not_in_use(&state, &caller.scope, p.project_id).await?;
    let project = state
        .store
        .transfer_project(&caller.scope, p.project_id, &target)
        .await?;
    tracing::info!(project.id = project.id, workspace.id = target.id, "project transferred");
    let text = format!("Project {} moved to workspace {}.", project.name, target.name);
    if let Err(e) = state
        .store
        .notify(caller.scope.user_id, NotificationType::Info, "Transfer finished", &text)
        .await
    {
        tracing::warn!(error = %e.detail, "the transfer notification was not stored");
    }
    Ok(Json(ProjectDto::detailed(&state, &caller.scope, project).await?))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CloneBody {
    /// The workspace of the copy (default: the original's); the caller must manage projects
    /// there too.
    pub organization_id: Option<i64>,
    /// Default: the original's name with "(copy)".
    pub name: Option<String>,
}

impl WriteBody for CloneBody {
    fn validate(&self, problems: &mut Problems) {
        if let Some(name) = &self.name {
            problems.name("name", name, MAX_NAME_CHARS);
        }
    }
}

/// Copies a project with its classes, labels, groups, documents, labeling sessions and tags.
/// Answers the copy at once (status CLONING) with the `task_id` of the job that fills it;
/// the copy turns CREATED when everything is copied. 409 while the target workspace has 20
/// trainings, analyses, corrections and copies waiting or running.
#[utoipa::path(post, path = "/projects/{project_id}/clone", tag = "projects", params(("project_id" = i64, Path)),
    request_body = CloneBody, responses((status = 200, body = ProjectDto)))]
pub async fn clone_project(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
    Body(body): Body<CloneBody>,
) -> ApiResult<Json<ProjectDto>> {
    let workspace = match body.organization_id {
        Some(id) => WorkspaceRef::Id(id),
        None => WorkspaceRef::Id(
            state
                .store
                .project_access(&caller.scope, p.project_id, Action::Read)
                .await?
                .0
                .workspace_id,
        ),
    };
    let (target, _) = state
        .store
        .workspace_access(&caller.scope, &workspace, Action::Manage)
        .await?;
    let (copy, task_id) = state
        .store
        .start_clone(
            &caller.scope,
            p.project_id,
            &target,
            body.name.map(|n| n.trim().to_owned()),
        )
        .await?;
    tracing::info!(
        project.id = p.project_id,
        copy.id = copy.id,
        job.id = task_id,
        "clone queued"
    );
    let mut answer = ProjectDto::detailed(&state, &caller.scope, copy).await?;
    answer.task_id = Some(task_id);
    Ok(Json(answer))
}
