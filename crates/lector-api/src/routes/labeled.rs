//! Labeled data coming in: documents sent with their tags (`documents` of a session's create
//! and update bodies), and labeled-data files (`upload_labeling_file`, or a `file_id` or source
//! with a `column_mapping` in `create_labeling_session`). A file's header is checked in the
//! request; its rows become the session's documents in the `import_labeled` job
//! (`lector_jobs::labeled_import`), so the request answers at once with the session STARTED and
//! the job's `task_id`. Downloads of labeled data are in [`crate::routes::session_downloads`].
//! A PDF or image uploaded as labeled data becomes one document of pages, none annotated yet.

use crate::auth::Caller;
use crate::routes::document_uploads::is_document;
use crate::routes::documents::{SegmentBody, check_text, language, prepare_document_body};
use crate::routes::sources::{SourceRequest, fetch_to_upload};
use crate::state::AppState;
use lector_core::validate::Problems;
use lector_core::{Error, Result};
use lector_store::{
    LabeledColumns, LabeledDocument, LabeledFile, MAX_TAGS_PER_SEGMENT, NewSession, NewTag, Session, Upload,
};
use serde::Deserialize;
use utoipa::ToSchema;

/// Labeled documents one request may bring.
pub const MAX_LABELED_DOCUMENTS: usize = 10_000;
/// Tags one segment may carry (the store's limit), and so also the tags of a whole document,
/// which go on each of its segments.
const MAX_SEGMENT_TAGS: usize = MAX_TAGS_PER_SEGMENT as usize;
/// Tags one request may make in all, a document's tags counted once for each of its segments:
/// the tags are built in memory before they are stored, so this bounds that memory (a few
/// MiB), whatever the body's segments and tags multiply to.
pub const MAX_LABELED_TAGS: usize = 250_000;

/// A tag as a client sends it: a class and/or a label by name, optionally on a part of the
/// segment given by span or text.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TagBody {
    pub class: Option<String>,
    pub label: Option<String>,
    /// `[start, end)` in code points of the document text, inside the segment.
    pub span: Option<[i64; 2]>,
    /// The words the tag points at (an aspect term), found in the segment when `span` is absent.
    pub text: Option<String>,
}

impl TagBody {
    /// The tag with no part; parts need the segment, which only the tag routes resolve.
    pub(crate) fn whole(&self) -> Result<NewTag> {
        if self.span.is_some() || self.text.is_some() {
            return Err(Error::validation(vec![lector_core::FieldError::new(
                "tags",
                "a tag of a new document covers its whole segment; add parts with add_segment_tag",
            )]));
        }
        Ok(NewTag {
            class: self.class.clone(),
            label: self.label.clone(),
            part: None,
        })
    }
}

/// A segment of a labeled document: its text (and where it lies), its tags, and whether it
/// counts as annotated (it does when it has tags).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LabeledSegmentBody {
    pub text: String,
    pub span: Option<[usize; 2]>,
    #[serde(default)]
    pub tags: Vec<TagBody>,
    /// ANNOTATED marks the segment annotated even without tags.
    pub status: Option<String>,
}

/// A document that arrives with its labels, as a download of a session gives them back.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LabeledDocumentBody {
    pub text: String,
    /// The client's own id for the document, kept in its meta as `external_id`.
    pub id: Option<i64>,
    #[schema(value_type = Option<Object>)]
    pub meta: Option<serde_json::Map<String, serde_json::Value>>,
    pub language: Option<String>,
    /// Split the text into sentences (default: the whole text is one segment, unless
    /// `segments` are given).
    pub split: Option<bool>,
    /// The document's segments with their tags.
    pub segments: Option<Vec<LabeledSegmentBody>>,
    /// Tags for every segment of the document.
    #[serde(default)]
    pub tags: Vec<TagBody>,
}

impl LabeledDocumentBody {
    fn validate(&self, problems: &mut Problems, field: &str) {
        check_text(problems, &format!("{field}.text"), &self.text);
        language(&self.language, problems);
        crate::routes::body_limits::check_meta(
            problems,
            &format!("{field}.meta"),
            self.meta.as_ref(),
            usize::from(self.id.is_some()),
        );
        let whole = self.tags.len();
        problems.check(
            whole <= MAX_SEGMENT_TAGS,
            &format!("{field}.tags"),
            &format!("a document's tags go on each of its segments, which carry at most {MAX_SEGMENT_TAGS} tags"),
        );
        if let Some(segments) = &self.segments {
            problems.check(
                !segments.is_empty(),
                &format!("{field}.segments"),
                "must hold a segment at least; leave segments out to keep the text whole",
            );
            for (i, segment) in segments.iter().enumerate() {
                if let Some(status) = &segment.status {
                    problems.check(
                        status == lector_core::labeling::ANNOTATED,
                        &format!("{field}.segments[{i}].status"),
                        "must be ANNOTATED",
                    );
                }
                if whole <= MAX_SEGMENT_TAGS && segment.tags.len() + whole > MAX_SEGMENT_TAGS {
                    problems.push(
                        &format!("{field}.segments[{i}].tags"),
                        format!("a segment carries at most {MAX_SEGMENT_TAGS} tags, the document's included"),
                    );
                    return;
                }
            }
        }
    }

