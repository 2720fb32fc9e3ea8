//! A check of the lowered kernel: an update of shared or global memory is
//! not done by several threads at once.
//!
//! A store whose value reads the buffer it writes (`C[i] = C[i] + ..`) is
//! a read-modify-write. If its index does not name a launched thread axis
//! of more than one thread, and no condition around it does, every thread
//! along that axis updates the same element at once: a race, and a wrong
//! result. (A schedule that leaves a product unbound on an axis that a
//! copy binds, with its accumulator in global memory, lowers to that.) A
//! plain store of a value that does not read its target is only redundant:
//! each thread writes the same value, as a copy done in full by every
//! thread does — unless the value depends on that thread index (`B[0, j]
//! = A[tx, j]`): then the threads write different values to one element,
//! and which lands is a race, also refused. So is an update whose index
//! names the thread but provably sends two threads to one element
//! (`s[threadIdx_x // 2] += ..`). Run after the pipeline, when
//! accumulators that could live
//! in registers (`promote_accumulators`) do: the refusal names the buffer
//! and the axis.

use tirc_ir::{BinOp, Diagnostic, Expr, PrimFunc, Scope, Stmt, Var};

pub fn run(f: &PrimFunc) -> Result<(), Diagnostic> {
    let mut found = None;
    walk(&f.body, &mut Vec::new(), &mut Vec::new(), &mut Vec::new(), &mut found);
    match found {
        None => Ok(()),
        Some((buffer, axis, Race::Store)) => Err(Diagnostic::new(format!(
            "the kernel stores into `{buffer}` a value that depends on {axis} at an element that does not: every \
             thread along {axis} writes its own value to the same element, and which one lands is a race"
        ))
        .help(format!("index `{buffer}` by the loop bound to {axis}, or keep that loop serial"))
        .or_at_ir(f.span, "in this function")),
        Some((buffer, axis, Race::SharedIndex)) => Err(Diagnostic::new(format!(
            "the kernel updates `{buffer}` (reads the element it writes) from several threads along {axis} at \
             once: its index sends two threads to the same element"
        ))
        .help(
            "keep the accumulator in registers (cache_write to \"local\" under the thread loops), or bind the loops \
             so that each thread updates elements of its own",
        )
        .or_at_ir(f.span, "in this function")),
        Some((buffer, axis, Race::Update)) => Err(Diagnostic::new(format!(
            "the kernel updates `{buffer}` (reads the element it writes) from several threads along {axis} at \
             once: the element's index does not name {axis} and no guard keeps the update to one thread (no loop \
             bound to {axis} runs the block that updates it, or a condition lets several threads through)"
        ))
        .help(format!(
            "bind a loop of the updating block to {axis}, or keep its accumulator in registers (cache_write to \
             \"local\" under the thread loops)"
        ))
        .or_at_ir(f.span, "in this function")),
    }
}

/// A store found racing: the buffer, the thread axis, and how.
type Found = Option<(String, String, Race)>;

enum Race {
    /// A plain store of a value that depends on the thread, to an element
    /// that does not.
    Store,
    /// An update (reads what it writes) of an element that does not depend
    /// on the thread.
    Update,
    /// An update whose index sends two threads to one element.
    SharedIndex,
}

fn walk(
    s: &Stmt,
    threads: &mut Vec<(Var, String, Option<i64>)>,
    conds: &mut Vec<Expr>,
    lets: &mut Vec<(Var, Expr)>,
    found: &mut Found,
) {
    if found.is_some() {
        return;
    }
    match s {
        Stmt::Let { var, value, body } => {
            lets.push((var.clone(), tirc_ir::subst::substitute(value, lets)));
            walk(body, threads, conds, lets, found);
            lets.pop();
        }
        Stmt::Launch { var, tag, extent, body } => {
            let many = !tag.is_block && extent.as_int() != Some(1);
            if many {
                threads.push((var.clone(), tag.name(), extent.as_int()));
            }
            walk(body, threads, conds, lets, found);
            if many {
                threads.pop();
            }
        }
        Stmt::If { cond, then, orelse } => {
            conds.push(cond.clone());
            walk(then, threads, conds, lets, found);
            conds.pop();
            if let Some(e) = orelse {
                conds.push(Expr::Not(Box::new(cond.clone())));
                walk(e, threads, conds, lets, found);
                conds.pop();
            }
        }
        Stmt::Store { buffer, indices, value } if matches!(buffer.scope(), Scope::Global | Scope::Shared) => {
            // Through the lets (`cse_var_1: T.int32 = threadIdx_x`, as TVM's
            // common-subexpression pass prints; `t = S[i] + x; S[i] = t`),
            // the value, indices and conditions.
            let value = tirc_ir::subst::substitute(value, lets);
            let mut reads = false;
            value.walk(&mut |e| reads |= matches!(e, Expr::Load(b, _) if b.key() == buffer.key()));
            let indices: Vec<Expr> = indices.iter().map(|i| tirc_ir::subst::substitute(i, lets)).collect();
            let conds: Vec<Expr> = conds.iter().map(|c| tirc_ir::subst::substitute(c, lets)).collect();
            for (v, name, extent) in threads.iter() {
                if !indices.iter().any(|i| i.uses(v)) && several_pass(v, *extent, &conds) && (reads || value.uses(v)) {
                    let race = if reads { Race::Update } else { Race::Store };
                    *found = Some((buffer.name().to_string(), name.clone(), race));
                    return;
                }
                // An update whose index names the thread but maps two
                // threads to one element (`s[threadIdx_x // 2]`).
                if reads && indices.iter().any(|i| i.uses(v)) && two_threads_meet(v, *extent, &indices, &conds) {
                    *found = Some((buffer.name().to_string(), name.clone(), Race::SharedIndex));
                    return;
                }
            }
        }
        _ => s.for_each_child(|c| walk(c, threads, conds, lets, found)),
    }
}

