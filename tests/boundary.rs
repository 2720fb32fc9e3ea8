//! Shapes no tile divides: `relax_guards` and `loop_partition` leave the
//! interior tiles without tests and the boundary tiles with as few as
//! correctness needs, and the kernels still compute the function (checked
//! on the simulator, races included).

use tirc::compile::{compile, Request};
use tirc::verify::sim_check;
use tirc_ir::printer::{print_expr, print_func};
use tirc_ir::{Expr, PrimFunc, Scope, Stmt};
use tirc_tests::{read, root};

fn lowered(
    src: &str,
    schedule: Option<&str>,
    defines: &[(&str, i64)],
    params: &[(&str, &str)],
) -> (PrimFunc, PrimFunc) {
    let req = Request {
        schedule: schedule.map(Into::into),
        defines: defines.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        params: params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        ..Request::default()
    };
    let c = compile(src, &req).unwrap_or_else(|e| panic!("{schedule:?}: {}", e[0].message));
    let (e, tol) = sim_check(&c.original, &c.first().lowered, 3).unwrap_or_else(|m| panic!("{schedule:?}: {m}"));
    assert!(e.rel_err <= tol && e.non_finite == 0, "{schedule:?}: rel_err {:.3e}", e.rel_err);
    let lowered = c.first().lowered.clone();
    (c.original, lowered)
}

/// The statement below the launches and allocations of a kernel.
fn kernel_body(f: &PrimFunc) -> &Stmt {
    let mut s = &f.body;
    loop {
        match s {
            Stmt::Launch { body, .. } | Stmt::Allocate { body, .. } => s = body,
            _ => return s,
        }
    }
}

/// Stores into buffers of `scope` under an `if`, and stores in all.
fn guarded_stores(s: &Stmt, scope: Scope) -> (usize, usize) {
    fn go(s: &Stmt, scope: Scope, under_if: bool, out: &mut (usize, usize)) {
        match s {
            Stmt::Store { buffer, .. } if buffer.scope() == scope => {
                out.1 += 1;
                out.0 += under_if as usize;
            }
            Stmt::If { then, orelse, .. } => {
                go(then, scope, true, out);
                if let Some(e) = orelse {
                    go(e, scope, true, out);
                }
            }
            _ => s.for_each_child(|c| go(c, scope, under_if, out)),
        }
    }
    let mut out = (0, 0);
    go(s, scope, false, &mut out);
    out
}

fn uses_block_index_only(cond: &Expr) -> bool {
    let mut ok = true;
    cond.walk(&mut |e| {
        if let Expr::Var(v) = e {
            ok &= v.name().starts_with("blockIdx");
        }
    });
    ok
}

#[test]
fn interior_tiles_of_a_pipelined_matmul_test_nothing_in_the_compute_loop() {
    let src = read(&root().join("ir-examples/matmul.tir"));
    let params = [("BM", "32"), ("BN", "32"), ("BK", "16")];
    let (_, f) = lowered(&src, Some("step6_async"), &[("M", 100), ("N", 70), ("K", 50)], &params);
    let Stmt::If { cond, then, orelse: Some(boundary) } = kernel_body(&f) else {
        panic!("expected one branch on the block index at the top of the kernel:\n{}", print_func(&f))
    };
    assert!(uses_block_index_only(cond), "the branch tests more than the block index:{}", print_expr(cond));
    // The interior updates its accumulator with no test at all; only the
    // last k-tile's bound stays in the boundary tiles.
    let (guarded, all) = guarded_stores(then, Scope::Local);
    assert!(all > 0);
    let (_, boundary_all) = guarded_stores(boundary, Scope::Local);
    assert!(boundary_all > 0);
    let text = print_func(&f);
    assert!(guarded < all, "every accumulator update of the interior is still guarded:\n{text}");
}

#[test]
fn a_guard_whose_element_is_read_out_unguarded_stays() {
    // Some elements of `L` are not written, and the read-out is guarded by
    // a select, which the pass does not take as a guard: to it, every
    // element is read out, so the guard must stay.
    let src = r#"
@T.prim_func
def f(A: T.Buffer((64, 8), "float32"), B: T.Buffer((64, 8), "float32")):
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            with T.block("outer"):
                L = T.alloc_buffer((8,), scope="local")
                for i in range(8):
                    with T.block("init"):
                        T.where(tx * 8 + i < 200)
                        L[i] = A[bx * 32 + tx, i] * T.float32(2)
                for i in range(8):
                    with T.block("out"):
                        B[bx * 32 + tx, i] = T.if_then_else(tx * 8 + i < 200, L[i], T.float32(1))
"#;
    let (_, f) = lowered(src, None, &[], &[]);
    let (guarded, all) = guarded_stores(kernel_body(&f), Scope::Local);
    assert_eq!((guarded, all), (1, 1), "the guard of L was dropped:\n{}", print_func(&f));
}

