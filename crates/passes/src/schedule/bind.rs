//! `bind(loop, thread_axis)`: the loop's iterations run on GPU blocks or
//! threads instead of one after another.
//!
//! A virtual thread (`vthread`, `vthread.x/y/z`) is not a GPU axis: as in
//! the function text (`T.thread_binding(.., thread="vthread.x")`), the loop
//! is unrolled, after the checks of `unroll`, and marked as a virtual thread
//! (`tirc_ir::stmt::VTHREAD`): `inject_virtual_thread` interleaves its
//! iterations in one thread.
//!
//! Preconditions, checked in this order:
//! 1. The thread axis is one of blockIdx.x/y/z, threadIdx.x/y/z.
//! 2. The loop is in the function, is serial, and has a constant extent
//!    within the axis' limit; a blockIdx may also have an extent of the
//!    function's run-time sizes (`ceildiv(m, 64)`), the grid then being
//!    computed at launch (and checked against the limit there).
//! 3. If the axis is a blockIdx, no block under the loop reduces over it:
//!    blocks cannot combine their partial sums within one kernel. A
//!    reduction loop bound to a threadIdx is a cross-thread reduction,
//!    lowered by `lower_cross_thread_reduction`.
//!    No two iterations meet in global memory (one writing an element
//!    another reads or writes), where every access is affine in the loop
//!    and that can be seen exactly.
//! 4. No loop around it or inside it is bound to the same axis, unless the
//!    inner loop's blocks all write shared memory and do not depend on the
//!    outer loop: then the threads share the copy (a cooperative fetch),
//!    each doing the iterations of its index. A copy that depends on the
//!    outer loop (placed by `compute_at` while that loop was still serial,
//!    so each of its iterations copies its own tile) cannot be shared: bind
//!    the outer loop before `compute_at`.
//! 5. Every loop bound to one axis in the loop's top-level nest (the root
//!    block's statement that holds it: a kernel of its own once
//!    `split_kernels` has run) has the same extent, and the threads of a
//!    block number at most 1024.
//! 6. If the axis is a blockIdx, no loop around the loop holds other
//!    statements besides the way down to it (checked with 4, before 5).

use super::{LoopRV, Result, Schedule, ScheduleError};
use crate::common::tree::{get_loop, replace_loop};
use tirc_ir::structural_eq::same_expr;
use tirc_ir::{For, ForKind, IterKind, Scope, Stmt, ThreadTag};

