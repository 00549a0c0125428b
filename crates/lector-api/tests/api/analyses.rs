//! Batch analyses through HTTPS on both backends: a 1,000-row CSV analysed by a trained model
//! (every document tagged, filters, paging, one notification, the download uploaded again as
//! a labeling session), analyses of texts and of an existing group, and every analysis
//! operation with its role limits, tenancy and immutable fields.

use crate::common::{Session, TestApp};
use serde_json::{Value, json};

backend_tests!(
    batch_analysis_of_a_file_story,
    analyses_follow_roles_and_tenancy,
    a_page_of_analyses_holds_a_bounded_vocabulary
);

const TOPICS: [(&str, [&str; 6]); 3] = [
    (
        "billing",
        [
            "invoice is wrong",
            "was charged twice",
            "refund the payment",
            "bill is too high",
            "extra fee on my bill",
            "credit card was charged",
        ],
    ),
    (
        "login",
        [
            "cannot log in",
            "password reset fails",
            "account is locked",
            "sign in does not work",
            "forgot my password",
            "verification code never arrives",
        ],
    ),
    (
        "shipping",
        [
            "package has not arrived",
            "delivery is late",
            "parcel arrived damaged",
            "tracking shows nothing",
            "courier lost the parcel",
            "order was never shipped",
        ],
    ),
];

/// A CLASS project with a READY model trained on tickets; answers (project, model id).
async fn trained_tickets(app: &TestApp, owner: &Session) -> (i64, i64) {
    let project = app
        .project_with_classes(owner, "Tickets", "CLASS", &["billing", "login", "shipping"])
        .await;
    let mut documents = Vec::new();
    for (class, phrases) in TOPICS {
        for (i, phrase) in phrases.iter().enumerate() {
            for opener in ["Hello, my", "Sadly my", "Why is it that my"] {
                documents.push(json!({"text": format!("{opener} {phrase} again ({i})."), "tags": [{"class": class}]}));
            }
        }
    }
    app.labeled_session(owner, project, "Tickets", documents).await;
    let model = app
        .train_model(owner, project, json!({"display_name": "Tickets"}))
        .await;
    assert_eq!(model["status"], "READY", "{model}");
    (project, model["id"].as_i64().unwrap())
}

/// Waits for an analysis's job; answers the analysis as get_analysis gives it.
async fn finished(app: &TestApp, who: &Session, created: &Value) -> Value {
    assert_eq!(created["status"], "QUEUED", "{created}");
    let project = created["project_id"].as_i64().unwrap();
    let task = app
        .wait_for_task(&who.token, project, created["task_id"].as_i64().unwrap())
        .await;
    assert_eq!(task["status"], "DONE", "{task}");
    app.get(&format!("/analyses/{}", created["id"]), &who.token)
        .await
        .expect(200)
}

