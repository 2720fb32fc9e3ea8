//! Turning candidates into results: building them (schedule, lowering, CUDA
//! and, for the GPU, NVRTC and module loading) on worker threads, then
//! checking them on the simulator or checking and timing them on the GPU.
//!
//! On the GPU, building runs in parallel and measuring runs alone, one
//! candidate after another on the main thread, so that compilation never
//! overlaps a timed launch.

use super::db::Status;
use super::space::{Candidate, Space};
use crate::compile::AlignMode;
use crate::measure::{self, passes, worst_error};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;
use tirc_codegen::CudaKernel;
use tirc_exec::data::HostData;
use tirc_exec::{gpu, sim};
use tirc_ir::{Module, PrimFunc, Var};
use tirc_passes::schedule::interp::run_schedule;
use tirc_passes::transform;

/// Threads a block may have on every NVIDIA GPU tirc targets.
pub const MAX_THREADS: i64 = 1024;
/// Shared memory per block the simulator allows: the H100's opt-in limit
/// (227 KiB), so that `--target sim` refuses what an H100 would.
pub const SIM_SHARED_LIMIT: usize = 227 * 1024;

/// What one candidate came to.
#[derive(Clone, Debug)]
pub struct Trial {
    pub cand: Candidate,
    pub status: Status,
    pub reason: Option<String>,
    pub time_ms: Option<f64>,
    pub rel_err: Option<f64>,
    /// Seconds spent building it (schedule to loaded module).
    pub compile_s: Option<f64>,
    pub block: Option<[i64; 3]>,
    /// Taken from the tuning database instead of measured.
    pub resumed: bool,
    /// Whether it got as far as the device (and so counts against
    /// `--budget`); rejections by the schedule or by static limits do not.
    pub reached_device: bool,
}

impl Trial {
    pub fn rejected(cand: Candidate, reason: String, compile_s: f64) -> Trial {
        Trial {
            cand,
            status: Status::Rejected,
            reason: Some(reason),
            time_ms: None,
            rel_err: None,
            compile_s: Some(compile_s),
            block: None,
            resumed: false,
            reached_device: false,
        }
    }
}

/// A candidate built as far as CUDA source: its kernels in launch order
/// (most functions have one; `split_kernels` makes several of a function
/// whose nests are bound to threads one by one), and the global buffers
/// that pass values between them, allocated after the parameters.
pub struct Built {
    pub kernels: Vec<(PrimFunc, CudaKernel)>,
    pub intermediates: Vec<tirc_ir::Buffer>,
}

impl Built {
    /// The block shape reported for the candidate: the widest kernel's.
    pub fn block(&self) -> [i64; 3] {
        let threads = |b: &[i64; 3]| b.iter().product::<i64>();
        self.kernels.iter().map(|(_, k)| k.launch.block).max_by_key(threads).unwrap_or([1, 1, 1])
    }

    /// The tolerance the kernels' own arithmetic needs (tf32 products).
    pub fn precision(&self, original: &PrimFunc) -> f64 {
        crate::verify::function_tolerance(original, self.kernels.iter().map(|(f, _)| f))
    }
}

/// Schedules, lowers and emits one candidate, applying the limits every GPU
/// has; the error is the reason it is rejected.
#[allow(clippy::too_many_arguments)]
pub fn build(
    module: &Module,
    schedule: &str,
    space: &Space,
    c: &Candidate,
    shared_limit: usize,
    sizes: &[(Var, i64)],
    scalars: &[(Var, f64)],
    aligned: AlignMode,
) -> Result<Built, String> {
    let def = module.schedule(schedule).ok_or_else(|| format!("the file has no schedule `{schedule}`"))?;
    let sch = run_schedule(module, def, &space.overrides(c)).map_err(|d| d.message)?;
    // What `run` compiles: misaligned inputs copied as `--aligned-copies`
    // says (where that pays, by default).
    let (func, ..) = transform::align_input_rows::run(&sch.func, aligned);
    let (funcs, intermediates) = transform::split_kernels::split_kernels(&func);
    let mut kernels = Vec::new();
    for f in funcs {
        let lowered = transform::lower(f, &transform::PassContext::default(), |_, _| {}).map_err(|d| d.message)?;
        let mut kernel = tirc_codegen::emit(&lowered).map_err(|d| d.message)?;
        // A kernel of run-time sizes is generic; it is measured at `sizes`.
        let lowered = crate::compile::bind_kernel(&lowered, &mut kernel, sizes)?;
        // Scalar parameters take the values the reference ran with.
        let lowered = crate::compile::bind_kernel_scalars(&lowered, &mut kernel, scalars);
        let threads = kernel.launch.block.iter().product::<i64>();
        if threads > MAX_THREADS {
            return Err(format!("{threads} threads per block, more than {MAX_THREADS}"));
        }
        if kernel.dynamic_shared_bytes > shared_limit {
            return Err(format!(
                "{} bytes of shared memory per block, more than the {shared_limit} the device allows",
                kernel.dynamic_shared_bytes
            ));
        }
        kernels.push((lowered, kernel));
    }
    // The intermediates of run-time sizes take the sizes measured at.
    let intermediates = intermediates.iter().map(|b| b.specialize(sizes)).collect();
    Ok(Built { kernels, intermediates })
}

