//! `lower_cross_thread_reduction`: a reduction block whose reduction loop is
//! bound to `threadIdx` becomes a partial result per thread, a tree
//! combining them in shared memory, and one write of the total.
//!
//! TVM allows `sch.bind(k, "threadIdx.x")` on a reduction loop (a row sum,
//! softmax's max and sum, a GEMV): the threads split the reduction and must
//! combine their partial results. For such a block `B` (its update
//! `C[i] = C[i] op v` with `op` one of `+ * min max`, its init if any;
//! or several such updates of distinct buffers, none reading another's
//! output — TVM's tuple reductions, a layer norm's sum and sum of squares —
//! each then carried through the steps below side by side; or a selection,
//! every output `Select(cond, C[i], v)` under one comparison, as an argmax
//! writes its index and value, combined by that comparison and started
//! from the init's constants — `common::reduction::Reducer`), let
//! T be the loops bound to `threadIdx` that its reduction variables use,
//! directly nested from the outermost of them (the *chain*, which may hold
//! other thread loops, over spatial axes), with serial loops below. The
//! chain is replaced by three of its copies, one after another:
//!
//! 1. each thread accumulates its part in a local `acc` (starting from the
//!    identity of `op`) over the loops below the chain — block
//!    `B_in_thread` — and stores it in a shared `B_red[s, t]`, `t` the
//!    thread's place among the T loops, `s` its place among the other
//!    thread loops (which reduce separately);
//! 2. halving steps: `B_red[s, t] = B_red[s, t] op B_red[s, t + h]` for the
//!    lower threads, until one value is left;
//! 3. the thread with `t == 0` runs `B` itself, its reduction variables at
//!    the start of their domains, with `v` replaced by `B_red[s, 0]`: the
//!    init (when the reduction starts here) and one update; every thread
//!    does when `C` is local (each thread's own copy). The parts of `B`'s
//!    predicate that speak of the reduced loops are left to step 1, as is
//!    a condition around the whole update (`if g: C[i] = C[i] op v`, as
//!    `rfactor` guards a partial block whose split does not divide).
//!
//! Each copy is an ordinary loop nest: run as written, with thread loops as
//! plain loops, it computes what `B` did; once `extract_launch` merges the
//! copies under one launch, `insert_barriers` puts a barrier between the
//! steps.
//!
//! Through warp shuffles instead, as TVM lowers it, where T is one loop
//! bound to `threadIdx.x` of a power of two of threads that is the whole
//! of `blockDim.x`, the output is not local, and no condition stands
//! around the chain (every lane of a warp must reach each shuffle):
//! step 1 ends with shuffles down (`T.tvm_warp_shuffle_down`) by 16, 8, ..
//! 1 within each warp's segment of T's threads, and where T fits in a warp
//! its first thread writes the total right there (no shared memory, no
//! barrier). Where T spans W warps, each warp's first lane puts its total
//! in `B_red[s, w]`; a second copy of the chain has the first W threads
//! take them (the others the identity), shuffle them, and the first write
//! the total: one barrier. Between this pass and `extract_launch` such a
//! function runs only with its threads in lockstep: the simulator makes
//! its thread loops a launch first.
//!
//! Runs first, on blocks. Refused, with the reason: a reduction over
//! `blockIdx` (blocks cannot combine their results without a second
//! kernel), a reduction whose thread loops are not nested directly, an
//! update of another form, a block that shares the chain with other
//! statements, an output that depends on a thread loop of T, an `if`
//! between the chain and the block's own loops (it would guard step 1
//! only), or a loop around the block whose trip count depends on a thread.

use crate::arith::{all_of, conjuncts, Analyzer};
use crate::common::reduction::reducer;
use tirc_ir::region::infer_block_regions;
use tirc_ir::subst::{substitute, substitute_stmt};
use tirc_ir::{
    BinOp, BlockRealize, Buffer, Diagnostic, Expr, For, ForKind, Intrinsic, IterKind, PrimFunc, Scope, Stmt, Var,
};

