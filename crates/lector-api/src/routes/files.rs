//! Files in and out: uploading a file for a document group (answered with its preview),
//! uploading a classes file, and downloading a group's documents, the classes or the labels as
//! CSV, JSON, JSONL or XLSX, in shapes that upload again.
//!
//! An uploaded file streams into the blob store (413 past `uploads.max_bytes`); its preview is
//! read from there on a blocking thread. A file that cannot be read answers 422 naming the line
//! or cell and is not kept.

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::{PathParams, QueryParams};
use crate::routes::classes::ClassDto;
use crate::routes::document_uploads::{is_document, preview_document, refuse_document};
use crate::routes::paths::ProjectPath;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::extract::multipart::{Field, Multipart, MultipartError, MultipartRejection};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::StreamExt;
use lector_core::validate::{MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, TextKind, forbidden_char};
use lector_core::{Error, ErrorCode, FieldError, Result};
use lector_store::{ClassFields, MAX_CLASSES_PER_PROJECT, Upload, UploadFor};
use lector_text::{ColumnRef, Format, Limits, Location, ReadOptions, Row, Table, TextError};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(upload_group_file))
        .routes(routes!(upload_classes_file))
        .routes(routes!(download_classes))
        .routes(routes!(download_labels))
}

/// Data rows in an upload's preview (after its header row).
pub const PREVIEW_ROWS: usize = 10;

/// The multipart form of an upload.
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct UploadForm {
    /// The file: CSV, TXT (one document per line), JSON, JSONL or XLSX; for a document group
    /// also a PDF, JPEG, PNG, TIFF or WebP document (one document, a segment per page).
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
    /// Deprecated and ignored: the answer is always the preview.
    #[schema(deprecated)]
    to_list: Option<bool>,
}

/// An uploaded file: its id for `create_group` (`file_id`) and its first rows.
#[derive(Debug, Serialize, ToSchema)]
pub struct UploadedFileDto {
    #[schema(value_type = String, format = "uuid")]
    pub id: uuid::Uuid,
    /// The first rows, the header row first; columns are chosen by 0-based index or by name.
    pub preview: Vec<Vec<String>>,
}

/// Uploads a file for a document group: answers its id and a preview of its first rows.
#[utoipa::path(post, path = "/projects/{project_id}/groups/upload", tag = "groups",
    params(("project_id" = i64, Path)),
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses((status = 200, body = UploadedFileDto), (status = 413, description = "the file is over the upload limit"),
        (status = 415, description = "not a CSV, TXT, JSON, JSONL or XLSX file"),
        (status = 422, description = "the file cannot be read; the problem names the line or cell")))]
pub async fn upload_group_file(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
    multipart: std::result::Result<Multipart, MultipartRejection>,
) -> ApiResult<Json<UploadedFileDto>> {
    Ok(Json(
        upload_with_preview(&state, &caller, UploadFor::Project(p.project_id), multipart?).await?,
    ))
}

/// Receives an uploaded file for a project and answers its id and preview; a file whose preview
/// cannot be read is not kept. For every operation that answers an Uploaded file.
pub async fn upload_with_preview(
    state: &AppState,
    caller: &Caller,
    target: UploadFor,
    multipart: Multipart,
) -> Result<UploadedFileDto> {
    let upload = receive_upload(state, caller, target, multipart).await?;
    preview_upload(state, upload).await
}

/// Reads an upload's preview and remembers its header; an upload whose preview cannot be read
/// is not kept. A table is read whole (`lector_text::preview`): a file with too many rows or a
/// malformed row anywhere is refused here, before an import could store half of it.
pub async fn preview_upload(state: &AppState, upload: Upload) -> Result<UploadedFileDto> {
    let read = if is_document(&upload) {
        preview_document(state, &upload).await.map(|rows| (rows, None))
    } else {
        let read = {
            let state = state.clone();
            move |file: std::fs::File, format: Format| {
                let limits = limits(&state);
                lector_text::preview(format, file, PREVIEW_ROWS, ReadOptions::default(), &limits)
            }
        };
        let read = read_upload(state, &upload, read).await;
        read.map(|table| (table.rows, i64::try_from(table.data_rows).ok()))
    };
    let (preview, data_rows) = match read {
        Ok(read) => read,
        Err(e) => {
            discard(state, &upload).await;
            return Err(e);
        }
    };
    let header = preview.first().cloned().unwrap_or_default();
    let upload = state.store.set_upload_columns(&upload, &header, data_rows).await?;
    tracing::info!(upload.id = %upload.id, bytes = upload.byte_size, format = %upload.format, "file uploaded");
    Ok(UploadedFileDto { id: upload.id, preview })
}

