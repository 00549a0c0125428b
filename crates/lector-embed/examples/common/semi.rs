//! Semi-supervised experiments of the few-shot benchmark (`fewshot.rs`, issue 15): what a
//! project's unlabelled texts (a pool of training rows whose labels are hidden) can add to a
//! few labelled examples. Self-training (train, predict the pool, add the most confident
//! predictions of each label, train again), label propagation on the encoder's vectors, and
//! centring or whitening those vectors with the pool's statistics. Only `fewshot` uses it
//! (`#[path]`), so it is not part of `common`'s module tree.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

use lector_embed::MiniLm;
use lector_ml::{Embedder, Example, Model, ProgressFn, Tag, TuneGoal, TuneSet, Tuned};

/// The MiniLM with every vector it made kept by text, and kept on disk between runs
/// (`--vector-cache`): the benchmark embeds the same few thousand texts in every run.
#[derive(Debug)]
pub struct Cached {
    inner: MiniLm,
    map: Mutex<HashMap<String, Vec<f32>>>,
}

impl Cached {
    pub fn new(inner: MiniLm, path: Option<&Path>) -> Self {
        let mut map = HashMap::new();
        if let Some(bytes) = path.and_then(|p| std::fs::read(p).ok()) {
            let mut r: &[u8] = &bytes;
            let u32_at = |r: &mut &[u8]| -> Option<u32> {
                let mut b = [0u8; 4];
                r.read_exact(&mut b).ok()?;
                Some(u32::from_le_bytes(b))
            };
            while let (Some(n), Some(d)) = (u32_at(&mut r), u32_at(&mut r)) {
                let (t, rest) = r.split_at(n as usize);
                let (v, rest) = rest.split_at(4 * d as usize);
                let v = v.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]));
                map.insert(String::from_utf8_lossy(t).into_owned(), v.collect());
                r = rest;
            }
        }
        Self {
            inner,
            map: Mutex::new(map),
        }
    }

    /// Embeds the texts not known yet, in batches.
    pub fn prefetch(&self, texts: &[&str]) {
        let mut missing: Vec<&str> = {
            let m = self.map.lock().unwrap();
            texts.iter().copied().filter(|t| !m.contains_key(*t)).collect()
        };
        missing.sort_by_key(|t| t.len());
        missing.dedup();
        for chunk in missing.chunks(16) {
            let vs = self.inner.embed_batch(chunk);
            let mut m = self.map.lock().unwrap();
            for (t, v) in chunk.iter().zip(vs) {
                m.insert((*t).to_string(), v);
            }
        }
    }

    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let m = self.map.lock().unwrap();
        let mut out = Vec::new();
        for (t, v) in m.iter() {
            out.write_all(&(t.len() as u32).to_le_bytes())?;
            out.write_all(&(v.len() as u32).to_le_bytes())?;
            out.write_all(t.as_bytes())?;
            for x in v {
                out.write_all(&x.to_le_bytes())?;
            }
        }
        std::fs::write(path, out)
    }
}

impl Embedder for Cached {
    fn id(&self) -> String {
        self.inner.id()
    }
    fn dim(&self) -> usize {
        Embedder::dim(&self.inner)
    }
    fn embed(&self, text: &str) -> Vec<f32> {
        if let Some(v) = self.map.lock().unwrap().get(text) {
            return v.clone();
        }
        let v = self.inner.embed(text);
        self.map.lock().unwrap().insert(text.to_string(), v.clone());
        v
    }
    fn can_tune(&self, goal: TuneGoal) -> bool {
        goal == TuneGoal::Pairs
    }
    fn tune(&self, set: &TuneSet<'_>, progress: &mut ProgressFn<'_>) -> lector_ml::Result<Arc<dyn Tuned>> {
        if set.target.goal() != TuneGoal::Pairs {
            return Err(lector_ml::Error::InvalidInput(
                "this encoder is tuned on pairs only".into(),
            ));
        }
        self.inner.tune(set, progress)
    }
    fn load_tuned(&self, bytes: &[u8]) -> lector_ml::Result<Arc<dyn Tuned>> {
        self.inner.load_tuned(bytes)
    }
}

