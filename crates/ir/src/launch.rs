//! A lowered kernel's launch configuration: the grid and block extents that
//! the `T.launch_thread` statements at the head of its body give (written
//! by the pass `extract_launch`; read by code generation, the simulator and
//! the runtimes).

use crate::func::PrimFunc;

/// A kernel's launch: grid and block extents, x, y, z.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    pub grid: [i64; 3],
    pub block: [i64; 3],
}

impl LaunchConfig {
    pub fn threads_per_block(&self) -> i64 {
        self.block.iter().product()
    }

    pub fn blocks(&self) -> i64 {
        self.grid.iter().product()
    }

    /// The `blockIdx` of the `b`-th block, x varying fastest (the order of
    /// `0..blocks()`).
    pub fn block_index(&self, b: i64) -> [i64; 3] {
        let [x, y, _] = self.grid;
        [b % x, b / x % y, b / (x * y)]
    }
}

/// The occupancy hint of a kernel, as a loop annotation (on a loop bound to
/// a GPU axis) and, from `extract_launch` on, as a function attribute:
/// code generation writes it as `__launch_bounds__(threads, n)`.
pub const MIN_BLOCKS_PER_SM: &str = "min_blocks_per_sm";

/// The function attribute `inject_software_pipeline` sets when every
/// shared operand of every `wgmma` has a version to spare (one more than
/// its stages need): at a barrier, one batch of products may then stay in
/// flight, since the copies after the barrier refill the version before
/// the one it reads (codegen waits with `wgmma.wait_group 1` there, not 0).
pub const WGMMA_IN_FLIGHT: &str = "tirc.wgmma_in_flight";

/// The annotation of a warp-specialized loop (the pass `warp_specialize`),
/// its value the versions of its tiles: code generation gives the kernel a
/// producer (`producer_threads`) that issues the loop's bulk tensor copies
/// (`T.tma_load`) up to that many iterations ahead of the block's threads,
/// the two sides meeting at mbarriers.
pub const WARP_SPECIALIZED: &str = "tirc.warp_specialized";

/// A schedule's annotation of a warp-specialized loop of `wgmma` products
/// (`sch.annotate(k0, "tirc.promote_every", P)`): every `P` iterations the
/// tensor cores' float32 accumulators are added into a second set of
/// registers, rounded to nearest, and restart from zero; the loop's end adds
/// them back. The tensor cores add each product into their accumulators
/// with the bits below the larger operand's cut off (an error that grows
/// with the depth of the sum, always toward zero); promoted every `P`
/// steps, it grows with `P` only. The same sum, so the simulator (which
/// adds exactly rounded) runs the loop as written; it costs a wait for the
/// products in flight and two registers an accumulator.
pub const PROMOTE_EVERY: &str = "tirc.promote_every";

/// Loop `l`'s promotion interval (`None` without the annotation); `Err`
/// for a value that is not a number of iterations, 1 or more.
pub fn promote_every(l: &crate::For) -> Result<Option<i64>, String> {
    match l.annotations.iter().find(|(k, _)| k == PROMOTE_EVERY) {
        None => Ok(None),
        Some((_, v)) => match v.as_int() {
            Some(p) if p >= 1 => Ok(Some(p)),
            _ => Err(format!("`{PROMOTE_EVERY}` of loop `{}` takes a number of iterations, 1 or more", l.var.name())),
        },
    }
}

/// The bytes of a warp-specialized kernel's mbarriers: a "full" and an
/// "empty" one (8 bytes each) for each version of its tiles (the most any
/// of its loops has); 0 without such a loop.
pub fn mbarrier_bytes(body: &crate::Stmt) -> usize {
    let v = warp_specialized_loops(body).iter().filter_map(|l| warp_specialized(l)).max().unwrap_or(0);
    16 * v.max(0) as usize
}

/// The warp-specialized loops of `body`, outermost first.
pub fn warp_specialized_loops(body: &crate::Stmt) -> Vec<&crate::For> {
    let mut out = Vec::new();
    body.walk(&mut |s| {
        if let crate::Stmt::For(l) = s {
            if warp_specialized(l).is_some() {
                out.push(&**l);
            }
        }
    });
    out
}

/// The threads of the producer a warp-specialized kernel adds: a warpgroup
/// where the consumers work on tensor-core warp tiles (`wgmma`,
/// `mma.sync`) and are whole warpgroups (the producer then hands its
/// registers to them with `setmaxnreg`, which works by warpgroups), else
/// one warp.
pub fn producer_threads(warp_tiles: bool, consumers: i64) -> i64 {
    if warp_tiles && consumers % 128 == 0 {
        128
    } else {
        32
    }
}

