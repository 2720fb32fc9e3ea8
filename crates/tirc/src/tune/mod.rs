//! `tirc tune`: search a schedule's parameters for the fastest correct
//! kernel.
//!
//! The run, in order:
//! 1. resolve the space (`space.rs`): the schedule's `space={...}`, with
//!    `--space` and `-p` over it; every value typed by its parameter;
//! 2. choose candidates (`search.rs`): all of them, or under `--budget N` at
//!    most N chosen by a strategy (model-guided by default);
//! 3. build them on `--jobs` threads (`eval.rs`): schedule, lower, CUDA, and
//!    on the GPU NVRTC and loading; the schedule's refusals and the device's
//!    limits reject candidates, and the reasons are counted;
//! 4. check each on fresh random inputs with poisoned outputs against the
//!    unscheduled function in float64, and on the GPU time it by the
//!    protocol of `tirc run --bench` (warm-up, CUDA events, median) when and
//!    only when it is right: a fast wrong kernel never ranks;
//! 5. record every GPU result in the tuning database (`db.rs`) as soon as it
//!    is known; a rerun takes what is recorded instead of measuring again;
//! 6. report (`report.rs`): the table sorted by speed with the cuBLAS ratio,
//!    and the average and best per value of each parameter.
//!
//! `--target sim` checks every candidate on the simulator at the sizes of
//! the file's `# test-sizes:` line and times nothing.

pub mod cli;
pub mod db;
pub mod eval;
pub mod report;
pub mod search;
pub mod space;

use crate::measure;
use crate::verify::{default_tolerance, written};
use db::{Db, Key, Record, Status};
use eval::{Checker, GpuBench, Trial};
use indicatif::{ProgressBar, ProgressStyle};
use search::{Observation, Strategy};
use space::{Candidate, Space};
use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Instant;
use tirc_exec::data::Rng;
use tirc_exec::gpu;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Cuda,
    Sim,
}

/// A tuning run, as the command line describes it.
#[derive(Clone, Debug)]
pub struct Options {
    pub file: PathBuf,
    pub src: String,
    pub schedule: String,
    pub defines: Vec<(String, i64)>,
    /// `-p`: parameters held at one value.
    pub fixed: Vec<(String, String)>,
    /// `--space`, parsed.
    pub space: Vec<(String, Vec<String>)>,
    pub budget: Option<usize>,
    pub strategy: Option<Strategy>,
    pub jobs: usize,
    pub target: Target,
    pub db: PathBuf,
    pub warmup: usize,
    pub repeat: usize,
    /// Seconds of timed launches one candidate may take (see
    /// `GpuBench::protocol`).
    pub cap_s: f64,
    pub seed: u64,
    pub tolerance: Option<f64>,
    pub progress: bool,
    /// The GPUs that measure candidates, one worker each (`--devices`).
    pub devices: Vec<usize>,
    /// `--aligned-copies`: what every candidate is compiled with.
    pub aligned: crate::compile::AlignMode,
}

/// Everything a tuning run found, for `report.rs` to print.
pub struct Outcome {
    pub target: Target,
    pub device: Option<String>,
    pub func: String,
    pub constants: Vec<(String, i64)>,
    pub space: Space,
    pub space_size: usize,
    pub strategy: Strategy,
    pub trials: Vec<Trial>,
    pub flops: f64,
    pub reference_on: &'static str,
    pub cublas_ms: Option<f64>,
    pub wall_s: f64,
    /// Wall-clock seconds of the parallel build phases.
    pub compile_wall_s: f64,
    /// Seconds of the measuring phases.
    pub measure_s: f64,
    /// Set when a kernel left the GPU context unusable and the run stopped.
    pub aborted: Option<String>,
    pub db_path: Option<PathBuf>,
    /// Things the report should mention.
    pub notes: Vec<String>,
}

