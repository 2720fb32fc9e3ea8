//! Every golden CUDA kernel compiles with NVRTC (no GPU needed). Skipped,
//! and saying so, when the NVRTC library is not installed
//! (`pip install nvidia-cuda-nvrtc==13.0.*` and put its `nvidia/cu13/lib` on
//! `LD_LIBRARY_PATH`; `.ci/run` does both).

use tirc_exec::gpu::{nvrtc_available, nvrtc_compile};
use tirc_tests::{read, root};

#[test]
fn golden_kernels_compile_with_nvrtc() {
    if !nvrtc_available() {
        println!("skipped: NVRTC library not found (pip install nvidia-cuda-nvrtc==13.0.*)");
        return;
    }
    let mut n = 0;
    for dir in std::fs::read_dir(root().join("golden")).into_iter().flatten().flatten() {
        for file in std::fs::read_dir(dir.path()).into_iter().flatten().flatten() {
            let p = file.path();
            if p.extension().is_some_and(|e| e == "cu") {
                for arch in ["sm_80", "sm_90"] {
                    let ptx = nvrtc_compile(&read(&p), arch)
                        .unwrap_or_else(|log| panic!("{} for {arch}:\n{log}", p.display()));
                    assert!(ptx.contains(".entry"), "{}: no kernel entry in the PTX", p.display());
                }
                n += 1;
            }
        }
    }
    assert!(n > 0, "no golden kernels");
    println!("compiled {n} golden kernels with NVRTC");
}
