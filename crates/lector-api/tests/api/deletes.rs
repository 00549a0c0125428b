//! Deleting what a job is working on, through HTTPS on both backends: a model in training (or
//! analysing, or the base of a model in training, in its project or another), a group being
//! imported or analysed and a session whose labeled file is being imported answer 409 until
//! their job ends, and can be deleted after; a project deleted while it is being cloned fails
//! its copy, a copy is not moved to another workspace while it is being filled, and a deleted
//! project's jobs end with it; a group deleted while its download is read ends the file with
//! an error. No worker runs in these apps: the test holds each job where it wants it and runs
//! it itself.

use crate::common::TestApp;
use crate::common::tickets::{labeled_tickets, queue_training};
use lector_core::config::Config;
use serde_json::json;

backend_tests!(
    adjust: no_workers;
    a_model_in_training_is_not_deleted,
    a_model_in_use_is_not_deleted,
    a_group_being_imported_is_not_deleted,
    a_session_being_imported_is_not_deleted,
    a_copy_whose_original_is_deleted_fails,
    a_group_being_imported_is_copied_failed,
    a_copy_being_filled_is_not_moved,
    a_deleted_project_ends_its_jobs,
    a_group_deleted_while_downloaded_cuts_the_file_off,
);

fn no_workers(config: &mut Config) {
    config.workers = 0;
}

/// A project "Imports" of `who` with a group of two documents queued for import (PROCESSING):
/// the project's id and the group.
async fn importing(app: &TestApp, who: &crate::common::Session) -> (i64, serde_json::Value) {
    let project = app.project(who, "Imports").await;
    let group = app
        .post(
            &format!("/projects/{project}/upload-documents"),
            &who.token,
            json!([{"text": "First."}, {"text": "Second."}]),
        )
        .await
        .expect(202);
    assert_eq!(group["status"], "PROCESSING");
    (project, group)
}

async fn a_model_in_training_is_not_deleted(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let (project, _) = labeled_tickets(&app, &ada, "Tickets").await;
    let model = queue_training(&app, &ada, project, "Triage").await;
    let id = model["id"].as_i64().unwrap();
    let paths = [format!("/models/{id}"), format!("/projects/{project}/models/{id}")];
    for path in &paths {
        let refused = app.delete(path, &ada.token).await.expect_problem(409, "conflict");
        assert!(
            refused["detail"].as_str().unwrap().contains("being trained"),
            "{refused}"
        );
    }
    // A worker starts training it (and dies: its lease has run out).
    let store = &app.state.store;
    let lease = store.claim_job("dies", -1).await.unwrap().expect("the training job");
    store.begin_training(&lease, id).await.unwrap();
    let training = app.get(&format!("/models/{id}"), &ada.token).await.expect(200);
    assert_eq!(training["models"][0]["status"], "TRAINING");
    for path in &paths {
        app.delete(path, &ada.token).await.expect_problem(409, "conflict");
    }
    assert_eq!(store.reap_expired_leases().await.unwrap(), 1);
    app.run_jobs().await;
    let ready = app.get(&format!("/models/{id}"), &ada.token).await.expect(200);
    assert_eq!(ready["models"][0]["status"], "READY", "{ready}");
    app.delete(&paths[0], &ada.token).await.expect(200);
    let notes = app.get("/notifications", &ada.token).await.expect(200);
    assert_eq!(notes.as_array().unwrap().len(), 1, "{notes}");
}

