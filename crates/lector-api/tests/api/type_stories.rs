//! The whole loop for the LABEL, CLASSLABEL and ABSA project types through HTTPS on both
//! backends (CLASS has its own in `analyses.rs` and `corrections.rs`): labelled segments →
//! a model → a batch analysis of a 1,000-row CSV tags every document, mostly right → a
//! correction session fixes two tags → a second model trains on both sessions.

use crate::common::words::{BAD, GOOD};
use crate::common::{Session, TestApp};
use serde_json::{Value, json};

backend_tests!(label_loop, classlabel_loop, absa_loop);

const FOOD: [&str; 4] = ["pizza", "pasta", "soup", "steak"];
const SERVICE: [&str; 4] = ["waiter", "staff", "host", "waitress"];

/// A text about `n`: food or service (by `n % 2`), good or bad (by `n / 2 % 2`); answers the
/// text, the aspect and whether it is good.
fn review(n: usize) -> (String, &'static str, bool) {
    let good = (n / 2).is_multiple_of(2);
    // The first eight words of each list.
    let word = if good { GOOD[n % 8] } else { BAD[n % 8] };
    if n.is_multiple_of(2) {
        (format!("The {} tasted {word} tonight.", FOOD[n % 4]), "food", good)
    } else {
        (format!("Our {} was {word} to us.", SERVICE[n % 4]), "service", good)
    }
}

/// The tag a review carries in a project of `kind`.
fn tag(kind: &str, aspect: &str, good: bool) -> Value {
    let (positive, negative) = if kind == "ABSA" {
        ("positive", "negative")
    } else {
        ("good", "bad")
    };
    let label = if good { positive } else { negative };
    match kind {
        "LABEL" => json!({"label": label}),
        _ => json!({"class": aspect, "label": label}),
    }
}

/// An analysis's documents filtered by a class and a label are those with one tag of that class
/// and that label, as `page` (every document with its tags) shows them.
async fn filters_narrow_to_one_pair(app: &TestApp, ada: &Session, project: i64, analysis: i64, page: &Value) {
    let id_of =
        |list: &Value, name: &str| list.as_array().unwrap().iter().find(|x| x["name"] == name).unwrap()["id"].clone();
    let classes = app
        .get(&format!("/projects/{project}/classes"), &ada.token)
        .await
        .expect(200);
    let labels = app
        .get(&format!("/projects/{project}/labels"), &ada.token)
        .await
        .expect(200);
    let negative = if labels.to_string().contains("\"negative\"") {
        "negative"
    } else {
        "bad"
    };
    let (food, bad) = (id_of(&classes, "food"), id_of(&labels, negative));
    let has = |d: &Value, pair: &dyn Fn(&Value) -> bool| {
        d["segments"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|s| s["tags"].as_array().unwrap())
            .any(pair)
    };
    let ids = |documents: &[&Value]| documents.iter().map(|d| d["id"].as_i64().unwrap()).collect::<Vec<_>>();
    let documents: Vec<&Value> = page["documents"].as_array().unwrap().iter().collect();
    let food_bad: Vec<&Value> = documents
        .iter()
        .copied()
        .filter(|d| has(d, &|t| t["class"] == "food" && t["label"] == negative))
        .collect();
    let food_or_bad = documents
        .iter()
        .filter(|d| has(d, &|t| t["class"] == "food") || has(d, &|t| t["label"] == negative))
        .count();
    assert!(
        !food_bad.is_empty() && food_bad.len() < food_or_bad,
        "{} of {food_or_bad}",
        food_bad.len()
    );
    let filtered = app
        .get(
            &format!("/analyses/{analysis}/documents?classes={food}&labels={bad}&limit=1000"),
            &ada.token,
        )
        .await
        .expect(200);
    let filtered: Vec<&Value> = filtered["documents"].as_array().unwrap().iter().collect();
    assert_eq!(ids(&filtered), ids(&food_bad));
}

