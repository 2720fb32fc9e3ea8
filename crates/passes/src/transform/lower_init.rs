//! `lower_init`: every reduction block's `T.init()` is taken out of the
//! block.
//!
//! Where the reduction loops allow it, the init becomes its own block run
//! before the outermost reduction loop (`decompose_reduction` at that loop),
//! so the update loop nest carries no branch. Otherwise the init stays at the
//! head of the block body under `if` all reduction variables are at the
//! start of their domain, which is TVM's `LowerInitBlock`. After this pass no
//! block has an init.

use crate::arith::all_of;
use crate::common::reduction::decompose;
use tirc_ir::{BinOp, Diagnostic, Expr, IterKind, PrimFunc, Stmt};

pub fn run(mut f: PrimFunc) -> Result<PrimFunc, Diagnostic> {
    while let Some(r) = f.body.blocks().into_iter().find(|r| r.block.init.is_some()).cloned() {
        let name = r.block.name.clone();
        let path = f.body.loops_above(&name).unwrap_or_default();
        let outermost_reduction = path.iter().find(|l| {
            r.block.iter_vars.iter().zip(&r.iter_values).any(|(iv, v)| iv.kind == IterKind::Reduce && v.uses(&l.var))
        });
        if let Some(l) = outermost_reduction {
            if let Ok((body, _)) = decompose(&f.body, &name, &l.var) {
                f.body = body;
                continue;
            }
        }
        f.body = f.body.rewrite(&mut |s| match s {
            Stmt::Block(b) if b.block.name == name => {
                let mut b = (**b).clone();
                let init = b.block.init.take()?;
                let cond = all_of(
                    b.block
                        .iter_vars
                        .iter()
                        .filter(|iv| iv.kind == IterKind::Reduce)
                        .map(|iv| Expr::binary(BinOp::Eq, Expr::var(&iv.var), iv.dom.min.clone())),
                );
                b.block.body = Stmt::seq(vec![Stmt::if_then(cond, init), b.block.body.clone()]);
                Some(Stmt::Block(Box::new(b)))
            }
            _ => None,
        });
    }
    Ok(f)
}
