//! `inject_software_pipeline`: a loop annotated with
//! `software_pipeline_stage` becomes a prologue, a steady-state loop and an
//! epilogue, in which the statements of stage `s` work on iteration `k - s`
//! while those of stage 0 already work on iteration `k`.
//!
//! The annotations, as TVM reads them, list one entry per statement of the
//! loop body (nested sequences flattened, allocations inside the body
//! hoisted out of it): `software_pipeline_stage` the stage of each,
//! `software_pipeline_order` the position of each in the expanded body
//! (default: the written order), `software_pipeline_async_stages` the
//! stages whose copies into shared memory are asynchronous (`cp.async`).
//!
//! With `S` the largest stage, iteration `i` of the expanded loop, for `i`
//! from `min` to `min + extent + S`, runs each statement `j`, in the given
//! order, on the original iteration `i - stage[j]` when that lies in the
//! loop's range. The first `S` and last `S` iterations (the prologue and the
//! epilogue) are written out one by one with the statements that run in
//! them; the iterations in between form the steady-state loop, where every
//! statement runs. With fewer iterations than stages there is no steady
//! state and every iteration is written out, each exactly once.
//!
//! A loop whose extent `E` is known only at run time (the k-tiles of a
//! reduction of run-time length, `(k + 31) // 32`) is written out the same
//! way around its symbol: the prologue's `S` iterations run each statement
//! under `if p - stage < E`, the steady-state loop runs from `min + S` to
//! `min + E` under `if S < E`, and the epilogue's iteration `min + E + t`
//! runs under `if S - t - 1 < E` (where the prologue has not already run
//! it). Every iteration still runs once, in the same order, with the same
//! groups committed. `E` must be an expression of the function's sizes, the
//! same for every thread, so that each test sends a whole block one way and
//! the barriers under it stay legal. Barriers are placed for every value of
//! `E` at once (`SyncPlan::place_for_any_extent`).
//!
//! A buffer written by one statement and read by a statement of a later
//! stage holds several iterations' tiles at once: it gets one copy per
//! stage from its producer's to its last consumer's, both included (a
//! leading dimension of that many versions), and every access of iteration
//! `k` uses version `(k - min) % versions`. A buffer a `wgmma` reads gets
//! one version more: the product keeps reading after it is issued, and
//! with the spare version the copies of the next iteration refill the
//! version before the one still being read, so a batch of products may
//! stay in flight across the barrier (the function attribute
//! `tirc.wgmma_in_flight`, read by codegen). With the consumer ordered first
//! in the body, the copy written in an iteration is then never the one just
//! read, and the tile needs one barrier per iteration, not two. Barriers
//! for these shared tiles are placed here, by version (see `SyncPlan`);
//! `insert_barriers` leaves them alone. The
//! expansion is refused, with the reason, when a statement would run before
//! one it depends on (a consumer in an earlier stage than its producer, or
//! an order that puts it first within a stage), when a buffer carries
//! values from one iteration to the next across stages, when a parameter
//! would need versions, or when the annotations do not match the body.
//!
//! Pipelines nest: a pipelined loop inside another's body is one statement
//! of the outer body, and each copy of it that the outer expansion writes
//! (prologue, steady state, epilogue) is expanded in turn, with its own
//! versions of the buffers allocated inside it.
//!
//! `double_buffer_scope` (TVM's `sch.annotate(block, "double_buffer_scope",
//! i)`, handed on by `lower_blocks` in the function's
//! `facts.double_buffered`): the buffer gets two versions at least; outside a
//! pipelined loop, its two copies alternate on the innermost serial loop
//! around all its uses, so that one iteration writes the copy the last one
//! did not read.
//!
//! Asynchronous stages: each copy `shared[..] = global[..]` of a statement
//! of such a stage becomes an asynchronous copy; after the statements of
//! the stage in each iteration a `commit_group` closes the iteration's
//! copies, and before the first statement that reads what they wrote a
//! `wait_group(n)` lets the `n` newest groups stay in flight, where `n` is
//! the number of groups committed since the one it needs. Barriers are left
//! to `insert_barriers`. Runs after `compact_buffers`, on multi-dimensional
//! indices; the pipelined loop starts at a constant.

use super::PassContext;
use crate::common::pipeline::{analyze, reads_async, AsyncPlan, Plan, ASYNC, ORDER, STAGE, WGMMA_IN_FLIGHT};
use std::collections::HashSet;
use tirc_ir::subst::substitute_stmt;
use tirc_ir::{Attr, BinOp, Buffer, BufferId, Diagnostic, Expr, For, ForKind, Intrinsic, PrimFunc, Scope, Stmt, Var};

