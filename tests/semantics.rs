//! Semantics on the simulator: every schedule of every example, at the small
//! sizes of its `# test-sizes:` line and with the parameters of its
//! `# test-params:` lines, is run after every primitive of the
//! schedule and after every lowering pass, on fresh random inputs, and must
//! match the unscheduled function evaluated in float64. From the pass that
//! places barriers on, shared memory must also be free of races. A function
//! of run-time sizes is specialized to the test sizes' values before each
//! run (what its generic kernel computes for them); the lowered kernels are
//! also run at the file's other `# test-sizes:` lines.

use tirc::compile::load;
use tirc::tune::test_size_sets;
use tirc::verify::{sim_check_kernels_with, size_values};
use tirc_exec::sim::SimOptions;
use tirc_ir::{Buffer, PrimFunc};
use tirc_passes::schedule::interp::run_schedule_observed;
use tirc_passes::transform;
use tirc_passes::transform::split_kernels::split_kernels;
use tirc_tests::{examples, read, test_params, test_sizes};

fn check(what: &str, original: &PrimFunc, fs: &[PrimFunc], inter: &[Buffer], seed: u64, ignore_races: bool) {
    match sim_check_kernels_with(original, fs, inter, seed, SimOptions { ignore_races, ..Default::default() }) {
        Ok((e, tol)) => assert!(
            e.rel_err <= tol && e.non_finite == 0,
            "{what}: rel_err {:.3e} > {tol:.1e} ({} non-finite)",
            e.rel_err,
            e.non_finite
        ),
        Err(msg) => panic!("{what}: {msg}"),
    }
}

/// One function to check: what it is, the reference, the kernels it is (one
/// unless `split_kernels` made several) with the intermediates between them,
/// the seed, and whether races are ignored.
type Job = (String, PrimFunc, Vec<PrimFunc>, Vec<Buffer>, u64, bool);

#[test]
fn every_primitive_and_pass_preserves_the_result() {
    let mut jobs: Vec<Job> = Vec::new();
    for ex in examples() {
        let src = read(&ex);
        let sizes = test_sizes(&src);
        assert!(!sizes.is_empty(), "{} has no `# test-sizes:` line", ex.display());
        let module = load(&src, &sizes).unwrap_or_else(|e| panic!("{e:?}"));
        for s in &module.schedules {
            let generic = module.func(&s.func).cloned().unwrap_or_else(|| panic!("no function {}", s.func));
            let values = size_values(&generic, &sizes);
            assert_eq!(
                values.len(),
                generic.sizes.len(),
                "{}: `# test-sizes:` gives every run-time size",
                ex.display()
            );
            let original = generic.specialize(&values);
            let at = |fs: &[PrimFunc], vals: &[(tirc_ir::Var, i64)]| -> Vec<PrimFunc> {
                fs.iter().map(|f| f.specialize(vals)).collect()
            };
            let sized = |bs: &[Buffer], vals: &[(tirc_ir::Var, i64)]| -> Vec<Buffer> {
                bs.iter().map(|b| b.specialize(vals)).collect()
            };
            let mut seed = 1;
            let mut steps: Vec<(String, PrimFunc)> = Vec::new();
            let params = test_params(&src, &s.name);
            let sch =
                run_schedule_observed(&module, s, &params, &mut |step, f| steps.push((step.to_string(), f.clone())))
                    .unwrap_or_else(|e| panic!("{} {}: {}", ex.display(), s.name, e.message));
            for (step, f) in steps {
                seed += 1;
                let what = format!("{} {} after `{step}`", ex.display(), s.name);
                jobs.push((what, original.clone(), vec![f.specialize(&values)], vec![], seed, false));
            }
            // Each kernel through the passes; the function after pass p is
            // every kernel after pass p.
            let (kernels, inter) = split_kernels(&sch.func);
            let mut after: Vec<Vec<(&str, PrimFunc)>> = Vec::new();
            for k in kernels {
                let mut a = Vec::new();
                transform::lower(k, &transform::PassContext::default(), |p, f| a.push((p, f.clone())))
                    .unwrap_or_else(|e| panic!("{}", e.message));
                after.push(a);
            }
            // Between extract_launch and insert_barriers, threads of a block
            // share memory without barriers yet: check the values only.
            let barriers = transform::pass_names().iter().position(|p| *p == "insert_barriers").unwrap_or(0);
            for (i, pass) in transform::pass_names().iter().enumerate() {
                seed += 1;
                let what = format!("{} {} after pass {pass}", ex.display(), s.name);
                let fs: Vec<PrimFunc> = after.iter().map(|a| a[i].1.clone()).collect();
                jobs.push((what, original.clone(), at(&fs, &values), sized(&inter, &values), seed, i < barriers));
            }
            // Every input whose rows miss the alignment of its loads copied
            // into aligned rows first (`align_input_rows`, as `always`).
            let (aligned, copies, _) =
                transform::align_input_rows::run(&sch.func, transform::align_input_rows::Mode::Always);
            if !copies.is_empty() {
                let (kernels, inter) = split_kernels(&aligned);
                let lowered: Vec<PrimFunc> = kernels
                    .into_iter()
                    .map(|k| {
                        transform::lower(k, &transform::PassContext::default(), |_, _| {})
                            .unwrap_or_else(|e| panic!("{} {} aligned: {}", ex.display(), s.name, e.message))
                    })
                    .collect();
                seed += 1;
                let what = format!("{} {} with its inputs' rows aligned", ex.display(), s.name);
                jobs.push((what, original.clone(), at(&lowered, &values), sized(&inter, &values), seed, false));
            }
            // The lowered kernels, compiled once, at the other test sizes.
            for other in test_size_sets(&src).iter().skip(1) {
                let vals = size_values(&generic, other);
                if vals.is_empty() {
                    continue;
                }
                seed += 1;
                let what = format!("{} {} lowered, at {other:?}", ex.display(), s.name);
                let fs: Vec<PrimFunc> = after.iter().map(|a| a[a.len() - 1].1.clone()).collect();
                jobs.push((what, generic.specialize(&vals), at(&fs, &vals), sized(&inter, &vals), seed, false));
            }
            // Smaller tiles stood in for the default ones above; the kernel of
            // the default parameters is checked too, once lowered.
            if !params.is_empty() {
                let sch = run_schedule_observed(&module, s, &[], &mut |_, _| {})
                    .unwrap_or_else(|e| panic!("{} {}: {}", ex.display(), s.name, e.message));
                let (kernels, inter) = split_kernels(&sch.func);
                let lowered: Vec<PrimFunc> = kernels
                    .into_iter()
                    .map(|k| {
                        transform::lower(k, &transform::PassContext::default(), |_, _| {})
                            .unwrap_or_else(|e| panic!("{}", e.message))
                    })
                    .collect();
                let what = format!("{} {} with default parameters, lowered", ex.display(), s.name);
                jobs.push((what, original.clone(), at(&lowered, &values), sized(&inter, &values), seed + 1, false));
            }
        }
    }
    assert!(!jobs.is_empty());
    // The checks are independent: spread them over the machine's cores.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|sc| {
        for _ in 0..workers {
            sc.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((what, original, fs, inter, seed, ignore)) = jobs.get(i) else { break };
                check(what, original, fs, inter, *seed, *ignore);
            });
        }
    });
}
