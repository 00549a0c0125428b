//! `extract` and HITL through HTTPS on both backends: a LABEL project whose labels are named
//! like invoice fields gets them out of a text PDF and out of its scan before any extraction
//! training, with clean values, boxes and credits; a live HITL configuration's settings turn
//! an unsure extraction into a review for its user, who submits it; the story: PDFs uploaded
//! and annotated, a model trained on their pages finds fields no built-in recogniser knows, an
//! unfamiliar layout goes to review (its events posted, signed, to a receiver on loopback),
//! and the next version learns from the reviewer's corrections; the requests' mistakes answer
//! problems.

use crate::common::invoices::{FIELDS, invoice, invoice_model};
use crate::common::receiver::{Received, next};
use crate::common::{Session, TestApp};
use lector_extract::DocumentFormat;
use lector_extract::samples::{self, TextRun};
use serde_json::{Value, json};

backend_tests!(
    invoice_fields_come_out_of_pdfs_and_scans,
    bad_extractions_are_refused,
    a_live_hitl_sends_unsure_extractions_to_review,
    hitl_configurations_are_checked,
);

mod webhooks {
    use super::*;

    /// Webhooks to a receiver on loopback, which the guard refuses unless configured.
    fn loopback_allowed(config: &mut lector_core::config::Config) {
        config.sources.allow_private = true;
    }

    backend_tests!(
        adjust: loopback_allowed;
        review_events_are_posted_signed,
        a_removed_webhook_gets_no_queued_events,
        a_model_learns_fields_from_pages_and_corrections,
    );
}

fn path(organization: &str, project: i64, model: i64, query: &str) -> String {
    format!("/organizations/{organization}/projects/{project}/models/{model}/extract{query}")
}

async fn workspace_of(app: &TestApp, who: &Session, project: i64) -> String {
    let project = app.get(&format!("/projects/{project}"), &who.token).await.expect(200);
    project["organization_id"]
        .as_i64()
        .or(project["workspace_id"].as_i64())
        .expect("a workspace id")
        .to_string()
}

/// One file read by a model's extraction (at `url`, from `path`) as `who`: the 200 answer.
async fn extracted(app: &TestApp, who: &Session, url: &str, name: &str, bytes: &[u8]) -> Value {
    app.send_form(url, &who.token, name, bytes, &[]).await.expect(200)
}

