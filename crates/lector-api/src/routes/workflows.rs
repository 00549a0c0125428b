//! Workflows of a workspace (`/workflows`): a webhook trigger and ordered steps (SPEC section
//! 6, DESIGN section 8). Members read them and their executions; USERs and up create, change,
//! delete, activate, deactivate and test them. The addresses themselves are served by
//! `routes/webhooks.rs`.

use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::{Body, PageInfo, Paging, PathParams, QueryParams, WriteBody};
use crate::routes::rfc3339;
use crate::routes::workspaces::named_or_default_workspace;
use crate::state::AppState;
use crate::workflow_refs::{Moment, check_references};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use lector_core::validate::{MAX_NAME_CHARS, Problems};
use lector_core::{Action, Error, Role};
use lector_store::{Execution, NewWorkflow, Workflow, WorkspaceRef};
use lector_workflow::Definition;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_workflows, create_workflow))
        .routes(routes!(get_workflow, update_workflow, delete_workflow))
        .routes(routes!(activate_workflow))
        .routes(routes!(deactivate_workflow))
        .routes(routes!(listen_workflow_test))
        .routes(routes!(list_workflow_executions))
}

/// A workflow as served: its trigger (without the authentication's secret), steps and
/// addresses.
#[derive(Debug, Serialize, ToSchema)]
pub struct WorkflowDto {
    pub id: i64,
    pub name: String,
    pub organization_id: i64,
    /// Whether the production address listens.
    pub active: bool,
    /// Whether production executions keep their data (test executions always do).
    pub keep_data: bool,
    /// `{path, http_method, multiple_methods, http_methods, response_mode (immediately,
    /// last_step), response_data (all_entries, first_entry_json, no_data), property_name,
    /// response_code, authentication {type: none, header or basic, name, user},
    /// rate_limit_per_minute}`.
    #[schema(value_type = Object)]
    pub trigger: serde_json::Value,
    /// The steps every method leads to: `{type: analyze, extract, notify, http_request or set, …}`.
    #[schema(value_type = Vec<Object>)]
    pub steps: serde_json::Value,
    /// The steps of the methods that lead elsewhere.
    #[schema(value_type = Object)]
    pub steps_by_method: serde_json::Value,
    /// The methods the webhook listens to.
    pub methods: Vec<String>,
    pub production_url: String,
    pub test_url: String,
    /// The user whose role the production address's steps run with (who last activated it).
    pub runs_as_user_id: Option<i64>,
    /// The user whose role a test call's steps run with (who last armed the test address).
    pub test_runs_as_user_id: Option<i64>,
    pub created_by: Option<i64>,
    pub created: String,
    pub updated: String,
}

/// What a member who may not edit a workflow sees of its outbound calls' header values (an
/// API key often travels there).
const HIDDEN_HEADER: &str = "(hidden)";

impl WorkflowDto {
    /// The workflow as `scope` may see it: to a member below USER (who cannot edit it), its
    /// `http_request` steps' header values are hidden.
    fn shown_to(mut self, scope: &lector_core::Scope) -> Self {
        let may_edit = scope.is_superuser || scope.role_in(self.organization_id) >= Some(Role::User);
        if !may_edit {
            hide_headers(&mut self.steps);
            if let Some(by_method) = self.steps_by_method.as_object_mut() {
                by_method.values_mut().for_each(hide_headers);
            }
        }
        self
    }

