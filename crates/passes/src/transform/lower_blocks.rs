//! `lower_blocks`: blocks become plain code.
//!
//! Each block's iteration variables are replaced by the values they are
//! bound to, its predicate (`T.where`) becomes an `if` around its body, and
//! its allocated buffers become allocations around the body. Blocks must
//! have no init left (`lower_init` runs first). After this pass the function
//! holds loops, stores, conditionals and allocations only.

use crate::schedule::tree::rewrite;
use tirc_ir::subst::substitute_stmt;
use tirc_ir::{Diagnostic, PrimFunc, Stmt};

pub fn run(mut f: PrimFunc) -> Result<PrimFunc, Diagnostic> {
    f.body = lower(&f.body);
    Ok(f)
}

fn lower(s: &Stmt) -> Stmt {
    rewrite(s, &mut |x| match x {
        Stmt::Block(r) => {
            let b = &r.block;
            let map: Vec<_> = b.iter_vars.iter().map(|iv| iv.var.clone()).zip(r.iter_values.iter().cloned()).collect();
            let mut body = substitute_stmt(&lower(&b.body), &map);
            if let Some(init) = &b.init {
                // Kept only when lower_init did not run: be correct anyway.
                body = Stmt::seq(vec![substitute_stmt(&lower(init), &map), body]);
            }
            for buf in b.alloc_buffers.iter().rev() {
                body = Stmt::Allocate { buffer: buf.clone(), body: Box::new(body) };
            }
            Some(Stmt::if_then(r.predicate.clone(), body))
        }
        _ => None,
    })
}
