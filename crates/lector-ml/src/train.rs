//! Training: from tagged examples to a calibrated [`Model`], for the four project types.
//!
//! The recipe is the same for every head: featurise, choose the SVM cost on held-out data
//! (5-fold cross-validation for small sets, where every example counts; one stratified 20 %
//! holdout for large ones, where time counts), fit the calibration and thresholds on those
//! held-out margins, then refit on everything with the chosen cost. Users never tune anything;
//! every choice is recorded in the model's [`HyperParameters`]. All randomness comes from the
//! seed and everything runs on one thread in a fixed order, so the same input gives the same
//! bytes.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;
use std::sync::Arc;

use lector_core::ProjectType;

use crate::calibrate::{Platt, best_threshold, fit_temperature};
use crate::dense::{DenseConfig, Embedder, Encoder, TunedEncoder, scaled};
use crate::error::{Error, Result};
use crate::example::Example;
use crate::features::{FeatureConfig, Featurizer, Scratch, SparseVec};
use crate::model::{Calibration, Head, HyperParameters, Model, ModelInfo, Table, argmax, cross};
use crate::progress::{Progress, ProgressFn};
use crate::rng::Rng;
use crate::split::stratified_folds;
use crate::svm::{Binary, Csr, SolverParams};

/// Validation runs: `(train rows, held-out rows)` each.
type Runs = Vec<(Vec<usize>, Vec<usize>)>;

/// Below this many non-zero features in all (a few thousand sentences, a few hundred long
/// documents), hyper-parameters are chosen by 5-fold cross-validation; above, one holdout
/// is both reliable enough and five times cheaper.
const CROSS_VALIDATE_BELOW_NNZ: usize = 2_000_000;
/// The largest cost tried on sets too large to cross-validate.
pub const LARGE_DATA_MAX_C: f64 = 3.0;
/// Epoch budget of each solve on held-out runs.
const SELECTION_EPOCHS: u32 = 20;
/// Below this many segments there is too little to hold out: defaults are used.
const MIN_FOR_VALIDATION: usize = 10;

/// How to train. [`Options::default`] is what users get; nothing needs tuning.
#[derive(Debug, Clone)]
pub struct Options<'a> {
    pub seed: u64,
    /// Feature extraction (ignored on a warm start, which must use the base model's).
    pub features: FeatureConfig,
    /// A fixed SVM cost; `None` chooses one from `c_grid` on held-out data.
    pub c: Option<f64>,
    /// Costs above [`LARGE_DATA_MAX_C`] are tried only on small sets (cross-validated), where
    /// strong fits pay off and solves are cheap; on large sets they rarely win and converge
    /// slowly.
    pub c_grid: Vec<f64>,
    pub max_epochs: u32,
    /// Stored in the artifact header as given.
    pub trained_at: Option<String>,
    /// Start from this model's weights (regularised towards them) where labels or classes
    /// have the same names.
    pub base: Option<&'a Model>,
    /// A sentence encoder whose vectors join the n-grams of the main head (an optional base
    /// model, e.g. `lector-embed`'s MiniLM); the model keeps it for prediction. A warm start
    /// without one keeps the base model's (a tuned copy of it is tuned again, from the
    /// encoder's own weights).
    pub embedder: Option<Arc<dyn Embedder>>,
    /// The encoder's vector is scaled by this beside the unit-length n-gram vector.
    pub dense_weight: f32,
    /// Where the encoder can be tuned ([`Embedder::can_tune`]) and the main head is
    /// multi-label (CLASS, CLASSLABEL, ABSA), also adapt a copy of it to the classes and add
    /// its logits to the main head's margins. On by default: it is the more accurate, and
    /// the slower to train by far (`docs/BENCHMARKS.md`).
    pub tune_encoder: bool,
}

impl Default for Options<'_> {
    fn default() -> Self {
        Self {
            seed: 0,
            features: FeatureConfig::default(),
            c: None,
            c_grid: vec![0.1, 0.3, 1.0, 3.0, 10.0],
            max_epochs: 50,
            trained_at: None,
            base: None,
            embedder: None,
            dense_weight: 1.0,
            tune_encoder: true,
        }
    }
}

