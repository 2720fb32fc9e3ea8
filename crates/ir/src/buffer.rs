//! Buffers: named, typed, shaped arrays in one memory scope.
//!
//! Like variables, buffers have identity: a pass that changes a buffer's shape
//! makes a new `Buffer` and rewrites every access to it.
//!
//! A buffer is laid out row-major. `dim_align` (from `sch.storage_align`)
//! pads the stride of some dimensions: the stride of dimension `axis` is
//! the smallest value at least its compact value with
//! `stride % factor == offset`, computed from the innermost dimension out
//! (TVM's rule), so the padding follows the shape when a pass shrinks it.
//!
//! `swizzle` (from `sch.storage_swizzle`, shared memory only) permutes the
//! 16-byte chunks of each 128-byte line of memory: chunk `c` of line `l`
//! moves to `c ^ (l % (swizzle / 16))`, the layout Hopper's tensor cores
//! read a swizzled shared-memory operand in (`swizzle_offset`). The layout is
//! a property of addresses, not of indices: the IR keeps the buffer's
//! logical indices, and the simulator and the CUDA code apply the
//! permutation to each element's offset.

use crate::dtype::DType;
use crate::expr::Expr;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// Where a buffer lives on the GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Device memory, visible to every thread of the launch.
    Global,
    /// Per-block on-chip memory, shared by the threads of one block.
    Shared,
    /// Per-thread storage, registers where the compiler can keep it there.
    Local,
    /// Tensor-core fragments (`crate::wmma`), one copy per warp spread over
    /// its registers: the A operand, the B operand, the accumulator.
    WmmaMatrixA,
    WmmaMatrixB,
    WmmaAccumulator,
    /// TVM's `"warp"`: a buffer whose last two dimensions are a warp's 32
    /// lanes and each lane's elements, `[.., 32, n]` (`crate::wmma`, the
    /// `mma.sync` operations). Lane `l` holds `[.., l, :]` in its
    /// registers; only warp-wide operations touch it.
    Warp,
}

impl Scope {
    pub fn parse(s: &str) -> Option<Scope> {
        Some(match s {
            "global" => Scope::Global,
            "shared" | "shared.dyn" => Scope::Shared,
            "local" | "register" => Scope::Local,
            "wmma.matrix_a" => Scope::WmmaMatrixA,
            "wmma.matrix_b" => Scope::WmmaMatrixB,
            "wmma.accumulator" => Scope::WmmaAccumulator,
            "warp" => Scope::Warp,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Scope::Global => "global",
            Scope::Shared => "shared",
            Scope::Local => "local",
            Scope::WmmaMatrixA => "wmma.matrix_a",
            Scope::WmmaMatrixB => "wmma.matrix_b",
            Scope::WmmaAccumulator => "wmma.accumulator",
            Scope::Warp => "warp",
        }
    }

    /// A tensor-core fragment scope: per warp, touched only by `Wmma`
    /// statements (the `wmma.*` scopes and `warp`).
    pub fn is_fragment(self) -> bool {
        matches!(self, Scope::WmmaMatrixA | Scope::WmmaMatrixB | Scope::WmmaAccumulator | Scope::Warp)
    }
}

#[derive(Clone)]
pub struct Buffer(Arc<BufferNode>);

/// Which buffer a buffer is, across the passes that reshape it: a new
/// buffer (`Buffer::new`, `Buffer::derive`) gets a fresh one, and a buffer
/// changed by `Buffer::with` (compacted, flattened, versioned, moved to
/// another scope) keeps its own. Passes key the facts they hand on by it
/// (`PassFacts`), never by name, which is only for printing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BufferId(u64);

fn fresh_id() -> BufferId {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    BufferId(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
}

#[derive(Debug, Clone)]
pub struct BufferNode {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<Expr>,
    pub scope: Scope,
    /// Stride padding requests, at most one per axis, sorted by axis.
    pub dim_align: Vec<DimAlign>,
    /// The swizzle pattern's width in bytes (32, 64 or 128), or 0.
    pub swizzle: i64,
    /// Kept by `Buffer::with`.
    id: BufferId,
}

/// The block annotation in which `sch.storage_align` records its requests
/// (`[[buffer_index, axis, factor, offset], ..]`, TVM's key), for
/// `lower_blocks` to move onto the buffer as `DimAlign`s.
pub const DIM_ALIGN_KEY: &str = "buffer_dim_align";

/// Pad the stride of dimension `axis` so that `stride % factor == offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DimAlign {
    pub axis: usize,
    pub factor: i64,
    pub offset: i64,
}

/// The swizzle widths `sch.storage_swizzle` takes (the three swizzled
/// layouts of `wgmma`'s shared-memory operands).
pub const SWIZZLES: [i64; 3] = [32, 64, 128];

/// The bytes a swizzled buffer is laid out in whole groups of: eight rows
/// of the pattern's width. Its memory starts at a multiple of 1024 bytes,
/// where the hardware's pattern starts.
pub fn swizzle_atom(bytes: i64) -> i64 {
    8 * bytes
}

/// Where element `idx` (of `elem` bytes) of a buffer swizzled by `bytes`
/// lives: bits 4.. of its byte address (the 16-byte chunk) exchanged by
/// XOR with bits 7.. (the 128-byte line), `log2(bytes / 16)` of each
/// (CUTLASS's `Swizzle<B, 4, 3>`). An involution: applying it twice gives
/// `idx` back.
pub fn swizzle_offset(idx: i64, elem: i64, bytes: i64) -> i64 {
    if bytes == 0 {
        return idx;
    }
    let a = idx * elem;
    let mask = bytes / 16 - 1;
    (a ^ (((a >> 7) & mask) << 4)) / elem
}

/// The stride `stride` padded up to the next value `s` with
/// `s % factor == offset` (`factor > 0`, `0 <= offset < factor`); `None` on
/// overflow.
pub fn align_stride(stride: i64, factor: i64, offset: i64) -> Option<i64> {
    let pad = (offset - stride.rem_euclid(factor)).rem_euclid(factor);
    stride.checked_add(pad)
}

impl Buffer {
    pub fn new(name: impl Into<String>, dtype: DType, shape: Vec<Expr>, scope: Scope) -> Buffer {
        Buffer(Arc::new(BufferNode {
            name: name.into(),
            dtype,
            shape,
            scope,
            dim_align: Vec::new(),
            swizzle: 0,
            id: fresh_id(),
        }))
    }

