//! `compute_at(block, loop)` and `reverse_compute_at(block, loop)`: move a
//! producer into a loop's body, before its first consumer there (a consumer
//! after its last producer there, at the end of the body), computing
//! there only the part its consumers (producers) under the loop need.
//!
//! The moved block keeps its body; its loops are replaced by new loops
//! `ax0, ax1, ..`, one per iteration variable, over the region that the
//! blocks under `loop` read (write) in one iteration of `loop`: their
//! regions with every loop inside `loop` relaxed to its range and, for a
//! shared-memory buffer, every loop bound to a thread index relaxed too (the
//! threads of a GPU block share it). Where that region may leave the moved
//! block's iteration domain (a tile at a border that no split divides), the
//! block gets a predicate that keeps it inside; a consumer also keeps to
//! what its producers write where their guards stop them short of the box
//! in some iterations (the last chunk of 64 of a tile of 208, whose box
//! would reach into the next tile; through a fused index's `// n` too;
//! with several producers, to the largest of their bounds).
//!
//! Preconditions, checked in this order:
//! 1. The block and the loop are in the function, and the loop is not
//!    around the block already; no two of the block's iteration variables
//!    are bound to the same value.
//! 2. The block's loops hold nothing but the block (they move with it).
//! 3. Under the loop, some block reads (writes) a buffer that the block
//!    writes (reads), and no block outside the loop does (or the moved block
//!    would no longer run before it).
//! 4. The producer runs before its consumers in the current order. For
//!    `reverse_compute_at`, the producers under the loop write every
//!    element of the box the consumer will read in one iteration: a tile
//!    with holes (a thread's rows 64 apart) leaves elements that other
//!    iterations write. Counted at the first iteration of the outer loops,
//!    where the sizes are constants and the box at most 2^22 elements.
//! 5. The block accesses each such buffer at its iteration variables
//!    (`X[v0, v1]`), so a region of the buffer is a range of each variable;
//!    or a dimension at two of them fused, `X[v0 * n + v1]` with `v1` over
//!    `0..n` (a reshape, a pooling window's rows), where the region of that
//!    dimension is whole rows of `v1` or part of one row, so that it is a
//!    range of each of the two exactly; or, for `compute_at`, a variable
//!    split over two dimensions, `X[v // n, .., v % n]` (a blocked layout
//!    from `transform_layout`), where the region is whole blocks of `n` or
//!    part of one (a remainder's range that wraps is taken whole, so the
//!    producer may compute some elements again, to the same values).
//! 6. The region has a size in each dimension: a constant, an expression
//!    of the function's run-time sizes (a row of `n` elements), or, where
//!    it depends on the loops outside, a largest value, to which it is
//!    widened (the predicate keeps the block in its domain).
//! 7. Under the loop there is a place after every statement that writes
//!    what the block reads and before every one that reads what it writes;
//!    `index` (TVM's: `-1`, the default, the last such place; `-2` the
//!    first; `k` before the body's `k`-th statement) picks one of them.

use super::{BlockRV, LoopRV, Result, Schedule, ScheduleError};
use crate::arith::{all_of, Analyzer};
use crate::bounds::{relax, relax_guarded, union, Relaxed};
use crate::common::hazard::{check_passed, Moved};
use crate::common::tree::{
    block_regions, child_blocks, fresh_loop_name, loop_starts, name_marker, nested_block_names, read_and_written,
};
use tirc_ir::region::block_buffers;
use tirc_ir::subst::substitute;
use tirc_ir::{BinOp, BlockRealize, Buffer, DType, Expr, For, ForKind, Scope, Stmt, Var};

/// Where under the loop the block goes, TVM's `index`: `-1` the last
/// position that keeps it after what it reads and before what reads it (its
/// default), `-2` the first, `k >= 0` before the loop body's `k`-th
/// statement.
/// With `preserve_unit_loops` false, a new loop of extent 1 is left out
/// (its variable is 0); tirc's default keeps them, where TVM's drops them:
/// a MetaSchedule trace says which it wants.
pub fn compute_at(
    sch: &mut Schedule,
    block: &BlockRV,
    lp: &LoopRV,
    preserve_unit_loops: bool,
    index: i64,
) -> Result<()> {
    move_to(sch, block, lp, true, preserve_unit_loops, index, None)?;
    Ok(())
}

pub fn reverse_compute_at(
    sch: &mut Schedule,
    block: &BlockRV,
    lp: &LoopRV,
    preserve_unit_loops: bool,
    index: i64,
) -> Result<()> {
    let before = sch.func.body.clone();
    move_to(sch, block, lp, false, preserve_unit_loops, index, None)?;
    if let Some((runs, total)) = missed_iterations(&before, &sch.func.body, block) {
        sch.func.body = before;
        return Err(ScheduleError::new(format!(
            "under loop `{}`, block `{block}` would run {runs} of its {total} iterations: the loop covers only what its producers write, and the consumer's other elements would never be computed",
            lp.name()
        ))
        .help("move the consumer under a loop whose iterations reach every element it writes, or pad its producer"));
    }
    Ok(())
}

/// How many of block `name`'s iterations its loops run in `after` (where
/// its predicate holds), and how many ran in `before`, when the first is
/// fewer; None where they cannot be counted (a bound not constant, or more
/// than 2^20 iterations) or every iteration runs. Before, the block ran
/// its whole domain unless it had a predicate of its own. A consumer moved
/// by `reverse_compute_at` gets loops over the region its producers write
/// in one iteration, which need not reach every element it computes (`B[i]
/// = P[i] if i < 5 else 0` over 8 elements under the 5 of `P`).
fn missed_iterations(before: &Stmt, after: &Stmt, name: &str) -> Option<(u64, u64)> {
    let old = before.find_block(name)?;
    let total = if old.predicate.as_bool() == Some(true) {
        old.block
            .iter_vars
            .iter()
            .try_fold(1i64, |a, iv| a.checked_mul(iv.dom.extent.as_int()?).filter(|t| *t <= RUN_LIMIT))?
            as usize
    } else {
        iterations_run(before, name)?.len()
    };
    let runs = iterations_run(after, name)?.len();
    (runs < total).then_some((runs as u64, total as u64))
}

const RUN_LIMIT: i64 = 1 << 20;

