//! The lowering pipeline: from a scheduled function with blocks to a kernel
//! of plain loops over flat buffers under thread launches.
//!
//! `PIPELINE` lists the passes in the order they run, by the names that
//! `--print-after` takes. Each pass is one file named after it, its contract
//! at the top. `verify_ir` checks, after every pass, what the passes
//! guarantee each other (an internal error names the pass that broke it);
//! `verify_local_indices` is a check of the lowered kernel, not a pass: it
//! returns warnings.

pub mod align_input_rows;
pub mod check_local_buffers;
pub mod check_redundant_updates;
pub mod compact_buffers;
pub mod extract_launch;
pub mod flatten_buffers;
pub mod hoist_invariant_guards;
pub mod inject_software_pipeline;
pub mod inject_virtual_thread;
pub mod insert_barriers;
pub mod loop_partition;
pub mod lower_blocks;
pub mod lower_cross_thread_reduction;
pub mod lower_init;
pub mod promote_accumulators;
pub mod relax_edge_guards;
pub mod relax_guards;
pub mod simplify;
pub mod skip_idle_blocks;
pub mod split_kernels;
pub mod unroll_loops;
pub mod verify_ir;
pub mod verify_local_indices;
pub mod warp_specialize;
pub mod zero_fill_tiles;

use tirc_ir::target::Target;
use tirc_ir::{Diagnostic, PrimFunc, Stmt};

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
    Pass { name: "zero_fill_tiles", run: |f, _| zero_fill_tiles::run(f) },
    Pass { name: "inject_virtual_thread", run: |f, _| inject_virtual_thread::run(f) },
    Pass { name: "inject_software_pipeline", run: inject_software_pipeline::run },
    Pass { name: "flatten_buffers", run: |f, _| flatten_buffers::run(f) },
    Pass { name: "extract_launch", run: extract_launch::run },
    Pass { name: "simplify", run: |f, _| simplify::run(f) },
    Pass { name: "insert_barriers", run: |f, _| insert_barriers::run(f) },
    Pass { name: "promote_accumulators", run: |f, _| promote_accumulators::run(f) },
    Pass { name: "relax_guards", run: |f, _| relax_guards::run(f) },
    Pass { name: "loop_partition", run: |f, _| loop_partition::run(f) },
    Pass { name: "relax_edge_guards", run: |f, _| relax_edge_guards::run(f) },
    Pass { name: "hoist_invariant_guards", run: |f, _| hoist_invariant_guards::run(f) },
    Pass { name: "skip_idle_blocks", run: |f, _| skip_idle_blocks::run(f) },
    Pass { name: "unroll_loops", run: |f, _| unroll_loops::run(f) },
];

