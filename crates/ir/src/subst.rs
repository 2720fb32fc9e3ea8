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
        Stmt::Wmma(mut w) => {
            for t in &mut w.tiles {
                t.buffer = swap(&t.buffer);
            }
            Stmt::Wmma(w)
        }
        Stmt::Block(mut r) => {
            for reg in r.block.reads.iter_mut().chain(r.block.writes.iter_mut()) {
                reg.buffer = swap(&reg.buffer);
            }
            Stmt::Block(r)
        }
        s => s,
    }
}

/// `s` with every variable it binds (loops, lets, blocks' iteration
/// variables) replaced by a fresh one of the same name and type, uses
/// included: a copy of a statement that may stand beside the original (a
/// pass that duplicates code, such as a loop partition), so that each
/// variable keeps one binder.
pub fn fresh_binders(s: &Stmt) -> Stmt {
    let mut map: Vec<(Var, Expr)> = Vec::new();
    let mut note = |v: &Var| {
        if !map.iter().any(|(x, _)| x == v) {
            map.push((v.clone(), Expr::Var(v.renamed(v.name()))));
        }
    };
    s.walk(&mut |x| match x {
        Stmt::For(l) => note(&l.var),
        Stmt::Let { var, .. } => note(var),
        Stmt::Block(r) => r.block.iter_vars.iter().for_each(|iv| note(&iv.var)),
        _ => {}
    });
    if map.is_empty() {
        return s.clone();
    }
    rebind(&substitute_stmt(s, &map), &map)
}

/// The binders of `s` renamed by `map` (their uses are already).
fn rebind(s: &Stmt, map: &[(Var, Expr)]) -> Stmt {
    let new = |v: &Var| match map.iter().find(|(x, _)| x == v) {
        Some((_, Expr::Var(n))) => n.clone(),
        _ => v.clone(),
    };
    match s.map_children(|c| rebind(c, map)) {
        Stmt::For(mut l) => {
            l.var = new(&l.var);
            Stmt::For(l)
        }
        Stmt::Let { var, value, body } => Stmt::Let { var: new(&var), value, body },
        Stmt::Block(mut r) => {
            for iv in &mut r.block.iter_vars {
                iv.var = new(&iv.var);
            }
            Stmt::Block(r)
        }
        s => s,
    }
}
