//! PDFs and images through HTTPS on both backends: uploaded into a document group, each file
//! becomes one document whose segments are its pages, with the page text and every word's box
//! (from the PDF's text layer, or OCR for scans and images); crafted files fail their own
//! request and the server stays up; a PDF uploaded as labeled data becomes a session's document
//! of pages; operations that read tables refuse documents.
//! Every file is made by the test (`lector_extract::samples`); OCR needs `scripts/install-ocr`.

use crate::common::TestApp;
use lector_extract::DocumentFormat;
use lector_extract::samples::{self, TextRun};
use serde_json::{Value, json};

backend_tests!(
    a_text_pdf_becomes_a_document_with_a_segment_per_page,
    scans_and_images_are_read_by_ocr,
    table_operations_refuse_documents,
    a_pdf_uploaded_as_labeled_data_becomes_a_session_of_pages,
    a_blank_page_is_marked_as_the_others,
);

mod crafted {
    use super::*;

    /// A sandbox held to 256 MiB, so the decompression bomb meets its limit quickly.
    fn small_sandbox(config: &mut lector_core::config::Config) {
        config.extract.sandbox_memory_mib = 256;
    }

    backend_tests!(adjust: small_sandbox; crafted_files_fail_their_own_request);
}

fn invoice_pages() -> Vec<Vec<TextRun>> {
    vec![
        vec![
            TextRun::new(50.0, 80.0, 20.0, "Muster GmbH").bold(),
            TextRun::new(50.0, 140.0, 12.0, "Rechnung Nr. 2024-0017"),
            TextRun::new(50.0, 300.0, 12.0, "Gesamtbetrag:"),
            TextRun::new(400.0, 300.0, 12.0, "1.234,50 €"),
        ],
        vec![TextRun::new(50.0, 100.0, 14.0, "Seite zwei: Grüße aus Köln")],
    ]
}

fn words(segment: &Value) -> Vec<&str> {
    segment["page"]["words"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["text"].as_str().unwrap())
        .collect()
}

fn word<'a>(segment: &'a Value, text: &str) -> &'a Value {
    let all = segment["page"]["words"].as_array().unwrap();
    all.iter()
        .find(|w| w["text"] == text)
        .unwrap_or_else(|| panic!("no word {text:?} in {:?}", words(segment)))
}