    /// The tags the document makes when its text has `segments` segments.
    fn tag_count(&self, segments: usize) -> usize {
        let own: usize = self.segments.iter().flatten().map(|s| s.tags.len()).sum();
        own.saturating_add(self.tags.len().saturating_mul(segments))
    }

    /// Prepares the document, taking its tags from `budget` (what the request may still make)
    /// before any is built; `field` names it in an error.
    fn prepare(mut self, field: &str, budget: &mut usize) -> Result<LabeledDocument> {
        let mut meta = self.meta.take().unwrap_or_default();
        if let Some(id) = self.id {
            meta.insert("external_id".into(), id.into());
        }
        let given: Option<Vec<SegmentBody>> = self.segments.as_ref().map(|segments| {
            segments
                .iter()
                .map(|s| SegmentBody {
                    text: s.text.clone(),
                    span: s.span,
                })
                .collect()
        });
        let document = prepare_document_body(
            &self.text,
            meta,
            self.language.as_deref(),
            self.split.unwrap_or(false),
            given.as_deref(),
        )?;
        let count = document.segments.len();
        let made = self.tag_count(count);
        if made > *budget {
            return Err(Error::validation(vec![lector_core::FieldError::new(
                format!("{field}.tags"),
                too_many_tags(),
            )]));
        }
        *budget -= made;
        let whole: Vec<NewTag> = self.tags.iter().map(TagBody::whole).collect::<Result<_>>()?;
        let (tags, annotated) = match &self.segments {
            Some(segments) => {
                let mut tags = Vec::with_capacity(count);
                let mut annotated = Vec::with_capacity(count);
                for segment in segments {
                    let mut own: Vec<NewTag> = segment.tags.iter().map(TagBody::whole).collect::<Result<_>>()?;
                    own.extend(whole.iter().cloned());
                    annotated.push(!own.is_empty() || segment.status.is_some());
                    tags.push(own);
                }
                (tags, annotated)
            }
            None => (vec![whole.clone(); count], vec![!whole.is_empty(); count]),
        };
        Ok(LabeledDocument {
            document,
            tags,
            annotated,
        })
    }
}

pub(crate) fn check_labeled(problems: &mut Problems, documents: &Option<Vec<LabeledDocumentBody>>) {
    let Some(documents) = documents else { return };
    problems.check(
        documents.len() <= MAX_LABELED_DOCUMENTS,
        "documents",
        &format!("send at most {MAX_LABELED_DOCUMENTS} documents per request"),
    );
    let mut tags = 0usize;
    for (i, document) in documents.iter().enumerate().take(MAX_LABELED_DOCUMENTS) {
        let field = format!("documents[{i}]");
        document.validate(problems, &field);
        // The segments a text splits into are known once it is prepared (`prepare_all` counts
        // those); given segments, or a text kept whole, are known now.
        let segments = match &document.segments {
            Some(segments) => Some(segments.len()),
            None if !document.split.unwrap_or(false) => Some(1),
            None => None,
        };
        if let Some(segments) = segments {
            tags = tags.saturating_add(document.tag_count(segments));
            if tags > MAX_LABELED_TAGS {
                problems.push(&format!("{field}.tags"), too_many_tags());
                break;
            }
        }
        if problems.0.len() >= 20 {
            break;
        }
    }
}

/// Why a request's labeled documents are refused when they make too many tags, and what to do.
fn too_many_tags() -> String {
    format!(
        "a request makes at most {MAX_LABELED_TAGS} tags, a document's tags counted once for each of its \
         segments; send the documents in several requests, or as a labeled-data file (upload_labeling_file)"
    )
}

/// Prepares labeled documents on a blocking thread (normalising and splitting are CPU work);
/// those that name no language take `language`. The caller has checked that the caller may edit
/// the project (`language_for`), and the request makes at most [`MAX_LABELED_TAGS`] tags.
pub(crate) async fn prepare_all(
    documents: Option<Vec<LabeledDocumentBody>>,
    language: String,
) -> Result<Vec<LabeledDocument>> {
    let Some(documents) = documents.filter(|d| !d.is_empty()) else {
        return Ok(Vec::new());
    };
    crate::routes::documents::off_runtime(move || {
        let mut budget = MAX_LABELED_TAGS;
        documents
            .into_iter()
            .enumerate()
            .map(|(i, mut d)| {
                d.language.get_or_insert_with(|| language.clone());
                d.prepare(&format!("documents[{i}]"), &mut budget)
            })
            .collect()
    })
    .await
}

/// A column of a file: its 0-based index or its name.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum ColumnName {
    Index(usize),
    Name(String),
}