#[test]
fn a_padded_stencil_is_split_where_its_padding_test_is_decided() {
    // The read `A[i - 1]` is padded at `i == 0` only: the loop over `i`
    // runs its first iteration apart, the rest with no test, and in each
    // part the test is decided.
    let src = r#"
@T.prim_func
def f(A: T.Buffer((4, 100), "float32"), B: T.Buffer((4, 100), "float32")):
    for r in T.thread_binding(4, thread="threadIdx.x"):
        for i in range(100):
            with T.block("B"):
                vr, vi = T.axis.remap("SS", [r, i])
                B[vr, vi] = T.if_then_else(vi >= 1, A[vr, vi - 1], T.float32(0)) + A[vr, vi]
"#;
    let (_, f) = lowered(src, None, &[], &[]);
    let mut selects = 0;
    let mut loops = Vec::new();
    f.body.walk(&mut |s| {
        if let Stmt::For(l) = s {
            loops.push((l.min.as_int(), l.extent.as_int()));
        }
        s.for_each_expr(|e| e.walk(&mut |x| selects += matches!(x, Expr::Select(..)) as usize));
    });
    assert_eq!(selects, 0, "expected the padding test decided in every iteration:\n{}", print_func(&f));
    assert_eq!(loops, vec![(Some(1), Some(99))], "expected the loop from 1 to 99:\n{}", print_func(&f));
}

/// Rows of an odd length are never 16-byte aligned: the copies of a tile
/// into shared memory load its elements one by one but still store them as
/// one `float4`, and the asynchronous copies become these synchronous ones.
/// (Only where a guard differs from element to element, at the last tile
/// of a dimension, are the copies scalar.)
/// The zero-padded copies of `hgemm.tir`'s `PAD=1` at 4097³, 16 bytes a
/// thread: the padded rows (aligned) are stored as one `uint4` of eight
/// halves gathered from the unaligned rows of A and B. C is not padded:
/// the product stores its accumulators into C, the tiles at C's edge in
/// part (`mma_store`'s bound) where they leave the registers for C
/// (`EPI=0`), under a test of C's edge where they leave through shared
/// memory (the default). Checked on the simulator at a size the tiles do
/// not divide.
#[test]
fn padded_copies_keep_vector_stores_at_unaligned_rows() {
    let src = read(&root().join("ir-examples/hgemm.tir"));
    let req = |n: i64, epi: &str| Request {
        schedule: Some("wgmma".into()),
        defines: vec![("M".into(), n), ("N".into(), n), ("K".into(), n)],
        params: vec![("PAD".into(), "1".into()), ("EPI".into(), epi.into())],
        ..Request::default()
    };
    let c = compile(&src, &req(4097, "0")).unwrap_or_else(|d| panic!("{}", d[0].message));
    let cuda: Vec<&str> = c.kernels.iter().map(|k| k.cuda.source.as_str()).collect();
    assert_eq!(cuda.len(), 3, "A's copy, B's copy, the product");
    for (k, pad) in [(0, "A_pad"), (1, "B_pad")] {
        assert!(
            cuda[k].contains("half tirc_v[8] = {") && cuda[k].contains(&format!("*(uint4*)({pad} + ")),
            "{pad}: eight halves gathered, one uint4 store:\n{}",
            cuda[k]
        );
    }
    let product = cuda[2];
    assert!(
        product.contains("tirc_mma_store_bounded(C + ") && !product.contains("float* __restrict__ C_pad"),
        "C stored in place, in part at the edge:\n{product}"
    );
    let staged = compile(&src, &req(4097, "32")).unwrap_or_else(|d| panic!("{}", d[0].message));
    let product = staged.kernels[2].cuda.source.as_str();
    assert!(
        product.contains("tirc_mma_store(C_pad_shared + ")
            && product.contains(" < 4097) {\n")
            && product.contains("] = C_pad_shared["),
        "C through shared memory, stored where it falls inside C:\n{product}"
    );
    for epi in ["0", "32"] {
        let small = compile(&src, &req(67, epi)).unwrap_or_else(|d| panic!("{}", d[0].message));
        let kernels: Vec<_> = small.kernels.iter().map(|k| k.lowered.clone()).collect();
        let (e, tol) = tirc::verify::sim_check_kernels(&small.original, &kernels, &small.intermediates, 2)
            .unwrap_or_else(|m| panic!("{m}"));
        assert!(e.rel_err <= tol && e.non_finite == 0, "rel_err {:.3e}", e.rel_err);
    }
}

