//! `pad_einsum(block, padding)`: the block's iteration space grows to
//! multiples of `padding` (one factor per block variable, in order), so that
//! splits by those factors need no `T.where` predicate, as TVM's primitive
//! of that name does.
//!
//! Each variable `v` of extent `n` gets the extent `ceil(n / p) * p` (for
//! an `n` of run-time sizes, `(n + p - 1) // p * p`, computed at launch), and
//! the loop bound to it grows with it. Each buffer the block reads along a
//! grown variable is read through a padded copy, `<buffer>_pad`, made by a
//! new block of that name before the block's loop nest: `X_pad[v] =
//! T.if_then_else(v < n, X[v], 0)`. The buffer it writes, if indexed by a
//! grown variable, becomes `<buffer>_pad` too, and a block of that name
//! after the nest copies the original extent back. The padded elements of
//! the result are computed and dropped; a reduction over a grown variable
//! adds terms that are zero.
//!
//! Preconditions, checked in this order:
//! 1. The block is in the function, in the root block's scope.
//! 2. `padding` has one positive integer per block variable.
//! 3. The block has no predicate (`T.where`) and each of its variables is
//!    bound to a loop of its own over exactly its domain, from 0.
//! 4. The block is an einsum: it stores to one buffer, and every buffer
//!    access indexes each dimension by one block variable, the same ones at
//!    every access of a buffer; a buffer the block reads and writes is its
//!    output, read only by the update of a reduction with an init. Each
//!    dimension of an accessed buffer has the extent of the block variable
//!    that indexes it (the padded copy replaces the whole buffer).
//! 5. A grown reduction variable `k` adds terms that are zero: the update
//!    is `C = C + e`, and `e` is a product (casts allowed) with a factor
//!    read along `k` from a padded copy, whose new elements are zero.
//! 6. Each grown loop runs this block only.
//! 7. No other block of the nest that holds the block writes a buffer that
//!    gets a padded copy before the nest.
//! 8. No other block of that nest reads the output, when it gets a padded
//!    copy copied back after the nest.

use super::cache::{copy_block_nest, root_stmts, set_root, top_level_owner};
use super::{BlockRV, Result, Schedule, ScheduleError};
use crate::common::tree::{block_and_buffer_names, fresh_name};
use tirc_ir::printer::print_expr;
use tirc_ir::region::block_buffers;
use tirc_ir::structural_eq::same_expr;
use tirc_ir::subst::replace_buffers_stmt;
use tirc_ir::{BinOp, Block, Buffer, Expr, For, IterKind, Range, Stmt, Var};

