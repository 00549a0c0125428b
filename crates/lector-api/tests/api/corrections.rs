//! Correction sessions through HTTPS on both backends: a model's least sure documents come
//! first with its tags and their confidence; annotators change, add, delete and confirm tags
//! and mark segments corrected (with the model's predicted score); a second model trains on
//! the labeling and the correction session; roles, tenancy and bad requests.

use crate::common::{Session, TestApp, ids};
use serde_json::{Value, json};

backend_tests!(
    correction_story,
    corrections_are_checked_and_kept_apart,
    a_class_renamed_after_training_keeps_the_models_tags
);

const TOPICS: [(&str, [&str; 4]); 3] = [
    (
        "billing",
        [
            "invoice is wrong",
            "was charged twice",
            "refund the payment",
            "bill is too high",
        ],
    ),
    (
        "login",
        [
            "cannot log in",
            "password reset fails",
            "account is locked",
            "forgot my password",
        ],
    ),
    (
        "shipping",
        [
            "package has not arrived",
            "delivery is late",
            "parcel arrived damaged",
            "courier lost the parcel",
        ],
    ),
];

/// A CLASS project with a labeling session and a READY model; answers (project, session, model).
async fn trained(app: &TestApp, owner: &Session) -> (i64, i64, Value) {
    let project = app
        .project_with_classes(owner, "Tickets", "CLASS", &["billing", "login", "shipping"])
        .await;
    let mut documents = Vec::new();
    for (class, phrases) in TOPICS {
        for phrase in phrases {
            for opener in ["Hello, my", "Sadly my", "Why is it that my"] {
                documents.push(json!({"text": format!("{opener} {phrase}."), "tags": [{"class": class}]}));
            }
        }
    }
    let session = app.labeled_session(owner, project, "Tickets", documents).await;
    let model = app
        .train_model(owner, project, json!({"display_name": "Tickets v1"}))
        .await;
    assert_eq!(model["status"], "READY", "{model}");
    for text in [
        "My invoice and my parcel are both wrong.",
        "The refund for my invoice is late.",
        "I cannot log in to track my parcel.",
        "Hello, my package has not arrived.",
        "Sadly my password reset fails.",
        "Why is the weather so grey today?",
    ] {
        app.document(owner, project, json!({"text": text})).await;
    }
    (project, session["id"].as_i64().unwrap(), model)
}

/// The least confidence of each listed document's tags, in listing order.
fn least_confidences(page: &Value) -> Vec<f64> {
    page["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            d["segments"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|s| s["tags"].as_array().unwrap())
                .map(|t| t["confidence"].as_f64().unwrap())
                .fold(1.0, f64::min)
        })
        .collect()
}

/// A correction session as a clone must keep it: its model and predicted score, its documents
/// in their order, each tag with its confidence and status (CORRECTING ones must not look like
/// confirmed ones), and its documents' texts.
async fn correction_view(app: &TestApp, who: &Session, project: i64, session: &Value) -> Value {
    let path = format!("/projects/{project}/corrections/{}", session["id"]);
    let page = app
        .get(&format!("{path}/documents?details=tags"), &who.token)
        .await
        .expect(200);
    let documents: Vec<Value> = page["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let tags: Vec<Value> = d["segments"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|s| s["tags"].as_array().unwrap())
                .map(|t| json!([t["class"], t["status"], t["confidence"]]))
                .collect();
            json!({"text": d["text"], "tags": tags})
        })
        .collect();
    json!({
        "name": session["name"], "model": session["model_id"], "status": session["status"],
        "predicted_score": session["predicted_score"], "documents": documents,
    })
}

/// Clones `project` in its workspace and compares every correction session with its copy.
async fn cloned_corrections_stay_corrections(app: &TestApp, ada: &Session, project: i64) {
    let copy = app
        .post(&format!("/projects/{project}/clone"), &ada.token, json!({}))
        .await
        .expect(200);
    let copy_id = copy["id"].as_i64().unwrap();
    let task = app
        .wait_for_task(&ada.token, copy_id, copy["task_id"].as_i64().unwrap())
        .await;
    assert_eq!(task["status"], "DONE", "{task}");
    let mut views = Vec::new();
    for at in [project, copy_id] {
        let sessions = app
            .get(&format!("/projects/{at}/corrections"), &ada.token)
            .await
            .expect(200);
        let mut sessions: Vec<Value> = sessions.as_array().unwrap().clone();
        sessions.sort_by_key(|s| s["created"].as_str().unwrap().to_owned());
        let mut view = Vec::new();
        for session in &sessions {
            view.push(correction_view(app, ada, at, session).await);
        }
        views.push(view);
    }
    assert_eq!(views[0].len(), 2);
    assert!(
        views[0][1]["documents"].to_string().contains("CORRECTING"),
        "{:?}",
        views[0]
    );
    assert_eq!(views[1], views[0]);
}

