//! The CPU simulator: runs a lowered kernel the way a GPU would, block by
//! block, with the threads of a block in lockstep.
//!
//! Each statement runs for every active thread of the block before the next
//! one starts, which is the behaviour of barrier-synchronised code whose
//! control flow around barriers is uniform. Conditionals and loops with
//! thread-dependent bounds narrow the set of active threads; a barrier
//! reached by only some of the block's threads is an error, as it would hang
//! or misbehave on the GPU. Local buffers are per thread, shared buffers per
//! block, parameters global. Within a block, shared memory is checked for
//! races: an access by one thread to a word another thread wrote (or read,
//! for a write) since the last barrier is reported with the buffer, the
//! index and both threads; two threads writing the same value is benign, as
//! `compute-sanitizer`'s racecheck also classes it. `cp.async` copies land at the `wait_group` that
//! covers their group, so a kernel that reads before waiting sees stale
//! data.
//!
//! Float values are computed in f64 and rounded to their type after every
//! operation and store, so a float32 kernel sees float32 arithmetic;
//! `f64_storage` keeps every float at f64, for references.
//!
//! The kernel is compiled first (`compile.rs`: slots for variables and
//! memories, typed expression trees), then run (`machine.rs`: one column of
//! values per expression, one value per active thread). `race.rs` keeps the
//! race records and `value.rs` says what each operation computes.

mod compile;
mod machine;
mod race;
mod value;
/// A float32 rounded to tf32 as `T.tf32_round` and the tf32 products round it.
pub use value::tf32;

use crate::data::HostData;
use machine::{Machine, Mem};
use tirc_ir::launch::launch_config;
use tirc_ir::PrimFunc;

#[derive(Clone, Copy, Debug, Default)]
pub struct SimOptions {
    /// Keep floats at f64 in every buffer (for reference runs).
    pub f64_storage: bool,
    /// Do not report races on shared memory: for kernels whose barriers
    /// are not placed yet. Lockstep execution still gives the result the
    /// kernel means.
    pub ignore_races: bool,
    /// Run a lone active thread on the column machine as well, rather than
    /// on the scalar one (`machine/scalar.rs`): for tests that the two
    /// agree.
    pub columns_only: bool,
    /// Threads that share a launch's blocks: 0 for one per core, 1 to run
    /// the blocks one after another on the calling thread.
    pub workers: usize,
}

/// Counts from one simulated launch.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SimStats {
    pub blocks: i64,
    pub threads_per_block: i64,
    pub barriers: u64,
}

/// An error in the simulated kernel: a race, an out-of-bounds access, a
/// barrier under divergent control flow.
pub type SimError = String;

/// `x` as a value of type `t`, as the simulator holds one: a float rounded
/// to nearest even (float64 kept), an integer truncated, a bool 0 or 1.
pub fn round_to(t: tirc_ir::DType, x: f64) -> f64 {
    value::Precision::of(t, false).round(x)
}

/// Runs a lowered function. `args` hold the parameter buffers, in order; the
/// results are left in them.
pub fn run(f: &PrimFunc, args: &mut [HostData], opts: SimOptions) -> Result<SimStats, SimError> {
    run_observed(f, args, opts, &mut |_, _| {})
}

