//! `loop_partition`: conditions that hold on most of a loop's range are
//! tested only where they can fail.
//!
//! A partial tile at the edge of a shape guards its loads, stores and
//! multiply-adds with `if` and `T.if_then_else` conditions (`by * 64 + ty *
//! 8 + i < 4097`). In all tiles but the last, every such test is true, yet
//! the kernel evaluates it in the innermost loop, and a guarded copy can no
//! longer be one vector access. This pass (TVM's `LoopPartition`) finds, for
//! a variable `v` over `[lo, hi]`, the subrange `[l, u]` on which the range
//! analysis proves the conditions that depend on `v`, and:
//!
//! - for a `blockIdx` launch, branches once at the top of the kernel:
//!   `if l <= v <= u` runs the body simplified under that range (the interior
//!   tiles, no test left), else the body as it was (the boundary tiles); the
//!   condition is uniform over the threads of a block, so barriers inside
//!   either branch stay legal; allocations stay above the branch, so shared
//!   memory is not doubled;
//! - for a serial loop with constant bounds, splits it into up to three
//!   loops over `[lo, l)`, `[l, u]` and `(u, hi]`, run in that order, the
//!   middle one simplified;
//! - for a serial loop of run-time extent `E` (the tiles of a reduction of
//!   run-time length), peels its last iteration where that decides a
//!   condition: the loop over the first `E - 1` iterations, simplified
//!   with its end known (every tile whole), then the last one with its
//!   tests (`peel_last`).
//!
//! A condition is partitioned on when it is proved at one end of the range
//! and not at the other (a bound on `v` from above or below); the subrange
//! is found by bisection with the analyzer, so it is exact for the affine
//! and floor-division indices the schedule primitives produce. Conditions
//! that depend on two launch indices at once, or that the analyzer cannot
//! decide on any subrange, stay as they are, and so does a loop whose
//! interior would be empty. Each iteration runs the same statements in
//! the same order as before, so the result is the same.
//!
//! A warp-specialized loop (`warp_specialize`) is not split; loops inside
//! it are.
//!
//! Code size: each partitioned launch doubles the kernel body, each
//! partitioned loop repeats its body once or twice (a one-iteration part
//! becomes straight-line code). Unrolled and vectorized loops are not split:
//! their copies are folded by the CUDA compiler once the interior is known.

use crate::arith::{conjuncts, Analyzer};
use crate::transform::simplify;
use tirc_ir::structural_eq::same_expr;
use tirc_ir::subst::{fresh_binders, substitute_stmt};
use tirc_ir::{BinOp, Diagnostic, Expr, For, ForKind, PrimFunc, Stmt, Var};

pub fn run(mut f: PrimFunc) -> Result<PrimFunc, Diagnostic> {
    let mut an = Analyzer::new();
    an.bind_sizes(&f.sizes);
    let mut k = Kernel { blocks: Vec::new(), sized_blocks: Vec::new(), sizes: f.sizes.clone() };
    f.body = kernel(&f.body, &mut an, &mut k);
    Ok(f)
}

/// What the launch head says about the kernel.
struct Kernel {
    /// Block indices of constant extent.
    blocks: Vec<(Var, i64)>,
    /// Block indices whose extent is an expression of the run-time sizes.
    sized_blocks: Vec<Var>,
    sizes: Vec<Var>,
}

/// Walks the launch head (launches and allocations), then specializes the
/// body on the block indices and partitions its loops.
fn kernel(s: &Stmt, an: &mut Analyzer, k: &mut Kernel) -> Stmt {
    match s {
        Stmt::Launch { var, tag, extent, body } => {
            an.bind_launch(var, extent);
            if tag.is_block {
                match extent.as_int() {
                    Some(e) => k.blocks.push((var.clone(), e)),
                    None => k.sized_blocks.push(var.clone()),
                }
            }
            let body = kernel(body, an, k);
            an.unbind(var);
            Stmt::Launch { var: var.clone(), tag: *tag, extent: extent.clone(), body: Box::new(body) }
        }
        Stmt::Allocate { buffer, body } => {
            Stmt::Allocate { buffer: buffer.clone(), body: Box::new(kernel(body, an, k)) }
        }
        _ => {
            let blocks = &k.blocks;
            let mut interior = an.clone();
            let mut guard = Vec::new();
            // A grid of run-time size: the interior is where each bound of a
            // block index by the sizes holds for every thread and loop
            // iteration (`blockIdx_y * 64 + 64 <= m`), assumed inside.
            for v in &k.sized_blocks {
                let keep = |x: &Var| x == v || k.sizes.contains(x);
                for a in atoms(s, an) {
                    if !a.cond.uses(v) || !k.sizes.iter().any(|z| a.cond.uses(z)) {
                        continue;
                    }
                    let Some(g) = a.ranges.condition_for_all(&a.cond, &keep) else { continue };
                    // Only bounds of `v` from above: the blocks past the
                    // size's end are the boundary, the others the interior.
                    if !bounds_from_above(&g, v) || guard.iter().any(|x| same_expr(x, &g)) {
                        continue;
                    }
                    interior.assume(&g);
                    guard.push(g);
                }
            }
            for (v, extent) in blocks.iter() {
                let found = atoms(s, an);
                if let Some((l, u)) = subrange(v, 0, extent - 1, &found) {
                    interior.bind(v, l, u);
                    if l > 0 {
                        guard.push(Expr::binary(BinOp::Ge, Expr::var(v), Expr::int(l)));
                    }
                    if u < extent - 1 {
                        guard.push(Expr::binary(BinOp::Le, Expr::var(v), Expr::int(u)));
                    }
                }
            }
            let boundary = partition(s, an);
            if guard.is_empty() {
                return boundary;
            }
            // The interior is a copy of the body: its loops get variables of
            // their own, so that each variable keeps one binder.
            let inside = fresh_binders(&simplify::stmt(s, &mut interior));
            let inside = partition(&inside, &mut interior);
            let cond = guard.into_iter().reduce(Expr::and).expect("a guard");
            Stmt::If { cond, then: Box::new(inside), orelse: Some(Box::new(boundary)) }
        }
    }
}

