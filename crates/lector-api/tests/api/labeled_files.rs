//! Labeled data in files: the story of a team (a CSV of 1,000 rows as a group, 50 segments
//! labeled in a session, the session downloaded and uploaded again into a second session with
//! identical tags), downloads in every format, column mappings, and labeled data read from an
//! external source. Through HTTPS on both backends.

use crate::common::{Backend, Session, TestApp};
use serde_json::{Value, json};
use std::collections::BTreeMap;

backend_tests!(
    story_csv_group_session_download_and_back,
    session_downloads_upload_again_in_every_format,
    labeled_files_map_their_columns,
    csv_formulas_are_neutralised_and_read_back,
);

backend_tests!(backend: labeled_data_comes_from_sources, http_credentials_fetch_from_their_origin_only);

/// A session created from a labeled-data file answers STARTED with the task that fills it;
/// waits for the task and answers the filled session.
async fn filled_session(app: &TestApp, who: &Session, project: i64, created: &Value) -> Value {
    assert_eq!(created["status"], "STARTED", "{created}");
    let task = created["task_id"].as_i64().expect("a task_id");
    let task = app.wait_for_task(&who.token, project, task).await;
    assert_eq!(task["status"], "DONE", "{task}");
    app.get(
        &format!("/projects/{project}/annotations/{}", created["id"]),
        &who.token,
    )
    .await
    .expect(200)
}

/// Every tag of a session as (segment text, class, label, part), counted, with the number of
/// annotated segments: what must survive a download and an upload.
async fn tags_of(app: &TestApp, who: &Session, project: i64, session: i64) -> (BTreeMap<String, usize>, usize) {
    let mut tags = BTreeMap::new();
    let mut annotated = 0;
    let mut offset = 0;
    loop {
        let page = app
            .get(
                &format!("/projects/{project}/annotations/{session}/documents?details=tags&offset={offset}&limit=1000"),
                &who.token,
            )
            .await
            .expect(200);
        for document in page["documents"].as_array().unwrap() {
            for segment in document["segments"].as_array().unwrap() {
                annotated += usize::from(segment["status"] == "ANNOTATED");
                for tag in segment["tags"].as_array().unwrap() {
                    let key = format!("{}|{}|{}|{}", segment["text"], tag["class"], tag["label"], tag["text"]);
                    *tags.entry(key).or_default() += 1;
                }
            }
        }
        if page["has_more"] == false {
            return (tags, annotated);
        }
        offset += 1000;
    }
}

