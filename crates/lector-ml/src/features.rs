//! Hashed n-gram features: text in, a sparse L2-normalised TF-IDF vector out.
//!
//! Word unigrams and bigrams catch topic and phrase ("not good"); character n-grams inside word
//! boundaries catch morphology, spelling variants and unseen inflections, which matters for
//! German compounds and Arabic clitics and for small training sets. Every feature is hashed with
//! our own fixed hash (FNV-1a, finished by a 64-bit mixer) into a table of `2^buckets_log2`
//! rows, so there is no vocabulary to store and the same text maps to the same features on
//! every machine and in every version of this format. Term frequency is sublinear (`1 + ln tf`),
//! weighted by a smoothed IDF learnt at training time, and the vector has unit length.
//!
//! Text is case-folded, which is right for most sets; where letter case carries signal (names,
//! acronyms, a source's headline style), [`FeatureConfig::cased_words`] adds a cased channel:
//! each word that has an upper-case letter is also counted as itself, case kept, beside its
//! folded form, and [`FeatureConfig::typed_shape`] marks how the text was typed: punctuation
//! standing apart from the word before it (`good .` against `good.`, the mark of a tokenised
//! corpus), words that begin with a capital, and a text without any. Training tries the
//! folded features and the folded ones with both channels ([`FeatureConfig::candidates`]) and
//! keeps the better on held-out data.

use serde::{Deserialize, Serialize};

use crate::text::{TokenBuf, Tokenizer};

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
/// Namespaces, so that a word, a bigram and a character n-gram never share a hash by design.
const NS_WORD: u64 = 0x9e37_79b9_7f4a_7c15;
const NS_BIGRAM: u64 = 0xc2b2_ae3d_27d4_eb4f;
const NS_CHAR: u64 = 0x1656_67b1_9e37_79f9;
const NS_CASED: u64 = 0x27d4_eb2f_1656_67c5;
const NS_SHAPE: u64 = 0x85eb_ca77_c2b2_ae63;
/// The shape features that are not a punctuation character's (those hash the character).
const SHAPE_CAPITALISED: u64 = 0x1_0000_0001;
const SHAPE_NO_CAPITALS: u64 = 0x1_0000_0002;
/// Character n-grams are taken from at most this many characters of a token: a 300-character
/// URL says no more than its first 40 and would otherwise dominate the vector and the time.
const MAX_CHARS_PER_TOKEN: usize = 40;

/// The murmur3 64-bit finaliser: spreads FNV's weak low bits over the whole word.
#[inline]
pub(crate) fn mix64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// FNV-1a over bytes; also the artifact checksum.
pub(crate) fn fnv1a(seed: u64, bytes: &[u8]) -> u64 {
    let mut h = seed;
    for &b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(FNV_PRIME);
    }
    h
}

pub(crate) const FNV_SEED: u64 = FNV_OFFSET;

/// Which features to extract; part of every model and its artifact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeatureConfig {
    /// The hash table has `2^buckets_log2` rows (10..=24).
    pub buckets_log2: u32,
    /// Longest word n-gram: 1 (unigrams) or 2 (unigrams and bigrams).
    pub word_ngrams: u32,
    /// Shortest and longest character n-gram inside a word (with `<` `>` boundary marks);
    /// `char_max == 0` turns character n-grams off.
    pub char_min: u32,
    pub char_max: u32,
    /// Fold Arabic ta marbuta into ha.
    pub fold_ta_marbuta: bool,
    /// Also count each word with an upper-case letter as itself, case kept (a cased channel
    /// beside the folded words). Absent from models before it existed: off.
    #[serde(default)]
    pub cased_words: bool,
    /// Also mark how the text was typed: each punctuation token that stands apart from the
    /// word before it, each word that begins with a capital, and a text with no capital at
    /// all. Absent from models before it existed: off.
    #[serde(default)]
    pub typed_shape: bool,
}