pub fn bind(sch: &mut Schedule, lp: &LoopRV, thread: &str) -> Result<()> {
    if tirc_ir::stmt::is_vthread_axis(thread) {
        super::loop_kind::unroll(sch, lp)?;
        sch.func.body = replace_loop(&sch.func.body, lp, |f| {
            let mut f = f.clone();
            f.annotations.retain(|(k, _)| k != tirc_ir::stmt::VTHREAD);
            f.annotations.insert(0, (tirc_ir::stmt::VTHREAD.to_string(), tirc_ir::Attr::Str(thread.to_string())));
            Ok(Stmt::For(Box::new(f)))
        })?;
        return Ok(());
    }
    // 1.
    let Some(tag) = ThreadTag::parse(thread) else {
        let names: Vec<String> = ThreadTag::ALL.iter().map(|t| t.name()).collect();
        let mut e = ScheduleError::bad_argument(format!("unknown thread axis `{thread}`"));
        if let Some(s) = tirc_ir::diag::suggest(thread, names.iter().map(|s| s.as_str())) {
            e = e.help(format!("did you mean `{s}`?"));
        }
        return Err(e);
    };
    // 2.
    let l = get_loop(&sch.func.body, lp)?.clone();
    if let ForKind::ThreadBinding(t) = l.kind {
        return Err(ScheduleError::new(format!("loop `{}` is already bound to {}", lp.name(), t.name())));
    }
    let symbolic = l.extent.as_int().is_none();
    if symbolic && !(tag.is_block && l.extent.is_size_expr(&sch.func.sizes)) {
        let mut e = ScheduleError::new(format!("loop `{}` has no constant extent to launch", lp.name()));
        if l.extent.is_size_expr(&sch.func.sizes) {
            e = e.help(format!(
                "only a blockIdx may take an extent known at run time; split the loop and bind the constant part to {}",
                tag.name()
            ));
        }
        return Err(e);
    }
    let extent = l.extent.as_int().unwrap_or(i64::MIN);
    if extent > tag.max_extent() {
        return Err(ScheduleError::new(format!(
            "loop `{}` has {extent} iterations but {} allows at most {}",
            lp.name(),
            tag.name(),
            tag.max_extent()
        ))
        .help("split the loop first"));
    }
    // 3.
    for r in Stmt::For(Box::new(l.clone())).blocks() {
        for (iv, v) in r.block.iter_vars.iter().zip(&r.iter_values) {
            if iv.kind == IterKind::Opaque && v.uses(lp) {
                return Err(ScheduleError::new(format!(
                    "loop {} cannot be bound to {}: block {} has an opaque axis over it, whose iterations must run in order",
                    lp.name(),
                    tag.name(),
                    r.block.name
                )));
            }
            if tag.is_block && iv.kind == IterKind::Reduce && v.uses(lp) {
                return Err(ScheduleError::new(format!(
                    "loop {} cannot be bound to {}: block {} reduces over it, and blocks cannot combine their partial sums",
                    lp.name(),
                    tag.name(),
                    r.block.name
                ))
                .help("bind it to a threadIdx axis (a cross-thread reduction), or keep it serial"));
            }
        }
    }
    // 3b. The iterations run at once: none may read or write what another
    // writes in global memory.
    let reduces_over = |r: &tirc_ir::BlockRealize| {
        r.block.iter_vars.iter().zip(&r.iter_values).any(|(iv, v)| iv.kind == IterKind::Reduce && v.uses(lp))
    };
    if let Some(b) =
        crate::common::hazard::iterations_meet(&sch.func.body, &l, &reduces_over, &|b| b.scope() == Scope::Global)
    {
        return Err(ScheduleError::new(format!(
            "loop `{}` cannot be bound to {}: its iterations meet in `{}` (one writes an element another reads or writes), and they would run at once",
            lp.name(),
            tag.name(),
            b.name()
        ))
        .help("keep the loop serial, or split the computation into blocks whose iterations touch apart elements"));
    }
    // 4.
    if let Some(outer) = enclosing_bound(&sch.func.body, lp, tag) {
        // A cooperative fetch: the threads of the outer binding share the
        // copy into shared memory, each doing its part.
        // (Said first: a loop that copies nothing into shared memory is
        // no cooperative fetch whose copy the threads could share.)
        let inner = Stmt::For(Box::new(l.clone()));
        if !writes_shared_only(&inner, tag) {
            return Err(ScheduleError::new(format!(
                "loop `{}` is inside loop `{}`, which is already bound to {}",
                lp.name(),
                outer.name(),
                tag.name()
            ))
            .help("a loop may be bound again to a thread axis of an enclosing loop only when its blocks write shared memory (a cooperative fetch)"));
        }
        cooperative(&inner, &outer, tag)?;
    }
    // 6. A blockIdx spans the whole kernel: every loop around it holds
    // nothing but the way down to it. One beside other statements (a
    // cooperative copy's rows spread over blocks under the compute's
    // loops) would give each block a part of what all of it reads.
    if tag.is_block {
        if let Some(b) = block_with_init_around(&sch.func.body, lp) {
            return Err(ScheduleError::new(format!(
                "loop `{}` cannot be bound to {}: it is inside block `{b}`, which holds an init beside its body, and a block index must cover everything its kernel does",
                lp.name(),
                tag.name()
            ))
            .help("bind the loops outside the block (blockize after binding), or bind this one to a threadIdx axis"));
        }
        if let Some(a) = crowded_ancestor(&sch.func.body, lp) {
            return Err(ScheduleError::new(format!(
                "loop `{}` cannot be bound to {}: loop `{}` around it holds other statements too, and a block index must cover everything its kernel does",
                lp.name(),
                tag.name(),
                a.name()
            ))
            .help("bind it to a threadIdx axis (a cooperative copy shared by the block's threads)"));
        }
    }
    let mut inner_bound = Vec::new();
    l.body.walk(&mut |s| {
        if let Stmt::For(f) = s {
            if f.kind == ForKind::ThreadBinding(tag) {
                inner_bound.push(Stmt::For(f.clone()));
            }
        }
    });
    for inner in &inner_bound {
        let Stmt::For(f) = inner else { continue };
        if !writes_shared_only(inner, tag) {
            return Err(ScheduleError::new(format!(
                "loop `{}` cannot be bound to {}: loop `{}` inside it is already bound to {}",
                lp.name(),
                tag.name(),
                f.var.name(),
                tag.name()
            ))
            .help("a thread axis is bound once on each path, except for a copy into shared memory shared by the threads (a cooperative fetch)"));
        }
        cooperative(inner, &l.var, tag)?;
    }
    // 5.
    let mut extents: Vec<(ThreadTag, i64)> = Vec::new();
    let nests = super::cache::root_stmts(&sch.func.body);
    let nest = nests.iter().find(|s| s.find_loop(lp).is_some()).unwrap_or(&sch.func.body);
    let mut mismatch = None;
    nest.walk(&mut |s| {
        if let Stmt::For(f) = s {
            match (f.kind, f.extent.as_int()) {
                (ForKind::ThreadBinding(t), Some(e)) => extents.push((t, e)),
                // Extents known at run time must be the same expression.
                (ForKind::ThreadBinding(t), None) if t == tag && !same_expr(&f.extent, &l.extent) => {
                    mismatch = Some(tirc_ir::printer::print_expr(&f.extent))
                }
                _ => {}
            }
        }
    });
    if symbolic {
        if let Some((_, e)) = extents.iter().find(|(t, _)| *t == tag) {
            mismatch = Some(e.to_string());
        }
        extents.retain(|(t, _)| *t != tag);
    }
    if let Some(e) = mismatch {
        return Err(ScheduleError::new(format!(
            "{} is already bound to a loop of extent {e}; loop `{}` has extent {}",
            tag.name(),
            lp.name(),
            tirc_ir::printer::print_expr(&l.extent)
        ))
        .help("every loop bound to one thread axis must have the same extent"));
    }
    if let Some((_, e)) = extents.iter().find(|(t, e)| *t == tag && *e != extent) {
        return Err(ScheduleError::new(format!(
            "{} is already bound to a loop of extent {e}; loop `{}` has extent {extent}",
            tag.name(),
            lp.name()
        ))
        .help("every loop bound to one thread axis must have the same extent"));
    }
    if !symbolic {
        extents.push((tag, extent));
    }
    let per_dim = |d: u8| extents.iter().find(|(t, _)| !t.is_block && t.dim == d).map_or(1, |(_, e)| *e);
    let threads = per_dim(0) * per_dim(1) * per_dim(2);
    if threads > 1024 {
        return Err(ScheduleError::new(format!(
            "more than 1024 threads in a block: threadIdx.x ({}) × threadIdx.y ({}) × threadIdx.z ({}) = {threads}",
            per_dim(0),
            per_dim(1),
            per_dim(2)
        ))
        .help("bind smaller loops to threads, or split them"));
    }
    sch.func.body = replace_loop(&sch.func.body, lp, |f| {
        let mut f = f.clone();
        f.kind = ForKind::ThreadBinding(tag);
        Ok(Stmt::For(Box::new(f)))
    })?;
    Ok(())
}

