//! Files through HTTPS on both backends: uploads for groups (every format, previews, the import
//! task), classes files, bad files (encoding, ragged rows, missing column, zip bomb, size),
//! tenancy of upload ids, the sweeper, and downloads that upload again.

use crate::common::TestApp;
use lector_text::{Format, Table};
use serde_json::{Value, json};
use std::time::Duration;

backend_tests!(
    every_format_uploads_and_fills_a_group,
    create_group_checks_columns_and_header_first,
    bad_files_are_refused_naming_the_place,
    uploads_over_the_limit_answer_413,
    upload_ids_belong_to_their_project,
    classes_files_add_all_or_nothing,
    downloads_upload_again,
    a_large_group_downloads_whole_in_every_format,
);

mod sweeping {
    use super::*;
    backend_tests!(
        unused_uploads_are_swept,
        blobs_no_row_references_are_swept,
        a_node_whose_sweeper_is_off_keeps_them
    );
}

fn table(header: &[&str], rows: &[&[&str]]) -> Table {
    Table {
        header: header.iter().map(|s| s.to_string()).collect(),
        rows: rows.iter().map(|r| r.iter().map(|s| s.to_string()).collect()).collect(),
    }
}

fn written(format: Format, table: &Table) -> Vec<u8> {
    let mut bytes = Vec::new();
    lector_text::write_table(format, table, &mut bytes).unwrap();
    bytes
}

async fn group_texts(app: &TestApp, token: &str, project_id: i64, group_id: &Value) -> Vec<Value> {
    app.get(
        &format!("/projects/{project_id}/groups/{group_id}/documents?details=meta,segments&limit=1000"),
        token,
    )
    .await
    .expect(200)
    .as_array()
    .unwrap()
    .clone()
}

async fn every_format_uploads_and_fills_a_group(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let id = app.project(&ada, "Files").await;
    let reviews = table(
        &["text", "stars"],
        &[
            &["Good food. Friendly staff.", "5"],
            &["Cafe\u{301} was cold.", "2"],
            &["Slow service.", "1"],
        ],
    );
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("reviews.csv", written(Format::Csv, &reviews)),
        ("reviews.json", written(Format::Json, &reviews)),
        ("reviews.jsonl", written(Format::Jsonl, &reviews)),
        ("reviews.xlsx", written(Format::Xlsx, &reviews)),
    ];
    for (name, bytes) in files {
        let body = json!({"name": name, "column_name": "text"});
        let (uploaded, group, task) = app.uploaded_group(&ada, id, name, &bytes, body).await;
        assert!(uploaded["id"].as_str().unwrap().len() == 36, "{uploaded}");
        assert_eq!(
            uploaded["preview"],
            json!([
                ["text", "stars"],
                ["Good food. Friendly staff.", "5"],
                ["Cafe\u{301} was cold.", "2"],
                ["Slow service.", "1"]
            ]),
            "{name}"
        );
        assert_eq!(task["status"], "DONE", "{task}");
        assert_eq!(
            (group["status"].as_str(), group["document_count"].as_i64()),
            (Some("CREATED"), Some(3))
        );
        assert_eq!(group["source"], "UPLOAD", "the original client's values");
        let documents = group_texts(&app, &ada.token, id, &group["id"]).await;
        assert_eq!(documents[1]["text"], "Caf\u{e9} was cold.", "NFC; {name}");
        assert_eq!(
            documents[0]["segments"].as_array().unwrap().len(),
            2,
            "split into sentences"
        );
        assert_eq!(
            documents[0]["meta"],
            json!({"stars": "5"}),
            "the other columns are meta"
        );
    }

    // TXT: one document per line, no header by default; the deprecated to_list is taken.
    let txt = b"first line. two sentences\nsecond line\n\nthird line\n";
    let uploaded = app
        .send_form(
            &format!("/projects/{id}/groups/upload"),
            &ada.token,
            "lines.txt",
            txt,
            &[("to_list", "false")],
        )
        .await
        .expect(200);
    let body = json!({"name": "lines", "file_id": uploaded["id"], "column": 0, "split": false});
    let (group, task) = app.group_from_file(&ada, id, body).await;
    assert_eq!(group["document_count"], 3, "{task}");
    let documents = group_texts(&app, &ada.token, id, &group["id"]).await;
    assert_eq!(documents[0]["text"], "first line. two sentences");
    assert_eq!(documents[0]["segments"].as_array().unwrap().len(), 1, "split: false");
    assert_eq!(documents[2]["text"], "third line", "blank lines are no documents");

    // Rows with a blank text are left out, counted, and the notification warns.
    let gaps = b"text,n\n,1\nkept,2\n  ,3\n";
    let (_, group, task) = app
        .uploaded_group(&ada, id, "gaps.csv", gaps, json!({"name": "gaps"}))
        .await;
    assert_eq!(group["document_count"], 1, "{task}");
    assert_eq!(task["result"]["rejected_rows"], 2, "{task}");
    let notes = app.get("/notifications", &ada.token).await.expect(200);
    assert!(notes.to_string().contains("WARNING"), "blank rows warn: {notes}");

    // A file named without a known extension is recognised from its content, or refused.
    let json_file = written(Format::Json, &reviews);
    app.upload_file(&ada, id, "export", &json_file).await.expect(200);
    app.upload_file(&ada, id, "notes.doc", b"plain words")
        .await
        .expect_problem(415, "unsupported_media_type");
    // Not a form at all.
    app.post(
        &format!("/projects/{id}/groups/upload"),
        &ada.token,
        json!({"file": "x"}),
    )
    .await
    .expect_problem(415, "unsupported_media_type");
}