impl Default for FeatureConfig {
    fn default() -> Self {
        Self {
            buckets_log2: 18,
            word_ngrams: 2,
            char_min: 3,
            char_max: 5,
            fold_ta_marbuta: true,
            cased_words: false,
            typed_shape: false,
        }
    }
}

impl FeatureConfig {
    /// The featurisations training tries on held-out data, this one first (it wins ties):
    /// as given, and with the cased word channel and the typed shape. One with either already
    /// on is tried alone.
    pub fn candidates(&self) -> Vec<FeatureConfig> {
        if self.cased_words || self.typed_shape {
            return vec![self.clone()];
        }
        vec![
            self.clone(),
            FeatureConfig {
                cased_words: true,
                typed_shape: true,
                ..self.clone()
            },
        ]
    }

    /// A short name for what the candidates differ in: `folded`, `folded+cased`,
    /// `folded+shape` or `folded+cased+shape`.
    pub fn name(&self) -> &'static str {
        match (self.cased_words, self.typed_shape) {
            (false, false) => "folded",
            (true, false) => "folded+cased",
            (false, true) => "folded+shape",
            (true, true) => "folded+cased+shape",
        }
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        if !(10..=24).contains(&self.buckets_log2) {
            return Err(format!("buckets_log2 must be in 10..=24, not {}", self.buckets_log2));
        }
        if !(1..=2).contains(&self.word_ngrams) {
            return Err(format!("word_ngrams must be 1 or 2, not {}", self.word_ngrams));
        }
        if self.char_max != 0 && (self.char_min < 1 || self.char_min > self.char_max || self.char_max > 8) {
            return Err(format!(
                "character n-grams {}..={} are out of range",
                self.char_min, self.char_max
            ));
        }
        Ok(())
    }

    pub(crate) fn buckets(&self) -> usize {
        1usize << self.buckets_log2
    }
}

/// A sparse vector over the hashed table.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SparseVec {
    pub(crate) indices: Vec<u32>,
    pub(crate) values: Vec<f32>,
}

impl SparseVec {
    pub(crate) fn clear(&mut self) {
        self.indices.clear();
        self.values.clear();
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.indices.len()
    }
}

/// A tiny open-addressing counter keyed by bucket, reused between texts: cheaper than sorting
/// the features of every text and than a general-purpose map.
#[derive(Debug, Clone)]
pub(crate) struct Counter {
    /// Bucket + 1; 0 marks an empty slot.
    keys: Vec<u32>,
    counts: Vec<u32>,
    /// Slots in insertion order, so iteration and clearing touch only what was used.
    used: Vec<u32>,
}

impl Default for Counter {
    fn default() -> Self {
        Self {
            keys: vec![0; 256],
            counts: vec![0; 256],
            used: Vec::new(),
        }
    }
}

impl Counter {
    #[inline(always)]
    pub(crate) fn add(&mut self, bucket: u32) {
        if self.used.len() * 2 >= self.keys.len() {
            self.grow();
        }
        let key = bucket + 1;
        let mask = self.keys.len() - 1;
        // Buckets come from the top bits of a mixed hash: their low bits are already uniform.
        let mut slot = key as usize & mask;
        loop {
            let k = self.keys[slot];
            if k == key {
                self.counts[slot] += 1;
                return;
            }
            if k == 0 {
                self.keys[slot] = key;
                self.counts[slot] = 1;
                self.used.push(slot as u32);
                return;
            }
            slot = (slot + 1) & mask;
        }
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let entries: Vec<(u32, u32)> = self.iter().collect();
        let cap = self.keys.len() * 2;
        self.keys = vec![0; cap];
        self.counts = vec![0; cap];
        self.used.clear();
        for (bucket, count) in entries {
            self.add(bucket);
            if let Some(&slot) = self.used.last() {
                self.counts[slot as usize] = count;
            }
        }
    }

    /// `(bucket, count)` in first-seen order (deterministic).
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.used
            .iter()
            .map(|&s| (self.keys[s as usize] - 1, self.counts[s as usize]))
    }

    pub(crate) fn clear(&mut self) {
        for &s in &self.used {
            self.keys[s as usize] = 0;
        }
        self.used.clear();
    }
}

