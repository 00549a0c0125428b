//! Support tickets of three classes (billing, login, shipping) for the model stories: 42
//! labelled sentences, 15 unseen ones each clearly of one class, and the calls that label,
//! analyse and read the answers.

use super::{Session, TestApp};
use serde_json::{Value, json};

pub const BILLING: [&str; 14] = [
    "My invoice shows the wrong amount.",
    "I was charged twice for the same order.",
    "Please refund the payment you took yesterday.",
    "The bill for March is far too high.",
    "Why did my credit card get charged again?",
    "I need a copy of my invoice for taxes.",
    "The refund has still not reached my bank.",
    "You billed me for a plan I cancelled.",
    "My payment failed but the money is gone.",
    "Can I pay the invoice by bank transfer?",
    "There is an extra fee on my bill.",
    "I want my money back for the double charge.",
    "The invoice total does not match the price.",
    "Your billing department charged the wrong card.",
];

pub const LOGIN: [&str; 14] = [
    "I cannot log in to my account.",
    "The password reset link does not work.",
    "My account is locked after three attempts.",
    "Sign in fails with an unknown error.",
    "I forgot my password and username.",
    "The two-factor code never arrives.",
    "Login keeps redirecting me to the start page.",
    "I cannot sign in since the update.",
    "My password is rejected although it is right.",
    "The app logs me out every few minutes.",
    "How do I unlock my account?",
    "Resetting the password gives an error.",
    "I never receive the login verification code.",
    "Sign in with my email address does not work.",
];

pub const SHIPPING: [&str; 14] = [
    "My package has not arrived yet.",
    "The delivery is two weeks late.",
    "The courier left the parcel at the wrong door.",
    "Tracking shows no update since Monday.",
    "When will my order be shipped?",
    "The parcel arrived damaged.",
    "The delivery driver never came.",
    "Can you ship to a different address?",
    "My tracking number does not work.",
    "The package was returned to the warehouse.",
    "Shipping takes much longer than promised.",
    "The courier says the address is wrong.",
    "Half of my order is missing from the parcel.",
    "I want express delivery for my next package.",
];

/// Unseen sentences, each clearly of one class.
pub const UNSEEN: [(&str, &str); 15] = [
    ("I was charged for an invoice I already paid.", "billing"),
    ("Please refund my payment.", "billing"),
    ("The bill is wrong again.", "billing"),
    ("My card was charged twice this month.", "billing"),
    ("Where is the refund for my invoice?", "billing"),
    ("I cannot log in with my password.", "login"),
    ("My account got locked.", "login"),
    ("The sign in page rejects my password.", "login"),
    ("The verification code for login never arrives.", "login"),
    ("I forgot my password again.", "login"),
    ("My package is late.", "shipping"),
    ("The courier lost my parcel.", "shipping"),
    ("Tracking says the delivery failed.", "shipping"),
    ("When will the package be shipped?", "shipping"),
    ("The parcel delivery is delayed.", "shipping"),
];

pub fn labeled(texts: &[&str], class: &str) -> Vec<Value> {
    texts
        .iter()
        .map(|t| json!({"text": t, "tags": [{"class": class}]}))
        .collect()
}

/// Queues the training of a model of `project` called `name` (201, QUEUED); answers the model.
pub async fn queue_training(app: &TestApp, who: &Session, project: i64, name: &str) -> Value {
    let path = format!("/projects/{project}/models");
    app.post(&path, &who.token, json!({"display_name": name}))
        .await
        .expect(201)
}

/// A CLASS project with a labeling session of 42 annotated segments; answers (project, session).
pub async fn labeled_tickets(app: &TestApp, owner: &Session, name: &str) -> (i64, i64) {
    let project = app
        .project_with_classes(owner, name, "CLASS", &["billing", "login", "shipping"])
        .await;
    let mut documents = labeled(&BILLING, "billing");
    documents.extend(labeled(&LOGIN, "login"));
    documents.extend(labeled(&SHIPPING, "shipping"));
    let session = app.labeled_session(owner, project, "Tickets", documents).await;
    assert_eq!(session["annotated_count"], 42);
    (project, session["id"].as_i64().unwrap())
}

pub async fn analyze(app: &TestApp, who: &Session, model_id: &Value, texts: &[&str]) -> Value {
    let documents: Vec<Value> = texts.iter().map(|t| json!({"text": t})).collect();
    app.post(
        "/analyze",
        &who.token,
        json!({"model_id": model_id, "documents": documents, "split": false}),
    )
    .await
    .expect(200)
}

/// The class of the most confident tag of each document's first segment.
pub fn top_classes(result: &Value) -> Vec<Option<String>> {
    result["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            d["segments"][0]["tags"]
                .as_array()
                .unwrap()
                .iter()
                .max_by(|a, b| {
                    a["confidence"]
                        .as_f64()
                        .unwrap()
                        .total_cmp(&b["confidence"].as_f64().unwrap())
                })
                .map(|t| t["class"].as_str().unwrap().to_owned())
        })
        .collect()
}

/// Uploads a model file to `other` as a new user there and checks it tags `texts` as `expected`
/// (an analysis answer of the original server).
pub async fn predicts_the_same_on(other: &TestApp, email: &str, bytes: &[u8], texts: &[&str], expected: &Value) {
    let who = other.register(email).await;
    let uploaded = other
        .send_form(
            "/models/upload",
            &who.token,
            "tickets.lector-model",
            bytes,
            &[("display_name", "Tickets")],
        )
        .await
        .expect(200);
    let there = analyze(other, &who, &uploaded["id"], texts).await;
    assert_eq!(
        there["documents"], expected["documents"],
        "identical predictions on another server"
    );
}
