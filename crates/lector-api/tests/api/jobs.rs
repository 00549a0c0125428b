//! Background jobs through HTTPS on both backends: a job that fails for good leaves its trace
//! (its resource FAILED, exactly one notification saying what to do), and a test that leaves
//! a job behind fails at teardown.

use crate::common::TestApp;
use serde_json::json;

backend_tests!(an_import_that_fails_for_good_marks_its_group_and_notifies_once);

async fn an_import_that_fails_for_good_marks_its_group_and_notifies_once(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let id = app.project(&ada, "Imports").await;
    let uploaded = app
        .upload_file(&ada, id, "rows.csv", b"text\nFirst row.\nSecond row.\n")
        .await
        .expect(200);
    // The file's bytes vanish from the blob store (a disk lost, an operator's mistake).
    let uploads = app.data_dir.path().join("blobs").join("uploads");
    let blobs: Vec<_> = std::fs::read_dir(&uploads)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(blobs.len(), 1, "{blobs:?}");
    std::fs::remove_file(&blobs[0]).unwrap();

    let (group, task) = app
        .group_from_file(&ada, id, json!({"name": "rows", "file_id": uploaded["id"]}))
        .await;
    assert_eq!(task["status"], "FAILED", "{task}");
    let reason = format!(
        "The import into group {} failed after 1 attempt: the uploaded file is gone; upload the file again.",
        group["id"]
    );
    assert_eq!(task["error"], reason.as_str());
    assert_eq!(group["status"], "FAILED", "{group}");
    let notes = app.get("/notifications", &ada.token).await.expect(200);
    let notes = notes.as_array().unwrap();
    assert_eq!(notes.len(), 1, "exactly one notification: {notes:?}");
    assert_eq!(notes[0]["type"], "WARNING");
    assert_eq!(notes[0]["title"], "Import failed");
    assert_eq!(notes[0]["text"], reason.as_str());
}

/// The teardown's check itself: a test that walks away from a running import fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[should_panic(expected = "the test left jobs queued or running")]
async fn a_test_that_leaves_a_job_behind_fails() {
    let Some(mut app) = TestApp::start(crate::common::Backend::Sqlite).await else {
        return;
    };
    app.jobs_settle = std::time::Duration::ZERO;
    let ada = app.register("ada@example.org").await;
    let id = app.project(&ada, "Left").await;
    let documents: Vec<_> = (0..5000).map(|n| json!({"text": format!("Row {n}.")})).collect();
    app.post(
        &format!("/projects/{id}/upload-documents"),
        &ada.token,
        json!(documents),
    )
    .await
    .expect(202);
}