/// The poisoned contents of the intermediates, after the parameters.
fn poisoned(intermediates: &[tirc_ir::Buffer]) -> Result<Vec<HostData>, String> {
    intermediates
        .iter()
        .map(|b| {
            let n = b.num_elements().ok_or_else(|| format!("buffer {} has no constant size", b.name()))?;
            HostData::poisoned(b.dtype(), n as usize)
        })
        .collect()
}

/// Maps `f` over `items` on `jobs` threads, keeping the order; calls
/// `done()` after each item.
pub fn par_map<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    f: &(dyn Fn(&T) -> R + Sync),
    done: &(dyn Fn() + Sync),
) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..jobs.clamp(1, items.len().max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= items.len() {
                    break;
                }
                let r = f(&items[i]);
                if let Ok(mut o) = out.lock() {
                    o[i] = Some(r);
                }
                done();
            });
        }
    });
    out.into_inner().unwrap_or_default().into_iter().flatten().collect()
}

/// Everything a check needs that all candidates share: the inputs, the
/// poisoned arguments, the reference and the tolerance.
#[derive(Clone)]
pub struct Checker {
    /// The function, specialized to `sizes`.
    pub original: PrimFunc,
    /// The values of the function's run-time sizes the candidates run at.
    pub sizes: Vec<(Var, i64)>,
    /// The values of its scalar parameters (`alpha: T.float32`).
    pub scalars: Vec<(Var, f64)>,
    pub args: Vec<HostData>,
    pub reference: crate::verify::Reference,
    pub tolerance: f64,
    /// The tolerance was given (`--tolerance`): a candidate's own
    /// precision (tf32 products) does not loosen it.
    pub tolerance_given: bool,
    /// `--aligned-copies`.
    pub aligned: AlignMode,
}

impl Checker {
    /// The tolerance for a candidate whose kernel needs `precision`.
    fn tolerance_for(&self, precision: f64) -> f64 {
        if self.tolerance_given {
            self.tolerance
        } else {
            self.tolerance.max(precision)
        }
    }
}

/// Builds and checks a candidate on the simulator.
pub fn sim_trial(module: &Module, schedule: &str, space: &Space, c: &Candidate, chk: &Checker) -> Trial {
    let t0 = Instant::now();
    let built = match build(module, schedule, space, c, SIM_SHARED_LIMIT, &chk.sizes, &chk.scalars, chk.aligned) {
        Ok(b) => b,
        Err(e) => return Trial::rejected(c.clone(), e, t0.elapsed().as_secs_f64()),
    };
    let compile_s = t0.elapsed().as_secs_f64();
    let mut args = chk.args.clone();
    let mut t = Trial {
        cand: c.clone(),
        status: Status::Ok,
        reason: None,
        time_ms: None,
        rel_err: None,
        compile_s: Some(compile_s),
        block: Some(built.block()),
        resumed: false,
        reached_device: true,
    };
    match poisoned(&built.intermediates) {
        Ok(more) => args.extend(more),
        Err(e) => return Trial::rejected(c.clone(), e, compile_s),
    }
    // The tuner already checks several points at once, one per core.
    let opts = sim::SimOptions { workers: 1, ..sim::SimOptions::default() };
    for (lowered, _) in &built.kernels {
        if let Err(e) = sim::run(lowered, &mut args, opts) {
            t.status = Status::Crashed;
            t.reason = Some(format!("the simulator stopped the kernel: {e}"));
            return t;
        }
    }
    let tol = chk.tolerance_for(built.precision(&chk.original));
    judge(&mut t, &chk.original, &args, &built.intermediates, &chk.reference, tol);
    t
}

fn judge(
    t: &mut Trial,
    f: &PrimFunc,
    args: &[HostData],
    intermediates: &[tirc_ir::Buffer],
    reference: &crate::verify::Reference,
    tol: f64,
) {
    match worst_error(f, args, intermediates, reference) {
        Ok(e) => {
            t.rel_err = Some(e.rel_err);
            if !passes(&e, tol) {
                t.status = Status::Mismatch;
                t.reason = Some(if e.non_finite > 0 {
                    format!("{} output elements are NaN or infinite: unwritten or wrong", e.non_finite)
                } else {
                    format!("rel_err {:.3e} is above the tolerance {tol:.1e}", e.rel_err)
                });
            }
        }
        Err(e) => {
            t.status = Status::Mismatch;
            t.reason = Some(e);
        }
    }
}

