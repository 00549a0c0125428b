//! Behaviour of the public API on tiny data sets: each project type learns a separable set,
//! probabilities are probabilities, training is reproducible, artifacts round-trip and damaged
//! artifacts are refused.

use std::ops::ControlFlow;

use lector_core::ProjectType;
use lector_ml::{Error, Example, FeatureConfig, Model, Options, Tag, split_examples};
use support::{class_set, go};

mod support;

fn options() -> Options<'static> {
    Options {
        features: FeatureConfig {
            buckets_log2: 14,
            ..FeatureConfig::default()
        },
        trained_at: Some("2026-11-21T00:00:00Z".into()),
        ..Options::default()
    }
}

fn label_set() -> Vec<Example> {
    let good = [
        "great food",
        "lovely staff",
        "excellent wine",
        "wonderful view",
        "great service",
        "lovely evening",
        "excellent dessert",
        "wonderful staff",
    ];
    let bad = [
        "awful food",
        "rude staff",
        "terrible wine",
        "dirty tables",
        "awful service",
        "rude waiter",
        "terrible dessert",
        "dirty glasses",
    ];
    let mut out = Vec::new();
    for (g, b) in good.iter().zip(bad) {
        out.push(Example::new(*g, vec![Tag::label("good")]));
        out.push(Example::new(b, vec![Tag::label("bad")]));
    }
    out
}

fn pair_set(good: &str, bad: &str) -> Vec<Example> {
    let mut out = Vec::new();
    let foods = ["pizza", "pasta", "salad", "soup", "steak", "sushi"];
    let staff = ["waiter", "waitress", "manager", "host", "chef", "barman"];
    for (f, s) in foods.iter().zip(staff) {
        out.push(Example::new(
            format!("the {f} was delicious"),
            vec![Tag::pair("food", good)],
        ));
        out.push(Example::new(format!("the {f} was bland"), vec![Tag::pair("food", bad)]));
        out.push(Example::new(
            format!("the {s} was friendly"),
            vec![Tag::pair("service", good)],
        ));
        out.push(Example::new(
            format!("the {s} was rude"),
            vec![Tag::pair("service", bad)],
        ));
        out.push(Example::new(
            format!("the {f} was delicious but the {s} was rude"),
            vec![Tag::pair("food", good), Tag::pair("service", bad)],
        ));
    }
    out
}

fn learns_perfectly(project_type: ProjectType, examples: &[Example]) -> Model {
    let model = Model::train(project_type, examples, &options(), &mut go).unwrap();
    for e in examples {
        let p = model.predict(&e.text);
        let mut got = p.plain_tags();
        let mut want = e.tags.clone();
        got.sort();
        want.sort();
        assert_eq!(got, want, "{project_type} on {:?}: {p:?}", e.text);
        assert!((0.0..=1.0).contains(&p.confidence));
        for s in p.labels.iter().chain(&p.classes) {
            assert!((0.0..=1.0).contains(&s.probability), "{s:?}");
        }
        if !p.labels.is_empty() {
            assert!((p.labels.iter().map(|s| s.probability).sum::<f32>() - 1.0).abs() < 1e-4);
        }
        for t in &p.tags {
            assert!((0.0..=1.0).contains(&t.confidence));
            if !t.labels.is_empty() {
                assert!((t.labels.iter().map(|s| s.probability).sum::<f32>() - 1.0).abs() < 1e-4);
            }
        }
    }
    let m = model.evaluate(examples);
    assert_eq!(m.score, 1.0, "{m:?}");
    model
}

#[test]
fn label_learns_a_separable_set() {
    let model = learns_perfectly(ProjectType::Label, &label_set());
    let p = model.predict("terrible rude service");
    assert_eq!(p.tags[0].label.as_deref(), Some("bad"));
    assert_eq!(p.labels.len(), 2);
}

/// Segments without a label (annotated as having none) are not scored by a LABEL model,
/// which learns only from labelled ones: no label named "" and no misses counted for them.
#[test]
fn a_label_model_is_scored_on_labelled_segments_only() {
    let model = learns_perfectly(ProjectType::Label, &label_set());
    let mut test = label_set();
    let labelled = test.len();
    test.push(Example::new("kind regards", Vec::new()));
    test.push(Example::new("see you soon", Vec::new()));
    let m = model.evaluate(&test);
    assert_eq!((m.segments, m.score), (labelled, 1.0), "{m:?}");
    assert!(m.labels.iter().all(|l| !l.name.is_empty()), "{m:?}");
}