/// A model an analysis works with (QUEUED or ANALYZING), or that a model in training starts from
/// (its base), answers 409 until that job has ended: deleted, the analysis would fail, and the
/// training would lose its base and silently start afresh.
async fn a_model_in_use_is_not_deleted(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let (project, _) = labeled_tickets(&app, &ada, "Tickets").await;
    let models = format!("/projects/{project}/models");
    let model = queue_training(&app, &ada, project, "Triage").await;
    app.run_jobs().await;
    let id = model["id"].as_i64().unwrap();
    let path = format!("/models/{id}");
    let refused = async |says: String| {
        let refused = app.delete(&path, &ada.token).await.expect_problem(409, "conflict");
        let detail = refused["detail"].as_str().unwrap();
        assert!(detail.contains(&says), "{says}: {refused}");
    };

    let analysis = app
        .post(
            "/analyses",
            &ada.token,
            json!({"model_id": id, "documents": [{"text": "I cannot log in."}]}),
        )
        .await
        .expect(201);
    let analysis_id = analysis["id"].as_i64().unwrap();
    refused(format!("model {id} is analysing documents (analysis {analysis_id})")).await;
    // A worker starts the analysis (and dies: its lease has run out).
    let store = &app.state.store;
    let lease = store.claim_job("dies", -1).await.unwrap().expect("the analysis job");
    assert_eq!(store.begin_analysis(&lease, analysis_id).await.unwrap(), "ANALYZING");
    refused(format!("(analysis {analysis_id})")).await;
    assert_eq!(store.reap_expired_leases().await.unwrap(), 1);
    app.run_jobs().await;
    let done = app
        .get(&format!("/analyses/{analysis_id}"), &ada.token)
        .await
        .expect(200);
    assert_eq!(done["status"], "FINISHED", "{done}");

    let warm = app
        .post(&models, &ada.token, json!({"display_name": "Warm", "base_id": id}))
        .await
        .expect(201);
    refused(format!("model {} is being trained from model {id}", warm["id"])).await;
    // A model of another project trained from it keeps the whole project from being deleted
    // (its models would go with it, and the training would silently start afresh).
    let (elsewhere, _) = labeled_tickets(&app, &ada, "Elsewhere").await;
    let trainee = app
        .post(
            &format!("/projects/{elsewhere}/models"),
            &ada.token,
            json!({"display_name": "Borrowed", "base_id": id}),
        )
        .await
        .expect(201);
    let gone = app
        .delete(&format!("/projects/{project}"), &ada.token)
        .await
        .expect_problem(409, "conflict");
    let says = format!(
        "model {} of another project is being trained from model {id}",
        trainee["id"]
    );
    assert!(gone["detail"].as_str().unwrap().contains(&says), "{gone}");
    // An analysis of a group keeps the group until it has ended: gone, the analysis would find
    // no documents and finish as if it had analysed them all.
    let group = app.group(&ada, project, json!({"name": "Some"})).await;
    let group_path = format!("/projects/{project}/groups/{}", group["id"]);
    let listed = app
        .get(&format!("/projects/{project}/documents?limit=3"), &ada.token)
        .await
        .expect(200);
    let some: Vec<_> = listed["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].clone())
        .collect();
    app.put(&group_path, &ada.token, json!({"document_ids": some}))
        .await
        .expect(200);
    let of_group = app
        .post(
            "/analyses",
            &ada.token,
            json!({"model_id": id, "document_group_id": group["id"]}),
        )
        .await
        .expect(201);
    let kept = app
        .delete(&group_path, &ada.token)
        .await
        .expect_problem(409, "conflict");
    let says = format!("analysis {} is analysing group {}", of_group["id"], group["id"]);
    assert!(kept["detail"].as_str().unwrap().contains(&says), "{kept}");
    // Nor are its documents moved to another group meanwhile: the analysis would miss them.
    let other = app.group(&ada, project, json!({"name": "Other"})).await;
    let other_path = format!("/projects/{project}/groups/{}", other["id"]);
    let moved = json!({"document_ids": [some[0]]});
    let refused = app.put(&other_path, &ada.token, moved.clone()).await;
    let refused = refused.expect_problem(409, "conflict");
    let says = format!("document {} is in a group an analysis is reading", some[0]);
    assert!(refused["detail"].as_str().unwrap().contains(&says), "{refused}");
    app.run_jobs().await;
    app.put(&other_path, &ada.token, moved).await.expect(200);
    app.delete(&group_path, &ada.token).await.expect(200);
    let warm = app
        .get(&format!("/models/{}", warm["id"]), &ada.token)
        .await
        .expect(200);
    let warm = &warm["models"][0];
    assert_eq!(
        (&warm["status"], &warm["base_id"]),
        (&json!("READY"), &json!(id)),
        "{warm}"
    );
    let borrowed = app
        .get(&format!("/models/{}", trainee["id"]), &ada.token)
        .await
        .expect(200);
    assert_eq!(borrowed["models"][0]["base_id"], json!(id), "{borrowed}");
    app.delete(&path, &ada.token).await.expect(200);
    app.delete(&format!("/projects/{project}"), &ada.token)
        .await
        .expect(200);
}

async fn a_group_being_imported_is_not_deleted(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let (project, group) = importing(&app, &ada).await;
    let path = format!("/projects/{project}/groups/{}", group["id"]);
    let refused = app.delete(&path, &ada.token).await.expect_problem(409, "conflict");
    assert!(refused["detail"].as_str().unwrap().contains("import"), "{refused}");
    // Nor downloaded: the file would hold what the import has stored so far, as if whole.
    let download = format!("{path}/download?format=csv");
    let refused = app.get(&download, &ada.token).await.expect_problem(409, "conflict");
    assert!(refused["detail"].as_str().unwrap().contains("import"), "{refused}");
    app.run_jobs().await;
    let filled = app.get(&path, &ada.token).await.expect(200);
    assert_eq!(
        (filled["status"].as_str(), filled["document_count"].as_i64()),
        (Some("CREATED"), Some(2))
    );
    app.download(&ada.token, &download).await;
    app.delete(&path, &ada.token).await.expect(200);
    app.get(&path, &ada.token).await.expect_problem(404, "not_found");
}

async fn a_session_being_imported_is_not_deleted(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let project = app.project_with_classes(&ada, "Labeled", "CLASS", &["FOOD"]).await;
    let created = app
        .send_form(
            &format!("/projects/{project}/annotations/upload"),
            &ada.token,
            "labeled.csv",
            b"text,class\nHot soup.,FOOD\nWarm bread.,FOOD\n",
            &[],
        )
        .await
        .expect(200);
    assert_eq!(created["status"], "STARTED", "{created}");
    let path = format!("/projects/{project}/annotations/{}", created["id"]);
    let refused = app.delete(&path, &ada.token).await.expect_problem(409, "conflict");
    assert!(refused["detail"].as_str().unwrap().contains("import"), "{refused}");
    let group = format!("/projects/{project}/groups/{}", created["document_group_id"]);
    app.delete(&group, &ada.token).await.expect_problem(409, "conflict");
    app.run_jobs().await;
    let filled = app.get(&path, &ada.token).await.expect(200);
    assert_ne!(filled["status"], "STARTED", "{filled}");
    assert_eq!(filled["document_count"], 2, "{filled}");
    app.delete(&path, &ada.token).await.expect(200);
    let left = app.get(&group, &ada.token).await.expect(200);
    assert_eq!(left["status"], "CREATED", "the session's group stays, filled: {left}");
}

async fn a_copy_whose_original_is_deleted_fails(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let (original, _) = labeled_tickets(&app, &ada, "Tickets").await;
    let copy = app
        .post(&format!("/projects/{original}/clone"), &ada.token, json!({}))
        .await
        .expect(200);
    assert_eq!(copy["status"], "CLONING", "{copy}");
    let copy_id = copy["id"].as_i64().unwrap();
    app.delete(&format!("/projects/{original}"), &ada.token)
        .await
        .expect(200);
    app.run_jobs().await;
    let task = app
        .get(&format!("/projects/{copy_id}/tasks/{}", copy["task_id"]), &ada.token)
        .await
        .expect(200);
    assert_eq!(task["status"], "FAILED", "{task}");
    assert!(
        task["error"].as_str().unwrap().contains("deleted while it was copied"),
        "{task}"
    );
    let failed = app.get(&format!("/projects/{copy_id}"), &ada.token).await.expect(200);
    assert_eq!(failed["status"], "FAILED", "{failed}");
    let notes = app.get("/notifications", &ada.token).await.expect(200);
    let titles: Vec<&str> = notes
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Copy failed"]);
}

/// A group still being filled when its project is copied is copied FAILED, as a session is:
/// no job fills the copy. Before, the copy stayed PROCESSING for good, and could be neither
/// deleted nor analysed.
async fn a_group_being_imported_is_copied_failed(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let (project, group) = importing(&app, &ada).await;
    // The import waits; the clone runs first.
    lector_store::testing::put_off_queued_jobs(&app.state.store, 3600).await;
    let copy = app
        .post(&format!("/projects/{project}/clone"), &ada.token, json!({}))
        .await
        .expect(200);
    app.run_jobs().await;
    let copied = app
        .get(&format!("/projects/{}", copy["id"]), &ada.token)
        .await
        .expect(200);
    assert_eq!(copied["status"], "CREATED", "{copied}");
    let groups = format!("/projects/{}/groups", copy["id"]);
    let listed = app.get(&groups, &ada.token).await.expect(200);
    let copied_group = &listed.as_array().unwrap()[0];
    assert_eq!(copied_group["status"], "FAILED", "{listed}");
    app.delete(&format!("{groups}/{}", copied_group["id"]), &ada.token)
        .await
        .expect(200);

    lector_store::testing::age_queued_jobs(&app.state.store, 2 * 3600).await;
    app.run_jobs().await;
    let filled = app
        .get(&format!("/projects/{project}/groups/{}", group["id"]), &ada.token)
        .await
        .expect(200);
    assert_eq!(filled["status"], "CREATED", "the original is filled: {filled}");
}

async fn a_copy_being_filled_is_not_moved(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let target = app.workspace(&ada, "Ada's team").await;
    let (original, _) = labeled_tickets(&app, &ada, "Tickets").await;
    let copy = app
        .post(&format!("/projects/{original}/clone"), &ada.token, json!({}))
        .await
        .expect(200);
    let transfer = format!("/projects/{}/transfer", copy["id"]);
    let problem = app
        .post(&transfer, &ada.token, json!({"organization_id": target}))
        .await
        .expect_problem(409, "conflict");
    assert!(
        problem["detail"].as_str().unwrap().contains("being copied"),
        "{problem}"
    );
    app.run_jobs().await;
    let moved = app
        .post(&transfer, &ada.token, json!({"organization_id": target}))
        .await
        .expect(200);
    assert_eq!(
        (&moved["status"], &moved["organization_id"]),
        (&json!("CREATED"), &json!(target)),
        "{moved}"
    );
    // Nor does its type change while its classes and labels may still be coming.
    let plain = app.project(&ada, "Plain").await;
    let copy = app
        .post(&format!("/projects/{plain}/clone"), &ada.token, json!({}))
        .await
        .expect(200);
    let path = format!("/projects/{}", copy["id"]);
    let problem = app
        .put(&path, &ada.token, json!({"type": "ABSA"}))
        .await
        .expect_problem(409, "conflict");
    assert!(
        problem["detail"].as_str().unwrap().contains("being filled"),
        "{problem}"
    );
    app.run_jobs().await;
    let changed = app.put(&path, &ada.token, json!({"type": "ABSA"})).await.expect(200);
    assert_eq!(changed["type"], "ABSA", "{changed}");
}

/// A project deleted while its documents are imported takes its jobs along: none runs again
/// against rows that are gone, and nobody is told of a failure in a project nobody has.
async fn a_deleted_project_ends_its_jobs(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let (project, _) = importing(&app, &ada).await;
    let store = &app.state.store;
    // A worker has begun the import.
    let lease = store.claim_job("importer", 60).await.unwrap().expect("the import");
    app.delete(&format!("/projects/{project}"), &ada.token)
        .await
        .expect(200);
    assert!(store.unfinished_jobs().await.unwrap().is_empty());
    let ended = "SELECT state || ': ' || error FROM jobs WHERE project_id = $1";
    let states = lector_store::testing::texts(store, ended, project).await;
    assert_eq!(states, ["FAILED: its project was deleted"]);
    // Counted as failed, as every job that ends is (`/metrics`).
    let statistics = store.job_statistics().await.unwrap();
    let failed = statistics
        .jobs
        .iter()
        .find(|c| c.kind == lector_store::IMPORT_JOB && c.state == lector_store::JobState::Failed);
    assert_eq!(failed.map(|c| c.jobs), Some(1), "{statistics:?}");
    assert!(
        !store.heartbeat(&lease, 60).await.unwrap(),
        "the worker's lease is gone"
    );
    app.run_jobs().await;
    let notes = app.get("/notifications", &ada.token).await.expect(200);
    assert_eq!(notes, json!([]), "nobody is told");
}

/// A group deleted while its download is read ends the download with an error, not cleanly
/// with the rows sent so far (which a client would take for the whole group). The group holds
/// more text (64 MB) than the stream holds in flight, so the writer is still reading it when
/// the group goes.
async fn a_group_deleted_while_downloaded_cuts_the_file_off(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let project = app.project(&ada, "Long texts").await;
    let text = "word ".repeat(200_000);
    let documents: Vec<serde_json::Value> = (0..8).map(|_| json!({"text": text})).collect();
    let groups = format!("/projects/{project}/groups");
    let group = app
        .post(
            &groups,
            &ada.token,
            json!({"name": "Long", "documents": documents, "split": false}),
        )
        .await
        .expect(201);
    let path = format!("{groups}/{}", group["id"]);
    for _ in 1..8 {
        app.put(&path, &ada.token, json!({"documents": documents, "split": false}))
            .await
            .expect(200);
    }
    let response = app
        .client
        .get(app.url(&format!("{path}/download?format=jsonl")))
        .bearer_auth(&ada.token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    app.delete(&path, &ada.token).await.expect(200);
    let read = response.bytes().await;
    assert!(
        read.is_err(),
        "the file ended as if whole: {:?} bytes",
        read.map(|b| b.len())
    );
}
