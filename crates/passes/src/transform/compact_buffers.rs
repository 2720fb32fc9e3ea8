//! `compact_buffers`: each shared or local buffer is allocated at the lowest
//! loop that holds all its accesses, with the shape of the region used
//! there.
//!
//! A cache made by `cache_read` has the shape of the whole buffer it copies;
//! under `compute_at` only a tile of it is used in each iteration of the
//! loop it was moved to. For every allocation of a shared or local buffer,
//! this pass finds the innermost loop around all accesses (their lowest
//! common ancestor), the region the accesses cover in one iteration of that
//! loop — inner loops relaxed to their ranges and, for shared memory, loops
//! bound to thread indices (virtual threads too) relaxed, inside the allocation or around it,
//! since the threads of a block share one copy — and shrinks each dimension with a constant extent to it,
//! subtracting the region's start from every index, even where the region
//! is as large as the buffer (TVM compacts a block's buffer this way, so a
//! one-row cache indexed by the block's row is in bounds) (a local buffer takes
//! the region's constant extent even where that is larger: it is the
//! thread's tile, indexed without the thread's offset). A local allocation
//! moves to the body of that loop; a shared one stays where it is, once per
//! GPU block, since the GPU reuses one array for every iteration. A dimension whose region has no constant size
//! keeps its full extent. Runs after `lower_blocks`, on multi-dimensional
//! indices. A buffer's stride padding (`dim_align`) is kept: it applies to
//! the compacted shape, as TVM's `storage_align` does. A tensor-core
//! fragment (`wmma.*` scopes) is compacted as a local buffer, per warp; a
//! tensor-core tile counts as its 16×16 box. A buffer that carries values
//! across loops (`facts.carried`, from `lower_blocks`) is allocated outside
//! them.

use crate::bounds::{relax_guarded, to_range_in, union_in, Relaxed};
use tirc_ir::{Buffer, Diagnostic, Expr, For, ForKind, PrimFunc, Scope, Stmt, Var};

/// The largest extent a per-thread tile takes beyond its buffer's.
const MAX_LOCAL_TILE: i64 = 1024;

pub fn run(mut f: PrimFunc) -> Result<PrimFunc, Diagnostic> {
    let mut allocs = Vec::new();
    // A tile bulk tensor copies write (lowered text of a warp-specialized
    // loop) holds a whole box per store and its versions: kept as it is.
    let tma = tirc_ir::launch::tma_destinations(&f.body);
    f.body.walk(&mut |s| {
        if let Stmt::Allocate { buffer, .. } = s {
            if buffer.scope() != Scope::Global && !tma.contains(buffer) {
                allocs.push(buffer.clone());
            }
        }
    });
    for b in allocs {
        f.body = compact(&f.body, &b, &f.facts.carried, !f.facts.from_blocks);
    }
    Ok(f)
}

/// After `extract_launch` (which calls it): a thread's own buffer (local
/// memory, a tensor-core fragment) indexed by a thread index of the launch.
/// Before the launch, such a buffer used under two loops bound to one
/// thread index (a product's loop over the warps and a write-back's, moved
/// apart) had every thread's tiles: each loop is relaxed at their common
/// ancestor, where one thread's copy is not yet one thread's. Once both
/// are the launch's one variable, fixed for the thread, it takes one
/// thread's tile, as `run` gives one anywhere else: an array of every
/// warp's accumulators indexed by the warp leaves the registers for local
/// memory on the GPU.
pub fn per_thread_after_launch(mut f: PrimFunc) -> PrimFunc {
    let (head, _) = f.body.launch_head();
    let threads: Vec<Var> = head.iter().filter(|(_, t, _)| !t.is_block).map(|(v, _, _)| (*v).clone()).collect();
    if threads.is_empty() {
        return f;
    }
    let by_thread = |idx: &[Expr]| idx.iter().any(|i| threads.iter().any(|v| i.uses(v)));
    let mut allocs: Vec<Buffer> = Vec::new();
    f.body.walk(&mut |s| {
        if let Stmt::Allocate { buffer, .. } = s {
            if buffer.scope() == Scope::Local || buffer.scope().is_fragment() {
                allocs.push(buffer.clone());
            }
        }
    });
    allocs.retain(|b| {
        let mut hit = false;
        f.body.walk(&mut |s| {
            match s {
                Stmt::Store { buffer, indices, .. } if buffer == b => hit |= by_thread(indices),
                Stmt::Wmma(w) => hit |= w.tiles.iter().any(|t| &t.buffer == b && by_thread(&t.indices)),
                _ => {}
            }
            s.for_each_expr(|e| {
                e.walk(&mut |x| {
                    if let Expr::Load(lb, idx) = x {
                        hit |= lb == b && by_thread(idx);
                    }
                })
            });
        });
        hit
    });
    for b in allocs {
        f.body = compact(&f.body, &b, &f.facts.carried, !f.facts.from_blocks);
    }
    f
}

