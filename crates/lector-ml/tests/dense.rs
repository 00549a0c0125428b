//! A sentence encoder beside the n-grams: what the encoder knows reaches words training never
//! saw, and a model trained with one refuses to load without it.

use std::ops::ControlFlow;
use std::sync::Arc;

use lector_core::ProjectType;
use lector_ml::{Embedder, Error, Example, FeatureConfig, Model, Options, Tag, TuneGoal, TuneSet, TuneTarget, Tuned};
use support::{class_set, go};

mod support;

/// Knows which words are food and which are drinks, as a real encoder knows paraphrases.
#[derive(Debug)]
struct Concepts(&'static str);

impl Embedder for Concepts {
    fn id(&self) -> String {
        self.0.into()
    }

    fn dim(&self) -> usize {
        4
    }

    fn embed(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0.0f32; 4];
        for w in text.split_whitespace() {
            match w {
                "pizza" | "pasta" | "salad" | "soup" | "steak" | "sushi" | "burger" | "curry" => v[0] += 1.0,
                "beer" | "wine" | "coffee" | "tea" | "juice" | "cola" | "lemonade" | "whisky" => v[1] += 1.0,
                _ => {}
            }
        }
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if n > 0.0 {
            v.iter_mut().for_each(|x| *x /= n);
        }
        v
    }
}

fn options(embedder: Option<Arc<dyn Embedder>>) -> Options<'static> {
    Options {
        features: FeatureConfig {
            buckets_log2: 12,
            char_max: 0,
            ..FeatureConfig::default()
        },
        embedder,
        ..Options::default()
    }
}

fn classes(model: &Model, text: &str) -> Vec<Tag> {
    model.predict(text).plain_tags()
}

/// The foods and drinks of [`class_set`] as LABEL examples (small talk, with no class, left out).
fn label_set() -> Vec<Example> {
    class_set(false)
        .into_iter()
        .filter_map(|e| {
            let class = e.tags.first()?.class.clone()?;
            Some(Example::new(e.text, vec![Tag::label(class)]))
        })
        .collect()
}

/// Writes `model`'s artifact and reads it back with `encoder`: the same model, the same bytes
/// and the same predictions (on known, unseen and empty texts); answers the bytes.
fn round_trip(model: &Model, encoder: Arc<dyn Embedder>) -> Vec<u8> {
    let bytes = model.to_bytes();
    let loaded = Model::from_bytes_with(&bytes, Some(encoder)).unwrap();
    assert_eq!(&loaded, model);
    assert_eq!(loaded.to_bytes(), bytes);
    for text in [
        "the curry was served",
        "the whisky was served",
        "",
        "we talked",
        "nothing here",
    ] {
        assert_eq!(loaded.predict(text), model.predict(text));
    }
    bytes
}

#[test]
fn the_encoder_carries_classes_to_unseen_words() {
    let encoder: Arc<dyn Embedder> = Arc::new(Concepts("concepts-v1"));
    let model = Model::train(ProjectType::Class, &class_set(false), &options(Some(encoder)), &mut go).unwrap();
    assert_eq!(model.info().dense.as_ref().map(|d| d.dim), Some(4));
    assert_eq!(classes(&model, "the burger was served"), [Tag::class("food")]);
    assert_eq!(classes(&model, "the lemonade was served"), [Tag::class("drinks")]);
    assert_eq!(classes(&model, "we sat down and talked"), []);
    // The n-grams alone cannot tell: neither word was seen.
    let plain = Model::train(ProjectType::Class, &class_set(false), &options(None), &mut go).unwrap();
    assert!(plain.info().dense.is_none());
    let unseen = [
        classes(&plain, "the burger was served"),
        classes(&plain, "the lemonade was served"),
    ];
    assert_ne!(unseen, [vec![Tag::class("food")], vec![Tag::class("drinks")]]);
}

#[test]
fn a_model_with_an_encoder_round_trips_only_with_that_encoder() {
    let encoder: Arc<dyn Embedder> = Arc::new(Concepts("concepts-v1"));
    let set = class_set(false);
    let a = Model::train(ProjectType::Class, &set, &options(Some(encoder.clone())), &mut go).unwrap();
    let b = Model::train(ProjectType::Class, &set, &options(Some(encoder.clone())), &mut go).unwrap();
    let bytes = round_trip(&a, encoder);
    assert_eq!(bytes, b.to_bytes());
    assert!(matches!(Model::from_bytes(&bytes), Err(Error::MissingEncoder(id)) if id == "concepts-v1"));
    let other: Arc<dyn Embedder> = Arc::new(Concepts("concepts-v2"));
    assert!(matches!(
        Model::from_bytes_with(&bytes, Some(other)),
        Err(Error::MissingEncoder(_))
    ));
}