/// The distinct iterations (values of its variables) that block `name`'s
/// loops run where its predicate holds; None past `RUN_LIMIT` loop
/// iterations or where a bound is not constant.
fn iterations_run(root: &Stmt, name: &str) -> Option<std::collections::HashSet<Vec<i64>>> {
    let r = root.find_block(name)?;
    let loops: Vec<(Var, i64, i64)> = root
        .loops_above(name)?
        .iter()
        .map(|l| Some((l.var.clone(), l.min.as_int()?, l.extent.as_int()?)))
        .collect::<Option<_>>()?;
    let mut seen = std::collections::HashSet::new();
    crate::common::tree::run_block_iterations(r, &loops, RUN_LIMIT, &mut |vals, on| {
        if on {
            seen.insert(vals.to_vec());
        }
        Some(())
    })?;
    Some(seen)
}

/// `compute_at(block, lp)` for the copy that `cache_read` makes of `src`
/// where `src`'s one writer and the copy's readers share loop `lp`: the
/// copy goes after that writer (the default place), so the blocks under
/// the loop that write `src` are passed as its producers, not as a clash.
pub(crate) fn compute_copy_after_writer(sch: &mut Schedule, block: &str, lp: &Var, src: &Buffer) -> Result<()> {
    move_to(sch, block, lp, true, true, -1, Some(src))
}

