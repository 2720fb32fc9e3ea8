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
//! thread does. Run after the pipeline, when accumulators that could live
//! in registers (`promote_accumulators`) do: the refusal names the buffer
//! and the axis.

use tirc_ir::{Diagnostic, Expr, PrimFunc, Scope, Stmt, Var};

pub fn run(f: &PrimFunc) -> Result<(), Diagnostic> {
    let mut found = None;
    walk(&f.body, &mut Vec::new(), &mut Vec::new(), &mut found);
    match found {
        None => Ok(()),
        Some((buffer, axis)) => Err(Diagnostic::new(format!(
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

fn walk(s: &Stmt, threads: &mut Vec<(Var, String)>, conds: &mut Vec<Expr>, found: &mut Option<(String, String)>) {
    if found.is_some() {
        return;
    }
    match s {
        Stmt::Launch { var, tag, extent, body } => {
            let many = !tag.is_block && extent.as_int() != Some(1);
            if many {
                threads.push((var.clone(), tag.name()));
            }
            walk(body, threads, conds, found);
            if many {
                threads.pop();
            }
        }
        Stmt::If { cond, then, orelse } => {
            conds.push(cond.clone());
            walk(then, threads, conds, found);
            if let Some(e) = orelse {
                walk(e, threads, conds, found);
            }
            conds.pop();
        }
        Stmt::Store { buffer, indices, value } if matches!(buffer.scope(), Scope::Global | Scope::Shared) => {
            let mut reads = false;
            value.walk(&mut |e| reads |= matches!(e, Expr::Load(b, _) if b.key() == buffer.key()));
            if !reads {
                return;
            }
            for (v, name) in threads.iter() {
                if !indices.iter().any(|i| i.uses(v)) && !conds.iter().any(|c| c.uses(v)) {
                    *found = Some((buffer.name().to_string(), name.clone()));
                    return;
                }
            }
        }
        _ => s.for_each_child(|c| walk(c, threads, conds, found)),
    }
}
