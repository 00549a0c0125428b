//! The learner: L2-regularised, squared-hinge (L2-loss) linear SVM trained by dual coordinate
//! descent with shrinking, as in Hsieh et al. (2008) and liblinear.
//!
//! It is the method behind scikit-learn's `LinearSVC`, so it matches that baseline's accuracy,
//! and it converges in a few passes over sparse data, which keeps training to seconds. A bias
//! term is learnt as the weight of a constant feature (value 1), regularised like the others.
//! A warm start (`w0`) turns the regulariser into `½‖w − w0‖²`: the model stays near the base
//! model's weights unless the data say otherwise (in the final fit only: `train::heads`). The
//! binary problems of one head can be solved together, in one pass over the rows for all of
//! them (`lockstep`). Calibration lives elsewhere; this module only produces margins.

mod lockstep;

pub(crate) use lockstep::{solve_together, together_at_most};

use crate::error::Result;
use crate::features::SparseVec;
use crate::progress::Progress;
use crate::rng::Rng;

/// Rows of sparse feature vectors, stored back to back.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Csr {
    pub(crate) indptr: Vec<usize>,
    pub(crate) indices: Vec<u32>,
    pub(crate) values: Vec<f32>,
}

impl Csr {
    pub(crate) fn new() -> Self {
        Self {
            indptr: vec![0],
            indices: Vec::new(),
            values: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, v: &SparseVec) {
        self.indices.extend_from_slice(&v.indices);
        self.values.extend_from_slice(&v.values);
        self.indptr.push(self.indices.len());
    }

    pub(crate) fn rows(&self) -> usize {
        self.indptr.len() - 1
    }

    #[inline]
    pub(crate) fn row(&self, i: usize) -> (&[u32], &[f32]) {
        let (s, e) = (self.indptr[i], self.indptr[i + 1]);
        (&self.indices[s..e], &self.values[s..e])
    }

    pub(crate) fn nnz_of(&self, rows: &[usize]) -> usize {
        rows.iter().map(|&i| self.indptr[i + 1] - self.indptr[i]).sum()
    }
}

/// The diagonal of the dual Hessian without the cost's term, row by row: `x·x + 1` (the bias's
/// constant feature); the solvers add `1/(2C)`.
fn hessian_diagonal<'a>(x: &'a Csr, rows: &'a [usize]) -> impl Iterator<Item = f64> + 'a {
    rows.iter()
        .map(|&r| x.row(r).1.iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>() + 1.0)
}

/// How hard to try.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SolverParams {
    pub(crate) max_epochs: u32,
    /// Stop when the projected-gradient spread falls below this (liblinear's `eps`).
    pub(crate) eps: f64,
}

/// One binary problem's dual variables and primal weights (`dim` features + bias), kept so
/// that a path of increasing `C` can start from the previous solution.
#[derive(Debug, Clone)]
pub(crate) struct Binary {
    pub(crate) alpha: Vec<f64>,
    /// `dim + 1` weights; the last is the bias. Single precision: the solver reads and writes
    /// a weight per non-zero feature, and at half the size the table stays in cache (sums and
    /// steps are computed in double precision).
    pub(crate) w: Vec<f32>,
}

impl Binary {
    /// A fresh problem over `n` rows, starting at `w0` (or zero).
    pub(crate) fn new(n: usize, dim: usize, w0: Option<&[f64]>) -> Self {
        let w = match w0 {
            Some(w0) if w0.len() == dim + 1 => w0.iter().map(|&v| v as f32).collect(),
            _ => vec![0.0; dim + 1],
        };
        Self { alpha: vec![0.0; n], w }
    }

    /// Sets dual variables and adds what their rows contribute to the weights, so that the
    /// primal and dual stay consistent: a warm start from another solution (on a subset of the
    /// rows, or of other features of the same rows). Each start is `(slot, row, alpha)`: this
    /// problem's dual variable `slot` (`y[slot]` its label) belongs to row `row` of `x`.
    pub(crate) fn start_from(&mut self, x: &Csr, y: &[f64], starts: impl Iterator<Item = (usize, usize, f64)>) {
        let bias = self.w.len() - 1;
        for (slot, r, a) in starts {
            if a == 0.0 {
                continue;
            }
            self.alpha[slot] = a;
            let d = a * y[slot];
            let (ind, val) = x.row(r);
            for (&j, &v) in ind.iter().zip(val) {
                self.w[j as usize] += (d * f64::from(v)) as f32;
            }
            self.w[bias] += d as f32;
        }
    }

    /// Margin `w·x + b` of one row.
    #[inline]
    pub(crate) fn margin(w: &[f32], indices: &[u32], values: &[f32]) -> f64 {
        let mut s = f64::from(w[w.len() - 1]);
        for (&j, &v) in indices.iter().zip(values) {
            s += f64::from(w[j as usize] * v);
        }
        s
    }

    /// The weights in double precision.
    pub(crate) fn weights(&self) -> Vec<f64> {
        self.w.iter().map(|&v| f64::from(v)).collect()
    }

    /// Runs dual coordinate descent on rows `rows` of `x` with labels `y` (±1) and per-row
    /// costs `cost`, continuing from the current state. `progress` is advanced by exactly
    /// `max_epochs * nnz(rows)` units however early it converges.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn solve(
        &mut self,
        x: &Csr,
        rows: &[usize],
        y: &[f64],
        cost: &[f64],
        params: SolverParams,
        rng: &mut Rng,
        progress: &mut Progress<'_, '_>,
    ) -> Result<()> {
        let n = rows.len();
        let nnz = x.nnz_of(rows) as f64;
        let bias = self.w.len() - 1;
        let diag: Vec<f64> = (0..n).map(|k| 0.5 / cost[k]).collect();
        let qd: Vec<f64> = hessian_diagonal(x, rows).zip(&diag).map(|(q, d)| q + d).collect();
        let mut index: Vec<usize> = (0..n).collect();
        let mut active = n;
        let mut pg_max_old = f64::INFINITY;
        let mut epochs_done = 0u32;
        while epochs_done < params.max_epochs {
            epochs_done += 1;
            rng.shuffle(&mut index[..active]);
            let (mut pg_max, mut pg_min) = (f64::NEG_INFINITY, f64::INFINITY);
            let mut s = 0;
            while s < active {
                let k = index[s];
                let (ind, val) = x.row(rows[k]);
                let g = y[k] * Self::margin(&self.w, ind, val) - 1.0 + diag[k] * self.alpha[k];
                let mut pg = g;
                if self.alpha[k] == 0.0 {
                    if g > pg_max_old {
                        active -= 1;
                        index.swap(s, active);
                        continue;
                    }
                    if g > 0.0 {
                        pg = 0.0;
                    }
                }
                pg_max = pg_max.max(pg);
                pg_min = pg_min.min(pg);
                if pg.abs() > 1e-12 {
                    let old = self.alpha[k];
                    self.alpha[k] = (old - g / qd[k]).max(0.0);
                    let d = ((self.alpha[k] - old) * y[k]) as f32;
                    for (&j, &v) in ind.iter().zip(val) {
                        self.w[j as usize] += d * v;
                    }
                    self.w[bias] += d;
                }
                s += 1;
            }
            progress.advance(nnz)?;
            if pg_max - pg_min <= params.eps {
                if active == n {
                    break;
                }
                active = n;
                pg_max_old = f64::INFINITY;
                continue;
            }
            pg_max_old = if pg_max <= 0.0 { f64::INFINITY } else { pg_max };
        }
        progress.advance(nnz * f64::from(params.max_epochs - epochs_done))?;
        Ok(())
    }
}