pub fn run(mut f: PrimFunc, ctx: &PassContext) -> Result<PrimFunc, Diagnostic> {
    // `tirc.promote_every` belongs on a loop to be warp-specialized (or, in
    // lowered text, one that is), wherever it stands.
    let mut misplaced = None;
    f.body.walk(&mut |s| {
        if let Stmt::For(l) = s {
            let promotes = l.annotations.iter().any(|(k, _)| k == tirc_ir::launch::PROMOTE_EVERY);
            let ws = super::warp_specialize::asked(l).unwrap_or(true) || tirc_ir::launch::warp_specialized(l).is_some();
            if promotes && !ws && misplaced.is_none() {
                misplaced = Some((l.var.name().to_string(), l.span));
            }
        }
    });
    if let Some((name, span)) = misplaced {
        return Err(Diagnostic::new(format!(
            "loop `{name}` has `{}` but is not warp-specialized: accumulators are promoted in a warp-specialized loop of wgmma products",
            tirc_ir::launch::PROMOTE_EVERY
        ))
        .help("annotate the loop with `tirc.warp_specialize` too, or leave the promotion out")
        .or_at_ir(span, "this loop"));
    }
    if !ctx.target.has_cp_async() {
        let mut bad = None;
        f.body.walk(&mut |s| {
            if let Stmt::For(l) = s {
                let async_stages = l.annotations.iter().find(|(k, _)| k == ASYNC);
                if matches!(async_stages, Some((_, Attr::List(v))) if !v.is_empty()) && bad.is_none() {
                    bad = Some(l.span);
                }
            }
        });
        if let Some(span) = bad {
            return Err(Diagnostic::new(format!(
                "asynchronous copies (`{ASYNC}`) need cp.async, which {} lacks: sm_80 or newer",
                ctx.target.arch()
            ))
            .help(
                "leave out the async stages (the copies are then synchronous), or compile for sm_80 or newer (--arch)",
            )
            .or_at_ir(span, "this loop"));
        }
    }
    let doubled = std::mem::take(&mut f.facts.double_buffered);
    let mut versioned: Vec<(Buffer, Buffer)> = Vec::new();
    let mut synced: Vec<BufferId> = Vec::new();
    let mut spared: Vec<BufferId> = Vec::new();
    // Loops of one iteration, by their value (a block axis of extent 1):
    // what a warp-specialized loop's copies take them to be.
    let mut unit_loops = Vec::new();
    f.body.walk(&mut |s| {
        if let Stmt::For(l) = s {
            if l.extent.as_int() == Some(1) {
                unit_loops.push((l.var.clone(), l.min.clone()));
            }
        }
    });
    let cx = Cx { sizes: &f.sizes, doubled: &doubled, ctx, params: &f.params, unit_loops: &unit_loops };
    let mut body = visit(&f.body, &cx, &mut versioned, &mut synced, &mut spared)?;
    // `insert_barriers` leaves these to the barriers placed here.
    f.facts.pipeline_synced.extend(synced);
    for id in &doubled {
        if !versioned.iter().any(|(o, _)| o.id() == *id) {
            body = double_buffer(&body, *id, &mut versioned)?;
        }
    }
    // Allocations outside the pipelined loops take the versioned shape;
    // any other access to a versioned buffer would not know its version.
    let body = reallocate(&body, &versioned);
    let old: HashSet<Buffer> = versioned.iter().map(|(o, _)| o.clone()).collect();
    let mut stray = None;
    body.for_each_access(&mut |b, _, _| {
        if old.contains(b) {
            stray.get_or_insert_with(|| b.clone());
        }
    });
    if let Some(b) = stray {
        return Err(Diagnostic::new(format!(
            "`{}` is multi-buffered by a software pipeline but also used outside the pipelined loop",
            b.name()
        ))
        .help("keep the buffer's uses inside the pipelined loop, or put its producer and consumers in one stage"));
    }
    // Every wgmma's shared operands with a version to spare: a batch of
    // products may stay in flight across a barrier.
    let mut wgmma = false;
    let mut all_spared = true;
    body.walk(&mut |s| {
        if let Stmt::Wmma(w) = s {
            let t = w.op.wgmma_tiles();
            if t > 0 {
                wgmma = true;
                all_spared &= w.tiles[t..].iter().all(|x| spared.contains(&x.buffer.id()));
            }
        }
    });
    if wgmma && all_spared {
        f.attrs.push((WGMMA_IN_FLIGHT.to_string(), Attr::Int(1)));
    }
    f.body = body;
    Ok(f)
}

/// Expands the annotated loops of `s`, outermost first: a pipelined loop
/// inside another (the fragments of the next step loaded into registers
/// while the current ones are multiplied, inside the loop that stages
/// tiles in shared memory) is one statement of the outer loop's body, and
/// each copy of it the outer expansion makes is then expanded in turn.
/// What `visit` reads besides the statement.
struct Cx<'a> {
    sizes: &'a [Var],
    doubled: &'a [BufferId],
    ctx: &'a PassContext,
    params: &'a [Buffer],
    unit_loops: &'a [(Var, Expr)],
}

