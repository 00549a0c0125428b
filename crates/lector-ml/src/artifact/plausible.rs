//! What an artifact's header may claim. The checksum is no signature: anyone who can upload a
//! model writes its header, and the service then predicts with it for every request that names
//! the model. So the header is held to what the service itself trains:
//!
//! - at most [`MAX_OUTPUTS`] classes and as many labels (a project's limit), because prediction
//!   builds a tag per class a segment passes, and a header of 200,000 classes would make one
//!   analysis of a few documents fill the node's memory;
//! - a recorded score and its companions between 0 and 1 (the product shows the score, and
//!   compares models by it);
//! - recorded metrics of the size evaluation writes: per-name figures for, and a square
//!   confusion matrix over, at most [`MAX_OUTPUTS`] names and the empty one (a class tagged
//!   without a label), each name (and those of the featurisation and of the encoder's use) of at
//!   most [`lector_core::validate::MAX_NAME_CHARS`] characters: the store keeps the metrics
//!   beside the model and answers them with it, and a header is up to 64 MiB, room for a
//!   matrix of millions of zeros that every answer would parse again;
//! - class and label names as a project's are: not empty, at most
//!   [`lector_core::validate::MAX_NAME_CHARS`] characters, no control or bidi characters, each
//!   once (the names are the tags every analysis answers, and a name twice makes two outputs
//!   one tag);
//! - a language of at most [`MAX_LANGUAGE_CHARS`] characters, and a field model (which the
//!   store keeps and every extraction with the model parses) of at most
//!   [`MAX_FIELD_MODEL_BYTES`]; what it says is the caller's to check.
//!
//! The header's numbers are finite by construction (JSON has no NaN, and serde refuses a
//! number beyond an `f32`'s range). The weights are binary: a NaN weight would make every
//! confidence NaN, which the database refuses to store, so they are checked where they are
//! read (`Reader::f32`, `Reader::bf16`).

use crate::error::{Error, Result};
use crate::metrics::Metrics;
use crate::model::ModelInfo;

/// Classes, and labels, a model may have: the service's limit per project.
pub const MAX_OUTPUTS: usize = 1000;

/// Longest language code a header may record.
pub const MAX_LANGUAGE_CHARS: usize = 16;

/// Largest field model a header may carry: a learnt field keeps 400 examples of a handful of
/// words each, and a project has far fewer than the 200 fields a field model holds.
pub const MAX_FIELD_MODEL_BYTES: usize = 16 << 20;

/// Refuses a header that claims what no model the service trains has.
pub(super) fn check_header(info: &ModelInfo) -> Result<()> {
    if info.classes.len() > MAX_OUTPUTS || info.labels.len() > MAX_OUTPUTS {
        return Err(implausible(format!(
            "{} classes and {} labels, more than the {MAX_OUTPUTS} a project may have",
            info.classes.len(),
            info.labels.len()
        )));
    }
    for (what, names) in [("class", &info.classes), ("label", &info.labels)] {
        if let Some(problem) = name_problem(names) {
            return Err(implausible(format!("a {what} name {problem}")));
        }
    }
    if info
        .language
        .as_ref()
        .is_some_and(|l| l.chars().count() > MAX_LANGUAGE_CHARS)
    {
        return Err(implausible(format!(
            "a language code over {MAX_LANGUAGE_CHARS} characters"
        )));
    }
    if info
        .field_model
        .as_ref()
        .is_some_and(|f| f.len() > MAX_FIELD_MODEL_BYTES)
    {
        return Err(implausible(format!("a field model over {MAX_FIELD_MODEL_BYTES} bytes")));
    }
    if let Some(metrics) = &info.metrics {
        if let Some(problem) = metrics_size_problem(metrics) {
            return Err(implausible(problem));
        }
        let shares = [metrics.score, metrics.accuracy, metrics.micro_f1, metrics.macro_f1];
        let per_name = metrics.classes.iter().chain(&metrics.labels);
        let shares = shares
            .into_iter()
            .chain(per_name.flat_map(|n| [n.precision, n.recall, n.f1]))
            .chain(metrics.aspect_f1)
            .chain(metrics.sentiment_accuracy);
        if !shares.into_iter().all(|v| (0.0..=1.0).contains(&v)) {
            return Err(implausible("a score outside 0 to 1".into()));
        }
    }
    Ok(())
}

/// Names a metrics list or confusion matrix may have: a project's classes or labels (the test
/// side may have some the model never learnt) and the empty label of a class tagged without one.
const MAX_METRICS_NAMES: usize = MAX_OUTPUTS + 1;

