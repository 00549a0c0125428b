//! The job that trains a model: it reads the annotated segments of its labeling sessions,
//! learns with `lector-ml` for the project's type, evaluates on the test side and stores the
//! artifact; the model goes QUEUED → TRAINING → READY, or FAILED with a reason a person can
//! act on. Progress comes from `lector-ml`'s callback and never decreases.
//!
//! A LABEL model also learns its fields from the pages of its sessions (segments read from
//! PDFs and images, with labels tagged on parts of their text) and from the corrected values of
//! approved HITL reviews (`lector_extract::learned`), for `extract`.
//!
//! A worker without the sentence encoder a training starts from (installed per node) hands the
//! job back for one that has it, before the model turns TRAINING (`Retry::Elsewhere`).
//!
//! Every write is fenced by the job's lease and idempotent, so a job that runs twice (its
//! worker killed) finishes once, with one notification. A failure goes through the queue's one
//! failure path, which marks the model FAILED with the reason (`TrainingPayload::failure`). It
//! does not serve predictions: that is the API's model cache.
//!
//! Learning runs on a blocking thread that no task abort reaches; it stops at its next progress
//! report when the lease is lost, when the process is stopping (the job then goes back to the
//! queue, see `crate::shutdown`), or when the job's task is dropped.

use crate::base_models::missing_here;
use crate::runner::{Handler, JobContext, JobError, Outcome, notice_for};
use lector_core::{ErrorCode, ModelStatus, ModelType, NotificationType, ProjectType};
use lector_embed::BaseModels;
use lector_extract::Page;
use lector_extract::learned::{Annotation, FieldModel, locate};
use lector_ml::{Example, Model as MlModel, Options, Tag, split_examples};
use lector_store::{
    LearntFrom, Lease, Model, PageBudget, ReviewedPages, Store, TrainedModel, TrainingPage, TrainingPayload,
};
use std::collections::{BTreeSet, HashSet};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// Share of the progress bar the learning itself takes; evaluation and storing take the rest.
const LEARNING_SHARE: f64 = 0.9;
/// Test documents shown with their predictions in the model's `demoset`.
const DEMOSET_SIZE: usize = 5;
/// Share of the segments held out for testing when the client names no test sessions.
const TEST_FRACTION: f64 = 0.2;

/// Trains the model a `train_model` request queued, with the BASE models installed here.
#[derive(Debug, Default)]
pub struct TrainModel(pub Arc<BaseModels>);

/// Why a training run stopped.
enum Stop {
    /// The data or the model cannot make a model; said in words a person can act on.
    Fatal(String),
    /// Worth another attempt (the database or blob store failed).
    Transient(String),
    /// The learning was cancelled: the lease was lost or the process is stopping.
    Cancelled,
    /// This worker cannot use the sentence encoder the training needs; another may.
    Elsewhere(JobError),
}

impl From<Stop> for JobError {
    fn from(stop: Stop) -> Self {
        match stop {
            // The queue's failure path marks the model FAILED with this reason and notifies.
            Stop::Fatal(reason) => JobError::fatal(reason),
            Stop::Transient(reason) => JobError::transient(reason),
            Stop::Elsewhere(error) => error,
            Stop::Cancelled => JobError::transient("the job's lease was lost"),
        }
    }
}

impl From<lector_core::Error> for Stop {
    /// What the job needs being gone (a deleted base model) is final; other store faults pass.
    fn from(e: lector_core::Error) -> Self {
        match e.code {
            ErrorCode::NotFound | ErrorCode::Conflict => Stop::Fatal(e.detail),
            _ => Stop::Transient(e.detail),
        }
    }
}

impl Handler for TrainModel {
    type Payload = TrainingPayload;

