//! `tensorize(block_or_loop, tensor_intrin)`: a 16×16 tile of work replaced
//! by one warp-wide tensor-core operation, TVM's primitive of that name
//! with TVM 0.27's registered `wmma_*` intrinsics.
//!
//! Given a loop, the loop is blockized first (`blockize`); given a block,
//! the block must be such an outer block already. Under it, the loops and
//! the one inner block must compute what the intrinsic describes, on tiles
//! whose last two indices are `origin + v` for the inner block's variables
//! `v` (each over 0..16, bound to the loops in order). Each intrinsic:
//!
//! | name | inner block | becomes |
//! |---|---|---|
//! | `wmma_fill_16x16x16_f32`, `_f16` | `C[i, j] = c` | fill of the accumulator tile |
//! | `wmma_load_16x16x16_f16_a_shared` (`_dyn`) | `A_frag[i, j] = A_s[i, j]` | load into a `wmma.matrix_a` tile |
//! | `wmma_load_16x16x16_f16_b_shared` (`_dyn`) | `B_frag[i, j] = B_s[i, j]` | load into a `wmma.matrix_b` tile |
//! | `wmma_load_16x16x16_f16_b_trans_shared` (`_dyn`) | `B_frag[j, k] = B_s[j, k]` | column-major load of a B stored `n × k` |
//! | `wmma_sync_16x16x16_f16f16f32` | `C[i, j] = C[i, j] + f32(A[i, k]) * f32(B[k, j])` | `mma_sync` |
//! | `wmma_sync_16x16x16_f16f16f16` | the same in float16, no casts | `mma_sync` |
//! | `wmma_sync_16x16x16_f16f16f32_trans` (`f16f16f16`) | `… + f32(A[i, k]) * f32(B[j, k])` | `mma_sync`, B transposed |
//! | `wmma_store_16x16x16_f32_global`, `_shared` (`_f16_`) | `D[i, j] = C_acc[i, j]` | store of the accumulator tile |
//! | `mma_ldmatrix_f16_a`, `_b` (`_trans`, `_dyn`; `bf16` for bfloat16) | `W[.., map(i, j)] = S[i, j]` | `ldmatrix.x4` into a warp tile |
//! | `mma_f16f16f32`, `mma_f16f16f16`, `mma_bf16bf16f32` (`_trans_a`, `_trans_b`) | `C[map(i, j)] += A[map(i, k)] * B[map(k, j)]` on warp tiles | two `mma.sync.m16n8k16` |
//! | `mma_fill_16x16_f32`, `_f16` | `C[.., map(i, j)] = c` | fill of a warp accumulator tile |
//! | `mma_store_16x16_f32_global_` (`_f16_`, `_shared_dyn_`, `_simple_`) | `D[i, j] = C[.., map(i, j)]` | store of a warp accumulator tile |
//!
//! | `mma_ldmatrix_tf32_a`, `_b` (`_trans`, `_dyn`) | the same on float32 | `ldmatrix.x4` twice (a B stored `k × n`, an A stored `k × m`: eight 4-byte loads a lane), each element rounded to tf32 |
//! | `mma_tf32tf32f32` (`_trans_a`, `_trans_b`) | `C[map(i, j)] += A[map(i, k)] * B[map(k, j)]`, all float32 | four `mma.sync.m16n8k8.tf32` |
//!
//! `map` is TVM's `shared_16x16_to_ldmatrix_32x8_layout` (`tirc_ir::wmma`):
//! a warp buffer must have been `transform_layout`ed to `[.., 32, 8]`
//! tiles first, and its accesses are checked element by element against
//! the map (each of the 256). `_trans` (an operand stored transposed) swaps
//! the operand's indices: `A[map(k, i)]`, `B[map(j, k)]`. TVM 0.27
//! registers no bfloat16 or tf32 intrinsics; the `bf16` and `tf32` names
//! are those its name builder (`get_mma_intrin_group`) would give them.
//! A tf32 product is written as the float32 product it approximates: a
//! float32 block tensorized with the `tf32` intrinsics computes with 10
//! bits of mantissa in each operand.
//!
//! The outer block keeps its variables and regions; its body becomes the
//! operation (`tirc_ir::wmma`), the tiles named by their first elements.
//!
//! Preconditions, checked in this order:
//! 1. The intrinsic is one of the above.
//! 2. The block (or the block blockize makes) holds a nest of 16×16 (×16
//!    for sync) loops and one inner block, with no init (decompose the
//!    reduction first) and no predicate (a tile must be whole).
//! 3. The inner block computes what the intrinsic describes: its store,
//!    operand buffers' scopes and types.
//! 4. Each tile's origin is a multiple of 16 in its last two dimensions
//!    (tensor cores need 32-byte aligned tiles).

use super::loop_kind::Target;
use super::{BlockRV, Result, Schedule, ScheduleError};
use crate::arith::Analyzer;
use crate::common::tree::get_loop;
use tirc_ir::subst::substitute;
use tirc_ir::wmma::TILE;
use tirc_ir::{BinOp, Buffer, DType, Expr, IterKind, Scope, Stmt, Tile, Var, Wmma, WmmaOp};

