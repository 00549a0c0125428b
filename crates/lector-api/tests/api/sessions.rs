//! Labeling sessions, segment tags and annotation marks, through HTTPS on both backends.

use crate::common::{Session, TestApp, ids};
use serde_json::{Value, json};

backend_tests!(
    sessions_cover_documents_and_track_progress,
    labeled_documents_samples_and_auto_tags,
    sessions_follow_roles_and_tenancy,
    clones_copy_everything_as_a_task,
    an_edited_text_keeps_what_was_said_of_its_unchanged_sentences,
    a_part_is_found_in_either_unicode_form,
);

/// A tag's part sent in another Unicode form than the stored text (NFC), as a decomposed "é"
/// from macOS, is found; tags of the input that clash are named.
async fn a_part_is_found_in_either_unicode_form(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let id = app.project_with_classes(&ada, "Cafés", "CLASS", &["FOOD"]).await;
    let cafe = app.document(&ada, id, json!({"text": "Le café est bon."})).await;
    let session = app.session_over(&ada, id, "Round 1", [&cafe["id"]]).await;
    let tags = format!(
        "/projects/{id}/annotations/{}/documents/{}/segments/{}/tags",
        session["id"],
        cafe["id"],
        segment_ids(&cafe)[0]
    );
    let found = app
        .post(&tags, &ada.token, json!({"class": "FOOD", "text": "cafe\u{301}"}))
        .await
        .expect(201);
    assert_eq!(
        (&found["span"], &found["text"]),
        (&json!([3, 7]), &json!("café")),
        "{found}"
    );

    // Tags of the input that clash (one class given for the document and its segment) are a
    // fault of the input: 422 naming the document and its segment, and nothing is stored.
    let clash = json!({"name": "Clash", "documents": [{"text": "Good soup.", "tags": [{"class": "FOOD"}],
        "segments": [{"text": "Good soup.", "tags": [{"class": "FOOD"}]}]}]});
    let sessions = format!("/projects/{id}/annotations");
    let problem = app
        .post(&sessions, &ada.token, clash)
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(problem["errors"][0]["field"], "documents[0]", "{problem}");
    let message = problem["errors"][0]["message"].as_str().unwrap();
    assert!(message.starts_with("the tags of its segment 0 (from 0)"), "{problem}");
    let listed = app.get(&sessions, &ada.token).await.expect(200);
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
}

fn segment_ids(document: &Value) -> Vec<i64> {
    ids(&document["segments"])
}

async fn session_documents(app: &TestApp, who: &Session, sessions: &str, session: &Value) -> Vec<i64> {
    let path = format!("{sessions}/{}/documents", session["id"]);
    ids(&app.get(&path, &who.token).await.expect(200)["documents"])
}

