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
//! 3. The buffer's shape is constant, of at most 2^20 elements, and has no
//!    `storage_align` request (whose axis would lose its meaning: align
//!    after transforming).
//! 4. The map takes as many indices as the buffer has dimensions and gives
//!    integer expressions of them (`+ - * // %`, `min`, `max`, literals).
//! 5. The map is a bijection from the old shape onto the box of its image:
//!    every element lands on a distinct new index, each index of the new
//!    shape `(max + 1 per result)` is reached, none is negative.
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
    let shape: Option<Vec<i64>> = b.shape().iter().map(Expr::as_int).collect();
    let shape = shape
        .ok_or_else(|| ScheduleError::unsupported(format!("`{}` has a shape known only at run time", b.name())))?;
    let elements = shape.iter().try_fold(1i64, |a, &d| a.checked_mul(d)).unwrap_or(i64::MAX);
    if elements > MAX_ELEMENTS {
        return Err(ScheduleError::unsupported(format!(
            "`{}` has {elements} elements; tirc checks the map element by element, up to {MAX_ELEMENTS}",
            b.name()
        )));
    }
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
    if map.params.len() != shape.len() {
        return Err(ScheduleError::bad_argument(format!(
            "the index map takes {} {}, but `{}` has {} dimensions",
            map.params.len(),
            if map.params.len() == 1 { "index" } else { "indices" },
            b.name(),
            shape.len()
        )));
    }
    // 5.
    let new_shape = image(map, &shape).map_err(|why| {
        ScheduleError::new(format!(
            "the index map `{map}` is not a bijection onto a new shape of `{}`: {why}",
            b.name()
        ))
    })?;

    // The rewrite: every access through the map, the buffer reshaped.
    let t = b.shape().first().map_or(tirc_ir::DType::I32, Expr::dtype);
    let nb = b.with(|n| n.shape = new_shape.iter().map(|&d| Expr::Int(d, t)).collect());
    let a = Analyzer::new();
    let remap = |idx: &[Expr]| -> Vec<Expr> { map.apply(idx).iter().map(|e| a.simplify(e)).collect() };
    let body = sch.func.body.map_exprs(&mut |e| loads(e, &b, &nb, &remap));
    sch.func.body = body.rewrite_owned(&mut |s| rewrite(s, &b, &nb, &remap));
    Ok(())
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
    let new_shape: Vec<i64> = hi.iter().map(|h| h + 1).collect();
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
fn eval(e: &Expr, params: &[Var], at: &[i64]) -> Option<i64> {
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