pub fn pad_einsum(sch: &mut Schedule, block: &BlockRV, padding: &[i64]) -> Result<()> {
    // 1.
    let r = sch
        .func
        .body
        .find_block(block)
        .ok_or_else(|| ScheduleError::not_found(format!("block `{block}` is no longer in the function")))?
        .clone();
    if block == "root" || top_level_owner(&sch.func.body, block).as_deref() != Some("root") {
        return Err(ScheduleError::unsupported(format!(
            "block `{block}` is not in the root block's scope; tirc pads blocks of the root scope only"
        )));
    }
    // 2.
    let n = r.block.iter_vars.len();
    if padding.len() != n || padding.iter().any(|p| *p < 1) {
        return Err(ScheduleError::bad_argument(format!(
            "the padding of block `{block}` must be {n} positive integers, one per block variable ({}); got {padding:?}",
            r.block.iter_vars.iter().map(|iv| iv.var.name()).collect::<Vec<_>>().join(", ")
        )));
    }
    // 3.
    if r.predicate.as_bool() != Some(true) {
        return Err(ScheduleError::new(format!(
            "block `{block}` has a predicate (T.where): pad it before a split that does not divide"
        )));
    }
    let loops = sch.func.body.loops_above(block).unwrap_or_default();
    let mut bound: Vec<&For> = Vec::new();
    for (iv, e) in r.block.iter_vars.iter().zip(&r.iter_values) {
        let l = e.as_var().and_then(|v| loops.iter().find(|l| &l.var == v));
        match l {
            Some(l)
                if iv.dom.min.as_int() == Some(0)
                    && l.min.as_int() == Some(0)
                    && same_expr(&l.extent, &iv.dom.extent)
                    && !bound.iter().any(|b| b.var == l.var) =>
            {
                bound.push(l)
            }
            _ => {
                return Err(ScheduleError::new(format!(
                    "variable `{}` of block `{block}` is not bound to a loop of its own over its whole domain",
                    iv.var.name()
                ))
                .help("pad the block before splitting or fusing its loops"))
            }
        }
    }
    // 4.
    let accesses = einsum_accesses(&r.block, block)?;
    let Stmt::Store { buffer: out, value: update, .. } = &r.block.body else {
        return Err(ScheduleError::new(format!("block `{block}` is not an einsum: its body is not one store")));
    };
    for (b, vars) in accesses.iter().map(|(b, vars, _)| (b, vars)) {
        for (d, (v, dim)) in vars.iter().zip(b.shape()).enumerate() {
            let Some(extent) = r.block.iter_vars.iter().find(|iv| &iv.var == v).map(|iv| &iv.dom.extent) else {
                continue;
            };
            let differ = match (extent.as_int(), dim.as_int()) {
                (Some(e), Some(n)) => e != n,
                (None, None) => !same_expr(extent, dim),
                _ => true,
            };
            if differ {
                return Err(ScheduleError::new(format!(
                    "block `{block}` covers {} of the {} elements of `{}` along its dimension {d} (`{}`): \
                     tirc pads only buffers the block covers whole, as their padded copies replace them",
                    print_expr(extent),
                    print_expr(dim),
                    b.name(),
                    v.name()
                )));
            }
        }
    }
    let reads_out = accesses.iter().any(|(b, _, read)| b == out && *read);
    if reads_out && (r.block.init.is_none() || !r.block.iter_vars.iter().any(|iv| iv.kind == IterKind::Reduce)) {
        return Err(ScheduleError::new(format!(
            "block `{block}` reads `{}`, which it writes, without being a reduction with an init: its padded copy \
             would start without the buffer's contents",
            out.name()
        )));
    }
    // The new extents: (block variable, padded extent); an extent of
    // run-time sizes grows to `(n + p - 1) // p * p`, computed at launch.
    let mut grown: Vec<(Var, Expr)> = Vec::new();
    for (iv, &p) in r.block.iter_vars.iter().zip(padding) {
        let Some(old) = iv.dom.extent.as_int() else {
            if p > 1 {
                let up = Expr::binary(BinOp::FloorDiv, iv.dom.extent.clone() + Expr::int(p - 1), Expr::int(p));
                grown.push((iv.var.clone(), up * Expr::int(p)));
            }
            continue;
        };
        let new = old.checked_add(p - 1).map(|x| x / p * p).filter(|n| *n <= i32::MAX as i64).ok_or_else(|| {
            ScheduleError::bad_argument(format!(
                "padding `{}` of block `{block}` to a multiple of {p} passes the 32-bit index range",
                iv.var.name()
            ))
        })?;
        if new != old {
            grown.push((iv.var.clone(), Expr::int(new)));
        }
    }
    let new_extent = |v: &Var| grown.iter().find(|(g, _)| g == v).map(|(_, n)| n.clone());
    let grows = |v: &Var| new_extent(v).is_some();
    // 5.
    for iv in &r.block.iter_vars {
        if iv.kind == IterKind::Reduce && grows(&iv.var) && !zero_terms(update, out, &iv.var) {
            return Err(ScheduleError::new(format!(
                "padding reduction variable `{}` of block `{block}` adds terms that may not be zero: the update \
                 must be `{o}[..] = {o}[..] + a * b * ..` with a factor read along `{}`",
                iv.var.name(),
                iv.var.name(),
                o = out.name()
            ))
            .help("pad the reduction variable by 1 (leave it as it is)"));
        }
    }
    // 6.
    for (l, iv) in bound.iter().zip(&r.block.iter_vars) {
        if !grows(&iv.var) {
            continue;
        }
        if let Some(other) = l.body.blocks().iter().find(|b| b.block.name != *block) {
            return Err(ScheduleError::new(format!(
                "loop `{}` also runs block `{}`, which would run on the padded iterations too",
                l.var.name(),
                other.block.name
            )));
        }
    }
    if grown.is_empty() {
        return Ok(());
    }
    // 7. The padded copies of the inputs run before the nest that holds the
    // block: what a block of that nest writes is not written yet there.
    let nest = root_stmts(&sch.func.body).into_iter().find(|s| s.find_block(block).is_some());
    // Another block of that nest that reads (or writes) `buf`.
    let other_in_nest = |reads: bool, buf: &Buffer| {
        nest.as_ref().and_then(|n| {
            n.blocks().into_iter().find(|w| w.block.name != *block && block_buffers(w, reads).contains(buf)).cloned()
        })
    };
    for (buf, _, _) in accesses.iter().filter(|(b, vars, _)| b != out && vars.iter().any(grows)) {
        if let Some(w) = other_in_nest(false, buf) {
            return Err(ScheduleError::new(format!(
                "block `{}` writes `{}` in the nest of block `{block}`: its padded copy, made before that nest, would read it unwritten",
                w.block.name,
                buf.name()
            ))
            .help("pad before compute_at moves the producer into the nest"));
        }
    }
    // 8. The copy of the padded output back runs after that nest: no other
    // block of it may read the output (a write-back `reverse_compute_at`
    // placed inside it would read it not yet copied).
    if accesses.iter().any(|(b, vars, _)| b == out && vars.iter().any(grows)) {
        if let Some(w) = other_in_nest(true, out) {
            return Err(ScheduleError::new(format!(
                "block `{}` reads `{}` in the nest of block `{block}`: the padded result is copied back after that nest, so it would read it unwritten",
                w.block.name,
                out.name()
            ))
            .help("pad before reverse_compute_at moves the consumer into the nest"));
        }
    }
    // The padded buffers: those accessed along a grown variable.
    let mut taken = block_and_buffer_names(&sch.func);
    let mut map: Vec<(Buffer, Buffer)> = Vec::new();
    let mut before = Vec::new();
    let mut after = Vec::new();
    let mut root = sch.func.body.clone();
    for (buf, vars, _) in &accesses {
        if !vars.iter().any(grows) || map.iter().any(|(b, _)| b == buf) {
            continue;
        }
        let shape: Vec<Expr> =
            vars.iter().zip(buf.shape()).map(|(v, s)| new_extent(v).unwrap_or_else(|| s.clone())).collect();
        let name = fresh_name(&taken, &format!("{}_pad", buf.name()));
        taken.push(name.clone());
        let padded = Buffer::new(name.clone(), buf.dtype(), shape.clone(), buf.scope());
        if buf == out {
            after.push(copy_nest(&mut root, &name, buf.shape(), buf, &padded, None));
        } else {
            before.push(copy_nest(&mut root, &name, &shape, &padded, buf, Some(buf.shape())));
        }
        map.push((buf.clone(), padded));
    }
    // The block and its grown loops.
    let stmts = root_stmts(&sch.func.body);
    let top = stmts.iter().position(|s| s.blocks().iter().any(|b| b.block.name == *block)).unwrap_or(0);
    let loop_extent: Vec<(Var, Expr)> = bound
        .iter()
        .zip(&r.block.iter_vars)
        .filter_map(|(l, iv)| new_extent(&iv.var).map(|n| (l.var.clone(), n)))
        .collect();
    let mut body = Vec::new();
    for (i, s) in stmts.into_iter().enumerate() {
        if i == top {
            body.append(&mut before);
            body.push(finish(&s, block, &loop_extent, &new_extent, &map));
            body.append(&mut after);
        } else {
            body.push(s);
        }
    }
    set_root(sch, body, map.into_iter().map(|(_, p)| p).collect());
    Ok(())
}

