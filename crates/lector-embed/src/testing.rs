//! A tiny random BERT for tests, this crate's and others' (feature `testing`): two layers,
//! hidden size 8, two heads, a twelve-word vocabulary. Too small to mean anything, large
//! enough to run every code path of the encoder and of its tuning.

use serde_json::{Value, json};

use crate::MiniLm;
use crate::safetensors::write_f32;

/// The words of the tiny vocabulary, one per line, as `vocab.txt` holds them.
pub const TINY_VOCAB: &str = "[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\nfood\nwas\ngreat\nslow\nservice\n##s\n.\n";

/// A deterministic pseudo-random stream in [-0.5, 0.5).
pub fn values(seed: u64, n: usize) -> Vec<f32> {
    let mut rng = lector_ml::Rng::new(seed);
    (0..n).map(|_| rng.unit() as f32 - 0.5).collect()
}

/// The tiny encoder's `config.json` and weights (safetensors). With `plain_norms` its layer
/// norms are the identity; without, they are random too, so that their gradients matter.
pub fn tiny_parts(plain_norms: bool) -> (Value, Vec<u8>) {
    let (h, i, vocab, positions) = (8usize, 16usize, 12usize, 16usize);
    let config = json!({
        "vocab_size": vocab, "hidden_size": h, "num_attention_heads": 2, "num_hidden_layers": 2,
        "intermediate_size": i, "max_position_embeddings": positions, "layer_norm_eps": 1e-12,
        "hidden_act": "gelu"
    });
    let mut tensors: Vec<(String, Vec<usize>, Vec<f32>)> = vec![
        (
            "embeddings.word_embeddings.weight".into(),
            vec![vocab, h],
            values(1, vocab * h),
        ),
        (
            "embeddings.position_embeddings.weight".into(),
            vec![positions, h],
            values(2, positions * h),
        ),
        (
            "embeddings.token_type_embeddings.weight".into(),
            vec![2, h],
            values(3, 2 * h),
        ),
        ("embeddings.LayerNorm.weight".into(), vec![h], vec![1.0; h]),
        ("embeddings.LayerNorm.bias".into(), vec![h], vec![0.0; h]),
    ];
    let mut seed = 10;
    for l in 0..2 {
        let p = format!("encoder.layer.{l}");
        for (name, out, inp) in [
            ("attention.self.query", h, h),
            ("attention.self.key", h, h),
            ("attention.self.value", h, h),
            ("attention.output.dense", h, h),
            ("intermediate.dense", i, h),
            ("output.dense", h, i),
        ] {
            seed += 2;
            let w = values(seed, out * inp).iter().map(|v| v * 2.0).collect();
            tensors.push((format!("{p}.{name}.weight"), vec![out, inp], w));
            tensors.push((format!("{p}.{name}.bias"), vec![out], values(seed + 1, out)));
        }
        for name in ["attention.output.LayerNorm", "output.LayerNorm"] {
            seed += 2;
            let (w, b) = if plain_norms {
                (vec![1.0; h], vec![0.0; h])
            } else {
                (values(seed, h).iter().map(|v| 1.0 + v).collect(), values(seed + 1, h))
            };
            tensors.push((format!("{p}.{name}.weight"), vec![h], w));
            tensors.push((format!("{p}.{name}.bias"), vec![h], b));
        }
    }
    let refs: Vec<(&str, Vec<usize>, Vec<f32>)> = tensors
        .iter()
        .map(|(n, s, v)| (n.as_str(), s.clone(), v.clone()))
        .collect();
    (config, write_f32(&refs))
}

/// The tiny encoder with plain layer norms, reading at most 16 tokens.
pub fn tiny() -> MiniLm {
    let (config, weights) = tiny_parts(true);
    MiniLm::from_parts(&config, TINY_VOCAB, weights, 16, "tiny".into()).unwrap_or_else(|e| panic!("tiny encoder: {e}"))
}

/// Writes the tiny encoder (plain layer norms) as an encoder directory `MiniLm::load` reads,
/// as a BASE model is installed.
pub fn write_tiny(dir: &std::path::Path) -> std::io::Result<()> {
    let (config, weights) = tiny_parts(true);
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("config.json"), config.to_string())?;
    std::fs::write(dir.join("vocab.txt"), TINY_VOCAB)?;
    std::fs::write(dir.join("model.safetensors"), weights)?;
    std::fs::write(dir.join("sentence_bert_config.json"), r#"{"max_seq_length": 16}"#)
}