/// What one head learns to predict.
enum Targets {
    /// One of `k` outputs per row.
    Single { y: Vec<usize>, k: usize },
    /// Any of `k` outputs per row.
    Multi { y: Vec<Vec<usize>>, k: usize },
}

impl Targets {
    fn outputs(&self) -> usize {
        match self {
            Targets::Single { k, .. } | Targets::Multi { k, .. } => *k,
        }
    }

    /// The binary problems: `(positive output, negative output)`; a two-way single-label head
    /// is one problem (the second output is the first's mirror), the rest one-vs-rest.
    fn problems(&self) -> Vec<(usize, Option<usize>)> {
        match self {
            Targets::Single { k: 2, .. } => vec![(1, Some(0))],
            Targets::Single { k, .. } | Targets::Multi { k, .. } => (0..*k).map(|i| (i, None)).collect(),
        }
    }

    fn sign(&self, row: usize, output: usize) -> f64 {
        let on = match self {
            Targets::Single { y, .. } => y[row] == output,
            Targets::Multi { y, .. } => y[row].contains(&output),
        };
        if on { 1.0 } else { -1.0 }
    }

    /// Held-out quality of margins: macro F1 of the arg-max (single) or micro F1 of the
    /// positive margins (multi).
    fn score(&self, rows: &[usize], margins: &[Vec<f64>]) -> f64 {
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

/// A head as fitted: weights, the cost chosen, and held-out margins at that cost.
struct FittedHead {
    head: Head,
    c: f64,
    /// `(row, margins)` of every held-out row, in row order.
    held_out: Vec<(usize, Vec<f64>)>,
    validation_score: Option<f64>,
}

struct HeadJob<'a> {
    x: &'a Csr,
    dim: usize,
    targets: &'a Targets,
    /// Validation runs: `(train rows, held-out rows)`.
    runs: &'a [(Vec<usize>, Vec<usize>)],
    grid: &'a [f64],
    /// Per output: the base model's weights to start from.
    w0: &'a [Option<Vec<f64>>],
    /// For the final fit.
    params: SolverParams,
    /// For the held-out runs: a tighter epoch budget. Large costs converge slowly, and a
    /// nearly converged model ranks costs as well as a converged one.
    select: SolverParams,
}

impl HeadJob<'_> {
    fn plan(&self, progress: &mut Progress<'_, '_>) {
        let problems = self.targets.problems().len() as f64;
        let epochs = f64::from(self.select.max_epochs);
        for (train, _) in self.runs {
            progress.plan(problems * epochs * self.grid.len() as f64 * self.x.nnz_of(train) as f64);
        }
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

    fn fit(&self, rng: &mut Rng, progress: &mut Progress<'_, '_>) -> Result<FittedHead> {
        let k = self.targets.outputs();
        let problems = self.targets.problems();
        // held[c][i] = margins of held-out row i (in `held_rows` order) at cost grid[c].
        let held_rows: Vec<usize> = {
            let mut rows: Vec<usize> = self.runs.iter().flat_map(|(_, h)| h.iter().copied()).collect();
            rows.sort_unstable();
            rows
        };
        let position: BTreeMap<usize, usize> = held_rows.iter().enumerate().map(|(i, &r)| (r, i)).collect();
        let mut held = vec![vec![vec![0.0f64; k]; held_rows.len()]; self.grid.len()];
        for (train, test) in self.runs {
            for &(positive, negative) in &problems {
                let y: Vec<f64> = train.iter().map(|&r| self.targets.sign(r, positive)).collect();
                let mut state = Binary::new(train.len(), self.dim, self.start_weights(positive, negative).as_deref());
                for (ci, &c) in self.grid.iter().enumerate() {
                    let cost = vec![c; train.len()];
                    state.solve(self.x, train, &y, &cost, self.select, rng, progress)?;
                    for &r in test {
                        let (ind, val) = self.x.row(r);
                        let m = Binary::margin(&state.w, ind, val);
                        let slot = &mut held[ci][position[&r]];
                        slot[positive] = m;
                        if let Some(n) = negative {
                            slot[n] = -m;
                        }
                    }
                }
            }
        }
        let (best, validation_score) = if held_rows.is_empty() {
            // Nothing held out: the cost nearest 1, liblinear's and scikit-learn's default.
            let nearest = (0..self.grid.len())
                .min_by(|&a, &b| self.grid[a].ln().abs().total_cmp(&self.grid[b].ln().abs()))
                .unwrap_or(0);
            (nearest, None)
        } else {
            let mut best = (0, f64::NEG_INFINITY);
            for (ci, margins) in held.iter().enumerate() {
                let s = self.targets.score(&held_rows, margins);
                if s > best.1 {
                    best = (ci, s);
                }
            }
            (best.0, Some(best.1))
        };
        let c = self.grid[best];
        let all: Vec<usize> = (0..self.x.rows()).collect();
        let mut head = Head::zeros(self.dim, k);
        for &(positive, negative) in &problems {
            let y: Vec<f64> = all.iter().map(|&r| self.targets.sign(r, positive)).collect();
            let mut state = Binary::new(all.len(), self.dim, self.start_weights(positive, negative).as_deref());
            state.solve(self.x, &all, &y, &vec![c; all.len()], self.params, rng, progress)?;
            head.set_column(positive, &state.w);
            if let Some(n) = negative {
                let mirrored: Vec<f64> = state.w.iter().map(|v| -v).collect();
                head.set_column(n, &mirrored);
            }
        }
        let held_out = held_rows.into_iter().zip(held.swap_remove(best)).collect();
        Ok(FittedHead {
            head,
            c,
            held_out,
            validation_score,
        })
    }
}

/// Sorted, de-duplicated names.
fn vocabulary<'e>(names: impl Iterator<Item = &'e String>) -> Vec<String> {
    names.cloned().collect::<BTreeSet<_>>().into_iter().collect()
}