/// What an intrinsic matches and becomes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Fill(DType),
    LoadA,
    LoadB,
    /// B stored `n × k`, loaded column-major for a product with B
    /// transposed.
    LoadBTrans,
    Sync {
        acc: DType,
        b_trans: bool,
    },
    Store {
        acc: DType,
        to: Scope,
    },
    /// `mma_ldmatrix_f16_{a,b}[_trans]`: a shared tile into a warp tile.
    MmaLoad {
        input: DType,
        b: bool,
        trans: bool,
    },
    /// `mma_f16f16{f32,f16}[_trans_a][_trans_b]`.
    MmaSync {
        input: DType,
        acc: DType,
        trans_a: bool,
        trans_b: bool,
    },
    MmaFill(DType),
    MmaStore {
        acc: DType,
        to: Scope,
    },
    /// `wgmma_m64n{n}k16_{f16f16f32,bf16bf16f32}[_trans_b]`: one warp's
    /// 16 rows of a warpgroup's product, n columns; B stored `n × k`
    /// (`trans_b`) or `k × n`.
    Wgmma {
        input: DType,
        n: i64,
        trans_b: bool,
    },
}

/// A `wgmma_*` intrinsic's name: `wgmma_m64n{n}k16_{t}{t}f32[_trans_b]`,
/// t `f16` or `bf16` (or `tf32`, float32 operands multiplied as tf32, with
/// `_trans_b` only: two `m64nNk8`), n a multiple of 16 up to 256 (tirc's names: TVM 0.27
/// registers no wgmma intrinsic).
fn wgmma_kind(name: &str) -> Option<Kind> {
    let rest = name.strip_prefix("wgmma_m64n")?;
    let (n, rest) = rest.split_once("k16_")?;
    let n: i64 = n.parse().ok()?;
    let (rest, trans_b) = match rest.strip_suffix("_trans_b") {
        Some(r) => (r, true),
        None => (rest, false),
    };
    let input = match rest {
        "f16f16f32" => DType::F16,
        "bf16bf16f32" => DType::BFloat16,
        "tf32tf32f32" if trans_b => DType::F32,
        _ => return None,
    };
    ((16..=256).contains(&n) && n % TILE == 0).then_some(Kind::Wgmma { input, n, trans_b })
}

