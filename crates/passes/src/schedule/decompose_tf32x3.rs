//! `decompose_tf32x3(block)`: a float32 product-sum `C = C + X * Y`
//! multiplied on tf32 tensor cores at float32's accuracy ("3xTF32"). A
//! tirc primitive: TVM has none.
//!
//! Each float32 operand `x` is split into `hi = T.tf32_round(x)` and `lo =
//! T.tf32_round(x - hi)`, both exact tf32 values, so that `x * y` is `lo_x *
//! hi_y + hi_x * lo_y + hi_x * hi_y` to about 2^-22 of it (the dropped `lo_x
//! * lo_y` and `lo`'s own rounding), where one tf32 product is off by 2^-11.
//! The three products become one reduction three times as long: the
//! reduction variable `k` of extent `K` runs over `3 K`, and the block reads
//! `X_tf32x3` and `Y_tf32x3` in place of `X` and `Y`, each `X` with its
//! `k` dimension tripled and the three parts in a row:
//!
//! ```text
//! X_tf32x3[.., p * K + k, ..] = lo(X[.., k, ..]) if p == 0 else hi(X[.., k, ..])
//! Y_tf32x3[.., p * K + k, ..] = lo(Y[.., k, ..]) if p == 1 else hi(Y[.., k, ..])
//! ```
//!
//! (the small products first, where the accumulator is smallest). Two new
//! blocks of those names, each over the source's dimensions with `p` (extent
//! 3) just outside `k`, write them before the block's loop nest; the
//! primitive returns them, X's first. The block and its loops are then
//! scheduled as a tf32 product of length `3 K` (e.g. `wgmma` tf32 through
//! `tensorize`, after `transform_layout` has stored the operands K-major).
//! The result is float32's, so a run checks it at float32's tolerance, and
//! `--compare cublas` times cuBLAS's SGEMM (not its TF32 math). The split
//! is for finite values below 2^128 (1 - 2^-12): within a tf32 step of
//! float32's largest, `hi` rounds to infinity, and the sum turns NaN (as it
//! does for infinite inputs, where float32 would give infinity).
//!
//! Its accuracy on the GPU depends on the tensor cores' additions too,
//! which cut bits off: promote the accumulators (`tirc.promote_every`) for
//! float32's accuracy at every depth (docs/benchmarks.md).
//!
//! Preconditions, checked in this order:
//! 1. The block is in the function, in the root block's scope.
//! 2. It has no predicate (`T.where`) and one reduction variable `k`, bound
//!    to a loop of its own over exactly its domain, from 0, that runs no
//!    other block (apply it before the reduction loop is split).
//! 3. Its body is `C[..] = C[..] + X[..] * Y[..]` (either order of either
//!    operation), all float32, with an init or not.
//! 4. `X` and `Y` are each indexed by `k` itself in one dimension, whose
//!    extent is `k`'s, and `k` appears in no other index of them nor in
//!    `C`'s.
//! 5. No other block of the nest that holds the block writes `X` or `Y`
//!    (their split copies are made before the nest).

use super::cache::{block_nest, root_stmts, set_root, top_level_owner};
use super::{BlockRV, Result, Schedule, ScheduleError};
use crate::common::tree::{block_and_buffer_names, fresh_name};
use tirc_ir::region::block_buffers;
use tirc_ir::structural_eq::same_expr;
use tirc_ir::{BinOp, Block, BlockRealize, Buffer, BufferRegion, DType, Expr, Intrinsic, IterKind, Range, Stmt, Var};

