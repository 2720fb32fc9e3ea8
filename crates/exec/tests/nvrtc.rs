//! NVRTC compilation (needs only libnvrtc, no GPU), the GPU probe (must
//! never panic), and, where a GPU is present, a round trip through load,
//! upload, launch, time, download and cuBLAS.

use tirc_codegen::CudaKernel;
use tirc_exec::data::HostData;
use tirc_exec::gpu::{self, Gpu};
use tirc_ir::launch::LaunchConfig;
use tirc_ir::DType;

const SKIP_NVRTC: &str = "skipped: NVRTC library not found (pip install nvidia-cuda-nvrtc==13.0.*)";

const VALID: &str = r#"
extern "C" __global__ void __launch_bounds__(256) k(float* __restrict__ x) {
  x[threadIdx.x] = 1.0f;
}
"#;

const INVALID: &str = r#"
extern "C" __global__ void __launch_bounds__(256) k(float* __restrict__ x) {
  x[threadIdx.x] = undefined_name;
}
"#;

#[test]
fn nvrtc_compiles_a_valid_kernel_to_ptx() {
    if !gpu::nvrtc_available() {
        println!("{SKIP_NVRTC}");
        return;
    }
    let ptx = gpu::nvrtc_compile(VALID, "sm_90").expect("a valid kernel compiles");
    assert!(ptx.contains(".entry k"), "no `.entry k` in the PTX:\n{ptx}");
    assert!(ptx.contains(".visible .entry k"), "kernel k is not visible in the PTX:\n{ptx}");
    assert!(ptx.contains(".target sm_90"), "the PTX is not for sm_90:\n{ptx}");
}

#[test]
fn nvrtc_reports_its_log_on_errors() {
    if !gpu::nvrtc_available() {
        println!("{SKIP_NVRTC}");
        return;
    }
    let err = gpu::nvrtc_compile(INVALID, "sm_90").expect_err("an invalid kernel does not compile");
    println!("{err}");
    assert!(err.contains("error"), "no error in the message:\n{err}");
    assert!(err.contains("undefined_name"), "the NVRTC log is missing from the message:\n{err}");
}

#[test]
fn nvrtc_refuses_a_bad_architecture() {
    if !gpu::nvrtc_available() {
        println!("{SKIP_NVRTC}");
        return;
    }
    let err = gpu::nvrtc_compile(VALID, "sm_0").expect_err("sm_0 is no architecture");
    assert!(!err.is_empty());
    let err = gpu::nvrtc_compile(VALID, "sm_90 --use_fast_math").expect_err("options are no architecture");
    assert!(err.contains("invalid GPU architecture"), "{err}");
}

#[test]
fn gpu_probe_does_not_panic() {
    // CI has no GPU, a dev box might: only require an answer, not a panic.
    match gpu::available() {
        Ok(()) => println!("a GPU is available"),
        Err(why) => {
            assert!(!why.is_empty());
            println!("no GPU: {why}");
        }
    }
    match Gpu::open() {
        Ok(g) => println!("opened {} ({}, {} SMs)", g.name(), g.arch(), g.sm_count()),
        Err(why) => {
            assert!(!why.is_empty());
            assert!(gpu::available().is_err(), "available() said yes but open() failed: {why}");
        }
    }
}

fn kernel(name: &str, source: String, grid: i64, block: i64, params: usize, shared: usize) -> CudaKernel {
    CudaKernel {
        name: name.to_string(),
        source,
        launch: LaunchConfig { grid: [grid, 1, 1], block: [block, 1, 1] },
        params: (0..params).map(|i| (format!("p{i}"), DType::Float(32))).collect(),
        scratch: vec![],
        dynamic_shared_bytes: shared,
        sizes: vec![],
        size_values: vec![],
        scalars: vec![],
        scalar_values: vec![],
        grid_exprs: [grid.to_string(), "1".into(), "1".into()],
        min_blocks_per_sm: None,
        tensor_maps: vec![],
        extent_terms: vec![],
    }
}

