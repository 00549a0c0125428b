//! Documents, bulk uploads through the import job, document groups and tasks, through HTTPS
//! on both backends.

use crate::common::TestApp;
use serde_json::{Value, json};

backend_tests!(
    a_new_text_is_cut_as_the_old_one,
    documents_are_normalised_and_segmented,
    paging_and_filters_never_drop_or_repeat,
    search_ignores_the_case_of_every_letter,
    upload_runs_as_a_task_and_fills_a_group,
    groups_of_documents,
    documents_follow_roles_and_tenancy,
    documents_filter_by_analysis,
    the_project_language_is_the_default,
);

fn spans(document: &Value) -> Vec<(String, [i64; 2])> {
    document["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["text"].as_str().unwrap().to_owned(),
                [s["span"][0].as_i64().unwrap(), s["span"][1].as_i64().unwrap()],
            )
        })
        .collect()
}

/// The texts of a page of `list_documents`, in its order.
fn texts(page: &Value) -> Vec<String> {
    page["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["text"].as_str().unwrap().to_owned())
        .collect()
}

async fn documents_are_normalised_and_segmented(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let id = app.project(&ada, "Docs").await;
    let docs = format!("/projects/{id}/documents");
    let created = app
        .document(
            &ada,
            id,
            json!({"text": "Cafe\u{301} Dr. Smith came. He left at 3.5 pm!", "meta": {"source": "mail"}}),
        )
        .await;
    assert_eq!(
        created["text"], "Caf\u{e9} Dr. Smith came. He left at 3.5 pm!",
        "stored NFC"
    );
    assert_eq!(
        spans(&created),
        [
            ("Caf\u{e9} Dr. Smith came.".to_owned(), [0, 20]),
            ("He left at 3.5 pm!".to_owned(), [21, 39])
        ],
        "abbreviation-aware sentences with code-point spans"
    );
    assert_eq!(created["meta"]["source"], "mail");

    let whole = app
        .document(&ada, id, json!({"text": "One. Two.", "split": false}))
        .await;
    assert_eq!(spans(&whole).len(), 1);
    let own = app
        .document(&ada, id, json!({"text": "alpha beta gamma", "segments": [{"text": "alpha beta"}, {"text": "gamma", "span": [11, 16]}]}))
        .await;
    assert_eq!(
        spans(&own),
        [("alpha beta".to_owned(), [0, 10]), ("gamma".to_owned(), [11, 16])]
    );
    app.post(
        &docs,
        &ada.token,
        json!({"text": "alpha", "segments": [{"text": "omega"}]}),
    )
    .await
    .expect_problem(422, "validation_failed");
    // SPEC 4.5 and the original client's DocumentCreate: `segments` is an object with text,
    // one segment.
    let one = app
        .document(
            &ada,
            id,
            json!({"text": "alpha beta", "segments": {"text": "alpha beta"}}),
        )
        .await;
    assert_eq!(spans(&one), [("alpha beta".to_owned(), [0, 10])]);
    let part = app
        .document(
            &ada,
            id,
            json!({"text": "alpha beta", "segments": {"text": "beta", "span": [6, 10]}}),
        )
        .await;
    assert_eq!(spans(&part), [("beta".to_owned(), [6, 10])]);
    app.post(
        &docs,
        &ada.token,
        json!({"text": "alpha", "segments": {"text": "omega"}}),
    )
    .await
    .expect_problem(422, "validation_failed");
    for segments in [
        json!({"text": "alpha", "colour": "red"}),
        json!([{"text": "alpha", "colour": "red"}]),
    ] {
        let problem = app
            .post(&docs, &ada.token, json!({"text": "alpha", "segments": segments}))
            .await
            .expect_problem(400, "unknown_field");
        assert!(problem["detail"].as_str().unwrap().contains("colour"), "{problem}");
    }
    for segments in [json!("alpha"), json!(3), json!({"span": [0, 5]})] {
        let problem = app
            .post(&docs, &ada.token, json!({"text": "alpha", "segments": segments}))
            .await
            .expect_problem(400, "bad_request");
        assert!(
            problem["detail"].as_str().unwrap().contains("segments")
                || problem["detail"].as_str().unwrap().contains("text"),
            "{problem}"
        );
    }
    app.post(&docs, &ada.token, json!({"text": "  "}))
        .await
        .expect_problem(422, "validation_failed");
    app.post(&docs, &ada.token, json!({"text": "x", "language": "fr"}))
        .await
        .expect_problem(422, "validation_failed");
    app.post(&docs, &ada.token, json!({"text": "x", "id": 3}))
        .await
        .expect_problem(400, "immutable_field");

    let german = app
        .document(&ada, id, json!({"text": "Das ist z. B. gut. Ja.", "language": "de"}))
        .await;
    assert_eq!(spans(&german).len(), 2, "{german}");

    let path = format!("{docs}/{}", created["id"]);
    let fetched = app
        .get(&format!("{path}?details=meta,tags"), &ada.token)
        .await
        .expect(200);
    assert_eq!(fetched["meta"]["source"], "mail");
    assert_eq!(fetched["segments"][0]["tags"], json!([]));
    app.get(&format!("{path}?details=colour"), &ada.token)
        .await
        .expect_problem(400, "invalid_parameter");
    let updated = app
        .put(&path, &ada.token, json!({"text": "New text. Second one."}))
        .await
        .expect(200);
    assert_eq!(spans(&updated).len(), 2);
    // Only the text changed (as the original API sends it): the meta stays; given, it is replaced.
    let kept = app.get(&format!("{path}?details=meta"), &ada.token).await.expect(200);
    assert_eq!(kept["meta"]["source"], "mail", "{kept}");
    let cleared = app
        .put(&path, &ada.token, json!({"text": "New text. Second one.", "meta": {}}))
        .await
        .expect(200);
    assert_eq!(cleared["meta"], json!({}));
    app.delete(&path, &ada.token).await.expect(200);
    app.get(&path, &ada.token).await.expect_problem(404, "not_found");
}

async fn paging_and_filters_never_drop_or_repeat(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let id = app.project(&ada, "Paging").await;
    let docs = format!("/projects/{id}/documents");
    for n in 0..23 {
        let text = match n {
            5 => "Price rose 100% today.".to_owned(),
            6 => "Price rose 1000 today.".to_owned(),
            7 => "snake_case names".to_owned(),
            8 => "snakeXcase names".to_owned(),
            _ => format!("Document number {n}."),
        };
        app.document(&ada, id, json!({"text": text})).await;
    }
    let mut seen = Vec::new();
    let mut offset = 0;
    loop {
        let page = app
            .get(&format!("{docs}?offset={offset}&limit=7"), &ada.token)
            .await
            .expect(200);
        assert_eq!(page["count"], page["documents"].as_array().unwrap().len());
        seen.extend(
            page["documents"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d["id"].as_i64().unwrap()),
        );
        if !page["has_more"].as_bool().unwrap() {
            break;
        }
        offset += 7;
    }
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!((seen.len(), sorted.len()), (23, 23));
    assert_eq!(seen, sorted, "id order");

    assert_eq!(
        texts(&app.get(&format!("{docs}?search=100%25"), &ada.token).await.expect(200)),
        ["Price rose 100% today."]
    );
    assert_eq!(
        texts(&app.get(&format!("{docs}?search=SNAKE_"), &ada.token).await.expect(200)),
        ["snake_case names"]
    );
    assert_eq!(
        app.get(&format!("{docs}?grouped=true"), &ada.token).await.expect(200)["count"],
        0
    );
    app.refuses_queries(&docs, &ada.token, &["limit=0", "analysed=maybe"])
        .await;
    let page = app
        .get(&format!("{docs}?limit=1&details=segments"), &ada.token)
        .await
        .expect(200);
    assert!(page["documents"][0]["segments"].is_array());
}

/// The search finds a text whatever the case of its letters, beyond ASCII too (SQLite's own
/// LOWER and LIKE fold ASCII only), and the characters of SQLite's GLOB match only themselves.
async fn search_ignores_the_case_of_every_letter(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let project = app.project(&ada, "Umlauts").await;
    for text in ["Ärger im Büro.", "Ölpreis steigt.", "Stars * and ?marks [x]."] {
        app.document(&ada, project, json!({"text": text})).await;
    }
    let found = |search: &'static str| {
        let (app, token) = (&app, ada.token.clone());
        async move {
            let page = app
                .get(&format!("/projects/{project}/documents?search={search}"), &token)
                .await
                .expect(200);
            texts(&page)
        }
    };
    for search in ["ärger", "ÄRGER", "Ärger", "bÜrO", "%C3%84RGER%20IM"] {
        assert_eq!(found(search).await, ["Ärger im Büro."], "{search}");
    }
    assert_eq!(found("ölPREIS").await, ["Ölpreis steigt."]);
    assert_eq!(found("ärgern").await, Vec::<String>::new());
    assert_eq!(
        found("STARS%20*%20AND%20%3FMARKS%20%5BX%5D").await,
        ["Stars * and ?marks [x]."]
    );
    assert_eq!(found("s%20*%20a").await, ["Stars * and ?marks [x]."]);
    assert_eq!(found("%C3%A4*r").await, Vec::<String>::new(), "* is no wildcard");
    assert_eq!(found("%3Fm").await, ["Stars * and ?marks [x]."]);
    assert_eq!(found("%3Fx").await, Vec::<String>::new(), "? is no wildcard");
    assert_eq!(found("%5Bx").await, ["Stars * and ?marks [x]."]);
    // A decomposed "ü" (as macOS and PDF copies give it) finds the stored, composed one.
    assert_eq!(found("Bu%CC%88ro").await, ["Ärger im Büro."]);
    // A group of no project of the caller's is not found, as a session or analysis is not.
    app.get(&format!("/projects/{project}/documents?group_id=999999"), &ada.token)
        .await
        .expect_problem(404, "not_found");
}