async fn sessions_cover_documents_and_track_progress(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let id = app
        .project_with_classes(&ada, "Reviews", "CLASS", &["FOOD", "SERVICE"])
        .await;
    let two = app
        .document(&ada, id, json!({"text": "The soup was cold. The waiter was kind."}))
        .await;
    let one = app.document(&ada, id, json!({"text": "Great bread."})).await;
    let paged = app
        .document(&ada, id, json!({"text": "Page one.\u{c}Page two.", "split": false}))
        .await;
    assert_eq!(segment_ids(&paged).len(), 1);
    let paged = app
        .put(
            &format!("/projects/{id}/documents/{}", paged["id"]),
            &ada.token,
            json!({"text": "Page one.\u{c}Page two.", "split": true}),
        )
        .await
        .expect(200);
    assert_eq!(
        segment_ids(&paged).len(),
        2,
        "one sentence per page, once asked to split"
    );

    let sessions = format!("/projects/{id}/annotations");
    let session = app
        .post(&sessions, &ada.token, json!({"name": "Round 1"}))
        .await
        .expect(201);
    assert_eq!(session["document_count"], 3, "no documents given: all of the project");
    let empty = app
        .post(&sessions, &ada.token, json!({"name": "Empty", "documents": []}))
        .await
        .expect(201);
    assert_eq!(empty["document_count"], 0, "documents given, if none: {empty}");
    app.delete(&format!("{sessions}/{}", empty["id"]), &ada.token)
        .await
        .expect(200);
    assert_eq!(session["segment_count"], 5);
    assert_eq!(session["status"], "CREATED");
    assert_eq!(session["mode"], "ANNOTATION");
    assert_eq!(session["type"], "CLASS");
    assert_eq!(session["progress"], 0.0);
    assert_eq!(session["classes"], json!(["FOOD", "SERVICE"]));
    assert!(session["uuid"].as_str().unwrap().len() == 36);
    let sid = session["id"].as_i64().unwrap();
    let base = format!("{sessions}/{sid}");

    // Tags on the first segment of the two-sentence document.
    let soup = segment_ids(&two)[0];
    let tags = format!("{base}/documents/{}/segments/{soup}/tags", two["id"]);
    let tag = app
        .post(&tags, &ada.token, json!({"class": "FOOD", "text": "soup"}))
        .await
        .expect(201);
    assert_eq!(tag["class"], "FOOD");
    assert_eq!(tag["span"], json!([4, 8]), "the part is found in the segment");
    assert_eq!(tag["annotation_id"], sid);
    app.post(&tags, &ada.token, json!({"class": "FOOD", "text": "soup"}))
        .await
        .expect_problem(409, "conflict");
    app.post(&tags, &ada.token, json!({"class": "FOOD", "label": "x"}))
        .await
        .expect_problem(422, "validation_failed");
    app.post(&tags, &ada.token, json!({"class": "PRICE"}))
        .await
        .expect_problem(422, "validation_failed");
    app.post(&tags, &ada.token, json!({"class": "FOOD", "span": [30, 35]}))
        .await
        .expect_problem(422, "validation_failed");
    let service = app.post(&tags, &ada.token, json!({"class": "FOOD"})).await.expect(201);
    let changed = app
        .put(
            &format!("{tags}/{}", service["id"]),
            &ada.token,
            json!({"class": "SERVICE"}),
        )
        .await
        .expect(200);
    assert_eq!(changed["class"], "SERVICE");
    let listed = app.get(&tags, &ada.token).await.expect(200);
    assert_eq!(listed.as_array().unwrap().len(), 2);
    let removed = app
        .delete(&format!("{tags}/{}", service["id"]), &ada.token)
        .await
        .expect(200);
    assert_eq!(removed["id"], service["id"]);
    app.delete(&format!("{tags}/{}", service["id"]), &ada.token)
        .await
        .expect_problem(404, "not_found");

    // Marks move the progress and the status.
    let segment = format!("{base}/documents/{}/segments/{soup}", two["id"]);
    app.post(&format!("{segment}/statuses"), &ada.token, json!({"name": "DONE"}))
        .await
        .expect_problem(422, "validation_failed");
    let record = app.mark_annotated(&ada, &segment).await.expect(200);
    assert_eq!(record["name"], "ANNOTATED");
    assert_eq!(record["segment_id"], soup);
    assert_eq!(record["document_id"], two["id"]);
    assert_eq!(record["annotation_id"], sid);
    assert_eq!(record["progress"], 0.2);
    assert_eq!(record["status"], "ANNOTATING");
    let again = app.mark_annotated(&ada, &segment).await.expect(200);
    assert_eq!(
        again["created"], record["created"],
        "marking again keeps the first mark"
    );
    assert_eq!(again["progress"], 0.2);

    let pages = format!("{base}/documents/{}/pages", paged["id"]);
    let page = app.mark_annotated(&ada, &format!("{pages}/1")).await.expect(200);
    assert_eq!(page["page"], 1);
    assert_eq!(page["segment_ids"], json!([segment_ids(&paged)[1]]));
    assert!(page.get("segment_id").is_none());
    assert_eq!(page["progress"], 0.4);
    app.mark_annotated(&ada, &format!("{pages}/2"))
        .await
        .expect_problem(404, "not_found");

    let listing = app
        .get(&format!("{base}/documents?details=tags&limit=2"), &ada.token)
        .await
        .expect(200);
    assert_eq!(listing["count"], 2);
    assert_eq!(listing["has_more"], true);
    assert_eq!(
        listing["classes"][0]["name"], "FOOD",
        "classes as objects in the listing"
    );
    let first = &listing["documents"][0]["segments"][0];
    assert_eq!(first["status"], "ANNOTATED");
    assert_eq!(first["tags"][0]["class"], "FOOD");
    assert!(listing["documents"][0]["segments"][1].get("status").is_none());

    for doc in [&two, &one, &paged] {
        let at = format!("{base}/documents/{}", doc["id"]);
        app.mark_annotated(&ada, &at).await.expect(200);
    }
    let finished = app.get(&base, &ada.token).await.expect(200);
    assert_eq!(finished["status"], "FINISHED");
    assert_eq!(finished["progress"], 1.0);
    assert!(finished["finished"].is_string());
    let by_status = app
        .get(&format!("{sessions}?status=FINISHED"), &ada.token)
        .await
        .expect(200);
    assert_eq!(by_status.as_array().unwrap().len(), 1);
    let corrections = app
        .get(&format!("{sessions}?mode=CORRECTION"), &ada.token)
        .await
        .expect(200);
    assert!(corrections.as_array().unwrap().is_empty());
    app.get(&format!("{sessions}?status=DONE"), &ada.token)
        .await
        .expect_problem(400, "invalid_parameter");

    let doc = app
        .get(&format!("{base}/documents/{}", two["id"]), &ada.token)
        .await
        .expect(200);
    assert_eq!(doc["segments"][0]["tags"][0]["text"], "soup");
    let everywhere = app
        .get(
            &format!("/projects/{id}/documents/{}?details=tags", two["id"]),
            &ada.token,
        )
        .await
        .expect(200);
    assert_eq!(everywhere["segments"][0]["tags"][0]["annotation_id"], sid);
    let filtered = app
        .get(&format!("/projects/{id}/documents?annotation_id={sid}"), &ada.token)
        .await
        .expect(200);
    assert_eq!(filtered["count"], 3);

    // New documents lower the progress and reopen the session.
    let extra = app.document(&ada, id, json!({"text": "Late arrival."})).await;
    let updated = app
        .put(
            &base,
            &ada.token,
            json!({"name": "Round 1b", "document_ids": [extra["id"]], "classes": ["FOOD"]}),
        )
        .await
        .expect(200);
    assert_eq!(updated["name"], "Round 1b");
    assert_eq!(updated["document_count"], 4);
    assert_eq!(updated["status"], "ANNOTATING");
    assert_eq!(updated["classes"], json!(["FOOD"]));
    assert!(updated["finished"].is_null());
    app.put(&base, &ada.token, json!({"progress": 1}))
        .await
        .expect_problem(400, "immutable_field");
    app.put(&base, &ada.token, json!({"segment_count": 3}))
        .await
        .expect_problem(400, "immutable_field");
    app.put(&base, &ada.token, json!({"document_ids": [999999]}))
        .await
        .expect_problem(422, "validation_failed");

    app.delete(&base, &ada.token).await.expect(200);
    app.get(&base, &ada.token).await.expect_problem(404, "not_found");
    let documents = app
        .get(&format!("/projects/{id}/documents"), &ada.token)
        .await
        .expect(200);
    assert_eq!(documents["count"], 4, "deleting a session keeps its documents");
}