#[test]
fn class_learns_a_separable_set() {
    let model = learns_perfectly(ProjectType::Class, &class_set(true));
    assert_eq!(model.classes(), ["drinks", "food"]);
}

#[test]
fn classlabel_and_absa_learn_separable_sets() {
    learns_perfectly(ProjectType::Classlabel, &pair_set("yes", "no"));
    let model = learns_perfectly(ProjectType::Absa, &pair_set("positive", "negative"));
    assert_eq!(model.labels(), ["negative", "neutral", "positive"]);
    assert_eq!(
        model.predict("the soup was bland").plain_tags(),
        [Tag::pair("food", "negative")]
    );
    assert_eq!(
        model.predict("the chef was friendly").plain_tags(),
        [Tag::pair("service", "positive")]
    );
}

#[test]
fn same_seed_same_bytes_and_round_trip() {
    for (t, set) in [
        (ProjectType::Label, label_set()),
        (ProjectType::Class, class_set(true)),
        (ProjectType::Absa, pair_set("positive", "negative")),
    ] {
        let a = Model::train(t, &set, &options(), &mut go).unwrap();
        let b = Model::train(t, &set, &options(), &mut go).unwrap();
        let bytes = a.to_bytes();
        assert_eq!(bytes, b.to_bytes());
        let loaded = Model::from_bytes(&bytes).unwrap();
        assert_eq!(loaded, a);
        assert_eq!(loaded.to_bytes(), bytes);
        for text in ["the soup was rude", "great wine", "", "ünïcödé 日本語 كتاب"] {
            assert_eq!(loaded.predict(text), a.predict(text));
        }
    }
}

/// The same sets and options made `tests/fixtures/v2-*.lcm` in the version 2 format: today's
/// artifacts of the same models are at most half their size.
#[test]
fn artifacts_are_at_most_half_the_version_2_size() {
    for (t, set, v2) in [
        (
            ProjectType::Label,
            label_set(),
            &include_bytes!("fixtures/v2-label.lcm")[..],
        ),
        (
            ProjectType::Absa,
            pair_set("positive", "negative"),
            &include_bytes!("fixtures/v2-absa.lcm")[..],
        ),
    ] {
        let model = Model::train(t, &set, &options(), &mut go).unwrap();
        let bytes = model.to_bytes();
        assert!(
            bytes.len() * 2 <= v2.len(),
            "{t}: {} bytes, {} in version 2",
            bytes.len(),
            v2.len()
        );
        let old = Model::from_bytes(v2).unwrap();
        for e in &set {
            assert_eq!(model.predict(&e.text).plain_tags(), old.predict(&e.text).plain_tags());
        }
    }
}

#[test]
fn damaged_artifacts_are_refused() {
    let model = Model::train(
        ProjectType::Label,
        &label_set(),
        &Options {
            features: FeatureConfig {
                buckets_log2: 10,
                char_max: 0,
                ..FeatureConfig::default()
            },
            ..options()
        },
        &mut go,
    )
    .unwrap();
    let bytes = model.to_bytes();
    for cut in 0..bytes.len() {
        assert!(Model::from_bytes(&bytes[..cut]).is_err(), "truncated at {cut}");
    }
    let mut damaged = bytes.clone();
    for i in 0..bytes.len() {
        damaged[i] ^= 0x5a;
        assert!(
            matches!(Model::from_bytes(&damaged), Err(Error::Artifact(_))),
            "flipped byte {i}"
        );
        damaged[i] = bytes[i];
    }
    assert!(Model::from_bytes(b"PK\x03\x04 not a model at all, a zip").is_err());
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(Model::from_bytes(&longer).is_err());
}