/// Buffers reused between texts by one thread.
#[derive(Debug, Default, Clone)]
pub(crate) struct Scratch {
    tokens: TokenBuf,
    pub(crate) counter: Counter,
    pub(crate) vec: SparseVec,
}

/// Sublinear term frequency, `1 + ln tf` (exactly 1 for the common single occurrence).
#[inline]
pub(crate) fn sublinear_tf(count: u32) -> f32 {
    if count == 1 { 1.0 } else { 1.0 + (count as f32).ln() }
}

/// A 64-bit feature hash to a bucket of a `2^(64 - shift)`-row table: one xor-shift-multiply
/// round, then the top bits.
#[inline]
fn to_bucket(h: u64, shift: u32) -> u32 {
    ((h ^ (h >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9) >> shift) as u32
}

/// Turns text into feature vectors with a fixed configuration and learnt IDF weights.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Featurizer {
    pub(crate) config: FeatureConfig,
    /// One IDF weight per bucket.
    pub(crate) idf: Vec<f32>,
}

impl Featurizer {
    /// Counts the hashed features of `text` into `scratch.counter`; answers the token count.
    pub(crate) fn count(config: &FeatureConfig, text: &str, scratch: &mut Scratch) -> usize {
        let tokenizer = Tokenizer {
            fold_ta_marbuta: config.fold_ta_marbuta,
            keep_case: config.cased_words || config.typed_shape,
        };
        tokenizer.tokenize_into(text, &mut scratch.tokens);
        scratch.counter.clear();
        let shift = 64 - config.buckets_log2;
        let tokens = &scratch.tokens;
        let counter = &mut scratch.counter;
        let mut add = |h: u64| counter.add(to_bucket(h, shift));
        let mut previous: Option<u64> = None;
        for &(start, end, is_word) in &tokens.spans {
            let chars = &tokens.chars[start as usize..end as usize];
            let mut h = NS_WORD;
            for &c in chars {
                h = (h ^ u64::from(c as u32)).wrapping_mul(FNV_PRIME);
            }
            add(h);
            if config.word_ngrams >= 2 {
                if let Some(p) = previous {
                    add(p.rotate_left(23).wrapping_mul(FNV_PRIME) ^ h ^ NS_BIGRAM);
                }
                previous = Some(h);
            }
            if is_word && config.char_max > 0 {
                Self::char_ngrams(config, chars, &mut add);
            }
            if is_word && config.cased_words {
                let cased = &tokens.cased[start as usize..end as usize];
                if cased != chars {
                    add(cased
                        .iter()
                        .fold(NS_CASED, |h, &c| (h ^ u64::from(c as u32)).wrapping_mul(FNV_PRIME)));
                }
            }
        }
        if config.typed_shape {
            Self::typed_shape(tokens, &mut add);
        }
        tokens.spans.len()
    }

    /// The marks of how the text was typed ([`FeatureConfig::typed_shape`]).
    fn typed_shape(tokens: &TokenBuf, add: &mut impl FnMut(u64)) {
        let mut capitals = false;
        let mut words = false;
        for (&(start, end, is_word), &spaced) in tokens.spans.iter().zip(&tokens.spaced) {
            let (start, end) = (start as usize, end as usize);
            if is_word {
                words = true;
                if tokens.cased[start] != tokens.chars[start] {
                    add(NS_SHAPE ^ SHAPE_CAPITALISED);
                    capitals = true;
                } else if tokens.cased[start..end] != tokens.chars[start..end] {
                    capitals = true;
                }
            } else if spaced {
                add((NS_SHAPE ^ u64::from(tokens.chars[start] as u32)).wrapping_mul(FNV_PRIME));
            }
        }
        if words && !capitals {
            add(NS_SHAPE ^ SHAPE_NO_CAPITALS);
        }
    }