async fn labeled_documents_samples_and_auto_tags(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let id = app
        .project_with_classes(&ada, "Aspects", "ABSA", &["FOOD", "SERVICE"])
        .await;
    let sessions = format!("/projects/{id}/annotations");
    let labeled = app
        .post(
            &sessions,
            &ada.token,
            json!({"name": "Labeled", "documents": [
                {"text": "The pasta was superb.", "id": 17, "tags": [{"class": "FOOD", "label": "positive"}]},
                {"text": "Slow waiters. Nice view.", "segments": [
                    {"text": "Slow waiters.", "tags": [{"class": "SERVICE", "label": "negative"}]},
                    {"text": "Nice view.", "status": "ANNOTATED"}
                ]},
                {"text": "Nothing to say."}
            ]}),
        )
        .await
        .expect(201);
    assert_eq!(labeled["document_count"], 3);
    assert_eq!(labeled["segment_count"], 4);
    assert_eq!(labeled["annotated_count"], 3);
    assert_eq!(labeled["labels"], json!(["positive", "negative", "neutral"]));
    assert!(labeled["document_group_id"].is_i64(), "new documents land in a group");
    let group = app
        .get(
            &format!("/projects/{id}/groups/{}", labeled["document_group_id"]),
            &ada.token,
        )
        .await
        .expect(200);
    assert_eq!(group["source"], "ANNOTATIONS");
    let listing = app
        .get(
            &format!("{sessions}/{}/documents?details=tags,meta", labeled["id"]),
            &ada.token,
        )
        .await
        .expect(200);
    assert_eq!(listing["documents"][0]["meta"]["external_id"], 17);
    assert_eq!(listing["documents"][0]["segments"][0]["tags"][0]["label"], "positive");
    assert_eq!(listing["documents"][1]["segments"][1]["status"], "ANNOTATED");
    assert_eq!(listing["documents"][1]["segments"][1]["tags"], json!([]));

    // A tag that does not fit the project type refuses the whole request.
    app.post(
        &sessions,
        &ada.token,
        json!({"documents": [{"text": "Fine.", "tags": [{"class": "FOOD"}]}]}),
    )
    .await
    .expect_problem(422, "validation_failed");
    app.post(&sessions, &ada.token, json!({"classes": ["PRICE"]}))
        .await
        .expect_problem(422, "validation_failed");
    let all = app.get(&sessions, &ada.token).await.expect(200);
    assert_eq!(all.as_array().unwrap().len(), 1, "nothing stored by refused requests");

    // A seeded sample of the project's documents.
    let upload = app
        .group(
            &ada,
            id,
            json!({"name": "Bulk", "documents": (0..20).map(|i| json!({"text": format!("Review number {i}.")})).collect::<Vec<_>>()}),
        )
        .await;
    assert_eq!(upload["document_count"], 20);
    let sample = |seed: u64| app.post(&sessions, &ada.token, json!({"sample_size": 5, "seed": seed}));
    let a = sample(3).await.expect(201);
    let b = sample(3).await.expect(201);
    assert_eq!(a["document_count"], 5);
    assert_eq!(
        session_documents(&app, &ada, &sessions, &a).await,
        session_documents(&app, &ada, &sessions, &b).await,
        "the same seed gives the same sample"
    );
    app.post(&sessions, &ada.token, json!({"sample_size": 0}))
        .await
        .expect_problem(422, "validation_failed");

    // auto: attributes that name classes and labels become tags and marks.
    let fed = app
        .group(
            &ada,
            id,
            json!({"name": "With attributes", "documents": [
                {"text": "Tasty pizza.", "meta": {"aspect": "food", "sentiment": "positive"}},
                {"text": "Meh.", "meta": {"aspect": "ambience", "sentiment": "neutral"}}
            ]}),
        )
        .await;
    let group_docs = app
        .get(&format!("/projects/{id}/groups/{}/documents", fed["id"]), &ada.token)
        .await
        .expect(200);
    let doc_ids = ids(&group_docs);
    let auto = app
        .post(&sessions, &ada.token, json!({"auto": true, "document_ids": doc_ids}))
        .await
        .expect(201);
    assert_eq!(auto["annotated_count"], 1, "only the document naming a known class");
    let doc = app
        .get(
            &format!("{sessions}/{}/documents/{}", auto["id"], doc_ids[0]),
            &ada.token,
        )
        .await
        .expect(200);
    assert_eq!(
        doc["segments"][0]["tags"],
        json!([{
            "id": doc["segments"][0]["tags"][0]["id"], "class": "FOOD", "label": "positive",
            "annotation_id": auto["id"], "created": doc["segments"][0]["tags"][0]["created"]
        }])
    );
}

