//! What one request body may make the server build: a labeled document's tags (multiplied onto
//! each of its segments), a document's text and meta keys; and that nothing of a body is
//! prepared for a caller who may not edit the project. Through HTTPS on both backends.

use crate::common::{TestApp, problem_fields};
use serde_json::{Value, json};

backend_tests!(
    labeled_tags_are_bounded_before_they_are_built,
    only_editors_have_their_labeled_documents_prepared,
    group_documents_are_held_to_the_text_limit,
    meta_keys_are_bounded_per_document,
    a_group_download_has_a_bounded_number_of_columns,
    a_labeled_document_stops_at_its_segment_limit,
    a_session_of_long_documents_downloads_whole,
    a_listing_page_is_held_to_its_characters,
);

/// The server's per-segment tag limit (`lector_store::MAX_TAGS_PER_SEGMENT`).
const MAX_TAGS: usize = 100;

fn tags(n: usize) -> Vec<Value> {
    vec![json!({"class": "a"}); n]
}

async fn labeled_tags_are_bounded_before_they_are_built(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let project = app.project_with_classes(&ada, "Tags", "CLASS", &["a"]).await;
    let sessions = format!("/projects/{project}/annotations");
    let refused = |body: Value| {
        let (app, token, sessions) = (&app, ada.token.clone(), sessions.clone());
        async move {
            let problem = app
                .post(&sessions, &token, body)
                .await
                .expect_problem(422, "validation_failed");
            problem_fields(&problem)
                .iter()
                .map(|f| f.to_string())
                .collect::<Vec<_>>()
        }
    };

    // A document's tags go on each of its segments: more than a segment may carry is refused
    // naming them (before, they were built for every segment and the store answered 409).
    let body = json!({"documents": [{"text": "One. Two.", "split": true, "tags": tags(MAX_TAGS + 1)}]});
    assert_eq!(refused(body).await, ["documents[0].tags"]);
    // A segment's own tags with the document's.
    let body = json!({"documents": [{"text": "One.", "tags": tags(50),
        "segments": [{"text": "One.", "tags": tags(MAX_TAGS - 49)}]}]});
    assert_eq!(refused(body).await, ["documents[0].segments[0].tags"]);
    // Some forty kilobytes of text split into 2,501 sentences, each to carry the document's 100
    // tags: 250,100 tags, past what one request may make; refused once the text is split,
    // before one tag is built.
    let text = (0..2501)
        .map(|i| format!("Sentence {i}."))
        .collect::<Vec<_>>()
        .join(" ");
    let body = json!({"documents": [{"text": text, "split": true, "tags": tags(MAX_TAGS)}]});
    assert_eq!(refused(body).await, ["documents[0].tags"]);

    // The same bounds hold for documents added to a session.
    let session = app.post(&sessions, &ada.token, json!({"name": "S"})).await.expect(201);
    let body = json!({"documents": [{"text": "One.", "tags": tags(MAX_TAGS + 1)}]});
    let problem = app
        .put(&format!("{sessions}/{}", session["id"]), &ada.token, body)
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(problem_fields(&problem), ["documents[0].tags"]);

    // Within the bounds, a document's tag goes on every segment.
    let body = json!({"documents": [{"text": "One. Two.", "split": true, "tags": tags(1)}]});
    let session = app.post(&sessions, &ada.token, body).await.expect(201);
    assert_eq!(session["segment_count"], 2);
    assert_eq!(session["annotated_count"], 2);
}