/// Grows the loops of `loop_extent` and the block below them, all the way down.
fn finish(
    s: &Stmt,
    block: &str,
    loop_extent: &[(Var, Expr)],
    new_extent: &dyn Fn(&Var) -> Option<Expr>,
    map: &[(Buffer, Buffer)],
) -> Stmt {
    match s {
        Stmt::For(l) => {
            let mut l = (**l).clone();
            if let Some((_, n)) = loop_extent.iter().find(|(v, _)| v == &l.var) {
                l.extent = n.clone();
            }
            l.body = finish(&l.body, block, loop_extent, new_extent, map);
            Stmt::For(Box::new(l))
        }
        Stmt::Block(x) if x.block.name == block => {
            let mut x = (**x).clone();
            for iv in x.block.iter_vars.iter_mut() {
                if let Some(n) = new_extent(&iv.var) {
                    iv.dom = Range::from_extent(n);
                }
            }
            replace_buffers_stmt(&Stmt::Block(Box::new(x)), map)
        }
        s => s.map_children(|c| finish(c, block, loop_extent, new_extent, map)),
    }
}

/// Every buffer access of the block as (buffer, the block variable of each
/// dimension, whether it is a read); or why the block is not an einsum.
fn einsum_accesses(b: &Block, name: &str) -> Result<Vec<(Buffer, Vec<Var>, bool)>> {
    let vars: Vec<&Var> = b.iter_vars.iter().map(|iv| &iv.var).collect();
    let mut out: Vec<(Buffer, Vec<Var>, bool)> = Vec::new();
    let mut error = None;
    let mut note = |buf: &Buffer, idx: &[Expr], read: bool| {
        if error.is_some() {
            return;
        }
        let mut dims = Vec::new();
        for e in idx {
            match e.as_var().filter(|v| vars.contains(v)) {
                Some(v) if !dims.contains(v) => dims.push(v.clone()),
                _ => {
                    error = Some(format!(
                        "block `{name}` is not an einsum: `{}` is indexed by `{}`, not by one block variable per dimension",
                        buf.name(),
                        tirc_ir::printer::print_expr(e)
                    ));
                    return;
                }
            }
        }
        match out.iter_mut().find(|(x, _, _)| x == buf) {
            Some((_, d, r)) if *d == dims => *r |= read,
            Some(_) => {
                error =
                    Some(format!("block `{name}` is not an einsum: `{}` is accessed at different indices", buf.name()))
            }
            None => out.push((buf.clone(), dims, read)),
        }
    };
    let mut stores = 0;
    for s in b.init.iter().chain(std::iter::once(&b.body)) {
        s.walk(&mut |x| {
            if let Stmt::Store { buffer, indices, value } = x {
                stores += 1;
                note(buffer, indices, false);
                value.walk(&mut |e| {
                    if let Expr::Load(lb, li) = e {
                        note(lb, li, true);
                    }
                });
            } else if !matches!(x, Stmt::Seq(_)) {
                x.for_each_expr(|e| {
                    e.walk(&mut |y| {
                        if let Expr::Load(lb, li) = y {
                            note(lb, li, true);
                        }
                    })
                });
            }
        });
    }
    if let Some(e) = error {
        return Err(ScheduleError::new(e));
    }
    if stores != b.init.iter().count() + 1 || !matches!(b.body, Stmt::Store { .. }) {
        return Err(ScheduleError::new(format!(
            "block `{name}` is not an einsum: its body (and init) must be one store each"
        )));
    }
    Ok(out)
}

