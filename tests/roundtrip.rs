//! What the printer writes, the parser reads back: for every example and
//! schedule, the scheduled IR and the IR after every pass print, parse back
//! to a structurally equal function, and print the same again. Golden TIR
//! files parse and round-trip too.

use tirc::compile::{compile, load, Request};
use tirc_ir::printer::print_func;
use tirc_ir::structural_eq::func_eq;
use tirc_ir::PrimFunc;
use tirc_tests::{examples, read, root};

fn roundtrip(what: &str, f: &PrimFunc) {
    let text = print_func(f);
    let m = load(&text, &[]).unwrap_or_else(|e| panic!("{what}: printed text does not parse: {e:?}\n{text}"));
    let [g] = &m.funcs[..] else { panic!("{what}: expected one function") };
    assert!(func_eq(f, g), "{what}: parse(print(ir)) differs from ir\n{text}\n---\n{}", print_func(g));
    assert_eq!(text, print_func(g), "{what}: printing is not idempotent");
}

#[test]
fn every_stage_of_every_example_round_trips() {
    let mut n = 0;
    for ex in examples() {
        let src = read(&ex);
        let module = load(&src, &[]).unwrap_or_else(|e| panic!("{e:?}"));
        for f in &module.funcs {
            roundtrip(&format!("{} {}", ex.display(), f.name), f);
            n += 1;
        }
        for s in &module.schedules {
            let c = compile(&src, &Request { schedule: Some(s.name.clone()), ..Request::default() })
                .unwrap_or_else(|e| panic!("{e:?}"));
            roundtrip(&format!("{} {} scheduled", ex.display(), s.name), &c.scheduled);
            for (pass, f) in c.kernels.iter().flat_map(|k| &k.after) {
                roundtrip(&format!("{} {} after {pass}", ex.display(), s.name), f);
                n += 1;
            }
        }
    }
    assert!(n > 0);
}

#[test]
fn golden_tir_files_round_trip() {
    let mut n = 0;
    for dir in std::fs::read_dir(root().join("golden")).into_iter().flatten().flatten() {
        for file in std::fs::read_dir(dir.path()).into_iter().flatten().flatten() {
            let p = file.path();
            if p.extension().is_some_and(|e| e == "tir") {
                let m = load(&read(&p), &[]).unwrap_or_else(|e| panic!("{}: {e:?}", p.display()));
                for f in &m.funcs {
                    roundtrip(&p.display().to_string(), f);
                    n += 1;
                }
            }
        }
    }
    assert!(n > 0, "no golden TIR files");
}

/// tirc's own lowered text of a tensor-core kernel (flat `warp` and
/// `wmma.accumulator` tiles, `T.mma_store` to the output) reads back,
/// lowers again and computes the product: the flat tiles keep their whole
/// 16×16 (32 lanes × 8) extent where `compact_buffers` sizes them.
#[test]
fn lowered_tensor_core_text_lowers_again() {
    let src = read(&root().join("ir-examples/hgemm.tir"));
    let p = |kv: &[(&str, &str)]| kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>();
    let cases = [
        ("wmma", p(&[("BM", "32"), ("BN", "32"), ("BK", "32"), ("WM", "2"), ("WN", "2")])),
        ("mma", p(&[("BM", "32"), ("BN", "32"), ("BK", "32"), ("WM", "2"), ("WN", "2")])),
        ("wgmma", p(&[("BM", "64"), ("BN", "64"), ("STAGES", "2")])),
    ];
    for (s, params) in cases {
        let req = Request {
            schedule: Some(s.into()),
            defines: vec![("M".into(), 64), ("N".into(), 64), ("K".into(), 128)],
            params,
            ..Request::default()
        };
        let c = compile(&src, &req).unwrap_or_else(|e| panic!("{s}: {}", e[0].message));
        let text = print_func(&c.first().lowered);
        let m = load(&text, &[]).unwrap_or_else(|e| panic!("{s}: lowered text does not parse: {e:?}"));
        let again = tirc_passes::transform::lower(m.funcs[0].clone(), &Default::default(), |_, _| {})
            .unwrap_or_else(|e| panic!("{s}: lowering the lowered text: {}", e.message));
        let (e, tol) = tirc::verify::sim_check(&c.original, &again, 3).unwrap_or_else(|m| panic!("{s}: {m}"));
        assert!(e.rel_err <= tol && e.non_finite == 0, "{s}: rel_err {:.3e}", e.rel_err);
        // The warp-specialized loop's tiles keep their versions: the
        // producer fills one while the consumers read another, which the
        // simulator, running the loop in order, would not tell.
        if s == "wgmma" {
            let shapes = |f: &tirc_ir::PrimFunc| {
                let mut v = Vec::new();
                f.body.walk(&mut |x| {
                    if let tirc_ir::Stmt::Allocate { buffer, .. } = x {
                        v.push((buffer.name().to_string(), buffer.num_elements()));
                    }
                });
                v
            };
            // (C's staging tile, rows of 32 floats padded by 4, loses the
            // padding past its last row: the lowered text is flat.)
            let trimmed = |v: Vec<(String, Option<i64>)>| -> Vec<(String, Option<i64>)> {
                v.into_iter()
                    .map(|(n, e)| if n == "C_shared" { (n, e.map(|e| (e + 35) / 36 * 36)) } else { (n, e) })
                    .collect()
            };
            let (before, after) = (shapes(&c.first().lowered), shapes(&again));
            assert!(before.contains(&("C_shared".to_string(), Some(64 * 36))), "{before:?}");
            assert!(after.contains(&("C_shared".to_string(), Some(63 * 36 + 32))), "{after:?}");
            assert_eq!(trimmed(after), trimmed(before), "{s}: tiles resized by lowering again");
        }
    }
}

/// tirc's own lowered text of a register-tiled matmul at sizes its thread
/// tiles do not divide lowers again and computes the product: a thread at
/// the edge loads only the elements of its register tile inside B, reads
/// the whole tile unconditionally and stores only what the same test lets
/// through, so its reads of registers it did not write are thrown away.
/// The check of lowered text (private registers) refused it as reading
/// other threads' registers.
#[test]
fn lowered_register_tiles_at_an_edge_lower_again() {
    let src = read(&root().join("ir-examples/sgemm.tir"));
    let params = [("BM", "32"), ("BN", "32"), ("BK", "8"), ("TM", "4"), ("TN", "4"), ("GROUP_M", "2")];
    for [m, n, k] in [[33, 17, 7], [5, 5, 5]] {
        let req = Request {
            schedule: Some("sgemm".into()),
            defines: vec![("M".into(), m), ("N".into(), n), ("K".into(), k)],
            params: params.iter().map(|(p, v)| (p.to_string(), v.to_string())).collect(),
            ..Request::default()
        };
        let c = compile(&src, &req).unwrap_or_else(|e| panic!("{m}x{n}x{k}: {}", e[0].message));
        let text = print_func(&c.first().lowered);
        let parsed = load(&text, &[]).unwrap_or_else(|e| panic!("{m}x{n}x{k}: {e:?}"));
        let again = tirc_passes::transform::lower(parsed.funcs[0].clone(), &Default::default(), |_, _| {})
            .unwrap_or_else(|e| panic!("{m}x{n}x{k}: lowering the lowered text: {}", e.message));
        let (e, tol) = tirc::verify::sim_check(&c.original, &again, 3).unwrap_or_else(|e| panic!("{e}"));
        assert!(e.rel_err <= tol && e.non_finite == 0, "{m}x{n}x{k}: rel_err {:.3e}", e.rel_err);
    }
}
