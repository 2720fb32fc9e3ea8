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
//! and which lands is a race, also refused. Run after the pipeline, when
//! accumulators that could live
//! in registers (`promote_accumulators`) do: the refusal names the buffer
//! and the axis.

use tirc_ir::{Diagnostic, Expr, PrimFunc, Scope, Stmt, Var};

pub fn run(f: &PrimFunc) -> Result<(), Diagnostic> {
    let mut found = None;
    walk(&f.body, &mut Vec::new(), &mut Vec::new(), &mut Vec::new(), &mut found);
    match found {
        None => Ok(()),
        Some((buffer, axis, false)) => Err(Diagnostic::new(format!(
            "the kernel stores into `{buffer}` a value that depends on {axis} at an element that does not: every \
             thread along {axis} writes its own value to the same element, and which one lands is a race"
        ))
        .help(format!("index `{buffer}` by the loop bound to {axis}, or keep that loop serial"))
        .or_at_ir(f.span, "in this function")),
        Some((buffer, axis, true)) => Err(Diagnostic::new(format!(
            "the kernel updates `{buffer}` (reads the element it writes) on every thread along {axis} at once: no \
             loop bound to {axis} runs the block that updates it, but the kernel launches {axis} for another"
        ))
        .help(format!(
            "bind a loop of the updating block to {axis}, or keep its accumulator in registers (cache_write to \
             \"local\" under the thread loops)"
        ))
        .or_at_ir(f.span, "in this function")),
    }
}

/// A store found racing: the buffer, the thread axis, and whether it is an
/// update (reads what it writes) rather than a plain store.
type Found = Option<(String, String, bool)>;

fn walk(
    s: &Stmt,
    threads: &mut Vec<(Var, String)>,
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
                threads.push((var.clone(), tag.name()));
            }
            walk(body, threads, conds, lets, found);
            if many {
                threads.pop();
            }
        }
        Stmt::If { cond, then, orelse } => {
            conds.push(cond.clone());
            walk(then, threads, conds, lets, found);
            if let Some(e) = orelse {
                walk(e, threads, conds, lets, found);
            }
            conds.pop();
        }
        Stmt::Store { buffer, indices, value } if matches!(buffer.scope(), Scope::Global | Scope::Shared) => {
            let mut reads = false;
            value.walk(&mut |e| reads |= matches!(e, Expr::Load(b, _) if b.key() == buffer.key()));
            let value = tirc_ir::subst::substitute(value, lets);
            for (v, name) in threads.iter() {
                if !indices.iter().any(|i| i.uses(v)) && !conds.iter().any(|c| c.uses(v)) && (reads || value.uses(v)) {
                    *found = Some((buffer.name().to_string(), name.clone(), reads));
                    return;
                }
            }
        }
        _ => s.for_each_child(|c| walk(c, threads, conds, lets, found)),
    }
}