/// TVM's registered name, and what it is.
const INTRINSICS: &[(&str, Kind)] = &[
    ("wmma_fill_16x16x16_f32", Kind::Fill(DType::F32)),
    ("wmma_fill_16x16x16_f16", Kind::Fill(DType::F16)),
    ("wmma_load_16x16x16_f16_a_shared", Kind::LoadA),
    ("wmma_load_16x16x16_f16_a_shared_dyn", Kind::LoadA),
    ("wmma_load_16x16x16_f16_b_shared", Kind::LoadB),
    ("wmma_load_16x16x16_f16_b_shared_dyn", Kind::LoadB),
    ("wmma_load_16x16x16_f16_b_trans_shared", Kind::LoadBTrans),
    ("wmma_load_16x16x16_f16_b_trans_shared_dyn", Kind::LoadBTrans),
    ("wmma_sync_16x16x16_f16f16f32", Kind::Sync { acc: DType::F32, b_trans: false }),
    ("wmma_sync_16x16x16_f16f16f16", Kind::Sync { acc: DType::F16, b_trans: false }),
    ("wmma_sync_16x16x16_f16f16f32_trans", Kind::Sync { acc: DType::F32, b_trans: true }),
    ("wmma_sync_16x16x16_f16f16f16_trans", Kind::Sync { acc: DType::F16, b_trans: true }),
    ("wmma_store_16x16x16_f32_global", Kind::Store { acc: DType::F32, to: Scope::Global }),
    ("wmma_store_16x16x16_f32_shared", Kind::Store { acc: DType::F32, to: Scope::Shared }),
    ("wmma_store_16x16x16_f32_shared_dyn", Kind::Store { acc: DType::F32, to: Scope::Shared }),
    ("wmma_store_16x16x16_f16_global", Kind::Store { acc: DType::F16, to: Scope::Global }),
    ("wmma_store_16x16x16_f16_shared", Kind::Store { acc: DType::F16, to: Scope::Shared }),
    ("wmma_store_16x16x16_f16_shared_dyn", Kind::Store { acc: DType::F16, to: Scope::Shared }),
    ("mma_ldmatrix_f16_a", Kind::MmaLoad { input: DType::F16, b: false, trans: false }),
    ("mma_ldmatrix_f16_a_dyn", Kind::MmaLoad { input: DType::F16, b: false, trans: false }),
    ("mma_ldmatrix_f16_a_trans", Kind::MmaLoad { input: DType::F16, b: false, trans: true }),
    ("mma_ldmatrix_f16_a_trans_dyn", Kind::MmaLoad { input: DType::F16, b: false, trans: true }),
    ("mma_ldmatrix_f16_b", Kind::MmaLoad { input: DType::F16, b: true, trans: false }),
    ("mma_ldmatrix_f16_b_dyn", Kind::MmaLoad { input: DType::F16, b: true, trans: false }),
    ("mma_ldmatrix_f16_b_trans", Kind::MmaLoad { input: DType::F16, b: true, trans: true }),
    ("mma_ldmatrix_f16_b_trans_dyn", Kind::MmaLoad { input: DType::F16, b: true, trans: true }),
    ("mma_ldmatrix_bf16_a", Kind::MmaLoad { input: DType::BFloat16, b: false, trans: false }),
    ("mma_ldmatrix_bf16_a_dyn", Kind::MmaLoad { input: DType::BFloat16, b: false, trans: false }),
    ("mma_ldmatrix_bf16_a_trans", Kind::MmaLoad { input: DType::BFloat16, b: false, trans: true }),
    ("mma_ldmatrix_bf16_a_trans_dyn", Kind::MmaLoad { input: DType::BFloat16, b: false, trans: true }),
    ("mma_ldmatrix_bf16_b", Kind::MmaLoad { input: DType::BFloat16, b: true, trans: false }),
    ("mma_ldmatrix_bf16_b_dyn", Kind::MmaLoad { input: DType::BFloat16, b: true, trans: false }),
    ("mma_ldmatrix_bf16_b_trans", Kind::MmaLoad { input: DType::BFloat16, b: true, trans: true }),
    ("mma_ldmatrix_bf16_b_trans_dyn", Kind::MmaLoad { input: DType::BFloat16, b: true, trans: true }),
    ("mma_f16f16f32", Kind::MmaSync { input: DType::F16, acc: DType::F32, trans_a: false, trans_b: false }),
    ("mma_f16f16f32_trans_b", Kind::MmaSync { input: DType::F16, acc: DType::F32, trans_a: false, trans_b: true }),
    ("mma_f16f16f32_trans_a", Kind::MmaSync { input: DType::F16, acc: DType::F32, trans_a: true, trans_b: false }),
    (
        "mma_f16f16f32_trans_a_trans_b",
        Kind::MmaSync { input: DType::F16, acc: DType::F32, trans_a: true, trans_b: true },
    ),
    ("mma_f16f16f16", Kind::MmaSync { input: DType::F16, acc: DType::F16, trans_a: false, trans_b: false }),
    ("mma_f16f16f16_trans_b", Kind::MmaSync { input: DType::F16, acc: DType::F16, trans_a: false, trans_b: true }),
    ("mma_f16f16f16_trans_a", Kind::MmaSync { input: DType::F16, acc: DType::F16, trans_a: true, trans_b: false }),
    (
        "mma_f16f16f16_trans_a_trans_b",
        Kind::MmaSync { input: DType::F16, acc: DType::F16, trans_a: true, trans_b: true },
    ),
    ("mma_bf16bf16f32", Kind::MmaSync { input: DType::BFloat16, acc: DType::F32, trans_a: false, trans_b: false }),
    (
        "mma_bf16bf16f32_trans_b",
        Kind::MmaSync { input: DType::BFloat16, acc: DType::F32, trans_a: false, trans_b: true },
    ),
    (
        "mma_bf16bf16f32_trans_a",
        Kind::MmaSync { input: DType::BFloat16, acc: DType::F32, trans_a: true, trans_b: false },
    ),
    (
        "mma_bf16bf16f32_trans_a_trans_b",
        Kind::MmaSync { input: DType::BFloat16, acc: DType::F32, trans_a: true, trans_b: true },
    ),
    ("mma_ldmatrix_tf32_a", Kind::MmaLoad { input: DType::F32, b: false, trans: false }),
    ("mma_ldmatrix_tf32_a_dyn", Kind::MmaLoad { input: DType::F32, b: false, trans: false }),
    ("mma_ldmatrix_tf32_a_trans", Kind::MmaLoad { input: DType::F32, b: false, trans: true }),
    ("mma_ldmatrix_tf32_a_trans_dyn", Kind::MmaLoad { input: DType::F32, b: false, trans: true }),
    ("mma_ldmatrix_tf32_b", Kind::MmaLoad { input: DType::F32, b: true, trans: false }),
    ("mma_ldmatrix_tf32_b_dyn", Kind::MmaLoad { input: DType::F32, b: true, trans: false }),
    ("mma_ldmatrix_tf32_b_trans", Kind::MmaLoad { input: DType::F32, b: true, trans: true }),
    ("mma_ldmatrix_tf32_b_trans_dyn", Kind::MmaLoad { input: DType::F32, b: true, trans: true }),
    ("mma_tf32tf32f32", Kind::MmaSync { input: DType::F32, acc: DType::F32, trans_a: false, trans_b: false }),
    ("mma_tf32tf32f32_trans_b", Kind::MmaSync { input: DType::F32, acc: DType::F32, trans_a: false, trans_b: true }),
    ("mma_tf32tf32f32_trans_a", Kind::MmaSync { input: DType::F32, acc: DType::F32, trans_a: true, trans_b: false }),
    (
        "mma_tf32tf32f32_trans_a_trans_b",
        Kind::MmaSync { input: DType::F32, acc: DType::F32, trans_a: true, trans_b: true },
    ),
    ("mma_fill_16x16_f32", Kind::MmaFill(DType::F32)),
    ("mma_fill_16x16_f16", Kind::MmaFill(DType::F16)),
    ("mma_store_16x16_f32_global_", Kind::MmaStore { acc: DType::F32, to: Scope::Global }),
    ("mma_store_16x16_f16_global_", Kind::MmaStore { acc: DType::F16, to: Scope::Global }),
    ("mma_store_16x16_f32_shared_dyn_", Kind::MmaStore { acc: DType::F32, to: Scope::Shared }),
    ("mma_store_16x16_f32_shared_dyn_simple_", Kind::MmaStore { acc: DType::F32, to: Scope::Shared }),
    ("mma_store_16x16_f16_shared_dyn_simple_", Kind::MmaStore { acc: DType::F16, to: Scope::Shared }),
];

