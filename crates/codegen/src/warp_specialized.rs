//! What code generation adds for a warp-specialized loop (the pass
//! `warp_specialize`, annotation `tirc.warp_specialized`): the tensor maps
//! its bulk tensor copies read through (kernel arguments the launcher
//! builds, `TensorMap`), and the device helpers for the copies and the
//! mbarriers (`PRELUDE`).
//!
//! The kernel's shape (in `cuda.rs`): the block gets a producer after the
//! consumers' threads, a warpgroup with `wgmma` and a warp without
//! (`tirc_ir::launch::producer_threads`). Its
//! first thread runs the body's loops down to the warp-specialized loop and
//! issues, each iteration, the loop's copies into version `s` of the tiles,
//! once the consumers have released that version ("empty" barrier `s`,
//! one arrival per consumer warp), each announcing its bytes on "full"
//! barrier `s` first, and then arrives there (a copy its guard skips is
//! then not waited for). The consumers run the body, waiting at the top of each iteration
//! of the loop for its copies ("full" `s`), and release a version when
//! they have read it: at the end of the iteration, or, with `wgmma`
//! products in flight across iterations, at the end of the next, after
//! `wgmma.wait_group 1`. A barrier among the consumers is a named barrier
//! of their threads alone (`bar.sync 1, n`). Where the target has
//! `setmaxnreg` (sm_90a), the producer gives its registers to the
//! consumers.

use std::collections::HashSet;
use tirc_ir::{Buffer, DType, Expr, Intrinsic, PrimFunc, Stmt};

/// A tensor map the kernel takes as an argument (`const __grid_constant__
/// tirc_tensor_map`, after the scalars), for `cuTensorMapEncodeTiled`.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorMap {
    /// The parameter it describes (an index into the kernel's `params`).
    pub param: usize,
    pub dtype: DType,
    /// The parameter's shape, outermost dimension first.
    pub shape: Vec<i64>,
    /// The box each copy moves, outermost dimension first.
    pub boxed: Vec<i64>,
    /// The swizzle of the shared tiles it fills, in bytes (0, 32, 64, 128).
    pub swizzle: i64,
}

/// A bulk tensor copy of the body: destination, the source, the box, the
/// source's shape and the box's coordinates (outermost first).
pub(crate) struct Copy<'a> {
    pub dst: &'a Buffer,
    pub src: &'a Buffer,
    pub boxed: Vec<i64>,
    pub shape: Vec<i64>,
    pub coords: &'a [Expr],
}

/// `S[..] = T.tma_load(G[..], box.., shape.., coordinates..)` as its parts.
pub(crate) fn copy_of<'a>(dst: &'a Buffer, value: &'a Expr) -> Option<Copy<'a>> {
    let Expr::Call(Intrinsic::TmaLoad, args) = value else { return None };
    let (Expr::Load(src, _), rest) = args.split_first()? else { return None };
    let rank = rest.len() / 3;
    let ints = |xs: &[Expr]| xs.iter().map(Expr::as_int).collect::<Option<Vec<i64>>>();
    let boxed = ints(&rest[..rank])?;
    let shape = ints(&rest[rank..2 * rank])?;
    Some(Copy { dst, src, boxed, shape, coords: &rest[2 * rank..] })
}

/// The tensor maps the copies of `f` need, in the order of first use.
pub fn tensor_maps(f: &PrimFunc) -> Vec<TensorMap> {
    let mut out: Vec<TensorMap> = Vec::new();
    f.body.walk(&mut |s| {
        if let Stmt::Store { buffer, value, .. } = s {
            if let Some(c) = copy_of(buffer, value) {
                let Some(param) = f.params.iter().position(|p| p == c.src) else { return };
                let m =
                    TensorMap { param, dtype: c.src.dtype(), shape: c.shape, boxed: c.boxed, swizzle: c.dst.swizzle() };
                if !out.contains(&m) {
                    out.push(m);
                }
            }
        }
    });
    out
}

/// Whether `s` holds a warp-specialized loop or a bulk tensor copy.
pub(crate) fn has_producer_work(s: &Stmt) -> bool {
    let mut found = false;
    s.walk(&mut |x| {
        found |= match x {
            Stmt::For(l) => tirc_ir::launch::warp_specialized(l).is_some(),
            Stmt::Store { value: Expr::Call(Intrinsic::TmaLoad, _), .. } => true,
            _ => false,
        }
    });
    found
}