    async fn run(&self, job: JobContext<'_>, payload: TrainingPayload) -> Result<Outcome, JobError> {
        let JobContext { store, lease, stopping } = job;
        let model = store
            .model_for_job(lease, payload.model_id)
            .await
            .map_err(JobError::from_store)?;
        // What it starts from comes first: a worker without the BASE model's files hands
        // the job back while the model is still QUEUED.
        let start = match model.base_id {
            Some(id) if matches!(model.status, ModelStatus::Queued | ModelStatus::Training) => {
                start_from(store, lease, &self.0, id).await?
            }
            _ => Start::Fresh,
        };
        match store.begin_training(lease, model.id).await {
            // A run after the model was finished (its worker died before the job did).
            Ok(ModelStatus::Ready) => return Ok(ready(lease, &model, model.score)),
            Ok(ModelStatus::Training) => {}
            Ok(other) => return Err(JobError::fatal(format!("the model is {other}, not trainable"))),
            Err(e) => return Err(JobError::from_store(e)),
        }
        match train(store, lease, stopping, start, &model, &payload).await {
            Ok(trained) => {
                let score = trained.score;
                let storing = std::time::Instant::now();
                store
                    .complete_training(lease, &model, trained)
                    .await
                    .map_err(JobError::from_store)?;
                let stored_ms = storing.elapsed().as_millis() as u64;
                tracing::info!(
                    model.id = model.id,
                    job.id = lease.job.id,
                    score,
                    stored_ms,
                    "model trained"
                );
                Ok(ready(lease, &model, score))
            }
            Err(Stop::Cancelled) if stopping.requested() => Err(JobError::stopped()),
            Err(stop) => Err(stop.into()),
        }
    }
}

fn ready(lease: &Lease, model: &Model, score: Option<f64>) -> Outcome {
    let score_text = score.map_or_else(
        || "no test segments to score on".to_owned(),
        |s| format!("score {s:.2}"),
    );
    Outcome {
        result: serde_json::json!({"model_id": model.id, "status": ModelStatus::Ready.as_str(), "score": score}),
        notice: notice_for(
            lease,
            NotificationType::Info,
            "Model ready",
            format!("Model {} is ready: {score_text}.", model.display_name),
        ),
    }
}

/// Reads, learns, evaluates; answers what `complete_training` stores.
async fn train(
    store: &Store,
    lease: &Lease,
    stopping: &crate::Stopping,
    start: Start,
    model: &Model,
    payload: &TrainingPayload,
) -> Result<TrainedModel, Stop> {
    let kind = model
        .kind
        .project_type()
        .ok_or_else(|| Stop::Fatal("a BASE model ships with the service; it is not trained".into()))?;
    let reading = std::time::Instant::now();
    // One set of segments seen for both sides: a test session sharing segments with a training
    // session (over the same documents) tests only on those the model does not learn from.
    let mut read = Read::default();
    let mut train = examples(store, lease, kind, &payload.train_session_ids, &mut read).await?;
    let mut test = examples(store, lease, kind, &payload.test_session_ids, &mut read).await?;
    check_examples(kind, &train)?;
    if payload.test_session_ids.is_empty() {
        let split = split_examples(kind, &train, TEST_FRACTION, payload.seed);
        test = split.test.iter().map(|&i| train[i].clone()).collect();
        train = split.train.iter().map(|&i| train[i].clone()).collect();
        check_examples(kind, &train)?;
    }
    tracing::info!(
        job.id = lease.job.id,
        train = train.len(),
        test = test.len(),
        ms = reading.elapsed().as_millis() as u64,
        "training data read"
    );
    if stopping.requested() {
        return Err(Stop::Cancelled);
    }
    let done = Arc::new(AtomicU64::new(0f64.to_bits()));
    let cancel = CancelOnDrop(Arc::new(AtomicBool::new(false)));
    let work = {
        let (done, cancel) = (done.clone(), cancel.0.clone());
        tokio::task::spawn_blocking(move || learn(kind, &train, &test, &start, &done, &cancel))
    };
    tokio::pin!(work);
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    let mut stop_seen = false;
    let outcome = loop {
        tokio::select! {
            outcome = &mut work => break outcome,
            () = stopping.requested_now(), if !stop_seen => {
                stop_seen = true;
                tracing::info!(job.id = lease.job.id, "the worker is stopping; training stops at its next step");
                cancel.0.store(true, Ordering::Relaxed);
            }
            _ = tick.tick() => {
                let fraction = f64::from_bits(done.load(Ordering::Relaxed)) * LEARNING_SHARE;
                match store.training_progress(lease, model.id, fraction).await {
                    Ok(true) => {}
                    Ok(false) => cancel.0.store(true, Ordering::Relaxed),
                    Err(e) => tracing::warn!(job.id = lease.job.id, error = %e.detail, "cannot record progress"),
                }
            }
        }
    };
    let learnt = outcome.map_err(|e| Stop::Transient(format!("training stopped unexpectedly: {e}")))??;
    let field_model = match kind {
        ProjectType::Label => learn_fields(store, lease, &payload.train_session_ids, learnt.model.labels()).await?,
        _ => None,
    };
    let language = Some(model.language.clone());
    let model_id = model.id;
    let mut trained = tokio::task::spawn_blocking(move || learnt.written(model_id, field_model, language))
        .await
        .map_err(|e| Stop::Transient(format!("writing the model stopped unexpectedly: {e}")))?;
    trained.learnt_from = read.learnt_from;
    Ok(trained)
}

