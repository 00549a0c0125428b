//! BASE models through HTTPS on both backends: a sentence encoder installed in the server's
//! base-models directory is a PUBLISHED model of type BASE that every user lists (with
//! `type=BASE` only), reads and stars but nobody downloads, changes or analyses with; a model
//! trained with it as `base_id` is READY, analyses, and moves to a second server only where
//! the same encoder is installed. A LABEL model trained on a BASE model from a few examples
//! per label tunes a copy of the encoder on pairs of them, which travels in its file. The
//! encoder is `lector-embed`'s tiny test encoder, so the stories take seconds; the real MiniLM
//! is measured in `docs/BENCHMARKS.md`.

use crate::common::tickets::{UNSEEN, analyze, labeled_tickets, predicts_the_same_on, top_classes};
use crate::common::{Backend, Session, TestApp};
use serde_json::{Value, json};

backend_tests!(backend: base_model_story, handed_back_story, few_shot_story);

/// A server whose base-models directory (answered with it, to keep alive) holds the tiny
/// encoder as `name`, described as `display_name`.
async fn with_tiny(backend: Backend, name: &str, display_name: &str) -> Option<(tempfile::TempDir, TestApp)> {
    with_tiny_workers(
        backend,
        name,
        display_name,
        lector_core::config::Config::default().workers,
    )
    .await
}

/// [`with_tiny`] with `workers` embedded job workers.
async fn with_tiny_workers(
    backend: Backend,
    name: &str,
    display_name: &str,
    workers: usize,
) -> Option<(tempfile::TempDir, TestApp)> {
    let bases = tempfile::tempdir().unwrap();
    let dir = bases.path().join(name);
    lector_embed::testing::write_tiny(&dir).expect("the tiny encoder");
    let description = json!({"display_name": display_name, "language": "en"});
    std::fs::write(dir.join(lector_embed::DESCRIPTION_FILE), description.to_string()).expect("its description");
    let path = bases.path().to_path_buf();
    let app = TestApp::start_with(backend, move |config| {
        config.base_models_dir = Some(path);
        config.workers = workers;
    })
    .await?;
    Some((bases, app))
}

/// The BASE models `who` lists.
async fn listed_bases(app: &TestApp, who: &Session) -> Vec<Value> {
    let page = app.get("/models?type=BASE", &who.token).await.expect(200);
    page["models"].as_array().expect("a page of models").clone()
}

/// A training `body` asks of `project`, refused (422).
async fn refused_training(app: &TestApp, who: &Session, project: i64, body: Value) -> Value {
    app.post(&format!("/projects/{project}/models"), &who.token, body)
        .await
        .expect_problem(422, "validation_failed")
}

/// A change of the model at `path` to `language`, refused (422).
async fn refused_language(app: &TestApp, who: &Session, path: &str, language: &str) -> Value {
    app.put(path, &who.token, json!({"language": language}))
        .await
        .expect_problem(422, "validation_failed")
}