/// One access: its indices, the loops around it, outermost first, and the
/// conditions it runs under (the `and`-ed parts of the `if`s around it
/// inside the allocation: a block's `T.where`, after `lower_blocks`).
struct Access {
    indices: Vec<Expr>,
    loops: Vec<For>,
    guards: Vec<Expr>,
}

/// The loops and the conditions around a point of the allocation's body.
#[derive(Default)]
struct Context {
    loops: Vec<For>,
    guards: Vec<Expr>,
}

impl Context {
    fn access(&self, indices: Vec<Expr>) -> Access {
        Access { indices, loops: self.loops.clone(), guards: self.guards.clone() }
    }
}

fn collect(s: &Stmt, b: &Buffer, cx: &mut Context, out: &mut Vec<Access>) {
    let exprs = |e: &Expr, cx: &Context, out: &mut Vec<Access>| {
        e.walk(&mut |x| {
            if let Expr::Load(lb, idx) = x {
                if lb == b {
                    out.push(cx.access(idx.clone()));
                }
            }
        })
    };
    match s {
        Stmt::For(l) => {
            exprs(&l.min, cx, out);
            exprs(&l.extent, cx, out);
            cx.loops.push((**l).clone());
            collect(&l.body, b, cx, out);
            cx.loops.pop();
        }
        // A launch of a thread index (lowered text, `T.launch_thread`) is a
        // loop bound to it.
        Stmt::Launch { var, tag, extent, body } => {
            exprs(extent, cx, out);
            cx.loops.push(launch_loop(var, tag, extent));
            collect(body, b, cx, out);
            cx.loops.pop();
        }
        Stmt::If { cond, then, orelse } => {
            exprs(cond, cx, out);
            let parts = crate::arith::conjuncts(cond);
            let n = parts.len();
            cx.guards.extend(parts);
            collect(then, b, cx, out);
            cx.guards.truncate(cx.guards.len() - n);
            if let Some(e) = orelse {
                collect(e, b, cx, out);
            }
        }
        Stmt::Store { buffer, indices, value } => {
            for i in indices {
                exprs(i, cx, out);
            }
            exprs(value, cx, out);
            if buffer == b {
                out.push(cx.access(indices.clone()));
            }
        }
        // A tensor-core tile covers 16×16 elements (a warp tile 32×8) from its first: its
        // first and last elements stand for it.
        Stmt::Wmma(w) => {
            s.for_each_expr(|e| exprs(e, cx, out));
            for t in w.tiles.iter().filter(|t| &t.buffer == b) {
                let mut last = t.indices.clone();
                let n = last.len();
                let (rows, cols) = t.extent();
                match (n, t.row_stride()) {
                    // A flat tile: its rows `row_stride` apart.
                    (1, Some(stride)) => {
                        last[0] = last[0].clone() + Expr::int(rows - 1) * stride + Expr::int(cols - 1);
                    }
                    _ => {
                        for (i, e) in last.iter_mut().skip(n.saturating_sub(2)).zip([rows, cols]) {
                            *i = i.clone() + Expr::int(e - 1);
                        }
                    }
                }
                out.push(cx.access(t.indices.clone()));
                out.push(cx.access(last));
            }
        }
        _ => {
            s.for_each_expr(|e| exprs(e, cx, out));
            s.for_each_child(|c| collect(c, b, cx, out));
        }
    }
}

/// The loop a launch of `var` stands for (its body left out): bound to
/// the launch's index, over its extent, as the loops of a schedule are
/// before `extract_launch` turns them into launches.
pub(super) fn launch_loop(var: &Var, tag: &tirc_ir::ThreadTag, extent: &Expr) -> For {
    For {
        var: var.clone(),
        min: Expr::int(0),
        extent: extent.clone(),
        kind: ForKind::ThreadBinding(*tag),
        annotations: Vec::new(),
        body: Stmt::NoOp,
        span: None,
    }
}

