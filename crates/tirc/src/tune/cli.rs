//! The `tirc tune` command line: its arguments, and its main function, which
//! writes to the given streams so that tests can run it in-process.
//!
//! Exit status: 0 when the run found correct candidates and none was wrong;
//! 1 for bad input (a malformed or empty space, an unknown parameter, a
//! space whose every candidate is rejected), for any candidate whose result
//! is wrong, and when the GPU is lost; 2 for usage errors (from clap).

use super::db::{Db, Status, DEFAULT_DB};
use super::search::{self, Strategy};
use super::space::{parse_space_args, Space};
use super::{report, Options, Outcome, Target};
use crate::compile::{parse_define, parse_param};
use std::io::Write;
use std::path::PathBuf;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq)]
pub enum TargetArg {
    Cuda,
    Sim,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq)]
pub enum StrategyArg {
    /// Every candidate, in order (the default without --budget).
    Exhaustive,
    /// A uniform random sample.
    Random,
    /// Model-guided: a covering design, then what a fitted model of
    /// log(time) predicts fastest (the default with --budget).
    Model,
}

#[derive(clap::Args, Clone, Debug)]
pub struct Args {
    /// The .tir file.
    pub file: PathBuf,
    /// The schedule whose parameters to tune.
    #[arg(long, short = 's')]
    pub schedule: String,
    /// Override a module constant (compile-time: the kernel is specialized to it), or give a size variable (`n: T.int32`, `m = T.int32()`) its run-time value (the kernel takes it as an argument; see --specialize): -D M=64 -D m=1000.
    #[arg(short = 'D', value_name = "NAME=VALUE", value_parser = parse_define)]
    pub define: Vec<(String, i64)>,
    /// Hold a schedule parameter at one value: -p BK=32.
    #[arg(short = 'p', value_name = "NAME=VALUE", value_parser = parse_param)]
    pub param: Vec<(String, String)>,
    /// Candidate values, over the schedule's own space: 'BM=32,64;TM=4,8',
    /// or the flag once per parameter.
    #[arg(long, value_name = "NAME=V1,V2;...")]
    pub space: Vec<String>,
    /// Measure at most N candidates, chosen by --strategy.
    #[arg(long, value_name = "N")]
    pub budget: Option<usize>,
    #[arg(long, value_enum)]
    pub strategy: Option<StrategyArg>,
    /// Threads that build candidates (default: the available cores).
    #[arg(long, short = 'j', value_name = "J")]
    pub jobs: Option<usize>,
    /// cuda: check and time on the GPU; sim: check every candidate on the
    /// simulator at the file's `# test-sizes:`, with no timing.
    #[arg(long, value_enum, default_value = "cuda")]
    pub target: TargetArg,
    /// The tuning database (JSON Lines).
    #[arg(long, default_value = DEFAULT_DB)]
    pub db: PathBuf,
    /// Warm-up launches before timing.
    #[arg(long, default_value_t = crate::measure::DEFAULT_WARMUP)]
    pub warmup: usize,
    /// Timed launches per candidate; the median is kept.
    #[arg(long, default_value_t = crate::measure::DEFAULT_REPEAT)]
    pub repeat: usize,
    /// Seconds of launches timing one candidate may take: slower candidates
    /// get 2 warm-up launches and as many timed ones as fit, at least 3.
    #[arg(long, value_name = "SECONDS", default_value_t = 2.0)]
    pub time_cap: f64,
    /// Seed of the random inputs (default: from the clock).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Largest relative error accepted.
    #[arg(long)]
    pub tolerance: Option<f64>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// The GPUs that check and time candidates, one worker each: --devices
    /// 0,1 (each candidate is built once and loaded on the device that
    /// measures it; the GPUs must be of one kind).
    #[arg(long, value_delimiter = ',', default_value = "0")]
    pub devices: Vec<usize>,
    /// Draw each measured candidate's time against each parameter into
    /// this SVG file (one panel per parameter).
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// No progress bar (it is drawn on stderr, and only on a terminal).
    #[arg(long)]
    pub no_progress: bool,
    /// Tune at each of these values of the function's run-time sizes (`m =
    /// T.int32()`), comma-separated: `m=1,m=1000` (or `1,1000` for a
    /// function of one size; `m=8:n=16` for several), one tuning each; then
    /// the candidate that, compiled once, is closest to each size's best,
    /// and the spread.
    #[arg(long, value_delimiter = ',', value_name = "SIZES")]
    pub sizes: Vec<String>,
    /// Measure nothing: replay the search strategies under --budget against
    /// the times the database holds for this space (a finished sweep), and
    /// say how close each comes to the best.
    #[arg(long)]
    pub evaluate_strategy: bool,
    /// As `run --aligned-copies`: which misaligned inputs the candidates copy into aligned rows first (`auto`, `always`, `never`). The database keeps the mode with each record; `run --tuned` takes the records of its own mode.
    #[arg(long, value_name = "WHEN", default_value = "auto", value_parser = crate::compile::AlignMode::parse)]
    pub aligned_copies: crate::compile::AlignMode,
}

