//! Labeled data going out: a session's tags as a file (`download_labeling_session`) and every
//! session of a project as one (`download_labeling_sessions`), one row per tag and one per
//! segment without tags, in the columns a labeled-data upload reads back. Every format streams
//! through [`crate::routes::streaming`], a page of documents at a time (keyset; a page ends at
//! a number of documents or of characters), each row built as it is written: a segment's text
//! is repeated on each of its tags' rows, so rows gathered first could reach gigabytes.
//! Segments read from PDFs and images also give their page's number and the boxes of each
//! tagged part's words (`page`, `boxes`).

use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::{PathParams, QueryParams};
use crate::routes::pages::boxes_of_part;
use crate::routes::paths::ProjectPath;
use crate::routes::sessions::SessionPath;
use crate::routes::streaming::DOCUMENTS_PER_PAGE;
use crate::routes::streaming::RowSink;
use crate::state::AppState;
use axum::extract::State;
use lector_core::Result;
use lector_extract::Page;
use lector_store::{Segment, SegmentTag, Session, SessionFilter};
use std::collections::HashSet;
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

/// Characters of text a page of a session download reads at most (a page holds at least one
/// document, however long), beside [`DOCUMENTS_PER_PAGE`].
const CHARS_PER_PAGE: i64 = 4 << 20;

/// Segments whose tags and marks are read at once, at most: a segment has at most
/// `lector_store::MAX_TAGS_PER_SEGMENT` tags, so a read holds a bounded number of them.
const SEGMENTS_PER_READ: usize = 500;

/// Characters of segment text whose tags are read at once, at most (one segment at least): a
/// tag of a part carries the part's text, up to its segment's, so the tags of one read hold
/// at most `MAX_TAGS_PER_SEGMENT` times this (or one long segment's 100 parts).
const READ_CHARS: usize = 64 << 10;

/// A page's segments (or anything with a `length` of text) split into reads of at most
/// [`SEGMENTS_PER_READ`] holding at most [`READ_CHARS`] characters (one at least).
fn reads<T>(segments: &[T], length: impl Fn(&T) -> usize) -> Vec<&[T]> {
    let mut reads = Vec::new();
    let (mut start, mut chars) = (0, 0);
    for (at, segment) in segments.iter().enumerate() {
        let length = length(segment);
        if at > start && (at - start >= SEGMENTS_PER_READ || chars + length > READ_CHARS) {
            reads.push(&segments[start..at]);
            (start, chars) = (at, 0);
        }
        chars += length;
    }
    if start < segments.len() {
        reads.push(&segments[start..]);
    }
    reads
}

/// Writes the rows of one segment as [`lector_text::LABELED_HEADER`] rows after `prefix` (the
/// column naming the session, in a download of several): one per tag, or one without a tag;
/// each built as it is written, since each repeats the segment's text. False when the client
/// has gone.
async fn write_segment(
    sink: &mut RowSink,
    prefix: &[String],
    segment: &Segment,
    tags: Option<Vec<SegmentTag>>,
    marked: bool,
) -> bool {
    let page: Option<Page> = segment.layout.as_deref().and_then(|l| serde_json::from_str(l).ok());
    let tags: Vec<Option<SegmentTag>> = match tags {
        Some(own) => own.into_iter().map(Some).collect(),
        None => vec![None],
    };
    for tag in tags {
        if !sink
            .row(&segment_row(prefix, segment, page.as_ref(), tag, marked))
            .await
        {
            return false;
        }
    }
    true
}

/// One row of a segment's ([`write_segment`]).
fn segment_row(
    prefix: &[String],
    segment: &Segment,
    page: Option<&Page>,
    tag: Option<SegmentTag>,
    marked: bool,
) -> Vec<String> {
    let (class, label, part, span) = tag.map_or((None, None, None, None), |t| (t.class, t.label, t.text, t.span));
    // A part of a page: the boxes of its words (its span counts in the document's text).
    let boxes = match (page, span) {
        (Some(page), Some((start, end))) => {
            let relative = |at: i64| usize::try_from(at - segment.start).unwrap_or(0);
            let boxes = boxes_of_part(page, (relative(start), relative(end)), label.as_deref());
            serde_json::to_string(&boxes).unwrap_or_default()
        }
        _ => String::new(),
    };
    let mut row = prefix.to_vec();
    row.extend([
        segment.document_id.to_string(),
        segment.id.to_string(),
        segment.text.clone(),
        class.unwrap_or_default(),
        label.unwrap_or_default(),
        part.unwrap_or_default(),
        marked.to_string(),
        page.map(|p| p.number.to_string()).unwrap_or_default(),
        boxes,
    ]);
    row
}

/// Writes a session's labeled data to `sink`, a page of documents at a time (keyset), the
/// tags and marks of a few segments at a time ([`reads`]). Answers false when the client has
/// gone.
async fn write_session(state: &AppState, sink: &mut RowSink, session: &Session, with_session: bool) -> Result<bool> {
    let prefix: Vec<String> = with_session.then(|| session.id.to_string()).into_iter().collect();
    let mut after = i64::MIN;
    loop {
        // A session deleted midway ends the file with an error, not as if it were whole.
        state.store.session_still_readable(session).await?;
        let (segments, next) = state
            .store
            .session_segments_after(session, after, DOCUMENTS_PER_PAGE, CHARS_PER_PAGE)
            .await?;
        for read in reads(&segments, |segment| segment.text.chars().count()) {
            let mut tags = lector_store::tags_by_segment(state.store.tags_of(read, Some(session)).await?);
            let marks = state.store.marks_of(session, read).await?;
            let marked: HashSet<i64> = marks.into_iter().map(|m| m.segment_id).collect();
            for segment in read {
                let own = tags.remove(&segment.id);
                if !write_segment(sink, &prefix, segment, own, marked.contains(&segment.id)).await {
                    return Ok(false);
                }
            }
        }
        if !sink.flush().await {
            return Ok(false);
        }
        match next {
            Some(next) => after = next,
            None => {
                state.store.session_still_readable(session).await?;
                return Ok(true);
            }
        }
    }
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
            // In the file of all sessions, one deleted before its turn is left out (none of its
            // rows were sent); one deleted midway, or the one session asked for, fails the file.
            match state.store.session_still_readable(session).await {
                Err(e) if with_session && e.code == lector_core::ErrorCode::NotFound => continue,
                Err(e) => return sink.fail(e).await,
                Ok(()) => {}
            }
            match write_session(&state, &mut sink, session, with_session).await {
                Ok(true) => {}
                Ok(false) => return,
                Err(e) => return sink.fail(e).await,
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

#[cfg(test)]
mod tests {
    use super::{READ_CHARS, SEGMENTS_PER_READ, reads};

    #[test]
    fn reads_end_at_their_segments_or_their_characters() {
        let lengths = |read: &[usize]| read.to_vec();
        let short = vec![10; SEGMENTS_PER_READ + 1];
        let split: Vec<usize> = reads(&short, |l| *l).iter().map(|r| r.len()).collect();
        assert_eq!(split, [SEGMENTS_PER_READ, 1]);
        let long = [READ_CHARS - 5, 10, READ_CHARS * 3, 1];
        let split: Vec<Vec<usize>> = reads(&long, |l| *l).into_iter().map(lengths).collect();
        assert_eq!(split, [vec![READ_CHARS - 5], vec![10], vec![READ_CHARS * 3], vec![1]]);
        assert!(reads(&[] as &[usize], |l| *l).is_empty());
    }
}
