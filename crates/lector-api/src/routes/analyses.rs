//! Batch analyses: a model run over many documents as a job (`create_analysis`), from texts
//! sent with the request, an uploaded file (`upload_analysis_file`, then `column` or
//! `column_name`) or an existing group of the model's project; listed, read, renamed, deleted;
//! their documents are in `analysis_documents`.
//!
//! Reading needs VIEWER in the analysis's workspace; creating, changing and deleting USER.
//! `status`, `progress` and `document_count` belong to the job (`immutable_field`).

use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::{Body, Paging, PathParams, QueryParams, WriteBody, also_immutable};
use crate::routes::analysis_documents::{AnalysisDocumentDto, first_documents};
use crate::routes::classes::{ClassDto, LabelDto};
use crate::routes::documents::Details;
use crate::routes::files::bad_field;
use crate::routes::files::{UploadForm, UploadedFileDto};
use crate::routes::paths::ProjectPath;
use crate::routes::rfc3339;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::extract::multipart::{Multipart, MultipartRejection};
use axum::http::StatusCode;
use lector_core::validate::{MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, Problems};
use lector_core::{Action, Result};
use lector_store::{Analysis, AnalysisSource, ImportedDocument, NewBatchAnalysis, TagCounts, UploadFor};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_project_analyses))
        .routes(routes!(upload_analysis_file))
        .routes(routes!(list_analyses, create_analysis))
        .routes(routes!(get_analysis, update_analysis, delete_analysis))
}

/// An analysis as the original interface gives it, with Lector's additions after `type`.
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
    /// CREATED, QUEUED, ANALYZING, FAILED or FINISHED.
    pub status: String,
    /// The model's type.
    #[serde(rename = "type")]
    pub kind: String,
    pub project_id: i64,
    /// The group whose documents it reads.
    pub document_group_id: Option<i64>,
    /// Its job (`get_project_task`).
    pub task_id: Option<i64>,
    /// Why it failed, when it did.
    pub failure: Option<String>,
    /// The project's classes and labels; left out for the analyses of a page after its budget
    /// of their text is spent (`get_analysis` gives them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub classes: Option<Vec<ClassDto>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<Vec<LabelDto>>,
    /// With `details` (`list_project_analyses`): its first documents, at most 100, with the
    /// parts asked for; all of them through `list_analysis_documents`. Left out, even with
    /// `details`, for the analyses after the page's budget of text is spent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub documents: Option<Vec<AnalysisDocumentDto>>,
    /// `get_analysis` of a FINISHED analysis: how many of its tags name each class and each
    /// label, over all its documents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tag_counts: Option<TagCountsDto>,
}

/// The distribution of an analysis's tags, by the names of the classes and labels when it was
/// written (the model's own names where the project had none), most first.
#[derive(Debug, Serialize, ToSchema)]
pub struct TagCountsDto {
    pub classes: Vec<TagCountDto>,
    pub labels: Vec<TagCountDto>,
}

/// How many tags name one class or label.
#[derive(Debug, Serialize, ToSchema)]
pub struct TagCountDto {
    pub name: String,
    pub count: i64,
}