/// Whether `g`, a condition `lhs <= rhs` from `condition_for_all`, bounds
/// `v` from above: `v` on its left side, with a positive coefficient.
fn bounds_from_above(g: &Expr, v: &Var) -> bool {
    match g {
        Expr::Binary(BinOp::Le, lhs, rhs) => lhs.uses(v) && !rhs.uses(v),
        _ => false,
    }
}

/// Splits the serial loops of `s` (and of its parts) at the ends of the
/// subranges found for their variables.
fn partition(s: &Stmt, an: &mut Analyzer) -> Stmt {
    match s {
        // A warp-specialized loop stays one loop: its producer and its
        // consumers pace each other by its iterations.
        Stmt::For(l) if l.kind == ForKind::Serial && tirc_ir::launch::warp_specialized(l).is_none() => {
            let (Some(min), Some(extent)) = (l.min.as_int(), l.extent.as_int()) else {
                return peel_last(l, an).unwrap_or_else(|| descend(s, an));
            };
            let (lo, hi) = (min, min + extent - 1);
            an.bind(&l.var, lo, hi);
            let found = atoms(&l.body, an);
            an.unbind(&l.var);
            let Some((a, b)) = subrange(&l.var, lo, hi, &found) else {
                return descend(s, an);
            };
            let part = |from: i64, to: i64| {
                let mut p = (**l).clone();
                p.min = Expr::int(from);
                p.extent = Expr::int(to - from + 1);
                Stmt::For(Box::new(p))
            };
            let mut parts = Vec::new();
            if a > lo {
                parts.push(part(lo, a - 1));
            }
            parts.push(part(a, b));
            if b < hi {
                parts.push(part(b + 1, hi));
            }
            // Each part is simplified under its own range, then its inner
            // loops are partitioned in turn.
            // Each part after the first is a copy: fresh loop variables.
            Stmt::seq(
                parts
                    .iter()
                    .enumerate()
                    .map(|(i, p)| {
                        let p = if i == 0 { p.clone() } else { fresh_binders(p) };
                        descend(&simplify::stmt(&p, an), an)
                    })
                    .collect(),
            )
        }
        _ => descend(s, an),
    }
}

/// A serial loop of run-time extent `E` (the tiles of a reduction of
/// run-time length) whose body tests a condition that holds on every
/// iteration but the last (`r * 32 + j < k`: all tiles are whole but the
/// last): the loop over the first `E - 1` iterations, simplified with that
/// range known, then the last iteration written out with its tests. `None`
/// where no condition is decided by leaving out the last iteration.
fn peel_last(l: &For, an: &mut Analyzer) -> Option<Stmt> {
    // The last iteration is computed from the extent after the loop has
    // run: an extent that reads memory the body may write is left alone.
    if l.min.as_int().is_none() || l.extent.has_load() {
        return None;
    }
    let one_less = l.extent.clone() - Expr::int(1);
    let undecided = |an: &mut Analyzer, extent: &Expr| {
        an.bind_range(&l.var, &l.min, extent);
        let n = atoms(&l.body, an).iter().filter(|a| a.cond.uses(&l.var)).count();
        an.unbind(&l.var);
        n
    };
    if undecided(an, &one_less) >= undecided(an, &l.extent) {
        return None;
    }
    let mut head = (*l).clone();
    head.extent = one_less.clone();
    let head = descend(&simplify::stmt(&Stmt::For(Box::new(head)), an), an);
    let last = substitute_stmt(&l.body, &[(l.var.clone(), l.min.clone() + one_less)]);
    let mut last = descend(&simplify::stmt(&fresh_binders(&last), an), an);
    // With no iteration at all, there is no last one to run.
    if an.bound(&l.extent).is_none_or(|(lo, _)| lo < 1) {
        last = Stmt::if_then(Expr::binary(BinOp::Lt, Expr::int(0), l.extent.clone()), last);
    }
    Some(Stmt::seq(vec![head, last]))
}

