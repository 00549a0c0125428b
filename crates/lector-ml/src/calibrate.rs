//! Turning margins into calibrated probabilities, and choosing decision thresholds.
//!
//! SVM margins rank well but are not probabilities. All fits here use held-out (out-of-fold)
//! margins, never the training margins, which are over-confident:
//! - single-label heads: a softmax with one temperature (`p ∝ exp(t·s)`), fitted by minimising
//!   the negative log-likelihood; one parameter cannot overfit a small held-out set;
//! - multi-label heads: one Platt sigmoid `σ(a·s + b)` shared by all classes (pooled, so rare
//!   classes borrow strength), with Platt's smoothed targets; then a per-class threshold on
//!   that probability chosen to maximise the class's F1.

use serde::{Deserialize, Serialize};

/// Softmax of `scores * temperature` into `out`.
pub(crate) fn softmax(scores: &[f32], temperature: f32, out: &mut Vec<f32>) {
    out.clear();
    let max = scores.iter().fold(f32::NEG_INFINITY, |m, &s| m.max(s * temperature));
    let mut sum = 0.0f32;
    for &s in scores {
        let e = (s * temperature - max).exp();
        sum += e;
        out.push(e);
    }
    if sum > 0.0 && sum.is_finite() {
        for p in out.iter_mut() {
            *p /= sum;
        }
    } else {
        let uniform = 1.0 / scores.len().max(1) as f32;
        out.iter_mut().for_each(|p| *p = uniform);
    }
}

/// Mean negative log-likelihood of the gold rows under softmax(t·scores).
fn softmax_nll(scores: &[Vec<f64>], gold: &[usize], t: f64) -> f64 {
    let mut total = 0.0;
    for (s, &g) in scores.iter().zip(gold) {
        let max = s.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v * t));
        let lse = max + s.iter().map(|&v| (v * t - max).exp()).sum::<f64>().ln();
        total += lse - s[g] * t;
    }
    total / scores.len().max(1) as f64
}

/// The softmax temperature that best explains held-out margins (golden-section search on a
/// log scale; the likelihood is unimodal in `t`). Answers 1 when there is nothing to fit.
pub(crate) fn fit_temperature(scores: &[Vec<f64>], gold: &[usize]) -> f32 {
    if scores.is_empty() {
        return 1.0;
    }
    let f = |log_t: f64| softmax_nll(scores, gold, log_t.exp());
    let (mut a, mut b) = ((0.01f64).ln(), (100.0f64).ln());
    let ratio = (5f64.sqrt() - 1.0) / 2.0;
    let mut c = b - ratio * (b - a);
    let mut d = a + ratio * (b - a);
    let (mut fc, mut fd) = (f(c), f(d));
    for _ in 0..60 {
        if fc < fd {
            b = d;
            d = c;
            fd = fc;
            c = b - ratio * (b - a);
            fc = f(c);
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + ratio * (b - a);
            fd = f(d);
        }
    }
    (((a + b) / 2.0).exp()) as f32
}

/// A Platt sigmoid `σ(a·s + b)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Platt {
    pub a: f32,
    pub b: f32,
}

impl Default for Platt {
    fn default() -> Self {
        Self { a: 2.0, b: 0.0 }
    }
}

impl Platt {
    #[inline]
    pub(crate) fn probability(&self, margin: f32) -> f32 {
        let z = self.a * margin + self.b;
        1.0 / (1.0 + (-z).exp())
    }

