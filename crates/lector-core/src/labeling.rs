//! The rules of labeling, free of HTTP and SQL: what a tag must carry in each project type, how
//! a session's status and progress follow from its marks, which documents a seeded sample takes,
//! where a text's pages lie, and which tags a document's own attributes imply (`auto`).

use crate::error::FieldError;
use crate::types::ProjectType;
use serde::{Deserialize, Serialize};

/// Where the attributes of labeled data lie in a table's header (0-based): found by the file
/// reader, carried in a labeled import's job payload, and read by the import's rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabeledColumns {
    pub text: usize,
    pub class: Option<usize>,
    pub label: Option<usize>,
    pub document: Option<usize>,
    pub part: Option<usize>,
    pub annotated: Option<usize>,
    /// Rows with the same value here (within a document) are one segment; without it, rows
    /// in a row with the same text are. Absent from imports queued before it existed.
    #[serde(default)]
    pub segment: Option<usize>,
}

/// Where a labeling or correction session stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum SessionStatus {
    Created,
    Started,
    Annotating,
    Failed,
    Finished,
    Sampling,
    Predicting,
    Deleting,
}

crate::wire_enum!(SessionStatus {
    Created => "CREATED",
    Started => "STARTED",
    Annotating => "ANNOTATING",
    Failed => "FAILED",
    Finished => "FINISHED",
    Sampling => "SAMPLING",
    Predicting => "PREDICTING",
    Deleting => "DELETING",
});

/// What a session is for: people labeling, or people correcting a model's predictions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum SessionMode {
    Annotation,
    Correction,
}

crate::wire_enum!(SessionMode { Annotation => "ANNOTATION", Correction => "CORRECTION" });

/// The only status name a mark takes.
pub const ANNOTATED: &str = "ANNOTATED";

/// The status that follows from how many of a session's segments are annotated:
/// CREATED before the first mark, ANNOTATING while some are left, FINISHED when none are.
pub fn status_for(annotated: i64, segments: i64) -> SessionStatus {
    if annotated == 0 {
        SessionStatus::Created
    } else if annotated < segments {
        SessionStatus::Annotating
    } else {
        SessionStatus::Finished
    }
}

/// Annotated segments over all segments, in [0, 1]; an empty session has progress 0.
pub fn progress(annotated: i64, segments: i64) -> f64 {
    if segments <= 0 {
        0.0
    } else {
        (annotated.min(segments) as f64) / segments as f64
    }
}

/// Checks that a tag carries what its project type needs: CLASS a class only, LABEL a label
/// only, CLASSLABEL and ABSA both (in ABSA the class is the aspect, the label its sentiment).
pub fn check_tag(kind: ProjectType, class: Option<&str>, label: Option<&str>) -> Result<(), FieldError> {
    let (needs_class, needs_label) = match kind {
        ProjectType::Class => (true, false),
        ProjectType::Label => (false, true),
        ProjectType::Classlabel | ProjectType::Absa => (true, true),
    };
    let blank = |v: Option<&str>| v.is_none_or(|v| v.trim().is_empty());
    if needs_class && blank(class) {
        return Err(FieldError::new(
            "class",
            format!("a tag of a {kind} project needs a class"),
        ));
    }
    if !needs_class && !blank(class) {
        return Err(FieldError::new(
            "class",
            format!("a tag of a {kind} project has no class"),
        ));
    }
    if needs_label && blank(label) {
        return Err(FieldError::new(
            "label",
            format!("a tag of a {kind} project needs a label"),
        ));
    }
    if !needs_label && !blank(label) {
        return Err(FieldError::new(
            "label",
            format!("a tag of a {kind} project has no label"),
        ));
    }
    Ok(())
}

/// A deterministic sample of `size` ids: the same ids and seed give the same sample on every
/// machine. Answers the sample in ascending order; all ids when `size` covers them.
pub fn sample(ids: &[i64], size: usize, seed: u64) -> Vec<i64> {
    let mut keyed: Vec<(u64, i64)> = ids.iter().map(|&id| (mix(seed ^ id as u64), id)).collect();
    keyed.sort_unstable();
    let mut chosen: Vec<i64> = keyed.into_iter().take(size).map(|(_, id)| id).collect();
    chosen.sort_unstable();
    chosen
}

/// SplitMix64's finaliser: spreads neighbouring inputs over the whole range.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The pages of a text as `[start, end)` ranges in code points. Pages are separated by form
/// feeds (as text extracted from a PDF has them); a text without one is a single page.
pub fn page_spans(text: &str) -> Vec<(i64, i64)> {
    let mut pages = Vec::new();
    let mut start = 0i64;
    let mut at = 0i64;
    for c in text.chars() {
        if c == '\u{c}' {
            pages.push((start, at));
            start = at + 1;
        }
        at += 1;
    }
    pages.push((start, at));
    pages
}