/// A VIEWER and an outsider are refused before their body is prepared: the body's segments do
/// not match its text, which only preparing finds (422 for an editor). Before, both got that
/// 422, the outsider's without the project ever being looked up (the body named its language).
async fn only_editors_have_their_labeled_documents_prepared(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let vic = app.register("vic@example.org").await;
    let eve = app.register("eve@example.org").await;
    let personal = app.default_workspace_id(&ada).await;
    app.add_member(&ada.token, personal, vic.user_id, "VIEWER")
        .await
        .expect(200);
    let project = app.project_with_classes(&ada, "Roles", "CLASS", &["a"]).await;
    let sessions = format!("/projects/{project}/annotations");
    let body = json!({"language": "en",
        "documents": [{"text": "One. Two.", "segments": [{"text": "Three."}], "tags": tags(1)}]});
    app.post(&sessions, &ada.token, body.clone())
        .await
        .expect_problem(422, "validation_failed");
    app.post(&sessions, &vic.token, body.clone()).await.expect(403);
    app.post(&sessions, &eve.token, body.clone()).await.expect(404);

    let session = app.post(&sessions, &ada.token, json!({"name": "S"})).await.expect(201);
    let path = format!("{sessions}/{}", session["id"]);
    let update = json!({"documents": body["documents"]});
    app.put(&path, &ada.token, update.clone())
        .await
        .expect_problem(422, "validation_failed");
    app.put(&path, &vic.token, update.clone()).await.expect(403);
    app.put(&path, &eve.token, update).await.expect(404);
}

/// `MAX_DOCUMENT_CHARS` (1,000,000) holds for a group's documents as for any other (before,
/// create_group and update_group stored a text of any length).
async fn group_documents_are_held_to_the_text_limit(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let project = app.project_with_classes(&ada, "Long", "CLASS", &["a"]).await;
    let long = "a".repeat(1_000_001);
    let groups = format!("/projects/{project}/groups");
    let body = json!({"name": "G", "documents": [{"text": "Short."}, {"text": long}]});
    let problem = app
        .post(&groups, &ada.token, body)
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(problem_fields(&problem), ["documents[1].text"]);

    let group = app
        .post(
            &groups,
            &ada.token,
            json!({"name": "G", "documents": [{"text": "Short."}]}),
        )
        .await
        .expect(201);
    let problem = app
        .put(
            &format!("{groups}/{}", group["id"]),
            &ada.token,
            json!({"documents": [{"text": long}]}),
        )
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(problem_fields(&problem), ["documents[0].text"]);
    let group = app
        .get(&format!("{groups}/{}", group["id"]), &ada.token)
        .await
        .expect(200);
    assert_eq!(group["document_count"], 1);
}

/// A document has at most 1,000 meta keys (what a file's columns give), the id given counting as
/// one, wherever documents are sent; a group's download makes a column of each.
async fn meta_keys_are_bounded_per_document(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let project = app.project_with_classes(&ada, "Meta", "CLASS", &["a"]).await;
    let meta = |n: usize| -> Value {
        (0..n)
            .map(|i| (format!("key{i}"), json!(i)))
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    let documents = format!("/projects/{project}/documents");
    let refused = |path: String, body: Value, field: &'static str| {
        let (app, token) = (&app, ada.token.clone());
        async move {
            let problem = app
                .post(&path, &token, body)
                .await
                .expect_problem(422, "validation_failed");
            assert_eq!(problem_fields(&problem), [field], "{problem}");
        }
    };
    refused(documents.clone(), json!({"text": "One.", "meta": meta(1001)}), "meta").await;
    let created = app
        .post(&documents, &ada.token, json!({"text": "One.", "meta": meta(1000)}))
        .await
        .expect(201);
    let path = format!("{documents}/{}", created["id"]);
    let problem = app
        .put(&path, &ada.token, json!({"text": "One.", "meta": meta(1001)}))
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(problem_fields(&problem), ["meta"]);
    let one_too_many = json!({"name": "G", "documents": [{"text": "One.", "id": 7, "meta": meta(1000)}]});
    refused(
        format!("/projects/{project}/groups"),
        one_too_many.clone(),
        "documents[0].meta",
    )
    .await;
    refused(
        format!("/projects/{project}/upload-documents"),
        one_too_many["documents"].clone(),
        "documents[0].meta",
    )
    .await;
    let labeled = json!({"documents": [{"text": "One.", "meta": meta(1001)}]});
    refused(format!("/projects/{project}/annotations"), labeled, "documents[0].meta").await;
    // A value as long as a file's cell may be, not longer.
    let long = json!({"text": "One.", "meta": {"note": "x".repeat((1 << 20) + 1)}});
    refused(documents, long, "meta.note").await;
}

