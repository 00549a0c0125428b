//! Evaluation: how well predicted tags match gold tags, in the terms the product reports.
//!
//! Per class and per label precision, recall, F1 and support; micro and macro F1; accuracy;
//! a confusion matrix of labels; and for the pair types (ABSA, CLASSLABEL) the two figures the
//! literature uses: aspect (class) detection F1, and label (sentiment) accuracy on the classes
//! that were correctly detected. `score` is the single number a model is ranked by: macro F1.

use std::collections::{BTreeMap, BTreeSet};

use lector_core::ProjectType;
use serde::{Deserialize, Serialize};

use crate::example::Tag;

/// Precision, recall, F1 and support of one class or label.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NameScores {
    pub name: String,
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    /// Gold occurrences.
    pub support: usize,
}

/// Rows are gold, columns predicted, in the order of `names`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfusionMatrix {
    pub names: Vec<String>,
    pub matrix: Vec<Vec<u64>>,
}

/// The evaluation of a model on a set of segments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    pub project_type: ProjectType,
    /// Segments evaluated.
    pub segments: usize,
    /// LABEL: share of segments with the right label. CLASS and the pair types: share of
    /// segments whose whole tag set is right.
    pub accuracy: f64,
    /// LABEL: over labels; CLASS: over classes; pair types: over (class, label) pairs.
    pub micro_f1: f64,
    pub macro_f1: f64,
    /// Per class (CLASS: detection; pair types: the pair is right).
    pub classes: Vec<NameScores>,
    /// Per label (LABEL: the label; pair types: the label of correctly detected classes).
    pub labels: Vec<NameScores>,
    /// Labels, gold × predicted (LABEL; pair types on correctly detected classes).
    pub confusion: Option<ConfusionMatrix>,
    /// Pair types: class (aspect) detection micro F1.
    pub aspect_f1: Option<f64>,
    /// Pair types: label (sentiment) accuracy on correctly detected classes.
    pub sentiment_accuracy: Option<f64>,
    /// Macro F1: what the product shows as the model's score.
    pub score: f64,
    /// The featurisation the model chose on held-out data ([`crate::FeatureConfig::name`]),
    /// when a model was evaluated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub features: Option<String>,
    /// How the model used its BASE encoder ([`crate::DenseConfig::usage`]), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoder: Option<String>,
}

#[derive(Default, Clone, Copy)]
struct Counts {
    tp: usize,
    fp: usize,
    fn_: usize,
}

impl Counts {
    fn f1(self) -> f64 {
        let d = 2 * self.tp + self.fp + self.fn_;
        if d == 0 { 0.0 } else { 2.0 * self.tp as f64 / d as f64 }
    }

    fn scores(self, name: &str) -> NameScores {
        NameScores {
            name: name.to_string(),
            precision: share(self.tp, self.tp + self.fp),
            recall: share(self.tp, self.tp + self.fn_),
            f1: self.f1(),
            support: self.tp + self.fn_,
        }
    }
}

fn micro_macro(per: &BTreeMap<String, Counts>) -> (f64, f64, Vec<NameScores>) {
    let mut total = Counts::default();
    let mut scores = Vec::new();
    for (name, c) in per {
        total.tp += c.tp;
        total.fp += c.fp;
        total.fn_ += c.fn_;
        scores.push(c.scores(name));
    }
    // A name neither in the gold tags nor predicted has no F1 to speak of: counting it as 0
    // would score a model that is right on every test segment below 1 because the test
    // side lacks a class (the average runs over the names seen, as scikit-learn's does).
    let seen: Vec<f64> = per
        .values()
        .filter(|c| c.tp + c.fp + c.fn_ > 0)
        .map(|c| c.f1())
        .collect();
    let macro_f1 = if seen.is_empty() {
        0.0
    } else {
        seen.iter().sum::<f64>() / seen.len() as f64
    };
    (total.f1(), macro_f1, scores)
}

fn confusion(pairs: &[(String, String)], known: &[String]) -> ConfusionMatrix {
    let names: Vec<String> = known
        .iter()
        .cloned()
        .chain(pairs.iter().flat_map(|(g, p)| [g.clone(), p.clone()]))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let at = |n: &String| names.binary_search(n).unwrap_or(0);
    let mut matrix = vec![vec![0u64; names.len()]; names.len()];
    for (g, p) in pairs {
        matrix[at(g)][at(p)] += 1;
    }
    ConfusionMatrix { names, matrix }
}

