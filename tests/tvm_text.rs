//! Text that TVM prints reads unchanged: every `tests/data/tvm/*.tir` (the
//! seeds' lowered listings verbatim, and `sch.mod.script()` output of their
//! schedules in TVM's older and newer spellings) parses and resolves, and
//! every function in it round-trips: `parse(print(ir))` equals `ir`, and
//! printing is idempotent.

use tirc::compile::load;
use tirc_ir::printer::print_func;
use tirc_ir::structural_eq::func_eq;
use tirc_ir::PrimFunc;
use tirc_tests::{read, root};

fn roundtrip(what: &str, f: &PrimFunc) {
    let text = print_func(f);
    let m = load(&text, &[]).unwrap_or_else(|e| {
        let shown: String = e.iter().map(|d| d.render(what, &text)).collect();
        panic!("{what}: printed text does not parse:\n{shown}\n{text}")
    });
    let [g] = &m.funcs[..] else { panic!("{what}: expected one function") };
    assert!(func_eq(f, g), "{what}: parse(print(ir)) differs from ir\n{text}\n---\n{}", print_func(g));
    assert_eq!(text, print_func(g), "{what}: printing is not idempotent");
}

#[test]
fn tvm_printed_text_parses_and_round_trips() {
    let mut files: Vec<_> = std::fs::read_dir(root().join("tests/data/tvm"))
        .map(|d| d.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "tir")).collect())
        .unwrap_or_default();
    files.sort();
    assert!(!files.is_empty(), "no TVM text in tests/data/tvm");
    let mut failures = Vec::new();
    for p in &files {
        let name = p.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
        let src = read(p);
        match load(&src, &[]) {
            Ok(m) => {
                assert!(!m.funcs.is_empty(), "{name}: no prim_func");
                for f in &m.funcs {
                    roundtrip(&format!("{name} {}", f.name), f);
                }
            }
            Err(ds) => failures.push(ds.iter().map(|d| d.render(&name, &src)).collect::<String>()),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The forms of `tests/data/tvm/test_idioms.tir` mean what they mean in
/// TVM: the integer beside `0.5` is converted (the literal is not truncated
/// to 0), the grouping block's regions are inferred, and the function runs.
#[test]
fn tvm_test_idioms_mean_what_tvm_means() {
    let src = read(&root().join("tests/data/tvm/test_idioms.tir"));
    let m = load(&src, &[]).unwrap_or_else(|e| panic!("{}", e[0].message));
    let text = print_func(&m.funcs[0]);
    assert!(text.contains(r#"T.Cast("float32", vi * 2) + T.float32(0.5)"#), "{text}");
    assert!(text.contains(r#"{"outer": {"arr": [0, 1], "key": 3}}"#), "{text}");
    assert!(text.contains(r#"T.func_attr({"target": T.target({"kind": "cuda", "arch": "sm_90"})"#), "{text}");
    let group = m.funcs[0].body.blocks().into_iter().find(|r| r.block.name == "group").expect("block group");
    let names = |v: &[tirc_ir::stmt::BufferRegion]| v.iter().map(|r| r.buffer.name().to_string()).collect::<Vec<_>>();
    assert_eq!(names(&group.block.reads), ["B"]);
    assert_eq!(names(&group.block.writes), ["C"]);
    let c =
        tirc::compile::compile(&src, &tirc::compile::Request::default()).unwrap_or_else(|e| panic!("{}", e[0].message));
    let kernels: Vec<_> = c.kernels.iter().map(|k| k.lowered.clone()).collect();
    let (e, tol) =
        tirc::verify::sim_check_kernels(&c.original, &kernels, &c.intermediates, 3).unwrap_or_else(|e| panic!("{e}"));
    assert!(e.rel_err <= tol, "rel_err {:.3e}", e.rel_err);
}

/// A thread index that TVM's common-subexpression pass binds to a variable
/// (`cse_var_1: T.int32 = blockIdx_x * 32 + threadIdx_x`) is seen through:
/// each thread stores its own element, not a race, and the result checks.
#[test]
fn a_let_bound_thread_index_is_each_threads_own_element() {
    let src = read(&root().join("tests/data/tvm/cse_thread_index.tir"));
    let c = tirc::compile::compile(&src, &tirc::compile::Request::default())
        .unwrap_or_else(|d| panic!("{}", d[0].render("cse_thread_index.tir", &src)));
    let (e, tol) = tirc::verify::sim_check_with(&c.original, &c.kernels[0].lowered, 3, Default::default())
        .unwrap_or_else(|m| panic!("{m}"));
    assert!(e.rel_err <= tol, "rel_err {:.3e}", e.rel_err);
}

/// Values past 2^31 over `T.int64` extents: the loop variables are int32 in
/// tirc, and an int64 literal too large for them widens them (not wraps),
/// as does a store into an int64 buffer. Checked on the values, not against
/// the reference (which shares the front end's reading).
#[test]
fn int64_values_past_two_to_the_31_are_kept() {
    use tirc_exec::data::HostData;
    let src = read(&root().join("tests/data/tvm/int64_values.tir"));
    let run = |func: &str, out: HostData| -> HostData {
        let req = tirc::compile::Request { func: Some(func.to_string()), ..Default::default() };
        let c =
            tirc::compile::compile(&src, &req).unwrap_or_else(|d| panic!("{}", d[0].render("int64_values.tir", &src)));
        let mut args = vec![out];
        tirc_exec::sim::run(&c.kernels[0].lowered, &mut args, Default::default()).unwrap_or_else(|e| panic!("{e}"));
        args.remove(0)
    };
    let HostData::F32(o) = run("big_product", HostData::F32(vec![0.0; 37 * 13])) else { panic!() };
    assert_eq!(o[36 * 13], 108_000_000_000f64 as f32);
    assert_eq!(o[13 + 5], 3_000_000_005f64 as f32);
    let HostData::I64(a) = run("arange", HostData::I64(vec![0; 37])) else { panic!() };
    assert_eq!(a[36], 3_600_000_000_000);
    // Module constants combine as Python's integers: `N * N * 2` is one
    // number past int32, not an int32 product that wraps.
    let src = "N = 50000\n@T.prim_func\ndef f(B: T.Buffer((4,), \"float32\")):\n    for i in range(4):\n        with T.block(\"B\"):\n            vi = T.axis.spatial(4, i)\n            B[vi] = T.Cast(\"float32\", N * N * 2 + vi)\n";
    let c = tirc::compile::compile(src, &Default::default()).unwrap_or_else(|d| panic!("{}", d[0].message));
    let mut args = vec![HostData::F32(vec![0.0; 4])];
    tirc_exec::sim::run(&c.kernels[0].lowered, &mut args, Default::default()).unwrap_or_else(|e| panic!("{e}"));
    let HostData::F32(b) = &args[0] else { panic!() };
    assert_eq!(b[3], 5_000_000_003f64 as f32);
}

/// A lowered kernel whose grid is an expression of a run-time size (what
/// `tirc lower` prints for one, and TVM too) reads back and runs at any
/// size: the launch keeps its expression.
#[test]
fn a_launch_of_run_time_extent_reads_back() {
    for (file, n) in [
        ("launch_of_runtime_size.tir", 1),
        ("launch_of_runtime_size.tir", 255),
        ("launch_of_runtime_size.tir", 300),
        ("launch_of_runtime_size.tir", 1024),
        // A flat view `T.Buffer((64 * n,), data=B.data)` of an (n, 64)
        // buffer is a view, not the buffer (it was taken as the buffer).
        ("flat_view_runtime_size.tir", 3),
        ("flat_view_runtime_size.tir", 37),
    ] {
        let src = read(&root().join("tests/data/tvm").join(file));
        let req = tirc::compile::Request { defines: vec![("n".into(), n)], ..Default::default() };
        let c = tirc::compile::compile(&src, &req)
            .unwrap_or_else(|d| panic!("{}", d[0].render("launch_of_runtime_size.tir", &src)));
        let values = tirc::verify::size_values(&c.original, &req.defines);
        let lowered: Vec<_> = c.kernels.iter().map(|k| k.lowered.specialize(&values)).collect();
        let (e, tol) = tirc::verify::sim_check_kernels(&c.original.specialize(&values), &lowered, &c.intermediates, 3)
            .unwrap_or_else(|m| panic!("n = {n}: {m}"));
        assert!(e.rel_err <= tol && e.non_finite == 0, "n = {n}: rel_err {:.3e}", e.rel_err);
    }
}

/// A local buffer allocated between the launches of lowered text, above
/// the threads that use it (TVM's thread-sync tests): `compact_buffers`
/// moves it into the threads' launch, and the kernel checks.
#[test]
fn a_local_buffer_above_its_threads_launch_is_each_threads_own() {
    let src = read(&root().join("tests/data/tvm/local_buffer_above_the_thread_launch.tir"));
    let c = tirc::compile::compile(&src, &tirc::compile::Request::default())
        .unwrap_or_else(|d| panic!("{}", d[0].render("local_buffer_above_the_thread_launch.tir", &src)));
    let (e, tol) = tirc::verify::sim_check_with(&c.original, &c.kernels[0].lowered, 3, Default::default())
        .unwrap_or_else(|m| panic!("{m}"));
    assert!(e.rel_err <= tol, "rel_err {:.3e}", e.rel_err);
}