fn move_to(
    sch: &mut Schedule,
    block: &str,
    lp: &Var,
    producer: bool,
    preserve: bool,
    index: i64,
    written_under: Option<&Buffer>,
) -> Result<()> {
    let root = sch.func.body.clone();
    // 1.
    let r = root
        .find_block(block)
        .ok_or_else(|| ScheduleError::not_found(format!("block `{block}` is no longer in the function")))?
        .clone();
    let l = root
        .find_loop(lp)
        .ok_or_else(|| ScheduleError::not_found(format!("loop `{}` is no longer in the function", lp.name())))?
        .clone();
    let path = root.loops_above(block).unwrap_or_default();
    if path.iter().any(|x| &x.var == lp) {
        return Err(ScheduleError::new(format!("loop `{}` is already around block `{block}`", lp.name())));
    }
    // Two iteration variables bound to one value (`vi, vr =
    // T.axis.remap("SR", [i, r])` written twice) run the block once per
    // value of their loops; moved, each would get loops of its own, and the
    // block would run once per pair of values.
    for (a, x) in r.iter_values.iter().enumerate() {
        if !x.has_var() {
            continue;
        }
        if let Some(b) = r.iter_values[..a].iter().position(|y| tirc_ir::structural_eq::same_expr(x, y)) {
            return Err(ScheduleError::new(format!(
                "block `{block}` binds iteration variables `{}` and `{}` to the same value `{}`: moved, they would take their values apart",
                r.block.iter_vars[b].var.name(),
                r.block.iter_vars[a].var.name(),
                tirc_ir::printer::print_expr(x)
            )));
        }
    }
    // The new loops run in the order of the block's variables: where the
    // loops of its reduction were nested in another order and its update
    // depends on the order of its steps, that changes its result.
    let outermost = |v: &Expr| path.iter().position(|x| v.uses(&x.var));
    let steps: Vec<Option<usize>> = r
        .block
        .iter_vars
        .iter()
        .zip(&r.iter_values)
        .filter(|(iv, v)| iv.kind == tirc_ir::IterKind::Reduce && v.has_var())
        .map(|(_, v)| outermost(v))
        .collect();
    if steps.windows(2).any(|w| w[0] > w[1]) {
        if let Some(why) = crate::common::reduction::order_dependence(&r.block.body, r.block.init.as_ref()) {
            return Err(ScheduleError::new(format!(
                "block `{block}` accumulates with an update that {why}: its loops, rebuilt in the order of its variables, would visit its steps in another order than they are nested now"
            ))
            .help("declare the block's reduction variables in the order of their loops"));
        }
    }
    // A producer that adds to what it reads (the update of a decomposed
    // reduction: no init) is not idempotent: moved under a loop its
    // consumers' region does not depend on, it would add once per
    // iteration. TVM's rule: a block moved by compute_at is complete or a
    // reduction with its init.
    if producer && r.block.init.is_none() {
        if let Some(w) = read_and_written(&r) {
            return Err(ScheduleError::new(format!(
                "block `{block}` reads `{}`, which it writes, and has no init: computed again under loop `{}`, it would add to it again",
                w.name(),
                lp.name()
            ))
            .help("compute_at the reduction before decompose_reduction (its init moves with it), or move the update with reverse_compute_at of its consumer"));
        }
    }
    // 2. The outermost loop whose body is a perfect nest down to the block.
    let mut subtree: Option<Var> = None;
    for (i, x) in path.iter().enumerate() {
        if perfect_nest(&Stmt::For(Box::new((*x).clone())), block) {
            subtree = Some(path[i].var.clone());
            break;
        }
    }
    if let Some(first) = path.first() {
        if subtree.is_none() {
            return Err(ScheduleError::new(format!(
                "the loops around block `{block}` hold other statements too (loop `{}`), so they cannot move with it",
                first.var.name()
            )));
        }
    }
    if let Some(top) = &subtree {
        if l.var == *top || l.body.find_loop(top).is_some() || l.body.blocks().iter().any(|b| b.block.name == block) {
            return Err(ScheduleError::new(format!("loop `{}` is inside block `{block}`'s own loops", lp.name())));
        }
    }
    // 3.
    let mine = block_buffers(&r, !producer);
    let theirs_of = |b: &BlockRealize| block_buffers(b, producer);
    // The blocks directly under the loop: a block nested in another (what
    // `blockize` leaves) speaks of its outer block's variables, and the
    // outer block's regions cover it.
    let lp_stmt = Stmt::For(Box::new(l.clone()));
    let under: Vec<BlockRealize> = child_blocks(&lp_stmt)
        .into_iter()
        .filter(|b| b.block.name != block && theirs_of(b).iter().any(|x| mine.contains(x)))
        .cloned()
        .collect();
    let nested_in_me = nested_block_names(&r);
    let (role, other_role, verb) =
        if producer { ("consumer", "producer", "reads") } else { ("producer", "consumer", "writes") };
    if under.is_empty() {
        return Err(ScheduleError::new(format!(
            "no block under loop `{}` {verb} what block `{block}` {}; the {role} must be under the loop",
            lp.name(),
            if producer { "writes" } else { "reads" }
        )));
    }
    let names_under: Vec<String> = l.body.blocks().iter().map(|b| b.block.name.clone()).collect();
    for b in root.blocks() {
        if b.block.name == block
            || b.block.name == "root"
            || names_under.contains(&b.block.name)
            || nested_in_me.contains(&b.block.name)
        {
            continue;
        }
        if theirs_of(b).iter().any(|x| mine.contains(x)) {
            return Err(ScheduleError::new(format!(
                "block `{}` outside loop `{}` also {verb} a buffer that `{block}` {}: the {other_role} must stay where every {role} sees it",
                b.block.name,
                lp.name(),
                if producer { "writes" } else { "reads" }
            )));
        }
    }
    // 4.
    let order: Vec<String> = root.blocks().iter().map(|b| b.block.name.clone()).collect();
    let me = order.iter().position(|n| n == block).unwrap_or(0);
    for n in under.iter().map(|b| &b.block.name) {
        let them = order.iter().position(|x| x == n).unwrap_or(0);
        if producer && them < me || !producer && them > me {
            return Err(ScheduleError::new(format!(
                "block `{n}` runs before block `{block}`, so `{block}` cannot move to its {}",
                if producer { "start" } else { "end" }
            )));
        }
    }
    // 4b. Moved into the loop, the block runs after (a producer) or before
    // (a consumer) every block it passes: those between it and the loop,
    // and, from the loop's second iteration on, every block under the loop.
    // None of them may touch what it touches, but for the dataflow between
    // the block and its consumers (producers) under the loop.
    if producer {
        if let Some(b) = block_buffers(&r, false).into_iter().find(|b| sch.func.params.contains(b)) {
            return Err(ScheduleError::new(format!(
                "block `{block}` writes `{}`, a parameter of the function: its values are a result, and moved it would compute only the part that the consumers under loop `{}` read",
                b.name(),
                lp.name()
            )));
        }
    }
    {
        let all = root.blocks();
        let pos = |n: &str| all.iter().position(|b| b.block.name == n);
        let under_pos: Vec<usize> = names_under.iter().filter_map(|n| pos(n)).collect();
        let (first, last) =
            (under_pos.iter().min().copied().unwrap_or(me), under_pos.iter().max().copied().unwrap_or(me));
        let passed: Vec<&BlockRealize> = all
            .iter()
            .enumerate()
            .filter(|(i, b)| {
                b.block.name != block
                    && b.block.name != "root"
                    && !nested_in_me.contains(&b.block.name)
                    && (names_under.contains(&b.block.name)
                        || if producer { *i > me && *i < first } else { *i > last && *i < me })
            })
            .map(|(_, b)| *b)
            .collect();
        let moved = Moved { block, reads: block_buffers(&r, true), writes: block_buffers(&r, false) };
        let linked = |w: &BlockRealize, b: &Buffer, writes: bool| {
            names_under.contains(&w.block.name)
                && (mine.contains(b) && writes != producer || writes && written_under == Some(b))
        };
        check_passed(&root, &moved, &passed, &linked, if producer { "compute_at" } else { "reverse_compute_at" })?;
    }
    // The region each shared buffer needs in one iteration of the loop.
    let an = loop_analyzer(&root);
    let mut need: Vec<(Buffer, Vec<(Expr, Expr)>)> = Vec::new();
    // For a consumer: the bounds a producer's guard puts on what it writes
    // in some iterations only (buffer, the producer's access, dimension,
    // bound; below).
    let mut caps: Vec<(Buffer, usize, usize, Expr)> = Vec::new();
    // What each block under the loop accesses in one iteration, in terms of
    // the loops: a consumer moved after its producers must find every
    // element of its box written there (below).
    let mut accessed: Vec<Access> = Vec::new();
    // The part of each other block's predicate that speaks of the loops at
    // and around `lp` only (a non-dividing split's guard on a tile,
    // `i_1_0 * 2 + i_1_1 < 1`): where none of the blocks the moved one
    // feeds (compute_at) or reads from (reverse_compute_at) runs in an
    // iteration, neither may it. A producer would otherwise compute, and
    // race on, the rows of the next tile; a consumer would copy a local
    // tile nothing wrote over valid elements. `None` once such a block
    // runs in every iteration.
    let mut other_guards: Option<Vec<Expr>> = Some(Vec::new());
    for b in &under {
        let bpath = root.loops_above(&b.block.name).unwrap_or_default();
        let at = bpath.iter().position(|x| &x.var == lp).unwrap_or(0);
        let bind: Vec<(Var, Expr)> =
            b.block.iter_vars.iter().map(|iv| iv.var.clone()).zip(b.iter_values.iter().cloned()).collect();
        let regs = if producer { block_regions(b).0 } else { block_regions(b).1 };
        for reg in regs.iter().filter(|g| mine.contains(&g.buffer)) {
            let relaxed: Vec<Relaxed> = bpath
                .iter()
                .enumerate()
                .filter(|(i, x)| {
                    *i > at
                        || (reg.buffer.scope() == Scope::Shared
                            && (matches!(x.kind, ForKind::ThreadBinding(t) if !t.is_block)
                                // A producer's copy inside a virtual
                                // thread covers every virtual thread's
                                // part, as TVM relaxes it: run once
                                // (inject_virtual_thread) or again by
                                // each (unrolled), it writes the same. A
                                // consumer would add its part again.
                                || (producer && x.is_vthread())))
                })
                .map(|(_, x)| (x.var.clone(), x.min.clone(), x.extent.clone()))
                .collect();
            let guards = crate::arith::conjuncts(&b.predicate);
            if b.block.name != block {
                let outer: Vec<Expr> = guards
                    .iter()
                    .filter(|c| {
                        !relaxed.iter().any(|(v, _, _)| c.uses(v)) && !bpath[at + 1..].iter().any(|x| c.uses(&x.var))
                    })
                    .cloned()
                    .collect();
                other_guards = match (other_guards.take(), outer.is_empty()) {
                    (Some(mut all), false) => {
                        all.push(crate::arith::all_of(outer));
                        Some(all)
                    }
                    _ => None,
                };
            }
            let mut dims = Vec::new();
            accessed.push((
                reg.buffer.clone(),
                reg.region.iter().map(|rg| (substitute(&rg.min, &bind), substitute(&rg.extent, &bind))).collect(),
                relaxed.clone(),
                b.predicate.clone(),
            ));
            for rg in &reg.region {
                let lo = substitute(&rg.min, &bind);
                let hi = substitute(&(rg.min.clone() + rg.extent.clone() - Expr::int(1)), &bind);
                let (Some((l0, _)), Some((_, h1))) = (relax(&lo, &relaxed), relax_guarded(&hi, &relaxed, &guards))
                else {
                    return Err(ScheduleError::new(format!(
                        "cannot bound the region of `{}` that block `{}` accesses",
                        reg.buffer.name(),
                        b.block.name
                    )));
                };
                if !producer {
                    for cap in crate::bounds::guard_caps(&hi, &relaxed, &guards) {
                        if an.prove(&Expr::binary(BinOp::Ge, cap.clone(), h1.clone())) != Some(true) {
                            caps.push((reg.buffer.clone(), accessed.len() - 1, dims.len(), cap));
                        }
                    }
                }
                dims.push((l0, h1));
            }
            match need.iter_mut().find(|(x, _)| *x == reg.buffer) {
                Some((_, old)) => {
                    for (o, n) in old.iter_mut().zip(dims) {
                        *o = union(o, &n).ok_or_else(|| {
                            ScheduleError::new(format!(
                                "the regions of `{}` accessed under loop `{}` cannot be merged into one box",
                                reg.buffer.name(),
                                lp.name()
                            ))
                        })?;
                    }
                }
                None => need.push((reg.buffer.clone(), dims)),
            }
        }
    }
    // 3b. The consumer reads the whole box of what its producers write in
    // one iteration; where they write it with holes (a thread's tile of rows
    // 64 apart), the elements between belong to other iterations, which
    // have not written them yet or write them too.
    if !producer {
        let at_min = loop_starts(&root);
        for (buf, dims) in &need {
            let writes: Vec<&Access> = accessed.iter().filter(|a| &a.0 == buf).collect();
            let read = read_box(&r, buf);
            if let Some((written, total)) = holes(&writes, dims, &at_min, buf.const_shape().as_deref(), read.as_deref())
            {
                let show = |e: &Expr| tirc_ir::printer::print_expr(e);
                let bounds: Vec<String> = dims.iter().map(|(lo, hi)| format!("{}..={}", show(lo), show(hi))).collect();
                return Err(ScheduleError::new(format!(
                    "under loop `{}`, the blocks write only {written} of the {total} elements of `{}` in the box [{}] that block `{block}` would read: the others belong to other iterations",
                    lp.name(),
                    buf.name(),
                    bounds.join(", ")
                ))
                .help("move the block under a loop whose iteration writes one box with no holes (a contiguous tile), or make the tile contiguous"));
            }
        }
    }
    // 5. Each iteration variable's range, from the dimension it indexes.
    let my_regs = if producer { block_regions(&r).1 } else { block_regions(&r).0 };
    let mut ranges: Vec<Option<(Expr, Expr)>> = vec![None; r.block.iter_vars.len()];
    for (buf, dims) in &need {
        for reg in my_regs.iter().filter(|g| &g.buffer == buf) {
            // A variable split over two dimensions, `v // n` and `v % n`
            // (a blocked layout): its quotient's and remainder's ranges,
            // joined once both are known.
            let mut halves: Vec<(usize, i64, Option<Span2>, Option<Span2>)> = Vec::new();
            for (d, rg) in reg.region.iter().enumerate() {
                // Only where the block moved is the producer: the remainder's
                // range is relaxed whole wherever it wraps, so the joined range
                // may cover more than is needed, which a producer computes
                // again to the same values but a consumer would compute before
                // its inputs exist.
                if let Some((vi, n, is_div)) = split_index(rg, &r.block.iter_vars).filter(|_| producer) {
                    let k = match halves.iter().position(|h| h.0 == vi && h.1 == n) {
                        Some(k) => k,
                        None => {
                            halves.push((vi, n, None, None));
                            halves.len() - 1
                        }
                    };
                    let slot = if is_div { &mut halves[k].2 } else { &mut halves[k].3 };
                    if slot.replace(dims[d].clone()).is_none() {
                        continue;
                    }
                }
                // One iteration variable, or one plus an offset that does not
                // depend on them (`T1[vi + 3]`): the range is the region's,
                // shifted back by the offset.
                let vi = match rg.extent.as_int() {
                    Some(1) => offset_var(&rg.min, &r.block.iter_vars),
                    _ => None,
                };
                let found: Vec<(usize, (Expr, Expr))> = match vi {
                    Some((vi, off)) => {
                        let (lo, hi) = &dims[d];
                        vec![(vi, (an.simplify(&(lo.clone() - off.clone())), an.simplify(&(hi.clone() - off))))]
                    }
                    None => fused_ranges(rg, &r.block.iter_vars, &dims[d], &an).ok_or_else(|| {
                        ScheduleError::new(format!(
                            "block `{block}` does not access `{}` at its iteration variables in dimension {d}, so the region it must cover cannot be mapped to them",
                            buf.name()
                        ))
                        .help("index each dimension by one iteration variable, or by `v0 * n + v1` with `v1` over 0..n and a region of whole rows of `v1` or within one")
                    })?,
                };
                for (vi, range) in found {
                    widen(&mut ranges[vi], range, buf)?;
                }
            }
            for (vi, n, q, m) in halves {
                let range = match (q, m) {
                    (Some(q), Some(m)) => joined_range(n, &q, &m, &an),
                    _ => None,
                }
                .ok_or_else(|| {
                    ScheduleError::new(format!(
                        "block `{block}` accesses `{}` at `{0} // {n}` and `{0} % {n}` of variable `{0}`, but the region needed is not a range of it",
                        r.block.iter_vars[vi].var.name()
                    ))
                })?;
                widen(&mut ranges[vi], range, buf)?;
            }
        }
    }
    // Remove the block with its loops, and name the new loops
    // afresh against what remains.
    let removed = root.rewrite(&mut |x| match (x, &subtree) {
        (Stmt::For(f), Some(top)) if &f.var == top => Some(Stmt::NoOp),
        (Stmt::Block(b), None) if b.block.name == block => Some(Stmt::NoOp),
        _ => None,
    });
    // 6. New loops and bindings. A region whose size depends on the loops
    // outside (a tile that spans one batch or two) is widened to its
    // largest size, the predicate keeping it in the block's domain; one of
    // the function's run-time sizes is a loop of that many iterations.
    let sizes = &sch.func.sizes;
    let only_sizes = |e: &Expr| {
        let mut ok = true;
        e.walk(&mut |x| ok &= !matches!(x, Expr::Var(v) if !sizes.contains(v)));
        ok
    };
    let mut loops: Vec<(Var, Expr)> = Vec::new();
    let mut values = Vec::new();
    let mut preds = Vec::new();
    let mut taken = removed.clone();
    for (iv, rg) in r.block.iter_vars.iter().zip(&ranges) {
        // A consumer's range widened to its largest size (its producers
        // write less in some iterations: the last chunk of a split that
        // does not divide) keeps to the range: past it are other
        // iterations' elements, or other GPU blocks'.
        let mut upto: Option<Expr> = None;
        let (lo, extent) = match rg {
            Some((lo, hi)) => {
                let extent = an.simplify(&(hi.clone() - lo.clone() + Expr::int(1)));
                let widest = an.bound(&extent).map(|(_, h)| h).filter(|h| *h >= 1 && *h <= i64::from(i32::MAX));
                match (extent.as_int(), widest) {
                    (Some(e), _) => (lo.clone(), Expr::int(e)),
                    (None, _) if only_sizes(&extent) => (lo.clone(), extent),
                    (None, Some(h)) if !sizes.iter().any(|v| extent.uses(v)) => {
                        if !producer {
                            upto = Some(an.simplify(hi));
                        }
                        (lo.clone(), Expr::int(h))
                    }
                    _ => {
                        return Err(ScheduleError::new(format!(
                            "the region of `{}` needed has no size that bounds it: from {} to {}",
                            iv.var.name(),
                            tirc_ir::printer::print_expr(lo),
                            tirc_ir::printer::print_expr(hi)
                        )))
                    }
                }
            }
            None if only_sizes(&iv.dom.extent) && only_sizes(&iv.dom.min) => {
                (iv.dom.min.clone(), iv.dom.extent.clone())
            }
            None => {
                return Err(ScheduleError::new(format!(
                    "iteration variable `{}` of block `{block}` has a domain that depends on loops",
                    iv.var.name()
                )))
            }
        };
        let unit = !preserve && extent.as_int() == Some(1);
        let name = fresh_loop_name(&taken, &format!("ax{}", loops.len()));
        let v = Var::new(name, DType::I32);
        taken = Stmt::seq(vec![taken, name_marker(&v)]);
        let value = if unit { an.simplify(&lo) } else { an.simplify(&(lo.clone() + Expr::var(&v))) };
        // Keep the block inside its domain where the region may leave it.
        let end = iv.dom.min.clone() + iv.dom.extent.clone();
        let last = an.simplify(&(lo.clone() + extent.clone() - Expr::int(1)));
        if an.prove(&Expr::binary(BinOp::Lt, last, end.clone())) != Some(true) {
            preds.push(Expr::binary(BinOp::Lt, value.clone(), an.simplify(&end)));
        }
        if let Some(hi) = upto.filter(|hi| an.prove(&Expr::binary(BinOp::Lt, hi.clone(), end.clone())) != Some(false)) {
            // Said without the terms both sides share.
            preds.push(without_shared_terms(&an, &value, &hi));
        }
        if an.prove(&Expr::binary(BinOp::Ge, lo.clone(), iv.dom.min.clone())) != Some(true) {
            preds.push(Expr::binary(BinOp::Ge, value.clone(), iv.dom.min.clone()));
        }
        if !unit {
            loops.push((v, extent));
        }
        values.push(value);
    }
    if let Some(g) = other_guards.filter(|g| !g.is_empty()) {
        let any = g.into_iter().reduce(|a, b| Expr::binary(BinOp::Or, a, b)).unwrap_or_else(|| Expr::bool(true));
        preds.push(any);
    }
    // A consumer reads no further than its producers write where their
    // guards stop them short of the box in some iterations (the last chunk
    // of 64 of a tile of 208): the elements past it belong to other
    // iterations, or to other GPU blocks, which write them too. Where
    // several producers write the buffer, the largest of their bounds,
    // where each has one and they compare.
    let mut bounded: Vec<(Buffer, usize, Expr)> = Vec::new();
    for (buf, _, d, c) in &caps {
        if bounded.iter().any(|(b, e, x)| b == buf && e == d && tirc_ir::structural_eq::same_expr(x, c)) {
            continue;
        }
        // `c` bounds the union where every producer has a bound no larger.
        let writers = (0..accessed.len()).filter(|k| &accessed[*k].0 == buf);
        let covers = |w: usize| {
            caps.iter().any(|(b, a, e, x)| {
                b == buf && *a == w && e == d && an.prove(&Expr::binary(BinOp::Ge, c.clone(), x.clone())) == Some(true)
            })
        };
        if writers.into_iter().all(covers) {
            bounded.push((buf.clone(), *d, c.clone()));
        }
    }
    let bind: Vec<(Var, Expr)> =
        r.block.iter_vars.iter().map(|iv| iv.var.clone()).zip(values.iter().cloned()).collect();
    // (Not where the block's domain stops it there already.)
    let ends: Vec<(Var, Expr)> = r
        .block
        .iter_vars
        .iter()
        .map(|iv| (iv.var.clone(), iv.dom.min.clone() + iv.dom.extent.clone() - Expr::int(1)))
        .collect();
    let reads = block_regions(&r).0;
    for (buf, d, cap) in &bounded {
        for reg in reads.iter().filter(|g| &g.buffer == buf) {
            let rg = &reg.region[*d];
            let last = rg.min.clone() + rg.extent.clone() - Expr::int(1);
            let at_end = an.simplify(&substitute(&last, &ends));
            if an.prove(&Expr::binary(BinOp::Ge, cap.clone(), at_end)) == Some(true) {
                continue;
            }
            preds.push(without_shared_terms(&an, &substitute(&last, &bind), cap));
        }
    }
    // The block's own predicate (elements it never computes: a consumer
    // inlined into an overcomputed producer) goes with it, said of the new
    // bindings and of the loops around its new place.
    let around = loops_around(&removed, lp).unwrap_or_default();
    if let Some(own) = carried_predicate(&r, &values, &path, &around) {
        preds.push(own?);
    }
    // Each condition once (the producers' guard may repeat the domain's).
    let mut said: Vec<Expr> = Vec::new();
    for c in preds.iter().flat_map(crate::arith::conjuncts) {
        if !said.iter().any(|p| tirc_ir::structural_eq::same_expr(p, &c)) {
            said.push(c);
        }
    }
    let mut moved = r.clone();
    moved.iter_values = values;
    moved.predicate = all_of(said);
    let mut nest = Stmt::Block(Box::new(moved));
    for (v, e) in loops.into_iter().rev() {
        nest = Stmt::For(Box::new(For {
            var: v,
            min: Expr::int(0),
            extent: e,
            kind: ForKind::Serial,
            annotations: vec![],
            body: nest,
            span: None,
        }));
    }
    // 7. Where in the loop's body: after every statement that writes what
    // the block reads, before every one that reads what it writes.
    let Some(target) = removed.find_loop(lp) else {
        return Err(ScheduleError::not_found(format!("loop `{}` is no longer in the function", lp.name())));
    };
    let items: Vec<Stmt> = match &target.body {
        Stmt::Seq(v) => v.clone(),
        s => vec![s.clone()],
    };
    let (reads, writes) = (block_buffers(&r, true), block_buffers(&r, false));
    let touches = |s: &Stmt, bufs: &[Buffer], write: bool| {
        s.blocks().iter().any(|b| block_buffers(b, !write).iter().any(|x| bufs.contains(x)))
    };
    let lo = items.iter().rposition(|s| touches(s, &reads, true)).map_or(0, |i| i + 1);
    let hi = items.iter().position(|s| touches(s, &writes, false)).unwrap_or(items.len());
    if lo > hi {
        return Err(ScheduleError::new(format!(
            "under loop `{}`, a statement that reads what block `{block}` writes comes before one that writes what it reads: no place keeps both orders",
            lp.name()
        )));
    }
    let at = match index {
        -1 => hi,
        -2 => lo,
        k if k >= 0 && (lo as i64..=hi as i64).contains(&k) => k as usize,
        k => {
            return Err(ScheduleError::bad_argument(format!(
                "index {k} is no place for block `{block}` under loop `{}`: after what it reads and before what reads it is index {lo} to {hi} (or -1 for the last such place, -2 for the first)",
                lp.name()
            )))
        }
    };
    // A loop bound to blockIdx spans the whole kernel: the loop the block
    // moves under must not hold one (each thread block would run the
    // block beside its own iteration only, reading or writing what the
    // others compute, with nothing to wait for them).
    let mut bound_inside = None;
    l.body.walk(&mut |x| {
        if let Stmt::For(f) = x {
            if matches!(f.kind, ForKind::ThreadBinding(t) if t.is_block) {
                bound_inside.get_or_insert_with(|| f.var.name().to_string());
            }
        }
    });
    if let Some(b) = bound_inside {
        return Err(ScheduleError::new(format!(
            "loop `{}` holds loop `{b}`, bound to a block index: a block beside it would run in every thread block, apart from the others' iterations",
            lp.name()
        ))
        .help("move the block under the loop bound to the block index, or bind after the move where the loops allow it"));
    }
    let mut nest = Some(nest);
    sch.func.body = removed.rewrite(&mut |x| match x {
        Stmt::For(f) if &f.var == lp => {
            let mut f = (**f).clone();
            let n = nest.take()?;
            let mut body = items.clone();
            body.insert(at, n);
            f.body = Stmt::seq(body);
            Some(Stmt::For(Box::new(f)))
        }
        _ => None,
    });
    Ok(())
}

