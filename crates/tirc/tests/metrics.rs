//! The bytes a kernel must move, by which `--bench` reports GB/s: inputs
//! read once, outputs written once, an output the function initializes
//! only written, an updated one (read, then written) counted twice.

use tirc::measure::bytes_moved;

fn func(src: &str, defines: &[(&str, i64)]) -> tirc_ir::PrimFunc {
    let d: Vec<(String, i64)> = defines.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    let m = tirc::compile::load(src, &d).unwrap_or_else(|e| panic!("{e:?}"));
    m.funcs[0].clone()
}

fn example(name: &str) -> String {
    std::fs::read_to_string(format!("{}/../../ir-examples/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

#[test]
fn matmul_reads_a_and_b_and_only_writes_c() {
    let f = func(&example("matmul.tir"), &[("M", 64), ("N", 32), ("K", 16)]);
    assert_eq!(bytes_moved(&f), 4.0 * (64.0 * 16.0 + 16.0 * 32.0 + 64.0 * 32.0));
}

#[test]
fn transpose_reads_its_input_and_writes_its_output() {
    let f = func(&example("transpose.tir"), &[("M", 40), ("N", 24)]);
    assert_eq!(bytes_moved(&f), 2.0 * 4.0 * 40.0 * 24.0);
}

#[test]
fn an_updated_buffer_is_read_and_written() {
    let src = "@T.prim_func
def acc(A: T.Buffer((8, 4), \"float16\"), B: T.Buffer((8, 4), \"float16\")):
    for i, j in T.grid(8, 4):
        with T.block(\"B\"):
            vi, vj = T.axis.remap(\"SS\", [i, j])
            B[vi, vj] = B[vi, vj] + A[vi, vj]
";
    assert_eq!(bytes_moved(&func(src, &[])), 2.0 * 8.0 * 4.0 * 3.0);
}
