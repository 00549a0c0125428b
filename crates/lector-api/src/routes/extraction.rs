//! `extract`: the fields a model names (its labels) out of one PDF or image, within the request.
//! The file is read in the sandbox (never stored; a review keeps its pages to learn from);
//! `lector_extract::extraction` finds the fields (built in, and as the model learnt them) and
//! judges them; this module only parses the request and shapes the answer
//! (SPEC's Extraction result). One credit per page.

use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::{PathParams, QueryParams, parse_flag};
use crate::routes::classes::LabelDto;
use crate::routes::files::{bad_field, multipart_error, read_field};
use crate::routes::pages::BoxDto;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::extract::multipart::{Multipart, MultipartRejection};
use lector_core::{Action, Error, ErrorCode, FieldError, ModelType, Result};
use lector_extract::ReadDocument;
use lector_extract::annotate::{Mark, annotated_page};
use lector_extract::extraction::{Extraction, FieldResult, FieldSetting, SettingOverride, extract as extract_fields};
use lector_extract::learned::FieldModel;
use lector_store::WorkspaceRef;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(extract))
}

#[derive(Debug, Deserialize)]
pub struct ExtractPath {
    organization: String,
    project_id: i64,
    model_id: i64,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ExtractQuery {
    /// `true` to answer every match's words as boxes, page by page.
    return_bboxes: Option<String>,
    /// `true` to answer the pages as PNG data URIs with the matches drawn and labelled (for
    /// documents of at most 20 pages; 413 beyond).
    return_annotated_pages: Option<String>,
}

/// The multipart form of an extraction.
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct ExtractForm {
    /// A PDF, JPEG, PNG, TIFF or WebP document.
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
}

/// One field's value in a document.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MatchDto {
    /// The field (the model's label).
    pub label: String,
    /// The value in the field's type: ISO 8601 dates, amounts with two decimals, grouped IBANs.
    pub value: Option<String>,
    /// The words as they stand on the page.
    pub text: String,
    /// 1 for the first page.
    pub page: u32,
    pub confidence: f32,
    pub data_type: String,
    pub required: bool,
    pub confidence_threshold: f32,
    pub threshold_met: bool,
    pub conversion_passed: bool,
    /// Why the value does not convert to the field's type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversion_error: Option<String>,
    /// An amount's currency (ISO 4217) when the page names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
}

/// The extraction of one document.
#[derive(Debug, Serialize, ToSchema)]
pub struct DocumentExtractionDto {
    pub name: String,
    pub all_required_fields_found: bool,
    pub all_confidence_thresholds_met: bool,
    pub all_data_conversion_passed: bool,
    pub credits_used: f64,
    /// The fields found; a field not found has no match.
    pub matches: Vec<MatchDto>,
    /// With `return_bboxes=true`: per page, a group of boxes per match.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bboxes: Option<Vec<Vec<Vec<BoxDto>>>>,
    /// With `return_annotated_pages=true`: each page as a PNG data URI, the matches boxed and
    /// labelled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotated_pages: Option<Vec<String>>,
    /// The required fields not found.
    pub missing_fields: Vec<String>,
    /// With a live HITL configuration for the model: whether the document waits for review.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hitl: Option<ExtractionReviewDto>,
}

