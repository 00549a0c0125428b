//! A group's documents as a file to download (columns `id`, `text`, then each meta key),
//! streamed page by page: a first pass over the documents finds the header's meta keys, a
//! second writes the rows of the documents that pass saw. Not while an import fills the
//! group; a group deleted while it is read ends the transfer with an error, never as if the
//! file were whole.

use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::{PathParams, QueryParams};
use crate::routes::body_limits::MAX_META_KEYS;
use crate::routes::files::DownloadQuery;
use crate::routes::paths::GroupPath;
use crate::state::AppState;
use axum::extract::State;
use axum::response::Response;
use lector_core::{Error, Result};
use lector_store::DocumentFilter;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(download_group))
}

/// Documents read per query while a download is assembled.
const DOWNLOAD_PAGE: i64 = 1000;
/// Columns of a group's download: `id`, `text` and the meta keys of one document at most.
const MAX_DOWNLOAD_COLUMNS: usize = 2 + MAX_META_KEYS;

/// The documents of a group as a file: columns `id`, `text`, then each meta attribute; uploads
/// again with `column_name: "text"`. Not while an import fills the group (409); a group deleted
/// while its file is sent ends the transfer early, never as if the file were whole.
#[utoipa::path(get, path = "/projects/{project_id}/groups/{group_id}/download", tag = "groups",
    params(("project_id" = i64, Path), ("group_id" = i64, Path), DownloadQuery),
    responses((status = 200, description = "the file in the format asked for", content_type = "application/vnd.lector.table"),
        (status = 409, description = "an import is filling the group, its documents have too many meta keys, \
            or more than a sheet's rows for xlsx")))]
pub async fn download_group(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<GroupPath>,
    QueryParams(q): QueryParams<DownloadQuery>,
) -> ApiResult<Response> {
    let format = q.format()?;
    let group = state.store.group(&caller.scope, p.project_id, p.group_id).await?;
    if format == lector_text::Format::Xlsx && group.document_count >= i64::from(lector_text::XLSX_MAX_ROWS) {
        let rows = lector_text::XLSX_MAX_ROWS;
        let many = format!(
            "a sheet holds {rows} rows, the header's among them, and group {} has {} documents; download it as csv or jsonl",
            group.id, group.document_count
        );
        return Err(Error::conflict(many).into());
    }
    if group.status == "PROCESSING" {
        let busy = format!(
            "group {} is being filled by an import; download it once it is CREATED",
            group.id
        );
        return Err(Error::conflict(busy).into());
    }
    // The header needs every meta key before the first row: one pass over the documents first.
    // The rows are the documents that pass saw (up to its last id): one added meanwhile may
    // have keys the header lacks.
    let mut header = vec!["id".to_owned(), "text".to_owned()];
    let mut seen: std::collections::HashSet<String> = header.iter().cloned().collect();
    let mut pages = GroupPages::new(&state, &caller.scope, p.project_id, group.id);
    let mut last_id = None;
    while let Some(page) = pages.next().await? {
        last_id = page.last().map(|d| d.id).or(last_id);
        for document in &page {
            for key in document.meta.as_object().into_iter().flat_map(|meta| meta.keys()) {
                if seen.insert(key.clone()) {
                    header.push(key.clone());
                }
            }
            // Every row holds a cell per column: a group whose documents share no keys would
            // make rows as wide as all their keys together.
            if header.len() > MAX_DOWNLOAD_COLUMNS {
                return Err(Error::conflict(format!(
                    "the group's documents have more than {MAX_META_KEYS} meta keys between them, and a download has at most {MAX_DOWNLOAD_COLUMNS} columns (id, text and a column per key); read the documents with details=meta instead"
                ))
                .into());
            }
        }
    }
    let stem = format!("group-{}", group.id);
    let (response, mut sink) = crate::routes::streaming::streamed_response(format, &stem, header.clone())?;
    let (state, scope, project_id, group_id) = (state.clone(), caller.scope.clone(), p.project_id, group.id);
    tokio::spawn(async move {
        let mut pages = GroupPages::new(&state, &scope, project_id, group_id);
        pages.up_to = Some(last_id.unwrap_or(i64::MIN));
        loop {
            match pages.next().await {
                Ok(Some(page)) => {
                    let rows = page.into_iter().map(|d| group_row(d, &header[2..]));
                    if !sink.rows(rows).await {
                        return;
                    }
                }
                Ok(None) => return sink.finish().await,
                Err(e) => return sink.fail(e).await,
            }
        }
    });
    Ok(response)
}

/// A group's documents page by page in id order, with a keyset; up to the document `up_to`
/// when it is set. A group deleted while it is read fails the reader (404) before its next
/// page, rather than end it early as if it were whole.
struct GroupPages<'a> {
    state: &'a AppState,
    scope: &'a lector_core::Scope,
    project_id: i64,
    group_id: i64,
    filter: DocumentFilter,
    up_to: Option<i64>,
    done: bool,
}

impl<'a> GroupPages<'a> {
    fn new(state: &'a AppState, scope: &'a lector_core::Scope, project_id: i64, group_id: i64) -> Self {
        Self {
            state,
            scope,
            project_id,
            group_id,
            filter: DocumentFilter {
                group_id: Some(group_id),
                ..DocumentFilter::default()
            },
            up_to: None,
            done: false,
        }
    }

    async fn next(&mut self) -> Result<Option<Vec<lector_store::Document>>> {
        if self.done {
            return Ok(None);
        }
        let (mut page, more) = self
            .state
            .store
            .documents_to_read(
                self.scope,
                self.project_id,
                &self.filter,
                (DOWNLOAD_PAGE, lector_store::MAX_LISTED_CHARS),
            )
            .await?;
        // Checked after the read: a page read empty because the group went meanwhile (its
        // documents ungrouped) is not taken for the end.
        self.state
            .store
            .group_status(self.scope, self.project_id, self.group_id)
            .await?;
        self.filter.after = page.last().map(|d| d.id).or(self.filter.after);
        self.done = !more;
        if let Some(last) = self.up_to {
            let before = page.len();
            page.retain(|d| d.id <= last);
            self.done |= page.len() < before || self.filter.after == Some(last);
        }
        Ok((!page.is_empty()).then_some(page))
    }
}

/// A document as a row of its group's download: id, text, then the meta keys of `keys`.
fn group_row(document: lector_store::Document, keys: &[String]) -> Vec<String> {
    let mut row = vec![document.id.to_string(), document.text];
    for key in keys {
        row.push(match document.meta.get(key) {
            Some(serde_json::Value::String(text)) => text.clone(),
            Some(serde_json::Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        });
    }
    row
}