async fn base_model_story(backend: Backend) {
    let Some((_bases, app)) = with_tiny(backend, "tiny-encoder", "Tiny encoder").await else {
        return;
    };
    let ada = app.register("ada@example.org").await;

    // Listed with type=BASE to every user, left out of a plain listing.
    let listed = listed_bases(&app, &ada).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    let base = &listed[0];
    assert_eq!(base["type"], "BASE");
    assert_eq!(base["status"], "PUBLISHED");
    assert_eq!(base["name"], "tiny-encoder");
    assert_eq!(base["display_name"], "Tiny encoder");
    assert_eq!(base["language"], "en");
    let base_id = base["id"].as_i64().unwrap();
    let plain = app.get("/models", &ada.token).await.expect(200);
    assert!(
        plain["models"].as_array().unwrap().iter().all(|m| m["type"] != "BASE"),
        "{plain}"
    );
    app.get(&format!("/models/{base_id}"), &ada.token).await.expect(200);
    let starred = app
        .post(&format!("/models/{base_id}/star"), &ada.token, json!({}))
        .await
        .expect(200);
    assert_eq!(starred["starred"], true);

    // Nobody downloads, analyses with, changes or deletes it.
    app.get(&format!("/models/{base_id}/download"), &ada.token)
        .await
        .expect_problem(409, "conflict");
    app.post(
        "/analyze",
        &ada.token,
        json!({"model_id": base_id, "documents": [{"text": "hello"}]}),
    )
    .await
    .expect_problem(409, "conflict");
    app.delete(&format!("/models/{base_id}"), &ada.token)
        .await
        .expect_problem(403, "forbidden");
    let root = app.superuser("root@example.org").await;
    app.delete(&format!("/models/{base_id}"), &root.token)
        .await
        .expect_problem(409, "conflict");

    // Trained with it: the base is checked up front, then the model is READY and analyses.
    let (project, _) = labeled_tickets(&app, &ada, "Tickets").await;
    let refused = refused_training(
        &app,
        &ada,
        project,
        json!({"name": "German", "language": "de", "base_id": base_id}),
    )
    .await;
    assert!(refused.to_string().contains("base_id"), "{refused}");
    let model = app
        .train_model(&ada, project, json!({"name": "Tickets on tiny", "base_id": base_id}))
        .await;
    assert_eq!(model["status"], "READY", "{model}");
    assert_eq!(model["base_id"], base_id);
    assert_eq!(model["base"], "tiny-encoder");
    // It keeps its encoder's language, as its training did (a change to de was taken).
    let path = format!("/models/{}", model["id"]);
    let refused = refused_language(&app, &ada, &path, "de").await;
    assert_eq!(refused["errors"][0]["field"], "language", "{refused}");
    let message = refused["errors"][0]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("base model tiny-encoder (id {base_id})")),
        "{refused}"
    );
    let kept = app.put(&path, &ada.token, json!({"language": "en"})).await.expect(200);
    assert_eq!(kept["language"], "en");
    // A model warm-started from it keeps the same encoder, so neither its training nor a change
    // takes a language the encoder does not read, however far back the encoder is.
    let refused = refused_training(
        &app,
        &ada,
        project,
        json!({"name": "Warm German", "language": "de", "base_id": model["id"]}),
    )
    .await;
    assert_eq!(refused["errors"][0]["field"], "base_id", "{refused}");
    let message = refused["errors"][0]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("base model tiny-encoder (id {base_id})")) && message.contains("for de"),
        "{refused}"
    );
    let warm = app
        .train_model(&ada, project, json!({"name": "Warm", "base_id": model["id"]}))
        .await;
    assert_eq!(warm["status"], "READY", "{warm}");
    assert_eq!(warm["base_id"], model["id"]);
    let warm_path = format!("/models/{}", warm["id"]);
    for who in [&warm_path, &path] {
        let refused = refused_language(&app, &ada, who, "de").await;
        assert_eq!(refused["errors"][0]["field"], "language", "{refused}");
        let message = refused["errors"][0]["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("base model tiny-encoder (id {base_id})")),
            "{refused}"
        );
    }
    let refused = refused_training(
        &app,
        &ada,
        project,
        json!({"name": "Warmer German", "language": "de", "base_id": warm["id"]}),
    )
    .await;
    assert!(refused.to_string().contains("tiny-encoder"), "{refused}");
    app.put(&warm_path, &ada.token, json!({"display_name": "Warm again"}))
        .await
        .expect(200);
    // Its training recorded the encoder: a model between them deleted later (its base_id set
    // to null) does not free its language.
    let between = app
        .train_model(&ada, project, json!({"name": "Between", "base_id": model["id"]}))
        .await;
    let last = app
        .train_model(&ada, project, json!({"name": "Last", "base_id": between["id"]}))
        .await;
    assert_eq!(last["status"], "READY", "{last}");
    app.delete(&format!("/models/{}", between["id"]), &ada.token)
        .await
        .expect(200);
    let refused = refused_language(&app, &ada, &format!("/models/{}", last["id"]), "de").await;
    assert!(refused.to_string().contains("tiny-encoder"), "{refused}");
    let texts: Vec<&str> = UNSEEN.iter().map(|(t, _)| *t).collect();
    let result = analyze(&app, &ada, &model["id"], &texts).await;
    // The tiny encoder reads every word as unknown, so it adds nothing but noise: the test
    // asks only that the model tags and is never wrong (the MiniLM story asks for accuracy).
    let (mut tagged, mut wrong) = (0, Vec::new());
    for (got, (text, class)) in top_classes(&result).iter().zip(UNSEEN.iter()) {
        match got.as_deref() {
            Some(got) if got == *class => tagged += 1,
            Some(got) => wrong.push(format!("{text:?} tagged {got}")),
            None => {}
        }
    }
    assert!(
        wrong.is_empty() && tagged >= 8,
        "{tagged} tagged right; wrong: {wrong:?}"
    );
    // The encoder reads every sentence: one call takes at most 2,000 of them, counted as the
    // texts are split, before any is read (here 1,000 texts of three sentences).
    let many: Vec<Value> = (0..1000)
        .map(|i| json!({"text": format!("Parcel {i} is late. Where is it? Please help.")}))
        .collect();
    let refused = app
        .post(
            "/analyze",
            &ada.token,
            json!({"model_id": model["id"], "documents": many}),
        )
        .await
        .expect_problem(422, "validation_failed");
    assert!(
        refused.to_string().contains("sentence encoder: at most 2000 segments"),
        "{refused}"
    );

    // Its file moves to a server where the same encoder is installed, under any name.
    let (_, _, bytes) = app
        .download(&ada.token, &format!("/models/{}/download", model["id"]))
        .await;
    let bare = TestApp::start(Backend::Sqlite)
        .await
        .expect("a server without base models");
    let bob = bare.register("bob@example.org").await;
    let missing = bare
        .upload_model(&bob.token, &bytes, &[("display_name", "Tickets")])
        .await
        .expect_problem(422, "validation_failed");
    assert!(missing.to_string().contains("not installed"), "{missing}");
    let (_other_bases, other) = with_tiny(Backend::Sqlite, "same-weights", "The same encoder")
        .await
        .expect("a second server");
    predicts_the_same_on(&other, "cy@example.org", &bytes, &texts, &result).await;
    // An upload may name the BASE model it was derived from, which lives in no workspace.
    assert_eq!(model["base"], "tiny-encoder", "{model}");
    let named = app
        .upload_model(
            &ada.token,
            &bytes,
            &[("display_name", "Tickets based"), ("base", "tiny-encoder")],
        )
        .await
        .expect(200);
    assert_eq!(named["base"], "tiny-encoder", "{named}");

    // Another node starts on the same database without the files (a node just added; `lector
    // user create` publishes nothing at all): the BASE model stays PUBLISHED for everyone, and
    // a training on it through the first node, whose workers have the files, is READY.
    let (_second_dir, second) = start_without_files(&app).await;
    second.publish_base_models().await.expect("the second node starts");
    let listed = listed_bases(&app, &ada).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["status"], "PUBLISHED", "{listed:?}");
    let again = app
        .train_model(&ada, project, json!({"name": "Again", "base_id": base_id}))
        .await;
    assert_eq!(again["status"], "READY", "{again}");
    second.store.close().await;
}