/// Whether more than one value of the thread index `v` (of `extent`
/// threads) passes the conditions: each that names `v` must bound it by a
/// constant (`v < 8`, `not v < 8`, `v == 0`); one of another form may pin a
/// single thread, and counts as passing one.
fn several_pass(v: &Var, extent: Option<i64>, conds: &[Expr]) -> bool {
    let Some(mut hi) = extent else { return false };
    let mut lo = 0i64;
    for c in conds.iter().flat_map(crate::arith::conjuncts) {
        if !c.uses(v) {
            continue;
        }
        let (negated, inner) = match &c {
            Expr::Not(x) => (true, (**x).clone()),
            x => (false, x.clone()),
        };
        let Expr::Binary(op, a, b) = &inner else { return false };
        // `v op k`, the variable on the left.
        let (op, k) = match (&**a, &**b) {
            (Expr::Var(x), k) if x == v => (*op, k.as_int()),
            (k, Expr::Var(x)) if x == v => (
                match op {
                    BinOp::Lt => BinOp::Gt,
                    BinOp::Le => BinOp::Ge,
                    BinOp::Gt => BinOp::Lt,
                    BinOp::Ge => BinOp::Le,
                    o => *o,
                },
                k.as_int(),
            ),
            _ => return false,
        };
        let Some(k) = k else { return false };
        let op = if negated {
            match op {
                BinOp::Lt => BinOp::Ge,
                BinOp::Le => BinOp::Gt,
                BinOp::Gt => BinOp::Le,
                BinOp::Ge => BinOp::Lt,
                BinOp::Eq => BinOp::Ne,
                BinOp::Ne => BinOp::Eq,
                _ => return false,
            }
        } else {
            op
        };
        match op {
            BinOp::Lt => hi = hi.min(k),
            BinOp::Le => hi = hi.min(k + 1),
            BinOp::Gt => lo = lo.max(k + 1),
            BinOp::Ge => lo = lo.max(k),
            BinOp::Eq => {
                lo = lo.max(k);
                hi = hi.min(k + 1);
            }
            // All but one still leaves several, where there were three.
            BinOp::Ne => {}
            _ => return false,
        }
    }
    hi - lo > 1
}

/// Whether thread 0 and another thread `t` along `v` (`t` < 64) both pass
/// `conds` and provably update the same element: each index, with `v` at
/// 0 and at `t`, simplifies to one expression. Unprovable pairs do not
/// count, so that nothing is refused on a guess.
fn two_threads_meet(v: &Var, extent: Option<i64>, indices: &[Expr], conds: &[Expr]) -> bool {
    let Some(extent) = extent else { return false };
    let an = crate::arith::Analyzer::new();
    let at = |e: &Expr, t: i64| an.simplify(&tirc_ir::subst::substitute(e, &[(v.clone(), Expr::Int(t, v.dtype()))]));
    let passes = |t: i64| conds.iter().all(|c| !c.uses(v) || an.prove(&at(c, t)) == Some(true));
    if !passes(0) {
        return false;
    }
    let first: Vec<Expr> = indices.iter().map(|i| at(i, 0)).collect();
    (1..extent.min(64)).any(|t| {
        passes(t)
            && indices.iter().zip(&first).all(|(i, f)| {
                let d = an.simplify(&(at(i, t) - f.clone()));
                d.as_int() == Some(0)
            })
    })
}