/// Runs only where a GPU and NVRTC are present.
#[test]
fn gpu_round_trip() {
    if let Err(why) = gpu::available() {
        println!("skipped: no GPU ({why})");
        return;
    }
    if !gpu::nvrtc_available() {
        println!("{SKIP_NVRTC}");
        return;
    }
    let g = Gpu::open().expect("open the GPU");
    println!("{} {} SMs={} optin smem={}", g.name(), g.arch(), g.sm_count(), g.max_shared_per_block_optin());
    assert!(g.arch().starts_with("sm_"));
    assert!(g.sm_count() > 0);

    // y = 2 x + y, 1000 elements over 4 blocks of 256.
    let n = 1000usize;
    let src = format!(
        "extern \"C\" __global__ void __launch_bounds__(256) saxpy(float* __restrict__ x, float* __restrict__ y) {{\n\
           int i = blockIdx.x * 256 + threadIdx.x;\n\
           if (i < {n}) y[i] = 2.0f * x[i] + y[i];\n\
         }}\n"
    );
    let k = g.load(&kernel("saxpy", src, 4, 256, 2, 0)).expect("load saxpy");
    assert_eq!(k.grid(), [4, 1, 1]);
    assert_eq!(k.block(), [256, 1, 1]);
    let x = HostData::F32((0..n).map(|i| i as f32).collect());
    let y = HostData::F32(vec![1.0; n]);
    let dx = g.upload(&x).unwrap();
    let dy = g.upload(&y).unwrap();
    g.launch(&k, &[&dx, &dy]).expect("launch saxpy");
    let mut out = HostData::F32(vec![0.0; n]);
    g.download(&dy, &mut out).unwrap();
    for i in 0..n {
        assert_eq!(out.get(i), 2.0 * i as f64 + 1.0, "y[{i}]");
    }
    let times = g.time(&k, &[&dx, &dy], 3, 5).expect("time saxpy");
    assert_eq!(times.len(), 5);
    assert!(times.iter().all(|&t| t > 0.0 && t.is_finite()), "{times:?}");
    println!("saxpy ms: {times:?}");

    // Wrong argument count and wrong download size are errors, not panics.
    assert!(g.launch(&k, &[&dx]).is_err());
    assert!(g.download(&dy, &mut HostData::F32(vec![0.0; n + 1])).is_err());
    // A kernel that does not compile reports NVRTC's log.
    let bad = g.load(&kernel("k", INVALID.to_string(), 1, 256, 1, 0));
    assert!(bad.err().is_some_and(|e| e.contains("undefined_name")));
    // A launch the driver refuses (2048 threads a block) is an error.
    let big = "extern \"C\" __global__ void big(float* __restrict__ x) { x[threadIdx.x] = 0.0f; }\n".to_string();
    let kb = g.load(&kernel("big", big, 1, 2048, 1, 0)).expect("load big");
    let e = g.launch(&kb, &[&dx]).expect_err("2048 threads per block");
    println!("refused launch: {e}");

    // Dynamic shared memory above 48 KiB.
    let smem = 64 * 1024;
    if g.max_shared_per_block_optin() >= smem {
        let src = "extern \"C\" __global__ void __launch_bounds__(256) sm(float* __restrict__ y) {\n\
                     extern __shared__ float s[];\n\
                     for (int i = threadIdx.x; i < 16384; i += 256) s[i] = (float)i;\n\
                     __syncthreads();\n\
                     y[threadIdx.x] = s[16383 - threadIdx.x];\n\
                   }\n"
        .to_string();
        let ks = g.load(&kernel("sm", src, 1, 256, 1, smem)).expect("load sm");
        g.launch(&ks, &[&dy]).expect("launch with 64 KiB of dynamic shared memory");
        g.download(&dy, &mut out).unwrap();
        for i in 0..256 {
            assert_eq!(out.get(i), (16383 - i) as f64);
        }
    }

    // cuBLAS SGEMM, row-major, checked against the host.
    let (m, nn, kk) = (33usize, 17usize, 65usize);
    let a: Vec<f32> = (0..m * kk).map(|i| ((i * 7) % 13) as f32 - 6.0).collect();
    let b: Vec<f32> = (0..kk * nn).map(|i| ((i * 5) % 11) as f32 - 5.0).collect();
    let da = g.upload(&HostData::F32(a.clone())).unwrap();
    let db = g.upload(&HostData::F32(b.clone())).unwrap();
    let dc = g.upload(&HostData::F32(vec![f32::NAN; m * nn])).unwrap();
    match g.cublas_sgemm(m, nn, kk, &da, &db, &dc, 2, 3) {
        Ok(times) => {
            assert_eq!(times.len(), 3);
            println!("sgemm ms: {times:?}");
            let mut c = HostData::F32(vec![0.0; m * nn]);
            g.download(&dc, &mut c).unwrap();
            for i in 0..m {
                for j in 0..nn {
                    let want: f32 = (0..kk).map(|p| a[i * kk + p] * b[p * nn + j]).sum();
                    assert_eq!(c.get(i * nn + j), want as f64, "C[{i},{j}]");
                }
            }
        }
        Err(e) => println!("cuBLAS unavailable: {e}"),
    }
    assert!(g.cublas_sgemm(m, nn, kk + 1, &da, &db, &dc, 0, 1).is_err());

    // An out-of-bounds write is reported (and poisons the context, so last).
    let src = "extern \"C\" __global__ void oob(float* __restrict__ x) {\n\
                 x[threadIdx.x + (1ll << 40)] = 1.0f;\n\
               }\n"
    .to_string();
    let ko = g.load(&kernel("oob", src, 1, 32, 1, 0)).expect("load oob");
    let e = g.launch(&ko, &[&dx]).expect_err("an illegal address");
    println!("oob: {e}");
}
