//! Finding and replacing loops and blocks in a function body, with the
//! schedule's errors, and fresh names. (The plain walks, `Stmt::rewrite`,
//! `find_loop`, `find_block` and `loops_above`, are methods of `Stmt` in
//! `ir`.)

use super::error::{Result, ScheduleError};
use tirc_ir::stmt::BufferRegion;
use tirc_ir::subst::replace_buffers_stmt;
use tirc_ir::{BlockRealize, Buffer, Expr, For, Stmt, Var};

/// `Stmt::rewrite`, for replacements that can fail.
pub fn try_rewrite(s: &Stmt, f: &mut dyn FnMut(&Stmt) -> Option<Result<Stmt>>) -> Result<Stmt> {
    let mut err = None;
    let out = s.rewrite(&mut |x| match f(x) {
        Some(Ok(r)) => Some(r),
        Some(Err(e)) => {
            err.get_or_insert(e);
            Some(x.clone())
        }
        None => None,
    });
    match err {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// The loop, or an error naming it.
pub fn get_loop<'a>(s: &'a Stmt, v: &Var) -> Result<&'a For> {
    s.find_loop(v).ok_or_else(|| {
        ScheduleError::not_found(format!("loop `{}` is no longer in the function", v.name()))
            .help("a loop that was split, fused or decomposed is replaced by the new loops it returned")
    })
}

/// Replaces the loop of variable `v` by `f(loop)`.
pub fn replace_loop(s: &Stmt, v: &Var, f: impl FnOnce(&For) -> Result<Stmt>) -> Result<Stmt> {
    let mut f = Some(f);
    try_rewrite(s, &mut |x| match x {
        Stmt::For(l) if &l.var == v => f.take().map(|f| f(l)),
        _ => None,
    })
}

/// Replaces the block named `name` (with its realize) by `f(realize)`.
pub fn replace_block(s: &Stmt, name: &str, f: impl FnOnce(&BlockRealize) -> Result<Stmt>) -> Result<Stmt> {
    let mut f = Some(f);
    try_rewrite(s, &mut |x| match x {
        Stmt::Block(r) if r.block.name == name => f.take().map(|f| f(r)),
        _ => None,
    })
}

/// The blocks directly under `s` (not inside another block).
pub fn child_blocks(s: &Stmt) -> Vec<&BlockRealize> {
    fn go<'a>(s: &'a Stmt, out: &mut Vec<&'a BlockRealize>) {
        if let Stmt::Block(r) = s {
            out.push(r);
            return;
        }
        s.for_each_child(|c| go(c, out));
    }
    let mut out = Vec::new();
    s.for_each_child(|c| go(c, &mut out));
    if let Stmt::Block(r) = s {
        let _ = r;
    }
    out
}

/// The names of the blocks inside block `r`, in its body and its init (as
/// `blockize` leaves them: they read and write through `r`).
pub fn nested_block_names(r: &BlockRealize) -> Vec<String> {
    let mut names: Vec<String> = r.block.body.blocks().iter().map(|b| b.block.name.clone()).collect();
    if let Some(i) = &r.block.init {
        names.extend(i.blocks().iter().map(|b| b.block.name.clone()));
    }
    names
}

/// A fresh name for a loop derived from `base` that no loop of the function
/// has yet.
pub fn fresh_loop_name(root: &Stmt, base: &str) -> String {
    fresh_name(&loop_names(root), base)
}

/// The names of the loops in `root`.
pub fn loop_names(root: &Stmt) -> Vec<String> {
    let mut names = Vec::new();
    root.walk(&mut |x| {
        if let Stmt::For(l) = x {
            names.push(l.var.name().to_string());
        }
    });
    names
}

/// The names a new block or buffer of `f` must not take: its parameters',
/// its blocks' and the buffers they allocate.
pub fn block_and_buffer_names(f: &tirc_ir::PrimFunc) -> Vec<String> {
    let mut taken: Vec<String> = f.params.iter().map(|b| b.name().to_string()).collect();
    for r in f.body.blocks() {
        taken.push(r.block.name.clone());
        taken.extend(r.block.alloc_buffers.iter().map(|b| b.name().to_string()));
    }
    taken
}

