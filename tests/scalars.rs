//! Scalar parameters (`alpha: T.float32`): values of the computation the
//! caller passes, as TVM declares them. The kernels take them by value
//! after the sizes, one CUDA source for every value; `Compiled::bind_scalars`
//! gives them a `-D` value or one drawn from the seed, rounded to the
//! parameter's type, and the simulator runs the kernels with it. A loop
//! bound, index or shape of a float is an error at its span; a fractional
//! `-D` is for scalar parameters only.

use tirc::compile::{compile, Compiled, Request};
use tirc::verify::sim_check_kernels;
use tirc_tests::{read, root};

fn source() -> String {
    read(&root().join("tests/data/sizes/scalars.tir"))
}

fn compiled(schedule: &str, fractions: &[(&str, f64)]) -> Result<Compiled, String> {
    let req = Request {
        schedule: Some(schedule.into()),
        fractions: fractions.iter().map(|(n, x)| (n.to_string(), *x)).collect(),
        ..Request::default()
    };
    compile(&source(), &req).map_err(|ds| ds[0].message.clone())
}

fn values(v: &[(&str, f64)]) -> Vec<(String, f64)> {
    v.iter().map(|(n, x)| (n.to_string(), *x)).collect()
}

/// The bound compilation's kernels checked against its reference.
fn check(c: &Compiled, what: &str) {
    let kernels: Vec<_> = c.kernels.iter().map(|k| k.lowered.clone()).collect();
    let (e, tol) =
        sim_check_kernels(&c.original, &kernels, &c.intermediates, 3).unwrap_or_else(|x| panic!("{what}: {x}"));
    assert!(e.rel_err <= tol && e.non_finite == 0, "{what}: rel_err {:.3e}", e.rel_err);
}

#[test]
fn scalars_are_kernel_arguments_and_every_value_runs() {
    for schedule in ["fused", "two_kernels"] {
        let c = compiled(schedule, &[]).unwrap_or_else(|e| panic!("{schedule}: {e}"));
        let names: Vec<&str> = c.original.scalars.iter().map(|v| v.name()).collect();
        assert_eq!(names, ["alpha", "beta"]);
        for k in &c.kernels {
            assert!(
                k.cuda.source.contains("float alpha, float beta)"),
                "{schedule}: by value, last:\n{}",
                k.cuda.source
            );
        }
        for (alpha, beta) in [(2.0, -0.5), (0.0, 1.0), (-1.25, 0.0)] {
            let b = c.clone().bind_scalars(&[], &values(&[("alpha", alpha), ("beta", beta)]), 1);
            for (k, generic) in b.kernels.iter().zip(&c.kernels) {
                assert_eq!(k.cuda.source, generic.cuda.source, "one source for every value");
                assert_eq!(k.cuda.scalar_values, vec![alpha, beta]);
                assert!(k.lowered.scalars.is_empty(), "the simulated kernel takes the values as constants");
            }
            assert!(b.scalar_values.iter().all(|(_, _, random)| !random));
            check(&b, &format!("{schedule} alpha={alpha} beta={beta}"));
        }
    }
}

#[test]
fn a_whole_number_define_gives_a_scalar_its_value() {
    let c = compiled("fused", &[]).unwrap();
    let b = c.bind_scalars(&[("alpha".into(), 3)], &values(&[("beta", 0.5)]), 1);
    let got: Vec<f64> = b.scalar_values.iter().map(|(_, x, _)| *x).collect();
    assert_eq!(got, [3.0, 0.5]);
    check(&b, "alpha=3");
}

#[test]
fn a_scalar_without_a_value_is_drawn_from_the_seed() {
    let c = compiled("fused", &[]).unwrap();
    let draw = |seed| c.clone().bind_scalars(&[], &[], seed).scalar_values;
    let (a, again, other) = (draw(7), draw(7), draw(8));
    assert!(a.iter().all(|(_, x, random)| *random && (-1.0..1.0).contains(x)), "{a:?}");
    let xs = |v: &[(tirc_ir::Var, f64, bool)]| v.iter().map(|(_, x, _)| *x).collect::<Vec<_>>();
    assert_eq!(xs(&a), xs(&again), "the same seed, the same values");
    assert_ne!(xs(&a), xs(&other));
    check(&c.clone().bind_scalars(&[], &[], 7), "random values");
}

#[test]
fn a_half_scalar_is_rounded_to_its_type() {
    let c = compiled("half_threads", &[]).unwrap();
    assert!(c.first().cuda.source.contains("half s)"), "{}", c.first().cuda.source);
    let b = c.bind_scalars(&[], &values(&[("s", 0.1)]), 1);
    assert_eq!(b.first().cuda.scalar_values, vec![0.0999755859375], "0.1 as the nearest float16");
    check(&b, "s=0.1");
}

#[test]
fn a_fraction_for_anything_but_a_scalar_is_an_error() {
    let e = compiled("fused", &[("M", 0.5)]).err().expect("M=0.5 accepted");
    assert!(e.contains("-D M=0.5") && e.contains("not a scalar parameter"), "{e}");
    let e = compiled("fused", &[("alpa", 0.5)]).err().expect("an unknown name accepted");
    assert!(e.contains("`alpa`"), "{e}");
}

#[test]
fn a_value_its_type_cannot_hold_is_an_error() {
    let e = compiled("fused", &[("alpha", 1e40)]).err().expect("alpha=1e40 accepted as infinity");
    assert!(e.contains("-D alpha=1e40") && e.contains("float32"), "{e}");
    let e = compiled("half_threads", &[("s", 70000.0)]).err().expect("s=70000 accepted as a float16 infinity");
    assert!(e.contains("-D s=70000.0") && e.contains("float16"), "{e}");
    let req =
        Request { schedule: Some("half_threads".into()), defines: vec![("s".into(), 65536)], ..Request::default() };
    let ds = compile(&source(), &req).err().expect("a whole number past float16's range accepted");
    assert!(ds[0].message.contains("-D s=65536.0") && ds[0].span.is_some(), "{:?}", ds[0]);
    assert!(compiled("half_threads", &[("s", 65504.0)]).is_ok(), "float16's largest value refused");
}

#[test]
fn the_printed_function_declares_its_scalars() {
    let c = compiled("fused", &[]).unwrap();
    let text = tirc_ir::printer::print_func(&c.original);
    assert!(text.contains("alpha: T.float32, beta: T.float32):"), "{text}");
    let again = tirc::compile::load(&format!("from tvm.script import tir as T\n\n{text}"), &[])
        .unwrap_or_else(|e| panic!("{}\n{text}", e[0].message));
    assert_eq!(again.funcs[0].scalars.len(), 2);
}
