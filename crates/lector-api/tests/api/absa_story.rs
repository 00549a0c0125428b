//! The ABSA story through HTTPS on both backends, on real reviews: the SemEval-2016 restaurant
//! sentences of `../shared/data/absa-rest16-en` (aspect category = class, polarity = label)
//! are labelled in a session, a model trains on them without a base model, and ad-hoc analysis
//! of held-out test sentences finds their categories and polarities about as well as
//! `lector-ml` does on its own (docs/BENCHMARKS.md: 71 aspect F1, 82 sentiment accuracy on the
//! whole test file).
//!
//! The data lives beside the repository, not in it. Without it the test prints a notice and
//! passes on a laptop, and fails in CI (`CI` set), as the PostgreSQL tests do.

use crate::common::TestApp;
use crate::common::tickets::analyze;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

backend_tests!(absa_model_story);

/// Training sentences used (of 1,530) and test sentences analysed (of 583).
const TRAIN_SENTENCES: usize = 1_530;
const TEST_SENTENCES: usize = 150;

/// A sentence with its distinct (category, polarity) pairs.
struct Review {
    text: String,
    tags: BTreeSet<(String, String)>,
}

fn data_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("LECTOR_SHARED_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"))
        .join("absa-rest16-en");
    if dir.join("train.jsonl").is_file() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "the ABSA story needs {} (set LECTOR_SHARED_DATA)",
        dir.display()
    );
    eprintln!("notice: {} is missing; the ABSA story is skipped", dir.display());
    None
}

fn reviews(path: PathBuf, limit: usize) -> Vec<Review> {
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .take(limit)
        .map(|line| {
            let row: Value = serde_json::from_str(line).unwrap();
            let tags = row["labels"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| {
                    (
                        l["category"].as_str().unwrap().to_owned(),
                        l["polarity"].as_str().unwrap().to_owned(),
                    )
                })
                .collect();
            Review {
                text: row["text"].as_str().unwrap().to_owned(),
                tags,
            }
        })
        .collect()
}

/// The predicted (class, label) pairs of each analysed document, over all its segments.
fn predicted_pairs(result: &Value) -> Vec<BTreeMap<String, String>> {
    result["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let mut pairs = BTreeMap::new();
            for segment in d["segments"].as_array().unwrap() {
                for tag in segment["tags"].as_array().unwrap() {
                    let class = tag["class"].as_str().expect("an ABSA tag has a class");
                    let label = tag["label"].as_str().expect("an ABSA tag has a label");
                    pairs.insert(class.to_owned(), label.to_owned());
                }
            }
            pairs
        })
        .collect()
}

async fn absa_model_story(app: TestApp) {
    let Some(dir) = data_dir() else { return };
    let train = reviews(dir.join("train.jsonl"), TRAIN_SENTENCES);
    let test = reviews(dir.join("test.jsonl"), TEST_SENTENCES);
    let categories: BTreeSet<&str> = train
        .iter()
        .flat_map(|r| r.tags.iter().map(|(c, _)| c.as_str()))
        .collect();

    let ada = app.register("ada@example.org").await;
    let classes: Vec<&str> = categories.iter().copied().collect();
    let project = app.project_with_classes(&ada, "Restaurants", "ABSA", &classes).await;
    let documents: Vec<Value> = train
        .iter()
        .map(|r| {
            // A category with opinions of two polarities keeps one: the model gives one label
            // per class.
            let by_class: BTreeMap<&str, &str> = r.tags.iter().map(|(c, p)| (c.as_str(), p.as_str())).collect();
            let tags: Vec<Value> = by_class
                .into_iter()
                .map(|(c, p)| json!({"class": c, "label": p}))
                .collect();
            json!({"text": r.text, "tags": tags})
        })
        .collect();
    let session = app
        .labeled_session(&ada, project, "SemEval 2016 train", documents)
        .await;
    assert_eq!(session["annotated_count"], TRAIN_SENTENCES);

    let model = app
        .post(
            &format!("/projects/{project}/models"),
            &ada.token,
            json!({"display_name": "Restaurant aspects", "name": "restaurant-aspects", "language": "en"}),
        )
        .await
        .expect(201);
    assert_eq!(model["type"], "ABSA");
    app.wait_for_task(&ada.token, project, model["task_id"].as_i64().unwrap())
        .await;
    let model = app
        .get(&format!("/projects/{project}/models/{}", model["id"]), &ada.token)
        .await
        .expect(200);
    assert_eq!(model["status"], "READY", "{model}");
    assert_eq!(model["labels"], json!(["negative", "neutral", "positive"]));
    let score = model["score"].as_f64().expect("a score");
    assert!(score > 0.3 && score <= 1.0, "macro F1 on the held-out fifth: {score}");

    let texts: Vec<&str> = test.iter().map(|r| r.text.as_str()).collect();
    let result = analyze(&app, &ada, &model["id"], &texts).await;
    assert_eq!(result["type"], "ABSA");
    let predicted = predicted_pairs(&result);
    assert_eq!(predicted.len(), test.len());

    // Aspect categories: micro F1 over the sentences' distinct categories. Sentiment: accuracy
    // on the categories found, as docs/BENCHMARKS.md scores it.
    let (mut found, mut guessed, mut gold, mut polarity_right) = (0usize, 0usize, 0usize, 0usize);
    for (review, pairs) in test.iter().zip(&predicted) {
        let wanted: BTreeMap<&str, &str> = review.tags.iter().map(|(c, p)| (c.as_str(), p.as_str())).collect();
        gold += wanted.len();
        guessed += pairs.len();
        for (class, label) in pairs {
            if let Some(polarity) = wanted.get(class.as_str()) {
                found += 1;
                polarity_right +=
                    usize::from(review.tags.contains(&(class.clone(), label.clone())) || *polarity == label);
            }
        }
    }
    let f1 = 2.0 * found as f64 / (gold + guessed) as f64;
    let sentiment = polarity_right as f64 / found.max(1) as f64;
    eprintln!(
        "ABSA story: aspect F1 {f1:.3}, sentiment accuracy {sentiment:.3} on {} sentences",
        test.len()
    );
    assert!(
        f1 >= 0.6,
        "aspect-category F1 {f1:.3} (lector-ml alone: 0.71 on the whole test file)"
    );
    assert!(
        sentiment >= 0.7,
        "sentiment accuracy {sentiment:.3} (lector-ml alone: 0.82)"
    );
}
