//! `storage_align(block, buffer_index, axis, factor, offset)`: pad a
//! buffer's stride against shared-memory bank conflicts.
//!
//! Contract (TVM's meaning): the buffer that `block` writes at
//! `buffer_index` (an index into its writes) gets the stride of dimension
//! `axis` padded to the smallest value, at least the compact one, with
//! `stride % factor == offset`; strides are computed from the innermost
//! dimension out, each from the padded one inside it. A negative `axis`
//! counts from the end (`axis=-2` is the row stride of a 2-D tile). The
//! step only records the request, as TVM does, in the block annotation
//! `buffer_dim_align`: a list of `[buffer_index, axis, factor, offset]`,
//! with the axis normalised, one entry per buffer and axis (a later call for
//! the same pair replaces the earlier one). Being an annotation, it travels
//! with the block through later primitives. Lowering honours it:
//! `lower_blocks` moves it onto the buffer (`dim_align=`), `compact_buffers`
//! keeps it while shrinking the shape, and `flatten_buffers` lays the
//! buffer out with the padded strides, so the allocation grows and every
//! index uses them. The values computed are unchanged: only the layout of
//! memory that only the kernel sees changes.
//!
//! Preconditions, checked in this order:
//! 1. The block is in the function.
//! 2. `buffer_index` names one of the buffers it writes.
//! 3. That buffer is allocated by the function (a parameter's layout is
//!    the caller's) in shared or local memory.
//! 4. `axis` is in `-ndim..ndim`, `factor > 0` and `0 <= offset < factor`.

use super::{BlockRV, Result, Schedule, ScheduleError};
use crate::common::tree::replace_block;
use tirc_ir::region::block_buffers;
use tirc_ir::{Attr, Scope, Stmt};

/// The block annotation that holds the requests.
use tirc_ir::buffer::DIM_ALIGN_KEY as KEY;

pub fn storage_align(
    sch: &mut Schedule,
    block: &BlockRV,
    buffer_index: i64,
    axis: i64,
    factor: i64,
    offset: i64,
) -> Result<()> {
    // 1, 2.
    let b = written_buffer(sch, block, buffer_index)?;
    // 3.
    if sch.func.params.contains(&b) {
        return Err(ScheduleError::new(format!(
            "`{}` is a parameter of the function: its layout is the caller's, so its strides cannot be padded",
            b.name()
        ))
        .help("pad a copy instead: sch.cache_read or sch.cache_write into \"shared\", then storage_align the copy"));
    }
    if b.scope() == Scope::Global {
        return Err(ScheduleError::new(format!(
            "`{}` is in global memory: storage_align pads shared and local buffers only",
            b.name()
        ))
        .help(format!("move it first: sch.set_scope({block}, {buffer_index}, \"shared\")")));
    }
    // 4.
    let ndim = b.ndim() as i64;
    if axis < -ndim || axis >= ndim {
        return Err(ScheduleError::bad_argument(format!(
            "axis {axis} is out of range: `{}` has {ndim} dimension(s), so the axis must be in [{}, {ndim})",
            b.name(),
            -ndim
        )));
    }
    let axis = if axis < 0 { axis + ndim } else { axis };
    if factor <= 0 {
        return Err(ScheduleError::bad_argument(format!("factor {factor} must be positive"))
            .help("e.g. factor=32 (the number of shared-memory banks)"));
    }
    if !(0..factor).contains(&offset) {
        return Err(ScheduleError::new(format!(
            "offset {offset} must be in [0, {factor}), the residues of factor {factor}"
        ))
        .help("e.g. offset=1 makes consecutive rows start in consecutive banks"));
    }
    let entry = Attr::List(vec![Attr::Int(buffer_index), Attr::Int(axis), Attr::Int(factor), Attr::Int(offset)]);
    sch.func.body = replace_block(&sch.func.body, block, |r| {
        let mut r = r.clone();
        let anns = &mut r.block.annotations;
        let mut list = match anns.iter().find(|(k, _)| k == KEY) {
            Some((_, Attr::List(v))) => v.clone(),
            _ => Vec::new(),
        };
        let same = |a: &Attr| matches!(a, Attr::List(x) if x.first() == Some(&Attr::Int(buffer_index)) && x.get(1) == Some(&Attr::Int(axis)));
        match list.iter().position(same) {
            Some(i) => list[i] = entry,
            None => list.push(entry),
        }
        match anns.iter_mut().find(|(k, _)| k == KEY) {
            Some(slot) => slot.1 = Attr::List(list),
            None => anns.push((KEY.to_string(), Attr::List(list))),
        }
        Ok(Stmt::Block(Box::new(r)))
    })?;
    Ok(())
}

/// The buffer `block` writes at `buffer_index` (checks 1 and 2 of
/// `storage_align` and `storage_swizzle`).
pub(super) fn written_buffer(sch: &Schedule, block: &BlockRV, buffer_index: i64) -> Result<tirc_ir::Buffer> {
    let r = sch
        .func
        .body
        .find_block(block)
        .ok_or_else(|| ScheduleError::not_found(format!("block `{block}` is no longer in the function")))?;
    let writes = block_buffers(r, false);
    usize::try_from(buffer_index).ok().and_then(|i| writes.get(i)).cloned().ok_or_else(|| {
        let names: Vec<String> = writes.iter().map(|b| format!("`{}`", b.name())).collect();
        ScheduleError::bad_argument(format!(
            "block `{block}` writes {} buffer(s), so index {buffer_index} names none of them",
            writes.len()
        ))
        .help(format!("the buffers it writes, from index 0: {}", names.join(", ")))
    })
}
