//! Calibration of the main head from its held-out margins: a temperature for the single-label
//! head; for the multi-label heads a Platt scaling shared by the classes, a threshold per class,
//! and whether to force the most probable class when none passes.
//!
//! The label head's temperature is fitted with that head, in `heads`.

use crate::calibrate::{Platt, best_threshold, fit_temperature};
use crate::model::{Calibration, argmax};

use super::targets::Targets;

/// The main head's calibration, from its `(row, margins)` held out at the chosen cost.
pub(super) fn calibrate(targets: &Targets, held_out: &[(usize, Vec<f64>)]) -> Calibration {
    let mut calibration = Calibration {
        temperature: 1.0,
        platt: Platt::default(),
        thresholds: Vec::new(),
        label_temperature: 1.0,
        at_least_one: false,
    };
    match targets {
        Targets::Single { y, .. } => {
            let (scores, gold): (Vec<Vec<f64>>, Vec<usize>) = held_out.iter().map(|(r, m)| (m.clone(), y[*r])).unzip();
            calibration.temperature = fit_temperature(&scores, &gold);
        }
        Targets::Multi { y, k } => {
            let mut margins = Vec::new();
            let mut positive = Vec::new();
            for (r, m) in held_out {
                for (c, &v) in m.iter().enumerate() {
                    margins.push(v);
                    positive.push(y[*r].contains(&c));
                }
            }
            calibration.platt = if held_out.is_empty() {
                Platt::default()
            } else {
                Platt::fit(&margins, &positive)
            };
            calibration.thresholds = (0..*k)
                .map(|c| {
                    best_threshold(
                        held_out
                            .iter()
                            .map(|(r, m)| (calibration.platt.probability(m[c] as f32), y[*r].contains(&c)))
                            .collect(),
                    )
                })
                .collect();
            calibration.at_least_one = at_least_one_helps(held_out, y, &calibration);
        }
    }
    calibration
}

/// Whether taking the most probable class when none reaches its threshold raises the held-out
/// micro F1 (it does where every segment has a class, as in ABSA data).
fn at_least_one_helps(held_out: &[(usize, Vec<f64>)], y: &[Vec<usize>], calibration: &Calibration) -> bool {
    let (mut tp, mut fp, mut fn_) = (0usize, 0usize, 0usize);
    let (mut gain_tp, mut gain_fp) = (0usize, 0usize);
    for (r, m) in held_out {
        let probs: Vec<f32> = m.iter().map(|&v| calibration.platt.probability(v as f32)).collect();
        let mut any = false;
        for (c, &p) in probs.iter().enumerate() {
            let on = p >= calibration.thresholds.get(c).copied().unwrap_or(0.5);
            any |= on;
            match (y[*r].contains(&c), on) {
                (true, true) => tp += 1,
                (true, false) => fn_ += 1,
                (false, true) => fp += 1,
                _ => {}
            }
        }
        if !any && !probs.is_empty() {
            let k = argmax(&probs);
            if y[*r].contains(&k) {
                gain_tp += 1;
            } else {
                gain_fp += 1;
            }
        }
    }
    let f1 = |tp: usize, fp: usize, fn_: usize| {
        let d = 2 * tp + fp + fn_;
        if d == 0 { 0.0 } else { 2.0 * tp as f64 / d as f64 }
    };
    f1(tp + gain_tp, fp + gain_fp, fn_ - gain_tp) > f1(tp, fp, fn_)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calibration(thresholds: Vec<f32>) -> Calibration {
        Calibration {
            temperature: 1.0,
            platt: Platt::default(),
            thresholds,
            label_temperature: 1.0,
            at_least_one: false,
        }
    }

    #[test]
    fn at_least_one_is_chosen_only_where_it_helps() {
        let cal = calibration(vec![0.99, 0.99]);
        // Every segment has a class and the most probable one is right: forcing one helps.
        let held = vec![(0, vec![0.5, -0.5]), (1, vec![-0.5, 0.5])];
        assert!(at_least_one_helps(&held, &[vec![0], vec![1]], &cal));
        // Segments without a class: forcing one only adds false positives.
        assert!(!at_least_one_helps(&held, &[vec![], vec![]], &cal));
        // Something already passes its threshold: nothing to force.
        let cal = calibration(vec![0.1, 0.1]);
        assert!(!at_least_one_helps(&held, &[vec![0], vec![1]], &cal));
    }
}
