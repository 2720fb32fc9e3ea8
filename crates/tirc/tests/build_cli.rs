//! `tirc build`: the files a user's own program needs. The source holds the
//! kernels and a launcher (`<name>_launch`), the header declares it with
//! each argument's dtype and shape, `kernel.json` lists the kernels in
//! launch order with their grids, blocks and arguments; with NVRTC (as in
//! CI, `TIRC_REQUIRE_NVRTC=1`) the PTX and the cubin are written too.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn tirc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tirc")).current_dir(root()).args(args).output().expect("tirc runs")
}

fn out_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tirc-build-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn json(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("kernel.json")).unwrap()).unwrap()
}

fn nvrtc_required() -> bool {
    std::env::var("TIRC_REQUIRE_NVRTC").is_ok_and(|v| v == "1")
}

#[test]
fn a_matmul_builds_into_source_header_and_metadata() {
    let dir = out_dir("matmul");
    let d = dir.display().to_string();
    let o =
        tirc(&["build", "ir-examples/matmul.tir", "-s", "step2", "-D", "M=64", "-D", "N=32", "-D", "K=48", "-o", &d]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let header = std::fs::read_to_string(dir.join("matmul.h")).unwrap();
    assert!(
        header.contains("cudaError_t matmul_launch(const float* A, const float* B, float* C, cudaStream_t stream);"),
        "{header}"
    );
    assert!(header.contains("A: float32[64, 48], read") && header.contains("C: float32[64, 32], write"), "{header}");
    let source = std::fs::read_to_string(dir.join("matmul.cu")).unwrap();
    assert!(source.contains("extern \"C\" __global__ void __launch_bounds__(32) matmul_kernel("), "{source}");
    assert!(source.contains("matmul_kernel<<<dim3(2, 1, 1), dim3(4, 8, 1), 0, stream>>>(A, B, C);"), "{source}");
    let j = json(&dir);
    assert_eq!(j["function"], "matmul");
    assert_eq!(j["schedule"], "step2");
    assert_eq!(j["defines"]["K"], 48);
    assert_eq!(j["launch_function"], "matmul_launch");
    assert_eq!(j["arguments"][0]["shape"], serde_json::json!([64, 48]));
    assert_eq!(j["arguments"][1]["strides"], serde_json::json!([32, 1]));
    assert_eq!(j["arguments"][2]["access"], "write");
    assert_eq!(j["kernels"][0]["grid"], serde_json::json!([2, 1, 1]));
    assert_eq!(j["kernels"][0]["block"], serde_json::json!([4, 8, 1]));
    if nvrtc_required() {
        let ptx = std::fs::read_to_string(dir.join("matmul.ptx")).unwrap();
        assert!(ptx.contains(".entry matmul_kernel"), "PTX without the kernel");
        let cubin = std::fs::read(dir.join("matmul.cubin")).unwrap();
        assert_eq!(&cubin[..4], b"\x7fELF");
        assert_eq!(j["ptx"], "matmul.ptx");
        assert_eq!(j["cubin"], "matmul.cubin");
    } else if j["ptx"].is_null() {
        assert!(String::from_utf8_lossy(&o.stderr).contains("no PTX"), "the missing PTX is explained");
    }
}

#[test]
fn a_function_of_two_kernels_launches_both_in_order_with_its_intermediate() {
    let dir = out_dir("two");
    let d = dir.display().to_string();
    let o = tirc(&["build", "tests/data/conformance/local_buffer_between_kernels.tir", "-o", &d, "--name", "sums"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let j = json(&dir);
    let names: Vec<&str> = j["kernels"].as_array().unwrap().iter().map(|k| k["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["partial_sums_kernel", "partial_sums_1_kernel"]);
    assert_eq!(j["intermediates"][0]["name"], "P");
    assert_eq!(j["kernels"][1]["arguments"], serde_json::json!(["A", "B", "P"]));
    let source = std::fs::read_to_string(dir.join("sums.cu")).unwrap();
    let first = source.find("partial_sums_kernel<<<").unwrap();
    let second = source.find("partial_sums_1_kernel<<<").unwrap();
    assert!(first < second, "launched in order");
    assert!(source.contains("cudaMallocAsync((void**)&P, 32ull * sizeof(float), stream)"), "{source}");
    assert!(source.contains("cudaFreeAsync(P, stream)"), "{source}");
    // The helpers come once in the one translation unit.
    assert_eq!(source.matches("int tirc_floordiv(int a, int b)").count(), 1);
    if nvrtc_required() {
        let ptx = std::fs::read_to_string(dir.join("sums.ptx")).unwrap();
        assert!(ptx.contains(".entry partial_sums_kernel") && ptx.contains(".entry partial_sums_1_kernel"));
    }
}

#[test]
fn build_without_an_output_folder_or_with_bad_input_fails_cleanly() {
    let o = tirc(&["build", "ir-examples/matmul.tir", "-s", "step2"]);
    assert_eq!(o.status.code(), Some(2), "-o is required");
    let dir = out_dir("bad");
    let d = dir.display().to_string();
    let o = tirc(&["build", "ir-examples/matmul.tir", "-s", "no_such_schedule", "-o", &d]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no schedule `no_such_schedule`"));
    assert!(!dir.exists(), "nothing is written for bad input");
    // A file where the folder should be.
    let file = std::env::temp_dir().join(format!("tirc-build-{}-file", std::process::id()));
    std::fs::write(&file, "x").unwrap();
    let f = file.display().to_string();
    let o = tirc(&["build", "ir-examples/matmul.tir", "-s", "step2", "-D", "M=8", "-D", "N=8", "-D", "K=8", "-o", &f]);
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot make"));
}

/// A function of run-time sizes builds once: the launcher takes `int m`,
/// checks it and computes the grid; `kernel.json` gives shapes and grids
/// as C expressions of it.
#[test]
fn a_run_time_size_is_an_argument_of_the_launcher() {
    let dir = out_dir("dynamic");
    let d = dir.display().to_string();
    let o = tirc(&["build", "ir-examples/matmul_dynamic.tir", "-s", "step6", "-o", &d]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let header = std::fs::read_to_string(dir.join("matmul.h")).unwrap();
    assert!(
        header.contains(
            "cudaError_t matmul_launch(const float* A, const float* B, float* C, int m, cudaStream_t stream);"
        ),
        "{header}"
    );
    assert!(header.contains("A: float32[m, 4096], read"), "{header}");
    let source = std::fs::read_to_string(dir.join("matmul.cu")).unwrap();
    assert!(
        source.contains("if (m < 1 || m > 1073741824 || (size_t)(((long long)m)) * (size_t)(4096) > 2147483647ull"),
        "{source}"
    );
    // The grid is computed in 64 bits from copies of the sizes, then
    // checked against CUDA's limits (in int, `(m * n + 255) / 256` passed
    // 2^31 near buffers of that many elements).
    assert!(source.contains("const long long m = tirc_size_m; (void)m;"), "{source}");
    assert!(source.contains("tirc_grid[0] = 64; tirc_grid[1] = (m + 63) / 64; tirc_grid[2] = 1;"), "{source}");
    assert!(source.contains("tirc_grid[1] < 1 || tirc_grid[1] > 65535"), "{source}");
    assert!(
        source.contains("matmul_kernel<<<dim3((unsigned)tirc_grid[0], (unsigned)tirc_grid[1], (unsigned)tirc_grid[2]), dim3(16, 8, 1), 0, stream>>>(A, B, C, m);"),
        "{source}"
    );
    let j = json(&dir);
    assert_eq!(j["sizes"], serde_json::json!([{"name": "m", "dtype": "int32"}]));
    assert_eq!(j["arguments"][0]["shape"], serde_json::json!(["m", 4096]));
    assert_eq!(j["arguments"][2]["strides"], serde_json::json!([4096, 1]));
    assert_eq!(j["kernels"][0]["grid"], serde_json::json!([64, "(m + 63) / 64", 1]));
    assert_eq!(j["kernels"][0]["arguments"], serde_json::json!(["A", "B", "C"]));
    assert_eq!(j["kernels"][0]["sizes"], serde_json::json!(["m"]));
    if nvrtc_required() {
        assert!(dir.join("matmul.ptx").exists() && dir.join("matmul.cubin").exists());
    }
}

#[test]
fn scalar_parameters_are_arguments_of_the_launcher() {
    let dir = out_dir("scalars");
    let d = dir.display().to_string();
    let o = tirc(&["build", "tests/data/sizes/scalars.tir", "-s", "two_kernels", "-o", &d]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let header = std::fs::read_to_string(dir.join("gemm.h")).unwrap();
    assert!(header.contains("float* C, float alpha, float beta, cudaStream_t stream);"), "{header}");
    let source = std::fs::read_to_string(dir.join("gemm.cu")).unwrap();
    assert!(source.contains("(A, B, C0, C, S, alpha, beta);"), "each kernel is passed the values:\n{source}");
    let j = json(&dir);
    assert_eq!(
        j["scalars"],
        serde_json::json!([{"name": "alpha", "dtype": "float32"}, {"name": "beta", "dtype": "float32"}])
    );
    assert_eq!(j["kernels"][1]["scalars"], serde_json::json!(["alpha", "beta"]));
}

/// The launcher checks an extent that is a product of run-time sizes in 64
/// bits: `n * n` in int wrapped at n = 65537 and passed the check.
#[test]
fn a_product_of_sizes_is_checked_in_64_bits() {
    let dir = out_dir("square");
    let d = dir.display().to_string();
    let o = tirc(&["build", "tests/data/sizes/square_extent.tir", "-s", "s", "-o", &d]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let source = std::fs::read_to_string(dir.join("f.cu")).unwrap();
    assert!(source.contains("(size_t)((((long long)n) * ((long long)n))) > 2147483647ull"), "{source}");
}

/// A size named `stream`, buffers named `err` and `threadIdx`: the names
/// the launcher and CUDA already use are renamed, in the kernel and the
/// header alike.
#[test]
fn names_the_cuda_source_uses_are_renamed() {
    let dir = out_dir("reserved");
    let d = dir.display().to_string();
    let o = tirc(&["build", "tests/data/sizes/reserved_names.tir", "-s", "s", "-o", &d]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let header = std::fs::read_to_string(dir.join("f.h")).unwrap();
    assert!(
        header.contains(
            "cudaError_t f_launch(const float* err_1, float* threadIdx_1, int stream_1, cudaStream_t stream);"
        ),
        "{header}"
    );
}

/// An extent of run-time sizes such as `n - 1` is at least 1 in the
/// launcher's check: at n = 1 it launched an empty grid, which CUDA
/// refuses with another error than the one the header promises.
#[test]
fn an_extent_of_sizes_is_checked_to_be_at_least_one() {
    let dir = out_dir("diff");
    let d = dir.display().to_string();
    let o = tirc(&["build", "tests/data/sizes/difference_extent.tir", "-s", "s", "-o", &d]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let source = std::fs::read_to_string(dir.join("diff.cu")).unwrap();
    assert!(source.contains("(long long)((((long long)n) - 1)) < 1"), "{source}");
}

/// Kernels that use sm_90a's instructions (here `setmaxnreg`, which the
/// producer warpgroup of a warp-specialized `mma.sync` kernel hands its
/// registers over with) are built for sm_90a when asked for sm_90, and
/// `kernel.json` says so; the source stops nvcc with a message where it
/// would compile them for another target.
#[test]
fn sm90a_kernels_say_what_they_are_built_for() {
    let dir = out_dir("sm90a");
    let d = dir.display().to_string();
    let o = tirc(&[
        "build",
        "ir-examples/hgemm.tir",
        "-s",
        "mma",
        "-p",
        "WS=1",
        "-D",
        "M=512",
        "-D",
        "N=256",
        "-D",
        "K=128",
        "--arch",
        "sm_90",
        "-o",
        &d,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(json(&dir)["arch"], "sm_90a");
    let source = std::fs::read_to_string(dir.join("hgemm.cu")).unwrap();
    assert!(source.contains("setmaxnreg.inc") && source.contains("!defined(__CUDA_ARCH_FEAT_SM90_ALL)"), "{source}");
    if nvrtc_required() {
        let ptx = std::fs::read_to_string(dir.join("hgemm.ptx")).unwrap();
        assert!(ptx.contains(".target sm_90a"), "PTX for another target");
    }
}