fn index_of(names: &[String], name: &str) -> Option<usize> {
    names.binary_search_by(|n| n.as_str().cmp(name)).ok()
}

/// The validation runs for `n` rows stratified by `keys`.
fn validation_runs(keys: &[usize], nnz: usize, rng: &mut Rng, fixed_c: bool) -> (Runs, String) {
    let n = keys.len();
    if n < MIN_FOR_VALIDATION {
        return (Vec::new(), "none".into());
    }
    let folds = stratified_folds(keys, 5, rng);
    let run = |f: usize| {
        let train = (0..n).filter(|&i| folds[i] != f).collect::<Vec<_>>();
        let test = (0..n).filter(|&i| folds[i] == f).collect::<Vec<_>>();
        (train, test)
    };
    // With the cost fixed, held-out data serves only calibration: one fold is enough.
    if nnz < CROSS_VALIDATE_BELOW_NNZ && !fixed_c {
        ((0..5).map(run).collect(), "5-fold".into())
    } else {
        (vec![run(0)], "holdout-20%".into())
    }
}

impl Model {
    /// Trains a model of `project_type` on `examples`.
    ///
    /// `progress` receives the fraction done (non-decreasing, ending at 1) and may answer
    /// [`std::ops::ControlFlow::Break`] to cancel, which makes this return
    /// [`Error::Cancelled`].
    pub fn train(
        project_type: ProjectType,
        examples: &[Example],
        options: &Options<'_>,
        progress: &mut ProgressFn<'_>,
    ) -> Result<Model> {
        let mut progress = Progress::new(progress);
        let model = train_inner(project_type, examples, options, &mut progress)?;
        progress.finish();
        Ok(model)
    }
}

