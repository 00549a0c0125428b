//! Training: from tagged examples to a calibrated [`Model`], for the four project types.
//!
//! The recipe is the same for every head: featurise, choose the SVM cost on held-out data
//! (5-fold cross-validation for small sets, where every example counts; one stratified 20 %
//! holdout for large ones, where time counts), fit the calibration and thresholds on those
//! held-out margins, then refit on everything with the chosen cost. The featurisation itself
//! is chosen the same way, on the same held-out runs, among [`FeatureConfig::candidates`]
//! (`choice`). Users never tune anything;
//! every choice is recorded in the model's [`HyperParameters`]. All randomness comes from the
//! seed and everything runs on one thread in a fixed order, so the same input gives the same
//! bytes.
//!
//! [`train_inner`] reads as the list of steps; each lives in a module of its own: what the
//! heads predict (`targets`), how the cost is chosen (`selection`), fitting a head (`heads`),
//! calibrating the main head (`calibration`), the sentence encoder's part (`encoder`) and the
//! choice of featurisation (`choice`).

mod calibration;
mod choice;
mod encoder;
mod heads;
mod selection;
mod targets;

use std::sync::Arc;

use lector_core::ProjectType;

use crate::dense::{Embedder, Encoder, TunedEncoder};
use crate::error::{Error, Result};
use crate::example::Example;
use crate::features::{FeatureConfig, Featurizer, Scratch, SparseVec};
use crate::model::{HyperParameters, Model, ModelInfo, Table};
use crate::progress::{Progress, ProgressFn};
use crate::rng::Rng;
use crate::svm::Csr;
use heads::HeadJob;

