//! `reorder_block_iter_var(block, new_order)`: the block's iteration
//! variables listed in another order, each keeping its domain, kind and
//! binding; TVM's primitive of that name. Nothing the block computes
//! changes: the order is what primitives that follow it read (`reindex`
//! lays its buffer out in it, `blockize` and `tensorize` match in it).
//!
//! Preconditions, checked in this order:
//! 1. The block is in the function.
//! 2. `new_order` is a permutation of `0..n`, `n` the block's variables.

use super::{BlockRV, Result, Schedule, ScheduleError};
use crate::common::tree::replace_block;
use tirc_ir::Stmt;

pub fn reorder_block_iter_var(sch: &mut Schedule, block: &BlockRV, order: &[i64]) -> Result<()> {
    // 1.
    let r = sch
        .func
        .body
        .find_block(block)
        .ok_or_else(|| ScheduleError::not_found(format!("block `{block}` is not in the function")))?;
    // 2.
    let n = r.block.iter_vars.len();
    let mut seen = vec![false; n];
    let is_permutation = order.len() == n
        && order.iter().all(|&k| {
            let ok = usize::try_from(k).is_ok_and(|k| k < n && !seen[k]);
            if ok {
                seen[k as usize] = true;
            }
            ok
        });
    if !is_permutation {
        return Err(ScheduleError::bad_argument(format!(
            "new_order {order:?} is not a permutation of the {n} iteration variables of block `{block}` (0..{n})"
        )));
    }
    sch.func.body = replace_block(&sch.func.body, block, |r| {
        let mut r = r.clone();
        r.block.iter_vars = order.iter().map(|&k| r.block.iter_vars[k as usize].clone()).collect();
        r.iter_values = order.iter().map(|&k| r.iter_values[k as usize].clone()).collect();
        Ok(Stmt::Block(Box::new(r)))
    })?;
    Ok(())
}
