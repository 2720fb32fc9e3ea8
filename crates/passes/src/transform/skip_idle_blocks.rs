//! `skip_idle_blocks`: a GPU block that can write nothing to global memory
//! returns at once.
//!
//! A grid that covers more tiles than exist (a raster band of `GROUP_M`
//! tile rows past the last row, a padded shape rounded up again) launches
//! blocks whose every store is guarded off. After `relax_guards` such a
//! block still runs its whole main loop, copies and barriers, only to
//! write nothing: a wave of idle blocks. This pass finds, for every store to
//! global memory in the kernel (plain or tensor-core), the condition under
//! which any thread of the block can reach it: each guard around it,
//! `a < b` (or `<=`, `>`, `>=`), relaxed over the thread indices and the
//! loops between the kernel and the store to its most permissive value; a
//! guard of another form counts as possibly true. Their disjunction names
//! only block indices and sizes, so all the threads of a block agree on it,
//! and the kernel body becomes `if (it): body` — barriers included, since
//! no thread of a skipped block reaches them. Shared and local memory are
//! the block's own, so nothing else a block does is seen outside it. Where
//! some store is unguarded, the condition holds for every block of a
//! constant grid (tried block by block, up to 2^18 of them), or it names a
//! size known only at run time (whose grid is computed to have no idle
//! block), the kernel is left as it was. `loop_partition`'s two copies of a kernel are taken
//! apart: the interior copy keeps its stores unguarded and is left alone,
//! the boundary copy gets the test. Runs after `hoist_invariant_guards`.

use crate::arith::{conjuncts, Analyzer};
use crate::bounds::{relax, Relaxed};
use tirc_ir::{BinOp, Diagnostic, Expr, PrimFunc, Scope, Stmt, Var};

pub fn run(mut f: PrimFunc) -> Result<PrimFunc, Diagnostic> {
    let (heads, body) = f.body.clone().split_launch_head();
    if heads.is_empty() {
        return Ok(f);
    }
    // Thread indices vary inside a block; block indices and sizes do not.
    let threads: Vec<Relaxed> =
        heads.iter().filter(|(_, t, _)| !t.is_block).map(|(v, _, e)| (v.clone(), Expr::int(0), e.clone())).collect();
    let blocks: Vec<(Var, Option<i64>)> =
        heads.iter().filter(|(_, t, _)| t.is_block).map(|(v, _, e)| (v.clone(), e.as_int())).collect();
    f.body = Stmt::with_launch_head(heads, guard(&body, &threads, &blocks));
    Ok(f)
}

/// `s` under the test that some thread of the block may store to global
/// memory, or the branches of a top-level `if`/`else` (the copies of
/// `loop_partition`) each under its own.
fn guard(s: &Stmt, threads: &[Relaxed], blocks: &[(Var, Option<i64>)]) -> Stmt {
    if let Stmt::If { cond, then, orelse: Some(e) } = s {
        return Stmt::If {
            cond: cond.clone(),
            then: Box::new(guard(then, threads, blocks)),
            orelse: Some(Box::new(guard(e, threads, blocks))),
        };
    }
    let mut reach = Vec::new();
    if !reaches(s, &mut threads.to_vec(), &mut Vec::new(), &mut reach) {
        return s.clone();
    }
    let an = Analyzer::new();
    let any = an.simplify(&reach.into_iter().reduce(|a, b| Expr::binary(BinOp::Or, a, b)).unwrap_or(Expr::bool(false)));
    // Only a test of block indices alone: with a size known at run time the
    // grid is computed from it, every block has work, and the test would
    // only be noise.
    let mut only_blocks = true;
    any.walk(&mut |x| only_blocks &= !matches!(x, Expr::Var(v) if !blocks.iter().any(|(b, _)| b == v)));
    if any.as_bool() == Some(true) || !only_blocks || every_block_passes(&any, blocks) {
        return s.clone();
    }
    Stmt::If { cond: any, then: Box::new(s.clone()), orelse: None }
}

