//! The binary problems of one head solved together, in lockstep over the same rows.
//!
//! A head with `k` outputs is `k` binary problems over the same rows (one against the rest).
//! Solved one after the other, each reads every row's features and gathers one weight per
//! feature from its own table: `k` random reads of the table per feature. Solved together,
//! the weights are interleaved (`w[j * k + p]`: feature `j` of problem `p`), so one feature's
//! `k` weights are one contiguous read; a row's margins for every problem come from one pass
//! over its features, and its updates from another. The method per problem is the dual
//! coordinate descent of [`Binary::solve`] without shrinking (rows are shared; a row could
//! only be skipped where every problem had shrunk it): each problem stops on the same
//! criterion as liblinear's final check, and stops being updated once it has.

use crate::error::Result;
use crate::progress::Progress;
use crate::rng::Rng;

use super::{Binary, Csr, SolverParams, hessian_diagonal};

/// Solves every problem of `states` at cost `c` over rows `rows` of `x`, `ys[p]` the labels
/// (±1) of problem `p`, continuing from their current states: [`Binary::solve`] for each, but
/// with one pass over the rows for all of them. `progress` is advanced by exactly
/// `states.len() * max_epochs * nnz(rows)` units however early they converge.
#[allow(clippy::too_many_arguments)]
pub(crate) fn solve_together(
    states: &mut [Binary],
    x: &Csr,
    rows: &[usize],
    ys: &[Vec<f64>],
    c: f64,
    params: SolverParams,
    rng: &mut Rng,
    progress: &mut Progress<'_, '_>,
) -> Result<()> {
    let Some(first) = states.first() else {
        return Ok(());
    };
    let group = together_at_most(rows.len(), first.w.len() - 1);
    for (states, ys) in states.chunks_mut(group).zip(ys.chunks(group)) {
        if let [state] = states {
            state.solve(x, rows, &ys[0], &vec![c; rows.len()], params, rng, progress)?;
            continue;
        }
        let mut together = Together::interleave(states, ys);
        let result = together.solve(x, rows, c, params, rng, progress);
        together.split_into(states);
        result?;
    }
    Ok(())
}

/// The memory that problems solved together may take, in bytes: their states and the
/// interleaved copy. A head whose problems need more is solved in groups that fit.
const TOGETHER_BYTES: usize = 512 << 20;

/// How many problems over `rows` rows and `dim` features can be solved together within
/// [`TOGETHER_BYTES`] (each takes a dual variable and a label per row, 16 bytes, and a weight per
/// feature, 4 bytes, in its state and again in the interleaved copy); at least one.
pub(crate) fn together_at_most(rows: usize, dim: usize) -> usize {
    let per_problem = 2 * (rows * 16 + (dim + 1) * 4);
    (TOGETHER_BYTES / per_problem.max(1)).max(1)
}

/// The problems' dual variables, labels and weights, interleaved by problem.
struct Together {
    k: usize,
    /// `alpha[i * k + p]`.
    alpha: Vec<f64>,
    /// `y[i * k + p]`.
    y: Vec<f64>,
    /// `w[j * k + p]`; `j = dim` is the bias.
    w: Vec<f32>,
}

impl Together {
    fn interleave(states: &[Binary], ys: &[Vec<f64>]) -> Self {
        let k = states.len();
        let n = states[0].alpha.len();
        let len = states[0].w.len();
        let mut t = Self {
            k,
            alpha: vec![0.0; n * k],
            y: vec![0.0; n * k],
            w: vec![0.0; len * k],
        };
        for (p, (state, y)) in states.iter().zip(ys).enumerate() {
            for (i, (&a, &y)) in state.alpha.iter().zip(y).enumerate() {
                t.alpha[i * k + p] = a;
                t.y[i * k + p] = y;
            }
            for (j, &v) in state.w.iter().enumerate() {
                t.w[j * k + p] = v;
            }
        }
        t
    }

    fn split_into(self, states: &mut [Binary]) {
        let k = self.k;
        for (p, state) in states.iter_mut().enumerate() {
            for (i, a) in state.alpha.iter_mut().enumerate() {
                *a = self.alpha[i * k + p];
            }
            for (j, v) in state.w.iter_mut().enumerate() {
                *v = self.w[j * k + p];
            }
        }
    }

    fn solve(
        &mut self,
        x: &Csr,
        rows: &[usize],
        c: f64,
        params: SolverParams,
        rng: &mut Rng,
        progress: &mut Progress<'_, '_>,
    ) -> Result<()> {
        let k = self.k;
        let n = rows.len();
        let nnz = x.nnz_of(rows) as f64;
        let bias = self.w.len() / k - 1;
        let diag = 0.5 / c;
        let qd: Vec<f64> = hessian_diagonal(x, rows).map(|q| q + diag).collect();
        let mut order: Vec<usize> = (0..n).collect();
        let mut done = vec![false; k];
        let (mut margins, mut steps) = (vec![0.0f32; k], vec![0.0f32; k]);
        let (mut pg_max, mut pg_min) = (vec![0.0f64; k], vec![0.0f64; k]);
        let mut units_left = nnz * (k as f64) * f64::from(params.max_epochs);
        for _ in 0..params.max_epochs {
            rng.shuffle(&mut order);
            pg_max.fill(f64::NEG_INFINITY);
            pg_min.fill(f64::INFINITY);
            for &i in &order {
                let (ind, val) = x.row(rows[i]);
                self.margins(ind, val, bias, &mut margins);
                let mut moved = false;
                for p in 0..k {
                    steps[p] = 0.0;
                    if done[p] {
                        continue;
                    }
                    let slot = i * k + p;
                    let (a, y) = (self.alpha[slot], self.y[slot]);
                    let g = y * f64::from(margins[p]) - 1.0 + diag * a;
                    let pg = if a == 0.0 && g > 0.0 { 0.0 } else { g };
                    pg_max[p] = pg_max[p].max(pg);
                    pg_min[p] = pg_min[p].min(pg);
                    if pg.abs() > 1e-12 {
                        let new = (a - g / qd[i]).max(0.0);
                        self.alpha[slot] = new;
                        steps[p] = ((new - a) * y) as f32;
                        moved |= steps[p] != 0.0;
                    }
                }
                if moved {
                    self.step(ind, val, bias, &steps);
                }
            }
            let solving = done.iter().filter(|d| !**d).count() as f64;
            progress.advance(nnz * solving)?;
            units_left -= nnz * solving;
            for p in 0..k {
                done[p] |= pg_max[p] - pg_min[p] <= params.eps;
            }
            if done.iter().all(|&d| d) {
                break;
            }
        }
        progress.advance(units_left)
    }

