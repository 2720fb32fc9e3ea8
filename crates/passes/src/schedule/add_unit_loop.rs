//! `add_unit_loop(block_or_loop)`: a new loop of extent 1 just above a
//! block or a loop, returned so that later steps can name it (a loop to
//! bind, or to compute another block at, where there was none). TVM's
//! primitive of that name. The new loop is named `u` (made unique).
//!
//! Preconditions, checked in this order:
//! 1. The block or loop is in the function.
//! 2. A block is not the function's root block.

use super::loop_kind::Target;
use super::{LoopRV, Result, Schedule, ScheduleError};
use crate::common::tree::{fresh_loop_name, get_loop, replace_block, replace_loop};
use tirc_ir::{DType, Expr, For, ForKind, Stmt, Var};

pub fn add_unit_loop(sch: &mut Schedule, target: &Target) -> Result<LoopRV> {
    let u = Var::new(fresh_loop_name(&sch.func.body, "u"), DType::I32);
    let wrap = |body: Stmt| {
        Stmt::For(Box::new(For {
            var: u.clone(),
            min: Expr::int(0),
            extent: Expr::int(1),
            kind: ForKind::Serial,
            annotations: vec![],
            body,
            span: None,
        }))
    };
    sch.func.body = match target {
        Target::Loop(l) => {
            // 1.
            get_loop(&sch.func.body, l)?;
            replace_loop(&sch.func.body, l, |f| Ok(wrap(Stmt::For(Box::new(f.clone())))))?
        }
        Target::Block(b) => {
            // 1.
            if sch.func.body.find_block(b).is_none() {
                return Err(ScheduleError::not_found(format!("block `{b}` is not in the function")));
            }
            // 2.
            if b == "root" {
                return Err(ScheduleError::bad_argument(
                    "the root block holds the whole function; add a unit loop above a block or a loop inside it",
                ));
            }
            replace_block(&sch.func.body, b, |r| Ok(wrap(Stmt::Block(Box::new(r.clone())))))?
        }
    };
    Ok(u)
}
