//! `compute_inline(block)`, `reverse_compute_inline(block)` and
//! `set_scope(block, buffer_index, storage_scope)`.
//!
//! `compute_inline` removes an element-wise producer `B[v0, .., vn] = e` and
//! puts `e`, at the indices of each read, wherever `B` was read.
//! `reverse_compute_inline` removes an element-wise consumer
//! `C[f(v)] = g(B[v0, .., vn])` and makes the producer of `B` write
//! `C[f(idx)] = g(e)` directly. Either way the intermediate buffer goes.
//!
//! Preconditions of `compute_inline`, checked in this order:
//! 1. The block is in the function and is not the root.
//! 2. It is spatial (no init, no reduction variable) and its body is one
//!    store at its iteration variables, each once (`B[v0, v1] = ...`).
//! 3. `B` is allocated by the function (not a parameter: its values are a
//!    result), no other block writes it, and the value does not read it.
//! 4. No block from it to its last consumer (the consumers included)
//!    writes what it reads: its reads move to the consumers.
//!
//! Preconditions of `reverse_compute_inline`:
//! 1. and 2. as above, for a body `C[...] = g` that reads one buffer `B`
//!    produced in the function at exactly its iteration variables, whose
//!    domains are `B`'s shape or a box of it from its origin, under no
//!    predicate. On a box (the producer computes more than is read: the
//!    output of `pad_einsum`), the producer's predicate keeps the elements
//!    read: `T.where(i < 127 and j < 127)` for a box of 127×127 of a
//!    128×128 `B`.
//! 3. `B` has one producer, a spatial block whose body is one store to `B`.
//! 4. No other block reads `B`, and no block between the producer and the
//!    consumer writes what the consumer reads or touches what it writes:
//!    those accesses move back to the producer's place.
//!
//! Preconditions of `set_scope`: the buffer written by the block is
//! allocated in the function, and the scope is one tirc knows.

use super::cache::root_stmts;
use super::{BlockRV, Result, Schedule, ScheduleError};
use crate::common::hazard::{check_passed, Moved};

use crate::arith::Analyzer;
use tirc_ir::region::block_buffers;
use tirc_ir::region::infer_block_regions;
use tirc_ir::subst::substitute;
use tirc_ir::{BinOp, BlockRealize, Buffer, Expr, IterKind, Scope, Stmt, Var};

pub fn compute_inline(sch: &mut Schedule, block: &BlockRV) -> Result<()> {
    let r = spatial_block(sch, block)?;
    let Stmt::Store { buffer: b, indices, value } = &r.block.body else {
        return Err(ScheduleError::new(format!("the body of block `{block}` is not a single store")));
    };
    let vars = index_vars(&r, indices).ok_or_else(|| {
        ScheduleError::new(format!(
            "block `{block}` does not store to `{}` at its iteration variables, each once",
            b.name()
        ))
    })?;
    // 3.
    check_allocated(sch, b)?;
    if let Some(other) = writers(sch, b).into_iter().find(|n| n != block) {
        return Err(ScheduleError::new(format!("block `{other}` writes `{}` too", b.name())));
    }
    if reads_buffer(value, b) {
        return Err(ScheduleError::new(format!("block `{block}` reads `{}`, the buffer it writes", b.name())));
    }
    // 4. Its reads move to each consumer: no block from it to the last
    // consumer (the consumers included) may write what it reads.
    let all = sch.func.body.blocks();
    let me = all.iter().position(|x| x.block.name == *block).unwrap_or(0);
    let last = all.iter().rposition(|x| block_buffers(x, true).contains(b)).unwrap_or(me);
    let passed: Vec<&BlockRealize> = all[me + 1..=last.max(me)].to_vec();
    let moved = Moved { block, reads: block_buffers(&r, true), writes: vec![] };
    check_passed(&sch.func.body, &moved, &passed, &|_, _, _| false, "compute_inline")?;
    // Remove the block, then put its value where `b` is read.
    let body = remove_block(&sch.func.body, block);
    let inline = |e: &Expr| -> Expr { inline_loads(e, b, &vars, value) };
    let body = rewrite_blocks_reading(&body, b, &inline);
    sch.func.body = drop_alloc(&body, b);
    Ok(())
}