async fn sessions_follow_roles_and_tenancy(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let ann = app.register("ann@example.org").await;
    let vic = app.register("vic@example.org").await;
    let eve = app.register("eve@example.org").await;
    let personal = app.default_workspace_id(&ada).await;
    for (who, role) in [(&ann, "ANNOTATOR"), (&vic, "VIEWER")] {
        app.add_member(&ada.token, personal, who.user_id, role)
            .await
            .expect(200);
    }
    let id = app.project_with_classes(&ada, "Shared", "LABEL", &[]).await;
    app.add_labels(&ada, id, &["spam", "ham"]).await;
    let doc = app.document(&ada, id, json!({"text": "Buy now. Cheap pills."})).await;
    let outside = app.document(&ada, id, json!({"text": "Not in the session."})).await;
    let sessions = format!("/projects/{id}/annotations");
    app.post(&sessions, &ann.token, json!({}))
        .await
        .expect_problem(403, "forbidden");
    let session = app
        .post(&sessions, &ada.token, json!({"document_ids": [doc["id"]]}))
        .await
        .expect(201);
    let base = format!("{sessions}/{}", session["id"]);
    let [first, second] = segment_ids(&doc)[..] else {
        panic!("two sentences")
    };
    let tags = format!("{base}/documents/{}/segments/{first}/tags", doc["id"]);

    let tag = app.post(&tags, &ann.token, json!({"label": "spam"})).await.expect(201);
    app.post(&tags, &ann.token, json!({"label": "ham"}))
        .await
        .expect_problem(409, "conflict");
    app.put(&format!("{tags}/{}", tag["id"]), &ann.token, json!({"label": "ham"}))
        .await
        .expect(200);
    let at = format!("{base}/documents/{}/segments/{second}", doc["id"]);
    app.mark_annotated(&ann, &at).await.expect(200);
    app.post(&tags, &vic.token, json!({"label": "spam"}))
        .await
        .expect_problem(403, "forbidden");
    app.get(&tags, &vic.token).await.expect(200);
    app.put(&base, &ann.token, json!({"name": "Mine"}))
        .await
        .expect_problem(403, "forbidden");

    // Paths that do not lead to the segment answer 404.
    app.get(&base, &eve.token).await.expect_problem(404, "not_found");
    app.post(&tags, &eve.token, json!({"label": "spam"}))
        .await
        .expect_problem(404, "not_found");
    app.get(&format!("{base}/documents/{}", outside["id"]), &ada.token)
        .await
        .expect_problem(404, "not_found");
    app.get(
        &format!(
            "{base}/documents/{}/segments/{}/tags",
            doc["id"],
            segment_ids(&outside)[0]
        ),
        &ada.token,
    )
    .await
    .expect_problem(404, "not_found");
    let eve_project = app.project_with_classes(&eve, "Eve's", "LABEL", &[]).await;
    app.get(
        &format!("/projects/{eve_project}/annotations/{}", session["id"]),
        &eve.token,
    )
    .await
    .expect_problem(404, "not_found");
    app.delete(&base, &ann.token).await.expect_problem(403, "forbidden");
}

