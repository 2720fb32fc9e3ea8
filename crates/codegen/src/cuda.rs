//! CUDA C from a lowered function: one `extern "C" __global__` kernel with
//! `__launch_bounds__`, `__restrict__` buffer pointers, and the launch
//! configuration read off its `T.launch_thread` head.
//!
//! Integer floor division and remainder print as C's `/` and `%` where the
//! dividend is provably non-negative (the usual case for indices), and
//! through helpers with floor semantics elsewhere. Indices are `int` unless
//! some buffer has more than 2^31 elements, then `long long`.

use std::collections::{HashMap, HashSet};
use std::fmt::Write;
use tirc_ir::launch::{launch_config, LaunchConfig};
use tirc_ir::subst::substitute;
use tirc_ir::wmma::TILE;
use tirc_ir::{
    BinOp, Buffer, DType, Diagnostic, Expr, For, ForKind, Intrinsic, PrimFunc, Scope, Stmt, Tile, Var, Wmma, WmmaOp,
};
use tirc_passes::arith::Analyzer;

/// A compiled kernel: its source, entry point, launch configuration and
/// parameters (buffer names and element types, in order).
#[derive(Clone, Debug)]
pub struct CudaKernel {
    pub name: String,
    pub source: String,
    pub launch: LaunchConfig,
    pub params: Vec<(String, DType)>,
    /// Intermediate buffers in global memory (a function's `T.alloc_buffer`
    /// left at scope "global"): kernel arguments after `params`, with their
    /// element counts, which whoever launches the kernel allocates.
    pub scratch: Vec<(String, DType, usize)>,
    /// Bytes of dynamic shared memory the launch must request.
    pub dynamic_shared_bytes: usize,
    /// The function's run-time sizes (`PrimFunc::sizes`): scalar arguments
    /// after the buffers and the scratch, by name and integer type.
    pub sizes: Vec<(String, DType)>,
    /// The value of each size for the next launches, once known
    /// (`tirc::compile::Compiled::bind_sizes`); `launch.grid` is then the
    /// grid for them.
    pub size_values: Vec<i64>,
    /// The function's scalar parameters (`PrimFunc::scalars`, `alpha:
    /// T.float32`): by-value arguments after the sizes, by name and type.
    pub scalars: Vec<(String, DType)>,
    /// The value of each scalar for the next launches, once given
    /// (`tirc::compile::Compiled::bind_scalars`).
    pub scalar_values: Vec<f64>,
    /// Each grid extent as a C expression of the sizes (`(m + 63) / 64`),
    /// for a launcher that computes the grid at run time.
    pub grid_exprs: [String; 3],
    /// The occupancy hint of `__launch_bounds__(threads, n)`, if the
    /// schedule gave one (`"min_blocks_per_sm"`).
    pub min_blocks_per_sm: Option<i64>,
    /// The tensor maps of its bulk tensor copies: by-value arguments after
    /// the scalars, which the launcher encodes from the parameters'
    /// addresses (`warp_specialized.rs`).
    pub tensor_maps: Vec<crate::warp_specialized::TensorMap>,
    /// Each step of the loop and launch extents of run-time sizes alone, as
    /// C of the sizes, which a launcher checks within int32 for the sizes
    /// it is given (the kernel computes them in int).
    pub extent_terms: Vec<String>,
}

/// Tensor-core operations (`tirc_ir::wmma`) as PTX `wmma` instructions on
/// 16x16x16 tiles, float16 operands loaded row-major or (`_col`) column-major
/// and multiplied as A·B or (`_bt`) A·Bᵀ (`_shared`: from a
/// shared-memory address, so that the loads are shared-memory ones, not
/// generic): fragments are the
/// registers PTX names (8 of two halves for A and B, 8 floats or 4 of two
/// halves for the accumulator), so no CUDA header is needed.
const WMMA_PRELUDE: &str = r#"struct tirc_frag_a { unsigned x[8]; };
struct tirc_frag_b { unsigned x[8]; };
struct tirc_frag_f32 { float x[8]; };
struct tirc_frag_f16 { unsigned x[4]; };
__device__ __forceinline__ void tirc_wmma_load_a(tirc_frag_a& f, const void* p, int ldm) {
  asm volatile("wmma.load.a.sync.aligned.row.m16n16k16.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8], %9;" : "=r"(f.x[0]), "=r"(f.x[1]), "=r"(f.x[2]), "=r"(f.x[3]), "=r"(f.x[4]), "=r"(f.x[5]), "=r"(f.x[6]), "=r"(f.x[7]) : "l"(p), "r"(ldm) : "memory");
}
__device__ __forceinline__ void tirc_wmma_load_b(tirc_frag_b& f, const void* p, int ldm) {
  asm volatile("wmma.load.b.sync.aligned.row.m16n16k16.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8], %9;" : "=r"(f.x[0]), "=r"(f.x[1]), "=r"(f.x[2]), "=r"(f.x[3]), "=r"(f.x[4]), "=r"(f.x[5]), "=r"(f.x[6]), "=r"(f.x[7]) : "l"(p), "r"(ldm) : "memory");
}
__device__ __forceinline__ void tirc_wmma_fill(tirc_frag_f32& f, float v) {
  for (int i = 0; i < 8; ++i) f.x[i] = v;
}
__device__ __forceinline__ void tirc_wmma_fill(tirc_frag_f16& f, half v) {
  __half2 h = __halves2half2(v, v);
  for (int i = 0; i < 4; ++i) f.x[i] = *reinterpret_cast<unsigned*>(&h);
}
__device__ __forceinline__ void tirc_wmma_mma(tirc_frag_f32& c, const tirc_frag_a& a, const tirc_frag_b& b) {
  asm volatile("wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19, %20, %21, %22, %23}, {%0, %1, %2, %3, %4, %5, %6, %7};" : "+f"(c.x[0]), "+f"(c.x[1]), "+f"(c.x[2]), "+f"(c.x[3]), "+f"(c.x[4]), "+f"(c.x[5]), "+f"(c.x[6]), "+f"(c.x[7]) : "r"(a.x[0]), "r"(a.x[1]), "r"(a.x[2]), "r"(a.x[3]), "r"(a.x[4]), "r"(a.x[5]), "r"(a.x[6]), "r"(a.x[7]), "r"(b.x[0]), "r"(b.x[1]), "r"(b.x[2]), "r"(b.x[3]), "r"(b.x[4]), "r"(b.x[5]), "r"(b.x[6]), "r"(b.x[7]));
}
__device__ __forceinline__ void tirc_wmma_mma(tirc_frag_f16& c, const tirc_frag_a& a, const tirc_frag_b& b) {
  asm volatile("wmma.mma.sync.aligned.row.row.m16n16k16.f16.f16 {%0, %1, %2, %3}, {%4, %5, %6, %7, %8, %9, %10, %11}, {%12, %13, %14, %15, %16, %17, %18, %19}, {%0, %1, %2, %3};" : "+r"(c.x[0]), "+r"(c.x[1]), "+r"(c.x[2]), "+r"(c.x[3]) : "r"(a.x[0]), "r"(a.x[1]), "r"(a.x[2]), "r"(a.x[3]), "r"(a.x[4]), "r"(a.x[5]), "r"(a.x[6]), "r"(a.x[7]), "r"(b.x[0]), "r"(b.x[1]), "r"(b.x[2]), "r"(b.x[3]), "r"(b.x[4]), "r"(b.x[5]), "r"(b.x[6]), "r"(b.x[7]));
}
__device__ __forceinline__ void tirc_wmma_store(float* p, const tirc_frag_f32& f, int ldm) {
  asm volatile("wmma.store.d.sync.aligned.row.m16n16k16.f32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8}, %9;" :: "l"(p), "f"(f.x[0]), "f"(f.x[1]), "f"(f.x[2]), "f"(f.x[3]), "f"(f.x[4]), "f"(f.x[5]), "f"(f.x[6]), "f"(f.x[7]), "r"(ldm) : "memory");
}
__device__ __forceinline__ void tirc_wmma_store(half* p, const tirc_frag_f16& f, int ldm) {
  asm volatile("wmma.store.d.sync.aligned.row.m16n16k16.f16 [%0], {%1, %2, %3, %4}, %5;" :: "l"(p), "r"(f.x[0]), "r"(f.x[1]), "r"(f.x[2]), "r"(f.x[3]), "r"(ldm) : "memory");
}
__device__ __forceinline__ void tirc_wmma_load_a_shared(tirc_frag_a& f, const void* p, int ldm) {
  unsigned a = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("wmma.load.a.sync.aligned.row.m16n16k16.shared.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8], %9;" : "=r"(f.x[0]), "=r"(f.x[1]), "=r"(f.x[2]), "=r"(f.x[3]), "=r"(f.x[4]), "=r"(f.x[5]), "=r"(f.x[6]), "=r"(f.x[7]) : "r"(a), "r"(ldm) : "memory");
}
__device__ __forceinline__ void tirc_wmma_load_b_shared(tirc_frag_b& f, const void* p, int ldm) {
  unsigned a = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("wmma.load.b.sync.aligned.row.m16n16k16.shared.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8], %9;" : "=r"(f.x[0]), "=r"(f.x[1]), "=r"(f.x[2]), "=r"(f.x[3]), "=r"(f.x[4]), "=r"(f.x[5]), "=r"(f.x[6]), "=r"(f.x[7]) : "r"(a), "r"(ldm) : "memory");
}
__device__ __forceinline__ void tirc_wmma_store_shared(float* p, const tirc_frag_f32& f, int ldm) {
  unsigned a = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("wmma.store.d.sync.aligned.row.m16n16k16.shared.f32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8}, %9;" :: "r"(a), "f"(f.x[0]), "f"(f.x[1]), "f"(f.x[2]), "f"(f.x[3]), "f"(f.x[4]), "f"(f.x[5]), "f"(f.x[6]), "f"(f.x[7]), "r"(ldm) : "memory");
}
__device__ __forceinline__ void tirc_wmma_store_shared(half* p, const tirc_frag_f16& f, int ldm) {
  unsigned a = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("wmma.store.d.sync.aligned.row.m16n16k16.shared.f16 [%0], {%1, %2, %3, %4}, %5;" :: "r"(a), "r"(f.x[0]), "r"(f.x[1]), "r"(f.x[2]), "r"(f.x[3]), "r"(ldm) : "memory");
}
__device__ __forceinline__ void tirc_wmma_load_a_col(tirc_frag_a& f, const void* p, int ldm) {
  asm volatile("wmma.load.a.sync.aligned.col.m16n16k16.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8], %9;" : "=r"(f.x[0]), "=r"(f.x[1]), "=r"(f.x[2]), "=r"(f.x[3]), "=r"(f.x[4]), "=r"(f.x[5]), "=r"(f.x[6]), "=r"(f.x[7]) : "l"(p), "r"(ldm) : "memory");
}
__device__ __forceinline__ void tirc_wmma_load_a_col_shared(tirc_frag_a& f, const void* p, int ldm) {
  unsigned a = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("wmma.load.a.sync.aligned.col.m16n16k16.shared.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8], %9;" : "=r"(f.x[0]), "=r"(f.x[1]), "=r"(f.x[2]), "=r"(f.x[3]), "=r"(f.x[4]), "=r"(f.x[5]), "=r"(f.x[6]), "=r"(f.x[7]) : "r"(a), "r"(ldm) : "memory");
}
__device__ __forceinline__ void tirc_wmma_load_b_col(tirc_frag_b& f, const void* p, int ldm) {
  asm volatile("wmma.load.b.sync.aligned.col.m16n16k16.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8], %9;" : "=r"(f.x[0]), "=r"(f.x[1]), "=r"(f.x[2]), "=r"(f.x[3]), "=r"(f.x[4]), "=r"(f.x[5]), "=r"(f.x[6]), "=r"(f.x[7]) : "l"(p), "r"(ldm) : "memory");
}
__device__ __forceinline__ void tirc_wmma_load_b_col_shared(tirc_frag_b& f, const void* p, int ldm) {
  unsigned a = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("wmma.load.b.sync.aligned.col.m16n16k16.shared.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8], %9;" : "=r"(f.x[0]), "=r"(f.x[1]), "=r"(f.x[2]), "=r"(f.x[3]), "=r"(f.x[4]), "=r"(f.x[5]), "=r"(f.x[6]), "=r"(f.x[7]) : "r"(a), "r"(ldm) : "memory");
}
__device__ __forceinline__ void tirc_wmma_mma_bt(tirc_frag_f32& c, const tirc_frag_a& a, const tirc_frag_b& b) {
  asm volatile("wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19, %20, %21, %22, %23}, {%0, %1, %2, %3, %4, %5, %6, %7};" : "+f"(c.x[0]), "+f"(c.x[1]), "+f"(c.x[2]), "+f"(c.x[3]), "+f"(c.x[4]), "+f"(c.x[5]), "+f"(c.x[6]), "+f"(c.x[7]) : "r"(a.x[0]), "r"(a.x[1]), "r"(a.x[2]), "r"(a.x[3]), "r"(a.x[4]), "r"(a.x[5]), "r"(a.x[6]), "r"(a.x[7]), "r"(b.x[0]), "r"(b.x[1]), "r"(b.x[2]), "r"(b.x[3]), "r"(b.x[4]), "r"(b.x[5]), "r"(b.x[6]), "r"(b.x[7]));
}
__device__ __forceinline__ void tirc_wmma_mma_bt(tirc_frag_f16& c, const tirc_frag_a& a, const tirc_frag_b& b) {
  asm volatile("wmma.mma.sync.aligned.row.col.m16n16k16.f16.f16 {%0, %1, %2, %3}, {%4, %5, %6, %7, %8, %9, %10, %11}, {%12, %13, %14, %15, %16, %17, %18, %19}, {%0, %1, %2, %3};" : "+r"(c.x[0]), "+r"(c.x[1]), "+r"(c.x[2]), "+r"(c.x[3]) : "r"(a.x[0]), "r"(a.x[1]), "r"(a.x[2]), "r"(a.x[3]), "r"(a.x[4]), "r"(a.x[5]), "r"(a.x[6]), "r"(a.x[7]), "r"(b.x[0]), "r"(b.x[1]), "r"(b.x[2]), "r"(b.x[3]), "r"(b.x[4]), "r"(b.x[5]), "r"(b.x[6]), "r"(b.x[7]));
}
"#;

