//! Models through HTTPS on both backends: a CLASS story (label, train, poll, analyse, download,
//! upload again here and on a second server, same predictions), LABEL and CLASSLABEL stories,
//! a LABEL model that chooses the typed shape where only the typing tells its labels apart,
//! training refusals and failures, and every model operation with its role limits, tenancy and
//! immutable fields.

use crate::common::tickets::{BILLING, UNSEEN, analyze, labeled, labeled_tickets, predicts_the_same_on, top_classes};
use crate::common::words::{BAD, GOOD};
use crate::common::{Session, TestApp};
use serde_json::{Value, json};

backend_tests!(
    class_model_story,
    label_model_story,
    classlabel_model_story,
    a_label_model_learns_how_its_texts_were_typed,
    training_is_checked_up_front_and_fails_readably,
    a_model_is_tested_only_on_what_it_did_not_learn,
    models_follow_roles_and_tenancy,
    a_project_shows_its_models_and_takes_their_files_when_deleted,
    a_damaged_model_file_is_not_vouched_for,
    a_read_only_workspace_analyses_what_it_does_not_store
);

/// The name of the caller's default workspace, as a path segment.
async fn default_workspace(app: &TestApp, who: &Session) -> String {
    let status = app.get("/auth/status", &who.token).await.expect(200);
    let default = status["workspaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["is_default"] == true)
        .expect("a default workspace");
    default["name"].as_str().unwrap().replace(' ', "%20")
}

/// A body with one field.
fn with(field: &str, value: Value) -> Value {
    let mut body = serde_json::Map::new();
    body.insert(field.to_owned(), value);
    Value::Object(body)
}

async fn class_model_story(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let (project, _) = labeled_tickets(&app, &ada, "Tickets").await;
    let model = app
        .train_model(&ada, project, json!({"display_name": "Tickets v1", "language": "en"}))
        .await;
    assert_eq!(model["status"], "READY", "{model}");
    assert_eq!(model["progress"], 1.0);
    assert_eq!(model["type"], "CLASS");
    assert_eq!(model["name"], "Tickets v1");
    assert_eq!(model["classes"], json!(["billing", "login", "shipping"]));
    let score = model["score"].as_f64().expect("a score");
    assert!(score > 0.5, "macro F1 on the test side: {score}");
    assert_eq!(model["metrics"]["score"].as_f64(), Some(score));
    assert!(!model["demoset"].as_array().unwrap().is_empty());
    assert!(model["demoset"][0]["segments"][0]["tags"].is_array());
    let notes = app.get("/notifications", &ada.token).await.expect(200);
    let ready: Vec<&Value> = notes
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["title"] == "Model ready")
        .collect();
    assert_eq!(ready.len(), 1, "one notification: {notes}");

    // Unseen sentences are tagged right.
    let texts: Vec<&str> = UNSEEN.iter().map(|(t, _)| *t).collect();
    let result = analyze(&app, &ada, &model["id"], &texts).await;
    assert_eq!(result["model"], "Tickets v1");
    // The texts create_analysis would refuse are refused here too.
    for text in ["  ".to_owned(), "x".repeat(1_000_001)] {
        let body = json!({"model_id": model["id"], "documents": [{"text": "Fine."}, {"text": text}]});
        let problem = app
            .post("/analyze", &ada.token, body)
            .await
            .expect_problem(422, "validation_failed");
        assert_eq!(problem["errors"][0]["field"], "documents[1].text", "{problem}");
    }
    // A long text beyond ASCII, each character escaped as Python's json= writes it (2.4 MB of
    // body for 400,000 characters), is taken as a document of its length is.
    let escaped = format!(
        "{{\"model_id\": {}, \"documents\": [{{\"text\": \"{}\"}}]}}",
        model["id"],
        "\\u0628".repeat(400_000)
    );
    let answer = app
        .client
        .post(app.url("/analyze"))
        .bearer_auth(&ada.token)
        .header("content-type", "application/json")
        .body(escaped)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 200);
    // An answer is held whole: at most 100,000 segments a call, whatever the model.
    let sentences: String = (0..101).map(|i| format!("My parcel {i} is late. ")).collect();
    let documents: Vec<Value> = (0..1000).map(|_| json!({"text": sentences})).collect();
    let many = json!({"model_id": model["id"], "documents": documents});
    let problem = app
        .post("/analyze", &ada.token, many)
        .await
        .expect_problem(422, "validation_failed");
    assert!(problem.to_string().contains("100000 segments"), "{problem}");
    // A text's id is a string or a number, never a tree of whatever size.
    let treed = json!({"model_id": model["id"], "documents": [{"text": "Fine.", "id": [[1], {"a": 2}]}]});
    let refused = app.post("/analyze", &ada.token, treed).await;
    assert!(matches!(refused.status.as_u16(), 400 | 422), "{}", refused.status);
    assert_eq!(result["type"], "CLASS");
    let predicted = top_classes(&result);
    let right = predicted
        .iter()
        .zip(UNSEEN)
        .filter(|(p, (_, want))| p.as_deref() == Some(*want))
        .count();
    assert!(right >= 12, "{right} of 15 right: {predicted:?}");
    // Splitting gives one segment per sentence, with spans.
    let split = app
        .post(
            "/analyze",
            &ada.token,
            json!({"model_id": model["id"], "documents": [{"text": "My parcel is late. I cannot log in.", "id": 7}]}),
        )
        .await
        .expect(200);
    assert_eq!(split["documents"][0]["id"], 7);
    assert_eq!(split["documents"][0]["segments"][1]["span"], json!([19, 35]));

    // Download, upload again: the same predictions.
    let (content_type, _, bytes) = app
        .download(&ada.token, &format!("/models/{}/download", model["id"]))
        .await;
    assert_eq!(content_type, "application/octet-stream");
    let (_, _, again) = app
        .download(
            &ada.token,
            &format!("/projects/{project}/models/{}/download", model["id"]),
        )
        .await;
    assert_eq!(bytes, again);
    let (_, _, by_name) = app
        .download(
            &ada.token,
            &format!(
                "/organizations/{}/models/Tickets%20v1/download",
                default_workspace(&app, &ada).await
            ),
        )
        .await;
    assert_eq!(bytes, by_name);
    // The original's "download by name": a name in the caller's default workspace.
    let (_, _, by_plain_name) = app.download(&ada.token, "/models/Tickets%20v1/download").await;
    assert_eq!(bytes, by_plain_name);
    app.get("/models/No%20such%20model/download", &ada.token)
        .await
        .expect_problem(404, "not_found");
    let uploaded = app
        .upload_model(&ada.token, &bytes, &[("display_name", "Tickets copy")])
        .await
        .expect(200);
    assert_eq!(uploaded["status"], "READY");
    assert_eq!(uploaded["type"], "CLASS");
    assert_eq!(uploaded["score"].as_f64(), Some(score), "the artifact's recorded score");
    // A client cannot change it: the same score may be repeated, another is refused.
    let same = score.to_string();
    let repeated = app
        .upload_model(
            &ada.token,
            &bytes,
            &[("display_name", "Tickets same"), ("score", same.as_str())],
        )
        .await
        .expect(200);
    assert_eq!(repeated["score"].as_f64(), Some(score));
    let problem = app
        .upload_model(
            &ada.token,
            &bytes,
            &[("display_name", "Tickets better"), ("score", "0.01")],
        )
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(problem["errors"][0]["field"], "score", "{problem}");
    // The form's text is held to the characters a JSON body's is: a NUL answered 500 on
    // PostgreSQL, and a bidi override reached the name.
    for (field, value) in [
        ("display_name", "Tickets\u{0}"),
        ("organization", "Team\u{202E}"),
        ("short_description", "Line\u{7}"),
    ] {
        let refused = app
            .upload_model(&ada.token, &bytes, &[("display_name", "Tickets odd"), (field, value)])
            .await
            .expect_problem(400, "invalid_characters");
        assert_eq!(refused["errors"][0]["field"], field, "{refused}");
    }
    // The language travels in the file: an upload may give another, and the file a download
    // gives records the model's language as it is now.
    assert_eq!(uploaded["language"], "en");
    let arabic = app
        .upload_model(
            &ada.token,
            &bytes,
            &[("display_name", "Tickets in Arabic"), ("language", "ar")],
        )
        .await
        .expect(200);
    assert_eq!(arabic["language"], "ar");
    let (_, _, arabic_file) = app
        .download(&ada.token, &format!("/models/{}/download", arabic["id"]))
        .await;
    assert_ne!(arabic_file, bytes, "the header records ar");
    let again = app
        .upload_model(&ada.token, &arabic_file, &[("display_name", "Tickets in Arabic again")])
        .await
        .expect(200);
    assert_eq!(again["language"], "ar");
    assert_eq!(
        analyze(&app, &ada, &again["id"], &texts).await["documents"],
        result["documents"],
        "the body is the same"
    );
    // A file from before models recorded their language: the form's, else en.
    let unrecorded = edited_artifact(&bytes, |header| {
        header.as_object_mut().unwrap().remove("language");
    });
    let plain = app
        .upload_model(&ada.token, &unrecorded, &[("display_name", "Tickets unrecorded")])
        .await
        .expect(200);
    assert_eq!(plain["language"], "en");
    let copy = analyze(&app, &ada, &uploaded["id"], &texts).await;
    assert_eq!(copy["documents"], result["documents"], "identical predictions");
    // On a second installation too.
    let other = TestApp::start(crate::common::Backend::Sqlite)
        .await
        .expect("a second server");
    predicts_the_same_on(&other, "bob@example.org", &bytes, &texts, &result).await;
    app.upload_model(&ada.token, b"not a model", &[("display_name", "Junk")])
        .await
        .expect_problem(422, "validation_failed");
    // The checksum is no signature: a header edited by hand is read, and held to what the
    // service trains (a score within 0 to 1, at most a project's 1,000 classes, metrics of the
    // size evaluation writes).
    let names: Vec<String> = (0..=1000).map(|i| format!("class {i}")).collect();
    // Nor metrics larger than an evaluation writes (the store keeps them with the model).
    let rows = vec![vec![0; 3]; 20_000];
    let confusion = json!({"metrics": {"confusion": {"names": ["billing", "login", "shipping"], "matrix": rows}}});
    for (edit, says) in [
        (json!({"metrics": {"score": 7.5}}), "outside 0 to 1"),
        (json!({"classes": names}), "1001 classes"),
        (confusion, "a confusion matrix that is not 3 by 3"),
        (
            json!({"field_model": r#"{"fields": [{"label": "refund", "examples": [], "max_words": 1}]}"#}),
            "is not one of the model's labels",
        ),
    ] {
        let crafted = edited_artifact(&bytes, |header| merge(header, &edit));
        let problem = app
            .upload_model(&ada.token, &crafted, &[("display_name", "Crafted")])
            .await
            .expect_problem(422, "validation_failed");
        assert!(problem.to_string().contains(says), "{problem}");
    }
    // The same framing with the header as it was is a model (so the refusals above are the
    // header's doing).
    let untouched = edited_artifact(&bytes, |_| {});
    app.upload_model(&ada.token, &untouched, &[("display_name", "Reframed")])
        .await
        .expect(200);
    // Into a project: its own takes it; one without the model's classes does not (an
    // analysis would answer tags it cannot name, filter or correct).
    let own = project.to_string();
    app.upload_model(
        &ada.token,
        &bytes,
        &[("display_name", "Into its project"), ("project_id", own.as_str())],
    )
    .await
    .expect(200);
    let fruit = app
        .project_with(&ada, "CLASS", &["fruit", "car"], &[])
        .await
        .to_string();
    let problem = app
        .upload_model(
            &ada.token,
            &bytes,
            &[("display_name", "Foreign"), ("project_id", fruit.as_str())],
        )
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(problem["errors"][0]["field"], "file", "{problem}");
    assert!(
        problem.to_string().contains("add them to the project first"),
        "{problem}"
    );

    // The name is unique in the workspace (explicit train and test sessions: below).
    app.post(
        &format!("/projects/{project}/models"),
        &ada.token,
        json!({"name": "Tickets v1"}),
    )
    .await
    .expect_problem(409, "conflict");

    // A warm start from the first model; a base of another type is refused up front.
    let warm = app
        .train_model(&ada, project, json!({"name": "Tickets v3", "base_id": model["id"]}))
        .await;
    assert_eq!(warm["status"], "READY", "{warm}");
    assert_eq!((&warm["base"], &warm["base_id"]), (&json!("Tickets v1"), &model["id"]));
    let sentiment = app.project_with_classes(&ada, "Sentiment", "LABEL", &[]).await;
    let problem = app
        .post(
            &format!("/projects/{sentiment}/models"),
            &ada.token,
            json!({"base_id": model["id"]}),
        )
        .await
        .expect_problem(422, "validation_failed");
    let base_error = problem["errors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["field"] == "base_id");
    assert!(
        base_error.is_some_and(|e| e["message"].as_str().unwrap().contains("CLASS")),
        "{problem}"
    );
}

async fn training_is_checked_up_front_and_fails_readably(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let project = app
        .project_with_classes(&ada, "Tickets", "CLASS", &["billing", "login"])
        .await;
    let models = format!("/projects/{project}/models");
    let nothing = app.post(&models, &ada.token, json!({})).await;
    let problem = nothing.expect_problem(422, "validation_failed");
    assert_eq!(problem["errors"][0]["field"], "annotation_ids");
    let empty = app
        .post(
            &format!("/projects/{project}/annotations"),
            &ada.token,
            json!({"name": "Empty"}),
        )
        .await
        .expect(201);
    let problem = app
        .post(
            &models,
            &ada.token,
            json!({"language": "fr", "annotation_ids": [empty["id"], 999], "base_id": 12345}),
        )
        .await
        .expect_problem(422, "validation_failed");
    let fields = crate::common::problem_fields(&problem);
    assert_eq!(
        fields,
        ["language", "annotation_ids", "annotation_ids", "base_id"],
        "{problem}"
    );
    app.post(&models, &ada.token, json!({"trainset_annotation_ids": [empty["id"]]}))
        .await
        .expect_problem(422, "validation_failed");
    // Each session is checked once however often it is named, and a list names at most 1000.
    let problem = app
        .post(
            &models,
            &ada.token,
            json!({"annotation_ids": [empty["id"], 999, empty["id"], 999, 999]}),
        )
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(problem["errors"].as_array().unwrap().len(), 2, "{problem}");
    let many: Vec<i64> = (1..=1001).collect();
    let problem = app
        .post(
            &models,
            &ada.token,
            json!({"trainset_annotation_ids": many, "testset_annotation_ids": [1]}),
        )
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(
        (
            &problem["errors"][0]["field"],
            problem["errors"].as_array().unwrap().len()
        ),
        (&json!("trainset_annotation_ids"), 1),
        "refused before any session is looked up: {problem}"
    );
    for field in ["score", "status", "progress"] {
        app.post(&models, &ada.token, with(field, json!(1)))
            .await
            .expect_problem(400, "immutable_field");
    }

    // One class only: no model of a CLASS project can learn from it, which the request is
    // told at once (the training job holds the same rule, for a class deleted meanwhile).
    let session = app
        .labeled_session(&ada, project, "One class", labeled(&BILLING, "billing"))
        .await;
    let problem = app
        .post(&models, &ada.token, json!({"name": "Too little"}))
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(problem["errors"][0]["field"], "annotation_ids", "{problem}");
    let reason = problem["errors"][0]["message"].as_str().unwrap();
    assert!(
        reason.contains("only 1 class") && reason.contains("needs 2"),
        "{reason}"
    );
    let other = app
        .labeled_session(&ada, project, "One class too", labeled(&BILLING[..2], "billing"))
        .await;
    let named = json!({"trainset_annotation_ids": [session["id"]], "testset_annotation_ids": [other["id"]]});
    let problem = app
        .post(&models, &ada.token, named)
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(problem["errors"][0]["field"], "trainset_annotation_ids", "{problem}");
    let listed = app.get(&models, &ada.token).await.expect(200);
    assert_eq!(listed.as_array().map(Vec::len), Some(0), "nothing queued: {listed}");

    // Two segments a class leave no test side: the model is READY without a score, and its
    // metrics are still an object, as the schema says (they were null).
    let tiny = app
        .project_with_classes(&ada, "Tiny", "CLASS", &["billing", "login"])
        .await;
    let documents: Vec<Value> = [
        "I was charged twice.",
        "Refund my invoice.",
        "I cannot log in.",
        "My password fails.",
    ]
    .iter()
    .zip(["billing", "billing", "login", "login"])
    .map(|(text, class)| json!({"text": text, "tags": [{"class": class}]}))
    .collect();
    app.labeled_session(&ada, tiny, "Four", documents).await;
    let model = app.train_model(&ada, tiny, json!({"display_name": "Tiny"})).await;
    assert_eq!(model["status"], "READY", "{model}");
    let detailed = app
        .get(&format!("/projects/{tiny}/models/{}", model["id"]), &ada.token)
        .await
        .expect(200);
    assert_eq!(detailed["score"], Value::Null, "{detailed}");
    assert_eq!(detailed["metrics"], json!({}), "{detailed}");
}

/// Explicit train and test sessions: a session on both sides is refused, and a test session
/// sharing segments with a training one (both over the same documents) tests the model only on
/// the segments it did not learn from.
async fn a_model_is_tested_only_on_what_it_did_not_learn(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let (project, session) = labeled_tickets(&app, &ada, "Tickets").await;
    let both = json!({"trainset_annotation_ids": [session], "testset_annotation_ids": [session]});
    let problem = app
        .post(&format!("/projects/{project}/models"), &ada.token, both)
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(
        crate::common::problem_fields(&problem),
        ["testset_annotation_ids"],
        "{problem}"
    );
    let says = format!("labeling session {session} is in trainset_annotation_ids too");
    assert!(
        problem["errors"][0]["message"].as_str().unwrap().contains(&says),
        "{problem}"
    );

    // A second session tags 6 of the first's segments again, beside 15 new ones.
    let annotations = format!("/projects/{project}/annotations");
    let listed = app
        .get(
            &format!("{annotations}/{session}/documents?details=segments,tags&limit=42"),
            &ada.token,
        )
        .await
        .expect(200);
    let shared: Vec<&Value> = [0, 1, 14, 15, 28, 29]
        .iter()
        .map(|&i| &listed["documents"][i])
        .collect();
    let new: Vec<Value> = UNSEEN
        .iter()
        .map(|(text, class)| json!({"text": text, "tags": [{"class": class}]}))
        .collect();
    let ids: Vec<&Value> = shared.iter().map(|d| &d["id"]).collect();
    let retest = app
        .post(
            &annotations,
            &ada.token,
            json!({"name": "Retest", "document_ids": ids, "documents": new}),
        )
        .await
        .expect(201);
    for document in &shared {
        let segment = &document["segments"][0];
        let at = format!(
            "{annotations}/{}/documents/{}/segments/{}",
            retest["id"], document["id"], segment["id"]
        );
        let class = &segment["tags"][0]["class"];
        app.post(&format!("{at}/tags"), &ada.token, json!({"class": class}))
            .await
            .expect(201);
        app.mark_annotated(&ada, &at).await.expect(200);
    }
    let retest = app
        .get(&format!("{annotations}/{}", retest["id"]), &ada.token)
        .await
        .expect(200);
    assert_eq!(retest["annotated_count"], 21, "{retest}");
    let model = app
        .train_model(
            &ada,
            project,
            json!({"name": "Retested", "trainset_annotation_ids": [session], "testset_annotation_ids": [retest["id"]]}),
        )
        .await;
    assert_eq!(model["status"], "READY", "{model}");
    assert_eq!(
        model["metrics"]["segments"], 15,
        "the 6 learnt from are not tested on: {model}"
    );
}

async fn models_follow_roles_and_tenancy(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let ann = app.register("ann@example.org").await;
    let vic = app.register("vic@example.org").await;
    let usa = app.register("usa@example.org").await;
    let eve = app.register("eve@example.org").await;
    let personal = app.default_workspace_id(&ada).await;
    for (who, role) in [(&ann, "ANNOTATOR"), (&vic, "VIEWER"), (&usa, "USER")] {
        app.add_member(&ada.token, personal, who.user_id, role)
            .await
            .expect(200);
    }
    let (project, _) = labeled_tickets(&app, &ada, "Tickets").await;
    let models = format!("/projects/{project}/models");
    app.post(&models, &ann.token, json!({}))
        .await
        .expect_problem(403, "forbidden");
    app.post(&models, &eve.token, json!({}))
        .await
        .expect_problem(404, "not_found");
    let model = app
        .train_model(&usa, project, json!({"display_name": "By a user"}))
        .await;
    assert_eq!(model["status"], "READY");
    assert_eq!(model["owner"], "usa@example.org");
    let id = model["id"].as_i64().unwrap();

    // Reading: every member; a stranger gets 404 everywhere.
    for who in [&vic, &ann, &usa, &ada] {
        let listed = app.get(&models, &who.token).await.expect(200);
        assert_eq!(listed.as_array().unwrap().len(), 1);
        let one = app.get(&format!("/models/{id}"), &who.token).await.expect(200);
        assert_eq!(one["count"], 1);
        assert_eq!(one["models"][0]["id"], id);
    }
    for path in [
        format!("/models/{id}"),
        format!("/projects/{project}/models/{id}"),
        format!("/models/{id}/download"),
        format!("/projects/{project}/models"),
    ] {
        app.get(&path, &eve.token).await.expect_problem(404, "not_found");
    }
    let theirs = app.get("/models", &eve.token).await.expect(200);
    assert_eq!(theirs["count"], 0);
    app.post(
        "/analyze",
        &eve.token,
        json!({"model_id": id, "documents": [{"text": "hi"}]}),
    )
    .await
    .expect_problem(404, "not_found");
    app.post(
        "/analyze",
        &vic.token,
        json!({"model_id": id, "documents": [{"text": "hi"}]}),
    )
    .await
    .expect_problem(403, "forbidden");

    // The analyses made with it (recorded through the store, as the analysis job would).
    let (_, scope) = app.state.store.principal(ada.user_id).await.unwrap().unwrap();
    for name in ["First", "Second"] {
        let new = lector_store::NewAnalysis {
            name: name.into(),
            model_id: Some(id),
            ..Default::default()
        };
        app.state.store.create_analysis(&scope, project, new).await.unwrap();
    }
    let page = app
        .get(&format!("/models/{id}/analyses?limit=1"), &vic.token)
        .await
        .expect(200);
    assert_eq!(
        (page["count"].as_i64(), page["has_more"].as_bool()),
        (Some(1), Some(true))
    );
    assert_eq!(page["analyses"][0]["name"], "First");
    assert_eq!(page["analyses"][0]["model_id"], id);
    app.get(&format!("/models/{id}/analyses"), &eve.token)
        .await
        .expect_problem(404, "not_found");

    // Changing: MANAGER and up; score, status and progress are the server's.
    let path = format!("/models/{id}");
    app.put(&path, &usa.token, json!({"display_name": "Mine"}))
        .await
        .expect_problem(403, "forbidden");
    for field in ["score", "status", "progress"] {
        app.put(&path, &ada.token, with(field, json!(0.5)))
            .await
            .expect_problem(400, "immutable_field");
    }
    app.put(&path, &ada.token, json!({"colour": "red"}))
        .await
        .expect_problem(400, "unknown_field");
    app.put(&path, &ada.token, json!({"language": "fr"}))
        .await
        .expect_problem(422, "validation_failed");
    let changed = app
        .put(
            &format!("/projects/{project}/models/{id}"),
            &ada.token,
            json!({"display_name": "Tickets", "short_description": "routes tickets", "collection_id": 3,
                "long_description": "Routes tickets.\n\tTrained on Q3."}),
        )
        .await
        .expect(200);
    assert_eq!(changed["display_name"], "Tickets");
    assert_eq!(changed["long_description"], "Routes tickets.\n\tTrained on Q3.");
    assert_eq!(changed["score"], model["score"]);
    let workspace = personal.to_string();
    let form = [("display_name", "No"), ("organization", workspace.as_str())];
    let (_, _, bytes) = app.download(&usa.token, &format!("/models/{id}/download")).await;
    app.upload_model(&usa.token, &bytes, &form)
        .await
        .expect_problem(403, "forbidden");
    let publish = [("display_name", "Everyone's"), ("status", "PUBLISHED")];
    app.upload_model(&ada.token, &bytes, &publish)
        .await
        .expect_problem(403, "forbidden");
    let wrong = [("display_name", "Wrong"), ("base", "nothing"), ("language", "fr")];
    let problem = app
        .upload_model(&ada.token, &bytes, &wrong)
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(problem["errors"][0]["field"], "language", "{problem}");

    // A PUBLISHED model (superusers publish) is read and used by every user, changed by none.
    let root = app.superuser("root@example.org").await;
    let published = app.upload_model(&root.token, &bytes, &publish).await.expect(200);
    assert_eq!(published["status"], "PUBLISHED");
    let public = app.get("/models?public=true", &eve.token).await.expect(200);
    assert_eq!(
        (public["count"].as_i64(), &public["models"][0]["id"]),
        (Some(1), &published["id"])
    );
    let pid = published["id"].as_i64().unwrap();
    app.get(&format!("/models/{pid}"), &eve.token).await.expect(200);
    app.post(
        "/analyze",
        &eve.token,
        json!({"model_id": pid, "documents": [{"text": "My parcel is late."}]}),
    )
    .await
    .expect(200);
    app.put(&format!("/models/{pid}"), &eve.token, json!({"display_name": "Mine"}))
        .await
        .expect_problem(403, "forbidden");
    app.delete(&format!("/models/{pid}"), &eve.token)
        .await
        .expect_problem(403, "forbidden");
    app.delete(&format!("/models/{pid}"), &root.token).await.expect(200);
    // A VIEWER of the workspace a PUBLISHED model is in uses it too, as every user does
    // (before, they alone were refused 403).
    let here = [
        ("display_name", "Everyone's here"),
        ("status", "PUBLISHED"),
        ("organization", workspace.as_str()),
    ];
    let published_here = app.upload_model(&root.token, &bytes, &here).await.expect(200);
    let pid = published_here["id"].as_i64().unwrap();
    let texts = json!({"model_id": pid, "documents": [{"text": "My parcel is late."}]});
    app.post("/analyze", &vic.token, texts).await.expect(200);
    app.delete(&format!("/models/{pid}"), &root.token).await.expect(200);

    // Filters of list_models.
    let list = |query: &'static str| {
        let (app, token) = (&app, vic.token.clone());
        async move { app.get(&format!("/models{query}"), &token).await.expect(200) }
    };
    assert_eq!(list("").await["count"], 1);
    assert_eq!(list("?type=CLASS").await["count"], 1);
    assert_eq!(list("?type=LABEL").await["count"], 0);
    assert_eq!(list("?search=TICK").await["count"], 1);
    assert_eq!(list("?search=nothing").await["count"], 0);
    assert_eq!(list("?collection_id=3").await["count"], 1);
    assert_eq!(list("?exclude_id=0").await["count"], 1);
    assert_eq!(list("?public=true").await["count"], 0);
    // The original's Python client sends booleans as True and False.
    assert_eq!(list("?public=True").await["count"], 0);
    assert_eq!(list("?public=False").await["count"], 1);
    assert_eq!(list("?starred=true").await["count"], 0);
    let starred = app
        .post(&format!("/models/{id}/star"), &vic.token, json!({}))
        .await
        .expect(200);
    assert_eq!(starred["starred"], true);
    assert_eq!(list("?starred=true").await["count"], 1);
    assert_eq!(list("?starred=True").await["count"], 1);
    assert_eq!(list("?starred=FALSE").await["count"], 0);
    app.get("/models?starred=yes", &vic.token)
        .await
        .expect_problem(400, "invalid_parameter");
    let theirs = app.get("/models?starred=true", &ada.token).await.expect(200);
    assert_eq!(theirs["count"], 0, "stars are per user");
    app.post(&format!("/models/{id}/unstar"), &vic.token, json!({}))
        .await
        .expect(200);
    assert_eq!(list("?starred=true").await["count"], 0);
    let page = app.get("/models?limit=0", &vic.token).await;
    page.expect_problem(400, "invalid_parameter");
    let workspace_models = format!("/organizations/{}/models", default_workspace(&app, &ada).await);
    let in_workspace = app.get(&workspace_models, &vic.token).await.expect(200);
    assert_eq!(in_workspace["count"], 1);
    app.get(&workspace_models, &eve.token)
        .await
        .expect_problem(404, "not_found");

    // Deleting: MANAGER and up.
    app.delete(&path, &usa.token).await.expect_problem(403, "forbidden");
    app.delete(&format!("/projects/{project}/models/{id}"), &ada.token)
        .await
        .expect(200);
    app.get(&path, &ada.token).await.expect_problem(404, "not_found");
}

/// A read-only workspace refuses writes only: its USERs analyse texts with its models through
/// `/analyze`, which stores nothing (it was refused 403 `workspace_read_only`), while a batch
/// analysis, a correction session and an extraction, which store what they make (an extraction
/// a HITL review), stay refused; a VIEWER still may not analyse.
async fn a_read_only_workspace_analyses_what_it_does_not_store(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let usa = app.register("usa@example.org").await;
    let vic = app.register("vic@example.org").await;
    let workspace = app.default_workspace_id(&ada).await;
    for (who, role) in [(&usa, "USER"), (&vic, "VIEWER")] {
        app.add_member(&ada.token, workspace, who.user_id, role)
            .await
            .expect(200);
    }
    let (project, _) = labeled_tickets(&app, &ada, "Tickets").await;
    let model = app.train_model(&ada, project, json!({"display_name": "Tickets"})).await;
    assert_eq!(model["status"], "READY", "{model}");
    let at = format!("/organizations/{workspace}");
    let name = app.get(&at, &ada.token).await.expect(200)["name"].clone();
    let locked = app
        .put(&at, &ada.token, json!({"name": name, "is_read_only": true}))
        .await
        .expect(200);
    assert_eq!(locked["is_read_only"], true, "{locked}");

    let texts = json!({"model_id": model["id"], "documents": [{"text": "My parcel is late."}]});
    for who in [&usa, &ada] {
        let result = app.post("/analyze", &who.token, texts.clone()).await.expect(200);
        assert_eq!(
            result["documents"][0]["segments"].as_array().map(Vec::len),
            Some(1),
            "{result}"
        );
    }
    app.post("/analyze", &vic.token, texts)
        .await
        .expect_problem(403, "forbidden");
    let batch = json!({"model_id": model["id"], "name": "Batch", "documents": [{"text": "Late again."}]});
    app.post("/analyses", &usa.token, batch)
        .await
        .expect_problem(403, "workspace_read_only");
    let correction = json!({"model_id": model["id"], "sample_size": 2});
    app.post(&format!("/projects/{project}/corrections"), &usa.token, correction)
        .await
        .expect_problem(403, "workspace_read_only");
    let extraction = format!(
        "/organizations/{workspace}/projects/{project}/models/{}/extract",
        model["id"]
    );
    app.send_form(&extraction, &usa.token, "invoice.pdf", b"%PDF-1.4", &[])
        .await
        .expect_problem(403, "workspace_read_only");
}

/// The (class, label) of the most confident tag of each document's first segment.
fn top_tags(result: &Value) -> Vec<(Option<String>, Option<String>)> {
    result["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let best = d["segments"][0]["tags"].as_array().unwrap().iter().max_by(|a, b| {
                a["confidence"]
                    .as_f64()
                    .unwrap()
                    .total_cmp(&b["confidence"].as_f64().unwrap())
            });
            let name = |t: Option<&Value>, key: &str| t.and_then(|t| t[key].as_str()).map(str::to_owned);
            (name(best, "class"), name(best, "label"))
        })
        .collect()
}

