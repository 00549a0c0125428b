//! Limits that are counted and then written hold under concurrency: the count happens in the
//! writing transaction, behind a lock on the row the limit belongs to, so twenty requests at the
//! edge of a limit cannot all see room and all pass.

use crate::common::TestApp;
use futures_util::future::join_all;
use serde_json::json;

backend_tests!(
    product_keys_stop_at_the_limit_under_concurrency,
    classes_stop_at_the_limit_under_concurrency,
    hitls_stop_at_the_limit_under_concurrency
);

backend_tests!(backend: one_row_limit_holds_for_every_import);

/// `uploads.max_rows` bounds a file import, `upload_documents` and `create_analysis` alike:
/// at the limit they pass, one more is refused naming the limit.
async fn one_row_limit_holds_for_every_import(backend: crate::common::Backend) {
    // Above the ten rows of a preview, so that the limit is seen past them.
    const MAX: usize = 12;
    let Some(app) = TestApp::start_with(backend, |c| c.uploads.max_rows = MAX as u64).await else {
        return;
    };
    let ada = app.register("ada@example.org").await;
    let project = app.project_with_classes(&ada, "Rows", "CLASS", &["a", "b"]).await;
    let texts = |n: usize| -> Vec<serde_json::Value> { (0..n).map(|i| json!({"text": format!("text {i}")})).collect() };
    let path = format!("/projects/{project}/upload-documents");
    app.post(&path, &ada.token, json!(texts(MAX))).await.expect(202);
    let refused = app
        .post(&path, &ada.token, json!(texts(MAX + 1)))
        .await
        .expect_problem(413, "payload_too_large");
    assert!(
        refused["detail"].as_str().unwrap().contains("uploads.max_rows"),
        "{refused}"
    );
    assert_eq!(refused["errors"][0]["field"], "documents");

    // A file of one row too many is refused as it arrives, naming the limit and the row, for a
    // group and for an analysis: nothing of it is imported.
    let csv: String = std::iter::once("text".to_owned())
        .chain((0..=MAX).map(|i| format!("row {i}")))
        .collect::<Vec<_>>()
        .join("\n");
    let refused = app
        .upload_file(&ada, project, "rows.csv", csv.as_bytes())
        .await
        .expect_problem(413, "payload_too_large");
    assert!(refused["detail"].as_str().unwrap().contains("limit of 12"), "{refused}");
    let refused = app
        .send_form("/analyses/upload", &ada.token, "rows.csv", csv.as_bytes(), &[])
        .await
        .expect_problem(413, "payload_too_large");
    assert!(refused["detail"].as_str().unwrap().contains("limit of 12"), "{refused}");

    // A file of a header and MAX rows is taken; read with its first row as data (TXT's default,
    // or `header_first: false`) it has one row too many, refused when the import is asked for
    // rather than on its last row in the job.
    let lines: String = std::iter::once("first".to_owned())
        .chain((0..MAX).map(|i| format!("row {i}")))
        .collect::<Vec<_>>()
        .join("\n");
    let txt = app
        .upload_file(&ada, project, "rows.txt", lines.as_bytes())
        .await
        .expect(200);
    let groups = format!("/projects/{project}/groups");
    let refused = app
        .post(&groups, &ada.token, json!({"name": "all lines", "file_id": txt["id"]}))
        .await
        .expect_problem(413, "payload_too_large");
    assert!(refused["detail"].as_str().unwrap().contains("13 rows"), "{refused}");
    assert_eq!(refused["errors"][0]["field"], "header_first", "{refused}");
    let csv_upload = app
        .upload_file(&ada, project, "rows.csv", lines.as_bytes())
        .await
        .expect(200);
    let as_data = json!({"name": "no header", "file_id": csv_upload["id"], "header_first": false});
    app.post(&groups, &ada.token, as_data)
        .await
        .expect_problem(413, "payload_too_large");
    let analysis = app
        .send_form("/analyses/upload", &ada.token, "rows.txt", lines.as_bytes(), &[])
        .await
        .expect(200);
    let model = small_model(&app, &ada, project).await;
    let refused = app
        .post(
            "/analyses",
            &ada.token,
            json!({"model_id": model, "name": "lines", "file_id": analysis["id"]}),
        )
        .await
        .expect_problem(413, "payload_too_large");
    assert_eq!(refused["errors"][0]["field"], "header_first", "{refused}");
    let headed = json!({"name": "headed", "file_id": txt["id"], "header_first": true});
    let (group, task) = app.group_from_file(&ada, project, headed).await;
    assert_eq!(task["status"], "DONE", "{task}");
    assert_eq!(group["document_count"], MAX, "{group}");

    // create_analysis with texts: the same limit, checked before anything else.
    let refused = app
        .post(
            "/analyses",
            &ada.token,
            json!({"model_id": 1, "name": "too many", "documents": texts(MAX + 1)}),
        )
        .await
        .expect_problem(413, "payload_too_large");
    assert_eq!(refused["errors"][0]["field"], "documents", "{refused}");
}

