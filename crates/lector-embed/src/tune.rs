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
//!
//! Here the options, the tuning loop and the per-text forward and backward passes; the calculus
//! of each piece in `maths`, AdamW and the learning-rate schedule in `optimiser`, the stored
//! form in `stored`. With only a few examples per label the layers are tuned on pairs of
//! examples instead, without a head (`pairs`, as SetFit does).

mod maths;
mod optimiser;
mod pairs;
mod stored;

pub use pairs::PairTuneOptions;

use std::ops::ControlFlow;

use crate::bert::{Bert, Config, Layer, Linear, apply_layers, mean_rows};
use crate::error::{Error, Result};
use maths::{LayerCache, axpy, sigmoid};
use optimiser::Adam;

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

    /// Whether the copy has a head (tuned to classes); without one (tuned on pairs) it gives
    /// token states for a sentence vector ([`TunedTop::states_from`]) and no logits.
    pub fn has_head(&self) -> bool {
        self.head.output > 0
    }

    /// The tuned layers' output states, from the states after the encoder's first
    /// [`TunedTop::first`] layers.
    pub fn states_from(&self, bert: &Bert, below: Vec<f32>) -> Vec<f32> {
        apply_layers(&self.layers, bert.config(), below)
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
}

/// What the tests of both tunings share: the encoder they tune and the gradient check.
#[cfg(test)]
pub(crate) mod test_support {
    use super::TunedTop;
    use crate::bert::{Bert, Config};
    use crate::safetensors::Tensors;

    /// The tiny encoder with random layer norms, so that every gradient matters.
    pub(crate) fn tiny_bert() -> Bert {
        let (config, weights) = crate::testing::tiny_parts(false);
        Bert::load(Config::from_json(&config).unwrap(), &Tensors::parse(weights).unwrap()).unwrap()
    }

    /// Checks `analytic`, a gradient per tensor of `top`, against central finite differences of
    /// `loss` at `indices` of each tensor (those it has); `what` names the case in a failure.
    pub(crate) fn check_gradients(
        top: &TunedTop,
        analytic: &[Vec<f32>],
        indices: &[usize],
        loss: impl Fn(&TunedTop) -> f64,
        what: &str,
    ) {
        let eps = 1e-2f32;
        let mut checked = 0;
        for (tensor, weights) in analytic.iter().enumerate() {
            for &index in indices.iter().filter(|&&i| i < weights.len()) {
                let mut plus = top.clone();
                plus.tensors_mut()[tensor][index] += eps;
                let mut minus = top.clone();
                minus.tensors_mut()[tensor][index] -= eps;
                let numeric = (loss(&plus) - loss(&minus)) / (2.0 * f64::from(eps));
                let a = f64::from(weights[index]);
                assert!(
                    (a - numeric).abs() <= 2e-3 + 0.05 * numeric.abs(),
                    "{what}tensor {tensor}, index {index}: backprop {a}, finite difference {numeric}"
                );
                checked += 1;
            }
        }
        assert!(checked > 40, "only {checked} weights checked");
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::{check_gradients, tiny_bert};
    use super::*;
    use crate::testing::values;

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
        check_gradients(&top, &analytic, &[0, 5, 13], |t| loss(t, &bert, &below, &positive), "");
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