/// A second node's state on `app`'s database, its base-models directory empty (answered with
/// its data directory, to keep alive).
async fn start_without_files(app: &TestApp) -> (tempfile::TempDir, lector_api::AppState) {
    let data_dir = tempfile::tempdir().unwrap();
    let mut config = (*app.state.config).clone();
    config.data_dir = data_dir.path().to_path_buf();
    config.base_models_dir = None;
    config.workers = 0;
    let state = lector_api::AppState::new(config)
        .await
        .expect("the second node's state");
    assert!(state.base_models.installed().is_empty());
    (data_dir, state)
}

/// A runner like every node's, with `base_models` as its BASE models.
fn runner_with(app: &TestApp, base_models: lector_embed::BaseModels) -> lector_jobs::Runner {
    lector_jobs::standard_runner(
        app.state.mailer.clone(),
        std::sync::Arc::new(base_models),
        app.state.sandbox.clone(),
        app.state.sources.clone(),
    )
}

/// The job `task` of the store, which must exist.
async fn job(app: &TestApp, task: &Value) -> lector_store::Job {
    let id = task.as_i64().expect("a task id");
    app.state.store.job_by_id(id).await.unwrap().expect("the job")
}

/// A worker without the encoder a training or an analysis needs hands the job back (the model
/// or analysis still QUEUED, no attempt counted, nobody notified) for a worker that has it,
/// which runs it; when no worker with it comes, the job fails once it has waited the grace,
/// saying what to install, with one notification.
async fn handed_back_story(backend: Backend) {
    // No embedded workers: the test plays the workers, one with the encoder and one without.
    let Some((_bases, app)) = with_tiny_workers(backend, "tiny-encoder", "Tiny encoder", 0).await else {
        return;
    };
    let store = &app.state.store;
    let bare = runner_with(&app, lector_embed::BaseModels::none());
    let equipped = runner_with(&app, lector_embed::BaseModels::new(app.state.config.base_models_dir()));
    let ada = app.register("ada@example.org").await;
    let base_id = listed_bases(&app, &ada).await[0]["id"].clone();
    let (project, _) = labeled_tickets(&app, &ada, "Tickets").await;
    // The import jobs of the labeled sessions, if any, run first.
    while equipped.run_one(store, "equipped").await.unwrap() {}

    let queued = app
        .post(
            &format!("/projects/{project}/models"),
            &ada.token,
            json!({"name": "Tickets on tiny", "base_id": base_id}),
        )
        .await
        .expect(201);
    let model_path = format!("/projects/{project}/models/{}", queued["id"]);
    assert!(bare.run_one(store, "bare").await.unwrap());
    let handed = job(&app, &queued["task_id"]).await;
    assert_eq!(handed.state, lector_store::JobState::Queued, "{handed:?}");
    assert_eq!(handed.attempts, 0, "a hand back is not an attempt");
    let model = app.get(&model_path, &ada.token).await.expect(200);
    assert_eq!(model["status"], "QUEUED", "{model}");
    assert_eq!(app.notified(&ada, "Model training failed").await, 0);
    lector_store::testing::end_retry_delay(store, handed.id).await;
    assert!(equipped.run_one(store, "equipped").await.unwrap());
    let model = app.get(&model_path, &ada.token).await.expect(200);
    assert_eq!(model["status"], "READY", "{model}");

    // An analysis with that model: handed back the same way, then run where the encoder is.
    let created = app
        .post(
            "/analyses",
            &ada.token,
            json!({"model_id": model["id"], "documents": [{"text": "Where is my parcel?"}]}),
        )
        .await
        .expect(201);
    let analysis_path = format!("/analyses/{}", created["id"]);
    assert!(bare.run_one(store, "bare").await.unwrap());
    let waiting = app.get(&analysis_path, &ada.token).await.expect(200);
    assert_eq!(waiting["status"], "QUEUED", "{waiting}");
    let handed = job(&app, &created["task_id"]).await;
    assert_eq!(
        (handed.state, handed.attempts),
        (lector_store::JobState::Queued, 0),
        "{handed:?}"
    );
    lector_store::testing::end_retry_delay(store, handed.id).await;
    assert!(equipped.run_one(store, "equipped").await.unwrap());
    let done = app.get(&analysis_path, &ada.token).await.expect(200);
    assert_eq!(done["status"], "FINISHED", "{done}");

    // No worker with the encoder comes: after the grace, FAILED saying what to install, once.
    let queued = app
        .post(
            &format!("/projects/{project}/models"),
            &ada.token,
            json!({"name": "Tickets waiting", "base_id": base_id}),
        )
        .await
        .expect(201);
    assert!(bare.run_one(store, "bare").await.unwrap());
    lector_store::testing::age_queued_jobs(store, lector_store::UNHANDLED_JOB_GRACE_SECS + 120).await;
    assert!(bare.run_one(store, "bare").await.unwrap());
    let failed = job(&app, &queued["task_id"]).await;
    assert_eq!(failed.state, lector_store::JobState::Failed, "{failed:?}");
    let model = app
        .get(&format!("/projects/{project}/models/{}", queued["id"]), &ada.token)
        .await
        .expect(200);
    assert_eq!(model["status"], "FAILED", "{model}");
    let failure = model["failure"].as_str().expect("a failure");
    assert!(
        failure.contains("waited 62 minutes")
            && failure.contains("base model tiny-encoder is not installed on this worker")
            && failure.contains("lector base-models install"),
        "{failure}"
    );
    assert_eq!(app.notified(&ada, "Model training failed").await, 1);
    assert!(!bare.run_one(store, "bare").await.unwrap(), "nothing is left to run");
}

