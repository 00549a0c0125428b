//! The MiniLM BASE model through HTTPS: the packaged encoder installed in the server's
//! base-models directory is listed as a BASE model, a CLASS model trained with it as `base_id`
//! (its sentence vectors beside the n-grams, a copy of its top layers tuned to the classes)
//! is READY and tags unseen tickets as well as the story without it asks.
//!
//! The encoder's files come from `scripts/fetch-minilm` (`.ci/run` runs it), found in
//! `.cache/minilm/model` or `LECTOR_TEST_MINILM_DIR`. Without them the test prints a notice and
//! passes on a laptop, and fails in CI (`CI` set). The database backend plays no part in what
//! this shows (the tiny-encoder story in `base_models.rs` runs on both), so it runs on SQLite.

use crate::common::tickets::{UNSEEN, analyze, labeled_tickets, top_classes};
use crate::common::{Backend, TestApp};
use serde_json::json;
use std::path::PathBuf;

fn minilm_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("LECTOR_TEST_MINILM_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.cache/minilm/model"));
    if dir.join("model.safetensors").is_file() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "the MiniLM story needs the encoder in {} (run scripts/fetch-minilm)",
        dir.display()
    );
    eprintln!("notice: {} is missing; the MiniLM story is skipped", dir.display());
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_trained_on_minilm_tags_unseen_tickets() {
    let Some(minilm) = minilm_dir() else { return };
    let bases = tempfile::tempdir().unwrap();
    // Installed as `lector base-models install` installs it, by a link to the fetched files.
    let installed = bases.path().join(lector_embed::MINILM);
    std::os::unix::fs::symlink(&minilm, &installed).expect("link the encoder");
    let dir = bases.path().to_path_buf();
    let app = TestApp::start_with(Backend::Sqlite, move |c| c.base_models_dir = Some(dir))
        .await
        .expect("the server");
    let ada = app.register("ada@example.org").await;
    let page = app.get("/models?type=BASE", &ada.token).await.expect(200);
    let base = &page["models"][0];
    assert_eq!(base["name"], lector_embed::MINILM, "{page}");
    assert_eq!(base["status"], "PUBLISHED");

    let (project, _) = labeled_tickets(&app, &ada, "Tickets").await;
    let model = app
        .train_model(
            &ada,
            project,
            json!({"name": "Tickets on MiniLM", "base_id": base["id"]}),
        )
        .await;
    assert_eq!(model["status"], "READY", "{model}");
    assert_eq!(model["base"], lector_embed::MINILM);
    let texts: Vec<&str> = UNSEEN.iter().map(|(t, _)| *t).collect();
    let result = analyze(&app, &ada, &model["id"], &texts).await;
    let right = top_classes(&result)
        .iter()
        .zip(UNSEEN.iter())
        .filter(|(got, (_, class))| got.as_deref() == Some(*class))
        .count();
    assert!(right >= 12, "{right} of 15 unseen tickets tagged right: {result}");

    // A client that gives up on a long ad-hoc analysis (2,000 sentences, a good part of a
    // minute of the encoder) ends it: the work stops at its next sentence and is counted.
    let sentences: Vec<String> = (0..100).map(|n| format!("Ticket {n} was charged twice.")).collect();
    let documents: Vec<_> = (0..20).map(|_| json!({"text": sentences.join(" ")})).collect();
    let body = json!({"model_id": model["id"], "documents": documents});
    let given_up = tokio::time::timeout(
        std::time::Duration::from_millis(1500),
        app.post("/analyze", &ada.token, body),
    )
    .await;
    assert!(given_up.is_err(), "the analysis took longer than the client waited");
    let root = app.superuser("root@example.org").await;
    let mut abandoned = None;
    for _ in 0..600 {
        let scraped = app.get("/metrics", &root.token).await;
        assert_eq!(scraped.status, 200, "{}", scraped.text);
        abandoned = scraped
            .text
            .lines()
            .find_map(|line| line.strip_prefix("lector_adhoc_analyses_abandoned_total "))
            .map(|value| value.trim().to_owned());
        if abandoned.as_deref() == Some("1") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(abandoned.as_deref(), Some("1"), "the abandoned analysis stopped");
}
