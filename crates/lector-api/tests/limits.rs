//! Limits that are counted and then written hold under concurrency: the count happens in the
//! writing transaction, behind a lock on the row the limit belongs to, so twenty requests at the
//! edge of a limit cannot all see room and all pass.

mod common;

use common::TestApp;
use futures_util::future::join_all;
use serde_json::json;

backend_tests!(
    product_keys_stop_at_the_limit_under_concurrency,
    classes_stop_at_the_limit_under_concurrency
);

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
    let project = app.project_with_classes(&ada, "Edge", "CLASS", &[]).await;
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
