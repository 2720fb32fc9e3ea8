//! Spans in the IR: every loop and block of a resolved function points at
//! its source, every loop and block a schedule step makes points at the
//! step's line, and lowering keeps them, so that an error found while
//! lowering (tests/data/err, the snapshots of `diagnostics.rs`) points at
//! the line that caused it rather than at the function.

use tirc::compile::{compile, load, Request};
use tirc_ir::diag::line_col;
use tirc_ir::Stmt;
use tirc_tests::{examples, read, schedule_request, test_sizes};

/// The loops and blocks of `s` with no span, by name.
fn unspanned(s: &Stmt) -> Vec<String> {
    let mut out = Vec::new();
    s.walk(&mut |x| match x {
        Stmt::For(l) if l.span.is_none() => out.push(format!("loop {}", l.var.name())),
        Stmt::Block(r) if r.block.span.is_none() && r.block.name != "root" => {
            out.push(format!("block {}", r.block.name))
        }
        _ => {}
    });
    out
}

#[test]
fn every_loop_and_block_points_at_its_source() {
    let mut checked = 0;
    for ex in examples() {
        let src = read(&ex);
        let defines = test_sizes(&src);
        let module = load(&src, &defines).unwrap_or_else(|e| panic!("{e:?}"));
        for f in &module.funcs {
            assert_eq!(unspanned(&f.body), Vec::<String>::new(), "{} {}", ex.display(), f.name);
        }
        for s in &module.schedules {
            let req = schedule_request(&src, &s.name);
            let c = compile(&src, &req).unwrap_or_else(|e| panic!("{} {}: {e:?}", ex.display(), s.name));
            assert_eq!(unspanned(&c.scheduled.body), Vec::<String>::new(), "{} {}", ex.display(), s.name);
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} schedules");
}

#[test]
fn a_loop_made_by_a_step_points_at_the_step() {
    let src = "@T.prim_func
def f(A: T.Buffer((64,), \"float32\"), C: T.Buffer((64,), \"float32\")):
    for i in range(64):
        with T.block(\"C\"):
            vi = T.axis.spatial(64, i)
            C[vi] = A[vi] * 2.0

@tirc.schedule(\"f\")
def s(sch):
    (i,) = sch.get_loops(sch.get_block(\"C\"))
    io, ii = sch.split(i, factors=[None, 16])
";
    let c =
        compile(src, &Request { schedule: Some("s".into()), ..Request::default() }).unwrap_or_else(|e| panic!("{e:?}"));
    let mut lines = Vec::new();
    c.scheduled.body.walk(&mut |x| {
        if let Stmt::For(l) = x {
            lines.push(l.span.map(|s| line_col(src, s.start).0));
        }
        if let Stmt::Block(r) = x {
            if r.block.name == "C" {
                lines.push(r.block.span.map(|s| line_col(src, s.start).0));
            }
        }
    });
    // Both loops of the split at line 11; the block where it was written.
    assert_eq!(lines, [Some(11), Some(11), Some(4)]);
}