    /// Fits `a`, `b` to margins and 0/1 outcomes by Newton's method with a backtracking line
    /// search (Lin, Lin and Weng's robust form of Platt's algorithm).
    pub(crate) fn fit(margins: &[f64], positive: &[bool]) -> Self {
        let n_pos = positive.iter().filter(|&&p| p).count() as f64;
        let n_neg = positive.len() as f64 - n_pos;
        if n_pos == 0.0 || n_neg == 0.0 {
            return Self::default();
        }
        let hi = (n_pos + 1.0) / (n_pos + 2.0);
        let lo = 1.0 / (n_neg + 2.0);
        let t: Vec<f64> = positive.iter().map(|&p| if p { hi } else { lo }).collect();
        // We fit σ(a s + b), so the loss is in terms of z = a s + b.
        let loss = |a: f64, b: f64| -> f64 {
            margins
                .iter()
                .zip(&t)
                .map(|(&s, &ti)| {
                    let z = a * s + b;
                    // -[t ln σ(z) + (1-t) ln(1-σ(z))] = softplus(z) - t z, computed stably.
                    let softplus = if z > 0.0 {
                        z + (-z).exp().ln_1p()
                    } else {
                        z.exp().ln_1p()
                    };
                    softplus - ti * z
                })
                .sum()
        };
        let (mut a, mut b) = (1.0f64, -((n_neg + 1.0) / (n_pos + 1.0)).ln());
        let mut f = loss(a, b);
        for _ in 0..100 {
            let (mut ga, mut gb, mut haa, mut hab, mut hbb) = (0.0, 0.0, 1e-12, 0.0, 1e-12);
            for (&s, &ti) in margins.iter().zip(&t) {
                let p = 1.0 / (1.0 + (-(a * s + b)).exp());
                let d = p - ti;
                let w = p * (1.0 - p);
                ga += d * s;
                gb += d;
                haa += w * s * s;
                hab += w * s;
                hbb += w;
            }
            if ga.abs() < 1e-7 && gb.abs() < 1e-7 {
                break;
            }
            let det = haa * hbb - hab * hab;
            if det.abs() < 1e-18 {
                break;
            }
            let da = -(hbb * ga - hab * gb) / det;
            let db = -(-hab * ga + haa * gb) / det;
            let slope = ga * da + gb * db;
            let mut step = 1.0;
            let mut improved = false;
            while step > 1e-10 {
                let (na, nb) = (a + step * da, b + step * db);
                let nf = loss(na, nb);
                if nf <= f + 1e-4 * step * slope {
                    a = na;
                    b = nb;
                    f = nf;
                    improved = true;
                    break;
                }
                step /= 2.0;
            }
            if !improved {
                break;
            }
        }
        if !(a.is_finite() && b.is_finite()) || a <= 0.0 {
            return Self::default();
        }
        Self {
            a: a as f32,
            b: b as f32,
        }
    }
}

/// The probability threshold that maximises F1 on held-out `(probability, positive)` pairs:
/// midway between the lowest accepted and the highest rejected probability. Without held-out
/// positives there is nothing to learn from, and 0.5 is kept.
pub(crate) fn best_threshold(mut pairs: Vec<(f32, bool)>) -> f32 {
    let positives = pairs.iter().filter(|p| p.1).count();
    if positives == 0 {
        return 0.5;
    }
    pairs.sort_by(|x, y| y.0.total_cmp(&x.0));
    let (mut tp, mut fp) = (0usize, 0usize);
    let (mut best_f1, mut best_cut) = (-1.0f64, 0usize);
    for (i, &(_, pos)) in pairs.iter().enumerate() {
        if pos {
            tp += 1;
        } else {
            fp += 1;
        }
        // Only cut between distinct probabilities.
        if i + 1 < pairs.len() && pairs[i + 1].0 == pairs[i].0 {
            continue;
        }
        let f1 = 2.0 * tp as f64 / (2 * tp + fp + (positives - tp)) as f64;
        if f1 > best_f1 {
            best_f1 = f1;
            best_cut = i;
        }
    }
    let accepted = pairs[best_cut].0;
    let rejected = pairs.get(best_cut + 1).map_or(0.0, |p| p.0);
    ((accepted + rejected) / 2.0).clamp(0.02, 0.98)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn softmax_sums_to_one_and_survives_extremes() {
        let mut out = Vec::new();
        softmax(&[1.0, 2.0, 3.0], 2.0, &mut out);
        assert!((out.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!(out[2] > out[1] && out[1] > out[0]);
        softmax(&[1e30, -1e30], 1e10, &mut out);
        assert!(out.iter().all(|p| p.is_finite() && (0.0..=1.0).contains(p)));
    }

    #[test]
    fn platt_and_temperature_fit_noisy_margins() {
        // Margins 1 are right 80 % of the time, margins -1 wrong 80 %.
        let mut margins = Vec::new();
        let mut positive = Vec::new();
        for i in 0..100 {
            margins.push(1.0);
            positive.push(i % 5 != 0);
            margins.push(-1.0);
            positive.push(i % 5 == 0);
        }
        let p = Platt::fit(&margins, &positive);
        assert!((p.probability(1.0) - 0.8).abs() < 0.02, "{p:?}");
        let scores: Vec<Vec<f64>> = margins.iter().map(|&m| vec![-m, m]).collect();
        let gold: Vec<usize> = positive.iter().map(|&p| usize::from(p)).collect();
        let t = fit_temperature(&scores, &gold);
        let mut out = Vec::new();
        softmax(&[-1.0, 1.0], t, &mut out);
        assert!((out[1] - 0.8).abs() < 0.02, "{t} {out:?}");
        assert!((best_threshold(vec![(0.9, true), (0.7, true), (0.4, false), (0.2, false)]) - 0.55).abs() < 1e-6);
        assert_eq!(best_threshold(vec![(0.9, false)]), 0.5);
    }
}