/// The review an extraction asked for: `pending` (a review was created for the configuration's
/// user) or `passed` (every required field found, every threshold met).
#[derive(Debug, Serialize, ToSchema)]
pub struct ExtractionReviewDto {
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review_id: Option<i64>,
    pub result: Vec<HitlResultDto>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct HitlResultDto {
    pub confidences: Vec<HitlConfidenceDto>,
}

/// A field's confidence against the one its setting expects (0 when not found).
#[derive(Debug, Serialize, ToSchema)]
pub struct HitlConfidenceDto {
    pub label: String,
    pub value: String,
    pub expected_confidence: f32,
    pub found: f32,
}

/// SPEC's Extraction result.
#[derive(Debug, Serialize, ToSchema)]
pub struct ExtractionResultDto {
    pub model: String,
    pub all_required_fields_found: bool,
    pub all_confidence_thresholds_met: bool,
    pub all_data_conversion_passed: bool,
    pub total_credits_used: f64,
    pub documents: Vec<DocumentExtractionDto>,
    /// The project's labels.
    pub labels: Vec<LabelDto>,
}

/// Extracts the fields the model names (its labels) from one PDF or image (USER). Labels named
/// like the usual invoice fields (`invoice_number`, `date`, `total`, `iban`, `vendor`, …) are
/// found before any training. 413 past the size or page limit, 415 for other formats, 422 for
/// a file that cannot be read.
#[utoipa::path(post, path = "/organizations/{organization}/projects/{project_id}/models/{model_id}/extract",
    tag = "extraction",
    params(("organization" = String, Path, description = "workspace name or id"),
        ("project_id" = i64, Path), ("model_id" = i64, Path), ExtractQuery),
    request_body(content = ExtractForm, content_type = "multipart/form-data"),
    responses((status = 200, body = ExtractionResultDto)))]
pub async fn extract(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ExtractPath>,
    QueryParams(q): QueryParams<ExtractQuery>,
    form: std::result::Result<Multipart, MultipartRejection>,
) -> ApiResult<Json<ExtractionResultDto>> {
    let (workspace, _) = state
        .store
        .workspace_access(&caller.scope, &WorkspaceRef::parse(&p.organization), Action::Edit)
        .await?;
    let (project, _) = state
        .store
        .project_access(&caller.scope, p.project_id, Action::Edit)
        .await?;
    let model = state.store.model_for_analysis(&caller.scope, p.model_id).await?;
    if project.workspace_id != workspace.id || model.project_id != Some(project.id) {
        return Err(Error::not_found("model").into());
    }
    let return_bboxes = flag(&q.return_bboxes, "return_bboxes")?;
    let return_annotated_pages = flag(&q.return_annotated_pages, "return_annotated_pages")?;
    // Not a multipart form: 415, as every other upload answers (`From<MultipartRejection>`).
    let (name, bytes) = file_of(&state, form?).await?;
    let options = ExtractOptions {
        return_bboxes,
        return_annotated_pages,
    };
    Ok(Json(extract_with(&state, &project, model, name, bytes, options).await?))
}

/// What an extraction answers besides the fields.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ExtractOptions {
    pub return_bboxes: bool,
    pub return_annotated_pages: bool,
}

/// Extracts a file's fields with a model the scope may extract with (USER in the model's
/// workspace): the extract step of workflows.
pub(crate) async fn extract_file(
    state: &AppState,
    scope: &lector_core::Scope,
    model_id: i64,
    name: String,
    bytes: Vec<u8>,
) -> Result<ExtractionResultDto> {
    let model = state.store.model_for_analysis(scope, model_id).await?;
    let project_id = model.project_id.ok_or_else(|| Error::not_found("model"))?;
    let (project, _) = state.store.project_access(scope, project_id, Action::Edit).await?;
    extract_with(state, &project, model, name, bytes, ExtractOptions::default()).await
}

