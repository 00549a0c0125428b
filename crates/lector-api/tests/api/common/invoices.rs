//! An invoice and a LABEL project whose labels are the usual invoice fields, with a READY
//! model trained on short examples of each: for the extraction tests and workflows' extract step.

use super::{Session, TestApp};
use lector_extract::samples::{self, TextRun};
use serde_json::{Value, json};

pub const FIELDS: [&str; 6] = ["invoice_number", "date", "total", "iban", "vendor", "po_number"];

pub fn invoice() -> Vec<u8> {
    samples::text_pdf(&[
        vec![
            TextRun::new(50.0, 80.0, 20.0, "Muster GmbH").bold(),
            TextRun::new(50.0, 140.0, 12.0, "Rechnung Nr. RE-2024-0017"),
            TextRun::new(50.0, 160.0, 12.0, "Datum: 14.03.2024"),
            TextRun::new(50.0, 300.0, 12.0, "Gesamtbetrag:"),
            TextRun::new(400.0, 300.0, 12.0, "1.234,50 €"),
            TextRun::new(50.0, 700.0, 10.0, "IBAN DE89 3704 0044 0532 0130 00"),
        ],
        vec![TextRun::new(50.0, 100.0, 12.0, "Seite 2")],
    ])
}

/// A LABEL project with the invoice fields as labels and a READY model trained on short
/// examples of each; answers the project and model ids.
pub async fn invoice_model(app: &TestApp, ada: &Session) -> (i64, i64) {
    let project = app.project_with_classes(ada, "Invoices", "LABEL", &[]).await;
    app.add_labels(ada, project, &FIELDS).await;
    let documents: Vec<Value> = (0..60)
        .map(|n| {
            let label = FIELDS[n % FIELDS.len()];
            let text = match label {
                "invoice_number" => format!("Invoice number INV-{n:04}"),
                "date" => format!("Invoice date {:02}.03.2024", 1 + n % 28),
                "total" => format!("Total amount {n},50 EUR"),
                "iban" => "Pay to IBAN DE89 3704 0044 0532 0130 00".to_string(),
                "vendor" => format!("From Vendor{n} GmbH, Berlin"),
                _ => format!("Your purchase order PO-{n}"),
            };
            json!({"text": text, "tags": [{"label": label}]})
        })
        .collect();
    app.labeled_session(ada, project, "Fields", documents).await;
    let model = app
        .train_model(ada, project, json!({"display_name": "Invoices v1"}))
        .await;
    assert_eq!(model["status"], "READY", "{model}");
    (project, model["id"].as_i64().unwrap())
}

/// The extraction URL of `model` in `project`, under the project's workspace as `who` reads it.
pub async fn extraction_url(app: &TestApp, who: &Session, project: i64, model: i64) -> String {
    let project_json = app.get(&format!("/projects/{project}"), &who.token).await.expect(200);
    let org = project_json["organization_id"]
        .as_i64()
        .or(project_json["workspace_id"].as_i64())
        .expect("a workspace id");
    format!("/organizations/{org}/projects/{project}/models/{model}/extract")
}

/// An annotated page as an extraction answers it (a PNG data URI), decoded.
pub fn decoded_page(uri: &Value) -> image::DynamicImage {
    use base64::Engine;
    let data = uri
        .as_str()
        .unwrap()
        .strip_prefix("data:image/png;base64,")
        .expect("a PNG data URI");
    let png = base64::engine::general_purpose::STANDARD.decode(data).unwrap();
    image::load_from_memory(&png).unwrap()
}