/// The names `tensorize` knows, for its error message.
pub fn intrinsic_names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = INTRINSICS.iter().map(|(n, _)| *n).collect();
    v.push("wgmma_m64n{16,32,..,256}k16_f16f16f32[_trans_b]");
    v.push("wgmma_m64n{16,32,..,256}k16_bf16bf16f32[_trans_b]");
    v.push("wgmma_m64n{16,32,..,256}k16_tf32tf32f32_trans_b");
    v
}

pub fn tensorize(sch: &mut Schedule, target: &Target, intrin: &str, preserve_unit_iters: bool) -> Result<()> {
    // A refusal leaves the function as it was, the blockize included.
    let before = sch.func.clone();
    let r = apply(sch, target, intrin, preserve_unit_iters);
    if r.is_err() {
        sch.func = before;
    }
    r
}

fn apply(sch: &mut Schedule, target: &Target, intrin: &str, preserve_unit_iters: bool) -> Result<()> {
    // 1.
    let Some(kind) = INTRINSICS.iter().find(|(n, _)| *n == intrin).map(|(_, k)| *k).or_else(|| wgmma_kind(intrin))
    else {
        return Err(ScheduleError::bad_argument(format!("tirc knows no tensor intrinsic `{intrin}`"))
            .help(format!("the intrinsics tirc has: {}", intrinsic_names().join(", "))));
    };
    let block: BlockRV = match target {
        Target::Block(b) => b.clone(),
        Target::Loop(l) => {
            get_loop(&sch.func.body, l)?;
            super::blockize::blockize(sch, l, preserve_unit_iters)?
        }
    };
    // 2.
    let r = sch
        .func
        .body
        .find_block(&block)
        .ok_or_else(|| ScheduleError::not_found(format!("block `{block}` is not in the function")))?
        .clone();
    let rank = if matches!(kind, Kind::Sync { .. } | Kind::MmaSync { .. } | Kind::Wgmma { .. }) { 3 } else { 2 };
    // The extents of the tile's loops: 16 each, but n columns for wgmma.
    let want: Vec<i64> = match kind {
        Kind::Wgmma { n, .. } => vec![TILE, n, TILE],
        _ => vec![TILE; rank],
    };
    let col_major = kind == Kind::LoadBTrans;
    let refuse = |why: String| ScheduleError::new(format!("block `{block}` does not match `{intrin}`: {why}"));
    if r.block.init.is_some() {
        return Err(refuse("it has an init".into()).help("decompose_reduction first, and tensorize the init apart"));
    }
    let mut loops = Vec::new();
    let mut s = &r.block.body;
    let inner = loop {
        match s {
            Stmt::For(l) => {
                loops.push(l);
                s = &l.body;
            }
            Stmt::Block(b) => break b,
            _ => return Err(refuse("it does not hold a nest of loops around one block".into())),
        }
    };
    let extents: Vec<Option<i64>> = loops.iter().map(|l| l.extent.as_int()).collect();
    if loops.len() != rank
        || extents.iter().zip(&want).any(|(e, w)| *e != Some(*w))
        || loops.iter().any(|l| l.min.as_int() != Some(0))
    {
        let want = want.iter().map(|w| w.to_string()).collect::<Vec<_>>().join("×");
        let got: Vec<String> = extents.iter().map(|e| e.map_or("?".into(), |x| x.to_string())).collect();
        return Err(refuse(format!("its loops are not a {want} nest (they are {})", got.join("×")))
            .help("split the loops by 16 and blockize (or tensorize) the first loop of the tile"));
    }
    // A partial tile: only a store of a warp accumulator can leave out the
    // elements past its destination's edge (`bound`).
    let bound = match inner.predicate.as_bool() {
        Some(true) => None,
        _ if matches!(kind, Kind::MmaStore { .. }) => tile_bound(&inner.predicate, &loops[0].var, &loops[1].var),
        _ => None,
    };
    if inner.predicate.as_bool() != Some(true) && bound.is_none() {
        return Err(refuse(format!(
            "its tile is partial (the inner block has the predicate {})",
            tirc_ir::printer::print_expr(&inner.predicate)
        ))
        .help("pad the shapes to multiples of 16 (pad_einsum) or tile only where 16 divides"));
    }
    let ivs = &inner.block.iter_vars;
    let identity = ivs.len() == rank
        && ivs.iter().zip(&inner.iter_values).zip(&loops).zip(&want).all(|(((iv, v), l), w)| {
            v.as_var() == Some(&l.var) && iv.dom.min.as_int() == Some(0) && iv.dom.extent.as_int() == Some(*w)
        });
    if !identity {
        return Err(refuse("the inner block's variables are not bound one to one to its loops".into()));
    }
    let kinds: Vec<IterKind> = ivs.iter().map(|iv| iv.kind).collect();
    let want_kinds = if rank == 3 {
        vec![IterKind::Spatial, IterKind::Spatial, IterKind::Reduce]
    } else {
        vec![IterKind::Spatial; 2]
    };
    if kinds != want_kinds {
        return Err(refuse(
            "its variables are not of the kinds the intrinsic takes (spatial i, j; reduction k)".into(),
        ));
    }
    let v: Vec<&Var> = ivs.iter().map(|iv| &iv.var).collect();
    // 3.
    let Stmt::Store { buffer, indices, value } = &inner.block.body else {
        return Err(refuse("its inner block is not one store".into()));
    };
    let tile = |b: &Buffer, idx: &[Expr], row: &Var, col: &Var| -> Result<Tile> {
        origin(b, idx, row, col, &v).map_err(&refuse)
    };
    let warp = |b: &Buffer, idx: &[Expr], row: &Var, col: &Var| -> Result<Tile> {
        warp_origin(b, idx, row, col, &v).map_err(&refuse)
    };
    let scoped = |b: &Buffer, s: Scope, dtype: DType| -> Result<()> {
        if b.scope() != s || b.dtype() != dtype {
            return Err(refuse(format!(
                "`{}` is {} in {}, where the intrinsic takes {dtype} in {}",
                b.name(),
                b.dtype(),
                b.scope().name(),
                s.name()
            )));
        }
        Ok(())
    };
    // The element a copy stores, as it is (no conversion).
    let copied = || -> Result<(Buffer, Vec<Expr>)> {
        match value {
            Expr::Load(b, idx) => Ok((b.clone(), idx.clone())),
            _ => Err(refuse("it does not copy one element".into())),
        }
    };
    let w = match kind {
        Kind::Fill(t) => {
            scoped(buffer, Scope::WmmaAccumulator, t)?;
            if value.has_var() || value.has_load() {
                return Err(refuse("it does not store a constant".into()));
            }
            Wmma {
                op: WmmaOp::Fill,
                tiles: vec![tile(buffer, indices, v[0], v[1])?],
                value: Some(value.clone()),
                bound: None,
            }
        }
        Kind::LoadA | Kind::LoadB | Kind::LoadBTrans => {
            let s = if kind == Kind::LoadA { Scope::WmmaMatrixA } else { Scope::WmmaMatrixB };
            scoped(buffer, s, DType::F16)?;
            let (src, sidx) = copied()?;
            scoped(&src, Scope::Shared, DType::F16)?;
            Wmma {
                op: WmmaOp::Load { col_major },
                tiles: vec![tile(buffer, indices, v[0], v[1])?, tile(&src, &sidx, v[0], v[1])?],
                value: None,
                bound: None,
            }
        }
        Kind::Sync { acc, b_trans } => {
            scoped(buffer, Scope::WmmaAccumulator, acc)?;
            let bk = if b_trans { "B[j, k]" } else { "B[k, j]" };
            let (c_read, (ab, aidx), (bb, bidx)) = product(buffer, value, acc).map_err(|why| {
                refuse(why.unwrap_or_else(|| format!("it is not C[i, j] = C[i, j] + {acc}(A[i, k]) * {acc}({bk})")))
            })?;
            scoped(&ab, Scope::WmmaMatrixA, DType::F16)?;
            scoped(&bb, Scope::WmmaMatrixB, DType::F16)?;
            let c = tile(buffer, indices, v[0], v[1])?;
            if !same_origin(&c, &tile(buffer, &c_read, v[0], v[1])?) {
                return Err(refuse("it reads another element of C than it writes".into()));
            }
            // B[k, j], or B[j, k] for the transposed product.
            let (brow, bcol) = if b_trans { (v[1], v[2]) } else { (v[2], v[1]) };
            Wmma {
                op: WmmaOp::Mma { b_trans },
                tiles: vec![c, tile(&ab, &aidx, v[0], v[2])?, tile(&bb, &bidx, brow, bcol)?],
                value: None,
                bound: None,
            }
        }
        Kind::Store { acc, to } => {
            scoped(buffer, to, acc)?;
            let (src, sidx) = copied()?;
            scoped(&src, Scope::WmmaAccumulator, acc)?;
            Wmma {
                op: WmmaOp::Store,
                tiles: vec![tile(buffer, indices, v[0], v[1])?, tile(&src, &sidx, v[0], v[1])?],
                value: None,
                bound: None,
            }
        }
        Kind::MmaLoad { input, b, trans } => {
            scoped(buffer, Scope::Warp, input)?;
            let (src, sidx) = copied()?;
            scoped(&src, Scope::Shared, input)?;
            // A shared tile `transform_layout`ed into atoms (as wgmma's B
            // tiles are) is read as long as each 16×16 tile stays in one.
            let from = origin(&src, &sidx, v[0], v[1], &v)
                .or_else(|why| tile_at_points(&src, &sidx, v[0], v[1], &v).map_err(|_| why))
                .map_err(&refuse)?;
            Wmma {
                op: WmmaOp::LdMatrix { b, trans },
                tiles: vec![warp(buffer, indices, v[0], v[1])?, from],
                value: None,
                bound: None,
            }
        }
        Kind::MmaFill(t) => {
            scoped(buffer, Scope::Warp, t)?;
            if value.has_var() || value.has_load() {
                return Err(refuse("it does not store a constant".into()));
            }
            Wmma {
                op: WmmaOp::MmaFill,
                tiles: vec![warp(buffer, indices, v[0], v[1])?],
                value: Some(value.clone()),
                bound: None,
            }
        }
        Kind::MmaStore { acc, to } => {
            scoped(buffer, to, acc)?;
            let (src, sidx) = copied()?;
            scoped(&src, Scope::Warp, acc)?;
            Wmma {
                op: WmmaOp::MmaStore,
                tiles: vec![tile(buffer, indices, v[0], v[1])?, warp(&src, &sidx, v[0], v[1])?],
                value: None,
                bound,
            }
        }
        Kind::MmaSync { input, acc, trans_a, trans_b } => {
            scoped(buffer, Scope::Warp, acc)?;
            let (c_read, (ab, aidx), (bb, bidx)) = product(buffer, value, acc).map_err(|why| {
                refuse(
                    why.unwrap_or_else(|| format!("it is not C[i, j] = C[i, j] + {acc}(A) * {acc}(B) on warp tiles")),
                )
            })?;
            scoped(&ab, Scope::Warp, input)?;
            scoped(&bb, Scope::Warp, input)?;
            let c = warp(buffer, indices, v[0], v[1])?;
            if !same_origin(&c, &warp(buffer, &c_read, v[0], v[1])?) {
                return Err(refuse("it reads another tile of C than it writes".into()));
            }
            // The operands as they are stored: A[i, k] (A[k, i] with
            // trans_a), B[k, j] (B[j, k] with trans_b).
            let (ar, ac) = if trans_a { (v[2], v[0]) } else { (v[0], v[2]) };
            let (br, bc) = if trans_b { (v[1], v[2]) } else { (v[2], v[1]) };
            Wmma {
                op: WmmaOp::MmaSync { trans_a, trans_b },
                tiles: vec![c, warp(&ab, &aidx, ar, ac)?, warp(&bb, &bidx, br, bc)?],
                value: None,
                bound: None,
            }
        }
        Kind::Wgmma { input, n, trans_b } => {
            scoped(buffer, Scope::Warp, DType::F32)?;
            let (c_read, (ab, aidx), (bb, bidx)) = product(buffer, value, DType::F32).map_err(|why| {
                refuse(why.unwrap_or_else(|| {
                    "it is not C[i, j] = C[i, j] + float32(A[i, k]) * float32(B[j, k]) on warp tiles of C".into()
                }))
            })?;
            scoped(&ab, Scope::Shared, input)?;
            scoped(&bb, Scope::Shared, input)?;
            let t = (n / TILE) as usize;
            let cs = warp_origins(buffer, indices, v[0], v[1], &v, t).map_err(&refuse)?;
            let cr = warp_origins(buffer, &c_read, v[0], v[1], &v, t).map_err(&refuse)?;
            if !same_origin(&cs[0], &cr[0]) {
                return Err(refuse("it reads another tile of C than it writes".into()));
            }
            let a = tile(&ab, &aidx, v[0], v[2])?;
            let mut tiles = cs;
            tiles.push(a);
            // B's 16-column slices, each a 16×16 tile: rows of B stored
            // n × k, columns of B stored k × n (whose layout may place
            // the slices apart: `transform_layout` into 64-column atoms).
            for j in 0..t {
                let shift = Expr::Var(v[1].clone()) + Expr::int(TILE * j as i64);
                let sub: Vec<Expr> = bidx.iter().map(|e| substitute(e, &[(v[1].clone(), shift.clone())])).collect();
                let (row, col) = if trans_b { (v[1], v[2]) } else { (v[2], v[1]) };
                tiles.push(tile_at_points(&bb, &sub, row, col, &v).map_err(&refuse)?);
            }
            Wmma { op: WmmaOp::Wgmma { n, trans_b }, tiles, value: None, bound: None }
        }
    };
    w.check().map_err(&refuse)?;
    if let Some(t) = w.tiles.iter().find(|t| t.buffer.swizzle() != 0 && !w.op.reads_swizzled(t.buffer.dtype())) {
        return Err(refuse(format!(
            "`{}` is swizzled (storage_swizzle), a layout only wgmma's descriptors and ldmatrix of 16-bit elements read",
            t.buffer.name()
        )));
    }
    // 4.
    let an = Analyzer::new();
    for t in w.tiles.iter().filter(|t| t.buffer.scope() != Scope::Warp) {
        let n = t.indices.len();
        for i in &t.indices[n - 2..] {
            let rem = an.simplify(&Expr::binary(BinOp::FloorMod, i.clone(), Expr::int(TILE)));
            if rem.as_int() != Some(0) {
                return Err(refuse(format!(
                    "the tile of `{}` starts at index {} of a dimension, not provably a multiple of 16",
                    t.buffer.name(),
                    tirc_ir::printer::print_expr(i)
                ))
                .help("tensor cores take tiles aligned to 16 elements"));
            }
        }
    }
    let op = Stmt::Wmma(Box::new(w));
    sch.func.body = sch.func.body.rewrite(&mut |x| match x {
        Stmt::Block(b) if b.block.name == block => {
            let mut b = (**b).clone();
            b.block.body = op.clone();
            Some(Stmt::Block(Box::new(b)))
        }
        _ => None,
    });
    Ok(())
}

