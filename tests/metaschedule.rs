//! Tuned traces as TVM's MetaSchedule prints them replay unchanged: every
//! schedule of `tests/data/traces/*.tir` (keyword arguments, sampling
//! instructions with their decisions, `enter_postproc`, the
//! post-processors' annotations) applies, its kernels (one, or several
//! launched in order) match the unscheduled function on the simulator, and
//! NVRTC compiles them where NVRTC is installed. The snapshot holds each
//! scheduled function.

use tirc::compile::{compile, load, Request};
use tirc::verify::sim_check_kernels;
use tirc_exec::gpu::{nvrtc_available, nvrtc_compile};
use tirc_ir::printer::print_func;

#[test]
fn tuned_traces_replay() {
    insta::glob!("data/traces/*.tir", |path| {
        let src = std::fs::read_to_string(path).unwrap_or_default();
        let module = load(&src, &[]).unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
        assert!(!module.schedules.is_empty(), "{}: no schedule", path.display());
        let mut text = String::new();
        for s in &module.schedules {
            let c = compile(&src, &Request { schedule: Some(s.name.clone()), ..Request::default() })
                .unwrap_or_else(|d| panic!("{}: {}", s.name, d[0].message));
            text += &format!("######## schedule {}\n{}", s.name, print_func(&c.scheduled));
            let kernels: Vec<_> = c.kernels.iter().map(|k| k.lowered.clone()).collect();
            let (e, tol) = sim_check_kernels(&c.original, &kernels, &c.intermediates, 7)
                .unwrap_or_else(|m| panic!("{}: {m}", s.name));
            assert!(e.rel_err <= tol && e.non_finite == 0, "{}: rel_err {:.3e}", s.name, e.rel_err);
            if nvrtc_available() {
                for k in &c.kernels {
                    nvrtc_compile(&k.cuda.source, "sm_80").unwrap_or_else(|log| panic!("{}:\n{log}", s.name));
                }
            }
        }
        insta::assert_snapshot!(text);
    });
}