/// The body of `b`'s allocation and the loops around the allocation,
/// outermost first.
fn find_allocation(s: &Stmt, b: &Buffer, loops: &mut Vec<For>) -> Option<(Stmt, Vec<For>)> {
    match s {
        Stmt::Allocate { buffer, body } if buffer == b => Some(((**body).clone(), loops.clone())),
        Stmt::For(l) => {
            loops.push((**l).clone());
            let r = find_allocation(&l.body, b, loops);
            loops.pop();
            r
        }
        Stmt::Launch { var, tag, extent, body } => {
            loops.push(launch_loop(var, tag, extent));
            let r = find_allocation(body, b, loops);
            loops.pop();
            r
        }
        _ => {
            let mut found = None;
            s.for_each_child(|c| {
                if found.is_none() {
                    found = find_allocation(c, b, loops);
                }
            });
            found
        }
    }
}

fn compact(root: &Stmt, b: &Buffer, carried: &[(tirc_ir::BufferId, Vec<Var>)], lowered_text: bool) -> Stmt {
    let Some((body, outer)) = find_allocation(root, b, &mut Vec::new()) else { return root.clone() };
    let mut acc = Vec::new();
    collect(&body, b, &mut Context::default(), &mut acc);
    if acc.is_empty() {
        return root.clone();
    }
    // The lowest common ancestor: the common prefix of the loop stacks.
    let mut depth = acc[0].loops.len();
    for a in &acc[1..] {
        depth = depth.min(a.loops.iter().zip(&acc[0].loops).take_while(|(x, y)| x.var == y.var).count());
    }
    let shared = b.scope() == Scope::Shared;
    // A buffer that carries values across loops (a running sum over an
    // ordered axis, an accumulator read inside its reduction loop) is
    // allocated outside them, not afresh in each iteration.
    let across: &[Var] = carried.iter().find(|(id, _)| *id == b.id()).map_or(&[], |(_, l)| l.as_slice());
    if let Some(k) = acc[0].loops[..depth].iter().position(|l| across.contains(&l.var)) {
        depth = k;
    }
    // Lowered text has no blocks to say so: a local buffer declared above a
    // loop of its thread whose iterations may read what an earlier one
    // wrote stays above it.
    if lowered_text && b.scope() == Scope::Local {
        let ranges = crate::bounds::loop_ranges(root);
        if let Some(k) = acc[0].loops[..depth]
            .iter()
            .position(|l| !matches!(l.kind, ForKind::ThreadBinding(_)) && carries(l, b, &ranges))
        {
            depth = k;
        }
    }
    // (A virtual thread is one of the block's threads here.)
    let thread_loop = |l: &For| matches!(l.kind, ForKind::ThreadBinding(t) if !t.is_block) || l.is_vthread();
    // The threads of a GPU block share one copy of a shared buffer, so loops
    // bound to thread indices are relaxed wherever they are, the ones around
    // the allocation included.
    let outer_threads: Vec<Relaxed> = if shared {
        outer.iter().filter(|l| thread_loop(l)).map(|l| (l.var.clone(), l.min.clone(), l.extent.clone())).collect()
    } else {
        Vec::new()
    };
    // The loops the region is taken in (around the common ancestor, not
    // relaxed) keep their ranges, so that two forms of one offset (a
    // fused block index's `f // 2` and `f // 2 % 2`, with f < 4) are seen
    // to be one.
    let mut an = crate::arith::Analyzer::new();
    for l in outer.iter().chain(&acc[0].loops[..depth]) {
        an.bind_range(&l.var, &l.min, &l.extent);
    }
    let mut region: Vec<Option<(Expr, Expr)>> = Vec::new();
    for (n, a) in acc.iter().enumerate() {
        let relaxed: Vec<Relaxed> = a
            .loops
            .iter()
            .enumerate()
            .filter(|(i, l)| *i >= depth || shared && thread_loop(l))
            .map(|(_, l)| (l.var.clone(), l.min.clone(), l.extent.clone()))
            .chain(outer_threads.iter().cloned())
            .collect();
        for (d, idx) in a.indices.iter().enumerate() {
            let r = relax_guarded(idx, &relaxed, &a.guards);
            if n == 0 {
                region.push(r);
            } else {
                region[d] = match (&region[d], r) {
                    (Some(old), Some(new)) => union_in(&an, old, &new),
                    _ => None,
                };
            }
        }
    }
    // The new shape and the offset of each dimension.
    let mut shape = Vec::new();
    let mut offset = Vec::new();
    let mut changed = false;
    for (d, r) in region.iter().enumerate() {
        let full = b.shape()[d].clone();
        let range = r.as_ref().and_then(|(lo, hi)| to_range_in(&an, lo, hi));
        // A per-thread tile takes the region's constant extent even where the
        // buffer is smaller (a register tile of 8 rows of a 1-row matrix, its
        // extra rows never touched): its index then loses the thread's
        // offset, and it stays in registers.
        let per_thread = b.scope() == Scope::Local || b.scope().is_fragment();
        // (Up to MAX_LOCAL_TILE elements a dimension: a region past the
        // buffer's own extent and that large comes from a split by a huge
        // factor, and keeps the buffer's shape.)
        let local_tile = per_thread
            && range.as_ref().is_some_and(|rg| {
                rg.extent.as_int().is_some_and(|e| e <= MAX_LOCAL_TILE || full.as_int().is_some_and(|f| e <= f))
            });
        match range {
            Some(rg) if local_tile || rg.extent.as_int() <= full.as_int() || full.as_int().is_none() => {
                shape.push(rg.extent);
                offset.push(rg.min);
                changed = true;
            }
            _ => {
                shape.push(full);
                offset.push(Expr::int(0));
            }
        }
    }
    let nb = if changed { b.with(|n| n.shape = shape) } else { b.clone() };
    let shift = |idx: &[Expr]| -> Vec<Expr> {
        idx.iter().zip(&offset).map(|(i, o)| an.simplify(&(i.clone() - o.clone()))).collect()
    };
    let new_body = crate::common::tree::reindex_buffer(&body, b, &nb, &shift);
    // Shared memory stays allocated where it was, once per GPU block: a
    // tile reused by every iteration of a loop is one array on the GPU,
    // and a barrier must guard its reuse.
    let lca: Option<Var> = if depth > 0 && !shared { Some(acc[0].loops[depth - 1].var.clone()) } else { None };
    // Drop the old allocation, then allocate at the common loop.
    let without = root.rewrite(&mut |s| match s {
        Stmt::Allocate { buffer, .. } if buffer == b => Some(if lca.is_some() {
            new_body.clone()
        } else {
            Stmt::Allocate { buffer: nb.clone(), body: Box::new(new_body.clone()) }
        }),
        _ => None,
    });
    match lca {
        None => without,
        Some(v) => without.rewrite(&mut |s| match s {
            Stmt::For(l) if l.var == v => {
                let mut l = (**l).clone();
                l.body = Stmt::Allocate { buffer: nb.clone(), body: Box::new(l.body) };
                Some(Stmt::For(Box::new(l)))
            }
            // (In lowered text the common loop may be a launch, which
            // `collect` reads as a loop bound to its index.)
            Stmt::Launch { var, tag, extent, body } if *var == v => Some(Stmt::Launch {
                var: var.clone(),
                tag: *tag,
                extent: extent.clone(),
                body: Box::new(Stmt::Allocate { buffer: nb.clone(), body: body.clone() }),
            }),
            _ => None,
        }),
    }
}

