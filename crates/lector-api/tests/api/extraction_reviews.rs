//! What a HITL review keeps of an extraction, through HTTPS on both backends: the document's
//! name within a name's length (its extension kept) in the answer, the review and the
//! reviewer's notification, which the notification's own API accepts back; the review's
//! threshold as its configuration says it, and the matches and boxes as the answer gave them;
//! and one review for the same work, however often the extraction is sent.

use crate::common::invoices::{FIELDS, extraction_url, invoice, invoice_model};
use crate::common::{Session, TestApp};
use lector_core::validate::{MAX_NAME_CHARS, MAX_NOTIFICATION_TEXT_CHARS};
use serde_json::{Value, json};

backend_tests!(
    a_long_file_name_is_kept_to_a_name,
    a_review_keeps_the_numbers_of_its_configuration_and_answer,
    an_extraction_sent_again_finds_its_waiting_review,
);

/// A live configuration of the invoice model for `ada`, every field at a 0.9 threshold and
/// `po_number` (never on the invoice) required, so every extraction goes to review: the
/// extraction URL and the configuration.
async fn reviewed_invoices(app: &TestApp, ada: &Session) -> (String, Value) {
    let (project, model) = invoice_model(app, ada).await;
    let mut labels = serde_json::Map::new();
    for field in FIELDS {
        labels.insert(
            field.to_owned(),
            json!({"confidence_threshold": 0.9, "required": field == "po_number"}),
        );
    }
    let body = json!({
        "name": "Invoice check",
        "assigned_user_id": ada.user_id,
        "model_id": model,
        "is_live": true,
        "labels": labels,
    });
    let hitl = app
        .post(&format!("/projects/{project}/hitls"), &ada.token, body)
        .await
        .expect(201);
    (extraction_url(app, ada, project, model).await, hitl)
}

async fn a_long_file_name_is_kept_to_a_name(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let (url, hitl) = reviewed_invoices(&app, &ada).await;
    let sent = format!("{}.pdf", "r".repeat(30_000));
    let result = app
        .send_form(&url, &ada.token, &sent, &invoice(), &[])
        .await
        .expect(200);
    let name = result["documents"][0]["name"].as_str().unwrap().to_owned();
    assert_eq!(name.chars().count(), MAX_NAME_CHARS, "{name}");
    assert!(name.starts_with("rrr") && name.ends_with("….pdf"), "{name}");
    assert_eq!(result["documents"][0]["hitl"]["status"], "pending", "{result}");

    let reviews = app
        .get(
            &format!("/projects/{}/hitls/{}/reviews", hitl["project_id"], hitl["id"]),
            &ada.token,
        )
        .await
        .expect(200);
    assert_eq!(reviews[0]["document_name"], name.as_str());

    // The reviewer's notification names the document, and is one its API would take back.
    let notifications = app.get("/notifications", &ada.token).await.expect(200);
    let notice = notifications
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["text"].as_str().is_some_and(|t| t.contains(&name)))
        .unwrap_or_else(|| panic!("no notification names {name}: {notifications}"));
    let text = notice["text"].as_str().unwrap();
    assert!(text.chars().count() <= MAX_NOTIFICATION_TEXT_CHARS, "{}", text.len());
    app.put(
        &format!("/notifications/{}", notice["id"]),
        &ada.token,
        json!({"title": notice["title"], "text": text}),
    )
    .await
    .expect(200);
}

async fn a_review_keeps_the_numbers_of_its_configuration_and_answer(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let (url, hitl) = reviewed_invoices(&app, &ada).await;
    let result = app
        .send_form(
            &format!("{url}?return_bboxes=true"),
            &ada.token,
            "rechnung.pdf",
            &invoice(),
            &[],
        )
        .await
        .expect(200);
    let document = &result["documents"][0];
    assert_eq!(document["hitl"]["status"], "pending", "{result}");
    let full = app
        .get(
            &format!(
                "/projects/{}/hitls/{}/reviews?with_full_data=true",
                hitl["project_id"], hitl["id"]
            ),
            &ada.token,
        )
        .await
        .expect(200);
    let review = &full[0];
    let label = review["label"].as_str().expect("the field that asked for review");
    assert_eq!(
        review["confidence_threshold"], hitl["labels"][label]["confidence_threshold"],
        "{review}"
    );
    assert_eq!(review["confidence_threshold"], json!(0.9));
    let extracted = &review["data"]["extracted"];
    assert_eq!(extracted["matches"], document["matches"]);
    assert_eq!(extracted["bboxes"], document["bboxes"]);
    assert!(
        document["matches"].as_array().is_some_and(|m| !m.is_empty()),
        "{document}"
    );
}

/// A client that sends an extraction again (its answer lost, or the same file twice) finds
/// the review the first made while it waits, and its reviewer is told once; a different file,
/// or the same one after the review was submitted, makes a review of its own. Before, every
/// call made a review and a notification.
async fn an_extraction_sent_again_finds_its_waiting_review(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let (url, hitl) = reviewed_invoices(&app, &ada).await;
    let reviews = format!("/projects/{}/hitls/{}/reviews", hitl["project_id"], hitl["id"]);
    let extract = |name: &'static str| {
        let (app, url, token) = (&app, &url, &ada.token);
        async move {
            let result = app.send_form(url, token, name, &invoice(), &[]).await.expect(200);
            assert_eq!(result["documents"][0]["hitl"]["status"], "pending", "{result}");
            result["documents"][0]["hitl"]["review_id"].as_i64().expect("a review")
        }
    };
    let first = extract("rechnung.pdf").await;
    assert_eq!(extract("rechnung.pdf").await, first, "the same work, the same review");
    let listed = app.get(&reviews, &ada.token).await.expect(200);
    let listed: Vec<_> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["review_id"].clone())
        .collect();
    assert_eq!(listed, [json!(first)]);
    assert_eq!(app.notified(&ada, "A review is waiting for you").await, 1);

    let other = extract("zweite-rechnung.pdf").await;
    assert_ne!(other, first, "another document is other work");
    app.put(
        &format!("{reviews}/{first}"),
        &ada.token,
        json!({"status": "approved", "values": {"po_number": "PO-7"}}),
    )
    .await
    .expect(200);
    let after = extract("rechnung.pdf").await;
    assert!(
        after != first && after != other,
        "a submitted review is not taken again"
    );
    assert_eq!(app.notified(&ada, "A review is waiting for you").await, 3);
}
