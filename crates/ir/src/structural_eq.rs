//! Structural equality: two IR trees are equal when they are the same up to
//! the renaming of variables and buffers.
//!
//! A variable or buffer seen for the first time on the left is paired with the
//! one in the same place on the right; from then on it must always meet that
//! one. Names do not matter, types, shapes and scopes do.

use crate::buffer::Buffer;
use crate::expr::{Expr, Range, Var};
use crate::func::PrimFunc;
use crate::stmt::{Block, BufferRegion, Stmt};
use std::collections::HashMap;

#[derive(Default)]
struct Eq {
    vars: HashMap<usize, usize>,
    bufs: HashMap<usize, usize>,
    /// Compare variables and buffers by identity instead of pairing them.
    identity: bool,
}

pub fn func_eq(a: &PrimFunc, b: &PrimFunc) -> bool {
    let mut e = Eq::default();
    a.name == b.name
        && a.attrs == b.attrs
        && a.params.len() == b.params.len()
        && a.params.iter().zip(&b.params).all(|(x, y)| e.buf(x, y))
        && e.stmt(&a.body, &b.body)
}

pub fn stmt_eq(a: &Stmt, b: &Stmt) -> bool {
    Eq::default().stmt(a, b)
}

pub fn expr_eq(a: &Expr, b: &Expr) -> bool {
    Eq::default().expr(a, b)
}

/// Whether two expressions of one scope are the same: same variables, same
/// buffers, same structure.
pub fn same_expr(a: &Expr, b: &Expr) -> bool {
    Eq { identity: true, ..Eq::default() }.expr(a, b)
}

impl Eq {
    fn var(&mut self, a: &Var, b: &Var) -> bool {
        if self.identity {
            return a == b;
        }
        if a.dtype() != b.dtype() {
            return false;
        }
        match self.vars.get(&a.key()) {
            Some(&k) => k == b.key(),
            None => {
                self.vars.insert(a.key(), b.key());
                true
            }
        }
    }

    fn buf(&mut self, a: &Buffer, b: &Buffer) -> bool {
        if self.identity {
            return a == b;
        }
        if let Some(&k) = self.bufs.get(&a.key()) {
            return k == b.key();
        }
        if a.dtype() != b.dtype() || a.scope() != b.scope() || a.ndim() != b.ndim() || a.dim_align() != b.dim_align() {
            return false;
        }
        self.bufs.insert(a.key(), b.key());
        a.shape().iter().zip(b.shape()).all(|(x, y)| self.expr(x, y))
    }