/// [`run`], calling `progress(blocks done, blocks in all)` after each block
/// (for a progress bar over long simulations).
pub fn run_observed(
    f: &PrimFunc,
    args: &mut [HostData],
    opts: SimOptions,
    progress: &mut dyn FnMut(i64, i64),
) -> Result<SimStats, SimError> {
    if args.len() != f.params.len() {
        return Err(format!("{} has {} parameters but {} buffers were given", f.name, f.params.len(), args.len()));
    }
    let launched = lockstep(f)?;
    let f = launched.as_ref().unwrap_or(f);
    let prog = compile::compile(f, opts.f64_storage);
    let mut params: Vec<Mem> = Vec::new();
    for (decl, d) in prog.mems.iter().zip(args.iter()) {
        let n = decl.elements.clone()?;
        if d.len() != n {
            return Err(format!("buffer {} needs {n} elements, {} given", decl.name, d.len()));
        }
        // A global buffer threads pass values through is race-checked
        // (a barrier orders global memory within a block, and only there).
        params.push(if decl.exchanged && !opts.ignore_races {
            Mem::global_checked(d.to_f64())
        } else {
            Mem::global(d.to_f64())
        });
    }
    let cfg = launch_config(f);
    let total = cfg.blocks();
    // Two blocks writing different values to one word race on a GPU; the
    // blocks run here one after another, so each word's writer is kept.
    if !opts.ignore_races && total > 1 {
        params.iter_mut().for_each(Mem::check_blocks);
    }
    // So do two threads of a block writing different values to one word
    // between two barriers (shared memory and the buffers threads pass
    // values through have their own check).
    if !opts.ignore_races && cfg.threads_per_block() > 1 {
        params.iter_mut().for_each(Mem::check_threads);
    }
    let bytes: usize = params.iter().map(|m| m.data.len() * 8).sum();
    let workers = match opts.workers {
        // One per core, where there are blocks enough to share and where
        // the copies of global memory each further worker makes are small.
        0 => {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            let by_blocks = usize::try_from(total / MIN_BLOCKS_PER_WORKER).unwrap_or(usize::MAX);
            if bytes.saturating_mul(cores - 1) > SPLIT_MEMORY_LIMIT {
                1
            } else {
                cores.min(by_blocks)
            }
        }
        n => n.min(usize::try_from(total).unwrap_or(usize::MAX)),
    }
    .max(1);
    let (mems, stats) = if workers == 1 {
        let mut m = Machine::new(&prog, opts, cfg.block, params);
        m.grid = cfg.grid;
        for (k, b) in (0..total).enumerate() {
            m.run_block(b, cfg.block_index(b))?;
            progress(k as i64 + 1, total);
        }
        (m.mems, m.stats)
    } else {
        run_split(&prog, opts, &cfg, params, workers, progress)?
    };
    for (d, mem) in args.iter_mut().zip(&mems) {
        d.set_f64(&mem.data);
    }
    let mut stats = stats;
    stats.blocks = total;
    stats.threads_per_block = cfg.threads_per_block();
    Ok(stats)
}

/// A function whose threads talk through warp shuffles but whose loops are
/// not yet a launch (between `lower_cross_thread_reduction` and
/// `extract_launch`) cannot run with its thread loops as plain loops: a
/// shuffle reads what another thread holds at the same point. It runs as
/// the GPU would, its thread loops made the launch first. `None` for any
/// other function, which runs as it is.
fn lockstep(f: &PrimFunc) -> Result<Option<PrimFunc>, SimError> {
    let (mut launched, mut shuffles) = (false, false);
    f.body.walk(&mut |s| {
        launched |= matches!(s, tirc_ir::Stmt::Launch { .. });
        s.for_each_expr(|e| {
            e.walk(&mut |x| {
                shuffles |= matches!(x, tirc_ir::Expr::Call(tirc_ir::Intrinsic::WarpShuffleDown, _));
            })
        });
    });
    if launched || !shuffles {
        return Ok(None);
    }
    let ctx = tirc_passes::transform::PassContext::default();
    tirc_passes::transform::extract_launch::run(f.clone(), &ctx)
        .map(Some)
        .map_err(|d| format!("the function's warp shuffles need its thread loops launched, which fails: {}", d.message))
}

/// Global memory (as f64) above which a launch is not split over workers,
/// each of which would copy it.
const SPLIT_MEMORY_LIMIT: usize = 1 << 29;

/// Fewer blocks than this per worker are not worth a thread.
const MIN_BLOCKS_PER_WORKER: i64 = 8;

/// The stack of each worker thread: the `tirc` command runs on a thread of
/// this size too, so a worker recurses as deep as it.
pub const WORKER_STACK: usize = 256 << 20;