    /// The character n-grams of one word with boundary marks: `<ab`, `abc`, …, `yz>`.
    #[inline]
    fn char_ngrams(config: &FeatureConfig, word: &[char], emit: &mut impl FnMut(u64)) {
        let word = &word[..word.len().min(MAX_CHARS_PER_TOKEN)];
        let len = word.len() + 2;
        let mut marked = [0u32; MAX_CHARS_PER_TOKEN + 2];
        marked[0] = '<' as u32;
        for (m, &c) in marked[1..].iter_mut().zip(word) {
            *m = c as u32;
        }
        marked[len - 1] = '>' as u32;
        let marked = &marked[..len];
        let (min, max) = (config.char_min as usize, config.char_max as usize);
        for start in 0..len {
            let mut h = NS_CHAR;
            for (i, &c) in marked[start..len.min(start + max)].iter().enumerate() {
                let n = i + 1;
                h = (h ^ u64::from(c)).wrapping_mul(FNV_PRIME);
                if n >= min {
                    // A lone boundary mark says nothing.
                    if n == 1 && (start == 0 || start == len - 1) {
                        continue;
                    }
                    emit(h ^ (n as u64));
                }
            }
        }
    }

    /// Raw feature counts of `text` as `(bucket, count)`; answers the token count.
    pub(crate) fn raw_counts(
        config: &FeatureConfig,
        text: &str,
        scratch: &mut Scratch,
        out: &mut Vec<(u32, u32)>,
    ) -> usize {
        let n = Self::count(config, text, scratch);
        out.clear();
        out.extend(scratch.counter.iter());
        n
    }

    /// Learns smoothed IDF weights from documents given as bucket lists (each bucket once per
    /// document): `ln((1 + n) / (1 + df)) + 1`, as scikit-learn does.
    pub(crate) fn fit_idf(config: FeatureConfig, docs: &[Vec<(u32, u32)>]) -> Self {
        let mut df = vec![0u32; config.buckets()];
        for doc in docs {
            for &(b, _) in doc {
                df[b as usize] += 1;
            }
        }
        let n = docs.len() as f64;
        let idf = df
            .iter()
            .map(|&d| (((1.0 + n) / (1.0 + f64::from(d))).ln() + 1.0) as f32)
            .collect();
        Self { config, idf }
    }

    /// Weights and normalises raw counts into `out`.
    pub(crate) fn weigh(&self, counts: impl Iterator<Item = (u32, u32)>, out: &mut SparseVec) {
        out.clear();
        let mut norm = 0.0f32;
        for (b, c) in counts {
            let v = sublinear_tf(c) * self.idf[b as usize];
            norm += v * v;
            out.indices.push(b);
            out.values.push(v);
        }
        if norm > 0.0 {
            let inv = 1.0 / norm.sqrt();
            for v in &mut out.values {
                *v *= inv;
            }
        }
    }

    /// The feature vector of `text` in `scratch.vec`; answers the token count.
    #[cfg(test)]
    pub(crate) fn vectorize(&self, text: &str, scratch: &mut Scratch) -> usize {
        let n = Self::count(&self.config, text, scratch);
        let Scratch { counter, vec, .. } = scratch;
        self.weigh(counter.iter(), vec);
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_are_deterministic_unit_length_and_sensitive_to_words() {
        let config = FeatureConfig {
            buckets_log2: 16,
            char_min: 2,
            ..FeatureConfig::default()
        };
        let f = Featurizer {
            idf: vec![1.0; config.buckets()],
            config,
        };
        let mut s = Scratch::default();
        f.vectorize("The food was great, the service slow.", &mut s);
        let a = s.vec.clone();
        f.vectorize("The food was great, the service slow.", &mut s);
        assert_eq!(a, s.vec);
        let norm: f32 = a.values.iter().map(|v| v * v).sum();
        assert!((norm - 1.0).abs() < 1e-5);
        // Bucket indices are fixed by our hash: a regression here changes every saved model.
        let mut counts = Vec::new();
        Featurizer::raw_counts(&f.config, "ab", &mut s, &mut counts);
        // word "ab" + char n-grams <a ab b> <ab ab> <ab>  = 1 + 3 + 2 + 1 (no bigram)
        assert_eq!(counts.len(), 7);
        f.vectorize("the food was bad", &mut s);
        assert_ne!(a, s.vec);
        f.vectorize("", &mut s);
        assert_eq!(s.vec.len(), 0);
    }

    /// The raw `(bucket, count)` features of `text`.
    fn counts(config: &FeatureConfig, text: &str) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        Featurizer::raw_counts(config, text, &mut Scratch::default(), &mut out);
        out
    }

