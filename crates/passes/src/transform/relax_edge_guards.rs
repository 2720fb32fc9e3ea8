//! `relax_edge_guards`: after `loop_partition`, the tiles at the edge of a
//! shape update their per-thread buffers on the whole tile too, where the
//! update reads global memory.
//!
//! `relax_guards` leaves the guard of an update that reads global memory
//! (`if row < M and col < N: C_local[..] = C_local[..] + A[..] * B[..]`,
//! a schedule that multiplies straight from global memory): dropping it
//! would load elements past the edge, out of the buffer, in every tile.
//! `loop_partition` has since given the interior tiles a copy of the kernel
//! in which no guard is left; what remains guarded is the boundary copy.
//! There, the guard keeps the CUDA compiler from sharing a load between
//! the multiply-adds it feeds (one load of A per element of C instead of
//! one per row), and the boundary tiles run several times slower than the
//! others.
//!
//! This pass drops such a guard on the conditions of `relax_guards` (the
//! element written where the guard is false is never read out, the update
//! reads its buffer only at the element it writes, its other loads and
//! divisions are safe), except that a global load may leave its buffer:
//! it reads at its index clamped to `[0, elements - 1]` instead, a valid
//! element whose value is never used. Only the loads that the ranges of the
//! loops do not keep inside their buffer are clamped. A condition on launch
//! indices alone (`threadIdx.x < 76`: a whole thread past the edge) stays,
//! since it spares whole threads, often whole warps, the loads; what goes
//! is a condition on the elements of a thread's own tile, whose lanes run
//! beside lanes with work to do.

use super::relax_guards::{relax, Loads};
use tirc_ir::{Diagnostic, PrimFunc};

pub fn run(f: PrimFunc) -> Result<PrimFunc, Diagnostic> {
    relax(f, Loads::ClampGlobal)
}