async fn a_text_pdf_becomes_a_document_with_a_segment_per_page(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let id = app.project_with_classes(&ada, "Invoices", "LABEL", &[]).await;
    let pdf = samples::text_pdf(&invoice_pages());
    let (uploaded, documents) = app.import_file(&ada, id, "rechnung.pdf", &pdf).await;
    assert_eq!(
        uploaded["preview"],
        json!([
            ["page", "text"],
            ["1", "Muster GmbH\nRechnung Nr. 2024-0017\nGesamtbetrag:\n1.234,50 €"]
        ])
    );
    assert_eq!(documents.len(), 1, "one file, one document");
    // A file's name is kept as a name: without control or bidi characters, 120 at most.
    let sent = format!("{}\u{202E}fdp.exe.pdf", "r".repeat(300));
    let (_, group, _) = app
        .uploaded_group(&ada, id, &sent, &pdf, json!({"name": "Named"}))
        .await;
    let named = app
        .get(
            &format!("/projects/{id}/groups/{}/documents?details=meta", group["id"]),
            &ada.token,
        )
        .await
        .expect(200);
    let kept = named[0]["meta"]["file_name"].as_str().unwrap();
    assert_eq!(kept.chars().count(), lector_core::validate::MAX_NAME_CHARS, "{kept}");
    assert!(kept.ends_with("….pdf") && !kept.contains('\u{202E}'), "{kept}");
    let document = &documents[0];
    assert_eq!(
        document["meta"],
        json!({"file_name": "rechnung.pdf", "format": "pdf", "pages": 2})
    );
    let segments = document["segments"].as_array().unwrap();
    assert_eq!(segments.len(), 2, "a segment per page");
    assert_eq!(segments[1]["text"], "Seite zwei: Grüße aus Köln");
    assert_eq!(
        document["text"],
        "Muster GmbH\nRechnung Nr. 2024-0017\nGesamtbetrag:\n1.234,50 €\u{c}Seite zwei: Grüße aus Köln"
    );
    let page = &segments[0]["page"];
    assert_eq!(page["number"], 1);
    assert_eq!(page["source"], "TEXT_LAYER");
    assert_eq!(
        (page["width"].as_f64(), page["height"].as_f64()),
        (Some(595.0), Some(842.0))
    );
    let rechnung = word(&segments[0], "Rechnung");
    let left = rechnung["TLx"].as_f64().unwrap();
    assert!((left - 50.0 / 595.0).abs() < 0.002, "{rechnung}");
    assert_eq!(rechnung["TLx"], rechnung["BLx"]);
    assert_eq!(rechnung["TLy"], rechnung["TRy"]);
    assert!(
        rechnung["BRx"].as_f64().unwrap() > left
            && rechnung["BRy"].as_f64().unwrap() > rechnung["TRy"].as_f64().unwrap()
    );
    assert_eq!(rechnung["confidence"], 1.0);
    assert_eq!(rechnung["line"], 1);
    // The amount stands apart from its label: a line of its own, to the right.
    let amount = word(&segments[0], "1.234,50");
    assert_eq!(amount["line"], 3);
    assert!(amount["TLx"].as_f64().unwrap() > 0.6);
    // Annotators tag a span of page 1 with a field and mark page 2 (from 0: 1) annotated.
    app.add_labels(&ada, id, &["total"]).await;
    let session = app.session_over(&ada, id, "Fields", [&document["id"]]).await;
    let at = format!(
        "/projects/{id}/annotations/{}/documents/{}",
        session["id"], document["id"]
    );
    let tag = app
        .post(
            &format!("{at}/segments/{}/tags", segments[0]["id"]),
            &ada.token,
            json!({"label": "total", "text": "1.234,50 €"}),
        )
        .await
        .expect(201);
    let start = "Muster GmbH\nRechnung Nr. 2024-0017\nGesamtbetrag:\n".chars().count() as i64;
    assert_eq!(tag["span"], json!([start, start + 10]), "{tag}");
    let mark = app.mark_annotated(&ada, &format!("{at}/pages/1")).await.expect(200);
    assert_eq!(mark["segment_ids"], json!([segments[1]["id"]]), "{mark}");
    assert_eq!(mark["page"], 1);
    // The session's download keeps the page and the boxes of the tagged part's words.
    let (_, _, file) = app
        .download(
            &ada.token,
            &format!("/projects/{id}/annotations/{}/download?format=jsonl", session["id"]),
        )
        .await;
    let rows: Vec<Value> = String::from_utf8(file)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let total = rows.iter().find(|r| r["label"] == "total").expect("the tagged row");
    assert_eq!(total["page"], "1", "{total}");
    let boxes: Vec<Value> = serde_json::from_str(total["boxes"].as_str().unwrap()).unwrap();
    let texts: Vec<&str> = boxes.iter().map(|b| b["text"].as_str().unwrap()).collect();
    assert_eq!(texts, ["1.234,50", "€"]);
    assert_eq!(boxes[0]["label"], "total");
    assert_eq!(boxes[0]["TLx"], amount["TLx"]);
    let untagged = rows
        .iter()
        .find(|r| r["segment"].as_str().and_then(|s| s.parse::<i64>().ok()) == segments[1]["id"].as_i64())
        .unwrap();
    assert_eq!((&untagged["page"], &untagged["boxes"]), (&json!("2"), &json!("")));

    // A single document read alone answers the same pages.
    let alone = app
        .get(&format!("/projects/{id}/documents/{}", document["id"]), &ada.token)
        .await
        .expect(200);
    assert_eq!(alone["segments"][0]["page"], segments[0]["page"]);

    // A new text sent as the original API sends it (no split, no segments) is cut into pages
    // as the file was: a page whose text is unchanged keeps its words and their boxes.
    let text = document["text"].as_str().unwrap().replace("Köln", "Bonn");
    let edited = app
        .put(
            &format!("/projects/{id}/documents/{}", document["id"]),
            &ada.token,
            json!({"text": text}),
        )
        .await
        .expect(200);
    let pages = edited["segments"].as_array().unwrap();
    assert_eq!(pages.len(), 2, "a segment per page: {edited}");
    assert_eq!(pages[0]["page"], segments[0]["page"], "page 1 keeps its boxes");
    assert_eq!(pages[1]["text"], "Seite zwei: Grüße aus Bonn");
    // Page 2's words changed: it keeps its number and size, without words.
    assert_eq!(pages[1]["page"]["number"], 2, "{edited}");
    assert_eq!(pages[1]["page"]["words"], json!([]), "{edited}");
}