#[test]
fn a_bad_dense_weight_is_refused() {
    let encoder: Arc<dyn Embedder> = Arc::new(Concepts("concepts-v1"));
    let opts = Options {
        dense_weight: 0.0,
        ..options(Some(encoder))
    };
    assert!(matches!(
        Model::train(ProjectType::Class, &class_set(false), &opts, &mut go),
        Err(Error::InvalidInput(_))
    ));
}

#[test]
fn a_warm_start_keeps_the_base_models_encoder() {
    let encoder: Arc<dyn Embedder> = Arc::new(Concepts("concepts-v1"));
    let base = Model::train(ProjectType::Class, &class_set(false), &options(Some(encoder)), &mut go).unwrap();
    let few = vec![
        Example::new("the pizza was served", vec![Tag::class("food")]),
        Example::new("the beer was served", vec![Tag::class("drinks")]),
    ];
    let opts = Options {
        base: Some(&base),
        ..options(None)
    };
    let warm = Model::train(ProjectType::Class, &few, &opts, &mut go).unwrap();
    assert!(warm.info().warm_started);
    assert_eq!(warm.info().dense, base.info().dense);
    assert_eq!(classes(&warm, "the curry was served"), [Tag::class("food")]);
}

/// [`Concepts`] that can be tuned: each class gets the direction from its negatives' mean
/// concept vector to its positives', the simplest encoder adaptation there is.
#[derive(Debug)]
struct TunableConcepts {
    concepts: Concepts,
    tuned_calls: std::sync::atomic::AtomicUsize,
    /// Whether it can also be tuned on pairs.
    pairs: bool,
}

/// What tuning taught a copy of [`TunableConcepts`], and how the copy reads a text with it.
#[derive(Debug)]
enum Taught {
    /// Tuned to classes: per class, four weights and a bias (the copy's logits).
    Centroids(Vec<[f32; 5]>),
    /// Tuned on pairs: each label's mean vector; a text's vector is its own plus that of the
    /// nearest label mean, and there are no logits.
    Pulled(Vec<[f32; 4]>),
}

/// A tuned copy of [`TunableConcepts`]: its concepts and what tuning taught it.
#[derive(Debug)]
struct TunedConcepts {
    concepts: Concepts,
    taught: Taught,
}

impl Tuned for TunedConcepts {
    fn embed_and_score(&self, text: &str) -> (Vec<f32>, Vec<f32>) {
        let v = self.concepts.embed(text);
        let dot = |w: &[f32]| w.iter().zip(&v).map(|(w, x)| w * x).sum::<f32>();
        match &self.taught {
            Taught::Centroids(rows) => {
                let logits = rows.iter().map(|r| 10.0 * (dot(&r[..4]) + r[4])).collect();
                (v, logits)
            }
            Taught::Pulled(means) => {
                let best = means.iter().max_by(|a, b| dot(&a[..]).total_cmp(&dot(&b[..])));
                let mut out: Vec<f32> = v.iter().zip(best.unwrap_or(&[0.0; 4])).map(|(x, m)| x + m).collect();
                let n = out.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
                out.iter_mut().for_each(|x| *x /= n);
                (out, Vec::new())
            }
        }
    }

    fn to_bytes(&self) -> Vec<u8> {
        match &self.taught {
            Taught::Centroids(rows) => rows.iter().flatten().flat_map(|v| v.to_le_bytes()).collect(),
            Taught::Pulled(means) => {
                let mut out = vec![b'P'];
                out.extend(means.iter().flatten().flat_map(|v| v.to_le_bytes()));
                out
            }
        }
    }
}

