//! `tirc run FILE`: run a scheduled function on fresh random inputs, on the
//! GPU or the simulator, and check it against the unscheduled function.
//!
//! Inputs are random (or the user's, `--input A=a.npy`), outputs poisoned
//! (NaN) before the run; `--output C=c.npy` saves a buffer after it. The reference
//! is the unscheduled function with float64 storage: on the simulator when
//! that is fast enough, else on the GPU (lowered naively, one thread per
//! output element). `--bench` times the kernel (warm-up, CUDA events, the
//! median of repeats) and reports GFLOPS (when it computes) and GB/s of the
//! bytes it must move; `--compare cublas` times cuBLAS SGEMM on the same
//! inputs in the same run and cross-checks its result, `--compare copy` a
//! device-to-device copy of the same bytes (for memory-bound kernels). On the GPU the
//! kernel's registers, shared and local memory and its occupancy (blocks
//! per SM, from the driver) are reported too: with `--bench` in the text,
//! always in `--json` (null on the simulator).

use super::{report, Common, FAIL, USAGE};
use crate::compile::{compile, Compiled};
use crate::measure::{self, matmul_shape, median, passes, prepare, reference_gpu, worst_error, CPU_REFERENCE_LIMIT};
use crate::verify::{reference_sim, reference_sim_observed};
use std::time::{SystemTime, UNIX_EPOCH};
use tirc_exec::data::{compare, ErrorStats};
use tirc_exec::{gpu, npy, reference, sim};

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq)]
pub enum Target {
    /// The GPU when a CUDA driver and a device are present, else the simulator.
    Auto,
    Cuda,
    Sim,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq)]
pub enum Baseline {
    /// cuBLAS SGEMM on the same inputs (float32 matmuls).
    Cublas,
    /// A device-to-device copy of as many bytes as the kernel must move:
    /// the bar for memory-bound kernels.
    Copy,
}

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub common: Common,
    #[arg(long, value_enum, default_value = "auto")]
    pub target: Target,
    /// Time the kernel and report GFLOPS (when it computes) and GB/s of the
    /// bytes it must move.
    #[arg(long)]
    pub bench: bool,
    /// Time a library kernel on the same inputs in the same run.
    #[arg(long, value_enum)]
    pub compare: Option<Baseline>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Seed of the random inputs (default: from the clock, fresh every run).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Timed repetitions for --bench.
    #[arg(long, default_value_t = 50)]
    pub repeat: usize,
    /// Warm-up launches before timing.
    #[arg(long, default_value_t = 10)]
    pub warmup: usize,
    /// Largest relative error ‖out−ref‖/‖ref‖ accepted (a number at least 0).
    /// Default: the narrowest float type's (float32 1e-4, float16 1e-2,
    /// bfloat16 5e-2), grown to sqrt(n) roundings for a reduction of n
    /// terms accumulated in a narrow type.
    #[arg(long, value_parser = parse_tolerance)]
    pub tolerance: Option<f64>,
    /// Use the best parameters `tirc tune` recorded for this schedule, file
    /// and sizes (on this GPU; on the simulator, on the GPU tuned last), from
    /// the tuning database DB; `-p` still overrides them.
    #[arg(long, value_name = "DB", num_args = 0..=1, default_missing_value = crate::tune::db::DEFAULT_DB)]
    pub tuned: Option<std::path::PathBuf>,
    /// Take a parameter buffer's contents from a NumPy .npy file instead of
    /// random data: --input A=a.npy (its dtype and shape must be the buffer's).
    #[arg(long, value_name = "NAME=FILE", value_parser = parse_file_arg)]
    pub input: Vec<(String, std::path::PathBuf)>,
    /// Write a parameter buffer after the run to a .npy file: --output C=c.npy
    /// (written even when the check fails, to look at).
    #[arg(long, value_name = "NAME=FILE", value_parser = parse_file_arg)]
    pub output: Vec<(String, std::path::PathBuf)>,
}