#[test]
fn progress_is_monotone_and_training_can_be_cancelled() {
    let mut seen = Vec::new();
    Model::train(ProjectType::Class, &class_set(true), &options(), &mut |f| {
        seen.push(f);
        ControlFlow::Continue(())
    })
    .unwrap();
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
    assert!(seen.iter().all(|f| (0.0..=1.0).contains(f)));
    assert_eq!(seen.last(), Some(&1.0));
    let mut calls = 0;
    let r = Model::train(ProjectType::Label, &label_set(), &options(), &mut |_| {
        calls += 1;
        if calls > 3 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    assert!(matches!(r, Err(Error::Cancelled)));
}

#[test]
fn unusable_input_is_an_error_not_a_panic() {
    let one = vec![
        Example::new("a", vec![Tag::label("x")]),
        Example::new("b", vec![Tag::label("x")]),
    ];
    assert!(matches!(
        Model::train(ProjectType::Label, &one, &options(), &mut go),
        Err(Error::InvalidInput(_))
    ));
    assert!(Model::train(ProjectType::Class, &[], &options(), &mut go).is_err());
    let bad = vec![Example::new("a", vec![Tag::pair("food", "great")])];
    assert!(Model::train(ProjectType::Absa, &bad, &options(), &mut go).is_err());
    let opts = Options {
        c: Some(-1.0),
        ..options()
    };
    assert!(Model::train(ProjectType::Label, &label_set(), &opts, &mut go).is_err());
}

#[test]
fn warm_start_from_a_base_model_with_overlapping_labels() {
    let base = Model::train(ProjectType::Label, &label_set(), &options(), &mut go).unwrap();
    // Two new examples only: the base model's knowledge carries the rest.
    let few = vec![
        Example::new("superb soup", vec![Tag::label("good")]),
        Example::new("cold soup", vec![Tag::label("bad")]),
    ];
    let opts = Options {
        base: Some(&base),
        ..options()
    };
    let warm = Model::train(ProjectType::Label, &few, &opts, &mut go).unwrap();
    assert!(warm.info().warm_started);
    assert_eq!(warm.predict("rude staff").tags[0].label.as_deref(), Some("bad"));
    assert_eq!(warm.predict("lovely staff").tags[0].label.as_deref(), Some("good"));
    let other = vec![
        Example::new("x", vec![Tag::label("p")]),
        Example::new("y", vec![Tag::label("q")]),
    ];
    assert!(matches!(
        Model::train(ProjectType::Label, &other, &opts, &mut go),
        Err(Error::IncompatibleBase(_))
    ));
}

/// Retraining on the sessions a base learnt from (what `train_model` does by default) chooses
/// its cost and calibration as a cold training does: the held-out runs do not start from a
/// base that has seen their held-out rows. Before, every held-out row looked known (a
/// validation score of 1 and the smallest cost), and the calibration made wrong tags certain.
#[test]
fn a_warm_start_on_the_bases_own_data_is_validated_as_a_cold_one() {
    // Two labels whose words overlap, so that held-out rows are not all predicted right.
    let words = ["soup", "staff", "wine", "table", "bill", "music", "view", "bread"];
    let mut examples = Vec::new();
    let mut state = 7u64;
    for i in 0..80 {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let pick = |shift: u32| words[((state >> shift) % words.len() as u64) as usize];
        let (mood, label) = if i % 2 == 0 { ("fine", "good") } else { ("poor", "bad") };
        // One text in five has the other label's word: noise no model learns away.
        let mood = if (state >> 50).is_multiple_of(5) {
            if label == "good" { "poor" } else { "fine" }
        } else {
            mood
        };
        examples.push(Example::new(
            format!("{} {} was {mood}", pick(10), pick(20)),
            vec![Tag::label(label)],
        ));
    }
    let cold_options = Options {
        choose_features: false,
        ..options()
    };
    let cold = Model::train(ProjectType::Label, &examples, &cold_options, &mut go).unwrap();
    let warm_options = Options {
        base: Some(&cold),
        ..cold_options.clone()
    };
    let warm = Model::train(ProjectType::Label, &examples, &warm_options, &mut go).unwrap();
    assert!(warm.info().warm_started);
    let (cold_hyper, warm_hyper) = (&cold.info().hyper, &warm.info().hyper);
    assert!(
        cold_hyper.validation_score < Some(1.0),
        "{:?}",
        cold_hyper.validation_score
    );
    assert_eq!(warm_hyper.validation_score, cold_hyper.validation_score);
    assert_eq!(warm_hyper.c, cold_hyper.c);
    assert_eq!(warm.info().calibration, cold.info().calibration);
}

#[test]
fn split_helper_is_stratified() {
    let set = label_set();
    let s = split_examples(ProjectType::Label, &set, 0.25, 0);
    assert_eq!(s.test.len(), 4);
    assert_eq!(
        s.test
            .iter()
            .filter(|&&i| set[i].tags[0].label.as_deref() == Some("good"))
            .count(),
        2
    );
}

/// Names and common nouns that differ only in case: folded, the texts of the two labels are
/// the same words, so only the cased channel can tell them apart.
fn case_set() -> Vec<Example> {
    let words = [
        "Apple", "Turkey", "Bill", "Jack", "Rose", "Amber", "Sandy", "Frank", "Grace", "Mark", "Bob", "Chase", "Penny",
        "Will", "Victor", "Dawn",
    ];
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        let next = words[(i + 5) % words.len()];
        let name = format!("{w} met {next} today");
        let common = name.to_lowercase();
        out.push(Example::new(name, vec![Tag::label("names")]));
        out.push(Example::new(common, vec![Tag::label("things")]));
    }
    out
}

#[test]
fn features_are_chosen_on_held_out_data_and_recorded() {
    let model = Model::train(ProjectType::Label, &case_set(), &options(), &mut go).unwrap();
    let info = model.info();
    assert!(info.features.cased_words, "{:?}", info.hyper.features_tried);
    let tried = &info.hyper.features_tried;
    assert_eq!(tried.len(), 2);
    assert_eq!(
        (tried[0].features.as_str(), tried[1].features.as_str()),
        ("folded", "folded+cased+shape")
    );
    assert!(tried[1].validation_score > tried[0].validation_score, "{tried:?}");
    assert_eq!(
        model.predict("Frank met Rose today").plain_tags(),
        [Tag::label("names")]
    );
    assert_eq!(
        model.predict("frank met rose today").plain_tags(),
        [Tag::label("things")]
    );
    assert_eq!(
        model.evaluate(&case_set()).features.as_deref(),
        Some("folded+cased+shape")
    );
    // The choice travels in the artifact.
    let loaded = Model::from_bytes(&model.to_bytes()).unwrap();
    assert_eq!(loaded.info().hyper.features_tried, *tried);
    assert!(loaded.info().features.cased_words);

    // Where case says nothing (all lower case), the candidates' features are the same, so are
    // their held-out scores, and today's folded features are kept.
    let plain = Model::train(ProjectType::Label, &label_set(), &options(), &mut go).unwrap();
    assert!(!plain.info().features.cased_words);
    let tried = &plain.info().hyper.features_tried;
    assert_eq!(tried[0].validation_score, tried[1].validation_score);
}

/// Enough sentences that one holdout stands for cross-validation (over two million non-zero
/// features): three labels, two of which only the case of their words tells apart.
fn large_case_set() -> Vec<Example> {
    let mut state = 12_345u64;
    let mut next = move |n: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % n
    };
    let syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "do", "fe"];
    let words: Vec<String> = (0..400)
        .map(|_| (0..3).map(|_| syllables[next(12) as usize]).collect())
        .collect();
    (0..10_000)
        .map(|i| {
            let sentence: Vec<&str> = (0..16).map(|_| words[next(400) as usize].as_str()).collect();
            let (label, text) = match i % 3 {
                0 => (
                    "names",
                    sentence.iter().map(|w| capitalised(w)).collect::<Vec<_>>().join(" "),
                ),
                1 => ("things", sentence.join(" ")),
                _ => ("counts", format!("{} {}", sentence.join(" "), next(1000))),
            };
            Example::new(text, vec![Tag::label(label)])
        })
        .collect()
}