/// Runs every pass in order for `ctx.target`; `observe(name, ir)` sees the
/// IR after each.
/// Refuses, before any pass, a function that one kernel cannot run
/// (`split_kernels::check_one_kernel`: split it first) and one whose local
/// buffers would be read by other threads than wrote them
/// (`check_local_buffers`); after them, a kernel in which several threads
/// would update one element of shared or global memory at once, and (once
/// the barriers are in) one whose thread blocks would
/// (`check_redundant_updates`).
pub fn lower(
    mut func: PrimFunc,
    ctx: &PassContext,
    mut observe: impl FnMut(&'static str, &PrimFunc),
) -> Result<PrimFunc, Diagnostic> {
    split_kernels::check_one_kernel(&func)?;
    check_local_buffers::run(&func)?;
    check_tensor_cores(&func, &ctx.target)?;
    for p in PIPELINE {
        let axes = verify_ir::Axes::of(&func);
        func = (p.run)(func, ctx)?;
        verify_ir::after(p.name, &func, &ctx.target)?;
        axes.covered_by(p.name, &func)?;
        observe(p.name, &func);
        // Thread blocks that meet at an update of global memory, while it
        // is still an update (`promote_accumulators` makes it a register's).
        if p.name == "insert_barriers" {
            check_redundant_updates::blocks(&func)?;
        }
    }
    check_redundant_updates::run(&func)?;
    warp_specialize::check_copies(&func, &ctx.target)?;
    // A tensor-core operation is executed by a whole warp together.
    let mut wmma = false;
    func.body.walk(&mut |s| wmma |= matches!(s, Stmt::Wmma(_)));
    let threads = tirc_ir::launch::launch_config(&func).threads_per_block();
    if wmma && threads % ctx.target.warp_size != 0 {
        return Err(Diagnostic::new(format!(
            "the kernel launches {threads} threads per block, but its tensor-core operations need whole warps of {}",
            ctx.target.warp_size
        ))
        .help("bind a loop of 32 (the copies into shared memory, typically) to threadIdx.x"));
    }
    if let Some(cond) = wgmma_under_thread_condition(&func.body) {
        return Err(Diagnostic::new(format!(
            "wgmma is issued by whole warpgroups, but here it runs under `if {cond}`, a condition on the thread \
             index that may leave some warps of a group out"
        ))
        .help("choose tiles that divide the shapes (wgmma's tile is whole), or pad the shapes first (pad_einsum)"));
    }
    if let Some(why) = wgmma_layout_mismatch(&func.body) {
        return Err(Diagnostic::new(why).help(
            "stage the operand K-major in a shared tile of rows of 128 bytes (64 halves: BK = 64) and \
             storage_swizzle it with 128",
        ));
    }
    if has_wgmma(&func.body) && threads % 128 != 0 {
        return Err(Diagnostic::new(format!(
            "the kernel launches {threads} threads per block, but wgmma is issued by warpgroups of 128"
        ))
        .help("bind the warps to a multiple of 4 (threadIdx.y of extent 4, 8, ..)"));
    }
    Ok(func)
}

/// The names of the passes, for `--print-after` and its error message.
pub fn pass_names() -> Vec<&'static str> {
    PIPELINE.iter().map(|p| p.name).collect()
}

/// A function with tensor-core operations needs a GPU that has them, and a
/// fragment (`wmma.*` scope) is touched only by them: its layout across a
/// warp's registers is the hardware's, so an element-wise access has no
/// meaning. The refusal points at the block in question.
fn check_tensor_cores(f: &PrimFunc, target: &tirc_ir::target::Target) -> Result<(), Diagnostic> {
    let (mut misuse, mut op, mut wgmma) = (None, None, None);
    scan_fragments(&f.body, None, &mut misuse, &mut op, &mut wgmma);
    if let Some((name, block)) = misuse {
        return Err(Diagnostic::new(format!(
            "`{name}` is a tensor-core fragment, read or written element by element here: only tensor-core \
             operations (tensorize) may touch it"
        ))
        .help("tensorize the block that copies into or out of the fragment, or give the buffer another scope")
        .or_at_ir(block.and_then(|b: &tirc_ir::Block| b.span), "this block"));
    }
    match op {
        Some((block, _)) if !target.has_wmma() => Err(Diagnostic::new(format!(
            "tensor-core operations (wmma) need sm_70 or newer; {} has none",
            target.arch()
        ))
        .help("compile for sm_70 or newer (--arch), or leave the tiles untensorized")
        .or_at_ir(block.and_then(|b: &tirc_ir::Block| b.span), "this tile")),
        Some((block, true)) if !target.has_mma_m16n8k16() => Err(Diagnostic::new(format!(
            "mma.sync (m16n8k16, and m16n8k8 for tf32) and ldmatrix, the mma_* intrinsics, need sm_80 or newer; {} has neither",
            target.arch()
        ))
        .help("compile for sm_80 or newer (--arch), or use the wmma_* intrinsics, which sm_70 has")
        .or_at_ir(block.and_then(|b: &tirc_ir::Block| b.span), "this tile")),
        _ => match wgmma {
            // wgmma is Hopper's alone: Blackwell's tensor cores take
            // tcgen05 instead, which tirc does not emit.
            Some(block) if target.sm != 90 => Err(Diagnostic::new(format!(
                "wgmma (the wgmma_* intrinsics) needs sm_90a, Hopper; {} has none",
                target.arch()
            ))
            .help("compile for sm_90a (--arch), or use the mma_* intrinsics, which sm_80 and newer have")
            .or_at_ir(block.and_then(|b: &tirc_ir::Block| b.span), "this tile")),
            _ => Ok(()),
        },
    }
}