/// `a <= b` said without the terms both sides share: `j_0 * 20 + j_1_0 * 8
/// + ax1 <= j_0 * 20 + 19` as `j_1_0 * 8 + ax1 <= 19`.
fn without_shared_terms(an: &Analyzer, a: &Expr, b: &Expr) -> Expr {
    let diff = an.simplify(&(a.clone() - b.clone()));
    let (lhs, k) = match &diff {
        Expr::Binary(BinOp::Add, e, c) if c.as_int().is_some() => ((**e).clone(), -c.as_int().unwrap_or(0)),
        Expr::Binary(BinOp::Sub, e, c) if c.as_int().is_some() => ((**e).clone(), c.as_int().unwrap_or(0)),
        _ => (diff.clone(), 0),
    };
    Expr::binary(BinOp::Le, lhs, Expr::int(k))
}

/// The moved block's predicate in terms of its new bindings `values`, one
/// condition at a time: each binding of the old ones that a condition
/// names (a loop, or an expression of loops such as `f // 128`, in any
/// spelling the simplifier makes the same) is replaced by the new value. A
/// condition that still names a loop of `path` (the loops around the block
/// now) that is not `around` its new place is dropped where it holds at every iteration whose
/// bindings lie in the block's domain (the guard of a split that does not
/// divide: the new loops keep the block in its domain themselves), and is
/// an error otherwise. `None` where nothing is left to say.
fn carried_predicate(r: &BlockRealize, values: &[Expr], path: &[&For], around: &[Var]) -> Option<Result<Expr>> {
    if r.predicate.as_bool() == Some(true) {
        return None;
    }
    let an = Analyzer::new();
    let pairs: Vec<(Expr, &Expr)> = r.iter_values.iter().cloned().zip(values).collect();
    fn swap(e: &Expr, pairs: &[(Expr, &Expr)], an: &Analyzer) -> Expr {
        if e.has_var() && e.dtype() != DType::Bool {
            let same = |old: &Expr| an.simplify(&(old.clone() - e.clone())).as_int() == Some(0);
            if let Some((_, new)) = pairs.iter().find(|(old, _)| old.dtype() == e.dtype() && same(old)) {
                return (*new).clone();
            }
        }
        e.map_children(|c| swap(c, pairs, an))
    }
    // A loop around the block now that is not around its new place (its
    // own loops, which move with it, and any loop above them that is not
    // above the target).
    let gone: Vec<&Var> = path.iter().map(|l| &l.var).filter(|v| !around.contains(v)).collect();
    let mut kept = Vec::new();
    for c in crate::arith::conjuncts(&r.predicate) {
        let said = an.simplify(&swap(&c, &pairs, &an));
        match gone.iter().find(|v| said.uses(v)) {
            None => kept.push(said),
            Some(_) if holds_in_domain(r, &c, path) => {}
            Some(v) => {
                return Some(Err(ScheduleError::new(format!(
                    "the predicate of block `{}` ({}) names loop `{}` other than through the block's bindings, and \
                     does not hold wherever they are in the block's domain: it cannot be said where the block moves",
                    r.block.name,
                    tirc_ir::printer::print_expr(&c),
                    v.name()
                ))))
            }
        }
    }
    (!kept.is_empty()).then(|| Ok(all_of(kept)))
}

