//! The BERT encoder's forward pass (post-layer-norm, GELU, absolute positions), for one
//! sequence at a time on one thread: the linear layers' products go through matrixmultiply
//! (via ndarray), the rest in plain loops; a fixed order of operations makes the output
//! identical from run to run on a given CPU. Linear weights are kept transposed (`in × out`).

use ndarray::linalg::general_mat_mul;
use ndarray::{ArrayView2, ArrayViewMut2};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::safetensors::Tensors;

/// The shape of the encoder, from Hugging Face's `config.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub vocab: usize,
    pub hidden: usize,
    pub heads: usize,
    pub layers: usize,
    pub intermediate: usize,
    pub max_positions: usize,
    pub eps: f32,
}

impl Config {
    pub fn from_json(v: &Value) -> Result<Self> {
        let get = |k: &str| {
            v[k].as_u64()
                .map(|n| n as usize)
                .filter(|&n| n > 0 && n <= 1 << 20)
                .ok_or_else(|| Error::Format(format!("config.json: {k} missing or out of range")))
        };
        if v["hidden_act"].as_str() != Some("gelu") {
            return Err(Error::Format(
                "config.json: only hidden_act \"gelu\" is supported".into(),
            ));
        }
        let c = Self {
            vocab: get("vocab_size")?,
            hidden: get("hidden_size")?,
            heads: get("num_attention_heads")?,
            layers: get("num_hidden_layers")?,
            intermediate: get("intermediate_size")?,
            max_positions: get("max_position_embeddings")?,
            eps: v["layer_norm_eps"].as_f64().unwrap_or(1e-12) as f32,
        };
        if !c.hidden.is_multiple_of(c.heads) || c.layers > 64 {
            return Err(Error::Format("config.json: inconsistent sizes".into()));
        }
        Ok(c)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Linear {
    /// `input × output`, row-major.
    pub(crate) wt: Vec<f32>,
    pub(crate) bias: Vec<f32>,
    pub(crate) input: usize,
    pub(crate) output: usize,
}

impl Linear {
    fn load(t: &Tensors, name: &str, input: usize, output: usize) -> Result<Self> {
        let w = t.f32(&format!("{name}.weight"), &[output, input])?;
        let mut wt = vec![0.0; input * output];
        for o in 0..output {
            for i in 0..input {
                wt[i * output + o] = w[o * input + i];
            }
        }
        Ok(Self {
            wt,
            bias: t.f32(&format!("{name}.bias"), &[output])?,
            input,
            output,
        })
    }

    /// `x` (`rows × input`) times the weights plus the bias, into `out` (`rows × output`),
    /// through matrixmultiply's kernels (AVX/FMA when the CPU has them, chosen at run time).
    /// One thread, a fixed blocking: the same input gives the same output bit for bit on a
    /// given CPU.
    pub(crate) fn forward(&self, x: &[f32], out: &mut Vec<f32>) {
        let rows = x.len() / self.input;
        out.clear();
        out.reserve(rows * self.output);
        for _ in 0..rows {
            out.extend_from_slice(&self.bias);
        }
        let shapes = (
            ArrayView2::from_shape((rows, self.input), &x[..rows * self.input]),
            ArrayView2::from_shape((self.input, self.output), &self.wt[..]),
            ArrayViewMut2::from_shape((rows, self.output), &mut out[..]),
        );
        match shapes {
            (Ok(a), Ok(w), Ok(mut c)) => general_mat_mul(1.0, &a, &w, 1.0, &mut c),
            // The shapes hold by construction; a mismatch is a bug, shown as a panic.
            _ => panic!(
                "linear layer shapes: {rows}×{} by {}×{}",
                self.input, self.input, self.output
            ),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LayerNorm {
    pub(crate) weight: Vec<f32>,
    pub(crate) bias: Vec<f32>,
    pub(crate) eps: f32,
}

impl LayerNorm {
    fn load(t: &Tensors, name: &str, dim: usize, eps: f32) -> Result<Self> {
        Ok(Self {
            weight: t.f32(&format!("{name}.weight"), &[dim])?,
            bias: t.f32(&format!("{name}.bias"), &[dim])?,
            eps,
        })
    }

    fn apply(&self, x: &mut [f32]) {
        for row in x.chunks_exact_mut(self.weight.len()) {
            let n = row.len() as f32;
            let mean = row.iter().sum::<f32>() / n;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n;
            let inv = 1.0 / (var + self.eps).sqrt();
            for ((v, &w), &b) in row.iter_mut().zip(&self.weight).zip(&self.bias) {
                *v = (*v - mean) * inv * w + b;
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Layer {
    pub(crate) query: Linear,
    pub(crate) key: Linear,
    pub(crate) value: Linear,
    pub(crate) attention_out: Linear,
    pub(crate) attention_norm: LayerNorm,
    pub(crate) intermediate: Linear,
    pub(crate) output: Linear,
    pub(crate) output_norm: LayerNorm,
}

/// A loaded BERT encoder.
#[derive(Debug)]
pub struct Bert {
    config: Config,
    words: Vec<f32>,
    positions: Vec<f32>,
    token_type: Vec<f32>,
    embedding_norm: LayerNorm,
    layers: Vec<Layer>,
}

impl Bert {
    /// Loads the weights named as in Hugging Face's `BertModel` (without a `bert.` prefix).
    pub fn load(config: Config, t: &Tensors) -> Result<Self> {
        let (h, i, eps) = (config.hidden, config.intermediate, config.eps);
        let mut layers = Vec::with_capacity(config.layers);
        for l in 0..config.layers {
            let p = format!("encoder.layer.{l}");
            layers.push(Layer {
                query: Linear::load(t, &format!("{p}.attention.self.query"), h, h)?,
                key: Linear::load(t, &format!("{p}.attention.self.key"), h, h)?,
                value: Linear::load(t, &format!("{p}.attention.self.value"), h, h)?,
                attention_out: Linear::load(t, &format!("{p}.attention.output.dense"), h, h)?,
                attention_norm: LayerNorm::load(t, &format!("{p}.attention.output.LayerNorm"), h, eps)?,
                intermediate: Linear::load(t, &format!("{p}.intermediate.dense"), h, i)?,
                output: Linear::load(t, &format!("{p}.output.dense"), i, h)?,
                output_norm: LayerNorm::load(t, &format!("{p}.output.LayerNorm"), h, eps)?,
            });
        }
        Ok(Self {
            words: t.f32("embeddings.word_embeddings.weight", &[config.vocab, h])?,
            positions: t.f32("embeddings.position_embeddings.weight", &[config.max_positions, h])?,
            token_type: t.f32("embeddings.token_type_embeddings.weight", &[2, h])?,
            embedding_norm: LayerNorm::load(t, "embeddings.LayerNorm", h, eps)?,
            layers,
            config,
        })
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The last hidden states (`ids.len() × hidden`) of one sequence of token ids. Ids past
    /// the vocabulary count as id 0 and positions past the table are cut off.
    pub fn forward(&self, ids: &[u32]) -> Vec<f32> {
        self.states_below(ids, self.layers.len())
    }

    /// `x`, the states after the first `from` layers, taken through the rest.
    pub(crate) fn states_above(&self, x: Vec<f32>, from: usize) -> Vec<f32> {
        apply_layers(self.layers_from(from), &self.config, x)
    }

    /// The hidden states after the first `layers` layers (the embeddings for 0).
    pub(crate) fn states_below(&self, ids: &[u32], layers: usize) -> Vec<f32> {
        let mut x = Vec::new();
        let n = self.embed_tokens(ids, &mut x);
        apply_batch(&self.layers[..layers.min(self.layers.len())], &self.config, x, &[n])
    }

    /// The last hidden states of several sequences at once: their rows go through each linear
    /// layer as one matrix (far better use of the matrix kernels than one short sequence at a
    /// time), attention stays within each sequence. Equal to [`Bert::forward`] of each within
    /// float rounding.
    pub fn forward_batch(&self, batch: &[&[u32]]) -> Vec<Vec<f32>> {
        let h = self.config.hidden;
        let mut x = Vec::new();
        let lengths: Vec<usize> = batch.iter().map(|ids| self.embed_tokens(ids, &mut x)).collect();
        let x = apply_batch(&self.layers, &self.config, x, &lengths);
        let mut out = Vec::with_capacity(batch.len());
        let mut start = 0;
        for n in lengths {
            out.push(x[start * h..(start + n) * h].to_vec());
            start += n;
        }
        out
    }

    /// Appends the normalised embeddings of `ids` (cut to the position table) to `x`; answers
    /// how many rows were added. Ids past the vocabulary count as id 0.
    fn embed_tokens(&self, ids: &[u32], x: &mut Vec<f32>) -> usize {
        let h = self.config.hidden;
        let ids = &ids[..ids.len().min(self.config.max_positions)];
        let start = x.len();
        for (p, &id) in ids.iter().enumerate() {
            let id = if (id as usize) < self.config.vocab {
                id as usize
            } else {
                0
            };
            let w = &self.words[id * h..(id + 1) * h];
            let pos = &self.positions[p * h..(p + 1) * h];
            x.extend(
                w.iter()
                    .zip(pos)
                    .zip(&self.token_type[..h])
                    .map(|((a, b), c)| a + b + c),
            );
        }
        self.embedding_norm.apply(&mut x[start..]);
        ids.len()
    }

    /// Layers `from..` as loaded: the starting point of a tuned copy.
    pub(crate) fn layers_from(&self, from: usize) -> &[Layer] {
        &self.layers[from.min(self.layers.len())..]
    }
}

/// `layers` applied in turn to the `n × hidden` states `x` of one sequence.
pub(crate) fn apply_layers(layers: &[Layer], config: &Config, x: Vec<f32>) -> Vec<f32> {
    let n = x.len() / config.hidden;
    apply_batch(layers, config, x, &[n])
}

/// `layers` applied in turn to the states `x` of sequences of `lengths` rows, one after another.
fn apply_batch(layers: &[Layer], config: &Config, mut x: Vec<f32>, lengths: &[usize]) -> Vec<f32> {
    let mut buf = Buffers::default();
    for layer in layers {
        layer.forward(config, &mut x, lengths, &mut buf);
    }
    x
}

/// The mean of the `width`-wide rows of `x`.
pub(crate) fn mean_rows(x: &[f32], width: usize) -> Vec<f32> {
    let mut mean = vec![0.0f32; width];
    for row in x.chunks_exact(width) {
        for (m, &v) in mean.iter_mut().zip(row) {
            *m += v;
        }
    }
    let n = (x.len() / width).max(1) as f32;
    mean.iter_mut().for_each(|m| *m /= n);
    mean
}

impl Layer {
    /// One encoder layer applied in place to the states `x` of sequences of `lengths` rows,
    /// one after another (attention stays within each sequence).
    pub(crate) fn forward(&self, config: &Config, x: &mut [f32], lengths: &[usize], buf: &mut Buffers) {
        let layer = self;
        let h = config.hidden;
        let heads = config.heads;
        let d = h / heads;
        let scale = 1.0 / (d as f32).sqrt();
        let rows: usize = lengths.iter().sum();
        layer.query.forward(x, &mut buf.q);
        layer.key.forward(x, &mut buf.k);
        layer.value.forward(x, &mut buf.v);
        buf.context.clear();
        buf.context.resize(rows * h, 0.0);
        let mut start = 0;
        for &n in lengths {
            buf.scores.resize(n, 0.0);
            for head in 0..heads {
                let off = head * d;
                for i in start..start + n {
                    let q = &buf.q[i * h + off..i * h + off + d];
                    let mut max = f32::NEG_INFINITY;
                    for j in 0..n {
                        let k = &buf.k[(start + j) * h + off..(start + j) * h + off + d];
                        let s = q.iter().zip(k).map(|(a, b)| a * b).sum::<f32>() * scale;
                        buf.scores[j] = s;
                        max = max.max(s);
                    }
                    let mut total = 0.0;
                    for s in &mut buf.scores[..n] {
                        *s = (*s - max).exp();
                        total += *s;
                    }
                    let c = &mut buf.context[i * h + off..i * h + off + d];
                    for j in 0..n {
                        let p = buf.scores[j] / total;
                        let v = &buf.v[(start + j) * h + off..(start + j) * h + off + d];
                        for (c, &v) in c.iter_mut().zip(v) {
                            *c += p * v;
                        }
                    }
                }
            }
            start += n;
        }
        layer.attention_out.forward(&buf.context, &mut buf.q);
        for (x, &a) in x.iter_mut().zip(&buf.q) {
            *x += a;
        }
        layer.attention_norm.apply(x);
        layer.intermediate.forward(x, &mut buf.inner);
        for v in &mut buf.inner {
            *v = gelu(*v);
        }
        layer.output.forward(&buf.inner, &mut buf.q);
        for (x, &a) in x.iter_mut().zip(&buf.q) {
            *x += a;
        }
        layer.output_norm.apply(x);
    }
}

/// Scratch space of [`Layer::forward`], reused from layer to layer.
#[derive(Debug, Default)]
pub(crate) struct Buffers {
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    context: Vec<f32>,
    scores: Vec<f32>,
    inner: Vec<f32>,
}

/// BERT's exact GELU, `x Φ(x)`.
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x / std::f32::consts::SQRT_2))
}

/// The error function, from `libm` (musl's, within an ulp or two of f32): GELU calls it for
/// every value of every intermediate layer, where the series it replaced took most of the
/// encoder's time.
pub(crate) fn erf(x: f32) -> f32 {
    libm::erff(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_known_values() {
        for (x, want) in [
            (0.0f32, 0.0f64),
            (0.1, 0.112_462_916),
            (0.5, 0.520_499_878),
            (1.0, 0.842_700_793),
            (2.0, 0.995_322_265),
            (-1.5, -0.966_105_146),
            (4.0, 0.999_999_985),
        ] {
            assert!((f64::from(erf(x)) - want).abs() < 1e-6, "erf({x}) = {}", erf(x));
        }
    }

    #[test]
    fn linear_matches_a_plain_matrix_product() {
        // Sizes that exercise the register tiles and every remainder.
        let (input, output, rows) = (5usize, 19usize, 9usize);
        let w: Vec<f32> = (0..input * output).map(|v| ((v * 7 % 13) as f32 - 6.0) / 4.0).collect();
        let b: Vec<f32> = (0..output).map(|v| v as f32 / 8.0).collect();
        let t = crate::safetensors::write_f32(&[
            ("l.weight", vec![output, input], w.clone()),
            ("l.bias", vec![output], b.clone()),
        ]);
        let l = Linear::load(&Tensors::parse(t).unwrap(), "l", input, output).unwrap();
        let x: Vec<f32> = (0..rows * input).map(|v| ((v * 5 % 11) as f32 - 5.0) / 3.0).collect();
        let mut out = Vec::new();
        l.forward(&x, &mut out);
        assert_eq!(out.len(), rows * output);
        for r in 0..rows {
            for o in 0..output {
                let want: f32 = b[o] + (0..input).map(|i| x[r * input + i] * w[o * input + i]).sum::<f32>();
                assert!(
                    (out[r * output + o] - want).abs() < 1e-4,
                    "({r}, {o}): {} vs {want}",
                    out[r * output + o]
                );
            }
        }
    }
}