impl TunableConcepts {
    fn tune_classes(
        &self,
        texts: &[&str],
        targets: &[Vec<usize>],
        outputs: usize,
        progress: &mut lector_ml::ProgressFn<'_>,
    ) -> lector_ml::Result<Arc<dyn Tuned>> {
        let mut rows = Vec::new();
        for k in 0..outputs {
            if progress(k as f64 / outputs as f64).is_break() {
                return Err(Error::Cancelled);
            }
            let mean = |positive: bool| {
                let mut m = [0.0f32; 4];
                let chosen: Vec<Vec<f32>> = texts
                    .iter()
                    .zip(targets)
                    .filter(|(_, t)| t.contains(&k) == positive)
                    .map(|(text, _)| self.embed(text))
                    .collect();
                for v in &chosen {
                    m.iter_mut().zip(v).for_each(|(m, x)| *m += x / chosen.len() as f32);
                }
                m
            };
            let (p, n) = (mean(true), mean(false));
            let w: Vec<f32> = p.iter().zip(&n).map(|(p, n)| p - n).collect();
            let b = -w
                .iter()
                .zip(p.iter().zip(&n))
                .map(|(w, (p, n))| w * (p + n) / 2.0)
                .sum::<f32>();
            rows.push([w[0], w[1], w[2], w[3], b]);
        }
        Ok(self.copy(Taught::Centroids(rows)))
    }

    fn tune_pairs(
        &self,
        texts: &[&str],
        labels: &[usize],
        progress: &mut lector_ml::ProgressFn<'_>,
    ) -> lector_ml::Result<Arc<dyn Tuned>> {
        if progress(0.5).is_break() {
            return Err(Error::Cancelled);
        }
        let k = labels.iter().max().map_or(0, |m| m + 1);
        let mut means = vec![[0.0f32; 4]; k];
        for (text, &l) in texts.iter().zip(labels) {
            means[l].iter_mut().zip(self.embed(text)).for_each(|(m, x)| *m += x);
        }
        Ok(self.copy(Taught::Pulled(means)))
    }
}

impl Embedder for TunableConcepts {
    fn id(&self) -> String {
        self.concepts.id()
    }

    fn dim(&self) -> usize {
        self.concepts.dim()
    }

    fn embed(&self, text: &str) -> Vec<f32> {
        self.concepts.embed(text)
    }

    fn can_tune(&self, goal: TuneGoal) -> bool {
        goal == TuneGoal::Classes || self.pairs
    }

    /// Tuned to classes, the copy scores each class by its nearest centroid (the mean vector
    /// of its texts against that of the rest); tuned on pairs, it moves every text's vector
    /// towards its label's mean vector, and its stored form is the means.
    fn tune(&self, set: &TuneSet<'_>, progress: &mut lector_ml::ProgressFn<'_>) -> lector_ml::Result<Arc<dyn Tuned>> {
        self.tuned_calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let texts = set.texts;
        match set.target {
            TuneTarget::Classes { targets, outputs } => self.tune_classes(texts, targets, outputs, progress),
            TuneTarget::Pairs { labels } => self.tune_pairs(texts, labels, progress),
        }
    }

    fn load_tuned(&self, bytes: &[u8]) -> lector_ml::Result<Arc<dyn Tuned>> {
        if bytes.first() == Some(&b'P') {
            let values = floats(&bytes[1..]);
            let means = values.chunks_exact(4).map(|r| [r[0], r[1], r[2], r[3]]).collect();
            return Ok(self.copy(Taught::Pulled(means)));
        }
        if bytes.is_empty() || !bytes.len().is_multiple_of(20) {
            return Err(Error::Artifact("bad centroids".into()));
        }
        let values = floats(bytes);
        let rows = values.chunks_exact(5).map(|r| [r[0], r[1], r[2], r[3], r[4]]).collect();
        Ok(self.copy(Taught::Centroids(rows)))
    }
}

