//! `blockize(loop, preserve_unit_iters=True)`: the loops from `loop` down to
//! the one block under it, with that block, become the body of a new outer
//! block, TVM's primitive of that name and arguments. The outer block
//! stands for one iteration of the loops above `loop`; tensorization
//! replaces such a block's body with one instruction.
//!
//! Each variable `v` of the block is bound to an expression of the loops
//! above `loop` (outer) and of the loops from `loop` down (inner). Its
//! binding is divided as `outer * E + inner`, where `inner` is the part in
//! the inner loops, covering `0 .. E` once each (their coefficients in the
//! binding are 1, the extent of the first, the product of the first two,
//! and so on), and `outer` the rest divided by `E`. Then:
//! - the outer block, `<name>_o`, gets a variable `v_o` over
//!   `0 .. ceil(dom(v) / E)` bound to `outer` (kept when its extent is 1);
//! - the inner block keeps the name and gets `v_i` over `0 .. E`, bound to
//!   `inner`, where `E > 1`;
//! - `v` in the block becomes `v_o * E + v_i`, or `v_i` when the outer
//!   extent is 1, or `v_o` when `E` is 1.
//!
//! A binding that is not affine in the inner loops is taken whole by the
//! inner block when it uses no outer loop, and whole by the outer block when
//! it uses no inner loop. The parts of the block's predicate that use no
//! inner loop go to the outer block, the others stay with the inner one; a
//! bound `outer * E + inner < n` with `n` a multiple of `E` is the outer
//! block's, as `outer * E < n` (it holds for the whole tile or for none of
//! it). A reduction's init moves to the outer block, as `<name>_init` under
//! copies of the inner loops its spatial variables use; the inner block has
//! none. The outer block's read and write regions are the inner block's,
//! over the inner loops' ranges.
//!
//! Preconditions, checked in this order:
//! 1. The loop is in the function and holds one block, with nothing but
//!    loops between them, each starting at 0 with a constant extent.
//! 2. Every binding divides as above: an inner part whose coefficients
//!    are positive and dense, an outer part a multiple of `E`.
//!
//! `preserve_unit_iters=False` only changes what a variable whose outer
//! and inner extents are both 1 becomes: 0 instead of `v_o`.

use super::{BlockRV, LoopRV, Result, Schedule, ScheduleError};
use crate::arith::{all_of, conjuncts, Analyzer};
use crate::common::tree::{block_and_buffer_names, fresh_name, get_loop, loop_names};
use tirc_ir::region::{coefficient, infer_block_regions};
use tirc_ir::stmt::BufferRegion;
use tirc_ir::subst::{substitute, substitute_stmt};
use tirc_ir::{BinOp, Block, BlockRealize, Expr, For, IterKind, IterVar, Range, Stmt, Var};

