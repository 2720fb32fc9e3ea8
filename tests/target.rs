//! `--arch`: lowering checks a kernel against the GPU it is compiled for
//! (`Target`), with the reason and where: shared memory beyond what a
//! thread block may have, asynchronous copies on a GPU without cp.async.

use tirc::compile::{compile, Request};
use tirc_ir::diag::line_col;
use tirc_ir::target::Target;
use tirc_tests::{read, root};

fn matmul(schedule: &str, params: &[(&str, &str)], arch: &str) -> Result<tirc::compile::Compiled, String> {
    let src = read(&root().join("ir-examples/matmul.tir"));
    let req = Request {
        schedule: Some(schedule.into()),
        defines: vec![("M".into(), 1024), ("N".into(), 1024), ("K".into(), 1024)],
        params: params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        target: Target::from_arch(arch)?,
        ..Request::default()
    };
    compile(&src, &req).map_err(|d| {
        let d = &d[0];
        let line = d.span.map_or(0, |s| line_col(&src, s.start).0);
        format!("{} (line {line})", d.message)
    })
}

#[test]
fn asynchronous_copies_need_sm_80() {
    let e = matmul("step6_async", &[], "sm_75").err().unwrap_or_default();
    assert!(e.contains("cp.async") && e.contains("sm_75"), "{e}");
    assert!(!e.ends_with("(line 0)"), "no span: {e}");
    assert!(matmul("step6_async", &[], "sm_80").is_ok());
    // The synchronous schedule runs anywhere.
    assert!(matmul("step6", &[], "sm_75").is_ok());
}

#[test]
fn shared_memory_is_checked_against_the_target() {
    // 128×128 tiles of A and B over k-tiles of 64, three stages: 3 × 2 ×
    // 128 × 64 × 4 bytes = 192 KiB, which an H100 block can have and an
    // A10 (sm_86, 99 KiB) cannot.
    let p = [("BM", "128"), ("BN", "128"), ("BK", "64")];
    assert!(matmul("step6_async", &p, "sm_90").is_ok());
    let e = matmul("step6_async", &p, "sm_86").err().unwrap_or_default();
    assert!(e.contains("bytes of shared memory") && e.contains("101376") && e.contains("sm_86"), "{e}");
}

#[test]
fn unknown_architectures_are_refused() {
    for bad in ["sm_9", "sm_35", "gfx90a"] {
        assert!(Target::from_arch(bad).is_err(), "{bad}");
    }
}