fn visit(
    s: &Stmt,
    cx: &Cx,
    versioned: &mut Vec<(Buffer, Buffer)>,
    synced: &mut Vec<BufferId>,
    spared: &mut Vec<BufferId>,
) -> Result<Stmt, Diagnostic> {
    let (sizes, doubled) = (cx.sizes, cx.doubled);
    let ws = match s {
        Stmt::For(l) => super::warp_specialize::asked(l).map_err(|e| e.or_at_ir(l.span, "this loop"))?,
        _ => false,
    };
    let expanded = match s {
        Stmt::For(l) if ws && !l.annotations.iter().any(|(k, _)| k == STAGE) => {
            return Err(Diagnostic::new(format!(
                "loop `{}` has `{}` but no `{STAGE}`: warp specialization splits a software pipeline's stages",
                l.var.name(),
                super::warp_specialize::WARP_SPECIALIZE
            ))
            .help("annotate the loop's stages too: the copies in stage 0, what reads them later")
            .or_at_ir(l.span, "this loop"))
        }
        Stmt::For(l) if ws => {
            let ws =
                super::warp_specialize::expand(l, &cx.ctx.target, cx.params, cx.unit_loops, versioned, synced, spared);
            return ws.map_err(|e| e.or_at_ir(l.span, "this loop"));
        }
        Stmt::For(l) if l.annotations.iter().any(|(k, _)| k == STAGE) => {
            Some(expand(l, sizes, doubled, versioned, synced, spared).map_err(|e| e.or_at_ir(l.span, "this loop"))?)
        }
        Stmt::For(l) if l.annotations.iter().any(|(k, _)| k == ORDER || k == ASYNC) => {
            return Err(Diagnostic::new(format!("loop `{}` has `{ORDER}` or `{ASYNC}` but no `{STAGE}`", l.var.name())))
        }
        _ => None,
    };
    let s = expanded.as_ref().unwrap_or(s);
    let mut err = None;
    let out = s.map_children(|c| match visit(c, cx, versioned, synced, spared) {
        Ok(x) => x,
        Err(e) => {
            err.get_or_insert(e);
            c.clone()
        }
    });
    match err {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

fn reallocate(s: &Stmt, versioned: &[(Buffer, Buffer)]) -> Stmt {
    let s = s.map_children(|c| reallocate(c, versioned));
    match s {
        Stmt::Allocate { buffer, body } => match versioned.iter().find(|(o, _)| *o == buffer) {
            Some((_, n)) => Stmt::Allocate { buffer: n.clone(), body },
            None => Stmt::Allocate { buffer, body },
        },
        s => s,
    }
}

fn expand(
    l: &For,
    sizes: &[Var],
    doubled: &[BufferId],
    versioned: &mut Vec<(Buffer, Buffer)>,
    synced: &mut Vec<BufferId>,
    spared: &mut Vec<BufferId>,
) -> Result<Stmt, Diagnostic> {
    let Plan { stmts, hoisted, stages, order, async_stages, acc, versions } = analyze(l, doubled)?;
    let (n, min) = (stmts.len(), l.min.as_int().unwrap_or(0));
    // A run-time extent (a size of the function, the same for every thread
    // of the kernel, so that barriers under a test of it are reached by all
    // or none) is written out around its symbol (the module's doc).
    let constant_extent = l.extent.as_int();
    crate::common::pipeline::check_extent(l, sizes)?;
    let extent = constant_extent.unwrap_or(0);
    let period = versions.iter().fold(1, |acc, (_, v)| tirc_ir::expr::lcm(acc, *v));
    if constant_extent.is_none() && period > MAX_PERIOD {
        return Err(Diagnostic::new(format!(
            "software pipeline of loop `{}`: its buffers' versions repeat every {period} iterations, more than the \
             {MAX_PERIOD} tirc places barriers for under a run-time extent",
            l.var.name()
        ))
        .help("use fewer stages, or stages whose version counts share factors"));
    }
    // Versioned buffers: a leading dimension, indexed by the iteration.
    let mut map: Vec<(Buffer, Buffer, i64)> = Vec::new();
    for (b, v) in &versions {
        let nb = with_versions(b, *v);
        // A wgmma operand, given a version to spare (`pipeline::analyze`).
        if stmts.iter().any(|s| reads_async(s, b)) {
            spared.push(nb.id());
        }
        versioned.push((b.clone(), nb.clone()));
        map.push((b.clone(), nb, *v));
    }
    let k = Expr::var(&l.var);
    let from_min = if min == 0 { k.clone() } else { k.clone() - Expr::Int(min, l.var.dtype()) };
    let slot = |v: i64| Expr::binary(BinOp::FloorMod, from_min.clone(), Expr::int(v));
    let stmts: Vec<Stmt> = stmts.iter().map(|s| version(s, &map, &slot)).collect();

    // Asynchronous copies, and where their groups are committed and waited.
    let is_async: Vec<bool> = (0..n).map(|j| async_stages.contains(&stages[j])).collect();
    let stmts: Vec<Stmt> =
        stmts.iter().zip(&is_async).map(|(s, a)| if *a { make_async(s) } else { s.clone() }).collect();
    // A statement of an asynchronous stage that reads what its own copies
    // made asynchronous write (a copy chained on a copy, in one nest) would
    // read them before they land: nothing waits between the two.
    for (s, _) in stmts.iter().zip(&is_async).filter(|(_, a)| **a) {
        let mut landing: Vec<Buffer> = Vec::new();
        s.walk(&mut |x| {
            if let Stmt::Store { buffer, value: Expr::Call(Intrinsic::CpAsync, _), .. } = x {
                if !landing.contains(buffer) {
                    landing.push(buffer.clone());
                }
            }
        });
        let mut read = None;
        s.walk(&mut |x| {
            x.for_each_expr(|e| {
                e.walk(&mut |y| {
                    if let Expr::Load(b, _) = y {
                        if read.is_none() && landing.contains(b) {
                            read = Some(b.clone());
                        }
                    }
                })
            })
        });
        if let Some(b) = read {
            return Err(Diagnostic::new(format!(
                "software pipeline of loop `{}`: a statement of an asynchronous stage reads `{}`, which its own copies write asynchronously; nothing would wait for them in between",
                l.var.name(),
                b.name()
            ))
            .help("put the copy that reads it in a later stage, or leave its stage synchronous")
            .or_at_ir(l.span, "this loop"));
        }
    }
    let mut in_order: Vec<usize> = (0..n).collect();
    in_order.sort_by_key(|&j| order[j]);
    let plan = AsyncPlan::new(&in_order, &stages, &is_async, &acc);

    let max_stage = stages.iter().copied().max().unwrap_or(0);
    let int = |v: i64| Expr::Int(v, l.var.dtype());
    // One iteration of the expanded loop: `runs(j)` says whether statement
    // `j` runs in it (`None`: not at all; `Some(None)`: always;
    // `Some(Some(g))`: where the run-time extent exceeds `g`).
    let iteration = |i: Expr, runs: &dyn Fn(usize) -> Option<Option<i64>>| -> Vec<Item> {
        let mut body = Vec::new();
        let mut last_wait: Option<i64> = None;
        for (pos, &j) in in_order.iter().enumerate() {
            if let Some(guard) = runs(j) {
                if let Some(w) = plan.wait_before(j, pos) {
                    if last_wait.is_none_or(|lw| lw > w) {
                        body.push(Item::Wait(w));
                        last_wait = Some(w);
                    }
                }
                let it = if stages[j] == 0 { i.clone() } else { i.clone() - int(stages[j]) };
                let copy = substitute_stmt(&stmts[j], &[(l.var.clone(), it)]).map_exprs(&mut fold_constants);
                body.push(Item::Run(j, fresh_loops(&copy), guard));
            }
            // Every iteration commits a group per asynchronous stage, empty
            // or not, so that the groups in flight are counted alike in
            // every part of the pipeline.
            if plan.commits_at.contains(&pos) {
                body.push(Item::Commit);
                last_wait = None;
            }
        }
        body
    };
    let mut segments: Vec<Segment> = Vec::new();
    if constant_extent.is_some() {
        let in_range = |i0: i64, j: usize| (min..min + extent).contains(&(i0 - stages[j])).then_some(None);
        let steady = extent > max_stage;
        let statics_before = if steady { min..min + max_stage } else { min..min + extent + max_stage };
        for i0 in statics_before {
            segments.push(Segment::Static(i0, iteration(int(i0), &|j| in_range(i0, j))));
        }
        if steady {
            segments.push(Segment::Loop(min + max_stage..min + extent, iteration(k.clone(), &|_| Some(None))));
            for i0 in min + extent..min + extent + max_stage {
                segments.push(Segment::Static(i0, iteration(int(i0), &|j| in_range(i0, j))));
            }
        }
    } else {
        // A run-time extent `E`: the prologue's iteration `min + p` runs
        // statement `j` on iteration `p - stage[j]` where that is at least 0
        // and below `E`; the steady state runs from `min + S` to `min + E`
        // (not at all where `E <= S`); the epilogue's iteration `min + E +
        // t` runs where the prologue did not reach it (`E + t >= S`), with
        // the statements of a stage above `t`. Every iteration of the
        // written-out loop runs once, as with a constant extent.
        for p in 0..max_stage {
            let runs = |j: usize| (p >= stages[j]).then_some(Some(p - stages[j]));
            segments.push(Segment::Static(min + p, iteration(int(min + p), &runs)));
        }
        segments.push(Segment::RuntimeLoop(iteration(k.clone(), &|_| Some(None))));
        let end = int(min) + l.extent.clone();
        for t in 0..max_stage {
            let i = fold_constants(&(end.clone() + int(t)));
            let items = iteration(i, &|j| (stages[j] > t).then_some(None));
            segments.push(Segment::RuntimeTail { t, guard: max_stage - t - 1, items });
        }
    }
    // Barriers for the multi-buffered shared tiles, placed by version.
    let shared_versions: Vec<(Buffer, i64)> =
        versions.iter().filter(|(b, _)| b.scope() == Scope::Shared).cloned().collect();
    let sync = SyncPlan { min, max_stage, stages: &stages, is_async: &is_async, acc: &acc, versions: &shared_versions };
    let (static_barriers, loop_barriers) = match constant_extent {
        Some(_) => sync.place(&sync.concrete(&segments, extent), &HashSet::new(), &HashSet::new()),
        None => sync.place_for_any_extent(&segments),
    };
    for (b, _) in &shared_versions {
        synced.push(b.id());
    }
    let e_above = |g: i64| Expr::binary(BinOp::Lt, int(g), l.extent.clone());
    let with_barriers = |items: Vec<Item>, at: &dyn Fn(usize) -> bool| -> Stmt {
        let mut out = Vec::new();
        for (q, item) in items.into_iter().enumerate() {
            if at(q) {
                out.push(Stmt::Barrier);
            }
            out.push(match item {
                Item::Run(_, s, None) => s,
                Item::Run(_, s, Some(g)) => Stmt::if_then(e_above(g), s),
                Item::Wait(n) => Stmt::AsyncWait(n),
                Item::Commit => Stmt::AsyncCommit,
            });
        }
        Stmt::seq(out)
    };
    let steady_loop = |lo: Expr, extent: Expr, body: Stmt| {
        let mut annotations = l.annotations.clone();
        annotations.retain(|(key, _)| key != STAGE && key != ORDER && key != ASYNC);
        Stmt::For(Box::new(For {
            var: l.var.clone(),
            min: lo,
            extent,
            kind: ForKind::Serial,
            annotations,
            body,
            span: l.span,
        }))
    };
    let mut parts = Vec::new();
    for (si, seg) in segments.into_iter().enumerate() {
        let at = |q: usize| static_barriers.contains(&(si, q));
        match seg {
            Segment::Static(_, items) => parts.push(with_barriers(items, &at)),
            Segment::Loop(range, items) => {
                let body = with_barriers(items, &|q| loop_barriers.contains(&q));
                parts.push(steady_loop(int(range.start), int(range.end - range.start), body));
            }
            Segment::RuntimeLoop(items) => {
                let body = with_barriers(items, &|q| loop_barriers.contains(&q));
                let extent = fold_constants(&(l.extent.clone() - int(max_stage)));
                parts.push(Stmt::if_then(e_above(max_stage), steady_loop(int(min + max_stage), extent, body)));
            }
            Segment::RuntimeTail { guard, items, .. } => {
                parts.push(Stmt::if_then(e_above(guard), with_barriers(items, &at)))
            }
        }
    }
    if !plan.commits_at.is_empty() {
        // Nothing is left in flight after the pipeline.
        parts.push(Stmt::AsyncWait(0));
    }
    let mut out = Stmt::seq(parts);
    for b in hoisted.into_iter().rev() {
        let b = map.iter().find(|(o, _, _)| *o == b).map_or(b, |(_, nb, _)| nb.clone());
        out = Stmt::Allocate { buffer: b, body: Box::new(out) };
    }
    Ok(out)
}

/// `b` with a leading dimension of `v` versions; the padding asked by
/// storage_align stays on the same dimensions.
pub(super) fn with_versions(b: &Buffer, v: i64) -> Buffer {
    b.with(|node| {
        node.shape.insert(0, Expr::int(v));
        node.dim_align.iter_mut().for_each(|a| a.axis += 1);
    })
}

/// Every access of `s` to a buffer of `map` gets the version index first.
pub(super) fn version(s: &Stmt, map: &[(Buffer, Buffer, i64)], slot: &dyn Fn(i64) -> Expr) -> Stmt {
    if map.is_empty() {
        return s.clone();
    }
    retarget(&s.map_exprs(&mut |e| version_expr(e, map, slot)), map, slot)
}

fn retarget(s: &Stmt, map: &[(Buffer, Buffer, i64)], slot: &dyn Fn(i64) -> Expr) -> Stmt {
    match s.map_children(|c| retarget(c, map, slot)) {
        Stmt::Store { buffer, mut indices, value } => match map.iter().find(|(o, _, _)| *o == buffer) {
            Some((_, nb, v)) => {
                indices.insert(0, slot(*v));
                Stmt::Store { buffer: nb.clone(), indices, value }
            }
            None => Stmt::Store { buffer, indices, value },
        },
        Stmt::Wmma(mut w) => {
            for t in &mut w.tiles {
                if let Some((_, nb, v)) = map.iter().find(|(o, _, _)| *o == t.buffer) {
                    t.indices.insert(0, slot(*v));
                    t.buffer = nb.clone();
                }
            }
            Stmt::Wmma(w)
        }
        s => s,
    }
}

fn version_expr(e: &Expr, map: &[(Buffer, Buffer, i64)], slot: &dyn Fn(i64) -> Expr) -> Expr {
    match e {
        Expr::Load(b, idx) => {
            let mut idx: Vec<Expr> = idx.iter().map(|i| version_expr(i, map, slot)).collect();
            match map.iter().find(|(o, _, _)| o == b) {
                Some((_, nb, v)) => {
                    idx.insert(0, slot(*v));
                    Expr::Load(nb.clone(), idx)
                }
                None => Expr::Load(b.clone(), idx),
            }
        }
        _ => e.map_children(|c| version_expr(c, map, slot)),
    }
}

/// `s` with each plain copy from global to shared memory made asynchronous:
/// `S[..] = T.cp_async(G[..])`, and `S[..] = T.cp_async(T.if_then_else(c,
/// G[..], 0))` for a copy that fills zeros past the edge of `G`
/// (`zero_fill_tiles`: the zero-fill form of `cp.async`).
fn make_async(s: &Stmt) -> Stmt {
    let s = s.map_children(make_async);
    match s {
        Stmt::Store { buffer, indices, value }
            if buffer.scope() == Scope::Shared && async_source(&value, &buffer).is_some() =>
        {
            let value = Expr::Call(Intrinsic::CpAsync, vec![value]);
            Stmt::Store { buffer, indices, value }
        }
        s => s,
    }
}

/// The global load a copy into `dst` makes, when it is one `cp.async` can
/// make: `G[..]` of `dst`'s type, or `T.if_then_else(c, G[..], 0)`.
fn async_source<'a>(value: &'a Expr, dst: &Buffer) -> Option<&'a Expr> {
    let load = value.as_zero_fill().map_or(value, |(_, load)| load);
    match load {
        Expr::Load(src, _) if src.scope() == Scope::Global && src.dtype() == dst.dtype() => Some(load),
        _ => None,
    }
}