/// What a project holds, in a form that compares across copies (no ids).
async fn contents(app: &TestApp, who: &Session, id: i64) -> Value {
    let project = app.get(&format!("/projects/{id}"), &who.token).await.expect(200);
    let groups: Vec<Value> = app
        .get(&format!("/projects/{id}/groups"), &who.token)
        .await
        .expect(200)
        .as_array()
        .unwrap()
        .iter()
        .map(|g| json!([g["name"], g["document_count"], g["status"]]))
        .collect();
    let documents: Vec<Value> = app
        .get(&format!("/projects/{id}/documents?details=segments,meta"), &who.token)
        .await
        .expect(200)["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            json!([
                d["text"],
                d["meta"],
                d["segments"].as_array().unwrap().len(),
                d["group_id"].is_i64()
            ])
        })
        .collect();
    let mut sessions = Vec::new();
    for session in app
        .get(&format!("/projects/{id}/annotations"), &who.token)
        .await
        .expect(200)
        .as_array()
        .unwrap()
    {
        let listing = app
            .get(
                &format!("/projects/{id}/annotations/{}/documents?details=tags", session["id"]),
                &who.token,
            )
            .await
            .expect(200);
        let tags: Vec<Value> = listing["documents"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|d| d["segments"].as_array().unwrap().clone())
            .map(|s| {
                let tags: Vec<Value> = s["tags"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| json!([t["class"], t["label"], t["span"]]))
                    .collect();
                json!([s["text"], s["status"], tags])
            })
            .collect();
        sessions.push(json!([
            session["name"],
            session["status"],
            session["progress"],
            session["classes"],
            tags
        ]));
    }
    json!({
        "type": project["type"], "classes": project["classes"], "labels": project["labels"],
        "groups": groups, "documents": documents, "sessions": sessions,
    })
}