/// A load and its indices.
type Access = (Buffer, Vec<Expr>);

/// The store's value as `C[..] + acc(A[..]) * acc(B[..])` (the casts to the
/// accumulator's type, or none in float16) with `C` the stored buffer: the
/// indices `C` is read at, and the two operands; or `None` where it is
/// not of that form (the caller says which form it wanted), a reason
/// where it is but its operands are not loads.
fn product(c: &Buffer, value: &Expr, acc: DType) -> std::result::Result<(Vec<Expr>, Access, Access), Option<String>> {
    let load = |e: &Expr| -> Option<Access> {
        match strip_cast(e) {
            Expr::Load(b, idx) => Some((b.clone(), idx.clone())),
            _ => None,
        }
    };
    let Expr::Binary(BinOp::Add, lhs, prod) = value else { return Err(None) };
    let (Some((c2, cidx)), Expr::Binary(BinOp::Mul, a, b)) = (load(lhs), prod.as_ref()) else { return Err(None) };
    let (Some(a_load), Some(b_load)) = (load(a), load(b)) else {
        return Err(Some("its product is not of two loads".into()));
    };
    // Operands widened to the accumulator's type, or of that type already
    // (float16 into float16, float32 into float32 for tf32).
    let cast_ok = |e: &Expr| match e {
        Expr::Cast(t, _) => *t == acc,
        e => e.dtype() == acc,
    };
    if c2 != *c || !cast_ok(a) || !cast_ok(b) {
        return Err(None);
    }
    Ok((cidx, a_load, b_load))
}

