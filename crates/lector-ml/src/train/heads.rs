//! Fitting one linear head: a binary SVM per output on every validation run and cost, the
//! cost with the best held-out score, then the final fit on all rows; and the label head of
//! the pair types (CLASSLABEL, ABSA), whose rows are (segment, class) pairs.
//!
//! Calibration of the held-out margins is `calibration`'s; this module only fits weights.

use std::collections::BTreeMap;

use lector_core::ProjectType;

use crate::calibrate::fit_temperature;
use crate::error::{Error, Result};
use crate::features::SparseVec;
use crate::model::{Calibration, Head, Model, cross};
use crate::progress::Progress;
use crate::rng::Rng;
use crate::svm::{Binary, Csr, SolverParams, solve_together, together_at_most};

use super::selection::Runs;
use super::targets::Targets;

/// A head as fitted: weights, the cost chosen, and held-out margins at that cost.
pub(super) struct FittedHead {
    pub(super) head: Head,
    pub(super) c: f64,
    /// `(row, margins)` of every held-out row, in row order.
    pub(super) held_out: Vec<(usize, Vec<f64>)>,
    pub(super) validation_score: Option<f64>,
}

/// At most this many solver weights are kept at once to go along the costs for all binary
/// problems together: 128 MiB of `f32`, 128 outputs over 2^18 buckets (`svm::solve_together`
/// solves them in groups that fit its own budget).
const MAX_STATE_FLOATS: usize = 1 << 25;

/// Held-out margins as the runs make them.
struct HeldOut {
    /// Every held-out row, in row order.
    rows: Vec<usize>,
    /// Where a row is in `rows`.
    position: BTreeMap<usize, usize>,
    /// `margins[c][i]`: the margins of `rows[i]` at cost `c` of the grid.
    margins: Vec<Vec<Vec<f64>>>,
    /// `starts[p][c]`: the first run's dual variables of problem `p` at cost `c`.
    starts: Vec<Vec<Vec<f64>>>,
}

impl HeldOut {
    fn new(job: &HeadJob<'_>) -> Self {
        let mut rows: Vec<usize> = job.runs.iter().flat_map(|(_, h)| h.iter().copied()).collect();
        rows.sort_unstable();
        let position = rows.iter().enumerate().map(|(i, &r)| (r, i)).collect();
        let k = job.targets.outputs();
        Self {
            margins: vec![vec![vec![0.0f64; k]; rows.len()]; job.grid.len()],
            starts: vec![Vec::with_capacity(job.grid.len()); job.targets.problems().len()],
            rows,
            position,
        }
    }

    /// The margins of `state` on the held-out rows `test` at cost `ci`, for its problem.
    fn record(
        &mut self,
        x: &Csr,
        state: &Binary,
        test: &[usize],
        ci: usize,
        (positive, negative): (usize, Option<usize>),
    ) {
        for &r in test {
            let (ind, val) = x.row(r);
            let m = Binary::margin(&state.w, ind, val);
            let slot = &mut self.margins[ci][self.position[&r]];
            slot[positive] = m;
            if let Some(n) = negative {
                slot[n] = -m;
            }
        }
    }
}

/// What the held-out runs found: the cost, its held-out margins and score, and where the
/// final fit may start.
pub(super) struct Selection {
    pub(super) c: f64,
    /// `(row, margins)` of every held-out row, in row order.
    pub(super) held_out: Vec<(usize, Vec<f64>)>,
    pub(super) validation_score: Option<f64>,
    /// The first run's dual variables at the chosen cost, per binary problem (indexed like
    /// the first run's training rows); empty without validation runs.
    pub(super) start: Vec<Vec<f64>>,
}