/// The loops from the root down to loop `target`, `target` included.
fn loops_around(s: &Stmt, target: &Var) -> Option<Vec<Var>> {
    match s {
        Stmt::For(l) if &l.var == target => Some(vec![l.var.clone()]),
        Stmt::For(l) => loops_around(&l.body, target).map(|mut v| {
            v.insert(0, l.var.clone());
            v
        }),
        Stmt::Block(b) => {
            b.block.init.as_ref().and_then(|i| loops_around(i, target)).or_else(|| loops_around(&b.block.body, target))
        }
        Stmt::Seq(items) => items.iter().find_map(|x| loops_around(x, target)),
        _ => {
            let mut found = None;
            s.for_each_child(|c| {
                if found.is_none() {
                    found = loops_around(c, target);
                }
            });
            found
        }
    }
}

/// Whether condition `c` of block `r`'s predicate is true at every
/// iteration of the loops `path` around it whose bindings lie in the
/// block's domain; false where that cannot be counted (more than 2^20
/// iterations, or a bound that is not constant).
fn holds_in_domain(r: &BlockRealize, c: &Expr, path: &[&For]) -> bool {
    let loops: Option<Vec<(Var, i64, i64)>> =
        path.iter().map(|l| Some((l.var.clone(), l.min.as_int()?, l.extent.as_int()?))).collect();
    let domain: Option<Vec<(i64, i64)>> =
        r.block.iter_vars.iter().map(|iv| Some((iv.dom.min.as_int()?, iv.dom.extent.as_int()?))).collect();
    let (Some(loops), Some(domain)) = (loops, domain) else { return false };
    let mut alone = r.clone();
    alone.predicate = c.clone();
    let mut holds = true;
    let counted = crate::common::tree::run_block_iterations(&alone, &loops, RUN_LIMIT, &mut |vals, on| {
        let inside = vals.iter().zip(&domain).all(|(v, (lo, n))| (*lo..lo + n).contains(v));
        holds &= on || !inside;
        Some(())
    });
    counted.is_some() && holds
}

