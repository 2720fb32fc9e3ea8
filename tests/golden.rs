//! Golden outputs: for every schedule of every `ir-examples/*.tir`, the
//! lowered TIR and the CUDA source at the file's own sizes (a function of
//! several kernels as one translation unit) must equal
//! `golden/<example>/<schedule>.{tir,cu}`.
//!
//! Regenerate after a reviewed change with
//! `TIRC_BLESS=1 cargo test --test it golden::`, then read the diff.

use tirc::compile::{compile, Request};
use tirc_tests::{bless, examples, golden_path, read};

#[test]
fn lowered_tir_and_cuda_match_golden() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for ex in examples() {
        let src = read(&ex);
        let module = tirc::compile::load(&src, &[]).unwrap_or_else(|e| panic!("{}: {:?}", ex.display(), e));
        for s in &module.schedules {
            let req = Request { schedule: Some(s.name.clone()), ..Request::default() };
            let c = compile(&src, &req).unwrap_or_else(|e| panic!("{} {}: {:?}", ex.display(), s.name, e));
            let outputs = [
                ("tir", c.lowered_text()),
                // Several kernels as one translation unit (what `tirc build`
                // writes: the helpers once), so that NVRTC compiles it whole.
                (
                    "cu",
                    match &c.kernels[..] {
                        [k] => k.cuda.source.clone(),
                        ks => tirc_codegen::translation_unit(&ks.iter().map(|k| &k.cuda).collect::<Vec<_>>()),
                    },
                ),
            ];
            for (ext, text) in outputs {
                let path = golden_path(&ex, &s.name, ext);
                if bless() {
                    std::fs::create_dir_all(path.parent().unwrap_or(&path)).ok();
                    std::fs::write(&path, &text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                } else {
                    let want = std::fs::read_to_string(&path).unwrap_or_default();
                    if want != text {
                        failures.push(format!(
                            "{} differs (TIRC_BLESS=1 cargo test --test it golden:: rewrites it)",
                            path.display()
                        ));
                    }
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 0, "no example schedules found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