impl From<ColumnName> for lector_text::ColumnRef {
    fn from(c: ColumnName) -> Self {
        match c {
            ColumnName::Index(i) => lector_text::ColumnRef::Index(i),
            ColumnName::Name(n) => lector_text::ColumnRef::Name(n),
        }
    }
}

/// Maps the attributes of labeled data to file columns. `text` is required unless the file
/// has a column named so; `aspect` is the class of ABSA projects. `document` (rows with the
/// same value are one document's segments), `segment`, `part` (the words a tag points at) and
/// `annotated` read back what a session download writes.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ColumnMappingBody {
    pub text: Option<ColumnName>,
    pub class: Option<ColumnName>,
    pub aspect: Option<ColumnName>,
    pub label: Option<ColumnName>,
    pub document: Option<ColumnName>,
    pub part: Option<ColumnName>,
    pub annotated: Option<ColumnName>,
    /// Rows with the same value here are tags of one segment (a download's `segment`); without
    /// it, consecutive rows with the same text are.
    pub segment: Option<ColumnName>,
}

impl ColumnMappingBody {
    /// The mapping over a file's header: the given columns, the rest by their names.
    pub(crate) fn resolve(
        self,
        header: &[String],
    ) -> std::result::Result<lector_text::ColumnMapping, lector_text::TextError> {
        let implied = lector_text::ColumnMapping::from_header(header);
        let text = match (self.text, &implied) {
            (Some(text), _) => text.into(),
            (None, Ok(implied)) => implied.text.clone(),
            (None, Err(_)) => return implied,
        };
        let implied = implied.ok();
        let or_implied =
            |given: Option<ColumnName>, pick: fn(&lector_text::ColumnMapping) -> Option<lector_text::ColumnRef>| {
                given.map(Into::into).or_else(|| implied.as_ref().and_then(pick))
            };
        Ok(lector_text::ColumnMapping {
            text,
            class: or_implied(self.class.or(self.aspect), |m| m.class.clone()),
            label: or_implied(self.label, |m| m.label.clone()),
            document: or_implied(self.document, |m| m.document.clone()),
            part: or_implied(self.part, |m| m.part.clone()),
            annotated: or_implied(self.annotated, |m| m.annotated.clone()),
            segment: or_implied(self.segment, |m| m.segment.clone()),
        })
    }
}

/// The upload a session reads its labeled data from: a `file_id`, or a source fetched now.
pub(crate) async fn session_file(
    state: &AppState,
    caller: &Caller,
    project_id: i64,
    file_id: Option<uuid::Uuid>,
    source: Option<SourceRequest>,
) -> Result<Option<lector_store::Upload>> {
    let id = match (file_id, source) {
        (Some(id), _) => id,
        (None, Some(source)) => fetch_to_upload(state, caller, project_id, &source).await?.id,
        (None, None) => return Ok(None),
    };
    Ok(Some(state.store.upload(&caller.scope, project_id, id).await?))
}

/// Checks a labeled-data file's header against `mapping` (the columns named so by default),
/// then creates the session STARTED and queues the job that fills it from the file. Answers
/// the session and the job's id.
pub(crate) async fn start_from_file(
    state: &AppState,
    caller: &Caller,
    project_id: i64,
    new: NewSession,
    upload: &Upload,
    mapping: Option<ColumnMappingBody>,
    language: String,
) -> Result<(Session, i64)> {
    let columns = if is_document(upload) {
        if mapping.is_some() {
            return Err(Error::validation(vec![lector_core::FieldError::new(
                "column_mapping",
                "a PDF or image has no columns to map: it becomes one document of pages",
            )]));
        }
        // Unused: the job reads the pages, not rows.
        LabeledColumns {
            text: 0,
            class: None,
            label: None,
            document: None,
            part: None,
            annotated: None,
            segment: None,
        }
    } else {
        file_columns(state, upload, mapping).await?
    };
    let file = LabeledFile {
        language,
        columns,
        max_bytes: state.config.uploads.max_bytes,
        max_rows: state.config.uploads.max_rows,
    };
    state
        .store
        .start_labeled_import(&caller.scope, project_id, new, upload, file)
        .await
}

/// Where the mapped columns lie in a labeled-data file's header (422 when they are not there).
pub(crate) async fn file_columns(
    state: &AppState,
    upload: &Upload,
    mapping: Option<ColumnMappingBody>,
) -> Result<LabeledColumns> {
    let limits = crate::routes::files::limits(state);
    crate::routes::files::read_upload(state, upload, move |file, format| {
        let options = lector_text::ReadOptions { header_first: true };
        let rows = lector_text::open_rows(format, file, options, &limits)?;
        let header = rows.header();
        let mapping = match mapping {
            Some(mapping) => mapping.resolve(header)?,
            None => lector_text::ColumnMapping::from_header(header)?,
        };
        mapping.resolve(header)
    })
    .await
}
