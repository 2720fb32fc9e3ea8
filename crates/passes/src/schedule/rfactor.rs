//! `rfactor(loop, factor_axis)`: a reduction split in two along one of its
//! loops, TVM's primitive of that name and arguments.
//!
//! The reduction block `B` (`C[s] = C[s] op f(r)` with an init) becomes:
//! - `B_rf`, under a copy of all of `B`'s loops (new loops, named
//!   `<loop>_rf`) placed just before the nest that holds `B`, which
//!   accumulates into a new buffer `C_rf` one partial result per iteration
//!   of `loop`: `loop` feeds a new spatial variable of `B_rf`, and `C_rf` is
//!   `C` with a dimension of `loop`'s extent inserted at `factor_axis`
//!   (negative counts from the end, `-1` appends it). Its variables are that
//!   one, `B`'s spatial variables, and one reduction variable per other loop
//!   that fed `B`'s reduction variables; its init is the identity of `op`.
//!   The parts of `B`'s predicate that speak of those other loops guard
//!   its update inside the block (an `if`), so that every partial result,
//!   one that no iteration reaches included, is initialized.
//! - `B` in its place, under its loops less the other reduction loops
//!   (`loop` stays, and feeds its one reduction variable), which combines
//!   the partial results, `C[s] = C[s] op C_rf[.., r, ..]`, with `B`'s own
//!   init; its predicate keeps the parts that do not speak of the removed
//!   loops. So blocks that share loops with `B` still see `C` complete
//!   where they did. The loop handles the schedule holds keep naming `B`'s
//!   loops; `get_loops` of the returned block gives the new ones.
//!
//! The partial results of different iterations of `loop` are independent,
//! so `loop` can then be bound to threads or blocks (split-K); the sum is
//! regrouped, which for floating point changes the rounding, as in TVM.
//!
//! Preconditions, checked in this order:
//! 1. The loop is in the function, serial or unrolled, and holds exactly
//!    one block, with nothing but loops between them; so does the outermost
//!    loop that feeds a reduction variable of the block.
//! 2. The block is in the root block's scope.
//! 3. The block is a reduction: an init, and an update
//!    `C[s] = C[s] op v` with `op` one of `+ * min max`, `v` not reading `C`
//!    (or several such, each of its own buffer: TVM's tuple reductions), or
//!    an argmax's selection (`common::reduction::reducer`); the init stores
//!    into each output's element. With several outputs each gets its
//!    `C_rf`, and `B_rf` starts a selection from the init's constants.
//! 4. No other block writes an output, and no other block of the nest that
//!    holds the block writes a buffer the block reads (`B_rf`, placed
//!    before that nest, would read it before it is written).
//! 5. The loop feeds a reduction variable of the block and no spatial one,
//!    no loop feeds both kinds, and every variable's binding is an
//!    expression of the loops around the block.
//! 6. `factor_axis` is in `-(ndim + 1)..=ndim`, `ndim` the dimensions of `C`.
//! 7. The parts of the predicate that speak of the reduction loops other
//!    than `loop` name no loop that is not some variable's whole binding.

use super::{BlockRV, LoopRV, Result, Schedule, ScheduleError};
use crate::arith::{all_of, conjuncts};
use crate::common::reduction::{flatten_stores, reducer};
use crate::common::tree::{block_and_buffer_names, fresh_name, get_loop, loop_names};
use tirc_ir::region::{block_buffers, infer_block_regions};
use tirc_ir::subst::substitute;
use tirc_ir::{Block, BlockRealize, Buffer, Expr, For, ForKind, IterKind, IterVar, Range, Scope, Stmt, Var};

