//! The machine for one active thread: the same nodes and expressions as the
//! columns of `machine.rs`, evaluated to plain values.
//!
//! A kernel that runs on one thread (a function with no GPU axis, or the
//! serial part of one) would pay the columns' bookkeeping — a pooled
//! vector per operand, a loop of length one per operation — at every node.
//! When `exec` is given one active thread it comes here instead; the
//! results, rounding, bounds checks and race records are the same (the
//! semantics test and the simulator's tests run both ways). Statements
//! that concern threads as a group (barriers, asynchronous copies,
//! allocations) go back to the column machine with the one thread.

use super::{float_op, int_op, int_op_const, Machine, R};
use crate::sim::compile::{BlockNode, FExpr, IExpr, Index, Load, Node, Term};
use crate::sim::value::{float_to, intrinsic, wrap_to};
use crate::sim::SimError;
use tirc_ir::BinOp;

type V<T> = Result<T, SimError>;

impl Machine<'_> {
    /// `exec` for the one active thread `t`.
    pub(super) fn exec1(&mut self, s: &Node, t: u32) -> R {
        match s {
            Node::Seq(v) => {
                for x in v {
                    self.exec1(x, t)?;
                }
            }
            Node::Nop => {}
            Node::Store { mem, index, value, round, cp_async } => {
                let v = round.round(self.fe1(value, t)?);
                let i = self.index1(index, t)?;
                let a = self.address(*mem, i, t)?;
                if self.mems[*mem].shared {
                    self.touch(*mem, a, t, Some(v))?;
                }
                if *cp_async {
                    self.open[t as usize].push((*mem, a, v));
                } else {
                    self.claim(*mem, a, v, t)?;
                    self.mems[*mem].data[a] = v;
                }
            }
            Node::If { cond, then, orelse } => {
                if self.ie1(cond, t)? != 0 {
                    self.exec1(then, t)?;
                } else if let Some(e) = orelse {
                    self.exec1(e, t)?;
                }
            }
            Node::For { var, min, extent, body } => {
                let min = self.ie1(min, t)?;
                let extent = self.ie1(extent, t)?;
                for it in 0..extent {
                    self.ivars[*var].uniform = Some(min + it);
                    self.exec1(body, t)?;
                }
            }
            Node::LetInt { var, value, body } => {
                let v = self.ie1(value, t)?;
                self.ivars[*var].uniform = Some(v);
                self.exec1(body, t)?;
            }
            Node::LetFloat { var, value, body } => {
                let v = self.fe1(value, t)?;
                self.fvars[*var][t as usize] = v;
                self.exec1(body, t)?;
            }
            Node::Block(b) => self.block1(b, t)?,
            Node::Fail(m) => return Err(m.clone()),
            Node::Barrier
            | Node::AsyncCommit
            | Node::AsyncWait(_)
            | Node::Alloc { .. }
            | Node::Wmma(_)
            | Node::TmaLoad(_) => self.exec_columns(s, &[t])?,
        }
        Ok(())
    }

    fn block1(&mut self, b: &BlockNode, t: u32) -> R {
        let mut at_start = true;
        for (slot, value, min) in &b.binds {
            let v = self.ie1(value, t)?;
            self.ivars[*slot].uniform = Some(v);
            if let Some(min) = min {
                at_start &= v == self.ie1(min, t)?;
            }
        }
        if self.ie1(&b.predicate, t)? == 0 {
            return Ok(());
        }
        if let (Some(init), true) = (&b.init, at_start) {
            self.exec1(init, t)?;
        }
        self.exec1(&b.body, t)
    }

    fn index1(&mut self, index: &Index, t: u32) -> V<i64> {
        match index {
            Index::Flat(e) => self.ie1(e, t),
            Index::Dims(dims, name) => {
                let mut a = 0;
                for (d, (e, extent)) in dims.iter().enumerate() {
                    let v = self.ie1(e, t)?;
                    if v < 0 || v >= *extent {
                        return Err(super::dim_out_of_bounds(v, d, name, *extent));
                    }
                    a = a * extent + v;
                }
                Ok(a)
            }
        }
    }

    fn load1(&mut self, l: &Load, t: u32) -> V<f64> {
        let i = self.index1(&l.index, t)?;
        let a = self.address(l.mem, i, t)?;
        if self.mems[l.mem].shared {
            self.touch(l.mem, a, t, None)?;
        }
        Ok(self.mems[l.mem].data[a])
    }

    fn var1(&self, slot: usize, t: u32) -> i64 {
        let v = &self.ivars[slot];
        v.uniform.unwrap_or_else(|| v.col[t as usize])
    }

    /// `ie` for the one active thread `t`.
    fn ie1(&mut self, e: &IExpr, t: u32) -> V<i64> {
        Ok(match e {
            IExpr::Const(v) => *v,
            IExpr::Var(s) => self.var1(*s, t),
            IExpr::BinConst(op, ty, a, c) => {
                let mut o = [self.ie1(a, t)?];
                int_op_const(*op, *ty, &mut o, *c)?;
                o[0]
            }
            IExpr::Bin(op, ty, a, b) => {
                let mut o = [self.ie1(a, t)?];
                let y = [self.ie1(b, t)?];
                int_op(*op, *ty, &mut o, &y)?;
                o[0]
            }
            IExpr::FloatCompare(op, a, b) => {
                let (x, y) = (self.fe1(a, t)?, self.fe1(b, t)?);
                i64::from(match op {
                    BinOp::Eq => x == y,
                    BinOp::Ne => x != y,
                    BinOp::Lt => x < y,
                    BinOp::Le => x <= y,
                    BinOp::Gt => x > y,
                    _ => x >= y,
                })
            }
            IExpr::Not(a) => i64::from(self.ie1(a, t)? == 0),
            IExpr::And(a, b) => i64::from(self.ie1(a, t)? != 0 && self.ie1(b, t)? != 0),
            IExpr::Or(a, b) => i64::from(self.ie1(a, t)? != 0 || self.ie1(b, t)? != 0),
            IExpr::Select(c, a, b) => {
                if self.ie1(c, t)? != 0 {
                    self.ie1(a, t)?
                } else {
                    self.ie1(b, t)?
                }
            }
            IExpr::Wrap(a, ty) => {
                let mut o = [self.ie1(a, t)?];
                wrap_to(*ty, &mut o);
                o[0]
            }
            IExpr::Affine { terms, constant, t: ty } => {
                let mut v = *constant;
                for (term, c) in terms {
                    let x = match term {
                        Term::Var(s) => self.var1(*s, t),
                        Term::Expr(e) => self.ie1(e, t)?,
                    };
                    v = v.wrapping_add(x.wrapping_mul(*c));
                }
                let mut o = [v];
                wrap_to(*ty, &mut o);
                o[0]
            }
            IExpr::NonZero(a) => i64::from(self.ie1(a, t)? != 0),
            IExpr::FloatNonZero(a) => i64::from(self.fe1(a, t)? != 0.0),
            IExpr::Trunc(a, ty) => {
                let mut o = [self.fe1(a, t)? as i64];
                if let Some(ty) = ty {
                    float_to(*ty, &mut o);
                }
                o[0]
            }
            IExpr::Abs(a) => self.ie1(a, t)?.wrapping_abs(),
            IExpr::Shuffle(a, delta, width) => {
                let v = self.ie1(a, t)?;
                self.shuffle_sources(&[t], *delta, *width)?;
                v
            }
            IExpr::Load(l) => self.load1(l, t)? as i64,
            IExpr::Fail(m) => return Err(m.clone()),
        })
    }

    /// `fe` for the one active thread `t`.
    fn fe1(&mut self, e: &FExpr, t: u32) -> V<f64> {
        Ok(match e {
            FExpr::Const(v) => *v,
            FExpr::Var(s) => self.fvars[*s][t as usize],
            FExpr::Bin(op, p, a, b) => {
                let mut o = [self.fe1(a, t)?];
                let y = [self.fe1(b, t)?];
                float_op(*op, &mut o, &y)?;
                p.round(o[0])
            }
            FExpr::FromInt(a) => self.ie1(a, t)? as f64,
            FExpr::Round(a, p) => p.round(self.fe1(a, t)?),
            FExpr::Select(c, a, b) => {
                if self.ie1(c, t)? != 0 {
                    self.fe1(a, t)?
                } else {
                    self.fe1(b, t)?
                }
            }
            FExpr::Shuffle(a, delta, width) => {
                let v = self.fe1(a, t)?;
                self.shuffle_sources(&[t], *delta, *width)?;
                v
            }
            FExpr::Call(i, p, a, b) => {
                let x = self.fe1(a, t)?;
                let y = match b {
                    Some(b) => self.fe1(b, t)?,
                    None => 0.0,
                };
                p.round(intrinsic(*i, x, y))
            }
            FExpr::Load(l) => self.load1(l, t)?,
            FExpr::Fail(m) => return Err(m.clone()),
        })
    }
}