    fn of(state: &AppState, workflow: Workflow) -> lector_core::Result<Self> {
        let definition: Definition = serde_json::from_str(&workflow.definition).map_err(|e| {
            tracing::error!(workflow.id = workflow.id, error = %e, "a stored workflow definition does not parse");
            Error::internal()
        })?;
        let base = state.config.public_url();
        let path = &definition.trigger.path;
        Ok(Self {
            id: workflow.id,
            name: workflow.name,
            organization_id: workflow.workspace_id,
            active: workflow.active,
            keep_data: workflow.keep_data,
            methods: definition
                .trigger
                .methods()
                .iter()
                .map(|m| m.as_str().to_owned())
                .collect(),
            production_url: format!("{base}/webhook/{path}"),
            test_url: format!("{base}/webhook-test/{path}"),
            trigger: serde_json::to_value(&definition.trigger).unwrap_or_default(),
            steps: serde_json::to_value(&definition.steps).unwrap_or_default(),
            steps_by_method: serde_json::to_value(&definition.steps_by_method).unwrap_or_default(),
            runs_as_user_id: workflow.run_as,
            test_runs_as_user_id: workflow.test_run_as,
            created_by: workflow.created_by,
            created: rfc3339(workflow.created),
            updated: rfc3339(workflow.updated),
        })
    }
}

/// A workflow to create, or the whole of one to replace (PUT).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkflowBody {
    pub name: String,
    /// The workspace (create only; default: the caller's default workspace).
    pub organization_id: Option<i64>,
    #[serde(default)]
    pub keep_data: bool,
    /// The webhook trigger; see WorkflowDto. `authentication` takes `value` (header) or
    /// `password` (basic), stored as a digest and never answered; an update may leave the
    /// secret out to keep it, or `authentication` itself to keep it whole (`{"type": "none"}`
    /// removes it).
    #[schema(value_type = Object)]
    pub trigger: serde_json::Value,
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub steps: serde_json::Value,
    #[serde(default)]
    #[schema(value_type = Object)]
    pub steps_by_method: serde_json::Value,
}

impl WriteBody for WorkflowBody {
    const IMMUTABLE: &'static [&'static str] = &[
        "id",
        "active",
        "created",
        "updated",
        "created_by",
        "runs_as_user_id",
        "test_runs_as_user_id",
        "production_url",
        "test_url",
        "methods",
    ];
    /// Notification messages and set values may hold newlines.
    const FREE_TEXT: &'static [&'static str] = &["steps", "steps_by_method"];

    fn validate(&self, problems: &mut Problems) {
        problems.name("name", &self.name, MAX_NAME_CHARS);
    }
}

impl WorkflowBody {
    /// The definition the body describes: what does not fit its shape is refused as the body's
    /// own fields are (400, `unknown_field` for an unknown one), naming where it is
    /// (`trigger.http_method`, `steps[1].model_id`).
    fn definition(&self) -> lector_core::Result<Definition> {
        let value = serde_json::json!({
            "trigger": self.trigger,
            "steps": if self.steps.is_null() { serde_json::json!([]) } else { self.steps.clone() },
            "steps_by_method": if self.steps_by_method.is_null() { serde_json::json!({}) } else { self.steps_by_method.clone() },
        });
        serde_path_to_error::deserialize(value).map_err(crate::extract::shape_problem)
    }

    /// The fields to store, checked; `previous` is the workflow an update replaces.
    /// An update whose trigger leaves `authentication` out keeps the stored one (and its
    /// secret); `{"type": "none"}` removes it.
    fn prepare(&self, previous: Option<&Workflow>) -> lector_core::Result<NewWorkflow> {
        let old: Option<Definition> = previous.and_then(|w| serde_json::from_str(&w.definition).ok());
        let digest = previous.and_then(|w| w.auth_digest.as_deref());
        let mut definition = self.definition()?;
        if let Some(old) = &old
            && self.trigger.get("authentication").is_none()
        {
            definition.trigger.authentication = old.trigger.authentication.clone();
        }
        let prepared = definition.prepare(old.as_ref().map(|d| (d, digest)))?;
        Ok(NewWorkflow {
            name: self.name.trim().to_owned(),
            definition: prepared.json,
            auth_digest: prepared.auth_digest,
            keep_data: self.keep_data,
            routes: prepared.routes,
        })
    }
}

/// One page of workflows.
#[derive(Debug, Serialize, ToSchema)]
pub struct WorkflowPage {
    pub workflows: Vec<WorkflowDto>,
    #[serde(flatten)]
    pub page: PageInfo,
}