pub fn decompose_tf32x3(sch: &mut Schedule, block: &BlockRV) -> Result<Vec<BlockRV>> {
    // 1.
    let r = sch
        .func
        .body
        .find_block(block)
        .ok_or_else(|| ScheduleError::not_found(format!("block `{block}` is no longer in the function")))?
        .clone();
    if block == "root" || top_level_owner(&sch.func.body, block).as_deref() != Some("root") {
        return Err(ScheduleError::unsupported(format!(
            "block `{block}` is not in the root block's scope; tirc decomposes blocks of the root scope only"
        )));
    }
    // 2.
    if r.predicate.as_bool() != Some(true) {
        return Err(ScheduleError::new(format!(
            "block `{block}` has a predicate (T.where): decompose it before a split that does not divide"
        )));
    }
    let reduce: Vec<usize> =
        r.block.iter_vars.iter().enumerate().filter(|(_, iv)| iv.kind == IterKind::Reduce).map(|(i, _)| i).collect();
    let [kpos] = reduce[..] else {
        return Err(ScheduleError::new(format!(
            "block `{block}` has {} reduction variables; decompose_tf32x3 needs exactly one",
            reduce.len()
        )));
    };
    let kv = r.block.iter_vars[kpos].var.clone();
    let kdom = r.block.iter_vars[kpos].dom.clone();
    let loops = sch.func.body.loops_above(block).unwrap_or_default();
    let kloop = r.iter_values[kpos]
        .as_var()
        .and_then(|v| loops.iter().find(|l| &l.var == v))
        .filter(|l| kdom.min.as_int() == Some(0) && l.min.as_int() == Some(0) && same_extent(&l.extent, &kdom.extent));
    let Some(kloop) = kloop else {
        return Err(ScheduleError::new(format!(
            "reduction variable `{}` of block `{block}` is not bound to a loop of its own over its whole domain",
            kv.name()
        ))
        .help("decompose the block before splitting or fusing its reduction loop"));
    };
    let uses_k = |e: &Expr| e.uses(&kloop.var);
    if r.iter_values.iter().enumerate().any(|(i, e)| i != kpos && uses_k(e)) {
        return Err(ScheduleError::new(format!(
            "loop `{}` binds another variable of block `{block}` besides `{}`",
            kloop.var.name(),
            kv.name()
        )));
    }
    if let Some(other) = kloop.body.blocks().iter().find(|b| b.block.name != *block) {
        return Err(ScheduleError::new(format!(
            "loop `{}` also runs block `{}`, which would run three times as often",
            kloop.var.name(),
            other.block.name
        )));
    }
    // 3.
    let shape_err = || {
        ScheduleError::new(format!(
            "block `{block}` is not a float32 product-sum `C[..] = C[..] + X[..] * Y[..]`: decompose_tf32x3 splits \
             the two float32 factors of such a block"
        ))
    };
    let Stmt::Store { buffer: out, indices: out_idx, value } = &r.block.body else { return Err(shape_err()) };
    let Expr::Binary(BinOp::Add, a, b) = value else { return Err(shape_err()) };
    let is_out = |e: &Expr| matches!(e, Expr::Load(x, i) if x == out && i.len() == out_idx.len() && i.iter().zip(out_idx).all(|(p, q)| same_expr(p, q)));
    let term = if is_out(a) {
        b
    } else if is_out(b) {
        a
    } else {
        return Err(shape_err());
    };
    let Expr::Binary(BinOp::Mul, x, y) = &**term else { return Err(shape_err()) };
    let (Expr::Load(xb, xi), Expr::Load(yb, yi)) = (&**x, &**y) else {
        if [x, y].iter().any(|e| matches!(&***e, Expr::Cast(..))) {
            return Err(ScheduleError::new(format!(
                "block `{block}` multiplies values cast to float32: decompose_tf32x3 splits float32 operands; \
                 float16 and bfloat16 multiply exactly on tensor cores as they are"
            )));
        }
        return Err(shape_err());
    };
    if let Some(b) = [out, xb, yb].into_iter().find(|b| b.dtype() != DType::F32) {
        return Err(ScheduleError::new(format!(
            "block `{block}` accesses `{}` of type {}: decompose_tf32x3 splits float32 products into float32",
            b.name(),
            b.dtype()
        )));
    }
    if out_idx.iter().any(uses_k_var(&kv)) {
        return Err(ScheduleError::new(format!(
            "block `{block}` writes `{}` along its reduction variable `{}`",
            out.name(),
            kv.name()
        )));
    }
    // 4.
    let k_dim = |buf: &Buffer, idx: &[Expr]| -> Result<usize> {
        let dims: Vec<usize> = (0..idx.len()).filter(|d| idx[*d].as_var() == Some(&kv)).collect();
        let others = idx.iter().filter(|e| e.as_var() != Some(&kv)).any(uses_k_var(&kv));
        match dims[..] {
            [d] if !others && same_extent(&buf.shape()[d], &kdom.extent) => Ok(d),
            [d] if !others => Err(ScheduleError::new(format!(
                "block `{block}` reads `{}` along `{}` over {} of its {} elements: tirc splits only operands the \
                 reduction covers whole",
                buf.name(),
                kv.name(),
                tirc_ir::printer::print_expr(&kdom.extent),
                tirc_ir::printer::print_expr(&buf.shape()[d])
            ))),
            _ => Err(ScheduleError::new(format!(
                "block `{block}` does not index `{}` by its reduction variable `{}` in exactly one dimension and \
                 nowhere else",
                buf.name(),
                kv.name()
            ))),
        }
    };
    let xd = k_dim(xb, xi)?;
    let yd = k_dim(yb, yi)?;
    // 5.
    let nest = root_stmts(&sch.func.body).into_iter().find(|s| s.find_block(block).is_some());
    for buf in [xb, yb] {
        let writer = nest.as_ref().and_then(|n| {
            n.blocks().into_iter().find(|w| w.block.name != *block && block_buffers(w, false).contains(buf)).cloned()
        });
        if let Some(w) = writer {
            return Err(ScheduleError::new(format!(
                "block `{}` writes `{}` in the nest of block `{block}`: its split copy, made before that nest, would \
                 read it unwritten",
                w.block.name,
                buf.name()
            ))
            .help("decompose before compute_at moves the producer into the nest"));
        }
    }
    // The split copies and the blocks that make them.
    let mut taken = block_and_buffer_names(&sch.func);
    let mut root = sch.func.body.clone();
    let mut before = Vec::new();
    let mut split = Vec::new();
    let mut names = Vec::new();
    for (src, d, lo_part) in [(xb, xd, 0), (yb, yd, 1)] {
        let name = fresh_name(&taken, &format!("{}_tf32x3", src.name()));
        taken.push(name.clone());
        let k = src.shape()[d].clone();
        let mut shape = src.shape().to_vec();
        shape[d] = Expr::folded(BinOp::Mul, Expr::Int(3, k.dtype()), k.clone());
        let dst = Buffer::new(name.clone(), DType::F32, shape, src.scope());
        before.push(split_nest(&mut root, &name, src, &dst, d, lo_part));
        split.push(dst);
        names.push(name);
    }
    // The block over `3 K`, reading the split copies.
    let three_k = Expr::folded(BinOp::Mul, Expr::Int(3, kdom.extent.dtype()), kdom.extent.clone());
    let load = |buf: &Buffer, idx: &[Expr]| Expr::Load(buf.clone(), idx.to_vec());
    let new_term = Expr::binary(BinOp::Mul, load(&split[0], xi), load(&split[1], yi));
    let new_value = if is_out(a) {
        Expr::binary(BinOp::Add, (**a).clone(), new_term)
    } else {
        Expr::binary(BinOp::Add, new_term, (**b).clone())
    };
    let mut nb = r.clone();
    nb.block.iter_vars[kpos].dom = Range::from_extent(three_k.clone());
    nb.block.body = Stmt::Store { buffer: out.clone(), indices: out_idx.clone(), value: new_value };
    // The block's reads: what it read besides X and Y, and each split copy
    // at the point its load reads (its own indices: `A @ A^T` reads one
    // buffer through two copies at two points), `k` now over `3 K`.
    let point = |b: &Buffer, idx: &[Expr]| BufferRegion {
        buffer: b.clone(),
        region: idx.iter().map(|i| Range::new(i.clone(), Expr::Int(1, i.dtype()))).collect(),
    };
    let mut reads: Vec<BufferRegion> =
        r.block.reads.iter().filter(|reg| &reg.buffer != xb && &reg.buffer != yb).cloned().collect();
    reads.push(point(&split[0], xi));
    reads.push(point(&split[1], yi));
    nb.block.reads = reads;
    let kvar = kloop.var.clone();
    let stmts = root_stmts(&sch.func.body);
    let top = stmts.iter().position(|s| s.find_block(block).is_some()).unwrap_or(0);
    let mut body = Vec::new();
    for (i, s) in stmts.into_iter().enumerate() {
        if i == top {
            body.append(&mut before);
            body.push(grow(&s, block, &kvar, &three_k, &nb));
        } else {
            body.push(s);
        }
    }
    set_root(sch, body, split);
    Ok(names)
}