async fn story_csv_group_session_download_and_back(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let id = app
        .project_with_classes(&ada, "Reviews", "CLASS", &["FOOD", "SERVICE", "PRICE"])
        .await;

    // A CSV with 1,000 rows becomes a group through the import task.
    let mut csv = String::from("text,stars\n");
    for i in 0..1000 {
        csv.push_str(&format!(
            "\"Review {i}: the soup number {i} was hot. Staff {i} smiled.\",{}\n",
            i % 5
        ));
    }
    let body = json!({"name": "Reviews", "column_name": "text"});
    let (uploaded, group, task) = app.uploaded_group(&ada, id, "reviews.csv", csv.as_bytes(), body).await;
    assert_eq!(uploaded["preview"][0], json!(["text", "stars"]));
    assert_eq!(task["status"], "DONE", "{task}");
    assert_eq!(group["document_count"], 1000);

    // A session over the group; 50 segments labeled and marked.
    let documents = app
        .get(
            &format!("/projects/{id}/groups/{}/documents?limit=25", group["id"]),
            &ada.token,
        )
        .await
        .expect(200);
    let listed = app
        .get(
            &format!("/projects/{id}/documents?group_id={}&limit=1000", group["id"]),
            &ada.token,
        )
        .await
        .expect(200);
    let ids = crate::common::ids(&listed["documents"]);
    assert_eq!(ids.len(), 1000);
    let session = app.session_over(&ada, id, "First pass", ids).await;
    assert_eq!(session["segment_count"], 2000, "two sentences a review");
    let base = format!("/projects/{id}/annotations/{}", session["id"]);
    let mut labeled = 0;
    for document in documents.as_array().unwrap() {
        let document = app
            .get(&format!("{base}/documents/{}", document["id"]), &ada.token)
            .await
            .expect(200);
        for (i, segment) in document["segments"].as_array().unwrap().iter().enumerate() {
            let tags = format!("{base}/documents/{}/segments/{}/tags", document["id"], segment["id"]);
            let class = ["FOOD", "SERVICE"][i];
            app.post(&tags, &ada.token, json!({"class": class})).await.expect(201);
            if labeled % 10 == 0 {
                // Parts of a tag lie in its segment: "smiled" is in the next sentence.
                app.post(&tags, &ada.token, json!({"class": "PRICE", "text": "smiled"}))
                    .await
                    .expect_problem(422, "validation_failed");
                app.post(&tags, &ada.token, json!({"class": "PRICE", "text": "soup"}))
                    .await
                    .expect(201);
            }
            let at = format!("{base}/documents/{}/segments/{}", document["id"], segment["id"]);
            app.mark_annotated(&ada, &at).await.expect(200);
            labeled += 1;
        }
    }
    assert_eq!(labeled, 50);
    let first = app.get(&base, &ada.token).await.expect(200);
    assert_eq!(first["annotated_count"], 50);
    assert_eq!(first["progress"], 0.025);

    // Download, upload again, and compare.
    let (content_type, disposition, bytes) = app.download(&ada.token, &format!("{base}/download")).await;
    assert!(content_type.starts_with("text/csv"), "{content_type}");
    assert!(disposition.contains(".csv"), "{disposition}");
    let again = app
        .send_form(
            &format!("/projects/{id}/annotations/upload"),
            &ada.token,
            "first-pass.csv",
            &bytes,
            &[("show_preview", "true")],
        )
        .await
        .expect(200);
    assert_eq!(
        again["preview"][0],
        json!([
            "document",
            "segment",
            "text",
            "class",
            "label",
            "part",
            "annotated",
            "page",
            "boxes"
        ])
    );
    let second = app
        .post(
            &format!("/projects/{id}/annotations"),
            &ada.token,
            json!({"name": "Second pass", "file_id": again["id"],
                   "column_mapping": {"text": "text", "class": "class", "document": "document"}}),
        )
        .await
        .expect(201);
    let second = filled_session(&app, &ada, id, &second).await;
    assert_eq!(second["status"], "ANNOTATING");
    assert_eq!(second["document_count"], 1000);
    assert_eq!(second["segment_count"], 2000);
    assert_eq!(second["annotated_count"], 50);
    let (first_tags, first_annotated) = tags_of(&app, &ada, id, session["id"].as_i64().unwrap()).await;
    let (second_tags, second_annotated) = tags_of(&app, &ada, id, second["id"].as_i64().unwrap()).await;
    assert_eq!(first_tags.values().sum::<usize>(), 55);
    assert_eq!(first_tags, second_tags, "identical tags after a download and an upload");
    assert_eq!(first_annotated, second_annotated);
}

