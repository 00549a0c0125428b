//! A training job's last writes on both backends: the artifact of a worker that lost its lease
//! never replaces the one the model reads, and a model deleted under its training is not
//! reported stored.

use crate::testing::{TestDatabase, labeled, owner_with_project};
use crate::{Backend, Blobs, ClassFields, Lease, Model, NewSession, NewTraining, Store, TrainedModel};
use lector_core::{Action, ModelStatus, ProjectType, Scope};
use std::io::Read;

/// A store with blobs in `dir` and a CLASS project with a labeled session, its model queued
/// for training.
pub(crate) async fn training_queued(
    backend: Backend,
    dir: &std::path::Path,
) -> Option<(TestDatabase, Store, Scope, Model)> {
    let database = TestDatabase::create(backend).await?;
    let blobs = Blobs::open(dir.to_str().unwrap()).expect("blobs");
    let store = Store::open(&database.url, 4).await.expect("store").with_blobs(blobs);
    let (scope, _, project) = owner_with_project(&store, "Tickets", ProjectType::Class).await;
    let classes = ["billing", "login"].map(|name| ClassFields {
        name: name.into(),
        ..Default::default()
    });
    store.add_classes(&scope, project.id, classes.to_vec()).await.unwrap();
    let labeled = (0..6)
        .map(|n| {
            labeled(
                &format!("ticket number {n}"),
                if n % 2 == 0 { "billing" } else { "login" },
            )
        })
        .collect();
    let session = NewSession {
        name: "Tickets".into(),
        labeled,
        ..Default::default()
    };
    store.create_session(&scope, project.id, session).await.unwrap();
    let (model, _) = store
        .start_training(&scope, project.id, NewTraining::default())
        .await
        .unwrap();
    Some((database, store, scope, model))
}

pub(crate) fn trained(artifact: &[u8]) -> TrainedModel {
    TrainedModel {
        field_model: None,
        artifact: artifact.to_vec(),
        score: Some(1.0),
        metrics: serde_json::json!({}),
        demoset: serde_json::json!([]),
        classes: vec!["billing".into(), "login".into()],
        labels: vec![],
        examples: 6,
        learnt_from: Default::default(),
    }
}

/// Claims the training job with a lease that has already run out, and starts training.
pub(crate) async fn claim_expired(store: &Store, owner: &str, model: &Model) -> Lease {
    let lease = store.claim_job(owner, -1).await.unwrap().expect("the training job");
    assert_eq!(
        store.begin_training(&lease, model.id).await.unwrap(),
        ModelStatus::Training
    );
    lease
}

async fn a_stale_worker_never_replaces_the_live_artifact(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let Some((_database, store, scope, model)) = training_queued(backend, dir.path()).await else {
        return;
    };
    // Worker A's lease runs out; B takes the job over and stores its model.
    let stale = claim_expired(&store, "a", &model).await;
    assert_eq!(store.reap_expired_leases().await.unwrap(), 1);
    let live = claim_expired(&store, "b", &model).await;
    store
        .complete_training(&live, &model, trained(b"from b"))
        .await
        .unwrap();
    // A wakes up and stores its own: the fence refuses its row, and its file is not B's.
    let late = store.complete_training(&stale, &model, trained(b"from a")).await;
    assert!(late.is_err(), "a stale worker cannot commit");

    let ready = store.model_access(&scope, model.id, Action::Read).await.unwrap();
    assert_eq!(ready.status, ModelStatus::Ready);
    let key = ready.artifact_key.expect("an artifact");
    let mut bytes = Vec::new();
    store
        .blobs()
        .unwrap()
        .open_file(&key)
        .await
        .unwrap()
        .read_to_end(&mut bytes)
        .unwrap();
    assert_eq!(bytes, b"from b", "the model reads the live worker's artifact");
}

#[tokio::test]
async fn a_stale_worker_never_replaces_the_live_artifact_sqlite() {
    a_stale_worker_never_replaces_the_live_artifact(Backend::Sqlite).await;
}

#[tokio::test]
async fn a_stale_worker_never_replaces_the_live_artifact_postgres() {
    a_stale_worker_never_replaces_the_live_artifact(Backend::Postgres).await;
}

async fn a_model_deleted_under_its_training_is_not_stored(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let Some((_database, store, scope, model)) = training_queued(backend, dir.path()).await else {
        return;
    };
    let lease = claim_expired(&store, "a", &model).await;
    let refused = store.delete_model(&scope, &model).await.unwrap_err();
    assert_eq!(refused.status(), 409, "{}", refused.detail);
    // Its project can still go, and the model and the training job with it: the late result
    // finds its lease gone.
    store.delete_project(&scope, model.project_id.unwrap()).await.unwrap();
    let gone = store
        .complete_training(&lease, &model, trained(b"late"))
        .await
        .unwrap_err();
    assert_eq!(gone.status(), 409, "{}", gone.detail);
    let mut left = Vec::new();
    let mut listed = store.blobs().unwrap().list("models");
    while let Some(blob) = futures_util::TryStreamExt::try_next(&mut listed).await.unwrap() {
        left.push(blob.key);
    }
    assert_eq!(left, Vec::<String>::new(), "the file nothing names is deleted again");
}