/// `e` without a cast around it.
fn strip_cast(e: &Expr) -> &Expr {
    match e {
        Expr::Cast(_, x) => x,
        e => e,
    }
}

fn same_origin(a: &Tile, b: &Tile) -> bool {
    a.buffer == b.buffer
        && a.indices.len() == b.indices.len()
        && a.indices.iter().zip(&b.indices).all(|(x, y)| tirc_ir::structural_eq::same_expr(x, y))
}

/// The tile an access names: its last two indices `origin + row` and
/// `origin + col`, the others free of the inner variables `vars`.
fn origin(b: &Buffer, idx: &[Expr], row: &Var, col: &Var, vars: &[&Var]) -> std::result::Result<Tile, String> {
    let n = idx.len();
    if n < 2 {
        return Err(format!("`{}` has fewer than two dimensions", b.name()));
    }
    let an = Analyzer::new();
    let zero: Vec<(Var, Expr)> = vars.iter().map(|v| ((*v).clone(), Expr::Int(0, v.dtype()))).collect();
    let mut out = Vec::new();
    for (d, e) in idx.iter().enumerate() {
        let want: Option<&Var> = if d == n - 2 {
            Some(row)
        } else if d == n - 1 {
            Some(col)
        } else {
            None
        };
        for v in vars {
            let c = tirc_ir::region::coefficient(e, v);
            let expected = if want == Some(*v) { 1 } else { 0 };
            if c != Some(expected) {
                return Err(format!(
                    "its access {}[..] does not walk the tile row by row in dimension {d} ({})",
                    b.name(),
                    tirc_ir::printer::print_expr(e)
                ));
            }
        }
        out.push(an.simplify(&substitute(e, &zero)));
    }
    Ok(Tile { buffer: b.clone(), indices: out, ldm: None })
}