/// What reading the sessions has seen so far: the segments taken (a segment is an example
/// once, on one side), and the class and label ids their tags' names were read from.
#[derive(Debug, Default)]
struct Read {
    segments: HashSet<i64>,
    learnt_from: LearntFrom,
}

/// The learning's cancel flag, raised when the training's future is dropped too (its task
/// aborted when the lease is lost or the stop's grace ends), so the blocking thread stops at its
/// next progress report instead of learning on for nobody.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// What a LABEL model learns of its fields from its sessions' annotated pages and the approved
/// reviews' corrected values; `None` when there are no pages to learn from.
async fn learn_fields(
    store: &Store,
    lease: &Lease,
    sessions: &[i64],
    labels: &[String],
) -> Result<Option<String>, Stop> {
    let mut seen = HashSet::new();
    let mut pages = Vec::new();
    let mut budget = PageBudget::TRAINING;
    for &session in sessions {
        for page in store.training_pages(lease, session, &mut budget).await? {
            if seen.insert(page.segment_id) {
                pages.push(page);
            }
        }
    }
    let reviewed = store.reviewed_pages(lease, &mut budget).await?;
    if pages.is_empty() && reviewed.is_empty() {
        return Ok(None);
    }
    let labels = labels.to_vec();
    let counted = (pages.len(), reviewed.len());
    let model = tokio::task::spawn_blocking(move || fields_from(&pages, &reviewed, &labels))
        .await
        .map_err(|e| Stop::Transient(format!("learning the fields stopped unexpectedly: {e}")))?;
    tracing::info!(
        job.id = lease.job.id,
        pages = counted.0,
        reviews = counted.1,
        fields = model.fields.len(),
        "fields learnt from pages"
    );
    Ok((!model.fields.is_empty()).then(|| model.to_json()))
}

/// Annotated pages and reviewed pages (their corrected values located on them) as one lesson.
fn fields_from(pages: &[TrainingPage], reviewed: &[ReviewedPages], labels: &[String]) -> FieldModel {
    let mut lessons: Vec<(Page, Vec<Annotation>)> = Vec::new();
    for page in pages {
        let Ok(read) = serde_json::from_str::<Page>(&page.layout) else {
            continue;
        };
        let annotations = page
            .spans
            .iter()
            .map(|(label, start, end)| Annotation {
                label: label.clone(),
                start: *start,
                end: *end,
            })
            .collect();
        lessons.push((read, annotations));
    }
    for review in reviewed {
        let (Ok(read), Some(values)) = (
            serde_json::from_str::<Vec<Page>>(&review.pages),
            review.corrected.as_object(),
        ) else {
            continue;
        };
        let mut annotated: Vec<(Page, Vec<Annotation>)> = read.into_iter().map(|p| (p, Vec::new())).collect();
        for (label, value) in values {
            let Some(value) = value.as_str() else { continue };
            for (page, annotations) in &mut annotated {
                if let Some((start, end)) = locate(page, value) {
                    annotations.push(Annotation {
                        label: label.clone(),
                        start,
                        end,
                    });
                    break;
                }
            }
        }
        lessons.extend(annotated.into_iter().filter(|(_, a)| !a.is_empty()));
    }
    FieldModel::train(
        lessons.iter().map(|(page, annotations)| (page, &annotations[..])),
        labels,
    )
}