/// Whether the loop `s`, bound to thread axis `tag`, can be a cooperative
/// fetch: it holds blocks, and they write shared memory only.
fn writes_shared_only(s: &Stmt, tag: ThreadTag) -> bool {
    let blocks = s.blocks();
    !tag.is_block
        && !blocks.is_empty()
        && blocks.iter().all(|r| r.block.writes.iter().all(|w| w.buffer.scope() == Scope::Shared))
}

/// `Err` unless the blocks of `inner` (a loop bound to `tag` inside the
/// loop of `outer`, also bound to it) are one copy for all of `outer`'s
/// iterations: their values do not depend on `outer`, and doing the copy
/// once gives what doing it at each of `outer`'s iterations gives (no block
/// adds to what it wrote before: `S[j] += A[j]` would add once, not once an
/// iteration).
fn cooperative(inner: &Stmt, outer: &LoopRV, tag: ThreadTag) -> Result<()> {
    let inner_loops: Vec<LoopRV> = {
        let mut v = Vec::new();
        inner.walk(&mut |s| {
            if let Stmt::For(f) = s {
                v.push(f.var.clone());
            }
        });
        v
    };
    for r in inner.blocks() {
        let rereads = crate::common::tree::read_and_written(r);
        // A reduction whose every step is inside `inner` starts again from
        // its init each time, so running it once gives the same values.
        let restarts = r.block.init.is_some()
            && r.block.iter_vars.iter().zip(&r.iter_values).all(|(iv, v)| {
                iv.kind != IterKind::Reduce || {
                    let mut inside = true;
                    v.walk(&mut |e| {
                        if let tirc_ir::Expr::Var(x) = e {
                            inside &= inner_loops.contains(x);
                        }
                    });
                    inside
                }
            });
        if let (Some(w), false) = (rereads, restarts) {
            return Err(ScheduleError::new(format!(
                "the threads of {} cannot share the copy of block {}: it adds to `{}`, which it also reads, so doing it once for all of loop `{}`'s iterations is not doing it at each",
                tag.name(),
                r.block.name,
                w.name(),
                outer.name()
            ))
            .help("bind the loop to another thread axis, or keep it serial"));
        }
        if r.iter_values.iter().chain(std::iter::once(&r.predicate)).any(|v| v.uses(outer)) {
            return Err(ScheduleError::new(format!(
                "the threads of {} cannot share the copy of block {}: each iteration of loop `{}` copies a different tile into one shared buffer",
                tag.name(),
                r.block.name,
                outer.name()
            ))
            .help(format!(
                "bind loop `{}` before `compute_at` places the copy under it, so that the copy covers every thread's tile",
                outer.name()
            )));
        }
    }
    Ok(())
}