async fn session_downloads_upload_again_in_every_format(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let id = app
        .project_with_classes(&ada, "Aspects", "ABSA", &["FOOD", "SERVICE"])
        .await;
    let documents = json!([
        {"text": "Great pizza, rude waiter.", "segments": [{"text": "Great pizza, rude waiter.", "tags": [
            {"class": "FOOD", "label": "positive"}, {"class": "SERVICE", "label": "negative"}]}]},
        {"text": "Ok. Fine.", "split": true},
        {"text": "Nice.", "segments": [{"text": "Nice.", "status": "ANNOTATED"}]},
        // A sentence said twice stays two segments, each with its own tags.
        {"text": "Cold soup. Cold soup.", "segments": [
            {"text": "Cold soup.", "tags": [{"class": "FOOD", "label": "negative"}]},
            {"text": "Cold soup.", "tags": [{"class": "SERVICE", "label": "neutral"}]}]}
    ]);
    let session = app.labeled_session(&ada, id, "Seed", documents).await;
    let sid = session["id"].as_i64().unwrap();
    // A tag not confirmed yet (a suggestion): tagged, not annotated, and so it comes back.
    let base = format!("/projects/{id}/annotations/{sid}");
    let listed = app
        .get(&format!("{base}/documents?details=tags"), &ada.token)
        .await
        .expect(200);
    let ok = listed["documents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["text"] == "Ok. Fine.")
        .unwrap();
    let tags = format!(
        "{base}/documents/{}/segments/{}/tags",
        ok["id"], ok["segments"][0]["id"]
    );
    app.post(&tags, &ada.token, json!({"class": "FOOD", "label": "neutral"}))
        .await
        .expect(201);
    let expected = tags_of(&app, &ada, id, sid).await;
    assert_eq!(expected.1, 4, "{expected:?}");
    let segments = app.get(&base, &ada.token).await.expect(200)["segment_count"].clone();
    assert_eq!(segments, 5, "{listed}");
    for format in ["csv", "json", "jsonl", "xlsx"] {
        let (_, disposition, bytes) = app
            .download(
                &ada.token,
                &format!("/projects/{id}/annotations/{sid}/download?format={format}"),
            )
            .await;
        assert!(disposition.ends_with(&format!(".{format}\"")), "{disposition}");
        let created = app
            .send_form(
                &format!("/projects/{id}/annotations/upload"),
                &ada.token,
                &format!("seed.{format}"),
                &bytes,
                &[],
            )
            .await
            .expect(200);
        let created = filled_session(&app, &ada, id, &created).await;
        assert_eq!(created["name"], "seed");
        assert_eq!(created["document_count"], 4, "{format}");
        assert_eq!(created["segment_count"], segments, "{format}");
        let copy = tags_of(&app, &ada, id, created["id"].as_i64().unwrap()).await;
        assert_eq!(copy, expected, "{format}");
    }
    let (_, _, all) = app
        .download(&ada.token, &format!("/projects/{id}/annotations/download?format=csv"))
        .await;
    let all = String::from_utf8(all).unwrap();
    assert!(
        all.starts_with("annotation,document,segment,text,class,label,part,annotated"),
        "{all}"
    );
    assert_eq!(all.lines().count(), 1 + 6 * 5, "six rows a session, five sessions");
    let answer = app
        .client
        .get(app.url(&format!("/projects/{id}/annotations/{sid}/download?format=pdf")))
        .bearer_auth(&ada.token)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 400);
}

async fn csv_formulas_are_neutralised_and_read_back(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let classes = ["=SUM(A1)", "@risk", "plain"];
    let id = app.project_with_classes(&ada, "Formulas", "CLASS", &classes).await;
    let texts = [
        "=HYPERLINK(\"http://evil.example\",\"click\")",
        "+49 30 1234",
        "-minus first",
        "@mention",
        "'=already quoted by hand",
        "''two quotes",
    ];
    let documents: Vec<_> = texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let class = classes[i % 3];
            json!({"text": text, "segments": [{"text": text, "tags": [{"class": class}]}]})
        })
        .collect();
    let session = app.labeled_session(&ada, id, "Formulas", documents).await;
    let sid = session["id"].as_i64().unwrap();
    let expected = tags_of(&app, &ada, id, sid).await;
    for text in texts {
        let quoted = serde_json::to_string(text).unwrap();
        assert!(
            expected.0.keys().any(|k| k.starts_with(&quoted)),
            "{text} in {expected:?}"
        );
    }
    let (_, _, bytes) = app
        .download(
            &ada.token,
            &format!("/projects/{id}/annotations/{sid}/download?format=csv"),
        )
        .await;
    let csv = String::from_utf8(bytes.clone()).unwrap();
    for trigger in ['=', '+', '-', '@', '\t', '\r'] {
        for before in [",", ",\"", "\n", "\n\""] {
            assert!(
                !csv.contains(&format!("{before}{trigger}")),
                "{before:?}{trigger:?} in {csv}"
            );
        }
    }
    assert!(csv.contains("'=SUM(A1)") && csv.contains("'''two quotes"), "{csv}");
    let created = app
        .send_form(
            &format!("/projects/{id}/annotations/upload"),
            &ada.token,
            "formulas.csv",
            &bytes,
            &[],
        )
        .await
        .expect(200);
    let created = filled_session(&app, &ada, id, &created).await;
    let copy = tags_of(&app, &ada, id, created["id"].as_i64().unwrap()).await;
    assert_eq!(copy, expected);
}