/// Whether an iteration of loop `l` may read an element of `b` that it has
/// not written before (in program order, in loops that run at least once):
/// a value left by an earlier iteration. Any read it cannot show covered
/// counts. A store under a test that does not depend on `l` (nor on
/// memory) counts with its whole box: the test of a tile's edge leaves the
/// same elements unwritten in every iteration, and they are read, if at
/// all, for results the same test throws away. (That is a trust, not a
/// proof: a text that writes part of a box at each iteration under a test
/// of its own loops and reads the rest is taken as not carrying, as every
/// text was before.) A test on `l` (`if k == 0:` around an accumulator's
/// init) makes its stores count for nothing.
fn carries(l: &For, b: &Buffer, ranges: &[Relaxed]) -> bool {
    let body = &l.body;
    let an = crate::arith::Analyzer::new();
    let le = |x: &Expr, y: &Expr| crate::bounds::provably_le(&an, x, y, ranges);
    let mut covered: Vec<Vec<(Expr, Expr)>> = Vec::new();
    let steady = |c: &Expr| !c.uses(&l.var) && !c.has_load();
    !reads_covered(body, b, &mut covered, &le, &steady)
}

/// Walks `s` in program order: `false` at a read of `b` outside every box
/// of `covered`, to which each store of `b` met adds its own.
fn reads_covered(
    s: &Stmt,
    b: &Buffer,
    covered: &mut Vec<Vec<(Expr, Expr)>>,
    le: &dyn Fn(&Expr, &Expr) -> bool,
    steady: &dyn Fn(&Expr) -> bool,
) -> bool {
    let inside = |idx: &[Expr], covered: &[Vec<(Expr, Expr)>]| {
        covered.iter().any(|bx| bx.len() == idx.len() && bx.iter().zip(idx).all(|((lo, hi), i)| le(lo, i) && le(i, hi)))
    };
    let mut loads_ok = true;
    s.for_each_expr(|e| {
        e.walk(&mut |x| {
            if let Expr::Load(lb, idx) = x {
                loads_ok &= lb != b || inside(idx, covered);
            }
        })
    });
    if !loads_ok {
        return false;
    }
    match s {
        Stmt::Store { buffer, indices, .. } => {
            if buffer == b {
                covered.push(indices.iter().map(|i| (i.clone(), i.clone())).collect());
            }
            true
        }
        Stmt::Seq(items) => items.iter().all(|c| reads_covered(c, b, covered, le, steady)),
        Stmt::Allocate { body, .. } | Stmt::Launch { body, .. } => reads_covered(body, b, covered, le, steady),
        // What a branch writes may not be written: under a test on the
        // loop, it covers nothing after the branch.
        Stmt::If { cond, then, orelse } if steady(cond) => {
            reads_covered(then, b, covered, le, steady)
                && orelse.as_ref().is_none_or(|e| reads_covered(e, b, covered, le, steady))
        }
        Stmt::If { then, orelse, .. } => {
            let ok = reads_covered(then, b, &mut covered.clone(), le, steady);
            ok && orelse.as_ref().is_none_or(|e| reads_covered(e, b, &mut covered.clone(), le, steady))
        }
        // Inside, an iteration reads what it or the code before wrote; after
        // a loop that runs, what its stores under no test wrote, over all
        // its iterations.
        Stmt::For(f) => {
            if !reads_covered(&f.body, b, &mut covered.clone(), le, steady) {
                return false;
            }
            if le(&Expr::int(1), &f.extent) {
                let mut loops = vec![(f.var.clone(), f.min.clone(), f.extent.clone())];
                plain_stores(&f.body, b, &mut loops, le, steady, covered);
            }
            true
        }
        Stmt::Wmma(w) => !w.tiles.iter().any(|t| &t.buffer == b),
        Stmt::Let { .. } | Stmt::Block(_) => !s.uses_buffer(b),
        _ => true,
    }
}