/// The schedule's module constants after `-D` (and, on the simulator, the
/// `# test-sizes:` line under them), and the module.
pub fn load(o: &Options) -> Result<tirc_ir::Module, Vec<tirc_ir::Diagnostic>> {
    crate::compile::load(&o.src, &defines(o))
}

/// The sizes a tuning run is at: on the simulator the file's test sizes,
/// then -D.
pub(crate) fn defines(o: &Options) -> Vec<(String, i64)> {
    let mut defines = match o.target {
        Target::Sim => test_sizes(&o.src),
        Target::Cuda => vec![],
    };
    // A -D replaces the test size of its name (a module constant given
    // twice would keep the first).
    defines.retain(|(k, _)| !o.defines.iter().any(|(d, _)| d == k));
    defines.extend(o.defines.iter().cloned());
    defines
}

/// The `# test-sizes: M=40 N=72` line of a file: the small sizes it is
/// checked at on the simulator.
pub fn test_sizes(src: &str) -> Vec<(String, i64)> {
    test_size_sets(src).into_iter().next().unwrap_or_default()
}

/// Every `# test-sizes:` line of a file, in order: the first is the one
/// every step is checked at; the others (other values of run-time sizes,
/// most often) are checked on the lowered kernels.
pub fn test_size_sets(src: &str) -> Vec<Vec<(String, i64)>> {
    src.lines()
        .filter_map(|l| l.trim().strip_prefix("# test-sizes:"))
        .map(|rest| {
            rest.split_whitespace()
                .filter_map(|kv| {
                    let (k, v) = kv.split_once('=')?;
                    Some((k.to_string(), v.parse().ok()?))
                })
                .collect()
        })
        .collect()
}

/// What is wrong with the file's `# test-sizes:` and `# test-params:`
/// lines, each at its word: an entry not `NAME=VALUE` (a value not an
/// integer, for sizes), a name given twice on one line, a `# test-params:`
/// line naming no schedule of the file. (Names that are no module constant
/// or size are refused where the sizes are loaded.) Such an entry would
/// otherwise be passed over, and the check run at other sizes.
pub fn directive_errors(src: &str, schedules: &[&str]) -> Vec<tirc_ir::Diagnostic> {
    let mut errors = Vec::new();
    let mut at = 0;
    for line in src.split_inclusive('\n') {
        let start = at;
        at += line.len();
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let (rest, sizes) = if let Some(r) = trimmed.strip_prefix("# test-sizes:") {
            (r, true)
        } else if let Some(r) = trimmed.strip_prefix("# test-params:") {
            (r, false)
        } else {
            continue;
        };
        let offset = start + indent + (trimmed.len() - rest.len());
        // Each word with its span.
        let mut words = Vec::new();
        let mut pos = 0;
        for w in rest.split_whitespace() {
            let i = rest[pos..].find(w).map_or(pos, |i| pos + i);
            pos = i + w.len();
            let span = tirc_parser::ast::Span { start: offset + i, end: offset + i + w.len() };
            words.push((w, span));
        }
        let mut words = words.into_iter();
        if !sizes {
            match words.next() {
                Some((name, span)) if !schedules.contains(&name) => {
                    errors.push(tirc_ir::Diagnostic::at(
                        span,
                        format!("`# test-params:` names `{name}`, which is no schedule of the file"),
                    ));
                    continue;
                }
                Some(_) => {}
                None => continue,
            }
        }
        let mut seen: Vec<&str> = Vec::new();
        for (w, span) in words {
            let Some((k, v)) = w.split_once('=') else {
                errors.push(tirc_ir::Diagnostic::at(span, format!("`{w}` is not NAME=VALUE")));
                continue;
            };
            if sizes && v.parse::<i64>().is_err() {
                errors.push(tirc_ir::Diagnostic::at(span, format!("`{v}` is not an integer a size can take")));
            } else if seen.contains(&k) {
                errors.push(tirc_ir::Diagnostic::at(span, format!("`{k}` is given twice on one line")));
            }
            seen.push(k);
        }
    }
    errors
}