async fn label_model_story(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let project = app.project_with(&ada, "LABEL", &[], &["positive", "negative"]).await;
    let subjects = ["The film", "This book", "Our stay"];
    let mut documents = Vec::new();
    for (i, (good, bad)) in GOOD.iter().zip(BAD).enumerate() {
        for k in 0..2 {
            let subject = subjects[(i + k) % 3];
            documents
                .push(json!({"text": format!("{subject} was {good}, I loved it."), "tags": [{"label": "positive"}]}));
            documents
                .push(json!({"text": format!("{subject} was {bad}, I hated it."), "tags": [{"label": "negative"}]}));
        }
    }
    app.labeled_session(&ada, project, "Reviews", documents).await;
    let model = app
        .train_model(&ada, project, json!({"display_name": "Sentiment"}))
        .await;
    assert_eq!(model["status"], "READY", "{model}");
    assert_eq!(model["labels"], json!(["negative", "positive"]));
    let unseen = [
        ("What a great evening, I loved it.", "positive"),
        ("The concert was wonderful.", "positive"),
        ("A lovely and perfect day.", "positive"),
        ("The hotel was excellent.", "positive"),
        ("Brilliant acting, I loved it.", "positive"),
        ("The meal was superb.", "positive"),
        ("Fantastic music.", "positive"),
        ("The play was terrible, I hated it.", "negative"),
        ("An awful and dreadful trip.", "negative"),
        ("The service was horrible.", "negative"),
        ("A disgusting meal, I hated it.", "negative"),
        ("The room was poor and miserable.", "negative"),
        ("Appalling sound.", "negative"),
        ("The show was bad.", "negative"),
        ("A lousy ending, I hated it.", "negative"),
    ];
    let texts: Vec<&str> = unseen.iter().map(|(t, _)| *t).collect();
    let result = analyze(&app, &ada, &model["id"], &texts).await;
    assert_eq!(result["type"], "LABEL");
    let predicted = top_tags(&result);
    let right = predicted
        .iter()
        .zip(unseen)
        .filter(|((_, label), (_, want))| label.as_deref() == Some(*want))
        .count();
    assert!(right >= 12, "{right} of 15 right: {predicted:?}");
}

