//! Labeled data going out: a session's tags as a file (`download_labeling_session`) and every
//! session of a project as one (`download_labeling_sessions`), one row per tag and one per
//! segment without tags, in the columns a labeled-data upload reads back. CSV, JSON and JSONL
//! stream page by page (keyset) through [`crate::routes::streaming`]; XLSX is built whole.
//! Segments read from PDFs and images also give their page's number and the boxes of each
//! tagged part's words (`page`, `boxes`).

use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::{PathParams, QueryParams};
use crate::routes::pages::boxes_of_part;
use crate::routes::paths::ProjectPath;
use crate::routes::sessions::SessionPath;
use crate::routes::streaming::DOCUMENTS_PER_PAGE;
use crate::state::AppState;
use axum::extract::State;
use lector_core::Result;
use lector_extract::Page;
use lector_store::{SegmentTag, Session, SessionFilter};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(download_labeling_sessions))
        .routes(routes!(download_labeling_session))
}

/// Columns after the labeled data's: a page's number, and the boxes (JSON, SPEC's box objects)
/// of the words a tagged part of a page covers; empty for segments of text.
pub const PAGE_COLUMNS: [&str; 2] = ["page", "boxes"];

/// One page of a session's labeled data as [`lector_text::LABELED_HEADER`] rows, for the
/// documents after `after` (a keyset): one row per tag, and one for each segment without tags;
/// with `with_session`, a first column names the session. Answers the rows and the keyset of the
/// next page, `None` after the last.
async fn session_page(
    state: &AppState,
    session: &Session,
    with_session: bool,
    after: i64,
) -> Result<(Vec<Vec<String>>, Option<i64>)> {
    let (documents, has_more) = state
        .store
        .session_documents_after(session, after, DOCUMENTS_PER_PAGE)
        .await?;
    let next = documents.last().map(|d| d.id).filter(|_| has_more);
    let segments = state.store.segments_of(&documents).await?;
    let mut tags = lector_store::tags_by_segment(state.store.tags_of(&segments, Some(session)).await?);
    let marked: std::collections::HashSet<i64> = state
        .store
        .marks_of(session, &segments)
        .await?
        .into_iter()
        .map(|m| m.segment_id)
        .collect();
    let mut rows = Vec::new();
    for segment in segments {
        let prefix: Vec<String> = with_session.then(|| session.id.to_string()).into_iter().collect();
        let page: Option<Page> = segment.layout.as_deref().and_then(|l| serde_json::from_str(l).ok());
        let base = |tag: Option<SegmentTag>| {
            let (class, label, part, span) =
                tag.map_or((None, None, None, None), |t| (t.class, t.label, t.text, t.span));
            // A part of a page: the boxes of its words (its span counts in the document's text).
            let boxes = match (&page, span) {
                (Some(page), Some((start, end))) => {
                    let relative = |at: i64| usize::try_from(at - segment.start).unwrap_or(0);
                    let boxes = boxes_of_part(page, (relative(start), relative(end)), label.as_deref());
                    serde_json::to_string(&boxes).unwrap_or_default()
                }
                _ => String::new(),
            };
            let mut row = prefix.clone();
            row.extend([
                segment.document_id.to_string(),
                segment.id.to_string(),
                segment.text.clone(),
                class.unwrap_or_default(),
                label.unwrap_or_default(),
                part.unwrap_or_default(),
                marked.contains(&segment.id).to_string(),
                page.as_ref().map(|p| p.number.to_string()).unwrap_or_default(),
                boxes,
            ]);
            row
        };
        match tags.remove(&segment.id) {
            Some(own) => rows.extend(own.into_iter().map(|t| base(Some(t)))),
            None => rows.push(base(None)),
        }
    }
    Ok((rows, next))
}

/// The labeled data of `sessions` as one file, streamed row by row.
async fn sessions_file(
    state: &AppState,
    sessions: Vec<Session>,
    with_session: bool,
    format: lector_text::Format,
    stem: &str,
) -> Result<axum::response::Response> {
    let mut header = session_header(with_session);
    header.extend(PAGE_COLUMNS.map(str::to_owned));
    let (response, mut sink) = crate::routes::streaming::streamed_response(format, stem, header)?;
    let state = state.clone();
    tokio::spawn(async move {
        for session in &sessions {
            let page = |after| session_page(&state, session, with_session, after);
            if !sink.pages(page).await {
                return;
            }
        }
        sink.finish().await;
    });
    Ok(response)
}

/// The header of a labeled-data download.
pub fn session_header(with_session: bool) -> Vec<String> {
    let first = with_session.then(|| "annotation".to_owned());
    first
        .into_iter()
        .chain(lector_text::LABELED_HEADER.iter().map(|h| (*h).to_owned()))
        .collect()
}

/// A session's labeled data as a file: one row per tag (and per segment without tags) with
/// columns document, segment, text, class, label, part, annotated, page, boxes (the last two
/// for pages of PDFs and images). It uploads again as a session with the same tags.
#[utoipa::path(get, path = "/projects/{project_id}/annotations/{annotation_id}/download", tag = "labeling sessions",
    params(("project_id" = i64, Path), ("annotation_id" = i64, Path), crate::routes::files::DownloadQuery),
    responses((status = 200, description = "the file in the format asked for", content_type = "application/vnd.lector.table")))]
pub async fn download_labeling_session(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<SessionPath>,
    QueryParams(q): QueryParams<crate::routes::files::DownloadQuery>,
) -> ApiResult<axum::response::Response> {
    let format = q.format()?;
    let session = p.session(&state, &caller).await?;
    let stem = format!("annotation-{}", session.id);
    Ok(sessions_file(&state, vec![session], false, format, &stem).await?)
}

/// Every labeling session of a project as one file: the columns of a session download after
/// an `annotation` column naming the session.
#[utoipa::path(get, path = "/projects/{project_id}/annotations/download", tag = "labeling sessions",
    params(("project_id" = i64, Path), crate::routes::files::DownloadQuery),
    responses((status = 200, description = "the file in the format asked for", content_type = "application/vnd.lector.table")))]
pub async fn download_labeling_sessions(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
    QueryParams(q): QueryParams<crate::routes::files::DownloadQuery>,
) -> ApiResult<axum::response::Response> {
    let format = q.format()?;
    let sessions = state
        .store
        .sessions(&caller.scope, p.project_id, &SessionFilter::default())
        .await?;
    let stem = format!("project-{}-annotations", p.project_id);
    Ok(sessions_file(&state, sessions, true, format, &stem).await?)
}