/// An encoder's vectors centred on the pool's mean and, with `proj`, projected on the pool's
/// top principal components each scaled to unit variance (PCA whitening); then unit length.
#[derive(Debug)]
pub struct Whitened {
    inner: Arc<dyn Embedder>,
    mean: Vec<f32>,
    /// Rows: the kept components, divided by the square root of their variance.
    proj: Vec<Vec<f32>>,
    tag: String,
}

impl Whitened {
    /// Fitted on `pool`'s vectors; `dims` = 0 only centres.
    pub fn fit(inner: Arc<dyn Embedder>, pool: &[Vec<f32>], dims: usize, eps: f64) -> Self {
        let d = inner.dim();
        let n = pool.len().max(1) as f64;
        let mut mean = vec![0f64; d];
        for v in pool {
            for (m, &x) in mean.iter_mut().zip(v) {
                *m += x as f64 / n;
            }
        }
        let mut proj = Vec::new();
        if dims > 0 {
            let mut cov = vec![0f64; d * d];
            for v in pool {
                let c: Vec<f64> = v.iter().zip(&mean).map(|(&x, m)| x as f64 - m).collect();
                for i in 0..d {
                    for j in i..d {
                        cov[i * d + j] += c[i] * c[j] / n;
                    }
                }
            }
            for i in 0..d {
                for j in 0..i {
                    cov[i * d + j] = cov[j * d + i];
                }
            }
            let (values, vectors) = jacobi_eigen(cov, d);
            let mut order: Vec<usize> = (0..d).collect();
            order.sort_by(|&a, &b| values[b].total_cmp(&values[a]));
            let total: f64 = values.iter().map(|v| v.max(0.0)).sum();
            for &k in order.iter().take(dims.min(d)) {
                let s = 1.0 / (values[k].max(0.0) + eps * total / d as f64).sqrt();
                proj.push((0..d).map(|i| (vectors[i * d + k] * s) as f32).collect());
            }
        }
        Self {
            inner: inner.clone(),
            mean: mean.iter().map(|&m| m as f32).collect(),
            tag: if dims > 0 {
                format!("white{dims}")
            } else {
                "centred".into()
            },
            proj,
        }
    }

    pub fn transform(&self, v: &[f32]) -> Vec<f32> {
        let c: Vec<f32> = v.iter().zip(&self.mean).map(|(x, m)| x - m).collect();
        let mut out = if self.proj.is_empty() {
            c
        } else {
            self.proj
                .iter()
                .map(|p| p.iter().zip(&c).map(|(a, b)| a * b).sum())
                .collect()
        };
        let norm = out.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
        out.iter_mut().for_each(|x| *x /= norm);
        out
    }
}

impl Embedder for Whitened {
    fn id(&self) -> String {
        format!("{}-{}", self.inner.id(), self.tag)
    }
    fn dim(&self) -> usize {
        if self.proj.is_empty() {
            self.inner.dim()
        } else {
            self.proj.len()
        }
    }
    fn embed(&self, text: &str) -> Vec<f32> {
        self.transform(&self.inner.embed(text))
    }
}

/// Eigenvalues and eigenvectors (columns of the `d`×`d` row-major result) of a symmetric
/// matrix, by cyclic Jacobi rotations.
fn jacobi_eigen(mut a: Vec<f64>, d: usize) -> (Vec<f64>, Vec<f64>) {
    let mut v = vec![0f64; d * d];
    for i in 0..d {
        v[i * d + i] = 1.0;
    }
    for _sweep in 0..30 {
        let off: f64 = (0..d)
            .flat_map(|i| (0..d).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| a[i * d + j] * a[i * d + j])
            .sum();
        if off < 1e-22 {
            break;
        }
        for p in 0..d {
            for q in p + 1..d {
                let apq = a[p * d + q];
                if apq.abs() < 1e-30 {
                    continue;
                }
                let theta = (a[q * d + q] - a[p * d + p]) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..d {
                    let (akp, akq) = (a[k * d + p], a[k * d + q]);
                    a[k * d + p] = c * akp - s * akq;
                    a[k * d + q] = s * akp + c * akq;
                }
                for k in 0..d {
                    let (apk, aqk) = (a[p * d + k], a[q * d + k]);
                    a[p * d + k] = c * apk - s * aqk;
                    a[q * d + k] = s * apk + c * aqk;
                }
                for k in 0..d {
                    let (vkp, vkq) = (v[k * d + p], v[k * d + q]);
                    v[k * d + p] = c * vkp - s * vkq;
                    v[k * d + q] = s * vkp + c * vkq;
                }
            }
        }
    }
    ((0..d).map(|i| a[i * d + i]).collect(), v)
}