/// `text` as a tokenised, lower-cased corpus writes it: `the film was great , i think .`.
fn tokenised(text: &str) -> String {
    text.to_lowercase().replace(',', " ,").replace('.', " .")
}

/// Two labels whose texts are the same words, once as typed and once tokenised: folded
/// features cannot tell them apart, so training chooses the typed shape on held-out data,
/// says so in the model's metrics, and the model sorts unseen texts by how they were typed.
async fn a_label_model_learns_how_its_texts_were_typed(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let project = app.project_with(&ada, "LABEL", &[], &["typed", "corpus"]).await;
    let mut documents = Vec::new();
    for (i, word) in GOOD.iter().chain(&BAD).enumerate() {
        let subject = ["The film", "This book", "Our stay", "The meal"][i % 4];
        let text = format!("{subject} was {word}, I think.");
        documents.push(json!({"text": tokenised(&text), "tags": [{"label": "corpus"}]}));
        documents.push(json!({"text": text, "tags": [{"label": "typed"}]}));
    }
    app.labeled_session(&ada, project, "Two typings", documents).await;
    let model = app.train_model(&ada, project, json!({"display_name": "Typing"})).await;
    assert_eq!(model["status"], "READY", "{model}");
    assert_eq!(model["metrics"]["features"], "folded+cased+shape", "{model}");
    let typed = [
        "The concert was long, I left.",
        "Our trip was cheap.",
        "The hotel was quiet, we slept.",
        "A new song, I liked it.",
        "The bus was late.",
    ];
    let mut texts: Vec<String> = typed.iter().map(|t| t.to_string()).collect();
    texts.extend(typed.iter().map(|t| tokenised(t)));
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let predicted = top_tags(&analyze(&app, &ada, &model["id"], &texts).await);
    let want = ["typed"; 5].into_iter().chain(["corpus"; 5]);
    let right = predicted
        .iter()
        .zip(want)
        .filter(|((_, label), want)| label.as_deref() == Some(*want))
        .count();
    assert!(right >= 9, "{right} of 10 right: {predicted:?}");
}