async fn create_group_checks_columns_and_header_first(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let id = app.project(&ada, "Columns").await;
    let csv = b"id,review\n1,Tasty soup.\n2,Cold tea.\n";
    let uploaded = app.upload_file(&ada, id, "r.csv", csv).await.expect(200);
    let groups = format!("/projects/{id}/groups");
    let problem = app
        .post(
            &groups,
            &ada.token,
            json!({"name": "g", "file_id": uploaded["id"], "column_name": "comment"}),
        )
        .await
        .expect_problem(422, "validation_failed");
    assert!(problem["detail"].as_str().unwrap().contains("\"comment\""), "{problem}");
    app.post(
        &groups,
        &ada.token,
        json!({"name": "g", "file_id": uploaded["id"], "column": 5}),
    )
    .await
    .expect_problem(422, "validation_failed");
    app.post(
        &groups,
        &ada.token,
        json!({"name": "g", "file_id": uploaded["id"], "column": 1, "column_name": "review"}),
    )
    .await
    .expect_problem(422, "validation_failed");
    app.post(&groups, &ada.token, json!({"name": "g", "column": 1}))
        .await
        .expect_problem(422, "validation_failed");

    // The deprecated 0-based column, and header_first false taking the first row as data.
    let body = json!({"name": "all rows", "file_id": uploaded["id"], "column": 1, "header_first": false});
    let (group, _) = app.group_from_file(&ada, id, body).await;
    assert_eq!(group["document_count"], 3);
    let documents = group_texts(&app, &ada.token, id, &group["id"]).await;
    assert_eq!(documents[0]["text"], "review");
    assert_eq!(documents[0]["meta"], json!({"0": "id"}));
}

