//! Every schedule primitive and every lowering pass, seen and checked: for
//! each schedule of `tests/data/schedule/*.tir`, the snapshot holds the IR
//! before, after every primitive (headed by the step as the trace prints
//! it), and after every pass (or a line saying it changed nothing); and each
//! of those functions is run on the
//! simulator and compared with the unscheduled function.

use tirc::compile::load;
use tirc::verify::sim_check_with;
use tirc_exec::sim::SimOptions;
use tirc_ir::printer::print_func;
use tirc_passes::schedule::interp::run_schedule_observed;
use tirc_passes::transform;

#[test]
fn primitives_and_passes() {
    insta::glob!("data/schedule/*.tir", |path| {
        let src = std::fs::read_to_string(path).unwrap_or_default();
        let module = load(&src, &[]).unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
        let mut text = String::new();
        for s in &module.schedules {
            let original = module.func(&s.func).cloned().unwrap_or_else(|| panic!("no function {}", s.func));
            text += &format!("######## schedule {}\n# before\n{}", s.name, print_func(&original));
            let mut stages = Vec::new();
            let sch = run_schedule_observed(&module, s, &[], &mut |step, f| stages.push((step.to_string(), f.clone())))
                .unwrap_or_else(|e| panic!("{}: {}", s.name, e.message));
            transform::lower(sch.func, &transform::PassContext::default(), |p, f| {
                stages.push((format!("pass {p}"), f.clone()))
            })
            .unwrap_or_else(|e| panic!("{}: {}", s.name, e.message));
            // Between extract_launch and insert_barriers, threads share
            // memory without barriers yet: check the values only there.
            let unsynced = ["pass extract_launch", "pass simplify"];
            let mut previous = print_func(&original);
            for (i, (what, f)) in stages.iter().enumerate() {
                let opts = SimOptions { ignore_races: unsynced.contains(&what.as_str()), ..Default::default() };
                let (e, tol) = sim_check_with(&original, f, 100 + i as u64, opts)
                    .unwrap_or_else(|m| panic!("{} after {what}: {m}", s.name));
                assert!(e.rel_err <= tol && e.non_finite == 0, "{} after {what}: rel_err {:.3e}", s.name, e.rel_err);
                let printed = print_func(f);
                if printed == previous {
                    text += &format!("# after {what}: unchanged\n");
                } else {
                    text += &format!("# after {what}\n{printed}");
                }
                previous = printed;
            }
        }
        insta::assert_snapshot!(text);
    });
}
