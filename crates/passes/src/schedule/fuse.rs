//! `fuse(*loops)`: a perfect nest of loops becomes one loop over the product
//! of their extents.
//!
//! Preconditions, checked in this order:
//! 1. At least one loop is given, and every loop is in the function.
//! 2. Each loop after the first is the whole body of the loop before it.
//! 3. No loop is bound to a thread, and every extent is a constant or an
//!    expression of the function's run-time sizes (the fused variable is
//!    then divided by sizes, `i = f // n`, `j = f % n`).
//! 4. The product of the constant extents fits the fused loop's int32
//!    variable (with run-time sizes, the product is checked when they are
//!    bound: a buffer indexed by it has at most 2^31 - 1 elements).

use super::{LoopRV, Result, Schedule, ScheduleError};
use crate::common::tree::{fresh_loop_name, get_loop, replace_loop};
use tirc_ir::subst::substitute_stmt;
use tirc_ir::{BinOp, DType, Expr, For, ForKind, Stmt, Var};

pub fn fuse(sch: &mut Schedule, loops: &[LoopRV]) -> Result<LoopRV> {
    // 1.
    let Some(first) = loops.first() else {
        return Err(ScheduleError::bad_argument("fuse needs at least one loop"));
    };
    let mut fors: Vec<For> = vec![get_loop(&sch.func.body, first)?.clone()];
    if let Some(twice) = loops.iter().enumerate().find_map(|(i, l)| loops[..i].contains(l).then_some(l)) {
        return Err(ScheduleError::bad_argument(format!("loop `{}` is given twice", twice.name())));
    }
    // 2.
    for w in loops.windows(2) {
        get_loop(&sch.func.body, &w[1])?;
        let outer = fors.last().cloned().unwrap_or_else(|| unreachable!());
        match &outer.body {
            Stmt::For(inner) if inner.var == w[1] => fors.push((**inner).clone()),
            _ => {
                return Err(ScheduleError::new(format!(
                    "loop `{}` is not the only statement in the body of loop `{}`, so they cannot be fused",
                    w[1].name(),
                    w[0].name()
                ))
                .help("fuse takes loops of one perfect nest, outermost first"))
            }
        }
    }
    // 3.
    let mut extents = Vec::new();
    for f in &fors {
        if let ForKind::ThreadBinding(t) = f.kind {
            return Err(ScheduleError::new(format!(
                "loop `{}` is bound to {}; fuse before binding",
                f.var.name(),
                t.name()
            )));
        }
        if f.extent.as_int().is_none() && !f.extent.is_size_expr(&sch.func.sizes) {
            return Err(ScheduleError::new(format!("loop `{}` has no constant extent", f.var.name())));
        }
        extents.push(f.extent.clone());
    }
    let name: Vec<&str> = fors.iter().map(|f| f.var.name()).collect();
    let name = fresh_loop_name(&sch.func.body, &format!("{}_fused", name.join("_")));
    let fused = Var::new(name, DType::I32);
    // The fused variable is an int32, as TVM's is for int32 loops.
    let consts: Vec<i64> = extents.iter().filter_map(|e| e.as_int()).collect();
    let total = consts.iter().try_fold(1i64, |a, &e| a.checked_mul(e)).filter(|t| *t <= i64::from(i32::MAX));
    if total.is_none() {
        return Err(ScheduleError::new(format!(
            "the fused loop would have {} iterations, more than its int32 variable can count",
            consts.iter().map(|e| e.to_string()).collect::<Vec<_>>().join(" × ")
        )));
    }
    // Constant extents multiply as numbers (whatever their integer type, as
    // before run-time sizes); with a size among them, as an expression.
    let product = |es: &[Expr]| match es.iter().map(|e| e.as_int()).collect::<Option<Vec<i64>>>() {
        Some(cs) => Expr::int(cs.iter().product()),
        None => es.iter().fold(Expr::int(1), |a, e| a * e.clone()),
    };
    let total = product(&extents);
    let mut map = Vec::new();
    for (i, f) in fors.iter().enumerate() {
        let inner = product(&extents[i + 1..]);
        let mut e = Expr::var(&fused);
        if inner.as_int() != Some(1) {
            e = Expr::binary(BinOp::FloorDiv, e, inner);
        }
        if i > 0 {
            e = Expr::binary(BinOp::FloorMod, e, extents[i].clone());
        }
        let e = if f.min.as_int() == Some(0) { e } else { f.min.clone() + e };
        map.push((f.var.clone(), e));
    }
    let innermost = &fors[fors.len() - 1];
    let body = substitute_stmt(&innermost.body, &map);
    let new = Stmt::For(Box::new(For {
        var: fused.clone(),
        min: Expr::int(0),
        extent: total,
        kind: ForKind::Serial,
        annotations: vec![],
        body,
        span: None,
    }));
    sch.func.body = replace_loop(&sch.func.body, first, |_| Ok(new))?;
    Ok(fused)
}