/// The indices `idx` at element `(r, c)` of a tile: `row` at `r`, `col` at
/// `c`, the other inner variables `vars` at 0, simplified.
fn indices_at(an: &Analyzer, idx: &[Expr], (row, r): (&Var, i64), (col, c): (&Var, i64), vars: &[&Var]) -> Vec<Expr> {
    let mut bind: Vec<(Var, Expr)> =
        vec![(row.clone(), Expr::Int(r, row.dtype())), (col.clone(), Expr::Int(c, col.dtype()))];
    bind.extend(vars.iter().filter(|v| **v != row && **v != col).map(|v| ((*v).clone(), Expr::Int(0, v.dtype()))));
    idx.iter().map(|e| an.simplify(&substitute(e, &bind))).collect()
}

/// The tile an access names, checked at each of its 256 elements: element
/// `(r, c)` at the first element's indices with `r` and `c` added to the
/// last two, the inner variables but `row` and `col` at 0. Unlike
/// `origin`, the indices may divide and take remainders of the variables
/// (a buffer `transform_layout`ed into atoms), as long as the tile stays
/// inside one atom.
fn tile_at_points(b: &Buffer, idx: &[Expr], row: &Var, col: &Var, vars: &[&Var]) -> std::result::Result<Tile, String> {
    let n = idx.len();
    if n < 2 {
        return Err(format!("`{}` has fewer than two dimensions", b.name()));
    }
    let an = Analyzer::new();
    let at = |r: i64, c: i64| indices_at(&an, idx, (row, r), (col, c), vars);
    let first = at(0, 0);
    for r in 0..TILE {
        for c in 0..TILE {
            let got = at(r, c);
            let ok = (0..n).all(|d| {
                let add = if d == n - 2 {
                    r
                } else if d == n - 1 {
                    c
                } else {
                    0
                };
                an.simplify(&(got[d].clone() - first[d].clone())).as_int() == Some(add)
            });
            if !ok {
                return Err(format!(
                    "its access to `{}` does not walk a 16×16 tile row by row at element ({r}, {c})",
                    b.name()
                ));
            }
        }
    }
    Ok(Tile { buffer: b.clone(), indices: first, ldm: None })
}