/// A text is checked as it is stored (a text of NULs is empty), a document has a segment at
/// least, and a new text the sender says nothing of how to cut is cut as the old one was: a
/// text kept whole stays whole.
async fn a_new_text_is_cut_as_the_old_one(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let project = app.project(&ada, "Cuts").await;
    let path = format!("/projects/{project}/documents");
    app.post(&path, &ada.token, json!({"text": "\u{0}\u{0}"}))
        .await
        .expect_problem(422, "validation_failed");
    app.post(&path, &ada.token, json!({"text": "One. Two.", "segments": []}))
        .await
        .expect_problem(422, "validation_failed");
    let whole = app
        .document(&ada, project, json!({"text": "One here. Two there.", "split": false}))
        .await;
    assert_eq!(whole["segments"].as_array().unwrap().len(), 1);
    let changed = app
        .put(
            &format!("{path}/{}", whole["id"]),
            &ada.token,
            json!({"text": "One here. Two there. Three."}),
        )
        .await
        .expect(200);
    let segments = changed["segments"].as_array().unwrap();
    assert_eq!(segments.len(), 1, "kept whole: {changed}");
    assert_eq!(segments[0]["text"], "One here. Two there. Three.");
    let split = app
        .put(
            &format!("{path}/{}", whole["id"]),
            &ada.token,
            json!({"text": "One here. Two there.", "split": true}),
        )
        .await
        .expect(200);
    assert_eq!(
        split["segments"].as_array().unwrap().len(),
        2,
        "split when asked: {split}"
    );
}

