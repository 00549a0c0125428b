//! Contrastive tuning of the encoder's top layers on pairs of a few labelled texts, as SetFit
//! does (Tunstall et al., 2022): with eight examples per label a classification head tuned
//! with the layers overfits, but every pair of examples says something (same label or not),
//! and there are far more pairs than examples. The sentence vectors of texts of the same
//! label are pulled together (cosine similarity towards 1) and those of different labels
//! apart (towards 0); the classifier is then trained on the tuned vectors (in `lector-ml`, the
//! main head beside the n-grams).
//!
//! Each optimiser step takes a batch of texts from a seeded shuffle and scores **every** pair
//! within it (squared error of the cosine against its target, the positive and the negative
//! pairs weighted to count equally), so a text runs forward and backward once a step however
//! many pairs it is in. The tuned copy has no head: its output is the mean of its top layer's
//! token states, scaled to unit length, like the encoder's own vector. Steps, learning rate and
//! batch were chosen on training rows outside the few-shot subsets (`docs/BENCHMARKS.md`);
//! like the classification tuning, the result is the same bit for bit for a seed, whatever the
//! number of threads.

use std::ops::ControlFlow;

use super::maths::{LayerCache, axpy, dot};
use super::optimiser::Adam;
use super::{SHARDS, TuneOptions, TunedTop};
use crate::bert::{Bert, Config, Linear, mean_rows};
use crate::error::{Error, Result};

/// How the top layers are tuned on pairs.
#[derive(Debug, Clone)]
pub struct PairTuneOptions {
    /// How many of the top layers are tuned.
    pub layers: usize,
    /// Passes over the texts, at least (see `min_steps`).
    pub epochs: usize,
    /// At least this many optimiser steps, however few the texts.
    pub min_steps: usize,
    /// Texts per step; every pair among them is scored.
    pub batch: usize,
    pub learning_rate: f32,
    pub weight_decay: f32,
    /// Share of the steps over which the learning rate rises from 0 before it decays to 0.
    pub warmup: f32,
    /// Texts are cut to this many tokens, in training and in prediction alike.
    pub max_tokens: usize,
    pub seed: u64,
    /// Threads for a batch's forward and backward passes (at most 4; no effect on the result).
    pub threads: usize,
    /// 0: the squared error of the cosines (SetFit's loss); above 0, the supervised
    /// contrastive loss (Khosla et al., 2020) at this temperature instead.
    pub temperature: f32,
}

impl Default for PairTuneOptions {
    fn default() -> Self {
        Self {
            layers: 2,
            epochs: 4,
            min_steps: 10,
            batch: 16,
            learning_rate: 1e-4,
            weight_decay: 0.01,
            warmup: 0.1,
            max_tokens: 128,
            seed: 0,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            temperature: 0.0,
        }
    }
}

/// One text of a batch after the forward pass: what its backward pass needs, its mean state
/// and that mean's length.
struct Forward {
    caches: Vec<LayerCache>,
    rows: usize,
    mean: Vec<f32>,
    norm: f32,
}

/// A shard's gradient and the texts it takes back: their forward passes and the gradients of
/// their mean states.
type ShardWork<'a> = (&'a mut TunedTop, &'a [Forward], &'a [Vec<f32>]);