pub fn run(mut f: PrimFunc) -> Result<PrimFunc, Diagnostic> {
    let mut names = Vec::new();
    for r in f.body.blocks() {
        let path = f.body.loops_above(&r.block.name).unwrap_or_default();
        let reduces_over = |l: &For| {
            r.block.iter_vars.iter().zip(&r.iter_values).any(|(iv, v)| iv.kind == IterKind::Reduce && v.uses(&l.var))
        };
        for l in &path {
            if let ForKind::ThreadBinding(t) = l.kind {
                if reduces_over(l) {
                    if t.is_block {
                        return Err(Diagnostic::new(format!(
                            "block `{}` reduces over loop `{}`, bound to {}: thread blocks cannot combine their partial results in one kernel",
                            r.block.name,
                            l.var.name(),
                            t.name()
                        ))
                        .help("bind the reduction loop to threadIdx, or keep it serial")
                        .or_at_ir(l.span, "this loop"));
                    }
                    names.push(r.block.name.clone());
                    break;
                }
            }
        }
    }
    for name in names {
        let span = f.body.find_block(&name).and_then(|r| r.block.span);
        f.body = lower_one(&f.body, &name).map_err(|e| e.or_at_ir(span, "this block"))?;
    }
    Ok(f)
}

/// A loop variable and the expression that replaces it.
type VarMap = (Var, Expr);

/// `∑ (v - min) * stride` over `loops`, the first slowest: a loop nest's
/// place, counted from 0.
fn linear(loops: &[(Var, Expr, i64)]) -> Expr {
    let mut e = Expr::int(0);
    for (v, min, ext) in loops {
        e = e * Expr::int(*ext) + (Expr::var(v) - min.clone());
    }
    Analyzer::new().simplify(&e)
}