/// A block around loop `lp` (in its body or its init) that has an init: a
/// blockized reduction, whose init and body are two statements.
fn block_with_init_around(s: &Stmt, lp: &LoopRV) -> Option<String> {
    fn go(s: &Stmt, lp: &LoopRV, found: &mut Option<String>) -> bool {
        match s {
            Stmt::For(f) if &f.var == lp => true,
            Stmt::Block(r) => {
                let inside = go(&r.block.body, lp, found) || r.block.init.as_ref().is_some_and(|i| go(i, lp, found));
                if inside && r.block.init.is_some() && found.is_none() {
                    *found = Some(r.block.name.clone());
                }
                inside
            }
            _ => {
                let mut hit = false;
                s.for_each_child(|c| hit = hit || go(c, lp, found));
                hit
            }
        }
    }
    let mut found = None;
    go(s, lp, &mut found);
    found
}

/// The loop around `lp` bound to `tag`, if any.
/// The innermost loop around `lp` whose body holds more than the way down
/// to it, if any.
fn crowded_ancestor(s: &Stmt, lp: &LoopRV) -> Option<LoopRV> {
    let crowded =
        |f: &&For| matches!(&f.body, Stmt::Seq(v) if v.iter().filter(|x| !matches!(x, Stmt::NoOp)).count() > 1);
    loops_around(s, lp).into_iter().rev().find(crowded).map(|f| f.var.clone())
}

/// The innermost loop around `lp` bound to `tag`, if any.
fn enclosing_bound(s: &Stmt, lp: &LoopRV, tag: ThreadTag) -> Option<LoopRV> {
    loops_around(s, lp).into_iter().rev().find(|f| f.kind == ForKind::ThreadBinding(tag)).map(|f| f.var.clone())
}

/// The loops around loop `lp` in `s`, outermost first (through blocks).
fn loops_around<'a>(s: &'a Stmt, lp: &LoopRV) -> Vec<&'a For> {
    fn go<'a>(s: &'a Stmt, lp: &LoopRV, path: &mut Vec<&'a For>) -> bool {
        if let Stmt::For(f) = s {
            if &f.var == lp {
                return true;
            }
            path.push(f);
            if go(&f.body, lp, path) {
                return true;
            }
            path.pop();
            return false;
        }
        let mut found = false;
        s.for_each_child(|c| found = found || go(c, lp, path));
        found
    }
    let mut path = Vec::new();
    if go(s, lp, &mut path) {
        path
    } else {
        Vec::new()
    }
}