pub(super) struct HeadJob<'a> {
    pub(super) x: &'a Csr,
    pub(super) dim: usize,
    pub(super) targets: &'a Targets,
    /// Validation runs: `(train rows, held-out rows)`.
    pub(super) runs: &'a [(Vec<usize>, Vec<usize>)],
    pub(super) grid: &'a [f64],
    /// Per output: the base model's weights to start from.
    pub(super) w0: &'a [Option<Vec<f64>>],
    /// For the final fit.
    pub(super) params: SolverParams,
    /// For the held-out runs: a tighter epoch budget. Large costs converge slowly, and a
    /// nearly converged model ranks costs as well as a converged one.
    pub(super) select: SolverParams,
}

impl HeadJob<'_> {
    pub(super) fn plan(&self, progress: &mut Progress<'_, '_>) {
        self.plan_selection(progress);
        let problems = self.targets.problems().len() as f64;
        progress.plan(problems * f64::from(self.params.max_epochs) * self.x.indices.len() as f64);
    }

    fn start_weights(&self, positive: usize, negative: Option<usize>) -> Option<Vec<f64>> {
        let pos = self.w0.get(positive).and_then(Clone::clone);
        let neg = negative.and_then(|n| self.w0.get(n).and_then(Clone::clone));
        match (pos, neg, negative) {
            (p, _, None) => p,
            (None, None, Some(_)) => None,
            (p, n, Some(_)) => {
                let len = self.dim + 1;
                let p = p.unwrap_or_else(|| vec![0.0; len]);
                let n = n.unwrap_or_else(|| vec![0.0; len]);
                Some(p.iter().zip(&n).map(|(a, b)| (a - b) / 2.0).collect())
            }
        }
    }

    /// Plans the held-out runs alone (a featurisation that is only tried).
    pub(super) fn plan_selection(&self, progress: &mut Progress<'_, '_>) {
        progress.plan(self.selection_units());
    }

    /// The progress units of the held-out runs.
    pub(super) fn selection_units(&self) -> f64 {
        let problems = self.targets.problems().len() as f64;
        let epochs = f64::from(self.select.max_epochs);
        self.runs
            .iter()
            .map(|(train, _)| problems * epochs * self.grid.len() as f64 * self.x.nnz_of(train) as f64)
            .sum()
    }

    /// The held-out runs and the final fit.
    pub(super) fn fit(&self, rng: &mut Rng, progress: &mut Progress<'_, '_>) -> Result<FittedHead> {
        let selection = self.select(rng, progress)?;
        self.final_fit(selection, rng, progress)
    }

    /// The costs on the validation runs: the held-out margins at the cost with the best
    /// held-out score. With one run (a large set) the costs go in increasing order for all
    /// binary problems at once, and stop at the first cost that scores worse than the one
    /// before (held-out scores rise and then fall along the grid; the larger costs are the
    /// slow ones); that keeps every problem's solver state at once, so a head with very many
    /// outputs goes the other way. With several runs (cross-validation of a small set) every
    /// cost is tried.
    pub(super) fn select(&self, rng: &mut Rng, progress: &mut Progress<'_, '_>) -> Result<Selection> {
        self.select_from(None, rng, progress)
    }

    /// [`Self::select`], where `start` (one run, along the costs) gives every problem's dual
    /// variables to begin from: [`Selection::start`] of another featurisation of the same
    /// rows, whose solution at that cost is near this one's (the duals belong to the examples,
    /// not to the features).
    pub(super) fn select_from(
        &self,
        start: Option<&[Vec<f64>]>,
        rng: &mut Rng,
        progress: &mut Progress<'_, '_>,
    ) -> Result<Selection> {
        let mut held = HeldOut::new(self);
        let states_floats = self.targets.problems().len().saturating_mul(self.dim + 1);
        let tried = if self.runs.len() == 1 && states_floats <= MAX_STATE_FLOATS {
            self.select_along_costs(&mut held, start, rng, progress)?
        } else {
            self.select_run_by_run(&mut held, rng, progress)?;
            self.grid.len()
        };
        let (best, validation_score) = self.best_cost(&held.rows, &held.margins[..tried]);
        Ok(Selection {
            c: self.grid[best],
            validation_score,
            start: held
                .starts
                .iter_mut()
                .filter_map(|at| (best < at.len()).then(|| std::mem::take(&mut at[best])))
                .collect(),
            held_out: held.rows.into_iter().zip(held.margins.swap_remove(best)).collect(),
        })
    }

    /// Every run, problem by problem, each along the whole grid from the last cost's solution.
    /// The held-out runs start from zero, never from a warm start's base (see
    /// [`Self::final_fit`]).
    fn select_run_by_run(&self, held: &mut HeldOut, rng: &mut Rng, progress: &mut Progress<'_, '_>) -> Result<()> {
        for (run, (train, test)) in self.runs.iter().enumerate() {
            for (p, &(positive, negative)) in self.targets.problems().iter().enumerate() {
                let y: Vec<f64> = train.iter().map(|&r| self.targets.sign(r, positive)).collect();
                let mut state = Binary::new(train.len(), self.dim, None);
                for (ci, &c) in self.grid.iter().enumerate() {
                    state.solve(self.x, train, &y, &vec![c; train.len()], self.select, rng, progress)?;
                    held.record(self.x, &state, test, ci, (positive, negative));
                    if run == 0 {
                        held.starts[p].push(state.alpha.clone());
                    }
                }
            }
        }
        Ok(())
    }

    /// The one run, cost by cost for every problem, until the held-out score falls; answers
    /// how many costs were tried.
    fn select_along_costs(
        &self,
        held: &mut HeldOut,
        start: Option<&[Vec<f64>]>,
        rng: &mut Rng,
        progress: &mut Progress<'_, '_>,
    ) -> Result<usize> {
        let Some((train, test)) = self.runs.first() else {
            return Ok(0);
        };
        let problems = self.targets.problems();
        let ys: Vec<Vec<f64>> = problems
            .iter()
            .map(|&(positive, _)| train.iter().map(|&r| self.targets.sign(r, positive)).collect())
            .collect();
        let mut states: Vec<Binary> = problems
            .iter()
            .map(|_| Binary::new(train.len(), self.dim, None))
            .collect();
        for ((state, y), alpha) in states.iter_mut().zip(&ys).zip(start.into_iter().flatten()) {
            let slots = train.iter().zip(alpha).enumerate();
            state.start_from(self.x, y, slots.map(|(k, (&r, &a))| (k, r, a)));
        }
        let mut previous = f64::NEG_INFINITY;
        for (ci, &c) in self.grid.iter().enumerate() {
            solve_together(&mut states, self.x, train, &ys, c, self.select, rng, progress)?;
            for (p, state) in states.iter().enumerate() {
                held.record(self.x, state, test, ci, problems[p]);
                held.starts[p].push(state.alpha.clone());
            }
            let score = self.targets.score(&held.rows, &held.margins[ci]);
            if score > previous && ci > 0 {
                // Only the best cost's starting point can be needed.
                for at in &mut held.starts {
                    at[ci - 1] = Vec::new();
                }
            }
            if score < previous {
                // The costs not tried: their planned work is done.
                let left = (self.grid.len() - ci - 1) as f64;
                let epochs = f64::from(self.select.max_epochs);
                progress.advance(left * epochs * problems.len() as f64 * self.x.nnz_of(train) as f64)?;
                return Ok(ci + 1);
            }
            previous = score;
        }
        Ok(self.grid.len())
    }

    /// The index of the cost with the best held-out score, and that score.
    fn best_cost(&self, held_rows: &[usize], held: &[Vec<Vec<f64>>]) -> (usize, Option<f64>) {
        if held_rows.is_empty() {
            // Nothing held out: the cost nearest 1, liblinear's and scikit-learn's default.
            let nearest = (0..self.grid.len())
                .min_by(|&a, &b| self.grid[a].ln().abs().total_cmp(&self.grid[b].ln().abs()))
                .unwrap_or(0);
            return (nearest, None);
        }
        let mut best = (0, f64::NEG_INFINITY);
        for (ci, margins) in held.iter().enumerate() {
            let s = self.targets.score(held_rows, margins);
            if s > best.1 {
                best = (ci, s);
            }
        }
        (best.0, Some(best.1))
    }

    /// The final fit on all rows at the chosen cost.
    pub(super) fn final_fit(
        &self,
        selection: Selection,
        rng: &mut Rng,
        progress: &mut Progress<'_, '_>,
    ) -> Result<FittedHead> {
        let k = self.targets.outputs();
        let c = selection.c;
        let all: Vec<usize> = (0..self.x.rows()).collect();
        let mut head = Head::zeros(self.dim, k);
        let problems = self.targets.problems();
        // As many problems at once as can be solved together.
        let group = together_at_most(all.len(), self.dim);
        for (g, chunk) in problems.chunks(group).enumerate() {
            let first = g * group;
            let ys: Vec<Vec<f64>> = chunk
                .iter()
                .map(|&(positive, _)| all.iter().map(|&r| self.targets.sign(r, positive)).collect())
                .collect();
            let mut states: Vec<Binary> = chunk
                .iter()
                .zip(&ys)
                .enumerate()
                .map(|(q, (&problem, y))| self.final_state(problem, y, selection.start.get(first + q)))
                .collect();
            solve_together(&mut states, self.x, &all, &ys, c, self.params, rng, progress)?;
            for (&(positive, negative), state) in chunk.iter().zip(&states) {
                let w = state.weights();
                head.set_column(positive, &w);
                if let Some(n) = negative {
                    let mirrored: Vec<f64> = w.iter().map(|v| -v).collect();
                    head.set_column(n, &mirrored);
                }
            }
        }
        Ok(FittedHead {
            head,
            c,
            held_out: selection.held_out,
            validation_score: selection.validation_score,
        })
    }

    /// A problem's state for the final fit on all rows: from the first run's solution at the
    /// chosen cost where there is one (it saw 80 % of the rows, so the solver has the rest to
    /// add rather than everything to find).
    ///
    /// Only the final fit starts from (and is held near) a warm start's base. The held-out runs
    /// choose the cost and give the calibration its margins, so they must not know the rows
    /// they are scored on; a base trained on those rows (a retraining on the same sessions,
    /// which is what `train_model` does by default) would, and made every held-out row look
    /// known: a validation score of 1, the smallest cost, and confidences near 1 on wrong tags.
    fn final_state(&self, (positive, negative): (usize, Option<usize>), y: &[f64], alpha: Option<&Vec<f64>>) -> Binary {
        let mut state = Binary::new(
            self.x.rows(),
            self.dim,
            self.start_weights(positive, negative).as_deref(),
        );
        if let (Some(alpha), Some((rows, _))) = (alpha, self.runs.first()) {
            state.start_from(self.x, y, rows.iter().zip(alpha).map(|(&r, &a)| (r, r, a)));
        }
        state
    }
}