pub fn reverse_compute_inline(sch: &mut Schedule, block: &BlockRV) -> Result<()> {
    let r = spatial_block(sch, block)?;
    let Stmt::Store { buffer: c, indices: c_idx, value: g } = &r.block.body else {
        return Err(ScheduleError::new(format!("the body of block `{block}` is not a single store")));
    };
    // The one intermediate buffer it reads.
    let reads = block_buffers(&r, true);
    let produced: Vec<Buffer> = reads.into_iter().filter(|x| check_allocated(sch, x).is_ok()).collect();
    let [b] = &produced[..] else {
        return Err(ScheduleError::new(format!(
            "block `{block}` must read exactly one buffer that the function computes, not {}",
            produced.len()
        )));
    };
    // Every read of `b` at one index, each dimension a distinct iteration
    // variable (in any order: a transposed read is one), so that the
    // producer's element is the one read.
    let mut at_vars = true;
    let mut read_at: Option<Vec<Var>> = None;
    g.walk(&mut |e| {
        if let Expr::Load(lb, idx) = e {
            if lb == b {
                match (index_vars(&r, idx), &read_at) {
                    (None, _) => at_vars = false,
                    (Some(v), Some(first)) => at_vars &= v == *first,
                    (Some(v), None) => read_at = Some(v),
                }
            }
        }
    });
    // ... over a box of the buffer from its origin: the variable of
    // dimension d runs over [0, e_d) with e_d the extent of d or less. Where
    // e_d is less (an overcomputed producer: the output of `pad_einsum`),
    // `cut[d]` holds it, and the producer keeps only the elements read.
    let mut cut: Vec<Option<Expr>> = Vec::new();
    let mut sizes = Analyzer::new();
    sizes.bind_sizes(&sch.func.sizes);
    // An extent of run-time sizes fits where the sizes prove it (`m` in
    // a padded `(m + 7) // 8 * 8`).
    let fits_in = |e: &Expr, s: &Expr| sizes.prove(&Expr::binary(BinOp::Le, e.clone(), s.clone())) == Some(true);
    let boxed = read_at.as_ref().is_some_and(|vars| {
        vars.len() == b.ndim()
            && vars.iter().zip(b.shape()).all(|(v, s)| {
                r.block.iter_vars.iter().find(|iv| iv.var == *v).is_some_and(|iv| {
                    let fits = match (iv.dom.extent.as_int(), s.as_int()) {
                        (Some(a), Some(b)) if a == b => Some(None),
                        (Some(a), Some(b)) if 0 < a && a < b => Some(Some(iv.dom.extent.clone())),
                        _ if tirc_ir::structural_eq::same_expr(&iv.dom.extent, s) => Some(None),
                        (None, _) | (_, None) if fits_in(&iv.dom.extent, s) => Some(Some(iv.dom.extent.clone())),
                        _ => None,
                    };
                    let from_zero = iv.dom.min.as_int() == Some(0);
                    if let (true, Some(c)) = (from_zero, &fits) {
                        cut.push(c.clone());
                    }
                    from_zero && fits.is_some()
                })
            })
    });
    if !at_vars || !boxed || r.predicate.as_bool() != Some(true) {
        return Err(ScheduleError::new(format!(
            "block `{block}` must read `{}` at one index of its iteration variables, over the buffer from its origin, under no predicate",
            b.name()
        )));
    }
    // 3.
    let producers = writers(sch, b);
    let [p] = &producers[..] else {
        return Err(ScheduleError::new(format!(
            "`{}` has {} producers; it needs exactly one",
            b.name(),
            producers.len()
        )));
    };
    let pr = spatial_block(sch, p).map_err(|e| {
        ScheduleError::new(format!("`{}`'s producer, block `{p}`, cannot take the consumer: {}", b.name(), e.message))
            .help("cache_write the producer first and inline into the block that writes its cache back")
    })?;
    // 4. The consumer is the only reader of `b` (the buffer goes), and its
    // other reads and its writes move back to the producer's place: no
    // block between the two may touch them.
    let all = sch.func.body.blocks();
    if let Some(other) = all.iter().find(|x| x.block.name != *block && block_buffers(x, true).contains(b)) {
        return Err(ScheduleError::new(format!(
            "block `{}` reads `{}` too: it would be left without the values that `{p}` writes there",
            other.block.name,
            b.name()
        )));
    }
    let (from, to) = (
        all.iter().position(|x| x.block.name == *p).unwrap_or(0),
        all.iter().position(|x| x.block.name == *block).unwrap_or(0),
    );
    let passed: Vec<&BlockRealize> = all.iter().take(to).skip(from + 1).copied().collect();
    let moved = Moved {
        block,
        reads: block_buffers(&r, true).into_iter().filter(|x| x != b).collect(),
        writes: block_buffers(&r, false),
    };
    check_passed(&sch.func.body, &moved, &passed, &|_, _, _| false, "reverse_compute_inline")?;
    let Stmt::Store { indices: p_idx, value: e, .. } = &pr.block.body else {
        return Err(ScheduleError::new(format!("the body of producer `{p}` is not a single store")));
    };
    // The consumer's variable for each dimension of `b`, at the producer's
    // index of that dimension.
    let mut cvars: Vec<Var> = Vec::new();
    g.walk(&mut |x| {
        if let Expr::Load(lb, idx) = x {
            if lb == b && cvars.is_empty() {
                cvars = idx.iter().filter_map(|i| i.as_var().cloned()).collect();
            }
        }
    });
    let map: Vec<(Var, Expr)> = cvars.iter().cloned().zip(p_idx.iter().cloned()).collect();
    let new_value = substitute(&replace_load(g, b, e), &map);
    let new_idx: Vec<Expr> = c_idx.iter().map(|i| substitute(i, &map)).collect();
    let new_store = Stmt::Store { buffer: c.clone(), indices: new_idx, value: new_value };
    // The producer's elements past the consumer's box are not stored: its
    // predicate gains `index_d < e_d`, the index at the producer's bindings
    // (a predicate is over the loops around the block).
    let bindings: Vec<(Var, Expr)> =
        pr.block.iter_vars.iter().map(|iv| iv.var.clone()).zip(pr.iter_values.iter().cloned()).collect();
    let kept = p_idx.iter().zip(&cut).fold(pr.predicate.clone(), |acc, (idx, c)| match c {
        Some(e) => Expr::and(acc, sizes.simplify(&Expr::binary(BinOp::Lt, substitute(idx, &bindings), e.clone()))),
        None => acc,
    });
    let body = remove_block(&sch.func.body, block);
    let body = body.rewrite(&mut |s| match s {
        Stmt::Block(x) if x.block.name == *p => {
            let mut x = (**x).clone();
            x.block.body = new_store.clone();
            x.predicate = kept.clone();
            let (rd, wr) = infer_block_regions(&x.block);
            x.block.reads = rd;
            x.block.writes = wr;
            Some(Stmt::Block(Box::new(x)))
        }
        _ => None,
    });
    sch.func.body = drop_alloc(&body, b);
    Ok(())
}

