//! TVM's sampling instructions, as they stand in a tuned trace:
//! `sample_perfect_tile(loop, n, max_innermost_factor, decision)` and
//! `sample_categorical(candidates, probs, decision)`. They change nothing;
//! they give values that later steps use (`split`'s factors, an
//! annotation's value), so that a trace printed by TVM's MetaSchedule
//! (`sch.trace.show()`) replays unchanged.
//!
//! With a `decision`, the sampled value is the decision, checked: a perfect
//! tile's factors are `n` positive integers whose product is the loop's
//! extent, the innermost no larger than `max_innermost_factor`; a
//! categorical decision is an index into `candidates`. Without one, tirc
//! does not draw at random (a schedule compiles to the same kernel every
//! time): a perfect tile puts the largest divisor of the extent up to
//! `max_innermost_factor` innermost and the rest outermost, and a
//! categorical sample takes the most probable candidate (the first of
//! equals). `tirc tune` is the way to search over such choices.
//!
//! Preconditions of `sample_perfect_tile`, checked in this order:
//! 1. The loop is in the function and has a constant extent.
//! 2. `n` is at least 1 and `max_innermost_factor` at least 1.
//! 3. A decision has `n` positive factors, their product is the extent and
//!    the innermost is at most `max_innermost_factor`.
//!
//! `sample_compute_location(block, decision)` gives where MetaSchedule put a
//! block: `-1` the root (a `compute_at` to it changes nothing), `-2`
//! inlined (a `compute_at` to it is `compute_inline`), `k >= 0` the `k`-th
//! loop, outermost first, of the block's first consumer. Without a
//! decision it is the root.
//!
//! Of `sample_compute_location`: the block is in the function, and a loop
//! decision is a loop of its first consumer.
//!
//! Of `sample_categorical`:
//! 1. There is at least one candidate, and `probs`, if given, has one
//!    number per candidate, none negative.
//! 2. A decision is an index into the candidates.

use super::{BlockRV, LoopRV, Result, Schedule, ScheduleError};
use crate::common::tree::get_loop;
use tirc_ir::Attr;

pub fn sample_perfect_tile(
    sch: &Schedule,
    lp: &LoopRV,
    n: i64,
    max_innermost: Option<i64>,
    decision: Option<&[i64]>,
) -> Result<Vec<i64>> {
    // 1.
    let l = get_loop(&sch.func.body, lp)?;
    let extent = l.extent.as_int().ok_or_else(|| {
        ScheduleError::new(format!("loop `{}` has no constant extent, so it has no perfect tiles to sample", lp.name()))
    })?;
    // 2. (TVM's default innermost limit is 16.)
    let max_inner = max_innermost.unwrap_or(16);
    if n < 1 || max_inner < 1 {
        return Err(ScheduleError::bad_argument(format!(
            "n ({n}) and max_innermost_factor ({max_inner}) must be at least 1"
        )));
    }
    let n = n as usize;
    // 3.
    if let Some(d) = decision {
        let product = d.iter().try_fold(1i64, |a, &f| if f >= 1 { a.checked_mul(f) } else { None });
        if d.len() != n || product != Some(extent) {
            return Err(ScheduleError::bad_argument(format!(
                "the decision {d:?} is not {n} positive factors whose product is loop `{}`'s extent {extent}",
                lp.name()
            )));
        }
        if d[n - 1] > max_inner {
            return Err(ScheduleError::bad_argument(format!(
                "the decision's innermost factor {} is larger than max_innermost_factor {max_inner}",
                d[n - 1]
            )));
        }
        return Ok(d.to_vec());
    }
    let inner = (1..=max_inner.min(extent)).rev().find(|f| extent % f == 0).unwrap_or(1);
    let mut tile = vec![1; n];
    if n == 1 {
        tile[0] = extent;
    } else {
        tile[0] = extent / inner;
        tile[n - 1] = inner;
    }
    Ok(tile)
}

pub fn sample_categorical(candidates: &[i64], probs: Option<&Attr>, decision: Option<i64>) -> Result<i64> {
    // 1.
    if candidates.is_empty() {
        return Err(ScheduleError::bad_argument("sample_categorical needs at least one candidate"));
    }
    let weights: Option<Vec<f64>> = match probs {
        None => None,
        Some(Attr::List(items)) => {
            let w: Option<Vec<f64>> = items
                .iter()
                .map(|x| match x {
                    Attr::Float(f) => Some(*f),
                    Attr::Int(i) => Some(*i as f64),
                    _ => None,
                })
                .collect();
            match w {
                Some(w) if w.len() == candidates.len() && w.iter().all(|p| *p >= 0.0) => Some(w),
                _ => {
                    return Err(ScheduleError::bad_argument(format!(
                        "probs must be {} numbers, one per candidate, none negative",
                        candidates.len()
                    )))
                }
            }
        }
        Some(_) => return Err(ScheduleError::bad_argument("probs must be a list of numbers")),
    };
    // 2.
    if let Some(d) = decision {
        return usize::try_from(d).ok().and_then(|i| candidates.get(i).copied()).ok_or_else(|| {
            ScheduleError::bad_argument(format!(
                "the decision {d} is not an index into {} candidates",
                candidates.len()
            ))
        });
    }
    let best = match weights {
        Some(w) => (0..w.len()).fold(0, |b, i| if w[i] > w[b] { i } else { b }),
        None => 0,
    };
    Ok(candidates[best])
}

/// A place `sample_compute_location` gives.
pub enum Place {
    Loop(LoopRV),
    Root,
    Inline,
}

pub fn sample_compute_location(sch: &Schedule, block: &BlockRV, decision: Option<i64>) -> Result<Place> {
    if sch.func.body.find_block(block).is_none() {
        return Err(ScheduleError::not_found(format!("block `{block}` is not in the function")));
    }
    match decision {
        None | Some(-1) => Ok(Place::Root),
        Some(-2) => Ok(Place::Inline),
        Some(k) if k >= 0 => {
            let consumers = super::deps::get_consumers(sch, block)?;
            let Some(first) = consumers.first() else {
                return Err(ScheduleError::bad_argument(format!(
                    "block `{block}` has no consumer, so decision {k} names no loop: only -1 (the root) or -2 (inline)"
                )));
            };
            let loops = super::get::get_loops(sch, first)?;
            loops.get(k as usize).cloned().map(Place::Loop).ok_or_else(|| {
                ScheduleError::bad_argument(format!(
                    "decision {k} names no loop: block `{first}`, the first consumer of `{block}`, is under {} loops",
                    loops.len()
                ))
            })
        }
        Some(k) => Err(ScheduleError::bad_argument(format!(
            "decision {k} is no compute location: -2 (inline), -1 (the root) or a loop's position"
        ))),
    }
}