async fn labeled_files_map_their_columns(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let eve = app.register("eve@example.org").await;
    let id = app
        .project_with_classes(&ada, "Mapped", "ABSA", &["FOOD", "AMBIENCE"])
        .await;
    let csv =
        "review,aspect,sentiment\nTasty food.,FOOD,positive\nTasty food.,AMBIENCE,neutral\nLoud.,AMBIENCE,negative\n";
    let upload = app
        .send_form(
            &format!("/projects/{id}/annotations/upload"),
            &ada.token,
            "mapped.csv",
            csv.as_bytes(),
            // As the original's Python client writes a form's boolean.
            &[("show_preview", "True")],
        )
        .await
        .expect(200);
    assert_eq!(upload["preview"][0], json!(["review", "aspect", "sentiment"]));
    let sessions = format!("/projects/{id}/annotations");
    app.post(&sessions, &ada.token, json!({"file_id": upload["id"]}))
        .await
        .expect_problem(422, "validation_failed");
    app.post(
        &sessions,
        &ada.token,
        json!({"file_id": upload["id"], "column_mapping": {"text": "body"}}),
    )
    .await
    .expect_problem(422, "validation_failed");
    app.post(
        &sessions,
        &ada.token,
        json!({"file_id": upload["id"], "column_mapping": {"text": 0}, "documents": [{"text": "x"}]}),
    )
    .await
    .expect_problem(422, "validation_failed");
    let eve_project = app.project_with_classes(&eve, "Eve's", "ABSA", &["FOOD"]).await;
    app.post(
        &format!("/projects/{eve_project}/annotations"),
        &eve.token,
        json!({"file_id": upload["id"], "column_mapping": {"text": 0}}),
    )
    .await
    .expect_problem(404, "not_found");
    let session = app
        .post(
            &sessions,
            &ada.token,
            json!({"name": "Mapped", "file_id": upload["id"],
                   "column_mapping": {"text": 0, "aspect": "aspect", "label": "sentiment"}}),
        )
        .await
        .expect(201);
    let session = filled_session(&app, &ada, id, &session).await;
    assert_eq!(session["document_count"], 2);
    assert_eq!(session["annotated_count"], 2);
    let (tags, _) = tags_of(&app, &ada, id, session["id"].as_i64().unwrap()).await;
    assert_eq!(tags.len(), 3, "{tags:?}");
    // A header that does not fit is refused at once, and the file makes no session.
    let headless = "body,class\nFine.,FOOD\n";
    app.send_form(
        &format!("/projects/{id}/annotations/upload"),
        &ada.token,
        "headless.csv",
        headless.as_bytes(),
        &[],
    )
    .await
    .expect_problem(422, "validation_failed");
    let all = app.get(&sessions, &ada.token).await.expect(200);
    assert_eq!(all.as_array().unwrap().len(), 1, "refused files make no session");
    // A row the session cannot take fails the task: the session turns FAILED with the reason,
    // and what the rows before it stored (a batch of 200 here) goes with it.
    let documents = format!("/projects/{id}/documents");
    let before = app.get(&documents, &ada.token).await.expect(200)["count"].clone();
    let mut bad = String::from("text,class,label\n");
    for i in 0..250 {
        bad.push_str(&format!("Review {i} liked the soup.,FOOD,positive\n"));
    }
    bad.push_str("Fine.,DRINKS,positive\n");
    let refused = app
        .send_form(
            &format!("/projects/{id}/annotations/upload"),
            &ada.token,
            "bad.csv",
            bad.as_bytes(),
            &[],
        )
        .await
        .expect(200);
    let task = app
        .wait_for_task(&ada.token, id, refused["task_id"].as_i64().unwrap())
        .await;
    assert_eq!(task["status"], "FAILED", "{task}");
    assert!(task["error"].as_str().unwrap_or_default().contains("DRINKS"), "{task}");
    let refused = app
        .get(&format!("{sessions}/{}", refused["id"]), &ada.token)
        .await
        .expect(200);
    assert_eq!(refused["status"], "FAILED");
    assert_eq!(refused["document_count"], 0, "{refused}");
    let after = app.get(&documents, &ada.token).await.expect(200)["count"].clone();
    assert_eq!(after, before, "the failed import left no documents");
    let notices = app.get("/notifications", &ada.token).await.expect(200);
    assert!(notices.to_string().contains("Import failed"), "{notices}");
}