async fn upload_runs_as_a_task_and_fills_a_group(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let id = app.project(&ada, "Bulk").await;
    let documents: Vec<Value> = (0..1203)
        .map(|n| json!({"text": format!("Row {n}. It has two sentences."), "id": n}))
        .collect();
    let answer = app
        .post(
            &format!("/projects/{id}/upload-documents"),
            &ada.token,
            json!(documents),
        )
        .await;
    let location = answer
        .headers
        .get("location")
        .expect("Location")
        .to_str()
        .unwrap()
        .to_owned();
    let group = answer.expect(202);
    assert_eq!(group["status"], "PROCESSING");
    assert_eq!(location, format!("/projects/{id}/groups/{}", group["id"]));

    let task = app
        .wait_for_task(&ada.token, id, group["task_id"].as_i64().unwrap())
        .await;
    assert_eq!(
        (task["status"].as_str(), task["progress"].as_f64()),
        (Some("DONE"), Some(1.0)),
        "{task}"
    );
    assert_eq!(task["type"], "import_documents");
    let group = app.get(&location, &ada.token).await.expect(200);
    assert_eq!(
        (group["status"].as_str(), group["document_count"].as_i64()),
        (Some("CREATED"), Some(1203))
    );
    let page = app
        .get(
            &format!(
                "/projects/{id}/documents?group_id={}&limit=1&details=segments,meta",
                group["id"]
            ),
            &ada.token,
        )
        .await
        .expect(200);
    assert_eq!(page["documents"][0]["segments"].as_array().unwrap().len(), 2);
    assert_eq!(page["documents"][0]["meta"]["external_id"], 0);
    // Across the import's batches (of 500, two written at once on PostgreSQL) the group lists
    // its documents in the order they were sent.
    let across = app
        .get(
            &format!(
                "/projects/{id}/documents?group_id={}&limit=100&offset=450&details=meta",
                group["id"]
            ),
            &ada.token,
        )
        .await
        .expect(200);
    let sent: Vec<i64> = across["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["meta"]["external_id"].as_i64().unwrap())
        .collect();
    assert_eq!(sent, (450..550).collect::<Vec<i64>>());
    let notes = app.get("/notifications", &ada.token).await.expect(200);
    assert_eq!(
        notes
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| n["title"] == "Import finished")
            .count(),
        1
    );

    app.post(&format!("/projects/{id}/upload-documents"), &ada.token, json!([]))
        .await
        .expect_problem(422, "validation_failed");
    // The group's name is held to a group's rules (it was stored as sent, blank or of megabytes).
    for name in [" ".to_owned(), "n".repeat(121)] {
        let body = json!({"documents": [{"text": "A text."}], "name": name});
        let refused = app
            .post(&format!("/projects/{id}/upload-documents"), &ada.token, body)
            .await
            .expect_problem(422, "validation_failed");
        assert_eq!(refused["errors"][0]["field"], "name", "{refused}");
    }
    app.get(&format!("/projects/{id}/tasks/999999"), &ada.token)
        .await
        .expect_problem(404, "not_found");
}