    fn exprs(&mut self, a: &[Expr], b: &[Expr]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| self.expr(x, y))
    }

    fn range(&mut self, a: &Range, b: &Range) -> bool {
        self.expr(&a.min, &b.min) && self.expr(&a.extent, &b.extent)
    }

    fn expr(&mut self, a: &Expr, b: &Expr) -> bool {
        match (a, b) {
            (Expr::Int(x, t), Expr::Int(y, u)) => x == y && t == u,
            (Expr::Float(x, t), Expr::Float(y, u)) => (x == y || (x.is_nan() && y.is_nan())) && t == u,
            (Expr::Var(x), Expr::Var(y)) => self.var(x, y),
            (Expr::Binary(o, a1, a2), Expr::Binary(p, b1, b2)) => o == p && self.expr(a1, b1) && self.expr(a2, b2),
            (Expr::Not(x), Expr::Not(y)) => self.expr(x, y),
            (Expr::Select(c, x, y), Expr::Select(d, u, v)) => self.expr(c, d) && self.expr(x, u) && self.expr(y, v),
            (Expr::Cast(t, x), Expr::Cast(u, y)) => t == u && self.expr(x, y),
            (Expr::Load(x, i), Expr::Load(y, j)) => self.buf(x, y) && self.exprs(i, j),
            (Expr::Call(f, x), Expr::Call(g, y)) => f == g && self.exprs(x, y),
            _ => false,
        }
    }

    fn regions(&mut self, a: &[BufferRegion], b: &[BufferRegion]) -> bool {
        a.len() == b.len()
            && a.iter().zip(b).all(|(x, y)| {
                self.buf(&x.buffer, &y.buffer)
                    && x.region.len() == y.region.len()
                    && x.region.iter().zip(&y.region).all(|(r, s)| self.range(r, s))
            })
    }

    fn block(&mut self, a: &Block, b: &Block) -> bool {
        a.name == b.name
            && a.annotations == b.annotations
            && a.iter_vars.len() == b.iter_vars.len()
            && a.iter_vars
                .iter()
                .zip(&b.iter_vars)
                .all(|(x, y)| x.kind == y.kind && self.var(&x.var, &y.var) && self.range(&x.dom, &y.dom))
            && a.alloc_buffers.len() == b.alloc_buffers.len()
            && a.alloc_buffers.iter().zip(&b.alloc_buffers).all(|(x, y)| self.buf(x, y))
            && self.regions(&a.reads, &b.reads)
            && self.regions(&a.writes, &b.writes)
            && match (&a.init, &b.init) {
                (Some(x), Some(y)) => self.stmt(x, y),
                (None, None) => true,
                _ => false,
            }
            && self.stmt(&a.body, &b.body)
    }

    fn stmt(&mut self, a: &Stmt, b: &Stmt) -> bool {
        match (a, b) {
            (Stmt::For(x), Stmt::For(y)) => {
                x.kind == y.kind
                    && x.annotations == y.annotations
                    && self.var(&x.var, &y.var)
                    && self.expr(&x.min, &y.min)
                    && self.expr(&x.extent, &y.extent)
                    && self.stmt(&x.body, &y.body)
            }
            (Stmt::Block(x), Stmt::Block(y)) => {
                // Block variables are defined by the block, so pair them
                // before reading the values they are bound to.
                self.block_vars_first(&x.block, &y.block)
                    && self.exprs(&x.iter_values, &y.iter_values)
                    && self.expr(&x.predicate, &y.predicate)
                    && self.block(&x.block, &y.block)
            }
            (
                Stmt::Store { buffer: b1, indices: i1, value: v1 },
                Stmt::Store { buffer: b2, indices: i2, value: v2 },
            ) => self.buf(b1, b2) && self.exprs(i1, i2) && self.expr(v1, v2),
            (Stmt::Seq(x), Stmt::Seq(y)) => x.len() == y.len() && x.iter().zip(y).all(|(s, t)| self.stmt(s, t)),
            (Stmt::If { cond: c1, then: t1, orelse: e1 }, Stmt::If { cond: c2, then: t2, orelse: e2 }) => {
                self.expr(c1, c2)
                    && self.stmt(t1, t2)
                    && match (e1, e2) {
                        (Some(x), Some(y)) => self.stmt(x, y),
                        (None, None) => true,
                        _ => false,
                    }
            }
            (Stmt::Let { var: v1, value: x1, body: b1 }, Stmt::Let { var: v2, value: x2, body: b2 }) => {
                self.expr(x1, x2) && self.var(v1, v2) && self.stmt(b1, b2)
            }
            (Stmt::Allocate { buffer: x, body: b1 }, Stmt::Allocate { buffer: y, body: b2 }) => {
                self.buf(x, y) && self.stmt(b1, b2)
            }
            (
                Stmt::Launch { var: v1, tag: t1, extent: e1, body: b1 },
                Stmt::Launch { var: v2, tag: t2, extent: e2, body: b2 },
            ) => t1 == t2 && self.expr(e1, e2) && self.var(v1, v2) && self.stmt(b1, b2),
            (Stmt::Barrier, Stmt::Barrier) | (Stmt::AsyncCommit, Stmt::AsyncCommit) | (Stmt::NoOp, Stmt::NoOp) => true,
            (Stmt::AsyncWait(x), Stmt::AsyncWait(y)) => x == y,
            (Stmt::Wmma(x), Stmt::Wmma(y)) => {
                x.op == y.op
                    && x.tiles.len() == y.tiles.len()
                    && x.tiles.iter().zip(&y.tiles).all(|(s, t)| {
                        self.buf(&s.buffer, &t.buffer)
                            && self.exprs(&s.indices, &t.indices)
                            && match (&s.ldm, &t.ldm) {
                                (Some(a), Some(b)) => self.expr(a, b),
                                (None, None) => true,
                                _ => false,
                            }
                    })
                    && match (&x.value, &y.value) {
                        (Some(a), Some(b)) => self.expr(a, b),
                        (None, None) => true,
                        _ => false,
                    }
                    && match (&x.bound, &y.bound) {
                        (Some((a, b)), Some((c, d))) => self.expr(a, c) && self.expr(b, d),
                        (None, None) => true,
                        _ => false,
                    }
            }
            _ => false,
        }
    }

    fn block_vars_first(&mut self, a: &Block, b: &Block) -> bool {
        a.iter_vars.len() == b.iter_vars.len()
            && a.iter_vars.iter().zip(&b.iter_vars).all(|(x, y)| self.var(&x.var, &y.var))
    }
}
