//! BASE models through HTTPS on both backends: a sentence encoder installed in the server's
//! base-models directory is a PUBLISHED model of type BASE that every user lists (with
//! `type=BASE` only), reads and stars but nobody downloads, changes or analyses with; a model
//! trained with it as `base_id` is READY, analyses, and moves to a second server only where
//! the same encoder is installed. The encoder is `lector-embed`'s tiny test encoder, so the
//! story takes seconds; the real MiniLM is measured in `docs/BENCHMARKS.md`.

use crate::common::tickets::{UNSEEN, analyze, labeled_tickets, predicts_the_same_on, top_classes};
use crate::common::{Backend, Session, TestApp};
use serde_json::{Value, json};
use std::path::Path;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_base_model_story() {
    base_model_story(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_base_model_story() {
    base_model_story(Backend::Postgres).await;
}

/// A base-models directory holding the tiny encoder as `name`, described as `display_name`.
fn install_tiny(dir: &Path, name: &str, display_name: &str) {
    lector_embed::testing::write_tiny(&dir.join(name)).expect("the tiny encoder");
    let description = json!({"display_name": display_name, "language": "en"});
    std::fs::write(
        dir.join(name).join(lector_embed::DESCRIPTION_FILE),
        description.to_string(),
    )
    .expect("its description");
}

async fn with_base_models(backend: Backend, dir: &Path) -> Option<TestApp> {
    let dir = dir.to_path_buf();
    TestApp::start_with(backend, move |config| config.base_models_dir = Some(dir)).await
}

/// The BASE models `who` lists.
async fn listed_bases(app: &TestApp, who: &Session) -> Vec<Value> {
    let page = app.get("/models?type=BASE", &who.token).await.expect(200);
    page["models"].as_array().expect("a page of models").clone()
}

async fn base_model_story(backend: Backend) {
    let bases = tempfile::tempdir().unwrap();
    install_tiny(bases.path(), "tiny-encoder", "Tiny encoder");
    let Some(app) = with_base_models(backend, bases.path()).await else {
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
    let refused = app
        .post(
            &format!("/projects/{project}/models"),
            &ada.token,
            json!({"name": "German", "language": "de", "base_id": base_id}),
        )
        .await
        .expect_problem(422, "validation_failed");
    assert!(refused.to_string().contains("base_id"), "{refused}");
    let model = app
        .train_model(&ada, project, json!({"name": "Tickets on tiny", "base_id": base_id}))
        .await;
    assert_eq!(model["status"], "READY", "{model}");
    assert_eq!(model["base_id"], base_id);
    assert_eq!(model["base"], "tiny-encoder");
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

    // Its file moves to a server where the same encoder is installed, under any name.
    let (_, _, bytes) = app
        .download(&ada.token, &format!("/models/{}/download", model["id"]))
        .await;
    let bare = TestApp::start(Backend::Sqlite)
        .await
        .expect("a server without base models");
    let bob = bare.register("bob@example.org").await;
    let missing = bare
        .send_form(
            "/models/upload",
            &bob.token,
            "tickets.lector-model",
            &bytes,
            &[("display_name", "Tickets")],
        )
        .await
        .expect_problem(422, "validation_failed");
    assert!(missing.to_string().contains("not installed"), "{missing}");
    let other_bases = tempfile::tempdir().unwrap();
    install_tiny(other_bases.path(), "same-weights", "The same encoder");
    let other = with_base_models(Backend::Sqlite, other_bases.path())
        .await
        .expect("a second server");
    predicts_the_same_on(&other, "cy@example.org", &bytes, &texts, &result).await;

    // Its files gone (a restart finds none): FAILED with the reason, listed to nobody but
    // superusers, refused as a base.
    app.state.store.sync_base_models(&[]).await.unwrap();
    assert!(listed_bases(&app, &ada).await.is_empty());
    let gone = listed_bases(&app, &root).await;
    assert_eq!(gone.len(), 1);
    assert_eq!(gone[0]["status"], "FAILED");
    assert!(
        gone[0]["failure"].as_str().unwrap().contains("base-models install"),
        "{gone:?}"
    );
    let refused = app
        .post(
            &format!("/projects/{project}/models"),
            &ada.token,
            json!({"name": "Again", "base_id": base_id}),
        )
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(refused["errors"][0]["field"], "base_id", "{refused}");
}