/// Whether `update` is `out[..] + e` with `e` zero whenever a buffer read
/// along `k` is zero: a product, through casts, with such a factor.
fn zero_terms(update: &Expr, out: &Buffer, k: &Var) -> bool {
    let Expr::Binary(BinOp::Add, a, b) = update else { return false };
    let is_out = |e: &Expr| matches!(e, Expr::Load(x, _) if x == out);
    let term = if is_out(a) {
        b
    } else if is_out(b) {
        a
    } else {
        return false;
    };
    fn has_zero_factor(e: &Expr, k: &Var) -> bool {
        match e {
            Expr::Cast(_, x) => has_zero_factor(x, k),
            Expr::Binary(BinOp::Mul, x, y) => has_zero_factor(x, k) || has_zero_factor(y, k),
            Expr::Load(_, idx) => idx.iter().any(|i| i.as_var() == Some(k)),
            _ => false,
        }
    }
    // Every factor a load, a constant or a cast of one: another factor could
    // be infinite on the padding (`A * log(W * W)` is 0 * -inf there).
    fn plain_product(e: &Expr) -> bool {
        match e {
            Expr::Cast(_, x) => plain_product(x),
            Expr::Binary(BinOp::Mul, x, y) => plain_product(x) && plain_product(y),
            Expr::Load(..) | Expr::Int(..) | Expr::Float(..) => true,
            _ => false,
        }
    }
    has_zero_factor(term, k) && plain_product(term)
}

/// A loop nest over `shape` with one block `name` storing `dst[v] = src[v]`,
/// or, with `bounds`, `dst[v] = T.if_then_else(v < bounds, src[v], 0)`.
fn copy_nest(root: &mut Stmt, name: &str, shape: &[Expr], dst: &Buffer, src: &Buffer, bounds: Option<&[Expr]>) -> Stmt {
    let zero = if src.dtype().is_float() { Expr::Float(0.0, src.dtype()) } else { Expr::Int(0, src.dtype()) };
    let value = |load: Expr, idx: &[Expr]| match bounds {
        None => load,
        Some(b) => {
            let conds: Vec<Expr> = idx
                .iter()
                .zip(b)
                .zip(shape)
                .filter(|((_, old), new)| !same_expr(old, new))
                .map(|((i, old), _)| Expr::binary(BinOp::Lt, i.clone(), old.clone()))
                .collect();
            Expr::Select(Box::new(crate::arith::all_of(conds)), Box::new(load), Box::new(zero.clone()))
        }
    };
    let whole: Vec<Range> = shape.iter().map(|n| Range::from_extent(n.clone())).collect();
    copy_block_nest(root, name, &whole, "i", dst, src, &value)
}
