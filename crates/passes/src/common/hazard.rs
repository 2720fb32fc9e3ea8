//! Whether moving a block's accesses past other blocks keeps what every
//! block reads.
//!
//! `compute_at`, `reverse_compute_at`, `compute_inline`,
//! `reverse_compute_inline` and `decompose_reduction` each move some of a
//! block's reads and writes to another place in the program. Each block
//! whose order against the moved accesses changes (those "passed") must
//! then touch none of the same buffers in a way that order matters: it may
//! not write what the moved accesses read (they would read its values
//! instead of the old ones, or the old ones instead of its), read what they
//! write, or write it too. The primitive names which passed blocks are its
//! own dataflow (a consumer reading the moved producer's tile), whose order
//! its own region logic keeps.
//!
//! The check is by whole buffer, so it refuses some moves that touch
//! disjoint parts of one buffer; it never accepts one that changes a value.

use super::error::ScheduleError;
use tirc_ir::region::block_buffers;
use tirc_ir::{subst, BinOp, BlockRealize, Buffer, Expr, For, Stmt, Var};

/// The accesses that move: the buffers read and those written.
pub struct Moved<'a> {
    pub block: &'a str,
    pub reads: Vec<Buffer>,
    pub writes: Vec<Buffer>,
}

/// Refuses the move if a passed block conflicts with the moved accesses.
/// `linked(block, buffer, writes)` says that the passed block's read
/// (`writes` false) or write of the buffer is the primitive's own dataflow,
/// whose order the primitive keeps.
pub fn check_passed(
    root: &Stmt,
    moved: &Moved,
    passed: &[&BlockRealize],
    linked: &dyn Fn(&BlockRealize, &Buffer, bool) -> bool,
    what: &str,
) -> Result<(), ScheduleError> {
    let mine = root.find_block(moved.block).map(|r| footprint(root, r)).unwrap_or_default();
    for w in passed {
        let (wr, ww) = (block_buffers(w, true), block_buffers(w, false));
        let theirs = footprint(root, w);
        // Parts of one buffer that are seen not to overlap (a concatenation's
        // halves) do not clash.
        let apart = |b: &Buffer| {
            mine.iter().filter(|x| &x.0 == b).all(|x| {
                theirs.iter().filter(|y| &y.0 == b).all(|y| {
                    x.1.iter()
                        .zip(&y.1)
                        .any(|(p, q)| matches!((p, q), (Some((a0, a1)), Some((b0, b1))) if a1 < b0 || b1 < a0))
                })
            }) && mine.iter().any(|x| &x.0 == b)
                && theirs.iter().any(|y| &y.0 == b)
        };
        let clash = |mine: &[Buffer], theirs: &[Buffer], writes: bool| -> Option<Buffer> {
            mine.iter().find(|b| theirs.contains(b) && !linked(w, b, writes) && !apart(b)).cloned()
        };
        let found = clash(&moved.reads, &ww, true)
            .map(|b| (b, "writes", "reads"))
            .or_else(|| clash(&moved.writes, &wr, false).map(|b| (b, "reads", "writes")))
            .or_else(|| clash(&moved.writes, &ww, true).map(|b| (b, "writes", "writes")));
        if let Some((b, verb, mine)) = found {
            return Err(ScheduleError::new(format!(
                "{what} would move block `{}` past block `{}`, which {verb} `{}` that `{}` {mine}: the order of the two decides the values",
                moved.block,
                w.block.name,
                b.name(),
                moved.block
            )));
        }
    }
    Ok(())
}

/// A buffer and the bounds of each dimension accessed (`None`: unknown).
type Footprint = (Buffer, Vec<Option<(i64, i64)>>);

