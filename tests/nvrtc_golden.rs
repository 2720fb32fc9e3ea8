//! Every golden CUDA kernel, and the kernel of every `tests/data/nvrtc/*.tir`
//! and of every conformance program with a line `# compile: nvrtc`,
//! compiles with NVRTC (no GPU needed). Skipped, and saying so, when the
//! NVRTC library is not installed (`pip install nvidia-cuda-nvrtc==13.0.*`
//! and put its `nvidia/cu13/lib` on `LD_LIBRARY_PATH`; `.ci/run` does both
//! and sets `TIRC_REQUIRE_NVRTC=1`, under which a missing NVRTC fails).

use tirc::compile::{compile, Request};
use tirc_exec::gpu::{nvrtc_available, nvrtc_compile};
use tirc_tests::{read, root};

/// Whether NVRTC is there; when it is not, says the test is skipped, or
/// fails where `TIRC_REQUIRE_NVRTC` is set (in CI).
fn have_nvrtc() -> bool {
    if nvrtc_available() {
        return true;
    }
    assert!(
        std::env::var_os("TIRC_REQUIRE_NVRTC").is_none(),
        "TIRC_REQUIRE_NVRTC is set but the NVRTC library cannot be loaded"
    );
    println!("skipped: NVRTC library not found (pip install nvidia-cuda-nvrtc==13.0.*)");
    false
}

/// NVRTC compiles `source` for each of `archs` into PTX with a kernel.
fn compiles_for(what: &str, source: &str, archs: &[&str]) {
    for &arch in archs {
        let ptx = nvrtc_compile(source, arch).unwrap_or_else(|log| panic!("{what} for {arch}:\n{log}"));
        assert!(ptx.contains(".entry"), "{what}: no kernel entry in the PTX");
    }
}

#[test]
fn test_programs_compile_with_nvrtc() {
    if !have_nvrtc() {
        return;
    }
    let mut n = 0;
    // Also the conformance programs (checked on the simulator) that ask to
    // be compiled too, with a line `# compile: nvrtc`.
    let files = ["tests/data/nvrtc", "tests/data/conformance"]
        .into_iter()
        .flat_map(|d| std::fs::read_dir(root().join(d)).into_iter().flatten().flatten())
        .map(|f| f.path())
        .filter(|p| {
            p.starts_with(root().join("tests/data/nvrtc")) || read(p).lines().any(|l| l.starts_with("# compile: nvrtc"))
        });
    for p in files {
        if p.extension().is_some_and(|e| e == "tir") {
            // Each schedule of the file, or its function as written.
            let src = read(&p);
            let module = tirc::compile::load(&src, &[]).unwrap_or_else(|d| panic!("{}: {}", p.display(), d[0].message));
            let mut requests: Vec<Request> = module
                .schedules
                .iter()
                .map(|s| Request { schedule: Some(s.name.clone()), ..Request::default() })
                .collect();
            if requests.is_empty() {
                requests.push(Request::default());
            }
            for req in requests {
                let c = compile(&src, &req).unwrap_or_else(|d| panic!("{}: {}", p.display(), d[0].message));
                for k in &c.kernels {
                    compiles_for(&format!("{} {:?}", p.display(), req.schedule), &k.cuda.source, &["sm_80", "sm_90"]);
                }
            }
            n += 1;
        }
    }
    assert!(n > 0, "no programs in tests/data/nvrtc");
}

#[test]
fn golden_kernels_compile_with_nvrtc() {
    if !have_nvrtc() {
        return;
    }
    let mut n = 0;
    for dir in std::fs::read_dir(root().join("golden")).into_iter().flatten().flatten() {
        for file in std::fs::read_dir(dir.path()).into_iter().flatten().flatten() {
            let p = file.path();
            if p.extension().is_some_and(|e| e == "cu") {
                // Generated for the default target, sm_90; the programs
                // above are compiled for sm_80 too (the code paths that
                // depend on the architecture are the same from sm_80 on).
                compiles_for(&p.display().to_string(), &read(&p), &["sm_90"]);
                n += 1;
            }
        }
    }
    assert!(n > 0, "no golden kernels");
    println!("compiled {n} golden kernels with NVRTC");
}

/// The lowest int64 value written as `9223372036854775808LL` negated is an
/// unsigned literal in C++, and a comparison with it is unsigned (`x >
/// INT64_MIN` false for every x >= 0): it is written as a sum of two
/// literals of its own type. No NVRTC needed.
#[test]
fn the_lowest_integers_keep_their_signed_types() {
    let src = read(&root().join("tests/data/nvrtc/integer_literals.tir"));
    let c = compile(&src, &Request { schedule: Some("s".into()), ..Request::default() })
        .unwrap_or_else(|d| panic!("{d:?}"));
    let cuda: String = c.kernels.iter().map(|k| k.cuda.source.as_str()).collect();
    assert!(!cuda.contains("9223372036854775808") && !cuda.contains("2147483648"), "{cuda}");
    assert!(cuda.contains("(-9223372036854775807LL - 1)") && cuda.contains("(-2147483647 - 1)"), "{cuda}");
    assert!(cuda.contains("tirc_floormod(") && cuda.contains(", 50LL)"), "{cuda}");
}