/// Adds the classes of a file (a header row with `name` and optionally `example` and
/// `description`; a TXT file may list one name per line): all of them or, on any problem, none.
#[utoipa::path(post, path = "/projects/{project_id}/classes/upload", tag = "classes",
    params(("project_id" = i64, Path)),
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses((status = 200, body = Vec<ClassDto>), (status = 409, description = "a class of that name exists"),
        (status = 413, description = "the file is over the upload limit"),
        (status = 415, description = "not a CSV, TXT, JSON, JSONL or XLSX file"),
        (status = 422, description = "the file cannot be read; the problem names the line or cell")))]
pub async fn upload_classes_file(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
    multipart: std::result::Result<Multipart, MultipartRejection>,
) -> ApiResult<Json<Vec<ClassDto>>> {
    // A MANAGER's, as adding classes is: checked before the file is received and read.
    state
        .store
        .project_access(&caller.scope, p.project_id, lector_core::Action::Manage)
        .await?;
    let upload = receive_upload(&state, &caller, UploadFor::Project(p.project_id), multipart?).await?;
    let read = {
        let state = state.clone();
        move |file: std::fs::File, format: Format| {
            let limits = Limits {
                max_rows: MAX_CLASSES_PER_PROJECT as u64,
                ..limits(&state)
            };
            read_classes(file, format, &limits)
        }
    };
    let classes = read_upload(&state, &upload, read).await;
    // The file has served its purpose (or failed): it is not kept either way.
    discard(&state, &upload).await;
    let added = state.store.add_classes(&caller.scope, p.project_id, classes?).await?;
    Ok(Json(added.into_iter().map(ClassDto::from).collect()))
}

/// Receives the `file` part of an upload form (and the deprecated `to_list`) into the blob
/// store, unused; 413 past `uploads.max_bytes`, 415 for a format Lector does not read.
pub async fn receive_upload(state: &AppState, caller: &Caller, target: UploadFor, form: Multipart) -> Result<Upload> {
    let (upload, _) = receive_upload_with(state, caller, target, form, &["to_list"]).await?;
    Ok(upload)
}

/// Like [`receive_upload`], also taking the boolean text fields named in `flags`; answers the
/// file and the flags that were set.
pub async fn receive_upload_with(
    state: &AppState,
    caller: &Caller,
    target: UploadFor,
    mut form: Multipart,
    flags: &[&str],
) -> Result<(Upload, Vec<(String, bool)>)> {
    let mut upload = None;
    let mut set = Vec::new();
    while let Some(field) = form
        .next_field()
        .await
        .map_err(multipart_error(state.config.max_body_bytes))?
    {
        let name = field.name().unwrap_or_default().to_owned();
        match name.as_str() {
            "file" if upload.is_none() => upload = Some(store_file(state, caller, target, field).await?),
            "file" => return Err(bad_field("file", "send one file")),
            flag if flags.contains(&flag) => {
                let value = field
                    .text()
                    .await
                    .map_err(multipart_error(state.config.max_body_bytes))?;
                // Empty is false; otherwise as a query flag (the original's client sends True).
                let flag = if value.trim().is_empty() {
                    Some(false)
                } else {
                    crate::extract::parse_flag(&value)
                };
                match flag {
                    Some(flag) => set.push((name, flag)),
                    None => return Err(bad_field(&name, "must be true or false")),
                }
            }
            other => {
                let mut error = Error::new(ErrorCode::UnknownField, format!("the form has no field `{other}`"));
                error.errors.push(FieldError::new(other, "unknown field"));
                return Err(error);
            }
        }
    }
    let upload = upload.ok_or_else(|| bad_field("file", "is required"))?;
    Ok((upload, set))
}

