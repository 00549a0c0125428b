//! Analyses of a project's documents. Listing them lives here; running a model over
//! documents comes with the analysis job.

use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::{Paging, PathParams, QueryParams};
use crate::routes::rfc3339;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use lector_store::Analysis;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_project_analyses))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AnalysisDto {
    pub id: i64,
    pub uuid: String,
    pub name: String,
    pub description: String,
    pub created: String,
    pub finished: Option<String>,
    pub document_count: i64,
    /// In [0, 1]; never decreases.
    pub progress: f64,
    pub model_id: Option<i64>,
    pub project_id: i64,
    pub status: String,
    /// The model's type.
    #[serde(rename = "type")]
    pub kind: String,
}

impl From<Analysis> for AnalysisDto {
    fn from(a: Analysis) -> Self {
        Self {
            id: a.id,
            uuid: a.uuid,
            name: a.name,
            description: a.description,
            created: rfc3339(a.created),
            finished: a.finished.map(rfc3339),
            document_count: a.document_count,
            progress: a.progress,
            model_id: a.model_id,
            project_id: a.project_id,
            status: a.status,
            kind: a.kind,
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct ProjectPath {
    project_id: i64,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AnalysesQuery {
    #[serde(default)]
    pub offset: i64,
    #[serde(default = "crate::extract::default_limit")]
    pub limit: i64,
}

/// The project's analyses, oldest first (a plain array, paged by offset and limit).
#[utoipa::path(get, path = "/projects/{project_id}/analyses", tag = "projects",
    params(("project_id" = i64, Path), AnalysesQuery), responses((status = 200, body = Vec<AnalysisDto>)))]
pub async fn list_project_analyses(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
    QueryParams(q): QueryParams<AnalysesQuery>,
) -> ApiResult<Json<Vec<AnalysisDto>>> {
    let paging = Paging {
        offset: q.offset,
        limit: q.limit,
    }
    .check()?;
    let analyses = state
        .store
        .project_analyses(&caller.scope, p.project_id, paging.offset, paging.limit)
        .await?;
    Ok(Json(analyses.into_iter().map(AnalysisDto::from).collect()))
}