#[test]
fn copies_from_unaligned_rows_keep_vector_stores_to_shared_memory() {
    let src = read(&root().join("ir-examples/matmul.tir"));
    for (schedule, params) in [("step6", vec![]), ("step6_async", vec![("STAGES", "2")])] {
        let req = Request {
            schedule: Some(schedule.into()),
            defines: vec![("M".into(), 129), ("N".into(), 131), ("K".into(), 67)],
            params: params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            ..Request::default()
        };
        let c = compile(&src, &req).unwrap_or_else(|d| panic!("{schedule}: {}", d[0].message));
        let cuda = &c.kernels[0].cuda.source;
        let gathered = |tile: &str| {
            cuda.lines().filter(|l| l.contains(&format!("(float4*)({tile} + ")) && l.contains("make_float4(")).count()
        };
        let (a, b) = (gathered("A_shared"), gathered("B_shared"));
        let scalar = cuda.matches("tirc_cp_async<4>").count();
        assert!(a > 0 && b > 0, "{schedule}: copies of A {a}, of B {b} gathered into float4");
        assert!(scalar < a + b, "{schedule}: {scalar} scalar cp.async against {} gathered copies", a + b);
    }
}

#[test]
fn tiles_are_zero_filled_past_a_run_time_reduction_so_the_multiply_adds_test_nothing() {
    // k known only at run time: the last k-tile may be partial. Its copies
    // fill zeros past k (a `cp.async` with a source size of 0, or a
    // select), and no multiply-add tests k, in any branch of the kernel.
    let src = read(&root().join("ir-examples/linear_dynamic.tir"));
    for (schedule, params, fill) in [
        ("step6_async", vec![("STAGES", "2")], "tirc_cp_async_zfill<"),
        ("step6_async", vec![("STAGES", "4")], "tirc_cp_async_zfill<"),
        ("step6", vec![], ": make_float4(0.0f, 0.0f, 0.0f, 0.0f))"),
    ] {
        let req = Request {
            schedule: Some(schedule.into()),
            params: params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            ..Request::default()
        };
        let c = compile(&src, &req).unwrap_or_else(|d| panic!("{schedule}: {}", d[0].message));
        let cuda = &c.first().cuda.source;
        assert!(cuda.contains(fill), "{schedule} {params:?}: no `{fill}` in\n{cuda}");
        let mut updates = 0;
        c.first().lowered.body.walk(&mut |st| {
            if let Stmt::If { cond, then, .. } = st {
                if let Stmt::Store { buffer, .. } = &**then {
                    if buffer.scope() == Scope::Local {
                        let mut tests_k = false;
                        cond.walk(&mut |e| tests_k |= matches!(e, Expr::Var(v) if v.name() == "k"));
                        assert!(!tests_k, "{schedule}: an update tests k: if {}", print_expr(cond));
                    }
                }
            }
            if let Stmt::Store { buffer, value, .. } = st {
                updates += (buffer.scope() == Scope::Local && print_expr(value).contains("A_shared")) as usize;
            }
        });
        assert!(updates > 0, "{schedule}: no multiply-add found");
        for (m, n, k) in [(40, 72, 36), (65, 9, 1), (70, 68, 97)] {
            let defines = vec![("m".to_string(), m), ("n".to_string(), n), ("k".to_string(), k)];
            let b = c.clone().bind_sizes(&defines).unwrap_or_else(|d| panic!("{}", d.message));
            let (e, tol) = sim_check(&b.original, &b.first().lowered, 5).unwrap_or_else(|x| panic!("{x}"));
            assert!(e.rel_err <= tol && e.non_finite == 0, "{schedule} m={m} n={n} k={k}: {:.3e}", e.rel_err);
        }
    }
}

#[test]
fn a_vector_store_of_a_select_keeps_its_condition() {
    let src = read(&root().join("tests/data/nvrtc/vector_select_broadcast.tir"));
    let c = compile(&src, &Request::default()).unwrap_or_else(|d| panic!("{}", d[0].message));
    let cuda = &c.first().cuda.source;
    let store =
        cuda.lines().find(|l| l.contains("*(float4*)(C + ")).unwrap_or_else(|| panic!("no vector store:\n{cuda}"));
    assert_eq!(store.matches("< 10 ?").count(), 4, "the select's condition in every lane: {store}");
    let (e, tol) = sim_check(&c.original, &c.first().lowered, 3).unwrap_or_else(|m| panic!("{m}"));
    assert!(e.rel_err <= tol && e.non_finite == 0, "rel_err {:.3e}", e.rel_err);
}

