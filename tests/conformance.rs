//! Regressions from running TVM's own TensorIR tests through tirc: every
//! `tests/data/conformance/*.tir` compiles, and on the simulator the IR
//! after every lowering pass, and the kernel, give the result of the
//! function run as written (its sequential reference). Each file names the
//! bug it guards against in its first lines. A file with schedules is
//! checked under each; one without, function by function; run-time sizes
//! at the values of its `# test-sizes:` line.

use tirc::compile::{compile_module, load, Request};
use tirc::verify::{sim_check_kernels, sim_check_with};
use tirc_exec::sim::SimOptions;
use tirc_passes::transform;

#[test]
fn accepted_programs_compute_what_they_say() {
    let mut files: Vec<_> = std::fs::read_dir("tests/data/conformance")
        .expect("tests/data/conformance")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "tir"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no conformance programs found");
    let barriers = transform::pass_names().iter().position(|p| *p == "insert_barriers").unwrap_or(0);
    let mut checked = 0;
    for path in files {
        let name = path.display().to_string();
        let src = std::fs::read_to_string(&path).unwrap_or_default();
        let module = load(&src, &[]).unwrap_or_else(|e| panic!("{name}: {}", e[0].message));
        let requests: Vec<Request> = if module.schedules.is_empty() {
            module.funcs.iter().map(|f| Request { func: Some(f.name.clone()), ..Request::default() }).collect()
        } else {
            module.schedules.iter().map(|s| Request { schedule: Some(s.name.clone()), ..Request::default() }).collect()
        };
        for req in requests {
            let c = compile_module(module.clone(), &req).unwrap_or_else(|e| panic!("{name} {req:?}: {}", e.message));
            // Run-time sizes take the file's `# test-sizes:` values.
            let c =
                c.bind_sizes(&tirc::tune::test_sizes(&src)).unwrap_or_else(|e| panic!("{name} {req:?}: {}", e.message));
            let mut stages = vec![("scheduled".to_string(), c.scheduled.clone(), true)];
            // A function of several kernels is checked whole, kernel after
            // kernel (`sim_check_kernels`); one kernel, after every pass.
            if c.kernels.len() > 1 {
                let funcs: Vec<_> = c.kernels.iter().map(|k| k.lowered.clone()).collect();
                let (e, tol) = sim_check_kernels(&c.original, &funcs, &c.intermediates, 1)
                    .unwrap_or_else(|m| panic!("{name} {req:?} kernels: {m}"));
                assert!(e.rel_err <= tol && e.non_finite == 0, "{name} {req:?} kernels: rel_err {:.3e}", e.rel_err);
                checked += 1;
            } else {
                for (i, (pass, f)) in c.first().after.iter().enumerate() {
                    stages.push((format!("after {pass}"), f.clone(), i < barriers));
                }
            }
            for (seed, (what, f, ignore_races)) in stages.into_iter().enumerate() {
                let opts = SimOptions { ignore_races, ..Default::default() };
                match sim_check_with(&c.original, &f, seed as u64 + 1, opts) {
                    Ok((e, tol)) => assert!(
                        e.rel_err <= tol && e.non_finite == 0,
                        "{name} {req:?} {what}: rel_err {:.3e} > {tol:.1e} ({} non-finite)",
                        e.rel_err,
                        e.non_finite
                    ),
                    Err(msg) => panic!("{name} {req:?} {what}: {msg}"),
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 0);
}

/// A function whose results stay in its own global buffers is checked on
/// them: a wrong value there is a mismatch, not "nothing to check".
#[test]
fn results_kept_in_intermediates_are_compared() {
    use tirc_exec::data::HostData;
    let src = std::fs::read_to_string("tests/data/conformance/results_in_intermediates.tir").unwrap_or_default();
    let req = Request { func: Some("serial_chain".into()), ..Request::default() };
    let c = tirc::compile::compile(&src, &req).unwrap_or_else(|e| panic!("{}", e[0].message));
    assert_eq!(c.intermediates.len(), 2, "P and Q are the launcher's");
    let mut args = tirc::measure::prepare(&c.original, 1).unwrap_or_else(|e| panic!("{e}")).args;
    let start = args.clone();
    for b in &c.intermediates {
        args.push(
            HostData::poisoned(b.dtype(), b.num_elements().unwrap_or(0) as usize).unwrap_or_else(|e| panic!("{e}")),
        );
    }
    for k in &c.kernels {
        tirc_exec::sim::run(&k.lowered, &mut args, SimOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    }
    let reference = tirc::verify::reference_sim(&c.original, &start).unwrap_or_else(|e| panic!("{e}"));
    let good =
        tirc::measure::worst_error(&c.original, &args, &c.intermediates, &reference).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(good.rel_err, 0.0);
    match &mut args[1] {
        HostData::F32(q) => q[5] += 1.0,
        d => panic!("Q holds float32, not {d:?}"),
    }
    let bad =
        tirc::measure::worst_error(&c.original, &args, &c.intermediates, &reference).unwrap_or_else(|e| panic!("{e}"));
    assert!(bad.rel_err > 1e-3, "a wrong element of Q went unseen: rel_err {:.3e}", bad.rel_err);
}

/// Reading a buffer nothing writes is undefined (TVM's own test
/// `matmul_bias_multiple_epilogue_expected` does it): a warning at compile
/// time, and the check refuses to call any result right or wrong.
#[test]
fn reading_what_nothing_writes_is_reported_not_compared() {
    let src = r#"@T.prim_func
def f(A: T.Buffer((8,), "int32"), B: T.Buffer((8,), "int32")):
    temp = T.alloc_buffer((8,), "int32")
    for i in range(8):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = temp[vi] + A[vi]
"#;
    let c = tirc::compile::compile(src, &Request::default()).unwrap_or_else(|e| panic!("{}", e[0].message));
    assert!(
        c.warnings.iter().any(|w| w.is_warning() && w.message.contains("`temp` is read, but nothing writes it")),
        "no warning: {:?}",
        c.warnings
    );
    let kernels: Vec<_> = c.kernels.iter().map(|k| k.lowered.clone()).collect();
    let why = sim_check_kernels(&c.original, &kernels, &c.intermediates, 1).err().unwrap_or_default();
    assert!(why.contains("reads `temp`, which nothing writes") && tirc::measure::is_nothing_to_check(&why), "{why}");
}

/// C computes on 8-bit integers in int: the CUDA code casts each 8-bit
/// sum and product back to its type, so that it wraps as the simulator's.
#[test]
fn narrow_integer_arithmetic_is_cast_back_in_cuda() {
    let src =
        std::fs::read_to_string("tests/data/conformance/narrow_ints_and_block_var_predicate.tir").unwrap_or_default();
    let req = Request { func: Some("narrow".into()), ..Request::default() };
    let c = tirc::compile::compile(&src, &req).unwrap_or_else(|e| panic!("{}", e[0].message));
    let cuda = &c.first().cuda.source;
    assert!(cuda.contains("((signed char)(((signed char)(A[i] * 20)) + 100))"), "{cuda}");
    assert!(cuda.contains("((unsigned char)(((unsigned char)(U[i] * 7u)) - 9u))"), "{cuda}");
}

/// An output computed from memory nothing wrote, though its buffer is
/// written elsewhere (each block stores `S[v]` and reads `S[v + 1]`, which
/// only another block's shared memory holds): NaN in the reference and in
/// the kernel alike, which must not count as agreement.
#[test]
fn outputs_computed_from_unwritten_memory_are_not_compared() {
    let src = r#"@T.prim_func
def f(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    S = T.alloc_buffer((8,), "float32", scope="shared")
    for bx in T.thread_binding(8, thread="blockIdx.x"):
        with T.block("S"):
            v = T.axis.spatial(8, bx)
            S[v] = A[v]
        with T.block("B"):
            v = T.axis.spatial(8, bx)
            B[v] = S[T.min(v + 1, 7)] * T.float32(2)
"#;
    // And a global intermediate written in part (B[0:4] of 8), read whole:
    // C[4:8] is undefined. (The reference once started such memory at zero
    // and the kernel at NaN, which was reported as a mismatch.)
    let in_part = r#"@T.prim_func
def f(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((8,), "float32")
    for i in range(4):
        with T.block("B"):
            vi = T.axis.spatial(4, i)
            B[vi] = A[vi] * T.float32(2)
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = B[vi] + T.float32(1)
"#;
    for (src, out) in [(src, "`B` at element 0"), (in_part, "`C` at element 4")] {
        let c = tirc::compile::compile(src, &Request::default()).unwrap_or_else(|e| panic!("{}", e[0].message));
        let kernels: Vec<_> = c.kernels.iter().map(|k| k.lowered.clone()).collect();
        let why = sim_check_kernels(&c.original, &kernels, &c.intermediates, 1).err().unwrap_or_default();
        assert!(
            why.contains(&format!("computes {out} from memory that nothing wrote"))
                && tirc::measure::is_nothing_to_check(&why),
            "{why}"
        );
    }
}

/// A tensorized function printed as text and run again: its tensor-core
/// operations are a warp's, which the reference (one thread an element)
/// cannot run. The check says so, instead of failing inside the reference
/// with an internal error.
#[test]
fn tensorized_text_has_no_reference_and_says_so() {
    let src = std::fs::read_to_string("ir-examples/hgemm.tir").expect("ir-examples/hgemm.tir");
    let req = Request {
        schedule: Some("wmma".into()),
        defines: vec![("M".into(), 64), ("N".into(), 64), ("K".into(), 64)],
        params: vec![("BM".into(), "32".into()), ("BN".into(), "32".into()), ("BK".into(), "32".into())],
        ..Request::default()
    };
    let c = tirc::compile::compile(&src, &req).unwrap_or_else(|e| panic!("{}", e[0].message));
    let text = tirc_ir::printer::print_func(&c.scheduled);
    let again = tirc::compile::compile(&text, &Request::default()).unwrap_or_else(|e| panic!("{}", e[0].message));
    let kernels: Vec<_> = again.kernels.iter().map(|k| k.lowered.clone()).collect();
    let why = sim_check_kernels(&again.original, &kernels, &again.intermediates, 1).err().unwrap_or_default();
    assert!(why.contains("warp-wide operations") && tirc::measure::is_nothing_to_check(&why), "{why}");
    // Lowered text, its threads launched, is its own reference, run in
    // the simulator's lockstep: it checks.
    let lowered = c.lowered_text();
    let again = tirc::compile::compile(&lowered, &Request::default()).unwrap_or_else(|e| panic!("{}", e[0].message));
    let kernels: Vec<_> = again.kernels.iter().map(|k| k.lowered.clone()).collect();
    if let Err(e) = sim_check_kernels(&again.original, &kernels, &again.intermediates, 1) {
        panic!("the lowered text does not check: {e}");
    }
}
