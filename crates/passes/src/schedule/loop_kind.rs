//! `parallel`, `vectorize`, `unroll`, `annotate` and `unannotate`: how a
//! loop runs, and the annotations that later passes read.
//!
//! Preconditions of `parallel` and `vectorize`, in this order:
//! 1. The loop is in the function and is not bound to a thread.
//! 2. No block under it reduces over it (its iterations would race).
//! 3. `vectorize` only: the extent is a constant.

use super::{BlockRV, LoopRV, Result, Schedule, ScheduleError};
use crate::common::tree::{find_block, get_loop, replace_block, replace_loop};
use tirc_ir::{Attr, ForKind, IterKind, Stmt};

fn set_kind(sch: &mut Schedule, lp: &LoopRV, kind: ForKind, what: &str) -> Result<()> {
    let l = get_loop(&sch.func.body, lp)?.clone();
    // 1.
    if let ForKind::ThreadBinding(t) = l.kind {
        return Err(ScheduleError::new(format!(
            "loop `{}` is bound to {} and cannot be made {what}",
            lp.name(),
            t.name()
        )));
    }
    // 2.
    if kind != ForKind::Unrolled {
        for r in Stmt::For(Box::new(l.clone())).blocks() {
            for (iv, v) in r.block.iter_vars.iter().zip(&r.iter_values) {
                if iv.kind != IterKind::Spatial && v.uses(lp) {
                    let how =
                        if iv.kind == IterKind::Reduce { "reduces over it" } else { "has an opaque axis over it" };
                    return Err(ScheduleError::new(format!(
                        "loop `{}` cannot be {what}: block {} {how}, so its iterations depend on each other",
                        lp.name(),
                        r.block.name
                    )));
                }
            }
        }
    }
    // 3.
    if kind == ForKind::Vectorized && l.extent.as_int().is_none() {
        return Err(ScheduleError::new(format!("loop `{}` has no constant extent to vectorize", lp.name())));
    }
    sch.func.body = replace_loop(&sch.func.body, lp, |f| {
        let mut f = f.clone();
        f.kind = kind;
        Ok(Stmt::For(Box::new(f)))
    })?;
    Ok(())
}

pub fn parallel(sch: &mut Schedule, lp: &LoopRV) -> Result<()> {
    set_kind(sch, lp, ForKind::Parallel, "parallel")?;
    sch.record(format!("sch.parallel({})", lp.name()));
    Ok(())
}

pub fn vectorize(sch: &mut Schedule, lp: &LoopRV) -> Result<()> {
    set_kind(sch, lp, ForKind::Vectorized, "vectorized")?;
    sch.record(format!("sch.vectorize({})", lp.name()));
    Ok(())
}

pub fn unroll(sch: &mut Schedule, lp: &LoopRV) -> Result<()> {
    set_kind(sch, lp, ForKind::Unrolled, "unrolled")?;
    sch.record(format!("sch.unroll({})", lp.name()));
    Ok(())
}

/// What an annotation is put on.
pub enum Target {
    Loop(LoopRV),
    Block(BlockRV),
}

pub fn annotate(sch: &mut Schedule, target: &Target, key: &str, value: Attr) -> Result<()> {
    edit_annotations(sch, target, |anns| {
        anns.retain(|(k, _)| k != key);
        anns.push((key.to_string(), value.clone()));
    })?;
    sch.record(format!("sch.annotate({}, \"{key}\", {})", target_name(target), python(&value)));
    Ok(())
}

pub fn unannotate(sch: &mut Schedule, target: &Target, key: &str) -> Result<()> {
    let mut had = false;
    edit_annotations(sch, target, |anns| {
        had = anns.iter().any(|(k, _)| k == key);
        anns.retain(|(k, _)| k != key);
    })?;
    if !had {
        return Err(ScheduleError::new(format!("{} has no annotation `{key}`", target_name(target))));
    }
    sch.record(format!("sch.unannotate({}, \"{key}\")", target_name(target)));
    Ok(())
}

fn target_name(t: &Target) -> String {
    match t {
        Target::Loop(l) => l.name().to_string(),
        Target::Block(b) => b.clone(),
    }
}

fn edit_annotations(
    sch: &mut Schedule,
    target: &Target,
    f: impl FnOnce(&mut tirc_ir::stmt::Annotations),
) -> Result<()> {
    sch.func.body = match target {
        Target::Loop(l) => replace_loop(&sch.func.body, l, |x| {
            let mut x = x.clone();
            f(&mut x.annotations);
            Ok(Stmt::For(Box::new(x)))
        })?,
        Target::Block(b) => {
            if find_block(&sch.func.body, b).is_none() {
                return Err(ScheduleError::new(format!("block `{b}` is no longer in the function")));
            }
            replace_block(&sch.func.body, b, |r| {
                let mut r = r.clone();
                f(&mut r.block.annotations);
                Ok(Stmt::Block(Box::new(r)))
            })?
        }
    };
    Ok(())
}

/// An annotation value as a schedule writes it.
fn python(a: &Attr) -> String {
    match a {
        Attr::Int(v) => v.to_string(),
        Attr::Float(v) => format!("{v:?}"),
        Attr::Bool(b) => (if *b { "True" } else { "False" }).to_string(),
        Attr::Str(s) => format!("{s:?}"),
        Attr::List(v) => format!("[{}]", v.iter().map(python).collect::<Vec<_>>().join(", ")),
        Attr::Dict(d) => {
            format!("{{{}}}", d.iter().map(|(k, v)| format!("{k:?}: {}", python(v))).collect::<Vec<_>>().join(", "))
        }
    }
}