/// Serves one file over plain HTTP on loopback, to every request, until dropped.
async fn serve_file(body: &'static str) -> (String, tokio::task::JoinHandle<()>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut request = vec![0u8; 4096];
            let _ = socket.read(&mut request).await;
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/csv\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = socket.write_all(head.as_bytes()).await;
            let _ = socket.write_all(body.as_bytes()).await;
        }
    });
    (format!("http://{address}/labeled.csv"), server)
}

/// Sends a connect form: a credential, its source kind and the parameters as JSON.
async fn connect(
    app: &TestApp,
    who: &Session,
    path: &str,
    credential: &Value,
    source: &str,
    parameters: &str,
) -> crate::common::Answer {
    let credential = credential.to_string();
    let mut fields = vec![
        ("credential_id", credential.as_str()),
        ("source", source),
        ("parameters", parameters),
    ];
    // The labeled-data path answers a session unless asked for the preview; the tests read
    // the preview, but where they look at the session.
    if path.ends_with("/annotations/connect") {
        fields.push(("show_preview", "true"));
    }
    app.send_form(path, &who.token, "", b"", &fields).await
}

async fn labeled_data_comes_from_sources(backend: Backend) {
    let Some(app) = TestApp::start_with(backend, |config| config.sources.allow_private = true).await else {
        return;
    };
    let ada = app.register("ada@example.org").await;
    let id = app
        .project_with_classes(&ada, "Sourced", "CLASS", &["FOOD", "SERVICE"])
        .await;
    let workspace = app.default_workspace_id(&ada).await;
    let credentials = format!("/organizations/{workspace}/credentials");
    let web = app
        .post(
            &credentials,
            &ada.token,
            json!({"name": "web", "source": "http", "secret": {}}),
        )
        .await
        .expect(201);
    let (url, server) = serve_file("text,class\nHot soup.,FOOD\nKind staff.,SERVICE\nKind staff.,FOOD\n").await;

    let connect_path = format!("/projects/{id}/annotations/connect");
    let parameters = json!({"url": url}).to_string();
    let fetched = connect(&app, &ada, &connect_path, &web["id"], "http", &parameters)
        .await
        .expect(200);
    assert_eq!(fetched["preview"][1], json!(["Hot soup.", "FOOD"]));
    let from_file = app
        .post(
            &format!("/projects/{id}/annotations"),
            &ada.token,
            json!({"file_id": fetched["id"]}),
        )
        .await
        .expect(201);
    let from_file = filled_session(&app, &ada, id, &from_file).await;
    assert_eq!(from_file["document_count"], 2);
    // Without show_preview, connecting makes the labeling session at once (SPEC: 200 Session).
    let credential = web["id"].to_string();
    let fields = [
        ("credential_id", credential.as_str()),
        ("source", "http"),
        ("parameters", parameters.as_str()),
    ];
    let connected = app
        .send_form(&connect_path, &ada.token, "", b"", &fields)
        .await
        .expect(200);
    assert_eq!(connected["status"], "STARTED", "{connected}");
    let connected = filled_session(&app, &ada, id, &connected).await;
    assert_eq!(
        tags_of(&app, &ada, id, connected["id"].as_i64().unwrap()).await,
        tags_of(&app, &ada, id, from_file["id"].as_i64().unwrap()).await
    );
    let inline = app
        .post(
            &format!("/projects/{id}/annotations"),
            &ada.token,
            json!({"credential_id": web["id"], "source": "http", "parameters": {"url": url}}),
        )
        .await
        .expect(201);
    let inline = filled_session(&app, &ada, id, &inline).await;
    assert_eq!(
        tags_of(&app, &ada, id, inline["id"].as_i64().unwrap()).await,
        tags_of(&app, &ada, id, from_file["id"].as_i64().unwrap()).await
    );
    // The same source fills a group too.
    let group_file = connect(
        &app,
        &ada,
        &format!("/projects/{id}/groups/connect"),
        &web["id"],
        "http",
        &parameters,
    )
    .await
    .expect(200);
    assert_eq!(group_file["preview"].as_array().unwrap().len(), 4);
    let previewed = [
        ("credential_id", credential.as_str()),
        ("source", "http"),
        ("show_preview", "true"),
    ];
    app.send_form(
        &format!("/projects/{id}/groups/connect"),
        &ada.token,
        "",
        b"",
        &previewed,
    )
    .await
    .expect_problem(400, "unknown_field");
    // ... and `create_group` takes the source in its body, as SPEC.md section 4.5 lists.
    let group = app
        .post(
            &format!("/projects/{id}/groups"),
            &ada.token,
            json!({"name": "From the web", "column_name": "text",
                   "credential_id": web["id"], "source": "http", "parameters": {"url": url}}),
        )
        .await
        .expect(201);
    let task = group["task_id"].as_i64().unwrap();
    assert_eq!(app.wait_for_task(&ada.token, id, task).await["status"], "DONE");
    let filled = app
        .get(&format!("/projects/{id}/groups/{}", group["id"]), &ada.token)
        .await
        .expect(200);
    assert_eq!(filled["document_count"], 3, "{filled}");
    app.post(
        &format!("/projects/{id}/groups"),
        &ada.token,
        json!({"name": "Half", "credential_id": web["id"], "parameters": {"url": url}}),
    )
    .await
    .expect_problem(422, "validation_failed");
    connect(&app, &ada, &connect_path, &web["id"], "postgres", &parameters)
        .await
        .expect_problem(422, "validation_failed");
    server.abort();
    let gone = connect(&app, &ada, &connect_path, &web["id"], "http", &parameters).await;
    assert_eq!(gone.status.as_u16(), 400, "{}", gone.text);

    // A read-only query of a PostgreSQL database, when the tests have one.
    if let Ok(url) = std::env::var("LECTOR_TEST_DATABASE_URL") {
        let database = app
            .post(
                &credentials,
                &ada.token,
                json!({"name": "db", "source": "postgres", "secret": {"url": url}}),
            )
            .await
            .expect(201);
        let session = app
            .post(
                &format!("/projects/{id}/annotations"),
                &ada.token,
                json!({"credential_id": database["id"], "source": "postgres",
                       "parameters": {"query": "SELECT 'Warm bread.' AS text, 'FOOD' AS class"}}),
            )
            .await
            .expect(201);
        let session = filled_session(&app, &ada, id, &session).await;
        assert_eq!(session["annotated_count"], 1);
    }
}

