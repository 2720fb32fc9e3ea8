//! `blockize` gives TVM's structure: the row sum of TVM's own blockize test
//! (`test_blockize_init_loops`), blockized at its outer loop, is the
//! function written out below (its structure, not its names, is compared).

use tirc::compile::{compile, Request};
use tirc_ir::structural_eq::func_eq;

const ROWSUM: &str = r#"
@T.prim_func
def rowsum(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128,), "float32")):
    for k, i in T.grid(128, 128):
        with T.block("B"):
            vk, vi = T.axis.remap("RS", [k, i])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]

@tirc.schedule("rowsum")
def s(sch):
    k, i = sch.get_loops(sch.get_block("B"))
    sch.blockize(k)
"#;

/// One outer block with a unit reduction and a unit spatial variable; the
/// init, a block over a copy of the loop of `i`; the update, the original
/// loops with the inner block.
const EXPECTED: &str = r#"
@T.prim_func
def rowsum(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128,), "float32")):
    with T.block("B_o"):
        ko = T.axis.reduce(1, 0)
        io = T.axis.spatial(1, 0)
        with T.init():
            for i1 in range(128):
                with T.block("B_init"):
                    ii = T.axis.spatial(128, i1)
                    B[ii] = T.float32(0)
        for k, i in T.grid(128, 128):
            with T.block("B"):
                vk, vi = T.axis.remap("RS", [k, i])
                B[vi] = B[vi] + A[vi, vk]
"#;

#[test]
fn a_blockized_row_sum_has_tvms_structure() {
    let got = compile(ROWSUM, &Request { schedule: Some("s".into()), ..Request::default() })
        .unwrap_or_else(|d| panic!("{d:?}"))
        .scheduled;
    let want = tirc::compile::load(EXPECTED, &[]).unwrap_or_else(|d| panic!("{d:?}")).funcs.remove(0);
    assert!(
        func_eq(&got, &want),
        "got\n{}\nwant\n{}",
        tirc_ir::printer::print_func(&got),
        tirc_ir::printer::print_func(&want)
    );
}