/// Each buffer region a block accesses over all the loops around it, as
/// constant bounds per dimension where they are constants (`None` where
/// not): what it can touch in the whole run.
fn footprint(root: &Stmt, r: &BlockRealize) -> Vec<Footprint> {
    use crate::bounds::relax;
    let loops: Vec<(Var, Expr, Expr)> = root
        .loops_above(&r.block.name)
        .unwrap_or_default()
        .iter()
        .map(|x| (x.var.clone(), x.min.clone(), x.extent.clone()))
        .collect();
    let bind: Vec<(Var, Expr)> =
        r.block.iter_vars.iter().map(|iv| iv.var.clone()).zip(r.iter_values.iter().cloned()).collect();
    let (reads, writes) = super::tree::block_regions(r);
    reads
        .iter()
        .chain(&writes)
        .map(|g| {
            let dims = g
                .region
                .iter()
                .map(|d| {
                    let lo = subst::substitute(&d.min, &bind);
                    let hi = subst::substitute(&(d.min.clone() + d.extent.clone() - Expr::int(1)), &bind);
                    Some((relax(&lo, &loops)?.0.as_int()?, relax(&hi, &loops)?.1.as_int()?))
                })
                .collect();
            (g.buffer.clone(), dims)
        })
        .collect()
}

/// A buffer (of those `which` takes) through which two iterations of `l` meet
/// (one writes an element that another reads or writes), where that can
/// be seen exactly: every access of the buffer under the loop affine in the
/// loop, with constant coefficients, inside loops of constant range. Blocks
/// for which `skip` holds are left out (a reduction over the loop, which its
/// own lowering combines). `None` where the iterations touch apart parts of
/// every such buffer, or where it cannot be told. The loops outside `l` (in
/// `root`) are taken at their first values.
pub fn iterations_meet(
    root: &Stmt,
    l: &For,
    skip: &dyn Fn(&BlockRealize) -> bool,
    which: &dyn Fn(&Buffer) -> bool,
) -> Option<Buffer> {
    let outer = super::tree::loop_starts(root);
    match iterations_meet_by_running(l, &outer, skip, which) {
        Ok(found) => found,
        Err(()) => iterations_meet_affine(l, skip, which),
    }
}

/// [`iterations_meet`] only where the iterations can be run (`None`
/// otherwise): for accesses whose declared regions may be wider than one
/// iteration's (tensor-core tiles), where the affine forms would not tell.
pub fn iterations_meet_when_run(
    root: &Stmt,
    l: &For,
    skip: &dyn Fn(&BlockRealize) -> bool,
    which: &dyn Fn(&Buffer) -> bool,
) -> Option<Buffer> {
    let outer = super::tree::loop_starts(root);
    iterations_meet_by_running(l, &outer, skip, which).ok().flatten()
}

