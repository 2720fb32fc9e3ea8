//! A check of the scheduled function before lowering: local memory is
//! private to a thread.
//!
//! A block whose position depends on a loop bound to a thread axis (its
//! bindings use that loop's variable) touches the elements of a local
//! buffer that belong to that thread. Every other block that touches the
//! buffer must then run under a loop bound to the same axis too; one that
//! does not (a write-back placed by `reverse_compute_at` above the thread
//! loop, say) would read elements that other threads hold in their own
//! registers, and get garbage. The function is refused, naming the buffer,
//! both blocks and the axis.

use tirc_ir::{BlockRealize, Buffer, Diagnostic, ForKind, PrimFunc, Scope, Stmt, ThreadTag, Var};

/// A block touching a local buffer, with the thread-bound loops around it.
struct Use<'a> {
    block: &'a BlockRealize,
    around: Vec<(ThreadTag, Var)>,
}

pub fn run(f: &PrimFunc) -> Result<(), Diagnostic> {
    let mut uses: Vec<(Buffer, Use)> = Vec::new();
    collect(&f.body, &mut Vec::new(), &mut uses);
    for (b, u) in &uses {
        for (tag, var) in &u.around {
            if !u.block.iter_values.iter().any(|v| v.uses(var)) {
                continue;
            }
            let outside = uses.iter().find(|(c, w)| c == b && !w.around.iter().any(|(t, _)| t == tag));
            if let Some((_, w)) = outside {
                return Err(Diagnostic::new(format!(
                    "local buffer `{}` is touched per thread of {} by block `{}`, but block `{}` touches it outside every loop bound to {}: local memory is private to each thread, so it would read what other threads hold",
                    b.name(),
                    tag.name(),
                    u.block.block.name,
                    w.block.block.name,
                    tag.name()
                ))
                .help(format!(
                    "place block `{}` under the loop bound to {} (compute_at / reverse_compute_at at that loop or below), or use shared memory",
                    w.block.block.name,
                    tag.name()
                ))
                .or_at_ir(w.block.block.span, "this block touches it outside the loop"));
            }
        }
    }
    Ok(())
}

fn collect<'a>(s: &'a Stmt, around: &mut Vec<(ThreadTag, Var)>, out: &mut Vec<(Buffer, Use<'a>)>) {
    match s {
        Stmt::For(l) => {
            let thread = match l.kind {
                ForKind::ThreadBinding(t) if !t.is_block => Some(t),
                _ => None,
            };
            if let Some(t) = thread {
                around.push((t, l.var.clone()));
            }
            collect(&l.body, around, out);
            if thread.is_some() {
                around.pop();
            }
        }
        Stmt::Block(r) => {
            let mut local: Vec<&Buffer> = Vec::new();
            // Only blocks that touch the buffer themselves, not the blocks
            // that hold them (whose regions cover their children's).
            let mut leaf = true;
            r.block.body.walk(&mut |x| leaf &= !matches!(x, Stmt::Block(_)));
            for reg in r.block.reads.iter().chain(&r.block.writes) {
                if reg.buffer.scope() == Scope::Local && !local.contains(&&reg.buffer) {
                    local.push(&reg.buffer);
                }
            }
            for b in local.into_iter().filter(|_| leaf) {
                out.push((b.clone(), Use { block: r, around: around.clone() }));
            }
            if let Some(i) = &r.block.init {
                collect(i, around, out);
            }
            collect(&r.block.body, around, out);
        }
        _ => s.for_each_child(|c| collect(c, around, out)),
    }
}
