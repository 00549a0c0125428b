//! Choosing the featurisation on held-out data, as the cost is chosen: every candidate of
//! [`FeatureConfig::candidates`] is featurised and its main head's held-out runs made on the
//! same validation runs, from the same random state. The first candidate (today's folded
//! features) chooses its cost on the whole grid; the others try only that cost (a cost suits
//! about as well features that differ in a few words' case and marks), which keeps the choice
//! within the training-time budget and leans towards the first. With one holdout (a large set,
//! where time counts) a later candidate starts from the first's dual solution at that cost:
//! the dual variables belong to the examples, not to the features, so the solver has only the
//! difference to find. With cross-validation (a small set) it goes along the costs up to that
//! one, each from the last's solution, as the first did. The best held-out score wins (the
//! first on ties), and its held-out runs serve the rest of training, so choosing costs one
//! more featurisation and a held-out solve for each extra candidate, never another final fit;
//! where the first wins, the model is the one it makes alone, bit for bit.
//!
//! A candidate whose vectors equal the first's is not solved again: the same vectors on the
//! same path from the same random state would score the same, so the first's score is
//! recorded for it. (Since the typed shape joined the cased channel that is rare: a text
//! without a capital carries a mark of its own.)
//!
//! What was tried is recorded as [`FeatureTrial`]s. This module does not decide which
//! candidates exist (that is `features`) nor how a head is fitted (that is `heads`).

use crate::error::Result;
use crate::features::{FeatureConfig, Featurizer};
use crate::model::FeatureTrial;
use crate::progress::Progress;
use crate::rng::Rng;
use crate::svm::Csr;

use super::heads::{HeadJob, Selection};

/// One featurisation of the training rows: for every head, and for the main head (with a
/// sentence encoder's vectors appended where there is one).
pub(super) struct Candidate {
    pub(super) featurizer: Featurizer,
    pub(super) x: Csr,
    pub(super) x_main: Csr,
}

/// The winner (an index into the candidates), its held-out runs, and the random state after
/// them.
pub(super) struct Chosen {
    pub(super) index: usize,
    pub(super) selection: Selection,
    pub(super) rng: Rng,
    pub(super) trials: Vec<FeatureTrial>,
}

/// Makes every candidate's held-out runs with `job` (its `x` replaced by the candidate's, and
/// after the first its grid and start as [`later_grid`] says) from a copy of `rng`, and keeps
/// the best.
pub(super) fn choose(
    candidates: &[Candidate],
    job: &HeadJob<'_>,
    rng: &Rng,
    progress: &mut Progress<'_, '_>,
) -> Result<Chosen> {
    let mut best: Option<Chosen> = None;
    let mut trials: Vec<FeatureTrial> = Vec::with_capacity(candidates.len());
    let mut grid = job.grid;
    let mut first_start: Vec<Vec<f64>> = Vec::new();
    for (index, candidate) in candidates.iter().enumerate() {
        if index > 0 && candidate.x_main == candidates[0].x_main {
            progress.advance(
                HeadJob {
                    x: &candidate.x_main,
                    ..*job
                }
                .selection_units(),
            )?;
            trials.push(trial(candidate, trials[0].validation_score));
            continue;
        }
        let mut run_rng = rng.clone();
        let start = (!first_start.is_empty()).then_some(&first_start[..]);
        let selection = HeadJob {
            x: &candidate.x_main,
            grid,
            ..*job
        }
        .select_from(start, &mut run_rng, progress)?;
        if index == 0 {
            let chosen = job.grid.iter().position(|&c| c == selection.c).unwrap_or(0);
            (grid, first_start) = later_grid(job, chosen, &selection);
        }
        let score = selection.validation_score;
        trials.push(trial(candidate, score));
        if best
            .as_ref()
            .is_none_or(|b| better(score, b.selection.validation_score))
        {
            best = Some(Chosen {
                index,
                selection,
                rng: run_rng,
                trials: Vec::new(),
            });
        }
    }
    let mut chosen = best.expect("FeatureConfig::candidates is never empty");
    chosen.trials = trials;
    Ok(chosen)
}

/// The costs the candidates after the first try, and the dual variables they start from: with
/// one held-out run (a large set, where time counts), the first's chosen cost alone, from the
/// first's solution there; with cross-validation, the costs up to the first's chosen one, each
/// from the last's solution, as the first went.
fn later_grid<'g>(job: &HeadJob<'g>, chosen: usize, first: &Selection) -> (&'g [f64], Vec<Vec<f64>>) {
    if job.runs.len() == 1 && !first.start.is_empty() {
        (&job.grid[chosen..=chosen], first.start.clone())
    } else {
        (&job.grid[..=chosen], Vec::new())
    }
}

fn trial(candidate: &Candidate, validation_score: Option<f64>) -> FeatureTrial {
    FeatureTrial {
        features: candidate.featurizer.config.name().to_string(),
        validation_score,
    }
}

/// Whether held-out score `a` beats `b` (strictly: ties keep the earlier candidate; without
/// held-out data nothing beats the first).
fn better(a: Option<f64>, b: Option<f64>) -> bool {
    matches!((a, b), (Some(a), Some(b)) if a > b)
}

/// The candidates to try: [`FeatureConfig::candidates`] of `features`, or `features` alone
/// where it is fixed (a warm start, a sentence encoder, [`super::Options::choose_features`]
/// off).
pub(super) fn candidates(features: &FeatureConfig, fixed: bool) -> Vec<FeatureConfig> {
    if fixed {
        vec![features.clone()]
    } else {
        features.candidates()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_and_missing_scores_keep_the_first_candidate() {
        assert!(better(Some(0.8), Some(0.7)));
        assert!(!better(Some(0.7), Some(0.7)));
        assert!(!better(Some(0.9), None));
        assert!(!better(None, None));
        let f = FeatureConfig::default();
        assert_eq!(candidates(&f, true), std::slice::from_ref(&f));
        assert_eq!(candidates(&f, false).len(), 2);
    }
}
