//! The few-shot benchmark of `docs/BENCHMARKS.md` (issue 15): lector-ml with its n-grams alone,
//! with the MiniLM encoder's frozen vector beside them, and with the encoder tuned (the
//! default), each trained on K examples per label drawn from the training side with several
//! seeds, all scored on the same test rows. Run through `scripts/ml-bench --shots`, which also
//! runs the baselines on the very files this program writes.
//!
//! ```text
//! fewshot --data FILE --model DIR --out DIR [--shots 8,16,32,64] [--seeds 5] [--test-max 2000]
//!         [--systems ngrams,frozen,tuned] [--dev]
//! # experiments: --pair-epochs N, --pair-steps N, --pair-layers N, --pair-temperature T, --pair-lr X, --pair-batch N, --dense-weight X
//! # semi-supervised: systems BASE+MOD+…, MOD among self, fself, prop, centre, white; --pool N,
//! #   --self-rounds N, --self-per-round N, --prop-k N, --prop-alpha X, --prop-per-label N,
//! #   --whiten-dims N, --whiten-eps X, --vector-cache FILE
//! ```
//!
//! Semi-supervised systems (`common/semi.rs`) also read a pool of unlabelled texts: up to
//! `--pool` training rows drawn in none of the subsets (nor scored, with `--dev`), labels hidden.
//! `frozen+self`: train on the subset, predict the pool, add the `--self-per-round` × r most
//! confident pool rows of each label (round r), train again (`--self-rounds`); `fself` the same
//! with the rounds' models frozen whatever the base; `prop`: the first pseudo-labels from label
//! propagation on the encoder's vectors; `centre`/`white`: the vectors centred on the pool's
//! mean / PCA-whitened on its top `--whiten-dims` components (frozen only).
//!
//! The split is the benchmark's (`bench tsv`): stratified 80/20 with seed 0. The test side is
//! cut to a stratified `--test-max` rows (seed 0) to keep the run short; `DIR/fewshot/test.tsv`
//! holds the rows scored. For seed S the training side is shuffled (lector-ml's `Rng`, seed S)
//! and the first K rows of each label make `DIR/fewshot/kK-sS.tsv` (so a seed's subsets are
//! nested: its 8 per label are among its 16). `--dev` scores on training rows drawn in none of
//! the subsets instead of the test side (`DIR/fewshot-dev`): for choosing settings without
//! looking at the test side. Writes `lector.json` there. Every model is also written as its
//! artifact and read back, which must predict the same on the first 20 rows. Times are CPU
//! time of the process (tuning runs on two threads) and wall time.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Parser;
use lector_core::ProjectType;
use lector_ml::{Embedder, Example, Model, Options, Rng, split_examples, tsv};
use serde_json::{Value, json};

mod common;
use common::{Clock, Fallible, Paths};
#[path = "common/semi.rs"]
mod semi;

/// The few-shot benchmark: lector-ml with n-grams, the MiniLM's frozen vector, and it tuned.
///
/// --data holds lines `label<TAB>text`; results go to OUT/fewshot (OUT/fewshot-dev with --dev).
#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    paths: Paths,
    /// Training examples per label, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "8,16,32,64")]
    shots: Vec<usize>,
    /// Seeds 0..N for each size.
    #[arg(long, default_value_t = 5)]
    seeds: u64,
    /// At most this many rows scored (a stratified cut).
    #[arg(long, default_value_t = 2000)]
    test_max: usize,
    /// The systems trained, comma-separated: ngrams, frozen, tuned.
    #[arg(long, value_delimiter = ',', default_value = "ngrams,frozen,tuned")]
    systems: Vec<String>,
    /// Score on training rows drawn in none of the subsets instead of the test side.
    #[arg(long)]
    dev: bool,
    /// The weight of the encoder's vector beside the n-grams.
    #[arg(long, default_value_t = 1.0)]
    dense_weight: f32,
    /// Pair tuning's epochs (an experiment; PairTuneOptions' own by default, as for every --pair-*).
    #[arg(long)]
    pair_epochs: Option<usize>,
    /// Pair tuning's least number of steps.
    #[arg(long)]
    pair_steps: Option<usize>,
    /// Pair tuning's number of top layers tuned.
    #[arg(long)]
    pair_layers: Option<usize>,
    /// Pair tuning's temperature.
    #[arg(long)]
    pair_temperature: Option<f32>,
    /// Pair tuning's learning rate.
    #[arg(long)]
    pair_lr: Option<f32>,
    /// Pair tuning's batch size.
    #[arg(long)]
    pair_batch: Option<usize>,
    /// At most this many unlabelled pool texts for the semi-supervised systems.
    #[arg(long, default_value_t = 2000)]
    pool: usize,
    /// Self-training's rounds.
    #[arg(long, default_value_t = 3)]
    self_rounds: usize,
    /// Pseudo-labelled rows added per label and round.
    #[arg(long, default_value_t = 8)]
    self_per_round: usize,
    /// Label propagation: neighbours per text.
    #[arg(long, default_value_t = 10)]
    prop_k: usize,
    /// Label propagation: α.
    #[arg(long, default_value_t = 0.9)]
    prop_alpha: f32,
    /// Label propagation: pseudo-labelled rows kept per label.
    #[arg(long, default_value_t = 16)]
    prop_per_label: usize,
    /// Whitening: principal components kept.
    #[arg(long, default_value_t = 128)]
    whiten_dims: usize,
    /// Whitening: added to every variance, as a fraction of the mean variance.
    #[arg(long, default_value_t = 0.1)]
    whiten_eps: f64,
    /// Vectors kept on disk between runs.
    #[arg(long)]
    vector_cache: Option<PathBuf>,
}

