//! A sentence encoder beside the n-grams: what the encoder knows reaches words training never
//! saw, and a model trained with one refuses to load without it.

use std::ops::ControlFlow;
use std::sync::Arc;

use lector_core::ProjectType;
use lector_ml::{Embedder, Error, Example, FeatureConfig, Model, Options, Tag};

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

fn go(_: f64) -> ControlFlow<()> {
    ControlFlow::Continue(())
}

fn class_set() -> Vec<Example> {
    let mut out = Vec::new();
    let foods = ["pizza", "pasta", "salad", "soup", "steak", "sushi"];
    let drinks = ["beer", "wine", "coffee", "tea", "juice", "cola"];
    for (f, d) in foods.iter().zip(drinks) {
        out.push(Example::new(format!("the {f} was served"), vec![Tag::class("food")]));
        out.push(Example::new(format!("the {d} was served"), vec![Tag::class("drinks")]));
        out.push(Example::new("we sat down and talked", vec![]));
    }
    out
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

#[test]
fn the_encoder_carries_classes_to_unseen_words() {
    let encoder: Arc<dyn Embedder> = Arc::new(Concepts("concepts-v1"));
    let model = Model::train(ProjectType::Class, &class_set(), &options(Some(encoder)), &mut go).unwrap();
    assert_eq!(model.info().dense.as_ref().map(|d| d.dim), Some(4));
    assert_eq!(classes(&model, "the burger was served"), [Tag::class("food")]);
    assert_eq!(classes(&model, "the lemonade was served"), [Tag::class("drinks")]);
    assert_eq!(classes(&model, "we sat down and talked"), []);
    // The n-grams alone cannot tell: neither word was seen.
    let plain = Model::train(ProjectType::Class, &class_set(), &options(None), &mut go).unwrap();
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
    let set = class_set();
    let a = Model::train(ProjectType::Class, &set, &options(Some(encoder.clone())), &mut go).unwrap();
    let b = Model::train(ProjectType::Class, &set, &options(Some(encoder.clone())), &mut go).unwrap();
    let bytes = a.to_bytes();
    assert_eq!(bytes, b.to_bytes());
    let loaded = Model::from_bytes_with(&bytes, Some(encoder)).unwrap();
    assert_eq!(loaded, a);
    assert_eq!(loaded.to_bytes(), bytes);
    for text in ["the curry was served", "the whisky was served", "", "nothing here"] {
        assert_eq!(loaded.predict(text), a.predict(text));
    }
    assert!(matches!(Model::from_bytes(&bytes), Err(Error::Artifact(m)) if m.contains("concepts-v1")));
    let other: Arc<dyn Embedder> = Arc::new(Concepts("concepts-v2"));
    assert!(matches!(
        Model::from_bytes_with(&bytes, Some(other)),
        Err(Error::Artifact(_))
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
        Model::train(ProjectType::Class, &class_set(), &opts, &mut go),
        Err(Error::InvalidInput(_))
    ));
}

#[test]
fn a_warm_start_keeps_the_base_models_encoder() {
    let encoder: Arc<dyn Embedder> = Arc::new(Concepts("concepts-v1"));
    let base = Model::train(ProjectType::Class, &class_set(), &options(Some(encoder)), &mut go).unwrap();
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
