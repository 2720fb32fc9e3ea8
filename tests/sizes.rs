//! Size variables (`n: T.int32`, `m = T.int32()`): the function is compiled
//! for the values `-D` gives, at sizes no tile divides, and checked on the
//! simulator; a missing value, one that is not positive, or one the file
//! does not declare is an error that names it.

use tirc::compile::{compile, Request};
use tirc::verify::sim_check;
use tirc_tests::{read, root};

fn request(schedule: Option<&str>, defines: &[(&str, i64)]) -> Request {
    Request {
        schedule: schedule.map(Into::into),
        func: None,
        defines: defines.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        params: vec![],
    }
}

#[test]
fn size_variables_take_their_values_from_defines() {
    let src = read(&root().join("tests/data/sizes/rows.tir"));
    for (m, n) in [(1, 1), (17, 5), (33, 40)] {
        for schedule in [None, Some("tiled")] {
            let c = compile(&src, &request(schedule, &[("m", m), ("n", n)]))
                .unwrap_or_else(|e| panic!("m={m} n={n} {schedule:?}: {}", e[0].message));
            let params: Vec<_> = c.original.params.iter().map(|b| b.const_shape()).collect();
            assert_eq!(params, vec![Some(vec![m, n]), Some(vec![m, n])]);
            let (e, tol) = sim_check(&c.original, &c.first().lowered, 5).unwrap_or_else(|x| panic!("{x}"));
            assert!(e.rel_err <= tol && e.non_finite == 0, "m={m} n={n} {schedule:?}: {:.3e}", e.rel_err);
        }
    }
}

#[test]
fn a_missing_or_unknown_size_is_named() {
    let src = read(&root().join("tests/data/sizes/rows.tir"));
    let Err(e) = compile(&src, &request(None, &[("n", 8)])) else { panic!("compiled without m") };
    assert_eq!(e.len(), 1, "one error, not one per use: {:?}", e.iter().map(|d| &d.message).collect::<Vec<_>>());
    assert!(e[0].message.contains("`m`") && e[0].message.contains("-D m="), "{}", e[0].message);
    assert!(e[0].span.is_some());
    let Err(e) = compile(&src, &request(None, &[("n", 8), ("m", 8), ("k", 3)])) else { panic!("compiled with -D k") };
    assert!(e[0].message.contains("-D k"), "{}", e[0].message);
    for bad in [0, -5] {
        let Err(e) = compile(&src, &request(None, &[("n", 8), ("m", bad)])) else { panic!("compiled with m={bad}") };
        assert_eq!(e.len(), 1, "one error, not one per use: {:?}", e.iter().map(|d| &d.message).collect::<Vec<_>>());
        assert!(e[0].message.contains(&format!("-D m={bad}")) && e[0].span.is_some(), "{}", e[0].message);
    }
}
