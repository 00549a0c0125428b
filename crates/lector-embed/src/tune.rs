//! Fine-tuning the encoder's top layers for one multi-label task: the aspect categories of an
//! ABSA project, the classes of a CLASS or CLASSLABEL project.
//!
//! A frozen encoder's mean vector beside the n-grams leaves accuracy behind (about 0.77
//! aspect-category F1 on the SemEval-2016 restaurants, `docs/BENCHMARKS.md`), and tuning all
//! six layers costs half an hour of CPU. Tuning only the top two, on top of the frozen four,
//! scored higher than tuning everything there, at a fraction of the cost: the bottom layers run
//! once per text and their states are kept, and each epoch runs the top layers forward and
//! backward.
//!
//! The head is a sigmoid per output over the mean of the top layer's token states, trained
//! with binary cross-entropy by AdamW (decoupled weight decay) under a linear warm-up and
//! decay: the recipe of the Python experiments the defaults come from
//! (`scripts/absa-embed-experiments.py`). Backpropagation is written out here for the three
//! pieces of a BERT layer (linear maps, layer norms, softmax attention) with GELU; one thread,
//! a fixed order of operations and a seeded shuffle make the tuned weights the same bit for
//! bit from run to run.

use std::ops::ControlFlow;

use crate::bert::{Bert, Config, Layer, LayerNorm, Linear, apply_layers, erf, mean_rows};
use crate::error::{Error, Result};

/// How the top layers are tuned. The defaults were chosen on the dev split of the SemEval-2016
/// restaurant reviews; see `docs/BENCHMARKS.md`.
#[derive(Debug, Clone)]
pub struct TuneOptions {
    /// How many of the top layers are tuned (the rest stay as loaded).
    pub layers: usize,
    pub epochs: usize,
    /// Texts per optimiser step.
    pub batch: usize,
    pub learning_rate: f32,
    pub weight_decay: f32,
    /// Share of the steps over which the learning rate rises from 0 before it decays to 0.
    pub warmup: f32,
    /// At most this many texts (a seeded sample) are used: time grows with every text.
    pub max_texts: usize,
    /// Texts are cut to this many tokens, in training and in prediction alike.
    pub max_tokens: usize,
    pub seed: u64,
    /// Threads that compute a batch's gradient (at most 4; the result does not depend on it).
    pub threads: usize,
}

impl TuneOptions {
    /// The learning rate of step `step` of `steps`: a linear rise over the warm-up share, then
    /// a linear fall to 0.
    fn rate_at(&self, step: usize, steps: usize) -> f32 {
        let warm = ((step + 1) as f32 / (self.warmup * steps as f32).max(1.0)).min(1.0);
        let decay = (steps - step) as f32 / steps as f32;
        self.learning_rate * warm * decay
    }
}

