//! The ABSA benchmark of `docs/BENCHMARKS.md` with the MiniLM encoder:
//!
//! ```sh
//! cargo run --release -p lector-embed --example absa -- \
//!     --data ../shared/data/absa-rest16-en --model "$(scripts/fetch-minilm)" --out .cache/bench/absa-minilm
//! ```
//!
//! Trains an ABSA model on `train.jsonl` + `dev.jsonl` (lector-ml chooses its cost and
//! thresholds by internal cross-validation) with the encoder's top layers tuned to the aspect
//! categories, scores it on `test.jsonl`, checks that the artifact loads back to the same
//! predictions, and writes `OUT/lector-minilm-tuned.json` (`OUT/lector-minilm.json` with
//! `--frozen`, where the vector joins the n-grams instead). Times are CPU time of the process
//! (tuning runs on up to four threads); `train_wall_s` is wall time.

use std::ops::ControlFlow;
use std::sync::Arc;

use clap::Parser;
use lector_core::ProjectType;
use lector_ml::{Embedder, Model, Options, jsonl};
use serde_json::json;

mod common;
use common::{Clock, Fallible, Paths};

/// The ABSA benchmark with the MiniLM encoder.
///
/// --data is the directory of train.jsonl, dev.jsonl and test.jsonl; lector-minilm-tuned.json
/// (lector-minilm.json with --frozen) is written to --out.
#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    paths: Paths,
    /// Epochs of tuning, fewer for timing runs (TuneOptions' own by default).
    #[arg(long)]
    epochs: Option<usize>,
    /// The encoder's vector joins the n-grams untuned.
    #[arg(long)]
    frozen: bool,
    /// The training seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

fn main() -> Fallible<()> {
    let Cli {
        paths: Paths {
            data,
            model: model_dir,
            out,
        },
        epochs,
        frozen,
        seed,
    } = Cli::parse();
    let mut tune = lector_embed::TuneOptions::default();
    tune.epochs = epochs.unwrap_or(tune.epochs);
    let encoder: Arc<dyn Embedder> = Arc::new(lector_embed::MiniLm::load(&model_dir)?.with_tune_options(tune));
    let mut train = jsonl::read_absa(&data.join("train.jsonl"))?;
    train.extend(jsonl::read_absa(&data.join("dev.jsonl"))?);
    let test = jsonl::read_absa(&data.join("test.jsonl"))?;

    // Encoding speed alone, on the test sentences.
    let t = Clock::start();
    let words: usize = test.iter().map(|e| e.text.split_whitespace().count()).sum();
    for e in &test {
        std::hint::black_box(encoder.embed(&e.text));
    }
    let encode_s = t.cpu_seconds();

    let options = Options {
        embedder: Some(encoder.clone()),
        tune_encoder: !frozen,
        seed,
        ..Options::default()
    };
    let t = Clock::start();
    let mut shown = 0.0;
    let model = Model::train(ProjectType::Absa, &train, &options, &mut |f| {
        if f >= shown + 0.1 {
            shown = f;
            eprintln!("training: {:.0} % after {:.0} s", f * 100.0, t.wall_seconds());
        }
        ControlFlow::Continue(())
    })?;
    let (train_s, train_wall_s) = (t.cpu_seconds(), t.wall_seconds());
    let t = Clock::start();
    let m = model.evaluate(&test);
    let predict_s = t.cpu_seconds();
    let again = Model::from_bytes_with(&model.to_bytes(), Some(encoder.clone()))?;
    let same = test
        .iter()
        .take(50)
        .all(|e| again.predict(&e.text) == model.predict(&e.text));
    let result = json!({
        "train": train.len(),
        "test": test.len(),
        "encoder": encoder.id(),
        "tuned": !frozen,
        "seed": seed,
        "aspect_f1": m.aspect_f1,
        "sentiment_accuracy": m.sentiment_accuracy,
        "pair_micro_f1": m.micro_f1,
        "pair_macro_f1": m.macro_f1,
        "train_s": train_s,
        "train_wall_s": train_wall_s,
        "predict_s": predict_s,
        "encode_sentences_per_s": test.len() as f64 / encode_s,
        "encode_words_per_s": words as f64 / encode_s,
        "c": model.info().hyper.c,
        "at_least_one": model.info().calibration.at_least_one,
        "artifact_round_trip_identical": same,
    });
    eprintln!("absa+minilm: {result}");
    std::fs::create_dir_all(&out)?;
    let name = if frozen {
        "lector-minilm.json"
    } else {
        "lector-minilm-tuned.json"
    };
    std::fs::write(out.join(name), serde_json::to_string_pretty(&result)?)?;
    if !same {
        return Err("the loaded artifact predicts differently".into());
    }
    Ok(())
}
