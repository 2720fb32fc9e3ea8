//! The tensor-core schedules of `ir-examples/hgemm.tir` at sizes their
//! default test does not reach, on the simulator: sizes no tile divides
//! (`PAD=1`: the product on zero-padded copies of A and B, storing C's
//! edge tiles in part: three kernels; four for `wmma`, whose store is
//! whole tiles, through a padded C), sizes only
//! 16 divides, and the transposed-B form, each checked against the float64
//! reference; tf32's rounding, and float32 split into tf32 parts.

use tirc::compile::{compile, Request};
use tirc_exec::data::HostData;
use tirc_exec::sim::{run, SimOptions};
use tirc_tests::{read, root};

fn check(schedule: &str, sizes: [i64; 3], params: &[(&str, &str)], kernels: usize) {
    let src = read(&root().join("ir-examples/hgemm.tir"));
    let req = Request {
        schedule: Some(schedule.into()),
        defines: ["M", "N", "K"].iter().zip(sizes).map(|(n, v)| (n.to_string(), v)).collect(),
        params: params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        ..Request::default()
    };
    let c = compile(&src, &req).unwrap_or_else(|d| panic!("{schedule}: {d:?}"));
    assert_eq!(c.kernels.len(), kernels, "{schedule}: kernels");
    let lowered: Vec<_> = c.kernels.iter().map(|k| k.lowered.clone()).collect();
    let (e, tol) = tirc::verify::sim_check_kernels(&c.original, &lowered, &c.intermediates, 3)
        .unwrap_or_else(|m| panic!("{schedule} at {sizes:?}: {m}"));
    assert!(e.rel_err <= tol && e.non_finite == 0, "{schedule} at {sizes:?}: rel_err {:.3e}", e.rel_err);
}

