//! `tirc fmt FILE [--check]`: prints the canonical text; with `--check`,
//! exit status 0 for a canonical file and 1, naming the line, for another;
//! bad input is a diagnostic and exit status 1.

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
    let o = tirc(&["fmt", "--check", "golden/matmul/step2.tir"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let o = tirc(&["fmt", "--check", "tests/data/tvm/step2_scheduled.tir"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("step2_scheduled.tir:") && err.contains("not in canonical form"), "{err}");
}

#[test]
fn fmt_prints_what_fmt_check_accepts() {
    let o = tirc(&["fmt", "tests/data/tvm/step2_scheduled.tir"]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(out.contains("with T.block(\"C\"):"), "{out}");
    let tmp = std::env::temp_dir().join(format!("tirc-fmt-{}.tir", std::process::id()));
    std::fs::write(&tmp, &out).expect("write");
    let o = tirc(&["fmt", "--check", tmp.to_str().unwrap_or_default()]);
    std::fs::remove_file(&tmp).ok();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn fmt_of_bad_input_is_a_diagnostic() {
    let o = tirc(&["fmt", "tests/data/err/unknown_dtype.tir"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown data type"));
}