/// What training starts from: nothing, a BASE model's sentence encoder, or a model's weights.
enum Start {
    Fresh,
    Encoder(Arc<dyn lector_ml::Embedder>),
    Model(Box<MlModel>),
}

/// Reads the base model a training names: a BASE model's encoder, or a classifier's artifact
/// (with the encoder it was trained with). An encoder this worker lacks, or cannot read, is
/// [`Stop::Elsewhere`]: the files are per node, and another worker may have good ones.
async fn start_from(store: &Store, lease: &Lease, base_models: &Arc<BaseModels>, id: i64) -> Result<Start, Stop> {
    let base = store.base_model_for_job(lease, id).await?;
    let base_models = base_models.clone();
    let loading = if base.kind == ModelType::Base {
        let name = base.name.clone();
        if !base_models.installed().iter().any(|b| b.name == name) {
            return Err(Stop::Elsewhere(missing_here(format!(
                "base model {name} is not installed on this worker"
            ))));
        }
        tokio::task::spawn_blocking(move || {
            base_models.encoder(&name).map(|e| Start::Encoder(e)).map_err(|e| {
                Stop::Elsewhere(missing_here(format!(
                    "base model {name} cannot be read on this worker ({e})"
                )))
            })
        })
    } else {
        let bytes = store.model_artifact(&base).await?;
        tokio::task::spawn_blocking(move || {
            base_models
                .load_model(&bytes)
                .map(|m| Start::Model(Box::new(m)))
                .map_err(|e| match e {
                    lector_ml::Error::MissingEncoder(_) => {
                        Stop::Elsewhere(missing_here(format!("the base model: {e}")))
                    }
                    e => Stop::Fatal(format!("the base model cannot be read: {e}")),
                })
        })
    };
    loading
        .await
        .map_err(|e| Stop::Transient(format!("reading the base model stopped unexpectedly: {e}")))?
}

/// A model learnt and evaluated, before its artifact is written: what it learns of its fields
/// next travels in the artifact too.
struct Learnt {
    model: MlModel,
    score: Option<f64>,
    metrics: serde_json::Value,
    demoset: serde_json::Value,
}

impl Learnt {
    /// What `complete_training` stores, the artifact carrying the model's language and fields.
    fn written(mut self, model_id: i64, field_model: Option<String>, language: Option<String>) -> TrainedModel {
        self.model.set_language(language);
        // Past the bound every reader of a header holds it to, the field model stays beside the
        // artifact only (a model of hundreds of fields), so the artifact still loads.
        let in_header = field_model
            .as_ref()
            .filter(|f| f.len() <= lector_ml::MAX_FIELD_MODEL_BYTES);
        if in_header.is_none() && field_model.is_some() {
            tracing::warn!(
                model.id = model_id,
                "the field model is too large for the model file; it is kept beside it"
            );
        }
        self.model.set_field_model(in_header.cloned());
        let artifact = self.model.to_bytes();
        tracing::info!(model.id = model_id, bytes = artifact.len(), "model written");
        TrainedModel {
            field_model,
            artifact,
            score: self.score,
            metrics: self.metrics,
            demoset: self.demoset,
            classes: self.model.classes().to_vec(),
            labels: self.model.labels().to_vec(),
            examples: i64::try_from(self.model.info().examples).unwrap_or(i64::MAX),
            learnt_from: LearntFrom::default(),
        }
    }
}

