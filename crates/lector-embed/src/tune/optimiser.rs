//! The optimiser of tuning: AdamW (decoupled weight decay) over every tuned weight, and the
//! learning-rate schedule (a linear warm-up, then a linear decay to 0).
//!
//! What is optimised is `tune`'s business; this module only turns gradients into steps.

use super::{TuneOptions, TunedTop};

impl TuneOptions {
    /// The learning rate of step `step` of `steps`: a linear rise over the warm-up share, then
    /// a linear fall to 0.
    pub(super) fn rate_at(&self, step: usize, steps: usize) -> f32 {
        let warm = ((step + 1) as f32 / (self.warmup * steps as f32).max(1.0)).min(1.0);
        let decay = (steps - step) as f32 / steps as f32;
        self.learning_rate * warm * decay
    }
}

/// AdamW's moment estimates, shaped like the weights.
pub(super) struct Adam {
    m: TunedTop,
    v: TunedTop,
    t: i32,
}

impl Adam {
    const BETA1: f32 = 0.9;
    const BETA2: f32 = 0.999;
    const EPS: f32 = 1e-8;

    pub(super) fn new(top: &TunedTop) -> Self {
        Self {
            m: top.zeroed(),
            v: top.zeroed(),
            t: 0,
        }
    }

    /// One step with decoupled weight decay (the weights shrink by `lr·decay` first).
    pub(super) fn step(&mut self, top: &mut TunedTop, grads: &mut TunedTop, lr: f32, decay: f32) {
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