async fn bad_files_are_refused_naming_the_place(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let id = app.project(&ada, "Bad").await;
    // Latin-1, not UTF-8.
    let problem = app
        .upload_file(&ada, id, "latin.csv", b"text\n\xe4pfel\n")
        .await
        .expect_problem(422, "validation_failed");
    assert!(problem["detail"].as_str().unwrap().contains("line 2"), "{problem}");
    assert!(problem["detail"].as_str().unwrap().contains("UTF-8"), "{problem}");
    // A ragged row within the preview.
    let problem = app
        .upload_file(&ada, id, "ragged.csv", b"a,b\n1,2\n3\n")
        .await
        .expect_problem(422, "validation_failed");
    assert!(problem["detail"].as_str().unwrap().contains("line 3"), "{problem}");
    // Broken JSON and an XLSX that is no zip.
    app.upload_file(&ada, id, "broken.json", b"[{\"text\": \"a\"},")
        .await
        .expect_problem(422, "validation_failed");
    let problem = app
        .upload_file(&ada, id, "fake.xlsx", b"not a workbook")
        .await
        .expect_problem(422, "validation_failed");
    assert!(problem["detail"].as_str().unwrap().contains("XLSX"), "{problem}");

    // A zip bomb: 64 MiB of zeros in a few tens of KiB, refused from the zip directory, fast.
    let bomb = {
        use std::io::Write;
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        zip.start_file("xl/worksheets/sheet1.xml", options).unwrap();
        let zeros = vec![b'0'; 1 << 20];
        for _ in 0..64 {
            zip.write_all(&zeros).unwrap();
        }
        zip.finish().unwrap().into_inner()
    };
    assert!(bomb.len() < 512 * 1024);
    let started = std::time::Instant::now();
    let problem = app
        .upload_file(&ada, id, "bomb.xlsx", &bomb)
        .await
        .expect_problem(413, "payload_too_large");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
    assert!(
        problem["detail"].as_str().unwrap().contains("compression ratio"),
        "{problem}"
    );

    // A ragged row past the preview is refused at the upload too, with the line named: the
    // file is read whole then, so its import cannot fail halfway and leave half a group.
    let mut csv = String::from("text,n\n");
    for n in 0..2500 {
        csv.push_str(&format!("row {n},{n}\n"));
    }
    let good = csv.clone();
    csv.push_str("short row\n");
    let problem = app
        .upload_file(&ada, id, "late.csv", csv.as_bytes())
        .await
        .expect_problem(422, "validation_failed");
    assert!(problem["detail"].as_str().unwrap().contains("line 2502"), "{problem}");
    // No refused file is kept: of the uploads, good.csv alone has bytes in the blob store.
    app.upload_file(&ada, id, "good.csv", good.as_bytes()).await.expect(200);
    assert_eq!(blob_files(&app), 1, "only good.csv is kept");
}

async fn uploads_over_the_limit_answer_413(app: TestApp) {
    let Some(app) = TestApp::start_with(backend_of(&app), |c| c.uploads.max_bytes = 10_000).await else {
        return;
    };
    let ada = app.register("ada@example.org").await;
    let id = app.project(&ada, "Limits").await;
    let mut csv = String::from("text\n");
    while csv.len() <= 10_000 {
        csv.push_str("a row of text\n");
    }
    app.upload_file(&ada, id, "big.csv", csv.as_bytes())
        .await
        .expect_problem(413, "payload_too_large");
    app.upload_file(&ada, id, "small.csv", &csv.as_bytes()[..9_000])
        .await
        .expect(200);
    assert_eq!(blob_files(&app), 1, "the refused file is not kept");
    // A model file is bounded by the same limit, and told so.
    let refused = app
        .upload_model(&ada.token, csv.as_bytes(), &[])
        .await
        .expect_problem(413, "payload_too_large");
    assert!(
        refused["detail"]
            .as_str()
            .unwrap()
            .contains("limit of 10000 bytes (uploads.max_bytes)"),
        "{refused}"
    );

    // A body over the server's own limit is refused naming that limit.
    let Some(app) = TestApp::start_with(backend_of(&app), |c| c.max_body_bytes = 10_000).await else {
        return;
    };
    let ada = app.register("ada@example.org").await;
    let id = app.project(&ada, "Limits").await;
    let refused = app
        .upload_file(&ada, id, "big.csv", csv.as_bytes())
        .await
        .expect_problem(413, "payload_too_large");
    let detail = refused["detail"].as_str().unwrap();
    assert!(detail.contains("limit of 10000 bytes (max_body_bytes)"), "{refused}");
}

/// The backend of an app, for starting a second one with another configuration.
fn backend_of(app: &TestApp) -> crate::common::Backend {
    match app.state.store.backend() {
        lector_store::Backend::Sqlite => crate::common::Backend::Sqlite,
        lector_store::Backend::Postgres => crate::common::Backend::Postgres,
    }
}

/// A second app like `app` whose sweeper runs every second and takes uploads unused for a second.
async fn sweeping_app(app: &TestApp) -> Option<TestApp> {
    TestApp::start_with(backend_of(app), |c| {
        c.uploads.unused_ttl_secs = 1;
        c.uploads.sweep_every_secs = 1;
    })
    .await
}