/// The first condition on a thread index (`threadIdx.*`) around a
/// `wgmma`, printed.
fn wgmma_under_thread_condition(body: &Stmt) -> Option<String> {
    let (head, inner) = body.launch_head();
    let threads: Vec<tirc_ir::Var> =
        head.iter().filter(|(_, t, _)| !t.is_block).map(|(v, _, _)| (*v).clone()).collect();
    fn go(s: &Stmt, threads: &[tirc_ir::Var], under: &mut Vec<tirc_ir::Expr>) -> Option<String> {
        match s {
            Stmt::Wmma(w) if w.op.wgmma_tiles() > 0 => {
                under.iter().find(|c| threads.iter().any(|t| c.uses(t))).map(tirc_ir::printer::print_expr)
            }
            Stmt::If { cond, then, orelse } => {
                under.push(cond.clone());
                let r = go(then, threads, under).or_else(|| orelse.as_ref().and_then(|e| go(e, threads, under)));
                under.pop();
                r
            }
            _ => {
                let mut r = None;
                s.for_each_child(|c| {
                    if r.is_none() {
                        r = go(c, threads, under);
                    }
                });
                r
            }
        }
    }
    go(inner, &threads, &mut Vec::new())
}

/// The first `wgmma` whose operands' shared tiles are not what its
/// descriptors read (`Wmma::wgmma_operand_layout`).
fn wgmma_layout_mismatch(body: &Stmt) -> Option<String> {
    let mut why = None;
    body.walk(&mut |s| {
        if let (Stmt::Wmma(w), None) = (s, &why) {
            why = w.wgmma_operand_layout().err();
        }
    });
    why
}

/// Whether `s` holds a tensor-core operation on warp tiles (`WmmaOp::is_mma`).
pub(crate) fn has_warp_tiles(s: &Stmt) -> bool {
    let mut found = false;
    s.walk(&mut |x| found |= matches!(x, Stmt::Wmma(w) if w.op.is_mma()));
    found
}

pub(crate) fn has_wgmma(s: &Stmt) -> bool {
    let mut found = false;
    s.walk(&mut |x| found |= matches!(x, Stmt::Wmma(w) if w.op.wgmma_tiles() > 0));
    found
}

/// The first element-wise access to a fragment, the first tensor-core
/// operation and the first `wgmma` under `s`, each with the innermost block
/// around it.
fn scan_fragments<'a>(
    s: &'a Stmt,
    block: Option<&'a tirc_ir::Block>,
    misuse: &mut Option<(String, Option<&'a tirc_ir::Block>)>,
    op: &mut Option<(Option<&'a tirc_ir::Block>, bool)>,
    wgmma: &mut Option<Option<&'a tirc_ir::Block>>,
) {
    let block = match s {
        Stmt::Block(r) => Some(&r.block),
        _ => block,
    };
    if let Stmt::Wmma(w) = s {
        op.get_or_insert((block, false)).1 |= w.op.is_mma();
        if w.op.wgmma_tiles() > 0 {
            wgmma.get_or_insert(block);
        }
        return;
    }
    if misuse.is_none() {
        let mut bad = match s {
            Stmt::Store { buffer, .. } if buffer.scope().is_fragment() => Some(buffer.name().to_string()),
            _ => None,
        };
        s.for_each_expr(|e| {
            e.walk(&mut |x| {
                if let tirc_ir::Expr::Load(b, _) = x {
                    if b.scope().is_fragment() && bad.is_none() {
                        bad = Some(b.name().to_string());
                    }
                }
            })
        });
        if let Some(n) = bad {
            *misuse = Some((n, block));
        }
    }
    s.for_each_child(|c| scan_fragments(c, block, misuse, op, wgmma));
}