/// Ten reviews per label, alternating good and bad.
fn few_reviews() -> Vec<(String, &'static str)> {
    let good = ["great", "lovely", "superb", "perfect", "wonderful"];
    let bad = ["awful", "poor", "dreadful", "lousy", "terrible"];
    (0..20)
        .map(|n| {
            let (word, label) = if n % 2 == 0 {
                (good[n / 2 % 5], "good")
            } else {
                (bad[n / 2 % 5], "bad")
            };
            (format!("The soup number {n} was {word} tonight."), label)
        })
        .collect()
}

/// A LABEL project with ten examples per label: trained on the BASE model it tunes a copy of
/// the encoder on pairs of the examples (its metrics say so; without a base they name no
/// encoder), it analyses, and its file, the tuned copy inside, predicts the same on a second
/// server where the same encoder is installed.
async fn few_shot_story(backend: Backend) {
    let Some((_bases, app)) = with_tiny(backend, "tiny-encoder", "Tiny encoder").await else {
        return;
    };
    let ada = app.register("ada@example.org").await;
    let base_id = listed_bases(&app, &ada).await[0]["id"].clone();
    let project = app.project_with(&ada, "LABEL", &[], &["good", "bad"]).await;
    let documents: Vec<Value> = few_reviews()
        .iter()
        .map(|(text, label)| json!({"text": text, "tags": [{"label": label}]}))
        .collect();
    app.labeled_session(&ada, project, "Few", documents).await;

    let tuned = app
        .train_model(&ada, project, json!({"name": "Few on tiny", "base_id": base_id}))
        .await;
    assert_eq!(tuned["status"], "READY", "{tuned}");
    assert_eq!(tuned["metrics"]["encoder"], "tuned on pairs", "{tuned}");
    let plain = app.train_model(&ada, project, json!({"name": "Few alone"})).await;
    assert_eq!(plain["status"], "READY", "{plain}");
    assert!(plain["metrics"].get("encoder").is_none(), "{plain}");

    let texts = ["The soup was great tonight.", "The soup was awful tonight."];
    let result = analyze(&app, &ada, &tuned["id"], &texts).await;
    for document in result["documents"].as_array().unwrap() {
        let tags = document["segments"][0]["tags"].as_array().unwrap();
        assert!(tags.iter().any(|t| t["label"].is_string()), "{result}");
    }
    let (_, _, bytes) = app
        .download(&ada.token, &format!("/models/{}/download", tuned["id"]))
        .await;
    let (_other_bases, other) = with_tiny(Backend::Sqlite, "same-weights", "The same encoder")
        .await
        .expect("a second server");
    predicts_the_same_on(&other, "cy@example.org", &bytes, &texts, &result).await;
}
