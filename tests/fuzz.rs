//! Robustness: mutants of the example corpus and of TVM-printed text never
//! make tirc panic. A hand-rolled mutator with a fixed seed and a fixed
//! budget (so the run is the same every time and short enough for CI)
//! deletes, duplicates, swaps and re-indents lines, replaces tokens with
//! other tokens that tirc gives meaning to (names of `T.` functions, data
//! types, thread tags, awkward numbers), and truncates the text. Each mutant
//! goes through the whole pipeline: parse, resolve, and, for every schedule
//! (or for each function), scheduling, lowering and CUDA generation. Bad
//! input must come back as diagnostics whose spans lie inside the text, and
//! a small mutant that compiles must run on the simulator to the result of
//! its unscheduled function.
//!
//! An input that once panicked is kept in `tests/data/fuzz/` and checked the
//! same way on every run. `TIRC_FUZZ_ITERS=N` changes the budget, and
//! `TIRC_FUZZ_SEED=S` the seed, for longer local runs.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use tirc::compile::{compile_module, load, Compiled, Request};
use tirc::verify::{reference_sim, sim_check_kernels};
use tirc_ir::Stmt;
use tirc_tests::{examples, read, root, test_params, test_sizes};

/// Mutants per run, unless `TIRC_FUZZ_ITERS` says otherwise.
const DEFAULT_ITERS: usize = 4000;

/// xorshift64*: small, deterministic, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

/// Tokens a mutant may get: words tirc gives meaning to, and awkward values.
const DICTIONARY: &[&str] = &[
    "T.grid",
    "T.serial",
    "T.parallel",
    "T.vectorized",
    "T.unroll",
    "T.thread_binding",
    "range",
    "T.block",
    "T.sblock",
    "T.init",
    "T.where",
    "T.reads",
    "T.writes",
    "T.axis.remap",
    "T.axis.spatial",
    "T.axis.reduce",
    "T.alloc_buffer",
    "T.match_buffer",
    "T.Buffer",
    "T.handle",
    "T.decl_buffer",
    "T.allocate",
    "T.launch_thread",
    "T.env_thread",
    "T.attr",
    "T.tvm_storage_sync",
    "T.func_attr",
    "T.block_attr",
    "T.Cast",
    "T.max",
    "T.min",
    "T.if_then_else",
    "T.Select",
    "T.likely",
    "T.exp",
    "T.floordiv",
    "T.floormod",
    "T.min_value",
    "T.float32",
    "T.int64",
    "T.bool",
    "\"float16\"",
    "\"int8\"",
    "\"bool\"",
    "\"bfloat16\"",
    "\"SSR\"",
    "\"RS\"",
    "\"\"",
    "\"shared\"",
    "\"local\"",
    "\"threadIdx.x\"",
    "\"blockIdx.z\"",
    "\"vthread\"",
    "0",
    "-1",
    "1",
    "3",
    "1024",
    "2147483647",
    "4294967296",
    "9223372036854775807",
    "0.5",
    "1e40",
    "None",
    "True",
    "[]",
    "()",
    "(1, 2)",
    "[None, 0]",
    "sch.split",
    "sch.fuse",
    "sch.reorder",
    "sch.bind",
    "sch.unroll",
    "sch.vectorize",
    "sch.parallel",
    "sch.decompose_reduction",
    "sch.get_loops",
    "sch.get_block",
    "factors",
    "thread",
    "scope",
    "data",
    "dtype",
    ":",
    ",",
    "(",
    ")",
    "[",
    "]",
    "=",
    "+",
    "*",
    "//",
    "%",
    "<",
    "and",
    "not",
    "with",
    "for",
    "if",
    "else",
    "def",
    "@T.prim_func",
    "\n",
    "    ",
];

/// Where identifiers, numbers, strings and punctuation start and end.
fn tokens(src: &str) -> Vec<(usize, usize)> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        if c.is_ascii_alphanumeric() || c == b'_' || c == b'.' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.') {
                i += 1;
            }
        } else if c == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' && b[i] != b'\n' {
                i += 1;
            }
            i = (i + 1).min(b.len());
        } else if c.is_ascii_punctuation() {
            i += 1;
        } else {
            i += 1;
            continue;
        }
        out.push((start, i));
    }
    out
}

