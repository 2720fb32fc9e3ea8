//! Read and write regions of a block, inferred from its body.
//!
//! Each access `A[e0, e1, ..]` gives, per dimension, the range of values the
//! index takes while the loops inside the block run: a point when the index
//! does not depend on them, the interval spanned by an affine index
//! otherwise. Accesses to one buffer are merged into their bounding box; a
//! dimension whose bounds cannot be compared is widened to the whole
//! dimension. Nested blocks contribute their own declared regions, relaxed
//! over the loops between them and this block.

use crate::buffer::Buffer;
use crate::expr::{BinOp, Expr, Range, Var};
use crate::stmt::{Block, BlockRealize, BufferRegion, Stmt};
use crate::structural_eq::same_expr as expr_eq;

/// Infers `(reads, writes)` of a block, in order of first access.
pub fn infer_block_regions(block: &Block) -> (Vec<BufferRegion>, Vec<BufferRegion>) {
    let mut acc = Acc::default();
    if let Some(init) = &block.init {
        acc.stmt(init, &mut Vec::new());
    }
    acc.stmt(&block.body, &mut Vec::new());
    // Buffers the block allocates (`T.alloc_buffer`, or `T.decl_buffer` in
    // its body) are its own: each instance has its copy, outside its
    // signature.
    let mut declared: Vec<Buffer> = Vec::new();
    block.body.walk(&mut |x| {
        if let Stmt::Allocate { buffer, .. } = x {
            declared.push(buffer.clone());
        }
    });
    let local = |r: &BufferRegion| !block.alloc_buffers.contains(&r.buffer) && !declared.contains(&r.buffer);
    (acc.reads.into_iter().filter(local).collect(), acc.writes.into_iter().filter(local).collect())
}

#[derive(Default)]
struct Acc {
    reads: Vec<BufferRegion>,
    writes: Vec<BufferRegion>,
}

/// Loops inside the block: variable, min, extent.
type Inner = Vec<(Var, Expr, Expr)>;

impl Acc {
    fn stmt(&mut self, s: &Stmt, inner: &mut Inner) {
        match s {
            Stmt::For(l) => {
                self.exprs([&l.min, &l.extent], inner);
                inner.push((l.var.clone(), l.min.clone(), l.extent.clone()));
                self.stmt(&l.body, inner);
                inner.pop();
            }
            Stmt::Block(r) => {
                self.exprs(r.iter_values.iter(), inner);
                // The nested block's regions speak of its own variables:
                // substitute their bindings to speak of ours.
                let bind: Vec<(Var, Expr)> =
                    r.block.iter_vars.iter().map(|iv| iv.var.clone()).zip(r.iter_values.iter().cloned()).collect();
                for reg in &r.block.reads {
                    let reg = subst_region(reg, &bind);
                    add(&mut self.reads, relax(&reg, inner));
                }
                for reg in &r.block.writes {
                    let reg = subst_region(reg, &bind);
                    add(&mut self.writes, relax(&reg, inner));
                }
            }
            Stmt::Store { buffer, indices, value } => {
                self.exprs(indices.iter(), inner);
                self.exprs([value], inner);
                let reg = point(buffer, indices);
                add(&mut self.writes, relax(&reg, inner));
            }
            Stmt::Let { var, value, body } => {
                self.exprs([value], inner);
                inner.push((var.clone(), value.clone(), Expr::int(1)));
                self.stmt(body, inner);
                inner.pop();
            }
            _ => {
                s.for_each_expr(|e| self.exprs([e], inner));
                s.for_each_child(|c| self.stmt(c, inner));
            }
        }
    }

    fn exprs<'a>(&mut self, es: impl IntoIterator<Item = &'a Expr>, inner: &Inner) {
        for e in es {
            e.walk(&mut |x| {
                if let Expr::Load(b, idx) = x {
                    add(&mut self.reads, relax(&point(b, idx), inner));
                }
            });
        }
    }
}

fn point(b: &Buffer, idx: &[Expr]) -> BufferRegion {
    BufferRegion { buffer: b.clone(), region: idx.iter().map(|e| Range::new(e.clone(), Expr::int(1))).collect() }
}

fn subst_region(r: &BufferRegion, bind: &[(Var, Expr)]) -> BufferRegion {
    let sub = |e: &Expr| crate::subst::substitute(e, bind);
    BufferRegion {
        buffer: r.buffer.clone(),
        region: r.region.iter().map(|rg| Range::new(sub(&rg.min), sub(&rg.extent))).collect(),
    }
}

/// The region `r` covers while the inner loops run over their ranges.
fn relax(r: &BufferRegion, inner: &Inner) -> BufferRegion {
    let region = r
        .region
        .iter()
        .enumerate()
        .map(|(d, rg)| {
            if !inner.iter().any(|(v, _, _)| rg.min.uses(v)) {
                return rg.clone();
            }
            // min + sum(c_i * v_i) with constant c_i: each v_i spans
            // [lo_i, lo_i + ext_i - 1].
            match linear_span(&rg.min, inner) {
                Some((lo, span)) => {
                    let ext = match rg.extent.as_int() {
                        Some(e) => Expr::int(span + e),
                        None => Expr::int(span) + rg.extent.clone(),
                    };
                    Range::new(lo, ext)
                }
                None => whole_dim(&r.buffer, d),
            }
        })
        .collect();
    BufferRegion { buffer: r.buffer.clone(), region }
}

