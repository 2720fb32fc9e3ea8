//! `parallel`, `vectorize`, `unroll`, `annotate` and `unannotate`: how a
//! loop runs, and the annotations that later passes read.
//!
//! Preconditions of `parallel` and `vectorize`, in this order:
//! 1. The loop is in the function and is not bound to a thread.
//! 2. No block under it reduces over it (its iterations would race).
//! 3. `vectorize` only: the extent is a constant.

use super::{BlockRV, LoopRV, Result, Schedule, ScheduleError};
use crate::common::tree::{get_loop, replace_block, replace_loop};
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
    Ok(())
}

pub fn vectorize(sch: &mut Schedule, lp: &LoopRV) -> Result<()> {
    set_kind(sch, lp, ForKind::Vectorized, "vectorized")?;
    Ok(())
}

pub fn unroll(sch: &mut Schedule, lp: &LoopRV) -> Result<()> {
    set_kind(sch, lp, ForKind::Unrolled, "unrolled")?;
    Ok(())
}

fn check_double_buffer(sch: &Schedule, block: &str, val: &Attr) -> Result<()> {
    let r = sch
        .func
        .body
        .find_block(block)
        .ok_or_else(|| ScheduleError::not_found(format!("block `{block}` is no longer in the function")))?;
    let i = val.as_int().ok_or_else(|| {
        ScheduleError::bad_argument("\"double_buffer_scope\" takes the index of a buffer the block writes")
    })?;
    let writes = tirc_ir::region::block_buffers(r, false);
    let b = usize::try_from(i).ok().and_then(|i| writes.get(i)).ok_or_else(|| {
        ScheduleError::bad_argument(format!(
            "block `{block}` writes {} buffers; it has no write buffer {i}",
            writes.len()
        ))
    })?;
    if sch.func.params.contains(b) {
        return Err(ScheduleError::new(format!("`{}` is a parameter of the function: only a buffer the schedule made (cache_read, cache_write) can be double-buffered", b.name())));
    }
    Ok(())
}

/// What an annotation is put on.
#[derive(Clone, Debug)]
pub enum Target {
    Loop(LoopRV),
    Block(BlockRV),
}

/// `annotate(block_or_loop, ann_key, ann_val)`. Any key is accepted and
/// kept (later passes read the ones they know); `"double_buffer_scope"` on
/// a block must name, by its index, a buffer the block writes that the
/// schedule made (not a parameter), which `lower_blocks` then doubles.
pub fn annotate(sch: &mut Schedule, target: &Target, key: &str, value: Attr) -> Result<()> {
    if let (Target::Block(b), "double_buffer_scope") = (target, key) {
        check_double_buffer(sch, b, &value)?;
    }
    // The occupancy hint of the kernel's launch (`extract_launch` checks
    // the rest: that a GPU axis runs the loop, and that the blocks fit).
    if key == tirc_ir::launch::MIN_BLOCKS_PER_SM {
        match (target, value.as_int()) {
            (Target::Block(b), _) => {
                return Err(ScheduleError::bad_argument(format!(
                    "`min_blocks_per_sm` is a hint for the kernel's launch: annotate a loop bound to blockIdx or \
                     threadIdx, not the block `{b}`"
                )))
            }
            (_, Some(n)) if n >= 1 => {}
            _ => {
                return Err(ScheduleError::bad_argument(
                    "`min_blocks_per_sm` is a number of thread blocks on one multiprocessor: a positive integer",
                ))
            }
        }
    }
    edit_annotations(sch, target, |anns| {
        anns.retain(|(k, _)| k != key);
        anns.push((key.to_string(), value.clone()));
    })?;
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
            if sch.func.body.find_block(b).is_none() {
                return Err(ScheduleError::not_found(format!("block `{b}` is no longer in the function")));
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

/// An annotation value as Python writes it.
pub fn python(a: &Attr) -> String {
    match a {
        Attr::Int(v) => v.to_string(),
        Attr::Float(v) => format!("{v:?}"),
        Attr::Bool(b) => (if *b { "True" } else { "False" }).to_string(),
        Attr::Str(s) => format!("{s:?}"),
        Attr::List(v) => format!("[{}]", v.iter().map(python).collect::<Vec<_>>().join(", ")),
        Attr::Dict(d) => {
            format!("{{{}}}", d.iter().map(|(k, v)| format!("{k:?}: {}", python(v))).collect::<Vec<_>>().join(", "))
        }
        Attr::Buffer(n) => n.clone(),
        Attr::Target(t) => format!("T.target({})", python(t)),
    }
}
