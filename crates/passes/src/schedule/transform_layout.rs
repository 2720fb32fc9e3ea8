//! `transform_layout(block, buffer, index_map)`: a buffer's elements
//! rearranged by an index map, TVM's primitive of that name and arguments.
//!
//! `buffer` is `("read", i)` or `("write", i)` (the block's `i`-th read or
//! written buffer) or the buffer's name; `index_map` a lambda from the
//! buffer's indices to the new ones, as TVM writes it:
//! `lambda i, k: (k, i)` (a transposed tile), `lambda i, j: (i // 16,
//! j // 16, i % 16, j % 16)` (16×16 tiles, each contiguous). The buffer's
//! shape becomes the image of its old shape, and every access to it, in
//! every block, reads `B[map(indices)]`; what the function computes is
//! unchanged. The blocks that access it get their regions inferred again.
//!
//! Preconditions, checked in this order:
//! 1. The block exists and the buffer is one of its reads or writes.
//! 2. The buffer is allocated inside the function: a parameter's layout
//!    is what the caller passes.
//! 3. The buffer has no `storage_align` request (whose axis would lose its
//!    meaning: align after transforming).
//! 4. The map takes as many indices as the buffer has dimensions and gives
//!    integer expressions of them (`+ - * // %`, `min`, `max`, literals).
//! 5. The map is a bijection from the old shape onto the box of its image:
//!    every element lands on a distinct new index, each index of the new
//!    shape `(max + 1 per result)` is reached, none is negative. Up to
//!    2^20 elements this is checked element by element; a larger buffer
//!    (a cache of a whole operand, before compaction) is checked on one
//!    period of the map (`periodic_image`), which must then be a tile
//!    placed by whole steps along dimensions of its own. A shape of
//!    run-time sizes takes only a permutation of its dimensions (`lambda i,
//!    k: (k, i)`), whose new shape is the old one permuted.
//!
//! TVM's `pad_value` (a map onto a larger box, the padding filled) is not
//! taken yet, nor `assume_injective_transform`.

use super::{BlockRV, Result, Schedule, ScheduleError};
use crate::arith::Analyzer;
use std::fmt;
use tirc_ir::buffer::DIM_ALIGN_KEY;
use tirc_ir::printer::print_expr;
use tirc_ir::region::infer_block_regions;
use tirc_ir::subst::substitute;
use tirc_ir::{BinOp, Buffer, Expr, Stmt, Var};

/// Which buffer of a block: TVM's `("read", i)`, `("write", i)` or a name.
#[derive(Clone, Debug, PartialEq)]
pub enum BufferRef {
    Read(usize),
    Write(usize),
    Name(String),
}

impl fmt::Display for BufferRef {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            BufferRef::Read(i) => write!(f, "(\"read\", {i})"),
            BufferRef::Write(i) => write!(f, "(\"write\", {i})"),
            BufferRef::Name(n) => write!(f, "\"{n}\""),
        }
    }
}

/// `lambda params: (results)`, its results integer expressions of its
/// parameters.
#[derive(Clone, Debug)]
pub struct IndexMap {
    pub params: Vec<Var>,
    pub results: Vec<Expr>,
}

impl IndexMap {
    /// The new indices of an access at `indices`.
    pub fn apply(&self, indices: &[Expr]) -> Vec<Expr> {
        let map: Vec<(Var, Expr)> = self.params.iter().cloned().zip(indices.iter().cloned()).collect();
        self.results.iter().map(|r| substitute(r, &map)).collect()
    }
}

impl fmt::Display for IndexMap {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let params: Vec<&str> = self.params.iter().map(|v| v.name()).collect();
        let results: Vec<String> = self.results.iter().map(print_expr).collect();
        let tuple = if results.len() == 1 { format!("({},)", results[0]) } else { format!("({})", results.join(", ")) };
        write!(f, "lambda {}: {tuple}", params.join(", "))
    }
}

/// Elements up to which the bijection is checked by enumeration.
const MAX_ELEMENTS: i64 = 1 << 20;