/// `e` with every operation on integer literals computed, so that the
/// written-out iterations read `A_shared[1, ..]`, not `A_shared[(3 - 2) % 2, ..]`.
fn fold_constants(e: &Expr) -> Expr {
    match e.map_children(fold_constants) {
        Expr::Binary(op, a, b) => Expr::folded(op, *a, *b),
        e => e,
    }
}

/// `s` with a new variable for each loop and `let` it defines, and a new
/// buffer for each allocation, so that the copies of one statement in the
/// prologue, the steady state and the epilogue share neither.
fn fresh_loops(s: &Stmt) -> Stmt {
    let s = s.map_children(fresh_loops);
    match s {
        Stmt::For(mut l) => {
            let v = l.var.renamed(l.var.name());
            l.body = substitute_stmt(&l.body, &[(l.var.clone(), Expr::var(&v))]);
            l.var = v;
            Stmt::For(l)
        }
        Stmt::Let { var, value, body } => {
            let v = var.renamed(var.name());
            let body = Box::new(substitute_stmt(&body, &[(var, Expr::var(&v))]));
            Stmt::Let { var: v, value, body }
        }
        // A buffer allocated inside (a register tile, the fragments of a
        // tensor-core step) is allocated once per copy: each copy its own
        // buffer, of the same identity for the facts passes keep.
        Stmt::Allocate { buffer, body } => {
            let nb = buffer.with(|_| {});
            let body = Box::new(tirc_ir::subst::replace_buffers_stmt(&body, &[(buffer, nb.clone())]));
            Stmt::Allocate { buffer: nb, body }
        }
        s => s,
    }
}

