//! The lector-ml benchmark (issue 4). Run through `scripts/ml-bench`, which fetches the data and
//! runs the scikit-learn and fastText baselines on the very files this program writes.
//!
//! ```text
//! bench tsv  --data FILE --out DIR   # FILE: lines `label<TAB>text`
//! bench tsv  --data TRAIN --test TEST --out DIR   # a set with its own test side
//! bench absa --data DIR  --out DIR   # DIR: train.jsonl, dev.jsonl, test.jsonl (SemEval-16)
//! # --allow-skipped: benchmark a file even where lines lack a TAB or a label (they are counted)
//! # writes OUT/predictions.tsv (gold, predicted, text of each test example) beside lector.json
//! # experiments: --fixed-features (no choice of featurisation), --cased, --shape, --char MIN-MAX, --buckets-log2 N, --word-ngrams N, --grid C,C,…, --no-curve
//! ```
//!
//! `tsv` makes the stratified 80/20 split with seed 0 (`DIR/train.tsv`, `DIR/test.tsv`), the
//! learning-curve subsets with 8, 32 and 128 training examples per label (`DIR/curve-N.tsv`),
//! trains lector-ml on each, and writes `DIR/lector.json`. Words are whitespace-separated
//! tokens of the raw text; prediction speed is measured on one thread over the test set, as
//! the best of five windows of at least 0.25 s. Times are CPU time of the benchmark's thread
//! (the machine is shared), so they say what one core does.

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::{Args, Parser, Subcommand};
use lector_core::ProjectType;
use lector_ml::{Example, Model, Options, Tag, Workspace, jsonl, split_examples, tsv};
use serde_json::{Value, json};

type Fallible<T> = Result<T, Box<dyn std::error::Error>>;

/// The examples of a labelled file; says on stderr what was skipped, and refuses a file whose
/// skipped lines look like a mistake unless `--allow-skipped` was given.
fn read_tsv(path: &Path, allow_skipped: bool) -> Fallible<Vec<Example>> {
    let set = tsv::read_tsv(path)?;
    eprintln!("{}: {} examples, {}", path.display(), set.examples.len(), set.skipped);
    if set.skipped.suspicious() > 0 && !allow_skipped {
        return Err(format!(
            "{}: {} (pass --allow-skipped to benchmark the rest)",
            path.display(),
            set.skipped
        )
        .into());
    }
    Ok(set.examples)
}

fn words(examples: &[&Example]) -> usize {
    examples.iter().map(|e| e.text.split_whitespace().count()).sum()
}

fn go(_: f64) -> ControlFlow<()> {
    ControlFlow::Continue(())
}

/// A model of `project_type` trained on `train`, and the seconds it took on this thread's CPU.
fn train_timed(project_type: ProjectType, train: &[Example], options: &Options<'_>) -> Fallible<(Model, f64)> {
    let clock = Clock::start();
    let model = Model::train(project_type, train, options, &mut go)?;
    Ok((model, clock.seconds()))
}

/// `figures` (a JSON object) with what both benchmarks report of the model they trained: the
/// training time, the chosen cost, how it was validated and the artifact's size.
fn with_training(mut figures: Value, model: &Model, train_s: f64, artifact_bytes: usize) -> Value {
    figures["train_s"] = json!(train_s);
    figures["c"] = json!(model.info().hyper.c);
    figures["validation"] = json!(model.info().hyper.validation);
    figures["artifact_bytes"] = json!(artifact_bytes);
    figures
}