async fn correction_story(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let (project, labeling, model) = trained(&app, &ada).await;
    let corrections = format!("/projects/{project}/corrections");
    let created = app
        .correction(
            &ada.token,
            project,
            json!({"model_id": model["id"], "sample_size": 4, "seed": 3, "name": "Check v1"}),
        )
        .await;
    assert_eq!(created["status"], "CREATED", "{created}");
    assert_eq!(created["mode"], "CORRECTION");
    assert_eq!(created["document_count"], 4);
    assert_eq!(created["model"]["display_name"], "Tickets v1");
    assert_eq!(created["predicted_score"], model["score"], "no corrections yet");
    let id = created["id"].as_i64().unwrap();
    let again = app
        .correction(
            &ada.token,
            project,
            json!({"model_id": model["id"], "sample_size": 4, "seed": 3}),
        )
        .await;
    assert_eq!(again["name"], "Corrections of Tickets v1", "the default name");

    // The least sure first, each tag with its confidence, CORRECTING.
    let page = app
        .get(&format!("{corrections}/{id}/documents?details=tags"), &ada.token)
        .await
        .expect(200);
    let same_seed = app
        .get(
            &format!("{corrections}/{}/documents?details=tags", again["id"]),
            &ada.token,
        )
        .await
        .expect(200);
    assert_eq!(
        ids(&page["documents"]),
        ids(&same_seed["documents"]),
        "the same seed picks the same documents in the same order"
    );
    let least = least_confidences(&page);
    assert!(
        least.windows(2).all(|w| w[0] <= w[1] + 1e-9),
        "least sure first: {least:?}"
    );
    let first = &page["documents"][0];
    let segment = &first["segments"][0];
    let tags = segment["tags"].as_array().unwrap();
    assert!(!tags.is_empty(), "{segment}");
    assert!(
        tags.iter()
            .all(|t| t["status"] == "CORRECTING" && t["confidence"].is_f64()),
        "{segment}"
    );
    let tags_path = format!(
        "{corrections}/{id}/documents/{}/segments/{}/tags",
        first["id"], segment["id"]
    );

    // Two fixes: the first tag changed to another class, a missing class added; a third tag
    // confirmed and one removed where there are more.
    let tag = tags[0]["id"].as_i64().unwrap();
    let other = if tags[0]["class"] == "billing" {
        "login"
    } else {
        "billing"
    };
    // Each tag change answers as the original's CreateCorrectionTagResponse: the tag, whether
    // its segment is marked corrected, the predicted score and the progress.
    let changed = app
        .put(&format!("{tags_path}/{tag}"), &ada.token, json!({"class": other}))
        .await
        .expect(200);
    assert_eq!(changed["tag"]["class"], other);
    assert_eq!(changed["tag"]["id"], tag);
    // Now the annotator's tag, as one added: the model's confidence and status are not kept.
    assert!(changed["tag"]["confidence"].is_null(), "{changed}");
    assert!(changed["tag"]["status"].is_null(), "{changed}");
    assert_eq!(changed["segment"]["id"], segment["id"]);
    assert!(changed["segment"]["annotated"].is_null(), "not marked yet: {changed}");
    assert_eq!(changed["predicted_score"], model["score"], "nothing corrected yet");
    assert_eq!(changed["progress"], 0.0);
    let missing = ["billing", "login", "shipping"]
        .into_iter()
        .find(|c| *c != other && tags.iter().all(|t| t["class"] != *c))
        .unwrap();
    let added = app
        .post(&tags_path, &ada.token, json!({"class": missing}))
        .await
        .expect(201);
    assert_eq!(added["tag"]["class"], missing);
    assert!(added["segment"]["annotated"].is_null(), "{added}");
    assert_eq!(added["progress"], 0.0);
    let added = added["tag"].clone();
    let confirmed = app
        .post(
            &format!("{tags_path}/{}/statuses", added["id"]),
            &ada.token,
            json!({"status": "READY"}),
        )
        .await
        .expect(200);
    assert_eq!(confirmed["tag"]["status"], "READY");
    assert!(confirmed["segment"]["annotated"].is_null(), "{confirmed}");
    assert_eq!(confirmed["predicted_score"], model["score"]);
    app.post(
        &format!("{tags_path}/{tag}/statuses"),
        &ada.token,
        json!({"status": "DONE"}),
    )
    .await
    .expect_problem(422, "validation_failed");
    // Removing answers as the original's AnnotateCorrectionResponse: the segment's status
    // record (no mark yet), the predicted score and the progress; and the tag removed.
    let removed = app
        .delete(&format!("{tags_path}/{}", added["id"]), &ada.token)
        .await
        .expect(200);
    assert_eq!(removed["tag"]["id"], added["id"]);
    assert_eq!(removed["segment"]["segment_id"], segment["id"]);
    assert_eq!(removed["segment"]["document_id"], first["id"]);
    assert_eq!(removed["segment"]["annotation_id"], id);
    assert!(removed["segment"]["name"].is_null(), "{removed}");
    assert!(removed["segment"]["created"].is_null(), "{removed}");
    assert_eq!(removed["predicted_score"], model["score"]);
    assert_eq!(removed["progress"], 0.0);
    let readded = app
        .post(&tags_path, &ada.token, json!({"class": missing}))
        .await
        .expect(201);

    // Marking corrected: the mark, the predicted score and the progress.
    let at = format!(
        "{corrections}/{id}/documents/{}/segments/{}",
        first["id"], segment["id"]
    );
    let marked = app.mark_annotated(&ada, &at).await.expect(200);
    assert_eq!(marked["segment"]["name"], "ANNOTATED");
    assert_eq!(marked["segment"]["segment_id"], segment["id"]);
    let score = marked["predicted_score"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&score), "{marked}");
    assert_ne!(
        Some(score),
        model["score"].as_f64(),
        "a disagreeing correction moves the estimate"
    );
    assert!(marked["progress"].as_f64().unwrap() > 0.0);
    // Tag changes on a corrected segment show its mark, and the estimate they move.
    let confirmed = app
        .post(
            &format!("{tags_path}/{}/statuses", readded["tag"]["id"]),
            &ada.token,
            json!({"status": "READY"}),
        )
        .await
        .expect(200);
    assert_eq!(confirmed["segment"]["annotated"], marked["segment"]["created"]);
    assert_eq!(confirmed["predicted_score"], marked["predicted_score"]);
    assert_eq!(confirmed["progress"], marked["progress"]);
    let removed = app
        .delete(&format!("{tags_path}/{}", readded["tag"]["id"]), &ada.token)
        .await
        .expect(200);
    assert_eq!(removed["segment"]["name"], "ANNOTATED");
    assert_eq!(removed["segment"]["created"], marked["segment"]["created"]);
    assert_eq!(removed["progress"], marked["progress"]);
    let readded = app
        .post(&tags_path, &ada.token, json!({"class": missing}))
        .await
        .expect(201);
    assert_eq!(readded["segment"]["annotated"], marked["segment"]["created"]);
    assert_eq!(
        readded["predicted_score"], marked["predicted_score"],
        "the same tags again"
    );
    // Every other segment of the session corrected as the model said.
    for document in page["documents"].as_array().unwrap() {
        for s in document["segments"].as_array().unwrap() {
            let at = format!("{corrections}/{id}/documents/{}/segments/{}", document["id"], s["id"]);
            app.mark_annotated(&ada, &at).await.expect(200);
        }
    }
    let finished = app.get(&format!("{corrections}/{id}"), &ada.token).await.expect(200);
    assert_eq!(finished["status"], "FINISHED", "{finished}");
    assert_eq!(finished["progress"], 1.0);
    let listed = app
        .get(&format!("{corrections}?status=FINISHED"), &ada.token)
        .await
        .expect(200);
    assert_eq!(listed.as_array().unwrap().len(), 1);
    // A status that is none answers as the labeling sessions' list does: a bad parameter.
    app.get(&format!("{corrections}?status=DONE"), &ada.token)
        .await
        .expect_problem(400, "invalid_parameter");
    assert_eq!(
        app.get(&corrections, &ada.token)
            .await
            .expect(200)
            .as_array()
            .unwrap()
            .len(),
        2
    );

    cloned_corrections_stay_corrections(&app, &ada, project).await;

    // A second model learns from the labeling and the correction session.
    let second = app
        .post(
            &format!("/projects/{project}/models"),
            &ada.token,
            json!({"display_name": "Tickets v2", "annotation_ids": [labeling, id]}),
        )
        .await
        .expect(201);
    let task = app
        .wait_for_task(&ada.token, project, second["task_id"].as_i64().unwrap())
        .await;
    assert_eq!(task["status"], "DONE", "{task}");
    let second = app
        .get(&format!("/projects/{project}/models/{}", second["id"]), &ada.token)
        .await
        .expect(200);
    assert_eq!(second["status"], "READY", "{second}");

    // Deleting a correction session leaves its documents.
    app.delete(&format!("{corrections}/{}", again["id"]), &ada.token)
        .await
        .expect(200);
    app.get(&format!("{corrections}/{}", again["id"]), &ada.token)
        .await
        .expect(404);
}