fn lower_one(root: &Stmt, name: &str) -> Result<Stmt, Diagnostic> {
    let err = |m: String| Diagnostic::new(format!("cross-thread reduction of block `{name}`: {m}"));
    let path = root.loops_above(name).unwrap_or_default();
    let r = root.blocks().into_iter().find(|r| r.block.name == name).cloned().ok_or_else(|| err("not found".into()))?;
    // An update under a condition of its own (`rfactor`'s partial block,
    // whose reduction a split does not divide, guards its update in the
    // body so that every partial result is initialized): each thread
    // accumulates only where it holds, in step 1.
    // (A guard that reads memory, the output's partial value say, is not
    // such a condition.)
    let reads_memory = |e: &Expr| {
        let mut found = false;
        e.walk(&mut |x| found |= matches!(x, Expr::Load(..) | Expr::Call(..)));
        found
    };
    let (update_body, guard) = match &r.block.body {
        Stmt::If { cond, then, orelse: None } if !reads_memory(cond) => (&**then, Some(cond.clone())),
        body => (body, None),
    };
    let red_r = reducer(update_body, r.block.init.as_ref()).ok_or_else(|| {
        err("its update is not `C[..] = C[..] op v` with op one of + * min max (or several such, each of its own buffer and reading none of the others), nor a selection of one partial result as an argmax's (`Select(cond, C[..], v)` for every output, the init constants)".into())
    })?;
    let outs: Vec<&Buffer> = red_r.outs.iter().map(|(b, _)| b).collect();
    let locals = outs.iter().filter(|b| b.scope() == Scope::Local).count();
    if locals != 0 && locals != outs.len() {
        return Err(err("some of its outputs are local and some are not: split it into one block each".into()));
    }
    let reduce_uses =
        |v: &Var| r.block.iter_vars.iter().zip(&r.iter_values).any(|(iv, e)| iv.kind == IterKind::Reduce && e.uses(v));
    let is_thread = |l: &For| matches!(l.kind, ForKind::ThreadBinding(t) if !t.is_block);
    let lo =
        path.iter().position(|l| is_thread(l) && reduce_uses(&l.var)).ok_or_else(|| err("no thread loop".into()))?;
    let hi = lo + path[lo..].iter().take_while(|l| is_thread(l)).count();
    let chain = &path[lo..hi];
    let inner = &path[hi..];
    if inner.iter().chain(&path[..lo]).any(|l| is_thread(l) && reduce_uses(&l.var)) {
        return Err(err("its thread-bound reduction loops must be nested directly in one another".into()));
    }
    // Other statements in the chain (an rfactor's partial block before
    // the total, placed there by reverse_compute_at) run in step 1 as
    // before; they must not touch the output, whose total exists only after
    // step 3.
    let mut touches = false;
    let others = chain[0].body.rewrite(&mut |x| match x {
        Stmt::Block(b) if b.block.name == name => Some(Stmt::seq(vec![])),
        _ => None,
    });
    others.walk(&mut |x| {
        if let Stmt::Store { buffer, .. } = x {
            touches |= outs.contains(&buffer);
        }
        x.for_each_expr(|e| e.walk(&mut |y| touches |= matches!(y, Expr::Load(lb, _) if outs.contains(&lb))));
    });
    if touches {
        return Err(err(
            "other statements in the loops bound to its threads use its output, which holds the total only after the threads combine their parts".into(),
        ));
    }
    // What stands between the function's top and the block: the threads
    // combine their parts in copies of the chain, outside anything inside
    // it, so a condition there would guard their own part only; and a loop
    // whose trip count depends on the thread would have the threads of a
    // block meet at its barriers (or shuffles) a different number of times.
    let way = way_to(root, name, &chain[0].var);
    match way.obstacle {
        Some(Obstacle::Inside) => {
            return Err(err("an `if` stands between its thread-bound loops and it: the threads combine their parts outside it".into())
                .help("write the condition as the block's predicate (T.where), or around the thread-bound loops"))
        }
        Some(Obstacle::ThreadTrips(v)) => {
            return Err(err(format!(
                "it sits in loop `{}`, whose trip count depends on the thread: the threads of a block would combine their parts a different number of times",
                v.name()
            )))
        }
        None => {}
    }
    let konst = |l: &For| -> Result<(Var, Expr, i64), Diagnostic> {
        let e = l.extent.as_int().ok_or_else(|| err(format!("loop `{}` has no constant extent", l.var.name())))?;
        Ok((l.var.clone(), l.min.clone(), e))
    };
    let t_loops: Vec<(Var, Expr, i64)> =
        chain.iter().copied().filter(|l| reduce_uses(&l.var)).map(konst).collect::<Result<_, _>>()?;
    // Every other thread loop around the block reduces separately.
    let s_loops: Vec<(Var, Expr, i64)> = path[..hi]
        .iter()
        .copied()
        .filter(|l| is_thread(l) && !reduce_uses(&l.var))
        .map(konst)
        .collect::<Result<_, _>>()?;
    let n_t: i64 = t_loops.iter().map(|x| x.2).product();
    let n_s: i64 = s_loops.iter().map(|x| x.2).product();
    let shuffled = locals == 0 && !way.guarded && by_shuffles(root, chain, &t_loops);
    // Through shuffles, the first combine the threads of each warp; where a
    // group spans several warps, one partial result a warp goes through
    // shared memory to the first warp of the group, which shuffles again.
    let warps = if shuffled { (n_t / 32).max(1) } else { 1 };
    // (A loop of one iteration is a constant: `reverse_compute_at` leaves
    // the block's own loops so.)
    let below: Vec<&Var> = chain
        .iter()
        .chain(inner)
        .filter(|l| (reduce_uses(&l.var) || !is_thread(l)) && l.extent.as_int() != Some(1))
        .map(|l| &l.var)
        .collect();
    for (iv, e) in r.block.iter_vars.iter().zip(&r.iter_values) {
        if iv.kind == IterKind::Spatial && below.iter().any(|x| e.uses(x)) {
            return Err(err(format!(
                "its spatial variable `{}` depends on a loop inside the reduction",
                iv.var.name()
            )));
        }
    }
    // One shared array and one accumulator a component (`_red`, `_acc`,
    // numbered when there are several).
    let suffix = |c: usize| if outs.len() == 1 { String::new() } else { c.to_string() };
    let red: Vec<Buffer> = outs
        .iter()
        .enumerate()
        .map(|(c, b)| {
            let n = if shuffled { n_s * warps } else { n_s * n_t };
            Buffer::new(format!("{name}_red{}", suffix(c)), b.dtype(), vec![Expr::int(n)], Scope::Shared)
        })
        .collect();
    let acc: Vec<Buffer> = outs
        .iter()
        .enumerate()
        .map(|(c, b)| Buffer::new(format!("{name}_acc{}", suffix(c)), b.dtype(), vec![Expr::int(1)], Scope::Local))
        .collect();
    let acc_at: Vec<(Buffer, Vec<Expr>)> = acc.iter().map(|a| (a.clone(), vec![Expr::int(0)])).collect();
    let acc_loads: Vec<Expr> = acc_at.iter().map(|(a, i)| Expr::Load(a.clone(), i.clone())).collect();

    // A fresh copy of the chain's loops around `body`; returns it and the
    // map from old loop variables to new.
    let copy_chain = |suffix: &str, body: &dyn Fn(&[VarMap]) -> Stmt| -> Stmt {
        let map: Vec<(Var, Expr)> = chain
            .iter()
            .map(|l| (l.var.clone(), Expr::var(&l.var.renamed(format!("{}_{suffix}", l.var.name())))))
            .collect();
        let mut s = body(&map);
        for l in chain.iter().rev() {
            let Some((_, Expr::Var(nv))) = map.iter().find(|(o, _)| *o == l.var) else { continue };
            s = Stmt::For(Box::new(For {
                var: nv.clone(),
                min: substitute(&l.min, &map),
                extent: l.extent.clone(),
                kind: l.kind,
                annotations: vec![],
                body: s,
                span: l.span,
            }));
        }
        s
    };
    let place = |map: &[(Var, Expr)]| {
        let t = substitute(&linear(&t_loops), map);
        let s = substitute(&linear(&s_loops), map);
        (Analyzer::new().simplify(&(s * Expr::int(n_t))), t)
    };

    // 1. The partial result of each thread.
    let mut b1 = r.block.clone();
    b1.name = format!("{name}_in_thread");
    b1.init = None;
    // Its own block variables: the write-back block keeps the original ones.
    let fresh: Vec<(Var, Expr)> =
        b1.iter_vars.iter().map(|iv| (iv.var.clone(), Expr::var(&iv.var.renamed(iv.var.name())))).collect();
    for (iv, (_, nv)) in b1.iter_vars.iter_mut().zip(&fresh) {
        if let Expr::Var(nv) = nv {
            iv.var = nv.clone();
        }
    }
    let mut update = red_r.assign(&acc_at, red_r.apply(&acc_loads, &red_r.elems), &format!("{name}_in"));
    if let Some(g) = &guard {
        update = Stmt::if_then(g.clone(), update);
    }
    b1.body = substitute_stmt(&update, &fresh);
    let (reads, writes) = infer_block_regions(&b1);
    b1.reads = reads;
    b1.writes = writes;
    // The loops below the chain around the block (with whatever else they
    // hold), the block replaced by its in-thread part.
    let in_thread = Stmt::Block(Box::new(BlockRealize { block: b1, ..r.clone() }));
    let swap = |s: &Stmt| {
        s.rewrite(&mut |x| match x {
            Stmt::Block(b) if b.block.name == name => Some(in_thread.clone()),
            _ => None,
        })
    };
    let inner_stmt = match inner.first() {
        Some(l) => swap(&Stmt::For(Box::new((*l).clone()))),
        None => in_thread.clone(),
    };
    let identity_map: Vec<(Var, Expr)> = vec![];

    // 3. (written first, since the shuffles' step 1 ends with it) One
    // thread writes the total, `totals`, through the block itself.
    let write_total = |map: &[(Var, Expr)], totals: Vec<Expr>| -> Stmt {
        let (_, t) = place(map);
        // Reduction loops inside the chain, at their first iteration.
        let mut at_start: Vec<(Var, Expr)> = map.to_vec();
        for l in chain.iter().filter(|l| reduce_uses(&l.var)).chain(inner) {
            at_start.retain(|(x, _)| *x != l.var);
            at_start.push((l.var.clone(), substitute(&l.min, map)));
        }
        let an = Analyzer::new();
        let mut b = r.clone();
        b.block.alloc_buffers.clear();
        b.iter_values = r.iter_values.iter().map(|e| an.simplify(&substitute(e, &at_start))).collect();
        // The predicate's parts that speak of the reduced loops were the
        // threads' own (phase 1 applied them; a thread whose part is all
        // masked holds the identity): the total is written whatever they
        // say of the first iteration. The others (a spatial bound, of an
        // inner loop of one iteration too) guard the write.
        let reduced: Vec<&Var> = chain.iter().chain(inner).filter(|l| reduce_uses(&l.var)).map(|l| &l.var).collect();
        let kept = conjuncts(&r.predicate).into_iter().filter(|c| !reduced.iter().any(|v| c.uses(v)));
        b.predicate = an.simplify(&substitute(&all_of(kept), &at_start));
        let current: Vec<Expr> = red_r.outs.iter().map(|(o, i)| Expr::Load(o.clone(), i.clone())).collect();
        b.block.body = red_r.assign(&red_r.outs, red_r.apply(&current, &totals), &format!("{name}_w"));
        let (reads, writes) = infer_block_regions(&b.block);
        b.block.reads = reads;
        b.block.writes = writes;
        // A local output is each thread's own: every thread takes the
        // total. Any other is written once.
        if locals != 0 {
            Stmt::Block(Box::new(b))
        } else {
            Stmt::if_then(Expr::binary(BinOp::Eq, t, Expr::int(0)), Stmt::Block(Box::new(b)))
        }
    };
    // Shuffles down by `width / 2`, .., 1 of the accumulators `accs`: the
    // first lane of each segment of `width` ends with its total. Each
    // partial result from above lands in a buffer of its own first, so that
    // a selection's branches do not each shuffle (a shuffle is the whole
    // warp's).
    let shuffles = |accs: &[Buffer], width: i64, tag: &str| -> Stmt {
        let at: Vec<(Buffer, Vec<Expr>)> = accs.iter().map(|a| (a.clone(), vec![Expr::int(0)])).collect();
        let loads: Vec<Expr> = at.iter().map(|(a, i)| Expr::Load(a.clone(), i.clone())).collect();
        let above: Vec<Buffer> = accs
            .iter()
            .map(|a| Buffer::new(format!("{}_up", a.name()), a.dtype(), vec![Expr::int(1)], Scope::Local))
            .collect();
        let above_loads: Vec<Expr> = above.iter().map(|a| Expr::Load(a.clone(), vec![Expr::int(0)])).collect();
        let mut steps = Vec::new();
        let mut h = width / 2;
        while h >= 1 {
            for (u, l) in above.iter().zip(&loads) {
                steps.push(Stmt::Store {
                    buffer: u.clone(),
                    indices: vec![Expr::int(0)],
                    value: Expr::Call(Intrinsic::WarpShuffleDown, vec![l.clone(), Expr::int(h), Expr::int(width)]),
                });
            }
            steps.push(red_r.assign(&at, red_r.apply(&loads, &above_loads), &format!("{name}_{tag}{h}")));
            h /= 2;
        }
        let mut s = Stmt::seq(steps);
        for u in above.iter().rev() {
            s = Stmt::Allocate { buffer: u.clone(), body: Box::new(s) };
        }
        s
    };
    let (base, t) = place(&identity_map);
    let mut phase1_body: Vec<Stmt> = acc_at
        .iter()
        .zip(&red_r.start)
        .map(|((a, i), v)| Stmt::Store { buffer: a.clone(), indices: i.clone(), value: v.clone() })
        .collect();
    phase1_body.push(inner_stmt);
    if !shuffled {
        let at_thread = Analyzer::new().simplify(&(base + t));
        phase1_body.extend(red.iter().zip(&acc_loads).map(|(rb, a)| Stmt::Store {
            buffer: rb.clone(),
            indices: vec![at_thread.clone()],
            value: a.clone(),
        }));
    } else if warps == 1 {
        phase1_body.push(shuffles(&acc, n_t, "sh"));
        phase1_body.push(write_total(&identity_map, acc_loads.clone()));
    } else {
        // Each warp's first lane hands its warp's total on.
        phase1_body.push(shuffles(&acc, 32, "sh"));
        let s_base = substitute(&linear(&s_loops), &identity_map) * Expr::int(warps);
        let at_warp = Analyzer::new().simplify(&(s_base + Expr::binary(BinOp::FloorDiv, t.clone(), Expr::int(32))));
        let hand_on: Vec<Stmt> = red
            .iter()
            .zip(&acc_loads)
            .map(|(rb, a)| Stmt::Store { buffer: rb.clone(), indices: vec![at_warp.clone()], value: a.clone() })
            .collect();
        let first_lane = Expr::binary(BinOp::Eq, Expr::binary(BinOp::FloorMod, t.clone(), Expr::int(32)), Expr::int(0));
        phase1_body.push(Stmt::if_then(first_lane, Stmt::seq(hand_on)));
    }
    let mut phase1 = Stmt::seq(phase1_body);
    for a in acc.iter().rev() {
        phase1 = Stmt::Allocate { buffer: a.clone(), body: Box::new(phase1) };
    }
    // Step 1 is the chain as it was, that subtree replaced.
    let top_loop = inner.first().map(|l| l.var.clone());
    let phase1_loops = Stmt::For(Box::new(chain[0].clone())).rewrite(&mut |x| match x {
        Stmt::For(l) if Some(&l.var) == top_loop.as_ref() => Some(phase1.clone()),
        Stmt::Block(b) if top_loop.is_none() && b.block.name == name => Some(phase1.clone()),
        _ => None,
    });
    let mut phases = vec![phase1_loops];

    if shuffled && warps > 1 {
        // 2'. The first `warps` threads of each group take the warps'
        // totals (the others the identity) and shuffle them; the first
        // writes the total.
        phases.push(copy_chain("w", &|map| {
            let (_, t) = place(map);
            let s_base = substitute(&linear(&s_loops), map) * Expr::int(warps);
            let at = Analyzer::new().simplify(&(s_base + t.clone()));
            let accs: Vec<Buffer> = acc
                .iter()
                .map(|a| Buffer::new(format!("{}_w", a.name()), a.dtype(), vec![Expr::int(1)], Scope::Local))
                .collect();
            let store = |vals: Vec<Expr>| {
                Stmt::seq(
                    accs.iter()
                        .zip(vals)
                        .map(|(a, value)| Stmt::Store { buffer: a.clone(), indices: vec![Expr::int(0)], value })
                        .collect(),
                )
            };
            let take = Stmt::If {
                cond: Expr::binary(BinOp::Lt, t.clone(), Expr::int(warps)),
                then: Box::new(store(red.iter().map(|rb| Expr::Load(rb.clone(), vec![at.clone()])).collect())),
                orelse: Some(Box::new(store(red_r.start.clone()))),
            };
            let totals = accs.iter().map(|a| Expr::Load(a.clone(), vec![Expr::int(0)])).collect();
            let mut s = Stmt::seq(vec![take, shuffles(&accs, warps, "shw"), write_total(map, totals)]);
            for a in accs.iter().rev() {
                s = Stmt::Allocate { buffer: a.clone(), body: Box::new(s) };
            }
            s
        }));
    } else if !shuffled {
        // 2. Halving: the lower `m / 2` threads add the values `ceil(m / 2)`
        // above them.
        let mut m = n_t;
        let mut step = 0;
        while m > 1 {
            let (half, up) = (m / 2, (m + 1) / 2);
            phases.push(copy_chain(&format!("s{step}"), &|map| {
                let (base, t) = place(map);
                let at = |k: Expr| Analyzer::new().simplify(&(base.clone() + k));
                let loads = |k: Expr| -> Vec<Expr> {
                    red.iter().map(|rb| Expr::Load(rb.clone(), vec![at(k.clone())])).collect()
                };
                let targets: Vec<(Buffer, Vec<Expr>)> =
                    red.iter().map(|rb| (rb.clone(), vec![at(t.clone())])).collect();
                let values = red_r.apply(&loads(t.clone()), &loads(t.clone() + Expr::int(up)));
                let step_stmt = red_r.assign(&targets, values, &format!("{name}_s{step}"));
                Stmt::if_then(Expr::binary(BinOp::Lt, t.clone(), Expr::int(half)), step_stmt)
            }));
            m = up;
            step += 1;
        }
        // 3. One thread writes the total.
        phases.push(copy_chain("w", &|map| {
            let (base, _) = place(map);
            write_total(map, red.iter().map(|rb| Expr::Load(rb.clone(), vec![base.clone()])).collect())
        }));
    }
    let mut replacement = Stmt::seq(phases);
    // (Through shuffles within one warp, no shared memory at all.)
    for rb in red.iter().rev().filter(|_| !shuffled || warps > 1) {
        replacement = Stmt::Allocate { buffer: rb.clone(), body: Box::new(replacement) };
    }
    let head = chain[0].var.clone();
    Ok(root.rewrite(&mut |s| match s {
        Stmt::For(l) if l.var == head => Some(replacement.clone()),
        _ => None,
    }))
}