/// An http credential's headers go to the origin it was created with, whoever uses it: a USER
/// naming another origin is refused before anything is sent, and a credential stored before
/// credentials named their origin sends its headers nowhere.
async fn http_credentials_fetch_from_their_origin_only(backend: Backend) {
    let Some(app) = TestApp::start_with(backend, |config| config.sources.allow_private = true).await else {
        return;
    };
    let ada = app.register("ada@example.org").await;
    let usa = app.register("usa@example.org").await;
    let workspace = app.default_workspace_id(&ada).await;
    app.add_member(&ada.token, workspace, usa.user_id, "USER")
        .await
        .expect(200);
    let id = app
        .project_with_classes(&ada, "Sourced", "CLASS", &["FOOD", "SERVICE"])
        .await;
    let (url, server) = serve_file("text,class\nHot soup.,FOOD\n").await;
    let origin = url.trim_end_matches("/labeled.csv").to_owned();
    let credentials = format!("/organizations/{workspace}/credentials");
    let unbound = app
        .post(
            &credentials,
            &ada.token,
            json!({"name": "loose", "source": "http", "secret": {"headers": {"X-Key": "k"}}}),
        )
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(unbound["errors"][0]["field"], "secret.base_url");
    let bound = app
        .post(
            &credentials,
            &ada.token,
            json!({"name": "feed", "source": "http",
                   "secret": {"headers": {"X-Key": "k"}, "base_url": origin}}),
        )
        .await
        .expect(201);

    let connect_path = format!("/projects/{id}/annotations/connect");
    let same = json!({"url": url}).to_string();
    let fetched = connect(&app, &usa, &connect_path, &bound["id"], "http", &same)
        .await
        .expect(200);
    assert_eq!(fetched["preview"][1], json!(["Hot soup.", "FOOD"]));
    let port = url.split(':').nth(2).unwrap().split('/').next().unwrap();
    for elsewhere in [
        format!("http://localhost:{port}/labeled.csv"),
        "http://attacker.example.org/collect".to_owned(),
    ] {
        let parameters = json!({"url": elsewhere}).to_string();
        let refused = connect(&app, &usa, &connect_path, &bound["id"], "http", &parameters)
            .await
            .expect_problem(422, "validation_failed");
        assert_eq!(refused["errors"][0]["field"], "parameters.url", "{refused}");
        assert!(refused["detail"].as_str().unwrap().contains(&origin), "{refused}");
    }
    app.post(
        &format!("/projects/{id}/groups"),
        &usa.token,
        json!({"name": "Elsewhere", "column_name": "text", "credential_id": bound["id"],
               "source": "http", "parameters": {"url": "http://attacker.example.org/collect"}}),
    )
    .await
    .expect_problem(422, "validation_failed");

    // A credential sealed before origins were named: its headers are sent nowhere.
    let old_secret = lector_sources::secret::HttpSecret {
        headers: BTreeMap::from([("X-Key".to_owned(), "k".to_owned())]),
        base_url: None,
    };
    let sealed = app
        .state
        .sources
        .seal(workspace, &lector_sources::CredentialSecret::Http(old_secret));
    let (_, scope) = app.state.store.principal(ada.user_id).await.unwrap().unwrap();
    let (target, _) = app
        .state
        .store
        .workspace_access(
            &scope,
            &lector_store::WorkspaceRef::Id(workspace),
            lector_core::Action::Manage,
        )
        .await
        .unwrap();
    let old = lector_store::NewCredential {
        name: "old".into(),
        source: lector_core::SourceKind::Http,
        sealed_secret: sealed,
    };
    let old = app.state.store.create_credential(&scope, &target, old).await.unwrap();
    let refused = connect(&app, &usa, &connect_path, &json!(old.id), "http", &same)
        .await
        .expect_problem(422, "validation_failed");
    assert!(
        refused["detail"].as_str().unwrap().contains("create it again"),
        "{refused}"
    );
    server.abort();
}