/// Parses a whole command line (`tune FILE ...`, without the program name)
/// and runs it; for tests.
pub fn run_argv(argv: &[&str], out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    match crate::cli::parse_subcommand::<Args>("tune", argv) {
        Ok(a) => main(a, out, err),
        Err(e) => {
            let _ = write!(err, "{e}");
            2
        }
    }
}

fn options(a: &Args, src: String) -> Result<Options, String> {
    let space = parse_space_args(&a.space)?;
    let seed = a.seed.unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
    });
    Ok(Options {
        file: a.file.clone(),
        src,
        schedule: a.schedule.clone(),
        defines: a.define.clone(),
        fixed: a.param.clone(),
        space,
        budget: a.budget,
        strategy: a.strategy.map(|s| match s {
            StrategyArg::Exhaustive => Strategy::Exhaustive,
            StrategyArg::Random => Strategy::Random,
            StrategyArg::Model => Strategy::Model,
        }),
        jobs: a.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        target: match a.target {
            TargetArg::Cuda => Target::Cuda,
            TargetArg::Sim => Target::Sim,
        },
        db: a.db.clone(),
        warmup: a.warmup,
        repeat: a.repeat.max(1),
        cap_s: a.time_cap,
        seed,
        tolerance: a.tolerance,
        progress: !a.no_progress && !a.json,
        devices: a.devices.clone(),
        aligned: a.aligned_copies,
    })
}

pub fn main(a: Args, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let src = match std::fs::read_to_string(&a.file) {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(err, "error: cannot read {}: {e}", a.file.display());
            return 1;
        }
    };
    let o = match options(&a, src) {
        Ok(o) => o,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            return 1;
        }
    };
    // Diagnostics of the file itself are rendered against its text.
    if let Err(ds) = super::load(&o) {
        let name = a.file.display().to_string();
        for d in ds {
            let _ = write!(err, "{}", d.render(&name, &o.src));
        }
        return 1;
    }
    if a.evaluate_strategy {
        return evaluate(&a, &o, out, err);
    }
    if !a.sizes.is_empty() {
        return over_sizes(&a, &o, out, err);
    }
    let file = a.file.display().to_string();
    let outcome = match super::tune(&o) {
        Ok(x) => x,
        Err(e) => {
            if a.json {
                let _ = writeln!(out, "{}", serde_json::json!({"status": "error", "error": e}));
            }
            let _ = writeln!(err, "error: {e}");
            return 1;
        }
    };
    let code = print_report(&a, &file, &outcome, "", out, err);
    if let Some(path) = &a.plot {
        match plot(&outcome, &a.schedule, path) {
            Ok(true) => {
                let _ = writeln!(err, "wrote {}", path.display());
            }
            Ok(false) => {
                let _ = writeln!(err, "note: no candidate was timed (--target sim times nothing): no plot");
            }
            Err(e) => {
                let _ = writeln!(err, "error: {e}");
                return 1;
            }
        }
    }
    code
}

/// `--plot`: the measured candidates' times against each parameter (text
/// values at their position in the space). False when nothing was timed.
fn plot(o: &super::Outcome, schedule: &str, path: &std::path::Path) -> Result<bool, String> {
    use tirc_ir::func::ParamValue;
    let timed: Vec<&super::eval::Trial> = o.trials.iter().filter(|t| t.time_ms.is_some()).collect();
    if timed.is_empty() {
        return Ok(false);
    }
    let panels: Vec<crate::plot::Panel> = o
        .space
        .params
        .iter()
        .enumerate()
        .map(|(i, (name, values))| {
            let text = values.iter().any(|v| matches!(v, ParamValue::Str(_)));
            let points = timed
                .iter()
                .map(|t| {
                    let x = match &values[t.cand[i]] {
                        ParamValue::Int(v) if !text => *v as f64,
                        _ => t.cand[i] as f64,
                    };
                    (x, t.time_ms.unwrap_or(f64::NAN))
                })
                .collect();
            let categories = text.then(|| values.iter().map(|v| v.to_string()).collect());
            crate::plot::Panel { name: name.clone(), points, categories }
        })
        .collect();
    let device = o.device.clone().unwrap_or_else(|| "GPU".into());
    let title = format!("{} -s {schedule}: {} candidates on {device}", o.func, timed.len());
    crate::plot::scatter_panels(path, &title, "time (ms)", &panels)?;
    Ok(true)
}

