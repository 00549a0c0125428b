//! What an extraction costs the server and how it refuses, through HTTPS on both backends:
//! annotated pages of a PDF whose pages claim huge boxes are drawn no larger than image pages
//! (a few KB must not make the server decode hundreds of MB), and a body that is no multipart
//! form answers 415 as every other upload does.

use crate::common::invoices::{decoded_page, extraction_url, invoice_model};
use crate::common::{Session, TestApp};
use lector_extract::annotate::MAX_ANNOTATED_SIDE;
use lector_extract::samples::{self, PageBoxes, TextRun};
use serde_json::Value;

backend_tests!(
    annotated_pages_of_huge_pdf_pages_are_no_larger_than_images,
    an_extraction_that_is_no_form_answers_415,
);

/// The extraction URL of the invoice model of a project of `ada`'s.
async fn invoice_extraction_url(app: &TestApp, ada: &Session) -> String {
    let (project, model) = invoice_model(app, ada).await;
    extraction_url(app, ada, project, model).await
}

async fn annotated_pages_of_huge_pdf_pages_are_no_larger_than_images(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let url = invoice_extraction_url(&app, &ada).await;
    // Twenty pages of 5000 × 5000 points in a few KB: 6944 pixels a side at 100 dpi, 40 Mpx
    // a page after the pixel limit (800 MB for the document) before they were held to the
    // images' side.
    let boxes = PageBoxes {
        media: [0.0, 0.0, 5000.0, 5000.0],
        crop: None,
    };
    let pages: Vec<Vec<TextRun>> = (1..=20)
        .map(|n| vec![TextRun::new(72.0, 100.0, 12.0, format!("Rechnung RE-2024-{n:04}"))])
        .collect();
    let pdf = samples::text_pdf_in(&pages, boxes);
    assert!(pdf.len() < 16 * 1024, "{} bytes", pdf.len());
    let result = app
        .send_form(
            &format!("{url}?return_annotated_pages=true"),
            &ada.token,
            "huge.pdf",
            &pdf,
            &[],
        )
        .await
        .expect(200);
    let images = result["documents"][0]["annotated_pages"]
        .as_array()
        .expect("annotated pages");
    assert_eq!(images.len(), 20);
    for image in images {
        let (width, height) = (decoded_page(image).width(), decoded_page(image).height());
        assert!(width.max(height) <= MAX_ANNOTATED_SIDE, "{width}×{height}");
        assert!(
            width.min(height) >= MAX_ANNOTATED_SIDE - 1,
            "{width}×{height}: the page is square"
        );
    }
}

async fn an_extraction_that_is_no_form_answers_415(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let url = invoice_extraction_url(&app, &ada).await;
    for content_type in ["application/json", "multipart/form-data"] {
        let answer = app
            .client
            .post(app.url(&url))
            .bearer_auth(&ada.token)
            .header("content-type", content_type)
            .body("{\"file\": \"x\"}")
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 415, "{content_type}");
        let problem: Value = answer.json().await.unwrap();
        assert_eq!(problem["code"], "unsupported_media_type", "{content_type}: {problem}");
    }
}