    #[test]
    fn the_cased_channel_counts_words_with_capitals_once_more() {
        let folded = FeatureConfig::default();
        let cased = FeatureConfig {
            cased_words: true,
            ..FeatureConfig::default()
        };
        // Folded, case changes nothing; cased, "Apple" gains one feature that "apple" lacks.
        assert_eq!(counts(&folded, "Apple pie"), counts(&folded, "apple pie"));
        assert_eq!(counts(&cased, "apple pie"), counts(&folded, "apple pie"));
        let with_capital = counts(&cased, "Apple pie");
        assert_eq!(with_capital.len(), counts(&folded, "apple pie").len() + 1);
        assert_ne!(with_capital, counts(&cased, "APPLE pie"));
        assert_eq!(cased.candidates(), std::slice::from_ref(&cased));
        assert_eq!((folded.name(), cased.name()), ("folded", "folded+cased"));
    }

    #[test]
    fn the_typed_shape_tells_a_tokenised_corpus_from_typed_text() {
        let folded = FeatureConfig::default();
        let shape = FeatureConfig {
            typed_shape: true,
            ..FeatureConfig::default()
        };
        // Folded, spacing and case change nothing.
        assert_eq!(
            counts(&folded, "it works , really ."),
            counts(&folded, "It works, really.")
        );
        // The shape tells them apart: two marks standing apart, against a capital.
        let tokenised = counts(&shape, "it works , really .");
        let typed = counts(&shape, "It works, really.");
        assert_ne!(tokenised, typed);
        let extra = |with: &[(u32, u32)], without: &[(u32, u32)]| {
            with.iter().map(|(_, n)| n).sum::<u32>() - without.iter().map(|(_, n)| n).sum::<u32>()
        };
        // ", " and "." apart, and no capital at all: three marks.
        assert_eq!(extra(&tokenised, &counts(&folded, "it works , really .")), 3);
        // One capitalised word, the marks attached: one mark.
        assert_eq!(extra(&typed, &counts(&folded, "It works, really.")), 1);
        // A word's inner apostrophe is no mark (only the missing capitals are); a mark at the
        // text's start stands apart, one right after a word does not.
        assert_eq!(extra(&counts(&shape, "don't"), &counts(&folded, "don't")), 1);
        assert_eq!(extra(&counts(&shape, "(good)"), &counts(&folded, "(good)")), 2);
        // Models saved before the shape existed read it as off and count as they did.
        let old: FeatureConfig = serde_json::from_value(serde_json::json!({
            "buckets_log2": 18, "word_ngrams": 2, "char_min": 3, "char_max": 5,
            "fold_ta_marbuta": true, "cased_words": true
        }))
        .unwrap();
        assert!(!old.typed_shape);
        assert_eq!(old.candidates(), std::slice::from_ref(&old));
        let both = FeatureConfig {
            cased_words: true,
            ..shape.clone()
        };
        assert_eq!(folded.candidates(), [folded.clone(), both.clone()]);
        assert_eq!((shape.name(), both.name()), ("folded+shape", "folded+cased+shape"));
    }

    #[test]
    fn counter_survives_growth() {
        let mut c = Counter::default();
        for i in 0..5000u32 {
            c.add(i % 1200);
        }
        let total: u32 = c.iter().map(|(_, n)| n).sum();
        assert_eq!(total, 5000);
        assert_eq!(c.iter().count(), 1200);
        c.clear();
        assert_eq!(c.iter().count(), 0);
    }
}
