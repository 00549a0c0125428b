//! Bare `lector-ml` doing what the service's training job does, timed by the wall clock, so
//! `scripts/bench-api train` compares like with like: read a `label<TAB>text` file, split it
//! 80/20 with the service's seed, train a LABEL model with the default options, evaluate it on
//! the test side and write the artifact's bytes.
//!
//! ```sh
//! cargo run --release -p lector-ml --example train_like_the_service -- .cache/datasets/tsv/tweets.tsv
//! ```

use lector_core::ProjectType;
use lector_ml::{Example, Model, Options, Tag, split_examples};
use std::ops::ControlFlow;
use std::time::Instant;

/// The seed of the service's 80/20 split (`lector-store`'s `SPLIT_SEED`).
const SPLIT_SEED: u64 = 20_240_601;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: train_like_the_service FILE.tsv")?;
    let started = Instant::now();
    let text = std::fs::read_to_string(&path)?;
    let examples: Vec<Example> = text
        .lines()
        .filter_map(|line| line.split_once('\t'))
        .filter(|(_, text)| !text.is_empty())
        .map(|(label, text)| Example::new(text, vec![Tag::label(label)]))
        .collect();
    let split = split_examples(ProjectType::Label, &examples, 0.2, SPLIT_SEED);
    let train: Vec<Example> = split.train.iter().map(|&i| examples[i].clone()).collect();
    let test: Vec<Example> = split.test.iter().map(|&i| examples[i].clone()).collect();
    let read_s = started.elapsed().as_secs_f64();
    let learning = Instant::now();
    let model = Model::train(ProjectType::Label, &train, &Options::default(), &mut |_| {
        ControlFlow::Continue(())
    })?;
    let learn_s = learning.elapsed().as_secs_f64();
    let evaluating = Instant::now();
    let metrics = model.evaluate(&test);
    let bytes = model.to_bytes();
    let evaluate_s = evaluating.elapsed().as_secs_f64();
    println!(
        "bare lector-ml like the job: {} train, {} test, read and split {read_s:.2} s, learn {learn_s:.2} s, \
         evaluate and write {evaluate_s:.2} s, total {:.2} s wall, score {:.3}, {} bytes",
        train.len(),
        test.len(),
        started.elapsed().as_secs_f64(),
        metrics.score,
        bytes.len()
    );
    Ok(())
}