/// Trains on `train`, scores on `test`; answers the figures as JSON.
fn run_label(
    train: &[&Example],
    test: &[&Example],
    options: &Options<'_>,
    speed: bool,
    predictions: Option<&Path>,
) -> Fallible<Value> {
    let train_owned: Vec<Example> = train.iter().map(|e| (*e).clone()).collect();
    let test_owned: Vec<Example> = test.iter().map(|e| (*e).clone()).collect();
    let (model, train_s) = train_timed(ProjectType::Label, &train_owned, options)?;
    let metrics = model.evaluate(&test_owned);
    if let Some(path) = predictions {
        write_predictions(path, &model, test)?;
    }
    let bytes = model.to_bytes();
    let loaded = Model::from_bytes(&bytes)?;
    let figures = json!({
        "train_examples": train.len(),
        "accuracy": metrics.accuracy,
        "macro_f1": metrics.macro_f1,
        "validation_score": model.info().hyper.validation_score,
        "features": model.info().features.name(),
        "features_tried": model.info().hyper.features_tried,
        "artifact_round_trip_identical": test.iter().all(|e| loaded.predict(&e.text) == model.predict(&e.text)),
    });
    let mut out = with_training(figures, &model, train_s, bytes.len());
    if speed {
        let n_words = words(test);
        let mut ws = Workspace::default();
        let mut sink = 0usize;
        // Full predictions (tags, every label's probability), as the service makes them.
        let full = best_rate(n_words, || {
            for e in test {
                sink += model.predict_with(&e.text, &mut ws).tags.len();
            }
        });
        // Decision only (the label index), for bulk scoring.
        let fast = best_rate(n_words, || {
            for e in test {
                sink += model.predict_label_index(&e.text, &mut ws).unwrap_or(0);
            }
        });
        out["predict_words_per_s"] = json!(full);
        out["predict_label_only_words_per_s"] = json!(fast);
        out["sink"] = json!(sink % 2);
    }
    Ok(out)
}

/// Writes `gold<TAB>predicted<TAB>text` for every test example, so errors can be read.
fn write_predictions(path: &Path, model: &Model, test: &[&Example]) -> Fallible<()> {
    let label = |tags: &[Tag]| tags.first().and_then(|t| t.label.clone()).unwrap_or_default();
    let mut out = String::new();
    for e in test {
        let predicted = label(&model.predict(&e.text).plain_tags());
        out.push_str(&format!("{}\t{}\t{}\n", label(&e.tags), predicted, e.text));
    }
    std::fs::write(path, out)?;
    Ok(())
}

/// Time on this thread's CPU (Linux: `/proc/thread-self/schedstat`), falling back to the
/// wall clock elsewhere. The benchmark machine is shared: CPU time measures what one core
/// does, whatever else runs beside it.
struct Clock {
    wall: Instant,
    cpu: Option<u64>,
}

impl Clock {
    fn cpu_ns() -> Option<u64> {
        let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
        s.split_whitespace().next()?.parse().ok()
    }

    fn start() -> Self {
        Self {
            wall: Instant::now(),
            cpu: Self::cpu_ns(),
        }
    }

    fn seconds(&self) -> f64 {
        match (self.cpu, Self::cpu_ns()) {
            (Some(a), Some(b)) => (b - a) as f64 / 1e9,
            _ => self.wall.elapsed().as_secs_f64(),
        }
    }
}

/// Words per second over the best of 5 windows of at least 0.25 s each (whole passes over
/// the test set). The CPU clock advances in scheduler ticks, so a window must be long for
/// its reading to be exact to a percent or two.
fn best_rate(n_words: usize, mut pass: impl FnMut()) -> f64 {
    let mut best = 0.0f64;
    for _ in 0..5 {
        let (wall, clock) = (Instant::now(), Clock::start());
        let mut passes = 0;
        while passes == 0 || wall.elapsed().as_secs_f64() < 0.25 {
            pass();
            passes += 1;
        }
        let seconds = clock.seconds();
        if seconds > 0.0 {
            best = best.max((n_words * passes) as f64 / seconds);
        }
    }
    best
}