/// Doubles buffer `id` outside any pipeline: two copies, used on
/// alternate iterations of the innermost loop around all its uses, so that
/// the next iteration's tile can be written while the last one is read.
fn double_buffer(body: &Stmt, id: BufferId, versioned: &mut Vec<(Buffer, Buffer)>) -> Result<Stmt, Diagnostic> {
    let mut found: Option<Buffer> = None;
    body.walk(&mut |s| {
        if let Stmt::Allocate { buffer, .. } = s {
            if buffer.id() == id && found.is_none() {
                found = Some(buffer.clone());
            }
        }
    });
    let Some(b) = found else { return Ok(body.clone()) };
    // The loops around every use of `b`; their common prefix ends at the
    // loop the copies alternate on.
    let mut common: Option<Vec<For>> = None;
    fn uses(s: &Stmt, b: &Buffer) -> bool {
        let mut hit = matches!(s, Stmt::Store { buffer, .. } if buffer == b)
            || matches!(s, Stmt::Wmma(w) if w.tiles.iter().any(|t| t.buffer == *b));
        s.for_each_expr(|e| e.walk(&mut |x| hit |= matches!(x, Expr::Load(lb, _) if lb == b)));
        hit
    }
    fn walk(s: &Stmt, b: &Buffer, stack: &mut Vec<For>, common: &mut Option<Vec<For>>) {
        if uses(s, b) {
            let here = stack.clone();
            *common = Some(match common.take() {
                None => here,
                Some(c) => c.into_iter().zip(here).take_while(|(x, y)| x.var == y.var).map(|(x, _)| x).collect(),
            });
        }
        if let Stmt::For(l) = s {
            stack.push((**l).clone());
            walk(&l.body, b, stack, common);
            stack.pop();
        } else {
            s.for_each_child(|c| walk(c, b, stack, common));
        }
    }
    walk(body, &b, &mut Vec::new(), &mut common);
    let Some(l) =
        common.and_then(|c| c.into_iter().rev().find(|l| matches!(l.kind, ForKind::Serial | ForKind::Unrolled)))
    else {
        return Err(Diagnostic::new(format!(
            "`{}` is double-buffered (double_buffer_scope), but no serial loop holds all its uses to alternate on",
            b.name()
        )));
    };
    let nb = with_versions(&b, 2);
    let k = Expr::var(&l.var);
    let from_min = if l.min.as_int() == Some(0) { k.clone() } else { k.clone() - l.min.clone() };
    let slot = |v: i64| Expr::binary(BinOp::FloorMod, from_min.clone(), Expr::int(v));
    let map = [(b.clone(), nb.clone(), 2)];
    versioned.push((b, nb));
    Ok(body.rewrite(&mut |s| match s {
        Stmt::For(x) if x.var == l.var => {
            let mut x = (**x).clone();
            x.body = version(&x.body, &map, &slot);
            Some(Stmt::For(Box::new(x)))
        }
        _ => None,
    }))
}