/// [`iterations_meet`] by running the loop and the loops inside it, each
/// loop outside at its first value: every element each iteration writes
/// and reads. `Err` where that cannot be done (ranges not constant, an
/// index that reads memory, more than 2^16 points).
fn iterations_meet_by_running(
    l: &For,
    outer: &[(Var, i64)],
    skip: &dyn Fn(&BlockRealize) -> bool,
    which: &dyn Fn(&Buffer) -> bool,
) -> Result<Option<Buffer>, ()> {
    use crate::arith::eval;
    use std::collections::HashMap;
    const LIMIT: i64 = 1 << 16;
    let (Some(l0), Some(n)) = (l.min.as_int(), l.extent.as_int()) else { return Err(()) };
    let lp = Stmt::For(Box::new(l.clone()));
    // For each element of a global buffer: the iterations that write it and
    // those that read it (one, or `None` for several).
    // For each element of a buffer: the iterations that write it and those
    // that read it.
    let mut writers: HashMap<(Buffer, Vec<i64>), Vec<i64>> = HashMap::new();
    let mut readers: HashMap<(Buffer, Vec<i64>), Vec<i64>> = HashMap::new();
    let mut work = 0i64;
    let note = |m: &mut HashMap<(Buffer, Vec<i64>), Vec<i64>>, key: (Buffer, Vec<i64>), it: i64| {
        let v = m.entry(key).or_default();
        if !v.contains(&it) {
            v.push(it);
        }
    };
    let again = recomputed(&lp, skip);
    for r in lp.blocks() {
        if skip(r) {
            continue;
        }
        let inner: Vec<(Var, i64, i64)> = l
            .body
            .loops_above(&r.block.name)
            .ok_or(())?
            .iter()
            .map(|x| Some((x.var.clone(), x.min.as_int()?, x.extent.as_int()?)))
            .collect::<Option<_>>()
            .ok_or(())?;
        let (reads, writes) = super::tree::block_regions(r);
        let regions: Vec<(bool, &tirc_ir::stmt::BufferRegion)> = writes
            .iter()
            .map(|g| (true, g))
            .chain(reads.iter().map(|g| (false, g)))
            .filter(|(_, g)| which(&g.buffer))
            .collect();
        if regions.is_empty() {
            continue;
        }
        let per = inner.iter().try_fold(1i64, |a, x| a.checked_mul(x.2.max(0))).ok_or(())?;
        // Counted before running: every access is at least one element.
        work = per
            .checked_mul(n)
            .and_then(|x| x.checked_mul(regions.len() as i64))
            .and_then(|x| x.checked_add(work))
            .filter(|w| *w <= LIMIT)
            .ok_or(())?;
        for it in l0..l0 + n {
            let mut at = vec![0i64; inner.len()];
            for _ in 0..per {
                let loop_value = |v: &Var| {
                    if *v == l.var {
                        return Some(it);
                    }
                    inner
                        .iter()
                        .zip(&at)
                        .find(|(x, _)| &x.0 == v)
                        .map(|(x, k)| x.1 + k)
                        .or_else(|| outer.iter().find(|(x, _)| x == v).map(|(_, m)| *m))
                };
                let vals: Vec<i64> =
                    r.iter_values.iter().map(|e| eval(e, &loop_value)).collect::<Option<_>>().ok_or(())?;
                let value = |v: &Var| {
                    r.block.iter_vars.iter().position(|iv| iv.var == *v).map(|k| vals[k]).or_else(|| loop_value(v))
                };
                // An instance its predicate leaves out touches nothing.
                let runs = eval(&r.predicate, &loop_value).ok_or(())? != 0;
                for (written, g) in regions.iter().filter(|_| runs) {
                    let dims: Vec<(i64, i64)> = g
                        .region
                        .iter()
                        .map(|d| Some((eval(&d.min, &value)?, eval(&d.extent, &value)?)))
                        .collect::<Option<_>>()
                        .ok_or(())?;
                    let size = dims.iter().try_fold(1i64, |a, d| a.checked_mul(d.1.max(0))).ok_or(())?;
                    work += size - 1;
                    if work > LIMIT {
                        return Err(());
                    }
                    for k in 0..size {
                        let mut rest = k;
                        let mut p: Vec<i64> = dims
                            .iter()
                            .rev()
                            .map(|(m, e)| {
                                let x = m + rest % e;
                                rest /= e;
                                x
                            })
                            .collect();
                        p.reverse();
                        let key = (g.buffer.clone(), p);
                        note(if *written { &mut writers } else { &mut readers }, key, it);
                    }
                }
                for (k, x) in at.iter_mut().zip(&inner).rev() {
                    *k += 1;
                    if *k < x.2 {
                        break;
                    }
                    *k = 0;
                }
            }
        }
    }
    for (key, w) in &writers {
        let read = readers.get(key).map_or(&[][..], |r| r.as_slice());
        // An element recomputed to one value by several iterations (a halo,
        // a broadcast) may be written by all of them; each must then read
        // only what it wrote itself.
        let meet = if again.contains(&key.0) {
            read.iter().any(|r| !w.contains(r))
        } else {
            w.len() > 1 || read.iter().any(|r| w[0] != *r)
        };
        if meet {
            return Ok(Some(key.0.clone()));
        }
    }
    Ok(None)
}

/// One access of a buffer under a loop, in one iteration of it: its box,
/// in terms of the loop and the loops outside (`None` where a bound is not
/// found), and whether it is seen exactly (affine indices of constant
/// extents, inner loops of constant range).
pub struct IterationBox {
    pub buffer: Buffer,
    pub written: bool,
    pub dims: Option<Vec<(Expr, Expr)>>,
    pub exact: bool,
}

