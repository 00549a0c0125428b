//! The forward and backward maths of tuning: the gradients of BERT's linear maps, layer norms,
//! softmax attention and GELU, written out, with the matrix products they need.
//!
//! Kept apart from the loop that uses them so the calculus can be read (and checked against
//! finite differences, in `tune`'s tests) on its own; it knows nothing of batches or optimisers.

use crate::bert::{Config, Layer, LayerNorm, Linear, erf};

pub(super) fn sigmoid(z: f32) -> f32 {
    1.0 / (1.0 + (-z).exp())
}

/// Φ, the standard normal distribution function: BERT's exact GELU is `x Φ(x)`, as
/// [`crate::bert`] computes it.
pub(super) fn normal_cdf(x: f32) -> f32 {
    0.5 * (1.0 + erf(x / std::f32::consts::SQRT_2))
}

/// The derivative of GELU at `x`, given `cdf` = Φ(x): `Φ(x) + x φ(x)`.
pub(super) fn gelu_grad(x: f32, cdf: f32) -> f32 {
    let pdf = (-0.5 * x * x).exp() / (2.0 * std::f32::consts::PI).sqrt();
    cdf + x * pdf
}

/// `Σ a[i]·b[i]` in eight lanes (a fixed order the compiler can vectorise).
pub(super) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca.remainder().iter().zip(cb.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in ca.zip(cb) {
        for j in 0..8 {
            acc[j] += x[j] * y[j];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// `y += a·x`.
pub(super) fn axpy(y: &mut [f32], a: f32, x: &[f32]) {
    for (y, &x) in y.iter_mut().zip(x) {
        *y += a * x;
    }
}

impl Linear {
    pub(super) fn zeros(input: usize, output: usize) -> Self {
        Self {
            wt: vec![0.0; input * output],
            bias: vec![0.0; output],
            input,
            output,
        }
    }

    /// Given the input `x` and the gradient `dy` of the output, adds the weights' gradient to
    /// `grad` and the input's to `dx`.
    pub(super) fn backward(&self, x: &[f32], dy: &[f32], grad: &mut Linear, dx: &mut [f32]) {
        let (input, output) = (self.input, self.output);
        let rows = dy.len() / output;
        for r in 0..rows {
            axpy(&mut grad.bias, 1.0, &dy[r * output..(r + 1) * output]);
        }
        // grad.wt (input × output) += xᵀ · dy; dx (rows × input) += dy · wtᵀ.
        let mut xt = vec![0.0f32; input * rows];
        for r in 0..rows {
            for i in 0..input {
                xt[i * rows + r] = x[r * input + i];
            }
        }
        add_product(&xt, rows, dy, output, &mut grad.wt);
        add_product_nt(dy, &self.wt, output, dx);
    }
}

/// `out += a · b`, with `a` of `rows × inner`, `b` of `inner × cols` and `out` of
/// `rows × cols`, all row-major. Tiles of 4 rows × 8 columns are summed in registers, as in
/// the forward pass.
pub(super) fn add_product(a: &[f32], inner: usize, b: &[f32], cols: usize, out: &mut [f32]) {
    let rows = a.len() / inner.max(1);
    let mut r = 0;
    while r + 4 <= rows {
        let mut c = 0;
        while c + 8 <= cols {
            let mut acc = [[0.0f32; 8]; 4];
            for k in 0..inner {
                let w = &b[k * cols + c..k * cols + c + 8];
                for (i, acc) in acc.iter_mut().enumerate() {
                    let x = a[(r + i) * inner + k];
                    for (acc, &w) in acc.iter_mut().zip(w) {
                        *acc += x * w;
                    }
                }
            }
            for (i, acc) in acc.iter().enumerate() {
                let dst = &mut out[(r + i) * cols + c..(r + i) * cols + c + 8];
                for (d, &v) in dst.iter_mut().zip(acc) {
                    *d += v;
                }
            }
            c += 8;
        }
        for i in r..r + 4 {
            for cc in c..cols {
                out[i * cols + cc] += (0..inner).map(|k| a[i * inner + k] * b[k * cols + cc]).sum::<f32>();
            }
        }
        r += 4;
    }
    for i in r..rows {
        let dst = &mut out[i * cols..(i + 1) * cols];
        for k in 0..inner {
            axpy(dst, a[i * inner + k], &b[k * cols..(k + 1) * cols]);
        }
    }
}

/// `out += a · bᵀ`, with `a` of `rows × inner`, `b` of `n × inner` and `out` of `rows × n`:
/// every row of `a` against every row of `b`, in tiles of 2 × 4 rows summed in four lanes.
pub(super) fn add_product_nt(a: &[f32], b: &[f32], inner: usize, out: &mut [f32]) {
    let rows = a.len() / inner.max(1);
    let n = b.len() / inner.max(1);
    let lanes = inner / 4 * 4;
    let mut r = 0;
    while r < rows {
        let tile_rows = (rows - r).min(2);
        let mut j = 0;
        while j < n {
            let tile_cols = (n - j).min(4);
            if tile_rows == 2 && tile_cols == 4 {
                let mut acc = [[[0.0f32; 4]; 4]; 2];
                let ar = [
                    &a[r * inner..r * inner + lanes],
                    &a[(r + 1) * inner..(r + 1) * inner + lanes],
                ];
                let br: [&[f32]; 4] = std::array::from_fn(|q| &b[(j + q) * inner..(j + q) * inner + lanes]);
                for o in (0..lanes).step_by(4) {
                    for (acc, a) in acc.iter_mut().zip(ar) {
                        for (acc, b) in acc.iter_mut().zip(br) {
                            for l in 0..4 {
                                acc[l] += a[o + l] * b[o + l];
                            }
                        }
                    }
                }
                for (p, acc) in acc.iter().enumerate() {
                    for (q, acc) in acc.iter().enumerate() {
                        let (ra, rb) = ((r + p) * inner, (j + q) * inner);
                        let tail = dot(&a[ra + lanes..ra + inner], &b[rb + lanes..rb + inner]);
                        out[(r + p) * n + j + q] += (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail;
                    }
                }
            } else {
                for p in r..r + tile_rows {
                    for q in j..j + tile_cols {
                        out[p * n + q] += dot(&a[p * inner..(p + 1) * inner], &b[q * inner..(q + 1) * inner]);
                    }
                }
            }
            j += tile_cols;
        }
        r += tile_rows;
    }
}

/// A layer norm's normalised input and inverse deviation per row, for its backward pass.
#[derive(Debug, Default)]
pub(super) struct NormCache {
    normalised: Vec<f32>,
    inv: Vec<f32>,
}

impl NormCache {
    /// Applies `norm` to `x` in place, as [`LayerNorm`]'s forward pass does, remembering what
    /// the backward pass needs.
    fn forward(norm: &LayerNorm, x: &mut [f32]) -> Self {
        let width = norm.weight.len();
        let mut cache = Self {
            normalised: Vec::with_capacity(x.len()),
            inv: Vec::with_capacity(x.len() / width),
        };
        for row in x.chunks_exact_mut(width) {
            let n = row.len() as f32;
            let mean = row.iter().sum::<f32>() / n;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n;
            let inv = 1.0 / (var + norm.eps).sqrt();
            cache.inv.push(inv);
            for ((v, &w), &b) in row.iter_mut().zip(&norm.weight).zip(&norm.bias) {
                let xhat = (*v - mean) * inv;
                cache.normalised.push(xhat);
                *v = xhat * w + b;
            }
        }
        cache
    }

    /// The input's gradient from the output's `dy`; adds the weights' gradient to `grad`.
    fn backward(&self, norm: &LayerNorm, dy: &[f32], grad: &mut LayerNorm) -> Vec<f32> {
        let width = norm.weight.len();
        let mut dx = vec![0.0f32; dy.len()];
        let mut g = vec![0.0f32; width];
        for (r, (dyr, dxr)) in dy.chunks_exact(width).zip(dx.chunks_exact_mut(width)).enumerate() {
            let xhat = &self.normalised[r * width..(r + 1) * width];
            for j in 0..width {
                grad.weight[j] += dyr[j] * xhat[j];
                grad.bias[j] += dyr[j];
                g[j] = dyr[j] * norm.weight[j];
            }
            let mean_g = g.iter().sum::<f32>() / width as f32;
            let mean_gx = dot(&g, xhat) / width as f32;
            let inv = self.inv[r];
            for j in 0..width {
                dxr[j] = inv * (g[j] - mean_g - xhat[j] * mean_gx);
            }
        }
        dx
    }
}

/// What one layer's backward pass needs from its forward pass.
pub(super) struct LayerCache {
    n: usize,
    input: Vec<f32>,
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    /// Attention probabilities, `heads × n × n`.
    probs: Vec<f32>,
    context: Vec<f32>,
    attention_norm: NormCache,
    /// The attention block's output, the feed-forward block's input.
    middle: Vec<f32>,
    /// The intermediate map's output, Φ of it (GELU is `x Φ(x)`), and GELU of it.
    pre: Vec<f32>,
    cdf: Vec<f32>,
    act: Vec<f32>,
    output_norm: NormCache,
}

impl LayerCache {
    /// `layer` applied to `x` (`n × hidden`): the cache and the output.
    pub(super) fn forward(layer: &Layer, config: &Config, x: Vec<f32>, n: usize) -> (Self, Vec<f32>) {
        let (h, heads) = (config.hidden, config.heads);
        let d = h / heads;
        let scale = 1.0 / (d as f32).sqrt();
        let (mut q, mut k, mut v) = (Vec::new(), Vec::new(), Vec::new());
        layer.query.forward(&x, &mut q);
        layer.key.forward(&x, &mut k);
        layer.value.forward(&x, &mut v);
        let mut probs = vec![0.0f32; heads * n * n];
        let mut context = vec![0.0f32; n * h];
        for head in 0..heads {
            let off = head * d;
            for i in 0..n {
                let p = &mut probs[(head * n + i) * n..(head * n + i + 1) * n];
                let qi = &q[i * h + off..i * h + off + d];
                let mut max = f32::NEG_INFINITY;
                for (j, s) in p.iter_mut().enumerate() {
                    *s = qi
                        .iter()
                        .zip(&k[j * h + off..j * h + off + d])
                        .map(|(a, b)| a * b)
                        .sum::<f32>()
                        * scale;
                    max = max.max(*s);
                }
                let mut total = 0.0;
                for s in p.iter_mut() {
                    *s = (*s - max).exp();
                    total += *s;
                }
                let c = &mut context[i * h + off..i * h + off + d];
                for (j, s) in p.iter_mut().enumerate() {
                    *s /= total;
                    axpy(c, *s, &v[j * h + off..j * h + off + d]);
                }
            }
        }
        let mut middle = Vec::new();
        layer.attention_out.forward(&context, &mut middle);
        for (m, &a) in middle.iter_mut().zip(&x) {
            *m += a;
        }
        let attention_norm = NormCache::forward(&layer.attention_norm, &mut middle);
        let mut pre = Vec::new();
        layer.intermediate.forward(&middle, &mut pre);
        let cdf: Vec<f32> = pre.iter().map(|&p| normal_cdf(p)).collect();
        let act: Vec<f32> = pre.iter().zip(&cdf).map(|(&p, &c)| p * c).collect();
        let mut out = Vec::new();
        layer.output.forward(&act, &mut out);
        for (o, &m) in out.iter_mut().zip(&middle) {
            *o += m;
        }
        let output_norm = NormCache::forward(&layer.output_norm, &mut out);
        let cache = Self {
            n,
            input: x,
            q,
            k,
            v,
            probs,
            context,
            attention_norm,
            middle,
            pre,
            cdf,
            act,
            output_norm,
        };
        (cache, out)
    }

    /// The input's gradient from the output's `dy`; adds the layer's gradient to `grad`.
    pub(super) fn backward(&self, layer: &Layer, config: &Config, dy: Vec<f32>, grad: &mut Layer) -> Vec<f32> {
        let (h, heads, n) = (config.hidden, config.heads, self.n);
        let d = h / heads;
        let scale = 1.0 / (d as f32).sqrt();
        // Feed-forward block: out = norm(middle + output(gelu(intermediate(middle)))).
        let d_sum = self
            .output_norm
            .backward(&layer.output_norm, &dy, &mut grad.output_norm);
        let mut d_act = vec![0.0f32; self.act.len()];
        layer.output.backward(&self.act, &d_sum, &mut grad.output, &mut d_act);
        for ((g, &p), &c) in d_act.iter_mut().zip(&self.pre).zip(&self.cdf) {
            *g *= gelu_grad(p, c);
        }
        let mut d_middle = d_sum;
        layer
            .intermediate
            .backward(&self.middle, &d_act, &mut grad.intermediate, &mut d_middle);
        // Attention block: middle = norm(x + attention_out(context)).
        let d_sum = self
            .attention_norm
            .backward(&layer.attention_norm, &d_middle, &mut grad.attention_norm);
        let mut d_context = vec![0.0f32; n * h];
        layer
            .attention_out
            .backward(&self.context, &d_sum, &mut grad.attention_out, &mut d_context);
        let (mut dq, mut dk, mut dv) = (vec![0.0f32; n * h], vec![0.0f32; n * h], vec![0.0f32; n * h]);
        let mut dp = vec![0.0f32; n];
        for head in 0..heads {
            let off = head * d;
            for i in 0..n {
                let p = &self.probs[(head * n + i) * n..(head * n + i + 1) * n];
                let dc = &d_context[i * h + off..i * h + off + d];
                for j in 0..n {
                    dp[j] = dot(dc, &self.v[j * h + off..j * h + off + d]);
                    axpy(&mut dv[j * h + off..j * h + off + d], p[j], dc);
                }
                let s = dot(p, &dp);
                for j in 0..n {
                    let ds = p[j] * (dp[j] - s) * scale;
                    axpy(
                        &mut dq[i * h + off..i * h + off + d],
                        ds,
                        &self.k[j * h + off..j * h + off + d],
                    );
                    axpy(
                        &mut dk[j * h + off..j * h + off + d],
                        ds,
                        &self.q[i * h + off..i * h + off + d],
                    );
                }
            }
        }
        let mut dx = d_sum;
        layer.query.backward(&self.input, &dq, &mut grad.query, &mut dx);
        layer.key.backward(&self.input, &dk, &mut grad.key, &mut dx);
        layer.value.backward(&self.input, &dv, &mut grad.value, &mut dx);
        dx
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::values;

    #[test]
    fn matrix_products_match_plain_loops() {
        for (rows, inner, cols) in [(9usize, 7usize, 19usize), (4, 16, 8), (1, 3, 2), (6, 13, 5)] {
            let a = values(1, rows * inner);
            let b = values(2, inner * cols);
            let mut out = values(3, rows * cols);
            let start = out.clone();
            add_product(&a, inner, &b, cols, &mut out);
            let bt: Vec<f32> = (0..cols * inner).map(|x| b[(x % inner) * cols + x / inner]).collect();
            let mut out_nt = start.clone();
            add_product_nt(&a, &bt, inner, &mut out_nt);
            for r in 0..rows {
                for c in 0..cols {
                    let want =
                        start[r * cols + c] + (0..inner).map(|k| a[r * inner + k] * b[k * cols + c]).sum::<f32>();
                    assert!((out[r * cols + c] - want).abs() < 1e-5, "a·b ({r}, {c})");
                    assert!((out_nt[r * cols + c] - want).abs() < 1e-5, "a·bᵀ ({r}, {c})");
                }
            }
        }
    }
}