/// Whether two extents are the same: equal constants (of any integer
/// type), or the same expression.
fn same_extent(a: &Expr, b: &Expr) -> bool {
    match (a.as_int(), b.as_int()) {
        (Some(x), Some(y)) => x == y,
        _ => same_expr(a, b),
    }
}

/// Whether an expression mentions `v`.
fn uses_k_var(v: &Var) -> impl Fn(&Expr) -> bool + '_ {
    move |e: &Expr| e.uses(v)
}

/// The loop `k` over `3 K` and the block replaced by `nb`, all the way down.
fn grow(s: &Stmt, block: &str, k: &Var, three_k: &Expr, nb: &BlockRealize) -> Stmt {
    match s {
        Stmt::For(l) => {
            let mut l = (**l).clone();
            if &l.var == k {
                l.extent = three_k.clone();
            }
            l.body = grow(&l.body, block, k, three_k, nb);
            Stmt::For(Box::new(l))
        }
        Stmt::Block(x) if x.block.name == block => Stmt::Block(Box::new(nb.clone())),
        s => s.map_children(|c| grow(c, block, k, three_k, nb)),
    }
}

/// The nest that writes `dst` from `src`: over `src`'s dimensions with the
/// part `p` (extent 3) just outside dimension `d`, storing `lo(src[..])` at
/// `p == lo_part` and `hi(src[..])` at the other two, at `p * K + k`.
fn split_nest(root: &mut Stmt, name: &str, src: &Buffer, dst: &Buffer, d: usize, lo_part: i64) -> Stmt {
    // Loops of the type of each dimension's extent (int64 shapes keep
    // int64 loops), the part's of `k`'s.
    let mut ranges: Vec<(Range, DType)> = Vec::new();
    for (i, n) in src.shape().iter().enumerate() {
        if i == d {
            ranges.push((Range::from_extent(Expr::Int(3, n.dtype())), n.dtype()));
        }
        ranges.push((Range::from_extent(n.clone()), n.dtype()));
    }
    let k = src.shape()[d].clone();
    block_nest(root, &ranges, "i", |iter_vars| {
        let vars: Vec<Expr> = iter_vars.iter().map(|iv| Expr::var(&iv.var)).collect();
        let part = vars[d].clone();
        let src_idx: Vec<Expr> = vars.iter().enumerate().filter(|(i, _)| *i != d).map(|(_, v)| v.clone()).collect();
        let mut dst_idx = src_idx.clone();
        dst_idx[d] = part.clone() * k.clone() + src_idx[d].clone();
        let x = Expr::Load(src.clone(), src_idx.clone());
        let round = |e: Expr| Expr::Call(Intrinsic::Tf32Round, vec![e]);
        let hi = round(x.clone());
        let lo = round(Expr::binary(BinOp::Sub, x, hi.clone()));
        let is_lo = Expr::binary(BinOp::Eq, part.clone(), Expr::Int(lo_part, part.dtype()));
        let point = |b: &Buffer, idx: &[Expr]| BufferRegion {
            buffer: b.clone(),
            region: idx.iter().map(|i| Range::new(i.clone(), Expr::Int(1, i.dtype()))).collect(),
        };
        Block {
            name: name.to_string(),
            iter_vars,
            reads: vec![point(src, &src_idx)],
            writes: vec![point(dst, &dst_idx)],
            init: None,
            alloc_buffers: vec![],
            annotations: vec![],
            body: Stmt::Store {
                buffer: dst.clone(),
                indices: dst_idx,
                value: Expr::Select(Box::new(is_lo), Box::new(lo), Box::new(hi)),
            },
            span: None,
        }
    })
}