async fn corrections_are_checked_and_kept_apart(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let (project, labeling, model) = trained(&app, &ada).await;
    let corrections = format!("/projects/{project}/corrections");
    app.post(&corrections, &ada.token, json!({"sample_size": 4}))
        .await
        .expect_problem(422, "validation_failed");
    app.post(
        &corrections,
        &ada.token,
        json!({"model_id": model["id"], "sample_size": 0}),
    )
    .await
    .expect_problem(422, "validation_failed");
    app.post(&corrections, &ada.token, json!({"model_id": 999_999}))
        .await
        .expect(404);
    app.post(
        &corrections,
        &ada.token,
        json!({"model_id": model["id"], "document_ids": [999_999]}),
    )
    .await
    .expect_problem(422, "validation_failed");
    app.post(
        &corrections,
        &ada.token,
        json!({"model_id": model["id"], "document_ids": [1, 1]}),
    )
    .await
    .expect_problem(422, "validation_failed");
    // A sample's size goes with a sample, not with named documents (it was ignored).
    let refused = app
        .post(
            &corrections,
            &ada.token,
            json!({"model_id": model["id"], "document_ids": [1], "sample_size": 5}),
        )
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(refused["errors"][0]["field"], "sample_size", "{refused}");
    // Documents named keep their order.
    let documents = app
        .get(&format!("/projects/{project}/documents?limit=1000"), &ada.token)
        .await
        .expect(200);
    let all: Vec<i64> = documents["documents"]
        .as_array()
        .or(documents.as_array())
        .unwrap()
        .iter()
        .map(|d| d["id"].as_i64().unwrap())
        .collect();
    let named = vec![all[all.len() - 1], all[0]];
    let created = app
        .correction(
            &ada.token,
            project,
            json!({"model_id": model["id"], "document_ids": named}),
        )
        .await;
    let page = app
        .get(&format!("{corrections}/{}/documents", created["id"]), &ada.token)
        .await
        .expect(200);
    let order = ids(&page["documents"]);
    assert_eq!(order, named);
    // A document added to the session later comes after the ones the job chose.
    app.put(
        &format!("/projects/{project}/annotations/{}", created["id"]),
        &ada.token,
        json!({"document_ids": [all[1]]}),
    )
    .await
    .expect(200);
    let page = app
        .get(&format!("{corrections}/{}/documents", created["id"]), &ada.token)
        .await
        .expect(200);
    assert_eq!(ids(&page["documents"]), vec![named[0], named[1], all[1]]);
    // Deleted while the model tags its documents: its job ends, and nobody is told of a failure.
    let predicting = app
        .post(
            &corrections,
            &ada.token,
            json!({"model_id": model["id"], "sample_size": 2}),
        )
        .await
        .expect(201);
    assert_eq!(predicting["status"], "PREDICTING", "{predicting}");
    app.delete(&format!("{corrections}/{}", predicting["id"]), &ada.token)
        .await
        .expect(200);
    let left = app.settle_jobs(std::time::Duration::from_secs(30)).await;
    assert!(left.is_empty(), "{left:?}");
    let notes = app.get("/notifications", &ada.token).await.expect(200);
    assert!(!notes.to_string().contains("Correction session failed"), "{notes}");
    // A labeling session is no correction session, and the other way round is fine to read.
    app.get(&format!("{corrections}/{labeling}"), &ada.token)
        .await
        .expect(404);
    // Another workspace sees nothing.
    let eve = app.register("eve@example.org").await;
    app.get(&format!("{corrections}/{}", created["id"]), &eve.token)
        .await
        .expect(404);
    app.get(&corrections, &eve.token).await.expect(404);
    app.post(&corrections, &eve.token, json!({"model_id": model["id"]}))
        .await
        .expect(404);
}