async fn batch_analysis_of_a_file_story(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let (project, model) = trained_tickets(&app, &ada).await;
    let mut csv = String::from("ticket,text\n");
    for n in 0..1000 {
        let (_, phrases) = TOPICS[n % 3];
        csv.push_str(&format!(
            "{n},\"Dear team, my {} since Monday. Ticket {n}.\"\n",
            phrases[n % 6]
        ));
    }
    // Two rows without a text: left out, and the notice says so.
    csv.push_str("1000,\n1001,\"  \"\n");
    let upload = app
        .send_form("/analyses/upload", &ada.token, "tickets.csv", csv.as_bytes(), &[])
        .await
        .expect(200);
    assert_eq!(upload["preview"][0], json!(["ticket", "text"]));
    // No column named: the one called text is read, not the first (the ticket numbers).
    let created = app
        .post(
            "/analyses",
            &ada.token,
            json!({"model_id": model, "name": "Monday", "file_id": upload["id"]}),
        )
        .await
        .expect(201);
    let analysis = finished(&app, &ada, &created).await;
    assert_eq!(analysis["status"], "FINISHED", "{analysis}");
    assert_eq!(analysis["document_count"], 1000);
    assert_eq!(analysis["progress"], 1.0);
    app.settle_jobs(std::time::Duration::from_secs(30)).await;
    let notices = app.notifications(&ada).await;
    let told = notices
        .iter()
        .find(|n| n["title"] == "Analysis finished")
        .expect("a notice");
    assert_eq!(told["type"], "WARNING", "{told}");
    assert!(
        told["text"]
            .as_str()
            .unwrap()
            .ends_with("2 rows were with an empty text left out."),
        "{told}"
    );
    assert_eq!(analysis["type"], "CLASS");
    assert_eq!(analysis["classes"].as_array().unwrap().len(), 3);
    let id = analysis["id"].as_i64().unwrap();
    // The texts became documents of a group of the analysis's own, served as ANALYSIS.
    let group = app
        .get(
            &format!("/projects/{project}/groups/{}", analysis["document_group_id"]),
            &ada.token,
        )
        .await
        .expect(200);
    assert_eq!(group["source"], "ANALYSIS");

    // Every document tagged, and mostly with its own topic.
    let mut right = 0;
    let mut tallied = std::collections::BTreeMap::<String, i64>::new();
    let mut offset = 0;
    loop {
        let page = app
            .get(
                &format!("/analyses/{id}/documents?details=segments,meta,tags&offset={offset}&limit=1000"),
                &ada.token,
            )
            .await
            .expect(200);
        assert_eq!(page["count"], 1000);
        for document in page["documents"].as_array().unwrap() {
            let n: usize = document["meta"]["ticket"].as_str().unwrap().parse().unwrap();
            assert!(
                document["text"].as_str().unwrap().starts_with("Dear team"),
                "{document}"
            );
            let tags: Vec<&str> = document["segments"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|s| s["tags"].as_array().unwrap())
                .map(|t| t["class"].as_str().unwrap())
                .collect();
            assert!(!tags.is_empty(), "document {n} has no tags: {document}");
            right += usize::from(tags.contains(&TOPICS[n % 3].0));
            for tag in &tags {
                *tallied.entry((*tag).to_owned()).or_default() += 1;
            }
        }
        if page["has_more"] == false {
            break;
        }
        offset += 1000;
    }
    assert!(right >= 900, "{right} of 1000 documents got their topic");
    // The analysis counts its tags over all its documents, most first; none while it ran.
    assert!(created.get("tag_counts").is_none(), "{created}");
    let counted: Vec<(String, i64)> = analysis["tag_counts"]["classes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap().to_owned(), c["count"].as_i64().unwrap()))
        .collect();
    assert!(counted.windows(2).all(|w| w[0].1 >= w[1].1), "{counted:?}");
    assert_eq!(
        counted.into_iter().collect::<std::collections::BTreeMap<_, _>>(),
        tallied
    );
    assert_eq!(analysis["tag_counts"]["labels"], json!([]));

    // Filters: by class id, by text, and paging.
    let billing = app.class_id(&ada.token, project, "billing").await;
    let page = app
        .get(
            &format!("/analyses/{id}/documents?classes={billing}&details=tags&limit=5"),
            &ada.token,
        )
        .await
        .expect(200);
    assert_eq!(page["documents"].as_array().unwrap().len(), 5);
    assert_eq!(page["count"], 5, "count is the page's, as in every paged list");
    assert_eq!(page["has_more"], true);
    for document in page["documents"].as_array().unwrap() {
        assert!(document.to_string().contains("\"billing\""), "{document}");
    }
    let all_billed = app
        .get(
            &format!("/analyses/{id}/documents?classes={billing}&limit=1000"),
            &ada.token,
        )
        .await
        .expect(200);
    assert_eq!(all_billed["has_more"], false);
    let billed = all_billed["count"].as_i64().unwrap();
    assert_eq!(Some(billed as usize), all_billed["documents"].as_array().map(Vec::len));
    assert!((300..=400).contains(&billed), "{billed} documents tagged billing");
    let page = app
        .get(&format!("/analyses/{id}/documents?search=ticket%20999."), &ada.token)
        .await
        .expect(200);
    assert_eq!(page["count"], 1);
    assert!(
        page["documents"][0].get("segments").is_none(),
        "no details unless asked"
    );
    // A query parameter out of shape is 400, as every other one.
    let problem = app
        .get(&format!("/analyses/{id}/documents?classes=x"), &ada.token)
        .await
        .expect_problem(400, "invalid_parameter");
    assert_eq!(problem["errors"][0]["field"], "classes", "{problem}");
    // A document edited after the analysis loses what the model said of its old sentences:
    // it no longer turns up under a class none of its segments carries.
    let edited = all_billed["documents"][0]["id"].as_i64().unwrap();
    app.put(
        &format!("/projects/{project}/documents/{edited}"),
        &ada.token,
        json!({"text": "Nothing to see here."}),
    )
    .await
    .expect(200);
    let after = app
        .get(
            &format!("/analyses/{id}/documents?classes={billing}&limit=1000"),
            &ada.token,
        )
        .await
        .expect(200);
    assert_eq!(after["count"].as_i64(), Some(billed - 1));
    assert!(after["documents"].as_array().unwrap().iter().all(|d| d["id"] != edited));

    // One notification for the analysis.
    assert_eq!(app.notified(&ada, "Analysis finished").await, 1);

    // The download uploads again as a labeling session with the tags by name.
    let (content_type, _, bytes) = app
        .download(&ada.token, &format!("/analyses/{id}/documents/download?format=csv"))
        .await;
    assert!(content_type.starts_with("text/csv"), "{content_type}");
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(
        text.starts_with("document,segment,text,class,label,part,annotated,confidence"),
        "{text:.200}"
    );
    // Without `show_preview`, the upload becomes a session at once (its job fills it).
    let session = app
        .send_form(
            &format!("/projects/{project}/annotations/upload"),
            &ada.token,
            "analysis.csv",
            &bytes,
            &[],
        )
        .await
        .expect(200);
    app.wait_for_task(&ada.token, project, session["task_id"].as_i64().unwrap())
        .await;
    let session = app
        .get(
            &format!("/projects/{project}/annotations/{}", session["id"]),
            &ada.token,
        )
        .await
        .expect(200);
    assert_eq!(session["document_count"], 1000, "{session}");
    for format in ["json", "jsonl", "xlsx"] {
        let (_, _, bytes) = app
            .download(
                &ada.token,
                &format!("/analyses/{id}/documents/download?format={format}"),
            )
            .await;
        assert!(bytes.len() > 1000, "{format}");
    }

    // What an analysis found outlives its model.
    let found = format!("/analyses/{id}/documents?details=tags&limit=50");
    let (before, page_before) = (
        app.get(&format!("/analyses/{id}"), &ada.token).await.expect(200),
        app.get(&found, &ada.token).await.expect(200),
    );
    app.delete(&format!("/projects/{project}/models/{model}"), &ada.token)
        .await
        .expect(200);
    let kept = app.get(&format!("/analyses/{id}"), &ada.token).await.expect(200);
    assert_eq!(kept["tag_counts"], before["tag_counts"], "{kept}");
    assert_eq!(app.get(&found, &ada.token).await.expect(200), page_before);
}

async fn analyses_follow_roles_and_tenancy(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let (project, model) = trained_tickets(&app, &ada).await;
    let texts = json!([
        {"text": "My invoice is wrong. The courier lost the parcel.", "id": "a-1"},
        {"text": "I cannot log in since Monday.", "id": 2}
    ]);
    let created = app
        .post("/analyses", &ada.token, json!({"model_id": model, "documents": texts}))
        .await
        .expect(201);
    let analysis = finished(&app, &ada, &created).await;
    assert_eq!(analysis["document_count"], 2);
    let id = analysis["id"].as_i64().unwrap();
    let page = app
        .get(
            &format!("/analyses/{id}/documents?details=segments,meta,tags"),
            &ada.token,
        )
        .await
        .expect(200);
    let first = &page["documents"][0];
    assert_eq!(first["meta"]["external_id"], "a-1");
    assert_eq!(first["segments"].as_array().unwrap().len(), 2, "split into sentences");
    assert!(first["segments"][0]["tags"].is_array(), "{first}");
    // Each segment carries its id, as the document's own segments do.
    let document = app
        .get(
            &format!("/projects/{project}/documents/{}?details=segments", first["id"]),
            &ada.token,
        )
        .await
        .expect(200);
    let ids = |segments: &Value| -> Vec<i64> {
        segments
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_i64().expect("an id"))
            .collect()
    };
    assert_eq!(ids(&first["segments"]), ids(&document["segments"]), "{document}");

    // details names the parts, as for every document list.
    let parts = |query: &'static str| {
        let (app, token) = (&app, ada.token.clone());
        async move {
            let page = app
                .get(&format!("/analyses/{id}/documents?details={query}"), &token)
                .await
                .expect(200);
            let first = page["documents"][0].clone();
            let segment = first["segments"][0].clone();
            (
                first.get("meta").is_some(),
                first.get("segments").is_some(),
                segment.get("tags").is_some(),
            )
        }
    };
    let one = app
        .get(&format!("/analyses/{id}/documents?limit=1"), &ada.token)
        .await
        .expect(200);
    assert_eq!((&one["count"], &one["has_more"]), (&json!(1), &json!(true)), "{one}");
    let rest = app
        .get(&format!("/analyses/{id}/documents?offset=1&limit=1"), &ada.token)
        .await
        .expect(200);
    assert_eq!(
        (&rest["count"], &rest["has_more"]),
        (&json!(1), &json!(false)),
        "{rest}"
    );
    assert_eq!(parts("segments,tags").await, (false, true, true));
    assert_eq!(parts("segments").await, (false, true, false));
    assert_eq!(parts("tags").await, (false, true, true));
    assert_eq!(parts("meta").await, (true, false, false));
    assert_eq!(parts("").await, (false, false, false));
    app.get(&format!("/analyses/{id}/documents?details=true"), &ada.token)
        .await
        .expect_problem(400, "invalid_parameter");

    // The project's analyses answer their first documents with details.
    let listed = app
        .get(
            &format!("/projects/{project}/analyses?details=segments,tags"),
            &ada.token,
        )
        .await
        .expect(200);
    let documents = &listed[0]["documents"];
    assert_eq!(documents.as_array().map(Vec::len), Some(2), "{listed}");
    assert!(documents[0]["segments"][0]["tags"].is_array(), "{listed}");
    assert!(documents[0].get("meta").is_none(), "{listed}");
    let plain = app
        .get(&format!("/projects/{project}/analyses"), &ada.token)
        .await
        .expect(200);
    assert!(plain[0].get("documents").is_none(), "{plain}");
    app.get(&format!("/projects/{project}/analyses?details=stats"), &ada.token)
        .await
        .expect_problem(400, "invalid_parameter");

    // An existing group, analysed again with the same model.
    let again = app
        .post(
            "/analyses",
            &ada.token,
            json!({"model_id": model, "document_group_id": analysis["document_group_id"], "name": "Again"}),
        )
        .await
        .expect(201);
    assert!(again["classes"].is_array() && again["labels"].is_array(), "{again}");
    let again = finished(&app, &ada, &again).await;
    assert_eq!(again["document_count"], 2);
    let listed = app
        .get(&format!("/analyses?model={model}"), &ada.token)
        .await
        .expect(200);
    assert_eq!(listed.as_array().unwrap().len(), 2);
    let by_model = app
        .get(&format!("/models/{model}/analyses"), &ada.token)
        .await
        .expect(200);
    assert_eq!(by_model["count"], 2);
    // Every answer of an analysis names its project's classes and labels, as `get_analysis`
    // does (the original client reads them from lists too).
    let single = app.get(&format!("/analyses/{id}"), &ada.token).await.expect(200);
    assert!(single["classes"].as_array().is_some_and(|c| !c.is_empty()), "{single}");
    for answer in [&listed[0], &by_model["analyses"][0], &plain[0]] {
        assert_eq!(
            (&answer["classes"], &answer["labels"]),
            (&single["classes"], &single["labels"]),
            "{answer}"
        );
    }

    // Bad requests, each field named.
    app.post("/analyses", &ada.token, json!({"documents": texts}))
        .await
        .expect_problem(422, "validation_failed");
    app.post(
        "/analyses",
        &ada.token,
        json!({"model_id": model, "documents": texts, "document_group_id": 1}),
    )
    .await
    .expect_problem(422, "validation_failed");
    app.post(
        "/analyses",
        &ada.token,
        json!({"model_id": model, "documents": [], "column": 1}),
    )
    .await
    .expect_problem(422, "validation_failed");
    app.post(
        "/analyses",
        &ada.token,
        json!({"model_id": 999_999, "documents": texts}),
    )
    .await
    .expect(404);
    app.post(
        "/analyses",
        &ada.token,
        json!({"model_id": model, "file_id": "00000000-0000-4000-8000-000000000000"}),
    )
    .await
    .expect_problem(422, "validation_failed");
    app.post(
        "/analyses",
        &ada.token,
        json!({"model_id": model, "document_group_id": 999_999}),
    )
    .await
    .expect(404);
    // A group's documents keep their segments: not splitting them is refused, not ignored;
    // `true`, the default, changes nothing (a client's fixed body may carry it).
    let refused = app
        .post(
            "/analyses",
            &ada.token,
            json!({"model_id": model, "document_group_id": 999_999, "split": false}),
        )
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(refused["errors"][0]["field"], "split", "{refused}");
    app.post(
        "/analyses",
        &ada.token,
        json!({"model_id": model, "document_group_id": 999_999, "split": true}),
    )
    .await
    .expect(404);

    // Changes: name and description; the job's fields are refused.
    let renamed = app
        .put(
            &format!("/analyses/{id}"),
            &ada.token,
            json!({"name": "Renamed", "description": "two tickets"}),
        )
        .await
        .expect(200);
    assert_eq!(
        (renamed["name"].as_str(), renamed["description"].as_str()),
        (Some("Renamed"), Some("two tickets"))
    );
    app.put(&format!("/analyses/{id}"), &ada.token, json!({"status": "FAILED"}))
        .await
        .expect_problem(400, "immutable_field");

    // Another workspace sees nothing; a VIEWER of this one reads but does not write.
    let eve = app.register("eve@example.org").await;
    let missing = app.get("/analyses/999999", &eve.token).await.expect(404);
    let foreign = app.get(&format!("/analyses/{id}"), &eve.token).await.expect(404);
    assert_eq!(missing["detail"], foreign["detail"]);
    assert!(
        app.get("/analyses", &eve.token)
            .await
            .expect(200)
            .as_array()
            .unwrap()
            .is_empty()
    );
    app.post("/analyses", &eve.token, json!({"model_id": model, "documents": texts}))
        .await
        .expect(404);
    let workspace = app.get("/auth/status", &ada.token).await.expect(200)["workspaces"][0]["id"].clone();
    app.invite(&ada.token, workspace, "VIEWER", ["vic@example.org"])
        .await
        .expect(200);
    let token = app.token_from_mail("vic@example.org").await;
    let vic = app
        .accept_invitation(json!({"token": token, "password": "password-123", "first_name": "Vic"}))
        .await
        .expect(200);
    let vic = vic["auth_token"].as_str().unwrap().to_owned();
    app.get(&format!("/analyses/{id}"), &vic).await.expect(200);
    app.get(&format!("/analyses/{id}/documents"), &vic).await.expect(200);
    app.post("/analyses", &vic, json!({"model_id": model, "documents": texts}))
        .await
        .expect(403);
    app.put(&format!("/analyses/{id}"), &vic, json!({"name": "Mine"}))
        .await
        .expect(403);
    app.delete(&format!("/analyses/{id}"), &vic).await.expect(403);

    // Deleting removes the analysis and its tags; the documents stay.
    app.delete(&format!("/analyses/{id}"), &ada.token).await.expect(200);
    app.get(&format!("/analyses/{id}"), &ada.token).await.expect(404);
    let documents = app
        .get(
            &format!("/projects/{project}/groups/{}/documents", analysis["document_group_id"]),
            &ada.token,
        )
        .await
        .expect(200);
    assert_eq!(
        documents["count"]
            .as_i64()
            .or(documents.as_array().map(|a| a.len() as i64)),
        Some(2)
    );
}

