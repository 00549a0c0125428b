//! Background jobs through HTTPS on both backends: a job that fails for good leaves its trace
//! (its resource FAILED, exactly one notification saying what to do), jobs that ended long ago
//! are deleted but for the tasks of living resources, and a test that leaves a job behind fails
//! at teardown.

use crate::common::TestApp;
use serde_json::json;

backend_tests!(an_import_that_fails_for_good_marks_its_group_and_notifies_once);

mod retention {
    use crate::common::TestApp;
    use serde_json::json;

    backend_tests!(adjust: sweeping_every_second; jobs_that_ended_long_ago_are_deleted);

    fn sweeping_every_second(config: &mut lector_core::config::Config) {
        config.uploads.sweep_every_secs = 1;
    }

    const MONTH: i64 = 30 * 24 * 3600;

    async fn jobs_left(app: &TestApp) -> i64 {
        lector_store::testing::count(&app.state.store, "SELECT COUNT(*) FROM jobs WHERE id > $1", 0).await
    }

    /// Waits up to 10 s for the sweeper to leave `expected` jobs.
    async fn until_jobs_left(app: &TestApp, expected: i64) {
        for _ in 0..100 {
            if jobs_left(app).await == expected {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert_eq!(jobs_left(app).await, expected, "jobs left after the sweeps");
    }

    /// Jobs that ended more than `finished_jobs_kept_secs` ago go at a sweep (a password reset's
    /// mail here); an import its group names as its task stays, and answers, until its project goes.
    async fn jobs_that_ended_long_ago_are_deleted(app: TestApp) {
        let ada = app.register("ada@example.org").await;
        let project = app.project(&ada, "Kept").await;
        let (_, _, task) = app
            .uploaded_group(
                &ada,
                project,
                "rows.csv",
                b"text\nFirst row.\n",
                json!({"name": "rows"}),
            )
            .await;
        assert_eq!(task["status"], "DONE", "{task}");
        app.post_signed_out("/password/email", json!({"email": "ada@example.org"}))
            .await
            .expect(200);
        app.settle_jobs(std::time::Duration::from_secs(30)).await;
        let before = jobs_left(&app).await;
        assert!(before >= 2, "the import and the reset's job: {before}");

        lector_store::testing::age_finished_jobs(&app.state.store, MONTH - 600).await;
        tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
        assert_eq!(jobs_left(&app).await, before, "nothing goes before its time");

        lector_store::testing::age_finished_jobs(&app.state.store, 1200).await;
        until_jobs_left(&app, 1).await;
        let task_path = format!("/projects/{project}/tasks/{}", task["id"]);
        let kept = app.get(&task_path, &ada.token).await.expect(200);
        assert_eq!(kept["status"], "DONE", "{kept}");

        app.delete(&format!("/projects/{project}"), &ada.token)
            .await
            .expect(200);
        until_jobs_left(&app, 0).await;
    }
}

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
    let notes = app.notifications(&ada).await;
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
