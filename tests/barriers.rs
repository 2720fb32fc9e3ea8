//! Barriers: the lowered shared-memory kernels are free of races on the
//! simulator, and taking away any one of their barriers is caught as a race
//! that names the buffer and the threads.

use tirc::compile::{compile, Request};
use tirc::verify::sim_check;
use tirc_ir::{PrimFunc, Stmt};
use tirc_tests::{read, root, test_sizes};

/// The function with its `n`-th barrier (in program order) removed.
fn without_barrier(f: &PrimFunc, n: usize) -> PrimFunc {
    fn go(s: &Stmt, n: usize, seen: &mut usize) -> Stmt {
        if let Stmt::Barrier = s {
            *seen += 1;
            return if *seen == n + 1 { Stmt::NoOp } else { Stmt::Barrier };
        }
        s.map_children(|c| go(c, n, seen))
    }
    let mut g = f.clone();
    g.body = go(&f.body, n, &mut 0);
    g
}

fn count_barriers(f: &PrimFunc) -> usize {
    let mut n = 0;
    f.body.walk(&mut |s| n += matches!(s, Stmt::Barrier) as usize);
    n
}

#[test]
fn removing_any_barrier_is_caught() {
    let path = root().join("ir-examples/matmul.tir");
    let src = read(&path);
    // K a multiple of the k-tile, so that the loop over k-tiles stays a
    // loop: `loop_partition` peels a partial last tile, and the barrier at
    // the top of a peeled first iteration guards nothing.
    let mut defines = test_sizes(&src);
    defines.retain(|(k, _)| k != "K");
    defines.push(("K".into(), 64));
    let mut tested = 0;
    for schedule in ["step3"] {
        let req = Request { schedule: Some(schedule.into()), defines: defines.clone(), ..Request::default() };
        let c = compile(&src, &req).unwrap_or_else(|e| panic!("{schedule}: {e:?}"));
        let n = count_barriers(&c.first().lowered);
        assert!(n >= 2, "{schedule}: expected barriers around the shared tiles, found {n}");
        let (e, tol) = sim_check(&c.original, &c.first().lowered, 7).unwrap_or_else(|m| panic!("{schedule}: {m}"));
        assert!(e.rel_err <= tol, "{schedule}: rel_err {:.3e}", e.rel_err);
        for i in 0..n {
            let broken = without_barrier(&c.first().lowered, i);
            match sim_check(&c.original, &broken, 7) {
                Err(m) => assert!(m.contains("race on shared memory"), "{schedule} without barrier {i}: {m}"),
                Ok(_) => panic!("{schedule}: removing barrier {i} of {n} went unnoticed"),
            }
            tested += 1;
        }
    }
    assert!(tested > 0);
}