/// `base`, or `base_1`, `base_2`, ...: the first not in `taken`.
pub fn fresh_name(taken: &[String], base: &str) -> String {
    if !taken.iter().any(|t| t == base) {
        return base.to_string();
    }
    (1..).map(|i| format!("{base}_{i}")).find(|n| !taken.contains(n)).unwrap_or_default()
}

/// `s` with buffer `b` replaced by `nb` (the same buffer with another
/// property: its scope, its swizzle) in every access and in the block that
/// allocates it.
pub fn replace_buffer(s: &Stmt, b: &Buffer, nb: &Buffer) -> Stmt {
    let body = replace_buffers_stmt(s, &[(b.clone(), nb.clone())]);
    body.rewrite(&mut |x| match x {
        Stmt::Block(r) if r.block.alloc_buffers.contains(b) => {
            let mut r = (**r).clone();
            for a in &mut r.block.alloc_buffers {
                if a == b {
                    *a = nb.clone();
                }
            }
            Some(Stmt::Block(Box::new(r)))
        }
        _ => None,
    })
}

/// A loop of extent 1 with no body, that only reserves its variable's name:
/// added to the tree a name is made fresh against, so that names made later
/// stay fresh too.
pub fn name_marker(v: &Var) -> Stmt {
    Stmt::For(Box::new(For {
        var: v.clone(),
        min: tirc_ir::Expr::int(0),
        extent: tirc_ir::Expr::int(1),
        kind: tirc_ir::ForKind::Serial,
        annotations: vec![],
        body: Stmt::NoOp,
        span: None,
    }))
}

/// Whether an access to `b` in `s` is made only under a condition: in a
/// branch of an `if`, of a select or `T.if_then_else`, or in the second
/// operand of `and`/`or`.
pub fn accessed_under_condition(s: &Stmt, b: &Buffer) -> bool {
    fn in_expr(e: &Expr, b: &Buffer, cond: bool) -> bool {
        match e {
            Expr::Load(x, idx) => (cond && x == b) || idx.iter().any(|i| in_expr(i, b, cond)),
            Expr::Select(c, t, f) => in_expr(c, b, cond) || in_expr(t, b, true) || in_expr(f, b, true),
            Expr::Binary(op, l, r) if op.is_logical() => in_expr(l, b, cond) || in_expr(r, b, true),
            e => {
                let mut found = false;
                e.for_each_child(|c| found |= in_expr(c, b, cond));
                found
            }
        }
    }
    fn in_stmt(s: &Stmt, b: &Buffer, cond: bool) -> bool {
        match s {
            Stmt::If { cond: c, then, orelse } => {
                in_expr(c, b, cond) || in_stmt(then, b, true) || orelse.as_ref().is_some_and(|o| in_stmt(o, b, true))
            }
            Stmt::Store { buffer, indices, value } => {
                (cond && buffer == b) || indices.iter().any(|i| in_expr(i, b, cond)) || in_expr(value, b, cond)
            }
            s => {
                let mut found = false;
                s.for_each_expr(|e| found |= in_expr(e, b, cond));
                s.for_each_child(|c| found |= in_stmt(c, b, cond));
                found
            }
        }
    }
    in_stmt(s, b, false)
}

/// `(reads, writes)` of a block: declared, or inferred from its body where
/// it declares neither.
pub fn block_regions(b: &BlockRealize) -> (Vec<BufferRegion>, Vec<BufferRegion>) {
    if b.block.reads.is_empty() && b.block.writes.is_empty() {
        tirc_ir::region::infer_block_regions(&b.block)
    } else {
        (b.block.reads.clone(), b.block.writes.clone())
    }
}

/// A buffer the block both reads and writes (it adds to, or otherwise
/// updates, what is there), if any.
pub fn read_and_written(b: &BlockRealize) -> Option<Buffer> {
    let (reads, writes) = block_regions(b);
    writes.into_iter().find(|w| reads.iter().any(|x| x.buffer == w.buffer)).map(|w| w.buffer)
}

/// `(reads, writes)` of a statement, inferred as a block's would be.
pub fn stmt_regions(s: &Stmt) -> (Vec<BufferRegion>, Vec<BufferRegion>) {
    tirc_ir::region::infer_block_regions(&tirc_ir::Block {
        name: String::new(),
        iter_vars: vec![],
        reads: vec![],
        writes: vec![],
        init: None,
        alloc_buffers: vec![],
        annotations: vec![],
        body: s.clone(),
        span: None,
    })
}