fn bench_tsv(
    data: &Path,
    test_file: Option<&Path>,
    out: &Path,
    options: &Options<'_>,
    curve_sizes: &[usize],
    allow_skipped: bool,
) -> Fallible<()> {
    let all = read_tsv(data, allow_skipped)?;
    let given_test = test_file.map(|t| read_tsv(t, allow_skipped)).transpose()?;
    let (train, test): (Vec<&Example>, Vec<&Example>) = match &given_test {
        // A set with its own test file (sentences repeated across aspects must not straddle
        // a random split).
        Some(test) => (all.iter().collect(), test.iter().collect()),
        None => {
            let split = split_examples(ProjectType::Label, &all, 0.2, 0);
            (
                split.train.iter().map(|&i| &all[i]).collect(),
                split.test.iter().map(|&i| &all[i]).collect(),
            )
        }
    };
    check(data, &train, &test)?;
    std::fs::create_dir_all(out)?;
    tsv::write_tsv(&out.join("train.tsv"), &train)?;
    tsv::write_tsv(&out.join("test.tsv"), &test)?;
    eprintln!("{}: {} train, {} test", data.display(), train.len(), test.len());
    let full = run_label(&train, &test, options, true, Some(&out.join("predictions.tsv")))?;
    eprintln!("  lector-ml full: {full}");
    // Learning curve: the first N of each label in a seeded shuffle of the training side.
    let mut curve = BTreeMap::new();
    for &per_label in curve_sizes {
        let keys: Vec<String> = train
            .iter()
            .map(|e| e.tags[0].label.clone().unwrap_or_default())
            .collect();
        let mut shuffled: Vec<usize> = (0..train.len()).collect();
        shuffled.sort_by_key(|&i| (scramble(i as u64), i));
        let mut taken: BTreeMap<&str, usize> = BTreeMap::new();
        let mut subset = Vec::new();
        for i in shuffled {
            let n = taken.entry(keys[i].as_str()).or_default();
            if *n < per_label {
                *n += 1;
                subset.push(i);
            }
        }
        subset.sort_unstable();
        let subset: Vec<&Example> = subset.into_iter().map(|i| train[i]).collect();
        tsv::write_tsv(&out.join(format!("curve-{per_label}.tsv")), &subset)?;
        let r = run_label(&subset, &test, options, false, None)?;
        eprintln!("  lector-ml {per_label}/label: {r}");
        curve.insert(per_label.to_string(), r);
    }
    let result = json!({ "data": data.display().to_string(), "train": train.len(), "test": test.len(), "test_words": words(&test), "lector": full, "curve": curve });
    std::fs::write(out.join("lector.json"), serde_json::to_string_pretty(&result)?)?;
    Ok(())
}

/// Stops before anything is written when the split cannot make a benchmark.
fn check(data: &Path, train: &[&Example], test: &[&Example]) -> Fallible<()> {
    tsv::check_trainable(train.iter().copied(), test.iter().copied())
        .map_err(|why| format!("{}: cannot benchmark this set: {why}", data.display()).into())
}

