//! Size variables (`n: T.int32`, `m = T.int32()`) are known only at run
//! time, as in TVM: the function is compiled once, its kernels take the
//! sizes as arguments, and `Compiled::bind_sizes` readies it for the values
//! `-D` gives, at sizes no tile divides, checked on the simulator. A
//! missing value, one that is not positive, or one the file does not
//! declare is an error that names it. `Request::specialize` compiles the
//! function for the given values instead.

use tirc::compile::{compile, Request};
use tirc::verify::sim_check;
use tirc_tests::{read, root};

fn request(schedule: Option<&str>, defines: &[(&str, i64)]) -> Request {
    Request {
        schedule: schedule.map(Into::into),
        defines: defines.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        ..Request::default()
    }
}

fn defines(d: &[(&str, i64)]) -> Vec<(String, i64)> {
    d.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[test]
fn one_kernel_runs_at_every_size() {
    let src = read(&root().join("tests/data/sizes/rows.tir"));
    for schedule in [None, Some("tiled")] {
        let c = compile(&src, &request(schedule, &[])).unwrap_or_else(|e| panic!("{schedule:?}: {}", e[0].message));
        let names: Vec<&str> = c.sizes().iter().map(|v| v.name()).collect();
        assert_eq!(names, ["n", "m"], "the sizes, in the order they are declared");
        let cuda = c.first().cuda.clone();
        assert!(cuda.source.contains("int n, int m)"), "the sizes are kernel arguments:\n{}", cuda.source);
        assert!(c.first().lowered.params.iter().all(|b| b.const_shape().is_none()), "the lowered kernel is generic");
        for (m, n) in [(1, 1), (17, 5), (33, 40)] {
            let b = c.clone().bind_sizes(&defines(&[("m", m), ("n", n)])).unwrap_or_else(|d| panic!("{}", d.message));
            assert_eq!(b.first().cuda.source, cuda.source, "one source for every size");
            assert_eq!(b.first().cuda.size_values, vec![n, m]);
            let params: Vec<_> = b.original.params.iter().map(|p| p.const_shape()).collect();
            assert_eq!(params, vec![Some(vec![m, n]), Some(vec![m, n])]);
            let (e, tol) = sim_check(&b.original, &b.first().lowered, 5).unwrap_or_else(|x| panic!("{x}"));
            assert!(e.rel_err <= tol && e.non_finite == 0, "m={m} n={n} {schedule:?}: {:.3e}", e.rel_err);
        }
    }
}

#[test]
fn a_missing_bad_or_unknown_size_is_named() {
    let src = read(&root().join("tests/data/sizes/rows.tir"));
    let c = compile(&src, &request(Some("tiled"), &[])).unwrap_or_else(|e| panic!("{}", e[0].message));
    let Err(e) = c.clone().bind_sizes(&defines(&[("n", 8)])) else { panic!("bound without m") };
    assert!(e.message.contains("`m`") && e.help.as_deref().is_some_and(|h| h.contains("-D m=")), "{e:?}");
    assert!(e.span.is_some());
    for bad in [0, -5] {
        let Err(e) = c.clone().bind_sizes(&defines(&[("n", 8), ("m", bad)])) else { panic!("bound m={bad}") };
        assert!(e.message.contains(&format!("-D m={bad}")) && e.span.is_some(), "{}", e.message);
    }
    let Err(e) = c.clone().bind_sizes(&defines(&[("n", 1 << 20), ("m", 1 << 12)])) else {
        panic!("bound a buffer past 32-bit indices")
    };
    assert!(e.message.contains("32 bits"), "{}", e.message);
    let Err(e) = compile(&src, &request(None, &[("n", 8), ("m", 8), ("k", 3)])) else { panic!("compiled with -D k") };
    assert!(e[0].message.contains("-D k"), "{}", e[0].message);
}

#[test]
fn specialize_compiles_for_the_given_values() {
    let src = read(&root().join("tests/data/sizes/rows.tir"));
    for (m, n) in [(1, 1), (17, 5)] {
        let req = Request { specialize: true, ..request(Some("tiled"), &[("m", m), ("n", n)]) };
        let c = compile(&src, &req).unwrap_or_else(|e| panic!("{}", e[0].message));
        assert!(c.sizes().is_empty());
        let params: Vec<_> = c.original.params.iter().map(|b| b.const_shape()).collect();
        assert_eq!(params, vec![Some(vec![m, n]), Some(vec![m, n])]);
        let (e, tol) = sim_check(&c.original, &c.first().lowered, 5).unwrap_or_else(|x| panic!("{x}"));
        assert!(e.rel_err <= tol && e.non_finite == 0);
    }
    let req = Request { specialize: true, ..request(None, &[("n", 8)]) };
    let Err(e) = compile(&src, &req) else { panic!("specialized without m") };
    assert_eq!(e.len(), 1, "one error, not one per use: {:?}", e.iter().map(|d| &d.message).collect::<Vec<_>>());
    assert!(e[0].message.contains("`m`") && e[0].message.contains("-D m="), "{}", e[0].message);
}

#[test]
fn int64_sizes_declared_together_mix_with_loop_variables() {
    let src = read(&root().join("tests/data/sizes/int64_sizes.tir"));
    let c = compile(&src, &request(Some("tiled"), &[])).unwrap_or_else(|e| panic!("{}", e[0].message));
    let names: Vec<&str> = c.sizes().iter().map(|v| v.name()).collect();
    assert_eq!(names, ["n", "m"]);
    for (m, n) in [(3, 5), (70, 9)] {
        let b = c.clone().bind_sizes(&defines(&[("m", m), ("n", n)])).unwrap_or_else(|d| panic!("{}", d.message));
        let (e, tol) = sim_check(&b.original, &b.first().lowered, 2).unwrap_or_else(|x| panic!("{x}"));
        assert!(e.rel_err <= tol && e.non_finite == 0, "m={m} n={n}: {:.3e}", e.rel_err);
    }
}

/// Sizes past 2^30, and extents that no longer fit 32-bit indices once
/// bound, are refused; a size named like a C keyword keeps its value (the
/// kernel takes sizes by position, whatever codegen names them).
#[test]
fn bound_values_stay_within_32_bit_indices() {
    let src = read(&root().join("tests/data/sizes/rows.tir"));
    let c = compile(&src, &request(Some("tiled"), &[])).unwrap_or_else(|e| panic!("{}", e[0].message));
    let Err(e) = c.clone().bind_sizes(&defines(&[("m", (1 << 30) + 1), ("n", 1)])) else { panic!("bound m > 2^30") };
    assert!(e.message.contains("at most 2^30"), "{}", e.message);
    let keyword = "@T.prim_func\ndef f(a: T.handle, b: T.handle):\n    new = T.int32()\n    A = T.match_buffer(a, (new,), \"float32\")\n    B = T.match_buffer(b, (new,), \"float32\")\n    for i in range(new):\n        with T.block(\"B\"):\n            vi = T.axis.spatial(new, i)\n            B[vi] = A[vi] + T.float32(1)\n";
    let c = compile(keyword, &request(None, &[])).unwrap_or_else(|e| panic!("{}", e[0].message));
    let b = c.bind_sizes(&defines(&[("new", 7)])).unwrap_or_else(|d| panic!("{}", d.message));
    assert_eq!(b.first().cuda.size_values, vec![7]);
    assert_ne!(b.first().cuda.sizes[0].0, "new", "a C keyword is renamed in the kernel");
    let (e, tol) = sim_check(&b.original, &b.first().lowered, 2).unwrap_or_else(|x| panic!("{x}"));
    assert!(e.rel_err <= tol);
}

#[test]
fn a_pipeline_over_a_run_time_extent_runs_at_every_extent() {
    // The k-tiles of `linear_dynamic.tir` are a loop of `(k + 15) // 16`
    // iterations: the pipeline's prologue, steady state and epilogue are
    // written out under tests of that extent, so that one kernel is right
    // for a k shorter than the pipeline, one tile past a multiple of it,
    // and everything between.
    let src = read(&root().join("ir-examples/linear_dynamic.tir"));
    for stages in [2, 3, 4] {
        let mut req = request(Some("step6_async"), &[]);
        req.params = [("BM", 16), ("BN", 16), ("BK", 16), ("TM", 4), ("TN", 4), ("STAGES", stages)]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let c = compile(&src, &req).unwrap_or_else(|e| panic!("STAGES={stages}: {}", e[0].message));
        let cuda = c.first().cuda.source.clone();
        assert!(cuda.contains("int m, int n, int k)"), "the sizes are kernel arguments:\n{cuda}");
        assert!(cuda.contains("tirc_cp_async"), "the copies stay asynchronous:\n{cuda}");
        // Rows of run-time length are 16-byte aligned only where that
        // length is a multiple of 4: the kernel tests each length once, at
        // its top, and is written for each outcome, its copies one vector
        // (a cp.async of 16 bytes) where their rows are aligned.
        assert!(cuda.contains("\n  if (k % 4 == 0) {\n    if (n % 4 == 0) {\n"), "no test of alignment:\n{cuda}");
        assert_eq!(cuda.matches("% 4 == 0").count(), 3, "tests of alignment past the kernel's top:\n{cuda}");
        // Element by element where they are not (four loads gathered into
        // one vector store); past k, the copies fill zeros
        // (`zero_fill_tiles`).
        let scalar = cuda.contains("tirc_cp_async<4>") || cuda.contains(" ? A[") && cuda.contains(" ? B[");
        assert!(cuda.contains("tirc_cp_async<16>") && scalar, "{cuda}");
        assert!(cuda.contains("tirc_cp_async_zfill<"), "no copy fills zeros past k:\n{cuda}");
        for k in [1, 2, 15, 16, 17, 31, 33, 47, 48, 49, 64, 65, 100] {
            let b = c
                .clone()
                .bind_sizes(&defines(&[("m", 19), ("n", 21), ("k", k)]))
                .unwrap_or_else(|d| panic!("{}", d.message));
            assert_eq!(b.first().cuda.source, cuda, "one source for every k");
            let (e, tol) = sim_check(&b.original, &b.first().lowered, 7).unwrap_or_else(|x| panic!("{x}"));
            assert!(e.rel_err <= tol && e.non_finite == 0, "STAGES={stages} k={k}: {:.3e}", e.rel_err);
        }
    }
}

#[test]
fn the_loop_over_the_tiles_of_a_run_time_length_tests_only_the_last() {
    // Every tile of k but the last is whole: `loop_partition` runs the loop
    // over `(k + 31) // 32 - 1` tiles with no test of k (copies and
    // multiply-adds alike) and writes the last one out with its tests; in
    // the pipeline, the range analysis proves the multiply-adds of its
    // steady state from the loop's end. Both under the kernel's test of
    // aligned rows and without it.
    let src = read(&root().join("ir-examples/linear_dynamic.tir"));
    for schedule in ["step6", "step6_async"] {
        let c = compile(&src, &request(Some(schedule), &[])).unwrap_or_else(|e| panic!("{}", e[0].message));
        let cuda = &c.first().cuda.source;
        let lines: Vec<&str> = cuda.lines().collect();
        let heads: Vec<usize> = (0..lines.len()).filter(|&i| lines[i].contains("for (int r_0")).collect();
        assert!(heads.len() >= 2, "{schedule}: no loop over the k-tiles in each branch:\n{cuda}");
        for head in heads {
            assert!(lines[head].contains("< (k + 31) / 32 - 1;"), "{schedule}: not peeled: {}", lines[head]);
            let indent = lines[head].len() - lines[head].trim_start().len();
            let close = format!("{}}}", " ".repeat(indent));
            let body: Vec<&str> = lines[head + 1..].iter().copied().take_while(|l| *l != close).collect();
            assert!(body.iter().any(|l| l.contains("C_local[") && l.contains("A_shared[")), "no update:\n{cuda}");
            assert!(
                !body.iter().any(|l| l.contains(" < k")),
                "{schedule}: a test of k in the loop over whole tiles:\n{}",
                body.join("\n")
            );
        }
    }
}

#[test]
fn a_split_of_a_padded_run_time_extent_divides_it() {
    // pad_einsum grows m to `(m + 63) // 64 * 64`: split by 64 (and by 8
    // within), it is divided exactly, so the product's block gets no
    // `T.where` (a tensor-core tile must be whole).
    let src = read(&root().join("ir-examples/linear_dynamic.tir"));
    let c = compile(&src, &request(Some("step6_padded"), &[])).unwrap_or_else(|e| panic!("{}", e[0].message));
    let text = tirc_ir::printer::print_func(&c.scheduled);
    let lines: Vec<&str> = text.lines().collect();
    let at = lines.iter().position(|l| l.contains("with T.block(\"C\"):")).unwrap_or_else(|| panic!("{text}"));
    let head: Vec<&str> = lines[at + 1..].iter().copied().take_while(|l| !l.contains("T.reads(")).collect();
    assert!(head.iter().any(|l| l.contains("T.axis.spatial((m + 63) // 64 * 64")), "not padded:\n{text}");
    assert!(!head.iter().any(|l| l.contains("T.where")), "a predicate on whole tiles:\n{}", head.join("\n"));
}