/// Adds to `covered` the box of each store of `b` in `s` under no test
/// that `steady` refuses, over `loops` (those around it inside the loop that ran) and the loops
/// inside, where each of them runs at least once.
fn plain_stores(
    s: &Stmt,
    b: &Buffer,
    loops: &mut Vec<Relaxed>,
    le: &dyn Fn(&Expr, &Expr) -> bool,
    steady: &dyn Fn(&Expr) -> bool,
    covered: &mut Vec<Vec<(Expr, Expr)>>,
) {
    match s {
        Stmt::Store { buffer, indices, .. } if buffer == b => {
            if let Some(bx) = indices.iter().map(|i| crate::bounds::relax(i, loops)).collect::<Option<Vec<_>>>() {
                // A box, not a set of points, only where the store's index
                // runs through every value of it: one loop variable with a
                // unit step, the others fixed.
                // (A loop of one iteration counts as no loop.)
                let runs = |e: &Expr| e.as_int() != Some(1);
                let dense = indices.iter().all(|i| {
                    let vars: Vec<&Var> =
                        loops.iter().filter(|(v, _, e)| i.uses(v) && runs(e)).map(|(v, _, _)| v).collect();
                    vars.is_empty() || (vars.len() == 1 && step_one(i, vars[0]))
                });
                let distinct = loops.iter().all(|(v, _, _)| indices.iter().filter(|i| i.uses(v)).count() <= 1);
                if dense && distinct {
                    covered.push(bx);
                }
            }
        }
        Stmt::Seq(items) => items.iter().for_each(|c| plain_stores(c, b, loops, le, steady, covered)),
        Stmt::Allocate { body, .. } => plain_stores(body, b, loops, le, steady, covered),
        Stmt::If { cond, then, orelse } if steady(cond) => {
            plain_stores(then, b, loops, le, steady, covered);
            if let Some(e) = orelse {
                plain_stores(e, b, loops, le, steady, covered);
            }
        }
        Stmt::For(f) if le(&Expr::int(1), &f.extent) => {
            loops.push((f.var.clone(), f.min.clone(), f.extent.clone()));
            plain_stores(&f.body, b, loops, le, steady, covered);
            loops.pop();
        }
        _ => {}
    }
}

/// Whether `e` is `v` plus terms without `v`.
fn step_one(e: &Expr, v: &Var) -> bool {
    let an = crate::arith::Analyzer::new();
    let next = tirc_ir::subst::substitute(e, &[(v.clone(), Expr::var(v) + Expr::int(1))]);
    an.simplify(&(next - e.clone())).as_int() == Some(1)
}
