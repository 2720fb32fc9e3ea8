//! `reindex(block, buffer)`: a copy of one buffer of a block laid out by
//! the block's own iteration variables, and a block that moves the data.
//!
//! The block's accesses to the buffer, all at the same indices (`A[vj,
//! vi]`), become accesses to `<buffer>_reindex` at the block variables those
//! indices use, in the block's order (`A_reindex[vi, vj]`); a variable the
//! indices do not use gets no dimension. A dimension's extent is its
//! variable's `min + extent`. For a buffer the block reads, a block
//! `<buffer>_reindex` copying `A[vj, vi]` into `A_reindex[vi, vj]` over the
//! used variables' domains is inserted before the block's top-level loop
//! nest; for a buffer it writes (a reduction's output included: its init and
//! update both move to the copy), one copying back is inserted after it. The
//! copy's variables are all spatial, each bound to a loop of its own (`ax0,
//! ax1..`). It is what TVM's tensor-core schedules do before
//! `transform_block_layout`: every operand then has the block's layout.
//!
//! A buffer given by name is the block's write buffer of that name if there
//! is one, else its read buffer (TVM's rule).
//!
//! Preconditions, checked in this order:
//! 1. The block is in the function, directly in the root block's scope.
//! 2. The buffer names one of the block's reads or writes.
//! 3. A buffer named by `("read", i)` is not also written by the block: the
//!    block would write the copy and its results would be lost (reindex it
//!    as `("write", j)`).
//! 4. The block is a leaf: no block nested in it.
//! 5. Every access of the block to the buffer uses the same indices.
//! 6. The block's top-level statement is a chain of loops holding only the
//!    block, which the copy is placed before or after.
//! 7. For a written buffer, no other block writes it: the copy back would
//!    overwrite their results.
//! 8. An access made only under a condition (an `if`, a select, the padding
//!    of `T.if_then_else`) stays inside the buffer over the whole domain of
//!    the block's variables: the copy makes it for every value.
//! 9. A written buffer is written unconditionally, and read only after an
//!    init: the copy back writes every element of the domain, and the
//!    reindexed buffer starts with no values.
//! 10. A used variable bound to a plain loop takes its whole domain from
//!     it: the copies run over the domain.

use super::cache::{block_nest, root_scope_block, root_stmts, set_root};
use super::transform_layout::BufferRef;
use super::{BlockRV, Result, Schedule, ScheduleError};
use crate::arith::Analyzer;
use crate::common::tree::{accessed_under_condition, block_and_buffer_names, fresh_name};
use tirc_ir::region::{block_buffers, infer_block_regions};
use tirc_ir::structural_eq::same_expr;
use tirc_ir::{Block, Buffer, DType, Expr, IterVar, Range, Stmt, Var};