impl TunedTop {
    /// Tunes the top layers of `bert` so that the unit mean of their states is close for
    /// texts of the same `labels` entry (cosine towards one) and orthogonal for different ones
    /// (cosine towards zero). `inputs` are each text's token ids, already cut to
    /// `options.max_tokens`. `progress` gets the fraction done and may stop the work.
    pub fn train_pairs(
        bert: &Bert,
        inputs: &[Vec<u32>],
        labels: &[usize],
        options: &PairTuneOptions,
        progress: &mut dyn FnMut(f64) -> ControlFlow<()>,
    ) -> Result<Self> {
        let config = bert.config();
        if inputs.len() != labels.len() || inputs.len() < 2 {
            return Err(Error::Format(
                "pair tuning needs a label per text, and two texts".into(),
            ));
        }
        let tuned = options.layers.clamp(1, config.layers);
        let first = config.layers - tuned;
        let batch = options.batch.max(2);
        let per_epoch = inputs.len().div_ceil(batch);
        let steps = (options.epochs * per_epoch).max(options.min_steps).max(1);
        let tokens: usize = inputs.iter().map(Vec::len).sum();
        // Work in token-layers: the frozen pass once, then about three passes per tuned layer
        // for each text of each step.
        let per_step = (tokens as f64 / inputs.len() as f64) * batch.min(inputs.len()) as f64;
        let total = (tokens * first) as f64 + per_step * (3 * tuned * steps) as f64;
        let mut done = 0.0f64;
        let mut report = |done: f64| match progress(done / total.max(1.0)) {
            ControlFlow::Continue(()) => Ok(()),
            ControlFlow::Break(()) => Err(Error::Cancelled),
        };
        let mut below = Vec::with_capacity(inputs.len());
        for (n, ids) in inputs.iter().enumerate() {
            below.push(bert.states_below(ids, first));
            done += (ids.len() * first) as f64;
            if n % 64 == 63 {
                report(done)?;
            }
        }

        let mut rng = lector_ml::Rng::new(options.seed);
        let mut top = Self {
            first,
            max_tokens: options.max_tokens,
            layers: bert.layers_from(first).to_vec(),
            head: Linear::zeros(config.hidden, 0),
        };
        let mut shards: Vec<Self> = (0..SHARDS).map(|_| top.zeroed()).collect();
        let mut adam = Adam::new(&top);
        let schedule = TuneOptions {
            learning_rate: options.learning_rate,
            warmup: options.warmup,
            ..TuneOptions::default()
        };
        let threads = options.threads.clamp(1, SHARDS);
        let mut order: Vec<usize> = Vec::new();
        for step in 0..steps {
            // Batches walk through seeded shuffles of the texts, one after another.
            if order.len() < batch.min(inputs.len()) {
                let mut next: Vec<usize> = (0..inputs.len()).collect();
                rng.shuffle(&mut next);
                order.extend(next);
            }
            let part: Vec<usize> = order.drain(..batch.min(inputs.len())).collect();
            let texts: Vec<&[f32]> = part.iter().map(|&p| below[p].as_slice()).collect();
            let classes: Vec<usize> = part.iter().map(|&p| labels[p]).collect();
            top.pair_gradient(config, &texts, &classes, options.temperature, &mut shards, threads);
            done += per_step * (3 * tuned) as f64;
            let rate = schedule.rate_at(step, steps);
            adam.step(&mut top, &mut shards[0], rate, options.weight_decay);
            report(done)?;
        }
        Ok(top)
    }

