//! The lowering pipeline: from a scheduled function with blocks to a kernel
//! of plain loops over flat buffers under thread launches.
//!
//! `PIPELINE` lists the passes in the order they run, by the names that
//! `--print-after` takes. Each pass is one file named after it, its contract
//! at the top. `verify_ir` checks, after every pass, what the passes
//! guarantee each other (an internal error names the pass that broke it);
//! `verify_local_indices` is a check of the lowered kernel, not a pass: it
//! returns warnings.

pub mod check_local_buffers;
pub mod compact_buffers;
pub mod extract_launch;
pub mod flatten_buffers;
pub mod inject_software_pipeline;
pub mod insert_barriers;
pub mod loop_partition;
pub mod lower_blocks;
pub mod lower_cross_thread_reduction;
pub mod lower_init;
pub mod promote_accumulators;
pub mod relax_guards;
pub mod simplify;
pub mod split_kernels;
pub mod unroll_loops;
pub mod verify_ir;
pub mod verify_local_indices;

use tirc_ir::target::Target;
use tirc_ir::{Diagnostic, PrimFunc};

/// What every pass may read besides the function: the target it compiles
/// for. (What one pass tells a later one about the function travels with
/// it, typed, in `PrimFunc::facts`.)
#[derive(Clone, Debug, Default)]
pub struct PassContext {
    pub target: Target,
}

/// A lowering pass: a name and a function from IR to IR.
pub struct Pass {
    pub name: &'static str,
    pub run: fn(PrimFunc, &PassContext) -> Result<PrimFunc, Diagnostic>,
}

/// The lowering passes, in order. Most need nothing of the context.
pub const PIPELINE: &[Pass] = &[
    Pass { name: "lower_cross_thread_reduction", run: |f, _| lower_cross_thread_reduction::run(f) },
    Pass { name: "lower_init", run: |f, _| lower_init::run(f) },
    Pass { name: "lower_blocks", run: |f, _| lower_blocks::run(f) },
    Pass { name: "compact_buffers", run: |f, _| compact_buffers::run(f) },
    Pass { name: "inject_software_pipeline", run: inject_software_pipeline::run },
    Pass { name: "flatten_buffers", run: |f, _| flatten_buffers::run(f) },
    Pass { name: "extract_launch", run: extract_launch::run },
    Pass { name: "simplify", run: |f, _| simplify::run(f) },
    Pass { name: "insert_barriers", run: |f, _| insert_barriers::run(f) },
    Pass { name: "promote_accumulators", run: |f, _| promote_accumulators::run(f) },
    Pass { name: "relax_guards", run: |f, _| relax_guards::run(f) },
    Pass { name: "loop_partition", run: |f, _| loop_partition::run(f) },
    Pass { name: "unroll_loops", run: |f, _| unroll_loops::run(f) },
];

/// Runs every pass in order for `ctx.target`; `observe(name, ir)` sees the
/// IR after each.
/// Refuses, before any pass, a function that one kernel cannot run
/// (`split_kernels::check_one_kernel`: split it first) and one whose local
/// buffers would be read by other threads than wrote them
/// (`check_local_buffers`).
pub fn lower(
    mut func: PrimFunc,
    ctx: &PassContext,
    mut observe: impl FnMut(&'static str, &PrimFunc),
) -> Result<PrimFunc, Diagnostic> {
    split_kernels::check_one_kernel(&func)?;
    check_local_buffers::run(&func)?;
    for p in PIPELINE {
        let axes = verify_ir::Axes::of(&func);
        func = (p.run)(func, ctx)?;
        verify_ir::after(p.name, &func, &ctx.target)?;
        axes.covered_by(p.name, &func)?;
        observe(p.name, &func);
    }
    Ok(func)
}

/// The names of the passes, for `--print-after` and its error message.
pub fn pass_names() -> Vec<&'static str> {
    PIPELINE.iter().map(|p| p.name).collect()
}
