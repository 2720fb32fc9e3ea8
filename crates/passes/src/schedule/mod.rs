//! The schedule: a function being transformed by primitives, one file per
//! family, with TVM's names and arguments.
//!
//! A loop is named by its variable (`LoopRV`), a block by its name
//! (`BlockRV`). Every primitive checks its preconditions, in the order its
//! file lists them, and refuses a step that would change the function's
//! result with a `ScheduleError` that says why, of a named `ErrorKind`.
//! `registry.rs` lists every primitive (name, signature, whether it is a
//! step, how to apply it); the interpreter records each applied step in
//! `trace`, so a schedule prints as a replayable script.

pub mod add_unit_loop;
pub mod bind;
pub mod blockize;
pub mod cache;
pub mod compute_at;
pub mod decompose_reduction;
pub mod decompose_tf32x3;
pub mod deps;
pub mod fuse;
pub mod get;
pub mod inline;
pub mod interp;
pub mod loop_kind;
pub mod pad_einsum;
pub mod registry;
pub mod reindex;
pub mod reorder;
pub mod reorder_block_iter_var;
pub mod rfactor;
pub mod sample;
pub mod split;
pub mod storage_align;
pub mod storage_swizzle;
pub mod tensorize;
pub mod transform_block_layout;
pub mod transform_layout;

use tirc_ir::{PrimFunc, Var};

/// A loop of the function being scheduled.
pub type LoopRV = Var;

/// A block of the function being scheduled, by its unique name.
pub type BlockRV = String;

pub use crate::common::error::{ErrorKind, Result, ScheduleError};

/// A function under scheduling and the steps applied to it.
#[derive(Clone, Debug)]
pub struct Schedule {
    pub func: PrimFunc,
    /// Each applied step: the primitive, its arguments and what it
    /// returned; it prints as it reads in a schedule (`C_local =
    /// sch.cache_write(C, 0, "local")`), blocks and loops by name.
    pub trace: Vec<registry::Step>,
    /// The trace as a script that replays it on the unscheduled function:
    /// the steps, each preceded by the `sch.get_block` / `sch.get_loops`
    /// lines that give its blocks and loops their handles
    /// (`tirc lower --emit trace`).
    pub replay: Vec<String>,
    /// Blocks a primitive renamed, old name to new, whose handles follow
    /// the block (`decompose_reduction`'s update): the interpreter moves
    /// the handles over after each step.
    pub renamed: Vec<(BlockRV, BlockRV)>,
}

impl Schedule {
    pub fn new(func: PrimFunc) -> Schedule {
        Schedule { func, trace: Vec::new(), replay: Vec::new(), renamed: Vec::new() }
    }
}
