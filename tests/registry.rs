//! The primitive registry and what it gives: one entry per primitive,
//! refusals of a named kind (`ErrorKind`, shown as the diagnostic's code),
//! and a trace of structured steps.

use tirc::compile::{compile, Request};
use tirc_passes::schedule::registry::{Arg, Out, NOT_YET, PRIMITIVES};
use tirc_passes::schedule::ErrorKind;

const FUNC: &str = "M = 64
N = 64
K = 64

@T.prim_func
def matmul(A: T.Buffer((M, K), \"float32\"), B: T.Buffer((K, N), \"float32\"), C: T.Buffer((M, N), \"float32\")):
    for i, j, k in T.grid(M, N, K):
        with T.block(\"C\"):
            vi, vj, vk = T.axis.remap(\"SSR\", [i, j, k])
            with T.init():
                C[vi, vj] = 0.0
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

@tirc.schedule(\"matmul\")
def s(sch):
    C = sch.get_block(\"C\")
    i, j, k = sch.get_loops(C)
";

fn compile_with(lines: &str) -> Result<tirc::compile::Compiled, Vec<tirc_ir::Diagnostic>> {
    let src = format!("{FUNC}{lines}");
    compile(&src, &Request { schedule: Some("s".into()), ..Request::default() })
}

#[test]
fn every_primitive_has_one_entry() {
    let mut names: Vec<&str> = PRIMITIVES.iter().map(|p| p.name).collect();
    names.sort();
    let n = names.len();
    names.dedup();
    assert_eq!(n, names.len(), "a primitive is registered twice");
    for p in PRIMITIVES {
        assert!(!NOT_YET.contains(&p.name), "{} is both implemented and not yet", p.name);
        let mut params: Vec<&str> = p.params.iter().map(|x| x.name).collect();
        params.dedup();
        assert_eq!(params.len(), p.params.len(), "{} names a parameter twice", p.name);
    }
    assert!(n >= 26, "only {n} primitives");
}

#[test]
fn refusals_have_named_kinds() {
    let cases: &[(&str, ErrorKind)] = &[
        ("    sch.get_block(\"D\")\n", ErrorKind::NotFound),
        ("    a, b = sch.split(i, factors=[None, 16])\n    sch.split(i, factors=[2, 32])\n", ErrorKind::NotFound),
        ("    sch.split(i, factors=[0, 64])\n", ErrorKind::BadArgument),
        ("    sch.split(C, factors=[None, 16])\n", ErrorKind::BadArgument),
        ("    sch.bind(i, \"threadIdx.w\")\n", ErrorKind::BadArgument),
        ("    sch.cache_read(C, 7, \"shared\")\n", ErrorKind::BadArgument),
        ("    sch.parallel(k)\n", ErrorKind::Precondition),
        ("    sch.compute_at(C, i)\n", ErrorKind::Precondition),
        ("    sch.merge(i, k)\n", ErrorKind::Unsupported),
        ("    sch.tensorize(k, \"wmma_sync_16x16x16_f16f16f32\")\n", ErrorKind::Precondition),
        ("    sch.tensorize(k, \"wmma_sync_99\")\n", ErrorKind::BadArgument),
        ("    sch.rfactor(i, 0)\n", ErrorKind::Precondition),
        ("    sch.rfactor(k, 3)\n", ErrorKind::BadArgument),
        ("    sch.transform_layout(C, (\"read\", 0), lambda i, k: (i, k), pad_value=0)\n", ErrorKind::Unsupported),
    ];
    for (lines, kind) in cases {
        let diags = match compile_with(lines) {
            Ok(_) => panic!("{lines}: applied"),
            Err(d) => d,
        };
        assert_eq!(diags.len(), 1, "{lines}: {diags:?}");
        assert_eq!(diags[0].code, Some(kind.code()), "{lines}: {}", diags[0].message);
        assert!(diags[0].span.is_some(), "{lines}: no span");
    }
}

#[test]
fn the_trace_holds_structured_steps() {
    let c = compile_with(
        "    io, ii = sch.split(i, factors=[None, 16])\n    sch.reorder(j, io)\n    sch.bind(io, \"blockIdx.x\")\n",
    )
    .unwrap_or_else(|e| panic!("{e:?}"));
    let names: Vec<&str> = c.trace.iter().map(|s| s.primitive.name).collect();
    assert_eq!(names, ["split", "reorder", "bind"], "queries (get_block, get_loops) are not steps");
    let split = &c.trace[0];
    match (&split.args.0[0], &split.args.0[1], &split.out) {
        (Some(Arg::Loop(l)), Some(Arg::Factors(f)), Out::Loops(outs)) => {
            assert_eq!(l.name(), "i");
            assert_eq!(f, &[None, Some(16)]);
            assert_eq!(outs.len(), 2);
        }
        other => panic!("split recorded as {other:?}"),
    }
    let lines: Vec<String> = c.trace.iter().map(ToString::to_string).collect();
    // Loops print by the names of their variables in the function.
    assert_eq!(
        lines,
        ["i_0, i_1 = sch.split(i, factors=[None, 16])", "sch.reorder(j, i_0)", "sch.bind(i_0, \"blockIdx.x\")"]
    );
}

/// `sch.bind(loop, "vthread.x")`: a virtual thread is an unrolled loop, as
/// `T.thread_binding(.., thread="vthread.x")` is in the function text.
#[test]
fn a_virtual_thread_binding_unrolls_the_loop() {
    let c = compile_with("    io, ii = sch.split(i, factors=[2, None])\n    sch.bind(io, \"vthread.x\")\n")
        .unwrap_or_else(|e| panic!("{e:?}"));
    let mut kinds = Vec::new();
    c.scheduled.body.walk(&mut |s| {
        if let tirc_ir::Stmt::For(l) = s {
            kinds.push((l.var.name().to_string(), l.kind));
        }
    });
    assert!(kinds.contains(&("i_0".to_string(), tirc_ir::ForKind::Unrolled)), "{kinds:?}");
    assert!(compile_with("    sch.bind(i, \"vthread.w\")\n").is_err());
}