fn whole_dim(b: &Buffer, d: usize) -> Range {
    Range::new(Expr::int(0), b.shape().get(d).cloned().unwrap_or(Expr::int(1)))
}

/// For an index affine in the inner loop variables with constant
/// coefficients and constant loop bounds, its lowest value (as an expression)
/// and the constant distance to its highest.
fn linear_span(e: &Expr, inner: &Inner) -> Option<(Expr, i64)> {
    let mut lo_sub = Vec::new();
    let mut span = 0i64;
    for (v, min, ext) in inner {
        if !e.uses(v) {
            continue;
        }
        let c = coefficient(e, v)?;
        let ext = ext.as_int()?;
        let min = min.as_int()?;
        if c >= 0 {
            lo_sub.push((v.clone(), Expr::int(min)));
        } else {
            lo_sub.push((v.clone(), Expr::int(min + ext - 1)));
        }
        span += c.abs() * (ext - 1);
    }
    Some((crate::subst::substitute(e, &lo_sub), span))
}

/// The constant coefficient of `v` in `e`, if `e` is affine in `v`.
pub fn coefficient(e: &Expr, v: &Var) -> Option<i64> {
    if !e.uses(v) {
        return Some(0);
    }
    match e {
        Expr::Var(x) if x == v => Some(1),
        Expr::Binary(BinOp::Add, a, b) => Some(coefficient(a, v)? + coefficient(b, v)?),
        Expr::Binary(BinOp::Sub, a, b) => Some(coefficient(a, v)? - coefficient(b, v)?),
        Expr::Binary(BinOp::Mul, a, b) => match (a.as_int(), b.as_int()) {
            (Some(c), _) => Some(c * coefficient(b, v)?),
            (_, Some(c)) => Some(c * coefficient(a, v)?),
            _ => None,
        },
        _ => None,
    }
}

/// Merges `r` into the list: the bounding box with an earlier region of the
/// same buffer, or a new entry.
fn add(list: &mut Vec<BufferRegion>, r: BufferRegion) {
    let Some(old) = list.iter_mut().find(|o| o.buffer == r.buffer) else {
        list.push(r);
        return;
    };
    for (d, (a, b)) in old.region.iter_mut().zip(&r.region).enumerate() {
        if expr_eq(&a.min, &b.min) && expr_eq(&a.extent, &b.extent) {
            continue;
        }
        // Same symbolic base, constant offsets: take the hull.
        match (const_diff(&b.min, &a.min), a.extent.as_int(), b.extent.as_int()) {
            (Some(d0), Some(ea), Some(eb)) => {
                let lo = d0.min(0);
                let hi = (ea).max(d0 + eb);
                let base = if d0 < 0 { b.min.clone() } else { a.min.clone() };
                *a = Range::new(base, Expr::int(hi - lo));
            }
            _ => *a = whole_dim(&r.buffer, d),
        }
    }
}

/// `a - b` when it is a constant: equal expressions up to a constant term.
fn const_diff(a: &Expr, b: &Expr) -> Option<i64> {
    let (ab, ac) = split_const(a);
    let (bb, bc) = split_const(b);
    match (ab, bb) {
        (None, None) => Some(ac - bc),
        (Some(x), Some(y)) if expr_eq(x, y) => Some(ac - bc),
        _ => None,
    }
}

fn split_const(e: &Expr) -> (Option<&Expr>, i64) {
    match e {
        Expr::Int(v, _) => (None, *v),
        Expr::Binary(BinOp::Add, a, b) => match b.as_int() {
            Some(c) => (Some(a), c),
            None => (Some(e), 0),
        },
        _ => (Some(e), 0),
    }
}

/// The buffers a block reads (or writes), declared or inferred, in order.
pub fn block_buffers(r: &BlockRealize, reads: bool) -> Vec<Buffer> {
    let declared = if reads { &r.block.reads } else { &r.block.writes };
    let regs: Vec<BufferRegion> = if declared.is_empty() {
        let (rd, wr) = infer_block_regions(&r.block);
        if reads {
            rd
        } else {
            wr
        }
    } else {
        declared.clone()
    };
    // As in TVM, a reduction's output is not counted among its reads.
    let written: Vec<Buffer> = if reads && r.block.init.is_some() { block_buffers(r, false) } else { vec![] };
    let mut out: Vec<Buffer> = Vec::new();
    for reg in regs.into_iter().filter(|g| !written.contains(&g.buffer)) {
        if !out.contains(&reg.buffer) {
            out.push(reg.buffer);
        }
    }
    out
}