/// Whether the threads of the reduction can combine their parts through
/// warp shuffles: they are the one loop of the chain bound to
/// `threadIdx.x`, a power of two of them, the whole of `blockDim.x`
/// (every loop bound to a thread axis in the function has that axis's one
/// extent, so no thread is left out by a guard of its axis), in groups of
/// consecutive lanes that either fit in a warp or are whole warps. (And no
/// condition may stand above the chain, so that every lane of a warp
/// reaches each shuffle: `Way::guarded`.)
fn by_shuffles(root: &Stmt, chain: &[&For], t_loops: &[(Var, Expr, i64)]) -> bool {
    let [(tv, _, n)] = t_loops else { return false };
    let Some(l) = chain.iter().find(|l| l.var == *tv) else { return false };
    if !matches!(l.kind, ForKind::ThreadBinding(t) if !t.is_block && t.dim == 0) || *n < 2 || n & (n - 1) != 0 {
        return false;
    }
    let mut extents: [Option<i64>; 3] = [None; 3];
    let mut uniform = true;
    root.walk(&mut |s| {
        if let Stmt::For(f) = s {
            if let ForKind::ThreadBinding(t) = f.kind {
                if !t.is_block {
                    let e = f.extent.as_int();
                    let d = &mut extents[t.dim as usize];
                    uniform &= e.is_some() && d.is_none_or(|x| Some(x) == e);
                    *d = e;
                }
            }
        }
    });
    uniform && extents[0] == Some(*n)
}