fn capitalised(word: &str) -> String {
    word[..1].to_uppercase() + &word[1..]
}

/// On a large set the later candidate tries only the first's chosen cost, from the first's
/// dual solution there, and the three labels' problems are solved together: the choice still
/// finds the features that tell the labels apart.
#[test]
fn a_large_set_chooses_its_features_on_one_holdout() {
    let set = large_case_set();
    let (train, unseen) = set.split_at(9_000);
    let model = Model::train(ProjectType::Label, train, &options(), &mut go).unwrap();
    let info = model.info();
    assert_eq!(info.hyper.validation, "holdout-20%");
    let tried = &info.hyper.features_tried;
    assert_eq!(tried[1].features, "folded+cased+shape");
    assert!(tried[1].validation_score > tried[0].validation_score, "{tried:?}");
    assert_eq!(info.features.name(), "folded+cased+shape");
    let scores = model.evaluate(unseen);
    assert!(scores.accuracy > 0.95, "{scores:?}");
}

/// Where today's folded features win, choosing leaves the model they make alone: same
/// artifact but for the record of what was tried.
#[test]
fn choosing_changes_nothing_where_the_folded_features_win() {
    let chosen = Model::train(ProjectType::Label, &label_set(), &options(), &mut go).unwrap();
    assert!(!chosen.info().features.cased_words);
    let alone = Model::train(
        ProjectType::Label,
        &label_set(),
        &Options {
            choose_features: false,
            ..options()
        },
        &mut go,
    )
    .unwrap();
    assert_eq!(alone.info().hyper.features_tried.len(), 1);
    let mut info = chosen.info().clone();
    info.hyper.features_tried.truncate(1);
    assert_eq!(&info, alone.info());
    for e in label_set() {
        assert_eq!(alone.predict(&e.text), chosen.predict(&e.text));
    }
}
