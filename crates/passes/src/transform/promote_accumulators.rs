//! `promote_accumulators`: a global buffer that each thread updates over a
//! small tile of its own is kept in registers for the whole kernel.
//!
//! For a buffer written by the kernel, when every access to it has the same
//! form `base + c1 * v1 + .. + cn * vn` — `base` made of launch indices (and
//! run-time sizes) only,
//! the `v` loop variables of the kernel body with constant extents, the same
//! coefficients and extents everywhere, distinct offsets for distinct
//! iterations, at most `MAX_TILE` of them — and, where the kernel holds a
//! barrier, distinct elements for distinct threads of a block (so no thread
//! can see another's tile through memory),
//! the tile is read into a local array at the start, every access goes to
//! the local array, and the tile is written back at the end. Conditions
//! around the accesses that depend only on the tile position guard the read
//! and the write-back, so a partial tile at a border is handled; any other
//! difference between accesses leaves the buffer alone. Each element is
//! touched by one thread only (other threads see other `base` values
//! exactly when the original kernel was free of races), so the result is
//! the same; the reduction's partial sums simply stay in registers instead
//! of going to memory every step.

use crate::arith::conjuncts;
use tirc_ir::structural_eq::same_expr;
use tirc_ir::subst::substitute;
use tirc_ir::{Buffer, DType, Diagnostic, Expr, For, ForKind, PrimFunc, Scope, Stmt, Var};

/// The largest tile kept in registers.
pub const MAX_TILE: i64 = 256;

pub fn run(mut f: PrimFunc) -> Result<PrimFunc, Diagnostic> {
    // The kernel body below the launch head.
    let (launches, mut body) = f.body.clone().split_launch_head();
    if launches.is_empty() {
        return Ok(f);
    }
    // With barriers, threads of a block may legally exchange data through
    // the buffer; promotion then needs their tiles to be disjoint.
    let threads: Option<Vec<(Var, i64)>> = contains_barrier(&body).then(|| {
        launches
            .iter()
            .filter(|(_, t, _)| !t.is_block)
            .map(|(v, _, e)| (v.clone(), e.as_int().unwrap_or(i64::MAX)))
            .collect()
    });
    // Launch indices and run-time sizes: the values that are the same for
    // the whole of a thread's run.
    let launch_vars: Vec<Var> = launches.iter().map(|(v, _, _)| v.clone()).chain(f.sizes.iter().cloned()).collect();
    for b in f.params.clone() {
        if let Some(new_body) = promote(&body, &b, &launch_vars, threads.as_deref()) {
            body = new_body;
        }
    }
    f.body = Stmt::with_launch_head(launches, body);
    Ok(f)
}

fn contains_barrier(s: &Stmt) -> bool {
    let mut found = false;
    s.walk(&mut |x| found |= matches!(x, Stmt::Barrier));
    found
}

/// One access: its offset terms (coefficient, loop) and its guard.
struct Access {
    terms: Vec<(i64, For)>,
    base: Expr,
    guard: Vec<Expr>,
}

/// Collects every access to `b` with the loops and conditions around it.
fn collect(s: &Stmt, b: &Buffer, loops: &mut Vec<For>, conds: &mut Vec<Expr>, out: &mut Vec<Access>, ok: &mut bool) {
    let visit_expr = |e: &Expr, loops: &Vec<For>, conds: &Vec<Expr>, out: &mut Vec<Access>, ok: &mut bool| {
        e.walk(&mut |x| {
            if let Expr::Load(lb, idx) = x {
                if lb == b {
                    match access(&idx[0], loops, conds) {
                        Some(a) => out.push(a),
                        None => *ok = false,
                    }
                }
            }
        });
    };
    match s {
        Stmt::For(l) => {
            visit_expr(&l.min, loops, conds, out, ok);
            visit_expr(&l.extent, loops, conds, out, ok);
            loops.push((**l).clone());
            collect(&l.body, b, loops, conds, out, ok);
            loops.pop();
        }
        Stmt::If { cond, then, orelse } => {
            visit_expr(cond, loops, conds, out, ok);
            let n = conds.len();
            conds.extend(conjuncts(cond));
            collect(then, b, loops, conds, out, ok);
            conds.truncate(n);
            if let Some(e) = orelse {
                // The else branch runs under the negation: keep it simple
                // and refuse to promote accesses there.
                let mut inner = Vec::new();
                collect(e, b, loops, conds, &mut inner, ok);
                if !inner.is_empty() {
                    *ok = false;
                }
            }
        }
        Stmt::Store { buffer, indices, value } => {
            for i in indices {
                visit_expr(i, loops, conds, out, ok);
            }
            visit_expr(value, loops, conds, out, ok);
            if buffer == b {
                match access(&indices[0], loops, conds) {
                    Some(a) => out.push(a),
                    None => *ok = false,
                }
            }
        }
        Stmt::Let { value, .. } => {
            visit_expr(value, loops, conds, out, ok);
            s.for_each_child(|c| collect(c, b, loops, conds, out, ok));
        }
        Stmt::Launch { .. } | Stmt::Block(_) => *ok = false,
        _ => s.for_each_child(|c| collect(c, b, loops, conds, out, ok)),
    }
}