pub fn set_scope(sch: &mut Schedule, block: &BlockRV, index: i64, scope: &str) -> Result<()> {
    let r = sch
        .func
        .body
        .find_block(block)
        .ok_or_else(|| ScheduleError::not_found(format!("block `{block}` is no longer in the function")))?
        .clone();
    let writes = block_buffers(&r, false);
    let Some(b) = usize::try_from(index).ok().and_then(|i| writes.get(i)).cloned() else {
        return Err(ScheduleError::bad_argument(format!(
            "block `{block}` writes {} buffer(s), so index {index} names none of them",
            writes.len()
        )));
    };
    let sc = Scope::parse(scope).ok_or_else(|| {
        ScheduleError::bad_argument(format!("unknown storage scope \"{scope}\""))
            .help("use \"shared\", \"local\" or \"global\"")
    })?;
    check_allocated(sch, &b)?;
    let nb = b.with(|n| n.scope = sc);
    sch.func.body = crate::common::tree::replace_buffer(&sch.func.body, &b, &nb);
    Ok(())
}

/// Checks 1 and 2: the block, spatial, with no init.
fn spatial_block(sch: &Schedule, block: &str) -> Result<BlockRealize> {
    let r = sch
        .func
        .body
        .find_block(block)
        .ok_or_else(|| ScheduleError::not_found(format!("block `{block}` is no longer in the function")))?
        .clone();
    if block == "root" {
        return Err(ScheduleError::new("the root block cannot be inlined"));
    }
    if r.block.init.is_some() || r.block.iter_vars.iter().any(|iv| iv.kind == IterKind::Reduce) {
        return Err(ScheduleError::new(format!(
            "block `{block}` is a reduction; only element-wise (spatial) blocks can be inlined"
        )));
    }
    if r.block.iter_vars.iter().any(|iv| iv.kind == IterKind::Opaque) {
        return Err(ScheduleError::new(format!(
            "block `{block}` has an opaque axis, whose iterations run in order; only element-wise (spatial) blocks can be inlined"
        )));
    }
    Ok(r)
}