/// How to train. [`Options::default`] is what users get; nothing needs tuning.
#[derive(Debug, Clone)]
pub struct Options<'a> {
    pub seed: u64,
    /// Feature extraction (ignored on a warm start, which must use the base model's).
    pub features: FeatureConfig,
    /// A fixed SVM cost; `None` chooses one from `c_grid` on held-out data.
    pub c: Option<f64>,
    /// Costs above [`LARGE_DATA_MAX_C`](selection::LARGE_DATA_MAX_C) are tried only on small sets (cross-validated), where
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
    /// Choose between [`FeatureConfig::candidates`] of `features` on held-out data (on by
    /// default; off, `features` is used as given). A warm start or a sentence encoder always
    /// uses the given features.
    pub choose_features: bool,
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
            choose_features: true,
        }
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
    let (features, grid) = checked_settings(project_type, options)?;
    let (rows, classes, labels) = targets::vocabularies(project_type, examples)?;
    if rows.is_empty() {
        return Err(Error::input("no usable examples"));
    }
    let text_units = rows.iter().map(|&i| examples[i].text.len() as f64).sum::<f64>();
    progress.plan(text_units);
    let per_label = rows.len() as f64 / labels.len().max(1) as f64;
    let (embedder, dense) = encoder::choose(project_type, options, per_label, text_units, progress)?;
    let dim = features.buckets();
    let (targets, keys) = targets::main_targets(project_type, examples, &rows, &classes, &labels);
    // With few examples per label, a copy of the encoder tuned on pairs of them gives the
    // vectors (before featurisation, which reads them).
    let tuning = encoder::Tuning {
        embedder: embedder.as_ref(),
        dense: dense.as_ref(),
        targets: &targets,
        examples,
        rows: &rows,
        seed: options.seed,
        text_units,
    };
    let pair_tuned = tuning.tune_pairs(progress)?;

    // Featurisation: the n-grams of every head, and the encoder's vectors for the main one,
    // for every candidate featurisation (one where it is fixed).
    let fixed = !options.choose_features || options.base.is_some() || embedder.is_some();
    let configs = choice::candidates(&features, fixed);
    progress.plan(text_units * (configs.len() - 1) as f64);
    let mut candidates = Vec::with_capacity(configs.len());
    for config in &configs {
        let (featurizer, x) = featurise(config, examples, &rows, progress)?;
        let x_main = match (&embedder, &dense) {
            (Some(e), Some(d)) => {
                encoder::with_dense(&x, dim, e.as_ref(), pair_tuned.as_ref(), d, examples, &rows, progress)?
            }
            _ => x.clone(),
        };
        candidates.push(choice::Candidate { featurizer, x, x_main });
    }
    let main_dim = dim + dense.as_ref().map_or(0, |d| d.dim);

    // Targets, validation runs (the same for every candidate) and the costs to try.
    let (params, select) = selection::solver_params(options);
    let mut rng = Rng::new(options.seed);
    let nnz = candidates[0].x_main.indices.len();
    let (runs, validation) = selection::validation_runs(&keys, nnz, &mut rng, options.c.is_some());
    let grid = selection::grid_for(grid, &runs, options);

    // Warm starts, and the label head of the pair types: one row per (segment, class) with a label.
    let main_names = if project_type == ProjectType::Label {
        &labels
    } else {
        &classes
    };
    let warm = heads::warm_start(options.base, main_names, &labels, main_dim, dim)?;

    // The main head's job on the features `$x`: a candidate's while the featurisation is
    // chosen, the chosen one's for the final fit. A macro rather than a closure or a copy of
    // the job: the candidates are borrowed while choosing, and the winner is moved out of them
    // (the others dropped) before the fit.
    macro_rules! main_job {
        ($x:expr) => {
            HeadJob {
                x: $x,
                dim: main_dim,
                targets: &targets,
                runs: &runs,
                grid: &grid,
                w0: &warm.main,
                params,
                select,
            }
        };
    }

    // Plan all solver work, then choose the featurisation on the held-out runs.
    let main_job = main_job!(&candidates[0].x_main);
    for c in &candidates[1..] {
        // At most the whole grid (`choice`).
        HeadJob {
            x: &c.x_main,
            ..main_job
        }
        .plan_selection(progress);
    }
    main_job.plan(progress);
    progress.advance(text_units)?;
    let chosen = choice::choose(&candidates, &main_job, &rng, progress)?;
    let choice::Candidate { featurizer, x, x_main } = candidates.swap_remove(chosen.index);
    drop(candidates);
    let features = featurizer.config.clone();
    rng = chosen.rng;
    let pairs = if matches!(project_type, ProjectType::Absa | ProjectType::Classlabel) {
        targets::label_pairs(examples, &rows, &classes, &labels)
    } else {
        Vec::new()
    };
    let label_problem = heads::label_problem(&x, &pairs, &runs, features.buckets_log2, labels.len());
    let label_job = label_problem.as_ref().map(|(px, t, pr)| HeadJob {
        x: px,
        dim,
        targets: t,
        runs: pr,
        grid: &grid,
        w0: &warm.labels,
        params,
        select,
    });
    if let Some(job) = &label_job {
        job.plan(progress);
    }

    // Fitting the heads and calibrating them.
    let main = main_job!(&x_main).final_fit(chosen.selection, &mut rng, progress)?;
    let mut calibration = calibration::calibrate(&targets, &main.held_out);
    let tuned = tuning.tune(&mut calibration, progress)?;
    let (label_head, c_labels) = heads::fit_label_head(
        project_type,
        label_job.as_ref(),
        &pairs,
        labels.len(),
        dim,
        &mut calibration,
        &mut rng,
        progress,
    )?;
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
                features_tried: chosen.trials,
            },
            calibration,
            examples: rows.len(),
            trained_at: options.trained_at.clone(),
            warm_started: warm.any,
            metrics: None,
            language: None,
            field_model: None,
        },
        main: Table::fuse(&encoder::dense_idf(&featurizer.idf, main_dim), &main.head),
        label_head,
        encoder: embedder.map(Encoder),
        tuned: tuned.or(pair_tuned.map(TunedEncoder)),
    })
}

/// The feature configuration (a warm start's base model's) and the cost grid, once the options
/// are checked; refuses a base model of the other kind of head (LABEL against the rest).
fn checked_settings(project_type: ProjectType, options: &Options<'_>) -> Result<(FeatureConfig, Vec<f64>)> {
    let features = match options.base {
        Some(base) => base.info.features.clone(),
        None => options.features.clone(),
    };
    features.validate().map_err(Error::InvalidInput)?;
    if options.max_epochs == 0 {
        return Err(Error::input("max_epochs must be at least 1"));
    }
    let grid = selection::cost_grid(options)?;
    if let Some(base) = options.base
        && matches!(base.info.project_type, ProjectType::Label) != matches!(project_type, ProjectType::Label)
    {
        return Err(Error::IncompatibleBase(format!(
            "a {} model cannot seed a {project_type} model",
            base.info.project_type
        )));
    }
    Ok((features, grid))
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

impl Model {
    fn main_names(&self) -> &[String] {
        if self.info.project_type == ProjectType::Label {
            &self.info.labels
        } else {
            &self.info.classes
        }
    }
}
