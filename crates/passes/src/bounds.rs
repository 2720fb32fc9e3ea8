//! Symbolic bounds: the interval an index expression spans while some loop
//! variables run over their ranges and the others stay fixed.
//!
//! `relax(e, vars)` returns `(lo, hi)`, both inclusive, as expressions over
//! the variables that were not relaxed. It is exact for sums of relaxed
//! variables with constant coefficients and an over-approximation through
//! `floordiv`, `floormod`, `min` and `max` by constants; anything else that
//! depends on a relaxed variable (a product of two variables, a load) gives
//! `None`. `union` merges two intervals when their ends can be compared.
//! Compute-at, cache placement and buffer compaction size their regions with
//! these.

use crate::arith::Analyzer;
use tirc_ir::structural_eq::same_expr;
use tirc_ir::{BinOp, Expr, Range, Var};

/// A variable and the range it runs over: `min .. min + extent`.
pub type Relaxed = (Var, Expr, Expr);

/// The inclusive bounds of `e` while each variable of `vars` runs over its
/// range.
pub fn relax(e: &Expr, vars: &[Relaxed]) -> Option<(Expr, Expr)> {
    let an = Analyzer::new();
    let (lo, hi) = go(e, vars)?;
    Some((an.simplify(&lo), an.simplify(&hi)))
}

fn go(e: &Expr, vars: &[Relaxed]) -> Option<(Expr, Expr)> {
    let depends = vars.iter().any(|(v, _, _)| e.uses(v));
    if !depends {
        return Some((e.clone(), e.clone()));
    }
    // A product with its constant on the left (`2 * i`, as TVMScript is
    // written) is the product with it on the right.
    if let Expr::Binary(BinOp::Mul, a, b) = e {
        if a.as_int().is_some() && b.as_int().is_none() {
            return go(&Expr::binary(BinOp::Mul, (**b).clone(), (**a).clone()), vars);
        }
    }
    match e {
        Expr::Var(v) => {
            let (_, min, extent) = vars.iter().find(|(x, _, _)| x == v)?;
            // A relaxed range may itself speak of relaxed variables.
            let (lo, _) = go(min, vars)?;
            let (_, hi) = go(&(min.clone() + extent.clone() - Expr::int(1)), vars)?;
            Some((lo, hi))
        }
        Expr::Binary(op, a, b) => {
            let (al, ah) = go(a, vars)?;
            match op {
                BinOp::Add => {
                    let (bl, bh) = go(b, vars)?;
                    Some((al + bl, ah + bh))
                }
                BinOp::Sub => {
                    let (bl, bh) = go(b, vars)?;
                    Some((al - bh, ah - bl))
                }
                BinOp::Mul => {
                    let c = b.as_int()?;
                    if c >= 0 {
                        Some((al * Expr::int(c), ah * Expr::int(c)))
                    } else {
                        Some((ah * Expr::int(c), al * Expr::int(c)))
                    }
                }
                // Both divisions are monotonic in the dividend; each keeps
                // its own rounding (a truncating one of a negative bound
                // rounds up, where floor division rounds down).
                BinOp::FloorDiv | BinOp::Div if b.as_int().is_some_and(|c| c > 0) => {
                    let c = Expr::int(b.as_int()?);
                    Some((Expr::binary(*op, al, c.clone()), Expr::binary(*op, ah, c)))
                }
                BinOp::FloorMod if b.as_int().is_some_and(|c| c > 0) => {
                    let c = b.as_int()?;
                    Some((Expr::int(0), Expr::int(c - 1)))
                }
                BinOp::Min | BinOp::Max => {
                    let (bl, bh) = go(b, vars)?;
                    Some((Expr::binary(*op, al, bl), Expr::binary(*op, ah, bh)))
                }
                _ => None,
            }
        }
        // A cast keeps the bounds where it cannot wrap: to a type as wide
        // as the value's, or to 32 bits and more (indices). A narrower one
        // (`int8` of -129 is 127) gives none.
        Expr::Cast(t, x) if t.is_int() && (t.bytes() >= x.dtype().bytes() || t.bytes() >= 4) => go(x, vars),
        _ => None,
    }
}

/// The range of every loop in `s` (each variable has one binder).
pub fn loop_ranges(s: &tirc_ir::Stmt) -> Vec<Relaxed> {
    let mut out = Vec::new();
    s.walk(&mut |x| {
        if let tirc_ir::Stmt::For(f) = x {
            out.push((f.var.clone(), f.min.clone(), f.extent.clone()));
        }
    });
    out
}

/// Whether `a <= b` wherever the variables of `ranges` are: their
/// difference is a constant, or its least value over them is, and neither
/// is negative.
pub fn provably_le(an: &Analyzer, a: &Expr, b: &Expr, ranges: &[Relaxed]) -> bool {
    let d = an.simplify(&(b.clone() - a.clone()));
    d.as_int().or_else(|| relax(&d, ranges).and_then(|(lo, _)| lo.as_int())).is_some_and(|x| x >= 0)
}