/// `align_input_rows`: an input whose rows miss the alignment its loads
/// want, read many times, is copied once into aligned rows (a kernel of its
/// own, first), and the kernels read the copy; where the loads run too few
/// times, or their runs start anywhere in a line whatever the rows, or the
/// user says `never`, nothing is copied.
#[test]
fn misaligned_inputs_read_many_times_are_copied_into_aligned_rows() {
    use tirc::compile::AlignMode;
    let matmul = read(&root().join("ir-examples/matmul.tir"));
    let conv = read(&root().join("ir-examples/conv2d.tir"));
    let compiled = |src: &str, schedule: &str, sizes: &[(&str, i64)], mode: AlignMode| {
        let req = Request {
            schedule: Some(schedule.into()),
            defines: sizes.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            aligned_copies: mode,
            ..Request::default()
        };
        compile(src, &req).unwrap_or_else(|d| panic!("{schedule}: {}", d[0].message))
    };
    let cube = |n: i64| [("M", n), ("N", n), ("K", n)];
    let copied = |c: &tirc::compile::Compiled| -> Vec<String> {
        c.intermediates.iter().map(|b| b.name().to_string()).filter(|n| n.ends_with("_aligned")).collect()
    };
    // step1 reads B along the threads of a warp, rows of 4097 floats: B is
    // copied into rows of 4128 (a multiple of 32), and the product reads
    // the copy with that stride.
    let c = compiled(&matmul, "step1", &cube(4097), AlignMode::Auto);
    assert_eq!(copied(&c), ["B_aligned"], "{:?}", c.aligned);
    assert_eq!(c.kernels.len(), 2);
    assert!(c.aligned[0].contains("`B` [4097, 4097] copied to `B_aligned` [4097, 4128]"), "{}", c.aligned[0]);
    let product = print_func(&c.kernels[1].lowered);
    assert!(product.contains("B_aligned[k * 4128 + ") && !product.contains(" B["), "{product}");
    // step6_async copies tiles of A and B by 16-byte vectors: both copied
    // at 8191³; at 2000³ the rows (8000 bytes) are 16-byte aligned already.
    assert_eq!(copied(&compiled(&matmul, "step6_async", &cube(8191), AlignMode::Auto)), ["A_aligned", "B_aligned"]);
    assert!(copied(&compiled(&matmul, "step6_async", &cube(2000), AlignMode::Auto)).is_empty());
    // At 1000×1100×999 the tiles' copies of A run 17 million times: a copy
    // of A would cost more than it saves (measured: step4 0.098 → 0.106 ms).
    let small = [("M", 1000), ("N", 1100), ("K", 999)];
    assert!(copied(&compiled(&matmul, "step4", &small, AlignMode::Auto)).is_empty());
    // conv2d's `direct` reads X[.., y + r, x + s]: each run starts s
    // elements into a row, so aligned rows would not align the runs.
    assert!(copied(&compiled(&conv, "direct", &[], AlignMode::Auto)).is_empty());
    // `never` leaves the function alone, `always` copies wherever a load
    // misses its alignment.
    let never = compiled(&matmul, "step1", &cube(4097), AlignMode::Never);
    assert!(copied(&never).is_empty() && never.kernels.len() == 1 && never.aligned.is_empty());
    assert_eq!(copied(&compiled(&matmul, "step4", &small, AlignMode::Always)), ["A_aligned"]);
    // ... but not an input whose reader is a copy into global memory
    // already: step6_padded's pad copies read A and B once each (the
    // product reads the padded copies, whose rows are aligned).
    let padded = compiled(&matmul, "step6_padded", &cube(999), AlignMode::Always);
    assert!(copied(&padded).is_empty(), "{:?}", padded.aligned);
}

/// The copies compute what the function computes: each matmul schedule
/// that reads an input along a warp or a vector, at sizes no tile divides,
/// with every misaligned input copied (`always`), checked on the simulator,
/// races included. The copy's padding is zero, so a reader past a row's end
/// (a TMA box, a zero-filled tile) reads what it read before.
#[test]
fn aligned_copies_keep_the_result() {
    use tirc::compile::AlignMode;
    let src = read(&root().join("ir-examples/matmul.tir"));
    for (schedule, params) in [
        ("step1", vec![("TX", "32")]),
        ("step4", vec![]),
        ("step5", vec![]),
        ("step6", vec![]),
        ("step6_async", vec![("STAGES", "2")]),
    ] {
        let req = Request {
            schedule: Some(schedule.into()),
            defines: vec![("M".into(), 67), ("N".into(), 69), ("K".into(), 35)],
            params: params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            aligned_copies: AlignMode::Always,
            ..Request::default()
        };
        let c = compile(&src, &req).unwrap_or_else(|d| panic!("{schedule}: {}", d[0].message));
        assert!(!c.aligned.is_empty(), "{schedule}: nothing copied");
        let kernels: Vec<_> = c.kernels.iter().map(|k| k.lowered.clone()).collect();
        let (e, tol) = tirc::verify::sim_check_kernels(&c.original, &kernels, &c.intermediates, 5)
            .unwrap_or_else(|m| panic!("{schedule}: {m}"));
        assert!(e.rel_err <= tol && e.non_finite == 0, "{schedule}: rel_err {:.3e}", e.rel_err);
    }
}