/// A candidate built and loaded on the GPU, or the reason it was not.
pub struct Loaded {
    pub cand: Candidate,
    /// Its kernels, in launch order.
    pub kernel: Result<Vec<gpu::LoadedKernel>, Trial>,
    pub block: [i64; 3],
    /// The global buffers between its kernels, after the parameters.
    pub intermediates: Vec<tirc_ir::Buffer>,
    pub compile_s: f64,
    /// The tolerance its kernels' own arithmetic needs (tf32 products).
    pub precision: f64,
}

/// A candidate built for the GPU as far as PTX, or why not, and the
/// seconds that took: built once, loaded on each device that measures it.
pub struct ForGpu {
    pub cand: Candidate,
    /// The kernels and the PTX of each; an error is a rejection by the
    /// schedule, lowering, the static limits, or NVRTC.
    pub built: Result<(Built, Vec<Option<String>>), String>,
    pub build_s: f64,
}

/// Builds a candidate for GPUs of architecture `arch` that allow
/// `shared_limit` bytes of shared memory per block, and compiles it with
/// NVRTC; safe to call from several threads at once.
#[allow(clippy::too_many_arguments)]
pub fn gpu_prepare(
    module: &Module,
    schedule: &str,
    space: &Space,
    c: &Candidate,
    shared_limit: usize,
    arch: &str,
    sizes: &[(Var, i64)],
    scalars: &[(Var, f64)],
    aligned: AlignMode,
) -> ForGpu {
    let t0 = Instant::now();
    let built = build(module, schedule, space, c, shared_limit.max(48 * 1024), sizes, scalars, aligned).map(|b| {
        // An NVRTC failure is reported when the kernel is loaded, as a
        // refusal by the GPU.
        let ptx = b.kernels.iter().map(|(_, k)| gpu::nvrtc_compile(&k.source, arch).ok()).collect();
        (b, ptx)
    });
    ForGpu { cand: c.clone(), built, build_s: t0.elapsed().as_secs_f64() }
}

/// Loads a built candidate into `g`.
pub fn gpu_load(g: &gpu::Gpu, p: &ForGpu, original: &PrimFunc) -> Loaded {
    let t0 = Instant::now();
    let c = &p.cand;
    let (built, ptx) = match &p.built {
        Ok(b) => b,
        Err(e) => {
            return Loaded {
                cand: c.clone(),
                kernel: Err(Trial::rejected(c.clone(), e.clone(), p.build_s)),
                block: [0; 3],
                intermediates: vec![],
                compile_s: p.build_s,
                precision: 0.0,
            };
        }
    };
    let loaded: Result<Vec<gpu::LoadedKernel>, String> = built
        .kernels
        .iter()
        .zip(ptx)
        .map(|((_, k), ptx)| match ptx {
            Some(ptx) => g.load_ptx(k, ptx.clone()),
            None => g.load(k),
        })
        .collect();
    let s = p.build_s + t0.elapsed().as_secs_f64();
    let kernel = loaded.map_err(|e| {
        let mut t = Trial::rejected(c.clone(), format!("the GPU refused it: {e}"), s);
        t.reached_device = true;
        t.block = Some(built.block());
        t
    });
    Loaded {
        cand: c.clone(),
        kernel,
        block: built.block(),
        intermediates: built.intermediates.clone(),
        compile_s: s,
        precision: built.precision(original),
    }
}

/// The GPU side of a tuning run: inputs on the device, the reference, and
/// the timing protocol.
pub struct GpuBench<'g> {
    pub g: &'g gpu::Gpu,
    pub chk: Checker,
    /// The device copy of each buffer the kernels only read; `None` for
    /// those they write, uploaded afresh (poisoned) for every candidate.
    pub shared: Vec<Option<gpu::DeviceBuffer>>,
    pub warmup: usize,
    pub repeat: usize,
    /// Seconds of launches one candidate's timing may take.
    pub cap_s: f64,
}

/// Whether a CUDA error leaves the context usable: launch-time refusals do,
/// faults during execution do not.
fn recoverable(e: &str) -> bool {
    ["OUT_OF_RESOURCES", "INVALID_VALUE", "INVALID_CONFIGURATION", "TOO_MANY_BLOCKS"].iter().any(|m| e.contains(m))
}