pub fn transform_layout(sch: &mut Schedule, block: &BlockRV, buffer: &BufferRef, map: &IndexMap) -> Result<()> {
    // 1.
    let r = sch
        .func
        .body
        .find_block(block)
        .ok_or_else(|| ScheduleError::not_found(format!("block `{block}` is not in the function")))?;
    let b: Buffer = match buffer {
        BufferRef::Read(i) => r.block.reads.get(*i).map(|x| x.buffer.clone()),
        BufferRef::Write(i) => r.block.writes.get(*i).map(|x| x.buffer.clone()),
        BufferRef::Name(n) => {
            r.block.reads.iter().chain(&r.block.writes).map(|x| x.buffer.clone()).find(|x| x.name() == n)
        }
    }
    .ok_or_else(|| {
        ScheduleError::bad_argument(format!(
            "block `{block}` has no buffer {buffer}: it reads {} and writes {}",
            names(r.block.reads.iter().map(|x| &x.buffer)),
            names(r.block.writes.iter().map(|x| &x.buffer))
        ))
    })?;
    // 2.
    if sch.func.params.contains(&b) {
        return Err(ScheduleError::unsupported(format!(
            "`{}` is a parameter of the function: its layout is what the caller passes",
            b.name()
        ))
        .help("transform the layout of a copy of it (cache_read or cache_write) instead"));
    }
    // 3.
    let mut aligned = false;
    sch.func.body.walk(&mut |s| {
        if let Stmt::Block(x) = s {
            aligned |= x.block.annotations.iter().any(|(k, _)| k == DIM_ALIGN_KEY)
                && x.block.writes.iter().any(|w| w.buffer == b);
        }
    });
    if aligned || !b.dim_align().is_empty() {
        return Err(ScheduleError::new(format!(
            "`{}` has a storage_align request, whose axis the new layout would not keep",
            b.name()
        ))
        .help("call transform_layout before storage_align"));
    }
    // 4.
    if map.params.len() != b.shape().len() {
        return Err(ScheduleError::bad_argument(format!(
            "the index map takes {} {}, but `{}` has {} dimensions",
            map.params.len(),
            if map.params.len() == 1 { "index" } else { "indices" },
            b.name(),
            b.shape().len()
        )));
    }
    // 5.
    let t = b.shape().first().map_or(tirc_ir::DType::I32, Expr::dtype);
    let new_shape: Vec<Expr> = match b.shape().iter().map(Expr::as_int).collect::<Option<Vec<i64>>>() {
        Some(shape) => {
            let elements = shape.iter().try_fold(1i64, |a, &d| a.checked_mul(d)).unwrap_or(i64::MAX);
            let checked = if elements > MAX_ELEMENTS { periodic_image(map, &shape) } else { image(map, &shape) };
            let new_shape = checked.map_err(|why| {
                ScheduleError::new(format!(
                    "the index map `{map}` is not a bijection onto a new shape of `{}`: {why}",
                    b.name()
                ))
            })?;
            new_shape.iter().map(|&d| Expr::Int(d, t)).collect()
        }
        // A shape of run-time sizes (a cache of a whole operand, before
        // compute_at shrinks it): a permutation of the dimensions, whose
        // new shape is the old one permuted.
        None => match permutation(map) {
            Some(order) => order.iter().map(|&d| b.shape()[d].clone()).collect(),
            None => {
                return Err(ScheduleError::unsupported(format!(
                    "`{}` has a shape known only at run time, where tirc takes only a permutation of its dimensions, not `{map}`",
                    b.name()
                ))
                .help("transform the layout after compute_at has given the buffer a constant shape, or permute its dimensions (lambda i, k: (k, i))"))
            }
        },
    };

    // The rewrite: every access through the map, the buffer reshaped.
    let nb = b.with(|n| n.shape = new_shape);
    let a = Analyzer::new();
    let remap = |idx: &[Expr]| -> Vec<Expr> { map.apply(idx).iter().map(|e| a.simplify(e)).collect() };
    let body = sch.func.body.map_exprs(&mut |e| loads(e, &b, &nb, &remap));
    sch.func.body = body.rewrite_owned(&mut |s| rewrite(s, &b, &nb, &remap));
    Ok(())
}

/// For a map whose results are its parameters in another order (`lambda
/// i, k: (k, i)`), the parameter each result is.
fn permutation(map: &IndexMap) -> Option<Vec<usize>> {
    let order: Vec<usize> = map
        .results
        .iter()
        .map(|r| r.as_var().and_then(|v| map.params.iter().position(|p| p == v)))
        .collect::<Option<_>>()?;
    let mut seen = order.clone();
    seen.sort_unstable();
    seen.dedup();
    (order.len() == map.params.len() && seen.len() == order.len()).then_some(order)
}

fn names<'a>(bs: impl Iterator<Item = &'a Buffer>) -> String {
    let v: Vec<String> = bs.map(|b| format!("`{}`", b.name())).collect();
    if v.is_empty() {
        "nothing".into()
    } else {
        v.join(", ")
    }
}

