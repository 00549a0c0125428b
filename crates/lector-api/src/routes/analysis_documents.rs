//! The documents of a batch analysis: listed a page at a time with the tags the model gave
//! their segments (`list_analysis_documents`, filtered by text, class and label, parts chosen
//! by `details` as everywhere: segments, meta, tags), shown inside the analyses of a project
//! when `list_project_analyses` is asked for `details`, and downloaded as labeled data that
//! uploads again as a labeling session. Reading needs VIEWER in the analysis's workspace.

use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::{PageInfo, Paging, PathParams, QueryParams};
use crate::routes::analyses::AnalysisPath;
use crate::routes::analyze::{AnalyzedSegment, AnalyzedTag};
use crate::routes::documents::Details;
use crate::routes::files::DownloadQuery;
use crate::routes::streaming::DOCUMENTS_PER_PAGE;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use lector_core::{Action, Result, Scope};
use lector_store::{Analysis, Document, DocumentFilter};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_analysis_documents))
        .routes(routes!(download_analysis_documents))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AnalysisDocumentsQuery {
    /// Comma-separated: segments, meta, tags (tags: the segments with the tags the model gave
    /// them). Without it, the documents' texts only.
    pub details: Option<String>,
    /// Only documents whose text contains this (case-insensitive).
    pub search: Option<String>,
    /// Only documents with a segment tagged with one of these class ids (comma-separated).
    pub classes: Option<String>,
    /// Only documents with a segment tagged with one of these label ids (comma-separated);
    /// with `classes`, one tag must have both (a class and one of these labels).
    pub labels: Option<String>,
    #[serde(default)]
    pub offset: i64,
    #[serde(default = "crate::extract::default_limit")]
    pub limit: i64,
}

/// A document of an analysis.
#[derive(Debug, Serialize, ToSchema)]
pub struct AnalysisDocumentDto {
    pub id: i64,
    pub text: String,
    pub group_id: Option<i64>,
    /// With `details` naming meta: what was given with the text.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub meta: Option<serde_json::Value>,
    /// With `details` naming segments or tags.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segments: Option<Vec<AnalysisSegmentDto>>,
}

/// A segment of an analysed document.
#[derive(Debug, Serialize, ToSchema)]
pub struct AnalysisSegmentDto {
    /// The segment's id, as a document's segments carry it (tags and marks name it).
    pub id: i64,
    pub text: String,
    /// `[start, end)` in code points of the (normalised) text.
    pub span: [usize; 2],
    /// With `details` naming tags: the tags the model gave the segment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<AnalyzedTag>>,
}

/// A page of an analysis's documents.
#[derive(Debug, Serialize, ToSchema)]
pub struct AnalysisDocumentsPage {
    pub documents: Vec<AnalysisDocumentDto>,
    #[serde(flatten)]
    pub page: PageInfo,
}

fn ids(field: &str, list: &Option<String>) -> Result<Vec<i64>> {
    let Some(list) = list else { return Ok(Vec::new()) };
    let parsed: std::result::Result<Vec<i64>, _> = list
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::parse)
        .collect();
    match parsed {
        Ok(ids) if ids.len() <= 1000 => Ok(ids),
        Ok(_) => Err(crate::extract::bad_parameter(field, "names at most 1000 ids")),
        Err(_) => Err(crate::extract::bad_parameter(
            field,
            "takes ids separated by commas, such as 1,2",
        )),
    }
}

/// The documents of an analysis, in id order, optionally with their tagged segments and
/// filtered by text, class and label (VIEWER).
#[utoipa::path(get, path = "/analyses/{analysis_id}/documents", tag = "analyses",
    params(("analysis_id" = i64, Path), AnalysisDocumentsQuery), responses((status = 200, body = AnalysisDocumentsPage)))]
pub async fn list_analysis_documents(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<AnalysisPath>,
    QueryParams(q): QueryParams<AnalysisDocumentsQuery>,
) -> ApiResult<Json<AnalysisDocumentsPage>> {
    let analysis = state.store.analysis(&caller.scope, p.analysis_id, Action::Read).await?;
    let paging = Paging::checked(q.offset, q.limit)?;
    let details = Details::parse(q.details.as_deref())?;
    let filter = DocumentFilter {
        // As the texts are stored (NFC), so a decomposed "ü" finds its composed twin.
        search: q
            .search
            .as_deref()
            .filter(|s| !s.is_empty())
            .map(lector_text::normalize),
        analysis_id: Some(analysis.id),
        analysis_classes: ids("classes", &q.classes)?,
        analysis_labels: ids("labels", &q.labels)?,
        ..Default::default()
    };
    let scope = &caller.scope;
    let (documents, has_more) = state
        .store
        .documents(scope, analysis.project_id, &filter, paging.offset, paging.limit)
        .await?;
    let documents = shaped(&state, &analysis, documents, &details).await?;
    Ok(Json(AnalysisDocumentsPage {
        page: paging.page(documents.len(), has_more),
        documents,
    }))
}

/// The first documents of an analysis (at most `count`, holding at most `max_chars`
/// characters of text but one document at least) with the parts `details` names, for
/// `list_project_analyses`, and the characters they hold; the rest are read through
/// `list_analysis_documents`.
pub(crate) async fn first_documents(
    state: &AppState,
    scope: &Scope,
    analysis: &Analysis,
    details: &Details,
    (count, max_chars): (i64, i64),
) -> Result<(Vec<AnalysisDocumentDto>, i64)> {
    let filter = DocumentFilter {
        analysis_id: Some(analysis.id),
        ..Default::default()
    };
    let (documents, _) = state
        .store
        .documents_to_read(scope, analysis.project_id, &filter, (count, max_chars))
        .await?;
    let chars = documents.iter().map(|d| d.text.chars().count() as i64).sum();
    Ok((shaped(state, analysis, documents, details).await?, chars))
}