/// Polls `done` every 100 ms until it holds or 10 s have passed (the caller asserts after).
async fn wait_until(done: impl Fn() -> bool) {
    for _ in 0..100 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Files in the blob folder of the app's data directory.
fn blob_files(app: &TestApp) -> usize {
    let dir = app.data_dir.path().join("blobs").join("uploads");
    std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0)
}

async fn upload_ids_belong_to_their_project(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let bob = app.register("bob@example.org").await;
    let mine = app.project(&ada, "Mine").await;
    let other = app.project(&ada, "Other").await;
    let bobs = app.project(&bob, "Bob's").await;
    let uploaded = app.upload_file(&ada, mine, "r.csv", b"text\nhello\n").await.expect(200);
    let body = json!({"name": "g", "file_id": uploaded["id"]});
    // Another workspace: its member sees nothing, neither through its own project nor through ada's.
    app.post(&format!("/projects/{bobs}/groups"), &bob.token, body.clone())
        .await
        .expect_problem(404, "not_found");
    app.post(&format!("/projects/{mine}/groups"), &bob.token, body.clone())
        .await
        .expect_problem(404, "not_found");
    app.upload_file(&bob, mine, "r.csv", b"text\nhello\n")
        .await
        .expect_problem(404, "not_found");
    // Another project of the same workspace does not see it either.
    app.post(&format!("/projects/{other}/groups"), &ada.token, body.clone())
        .await
        .expect_problem(404, "not_found");
    let random = json!({"name": "g", "file_id": "6f1c1d52-0b7e-4b1e-9d5e-2d2f3c4b5a69"});
    app.post(&format!("/projects/{mine}/groups"), &ada.token, random)
        .await
        .expect_problem(404, "not_found");
    let (group, _) = app.group_from_file(&ada, mine, body).await;
    assert_eq!(group["document_count"], 1);
}

async fn classes_files_add_all_or_nothing(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let id = app.project(&ada, "Classes").await;
    let path = format!("/projects/{id}/classes/upload");
    let classes = table(
        &["name", "example", "description"],
        &[&["food", "The soup", "About dishes"], &["service", "", "About staff"]],
    );
    let added = app
        .send_form(&path, &ada.token, "classes.xlsx", &written(Format::Xlsx, &classes), &[])
        .await
        .expect(200);
    assert_eq!(added.as_array().unwrap().len(), 2, "{added}");
    assert_eq!(
        (added[0]["name"].as_str(), added[0]["example"].as_str()),
        (Some("food"), Some("The soup"))
    );
    // TXT: one name per line, an optional `name` header; JSON and JSONL by keys. A name may be
    // what a column is called ("0", the one column of a TXT file).
    app.send_form(&path, &ada.token, "more.txt", b"name\nprice\nambience\n0\n", &[])
        .await
        .expect(200);
    app.send_form(
        &path,
        &ada.token,
        "more.jsonl",
        b"{\"name\": \"drinks\", \"description\": \"Wine\"}\n",
        &[],
    )
    .await
    .expect(200);
    app.send_form(&path, &ada.token, "more.json", b"[{\"name\": \"location\"}]", &[])
        .await
        .expect(200);
    let all = app
        .get(&format!("/projects/{id}/classes"), &ada.token)
        .await
        .expect(200);
    assert_eq!(all.as_array().unwrap().len(), 7, "{all}");

    // Any problem adds nothing: a blank name (line named), a duplicate, an existing class.
    let problem = app
        .send_form(&path, &ada.token, "bad.csv", b"name,description\nnew one,x\n,y\n", &[])
        .await
        .expect_problem(422, "validation_failed");
    assert!(problem["detail"].as_str().unwrap().contains("line 3"), "{problem}");
    let problem = app
        .send_form(
            &path,
            &ada.token,
            "bad.xlsx",
            &written(Format::Xlsx, &table(&["name"], &[&["x"], &["x"]])),
            &[],
        )
        .await
        .expect_problem(422, "validation_failed");
    assert!(problem["detail"].as_str().unwrap().contains("cell A3"), "{problem}");
    let problem = app
        .send_form(&path, &ada.token, "nohead.csv", b"label,description\nx,y\n", &[])
        .await
        .expect_problem(422, "validation_failed");
    assert!(problem["detail"].as_str().unwrap().contains("\"name\""), "{problem}");
    app.send_form(&path, &ada.token, "dup.csv", b"name\nbrand new\nfood\n", &[])
        .await
        .expect_problem(409, "conflict");
    let all = app
        .get(&format!("/projects/{id}/classes"), &ada.token)
        .await
        .expect(200);
    assert_eq!(all.as_array().unwrap().len(), 7, "nothing was added: {all}");
    // A USER may not add classes: refused before the file is read (a broken file is 403 too).
    let bob = app.register("bob@example.org").await;
    let workspace = app.default_workspace_id(&ada).await;
    app.add_member(&ada.token, workspace, bob.user_id, "USER")
        .await
        .expect(200);
    app.send_form(
        &path,
        &bob.token,
        "bad.csv",
        b"name,description
,y
",
        &[],
    )
    .await
    .expect_problem(403, "forbidden");
    assert_eq!(blob_files(&app), 0, "classes files are not kept");
}

