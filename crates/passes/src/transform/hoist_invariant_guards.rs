//! `hoist_invariant_guards`: a guard that is the same in every iteration of
//! a loop is tested once, before the loop.
//!
//! `for k in range(K): if c: S`, where `c` does not name `k`, reads no
//! memory and divides by no variable, becomes `if c: for k in range(K): S`
//! (TVM's `HoistIfThenElse`). The loops are rewritten innermost first, so a
//! guard rises through every loop it does not depend on. Only a loop whose
//! whole body is the `if`, with no `else`, is rewritten: the loop then does
//! nothing when `c` is false, before as after. Vectorized loops are left
//! alone (code generation reads a guarded vector copy there).
//!
//! What it is for: the boundary copy of a kernel that `loop_partition` made
//! keeps conditions on thread indices alone (`blockIdx_y * 1024 +
//! threadIdx_x < N`: a thread wholly past the edge), which `relax_guards`
//! and `relax_edge_guards` leave in place. Inside the reduction loop, such a
//! test made the CUDA compiler branch in every iteration and not unroll the
//! loop for the threads that have work; hoisted, they run the loop of the
//! interior tiles and the others skip it.

use tirc_ir::{BinOp, Diagnostic, Expr, ForKind, PrimFunc, Stmt};

pub fn run(mut f: PrimFunc) -> Result<PrimFunc, Diagnostic> {
    f.body = hoist(&f.body);
    Ok(f)
}

fn hoist(s: &Stmt) -> Stmt {
    let Stmt::For(l) = s else { return s.map_children(hoist) };
    let body = hoist(&l.body);
    match body {
        Stmt::If { cond, then, orelse: None } if l.kind != ForKind::Vectorized && invariant(&cond, l) => {
            let inner = Stmt::For(Box::new(l.with_body(*then)));
            Stmt::If { cond, then: Box::new(inner), orelse: None }
        }
        body => Stmt::For(Box::new(l.with_body(body))),
    }
}

/// Whether `c` has one value in every iteration of `l` and may be computed
/// where the loop would not run: it names no variable of the loop, loads
/// nothing, calls nothing, and divides only by constants.
fn invariant(c: &Expr, l: &tirc_ir::For) -> bool {
    let mut ok = !c.uses(&l.var);
    c.walk(&mut |x| match x {
        Expr::Load(..) | Expr::Call(..) => ok = false,
        Expr::Binary(BinOp::Div | BinOp::FloorDiv | BinOp::FloorMod, _, d) => {
            ok &= matches!(d.as_int(), Some(v) if v != 0)
        }
        _ => {}
    });
    ok
}
