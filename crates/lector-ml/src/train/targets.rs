//! What each head learns to predict: the rows, classes and labels a model of each project type
//! takes from its examples, and the targets and strata of its heads.
//!
//! Kept apart from the solver and calibration so the one place that reads tags is here; the
//! rest of training sees only indices.

use std::collections::{BTreeMap, BTreeSet};

use lector_core::ProjectType;

use crate::error::{Error, Result};
use crate::example::Example;

/// What one head learns to predict.
pub(super) enum Targets {
    /// One of `k` outputs per row.
    Single { y: Vec<usize>, k: usize },
    /// Any of `k` outputs per row.
    Multi { y: Vec<Vec<usize>>, k: usize },
}

impl Targets {
    pub(super) fn outputs(&self) -> usize {
        match self {
            Targets::Single { k, .. } | Targets::Multi { k, .. } => *k,
        }
    }

    /// The binary problems: `(positive output, negative output)`; a two-way single-label head
    /// is one problem (the second output is the first's mirror), the rest one-vs-rest.
    pub(super) fn problems(&self) -> Vec<(usize, Option<usize>)> {
        match self {
            Targets::Single { k: 2, .. } => vec![(1, Some(0))],
            Targets::Single { k, .. } | Targets::Multi { k, .. } => (0..*k).map(|i| (i, None)).collect(),
        }
    }

    pub(super) fn sign(&self, row: usize, output: usize) -> f64 {
        let on = match self {
            Targets::Single { y, .. } => y[row] == output,
            Targets::Multi { y, .. } => y[row].contains(&output),
        };
        if on { 1.0 } else { -1.0 }
    }

    /// Held-out quality of margins: macro F1 of the arg-max (single) or micro F1 of the
    /// positive margins (multi).
    pub(super) fn score(&self, rows: &[usize], margins: &[Vec<f64>]) -> f64 {
        match self {
            Targets::Single { y, k } => {
                let (mut tp, mut fp, mut fn_) = (vec![0usize; *k], vec![0usize; *k], vec![0usize; *k]);
                for (&r, m) in rows.iter().zip(margins) {
                    let p = m.iter().enumerate().fold(0, |b, (i, &v)| if v > m[b] { i } else { b });
                    if p == y[r] {
                        tp[p] += 1;
                    } else {
                        fp[p] += 1;
                        fn_[y[r]] += 1;
                    }
                }
                let f1: f64 = (0..*k)
                    .map(|i| {
                        let d = 2 * tp[i] + fp[i] + fn_[i];
                        if d == 0 { 0.0 } else { 2.0 * tp[i] as f64 / d as f64 }
                    })
                    .sum();
                f1 / *k as f64
            }
            Targets::Multi { y, .. } => {
                let (mut tp, mut fp, mut fn_) = (0usize, 0usize, 0usize);
                for (&r, m) in rows.iter().zip(margins) {
                    for (i, &v) in m.iter().enumerate() {
                        match (y[r].contains(&i), v > 0.0) {
                            (true, true) => tp += 1,
                            (true, false) => fn_ += 1,
                            (false, true) => fp += 1,
                            _ => {}
                        }
                    }
                }
                let d = 2 * tp + fp + fn_;
                if d == 0 { 0.0 } else { 2.0 * tp as f64 / d as f64 }
            }
        }
    }
}

/// Sorted, de-duplicated names.
fn vocabulary<'e>(names: impl Iterator<Item = &'e String>) -> Vec<String> {
    names.cloned().collect::<BTreeSet<_>>().into_iter().collect()
}

fn index_of(names: &[String], name: &str) -> Option<usize> {
    names.binary_search_by(|n| n.as_str().cmp(name)).ok()
}

