//! Getters: `get_block`, `get_loops`, `get_child_blocks`,
//! `get_output_blocks`.
//!
//! Preconditions of `get_block(name)`: 1. exactly one block has that name.
//! `get_loops(block)` returns the loops between the block's parent block and
//! the block, outermost first, as TVM does.

use super::{BlockRV, LoopRV, Result, Schedule, ScheduleError};
use crate::common::tree::child_blocks;
use tirc_ir::diag::suggest;
use tirc_ir::Stmt;

pub fn get_block(sch: &Schedule, name: &str) -> Result<BlockRV> {
    let blocks = sch.func.body.blocks();
    match blocks.iter().filter(|r| r.block.name == name).count() {
        1 => Ok(name.to_string()),
        0 => {
            let names: Vec<&str> = blocks.iter().map(|r| r.block.name.as_str()).filter(|n| *n != "root").collect();
            let mut e = ScheduleError::not_found(format!("no block named `{name}` in function `{}`", sch.func.name));
            if let Some(s) = suggest(name, names.iter().copied()) {
                e = e.help(format!("did you mean `{s}`?"));
            } else if !names.is_empty() {
                e = e.help(format!("its blocks are: {}", names.join(", ")));
            }
            Err(e)
        }
        n => Err(ScheduleError::new(format!("{n} blocks are named `{name}`; block names must be unique"))),
    }
}

pub fn get_loops(sch: &Schedule, block: &BlockRV) -> Result<Vec<LoopRV>> {
    let loops = sch
        .func
        .body
        .loops_above(block)
        .ok_or_else(|| ScheduleError::not_found(format!("block `{block}` is no longer in the function")))?;
    Ok(loops.into_iter().map(|l| l.var.clone()).collect())
}

/// The blocks directly under a block or a loop.
pub fn get_child_blocks(sch: &Schedule, parent: Parent) -> Result<Vec<BlockRV>> {
    let s: Stmt = match parent {
        Parent::Block(b) => {
            let r = sch
                .func
                .body
                .find_block(&b)
                .ok_or_else(|| ScheduleError::not_found(format!("block `{b}` is no longer in the function")))?;
            r.block.body.clone()
        }
        Parent::Loop(l) => {
            let f =
                sch.func.body.find_loop(&l).ok_or_else(|| {
                    ScheduleError::not_found(format!("loop `{}` is no longer in the function", l.name()))
                })?;
            f.body.clone()
        }
    };
    let wrapped = Stmt::Seq(vec![s]);
    Ok(child_blocks(&wrapped).into_iter().map(|r| r.block.name.clone()).collect())
}

/// The blocks directly under block `scope` that write a buffer the function
/// does not allocate (one of its parameters): TVM's output blocks.
pub fn get_output_blocks(sch: &Schedule, scope: &BlockRV) -> Result<Vec<BlockRV>> {
    let children = get_child_blocks(sch, Parent::Block(scope.clone()))?;
    let params = &sch.func.params;
    Ok(children
        .into_iter()
        .filter(|name| {
            sch.func
                .body
                .find_block(name)
                .is_some_and(|r| tirc_ir::region::block_buffers(r, false).iter().any(|b| params.contains(b)))
        })
        .collect())
}

pub enum Parent {
    Block(BlockRV),
    Loop(LoopRV),
}
