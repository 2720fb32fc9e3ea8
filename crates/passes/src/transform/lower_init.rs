//! `lower_init`: every reduction block's `T.init()` is taken out of the
//! block.
//!
//! Where the reduction loops allow it, the init becomes its own block run
//! before the outermost reduction loop (`decompose_reduction` at that loop),
//! so the update loop nest carries no branch. Otherwise the init stays at the
//! head of the block body under `if` all reduction variables are at the
//! start of their domain, which is TVM's `LowerInitBlock`. After this pass no
//! block has an init.
//!
//! There the init runs under the block's predicate. A `T.where` that ties a
//! reduction variable to a spatial one (`k >= i`, a triangle) can be false
//! at the reduction's start and true later for some element, whose init
//! would then never run: refused (where the loops are constants it is
//! checked by running them; the hoisted init above has no such limit).

use crate::arith::all_of;
use crate::common::reduction::decompose;
use crate::common::tree::run_block_iterations;
use std::collections::HashMap;
use tirc_ir::{BinOp, BlockRealize, Diagnostic, Expr, For, IterKind, PrimFunc, Stmt, Var};

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
        if let Some(m) = init_skipped(&r, &path) {
            let d = Diagnostic::new(m).help(
                "keep the reduction loops inside the spatial ones (the init then goes before them), put the condition in the update (`T.if_then_else(cond, value, 0)`), or write the init as a block of its own",
            );
            return Err(match r.block.span {
                Some(sp) => d.or_at(sp),
                None => d,
            });
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

/// Where block `r`'s init, run under its predicate when every reduction
/// variable is at its start, would never run for an element whose update
/// runs: the message naming one such element. Found by running the loops
/// the predicate and the bindings use, where `path` gives them constant
/// ranges and there are at most 2^18 steps (`None` otherwise).
fn init_skipped(r: &BlockRealize, path: &[&For]) -> Option<String> {
    let (block, values, predicate) = (&r.block, &r.iter_values, &r.predicate);
    if predicate.as_bool() == Some(true) {
        return None;
    }
    let reduce: Vec<usize> = (0..values.len()).filter(|&i| block.iter_vars[i].kind == IterKind::Reduce).collect();
    let mut used: Vec<Var> = Vec::new();
    for e in std::iter::once(predicate).chain(values) {
        e.walk(&mut |x| {
            if let Expr::Var(v) = x {
                if !used.contains(v) {
                    used.push(v.clone());
                }
            }
        });
    }
    if reduce.is_empty() || !reduce.iter().any(|&i| used.iter().any(|v| values[i].uses(v) && predicate.uses(v))) {
        return None;
    }
    let loops: Vec<(Var, i64, i64)> = used
        .iter()
        .map(|v| {
            let l = path.iter().find(|l| &l.var == v)?;
            Some((v.clone(), l.min.as_int()?, l.extent.as_int()?))
        })
        .collect::<Option<_>>()?;
    let starts: Vec<i64> = reduce.iter().map(|&i| block.iter_vars[i].dom.min.as_int()).collect::<Option<_>>()?;
    // Per element (the spatial variables' values): the first step that runs
    // the update, and whether the init's step runs.
    let mut seen: HashMap<Vec<i64>, (Vec<i64>, bool)> = HashMap::new();
    run_block_iterations(r, &loops, 1 << 18, &mut |ivs, on| {
        if on {
            let first = reduce.iter().zip(&starts).all(|(&i, s)| ivs[i] == *s);
            let element: Vec<i64> = (0..ivs.len()).filter(|i| !reduce.contains(i)).map(|i| ivs[i]).collect();
            seen.entry(element).or_insert_with(|| (ivs.to_vec(), false)).1 |= first;
        }
        Some(())
    })?;
    let mut missed: Vec<&Vec<i64>> = seen.values().filter(|(_, init)| !init).map(|(s, _)| s).collect();
    missed.sort();
    let ivs = missed.first()?;
    let show = |pick: &dyn Fn(usize) -> bool| {
        let parts: Vec<String> = (0..ivs.len())
            .filter(|&i| pick(i))
            .map(|i| format!("{} = {}", block.iter_vars[i].var.name(), ivs[i]))
            .collect();
        parts.join(", ")
    };
    let start: Vec<String> =
        reduce.iter().zip(&starts).map(|(&i, s)| format!("{} = {s}", block.iter_vars[i].var.name())).collect();
    let spatial = show(&|i| !reduce.contains(&i));
    Some(format!(
        "block `{}`'s init cannot run before its reduction: its loops put a reduction loop outside a spatial one, so the init stays in the block under its condition `{}`, which is false where the reduction starts ({}) for the element at {}, whose update runs later ({})",
        block.name,
        tirc_ir::printer::print_expr(predicate),
        start.join(", "),
        if spatial.is_empty() { "the block's only point".to_string() } else { spatial },
        show(&|i| reduce.contains(&i))
    ))
}