/// The run's status word, exit code, and the error to print.
fn verdict(o: &Outcome) -> (&'static str, u8, Option<String>) {
    let bad = o.trials.iter().filter(|t| matches!(t.status, Status::Mismatch | Status::Crashed)).count();
    let ok = o.trials.iter().filter(|t| t.status == Status::Ok).count();
    if let Some(a) = &o.aborted {
        return ("aborted", 1, Some(a.clone()));
    }
    if bad > 0 {
        return (
            "mismatch",
            1,
            Some(format!("{bad} candidates gave wrong results (listed above); they are not ranked")),
        );
    }
    if ok == 0 {
        let reasons: Vec<String> = report::rejections(o)
            .into_iter()
            .map(|(c, n, ex)| {
                format!("{n} x {c} (e.g. {}: {})", o.space.label(&ex.cand), ex.reason.as_deref().unwrap_or(""))
            })
            .collect();
        return (
            "all_rejected",
            1,
            Some(format!(
                "every candidate of the space was rejected: {}",
                if reasons.is_empty() { "none was tried".into() } else { reasons.join("; ") }
            )),
        );
    }
    ("ok", 0, None)
}

/// `--evaluate-strategy`: replays each strategy against the recorded times.
fn evaluate(a: &Args, o: &Options, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let fail = |err: &mut dyn Write, m: String| {
        let _ = writeln!(err, "error: {m}");
        1
    };
    let Some(budget) = a.budget else {
        return fail(err, "--evaluate-strategy needs --budget N: the number of measurements each strategy gets".into());
    };
    let module = match super::load(o) {
        Ok(m) => m,
        Err(_) => return 1,
    };
    let Some(def) = module.schedule(&o.schedule) else {
        return fail(err, format!("the file has no schedule `{}`", o.schedule));
    };
    let space = match Space::resolve(def, &o.space, &o.fixed) {
        Ok(s) => s,
        Err(e) => return fail(err, e),
    };
    let db = match Db::open(&o.db) {
        Ok(d) => d,
        Err(e) => return fail(err, e),
    };
    let key = super::key(&o.src, &module, &def.func, &def.name, "", &super::defines(o), o.aligned);
    let Some(latest) = db.best(&key, true) else {
        return fail(err, format!("{} holds no timed candidate of this problem: run the sweep first", o.db.display()));
    };
    let key = super::db::Key { gpu: latest.key.gpu.clone(), ..key };
    let mut all = Vec::new();
    let mut times = std::collections::HashMap::new();
    for c in space.candidates() {
        if let Some(r) = db.find(&key, &space.values(&c)) {
            times.insert(c.clone(), r.time_ms.filter(|_| r.status == Status::Ok));
            all.push(c);
        }
    }
    let time = |c: &Vec<usize>| times.get(c).copied().flatten();
    let missing = space.size().unwrap_or(0) - all.len();
    let _ = writeln!(
        out,
        "replaying strategies on {} recorded candidates from {} ({}); {missing} without a record left out",
        all.len(),
        o.db.display(),
        key.gpu
    );
    let best = all.iter().filter_map(time).fold(f64::INFINITY, f64::min);
    let _ = writeln!(out, "best recorded: {best:.4} ms; budget {budget} measurements, 4 at a time, 200 replays each");
    let _ = writeln!(out, "{:<12} {:>22} {:>18}", "strategy", "mean best/optimum", "found the optimum");
    for s in [Strategy::Model, Strategy::Random] {
        let r = search::replay(s, &space, &all, &time, budget, 4, 200);
        let _ = writeln!(out, "{:<12} {:>22.3} {:>17.0}%", s.name(), r.mean_ratio, r.found_best * 100.0);
    }
    0
}

/// Prints a tuning's report (text or JSON) and its verdict's error, whose
/// line says where (` at m=17`); returns the exit code.
fn print_report(a: &Args, file: &str, x: &Outcome, at: &str, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let (status, code, why) = verdict(x);
    if a.json {
        let _ = writeln!(out, "{}", report::json(x, file, &a.schedule, status));
    } else {
        let _ = write!(out, "{}", report::text(x, file, &a.schedule));
    }
    if let Some(w) = why {
        let _ = writeln!(err, "error{at}: {w}");
    }
    code
}

