//! Warnings about correct but slow kernels: every `tests/data/warn/*.tir`
//! (its first line `# schedule: NAME` picks the schedule) compiles and gets
//! at least one warning, the rendered reports a snapshot; and no schedule of
//! the examples gets any (matmul's step6 keeps its accumulators in
//! registers).

use tirc::compile::{compile, Request};
use tirc_tests::{examples, read};

#[test]
fn slow_kernels_are_warned_about() {
    insta::glob!("data/warn/*.tir", |path| {
        let src = std::fs::read_to_string(path).unwrap_or_default();
        let schedule = src.lines().next().and_then(|l| l.strip_prefix("# schedule: ")).map(|s| s.trim().to_string());
        let name = path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
        let c = compile(&src, &Request { schedule, ..Request::default() })
            .unwrap_or_else(|e| panic!("{name}: warnings are for input that compiles: {e:?}"));
        assert!(!c.warnings.is_empty(), "{name}: no warning");
        assert!(c.warnings.iter().all(|w| w.is_warning()), "{name}: an error among the warnings");
        let text: String = c.warnings.iter().map(|d| d.render(&name, &src)).collect();
        insta::assert_snapshot!(text);
    });
}

#[test]
fn the_examples_compile_without_warnings() {
    let mut n = 0;
    for ex in examples() {
        let src = read(&ex);
        let module = tirc::compile::load(&src, &[]).unwrap_or_else(|e| panic!("{}: {e:?}", ex.display()));
        for s in &module.schedules {
            let req = Request { schedule: Some(s.name.clone()), ..Request::default() };
            let c = compile(&src, &req).unwrap_or_else(|e| panic!("{} {}: {e:?}", ex.display(), s.name));
            let text: String = c.warnings.iter().map(|d| d.render(&s.name, &src)).collect();
            assert!(c.warnings.is_empty(), "{} {}:\n{text}", ex.display(), s.name);
            n += 1;
        }
    }
    assert!(n > 0);
}