/// A fixed scramble (SplitMix64's finaliser) to order examples for the learning curve.
fn scramble(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn bench_absa(dir: &Path, out: &Path, options: &Options<'_>) -> Fallible<()> {
    let mut train = jsonl::read_absa(&dir.join("train.jsonl"))?;
    // dev joins the training data: model selection is internal (cross-validation).
    train.extend(jsonl::read_absa(&dir.join("dev.jsonl"))?);
    let test = jsonl::read_absa(&dir.join("test.jsonl"))?;
    let (model, train_s) = train_timed(ProjectType::Absa, &train, options)?;
    let m = model.evaluate(&test);
    let figures = json!({
        "train": train.len(),
        "test": test.len(),
        "aspect_f1": m.aspect_f1,
        "sentiment_accuracy": m.sentiment_accuracy,
        "pair_micro_f1": m.micro_f1,
        "pair_macro_f1": m.macro_f1,
        "c_labels": model.info().hyper.c_labels,
        "at_least_one": model.info().calibration.at_least_one,
        "empty_predictions": test.iter().filter(|e| model.predict(&e.text).tags.is_empty()).count(),
    });
    let result = with_training(figures, &model, train_s, model.to_bytes().len());
    eprintln!("absa: {result}");
    std::fs::create_dir_all(out)?;
    // The decided tags of every test sentence, to compare two builds' decisions line by line.
    let decided: Vec<String> = test
        .iter()
        .map(|e| serde_json::to_string(&model.predict(&e.text).plain_tags()))
        .collect::<Result<_, _>>()?;
    std::fs::write(out.join("predictions.jsonl"), decided.join("\n") + "\n")?;
    std::fs::write(out.join("lector.json"), serde_json::to_string_pretty(&result)?)?;
    Ok(())
}

/// The lector-ml benchmark: lector-ml trained and scored on a labelled file or an ABSA set.
#[derive(Parser)]
struct Cli {
    /// What is benchmarked.
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// A labelled file: split, learning curve, speed.
    Tsv {
        /// Lines `label<TAB>text`.
        #[arg(long)]
        data: PathBuf,
        /// A test side of its own (then all of --data trains).
        #[arg(long)]
        test: Option<PathBuf>,
        /// Where the split, the curve's subsets, predictions.tsv and lector.json are written.
        #[arg(long)]
        out: PathBuf,
        /// Benchmark a file even where lines lack a TAB or a label (they are counted).
        #[arg(long)]
        allow_skipped: bool,
        /// No learning curve.
        #[arg(long)]
        no_curve: bool,
        /// The experiments' overrides.
        #[command(flatten)]
        experiments: Experiments,
    },
    /// A SemEval-16 ABSA set.
    Absa {
        /// The directory of train.jsonl, dev.jsonl and test.jsonl.
        #[arg(long)]
        data: PathBuf,
        /// Where predictions.jsonl and lector.json are written.
        #[arg(long)]
        out: PathBuf,
        /// The experiments' overrides.
        #[command(flatten)]
        experiments: Experiments,
    },
}

/// Overrides for experiments; the published figures use the defaults.
#[derive(Args)]
struct Experiments {
    /// Character n-grams from MIN to MAX letters (0-0 for none).
    #[arg(long, value_name = "MIN-MAX", value_parser = char_range)]
    char: Option<(u32, u32)>,
    /// 2^N hash buckets.
    #[arg(long, value_name = "N")]
    buckets_log2: Option<u32>,
    /// Longest word n-gram.
    #[arg(long, value_name = "N")]
    word_ngrams: Option<u32>,
    /// No choice of featurisation.
    #[arg(long)]
    fixed_features: bool,
    /// Also count each word with a capital as itself, case kept.
    #[arg(long)]
    cased: bool,
    /// Also mark how the text was typed.
    #[arg(long)]
    shape: bool,
    /// The SVM costs tried, comma-separated.
    #[arg(long, value_name = "C,C,…", value_delimiter = ',')]
    grid: Option<Vec<f64>>,
}

/// `--char`'s MIN-MAX.
fn char_range(range: &str) -> Result<(u32, u32), Box<dyn std::error::Error + Send + Sync>> {
    let (min, max) = range.split_once('-').ok_or("not MIN-MAX (0-0 for none)")?;
    Ok((min.parse()?, max.parse()?))
}

impl Experiments {
    fn options(self) -> Options<'static> {
        let mut options = Options::default();
        let f = &mut options.features;
        (f.char_min, f.char_max) = self.char.unwrap_or((f.char_min, f.char_max));
        f.buckets_log2 = self.buckets_log2.unwrap_or(f.buckets_log2);
        f.word_ngrams = self.word_ngrams.unwrap_or(f.word_ngrams);
        f.cased_words |= self.cased;
        f.typed_shape |= self.shape;
        options.choose_features &= !self.fixed_features;
        options.c_grid = self.grid.unwrap_or(options.c_grid);
        options
    }
}

/// Errors are printed for a person (`Display`), not as `Debug` structures.
fn main() -> std::process::ExitCode {
    let result = match Cli::parse().command {
        Command::Tsv {
            data,
            test,
            out,
            allow_skipped,
            no_curve,
            experiments,
        } => {
            let curve: &[usize] = if no_curve { &[] } else { &[8, 32, 128] };
            bench_tsv(
                &data,
                test.as_deref(),
                &out,
                &experiments.options(),
                curve,
                allow_skipped,
            )
        }
        Command::Absa { data, out, experiments } => bench_absa(&data, &out, &experiments.options()),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
