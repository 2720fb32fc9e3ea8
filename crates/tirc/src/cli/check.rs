//! `tirc check FILE`: parse, resolve, and run every schedule of the file;
//! report every problem with its span. With `--run`, also simulate each
//! schedule at the file's `# test-sizes:` (and `# test-params:`) and check
//! it against the unscheduled function, one line per schedule.

use super::{read, report, FAIL};
use crate::compile::{compile_module, load, Request};

#[derive(clap::Args)]
pub struct Args {
    /// The .tir file.
    pub file: std::path::PathBuf,
    /// Override a module constant (compile-time: the kernel is specialized to it), or give a size variable (`n: T.int32`, `m = T.int32()`) its run-time value (the kernel takes it as an argument; see --specialize): -D M=64 -D m=1000.
    #[arg(short = 'D', value_name = "NAME=VALUE", value_parser = crate::compile::parse_define)]
    pub define: Vec<(String, i64)>,
    /// Also run each schedule on the simulator at the file's `# test-sizes:`
    /// (overridden by -D) and check it against the unscheduled function.
    #[arg(long)]
    pub run: bool,
    /// Seed of the random inputs of --run.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

pub fn main(mut a: Args) -> u8 {
    // A name given twice takes its last value.
    a.define = super::last_of_each(&a.define);
    let src = match read(&a.file) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let module = match load(&src, &a.define) {
        Ok(m) => m,
        Err(ds) => {
            report(&a.file, &src, &ds);
            return FAIL;
        }
    };
    let names: Vec<&str> = module.schedules.iter().map(|s| s.name.as_str()).collect();
    let mut errors = crate::tune::directive_errors(&src, &names);
    for s in &module.schedules {
        let req = Request { schedule: Some(s.name.clone()), ..Request::default() };
        if let Err(d) = compile_module(module.clone(), &req) {
            errors.push(d);
        }
    }
    if module.schedules.is_empty() {
        for f in &module.funcs {
            let req = Request { func: Some(f.name.clone()), ..Request::default() };
            if let Err(d) = compile_module(module.clone(), &req) {
                errors.push(d);
            }
        }
    }
    report(&a.file, &src, &errors);
    if !errors.is_empty() {
        return FAIL;
    }
    if a.run {
        return simulate_all(&a, &src);
    }
    0
}

/// `--run`: every schedule (or, with none, every function) simulated at
/// each `# test-sizes:` line (with -D over it) and checked; one line each
/// on stdout.
fn simulate_all(a: &Args, src: &str) -> u8 {
    let mut sets = crate::tune::test_size_sets(src);
    if sets.is_empty() {
        sets.push(Vec::new());
    }
    let mut done: Vec<Vec<(String, i64)>> = Vec::new();
    let mut code = 0;
    for mut defines in sets {
        defines.retain(|(k, _)| !a.define.iter().any(|(d, _)| d == k));
        defines.extend(a.define.iter().cloned());
        // -D may make two lines the same.
        if !done.contains(&defines) {
            code = code.max(simulate_at(a, src, &defines));
            done.push(defines);
        }
    }
    code
}

/// `--run` at one set of sizes.
fn simulate_at(a: &Args, src: &str, defines: &[(String, i64)]) -> u8 {
    let module = match load(src, defines) {
        Ok(m) => m,
        Err(ds) => {
            report(&a.file, src, &ds);
            return FAIL;
        }
    };
    let sizes: Vec<String> = defines.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let at = if sizes.is_empty() { "at the file's sizes".to_string() } else { format!("at {}", sizes.join(" ")) };
    let mut requests: Vec<(String, Request)> = module
        .schedules
        .iter()
        .map(|s| {
            let params = crate::tune::test_params(src, &s.name);
            (s.name.clone(), Request { schedule: Some(s.name.clone()), params, ..Request::default() })
        })
        .collect();
    if requests.is_empty() {
        requests = module
            .funcs
            .iter()
            .map(|f| (f.name.clone(), Request { func: Some(f.name.clone()), ..Request::default() }))
            .collect();
    }
    let mut failed = false;
    for (name, req) in requests {
        let shown: Vec<String> = req.params.iter().map(|(k, v)| format!(" -p {k}={v}")).collect();
        let label = format!("{name}{} {at}", shown.join(""));
        let compiled = compile_module(module.clone(), &req)
            .and_then(|c| c.bind_sizes(defines))
            // Scalar parameters (`alpha: T.float32`) take a value drawn
            // from the seed, as `tirc run` gives them without a -D.
            .map(|c| c.bind_scalars(defines, &[], a.seed));
        let c = match compiled {
            Ok(c) => c,
            Err(d) => {
                // The line, then the diagnostic with its span, as `tirc
                // run` shows it.
                failed = true;
                println!("{label}: error: {}", d.message);
                report(&a.file, src, &[d]);
                continue;
            }
        };
        let kernels: Vec<_> = c.kernels.iter().map(|k| k.lowered.clone()).collect();
        let outcome = crate::verify::sim_check_kernels(&c.original, &kernels, &c.intermediates, a.seed);
        match outcome {
            Ok((e, tol)) if e.rel_err <= tol && e.non_finite == 0 => {
                println!("{label}: ok, rel_err {:.3e} (tolerance {tol:.0e})", e.rel_err)
            }
            Ok((e, tol)) => {
                failed = true;
                println!("{label}: MISMATCH, rel_err {:.3e} (tolerance {tol:.0e})", e.rel_err)
            }
            Err(e) => {
                failed = true;
                println!("{label}: error: {e}")
            }
        }
    }
    if failed {
        FAIL
    } else {
        0
    }
}