/// Where each head starts: per output, the base model's weights for the outputs that share a
/// name with it (none without a base model).
pub(super) struct WarmStart {
    pub(super) main: Vec<Option<Vec<f64>>>,
    pub(super) labels: Vec<Option<Vec<f64>>>,
    /// Whether any output of either head did.
    pub(super) any: bool,
}

/// The warm start from `base`, which must share a label or class name with the new model.
pub(super) fn warm_start(
    base: Option<&Model>,
    main_names: &[String],
    labels: &[String],
    main_dim: usize,
    dim: usize,
) -> Result<WarmStart> {
    let base_main = base.map(|b| b.main.head());
    let (main, warm_main) = base_columns(
        base_main.as_ref().zip(base.map(|b| b.main_names())),
        main_names,
        main_dim,
    );
    let (labels, warm_labels) = base_columns(
        base.and_then(|b| b.label_head.as_ref().map(|h| (h, &b.info.labels[..]))),
        labels,
        dim,
    );
    if base.is_some() && !warm_main && !warm_labels {
        return Err(Error::IncompatibleBase("no label or class name in common".into()));
    }
    Ok(WarmStart {
        main,
        labels,
        any: warm_main || warm_labels,
    })
}

/// The base head's columns for the outputs that share a name with ours; whether any did.
fn base_columns(base: Option<(&Head, &[String])>, names: &[String], dim: usize) -> (Vec<Option<Vec<f64>>>, bool) {
    let Some((head, base_names)) = base else {
        return (vec![None; names.len()], false);
    };
    if head.dim() != dim {
        return (vec![None; names.len()], false);
    }
    let cols: Vec<Option<Vec<f64>>> = names
        .iter()
        .map(|n| base_names.iter().position(|b| b == n).map(|k| head.column(k)))
        .collect();
    let any = cols.iter().any(Option::is_some);
    (cols, any)
}