/// The outcome of measuring one candidate, and whether the GPU context is
/// lost, so that no further candidate can run in this process.
pub struct Measured {
    pub trial: Trial,
    pub lost: bool,
}

fn kept(trial: Trial) -> Measured {
    Measured { trial, lost: false }
}

fn lost(t: Trial, reason: String) -> Measured {
    Measured { trial: fail(t, Status::Crashed, reason), lost: true }
}

impl GpuBench<'_> {
    pub fn new<'g>(
        g: &'g gpu::Gpu,
        chk: Checker,
        written: &[bool],
        warmup: usize,
        repeat: usize,
        cap_s: f64,
    ) -> Result<GpuBench<'g>, String> {
        let mut shared = Vec::new();
        for (d, w) in chk.args.iter().zip(written) {
            shared.push(if *w { None } else { Some(g.upload(d)?) });
        }
        Ok(GpuBench { g, chk, shared, warmup, repeat, cap_s })
    }

    /// Warm-up and timed launches for a kernel whose checking launch took
    /// `once` seconds: the full protocol, unless that would take more than
    /// `cap_s`; then 2 warm-up launches and as many timed ones as fit the
    /// cap, at least 3, so that slow candidates of a large sweep cost
    /// seconds, not minutes.
    pub fn protocol(&self, once: f64) -> (usize, usize) {
        if once * (self.warmup + self.repeat) as f64 <= self.cap_s {
            return (self.warmup, self.repeat);
        }
        let fit = (self.cap_s / once.max(1e-9)) as usize;
        (self.warmup.min(2), fit.clamp(3, self.repeat.max(3)))
    }

    /// Runs the kernel once on poisoned outputs, checks the result, and
    /// times it only when it is right.
    pub fn measure(&self, l: Loaded) -> Measured {
        let tol = self.chk.tolerance_for(l.precision);
        let ks = match l.kernel {
            Ok(k) => k,
            Err(t) => return kept(t),
        };
        let mut t = Trial {
            cand: l.cand,
            status: Status::Ok,
            reason: None,
            time_ms: None,
            rel_err: None,
            compile_s: Some(l.compile_s),
            block: Some(l.block),
            resumed: false,
            reached_device: true,
        };
        let fresh: Result<Vec<Option<gpu::DeviceBuffer>>, String> = self
            .chk
            .args
            .iter()
            .zip(&self.shared)
            .map(|(d, s)| if s.is_none() { self.g.upload(d).map(Some) } else { Ok(None) })
            .collect();
        let fresh = match fresh {
            Ok(f) => f,
            Err(e) => return lost(t, format!("uploading the arguments failed: {e}")),
        };
        // The intermediates, poisoned, after the parameters.
        let between: Result<Vec<gpu::DeviceBuffer>, String> =
            poisoned(&l.intermediates).and_then(|hs| hs.iter().map(|h| self.g.upload(h)).collect());
        let between = match between {
            Ok(b) => b,
            Err(e) => return lost(t, format!("allocating the intermediates failed: {e}")),
        };
        let refs: Vec<&gpu::DeviceBuffer> = fresh
            .iter()
            .zip(&self.shared)
            .filter_map(|(f, s)| f.as_ref().or(s.as_ref()))
            .chain(between.iter())
            .collect();
        let launched = Instant::now();
        if let Err(e) = ks.iter().try_for_each(|k| self.g.launch(k, &refs)) {
            return if recoverable(&e) {
                t.status = Status::Rejected;
                t.reason = Some(format!("the GPU refused the launch: {e}"));
                kept(t)
            } else {
                lost(t, e)
            };
        }
        // Only the written buffers are compared; the others stay empty.
        let mut out: Vec<HostData> = self
            .chk
            .args
            .iter()
            .zip(&fresh)
            .map(|(d, f)| if f.is_some() { d.clone() } else { HostData::F32(vec![]) })
            .collect();
        for (i, f) in fresh.iter().enumerate() {
            if let Some(b) = f {
                if let Err(e) = self.g.download(b, &mut out[i]) {
                    return lost(t, e);
                }
            }
        }
        judge(&mut t, &self.chk.original, &out, &[], &self.chk.reference, tol);
        if t.status != Status::Ok {
            return kept(t);
        }
        let (warmup, repeat) = self.protocol(launched.elapsed().as_secs_f64());
        match self.g.time_all(&ks, &refs, warmup, repeat) {
            Ok(ts) => {
                t.time_ms = Some(measure::median(ts));
                kept(t)
            }
            Err(e) => lost(t, e),
        }
    }
}

fn fail(mut t: Trial, s: Status, reason: String) -> Trial {
    t.status = s;
    t.reason = Some(reason);
    t
}
