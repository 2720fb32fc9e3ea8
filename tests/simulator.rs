//! The simulator on kernels written by hand, in the lowered form that
//! `tirc lower` prints: what it computes (lockstep threads, integer
//! wrapping, one branch of a select, loops whose extent differs per thread)
//! and what it reports (races, out-of-bounds accesses, divergent barriers).

use tirc::compile::load;
use tirc_exec::data::HostData;
use tirc_exec::sim::{run, SimOptions, SimStats};
use tirc_ir::PrimFunc;

fn func(src: &str) -> PrimFunc {
    let module = load(src, &[]).unwrap_or_else(|e| panic!("{e:?}"));
    module.funcs.into_iter().next().expect("a function")
}

/// Runs the function of `src` on `args`; the results are left in them.
/// It runs twice, a lone active thread on the scalar machine and on the
/// column machine, which must agree.
fn sim(src: &str, args: &mut [HostData]) -> Result<SimStats, String> {
    both_machines(&func(src), args)
}

/// Also runs it with its blocks shared by three workers, which must end as
/// the sequential run does.
fn both_machines(f: &PrimFunc, args: &mut [HostData]) -> Result<SimStats, String> {
    let mut cols = args.to_vec();
    let mut split = args.to_vec();
    let r = run(f, args, SimOptions { workers: 1, ..SimOptions::default() });
    let c = run(f, &mut cols, SimOptions { columns_only: true, workers: 1, ..SimOptions::default() });
    let p = run(f, &mut split, SimOptions { workers: 3, ..SimOptions::default() });
    assert_eq!(r, c, "{}: the scalar and column machines end differently", f.name);
    assert_eq!(r, p, "{}: the blocks shared by workers end differently", f.name);
    let bytes = |v: &[HostData]| v.iter().map(HostData::as_bytes).collect::<Vec<_>>();
    assert!(bytes(args) == bytes(&cols), "{}: the scalar and column machines compute different values", f.name);
    assert!(bytes(args) == bytes(&split), "{}: the blocks shared by workers compute different values", f.name);
    r
}

/// Every conformance program, unscheduled and lowered, computes the same
/// on both machines (their serial parts run on one thread).
#[test]
fn the_scalar_machine_agrees_with_the_columns() {
    let mut n = 0;
    for entry in std::fs::read_dir("tests/data/conformance").expect("tests/data/conformance").flatten() {
        let src = std::fs::read_to_string(entry.path()).unwrap_or_default();
        let module = load(&src, &[]).unwrap_or_else(|e| panic!("{e:?}"));
        for f in &module.funcs {
            let req = tirc::compile::Request { func: Some(f.name.clone()), ..Default::default() };
            let c = tirc::compile::compile_module(module.clone(), &req).unwrap_or_else(|e| panic!("{}", e.message));
            let c = c.bind_sizes(&tirc::tune::test_sizes(&src)).unwrap_or_else(|e| panic!("{}", e.message));
            let mut args = tirc::measure::prepare(&c.original, 7).unwrap_or_else(|e| panic!("{e}")).args;
            for b in &c.intermediates {
                let count = b.num_elements().unwrap_or(0) as usize;
                args.push(HostData::poisoned(b.dtype(), count).unwrap_or_else(|e| panic!("{e}")));
            }
            for k in &c.kernels {
                both_machines(&k.lowered, &mut args).unwrap_or_else(|e| panic!("{}: {e}", f.name));
                n += 1;
            }
        }
    }
    assert!(n > 10, "only {n} kernels");
}

fn iota(n: usize) -> HostData {
    HostData::F32((0..n).map(|i| i as f32).collect())
}

fn values(d: &HostData) -> Vec<f64> {
    d.to_f64()
}