/// Every analysis of a page carries its project's classes and labels, so a page holds them
/// within one budget of their text (`MAX_LISTED_CHARS`): past it an analysis comes without
/// them (`get_analysis` still gives them). Before, a page of 1,000 analyses of a project with
/// 1,000 long-described classes built about 4 GB of copies for one answer.
async fn a_page_of_analyses_holds_a_bounded_vocabulary(app: TestApp) {
    assert_eq!(lector_store::MAX_LISTED_CHARS, 32 << 20, "the test's sizes assume it");
    let ada = app.register("ada@example.org").await;
    let (project, model) = trained_tickets(&app, &ada).await;
    // 997 more classes of about 4,000 characters each: about 4 M characters a copy, so eight
    // copies fit the budget and a ninth does not.
    let long = "d".repeat(2000);
    let classes: Vec<Value> = (0..997)
        .map(|i| json!({"name": format!("c{i:03}"), "example": long, "description": long}))
        .collect();
    for batch in classes.chunks(250) {
        let path = format!("/projects/{project}/upload-classes");
        app.post(&path, &ada.token, json!(batch)).await.expect(201);
    }
    let mut ids = Vec::new();
    for n in 0..9 {
        let texts = json!([{"text": format!("My invoice is wrong ({n}).")}]);
        let created = app
            .post("/analyses", &ada.token, json!({"model_id": model, "documents": texts}))
            .await
            .expect(201);
        ids.push(finished(&app, &ada, &created).await["id"].clone());
    }
    for listing in [
        format!("/projects/{project}/analyses"),
        "/analyses".to_string(),
        format!("/models/{model}/analyses"),
    ] {
        let page = app.get(&listing, &ada.token).await.expect(200);
        // A plain array, but a page with `analyses` for a model's.
        let analyses = page.as_array().or(page["analyses"].as_array()).expect("analyses");
        assert_eq!(analyses.len(), 9, "{listing}");
        let carrying: Vec<bool> = analyses.iter().map(|a| a["classes"].is_array()).collect();
        assert_eq!(
            carrying,
            [true, true, true, true, true, true, true, true, false],
            "{listing}"
        );
        assert_eq!(analyses[0]["classes"].as_array().unwrap().len(), 1000, "{listing}");
        assert!(analyses[8].get("labels").is_none(), "{listing}");
    }
    let last = app.get(&format!("/analyses/{}", ids[8]), &ada.token).await.expect(200);
    assert_eq!(last["classes"].as_array().unwrap().len(), 1000);

    // An analysis deleted once finished, whose job runs again (its worker died after
    // finishing it and before ending the job), is reported finished, not failed: before, the
    // job failed on the missing analysis and told its user "Analysis failed".
    app.delete(&format!("/analyses/{}", ids[8]), &ada.token)
        .await
        .expect(200);
    let task = last["task_id"].as_i64().unwrap();
    lector_store::testing::run_again(&app.state.store, task).await;
    let again = app.wait_for_task(&ada.token, project, task).await;
    assert_eq!(again["status"], "DONE", "{again}");
    let notices = app.notifications(&ada).await;
    let titled = |title: &str| notices.iter().filter(|n| n["title"] == title).count();
    assert_eq!((titled("Analysis failed"), titled("Analysis finished")), (0, 10));
}

