//! `split(loop, factors=[...])`: one loop becomes a nest of loops whose
//! extents are the factors, outermost first.
//!
//! Preconditions, checked in this order:
//! 1. The loop is in the function and is not bound to a thread (bind the
//!    loops that the split returns instead).
//! 2. Its extent is a constant, or an expression of the function's
//!    run-time sizes (`m`); then exactly one factor is `None`, and it
//!    becomes `ceildiv(m, product of the others)`, the predicate below
//!    guarding the last, partial iteration.
//! 3. There are at least two factors, at most one is `None` (or -1), and the
//!    others are positive.
//! 4. The factors multiply to at least the extent; when they multiply to
//!    more (a factor that does not divide it), every block under the loop
//!    gets the predicate `T.where(<old index> < extent)`, so the extra
//!    iterations do nothing.
//! 5. For an int32 loop, the factors multiply to at most 2^31 - 1: the new
//!    loops' index, `outer * inner + ..`, is an int32 too, and past that it
//!    wraps below the guard (TVM's loops keep the split loop's type).

use super::{LoopRV, Result, Schedule, ScheduleError};
use crate::common::tree::{fresh_loop_name, get_loop, replace_loop};
use tirc_ir::subst::substitute_stmt;
use tirc_ir::{BinOp, DType, Expr, For, ForKind, Stmt, Var};

pub fn split(sch: &mut Schedule, lp: &LoopRV, factors: &[Option<i64>]) -> Result<Vec<LoopRV>> {
    let l = get_loop(&sch.func.body, lp)?.clone();
    // 1.
    if let ForKind::ThreadBinding(t) = l.kind {
        return Err(ScheduleError::new(format!("loop `{}` is bound to {} and cannot be split", lp.name(), t.name()))
            .help("split first, then bind the loops the split returns"));
    }
    // 2.
    let extent_expr = l.extent.clone();
    let symbolic = extent_expr.as_int().is_none();
    if symbolic && !extent_expr.is_size_expr(&sch.func.sizes) {
        return Err(ScheduleError::new(format!("loop `{}` has no constant extent to split", lp.name())));
    }
    // 3.
    if factors.len() < 2 {
        return Err(ScheduleError::bad_argument("split needs at least two factors"));
    }
    if factors.iter().filter(|f| f.is_none()).count() > 1 {
        return Err(ScheduleError::bad_argument(
            "at most one factor can be None (or -1, which means the same): the others decide it",
        ));
    }
    if let Some(bad) = factors.iter().flatten().find(|f| **f <= 0) {
        return Err(ScheduleError::bad_argument(format!("a split factor must be positive, not {bad}")));
    }
    let too_large = || ScheduleError::bad_argument("the split factors multiply to more than a 64-bit integer holds");
    let known = factors.iter().flatten().try_fold(1i64, |a, &f| a.checked_mul(f)).ok_or_else(too_large)?;
    let (sizes, needs_predicate): (Vec<Expr>, bool) = match extent_expr.as_int() {
        Some(extent) => {
            let sizes: Vec<i64> = factors.iter().map(|f| f.unwrap_or((extent - 1).max(0) / known + 1)).collect();
            let product = sizes.iter().try_fold(1i64, |a, &f| a.checked_mul(f)).ok_or_else(too_large)?;
            // 4.
            if product < extent {
                return Err(ScheduleError::new(format!(
                    "the factors {sizes:?} multiply to {product}, less than the extent {extent} of loop `{}`: iterations would be lost",
                    lp.name()
                ))
                .help("use None for one factor to let it be inferred"));
            }
            // 5. The loops' variables keep the loop's type: their product
            // must fit it, or the index they make wraps past the guard.
            if l.var.dtype() == DType::I32 && product > i64::from(i32::MAX) {
                return Err(ScheduleError::new(format!(
                    "the factors {sizes:?} multiply to {product}, more than the int32 variable of loop `{}` can count",
                    lp.name()
                ))
                .help("give factors whose product fits an int32 (at most 2147483647)"));
            }
            (sizes.into_iter().map(Expr::int).collect(), product > extent)
        }
        None => {
            if !factors.iter().any(|f| f.is_none()) {
                return Err(ScheduleError::new(format!(
                    "loop `{}` runs `{}` iterations, known only at run time: one factor must be None",
                    lp.name(),
                    tirc_ir::printer::print_expr(&extent_expr)
                ))
                .help("e.g. factors=[None, 64]: the number of tiles is then computed from the size at run time"));
            }
            // An extent that is a multiple of the factors whatever the sizes
            // (one pad_einsum grew, `(m + 63) // 64 * 64` split by 16) is
            // divided exactly, with no predicate; any other is
            // ceildiv(extent, known), as floordiv(extent + known - 1, known).
            let mut an = crate::arith::Analyzer::new();
            an.bind_sizes(&sch.func.sizes);
            let rem = an.simplify(&Expr::binary(BinOp::FloorMod, extent_expr.clone(), Expr::int(known)));
            let divides = rem.as_int() == Some(0);
            let tiles = if known == 1 {
                extent_expr.clone()
            } else if divides {
                an.simplify(&Expr::binary(BinOp::FloorDiv, extent_expr.clone(), Expr::int(known)))
            } else {
                Expr::binary(BinOp::FloorDiv, extent_expr.clone() + Expr::int(known - 1), Expr::int(known))
            };
            (factors.iter().map(|f| f.map_or(tiles.clone(), Expr::int)).collect(), known != 1 && !divides)
        }
    };
    let base = lp.name().to_string();
    let mut vars = Vec::new();
    for i in 0..sizes.len() {
        let name = fresh_loop_name(&sch.func.body, &format!("{base}_{i}"));
        vars.push(Var::new(name, DType::I32));
    }
    // old = min + ((v0 * s1 + v1) * s2 + v2) ...
    let mut fused = Expr::var(&vars[0]);
    for (v, s) in vars.iter().zip(&sizes).skip(1) {
        fused = if s.as_int() == Some(1) { fused } else { fused * s.clone() };
        fused = fused + Expr::var(v);
    }
    let fused = crate::arith::Analyzer::new().simplify(&fused);
    let old = if l.min.as_int() == Some(0) { fused.clone() } else { l.min.clone() + fused.clone() };
    let new_body = substitute_stmt(&l.body, &[(l.var.clone(), old)]);
    let new_body = if needs_predicate {
        let pred = Expr::binary(BinOp::Lt, fused, extent_expr);
        add_predicate(&new_body, &pred)
    } else {
        new_body
    };
    let mut s = new_body;
    for (v, sz) in vars.iter().zip(&sizes).rev() {
        s = Stmt::For(Box::new(For {
            var: v.clone(),
            min: Expr::int(0),
            extent: sz.clone(),
            kind: if l.kind == ForKind::Serial { ForKind::Serial } else { l.kind },
            annotations: vec![],
            body: s,
            span: None,
        }));
    }
    sch.func.body = replace_loop(&sch.func.body, lp, |_| Ok(s))?;
    Ok(vars)
}

/// Adds `pred` to the predicate of every block directly under `s`; code
/// outside blocks is guarded by an `if`.
pub fn add_predicate(s: &Stmt, pred: &Expr) -> Stmt {
    let mut found = false;
    let out = s.rewrite(&mut |x| match x {
        Stmt::Block(r) => {
            found = true;
            let mut r2 = (**r).clone();
            r2.predicate = Expr::and(r.predicate.clone(), pred.clone());
            Some(Stmt::Block(Box::new(r2)))
        }
        _ => None,
    });
    if found {
        out
    } else {
        Stmt::if_then(pred.clone(), out)
    }
}