/// A recorded execution.
#[derive(Debug, Serialize, ToSchema)]
pub struct ExecutionDto {
    pub id: i64,
    pub workflow_id: i64,
    /// test or production.
    pub mode: String,
    pub method: String,
    /// running, success or error.
    pub status: String,
    pub started: String,
    pub finished: Option<String>,
    pub error: Option<String>,
    /// For test executions, and production ones of a workflow that keeps them: what each step
    /// made, `[{step, type, entries: [{json, binary?}]}]`, the webhook's entry first.
    #[schema(value_type = Option<Vec<Object>>)]
    pub data: Option<serde_json::Value>,
    /// Set when the execution's data is kept but not in this page: a page carries up to 4 MiB
    /// of data (the first execution's always); ask for a smaller `limit` from here.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub data_left_out: bool,
}

impl From<Execution> for ExecutionDto {
    fn from(e: Execution) -> Self {
        Self {
            id: e.id,
            workflow_id: e.workflow_id,
            mode: e.mode,
            method: e.method,
            status: e.status,
            started: rfc3339(e.started),
            finished: e.finished.map(rfc3339),
            error: e.error,
            data: e.data.and_then(|d| serde_json::from_str(&d).ok()),
            data_left_out: e.data_left_out,
        }
    }
}

/// One page of executions, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct ExecutionPage {
    pub executions: Vec<ExecutionDto>,
    #[serde(flatten)]
    pub page: PageInfo,
}

/// The test address's window.
#[derive(Debug, Serialize, ToSchema)]
pub struct TestListening {
    pub workflow: WorkflowDto,
    pub test_url: String,
    /// When the address stops listening (RFC 3339), unless a call uses it first.
    pub listening_until: String,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct WorkflowQuery {
    /// Only the workflows of this workspace.
    pub organization_id: Option<i64>,
    #[serde(default)]
    pub offset: i64,
    #[serde(default = "crate::extract::default_limit")]
    pub limit: i64,
}

#[derive(Debug, Deserialize)]
pub struct WorkflowPath {
    workflow_id: i64,
}

/// The workflows of the caller's workspaces, oldest first (any member).
#[utoipa::path(get, path = "/workflows", tag = "workflows", params(WorkflowQuery),
    responses((status = 200, body = WorkflowPage)))]
pub async fn list_workflows(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(q): QueryParams<WorkflowQuery>,
) -> ApiResult<Json<WorkflowPage>> {
    let paging = Paging::checked(q.offset, q.limit)?;
    let (found, has_more) = state
        .store
        .workflows(&caller.scope, q.organization_id, paging.offset, paging.limit)
        .await?;
    let workflows = found
        .into_iter()
        .map(|w| Ok(WorkflowDto::of(&state, w)?.shown_to(&caller.scope)))
        .collect::<lector_core::Result<Vec<_>>>()?;
    Ok(Json(WorkflowPage {
        page: paging.page(workflows.len(), has_more),
        workflows,
    }))
}

/// Creates an inactive workflow (USER) in the default workspace or the one named.
#[utoipa::path(post, path = "/workflows", tag = "workflows", request_body = WorkflowBody,
    responses((status = 201, body = WorkflowDto)))]
pub async fn create_workflow(
    State(state): State<AppState>,
    caller: Caller,
    Body(body): Body<WorkflowBody>,
) -> ApiResult<(StatusCode, Json<WorkflowDto>)> {
    caller.scope.may_somewhere(Action::Edit)?;
    let workspace_id = named_or_default_workspace(&state, &caller, body.organization_id).await?;
    // Access first: the checks of the definition answer about the workspace (who is a member
    // of it), which a caller who may not work there must not learn; 404 as for no workspace.
    state
        .store
        .workspace_access(&caller.scope, &WorkspaceRef::Id(workspace_id), Action::Edit)
        .await?;
    let new = body.prepare(None)?;
    check_references(&state, &caller.scope, workspace_id, &body.definition()?, Moment::Saving).await?;
    let created = state.store.create_workflow(&caller.scope, workspace_id, &new).await?;
    tracing::info!(
        workflow.id = created.id,
        workspace.id = workspace_id,
        "workflow created"
    );
    Ok((StatusCode::CREATED, Json(WorkflowDto::of(&state, created)?)))
}