/// A group's download makes a column of every meta key its documents have: past 1,002 (id, text
/// and 1,000 keys) it answers 409 before a row is written (before, 200 with every row as wide as
/// all the keys together).
async fn a_group_download_has_a_bounded_number_of_columns(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let project = app.project_with_classes(&ada, "Wide", "CLASS", &["a"]).await;
    let keys = |prefix: &str, n: usize| -> Value {
        (0..n)
            .map(|i| (format!("{prefix}{i}"), json!("v")))
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    let groups = format!("/projects/{project}/groups");
    let body = json!({"name": "W", "documents": [
        {"text": "One.", "meta": keys("a", 500)}, {"text": "Two.", "meta": keys("b", 500)}]});
    let group = app.post(&groups, &ada.token, body).await.expect(201);
    let download = format!("{groups}/{}/download?format=csv", group["id"]);
    let (_, _, bytes) = app.download(&ada.token, &download).await;
    let header = String::from_utf8(bytes).unwrap().lines().next().unwrap().to_owned();
    assert_eq!(header.split(',').count(), 1002, "id, text and 1,000 keys");
    let put = json!({"documents": [{"text": "Three.", "meta": {"one_more": 1}}]});
    app.put(&format!("{groups}/{}", group["id"]), &ada.token, put)
        .await
        .expect(200);
    let problem = app.get(&download, &ada.token).await.expect_problem(409, "conflict");
    assert!(
        problem["detail"].as_str().unwrap().contains("1002 columns"),
        "{problem}"
    );
}

/// A labeled-data file whose rows all share one `document` key is one document: past 100,000
/// segments (`lector_text::MAX_LABELED_SEGMENTS`) its import fails, naming the limit and the
/// row. Before, the whole file became one document held in memory and stored in one
/// transaction.
async fn a_labeled_document_stops_at_its_segment_limit(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let project = app.project_with_classes(&ada, "Long", "CLASS", &["a"]).await;
    let mut csv = String::from("document,text\n");
    for i in 0..=100_000 {
        csv.push_str(&format!("1,s{i}\n"));
    }
    let created = app
        .send_form(
            &format!("/projects/{project}/annotations/upload"),
            &ada.token,
            "one.csv",
            csv.as_bytes(),
            &[],
        )
        .await
        .expect(200);
    let task = app
        .wait_for_task(&ada.token, project, created["task_id"].as_i64().unwrap())
        .await;
    assert_eq!(task["status"], "FAILED", "{task}");
    let error = task["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("number of segments of one document is over the limit of 100000 (at row 100001)"),
        "{task}"
    );
    let session = app
        .get(
            &format!("/projects/{project}/annotations/{}", created["id"]),
            &ada.token,
        )
        .await
        .expect(200);
    assert_eq!(session["status"], "FAILED");
    assert_eq!(session["document_count"], 0);
}

/// A session download reads a page of documents up to a number of characters as well as of
/// documents (a page of 500 documents of a million characters each was held whole, and each
/// tag's row repeated its segment's text): five documents of 900,000 characters, more than a
/// page's 4 Mi together, come back whole, once each and in order, across the page's end, each
/// row with its tag; every session of the project too.
async fn a_session_of_long_documents_downloads_whole(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let id = app.project_with_classes(&ada, "Long", "CLASS", &["long", "wide"]).await;
    let texts: Vec<String> = (0..5).map(|n| format!("{n} {}", "a".repeat(899_998))).collect();
    let documents: Vec<Value> = texts
        .iter()
        .map(|text| json!({"text": text, "segments": [{"text": text, "tags": [{"class": "long"}, {"class": "wide"}]}]}))
        .collect();
    let session = app.labeled_session(&ada, id, "Long", documents).await;
    for path in [
        format!("/projects/{id}/annotations/{}/download?format=csv", session["id"]),
        format!("/projects/{id}/annotations/download?format=csv"),
    ] {
        let (_, _, bytes) = app.download(&ada.token, &path).await;
        let file = String::from_utf8(bytes).expect("UTF-8");
        let rows: Vec<&str> = file.lines().skip(1).collect();
        assert_eq!(rows.len(), 10, "two tags on each of five documents: {path}");
        for (n, text) in texts.iter().enumerate() {
            for (row, class) in rows[2 * n..2 * n + 2].iter().zip(["long", "wide"]) {
                assert!(
                    row.contains(&format!(",{text},{class},")),
                    "{path}: row of document {n}"
                );
            }
        }
    }
}

/// A page of a document listing holds at most `MAX_LISTED_CHARS` characters of text: 38
/// documents of 900,000 characters (34 million) asked for at once are refused before their
/// text is read (400, naming the limit that fits: 37), in a project's listing and a session's;
/// a page within it is answered, and the next one too; a group's download, which reads by
/// keyset, ends its pages early instead and gives every document. Before, a page of 1,000
/// documents of a million characters built about 2 GB of text for one answer.
async fn a_listing_page_is_held_to_its_characters(app: TestApp) {
    assert_eq!(lector_store::MAX_LISTED_CHARS, 32 << 20, "the test's sizes assume it");
    let ada = app.register("ada@example.org").await;
    let id = app.project_with_classes(&ada, "Long", "CLASS", &["long"]).await;
    let mut ids = Vec::new();
    for n in 0..38 {
        let text = format!("{n:02} {}", "a".repeat(899_997));
        ids.push(app.document(&ada, id, json!({"text": text})).await["id"].clone());
    }
    let session = app.session_over(&ada, id, "Long", &ids).await;
    for listing in [
        format!("/projects/{id}/documents"),
        format!("/projects/{id}/annotations/{}/documents", session["id"]),
    ] {
        let refused = app
            .get(&format!("{listing}?limit=1000"), &ada.token)
            .await
            .expect_problem(400, "invalid_parameter");
        let detail = refused["detail"].as_str().unwrap();
        assert!(detail.contains("ask for at most 37 with limit"), "{detail}");
        let page = app.get(&format!("{listing}?limit=37"), &ada.token).await.expect(200);
        let documents = page["documents"].as_array().expect("documents");
        assert_eq!(documents.len(), 37, "{listing}");
        assert_eq!(documents[36]["text"].as_str().unwrap().len(), 900_000);
        assert_eq!(page["has_more"], true, "{listing}");
        let rest = app
            .get(&format!("{listing}?offset=37&limit=37"), &ada.token)
            .await
            .expect(200);
        assert_eq!(rest["documents"][0]["id"], ids[37], "{listing}");
    }
    // A download reads by keyset, so its pages end early instead: all 38 come back, in order.
    let group = app.group(&ada, id, json!({"name": "Long"})).await;
    let path = format!("/projects/{id}/groups/{}", group["id"]);
    app.put(&path, &ada.token, json!({"document_ids": ids}))
        .await
        .expect(200);
    let (_, _, bytes) = app.download(&ada.token, &format!("{path}/download?format=csv")).await;
    let file = String::from_utf8(bytes).expect("UTF-8");
    let rows: Vec<&str> = file.lines().skip(1).collect();
    assert_eq!(rows.len(), 38, "every document of the group");
    for (row, id) in rows.iter().zip(&ids) {
        assert!(row.starts_with(&format!("{id},")), "in order");
    }
}