async fn classlabel_model_story(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let project = app
        .project_with(&ada, "CLASSLABEL", &["food", "service"], &["good", "bad"])
        .await;
    let food = ["pizza", "pasta", "soup", "dessert", "steak"];
    let service = ["waiter", "staff", "waitress", "host", "service"];
    let mut documents = Vec::new();
    for i in 0..10 {
        let (good, bad) = (GOOD[i], BAD[i]);
        let (dish, person) = (food[i % 5], service[i % 5]);
        for (text, class, label) in [
            (format!("The {dish} tasted {good}."), "food", "good"),
            (format!("The {dish} tasted {bad}."), "food", "bad"),
            (format!("The {person} was {good} to us."), "service", "good"),
            (format!("The {person} was {bad} to us."), "service", "bad"),
        ] {
            documents.push(json!({"text": text, "tags": [{"class": class, "label": label}]}));
        }
    }
    app.labeled_session(&ada, project, "Reviews", documents).await;
    let model = app.train_model(&ada, project, json!({"display_name": "Aspects"})).await;
    assert_eq!(model["status"], "READY", "{model}");
    assert_eq!(model["classes"], json!(["food", "service"]));
    let unseen = [
        ("My pasta tasted great.", "food", "good"),
        ("The soup tasted amazing.", "food", "good"),
        ("This steak tasted perfect.", "food", "good"),
        ("The dessert tasted wonderful.", "food", "good"),
        ("The pizza tasted awful.", "food", "bad"),
        ("My soup tasted terrible.", "food", "bad"),
        ("The steak tasted disgusting.", "food", "bad"),
        ("The pasta tasted horrible.", "food", "bad"),
        ("Our waiter was lovely to us.", "service", "good"),
        ("The staff was brilliant to us.", "service", "good"),
        ("The host was superb to us.", "service", "good"),
        ("The waitress was rude and awful to us.", "service", "bad"),
        ("The staff was dreadful to us.", "service", "bad"),
        ("Our host was appalling to us.", "service", "bad"),
        ("The service was lousy to us.", "service", "bad"),
    ];
    let texts: Vec<&str> = unseen.iter().map(|(t, _, _)| *t).collect();
    let result = analyze(&app, &ada, &model["id"], &texts).await;
    assert_eq!(result["type"], "CLASSLABEL");
    let predicted = top_tags(&result);
    let right = predicted
        .iter()
        .zip(unseen)
        .filter(|((class, label), (_, c, l))| class.as_deref() == Some(*c) && label.as_deref() == Some(*l))
        .count();
    assert!(right >= 12, "{right} of 15 right: {predicted:?}");
}

