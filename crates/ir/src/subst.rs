//! Substitution of variables by expressions, and of buffers by buffers.

use crate::buffer::Buffer;
use crate::expr::{Expr, Var};
use crate::stmt::Stmt;

/// `e` with each variable of `map` replaced by its expression.
pub fn substitute(e: &Expr, map: &[(Var, Expr)]) -> Expr {
    if map.is_empty() {
        return e.clone();
    }
    match e {
        Expr::Var(v) => match map.iter().find(|(x, _)| x == v) {
            Some((_, r)) => r.clone(),
            None => e.clone(),
        },
        _ => e.map_children(|c| substitute(c, map)),
    }
}

/// `s` with each variable of `map` replaced by its expression, everywhere.
pub fn substitute_stmt(s: &Stmt, map: &[(Var, Expr)]) -> Stmt {
    if map.is_empty() {
        return s.clone();
    }
    s.map_exprs(&mut |e| substitute(e, map))
}

/// `e` with every access to a buffer of `map` redirected to its replacement.
pub fn replace_buffers_expr(e: &Expr, map: &[(Buffer, Buffer)]) -> Expr {
    match e {
        Expr::Load(b, idx) => {
            let b2 = map.iter().find(|(x, _)| x == b).map_or(b.clone(), |(_, y)| y.clone());
            Expr::Load(b2, idx.iter().map(|i| replace_buffers_expr(i, map)).collect())
        }
        _ => e.map_children(|c| replace_buffers_expr(c, map)),
    }
}

/// `s` with every load and store of a buffer of `map` redirected to its
/// replacement, blocks' read and write regions included.
pub fn replace_buffers_stmt(s: &Stmt, map: &[(Buffer, Buffer)]) -> Stmt {
    swap_targets(&s.map_exprs(&mut |e| replace_buffers_expr(e, map)), map)
}

fn swap_targets(s: &Stmt, map: &[(Buffer, Buffer)]) -> Stmt {
    let swap = |b: &Buffer| map.iter().find(|(x, _)| x == b).map_or(b.clone(), |(_, y)| y.clone());
    match s.map_children(|c| swap_targets(c, map)) {
        Stmt::Store { buffer, indices, value } => Stmt::Store { buffer: swap(&buffer), indices, value },
        Stmt::Block(mut r) => {
            for reg in r.block.reads.iter_mut().chain(r.block.writes.iter_mut()) {
                reg.buffer = swap(&reg.buffer);
            }
            Stmt::Block(r)
        }
        s => s,
    }
}
