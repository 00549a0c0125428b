//! Stratified, seeded splits: the train/test split offered to callers, and the folds used
//! inside training to choose hyper-parameters and fit calibration on held-out data.
//!
//! Stratifying keeps every label (or class) represented on both sides in proportion, which
//! matters for the small, unbalanced sets people label by hand. Everything is driven by our own
//! seeded generator, so a seed names one split forever.

use std::collections::BTreeMap;

use lector_core::ProjectType;

use crate::example::Example;
use crate::rng::Rng;

/// Indices into the examples, each side in ascending order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    pub train: Vec<usize>,
    pub test: Vec<usize>,
}

/// Splits items by their stratum `keys`: from each stratum, `test_fraction` of its items
/// (rounded) go to the test side, the rest to train.
pub fn stratified_split<K: Ord>(keys: &[K], test_fraction: f64, seed: u64) -> Split {
    let fraction = if test_fraction.is_finite() {
        test_fraction.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let mut rng = Rng::new(seed);
    let mut train = Vec::new();
    let mut test = Vec::new();
    for (_, mut members) in strata(keys) {
        rng.shuffle(&mut members);
        let n_test = (members.len() as f64 * fraction).round() as usize;
        test.extend_from_slice(&members[..n_test]);
        train.extend_from_slice(&members[n_test..]);
    }
    train.sort_unstable();
    test.sort_unstable();
    Split { train, test }
}

/// The stratum of an example: its label for LABEL projects, otherwise its first class in name
/// order (or none), so that rare classes are spread over both sides.
pub fn stratum(project_type: ProjectType, example: &Example) -> Option<String> {
    match project_type {
        ProjectType::Label => example.tags.iter().find_map(|t| t.label.clone()),
        _ => example.tags.iter().filter_map(|t| t.class.clone()).min(),
    }
}

/// [`stratified_split`] of examples by [`stratum`].
pub fn split_examples(project_type: ProjectType, examples: &[Example], test_fraction: f64, seed: u64) -> Split {
    let keys: Vec<Option<String>> = examples.iter().map(|e| stratum(project_type, e)).collect();
    stratified_split(&keys, test_fraction, seed)
}

fn strata<K: Ord>(keys: &[K]) -> BTreeMap<&K, Vec<usize>> {
    let mut groups: BTreeMap<&K, Vec<usize>> = BTreeMap::new();
    for (i, k) in keys.iter().enumerate() {
        groups.entry(k).or_default().push(i);
    }
    groups
}

/// A fold number in `0..k` for every item, stratified by key: each stratum is shuffled and dealt
/// round-robin, continuing where the previous stratum stopped so fold sizes stay even.
pub(crate) fn stratified_folds<K: Ord>(keys: &[K], k: usize, rng: &mut Rng) -> Vec<usize> {
    let mut fold = vec![0; keys.len()];
    let mut next = 0;
    for (_, mut members) in strata(keys) {
        rng.shuffle(&mut members);
        for i in members {
            fold[i] = next % k.max(1);
            next += 1;
        }
    }
    fold
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_is_stratified_seeded_and_complete() {
        let keys: Vec<&str> = (0..100).map(|i| if i % 4 == 0 { "rare" } else { "common" }).collect();
        let a = stratified_split(&keys, 0.2, 0);
        assert_eq!(a, stratified_split(&keys, 0.2, 0));
        assert_ne!(a, stratified_split(&keys, 0.2, 1));
        assert_eq!(a.test.len(), 20);
        assert_eq!(a.test.iter().filter(|&&i| keys[i] == "rare").count(), 5);
        let mut all: Vec<usize> = a.train.iter().chain(&a.test).copied().collect();
        all.sort_unstable();
        assert_eq!(all, (0..100).collect::<Vec<_>>());
        let folds = stratified_folds(&keys, 5, &mut Rng::new(3));
        for f in 0..5 {
            assert_eq!(folds.iter().filter(|&&x| x == f).count(), 20);
        }
    }
}