/// Partitions the children of `s` with the ranges of its variables known.
fn descend(s: &Stmt, an: &mut Analyzer) -> Stmt {
    match s {
        Stmt::For(l) => {
            an.bind_range(&l.var, &l.min, &l.extent);
            let body = partition(&l.body, an);
            an.unbind(&l.var);
            Stmt::For(Box::new(For { body, ..(**l).clone() }))
        }
        Stmt::Let { var, value, body } => {
            if let Some((lo, hi)) = an.bound(value) {
                an.bind(var, lo, hi);
            }
            let body = partition(body, an);
            an.unbind(var);
            Stmt::Let { var: var.clone(), value: value.clone(), body: Box::new(body) }
        }
        Stmt::Launch { var, extent, .. } => {
            an.bind_launch(var, extent);
            let out = s.map_children(|c| partition(c, an));
            an.unbind(var);
            out
        }
        _ => s.map_children(|c| partition(c, an)),
    }
}

/// A condition found in a statement, with the ranges known where it is.
struct Atom {
    cond: Expr,
    ranges: Analyzer,
}

/// The undecided `and`-ed parts of every `if` and `T.if_then_else`
/// condition in `s`.
fn atoms(s: &Stmt, an: &mut Analyzer) -> Vec<Atom> {
    let mut out = Vec::new();
    collect(s, an, &mut out);
    out
}

fn collect(s: &Stmt, an: &mut Analyzer, out: &mut Vec<Atom>) {
    let from_expr = |e: &Expr, an: &Analyzer, out: &mut Vec<Atom>| {
        e.walk(&mut |x| {
            if let Expr::Select(c, _, _) = x {
                push_atoms(c, an, out);
            }
        })
    };
    match s {
        Stmt::For(l) => {
            an.bind_range(&l.var, &l.min, &l.extent);
            collect(&l.body, an, out);
            an.unbind(&l.var);
        }
        Stmt::Let { var, value, body } => {
            from_expr(value, an, out);
            if let Some((lo, hi)) = an.bound(value) {
                an.bind(var, lo, hi);
            }
            collect(body, an, out);
            an.unbind(var);
        }
        Stmt::Launch { var, extent, body, .. } => {
            an.bind_launch(var, extent);
            collect(body, an, out);
            an.unbind(var);
        }
        Stmt::If { cond, then, orelse } => {
            push_atoms(cond, an, out);
            from_expr(cond, an, out);
            collect(then, an, out);
            if let Some(e) = orelse {
                collect(e, an, out);
            }
        }
        Stmt::Store { indices, value, .. } => {
            for i in indices {
                from_expr(i, an, out);
            }
            from_expr(value, an, out);
        }
        _ => s.for_each_child(|c| collect(c, an, out)),
    }
}

fn push_atoms(cond: &Expr, an: &Analyzer, out: &mut Vec<Atom>) {
    for c in conjuncts(cond) {
        if an.prove(&c).is_none() {
            out.push(Atom { cond: c, ranges: an.clone() });
        }
    }
}

/// The subrange `[l, u]` of `[lo, hi]` on which every condition bounding
/// `v` from one side is proved, if it is smaller than the whole range and
/// not empty.
fn subrange(v: &Var, lo: i64, hi: i64, atoms: &[Atom]) -> Option<(i64, i64)> {
    if lo >= hi {
        return None;
    }
    let holds = |a: &Atom, l: i64, u: i64| {
        let mut an = a.ranges.clone();
        an.bind(v, l, u);
        an.prove(&a.cond) == Some(true)
    };
    let (mut l, mut u) = (lo, hi);
    for a in atoms.iter().filter(|a| a.cond.uses(v)) {
        match (holds(a, lo, lo), holds(a, hi, hi)) {
            // The largest `x` with the condition proved on `[lo, x]`.
            (true, false) => u = u.min(bisect(lo, hi, |x| holds(a, lo, x))),
            // The smallest `x` with the condition proved on `[x, hi]`.
            (false, true) => l = l.max(bisect(hi, lo, |x| holds(a, x, hi))),
            _ => {}
        }
    }
    ((l, u) != (lo, hi) && l <= u).then_some((l, u))
}

/// The boundary between `good`, where `ok` holds, and `bad`, where it does
/// not, on the side of `good` (either may be the larger), for an `ok` that
/// changes once between them.
fn bisect(mut good: i64, mut bad: i64, ok: impl Fn(i64) -> bool) -> i64 {
    while (bad - good).abs() > 1 {
        let mid = good + (bad - good) / 2;
        if ok(mid) {
            good = mid
        } else {
            bad = mid
        }
    }
    good
}