/// The schedule parameters a schedule is checked with on the simulator,
/// from `# test-params: v4 BX=16 BY=8` lines; none when it has no such line.
/// Small thread tiles keep the checks of a schedule before lowering quick:
/// there a cooperative fetch nested in the thread loops runs once per thread.
pub fn test_params(src: &str, schedule: &str) -> Vec<(String, String)> {
    src.lines()
        .filter_map(|l| l.trim().strip_prefix("# test-params:"))
        .filter_map(|rest| {
            let mut words = rest.split_whitespace();
            (words.next() == Some(schedule)).then_some(words)
        })
        .flat_map(|words| words.filter_map(|kv| kv.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())))
        .collect()
}

/// The database key of a problem.
pub fn key(
    src: &str,
    module: &tirc_ir::Module,
    func: &str,
    schedule: &str,
    gpu: &str,
    defines: &[(String, i64)],
    aligned: crate::compile::AlignMode,
) -> Key {
    let mut constants: Vec<(String, i64)> = module.constants.iter().map(|c| (c.name.clone(), c.value)).collect();
    // A function of run-time sizes is one kernel, timed at each size apart.
    if let Some(f) = module.func(func) {
        constants.extend(crate::verify::size_values(f, defines).into_iter().map(|(v, x)| (v.name().to_string(), x)));
    }
    constants.sort();
    Key {
        file_hash: db::content_hash(src),
        func: func.to_string(),
        schedule: schedule.to_string(),
        constants,
        gpu: gpu.to_string(),
        aligned: aligned.name().to_string(),
    }
}

