//! Classes and labels of a project. ABSA projects keep their three fixed labels.

use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::{Body, PathParams, WriteBody};
use crate::routes::rfc3339;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use lector_core::validate::{MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, Problems};
use lector_store::{Class, ClassChanges, ClassFields, Label, LabelKey, MAX_CLASSES_PER_PROJECT};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_classes, add_class))
        .routes(routes!(add_classes))
        .routes(routes!(get_class, update_class, delete_class))
        .routes(routes!(list_labels, add_label))
        .routes(routes!(get_label, update_label, delete_label))
        .routes(routes!(update_label_by_name))
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ClassDto {
    pub id: i64,
    pub name: String,
    pub example: String,
    pub description: String,
    pub created: String,
}

impl From<Class> for ClassDto {
    fn from(c: Class) -> Self {
        Self {
            id: c.id,
            name: c.name,
            example: c.example,
            description: c.description,
            created: rfc3339(c.created),
        }
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LabelDto {
    pub id: i64,
    pub name: String,
    pub created: String,
}

impl From<Label> for LabelDto {
    fn from(l: Label) -> Self {
        Self {
            id: l.id,
            name: l.name,
            created: rfc3339(l.created),
        }
    }
}

/// A class to add or change. SPEC lists `id` in these bodies and the original client's
/// ModelClass carries it: ignored when adding, and when changing it must be the path's class.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClassBody {
    pub id: Option<i64>,
    pub name: String,
    #[serde(default)]
    pub example: String,
    #[serde(default)]
    pub description: String,
}

impl ClassBody {
    fn check(&self, problems: &mut Problems, prefix: &str) {
        problems.name(&format!("{prefix}name"), &self.name, MAX_NAME_CHARS);
        problems.max_len(&format!("{prefix}example"), &self.example, MAX_DESCRIPTION_CHARS);
        problems.max_len(
            &format!("{prefix}description"),
            &self.description,
            MAX_DESCRIPTION_CHARS,
        );
    }

    fn fields(self) -> ClassFields {
        ClassFields {
            name: self.name.trim().to_owned(),
            example: self.example,
            description: self.description,
        }
    }
}

impl WriteBody for ClassBody {
    const IMMUTABLE: &'static [&'static str] = &["created"];

    fn validate(&self, problems: &mut Problems) {
        self.check(problems, "");
    }
}

/// A change of a class: what is left out keeps its value (a rename keeps the example and the
/// description annotators read).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClassChangeBody {
    /// When given, the path's class id.
    pub id: Option<i64>,
    pub name: Option<String>,
    pub example: Option<String>,
    pub description: Option<String>,
}

impl WriteBody for ClassChangeBody {
    const IMMUTABLE: &'static [&'static str] = &["created"];

    fn validate(&self, problems: &mut Problems) {
        if let Some(name) = &self.name {
            problems.name("name", name, MAX_NAME_CHARS);
        }
        for (field, value) in [("example", &self.example), ("description", &self.description)] {
            if let Some(value) = value {
                problems.max_len(field, value, MAX_DESCRIPTION_CHARS);
            }
        }
    }
}

/// Several classes at once.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(transparent)]
pub struct ClassesBody(pub Vec<ClassBody>);