async fn downloads_upload_again(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let id = app.project(&ada, "Round trip").await;
    let csv = "text,stars\n\"Good, really good.\",5\n\u{627}\u{644}\u{62e}\u{62f}\u{645}\u{629} \u{633}\u{64a}\u{626}\u{629},1\n";
    let body = json!({"name": "source", "column_name": "text"});
    let (_, group, _) = app.uploaded_group(&ada, id, "r.csv", csv.as_bytes(), body).await;
    let original = group_texts(&app, &ada.token, id, &group["id"]).await;
    app.send_form(
        &format!("/projects/{id}/classes/upload"),
        &ada.token,
        "c.csv",
        b"name,example,description\nfood,soup,dishes\nservice,,\n",
        &[],
    )
    .await
    .expect(200);
    app.add_labels(&ada, id, &["positive"]).await;

    for (format, content_type) in [
        ("csv", "text/csv; charset=utf-8"),
        ("json", "application/json"),
        ("jsonl", "application/x-ndjson"),
        (
            "xlsx",
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        ),
    ] {
        // The group, uploaded again into a new group of the same texts and meta.
        let (kind, disposition, bytes) = app
            .download(
                &ada.token,
                &format!("/projects/{id}/groups/{}/download?format={format}", group["id"]),
            )
            .await;
        assert_eq!(kind, content_type);
        assert_eq!(
            disposition,
            format!("attachment; filename=\"group-{}.{format}\"", group["id"])
        );
        let body = json!({"name": format!("copy {format}"), "column_name": "text"});
        let (again, copy, _) = app.uploaded_group(&ada, id, &format!("g.{format}"), &bytes, body).await;
        assert_eq!(again["preview"][0], json!(["id", "text", "stars"]), "{format}");
        let copied = group_texts(&app, &ada.token, id, &copy["id"]).await;
        let texts = |docs: &[Value]| {
            docs.iter()
                .map(|d| (d["text"].clone(), d["meta"]["stars"].clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(texts(&copied), texts(&original), "{format}");

        // The classes, uploaded again into a fresh project.
        let (_, _, bytes) = app
            .download(&ada.token, &format!("/projects/{id}/classes/download?format={format}"))
            .await;
        let fresh = app.project(&ada, &format!("Fresh {format}")).await;
        let added = app
            .send_form(
                &format!("/projects/{fresh}/classes/upload"),
                &ada.token,
                &format!("c.{format}"),
                &bytes,
                &[],
            )
            .await
            .expect(200);
        let fields = |v: &Value| {
            v.as_array()
                .unwrap()
                .iter()
                .map(|c| (c["name"].clone(), c["example"].clone(), c["description"].clone()))
                .collect::<Vec<_>>()
        };
        let before = app
            .get(&format!("/projects/{id}/classes"), &ada.token)
            .await
            .expect(200);
        assert_eq!(fields(&added), fields(&before), "{format}");
    }
    let (kind, _, bytes) = app
        .download(&ada.token, &format!("/projects/{id}/labels/download"))
        .await;
    assert_eq!(kind, "text/csv; charset=utf-8", "csv by default");
    assert_eq!(String::from_utf8(bytes).unwrap(), "name\npositive\n");
    app.get(&format!("/projects/{id}/labels/download?format=pdf"), &ada.token)
        .await
        .expect_problem(400, "invalid_parameter");
    let bob = app.register("bob@example.org").await;
    app.get(&format!("/projects/{id}/classes/download"), &bob.token)
        .await
        .expect_problem(404, "not_found");
}

async fn unused_uploads_are_swept(app: TestApp) {
    let Some(app) = sweeping_app(&app).await else {
        return;
    };
    let ada = app.register("ada@example.org").await;
    let id = app.project(&ada, "Sweep").await;
    let unused = app.upload_file(&ada, id, "a.csv", b"text\nunused\n").await.expect(200);
    app.uploaded_group(&ada, id, "b.csv", b"text\nused\n", json!({"name": "kept"}))
        .await;
    assert_eq!(blob_files(&app), 2);
    wait_until(|| blob_files(&app) == 1).await;
    assert_eq!(blob_files(&app), 1, "the unused upload was swept, bytes and all");
    app.post(
        &format!("/projects/{id}/groups"),
        &ada.token,
        json!({"name": "late", "file_id": unused["id"]}),
    )
    .await
    .expect_problem(404, "not_found");
    // A project's deletion takes its uploads, used or not, at the next sweep.
    app.delete(&format!("/projects/{id}"), &ada.token).await.expect(200);
    wait_until(|| blob_files(&app) == 0).await;
    assert_eq!(blob_files(&app), 0);
}

/// `uploads.sweep_every_secs = 0` turns a node's sweeper off (a restored copy beside production,
/// or every node but the one chosen to sweep): an unused upload stays past its time.
async fn a_node_whose_sweeper_is_off_keeps_them(app: TestApp) {
    let Some(app) = TestApp::start_with(backend_of(&app), |c| {
        c.uploads.unused_ttl_secs = 1;
        c.uploads.sweep_every_secs = 0;
    })
    .await
    else {
        return;
    };
    let ada = app.register("ada@example.org").await;
    let id = app.project(&ada, "Kept").await;
    app.upload_file(&ada, id, "a.csv", b"text\nunused\n").await.expect(200);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(blob_files(&app), 1, "nothing swept the upload");
}

/// Blobs left without their row (a crash between writing a file and its row) go at a sweep once
/// they are an hour old; blobs rows reference (a used upload, a model's artifact), younger ones
/// and files of other shapes stay.
async fn blobs_no_row_references_are_swept(app: TestApp) {
    let Some(app) = sweeping_app(&app).await else {
        return;
    };
    let ada = app.register("ada@example.org").await;
    let (project, _) = crate::common::tickets::labeled_tickets(&app, &ada, "Kept").await;
    let model = app.train_model(&ada, project, json!({"display_name": "Kept"})).await;
    assert_eq!(model["status"], "READY", "{model}");
    let (used, _, _) = app
        .uploaded_group(&ada, project, "b.csv", b"text\nused\n", json!({"name": "kept"}))
        .await;

    let blobs = app.data_dir.path().join("blobs");
    let files_under = |dir: &str| -> Vec<String> {
        let mut found: Vec<String> = crate::common::files_under(&blobs.join(dir))
            .into_iter()
            .map(|p| p.strip_prefix(&blobs).unwrap().display().to_string())
            .collect();
        found.sort();
        found
    };
    let (kept_uploads, kept_models) = (files_under("uploads"), files_under("models"));
    assert_eq!(kept_uploads, [format!("uploads/{}", used["id"].as_str().unwrap())]);
    assert_eq!(kept_models.len(), 1, "{kept_models:?}");
    let stray = uuid::Uuid::new_v4();
    let orphans = [
        format!("uploads/{}", uuid::Uuid::new_v4()),
        format!("models/{stray}/job-99.lector-model"),
        // Half-written by a write a crash stopped (listings skip them).
        format!("uploads/{}#1", uuid::Uuid::new_v4()),
        format!("{}#2", kept_models[0]),
    ];
    let foreign = ["uploads/notes.txt", "backups/2026-11-25.tar"];
    let two_hours_ago = std::time::SystemTime::now() - Duration::from_secs(2 * 3600);
    for path in orphans.iter().map(String::as_str).chain(foreign) {
        let file = blobs.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, b"left behind").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&file)
            .and_then(|f| f.set_modified(two_hours_ago))
            .unwrap();
    }
    // Written a moment ago, as a blob whose row is still being written is: the grace period is
    // an hour at least, however short `uploads.unused_ttl_secs` is.
    let fresh = [
        format!("uploads/{}", uuid::Uuid::new_v4()),
        format!("uploads/{}#1", uuid::Uuid::new_v4()),
    ];
    for path in &fresh {
        std::fs::write(blobs.join(path), b"being written").unwrap();
    }
    let gone = || orphans.iter().all(|o| !blobs.join(o).exists());
    wait_until(gone).await;
    assert!(gone(), "the orphans were swept: {:?}", files_under(""));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(fresh.iter().all(|f| blobs.join(f).exists()), "{:?}", files_under(""));
    let mut expected_uploads = kept_uploads.clone();
    expected_uploads.extend(fresh.iter().cloned());
    expected_uploads.push("uploads/notes.txt".into());
    expected_uploads.sort();
    assert_eq!(files_under("uploads"), expected_uploads);
    assert_eq!(files_under("models"), kept_models);
    assert!(blobs.join("backups/2026-11-25.tar").exists());
    // The model still predicts from its artifact.
    let analysed = crate::common::tickets::analyze(&app, &ada, &model["id"], &["I was charged twice."]).await;
    assert_eq!(
        crate::common::tickets::top_classes(&analysed),
        [Some("billing".to_owned())]
    );
}

/// A group of 20,000 documents downloads whole in every format (CSV, JSON and JSONL written row
/// by row as they are read, XLSX built whole), with the same rows in each: the header has a meta
/// key that only late rows carry.
async fn a_large_group_downloads_whole_in_every_format(app: TestApp) {
    const DOCUMENTS: usize = 20_000;
    let ada = app.register("ada@example.org").await;
    let id = app.project(&ada, "Large").await;
    let mut csv = String::from("text,source,note\n");
    for i in 0..DOCUMENTS {
        let note = if i % 1000 == 999 {
            format!("late {i}")
        } else {
            String::new()
        };
        csv.push_str(&format!("Review number {i}.,web,{note}\n"));
    }
    let body = json!({"name": "large", "column_name": "text"});
    let (_, group, task) = app.uploaded_group(&ada, id, "large.csv", csv.as_bytes(), body).await;
    assert_eq!(task["status"], "DONE", "{task}");
    assert_eq!(group["document_count"], DOCUMENTS as i64);
    let mut tables = Vec::new();
    for format in [Format::Csv, Format::Json, Format::Jsonl, Format::Xlsx] {
        let name = format!("{format:?}").to_lowercase();
        let (_, disposition, bytes) = app
            .download(
                &ada.token,
                &format!("/projects/{id}/groups/{}/download?format={name}", group["id"]),
            )
            .await;
        assert!(disposition.ends_with(&format!(".{name}\"")), "{disposition}");
        let options = lector_text::ReadOptions { header_first: true };
        let table = lector_text::read_table(format, &bytes[..], options, &lector_text::Limits::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(table.header, ["id", "text", "source", "note"], "{name}");
        assert_eq!(table.rows.len(), DOCUMENTS, "{name}");
        tables.push(table);
    }
    let csv_table: &Table = &tables[0];
    let ids: Vec<i64> = csv_table.rows.iter().map(|r| r[0].parse().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "in id order, none twice");
    for (i, row) in csv_table.rows.iter().enumerate() {
        assert_eq!(row[1], format!("Review number {i}."));
        let note = if i % 1000 == 999 {
            format!("late {i}")
        } else {
            String::new()
        };
        assert_eq!(row[3], note);
    }
    for table in &tables[1..] {
        assert_eq!(table, csv_table, "the same rows in every format");
    }
}