/// `e` with each load of `b` a load of `nb` through the map.
fn loads(e: &Expr, b: &Buffer, nb: &Buffer, remap: &dyn Fn(&[Expr]) -> Vec<Expr>) -> Expr {
    let e = e.map_children(|c| loads(c, b, nb, remap));
    match e {
        Expr::Load(x, idx) if x == *b => Expr::Load(nb.clone(), remap(&idx)),
        e => e,
    }
}

/// Stores to `b`, its allocations and the regions of the blocks that
/// touch it, for the reshaped `nb`.
fn rewrite(s: Stmt, b: &Buffer, nb: &Buffer, remap: &dyn Fn(&[Expr]) -> Vec<Expr>) -> tirc_ir::stmt::Rewrite {
    use tirc_ir::stmt::Rewrite;
    match s {
        Stmt::Store { buffer, indices, value } if buffer == *b => {
            Rewrite::Done(Stmt::Store { buffer: nb.clone(), indices: remap(&indices), value })
        }
        Stmt::Allocate { buffer, body } if buffer == *b => {
            Rewrite::Descend(Stmt::Allocate { buffer: nb.clone(), body })
        }
        Stmt::Block(mut r) => {
            for a in &mut r.block.alloc_buffers {
                if *a == *b {
                    *a = nb.clone();
                }
            }
            let touches = r.block.reads.iter().chain(&r.block.writes).any(|x| x.buffer == *b);
            if touches {
                // The body first (its stores), then the regions again.
                let body = std::mem::replace(&mut r.block.body, Stmt::NoOp);
                r.block.body = body.rewrite_owned(&mut |s| rewrite(s, b, nb, remap));
                if let Some(init) = r.block.init.take() {
                    r.block.init = Some(init.rewrite_owned(&mut |s| rewrite(s, b, nb, remap)));
                }
                let (reads, writes) = infer_block_regions(&r.block);
                r.block.reads = reads;
                r.block.writes = writes;
                return Rewrite::Done(Stmt::Block(r));
            }
            Rewrite::Descend(Stmt::Block(r))
        }
        s => Rewrite::Descend(s),
    }
}