/// One entry of an expanded iteration.
enum Item {
    /// Statement `j` of the loop body, for this iteration; under a run-time
    /// extent `E`, `Some(g)` when it runs only where `E > g`.
    Run(usize, Stmt, Option<i64>),
    Wait(i64),
    Commit,
}

/// A written-out iteration (with its value) or the steady-state loop.
enum Segment {
    Static(i64, Vec<Item>),
    Loop(std::ops::Range<i64>, Vec<Item>),
    /// The steady-state loop under a run-time extent `E`: from `min + S` to
    /// `min + E`, where `S` is the largest stage.
    RuntimeLoop(Vec<Item>),
    /// Iteration `min + E + t` of the epilogue under a run-time extent
    /// `E`, where `E > guard`.
    RuntimeTail {
        t: i64,
        guard: i64,
        items: Vec<Item>,
    },
}

/// An item as the barrier placement sees it, for one value of the extent.
#[derive(Clone, Copy)]
enum Op {
    Run(usize),
    Wait(i64),
    Commit,
    /// An item that does not run for this extent (its place is kept, so
    /// that barrier positions mean the same for every extent).
    Skip,
}

/// A segment for one value of the extent: a written-out iteration, or the
/// steady-state loop over a range.
enum Concrete {
    Static(i64),
    Loop(std::ops::Range<i64>),
}