/// `--sizes`: one tuning per value of the run-time sizes, each reported as
/// usual, then a summary: each size's best candidate, and the one candidate
/// whose worst slowdown against those bests is smallest (what to compile
/// once for all of them), with its slowdown at each size.
fn over_sizes(a: &Args, o: &Options, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let fail = |err: &mut dyn Write, m: String| {
        let _ = writeln!(err, "error: {m}");
        1
    };
    let names: Vec<String> = match super::load(o) {
        Ok(m) => m
            .schedule(&o.schedule)
            .and_then(|d| m.func(&d.func))
            .map(|f| f.sizes.iter().map(|v| v.name().to_string()).collect())
            .unwrap_or_default(),
        // `main` has rendered the file's diagnostics already.
        Err(_) => return 1,
    };
    if names.is_empty() {
        return fail(
            err,
            "--sizes gives values to run-time sizes, and this function has none (module constants take -D)".into(),
        );
    }
    let mut sets: Vec<Vec<(String, i64)>> = Vec::new();
    for item in &a.sizes {
        let set: Result<Vec<(String, i64)>, String> = match item.trim().parse::<i64>() {
            Ok(v) if names.len() == 1 => Ok(vec![(names[0].clone(), v)]),
            Ok(_) => Err(format!("--sizes {item}: the function has several sizes ({}); name them", names.join(", "))),
            Err(_) => item.split(':').map(parse_define).collect(),
        };
        match set {
            Ok(s) => sets.push(s),
            Err(e) => return fail(err, e),
        }
    }
    // A -D of a size --sizes also gives would be overridden silently.
    if let Some((n, v)) = o.defines.iter().find(|(n, _)| sets.iter().flatten().any(|(m, _)| m == n)) {
        return fail(
            err,
            format!("-D {n}={v} and --sizes both give `{n}`: --sizes tunes at each of its values; leave out the -D"),
        );
    }
    let file = a.file.display().to_string();
    let mut outcomes = Vec::new();
    let mut code = 0;
    for set in &sets {
        let label: Vec<String> = set.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let label = label.join(" ");
        let mut os = o.clone();
        os.defines.extend(set.iter().cloned());
        let _ = writeln!(out, "== at {label}");
        match super::tune(&os) {
            Ok(x) => {
                code = code.max(print_report(a, &file, &x, &format!(" at {label}"), out, err));
                outcomes.push((label, x));
            }
            Err(e) => {
                let _ = writeln!(err, "error at {label}: {e}");
                return 1;
            }
        }
    }
    let _ = write!(out, "{}", spread(&outcomes));
    code
}

/// The summary of `--sizes`.
fn spread(outcomes: &[(String, Outcome)]) -> String {
    let mut s = String::from("\n== one kernel for every size\n");
    let time = |x: &Outcome, c: &super::space::Candidate| {
        x.trials.iter().find(|t| &t.cand == c && t.status == Status::Ok).and_then(|t| t.time_ms)
    };
    let bests: Vec<Option<(super::space::Candidate, f64)>> = outcomes
        .iter()
        .map(|(_, x)| {
            x.trials
                .iter()
                .filter(|t| t.status == Status::Ok)
                .filter_map(|t| t.time_ms.map(|ms| (t.cand.clone(), ms)))
                .min_by(|a, b| a.1.total_cmp(&b.1))
        })
        .collect();
    if bests.iter().any(|b| b.is_none()) {
        s += "no candidate was timed at every size (the simulator times nothing): nothing to choose\n";
        return s;
    }
    let bests: Vec<(super::space::Candidate, f64)> = bests.into_iter().flatten().collect();
    // Candidates timed and correct at every size, by their worst slowdown.
    let mut chosen: Option<(super::space::Candidate, f64, Vec<f64>)> = None;
    for t in &outcomes[0].1.trials {
        let slow: Option<Vec<f64>> =
            outcomes.iter().zip(&bests).map(|((_, x), (_, b))| time(x, &t.cand).map(|ms| ms / b)).collect();
        if let Some(slow) = slow {
            let worst = slow.iter().cloned().fold(1.0, f64::max);
            if chosen.as_ref().is_none_or(|(_, w, _)| worst < *w) {
                chosen = Some((t.cand.clone(), worst, slow));
            }
        }
    }
    let space = &outcomes[0].1.space;
    s += &format!("{:<16} {:<32} {:>10} {:>12}\n", "size", "best there", "best ms", "chosen / best");
    let slows = chosen.as_ref().map(|(_, _, v)| v.clone()).unwrap_or_default();
    for (i, ((label, _), (c, ms))) in outcomes.iter().zip(&bests).enumerate() {
        let ratio = slows.get(i).map_or("-".to_string(), |r| format!("{r:.3}x"));
        s += &format!("{label:<16} {:<32} {ms:>10.4} {ratio:>12}\n", space.label(c));
    }
    match chosen {
        Some((c, worst, v)) => {
            let geo = (v.iter().map(|r| r.ln()).sum::<f64>() / v.len() as f64).exp();
            s += &format!(
                "chosen: {} — at worst {worst:.3}x the best of a size, {geo:.3}x on the geometric mean: compile it once (-p) for all these sizes\n",
                space.label(&c)
            );
        }
        None => s += "no candidate was correct and timed at every size\n",
    }
    s
}