/// Splits an index into `base + sum(c * loop)` over the enclosing loops.
fn access(idx: &Expr, loops: &[For], conds: &[Expr]) -> Option<Access> {
    let mut terms = Vec::new();
    let mut base_map = Vec::new();
    for l in loops {
        if !idx.uses(&l.var) {
            continue;
        }
        let c = tirc_ir::region::coefficient(idx, &l.var)?;
        if c == 0 || l.min.as_int() != Some(0) || l.extent.as_int().is_none() {
            return None;
        }
        terms.push((c, l.clone()));
        base_map.push((l.var.clone(), Expr::int(0)));
    }
    let base = crate::arith::Analyzer::new().simplify(&substitute(idx, &base_map));
    let guard = conds.to_vec();
    Some(Access { terms, base, guard })
}

/// The tile shape: (coefficient, extent) per dimension, outermost first.
fn shape(a: &Access) -> Vec<(i64, i64)> {
    let mut s: Vec<(i64, i64)> = a.terms.iter().map(|(c, l)| (*c, l.extent.as_int().unwrap_or(0))).collect();
    s.sort_by_key(|x| std::cmp::Reverse(x.0));
    s
}

/// The access's loops in tile-dimension order.
fn dims(a: &Access) -> Vec<Var> {
    let mut t: Vec<&(i64, For)> = a.terms.iter().collect();
    t.sort_by_key(|x| std::cmp::Reverse(x.0));
    t.iter().map(|(_, l)| l.var.clone()).collect()
}