impl Default for TuneOptions {
    fn default() -> Self {
        Self {
            layers: 2,
            epochs: 8,
            batch: 16,
            learning_rate: 2e-4,
            weight_decay: 0.01,
            warmup: 0.1,
            max_texts: 4_000,
            max_tokens: 128,
            seed: 0,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// One training text: its states below the tuned layers and its positive outputs.
type Text<'a> = (&'a [f32], &'a [usize]);

/// A batch's texts are dealt to this many shards, whose gradients are summed in order: the
/// most threads tuning uses, and what keeps its result independent of their number.
const SHARDS: usize = 4;
/// The most outputs a tuned head may have (a project's classes are far fewer).
const MAX_OUTPUTS: usize = 1 << 12;
const MAGIC: &[u8; 8] = b"LECTUNE1";

/// Tuned copies of the encoder's top layers with a sigmoid head over the mean of their output
/// states. The layers below `first` are the loaded encoder's own.
#[derive(Debug, Clone, PartialEq)]
pub struct TunedTop {
    first: usize,
    max_tokens: usize,
    layers: Vec<Layer>,
    head: Linear,
}

impl TunedTop {
    /// How many tokens of a text the tuned layers read.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// Tunes the top layers of `bert` so that a sigmoid over `outputs` predicts `targets` (the
    /// indices of each text's positive outputs) from `inputs` (each text's token ids, already
    /// cut to `options.max_tokens`). `progress` gets the fraction done and may stop the work.
    pub fn train(
        bert: &Bert,
        inputs: &[Vec<u32>],
        targets: &[Vec<usize>],
        outputs: usize,
        options: &TuneOptions,
        progress: &mut dyn FnMut(f64) -> ControlFlow<()>,
    ) -> Result<Self> {
        let config = bert.config();
        if inputs.len() != targets.len() || inputs.is_empty() {
            return Err(Error::Format("tuning needs one target set per text, and a text".into()));
        }
        if outputs == 0 || outputs > MAX_OUTPUTS || targets.iter().flatten().any(|&t| t >= outputs) {
            return Err(Error::Format(format!("tuning needs 1 to {MAX_OUTPUTS} outputs")));
        }
        let tuned = options.layers.clamp(1, config.layers);
        let first = config.layers - tuned;
        let mut rng = lector_ml::Rng::new(options.seed);
        let mut chosen: Vec<usize> = (0..inputs.len()).collect();
        if chosen.len() > options.max_texts.max(1) {
            rng.shuffle(&mut chosen);
            chosen.truncate(options.max_texts.max(1));
            chosen.sort_unstable();
        }
        let batch = options.batch.max(1);
        let epochs = options.epochs.max(1);
        let steps = epochs * chosen.len().div_ceil(batch);

        // Work in token-layers: the frozen pass once, then forward and backward (about three
        // forward passes) of the tuned layers in every epoch.
        let tokens: usize = chosen.iter().map(|&i| inputs[i].len()).sum();
        let total = (tokens * (first + 3 * tuned * epochs)).max(1) as f64;
        let mut done = 0usize;
        let mut report = |done: usize| match progress(done as f64 / total) {
            ControlFlow::Continue(()) => Ok(()),
            ControlFlow::Break(()) => Err(Error::Cancelled),
        };

        let mut below = Vec::with_capacity(chosen.len());
        for (n, &i) in chosen.iter().enumerate() {
            below.push(bert.states_below(&inputs[i], first));
            done += inputs[i].len() * first;
            if n % 64 == 63 {
                report(done)?;
            }
        }

        let mut top = Self::start(bert, first, options.max_tokens, outputs, &mut rng);
        let mut shards: Vec<Self> = (0..SHARDS).map(|_| top.zeroed()).collect();
        let mut adam = Adam::new(&top);
        let mut order: Vec<usize> = (0..chosen.len()).collect();
        let threads = options.threads.clamp(1, SHARDS);
        let mut step = 0usize;
        for _ in 0..epochs {
            rng.shuffle(&mut order);
            for part in order.chunks(batch) {
                // Mean over the batch's texts and outputs, as binary cross-entropy averages.
                let scale = 1.0 / (part.len() * outputs) as f32;
                let texts: Vec<Text<'_>> = part
                    .iter()
                    .map(|&p| (below[p].as_slice(), targets[chosen[p]].as_slice()))
                    .collect();
                top.batch_gradient(config, &texts, scale, &mut shards, threads);
                done += part.iter().map(|&p| inputs[chosen[p]].len()).sum::<usize>() * 3 * tuned;
                let rate = options.rate_at(step, steps);
                adam.step(&mut top, &mut shards[0], rate, options.weight_decay);
                step += 1;
                report(done)?;
            }
        }
        Ok(top)
    }

    /// The encoder's layers from `first` on, and a head drawn uniformly from ±1/√hidden (the
    /// usual initialisation of a linear map).
    fn start(bert: &Bert, first: usize, max_tokens: usize, outputs: usize, rng: &mut lector_ml::Rng) -> Self {
        let h = bert.config().hidden;
        let mut top = Self {
            first,
            max_tokens,
            layers: bert.layers_from(first).to_vec(),
            head: Linear::zeros(h, outputs),
        };
        let bound = 1.0 / (h as f32).sqrt();
        for w in top.head.wt.iter_mut().chain(top.head.bias.iter_mut()) {
            *w = bound * (2.0 * rng.unit() as f32 - 1.0);
        }
        top
    }

    /// The first tuned layer: the ones below it are the encoder's own.
    pub fn first(&self) -> usize {
        self.first
    }

    /// One logit per output for a text's token ids.
    pub fn logits(&self, bert: &Bert, ids: &[u32]) -> Vec<f32> {
        let ids = &ids[..ids.len().min(self.max_tokens)];
        self.logits_from(bert, bert.states_below(ids, self.first))
    }

    /// One logit per output from the states after the encoder's first [`TunedTop::first`]
    /// layers.
    pub fn logits_from(&self, bert: &Bert, below: Vec<f32>) -> Vec<f32> {
        let config = bert.config();
        let x = apply_layers(&self.layers, config, below);
        let mut z = Vec::new();
        self.head.forward(&mean_rows(&x, config.hidden), &mut z);
        z
    }

    /// The gradient of a batch's loss, left in `shards[0]`. The texts are dealt to
    /// [`SHARDS`] fixed shards, each summed on its own and the shards added in order, so the
    /// sum is the same whatever the number of `threads` that work on them.
    fn batch_gradient(&self, config: &Config, texts: &[Text<'_>], scale: f32, shards: &mut [Self], threads: usize) {
        let per_shard = texts.len().div_ceil(shards.len()).max(1);
        let mut work: Vec<(&mut Self, &[Text<'_>])> = shards
            .iter_mut()
            .enumerate()
            .map(|(k, g)| {
                (
                    g,
                    texts
                        .get(k * per_shard..)
                        .map_or(&[][..], |t| &t[..per_shard.min(t.len())]),
                )
            })
            .collect();
        let per_thread = work.len().div_ceil(threads.max(1));
        std::thread::scope(|scope| {
            for group in work.chunks_mut(per_thread) {
                scope.spawn(move || {
                    for (grads, texts) in group.iter_mut() {
                        grads.zero();
                        for (below, positive) in texts.iter() {
                            self.backprop(config, below, positive, scale, grads);
                        }
                    }
                });
            }
        });
        let (first, rest) = shards.split_at_mut(1);
        for other in rest {
            for (sum, part) in first[0].tensors_mut().into_iter().zip(other.tensors_mut()) {
                axpy(sum, 1.0, part);
            }
        }
    }

    /// Runs one text forward, keeping what the backward pass needs, and adds the gradient of
    /// its loss (times `scale`) to `grads`.
    fn backprop(&self, config: &Config, below: &[f32], positive: &[usize], scale: f32, grads: &mut Self) {
        let h = config.hidden;
        let n = below.len() / h;
        if n == 0 {
            return;
        }
        let mut caches = Vec::with_capacity(self.layers.len());
        let mut x = below.to_vec();
        for layer in &self.layers {
            let (cache, out) = LayerCache::forward(layer, config, x, n);
            caches.push(cache);
            x = out;
        }
        let pooled = mean_rows(&x, h);
        let mut z = Vec::new();
        self.head.forward(&pooled, &mut z);
        let dz: Vec<f32> = z
            .iter()
            .enumerate()
            .map(|(k, &z)| (sigmoid(z) - f32::from(u8::from(positive.contains(&k)))) * scale)
            .collect();
        let mut d_pooled = vec![0.0; h];
        self.head.backward(&pooled, &dz, &mut grads.head, &mut d_pooled);
        let inv_n = 1.0 / n as f32;
        let mut dx: Vec<f32> = (0..n).flat_map(|_| d_pooled.iter().map(|d| d * inv_n)).collect();
        for ((layer, cache), grad) in self.layers.iter().zip(&caches).zip(&mut grads.layers).rev() {
            dx = cache.backward(layer, config, dx, grad);
        }
    }

    /// A copy with every weight 0: the shape of the gradients and of the optimiser's moments.
    fn zeroed(&self) -> Self {
        let mut z = self.clone();
        z.zero();
        z
    }

    fn zero(&mut self) {
        for t in self.tensors_mut() {
            t.fill(0.0);
        }
    }

    /// Every weight, in the fixed order of the optimiser and of the stored form.
    fn tensors_mut(&mut self) -> Vec<&mut Vec<f32>> {
        let mut out = Vec::new();
        for l in &mut self.layers {
            for lin in [&mut l.query, &mut l.key, &mut l.value, &mut l.attention_out] {
                out.extend([&mut lin.wt, &mut lin.bias]);
            }
            out.extend([&mut l.attention_norm.weight, &mut l.attention_norm.bias]);
            for lin in [&mut l.intermediate, &mut l.output] {
                out.extend([&mut lin.wt, &mut lin.bias]);
            }
            out.extend([&mut l.output_norm.weight, &mut l.output_norm.bias]);
        }
        out.extend([&mut self.head.wt, &mut self.head.bias]);
        out
    }

    /// The stored form: a header (magic, first tuned layer, layer count, sizes) and every
    /// weight as little-endian `f32`, each tensor after its length.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut copy = self.clone();
        let mut out = MAGIC.to_vec();
        let sizes = [
            self.first,
            self.layers.len(),
            self.head.input,
            self.layers.first().map_or(0, |l| l.intermediate.output),
            self.head.output,
            self.max_tokens,
        ];
        for v in sizes {
            out.extend_from_slice(&(v as u32).to_le_bytes());
        }
        for t in copy.tensors_mut() {
            out.extend_from_slice(&(t.len() as u32).to_le_bytes());
            for v in t.iter() {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        out
    }

    /// Reads what [`TunedTop::to_bytes`] wrote for this encoder; anything else is an error.
    pub fn from_bytes(bert: &Bert, bytes: &[u8]) -> Result<Self> {
        let bad = |what: &str| Error::Format(format!("tuned layers: {what}"));
        let mut at = 0usize;
        let mut take = |n: usize| -> Result<&[u8]> {
            let end = at
                .checked_add(n)
                .filter(|&e| e <= bytes.len())
                .ok_or_else(|| bad("truncated"))?;
            let s = &bytes[at..end];
            at = end;
            Ok(s)
        };
        if take(8)? != MAGIC {
            return Err(bad("not tuned encoder layers"));
        }
        let mut u32s = [0usize; 6];
        for v in &mut u32s {
            let b = take(4)?;
            *v = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
        }
        let [first, layers, hidden, inner, outputs, max_tokens] = u32s;
        let config = bert.config();
        if first.checked_add(layers) != Some(config.layers)
            || layers == 0
            || hidden != config.hidden
            || inner != config.intermediate
            || outputs == 0
            || outputs > MAX_OUTPUTS
            || max_tokens < 2
        {
            return Err(bad("they do not fit this encoder"));
        }
        let mut top = Self {
            first,
            max_tokens,
            layers: bert.layers_from(first).to_vec(),
            head: Linear::zeros(hidden, outputs),
        };
        for t in top.tensors_mut() {
            let b = take(4)?;
            if u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize != t.len() {
                return Err(bad("a tensor has the wrong size"));
            }
            let len = t.len();
            for (v, b) in t.iter_mut().zip(take(4 * len)?.chunks_exact(4)) {
                *v = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
        }
        if at != bytes.len() {
            return Err(bad("trailing data"));
        }
        Ok(top)
    }
}

fn sigmoid(z: f32) -> f32 {
    1.0 / (1.0 + (-z).exp())
}

/// Φ, the standard normal distribution function: BERT's exact GELU is `x Φ(x)`, as
/// [`crate::bert`] computes it.
fn normal_cdf(x: f32) -> f32 {
    0.5 * (1.0 + erf(x / std::f32::consts::SQRT_2))
}

/// The derivative of GELU at `x`, given `cdf` = Φ(x): `Φ(x) + x φ(x)`.
fn gelu_grad(x: f32, cdf: f32) -> f32 {
    let pdf = (-0.5 * x * x).exp() / (2.0 * std::f32::consts::PI).sqrt();
    cdf + x * pdf
}

/// `Σ a[i]·b[i]` in eight lanes (a fixed order the compiler can vectorise).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca.remainder().iter().zip(cb.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in ca.zip(cb) {
        for j in 0..8 {
            acc[j] += x[j] * y[j];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// `y += a·x`.
fn axpy(y: &mut [f32], a: f32, x: &[f32]) {
    for (y, &x) in y.iter_mut().zip(x) {
        *y += a * x;
    }
}

impl Linear {
    fn zeros(input: usize, output: usize) -> Self {
        Self {
            wt: vec![0.0; input * output],
            bias: vec![0.0; output],
            input,
            output,
        }
    }

    /// Given the input `x` and the gradient `dy` of the output, adds the weights' gradient to
    /// `grad` and the input's to `dx`.
    fn backward(&self, x: &[f32], dy: &[f32], grad: &mut Linear, dx: &mut [f32]) {
        let (input, output) = (self.input, self.output);
        let rows = dy.len() / output;
        for r in 0..rows {
            axpy(&mut grad.bias, 1.0, &dy[r * output..(r + 1) * output]);
        }
        // grad.wt (input × output) += xᵀ · dy; dx (rows × input) += dy · wtᵀ.
        let mut xt = vec![0.0f32; input * rows];
        for r in 0..rows {
            for i in 0..input {
                xt[i * rows + r] = x[r * input + i];
            }
        }
        add_product(&xt, rows, dy, output, &mut grad.wt);
        add_product_nt(dy, &self.wt, output, dx);
    }
}

/// `out += a · b`, with `a` of `rows × inner`, `b` of `inner × cols` and `out` of
/// `rows × cols`, all row-major. Tiles of 4 rows × 8 columns are summed in registers, as in
/// the forward pass.
fn add_product(a: &[f32], inner: usize, b: &[f32], cols: usize, out: &mut [f32]) {
    let rows = a.len() / inner.max(1);
    let mut r = 0;
    while r + 4 <= rows {
        let mut c = 0;
        while c + 8 <= cols {
            let mut acc = [[0.0f32; 8]; 4];
            for k in 0..inner {
                let w = &b[k * cols + c..k * cols + c + 8];
                for (i, acc) in acc.iter_mut().enumerate() {
                    let x = a[(r + i) * inner + k];
                    for (acc, &w) in acc.iter_mut().zip(w) {
                        *acc += x * w;
                    }
                }
            }
            for (i, acc) in acc.iter().enumerate() {
                let dst = &mut out[(r + i) * cols + c..(r + i) * cols + c + 8];
                for (d, &v) in dst.iter_mut().zip(acc) {
                    *d += v;
                }
            }
            c += 8;
        }
        for i in r..r + 4 {
            for cc in c..cols {
                out[i * cols + cc] += (0..inner).map(|k| a[i * inner + k] * b[k * cols + cc]).sum::<f32>();
            }
        }
        r += 4;
    }
    for i in r..rows {
        let dst = &mut out[i * cols..(i + 1) * cols];
        for k in 0..inner {
            axpy(dst, a[i * inner + k], &b[k * cols..(k + 1) * cols]);
        }
    }
}

/// `out += a · bᵀ`, with `a` of `rows × inner`, `b` of `n × inner` and `out` of `rows × n`:
/// every row of `a` against every row of `b`, in tiles of 2 × 4 rows summed in four lanes.
fn add_product_nt(a: &[f32], b: &[f32], inner: usize, out: &mut [f32]) {
    let rows = a.len() / inner.max(1);
    let n = b.len() / inner.max(1);
    let lanes = inner / 4 * 4;
    let mut r = 0;
    while r < rows {
        let tile_rows = (rows - r).min(2);
        let mut j = 0;
        while j < n {
            let tile_cols = (n - j).min(4);
            if tile_rows == 2 && tile_cols == 4 {
                let mut acc = [[[0.0f32; 4]; 4]; 2];
                let ar = [
                    &a[r * inner..r * inner + lanes],
                    &a[(r + 1) * inner..(r + 1) * inner + lanes],
                ];
                let br: [&[f32]; 4] = std::array::from_fn(|q| &b[(j + q) * inner..(j + q) * inner + lanes]);
                for o in (0..lanes).step_by(4) {
                    for (acc, a) in acc.iter_mut().zip(ar) {
                        for (acc, b) in acc.iter_mut().zip(br) {
                            for l in 0..4 {
                                acc[l] += a[o + l] * b[o + l];
                            }
                        }
                    }
                }
                for (p, acc) in acc.iter().enumerate() {
                    for (q, acc) in acc.iter().enumerate() {
                        let (ra, rb) = ((r + p) * inner, (j + q) * inner);
                        let tail = dot(&a[ra + lanes..ra + inner], &b[rb + lanes..rb + inner]);
                        out[(r + p) * n + j + q] += (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail;
                    }
                }
            } else {
                for p in r..r + tile_rows {
                    for q in j..j + tile_cols {
                        out[p * n + q] += dot(&a[p * inner..(p + 1) * inner], &b[q * inner..(q + 1) * inner]);
                    }
                }
            }
            j += tile_cols;
        }
        r += tile_rows;
    }
}

/// A layer norm's normalised input and inverse deviation per row, for its backward pass.
#[derive(Debug, Default)]
struct NormCache {
    normalised: Vec<f32>,
    inv: Vec<f32>,
}

impl NormCache {
    /// Applies `norm` to `x` in place, as [`LayerNorm`]'s forward pass does, remembering what
    /// the backward pass needs.
    fn forward(norm: &LayerNorm, x: &mut [f32]) -> Self {
        let width = norm.weight.len();
        let mut cache = Self {
            normalised: Vec::with_capacity(x.len()),
            inv: Vec::with_capacity(x.len() / width),
        };
        for row in x.chunks_exact_mut(width) {
            let n = row.len() as f32;
            let mean = row.iter().sum::<f32>() / n;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n;
            let inv = 1.0 / (var + norm.eps).sqrt();
            cache.inv.push(inv);
            for ((v, &w), &b) in row.iter_mut().zip(&norm.weight).zip(&norm.bias) {
                let xhat = (*v - mean) * inv;
                cache.normalised.push(xhat);
                *v = xhat * w + b;
            }
        }
        cache
    }

    /// The input's gradient from the output's `dy`; adds the weights' gradient to `grad`.
    fn backward(&self, norm: &LayerNorm, dy: &[f32], grad: &mut LayerNorm) -> Vec<f32> {
        let width = norm.weight.len();
        let mut dx = vec![0.0f32; dy.len()];
        let mut g = vec![0.0f32; width];
        for (r, (dyr, dxr)) in dy.chunks_exact(width).zip(dx.chunks_exact_mut(width)).enumerate() {
            let xhat = &self.normalised[r * width..(r + 1) * width];
            for j in 0..width {
                grad.weight[j] += dyr[j] * xhat[j];
                grad.bias[j] += dyr[j];
                g[j] = dyr[j] * norm.weight[j];
            }
            let mean_g = g.iter().sum::<f32>() / width as f32;
            let mean_gx = dot(&g, xhat) / width as f32;
            let inv = self.inv[r];
            for j in 0..width {
                dxr[j] = inv * (g[j] - mean_g - xhat[j] * mean_gx);
            }
        }
        dx
    }
}

/// What one layer's backward pass needs from its forward pass.
struct LayerCache {
    n: usize,
    input: Vec<f32>,
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    /// Attention probabilities, `heads × n × n`.
    probs: Vec<f32>,
    context: Vec<f32>,
    attention_norm: NormCache,
    /// The attention block's output, the feed-forward block's input.
    middle: Vec<f32>,
    /// The intermediate map's output, Φ of it (GELU is `x Φ(x)`), and GELU of it.
    pre: Vec<f32>,
    cdf: Vec<f32>,
    act: Vec<f32>,
    output_norm: NormCache,
}

impl LayerCache {
    /// `layer` applied to `x` (`n × hidden`): the cache and the output.
    fn forward(layer: &Layer, config: &Config, x: Vec<f32>, n: usize) -> (Self, Vec<f32>) {
        let (h, heads) = (config.hidden, config.heads);
        let d = h / heads;
        let scale = 1.0 / (d as f32).sqrt();
        let (mut q, mut k, mut v) = (Vec::new(), Vec::new(), Vec::new());
        layer.query.forward(&x, &mut q);
        layer.key.forward(&x, &mut k);
        layer.value.forward(&x, &mut v);
        let mut probs = vec![0.0f32; heads * n * n];
        let mut context = vec![0.0f32; n * h];
        for head in 0..heads {
            let off = head * d;
            for i in 0..n {
                let p = &mut probs[(head * n + i) * n..(head * n + i + 1) * n];
                let qi = &q[i * h + off..i * h + off + d];
                let mut max = f32::NEG_INFINITY;
                for (j, s) in p.iter_mut().enumerate() {
                    *s = qi
                        .iter()
                        .zip(&k[j * h + off..j * h + off + d])
                        .map(|(a, b)| a * b)
                        .sum::<f32>()
                        * scale;
                    max = max.max(*s);
                }
                let mut total = 0.0;
                for s in p.iter_mut() {
                    *s = (*s - max).exp();
                    total += *s;
                }
                let c = &mut context[i * h + off..i * h + off + d];
                for (j, s) in p.iter_mut().enumerate() {
                    *s /= total;
                    axpy(c, *s, &v[j * h + off..j * h + off + d]);
                }
            }
        }
        let mut middle = Vec::new();
        layer.attention_out.forward(&context, &mut middle);
        for (m, &a) in middle.iter_mut().zip(&x) {
            *m += a;
        }
        let attention_norm = NormCache::forward(&layer.attention_norm, &mut middle);
        let mut pre = Vec::new();
        layer.intermediate.forward(&middle, &mut pre);
        let cdf: Vec<f32> = pre.iter().map(|&p| normal_cdf(p)).collect();
        let act: Vec<f32> = pre.iter().zip(&cdf).map(|(&p, &c)| p * c).collect();
        let mut out = Vec::new();
        layer.output.forward(&act, &mut out);
        for (o, &m) in out.iter_mut().zip(&middle) {
            *o += m;
        }
        let output_norm = NormCache::forward(&layer.output_norm, &mut out);
        let cache = Self {
            n,
            input: x,
            q,
            k,
            v,
            probs,
            context,
            attention_norm,
            middle,
            pre,
            cdf,
            act,
            output_norm,
        };
        (cache, out)
    }

    /// The input's gradient from the output's `dy`; adds the layer's gradient to `grad`.
    fn backward(&self, layer: &Layer, config: &Config, dy: Vec<f32>, grad: &mut Layer) -> Vec<f32> {
        let (h, heads, n) = (config.hidden, config.heads, self.n);
        let d = h / heads;
        let scale = 1.0 / (d as f32).sqrt();
        // Feed-forward block: out = norm(middle + output(gelu(intermediate(middle)))).
        let d_sum = self
            .output_norm
            .backward(&layer.output_norm, &dy, &mut grad.output_norm);
        let mut d_act = vec![0.0f32; self.act.len()];
        layer.output.backward(&self.act, &d_sum, &mut grad.output, &mut d_act);
        for ((g, &p), &c) in d_act.iter_mut().zip(&self.pre).zip(&self.cdf) {
            *g *= gelu_grad(p, c);
        }
        let mut d_middle = d_sum;
        layer
            .intermediate
            .backward(&self.middle, &d_act, &mut grad.intermediate, &mut d_middle);
        // Attention block: middle = norm(x + attention_out(context)).
        let d_sum = self
            .attention_norm
            .backward(&layer.attention_norm, &d_middle, &mut grad.attention_norm);
        let mut d_context = vec![0.0f32; n * h];
        layer
            .attention_out
            .backward(&self.context, &d_sum, &mut grad.attention_out, &mut d_context);
        let (mut dq, mut dk, mut dv) = (vec![0.0f32; n * h], vec![0.0f32; n * h], vec![0.0f32; n * h]);
        let mut dp = vec![0.0f32; n];
        for head in 0..heads {
            let off = head * d;
            for i in 0..n {
                let p = &self.probs[(head * n + i) * n..(head * n + i + 1) * n];
                let dc = &d_context[i * h + off..i * h + off + d];
                for j in 0..n {
                    dp[j] = dot(dc, &self.v[j * h + off..j * h + off + d]);
                    axpy(&mut dv[j * h + off..j * h + off + d], p[j], dc);
                }
                let s = dot(p, &dp);
                for j in 0..n {
                    let ds = p[j] * (dp[j] - s) * scale;
                    axpy(
                        &mut dq[i * h + off..i * h + off + d],
                        ds,
                        &self.k[j * h + off..j * h + off + d],
                    );
                    axpy(
                        &mut dk[j * h + off..j * h + off + d],
                        ds,
                        &self.q[i * h + off..i * h + off + d],
                    );
                }
            }
        }
        let mut dx = d_sum;
        layer.query.backward(&self.input, &dq, &mut grad.query, &mut dx);
        layer.key.backward(&self.input, &dk, &mut grad.key, &mut dx);
        layer.value.backward(&self.input, &dv, &mut grad.value, &mut dx);
        dx
    }
}

/// AdamW's moment estimates, shaped like the weights.
struct Adam {
    m: TunedTop,
    v: TunedTop,
    t: i32,
}

impl Adam {
    const BETA1: f32 = 0.9;
    const BETA2: f32 = 0.999;
    const EPS: f32 = 1e-8;

    fn new(top: &TunedTop) -> Self {
        Self {
            m: top.zeroed(),
            v: top.zeroed(),
            t: 0,
        }
    }

    /// One step with decoupled weight decay (the weights shrink by `lr·decay` first).
    fn step(&mut self, top: &mut TunedTop, grads: &mut TunedTop, lr: f32, decay: f32) {
        self.t += 1;
        let c1 = 1.0 - Self::BETA1.powi(self.t);
        let c2 = 1.0 - Self::BETA2.powi(self.t);
        let tensors = top
            .tensors_mut()
            .into_iter()
            .zip(grads.tensors_mut())
            .zip(self.m.tensors_mut().into_iter().zip(self.v.tensors_mut()));
        for ((w, g), (m, v)) in tensors {
            for (((w, &g), m), v) in w.iter_mut().zip(g.iter()).zip(m.iter_mut()).zip(v.iter_mut()) {
                *w *= 1.0 - lr * decay;
                *m = Self::BETA1 * *m + (1.0 - Self::BETA1) * g;
                *v = Self::BETA2 * *v + (1.0 - Self::BETA2) * g * g;
                *w -= lr * (*m / c1) / ((*v / c2).sqrt() + Self::EPS);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::safetensors::Tensors;
    use crate::testing::values;

    /// The tiny encoder with random layer norms, so that every gradient matters.
    fn tiny_bert() -> Bert {
        let (config, weights) = crate::testing::tiny_parts(false);
        Bert::load(Config::from_json(&config).unwrap(), &Tensors::parse(weights).unwrap()).unwrap()
    }

    fn options(layers: usize) -> TuneOptions {
        TuneOptions {
            layers,
            epochs: 40,
            batch: 3,
            learning_rate: 2e-2,
            ..TuneOptions::default()
        }
    }

    /// Binary cross-entropy, in f64, of the text whose frozen states are `below`.
    fn loss(top: &TunedTop, bert: &Bert, below: &[f32], positive: &[usize]) -> f64 {
        let z = top.logits_from(bert, below.to_vec());
        let k = z.len() as f64;
        z.iter()
            .enumerate()
            .map(|(o, &z)| {
                let p = f64::from(sigmoid(z)).clamp(1e-12, 1.0 - 1e-12);
                if positive.contains(&o) {
                    -p.ln()
                } else {
                    -(1.0 - p).ln()
                }
            })
            .sum::<f64>()
            / k
    }

    #[test]
    fn matrix_products_match_plain_loops() {
        for (rows, inner, cols) in [(9usize, 7usize, 19usize), (4, 16, 8), (1, 3, 2), (6, 13, 5)] {
            let a = values(1, rows * inner);
            let b = values(2, inner * cols);
            let mut out = values(3, rows * cols);
            let start = out.clone();
            add_product(&a, inner, &b, cols, &mut out);
            let bt: Vec<f32> = (0..cols * inner).map(|x| b[(x % inner) * cols + x / inner]).collect();
            let mut out_nt = start.clone();
            add_product_nt(&a, &bt, inner, &mut out_nt);
            for r in 0..rows {
                for c in 0..cols {
                    let want =
                        start[r * cols + c] + (0..inner).map(|k| a[r * inner + k] * b[k * cols + c]).sum::<f32>();
                    assert!((out[r * cols + c] - want).abs() < 1e-5, "a·b ({r}, {c})");
                    assert!((out_nt[r * cols + c] - want).abs() < 1e-5, "a·bᵀ ({r}, {c})");
                }
            }
        }
    }

    #[test]
    fn gradients_match_finite_differences() {
        let bert = tiny_bert();
        let ids = [2u32, 4, 5, 6, 7, 3];
        let positive = [1usize];
        let mut top = TunedTop {
            first: 0,
            max_tokens: 16,
            layers: bert.layers_from(0).to_vec(),
            head: Linear::zeros(8, 3),
        };
        for (w, v) in top.head.wt.iter_mut().zip(values(99, 24)) {
            *w = v;
        }
        let below = bert.states_below(&ids, 0);
        let mut grads = top.zeroed();
        top.backprop(bert.config(), &below, &positive, 1.0 / 3.0, &mut grads);
        let analytic: Vec<Vec<f32>> = grads.tensors_mut().into_iter().map(|t| t.clone()).collect();
        let mut checked = 0;
        for (tensor, weights) in analytic.iter().enumerate() {
            for index in [0, 5, 13] {
                if index >= weights.len() {
                    continue;
                }
                let eps = 1e-2f32;
                let mut plus = top.clone();
                plus.tensors_mut()[tensor][index] += eps;
                let mut minus = top.clone();
                minus.tensors_mut()[tensor][index] -= eps;
                let numeric = (loss(&plus, &bert, &below, &positive) - loss(&minus, &bert, &below, &positive))
                    / (2.0 * f64::from(eps));
                let a = f64::from(weights[index]);
                assert!(
                    (a - numeric).abs() <= 2e-3 + 0.05 * numeric.abs(),
                    "tensor {tensor}, index {index}: backprop {a}, finite difference {numeric}"
                );
                checked += 1;
            }
        }
        assert!(checked > 40, "only {checked} weights checked");
    }

    #[test]
    fn tuning_learns_a_tiny_task_the_same_way_every_time() {
        let bert = tiny_bert();
        let inputs = vec![
            vec![2, 4, 5, 6, 7, 3],
            vec![2, 8, 9, 3],
            vec![2, 5, 7, 3],
            vec![2, 9, 10, 8, 3],
        ];
        let targets = vec![vec![0], vec![1], vec![0], vec![1]];
        let mut fractions = Vec::new();
        let mut progress = |f: f64| {
            fractions.push(f);
            ControlFlow::Continue(())
        };
        let top = TunedTop::train(&bert, &inputs, &targets, 2, &options(1), &mut progress).unwrap();
        assert!(fractions.windows(2).all(|w| w[0] <= w[1]) && fractions.last().is_some_and(|&f| f > 0.99));
        for (ids, t) in inputs.iter().zip(&targets) {
            let z = top.logits(&bert, ids);
            assert!(z[t[0]] > 0.0 && z[1 - t[0]] < 0.0, "{ids:?}: {z:?}");
        }
        for threads in [1, 3] {
            let opts = TuneOptions { threads, ..options(1) };
            let again =
                TunedTop::train(&bert, &inputs, &targets, 2, &opts, &mut |_| ControlFlow::Continue(())).unwrap();
            assert_eq!(top.to_bytes(), again.to_bytes(), "{threads} threads");
        }
        let loaded = TunedTop::from_bytes(&bert, &top.to_bytes()).unwrap();
        assert_eq!(loaded, top);
        assert_eq!(loaded.logits(&bert, &inputs[0]), top.logits(&bert, &inputs[0]));
    }

    #[test]
    fn tuning_can_be_cancelled_and_refuses_bad_targets() {
        let bert = tiny_bert();
        let inputs = vec![vec![2u32, 4, 3], vec![2, 8, 3]];
        let stop = TunedTop::train(&bert, &inputs, &[vec![0], vec![1]], 2, &options(2), &mut |_| {
            ControlFlow::Break(())
        });
        assert!(matches!(stop, Err(Error::Cancelled)));
        let bad = TunedTop::train(&bert, &inputs, &[vec![0], vec![5]], 2, &options(2), &mut |_| {
            ControlFlow::Continue(())
        });
        assert!(matches!(bad, Err(Error::Format(_))));
    }

    #[test]
    fn damaged_tuned_weights_are_refused_without_a_panic() {
        let bert = tiny_bert();
        let inputs = vec![vec![2u32, 4, 3], vec![2, 8, 3]];
        let top = TunedTop::train(&bert, &inputs, &[vec![0], vec![1]], 2, &options(2), &mut |_| {
            ControlFlow::Continue(())
        })
        .unwrap();
        let bytes = top.to_bytes();
        for cut in 0..bytes.len() {
            assert!(TunedTop::from_bytes(&bert, &bytes[..cut]).is_err(), "cut at {cut}");
        }
        for at in (0..40).chain([bytes.len() - 1]) {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x5a;
            // Flipping a weight's bits is a different model, not an error; the header is checked.
            if let Ok(t) = TunedTop::from_bytes(&bert, &damaged) {
                assert_ne!(t, top, "byte {at}");
            }
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(TunedTop::from_bytes(&bert, &longer).is_err());
    }
}