/// Pushes onto `out`, for each store to global memory in `s`, the
/// condition under which a thread of the block may reach it; `false` when
/// a store is reached unconditionally (no test can skip the block).
fn reaches(s: &Stmt, vary: &mut Vec<Relaxed>, conds: &mut Vec<Expr>, out: &mut Vec<Expr>) -> bool {
    let global_store = |conds: &[Expr], vary: &[Relaxed], out: &mut Vec<Expr>| -> bool {
        let parts: Vec<Expr> = conds.iter().flat_map(conjuncts).filter_map(|c| relaxed(&c, vary)).collect();
        if parts.is_empty() {
            return false;
        }
        out.push(parts.into_iter().reduce(Expr::and).unwrap_or(Expr::bool(true)));
        true
    };
    match s {
        Stmt::Store { buffer, .. } if buffer.scope() == Scope::Global => global_store(conds, vary, out),
        Stmt::Wmma(w) if w.tiles.first().is_some_and(|t| t.buffer.scope() == Scope::Global) => {
            global_store(conds, vary, out)
        }
        Stmt::If { cond, then, orelse } => {
            conds.push(cond.clone());
            let ok = reaches(then, vary, conds, out);
            conds.pop();
            ok && orelse.as_ref().is_none_or(|e| {
                conds.push(Expr::Not(Box::new(cond.clone())));
                let ok = reaches(e, vary, conds, out);
                conds.pop();
                ok
            })
        }
        Stmt::For(l) => {
            vary.push((l.var.clone(), l.min.clone(), l.extent.clone()));
            let ok = reaches(&l.body, vary, conds, out);
            vary.pop();
            ok
        }
        Stmt::Let { var, body, .. } => {
            // A let's value may depend on anything: its variable is not
            // bounded here, and a guard naming it counts as possibly true.
            vary.push((var.clone(), Expr::var(var), Expr::int(0)));
            let ok = reaches(body, vary, conds, out);
            vary.pop();
            ok
        }
        Stmt::Launch { .. } | Stmt::Block(_) => false,
        _ => {
            let mut ok = true;
            s.for_each_child(|c| ok &= reaches(c, vary, conds, out));
            ok
        }
    }
}

/// A condition that holds for some value of the varying variables when `c`
/// holds for one: `a < b` as `min(a - b) < 0`, and so on; `None` when `c`
/// has another form or cannot be bounded (it may then be true).
fn relaxed(c: &Expr, vary: &[Relaxed]) -> Option<Expr> {
    let Expr::Binary(op, a, b) = c else { return None };
    // Computed before anything runs: no memory, no calls, no division by a
    // variable (it might be zero where the guard was never evaluated).
    let mut plain = true;
    c.walk(&mut |x| match x {
        Expr::Load(..) | Expr::Call(..) => plain = false,
        Expr::Binary(BinOp::Div | BinOp::FloorDiv | BinOp::FloorMod, _, d) => {
            plain &= matches!(d.as_int(), Some(v) if v != 0)
        }
        _ => {}
    });
    if !plain {
        return None;
    }
    let d = (**a).clone() - (**b).clone();
    // A let's variable (extent 0 above) is not a range: give up on it.
    if vary.iter().any(|(v, _, e)| e.as_int() == Some(0) && d.uses(v)) {
        return None;
    }
    let (lo, hi) = relax(&d, vary)?;
    let zero = Expr::int(0);
    let out = match op {
        BinOp::Lt => Expr::binary(BinOp::Lt, lo, zero),
        BinOp::Le => Expr::binary(BinOp::Le, lo, zero),
        BinOp::Gt => Expr::binary(BinOp::Gt, hi, zero),
        BinOp::Ge => Expr::binary(BinOp::Ge, hi, zero),
        _ => return None,
    };
    let names_varying = vary.iter().any(|(v, _, _): &(Var, Expr, Expr)| out.uses(v));
    (!names_varying).then_some(out)
}

/// Whether `c` holds for every block of the grid, tried block by block
/// where the grid is constant and small enough (up to 2^18 blocks);
/// `false` where that cannot be told.
fn every_block_passes(c: &Expr, blocks: &[(Var, Option<i64>)]) -> bool {
    let Some(extents) = blocks.iter().map(|(_, e)| *e).collect::<Option<Vec<i64>>>() else { return false };
    let total = extents.iter().try_fold(1i64, |a, e| a.checked_mul(*e));
    if total.is_none_or(|t| t > 1 << 18) {
        return false;
    }
    let mut index = vec![0i64; extents.len()];
    loop {
        let value = |v: &Var| blocks.iter().position(|(b, _)| b == v).map(|d| index[d]);
        if crate::arith::eval(c, &value) != Some(1) {
            return false;
        }
        // The next block index, the first axis fastest.
        let mut d = 0;
        loop {
            if d == index.len() {
                return true;
            }
            index[d] += 1;
            if index[d] < extents[d] {
                break;
            }
            index[d] = 0;
            d += 1;
        }
    }
}
