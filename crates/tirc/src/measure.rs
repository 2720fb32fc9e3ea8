//! What `tirc run` and `tirc tune` share to run a kernel and judge it: fresh
//! random inputs with poisoned outputs, the float64 reference (on the
//! simulator, or on the GPU when the simulator would be too slow), the
//! worst error over the written buffers, the median of timed runs, and the
//! shape of a matmul for the cuBLAS baseline.
//!
//! The timing protocol itself is `tirc_exec::gpu::Gpu::time`: `warmup`
//! launches, a synchronization, then `repeat` launches each between its own
//! pair of CUDA events; tirc reports the median.

use crate::verify::{access, outputs, reference_sim, sizes, widen, written, Reference};
use tirc_exec::data::{compare, poison, random, ErrorStats, HostData, Rng};
use tirc_exec::{gpu, reference};
use tirc_ir::{Buffer, PrimFunc, Stmt};

/// Warm-up launches before timing, unless the user says otherwise.
pub const DEFAULT_WARMUP: usize = 10;
/// Timed launches, unless the user says otherwise.
pub const DEFAULT_REPEAT: usize = 50;

/// Simulated work, in thread-statements, above which the reference moves to
/// the GPU when one is used.
pub const CPU_REFERENCE_LIMIT: f64 = 3e7;

/// The work the simulator does for the reference: its stores.
pub fn sim_work(f: &PrimFunc) -> f64 {
    reference::flops(f).max(1.0) + f.params.iter().filter_map(|b| b.num_elements()).sum::<i64>() as f64
}

/// Random inputs for `f` from `seed`, with every output buffer poisoned:
/// what the kernel runs on, and what the reference starts from (so that
/// an output the function writes only in part is poison in both).
pub struct Prepared {
    pub args: Vec<HostData>,
}

pub fn prepare(f: &PrimFunc, seed: u64) -> Result<Prepared, String> {
    let mut rng = Rng::new(seed);
    let sizes = sizes(f)?;
    let outs = outputs(f);
    // An index buffer (`A[B[i], j]`) gets indices that stay in range.
    let bounds = crate::verify::index_bounds(f);
    let mut inputs = Vec::new();
    for ((b, n), bound) in f.params.iter().zip(&sizes).zip(&bounds) {
        inputs.push(match bound {
            Some(hi) => tirc_exec::data::random_in(b.dtype(), *n, 0, *hi, &mut rng)?,
            None => random(b.dtype(), *n, &mut rng)?,
        });
    }
    let mut args = inputs;
    for (d, o) in args.iter_mut().zip(&outs) {
        if *o {
            poison(d);
        }
    }
    Ok(Prepared { args })
}

/// Whether an error of [`worst_error`] says that there is nothing to
/// compare (no result, or results computed from undefined values), rather
/// than that a run failed.
pub fn is_nothing_to_check(why: &str) -> bool {
    why.ends_with(NOTHING_TO_CHECK)
}

const NOTHING_TO_CHECK: &str = ": nothing to check";

/// The worst error over the buffers `f` writes. `args` holds the kernels'
/// buffers after the run: the parameters, then the global intermediates
/// `intermediates` names (if any). The parameters `f` writes are compared
/// with the reference; a function that writes none keeps its results in
/// global intermediates, and then each of those the kernels keep whole (the
/// same buffer, as many elements, in the same order) is compared instead.
/// A function that reads a buffer nothing writes has undefined results:
/// that is an error, not a mismatch.
pub fn worst_error(
    f: &PrimFunc,
    args: &[HostData],
    intermediates: &[Buffer],
    reference: &Reference,
) -> Result<ErrorStats, String> {
    if let Some(b) = crate::verify::undefined_reads(f).first() {
        return Err(format!(
            "the function reads `{}`, which nothing writes: what it computes from it is undefined{NOTHING_TO_CHECK}",
            b.name()
        ));
    }
    let mut pairs: Vec<(&HostData, &[f64])> = Vec::new();
    for (i, w) in written(f).iter().enumerate() {
        if *w {
            pairs.push((&args[i], &reference.values[i]));
        }
    }
    if pairs.is_empty() {
        let n = f.params.len();
        for (j, rb) in reference.intermediates.iter().enumerate() {
            let kept = intermediates
                .iter()
                .position(|b| b.id() == rb.id() && b.num_elements().is_some() && b.num_elements() == rb.num_elements());
            if let (Some(i), Some(r)) = (kept, reference.values.get(n + j)) {
                if let Some(d) = args.get(n + i) {
                    pairs.push((d, r));
                }
            }
        }
    }
    let mut worst: Option<ErrorStats> = None;
    for (d, r) in pairs {
        let s = compare(d, r);
        if worst.is_none_or(|x| s.rel_err > x.rel_err || s.rel_err.is_nan()) {
            worst = Some(s);
        }
    }
    worst.ok_or_else(|| {
        format!(
            "the function writes no parameter buffer, and no global buffer it writes is kept whole{NOTHING_TO_CHECK}"
        )
    })
}