/// What the copy looks like: a kernel of its own that pads each row with
/// zeros, and the product reading the copy.
#[test]
fn an_aligned_copy_as_lowered() {
    let src = read(&root().join("ir-examples/matmul.tir"));
    let req = Request {
        schedule: Some("step1".into()),
        defines: vec![("M".into(), 37), ("N".into(), 41), ("K".into(), 35)],
        params: vec![("TX".into(), "32".into())],
        aligned_copies: tirc::compile::AlignMode::Always,
        ..Request::default()
    };
    let c = compile(&src, &req).unwrap_or_else(|d| panic!("{}", d[0].message));
    assert_eq!(c.kernels.len(), 2, "{:?}", c.aligned);
    insta::assert_snapshot!(format!("# {}\n{}", c.aligned.join("\n# "), c.lowered_text()));
}

/// A tile narrower than its thread tile (N = 31 < BN = 32, so the shared
/// tile of B is compacted to rows of 31): the multiply-adds of the last
/// column stay guarded, since unguarded they would read the first element
/// of the next pipeline stage, which a copy in flight writes (a race the
/// simulator reported; each variable of `bx * 32 + tx * 4 + j < 31` alone
/// could reach it, their sum cannot).
#[test]
fn a_compacted_tile_s_last_column_keeps_its_guard() {
    let src = read(&root().join("ir-examples/matmul.tir"));
    for n in [31, 30] {
        let params = [("BM", "32"), ("BN", "32"), ("BK", "16")];
        let (_, lowered) = lowered(&src, Some("step6_async"), &[("M", 32), ("N", n), ("K", 32)], &params);
        let text = print_func(&lowered);
        assert!(text.contains("if blockIdx_x * 32 + threadIdx_x * 4 + j_1_1"), "N = {n}: the guard went:\n{text}");
    }
}

