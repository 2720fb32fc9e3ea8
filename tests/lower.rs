//! Per-pass file tests: `tests/lower/<pass>/<case>.tir` is a function as it
//! stands just before the pass `<pass>` (the text `tirc lower
//! --print-after` prints for the pass before it), and
//! `<case>.expected.tir` beside it is that function after the pass alone.
//! For every case the pass must
//! - give exactly the expected text (read it as the pass's contract by
//!   example; `TIRC_BLESS=1 cargo test --test it lower::` rewrites it after a
//!   reviewed change),
//! - leave the invariants `verify_ir` checks after it, and
//! - compute what its input computes, on the simulator, from fresh random
//!   inputs (races are not reported before `insert_barriers` places the
//!   barriers); a function of run-time sizes at each of its `# test-sizes:`
//!   lines.
//!
//! Every pass of the pipeline has a folder with at least one case.

use tirc::compile::load;
use tirc::verify::{sim_check_with, size_values};
use tirc_exec::sim::SimOptions;
use tirc_ir::printer::print_func;
use tirc_ir::PrimFunc;
use tirc_passes::transform::{self, PIPELINE};
use tirc_tests::{bless, read, root};

#[test]
fn each_pass_gives_its_expected_ir_and_keeps_the_result() {
    let barriers = transform::pass_names().iter().position(|p| *p == "insert_barriers").unwrap_or(0);
    let mut failures = Vec::new();
    let mut checked = 0;
    for (i, pass) in PIPELINE.iter().enumerate() {
        let dir = root().join("tests/lower").join(pass.name);
        let mut cases: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
            .map(|d| d.flatten().map(|e| e.path()).collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .filter(|p| p.extension().is_some_and(|x| x == "tir") && !p.to_string_lossy().ends_with(".expected.tir"))
            .collect();
        cases.sort();
        if cases.is_empty() {
            failures.push(format!("{}: no case (tests/lower/{}/*.tir)", pass.name, pass.name));
        }
        for case in cases {
            let name = format!("{}/{}", pass.name, case.file_name().map(|n| n.to_string_lossy()).unwrap_or_default());
            let src = read(&case);
            let module = match load(&src, &[]) {
                Ok(m) => m,
                Err(e) => {
                    failures.push(format!("{name}: does not load: {}", e[0].message));
                    continue;
                }
            };
            let [input] = &module.funcs[..] else {
                failures.push(format!("{name}: expected one function"));
                continue;
            };
            let output = match (pass.run)(input.clone(), &Default::default()) {
                Ok(f) => f,
                Err(e) => {
                    failures.push(format!("{name}: the pass fails: {}", e.message));
                    continue;
                }
            };
            if let Err(e) = transform::verify_ir::after(pass.name, &output, &Default::default()) {
                failures.push(format!("{name}: {}", e.message));
            }
            let text = print_func(&output);
            let expected = case.with_extension("expected.tir");
            if bless() {
                std::fs::write(&expected, &text).unwrap_or_else(|e| panic!("{}: {e}", expected.display()));
            } else if std::fs::read_to_string(&expected).unwrap_or_default() != text {
                failures.push(format!(
                    "{name}: the IR differs from {} (TIRC_BLESS=1 cargo test --test it lower:: rewrites it)",
                    expected.display()
                ));
            }
            let opts = SimOptions { ignore_races: i < barriers, ..SimOptions::default() };
            // A function of run-time sizes runs at each `# test-sizes:` line
            // of the case (`m=40 n=72 k=36`).
            let mut runs: Vec<(PrimFunc, PrimFunc)> = Vec::new();
            if input.sizes.is_empty() {
                runs.push((input.clone(), output.clone()));
            }
            for line in src.lines().filter_map(|l| l.strip_prefix("# test-sizes:")) {
                let defines: Vec<(String, i64)> = line
                    .split_whitespace()
                    .filter_map(|d| d.split_once('='))
                    .filter_map(|(k, v)| Some((k.to_string(), v.parse().ok()?)))
                    .collect();
                let values = size_values(input, &defines);
                runs.push((input.specialize(&values), output.specialize(&values)));
            }
            if runs.is_empty() {
                failures.push(format!("{name}: run-time sizes and no `# test-sizes:` line to run it at"));
            }
            for (before, after) in &runs {
                match sim_check_with(before, after, 11, opts) {
                    Ok((e, tol)) if e.rel_err <= tol && e.non_finite == 0 => {}
                    Ok((e, tol)) => {
                        failures.push(format!("{name}: rel_err {:.3e} > {tol:.0e} after the pass", e.rel_err))
                    }
                    Err(e) => failures.push(format!("{name}: simulating: {e}")),
                }
            }
            checked += 1;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked >= PIPELINE.len());
}