async fn clones_copy_everything_as_a_task(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let bob = app.register("bob@example.org").await;
    let id = app
        .project_with_classes(&ada, "Original", "CLASSLABEL", &["FOOD", "SERVICE"])
        .await;
    app.add_labels(&ada, id, &["good"]).await;
    app.put(&format!("/projects/{id}"), &ada.token, json!({"external_id": 7}))
        .await
        .expect(200);
    app.group(
        &ada,
        id,
        json!({"name": "Batch", "documents": [{"text": "One. Two.", "meta": {"k": 1}}, {"text": "Three."}]}),
    )
    .await;
    app.document(&ada, id, json!({"text": "Loose document."})).await;
    let session = app
        .post(
            &format!("/projects/{id}/annotations"),
            &ada.token,
            json!({"name": "Labeled", "classes": ["FOOD"], "documents": [
                {"text": "Good soup here.", "tags": [{"class": "FOOD", "label": "good"}]}
            ]}),
        )
        .await
        .expect(201);
    let doc = app
        .get(
            &format!("/projects/{id}/annotations/{}/documents", session["id"]),
            &ada.token,
        )
        .await
        .expect(200)["documents"][0]
        .clone();
    let doc = app
        .get(
            &format!("/projects/{id}/annotations/{}/documents/{}", session["id"], doc["id"]),
            &ada.token,
        )
        .await
        .expect(200);
    app.post(
        &format!(
            "/projects/{id}/annotations/{}/documents/{}/segments/{}/tags",
            session["id"], doc["id"], doc["segments"][0]["id"]
        ),
        &ada.token,
        json!({"class": "FOOD", "label": "good", "text": "soup"}),
    )
    .await
    .expect(201);
    app.post(
        &format!("/projects/{id}/annotations"),
        &ada.token,
        json!({"name": "All"}),
    )
    .await
    .expect(201);
    let team = app.workspace(&ada, "Team").await;

    let copy = app
        .post(
            &format!("/projects/{id}/clone"),
            &ada.token,
            json!({"organization_id": team}),
        )
        .await
        .expect(200);
    assert_eq!(copy["name"], "Original (copy)");
    assert_eq!(copy["organization_id"], team);
    assert_eq!(copy["external_id"], 7, "the client's id for it comes along");
    let copy_id = copy["id"].as_i64().unwrap();
    let task = app
        .wait_for_task(&ada.token, copy_id, copy["task_id"].as_i64().unwrap())
        .await;
    assert_eq!(task["status"], "DONE", "{task}");
    assert_eq!(task["progress"], 1.0);
    assert_eq!(task["result"]["sessions"], 2);
    let copied = app.get(&format!("/projects/{copy_id}"), &ada.token).await.expect(200);
    assert_eq!(copied["status"], "CREATED");
    assert_eq!(contents(&app, &ada, copy_id).await, contents(&app, &ada, id).await);
    let notices = app.notifications(&ada).await;
    assert!(notices.iter().any(|n| n["title"] == "Clone finished"), "{notices:?}");

    // The copy is independent of the original.
    app.delete(&format!("/projects/{id}"), &ada.token).await.expect(200);
    let after = contents(&app, &ada, copy_id).await;
    assert_eq!(after["documents"].as_array().unwrap().len(), 4);

    let second = app
        .post(&format!("/projects/{copy_id}/clone"), &ada.token, json!({}))
        .await
        .expect(200);
    assert_eq!(second["name"], "Original (copy) (copy)");
    assert_eq!(second["organization_id"], team);
    // A name given is trimmed, as a project's is: " Original (copy) " is the copy's name.
    app.post(
        &format!("/projects/{copy_id}/clone"),
        &ada.token,
        json!({"name": " Original (copy) "}),
    )
    .await
    .expect_problem(409, "conflict");
    // A default name stays within a name's length, the original's cut to make room.
    let long = "L".repeat(lector_core::validate::MAX_NAME_CHARS);
    app.put(&format!("/projects/{copy_id}"), &ada.token, json!({"name": long}))
        .await
        .expect(200);
    let third = app
        .post(&format!("/projects/{copy_id}/clone"), &ada.token, json!({}))
        .await
        .expect(200);
    let name = third["name"].as_str().unwrap();
    assert_eq!(name.chars().count(), lector_core::validate::MAX_NAME_CHARS, "{name}");
    assert!(name.ends_with("L (copy)"), "{name}");
    app.post(&format!("/projects/{copy_id}/clone"), &bob.token, json!({}))
        .await
        .expect_problem(404, "not_found");
    let bobs = app.default_workspace_id(&bob).await;
    app.post(
        &format!("/projects/{copy_id}/clone"),
        &ada.token,
        json!({"organization_id": bobs}),
    )
    .await
    .expect_problem(404, "not_found");
}