fn train_inner(
    project_type: ProjectType,
    examples: &[Example],
    options: &Options<'_>,
    progress: &mut Progress<'_, '_>,
) -> Result<Model> {
    let features = match options.base {
        Some(base) => base.info.features.clone(),
        None => options.features.clone(),
    };
    features.validate().map_err(Error::InvalidInput)?;
    if options.max_epochs == 0 {
        return Err(Error::input("max_epochs must be at least 1"));
    }
    let grid: Vec<f64> = match options.c {
        Some(c) if c.is_finite() && c > 0.0 => vec![c],
        Some(c) => {
            return Err(Error::input(format!("the SVM cost must be positive, not {c}")));
        }
        None => {
            let mut g: Vec<f64> = options
                .c_grid
                .iter()
                .copied()
                .filter(|c| c.is_finite() && *c > 0.0)
                .collect();
            g.sort_by(f64::total_cmp);
            g.dedup();
            if g.is_empty() {
                return Err(Error::input("the cost grid has no positive value"));
            }
            g
        }
    };
    if let Some(base) = options.base
        && matches!(base.info.project_type, ProjectType::Label) != matches!(project_type, ProjectType::Label)
    {
        return Err(Error::IncompatibleBase(format!(
            "a {} model cannot seed a {project_type} model",
            base.info.project_type
        )));
    }

    let (rows, classes, labels) = vocabularies(project_type, examples)?;
    if rows.is_empty() {
        return Err(Error::input("no usable examples"));
    }

    let text_units = rows.iter().map(|&i| examples[i].text.len() as f64).sum::<f64>();
    progress.plan(text_units);
    // A warm start keeps the base model's encoder (like its features) unless one is given.
    let (embedder, dense_weight) = match (&options.embedder, options.base) {
        (Some(e), _) => (Some(e.clone()), options.dense_weight),
        (None, Some(base)) => match (&base.encoder, &base.info.dense) {
            (Some(e), Some(d)) => (Some(e.0.clone()), d.weight),
            _ => (None, options.dense_weight),
        },
        (None, None) => (None, options.dense_weight),
    };
    let dense = match &embedder {
        Some(_) if !(dense_weight.is_finite() && dense_weight > 0.0) => {
            return Err(Error::input(format!(
                "the dense weight must be positive, not {dense_weight}"
            )));
        }
        Some(e) => {
            let tuned = options.tune_encoder && project_type != ProjectType::Label && e.can_tune();
            // Encoding costs far more per text than hashing n-grams, and tuning more still:
            // plan them as such.
            progress.plan(ENCODE_UNITS_PER_BYTE * text_units);
            if tuned {
                progress.plan(TUNE_UNITS_PER_BYTE * text_units);
            }
            Some(DenseConfig {
                encoder: e.id(),
                dim: e.dim(),
                weight: dense_weight,
                tuned,
            })
        }
        None => None,
    };
    let (featurizer, x) = featurise(&features, examples, &rows, progress)?;
    let dim = features.buckets();
    let x_main = match (&embedder, &dense) {
        (Some(e), Some(d)) => with_dense(&x, dim, e.as_ref(), d, examples, &rows, progress)?,
        _ => x.clone(),
    };
    let main_dim = dim + dense.as_ref().map_or(0, |d| d.dim);
    let params = SolverParams {
        max_epochs: options.max_epochs,
        eps: 0.1,
    };
    let select = SolverParams {
        max_epochs: options.max_epochs.min(SELECTION_EPOCHS),
        ..params
    };
    let mut rng = Rng::new(options.seed);

    // Main head targets and strata.
    let (targets, keys) = match project_type {
        ProjectType::Label => {
            let y: Vec<usize> = rows
                .iter()
                .map(|&i| {
                    examples[i]
                        .tags
                        .iter()
                        .find_map(|t| t.label.as_deref())
                        .and_then(|l| index_of(&labels, l))
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
                        .filter_map(|c| index_of(&classes, c))
                        .collect();
                    set.into_iter().collect()
                })
                .collect();
            let keys = y.iter().map(|s| s.first().map_or(0, |c| c + 1)).collect();
            (Targets::Multi { y, k: classes.len() }, keys)
        }
    };
    let (runs, validation) = validation_runs(&keys, x_main.indices.len(), &mut rng, options.c.is_some());
    let grid: Vec<f64> = if runs.len() == 1 && options.c.is_none() {
        let capped: Vec<f64> = grid.iter().copied().filter(|&c| c <= LARGE_DATA_MAX_C).collect();
        if capped.is_empty() { grid } else { capped }
    } else {
        grid
    };
    let main_names = if project_type == ProjectType::Label {
        &labels
    } else {
        &classes
    };
    let base_main = options.base.map(|b| b.main.head());
    let (w0_main, warm_main) = base_columns(
        base_main.as_ref().zip(options.base.map(|b| b.main_names())),
        main_names,
        main_dim,
    );

    // The label head of the pair types: one row per (segment, class) with a label.
    let pairs = if matches!(project_type, ProjectType::Absa | ProjectType::Classlabel) {
        label_pairs(examples, &rows, &classes, &labels)
    } else {
        Vec::new()
    };
    let label_job = if pairs.is_empty() {
        None
    } else {
        let mut px = Csr::new();
        let mut crossed = SparseVec::default();
        for &(r, c, _) in &pairs {
            let (ind, val) = x.row(r);
            let row = SparseVec {
                indices: ind.to_vec(),
                values: val.to_vec(),
            };
            cross(&row, c, features.buckets_log2, &mut crossed);
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
        Some((px, Targets::Single { y, k: labels.len() }, pair_runs))
    };
    let (w0_labels, warm_labels) = base_columns(
        options
            .base
            .and_then(|b| b.label_head.as_ref().map(|h| (h, &b.info.labels[..]))),
        &labels,
        dim,
    );
    if options.base.is_some() && !warm_main && !warm_labels {
        return Err(Error::IncompatibleBase("no label or class name in common".into()));
    }

    // Plan all solver work, then run it.
    let main_job = HeadJob {
        x: &x_main,
        dim: main_dim,
        targets: &targets,
        runs: &runs,
        grid: &grid,
        w0: &w0_main,
        params,
        select,
    };
    main_job.plan(progress);
    let label_job = label_job.as_ref().map(|(px, t, pr)| HeadJob {
        x: px,
        dim,
        targets: t,
        runs: pr,
        grid: &grid,
        w0: &w0_labels,
        params,
        select,
    });
    if let Some(job) = &label_job {
        job.plan(progress);
    }
    progress.advance(text_units)?;

    let main = main_job.fit(&mut rng, progress)?;
    let mut calibration = Calibration {
        temperature: 1.0,
        platt: Platt::default(),
        thresholds: Vec::new(),
        label_temperature: 1.0,
        at_least_one: false,
    };
    match &targets {
        Targets::Single { y, .. } => {
            let (scores, gold): (Vec<Vec<f64>>, Vec<usize>) =
                main.held_out.iter().map(|(r, m)| (m.clone(), y[*r])).unzip();
            calibration.temperature = fit_temperature(&scores, &gold);
        }
        Targets::Multi { y, k } => {
            let mut margins = Vec::new();
            let mut positive = Vec::new();
            for (r, m) in &main.held_out {
                for (c, &v) in m.iter().enumerate() {
                    margins.push(v);
                    positive.push(y[*r].contains(&c));
                }
            }
            calibration.platt = if main.held_out.is_empty() {
                Platt::default()
            } else {
                Platt::fit(&margins, &positive)
            };
            calibration.thresholds = (0..*k)
                .map(|c| {
                    best_threshold(
                        main.held_out
                            .iter()
                            .map(|(r, m)| (calibration.platt.probability(m[c] as f32), y[*r].contains(&c)))
                            .collect(),
                    )
                })
                .collect();
            calibration.at_least_one = at_least_one_helps(&main.held_out, y, &calibration);
        }
    }
    let tuned = match (&embedder, &dense, &targets) {
        (Some(e), Some(d), Targets::Multi { y, k }) if d.tuned => {
            let texts: Vec<&str> = rows.iter().map(|&i| examples[i].text.as_str()).collect();
            let budget = TUNE_UNITS_PER_BYTE * text_units;
            let mut reported = 0.0;
            let mut inner = Ok(());
            let tuned = e.tune(&texts, y, *k, options.seed, &mut |fraction| {
                let units = budget * fraction.clamp(0.0, 1.0);
                inner = progress.advance(units - reported);
                reported = units.max(reported);
                if inner.is_ok() {
                    ControlFlow::Continue(())
                } else {
                    ControlFlow::Break(())
                }
            });
            inner?;
            // A class's score is its margin plus the tuned logit, decided at even odds.
            calibration.thresholds = vec![0.5; *k];
            Some(TunedEncoder(tuned?))
        }
        _ => None,
    };
    let mut c_labels = None;
    let label_head = match (&label_job, &label_job.as_ref().map(|j| j.targets)) {
        (Some(job), Some(Targets::Single { y, k })) if *k >= 2 => {
            let fitted = job.fit(&mut rng, progress)?;
            let (scores, gold): (Vec<Vec<f64>>, Vec<usize>) =
                fitted.held_out.iter().map(|(r, m)| (m.clone(), y[*r])).unzip();
            calibration.label_temperature = fit_temperature(&scores, &gold);
            c_labels = Some(fitted.c);
            Some(fitted.head)
        }
        _ if matches!(project_type, ProjectType::Absa | ProjectType::Classlabel) => {
            // Zero or one label seen: every class gets that label (or the first) with certainty.
            let mut head = Head::zeros(dim, labels.len().max(1));
            if let Some(&(_, _, l)) = pairs.first() {
                head.bias[l] = 1.0;
                calibration.label_temperature = 50.0;
            }
            Some(head)
        }
        _ => None,
    };
    let labels = if matches!(project_type, ProjectType::Classlabel) && labels.is_empty() {
        Vec::new()
    } else {
        labels
    };

    Ok(Model {
        info: ModelInfo {
            project_type,
            classes,
            labels,
            features,
            dense,
            hyper: HyperParameters {
                c: main.c,
                c_labels,
                c_grid: if options.c.is_some() { Vec::new() } else { grid.clone() },
                seed: options.seed,
                max_epochs: options.max_epochs,
                validation,
                validation_score: main.validation_score,
            },
            calibration,
            examples: rows.len(),
            trained_at: options.trained_at.clone(),
            warm_started: warm_main || warm_labels,
            metrics: None,
        },
        main: Table::fuse(&dense_idf(&featurizer.idf, main_dim), &main.head),
        label_head,
        encoder: embedder.map(Encoder),
        tuned,
    })
}

/// What a model of `project_type` learns from `examples`: the rows it uses (indices into
/// `examples`), its classes and its labels, sorted by name.
fn vocabularies(project_type: ProjectType, examples: &[Example]) -> Result<(Vec<usize>, Vec<String>, Vec<String>)> {
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

/// Progress units per byte of text for encoding (against 1 for hashing n-grams, and about a
/// thousand for the SVM solves on the SemEval restaurant set, which encoding outlasts twentyfold).
const ENCODE_UNITS_PER_BYTE: f64 = 20_000.0;
/// Progress units per byte of text for tuning the encoder: about ten encodings' worth.
const TUNE_UNITS_PER_BYTE: f64 = 200_000.0;

/// The IDF table of the main head: the n-grams' weights, then 0 for the encoder's rows
/// (they are no n-grams; prediction reads only their weights).
fn dense_idf(idf: &[f32], main_dim: usize) -> Vec<f32> {
    let mut out = idf.to_vec();
    out.resize(main_dim, 0.0);
    out
}

/// `x` with each row's encoder vector appended at columns `dim..dim + d.dim`.
fn with_dense(
    x: &Csr,
    dim: usize,
    encoder: &dyn Embedder,
    d: &DenseConfig,
    examples: &[Example],
    rows: &[usize],
    progress: &mut Progress<'_, '_>,
) -> Result<Csr> {
    let mut out = Csr::new();
    let mut v = SparseVec::default();
    for (r, &i) in rows.iter().enumerate() {
        let (ind, val) = x.row(r);
        v.indices.clear();
        v.values.clear();
        v.indices.extend_from_slice(ind);
        v.values.extend_from_slice(val);
        let e = scaled(&encoder.embed(&examples[i].text), d.weight);
        for (j, &value) in e.iter().take(d.dim).enumerate() {
            if value != 0.0 {
                v.indices.push((dim + j) as u32);
                v.values.push(value);
            }
        }
        out.push(&v);
        // Cancellable between texts: encoding is the slow part of training with an encoder.
        progress.advance(ENCODE_UNITS_PER_BYTE * examples[i].text.len() as f64)?;
    }
    Ok(out)
}

/// Whether taking the most probable class when none reaches its threshold raises the held-out
/// micro F1 (it does where every segment has a class, as in ABSA data).
fn at_least_one_helps(held_out: &[(usize, Vec<f64>)], y: &[Vec<usize>], calibration: &Calibration) -> bool {
    let (mut tp, mut fp, mut fn_) = (0usize, 0usize, 0usize);
    let (mut gain_tp, mut gain_fp) = (0usize, 0usize);
    for (r, m) in held_out {
        let probs: Vec<f32> = m.iter().map(|&v| calibration.platt.probability(v as f32)).collect();
        let mut any = false;
        for (c, &p) in probs.iter().enumerate() {
            let on = p >= calibration.thresholds.get(c).copied().unwrap_or(0.5);
            any |= on;
            match (y[*r].contains(&c), on) {
                (true, true) => tp += 1,
                (true, false) => fn_ += 1,
                (false, true) => fp += 1,
                _ => {}
            }
        }
        if !any && !probs.is_empty() {
            let k = argmax(&probs);
            if y[*r].contains(&k) {
                gain_tp += 1;
            } else {
                gain_fp += 1;
            }
        }
    }
    let f1 = |tp: usize, fp: usize, fn_: usize| {
        let d = 2 * tp + fp + fn_;
        if d == 0 { 0.0 } else { 2.0 * tp as f64 / d as f64 }
    };
    f1(tp + gain_tp, fp + gain_fp, fn_ - gain_tp) > f1(tp, fp, fn_)
}

/// Featurises the rows: raw counts, IDF weights learnt from them, then weighted, normalised
/// vectors.
fn featurise(
    features: &FeatureConfig,
    examples: &[Example],
    rows: &[usize],
    progress: &mut Progress<'_, '_>,
) -> Result<(Featurizer, Csr)> {
    let mut scratch = Scratch::default();
    let mut counts = Vec::with_capacity(rows.len());
    for (n, &i) in rows.iter().enumerate() {
        let mut c = Vec::new();
        Featurizer::raw_counts(features, &examples[i].text, &mut scratch, &mut c);
        counts.push(c);
        if n % 4096 == 4095 {
            // Gives the caller a chance to cancel during a long featurisation.
            progress.advance(0.0)?;
        }
    }
    let featurizer = Featurizer::fit_idf(features.clone(), &counts);
    let mut x = Csr::new();
    let mut v = SparseVec::default();
    for c in &counts {
        featurizer.weigh(c.iter().copied(), &mut v);
        x.push(&v);
    }
    Ok((featurizer, x))
}

/// The label head's training rows: `(row, class, label)` for every class of a segment that
/// has a label. A class tagged twice in a segment takes its most frequent label (the first on
/// ties).
fn label_pairs(
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

impl Model {
    fn main_names(&self) -> &[String] {
        if self.info.project_type == ProjectType::Label {
            &self.info.labels
        } else {
            &self.info.classes
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn calibration(thresholds: Vec<f32>) -> Calibration {
        Calibration {
            temperature: 1.0,
            platt: Platt::default(),
            thresholds,
            label_temperature: 1.0,
            at_least_one: false,
        }
    }

    #[test]
    fn at_least_one_is_chosen_only_where_it_helps() {
        let cal = calibration(vec![0.99, 0.99]);
        // Every segment has a class and the most probable one is right: forcing one helps.
        let held = vec![(0, vec![0.5, -0.5]), (1, vec![-0.5, 0.5])];
        assert!(at_least_one_helps(&held, &[vec![0], vec![1]], &cal));
        // Segments without a class: forcing one only adds false positives.
        assert!(!at_least_one_helps(&held, &[vec![], vec![]], &cal));
        // Something already passes its threshold: nothing to force.
        let cal = calibration(vec![0.1, 0.1]);
        assert!(!at_least_one_helps(&held, &[vec![0], vec![1]], &cal));
    }
}