/// Whether `s` is a chain of loops ending in the block `block` alone.
fn perfect_nest(s: &Stmt, block: &str) -> bool {
    match s {
        Stmt::For(f) => perfect_nest(&f.body, block),
        Stmt::Block(b) => b.block.name == block,
        _ => false,
    }
}

/// The box of `buf` that block `r` reads over its whole domain, each
/// dimension's first and last element, where the domain and the region
/// have constant bounds.
fn read_box(r: &BlockRealize, buf: &Buffer) -> Option<Vec<(i64, i64)>> {
    let mut an = Analyzer::new();
    for iv in &r.block.iter_vars {
        let (m, e) = (iv.dom.min.as_int()?, iv.dom.extent.as_int()?);
        an.bind(&iv.var, m, m + e - 1);
    }
    let reads = block_regions(r).0;
    let regions: Vec<_> = reads.iter().filter(|x| &x.buffer == buf).collect();
    let mut out: Option<Vec<(i64, i64)>> = None;
    for reg in regions {
        let dims: Vec<(i64, i64)> = reg
            .region
            .iter()
            .map(|rg| {
                let lo = an.bound(&rg.min)?.0;
                let hi = an.bound(&an.simplify(&(rg.min.clone() + rg.extent.clone() - Expr::int(1))))?.1;
                Some((lo, hi))
            })
            .collect::<Option<_>>()?;
        out = Some(match out {
            None => dims,
            Some(o) => o.iter().zip(&dims).map(|(a, b)| (a.0.min(b.0), a.1.max(b.1))).collect(),
        });
    }
    out
}

