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

/// `sch.annotate(loop, "min_blocks_per_sm", n)` on a loop bound to a GPU
/// axis is `__launch_bounds__(threads, n)`; `n` blocks of the kernel's
/// threads must fit on one multiprocessor of the target (2048 threads on
/// sm_90, 1536 on sm_86).
#[test]
fn the_occupancy_hint_reaches_launch_bounds_and_is_checked_against_the_target() {
    let src = read(&root().join("ir-examples/sgemm.tir"));
    let sgemm = |min_blocks: &str, arch: &str| {
        let req = Request {
            schedule: Some("sgemm".into()),
            params: vec![("MIN_BLOCKS".into(), min_blocks.into())],
            target: Target::from_arch(arch).unwrap(),
            ..Request::default()
        };
        compile(&src, &req).map_err(|d| d[0].message.clone())
    };
    let c = sgemm("2", "sm_90").unwrap_or_else(|e| panic!("{e}"));
    let cuda = &c.kernels[0].cuda.source;
    assert!(cuda.contains("__launch_bounds__(256, 2) sgemm_kernel("), "{cuda}");
    let plain = sgemm("0", "sm_90").unwrap_or_else(|e| panic!("{e}"));
    assert!(plain.kernels[0].cuda.source.contains("__launch_bounds__(256) sgemm_kernel("));
    assert!(sgemm("8", "sm_90").is_ok());
    assert!(sgemm("6", "sm_86").is_ok());
    let e = sgemm("7", "sm_86").err().unwrap_or_default();
    assert!(e.contains("7 blocks of 256 threads") && e.contains("sm_86") && e.contains("1536"), "{e}");
}
