//! `analyze`: an ad-hoc analysis answered within the request. Each text is normalised, split
//! into sentences in the model's language (unless `split=false`), and every segment gets the
//! model's tags with their confidence. The model comes from this node's cache of loaded models.
//! Nothing is stored; batch analyses (a job over documents) are another operation. A client
//! that goes away ends the work at the next segment.

use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::{Body, WriteBody};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use lector_core::validate::Problems;
use lector_core::{Error, ErrorCode, Scope};
use lector_text::Language;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(analyze))
}

/// Most documents one ad-hoc analysis takes; larger sets go through batch analyses.
pub const MAX_ADHOC_DOCUMENTS: usize = 1000;
/// The body of a request carrying one document's text: room for a text of the length a
/// document may have (1,000,000 characters) as a client may send it, Python's `json=` writing
/// each character beyond ASCII as a six-byte escape.
pub(crate) const MAX_TEXT_BODY_BYTES: usize = 8 * 1024 * 1024;

/// Segments one call to `/analyze` answers at most, whatever the model: the answer is held
/// whole, a segment and its tags a few hundred bytes.
const MAX_ADHOC_SEGMENTS: usize = 100_000;

/// Most segments one ad-hoc analysis reads with a model that runs a sentence encoder on each
/// (25–75 a second on one core, `docs/BENCHMARKS.md`): about a minute of a core, where a body
/// of short sentences could otherwise hold one for a quarter of an hour.
pub const MAX_ADHOC_ENCODED_SEGMENTS: usize = 2000;

/// The 422 of a call whose texts have more than `most` segments.
fn too_many_segments(most: usize, encoded: bool) -> Error {
    let why = if encoded {
        "the model reads every sentence with a sentence encoder"
    } else {
        "the answer is held whole"
    };
    Error::validation(vec![lector_core::FieldError::new(
        "documents",
        format!(
            "{why}: at most {most} segments per call, and these texts have more; analyse larger sets with create_analysis"
        ),
    )])
}

/// A client's id for a text, answered back as sent: a string or a number, read without building
/// a tree of whatever else a body may hold there (an 8 MiB array would be a gigabyte of one).
fn scalar_id<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<serde_json::Value>, D::Error> {
    struct ScalarId;
    impl serde::de::Visitor<'_> for ScalarId {
        type Value = Option<serde_json::Value>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a string or a number")
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
            Ok(Some(v.into()))
        }
        fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
            Ok(Some(v.into()))
        }
        fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
            Ok(Some(v.into()))
        }
        fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
            Ok(serde_json::Number::from_f64(v).map(serde_json::Value::Number))
        }
        fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(v.into()))
        }
    }
    deserializer.deserialize_any(ScalarId)
}

/// Texts to analyse with a model.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AnalyzeBody {
    pub documents: Vec<AnalyzeDocument>,
    pub model_id: i64,
    /// Split each text into sentences (default true); false keeps it one segment.
    #[serde(default = "yes")]
    pub split: bool,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AnalyzeDocument {
    pub text: String,
    /// The client's own id (a string or a number), answered back.
    #[schema(value_type = Option<Object>)]
    #[serde(default, deserialize_with = "scalar_id")]
    pub id: Option<serde_json::Value>,
}

impl WriteBody for AnalyzeBody {
    const MAX_BYTES: usize = MAX_TEXT_BODY_BYTES;

    fn validate(&self, problems: &mut Problems) {
        problems.check(!self.documents.is_empty(), "documents", "must not be empty");
        problems.check(
            self.documents.len() <= MAX_ADHOC_DOCUMENTS,
            "documents",
            "at most 1000 documents per call; analyse larger sets with create_analysis",
        );
        // The texts a batch analysis (and every document) takes.
        for (i, document) in self.documents.iter().enumerate() {
            crate::routes::documents::check_text(problems, &format!("documents[{i}].text"), &document.text);
        }
    }
}

