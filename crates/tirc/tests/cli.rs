//! The command line's contract: exit status 0 on success, 1 for bad input
//! or a mismatch, 2 for usage errors; diagnostics on stderr with the file
//! and line; never a panic.

use std::path::PathBuf;
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn tirc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tirc")).current_dir(root()).args(args).output().expect("tirc runs")
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

#[test]
fn check_accepts_the_examples() {
    let o = tirc(&["check", "ir-examples/matmul.tir"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

#[test]
fn run_on_the_simulator_checks_the_result() {
    let o = tirc(&[
        "run",
        "ir-examples/matmul.tir",
        "-s",
        "step2",
        "-D",
        "M=40",
        "-D",
        "N=36",
        "-D",
        "K=20",
        "--target",
        "sim",
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("\"status\": \"ok\""), "{out}");
    assert!(out.contains("\"target\": \"sim\""), "{out}");
    assert!(out.contains("\"gflops\": null"), "{out}");
}

#[test]
fn a_result_out_of_tolerance_is_a_mismatch() {
    // Float32 accumulation never matches the float64 reference exactly.
    let o = tirc(&[
        "run",
        "ir-examples/matmul.tir",
        "-s",
        "step1",
        "-D",
        "M=8",
        "-D",
        "N=8",
        "-D",
        "K=64",
        "--target",
        "sim",
        "--tolerance",
        "0",
        "--json",
    ]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    assert!(stdout(&o).contains("\"status\": \"mismatch\""));
}

#[test]
fn bad_input_exits_1_with_a_located_diagnostic() {
    let o = tirc(&["lower", "tests/data/err/unknown_buffer.tir"]);
    assert_eq!(code(&o), 1);
    let e = stderr(&o);
    assert!(e.contains("unknown buffer `Bx`") && e.contains("unknown_buffer.tir:8:49"), "{e}");
}

#[test]
fn scalar_parameters_take_their_values_from_d_or_the_seed() {
    let f = "tests/data/sizes/scalars.tir";
    let o = tirc(&["run", f, "-s", "fused", "-D", "alpha=0.5", "-D", "beta=2", "--target", "sim", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("\"scalars\": {\"alpha\": 0.5, \"beta\": 2}"), "{}", stdout(&o));
    let o = tirc(&["run", f, "-s", "fused", "--seed", "4", "--target", "sim"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("scalars: alpha = ") && stdout(&o).contains("(random)"), "{}", stdout(&o));
    let o = tirc(&["run", f, "-s", "fused", "-D", "M=0.5", "--target", "sim"]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("`M` is not a scalar parameter"), "{}", stderr(&o));
    let o = tirc(&["run", f, "-s", "fused", "-D", "alpha=fast", "--target", "sim"]);
    assert_eq!(code(&o), 2, "not a number is a usage error");
    // `check --run` and `tune` draw them from the seed too.
    let o = tirc(&["check", "--run", f]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let o = tirc(&["tune", f, "-s", "fused", "--target", "sim", "--space", "BM=8,16", "--no-progress"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("BM = 16               1 / 1"), "{}", stdout(&o));
}

/// A program of 600 `let`s in a row nests that deep: the simulator's
/// workers and the reference's thread overflowed their 2 MiB stacks (an
/// abort, exit 134); they now run with the command's large stack.
#[test]
fn a_long_chain_of_lets_runs() {
    let mut src = String::from(
        "@T.prim_func\ndef f(A: T.Buffer((4,), \"float32\"), B: T.Buffer((4,), \"float32\")):\n    x0: T.float32 = A[0]\n",
    );
    for k in 1..600 {
        src += &format!("    x{k}: T.float32 = x{} + T.float32(1)\n", k - 1);
    }
    src += "    B[0] = x599\n";
    let path = std::env::temp_dir().join(format!("tirc-lets-{}.tir", std::process::id()));
    std::fs::write(&path, src).unwrap();
    let o = tirc(&["run", &path.display().to_string(), "--target", "sim", "--seed", "1"]);
    let _ = std::fs::remove_file(&path);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("check: ok"), "{}", stdout(&o));
}

#[test]
fn an_unknown_schedule_names_the_file_s_schedules() {
    let o = tirc(&["run", "ir-examples/matmul.tir", "-s", "nope"]);
    assert_eq!(code(&o), 1);
    let e = stderr(&o);
    assert!(e.contains("no schedule `nope`") && e.contains("its schedules: step1, step2"), "{e}");
    assert!(e.contains("matmul.tir:") && e.contains("the file's first schedule"), "no span:\n{e}");
    let o = tirc(&["lower", "ir-examples/matmul.tir", "-s", "step22"]);
    assert!(stderr(&o).contains("did you mean `step2`?"), "{}", stderr(&o));
}

#[test]
fn unknown_overrides_are_bad_input() {
    let o = tirc(&["lower", "ir-examples/matmul.tir", "-s", "step2", "-p", "BQ=3"]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("no parameter `BQ`"), "{}", stderr(&o));
    let o = tirc(&["lower", "ir-examples/matmul.tir", "-D", "Q=3"]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("no module constant or size variable `Q`"), "{}", stderr(&o));
}

/// `lower` and `build` check the -D values of run-time sizes as `run` does,
/// though their kernel stays generic (a helper found `lower -D m=-7` and
/// `build -D m=0` taken silently, and `build` recording the value among
/// the compiled-in defines).
#[test]
fn lower_and_build_check_run_time_sizes_as_run_does() {
    let o = tirc(&["lower", "ir-examples/matmul_dynamic.tir", "-s", "step2", "-D", "m=-7"]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("-D m=-7: the size `m` must be at least 1"), "{}", stderr(&o));
    let dir = std::env::temp_dir().join(format!("tirc-cli-sizes-{}", std::process::id()));
    let out = dir.to_str().unwrap_or(".");
    let o = tirc(&["build", "ir-examples/matmul_dynamic.tir", "-s", "step2", "-D", "m=0", "-o", out]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("must be at least 1"), "{}", stderr(&o));
    let o = tirc(&["build", "ir-examples/matmul_dynamic.tir", "-s", "step2", "-D", "m=100", "-o", out]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let json = std::fs::read_to_string(dir.join("kernel.json")).unwrap_or_default();
    assert!(json.contains("\"defines\": {}"), "{json}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(code(&tirc(&["frobnicate"])), 2);
    assert_eq!(code(&tirc(&["lower", "ir-examples/matmul.tir", "--print-after", "no_such_pass"])), 2);
    assert_eq!(code(&tirc(&["lower", "ir-examples/matmul.tir", "-D", "M"])), 2);
    let o = tirc(&["lower", "ir-examples/matmul.tir", "--aligned-copies", "sometimes"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("not one of auto, always, never"), "{}", stderr(&o));
    let o = tirc(&["tune", "ir-examples/matmul_sweep.tir", "-s", "step2", "--aligned-copies", "sometimes"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("not one of auto, always, never"), "{}", stderr(&o));
}

#[test]
fn print_after_all_heads_each_pass() {
    let o = tirc(&["lower", "ir-examples/matmul.tir", "-s", "step2", "--print-after-all"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    for p in ["schedule", "lower_init", "lower_blocks", "flatten_buffers", "extract_launch", "simplify"] {
        assert!(out.contains(&format!("# after {p}\n")), "no `# after {p}` in\n{out}");
    }
}

#[test]
fn print_after_with_emit_prints_both() {
    let args = ["lower", "ir-examples/matmul.tir", "-s", "step2", "--print-after", "simplify"];
    let o = tirc(&[&args[..], &["--emit", "cuda"]].concat());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    let (ir, cuda) = (out.find("# after simplify\n"), out.find("__global__"));
    assert!(matches!((ir, cuda), (Some(i), Some(c)) if i < c), "the IR, then the CUDA:\n{out}");
    // Without --emit (or with the default), the pass's IR alone.
    let o = tirc(&args);
    assert!(!stdout(&o).contains("__global__"), "{}", stdout(&o));
}

#[test]
fn garbage_never_panics() {
    let dir = std::env::temp_dir().join(format!("tirc-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let inputs: [&[u8]; 6] = [
        b"\xff\xfe\x00garbage",
        b"@T.prim_func\ndef f(:\n",
        b"for i in T.grid(:\n  pass",
        b"@tirc.schedule(\"nope\")\ndef s(sch):\n    sch.split()\n",
        b"@T.prim_func\ndef f(A: T.Buffer((0,), \"float32\")):\n    A[0] = 1.0\n",
        b"M = 1 // 0\n",
    ];
    for (i, bytes) in inputs.iter().enumerate() {
        let p = dir.join(format!("g{i}.tir"));
        std::fs::write(&p, bytes).expect("write");
        let ps = p.to_string_lossy().to_string();
        for cmd in ["check", "lower"] {
            let o = tirc(&[cmd, &ps]);
            assert!(matches!(code(&o), 0 | 1), "{cmd} {ps}: exit {}\n{}", code(&o), stderr(&o));
            assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
        }
    }
}

#[test]
fn a_local_buffer_indexed_by_a_serial_loop_is_a_warning_not_an_error() {
    let o = tirc(&["lower", "tests/data/warn/local_serial_index.tir", "-s", "wide_rows"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("⚠ local buffer `C_local` is indexed by `j_init`, which depends on loop `j_init`"), "{err}");
    assert!(err.contains("help: unroll loops `j_init`, `j` and `ax1`"), "{err}");
    assert!(stdout(&o).contains("@T.prim_func"), "the lowered IR is printed all the same");
    let o = tirc(&["run", "tests/data/warn/local_serial_index.tir", "-s", "wide_rows", "--target", "sim", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains("local buffer `C_local`"), "{}", stderr(&o));
    assert!(stdout(&o).starts_with('{'), "warnings stay off stdout: {}", stdout(&o));
}

#[test]
fn step6_keeps_its_accumulators_in_registers_without_warning() {
    let o = tirc(&["lower", "ir-examples/matmul.tir", "-s", "step6"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stderr(&o), "", "no warning expected");
}

#[test]
fn emit_ptx_compiles_the_kernel_with_nvrtc() {
    let args = ["lower", "ir-examples/transpose.tir", "-s", "shared_padded", "--emit", "ptx"];
    let o = tirc(&args);
    if !tirc_exec::gpu::nvrtc_available() {
        // Without NVRTC the command says so and exits 1, without a panic.
        assert_eq!(code(&o), 1, "{}", stdout(&o));
        assert!(stderr(&o).contains("--emit ptx needs the NVRTC library"), "{}", stderr(&o));
        println!("skipped the PTX checks: NVRTC library not found (pip install nvidia-cuda-nvrtc==13.0.*)");
        return;
    }
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let ptx = stdout(&o);
    assert!(ptx.contains(".target sm_90"), "sm_90 is the default:\n{ptx}");
    assert!(ptx.contains(".entry transpose_kernel("), "{ptx}");
    // The shared tile, 32 rows padded to 33 floats by storage_align.
    assert!(ptx.contains("A_shared[4224]"), "{ptx}");
    let o = tirc(&[&args[..], &["--arch", "sm_80"]].concat());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains(".target sm_80"));
    // A malformed architecture is a usage error, refused before compiling.
    let o = tirc(&[&args[..], &["--arch", "not an arch"]].concat());
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("unknown GPU architecture"), "{}", stderr(&o));
}

#[test]
fn check_run_simulates_every_schedule_at_the_test_sizes() {
    let o = tirc(&["check", "--run", "ir-examples/matmul.tir"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    for s in ["step1", "step2", "step3", "step4", "step5", "step6", "step6_async"] {
        assert!(out.lines().any(|l| l.starts_with(s) && l.contains("at M=40 N=72 K=36: ok")), "{s}: {out}");
    }
    assert!(out.contains("step6_async -p BM=32 -p BN=32 -p BK=16 at"), "test-params are used: {out}");
    let o = tirc(&["check", "--run", "ir-examples/relu.tir", "-D", "M=3"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("fused at N=50 M=3: ok"), "{}", stdout(&o));
    // Every `# test-sizes:` line, here three values of a run-time size.
    let o = tirc(&["check", "--run", "ir-examples/matmul_dynamic.tir"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    for m in ["m=40", "m=1", "m=97"] {
        assert!(
            stdout(&o).contains(&format!("step6_async -p BM=32 -p BN=32 -p BK=16 at {m} N=72 K=36: ok")),
            "{}",
            stdout(&o)
        );
    }
}

#[test]
fn a_long_simulation_warns_first() {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(env!("CARGO_BIN_EXE_tirc"))
        .current_dir(root())
        .args(["run", "ir-examples/matmul.tir", "-s", "step2", "--target", "sim"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("tirc runs");
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap()).read_line(&mut line).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(line.starts_with("warning: simulating about 2.2e9 operations"), "{line}");
    assert!(line.contains("-D M=40 -D N=72 -D K=36"), "the test sizes are suggested: {line}");
}

#[test]
fn emit_dot_draws_the_block_dependence_graph() {
    let o = tirc(&["lower", "ir-examples/matmul.tir", "-s", "step4", "--emit", "dot"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("digraph \"matmul\" {"), "{out}");
    assert!(out.contains("[ label = \"C [SSR]\", shape = box]"), "{out}");
    assert!(out.contains("[ label = \"A\", shape = ellipse]"), "{out}");
    // The shared-memory copies feed the compute block.
    assert!(out.lines().filter(|l| l.contains("label = \"A_shared\"") && l.contains("->")).count() == 1, "{out}");
}

#[test]
fn bench_sweeps_sizes_on_the_gpu_or_says_why_not() {
    let o = tirc(&["bench", "ir-examples/matmul.tir", "-s", "step2", "--sizes", "64,M=32:N=64:K=16", "--json"]);
    match code(&o) {
        0 => {
            let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
            assert_eq!(v.as_array().unwrap().len(), 2);
        }
        1 => assert!(stderr(&o).contains("error: at 64:"), "{}", stderr(&o)),
        c => panic!("exit {c}: {}", stderr(&o)),
    }
    let o = tirc(&["bench", "ir-examples/matmul.tir", "-s", "step2", "--sizes", "64x64"]);
    assert_eq!(code(&o), 2, "a malformed size is a usage error: {}", stderr(&o));
}

#[test]
fn tune_plot_on_the_simulator_says_there_is_nothing_timed() {
    let dir = std::env::temp_dir().join(format!("tirc-tune-plot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("db.jsonl").display().to_string();
    let svg = dir.join("t.svg").display().to_string();
    let o = tirc(&[
        "tune",
        "ir-examples/matmul_sweep.tir",
        "-s",
        "step2",
        "--target",
        "sim",
        "--budget",
        "2",
        "--db",
        &db,
        "--plot",
        &svg,
        "--no-progress",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains("no candidate was timed"), "{}", stderr(&o));
}

/// `pad_einsum` with every nest bound: four kernels (the two padded copies,
/// the product, the copy back), each nest binding blockIdx.x to its own
/// extent, checked on the simulator.
#[test]
fn a_padded_matmul_runs_as_four_kernels() {
    let src = "M = 30\nN = 20\nK = 13\n\n@T.prim_func
def matmul(A: T.Buffer((M, K), \"float32\"), B: T.Buffer((K, N), \"float32\"), C: T.Buffer((M, N), \"float32\")):
    for i, j, k in T.grid(M, N, K):
        with T.block(\"C\"):
            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

@tirc.schedule(\"matmul\")
def padded(sch):
    c = sch.get_block(\"C\")
    sch.pad_einsum(c, [8, 8, 8])
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, factors=[None, 8])
    j0, j1 = sch.split(j, factors=[None, 8])
    sch.reorder(i0, j0, i1, j1, k)
    sch.bind(i0, \"blockIdx.x\")
    sch.bind(j0, \"blockIdx.y\")
    sch.bind(i1, \"threadIdx.x\")
    sch.bind(j1, \"threadIdx.y\")
    for name in [\"A_pad\", \"B_pad\", \"C_pad\"]:
        x, y = sch.get_loops(sch.get_block(name))
        bx, tx = sch.split(sch.fuse(x, y), factors=[None, 64])
        sch.bind(bx, \"blockIdx.x\")
        sch.bind(tx, \"threadIdx.x\")
";
    let path = std::env::temp_dir().join(format!("tirc-pad-{}.tir", std::process::id()));
    std::fs::write(&path, src).unwrap();
    let o = tirc(&["run", path.to_str().unwrap_or_default(), "-s", "padded", "--target", "sim"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(out.matches("kernel: ").count(), 4, "{out}");
    assert!(out.contains("grid (4, 3, 1) block (8, 8, 1)"), "{out}");
    assert!(out.contains("check: ok"), "{out}");
    let o = tirc(&["lower", path.to_str().unwrap_or_default(), "-s", "padded", "--emit", "cuda"]);
    let cuda = stdout(&o);
    let product = cuda.split("matmul_2_kernel(").nth(1).and_then(|k| k.split("// grid").next()).unwrap_or_default();
    assert!(
        !product.is_empty() && !product.contains("if (") && !product.contains(" ? "),
        "the product tests no bound: {product}"
    );
    std::fs::remove_file(&path).ok();
}

#[test]
fn emit_trace_prints_a_schedule_that_replays_and_needs_one() {
    let o = tirc(&["lower", "ir-examples/matmul.tir", "-s", "step4", "--emit", "trace"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("@tirc.schedule(\"matmul\")\ndef step4_replay(sch):\n    C = sch.get_block(\"C\")"), "{out}");
    let o = tirc(&["lower", "ir-examples/matmul.tir", "--emit", "trace"]);
    assert_eq!(code(&o), 2, "without a schedule there is no trace: {}", stderr(&o));
}

/// A size known only at run time: `lower` shows the generic kernel, `run`
/// takes its value from -D, and a missing or non-positive value is exit 1
/// with a diagnostic at the size's declaration.
#[test]
fn run_time_sizes_are_kernel_arguments_given_by_d() {
    let f = "ir-examples/matmul_dynamic.tir";
    let o = tirc(&["lower", f, "-s", "step6"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("m = T.int32()"), "{}", stdout(&o));
    assert!(stdout(&o).contains("T.launch_thread(\"blockIdx.y\", (m + 63) // 64)"), "{}", stdout(&o));
    let o = tirc(&["lower", f, "-s", "step6", "--emit", "cuda"]);
    assert!(stdout(&o).contains("// grid (64, (m + 63) / 64, 1)") && stdout(&o).contains("int m)"), "{}", stdout(&o));
    let small = ["-D", "N=24", "-D", "K=20", "-p", "BM=16", "-p", "BN=8", "-p", "BK=4", "-p", "TM=4", "-p", "TN=2"];
    let mut args = vec!["run", f, "-s", "step2", "--target", "sim", "-D", "m=23"];
    args.extend_from_slice(&small);
    let o = tirc(&args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("grid (2, 3, 1)") && stdout(&o).contains("check: ok"), "{}", stdout(&o));
    for (value, message) in [(None, "nothing gives its value"), (Some("m=0"), "must be at least 1")] {
        let mut args = vec!["run", f, "-s", "step2", "--target", "sim"];
        if let Some(v) = value {
            args.extend_from_slice(&["-D", v]);
        }
        args.extend_from_slice(&small);
        let o = tirc(&args);
        assert_eq!(code(&o), 1, "{}", stderr(&o));
        assert!(stderr(&o).contains(message) && stderr(&o).contains("matmul_dynamic.tir:18:5"), "{}", stderr(&o));
    }
}

/// Sizes that leave a buffer with no elements (`n - 1` at n = 1) are bad
/// input named with the sizes, at the function, not an internal error of
/// a launch of extent 0; one element more runs and checks.
#[test]
fn sizes_that_empty_a_buffer_are_named() {
    let f = "tests/data/sizes/shrunk.tir";
    for (arg, message) in [("n=1", "with n = 1 buffer `A` has no elements: its extent `n - 1` is 0"), ("n=2", "")] {
        let o = tirc(&["run", f, "--target", "sim", "-D", arg]);
        if message.is_empty() {
            assert_eq!(code(&o), 0, "{}", stderr(&o));
            assert!(stdout(&o).contains("check: ok"), "{}", stdout(&o));
        } else {
            assert_eq!(code(&o), 1, "{}", stderr(&o));
            assert!(stderr(&o).contains(message) && stderr(&o).contains("shrunk.tir:"), "{}", stderr(&o));
            assert!(!stderr(&o).contains("internal error"), "{}", stderr(&o));
        }
    }
}

/// Sizes that leave a loop of the function with no iteration (`range(n -
/// 1)` at n = 1, its buffers not empty) are named at the loop, as
/// `--specialize` refuses them, not an internal error of a launch of extent
/// 0.
#[test]
fn sizes_that_empty_a_loop_are_named() {
    let f = "tests/data/sizes/empty_loop.tir";
    let o = tirc(&["run", f, "--target", "sim", "-D", "n=1"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("with n = 1 loop `i` runs 0 times") && e.contains("empty_loop.tir:9:"), "{e}");
    assert!(!e.contains("internal error"), "{e}");
    let o = tirc(&["run", f, "--target", "sim", "-D", "n=2"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("check: ok"), "{}", stdout(&o));
}

/// A reader that stops early (`tirc lower ... | head`) ends tirc quietly,
/// by SIGPIPE, not with a panic at the next print.
#[cfg(unix)]
#[test]
fn a_closed_stdout_is_not_a_panic() {
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_tirc"))
        .current_dir(root())
        .args(["lower", "ir-examples/matmul.tir", "-s", "step6_async", "--print-after-all"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tirc runs");
    drop(child.stdout.take());
    let o = child.wait_with_output().expect("tirc ends");
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    assert_ne!(o.status.code(), Some(101), "exit 101 is a panic");
}

/// A simulation that cannot fit in memory is refused with the sizes, not
/// aborted by a failed allocation (TVM's 128⁴ elementwise tests did that
/// under an 8 GB limit).
#[test]
fn a_simulation_too_large_for_memory_is_refused() {
    let dir = std::env::temp_dir().join(format!("tirc-huge-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok();
    let file = dir.join("huge.tir");
    let src = "@T.prim_func\ndef huge(A: T.Buffer((1048576, 524288), \"float32\"), B: T.Buffer((1048576, 524288), \"float32\")):\n    for i, j in T.grid(1048576, 524288):\n        with T.block(\"B\"):\n            vi, vj = T.axis.remap(\"SS\", [i, j])\n            B[vi, vj] = A[vi, vj]\n";
    std::fs::write(&file, src).expect("write");
    let o = tirc(&["run", file.to_str().unwrap_or_default(), "--target", "sim"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("run it on the GPU (--target cuda)"), "{}", stderr(&o));
    std::fs::remove_dir_all(&dir).ok();
}

/// A kernel that spills registers is reported from ptxas's own numbers (the
/// NVRTC compile of `--emit ptx`, `build` and `run --target cuda`): a
/// warning, the kernel is still correct. 16×16 accumulators per thread do
/// not fit in 255 registers; the default 8×4 do.
#[test]
fn a_kernel_that_spills_registers_is_warned_about() {
    if !tirc_exec::gpu::nvrtc_available() {
        assert!(std::env::var("TIRC_REQUIRE_NVRTC").is_err(), "NVRTC is required here but cannot be loaded");
        println!("skipped: NVRTC library not found (pip install nvidia-cuda-nvrtc==13.0.*)");
        return;
    }
    let args = [
        "lower",
        "ir-examples/matmul.tir",
        "-s",
        "step6",
        "-D",
        "M=256",
        "-D",
        "N=256",
        "-D",
        "K=256",
        "--emit",
        "ptx",
    ];
    let o = tirc(&[&args[..], &["-p", "TM=16", "-p", "TN=16"]].concat());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("warning: kernel matmul_kernel spills registers") && err.contains("bytes of spill stores"),
        "{err}"
    );
    let o = tirc(&args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!stderr(&o).contains("spills"), "{}", stderr(&o));
}

#[test]
fn ptxas_reports_are_read() {
    let log = "ptxas info    : Compiling entry function 'k' for 'sm_90'\nptxas         .     16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\nptxas info    : Used 255 registers, used 1 barriers, 49152 bytes smem\n";
    let r = tirc_exec::gpu::PtxasReport::parse(log).unwrap_or_default();
    assert_eq!((r.registers, r.spill_stores, r.spill_loads, r.stack_frame), (255, 8, 12, 16));
    // At 256 threads a thread may have 255 registers anyway; at 512, 128.
    let w256 = r.spill_warning("k", 256, None).unwrap_or_default();
    assert!(w256.contains("8 bytes of spill stores") && !w256.contains("fewer threads"), "{w256}");
    let w512 = r.spill_warning("k", 512, None).unwrap_or_default();
    assert!(w512.contains("at 512, a thread may have 128"), "{w512}");
    // Under an occupancy hint, the registers a thread may have are those of
    // the hinted blocks together.
    let hinted = r.spill_warning("k", 256, Some(2)).unwrap_or_default();
    assert!(
        hinted.contains("__launch_bounds__(256, 2)")
            && hinted.contains("at 2 blocks of 256 threads, a thread may have 128"),
        "{hinted}"
    );
    let none = tirc_exec::gpu::PtxasReport { registers: 40, ..Default::default() };
    assert_eq!(none.spill_warning("k", 128, None), None);
    assert_eq!(tirc_exec::gpu::PtxasReport::parse("no report"), None);
}

/// A tolerance that is NaN or negative is a usage error naming the flag; it
/// failed every kernel before, blaming the kernel.
#[test]
fn a_tolerance_must_be_a_number_at_least_zero() {
    for bad in ["nan", "-1", "inf", "x"] {
        let flag = format!("--tolerance={bad}");
        let o = tirc(&["run", "ir-examples/relu.tir", "--target", "sim", &flag]);
        assert_eq!(code(&o), 2, "{bad}: {}", stderr(&o));
        assert!(stderr(&o).contains("is not a tolerance"), "{}", stderr(&o));
    }
}

/// A long reduction in float16 is checked against a tolerance that grows
/// with its length (about sqrt(N) roundings), not float16's fixed 1e-2,
/// which its own honest rounding passes at N = 10000; a short one keeps
/// float16's.
#[test]
fn the_tolerance_grows_with_a_narrow_accumulation() {
    let run = |n: &str| {
        let d = format!("N={n}");
        let o =
            // (A fixed seed: drawn afresh, a row summing near zero once
            // made the relative error 0.13 against 0.05.)
            tirc(&["run", "tests/data/sizes/f16_long_sum.tir", "-s", "rows", "-D", &d, "--target", "sim", "--json", "--seed", "1"]);
        assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
        let out = stdout(&o);
        assert!(out.contains("\"status\": \"ok\""), "{out}");
        let field = out.split("\"tolerance\": ").nth(1).and_then(|t| t.split(',').next()).expect("a tolerance");
        field.parse::<f64>().expect("a number")
    };
    let long = run("10000");
    assert!((long - 100.0 * 0.5f64.powi(11)).abs() < 1e-12, "tolerance {long}");
    assert_eq!(run("100"), 1e-2);
}

/// rfactor of a split that does not divide, its partial block reduced
/// across threads (split-K): every length, the one whose last chunks are
/// empty (K = 1) included, checks against the reference.
#[test]
fn a_guarded_partial_block_reduces_across_threads() {
    for k in ["1", "7", "8", "101"] {
        let d = format!("K={k}");
        let file = "tests/data/nvrtc/rfactor_split_k_cross_thread.tir";
        let o = tirc(&["run", file, "-s", "split_k", "-D", &d, "--target", "sim", "--json"]);
        assert_eq!(code(&o), 0, "K = {k}: {}{}", stdout(&o), stderr(&o));
        assert!(stdout(&o).contains("\"status\": \"ok\""), "K = {k}: {}", stdout(&o));
    }
}

/// `check --run` shows a failure at the test sizes with its span, as `tirc
/// run` does, after the schedule's one-line summary.
#[test]
fn check_run_shows_the_span_of_a_failure() {
    let o = tirc(&["check", "--run", "tests/data/sizes/empty_loop.tir"]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("error: `n` is a size known only at run time"), "{}", stdout(&o));
    assert!(stderr(&o).contains("empty_loop.tir:6:5"), "{}", stderr(&o));
}

/// `tune --target sim` checks at a -D given over the file's test size, and
/// refuses a bad one at its use, as `run` does (it tuned at the test size
/// whatever -D said).
#[test]
fn tune_on_the_simulator_takes_the_sizes_given() {
    let file = "tests/data/tune/copy_sizes.tir";
    let o = tirc(&["tune", file, "-s", "threads", "--target", "sim", "-D", "M=7"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("M=7"), "{}", stdout(&o));
    let o = tirc(&["tune", file, "-s", "threads", "--target", "sim", "-D", "M=0"]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("a buffer extent must be positive"), "{}", stderr(&o));
}

/// An access that the run-time sizes take outside its buffer is named at
/// its block (or function) with the sizes, on every target, before any
/// launch: the simulator would have found it without a span, and the GPU
/// would have read past the buffer.
#[test]
fn accesses_outside_a_buffer_at_these_sizes_are_named() {
    let f = "tests/data/sizes/outside_at_run_time.tir";
    let o = tirc(&["run", f, "--func", "loop", "--target", "sim", "-D", "n=100"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("with n = 100, block `b` accesses `B[vi]`, whose index in dimension 0 runs from 0 to 99")
            && e.contains("outside its extent 8")
            && e.contains("outside_at_run_time.tir:10:"),
        "{e}"
    );
    let o = tirc(&["run", f, "--func", "loop", "--target", "sim", "-D", "n=8"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("check: ok"), "{}", stdout(&o));
    let o = tirc(&["run", f, "--func", "past_end", "--target", "sim", "-D", "n=3"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("with n = 3, function `past_end` accesses `A[3]`") && e.contains("outside_at_run_time.tir:15:"),
        "{e}"
    );
}

/// TVM 0.27 prints a buffer parameter shaped by a size before the size is
/// declared (`def f(A: T.Buffer(("n + 1", n), "float32")): n = T.int32()`,
/// a quoted extent where it introduces the size): read, and run at a size
/// given by -D.
#[test]
fn tvm_0_27_symbolic_buffer_parameters_run() {
    let f = "tests/data/tvm/symbolic_shapes_quoted.tir";
    for (func, size) in [("declared_in_body", "n=5"), ("size_parameter_after", "m=6")] {
        let o = tirc(&["run", f, "--func", func, "--target", "sim", "-D", size]);
        assert_eq!(code(&o), 0, "{func}: {}", stderr(&o));
        assert!(stdout(&o).contains("check: ok"), "{func}: {}", stdout(&o));
    }
    let o = tirc(&["run", f, "--func", "declared_in_body", "--target", "sim"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("`n` is a size known only at run time"), "{}", stderr(&o));
}

/// A file of several prim_funcs and no schedule (a function of several
/// kernels printed as text is one): `run` asks for `--func`, the option
/// that picks one, not `--schedule`, which has nothing to name.
#[test]
fn several_functions_without_schedules_ask_for_func() {
    let dir = std::env::temp_dir().join(format!("tirc_two_funcs_{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("two.tir");
    let f = |name: &str| {
        format!(
            "@T.prim_func\ndef {name}(A: T.Buffer((4,), \"float32\")):\n    for i in range(4):\n        with T.block(\"B\"):\n            vi = T.axis.spatial(4, i)\n            A[vi] = T.float32(1)\n"
        )
    };
    std::fs::write(&file, f("first") + "\n" + &f("second")).expect("write");
    let o = tirc(&["run", file.to_str().unwrap_or_default(), "--target", "sim"]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("name one with") && stderr(&o).contains("--func"), "{}", stderr(&o));
    let o = tirc(&["run", file.to_str().unwrap_or_default(), "--func", "second", "--target", "sim"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
}

/// `# test-sizes:` and `# test-params:` entries that would be passed over
/// are errors at their words (a helper found `M=abc` dropped and the check
/// run at the file's own sizes).
#[test]
fn check_refuses_test_sizes_it_cannot_read() {
    let o = tirc(&["check", "tests/data/check/bad_test_sizes.tir"]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("`abc` is not an integer a size can take"), "{e}");
    assert!(e.contains("bad_test_sizes.tir:1:15"), "{e}");
    assert!(e.contains("`N` is given twice on one line"), "{e}");
    assert!(e.contains("`# test-params:` names `nosuchschedule`, which is no schedule of the file"), "{e}");
}

/// A name given twice with `-D` takes its last value, as with `-p` (the
/// first `-D` won, the last `-p`).
#[test]
fn a_name_given_twice_takes_its_last_value() {
    let o = tirc(&[
        "run",
        "ir-examples/relu.tir",
        "-s",
        "fused",
        "--target",
        "sim",
        "-D",
        "M=4",
        "-D",
        "N=1024",
        "-D",
        "M=8",
        "-p",
        "TX=32",
        "-p",
        "TX=64",
    ]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("grid (32, 1, 1) block (64, 1, 1)"), "{}", stdout(&o));
}

/// A schedule parameter given with `-D`, or a module constant with `-p`,
/// is refused with the flag that sets it.
#[test]
fn a_value_given_with_the_other_flag_says_which() {
    let o = tirc(&["run", "ir-examples/relu.tir", "-s", "fused", "--target", "sim", "-D", "TX=64"]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("`TX` is a parameter of a schedule: give it with `-p TX=..`"), "{}", stderr(&o));
    let o = tirc(&["run", "ir-examples/relu.tir", "-s", "fused", "--target", "sim", "-p", "M=64"]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("`M` is a module constant: give it with `-D M=..`"), "{}", stderr(&o));
}