/// `range` added to what a variable's range already holds, as one range.
fn widen(held: &mut Option<Span2>, range: Span2, buf: &Buffer) -> Result<()> {
    *held = Some(match held.take() {
        None => range,
        Some(old) => union(&old, &range)
            .ok_or_else(|| ScheduleError::new(format!("the regions needed of `{}` cannot be merged", buf.name())))?,
    });
    Ok(())
}

/// The ranges of two iteration variables that a dimension indexes fused,
/// `v0 * n + v1` (a reshape, a pooling window's rows), with `v1` over
/// `0..n`, for the region `[lo, hi]` of that dimension, where it is exactly
/// a box of them: whole runs of `v1` (`lo` and `hi + 1` multiples of `n`:
/// `v0` over `lo // n ..= hi // n`, `v1` over all of it), or a part of one
/// (`lo // n == hi // n`: `v0` that one value, `v1` over `lo % n ..= hi %
/// n`). `None` for any other index or region.
fn fused_ranges(
    rg: &tirc_ir::Range,
    ivs: &[tirc_ir::stmt::IterVar],
    (lo, hi): &(Expr, Expr),
    an: &Analyzer,
) -> Option<Vec<(usize, (Expr, Expr))>> {
    if rg.extent.as_int() != Some(1) {
        return None;
    }
    let pos = |v: &Var| ivs.iter().position(|iv| &iv.var == v);
    // `v0 * n + v1` or `v1 + v0 * n`.
    let Expr::Binary(BinOp::Add, a, b) = &rg.min else { return None };
    let split = |x: &Expr, y: &Expr| -> Option<(usize, i64, usize)> {
        let Expr::Binary(BinOp::Mul, v0, n) = x else { return None };
        let (Expr::Var(v0), Some(n), Expr::Var(v1)) = (&**v0, n.as_int(), y) else { return None };
        Some((pos(v0)?, n, pos(v1)?))
    };
    let (o, n, i) = split(a, b).or_else(|| split(b, a))?;
    let inner = &ivs[i].dom;
    if o == i || n < 1 || inner.min.as_int() != Some(0) || inner.extent.as_int() != Some(n) {
        return None;
    }
    let c = Expr::int(n);
    let is_zero = |e: Expr| an.simplify(&e).as_int() == Some(0);
    let div = |e: &Expr| an.simplify(&Expr::binary(BinOp::FloorDiv, e.clone(), c.clone()));
    let rem = |e: &Expr| an.simplify(&Expr::binary(BinOp::FloorMod, e.clone(), c.clone()));
    let (olo, ohi) = (div(lo), div(hi));
    if is_zero(rem(lo)) && is_zero(rem(&(hi.clone() + Expr::int(1)))) {
        return Some(vec![(o, (olo, ohi)), (i, (Expr::int(0), Expr::int(n - 1)))]);
    }
    if is_zero(olo.clone() - ohi.clone()) {
        return Some(vec![(o, (olo.clone(), olo)), (i, (rem(lo), rem(hi)))]);
    }
    None
}

/// A range of one dimension, both ends included.
type Span2 = (Expr, Expr);

/// `v // n` (`true`) or `v % n` (`false`) of an iteration variable `v`, a
/// positive constant `n`: one of the two dimensions a blocked layout
/// (`transform_layout` to `(j // 4, i, j % 4)`) splits `v` into.
fn split_index(rg: &tirc_ir::Range, ivs: &[tirc_ir::stmt::IterVar]) -> Option<(usize, i64, bool)> {
    if rg.extent.as_int() != Some(1) {
        return None;
    }
    let Expr::Binary(op @ (BinOp::FloorDiv | BinOp::FloorMod), v, n) = &rg.min else { return None };
    let (Expr::Var(v), Some(n)) = (&**v, n.as_int()) else { return None };
    let vi = ivs.iter().position(|iv| &iv.var == v)?;
    (n > 0).then_some((vi, n, *op == BinOp::FloorDiv))
}

/// The range of `v` whose quotient by `n` runs over `q` and remainder over
/// `m`, where that is exactly a range: whole runs of the remainder (`m` is
/// `0..n`), or one quotient.
fn joined_range(n: i64, q: &(Expr, Expr), m: &(Expr, Expr), an: &Analyzer) -> Option<(Expr, Expr)> {
    let c = Expr::int(n);
    let is = |e: &Expr, k: i64| an.simplify(e).as_int() == Some(k);
    if is(&m.0, 0) && is(&m.1, n - 1) {
        return Some((an.simplify(&(q.0.clone() * c.clone())), an.simplify(&(q.1.clone() * c + Expr::int(n - 1)))));
    }
    if is(&(q.1.clone() - q.0.clone()), 0) {
        let base = q.0.clone() * c;
        return Some((an.simplify(&(base.clone() + m.0.clone())), an.simplify(&(base + m.1.clone()))));
    }
    None
}