#[tokio::test]
async fn a_model_deleted_under_its_training_is_not_stored_sqlite() {
    a_model_deleted_under_its_training_is_not_stored(Backend::Sqlite).await;
}

#[tokio::test]
async fn a_model_deleted_under_its_training_is_not_stored_postgres() {
    a_model_deleted_under_its_training_is_not_stored(Backend::Postgres).await;
}

/// As [`training_queued`], the model then trained (READY, its artifact stored) and read again.
async fn model_ready(backend: Backend, dir: &std::path::Path) -> Option<(TestDatabase, Store, Scope, Model)> {
    let (database, store, scope, model) = training_queued(backend, dir).await?;
    let lease = claim_expired(&store, "a", &model).await;
    store
        .complete_training(&lease, &model, trained(b"ready"))
        .await
        .unwrap();
    let model = store.model_access(&scope, model.id, Action::Read).await.unwrap();
    Some((database, store, scope, model))
}

/// An analysis being written with a READY model (its row checked and locked, the analysis not
/// yet committed) holds back the model's deletion, which then finds the analysis and answers
/// 409: on PostgreSQL the DELETE's checks would otherwise run on a snapshot taken before the
/// analysis committed, and delete the model under it.
async fn a_model_is_not_deleted_under_an_analysis_being_written(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let Some((_database, store, scope, model)) = model_ready(backend, dir.path()).await else {
        return;
    };
    let mut writing = store.begin_write().await.unwrap();
    crate::models::model_still_there(&mut writing, model.id).await.unwrap();
    let deleting = {
        let (store, scope, model) = (store.clone(), scope.clone(), model.clone());
        tokio::spawn(async move { store.delete_model(&scope, &model).await })
    };
    // The deletion is under way (waiting for the lock) while the analysis is written.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    sqlx::query(
        "INSERT INTO analyses (uuid, project_id, model_id, user_id, name, description, status, type, created) \
         VALUES ($1, $2, $3, $4, 'A', '', 'QUEUED', 'CLASS', 0)",
    )
    .bind(uuid::Uuid::new_v4().to_string())
    .bind(model.project_id.unwrap())
    .bind(model.id)
    .bind(scope.user_id)
    .execute(&mut *writing)
    .await
    .unwrap();
    writing.commit().await.unwrap();
    let refused = deleting.await.unwrap().unwrap_err();
    assert_eq!(refused.status(), 409, "{}", refused.detail);
    store
        .model_access(&scope, model.id, Action::Read)
        .await
        .expect("the model is kept");
}

#[tokio::test]
async fn a_model_is_not_deleted_under_an_analysis_being_written_sqlite() {
    a_model_is_not_deleted_under_an_analysis_being_written(Backend::Sqlite).await;
}

#[tokio::test]
async fn a_model_is_not_deleted_under_an_analysis_being_written_postgres() {
    a_model_is_not_deleted_under_an_analysis_being_written(Backend::Postgres).await;
}

/// A READY model filling a correction session (PREDICTING) is not deleted under its job.
async fn a_model_filling_a_correction_session_is_not_deleted(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let Some((_database, store, scope, model)) = model_ready(backend, dir.path()).await else {
        return;
    };
    let plan = crate::CorrectionPlan {
        name: "Check".into(),
        description: String::new(),
        sample_size: 2,
        seed: 0,
        document_ids: None,
    };
    let session = store
        .start_correction(&scope, model.project_id.unwrap(), &model, plan)
        .await
        .unwrap();
    let refused = store.delete_model(&scope, &model).await.unwrap_err();
    assert_eq!(refused.status(), 409, "{}", refused.detail);
    assert!(
        refused.detail.contains(&format!("correction session {}", session.id)),
        "{}",
        refused.detail
    );
}

#[tokio::test]
async fn a_model_filling_a_correction_session_is_not_deleted_sqlite() {
    a_model_filling_a_correction_session_is_not_deleted(Backend::Sqlite).await;
}

#[tokio::test]
async fn a_model_filling_a_correction_session_is_not_deleted_postgres() {
    a_model_filling_a_correction_session_is_not_deleted(Backend::Postgres).await;
}

