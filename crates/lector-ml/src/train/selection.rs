//! Choosing the SVM cost on held-out data: the cost grid, the validation runs (5-fold
//! cross-validation for small sets, one stratified 20 % holdout for large ones) and the
//! solver budgets of the held-out and final fits.
//!
//! Users never tune anything; what is chosen here is recorded in the model's hyper-parameters.

use crate::error::{Error, Result};
use crate::rng::Rng;
use crate::split::stratified_folds;
use crate::svm::SolverParams;

use super::Options;

/// Validation runs: `(train rows, held-out rows)` each.
pub(super) type Runs = Vec<(Vec<usize>, Vec<usize>)>;

/// Below this many non-zero features in all (a few thousand sentences, a few hundred long
/// documents), hyper-parameters are chosen by 5-fold cross-validation; above, one holdout
/// is both reliable enough and five times cheaper.
const CROSS_VALIDATE_BELOW_NNZ: usize = 2_000_000;
/// The largest cost tried on sets too large to cross-validate.
pub const LARGE_DATA_MAX_C: f64 = 3.0;
/// Epoch budget of each solve on held-out runs.
const SELECTION_EPOCHS: u32 = 20;
/// Below this many segments there is too little to hold out: defaults are used.
const MIN_FOR_VALIDATION: usize = 10;

/// The costs to try: the fixed one, or the positive values of the grid, sorted and distinct.
pub(super) fn cost_grid(options: &Options<'_>) -> Result<Vec<f64>> {
    match options.c {
        Some(c) if c.is_finite() && c > 0.0 => Ok(vec![c]),
        Some(c) => Err(Error::input(format!("the SVM cost must be positive, not {c}"))),
        None => {
            let mut g: Vec<f64> = options
                .c_grid
                .iter()
                .copied()
                .filter(|c| c.is_finite() && *c > 0.0)
                .collect();
            g.sort_by(f64::total_cmp);
            g.dedup();
            if g.is_empty() {
                return Err(Error::input("the cost grid has no positive value"));
            }
            Ok(g)
        }
    }
}

/// The grid without the costs above [`LARGE_DATA_MAX_C`] when one holdout stands for
/// cross-validation (a large set), unless that leaves nothing.
pub(super) fn grid_for(grid: Vec<f64>, runs: &Runs, options: &Options<'_>) -> Vec<f64> {
    if runs.len() == 1 && options.c.is_none() {
        let capped: Vec<f64> = grid.iter().copied().filter(|&c| c <= LARGE_DATA_MAX_C).collect();
        if capped.is_empty() { grid } else { capped }
    } else {
        grid
    }
}

/// The solver budgets: `(final fit, held-out runs)`.
pub(super) fn solver_params(options: &Options<'_>) -> (SolverParams, SolverParams) {
    let params = SolverParams {
        max_epochs: options.max_epochs,
        eps: 0.1,
    };
    let select = SolverParams {
        max_epochs: options.max_epochs.min(SELECTION_EPOCHS),
        ..params
    };
    (params, select)
}

/// The validation runs for `n` rows stratified by `keys`.
pub(super) fn validation_runs(keys: &[usize], nnz: usize, rng: &mut Rng, fixed_c: bool) -> (Runs, String) {
    let n = keys.len();
    if n < MIN_FOR_VALIDATION {
        return (Vec::new(), "none".into());
    }
    let folds = stratified_folds(keys, 5, rng);
    let run = |f: usize| {
        let train = (0..n).filter(|&i| folds[i] != f).collect::<Vec<_>>();
        let test = (0..n).filter(|&i| folds[i] == f).collect::<Vec<_>>();
        (train, test)
    };
    // With the cost fixed, held-out data serves only calibration: one fold is enough.
    if nnz < CROSS_VALIDATE_BELOW_NNZ && !fixed_c {
        ((0..5).map(run).collect(), "5-fold".into())
    } else {
        (vec![run(0)], "holdout-20%".into())
    }
}
