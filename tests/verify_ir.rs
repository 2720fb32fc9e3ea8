//! The IR verifier (`crates/passes/src/transform/verify_ir.rs`): each of its
//! rules catches IR that breaks it, names the pass, and lets through what a
//! correct pass produces.

use tirc::compile::load;
use tirc_ir::target::Target;
use tirc_ir::{Buffer, DType, Expr, PrimFunc, Scope, Stmt, Var};
use tirc_passes::transform::{self, verify_ir};

fn func(src: &str) -> PrimFunc {
    load(src, &[]).unwrap_or_else(|e| panic!("{e:?}")).funcs.into_iter().next().expect("a function")
}

fn violation(pass: &str, f: &PrimFunc) -> String {
    let d = verify_ir::after(pass, f, &Target::default()).expect_err("the verifier lets a broken IR through");
    assert!(d.message.starts_with(&format!("internal error: after the lowering pass `{pass}`, ")), "{}", d.message);
    assert!(d.message.contains("This is a bug in tirc"), "{}", d.message);
    d.message
}

const COPY_2D: &str = r#"
@T.prim_func
def f(A: T.Buffer((4, 8), "float32"), C: T.Buffer((4, 8), "float32")):
    for i, j in T.grid(4, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj]
"#;

#[test]
fn every_pass_of_a_real_lowering_passes_the_verifier() {
    let f = func(COPY_2D);
    let mut seen = Vec::new();
    transform::lower(f, &transform::PassContext::default(), |pass, f| {
        verify_ir::after(pass, f, &Target::default()).unwrap_or_else(|d| panic!("{}", d.message));
        seen.push(pass);
    })
    .unwrap();
    assert_eq!(seen, transform::pass_names());
}

#[test]
fn a_block_left_after_lower_blocks_is_an_internal_error() {
    let f = func(COPY_2D);
    assert!(verify_ir::after("lower_init", &f, &Target::default()).is_ok(), "blocks are fine before lower_blocks");
    let m = violation("lower_blocks", &f);
    assert!(m.contains("is left after lower_blocks"), "{m}");
}

#[test]
fn a_multi_dimensional_access_after_flatten_buffers_is_an_internal_error() {
    let f = transform::lower_blocks::run(func(COPY_2D)).unwrap();
    assert!(verify_ir::after("compact_buffers", &f, &Target::default()).is_ok());
    let m = violation("flatten_buffers", &f);
    assert!(m.contains("with 2 indices"), "{m}");
}

#[test]
fn a_loop_still_bound_to_a_thread_after_extract_launch_is_an_internal_error() {
    let src = r#"
@T.prim_func
def f(A: T.Buffer((32,), "float32"), C: T.Buffer((32,), "float32")):
    for tx in T.thread_binding(32, thread="threadIdx.x"):
        C[tx] = A[tx]
"#;
    let f = func(src);
    assert!(verify_ir::after("flatten_buffers", &f, &Target::default()).is_ok());
    let m = violation("extract_launch", &f);
    assert!(m.contains("the loop tx is still bound to threadIdx.x"), "{m}");
}

#[test]
fn an_axis_launched_twice_is_an_internal_error() {
    let src = r#"
@T.prim_func
def f(A: T.Buffer((32,), "float32"), C: T.Buffer((32,), "float32")):
    tx = T.launch_thread("threadIdx.x", 32)
    ty = T.launch_thread("threadIdx.x", 32)
    C[tx] = A[ty]
"#;
    let m = violation("simplify", &func(src));
    assert!(m.contains("threadIdx.x is launched twice"), "{m}");
}

#[test]
fn an_unbound_variable_and_an_unallocated_buffer_are_internal_errors() {
    let a = Buffer::new("A", DType::F32, vec![Expr::int(8)], Scope::Global);
    let lost = Buffer::new("T", DType::F32, vec![Expr::int(8)], Scope::Local);
    let x = Var::new("x", DType::I32);
    let f = |body: Stmt| PrimFunc {
        name: "f".into(),
        params: vec![a.clone()],
        sizes: vec![],
        scalars: vec![],
        attrs: vec![],
        signature: vec![],
        body,
        span: None,
        facts: Default::default(),
    };
    let store =
        |b: &Buffer, i: Expr| Stmt::Store { buffer: b.clone(), indices: vec![i], value: Expr::Float(1.0, DType::F32) };
    let m = violation("lower_init", &f(store(&a, Expr::var(&x))));
    assert!(m.contains("the variable x is read where nothing binds it"), "{m}");
    let m = violation("lower_init", &f(store(&lost, Expr::int(0))));
    assert!(m.contains("a store to T outside its allocation"), "{m}");
    let allocated = Stmt::Allocate { buffer: lost.clone(), body: Box::new(store(&lost, Expr::int(0))) };
    assert!(verify_ir::after("lower_init", &f(allocated), &Target::default()).is_ok());
}

#[test]
fn a_launch_narrower_than_the_loops_it_replaced_is_an_internal_error() {
    let before = func(
        r#"
@T.prim_func
def f(A: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32")):
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            C[bx * 32 + tx] = A[bx * 32 + tx]
"#,
    );
    let lost = func(
        r#"
@T.prim_func
def f(A: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32")):
    bx = T.launch_thread("blockIdx.x", 2)
    tx = T.launch_thread("threadIdx.x", 16)
    C[bx * 32 + tx] = A[bx * 32 + tx]
"#,
    );
    let axes = verify_ir::Axes::of(&before);
    // Before extract_launch, loops may still be narrowed (or vanish).
    assert!(axes.covered_by("flatten_buffers", &lost).is_ok());
    let d = axes.covered_by("extract_launch", &lost).expect_err("a lost half of the threads goes through");
    assert!(
        d.message.contains("threadIdx.x is launched with extent 16, but a loop or launch of extent 32"),
        "{}",
        d.message
    );
    assert!(d.message.contains("after the lowering pass `extract_launch`"), "{}", d.message);
    let dropped = func(
        r#"
@T.prim_func
def f(A: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32")):
    tx = T.launch_thread("threadIdx.x", 32)
    C[tx] = A[tx]
"#,
    );
    let d = axes.covered_by("unroll_loops", &dropped).expect_err("a dropped grid axis goes through");
    assert!(d.message.contains("blockIdx.x is not launched"), "{}", d.message);
    // The lowering itself keeps every axis.
    assert!(verify_ir::Axes::of(&before)
        .covered_by("extract_launch", &transform::lower(before, &transform::PassContext::default(), |_, _| {}).unwrap())
        .is_ok());
}