/// Resolves the part of a segment a tag points at, given by its span, its text, or both (they
/// must agree). Spans are `[start, end)` in code points of the document text and must lie in
/// the segment; a text alone is looked up inside the segment. `None` when neither is given.
pub fn locate_part(
    document_text: &str,
    segment: (i64, i64),
    span: Option<[i64; 2]>,
    text: Option<&str>,
) -> Result<Option<(i64, i64, String)>, FieldError> {
    let slice = |start: i64, end: i64| -> String {
        document_text
            .chars()
            .skip(start as usize)
            .take((end - start) as usize)
            .collect()
    };
    match (span, text) {
        (None, None) => Ok(None),
        (Some([start, end]), text) => {
            if start < segment.0 || end > segment.1 || start >= end {
                return Err(FieldError::new(
                    "span",
                    format!("must lie within the segment's span [{}, {})", segment.0, segment.1),
                ));
            }
            let found = slice(start, end);
            match text {
                Some(text) if text != found => Err(FieldError::new(
                    "text",
                    format!("does not match the text at the span ({found:?})"),
                )),
                _ => Ok(Some((start, end, found))),
            }
        }
        (None, Some(text)) => {
            let segment_text = slice(segment.0, segment.1);
            let at = segment_text
                .find(text)
                .filter(|_| !text.is_empty())
                .ok_or_else(|| FieldError::new("text", "does not occur in the segment"))?;
            let start = segment.0 + segment_text[..at].chars().count() as i64;
            Ok(Some((start, start + text.chars().count() as i64, text.to_owned())))
        }
    }
}

/// Meta attributes whose values name classes (aspects) and labels (sentiments).
const CLASS_KEYS: &[&str] = &["class", "classes", "aspect", "aspects", "category"];
const LABEL_KEYS: &[&str] = &["label", "sentiment", "polarity"];

/// A tag by names, before the store resolves them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagNames {
    pub class: Option<String>,
    pub label: Option<String>,
}

/// The tags a document's attributes imply for `auto` sessions: values of `class`, `aspect`,
/// `label`, `sentiment` and the like that name one of the session's classes or labels
/// (exactly, else ignoring case). Answers nothing when the attributes do not make a whole tag
/// of the project's type.
pub fn implied_tags(
    kind: ProjectType,
    meta: &serde_json::Map<String, serde_json::Value>,
    classes: &[String],
    labels: &[String],
) -> Vec<TagNames> {
    let found_classes = named_in(meta, CLASS_KEYS, classes);
    let found_label = named_in(meta, LABEL_KEYS, labels).into_iter().next();
    match kind {
        ProjectType::Class => found_classes
            .into_iter()
            .map(|class| TagNames {
                class: Some(class),
                label: None,
            })
            .collect(),
        ProjectType::Label => found_label
            .map(|label| TagNames {
                class: None,
                label: Some(label),
            })
            .into_iter()
            .collect(),
        ProjectType::Classlabel | ProjectType::Absa => match found_label {
            Some(label) => found_classes
                .into_iter()
                .map(|class| TagNames {
                    class: Some(class),
                    label: Some(label.clone()),
                })
                .collect(),
            None => Vec::new(),
        },
    }
}

/// The known names the attributes under `keys` mention, in the spelling of `known`, once each.
fn named_in(meta: &serde_json::Map<String, serde_json::Value>, keys: &[&str], known: &[String]) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for (key, value) in meta {
        if !keys.contains(&key.to_lowercase().as_str()) {
            continue;
        }
        let values: Vec<&str> = match value {
            serde_json::Value::String(s) => vec![s.as_str()],
            serde_json::Value::Array(items) => items.iter().filter_map(|v| v.as_str()).collect(),
            _ => Vec::new(),
        };
        for value in values {
            let value = value.trim();
            let name = known
                .iter()
                .find(|k| k.as_str() == value)
                .or_else(|| known.iter().find(|k| k.to_lowercase() == value.to_lowercase()));
            if let Some(name) = name
                && !found.contains(name)
            {
                found.push(name.clone());
            }
        }
    }
    found
}