/// Extracts a file's fields with a model of `project` the caller may use.
async fn extract_with(
    state: &AppState,
    project: &lector_store::Project,
    model: lector_store::Model,
    name: String,
    bytes: Vec<u8>,
    options: ExtractOptions,
) -> Result<ExtractionResultDto> {
    if model.kind != ModelType::Label {
        return Err(Error::conflict(format!(
            "model {} tags {}; extraction takes a model of a LABEL project, whose labels are the fields",
            model.id,
            model.kind.as_str()
        )));
    }
    // The name is the client's (a form's, a workflow's): kept to a name's length wherever it goes.
    let name = lector_core::validate::file_name(&name).into_owned();
    let kept = options.return_annotated_pages.then(|| bytes.clone());
    let read = state.sandbox.read(bytes).await?;
    let hitl = state.store.live_hitl(project, model.id).await?;
    let overrides = match &hitl {
        Some(hitl) => SettingOverride::parse_all(&hitl.labels).unwrap_or_default(),
        None => Vec::new(),
    };
    // The model's fields, and those the live configuration names that the model never learnt
    // (a label added after training): a required one of those is missing unless a built-in
    // finder finds it, never silently passed.
    let configured = overrides.iter().map(|(label, _)| label);
    let mut fields: Vec<&String> = model.labels.iter().collect();
    for label in configured {
        if !fields.contains(&label) {
            fields.push(label);
        }
    }
    let settings: Vec<FieldSetting> = fields
        .into_iter()
        .map(|label| FieldSetting::configured(label, &overrides))
        .collect();
    let learned = state.store.field_model(&model).await?;
    // Reading the learnt fields and finding them is CPU work that grows faster than a page's
    // words: off the async workers.
    let (read, extraction) = tokio::task::spawn_blocking(move || {
        let learned = learned.as_deref().and_then(FieldModel::from_json);
        let extraction = extract_fields(&read, &settings, learned.as_ref());
        (read, extraction)
    })
    .await
    .map_err(|_| Error::internal())?;
    let labels = state.store.labels_of(project).await?;
    // Colours follow the project's labels, as the answer lists them.
    let label_names: Vec<String> = labels.iter().map(|l| l.name.clone()).collect();
    let mut result = answer(
        model.display_name,
        name.clone(),
        &extraction,
        options.return_bboxes,
        labels,
    );
    if let Some(bytes) = kept {
        result.documents[0].annotated_pages = Some(annotated_pages(state, bytes, &extraction, &label_names).await?);
    }
    if let Some(hitl) = hitl {
        result.documents[0].hitl = Some(review_if_needed(state, &hitl, &name, &read, &extraction, &result).await?);
    }
    Ok(result)
}

/// With a live HITL: a pending review for its user when a required field is missing or a
/// confidence is under its threshold; the answer's `hitl` says which.
async fn review_if_needed(
    state: &AppState,
    hitl: &lector_store::Hitl,
    name: &str,
    read: &ReadDocument,
    extraction: &Extraction,
    result: &ExtractionResultDto,
) -> Result<ExtractionReviewDto> {
    let confidences: Vec<HitlConfidenceDto> = extraction
        .fields
        .iter()
        .map(|f| HitlConfidenceDto {
            label: f.setting.label.clone(),
            value: f.found.as_ref().map(|found| found.text.clone()).unwrap_or_default(),
            expected_confidence: f.setting.threshold,
            found: f.found.as_ref().map_or(0.0, |found| found.confidence),
        })
        .collect();
    let failing = extraction
        .fields
        .iter()
        .find(|f| (f.setting.required && f.found.is_none()) || !f.threshold_met());
    let Some(first) = failing else {
        return Ok(ExtractionReviewDto {
            status: "passed".into(),
            review_id: None,
            result: vec![HitlResultDto { confidences }],
        });
    };
    let review = state
        .store
        .create_review(
            hitl,
            &lector_store::NewReview {
                document_name: name.to_owned(),
                page_num: first.found.as_ref().map_or(1, |f| i64::from(f.page)),
                label: Some(first.setting.label.clone()),
                confidence_threshold: Some(lector_core::decimal(first.setting.threshold)),
                extracted: crate::routes::as_answered(&KeptAnswer {
                    matches: &result.documents[0].matches,
                    missing_fields: &result.documents[0].missing_fields,
                    bboxes: page_boxes(extraction),
                })?,
                pages: kept_pages(read),
            },
        )
        .await?;
    // The extraction's own word for it stays lower case (SPEC's sample `pending`), unlike the
    // review's status (PENDING).
    Ok(ExtractionReviewDto {
        status: "pending".into(),
        review_id: Some(review.id),
        result: vec![HitlResultDto { confidences }],
    })
}