/// A buffer, the region of it a block accesses (`(min, extent)` in terms of
/// loops), the loops that run over their ranges in one iteration, and the
/// block's predicate (over the loops).
type Access = (Buffer, Vec<(Expr, Expr)>, Vec<Relaxed>, Expr);

/// `(written, total)` where the accesses `writes` (a region in terms of
/// loops, and the loops of one iteration that run over their ranges) leave
/// holes in the box `dims`, taken at the first iteration of every other
/// loop; `None` where they cover it, or where that cannot be counted (sizes
/// known only at run time, more than 2^22 elements).
fn holes(
    writes: &[&Access],
    dims: &[(Expr, Expr)],
    outer: &[(Var, i64)],
    shape: Option<&[i64]>,
    read: Option<&[(i64, i64)]>,
) -> Option<(u64, u64)> {
    use crate::arith::eval;
    const LIMIT: i64 = 1 << 22;
    let fixed = |v: &Var| outer.iter().find(|(x, _)| x == v).map(|(_, m)| *m);
    let mut bounds: Vec<(i64, i64)> =
        dims.iter().map(|(lo, hi)| Some((eval(lo, &fixed)?, eval(hi, &fixed)?))).collect::<Option<_>>()?;
    // A box reaching past the buffer (a tile wider than the shape) has no
    // elements there to write or read.
    if let Some(shape) = shape.filter(|s| s.len() == bounds.len()) {
        for ((lo, hi), n) in bounds.iter_mut().zip(shape) {
            *lo = (*lo).max(0);
            *hi = (*hi).min(n - 1);
        }
    }
    // Nor has it elements there that the consumer reads at all (a box of
    // 40 × 36 of a tile of 48 × 48: its loops get a predicate that keeps
    // them in its domain).
    // (Only where the clipped box keeps elements: the check looks at the
    // first iteration of the loops outside alone, which may read nothing.)
    if let Some(read) = read.filter(|r| r.len() == bounds.len()) {
        let clipped: Vec<(i64, i64)> =
            bounds.iter().zip(read).map(|((lo, hi), (rlo, rhi))| ((*lo).max(*rlo), (*hi).min(*rhi))).collect();
        if clipped.iter().all(|(lo, hi)| lo <= hi) {
            bounds = clipped;
        }
    }
    let total =
        bounds.iter().try_fold(1i64, |a, (lo, hi)| a.checked_mul((hi - lo + 1).max(0)).filter(|t| *t <= LIMIT))?;
    let mut seen = std::collections::HashSet::new();
    for (_, region, relaxed, predicate) in writes {
        // Only the loops the region depends on are run. Where the predicate
        // is false nothing is written; it is read only where it speaks of
        // those loops alone and can be evaluated (else every point counts).
        let in_region = |v: &Var| region.iter().any(|(m, e)| m.uses(v) || e.uses(v));
        let predicate = if relaxed.iter().all(|(v, _, _)| !predicate.uses(v) || in_region(v)) {
            predicate.clone()
        } else {
            Expr::bool(true)
        };
        let used: Vec<(Var, i64, i64)> = relaxed
            .iter()
            .filter(|(v, _, _)| in_region(v))
            .map(|(v, m, e)| Some((v.clone(), eval(m, &fixed)?, eval(e, &fixed)?)))
            .collect::<Option<_>>()?;
        let runs = used.iter().try_fold(1i64, |a, l| a.checked_mul(l.2.max(0)).filter(|t| *t <= LIMIT))?;
        let mut at = vec![0i64; used.len()];
        for _ in 0..runs {
            let value =
                |v: &Var| used.iter().zip(&at).find(|(l, _)| &l.0 == v).map(|(l, k)| l.1 + k).or_else(|| fixed(v));
            let mut point: Vec<(i64, i64)> = Vec::new();
            let runs_here = eval(&predicate, &value).is_none_or(|p| p != 0);
            for (m, e) in region.iter() {
                // (An empty box where the predicate is false.)
                point.push(if runs_here { (eval(m, &value)?, eval(e, &value)?) } else { (0, 0) });
            }
            let size = point.iter().try_fold(1i64, |a, (_, e)| a.checked_mul((*e).max(0)).filter(|t| *t <= LIMIT))?;
            for k in 0..size {
                let mut rest = k;
                let mut p = Vec::with_capacity(point.len());
                for (m, e) in point.iter().rev() {
                    p.push(m + rest % e);
                    rest /= e;
                }
                p.reverse();
                if p.iter().zip(&bounds).all(|(x, (lo, hi))| lo <= x && x <= hi) {
                    seen.insert(p);
                }
                if seen.len() as i64 > LIMIT {
                    return None;
                }
            }
            for (k, l) in at.iter_mut().zip(&used).rev() {
                *k += 1;
                if *k < l.2 {
                    break;
                }
                *k = 0;
            }
        }
    }
    let written = seen.len() as u64;
    (written < total as u64).then_some((written, total as u64))
}

/// An analyzer that knows the range of every loop with constant bounds.
fn loop_analyzer(root: &Stmt) -> Analyzer {
    let mut an = Analyzer::new();
    root.walk(&mut |s| {
        if let Stmt::For(f) = s {
            an.bind_range(&f.var, &f.min, &f.extent);
        }
    });
    an
}

/// `e` as one iteration variable of `vars` plus an offset that uses none of
/// them: `vi`, `vi + 3`, `3 + vi`, `vi - n`. The variable's position and the
/// offset.
fn offset_var(e: &Expr, vars: &[tirc_ir::IterVar]) -> Option<(usize, Expr)> {
    let position = |x: &Expr| match x {
        Expr::Var(v) => vars.iter().position(|iv| &iv.var == v),
        _ => None,
    };
    let free = |x: &Expr| !vars.iter().any(|iv| x.uses(&iv.var));
    match e {
        Expr::Var(_) => position(e).map(|i| (i, Expr::int(0))),
        Expr::Binary(BinOp::Add, a, b) => match (position(a), position(b)) {
            (Some(i), _) if free(b) => Some((i, (**b).clone())),
            (_, Some(i)) if free(a) => Some((i, (**a).clone())),
            _ => None,
        },
        Expr::Binary(BinOp::Sub, a, b) if free(b) => position(a).map(|i| (i, Expr::int(0) - (**b).clone())),
        _ => None,
    }
}