/// Every access under `l` of the buffers `which` takes, by the blocks
/// `skip` leaves, as a box per iteration of `l` (its inner loops relaxed).
/// `None` where a block's loops cannot be found.
pub fn iteration_boxes(
    l: &For,
    skip: &dyn Fn(&BlockRealize) -> bool,
    which: &dyn Fn(&Buffer) -> bool,
) -> Option<Vec<IterationBox>> {
    use crate::bounds::relax;
    let lp = Stmt::For(Box::new(l.clone()));
    let mut out = Vec::new();
    for r in lp.blocks().into_iter().filter(|r| !skip(r)) {
        let inner = l.body.loops_above(&r.block.name)?;
        let relaxed: Vec<(Var, Expr, Expr)> =
            inner.iter().map(|x| (x.var.clone(), x.min.clone(), x.extent.clone())).collect();
        let constant = inner.iter().all(|x| x.min.as_int().is_some() && x.extent.as_int().is_some());
        let bind: Vec<(Var, Expr)> =
            r.block.iter_vars.iter().map(|iv| iv.var.clone()).zip(r.iter_values.iter().cloned()).collect();
        let (reads, writes) = super::tree::block_regions(r);
        for (list, written) in [(&writes, true), (&reads, false)] {
            for reg in list.iter().filter(|g| which(&g.buffer)) {
                let mut exact = constant;
                let dims = reg
                    .region
                    .iter()
                    .map(|g| {
                        let lo = subst::substitute(&g.min, &bind);
                        let hi = subst::substitute(&(g.min.clone() + g.extent.clone() - Expr::int(1)), &bind);
                        exact &= affine(&lo) && affine(&hi) && g.extent.as_int().is_some();
                        let top = tightened(relax(&hi, &relaxed)?.1, &hi, &r.predicate, &relaxed);
                        Some((relax(&lo, &relaxed)?.0, top))
                    })
                    .collect::<Option<Vec<_>>>();
                out.push(IterationBox { buffer: reg.buffer.clone(), written, dims, exact });
            }
        }
    }
    Some(out)
}

/// `top`, the highest value of index `x` over the `relaxed` loops, lowered
/// by a condition of the block's `predicate` on the part of `x` that those
/// loops make (`j_1_0 * 6 + j_1_1 < 32` of a split that does not divide,
/// for `x = j_0 * 32 + j_1_0 * 6 + j_1_1`): the loops overshoot, the
/// predicate keeps the block from running there.
fn tightened(top: Expr, x: &Expr, predicate: &Expr, relaxed: &[(Var, Expr, Expr)]) -> Expr {
    let an = crate::arith::Analyzer::new();
    let inner = |e: &Expr| relaxed.iter().any(|(v, _, _)| e.uses(v));
    let mut best = top;
    for c in crate::arith::conjuncts(predicate) {
        let (e, bound) = match &c {
            Expr::Binary(BinOp::Lt, e, b) => ((**e).clone(), (**b).clone() - Expr::int(1)),
            Expr::Binary(BinOp::Le, e, b) => ((**e).clone(), (**b).clone()),
            _ => continue,
        };
        if !inner(&e) || inner(&bound) {
            continue;
        }
        let base = an.simplify(&(x.clone() - e));
        if inner(&base) {
            continue;
        }
        let candidate = an.simplify(&(base + bound));
        if an.simplify(&(best.clone() - candidate.clone())).as_int().is_some_and(|d| d > 0) {
            best = candidate;
        }
    }
    best
}

/// Whether the iterations of loop `v` touch apart parts of `buf`, as
/// `boxes` (all of them known) show: in some dimension, the box `first`
/// moves past itself from one iteration to the next and every access of
/// `buf` stays inside it.
pub fn moves_apart(v: &Var, boxes: &[(&Buffer, &[(Expr, Expr)])], buf: &Buffer, first: &[(Expr, Expr)]) -> bool {
    let an = crate::arith::Analyzer::new();
    let diff = |a: &Expr, b: &Expr| an.simplify(&(a.clone() - b.clone())).as_int();
    let next = [(v.clone(), Expr::var(v) + Expr::int(1))];
    first.iter().enumerate().any(|(d, (lo, hi))| {
        diff(&subst::substitute(lo, &next), hi).is_some_and(|s| s >= 1)
            && boxes.iter().filter(|b| b.0 == buf).all(|b| {
                b.1.get(d).is_some_and(|(blo, bhi)| {
                    diff(blo, lo).is_some_and(|x| x >= 0) && diff(hi, bhi).is_some_and(|x| x >= 0)
                })
            })
    })
}

