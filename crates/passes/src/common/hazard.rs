//! Whether moving a block's accesses past other blocks keeps what every
//! block reads.
//!
//! `compute_at`, `reverse_compute_at`, `compute_inline`,
//! `reverse_compute_inline` and `decompose_reduction` each move some of a
//! block's reads and writes to another place in the program. Each block
//! whose order against the moved accesses changes (those "passed") must
//! then touch none of the same buffers in a way that order matters: it may
//! not write what the moved accesses read (they would read its values
//! instead of the old ones, or the old ones instead of its), read what they
//! write, or write it too. The primitive names which passed blocks are its
//! own dataflow (a consumer reading the moved producer's tile), whose order
//! its own region logic keeps.
//!
//! The check is by whole buffer, so it refuses some moves that touch
//! disjoint parts of one buffer; it never accepts one that changes a value.

use super::error::ScheduleError;
use tirc_ir::region::block_buffers;
use tirc_ir::{BlockRealize, Buffer};

/// The accesses that move: the buffers read and those written.
pub struct Moved<'a> {
    pub block: &'a str,
    pub reads: Vec<Buffer>,
    pub writes: Vec<Buffer>,
}

/// Refuses the move if a passed block conflicts with the moved accesses.
/// `linked(block, buffer, writes)` says that the passed block's read
/// (`writes` false) or write of the buffer is the primitive's own dataflow,
/// whose order the primitive keeps.
pub fn check_passed(
    moved: &Moved,
    passed: &[&BlockRealize],
    linked: &dyn Fn(&BlockRealize, &Buffer, bool) -> bool,
    what: &str,
) -> Result<(), ScheduleError> {
    for w in passed {
        let (wr, ww) = (block_buffers(w, true), block_buffers(w, false));
        let clash = |mine: &[Buffer], theirs: &[Buffer], writes: bool| -> Option<Buffer> {
            mine.iter().find(|b| theirs.contains(b) && !linked(w, b, writes)).cloned()
        };
        let found = clash(&moved.reads, &ww, true)
            .map(|b| (b, "writes", "reads"))
            .or_else(|| clash(&moved.writes, &wr, false).map(|b| (b, "reads", "writes")))
            .or_else(|| clash(&moved.writes, &ww, true).map(|b| (b, "writes", "writes")));
        if let Some((b, verb, mine)) = found {
            return Err(ScheduleError::new(format!(
                "{what} would move block `{}` past block `{}`, which {verb} `{}` that `{}` {mine}: the order of the two decides the values",
                moved.block,
                w.block.name,
                b.name(),
                moved.block
            )));
        }
    }
    Ok(())
}