fn mutate(src: &str, rng: &mut Rng) -> String {
    let lines: Vec<&str> = src.lines().collect();
    let n = lines.len().max(1);
    match rng.below(10) {
        0 => {
            let k = rng.below(n);
            lines.iter().enumerate().filter(|(i, _)| *i != k).map(|(_, l)| format!("{l}\n")).collect()
        }
        1 => {
            let k = rng.below(n);
            let mut v: Vec<&str> = lines.clone();
            if let Some(l) = lines.get(k) {
                v.insert(k, l);
            }
            v.iter().map(|l| format!("{l}\n")).collect()
        }
        2 => {
            let (a, b) = (rng.below(n), rng.below(n));
            let mut v = lines.clone();
            if a < v.len() && b < v.len() {
                v.swap(a, b);
            }
            v.iter().map(|l| format!("{l}\n")).collect()
        }
        3 => {
            // Re-indent one line by a few spaces either way.
            let k = rng.below(n);
            let shift = rng.below(3);
            lines
                .iter()
                .enumerate()
                .map(|(i, l)| {
                    if i != k {
                        format!("{l}\n")
                    } else if shift == 0 {
                        format!("{}\n", l.strip_prefix("    ").unwrap_or(l))
                    } else {
                        format!("{}{l}\n", " ".repeat(shift * 2))
                    }
                })
                .collect()
        }
        4 => {
            // Truncate anywhere (on a char boundary).
            let mut cut = rng.below(src.len() + 1);
            while !src.is_char_boundary(cut) {
                cut -= 1;
            }
            src[..cut].to_string()
        }
        5..=7 => {
            // Replace a token with a dictionary word.
            let toks = tokens(src);
            if toks.is_empty() {
                return src.to_string();
            }
            let (s, e) = *rng.pick(&toks);
            format!("{}{}{}", &src[..s], rng.pick(DICTIONARY), &src[e..])
        }
        8 => {
            // Replace a token with another token of the same text.
            let toks = tokens(src);
            if toks.len() < 2 {
                return src.to_string();
            }
            let (s, e) = *rng.pick(&toks);
            let (s2, e2) = *rng.pick(&toks);
            format!("{}{}{}", &src[..s], &src[s2..e2], &src[e..])
        }
        _ => {
            // Delete a token.
            let toks = tokens(src);
            if toks.is_empty() {
                return src.to_string();
            }
            let (s, e) = *rng.pick(&toks);
            format!("{}{}", &src[..s], &src[e..])
        }
    }
}

/// `Err` unless every diagnostic's span lies inside the text (a diagnostic
/// without a span, from lowering, points at nothing).
fn spans_inside(src: &str, ds: &[tirc_ir::Diagnostic]) -> Result<(), String> {
    for d in ds {
        match d.span {
            None => {}
            Some(s) if s.start <= s.end && s.end <= src.len() => {}
            other => return Err(format!("diagnostic `{}` has span {other:?}", d.message)),
        }
    }
    Ok(())
}

/// Iterations of the statements of `s`, loops multiplying (a loop of no
/// constant extent counts once), for keeping simulated mutants small.
fn work(s: &Stmt) -> u64 {
    match s {
        Stmt::For(l) => (l.extent.as_int().unwrap_or(1).max(1) as u64).saturating_mul(work(&l.body)),
        Stmt::Launch { extent, body, .. } => (extent.as_int().unwrap_or(1).max(1) as u64).saturating_mul(work(body)),
        Stmt::Seq(v) => v.iter().map(work).fold(0, u64::saturating_add),
        Stmt::If { then, orelse, .. } => work(then).max(orelse.as_deref().map_or(0, work)),
        Stmt::Let { body, .. } | Stmt::Allocate { body, .. } => work(body),
        Stmt::Block(r) => work(&r.block.body).saturating_add(r.block.init.as_ref().map_or(0, work)),
        _ => 1,
    }
}

/// Mutants whose kernels were simulated and matched their reference.
static SIMULATED: AtomicUsize = AtomicUsize::new(0);

/// Small enough to simulate in a few milliseconds.
const SIM_WORK: u64 = 1 << 18;

/// A mutant that compiles is a program tirc vouches for: where it is small,
/// its kernels must compute what the unscheduled function computes, on the
/// simulator. A kernel that fails (out of bounds, a race) where the
/// reference runs is a miscompilation too.
fn simulate(c: &Compiled) -> Result<(), String> {
    // The parameters and every buffer the function allocates (the
    // reference holds its intermediates in global memory).
    let mut buffers: Vec<tirc_ir::Buffer> = c.original.params.clone();
    c.original.body.walk(&mut |s| match s {
        tirc_ir::Stmt::Block(r) => buffers.extend(r.block.alloc_buffers.iter().cloned()),
        tirc_ir::Stmt::Allocate { buffer, .. } => buffers.push(buffer.clone()),
        _ => {}
    });
    let elements: i64 = buffers.iter().map(|b| b.num_elements().unwrap_or(i64::MAX)).fold(0, i64::saturating_add);
    let total = c.kernels.iter().map(|k| work(&k.lowered.body)).fold(work(&c.original.body), u64::saturating_add);
    if elements > 1 << 14 || total > SIM_WORK {
        return Ok(());
    }
    let kernels: Vec<_> = c.kernels.iter().map(|k| k.lowered.clone()).collect();
    match sim_check_kernels(&c.original, &kernels, &c.intermediates, 1) {
        Ok((e, tol)) if e.rel_err <= tol && e.non_finite == 0 => {
            SIMULATED.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }
        Ok((e, tol)) => {
            Err(format!("miscompiled: rel_err {:.3e} > {tol:.1e} ({} non-finite)", e.rel_err, e.non_finite))
        }
        Err(why) => {
            let Ok(inputs) = tirc::measure::prepare(&c.original, 1) else { return Ok(()) };
            match reference_sim(&c.original, &inputs.args) {
                Ok(_) if !tirc::measure::is_nothing_to_check(&why) => {
                    Err(format!("the kernel fails where the reference runs: {why}"))
                }
                _ => Ok(()),
            }
        }
    }
}

