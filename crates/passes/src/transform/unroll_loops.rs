//! `unroll_loops`: small constant loop nests are unrolled.
//!
//! A serial loop with a constant extent of at most `MAX_AUTO_EXTENT` is marked unrolled when the number
//! of steps it runs — its extent times the steps of its body, a sequence
//! counting the sum of its parts and a plain statement one — is at most the
//! limit in force: the value of a `pragma_auto_unroll_max_step` annotation
//! on an enclosing loop, else `DEFAULT_MAX_STEP`. Loops the schedule already
//! unrolled stay so; a warp-specialized loop (`warp_specialize`) is never
//! unrolled automatically, its iterations being paced by its barriers. A loop whose variable indexes a local buffer is
//! unrolled whatever its steps, so that the buffer can live in registers. Codegen writes `#pragma unroll` before each unrolled
//! loop, so the CUDA compiler replicates the body, keeps per-thread arrays
//! in registers, and shares loads between the copies (TVM's `UnrollLoop`
//! with its auto-unroll limit).

use tirc_ir::{Attr, Diagnostic, Expr, ForKind, PrimFunc, Scope, Stmt, Var};

/// The auto-unroll limit when no loop sets one.
pub const DEFAULT_MAX_STEP: i64 = 1024;

/// Longer loops are never unrolled automatically, whatever their steps.
pub const MAX_AUTO_EXTENT: i64 = 64;

pub fn run(mut f: PrimFunc) -> Result<PrimFunc, Diagnostic> {
    let forced = local_index_vars(&f.body);
    f.body = unroll(&f.body, DEFAULT_MAX_STEP, &forced).0;
    Ok(f)
}

/// Variables that index per-thread (local) buffers: their loops must be
/// unrolled for the buffer to stay in registers.
fn local_index_vars(s: &Stmt) -> Vec<Var> {
    let mut out = Vec::new();
    let mut add = |idx: &[Expr]| {
        for i in idx {
            i.walk(&mut |x| {
                if let Expr::Var(v) = x {
                    if !out.contains(v) {
                        out.push(v.clone());
                    }
                }
            });
        }
    };
    s.walk(&mut |x| {
        if let Stmt::Store { buffer, indices, .. } = x {
            if buffer.scope() == Scope::Local {
                add(indices);
            }
        }
        x.for_each_expr(|e| {
            e.walk(&mut |y| {
                if let Expr::Load(b, idx) = y {
                    if b.scope() == Scope::Local {
                        add(idx);
                    }
                }
            })
        });
    });
    out
}

/// The rewritten statement and the steps it runs (None when unknown).
fn unroll(s: &Stmt, max_step: i64, forced: &[Var]) -> (Stmt, Option<i64>) {
    match s {
        Stmt::For(l) => {
            let limit = l
                .annotations
                .iter()
                .find(|(k, _)| k == "pragma_auto_unroll_max_step")
                .and_then(|(_, v)| if let Attr::Int(n) = v { Some(*n) } else { None })
                .unwrap_or(max_step);
            let (body, inner) = unroll(&l.body, limit, forced);
            let steps = inner.zip(l.extent.as_int()).and_then(|(a, b)| a.checked_mul(b));
            let mut l2 = (**l).clone();
            l2.body = body;
            let small = l.extent.as_int().is_some_and(|e| e <= MAX_AUTO_EXTENT);
            let paced = tirc_ir::launch::warp_specialized(l).is_some();
            if l.kind == ForKind::Serial
                && small
                && !paced
                && (steps.is_some_and(|n| n <= max_step) || forced.contains(&l.var))
            {
                l2.kind = ForKind::Unrolled;
            }
            (Stmt::For(Box::new(l2)), steps)
        }
        Stmt::Seq(items) => {
            let mut total = Some(0i64);
            let mut out = Vec::new();
            for it in items {
                let (x, n) = unroll(it, max_step, forced);
                total = total.zip(n).and_then(|(a, b)| a.checked_add(b));
                out.push(x);
            }
            (Stmt::Seq(out), total)
        }
        Stmt::Store { .. } | Stmt::Barrier | Stmt::AsyncCommit | Stmt::AsyncWait(_) | Stmt::NoOp => {
            (s.clone(), Some(1))
        }
        _ => {
            let mut steps = Some(0i64);
            let out = s.map_children(|c| {
                let (x, n) = unroll(c, max_step, forced);
                steps = steps.zip(n).and_then(|(a, b)| a.checked_add(b));
                x
            });
            (out, steps.map(|n| n.max(1)))
        }
    }
}