fn matches(result: &Value) -> std::collections::HashMap<String, Value> {
    result["documents"][0]["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["label"].as_str().unwrap().to_owned(), m.clone()))
        .collect()
}

async fn invoice_fields_come_out_of_pdfs_and_scans(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let (project, model) = invoice_model(&app, &ada).await;
    let org = workspace_of(&app, &ada, project).await;
    let pdf = invoice();
    let result = extracted(
        &app,
        &ada,
        &path(&org, project, model, "?return_bboxes=True"),
        "rechnung.pdf",
        &pdf,
    )
    .await;
    assert_eq!(result["model"], "Invoices v1");
    assert_eq!(result["total_credits_used"], 2.0, "one credit per page");
    assert_eq!(result["all_required_fields_found"], true);
    assert_eq!(result["all_data_conversion_passed"], true);
    assert_eq!(result["all_confidence_thresholds_met"], true);
    let labels: Vec<&str> = result["labels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap())
        .collect();
    assert_eq!(labels, FIELDS);
    let document = &result["documents"][0];
    assert_eq!(document["name"], "rechnung.pdf");
    assert_eq!(document["credits_used"], 2.0);
    let found = matches(&result);
    assert_eq!(found["invoice_number"]["value"], "RE-2024-0017");
    assert_eq!(found["date"]["value"], "2024-03-14");
    assert_eq!(found["date"]["data_type"], "date");
    assert_eq!(found["total"]["value"], "1234.50");
    assert_eq!(found["total"]["currency"], "EUR");
    assert_eq!(found["total"]["text"], "1.234,50 €");
    assert_eq!(found["iban"]["value"], "DE89 3704 0044 0532 0130 00");
    assert_eq!(found["vendor"]["value"], "Muster GmbH");
    assert!(!found.contains_key("po_number"), "no recogniser and no value: no match");
    // Boxes: page 1 holds a group per match, labelled, where the text stands.
    let pages = document["bboxes"].as_array().unwrap();
    assert_eq!(pages.len(), 2);
    assert!(pages[1].as_array().unwrap().is_empty());
    let total = pages[0]
        .as_array()
        .unwrap()
        .iter()
        .find(|group| group[0]["label"] == "total")
        .expect("the total's boxes");
    assert!(
        total[0]["TLx"].as_f64().unwrap() > 0.6 && (total[0]["TLy"].as_f64().unwrap() - 0.345).abs() < 0.02,
        "{total}"
    );

    // Annotated pages: each page drawn, the matches boxed in their label's colour.
    let result = extracted(
        &app,
        &ada,
        &path(&org, project, model, "?return_annotated_pages=true"),
        "rechnung.pdf",
        &pdf,
    )
    .await;
    let images: Vec<image::RgbImage> = result["documents"][0]["annotated_pages"]
        .as_array()
        .expect("annotated pages")
        .iter()
        .map(|uri| crate::common::invoices::decoded_page(uri).into_rgb8())
        .collect();
    assert_eq!(images.len(), 2);
    let (width, height) = images[0].dimensions();
    assert!(
        width.abs_diff(827) <= 1 && height.abs_diff(1169) <= 1,
        "A4 at 100 dpi: {width}×{height}"
    );
    let coloured = |image: &image::RgbImage| image.pixels().filter(|p| p.0[0] != p.0[1] || p.0[1] != p.0[2]).count();
    assert!(coloured(&images[0]) > 500, "page 1 carries the boxes");
    assert_eq!(coloured(&images[1]), 0, "page 2 has no match");
    // The total's box (the third label's colour) around its words, right of the page's middle.
    let (x, y) = (
        (total[0]["TLx"].as_f64().unwrap() * f64::from(width)) as u32,
        (total[0]["TLy"].as_f64().unwrap() * f64::from(height)) as u32,
    );
    let near: Vec<[u8; 3]> = (x.saturating_sub(4)..x + 2)
        .flat_map(|x| (y..y + 6).map(move |y| (x, y)))
        .map(|(x, y)| images[0].get_pixel(x, y).0)
        .collect();
    assert!(near.contains(&[44, 160, 44]), "{near:?}");

    // Its scan, read by OCR: the same values, less surely.
    let scan = samples::encode(&samples::render(&pdf, 150.0).remove(0), DocumentFormat::Png);
    let result = extracted(&app, &ada, &path(&org, project, model, ""), "scan.png", &scan).await;
    assert_eq!(result["total_credits_used"], 1.0);
    assert!(result["documents"][0].get("bboxes").is_none());
    let found = matches(&result);
    for (field, value) in [
        ("invoice_number", "RE-2024-0017"),
        ("date", "2024-03-14"),
        ("total", "1234.50"),
    ] {
        assert_eq!(found[field]["value"], value, "{field}: {}", found[field]);
        let confidence = found[field]["confidence"].as_f64().unwrap();
        assert!(confidence > 0.5 && confidence < 1.0, "{field}: {confidence}");
    }
}

async fn bad_extractions_are_refused(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let (project, model) = invoice_model(&app, &ada).await;
    let org = workspace_of(&app, &ada, project).await;
    let pdf = invoice();
    let send = |query: &'static str, name: &'static str, bytes: Vec<u8>| {
        let (app, token, url) = (&app, ada.token.clone(), path(&org, project, model, query));
        async move { app.send_form(&url, &token, name, &bytes, &[]).await }
    };
    send("?return_annotated_pages=yes", "x.pdf", pdf.clone())
        .await
        .expect_problem(400, "invalid_parameter");
    let long: Vec<Vec<TextRun>> = (0..21)
        .map(|n| vec![TextRun::new(50.0, 80.0, 12.0, format!("Seite {n}"))])
        .collect();
    let problem = send("?return_annotated_pages=true", "long.pdf", samples::text_pdf(&long))
        .await
        .expect_problem(413, "payload_too_large");
    assert!(problem["detail"].as_str().unwrap().contains("at most 20"), "{problem}");
    send("?return_bboxes=maybe", "x.pdf", pdf.clone())
        .await
        .expect_problem(400, "invalid_parameter");
    let problem = send("?return_bbox=true", "x.pdf", pdf.clone())
        .await
        .expect_problem(400, "invalid_parameter");
    assert!(problem["detail"].as_str().unwrap().contains("return_bbox"), "{problem}");
    send("", "x.zip", b"PK\x03\x04 not a document".to_vec())
        .await
        .expect_problem(415, "unsupported_media_type");
    let empty = send("", "empty.pdf", Vec::new())
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(crate::common::problem_fields(&empty), ["file"], "{empty}");
    let mut truncated = pdf.clone();
    truncated.truncate(200);
    send("", "x.pdf", truncated)
        .await
        .expect_problem(422, "validation_failed");
    // A model of another project, and a CLASS model, are no extraction models here.
    let other = app.project_with_classes(&ada, "Other", "LABEL", &[]).await;
    app.send_form(&path(&org, other, model, ""), &ada.token, "x.pdf", &pdf, &[])
        .await
        .expect_problem(404, "not_found");
    // A stranger sees nothing.
    let eve = app.register("eve@example.org").await;
    let answer = app
        .send_form(&path(&org, project, model, ""), &eve.token, "x.pdf", &pdf, &[])
        .await;
    assert!(matches!(answer.status.as_u16(), 403 | 404), "{}", answer.text);
}

async fn a_live_hitl_sends_unsure_extractions_to_review(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let (project, model) = invoice_model(&app, &ada).await;
    let org = workspace_of(&app, &ada, project).await;
    let body = json!({
        "name": "Invoice check",
        "description": "Every invoice without a PO number",
        "assigned_user_id": ada.user_id,
        "model_id": model,
        "is_live": true,
        "labels": {"po_number": {"required": true}, "total": {"confidence_threshold": 0.9, "data_type": "amount"}}
    });
    let hitl = app
        .post(&format!("/projects/{project}/hitls"), &ada.token, body.clone())
        .await
        .expect(201);
    assert_eq!(hitl["is_live"], true);
    assert_eq!(hitl["labels"]["po_number"]["required"], true);
    let hitls = app
        .get(&format!("/projects/{project}/hitls"), &ada.token)
        .await
        .expect(200);
    assert_eq!(hitls.as_array().unwrap().len(), 1);
    let at = format!("/projects/{project}/hitls/{}", hitl["id"]);

    let result = extracted(&app, &ada, &path(&org, project, model, ""), "rechnung.pdf", &invoice()).await;
    assert_eq!(
        result["all_required_fields_found"], false,
        "po_number is required and missing"
    );
    let document = &result["documents"][0];
    assert_eq!(document["missing_fields"], json!(["po_number"]));
    assert_eq!(document["hitl"]["status"], "pending");
    let confidences = document["hitl"]["result"][0]["confidences"].as_array().unwrap();
    let total = confidences.iter().find(|c| c["label"] == "total").unwrap();
    assert_eq!(total["expected_confidence"].as_f64().unwrap() as f32, 0.9);
    assert!(total["found"].as_f64().unwrap() >= 0.9, "{total}");
    let review_id = document["hitl"]["review_id"].as_i64().unwrap();

    // The reviewer hears of it, and finds it among the configuration's reviews.
    let notifications = app.get("/notifications", &ada.token).await.expect(200);
    let texts = notifications.to_string();
    assert!(
        texts.contains("A review is waiting for you") && texts.contains("rechnung.pdf"),
        "{texts}"
    );
    let reviews = app.get(&format!("{at}/reviews"), &ada.token).await.expect(200);
    let review = &reviews[0];
    assert_eq!(review["review_id"], review_id);
    assert_eq!(review["status"], "PENDING");
    assert_eq!(review["label"], "po_number");
    assert_eq!(review["document_name"], "rechnung.pdf");
    assert_eq!(review["user_id"], ada.user_id);
    assert_eq!(review["hitl_id"], hitl["id"]);
    assert!(review.get("data").is_none());
    let full = app
        .get(&format!("{at}/reviews?with_full_data=True"), &ada.token)
        .await
        .expect(200);
    assert_eq!(full[0]["data"]["extracted"]["missing_fields"], json!(["po_number"]));
    let brief = app
        .get(&format!("{at}/reviews?with_full_data=FALSE"), &ada.token)
        .await
        .expect(200);
    assert!(brief[0].get("data").is_none());
    // Of one status: the web app asks for one PENDING review to know where work waits.
    let pending = app
        .get(&format!("{at}/reviews?status=pending&limit=1"), &ada.token)
        .await
        .expect(200);
    assert_eq!(pending[0]["review_id"], review_id);
    app.get(&format!("{at}/reviews?status=maybe"), &ada.token)
        .await
        .expect_problem(400, "invalid_parameter");

    // Submitting stores the corrected values and the verdict, once.
    app.put(
        &format!("{at}/reviews/{review_id}"),
        &ada.token,
        json!({"status": "maybe"}),
    )
    .await
    .expect_problem(422, "validation_failed");
    // Corrections are training data: each names a field of the project and reads as its type.
    let problem = app
        .put(
            &format!("{at}/reviews/{review_id}"),
            &ada.token,
            json!({"status": "approved", "values": {"no_such_field": "1", "total": "abc", "po_number": "PO-7"}}),
        )
        .await
        .expect_problem(422, "validation_failed");
    let fields = crate::common::problem_fields(&problem);
    assert_eq!(fields, ["values.no_such_field", "values.total"], "{problem}");
    let submitted = app
        .put(
            &format!("{at}/reviews/{review_id}"),
            &ada.token,
            json!({"status": "Approved", "values": {"po_number": "PO-7", "total": "1234.50"}}),
        )
        .await
        .expect(200);
    assert_eq!(submitted["status"], "APPROVED");
    assert_eq!(
        submitted["data"]["corrected"],
        json!({"po_number": "PO-7", "total": "1234.50"})
    );
    let again = app
        .get(&format!("{at}/reviews/{review_id}"), &ada.token)
        .await
        .expect(200);
    assert_eq!(again["status"], "APPROVED");
    let pending = app
        .get(&format!("{at}/reviews?status=PENDING"), &ada.token)
        .await
        .expect(200);
    assert_eq!(pending, json!([]));
    let approved = app
        .get(&format!("{at}/reviews?status=APPROVED"), &ada.token)
        .await
        .expect(200);
    assert_eq!(approved[0]["review_id"], review_id);
    // The pages the review was made from, for the reviewer's view: words with their boxes.
    let page = &again["data"]["pages"][0];
    assert_eq!(page["number"], 1, "{again}");
    let words: Vec<&Value> = page["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .flat_map(|l| l["words"].as_array().expect("words"))
        .collect();
    assert!(!words.is_empty(), "{page}");
    assert!(words.iter().all(|w| w["quad"]["tl"]["x"].is_number()), "{page}");
    let boxed = &again["data"]["extracted"]["bboxes"][0];
    assert!(!boxed.as_array().expect("the first page's boxes").is_empty(), "{again}");
    app.put(
        &format!("{at}/reviews/{review_id}"),
        &ada.token,
        json!({"status": "REJECTED"}),
    )
    .await
    .expect_problem(409, "conflict");

    // With every field as it should be, nothing waits; off, the HITL is not asked. A change
    // writes only the fields it names.
    let hitl = app.put(&at, &ada.token, json!({"labels": {}})).await.expect(200);
    assert_eq!(hitl["labels"], json!({}));
    assert_eq!(
        (
            &hitl["name"],
            &hitl["model_id"],
            hitl["is_live"].as_bool(),
            &hitl["assigned_user_id"]
        ),
        (&body["name"], &json!(model), Some(true), &json!(ada.user_id)),
        "{hitl}"
    );
    let result = extracted(&app, &ada, &path(&org, project, model, ""), "rechnung.pdf", &invoice()).await;
    assert_eq!(result["documents"][0]["hitl"]["status"], "passed");
    app.post(&format!("{at}/assign"), &ada.token, json!({"is_live": false}))
        .await
        .expect(200);
    let result = extracted(&app, &ada, &path(&org, project, model, ""), "rechnung.pdf", &invoice()).await;
    assert!(result["documents"][0].get("hitl").is_none());
    assert_eq!(
        app.get(&format!("{at}/reviews"), &ada.token)
            .await
            .expect(200)
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

async fn hitl_configurations_are_checked(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let eve = app.register("eve@example.org").await;
    let (project, model) = invoice_model(&app, &ada).await;
    let hitls = format!("/projects/{project}/hitls");
    let long = |n: usize| "x".repeat(n);
    for (body, field) in [
        (json!({"name": long(121)}), "name"),
        (json!({"name": "ok", "description": long(256)}), "description"),
        (
            json!({"name": "ok", "webhook_url": format!("https://example.org/{}", long(240))}),
            "webhook_url",
        ),
        (
            json!({"name": "ok", "webhook_url": "ftp://example.org/x"}),
            "webhook_url",
        ),
        (json!({"name": "ok", "webhook_url": "https://"}), "webhook_url"),
        (
            json!({"name": "ok", "labels": {"total": {"confidence_threshold": 3}}}),
            "labels.total.confidence_threshold",
        ),
        (
            json!({"name": "ok", "labels": {"total": {"data_type": "colour"}}}),
            "labels.total",
        ),
        (json!({"name": "ok", "labels": ["total"]}), "labels"),
    ] {
        let problem = app
            .post(&hitls, &ada.token, body)
            .await
            .expect_problem(400, "bad_request");
        assert_eq!(problem["errors"][0]["field"], field, "{problem}");
    }
    // 120, 255 and 255 characters are fine.
    let fine = json!({"name": long(120), "description": long(255),
        "webhook_url": format!("https://example.org/{}", long(235))});
    app.post(&hitls, &ada.token, fine).await.expect(201);
    // No field is required: a configuration without a name gets one.
    let unnamed = app.post(&hitls, &ada.token, json!({})).await.expect(201);
    assert_eq!(unnamed["name"], "Human review", "{unnamed}");
    let other = app.project_with_classes(&ada, "Other", "LABEL", &[]).await;
    let problem = app
        .post(
            &format!("/projects/{other}/hitls"),
            &ada.token,
            json!({"name": "x", "model_id": model}),
        )
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(problem["errors"][0]["field"], "model_id");
    // The settings name the project's labels; the model extracts (LABEL), as a live
    // configuration's model must.
    let problem = app
        .post(
            &hitls,
            &ada.token,
            json!({"name": "x", "labels": {"total": {}, "colour": {"required": true}}}),
        )
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(problem["errors"][0]["field"], "labels.colour", "{problem}");
    let (tickets, _) = crate::common::tickets::labeled_tickets(&app, &ada, "Tickets").await;
    let classifier = app.train_model(&ada, tickets, json!({"display_name": "Tickets"})).await;
    let problem = app
        .post(
            &format!("/projects/{tickets}/hitls"),
            &ada.token,
            json!({"name": "x", "model_id": classifier["id"], "is_live": true}),
        )
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(problem["errors"][0]["field"], "model_id", "{problem}");
    let problem = app
        .post(
            &hitls,
            &ada.token,
            json!({"name": "x", "assigned_user_id": eve.user_id}),
        )
        .await
        .expect_problem(422, "validation_failed");
    assert_eq!(problem["errors"][0]["field"], "assigned_user_id");
    // Another workspace's user sees none of it.
    let answer = app.get(&hitls, &eve.token).await;
    assert!(matches!(answer.status.as_u16(), 403 | 404), "{}", answer.text);
    app.get(&format!("{hitls}/999999"), &ada.token)
        .await
        .expect_problem(404, "not_found");
}

/// A receiver that answers 500 to the first `failures` requests and 204 after.
async fn receiver(failures: usize) -> (std::net::SocketAddr, tokio::sync::mpsc::UnboundedReceiver<Received>) {
    crate::common::receiver::receiver(move |taken| {
        if taken <= failures {
            b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_vec()
        } else {
            b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_vec()
        }
    })
    .await
}

/// The review event's delivery the receiver refused, once it waits for its retry.
async fn refused_delivery(app: &TestApp) -> i64 {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let jobs = app.state.store.unfinished_jobs().await.unwrap();
        let refused = jobs.iter().find(|j| {
            j.kind == lector_store::WEBHOOK_JOB && j.state == lector_store::JobState::Queued && j.attempts > 0
        });
        if let Some(job) = refused {
            return job.id;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no delivery waits for its retry: {jobs:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// HMAC-SHA256 written out from SHA-256 (RFC 2104), to check the server's signature with
/// nothing of its own code.
fn hmac_sha256(key: &[u8], message: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    // A key longer than the block is hashed first.
    let hashed;
    let key = if key.len() > 64 {
        hashed = Sha256::digest(key);
        &hashed[..]
    } else {
        key
    };
    let mut block = [0u8; 64];
    block[..key.len()].copy_from_slice(key);
    let pad = |byte: u8| block.iter().map(|b| b ^ byte).collect::<Vec<u8>>();
    let inner = Sha256::new().chain_update(pad(0x36)).chain_update(message).finalize();
    let outer = Sha256::new().chain_update(pad(0x5c)).chain_update(inner).finalize();
    outer.iter().map(|b| format!("{b:02x}")).collect()
}

/// Checks a request's `Lector-Signature` against `secret` and answers its event.
fn verified(request: &Received, secret: &str) -> Value {
    let header = &request.headers["lector-signature"];
    let (t, v1) = header.split_once(',').unwrap();
    let t = t.strip_prefix("t=").unwrap();
    let v1 = v1.strip_prefix("v1=").unwrap();
    let mut signed = format!("{t}.").into_bytes();
    signed.extend_from_slice(&request.body);
    assert_eq!(v1, hmac_sha256(secret.as_bytes(), &signed), "the signature checks out");
    assert_eq!(request.headers["content-type"], "application/json");
    serde_json::from_slice(&request.body).unwrap()
}

/// A live review configuration of `model`'s invoices for `ada`, posting to `address`.
async fn invoice_check(app: &TestApp, ada: &Session, project: i64, model: i64, address: std::net::SocketAddr) -> Value {
    app.post(
        &format!("/projects/{project}/hitls"),
        &ada.token,
        json!({"name": "Invoice check", "model_id": model, "is_live": true, "assigned_user_id": ada.user_id,
            "webhook_url": format!("http://{address}/hooks/lector"), "labels": {"po_number": {"required": true}}}),
    )
    .await
    .expect(201)
}

async fn review_events_are_posted_signed(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let (project, model) = invoice_model(&app, &ada).await;
    let org = workspace_of(&app, &ada, project).await;
    // The receiver refuses the first delivery: the job tries again.
    let (address, mut received) = receiver(1).await;
    let hitl = invoice_check(&app, &ada, project, model, address).await;
    let secret = hitl["webhook_secret"]
        .as_str()
        .expect("the secret, to its MANAGER")
        .to_owned();
    assert!(secret.starts_with("whsec_") && secret.len() > 60);
    let fetched = app
        .get(&format!("/projects/{project}/hitls/{}", hitl["id"]), &ada.token)
        .await
        .expect(200);
    assert!(
        fetched.get("webhook_secret").is_none(),
        "only the answers to a MANAGER's changes show it"
    );

    let result = extracted(&app, &ada, &path(&org, project, model, ""), "rechnung.pdf", &invoice()).await;
    let review_id = result["documents"][0]["hitl"]["review_id"].as_i64().unwrap();
    let first = next(&mut received).await;
    let delivery = refused_delivery(&app).await;
    let wait = lector_store::testing::end_retry_delay(&app.state.store, delivery).await;
    assert_eq!(wait.as_secs(), 30, "the first retry waits half a minute");
    let second = next(&mut received).await;
    let (event, again) = (verified(&first, &secret), verified(&second, &secret));
    assert_eq!(event["id"], again["id"], "the same event, delivered again");
    assert_eq!(first.headers["lector-delivery"], event["id"].as_str().unwrap());
    assert_eq!(event["type"], "review.created");
    assert!(event["created"].as_str().unwrap().ends_with('Z'), "{event}");
    assert_eq!(event["data"]["review_id"], review_id);
    assert_eq!(event["data"]["status"], "PENDING");
    assert_eq!(event["data"]["label"], "po_number");
    assert_eq!(event["data"]["document_name"], "rechnung.pdf");

    app.put(
        &format!("/projects/{project}/hitls/{}/reviews/{review_id}", hitl["id"]),
        &ada.token,
        json!({"status": "rejected", "values": {"po_number": "none"}}),
    )
    .await
    .expect(200);
    let submitted = verified(&next(&mut received).await, &secret);
    assert_eq!(submitted["type"], "review.submitted");
    assert_eq!(submitted["data"]["status"], "REJECTED");
    assert_eq!(submitted["data"]["corrected"], json!({"po_number": "none"}));
    assert_ne!(submitted["id"], event["id"]);
    let left = app.settle_jobs(std::time::Duration::from_secs(30)).await;
    assert!(left.is_empty(), "both deliveries ended: {left:?}");
    assert!(received.try_recv().is_err(), "no event twice once taken");
}

/// An event waiting for its retry goes where the configuration's webhook is when it is sent:
/// removed, nothing is posted. No job keeps the secret or the review's values.
async fn a_removed_webhook_gets_no_queued_events(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let (project, model) = invoice_model(&app, &ada).await;
    let org = workspace_of(&app, &ada, project).await;
    let (address, mut received) = receiver(usize::MAX).await;
    let hitl = invoice_check(&app, &ada, project, model, address).await;
    let secret = hitl["webhook_secret"].as_str().unwrap().to_owned();
    extracted(&app, &ada, &path(&org, project, model, ""), "rechnung.pdf", &invoice()).await;
    next(&mut received).await;
    // The receiver failed it; the job waits for its retry.
    app.put(
        &format!("/projects/{project}/hitls/{}", hitl["id"]),
        &ada.token,
        json!({"webhook_url": null}),
    )
    .await
    .expect(200);
    let store = &app.state.store;
    let delivery = refused_delivery(&app).await;
    let every = "SELECT payload FROM jobs WHERE id >= $1";
    let payloads = lector_store::testing::texts(store, every, delivery).await;
    assert!(
        payloads
            .iter()
            .all(|p| !p.contains(&secret) && !p.contains("rechnung.pdf")),
        "{payloads:?}"
    );
    lector_store::testing::end_retry_delay(store, delivery).await;
    let left = app.settle_jobs(std::time::Duration::from_secs(30)).await;
    assert!(left.is_empty(), "{left:?}");
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(
        received.try_recv().is_err(),
        "nothing posted once the webhook is removed"
    );
}

/// An order confirmation whose fields no built-in recogniser knows. The German one words and
/// places them differently: a layout the first model never saw.
fn order(reference: &str, customer: &str, shift: f32, german: bool) -> Vec<u8> {
    let (x, order_label, customer_label) = if german {
        (380.0, "Bestellzeichen", "Kundennummer")
    } else {
        (200.0, "Order reference:", "Customer no.")
    };
    let top = if german { 320.0 } else { 150.0 } + shift;
    samples::text_pdf(&[vec![
        TextRun::new(50.0, 80.0, 18.0, "Acme Ltd").bold(),
        TextRun::new(if german { 250.0 } else { 50.0 }, top, 12.0, order_label),
        TextRun::new(x, top, 12.0, reference),
        TextRun::new(if german { 250.0 } else { 50.0 }, top + 20.0, 12.0, customer_label),
        TextRun::new(x, top + 20.0, 12.0, customer),
        TextRun::new(50.0, 500.0, 12.0, "Thank you for your order."),
    ]])
}

/// Tags both fields on the first page of `document` in `session`.
async fn annotate(app: &TestApp, ada: &Session, project: i64, session: &Value, document: &Value, values: [&str; 2]) {
    let at = format!(
        "/projects/{project}/annotations/{}/documents/{}",
        session["id"], document["id"]
    );
    let page = document["segments"][0]["id"].clone();
    for (label, text) in ["order_ref", "customer_no"].into_iter().zip(values) {
        app.post(
            &format!("{at}/segments/{page}/tags"),
            &ada.token,
            json!({"label": label, "text": text}),
        )
        .await
        .expect(201);
    }
    app.mark_annotated(ada, &format!("{at}/pages/0")).await.expect(200);
}

async fn a_model_learns_fields_from_pages_and_corrections(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let project = app
        .project_with(&ada, "LABEL", &[], &["order_ref", "customer_no"])
        .await;
    let mut documents = Vec::new();
    for n in 0..6 {
        let values = (format!("PO-{}", 1000 + n * 37), format!("K-{}", 40 + n));
        let pdf = order(&values.0, &values.1, n as f32 * 12.0, false);
        let (_, imported) = app.import_file(&ada, project, &format!("order-{n}.pdf"), &pdf).await;
        documents.push((imported[0].clone(), values));
    }
    let ids: Vec<Value> = documents.iter().map(|(d, _)| d["id"].clone()).collect();
    let session = app.session_over(&ada, project, "Orders", ids).await;
    for (document, (reference, customer)) in &documents {
        annotate(&app, &ada, project, &session, document, [reference, customer]).await;
    }
    let v1 = app
        .train_model(&ada, project, json!({"display_name": "Orders v1", "language": "de"}))
        .await;
    assert_eq!(v1["status"], "READY", "{v1}");
    let v1 = v1["id"].as_i64().unwrap();
    let org = workspace_of(&app, &ada, project).await;

    // A new order, its lines further down than any taught: found by the words that announce them.
    let result = extracted(
        &app,
        &ada,
        &path(&org, project, v1, "?return_bboxes=true"),
        "new.pdf",
        &order("PO-4711", "K-993", 90.0, false),
    )
    .await;
    let found = matches(&result);
    assert_eq!(found["order_ref"]["value"], "PO-4711", "{result}");
    assert_eq!(found["customer_no"]["value"], "K-993", "{result}");
    for field in ["order_ref", "customer_no"] {
        let confidence = found[field]["confidence"].as_f64().unwrap();
        assert!(confidence > 0.8, "{field}: {confidence}");
    }
    let boxes = &result["documents"][0]["bboxes"][0];
    let reference = boxes
        .as_array()
        .unwrap()
        .iter()
        .find(|group| group[0]["label"] == "order_ref")
        .expect("the reference's box");
    assert!(
        (reference[0]["TLx"].as_f64().unwrap() - 200.0 / 595.0).abs() < 0.01,
        "{reference}"
    );
    // The one file carries what the model learnt of its fields, and its language.
    let (_, _, file) = app.download(&ada.token, &format!("/models/{v1}/download")).await;
    let copy = app
        .upload_model(
            &ada.token,
            &file,
            &[("display_name", "Orders copy"), ("project_id", &project.to_string())],
        )
        .await
        .expect(200);
    assert_eq!(copy["language"], "de", "{copy}");
    let copied = extracted(
        &app,
        &ada,
        &path(&org, project, copy["id"].as_i64().unwrap(), ""),
        "new.pdf",
        &order("PO-4711", "K-993", 90.0, false),
    )
    .await;
    assert_eq!(matches(&copied), found, "{copied}");

    // The German layout is not what v1 learnt: its review is corrected by a person, and every
    // review event reaches the team's receiver, signed.
    let (address, mut received) = receiver(0).await;
    let hitl = app
        .post(
            &format!("/projects/{project}/hitls"),
            &ada.token,
            json!({"name": "Orders", "assigned_user_id": ada.user_id, "model_id": v1, "is_live": true,
                   "webhook_url": format!("http://{address}/hooks/orders"),
                   "labels": {"order_ref": {"required": true, "confidence_threshold": 0.8}}}),
        )
        .await
        .expect(201);
    let secret = hitl["webhook_secret"].as_str().unwrap().to_owned();
    let german = order("B-5150", "K-77", 0.0, true);
    let result = extracted(&app, &ada, &path(&org, project, v1, ""), "bestellung.pdf", &german).await;
    let review = &result["documents"][0]["hitl"];
    assert_eq!(review["status"], "pending", "{result}");
    let created = verified(&next(&mut received).await, &secret);
    assert_eq!(created["type"], "review.created");
    assert_eq!(created["data"]["review_id"], review["review_id"]);
    assert_eq!(created["data"]["document_name"], "bestellung.pdf");
    app.put(
        &format!(
            "/projects/{project}/hitls/{}/reviews/{}",
            hitl["id"], review["review_id"]
        ),
        &ada.token,
        json!({"status": "approved", "values": {"order_ref": "B-5150", "customer_no": "K-77"}}),
    )
    .await
    .expect(200);
    let submitted = verified(&next(&mut received).await, &secret);
    assert_eq!(submitted["type"], "review.submitted");
    assert_eq!(submitted["data"]["status"], "APPROVED");
    assert_eq!(submitted["data"]["corrected"]["order_ref"], "B-5150");

    // ... and the next version, trained on the same pages, learnt the layout from the correction.
    let v2 = app
        .train_model(&ada, project, json!({"display_name": "Orders v2"}))
        .await;
    assert_eq!(v2["status"], "READY", "{v2}");
    let v2 = v2["id"].as_i64().unwrap();
    app.put(
        &format!("/projects/{project}/hitls/{}", hitl["id"]),
        &ada.token,
        json!({"name": "Orders", "assigned_user_id": ada.user_id, "model_id": v2, "is_live": true,
               "labels": {"order_ref": {"required": true, "confidence_threshold": 0.8}}}),
    )
    .await
    .expect(200);
    let result = extracted(
        &app,
        &ada,
        &path(&org, project, v2, ""),
        "bestellung-2.pdf",
        &order("B-6262", "K-301", 30.0, true),
    )
    .await;
    let found = matches(&result);
    assert_eq!(found["order_ref"]["value"], "B-6262", "{result}");
    assert_eq!(found["customer_no"]["value"], "K-301", "{result}");
    assert_eq!(result["documents"][0]["hitl"]["status"], "passed", "{result}");
}