const REVERSE: &str = r#"
@T.prim_func
def f(A: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32")):
    bx = T.launch_thread("blockIdx.x", 2)
    tx = T.launch_thread("threadIdx.x", 32)
    S = T.decl_buffer((32,), "float32", scope="shared")
    S[tx] = A[bx * 32 + tx]
    SYNC
    C[bx * 32 + tx] = S[31 - tx]
"#;

#[test]
fn threads_meet_at_barriers_and_share_memory() {
    let mut args = [iota(64), HostData::F32(vec![0.0; 64])];
    let stats = sim(&REVERSE.replace("SYNC", "T.tvm_storage_sync(\"shared\")"), &mut args).unwrap();
    let want: Vec<f64> = (0..64).map(|i| (i / 32 * 32 + 31 - i % 32) as f64).collect();
    assert_eq!(values(&args[1]), want);
    assert_eq!(stats, SimStats { blocks: 2, threads_per_block: 32, barriers: 2 });
}

#[test]
fn a_read_of_another_threads_write_without_a_barrier_is_a_race() {
    let mut args = [iota(64), HostData::F32(vec![0.0; 64])];
    let err = sim(&REVERSE.replace("SYNC", ""), &mut args).unwrap_err();
    assert_eq!(
        err,
        "race on shared memory: thread (0, 0, 0) reads S[31], which thread (31, 0, 0) wrote since the last barrier"
    );
}

#[test]
fn a_write_over_another_threads_read_without_a_barrier_is_a_race() {
    let src = r#"
@T.prim_func
def f(A: T.Buffer((32,), "float32"), C: T.Buffer((32,), "float32")):
    tx = T.launch_thread("threadIdx.x", 32)
    S = T.decl_buffer((32,), "float32", scope="shared")
    S[tx] = A[tx]
    T.tvm_storage_sync("shared")
    C[tx] = S[(tx + 1) % 32]
    S[tx] = T.float32(0)
"#;
    let mut args = [iota(32), HostData::F32(vec![0.0; 32])];
    let err = sim(src, &mut args).unwrap_err();
    assert_eq!(
        err,
        "race on shared memory: thread (0, 0, 0) writes S[0], which thread (31, 0, 0) read since the last barrier"
    );
}

#[test]
fn a_barrier_under_thread_dependent_control_flow_is_refused() {
    let src = r#"
@T.prim_func
def f(A: T.Buffer((32,), "float32"), C: T.Buffer((32,), "float32")):
    tx = T.launch_thread("threadIdx.x", 32)
    if tx < 16:
        T.tvm_storage_sync("shared")
    C[tx] = A[tx]
"#;
    let mut args = [iota(32), HostData::F32(vec![0.0; 32])];
    let err = sim(src, &mut args).unwrap_err();
    assert!(err.starts_with("a barrier is reached by 16 of the block's 32 threads"), "{err}");
}

#[test]
fn out_of_bounds_accesses_name_the_buffer_and_the_thread() {
    let src = r#"
@T.prim_func
def f(A: T.Buffer((32,), "float32"), C: T.Buffer((32,), "float32")):
    tx = T.launch_thread("threadIdx.x", 32)
    C[tx] = A[tx + 1]
"#;
    let mut args = [iota(32), HostData::F32(vec![0.0; 32])];
    assert_eq!(sim(src, &mut args).unwrap_err(), "out-of-bounds access: A[32] with 32 elements, by thread (31, 0, 0)");
    let src = r#"
@T.prim_func
def f(A: T.Buffer((4, 8), "float32"), C: T.Buffer((4, 8), "float32")):
    for i, j in T.grid(4, 8):
        C[i, j] = A[j, i]
"#;
    let mut args = [iota(32), HostData::F32(vec![0.0; 32])];
    assert_eq!(sim(src, &mut args).unwrap_err(), "out-of-bounds access: index 4 of dimension 0 of A (extent 4)");
}

#[test]
fn a_select_and_a_conjunction_evaluate_only_what_each_thread_needs() {
    // Threads 16..31 would read A out of bounds in the branch they do not
    // take, and in the right side of `&&` that their left side decides.
    let src = r#"
@T.prim_func
def f(A: T.Buffer((16,), "float32"), C: T.Buffer((32,), "float32")):
    tx = T.launch_thread("threadIdx.x", 32)
    C[tx] = T.if_then_else(tx < 16, A[tx], T.float32(-1))
    if tx < 16 and A[tx] > T.float32(7):
        C[tx] = T.float32(100)
"#;
    let mut args = [iota(16), HostData::F32(vec![0.0; 32])];
    sim(src, &mut args).unwrap();
    let want: Vec<f64> = (0..32)
        .map(|i| {
            if i >= 16 {
                -1.0
            } else if i > 7 {
                100.0
            } else {
                i as f64
            }
        })
        .collect();
    assert_eq!(values(&args[1]), want);
}

#[test]
fn loops_may_run_a_different_number_of_times_per_thread() {
    let src = r#"
@T.prim_func
def f(C: T.Buffer((32,), "float32")):
    tx = T.launch_thread("threadIdx.x", 32)
    C[tx] = T.float32(0)
    for k in range(tx):
        C[tx] = C[tx] + T.Cast("float32", k)
"#;
    let mut args = [HostData::F32(vec![0.0; 32])];
    sim(src, &mut args).unwrap();
    let want: Vec<f64> = (0..32i64).map(|t| (t * (t - 1) / 2) as f64).collect();
    assert_eq!(values(&args[0]), want);
}

#[test]
fn integer_arithmetic_wraps_to_its_type() {
    // 2147483647 + 1 wraps to -2147483648 in int32 (in int64 it would be
    // 2147483648), and the floor division keeps the sign.
    let src = r#"
@T.prim_func
def f(C: T.Buffer((2,), "int32")):
    for i in range(2):
        C[i] = (i + 2147483647) // 2
"#;
    let mut args = [HostData::I32(vec![0; 2])];
    sim(src, &mut args).unwrap();
    assert_eq!(values(&args[0]), vec![1073741823.0, -1073741824.0]);
}

/// The magnitude of the lowest value of a signed type is that value, as C's
/// `abs` computes it on the GPU (it was the largest value on the
/// simulator, which then agreed with a wrong reference).
#[test]
fn the_magnitude_of_the_lowest_integer_wraps() {
    let src = r#"
@T.prim_func
def f(A: T.Buffer((3,), "int32"), B: T.Buffer((3,), "int32"), C: T.Buffer((2,), "int8"), D: T.Buffer((2,), "int8")):
    for i in range(3):
        B[i] = T.abs(A[i])
    for i in range(2):
        D[i] = T.abs(C[i])
"#;
    let mut args = [
        HostData::I32(vec![i32::MIN, -5, 7]),
        HostData::I32(vec![0; 3]),
        HostData::I8(vec![-128, -127]),
        HostData::I8(vec![0; 2]),
    ];
    sim(src, &mut args).unwrap();
    assert_eq!(values(&args[1]), vec![f64::from(i32::MIN), 5.0, 7.0]);
    assert_eq!(values(&args[3]), vec![-128.0, 127.0]);
}

#[test]
fn float32_arithmetic_rounds_every_operation() {
    // 1 + 2^-30 is 1 in float32: the sum below loses the small term at
    // every step, as the GPU does, where float64 would keep it.
    let src = r#"
@T.prim_func
def f(C: T.Buffer((1,), "float32")):
    C[0] = T.float32(1)
    for k in range(1024):
        C[0] = C[0] + T.float32(9.313225746154785e-10)
"#;
    let mut args = [HostData::F32(vec![0.0; 1])];
    sim(src, &mut args).unwrap();
    assert_eq!(values(&args[0]), vec![1.0]);
}

#[test]
fn asynchronous_copies_land_at_the_wait_that_covers_them() {
    let src = r#"
@T.prim_func
def f(A: T.Buffer((32,), "float32"), C: T.Buffer((32,), "float32"), D: T.Buffer((32,), "float32")):
    tx = T.launch_thread("threadIdx.x", 32)
    S = T.decl_buffer((32,), "float32", scope="shared")
    S[tx] = T.float32(-1)
    T.tvm_storage_sync("shared")
    S[tx] = T.cp_async(A[tx])
    T.ptx_commit_group()
    C[tx] = S[tx]
    T.ptx_wait_group(0)
    D[tx] = S[tx]
"#;
    let mut args = [iota(32), HostData::F32(vec![0.0; 32]), HostData::F32(vec![0.0; 32])];
    sim(src, &mut args).unwrap();
    assert_eq!(values(&args[1]), vec![-1.0; 32], "read before the wait: the old values");
    assert_eq!(values(&args[2]), values(&args[0]), "read after the wait: the copies");
}

/// Threads passing values through a global buffer need a barrier as
/// through shared memory (TVM's `element_wise_compute_at_split_j0_j1o_bound`
/// read another thread's write of `B` on the GPU): the simulator reports the
/// race, and a thread updating its own element in place is not one.
#[test]
fn a_global_buffer_passed_between_threads_without_a_barrier_is_a_race() {
    let racy = r#"
@T.prim_func
def f(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32")):
    tx = T.launch_thread("threadIdx.x", 64)
    B[tx] = A[tx] * T.float32(2)
    C[tx] = B[63 - tx] + T.float32(1)
"#;
    let mut args = vec![iota(64), iota(64), iota(64)];
    let err = sim(racy, &mut args).expect_err("a race");
    assert!(err.contains("race on global memory"), "{err}");
    let in_place = r#"
@T.prim_func
def g(A: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32")):
    tx = T.launch_thread("threadIdx.x", 64)
    for k in range(4):
        C[tx] = C[tx] + A[tx]
"#;
    let mut args = vec![iota(64), iota(64)];
    sim(in_place, &mut args).unwrap_or_else(|e| panic!("{e}"));
}

/// Blocks that write one element with different values race on a GPU
/// (whichever lands last stays): the simulator, which runs them one after
/// another, reports it, also when workers share the blocks (each range's
/// writes checked against the earlier ranges' when they are merged; with
/// eight, one block each, the race is found merging the second). The
/// same value from every block is no race. An error in a later block is
/// the one the sequential run reports.
#[test]
fn blocks_writing_one_element_race_also_when_workers_share_them() {
    let src = r#"
@T.prim_func
def f(A: T.Buffer((64,), "float32"), C: T.Buffer((65,), "float32")):
    bx = T.launch_thread("blockIdx.x", 8)
    tx = T.launch_thread("threadIdx.x", 8)
    C[bx * 8 + tx] = A[bx * 8 + tx] * T.float32(2.0)
    if tx == 0:
        C[64] = T.Cast("float32", bx)
"#;
    let f = func(src);
    for (workers, between) in
        [(1, "(0, 0, 0) and (1, 0, 0)"), (3, "(0, 0, 0) and (1, 0, 0)"), (8, "(0, 0, 0) and (1, 0, 0)")]
    {
        let mut args = [iota(64), HostData::F32(vec![0.0; 65])];
        let e = run(&f, &mut args, SimOptions { workers, ..SimOptions::default() }).unwrap_err();
        assert!(e.contains(&format!("a race between blocks: blocks {between} both write C[64]")), "{workers}: {e}");
    }
    let same = src.replace("T.Cast(\"float32\", bx)", "T.float32(7.0)");
    let mut args = [iota(64), HostData::F32(vec![0.0; 65])];
    sim(&same, &mut args).unwrap();
    let c = values(&args[1]);
    assert_eq!(c[64], 7.0);
    assert_eq!(c[5], 10.0);
    // Without races the blocks' writes end as in order; blocks 4 to 7
    // write past C.
    let bad = src.replace("C[64] = T.Cast(\"float32\", bx)", "C[64 + bx // 4 * 16] = T.float32(1.0)");
    let mut args = [iota(64), HostData::F32(vec![0.0; 65])];
    let e = sim(&bad, &mut args).unwrap_err();
    assert!(e.contains("C[80]"), "{e}");
}

/// One block reading what another block of the same launch writes races
/// on a GPU, which runs the blocks in any order: block 1 reading the
/// element block 0 changed (the read may come first), and block 0 reading
/// an element block 1 changes later (the write may come first). Run in
/// order, both passed before (found by a helper, pasted as TVM's
/// `T.thread_binding` text: one kernel, no barrier between the blocks can
/// exist). Reading back what the block itself wrote, or another block's
/// element left as it was, is no race.
#[test]
fn a_block_reading_what_another_block_writes_races() {
    let src = r#"
@T.prim_func
def f(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32")):
    bx = T.launch_thread("blockIdx.x", 8)
    tx = T.launch_thread("threadIdx.x", 8)
    B[bx * 8 + tx] = A[bx * 8 + tx] * T.float32(2.0)
    C[bx * 8 + tx] = B[T.max(bx - 1, 0) * 8 + tx]
"#;
    let args = || [iota(64), HostData::F32(vec![0.0; 64]), HostData::F32(vec![0.0; 64])];
    let mut a = args();
    let e = sim(src, &mut a).unwrap_err();
    assert!(
        e.contains(
            "a race between blocks: block (1, 0, 0) reads B[1], which block (0, 0, 0) changed in the same launch"
        ),
        "{e}"
    );
    // (B[0] keeps its 0.) Read first, changed after: block 0 reads B[8],
    // which block 1 writes.
    let war = src.replace("T.max(bx - 1, 0)", "T.min(bx + 1, 7)");
    let mut a = args();
    let e = sim(&war, &mut a).unwrap_err();
    assert!(
        e.contains(
            "a race between blocks: block (1, 0, 0) changes B[8], which block (0, 0, 0) read in the same launch"
        ),
        "{e}"
    );
    // Its own elements: none.
    let own = src.replace("T.max(bx - 1, 0)", "bx");
    let mut a = args();
    sim(&own, &mut a).unwrap();
    assert_eq!(values(&a[2])[9], 18.0);
    // Another block's element, written with the value it already held.
    let same = src.replace("A[bx * 8 + tx] * T.float32(2.0)", "B[bx * 8 + tx]");
    let mut a = args();
    sim(&same, &mut a).unwrap();
}

/// The twenty-first stop's wrong kernel in small: a block's tile of 20
/// columns leaves in chunks of 8, and the copy of the last chunk writes 8
/// where the chunk holds 4: 4 columns of the next block's tile, from what
/// the tile held before. On the GPU whichever block lands last stays; run
/// in order, the next block's right values came last and the result
/// passed. Now the race is reported; keeping to the chunk, none is.
#[test]
fn a_tile_copied_out_past_its_edge_races_with_the_next_block() {
    let src = r#"
@T.prim_func
def f(A: T.Buffer((40,), "float32"), B: T.Buffer((40,), "float32")):
    bx = T.launch_thread("blockIdx.x", 2)
    tile = T.decl_buffer((8,), "float32", scope="shared")
    for c in T.unroll(3):
        for j in T.unroll(8):
            if c * 8 + j < 20:
                tile[j] = A[bx * 20 + c * 8 + j] * T.float32(2.0)
        for j in T.unroll(8):
            if GUARD:
                B[bx * 20 + c * 8 + j] = tile[j] + T.float32(1.0)
"#;
    let past = src.replace("GUARD", "bx * 20 + c * 8 + j < 40");
    let mut args = [iota(40), HostData::F32(vec![0.0; 40])];
    let e = sim(&past, &mut args).unwrap_err();
    assert!(e.contains("a race between blocks: blocks (0, 0, 0) and (1, 0, 0) both write B[20]"), "{e}");
    let kept = src.replace("GUARD", "c * 8 + j < 20");
    let mut args = [iota(40), HostData::F32(vec![0.0; 40])];
    sim(&kept, &mut args).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(values(&args[1])[23], 47.0);
}

/// A warp-wide tensor-core product, as `tensorize` leaves it: two warps,
/// each the product of its own 16x16 tiles; every thread of a warp takes
/// part, and one that does not is an error.
const WMMA: &str = r#"
@T.prim_func
def f(A: T.Buffer((32, 16), "float16"), B: T.Buffer((16, 16), "float16"), C: T.Buffer((32, 16), "float32")):
    ty = T.launch_thread("threadIdx.y", 2)
    tx = T.launch_thread("threadIdx.x", 32)
    a = T.decl_buffer((16, 16), "float16", scope="wmma.matrix_a")
    b = T.decl_buffer((16, 16), "float16", scope="wmma.matrix_b")
    c = T.decl_buffer((16, 16), "float32", scope="wmma.accumulator")
    GUARD
        T.wmma_fill_fragment(c[0, 0], T.float32(1))
        T.wmma_load_matrix_sync(a[0, 0], A[ty * 16, 0], "row_major")
        T.wmma_load_matrix_sync(b[0, 0], B[0, 0], "row_major")
        T.wmma_mma_sync(c[0, 0], a[0, 0], b[0, 0])
        T.wmma_store_matrix_sync(C[ty * 16, 0], c[0, 0])
"#;

#[test]
fn tensor_core_operations_run_per_warp() {
    let half = |n: usize, k: usize| {
        let mut d = HostData::poisoned(tirc_ir::DType::F16, n).unwrap();
        d.set_f64(&(0..n).map(|i| ((i * k) % 7) as f64 - 3.0).collect::<Vec<_>>());
        d
    };
    let (a, b) = (half(512, 3), half(256, 5));
    let mut args = [a.clone(), b.clone(), HostData::F32(vec![0.0; 512])];
    sim(&WMMA.replace("GUARD", "if True:"), &mut args).unwrap();
    let (av, bv, c) = (values(&a), values(&b), values(&args[2]));
    for r in 0..32 {
        for col in 0..16 {
            let want: f64 = 1.0 + (0..16).map(|k| av[r * 16 + k] * bv[k * 16 + col]).sum::<f64>();
            assert_eq!(c[r * 16 + col], want, "C[{r}, {col}]");
        }
    }
    let mut args = [a, b, HostData::F32(vec![0.0; 512])];
    let e = sim(&WMMA.replace("GUARD", "if tx < 16:"), &mut args).unwrap_err();
    assert!(e.contains("reached by 16 of the 32 threads of warp 0"), "{e}");
}

/// The math functions of TVMScript beyond the basic ones, with C's meaning:
/// `nearbyint` rounds half to even, `fmod` and `truncmod` keep the sign of
/// the dividend, `copysign` takes the sign of its second argument, and the
/// float tests see NaN and infinity.
#[test]
fn math_functions_mean_what_c_means() {
    let src = r#"
@T.prim_func
def f(A: T.Buffer((4,), "float32"), I: T.Buffer((4,), "int32"), C: T.Buffer((4, 8), "float32"), J: T.Buffer((4,), "int32")):
    tx = T.launch_thread("threadIdx.x", 4)
    C[tx, 0] = T.nearbyint(A[tx])
    C[tx, 1] = T.fmod(A[tx], T.float32(2))
    C[tx, 2] = T.copysign(T.float32(3), A[tx])
    C[tx, 3] = T.trunc(A[tx])
    C[tx, 4] = T.Select(T.isnan(A[tx] * T.float32("inf") * T.float32(0)), T.float32(1), T.float32(0))
    C[tx, 5] = T.Select(T.isinf(A[tx] * T.float32("inf")), T.float32(1), T.float32(0)) + T.Select(T.isfinite(A[tx]), T.float32(2), T.float32(0)) + T.Select(T.isnan(I[tx]) or T.isinf(I[tx]), T.float32(8), T.float32(0))
    C[tx, 6] = T.atan2(A[tx], T.float32(-1))
    C[tx, 7] = T.exp2(A[tx]) + T.log2(T.fabs(A[tx]))
    J[tx] = T.truncmod(I[tx], 3) * 100 + T.truncdiv(I[tx], 3)
"#;
    let a = [2.5f32, -5.5, 0.5, -1.5];
    let mut args = [
        HostData::F32(a.to_vec()),
        HostData::I32(vec![7, -7, 5, -5]),
        HostData::F32(vec![0.0; 32]),
        HostData::I32(vec![0; 4]),
    ];
    sim(src, &mut args).unwrap();
    let c = values(&args[2]);
    let row = |k: usize| (0..4).map(|t| c[t * 8 + k]).collect::<Vec<f64>>();
    assert_eq!(row(0), vec![2.0, -6.0, 0.0, -2.0], "nearbyint rounds half to even");
    assert_eq!(row(1), vec![0.5, -1.5, 0.5, -1.5], "fmod keeps the dividend's sign");
    assert_eq!(row(2), vec![3.0, -3.0, 3.0, -3.0], "copysign");
    assert_eq!(row(3), vec![2.0, -5.0, 0.0, -1.0], "trunc");
    assert_eq!(row(4), vec![1.0; 4], "isnan of inf * 0");
    assert_eq!(row(5), vec![3.0; 4], "isinf of a * inf, isfinite of a, an integer neither NaN nor infinite");
    for (t, x) in a.iter().enumerate() {
        let x = *x as f64;
        assert!((c[t * 8 + 6] - x.atan2(-1.0)).abs() < 1e-6, "atan2");
        assert!((c[t * 8 + 7] - (x.exp2() + x.abs().log2())).abs() < 1e-5, "exp2 + log2");
    }
    assert_eq!(values(&args[3]), vec![102.0, -102.0, 201.0, -201.0], "truncmod and truncdiv round towards zero");
}

/// Bitwise operations and shifts with C's meaning on each type: a right
/// shift keeps the sign of a signed value and fills zeros in an unsigned
/// one, `~` flips the type's bits, results wrap to the type.
#[test]
fn bitwise_operations_mean_what_c_means() {
    let src = r#"
@T.prim_func
def f(I: T.Buffer((4,), "int32"), U: T.Buffer((4,), "uint8"), J: T.Buffer((4, 4), "int32"), V: T.Buffer((4, 3), "uint8")):
    tx = T.launch_thread("threadIdx.x", 4)
    J[tx, 0] = I[tx] >> 2
    J[tx, 1] = T.bitwise_and(I[tx], 0xF0) | T.bitwise_xor(I[tx], 1) & 3
    J[tx, 2] = ~I[tx]
    J[tx, 3] = T.shift_left(I[tx], 28)
    V[tx, 0] = U[tx] >> T.uint8(1)
    V[tx, 1] = ~U[tx]
    V[tx, 2] = U[tx] << T.uint8(4)
"#;
    let mut args = [
        HostData::I32(vec![-9, 9, 255, -256]),
        HostData::U8(vec![0, 1, 128, 255]),
        HostData::I32(vec![0; 16]),
        HostData::U8(vec![0; 12]),
    ];
    sim(src, &mut args).unwrap();
    let j = values(&args[2]);
    let col = |d: &[f64], w: usize, k: usize| (0..4).map(|t| d[t * w + k]).collect::<Vec<f64>>();
    assert_eq!(col(&j, 4, 0), vec![-3.0, 2.0, 63.0, -64.0], "arithmetic right shift");
    let want1: Vec<f64> = [-9i32, 9, 255, -256].iter().map(|&x| ((x & 0xF0) | ((x ^ 1) & 3)) as f64).collect();
    assert_eq!(col(&j, 4, 1), want1, "& binds tighter than |");
    assert_eq!(col(&j, 4, 2), vec![8.0, -10.0, -256.0, 255.0], "~x is -x - 1");
    let want3: Vec<f64> = [-9i32, 9, 255, -256].iter().map(|&x| x.wrapping_shl(28) as f64).collect();
    assert_eq!(col(&j, 4, 3), want3, "a left shift wraps to 32 bits");
    let v = values(&args[3]);
    assert_eq!(col(&v, 3, 0), vec![0.0, 0.0, 64.0, 127.0], "a logical right shift of an unsigned value");
    assert_eq!(col(&v, 3, 1), vec![255.0, 254.0, 127.0, 0.0], "~ of a uint8");
    assert_eq!(col(&v, 3, 2), vec![0.0, 16.0, 0.0, 240.0], "a left shift wraps to 8 bits");
}

#[test]
fn floor_division_of_floats_is_tvms() {
    // floordiv(a, b) = floor(a / b) and floormod(a, b) = a - floor(a / b) * b,
    // by T.floordiv / T.floormod and by `//` and `%`: the remainder takes
    // the divisor's sign.
    let src = r#"
@T.prim_func
def f(A: T.Buffer((4,), "float32"), C: T.Buffer((4, 4), "float32")):
    tx = T.launch_thread("threadIdx.x", 4)
    C[tx, 0] = T.floordiv(A[tx], T.float32(2))
    C[tx, 1] = T.floormod(A[tx], T.float32(2))
    C[tx, 2] = A[tx] // T.float32(-2)
    C[tx, 3] = A[tx] % T.float32(-2)
"#;
    let mut args = [HostData::F32(vec![5.0, -5.0, 0.5, -0.5]), HostData::F32(vec![0.0; 16])];
    sim(src, &mut args).unwrap();
    let c = values(&args[1]);
    let row = |k: usize| (0..4).map(|t| c[t * 4 + k]).collect::<Vec<f64>>();
    assert_eq!(row(0), vec![2.0, -3.0, 0.0, -1.0]);
    assert_eq!(row(1), vec![1.0, 1.0, 0.5, 1.5]);
    assert_eq!(row(2), vec![-3.0, 2.0, -1.0, 0.0]);
    assert_eq!(row(3), vec![-1.0, -1.0, -1.5, -0.5]);
}

/// The reference runs a loop's body in order, iteration by iteration: here
/// block `w` of iteration 1 reads what block `r` of iteration 0 wrote, so
/// the loop is not spread over reference threads.
#[test]
fn the_reference_keeps_a_loop_in_order_where_one_iteration_reads_another() {
    let f = func(
        r#"
@T.prim_func
def f(A: T.Buffer((4, 2), "float32"), X: T.Buffer((4,), "float32"), C: T.Buffer((4,), "float32")):
    for i in range(4):
        with T.block("w"):
            vi = T.axis.spatial(4, i)
            X[vi] = C[0] + T.float32(1)
        with T.block("r"):
            vi = T.axis.spatial(4, i)
            C[vi] = A[vi, 0] + A[vi, 1]
"#,
    );
    let inputs = [
        HostData::F32(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]),
        HostData::F32(vec![0.0; 4]),
        HostData::F32(vec![100.0, 200.0, 300.0, 400.0]),
    ];
    let r = tirc::verify::reference_sim(&f, &inputs).unwrap();
    assert_eq!(r.values[1], vec![101.0, 4.0, 4.0, 4.0]);
    assert_eq!(r.values[2], vec![3.0, 7.0, 11.0, 15.0]);
}

/// The reference computes at float64 but reads a float32 value as float32
/// where a step is not continuous: `0.35f * 10` is 3.5 in float32 and
/// 3.4999999 at float64, so `round` gives 4 (what the kernel and TVM give),
/// a cast to int32 of `x * 10 - 0.5` gives 3 and `x * 10 >= 3.5` holds.
#[test]
fn the_reference_reads_float32_as_float32_where_it_rounds_or_compares() {
    let f = func(
        r#"
@T.prim_func
def f(A: T.Buffer((2,), "float32"), R: T.Buffer((2,), "int32"), G: T.Buffer((2,), "float32")):
    for i in range(2):
        with T.block("r"):
            vi = T.axis.spatial(2, i)
            R[vi] = T.Cast("int32", T.round(A[vi] * T.float32(10))) * 10 + T.Cast("int32", A[vi] * T.float32(10) + T.float32(0.5))
            G[vi] = T.Select(A[vi] * T.float32(10) >= T.float32(3.5), T.float32(1), T.float32(0))
"#,
    );
    let inputs = [HostData::F32(vec![0.35, 0.35]), HostData::I32(vec![0; 2]), HostData::F32(vec![0.0; 2])];
    let r = tirc::verify::reference_sim(&f, &inputs).unwrap();
    assert_eq!(r.values[1], vec![44.0, 44.0]);
    assert_eq!(r.values[2], vec![1.0, 1.0]);
    // The kernel, in float32, computes the same.
    let mut args = inputs.to_vec();
    both_machines(&f, &mut args).unwrap();
    assert_eq!(args[1].to_f64(), vec![44.0, 44.0]);
}

/// A literal is a value of its type, as the CUDA compiler makes it:
/// `T.float16(1.0001)` is 1 and `T.float32(16777217)` is 16777216, on the
/// simulator and in the reference.
#[test]
fn literals_are_values_of_their_types() {
    let f = func(
        r#"
@T.prim_func
def f(X: T.Buffer((2,), "float32"), D: T.Buffer((2,), "float16"), C: T.Buffer((2,), "float32")):
    for i in range(2):
        with T.block("r"):
            vi = T.axis.spatial(2, i)
            D[vi] = T.Cast("float16", X[vi]) * T.float16(0) + (T.float16(1.0001) - T.float16(1)) * T.float16(1000)
            C[vi] = X[vi] * T.float32(0) + (T.float32(16777217) - T.float32(16777216))
"#,
    );
    let inputs = [
        HostData::F32(vec![1.0, 2.0]),
        HostData::zeros(tirc_ir::DType::Float(16), 2).unwrap(),
        HostData::F32(vec![7.0; 2]),
    ];
    let r = tirc::verify::reference_sim(&f, &inputs).unwrap();
    assert_eq!((r.values[1].clone(), r.values[2].clone()), (vec![0.0, 0.0], vec![0.0, 0.0]));
    let mut args = inputs.to_vec();
    both_machines(&f, &mut args).unwrap();
    assert_eq!((args[1].to_f64(), args[2].to_f64()), (vec![0.0, 0.0], vec![0.0, 0.0]));
}

/// An explicit cast to a narrower float type rounds in the reference as in
/// the kernel: 1e5 is past float16's largest value, infinite in both, and
/// a correct kernel checks (it was reported as wrong).
#[test]
fn the_reference_rounds_at_explicit_casts() {
    let f = func(
        r#"
@T.prim_func
def f(A: T.Buffer((2,), "float32"), F: T.Buffer((2,), "float16")):
    for i in range(2):
        with T.block("C"):
            vi = T.axis.spatial(2, i)
            F[vi] = T.Cast("float16", A[vi] * T.float32(1e5))
"#,
    );
    let inputs = [HostData::F32(vec![1.0, 0.001]), HostData::zeros(tirc_ir::DType::Float(16), 2).unwrap()];
    let r = tirc::verify::reference_sim(&f, &inputs).unwrap();
    assert_eq!(r.values[1][0], f64::INFINITY);
    assert_eq!(r.values[1][1], 100.0);
    let (e, tol) = tirc::verify::sim_check_kernels(&f, std::slice::from_ref(&f), &[], 1).unwrap();
    assert!(e.rel_err <= tol && e.non_finite == 0, "rel_err {:.3e}", e.rel_err);
}

/// A float converted to a 32-bit integer takes the nearest value of the
/// type's range, NaN 0, as PTX's conversion does on the GPU (it wrapped).
#[test]
fn float_to_integer_conversions_clamp_as_the_gpu_does() {
    let f = func(
        r#"
@T.prim_func
def f(A: T.Buffer((4,), "float32"), I: T.Buffer((4,), "int32"), U: T.Buffer((4,), "uint32")):
    for i in range(4):
        with T.block("C"):
            vi = T.axis.spatial(4, i)
            I[vi] = T.Cast("int32", A[vi])
            U[vi] = T.Cast("uint32", A[vi])
"#,
    );
    let mut args = vec![
        HostData::F32(vec![3e9, -3e9, f32::NAN, -5.5]),
        HostData::I32(vec![1; 4]),
        HostData::zeros(tirc_ir::DType::UInt(32), 4).unwrap(),
    ];
    both_machines(&f, &mut args).unwrap();
    assert_eq!(args[1].to_f64(), vec![2147483647.0, -2147483648.0, 0.0, -5.0]);
    assert_eq!(args[2].to_f64(), vec![3e9, 0.0, 0.0, 0.0]);
}

/// `-x` of a float is `x * -1`, as TVM reads it: it flips the sign of a
/// zero, which `atan2` and a division by it see (held as `0.0 - x`, -(+0.0)
/// was +0.0, and atan2(-0.0, -1) gave +pi where C gives -pi).
#[test]
fn negating_a_float_flips_the_sign_of_zero() {
    let src = "@T.prim_func\ndef f(A: T.Buffer((2,), \"float32\"), B: T.Buffer((2,), \"float32\"), C: T.Buffer((2,), \"float32\")):\n    for i in range(2):\n        with T.block(\"b\"):\n            vi = T.axis.spatial(2, i)\n            B[vi] = T.atan2(-A[vi], T.float32(-1))\n            C[vi] = T.float32(1) / -A[vi]\n";
    let mut args = [HostData::F32(vec![0.0, -0.0]), HostData::F32(vec![0.0; 2]), HostData::F32(vec![0.0; 2])];
    sim(src, &mut args).unwrap_or_else(|e| panic!("{e}"));
    let pi = std::f32::consts::PI;
    assert_eq!(args[1], HostData::F32(vec![-pi, pi]));
    assert_eq!(args[2], HostData::F32(vec![f32::NEG_INFINITY, f32::INFINITY]));
}

/// The check's poison is a NaN of its own: a kernel that leaves an element
/// unwritten fails even where the reference computes a NaN there (the log
/// of a negative number), and passes where it writes the NaN itself.
#[test]
fn an_element_left_unwritten_fails_where_the_reference_is_nan() {
    let reference = func(
        "@T.prim_func
def f(A: T.Buffer((8,), \"float32\"), B: T.Buffer((8,), \"float32\")):
    for i in range(8):
        with T.block(\"B\"):
            vi = T.axis.spatial(8, i)
            B[vi] = T.log(A[vi] - T.float32(10.0))
",
    );
    let skips_last = func(
        "@T.prim_func
def f(A: T.Buffer((8,), \"float32\"), B: T.Buffer((8,), \"float32\")):
    for i in range(7):
        B[i] = T.log(A[i] - T.float32(10.0))
",
    );
    let (e, _) = tirc::verify::sim_check(&reference, &reference, 3).unwrap_or_else(|m| panic!("{m}"));
    assert_eq!(e.non_finite, 0, "NaN in both is the same result");
    let (e, tol) = tirc::verify::sim_check(&reference, &skips_last, 3).unwrap_or_else(|m| panic!("{m}"));
    assert!(e.non_finite == 1 && e.rel_err > tol, "an unwritten element passed: {e:?}");
}

/// Two threads of one block writing different values to one word of a
/// global buffer between two barriers race: the GPU keeps whichever lands
/// last (a helper's `B[vi % 32] = A[vi]` over 256 threads, which the
/// simulator's order made pass). Writing the same value (every thread
/// storing one result) is no race, nor is one thread writing a word
/// twice, nor two threads writing it across a barrier.
#[test]
fn threads_of_a_block_writing_one_word_race() {
    let src = r#"
@T.prim_func
def f(A: T.Buffer((64,), "float32"), B: T.Buffer((8,), "float32")):
    tx = T.launch_thread("threadIdx.x", 64)
    B[tx % 8] = A[tx]
"#;
    let args = || [iota(64), HostData::F32(vec![0.0; 8])];
    let mut a = args();
    let e = sim(src, &mut a).unwrap_err();
    assert!(
        e.contains("a race between threads: threads (0, 0, 0) and (8, 0, 0) of block (0, 0, 0) both write B[0] since the last barrier, with different values (0 and 8)"),
        "{e}"
    );
    let same = src.replace("A[tx]", "A[tx % 8]");
    let mut a = args();
    sim(&same, &mut a).unwrap();
    assert_eq!(values(&a[1])[3], 3.0);
    let own = src
        .replace("B[tx % 8] = A[tx]", "B[tx % 8] = A[tx]\n    B[tx % 8] = A[tx] * T.float32(2)")
        .replace("64)", "8)");
    let mut a = args();
    sim(&own, &mut a).unwrap();
    let across = src.replace("B[tx % 8] = A[tx]", "if tx < 8:\n        B[tx] = A[tx]\n    T.tvm_storage_sync(\"shared\")\n    if tx >= 56:\n        B[tx - 56] = A[tx]");
    let mut a = args();
    sim(&across, &mut a).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(values(&a[1])[1], 57.0);
}

/// `T.tvm_warp_shuffle_down` takes the value `delta` lanes up within each
/// segment of `width` lanes, and its own past the segment's end; a shuffle
/// reached by part of a warp, or reading a lane the block does not have,
/// is an error (on the GPU it hangs or reads garbage). Both machines agree.
#[test]
fn warp_shuffles_move_values_between_lanes() {
    let src = r#"
@T.prim_func
def f(A: T.Buffer((64,), "int32"), B: T.Buffer((64,), "int32")):
    tx = T.launch_thread("threadIdx.x", 64)
    B[tx] = T.tvm_warp_shuffle_down(T.tvm_warp_activemask(), A[tx], 2, 8, 32)
"#;
    let ints = |n: usize| HostData::I32((0..n as i32).collect());
    let mut a = [ints(64), HostData::I32(vec![0; 64])];
    both_machines(&func(src), &mut a).unwrap_or_else(|e| panic!("{e}"));
    let expect: Vec<f64> = (0..64).map(|t| f64::from(if t % 8 + 2 < 8 { t + 2 } else { t })).collect();
    assert_eq!(values(&a[1]), expect);
    // A float, over a whole warp.
    let float = src.replace("int32", "float32").replace(", 2, 8, 32)", ", 16, 32, 32)");
    let mut a = [iota(64), HostData::F32(vec![0.0; 64])];
    both_machines(&func(&float), &mut a).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(values(&a[1])[3], 19.0);
    assert_eq!(values(&a[1])[20], 20.0);
    // Under a condition that splits a warp.
    let split = src.replace("    B[tx] =", "    if tx % 32 < 16:\n        B[tx] =");
    let mut a = [ints(64), HostData::I32(vec![0; 64])];
    let e = both_machines(&func(&split), &mut a).unwrap_err();
    assert!(
        e.contains("a warp shuffle is reached by thread (0, 0, 0) but not by thread (16, 0, 0) of the same warp"),
        "{e}"
    );
    // A block of 6 threads: lane 4 would read lane 6, which is no thread.
    let short = src.replace("64)\n", "6)\n");
    let mut a = [ints(64), HostData::I32(vec![0; 64])];
    let e = both_machines(&func(&short), &mut a).unwrap_err();
    assert!(e.contains("reads lane 6 of a warp the block does not fill"), "{e}");
}