/// [`iterations_meet`] from the accesses' affine forms.
fn iterations_meet_affine(
    l: &For,
    skip: &dyn Fn(&BlockRealize) -> bool,
    which: &dyn Fn(&Buffer) -> bool,
) -> Option<Buffer> {
    let all = iteration_boxes(l, skip, which)?;
    let unclear: Vec<&Buffer> = all.iter().filter(|b| !b.exact || b.dims.is_none()).map(|b| &b.buffer).collect();
    type Known<'a> = (&'a Buffer, bool, &'a [(Expr, Expr)]);
    let boxes: Vec<Known> = all.iter().filter_map(|b| Some((&b.buffer, b.written, b.dims.as_deref()?))).collect();
    let plain: Vec<(&Buffer, &[(Expr, Expr)])> = boxes.iter().map(|b| (b.0, b.2)).collect();
    let an = crate::arith::Analyzer::new();
    let diff = |a: &Expr, b: &Expr| an.simplify(&(a.clone() - b.clone())).as_int();
    let again = recomputed(&Stmt::For(Box::new(l.clone())), skip);
    for &(buf, _, first) in boxes.iter().filter(|b| b.1) {
        if unclear.contains(&buf) {
            continue;
        }
        if again.contains(buf) {
            // Recomputed: each read must lie in what the same iteration
            // writes; a read seen to leave it (by constants) meets another.
            let outside = boxes.iter().filter(|b| b.0 == buf && !b.1).any(|b| {
                b.2.iter().zip(first).any(|((blo, bhi), (lo, hi))| {
                    diff(blo, lo).is_some_and(|x| x < 0) || diff(hi, bhi).is_some_and(|x| x < 0)
                })
            });
            if outside {
                return Some(buf.clone());
            }
            continue;
        }
        // Seen exactly only where every dimension's bounds differ by
        // constants; otherwise it cannot be told.
        let exact = boxes.iter().filter(|b| b.0 == buf).all(|b| {
            b.2.iter().zip(first).all(|((blo, bhi), (lo, hi))| diff(blo, lo).is_some() && diff(bhi, hi).is_some())
        });
        if exact && !moves_apart(&l.var, &plain, buf, first) {
            return Some(buf.clone());
        }
    }
    None
}

/// The buffers under `s` written by one block that computes its elements
/// from values nothing under `s` writes (spatial variables only, no init,
/// reads of buffers written elsewhere): writing an element again gives it
/// the same value, so iterations that recompute it (a halo, a broadcast)
/// agree.
fn recomputed(s: &Stmt, skip: &dyn Fn(&BlockRealize) -> bool) -> Vec<Buffer> {
    use tirc_ir::region::block_buffers;
    let blocks: Vec<&BlockRealize> = s.blocks().into_iter().filter(|r| !skip(r)).collect();
    let written: Vec<Buffer> = blocks.iter().flat_map(|r| block_buffers(r, false)).collect();
    let mut out: Vec<Buffer> = Vec::new();
    for b in &written {
        if out.contains(b) {
            continue;
        }
        let writers: Vec<&&BlockRealize> = blocks.iter().filter(|r| block_buffers(r, false).contains(b)).collect();
        // One block: two would write their own values.
        let pure = writers.len() == 1
            && writers.iter().all(|r| {
                r.block.init.is_none()
                    && r.block.iter_vars.iter().all(|iv| iv.kind == tirc_ir::IterKind::Spatial)
                    && block_buffers(r, true).iter().all(|x| !written.contains(x))
            });
        if pure {
            out.push(b.clone());
        }
    }
    out
}

/// Whether `e` is a sum of constant multiples of variables and constants.
fn affine(e: &Expr) -> bool {
    match e {
        Expr::Int(..) | Expr::Var(_) => true,
        Expr::Binary(tirc_ir::BinOp::Add | tirc_ir::BinOp::Sub, a, b) => affine(a) && affine(b),
        Expr::Binary(tirc_ir::BinOp::Mul, a, b) => {
            (a.as_int().is_some() && affine(b)) || (b.as_int().is_some() && affine(a))
        }
        Expr::Cast(t, a) if t.is_int() => affine(a),
        _ => false,
    }
}