/// The label head's problem: one row per (segment, class) pair, its features crossed with the
/// class, with the same folds as the segments so no segment is on both sides.
pub(super) fn label_problem(
    x: &Csr,
    pairs: &[(usize, usize, usize)],
    runs: &Runs,
    buckets_log2: u32,
    labels: usize,
) -> Option<(Csr, Targets, Runs)> {
    if pairs.is_empty() {
        return None;
    }
    let mut px = Csr::new();
    let mut crossed = SparseVec::default();
    for &(r, c, _) in pairs {
        let (ind, val) = x.row(r);
        let row = SparseVec {
            indices: ind.to_vec(),
            values: val.to_vec(),
        };
        cross(&row, c, buckets_log2, &mut crossed);
        px.push(&crossed);
    }
    let y: Vec<usize> = pairs.iter().map(|p| p.2).collect();
    // The same folds as the segments, so no segment is on both sides.
    let fold_of: BTreeMap<usize, usize> = runs
        .iter()
        .enumerate()
        .flat_map(|(f, (_, test))| test.iter().map(move |&r| (r, f)))
        .collect();
    let pair_runs: Runs = (0..runs.len())
        .map(|f| {
            let (mut train, mut test) = (Vec::new(), Vec::new());
            for (p, &(r, _, _)) in pairs.iter().enumerate() {
                if fold_of.get(&r) == Some(&f) {
                    test.push(p)
                } else {
                    train.push(p)
                }
            }
            (train, test)
        })
        .filter(|(train, test)| !train.is_empty() && !test.is_empty())
        .collect();
    Some((px, Targets::Single { y, k: labels }, pair_runs))
}

