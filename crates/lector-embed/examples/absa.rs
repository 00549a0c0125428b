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
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use lector_core::ProjectType;
use lector_ml::{Embedder, Model, Options, jsonl};
use serde_json::json;

type Fallible<T> = Result<T, Box<dyn std::error::Error>>;

/// CPU time of the process, all its threads (the machine is shared), wall time where Linux's
/// counter is absent.
fn cpu_seconds(since: &(Instant, Option<f64>)) -> f64 {
    match (since.1, cpu_s()) {
        (Some(a), Some(b)) => b - a,
        _ => since.0.elapsed().as_secs_f64(),
    }
}

/// User plus system time of every thread of this process, from `/proc/self/stat` (in clock
/// ticks of 1/100 s).
fn cpu_s() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    let fields: Vec<&str> = s.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

fn clock() -> (Instant, Option<f64>) {
    (Instant::now(), cpu_s())
}

fn arg(args: &[String], name: &str) -> Fallible<PathBuf> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(PathBuf::from)
        .ok_or_else(|| format!("missing {name}").into())
}

fn main() -> Fallible<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (data, model_dir, out) = (arg(&args, "--data")?, arg(&args, "--model")?, arg(&args, "--out")?);
    // `--epochs N` shortens tuning (for timing runs); the default is TuneOptions' own.
    let mut tune = lector_embed::TuneOptions::default();
    if let Some(n) = args.iter().position(|a| a == "--epochs").and_then(|i| args.get(i + 1)) {
        tune.epochs = n.parse()?;
    }
    let encoder: Arc<dyn Embedder> = Arc::new(lector_embed::MiniLm::load(&model_dir)?.with_tune_options(tune));
    let mut train = jsonl::read_absa(&data.join("train.jsonl"))?;
    train.extend(jsonl::read_absa(&data.join("dev.jsonl"))?);
    let test = jsonl::read_absa(&data.join("test.jsonl"))?;

    // Encoding speed alone, on the test sentences.
    let t = clock();
    let words: usize = test.iter().map(|e| e.text.split_whitespace().count()).sum();
    for e in &test {
        std::hint::black_box(encoder.embed(&e.text));
    }
    let encode_s = cpu_seconds(&t);

    let frozen = args.iter().any(|a| a == "--frozen");
    let seed = match args.iter().position(|a| a == "--seed").and_then(|i| args.get(i + 1)) {
        Some(n) => n.parse()?,
        None => 0,
    };
    let options = Options {
        embedder: Some(encoder.clone()),
        tune_encoder: !frozen,
        seed,
        ..Options::default()
    };
    let t = clock();
    let mut shown = 0.0;
    let model = Model::train(ProjectType::Absa, &train, &options, &mut |f| {
        if f >= shown + 0.1 {
            shown = f;
            eprintln!(
                "training: {:.0} % after {:.0} s",
                f * 100.0,
                t.0.elapsed().as_secs_f64()
            );
        }
        ControlFlow::Continue(())
    })?;
    let (train_s, train_wall_s) = (cpu_seconds(&t), t.0.elapsed().as_secs_f64());
    let t = clock();
    let m = model.evaluate(&test);
    let predict_s = cpu_seconds(&t);
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
