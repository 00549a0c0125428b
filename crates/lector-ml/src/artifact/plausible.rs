//! What an artifact's header may claim. The checksum is no signature: anyone who can upload a
//! model writes its header, and the service then predicts with it for every request that names
//! the model. So the header is held to what the service itself trains:
//!
//! - at most [`MAX_OUTPUTS`] classes and as many labels (a project's limit), because prediction
//!   builds a tag per class a segment passes, and a header of 200,000 classes would make one
//!   analysis of a few documents fill the node's memory;
//! - a recorded score and its companions between 0 and 1 (the product shows the score, and
//!   compares models by it);
//! - class and label names as a project's are: not empty, at most
//!   [`lector_core::validate::MAX_NAME_CHARS`] characters, no control or bidi characters, each
//!   once (the names are the tags every analysis answers, and a name twice makes two outputs
//!   one tag).
//!
//! The header's numbers are finite by construction (JSON has no NaN, and serde refuses a
//! number beyond an `f32`'s range). The weights are binary: a NaN weight would make every
//! confidence NaN, which the database refuses to store, so they are checked where they are
//! read (`Reader::f32`, `Reader::bf16`).

use crate::error::{Error, Result};
use crate::model::ModelInfo;

/// Classes, and labels, a model may have: the service's limit per project.
pub const MAX_OUTPUTS: usize = 1000;

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
    if let Some(metrics) = &info.metrics {
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
}