fn progress_bar(o: &Options, total: usize) -> ProgressBar {
    if !o.progress {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(total as u64);
    let style = ProgressStyle::with_template("{bar:30} {pos}/{len} candidates, {elapsed} elapsed, ~{eta} left  {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    pb.set_style(style);
    pb
}

fn best_message(space: &Space, trials: &[Trial]) -> String {
    match trials
        .iter()
        .filter(|t| t.status == Status::Ok && t.time_ms.is_some())
        .min_by(|a, b| a.time_ms.unwrap_or(f64::MAX).total_cmp(&b.time_ms.unwrap_or(f64::MAX)))
    {
        Some(t) => format!("best {:.4} ms ({})", t.time_ms.unwrap_or(f64::NAN), space.label(&t.cand)),
        None => String::new(),
    }
}

/// Loads and measures built candidates, spread over the devices of
/// `benches` (candidate i on device i mod n, each device one worker);
/// results in the candidates' order. A device whose context is lost stops
/// its worker at that candidate.
fn measure_on_devices(benches: &[GpuBench], built: &[eval::ForGpu]) -> Vec<eval::Measured> {
    let n = benches.len();
    let mut slots: Vec<Option<eval::Measured>> = (0..built.len()).map(|_| None).collect();
    let results: Vec<Vec<(usize, eval::Measured)>> = std::thread::scope(|s| {
        let handles: Vec<_> = benches
            .iter()
            .enumerate()
            .map(|(d, bench)| {
                s.spawn(move || {
                    let mut mine = Vec::new();
                    for (i, b) in built.iter().enumerate().filter(|(i, _)| i % n == d) {
                        let m = bench.measure(eval::gpu_load(bench.g, b, &bench.chk.original));
                        let lost = m.lost;
                        mine.push((i, m));
                        if lost {
                            break;
                        }
                    }
                    mine
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
    });
    for (i, m) in results.into_iter().flatten() {
        slots[i] = Some(m);
    }
    // Stop at the first lost context.
    let mut out = Vec::new();
    for m in slots.into_iter().flatten() {
        let lost = m.lost;
        out.push(m);
        if lost {
            break;
        }
    }
    out
}

/// Runs a tuning session. Errors are bad input or an unusable device.
pub fn tune(o: &Options) -> Result<Outcome, String> {
    let start = Instant::now();
    let module = load(o).map_err(|ds| ds.into_iter().map(|d| d.message).collect::<Vec<_>>().join("\n"))?;
    let def = module.schedule(&o.schedule).ok_or_else(|| {
        let names: Vec<&str> = module.schedules.iter().map(|s| s.name.as_str()).collect();
        format!("the file has no schedule `{}`; its schedules are: {}", o.schedule, names.join(", "))
    })?;
    let space = Space::resolve(def, &o.space, &o.fixed)?;
    let generic = module
        .func(&def.func)
        .cloned()
        .ok_or_else(|| format!("schedule `{}` is for `{}`, which the file lacks", def.name, def.func))?;
    // Run-time sizes: every candidate is a generic kernel, measured at the
    // values -D (or, on the simulator, the test sizes) gives them.
    let sizes = crate::compile::size_values_checked(&module, &generic, &defines(o)).map_err(|d| d.message)?;
    // Scalar parameters: a -D value, else one drawn from the seed.
    let scalars: Vec<(tirc_ir::Var, f64)> =
        crate::compile::scalar_values(&generic, &defines(o), &[], o.seed).into_iter().map(|(v, x, _)| (v, x)).collect();
    let original = generic.specialize(&sizes).bind_scalars(&scalars);
    let all = space.candidates();
    let space_size = all.len();
    let strategy = o.strategy.unwrap_or(if o.budget.is_some() { Strategy::Model } else { Strategy::Exhaustive });
    if o.budget == Some(0) {
        return Err("--budget 0 measures nothing: give at least 1".into());
    }
    let budget = o.budget.unwrap_or(space_size).min(space_size);
    let prepared = measure::prepare(&original, o.seed)?;
    let tolerance = o.tolerance.unwrap_or_else(|| default_tolerance(&original));
    let pb = progress_bar(o, budget);
    let jobs = o.jobs.max(1);
    let mut rng = Rng::new(o.seed ^ 0x5eed);
    let mut trials: Vec<Trial> = Vec::new();
    let mut done: HashSet<Candidate> = HashSet::new();
    let mut observed: Vec<Observation> = Vec::new();
    let mut reached = 0usize;
    let mut compile_wall_s = 0.0;
    let mut measure_s = 0.0;
    let mut aborted = None;
    let mut outcome_device = None;
    let mut cublas_ms = None;
    let reference_on;
    let mut db_path = None;
    let mut notes = Vec::new();
    if o.aligned != crate::compile::AlignMode::Auto {
        notes.push(format!("every candidate compiled with --aligned-copies {}", o.aligned.name()));
    }
    // One round: propose, build in parallel, check (and time).
    let batch_size = |strategy: Strategy| match strategy {
        Strategy::Exhaustive | Strategy::Random => (jobs * 4).max(16),
        Strategy::Model => (budget / 8).clamp(1, jobs.max(2)),
    };
    match o.target {
        Target::Sim => {
            let (reference, _) = measure::reference(None, &original, &prepared.args)?;
            reference_on = "sim";
            let chk = Checker {
                original: original.clone(),
                sizes: sizes.clone(),
                scalars: scalars.clone(),
                args: prepared.args,
                reference,
                tolerance,
                tolerance_given: o.tolerance.is_some(),
                aligned: o.aligned,
            };
            while reached < budget {
                let n = batch_size(strategy).min(budget - reached);
                let next = search::propose(strategy, &space, &all, &done, &observed, n, &mut rng);
                if next.is_empty() {
                    break;
                }
                let t0 = Instant::now();
                let got =
                    eval::par_map(&next, jobs, &|c| eval::sim_trial(&module, &o.schedule, &space, c, &chk), &|| {
                        pb.inc(1)
                    });
                compile_wall_s += t0.elapsed().as_secs_f64();
                for t in got {
                    if !t.reached_device && budget < space_size {
                        pb.inc_length(1);
                    }
                    done.insert(t.cand.clone());
                    reached += usize::from(t.reached_device);
                    observed.push((t.cand.clone(), None));
                    trials.push(t);
                }
            }
        }
        Target::Cuda => {
            let gpus: Vec<gpu::Gpu> = o
                .devices
                .iter()
                .map(|d| {
                    gpu::Gpu::open_on(*d).map_err(|e| {
                        format!(
                            "--target cuda needs a GPU: device {d}: {e} (use --target sim to check candidates on the \
                             simulator)"
                        )
                    })
                })
                .collect::<Result<_, _>>()?;
            let g = &gpus[0];
            let device = g.name();
            if let Some(other) = gpus.iter().find(|x| x.name() != device) {
                return Err(format!(
                    "--devices: the GPUs differ ({device}, {}); a tuning database records one kind of GPU",
                    other.name()
                ));
            }
            if gpus.len() > 1 {
                let mut ds = o.devices.clone();
                ds.sort();
                ds.dedup();
                if ds.len() < o.devices.len() {
                    notes.push(
                        "--devices names a GPU more than once: its workers time candidates at the same time, so \
                         their times disturb each other"
                            .to_string(),
                    );
                }
            }
            outcome_device = Some(device.clone());
            let key = key(&o.src, &module, &def.func, &def.name, &device, &defines(o), o.aligned);
            let mut db = Db::open(&o.db)?;
            db_path = Some(o.db.clone());
            let (reference, on) = measure::reference(Some(g), &original, &prepared.args)?;
            reference_on = on;
            let chk = Checker {
                original: original.clone(),
                sizes: sizes.clone(),
                scalars: scalars.clone(),
                args: prepared.args.clone(),
                reference,
                tolerance,
                tolerance_given: o.tolerance.is_some(),
                aligned: o.aligned,
            };
            let benches: Vec<GpuBench> = gpus
                .iter()
                .map(|x| GpuBench::new(x, chk.clone(), &written(&original), o.warmup, o.repeat, o.cap_s))
                .collect::<Result<_, _>>()?;
            let bench = &benches[0];
            if let Some(shape) = measure::matmul_shape(&original) {
                // cuBLAS reads A and B where the kernels do; C is its own.
                let c_buf = g.upload(&prepared.args[shape.c])?;
                let bufs: Option<Vec<&gpu::DeviceBuffer>> = bench
                    .shared
                    .iter()
                    .enumerate()
                    .map(|(i, s)| if i == shape.c { Some(&c_buf) } else { s.as_ref() })
                    .collect();
                if let Some(bufs) = bufs {
                    match measure::cublas(g, shape, &bufs, &prepared.args[shape.c], o.warmup, o.repeat) {
                        Ok((t, _)) => cublas_ms = Some(t),
                        Err(e) => notes.push(format!("no cuBLAS baseline: {e}")),
                    }
                }
            }
            let record = |db: &mut Db, t: &Trial| -> Result<(), String> {
                db.append(Record {
                    key: key.clone(),
                    params: space.values(&t.cand),
                    status: t.status,
                    reason: t.reason.clone(),
                    time_ms: t.time_ms,
                    gflops: t.time_ms.map(|ms| measure::gflops(&original, ms)),
                    rel_err: t.rel_err,
                    compile_s: t.compile_s,
                    cublas_ms,
                    when: db::now(),
                })
            };
            'rounds: while reached < budget {
                let n = batch_size(strategy).min(budget - reached);
                let next = search::propose(strategy, &space, &all, &done, &observed, n, &mut rng);
                if next.is_empty() {
                    break;
                }
                let mut fresh = Vec::new();
                for c in next {
                    done.insert(c.clone());
                    match db.find(&key, &space.values(&c)) {
                        Some(r) => {
                            let t = Trial {
                                cand: c.clone(),
                                status: r.status,
                                reason: r.reason.clone(),
                                time_ms: r.time_ms,
                                rel_err: r.rel_err,
                                compile_s: r.compile_s,
                                block: None,
                                resumed: true,
                                reached_device: true,
                            };
                            reached += 1;
                            observed.push((c, t.time_ms.filter(|_| t.status == Status::Ok)));
                            trials.push(t);
                            pb.inc(1);
                        }
                        None => fresh.push(c),
                    }
                }
                let t0 = Instant::now();
                let (limit, arch) = (g.max_shared_per_block_optin(), g.arch());
                let built = eval::par_map(
                    &fresh,
                    jobs,
                    &|c| eval::gpu_prepare(&module, &o.schedule, &space, c, limit, &arch, &sizes, &scalars, o.aligned),
                    &|| {},
                );
                compile_wall_s += t0.elapsed().as_secs_f64();
                let t1 = Instant::now();
                for m in measure_on_devices(&benches, &built) {
                    let eval::Measured { trial: t, lost } = m;
                    if !t.reached_device && budget < space_size {
                        pb.inc_length(1);
                    }
                    if t.reached_device {
                        record(&mut db, &t)?;
                        reached += 1;
                        observed.push((t.cand.clone(), t.time_ms.filter(|_| t.status == Status::Ok)));
                    }
                    if lost {
                        aborted = Some(format!(
                            "candidate {} failed while running and left the GPU unusable: {}; it is recorded, so \
                             running the same command again resumes after it",
                            space.label(&t.cand),
                            t.reason.clone().unwrap_or_default()
                        ));
                        trials.push(t);
                        break 'rounds;
                    }
                    trials.push(t);
                    pb.inc(1);
                    pb.set_message(best_message(&space, &trials));
                }
                measure_s += t1.elapsed().as_secs_f64();
            }
        }
    }
    pb.finish_and_clear();
    let mut constants: Vec<(String, i64)> = module.constants.iter().map(|c| (c.name.clone(), c.value)).collect();
    constants.sort();
    Ok(Outcome {
        target: o.target,
        device: outcome_device,
        func: def.func.clone(),
        constants,
        space,
        space_size,
        strategy,
        trials,
        flops: tirc_exec::reference::flops(&original),
        reference_on,
        cublas_ms,
        wall_s: start.elapsed().as_secs_f64(),
        compile_wall_s,
        measure_s,
        aborted,
        db_path,
        notes,
    })
}

/// The parameters `tirc run --tuned` uses: the fastest correct record in
/// the database `db` for this file, schedule and constants, on the GPU named
/// `gpu` (or, when `None`, on the GPU of the most recent record). Returns
/// them as `-p` overrides, with the record they come from.
pub fn tuned_params(
    db: &std::path::Path,
    src: &str,
    defines: &[(String, i64)],
    schedule: &str,
    gpu: Option<&str>,
    aligned: crate::compile::AlignMode,
) -> Result<(Vec<(String, String)>, Record), String> {
    let module = crate::compile::load(src, defines)
        .map_err(|ds| ds.into_iter().map(|d| d.message).collect::<Vec<_>>().join("\n"))?;
    let def = module.schedule(schedule).ok_or_else(|| format!("the file has no schedule `{schedule}`"))?;
    let key = key(src, &module, &def.func, schedule, gpu.unwrap_or(""), defines, aligned);
    let d = Db::open(db)?;
    let best = d.best(&key, gpu.is_none()).ok_or_else(|| {
        format!(
            "{} holds no correct, timed candidate of schedule `{schedule}` for this file (as it is now) at these sizes{}: \
             run `tirc tune` first",
            db.display(),
            gpu.map_or(String::new(), |g| format!(" on {g}"))
                + &match aligned {
                    crate::compile::AlignMode::Auto => String::new(),
                    m => format!(" with --aligned-copies {}", m.name()),
                }
        )
    })?;
    let params = best.params.iter().map(|(n, v)| (n.clone(), space::raw(v))).collect();
    Ok((params, best.clone()))
}