/// The pass's limits: rows shorter than a line's worth of threads, names
/// the user's scalars hold, and kernels whose tiles TMA copies.
#[test]
fn aligned_copies_leave_short_rows_taken_names_and_tma_alone() {
    use tirc::compile::AlignMode;
    let compiled =
        |src: &str, func: Option<&str>, schedule: Option<&str>, defines: &[(&str, i64)], params: &[(&str, &str)]| {
            let req = Request {
                schedule: schedule.map(Into::into),
                func: func.map(Into::into),
                defines: defines.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
                params: params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
                aligned_copies: AlignMode::Always,
                ..Request::default()
            };
            compile(src, &req).unwrap_or_else(|d| panic!("{}", d[0].message))
        };
    // Three threads along rows of three floats: no line to align.
    let short = "@T.prim_func
def f(X: T.Buffer((64, 3), \"float32\"), Y: T.Buffer((64, 3), \"float32\")):
    for by in T.thread_binding(2, thread=\"blockIdx.x\"):
        for ty in T.thread_binding(32, thread=\"threadIdx.y\"):
            for tx in T.thread_binding(3, thread=\"threadIdx.x\"):
                with T.block(\"Y\"):
                    vi = T.axis.spatial(64, by * 32 + ty)
                    vj = T.axis.spatial(3, tx)
                    Y[vi, vj] = X[vi, vj] * T.float32(2.0)
";
    assert!(compiled(short, Some("f"), None, &[], &[]).aligned.is_empty());
    // A scalar named like the copy keeps its name; the copy takes another.
    let taken = "@T.prim_func
def f(A: T.Buffer((8, 33), \"float32\"), B: T.Buffer((8, 33), \"float32\"), A_aligned: T.float32):
    for i in T.thread_binding(8, thread=\"blockIdx.x\"):
        for j in T.thread_binding(33, thread=\"threadIdx.x\"):
            with T.block(\"B\"):
                vi, vj = T.axis.remap(\"SS\", [i, j])
                B[vi, vj] = A[vi, vj] * A_aligned
";
    let c = compiled(taken, Some("f"), None, &[], &[]);
    assert!(c.aligned.len() == 1 && c.aligned[0].contains("`A_aligned_1`"), "{:?}", c.aligned);
    assert!(c.original.scalars.iter().any(|v| v.name() == "A_aligned"));
    // step6_async with WS=1 copies its tiles by TMA: left alone, so that
    // its own diagnostic (rows TMA cannot copy) is the one the user sees.
    let matmul = read(&root().join("ir-examples/matmul.tir"));
    let req = Request {
        schedule: Some("step6_async".into()),
        defines: vec![("M".into(), 8191), ("N".into(), 8191), ("K".into(), 8191)],
        params: vec![("WS".into(), "1".into())],
        aligned_copies: AlignMode::Auto,
        ..Request::default()
    };
    let e = compile(&matmul, &req).err().map(|d| d[0].message.clone()).unwrap_or_default();
    assert!(!e.contains("_aligned"), "{e}");
}

/// `reverse_compute_inline` of a consumer that reads a box of its producer
/// whose extents are run-time sizes: `m` rows of a buffer of `m + 3`, and
/// `pad_einsum`'s copy back of `m × n` from a `C_pad` of `(m + 7) // 8 * 8`
/// rows; the sizes prove each fits, and the producer keeps `v0 < m`. Run
/// at sizes the tiles do not divide.
#[test]
fn a_box_of_run_time_sizes_inlines_into_its_producer() {
    let src = r#"
@T.prim_func
def plus(a: T.handle, c: T.handle):
    m = T.int32()
    A = T.match_buffer(a, (m + 3, 8), "float32")
    C = T.match_buffer(c, (m, 8), "float32")
    B = T.alloc_buffer((m + 3, 8))
    for i, j in T.grid(m + 3, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(m, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)

@tirc.schedule("plus")
def inlined(sch):
    sch.reverse_compute_inline(sch.get_block("C"))

@T.prim_func
def matmul(a: T.handle, b: T.handle, c: T.handle):
    m, n = T.int32(), T.int32()
    A = T.match_buffer(a, (m, 16), "float32")
    B = T.match_buffer(b, (16, n), "float32")
    C = T.match_buffer(c, (m, n), "float32")
    for i, j, k in T.grid(m, n, 16):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

@tirc.schedule("matmul")
def padded_in_place(sch):
    c = sch.get_block("C")
    sch.pad_einsum(c, [8, 8, 1])
    local = sch.cache_write(c, 0, "local")
    sch.reverse_compute_inline(sch.get_block("C_pad"))
    sch.compute_inline(sch.get_block("A_pad"))
    sch.compute_inline(sch.get_block("B_pad"))
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, factors=[None, 8])
    j0, j1 = sch.split(j, factors=[None, 8])
    sch.reorder(i0, j0, i1, j1, k)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    sch.bind(i1, "threadIdx.y")
    sch.bind(j1, "threadIdx.x")
    sch.reverse_compute_at(local, j1)
"#;
    for (schedule, defines) in [("inlined", vec![("m", 7)]), ("padded_in_place", vec![("m", 13), ("n", 7)])] {
        let req = Request { schedule: Some(schedule.into()), ..Request::default() };
        let c = compile(src, &req).unwrap_or_else(|d| panic!("{schedule}: {}", d[0].message));
        let text = print_func(&c.scheduled);
        assert!(text.contains("T.where(") && text.contains(" < m"), "{schedule}: the producer keeps `< m`:\n{text}");
        let sizes: Vec<(String, i64)> = defines.iter().map(|(n, v)| (n.to_string(), *v)).collect();
        let b = c.bind_sizes(&sizes).unwrap_or_else(|d| panic!("{schedule}: {}", d.message));
        let kernels: Vec<_> = b.kernels.iter().map(|k| k.lowered.clone()).collect();
        let (e, tol) = tirc::verify::sim_check_kernels(&b.original, &kernels, &b.intermediates, 4)
            .unwrap_or_else(|m| panic!("{schedule}: {m}"));
        assert!(e.rel_err <= tol && e.non_finite == 0, "{schedule}: rel_err {:.3e}", e.rel_err);
    }
}

const COPY_2D: &str = r#"
M = 50000
N = 50000

@T.prim_func
def copy(A: T.Buffer((M, N), "float32"), C: T.Buffer((M, N), "float32")):
    for i, j in T.grid(M, N):
        with T.block("c"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj]

@tirc.schedule("copy")
def s(sch):
    i, j = sch.get_loops(sch.get_block("c"))
    j0, j1 = sch.split(j, factors=[None, 256])
    sch.bind(i, "blockIdx.x")
    sch.bind(j1, "threadIdx.x")
"#;

/// A buffer of more elements than int32 counts (50000², whose flattened
/// shape stays the product `50000 * 50000`, unfolded in int32) is indexed
/// in 64 bits: the thread indices and loop variables are `long long`, so
/// that `blockIdx.x * 50000` cannot wrap. (Found by a helper: the kernel
/// indexed it in `int`, and rows past 42949 wrapped negative.)
#[test]
fn a_buffer_past_int32_is_indexed_in_64_bits() {
    let req = Request { schedule: Some("s".into()), ..Request::default() };
    let c = compile(COPY_2D, &req).unwrap_or_else(|e| panic!("{}", e[0].message));
    let cuda = &c.first().cuda.source;
    assert!(cuda.contains("((long long)(blockIdx.x)) * 50000"), "{cuda}");
    assert!(cuda.contains("for (long long j_0"), "{cuda}");
    assert!(!cuda.contains("(int)(blockIdx.x)"), "{cuda}");
}

/// `relax_edge_guards` clamps a load past the edge into its buffer; where
/// the unclamped index may pass int32 before the clamp (rows of a tile past
/// the last row of a buffer of nearly 2^31 elements, or run-time sizes) it
/// is computed and clamped in 64 bits. Where its bound fits int32 it stays
/// int. (Found by a helper: at M = 46341, K = 46340 the last tile's rows
/// wrapped negative before the `min`, which kept them.)
#[test]
fn a_clamp_that_may_leave_int32_is_computed_in_64_bits() {
    let src = read(&root().join("ir-examples/matmul.tir"));
    let cuda = |m: i64, k: i64| {
        let req = Request {
            schedule: Some("step2".into()),
            defines: vec![("M".into(), m), ("N".into(), 32), ("K".into(), k)],
            ..Request::default()
        };
        let c = compile(&src, &req).unwrap_or_else(|e| panic!("{}", e[0].message));
        c.first().cuda.source.clone()
    };
    let near = cuda(46341, 46340);
    assert!(near.contains("A[((int)min(((long long)"), "{near}");
    assert!(near.contains("2147441939LL))]"), "{near}");
    let small = cuda(1000, 999);
    assert!(small.contains("A[min(((int)(blockIdx.x)) * 31968"), "{small}");
    assert!(!small.contains("long long)"), "{small}");
    let dynamic = read(&root().join("ir-examples/matmul_dynamic.tir"));
    let req = Request { schedule: Some("step2".into()), ..Request::default() };
    let c = compile(&dynamic, &req).unwrap_or_else(|e| panic!("{}", e[0].message));
    assert!(c.first().cuda.source.contains("((long long)m) * 4096LL - 1LL))]"), "{}", c.first().cuda.source);
}

/// `tirc build`'s launcher checks what `tirc run` checks when it binds
/// run-time sizes: each step of a loop or launch extent of the sizes within
/// int32, in which the kernel computes it (`(n * m + 95) / 96` at n * m
/// near 2^31: the launcher admitted it, and the guard `bx * 96 + tx < n *
/// m` wrapped negative in the last block).
#[test]
fn the_launcher_checks_extents_of_run_time_sizes_within_int32() {
    let src = r#"
@T.prim_func
def copy2d(a: T.handle, b: T.handle):
    m = T.int32()
    n = T.int32()
    A = T.match_buffer(a, (n, m), "float32")
    B = T.match_buffer(b, (n, m), "float32")
    for i, j in T.grid(n, m):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj]

@tirc.schedule("copy2d")
def s(sch):
    i, j = sch.get_loops(sch.get_block("B"))
    b, t = sch.split(sch.fuse(i, j), factors=[None, 96])
    sch.bind(b, "blockIdx.x")
    sch.bind(t, "threadIdx.x")
"#;
    let req = Request { schedule: Some("s".into()), ..Request::default() };
    let c = compile(src, &req).unwrap_or_else(|e| panic!("{}", e[0].message));
    let o = tirc::export::Options { name: "copy2d", arch: "sm_90", source_file: "copy2d.tir" };
    let b = tirc::export::build(&c, &req, &o).unwrap_or_else(|e| panic!("{e}"));
    let (_, cu) = b.files.iter().find(|(n, _)| n.ends_with(".cu")).expect("a .cu file");
    let cu = String::from_utf8_lossy(cu);
    assert!(cu.contains("(n * m + 95) > 2147483647LL"), "{cu}");
    assert!(cu.contains("const long long m = tirc_size_m;"), "{cu}");
}

/// The launcher checks, when it is called, what `tirc run` checks when it
/// binds the sizes: every access inside its buffer. `range(n)` over
/// buffers of 64 elements is refused at n = 100 (it would write past `B`);
/// an access whose dimension is itself a size (`C[vi, vj]` of `(m, n)`)
/// is checked as it is (always true); a constant access is not repeated.
#[test]
fn the_launcher_checks_accesses_of_run_time_sizes_inside_their_buffers() {
    let src = r#"
@T.prim_func
def f(a: T.handle, b: T.handle, n: T.int32):
    A = T.match_buffer(a, (64,), "float32")
    B = T.match_buffer(b, (64,), "float32")
    for i in range(n):
        with T.block("B"):
            vi = T.axis.spatial(n, i)
            B[vi] = A[vi + 3 - 3] * T.float32(2) + A[0]

@tirc.schedule("f")
def s(sch):
    (i,) = sch.get_loops(sch.get_block("B"))
    b, t = sch.split(i, factors=[None, 32])
    sch.bind(b, "blockIdx.x")
    sch.bind(t, "threadIdx.x")
"#;
    let req = Request { schedule: Some("s".into()), ..Request::default() };
    let c = compile(src, &req).unwrap_or_else(|e| panic!("{}", e[0].message));
    let o = tirc::export::Options { name: "f", arch: "sm_90", source_file: "f.tir" };
    let b = tirc::export::build(&c, &req, &o).unwrap_or_else(|e| panic!("{e}"));
    let (_, cu) = b.files.iter().find(|(n, _)| n.ends_with(".cu")).expect("a .cu file");
    let cu = String::from_utf8_lossy(cu);
    // One condition for `B[vi]` and `A[vi + 3 - 3]` (the same bounds).
    assert!(cu.contains("(((long long)(n - 1))) >= (64) /* B[vi] */"), "{cu}");
    assert_eq!(cu.matches(">= (64)").count(), 1, "{cu}");
    assert!(!cu.contains("/* A[0] */"), "{cu}");
    // The same function at n = 100 is refused by `run` (`bind_sizes`).
    let err = c.clone().bind_sizes(&[("n".into(), 100)]).err().expect("n = 100 refused");
    assert!(err.message.contains("outside its extent 64"), "{}", err.message);
    assert!(c.bind_sizes(&[("n".into(), 64)]).is_ok());
}

/// The two branches of a kernel `loop_partition` split (the interior tile
/// and the edge) never run in one block together: their shared tiles share
/// the dynamic array, which holds the larger branch's, not the sum (a
/// helper found a kernel asking for 307296 bytes, past the H100's 232448,
/// where 153648 do). Where the branches' tiles would be static arrays in
/// two scopes, which the compiler lays out one after the other, the sum
/// decides whether they go dynamic.
#[test]
fn the_branches_of_a_partitioned_kernel_share_their_shared_memory() {
    let src = r#"
N = 50000

@T.prim_func
def conv1d(A: T.Buffer((N + 4,), "float32"), W: T.Buffer((5,), "float32"), B: T.Buffer((N,), "float32")):
    for i, r in T.grid(N, 5):
        with T.block("B"):
            vi, vr = T.axis.remap("SR", [i, r])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi + vr] * W[vr]

@tirc.schedule("conv1d")
def s(sch, E=30):
    blk = sch.get_block("B")
    i, r = sch.get_loops(blk)
    bo, t, e = sch.split(i, factors=[None, 256, E])
    sch.bind(bo, "blockIdx.x")
    sch.bind(t, "threadIdx.x")
    for index in [0, 1]:
        tile = sch.cache_read(blk, index, "shared")
        sch.compute_at(tile, bo)
        l, = sch.get_loops(tile)[-1:]
        _, tx = sch.split(l, factors=[None, 256])
        sch.bind(tx, "threadIdx.x")
"#;
    // E = 150: a tile of 38404 floats and one of 5, in each branch.
    let c = compile(
        src,
        &Request { schedule: Some("s".into()), params: vec![("E".into(), "150".into())], ..Request::default() },
    )
    .unwrap_or_else(|e| panic!("{}", e[0].message));
    let k = &c.kernels[0].cuda;
    assert!(k.source.contains("} else {"), "not partitioned:\n{}", k.source);
    assert_eq!(k.dynamic_shared_bytes, 38404 * 4 + 32, "{}", k.source);
    assert_eq!(k.source.matches("reinterpret_cast<float*>(tirc_dyn_smem + 0)").count(), 2, "{}", k.source);
    // E = 30: 7684 floats a branch, 61 KB in two static scopes: dynamic,
    // 30 KB.
    let c = compile(src, &Request { schedule: Some("s".into()), ..Request::default() })
        .unwrap_or_else(|e| panic!("{}", e[0].message));
    let k = &c.kernels[0].cuda;
    assert_eq!(k.dynamic_shared_bytes, 7684 * 4 + 32, "{}", k.source);
    assert!(!k.source.contains("__shared__ __align__(16) float A_shared"), "{}", k.source);
}