/// The little-endian `f32`s the tuned copies' `to_bytes` wrote.
fn floats(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

impl TunableConcepts {
    /// A copy of these concepts with what tuning taught it.
    fn copy(&self, taught: Taught) -> Arc<dyn Tuned> {
        Arc::new(TunedConcepts {
            concepts: Concepts(self.concepts.0),
            taught,
        })
    }
}

/// [`TunableConcepts`] of `concepts-v1`, tuned on pairs too if `pairs`.
fn tunable(pairs: bool) -> Arc<TunableConcepts> {
    Arc::new(TunableConcepts {
        concepts: Concepts("concepts-v1"),
        tuned_calls: Default::default(),
        pairs,
    })
}

#[test]
fn with_few_examples_per_label_the_encoder_is_tuned_on_pairs_and_its_vector_travels() {
    let encoder = tunable(true);
    let labels = label_set();
    let model = Model::train(ProjectType::Label, &labels, &options(Some(encoder.clone())), &mut go).unwrap();
    let dense = model.info().dense.clone().unwrap();
    assert!(dense.contrastive && !dense.tuned);
    assert_eq!(encoder.tuned_calls.load(std::sync::atomic::Ordering::SeqCst), 1);
    let label = |m: &Model, text: &str| m.predict(text).tags[0].label.clone();
    assert_eq!(label(&model, "the burger was served").as_deref(), Some("food"));
    assert_eq!(label(&model, "the lemonade was served").as_deref(), Some("drinks"));
    round_trip(&model, encoder.clone());
    // Beyond the few-shot rule, or with tuning off, the encoder's own vector is used.
    let many: Vec<Example> = labels
        .iter()
        .cycle()
        .take(2 * (lector_ml::FEW_SHOT_MAX_PER_LABEL + 1))
        .cloned()
        .collect();
    let big = Model::train(ProjectType::Label, &many, &options(Some(encoder.clone())), &mut go).unwrap();
    assert!(!big.info().dense.as_ref().unwrap().contrastive);
    let off = Options {
        tune_encoder: false,
        ..options(Some(encoder.clone()))
    };
    let frozen = Model::train(ProjectType::Label, &labels, &off, &mut go).unwrap();
    assert!(!frozen.info().dense.as_ref().unwrap().contrastive);
    assert_eq!(encoder.tuned_calls.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[test]
fn a_tunable_encoder_is_tuned_to_the_classes_and_travels_in_the_artifact() {
    let encoder = tunable(false);
    let model = Model::train(
        ProjectType::Class,
        &class_set(false),
        &options(Some(encoder.clone())),
        &mut go,
    )
    .unwrap();
    assert_eq!(model.info().dense.as_ref().map(|d| d.tuned), Some(true));
    assert_eq!(classes(&model, "the burger was served"), [Tag::class("food")]);
    assert_eq!(classes(&model, "the lemonade was served"), [Tag::class("drinks")]);
    assert_eq!(classes(&model, "we sat down and talked"), []);
    let p = model.predict("the burger was served");
    assert!(p.classes.iter().all(|c| (0.0..=1.0).contains(&c.probability)));

    let bytes = round_trip(&model, encoder.clone());
    assert!(matches!(Model::from_bytes(&bytes), Err(Error::MissingEncoder(_))));
    // An encoder with the same id that cannot read tuned weights refuses them.
    let plain: Arc<dyn Embedder> = Arc::new(Concepts("concepts-v1"));
    assert!(matches!(
        Model::from_bytes_with(&bytes, Some(plain)),
        Err(Error::Artifact(_))
    ));
}

#[test]
fn tuning_is_skipped_for_single_label_models_and_when_turned_off() {
    let encoder = tunable(false);
    let labels = label_set();
    let label = Model::train(ProjectType::Label, &labels, &options(Some(encoder.clone())), &mut go).unwrap();
    assert_eq!(label.info().dense.as_ref().map(|d| d.tuned), Some(false));
    let off = Options {
        tune_encoder: false,
        ..options(Some(encoder.clone()))
    };
    let frozen = Model::train(ProjectType::Class, &class_set(false), &off, &mut go).unwrap();
    assert_eq!(frozen.info().dense.as_ref().map(|d| d.tuned), Some(false));
    assert_eq!(encoder.tuned_calls.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[test]
fn tuning_reports_progress_and_can_be_cancelled() {
    let encoder = tunable(false);
    let mut seen = Vec::new();
    Model::train(
        ProjectType::Class,
        &class_set(false),
        &options(Some(encoder.clone())),
        &mut |f| {
            seen.push(f);
            ControlFlow::Continue(())
        },
    )
    .unwrap();
    assert!(seen.windows(2).all(|w| w[0] <= w[1]));
    assert_eq!(seen.last(), Some(&1.0));
    // Tuning is planned as most of the work: stopping late stops it.
    let stopped = Model::train(
        ProjectType::Class,
        &class_set(false),
        &options(Some(encoder.clone())),
        &mut |f| {
            if f > 0.5 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        },
    );
    assert!(matches!(stopped, Err(Error::Cancelled)));
    assert_eq!(encoder.tuned_calls.load(std::sync::atomic::Ordering::SeqCst), 2);
}