impl WriteBody for ClassesBody {
    fn validate(&self, problems: &mut Problems) {
        problems.check(!self.0.is_empty(), "", "send at least one class");
        problems.check(
            self.0.len() as i64 <= MAX_CLASSES_PER_PROJECT,
            "",
            &format!("send at most {MAX_CLASSES_PER_PROJECT} classes"),
        );
        let mut names = std::collections::HashSet::new();
        for (i, class) in self.0.iter().enumerate() {
            class.check(problems, &format!("[{i}]."));
            problems.check(
                names.insert(class.name.trim()),
                &format!("[{i}].name"),
                "is listed twice",
            );
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct ProjectPath {
    project_id: i64,
}

#[derive(Debug, Deserialize)]
pub struct ClassPath {
    project_id: i64,
    class_id: i64,
}

#[derive(Debug, Deserialize)]
pub struct LabelPath {
    project_id: i64,
    label_id: i64,
}

#[derive(Debug, Deserialize)]
pub struct LabelNamePath {
    project_id: i64,
    name: String,
}

/// The classes of a project.
#[utoipa::path(get, path = "/projects/{project_id}/classes", tag = "classes", params(("project_id" = i64, Path)),
    responses((status = 200, body = Vec<ClassDto>)))]
pub async fn list_classes(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
) -> ApiResult<Json<Vec<ClassDto>>> {
    let classes = state.store.classes(&caller.scope, p.project_id).await?;
    Ok(Json(classes.into_iter().map(ClassDto::from).collect()))
}

/// Adds a class (MANAGER); an `id` in the body is ignored (the class gets a new one).
#[utoipa::path(post, path = "/projects/{project_id}/classes", tag = "classes", params(("project_id" = i64, Path)),
    request_body = ClassBody, responses((status = 201, body = ClassDto)))]
pub async fn add_class(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
    Body(body): Body<ClassBody>,
) -> ApiResult<(StatusCode, Json<ClassDto>)> {
    let mut added = state
        .store
        .add_classes(&caller.scope, p.project_id, vec![body.fields()])
        .await?;
    let class = added.pop().ok_or_else(lector_core::Error::internal)?;
    Ok((StatusCode::CREATED, Json(class.into())))
}

/// Adds several classes at once: all or none; `id`s in the bodies are ignored.
#[utoipa::path(post, path = "/projects/{project_id}/upload-classes", tag = "classes", params(("project_id" = i64, Path)),
    request_body = Vec<ClassBody>, responses((status = 201, body = Vec<ClassDto>)))]
pub async fn add_classes(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
    Body(body): Body<ClassesBody>,
) -> ApiResult<(StatusCode, Json<Vec<ClassDto>>)> {
    let fields = body.0.into_iter().map(ClassBody::fields).collect();
    let added = state.store.add_classes(&caller.scope, p.project_id, fields).await?;
    Ok((
        StatusCode::CREATED,
        Json(added.into_iter().map(ClassDto::from).collect()),
    ))
}

/// A class of a project.
#[utoipa::path(get, path = "/projects/{project_id}/classes/{class_id}", tag = "classes",
    params(("project_id" = i64, Path), ("class_id" = i64, Path)), responses((status = 200, body = ClassDto)))]
pub async fn get_class(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ClassPath>,
) -> ApiResult<Json<ClassDto>> {
    let class = state.store.class(&caller.scope, p.project_id, p.class_id).await?;
    Ok(Json(class.into()))
}

/// Changes a class (MANAGER); an `id` in the body must be the path's class id, and a field
/// left out keeps its value.
#[utoipa::path(put, path = "/projects/{project_id}/classes/{class_id}", tag = "classes",
    params(("project_id" = i64, Path), ("class_id" = i64, Path)), request_body = ClassChangeBody,
    responses((status = 200, body = ClassDto)))]
pub async fn update_class(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ClassPath>,
    Body(body): Body<ClassChangeBody>,
) -> ApiResult<Json<ClassDto>> {
    if body.id.is_some_and(|id| id != p.class_id) {
        return Err(lector_core::Error::validation(vec![lector_core::FieldError::new(
            "id",
            format!("must be the class being changed, {}", p.class_id),
        )])
        .into());
    }
    let changes = ClassChanges {
        name: body.name.map(|n| n.trim().to_owned()),
        example: body.example,
        description: body.description,
    };
    let class = state
        .store
        .update_class(&caller.scope, p.project_id, p.class_id, changes)
        .await?;
    Ok(Json(class.into()))
}

/// Deletes a class (MANAGER); answers the deleted class.
#[utoipa::path(delete, path = "/projects/{project_id}/classes/{class_id}", tag = "classes",
    params(("project_id" = i64, Path), ("class_id" = i64, Path)), responses((status = 200, body = ClassDto)))]