fn promote(body: &Stmt, b: &Buffer, launch_vars: &[Var], threads: Option<&[(Var, i64)]>) -> Option<Stmt> {
    if b.scope() != Scope::Global || b.ndim() != 1 {
        return None;
    }
    let mut accesses = Vec::new();
    let mut ok = true;
    collect(body, b, &mut Vec::new(), &mut Vec::new(), &mut accesses, &mut ok);
    if !ok || accesses.is_empty() {
        return None;
    }
    let written = {
        let mut w = false;
        body.walk(&mut |s| w |= matches!(s, Stmt::Store { buffer, .. } if buffer == b));
        w
    };
    // Keeping a buffer that is only written in registers buys nothing.
    if !written || !reads(body, b) {
        return None;
    }
    let first = &accesses[0];
    let tile = shape(first);
    // Same base (launch indices only), same tile everywhere.
    let base_ok = |e: &Expr| {
        let mut good = true;
        e.walk(&mut |x| {
            if let Expr::Var(v) = x {
                good &= launch_vars.contains(v);
            }
            good &= !matches!(x, Expr::Load(..));
        });
        good
    };
    if !base_ok(&first.base) || accesses.iter().any(|a| !same_expr(&a.base, &first.base) || shape(a) != tile) {
        return None;
    }
    let size: i64 = tile.iter().map(|(_, e)| e).product();
    if size > MAX_TILE || !distinct_offsets(&tile) {
        return None;
    }
    if let Some(threads) = threads {
        // Every (thread, position) pair must reach its own element: the
        // thread indices and tile positions as digits of a mixed radix.
        let mut digits = tile.clone();
        for (v, e) in threads {
            match tirc_ir::region::coefficient(&first.base, v) {
                Some(0) => {}
                Some(c) => digits.push((c.abs(), *e)),
                None => return None,
            }
        }
        digits.sort_by_key(|d| d.0);
        let mut reach = 0i64;
        for (c, e) in digits {
            if c <= reach {
                return None;
            }
            reach = reach.saturating_add(c.saturating_mul(e.saturating_sub(1)));
        }
    }
    // Canonical tile variables, and each access's guard over them.
    let canon: Vec<Var> = (0..tile.len()).map(|i| Var::new(format!("{}_t{i}", b.name()), DType::I32)).collect();
    let tile_guard = |a: &Access| -> Option<Vec<Expr>> {
        let d = dims(a);
        let map: Vec<(Var, Expr)> = d.iter().cloned().zip(canon.iter().map(Expr::var)).collect();
        let mut g = Vec::new();
        for c in &a.guard {
            let uses_tile = d.iter().any(|v| c.uses(v));
            let mut only_tile = true;
            c.walk(&mut |x| {
                if let Expr::Var(v) = x {
                    only_tile &= d.contains(v) || launch_vars.contains(v);
                }
                only_tile &= !matches!(x, Expr::Load(..));
            });
            if uses_tile && !only_tile {
                return None;
            }
            if only_tile {
                g.push(substitute(c, &map));
            }
        }
        Some(g)
    };
    let guard = tile_guard(first)?;
    for a in &accesses[1..] {
        let g = tile_guard(a)?;
        if g.len() != guard.len() || g.iter().zip(&guard).any(|(x, y)| !same_expr(x, y)) {
            return None;
        }
    }
    let local = Buffer::new(format!("{}_local", b.name()), b.dtype(), vec![Expr::int(size)], Scope::Local);
    // Local index of a tile position, row-major over the tile dimensions.
    let local_index = |vars: &[Expr]| -> Expr {
        let mut idx: Option<Expr> = None;
        for (i, v) in vars.iter().enumerate() {
            let stride: i64 = tile[i + 1..].iter().map(|(_, e)| e).product();
            let term = if stride == 1 { v.clone() } else { v.clone() * Expr::int(stride) };
            idx = Some(match idx {
                None => term,
                Some(acc) => acc + term,
            });
        }
        idx.unwrap_or(Expr::int(0))
    };
    let global_index = |vars: &[Expr]| -> Expr {
        let mut e = first.base.clone();
        for (v, (c, _)) in vars.iter().zip(&tile) {
            e = e + if *c == 1 { v.clone() } else { v.clone() * Expr::int(*c) };
        }
        crate::arith::Analyzer::new().simplify(&e)
    };
    // Rewrite every access: the offset's loop variables give the position.
    let new_body = rewrite_accesses(body, b, &local, &mut |idx, loops| {
        let a = access(idx, loops, &[])?;
        let vars: Vec<Expr> = dims(&a).iter().map(Expr::var).collect();
        Some(local_index(&vars))
    })?;
    let guard_all = crate::arith::all_of(guard);
    // The load and the write-back nests each bind fresh copies of the tile
    // variables: a variable is bound by one loop only.
    let tile_nest = |make: &dyn Fn(&[Expr]) -> Stmt| -> Stmt {
        let vars: Vec<Var> = canon.iter().map(|v| Var::new(v.name(), DType::I32)).collect();
        let map: Vec<(Var, Expr)> = canon.iter().cloned().zip(vars.iter().map(Expr::var)).collect();
        let exprs: Vec<Expr> = vars.iter().map(Expr::var).collect();
        let mut s = Stmt::if_then(substitute(&guard_all, &map), make(&exprs));
        for (v, (_, e)) in vars.iter().zip(&tile).rev() {
            s = Stmt::For(Box::new(For {
                var: v.clone(),
                min: Expr::int(0),
                extent: Expr::int(*e),
                kind: ForKind::Serial,
                annotations: vec![],
                body: s,
                span: None,
            }));
        }
        s
    };
    // The tile is read from memory unless the first statement to touch it
    // overwrites all of it (the reduction's init).
    let load = if overwritten_first(body, b, launch_vars) {
        Stmt::NoOp
    } else {
        tile_nest(&|v| Stmt::Store {
            buffer: local.clone(),
            indices: vec![local_index(v)],
            value: Expr::Load(b.clone(), vec![global_index(v)]),
        })
    };
    let store = tile_nest(&|v| Stmt::Store {
        buffer: b.clone(),
        indices: vec![global_index(v)],
        value: Expr::Load(local.clone(), vec![local_index(v)]),
    });
    Some(Stmt::Allocate { buffer: local, body: Box::new(Stmt::seq(vec![load, new_body, store])) })
}

fn reads(s: &Stmt, b: &Buffer) -> bool {
    let mut found = false;
    s.walk(&mut |x| {
        x.for_each_expr(|e| {
            e.walk(&mut |y| found |= matches!(y, Expr::Load(lb, _) if lb == b));
        })
    });
    found
}