    /// The gradient of a batch's pair loss, left in `shards[0]`: every text forward (dealt to
    /// the fixed shards, on up to `threads` threads), the loss of every pair, then every text
    /// backward into its shard, and the shards summed in order.
    fn pair_gradient(
        &self,
        config: &Config,
        texts: &[&[f32]],
        classes: &[usize],
        temperature: f32,
        shards: &mut [Self],
        threads: usize,
    ) {
        let h = config.hidden;
        let per_shard = texts.len().div_ceil(shards.len()).max(1);
        let dealt: Vec<&[&[f32]]> = (0..shards.len())
            .map(|k| {
                texts
                    .get(k * per_shard..)
                    .map_or(&[][..], |t| &t[..per_shard.min(t.len())])
            })
            .collect();
        let per_thread = dealt.len().div_ceil(threads.max(1));
        let forwards: Vec<Forward> = std::thread::scope(|scope| {
            let handles: Vec<_> = dealt
                .chunks(per_thread)
                .map(|group| {
                    scope.spawn(move || {
                        group
                            .iter()
                            .flat_map(|texts| texts.iter().map(|below| self.forward_keep(config, below)))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        });
        let d_means = if temperature > 0.0 {
            supcon_gradient(&forwards, classes, h, temperature)
        } else {
            pair_loss_gradient(&forwards, classes, h)
        };
        let mut work: Vec<ShardWork<'_>> = shards
            .iter_mut()
            .enumerate()
            .map(|(k, g)| {
                let from = (k * per_shard).min(forwards.len());
                let to = ((k + 1) * per_shard).min(forwards.len());
                (g, &forwards[from..to], &d_means[from..to])
            })
            .collect();
        std::thread::scope(|scope| {
            for group in work.chunks_mut(per_thread) {
                scope.spawn(move || {
                    for (grads, forwards, d_means) in group.iter_mut() {
                        grads.zero();
                        for (f, d_mean) in forwards.iter().zip(d_means.iter()) {
                            self.backward_from(config, f, d_mean, grads);
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

    /// One text through the tuned layers, keeping what the backward pass needs.
    fn forward_keep(&self, config: &Config, below: &[f32]) -> Forward {
        let h = config.hidden;
        let rows = below.len() / h;
        let mut caches = Vec::with_capacity(self.layers.len());
        let mut x = below.to_vec();
        for layer in &self.layers {
            let (cache, out) = LayerCache::forward(layer, config, x, rows.max(1));
            caches.push(cache);
            x = out;
        }
        let mean = mean_rows(&x, h);
        let norm = dot(&mean, &mean).sqrt().max(1e-12);
        Forward {
            caches,
            rows,
            mean,
            norm,
        }
    }

    /// Adds to `grads` the gradient of the loss through one text, given that of its mean state.
    fn backward_from(&self, config: &Config, f: &Forward, d_mean: &[f32], grads: &mut Self) {
        if f.rows == 0 {
            return;
        }
        let inv_n = 1.0 / f.rows as f32;
        let mut dx: Vec<f32> = (0..f.rows).flat_map(|_| d_mean.iter().map(|d| d * inv_n)).collect();
        for ((layer, cache), grad) in self.layers.iter().zip(&f.caches).zip(&mut grads.layers).rev() {
            dx = cache.backward(layer, config, dx, grad);
        }
    }
}

/// The pair loss of a batch, `Σ w (cos(i, j) − [same label])²` over its pairs, with the
/// positive pairs' weights summing to ½ and the negative ones' to ½ (to 1 if there is only
/// one kind), and its gradient with respect to each text's mean state.
fn pair_loss_gradient(forwards: &[Forward], classes: &[usize], h: usize) -> Vec<Vec<f32>> {
    let n = forwards.len();
    let units = unit_vectors(forwards);
    let pairs = n * n.saturating_sub(1) / 2;
    let positive = (0..n)
        .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
        .filter(|&(i, j)| classes[i] == classes[j])
        .count();
    let negative = pairs - positive;
    let share = if positive > 0 && negative > 0 { 0.5 } else { 1.0 };
    let weight = |same: bool| {
        let count = if same { positive } else { negative };
        share / count.max(1) as f32
    };
    let mut d_units = vec![vec![0.0f32; h]; n];
    for i in 0..n {
        for j in i + 1..n {
            let same = classes[i] == classes[j];
            let cos = dot(&units[i], &units[j]);
            let d_cos = 2.0 * (cos - f32::from(u8::from(same))) * weight(same);
            axpy(&mut d_units[i], d_cos, &units[j]);
            axpy(&mut d_units[j], d_cos, &units[i]);
        }
    }
    through_norm(d_units, &units, forwards)
}

/// The unit vectors of the texts' mean states.
fn unit_vectors(forwards: &[Forward]) -> Vec<Vec<f32>> {
    forwards
        .iter()
        .map(|f| f.mean.iter().map(|m| m / f.norm).collect())
        .collect()
}

/// The supervised contrastive loss of a batch: for each text with another of its label, minus
/// the mean over those of the log-softmax (over all other texts) of the cosines divided by
/// `temperature`, averaged over such texts; and its gradient with respect to each mean state.
fn supcon_gradient(forwards: &[Forward], classes: &[usize], h: usize, temperature: f32) -> Vec<Vec<f32>> {
    let n = forwards.len();
    let units = unit_vectors(forwards);
    let anchors = (0..n)
        .filter(|&i| (0..n).any(|j| j != i && classes[j] == classes[i]))
        .count();
    let mut d_units = vec![vec![0.0f32; h]; n];
    for i in 0..n {
        let positives = (0..n).filter(|&j| j != i && classes[j] == classes[i]).count();
        if positives == 0 {
            continue;
        }
        let logits: Vec<f32> = (0..n).map(|j| dot(&units[i], &units[j]) / temperature).collect();
        let max = (0..n)
            .filter(|&j| j != i)
            .map(|j| logits[j])
            .fold(f32::NEG_INFINITY, f32::max);
        let total: f32 = (0..n).filter(|&j| j != i).map(|j| (logits[j] - max).exp()).sum();
        for j in (0..n).filter(|&j| j != i) {
            let p = (logits[j] - max).exp() / total;
            let target = if classes[j] == classes[i] {
                1.0 / positives as f32
            } else {
                0.0
            };
            let d_cos = (p - target) / (temperature * anchors as f32);
            axpy(&mut d_units[i], d_cos, &units[j]);
            axpy(&mut d_units[j], d_cos, &units[i]);
        }
    }
    through_norm(d_units, &units, forwards)
}

/// The gradients of the unit vectors taken through the scaling to unit length:
/// d mean = (d u − (d u · u) u) / |mean|.
fn through_norm(d_units: Vec<Vec<f32>>, units: &[Vec<f32>], forwards: &[Forward]) -> Vec<Vec<f32>> {
    d_units
        .into_iter()
        .zip(units)
        .zip(forwards)
        .map(|((du, u), f)| {
            let along = dot(&du, u);
            du.iter().zip(u).map(|(d, u)| (d - along * u) / f.norm).collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bert::apply_layers;
    use crate::tune::test_support::{check_gradients, tiny_bert};

    /// Four short texts of the tiny vocabulary: two of label 0, two of label 1.
    fn texts() -> (Vec<Vec<u32>>, Vec<usize>) {
        (
            vec![
                vec![2, 4, 5, 6, 7, 3],
                vec![2, 5, 7, 11, 3],
                vec![2, 8, 9, 3],
                vec![2, 9, 10, 8, 6, 3],
            ],
            vec![0, 0, 1, 1],
        )
    }

    /// The unit mean vector of each text through `top`.
    fn vectors(top: &TunedTop, bert: &Bert, inputs: &[Vec<u32>]) -> Vec<Vec<f32>> {
        inputs
            .iter()
            .map(|ids| {
                let x = apply_layers(&top.layers, bert.config(), bert.states_below(ids, top.first));
                let m = mean_rows(&x, bert.config().hidden);
                let n = dot(&m, &m).sqrt();
                m.iter().map(|v| v / n).collect()
            })
            .collect()
    }

    /// The loss of `pair_loss_gradient` (`temperature` 0) or of `supcon_gradient`, in f64.
    fn loss(top: &TunedTop, bert: &Bert, inputs: &[Vec<u32>], labels: &[usize], temperature: f32) -> f64 {
        let u = vectors(top, bert, inputs);
        if temperature > 0.0 {
            let t = f64::from(temperature);
            let n = u.len();
            let mut total = 0.0;
            let mut anchors = 0;
            for i in 0..n {
                let pos: Vec<usize> = (0..n).filter(|&j| j != i && labels[j] == labels[i]).collect();
                if pos.is_empty() {
                    continue;
                }
                anchors += 1;
                let s = |j: usize| f64::from(dot(&u[i], &u[j])) / t;
                let log_total = (0..n).filter(|&j| j != i).map(|j| s(j).exp()).sum::<f64>().ln();
                total -= pos.iter().map(|&p| s(p) - log_total).sum::<f64>() / pos.len() as f64;
            }
            return total / f64::from(anchors);
        }
        let (mut pos, mut neg) = ((0.0, 0usize), (0.0, 0usize));
        for i in 0..u.len() {
            for j in i + 1..u.len() {
                let same = labels[i] == labels[j];
                let e = f64::from(dot(&u[i], &u[j])) - if same { 1.0 } else { 0.0 };
                let acc = if same { &mut pos } else { &mut neg };
                acc.0 += e * e;
                acc.1 += 1;
            }
        }
        0.5 * pos.0 / pos.1 as f64 + 0.5 * neg.0 / neg.1 as f64
    }

    /// Mean cosine of the same-label pairs minus that of the different-label pairs.
    fn separation(u: &[Vec<f32>], labels: &[usize]) -> f32 {
        let (mut same, mut other) = (Vec::new(), Vec::new());
        for i in 0..u.len() {
            for j in i + 1..u.len() {
                let c = dot(&u[i], &u[j]);
                if labels[i] == labels[j] {
                    same.push(c)
                } else {
                    other.push(c)
                }
            }
        }
        same.iter().sum::<f32>() / same.len() as f32 - other.iter().sum::<f32>() / other.len() as f32
    }

    #[test]
    fn pair_gradients_match_finite_differences() {
        for temperature in [0.0, 0.5] {
            gradients_match(temperature);
        }
    }

    fn gradients_match(temperature: f32) {
        let bert = tiny_bert();
        let (inputs, labels) = texts();
        let top = TunedTop {
            first: 0,
            max_tokens: 16,
            layers: bert.layers_from(0).to_vec(),
            head: Linear::zeros(8, 0),
        };
        let below: Vec<Vec<f32>> = inputs.iter().map(|ids| bert.states_below(ids, 0)).collect();
        let refs: Vec<&[f32]> = below.iter().map(Vec::as_slice).collect();
        let mut shards: Vec<TunedTop> = (0..SHARDS).map(|_| top.zeroed()).collect();
        top.pair_gradient(bert.config(), &refs, &labels, temperature, &mut shards, 2);
        let analytic: Vec<Vec<f32>> = shards[0].tensors_mut().into_iter().map(|t| t.clone()).collect();
        check_gradients(
            &top,
            &analytic,
            &[0, 7, 19],
            |t| loss(t, &bert, &inputs, &labels, temperature),
            &format!("temperature {temperature}, "),
        );
    }

    #[test]
    fn pair_tuning_separates_the_labels_the_same_way_every_time() {
        let bert = tiny_bert();
        let (inputs, labels) = texts();
        let options = PairTuneOptions {
            layers: 1,
            min_steps: 60,
            batch: 4,
            learning_rate: 1e-2,
            ..PairTuneOptions::default()
        };
        let untouched = TunedTop {
            first: 1,
            max_tokens: 16,
            layers: bert.layers_from(1).to_vec(),
            head: Linear::zeros(8, 0),
        };
        let before = separation(&vectors(&untouched, &bert, &inputs), &labels);
        let mut fractions = Vec::new();
        let top = TunedTop::train_pairs(&bert, &inputs, &labels, &options, &mut |f| {
            fractions.push(f);
            ControlFlow::Continue(())
        })
        .unwrap();
        assert!(fractions.windows(2).all(|w| w[0] <= w[1]) && fractions.last().is_some_and(|&f| f > 0.99));
        let after = separation(&vectors(&top, &bert, &inputs), &labels);
        assert!(
            after > before + 0.3 && after > 0.5,
            "separation {before} before, {after} after"
        );
        assert!(!top.has_head());
        for threads in [1, 3] {
            let again = TunedTop::train_pairs(
                &bert,
                &inputs,
                &labels,
                &PairTuneOptions {
                    threads,
                    ..options.clone()
                },
                &mut |_| ControlFlow::Continue(()),
            )
            .unwrap();
            assert_eq!(top.to_bytes(), again.to_bytes(), "{threads} threads");
        }
        let loaded = TunedTop::from_bytes(&bert, &top.to_bytes()).unwrap();
        assert_eq!(loaded, top);
    }
}