/// One workflow (any member; below USER, without its outbound calls' header values).
#[utoipa::path(get, path = "/workflows/{workflow_id}", tag = "workflows",
    params(("workflow_id" = i64, Path)), responses((status = 200, body = WorkflowDto)))]
pub async fn get_workflow(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<WorkflowPath>,
) -> ApiResult<Json<WorkflowDto>> {
    let workflow = state.store.workflow(&caller.scope, p.workflow_id, Action::Read).await?;
    Ok(Json(WorkflowDto::of(&state, workflow)?.shown_to(&caller.scope)))
}

/// Replaces a workflow's name, trigger and steps (USER). An active workflow listens on its
/// new path and methods at once (409 when another workflow holds one; nothing changes then).
#[utoipa::path(put, path = "/workflows/{workflow_id}", tag = "workflows",
    params(("workflow_id" = i64, Path)), request_body = WorkflowBody,
    responses((status = 200, body = WorkflowDto)))]
pub async fn update_workflow(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<WorkflowPath>,
    Body(body): Body<WorkflowBody>,
) -> ApiResult<Json<WorkflowDto>> {
    let current = state.store.workflow(&caller.scope, p.workflow_id, Action::Edit).await?;
    if body.organization_id.is_some_and(|id| id != current.workspace_id) {
        return Err(Error::new(
            lector_core::ErrorCode::ImmutableField,
            "organization_id: a workflow stays in its workspace",
        )
        .into());
    }
    let new = body.prepare(Some(&current))?;
    // An active workflow runs its new steps from the next call.
    let moment = if current.active {
        Moment::Activating
    } else {
        Moment::Saving
    };
    check_references(&state, &caller.scope, current.workspace_id, &body.definition()?, moment).await?;
    let updated = state.store.update_workflow(&caller.scope, current.id, &new).await?;
    state.webhook_hooks.clear();
    Ok(Json(WorkflowDto::of(&state, updated)?))
}

/// Deletes a workflow with its executions (USER); its addresses stop listening.
#[utoipa::path(delete, path = "/workflows/{workflow_id}", tag = "workflows",
    params(("workflow_id" = i64, Path)), responses((status = 200, body = WorkflowDto)))]
pub async fn delete_workflow(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<WorkflowPath>,
) -> ApiResult<Json<WorkflowDto>> {
    let deleted = state.store.delete_workflow(&caller.scope, p.workflow_id).await?;
    state.webhook_hooks.clear();
    tracing::info!(workflow.id = deleted.id, user.id = caller.user.id, "workflow deleted");
    Ok(Json(WorkflowDto::of(&state, deleted)?))
}

/// Activates a workflow (USER): `/webhook/{path}` listens until it is deactivated, and the
/// steps run with the caller's role. 409 when another workflow holds the path and method.
#[utoipa::path(post, path = "/workflows/{workflow_id}/activate", tag = "workflows",
    params(("workflow_id" = i64, Path)), responses((status = 200, body = WorkflowDto)))]
pub async fn activate_workflow(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<WorkflowPath>,
) -> ApiResult<Json<WorkflowDto>> {
    let workflow = state.store.workflow(&caller.scope, p.workflow_id, Action::Edit).await?;
    let routes = routes_of(&workflow)?;
    check_references(
        &state,
        &caller.scope,
        workflow.workspace_id,
        &stored_definition(&workflow)?,
        Moment::Activating,
    )
    .await?;
    let active = state.store.activate_workflow(&caller.scope, &workflow, &routes).await?;
    state.webhook_hooks.clear();
    tracing::info!(workflow.id = active.id, user.id = caller.user.id, "workflow activated");
    Ok(Json(WorkflowDto::of(&state, active)?))
}