/// What makes `metrics` larger than an evaluation writes them, if anything.
fn metrics_size_problem(metrics: &Metrics) -> Option<String> {
    use lector_core::validate::MAX_NAME_CHARS;
    let too_long = |name: &str| name.chars().nth(MAX_NAME_CHARS).is_some();
    let lists = [("classes", &metrics.classes), ("labels", &metrics.labels)];
    for (what, scores) in lists {
        if scores.len() > MAX_METRICS_NAMES {
            return Some(format!(
                "metrics for {} {what}, more than {MAX_METRICS_NAMES}",
                scores.len()
            ));
        }
        if scores.iter().any(|s| too_long(&s.name)) {
            return Some(format!(
                "metrics for a name of more than {MAX_NAME_CHARS} characters in {what}"
            ));
        }
    }
    for (what, name) in [("featurisation", &metrics.features), ("encoder use", &metrics.encoder)] {
        if name.as_deref().is_some_and(too_long) {
            return Some(format!("a {what} name of more than {MAX_NAME_CHARS} characters"));
        }
    }
    let matrix = metrics.confusion.as_ref()?;
    let n = matrix.names.len();
    if n > MAX_METRICS_NAMES {
        return Some(format!(
            "a confusion matrix of {n} names, more than {MAX_METRICS_NAMES}"
        ));
    }
    if matrix.names.iter().any(|name| too_long(name)) {
        return Some(format!(
            "a confusion matrix name of more than {MAX_NAME_CHARS} characters"
        ));
    }
    if matrix.matrix.len() != n || matrix.matrix.iter().any(|row| row.len() != n) {
        return Some(format!(
            "a confusion matrix that is not {n} by {n}, one row and column a name"
        ));
    }
    None
}

/// What is wrong with one of `names`, held to the rules of a project's class and label names.
fn name_problem(names: &[String]) -> Option<String> {
    use lector_core::validate::{MAX_NAME_CHARS, TextKind, forbidden_char};
    let mut seen = std::collections::HashSet::new();
    names.iter().find_map(|name| {
        let shown: String = name.chars().take(40).collect();
        if name.trim().is_empty() {
            Some("that is empty".into())
        } else if name.chars().count() > MAX_NAME_CHARS {
            Some(format!("{shown:?}… longer than {MAX_NAME_CHARS} characters"))
        } else if let Some(c) = forbidden_char(name, TextKind::Short) {
            Some(format!("{shown:?} with the character U+{:04X}", c as u32))
        } else if !seen.insert(name.trim()) {
            Some(format!("{shown:?} twice"))
        } else {
            None
        }
    })
}