/// `NAME=FILE` of `--input` and `--output`.
fn parse_file_arg(s: &str) -> Result<(String, std::path::PathBuf), String> {
    let (n, p) = s.split_once('=').ok_or_else(|| format!("expected NAME=FILE, got `{s}`"))?;
    if n.trim().is_empty() || p.is_empty() {
        return Err(format!("expected NAME=FILE, got `{s}`"));
    }
    Ok((n.trim().to_string(), p.into()))
}

/// The index of parameter `name` of `f`, or an error naming the ones there are.
fn param_index(f: &tirc_ir::PrimFunc, flag: &str, name: &str) -> Result<usize, String> {
    f.params.iter().position(|b| b.name() == name).ok_or_else(|| {
        let names: Vec<&str> = f.params.iter().map(|b| b.name()).collect();
        format!("{flag} {name}: {} has no parameter `{name}` (its parameters: {})", f.name, names.join(", "))
    })
}

/// The shape of parameter buffer `b`, as `.npy` sizes.
fn npy_shape(b: &tirc_ir::Buffer) -> Result<Vec<usize>, String> {
    let s = b.const_shape().ok_or_else(|| format!("buffer {} has no constant shape", b.name()))?;
    Ok(s.into_iter().map(|x| x as usize).collect())
}

/// Replaces the random contents of the buffers named by `--input`.
fn read_inputs(a: &Args, f: &tirc_ir::PrimFunc, args: &mut [tirc_exec::data::HostData]) -> Result<(), String> {
    for (name, path) in &a.input {
        let i = param_index(f, "--input", name)?;
        let b = &f.params[i];
        let bytes = std::fs::read(path).map_err(|e| format!("--input {name}: cannot read {}: {e}", path.display()))?;
        args[i] = npy::host_data(&bytes, b.dtype(), &npy_shape(b)?)
            .map_err(|e| format!("--input {name}={}: {e}", path.display()))?;
    }
    Ok(())
}

