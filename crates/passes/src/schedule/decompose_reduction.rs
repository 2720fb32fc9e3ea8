//! `decompose_reduction(block, loop)`: a reduction block's init becomes a
//! block of its own, `<name>_init`, placed just before `loop` inside copies
//! of the loops it needs; the reduction block, renamed `<name>_update`,
//! keeps only the update.
//!
//! Preconditions, checked in this order:
//! 1. The block has an init.
//! 2. The loop is one of the loops around the block, in its scope.
//! 3. Every loop the block's reduction variables depend on is that loop or
//!    inside it; otherwise the init would run again for each iteration of
//!    an outer reduction loop and lose the partial sums.
//! 4. No loop from that loop down to the block feeds both a spatial and a
//!    reduction variable, and none feeds no variable of the block (a loop
//!    that repeats the whole reduction, whose every repetition starts it
//!    again).
//! 5. Each part of the block's predicate speaks of reduction loops only, or
//!    of none of them.
//! 6. No other block under the loop reads or writes what the init writes
//!    (the init, hoisted before the loop, would run before it).
//!
//! The rewrite itself is `common::reduction::decompose`, which the lowering
//! pass `lower_init` also uses, at the outermost reduction loop, keeping the
//! init in place when a precondition fails.

use super::{BlockRV, LoopRV, Result, Schedule};
use crate::common::reduction::{decompose, update_name};

pub fn decompose_reduction(sch: &mut Schedule, block: &BlockRV, lp: &LoopRV) -> Result<BlockRV> {
    let (body, init) = decompose(&sch.func.body, block, lp)?;
    sch.func.body = body;
    // The block's handles now stand for its update, as in TVM.
    sch.renamed.push((block.clone(), update_name(block)));
    Ok(init)
}