async fn store_file(state: &AppState, caller: &Caller, target: UploadFor, mut field: Field<'_>) -> Result<Upload> {
    let name = lector_core::validate::file_name(field.file_name().unwrap_or("upload")).into_owned();
    let first = field
        .chunk()
        .await
        .map_err(multipart_error(state.config.max_body_bytes))?
        .unwrap_or_default();
    // A document is known by its first bytes, whatever its name; a table by its extension.
    let (format, max_bytes) = match lector_extract::sniff(&first) {
        Some(document) => (
            document.name(),
            state.config.uploads.max_bytes.min(state.config.extract.max_file_bytes),
        ),
        None => {
            let format = Format::from_file_name(&name).or_else(|| sniff(&first)).ok_or_else(|| {
                Error::new(
                    ErrorCode::UnsupportedMediaType,
                    format!(
                        "{name:?} is not a file Lector reads: send CSV, TXT, JSON, JSONL or XLSX (by its \
                         extension), or a PDF, JPEG, PNG, TIFF or WebP document"
                    ),
                )
            })?;
            (format.extension(), state.config.uploads.max_bytes)
        }
    };
    let chunks = futures_util::stream::once(async move { Ok::<Bytes, MultipartError>(first) })
        .chain(field)
        .map(|chunk| chunk.map_err(multipart_error(state.config.max_body_bytes)));
    state
        .store
        .save_upload(&caller.scope, target, &name, format, Box::pin(chunks), max_bytes)
        .await
}

/// The format of a file without a known extension, from its first bytes.
pub(crate) fn sniff(start: &[u8]) -> Option<Format> {
    if start.starts_with(b"PK\x03\x04") {
        return Some(Format::Xlsx);
    }
    let text = start.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(start);
    match text.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'[') => Some(Format::Json),
        Some(b'{') => Some(Format::Jsonl),
        _ => None,
    }
}

/// The readers' limits for uploads: the configured byte limit, the defaults otherwise.
pub fn limits(state: &AppState) -> Limits {
    Limits {
        max_bytes: state.config.uploads.max_bytes,
        max_rows: state.config.uploads.max_rows,
        ..Limits::default()
    }
}

/// 413 naming `field` when a request brings more documents than one import may
/// (`uploads.max_rows`, the limit on the rows of an imported file too).
pub fn check_rows(state: &AppState, field: &str, count: usize) -> lector_core::Result<()> {
    let max = state.config.uploads.max_rows;
    if count as u64 > max {
        let mut error = lector_core::Error::new(
            lector_core::ErrorCode::PayloadTooLarge,
            format!("the number of documents is over the limit of {max} per import (uploads.max_rows)"),
        );
        error
            .errors
            .push(lector_core::FieldError::new(field, format!("at most {max} documents")));
        return Err(error);
    }
    Ok(())
}

/// Runs `read` over an upload's bytes on a blocking thread (a `TextError` becomes 413 or 422).
pub async fn read_upload<T: Send + 'static>(
    state: &AppState,
    upload: &Upload,
    read: impl FnOnce(std::fs::File, Format) -> std::result::Result<T, TextError> + Send + 'static,
) -> Result<T> {
    refuse_document(upload, "this operation")?;
    let format = Format::from_extension(&upload.format).ok_or_else(|| {
        tracing::error!(upload.id = %upload.id, format = %upload.format, "an upload of an unknown format");
        Error::internal()
    })?;
    let file = state.store.open_upload(upload).await?;
    let outcome = tokio::task::spawn_blocking(move || read(file, format))
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "reading an upload panicked");
            Error::internal()
        })?;
    outcome.map_err(|e| {
        if let TextError::Io(io) = &e {
            tracing::error!(error = %io, upload.id = %upload.id, "cannot read an upload");
        }
        Error::from(e)
    })
}

pub(crate) async fn discard(state: &AppState, upload: &Upload) {
    if let Err(e) = state.store.discard_upload(upload).await {
        tracing::warn!(upload.id = %upload.id, error = %e.detail, "cannot discard an upload");
    }
}

