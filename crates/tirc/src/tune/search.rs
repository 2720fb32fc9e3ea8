//! Which candidates to measure next.
//!
//! - `exhaustive`: every candidate, in enumeration order.
//! - `random`: a uniform sample without replacement (the baseline).
//! - `model`: model-guided search, the default under `--budget`. It first
//!   measures a small *covering* design, chosen greedily so that every value
//!   of every swept parameter, and as many pairs of values as the design
//!   allows, are seen at least once. Then, round by round, it fits a ridge
//!   regression of log(time) on one-hot features of each parameter's value
//!   and of each pair of parameters' values (main effects and pairwise
//!   interactions: the loop order alone, or the thread count that `BM/TM`
//!   and `BN/TN` make together), and measures the candidates the model
//!   predicts fastest, with one pick in ten left to chance so that a wrong
//!   early model can still be corrected. Candidates that failed count as
//!   slower than the slowest seen, so that their neighbourhood is avoided.
//!
//! The seeds' Step 2 tables are the reason for this model: the loop order,
//! the tile and the thread tile each move the time by large factors, mostly
//! independently, which an additive model of log(time) captures from few
//! points. [`simulate`] replays a strategy against a table of known times,
//! which is how `tirc tune --evaluate-strategy` compares strategies on a
//! finished sweep.

use super::space::{Candidate, Space};
use std::collections::HashSet;
use tirc_exec::data::Rng;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    Exhaustive,
    Random,
    Model,
}

impl Strategy {
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Exhaustive => "exhaustive",
            Strategy::Random => "random",
            Strategy::Model => "model",
        }
    }
}

/// What was learned of a candidate: its time in ms, or `None` when it
/// failed (mismatch, rejected by the GPU).
pub type Observation = (Candidate, Option<f64>);

/// Proposes the next `n` candidates to measure, none of them in `done`.
pub fn propose(
    strategy: Strategy,
    space: &Space,
    all: &[Candidate],
    done: &HashSet<Candidate>,
    observed: &[Observation],
    n: usize,
    rng: &mut Rng,
) -> Vec<Candidate> {
    let open: Vec<&Candidate> = all.iter().filter(|c| !done.contains(*c)).collect();
    if open.is_empty() || n == 0 {
        return vec![];
    }
    match strategy {
        Strategy::Exhaustive => open.into_iter().take(n).cloned().collect(),
        Strategy::Random => sample(open, n, rng),
        Strategy::Model => {
            let model = Model::new(space);
            let seen_ok = observed.iter().filter(|o| o.1.is_some()).count();
            if seen_ok < model.initial_design_size() {
                return model.cover(open, observed, n, rng);
            }
            model.best_predicted(open, observed, n, rng)
        }
    }
}

/// Uniform in [0, 1). (`Rng::uniform` is in [-1, 1).)
fn unit(rng: &mut Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// Uniform in 0..n.
fn pick(rng: &mut Rng, n: usize) -> usize {
    ((unit(rng) * n as f64) as usize).min(n.saturating_sub(1))
}

fn sample(open: Vec<&Candidate>, n: usize, rng: &mut Rng) -> Vec<Candidate> {
    sample_refs(open, n, rng).into_iter().cloned().collect()
}

fn sample_refs<'a>(mut open: Vec<&'a Candidate>, n: usize, rng: &mut Rng) -> Vec<&'a Candidate> {
    let mut out = Vec::new();
    while out.len() < n && !open.is_empty() {
        let i = pick(rng, open.len());
        out.push(open.swap_remove(i));
    }
    out
}

/// One-hot features of main effects and pairwise interactions of the swept
/// parameters.
struct Model {
    swept: Vec<usize>,
    sizes: Vec<usize>,
    /// First feature of each swept parameter's main effect.
    single: Vec<usize>,
    /// First feature of each pair (a, b), a < b, of swept parameters.
    pairs: Vec<(usize, usize, usize)>,
    dim: usize,
}

impl Model {
    fn new(space: &Space) -> Model {
        let swept = space.swept();
        let sizes: Vec<usize> = swept.iter().map(|&p| space.params[p].1.len()).collect();
        let mut dim = 0;
        let mut single = Vec::new();
        for s in &sizes {
            single.push(dim);
            dim += s;
        }
        let mut pairs = Vec::new();
        for a in 0..swept.len() {
            for b in a + 1..swept.len() {
                pairs.push((a, b, dim));
                dim += sizes[a] * sizes[b];
            }
        }
        Model { swept, sizes, single, pairs, dim }
    }

    /// Enough points to see every value of every parameter once, and a few
    /// more so that the first fit is not guesswork.
    fn initial_design_size(&self) -> usize {
        let most = self.sizes.iter().copied().max().unwrap_or(1);
        (most + self.swept.len()).max(4)
    }

    fn features(&self, c: &Candidate) -> Vec<usize> {
        let v: Vec<usize> = self.swept.iter().map(|&p| c[p]).collect();
        let mut f: Vec<usize> = (0..v.len()).map(|i| self.single[i] + v[i]).collect();
        for &(a, b, off) in &self.pairs {
            f.push(off + v[a] * self.sizes[b] + v[b]);
        }
        f
    }