/// A document's new text keeps the tags and marks of the sentences it still has (their spans
/// moved with the text), and drops those of the sentences it changed; the session's counts
/// follow.
async fn an_edited_text_keeps_what_was_said_of_its_unchanged_sentences(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let id = app
        .project_with_classes(&ada, "Reviews", "CLASS", &["FOOD", "SERVICE"])
        .await;
    let document = app
        .document(&ada, id, json!({"text": "The soup was cold. The waiter was kind."}))
        .await;
    let (soup, waiter) = (segment_ids(&document)[0], segment_ids(&document)[1]);
    let session = app.session_over(&ada, id, "Round 1", [document["id"].clone()]).await;
    let base = format!(
        "/projects/{id}/annotations/{}/documents/{}",
        session["id"], document["id"]
    );
    let soup_tags = format!("{base}/segments/{soup}/tags");
    let tag = app
        .post(&soup_tags, &ada.token, json!({"class": "FOOD", "text": "soup"}))
        .await
        .expect(201);
    assert_eq!(tag["span"], json!([4, 8]));
    app.post(
        &format!("{base}/segments/{waiter}/tags"),
        &ada.token,
        json!({"class": "SERVICE"}),
    )
    .await
    .expect(201);
    for segment in [soup, waiter] {
        app.mark_annotated(&ada, &format!("{base}/segments/{segment}"))
            .await
            .expect(200);
    }

    let text = "Hello there. The soup was cold. The waiter was rude.";
    let edited = app
        .put(
            &format!("/projects/{id}/documents/{}", document["id"]),
            &ada.token,
            json!({"text": text}),
        )
        .await
        .expect(200);
    let segments = segment_ids(&edited);
    assert_eq!(segments.len(), 3);
    assert_eq!(segments[1], soup, "the unchanged sentence keeps its segment");
    assert!(!segments.contains(&waiter), "the changed one is new");
    let kept = app.get(&soup_tags, &ada.token).await.expect(200);
    assert_eq!(kept.as_array().unwrap().len(), 1, "{kept}");
    assert_eq!(
        kept[0]["span"],
        json!([17, 21]),
        "the span moved with its sentence: {kept}"
    );
    let soup_at: String = text.chars().skip(17).take(4).collect();
    assert_eq!(soup_at, "soup");
    let changed = app
        .get(&format!("{base}/segments/{}/tags", segments[2]), &ada.token)
        .await
        .expect(200);
    assert_eq!(changed, json!([]), "the changed sentence starts without tags");
    let counted = app
        .get(&format!("/projects/{id}/annotations/{}", session["id"]), &ada.token)
        .await
        .expect(200);
    assert_eq!(
        (
            &counted["segment_count"],
            &counted["annotated_count"],
            &counted["status"]
        ),
        (&json!(3), &json!(1), &json!("ANNOTATING")),
        "{counted}"
    );
}
