//! Bad input gets a diagnostic with a span: every `tests/data/err/*.tir`
//! must fail to compile, and the whole rendered report (message, source
//! line, label, help) is a snapshot, so a worse message fails the test. A
//! first line `# schedule: NAME` picks the schedule to apply, a line
//! `# arch: sm_XX` the GPU to compile for, lines `# define: n=20` the `-D`
//! values.

use tirc::compile::{compile, Request};

#[test]
fn bad_inputs_are_explained() {
    insta::glob!("data/err/*.tir", |path| {
        let src = std::fs::read_to_string(path).unwrap_or_default();
        let schedule = src.lines().next().and_then(|l| l.strip_prefix("# schedule: ")).map(|s| s.trim().to_string());
        let mut req = Request { schedule, ..Request::default() };
        if let Some(arch) = src.lines().find_map(|l| l.strip_prefix("# arch: ")) {
            req.target = tirc_ir::target::Target::from_arch(arch.trim()).unwrap_or_else(|e| panic!("{e}"));
        }
        // `# define: n=20` lines, as `-D n=20`.
        for d in src.lines().filter_map(|l| l.strip_prefix("# define: ")) {
            let (n, v) = d.trim().split_once('=').unwrap_or_else(|| panic!("bad define line: {d}"));
            req.defines.push((n.to_string(), v.parse().unwrap_or_else(|e| panic!("{d}: {e}"))));
        }
        let name = path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
        let diags = match compile(&src, &req) {
            Ok(_) => panic!("{name} compiled, but it is bad input"),
            Err(d) => d,
        };
        assert!(diags.iter().all(|d| d.span.is_some()), "{name}: a diagnostic has no span");
        let text: String = diags.iter().map(|d| d.render(&name, &src)).collect();
        insta::assert_snapshot!(text);
    });
}

/// A diagnostic on a line of megabytes is reported with its line and
/// column, not drawn (miette panicked on a 6 MB line).
#[test]
fn a_very_long_line_is_reported_not_drawn() {
    let mut src = String::from(
        "@T.prim_func\ndef f(A: T.Buffer((16,), \"float32\"), C: T.Buffer((16,), \"float32\")):\n    for i in range(16):\n        with T.block(\"C\"):\n            vi = T.axis.spatial(16, i)\n            C[vi] = A[vi]",
    );
    src.push_str(&" + A[vi]".repeat(750_000));
    src.push_str(" +\n");
    let diags = match compile(&src, &Request::default()) {
        Ok(_) => panic!("a dangling `+` compiled"),
        Err(d) => d,
    };
    let text: String = diags.iter().map(|d| d.render("long.tir", &src)).collect();
    assert!(text.contains("long.tir:6:"), "{}", &text[..text.len().min(500)]);
    assert!(text.len() < 2000, "the report draws the long line");
}