/// Refuses, with the sizes, a simulation that would not fit in memory,
/// rather than let an allocation abort the process: the simulator holds
/// every element of the parameters and intermediates as f64 for the kernel
/// and again for the reference, beside the host data (so about 3 × 8 bytes
/// an element, with room to spare). The limit is the memory available, or
/// the process's address-space limit if lower (Linux; elsewhere no check).
pub fn check_sim_memory(f: &PrimFunc, intermediates: &[Buffer]) -> Result<(), String> {
    let elements: i64 =
        f.params.iter().chain(intermediates).filter_map(|b| b.num_elements()).fold(0, i64::saturating_add);
    let need = (elements as f64) * 32.0;
    let Some(have) = memory_limit() else { return Ok(()) };
    if need > have {
        return Err(format!(
            "simulating this function needs about {:.1} GiB ({} elements, held as float64 for the kernel and the \
             reference), more than the {:.1} GiB this process may use: run it on the GPU (--target cuda)",
            need / GIB,
            elements,
            have / GIB
        ));
    }
    Ok(())
}

const GIB: f64 = (1u64 << 30) as f64;

/// The bytes this process may still allocate: the memory available, or the
/// address-space limit if one is set and lower.
fn memory_limit() -> Option<f64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let avail = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map(|kb| kb * 1024.0)?;
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let address_space = limits
        .lines()
        .find(|l| l.starts_with("Max address space"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|v| v.parse::<f64>().ok());
    Some(address_space.map_or(avail, |a| a.min(avail)))
}

/// Whether an error is within tolerance.
pub fn passes(e: &ErrorStats, tolerance: f64) -> bool {
    e.rel_err <= tolerance && e.non_finite == 0
}

/// The f64 reference: on the simulator when that is fast enough or there is
/// no GPU, else on the GPU. Returns the reference and where it ran.
pub fn reference(g: Option<&gpu::Gpu>, f: &PrimFunc, inputs: &[HostData]) -> Result<(Reference, &'static str), String> {
    match g {
        Some(g) if sim_work(f) > CPU_REFERENCE_LIMIT => Ok((reference_gpu(g, f, inputs)?, "cuda")),
        _ => Ok((reference_sim(f, inputs)?, "sim")),
    }
}

/// Runs the f64 reference on the GPU.
pub fn reference_gpu(g: &gpu::Gpu, f: &PrimFunc, inputs: &[HostData]) -> Result<Reference, String> {
    let plan = reference::plan(f, true).map_err(|d| d.message)?;
    let mut host = widen(inputs, f)?;
    for b in &plan.intermediates {
        host.push(HostData::poisoned(b.dtype(), b.num_elements().unwrap_or(0) as usize)?);
    }
    let bufs: Vec<gpu::DeviceBuffer> = host.iter().map(|d| g.upload(d)).collect::<Result<_, _>>()?;
    let refs: Vec<&gpu::DeviceBuffer> = bufs.iter().collect();
    for k in &plan.kernels {
        let ck = tirc_codegen::emit(k).map_err(|d| d.message)?;
        let lk = g.load(&ck)?;
        g.launch(&lk, &refs)?;
    }
    for (d, b) in host.iter_mut().zip(&bufs) {
        g.download(b, d)?;
    }
    Ok(Reference { values: host.iter().map(|d| d.to_f64()).collect(), intermediates: plan.intermediates })
}

pub fn median(mut t: Vec<f64>) -> f64 {
    t.sort_by(f64::total_cmp);
    if t.is_empty() {
        return f64::NAN;
    }
    let n = t.len();
    if n % 2 == 1 {
        t[n / 2]
    } else {
        (t[n / 2 - 1] + t[n / 2]) / 2.0
    }
}

/// GFLOPS of `f` run in `ms` milliseconds.
pub fn gflops(f: &PrimFunc, ms: f64) -> f64 {
    reference::flops(f) / (ms * 1e6)
}

/// The bytes a run must move at the least: each parameter read from global
/// memory once if the function reads it before writing it, and written
/// once if it writes it (an output the function initializes, such as a
/// matmul's C, is only written). Memory-bound kernels (a transpose, an
/// element-wise op) are judged by these bytes per second.
pub fn bytes_moved(f: &PrimFunc) -> f64 {
    f.params
        .iter()
        .zip(access(f))
        .map(|(b, a)| (b.num_elements().unwrap_or(0) as usize * b.dtype().bytes()) as f64 * a.transfers() as f64)
        .sum()
}