async fn groups_of_documents(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let id = app.project(&ada, "Groups").await;
    let groups = format!("/projects/{id}/groups");
    let group = app
        .group(
            &ada,
            id,
            json!({"name": "Batch 1", "documents": [{"text": "First. Doc."}, {"text": "Second doc.", "id": 7}]}),
        )
        .await;
    assert_eq!(
        (group["document_count"].as_i64(), group["status"].as_str()),
        (Some(2), Some("CREATED"))
    );
    assert_eq!(group["source"], "UPLOAD", "one of the original client's values");
    let loose = app.document(&ada, id, json!({"text": "Loose."})).await;
    let path = format!("{groups}/{}", group["id"]);
    let changed = app
        .put(
            &path,
            &ada.token,
            json!({"name": "Batch one", "document_ids": [loose["id"]], "documents": [{"text": "Third."}]}),
        )
        .await
        .expect(200);
    assert_eq!(
        (changed["name"].as_str(), changed["document_count"].as_i64()),
        (Some("Batch one"), Some(4))
    );
    app.put(&path, &ada.token, json!({"document_ids": [999999]}))
        .await
        .expect_problem(404, "not_found");
    assert_eq!(
        app.get(&groups, &ada.token).await.expect(200).as_array().unwrap().len(),
        1
    );
    // The list pages when asked (a plain array, the first thousand by default); a page with
    // groups after it names the next in a Link header, the last page has none.
    let second = app
        .group(&ada, id, json!({"name": "Batch 2", "documents": [{"text": "Fourth."}]}))
        .await;
    let first_page = app.get(&format!("{groups}?limit=1"), &ada.token).await;
    let next = first_page.headers.get("link").map(|v| v.to_str().unwrap().to_owned());
    assert_eq!(
        next.as_deref(),
        Some(&*format!("<{groups}?offset=1&limit=1>; rel=\"next\""))
    );
    assert_eq!(first_page.expect(200)[0]["id"], group["id"]);
    let last_page = app.get(&format!("{groups}?offset=1&limit=1"), &ada.token).await;
    assert!(
        last_page.headers.get("link").is_none(),
        "the last page names no next one"
    );
    let page = last_page.expect(200);
    assert_eq!(page.as_array().unwrap().len(), 1);
    assert_eq!(page[0]["id"], second["id"]);
    assert!(app.get(&groups, &ada.token).await.headers.get("link").is_none());
    app.refuses_queries(&groups, &ada.token, &["limit=1001", "colour=red"])
        .await;

    let members = app
        .get(&format!("{path}/documents?details=segments"), &ada.token)
        .await
        .expect(200);
    assert_eq!(members.as_array().unwrap().len(), 4);
    let first = members[0]["id"].as_i64().unwrap();
    app.get(&format!("{path}/documents/{first}"), &ada.token)
        .await
        .expect(200);
    let other = app.group(&ada, id, json!({"name": "Batch 2"})).await;
    app.get(&format!("{groups}/{}/documents/{first}", other["id"]), &ada.token)
        .await
        .expect_problem(404, "not_found");
    // The original client's GroupCreate and SPEC leave name optional: "Group" and the time.
    let unnamed = app.group(&ada, id, json!({"documents": [{"text": "Fourth."}]})).await;
    let name = unnamed["name"].as_str().unwrap();
    assert!(name.starts_with("Group 20") && name.ends_with('Z'), "{unnamed}");
    assert_eq!(unnamed["document_count"], 1);
    app.post(&groups, &ada.token, json!({"name": " "}))
        .await
        .expect_problem(422, "validation_failed");
    // A language is checked on a change as on a creation (it was taken for English).
    let french = json!({"documents": [{"text": "Bonjour."}], "language": "fr"});
    app.put(&path, &ada.token, french)
        .await
        .expect_problem(422, "validation_failed");

    app.delete(&path, &ada.token).await.expect(200);
    app.get(&path, &ada.token).await.expect_problem(404, "not_found");
    let ungrouped = app
        .get(&format!("/projects/{id}/documents?grouped=False"), &ada.token)
        .await
        .expect(200);
    assert_eq!(ungrouped["count"], 4, "deleting a group keeps its documents");
}