impl From<TagCounts> for TagCountsDto {
    fn from(counts: TagCounts) -> Self {
        let named = |pairs: Vec<(String, i64)>| {
            pairs
                .into_iter()
                .map(|(name, count)| TagCountDto { name, count })
                .collect()
        };
        Self {
            classes: named(counts.classes),
            labels: named(counts.labels),
        }
    }
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
            status: a.status,
            kind: a.kind,
            project_id: a.project_id,
            document_group_id: a.document_group_id,
            task_id: a.task_id,
            failure: a.failure,
            classes: None,
            labels: None,
            documents: None,
            tag_counts: None,
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct AnalysisPath {
    pub(crate) analysis_id: i64,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AnalysesQuery {
    /// Only the analyses of this model.
    pub model: Option<i64>,
    #[serde(default)]
    pub offset: i64,
    #[serde(default = "crate::extract::default_limit")]
    pub limit: i64,
}

impl AnalysesQuery {
    fn paging(&self) -> Result<Paging> {
        Paging::checked(self.offset, self.limit)
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ProjectAnalysesQuery {
    /// Comma-separated: segments, meta, tags. Each analysis then answers its first documents
    /// with these parts: 100 each, fewer on a page of more than 10 analyses (1,000 documents
    /// a page in all, as `list_analysis_documents` answers at most), and within one budget of
    /// 32 Mi characters of text a page: analyses after it is spent come without `documents`.
    pub details: Option<String>,
    #[serde(default)]
    pub offset: i64,
    #[serde(default = "crate::extract::default_limit")]
    pub limit: i64,
}

/// Documents a page of `list_project_analyses` answers with `details`, over all its analyses.
const MAX_DETAILED_DOCUMENTS: i64 = 1000;

/// The project's analyses, oldest first (a plain array, paged by offset and limit); with
/// `details`, each with its first documents, as many as the page's budget of text
/// (`MAX_LISTED_CHARS` over all its analyses) holds: later analyses may come without
/// `documents`, and `list_analysis_documents` gives them.
#[utoipa::path(get, path = "/projects/{project_id}/analyses", tag = "projects",
    params(("project_id" = i64, Path), ProjectAnalysesQuery), responses((status = 200, body = Vec<AnalysisDto>)))]
pub async fn list_project_analyses(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
    QueryParams(q): QueryParams<ProjectAnalysesQuery>,
) -> ApiResult<Json<Vec<AnalysisDto>>> {
    let paging = Paging::checked(q.offset, q.limit)?;
    let details = Details::parse(q.details.as_deref())?;
    let analyses = state
        .store
        .project_analyses(&caller.scope, p.project_id, paging.offset, paging.limit)
        .await?;
    let each = (MAX_DETAILED_DOCUMENTS / analyses.len().max(1) as i64).clamp(1, crate::extract::default_limit());
    // The page's documents share one budget of text: once it is spent, the analyses after
    // answer no documents (their own listing gives them).
    let mut chars_left = lector_store::MAX_LISTED_CHARS;
    let mut answer = Vec::with_capacity(analyses.len());
    for analysis in &analyses {
        let documents = if !(details.segments || details.meta || details.tags) {
            None
        } else if chars_left <= 0 {
            // Left out, not answered empty: an empty list would say it has no documents.
            None
        } else {
            let (documents, chars) =
                first_documents(&state, &caller.scope, analysis, &details, (each, chars_left)).await?;
            chars_left -= chars;
            Some(documents)
        };
        answer.push(documents);
    }
    let dtos = with_vocabularies(&state, &caller, analyses).await?;
    Ok(Json(
        dtos.into_iter()
            .zip(answer)
            .map(|(dto, documents)| AnalysisDto { documents, ..dto })
            .collect(),
    ))
}

/// The analyses of your workspaces, oldest first (a plain array), optionally of one model.
#[utoipa::path(get, path = "/analyses", tag = "analyses", params(AnalysesQuery),
    responses((status = 200, body = Vec<AnalysisDto>)))]
pub async fn list_analyses(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(q): QueryParams<AnalysesQuery>,
) -> ApiResult<Json<Vec<AnalysisDto>>> {
    let paging = q.paging()?;
    let analyses = state
        .store
        .analyses(&caller.scope, q.model, paging.offset, paging.limit)
        .await?;
    Ok(Json(with_vocabularies(&state, &caller, analyses).await?))
}

/// Uploads a file for a batch analysis (USER somewhere): CSV, TXT, JSON, JSONL or XLSX.
/// Answers its id and first rows; `create_analysis` takes the id with `column` or `column_name`.
/// Only its uploader can use it.
#[utoipa::path(post, path = "/analyses/upload", tag = "analyses",
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses((status = 200, body = UploadedFileDto), (status = 413, description = "the file is over the upload limit"),
        (status = 415, description = "not a CSV, TXT, JSON, JSONL or XLSX file")))]
pub async fn upload_analysis_file(
    State(state): State<AppState>,
    caller: Caller,
    multipart: std::result::Result<Multipart, MultipartRejection>,
) -> ApiResult<Json<UploadedFileDto>> {
    Ok(Json(
        crate::routes::files::upload_with_preview(&state, &caller, UploadFor::Analysis, multipart?).await?,
    ))
}