/// Scores predicted tags against gold tags, segment by segment. `classes` and `labels` name
/// the model's vocabulary so that names never predicted still get a row.
pub fn evaluate_tags(
    project_type: ProjectType,
    classes: &[String],
    labels: &[String],
    gold: &[Vec<Tag>],
    predicted: &[Vec<Tag>],
) -> Metrics {
    let n = gold.len().min(predicted.len());
    let scoring = Scoring {
        classes,
        labels,
        gold: &gold[..n],
        predicted: &predicted[..n],
    };
    match project_type {
        ProjectType::Label => scoring.label_metrics(),
        ProjectType::Class => scoring.class_metrics(),
        ProjectType::Absa | ProjectType::Classlabel => scoring.pair_metrics(project_type),
    }
}

/// What [`evaluate_tags`] scores: the model's names, and each segment's gold and predicted
/// tags (as many of each).
struct Scoring<'a> {
    classes: &'a [String],
    labels: &'a [String],
    gold: &'a [Vec<Tag>],
    predicted: &'a [Vec<Tag>],
}

/// `part / whole`, 0 for nothing.
fn share(part: usize, whole: usize) -> f64 {
    if whole == 0 { 0.0 } else { part as f64 / whole as f64 }
}

/// Empty counts for each of `names`, so that names never seen still get a row.
fn counts_for(names: &[String]) -> BTreeMap<String, Counts> {
    names.iter().map(|name| (name.clone(), Counts::default())).collect()
}

/// Counts one decided label against its gold one in `per` (a hit for the gold label, or a
/// miss for it and a false alarm for the predicted one); answers whether it was right.
fn count_label(per: &mut BTreeMap<String, Counts>, gold: &str, predicted: &str) -> bool {
    let right = gold == predicted;
    if right {
        per.entry(gold.to_owned()).or_default().tp += 1;
    } else {
        per.entry(gold.to_owned()).or_default().fn_ += 1;
        per.entry(predicted.to_owned()).or_default().fp += 1;
    }
    right
}

impl Scoring<'_> {
    /// The figures every project type has, with `right` segments wholly right, ranked by
    /// `macro_f1`; the per-name and pair figures empty.
    fn scored(&self, project_type: ProjectType, right: usize, micro_f1: f64, macro_f1: f64) -> Metrics {
        Metrics {
            project_type,
            segments: self.gold.len(),
            accuracy: share(right, self.gold.len()),
            micro_f1,
            macro_f1,
            classes: Vec::new(),
            labels: Vec::new(),
            confusion: None,
            aspect_f1: None,
            sentiment_accuracy: None,
            score: macro_f1,
            features: None,
            encoder: None,
        }
    }

    /// Each segment's gold and predicted tags.
    fn segments(&self) -> impl Iterator<Item = (&Vec<Tag>, &Vec<Tag>)> {
        self.gold.iter().zip(self.predicted)
    }

    fn label_metrics(&self) -> Metrics {
        let mut per = counts_for(self.labels);
        let mut pairs = Vec::new();
        let mut right = 0;
        for (gold, predicted) in self.segments() {
            let g = gold.iter().find_map(|t| t.label.clone()).unwrap_or_default();
            let p = predicted.iter().find_map(|t| t.label.clone()).unwrap_or_default();
            right += usize::from(count_label(&mut per, &g, &p));
            pairs.push((g, p));
        }
        let (_, macro_f1, scores) = micro_macro(&per);
        // One label a segment: micro F1 over labels is the accuracy.
        let micro_f1 = share(right, self.gold.len());
        Metrics {
            labels: scores,
            confusion: Some(confusion(&pairs, self.labels)),
            ..self.scored(ProjectType::Label, right, micro_f1, macro_f1)
        }
    }

    fn class_metrics(&self) -> Metrics {
        let mut per = counts_for(self.classes);
        let mut exact = 0;
        for (gold, predicted) in self.segments() {
            let g: BTreeSet<&String> = gold.iter().filter_map(|t| t.class.as_ref()).collect();
            let p: BTreeSet<&String> = predicted.iter().filter_map(|t| t.class.as_ref()).collect();
            exact += usize::from(g == p);
            for c in g.union(&p) {
                let e = per.entry((*c).clone()).or_default();
                match (g.contains(c), p.contains(c)) {
                    (true, true) => e.tp += 1,
                    (true, false) => e.fn_ += 1,
                    _ => e.fp += 1,
                }
            }
        }
        let (micro_f1, macro_f1, scores) = micro_macro(&per);
        Metrics {
            classes: scores,
            ..self.scored(ProjectType::Class, exact, micro_f1, macro_f1)
        }
    }

    /// ABSA and CLASSLABEL: a class is right with its label, detected with any.
    fn pair_metrics(&self, project_type: ProjectType) -> Metrics {
        let mut pair_per = counts_for(self.classes);
        let mut label_per = counts_for(self.labels);
        let mut detect = Counts::default();
        let mut label_pairs = Vec::new();
        let (mut exact, mut label_right) = (0, 0);
        for (gold, predicted) in self.segments() {
            let g = class_labels(gold);
            let p = class_labels(predicted);
            exact += usize::from(g == p);
            let names: BTreeSet<&String> = g.keys().chain(p.keys()).collect();
            for c in names {
                let e = pair_per.entry(c.clone()).or_default();
                match (g.get(c), p.get(c)) {
                    (Some(gl), Some(pl)) => {
                        detect.tp += 1;
                        if count_label(&mut label_per, gl, pl) {
                            e.tp += 1;
                            label_right += 1;
                        } else {
                            e.fn_ += 1;
                            e.fp += 1;
                        }
                        label_pairs.push((gl.clone(), pl.clone()));
                    }
                    (Some(_), None) => {
                        detect.fn_ += 1;
                        e.fn_ += 1;
                    }
                    (None, _) => {
                        detect.fp += 1;
                        e.fp += 1;
                    }
                }
            }
        }
        let (micro_f1, macro_f1, scores) = micro_macro(&pair_per);
        let (_, _, label_scores) = micro_macro(&label_per);
        Metrics {
            classes: scores,
            labels: label_scores,
            confusion: Some(confusion(&label_pairs, self.labels)),
            aspect_f1: Some(detect.f1()),
            sentiment_accuracy: Some(share(label_right, detect.tp)),
            ..self.scored(project_type, exact, micro_f1, macro_f1)
        }
    }
}