/// A class renamed after the training keeps the model's tags, under its new name: in a batch
/// analysis (found by the class's id) and in a correction session, where a segment marked as
/// the model tagged it agrees with the model. A new class of the old name takes none of them.
async fn a_class_renamed_after_training_keeps_the_models_tags(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let (project, _, model) = trained(&app, &ada).await;
    let billing = app.class_id(&ada.token, project, "billing").await;
    app.put(
        &format!("/projects/{project}/classes/{billing}"),
        &ada.token,
        json!({"name": "Payments"}),
    )
    .await
    .expect(200);
    let newcomer = app
        .post(
            &format!("/projects/{project}/classes"),
            &ada.token,
            json!({"name": "billing"}),
        )
        .await
        .expect(201)["id"]
        .clone();

    let texts = json!([{"text": "Sadly my invoice is wrong."}, {"text": "Hello, my refund the payment."}]);
    let created = app
        .post(
            "/analyses",
            &ada.token,
            json!({"model_id": model["id"], "documents": texts}),
        )
        .await
        .expect(201);
    let task = app
        .wait_for_task(&ada.token, project, created["task_id"].as_i64().unwrap())
        .await;
    assert_eq!(task["status"], "DONE", "{task}");
    let analysis = created["id"].as_i64().unwrap();
    let found = |class: &Value| format!("/analyses/{analysis}/documents?classes={class}&details=tags");
    let page = app.get(&found(&billing), &ada.token).await.expect(200);
    assert_eq!(page["count"], 2, "both found by the renamed class: {page}");
    let named: Vec<&Value> = page["documents"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|d| d["segments"].as_array().unwrap())
        .flat_map(|s| s["tags"].as_array().unwrap())
        .map(|t| &t["class"])
        .collect();
    assert!(named.contains(&&json!("Payments")), "{page}");
    assert!(!named.contains(&&json!("billing")), "{page}");
    let page = app.get(&found(&newcomer), &ada.token).await.expect(200);
    assert_eq!(page["count"], 0, "{page}");

    let document = app
        .get(
            &format!("/projects/{project}/documents?search=refund%20for%20my%20invoice"),
            &ada.token,
        )
        .await
        .expect(200)["documents"][0]["id"]
        .clone();
    let session = app
        .correction(
            &ada.token,
            project,
            json!({"model_id": model["id"], "document_ids": [document], "name": "After the rename"}),
        )
        .await;
    let corrections = format!("/projects/{project}/corrections/{}", session["id"]);
    let page = app
        .get(&format!("{corrections}/documents?details=tags"), &ada.token)
        .await
        .expect(200);
    let segment = &page["documents"][0]["segments"][0];
    let tags = segment["tags"].as_array().unwrap();
    assert!(tags.iter().any(|t| t["class"] == "Payments"), "{segment}");
    assert!(tags.iter().all(|t| t["class"] != "billing"), "{segment}");
    // Renamed again once the session holds the model's tags: they still agree with it.
    app.put(
        &format!("/projects/{project}/classes/{billing}"),
        &ada.token,
        json!({"name": "Invoices"}),
    )
    .await
    .expect(200);
    let at = format!("{corrections}/documents/{document}/segments/{}", segment["id"]);
    let agreeing = app.mark_annotated(&ada, &at).await.expect(200)["predicted_score"]
        .as_f64()
        .unwrap();
    assert!(agreeing >= model["score"].as_f64().unwrap(), "{agreeing} {model}");
    let payments = tags.iter().find(|t| t["class"] == "Payments").unwrap();
    let disagreeing = app
        .delete(&format!("{at}/tags/{}", payments["id"]), &ada.token)
        .await
        .expect(200)["predicted_score"]
        .as_f64()
        .unwrap();
    assert!(
        disagreeing < agreeing,
        "the segment as the model tagged it agrees ({agreeing}), without its tag it does not ({disagreeing})"
    );
}