pub fn blockize(sch: &mut Schedule, lp: &LoopRV, preserve_unit_iters: bool) -> Result<BlockRV> {
    // 1.
    let top = get_loop(&sch.func.body, lp)?.clone();
    let mut inner_loops: Vec<For> = Vec::new();
    let mut s = Stmt::For(Box::new(top.clone()));
    let realize = loop {
        match s {
            Stmt::For(l) => {
                if l.min.as_int() != Some(0) || l.extent.as_int().is_none() {
                    let place = if l.var == *lp { String::new() } else { format!(" (under `{}`)", lp.name()) };
                    let range = match (l.min.as_int(), l.extent.as_int()) {
                        (Some(lo), Some(n)) => format!("runs over {lo}..{}", lo + n),
                        _ => "has an extent known only at run time".to_string(),
                    };
                    return Err(ScheduleError::unsupported(format!(
                        "loop `{}`{place} {range}; blockize takes loops that start at 0 and have a constant extent",
                        l.var.name()
                    )));
                }
                s = l.body.clone();
                inner_loops.push(*l);
            }
            Stmt::Block(r) => break *r,
            _ => {
                return Err(ScheduleError::new(format!(
                    "loop `{}` does not hold a single block under a nest of loops: blockize needs exactly one",
                    lp.name()
                ))
                .help("split the nest, or blockize a loop closer to the block"))
            }
        }
    };
    let name = realize.block.name.clone();
    let is_inner = |e: &Expr| inner_loops.iter().any(|l| e.uses(&l.var));

    // 2.
    let mut outer_ivs: Vec<IterVar> = Vec::new();
    let mut outer_values: Vec<Expr> = Vec::new();
    let mut inner_ivs: Vec<IterVar> = Vec::new();
    let mut inner_values: Vec<Expr> = Vec::new();
    let mut sub: Vec<(Var, Expr)> = Vec::new();
    // Each variable's binding, and the same in the outer block's variable
    // and the inner loops (`i_0 * 8 + i_1 * 4 + i_2` as `vi_o * 4 + i_2`).
    let mut rebound: Vec<(Expr, Expr)> = Vec::new();
    for (iv, e) in realize.block.iter_vars.iter().zip(&realize.iter_values) {
        let t = iv.var.dtype();
        let (outer, inner, e_in) = divide(e, &inner_loops).ok_or_else(|| {
            ScheduleError::new(format!(
                "the binding of `{}` in block `{name}`, {}, cannot be divided between the loops above `{}` and \
                 the loops from it down",
                iv.var.name(),
                tirc_ir::printer::print_expr(e),
                lp.name()
            ))
            .help("each variable must be an outer part times the inner loops' span plus a dense inner part")
        })?;
        let e_in = match (e_in, iv.dom.extent.as_int()) {
            (Some(x), _) => x,
            // Taken whole by the inner block: its own domain.
            (None, Some(d)) => d,
            (None, None) => {
                return Err(ScheduleError::unsupported(format!(
                    "variable `{}` of block `{name}` has no constant extent for the inner block to take",
                    iv.var.name()
                )))
            }
        };
        let outer_extent = match iv.dom.extent.as_int() {
            Some(d) if e_in > 0 => Expr::Int((d + e_in - 1) / e_in, t),
            _ => iv.dom.extent.clone(),
        };
        let unit_outer = outer_extent.as_int() == Some(1);
        let vo = Var::new(format!("{}_o", iv.var.name()), t);
        rebound.push((e.clone(), Expr::var(&vo) * Expr::Int(e_in, t) + inner.clone()));
        outer_ivs.push(IterVar { var: vo.clone(), dom: Range::new(Expr::Int(0, t), outer_extent), kind: iv.kind });
        outer_values.push(outer);
        let replacement = if e_in == 1 {
            if unit_outer && !preserve_unit_iters {
                Expr::Int(0, t)
            } else {
                Expr::var(&vo)
            }
        } else {
            let vi = Var::new(format!("{}_i", iv.var.name()), t);
            inner_ivs.push(IterVar {
                var: vi.clone(),
                dom: Range::new(Expr::Int(0, t), Expr::Int(e_in, t)),
                kind: iv.kind,
            });
            inner_values.push(inner);
            if unit_outer {
                Expr::var(&vi)
            } else {
                Expr::var(&vo) * Expr::Int(e_in, t) + Expr::var(&vi)
            }
        };
        sub.push((iv.var.clone(), replacement));
    }
    // A bound `outer * E + inner < n` whose `n` is a multiple of the inner
    // span `E` holds for the whole tile or for none of it: it becomes
    // `outer * E < n`, a condition of the outer block (a tile of 16 in a
    // size that 16 divides but the block's tile does not).
    // (`n > e` is read as `e < n`.)
    let conjs: Vec<Expr> = conjuncts(&realize.predicate)
        .into_iter()
        .map(crate::arith::smaller_first)
        .map(|c| tile_bound(&c, &inner_loops).unwrap_or(c))
        .collect();
    let (inner_pred, outer_pred): (Vec<Expr>, Vec<Expr>) = conjs.into_iter().partition(is_inner);
    // The inner block's predicate speaks of the outer block's variables
    // rather than of the loops above it, where a variable is bound to
    // exactly such a loop.
    let loop_to_outer: Vec<(Var, Expr)> = outer_ivs
        .iter()
        .zip(&outer_values)
        .filter_map(|(iv, v)| match v {
            Expr::Var(l) => Some((l.clone(), Expr::var(&iv.var))),
            _ => None,
        })
        .collect();
    let an = Analyzer::new();
    let inner_pred: Vec<Expr> = inner_pred
        .iter()
        .map(|c| {
            // A bound on a whole binding (`i_0 * 8 + i_1 * 4 + i_2 < 13`, a
            // split's guard) is said of the outer block's variable.
            if let Expr::Binary(op @ (BinOp::Lt | BinOp::Le), lhs, rhs) = c {
                let same = |b: &Expr| an.simplify(&((**lhs).clone() - b.clone())).as_int() == Some(0);
                if let Some((_, new)) = rebound.iter().find(|(b, _)| same(b)) {
                    return Expr::binary(*op, new.clone(), (**rhs).clone());
                }
            }
            substitute(c, &loop_to_outer)
        })
        .collect();
    // What still names a loop above the block cannot be said inside it.
    let above: Vec<Var> = sch.func.body.loops_above(&name).unwrap_or_default().iter().map(|l| l.var.clone()).collect();
    if let Some(v) = above.iter().find(|v| inner_pred.iter().any(|c| c.uses(v)) && !is_inner_var(&inner_loops, v)) {
        return Err(ScheduleError::unsupported(format!(
            "the predicate of block `{name}` ties its inner loops to loop `{}` above the new block, which the \
             inner block could not name",
            v.name()
        )));
    }

    // The inner block: the body in the new variables, without the init.
    let taken = block_and_buffer_names(&sch.func);
    let block = &realize.block;
    let inner_block = Block {
        name: name.clone(),
        iter_vars: inner_ivs,
        reads: vec![],
        writes: vec![],
        init: None,
        alloc_buffers: block.alloc_buffers.clone(),
        annotations: block.annotations.clone(),
        body: substitute_stmt(&block.body, &sub),
        span: block.span,
    };
    let ir = with_regions(inner_block, inner_values, all_of(inner_pred.clone()));
    let mut body = Stmt::Block(Box::new(ir.clone()));
    for l in inner_loops.iter().rev() {
        body = Stmt::For(Box::new(l.with_body(body)));
    }

    // The init, in the outer block, over the inner loops it needs.
    let init = block.init.as_ref().map(|init| {
        let init = substitute_stmt(init, &sub);
        let mut names = loop_names(&sch.func.body);
        let mut init_ivs = Vec::new();
        let mut init_values = Vec::new();
        let mut rename: Vec<(Var, Expr)> = Vec::new();
        for (iv, v) in ir.block.iter_vars.iter().zip(&ir.iter_values) {
            if iv.kind == IterKind::Spatial && stmt_uses(&init, &iv.var) {
                let nv = Var::new(format!("{}_init", iv.var.name()), iv.var.dtype());
                rename.push((iv.var.clone(), Expr::var(&nv)));
                init_ivs.push(IterVar { var: nv, dom: iv.dom.clone(), kind: IterKind::Spatial });
                init_values.push(v.clone());
            }
        }
        let init_block = Block {
            name: fresh_name(&taken, &format!("{name}_init")),
            iter_vars: init_ivs,
            reads: vec![],
            writes: vec![],
            init: None,
            alloc_buffers: vec![],
            annotations: vec![],
            body: substitute_stmt(&init, &rename),
            span: None,
        };
        // The init runs over the spatial loops only: a condition on a
        // reduction loop (`k_0 * 8 + k_1 < 12` of a split that does not
        // divide) limits the steps, not the elements to set.
        let kept: Vec<&For> = inner_loops.iter().filter(|l| init_values.iter().any(|v| v.uses(&l.var))).collect();
        let init_pred: Vec<Expr> = inner_pred
            .iter()
            .filter(|c| inner_loops.iter().all(|l| !c.uses(&l.var) || kept.iter().any(|k| k.var == l.var)))
            .cloned()
            .collect();
        let mut nest = Stmt::Block(Box::new(with_regions(init_block, init_values.clone(), all_of(init_pred))));
        let mut loop_sub: Vec<(Var, Expr)> = Vec::new();
        for l in inner_loops.iter().rev() {
            if init_values.iter().any(|v| v.uses(&l.var)) {
                let n = fresh_name(&names, l.var.name());
                names.push(n.clone());
                let nv = Var::new(n, l.var.dtype());
                loop_sub.push((l.var.clone(), Expr::var(&nv)));
                let mut copy = l.with_body(nest);
                copy.var = nv;
                copy.span = None;
                nest = Stmt::For(Box::new(copy));
            }
        }
        substitute_stmt(&nest, &loop_sub)
    });

    let outer_name = fresh_name(&taken, &format!("{name}_o"));
    let outer_block = Block {
        name: outer_name.clone(),
        iter_vars: outer_ivs,
        reads: vec![],
        writes: vec![],
        init,
        alloc_buffers: vec![],
        annotations: vec![],
        body,
        span: None,
    };
    let outer = Stmt::Block(Box::new(with_regions(outer_block, outer_values, all_of(outer_pred))));
    let mut outer = Some(outer);
    sch.func.body = sch.func.body.rewrite(&mut |x| match x {
        Stmt::For(f) if f.var == *lp => outer.take(),
        _ => None,
    });
    Ok(outer_name)
}