/// The new shape: per result, one more than its largest value over the old
/// shape; or why the map is not a bijection onto it.
fn image(map: &IndexMap, shape: &[i64]) -> std::result::Result<Vec<i64>, String> {
    let n: i64 = shape.iter().product();
    let mut points: Vec<Vec<i64>> = Vec::with_capacity(n as usize);
    let mut idx = vec![0i64; shape.len()];
    let mut hi = vec![0i64; map.results.len()];
    for _ in 0..n {
        let mut p = Vec::with_capacity(map.results.len());
        for (k, r) in map.results.iter().enumerate() {
            let v = eval(r, &map.params, &idx).ok_or_else(|| {
                format!("`{}` is not an integer expression tirc can evaluate (+ - * // % min max)", print_expr(r))
            })?;
            if v < 0 {
                return Err(format!("it maps {idx:?} to the negative index {v} in dimension {k}"));
            }
            hi[k] = hi[k].max(v);
            p.push(v);
        }
        points.push(p);
        for d in (0..idx.len()).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    let Some(new_shape) = hi.iter().map(|h| h.checked_add(1)).collect::<Option<Vec<i64>>>() else {
        return Err(format!("it maps to an index of {}, past any buffer's size", i64::MAX));
    };
    let size = new_shape.iter().try_fold(1i64, |a, &d| a.checked_mul(d)).unwrap_or(i64::MAX);
    if size <= 4 * MAX_ELEMENTS {
        // Which element first landed on each new index.
        let mut first: Vec<u32> = vec![u32::MAX; size as usize];
        for (k, p) in points.iter().enumerate() {
            let flat = p.iter().zip(&new_shape).fold(0i64, |a, (&v, &d)| a * d + v) as usize;
            if first[flat] != u32::MAX {
                let old = |k: usize| {
                    let mut rest = k as i64;
                    let mut v: Vec<i64> = shape
                        .iter()
                        .rev()
                        .map(|&d| {
                            let x = rest % d;
                            rest /= d;
                            x
                        })
                        .collect();
                    v.reverse();
                    v
                };
                return Err(format!("{:?} and {:?} both land on {p:?}", old(first[flat] as usize), old(k)));
            }
            first[flat] = k as u32;
        }
    }
    if size != n {
        return Err(format!(
            "the image spans {new_shape:?}, {size} elements, where the buffer has {n}: a map onto a larger box \
             needs padding (pad_value), which tirc does not take yet"
        ));
    }
    Ok(new_shape)
}

/// The value of `e` with `params` at `at`.
pub(super) fn eval(e: &Expr, params: &[Var], at: &[i64]) -> Option<i64> {
    match e {
        Expr::Int(v, _) => Some(*v),
        Expr::Var(v) => params.iter().position(|p| p == v).map(|k| at[k]),
        Expr::Binary(op, a, b) => {
            let (x, y) = (eval(a, params, at)?, eval(b, params, at)?);
            match op {
                BinOp::Add => x.checked_add(y),
                BinOp::Sub => x.checked_sub(y),
                BinOp::Mul => x.checked_mul(y),
                BinOp::FloorDiv if y != 0 => Some(tirc_ir::expr::floor_div(x, y)),
                BinOp::FloorMod if y != 0 => Some(tirc_ir::expr::floor_mod(x, y)),
                BinOp::Min => Some(x.min(y)),
                BinOp::Max => Some(x.max(y)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// How much `e` grows when parameter `d` grows by `step`, if that is the
/// same wherever the other parameters are: `x // c` and `x % c` need `x`
/// to grow by a multiple of `c`.
fn shift(e: &Expr, d: &Var, step: i64) -> Option<i64> {
    match e {
        Expr::Int(..) => Some(0),
        Expr::Var(v) => Some(if v == d { step } else { 0 }),
        Expr::Binary(op, a, b) => {
            let (x, y) = (shift(a, d, step)?, shift(b, d, step)?);
            match op {
                BinOp::Add => x.checked_add(y),
                BinOp::Sub => x.checked_sub(y),
                BinOp::Mul => match (a.as_int(), b.as_int()) {
                    (Some(c), _) => y.checked_mul(c),
                    (_, Some(c)) => x.checked_mul(c),
                    _ if x == 0 && y == 0 => Some(0),
                    _ => None,
                },
                BinOp::FloorDiv | BinOp::FloorMod => {
                    let c = b.as_int().filter(|&c| c > 0)?;
                    if y != 0 || x % c != 0 {
                        return None;
                    }
                    Some(if *op == BinOp::FloorDiv { x / c } else { 0 })
                }
                _ if x == 0 && y == 0 => Some(0),
                _ => None,
            }
        }
        _ => None,
    }
}

/// `image` for a buffer too large to enumerate: the map is periodic,
/// `map(r + q * step) = g(r) + D q` with `r` in a box of one step per
/// dimension and `q` counting the steps, and that box is enumerated. The
/// map is a bijection onto its image's box if `g` is injective, each
/// dimension's step moves exactly one result (its "digit"), and the steps
/// that move one result are digits apart: each further than the spread of
/// `g` there plus all the smaller steps of that result. Maps of another
/// form are refused (tirc cannot prove them bijections without
/// enumerating every element).
fn periodic_image(map: &IndexMap, shape: &[i64]) -> std::result::Result<Vec<i64>, String> {
    let too_big = |why: &str| {
        format!("tirc checks a map of a buffer over {MAX_ELEMENTS} elements on one period of it, and {why}")
    };
    // The smallest step of each dimension that moves every result by a
    // constant, and that constant per result.
    let mut steps = Vec::new();
    let mut deltas: Vec<Vec<i64>> = Vec::new();
    for (d, &extent) in map.params.iter().zip(shape) {
        let found = (1..=extent).filter(|s| extent % s == 0).find_map(|s| {
            let ds: Option<Vec<i64>> = map.results.iter().map(|r| shift(r, d, s)).collect();
            ds.map(|ds| (s, ds))
        });
        let (s, ds) = found.ok_or_else(|| too_big(&format!("`{}` has no period along `{}`", map, d.name())))?;
        steps.push(s);
        deltas.push(ds);
    }
    let period: i64 = steps.iter().product();
    if period > MAX_ELEMENTS {
        return Err(too_big(&format!("one period has {period} elements")));
    }
    // The period's image: injective, and its spread per result.
    let mut lo = vec![i64::MAX; map.results.len()];
    let mut hi = vec![i64::MIN; map.results.len()];
    let mut seen = std::collections::HashSet::new();
    let mut idx = vec![0i64; steps.len()];
    for _ in 0..period {
        let p: Vec<i64> = map
            .results
            .iter()
            .map(|r| eval(r, &map.params, &idx))
            .collect::<Option<Vec<i64>>>()
            .ok_or_else(|| too_big("its results are not all integer expressions tirc can evaluate"))?;
        for (k, &v) in p.iter().enumerate() {
            lo[k] = lo[k].min(v);
            hi[k] = hi[k].max(v);
        }
        if !seen.insert(p.clone()) {
            return Err(format!("two elements of the first period {steps:?} land on {p:?}"));
        }
        for d in (0..idx.len()).rev() {
            idx[d] += 1;
            if idx[d] < steps[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    // Each dimension's steps move one result; per result, its digits.
    let counts: Vec<i64> = shape.iter().zip(&steps).map(|(e, s)| e / s).collect();
    let mut digits: Vec<Vec<(i64, i64)>> = vec![Vec::new(); map.results.len()];
    for (d, ds) in deltas.iter().enumerate() {
        if counts[d] == 1 {
            continue;
        }
        let moved: Vec<usize> = (0..ds.len()).filter(|&k| ds[k] != 0).collect();
        match moved[..] {
            [k] if ds[k] > 0 => digits[k].push((ds[k], counts[d])),
            _ => {
                return Err(too_big(&format!(
                    "a step along `{}` moves the results by {ds:?}, not one result forward",
                    map.params[d].name()
                )))
            }
        }
    }
    let mut new_shape = Vec::new();
    for (k, ds) in digits.iter_mut().enumerate() {
        ds.sort();
        if lo[k] < 0 {
            return Err(format!("it maps an element to a negative index in dimension {k}"));
        }
        // The values the smaller digits and `g` reach: [0, reach).
        let mut reach = hi[k] + 1;
        for &(delta, count) in ds.iter() {
            if delta < reach {
                return Err(too_big(&format!(
                    "in result {k} a step of {delta} lands inside the {reach} values below it"
                )));
            }
            reach += delta * (count - 1);
        }
        new_shape.push(reach);
    }
    let n: i64 = shape.iter().product();
    let size = new_shape.iter().try_fold(1i64, |a, &d| a.checked_mul(d)).unwrap_or(i64::MAX);
    if size != n {
        return Err(format!(
            "the image spans {new_shape:?}, {size} elements, where the buffer has {n}: a map onto a larger box \
             needs padding (pad_value), which tirc does not take yet"
        ));
    }
    Ok(new_shape)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tirc_ir::DType;

    fn map(f: impl Fn(Expr, Expr) -> Vec<Expr>) -> IndexMap {
        let (i, j) = (Var::new("i", DType::I32), Var::new("j", DType::I32));
        let results = f(Expr::var(&i), Expr::var(&j));
        IndexMap { params: vec![i, j], results }
    }

    fn div(a: Expr, b: i64) -> Expr {
        Expr::binary(BinOp::FloorDiv, a, Expr::int(b))
    }

    fn rem(a: Expr, b: i64) -> Expr {
        Expr::binary(BinOp::FloorMod, a, Expr::int(b))
    }

    /// TVM's `(i // 16, j // 16, *shared_16x16_to_ldmatrix_32x8_layout(i % 16, j % 16))`.
    fn ldmatrix() -> IndexMap {
        map(|i, j| {
            let (lane, elem) = tirc_ir::wmma::warp_layout_exprs(rem(i.clone(), 16), rem(j.clone(), 16));
            vec![div(i, 16), div(j, 16), lane, elem]
        })
    }

    #[test]
    fn large_buffers_are_checked_on_one_period() {
        assert_eq!(periodic_image(&ldmatrix(), &[4096, 4096]), Ok(vec![256, 256, 32, 8]));
        // The same answer as element by element where both can run.
        assert_eq!(periodic_image(&ldmatrix(), &[64, 32]), image(&ldmatrix(), &[64, 32]));
        let transpose = map(|i, j| vec![j, i]);
        assert_eq!(periodic_image(&transpose, &[2048, 4096]), Ok(vec![4096, 2048]));
        let tiles = map(|i, j| vec![div(i.clone(), 16), div(j.clone(), 16), rem(i, 16), rem(j, 16)]);
        assert_eq!(periodic_image(&tiles, &[4096, 2048]), Ok(vec![256, 128, 16, 16]));
        // Fused into one dimension, row by row: digits apart.
        let flat = map(|i, j| vec![i * Expr::int(2048) + j]);
        assert_eq!(periodic_image(&flat, &[2048, 2048]), Ok(vec![2048 * 2048]));
    }

    #[test]
    fn large_maps_that_are_no_bijections_are_refused() {
        // Two rows onto one.
        let halve = map(|i, j| vec![div(i, 2), j]);
        assert!(periodic_image(&halve, &[4096, 4096]).is_err());
        // Injective, but onto a parallelogram, not a box.
        let skew = map(|i, j| vec![i.clone() + j.clone(), j]);
        assert!(periodic_image(&skew, &[2048, 2048]).is_err());
        let fold = map(|i, j| vec![i * Expr::int(1024) + j]);
        assert!(periodic_image(&fold, &[2048, 2048]).is_err());
    }
}