/// Barrier placement for multi-buffered shared buffers: the expanded
/// pipeline is run abstractly, iteration by iteration, tracking which
/// version of which buffer was written and read since the last barrier
/// (asynchronous copies count as written when issued and again when their
/// group is waited for). A statement that reads a version written since
/// then, or writes one read or written since then, gets a barrier before
/// it. In the steady-state loop a barrier stands at the same place in every
/// iteration: wherever one is needed in any iteration, it is added and the
/// run starts again. The state at the start assumes every version was
/// just used, as it may have been by an enclosing loop's last iteration.
/// Under a run-time extent the run is made for every extent up to a few
/// periods of the versions past the deepest stage, and a barrier needed for
/// any of them is placed: a barrier more never makes one needed elsewhere.
struct SyncPlan<'a> {
    min: i64,
    max_stage: i64,
    stages: &'a [i64],
    is_async: &'a [bool],
    acc: &'a [(HashSet<Buffer>, HashSet<Buffer>)],
    versions: &'a [(Buffer, i64)],
}

#[derive(Clone, Default)]
struct SyncState {
    written: HashSet<(usize, i64)>,
    read: HashSet<(usize, i64)>,
    open: Vec<(usize, i64)>,
    groups: std::collections::VecDeque<Vec<(usize, i64)>>,
}

type Barriers = (HashSet<(usize, usize)>, HashSet<usize>);

/// The longest common period of the versions of a pipeline over a run-time
/// extent: its barriers are placed by running that many extents and more.
const MAX_PERIOD: i64 = 64;