/// Runs the blocks of one launch on `workers` threads, each a consecutive
/// range of blocks on its own copy of global memory; then merges, in block
/// order, what each range wrote (the words whose bits it changed), so the
/// result is the sequential one wherever blocks do not read each other's
/// writes, which a GPU does not order either. The first error by block
/// order is the one reported.
fn run_split(
    prog: &compile::Program,
    opts: SimOptions,
    cfg: &tirc_ir::launch::LaunchConfig,
    params: Vec<Mem>,
    workers: usize,
    progress: &mut dyn FnMut(i64, i64),
) -> Result<(Vec<Mem>, SimStats), SimError> {
    use std::sync::atomic::{AtomicI64, Ordering};
    let total = cfg.blocks();
    let done = AtomicI64::new(0);
    let initial: Vec<Vec<f64>> = params.iter().map(|m| m.data.clone()).collect();
    let ranges: Vec<(i64, i64)> =
        (0..workers as i64).map(|w| (total * w / workers as i64, total * (w + 1) / workers as i64)).collect();
    // Runs one range of blocks; `report` hears how many blocks all the
    // workers have done.
    let run_range = |mems: Vec<Mem>, (lo, hi): (i64, i64), report: &mut dyn FnMut(i64)| {
        let mut m = Machine::new(prog, opts, cfg.block, mems);
        m.grid = cfg.grid;
        let mut r = Ok(());
        for b in lo..hi {
            r = m.run_block(b, cfg.block_index(b));
            if r.is_err() {
                break;
            }
            report(done.fetch_add(1, Ordering::Relaxed) + 1);
        }
        (m, r)
    };
    let copies: Vec<Vec<Mem>> = (1..workers).map(|_| params.iter().map(Mem::copy_of).collect()).collect();
    let (first, rest) = std::thread::scope(|scope| {
        let handles = copies
            .into_iter()
            .zip(&ranges[1..])
            .map(|(mems, &r)| {
                // As deep a stack as the calling thread's (a long chain of
                // `let`s nests that deep): the default of 2 MiB was not.
                std::thread::Builder::new()
                    .stack_size(WORKER_STACK)
                    .spawn_scoped(scope, move || run_range(mems, r, &mut |_| {}))
            })
            .collect::<Result<Vec<_>, _>>();
        let handles = match handles {
            Ok(h) => h,
            Err(e) => return (Err(format!("starting a simulator worker failed: {e}")), Vec::new()),
        };
        // This thread runs the first range and reports everyone's progress.
        let first = run_range(params, ranges[0], &mut |d| progress(d, total));
        let rest: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
        (Ok(first), rest)
    });
    let (mut main, r) = first?;
    r?;
    let mut stats = main.stats;
    for worker in rest {
        let (m, r) = worker.map_err(|_| "a simulator worker stopped unexpectedly".to_string())?;
        r?;
        stats.barriers += m.stats.barriers;
        for (k, ((to, from), init)) in main.mems.iter_mut().zip(&m.mems).zip(&initial).enumerate() {
            if !to.owner.is_empty() {
                // What this range wrote, over what earlier ranges wrote: a
                // word both wrote with different values is a race.
                for (a, &o) in from.owner.iter().enumerate().filter(|(_, &o)| o != 0) {
                    let (was, f) = (to.owner[a], from.data[a]);
                    if was != 0 && to.data[a].to_bits() != f.to_bits() {
                        let name = &prog.mems[k].name;
                        let (was, o) = (was & !machine::CHANGED, o & !machine::CHANGED);
                        return Err(machine::block_race(name, a, cfg.grid, (was, to.data[a]), (o, f)));
                    }
                    to.owner[a] = o;
                    to.data[a] = f;
                }
                continue;
            }
            for ((t, &f), &i) in to.data.iter_mut().zip(&from.data).zip(init) {
                if f.to_bits() != i.to_bits() {
                    *t = f;
                }
            }
        }
    }
    progress(total, total);
    Ok((main.mems, stats))
}