/// The `count` warp tiles side by side an access names over a 16 × (16 ×
/// count) tile: element `(r, c)` at `[.., t + c / 16, warp_layout(r, c %
/// 16)]`, the tiles consecutive in the dimension before the lanes (the
/// accumulators of one warp's `wgmma`, in its registers' order).
fn warp_origins(
    b: &Buffer,
    idx: &[Expr],
    row: &Var,
    col: &Var,
    vars: &[&Var],
    count: usize,
) -> std::result::Result<Vec<Tile>, String> {
    if count <= 1 {
        return warp_origin(b, idx, row, col, vars).map(|t| vec![t]);
    }
    let n = idx.len();
    if n < 3 {
        return Err(format!(
            "the warp buffer `{}` has no dimension of tiles before its [32, 8] to hold {count} tiles side by side",
            b.name()
        ));
    }
    // Each 16-column slice is one warp tile, checked as one; the slices
    // must follow one another in dimension n - 3.
    let an = Analyzer::new();
    let mut out = Vec::new();
    for j in 0..count {
        let shift = Expr::Var(col.clone()) + Expr::int(TILE * j as i64);
        let sub: Vec<Expr> = idx.iter().map(|e| substitute(e, &[(col.clone(), shift.clone())])).collect();
        let t = warp_origin(b, &sub, row, col, vars)?;
        if let Some(first) = out.first() {
            let first: &Tile = first;
            let d = an.simplify(&(t.indices[n - 3].clone() - first.indices[n - 3].clone())).as_int();
            let rest_same = (0..n)
                .filter(|&d| d != n - 3)
                .all(|d| tirc_ir::structural_eq::same_expr(&t.indices[d], &first.indices[d]));
            if d != Some(j as i64) || !rest_same {
                return Err(format!(
                    "its access to the warp buffer `{}` does not put columns {}..{} in the tile after the one before",
                    b.name(),
                    16 * j,
                    16 * j + 15
                ));
            }
        }
        out.push(t);
    }
    Ok(out)
}

/// The warp tile an access names: its last two indices
/// `warp_layout(row, col)` (TVM's `shared_16x16_to_ldmatrix_32x8_layout`,
/// checked at each of the 256 elements), the others the same for every
/// element and free of the inner variables `vars`. The tile's first
/// element is `[.., 0, 0]`.
fn warp_origin(b: &Buffer, idx: &[Expr], row: &Var, col: &Var, vars: &[&Var]) -> std::result::Result<Tile, String> {
    use tirc_ir::wmma::{warp_layout, LANES, PER_LANE};
    let n = idx.len();
    let shape = b.const_shape().unwrap_or_default();
    if n < 2 || shape.len() != n || shape[n - 2..] != [LANES, PER_LANE] {
        return Err(format!("the warp buffer `{}` does not end in the dimensions [32, 8]", b.name())
            + " (transform_layout it with shared_16x16_to_ldmatrix_32x8_layout first)");
    }
    let others: Vec<&&Var> = vars.iter().filter(|v| **v != row && **v != col).collect();
    if idx.iter().any(|e| others.iter().any(|v| e.uses(v))) {
        return Err(format!("its access to `{}` uses a variable of the tile it does not walk", b.name()));
    }
    let an = Analyzer::new();
    let at = |r: i64, c: i64| indices_at(&an, idx, (row, r), (col, c), vars);
    let first = at(0, 0);
    for r in 0..TILE {
        for c in 0..TILE {
            let got = at(r, c);
            let (lane, elem) = warp_layout(r, c);
            let lead_same =
                got[..n - 2].iter().zip(&first[..n - 2]).all(|(x, y)| tirc_ir::structural_eq::same_expr(x, y));
            if !lead_same || got[n - 2].as_int() != Some(lane) || got[n - 1].as_int() != Some(elem) {
                let shown: Vec<String> = got.iter().map(tirc_ir::printer::print_expr).collect();
                return Err(format!(
                    "its access to the warp buffer `{}` puts element ({r}, {c}) of the tile at [{}], where the \
                     intrinsic's layout (shared_16x16_to_ldmatrix_32x8_layout) puts it at [.., {lane}, {elem}]",
                    b.name(),
                    shown.join(", ")
                ));
            }
        }
    }
    Ok(Tile { buffer: b.clone(), indices: first, ldm: None })
}

/// The rows and columns of a store's tile that a predicate keeps: each of
/// its conditions `x + row < n` (or `<=`, or either way round), with `row` the loop over the
/// tile's rows and `x` free of both of the tile's loops, bounds the rows
/// to `n - x`, and likewise the columns. `None` where a condition is of
/// any other form.
fn tile_bound(predicate: &Expr, row: &Var, col: &Var) -> Option<(Expr, Expr)> {
    let an = Analyzer::new();
    let mut limits: [Option<Expr>; 2] = [None, None];
    for c in crate::arith::conjuncts(predicate).into_iter().map(crate::arith::smaller_first) {
        let Expr::Binary(op @ (BinOp::Lt | BinOp::Le), lhs, rhs) = &c else { return None };
        let uses = |e: &Expr| [row, col].map(|v| e.uses(v));
        let d = match (uses(lhs), uses(rhs)) {
            ([true, false], [false, false]) => 0,
            ([false, true], [false, false]) => 1,
            _ => return None,
        };
        let var = if d == 0 { row } else { col };
        let offset = an.simplify(&((**lhs).clone() - Expr::var(var)));
        if offset.uses(var) {
            return None;
        }
        let mut limit = (**rhs).clone() - offset;
        if *op == BinOp::Le {
            limit = limit + Expr::int(1);
        }
        let limit = an.simplify(&limit);
        limits[d] = Some(match limits[d].take() {
            None => limit,
            Some(l) => Expr::binary(BinOp::Min, l, limit),
        });
    }
    let [r, c] = limits;
    Some((r.unwrap_or_else(|| Expr::int(TILE)), c.unwrap_or_else(|| Expr::int(TILE))))
}