/// Why training data tagged with `classes` distinct classes and `labels` distinct labels
/// cannot train a model of `kind`, if it cannot: a CLASS model tells at least two classes
/// apart, a LABEL model two labels, ABSA and CLASSLABEL models need a class. The request to
/// train and the training job hold the same rule.
pub fn too_few_to_learn(kind: ProjectType, classes: usize, labels: usize) -> Option<String> {
    let (what, found, needed) = match kind {
        ProjectType::Class => ("class", classes, 2),
        ProjectType::Label => ("label", labels, 2),
        ProjectType::Absa | ProjectType::Classlabel => ("class", classes, 1),
    };
    if found >= needed {
        return None;
    }
    let found = match found {
        0 => format!("no {what} has"),
        n => format!("only {n} {what} has"),
    };
    Some(format!(
        "{found} annotated segments in the training data; a {kind} model needs {needed}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_learns_from_enough_kinds_of_tag() {
        assert_eq!(
            too_few_to_learn(ProjectType::Class, 1, 0).as_deref(),
            Some("only 1 class has annotated segments in the training data; a CLASS model needs 2")
        );
        assert!(too_few_to_learn(ProjectType::Class, 2, 0).is_none());
        assert!(
            too_few_to_learn(ProjectType::Label, 5, 1)
                .unwrap()
                .starts_with("only 1 label")
        );
        assert!(
            too_few_to_learn(ProjectType::Absa, 0, 3)
                .unwrap()
                .starts_with("no class")
        );
        assert!(too_few_to_learn(ProjectType::Classlabel, 1, 0).is_none());
    }
    use serde_json::json;

    #[test]
    fn status_follows_the_marks() {
        assert_eq!(status_for(0, 10), SessionStatus::Created);
        assert_eq!(status_for(3, 10), SessionStatus::Annotating);
        assert_eq!(status_for(10, 10), SessionStatus::Finished);
        assert_eq!(progress(0, 0), 0.0);
        assert_eq!(progress(5, 10), 0.5);
        assert_eq!(progress(12, 10), 1.0);
    }

    #[test]
    fn tags_carry_what_their_project_type_needs() {
        assert!(check_tag(ProjectType::Class, Some("food"), None).is_ok());
        assert_eq!(check_tag(ProjectType::Class, None, None).unwrap_err().field, "class");
        assert_eq!(
            check_tag(ProjectType::Class, Some("food"), Some("x"))
                .unwrap_err()
                .field,
            "label"
        );
        assert!(check_tag(ProjectType::Label, None, Some("pos")).is_ok());
        assert_eq!(
            check_tag(ProjectType::Label, Some("food"), Some("pos"))
                .unwrap_err()
                .field,
            "class"
        );
        assert!(check_tag(ProjectType::Absa, Some("food"), Some("positive")).is_ok());
        assert_eq!(
            check_tag(ProjectType::Absa, Some("food"), Some(" ")).unwrap_err().field,
            "label"
        );
        assert!(check_tag(ProjectType::Classlabel, Some("a"), Some("b")).is_ok());
    }

    #[test]
    fn samples_are_seeded_and_sized() {
        let ids: Vec<i64> = (1..=100).collect();
        let a = sample(&ids, 10, 7);
        assert_eq!(a.len(), 10);
        assert_eq!(a, sample(&ids, 10, 7));
        assert_ne!(a, sample(&ids, 10, 8));
        assert!(a.windows(2).all(|w| w[0] < w[1]));
        assert_ne!(a, (1..=10).collect::<Vec<_>>(), "a sample is not the first ids");
        assert_eq!(sample(&ids, 500, 1), ids);
    }

    #[test]
    fn pages_are_split_at_form_feeds() {
        assert_eq!(page_spans("one page"), vec![(0, 8)]);
        assert_eq!(page_spans("ab\u{c}cd\u{c}"), vec![(0, 2), (3, 5), (6, 6)]);
        assert_eq!(page_spans("é\u{c}ü"), vec![(0, 1), (2, 3)], "code points, not bytes");
    }

    #[test]
    fn parts_are_found_by_span_or_text() {
        let text = "Intro. The pizza was great.";
        let segment = (7, 27);
        assert_eq!(locate_part(text, segment, None, None).unwrap(), None);
        assert_eq!(
            locate_part(text, segment, None, Some("pizza")).unwrap(),
            Some((11, 16, "pizza".into()))
        );
        assert_eq!(
            locate_part(text, segment, Some([11, 16]), Some("pizza")).unwrap(),
            Some((11, 16, "pizza".into()))
        );
        assert_eq!(
            locate_part(text, segment, Some([0, 5]), None).unwrap_err().field,
            "span"
        );
        assert_eq!(
            locate_part(text, segment, Some([11, 16]), Some("pasta"))
                .unwrap_err()
                .field,
            "text"
        );
        assert_eq!(
            locate_part(text, segment, None, Some("Intro")).unwrap_err().field,
            "text"
        );
    }

    #[test]
    fn attributes_imply_tags_of_known_names() {
        let classes = vec!["FOOD".to_owned(), "SERVICE".to_owned()];
        let labels = vec!["positive".to_owned(), "negative".to_owned()];
        let meta = json!({"aspect": ["food", "price"], "sentiment": "Positive", "other": "SERVICE"});
        let meta = meta.as_object().unwrap();
        assert_eq!(
            implied_tags(ProjectType::Absa, meta, &classes, &labels),
            vec![TagNames {
                class: Some("FOOD".into()),
                label: Some("positive".into())
            }]
        );
        assert_eq!(
            implied_tags(ProjectType::Class, meta, &classes, &labels),
            vec![TagNames {
                class: Some("FOOD".into()),
                label: None
            }]
        );
        assert_eq!(implied_tags(ProjectType::Label, meta, &classes, &labels).len(), 1);
        let no_label = json!({"class": "FOOD"});
        assert!(
            implied_tags(
                ProjectType::Classlabel,
                no_label.as_object().unwrap(),
                &classes,
                &labels
            )
            .is_empty()
        );
    }
}
