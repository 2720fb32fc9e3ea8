//! `tirc fmt FILE [--check | --write]`: normalises the layout and keeps
//! everything else as written; `--canonical` prints the functions as tirc's
//! printer writes them. `--check` exits 0 for a formatted file and 1,
//! naming the line, for another; bad input is a diagnostic and exit 1.

use std::path::PathBuf;
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn tirc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tirc")).current_dir(root()).args(args).output().expect("tirc runs")
}

#[test]
fn fmt_check_accepts_canonical_text_and_names_the_first_difference() {
    let o = tirc(&["fmt", "--canonical", "--check", "golden/matmul/step2.tir"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let o = tirc(&["fmt", "--canonical", "--check", "tests/data/tvm/step2_scheduled.tir"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("step2_scheduled.tir:") && err.contains("not in canonical form"), "{err}");
}

#[test]
fn fmt_prints_what_fmt_check_accepts() {
    let o = tirc(&["fmt", "--canonical", "tests/data/tvm/step2_scheduled.tir"]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(out.contains("with T.block(\"C\"):"), "{out}");
    let tmp = std::env::temp_dir().join(format!("tirc-fmt-{}.tir", std::process::id()));
    std::fs::write(&tmp, &out).expect("write");
    let o = tirc(&["fmt", "--canonical", "--check", tmp.to_str().unwrap_or_default()]);
    std::fs::remove_file(&tmp).ok();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn fmt_of_bad_input_is_a_diagnostic() {
    // The canonical form needs a function that resolves; the layout, one that parses.
    let o = tirc(&["fmt", "--canonical", "tests/data/err/unknown_dtype.tir"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown data type"));
    let o = tirc(&["fmt", "tests/data/err/unknown_dtype.tir"]);
    assert_eq!(o.status.code(), Some(0), "a layout needs no dtype: {}", String::from_utf8_lossy(&o.stderr));
    let o = tirc(&["fmt", "tests/data/err/missing_colon.tir"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("missing_colon.tir:"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

const MESSY: &str = "# A matmul, written carelessly.\nM  =  64   # rows\nN=32\nK = 16\n\n\n\n@T.prim_func\ndef matmul(A : T.Buffer((M,K),\"float32\"), B: T.Buffer((K, N), \"float32\"), C: T.Buffer((M, N), \"float32\")):\n  for i,j,k in T.grid(M,N,K):\n      with T.block(\"C\"):\n          vi,vj,vk=T.axis.remap(\"SSR\",[i,j,k])\n          # accumulate\n          with T.init():\n              C[vi,vj]=T.float32(0)\n          C[vi,vj]=C[vi,vj]+A[vi,vk]*B[vk,vj]\n";

#[test]
fn fmt_keeps_constants_names_and_comments_and_write_formats_in_place() {
    let tmp = std::env::temp_dir().join(format!("tirc-fmt-messy-{}.tir", std::process::id()));
    std::fs::write(&tmp, MESSY).unwrap();
    let path = tmp.to_str().unwrap_or_default();
    let o = tirc(&["fmt", "--check", path]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains(":2: not formatted"), "{}", String::from_utf8_lossy(&o.stderr));
    let o = tirc(&["fmt", "--write", path]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&tmp).unwrap();
    for kept in [
        "# A matmul, written carelessly.",
        "M = 64  # rows",
        "N = 32",
        "        # accumulate",
        "for i, j, k in T.grid(M, N, K):",
    ] {
        assert!(text.contains(kept), "`{kept}` missing from:\n{text}");
    }
    assert!(!text.contains("\n\n\n\n"), "at most two blank lines: {text}");
    assert!(!text.contains("T.reads"), "nothing is added: {text}");
    assert_eq!(tirc(&["fmt", "--check", path]).status.code(), Some(0));
    // The constants are still there for -D.
    let o = tirc(&["run", path, "-D", "M=8", "--target", "sim"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("check: ok"));
    std::fs::remove_file(&tmp).ok();
}

#[test]
fn every_shipped_example_is_formatted() {
    for e in std::fs::read_dir(root().join("ir-examples")).unwrap().flatten() {
        let p = e.path();
        let o = tirc(&["fmt", "--check", p.to_str().unwrap_or_default()]);
        assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    }
}