const MMA_PRELUDE: &str = r#"// mma.sync on warp tiles: a 16x16 tile is 8 elements per lane, in the layout
// of the PTX fragments of mma.m16n8k16 (half operands as 4 packed registers).
__device__ __forceinline__ unsigned tirc_lane() { unsigned l; asm("mov.u32 %0, %%laneid;" : "=r"(l)); return l; }
// ldmatrix.x4 of a 16x16 half tile: each lane points at one row of 8
// halves; STORED_T for a tile stored transposed (A as k x m, B as n x k).
// The offset of the lane's row (in halves) in a tile whose rows are ldm apart:
template <bool STORED_T>
__device__ __forceinline__ int tirc_ldmatrix_offset(int ldm) {
  unsigned lane = tirc_lane();
  int row = STORED_T ? 8 * (int)(lane >> 4) + (int)(lane & 7) : (int)(lane & 15);
  int col = STORED_T ? 8 * (int)((lane >> 3) & 1) : 8 * (int)(lane >> 4);
  return row * ldm + col;
}
// the instruction, the lane's row at shared address a:
template <bool TRANS>
__device__ __forceinline__ void tirc_ldmatrix_x4_at(unsigned* r, unsigned a) {
  if (TRANS) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];" : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a) : "memory");
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];" : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a) : "memory");
  }
}
// from a tile whose rows are ldm apart:
template <bool TRANS, bool STORED_T>
__device__ __forceinline__ void tirc_ldmatrix_x4(unsigned* r, const void* tile, int ldm) {
  const unsigned short* p = reinterpret_cast<const unsigned short*>(tile) + tirc_ldmatrix_offset<STORED_T>(ldm);
  tirc_ldmatrix_x4_at<TRANS>(r, (unsigned)__cvta_generic_to_shared(p));
}
// The same from the tile at element `off` past `buf` of a buffer swizzled
// by BYTES (sch.storage_swizzle, the pattern of tirc_ir::swizzle_offset),
// `buf` a whole number of the pattern's atoms (8 lines) into it: each
// lane's row of 16 bytes is one chunk, which the swizzle moves whole.
template <bool TRANS, bool STORED_T, int BYTES>
__device__ __forceinline__ void tirc_ldmatrix_x4_swizzled(unsigned* r, const void* buf, int off, int ldm) {
  int a = 2 * (off + tirc_ldmatrix_offset<STORED_T>(ldm));
  a ^= ((a >> 7) & (BYTES / 16 - 1)) << 4;
  tirc_ldmatrix_x4_at<TRANS>(r, (unsigned)__cvta_generic_to_shared(reinterpret_cast<const char*>(buf) + a));
}
// c += a * b on a 16x16x16 tile: two m16n8k16, one per 8 columns of c.
__device__ __forceinline__ void tirc_mma_16x16x16(float* c, const unsigned* a, const unsigned* b) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};" : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};" : "+f"(c[4]), "+f"(c[5]), "+f"(c[6]), "+f"(c[7]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[2]), "r"(b[3]));
}
__device__ __forceinline__ void tirc_mma_16x16x16_bf16(float* c, const unsigned* a, const unsigned* b) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};" : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};" : "+f"(c[4]), "+f"(c[5]), "+f"(c[6]), "+f"(c[7]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[2]), "r"(b[3]));
}
__device__ __forceinline__ void tirc_mma_16x16x16(unsigned* c, const unsigned* a, const unsigned* b) {
  asm("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%0, %1};" : "+r"(c[0]), "+r"(c[1]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  asm("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%0, %1};" : "+r"(c[2]), "+r"(c[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[2]), "r"(b[3]));
}
// tf32: a 16x16 float32 tile is 8 registers a lane, 4 for each 8-wide half
// q of k, each rounded to tf32 (cvt.rna). A's registers of half q are
// (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4) of rows m and columns
// 8q + k; B's, for the half h of n, (t, g) and (t + 4, g) of rows 8q + k
// and columns 8h + n (g = lane / 4, t = lane % 4): mma.m16n8k8's fragments.
__device__ __forceinline__ float tirc_tf32(float x) {
  unsigned u;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(u) : "f"(x));
  return __uint_as_float(u);
}
// A stored m x k, or B stored n x k: two ldmatrix.x4 of 16-byte rows (4
// floats as 8 halves), one per half of k.
template <bool B>
__device__ __forceinline__ void tirc_ldmatrix_tf32(float* r, const float* tile, int ldm) {
  for (int q = 0; q < 2; ++q) {
    tirc_ldmatrix_x4<false, B>(reinterpret_cast<unsigned*>(r + 4 * q), tile + 8 * q, 2 * ldm);
  }
  for (int i = 0; i < 8; ++i) r[i] = tirc_tf32(r[i]);
}
// A stored k x m, or B stored k x n, which ldmatrix cannot transpose in
// 4-byte elements: each lane loads its 8 elements.
template <bool B, bool STORED_T>
__device__ __forceinline__ void tirc_load_tf32(float* r, const float* tile, int ldm) {
  unsigned lane = tirc_lane();
  int g = (int)(lane >> 2), t = (int)(lane & 3);
  for (int q = 0; q < 2; ++q) {
    for (int e = 0; e < 4; ++e) {
      // Row and column of the operand as the product reads it: A (m, k), B (k, n).
      int row = B ? 8 * q + t + 4 * (e & 1) : g + 8 * (e & 1);
      int col = B ? 8 * (e >> 1) + g : 8 * q + t + 4 * (e >> 1);
      r[4 * q + e] = tirc_tf32(STORED_T ? tile[col * ldm + row] : tile[row * ldm + col]);
    }
  }
}
// c += a * b on a 16x16x16 float32 tile in tf32: four m16n8k8.
__device__ __forceinline__ void tirc_mma_16x16x16_tf32(float* c, const float* a, const float* b) {
  for (int q = 0; q < 2; ++q) {
    for (int h = 0; h < 2; ++h) {
      asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};" : "+f"(c[4 * h]), "+f"(c[4 * h + 1]), "+f"(c[4 * h + 2]), "+f"(c[4 * h + 3]) : "r"(__float_as_uint(a[4 * q])), "r"(__float_as_uint(a[4 * q + 1])), "r"(__float_as_uint(a[4 * q + 2])), "r"(__float_as_uint(a[4 * q + 3])), "r"(__float_as_uint(b[4 * q + 2 * h])), "r"(__float_as_uint(b[4 * q + 2 * h + 1])));
    }
  }
}
__device__ __forceinline__ void tirc_mma_fill(float* c, float v) {
  for (int i = 0; i < 8; ++i) c[i] = v;
}
__device__ __forceinline__ void tirc_mma_fill(unsigned* c, half v) {
  __half2 h = __halves2half2(v, v);
  for (int i = 0; i < 4; ++i) c[i] = *reinterpret_cast<unsigned*>(&h);
}
// The accumulator tile to memory, rows ldm apart: element e of lane l is
// row 8 * ((e % 4) / 2) + l / 4, column 8 * (e / 4) + 2 * (l % 4) + e % 2.
__device__ __forceinline__ void tirc_mma_store(float* p, const float* c, int ldm) {
  unsigned lane = tirc_lane();
  for (int e = 0; e < 8; e += 2) {
    float* q = p + (8 * ((e % 4) / 2) + (int)(lane >> 2)) * ldm + 8 * (e / 4) + 2 * (int)(lane & 3);
    if ((reinterpret_cast<unsigned long long>(q) & 7) == 0) {
      *reinterpret_cast<float2*>(q) = make_float2(c[e], c[e + 1]);
    } else {
      q[0] = c[e];
      q[1] = c[e + 1];
    }
  }
}
__device__ __forceinline__ void tirc_mma_store(half* p, const unsigned* c, int ldm) {
  unsigned lane = tirc_lane();
  for (int e = 0; e < 8; e += 2) {
    half* q = p + (8 * ((e % 4) / 2) + (int)(lane >> 2)) * ldm + 8 * (e / 4) + 2 * (int)(lane & 3);
    unsigned u = c[e / 2];
    if ((reinterpret_cast<unsigned long long>(q) & 3) == 0) {
      *reinterpret_cast<unsigned*>(q) = u;
    } else {
      __half2 h = *reinterpret_cast<__half2*>(&u);
      q[0] = __low2half(h);
      q[1] = __high2half(h);
    }
  }
}
// The same for the rows < `rows` and columns < `cols` of the tile only: a
// tile at the edge of its destination, whose other elements lie past it
// (a whole tile, where the bound is 16 or more, as the store above).
__device__ __forceinline__ void tirc_mma_store_bounded(float* p, const float* c, int ldm, int rows, int cols) {
  if (rows >= 16 && cols >= 16) { tirc_mma_store(p, c, ldm); return; }
  unsigned lane = tirc_lane();
  for (int e = 0; e < 8; e += 2) {
    int row = 8 * ((e % 4) / 2) + (int)(lane >> 2), col = 8 * (e / 4) + 2 * (int)(lane & 3);
    if (row >= rows || col >= cols) continue;
    float* q = p + row * ldm + col;
    if (col + 1 < cols && (reinterpret_cast<unsigned long long>(q) & 7) == 0) {
      *reinterpret_cast<float2*>(q) = make_float2(c[e], c[e + 1]);
    } else {
      q[0] = c[e];
      if (col + 1 < cols) q[1] = c[e + 1];
    }
  }
}
__device__ __forceinline__ void tirc_mma_store_bounded(half* p, const unsigned* c, int ldm, int rows, int cols) {
  if (rows >= 16 && cols >= 16) { tirc_mma_store(p, c, ldm); return; }
  unsigned lane = tirc_lane();
  for (int e = 0; e < 8; e += 2) {
    int row = 8 * ((e % 4) / 2) + (int)(lane >> 2), col = 8 * (e / 4) + 2 * (int)(lane & 3);
    if (row >= rows || col >= cols) continue;
    half* q = p + row * ldm + col;
    unsigned u = c[e / 2];
    __half2 h = *reinterpret_cast<__half2*>(&u);
    if (col + 1 < cols && (reinterpret_cast<unsigned long long>(q) & 3) == 0) {
      *reinterpret_cast<unsigned*>(q) = u;
    } else {
      q[0] = __low2half(h);
      if (col + 1 < cols) q[1] = __high2half(h);
    }
  }
}
"#;

const PRELUDE: &str = "\
// Floor division and remainder, for dividends that may be negative.
__device__ __forceinline__ int tirc_floordiv(int a, int b) { int q = a / b; return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q; }
__device__ __forceinline__ int tirc_floormod(int a, int b) { int r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
__device__ __forceinline__ long long tirc_floordiv(long long a, long long b) { long long q = a / b; return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q; }
__device__ __forceinline__ long long tirc_floormod(long long a, long long b) { long long r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
";

/// Asynchronous copies into shared memory (`cp.async`, sm_80 and newer),
/// with a plain copy in their place on older GPUs.
const ASYNC_PRELUDE: &str = "\
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define TIRC_CP_ASYNC 1
#endif
template <int N> __device__ __forceinline__ void tirc_cp_async(void* dst, const void* src) {
#ifdef TIRC_CP_ASYNC
  unsigned int s = static_cast<unsigned int>(__cvta_generic_to_shared(dst));
  if constexpr (N == 16) {
    asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16;\\n\" :: \"r\"(s), \"l\"(src) : \"memory\");
  } else {
    asm volatile(\"cp.async.ca.shared.global [%0], [%1], %2;\\n\" :: \"r\"(s), \"l\"(src), \"n\"(N) : \"memory\");
  }
#else
  struct alignas(N) chunk { unsigned char b[N]; };
  *static_cast<chunk*>(dst) = *static_cast<const chunk*>(src);
#endif
}
__device__ __forceinline__ void tirc_cp_async_commit() {
#ifdef TIRC_CP_ASYNC
  asm volatile(\"cp.async.commit_group;\\n\" ::: \"memory\");
#endif
}
template <int N> __device__ __forceinline__ void tirc_cp_async_wait() {
#ifdef TIRC_CP_ASYNC
  asm volatile(\"cp.async.wait_group %0;\\n\" :: \"n\"(N) : \"memory\");
#endif
}
";

/// The zero-fill form of `cp.async`, for the tiles of `zero_fill_tiles`:
/// where `full` is false, no byte is read and the N bytes at `dst` become
/// zeros (a source size of 0).
const ZFILL_PRELUDE: &str = "\
template <int N> __device__ __forceinline__ void tirc_cp_async_zfill(void* dst, const void* src, bool full) {
#ifdef TIRC_CP_ASYNC
  unsigned int s = static_cast<unsigned int>(__cvta_generic_to_shared(dst));
  int n = full ? N : 0;
  if constexpr (N == 16) {
    asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\\n\" :: \"r\"(s), \"l\"(src), \"r\"(n) : \"memory\");
  } else {
    asm volatile(\"cp.async.ca.shared.global [%0], [%1], %2, %3;\\n\" :: \"r\"(s), \"l\"(src), \"n\"(N), \"r\"(n) : \"memory\");
  }
#else
  struct alignas(N) chunk { unsigned char b[N]; };
  *static_cast<chunk*>(dst) = full ? *static_cast<const chunk*>(src) : chunk{};
#endif
}
";

/// Emits the kernel of a lowered function.
/// The local memory a CUDA thread may have.
const MAX_LOCAL_BYTES: i64 = 512 * 1024;

pub fn emit(f: &PrimFunc) -> Result<CudaKernel, Diagnostic> {
    let launch = launch_config(f);
    // (A flattened shape past int32 stays a product, `50000 * 50000`:
    // evaluated here in 64 bits.)
    let elements = |b: &Buffer| {
        b.shape().iter().try_fold(1i64, |n, e| tirc_ir::expr::eval(e, &|_: &Var| None).and_then(|x| n.checked_mul(x)))
    };
    let big = f.params.iter().any(|b| elements(b).is_some_and(|n| n > i32::MAX as i64));
    let mut g = Gen {
        out: String::new(),
        names: HashMap::new(),
        taken: HashSet::new(),
        an: Analyzer::new(),
        index_type: if big { "long long" } else { "int" },
        read_only: HashSet::new(),
        dynamic: Vec::new(),
        declared: vec![Vec::new()],
        wgmma: false,
        warp_tiles: false,
        handover: false,
        wgmma_in_flight: tirc_ir::launch::wgmma_in_flight(f),
        wgmma_pending: false,
        wgmma_settled: false,
        wgmma_helpers: Vec::new(),
        size_vars: f.sizes.clone(),
        aligned: Vec::new(),
        wanted: None,
        split_pending: false,
        sizes_decided: false,
        side: Side::Both,
        consumers: 0,
        shuffle_mask: "0xffffffffu",
        side_split_pending: false,
        producer_slot: None,
        tma_dsts: tirc_ir::launch::tma_destinations(&f.body),
        barrier_offset: None,
        tmaps: crate::warp_specialized::tensor_maps(f),
        tmap_sources: f.params.clone(),
    };
    f.body.walk(&mut |s| g.wgmma |= matches!(s, Stmt::Wmma(w) if w.op.wgmma_tiles() > 0));
    f.body.walk(&mut |s| g.warp_tiles |= matches!(s, Stmt::Wmma(w) if w.op.is_mma()));
    let name = format!("{}_kernel", sanitize(&f.name));
    let mut params = Vec::new();
    let mut sig = Vec::new();
    // Buffers the kernel only reads are `const`: with `__restrict__` that
    // lets the CUDA compiler load them through the read-only data cache.
    let mut written = HashSet::new();
    f.body.walk(&mut |s| match s {
        Stmt::Store { buffer, .. } => {
            written.insert(buffer.clone());
        }
        Stmt::Wmma(w) => {
            written.insert(w.write().buffer.clone());
        }
        _ => {}
    });
    // The buffers loaded in the arms of a select that loads a buffer the
    // kernel writes lose `__restrict__`: the CUDA compiler turns
    // `c ? W[i] : R[j]` into one load from the selected address, keeps R's
    // aliasing facts on it (read-only, no alias with W), and then drops
    // the stores to W that this load reads (found on TVM's argmax tests:
    // the result kept W's contents from before the launch).
    let mut mixed = loaded_beside_written(f, &written);
    // A global buffer the kernel both writes and reads may pass values
    // between its threads (one writes, the others read after a barrier):
    // `__restrict__` there let the CUDA compiler move the others' load
    // above the barrier, and they read what was there before the launch
    // (tests/data/conformance/global_total_read_by_all_threads.tir on the
    // H100). Such buffers are plain pointers.
    let mut loaded = HashSet::new();
    f.body.walk(&mut |s| {
        s.for_each_expr(|e| {
            e.walk(&mut |x| {
                if let Expr::Load(b, _) = x {
                    loaded.insert(b.clone());
                }
            })
        })
    });
    mixed.extend(written.iter().filter(|b| b.scope() == Scope::Global && loaded.contains(*b)).cloned());
    for b in &f.params {
        let n = g.buf_name(b);
        let konst = if written.contains(b) { "" } else { "const " };
        let restrict = if mixed.contains(b) { "" } else { " __restrict__" };
        sig.push(format!("{konst}{}*{restrict} {n}", ctype(b.dtype())?));
        params.push((n, b.dtype()));
        if !written.contains(b) {
            g.read_only.insert(b.clone());
        }
    }
    // Global intermediates become arguments: a kernel cannot allocate
    // global memory, its launcher can.
    let mut scratch = Vec::new();
    let mut global_allocs = Vec::new();
    f.body.walk(&mut |s| {
        if let Stmt::Allocate { buffer, .. } = s {
            if buffer.scope() == Scope::Global {
                global_allocs.push(buffer.clone());
            }
        }
    });
    // A thread's local memory is at most 512 KiB on every GPU CUDA runs
    // (the simulator would try to allocate it for every thread).
    let mut too_large = None;
    f.body.walk(&mut |s| {
        if let Stmt::Allocate { buffer, .. } = s {
            let bytes = buffer.num_elements().map(|n| n.saturating_mul(buffer.dtype().bytes() as i64));
            if buffer.scope() == Scope::Local && bytes.is_some_and(|n| n > MAX_LOCAL_BYTES) && too_large.is_none() {
                too_large = Some((buffer.clone(), bytes.unwrap_or(0)));
            }
        }
    });
    if let Some((b, bytes)) = too_large {
        return Err(Diagnostic::new(format!(
            "local buffer `{}` takes {bytes} bytes a thread, more than the {} KiB of local memory a CUDA thread may have",
            b.name(),
            MAX_LOCAL_BYTES / 1024
        ))
        .help("keep a thread's tile small (registers hold a few hundred values), or use shared or global memory"));
    }
    for b in &global_allocs {
        let n = g.buf_name(b);
        // A size of run-time sizes is known when they are bound
        // (`Compiled::bind_sizes` counts it then).
        let size = match b.num_elements() {
            Some(n) => n,
            None if b.shape().iter().all(|e| e.is_size_expr(&f.sizes)) => 0,
            None => return Err(Diagnostic::new(format!("buffer `{}` has no constant size to allocate", b.name()))),
        };
        let restrict = if mixed.contains(b) { "" } else { " __restrict__" };
        sig.push(format!("{}*{restrict} {n}", ctype(b.dtype())?));
        scratch.push((n, b.dtype(), size.max(0) as usize));
    }
    // Run-time sizes are the last arguments; they are at least 1.
    let mut sizes = Vec::new();
    for v in &f.sizes {
        let n = g.var_name(v);
        sig.push(format!("{} {n}", ctype(v.dtype())?));
        sizes.push((n, v.dtype()));
        g.an.bind_sizes(std::slice::from_ref(v));
    }
    // Then the scalar values, each passed by value in its own type.
    let mut scalars = Vec::new();
    for v in &f.scalars {
        let n = g.var_name(v);
        sig.push(format!("{} {n}", ctype(v.dtype())?));
        scalars.push((n, v.dtype()));
    }
    // Then the tensor maps of the bulk tensor copies, by value.
    for (i, m) in g.tmaps.iter().enumerate() {
        if m.param >= params.len() {
            return Err(Diagnostic::new("a bulk tensor copy reads a buffer that is not a parameter"));
        }
        sig.push(format!("const __grid_constant__ tirc_tensor_map tirc_tmap_{i}"));
    }
    // Several warp-specialized loops (copies of one in the branches of a
    // partitioned kernel, or loops one after the other) share the producer
    // and the barriers: each version keeps its own phases, so any sequence
    // of versions that both sides run alike is paced right.
    let ws_loops = tirc_ir::launch::warp_specialized_loops(&f.body);
    let warp_specialized = !ws_loops.is_empty();
    // Shared memory beyond the 48 KB a kernel may declare statically comes
    // from one dynamic array, each buffer at a 16-byte aligned offset.
    // (A warp-specialized kernel's mbarriers, two a tile version, are
    // static shared memory beside them.)
    // The branches of a partitioned kernel share the dynamic array; their
    // static arrays, in two scopes, the compiler lays out one after the
    // other: what decides is the sum.
    let (offsets, total) = tirc_ir::launch::shared_layout(&f.body);
    let barriers = tirc_ir::launch::mbarrier_bytes(&f.body);
    let mut declared = 0;
    f.body.walk(&mut |s| {
        if let Stmt::Allocate { buffer, .. } = s {
            if buffer.scope() == Scope::Shared {
                declared +=
                    (buffer.num_elements().unwrap_or(0).max(0) as usize * buffer.dtype().bytes()).div_ceil(16) * 16;
            }
        }
    });
    let dynamic_shared_bytes = if declared.max(total) + barriers > STATIC_SHARED_LIMIT {
        g.dynamic = offsets;
        if barriers > 0 {
            // The mbarriers go with the tiles, after them.
            g.barrier_offset = Some(total.div_ceil(8) * 8);
            total.div_ceil(8) * 8 + barriers
        } else {
            total
        }
    } else {
        0
    };
    let mut launch = launch;
    let consumers = launch.threads_per_block();
    if warp_specialized {
        // The producer, after the consumers' threads: along the
        // outermost axis with threads, whose inner axes it must fill.
        let d = (0..3).rev().find(|&d| launch.block[d] > 1).unwrap_or(0);
        let inner: i64 = launch.block[..d].iter().product();
        let producers = tirc_ir::launch::producer_threads(g.warp_tiles, consumers);
        if producers % inner != 0 {
            return Err(Diagnostic::new(format!(
                "a warp-specialized kernel adds a producer of {producers} threads along its outermost thread axis, but the axes inside it have {inner} threads, which does not divide {producers}"
            )));
        }
        launch.block[d] += producers / inner;
        g.consumers = consumers;
        g.side_split_pending = true;
        let (head, body) = f.body.launch_head();
        let threads: HashSet<usize> = head.iter().filter(|(_, t, _)| !t.is_block).map(|(v, _, _)| v.key()).collect();
        if let Some(what) = crate::warp_specialized::thread_dependent_path(body, &threads) {
            return Err(Diagnostic::new(format!(
                "the warp-specialized loop sits under {what}, which depends on the thread: its producer thread would not take the consumers' way"
            ))
            .or_at_ir(ws_loops[0].span, "this loop"));
        }
    }
    let threads = launch.threads_per_block();
    if threads % 32 != 0 {
        g.shuffle_mask = "__activemask()";
    }
    // The launch head becomes the built-in indices.
    let (head, body_s) = f.body.launch_head();
    let mut grid_exprs = launch.grid.map(|e| e.to_string());
    for (var, tag, extent) in head {
        let d = ["x", "y", "z"][tag.dim as usize];
        let base = if tag.is_block { "blockIdx" } else { "threadIdx" };
        if let Some((_, hi)) = g.an.bound(extent) {
            g.an.bind(var, 0, hi - 1);
        }
        if tag.is_block && extent.as_int().is_none() {
            grid_exprs[tag.dim as usize] = g.expr(extent)?;
        }
        g.names.insert(var.key(), format!("(({})({base}.{d}))", g.index_type));
    }
    if dynamic_shared_bytes > 0 {
        // A swizzled buffer needs its pattern to start where the
        // hardware's does, at a multiple of 1024 bytes; one bulk tensor
        // copies write, at a multiple of 128.
        let align =
            g.dynamic.iter().map(|(b, _)| tirc_ir::launch::shared_alignment(b, &g.tma_dsts)).max().unwrap_or(16);
        g.line(1, &format!("extern __shared__ __align__({align}) unsigned char tirc_dyn_smem[];"));
    }
    g.split_pending = !g.wgmma && !warp_specialized;
    g.stmt(body_s, 1)?;
    let mut src = String::new();
    src.push_str("// Generated by tirc.\n");
    let (mut uses_wmma, mut uses_mma) = (false, false);
    f.body.walk(&mut |s| {
        if let Stmt::Wmma(w) = s {
            uses_mma |= w.op.is_mma();
            uses_wmma |= !w.op.is_mma();
        }
    });
    // `half` and `nv_bfloat16` come from CUDA's headers, which NVRTC has
    // built in; the mma helpers' float16 overloads need `half` even in a
    // float32 (tf32) kernel.
    let mut types = dtypes(f);
    if uses_mma {
        types.insert(DType::F16);
    }
    for t in tirc_ir::dtype::TYPES.iter().filter(|t| types.contains(&t.dtype)) {
        if let Some(h) = t.c_header {
            let _ = writeln!(src, "#include <{h}>");
        }
    }
    src.push_str(PRELUDE);
    if uses_wmma {
        src.push_str(WMMA_PRELUDE);
    }
    if uses_mma {
        src.push_str(MMA_PRELUDE);
    }
    let mut swizzled = false;
    f.body.walk(&mut |s| swizzled |= matches!(s, Stmt::Allocate { buffer, .. } if buffer.swizzle() != 0));
    if swizzled {
        src.push_str(SWIZZLE_PRELUDE);
    }
    if g.wgmma || g.handover {
        src.push_str(SM90A_PRELUDE);
    }
    if g.wgmma {
        src.push_str(WGMMA_PRELUDE);
        for &(n, dtype, trans_b) in &g.wgmma_helpers {
            src.push_str(&wgmma_helper(n, dtype, trans_b));
        }
    }
    let mut uses_async = false;
    f.body.walk(&mut |s| uses_async |= matches!(s, Stmt::AsyncCommit | Stmt::AsyncWait(_)));
    if uses_async {
        src.push_str(ASYNC_PRELUDE);
    }
    if g.out.contains("tirc_cp_async_zfill<") {
        src.push_str(ZFILL_PRELUDE);
    }
    if warp_specialized {
        src.push_str(crate::warp_specialized::PRELUDE);
    }
    let _ = writeln!(src);
    // The occupancy hint of `extract_launch`, if the schedule gave one.
    let min_blocks_per_sm = tirc_ir::launch::min_blocks_per_sm(f);
    // A warp-specialized kernel on warp tiles (wgmma, mma.sync) runs one
    // block a multiprocessor: with the 1, the registers are capped at entry, which
    // setmaxnreg needs.
    let bounds = match min_blocks_per_sm {
        Some(n) => format!("{threads}, {n}"),
        None if warp_specialized && g.warp_tiles => format!("{threads}, 1"),
        None => threads.to_string(),
    };
    let _ = writeln!(src, "extern \"C\" __global__ void __launch_bounds__({bounds}) {name}({}) {{", sig.join(", "));
    src.push_str(&g.out);
    src.push_str("}\n");
    // Each step of each loop or launch extent of run-time sizes alone, as C
    // of the sizes: the kernel computes them in int, so a launcher checks
    // each within int32 for the sizes it is given, as `tirc run` does when
    // it binds them (`(n * m + 95) / 96` passes int's range before its
    // division brings it back).
    let mut extent_terms: Vec<String> = Vec::new();
    if !f.sizes.is_empty() {
        let mut extents: Vec<Expr> = Vec::new();
        f.body.walk(&mut |s| match s {
            Stmt::For(l) => extents.push(l.extent.clone()),
            Stmt::Launch { extent, .. } => extents.push(extent.clone()),
            _ => {}
        });
        for e in extents {
            let mut only_sizes = e.has_var();
            e.walk(&mut |x| {
                if let Expr::Var(v) = x {
                    only_sizes &= f.sizes.contains(v);
                }
            });
            if !only_sizes {
                continue;
            }
            let mut steps = Vec::new();
            e.walk(&mut |x| {
                if matches!(x, Expr::Binary(..)) {
                    steps.push(x.clone());
                }
            });
            for x in steps {
                let c = g.expr(&x)?;
                if !extent_terms.contains(&c) {
                    extent_terms.push(c);
                }
            }
        }
    }
    Ok(CudaKernel {
        extent_terms,
        name,
        source: src,
        launch,
        params,
        scratch,
        dynamic_shared_bytes,
        sizes,
        size_values: Vec::new(),
        scalars,
        scalar_values: Vec::new(),
        grid_exprs,
        min_blocks_per_sm,
        tensor_maps: g.tmaps.clone(),
    })
}

/// The mark of a kernel for the architecture-specific target of its
/// Hopper GPU (sm_90a for sm_90): one that issues `wgmma` or `setmaxnreg`
/// (`tirc_exec::gpu::nvrtc_build` reads it).
const SM90A_PRELUDE: &str = r#"#define TIRC_SM90A 1
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "these kernels use wgmma or setmaxnreg, which only sm_90a has: compile them for it alone, nvcc -gencode arch=compute_90a,code=sm_90a (nvcc 13's -arch=sm_90a also checks PTX for compute_90)"
#endif
"#;

/// What `wgmma` needs: its fences, the wait for the products in flight,
/// the warp's place in its warpgroup and the shared-memory descriptor of
/// an operand in swizzled rows of `SW` bytes (PTX ISA, "Matrix Descriptor
/// Format").
const WGMMA_PRELUDE: &str = r#"__device__ __forceinline__ void tirc_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void tirc_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void tirc_wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(N) : "memory"); }
__device__ __forceinline__ void tirc_fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ int tirc_warp_in_group() {
  return (int)(((threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x) / 32 % 4);
}
// The descriptor of an operand in swizzled shared memory: its start, the
// leading byte offset (unused for a K-major operand: 16; for one stored
// MN-major, B as k x n in atoms of SW bytes of n by 8 rows of k, the
// distance between atoms along n), the stride between groups of 8 rows (8
// rows of SW bytes) and the swizzle mode, offsets in units of 16 bytes.
template <int SW> __device__ __forceinline__ unsigned long long tirc_wgmma_desc(const void* p, unsigned lbo = 16) {
  unsigned long long a = (unsigned long long)__cvta_generic_to_shared(p);
  unsigned long long mode = SW == 128 ? 1 : SW == 64 ? 2 : 3;
  return ((a & 0x3FFFF) >> 4) | ((unsigned long long)((lbo >> 4) & 0x3FFF) << 16) | ((unsigned long long)(8 * SW / 16) << 32) | (mode << 62);
}
"#;

/// The element at an offset of a swizzled shared buffer
/// (`tirc_ir::swizzle_offset`).
const SWIZZLE_PRELUDE: &str = r#"// The element at offset i of a swizzled shared buffer (sch.storage_swizzle):
// the 16-byte chunk within each 128-byte line exchanged by XOR with the
// line's number modulo BYTES / 16.
template <int BYTES, int ELEM, typename I> __device__ __forceinline__ I tirc_swizzle(I i) {
  I a = i * ELEM;
  return (a ^ (((a >> 7) & (BYTES / 16 - 1)) << 4)) / ELEM;
}
"#;

/// How each wgmma helper's line starts.
const WGMMA_HELPER: &str = "__device__ __forceinline__ void tirc_wgmma_m64n";

/// The helper that issues one `wgmma.mma_async.m64nNk16` (float32
/// accumulators, `n / 2` a thread, as the warp tiles from `c` hold them):
/// one line. The products issued between two barriers are one group,
/// committed at the second.
fn wgmma_helper(n: i64, dtype: DType, trans_b: bool) -> String {
    if dtype == DType::F32 {
        return wgmma_helper_tf32(n);
    }
    let ty = if dtype == DType::BFloat16 { "bf16" } else { "f16" };
    // The instruction's imm-trans-b: 1 reads B MN-major (stored k × n).
    let (mn, tb) = if trans_b { ("", 0) } else { ("_mn", 1) };
    let regs = n / 2;
    let list: Vec<String> = (0..regs).map(|i| format!("%{i}")).collect();
    let outs: Vec<String> = (0..regs).map(|i| format!("\"+f\"(c[{i}])")).collect();
    format!(
        "{WGMMA_HELPER}{n}k16_{ty}{mn}(float* c, unsigned long long da, unsigned long long db) {{ \
         asm volatile(\"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{s}, 0;\\nwgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ty}.{ty} {{{}}}, %{da}, %{db}, p, 1, 1, 0, {tb};\\n}}\\n\" : {} : \"l\"(da), \"l\"(db), \"r\"(1) : \"memory\"); }}\n",
        list.join(", "),
        outs.join(", "),
        s = regs + 2,
        da = regs,
        db = regs + 1,
    )
}

/// The tf32 helper: a 16-deep product as two `wgmma.mma_async.m64nNk8`
/// on float32 operands (the tensor cores read them as tf32), each operand
/// K-major (tf32 has no transposed form), one descriptor pair for each
/// half of k.
fn wgmma_helper_tf32(n: i64) -> String {
    let regs = n / 2;
    let list: Vec<String> = (0..regs).map(|i| format!("%{i}")).collect();
    let outs: Vec<String> = (0..regs).map(|i| format!("\"+f\"(c[{i}])")).collect();
    let one = |da: &str, db: &str| {
        format!(
            "asm volatile(\"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{s}, 0;\\nwgmma.mma_async.sync.aligned.m64n{n}k8.f32.tf32.tf32 {{{}}}, %{d0}, %{d1}, p, 1, 1;\\n}}\\n\" : {} : \"l\"({da}), \"l\"({db}), \"r\"(1) : \"memory\");",
            list.join(", "),
            outs.join(", "),
            s = regs + 2,
            d0 = regs,
            d1 = regs + 1,
        )
    };
    format!(
        "{WGMMA_HELPER}{n}k16_tf32(float* c, unsigned long long da0, unsigned long long db0, unsigned long long da1, unsigned long long db1) {{ {} {} }}\n",
        one("da0", "db0"),
        one("da1", "db1")
    )
}

/// The element offset `i` (C text) of buffer `b` as its memory lays it
/// out: through the swizzle of a swizzled buffer (`tirc_ir::swizzle_offset`).
/// A vector of at most 16 bytes at an offset aligned to its size keeps
/// its elements together under the swizzle, so the offset of its first
/// element stands for it.
fn swizzled(b: &Buffer, i: String) -> String {
    match b.swizzle() {
        0 => i,
        bytes => format!("tirc_swizzle<{bytes}, {}>({i})", b.dtype().bytes()),
    }
}

/// The buffers loaded in the arms of a select (`T.Select`,
/// `T.if_then_else`) whose arms load a buffer the kernel writes, when they
/// load more than one buffer.
fn loaded_beside_written(f: &PrimFunc, written: &HashSet<Buffer>) -> HashSet<Buffer> {
    let mut mixed = HashSet::new();
    f.body.walk(&mut |s| {
        s.for_each_expr(|e| {
            e.walk(&mut |x| {
                if let Expr::Select(_, a, b) = x {
                    let mut loaded: Vec<Buffer> = Vec::new();
                    for arm in [a, b] {
                        arm.walk(&mut |y| {
                            if let Expr::Load(buf, _) = y {
                                if !loaded.contains(buf) {
                                    loaded.push(buf.clone());
                                }
                            }
                        });
                    }
                    if loaded.len() > 1 && loaded.iter().any(|x| written.contains(x)) {
                        mixed.extend(loaded);
                    }
                }
            })
        })
    });
    mixed
}

/// One CUDA source holding several kernels (a function that `split_kernels`
/// made into several, or kernels of several functions): the headers and
/// helper functions once, then each kernel in order. NVRTC and nvcc compile
/// it as one translation unit.
pub fn translation_unit(kernels: &[&CudaKernel]) -> String {
    let start = |k: &CudaKernel| k.source.find("extern \"C\" __global__").unwrap_or(0);
    let any = |part: &str| kernels.iter().any(|k| k.source[..start(k)].contains(part));
    let mut src = String::from("// Generated by tirc.\n");
    for h in tirc_ir::dtype::TYPES.iter().filter_map(|t| t.c_header) {
        let include = format!("#include <{h}>\n");
        if any(&include) {
            src.push_str(&include);
        }
    }
    src.push_str(PRELUDE);
    if any(WMMA_PRELUDE) {
        src.push_str(WMMA_PRELUDE);
    }
    if any(MMA_PRELUDE) {
        src.push_str(MMA_PRELUDE);
    }
    if any(ASYNC_PRELUDE) {
        src.push_str(ASYNC_PRELUDE);
    }
    if any(ZFILL_PRELUDE) {
        src.push_str(ZFILL_PRELUDE);
    }
    if any(SWIZZLE_PRELUDE) {
        src.push_str(SWIZZLE_PRELUDE);
    }
    if any(crate::warp_specialized::PRELUDE) {
        src.push_str(crate::warp_specialized::PRELUDE);
    }
    if any(SM90A_PRELUDE) {
        src.push_str(SM90A_PRELUDE);
    }
    if any(WGMMA_PRELUDE) {
        src.push_str(WGMMA_PRELUDE);
        // The wgmma helpers of each width any kernel uses, once each (one
        // line apiece).
        let mut seen = HashSet::new();
        for k in kernels {
            for l in k.source[..start(k)].lines().filter(|l| l.starts_with(WGMMA_HELPER)) {
                if seen.insert(l) {
                    src.push_str(l);
                    src.push('\n');
                }
            }
        }
    }
    for k in kernels {
        src.push('\n');
        src.push_str(&k.source[start(k)..]);
    }
    src
}

/// Every type a buffer, a cast or a literal of `f` has.
fn dtypes(f: &PrimFunc) -> HashSet<DType> {
    let mut out: HashSet<DType> = f.params.iter().map(|b| b.dtype()).collect();
    out.extend(f.scalars.iter().map(|v| v.dtype()));
    f.body.walk(&mut |s| {
        if let Stmt::Allocate { buffer, .. } = s {
            out.insert(buffer.dtype());
        }
        s.for_each_expr(|e| {
            e.walk(&mut |x| match x {
                Expr::Cast(t, _) | Expr::Float(_, t) | Expr::Int(_, t) => {
                    out.insert(*t);
                }
                Expr::Load(b, _) => {
                    out.insert(b.dtype());
                }
                _ => {}
            })
        });
    });
    out
}

#[derive(Clone)]
struct Gen {
    out: String,
    names: HashMap<usize, String>,
    taken: HashSet<String>,
    an: Analyzer,
    index_type: &'static str,
    /// Parameters the kernel never writes (declared `const`).
    read_only: HashSet<Buffer>,
    /// Shared buffers placed in dynamic shared memory, with byte offsets.
    dynamic: Vec<(Buffer, usize)>,
    /// The arrays declared in each open C scope (`{`), innermost last: a
    /// second allocation of one buffer in a scope (a loop iteration peeled
    /// beside the loop) gets a scope of its own.
    declared: Vec<Vec<String>>,
    /// The kernel issues `wgmma`: its barriers wait for the products in
    /// flight first, and the helpers of each width it uses.
    wgmma: bool,
    /// The kernel works on tensor-core warp tiles (`wgmma` or the
    /// `mma.sync` family): a warp-specialized one gets a producer
    /// warpgroup that gives its registers to the consumers.
    warp_tiles: bool,
    /// The kernel hands registers between warps (`setmaxnreg`, sm_90a).
    handover: bool,
    /// Batches of products that may stay in flight across a barrier
    /// (`tirc_ir::launch::wgmma_in_flight`).
    wgmma_in_flight: i64,
    /// Whether a wgmma may be in flight at this point of the text: one was
    /// written since the last wait for all, or the code is inside a loop
    /// that issues them. Elsewhere a barrier waits for all (ptxas
    /// serializes every wgmma of a kernel where a wait lets products stay
    /// in flight between the accumulators' fill and their first product).
    wgmma_pending: bool,
    /// Inside an `if` whose warp-tile operations had the products in
    /// flight waited for before it (and fenced after it): the waits and
    /// fences are the warpgroup's (`.sync.aligned`), which a condition
    /// of the warp (an edge tile's rows) would split.
    wgmma_settled: bool,
    /// The helpers of each width, operand type and B layout used (in a
    /// fixed order, so that the source is the same every time).
    wgmma_helpers: Vec<(i64, DType, bool)>,
    /// The function's run-time sizes (`PrimFunc::sizes`).
    size_vars: Vec<Var>,
    /// Run-time sizes taken to be multiples of a number (`k` of 4): in the
    /// branch of the kernel that tested them, or while a vector copy is
    /// tried under that assumption (`modulo_aligned_sizes`).
    aligned: Vec<(Var, i64)>,
    /// While the kernel body is written for nothing, to learn which sizes
    /// its copies want aligned (`split_on_aligned_sizes`): those tests.
    wanted: Option<Vec<(Var, i64)>>,
    /// The kernel body is still to be split on those tests, below the
    /// launch head and the allocations.
    split_pending: bool,
    /// Inside a body written for one alignment of each size its copies
    /// test: no copy tests a size of its own.
    sizes_decided: bool,
    /// Which side of a warp-specialized kernel is being written
    /// (`warp_specialized.rs`).
    side: Side,
    /// In a warp-specialized kernel: the consumers' threads (the block's
    /// threads before the producer's), and whether the body is
    /// still to be split between the two sides.
    consumers: i64,
    /// The lanes of a warp shuffle's mask: all 32 where every warp of the
    /// block is whole, else the lanes active where it runs.
    shuffle_mask: &'static str,
    side_split_pending: bool,
    /// In the producer's loop: the C variable of its version.
    producer_slot: Option<String>,
    /// The shared buffers bulk tensor copies write (aligned to 128 bytes).
    tma_dsts: Vec<Buffer>,
    /// Where the mbarriers of a warp-specialized kernel start in dynamic
    /// shared memory, when the kernel's shared memory is dynamic.
    barrier_offset: Option<usize>,
    /// The tensor maps the bulk tensor copies read through.
    tmaps: Vec<crate::warp_specialized::TensorMap>,
    /// The kernel's parameters, which a tensor map's `param` indexes.
    tmap_sources: Vec<Buffer>,
}

/// The side of a warp-specialized kernel a statement is written for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    /// Not a warp-specialized kernel (or above the split).
    Both,
    /// The producer thread: the loops down to the warp-specialized loop,
    /// and its copies.
    Producer,
    /// The consumers: everything else.
    Consumer,
}

/// The registers a thread of a warp-specialized kernel's producer keeps
/// when it hands the rest to the consumers.
const PRODUCER_REGISTERS: i64 = 40;

/// The registers each of `consumers` threads gets from a producer
/// warpgroup of `producers` threads that keeps `PRODUCER_REGISTERS`
/// (`setmaxnreg`), if that is more than they have at entry. The block
/// holds `threads × at_entry` registers, the most `__launch_bounds__(threads,
/// 1)` lets ptxas give a thread (a multiple of 8), and `setmaxnreg.inc`
/// waits until the block's own pool has what it asks for: the consumers'
/// share must fit what the producer frees, or the kernel hangs.
fn register_handover(consumers: i64, producers: i64) -> Option<i64> {
    if producers % 128 != 0 || consumers % 128 != 0 || consumers == 0 {
        return None;
    }
    let threads = consumers + producers;
    let at_entry = (65536 / threads).min(255) / 8 * 8;
    let pool = threads * at_entry;
    let given = ((pool - PRODUCER_REGISTERS * producers) / consumers / 8 * 8).min(240);
    (given > at_entry).then_some(given)
}

/// The integer sum `x` as `(whole, rest)`, `x = whole + rest`: `whole`
/// the terms that are multiples of `m` by their constant factors (a sum
/// of 0 where none is), `rest` the others.
fn split_multiples(x: &Expr, m: i64) -> (Expr, Expr) {
    match x {
        Expr::Binary(op @ (BinOp::Add | BinOp::Sub), a, b) => {
            let ((aw, ar), (bw, br)) = (split_multiples(a, m), split_multiples(b, m));
            (Expr::binary(*op, aw, bw), Expr::binary(*op, ar, br))
        }
        _ if constant_factor(x) % m == 0 => (x.clone(), Expr::int(0)),
        _ => (Expr::int(0), x.clone()),
    }
}

/// A number every value of the integer expression `x` is a multiple of,
/// from its constant factors alone (0 for the constant 0): a sum's is the
/// greatest common divisor of its terms', a product's the product of its
/// factors'; anything else counts 1.
fn constant_factor(x: &Expr) -> i64 {
    match x {
        Expr::Int(v, _) => v.checked_abs().unwrap_or(1),
        Expr::Binary(BinOp::Add | BinOp::Sub, a, b) => tirc_ir::expr::gcd(constant_factor(a), constant_factor(b)),
        Expr::Binary(BinOp::Mul, a, b) => constant_factor(a).checked_mul(constant_factor(b)).unwrap_or(1),
        _ => 1,
    }
}

/// The most shared memory a kernel may declare statically, in bytes.
pub const STATIC_SHARED_LIMIT: usize = 48 * 1024;

/// A C identifier for a TIR name (other characters become `_`).
pub fn sanitize(s: &str) -> String {
    let mut o: String = s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if o.is_empty() || o.starts_with(|c: char| c.is_ascii_digit()) {
        o.insert(0, '_');
    }
    o
}

/// Whether `n` is a name a kernel cannot give a buffer or variable of the
/// user's: a C++ keyword, a CUDA qualifier, type, built-in variable or
/// macro, a math function the emitter calls (`expf` for `T.exp` on
/// float32, `fmaxf`, `min`), a name of tirc's own helpers (`tirc_`), or a
/// name the compiler reserves (`__x`, `_X`).
fn reserved(n: &str) -> bool {
    const WORDS: &[&str] = &[
        // C++17 keywords and alternative tokens.
        "alignas",
        "alignof",
        "and",
        "and_eq",
        "asm",
        "auto",
        "bitand",
        "bitor",
        "bool",
        "break",
        "case",
        "catch",
        "char",
        "char16_t",
        "char32_t",
        "char8_t",
        "class",
        "compl",
        "concept",
        "const",
        "const_cast",
        "consteval",
        "constexpr",
        "constinit",
        "continue",
        "co_await",
        "co_return",
        "co_yield",
        "decltype",
        "default",
        "delete",
        "do",
        "double",
        "dynamic_cast",
        "else",
        "enum",
        "explicit",
        "export",
        "extern",
        "false",
        "float",
        "for",
        "friend",
        "goto",
        "if",
        "inline",
        "int",
        "long",
        "mutable",
        "namespace",
        "new",
        "noexcept",
        "not",
        "not_eq",
        "nullptr",
        "operator",
        "or",
        "or_eq",
        "private",
        "protected",
        "public",
        "register",
        "reinterpret_cast",
        "requires",
        "return",
        "short",
        "signed",
        "sizeof",
        "static",
        "static_assert",
        "static_cast",
        "struct",
        "switch",
        "template",
        "this",
        "thread_local",
        "throw",
        "true",
        "try",
        "typedef",
        "typeid",
        "typename",
        "union",
        "unsigned",
        "using",
        "virtual",
        "void",
        "volatile",
        "wchar_t",
        "while",
        "xor",
        "xor_eq",
        // CUDA's built-in variables and types, and what the runtime headers
        // and tirc's launchers name.
        "threadIdx",
        "blockIdx",
        "blockDim",
        "gridDim",
        "warpSize",
        "dim3",
        "half",
        "nv_bfloat16",
        "nv_bfloat162",
        "cudaStream_t",
        "cudaError_t",
        "cudaSuccess",
        "stream",
        "err",
        "done",
        "size_t",
        "ptrdiff_t",
        "int8_t",
        "int16_t",
        "int32_t",
        "int64_t",
        "uint8_t",
        "uint16_t",
        "uint32_t",
        "uint64_t",
        "NULL",
        "assert",
        "printf",
        "malloc",
        "free",
        "memcpy",
        "memset",
        "std",
        "main",
        "isfinite",
        "isnan",
        "isinf",
        "signbit",
        "min",
        "max",
        "abs",
        "fminf",
        "fmaxf",
        "fmin",
        "fmax",
        "fabsf",
        "fmaf",
        "fma",
    ];
    if WORDS.contains(&n) || n.starts_with("tirc_") || n.starts_with("__") {
        return true;
    }
    let mut chars = n.chars();
    if chars.next() == Some('_') && chars.next().is_some_and(|c| c.is_ascii_uppercase()) {
        return true;
    }
    // Vector types: `float4`, `uint2`, `longlong1`, `half2`.
    const VECTORS: &[&str] = &[
        "char",
        "uchar",
        "short",
        "ushort",
        "int",
        "uint",
        "long",
        "ulong",
        "longlong",
        "ulonglong",
        "float",
        "double",
        "half",
        "bfloat",
    ];
    if let Some(base) = n.strip_suffix(['1', '2', '3', '4']) {
        if VECTORS.contains(&base) {
            return true;
        }
    }
    // The math functions `T.exp` and the like become, and their float32
    // forms (`exp`, `expf`).
    Intrinsic::ALL.into_iter().any(|i| n == i.name() || n.strip_suffix('f') == Some(i.name()))
}

/// The C type of an element of `t` in generated CUDA.
/// A flat tile's element offset and row stride.
fn flat_tile(t: &Tile) -> Result<(Expr, Expr), Diagnostic> {
    match (&t.indices[..], &t.ldm) {
        ([i], Some(l)) => Ok((i.clone(), l.clone())),
        _ => Err(Diagnostic::new(format!(
            "a tensor-core tile of `{}` is not flat: flatten buffers before codegen",
            t.buffer.name()
        ))),
    }
}

/// The fragment type (`WMMA_PRELUDE`) of a fragment buffer allocated over
/// `body`: float16 operands, a float32 or float16 accumulator. An A
/// operand is loaded row-major; a B operand row-major for products with B
/// as it is, column-major for products with B transposed (`b_trans`), one
/// of the two for all its uses (the PTX instructions fix the layout).
fn fragment_type(b: &Buffer, body: &Stmt) -> Result<&'static str, Diagnostic> {
    let (mut loads, mut products) = (Vec::new(), Vec::new());
    body.walk(&mut |s| {
        if let Stmt::Wmma(w) = s {
            match w.op {
                WmmaOp::Load { col_major } if w.tiles[0].buffer == *b => loads.push(col_major),
                WmmaOp::Mma { b_trans } if w.tiles[2].buffer == *b => products.push(b_trans),
                _ => {}
            }
        }
    });
    let col = loads.iter().chain(&products).any(|&x| x);
    let mixed = loads.iter().chain(&products).any(|&x| x != col);
    if b.scope() == Scope::WmmaMatrixA && col {
        return Err(Diagnostic::new(format!(
            "fragment `{}` (matrix_a) is loaded column-major, which tirc's code generation does not emit",
            b.name()
        )));
    }
    if mixed {
        return Err(Diagnostic::new(format!(
            "fragment `{}` is loaded or multiplied both as B and as B transposed; one fragment has one layout",
            b.name()
        )));
    }
    match (b.scope(), b.dtype()) {
        (Scope::WmmaMatrixA, DType::Float(16)) => Ok("tirc_frag_a"),
        (Scope::WmmaMatrixB, DType::Float(16)) => Ok("tirc_frag_b"),
        (Scope::WmmaAccumulator, DType::Float(32)) => Ok("tirc_frag_f32"),
        (Scope::WmmaAccumulator, DType::Float(16)) => Ok("tirc_frag_f16"),
        (s, t) => Err(Diagnostic::new(format!(
            "tirc's code generation has no {} fragment of {t} (`{}`): operands are float16, accumulators float32 or float16",
            s.name(),
            b.name()
        ))),
    }
}

/// A warp tile that `ldmatrix` fills and `mma_sync` reads is loaded as
/// the product takes it: the ldmatrix of a transposed operand (`_trans`)
/// feeds a product of that operand transposed (`trans_a`, `trans_b`), a
/// plain one a plain product. The instruction that loads picks its lanes'
/// elements by the ldmatrix's flag and the product's flag only says, on
/// the simulator, how to read the tile: where they disagree the GPU
/// multiplies the transpose of what the simulator does.
fn warp_operand_layout(b: &Buffer, body: &Stmt) -> Result<(), Diagnostic> {
    let (mut loads, mut uses) = (Vec::new(), Vec::new());
    body.walk(&mut |s| {
        if let Stmt::Wmma(w) = s {
            match w.op {
                WmmaOp::LdMatrix { b: is_b, trans } if w.tiles[0].buffer == *b => loads.push((is_b, trans)),
                WmmaOp::MmaSync { trans_a, trans_b } => {
                    if w.tiles[1].buffer == *b {
                        uses.push((false, trans_a));
                    }
                    if w.tiles[2].buffer == *b {
                        uses.push((true, trans_b));
                    }
                }
                _ => {}
            }
        }
    });
    let name =
        |is_b: bool, trans: bool| format!("{}{}", if is_b { "B" } else { "A" }, if trans { " transposed" } else { "" });
    for &(lb, lt) in &loads {
        if let Some(&(ub, ut)) = uses.iter().find(|&&(ub, ut)| (ub, ut) != (lb, lt)) {
            return Err(Diagnostic::new(format!(
                "warp tile `{}` is loaded by ldmatrix as operand {} but multiplied by mma_sync as operand {}: the GPU would multiply another element than the simulator",
                b.name(),
                name(lb, lt),
                name(ub, ut)
            ))
            .help("tensorize the copy with the ldmatrix intrinsic of the product's layout (`_trans` for a transposed operand, the plain one otherwise)"));
        }
    }
    Ok(())
}

/// `wmma.load` and `wmma.store` take rows a multiple of 16 bytes apart (8
/// halves, 4 floats); others fault on the GPU (misaligned address), which
/// the simulator does not see.
fn wmma_row_stride(t: &Tile) -> Result<(), Diagnostic> {
    let per = 16 / t.buffer.dtype().bytes().max(1) as i64;
    match t.ldm.as_ref().and_then(|l| l.as_int()) {
        Some(l) if l % per != 0 => Err(Diagnostic::new(format!(
            "wmma loads and stores rows 16 bytes apart or a multiple of it, but the rows of `{}` are {l} elements apart, not a multiple of {per}",
            t.buffer.name()
        ))
        .help(format!("give the tile rows of a multiple of {per} elements (storage_align with an offset that is a multiple of {per})"))),
        _ => Ok(()),
    }
}

/// The C type of a warp buffer's registers and the elements in each:
/// float32 as `float`, float16 two to an `unsigned`.
/// The C type and length of the per-lane array that holds a warp buffer
/// of `size` elements: each lane a 32nd of it, halves packed two to a
/// register.
fn warp_array(b: &Buffer, size: i64) -> Result<(&'static str, i64), Diagnostic> {
    let (ty, per) = warp_type(b)?;
    let lanes = tirc_ir::wmma::LANES;
    Ok((ty, (size + lanes * per - 1) / (lanes * per)))
}

fn warp_type(b: &Buffer) -> Result<(&'static str, i64), Diagnostic> {
    match b.dtype() {
        DType::Float(32) => Ok(("float", 1)),
        DType::Float(16) | DType::BFloat16 => Ok(("unsigned", 2)),
        t => Err(Diagnostic::new(format!(
            "tirc's code generation has no warp buffer of {t} (`{}`): operands are float16, accumulators float32 or float16",
            b.name()
        ))),
    }
}

pub fn ctype(t: DType) -> Result<&'static str, Diagnostic> {
    t.info().map(|i| i.c_type).ok_or_else(|| Diagnostic::new(format!("CUDA has no type for {t}")))
}

fn float_lit(v: f64, t: DType) -> String {
    // Half-precision literals are float literals converted: a bare double
    // beside a `half` makes `*` ambiguous.
    if let Ok(narrow @ ("half" | "nv_bfloat16")) = ctype(t) {
        return format!("(({narrow}){})", float_lit(v, DType::F32));
    }
    let f32_ = t == DType::F32;
    // A float32 literal is its float32 value (`1e-46` is 0, `1e39` is
    // infinite): C reads a decimal past float's range as an error, and a
    // subnormal one exactly by its bits.
    let v = if f32_ { f64::from(v as f32) } else { v };
    if f32_ && v != 0.0 && v.abs() < f64::from(f32::MIN_POSITIVE) {
        return format!("__int_as_float(0x{:08x})", (v as f32).to_bits());
    }
    if !f32_ && v != 0.0 && v.abs() < f64::MIN_POSITIVE {
        return format!("__longlong_as_double(0x{:016x}LL)", v.to_bits());
    }
    if v.is_nan() {
        return if f32_ {
            "__int_as_float(0x7fc00000)".into()
        } else {
            "__longlong_as_double(0x7ff8000000000000LL)".into()
        };
    }
    if v.is_infinite() {
        let s = if f32_ { "__int_as_float(0x7f800000)" } else { "__longlong_as_double(0x7ff0000000000000LL)" };
        return if v > 0.0 { s.into() } else { format!("(-{s})") };
    }
    let mut s = if f32_ { format!("{:?}", v as f32) } else { format!("{v:?}") };
    if !s.contains(['.', 'e', 'E']) {
        s.push_str(".0");
    }
    if f32_ {
        s.push('f');
    }
    if v.is_sign_negative() {
        format!("({s})")
    } else {
        s
    }
}

impl Gen {
    /// A name for a variable or buffer of the IR, `base` where it is free
    /// and not `reserved`, else `base_1`, `base_2`, ... (no suffixed name
    /// is a word of C++ or a name the emitter writes).
    fn fresh(&mut self, base: &str) -> String {
        let base = sanitize(base);
        self.fresh_from(&base, reserved(&base))
    }

    /// `base` where it is free (and `taken` is false), else suffixed.
    fn fresh_from(&mut self, base: &str, taken: bool) -> String {
        let mut n = base.to_string();
        let mut i = 1;
        while (taken && i == 1) || self.taken.contains(&n) {
            n = format!("{base}_{i}");
            i += 1;
        }
        self.taken.insert(n.clone());
        n
    }

    fn var_name(&mut self, v: &Var) -> String {
        if let Some(n) = self.names.get(&v.key()) {
            return n.clone();
        }
        let n = self.fresh(v.name());
        self.names.insert(v.key(), n.clone());
        n
    }

    fn buf_name(&mut self, b: &Buffer) -> String {
        let key = b.key() ^ 1; // buffers and variables share the table
        if let Some(n) = self.names.get(&key) {
            return n.clone();
        }
        let n = self.fresh(b.name());
        self.names.insert(key, n.clone());
        n
    }

    fn line(&mut self, ind: usize, s: &str) {
        for _ in 0..ind {
            self.out.push_str("  ");
        }
        self.out.push_str(s);
        self.out.push('\n');
    }

    /// A vectorized loop `dst[b + v] = src[b' + v]` (or `= x` with `x` not
    /// depending on `v`, for floats) over 2, 4 or 8 elements of 4, 8 or 16
    /// bytes in all, as one vector load and store,
    /// when both sides are contiguous and aligned to the vector's size;
    /// `None` leaves the loop to scalar code.
    fn vector_copy(&mut self, l: &For) -> Result<Option<(String, bool)>, Diagnostic> {
        let (Some(0), Some(e)) = (l.min.as_int(), l.extent.as_int()) else { return Ok(None) };
        if !matches!(e, 2 | 4 | 8) {
            return Ok(None);
        }
        // A copy guarded by a condition that is the same for every element
        // of the vector (the row of a boundary tile, or a column bound that
        // a multiple of the vector ends) stays one vector copy, under the
        // condition at the first element.
        if let Stmt::If { cond, then, orelse: None } = &l.body {
            if !self.same_over_vector(cond, &l.var, e) {
                return Ok(None);
            }
            let inner = l.with_body((**then).clone());
            let Some((code, whole)) = self.vector_copy(&inner)? else { return Ok(None) };
            let first = self.at_lane(cond, &l.var, 0);
            return Ok(Some((format!("if ({}) {code}", self.expr(&first)?), whole)));
        }
        let Stmt::Store { buffer: dst, indices, value } = &l.body else { return Ok(None) };
        let t = dst.dtype();
        // float2 and float4 for float32; for other types the unsigned
        // vector of the same bytes (8 halves are one uint4).
        let bytes = e * t.bytes() as i64;
        if t.is_bool()
            || !matches!(bytes, 4 | 8 | 16)
            || dst.scope() != Scope::Global && dst.scope() != Scope::Shared
            || indices.len() != 1
        {
            return Ok(None);
        }
        let vt = match (t, bytes) {
            (DType::F32, _) => format!("float{e}"),
            (_, 16) => "uint4".into(),
            (_, 8) => "uint2".into(),
            _ => "unsigned".into(),
        };
        let Some(dbase) = self.vector_base(&indices[0], &l.var, e) else {
            return Ok(self.scattered_copy(l, dst, &indices[0], value, e, &vt)?.map(|c| (c, false)));
        };
        // A copy that fills zeros past the edge of its source
        // (`zero_fill_tiles`): `T.if_then_else(c, G[..], 0)`.
        let unfilled = |v: &Expr| match v.as_zero_fill() {
            Some((c, load)) => (Some(c.clone()), load.clone()),
            None => (None, v.clone()),
        };
        if let Expr::Call(Intrinsic::CpAsync, args) = value {
            let [arg] = &args[..] else { return Ok(None) };
            let (fill, load) = unfilled(arg);
            let Expr::Load(src, idx) = &load else { return Ok(None) };
            if src.dtype() != t || idx.len() != 1 {
                return Ok(None);
            }
            let Some(sbase) = self.vector_base(&idx[0], &l.var, e) else {
                return Ok(self
                    .gathered_copy(l, dst, &dbase, src, &idx[0], fill.as_ref(), e, &vt)?
                    .map(|c| (c, false)));
            };
            let (d, s) = (self.buf_name(dst), self.buf_name(src));
            let (di, si) = (swizzled(dst, self.expr(&dbase)?), swizzled(src, self.expr(&sbase)?));
            let Some(c) = fill else {
                return Ok(Some((format!("tirc_cp_async<{bytes}>({d} + {di}, {s} + {si});"), true)));
            };
            // Whole vectors in or out: one zero-fill copy, which reads
            // nothing (and from the buffer's start) where it is out.
            if !self.same_over_vector(&c, &l.var, e) {
                return Ok(None);
            }
            let c0 = self.expr(&self.at_lane(&c, &l.var, 0))?;
            return Ok(Some((
                format!("tirc_cp_async_zfill<{bytes}>({d} + {di}, {c0} ? {s} + {si} : {s}, {c0});"),
                true,
            )));
        }
        let (fill, plain) = unfilled(value);
        let rhs = match &plain {
            Expr::Load(src, idx) if src.dtype() == t && src.scope() != Scope::Local && idx.len() == 1 => {
                let Some(sbase) = self.vector_base(&idx[0], &l.var, e) else {
                    return Ok(self
                        .gathered_copy(l, dst, &dbase, src, &idx[0], fill.as_ref(), e, &vt)?
                        .map(|c| (c, false)));
                };
                let konst = if self.read_only.contains(src) { "const " } else { "" };
                let whole = format!("*({konst}{vt}*)({} + {})", self.buf_name(src), swizzled(src, self.expr(&sbase)?));
                match fill {
                    None => whole,
                    Some(c) if self.same_over_vector(&c, &l.var, e) => {
                        let c0 = self.at_lane(&c, &l.var, 0);
                        // float2/float4 for float32; for other types the
                        // unsigned vector of the same bytes, a word a lane.
                        let zero = match vt.as_str() {
                            "unsigned" => "0u".to_string(),
                            v if t == DType::F32 => format!("make_{v}({})", vec!["0.0f"; e as usize].join(", ")),
                            v => format!("make_{v}({})", vec!["0u"; bytes as usize / 4].join(", ")),
                        };
                        format!("({} ? {whole} : {zero})", self.expr(&c0)?)
                    }
                    Some(_) => return Ok(None),
                }
            }
            // The same value in every lane (the whole value, a select's
            // condition included).
            _ if !value.uses(&l.var) && value.dtype() == DType::F32 && t == DType::F32 => {
                let x = self.expr(value)?;
                format!("make_{vt}({})", vec![x; e as usize].join(", "))
            }
            _ => return Ok(None),
        };
        Ok(Some((format!("*({vt}*)({} + {}) = {rhs};", self.buf_name(dst), swizzled(dst, self.expr(&dbase)?)), true)))
    }

    /// A vector copy into shared memory from a source that is not
    /// contiguous or not aligned (the rows of a matrix of an odd length):
    /// the `e` elements loaded one by one into a float vector and stored as
    /// one, so that the tile keeps its vector stores. An asynchronous copy
    /// (`cp.async` of 4 bytes an element) becomes a synchronous one there:
    /// the pipeline stays correct (the data only arrives sooner) and a load
    /// of 4 bytes beats a `cp.async` of 4 bytes (H100: docs/benchmarks.md).
    #[allow(clippy::too_many_arguments)]
    fn gathered_copy(
        &mut self,
        l: &For,
        dst: &Buffer,
        dbase: &Expr,
        src: &Buffer,
        idx: &Expr,
        fill: Option<&Expr>,
        e: i64,
        vt: &str,
    ) -> Result<Option<String>, Diagnostic> {
        if !matches!(dst.scope(), Scope::Shared | Scope::Global) || src.scope() != Scope::Global {
            return Ok(None);
        }
        let mut elems = Vec::new();
        for k in 0..e {
            let at = |x: &Expr| self.at_lane(x, &l.var, k);
            let load = Expr::Load(src.clone(), vec![at(idx)]);
            // Past the edge of a zero-filled tile, the element is a zero.
            let elem = match fill.map(at) {
                Some(c) if c.as_bool() == Some(false) => Expr::zero(src.dtype()),
                Some(c) if c.as_bool() != Some(true) => {
                    Expr::Select(Box::new(c), Box::new(load), Box::new(Expr::zero(src.dtype())))
                }
                _ => load,
            };
            elems.push(self.expr(&elem)?);
        }
        let d = self.buf_name(dst);
        let at = swizzled(dst, self.expr(dbase)?);
        if dst.dtype() == DType::F32 {
            return Ok(Some(format!("*({vt}*)({d} + {at}) = make_{vt}({});", elems.join(", "))));
        }
        // Other types through an aligned array of the elements, which the
        // CUDA compiler keeps in registers.
        let ct = ctype(dst.dtype())?;
        Ok(Some(format!(
            "{{ __align__({}) {ct} tirc_v[{e}] = {{{}}}; *({vt}*)({d} + {at}) = *(const {vt}*)tirc_v; }}",
            e * dst.dtype().bytes() as i64,
            elems.join(", ")
        )))
    }

    /// A vector copy to a destination that is not aligned (the rows of an
    /// output of an odd length) from an aligned, contiguous source: one
    /// vector load, then the elements stored one by one.
    fn scattered_copy(
        &mut self,
        l: &For,
        dst: &Buffer,
        idx: &Expr,
        value: &Expr,
        e: i64,
        vt: &str,
    ) -> Result<Option<String>, Diagnostic> {
        let Expr::Load(src, sidx) = value else { return Ok(None) };
        if dst.scope() != Scope::Global || src.scope() != Scope::Global || src.dtype() != dst.dtype() || sidx.len() != 1
        {
            return Ok(None);
        }
        let Some(sbase) = self.vector_base(&sidx[0], &l.var, e) else { return Ok(None) };
        let ct = ctype(dst.dtype())?;
        let konst = if self.read_only.contains(src) { "const " } else { "" };
        let mut stores = Vec::new();
        let d = self.buf_name(dst);
        for k in 0..e {
            let i = self.at_lane(idx, &l.var, k);
            stores.push(format!("{d}[{}] = tirc_v[{k}];", self.expr(&i)?));
        }
        Ok(Some(format!(
            "{{ __align__({}) {ct} tirc_v[{e}]; *({vt}*)tirc_v = *({konst}{vt}*)({} + {}); {} }}",
            e * dst.dtype().bytes() as i64,
            self.buf_name(src),
            swizzled(src, self.expr(&sbase)?),
            stores.join(" ")
        )))
    }

    /// Whether `cond` has one value for `v` in `0..e`: each conjunct either
    /// does not change with `v`, or is `a < b` with `a - b` growing by one
    /// per element from a multiple of `e` (then no element of the vector
    /// can be the first to fail it).
    fn same_over_vector(&self, cond: &Expr, v: &Var, e: i64) -> bool {
        tirc_passes::arith::conjuncts(cond).iter().all(|c| {
            if !c.uses(v) {
                return true;
            }
            let Expr::Binary(op, a, b) = c else { return false };
            if !op.is_compare() || !a.dtype().is_int() {
                return false;
            }
            let at = |x: &Expr, k: i64| self.at_lane(x, v, k);
            let d = (**a).clone() - (**b).clone();
            let d0 = at(&d, 0);
            let step = |k: i64| self.an.simplify(&(at(&d, k) - d0.clone())).as_int();
            if (1..e).all(|k| step(k) == Some(0)) {
                return true;
            }
            *op == BinOp::Lt && (1..e).all(|k| step(k) == Some(k)) && self.multiple_of(&d0, e)
        })
    }

    /// `e` at lane `k` of the vectorized loop over `v`, simplified.
    fn at_lane(&self, e: &Expr, v: &Var, k: i64) -> Expr {
        self.an.simplify(&substitute(e, &[(v.clone(), Expr::int(k))]))
    }

    /// The start of a contiguous run `idx(v)`, v in 0..e, when it is a
    /// multiple of `e` elements.
    fn vector_base(&self, idx: &Expr, v: &Var, e: i64) -> Option<Expr> {
        let at = |k: i64| self.at_lane(idx, v, k);
        let base = at(0);
        for k in 1..e {
            if self.an.simplify(&(at(k) - base.clone())).as_int() != Some(k) {
                return None;
            }
        }
        self.multiple_of(&base, e).then_some(base)
    }

    /// Whether `x` is a multiple of `e` for every value of its variables
    /// (those `aligned` takes to be multiples counted as such): by the
    /// range analysis, or by the constant factors of its terms (`(r * 32 +
    /// ty) * ((n + 63) // 64 * 64) + tx * 4` is a multiple of 4, a product
    /// of run-time sizes that the analysis keeps whole).
    fn multiple_of(&self, x: &Expr, e: i64) -> bool {
        let x = self.modulo_aligned_sizes(x, e);
        let rem = self.an.simplify(&Expr::binary(BinOp::FloorMod, x.clone(), Expr::int(e)));
        rem.as_int() == Some(0) || constant_factor(&x) % e == 0
    }

    /// `x`, for a test of its remainder by `e`, with the run-time sizes
    /// `aligned` takes to be multiples of `e` set to 0 wherever they are
    /// terms or factors of its sums and products: those have the same
    /// remainder. A size under another operation (`(k + 31) // 32`) stays,
    /// as an opaque value.
    fn modulo_aligned_sizes(&self, x: &Expr, e: i64) -> Expr {
        let sizes: Vec<&Var> = self.aligned.iter().filter(|(_, d)| d % e == 0).map(|(v, _)| v).collect();
        fn zero(x: &Expr, sizes: &[&Var]) -> Expr {
            match x {
                Expr::Var(v) if sizes.contains(&v) => Expr::Int(0, v.dtype()),
                Expr::Binary(BinOp::Add | BinOp::Sub | BinOp::Mul, ..) => x.map_children(|c| zero(c, sizes)),
                _ => x.clone(),
            }
        }
        zero(x, &sizes)
    }

    /// A vectorized copy that is one vector access only where some run-time
    /// sizes in it are multiples of its width (the rows of `A[m, k]` are
    /// 16-byte aligned where `k % 4 == 0`): the test of the fewest such
    /// sizes, the same for every thread, and the vector copy under it. The
    /// caller writes the copy it had otherwise in the other branch.
    fn vector_copy_if_sizes_aligned(&mut self, l: &For) -> Result<Option<(String, String)>, Diagnostic> {
        let Some(e) = l.extent.as_int() else { return Ok(None) };
        let mut used: Vec<Var> = Vec::new();
        l.body.walk(&mut |st| {
            st.for_each_expr(|x| {
                x.walk(&mut |y| {
                    if let Expr::Var(v) = y {
                        if self.size_vars.contains(v) && !used.contains(v) {
                            used.push(v.clone());
                        }
                    }
                })
            })
        });
        if used.is_empty() || used.len() > 4 || e < 2 || self.sizes_decided {
            return Ok(None);
        }
        // Subsets of the sizes used, the fewest first.
        let mut subsets: Vec<Vec<Var>> = (1u32..1 << used.len())
            .map(|bits| used.iter().enumerate().filter(|(i, _)| bits & (1 << i) != 0).map(|(_, v)| v.clone()).collect())
            .collect();
        subsets.sort_by_key(|s: &Vec<Var>| s.len());
        for sizes in subsets {
            let before = self.aligned.len();
            self.aligned.extend(sizes.iter().map(|v| (v.clone(), e)));
            let fast = self.vector_copy(l);
            self.aligned.truncate(before);
            if let Some((code, true)) = fast? {
                if let Some(w) = &mut self.wanted {
                    w.extend(sizes.iter().map(|v| (v.clone(), e)));
                }
                let tests: Vec<String> = sizes.iter().map(|v| format!("{} % {e} == 0", self.var_name(v))).collect();
                return Ok(Some((tests.join(" && "), code)));
            }
        }
        Ok(None)
    }

    /// The kernel body `s` (below the launch head and the allocations,
    /// which stay shared), written once for each alignment of the run-time
    /// sizes its vector copies want aligned: `if (n % 4 == 0) { if (k % 4
    /// == 0) .. else .. } else ..`, each copy in each body one vector access
    /// or the element-wise copy, with no test of its own. A kernel whose
    /// copies want none is written once; one that wants more than three
    /// sizes, twice (all aligned, and copies that test their own).
    fn split_on_aligned_sizes(&mut self, s: &Stmt, ind: usize) -> Result<(), Diagnostic> {
        // Shared memory allocated below the split would be declared once
        // per body: such a kernel keeps the copy-by-copy tests.
        let mut shared_below = false;
        s.walk(&mut |x| shared_below |= matches!(x, Stmt::Allocate { buffer, .. } if buffer.scope() == Scope::Shared));
        if shared_below {
            return self.stmt(s, ind);
        }
        let mut dry = self.clone();
        dry.wanted = Some(Vec::new());
        dry.stmt(s, ind)?;
        let mut tests: Vec<(Var, i64)> = Vec::new();
        for (v, e) in dry.wanted.unwrap_or_default() {
            match tests.iter_mut().find(|(x, _)| *x == v) {
                Some((_, d)) => *d = tirc_ir::expr::lcm(*d, e),
                None => tests.push((v, e)),
            }
        }
        if tests.len() <= 3 {
            return self.split_on_each(s, ind, &tests);
        }
        let test: Vec<String> = tests.iter().map(|(v, d)| format!("{} % {d} == 0", self.var_name(v))).collect();
        self.line(ind, &format!("if ({}) {{", test.join(" && ")));
        let before = self.aligned.len();
        self.aligned.extend(tests);
        self.scoped(s, ind + 1)?;
        self.aligned.truncate(before);
        self.line(ind, "} else {");
        self.scoped(s, ind + 1)?;
        self.line(ind, "}");
        Ok(())
    }

    /// `s` branched on the first test of `tests`, then on the others in
    /// each branch; at the leaves every test is decided.
    fn split_on_each(&mut self, s: &Stmt, ind: usize, tests: &[(Var, i64)]) -> Result<(), Diagnostic> {
        let Some(((v, d), rest)) = tests.split_first() else {
            let decided = std::mem::replace(&mut self.sizes_decided, true);
            let r = self.stmt(s, ind);
            self.sizes_decided = decided;
            return r;
        };
        let name = self.var_name(v);
        self.line(ind, &format!("if ({name} % {d} == 0) {{"));
        self.declared.push(Vec::new());
        self.aligned.push((v.clone(), *d));
        self.split_on_each(s, ind + 1, rest)?;
        self.aligned.pop();
        self.declared.pop();
        self.line(ind, "} else {");
        self.declared.push(Vec::new());
        self.split_on_each(s, ind + 1, rest)?;
        self.declared.pop();
        self.line(ind, "}");
        Ok(())
    }

    /// A loop as a C `for` (`#pragma unroll` where it is unrolled).
    fn serial_loop(&mut self, l: &For, ind: usize) -> Result<(), Diagnostic> {
        let v = self.var_name(&l.var);
        let min = self.expr(&l.min)?;
        let end = match (l.min.as_int(), l.extent.as_int()) {
            (Some(a), Some(b)) => (a + b).to_string(),
            _ => self.expr(&self.an.simplify(&(l.min.clone() + l.extent.clone())))?,
        };
        match l.kind {
            ForKind::Unrolled | ForKind::Vectorized => self.line(ind, "#pragma unroll"),
            ForKind::ThreadBinding(t) => {
                return Err(Diagnostic::new(format!(
                    "loop `{}` is still bound to {}: run extract_launch before codegen",
                    l.var.name(),
                    t.name()
                )))
            }
            _ => {}
        }
        let it = self.index_type;
        self.line(ind, &format!("for ({it} {v} = {min}; {v} < {end}; ++{v}) {{"));
        self.an.bind_range(&l.var, &l.min, &l.extent);
        // A loop that issues wgmma has products in flight at the
        // top of its body from the iteration before.
        let mut issues = false;
        l.body.walk(&mut |x| issues |= matches!(x, Stmt::Wmma(w) if w.op.wgmma_tiles() > 0));
        self.wgmma_pending |= issues;
        self.scoped(&l.body, ind + 1)?;
        self.an.unbind(&l.var);
        self.line(ind, "}");
        Ok(())
    }

    /// `s` as the body of a new C scope (a loop's, a branch's).
    fn scoped(&mut self, s: &Stmt, ind: usize) -> Result<(), Diagnostic> {
        self.declared.push(Vec::new());
        let r = self.stmt(s, ind);
        self.declared.pop();
        r
    }

    fn stmt(&mut self, s: &Stmt, ind: usize) -> Result<(), Diagnostic> {
        if self.split_pending && !matches!(s, Stmt::Allocate { .. }) {
            self.split_pending = false;
            return self.split_on_aligned_sizes(s, ind);
        }
        if self.side_split_pending && !matches!(s, Stmt::Allocate { .. }) {
            self.side_split_pending = false;
            return self.split_sides(s, ind);
        }
        let ws_loop = match s {
            Stmt::For(l) => tirc_ir::launch::warp_specialized(l).map(|v| (l, v)),
            _ => None,
        };
        let copy = match s {
            Stmt::Store { buffer, indices, value } => {
                crate::warp_specialized::copy_of(buffer, value).map(|c| (c, buffer, indices))
            }
            _ => None,
        };
        match self.side {
            Side::Producer if !crate::warp_specialized::has_producer_work(s) => return Ok(()),
            Side::Producer => {
                if let Some((l, v)) = ws_loop {
                    return self.producer_loop(l, v, ind);
                }
                if let Some((c, buffer, indices)) = copy {
                    return self.tma_copy(&c, buffer, indices, ind);
                }
            }
            Side::Consumer => {
                if let Some((l, v)) = ws_loop {
                    return self.consumer_loop(l, v, ind);
                }
                if copy.is_some() {
                    return Ok(());
                }
            }
            Side::Both if copy.is_some() || ws_loop.is_some() => {
                return Err(Diagnostic::new(
                    "a bulk tensor copy (`T.tma_load`) outside a warp-specialized loop: only the loop's producer issues them",
                ))
            }
            Side::Both => {}
        }
        self.stmt_inner(s, ind)
    }

    /// `__syncthreads()`, or among the consumers of a warp-specialized
    /// kernel, the named barrier of their threads alone.
    fn block_sync(&self) -> String {
        match self.side {
            Side::Consumer => format!("asm volatile(\"bar.sync 1, {};\" ::: \"memory\");", self.consumers),
            _ => "__syncthreads();".into(),
        }
    }

    /// The body of a warp-specialized kernel below its allocations: the
    /// mbarriers set up, then the producer's side and the consumers'.
    fn split_sides(&mut self, s: &Stmt, ind: usize) -> Result<(), Diagnostic> {
        let loops = tirc_ir::launch::warp_specialized_loops(s);
        let Some(v) = loops.iter().filter_map(|l| tirc_ir::launch::warp_specialized(l)).max() else {
            return self.stmt(s, ind);
        };
        let c = self.consumers;
        if c % 32 != 0 || !(1..=32).contains(&v) {
            return Err(Diagnostic::new(format!(
                "a warp-specialized kernel needs whole warps of consumers ({c} threads) and 1 to 32 tile versions ({v})"
            )));
        }
        match self.barrier_offset {
            Some(off) => {
                self.line(
                    ind,
                    &format!(
                        "unsigned long long* tirc_full = reinterpret_cast<unsigned long long*>(tirc_dyn_smem + {off});"
                    ),
                );
                self.line(ind, &format!("unsigned long long* tirc_empty = tirc_full + {v};"));
            }
            None => {
                self.line(ind, &format!("__shared__ __align__(8) unsigned long long tirc_full[{v}], tirc_empty[{v}];"))
            }
        }
        self.line(
            ind,
            "const int tirc_tid = (int)((threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x);",
        );
        self.line(ind, "if (tirc_tid == 0) {");
        self.line(
            ind + 1,
            &format!(
                "for (int i = 0; i < {v}; ++i) {{ tirc_mbar_init(&tirc_full[i], 1); tirc_mbar_init(&tirc_empty[i], {}); }}",
                c / 32
            ),
        );
        self.line(ind + 1, "tirc_mbar_fence_init();");
        self.line(ind, "}");
        self.line(ind, "__syncthreads();");
        // The producer keeps few registers and gives the rest to the
        // consumers (sm_90a), where that is more than they have at entry.
        let producers = tirc_ir::launch::producer_threads(self.warp_tiles, c);
        let rebalance = register_handover(c, producers);
        self.handover |= rebalance.is_some();
        self.line(ind, &format!("if (tirc_tid >= {c}) {{"));
        if rebalance.is_some() {
            self.line(ind + 1, &format!("asm volatile(\"setmaxnreg.dec.sync.aligned.u32 {PRODUCER_REGISTERS};\");"));
        }
        self.line(ind + 1, &format!("if (tirc_tid == {c}) {{"));
        self.line(ind + 2, "unsigned tirc_empty_phase = 0u, tirc_used = 0u;");
        self.side = Side::Producer;
        let r = self.scoped(s, ind + 2);
        self.side = Side::Both;
        r?;
        self.line(ind + 1, "}");
        self.line(ind, "} else {");
        if let Some(given) = rebalance {
            self.line(ind + 1, &format!("asm volatile(\"setmaxnreg.inc.sync.aligned.u32 {given};\");"));
        }
        self.line(ind + 1, "unsigned tirc_full_phase = 0u;");
        self.side = Side::Consumer;
        let r = self.scoped(s, ind + 1);
        self.side = Side::Both;
        r?;
        self.line(ind, "}");
        Ok(())
    }

    /// The head of a warp-specialized loop `l`, either side's: the C `for`
    /// (with `#pragma unroll` where it is unrolled), its variable bound for
    /// the analyzer, and the iteration's tile version as a constant; returns
    /// the loop variable, its start and the version's name.
    fn ws_loop_head(&mut self, l: &For, versions: i64, ind: usize) -> Result<(String, String, String), Diagnostic> {
        let k = self.var_name(&l.var);
        let min = self.expr(&l.min)?;
        let end = self.expr(&self.an.simplify(&(l.min.clone() + l.extent.clone())))?;
        if l.kind == ForKind::Unrolled {
            self.line(ind, "#pragma unroll");
        }
        let it = self.index_type;
        self.line(ind, &format!("for ({it} {k} = {min}; {k} < {end}; ++{k}) {{"));
        self.an.bind_range(&l.var, &l.min, &l.extent);
        // tirc's own name: not reserved from itself.
        let s = self.fresh_from("tirc_s", false);
        self.line(ind + 1, &format!("const int {s} = ({k} - {min}) % {versions};"));
        Ok((k, min, s))
    }

    /// The producer's warp-specialized loop: each iteration waits until the
    /// consumers released the version its copies fill, issues them (each
    /// announcing its bytes first) and arrives.
    fn producer_loop(&mut self, l: &For, versions: i64, ind: usize) -> Result<(), Diagnostic> {
        let (_, _, s) = self.ws_loop_head(l, versions, ind)?;
        self.line(
            ind + 1,
            &format!("if (tirc_used >> {s} & 1u) {{ tirc_mbar_wait(&tirc_empty[{s}], tirc_empty_phase >> {s} & 1u); tirc_empty_phase ^= 1u << {s}; }}"),
        );
        self.line(ind + 1, &format!("tirc_used |= 1u << {s};"));
        self.producer_slot = Some(s.clone());
        let r = self.scoped(&l.body, ind + 1);
        self.producer_slot = None;
        self.an.unbind(&l.var);
        r?;
        self.line(ind + 1, &format!("tirc_mbar_arrive(&tirc_full[{s}]);"));
        self.line(ind, "}");
        Ok(())
    }

    /// One bulk tensor copy, completing on the full barrier of the
    /// producer's current version, its bytes announced there first.
    fn tma_copy(
        &mut self,
        c: &crate::warp_specialized::Copy,
        buffer: &Buffer,
        indices: &[Expr],
        ind: usize,
    ) -> Result<(), Diagnostic> {
        // The map of this source: two operands of one shape, box and type
        // (A and B of a square product with square tiles) have one each.
        let param = self.tmap_sources.iter().position(|p| p == c.src);
        let Some(m) = self.tmaps.iter().position(|m| {
            Some(m.param) == param
                && m.shape == c.shape
                && m.boxed == c.boxed
                && m.swizzle == c.dst.swizzle()
                && m.dtype == c.src.dtype()
        }) else {
            return Err(Diagnostic::new(format!("no tensor map for the copy of `{}`", c.src.name())));
        };
        let Some(slot) = self.producer_slot.clone() else {
            return Err(Diagnostic::new("a bulk tensor copy outside its warp-specialized loop"));
        };
        let dst = format!("{} + {}", self.buf_name(buffer), self.index(indices)?);
        // The box's coordinates, innermost first.
        let mut args = Vec::new();
        for e in c.coords.iter().rev() {
            args.push(format!("(int)({})", self.expr(e)?));
        }
        let bytes = c.boxed.iter().product::<i64>() * buffer.dtype().bytes() as i64;
        self.line(ind, &format!("tirc_mbar_expect_bytes(&tirc_full[{slot}], {bytes}u);"));
        self.line(ind, &format!("tirc_tma_load({dst}, &tirc_tmap_{m}, {}, &tirc_full[{slot}]);", args.join(", ")));
        Ok(())
    }

    /// The consumers' warp-specialized loop: each iteration waits for its
    /// copies, runs the body and releases the version it read (with wgmma
    /// products in flight, the version of the iteration before, once they
    /// are done).
    fn consumer_loop(&mut self, l: &For, versions: i64, ind: usize) -> Result<(), Diagnostic> {
        let in_flight = if self.wgmma { self.wgmma_in_flight } else { 0 };
        // `tirc.promote_every`: the wgmma accumulators and their promoted
        // copies (C name, registers a lane).
        let promote = tirc_ir::launch::promote_every(l).map_err(Diagnostic::new)?;
        let mut accs: Vec<(String, String, i64)> = Vec::new();
        if let Some(p) = promote {
            let mut bufs: Vec<Buffer> = Vec::new();
            l.body.walk(&mut |x| {
                if let Stmt::Wmma(w) = x {
                    if w.op.wgmma_tiles() > 0 && !bufs.contains(&w.tiles[0].buffer) {
                        bufs.push(w.tiles[0].buffer.clone());
                    }
                }
            });
            if bufs.is_empty() {
                return Err(Diagnostic::new(format!(
                    "loop `{}` promotes its accumulators every {p} iterations, but has no wgmma products",
                    l.var.name()
                )));
            }
            // Only the products may touch the accumulators inside the
            // loop: a store, fill or read there would see them restarted,
            // and one declared there would not outlive it.
            let touched = |x: &Stmt| -> Option<Buffer> {
                match x {
                    Stmt::Wmma(w) if w.op.wgmma_tiles() > 0 => None,
                    Stmt::Wmma(w) => w.tiles.iter().map(|t| &t.buffer).find(|b| bufs.contains(b)).cloned(),
                    Stmt::Allocate { buffer, .. } | Stmt::Store { buffer, .. } if bufs.contains(buffer) => {
                        Some(buffer.clone())
                    }
                    _ => {
                        let mut read = None;
                        x.for_each_expr(|e| {
                            e.walk(&mut |y| match y {
                                Expr::Load(b, _) if bufs.contains(b) && read.is_none() => read = Some(b.clone()),
                                _ => {}
                            })
                        });
                        read
                    }
                }
            };
            let mut other = None;
            l.body.walk(&mut |x| {
                if other.is_none() {
                    other = touched(x);
                }
            });
            if let Some(b) = other {
                return Err(Diagnostic::new(format!(
                    "loop `{}` promotes its accumulators every {p} iterations, but `{}` is declared, read or written \
                     in it by more than its wgmma products: promotion restarts it from zero",
                    l.var.name(),
                    b.name()
                )));
            }
            for b in bufs {
                let size = b.num_elements().ok_or_else(|| Diagnostic::new("an accumulator of run-time size"))?;
                let (ty, len) = warp_array(&b, size)?;
                let n = self.buf_name(&b);
                // Fresh: two promoted loops may share a scope.
                let promoted = self.fresh(&format!("{n}_promoted"));
                self.line(ind, &format!("{ty} {promoted}[{len}];"));
                self.line(ind, "#pragma unroll");
                self.line(ind, &format!("for (int tirc_r = 0; tirc_r < {len}; ++tirc_r) {promoted}[tirc_r] = 0.0f;"));
                accs.push((n, promoted, len));
            }
        }
        let (k, min, s) = self.ws_loop_head(l, versions, ind)?;
        self.line(ind + 1, &format!("tirc_mbar_wait(&tirc_full[{s}], tirc_full_phase >> {s} & 1u);"));
        self.line(ind + 1, &format!("tirc_full_phase ^= 1u << {s};"));
        if self.wgmma {
            self.line(ind + 1, "tirc_wgmma_fence();");
        }
        let r = self.scoped(&l.body, ind + 1);
        self.an.unbind(&l.var);
        r?;
        let release = |v: &str| format!("__syncwarp(); if (tirc_tid % 32 == 0) tirc_mbar_arrive(&tirc_empty[{v}]);");
        if self.wgmma {
            self.line(ind + 1, "tirc_wgmma_commit();");
            self.line(ind + 1, &format!("tirc_wgmma_wait<{in_flight}>();"));
        }
        if let Some(p) = promote {
            // All products done, the accumulators added into their
            // promoted copies and restarted (the next iteration's fence
            // orders these writes before its products).
            self.line(ind + 1, &format!("if (({k} - {min} + 1) % {p} == 0) {{"));
            self.line(ind + 2, "tirc_wgmma_wait<0>();");
            for (n, promoted, len) in &accs {
                self.line(ind + 2, "#pragma unroll");
                self.line(
                    ind + 2,
                    &format!("for (int tirc_r = 0; tirc_r < {len}; ++tirc_r) {{ {promoted}[tirc_r] += {n}[tirc_r]; {n}[tirc_r] = 0.0f; }}"),
                );
            }
            self.line(ind + 1, "}");
        }
        if in_flight > 0 {
            let prev = format!("({k} - {min} + {}) % {versions}", versions - 1);
            self.line(ind + 1, &format!("if ({k} > {min}) {{ {} }}", release(&prev)));
        } else {
            self.line(ind + 1, &release(&s));
        }
        self.line(ind, "}");
        if in_flight > 0 {
            self.line(ind, "tirc_wgmma_wait<0>();");
            // The last iteration's version, released once its products are
            // done (the producer of a loop that runs again waits for it).
            match l.extent.as_int() {
                Some(n) if n > 0 => self.line(ind, &release(&((n - 1).rem_euclid(versions)).to_string())),
                Some(_) => {}
                None => {
                    let n = self.expr(&l.extent)?;
                    self.line(ind, &format!("if ({n} > 0) {{ {} }}", release(&format!("(({n}) - 1) % {versions}"))));
                }
            }
        }
        for (n, promoted, len) in &accs {
            self.line(ind, "#pragma unroll");
            self.line(
                ind,
                &format!("for (int tirc_r = 0; tirc_r < {len}; ++tirc_r) {n}[tirc_r] += {promoted}[tirc_r];"),
            );
        }
        self.wgmma_pending = false;
        Ok(())
    }

    fn stmt_inner(&mut self, s: &Stmt, ind: usize) -> Result<(), Diagnostic> {
        match s {
            Stmt::Seq(v) => {
                for x in v {
                    self.stmt(x, ind)?;
                }
            }
            Stmt::NoOp => {}
            // With wgmma in flight, a barrier first commits the products
            // issued since the last one as a group and waits for all groups
            // but the newest `wgmma_in_flight` (they read the shared tiles the
            // barrier lets be rewritten), and makes this thread's
            // shared-memory writes visible to the tensor cores' proxy; the
            // products after it are fenced once.
            Stmt::Barrier if self.wgmma => {
                self.line(ind, "tirc_wgmma_commit();");
                let n = if self.wgmma_pending { self.wgmma_in_flight } else { 0 };
                self.line(ind, &format!("tirc_wgmma_wait<{n}>();"));
                self.line(ind, "tirc_fence_proxy_async();");
                let sync = self.block_sync();
                self.line(ind, &sync);
                self.line(ind, "tirc_wgmma_fence();");
            }
            Stmt::Barrier => {
                let sync = self.block_sync();
                self.line(ind, &sync)
            }
            Stmt::AsyncCommit => self.line(ind, "tirc_cp_async_commit();"),
            Stmt::AsyncWait(n) => self.line(ind, &format!("tirc_cp_async_wait<{n}>();")),
            Stmt::Wmma(w) => self.wmma(w, ind)?,
            Stmt::Store { buffer, indices, value: Expr::Call(Intrinsic::CpAsync, args) }
                if matches!(&args[..], [Expr::Load(..)]) && matches!(buffer.dtype().bytes(), 4 | 8 | 16) =>
            {
                let Expr::Load(src, idx) = &args[0] else { unreachable!("matched above") };
                let (b, i) = (self.buf_name(buffer), swizzled(buffer, self.index(indices)?));
                let (sb, si) = (self.buf_name(src), swizzled(src, self.index(idx)?));
                let n = buffer.dtype().bytes();
                self.line(ind, &format!("tirc_cp_async<{n}>({b} + {i}, {sb} + {si});"));
            }
            // The zero-fill form, for an element past the edge of the
            // source (`zero_fill_tiles`): it reads nothing there.
            Stmt::Store { buffer, indices, value: Expr::Call(Intrinsic::CpAsync, args) }
                if matches!(&args[..], [x] if x.as_zero_fill().is_some())
                    && matches!(buffer.dtype().bytes(), 4 | 8 | 16) =>
            {
                let Some((c, Expr::Load(src, idx))) = args[0].as_zero_fill() else { unreachable!("matched above") };
                let (b, i) = (self.buf_name(buffer), swizzled(buffer, self.index(indices)?));
                let (sb, si) = (self.buf_name(src), swizzled(src, self.index(idx)?));
                let (n, c) = (buffer.dtype().bytes(), self.expr(c)?);
                self.line(ind, &format!("tirc_cp_async_zfill<{n}>({b} + {i}, {c} ? {sb} + {si} : {sb}, {c});"));
            }
            Stmt::Store { buffer, indices, value } => {
                let b = self.buf_name(buffer);
                let i = swizzled(buffer, self.index(indices)?);
                let v = self.expr(value)?;
                self.line(ind, &format!("{b}[{i}] = {v};"));
            }
            Stmt::If { cond, then, orelse } => {
                // Warp-tile operations under a condition in a kernel that
                // issues wgmma: every warp of the warpgroup waits for the
                // products before the `if` and fences after it.
                let mut tiles = (false, false);
                s.walk(&mut |x| {
                    if let Stmt::Wmma(w) = x {
                        if w.op.wgmma_tiles() > 0 {
                            tiles.1 = true;
                        } else {
                            tiles.0 = true;
                        }
                    }
                });
                let settle = self.wgmma && !self.wgmma_settled && tiles.0 && !tiles.1;
                if settle {
                    self.line(ind, "tirc_wgmma_commit();");
                    self.line(ind, "tirc_wgmma_wait<0>();");
                    self.wgmma_pending = false;
                    self.wgmma_settled = true;
                }
                let c = self.expr(cond)?;
                self.line(ind, &format!("if ({c}) {{"));
                let r = self.scoped(then, ind + 1).and_then(|()| match orelse {
                    Some(e) => {
                        self.line(ind, "} else {");
                        self.scoped(e, ind + 1)
                    }
                    None => Ok(()),
                });
                self.line(ind, "}");
                if settle {
                    self.wgmma_settled = false;
                    self.line(ind, "tirc_wgmma_fence();");
                }
                r?;
            }
            Stmt::For(l) if l.kind == ForKind::Vectorized => {
                let plain = self.vector_copy(l)?;
                // Not one vector access for every value of the run-time
                // sizes: one where they are multiples of its width.
                if !matches!(plain, Some((_, true))) {
                    if let Some((test, fast)) = self.vector_copy_if_sizes_aligned(l)? {
                        self.line(ind, &format!("if ({test}) {{"));
                        self.line(ind + 1, &fast);
                        self.line(ind, "} else {");
                        match plain {
                            Some((code, _)) => self.line(ind + 1, &code),
                            None => self.serial_loop(l, ind + 1)?,
                        }
                        self.line(ind, "}");
                        return Ok(());
                    }
                }
                match plain {
                    Some((code, _)) => self.line(ind, &code),
                    None => self.serial_loop(l, ind)?,
                }
            }
            Stmt::For(l) => self.serial_loop(l, ind)?,
            Stmt::Let { var, value, body } => {
                let v = self.var_name(var);
                let x = self.expr(value)?;
                let t = ctype(var.dtype())?;
                self.line(ind, &format!("{t} {v} = {x};"));
                if let Some(b) = self.an.bound(value) {
                    self.an.bind(var, b.0, b.1);
                }
                self.stmt(body, ind)?;
            }
            Stmt::Allocate { buffer, body } => {
                let n = self.buf_name(buffer);
                let taken = self.declared.last().is_some_and(|d| d.contains(&n));
                if taken && buffer.scope() != Scope::Global {
                    self.line(ind, "{");
                    self.declared.push(Vec::new());
                    let r = self.stmt(s, ind + 1);
                    self.declared.pop();
                    self.line(ind, "}");
                    return r;
                }
                if let Some(d) = self.declared.last_mut() {
                    d.push(n.clone());
                }
                let t = ctype(buffer.dtype())?;
                let size = match (buffer.num_elements(), buffer.scope()) {
                    (Some(n), _) => n,
                    // Global scratch is an argument, sized by the launcher.
                    (None, Scope::Global) => 0,
                    (None, _) => {
                        return Err(Diagnostic::new(format!(
                            "buffer `{}` in {} memory has no constant size to allocate",
                            buffer.name(),
                            buffer.scope().name()
                        ))
                        .help("its shape depends on a run-time size; tile the loops that use it so that it holds one tile of constant size"))
                    }
                };
                match buffer.scope() {
                    Scope::Shared => match self.dynamic.iter().find(|(b, _)| b == buffer) {
                        Some((_, off)) => {
                            self.line(ind, &format!("{t}* {n} = reinterpret_cast<{t}*>(tirc_dyn_smem + {off});"))
                        }
                        None => {
                            let align = tirc_ir::launch::shared_alignment(buffer, &self.tma_dsts);
                            self.line(ind, &format!("__shared__ __align__({align}) {t} {n}[{size}];"))
                        }
                    },
                    Scope::Local => self.line(ind, &format!("{t} {n}[{size}];")),
                    // A kernel argument (see `scratch`).
                    Scope::Global => {}
                    // An array of 16×16 fragments, one per tile.
                    Scope::WmmaMatrixA | Scope::WmmaMatrixB | Scope::WmmaAccumulator => {
                        let ty = fragment_type(buffer, body)?;
                        let tile = TILE * TILE;
                        self.line(ind, &format!("{ty} {n}[{}];", (size + tile - 1) / tile));
                    }
                    // A warp tile: each lane holds 8 of its 256 elements,
                    // halves packed two to a register.
                    Scope::Warp => {
                        let (ty, len) = warp_array(buffer, size)?;
                        warp_operand_layout(buffer, body)?;
                        self.line(ind, &format!("{ty} {n}[{len}];"));
                    }
                }
                self.stmt(body, ind)?;
            }
            Stmt::Launch { tag, .. } => {
                return Err(Diagnostic::new(format!(
                    "a launch of {} inside the kernel body: launches must head the function",
                    tag.name()
                )))
            }
            Stmt::Block(r) => {
                return Err(Diagnostic::new(format!(
                    "block `{}` is left: lower the function before codegen",
                    r.block.name
                )))
            }
        }
        Ok(())
    }

    /// A tensor-core operation as the `nvcuda::wmma` call that does it.
    fn wmma(&mut self, w: &Wmma, ind: usize) -> Result<(), Diagnostic> {
        if let Some(t) = w.tiles.iter().find(|t| t.buffer.swizzle() != 0) {
            if w.op.wgmma_tiles() == 0 && !w.op.reads_swizzled(t.buffer.dtype()) {
                return Err(Diagnostic::new(format!(
                    "{} reads the swizzled buffer `{}`, which only wgmma's descriptors can describe",
                    w.op.name(),
                    t.buffer.name()
                ))
                .help("leave out storage_swizzle on buffers that ldmatrix or wmma reads"));
            }
        }
        if let WmmaOp::Wgmma { n, trans_b } = w.op {
            return self.wgmma_op(w, n, trans_b, ind);
        }
        // Any other access to warp tiles waits for the products in flight
        // (it may read their accumulators), and fences the next ones.
        let own = self.wgmma && !self.wgmma_settled;
        if own {
            self.line(ind, "tirc_wgmma_commit();");
            self.line(ind, "tirc_wgmma_wait<0>();");
            self.wgmma_pending = false;
        }
        let r = self.wmma_sync(w, ind);
        if own {
            self.line(ind, "tirc_wgmma_fence();");
        }
        r
    }

    /// `wgmma.mma_async` for the warp's part: one instruction a
    /// warpgroup, its accumulators the warp tiles from the first, its
    /// descriptors those of the first warp's A tile (16 rows a warp above
    /// this warp's) and of the B tiles.
    fn wgmma_op(&mut self, w: &Wmma, n: i64, trans_b: bool, ind: usize) -> Result<(), Diagnostic> {
        let t = w.op.wgmma_tiles();
        let (a, b) = (&w.tiles[t], &w.tiles[t + 1]);
        let dtype = a.buffer.dtype();
        let (c0, _) = flat_tile(&w.tiles[0])?;
        let (b0, ldm_b) = flat_tile(b)?;
        let (a0, ldm_a) = flat_tile(a)?;
        w.wgmma_operand_layout().map_err(Diagnostic::new)?;
        // The tiles the instruction covers must be where its operands'
        // layouts put them: the accumulators of each lane one after the
        // other; B's 16-row tiles one after the other (stored n × k), or
        // (stored k × n) its 16-column tiles side by side in atoms of one
        // 128-byte line, the atoms `lbo` elements apart (the one swizzle
        // tirc reads B MN-major from, as measured on the H100).
        let atom_cols = 128 / dtype.bytes() as i64;
        let atom = (atom_cols / TILE) as usize;
        let lbo = if !trans_b && t > atom {
            let (next, _) = flat_tile(&w.tiles[t + 1 + atom])?;
            self.an.simplify(&(next - b0.clone())).as_int()
        } else {
            Some(0)
        };
        let atom_start = self.an.simplify(&Expr::binary(BinOp::FloorMod, b0.clone(), Expr::int(atom_cols))).as_int();
        if !trans_b && (b.buffer.swizzle() != 128 || lbo.is_none() || atom_start != Some(0)) {
            return Err(Diagnostic::new(format!(
                "wgmma's B tile of `{}` (stored k × n) must be swizzled by 128 bytes and start an atom of {atom_cols} columns, the atoms a constant stride apart",
                b.buffer.name()
            )));
        }
        let lbo = lbo.unwrap_or(0);
        for j in 1..t {
            let (cj, _) = flat_tile(&w.tiles[j])?;
            let (bj, _) = flat_tile(&w.tiles[t + 1 + j])?;
            let dc = self.an.simplify(&(cj - c0.clone())).as_int();
            let want = if trans_b {
                Expr::int(16 * j as i64) * ldm_b.clone()
            } else {
                Expr::int(TILE * (j % atom) as i64 + lbo * (j / atom) as i64)
            };
            let db = self.an.simplify(&(bj - b0.clone() - want)).as_int();
            if dc != Some(256 * j as i64) || db != Some(0) {
                return Err(Diagnostic::new(format!(
                    "wgmma's tile {j} of `{}` or of `{}` does not follow the one before it",
                    w.tiles[0].buffer.name(),
                    b.buffer.name()
                )));
            }
        }
        if !self.wgmma_helpers.contains(&(n, dtype, trans_b)) {
            self.wgmma_helpers.push((n, dtype, trans_b));
        }
        self.wgmma_pending = true;
        // The lane's registers of the first tile: its offset over the 32
        // lanes, as for the other warp-level operations (a buffer that
        // holds several warps' tiles puts a warp's tiles `threadIdx.y`
        // times theirs on).
        let (_, per) = warp_type(&w.tiles[0].buffer)?;
        let ck = self.an.simplify(&Expr::binary(BinOp::FloorDiv, c0, Expr::int(tirc_ir::wmma::LANES * per)));
        let c = format!("{} + {}", self.buf_name(&w.tiles[0].buffer), self.expr(&ck)?);
        let (sa, sb) = (a.buffer.swizzle(), b.buffer.swizzle());
        let pa = format!(
            "{} + {} - tirc_warp_in_group() * {}",
            self.buf_name(&a.buffer),
            self.expr(&a0)?,
            self.expr(&(Expr::int(16) * ldm_a))?
        );
        let pb = format!("{} + {}", self.buf_name(&b.buffer), self.expr(&b0)?);
        let ty = match dtype {
            DType::BFloat16 => "bf16",
            DType::F32 => "tf32",
            _ => "f16",
        };
        if dtype == DType::F32 {
            // Two m64nNk8, the second's operands 8 floats (32 bytes) on.
            let pa8 = format!("{pa} + 8");
            let pb8 = format!("{pb} + 8");
            self.line(
                ind,
                &format!(
                    "tirc_wgmma_m64n{n}k16_tf32({c}, tirc_wgmma_desc<{sa}>({pa}), tirc_wgmma_desc<{sb}>({pb}), tirc_wgmma_desc<{sa}>({pa8}), tirc_wgmma_desc<{sb}>({pb8}));"
                ),
            );
            return Ok(());
        }
        // B stored k × n: MN-major, the atoms `lbo` apart.
        let (db, mn) = if trans_b {
            (format!("tirc_wgmma_desc<{sb}>({pb})"), "")
        } else {
            (format!("tirc_wgmma_desc<{sb}>({pb}, {})", lbo * dtype.bytes() as i64), "_mn")
        };
        self.line(ind, &format!("tirc_wgmma_m64n{n}k16_{ty}{mn}({c}, tirc_wgmma_desc<{sa}>({pa}), {db});"));
        Ok(())
    }

    /// The warp-level operations (wmma, mma.sync) as their helpers' calls.
    fn wmma_sync(&mut self, w: &Wmma, ind: usize) -> Result<(), Diagnostic> {
        let frag = |g: &mut Self, t: &Tile| -> Result<String, Diagnostic> {
            // The tile's number among the fragment array's tiles, row by row.
            let (flat, ldm) = flat_tile(t)?;
            let ldm16 = Expr::binary(BinOp::FloorDiv, ldm.clone(), Expr::int(TILE));
            let row = Expr::binary(
                BinOp::FloorDiv,
                Expr::binary(BinOp::FloorDiv, flat.clone(), ldm.clone()),
                Expr::int(TILE),
            );
            let col = Expr::binary(BinOp::FloorDiv, Expr::binary(BinOp::FloorMod, flat, ldm), Expr::int(TILE));
            let k = g.an.simplify(&(row * ldm16 + col));
            Ok(format!("{}[{}]", g.buf_name(&t.buffer), g.expr(&k)?))
        };
        // A warp tile: its lane's 8 elements, from the first element's
        // offset over the 32 lanes (halves two to a register).
        let warp = |g: &mut Self, t: &Tile| -> Result<String, Diagnostic> {
            let (flat, _) = flat_tile(t)?;
            let (_, per) = warp_type(&t.buffer)?;
            let k = g.an.simplify(&Expr::binary(BinOp::FloorDiv, flat, Expr::int(tirc_ir::wmma::LANES * per)));
            Ok(format!("{} + {}", g.buf_name(&t.buffer), g.expr(&k)?))
        };
        let mem = |g: &mut Self, t: &Tile| -> Result<(String, String), Diagnostic> {
            let (flat, ldm) = flat_tile(t)?;
            Ok((format!("{} + {}", g.buf_name(&t.buffer), g.expr(&flat)?), g.expr(&ldm)?))
        };
        let line = match w.op {
            WmmaOp::Fill => {
                let c = frag(self, &w.tiles[0])?;
                let v = self.expr(w.value.as_ref().ok_or_else(|| Diagnostic::new("a fill without its value"))?)?;
                format!("tirc_wmma_fill({c}, {v});")
            }
            WmmaOp::Load { .. } => {
                wmma_row_stride(&w.tiles[1])?;
                let f = frag(self, &w.tiles[0])?;
                let (p, ldm) = mem(self, &w.tiles[1])?;
                let which = if w.tiles[0].buffer.scope() == Scope::WmmaMatrixA { "a" } else { "b" };
                let col = if w.op == (WmmaOp::Load { col_major: true }) { "_col" } else { "" };
                let space = if w.tiles[1].buffer.scope() == Scope::Shared { "_shared" } else { "" };
                format!("tirc_wmma_load_{which}{col}{space}({f}, {p}, {ldm});")
            }
            WmmaOp::Mma { b_trans } => {
                let (c, a, b) = (frag(self, &w.tiles[0])?, frag(self, &w.tiles[1])?, frag(self, &w.tiles[2])?);
                let bt = if b_trans { "_bt" } else { "" };
                format!("tirc_wmma_mma{bt}({c}, {a}, {b});")
            }
            WmmaOp::Store => {
                wmma_row_stride(&w.tiles[0])?;
                let (p, ldm) = mem(self, &w.tiles[0])?;
                let f = frag(self, &w.tiles[1])?;
                let space = if w.tiles[0].buffer.scope() == Scope::Shared { "_shared" } else { "" };
                format!("tirc_wmma_store{space}({p}, {f}, {ldm});")
            }
            WmmaOp::LdMatrix { b, trans } => {
                let r = warp(self, &w.tiles[0])?;
                let (p, ldm) = mem(self, &w.tiles[1])?;
                let t = w.tiles[1].buffer.dtype();
                // tf32: ldmatrix where each lane's rows run along k (A
                // stored m x k, B stored n x k), else loads of 4 bytes.
                if t == DType::F32 && b != trans {
                    self.line(ind, &format!("tirc_load_tf32<{b}, {trans}>({r}, {p}, {ldm});"));
                    return Ok(());
                }
                // ldmatrix reads rows of 16 bytes: 8 halves, 4 floats.
                if let Some(l) = w.tiles[1].ldm.as_ref().and_then(|l| l.as_int()) {
                    let per = 16 / t.bytes() as i64;
                    if l % per != 0 {
                        return Err(Diagnostic::new(format!(
                            "ldmatrix reads rows of 16 bytes, but the rows of `{}` are {l} elements apart, not a multiple of {per}",
                            w.tiles[1].buffer.name()
                        ))
                        .help(format!("give the shared tile rows of a multiple of {per} elements (storage_align with offset {per})")));
                    }
                }
                if t == DType::F32 {
                    self.line(ind, &format!("tirc_ldmatrix_tf32<{b}>({r}, {p}, {ldm});"));
                    return Ok(());
                }
                // A is read row by row as it is stored; B (k × n) is
                // transposed by the instruction; stored transposed, the
                // other way round.
                match w.tiles[1].buffer.swizzle() {
                    0 => format!("tirc_ldmatrix_x4<{}, {trans}>({r}, {p}, {ldm});", b != trans),
                    bytes => {
                        // The swizzle repeats every atom: the offset's
                        // terms of whole atoms move the pointer, and the
                        // rest (constant once the loops are unrolled) is
                        // swizzled with the lane's row.
                        let (flat, _) = flat_tile(&w.tiles[1])?;
                        let atom = tirc_ir::buffer::swizzle_atom(bytes) / t.bytes() as i64;
                        let (whole, rest) = split_multiples(&flat, atom);
                        let (whole, rest) = (self.an.simplify(&whole), self.an.simplify(&rest));
                        let name = self.buf_name(&w.tiles[1].buffer);
                        let base = match whole.as_int() {
                            Some(0) => name,
                            _ => format!("{name} + {}", self.expr(&whole)?),
                        };
                        let rest = self.expr(&rest)?;
                        format!(
                            "tirc_ldmatrix_x4_swizzled<{}, {trans}, {bytes}>({r}, {base}, {rest}, {ldm});",
                            b != trans
                        )
                    }
                }
            }
            WmmaOp::MmaSync { .. } => {
                let (c, a, b) = (warp(self, &w.tiles[0])?, warp(self, &w.tiles[1])?, warp(self, &w.tiles[2])?);
                let bf16 = match w.tiles[1].buffer.dtype() {
                    DType::BFloat16 => "_bf16",
                    DType::F32 => "_tf32",
                    _ => "",
                };
                format!("tirc_mma_16x16x16{bf16}({c}, {a}, {b});")
            }
            WmmaOp::MmaFill => {
                let c = warp(self, &w.tiles[0])?;
                let v = self.expr(w.value.as_ref().ok_or_else(|| Diagnostic::new("a fill without its value"))?)?;
                format!("tirc_mma_fill({c}, {v});")
            }
            WmmaOp::MmaStore => {
                let (p, ldm) = mem(self, &w.tiles[0])?;
                let c = warp(self, &w.tiles[1])?;
                match &w.bound {
                    None => format!("tirc_mma_store({p}, {c}, {ldm});"),
                    Some((r, k)) => {
                        let (r, k) = (self.expr(r)?, self.expr(k)?);
                        format!("tirc_mma_store_bounded({p}, {c}, {ldm}, {r}, {k});")
                    }
                }
            }
            WmmaOp::Wgmma { .. } => {
                return Err(Diagnostic::new("a wgmma reached the warp-level helpers (wgmma_op writes it)"))
            }
        };
        self.line(ind, &line);
        Ok(())
    }

    fn index(&mut self, idx: &[Expr]) -> Result<String, Diagnostic> {
        match idx {
            [i] => self.expr(i),
            _ => Err(Diagnostic::new("a multi-dimensional access is left: flatten buffers before codegen")),
        }
    }

    fn expr(&mut self, e: &Expr) -> Result<String, Diagnostic> {
        self.expr_prec(e, 0)
    }

    /// C precedence levels, higher binds tighter.
    fn expr_prec(&mut self, e: &Expr, prec: u8) -> Result<String, Diagnostic> {
        let wrap = |s: String, p: u8| if p < prec { format!("({s})") } else { s };
        Ok(match e {
            Expr::Int(v, DType::Bool) => if *v != 0 { "true" } else { "false" }.into(),
            Expr::Int(v, t) => {
                let s = match t {
                    // The lowest value has no literal of its type in C: the
                    // literal of its magnitude is a wider (or unsigned) type.
                    DType::Int(64) if *v == i64::MIN => "-9223372036854775807LL - 1".to_string(),
                    DType::Int(64) => format!("{v}LL"),
                    DType::Int(_) if *v == i64::from(i32::MIN) => "-2147483647 - 1".to_string(),
                    DType::UInt(_) => format!("{v}u"),
                    _ => v.to_string(),
                };
                if *v < 0 {
                    format!("({s})")
                } else {
                    s
                }
            }
            Expr::Float(v, t) => float_lit(*v, *t),
            Expr::Var(v) => self.var_name(v),
            // Integer operands of two types (a literal a pass made int32
            // beside an int64 value): C++ would find the helpers
            // (`tirc_floormod`, `min`) ambiguous. Both take the wider type.
            Expr::Binary(op, a, b)
                if a.dtype() != b.dtype()
                    && matches!(a.dtype(), DType::Int(_))
                    && matches!(b.dtype(), DType::Int(_)) =>
            {
                let bits = |t: DType| if let DType::Int(n) = t { n } else { 0 };
                let w = if bits(a.dtype()) >= bits(b.dtype()) { a.dtype() } else { b.dtype() };
                let to = |x: &Expr| match x {
                    Expr::Int(v, _) => Expr::Int(*v, w),
                    x if x.dtype() == w => x.clone(),
                    x => Expr::Cast(w, Box::new(x.clone())),
                };
                return self.expr_prec(&Expr::Binary(*op, Box::new(to(a)), Box::new(to(b))), prec);
            }
            Expr::Binary(op, a, b) => {
                let t = a.dtype();
                let int = t.is_int();
                let (sym, p) = match op {
                    BinOp::Or => ("||", 1),
                    BinOp::And => ("&&", 2),
                    BinOp::Eq => ("==", 3),
                    BinOp::Ne => ("!=", 3),
                    BinOp::Lt => ("<", 4),
                    BinOp::Le => ("<=", 4),
                    BinOp::Gt => (">", 4),
                    BinOp::Ge => (">=", 4),
                    BinOp::Add => ("+", 5),
                    BinOp::Sub => ("-", 5),
                    BinOp::Mul => ("*", 6),
                    BinOp::Div => ("/", 6),
                    BinOp::FloorDiv | BinOp::FloorMod => {
                        // Unsigned values are never negative: C's own
                        // division is the floor (the helpers take signed
                        // operands, which would turn large values negative).
                        let unsigned = matches!(a.dtype(), DType::UInt(_));
                        let nonneg = unsigned
                            || self.an.bound(a).is_some_and(|(lo, _)| lo >= 0)
                                && self.an.bound(b).is_some_and(|(lo, _)| lo > 0);
                        if nonneg {
                            if *op == BinOp::FloorDiv {
                                ("/", 6)
                            } else {
                                ("%", 6)
                            }
                        } else {
                            let f = if *op == BinOp::FloorDiv { "tirc_floordiv" } else { "tirc_floormod" };
                            let (x, y) = (self.expr(a)?, self.expr(b)?);
                            return Ok(format!("{f}({x}, {y})"));
                        }
                    }
                    // Parenthesized whole: C ranks `&` below `==`.
                    BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr => {
                        let sym = match op {
                            BinOp::BitAnd => "&",
                            BinOp::BitOr => "|",
                            BinOp::BitXor => "^",
                            BinOp::Shl => "<<",
                            _ => ">>",
                        };
                        let (x, y) = (self.expr_prec(a, 9)?, self.expr_prec(b, 9)?);
                        let narrow = matches!(e.dtype(), DType::Int(8 | 16) | DType::UInt(8 | 16));
                        return Ok(if narrow {
                            format!("(({})({x} {sym} {y}))", ctype(e.dtype())?)
                        } else {
                            format!("({x} {sym} {y})")
                        });
                    }
                    // float16 and bfloat16: compared in float (C++ has no
                    // unambiguous `max` for them), rounded back exactly.
                    BinOp::Min | BinOp::Max if matches!(t, DType::F16 | DType::BFloat16) => {
                        let f = if *op == BinOp::Min { "fminf" } else { "fmaxf" };
                        let (x, y) = (self.expr_prec(a, 9)?, self.expr_prec(b, 9)?);
                        return Ok(format!("(({})({f}((float){x}, (float){y})))", ctype(t)?));
                    }
                    BinOp::Min | BinOp::Max => {
                        let f = match (op, t) {
                            (BinOp::Min, DType::Float(32)) => "fminf",
                            (BinOp::Max, DType::Float(32)) => "fmaxf",
                            (BinOp::Min, DType::Float(64)) => "fmin",
                            (BinOp::Max, DType::Float(64)) => "fmax",
                            (BinOp::Min, _) => "min",
                            _ => "max",
                        };
                        let (x, y) = (self.expr(a)?, self.expr(b)?);
                        return Ok(format!("{f}({x}, {y})"));
                    }
                };
                let _ = int;
                let l = self.expr_prec(a, p)?;
                let r = self.expr_prec(b, p + 1)?;
                // C computes on 8- and 16-bit integers in int: the result is
                // cast back, so that it wraps as TIR's (and the
                // simulator's) does.
                let narrow = matches!(e.dtype(), DType::Int(8 | 16) | DType::UInt(8 | 16));
                if narrow
                    && matches!(
                        op,
                        BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::FloorDiv | BinOp::FloorMod
                    )
                {
                    return Ok(format!("(({})({l} {sym} {r}))", ctype(e.dtype())?));
                }
                wrap(format!("{l} {sym} {r}"), p)
            }
            Expr::Not(a) => format!("!{}", self.expr_prec(a, 9)?),
            Expr::Select(c, a, b) => {
                let (c, a, b) = (self.expr_prec(c, 1)?, self.expr_prec(a, 1)?, self.expr_prec(b, 1)?);
                format!("({c} ? {a} : {b})")
            }
            Expr::Cast(t, a) => format!("(({}){})", ctype(*t)?, self.expr_prec(a, 9)?),
            Expr::Load(b, idx) => {
                let n = self.buf_name(b);
                let i = self.index(idx)?;
                format!("{n}[{}]", swizzled(b, i))
            }
            Expr::Call(Intrinsic::Likely | Intrinsic::CpAsync, args) => self.expr_prec(&args[0], prec)?,
            // A warp shuffle: CUDA's overloads take 32- and 64-bit numbers
            // and the two 16-bit floats; narrower integers go through int.
            Expr::Call(Intrinsic::WarpShuffleDown, args) => {
                let t = args[0].dtype();
                let v = self.expr(&args[0])?;
                let (d, w) = (self.expr(&args[1])?, self.expr(&args[2])?);
                let m = self.shuffle_mask;
                if matches!(t, DType::Int(8 | 16) | DType::UInt(8 | 16) | DType::Bool) {
                    format!("(({})__shfl_down_sync({m}, (int)({v}), {d}, {w}))", ctype(t)?)
                } else {
                    format!("__shfl_down_sync({m}, {v}, {d}, {w})")
                }
            }
            // float16 and bfloat16 have no math functions of their own that
            // C++ overloads: computed in float, rounded back to the type.
            Expr::Call(i, args)
                if !matches!(i, Intrinsic::Likely | Intrinsic::CpAsync | Intrinsic::WarpShuffleDown)
                    && args.first().is_some_and(|a| matches!(a.dtype(), DType::F16 | DType::BFloat16)) =>
            {
                let t = args[0].dtype();
                let widened: Vec<Expr> = args.iter().map(|a| Expr::Cast(DType::F32, Box::new(a.clone()))).collect();
                let x = self.expr(&Expr::Call(*i, widened))?;
                format!("(({}){x})", ctype(t)?)
            }
            Expr::Call(i, args) => {
                let f32_ = args.first().is_some_and(|a| a.dtype() == DType::F32);
                // CUDA's math functions have TVMScript's names (`expf` for
                // float32 below).
                let base = match i {
                    Intrinsic::Abs | Intrinsic::Fabs => "fabs",
                    Intrinsic::Sigmoid => {
                        let x = self.expr(&args[0])?;
                        return Ok(if f32_ {
                            format!("(1.0f / (1.0f + expf(-({x}))))")
                        } else {
                            format!("(1.0 / (1.0 + exp(-({x}))))")
                        });
                    }
                    // The low 13 bits rounded off, ties away from zero, as
                    // `cvt.rna.tf32.f32` (and the simulator) round; NaN and
                    // infinities kept.
                    Intrinsic::Tf32Round => {
                        let x = self.expr(&args[0])?;
                        return Ok(format!(
                            "([](float x) {{ return isfinite(x) ? __uint_as_float((__float_as_uint(x) + 0x1000u) & 0xffffe000u) : x; }}({x}))"
                        ));
                    }
                    Intrinsic::Likely | Intrinsic::CpAsync | Intrinsic::WarpShuffleDown => {
                        unreachable!("handled above")
                    }
                    i => i.name(),
                };
                // An unsigned value is its own magnitude (C++ has no
                // unambiguous `abs` of one).
                if *i == Intrinsic::Abs && args.first().is_some_and(|a| matches!(a.dtype(), DType::UInt(_))) {
                    return self.expr_prec(&args[0], prec);
                }
                let int_abs = *i == Intrinsic::Abs && args.first().is_some_and(|a| a.dtype().is_int());
                let name = if int_abs {
                    "abs".to_string()
                } else if f32_ {
                    format!("{base}f")
                } else {
                    base.to_string()
                };
                let xs: Result<Vec<String>, Diagnostic> = args.iter().map(|a| self.expr(a)).collect();
                format!("{name}({})", xs?.join(", "))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the consumers are handed fits the block's own pool at every
    /// block a producer warpgroup can serve (more would hang the kernel in
    /// `setmaxnreg.inc`), and a producer warp hands nothing over.
    #[test]
    fn handed_over_registers_fit_the_block() {
        for consumers in (128..=896).step_by(128) {
            let threads = consumers + 128;
            let at_entry = (65536 / threads).min(255) / 8 * 8;
            if let Some(given) = register_handover(consumers, 128) {
                assert!(given % 8 == 0 && given > at_entry && given <= 240, "{consumers}: {given}");
                assert!(
                    given * consumers + PRODUCER_REGISTERS * 128 <= threads * at_entry,
                    "{consumers} consumers given {given} of a pool of {threads} x {at_entry}"
                );
            }
        }
        assert_eq!(register_handover(256, 128), Some(232));
        assert_eq!(register_handover(384, 128), Some(152));
        assert_eq!(register_handover(512, 128), Some(104));
        assert_eq!(register_handover(768, 128), None);
        assert_eq!(register_handover(256, 32), None);
    }
}