/// Label propagation (Zhou et al., 2004) over the `k`-nearest-neighbour graph (cosine) of the
/// labelled vectors (`labels`: their label indices) and the pool's: the pool's label scores,
/// each label's column normalised to sum 1 (class mass normalisation), after `iters` steps of
/// F ← αSF + (1−α)Y.
pub fn propagate(
    labelled: &[Vec<f32>],
    labels: &[usize],
    n_labels: usize,
    pool: &[Vec<f32>],
    k: usize,
    alpha: f32,
    iters: usize,
) -> Vec<Vec<f32>> {
    let all: Vec<&Vec<f32>> = labelled.iter().chain(pool).collect();
    let n = all.len();
    let norm: Vec<f32> = all
        .iter()
        .map(|v| v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12))
        .collect();
    // The k nearest of each point, with their similarity (clamped at 0), made symmetric.
    let mut w: Vec<HashMap<usize, f32>> = vec![HashMap::new(); n];
    for i in 0..n {
        let mut sims: Vec<(usize, f32)> = (0..n)
            .filter(|&j| j != i)
            .map(|j| (j, dot(all[i], all[j]) / (norm[i] * norm[j])))
            .collect();
        sims.sort_by(|a, b| b.1.total_cmp(&a.1));
        for &(j, s) in sims.iter().take(k) {
            let s = s.max(0.0);
            *w[i].entry(j).or_default() = s;
            let e = w[j].entry(i).or_default();
            *e = e.max(s);
        }
    }
    let deg: Vec<f32> = w.iter().map(|r| r.values().sum::<f32>().max(1e-12)).collect();
    let mut y = vec![vec![0f32; n_labels]; n];
    for (i, &l) in labels.iter().enumerate() {
        y[i][l] = 1.0;
    }
    let mut f = y.clone();
    for _ in 0..iters {
        let mut next = vec![vec![0f32; n_labels]; n];
        for i in 0..n {
            for (&j, &s) in &w[i] {
                let s = s / (deg[i] * deg[j]).sqrt();
                for c in 0..n_labels {
                    next[i][c] += alpha * s * f[j][c];
                }
            }
            for c in 0..n_labels {
                next[i][c] += (1.0 - alpha) * y[i][c];
            }
        }
        f = next;
    }
    let mut out: Vec<Vec<f32>> = f.split_off(labelled.len());
    for c in 0..n_labels {
        let sum: f32 = out.iter().map(|r| r[c]).sum::<f32>().max(1e-12);
        for r in &mut out {
            r[c] /= sum;
        }
    }
    out
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// For each label, the `per_label` pool rows scored highest for it among those whose best
/// label it is (fewer where fewer are), as examples of that label; `scores[i][l]`.
pub fn most_confident(pool: &[&str], scores: &[Vec<f32>], names: &[String], per_label: usize) -> Vec<(usize, Example)> {
    let mut out = Vec::new();
    for (l, name) in names.iter().enumerate() {
        let mut mine: Vec<(usize, f32)> = scores
            .iter()
            .enumerate()
            .filter(|(_, s)| argmax(s) == l)
            .map(|(i, s)| (i, s[l]))
            .collect();
        mine.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        for &(i, _) in mine.iter().take(per_label) {
            out.push((i, Example::new(pool[i], vec![Tag::label(name.clone())])));
        }
    }
    out
}

fn argmax(s: &[f32]) -> usize {
    (0..s.len()).fold(0, |b, i| if s[i] > s[b] { i } else { b })
}

/// The model's label probabilities for each pool text, in the order of `names`.
pub fn label_scores(model: &Model, pool: &[&str], names: &[String]) -> Vec<Vec<f32>> {
    pool.iter()
        .map(|t| {
            let p = model.predict(t);
            names
                .iter()
                .map(|n| p.labels.iter().find(|s| &s.name == n).map_or(0.0, |s| s.probability))
                .collect()
        })
        .collect()
}