/// Fits the label head of the pair types and its temperature; with zero or one label seen,
/// a head that gives every class that label (or the first) with certainty. Answers the head
/// and its chosen cost.
#[expect(clippy::too_many_arguments, reason = "one step of train_inner, reading its locals")]
pub(super) fn fit_label_head(
    project_type: ProjectType,
    job: Option<&HeadJob<'_>>,
    pairs: &[(usize, usize, usize)],
    labels: usize,
    dim: usize,
    calibration: &mut Calibration,
    rng: &mut Rng,
    progress: &mut Progress<'_, '_>,
) -> Result<(Option<Head>, Option<f64>)> {
    Ok(match (job, job.map(|j| j.targets)) {
        (Some(job), Some(Targets::Single { y, k })) if *k >= 2 => {
            let fitted = job.fit(rng, progress)?;
            let (scores, gold): (Vec<Vec<f64>>, Vec<usize>) =
                fitted.held_out.iter().map(|(r, m)| (m.clone(), y[*r])).unzip();
            calibration.label_temperature = fit_temperature(&scores, &gold);
            let mut head = fitted.head;
            // Three significant digits, as the main table: half the artifact, same decisions.
            head.round_to_bf16();
            (Some(head), Some(fitted.c))
        }
        _ if matches!(project_type, ProjectType::Absa | ProjectType::Classlabel) => {
            // Zero or one label seen: every class gets that label (or the first) with certainty.
            let mut head = Head::zeros(dim, labels.max(1));
            if let Some(&(_, _, l)) = pairs.first() {
                head.bias[l] = 1.0;
                calibration.label_temperature = 50.0;
            }
            (Some(head), None)
        }
        _ => (None, None),
    })
}