async fn documents_follow_roles_and_tenancy(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let eve = app.register("eve@example.org").await;
    let annotator = app.register("ann@example.org").await;
    let personal = app.default_workspace_id(&ada).await;
    app.add_member(&ada.token, personal, annotator.user_id, "ANNOTATOR")
        .await
        .expect(200);
    let id = app.project(&ada, "Private").await;
    let doc = app.document(&ada, id, json!({"text": "Secret."})).await;
    let path = format!("/projects/{id}/documents/{}", doc["id"]);
    app.get(&path, &annotator.token).await.expect(200);
    app.post(
        &format!("/projects/{id}/documents"),
        &annotator.token,
        json!({"text": "No."}),
    )
    .await
    .expect_problem(403, "forbidden");
    app.post(
        &format!("/projects/{id}/upload-documents"),
        &annotator.token,
        json!([{"text": "No."}]),
    )
    .await
    .expect_problem(403, "forbidden");
    app.get(&path, &eve.token).await.expect_problem(404, "not_found");
    app.get(&format!("/projects/{id}/documents"), &eve.token)
        .await
        .expect_problem(404, "not_found");
    app.get(&format!("/projects/{id}/groups"), &eve.token)
        .await
        .expect_problem(404, "not_found");
    let eve_project = app.project(&eve, "Eve's").await;
    app.get(&format!("/projects/{eve_project}/documents/{}", doc["id"]), &eve.token)
        .await
        .expect_problem(404, "not_found");
}

