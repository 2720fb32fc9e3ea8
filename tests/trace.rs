//! `tirc lower --emit trace`: the schedule as applied, as a schedule of its
//! own. For every schedule of every example (at its test sizes and
//! parameters) and of `tests/data/schedule`, the replay script appended to
//! the file and applied instead gives the same scheduled function
//! (structurally equal) and the same trace of steps.

use tirc::compile::{compile, Request};
use tirc_ir::structural_eq::func_eq;
use tirc_tests::{examples, read, schedule_request, test_sizes};

#[test]
fn every_example_schedule_replays_to_the_same_function() {
    let mut replayed = 0;
    let mut files = examples();
    let mut more: Vec<_> = std::fs::read_dir(tirc_tests::root().join("tests/data/schedule"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    more.sort();
    files.extend(more);
    for ex in files {
        let src = read(&ex);
        let defines = test_sizes(&src);
        let module = tirc::compile::load(&src, &defines).unwrap_or_else(|e| panic!("{e:?}"));
        for s in &module.schedules {
            let req = schedule_request(&src, &s.name);
            let c = compile(&src, &req).unwrap_or_else(|e| panic!("{} {}: {e:?}", ex.display(), s.name));
            let script = c.replay_text(&s.name);
            let text = format!("{src}\n{script}");
            let req2 = Request {
                schedule: Some(format!("{}_replay", s.name)),
                defines: defines.clone(),
                ..Request::default()
            };
            let r = compile(&text, &req2)
                .unwrap_or_else(|e| panic!("{} {}: the replay does not apply: {e:?}\n{script}", ex.display(), s.name));
            assert!(
                func_eq(&c.scheduled, &r.scheduled),
                "{} {}: the replay gives another function\n{script}",
                ex.display(),
                s.name
            );
            let lines = |c: &tirc::compile::Compiled| c.trace.iter().map(ToString::to_string).collect::<Vec<_>>();
            assert_eq!(lines(&c), lines(&r), "{} {}: the replay's steps differ", ex.display(), s.name);
            replayed += 1;
        }
    }
    assert!(replayed >= 20, "only {replayed} schedules replayed");
}
