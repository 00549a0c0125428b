//! The encoder end to end: on a tiny random BERT written by the test (always), and on the
//! real MiniLM against figures from the reference implementation (Hugging Face's
//! tokenizer and sentence-transformers) when `LECTOR_MINILM_DIR` names the directory that
//! `scripts/fetch-minilm` prints.

use std::path::PathBuf;

use lector_embed::testing::tiny;
use lector_embed::{MiniLm, write_f32};
use serde_json::json;

#[test]
fn tiny_encoder_gives_deterministic_unit_vectors_that_depend_on_the_text() {
    let m = tiny();
    let a = m.embed("the food was great .");
    assert_eq!(a.len(), 8);
    assert!((a.iter().map(|v| v * v).sum::<f32>() - 1.0).abs() < 1e-5);
    assert_eq!(a, m.embed("the food was great ."));
    let b = m.embed("the service was slow .");
    assert!(a.iter().zip(&b).any(|(x, y)| (x - y).abs() > 1e-3));
    // Longer than max_tokens: cut, still a unit vector.
    let long = "the food ".repeat(100);
    assert_eq!(m.tokens(&long).len(), 16);
    assert!((m.embed(&long).iter().map(|v| v * v).sum::<f32>() - 1.0).abs() < 1e-5);
}

#[test]
fn a_remembering_encoder_answers_the_vectors_it_would_make() {
    let plain = tiny();
    let remembering = tiny().remembering();
    for text in ["the food was great .", "the service was slow .", "the food was great ."] {
        assert_eq!(remembering.embed(text), plain.embed(text));
        assert_eq!(lector_ml::Embedder::embed(&remembering, text), plain.embed(text));
    }
}

#[test]
fn missing_tensors_and_bad_configs_are_errors() {
    let config = json!({"vocab_size": 4, "hidden_size": 8, "num_attention_heads": 2, "num_hidden_layers": 1,
        "intermediate_size": 16, "max_position_embeddings": 8, "hidden_act": "gelu"});
    let vocab = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n";
    let empty = write_f32(&[]);
    assert!(MiniLm::from_parts(&config, vocab, empty.clone(), 8, "x".into()).is_err());
    let bad_heads = json!({"vocab_size": 4, "hidden_size": 8, "num_attention_heads": 3, "num_hidden_layers": 1,
        "intermediate_size": 16, "max_position_embeddings": 8, "hidden_act": "gelu"});
    assert!(MiniLm::from_parts(&bad_heads, vocab, empty, 8, "x".into()).is_err());
    assert!(MiniLm::load(&PathBuf::from("/nonexistent")).is_err());
}

/// Run with `LECTOR_MINILM_DIR=$(scripts/fetch-minilm) cargo test -p lector-embed -- --ignored`.
#[test]
#[ignore = "needs the MiniLM: set LECTOR_MINILM_DIR to the directory scripts/fetch-minilm prints"]
fn minilm_matches_the_reference_implementation() {
    let dir = PathBuf::from(std::env::var("LECTOR_MINILM_DIR").expect("LECTOR_MINILM_DIR"));
    let m = MiniLm::load(&dir).unwrap();
    // Hugging Face BertTokenizer (uncased) ids.
    assert_eq!(
        m.tokens("The crème brûlée was great, but the waiter (Jürgen) forgot us!"),
        [
            101, 1996, 13675, 21382, 7987, 9307, 2063, 2001, 2307, 1010, 2021, 1996, 15610, 1006, 23171, 1007, 9471,
            2149, 999, 102
        ]
    );
    // sentence-transformers' normalised embeddings, first six values.
    for (text, want) in [
        (
            "The crème brûlée was great, but the waiter (Jürgen) forgot us!",
            [0.047426f32, -0.009234, -0.008392, -0.049585, -0.0098, 0.056921],
        ),
        (
            "the food was great .",
            [0.001552, 0.106203, 0.026236, 0.06019, -0.056517, 0.019882],
        ),
    ] {
        let got = m.embed(text);
        assert_eq!(got.len(), 384);
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 2e-6, "{text}: {g} vs {w}");
        }
    }
}

/// An ABSA model whose aspect classes are scored by the tiny encoder tuned to them: trained
/// the same twice, written and read back to the same predictions, and unreadable without it.
#[test]
fn a_model_with_the_tuned_encoder_round_trips() {
    use std::ops::ControlFlow;
    use std::sync::Arc;

    use lector_core::ProjectType;
    use lector_ml::{Embedder, Example, Model, Options, Tag};

    let options = lector_embed::TuneOptions {
        epochs: 30,
        learning_rate: 1e-2,
        batch: 2,
        ..Default::default()
    };
    let encoder: Arc<dyn Embedder> = Arc::new(tiny().with_tune_options(options));
    let examples = vec![
        Example::new("the food was great .", vec![Tag::pair("food", "positive")]),
        Example::new("slow service .", vec![Tag::pair("service", "negative")]),
        Example::new("great food", vec![Tag::pair("food", "positive")]),
        Example::new("the services was slow", vec![Tag::pair("service", "negative")]),
    ];
    let train = || {
        let opts = Options {
            embedder: Some(encoder.clone()),
            ..Options::default()
        };
        Model::train(ProjectType::Absa, &examples, &opts, &mut |_| ControlFlow::Continue(())).unwrap()
    };
    let model = train();
    assert_eq!(model.info().dense.as_ref().map(|d| d.tuned), Some(true));
    for e in &examples {
        let got: Vec<Option<String>> = model.predict(&e.text).tags.into_iter().map(|t| t.class).collect();
        assert_eq!(got, [e.tags[0].class.clone()], "{}", e.text);
    }
    let bytes = model.to_bytes();
    assert_eq!(bytes, train().to_bytes());
    let loaded = Model::from_bytes_with(&bytes, Some(encoder.clone())).unwrap();
    for text in ["the food was slow", "service", ""] {
        assert_eq!(loaded.predict(text), model.predict(text));
    }
    assert!(Model::from_bytes(&bytes).is_err());
}

/// The tuned copy gives the encoder's own vector beside its logits, for texts the tuned layers
/// read whole and for texts they read only the start of.
#[test]
fn the_tuned_copy_gives_the_encoders_own_vector() {
    use std::ops::ControlFlow;

    use lector_ml::{Embedder, TuneSet, TuneTarget};

    let options = lector_embed::TuneOptions {
        epochs: 2,
        max_tokens: 5,
        ..Default::default()
    };
    let m = tiny().with_tune_options(options);
    let texts = ["the food was great .", "slow service .", "great", "services"];
    let targets = [vec![0], vec![1], vec![0], vec![1]];
    let tuned = m
        .tune(
            &TuneSet {
                texts: &texts,
                target: TuneTarget::Classes {
                    targets: &targets,
                    outputs: 2,
                },
                seed: 7,
            },
            &mut |_| ControlFlow::Continue(()),
        )
        .unwrap();
    for text in ["great", "the food was great and the service was slow ."] {
        let (vector, logits) = tuned.embed_and_score(text);
        assert_eq!(vector, m.embed(text), "{text}");
        assert_eq!(logits.len(), 2);
        assert!(logits.iter().all(|z| z.is_finite()));
    }
    let again = m.load_tuned(&tuned.to_bytes()).unwrap();
    assert_eq!(again.embed_and_score("slow food"), tuned.embed_and_score("slow food"));
    assert!(m.load_tuned(&tuned.to_bytes()[1..]).is_err());
}