/// A batch analysis to run: a model and the texts, from one of `documents`, `file_id` or
/// `document_group_id`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateAnalysisBody {
    /// The READY model to analyse with (required; the original interface's body omits it).
    pub model_id: Option<i64>,
    /// Default: "Analysis" and the time.
    pub name: Option<String>,
    pub description: Option<String>,
    /// Texts to analyse, with your own ids (kept in each document's meta as `external_id`).
    pub documents: Option<Vec<AnalysisText>>,
    /// A file from `upload_analysis_file`.
    #[schema(value_type = Option<String>, format = "uuid")]
    pub file_id: Option<uuid::Uuid>,
    /// The file's text column, 0-based …
    pub column: Option<usize>,
    /// … or by its header name (default: the column named `text`, else column 0).
    pub column_name: Option<String>,
    /// Whether the file's first row is a header (default true).
    pub header_first: Option<bool>,
    /// Split texts into sentences (default true); with `documents` or `file_id` only (a
    /// group's documents keep their segments; `false` with `document_group_id` is 422).
    pub split: Option<bool>,
    /// Instead of texts: an existing group of the model's project.
    pub document_group_id: Option<i64>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AnalysisText {
    pub text: String,
    #[schema(value_type = Option<Object>)]
    pub id: Option<serde_json::Value>,
}

/// The fields of an analysis the server owns, refused in its creation and its change.
const ANALYSIS_IMMUTABLE: &[&str] = &[
    "id",
    "uuid",
    "status",
    "progress",
    "document_count",
    "created",
    "finished",
];

impl WriteBody for CreateAnalysisBody {
    const MAX_BYTES: usize = crate::routes::documents::MAX_UPLOAD_BYTES;
    const IMMUTABLE: &'static [&'static str] = ANALYSIS_IMMUTABLE;

    fn validate(&self, problems: &mut Problems) {
        problems.check(
            self.model_id.is_some(),
            "model_id",
            "is required: the model to analyse with",
        );
        check_name_and_description(problems, &self.name, &self.description);
        let sources = [
            self.documents.is_some(),
            self.file_id.is_some(),
            self.document_group_id.is_some(),
        ];
        problems.check(
            sources.iter().filter(|s| **s).count() == 1,
            "documents",
            "give exactly one of documents, file_id and document_group_id",
        );
        if let Some(documents) = &self.documents {
            problems.check(!documents.is_empty(), "documents", "must not be empty");
            // Their number is checked against `uploads.max_rows` by the handler.
            for (i, document) in documents.iter().enumerate() {
                crate::routes::documents::check_text(problems, &format!("documents[{i}].text"), &document.text);
            }
        }
        if self.file_id.is_none() {
            for (field, given) in [
                ("column", self.column.is_some()),
                ("column_name", self.column_name.is_some()),
                ("header_first", self.header_first.is_some()),
            ] {
                problems.check(!given, field, "goes with file_id");
            }
        }
        // A group's documents keep the segments they have: asking not to split them cannot be
        // done (`true`, the default, changes nothing and is taken).
        problems.check(
            !(self.document_group_id.is_some() && self.split == Some(false)),
            "split",
            "goes with documents or file_id: a group's documents keep their segments",
        );
        problems.check(
            !(self.column.is_some() && self.column_name.is_some()),
            "column_name",
            "give column or column_name, not both",
        );
    }
}

/// Starts a batch analysis (USER of the model's workspace; the model READY): answers it
/// QUEUED; a job tags every segment, then it is FINISHED, with a notification. 409 while the
/// workspace has 20 trainings, analyses, corrections and copies waiting or running.
#[utoipa::path(post, path = "/analyses", tag = "analyses", request_body = CreateAnalysisBody,
    responses((status = 201, body = AnalysisDto)))]