/// The tags of an analysed segment.
#[derive(Debug, Serialize, ToSchema)]
pub struct AnalyzedTag {
    pub class: Option<String>,
    pub label: Option<String>,
    /// The calibrated probability that the tag is right.
    pub confidence: f32,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AnalyzedSegment {
    pub text: String,
    /// `[start, end)` in code points of the (normalised) text.
    pub span: [usize; 2],
    pub tags: Vec<AnalyzedTag>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AnalyzedDocument {
    #[schema(value_type = Option<Object>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<serde_json::Value>,
    pub text: String,
    pub segments: Vec<AnalyzedSegment>,
}

/// The ad-hoc analysis result: the model's name and type, and the documents with tags.
#[derive(Debug, Serialize, ToSchema)]
pub struct AdHocAnalysis {
    pub model: String,
    pub model_id: i64,
    #[serde(rename = "type")]
    pub kind: String,
    pub documents: Vec<AnalyzedDocument>,
}

/// Analyses texts with a READY model within the request (USER, in a read-only workspace too:
/// nothing is stored; a PUBLISHED model for a USER of any workspace).
#[utoipa::path(post, path = "/analyze", tag = "analyses", request_body = AnalyzeBody,
    responses((status = 200, body = AdHocAnalysis)))]
pub async fn analyze(
    State(state): State<AppState>,
    caller: Caller,
    Body(body): Body<AnalyzeBody>,
) -> ApiResult<Json<AdHocAnalysis>> {
    let documents = body.documents.into_iter().map(|d| (d.id, d.text)).collect();
    let analysis = analyze_texts(&state, &caller.scope, body.model_id, documents, body.split).await?;
    Ok(Json(analysis))
}

/// Raises its flag when dropped: the request's future is dropped when its client goes away,
/// and the analysis on the blocking pool then stops at its next segment instead of running on
/// for nobody (a minute of a core, with an encoder model).
struct StopWhenDropped(Arc<AtomicBool>);

impl Drop for StopWhenDropped {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Analyses texts (each with the client's own id) with a model the scope may analyse with:
/// `analyze`, and the analyze step of workflows.
pub(crate) async fn analyze_texts(
    state: &AppState,
    scope: &Scope,
    model_id: i64,
    documents: Vec<(Option<serde_json::Value>, String)>,
    split: bool,
) -> lector_core::Result<AdHocAnalysis> {
    // Stores nothing, so a read-only workspace's USERs analyse with its models too.
    let model = state.store.model_for_ad_hoc_analysis(scope, model_id).await?;
    let loaded = state.models.get(&state.store, &model).await?;
    let language = Language::from_code_or_default(Some(&model.language));
    let abandoned = Arc::new(AtomicBool::new(false));
    let _stop_when_dropped = StopWhenDropped(abandoned.clone());
    let metrics = state.metrics.clone();
    let documents = tokio::task::spawn_blocking(move || {
        // Counted as the texts are split, so a body of short sentences stops at the limit
        // instead of making millions of segments first; an encoder model's limit is said first.
        let most = if loaded.embedder().is_some() {
            MAX_ADHOC_ENCODED_SEGMENTS
        } else {
            MAX_ADHOC_SEGMENTS
        };
        let mut segmented = Vec::with_capacity(documents.len());
        let mut count = 0;
        for (id, text) in documents {
            let text = lector_text::normalize(&text);
            let segments = lector_text::segment(&text, language, split);
            count += segments.len();
            if count > most {
                return Err(too_many_segments(most, loaded.embedder().is_some()));
            }
            segmented.push((id, text, segments));
        }
        let mut workspace = lector_ml::Workspace::default();
        let mut documents = Vec::with_capacity(segmented.len());
        for (id, text, segments) in segmented {
            let mut analysed = Vec::with_capacity(segments.len());
            for segment in segments {
                if abandoned.load(Ordering::Relaxed) {
                    metrics.count_abandoned_analysis();
                    return Err(Error::new(ErrorCode::Unavailable, "the client went away"));
                }
                let prediction = loaded.predict_with(&segment.text, &mut workspace);
                analysed.push(AnalyzedSegment {
                    tags: prediction
                        .tags
                        .into_iter()
                        .map(|t| AnalyzedTag {
                            class: t.class,
                            label: t.label,
                            confidence: t.confidence,
                        })
                        .collect(),
                    text: segment.text,
                    span: segment.span,
                });
            }
            documents.push(AnalyzedDocument {
                id,
                text,
                segments: analysed,
            });
        }
        Ok(documents)
    })
    .await
    .map_err(|e| {
        tracing::error!(error = %e, "an analysis panicked");
        Error::internal()
    })??;
    Ok(AdHocAnalysis {
        model: model.name,
        model_id: model.id,
        kind: model.kind.as_str().into(),
        documents,
    })
}