/// A training records which class each of the model's names was read from: renamed, the class
/// still takes the model's tags (a new class of the old name does not); deleted, the name is
/// matched by name again. The model keeps how many segments it learnt from.
async fn a_model_knows_its_classes_by_id(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let Some((_database, store, scope, model)) = training_queued(backend, dir.path()).await else {
        return;
    };
    let lease = claim_expired(&store, "a", &model).await;
    let mut learnt_from = crate::LearntFrom::default();
    let sessions = store
        .sessions(&scope, model.project_id.unwrap(), &Default::default())
        .await
        .unwrap();
    let segments = store
        .training_segments(&lease, sessions[0].id, &mut learnt_from)
        .await
        .unwrap();
    assert_eq!(segments.len(), 6);
    let project = model.project_id.unwrap();
    let classes = store.classes(&scope, project).await.unwrap();
    let id = |name: &str| classes.iter().find(|c| c.name == name).unwrap().id;
    assert_eq!(learnt_from.classes.id("billing"), Some(id("billing")));
    assert_eq!(learnt_from.classes.id("login"), Some(id("login")));
    let mut done = trained(b"ready");
    done.learnt_from = learnt_from;
    store.complete_training(&lease, &model, done).await.unwrap();
    let ready = store.model_access(&scope, model.id, Action::Read).await.unwrap();
    assert_eq!(ready.examples, Some(6));

    let renamed = crate::ClassChanges {
        name: Some("Payments".into()),
        ..Default::default()
    };
    store
        .update_class(&scope, project, id("billing"), renamed)
        .await
        .unwrap();
    let again = [ClassFields {
        name: "billing".into(),
        ..Default::default()
    }];
    store.add_classes(&scope, project, again.to_vec()).await.unwrap();
    store.delete_class(&scope, project, id("login")).await.unwrap();
    let login = [ClassFields {
        name: "login".into(),
        ..Default::default()
    }];
    store.add_classes(&scope, project, login.to_vec()).await.unwrap();
    let classes = store.classes(&scope, project).await.unwrap();
    let new_login = classes.iter().find(|c| c.name == "login").unwrap().id;

    let vocabulary = store.model_vocabulary_for_job(&lease, model.id).await.unwrap();
    assert_eq!(vocabulary.class("billing"), Some((id("billing"), "Payments")));
    assert_eq!(vocabulary.class("login"), Some((new_login, "login")));
    assert_eq!(vocabulary.class("shipping"), None);

    // The class the model read "billing" from, renamed to the name of the class its "login"
    // was read from (deleted): "login" is not matched to it by name.
    let renamed = |name: &str| crate::ClassChanges {
        name: Some(name.into()),
        ..Default::default()
    };
    store
        .update_class(&scope, project, new_login, renamed("Logins"))
        .await
        .unwrap();
    store
        .update_class(&scope, project, id("billing"), renamed("login"))
        .await
        .unwrap();
    let vocabulary = store.model_vocabulary_for_job(&lease, model.id).await.unwrap();
    assert_eq!(vocabulary.class("billing"), Some((id("billing"), "login")));
    assert_eq!(vocabulary.class("login"), None);
}

#[tokio::test]
async fn a_model_knows_its_classes_by_id_sqlite() {
    a_model_knows_its_classes_by_id(Backend::Sqlite).await;
}

#[tokio::test]
async fn a_model_knows_its_classes_by_id_postgres() {
    a_model_knows_its_classes_by_id(Backend::Postgres).await;
}

/// Migration 0034 matches what was stored before it by name: a model's names to the classes
/// of its project that bear them, a correction's predictions to their session's project's.
async fn what_was_stored_before_0034_is_matched_by_name(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let Some((_database, store, scope, model)) = training_queued(backend, dir.path()).await else {
        return;
    };
    let lease = claim_expired(&store, "a", &model).await;
    // Trained as before the step: nothing recorded.
    store
        .complete_training(&lease, &model, trained(b"ready"))
        .await
        .unwrap();
    let project = model.project_id.unwrap();
    let sessions = store.sessions(&scope, project, &Default::default()).await.unwrap();
    sqlx::query(
        "INSERT INTO correction_predictions (session_id, segment_id, class_name, label_name, confidence) \
         VALUES ($1, 1, 'login', NULL, 0.5), ($1, 2, 'shipping', NULL, 0.5)",
    )
    .bind(sessions[0].id)
    .execute(&store.pool)
    .await
    .unwrap();
    let step = crate::migrations::STEPS.iter().find(|s| s.version == 34).unwrap();
    let sql = match backend {
        Backend::Sqlite => step.sqlite,
        Backend::Postgres => step.postgres,
    };
    let backfill = &sql[sql
        .find("-- The models and predictions written before this step")
        .unwrap()..];
    sqlx::raw_sql(backfill).execute(&store.pool).await.unwrap();

    let classes = store.classes(&scope, project).await.unwrap();
    let id = |name: &str| classes.iter().find(|c| c.name == name).unwrap().id;
    let recorded: Vec<(String, i64)> =
        sqlx::query_as("SELECT name, class_id FROM model_classes WHERE model_id = $1 ORDER BY name")
            .bind(model.id)
            .fetch_all(&store.pool)
            .await
            .unwrap();
    let expected = vec![("billing".to_owned(), id("billing")), ("login".to_owned(), id("login"))];
    assert_eq!(recorded, expected);
    let predicted: Vec<(i64, Option<i64>)> =
        sqlx::query_as("SELECT segment_id, class_id FROM correction_predictions ORDER BY segment_id")
            .fetch_all(&store.pool)
            .await
            .unwrap();
    assert_eq!(predicted, vec![(1, Some(id("login"))), (2, None)]);
}

#[tokio::test]
async fn what_was_stored_before_0034_is_matched_by_name_sqlite() {
    what_was_stored_before_0034_is_matched_by_name(Backend::Sqlite).await;
}

#[tokio::test]
async fn what_was_stored_before_0034_is_matched_by_name_postgres() {
    what_was_stored_before_0034_is_matched_by_name(Backend::Postgres).await;
}
