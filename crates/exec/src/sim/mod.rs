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
    let prog = compile::compile(f, opts.f64_storage);
    let mut params = Vec::new();
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
    let mut m = Machine::new(&prog, opts, cfg.block, params);
    let (total, mut done) = (cfg.blocks(), 0);
    for bz in 0..cfg.grid[2] {
        for by in 0..cfg.grid[1] {
            for bx in 0..cfg.grid[0] {
                m.run_block([bx, by, bz])?;
                done += 1;
                progress(done, total);
            }
        }
    }
    for (d, mem) in args.iter_mut().zip(&m.mems) {
        d.set_f64(&mem.data);
    }
    m.stats.blocks = cfg.blocks();
    m.stats.threads_per_block = cfg.threads_per_block();
    Ok(m.stats)
}