/// Files under the blob store's `models/` folder.
fn model_files(app: &TestApp) -> usize {
    fn count(dir: &std::path::Path) -> usize {
        std::fs::read_dir(dir).map_or(0, |entries| {
            entries
                .flatten()
                .map(|e| if e.path().is_dir() { count(&e.path()) } else { 1 })
                .sum()
        })
    }
    count(&app.data_dir.path().join("blobs/models"))
}

async fn a_project_shows_its_models_and_takes_their_files_when_deleted(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let (project, _) = labeled_tickets(&app, &ada, "Tickets").await;
    let model = app.train_model(&ada, project, json!({"name": "Tickets v1"})).await;
    let shown = app.get(&format!("/projects/{project}"), &ada.token).await.expect(200);
    assert_eq!(shown["models"].as_array().map(Vec::len), Some(1), "{shown}");
    assert_eq!(shown["models"][0]["id"], model["id"]);
    assert_eq!(shown["models"][0]["status"], "READY");
    // A name that is a number is found by name when no model of the workspace has that id.
    let numbered = app.train_model(&ada, project, json!({"name": "2024"})).await;
    let workspace = default_workspace(&app, &ada).await;
    let (_, _, by_name) = app
        .download(&ada.token, &format!("/organizations/{workspace}/models/2024/download"))
        .await;
    let (_, _, by_id) = app
        .download(&ada.token, &format!("/models/{}/download", numbered["id"]))
        .await;
    assert_eq!(by_name, by_id);
    assert_eq!(model_files(&app), 2, "the artifacts are stored");
    app.delete(&format!("/projects/{project}"), &ada.token)
        .await
        .expect(200);
    app.get(&format!("/models/{}", model["id"]), &ada.token)
        .await
        .expect_problem(404, "not_found");
    assert_eq!(model_files(&app), 0, "the artifacts went with their models");
}