/// A segment's classes with one label each; a class tagged with several labels keeps the
/// first, and a class without a label gets the empty label.
fn class_labels(tags: &[Tag]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for t in tags {
        if let Some(c) = &t.class {
            out.entry(c.clone())
                .or_insert_with(|| t.label.clone().unwrap_or_default());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tag(class: Option<&str>, label: Option<&str>) -> Tag {
        Tag {
            class: class.map(str::to_string),
            label: label.map(str::to_string),
        }
    }

    #[test]
    fn label_metrics_by_hand() {
        let labels = vec!["a".to_string(), "b".to_string()];
        let g = [
            vec![tag(None, Some("a"))],
            vec![tag(None, Some("a"))],
            vec![tag(None, Some("b"))],
        ];
        let p = [
            vec![tag(None, Some("a"))],
            vec![tag(None, Some("b"))],
            vec![tag(None, Some("b"))],
        ];
        let m = evaluate_tags(ProjectType::Label, &[], &labels, &g, &p);
        assert!((m.accuracy - 2.0 / 3.0).abs() < 1e-12);
        // a: P 1, R 0.5, F1 2/3; b: P 0.5, R 1, F1 2/3.
        assert!((m.macro_f1 - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(m.labels[0].support, 2);
        assert_eq!(m.confusion.unwrap().matrix, vec![vec![1, 1], vec![0, 1]]);
    }

    /// A class the test side lacks, and that is never predicted, stays in the per-class
    /// figures (support 0) but not in the score: a model right on every segment scores 1.
    #[test]
    fn a_class_absent_from_the_test_side_does_not_lower_the_score() {
        let classes: Vec<String> = ["car", "fruit", "weather"].map(String::from).to_vec();
        let g = [vec![tag(Some("fruit"), None)], vec![tag(Some("car"), None)]];
        let m = evaluate_tags(ProjectType::Class, &classes, &[], &g, &g);
        assert_eq!(m.accuracy, 1.0);
        assert_eq!(m.score, 1.0);
        assert_eq!(m.macro_f1, 1.0);
        let weather = m.classes.iter().find(|c| c.name == "weather").unwrap();
        assert_eq!((weather.support, weather.f1), (0, 0.0));
        // Predicted without being gold, a name counts (F1 0) as before.
        let wrong = [vec![tag(Some("fruit"), None)], vec![tag(Some("weather"), None)]];
        let m = evaluate_tags(ProjectType::Class, &classes, &[], &g, &wrong);
        assert!((m.score - 1.0 / 3.0).abs() < 1e-12, "{}", m.score);
    }

    #[test]
    fn absa_metrics_by_hand() {
        let classes = vec!["food".to_string(), "service".to_string()];
        let labels: Vec<String> = ProjectType::ABSA_LABELS.iter().map(|s| s.to_string()).collect();
        let g = [vec![
            tag(Some("food"), Some("positive")),
            tag(Some("service"), Some("negative")),
        ]];
        let p = [vec![
            tag(Some("food"), Some("positive")),
            tag(Some("service"), Some("neutral")),
        ]];
        let m = evaluate_tags(ProjectType::Absa, &classes, &labels, &g, &p);
        assert_eq!(m.aspect_f1, Some(1.0));
        assert_eq!(m.sentiment_accuracy, Some(0.5));
        assert!((m.micro_f1 - 0.5).abs() < 1e-12);
    }
}
