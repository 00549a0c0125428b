//! The arithmetic of correction sessions, apart from HTTP and SQL: which documents a person
//! should correct first, and what the model's score is expected to become once the corrections
//! so far are learned (`predicted_score`).

/// Orders candidate documents least sure first and keeps `sample`. `candidates` pairs each
/// document with the model's confidence in its least sure segment; ties are broken by a
/// shuffle seeded with `seed`, so the same seed picks the same sample.
pub fn least_sure_first(mut candidates: Vec<(i64, f32)>, seed: u64, sample: usize) -> Vec<i64> {
    let mut state = seed ^ 0x9E37_79B9_7F4A_7C15;
    for i in (1..candidates.len()).rev() {
        state = splitmix(state);
        candidates.swap(i, (state % (i as u64 + 1)) as usize);
    }
    candidates.sort_by(|a, b| a.1.total_cmp(&b.1));
    candidates.into_iter().take(sample).map(|(id, _)| id).collect()
}

fn splitmix(state: u64) -> u64 {
    let mut z = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Corrected segments that weigh as much as the model's test score when the two disagree.
const PRIOR_SEGMENTS: f64 = 20.0;
/// How a linear text classifier's error falls with its training data: error ∝ n^(−1/2), the
/// usual learning-curve exponent for such models.
const LEARNING_EXPONENT: f64 = 0.5;

/// The model's expected score once it has learned the corrections so far.
///
/// `model_score` is its macro F1 on the test side after learning from `trained_on` segments;
/// of the `corrected` segments, `agreeing` kept exactly the tags the model predicted. The
/// current score is estimated by shrinking the observed agreement on the corrected segments
/// towards the test score (as if the test score were worth 20 segments), and the error left
/// is then scaled down by the learning curve for `trained_on + corrected` segments:
/// `1 − (1 − s)·√(n / (n + k))`. Between 0 and 1; equal to the model's score before any
/// correction.
pub fn predicted_score(model_score: f64, trained_on: usize, corrected: usize, agreeing: usize) -> f64 {
    let model_score = model_score.clamp(0.0, 1.0);
    if corrected == 0 {
        return model_score;
    }
    let k = corrected as f64;
    let agreement = agreeing.min(corrected) as f64 / k;
    let now = (model_score * PRIOR_SEGMENTS + agreement * k) / (PRIOR_SEGMENTS + k);
    let n = trained_on.max(1) as f64;
    let remaining = (1.0 - now) * (n / (n + k)).powf(LEARNING_EXPONENT);
    (1.0 - remaining).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_sure_come_first_and_a_seed_repeats_the_sample() {
        let candidates = vec![(1, 0.9), (2, 0.2), (3, 0.6), (4, 0.2), (5, 0.99)];
        let picked = least_sure_first(candidates.clone(), 7, 3);
        assert_eq!(picked.len(), 3);
        assert!(picked[..2].contains(&2) && picked[..2].contains(&4));
        assert_eq!(picked[2], 3);
        assert_eq!(picked, least_sure_first(candidates.clone(), 7, 3));
        let orders: std::collections::HashSet<Vec<i64>> = (0..20)
            .map(|seed| least_sure_first(candidates.clone(), seed, 2))
            .collect();
        assert_eq!(orders.len(), 2, "ties are broken by the seed: {orders:?}");
    }

    #[test]
    fn the_score_starts_at_the_model_and_rises_with_agreeing_corrections() {
        assert_eq!(predicted_score(0.8, 100, 0, 0), 0.8);
        let agreeing = predicted_score(0.8, 100, 10, 10);
        let disagreeing = predicted_score(0.8, 100, 10, 0);
        assert!(agreeing > 0.8, "{agreeing}");
        assert!(disagreeing < agreeing);
        // More corrections, more learnt: the estimate grows with k at equal agreement.
        assert!(predicted_score(0.8, 100, 50, 40) > predicted_score(0.8, 100, 10, 8));
        // A large training set moves little with a few corrections.
        let big = predicted_score(0.8, 100_000, 10, 8);
        assert!((big - 0.79).abs() < 0.02, "{big}");
        for (s, n, k, a) in [(0.0, 1, 5, 0), (1.0, 1, 5, 5), (0.5, 0, 1000, 2000)] {
            let p = predicted_score(s, n, k, a);
            assert!((0.0..=1.0).contains(&p), "{p}");
        }
    }
}