async fn the_loop(app: &TestApp, ada: &Session, kind: &str) {
    let classes: &[&str] = if kind == "LABEL" { &[] } else { &["food", "service"] };
    let labels: &[&str] = if kind == "ABSA" { &[] } else { &["good", "bad"] };
    let project = app.project_with(ada, kind, classes, labels).await;
    let documents: Vec<Value> = (0..64)
        .map(|n| {
            let (text, aspect, good) = review(n);
            json!({"text": text, "tags": [tag(kind, aspect, good)]})
        })
        .collect();
    let labeling = app.labeled_session(ada, project, "Reviews", documents).await;
    let first = trained(app, ada, project, json!({"display_name": format!("{kind} v1")})).await;

    // A batch analysis of a 1,000-row CSV tags every document, mostly right.
    let mut csv = String::from("text\n");
    for n in 0..1000 {
        csv.push_str(&format!("\"{}\"\n", review(n + 7).0));
    }
    let upload = app
        .send_form("/analyses/upload", &ada.token, "reviews.csv", csv.as_bytes(), &[])
        .await
        .expect(200);
    let created = app
        .post(
            "/analyses",
            &ada.token,
            json!({"model_id": first["id"], "file_id": upload["id"], "column_name": "text", "split": false}),
        )
        .await
        .expect(201);
    let task = app
        .wait_for_task(&ada.token, project, created["task_id"].as_i64().unwrap())
        .await;
    assert_eq!(task["status"], "DONE", "{task}");
    let page = app
        .get(
            &format!("/analyses/{}/documents?details=tags&limit=1000", created["id"]),
            &ada.token,
        )
        .await
        .expect(200);
    assert_eq!(page["count"], 1000);
    let mut right = 0;
    for (n, document) in page["documents"].as_array().unwrap().iter().enumerate() {
        let (text, aspect, good) = review(n + 7);
        assert_eq!(document["text"], text);
        let tags = document["segments"][0]["tags"].as_array().unwrap();
        assert!(!tags.is_empty(), "{kind}: no tags for {text}");
        let wanted = tag(kind, aspect, good);
        right += usize::from(
            tags.iter()
                .any(|t| t["label"] == wanted["label"] && (kind == "LABEL" || t["class"] == wanted["class"])),
        );
    }
    assert!(right >= 800, "{kind}: {right} of 1000 right");
    if kind != "LABEL" {
        filters_narrow_to_one_pair(app, ada, project, created["id"].as_i64().unwrap(), &page).await;
    }

    // A correction session fixes two tags.
    let corrections = format!("/projects/{project}/corrections");
    let correction = app
        .correction(&ada.token, project, json!({"model_id": first["id"], "sample_size": 5}))
        .await;
    let cid = correction["id"].as_i64().unwrap();
    let docs = app
        .get(&format!("{corrections}/{cid}/documents?details=tags"), &ada.token)
        .await
        .expect(200);
    let mut fixed = 0;
    for document in docs["documents"].as_array().unwrap() {
        for segment in document["segments"].as_array().unwrap() {
            let at = format!(
                "{corrections}/{cid}/documents/{}/segments/{}",
                document["id"], segment["id"]
            );
            if fixed < 2
                && let Some(first_tag) = segment["tags"].as_array().unwrap().first()
            {
                // Flip the label: the model said one thing, the corrector another.
                let flipped = match first_tag["label"].as_str() {
                    Some("good") => "bad",
                    Some("bad") => "good",
                    Some("positive") => "negative",
                    _ => "positive",
                };
                let mut body = json!({"label": flipped});
                if kind != "LABEL" {
                    body["class"] = first_tag["class"].clone();
                }
                app.put(&format!("{at}/tags/{}", first_tag["id"]), &ada.token, body)
                    .await
                    .expect(200);
                fixed += 1;
            }
            app.mark_annotated(ada, &at).await.expect(200);
        }
    }
    assert_eq!(fixed, 2, "{kind}: two tags fixed");

    // A second model learns from both sessions.
    let second = trained(
        app,
        ada,
        project,
        json!({"display_name": format!("{kind} v2"), "annotation_ids": [labeling["id"], cid]}),
    )
    .await;
    assert!(second["score"].as_f64().is_some(), "{second}");
}

/// Trains and waits; answers the READY model.
async fn trained(app: &TestApp, who: &Session, project: i64, body: Value) -> Value {
    let model = app.train_model(who, project, body).await;
    assert_eq!(model["status"], "READY", "{model}");
    model
}

async fn label_loop(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    the_loop(&app, &ada, "LABEL").await;
}

async fn classlabel_loop(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    the_loop(&app, &ada, "CLASSLABEL").await;
}

async fn absa_loop(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    the_loop(&app, &ada, "ABSA").await;
}
