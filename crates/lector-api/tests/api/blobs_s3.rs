//! Uploads through HTTPS with the blob store in S3: the app's blobs point at the local S3
//! stand-in of lector-store's tests, which checks every request's SigV4 signature; a file is
//! uploaded with upload_group_file and a group is created from it.

#[path = "../../../lector-store/tests/support/s3_stand_in.rs"]
pub(crate) mod s3_stand_in;

use crate::common::{Backend, TestApp};
use lector_store::Blobs;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_go_to_s3_and_fill_a_group() {
    let (port, bucket) = s3_stand_in::stand_in().await;
    let blobs = Blobs::open_with_env(
        "s3://lector-blobs/api",
        &s3_stand_in::env(port, s3_stand_in::SECRET_KEY),
    )
    .unwrap();
    let Some(app) = TestApp::start_with_blobs(Backend::Sqlite, blobs).await else {
        return;
    };
    let ada = app.register("ada@example.org").await;
    let project = app.project(&ada, "S3").await;
    let csv = b"text,stars\nGood food.,5\nSlow service.,1\n";
    let uploaded = app.upload_file(&ada, project, "reviews.csv", csv).await.expect(200);
    let file_id = uploaded["id"].as_str().unwrap().to_owned();
    {
        let bucket = bucket.lock().unwrap();
        let stored: Vec<_> = bucket
            .objects
            .iter()
            .filter(|(_, bytes)| bytes.as_slice() == csv)
            .collect();
        assert_eq!(stored.len(), 1, "the upload is one object in the bucket");
        assert!(stored[0].0.starts_with("/lector-blobs/api/"), "{}", stored[0].0);
    }

    let body = json!({"name": "reviews", "file_id": file_id, "column_name": "text"});
    let (group, task) = app.group_from_file(&ada, project, body).await;
    assert_eq!(task["status"], "DONE", "{task}");
    assert_eq!(group["document_count"], 2, "{group}");
}
