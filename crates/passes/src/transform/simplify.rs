//! `simplify`: index arithmetic in canonical form, decided conditions
//! removed, unit loops dropped.
//!
//! Walks the function with the range of every loop, launch and let variable
//! in scope (`arith::Analyzer`): integer expressions become canonical sums
//! (`blockIdx_x * 32768 + threadIdx_x * 8192 + i_2 * 1024 + ..`), a condition
//! the ranges decide becomes its branch, a loop of one iteration becomes its
//! body with the variable at its start, and statements that do nothing
//! disappear. Float arithmetic is not reassociated.

use crate::arith::Analyzer;
use tirc_ir::subst::substitute_stmt;
use tirc_ir::{BinOp, Diagnostic, Expr, PrimFunc, Stmt};

pub fn run(mut f: PrimFunc) -> Result<PrimFunc, Diagnostic> {
    let mut an = Analyzer::new();
    an.bind_sizes(&f.sizes);
    f.body = stmt(&f.body, &mut an);
    Ok(f)
}

/// Simplifies a statement under the ranges known to `an`.
pub fn stmt(s: &Stmt, an: &mut Analyzer) -> Stmt {
    match s {
        Stmt::For(l) => {
            let min = an.simplify(&l.min);
            let extent = an.simplify(&l.extent);
            // (A warp-specialized loop stays a loop: its iterations are
            // what the producer and the consumers count.)
            if extent.as_int() == Some(1) && tirc_ir::launch::warp_specialized(l).is_none() {
                let body = substitute_stmt(&l.body, &[(l.var.clone(), min)]);
                return stmt(&body, an);
            }
            if matches!(extent.as_int(), Some(e) if e <= 0) {
                return Stmt::NoOp;
            }
            an.bind_range(&l.var, &min, &extent);
            let body = stmt(&l.body, an);
            an.unbind(&l.var);
            if matches!(body, Stmt::NoOp) {
                return Stmt::NoOp;
            }
            let mut l2 = (**l).clone();
            l2.min = min;
            l2.extent = extent;
            l2.body = body;
            Stmt::For(Box::new(l2))
        }
        Stmt::Launch { var, tag, extent, body } => {
            let extent = an.simplify(extent);
            an.bind_launch(var, &extent);
            let body = stmt(body, an);
            an.unbind(var);
            Stmt::Launch { var: var.clone(), tag: *tag, extent, body: Box::new(body) }
        }
        Stmt::Let { var, value, body } => {
            let value = an.simplify(value);
            if let Some(b) = an.bound(&value) {
                an.bind(var, b.0, b.1);
            }
            let body = stmt(body, an);
            an.unbind(var);
            Stmt::Let { var: var.clone(), value, body: Box::new(body) }
        }
        Stmt::If { cond, then, orelse } => {
            let cond = an.simplify(cond);
            match cond.as_bool() {
                Some(true) => stmt(then, an),
                Some(false) => orelse.as_ref().map_or(Stmt::NoOp, |e| stmt(e, an)),
                None => {
                    let then = stmt(then, an);
                    let orelse = orelse.as_ref().map(|e| stmt(e, an)).filter(|e| !matches!(e, Stmt::NoOp));
                    if matches!(then, Stmt::NoOp) && orelse.is_none() {
                        return Stmt::NoOp;
                    }
                    Stmt::If { cond, then: Box::new(then), orelse: orelse.map(Box::new) }
                }
            }
        }
        Stmt::Store { buffer, indices, value } => Stmt::Store {
            buffer: buffer.clone(),
            indices: indices.iter().map(|i| an.simplify(i)).collect(),
            value: an.simplify(value),
        },
        Stmt::Seq(v) => Stmt::seq(v.iter().map(|x| stmt(x, an)).collect()),
        Stmt::Allocate { buffer, body } => Stmt::Allocate { buffer: buffer.clone(), body: Box::new(stmt(body, an)) },
        Stmt::Block(r) => {
            let mut r2 = (**r).clone();
            r2.iter_values = r.iter_values.iter().map(|v| an.simplify(v)).collect();
            r2.predicate = an.simplify(&r.predicate);
            r2.block.body = stmt(&r.block.body, an);
            Stmt::Block(Box::new(r2))
        }
        Stmt::Wmma(w) => {
            let mut w = w.map_exprs(&mut |e| an.simplify(e));
            // A partial store whose bound the ranges decide: whole, or none.
            if let Some((r, c)) = &w.bound {
                let at_least = |e: &Expr, n: i64| an.prove(&Expr::binary(BinOp::Ge, e.clone(), Expr::int(n)));
                if at_least(r, 16) == Some(true) && at_least(c, 16) == Some(true) {
                    w.bound = None;
                } else if at_least(r, 1) == Some(false) || at_least(c, 1) == Some(false) {
                    return Stmt::NoOp;
                }
            }
            Stmt::Wmma(Box::new(w))
        }
        Stmt::Barrier | Stmt::AsyncCommit | Stmt::AsyncWait(_) | Stmt::NoOp => s.clone(),
    }
}

/// Simplifies one expression with no ranges known.
pub fn expr(e: &Expr) -> Expr {
    Analyzer::new().simplify(e)
}