/// Documents of `analysis` shaped for an answer with the parts `details` names.
async fn shaped(
    state: &AppState,
    analysis: &Analysis,
    documents: Vec<Document>,
    details: &Details,
) -> Result<Vec<AnalysisDocumentDto>> {
    let mut segments = if details.segments || details.tags {
        Some(tagged_segments(state, analysis, &documents).await?)
    } else {
        None
    };
    Ok(documents
        .into_iter()
        .map(|d| AnalysisDocumentDto {
            segments: segments.as_mut().map(|s| {
                let own = s.remove(&d.id).unwrap_or_default();
                own.into_iter()
                    .map(|(id, segment)| AnalysisSegmentDto {
                        id,
                        text: segment.text,
                        span: segment.span,
                        tags: details.tags.then_some(segment.tags),
                    })
                    .collect()
            }),
            id: d.id,
            text: d.text,
            group_id: d.group_id,
            meta: details.meta.then_some(d.meta),
        })
        .collect())
}

/// The segments of `documents` (each with its id) with the analysis's tags, by document.
async fn tagged_segments(
    state: &AppState,
    analysis: &Analysis,
    documents: &[Document],
) -> Result<HashMap<i64, Vec<(i64, AnalyzedSegment)>>> {
    let segments = state.store.segments_of(documents).await?;
    let mut tags: HashMap<i64, Vec<AnalyzedTag>> = HashMap::new();
    for tag in state.store.analysis_tags_of(analysis, documents).await? {
        tags.entry(tag.segment_id).or_default().push(AnalyzedTag {
            class: tag.class,
            label: tag.label,
            confidence: tag.confidence as f32,
        });
    }
    let mut out: HashMap<i64, Vec<(i64, AnalyzedSegment)>> = HashMap::new();
    for segment in segments {
        let analysed = AnalyzedSegment {
            tags: tags.remove(&segment.id).unwrap_or_default(),
            span: [segment.start as usize, segment.end as usize],
            text: segment.text,
        };
        out.entry(segment.document_id).or_default().push((segment.id, analysed));
    }
    Ok(out)
}

/// One page of an analysis as labeled-data rows (one per tag, one per segment without tags),
/// with the tag's confidence last.
async fn analysis_page(
    state: &AppState,
    scope: &Scope,
    analysis: &Analysis,
    after: i64,
) -> Result<crate::routes::streaming::Page> {
    let filter = DocumentFilter {
        analysis_id: Some(analysis.id),
        after: Some(after),
        ..Default::default()
    };
    let (documents, has_more) = state
        .store
        .documents_to_read(
            scope,
            analysis.project_id,
            &filter,
            (DOCUMENTS_PER_PAGE, lector_store::MAX_LISTED_CHARS),
        )
        .await?;
    let next = documents.last().map(|d| d.id).filter(|_| has_more);
    let mut segments = tagged_segments(state, analysis, &documents).await?;
    let mut rows = Vec::new();
    for document in &documents {
        let Some(own) = segments.remove(&document.id) else {
            continue;
        };
        for (position, (_, segment)) in own.into_iter().enumerate() {
            let row = |class: Option<String>, label: Option<String>, confidence: String| {
                vec![
                    document.id.to_string(),
                    position.to_string(),
                    segment.text.clone(),
                    class.unwrap_or_default(),
                    label.unwrap_or_default(),
                    String::new(),
                    "false".to_owned(),
                    confidence,
                ]
            };
            if segment.tags.is_empty() {
                rows.push(row(None, None, String::new()));
            }
            for tag in &segment.tags {
                rows.push(row(
                    tag.class.clone(),
                    tag.label.clone(),
                    format!("{:.4}", tag.confidence),
                ));
            }
        }
    }
    Ok((rows, next))
}

/// An analysis's tags as labeled data: one row per tag (and per segment without tags) with the
/// columns of a labeled-data upload (document, segment, text, class, label, part, annotated)
/// and the tag's `confidence`; it uploads again as a labeling session with the tags by name.
#[utoipa::path(get, path = "/analyses/{analysis_id}/documents/download", tag = "analyses",
    params(("analysis_id" = i64, Path), DownloadQuery),
    responses((status = 200, description = "the file in the format asked for", content_type = "application/vnd.lector.table")))]
pub async fn download_analysis_documents(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<AnalysisPath>,
    QueryParams(q): QueryParams<DownloadQuery>,
) -> ApiResult<axum::response::Response> {
    let format = q.format()?;
    let analysis = state.store.analysis(&caller.scope, p.analysis_id, Action::Read).await?;
    let mut header = crate::routes::session_downloads::session_header(false);
    header.push("confidence".into());
    let stem = format!("analysis-{}", analysis.id);
    let scope = caller.scope.clone();
    let page = move |after: i64| {
        let (state, scope, analysis) = (state.clone(), scope.clone(), analysis.clone());
        async move { analysis_page(&state, &scope, &analysis, after).await }
    };
    Ok(crate::routes::streaming::paged_download(format, &stem, header, page).await?)
}