fn label(e: &Example) -> &str {
    e.tags.first().and_then(|t| t.label.as_deref()).unwrap_or("")
}

/// A stratified `max` of `rows` (all of them if there are no more), in their order.
fn stratified_at_most<'a>(rows: &[&'a Example], max: usize) -> Vec<&'a Example> {
    if rows.len() <= max {
        return rows.to_vec();
    }
    let owned: Vec<Example> = rows.iter().map(|e| (*e).clone()).collect();
    let split = split_examples(ProjectType::Label, &owned, max as f64 / rows.len() as f64, 0);
    let mut keep = split.test;
    keep.sort_unstable();
    keep.into_iter().map(|i| rows[i]).collect()
}

/// The first `k` rows of each label in seed `seed`'s shuffle of `train` (indices, sorted).
fn draw(train: &[&Example], k: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..train.len()).collect();
    Rng::new(seed).shuffle(&mut order);
    let mut taken: BTreeMap<&str, usize> = BTreeMap::new();
    let mut out: Vec<usize> = order
        .into_iter()
        .filter(|&i| {
            let n = taken.entry(label(train[i])).or_default();
            *n += 1;
            *n <= k
        })
        .collect();
    out.sort_unstable();
    out
}

fn main() -> Fallible<()> {
    let cli = Cli::parse();
    let mut pairs = lector_embed::PairTuneOptions::default();
    pairs.epochs = cli.pair_epochs.unwrap_or(pairs.epochs);
    pairs.learning_rate = cli.pair_lr.unwrap_or(pairs.learning_rate);
    pairs.batch = cli.pair_batch.unwrap_or(pairs.batch);
    pairs.layers = cli.pair_layers.unwrap_or(pairs.layers);
    pairs.temperature = cli.pair_temperature.unwrap_or(pairs.temperature);
    pairs.min_steps = cli.pair_steps.unwrap_or(pairs.min_steps);
    // The same texts are embedded for every seed and size: each is run through the encoder once
    // (in batches, equal within float rounding; kept on disk with --vector-cache).
    let minilm = lector_embed::MiniLm::load(&cli.paths.model)?.with_pair_tune_options(pairs);
    let cached = Arc::new(semi::Cached::new(minilm, cli.vector_cache.as_deref()));
    let encoder: Arc<dyn Embedder> = cached.clone();

    let set = tsv::read_tsv(&cli.paths.data)?;
    let all = set.examples;
    let split = split_examples(ProjectType::Label, &all, 0.2, 0);
    let train: Vec<&Example> = split.train.iter().map(|&i| &all[i]).collect();
    let subsets: BTreeMap<(usize, u64), Vec<usize>> = cli
        .shots
        .iter()
        .flat_map(|&k| (0..cli.seeds).map(move |s| (k, s)))
        .map(|(k, s)| ((k, s), draw(&train, k, s)))
        .collect();
    let (dir, scored): (PathBuf, Vec<&Example>) = if cli.dev {
        let used: BTreeSet<usize> = subsets.values().flatten().copied().collect();
        let rest: Vec<&Example> = (0..train.len())
            .filter(|i| !used.contains(i))
            .map(|i| train[i])
            .collect();
        (
            cli.paths.out.join("fewshot-dev"),
            stratified_at_most(&rest, cli.test_max),
        )
    } else {
        let test: Vec<&Example> = split.test.iter().map(|&i| &all[i]).collect();
        (cli.paths.out.join("fewshot"), stratified_at_most(&test, cli.test_max))
    };
    // The unlabelled pool: training rows in no subset and not scored, in a fixed shuffle.
    let pool: Vec<&Example> = {
        let used: BTreeSet<usize> = subsets.values().flatten().copied().collect();
        let scored_texts: BTreeSet<&str> = scored.iter().map(|e| e.text.as_str()).collect();
        let mut rest: Vec<&Example> = (0..train.len())
            .filter(|i| !used.contains(i) && !scored_texts.contains(train[*i].text.as_str()))
            .map(|i| train[i])
            .collect();
        Rng::new(0x5e_1f).shuffle(&mut rest);
        rest.truncate(cli.pool);
        rest
    };
    let semi_used = cli.systems.iter().any(|s| s.contains('+'));
    let pool_texts: Vec<&str> = pool.iter().map(|e| e.text.as_str()).collect();
    if cli.systems.iter().any(|s| s != "ngrams") {
        let clock = Clock::start();
        let mut texts: Vec<&str> = scored.iter().map(|e| e.text.as_str()).collect();
        texts.extend(subsets.values().flatten().map(|&i| train[i].text.as_str()));
        if semi_used {
            texts.extend(&pool_texts);
        }
        cached.prefetch(&texts);
        eprintln!("vectors ready in {:.1} s CPU", clock.cpu_seconds());
        if let Some(p) = &cli.vector_cache {
            cached.save(p)?;
        }
    }
    let pool_vectors: Vec<Vec<f32>> = if semi_used {
        pool_texts.iter().map(|t| encoder.embed(t)).collect()
    } else {
        Vec::new()
    };
    let mut transformed: BTreeMap<&str, Arc<dyn Embedder>> = BTreeMap::new();
    if cli.systems.iter().any(|s| s.contains("+centre")) {
        transformed.insert(
            "centre",
            Arc::new(semi::Whitened::fit(encoder.clone(), &pool_vectors, 0, 0.0)),
        );
    }
    if cli.systems.iter().any(|s| s.contains("+white")) {
        let w = semi::Whitened::fit(encoder.clone(), &pool_vectors, cli.whiten_dims, cli.whiten_eps);
        transformed.insert("white", Arc::new(w));
    }
    std::fs::create_dir_all(&dir)?;
    tsv::write_tsv(&dir.join("test.tsv"), &scored)?;
    if semi_used {
        // The pool with its hidden labels, for diagnostics (the systems never read them).
        tsv::write_tsv(&dir.join("pool.tsv"), &pool)?;
    }
    let scored_owned: Vec<Example> = scored.iter().map(|e| (*e).clone()).collect();
    eprintln!(
        "{}: {} train, scoring on {} rows ({})",
        cli.paths.data.display(),
        train.len(),
        scored.len(),
        if cli.dev { "unused training rows" } else { "test side" }
    );

    let mut results: BTreeMap<String, BTreeMap<String, Value>> = BTreeMap::new();
    for (&(k, s), rows) in &subsets {
        let subset: Vec<&Example> = rows.iter().map(|&i| train[i]).collect();
        tsv::write_tsv(&dir.join(format!("k{k}-s{s}.tsv")), &subset)?;
        let owned: Vec<Example> = subset.iter().map(|e| (*e).clone()).collect();
        for system in &cli.systems {
            let mods: Vec<&str> = system.split('+').collect();
            let has = |m: &str| mods[1..].contains(&m);
            if let Some(m) = mods[1..]
                .iter()
                .find(|m| !["self", "fself", "prop", "centre", "white"].contains(m))
            {
                return Err(format!("unknown modifier {m}").into());
            }
            let vectors = match (has("centre"), has("white")) {
                (true, _) => transformed["centre"].clone(),
                (_, true) => transformed["white"].clone(),
                _ => encoder.clone(),
            };
            if mods[0] == "tuned" && !Arc::ptr_eq(&vectors, &encoder) {
                return Err("centre and white go with frozen only".into());
            }
            let options = match mods[0] {
                "ngrams" => Options::default(),
                "frozen" | "tuned" => Options {
                    embedder: Some(vectors.clone()),
                    tune_encoder: mods[0] == "tuned",
                    dense_weight: cli.dense_weight,
                    ..Options::default()
                },
                other => return Err(format!("unknown system {other}").into()),
            };
            let clock = Clock::start();
            let train_on = |rows: &[Example], options: &Options<'_>| {
                Model::train(ProjectType::Label, rows, options, &mut |_| ControlFlow::Continue(()))
            };
            let names: Vec<String> = owned
                .iter()
                .map(|e| label(e).to_string())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            let mut pseudo: Vec<(usize, Example)> = Vec::new();
            if has("prop") {
                let few: Vec<Vec<f32>> = owned.iter().map(|e| vectors.embed(&e.text)).collect();
                let ys: Vec<usize> = owned
                    .iter()
                    .map(|e| names.iter().position(|n| n == label(e)).unwrap_or(0))
                    .collect();
                let pv: Vec<Vec<f32>> = pool_texts.iter().map(|t| vectors.embed(t)).collect();
                let scores = semi::propagate(&few, &ys, names.len(), &pv, cli.prop_k, cli.prop_alpha, 20);
                pseudo = semi::most_confident(&pool_texts, &scores, &names, cli.prop_per_label);
            }
            let rounds = if has("self") || has("fself") {
                cli.self_rounds
            } else {
                0
            };
            let round_options = if has("fself") {
                Options {
                    tune_encoder: false,
                    ..options.clone()
                }
            } else {
                options.clone()
            };
            let with_pseudo = |pseudo: &[(usize, Example)]| -> Vec<Example> {
                owned
                    .iter()
                    .cloned()
                    .chain(pseudo.iter().map(|(_, e)| e.clone()))
                    .collect()
            };
            for r in 1..=rounds {
                let m = train_on(&with_pseudo(&pseudo), &round_options)?;
                let scores = semi::label_scores(&m, &pool_texts, &names);
                pseudo = semi::most_confident(&pool_texts, &scores, &names, cli.self_per_round * r);
            }
            let pseudo_right = pseudo.iter().filter(|(i, e)| label(pool[*i]) == label(e)).count();
            let model = train_on(&with_pseudo(&pseudo), &options)?;
            let (train_s, train_wall_s) = (clock.cpu_seconds(), clock.wall_seconds());
            let m = model.evaluate(&scored_owned);
            // The artifact, read back with the encoder, predicts the same (first 20 rows).
            let bytes = model.to_bytes();
            let loaded = Model::from_bytes_with(&bytes, model.embedder().cloned())?;
            let same = scored
                .iter()
                .take(20)
                .all(|e| loaded.predict(&e.text) == model.predict(&e.text));
            if !same {
                return Err(format!("k={k} seed={s} {system}: the loaded artifact predicts differently").into());
            }
            let r = json!({
                "accuracy": m.accuracy,
                "macro_f1": m.macro_f1,
                "train_s": train_s,
                "train_wall_s": train_wall_s,
                "c": model.info().hyper.c,
                "contrastive": model.info().dense.as_ref().is_some_and(|d| d.contrastive),
                "artifact_bytes": bytes.len(),
                "pseudo": pseudo.len(),
                "pseudo_accuracy": pseudo_right as f64 / pseudo.len().max(1) as f64,
            });
            eprintln!("  k={k} seed={s} {system}: {r}");
            results
                .entry(format!("{k}"))
                .or_default()
                .insert(format!("{s}/{system}"), r);
        }
    }
    let result = json!({
        "data": cli.paths.data.display().to_string(),
        "train": train.len(),
        "scored": scored.len(),
        "dev": cli.dev,
        "seeds": cli.seeds,
        "shots": cli.shots,
        "encoder": encoder.id(),
        "pool": pool.len(),
        "results": results,
    });
    std::fs::write(dir.join("lector.json"), serde_json::to_string_pretty(&result)?)?;
    Ok(())
}