pub async fn delete_class(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ClassPath>,
) -> ApiResult<Json<ClassDto>> {
    let class = state
        .store
        .delete_class(&caller.scope, p.project_id, p.class_id)
        .await?;
    Ok(Json(class.into()))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LabelBody {
    pub name: String,
}

impl WriteBody for LabelBody {
    const IMMUTABLE: &'static [&'static str] = &["id", "created"];

    fn validate(&self, problems: &mut Problems) {
        problems.name("name", &self.name, MAX_NAME_CHARS);
    }
}

/// The labels of a project.
#[utoipa::path(get, path = "/projects/{project_id}/labels", tag = "labels", params(("project_id" = i64, Path)),
    responses((status = 200, body = Vec<LabelDto>)))]
pub async fn list_labels(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
) -> ApiResult<Json<Vec<LabelDto>>> {
    let labels = state.store.labels(&caller.scope, p.project_id).await?;
    Ok(Json(labels.into_iter().map(LabelDto::from).collect()))
}

/// Adds a label (MANAGER); ABSA projects refuse.
#[utoipa::path(post, path = "/projects/{project_id}/labels", tag = "labels", params(("project_id" = i64, Path)),
    request_body = LabelBody, responses((status = 201, body = LabelDto)))]
pub async fn add_label(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
    Body(body): Body<LabelBody>,
) -> ApiResult<(StatusCode, Json<LabelDto>)> {
    let label = state
        .store
        .add_label(&caller.scope, p.project_id, body.name.trim())
        .await?;
    Ok((StatusCode::CREATED, Json(label.into())))
}

/// A label of a project.
#[utoipa::path(get, path = "/projects/{project_id}/labels/{label_id}", tag = "labels",
    params(("project_id" = i64, Path), ("label_id" = i64, Path)), responses((status = 200, body = LabelDto)))]
pub async fn get_label(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<LabelPath>,
) -> ApiResult<Json<LabelDto>> {
    let label = state.store.label(&caller.scope, p.project_id, p.label_id).await?;
    Ok(Json(label.into()))
}

/// Renames a label found by id (MANAGER).
#[utoipa::path(put, path = "/projects/{project_id}/labels/{label_id}", tag = "labels",
    params(("project_id" = i64, Path), ("label_id" = i64, Path)), request_body = LabelBody,
    responses((status = 200, body = LabelDto)))]
pub async fn update_label(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<LabelPath>,
    Body(body): Body<LabelBody>,
) -> ApiResult<Json<LabelDto>> {
    let label = state
        .store
        .rename_label(&caller.scope, p.project_id, LabelKey::Id(p.label_id), body.name.trim())
        .await?;
    Ok(Json(label.into()))
}

/// Renames a label found by its current name (MANAGER).
#[utoipa::path(put, path = "/projects/{project_id}/labels/name/{name}", tag = "labels",
    params(("project_id" = i64, Path), ("name" = String, Path, description = "the label's current name")),
    request_body = LabelBody, responses((status = 200, body = LabelDto)))]
pub async fn update_label_by_name(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<LabelNamePath>,
    Body(body): Body<LabelBody>,
) -> ApiResult<Json<LabelDto>> {
    let label = state
        .store
        .rename_label(&caller.scope, p.project_id, LabelKey::Name(&p.name), body.name.trim())
        .await?;
    Ok(Json(label.into()))
}

/// Deletes a label (MANAGER); answers the deleted label.
#[utoipa::path(delete, path = "/projects/{project_id}/labels/{label_id}", tag = "labels",
    params(("project_id" = i64, Path), ("label_id" = i64, Path)), responses((status = 200, body = LabelDto)))]
pub async fn delete_label(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<LabelPath>,
) -> ApiResult<Json<LabelDto>> {
    let label = state
        .store
        .delete_label(&caller.scope, p.project_id, p.label_id)
        .await?;
    Ok(Json(label.into()))
}