pub fn rfactor(sch: &mut Schedule, lp: &LoopRV, factor_axis: i64) -> Result<BlockRV> {
    // 1.
    let l = get_loop(&sch.func.body, lp)?.clone();
    if !matches!(l.kind, ForKind::Serial | ForKind::Unrolled) {
        return Err(ScheduleError::new(format!(
            "loop `{}` is not serial: only a serial loop's reduction can be factored",
            lp.name()
        )));
    }
    let blocks = l.body.blocks();
    let [r] = &blocks[..] else {
        return Err(ScheduleError::new(format!(
            "loop `{}` holds {} blocks; rfactor needs exactly one reduction block under it",
            lp.name(),
            blocks.len()
        )));
    };
    let r: BlockRealize = (*r).clone();
    let name = r.block.name.clone();
    if not_a_nest(&l, &name).is_some() {
        return Err(ScheduleError::new(format!(
            "loop `{}` holds other statements besides the loops down to block `{name}`",
            lp.name()
        )));
    }
    // 2.
    let root_stmts = super::cache::root_stmts(&sch.func.body);
    let top = root_stmts.iter().position(|x| x.find_block(&name).is_some());
    let owner = super::cache::top_level_owner(&sch.func.body, &name);
    let Some(top) = top.filter(|_| owner.as_deref().is_none_or(|o| o == "root")) else {
        return Err(ScheduleError::unsupported(format!(
            "block `{name}` is nested in another block; tirc factors blocks of the root scope only"
        )));
    };
    // 3.
    let not_reduction = |why: &str| {
        ScheduleError::new(format!("block `{name}` is not a reduction rfactor can split: {why}"))
            .help("it needs an init and an update C[..] = C[..] op v, with op one of + * min max")
    };
    let init = r.block.init.clone().ok_or_else(|| not_reduction("it has no init"))?;
    let red = reducer(&r.block.body, Some(&init))
        .ok_or_else(|| not_reduction("its update is not C[..] = C[..] op v, nor an argmax's selection"))?;
    let init_stores = flatten_stores(&init).ok_or_else(|| not_reduction("its init is not stores"))?;
    let initialized = |b: &Buffer, i: &[Expr]| {
        init_stores.iter().any(|(ib, ij, _)| {
            ib == b && ij.len() == i.len() && ij.iter().zip(i).all(|(x, y)| tirc_ir::structural_eq::same_expr(x, y))
        })
    };
    if init_stores.len() != red.outs.len() || red.outs.iter().any(|(b, i)| !initialized(b, i)) {
        return Err(not_reduction("its init stores to another element than its update"));
    }
    // 4.
    for (out, _) in &red.outs {
        if let Some(other) = sch
            .func
            .body
            .blocks()
            .into_iter()
            .find(|o| o.block.name != name && o.block.name != "root" && block_buffers(o, false).contains(out))
        {
            return Err(ScheduleError::new(format!(
                "block `{}` writes `{}` too: rfactor needs block `{name}` to be its only writer",
                other.block.name,
                out.name()
            )));
        }
    }
    // 4b. `B_rf` runs before the whole nest that holds `B`: what `B` reads
    // must not be written by another block of that nest.
    let inputs = block_buffers(&r, true);
    if let Some((other, buf)) = root_stmts[top].blocks().into_iter().filter(|o| o.block.name != name).find_map(|o| {
        block_buffers(o, false).into_iter().find(|b| inputs.contains(b)).map(|b| (o.block.name.clone(), b))
    }) {
        return Err(ScheduleError::new(format!(
            "block `{other}` writes `{}`, which block `{name}` reads, in the same loop nest: the factored reduction runs before that nest and would read `{}` before it is written",
            buf.name(),
            buf.name()
        ))
        .help(format!("move `{other}` out of the nest (or inline it) before rfactor")));
    }
    // 5.
    let path: Vec<For> = sch.func.body.loops_above(&name).unwrap_or_default().into_iter().cloned().collect();
    let loop_vars: Vec<&Var> = path.iter().map(|x| &x.var).collect();
    let vars_of = |e: &Expr| -> Vec<Var> {
        let mut vs = Vec::new();
        e.walk(&mut |x| {
            if let Expr::Var(v) = x {
                if !vs.contains(v) {
                    vs.push(v.clone());
                }
            }
        });
        vs
    };
    let bindings: Vec<(&IterVar, &Expr)> = r.block.iter_vars.iter().zip(&r.iter_values).collect();
    for (iv, e) in &bindings {
        if let Some(x) = vars_of(e).iter().find(|x| !loop_vars.contains(x)) {
            return Err(ScheduleError::new(format!(
                "the binding of `{}` uses `{}`, which is not a loop around block `{name}`",
                iv.var.name(),
                x.name()
            )));
        }
    }
    let feeds = |kind: IterKind| bindings.iter().any(|(iv, e)| iv.kind == kind && e.uses(lp));
    if feeds(IterKind::Spatial) || feeds(IterKind::Opaque) {
        return Err(ScheduleError::new(format!(
            "loop `{}` feeds a spatial variable of block `{name}`: only a reduction loop can be factored",
            lp.name()
        )));
    }
    if !feeds(IterKind::Reduce) {
        return Err(ScheduleError::new(format!("loop `{}` feeds no reduction variable of block `{name}`", lp.name())));
    }
    // 6.
    let (out0, idx0) = &red.outs[0];
    let ndim = idx0.len() as i64;
    if let Some((b, _)) = red.outs.iter().find(|(_, i)| i.len() != idx0.len()) {
        return Err(not_reduction(&format!("its outputs `{}` and `{}` have different ranks", out0.name(), b.name())));
    }
    if !(-(ndim + 1)..=ndim).contains(&factor_axis) {
        return Err(ScheduleError::bad_argument(format!(
            "factor_axis {factor_axis} is out of range: `{}` has {ndim} dimension(s), so it must be in [{}, {ndim}]",
            out0.name(),
            -(ndim + 1)
        )));
    }
    let axis = if factor_axis < 0 { factor_axis + ndim + 1 } else { factor_axis } as usize;

    // From the outermost loop that feeds a reduction variable down to the
    // block, nothing but the nest: those loops leave the write-back.
    let feeds_reduce = |x: &For| bindings.iter().any(|(iv, e)| iv.kind == IterKind::Reduce && e.uses(&x.var));
    let feeds_spatial = |x: &For| bindings.iter().any(|(iv, e)| iv.kind != IterKind::Reduce && e.uses(&x.var));
    if let Some(x) = path.iter().find(|x| feeds_reduce(x) && feeds_spatial(x)) {
        return Err(ScheduleError::new(format!(
            "loop `{}` feeds both a spatial and a reduction variable of block `{name}`",
            x.var.name()
        )));
    }
    let r0 = path.iter().position(&feeds_reduce).unwrap_or(0);
    if let Some(x) = not_a_nest(&path[r0], &name) {
        return Err(ScheduleError::new(format!(
            "loop `{}` holds other statements besides the nest of block `{name}`: the reduction loops must \
             form a nest of their own down to the block",
            x.var.name()
        )));
    }

    // B_rf, in a copy of the loops: a spatial variable for `lp`, B's
    // spatial variables, a reduction variable per other reduction loop.
    let fresh_loop: Vec<(Var, Expr)> = {
        let mut names = loop_names(&sch.func.body);
        path.iter()
            .map(|x| {
                let n = fresh_name(&names, &format!("{}_rf", x.var.name()));
                names.push(n.clone());
                (x.var.clone(), Expr::var(&Var::new(n, x.var.dtype())))
            })
            .collect()
    };
    let new_loop = |v: &Var| substitute(&Expr::var(v), &fresh_loop);
    let block_var = |x: &For| Var::new(format!("v{}", x.var.name()), x.var.dtype());
    let rf_var = block_var(&l);
    let mut loop_to_var: Vec<(Var, Expr)> = vec![(l.var.clone(), Expr::var(&rf_var))];
    let mut rf_ivs = vec![IterVar {
        var: rf_var.clone(),
        dom: Range::new(l.min.clone(), l.extent.clone()),
        kind: IterKind::Spatial,
    }];
    let mut rf_values = vec![new_loop(&l.var)];
    for (iv, e) in &bindings {
        if iv.kind == IterKind::Spatial {
            rf_ivs.push((*iv).clone());
            rf_values.push(substitute(e, &fresh_loop));
        }
    }
    for x in path.iter().filter(|x| feeds_reduce(x) && x.var != l.var) {
        let v = block_var(x);
        rf_ivs.push(IterVar {
            var: v.clone(),
            dom: Range::new(x.min.clone(), x.extent.clone()),
            kind: IterKind::Reduce,
        });
        rf_values.push(new_loop(&x.var));
        loop_to_var.push((x.var.clone(), Expr::var(&v)));
    }
    // B's reduction variables in terms of the new ones.
    let reduce_map: Vec<(Var, Expr)> = bindings
        .iter()
        .filter(|(iv, _)| iv.kind == IterKind::Reduce)
        .map(|(iv, e)| (iv.var.clone(), substitute(e, &loop_to_var)))
        .collect();
    // One partial-result buffer an output, `lp`'s dimension at `axis`.
    let taken = block_and_buffer_names(&sch.func);
    let mut buffer_names = taken.clone();
    let mut rf_outs: Vec<(Buffer, Vec<Expr>)> = Vec::new();
    for (out, idx) in &red.outs {
        let mut shape = out.shape().to_vec();
        shape.insert(axis, l.extent.clone());
        let rf_name = fresh_name(&buffer_names, &format!("{}_rf", out.name()));
        buffer_names.push(rf_name.clone());
        let scope = if out.scope() == Scope::Local { Scope::Local } else { Scope::Global };
        let mut rf_idx = idx.clone();
        rf_idx.insert(axis, Expr::var(&rf_var));
        rf_outs.push((Buffer::new(rf_name, out.dtype(), shape, scope), rf_idx));
    }
    let rf_bufs: Vec<Buffer> = rf_outs.iter().map(|(b, _)| b.clone()).collect();
    // 7. The parts of B's predicate that speak of the loops B_rf reduces
    // over guard its update, not the block: a partial result that no
    // iteration reaches (the last row of a split the factor does not
    // divide) must still be initialized, since B reads it. They are said
    // in B_rf's variables.
    let reduced_loops: Vec<&Var> = path.iter().filter(|x| feeds_reduce(x) && x.var != l.var).map(|x| &x.var).collect();
    let (guard, stays): (Vec<Expr>, Vec<Expr>) =
        conjuncts(&r.predicate).into_iter().partition(|c| reduced_loops.iter().any(|v| c.uses(v)));
    let mut to_block_vars = loop_to_var.clone();
    for (iv, e) in &bindings {
        if let (IterKind::Spatial, Expr::Var(lv)) = (iv.kind, e) {
            to_block_vars.push((lv.clone(), Expr::var(&iv.var)));
        }
    }
    let guard = substitute(&all_of(guard), &to_block_vars);
    if let Some(x) = path.iter().find(|x| guard.uses(&x.var)) {
        return Err(ScheduleError::new(format!(
            "the predicate of block `{name}` ties its reduction to loop `{}`, which no variable of the block \
             is bound to: the partial block could not say where its part is empty",
            x.var.name()
        )));
    }
    let loads = |outs: &[(Buffer, Vec<Expr>)]| -> Vec<Expr> {
        outs.iter().map(|(b, i)| Expr::Load(b.clone(), i.clone())).collect()
    };
    let elems: Vec<Expr> = red.elems.iter().map(|e| substitute(e, &reduce_map)).collect();
    let rf_block_name = fresh_name(&taken, &format!("{name}_rf"));
    let rf_store = red.assign(&rf_outs, red.apply(&loads(&rf_outs), &elems), &rf_block_name);
    let rf_update = if guard.as_int() == Some(1) { rf_store } else { Stmt::if_then(guard, rf_store) };
    let rf_init = Stmt::seq(
        rf_outs
            .iter()
            .zip(&red.start)
            .map(|((b, i), v)| Stmt::Store { buffer: b.clone(), indices: i.clone(), value: v.clone() })
            .collect(),
    );
    let rf_realize = realize(
        Block {
            name: rf_block_name.clone(),
            iter_vars: rf_ivs,
            reads: vec![],
            writes: vec![],
            init: Some(rf_init),
            alloc_buffers: vec![],
            annotations: r.block.annotations.clone(),
            body: rf_update,
            span: None,
        },
        rf_values,
        substitute(&all_of(stays), &fresh_loop),
    );
    let mut rf_nest = rf_realize;
    for x in path.iter().rev() {
        let Some(Expr::Var(nv)) = fresh_loop.iter().find(|(o, _)| *o == x.var).map(|(_, n)| n.clone()) else {
            continue;
        };
        rf_nest = Stmt::For(Box::new(For {
            var: nv,
            min: substitute(&x.min, &fresh_loop),
            extent: substitute(&x.extent, &fresh_loop),
            kind: x.kind,
            annotations: x.annotations.clone(),
            body: rf_nest,
            span: None,
        }));
    }

    // B in its place, over `lp` instead of the other reduction loops: its
    // predicate keeps the parts that speak of the loops it keeps.
    let dropped: Vec<&Var> = path.iter().filter(|x| feeds_reduce(x) && x.var != l.var).map(|x| &x.var).collect();
    let wb_rf_var = Var::new(format!("{}_1", rf_var.name()), rf_var.dtype());
    let mut wb_ivs = vec![IterVar {
        var: wb_rf_var.clone(),
        dom: Range::new(l.min.clone(), l.extent.clone()),
        kind: IterKind::Reduce,
    }];
    let mut wb_values = vec![Expr::var(&l.var)];
    let mut spatial_map: Vec<(Var, Expr)> = Vec::new();
    for (iv, e) in &bindings {
        if iv.kind == IterKind::Spatial {
            let nv = Var::new(iv.var.name(), iv.var.dtype());
            wb_ivs.push(IterVar { var: nv.clone(), dom: iv.dom.clone(), kind: IterKind::Spatial });
            wb_values.push((*e).clone());
            spatial_map.push((iv.var.clone(), Expr::var(&nv)));
        }
    }
    let wb_outs: Vec<(Buffer, Vec<Expr>)> = red
        .outs
        .iter()
        .map(|(b, idx)| (b.clone(), idx.iter().map(|e| substitute(e, &spatial_map)).collect()))
        .collect();
    let wb_rf: Vec<(Buffer, Vec<Expr>)> = wb_outs
        .iter()
        .zip(&rf_bufs)
        .map(|((_, i), rb)| {
            let mut i = i.clone();
            i.insert(axis, Expr::var(&wb_rf_var));
            (rb.clone(), i)
        })
        .collect();
    let wb_update = red.assign(&wb_outs, red.apply(&loads(&wb_outs), &loads(&wb_rf)), &name);
    let wb_init = tirc_ir::subst::substitute_stmt(&init, &spatial_map);
    let kept = conjuncts(&r.predicate).into_iter().filter(|c| !dropped.iter().any(|v| c.uses(v)));
    let mut wb = realize(
        Block {
            name: name.clone(),
            iter_vars: wb_ivs,
            reads: vec![],
            writes: vec![],
            init: Some(wb_init),
            alloc_buffers: vec![],
            annotations: vec![],
            body: wb_update,
            span: r.block.span,
        },
        wb_values,
        all_of(kept),
    );
    for x in path[r0..].iter().rev() {
        if !dropped.contains(&&x.var) {
            wb = Stmt::For(Box::new(x.with_body(wb)));
        }
    }

    let mut stmts = root_stmts;
    let r0_var = path[r0].var.clone();
    let mut wb = Some(wb);
    stmts[top] = stmts[top].rewrite(&mut |x| match x {
        Stmt::For(f) if f.var == r0_var => wb.take(),
        _ => None,
    });
    stmts.insert(top, rf_nest);
    super::cache::set_root(sch, stmts, rf_bufs);
    Ok(rf_block_name)
}

/// The first loop from `l` down whose body is neither the next loop nor
/// the block `name`: `None` when `l` holds a plain nest down to the block.
fn not_a_nest<'a>(l: &'a For, name: &str) -> Option<&'a For> {
    let mut x = l;
    loop {
        match &x.body {
            Stmt::For(inner) => x = inner,
            Stmt::Block(b) if b.block.name == name => return None,
            _ => return Some(x),
        }
    }
}

/// A block realize with its read and write regions inferred.
fn realize(mut block: Block, iter_values: Vec<Expr>, predicate: Expr) -> Stmt {
    let (reads, writes) = infer_block_regions(&block);
    block.reads = reads;
    block.writes = writes;
    Stmt::Block(Box::new(BlockRealize { iter_values, predicate, block }))
}