    /// Every problem's margin `w·x + b` of one row.
    #[inline]
    fn margins(&self, ind: &[u32], val: &[f32], bias: usize, out: &mut [f32]) {
        let k = self.k;
        out.copy_from_slice(&self.w[bias * k..bias * k + k]);
        for (&j, &v) in ind.iter().zip(val) {
            let at = j as usize * k;
            for (m, &w) in out.iter_mut().zip(&self.w[at..at + k]) {
                *m += w * v;
            }
        }
    }

    /// Adds `steps[p] * x` to every problem's weights (and `steps[p]` to its bias).
    #[inline]
    fn step(&mut self, ind: &[u32], val: &[f32], bias: usize, steps: &[f32]) {
        let k = self.k;
        for (&j, &v) in ind.iter().zip(val) {
            let at = j as usize * k;
            for (w, &s) in self.w[at..at + k].iter_mut().zip(steps) {
                *w += s * v;
            }
        }
        for (w, &s) in self.w[bias * k..bias * k + k].iter_mut().zip(steps) {
            *w += s;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::ops::ControlFlow;

    use super::*;
    use crate::features::SparseVec;

    /// 300 rows of five features out of 40, and three problems whose labels follow
    /// different features (with some noise, so that not every row is separable).
    fn problems() -> (Csr, Vec<Vec<f64>>) {
        let mut rng = Rng::new(7);
        let mut x = Csr::new();
        let mut ys = vec![Vec::new(); 3];
        for _ in 0..300 {
            let mut indices: Vec<u32> = (0..5).map(|_| rng.below(40) as u32).collect();
            indices.sort_unstable();
            indices.dedup();
            let values = indices.iter().map(|_| rng.unit() as f32).collect();
            for (p, y) in ys.iter_mut().enumerate() {
                let on = indices.iter().any(|&j| j as usize % 3 == p) != (rng.below(10) == 0);
                y.push(if on { 1.0 } else { -1.0 });
            }
            x.push(&SparseVec { indices, values });
        }
        (x, ys)
    }

    fn fresh(x: &Csr, k: usize) -> Vec<Binary> {
        (0..k).map(|_| Binary::new(x.rows(), 40, None)).collect()
    }

    #[test]
    fn together_finds_what_each_finds_alone() {
        let (x, ys) = problems();
        let rows: Vec<usize> = (0..x.rows()).collect();
        let params = SolverParams {
            max_epochs: 2000,
            eps: 1e-5,
        };
        let mut go_on = |_| ControlFlow::Continue(());
        let mut progress = Progress::new(&mut go_on);
        let mut rng = Rng::new(1);
        let mut alone = fresh(&x, 3);
        for (state, y) in alone.iter_mut().zip(&ys) {
            state
                .solve(&x, &rows, y, &vec![0.5; rows.len()], params, &mut rng, &mut progress)
                .unwrap();
        }
        let mut together = fresh(&x, 3);
        solve_together(&mut together, &x, &rows, &ys, 0.5, params, &mut rng, &mut progress).unwrap();
        for (a, t) in alone.iter().zip(&together) {
            // The dual optimum is unique (the loss is squared), so both reach the same weights.
            let gap = a.w.iter().zip(&t.w).map(|(a, t)| (a - t).abs()).fold(0.0, f32::max);
            assert!(gap < 1e-3, "weights differ by {gap}");
            let apart = a
                .alpha
                .iter()
                .zip(&t.alpha)
                .map(|(a, t)| (a - t).abs())
                .fold(0.0, f64::max);
            assert!(apart < 1e-2, "dual variables differ by {apart}");
        }
    }

    #[test]
    fn problems_too_large_together_go_in_groups() {
        assert!(together_at_most(48_000, 1 << 18) >= 128);
        assert_eq!(together_at_most(1 << 30, 1 << 18), 1);
        let groups = together_at_most(1_000_000, 1 << 18);
        assert!((10..40).contains(&groups), "{groups}");
    }

    #[test]
    fn progress_is_the_planned_work_however_early_it_stops() {
        let (x, ys) = problems();
        let rows: Vec<usize> = (0..x.rows()).collect();
        let params = SolverParams {
            max_epochs: 50,
            eps: 0.1,
        };
        let planned = 3.0 * 50.0 * x.nnz_of(&rows) as f64;
        let mut last = 0.0;
        let mut record = |f| {
            last = f;
            ControlFlow::Continue(())
        };
        {
            let mut progress = Progress::new(&mut record);
            progress.plan(2.0 * planned);
            let mut states = fresh(&x, 3);
            let mut rng = Rng::new(3);
            solve_together(&mut states, &x, &rows, &ys, 1.0, params, &mut rng, &mut progress).unwrap();
        }
        assert!((last - 0.5).abs() < 1e-9, "reported {last}");
    }
}