/// A form that cannot be read: 413 naming the body limit when the body went over it, 400
/// otherwise.
pub(crate) fn multipart_error(max_body_bytes: usize) -> impl Fn(MultipartError) -> Error + Copy {
    move |e| {
        if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
            crate::error::body_over_limit(max_body_bytes)
        } else {
            Error::bad_request(format!("cannot read the form: {}", e.body_text()))
        }
    }
}

/// A form field read whole, refused with 413 naming `setting` once it is over `max` bytes
/// (and naming `max_body_bytes` when the body goes over that first).
pub(crate) async fn read_field(state: &AppState, field: &mut Field<'_>, max: u64, setting: &str) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    while let Some(chunk) = field
        .chunk()
        .await
        .map_err(multipart_error(state.config.max_body_bytes))?
    {
        if (bytes.len() + chunk.len()) as u64 > max {
            return Err(Error::new(
                ErrorCode::PayloadTooLarge,
                format!("the file is over the limit of {max} bytes ({setting})"),
            ));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

pub(crate) fn bad_field(field: &str, message: &str) -> Error {
    Error::validation(vec![FieldError::new(field, message)])
}

/// A rejected multipart request (not `multipart/form-data`, no boundary) answers 415.
impl From<MultipartRejection> for ApiError {
    fn from(e: MultipartRejection) -> Self {
        ApiError(Error::new(
            ErrorCode::UnsupportedMediaType,
            format!("send the file as multipart/form-data: {}", e.body_text()),
        ))
    }
}

/// Reads a classes file into class fields, naming the line or cell of the first problem.
fn read_classes(
    file: std::fs::File,
    format: Format,
    limits: &Limits,
) -> std::result::Result<Vec<ClassFields>, TextError> {
    // A TXT file lists names, one a line, with or without a `name` header.
    let options = ReadOptions {
        header_first: format != Format::Txt,
    };
    let mut rows = lector_text::open_rows(format, file, options, limits)?;
    let header = rows.header().to_vec();
    let names_only = format == Format::Txt || header == ["0"];
    let name_column = if names_only {
        0
    } else {
        ColumnRef::Name("name".into()).resolve(&header)?
    };
    let optional = |name: &str| ColumnRef::Name(name.into()).resolve(&header).ok();
    let (example, description) = if names_only {
        (None, None)
    } else {
        (optional("example"), optional("description"))
    };
    let mut classes: Vec<ClassFields> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for row in rows.by_ref() {
        let row = row?;
        let cell = |index: Option<usize>| index.and_then(|i| row.cells.get(i)).cloned().unwrap_or_default();
        let name = cell(Some(name_column)).trim().to_owned();
        if format == Format::Txt && row.number == 1 && name.eq_ignore_ascii_case("name") {
            continue;
        }
        let at = |column: usize| place(format, &row, column);
        if name.is_empty() {
            return Err(malformed(at(name_column), "the class name is empty"));
        }
        if name.chars().count() > MAX_NAME_CHARS {
            return Err(malformed(
                at(name_column),
                format!("the class name is longer than {MAX_NAME_CHARS} characters"),
            ));
        }
        if let Some(c) = forbidden_char(&name, TextKind::Short) {
            return Err(malformed(
                at(name_column),
                format!("the class name holds the character U+{:04X}", c as u32),
            ));
        }
        if !seen.insert(name.clone()) {
            return Err(malformed(
                at(name_column),
                format!("the class {name:?} is listed twice"),
            ));
        }
        let class = ClassFields {
            name,
            example: cell(example),
            description: cell(description),
        };
        for (index, value) in [(example, &class.example), (description, &class.description)] {
            if let Some(index) = index
                && value.chars().count() > MAX_DESCRIPTION_CHARS
            {
                return Err(malformed(
                    at(index),
                    format!("longer than {MAX_DESCRIPTION_CHARS} characters"),
                ));
            }
            if let Some(index) = index
                && let Some(c) = forbidden_char(value, TextKind::Free)
            {
                return Err(malformed(at(index), format!("holds the character U+{:04X}", c as u32)));
            }
        }
        classes.push(class);
    }
    if classes.is_empty() {
        return Err(malformed(Location::File, "the file lists no class"));
    }
    Ok(classes)
}

fn malformed(at: Location, reason: impl Into<String>) -> TextError {
    TextError::Malformed {
        at,
        reason: reason.into(),
    }
}

/// Where a cell of a row is, in the terms of its format.
fn place(format: Format, row: &Row, column: usize) -> Location {
    match format {
        Format::Csv | Format::Txt | Format::Jsonl => Location::Line(row.number),
        Format::Json => Location::JsonPath(format!("$[{}]", row.number)),
        Format::Xlsx => Location::Cell(format!("{}{}", column_letters(column), row.number)),
    }
}

/// "A" for column 0, "AA" for column 26.
fn column_letters(column: usize) -> String {
    let mut letters = Vec::new();
    let mut n = column + 1;
    while n > 0 {
        letters.push(b'A' + ((n - 1) % 26) as u8);
        n = (n - 1) / 26;
    }
    letters.reverse();
    String::from_utf8_lossy(&letters).into_owned()
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct DownloadQuery {
    /// csv (default), json, jsonl or xlsx.
    pub format: Option<String>,
}

impl DownloadQuery {
    pub(crate) fn format(&self) -> Result<Format> {
        match self.format.as_deref().unwrap_or("csv") {
            "csv" => Ok(Format::Csv),
            "json" => Ok(Format::Json),
            "jsonl" => Ok(Format::Jsonl),
            "xlsx" => Ok(Format::Xlsx),
            other => Err(Error::new(
                ErrorCode::InvalidParameter,
                format!("format takes csv, json, jsonl or xlsx, not {other:?}"),
            )),
        }
    }
}

/// A table as a file to download.
pub(crate) fn file_response(table: Table, format: Format, stem: &str) -> Result<Response> {
    let mut bytes = Vec::new();
    lector_text::write_table(format, &table, &mut bytes).map_err(|e| {
        tracing::error!(error = %e, "cannot write a download");
        Error::internal()
    })?;
    let mut response = bytes.into_response();
    crate::routes::streaming::set_download_headers(&mut response, format, stem);
    Ok(response)
}

/// The classes of a project as a file with columns `name`, `example`, `description`; uploads
/// again through `upload_classes_file`.
#[utoipa::path(get, path = "/projects/{project_id}/classes/download", tag = "classes",
    params(("project_id" = i64, Path), DownloadQuery),
    responses((status = 200, description = "the file in the format asked for", content_type = "application/vnd.lector.table")))]
pub async fn download_classes(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
    QueryParams(q): QueryParams<DownloadQuery>,
) -> ApiResult<Response> {
    let format = q.format()?;
    let classes = state.store.classes(&caller.scope, p.project_id).await?;
    let rows = classes.into_iter().map(|c| vec![c.name, c.example, c.description]);
    let header = ["name", "example", "description"];
    vocabulary_file(format, &format!("classes-{}", p.project_id), &header, rows)
}

/// The labels of a project as a file with one column, `name`.
#[utoipa::path(get, path = "/projects/{project_id}/labels/download", tag = "labels",
    params(("project_id" = i64, Path), DownloadQuery),
    responses((status = 200, description = "the file in the format asked for", content_type = "application/vnd.lector.table")))]
pub async fn download_labels(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
    QueryParams(q): QueryParams<DownloadQuery>,
) -> ApiResult<Response> {
    let format = q.format()?;
    let labels = state.store.labels(&caller.scope, p.project_id).await?;
    let rows = labels.into_iter().map(|l| vec![l.name]);
    vocabulary_file(format, &format!("labels-{}", p.project_id), &["name"], rows)
}

/// A project's classes or labels as a file named `stem`, one row each.
fn vocabulary_file(
    format: Format,
    stem: &str,
    header: &[&str],
    rows: impl Iterator<Item = Vec<String>>,
) -> ApiResult<Response> {
    let table = Table {
        header: header.iter().map(|name| name.to_string()).collect(),
        rows: rows.collect(),
    };
    Ok(file_response(table, format, stem)?)
}