/// Divides `e` as `outer * E + inner` over the inner loops `inner` (each
/// from 0 over a constant extent): `(outer, inner, Some(E))`; or, where `e`
/// is not affine in the inner loops but uses no other loop, `(0, e, None)`
/// (the inner block takes it whole). `None` when it cannot be divided.
fn divide(e: &Expr, inner: &[For]) -> Option<(Expr, Expr, Option<i64>)> {
    let t = e.dtype();
    let zero = Expr::Int(0, t);
    let used: Vec<&For> = inner.iter().filter(|l| e.uses(&l.var)).collect();
    if used.is_empty() {
        return Some((e.clone(), zero, Some(1)));
    }
    let coefs: Option<Vec<i64>> = used.iter().map(|l| coefficient(e, &l.var)).collect();
    let Some(coefs) = coefs else {
        // Not affine in the inner loops: whole to the inner block if it
        // speaks of nothing else.
        return only_vars(e, inner).then(|| (zero, e.clone(), None));
    };
    // The inner part, its terms ordered by coefficient, must be dense.
    let mut terms: Vec<(i64, &For)> = coefs.into_iter().zip(used).collect();
    terms.sort_by_key(|(c, _)| *c);
    let mut span = 1i64;
    let mut inner_part: Option<Expr> = None;
    for &(c, l) in &terms {
        if c != span {
            return None;
        }
        span = span.checked_mul(l.extent.as_int()?)?;
        let term = if c == 1 { Expr::var(&l.var) } else { Expr::Int(c, t) * Expr::var(&l.var) };
        inner_part = Some(match inner_part {
            None => term,
            Some(p) => term + p,
        });
    }
    // The rest, without the inner loops, divided by the span.
    let zeroed: Vec<(Var, Expr)> = terms.iter().map(|(_, l)| (l.var.clone(), Expr::Int(0, l.var.dtype()))).collect();
    let rest = Analyzer::new().simplify(&substitute(e, &zeroed));
    let outer = if span == 1 { rest } else { divided(&rest, span)? };
    Some((outer, inner_part?, Some(span)))
}