/// The first value of every loop under `root` that starts at a constant.
pub fn loop_starts(root: &Stmt) -> Vec<(Var, i64)> {
    let mut out = Vec::new();
    root.walk(&mut |s| {
        if let Stmt::For(f) = s {
            if let Some(m) = f.min.as_int() {
                out.push((f.var.clone(), m));
            }
        }
    });
    out
}

/// Runs block `r` by its loops `loops` (variable, start, extent; the loops
/// around it that its bindings and predicate use, or all of them): `f`
/// gets, once per iteration, the values of its iteration variables and
/// whether its predicate holds. `None` where there are more than `limit`
/// iterations, a value is not computed, or `f` gives `None`.
pub fn run_block_iterations(
    r: &BlockRealize,
    loops: &[(Var, i64, i64)],
    limit: i64,
    f: &mut dyn FnMut(&[i64], bool) -> Option<()>,
) -> Option<()> {
    use crate::arith::eval;
    for_each_point(loops, limit, &mut |loop_value| {
        let vals: Vec<i64> = r.iter_values.iter().map(|e| eval(e, loop_value)).collect::<Option<_>>()?;
        let on = eval(&r.predicate, loop_value)? != 0;
        f(&vals, on)
    })
}

/// The value of each variable at one point of a loop nest.
pub type PointValue<'a> = dyn Fn(&Var) -> Option<i64> + 'a;

/// Calls `f` at each point of `loops` (variable, start, extent; the last
/// fastest) with the value of each variable there. `None` where there are
/// more than `limit` points or `f` gives `None`.
pub fn for_each_point(
    loops: &[(Var, i64, i64)],
    limit: i64,
    f: &mut dyn FnMut(&PointValue) -> Option<()>,
) -> Option<()> {
    let total = loops.iter().try_fold(1i64, |a, l| a.checked_mul(l.2.max(0))).filter(|t| *t <= limit)?;
    let mut at = vec![0i64; loops.len()];
    for _ in 0..total {
        f(&|v: &Var| loops.iter().zip(&at).find(|(l, _)| l.0 == *v).map(|(l, k)| l.1 + k))?;
        for d in (0..at.len()).rev() {
            at[d] += 1;
            if at[d] < loops[d].2 {
                break;
            }
            at[d] = 0;
        }
    }
    Some(())
}

/// `s` with every access of `b` (loads, stores, tensor-core tiles) made an
/// access of `nb` at the indices `reindex` gives for the old ones: a
/// buffer reshaped (compacted, given a dimension per virtual thread).
pub fn reindex_buffer(s: &Stmt, b: &Buffer, nb: &Buffer, reindex: &dyn Fn(&[Expr]) -> Vec<Expr>) -> Stmt {
    fn expr(e: &Expr, b: &Buffer, nb: &Buffer, reindex: &dyn Fn(&[Expr]) -> Vec<Expr>) -> Expr {
        match e {
            Expr::Load(lb, idx) if lb == b => {
                let idx: Vec<Expr> = idx.iter().map(|i| expr(i, b, nb, reindex)).collect();
                Expr::Load(nb.clone(), reindex(&idx))
            }
            _ => e.map_children(|c| expr(c, b, nb, reindex)),
        }
    }
    fn stores(s: &Stmt, b: &Buffer, nb: &Buffer, reindex: &dyn Fn(&[Expr]) -> Vec<Expr>) -> Stmt {
        match s.map_children(|c| stores(c, b, nb, reindex)) {
            Stmt::Store { buffer, indices, value } if &buffer == b => {
                Stmt::Store { buffer: nb.clone(), indices: reindex(&indices), value }
            }
            Stmt::Wmma(mut w) => {
                for t in w.tiles.iter_mut().filter(|t| &t.buffer == b) {
                    t.buffer = nb.clone();
                    t.indices = reindex(&t.indices);
                }
                Stmt::Wmma(w)
            }
            s => s,
        }
    }
    stores(&s.map_exprs(&mut |e| expr(e, b, nb, reindex)), b, nb, reindex)
}