/// Analyses whose jobs the tests hold where they want them (no workers run).
mod batches {
    use crate::common::TestApp;
    use crate::common::tickets::{labeled_tickets, queue_training};
    use lector_jobs::{ANALYSIS_BATCH, ANALYSIS_BATCH_CHARS};
    use serde_json::json;

    backend_tests!(adjust: no_workers; an_analysis_reads_long_documents_in_bounded_batches,
        a_document_edited_while_analysed_is_read_again);

    fn no_workers(config: &mut lector_core::config::Config) {
        config.workers = 0;
    }

    /// Runs the queued jobs; the analysis then is FINISHED over `documents` documents.
    async fn finishes_with(app: &TestApp, ada: &crate::common::Session, analysis: i64, documents: i64) {
        app.run_jobs().await;
        let done = app.get(&format!("/analyses/{analysis}"), &ada.token).await.expect(200);
        assert_eq!(
            (&done["status"], &done["document_count"]),
            (&json!("FINISHED"), &json!(documents)),
            "{done}"
        );
    }

    /// An analysis by `model` of a new group of the documents `ids` (the training run first):
    /// what `create_analysis` answered, the analysis's id and the group's.
    async fn analysis_of_group(
        app: &TestApp,
        ada: &crate::common::Session,
        project: i64,
        model: &serde_json::Value,
        ids: &[i64],
    ) -> (serde_json::Value, i64, i64) {
        let group = app.group(ada, project, json!({"name": "Analysed"})).await;
        let path = format!("/projects/{project}/groups/{}", group["id"]);
        app.put(&path, &ada.token, json!({"document_ids": ids}))
            .await
            .expect(200);
        app.run_jobs().await;
        let of_group = json!({"model_id": model["id"], "document_group_id": group["id"]});
        let created = app.post("/analyses", &ada.token, of_group).await.expect(201);
        let analysis = created["id"].as_i64().unwrap();
        (created, analysis, group["id"].as_i64().unwrap())
    }