/// Whether the first top-level statement that touches `b` stores to every
/// position of the tile without reading `b`: a perfect nest whose loops all
/// index the store, under conditions over the nest's loops and the launch
/// indices only (the same conditions that guard the write-back).
fn overwritten_first(body: &Stmt, b: &Buffer, launch_vars: &[Var]) -> bool {
    let stmts: Vec<&Stmt> = match body {
        Stmt::Seq(v) => v.iter().collect(),
        s => vec![s],
    };
    let touches = |s: &Stmt| {
        let mut t = reads(s, b);
        s.walk(&mut |x| t |= matches!(x, Stmt::Store { buffer, .. } if buffer == b));
        t
    };
    let Some(first) = stmts.into_iter().find(|s| touches(s)) else { return false };
    let mut loops: Vec<Var> = Vec::new();
    let mut conds: Vec<&Expr> = Vec::new();
    let mut s = first;
    loop {
        match s {
            Stmt::For(l) if l.min.as_int() == Some(0) && l.extent.as_int().is_some_and(|e| e > 0) => {
                loops.push(l.var.clone());
                s = &l.body;
            }
            Stmt::If { cond, then, orelse: None } => {
                conds.push(cond);
                s = then;
            }
            Stmt::Store { buffer, indices, value } if buffer == b => {
                let known = |e: &Expr| {
                    let mut ok = true;
                    e.walk(&mut |x| {
                        if let Expr::Var(v) = x {
                            ok &= loops.contains(v) || launch_vars.contains(v);
                        }
                        ok &= !matches!(x, Expr::Load(..));
                    });
                    ok
                };
                let mut value_reads = false;
                value.walk(&mut |y| value_reads |= matches!(y, Expr::Load(lb, _) if lb == b));
                return !value_reads && conds.iter().all(|c| known(c)) && loops.iter().all(|v| indices[0].uses(v));
            }
            _ => return false,
        }
    }
}

/// Whether distinct tile positions give distinct offsets.
fn distinct_offsets(tile: &[(i64, i64)]) -> bool {
    let mut seen = std::collections::HashSet::new();
    let mut pos = vec![0i64; tile.len()];
    loop {
        let off: i64 = pos.iter().zip(tile).map(|(p, (c, _))| p * c).sum();
        if !seen.insert(off) {
            return false;
        }
        let mut d = tile.len();
        loop {
            if d == 0 {
                return true;
            }
            d -= 1;
            pos[d] += 1;
            if pos[d] < tile[d].1 {
                break;
            }
            pos[d] = 0;
        }
    }
}

/// `s` with each access to `b` redirected to `local` at the index `f`
/// gives; `None` when `f` fails for some access.
fn rewrite_accesses(
    s: &Stmt,
    b: &Buffer,
    local: &Buffer,
    f: &mut dyn FnMut(&Expr, &[For]) -> Option<Expr>,
) -> Option<Stmt> {
    fn go(
        s: &Stmt,
        b: &Buffer,
        local: &Buffer,
        loops: &mut Vec<For>,
        f: &mut dyn FnMut(&Expr, &[For]) -> Option<Expr>,
        ok: &mut bool,
    ) -> Stmt {
        let mut ex = |e: &Expr, loops: &Vec<For>, ok: &mut bool| -> Expr { expr(e, b, local, loops, f, ok) };
        match s {
            Stmt::For(l) => {
                loops.push((**l).clone());
                let body = go(&l.body, b, local, loops, f, ok);
                loops.pop();
                let mut l2 = (**l).clone();
                l2.body = body;
                Stmt::For(Box::new(l2))
            }
            Stmt::Store { buffer, indices, value } => {
                let value = ex(value, loops, ok);
                if buffer == b {
                    match f(&indices[0], loops) {
                        Some(i) => Stmt::Store { buffer: local.clone(), indices: vec![i], value },
                        None => {
                            *ok = false;
                            s.clone()
                        }
                    }
                } else {
                    let indices = indices.iter().map(|i| ex(i, loops, ok)).collect();
                    Stmt::Store { buffer: buffer.clone(), indices, value }
                }
            }
            Stmt::If { cond, then, orelse } => Stmt::If {
                cond: ex(cond, loops, ok),
                then: Box::new(go(then, b, local, loops, f, ok)),
                orelse: orelse.as_ref().map(|e| Box::new(go(e, b, local, loops, f, ok))),
            },
            Stmt::Let { var, value, body } => Stmt::Let {
                var: var.clone(),
                value: ex(value, loops, ok),
                body: Box::new(go(body, b, local, loops, f, ok)),
            },
            _ => s.map_children(|c| go(c, b, local, loops, f, ok)),
        }
    }
    fn expr(
        e: &Expr,
        b: &Buffer,
        local: &Buffer,
        loops: &Vec<For>,
        f: &mut dyn FnMut(&Expr, &[For]) -> Option<Expr>,
        ok: &mut bool,
    ) -> Expr {
        match e {
            Expr::Load(lb, idx) if lb == b => match f(&idx[0], loops) {
                Some(i) => Expr::Load(local.clone(), vec![i]),
                None => {
                    *ok = false;
                    e.clone()
                }
            },
            _ => e.map_children(|c| expr(c, b, local, loops, f, ok)),
        }
    }
    let mut ok = true;
    let out = go(s, b, local, &mut Vec::new(), f, &mut ok);
    ok.then_some(out)
}