/// A condition `p < c` or `p <= c`, `c` a constant: `p` and the largest
/// value it allows.
pub fn upper_bound(g: &Expr) -> Option<(&Expr, i64)> {
    match g {
        Expr::Binary(BinOp::Lt, p, c) => Some((p, c.as_int()?.checked_sub(1)?)),
        Expr::Binary(BinOp::Le, p, c) => Some((p, c.as_int()?)),
        _ => None,
    }
}

/// [`relax`] under conditions that hold wherever `e` is evaluated (a
/// block's `T.where` or the `if`s around an access, split in their
/// `and`-ed parts). A part `p < c` (or `p <= c`), `c` a constant below the
/// largest value of `p`, narrows `e` two ways:
/// - where `p` occurs in `e` as it is written, it stands for a new
///   variable that runs only up to `c - 1`: the fused copy of a 32×32 tile
///   split by 32 × 32 × 4 threads (4096 slots for 1024 elements, under
///   `f < 1024`) indexes `(f // 32, f % 32)`, 32 rows, not 128;
/// - where `e` is `p` plus terms of variables `p` does not use, `e` is
///   capped at those terms' largest value plus `c - 1`: a tile of 16 split
///   by 3 (`j1 * 3 + j2 < 16`, loops reaching 18) gives its 16 elements.
///
/// Guards of any other form, or whose bound is not a constant, are left
/// out (the interval stays as large as without them).
pub fn relax_guarded(e: &Expr, vars: &[Relaxed], guards: &[Expr]) -> Option<(Expr, Expr)> {
    let mut e = e.clone();
    let mut vars = vars.to_vec();
    for (n, g) in guards.iter().enumerate() {
        let Some((p, last)) = upper_bound(g) else { continue };
        if !vars.iter().any(|(v, _, _)| p.uses(v)) || !contains(&e, p) {
            continue;
        }
        let Some((lo, hi)) = relax(p, &vars) else { continue };
        if hi.as_int().is_none_or(|h| h <= last) {
            continue;
        }
        // (`last` is below `hi`, so `last + 1` fits.)
        let t = Var::new(format!("guarded_{n}"), p.dtype());
        e = replace(&e, p, &Expr::Var(t.clone()));
        vars.push((t, lo.clone(), Expr::int(last + 1) - lo));
    }
    let (lo, mut hi) = relax(&e, &vars)?;
    for capped in caps_beside(&e, &vars, guards, false) {
        // Keep the tighter of the two where they compare.
        if Analyzer::new().simplify(&(hi.clone() - capped.clone())).as_int().is_some_and(|d| d > 0) {
            hi = capped;
        }
    }
    Some((lo, hi))
}

/// The second way of [`relax_guarded`]: for each guard `p < c` whose `p`
/// reaches past `c - 1`, where `e` is `p` plus terms of variables `p` does
/// not use, those terms' largest value plus `c - 1`. A `p` whose largest
/// value is not a known constant counts as reaching past where
/// `unknown_passes`.
fn caps_beside(e: &Expr, vars: &[Relaxed], guards: &[Expr], unknown_passes: bool) -> Vec<Expr> {
    let mut caps = Vec::new();
    for g in guards {
        let Some((p, last)) = upper_bound(g) else { continue };
        let in_p: Vec<&Var> = vars.iter().map(|(v, _, _)| v).filter(|v| p.uses(v)).collect();
        let passes = match relax(p, vars).and_then(|(_, h)| h.as_int()) {
            Some(h) => h > last,
            None => unknown_passes,
        };
        if in_p.is_empty() || !passes {
            continue;
        }
        let rest = Analyzer::new().simplify(&(e.clone() - p.clone()));
        if in_p.iter().any(|v| rest.uses(v)) {
            continue;
        }
        let Some((_, rest_hi)) = relax(&rest, vars) else { continue };
        caps.push(Analyzer::new().simplify(&(rest_hi + Expr::int(last))));
    }
    caps
}