/// What a review keeps of the extraction's answer.
#[derive(Serialize)]
struct KeptAnswer<'a> {
    matches: &'a [MatchDto],
    missing_fields: &'a [String],
    bboxes: Vec<Vec<Vec<BoxDto>>>,
}

/// Most pages a document may have for its pages to be answered as images.
const MAX_ANNOTATED_PAGES: usize = 20;

/// The document's pages drawn in the sandbox, with the matches boxed and labelled here.
async fn annotated_pages(
    state: &AppState,
    bytes: Vec<u8>,
    extraction: &Extraction,
    labels: &[String],
) -> Result<Vec<String>> {
    if extraction.credits > MAX_ANNOTATED_PAGES {
        return Err(Error::new(
            ErrorCode::PayloadTooLarge,
            format!(
                "the document has {} pages; annotated pages are drawn for at most {MAX_ANNOTATED_PAGES}",
                extraction.credits
            ),
        ));
    }
    let images = state.sandbox.page_images(bytes).await?;
    let mut marks: Vec<Vec<Mark>> = images.iter().map(|_| Vec::new()).collect();
    for field in &extraction.fields {
        if let Some(found) = &field.found
            && let Some(page) = marks.get_mut(found.page as usize - 1)
        {
            page.push(Mark {
                label: field.setting.label.clone(),
                quad: found.quad,
            });
        }
    }
    let labels = labels.to_vec();
    tokio::task::spawn_blocking(move || {
        images
            .iter()
            .zip(&marks)
            .map(|(image, marks)| annotated_page(image, marks, &labels))
            .collect()
    })
    .await
    .map_err(|_| Error::internal())
}

/// Largest page layout (JSON) a review keeps for the next training; a larger document's review
/// is kept without it and teaches nothing.
const MAX_KEPT_PAGES_BYTES: usize = 4 * 1024 * 1024;

/// The pages of a reviewed document as the review keeps them, if they are small enough.
fn kept_pages(read: &ReadDocument) -> Option<String> {
    json_within(&read.pages, MAX_KEPT_PAGES_BYTES)
}

