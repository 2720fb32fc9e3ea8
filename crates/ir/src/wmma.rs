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
//!
//! The `mma.sync` family (TVM's `mma_*` intrinsics) works on *warp* tiles
//! instead: a buffer of scope `warp` whose last two dimensions are the 32
//! lanes of a warp and the 8 elements each lane holds, a 16×16 tile spread
//! as the PTX ISA lays out the fragments of `mma.sync.m16n8k16`. TVM names
//! the layout by the index map `shared_16x16_to_ldmatrix_32x8_layout`:
//! element `(i, j)` of the tile is `[4 * (i % 8) + (j % 8) // 2,
//! 4 * (j // 8) + 2 * (i // 8) + j % 2]` (for the A operand and the
//! accumulator that is where the hardware keeps it; for B, the registers
//! `ldmatrix` fills and `mma.sync` reads, whatever they hold, stand for it).
//!
//! | op | tiles | computes |
//! |---|---|---|
//! | `LdMatrix` | `[warp, src]` | `warp[map(i, j)] = src[i, j]` (`ldmatrix.x4`) |
//! | `MmaSync` | `[c, a, b]` | `c[map(i, j)] += sum_k a[map(i, k)] * b[map(k, j)]` (two `m16n8k16`; `trans_a`: `a[map(k, i)]`, `trans_b`: `b[map(j, k)]`) |
//! | `MmaFill` | `[c]` | `c[l, e] = value` |
//! | `MmaStore` | `[dst, c]` | `dst[i, j] = c[map(i, j)]` (with `bound = (r, c)`: for `i < r`, `j < c`) |
//!
//! `LdMatrix` names the operand (`b`) and whether its tile is stored
//! transposed (`trans`: A as `k × m`, B as `n × k`); the instruction's
//! `.trans` and the rows each lane points at follow from the two.
//!
//! Hopper's `wgmma.mma_async` is issued by a *warpgroup*, four
//! consecutive warps, on operands in shared memory. tirc writes it per
//! warp, as the accumulators are held:
//!
//! | op | tiles | computes |
//! |---|---|---|
//! | `Wgmma { n, trans_b }` | `[c_0 .. c_{n/16-1}, a, b_0 .. b_{n/16-1}]` | `c_j[map(i, jj)] += sum_k a[i, k] * b_j[k, jj]` (`trans_b`: `b_j[jj, k]`) |
//!
//! for each warp: its 16 rows of A (a shared 16×16 tile, stored `m × k`)
//! times the n columns of B (n/16 shared tiles of 16 columns, B stored
//! `n × k` with `trans_b`, else `k × n`), into n/16 warp tiles of its
//! accumulators, which
//! hold exactly the registers the instruction's `m64nNk16` accumulator
//! fragment gives the warp. The four warps of a group name the four
//! consecutive 16-row tiles of one 64-row tile of A and the same tiles
//! of B (the simulator checks it; the CUDA code issues one instruction
//! for the four, its descriptors built from the first warp's tiles). Both
//! operands must be in swizzled shared buffers whose rows are exactly one
//! line of the swizzle (`sch.storage_swizzle`; 128 bytes: 64 halves): A
//! and a B stored `n × k` K-major, a B stored `k × n` in atoms of one
//! line of n (`transform_layout` `lambda k, n: (n // 64, k, n % 64)`),
//! its 16-column tiles consecutive within an atom and the atoms one stride
//! apart (the descriptor's leading byte offset).
//!
//! float32 operands are multiplied as tf32 (`mma.sync.m16n8k8.tf32`, four
//! to a 16×16×16 tile, each operand rounded to 10 bits of mantissa, to
//! nearest, ties away from zero, as `cvt.rna.tf32.f32` does); their warp
//! tiles keep the same `[32, 8]` shape and map, a lane's 8 elements being
//! its registers of both 8-wide halves of k. The accumulator's layout is
//! that of `m16n8k16`.

use crate::buffer::{Buffer, Scope};
use crate::expr::Expr;

/// The tile size of every operation: m = n = k = 16.
pub const TILE: i64 = 16;