/// The upper bounds of `e` that [`relax_guarded`]'s second way gives
/// under `guards` (the terms of `e` outside a guarded part `p < c`, at
/// their largest, plus `c - 1`), whether or not they compare with the
/// bound without guards: `j0 * 208 + c1o * 64 + c1i` under
/// `c1o * 64 + c1i < 208` (the last chunk of 64 of a tile of 208) is at
/// most `j0 * 208 + 207`, which the unguarded `j0 * 208 + c1o * 64 + 63`
/// passes at `c1o = 3` only.
pub fn guard_caps(e: &Expr, vars: &[Relaxed], guards: &[Expr]) -> Vec<Expr> {
    use tirc_ir::BinOp;
    let e = &Analyzer::new().simplify(e);
    let relaxed = |x: &Expr| vars.iter().any(|(v, _, _)| x.uses(v));
    match e {
        // A floor division by a positive constant keeps the order: the cap
        // of `(f0 * 90 + f1) // 30` under `f1 < 90` is `(f0 * 90 + 89) // 30`.
        Expr::Binary(BinOp::FloorDiv, inner, d) if d.as_int().is_some_and(|k| k > 0) => {
            return guard_caps(inner, vars, guards)
                .into_iter()
                .map(|c| Analyzer::new().simplify(&Expr::binary(BinOp::FloorDiv, c, (**d).clone())))
                .collect();
        }
        // A term of no relaxed loop beside one: `f0 * 3 + (f1 // 30)`.
        Expr::Binary(BinOp::Add, a, b) if !relaxed(a) || !relaxed(b) => {
            let (fixed, part) = if relaxed(a) { (b, a) } else { (a, b) };
            if matches!(**part, Expr::Binary(BinOp::FloorDiv, ..)) {
                return guard_caps(part, vars, guards)
                    .into_iter()
                    .map(|c| Analyzer::new().simplify(&((**fixed).clone() + c)))
                    .collect();
            }
        }
        _ => {}
    }
    // (Whether `p` may pass `c` at all can depend on the loops outside the
    // relaxed ones: the caller compares the cap with its bound.)
    caps_beside(e, vars, guards, true)
}

fn contains(e: &Expr, part: &Expr) -> bool {
    let mut found = false;
    e.walk(&mut |x| found |= same_expr(x, part));
    found
}

/// `e` with every occurrence of `part` replaced by `by`.
fn replace(e: &Expr, part: &Expr, by: &Expr) -> Expr {
    if same_expr(e, part) {
        return by.clone();
    }
    e.map_children(|c| replace(c, part, by))
}

/// The smallest interval holding both, when their ends can be ordered.
pub fn union(a: &(Expr, Expr), b: &(Expr, Expr)) -> Option<(Expr, Expr)> {
    union_in(&Analyzer::new(), a, b)
}

/// `union`, with what `an` knows of the variables (the ranges of the loops
/// the bounds are taken in).
pub fn union_in(an: &Analyzer, a: &(Expr, Expr), b: &(Expr, Expr)) -> Option<(Expr, Expr)> {
    Some((pick(an, &a.0, &b.0, true)?, pick(an, &a.1, &b.1, false)?))
}

/// The smaller (or larger) of two expressions whose difference is constant.
fn pick(an: &Analyzer, x: &Expr, y: &Expr, smaller: bool) -> Option<Expr> {
    let d = an.simplify(&(x.clone() - y.clone())).as_int()?;
    Some(if (d <= 0) == smaller { x.clone() } else { y.clone() })
}

/// `(lo, hi)` as a range, when its extent is a constant.
pub fn to_range(lo: &Expr, hi: &Expr) -> Option<Range> {
    to_range_in(&Analyzer::new(), lo, hi)
}

/// `to_range`, with what `an` knows of the variables.
pub fn to_range_in(an: &Analyzer, lo: &Expr, hi: &Expr) -> Option<Range> {
    let extent = an.simplify(&(hi.clone() - lo.clone() + Expr::int(1)));
    extent.as_int()?;
    Some(Range::new(lo.clone(), extent))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tirc_ir::DType;

    #[test]
    fn affine_index_over_inner_loops() {
        let bx = Var::new("bx", DType::I32);
        let i = Var::new("i", DType::I32);
        let k = Var::new("k", DType::I32);
        let e = Expr::var(&bx) * Expr::int(32) + Expr::var(&i) * Expr::int(4) + Expr::var(&k);
        let (lo, hi) = relax(&e, &[(i, Expr::int(0), Expr::int(8)), (k, Expr::int(0), Expr::int(4))]).unwrap();
        let r = to_range(&lo, &hi).unwrap();
        assert_eq!(r.extent.as_int(), Some(32));
        assert!(tirc_ir::structural_eq::same_expr(&lo, &Analyzer::new().simplify(&(Expr::var(&bx) * Expr::int(32)))));
    }

    #[test]
    fn product_of_relaxed_variables_is_unknown() {
        let i = Var::new("i", DType::I32);
        let e = Expr::var(&i) * Expr::var(&i);
        assert!(relax(&e, &[(i, Expr::int(0), Expr::int(8))]).is_none());
    }

    #[test]
    fn floordiv_is_monotone() {
        let f = Var::new("f", DType::I32);
        let e = Expr::binary(BinOp::FloorDiv, Expr::var(&f), Expr::int(16));
        let (lo, hi) = relax(&e, &[(f, Expr::int(0), Expr::int(64))]).unwrap();
        assert_eq!((lo.as_int(), hi.as_int()), (Some(0), Some(3)));
    }
}
