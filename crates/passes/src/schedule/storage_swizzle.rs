//! `storage_swizzle(block, buffer_index, swizzle_bytes)`: lay a shared
//! buffer out swizzled, as Hopper's tensor cores read their operands.
//!
//! Contract (tirc's own primitive; TVM writes such a layout as an index
//! map with an XOR): the buffer that `block` writes at `buffer_index` gets
//! the swizzled layout of width `swizzle_bytes` (32, 64 or 128): in each
//! 128-byte line of its memory, the 16-byte chunks are permuted by XOR
//! with the line's number modulo `swizzle_bytes / 16`
//! (`tirc_ir::swizzle_offset`). Indices do not change: the permutation
//! applies to addresses, in the simulator and in the CUDA code, so every
//! access stays as written and the values computed are unchanged. A tile
//! of rows of `swizzle_bytes` bytes stored this way is what `wgmma`'s
//! shared-memory descriptors with that swizzle mode describe (the
//! `wgmma_*` intrinsics of `tensorize` take no other), and its rows and
//! columns of 16-byte chunks are read and written without bank conflicts.
//! The buffer's memory starts at a multiple of 1024 bytes.
//!
//! Preconditions, checked in this order:
//! 1. The block is in the function.
//! 2. `buffer_index` names one of the buffers it writes.
//! 3. That buffer is allocated by the function in shared memory.
//! 4. `swizzle_bytes` is 32, 64 or 128.
//! 5. The buffer's shape is constant and its bytes are whole groups of 8
//!    lines of the pattern (`8 * swizzle_bytes`), so that the permutation
//!    stays inside it.
//! 6. No tensor-core operation but `wgmma` reads it (ldmatrix and the
//!    wmma loads address rows linearly).

use super::{BlockRV, Result, Schedule, ScheduleError};
use tirc_ir::buffer::{swizzle_atom, SWIZZLES};
use tirc_ir::{Scope, Stmt};

pub fn storage_swizzle(sch: &mut Schedule, block: &BlockRV, buffer_index: i64, bytes: i64) -> Result<()> {
    // 1, 2.
    let b = super::storage_align::written_buffer(sch, block, buffer_index)?;
    // 3.
    if sch.func.params.contains(&b) || b.scope() != Scope::Shared {
        return Err(ScheduleError::new(format!(
            "`{}` is in {} memory{}: storage_swizzle lays out shared buffers the function allocates",
            b.name(),
            b.scope().name(),
            if sch.func.params.contains(&b) { ", a parameter" } else { "" }
        ))
        .help(
            "swizzle a copy in shared memory: sch.cache_read(block, index, \"shared\"), then storage_swizzle the copy",
        ));
    }
    // 4.
    if !SWIZZLES.contains(&bytes) {
        return Err(ScheduleError::bad_argument(format!(
            "swizzle_bytes {bytes} is not a swizzle width: it must be 32, 64 or 128"
        )));
    }
    // 5.
    let atom = swizzle_atom(bytes);
    let total = b.num_elements().and_then(|n| n.checked_mul(b.dtype().bytes() as i64));
    match total {
        Some(t) if t % atom == 0 => {}
        Some(t) => {
            return Err(ScheduleError::new(format!(
                "`{}` holds {t} bytes, not a multiple of {atom} (8 lines of the {bytes}-byte pattern): the swizzle would move elements out of it",
                b.name()
            ))
            .help("tile the copy so that the buffer's rows are whole multiples of the pattern"))
        }
        None => {
            return Err(ScheduleError::new(format!("`{}` has a shape known only at run time", b.name())));
        }
    }
    // 6.
    let mut other = None;
    sch.func.body.walk(&mut |s| {
        if let Stmt::Wmma(w) = s {
            if w.tiles.iter().any(|t| t.buffer == b && !w.op.reads_swizzled(t.buffer.dtype())) {
                other.get_or_insert(w.op.name());
            }
        }
    });
    if let Some(op) = other {
        return Err(ScheduleError::new(format!(
            "`{}` is read by {op}, which cannot read a swizzled layout (only wgmma's descriptors and ldmatrix of 16-bit elements can)",
            b.name()
        )));
    }
    let nb = b.with(|n| n.swizzle = bytes);
    sch.func.body = crate::common::tree::replace_buffer(&sch.func.body, &b, &nb);
    Ok(())
}