/// The first statement on the way from `s` down to a warp-specialized loop
/// whose expressions use one of `threads`: the producer would take another
/// way than the consumers there.
pub(crate) fn thread_dependent_path(s: &Stmt, threads: &HashSet<usize>) -> Option<String> {
    if !has_producer_work(s) {
        return None;
    }
    if let Stmt::For(l) = s {
        if tirc_ir::launch::warp_specialized(l).is_some() {
            return None;
        }
    }
    let mut bad = false;
    s.for_each_expr(|e| {
        e.walk(&mut |x| {
            if let Expr::Var(v) = x {
                bad |= threads.contains(&v.key());
            }
        })
    });
    if bad {
        return Some(match s {
            Stmt::If { cond, .. } => format!("`if {}`", tirc_ir::printer::print_expr(cond)),
            Stmt::For(l) => format!("loop `{}`", l.var.name()),
            Stmt::Let { var, .. } => format!("`{}`", var.name()),
            _ => "a statement".to_string(),
        });
    }
    let mut found = None;
    s.for_each_child(|c| {
        if found.is_none() {
            found = thread_dependent_path(c, threads);
        }
    });
    found
}

/// The device side: the tensor map argument, the copies, the mbarriers.
pub(crate) const PRELUDE: &str = r#"// A tensor map (CUtensorMap, 128 bytes), passed by value.
struct __align__(64) tirc_tensor_map { unsigned long long opaque[16]; };
__device__ __forceinline__ unsigned tirc_smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void tirc_mbar_init(unsigned long long* b, unsigned n) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(tirc_smem(b)), "r"(n) : "memory");
}
// Spins until the phase of parity `phase` of the barrier has completed.
__device__ __forceinline__ void tirc_mbar_wait(unsigned long long* b, unsigned phase) {
  unsigned done;
  do {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}" : "=r"(done) : "r"(tirc_smem(b)), "r"(phase) : "memory");
  } while (!done);
}
__device__ __forceinline__ void tirc_mbar_arrive(unsigned long long* b) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(tirc_smem(b)) : "memory");
}
// Announces bytes a copy of this phase will bring (without arriving).
__device__ __forceinline__ void tirc_mbar_expect_bytes(unsigned long long* b, unsigned bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" :: "r"(tirc_smem(b)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void tirc_mbar_fence_init() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
// One bulk tensor copy of a box whose first element is at the coordinates
// c (innermost dimension first), completing on barrier b.
__device__ __forceinline__ void tirc_tma_load(void* dst, const tirc_tensor_map* m, int c0, unsigned long long* b) {
  asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2}], [%3];" :: "r"(tirc_smem(dst)), "l"((unsigned long long)m), "r"(c0), "r"(tirc_smem(b)) : "memory");
}
__device__ __forceinline__ void tirc_tma_load(void* dst, const tirc_tensor_map* m, int c0, int c1, unsigned long long* b) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" :: "r"(tirc_smem(dst)), "l"((unsigned long long)m), "r"(c0), "r"(c1), "r"(tirc_smem(b)) : "memory");
}
__device__ __forceinline__ void tirc_tma_load(void* dst, const tirc_tensor_map* m, int c0, int c1, int c2, unsigned long long* b) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];" :: "r"(tirc_smem(dst)), "l"((unsigned long long)m), "r"(c0), "r"(c1), "r"(c2), "r"(tirc_smem(b)) : "memory");
}
__device__ __forceinline__ void tirc_tma_load(void* dst, const tirc_tensor_map* m, int c0, int c1, int c2, int c3, unsigned long long* b) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];" :: "r"(tirc_smem(dst)), "l"((unsigned long long)m), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(tirc_smem(b)) : "memory");
}
__device__ __forceinline__ void tirc_tma_load(void* dst, const tirc_tensor_map* m, int c0, int c1, int c2, int c3, int c4, unsigned long long* b) {
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5, %6}], [%7];" :: "r"(tirc_smem(dst)), "l"((unsigned long long)m), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(tirc_smem(b)) : "memory");
}
"#;