/// Writes the buffers named by `--output`.
fn write_outputs(a: &Args, f: &tirc_ir::PrimFunc, args: &[tirc_exec::data::HostData]) -> Result<(), String> {
    for (name, path) in &a.output {
        let i = param_index(f, "--output", name)?;
        let b = &f.params[i];
        let bytes = npy::to_bytes(b.dtype(), &npy_shape(b)?, &args[i]).map_err(|e| format!("--output {name}: {e}"))?;
        std::fs::write(path, bytes).map_err(|e| format!("--output {name}: cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

struct Outcome {
    target: &'static str,
    why: String,
    stats: ErrorStats,
    /// The relative error the check allowed (`--tolerance`, or the
    /// function's own: `Compiled::tolerance`).
    tolerance: f64,
    ok: bool,
    time_ms: Option<f64>,
    gflops: Option<f64>,
    cublas_ms: Option<f64>,
    cublas_gflops: Option<f64>,
    cublas_err: Option<ErrorStats>,
    /// Bytes the run must move (`measure::bytes_moved`) and the copy baseline's time.
    bytes: f64,
    copy_ms: Option<f64>,
    reference_on: &'static str,
    device: Option<String>,
    /// Registers, shared and local memory, occupancy: on the GPU only.
    resources: Option<gpu::KernelResources>,
}

/// Why a run stopped before it had a result.
enum Stop {
    /// A usage error (exit status 2).
    Usage(String),
    /// Diagnostics against the source (exit status 1).
    Diagnostics(String, Vec<tirc_ir::Diagnostic>),
    /// Bad input or a failure of the run (exit status 1).
    Error(String),
}

/// Reads, compiles and runs: everything but the printing.
fn run(a: &Args, warn: &mut dyn FnMut(&str, &[tirc_ir::Diagnostic])) -> Result<(Compiled, Outcome), Stop> {
    if a.compare.is_some() && !a.bench {
        return Err(Stop::Usage("--compare needs --bench: the comparison is of times".into()));
    }
    let src = std::fs::read_to_string(&a.common.file)
        .map_err(|e| Stop::Error(format!("cannot read {}: {e}", a.common.file.display())))?;
    let mut req = a.common.request();
    if let Some(db) = &a.tuned {
        let p = tuned(a, db, &src).map_err(Stop::Error)?;
        req.params = p.into_iter().chain(req.params).collect();
    }
    let c = compile(&src, &req).map_err(|ds| Stop::Diagnostics(src.clone(), ds))?;
    // Run-time sizes take their -D values now: the kernel is generic.
    let c = c.bind_sizes(&req.defines).map_err(|d| Stop::Diagnostics(src.clone(), vec![d]))?;
    // Scalar parameters take theirs: a -D, else a value drawn from the seed.
    let c = c.bind_scalars(&req.defines, &req.fractions, seed(a));
    warn(&src, &c.warnings);
    let o = execute(a, &c).map_err(Stop::Error)?;
    Ok((c, o))
}

pub fn main(a: Args) -> u8 {
    let mut warn = |src: &str, ds: &[tirc_ir::Diagnostic]| report(&a.common.file, src, ds);
    match run(&a, &mut warn) {
        Ok((c, o)) => {
            print_outcome(&a, &c, &o);
            if o.ok {
                0
            } else {
                FAIL
            }
        }
        Err(Stop::Usage(e)) => {
            eprintln!("error: {e}");
            USAGE
        }
        Err(Stop::Diagnostics(src, ds)) => {
            report(&a.common.file, &src, &ds);
            FAIL
        }
        Err(Stop::Error(e)) => {
            if a.json {
                println!("{{\"status\": \"error\", \"error\": {}}}", json_str(&e));
            } else {
                eprintln!("error: {e}");
            }
            FAIL
        }
    }
}

/// `tirc run ARGV... --json` in the calling process (the Python package's
/// `check` and `bench`): the exit status and the JSON object it would
/// print; errors, diagnostics and warnings rendered into the object
/// (`"status": "error"`, `"error"`, `"warnings"`).
pub fn json(argv: &[&str]) -> (u8, String) {
    let error = |code: u8, e: &str| (code, format!("{{\"status\": \"error\", \"error\": {}}}", json_str(e)));
    let mut a = match super::parse_subcommand::<Args>("run", argv) {
        Ok(a) => a,
        Err(e) => return error(USAGE, &e.to_string()),
    };
    a.json = true;
    let name = a.common.file.display().to_string();
    let mut warnings = String::new();
    let mut warn = |src: &str, ds: &[tirc_ir::Diagnostic]| {
        for d in ds {
            warnings += &d.render(&name, src);
        }
    };
    let result = run(&a, &mut warn);
    match result {
        Ok((c, o)) => {
            let mut text = outcome_json(&a, &c, &o);
            if !warnings.is_empty() {
                text.pop();
                text += &format!(", \"warnings\": {}}}", json_str(&warnings));
            }
            (if o.ok { 0 } else { FAIL }, text)
        }
        Err(Stop::Usage(e)) => error(USAGE, &e),
        Err(Stop::Diagnostics(src, ds)) => {
            error(FAIL, &ds.iter().map(|d| d.render(&name, &src)).collect::<Vec<_>>().join(""))
        }
        Err(Stop::Error(e)) => error(FAIL, &e),
    }
}

/// The parameters `--tuned` takes from the database, announced on stderr.
fn tuned(a: &Args, db: &std::path::Path, src: &str) -> Result<Vec<(String, String)>, String> {
    let schedule = a.common.schedule.as_deref().ok_or("--tuned needs --schedule: the schedule whose tuning to use")?;
    let on_gpu = a.target == Target::Cuda || (a.target == Target::Auto && gpu::available().is_ok());
    let name = if on_gpu { Some(gpu::Gpu::open()?.name()) } else { None };
    let (params, r) = crate::tune::tuned_params(
        db,
        src,
        &a.common.split_defines().0,
        schedule,
        name.as_deref(),
        a.common.aligned_copies,
    )?;
    let shown: Vec<String> = params.iter().map(|(n, v)| format!("-p {n}={v}")).collect();
    eprintln!(
        "tuned: {} (the best of {} on {}: {:.4} ms)",
        shown.join(" "),
        db.display(),
        r.key.gpu,
        r.time_ms.unwrap_or(f64::NAN)
    );
    Ok(params)
}

fn seed(a: &Args) -> u64 {
    a.seed.unwrap_or_else(|| SystemTime::now().duration_since(UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64))
}

fn execute(a: &Args, c: &Compiled) -> Result<Outcome, String> {
    let (target, why): (&'static str, String) = match a.target {
        Target::Sim => ("sim", "--target sim".into()),
        Target::Cuda => {
            gpu::available()?;
            ("cuda", "--target cuda".into())
        }
        Target::Auto => match gpu::available() {
            Ok(()) => ("cuda", "a CUDA device is present".into()),
            Err(e) => ("sim", format!("no GPU: {e}")),
        },
    };
    if a.bench && target == "sim" {
        return Err("--bench needs the GPU: the simulator checks results but does not time them".into());
    }
    let f = &c.original;
    if target == "sim" {
        measure::check_sim_memory(f, &c.intermediates)?;
    }
    let measure::Prepared { args: mut run_args, .. } = prepare(f, seed(a))?;
    read_inputs(a, f, &mut run_args)?;
    // A name given to --output must exist before anything runs.
    for (name, _) in &a.output {
        param_index(f, "--output", name)?;
    }
    // The reference starts from the same poisoned outputs, so that what
    // the function leaves unwritten is poison in both.
    let start = run_args.clone();
    // The intermediates between kernels follow the parameters.
    for b in &c.intermediates {
        let n = b.num_elements().ok_or_else(|| format!("buffer {} has no constant size", b.name()))?;
        run_args.push(tirc_exec::data::HostData::poisoned(b.dtype(), n as usize)?);
    }
    let work = measure::sim_work(f);
    let mut device = None;
    let mut resources = None;
    let mut time_ms = None;
    let mut cublas = None;
    let mut copy_ms = None;
    let bytes = measure::bytes_moved(f);
    let reference_on;
    let reference: crate::verify::Reference;
    if target == "sim" {
        let long = work > LONG_SIMULATION;
        if long {
            warn_long_simulation(a, work);
        }
        // The kernels and the float64 reference share nothing: they run at
        // once, on two cores where there are two.
        let bars = indicatif::MultiProgress::new();
        let (kernels, refd) = std::thread::scope(|scope| {
            // With the simulator workers' stack: a deep program recurses
            // as deep in the reference.
            let refd = std::thread::Builder::new().stack_size(sim::WORKER_STACK).spawn_scoped(scope, || {
                let bar = bars.add(progress_bar(long, "simulating the reference in float64"));
                let r = reference_sim_observed(f, &start, &mut |d, t| {
                    bar.set_length(t as u64);
                    bar.set_position(d as u64);
                });
                bar.finish_and_clear();
                r
            });
            let mut kernels = Ok(());
            for k in &c.kernels {
                let bar = bars.add(progress_bar(long, &format!("simulating {}", k.cuda.name)));
                kernels = sim::run_observed(&k.lowered, &mut run_args, sim::SimOptions::default(), &mut |d, t| {
                    bar.set_length(t as u64);
                    bar.set_position(d as u64);
                })
                .map(|_| ())
                .map_err(|e| format!("simulating kernel {}: {e}", k.cuda.name));
                bar.finish_and_clear();
                if kernels.is_err() {
                    break;
                }
            }
            let refd = match refd {
                Ok(h) => h.join().unwrap_or_else(|_| Err("the reference simulation stopped unexpectedly".into())),
                Err(e) => Err(format!("starting the reference simulation failed: {e}")),
            };
            (kernels, refd)
        });
        kernels?;
        reference = refd?;
        reference_on = "sim";
    } else {
        let g = gpu::Gpu::open()?;
        device = Some(g.name());
        let ks: Vec<gpu::LoadedKernel> = c.kernels.iter().map(|k| g.load(&k.cuda)).collect::<Result<_, _>>()?;
        for (k, l) in c.kernels.iter().zip(&ks) {
            if let Some(w) = l.ptxas.and_then(|r| {
                r.spill_warning(&k.cuda.name, k.cuda.launch.threads_per_block(), k.cuda.min_blocks_per_sm)
            }) {
                eprintln!("warning: {w}");
            }
        }
        resources = Some(g.resources(&ks[c.main_index()])?);
        let bufs: Vec<gpu::DeviceBuffer> = run_args.iter().map(|d| g.upload(d)).collect::<Result<_, _>>()?;
        let refs: Vec<&gpu::DeviceBuffer> = bufs.iter().collect();
        for k in &ks {
            g.launch(k, &refs)?;
        }
        for (d, b) in run_args.iter_mut().zip(&bufs) {
            g.download(b, d)?;
        }
        if work <= CPU_REFERENCE_LIMIT {
            reference = reference_sim(f, &start)?;
            reference_on = "sim";
        } else {
            reference = reference_gpu(&g, f, &start)?;
            reference_on = "cuda";
        }
        if a.bench {
            let t = g.time_all(&ks, &refs, a.warmup, a.repeat)?;
            time_ms = Some(median(t));
            if a.compare == Some(Baseline::Cublas) {
                let mut shape = matmul_shape(f).ok_or_else(|| {
                    "--compare cublas needs a float32 matmul C[i, j] += A[i, k] * B[k, j]".to_string()
                })?;
                shape.tf32 = c.uses_tf32();
                let (t, out) = measure::cublas(&g, shape, &refs, &run_args[shape.c], a.warmup, a.repeat)?;
                cublas = Some((t, compare(&out, &reference.values[shape.c])));
            }
            if a.compare == Some(Baseline::Copy) {
                // A copy of n bytes reads n and writes n.
                copy_ms = Some(median(g.time_copy((bytes / 2.0) as usize, a.warmup, a.repeat)?));
            }
        }
    }
    // Compare every output buffer; report the worst.
    let tol = a.tolerance.unwrap_or_else(|| c.tolerance());
    let stats = worst_error(f, &run_args, &c.intermediates, &reference);
    run_args.truncate(f.params.len());
    write_outputs(a, f, &run_args)?;
    let stats = stats?;
    let ok = passes(&stats, tol);
    let fl = reference::flops(f);
    Ok(Outcome {
        target,
        why,
        stats,
        tolerance: tol,
        ok,
        time_ms,
        // A kernel that does no arithmetic has no GFLOPS to speak of.
        gflops: time_ms.filter(|_| fl > 0.0).map(|t| fl / (t * 1e6)),
        cublas_ms: cublas.map(|c| c.0),
        cublas_gflops: cublas.map(|c| fl / (c.0 * 1e6)),
        cublas_err: cublas.map(|c| c.1),
        bytes,
        copy_ms,
        reference_on,
        device,
        resources,
    })
}

/// Simulated work (`measure::sim_work`) above which a run on the simulator
/// warns first and shows its progress: about ten seconds on a laptop core.
const LONG_SIMULATION: f64 = 5e8;

/// Says on stderr that the simulation will be long, and how to make it short.
fn warn_long_simulation(a: &Args, work: f64) {
    let sizes = std::fs::read_to_string(&a.common.file).map(|s| crate::tune::test_sizes(&s)).unwrap_or_default();
    let hint = if sizes.is_empty() {
        "give smaller sizes with -D".to_string()
    } else {
        let d: Vec<String> = sizes.iter().map(|(k, v)| format!("-D {k}={v}")).collect();
        format!("give smaller sizes, e.g. the file's test sizes: {}", d.join(" "))
    };
    // The simulator runs about 10^8 of these a second here (docs/benchmarks.md).
    eprintln!(
        "warning: simulating about {work:.1e} operations on the CPU takes about {:.0} s (kernel and float64 \
         reference); {hint}, or run on a GPU",
        work / 1e8
    );
}

/// A bar over simulated blocks, on stderr when it is a terminal and the run is long.
fn progress_bar(show: bool, what: &str) -> indicatif::ProgressBar {
    if !show {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(1);
    let style =
        indicatif::ProgressStyle::with_template("{msg}: {bar:30} {pos}/{len} blocks, {elapsed} elapsed, ~{eta} left")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    bar.set_style(style);
    bar.set_message(what.to_string());
    bar
}

fn json_str(s: &str) -> String {
    let mut o = String::from("\"");
    for ch in s.chars() {
        match ch {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn num(v: Option<f64>) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{x}"),
        Some(x) if x.is_nan() => "\"nan\"".into(),
        Some(x) => format!("\"{x}\""),
        None => "null".into(),
    }
}

fn print_outcome(a: &Args, c: &Compiled, o: &Outcome) {
    if a.json {
        println!("{}", outcome_json(a, c, o));
        return;
    }
    print_text(a, c, o);
}

/// The outcome as the one JSON object `--json` prints.
fn outcome_json(a: &Args, c: &Compiled, o: &Outcome) -> String {
    let status = if o.ok { "ok" } else { "mismatch" };
    let launch = c.main().cuda.launch;
    let mut fields = vec![
        format!("\"status\": \"{status}\""),
        format!("\"rel_err\": {}", num(Some(o.stats.rel_err))),
        format!("\"max_abs_err\": {}", num(Some(o.stats.max_abs_err))),
        format!("\"tolerance\": {}", num(Some(o.tolerance))),
        format!("\"target\": \"{}\"", o.target),
        format!("\"target_reason\": {}", json_str(&o.why)),
        format!("\"reference\": \"{}\"", o.reference_on),
        format!("\"time_ms\": {}", num(o.time_ms)),
        format!("\"gflops\": {}", num(o.gflops)),
        format!("\"bytes\": {}", num(Some(o.bytes))),
        format!("\"gbps\": {}", num(o.time_ms.map(|t| o.bytes / (t * 1e6)))),
        format!("\"kernel\": \"{}\"", c.main().cuda.name),
        format!("\"grid\": {:?}, \"block\": {:?}", launch.grid, launch.block),
        format!(
            "\"kernels\": [{}]",
            c.kernels.iter().map(|k| format!("\"{}\"", k.cuda.name)).collect::<Vec<_>>().join(", ")
        ),
    ];
    fields.push(format!("\"aligned\": [{}]", c.aligned.iter().map(|l| json_str(l)).collect::<Vec<_>>().join(", ")));
    if let Some(d) = &o.device {
        fields.push(format!("\"device\": {}", json_str(d)));
    }
    if !c.scalar_values.is_empty() {
        let values: Vec<String> =
            c.scalar_values.iter().map(|(v, x, _)| format!("{}: {}", json_str(v.name()), num(Some(*x)))).collect();
        fields.push(format!("\"scalars\": {{{}}}", values.join(", ")));
    }
    let r = o.resources;
    let int = |v: Option<i64>| v.map_or("null".to_string(), |x| x.to_string());
    fields.push(format!("\"registers_per_thread\": {}", int(r.map(|r| r.registers_per_thread as i64))));
    fields.push(format!("\"static_shared_bytes\": {}", int(r.map(|r| r.static_shared_bytes as i64))));
    fields.push(format!("\"dynamic_shared_bytes\": {}", int(r.map(|r| r.dynamic_shared_bytes as i64))));
    fields.push(format!("\"local_bytes_per_thread\": {}", int(r.map(|r| r.local_bytes_per_thread as i64))));
    fields.push(format!("\"max_active_blocks_per_sm\": {}", int(r.map(|r| r.max_active_blocks_per_sm as i64))));
    fields.push(format!("\"occupancy\": {}", num(r.map(|r| r.occupancy()))));
    if a.compare == Some(Baseline::Copy) {
        fields.push(format!("\"copy_time_ms\": {}", num(o.copy_ms)));
        fields.push(format!("\"copy_gbps\": {}", num(o.copy_ms.map(|c| o.bytes / (c * 1e6)))));
        fields.push(format!("\"ratio_vs_copy\": {}", num(o.copy_ms.zip(o.time_ms).map(|(c, t)| c / t))));
    }
    if a.compare == Some(Baseline::Cublas) {
        fields.push(format!("\"cublas_time_ms\": {}", num(o.cublas_ms)));
        fields.push(format!("\"cublas_gflops\": {}", num(o.cublas_gflops)));
        fields.push(format!("\"cublas_rel_err\": {}", num(o.cublas_err.map(|e| e.rel_err))));
        fields.push(format!("\"ratio_vs_cublas\": {}", num(o.cublas_ms.zip(o.time_ms).map(|(c, t)| c / t))));
    }
    format!("{{{}}}", fields.join(", "))
}

/// The outcome as text.
fn print_text(a: &Args, c: &Compiled, o: &Outcome) {
    let status = if o.ok { "ok" } else { "mismatch" };
    println!("target: {} ({})", o.target, o.why);
    if let Some(d) = &o.device {
        println!("device: {d}");
    }
    if !c.scalar_values.is_empty() {
        let shown: Vec<String> = c
            .scalar_values
            .iter()
            .map(|(v, x, random)| format!("{} = {x}{}", v.name(), if *random { " (random)" } else { "" }))
            .collect();
        println!("scalars: {}", shown.join(", "));
    }
    for line in &c.aligned {
        println!("aligned: {line}");
    }
    for k in &c.kernels {
        let l = k.cuda.launch;
        println!(
            "kernel: {} grid ({}, {}, {}) block ({}, {}, {})",
            k.cuda.name, l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1], l.block[2]
        );
    }
    println!(
        "check: {status}: rel_err {:.3e}, max_abs_err {:.3e} (reference: unscheduled function in f64 on {})",
        o.stats.rel_err, o.stats.max_abs_err, o.reference_on
    );
    if o.stats.non_finite > 0 {
        println!("       {} elements are NaN or infinite: unwritten or wrong", o.stats.non_finite);
    }
    if let Some(t) = o.time_ms {
        let gb = o.bytes / (t * 1e6);
        let flops = o.gflops.map_or(String::new(), |g| format!("{g:.1} GFLOPS, "));
        println!(
            "time: {t:.4} ms, {flops}{gb:.1} GB/s of {:.1} MB moved (median of {} after {} warm-up)",
            o.bytes / 1e6,
            a.repeat,
            a.warmup
        );
    }
    if let Some(c) = o.copy_ms {
        let ratio = o.time_ms.map_or(f64::NAN, |x| c / x);
        println!(
            "copy: {c:.4} ms for the same bytes, {:.1} GB/s; tirc runs at {ratio:.2}x device-copy speed",
            o.bytes / (c * 1e6)
        );
    }
    if let (true, Some(r)) = (a.bench, o.resources) {
        println!(
            "resources: {} registers/thread, {} B static + {} B dynamic shared memory/block, {} B local memory/thread",
            r.registers_per_thread, r.static_shared_bytes, r.dynamic_shared_bytes, r.local_bytes_per_thread
        );
        println!(
            "occupancy: {} blocks/SM of {} threads each, {:.0}% of the SM's {} warp slots",
            r.max_active_blocks_per_sm,
            r.threads_per_block,
            100.0 * r.occupancy(),
            r.max_threads_per_sm / 32
        );
    }
    if let (Some(t), Some(g)) = (o.cublas_ms, o.cublas_gflops) {
        let ratio = o.time_ms.map_or(f64::NAN, |x| t / x);
        println!("cublas: {t:.4} ms, {g:.1} GFLOPS; tirc runs at {ratio:.2}x cuBLAS speed");
        if let Some(e) = o.cublas_err {
            println!("cublas check: rel_err {:.3e}", e.rel_err);
        }
    }
}

/// `--tolerance`: a finite number at least 0 (NaN or a negative one would
/// fail every kernel, blaming it).
fn parse_tolerance(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(t) if t.is_finite() && t >= 0.0 => Ok(t),
        _ => Err(format!("`{s}` is not a tolerance: give a number at least 0, such as 1e-5")),
    }
}
