//! Text that TVM prints reads unchanged: every `tests/data/tvm/*.tir` (the
//! seeds' lowered listings verbatim, and `sch.mod.script()` output of their
//! schedules in TVM's older and newer spellings) parses and resolves, and
//! every function in it round-trips: `parse(print(ir))` equals `ir`, and
//! printing is idempotent.

use tirc::compile::load;
use tirc_ir::printer::print_func;
use tirc_ir::structural_eq::func_eq;
use tirc_ir::PrimFunc;
use tirc_tests::{read, root};

fn roundtrip(what: &str, f: &PrimFunc) {
    let text = print_func(f);
    let m = load(&text, &[]).unwrap_or_else(|e| {
        let shown: String = e.iter().map(|d| d.render(what, &text)).collect();
        panic!("{what}: printed text does not parse:\n{shown}\n{text}")
    });
    let [g] = &m.funcs[..] else { panic!("{what}: expected one function") };
    assert!(func_eq(f, g), "{what}: parse(print(ir)) differs from ir\n{text}\n---\n{}", print_func(g));
    assert_eq!(text, print_func(g), "{what}: printing is not idempotent");
}

#[test]
fn tvm_printed_text_parses_and_round_trips() {
    let mut files: Vec<_> = std::fs::read_dir(root().join("tests/data/tvm"))
        .map(|d| d.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "tir")).collect())
        .unwrap_or_default();
    files.sort();
    assert!(!files.is_empty(), "no TVM text in tests/data/tvm");
    let mut failures = Vec::new();
    for p in &files {
        let name = p.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
        let src = read(p);
        match load(&src, &[]) {
            Ok(m) => {
                assert!(!m.funcs.is_empty(), "{name}: no prim_func");
                for f in &m.funcs {
                    roundtrip(&format!("{name} {}", f.name), f);
                }
            }
            Err(ds) => failures.push(ds.iter().map(|d| d.render(&name, &src)).collect::<String>()),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