    /// An analysis reads its group in batches of at most 500 documents and 4 Mi characters
    /// (one document at least): six documents of 900,000 characters are read four, then two,
    /// and every one is analysed once. Before, a batch was 500 documents whatever their length
    /// (500 of a million characters: half a billion characters and their tags in memory).
    async fn an_analysis_reads_long_documents_in_bounded_batches(app: TestApp) {
        assert_eq!(
            (ANALYSIS_BATCH, ANALYSIS_BATCH_CHARS),
            (500, 4 << 20),
            "the test's sizes assume them"
        );
        let ada = app.register("ada@example.org").await;
        let (project, _) = labeled_tickets(&app, &ada, "Tickets").await;
        let model = queue_training(&app, &ada, project, "Tickets").await;
        let sentence = "My invoice is wrong and the parcel is late. ";
        let mut ids = Vec::new();
        for n in 0..6 {
            let text = format!("{n} {}", sentence.repeat(900_000 / sentence.len()));
            ids.push(
                app.document(&ada, project, json!({"text": text})).await["id"]
                    .as_i64()
                    .unwrap(),
            );
        }
        let (created, analysis, group) = analysis_of_group(&app, &ada, project, &model, &ids).await;

        // A worker takes the job (and dies: its lease has run out) after reading the batches.
        let store = &app.state.store;
        let kinds = [lector_store::ANALYSIS_JOB];
        let lease = store
            .claim_job_of("dies", -1, &kinds)
            .await
            .unwrap()
            .expect("the analysis job");
        assert_eq!(Some(lease.job.id), created["task_id"].as_i64());
        let limits = (ANALYSIS_BATCH, ANALYSIS_BATCH_CHARS);
        let first = store
            .pending_analysis_documents(&lease, analysis, group, 0, limits)
            .await
            .unwrap();
        let first: Vec<i64> = first.iter().map(|d| d.id).collect();
        assert_eq!(first, ids[..4]);
        let rest = store
            .pending_analysis_documents(&lease, analysis, group, ids[3], limits)
            .await
            .unwrap();
        let rest: Vec<i64> = rest.iter().map(|d| d.id).collect();
        assert_eq!(rest, ids[4..]);
        // Back on the queue (this reaper's pass, or the app's own if it came first).
        store.reap_expired_leases().await.unwrap();
        let job = store.job_by_id(lease.job.id).await.unwrap().expect("the job");
        assert_eq!(job.state, lector_store::JobState::Queued);

        finishes_with(&app, &ada, analysis, 6).await;
        let page = app
            .get(&format!("/analyses/{analysis}/documents?limit=10"), &ada.token)
            .await
            .expect(200);
        let analysed: Vec<i64> = page["documents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["id"].as_i64().unwrap())
            .collect();
        assert_eq!(analysed, ids);
    }

    /// A document edited between the batch's read and its write (the model predicting) is not
    /// written with the batch: its old segments are gone, and the new ones would have no tags.
    /// It is read again, and every tag of the finished analysis is on a segment of its
    /// document. Before, the batch wrote the old segments' tags and the document counted as
    /// analysed.
    async fn a_document_edited_while_analysed_is_read_again(app: TestApp) {
        let ada = app.register("ada@example.org").await;
        let (project, _) = labeled_tickets(&app, &ada, "Tickets").await;
        let model = queue_training(&app, &ada, project, "Tickets").await;
        let mut ids = Vec::new();
        for text in [
            "My invoice is wrong. Please fix it.",
            "The parcel is late. Where is it?",
        ] {
            let document = app.document(&ada, project, json!({"text": text})).await;
            ids.push(document["id"].as_i64().unwrap());
        }
        let (_, analysis, group) = analysis_of_group(&app, &ada, project, &model, &ids).await;

        let store = &app.state.store;
        let kinds = [lector_store::ANALYSIS_JOB];
        let lease = store
            .claim_job_of("worker", 600, &kinds)
            .await
            .unwrap()
            .expect("the job");
        let limits = (ANALYSIS_BATCH, ANALYSIS_BATCH_CHARS);
        let batch = store
            .pending_analysis_documents(&lease, analysis, group, 0, limits)
            .await
            .unwrap();
        assert_eq!(batch.iter().map(|d| d.id).collect::<Vec<_>>(), ids);
        // While the model reads, the first document gets a new text.
        let edited = format!("/projects/{project}/documents/{}", ids[0]);
        let new_text = json!({"text": "Refund me now. The charge was double. Thanks."});
        app.put(&edited, &ada.token, new_text).await.expect(200);
        let tags: Vec<_> = (batch.iter())
            .flat_map(|d| d.segments.iter().map(move |(segment, _)| (d.id, *segment)))
            .map(|(document_id, segment_id)| {
                let tag = lector_store::AnalysisTag {
                    document_id,
                    segment_id,
                    class: Some("billing".into()),
                    label: None,
                    confidence: 0.9,
                };
                (tag, None, None)
            })
            .collect();
        let read: Vec<_> = batch.iter().map(|d| d.as_read()).collect();
        let changed = store
            .store_analysis_batch(&lease, analysis, &read, &tags, 0.5)
            .await
            .unwrap();
        assert_eq!(changed, ids[..1], "the edited document is to be read again");
        assert!(store.hand_back_job(&lease, 0).await.unwrap());

        finishes_with(&app, &ada, analysis, 2).await;
        let count = |sql| lector_store::testing::count(store, sql, analysis);
        let astray = "SELECT COUNT(*) FROM analysis_tags t WHERE t.analysis_id = $1 \
             AND NOT EXISTS (SELECT 1 FROM segments s WHERE s.id = t.segment_id AND s.document_id = t.document_id)";
        assert_eq!(count(astray).await, 0, "no tag on a segment that is gone");
        let untagged = "SELECT COUNT(*) FROM segments s WHERE s.document_id IN \
             (SELECT document_id FROM analysis_documents WHERE analysis_id = $1) \
             AND NOT EXISTS (SELECT 1 FROM analysis_tags t WHERE t.analysis_id = $1 AND t.segment_id = s.id)";
        assert_eq!(
            count(untagged).await,
            0,
            "every segment of the new text has the model's tag"
        );
        assert_eq!(count("SELECT COUNT(*) FROM segments WHERE document_id IN (SELECT document_id FROM analysis_documents WHERE analysis_id = $1)").await, 5);
    }
}