    /// This buffer with its fields changed by `f` (reshaped, moved to
    /// another scope, ...): a new object, the same `BufferId`.
    pub fn with(&self, f: impl FnOnce(&mut BufferNode)) -> Buffer {
        let mut node = (*self.0).clone();
        f(&mut node);
        Buffer(Arc::new(node))
    }

    /// Another buffer made from this one's fields, changed by `f` (a cache
    /// copy): a new `BufferId`.
    pub fn derive(&self, f: impl FnOnce(&mut BufferNode)) -> Buffer {
        let mut node = (*self.0).clone();
        f(&mut node);
        node.id = fresh_id();
        Buffer(Arc::new(node))
    }

    /// This buffer with the run-time sizes in its shape replaced by their
    /// values (the same `BufferId`); itself when its shape names none.
    pub fn specialize(&self, values: &[(crate::expr::Var, i64)]) -> Buffer {
        if !self.shape().iter().any(|e| values.iter().any(|(v, _)| e.uses(v))) {
            return self.clone();
        }
        let map: Vec<(crate::expr::Var, Expr)> =
            values.iter().map(|(v, x)| (v.clone(), Expr::Int(*x, v.dtype()))).collect();
        let shape: Vec<Expr> =
            self.shape().iter().map(|e| crate::expr::fold_constants(&crate::subst::substitute(e, &map))).collect();
        self.with(|n| n.shape = shape)
    }

    /// Which buffer this is, across reshaping (see [`BufferId`]).
    pub fn id(&self) -> BufferId {
        self.0.id
    }

    pub fn name(&self) -> &str {
        &self.0.name
    }

    pub fn dtype(&self) -> DType {
        self.0.dtype
    }

    pub fn shape(&self) -> &[Expr] {
        &self.0.shape
    }

    pub fn scope(&self) -> Scope {
        self.0.scope
    }

    pub fn ndim(&self) -> usize {
        self.0.shape.len()
    }

    /// The shape as integers, when every extent is a constant.
    pub fn const_shape(&self) -> Option<Vec<i64>> {
        self.0.shape.iter().map(|e| e.as_int()).collect()
    }

    /// The number of elements, when the shape is constant.
    pub fn num_elements(&self) -> Option<i64> {
        self.const_shape().map(|s| s.iter().product())
    }

    pub fn dim_align(&self) -> &[DimAlign] {
        &self.0.dim_align
    }

    /// The swizzle pattern's width in bytes, 0 for none.
    pub fn swizzle(&self) -> i64 {
        self.0.swizzle
    }

    /// The element stride of each dimension, padded as `dim_align` asks,
    /// when the shape is constant (and the strides fit in an i64).
    pub fn strides(&self) -> Option<Vec<i64>> {
        let shape = self.const_shape()?;
        let mut strides = vec![0; shape.len()];
        let mut stride: i64 = 1;
        for d in (0..shape.len()).rev() {
            if let Some(a) = self.0.dim_align.iter().find(|a| a.axis == d) {
                stride = align_stride(stride, a.factor, a.offset)?;
            }
            strides[d] = stride;
            stride = stride.checked_mul(shape[d])?;
        }
        Some(strides)
    }

    /// The elements the buffer's memory spans: its number of elements, or
    /// more when strides are padded (the outermost stride times the
    /// outermost extent).
    pub fn alloc_elements(&self) -> Option<i64> {
        if self.0.dim_align.is_empty() {
            return self.num_elements();
        }
        let shape = self.const_shape()?;
        let strides = self.strides()?;
        match shape.first() {
            Some(n) => strides[0].checked_mul(*n),
            None => Some(1),
        }
    }

    pub fn key(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }
}

impl PartialEq for Buffer {
    fn eq(&self, other: &Buffer) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Buffer {}

impl Hash for Buffer {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.key().hash(h)
    }
}

impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{:x}", self.name(), self.key() & 0xffff)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each swizzle is a permutation of every group of 8 lines of its
    /// width that keeps 16-byte chunks whole, its own inverse, and the
    /// 128-byte one is CUTLASS's `Swizzle<3, 4, 3>`: chunk `c` of row `r`
    /// (rows of 128 bytes) at chunk `c ^ (r % 8)`.
    #[test]
    fn swizzles_permute_chunks_within_atoms() {
        for bytes in SWIZZLES {
            for elem in [2i64, 4] {
                let n = swizzle_atom(bytes) / elem;
                let mut seen = std::collections::HashSet::new();
                for i in 0..n {
                    let s = swizzle_offset(i, elem, bytes);
                    assert!((0..n).contains(&s) && seen.insert(s));
                    assert_eq!(swizzle_offset(s, elem, bytes), i);
                    assert_eq!(s % (16 / elem), i % (16 / elem), "a 16-byte chunk stays whole");
                }
            }
        }
        for r in 0..8 {
            for c in 0..8 {
                assert_eq!(swizzle_offset(r * 64 + c * 8, 2, 128), r * 64 + (c ^ r) * 8);
            }
        }
    }
}