/// A blank page's segment is empty; marking that page marks it, so a session marked page by
/// page finishes.
async fn a_blank_page_is_marked_as_the_others(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let id = app.project_with_classes(&ada, "Letters", "LABEL", &[]).await;
    let pages = vec![
        vec![TextRun::new(50.0, 100.0, 14.0, "Page one")],
        vec![],
        vec![TextRun::new(50.0, 100.0, 14.0, "Page three")],
    ];
    let (_, documents) = app
        .import_file(&ada, id, "letter.pdf", &samples::text_pdf(&pages))
        .await;
    let document = &documents[0];
    let segments = document["segments"].as_array().unwrap();
    let texts: Vec<&str> = segments.iter().map(|s| s["text"].as_str().unwrap()).collect();
    assert_eq!(texts, ["Page one", "", "Page three"]);
    let session = app.session_over(&ada, id, "Pages", [&document["id"]]).await;
    let at = format!(
        "/projects/{id}/annotations/{}/documents/{}",
        session["id"], document["id"]
    );
    for (page, segment) in segments.iter().enumerate() {
        let mark = app
            .mark_annotated(&ada, &format!("{at}/pages/{page}"))
            .await
            .expect(200);
        assert_eq!(mark["segment_ids"], json!([segment["id"]]), "page {page}: {mark}");
    }
    let now = app
        .get(&format!("/projects/{id}/annotations/{}", session["id"]), &ada.token)
        .await
        .expect(200);
    assert_eq!(now["status"], "FINISHED", "{now}");
}

async fn scans_and_images_are_read_by_ocr(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let id = app.project_with_classes(&ada, "Invoices", "LABEL", &[]).await;
    let pdf = samples::text_pdf(&invoice_pages());
    let pages = samples::render(&pdf, 150.0);
    let files = [
        ("scan.pdf", samples::scanned_pdf(&pages, 150.0), 2),
        ("scan.tiff", samples::tiff_pages(&pages), 2),
        ("scan.png", samples::encode(&pages[0], DocumentFormat::Png), 1),
        ("photo.jpg", samples::encode(&pages[0], DocumentFormat::Jpeg), 1),
        ("scan.webp", samples::encode(&pages[0], DocumentFormat::Webp), 1),
    ];
    for (name, bytes, page_count) in files {
        let (uploaded, documents) = app.import_file(&ada, id, name, &bytes).await;
        let preview = uploaded["preview"][1][1].as_str().unwrap();
        assert!(preview.contains("Rechnung Nr. 2024-0017"), "{name}: {preview:?}");
        let segments = documents[0]["segments"].as_array().unwrap();
        assert_eq!(segments.len(), page_count, "{name}");
        assert_eq!(segments[0]["page"]["source"], "OCR", "{name}");
        let number = word(&segments[0], "2024-0017");
        let confidence = number["confidence"].as_f64().unwrap();
        assert!(confidence > 0.5 && confidence <= 1.0, "{name}: {number}");
        // Where the text layer put it: x = 50 pt + "Rechnung Nr. " on an A4 page.
        let rechnung = word(&segments[0], "Rechnung");
        assert!(
            (rechnung["TLx"].as_f64().unwrap() - 50.0 / 595.0).abs() < 0.015,
            "{name}: {rechnung}"
        );
        if page_count == 2 {
            assert!(
                segments[1]["text"].as_str().unwrap().contains("Grüße aus Köln"),
                "{name}"
            );
        }
    }
}

