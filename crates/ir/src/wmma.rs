//! Warp-wide tensor-core operations on 16×16 tiles (CUDA's `wmma` API),
//! the statements `sch.tensorize` leaves in place of a blockized tile.
//!
//! Each operation is executed by the 32 threads of a warp together, on
//! tiles of 16×16 elements: a *fragment* tile lives in a buffer of scope
//! `wmma.matrix_a`, `wmma.matrix_b` or `wmma.accumulator` (one copy per
//! warp, spread over the warp's registers in a layout the hardware
//! chooses), a *memory* tile in shared or global memory, row-major, rows
//! `ldm` elements apart.
//!
//! A tile is named by its buffer and the indices of its first element; its
//! other elements are the 16×16 box from there along the last two
//! dimensions. Once buffers are flat (`flatten_buffers`), the index is one
//! element offset and `ldm`, the distance between rows, is explicit.
//!
//! | op | tiles | computes |
//! |---|---|---|
//! | `Fill` | `[c]` | `c[i, j] = value` |
//! | `Load` | `[frag, src]` | `frag[i, j] = src[i, j]` |
//! | `Mma` | `[c, a, b]` | `c[i, j] += sum_k a[i, k] * b[k, j]` (`b_trans`: `b[j, k]`) |
//!
//! A fragment buffer holds its tile as the memory it was loaded from lays
//! it out: a B operand stored `n × k` (`C = A @ B^T`, the layout of a
//! linear layer's weight) is loaded `col_major` into a `wmma.matrix_b`
//! buffer of that shape, and multiplied by an `Mma` with `b_trans`.
//! | `Store` | `[dst, frag]` | `dst[i, j] = frag[i, j]` |

use crate::buffer::{Buffer, Scope};
use crate::expr::Expr;

/// The tile size of every operation: m = n = k = 16.
pub const TILE: i64 = 16;

#[derive(Clone, Debug, PartialEq)]
pub enum WmmaOp {
    Fill,
    Load { col_major: bool },
    Mma { b_trans: bool },
    Store,
}

impl WmmaOp {
    /// The name it prints with (`T.<name>(...)`).
    pub fn name(&self) -> &'static str {
        match self {
            WmmaOp::Fill => "wmma_fill_fragment",
            WmmaOp::Load { .. } => "wmma_load_matrix_sync",
            WmmaOp::Mma { .. } => "wmma_mma_sync",
            WmmaOp::Store => "wmma_store_matrix_sync",
        }
    }

    pub fn from_name(n: &str) -> Option<WmmaOp> {
        Some(match n {
            "wmma_fill_fragment" => WmmaOp::Fill,
            "wmma_load_matrix_sync" => WmmaOp::Load { col_major: false },
            "wmma_mma_sync" => WmmaOp::Mma { b_trans: false },
            "wmma_store_matrix_sync" => WmmaOp::Store,
            _ => return None,
        })
    }

    /// How many tiles it takes.
    pub fn arity(&self) -> usize {
        match self {
            WmmaOp::Fill => 1,
            WmmaOp::Load { .. } | WmmaOp::Store => 2,
            WmmaOp::Mma { .. } => 3,
        }
    }

    /// The scope each tile must have: fragment scopes, or `None` for a
    /// tile in shared or global memory.
    pub fn scopes(&self) -> Vec<Option<Scope>> {
        match self {
            WmmaOp::Fill => vec![Some(Scope::WmmaAccumulator)],
            // The fragment is matrix_a or matrix_b: checked apart.
            WmmaOp::Load { .. } => vec![None, None],
            WmmaOp::Mma { .. } => {
                vec![Some(Scope::WmmaAccumulator), Some(Scope::WmmaMatrixA), Some(Scope::WmmaMatrixB)]
            }
            WmmaOp::Store => vec![None, Some(Scope::WmmaAccumulator)],
        }
    }
}

/// A 16×16 tile: the buffer, the indices of its first element and, once
/// flat, the distance between its rows.
#[derive(Clone, Debug)]
pub struct Tile {
    pub buffer: Buffer,
    pub indices: Vec<Expr>,
    pub ldm: Option<Expr>,
}

impl Tile {
    /// The distance between rows: `ldm` once flat, else the buffer's last
    /// dimension.
    pub fn row_stride(&self) -> Option<Expr> {
        self.ldm.clone().or_else(|| self.buffer.shape().last().cloned())
    }
}

/// One warp-wide operation: `tiles[0]` is written, the others read (and
/// `tiles[0]` too, for `Mma`).
#[derive(Clone, Debug)]
pub struct Wmma {
    pub op: WmmaOp,
    pub tiles: Vec<Tile>,
    /// What `Fill` writes.
    pub value: Option<Expr>,
}