/// A model of a CLASS project with classes `a` and `b`, trained on six sentences of each.
async fn small_model(app: &TestApp, ada: &crate::common::Session, project: i64) -> i64 {
    let sentences = |class: &str, word: &str| -> Vec<serde_json::Value> {
        (0..6)
            .map(|i| json!({"text": format!("The {word} number {i} is here."), "tags": [{"class": class}]}))
            .collect()
    };
    let mut documents = sentences("a", "apple");
    documents.extend(sentences("b", "bicycle"));
    app.labeled_session(ada, project, "Small", documents).await;
    let model = app.train_model(ada, project, json!({"display_name": "Small"})).await;
    assert_eq!(model["status"], "READY", "{model}");
    model["id"].as_i64().unwrap()
}

/// Sends `n` requests at once and answers how many were created (201) and refused (409).
async fn created_and_refused(
    app: &TestApp,
    token: &str,
    path: &str,
    n: usize,
    body: impl Fn(usize) -> serde_json::Value,
) -> (usize, usize) {
    let answers = join_all((0..n).map(|i| app.post(path, token, body(i)))).await;
    let created = answers.iter().filter(|a| a.status == 201).count();
    let refused = answers.iter().filter(|a| a.status == 409).count();
    assert_eq!(created + refused, n, "every answer is 201 or 409");
    (created, refused)
}

async fn product_keys_stop_at_the_limit_under_concurrency(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let keys = format!("/users/{}/keys", ada.user_id);
    let limit = lector_store::MAX_PRODUCT_KEYS as usize;
    for i in 0..limit - 5 {
        app.post(&keys, &ada.token, json!({"name": format!("key {i}")}))
            .await
            .expect(201);
    }
    let (created, refused) =
        created_and_refused(&app, &ada.token, &keys, 20, |i| json!({"name": format!("racer {i}")})).await;
    assert_eq!((created, refused), (5, 15));
    let listed = app.get(&keys, &ada.token).await.expect(200);
    assert_eq!(listed.as_array().unwrap().len(), limit);
}

async fn classes_stop_at_the_limit_under_concurrency(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let project = app.project(&ada, "Edge").await;
    let limit = lector_store::MAX_CLASSES_PER_PROJECT as usize;
    let first: Vec<_> = (0..limit - 10).map(|i| json!({"name": format!("class {i}")})).collect();
    app.post(&format!("/projects/{project}/upload-classes"), &ada.token, json!(first))
        .await
        .expect(201);
    let path = format!("/projects/{project}/classes");
    let (created, refused) =
        created_and_refused(&app, &ada.token, &path, 20, |i| json!({"name": format!("racer {i}")})).await;
    assert_eq!((created, refused), (10, 10));
    let listed = app.get(&path, &ada.token).await.expect(200);
    assert_eq!(listed.as_array().unwrap().len(), limit);
}

async fn hitls_stop_at_the_limit_under_concurrency(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let project = app.project(&ada, "Edge").await;
    let path = format!("/projects/{project}/hitls");
    let limit = lector_store::MAX_HITLS_PER_PROJECT as usize;
    for i in 0..limit - 10 {
        app.post(&path, &ada.token, json!({"name": format!("hitl {i}")}))
            .await
            .expect(201);
    }
    let (created, refused) =
        created_and_refused(&app, &ada.token, &path, 20, |i| json!({"name": format!("racer {i}")})).await;
    assert_eq!((created, refused), (10, 10));
    let listed = app.get(&path, &ada.token).await.expect(200);
    assert_eq!(listed.as_array().unwrap().len(), limit);
}