async fn documents_filter_by_analysis(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let id = app.project(&ada, "Analysed").await;
    let other = app.project(&ada, "Other").await;
    let mut ids = Vec::new();
    for text in ["One.", "Two.", "Three."] {
        let doc = app.document(&ada, id, json!({"text": text})).await;
        ids.push(doc["id"].as_i64().unwrap());
    }
    let analyses = format!("/projects/{id}/analyses");
    assert_eq!(app.get(&analyses, &ada.token).await.expect(200), json!([]));

    // The analysis job records analyses through the store; here the test does.
    let (_, scope) = app.state.store.principal(ada.user_id).await.unwrap().unwrap();
    let new = |name: &str, documents: Vec<i64>| lector_store::NewAnalysis {
        name: name.into(),
        document_ids: documents,
        ..Default::default()
    };
    let first = app
        .state
        .store
        .create_analysis(&scope, id, new("First", vec![ids[0], ids[2]]))
        .await
        .unwrap();
    app.state
        .store
        .create_analysis(&scope, id, new("Second", vec![ids[2]]))
        .await
        .unwrap();
    let listed = app.get(&analyses, &ada.token).await.expect(200);
    assert_eq!(listed[0]["name"], "First");
    assert_eq!(listed[0]["document_count"], 2);
    assert_eq!(listed[0]["type"], "CLASS");
    assert_eq!(listed[0]["status"], "CREATED");
    let page = app
        .get(&format!("{analyses}?offset=1&limit=1"), &ada.token)
        .await
        .expect(200);
    assert_eq!(page.as_array().unwrap().len(), 1);
    assert_eq!(page[0]["name"], "Second");
    app.get(&format!("{analyses}?limit=0"), &ada.token)
        .await
        .expect_problem(400, "invalid_parameter");

    let docs = format!("/projects/{id}/documents");
    let by_analysis = app
        .get(&format!("{docs}?analysis_id={}", first.id), &ada.token)
        .await
        .expect(200);
    assert_eq!(texts(&by_analysis), ["One.", "Three."]);
    let analysed = app.get(&format!("{docs}?analysed=true"), &ada.token).await.expect(200);
    assert_eq!(texts(&analysed), ["One.", "Three."]);
    let not_analysed = app.get(&format!("{docs}?analysed=false"), &ada.token).await.expect(200);
    assert_eq!(texts(&not_analysed), ["Two."]);
    // As the original's Python client spells them.
    let analysed = app.get(&format!("{docs}?analysed=True"), &ada.token).await.expect(200);
    assert_eq!(texts(&analysed), ["One.", "Three."]);
    let not_analysed = app.get(&format!("{docs}?analysed=False"), &ada.token).await.expect(200);
    assert_eq!(texts(&not_analysed), ["Two."]);
    app.get(
        &format!("/projects/{other}/documents?analysis_id={}", first.id),
        &ada.token,
    )
    .await
    .expect_problem(404, "not_found");
    let eve = app.register("eve@example.org").await;
    app.get(&analyses, &eve.token).await.expect_problem(404, "not_found");
}

async fn the_project_language_is_the_default(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    app.post(
        "/projects",
        &ada.token,
        json!({"name": "Fr", "type": "CLASS", "language": "fr"}),
    )
    .await
    .expect_problem(422, "validation_failed");
    let project = app
        .post(
            "/projects",
            &ada.token,
            json!({"name": "Rezensionen", "type": "CLASS", "language": "de"}),
        )
        .await
        .expect(201);
    assert_eq!(project["language"], "de");
    let id = project["id"].as_i64().unwrap();
    let docs = format!("/projects/{id}/documents");
    let german = app
        .post(&docs, &ada.token, json!({"text": "Das war z. B. gut. Sehr gut."}))
        .await
        .expect(201);
    assert_eq!(german["language"], "de");
    let english = app
        .post(&docs, &ada.token, json!({"text": "Fine.", "language": "en"}))
        .await
        .expect(201);
    assert_eq!(english["language"], "en", "a request's language wins");

    let changed = app
        .put(&format!("/projects/{id}"), &ada.token, json!({"language": "ar"}))
        .await
        .expect(200);
    assert_eq!(changed["language"], "ar");
    let group = app
        .post(
            &format!("/projects/{id}/upload-documents"),
            &ada.token,
            json!([{"text": "مرحبا. شكرا."}]),
        )
        .await
        .expect(202);
    let task = app
        .wait_for_task(&ada.token, id, group["task_id"].as_i64().unwrap())
        .await;
    assert_eq!(task["status"], "DONE");
    let uploaded = app
        .get(&format!("/projects/{id}/groups/{}/documents", group["id"]), &ada.token)
        .await
        .expect(200);
    assert_eq!(uploaded[0]["language"], "ar");
    let session = app
        .post(
            &format!("/projects/{id}/annotations"),
            &ada.token,
            json!({"documents": [{"text": "نص."}]}),
        )
        .await
        .expect(201);
    let labeled = app
        .get(
            &format!("/projects/{id}/annotations/{}/documents", session["id"]),
            &ada.token,
        )
        .await
        .expect(200);
    assert_eq!(labeled["documents"][0]["language"], "ar");
}