/// The iteration variables that `indices` name, when they are exactly the
/// block's variables, each once.
fn index_vars(r: &BlockRealize, indices: &[Expr]) -> Option<Vec<Var>> {
    let vars: Vec<Var> = indices.iter().map(|i| i.as_var().cloned()).collect::<Option<_>>()?;
    let ivs: Vec<&Var> = r.block.iter_vars.iter().map(|iv| &iv.var).collect();
    let distinct = vars.iter().enumerate().all(|(i, v)| !vars[..i].contains(v));
    (distinct && vars.len() == ivs.len() && vars.iter().all(|v| ivs.contains(&v))).then_some(vars)
}

fn check_allocated(sch: &Schedule, b: &Buffer) -> Result<()> {
    if sch.func.params.contains(b) {
        return Err(ScheduleError::new(format!(
            "`{}` is a parameter of the function: its values are a result, so it must stay",
            b.name()
        )));
    }
    Ok(())
}

fn writers(sch: &Schedule, b: &Buffer) -> Vec<String> {
    sch.func
        .body
        .blocks()
        .into_iter()
        .filter(|r| r.block.name != "root" && block_buffers(r, false).contains(b))
        .map(|r| r.block.name.clone())
        .collect()
}

fn reads_buffer(e: &Expr, b: &Buffer) -> bool {
    let mut found = false;
    e.walk(&mut |x| found |= matches!(x, Expr::Load(lb, _) if lb == b));
    found
}

/// `e` with each load `b[idx]` replaced by `value` at `vars := idx`.
fn inline_loads(e: &Expr, b: &Buffer, vars: &[Var], value: &Expr) -> Expr {
    match e {
        Expr::Load(lb, idx) if lb == b => {
            let idx: Vec<Expr> = idx.iter().map(|i| inline_loads(i, b, vars, value)).collect();
            let map: Vec<(Var, Expr)> = vars.iter().cloned().zip(idx).collect();
            substitute(value, &map)
        }
        _ => e.map_children(|c| inline_loads(c, b, vars, value)),
    }
}

/// `e` with every load of `b` replaced by `value`.
fn replace_load(e: &Expr, b: &Buffer, value: &Expr) -> Expr {
    match e {
        Expr::Load(lb, _) if lb == b => value.clone(),
        _ => e.map_children(|c| replace_load(c, b, value)),
    }
}

/// Every block reading `b` gets its loads rewritten by `f` and its regions
/// inferred again, inner blocks first, so that a block around them (one
/// `blockize` made) infers its regions from theirs, without `b`.
fn rewrite_blocks_reading(s: &Stmt, b: &Buffer, f: &dyn Fn(&Expr) -> Expr) -> Stmt {
    match s.map_children(|c| rewrite_blocks_reading(c, b, f)) {
        Stmt::Block(r) if r.block.name != "root" && block_buffers(&r, true).contains(b) => {
            let mut r = *r;
            r.block.body = r.block.body.map_exprs(&mut |e| f(e));
            r.block.init = r.block.init.as_ref().map(|i| i.map_exprs(&mut |e| f(e)));
            let (rd, wr) = infer_block_regions(&r.block);
            r.block.reads = rd;
            r.block.writes = wr;
            Stmt::Block(Box::new(r))
        }
        s => s,
    }
}

/// The body without the block and without loops left empty by it.
fn remove_block(s: &Stmt, block: &str) -> Stmt {
    fn prune(s: &Stmt) -> Stmt {
        match s.map_children(prune) {
            Stmt::For(l) if matches!(l.body, Stmt::NoOp) => Stmt::NoOp,
            s => s,
        }
    }
    let gone = s.rewrite(&mut |x| match x {
        Stmt::Block(r) if r.block.name == block => Some(Stmt::NoOp),
        _ => None,
    });
    prune(&gone)
}

/// The body without the allocation of `b`.
fn drop_alloc(s: &Stmt, b: &Buffer) -> Stmt {
    let stmts = root_stmts(s);
    let _ = stmts;
    s.rewrite(&mut |x| match x {
        Stmt::Block(r) if r.block.alloc_buffers.contains(b) => {
            let mut r = (**r).clone();
            r.block.alloc_buffers.retain(|a| a != b);
            r.block.body = drop_alloc(&r.block.body, b);
            Some(Stmt::Block(Box::new(r)))
        }
        _ => None,
    })
}