/// The versions of the warp-specialized loop `l`'s tiles, if it is one.
pub fn warp_specialized(l: &crate::For) -> Option<i64> {
    l.annotations.iter().find(|(k, _)| k == WARP_SPECIALIZED).and_then(|(_, v)| v.as_int())
}

/// The batches of `wgmma` that may stay in flight across a barrier.
pub fn wgmma_in_flight(f: &PrimFunc) -> i64 {
    f.attrs.iter().find(|(k, _)| k == WGMMA_IN_FLIGHT).and_then(|(_, v)| v.as_int()).unwrap_or(0)
}

/// The function's occupancy hint, if it has one.
pub fn min_blocks_per_sm(f: &PrimFunc) -> Option<i64> {
    f.attrs.iter().find(|(k, _)| k == MIN_BLOCKS_PER_SM).and_then(|(_, v)| v.as_int())
}

/// The shared buffers that bulk tensor copies (`T.tma_load`) write.
pub fn tma_destinations(body: &crate::Stmt) -> Vec<crate::Buffer> {
    let mut out = Vec::new();
    body.walk(&mut |s| {
        if let crate::Stmt::Store { buffer, value: crate::Expr::Call(crate::Intrinsic::TmaLoad, _), .. } = s {
            if !out.contains(buffer) {
                out.push(buffer.clone());
            }
        }
    });
    out
}

/// Where a shared buffer starts, in bytes: a multiple of 1024 for a
/// swizzled one (where the hardware's pattern starts), of 128 for one bulk
/// tensor copies write (`tma`: the copy's alignment), of 16 otherwise.
pub fn shared_alignment(b: &crate::Buffer, tma: &[crate::Buffer]) -> usize {
    if b.swizzle() != 0 {
        1024
    } else if tma.contains(b) {
        128
    } else {
        16
    }
}

/// The launch configuration of a lowered function: the `Launch` statements
/// at the head of its body.
pub fn launch_config(f: &PrimFunc) -> LaunchConfig {
    let mut cfg = LaunchConfig { grid: [1; 3], block: [1; 3] };
    for (_, tag, extent) in f.body.launch_head().0 {
        let e = extent.as_int().unwrap_or(1);
        if tag.is_block {
            cfg.grid[tag.dim as usize] = e;
        } else {
            cfg.block[tag.dim as usize] = e;
        }
    }
    cfg
}

/// The kernel's shared memory as one array: each shared allocation of the
/// body at its offset, aligned as `shared_alignment` says, in order of
/// appearance; and the total bytes. The two branches of an `if` (the
/// interior and the edge versions of a partitioned kernel) never run in
/// one block together: each lays out its buffers from where the `if`
/// starts, and the total is the larger branch's. A buffer met again (the
/// same tile in both branches) keeps its first offset. (Code generation
/// lays out dynamic shared memory so, and `extract_launch` checks the
/// total against the target.)
pub fn shared_layout(body: &crate::Stmt) -> (Vec<(crate::Buffer, usize)>, usize) {
    /// Lays out the allocations of `s` from byte `start`; the end of the
    /// furthest.
    fn lay(s: &crate::Stmt, start: usize, tma: &[crate::Buffer], layout: &mut Vec<(crate::Buffer, usize)>) -> usize {
        match s {
            crate::Stmt::Allocate { buffer, body } if buffer.scope() == crate::Scope::Shared => {
                let bytes = buffer.num_elements().unwrap_or(0).max(0) as usize * buffer.dtype().bytes();
                let at = match layout.iter().find(|(b, _)| b == buffer) {
                    Some((_, at)) => *at,
                    None => {
                        let align = shared_alignment(buffer, tma);
                        let at = start.div_ceil(align) * align;
                        layout.push((buffer.clone(), at));
                        at
                    }
                };
                let after = start.max(at + bytes.div_ceil(16) * 16);
                lay(body, after, tma, layout).max(after)
            }
            crate::Stmt::If { then, orelse, .. } => {
                let a = lay(then, start, tma, layout);
                orelse.as_ref().map_or(a, |e| a.max(lay(e, start, tma, layout)))
            }
            _ => {
                // One statement after another (or nested): one after the
                // other in memory.
                let mut end = start;
                s.for_each_child(|c| end = lay(c, end, tma, layout));
                end
            }
        }
    }
    let tma = tma_destinations(body);
    let mut layout = Vec::new();
    let total = lay(body, 0, &tma, &mut layout);
    (layout, total)
}