/// Runs every kernel of `c` in order on the simulator over `args` (the
/// function's parameters), its intermediates appended as poison.
fn run_kernels(c: &tirc::compile::Compiled, args: &mut Vec<HostData>) {
    for b in &c.intermediates {
        args.push(
            HostData::poisoned(b.dtype(), b.num_elements().unwrap_or(0) as usize).unwrap_or_else(|e| panic!("{e}")),
        );
    }
    for k in &c.kernels {
        run(&k.lowered, args, SimOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    }
}

const SMALL: &[(&str, &str)] = &[("BM", "64"), ("BN", "64"), ("BK", "32"), ("WM", "2"), ("WN", "2")];

#[test]
fn padded_tensor_core_tiles_handle_sizes_no_tile_divides() {
    let mut p = SMALL.to_vec();
    p.push(("PAD", "1"));
    check("wmma", [100, 90, 70], &p, 4);
    // mma.sync's accumulators are stored into C itself, the edge tiles in
    // part: no padded C, no copy out.
    check("mma", [100, 90, 70], &p, 3);
    check("mma_bf16", [70, 100, 90], &p, 3);
    check("mma_tf32", [90, 70, 100], &p, 3);
    // Sizes the tiles divide need no padding: one kernel.
    check("wmma", [128, 64, 64], &p, 1);
    // Only the operands a tile does not divide are copied: A and C here
    // (wmma), B (mma_nt).
    check("wmma", [80, 64, 128], &p, 3);
    check("mma_nt", [64, 90, 64], &p, 2);
}

/// Sizes 16 divides but the block tiles do not: whole 16x16 tiles are
/// skipped where they fall outside, no padding needed.
/// Every schedule of `hgemm.tir` runs, with its defaults, at sizes no tile
/// divides (`PAD=1` is every schedule's default; it copies nothing where
/// the tiles divide). Before, a user had to know to pass `-p PAD=1`, and
/// without it got a refusal from deep inside the schedule.
#[test]
fn every_schedule_runs_with_its_defaults_at_sizes_no_tile_divides() {
    let src = read(&root().join("ir-examples/hgemm.tir"));
    let module = tirc::compile::load(&src, &[]).unwrap_or_else(|e| panic!("{e:?}"));
    assert!(module.schedules.len() >= 11, "every schedule of the file");
    for s in &module.schedules {
        let sizes = if s.name.contains("tf32") { [37, 100, 20] } else { [100, 72, 40] };
        // The padded copies in, the product (storing C's edge tiles in
        // part), and for wmma's whole-tile stores the copy out.
        let kernels = if s.name.starts_with("wmma") { 4 } else { 3 };
        check(&s.name, sizes, &[], kernels);
    }
}

#[test]
fn tiles_of_16_handle_sizes_16_divides() {
    check("wmma", [160, 176, 80], SMALL, 1);
    check("wmma_nt", [176, 160, 48], SMALL, 1);
    check("mma", [160, 176, 80], SMALL, 1);
    check("mma_nt", [176, 160, 48], SMALL, 1);
    check("mma_tf32", [160, 176, 80], SMALL, 1);
}

/// float32 multiplied as tf32 keeps 10 bits of mantissa in each operand,
/// rounded to nearest with ties away from zero (`cvt.rna.tf32.f32`):
/// 1 + 2^-11 is halfway and becomes 1 + 2^-10 (float32 would keep it; ties
/// to even would give 1), so C = A @ B with A of it and B of ones is
/// K (1 + 2^-10) exactly.
#[test]
fn tf32_products_round_each_operand_to_nearest_ties_away() {
    let src = read(&root().join("ir-examples/hgemm.tir"));
    let n = 32;
    let req = Request {
        schedule: Some("mma_tf32".into()),
        defines: ["M", "N", "K"].iter().map(|d| (d.to_string(), n)).collect(),
        params: [("BM", "32"), ("BN", "32"), ("BK", "16"), ("WM", "2"), ("WN", "2")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Request::default()
    };
    let c = compile(&src, &req).unwrap_or_else(|d| panic!("{d:?}"));
    assert!(c.uses_tf32());
    let len = (n * n) as usize;
    let mut args = vec![
        HostData::F32(vec![1.0 + 2f32.powi(-11); len]),
        HostData::F32(vec![1.0; len]),
        HostData::F32(vec![0.0; len]),
    ];
    for k in &c.kernels {
        run(&k.lowered, &mut args, SimOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    }
    let HostData::F32(out) = &args[2] else { panic!("C is float32") };
    let want = n as f32 * (1.0 + 2f32.powi(-10));
    assert!(out.iter().all(|&x| x == want), "C[0, 0] = {} where tf32 gives {want}", out[0]);
    // Its tolerance is float16's, not float32's.
    assert!(c.tolerance() > 1e-4, "tolerance {}", c.tolerance());
}

/// float32 split into two tf32 parts (`decompose_tf32x3`, sgemm.tir's
/// `tf32x3`) keeps what one tf32 product loses: the same 1 + 2^-11 times
/// ones gives C = K (1 + 2^-11) exactly, as float32 does, through wgmma's
/// tf32 products; the check is at float32's tolerance, and cuBLAS's rival
/// is SGEMM, not its TF32 math. At sizes no tile divides too (padded
/// copies of the split operands and of C: six kernels).
#[test]
fn tf32x3_keeps_float32s_bits_through_tf32_products() {
    let src = read(&root().join("ir-examples/sgemm.tir"));
    let n = 64;
    let req = |sizes: [i64; 3]| Request {
        schedule: Some("tf32x3".into()),
        defines: ["M", "N", "K"].iter().zip(sizes).map(|(d, v)| (d.to_string(), v)).collect(),
        params: [("BM", "64"), ("BN", "64"), ("STAGES", "2")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Request::default()
    };
    let c = compile(&src, &req([n, n, n])).unwrap_or_else(|d| panic!("{d:?}"));
    assert!(!c.uses_tf32());
    assert_eq!(c.tolerance(), 1e-4);
    let len = (n * n) as usize;
    let mut args = vec![
        HostData::F32(vec![1.0 + 2f32.powi(-11); len]),
        HostData::F32(vec![1.0; len]),
        HostData::F32(vec![0.0; len]),
    ];
    run_kernels(&c, &mut args);
    let HostData::F32(out) = &args[2] else { panic!("C is float32") };
    let want = n as f32 * (1.0 + 2f32.powi(-11));
    assert!(out.iter().all(|&x| x == want), "C[0, 0] = {} where float32 gives {want}", out[0]);
    let c = compile(&src, &req([100, 72, 40])).unwrap_or_else(|d| panic!("{d:?}"));
    assert_eq!(c.kernels.len(), 6);
    let lowered: Vec<_> = c.kernels.iter().map(|k| k.lowered.clone()).collect();
    let (e, tol) = tirc::verify::sim_check_kernels(&c.original, &lowered, &c.intermediates, 3)
        .unwrap_or_else(|m| panic!("tf32x3 at 100x72x40: {m}"));
    assert!(e.rel_err <= tol && tol == 1e-4 && e.non_finite == 0, "rel_err {:.3e} (tolerance {tol})", e.rel_err);
}

#[test]
fn transposed_b_runs_on_tensor_cores() {
    check("wmma_nt", [64, 128, 96], SMALL, 1);
    check("mma_nt", [64, 128, 96], SMALL, 1);
}

/// The mma.sync path at more warps per block than the default test's and
/// deeper pipelines.
#[test]
fn mma_sync_tiles_run_with_other_block_shapes() {
    check("mma", [128, 256, 96], &[("BM", "64"), ("BN", "128"), ("WM", "1"), ("WN", "4"), ("STAGES", "3")], 1);
    check("mma_nt", [128, 128, 64], &[("BM", "128"), ("BN", "64"), ("BK", "64"), ("WM", "4"), ("WN", "1")], 1);
}

/// Nested software pipelines: the fragments of the next 16-wide step
/// loaded into registers while the current ones are multiplied
/// (`FRAG_STAGES=2` pipelines `k1` inside the pipelined `k0`), with a
/// steady state (BK = 64: four steps) and without one (BK = 32: two).
#[test]
fn fragments_pipelined_inside_the_shared_memory_pipeline() {
    for bk in ["32", "64"] {
        for stages in ["2", "3"] {
            let p = [
                ("BM", "64"),
                ("BN", "64"),
                ("BK", bk),
                ("WM", "2"),
                ("WN", "2"),
                ("STAGES", stages),
                ("FRAG_STAGES", "2"),
            ];
            check("mma", [128, 64, 256], &p, 1);
        }
    }
}

/// wgmma with 32-deep k-tiles: A's K-major rows are 64 bytes, swizzled by
/// 64 (the descriptor's 64-byte mode), B's atoms still by 128; stored
/// n × k (`_nt`), B's rows are 64 bytes too, with and without warp
/// specialization (the nt schedules swizzled by 128 at any depth, which
/// the bulk tensor copies refused).
#[test]
fn wgmma_reads_a_from_rows_of_64_bytes() {
    check("wgmma", [128, 128, 96], &[("BM", "64"), ("BN", "128"), ("BK", "32"), ("STAGES", "3")], 1);
    check("wgmma", [64, 64, 160], &[("BM", "64"), ("BN", "64"), ("BK", "32"), ("STAGES", "2")], 1);
    for s in ["wgmma_nt", "wgmma_bf16_nt"] {
        for ws in ["0", "1"] {
            check(s, [128, 128, 96], &[("BM", "64"), ("BN", "64"), ("BK", "32"), ("STAGES", "4"), ("WS", ws)], 1);
            check(s, [150, 230, 70], &[("BN", "208"), ("BK", "32"), ("PAD", "1"), ("WS", ws)], 3);
        }
    }
}

/// The warp-specialized wgmma schedules (`WS=1`, their default; the pass
/// `warp_specialize`) and the cp.async pipeline (`WS=0`) at a size the tiles
/// divide and, padded (`PAD=1`), at one they do not: there the main
/// kernel is partitioned into two branches (the tiles inside C and those
/// at its edge), each with its warp-specialized loop, which share the
/// producer. The CUDA issues the bulk tensor copies in the producer's
/// branch alone.
#[test]
fn warp_specialized_wgmma_runs_with_and_without_padding() {
    for s in ["wgmma", "wgmma_nt", "wgmma_bf16_nt"] {
        for ws in ["0", "1"] {
            let p = [("BM", "64"), ("BN", "64"), ("STAGES", "2"), ("WS", ws)];
            check(s, [128, 256, 192], &p, 1);
            let mut padded = p.to_vec();
            padded.push(("PAD", "1"));
            check(s, [300, 130, 72], &padded, 3);
        }
    }
    // B stored n × k in fewer than 32 rows (a tile 16 wide) beside the
    // default 128 rows of A: fewer elements a thread in B's copy, whose
    // tile is less than one pass of the block's threads.
    for s in ["wgmma_nt", "wgmma_bf16_nt", "wgmma_tf32_nt"] {
        check(s, [128, 16, 64], &[], 1);
        check(s, [128, 31, 64], &[("PAD", "1")], 2);
    }
    // B stored k × n is laid out in atoms of 64 columns: below 64 columns,
    // or at 100, the tile is 64 wide and B is padded to it (B copied, then
    // the product, which stores C's edge tiles in part: two kernels).
    for s in ["wgmma", "wgmma_bf16"] {
        for n in [31, 100] {
            check(s, [64, n, 64], &[("BM", "64"), ("PAD", "1")], 2);
        }
    }
    let src = read(&root().join("ir-examples/hgemm.tir"));
    let req = Request {
        schedule: Some("wgmma".into()),
        defines: vec![("M".into(), 1100), ("N".into(), 600), ("K".into(), 72)],
        params: vec![("PAD".into(), "1".into()), ("BN".into(), "256".into())],
        ..Request::default()
    };
    let c = compile(&src, &req).unwrap_or_else(|d| panic!("{d:?}"));
    let cuda = &c.kernels[2].cuda.source;
    let body = &cuda[cuda.find("extern \"C\"").unwrap_or(0)..];
    let (producer, consumers) = body.split_once("} else {\n    asm volatile(\"setmaxnreg.inc").unwrap_or((body, ""));
    assert_eq!(producer.matches("tirc_tma_load(").count(), 10, "two loops of five copies:\n{body}");
    assert_eq!(consumers.matches("tirc_tma_load(").count(), 0, "{body}");
    assert!(consumers.matches("tirc_mbar_wait(&tirc_full").count() == 2, "{body}");
    assert_eq!(c.kernels[2].cuda.tensor_maps.len(), 2, "one map for A's tiles, one for B's");
}

/// Tiles whose elements the copy's threads do not split evenly: B's tile of
/// 208 × 64 halves is 6.5 passes of the 256 threads at 8 halves each, so
/// the copy nest has a guard of its own loops alone (the split's
/// remainder). Warp specialization copies the tile whole (the guarded
/// points are past it); it refused such a copy before. 208 columns fill
/// whole waves of the H100's and H200's 132 multiprocessors at 4097
/// (33 × 20 tiles). Then the producer's copies in the CUDA.
#[test]
fn warp_specialized_copies_split_unevenly_over_the_threads() {
    for s in ["wgmma_nt", "wgmma_bf16_nt"] {
        check(s, [128, 416, 128], &[("BN", "208"), ("STAGES", "2"), ("WS", "1")], 1);
        check(s, [150, 230, 70], &[("BN", "208"), ("STAGES", "2"), ("WS", "1"), ("PAD", "1")], 3);
    }
    check("wgmma_tf32_nt", [128, 160, 64], &[("BN", "80"), ("STAGES", "2"), ("WS", "1")], 1);
    let src = read(&root().join("ir-examples/hgemm.tir"));
    let req = Request {
        schedule: Some("wgmma_nt".into()),
        defines: vec![("M".into(), 4097), ("N".into(), 4097), ("K".into(), 4097)],
        params: vec![("PAD".into(), "1".into()), ("BN".into(), "208".into())],
        ..Request::default()
    };
    let c = compile(&src, &req).unwrap_or_else(|d| panic!("{d:?}"));
    assert_eq!(c.kernels.len(), 3);
    let main = &c.kernels[2];
    // No raster groups: 8 rows of tiles do not divide the 33.
    assert_eq!(main.cuda.launch.grid[..2], [20, 33], "20 columns of tiles, 33 rows");
    let cuda = &main.cuda.source;
    assert!(cuda.contains("tirc_tma_load("), "{cuda}");
    assert!(!cuda.contains("< 13312"), "the split's guard is not in the CUDA:\n{cuda}");
}

/// `wgmma_nt` storing C through shared memory (`EPI`): the write-back is a
/// loop of its own over the warps, apart from the product's. The
/// accumulators are still one warp's tile (compact_buffers takes the two
/// loops bound to `threadIdx.y` as one index): an array of every warp's
/// tiles indexed by the warp left the registers for local memory, 5 times
/// slower at 4097³. The wgmma and the fill name the same registers (the
/// wgmma's call once took the tile's number for the registers' offset, 8
/// times too small past the first warp, which the simulator, reading the
/// IR, not the CUDA, could not see). And a tile of 208 columns leaves in chunks of 64
/// and one of 16: the copy of the last chunk keeps to its 16 columns
/// (reverse_compute_at), where it wrote 48 of the next tile's.
#[test]
fn wgmma_stores_c_through_shared_memory() {
    for ws in ["0", "1"] {
        check(
            "wgmma_nt",
            [128, 256, 128],
            &[("BM", "64"), ("BN", "128"), ("STAGES", "2"), ("EPI", "64"), ("WS", ws)],
            1,
        );
        check("wgmma_nt", [150, 230, 70], &[("BN", "208"), ("PAD", "1"), ("EPI", "64"), ("WS", ws)], 3);
    }
    let src = read(&root().join("ir-examples/hgemm.tir"));
    let compiled = |n: i64, params: &[(&str, &str)]| {
        let req = Request {
            schedule: Some("wgmma_nt".into()),
            defines: vec![("M".into(), n), ("N".into(), n), ("K".into(), n)],
            params: params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            ..Request::default()
        };
        compile(&src, &req).unwrap_or_else(|d| panic!("{d:?}"))
    };
    let c = compiled(4096, &[("EPI", "64")]);
    let cuda = &c.kernels[0].cuda.source;
    let arg = |call: &str| -> String {
        let at = cuda.find(call).unwrap_or_else(|| panic!("no {call}:\n{cuda}")) + call.len();
        cuda[at..].split(',').next().unwrap_or_default().to_string()
    };
    assert!(cuda.contains("float C_shared_warp[128];"), "one warp's accumulators:\n{cuda}");
    let wgmma = arg("tirc_wgmma_m64n256k16_f16(C_shared_warp");
    let fill = arg("tirc_mma_fill(C_shared_warp");
    assert_eq!(wgmma, " + 0");
    assert_eq!(fill, " + j_1_init_0 * 8", "the fill's registers are the wgmma's");
    // The last chunk of 16 columns of a tile of 208 copies 16, not 64.
    let c = compiled(4097, &[("EPI", "64"), ("BN", "208"), ("PAD", "1")]);
    let cuda = &c.kernels[2].cuda.source;
    assert!(cuda.contains(") % 64 + 192 <= 207)"), "{cuda}");
    // Where the product and the write-back are partitioned apart, too.
    assert!(cuda.contains("float C_pad_shared_warp[128];"), "{cuda}");
    assert!(!cuda.contains("C_pad_shared_warp + ((int)(threadIdx.y))"), "{cuda}");
}

/// `mma.sync` fed by bulk tensor copies (`-p WS=1`): the shared tiles are
/// swizzled instead of padded and ldmatrix reads them through the swizzle
/// (B stored k × n in atoms of 64 columns), and a producer warpgroup gives
/// its registers to the warps that multiply. On the simulator with and
/// without padding, each operand layout and type, A's rows of 128 and of
/// 64 bytes; then the CUDA of the defaults.
#[test]
fn warp_specialized_mma_sync_reads_swizzled_tiles() {
    for s in ["mma", "mma_nt", "mma_bf16"] {
        let p = [("BM", "64"), ("BN", "64"), ("WM", "2"), ("WN", "2"), ("STAGES", "3"), ("GROUP_M", "2"), ("WS", "1")];
        check(s, [128, 192, 192], &p, 1);
        let mut padded = p.to_vec();
        padded.push(("PAD", "1"));
        check(s, [100, 140, 70], &padded, 3);
    }
    check("mma", [128, 128, 96], &[("BM", "64"), ("BN", "64"), ("BK", "32"), ("WM", "2"), ("WN", "2"), ("WS", "1")], 1);
    // B's tile narrower than a 64-column atom: one atom of BN columns.
    for s in ["mma", "mma_bf16"] {
        check(s, [128, 96, 128], &[("BM", "64"), ("BN", "32"), ("WM", "2"), ("WN", "1"), ("WS", "1")], 1);
    }
    let src = read(&root().join("ir-examples/hgemm.tir"));
    let req = Request {
        schedule: Some("mma".into()),
        defines: ["M", "N", "K"].iter().map(|d| (d.to_string(), 512)).collect(),
        params: vec![("WS".into(), "1".into()), ("STAGES".into(), "4".into())],
        ..Request::default()
    };
    let c = compile(&src, &req).unwrap_or_else(|d| panic!("{d:?}"));
    let cuda = &c.kernels[0].cuda.source;
    for part in [
        "#define TIRC_SM90A",
        "__launch_bounds__(384, 1)",
        "setmaxnreg.dec.sync.aligned.u32 40;",
        "setmaxnreg.inc.sync.aligned.u32 232;",
        "tirc_ldmatrix_x4_swizzled<true, false, 128>(",
        "tirc_ldmatrix_x4_swizzled<false, false, 128>(",
    ] {
        assert!(cuda.contains(part), "no {part} in:\n{cuda}");
    }
    assert_eq!(c.kernels[0].cuda.tensor_maps.len(), 2, "one map for A's tiles, one for B's");
    let body = &cuda[cuda.find("extern \"C\"").unwrap_or(0)..];
    assert!(!body.contains("tirc_cp_async"), "every thread's copies are gone:\n{body}");
    assert!(body.contains("tirc_tma_load("), "{body}");
}

/// Two operands of one shape, tile and type (A and B^T of a square product
/// with square tiles) are copied each through its own tensor map: the
/// copies of B once read A's map, which the simulator, running the IR,
/// could not see (B came out as A on the GPU).
#[test]
fn operands_of_one_shape_keep_their_own_tensor_maps() {
    for (file, schedule) in [("hgemm.tir", "wgmma_nt"), ("sgemm.tir", "tf32x3"), ("hgemm.tir", "wgmma_tf32_nt")] {
        let src = read(&root().join("ir-examples").join(file));
        let req = Request {
            schedule: Some(schedule.into()),
            defines: ["M", "N", "K"].iter().map(|d| (d.to_string(), 256)).collect(),
            params: vec![("BN".into(), "128".into())],
            ..Request::default()
        };
        let c = compile(&src, &req).unwrap_or_else(|d| panic!("{schedule}: {d:?}"));
        let k = c.kernels.iter().find(|k| !k.cuda.tensor_maps.is_empty()).expect("a kernel with bulk copies");
        let args: Vec<&str> = k.cuda.params.iter().map(|(n, _)| n.as_str()).collect();
        let mut seen = Vec::new();
        for line in k.cuda.source.lines().filter(|l| l.trim_start().starts_with("tirc_tma_load(")) {
            // tirc_tma_load(X_shared + .., &tirc_tmap_N, ..)
            let dst = line.trim_start()["tirc_tma_load(".len()..].split(' ').next().unwrap_or("");
            let map: usize = line
                .split("&tirc_tmap_")
                .nth(1)
                .and_then(|r| r.split(',').next())
                .and_then(|n| n.parse().ok())
                .expect("a map");
            let source = args[k.cuda.tensor_maps[map].param];
            assert!(dst.starts_with(source), "{schedule}: {dst} is filled through the map of {source}");
            seen.push(map);
        }
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 2, "{schedule}: the copies use maps {seen:?}");
    }
}

/// Two promoted warp-specialized loops in one scope (lowered text of
/// `tf32x3` with its main loop twice) declare their promoted accumulators
/// under two names, not one twice (a C++ redefinition), and each adds its
/// own back.
#[test]
fn two_promoted_loops_keep_their_own_registers() {
    let src = read(&root().join("tests/data/tf32/two_promoted_loops.tir"));
    let req = Request {
        func: Some("sgemm_4".into()),
        target: tirc_ir::target::Target::from_arch("sm_90a").unwrap_or_else(|e| panic!("{e}")),
        ..Request::default()
    };
    let c = compile(&src, &req).unwrap_or_else(|d| panic!("{d:?}"));
    let cu = &c.kernels[0].cuda.source;
    let decls: Vec<&str> = cu.lines().filter(|l| l.trim_start().starts_with("float C_pad_warp_promoted")).collect();
    assert_eq!(decls.len(), 2, "{decls:?}");
    assert_ne!(decls[0].trim(), decls[1].trim());
    assert_eq!(cu.matches("+= C_pad_warp_promoted_1[tirc_r]").count(), 1);
}

/// A tf32 product is exact only where its own operands are tf32 values: a
/// `T.tf32_round` elsewhere in the function (a block beside the product)
/// leaves the raw tf32 wgmma at tf32's tolerance, compared with cuBLAS's
/// TF32 math.
#[test]
fn rounding_elsewhere_leaves_a_raw_tf32_product_at_its_tolerance() {
    let src = read(&root().join("tests/data/tf32/unsplit_beside_rounding.tir"));
    let req = Request {
        schedule: Some("wgmma_tf32_nt".into()),
        params: [("BM", "64"), ("BN", "64"), ("STAGES", "2")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Request::default()
    };
    let c = compile(&src, &req).unwrap_or_else(|d| panic!("{d:?}"));
    assert!(c.uses_tf32());
    assert!(c.tolerance() > 1e-4, "tolerance {}", c.tolerance());
    let lowered: Vec<_> = c.kernels.iter().map(|k| k.lowered.clone()).collect();
    let (e, tol) =
        tirc::verify::sim_check_kernels(&c.original, &lowered, &c.intermediates, 3).unwrap_or_else(|m| panic!("{m}"));
    assert!(e.rel_err <= tol && e.non_finite == 0, "rel_err {:.3e} (tolerance {tol})", e.rel_err);
}

/// A parameter holds its caller's float32 until it is written: rounding
/// part of it to tf32 does not make a tf32 product of it exact (tf32's
/// tolerance, cuBLAS's TF32 math).
#[test]
fn a_partly_rounded_parameter_is_not_tf32() {
    let src = read(&root().join("tests/data/tf32/parameter_partly_rounded.tir"));
    let req = Request {
        schedule: Some("mma_tf32".into()),
        params: [("BM", "64"), ("BN", "64"), ("WM", "2"), ("WN", "2")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Request::default()
    };
    let c = compile(&src, &req).unwrap_or_else(|d| panic!("{d:?}"));
    assert!(c.uses_tf32());
    assert!(c.tolerance() > 1e-4, "tolerance {}", c.tolerance());
}

/// A warp-specialized loop of run-time extent inside another loop releases
/// its last tile version after it (the next pass's producer waits for it).
#[test]
fn a_run_time_warp_specialized_loop_releases_its_last_version() {
    let src = read(&root().join("tests/data/tf32/nested_run_time_extent.tir"));
    let req = Request {
        target: tirc_ir::target::Target::from_arch("sm_90a").unwrap_or_else(|e| panic!("{e}")),
        ..Request::default()
    };
    let c = compile(&src, &req).unwrap_or_else(|d| panic!("{d:?}"));
    let cu = &c.kernels[0].cuda.source;
    assert!(
        cu.contains("if (nk > 0) { __syncwarp(); if (tirc_tid % 32 == 0) tirc_mbar_arrive(&tirc_empty[((nk) - 1) % "),
        "{cu}"
    );
}

/// wgmma cuts float32 operands read from shared memory to tf32 (their low
/// 13 bits dropped), where mma.sync's `cvt.rna` rounds them: 1 + 2^-11
/// times ones, 64 deep, is 64 through wgmma, as the H100 gives
/// (`scripts/exp/wgmma_tf32_rounding.sh`), and 64 (1 + 2^-10) through
/// `mma_tf32`.
#[test]
fn wgmma_cuts_float32_operands_to_tf32() {
    let src = read(&root().join("ir-examples/hgemm.tir"));
    let req = Request {
        schedule: Some("wgmma_tf32_nt".into()),
        defines: [("M", 128), ("N", 128), ("K", 64)].iter().map(|(d, v)| (d.to_string(), *v)).collect(),
        params: [("BM", "64"), ("BN", "64"), ("STAGES", "2")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Request::default()
    };
    let c = compile(&src, &req).unwrap_or_else(|d| panic!("{d:?}"));
    let mut args = vec![
        HostData::F32(vec![1.0 + 2f32.powi(-11); 128 * 64]),
        HostData::F32(vec![1.0; 128 * 64]),
        HostData::F32(vec![0.0; 128 * 128]),
    ];
    run_kernels(&c, &mut args);
    let HostData::F32(out) = &args[2] else { panic!("C is float32") };
    assert!(out.iter().all(|&x| x == 64.0), "C[0, 0] = {} where wgmma gives 64", out[0]);
}

/// The edge tiles' partial store (`T.mma_store(.., bound=[rows, cols])`)
/// prints and parses back to the same function, and the bound is what the
/// simulator keeps to: a bound of rows past the tile's origin is refused
/// nowhere, a tile wholly outside stores nothing (the 37 columns of C in
/// tiles of 64 leave the second 16-column tile of three warps empty).
#[test]
fn a_partial_store_prints_and_parses_back() {
    let src = read(&root().join("ir-examples/hgemm.tir"));
    let req = Request {
        schedule: Some("wgmma".into()),
        defines: vec![("M".into(), 100), ("N".into(), 37), ("K".into(), 72)],
        params: [("BM", "64"), ("BN", "64"), ("STAGES", "2"), ("PAD", "1"), ("EPI", "0")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Request::default()
    };
    let c = compile(&src, &req).unwrap_or_else(|d| panic!("{d:?}"));
    let product = c.kernels.last().expect("the product");
    let text = tirc_ir::printer::print_func(&product.lowered);
    assert!(text.contains("T.mma_store(C[") && text.contains("bound=["), "{text}");
    let m = tirc::compile::load(&text, &[]).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    assert!(tirc_ir::structural_eq::func_eq(&product.lowered, &m.funcs[0]), "{text}");
    assert_eq!(text, tirc_ir::printer::print_func(&m.funcs[0]));
    let lowered: Vec<_> = c.kernels.iter().map(|k| k.lowered.clone()).collect();
    let (e, tol) =
        tirc::verify::sim_check_kernels(&c.original, &lowered, &c.intermediates, 3).unwrap_or_else(|m| panic!("{m}"));
    assert!(e.rel_err <= tol && e.non_finite == 0, "rel_err {:.3e}", e.rel_err);
}

/// `wgmma` and `wgmma_bf16` lay B's tile out in atoms of 64 columns: a
/// width that is not a multiple of 64 is refused by the schedule, saying
/// so (it failed later, in an index map or a copy, not naming BN).
#[test]
fn wgmma_refuses_a_tile_width_off_its_atoms() {
    let src = read(&root().join("ir-examples/hgemm.tir"));
    for s in ["wgmma", "wgmma_bf16"] {
        let req = Request {
            schedule: Some(s.into()),
            defines: vec![("M".into(), 128), ("N".into(), 256), ("K".into(), 64)],
            params: vec![("PAD".into(), "1".into()), ("BN".into(), "80".into())],
            ..Request::default()
        };
        let Err(d) = compile(&src, &req) else { panic!("{s}: BN=80 compiled") };
        assert!(d[0].message.contains("BN must be a multiple of 64"), "{s}: {}", d[0].message);
        assert!(d[0].span.is_some(), "{s}: the message points at the schedule");
    }
}

/// wgmma's commits, waits and fences are `.sync.aligned`: all four warps
/// of a warpgroup must run each. With `EPI=0` each warp stores its own
/// accumulators, and where M cuts a warpgroup's 64 rows at a multiple of
/// 16 (208), the warps past M skip their store under a condition of the
/// warp; the waits and fences around it were written inside that
/// condition, and the kernel died of an illegal instruction on the H200
/// (a helper's find; the simulator reads the IR, where they are not). They
/// are now before and after the `if`.
#[test]
fn wgmma_waits_are_not_under_a_warps_condition() {
    let src = read(&root().join("ir-examples/hgemm.tir"));
    for s in ["wgmma", "wgmma_nt"] {
        for ws in ["0", "1"] {
            let req = Request {
                schedule: Some(s.into()),
                defines: vec![("M".into(), 208), ("N".into(), 208), ("K".into(), 208)],
                params: vec![("EPI".into(), "0".into()), ("WS".into(), ws.into())],
                ..Request::default()
            };
            let c = compile(&src, &req).unwrap_or_else(|d| panic!("{d:?}"));
            for k in &c.kernels {
                let mut depth_of_warp_if: Vec<usize> = Vec::new();
                for line in k.cuda.source.lines() {
                    let depth = line.len() - line.trim_start().len();
                    depth_of_warp_if.retain(|&d| d < depth);
                    let t = line.trim_start();
                    if t.starts_with("tirc_wgmma_commit")
                        || t.starts_with("tirc_wgmma_wait")
                        || t.starts_with("tirc_wgmma_fence")
                    {
                        assert!(
                            depth_of_warp_if.is_empty(),
                            "{s} WS={ws}: `{t}` under a warp's condition:\n{}",
                            k.cuda.source
                        );
                    }
                    if t.starts_with("if (") && t.contains("threadIdx.y") {
                        depth_of_warp_if.push(depth);
                    }
                }
            }
        }
    }
}