/// `lhs < n` with `lhs = outer * E + inner` over the inner loops and `n` a
/// multiple of `E` (free of the inner loops): the same condition as
/// `outer * E < n`, which it returns.
fn tile_bound(c: &Expr, inner: &[For]) -> Option<Expr> {
    let Expr::Binary(BinOp::Lt, lhs, n) = c else { return None };
    if inner.iter().any(|l| n.uses(&l.var)) || !inner.iter().any(|l| lhs.uses(&l.var)) {
        return None;
    }
    let (outer, _, Some(span)) = divide(lhs, inner)? else { return None };
    if span <= 1 {
        return None;
    }
    let t = lhs.dtype();
    let rem = Analyzer::new().simplify(&Expr::binary(BinOp::FloorMod, (**n).clone(), Expr::Int(span, t)));
    if rem.as_int() != Some(0) {
        return None;
    }
    Some(Expr::binary(BinOp::Lt, outer * Expr::Int(span, t), (**n).clone()))
}

/// `e / k` for a sum `e` whose terms each have a literal coefficient that
/// is a multiple of `k` (a term is any expression times a literal: a
/// variable, or a division of outer loops such as `f // 2 * 32`).
fn divided(e: &Expr, k: i64) -> Option<Expr> {
    let t = e.dtype();
    let mut terms: Vec<(i64, Expr)> = Vec::new();
    additive_terms(e, 1, &mut terms);
    let mut constant = 0i64;
    let mut out: Option<Expr> = None;
    for (c, x) in terms {
        if c % k != 0 {
            return None;
        }
        match x.as_int() {
            Some(v) => constant += c / k * v,
            None if c == 0 => {}
            None => {
                let term = if c == k { x } else { x * Expr::Int(c / k, t) };
                out = Some(match out {
                    None => term,
                    Some(o) => o + term,
                });
            }
        }
    }
    Some(match out {
        None => Expr::Int(constant, t),
        Some(o) if constant == 0 => o,
        Some(o) => o + Expr::Int(constant, t),
    })
}