/// What no lowering of a reduction across threads can keep on the way to
/// its block: an `if` (or a block with a predicate) inside the chain above
/// the loops below it, or a loop whose bounds depend on a thread index.
enum Obstacle {
    Inside,
    ThreadTrips(Var),
}

/// The way from the top of `root` to block `name`, the chain's first loop
/// `head` on it.
struct Way {
    /// A condition (an `if`, a block's predicate) stands above the chain.
    guarded: bool,
    /// The innermost obstacle.
    obstacle: Option<Obstacle>,
}

fn way_to(root: &Stmt, name: &str, head: &Var) -> Way {
    // `passed`: below `head`; `inside`: inside the chain, from `head` to the
    // first loop not bound to a thread (step 1's own loops, in which a
    // condition guards each thread's part only). `None` where the block is
    // not below `s`.
    fn walk(s: &Stmt, name: &str, head: &Var, (passed, inside): (bool, bool), threads: &mut Vec<Var>) -> Option<Way> {
        // A condition on the way, once the way below it is known.
        let conditional = |w: Way| Way {
            guarded: w.guarded || !passed,
            obstacle: w.obstacle.or_else(|| inside.then_some(Obstacle::Inside)),
        };
        match s {
            Stmt::Block(b) if b.block.name == name => Some(Way { guarded: false, obstacle: None }),
            Stmt::For(l) => {
                let bound = matches!(l.kind, ForKind::ThreadBinding(t) if !t.is_block);
                if bound {
                    threads.push(l.var.clone());
                }
                let at = (passed || l.var == *head, l.var == *head || inside && bound);
                let found = walk(&l.body, name, head, at, threads);
                if bound {
                    threads.pop();
                }
                let by_thread = threads.iter().any(|t| l.min.uses(t) || l.extent.uses(t));
                found.map(|w| Way {
                    obstacle: w.obstacle.or_else(|| by_thread.then(|| Obstacle::ThreadTrips(l.var.clone()))),
                    ..w
                })
            }
            Stmt::If { then, orelse, .. } => walk(then, name, head, (passed, inside), threads)
                .or_else(|| orelse.as_deref().and_then(|o| walk(o, name, head, (passed, inside), threads)))
                .map(conditional),
            Stmt::Block(b) => {
                let w = b
                    .block
                    .init
                    .as_ref()
                    .and_then(|i| walk(i, name, head, (passed, inside), threads))
                    .or_else(|| walk(&b.block.body, name, head, (passed, inside), threads));
                if b.predicate.as_bool() == Some(true) {
                    w
                } else {
                    w.map(conditional)
                }
            }
            Stmt::Seq(v) => v.iter().find_map(|x| walk(x, name, head, (passed, inside), threads)),
            Stmt::Let { body, .. } | Stmt::Allocate { body, .. } => walk(body, name, head, (passed, inside), threads),
            _ => None,
        }
    }
    walk(root, name, head, (false, false), &mut Vec::new()).unwrap_or(Way { guarded: true, obstacle: None })
}