/// What a model of `project_type` learns from `examples`: the rows it uses (indices into
/// `examples`), its classes and its labels, sorted by name.
pub(super) fn vocabularies(
    project_type: ProjectType,
    examples: &[Example],
) -> Result<(Vec<usize>, Vec<String>, Vec<String>)> {
    Ok(match project_type {
        ProjectType::Label => {
            let rows: Vec<usize> = (0..examples.len())
                .filter(|&i| examples[i].tags.iter().any(|t| t.label.is_some()))
                .collect();
            let labels = vocabulary(
                rows.iter()
                    .filter_map(|&i| examples[i].tags.iter().find_map(|t| t.label.as_ref())),
            );
            if labels.len() < 2 {
                return Err(Error::input(format!(
                    "a LABEL model needs examples of at least two labels, found {}",
                    labels.len()
                )));
            }
            (rows, Vec::new(), labels)
        }
        _ => {
            let classes = vocabulary(
                examples
                    .iter()
                    .flat_map(|e| e.tags.iter().filter_map(|t| t.class.as_ref())),
            );
            if classes.is_empty() {
                return Err(Error::input(format!(
                    "a {project_type} model needs at least one tagged class"
                )));
            }
            let labels = match project_type {
                ProjectType::Absa => {
                    let fixed = vocabulary(ProjectType::ABSA_LABELS.map(String::from).iter());
                    if let Some(bad) = examples
                        .iter()
                        .flat_map(|e| &e.tags)
                        .filter_map(|t| t.label.as_ref())
                        .find(|l| index_of(&fixed, l).is_none())
                    {
                        return Err(Error::input(format!(
                            "ABSA labels are positive, negative and neutral, not {bad:?}"
                        )));
                    }
                    fixed
                }
                ProjectType::Classlabel => vocabulary(examples.iter().flat_map(|e| {
                    e.tags
                        .iter()
                        .filter(|t| t.class.is_some())
                        .filter_map(|t| t.label.as_ref())
                })),
                _ => Vec::new(),
            };
            ((0..examples.len()).collect(), classes, labels)
        }
    })
}

/// The main head's targets (the label of a LABEL row; the classes of the others) and the
/// strata the validation folds keep balanced.
pub(super) fn main_targets(
    project_type: ProjectType,
    examples: &[Example],
    rows: &[usize],
    classes: &[String],
    labels: &[String],
) -> (Targets, Vec<usize>) {
    match project_type {
        ProjectType::Label => {
            let y: Vec<usize> = rows
                .iter()
                .map(|&i| {
                    examples[i]
                        .tags
                        .iter()
                        .find_map(|t| t.label.as_deref())
                        .and_then(|l| index_of(labels, l))
                        .unwrap_or(0)
                })
                .collect();
            let keys = y.clone();
            (Targets::Single { y, k: labels.len() }, keys)
        }
        _ => {
            let y: Vec<Vec<usize>> = rows
                .iter()
                .map(|&i| {
                    let set: BTreeSet<usize> = examples[i]
                        .tags
                        .iter()
                        .filter_map(|t| t.class.as_deref())
                        .filter_map(|c| index_of(classes, c))
                        .collect();
                    set.into_iter().collect()
                })
                .collect();
            let keys = y.iter().map(|s| s.first().map_or(0, |c| c + 1)).collect();
            (Targets::Multi { y, k: classes.len() }, keys)
        }
    }
}

/// The label head's training rows: `(row, class, label)` for every class of a segment that
/// has a label. A class tagged twice in a segment takes its most frequent label (the first on
/// ties).
pub(super) fn label_pairs(
    examples: &[Example],
    rows: &[usize],
    classes: &[String],
    labels: &[String],
) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::new();
    for (r, &i) in rows.iter().enumerate() {
        let mut per_class: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for t in &examples[i].tags {
            if let (Some(c), Some(l)) = (t.class.as_deref(), t.label.as_deref())
                && let (Some(c), Some(l)) = (index_of(classes, c), index_of(labels, l))
            {
                per_class.entry(c).or_default().push(l);
            }
        }
        for (c, ls) in per_class {
            let best = ls.iter().copied().max_by_key(|l| {
                (
                    ls.iter().filter(|x| *x == l).count(),
                    std::cmp::Reverse(ls.iter().position(|x| x == l)),
                )
            });
            if let Some(l) = best {
                out.push((r, c, l));
            }
        }
    }
    out
}