/// A warp's lanes, and the elements of a 16×16 tile each lane holds in a
/// `warp` buffer.
pub const LANES: i64 = 32;
pub const PER_LANE: i64 = 8;

/// Where element `(i, j)` of a 16×16 tile lives in a `[32, 8]` warp tile
/// (TVM's `shared_16x16_to_ldmatrix_32x8_layout`): `(lane, element)`.
pub fn warp_layout(i: i64, j: i64) -> (i64, i64) {
    (4 * (i % 8) + (j % 8) / 2, 4 * (j / 8) + 2 * (i / 8) + j % 2)
}

/// `warp_layout` as index expressions of `i` and `j`: what TVM's
/// `shared_16x16_to_ldmatrix_32x8_layout(i, j)` gives in an index map.
pub fn warp_layout_exprs(i: Expr, j: Expr) -> (Expr, Expr) {
    use crate::BinOp;
    let f = |op, a: Expr, b: i64| Expr::folded(op, a, Expr::int(b));
    let lane =
        f(BinOp::Mul, f(BinOp::FloorMod, i.clone(), 8), 4) + f(BinOp::FloorDiv, f(BinOp::FloorMod, j.clone(), 8), 2);
    let elem = f(BinOp::Mul, f(BinOp::FloorDiv, j.clone(), 8), 4)
        + f(BinOp::Mul, f(BinOp::FloorDiv, i, 8), 2)
        + f(BinOp::FloorMod, j, 2);
    (lane, elem)
}

/// The inverse of `warp_layout`: the `(row, column)` of the tile that
/// element `e` of lane `l` holds.
pub fn warp_layout_inverse(l: i64, e: i64) -> (i64, i64) {
    (8 * ((e % 4) / 2) + l / 4, 8 * (e / 4) + 2 * (l % 4) + e % 2)
}

#[derive(Clone, Debug, PartialEq)]
pub enum WmmaOp {
    Fill,
    Load {
        col_major: bool,
    },
    Mma {
        b_trans: bool,
    },
    Store,
    /// `ldmatrix` of a shared 16×16 tile into a warp tile: the A or the B
    /// operand, stored as the product reads it or transposed.
    LdMatrix {
        b: bool,
        trans: bool,
    },
    /// The product, its operands' warp tiles holding them as stored
    /// (`trans_a`: A as `k × m`; `trans_b`: B as `n × k`). The
    /// instruction is the same; the flags say which element of the
    /// operand each warp-tile element is.
    MmaSync {
        trans_a: bool,
        trans_b: bool,
    },
    MmaFill,
    MmaStore,
    /// `wgmma.mma_async.m64nNk16` for one warp's 16 rows: `n` columns.
    Wgmma {
        n: i64,
        trans_b: bool,
    },
}