pub async fn create_analysis(
    State(state): State<AppState>,
    caller: Caller,
    Body(body): Body<CreateAnalysisBody>,
) -> ApiResult<(StatusCode, Json<AnalysisDto>)> {
    if let Some(documents) = &body.documents {
        crate::routes::files::check_rows(&state, "documents", documents.len())?;
    }
    let model_id = body.model_id.unwrap_or_default();
    let model = state.store.model_for_analysis(&caller.scope, model_id).await?;
    let source = if let Some(documents) = body.documents {
        AnalysisSource::Documents(documents.into_iter().map(imported).collect())
    } else if let Some(file_id) = body.file_id {
        let upload = state
            .store
            .analysis_upload(&caller.scope, file_id)
            .await
            .map_err(|e| match e.code {
                lector_core::ErrorCode::NotFound => {
                    bad_field("file_id", "no file of yours with this id waits for an analysis")
                }
                _ => e,
            })?;
        let header_first = body.header_first.unwrap_or(upload.format != "txt");
        let max_rows = state.config.uploads.max_rows;
        crate::routes::groups::check_import(
            &upload,
            body.column,
            body.column_name.as_deref(),
            header_first,
            max_rows,
        )?;
        AnalysisSource::File {
            upload: Box::new(upload),
            column_index: body.column,
            column_name: body.column_name,
            header_first,
            max_bytes: state.config.uploads.max_bytes,
            max_rows: state.config.uploads.max_rows,
        }
    } else {
        AnalysisSource::Group(body.document_group_id.unwrap_or_default())
    };
    let name = body
        .name
        .map(|n| n.trim().to_owned())
        .unwrap_or_else(|| format!("Analysis {}", rfc3339(lector_core::time::Timestamp::now())));
    let new = NewBatchAnalysis {
        name,
        description: body.description.unwrap_or_default(),
        split: body.split.unwrap_or(true),
        source,
    };
    let analysis = state.store.start_analysis(&caller.scope, &model, new).await?;
    tracing::info!(analysis.id = analysis.id, model.id = model.id, job.id = ?analysis.task_id, "analysis queued");
    Ok((
        StatusCode::CREATED,
        Json(with_vocabulary(&state, &caller, analysis).await?),
    ))
}

/// The checks of an analysis's name and description, where a request gives them.
fn check_name_and_description(problems: &mut Problems, name: &Option<String>, description: &Option<String>) {
    if let Some(name) = name {
        problems.name("name", name, MAX_NAME_CHARS);
    }
    if let Some(description) = description {
        problems.max_len("description", description, MAX_DESCRIPTION_CHARS);
    }
}

fn imported(text: AnalysisText) -> ImportedDocument {
    let mut meta = serde_json::Map::new();
    if let Some(id) = text.id {
        meta.insert("external_id".into(), id);
    }
    ImportedDocument { text: text.text, meta }
}

/// An analysis with the project's classes and labels, and once FINISHED the counts of its
/// tags (VIEWER).
#[utoipa::path(get, path = "/analyses/{analysis_id}", tag = "analyses",
    params(("analysis_id" = i64, Path)), responses((status = 200, body = AnalysisDto)))]
pub async fn get_analysis(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<AnalysisPath>,
) -> ApiResult<Json<AnalysisDto>> {
    let analysis = state.store.analysis(&caller.scope, p.analysis_id, Action::Read).await?;
    // Counted once the tags stop changing: a running analysis is polled.
    let counts = match analysis.status == "FINISHED" {
        true => Some(state.store.analysis_tag_counts(&analysis).await?),
        false => None,
    };
    let mut dto = with_vocabulary(&state, &caller, analysis).await?;
    dto.tag_counts = counts.map(TagCountsDto::from);
    Ok(Json(dto))
}

/// An analysis as answered, with its project's classes and labels.
async fn with_vocabulary(state: &AppState, caller: &Caller, analysis: Analysis) -> Result<AnalysisDto> {
    let mut answer = with_vocabularies(state, caller, vec![analysis]).await?;
    Ok(answer.remove(0))
}