pub fn reindex(sch: &mut Schedule, block: &BlockRV, buffer: &BufferRef) -> Result<BlockRV> {
    // 1.
    let (top, r) = root_scope_block(sch, block, "reindexes")?;
    // 2. (As for cache_read, a reduction's output is not among its reads.)
    let reads = block_buffers(&r, true);
    let writes = block_buffers(&r, false);
    let (buf, write) = match buffer {
        BufferRef::Read(i) => (reads.get(*i).cloned(), false),
        BufferRef::Write(i) => (writes.get(*i).cloned(), true),
        BufferRef::Name(n) => match writes.iter().find(|b| b.name() == n) {
            Some(b) => (Some(b.clone()), true),
            None => (reads.iter().find(|b| b.name() == n).cloned(), false),
        },
    };
    let buf = buf.ok_or_else(|| {
        let list = |bs: &[Buffer]| {
            if bs.is_empty() {
                "nothing".to_string()
            } else {
                bs.iter().enumerate().map(|(i, b)| format!("{i}: `{}`", b.name())).collect::<Vec<_>>().join(", ")
            }
        };
        ScheduleError::bad_argument(format!(
            "block `{block}` has no buffer {buffer}: it reads {} and writes {}",
            list(&reads),
            list(&writes)
        ))
    })?;
    // 3.
    if !write && writes.contains(&buf) {
        let j = writes.iter().position(|b| *b == buf).unwrap_or(0);
        return Err(ScheduleError::new(format!(
            "block `{block}` writes `{}` as well as reading it: a copy made before the block would receive its results and nothing would copy them back",
            buf.name()
        ))
        .help(format!("reindex it as a write: sch.reindex(block, (\"write\", {j}))")));
    }
    // 4.
    let mut nested = r.block.body.blocks().len();
    if let Some(init) = &r.block.init {
        nested += init.blocks().len();
    }
    if nested > 0 {
        return Err(ScheduleError::new(format!(
            "block `{block}` holds other blocks; reindex takes a leaf block, whose accesses are its own"
        )));
    }
    // 5.
    let mut first: Option<Vec<Expr>> = None;
    let mut differ = None;
    let mut visit = |s: &Stmt| {
        s.for_each_access(&mut |b, idx, _| {
            if *b != buf {
                return;
            }
            match &first {
                None => first = Some(idx.to_vec()),
                Some(f) if f.len() != idx.len() || !f.iter().zip(idx).all(|(x, y)| same_expr(x, y)) => {
                    differ = Some(idx.to_vec())
                }
                Some(_) => {}
            }
        })
    };
    if let Some(init) = &r.block.init {
        visit(init);
    }
    visit(&r.block.body);
    let print = |idx: &[Expr]| idx.iter().map(tirc_ir::printer::print_expr).collect::<Vec<_>>().join(", ");
    let Some(indices) = first else {
        return Err(ScheduleError::new(format!(
            "block `{block}` names `{}` in its regions but neither loads nor stores it",
            buf.name()
        )));
    };
    if let Some(other) = differ {
        return Err(ScheduleError::new(format!(
            "block `{block}` accesses `{}` at [{}] and at [{}]; reindex needs one set of indices",
            buf.name(),
            print(&indices),
            print(&other)
        )));
    }
    // 6.
    let stmts = root_stmts(&sch.func.body);
    if !is_chain(&stmts[top], block) {
        return Err(ScheduleError::unsupported(format!(
            "the loop nest of block `{block}` holds other statements; reindex places its copy before or after a nest that holds only the block"
        )));
    }
    // 7.
    if write {
        if let Some(other) = sch.func.body.blocks().into_iter().find(|o| {
            o.block.name != *block && o.block.name != "root" && o.block.writes.iter().any(|w| w.buffer == buf)
        }) {
            return Err(ScheduleError::new(format!(
                "block `{}` writes `{}` too; the copy back from `{block}`'s reindexed buffer would overwrite its results",
                other.block.name,
                buf.name()
            )));
        }
    }

    // The used variables, in the block's order, and the simplified indices.
    let mut a = Analyzer::new();
    for iv in &r.block.iter_vars {
        a.bind_range(&iv.var, &iv.dom.min, &iv.dom.extent);
    }
    let indices: Vec<Expr> = indices.iter().map(|e| a.simplify(e)).collect();
    let used: Vec<&IterVar> = r.block.iter_vars.iter().filter(|iv| indices.iter().any(|e| e.uses(&iv.var))).collect();
    // 9.
    if write {
        let reads_first = r.block.init.is_none() && r.block.body.loads_from(&buf);
        let conditional = accessed_under_condition(&r.block.body, &buf)
            || r.block.init.as_ref().is_some_and(|i| accessed_under_condition(i, &buf));
        if reads_first || conditional {
            let what = if reads_first {
                format!("reads `{}` before writing it, with no init", buf.name())
            } else {
                format!("writes `{}` only under a condition", buf.name())
            };
            return Err(ScheduleError::new(format!(
                "block `{block}` {what}: the reindexed copy would start without the buffer's values, and the copy back would overwrite elements the block leaves alone"
            ))
            .help("reindex a block that writes every element of its domain"));
        }
    }
    // 10.
    let loops_above = sch.func.body.loops_above(block).unwrap_or_default();
    for (iv, value) in r.block.iter_vars.iter().zip(&r.iter_values) {
        if !used.iter().any(|u| u.var == iv.var) {
            continue;
        }
        let Some(l) = value.as_var().and_then(|v| loops_above.iter().find(|l| &l.var == v)) else { continue };
        let (Some(lo), Some(n), Some(dlo), Some(dn)) =
            (l.min.as_int(), l.extent.as_int(), iv.dom.min.as_int(), iv.dom.extent.as_int())
        else {
            continue;
        };
        if (lo, n) != (dlo, dn) {
            return Err(ScheduleError::new(format!(
                "block variable `{}` has domain {dlo}..{}, but its loop `{}` gives it only {lo}..{}: the copy, made over the domain, would touch elements of `{}` the block does not",
                iv.var.name(),
                dlo + dn,
                l.var.name(),
                lo + n,
                buf.name()
            ))
            .help("give the variable its loop's range as its domain"));
        }
    }
    // 8.
    let mut guarded = false;
    if let Some(init) = &r.block.init {
        guarded |= accessed_under_condition(init, &buf);
    }
    guarded |= accessed_under_condition(&r.block.body, &buf);
    if guarded {
        a.bind_sizes(&sch.func.sizes);
        for (d, (e, n)) in indices.iter().zip(buf.shape()).enumerate() {
            let inside = Expr::and(
                Expr::binary(tirc_ir::BinOp::Ge, e.clone(), Expr::int(0)),
                Expr::binary(tirc_ir::BinOp::Lt, e.clone(), n.clone()),
            );
            if a.prove(&inside) != Some(true) {
                return Err(ScheduleError::new(format!(
                    "block `{block}` accesses `{}` at [{}] only under a condition, and over the block's domain index {d} ({}) can leave the buffer: the copy, made for every value of the domain, would access it outside its bounds",
                    buf.name(),
                    print(&indices),
                    tirc_ir::printer::print_expr(e)
                ))
                .help("pad the buffer first (a padded copy, or pad_einsum), or cache_read it, whose copy keeps to the buffer"));
            }
        }
    }

    let taken = block_and_buffer_names(&sch.func);
    let name = fresh_name(&taken, &format!("{}_reindex", buf.name()));
    let shape: Vec<Expr> = used
        .iter()
        .map(|iv| a.simplify(&Expr::binary(tirc_ir::BinOp::Add, iv.dom.min.clone(), iv.dom.extent.clone())))
        .collect();
    let nb = buf.derive(|n| {
        n.name = name.clone();
        n.shape = shape;
    });

    // The copy: `nb[v0, v1..] = buf[indices over v]` or back.
    let ranges: Vec<(Range, DType)> = used.iter().map(|iv| (iv.dom.clone(), iv.var.dtype())).collect();
    let nest = block_nest(&mut sch.func.body.clone(), &ranges, "ax", |iter_vars| {
        let map: Vec<(Var, Expr)> =
            used.iter().zip(&iter_vars).map(|(iv, v)| (iv.var.clone(), Expr::var(&v.var))).collect();
        let at_buf: Vec<Expr> = indices.iter().map(|e| tirc_ir::subst::substitute(e, &map)).collect();
        let at_nb: Vec<Expr> = iter_vars.iter().map(|v| Expr::var(&v.var)).collect();
        let (src, src_idx, dst, dst_idx) = if write { (&nb, at_nb, &buf, at_buf) } else { (&buf, at_buf, &nb, at_nb) };
        let copy = Block {
            name: name.clone(),
            iter_vars,
            reads: vec![],
            writes: vec![],
            init: None,
            alloc_buffers: vec![],
            annotations: vec![],
            body: Stmt::Store { buffer: dst.clone(), indices: dst_idx, value: Expr::Load(src.clone(), src_idx) },
            span: None,
        };
        let (reads, writes) = infer_block_regions(&copy);
        Block { reads, writes, ..copy }
    });

    // The block, reading and writing `nb` at its used variables.
    let at_own: Vec<Expr> = used.iter().map(|iv| Expr::var(&iv.var)).collect();
    let redirect = |s: Stmt| -> Stmt {
        let s = s.map_exprs(&mut |e| redirect_loads(e, &buf, &nb, &at_own));
        s.rewrite_owned(&mut |x| match x {
            Stmt::Store { buffer, value, .. } if buffer == buf => {
                tirc_ir::stmt::Rewrite::Done(Stmt::Store { buffer: nb.clone(), indices: at_own.clone(), value })
            }
            x => tirc_ir::stmt::Rewrite::Descend(x),
        })
    };
    let mut body = Vec::new();
    for (i, s) in stmts.into_iter().enumerate() {
        if i != top {
            body.push(s);
            continue;
        }
        let s = s.rewrite_owned(&mut |x| match x {
            Stmt::Block(mut rr) if rr.block.name == *block => {
                rr.block.body = redirect(std::mem::replace(&mut rr.block.body, Stmt::NoOp));
                rr.block.init = rr.block.init.take().map(&redirect);
                let (reads, writes) = infer_block_regions(&rr.block);
                rr.block.reads = reads;
                rr.block.writes = writes;
                tirc_ir::stmt::Rewrite::Done(Stmt::Block(rr))
            }
            x => tirc_ir::stmt::Rewrite::Descend(x),
        });
        if write {
            body.push(s);
            body.push(nest.clone());
        } else {
            body.push(nest.clone());
            body.push(s);
        }
    }
    set_root(sch, body, vec![nb]);
    Ok(name)
}

/// Whether `s` is loops, each the only statement of the one above, down to
/// the block named `block`.
fn is_chain(s: &Stmt, block: &str) -> bool {
    match s {
        Stmt::For(l) => is_chain(&l.body, block),
        Stmt::Block(r) => r.block.name == block,
        _ => false,
    }
}

/// `e` with each load of `b` a load of `nb` at `at`.
fn redirect_loads(e: &Expr, b: &Buffer, nb: &Buffer, at: &[Expr]) -> Expr {
    let e = e.map_children(|c| redirect_loads(c, b, nb, at));
    match e {
        Expr::Load(x, _) if x == *b => Expr::Load(nb.clone(), at.to_vec()),
        e => e,
    }
}