/// A float32 matmul's shape and buffers, for cuBLAS.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MatmulShape {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    /// Parameter positions of A, B and C.
    pub a: usize,
    pub b: usize,
    pub c: usize,
    /// The type of A and B: float32, or float16 or bfloat16 widened to
    /// float32 in the product (C is float32).
    pub input: tirc_ir::DType,
    /// B is stored N x K and read transposed.
    pub b_trans: bool,
    /// float32 inputs multiplied as tf32 (cuBLAS's TF32 math for them).
    pub tf32: bool,
}

/// The shape when the function is `C[i, j] += A[i, k] * B[k, j]` over
/// float32 buffers A (M, K), B (K, N) (or B (N, K) read as `B[j, k]`), C (M, N), or float16 A and B widened
/// (`T.Cast("float32", ..)`) into a float32 C.
pub fn matmul_shape(f: &PrimFunc) -> Option<MatmulShape> {
    use tirc_ir::{BinOp, Expr, IterKind};
    let blocks: Vec<_> = f.body.blocks().into_iter().filter(|r| r.block.name != "root").collect();
    let [r] = blocks[..] else { return None };
    let b = &r.block;
    let kinds: Vec<IterKind> = b.iter_vars.iter().map(|iv| iv.kind).collect();
    if kinds != [IterKind::Spatial, IterKind::Spatial, IterKind::Reduce] {
        return None;
    }
    let (vi, vj, vk) = (&b.iter_vars[0].var, &b.iter_vars[1].var, &b.iter_vars[2].var);
    let Stmt::Store { buffer: c, indices, value } = &b.body else { return None };
    let is = |e: &Expr, v: &tirc_ir::Var| e.as_var() == Some(v);
    if indices.len() != 2 || !is(&indices[0], vi) || !is(&indices[1], vj) {
        return None;
    }
    let Expr::Binary(BinOp::Add, lhs, rhs) = value else { return None };
    let (acc, prod) = if matches!(&**lhs, Expr::Load(x, _) if x == c) { (lhs, rhs) } else { (rhs, lhs) };
    let Expr::Load(x, _) = &**acc else { return None };
    if x != c {
        return None;
    }
    let Expr::Binary(BinOp::Mul, p, q) = &**prod else { return None };
    // float16 or bfloat16 operands widened to float32 (`T.Cast`), or
    // float32 as they are.
    let narrow = |t: tirc_ir::DType| matches!(t, tirc_ir::DType::F16 | tirc_ir::DType::BFloat16);
    let widened = |e: &Expr| match e {
        Expr::Cast(tirc_ir::DType::Float(32), x) if matches!(&**x, Expr::Load(b, _) if narrow(b.dtype())) => {
            (**x).clone()
        }
        e => e.clone(),
    };
    let (p, q) = (widened(p), widened(q));
    let (Expr::Load(ab, ai), Expr::Load(bb, bi)) = (&p, &q) else { return None };
    let (ab, ai, bb, bi) = if is(&ai[0], vi) { (ab, ai, bb, bi) } else { (bb, bi, ab, ai) };
    if ai.len() != 2 || bi.len() != 2 || !is(&ai[0], vi) || !is(&ai[1], vk) {
        return None;
    }
    // B[k, j], or B[j, k]: B stored N x K (`C = A @ B^T`).
    let b_trans = match (is(&bi[0], vk) && is(&bi[1], vj), is(&bi[0], vj) && is(&bi[1], vk)) {
        (true, _) => false,
        (_, true) => true,
        _ => return None,
    };
    let input = ab.dtype();
    if !(narrow(input) || input == tirc_ir::DType::F32)
        || ab.dtype() != input
        || bb.dtype() != input
        || c.dtype() != tirc_ir::DType::F32
    {
        return None;
    }
    let m = c.const_shape()?;
    let k = ab.const_shape()?[1];
    let pos = |x: &Buffer| f.params.iter().position(|p| p == x);
    Some(MatmulShape {
        m: m[0] as usize,
        n: m[1] as usize,
        k: k as usize,
        a: pos(ab)?,
        b: pos(bb)?,
        c: pos(c)?,
        input,
        b_trans,
        tf32: false,
    })
}

/// Times cuBLAS SGEMM on the matmul's inputs (already on the GPU as
/// `bufs`) by the same protocol; returns the median and the product.
pub fn cublas(
    g: &gpu::Gpu,
    s: MatmulShape,
    bufs: &[&gpu::DeviceBuffer],
    c_host: &HostData,
    warmup: usize,
    repeat: usize,
) -> Result<(f64, HostData), String> {
    let cb = g.upload(c_host)?;
    let t = g.cublas_gemm(s.m, s.n, s.k, s.input, s.tf32, s.b_trans, bufs[s.a], bufs[s.b], &cb, warmup, repeat)?;
    let mut out = c_host.clone();
    g.download(&cb, &mut out)?;
    Ok((median(t), out))
}