/// `e` as `sum(c * term)` over its top-level `+`, `-` and products with a
/// literal; a literal is a term of its own (coefficient `c`, term 1).
fn additive_terms(e: &Expr, sign: i64, out: &mut Vec<(i64, Expr)>) {
    match e {
        Expr::Binary(BinOp::Add, a, b) => {
            additive_terms(a, sign, out);
            additive_terms(b, sign, out);
        }
        Expr::Binary(BinOp::Sub, a, b) => {
            additive_terms(a, sign, out);
            additive_terms(b, -sign, out);
        }
        Expr::Binary(BinOp::Mul, a, b) => match (a.as_int(), b.as_int()) {
            (Some(c), _) => additive_terms(b, sign * c, out),
            (_, Some(c)) => additive_terms(a, sign * c, out),
            _ => out.push((sign, e.clone())),
        },
        Expr::Int(v, t) => out.push((sign * v, Expr::Int(1, *t))),
        _ => out.push((sign, e.clone())),
    }
}

/// Whether every variable of `e` is one of the loops `ls`.
fn only_vars(e: &Expr, ls: &[For]) -> bool {
    let mut ok = true;
    e.walk(&mut |x| {
        if let Expr::Var(v) = x {
            ok &= ls.iter().any(|l| l.var == *v);
        }
    });
    ok
}

/// A block realize with its read and write regions inferred (and
/// simplified: an inner variable's lowest value, 0, leaves `+ 0`).
fn is_inner_var(inner_loops: &[For], v: &Var) -> bool {
    inner_loops.iter().any(|l| l.var == *v)
}

fn with_regions(mut block: Block, iter_values: Vec<Expr>, predicate: Expr) -> BlockRealize {
    let (reads, writes) = infer_block_regions(&block);
    let a = Analyzer::new();
    let tidy = |rs: Vec<BufferRegion>| -> Vec<BufferRegion> {
        rs.into_iter()
            .map(|r| BufferRegion {
                buffer: r.buffer,
                region: r.region.iter().map(|g| Range::new(a.simplify(&g.min), a.simplify(&g.extent))).collect(),
            })
            .collect()
    };
    block.reads = tidy(reads);
    block.writes = tidy(writes);
    BlockRealize { iter_values, predicate, block }
}

/// Whether any expression in `s` reads `v`.
fn stmt_uses(s: &Stmt, v: &Var) -> bool {
    let mut used = false;
    s.walk(&mut |x| x.for_each_expr(|e| used |= e.uses(v)));
    used
}