/// Analyses as answered, each with its project's classes and labels (read once a project; none
/// for a project deleted since the analyses were read). Every analysis carries its own copy of
/// them, so a page holds them while their characters (with a little for each entry's other
/// fields) fit [`lector_store::MAX_LISTED_CHARS`]; the analyses after that answer none, as a
/// page of analyses of a project with large descriptions could otherwise build gigabytes.
pub(crate) async fn with_vocabularies(
    state: &AppState,
    caller: &Caller,
    analyses: Vec<Analysis>,
) -> Result<Vec<AnalysisDto>> {
    let mut vocabularies: HashMap<i64, Vocabulary> = HashMap::new();
    let mut chars_left = lector_store::MAX_LISTED_CHARS;
    let mut answer = Vec::with_capacity(analyses.len());
    for analysis in analyses {
        if let Entry::Vacant(slot) = vocabularies.entry(analysis.project_id) {
            slot.insert(project_vocabulary(state, caller, analysis.project_id).await?);
        }
        let vocabulary = &vocabularies[&analysis.project_id];
        // Once one does not fit, none after it comes with them (not the next smaller one).
        let fits = chars_left >= 0 && vocabulary.chars <= chars_left;
        chars_left = if fits { chars_left - vocabulary.chars } else { -1 };
        answer.push(AnalysisDto {
            classes: fits.then(|| vocabulary.classes.clone()),
            labels: fits.then(|| vocabulary.labels.clone()),
            ..AnalysisDto::from(analysis)
        });
    }
    Ok(answer)
}

/// A project's classes and labels as answered, and about how many characters a copy holds.
struct Vocabulary {
    classes: Vec<ClassDto>,
    labels: Vec<LabelDto>,
    chars: i64,
}

/// What an entry's id, time and field names add to its text, about.
const ENTRY_CHARS: usize = 64;

/// A project's classes and labels as answered; none for a project deleted meanwhile.
async fn project_vocabulary(state: &AppState, caller: &Caller, project_id: i64) -> Result<Vocabulary> {
    let (classes, labels) = match state
        .store
        .project_access(&caller.scope, project_id, Action::Read)
        .await
    {
        Ok((project, _)) => (
            state.store.classes_of(&project).await?,
            state.store.labels_of(&project).await?,
        ),
        Err(e) if e.code == lector_core::ErrorCode::NotFound => (vec![], vec![]),
        Err(e) => return Err(e),
    };
    let chars = |text: &str| text.chars().count();
    let class_chars = classes
        .iter()
        .map(|c| chars(&c.name) + chars(&c.example) + chars(&c.description) + ENTRY_CHARS);
    let label_chars = labels.iter().map(|l| chars(&l.name) + ENTRY_CHARS);
    Ok(Vocabulary {
        chars: (class_chars.sum::<usize>() + label_chars.sum::<usize>()) as i64,
        classes: classes.into_iter().map(ClassDto::from).collect(),
        labels: labels.into_iter().map(LabelDto::from).collect(),
    })
}

/// What `update_analysis` changes.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateAnalysisBody {
    pub name: Option<String>,
    pub description: Option<String>,
}

impl WriteBody for UpdateAnalysisBody {
    const IMMUTABLE: &'static [&'static str] =
        &also_immutable::<10>(ANALYSIS_IMMUTABLE, &["model_id", "type", "project_id"]);

    fn validate(&self, problems: &mut Problems) {
        check_name_and_description(problems, &self.name, &self.description);
    }
}

/// Renames or re-describes an analysis (USER).
#[utoipa::path(put, path = "/analyses/{analysis_id}", tag = "analyses",
    params(("analysis_id" = i64, Path)), request_body = UpdateAnalysisBody, responses((status = 200, body = AnalysisDto)))]
pub async fn update_analysis(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<AnalysisPath>,
    Body(body): Body<UpdateAnalysisBody>,
) -> ApiResult<Json<AnalysisDto>> {
    let name = body.name.as_deref().map(str::trim);
    let analysis = state
        .store
        .update_analysis(&caller.scope, p.analysis_id, name, body.description.as_deref())
        .await?;
    Ok(Json(with_vocabulary(&state, &caller, analysis).await?))
}

/// Deletes an analysis and the tags it found (USER); its documents stay in their group. A
/// running analysis answers 409.
#[utoipa::path(delete, path = "/analyses/{analysis_id}", tag = "analyses",
    params(("analysis_id" = i64, Path)), responses((status = 200, body = AnalysisDto)))]
pub async fn delete_analysis(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<AnalysisPath>,
) -> ApiResult<Json<AnalysisDto>> {
    let analysis = state.store.delete_analysis(&caller.scope, p.analysis_id).await?;
    tracing::info!(analysis.id = analysis.id, user.id = caller.user.id, "analysis deleted");
    Ok(Json(analysis.into()))
}