impl SyncPlan<'_> {
    /// The segments as they run for extent `e` (a run-time extent's value;
    /// ignored by segments of a constant one).
    fn concrete(&self, segments: &[Segment], e: i64) -> Vec<(Concrete, Vec<Op>)> {
        let ops = |items: &[Item], runs: bool| -> Vec<Op> {
            items
                .iter()
                .map(|item| match item {
                    _ if !runs => Op::Skip,
                    Item::Run(j, _, g) if g.is_none_or(|g| e > g) => Op::Run(*j),
                    Item::Run(..) => Op::Skip,
                    Item::Wait(n) => Op::Wait(*n),
                    Item::Commit => Op::Commit,
                })
                .collect()
        };
        let (min, s) = (self.min, self.max_stage);
        segments
            .iter()
            .map(|seg| match seg {
                Segment::Static(i0, items) => (Concrete::Static(*i0), ops(items, true)),
                Segment::Loop(range, items) => (Concrete::Loop(range.clone()), ops(items, true)),
                Segment::RuntimeLoop(items) => (Concrete::Loop(min + s..(min + e).max(min + s)), ops(items, true)),
                // A tail that does not run has no effect, its barriers none.
                Segment::RuntimeTail { t, guard, items } if e > *guard => {
                    (Concrete::Static(min + e + t), ops(items, true))
                }
                Segment::RuntimeTail { .. } => (Concrete::Static(0), Vec::new()),
            })
            .collect()
    }

    /// The barriers for every value of a run-time extent: the union of
    /// those each extent needs, grown until no extent needs another.
    fn place_for_any_extent(&self, segments: &[Segment]) -> Barriers {
        // The versions' common period (at most 4 * 3 * 2 in practice; the
        // pass refuses a pipeline of more, see `expand`).
        let period = self.versions.iter().fold(1, |acc, (_, v)| tirc_ir::expr::lcm(acc, *v)).min(MAX_PERIOD);
        let largest = self.max_stage + 4 * period + 4;
        let (mut fixed, mut in_loop) = (HashSet::new(), HashSet::new());
        loop {
            let before = (fixed.len(), in_loop.len());
            for e in 0..=largest {
                (fixed, in_loop) = self.place(&self.concrete(segments, e), &fixed, &in_loop);
            }
            if (fixed.len(), in_loop.len()) == before {
                return (fixed, in_loop);
            }
        }
    }

    /// The barriers, beyond `fixed0` and `loop0`: (segment, position) in
    /// written-out iterations, and positions in the steady-state loop body.
    fn place(
        &self,
        segments: &[(Concrete, Vec<Op>)],
        fixed0: &HashSet<(usize, usize)>,
        loop0: &HashSet<usize>,
    ) -> Barriers {
        let mut in_loop = loop0.clone();
        if self.versions.is_empty() {
            return (fixed0.clone(), in_loop);
        }
        'restart: loop {
            let mut st = SyncState::default();
            for (b, (_, v)) in self.versions.iter().enumerate() {
                for s in 0..*v {
                    st.written.insert((b, s));
                    st.read.insert((b, s));
                }
            }
            let mut fixed = fixed0.clone();
            for (si, (seg, ops)) in segments.iter().enumerate() {
                match seg {
                    Concrete::Static(i0) => {
                        for (q, op) in ops.iter().enumerate() {
                            if self.step(&mut st, *op, *i0, fixed.contains(&(si, q))) {
                                fixed.insert((si, q));
                            }
                        }
                    }
                    Concrete::Loop(range) => {
                        for i in range.clone() {
                            for (q, op) in ops.iter().enumerate() {
                                if self.step(&mut st, *op, i, in_loop.contains(&q)) {
                                    in_loop.insert(q);
                                    continue 'restart;
                                }
                            }
                        }
                    }
                }
            }
            return (fixed, in_loop);
        }
    }

    /// Runs one item at iteration `i`, after a barrier when `barrier`;
    /// whether it needs a barrier that is not there.
    fn step(&self, st: &mut SyncState, op: Op, i: i64, barrier: bool) -> bool {
        if barrier {
            st.written.clear();
            st.read.clear();
        }
        match op {
            Op::Skip => false,
            Op::Commit => {
                let g = std::mem::take(&mut st.open);
                st.groups.push_back(g);
                false
            }
            Op::Wait(n) => {
                while st.groups.len() > n as usize {
                    if let Some(g) = st.groups.pop_front() {
                        st.written.extend(g);
                    }
                }
                false
            }
            Op::Run(j) => {
                let it = i - self.stages[j];
                let mut reads = Vec::new();
                let mut writes = Vec::new();
                for (bi, (b, v)) in self.versions.iter().enumerate() {
                    let slot = (it - self.min).rem_euclid(*v);
                    if self.acc[j].0.contains(b) {
                        reads.push((bi, slot));
                    }
                    if self.acc[j].1.contains(b) {
                        writes.push((bi, slot));
                    }
                }
                let conflict = reads.iter().any(|x| st.written.contains(x))
                    || writes.iter().any(|x| st.read.contains(x) || st.written.contains(x));
                if conflict {
                    st.written.clear();
                    st.read.clear();
                }
                st.read.extend(reads);
                st.written.extend(writes.iter().copied());
                if self.is_async[j] {
                    st.open.extend(writes);
                }
                conflict && !barrier
            }
        }
    }
}