/// `artifact` with its JSON header edited and its checksum (FNV-1a, 64 bits) made anew: what
/// anyone can make of a downloaded model file.
fn edited_artifact(artifact: &[u8], edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    let header_len = u32::from_le_bytes(artifact[12..16].try_into().unwrap()) as usize;
    let mut header: Value = serde_json::from_slice(&artifact[16..16 + header_len]).unwrap();
    edit(&mut header);
    let header = serde_json::to_vec(&header).unwrap();
    let mut out = artifact[..12].to_vec();
    out.extend_from_slice(&(header.len() as u32).to_le_bytes());
    out.extend_from_slice(&header);
    out.extend_from_slice(&artifact[16 + header_len..artifact.len() - 8]);
    let sum = out.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// `edit`'s fields written over `value`'s, objects merged, anything else replaced.
fn merge(value: &mut Value, edit: &Value) {
    match (value, edit) {
        (Value::Object(into), Value::Object(fields)) => {
            for (key, field) in fields {
                merge(into.entry(key.clone()).or_insert(Value::Null), field);
            }
        }
        (value, edit) => *value = edit.clone(),
    }
}

/// A model's language changed after training is written into the file a download gives, and
/// the stored file's checksum is checked as it streams: a damaged file ends the download with an
/// error, never with a new checksum vouching for it.
async fn a_damaged_model_file_is_not_vouched_for(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let (project, _) = labeled_tickets(&app, &ada, "Tickets").await;
    let model = app
        .train_model(&ada, project, json!({"display_name": "Tickets v1", "language": "en"}))
        .await;
    let url = format!("/models/{}/download", model["id"]);
    let (_, _, trained) = app.download(&ada.token, &url).await;
    app.put(
        &format!("/models/{}", model["id"]),
        &ada.token,
        json!({"language": "de"}),
    )
    .await
    .expect(200);
    let (_, _, file) = app.download(&ada.token, &url).await;
    let copy = app
        .upload_model(&ada.token, &file, &[("display_name", "Tickets copy")])
        .await
        .expect(200);
    assert_eq!(copy["language"], "de");

    let stored = crate::common::files_under(&app.data_dir.path().join("blobs"))
        .into_iter()
        .find(|path| std::fs::read(path).is_ok_and(|bytes| bytes == trained))
        .expect("the trained model's file");
    let mut damaged = trained.clone();
    let at = damaged.len() - 20;
    damaged[at] ^= 0x40;
    std::fs::write(&stored, &damaged).unwrap();
    // A file this small goes out with its head in one write, so the client may see the
    // connection end before the head; either way it gets no file.
    let downloaded = match app.client.get(app.url(&url)).bearer_auth(&ada.token).send().await {
        Ok(response) => response.bytes().await.ok(),
        Err(_) => None,
    };
    assert_eq!(downloaded, None, "the download ends early");
}

/// Trainings whose jobs the tests hold where they want them (no workers run).
mod held {
    use crate::common::tickets::{BILLING, labeled, labeled_tickets};
    use crate::common::{Session, TestApp};
    use serde_json::{Value, json};

    backend_tests!(
        adjust: no_workers;
        a_session_deleted_before_its_training_fails_it_readably,
        a_model_change_writes_what_it_names_when_it_may,
        a_failed_or_deleted_model_says_so
    );

    fn no_workers(config: &mut lector_core::config::Config) {
        config.workers = 0;
    }

    /// A test session deleted while its training waits for a worker: the model fails, saying
    /// which session went, instead of turning READY without a score as if none had been named.
    async fn a_session_deleted_before_its_training_fails_it_readably(app: TestApp) {
        let ada = app.register("ada@example.org").await;
        let (project, train) = labeled_tickets(&app, &ada, "Held").await;
        let test = app
            .labeled_session(&ada, project, "Test", labeled(&BILLING[..3], "billing"))
            .await;
        let test = test["id"].as_i64().unwrap();
        let body =
            json!({"display_name": "Held", "trainset_annotation_ids": [train], "testset_annotation_ids": [test]});
        let model = app
            .post(&format!("/projects/{project}/models"), &ada.token, body)
            .await
            .expect(201);
        app.delete(&format!("/projects/{project}/annotations/{test}"), &ada.token)
            .await
            .expect(200);
        app.run_jobs().await;
        let failed = app
            .get(&format!("/projects/{project}/models/{}", model["id"]), &ada.token)
            .await
            .expect(200);
        assert_eq!(failed["status"], "FAILED", "{failed}");
        let failure = failed["failure"].as_str().unwrap_or_default();
        assert!(
            failure.contains(&format!("labeling session {test} was deleted")),
            "{failed}"
        );
    }

    /// A CLASS project that trains in a moment: two segments of each of two classes, in a
    /// labeling session named "Four"; answers the project and the session.
    async fn tiny_project(app: &TestApp, ada: &Session) -> (i64, Value) {
        let project = app
            .project_with_classes(ada, "Tiny", "CLASS", &["billing", "login"])
            .await;
        let documents: Vec<Value> = [
            ("I was charged twice.", "billing"),
            ("Refund my invoice.", "billing"),
            ("I cannot log in.", "login"),
            ("My password fails.", "login"),
        ]
        .iter()
        .map(|(text, class)| json!({"text": text, "tags": [{"class": class}]}))
        .collect();
        let session = app.labeled_session(ada, project, "Four", documents).await;
        (project, session)
    }

    /// `update_model` writes only the fields it is sent: `collection_id: null` takes the model
    /// out of its collection (it changed nothing) and an id below 1 is refused (it was kept);
    /// a language is refused while the training reads it (it was written, and the artifact
    /// then said another). A model of no sentence encoder changes its language once READY.
    async fn a_model_change_writes_what_it_names_when_it_may(app: TestApp) {
        let ada = app.register("ada@example.org").await;
        let (project, _) = tiny_project(&app, &ada).await;
        let queued = app
            .post(
                &format!("/projects/{project}/models"),
                &ada.token,
                json!({"display_name": "Tiny"}),
            )
            .await
            .expect(201);
        let path = format!("/models/{}", queued["id"]);
        let refused = app
            .put(&path, &ada.token, json!({"language": "de"}))
            .await
            .expect_problem(422, "validation_failed");
        assert_eq!(crate::common::problem_fields(&refused), ["language"], "{refused}");
        let message = refused["errors"][0]["message"].as_str().unwrap();
        assert!(message.contains("being trained for en"), "{refused}");
        // The language it has, and other fields, are taken meanwhile.
        let named = app
            .put(
                &path,
                &ada.token,
                json!({"language": "en", "short_description": "queued"}),
            )
            .await
            .expect(200);
        assert_eq!((&named["status"], &named["language"]), (&json!("QUEUED"), &json!("en")));
        app.run_jobs().await;

        let model = app.get(&path, &ada.token).await.expect(200)["models"][0].clone();
        assert_eq!(
            (&model["status"], &model["short_description"]),
            (&json!("READY"), &json!("queued"))
        );
        let german = app.put(&path, &ada.token, json!({"language": "de"})).await.expect(200);
        assert_eq!(german["language"], "de");
        let filed = app
            .put(&path, &ada.token, json!({"collection_id": 3}))
            .await
            .expect(200);
        assert_eq!(filed["collection_id"], 3);
        let renamed = app
            .put(&path, &ada.token, json!({"display_name": "Tiny v2"}))
            .await
            .expect(200);
        assert_eq!(
            (
                &renamed["collection_id"],
                &renamed["language"],
                &renamed["short_description"]
            ),
            (&json!(3), &json!("de"), &json!("queued")),
            "fields not sent are kept: {renamed}"
        );
        for id in [0, -1] {
            let problem = app
                .put(&path, &ada.token, json!({"collection_id": id}))
                .await
                .expect_problem(422, "validation_failed");
            assert_eq!(crate::common::problem_fields(&problem), ["collection_id"], "{problem}");
        }
        let cleared = app
            .put(&path, &ada.token, json!({"collection_id": null}))
            .await
            .expect(200);
        assert_eq!(cleared["collection_id"], Value::Null, "{cleared}");
        assert_eq!(cleared["display_name"], "Tiny v2");
        let listed = app.get("/models?collection_id=3", &ada.token).await.expect(200);
        assert_eq!(listed["count"], 0, "{listed}");
    }

    /// A FAILED model never analyses nor has a file: both say it failed, why, and to train a
    /// new model (they said it analyses once READY, and "no artifact yet"). An analysis that
    /// read a model its deletion then took answers 404 naming the model, not a file.
    async fn a_failed_or_deleted_model_says_so(app: TestApp) {
        let ada = app.register("ada@example.org").await;
        let (project, train) = tiny_project(&app, &ada).await;
        let documents = json!([{"text": "Charge me once.", "tags": [{"class": "billing"}]}]);
        let test = app.labeled_session(&ada, project, "Test", documents).await;
        let body = json!({"display_name": "Doomed", "trainset_annotation_ids": [train["id"]],
            "testset_annotation_ids": [test["id"]]});
        let doomed = app
            .post(&format!("/projects/{project}/models"), &ada.token, body)
            .await
            .expect(201);
        app.delete(&format!("/projects/{project}/annotations/{}", test["id"]), &ada.token)
            .await
            .expect(200);
        app.run_jobs().await;
        let id = &doomed["id"];
        let failed = app.get(&format!("/models/{id}"), &ada.token).await.expect(200)["models"][0].clone();
        assert_eq!(failed["status"], "FAILED", "{failed}");
        let failure = failed["failure"].as_str().expect("a failure");
        let texts = json!({"model_id": id, "documents": [{"text": "Refund me."}]});
        let analysis = app
            .post("/analyze", &ada.token, texts)
            .await
            .expect_problem(409, "conflict");
        let download = app
            .get(&format!("/models/{id}/download"), &ada.token)
            .await
            .expect_problem(409, "conflict");
        for problem in [&analysis, &download] {
            let detail = problem["detail"].as_str().unwrap();
            assert!(
                detail.starts_with(&format!("model {id} failed to train ({failure})"))
                    && detail.ends_with("train a new model"),
                "{problem}"
            );
        }

        let ready = app
            .post(
                &format!("/projects/{project}/models"),
                &ada.token,
                json!({"display_name": "Ready"}),
            )
            .await
            .expect(201);
        app.run_jobs().await;
        let ready = app
            .get(&format!("/projects/{project}/models/{}", ready["id"]), &ada.token)
            .await
            .expect(200);
        assert_eq!(ready["status"], "READY", "{ready}");
        let id = ready["id"].as_i64().unwrap();
        // What /analyze read before the deletion took the model and its file.
        let (_, scope) = app.state.store.principal(ada.user_id).await.unwrap().unwrap();
        let read = app.state.store.model_for_ad_hoc_analysis(&scope, id).await.unwrap();
        app.delete(&format!("/models/{id}"), &ada.token).await.expect(200);
        let gone = app.state.store.model_artifact(&read).await.unwrap_err();
        assert_eq!(
            (gone.code, gone.detail.as_str()),
            (lector_core::ErrorCode::NotFound, "model not found")
        );
    }
}