/// Learns on a blocking thread, reporting the fraction done through `done`.
fn learn(
    kind: ProjectType,
    train: &[Example],
    test: &[Example],
    start: &Start,
    done: &AtomicU64,
    cancel: &AtomicBool,
) -> Result<Learnt, Stop> {
    let (base, embedder) = match start {
        Start::Fresh => (None, None),
        Start::Encoder(encoder) => (None, Some(encoder.clone())),
        Start::Model(model) => (Some(model.as_ref()), None),
    };
    let options = Options {
        base,
        embedder,
        trained_at: Some(lector_core::time::Timestamp::now().to_rfc3339()),
        ..Options::default()
    };
    let mut progress = |fraction: f64| {
        done.store(fraction.to_bits(), Ordering::Relaxed);
        if cancel.load(Ordering::Relaxed) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    let learning = std::time::Instant::now();
    let mut model = MlModel::train(kind, train, &options, &mut progress).map_err(|e| match e {
        lector_ml::Error::Cancelled => Stop::Cancelled,
        lector_ml::Error::InvalidInput(reason) | lector_ml::Error::IncompatibleBase(reason) => Stop::Fatal(reason),
        e => Stop::Fatal(e.to_string()),
    })?;
    let learnt_ms = learning.elapsed().as_millis() as u64;
    let evaluating = std::time::Instant::now();
    let metrics = (!test.is_empty()).then(|| model.evaluate(test));
    let score = metrics.as_ref().map(|m| m.score);
    let metrics_json = serde_json::to_value(&metrics).unwrap_or_default();
    model.set_metrics(metrics);
    let demoset: Vec<serde_json::Value> = test
        .iter()
        .take(DEMOSET_SIZE)
        .map(|example| {
            let prediction = model.predict(&example.text);
            let tags: Vec<serde_json::Value> = prediction
                .tags
                .iter()
                .map(|t| serde_json::json!({"class": t.class, "label": t.label, "confidence": t.confidence}))
                .collect();
            let span = [0, example.text.chars().count()];
            serde_json::json!({
                "text": example.text,
                "segments": [{"text": example.text, "span": span, "tags": tags}],
            })
        })
        .collect();
    tracing::info!(
        learnt_ms,
        evaluated_ms = evaluating.elapsed().as_millis() as u64,
        "model learnt and evaluated"
    );
    Ok(Learnt {
        model,
        score,
        metrics: metrics_json,
        demoset: serde_json::Value::Array(demoset),
    })
}

/// The examples of some sessions: each annotated segment not yet `read` once (and then read),
/// with its tags as the project type reads them; in a LABEL project, a segment whose parts
/// carry labels (a page's fields) gives each part as an example of its label.
async fn examples(
    store: &Store,
    lease: &Lease,
    kind: ProjectType,
    sessions: &[i64],
    read: &mut Read,
) -> Result<Vec<Example>, Stop> {
    let mut examples = Vec::new();
    for &session in sessions {
        for segment in store.training_segments(lease, session, &mut read.learnt_from).await? {
            if !read.segments.insert(segment.segment_id) {
                continue;
            }
            // A page's fields: a LABEL model learns what each labelled part reads like.
            if kind == ProjectType::Label && !segment.labelled_parts.is_empty() {
                for (label, text) in segment.labelled_parts {
                    examples.push(Example::new(text, vec![Tag::label(label)]));
                }
                continue;
            }
            let tags = segment
                .tags
                .into_iter()
                .filter_map(|(class, label)| match kind {
                    ProjectType::Class => class.map(Tag::class),
                    ProjectType::Label => label.map(Tag::label),
                    ProjectType::Absa | ProjectType::Classlabel => Some(Tag { class, label }),
                })
                .collect();
            examples.push(Example::new(segment.text, tags));
        }
    }
    Ok(examples)
}

/// Refuses data no model of this type can learn from, saying what is missing.
fn check_examples(kind: ProjectType, examples: &[Example]) -> Result<(), Stop> {
    if examples.is_empty() {
        return Err(Stop::Fatal(
            "the labeling sessions have no annotated segments to train on".into(),
        ));
    }
    let classes: BTreeSet<&str> = examples
        .iter()
        .flat_map(|e| e.tags.iter().filter_map(|t| t.class.as_deref()))
        .collect();
    let labels: BTreeSet<&str> = examples
        .iter()
        .flat_map(|e| e.tags.iter().filter_map(|t| t.label.as_deref()))
        .collect();
    match lector_core::labeling::too_few_to_learn(kind, classes.len(), labels.len()) {
        Some(why) => Err(Stop::Fatal(why)),
        None => Ok(()),
    }
}
