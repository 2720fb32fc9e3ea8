//! The user's own data in and out of `tirc run`: `--input NAME=FILE.npy`
//! replaces the random contents of a parameter, `--output NAME=FILE.npy`
//! saves one after the run; a file that does not fit its parameter is bad
//! input (exit 1) with a message that names the parameter.

use std::path::PathBuf;
use std::process::{Command, Output};
use tirc_exec::data::HostData;
use tirc_exec::npy;
use tirc_ir::DType;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn tirc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tirc")).current_dir(root()).args(args).output().expect("tirc runs")
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tirc-io-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(path: &std::path::Path, t: DType, shape: &[usize], d: &HostData) {
    std::fs::write(path, npy::to_bytes(t, shape, d).unwrap()).unwrap();
}

const MATMUL: [&str; 12] =
    ["run", "ir-examples/matmul.tir", "-s", "step2", "-D", "M=12", "-D", "N=8", "-D", "K=5", "--target", "sim"];

#[test]
fn inputs_from_npy_give_the_product_written_to_npy() {
    let dir = scratch("product");
    let (m, n, k) = (12, 8, 5);
    let a: Vec<f32> = (0..m * k).map(|x| (x % 7) as f32 - 3.0).collect();
    let b: Vec<f32> = (0..k * n).map(|x| (x % 5) as f32 * 0.5).collect();
    write(&dir.join("a.npy"), DType::F32, &[m, k], &HostData::F32(a.clone()));
    write(&dir.join("b.npy"), DType::F32, &[k, n], &HostData::F32(b.clone()));
    let arg = |s: &str| format!("{s}={}", dir.join(format!("{}.npy", s.to_lowercase())).display());
    let (ia, ib, oc) = (arg("A"), arg("B"), arg("C"));
    let mut args = MATMUL.to_vec();
    args.extend(["--input", &ia, "--input", &ib, "--output", &oc]);
    let o = tirc(&args);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let c = npy::host_data(&std::fs::read(dir.join("c.npy")).unwrap(), DType::F32, &[m, n]).unwrap();
    for i in 0..m {
        for j in 0..n {
            let want: f32 = (0..k).map(|l| a[i * k + l] * b[l * n + j]).sum();
            assert_eq!(c.get(i * n + j), want as f64, "C[{i}, {j}]");
        }
    }
}

#[test]
fn a_file_that_does_not_fit_its_parameter_is_bad_input_naming_it() {
    let dir = scratch("misfit");
    write(&dir.join("f64.npy"), DType::F64, &[12, 5], &HostData::F64(vec![0.5; 60]));
    write(&dir.join("shape.npy"), DType::F32, &[5, 12], &HostData::F32(vec![0.5; 60]));
    std::fs::write(dir.join("text.npy"), "A,B\n1,2\n").unwrap();
    let cases = [
        ("--input", format!("A={}", dir.join("f64.npy").display()), "--input A"),
        ("--input", format!("A={}", dir.join("shape.npy").display()), "[5, 12]"),
        ("--input", format!("A={}", dir.join("text.npy").display()), "not a .npy file"),
        ("--input", format!("A={}", dir.join("absent.npy").display()), "cannot read"),
        ("--input", format!("X={}", dir.join("f64.npy").display()), "its parameters: A, B, C"),
        ("--output", format!("Y={}", dir.join("y.npy").display()), "no parameter `Y`"),
    ];
    for (flag, value, says) in cases {
        let mut args = MATMUL.to_vec();
        args.extend([flag, value.as_str()]);
        let o = tirc(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{flag} {value}: {err}");
        assert!(err.contains(says), "{flag} {value}: expected `{says}` in: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let mut args = MATMUL.to_vec();
    args.extend(["--input", "A"]);
    assert_eq!(tirc(&args).status.code(), Some(2), "NAME=FILE without `=` is a usage error");
}