fn implausible(what: String) -> Error {
    Error::artifact(format!("the header claims {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::artifact::tests::{small_model, with_header};
    use crate::{Example, Model, Tag};
    use serde_json::{Value, json};

    /// The small model's header with `edit` made to its JSON (which may hold what serde would
    /// not write, such as a number too large for an `f32`), read back.
    fn read_edited(edit: impl FnOnce(&mut Value)) -> Result<Model> {
        let model = small_model();
        let mut header = serde_json::to_value(&model.info).unwrap();
        let evaluated = model.evaluate(&[Example::new("good", vec![Tag::label("a")])]);
        header["metrics"] = serde_json::to_value(evaluated).unwrap();
        edit(&mut header);
        Model::from_bytes(&with_header(&model, &serde_json::to_vec(&header).unwrap()))
    }

    fn refused(edit: impl FnOnce(&mut Value)) -> String {
        match read_edited(edit) {
            Err(Error::Artifact(message)) => message,
            other => panic!("accepted: {:?}", other.map(|m| m.info.classes.len())),
        }
    }

    #[test]
    fn names_are_held_to_a_projects_rules() {
        for (names, said) in [
            (json!(["a", ""]), "empty"),
            (json!(["a", "x".repeat(121)]), "longer than 120"),
            (json!(["a\u{0}b", "c"]), "U+0000"),
            (json!(["in\u{202E}kcab", "c"]), "U+202E"),
            (json!(["billing", "billing"]), "twice"),
        ] {
            let message = refused(|header| header["classes"] = names.clone());
            assert!(message.contains(said), "{said}: {message}");
        }
    }

    #[test]
    fn a_trained_model_passes() {
        let model = read_edited(|_| {}).unwrap();
        assert!(model.info.metrics.is_some());
    }

    #[test]
    fn more_outputs_than_a_project_may_have_are_refused() {
        let names: Vec<String> = (0..=MAX_OUTPUTS).map(|i| i.to_string()).collect();
        let message = refused(|header| header["labels"] = json!(names));
        assert!(message.contains("1001 labels"), "{message}");
        let message = refused(|header| header["classes"] = json!(names));
        assert!(message.contains("1001 classes"), "{message}");
    }

    #[test]
    fn a_language_and_a_field_model_travel_within_bounds() {
        let model = read_edited(|header| {
            header["language"] = json!("de");
            header["field_model"] = json!("{\"fields\":[]}");
        })
        .unwrap();
        assert_eq!(model.info.language.as_deref(), Some("de"));
        assert_eq!(model.info.field_model.as_deref(), Some("{\"fields\":[]}"));
        let message = refused(|header| header["language"] = json!("x".repeat(17)));
        assert!(message.contains("language code over 16"), "{message}");
        let message = refused(|header| header["field_model"] = json!(" ".repeat(MAX_FIELD_MODEL_BYTES + 1)));
        assert!(message.contains("field model over"), "{message}");
    }

    /// What JSON cannot say: a NaN or infinite calibration number (the weights, binary, are
    /// checked in `artifact::tests::a_weight_that_is_not_a_number_is_refused`).
    #[test]
    fn a_header_number_beyond_an_f32_is_refused() {
        let message = refused(|header| header["calibration"]["temperature"] = json!(1e39));
        assert!(message.contains("out of range"), "{message}");
    }

    #[test]
    fn a_score_outside_zero_to_one_is_refused() {
        for field in ["score", "macro_f1", "accuracy"] {
            let message = refused(|header| header["metrics"][field] = json!(7.5));
            assert!(message.contains("outside 0 to 1"), "{field}: {message}");
        }
        let message = refused(|header| header["metrics"]["labels"][0]["f1"] = json!(-3.0));
        assert!(message.contains("outside 0 to 1"), "{message}");
    }

    /// Metrics larger than an evaluation writes are refused: the store keeps them with the
    /// model and answers them with it (a 49 MB matrix of zeros cost some 780 MB a read).
    #[test]
    fn metrics_larger_than_an_evaluation_writes_are_refused() {
        let names: Vec<String> = (0..=MAX_METRICS_NAMES).map(|i| format!("l{i}")).collect();
        let message = refused(|header| header["metrics"]["confusion"]["names"] = json!(names));
        assert!(message.contains("confusion matrix of 1002 names"), "{message}");
        // Names as the model's, rows of zeros beyond them.
        let wide = vec![vec![0u64; 3000]; 2];
        let message = refused(|header| header["metrics"]["confusion"]["matrix"] = json!(wide));
        assert!(message.contains("not 2 by 2"), "{message}");
        let tall = vec![vec![0u64; 2]; 3000];
        let message = refused(|header| header["metrics"]["confusion"]["matrix"] = json!(tall));
        assert!(message.contains("not 2 by 2"), "{message}");
        let long = "x".repeat(121);
        let message = refused(|header| header["metrics"]["confusion"]["names"][0] = json!(long));
        assert!(message.contains("more than 120 characters"), "{message}");
        for field in ["features", "encoder"] {
            let message = refused(|header| header["metrics"][field] = json!(long));
            assert!(message.contains("more than 120 characters"), "{field}: {message}");
        }
        let message = refused(|header| header["metrics"]["labels"][0]["name"] = json!(long));
        assert!(message.contains("more than 120 characters in labels"), "{message}");
        let message = refused(|header| {
            let one = header["metrics"]["labels"][0].clone();
            header["metrics"]["classes"] = json!(vec![one; MAX_METRICS_NAMES + 1]);
        });
        assert!(message.contains("metrics for 1002 classes"), "{message}");
    }

    /// What evaluation writes at the most passes: a name of every label of a project and the
    /// empty one, in a square matrix.
    #[test]
    fn the_largest_metrics_an_evaluation_writes_pass() {
        let mut names: Vec<String> = (0..MAX_OUTPUTS).map(|i| format!("l{i}")).collect();
        names.push(String::new());
        let matrix = vec![vec![0u64; names.len()]; names.len()];
        let model = read_edited(|header| {
            header["metrics"]["confusion"] = json!({"names": names, "matrix": matrix});
        })
        .unwrap();
        let confusion = model.info.metrics.unwrap().confusion.unwrap();
        assert_eq!(confusion.names.len(), MAX_METRICS_NAMES);
    }
}