impl Wmma {
    /// The tiles it reads.
    pub fn reads(&self) -> &[Tile] {
        match self.op {
            WmmaOp::Fill => &[],
            WmmaOp::Load { .. } | WmmaOp::Store => &self.tiles[1..],
            WmmaOp::Mma { .. } => &self.tiles[..],
        }
    }

    /// The tile it writes.
    pub fn write(&self) -> &Tile {
        &self.tiles[0]
    }

    /// Whether the operation is well formed: its tiles' scopes and types
    /// (`Err` says what is wrong). Operands are float16, the
    /// accumulator float32 or float16.
    pub fn check(&self) -> Result<(), String> {
        use crate::DType;
        if self.tiles.len() != self.op.arity() {
            return Err(format!("{} takes {} tiles, not {}", self.op.name(), self.op.arity(), self.tiles.len()));
        }
        let name = |t: &Tile| t.buffer.name().to_string();
        let scope_of = |t: &Tile| t.buffer.scope();
        for (t, want) in self.tiles.iter().zip(self.op.scopes()) {
            match want {
                Some(s) if scope_of(t) != s => {
                    return Err(format!(
                        "{}'s tile `{}` is in {}, not {}",
                        self.op.name(),
                        name(t),
                        scope_of(t).name(),
                        s.name()
                    ))
                }
                None if scope_of(t).is_fragment() && !matches!(self.op, WmmaOp::Load { .. }) => {
                    return Err(format!("{}'s tile `{}` must be in shared or global memory", self.op.name(), name(t)))
                }
                _ => {}
            }
        }
        let operand = |t: &DType| matches!(t, DType::Float(16));
        let acc = |t: &DType| matches!(t, DType::Float(32) | DType::Float(16));
        match self.op {
            WmmaOp::Fill => {
                if !acc(&self.tiles[0].buffer.dtype()) {
                    return Err(format!(
                        "the accumulator `{}` is {}, not float32 or float16",
                        name(&self.tiles[0]),
                        self.tiles[0].buffer.dtype()
                    ));
                }
            }
            WmmaOp::Load { .. } => {
                let (f, m) = (&self.tiles[0], &self.tiles[1]);
                if !matches!(scope_of(f), Scope::WmmaMatrixA | Scope::WmmaMatrixB) {
                    return Err(format!(
                        "a load fills a wmma.matrix_a or wmma.matrix_b fragment, not `{}` in {}",
                        name(f),
                        scope_of(f).name()
                    ));
                }
                if scope_of(m).is_fragment() {
                    return Err(format!("a load reads shared or global memory, not the fragment `{}`", name(m)));
                }
                if f.buffer.dtype() != m.buffer.dtype() || !operand(&f.buffer.dtype()) {
                    return Err(format!(
                        "a load copies float16 as it is: `{}` is {}, `{}` {}",
                        name(m),
                        m.buffer.dtype(),
                        name(f),
                        f.buffer.dtype()
                    ));
                }
            }
            WmmaOp::Mma { .. } => {
                let (c, a, b) = (&self.tiles[0], &self.tiles[1], &self.tiles[2]);
                if a.buffer.dtype() != b.buffer.dtype() || !operand(&a.buffer.dtype()) || !acc(&c.buffer.dtype()) {
                    return Err(format!(
                        "a tensor-core product takes float16 operands and a float32 or float16 accumulator: `{}` is {}, `{}` {}, `{}` {}",
                        name(a), a.buffer.dtype(), name(b), b.buffer.dtype(), name(c), c.buffer.dtype()
                    ));
                }
            }
            WmmaOp::Store => {
                let (d, f) = (&self.tiles[0], &self.tiles[1]);
                if d.buffer.dtype() != f.buffer.dtype() {
                    return Err(format!(
                        "a store copies as it is: `{}` is {}, `{}` {}",
                        name(f),
                        f.buffer.dtype(),
                        name(d),
                        d.buffer.dtype()
                    ));
                }
            }
        }
        Ok(())
    }

    pub fn exprs(&self) -> impl Iterator<Item = &Expr> {
        self.tiles.iter().flat_map(|t| t.indices.iter().chain(t.ldm.iter())).chain(self.value.iter())
    }

    pub fn map_exprs(&self, f: &mut impl FnMut(&Expr) -> Expr) -> Wmma {
        Wmma {
            op: self.op.clone(),
            tiles: self
                .tiles
                .iter()
                .map(|t| Tile {
                    buffer: t.buffer.clone(),
                    indices: t.indices.iter().map(&mut *f).collect(),
                    ldm: t.ldm.as_ref().map(&mut *f),
                })
                .collect(),
            value: self.value.as_ref().map(&mut *f),
        }
    }
}