/// Runs the whole pipeline on `src`; `Err` with a description when it panics,
/// reports a diagnostic whose span is not inside the text, or compiles a
/// small program into kernels that compute something else.
fn pipeline(src: &str) -> Result<(), String> {
    let outcome = catch_unwind(AssertUnwindSafe(|| -> Result<(), String> {
        // Examples declare the small sizes and parameters they are checked at.
        let module = match load(src, &test_sizes(src)) {
            Ok(m) => m,
            Err(ds) => {
                spans_inside(src, &ds)?;
                return if ds.is_empty() { Err("load failed without a diagnostic".into()) } else { Ok(()) };
            }
        };
        let mut requests: Vec<Request> = module
            .schedules
            .iter()
            .map(|s| Request {
                schedule: Some(s.name.clone()),
                params: test_params(src, &s.name),
                ..Request::default()
            })
            .collect();
        if requests.is_empty() {
            requests =
                module.funcs.iter().map(|f| Request { func: Some(f.name.clone()), ..Request::default() }).collect();
        }
        for req in requests {
            match compile_module(module.clone(), &req) {
                Ok(c) => simulate(&c)?,
                Err(d) => spans_inside(src, std::slice::from_ref(&d))?,
            }
        }
        Ok(())
    }));
    match outcome {
        Ok(r) => r,
        Err(p) => Err(p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic".into())),
    }
}

fn corpus() -> Vec<PathBuf> {
    let mut v = examples();
    for dir in ["tests/data/tvm", "tests/data/schedule"] {
        if let Ok(d) = std::fs::read_dir(root().join(dir)) {
            v.extend(d.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "tir")));
        }
    }
    v.sort();
    v
}

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[test]
fn mutants_of_the_corpus_never_panic() {
    let files: Vec<(PathBuf, String)> = corpus().into_iter().map(|p| (p.clone(), read(&p))).collect();
    assert!(!files.is_empty());
    let iters = env_num("TIRC_FUZZ_ITERS", DEFAULT_ITERS as u64) as usize;
    let mut rng = Rng(env_num("TIRC_FUZZ_SEED", 0x7469_7263_2d66_757a) | 1);
    // Quiet the panics this test catches on purpose; other threads (other
    // tests) keep the default report.
    let fuzz_thread = std::thread::current().id();
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().id() != fuzz_thread {
            default_hook(info);
        }
    }));
    let mut failures = Vec::new();
    for i in 0..iters {
        let (path, src) = rng.pick(&files);
        let mut text = src.clone();
        for _ in 0..=rng.below(3) {
            text = mutate(&text, &mut rng);
        }
        if let Err(why) = pipeline(&text) {
            let out = std::env::temp_dir().join(format!("tirc-fuzz-{i}.tir"));
            std::fs::write(&out, &text).ok();
            failures.push(format!("mutant {i} of {}: {why} (saved as {})", path.display(), out.display()));
            if failures.len() >= 5 {
                break;
            }
        }
    }
    // Back to the default report, for the assertion below.
    drop(std::panic::take_hook());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The check of results must have run, not been skipped by size.
    let simulated = SIMULATED.load(Ordering::Relaxed);
    println!("{iters} mutants, {simulated} compiled, simulated and matched their reference");
    assert!(simulated >= iters / 20, "only {simulated} of {iters} mutants were simulated");
}

#[test]
fn inputs_that_once_panicked_do_not() {
    let mut n = 0;
    for e in std::fs::read_dir(root().join("tests/data/fuzz")).into_iter().flatten().flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "tir") {
            if let Err(why) = pipeline(&read(&p)) {
                panic!("{}: {why}", p.display());
            }
            n += 1;
        }
    }
    assert!(n > 0, "tests/data/fuzz holds no .tir file: this test would check nothing");
}