impl WmmaOp {
    /// The name it prints with (`T.<name>(...)`).
    pub fn name(&self) -> &'static str {
        match self {
            WmmaOp::Fill => "wmma_fill_fragment",
            WmmaOp::Load { .. } => "wmma_load_matrix_sync",
            WmmaOp::Mma { .. } => "wmma_mma_sync",
            WmmaOp::Store => "wmma_store_matrix_sync",
            WmmaOp::LdMatrix { .. } => "mma_ldmatrix",
            WmmaOp::MmaSync { .. } => "mma_sync",
            WmmaOp::MmaFill => "mma_fill",
            WmmaOp::MmaStore => "mma_store",
            WmmaOp::Wgmma { .. } => "wgmma",
        }
    }

    pub fn from_name(n: &str) -> Option<WmmaOp> {
        Some(match n {
            "wmma_fill_fragment" => WmmaOp::Fill,
            "wmma_load_matrix_sync" => WmmaOp::Load { col_major: false },
            "wmma_mma_sync" => WmmaOp::Mma { b_trans: false },
            "wmma_store_matrix_sync" => WmmaOp::Store,
            "mma_ldmatrix" => WmmaOp::LdMatrix { b: false, trans: false },
            "mma_sync" => WmmaOp::MmaSync { trans_a: false, trans_b: false },
            "mma_fill" => WmmaOp::MmaFill,
            "mma_store" => WmmaOp::MmaStore,
            // Its width is the printed form's first argument.
            "wgmma" => WmmaOp::Wgmma { n: 0, trans_b: false },
            _ => return None,
        })
    }

    /// How many tiles it takes.
    pub fn arity(&self) -> usize {
        match self {
            WmmaOp::Fill | WmmaOp::MmaFill => 1,
            WmmaOp::Load { .. } | WmmaOp::Store | WmmaOp::LdMatrix { .. } | WmmaOp::MmaStore => 2,
            WmmaOp::Mma { .. } | WmmaOp::MmaSync { .. } => 3,
            WmmaOp::Wgmma { n, .. } => 2 * (n / TILE).max(0) as usize + 1,
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
            WmmaOp::LdMatrix { .. } => vec![Some(Scope::Warp), None],
            WmmaOp::MmaSync { .. } => vec![Some(Scope::Warp); 3],
            WmmaOp::MmaFill => vec![Some(Scope::Warp)],
            WmmaOp::MmaStore => vec![None, Some(Scope::Warp)],
            WmmaOp::Wgmma { n, .. } => {
                let t = (n / TILE).max(0) as usize;
                let mut v = vec![Some(Scope::Warp); t];
                v.extend(std::iter::repeat_n(None, t + 1));
                v
            }
        }
    }

    /// Whether it works on warp tiles (the `mma.sync` family, and
    /// `wgmma`, whose accumulators are warp tiles too).
    pub fn is_mma(&self) -> bool {
        matches!(
            self,
            WmmaOp::LdMatrix { .. }
                | WmmaOp::MmaSync { .. }
                | WmmaOp::MmaFill
                | WmmaOp::MmaStore
                | WmmaOp::Wgmma { .. }
        )
    }

    /// Whether the operation reads a tile of `dtype` elements from a
    /// buffer swizzled by `storage_swizzle`: `wgmma` through its
    /// descriptors, `ldmatrix` of 16-bit elements through each lane's
    /// address (a row of 16 bytes is one chunk of the swizzle).
    pub fn reads_swizzled(&self, dtype: crate::DType) -> bool {
        match self {
            WmmaOp::Wgmma { .. } => true,
            WmmaOp::LdMatrix { .. } => dtype.bytes() == 2,
            _ => false,
        }
    }

    /// The number of accumulator tiles of a `Wgmma` (its first tiles), 0
    /// for the others.
    pub fn wgmma_tiles(&self) -> usize {
        match self {
            WmmaOp::Wgmma { n, .. } => (n / TILE).max(0) as usize,
            _ => 0,
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

    /// The rows and columns it covers from its first element: 32 lanes of
    /// 8 elements for a warp tile, else 16×16.
    pub fn extent(&self) -> (i64, i64) {
        if self.buffer.scope() == Scope::Warp {
            (LANES, PER_LANE)
        } else {
            (TILE, TILE)
        }
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
    /// For `MmaStore`: the rows and columns of the tile that are stored,
    /// from its first element (a tile at the edge of its destination,
    /// whose other elements lie past the buffer); `None` stores all 16×16.
    /// Either may be 16 or more (all of them) or 0 or less (none).
    pub bound: Option<(Expr, Expr)>,
}

impl Wmma {
    /// Whether it multiplies float32 operands as tf32 (10 bits of
    /// mantissa): the result is that precise, not float32's.
    pub fn is_tf32(&self) -> bool {
        let a = match self.op {
            WmmaOp::MmaSync { .. } => self.tiles.get(1),
            WmmaOp::Wgmma { .. } => self.tiles.get(self.op.wgmma_tiles()),
            _ => None,
        };
        a.is_some_and(|a| a.buffer.dtype() == crate::DType::F32)
    }

    /// For a `Wgmma` of flat tiles: `Err` where an operand's shared tile
    /// is not what the instruction's descriptor reads, K-major rows of one
    /// swizzle line in a swizzled buffer (checked when lowering and again
    /// by codegen, which builds the descriptors).
    pub fn wgmma_operand_layout(&self) -> Result<(), String> {
        let t = self.op.wgmma_tiles();
        if t == 0 {
            return Ok(());
        }
        for (x, what) in [(&self.tiles[t], "A"), (&self.tiles[t + 1], "B")] {
            let bytes = x.buffer.dtype().bytes() as i64;
            let row = x.ldm.as_ref().and_then(|l| l.as_int()).map(|l| l * bytes);
            let line = x.buffer.swizzle();
            if line == 0 || row != Some(line) {
                return Err(format!(
                    "wgmma reads its {what} operand `{}` through a descriptor of K-major rows of one swizzle line, \
                     but the tile's rows are {} bytes and the buffer is {}",
                    x.buffer.name(),
                    row.map_or("?".into(), |r| r.to_string()),
                    if line == 0 { "not swizzled".to_string() } else { format!("swizzled by {line} bytes") }
                ));
            }
        }
        Ok(())
    }

    /// The tiles it reads.
    pub fn reads(&self) -> &[Tile] {
        match self.op {
            WmmaOp::Fill | WmmaOp::MmaFill => &[],
            WmmaOp::Load { .. } | WmmaOp::Store | WmmaOp::LdMatrix { .. } | WmmaOp::MmaStore => &self.tiles[1..],
            WmmaOp::Mma { .. } | WmmaOp::MmaSync { .. } | WmmaOp::Wgmma { .. } => &self.tiles[..],
        }
    }

    /// The tile it writes (the first, for a `Wgmma`: its accumulator
    /// tiles are all of one buffer).
    pub fn write(&self) -> &Tile {
        &self.tiles[0]
    }

    /// Whether the operation is well formed: its tiles' scopes and types
    /// (`Err` says what is wrong). Operands are float16 (bfloat16 and
    /// float32 as tf32 for the `mma.sync` family), the accumulator float32
    /// or float16.
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
        // float32 operands of mma.sync are multiplied as tf32.
        let mma_operand = |t: &DType| matches!(t, DType::Float(16) | DType::BFloat16 | DType::Float(32));
        let acc = |t: &DType| matches!(t, DType::Float(32) | DType::Float(16));
        // A warp tile is `[.., 32, 8]` until flattened.
        for t in &self.tiles {
            if scope_of(t) == Scope::Warp && t.ldm.is_none() {
                let shape = t.buffer.const_shape().unwrap_or_default();
                if shape.len() < 2 || shape[shape.len() - 2..] != [LANES, PER_LANE] {
                    return Err(format!(
                        "the warp buffer `{}` must end in the dimensions [32, 8] (the lanes and each lane's elements)",
                        name(t)
                    ));
                }
            }
        }
        match self.op {
            WmmaOp::Fill | WmmaOp::MmaFill => {
                if !acc(&self.tiles[0].buffer.dtype()) {
                    return Err(format!(
                        "the accumulator `{}` is {}, not float32 or float16",
                        name(&self.tiles[0]),
                        self.tiles[0].buffer.dtype()
                    ));
                }
            }
            WmmaOp::LdMatrix { .. } => {
                let (f, m) = (&self.tiles[0], &self.tiles[1]);
                if scope_of(m) != Scope::Shared {
                    return Err(format!("ldmatrix reads shared memory, not `{}` in {}", name(m), scope_of(m).name()));
                }
                if f.buffer.dtype() != m.buffer.dtype() || !mma_operand(&f.buffer.dtype()) {
                    return Err(format!(
                        "ldmatrix copies float16, bfloat16 or float32 (for tf32) as it is: `{}` is {}, `{}` {}",
                        name(m),
                        m.buffer.dtype(),
                        name(f),
                        f.buffer.dtype()
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
            WmmaOp::MmaSync { .. } => {
                let (c, a, b) = (&self.tiles[0], &self.tiles[1], &self.tiles[2]);
                let ok = a.buffer.dtype() == b.buffer.dtype()
                    && match a.buffer.dtype() {
                        DType::Float(16) => acc(&c.buffer.dtype()),
                        DType::BFloat16 | DType::Float(32) => c.buffer.dtype() == DType::F32,
                        _ => false,
                    };
                if !ok {
                    return Err(format!(
                        "mma.sync takes float16 operands with a float32 or float16 accumulator, or bfloat16 or float32 (tf32) operands with a float32 one: `{}` is {}, `{}` {}, `{}` {}",
                        name(a), a.buffer.dtype(), name(b), b.buffer.dtype(), name(c), c.buffer.dtype()
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
            WmmaOp::Wgmma { n, .. } => {
                let t = self.op.wgmma_tiles();
                if !(16..=256).contains(&n) || n % TILE != 0 {
                    return Err(format!("wgmma takes 16 to 256 columns, a multiple of 16, not {n}"));
                }
                let (a, b) = (&self.tiles[t], &self.tiles[t + 1]);
                for x in [a, b] {
                    if scope_of(x) != Scope::Shared {
                        return Err(format!(
                            "wgmma reads its operands from shared memory, not `{}` in {}",
                            name(x),
                            scope_of(x).name()
                        ));
                    }
                }
                // float32 operands are multiplied as tf32, which wgmma
                // reads K-major only (B stored n × k).
                let ok = a.buffer.dtype() == b.buffer.dtype()
                    && (matches!(a.buffer.dtype(), DType::Float(16) | DType::BFloat16)
                        || a.buffer.dtype() == DType::F32 && self.op == (WmmaOp::Wgmma { n, trans_b: true }))
                    && self.tiles[..t].iter().all(|c| c.buffer.dtype() == DType::F32);
                if !ok {
                    return Err(format!(
                        "wgmma takes float16 or bfloat16 operands, or float32 (tf32) ones with B stored n × k, and a float32 accumulator: `{}` is {}, `{}` {}, `{}` {}",
                        name(a), a.buffer.dtype(), name(b), b.buffer.dtype(), name(&self.tiles[0]), self.tiles[0].buffer.dtype()
                    ));
                }
                if self.tiles[..t].iter().any(|c| c.buffer != self.tiles[0].buffer)
                    || self.tiles[t + 1..].iter().any(|x| x.buffer != b.buffer)
                {
                    return Err("wgmma's accumulator tiles must be of one buffer, and its B tiles of one".into());
                }
            }
            WmmaOp::Store | WmmaOp::MmaStore => {
                let (d, f) = (&self.tiles[0], &self.tiles[1]);
                if self.bound.is_some() && self.op != WmmaOp::MmaStore {
                    return Err(format!("only mma_store stores part of a tile, not {}", self.op.name()));
                }
                if let Some((r, c)) = &self.bound {
                    if !matches!(r.dtype(), DType::Int(_)) || !matches!(c.dtype(), DType::Int(_)) {
                        return Err(format!(
                            "a store's bound counts rows and columns: integers, not {} and {}",
                            r.dtype(),
                            c.dtype()
                        ));
                    }
                }
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
        self.tiles
            .iter()
            .flat_map(|t| t.indices.iter().chain(t.ldm.iter()))
            .chain(self.value.iter())
            .chain(self.bound.iter().flat_map(|(r, c)| [r, c]))
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
            bound: self.bound.as_ref().map(|(r, c)| (f(r), f(c))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The numeric layout, its expressions and its inverse agree on every
    /// element of a tile, and the layout is a bijection onto [32, 8].
    #[test]
    fn the_warp_layout_is_one_map() {
        let mut seen = std::collections::HashSet::new();
        for i in 0..TILE {
            for j in 0..TILE {
                let (l, e) = warp_layout(i, j);
                let (le, ee) = warp_layout_exprs(Expr::int(i), Expr::int(j));
                assert_eq!((le.as_int(), ee.as_int()), (Some(l), Some(e)));
                assert_eq!(warp_layout_inverse(l, e), (i, j));
                assert!((0..LANES).contains(&l) && (0..PER_LANE).contains(&e) && seen.insert((l, e)));
            }
        }
    }
}