/// `value` as JSON if it takes at most `limit` bytes; writing stops as soon as it takes more,
/// so a large document's pages are never written out whole only to be dropped.
fn json_within(value: &impl Serialize, limit: usize) -> Option<String> {
    struct Bounded {
        json: Vec<u8>,
        limit: usize,
    }
    impl std::io::Write for Bounded {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            if self.json.len() + bytes.len() > self.limit {
                return Err(std::io::Error::other("past the limit"));
            }
            self.json.extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut out = Bounded {
        json: Vec::new(),
        limit,
    };
    serde_json::to_writer(&mut out, value).ok()?;
    String::from_utf8(out.json).ok()
}

/// A query flag as every other query reads it ([`parse_flag`]); absent or empty is false.
fn flag(value: &Option<String>, name: &str) -> Result<bool> {
    match value.as_deref().map(str::trim) {
        None | Some("") => Ok(false),
        Some(text) => parse_flag(text).ok_or_else(|| crate::extract::bad_parameter(name, "must be true or false")),
    }
}

/// The form's one `file`, read whole within `extract.max_file_bytes` (413 past it).
async fn file_of(state: &AppState, mut form: Multipart) -> Result<(String, Vec<u8>)> {
    let max = state.config.extract.max_file_bytes;
    let mut file = None;
    while let Some(mut field) = form
        .next_field()
        .await
        .map_err(multipart_error(state.config.max_body_bytes))?
    {
        match field.name().unwrap_or_default() {
            "file" if file.is_none() => {
                let name = field.file_name().unwrap_or("document").to_owned();
                let bytes = read_field(state, &mut field, max, "extract.max_file_bytes").await?;
                file = Some((name, bytes));
            }
            "file" => return Err(bad_field("file", "send one file")),
            other => {
                let mut error = Error::new(ErrorCode::UnknownField, format!("the form has no field `{other}`"));
                error.errors.push(FieldError::new(other, "unknown field"));
                return Err(error);
            }
        }
    }
    file.ok_or_else(|| bad_field("file", "is required"))
}

/// Per page, a group of boxes per field found, labelled with the field.
fn page_boxes(extraction: &Extraction) -> Vec<Vec<Vec<BoxDto>>> {
    let mut pages: Vec<Vec<Vec<BoxDto>>> = (0..extraction.credits).map(|_| Vec::new()).collect();
    for field in &extraction.fields {
        if let Some(found) = &field.found
            && let Some(page) = pages.get_mut(found.page as usize - 1)
        {
            let mut group = BoxDto::of_quad(&found.quad, &found.text, found.confidence);
            group.label = Some(field.setting.label.clone());
            page.push(vec![group]);
        }
    }
    pages
}

fn answer(
    model: String,
    name: String,
    extraction: &Extraction,
    return_bboxes: bool,
    labels: Vec<lector_store::Label>,
) -> ExtractionResultDto {
    let matches: Vec<MatchDto> = extraction.fields.iter().filter_map(match_of).collect();
    let bboxes = return_bboxes.then(|| page_boxes(extraction));
    let document = DocumentExtractionDto {
        name,
        all_required_fields_found: extraction.all_required_fields_found(),
        all_confidence_thresholds_met: extraction.all_confidence_thresholds_met(),
        all_data_conversion_passed: extraction.all_data_conversion_passed(),
        credits_used: extraction.credits as f64,
        matches,
        bboxes,
        annotated_pages: None,
        missing_fields: extraction
            .fields
            .iter()
            .filter(|f| f.setting.required && f.found.is_none())
            .map(|f| f.setting.label.clone())
            .collect(),
        hitl: None,
    };
    ExtractionResultDto {
        model,
        all_required_fields_found: document.all_required_fields_found,
        all_confidence_thresholds_met: document.all_confidence_thresholds_met,
        all_data_conversion_passed: document.all_data_conversion_passed,
        total_credits_used: document.credits_used,
        documents: vec![document],
        labels: labels.into_iter().map(LabelDto::from).collect(),
    }
}

fn match_of(field: &FieldResult) -> Option<MatchDto> {
    let found = field.found.as_ref()?;
    let converted = field.conversion.as_ref().and_then(|c| c.as_ref().ok());
    Some(MatchDto {
        label: field.setting.label.clone(),
        value: converted.map(|c| c.value.clone()),
        text: found.text.clone(),
        page: found.page,
        confidence: found.confidence,
        data_type: serde_json::to_value(field.setting.data_type)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
        required: field.setting.required,
        confidence_threshold: field.setting.threshold,
        threshold_met: field.threshold_met(),
        conversion_passed: field.conversion_passed(),
        conversion_error: field.conversion.as_ref().and_then(|c| c.as_ref().err().cloned()),
        currency: converted.and_then(|c| c.currency.clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::json_within;

    #[test]
    fn json_past_its_limit_is_not_written_out() {
        let words: Vec<String> = (0..1000).map(|i| format!("word{i}")).collect();
        let whole = serde_json::to_string(&words).unwrap();
        assert_eq!(json_within(&words, whole.len()).as_deref(), Some(whole.as_str()));
        assert_eq!(json_within(&words, whole.len() - 1), None);
        // A value of endless items would be refused as soon as it passed the limit: counted by
        // what was asked of it.
        struct Counted<'a>(&'a std::cell::Cell<usize>);
        impl serde::Serialize for Counted<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeSeq;
                let mut seq = s.serialize_seq(None)?;
                for i in 0..1_000_000 {
                    self.0.set(self.0.get() + 1);
                    seq.serialize_element(&i)?;
                }
                seq.end()
            }
        }
        let asked = std::cell::Cell::new(0);
        assert_eq!(json_within(&Counted(&asked), 100), None);
        assert!(asked.get() < 100, "{} items written", asked.get());
    }
}