/// Deactivates a workflow (USER): its production address stops listening. Allowed in a
/// read-only workspace too, where nothing else about a workflow changes.
#[utoipa::path(post, path = "/workflows/{workflow_id}/deactivate", tag = "workflows",
    params(("workflow_id" = i64, Path)), responses((status = 200, body = WorkflowDto)))]
pub async fn deactivate_workflow(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<WorkflowPath>,
) -> ApiResult<Json<WorkflowDto>> {
    let inactive = state.store.deactivate_workflow(&caller.scope, p.workflow_id).await?;
    state.webhook_hooks.clear();
    tracing::info!(
        workflow.id = inactive.id,
        user.id = caller.user.id,
        "workflow deactivated"
    );
    Ok(Json(WorkflowDto::of(&state, inactive)?))
}

/// Arms the test address `/webhook-test/{path}` for 120 seconds and one call (USER); the
/// call's data is kept in its execution. 409 when another workflow holds the path and method.
#[utoipa::path(post, path = "/workflows/{workflow_id}/test", tag = "workflows",
    params(("workflow_id" = i64, Path)), responses((status = 200, body = TestListening)))]
pub async fn listen_workflow_test(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<WorkflowPath>,
) -> ApiResult<Json<TestListening>> {
    let workflow = state.store.workflow(&caller.scope, p.workflow_id, Action::Edit).await?;
    let routes = routes_of(&workflow)?;
    let window = i64::try_from(state.config.workflows.test_window_secs).unwrap_or(i64::MAX);
    let until = lector_core::time::Timestamp::now().plus_seconds(window);
    let armed = state
        .store
        .arm_workflow_test(&caller.scope, &workflow, &routes, until)
        .await?;
    let workflow = WorkflowDto::of(&state, armed)?;
    Ok(Json(TestListening {
        test_url: workflow.test_url.clone(),
        listening_until: rfc3339(until),
        workflow,
    }))
}

/// A workflow's executions, newest first (any member); test executions carry their data.
#[utoipa::path(get, path = "/workflows/{workflow_id}/executions", tag = "workflows",
    params(("workflow_id" = i64, Path), Paging), responses((status = 200, body = ExecutionPage)))]
pub async fn list_workflow_executions(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<WorkflowPath>,
    QueryParams(paging): QueryParams<Paging>,
) -> ApiResult<Json<ExecutionPage>> {
    let paging = paging.check()?;
    // The calls this node answered are in the list.
    state.execution_log.flush().await;
    let (found, has_more) = state
        .store
        .workflow_executions(&caller.scope, p.workflow_id, paging.offset, paging.limit)
        .await?;
    let executions: Vec<ExecutionDto> = found.into_iter().map(ExecutionDto::from).collect();
    Ok(Json(ExecutionPage {
        page: paging.page(executions.len(), has_more),
        executions,
    }))
}

/// The (method, path) pairs a stored workflow listens on.
fn routes_of(workflow: &Workflow) -> lector_core::Result<Vec<(String, String)>> {
    let definition = stored_definition(workflow)?;
    let methods: BTreeMap<String, String> = definition
        .trigger
        .methods()
        .into_iter()
        .map(|m| (m.as_str().to_owned(), definition.trigger.path.clone()))
        .collect();
    Ok(methods.into_iter().collect())
}

/// A stored workflow's definition (a row that does not parse is a server fault, logged).
fn stored_definition(workflow: &Workflow) -> lector_core::Result<Definition> {
    serde_json::from_str(&workflow.definition).map_err(|e| {
        tracing::error!(workflow.id = workflow.id, error = %e, "a stored workflow definition does not parse");
        Error::internal()
    })
}

/// Replaces the header values of every `http_request` step in `steps` (a JSON array).
fn hide_headers(steps: &mut serde_json::Value) {
    let Some(steps) = steps.as_array_mut() else { return };
    for step in steps.iter_mut().filter(|step| step["type"] == "http_request") {
        if let Some(headers) = step.get_mut("headers").and_then(serde_json::Value::as_object_mut) {
            headers
                .values_mut()
                .for_each(|value| *value = serde_json::Value::from(HIDDEN_HEADER));
        }
    }
}