async fn table_operations_refuse_documents(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let id = app.project_with_classes(&ada, "Invoices", "LABEL", &[]).await;
    let pdf = samples::text_pdf(&invoice_pages());
    app.send_form(
        &format!("/projects/{id}/classes/upload"),
        &ada.token,
        "x.pdf",
        &pdf,
        &[],
    )
    .await
    .expect_problem(415, "unsupported_media_type");
    // A document has no columns to map.
    let uploaded = app.upload_file(&ada, id, "x.pdf", &pdf).await.expect(200);
    app.post(
        &format!("/projects/{id}/annotations"),
        &ada.token,
        json!({"name": "Mapped", "file_id": uploaded["id"], "column_mapping": {"text": "text"}}),
    )
    .await
    .expect_problem(422, "validation_failed");
}

async fn a_pdf_uploaded_as_labeled_data_becomes_a_session_of_pages(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let id = app.project_with_classes(&ada, "Invoices", "LABEL", &[]).await;
    let pdf = samples::text_pdf(&invoice_pages());
    let session = app
        .send_form(
            &format!("/projects/{id}/annotations/upload"),
            &ada.token,
            "rechnung.pdf",
            &pdf,
            &[],
        )
        .await
        .expect(200);
    assert_eq!(session["name"], "rechnung");
    let task = app
        .wait_for_task(&ada.token, id, session["task_id"].as_i64().unwrap())
        .await;
    assert_eq!(task["status"], "DONE", "{task}");
    let at = format!("/projects/{id}/annotations/{}", session["id"]);
    let listed = app.get(&format!("{at}/documents"), &ada.token).await.expect(200);
    assert_eq!(listed["document_count"], 1, "one file, one document: {listed}");
    assert_eq!(listed["segment_count"], 2, "a segment per page");
    assert_eq!(listed["annotated_count"], 0, "none annotated yet");
    let documents = listed["documents"].as_array().unwrap();
    let document = app
        .get(&format!("{at}/documents/{}", documents[0]["id"]), &ada.token)
        .await
        .expect(200);
    let segments = document["segments"].as_array().unwrap();
    assert_eq!(segments.len(), 2, "a segment per page");
    assert_eq!(words(&segments[0])[..2], ["Muster", "GmbH"]);
    // Its pages are there to annotate, page by page.
    let page = format!("{at}/documents/{}/pages/0", document["id"]);
    let mark = app.mark_annotated(&ada, &page).await.expect(200);
    assert_eq!(mark["segment_ids"], json!([segments[0]["id"]]), "{mark}");
}

async fn crafted_files_fail_their_own_request(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let id = app.project_with_classes(&ada, "Invoices", "LABEL", &[]).await;
    let mut truncated = samples::text_pdf(&invoice_pages());
    truncated.truncate(truncated.len() / 3);
    let cases: [(&str, Vec<u8>, u16, &str); 5] = [
        ("truncated.pdf", truncated, 422, "PDF"),
        ("huge.png", samples::png_claiming(60_000, 60_000), 413, "60000×60000"),
        ("bomb.pdf", samples::bomb_pdf(600 << 20), 422, "decompression bomb"),
        ("nested.pdf", samples::nested_pdf(200_000), 422, ""),
        (
            "garbage.png",
            b"\x89PNG\r\n\x1a\nthis is not an image at all".to_vec(),
            422,
            "could not be read",
        ),
    ];
    for (name, bytes, status, says) in cases {
        let answer = app.upload_file(&ada, id, name, &bytes).await;
        // The nested PDF may also read (its page text is fine): what matters is no 5xx.
        if name == "nested.pdf" && answer.status == 200 {
            continue;
        }
        let code = if status == 413 {
            "payload_too_large"
        } else {
            "validation_failed"
        };
        let problem = answer.expect_problem(status, code);
        assert!(problem["detail"].as_str().unwrap().contains(says), "{name}: {problem}");
        app.get("/health", &ada.token).await.expect(200);
    }
    // The server and its sandbox still read a good file.
    let pdf = samples::text_pdf(&invoice_pages());
    app.upload_file(&ada, id, "good.pdf", &pdf).await.expect(200);
}