    /// Greedy covering design: the candidates that add the most unseen
    /// values (and, second, unseen pairs of values).
    fn cover(&self, open: Vec<&Candidate>, observed: &[Observation], n: usize, rng: &mut Rng) -> Vec<Candidate> {
        let singles = self.sizes.len();
        let mut seen = vec![false; self.dim];
        for (c, _) in observed {
            for f in self.features(c) {
                seen[f] = true;
            }
        }
        // Large spaces: score a random subset.
        let mut pool = if open.len() > 4096 { sample_refs(open, 4096, rng) } else { open };
        let mut out = Vec::new();
        while out.len() < n && !pool.is_empty() {
            let mut best = Vec::new();
            let mut best_score = -1.0;
            for (i, c) in pool.iter().enumerate() {
                let fs = self.features(c);
                let score: f64 = fs
                    .iter()
                    .enumerate()
                    .filter(|(_, f)| !seen[**f])
                    .map(|(k, _)| if k < singles { 1.0 } else { 0.01 })
                    .sum();
                if score > best_score {
                    best_score = score;
                    best.clear();
                }
                if score == best_score {
                    best.push(i);
                }
            }
            let i = best[pick(rng, best.len())];
            let c = pool.swap_remove(i);
            for f in self.features(c) {
                seen[f] = true;
            }
            out.push(c.clone());
        }
        out
    }

    /// Fits the model to what was seen, then takes the `n` open candidates
    /// with the lowest predicted time, one in ten at random instead.
    fn best_predicted(
        &self,
        open: Vec<&Candidate>,
        observed: &[Observation],
        n: usize,
        rng: &mut Rng,
    ) -> Vec<Candidate> {
        let w = self.fit(observed);
        let mut scored: Vec<(f64, &Candidate)> =
            open.iter().map(|c| (self.features(c).iter().map(|f| w[*f]).sum::<f64>(), *c)).collect();
        scored.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut out: Vec<Candidate> = Vec::new();
        let mut ranked = scored.into_iter().map(|x| x.1).collect::<Vec<_>>();
        while out.len() < n && !ranked.is_empty() {
            let i = if unit(rng) < 0.1 { pick(rng, ranked.len()) } else { 0 };
            out.push(ranked.remove(i).clone());
        }
        out
    }

    /// Ridge regression of centred log(time) on the features.
    fn fit(&self, observed: &[Observation]) -> Vec<f64> {
        let logs: Vec<f64> = observed.iter().filter_map(|o| o.1).map(f64::ln).collect();
        let worst = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let penalty = if worst.is_finite() { worst + 1.0 } else { 0.0 };
        let rows: Vec<(Vec<usize>, f64)> =
            observed.iter().map(|(c, t)| (self.features(c), t.map_or(penalty, f64::ln))).collect();
        let mean = rows.iter().map(|r| r.1).sum::<f64>() / rows.len().max(1) as f64;
        let d = self.dim;
        let mut a = vec![0.0; d * d];
        let mut b = vec![0.0; d];
        for (fs, y) in &rows {
            for &i in fs {
                b[i] += y - mean;
                for &j in fs {
                    a[i * d + j] += 1.0;
                }
            }
        }
        let singles = self.sizes.iter().sum::<usize>();
        for i in 0..d {
            // Interactions are shrunk harder than main effects.
            a[i * d + i] += if i < singles { 0.5 } else { 2.0 };
        }
        solve(a, b, d)
    }
}

/// Solves the symmetric positive definite system `a x = b` (Cholesky).
fn solve(mut a: Vec<f64>, mut b: Vec<f64>, d: usize) -> Vec<f64> {
    for j in 0..d {
        let mut s = a[j * d + j];
        for k in 0..j {
            s -= a[j * d + k] * a[j * d + k];
        }
        let l = s.max(1e-12).sqrt();
        a[j * d + j] = l;
        for i in j + 1..d {
            let mut s = a[i * d + j];
            for k in 0..j {
                s -= a[i * d + k] * a[j * d + k];
            }
            a[i * d + j] = s / l;
        }
    }
    for i in 0..d {
        let mut s = b[i];
        for k in 0..i {
            s -= a[i * d + k] * b[k];
        }
        b[i] = s / a[i * d + i];
    }
    for i in (0..d).rev() {
        let mut s = b[i];
        for k in i + 1..d {
            s -= a[k * d + i] * b[k];
        }
        b[i] = s / a[i * d + i];
    }
    b
}

/// Replays `strategy` with `budget` measurements, `batch` at a time,
/// against known times (`time(c)`: `None` for a candidate that fails).
/// Returns the candidates in the order measured.
pub fn simulate(
    strategy: Strategy,
    space: &Space,
    all: &[Candidate],
    time: &dyn Fn(&Candidate) -> Option<f64>,
    budget: usize,
    batch: usize,
    seed: u64,
) -> Vec<Candidate> {
    let mut rng = Rng::new(seed);
    let mut done = HashSet::new();
    let mut observed = Vec::new();
    while observed.len() < budget {
        let n = batch.min(budget - observed.len());
        let next = propose(strategy, space, all, &done, &observed, n, &mut rng);
        if next.is_empty() {
            break;
        }
        for c in next {
            done.insert(c.clone());
            let t = time(&c);
            observed.push((c, t));
        }
    }
    observed.into_iter().map(|o| o.0).collect()
}

/// How a strategy fares over many replays: the mean of (best time found /
/// best time in the space), and how often it found the very best.
#[derive(Clone, Copy, Debug)]
pub struct Replay {
    pub mean_ratio: f64,
    pub found_best: f64,
}

pub fn replay(
    strategy: Strategy,
    space: &Space,
    all: &[Candidate],
    time: &dyn Fn(&Candidate) -> Option<f64>,
    budget: usize,
    batch: usize,
    trials: u64,
) -> Replay {
    let best = all.iter().filter_map(time).fold(f64::INFINITY, f64::min);
    let mut sum = 0.0;
    let mut hits = 0;
    for t in 0..trials {
        let got = simulate(strategy, space, all, time, budget, batch, 1000 + t);
        let found = got.iter().filter_map(time).fold(f64::INFINITY, f64::min);
        sum += found / best;
        if found <= best {
            hits += 1;
        }
    }
    Replay { mean_ratio: sum / trials.max(1) as f64, found_best: hits as f64 / trials.max(1) as f64 }
}
