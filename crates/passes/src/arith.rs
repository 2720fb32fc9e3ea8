//! Integer arithmetic: bounds of index expressions and their simplification.
//!
//! `Analyzer` knows the range of each loop and thread variable in scope.
//! `simplify` rewrites an integer expression to a canonical sum
//! `c1 * t1 + c2 * t2 + .. + c0`, terms in order of first appearance, like
//! the indices of TVM's lowered listings (`blockIdx_x * 16384 + threadIdx_x *
//! 512 + k`). Floor division and remainder by a positive constant are
//! resolved with the bounds: `(8 * a + b) // 8` is `a` when `0 <= b < 8`.
//! Conditions that the bounds decide become constants. Floating-point
//! arithmetic is never reassociated: only integer and boolean expressions
//! are rewritten.

use std::collections::HashMap;
use tirc_ir::structural_eq::same_expr;
use tirc_ir::{BinOp, DType, Expr, Var};

/// Inclusive integer bounds.
pub type Bound = (i64, i64);

/// The terms of a linear form: `(coefficient, term)`.
type Terms = Vec<(i64, Expr)>;

#[derive(Clone, Default)]
pub struct Analyzer {
    bounds: HashMap<usize, Bound>,
    /// Known relations between variables whose ranges alone do not decide
    /// them: `sum(c * t) <= k` (the interior of a grid of run-time size,
    /// `blockIdx_y * 64 + 64 <= m`).
    facts: Vec<(Terms, i64)>,
}

/// A canonical sum: `sum(coef * term) + constant`. A term is an expression
/// that is not itself a sum: a variable, a division, a product of variables.
#[derive(Clone, Debug)]
struct Sum {
    terms: Vec<(i64, Expr)>,
    constant: i64,
}

impl Analyzer {
    pub fn new() -> Analyzer {
        Analyzer::default()
    }

    /// Declares `v` to range over `[lo, hi]`.
    pub fn bind(&mut self, v: &Var, lo: i64, hi: i64) {
        self.bounds.insert(v.key(), (lo, hi));
    }

    /// Declares `v` to range over `min .. min + extent`, when both are known;
    /// an end of run-time sizes (`(k + 15) // 16`, a loop over the tiles of
    /// a run-time extent) is also kept as the fact `v < min + extent`, so
    /// that a test against the same sizes can be decided inside the loop.
    pub fn bind_range(&mut self, v: &Var, min: &Expr, extent: &Expr) {
        if let (Some((mlo, mhi)), Some((_, ehi))) = (self.bound(min), self.bound(extent)) {
            self.bind(v, mlo, mhi + ehi - 1);
        }
        // A fact about an earlier binding of `v` (a loop nested in one of
        // the same variable) does not hold of this one.
        self.forget_facts(v);
        let end = Expr::binary(BinOp::Add, min.clone(), extent.clone());
        if end.as_int().is_none() && self.bound(&end).is_some_and(|(lo, hi)| lo != hi) {
            self.assume(&Expr::binary(BinOp::Lt, Expr::var(v), end));
        }
    }

    /// Forgets `v`'s range and every fact about it.
    pub fn unbind(&mut self, v: &Var) {
        self.bounds.remove(&v.key());
        self.forget_facts(v);
    }

    fn forget_facts(&mut self, v: &Var) {
        self.facts.retain(|(terms, _)| !terms.iter().any(|(_, t)| t.uses(v)));
    }

    /// Declares the run-time sizes of a function (`PrimFunc::sizes`): each
    /// is at least 1 and at most `MAX_RUNTIME_SIZE` (checked when bound).
    pub fn bind_sizes(&mut self, sizes: &[Var]) {
        for v in sizes {
            self.bind(v, 1, tirc_ir::func::MAX_RUNTIME_SIZE);
        }
    }

    /// Declares a launch index `v` of `extent` blocks or threads: over
    /// `[0, extent)`, with an extent of run-time sizes bounded through theirs
    /// and kept as the fact `v < extent` (`bind_range`).
    pub fn bind_launch(&mut self, v: &Var, extent: &Expr) {
        self.bind_range(v, &Expr::int(0), extent);
        if let Some((_, hi)) = self.bound(extent) {
            self.bind(v, 0, (hi - 1).max(0));
        }
    }

    /// Assumes `cond`, an integer comparison, from here on (where the ranges
    /// do not decide it); used by `prove` and `simplify`.
    pub fn assume(&mut self, cond: &Expr) {
        if let Some((terms, k)) = self.as_fact(cond) {
            self.facts.push((terms, k));
        }
    }

    /// `cond` as `sum(c * t) <= k`, if it is an integer comparison.
    fn as_fact(&self, cond: &Expr) -> Option<(Terms, i64)> {
        let Expr::Binary(op, a, b) = cond else { return None };
        if !a.dtype().is_int() {
            return None;
        }
        // a < b: a - b <= -1; a <= b: a - b <= 0; a > b: b - a <= -1; ...
        let (diff, k): (Sum, i64) = match op {
            BinOp::Lt => (self.to_sum(&Expr::binary(BinOp::Sub, (**a).clone(), (**b).clone())), -1),
            BinOp::Le => (self.to_sum(&Expr::binary(BinOp::Sub, (**a).clone(), (**b).clone())), 0),
            BinOp::Gt => (self.to_sum(&Expr::binary(BinOp::Sub, (**b).clone(), (**a).clone())), -1),
            BinOp::Ge => (self.to_sum(&Expr::binary(BinOp::Sub, (**b).clone(), (**a).clone())), 0),
            _ => return None,
        };
        Some((diff.terms, k.checked_sub(diff.constant)?))
    }

    /// For a comparison `cond` of variables some of which `keep` names (a
    /// block index and the run-time sizes), the condition over the kept
    /// variables alone under which `cond` holds for every value the others
    /// take in their ranges: `blockIdx_y * 64 + threadIdx_y * 8 + i < m`
    /// with threads and loops relaxed gives `blockIdx_y * 64 + 64 <= m`.
    /// `None` when `cond` is not such a comparison or the others have no
    /// bounds. `assume` of the result proves `cond`.
    pub fn condition_for_all(&self, cond: &Expr, keep: &dyn Fn(&Var) -> bool) -> Option<Expr> {
        let (terms, k) = self.as_fact(cond)?;
        let is_kept = |t: &Expr| {
            let mut kept = true;
            t.walk(&mut |x| {
                if let Expr::Var(v) = x {
                    kept &= keep(v);
                }
                kept &= !matches!(x, Expr::Load(..));
            });
            kept
        };
        let (kept, relaxed): (Terms, Terms) = terms.into_iter().partition(|(_, t)| is_kept(t));
        if kept.is_empty() {
            return None;
        }
        let (_, hi) = self.sum_bound(&Sum { terms: relaxed, constant: 0 })?;
        // kept + relaxed <= k for all relaxed: kept <= k - max(relaxed).
        let bound = k.checked_sub(hi)?;
        let side = |sign: i64| {
            let terms: Vec<(i64, Expr)> =
                kept.iter().filter(|(c, _)| c.signum() == sign).map(|(c, t)| (c * sign, t.clone())).collect();
            Sum { terms, constant: 0 }
        };
        // positive terms - (negated negative terms) <= bound, printed as
        // `positive + (-bound) <= negative` when that reads better.
        let (mut lhs, rhs) = (side(1), side(-1));
        lhs.constant = -bound;
        let mut rhs_sum = rhs;
        if lhs.terms.is_empty() {
            rhs_sum.constant = bound;
            lhs.constant = 0;
        }
        // The guard is computed in 32 bits on the GPU: each side must fit.
        let fits = |s: &Sum| self.sum_bound(s).is_some_and(|(lo, hi)| lo >= i32::MIN as i64 && hi <= i32::MAX as i64);
        if !fits(&lhs) || !fits(&rhs_sum) {
            return None;
        }
        Some(Expr::binary(BinOp::Le, self.sum_to_expr(&lhs), self.sum_to_expr(&rhs_sum)))
    }

    /// The bounds of an integer expression, if they can be found.
    pub fn bound(&self, e: &Expr) -> Option<Bound> {
        match e {
            Expr::Int(v, _) => Some((*v, *v)),
            Expr::Var(v) => self.bounds.get(&v.key()).copied(),
            Expr::Binary(op, a, b) => {
                let (al, ah) = self.bound(a)?;
                let (bl, bh) = self.bound(b)?;
                match op {
                    BinOp::Add => Some((al.checked_add(bl)?, ah.checked_add(bh)?)),
                    BinOp::Sub => Some((al.checked_sub(bh)?, ah.checked_sub(bl)?)),
                    BinOp::Mul => {
                        let c = [al.checked_mul(bl)?, al.checked_mul(bh)?, ah.checked_mul(bl)?, ah.checked_mul(bh)?];
                        Some((*c.iter().min()?, *c.iter().max()?))
                    }
                    BinOp::FloorDiv if bl == bh && bl > 0 => Some((al.div_euclid(bl), ah.div_euclid(bl))),
                    BinOp::FloorMod if bl == bh && bl > 0 => {
                        if al >= 0 && ah < bl {
                            Some((al, ah))
                        } else {
                            Some((0, bl - 1))
                        }
                    }
                    BinOp::Min => Some((al.min(bl), ah.min(bh))),
                    BinOp::Max => Some((al.max(bl), ah.max(bh))),
                    // A mask of non-negative values is at most either.
                    BinOp::BitAnd if al >= 0 && bl >= 0 => Some((0, ah.min(bh))),
                    BinOp::Shr if al >= 0 && bl == bh && (0..63).contains(&bl) => Some((al >> bl, ah >> bl)),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// Whether `cond` is known to be always true (`Some(true)`), always
    /// false, or neither.
    pub fn prove(&self, cond: &Expr) -> Option<bool> {
        match self.simplify(cond) {
            Expr::Int(v, DType::Bool) => Some(v != 0),
            _ => None,
        }
    }

    /// The simplified expression.
    pub fn simplify(&self, e: &Expr) -> Expr {
        let e = e.map_children(|c| self.simplify(c));
        match &e {
            // The rewrites below are true of unbounded integers. int32 and
            // int64 are index types, whose values stay far from their
            // limits; other widths and unsigned types hold data that wraps
            // (`(x + 255u8) // 2`), and an int32 sum whose numbers do not
            // fit int32 (`x * 65536 * 65536`) wraps too: both are left as
            // written, for the program to compute as its types say.
            Expr::Binary(_, a, _)
                if e.dtype().is_int() && a.dtype().is_int() && !(index_type(e.dtype()) && index_type(a.dtype())) =>
            {
                e
            }
            Expr::Binary(op, a, b) if e.dtype().is_int() && a.dtype().is_int() => {
                let wraps = |x: &Expr| e.dtype() == DType::I32 && !fits_i32(&self.to_sum(x));
                let r = match op {
                    BinOp::Add | BinOp::Sub | BinOp::Mul => {
                        let sum = self.to_sum(&e);
                        if e.dtype() == DType::I32 && !fits_i32(&sum) || wraps(a) || wraps(b) {
                            return e;
                        }
                        self.sum_to_expr(&sum)
                    }
                    BinOp::FloorDiv | BinOp::FloorMod if wraps(&e) || wraps(a) || wraps(b) => return e,
                    BinOp::FloorDiv | BinOp::FloorMod => self.div_mod(*op, a, b).unwrap_or_else(|| e.clone()),
                    BinOp::Min | BinOp::Max => self.min_max(*op, a, b).unwrap_or_else(|| e.clone()),
                    _ => e.clone(),
                };
                // The linear form builds its constants as int32: an int64
                // expression that folds to one keeps its type.
                match r {
                    Expr::Int(v, t) if t != e.dtype() => Expr::Int(v, e.dtype()),
                    r => r,
                }
            }
            Expr::Binary(op, a, b) if op.is_compare() && index_type(a.dtype()) => self.compare(*op, a, b).unwrap_or(e),
            Expr::Binary(BinOp::And, a, b) => match (a.as_bool(), b.as_bool()) {
                (Some(false), _) | (_, Some(false)) => Expr::bool(false),
                (Some(true), _) => (**b).clone(),
                (_, Some(true)) => (**a).clone(),
                _ => e,
            },
            Expr::Binary(BinOp::Or, a, b) => match (a.as_bool(), b.as_bool()) {
                (Some(true), _) | (_, Some(true)) => Expr::bool(true),
                (Some(false), _) => (**b).clone(),
                (_, Some(false)) => (**a).clone(),
                _ => e,
            },
            Expr::Not(a) => match a.as_bool() {
                Some(v) => Expr::bool(!v),
                None => e,
            },
            Expr::Select(c, a, b) => match c.as_bool() {
                Some(true) => (**a).clone(),
                Some(false) => (**b).clone(),
                None => e,
            },
            Expr::Call(tirc_ir::Intrinsic::Likely, args) if args[0].as_bool().is_some() => args[0].clone(),
            _ => e,
        }
    }

    fn to_sum(&self, e: &Expr) -> Sum {
        let mut s = Sum { terms: vec![], constant: 0 };
        self.add_to_sum(&mut s, e, 1);
        self.merge_div_mod(&mut s);
        s.terms.retain(|(c, _)| *c != 0);
        s
    }

    fn add_to_sum(&self, s: &mut Sum, e: &Expr, coef: i64) {
        match e {
            Expr::Int(v, _) => s.constant = s.constant.wrapping_add(coef.wrapping_mul(*v)),
            Expr::Binary(BinOp::Add, a, b) => {
                self.add_to_sum(s, a, coef);
                self.add_to_sum(s, b, coef)
            }
            Expr::Binary(BinOp::Sub, a, b) => {
                self.add_to_sum(s, a, coef);
                self.add_to_sum(s, b, -coef)
            }
            Expr::Binary(BinOp::Mul, a, b) => match (a.as_int(), b.as_int()) {
                (Some(c), _) => self.add_to_sum(s, b, coef.wrapping_mul(c)),
                (_, Some(c)) => self.add_to_sum(s, a, coef.wrapping_mul(c)),
                _ => {
                    // A product of two sums with one constant side folded:
                    // distribute when one side is a single term.
                    add_term(s, e.clone(), coef)
                }
            },
            _ => add_term(s, e.clone(), coef),
        }
    }

    /// `(x // c) * c + x % c` is `x`.
    fn merge_div_mod(&self, s: &mut Sum) {
        let mut i = 0;
        while i < s.terms.len() {
            let (k, t) = s.terms[i].clone();
            if let Expr::Binary(BinOp::FloorMod, x, c) = &t {
                if let Some(c) = c.as_int() {
                    let j = s.terms.iter().position(|(k2, t2)| {
                        *k2 == k * c
                            && matches!(t2, Expr::Binary(BinOp::FloorDiv, x2, c2)
                                if c2.as_int() == Some(c) && same_expr(x2, x))
                    });
                    if let Some(j) = j {
                        let (hi, lo) = (i.max(j), i.min(j));
                        s.terms.remove(hi);
                        s.terms.remove(lo);
                        let inner = self.to_sum(x);
                        for (k2, t2) in inner.terms {
                            add_term(s, t2, k * k2);
                        }
                        s.constant += k * inner.constant;
                        i = 0;
                        continue;
                    }
                }
            }
            i += 1;
        }
    }

    /// `sum_bound`, tightened where a term is a floor division whose
    /// coefficient its divisor divides: `c * (x // d)` is also `(c / d) *
    /// (x - x % d)`, which may cancel against the other terms (`16 * ((k +
    /// 15) // 16) - k` is at most 15).
    fn sum_bound_tight(&self, s: &Sum) -> Option<Bound> {
        let plain = self.sum_bound(s);
        let divides = |c: i64, t: &Expr| match t {
            Expr::Binary(BinOp::FloorDiv, _, d) => d.as_int().is_some_and(|d| d > 0 && c % d == 0),
            _ => false,
        };
        if !s.terms.iter().any(|(c, t)| divides(*c, t)) {
            return plain;
        }
        let mut expanded = Sum { terms: vec![], constant: s.constant };
        for (c, t) in &s.terms {
            match t {
                Expr::Binary(BinOp::FloorDiv, x, d) if divides(*c, t) => {
                    let q = c / d.as_int().unwrap_or(1);
                    let inner = self.to_sum(x);
                    for (c2, t2) in inner.terms {
                        let Some(c3) = q.checked_mul(c2) else { return plain };
                        add_term(&mut expanded, t2, c3);
                    }
                    let constant = q.checked_mul(inner.constant).and_then(|k| expanded.constant.checked_add(k));
                    let Some(constant) = constant else { return plain };
                    expanded.constant = constant;
                    add_term(&mut expanded, Expr::binary(BinOp::FloorMod, (**x).clone(), (**d).clone()), -q);
                }
                _ => add_term(&mut expanded, t.clone(), *c),
            }
        }
        expanded.terms.retain(|(c, _)| *c != 0);
        match (plain, self.sum_bound(&expanded)) {
            (Some((a, b)), Some((c, d))) => Some((a.max(c), b.min(d))),
            (p, e) => p.or(e),
        }
    }

    fn sum_bound(&self, s: &Sum) -> Option<Bound> {
        let mut lo = s.constant;
        let mut hi = s.constant;
        for (c, t) in &s.terms {
            let (tl, th) = self.bound(t)?;
            let (a, b) = (c.checked_mul(tl)?, c.checked_mul(th)?);
            lo = lo.checked_add(a.min(b))?;
            hi = hi.checked_add(a.max(b))?;
        }
        Some((lo, hi))
    }

    fn sum_to_expr(&self, s: &Sum) -> Expr {
        let mut out: Option<Expr> = None;
        // A negative number is subtracted as its magnitude, but for the
        // lowest int32, whose magnitude is no int32 (the literal 2147483648
        // would make the C sum 64-bit where the program's wraps in 32).
        let negated = |c: i64| c < 0 && c > i64::from(i32::MIN);
        for (c, t) in &s.terms {
            let mag = c.wrapping_abs();
            let term = if mag == 1 { t.clone() } else { Expr::binary(BinOp::Mul, t.clone(), Expr::int(mag)) };
            out = Some(match out {
                None if *c < 0 => Expr::binary(BinOp::Mul, t.clone(), Expr::int(*c)),
                None => term,
                Some(acc) if negated(*c) => Expr::binary(BinOp::Sub, acc, term),
                Some(acc) if *c < 0 => {
                    Expr::binary(BinOp::Add, acc, Expr::binary(BinOp::Mul, t.clone(), Expr::int(*c)))
                }
                Some(acc) => Expr::binary(BinOp::Add, acc, term),
            });
        }
        match out {
            None => Expr::int(s.constant),
            Some(acc) if s.constant > 0 => Expr::binary(BinOp::Add, acc, Expr::int(s.constant)),
            Some(acc) if negated(s.constant) => Expr::binary(BinOp::Sub, acc, Expr::int(-s.constant)),
            Some(acc) if s.constant < 0 => Expr::binary(BinOp::Add, acc, Expr::int(s.constant)),
            Some(acc) => acc,
        }
    }

    /// `x // c` and `x % c` for a positive constant `c`: the multiples of
    /// `c` leave the division, and a remainder whose bounds fit in one
    /// multiple of `c` is resolved.
    fn div_mod(&self, op: BinOp, a: &Expr, b: &Expr) -> Option<Expr> {
        let c = b.as_int()?;
        if c <= 0 {
            return None;
        }
        if c == 1 {
            return Some(if op == BinOp::FloorDiv { a.clone() } else { Expr::int(0) });
        }
        let s = self.to_sum(a);
        let mut q = Sum { terms: vec![], constant: s.constant.div_euclid(c) };
        let mut r = Sum { terms: vec![], constant: s.constant.rem_euclid(c) };
        for (k, t) in &s.terms {
            if k % c == 0 {
                q.terms.push((k / c, t.clone()));
            } else {
                r.terms.push((*k, t.clone()));
            }
        }
        // (x // a) // b is x // (a * b).
        if op == BinOp::FloorDiv && s.terms.len() == 1 && s.constant == 0 && s.terms[0].0 == 1 {
            if let Expr::Binary(BinOp::FloorDiv, x, a2) = &s.terms[0].1 {
                if let Some(a2) = a2.as_int().filter(|v| *v > 0) {
                    return Some(self.simplify(&Expr::binary(BinOp::FloorDiv, (**x).clone(), Expr::int(a2 * c))));
                }
            }
        }
        let rb = self.sum_bound(&r);
        let rest = match rb {
            Some((lo, hi)) if lo.div_euclid(c) == hi.div_euclid(c) => {
                let k = lo.div_euclid(c);
                if op == BinOp::FloorDiv {
                    q.constant += k;
                    None
                } else {
                    r.constant -= k * c;
                    Some(self.sum_to_expr(&r))
                }
            }
            _ => {
                // With g the gcd of the remaining coefficients, dividing c,
                // and a constant below g: (g*y + k) // c == y // (c/g) and
                // (g*y + k) % c == g * (y % (c/g)) + k.
                let g = r.terms.iter().fold(c, |g, (k, _)| gcd(g, k.wrapping_abs()));
                if g > 1 && r.constant < g {
                    let y = Sum { terms: r.terms.iter().map(|(k, t)| (k / g, t.clone())).collect(), constant: 0 };
                    let inner = self.simplify(&Expr::binary(op, self.sum_to_expr(&y), Expr::int(c / g)));
                    if op == BinOp::FloorDiv {
                        Some(inner)
                    } else {
                        Some(self.simplify(&(inner * Expr::int(g) + Expr::int(r.constant))))
                    }
                } else {
                    let re = self.sum_to_expr(&r);
                    Some(Expr::binary(op, re, Expr::int(c)))
                }
            }
        };
        Some(match (op, rest) {
            (BinOp::FloorDiv, None) => self.sum_to_expr(&q),
            (BinOp::FloorDiv, Some(div)) => {
                add_term(&mut q, div, 1);
                self.sum_to_expr(&q)
            }
            (_, Some(m)) => m,
            (_, None) => Expr::int(0),
        })
    }

    fn min_max(&self, op: BinOp, a: &Expr, b: &Expr) -> Option<Expr> {
        let (al, ah) = self.bound(a)?;
        let (bl, bh) = self.bound(b)?;
        let a_le_b = ah <= bl;
        let b_le_a = bh <= al;
        match op {
            BinOp::Min if a_le_b => Some(a.clone()),
            BinOp::Min if b_le_a => Some(b.clone()),
            BinOp::Max if a_le_b => Some(b.clone()),
            BinOp::Max if b_le_a => Some(a.clone()),
            _ => None,
        }
    }

    /// The bounds of a sum, from the ranges of its terms, tightened by the
    /// assumed facts: with `f <= k` assumed and `diff = q * f + rest`,
    /// `diff <= q * k + max(rest)` for `q > 0` (and the mirror for `q < 0`).
    fn sum_bound_with_facts(&self, diff: &Sum) -> Option<Bound> {
        let plain = self.sum_bound_tight(diff);
        let mut best = plain.unwrap_or((i64::MIN, i64::MAX));
        for (fterms, k) in &self.facts {
            let Some((c0, t0)) = fterms.first() else { continue };
            let Some((cd, _)) = diff.terms.iter().find(|(_, t)| same_expr(t, t0)) else { continue };
            if cd % c0 != 0 {
                continue;
            }
            let q = cd / c0;
            let mut rest = diff.clone();
            for (c, t) in fterms {
                add_term(&mut rest, t.clone(), -(q * c));
            }
            rest.terms.retain(|(c, _)| *c != 0);
            let Some((rlo, rhi)) = self.sum_bound_tight(&rest) else { continue };
            // q * f is at most q * k when q > 0, at least q * k when q < 0.
            let qk = q.saturating_mul(*k);
            if q > 0 {
                best.1 = best.1.min(rhi.saturating_add(qk));
            } else {
                best.0 = best.0.max(rlo.saturating_add(qk));
            }
        }
        (plain.is_some() || best != (i64::MIN, i64::MAX)).then_some(best)
    }

    fn compare(&self, op: BinOp, a: &Expr, b: &Expr) -> Option<Expr> {
        let diff = self.to_sum(&Expr::binary(BinOp::Sub, a.clone(), b.clone()));
        let (lo, hi) = self.sum_bound_with_facts(&diff)?;
        let v = match op {
            BinOp::Lt if hi < 0 => true,
            BinOp::Lt if lo >= 0 => false,
            BinOp::Le if hi <= 0 => true,
            BinOp::Le if lo > 0 => false,
            BinOp::Gt if lo > 0 => true,
            BinOp::Gt if hi <= 0 => false,
            BinOp::Ge if lo >= 0 => true,
            BinOp::Ge if hi < 0 => false,
            BinOp::Eq if lo == 0 && hi == 0 => true,
            BinOp::Eq if lo > 0 || hi < 0 => false,
            BinOp::Ne if lo > 0 || hi < 0 => true,
            BinOp::Ne if lo == 0 && hi == 0 => false,
            _ => return None,
        };
        Some(Expr::bool(v))
    }
}

/// int32 and int64, the types of indices.
fn index_type(t: DType) -> bool {
    matches!(t, DType::Int(32) | DType::Int(64))
}

/// Whether each number of the linear form fits int32.
fn fits_i32(s: &Sum) -> bool {
    let ok = |v: i64| i32::try_from(v).is_ok();
    ok(s.constant) && s.terms.iter().all(|(c, _)| ok(*c))
}

fn add_term(s: &mut Sum, t: Expr, coef: i64) {
    match s.terms.iter_mut().find(|(_, x)| same_expr(x, &t)) {
        Some((c, _)) => *c = c.wrapping_add(coef),
        None => s.terms.push((coef, t)),
    }
}

pub use tirc_ir::expr::eval;

/// Splits a condition into its `and`-ed parts.
pub fn conjuncts(e: &Expr) -> Vec<Expr> {
    match e {
        Expr::Binary(BinOp::And, a, b) => {
            let mut v = conjuncts(a);
            v.extend(conjuncts(b));
            v
        }
        _ if e.as_bool() == Some(true) => vec![],
        _ => vec![e.clone()],
    }
}

/// A comparison with its smaller side first: `n > e` as `e < n`, `n >= e`
/// as `e <= n`; anything else as it is.
pub fn smaller_first(c: Expr) -> Expr {
    match c {
        Expr::Binary(BinOp::Gt, a, b) => Expr::Binary(BinOp::Lt, b, a),
        Expr::Binary(BinOp::Ge, a, b) => Expr::Binary(BinOp::Le, b, a),
        c => c,
    }
}

/// The `and` of conditions (true when empty).
pub fn all_of(parts: impl IntoIterator<Item = Expr>) -> Expr {
    parts.into_iter().fold(Expr::bool(true), Expr::and)
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(name: &str) -> (Var, Expr) {
        let v = Var::new(name, DType::I32);
        let e = Expr::var(&v);
        (v, e)
    }

    /// Index arithmetic is rewritten; data that wraps (unsigned or narrow
    /// types, an int32 product past 2^31) is left as written.
    #[test]
    fn only_index_arithmetic_that_cannot_wrap_is_rewritten() {
        let an = Analyzer::new();
        let (_, x) = var("x");
        let show = |e: &Expr| tirc_ir::printer::print_expr(&an.simplify(e));
        assert_eq!(show(&Expr::binary(BinOp::FloorDiv, x.clone() * Expr::int(4) + Expr::int(3), Expr::int(4))), "x");
        let wide = Expr::binary(
            BinOp::FloorDiv,
            x.clone() * Expr::int(65536) * Expr::int(65536) + Expr::int(12),
            Expr::int(4),
        );
        assert_eq!(show(&wide), "(x * 65536 * 65536 + 12) // 4");
        let u = Expr::var(&Var::new("u", DType::UInt(32)));
        let wraps =
            Expr::binary(BinOp::FloorDiv, u + Expr::Int(4294967295, DType::UInt(32)), Expr::Int(2, DType::UInt(32)));
        assert_eq!(show(&wraps), tirc_ir::printer::print_expr(&wraps));
        // The lowest int32 is added, not subtracted as 2147483648, which
        // is no int32 (C would compute the sum in 64 bits).
        let lowest = Expr::int(i64::from(i32::MIN));
        assert_eq!(show(&(x.clone() + lowest.clone())), "x + (-2147483648)");
        assert_eq!(show(&(Expr::var(&Var::new("y", DType::I32)) + x.clone() * lowest)), "y + x * (-2147483648)");
    }

    /// `by * 64 + ty * 8 + i < m` for all threads and loop iterations is
    /// `by * 64 + 64 <= m`, and assuming it proves the condition.
    #[test]
    fn a_condition_for_all_threads_is_a_guard_on_the_block_index() {
        let ((by, bye), (ty, tye), (i, ie), (m, me)) = (var("by"), var("ty"), var("i"), var("m"));
        let mut an = Analyzer::new();
        an.bind_sizes(std::slice::from_ref(&m));
        an.bind(&by, 0, 1 << 24);
        an.bind(&ty, 0, 7);
        an.bind(&i, 0, 7);
        let cond = Expr::binary(BinOp::Lt, bye * Expr::int(64) + tye * Expr::int(8) + ie, me);
        assert_eq!(an.prove(&cond), None);
        let keep = |v: &Var| *v == by || *v == m;
        let g = an.condition_for_all(&cond, &keep).expect("a guard");
        assert_eq!(tirc_ir::printer::print_expr(&g), "by * 64 + 64 <= m");
        let mut inside = an.clone();
        inside.assume(&g);
        assert_eq!(inside.prove(&cond), Some(true));
    }

    /// A guard whose sides may leave 32 bits is not made: the GPU computes
    /// it in int32.
    #[test]
    fn a_guard_past_32_bits_is_not_made() {
        let ((bx, bxe), (k, ke), (m, me)) = (var("bx"), var("k"), var("m"));
        let mut an = Analyzer::new();
        an.bind_sizes(std::slice::from_ref(&m));
        an.bind(&bx, 0, i32::MAX as i64 - 1);
        an.bind(&k, 0, i32::MAX as i64 - 1);
        let cond = Expr::binary(BinOp::Lt, bxe + ke, me);
        let keep = |v: &Var| *v == bx || *v == m;
        assert!(an.condition_for_all(&cond, &keep).is_none());
    }

    /// Inside a loop over the tiles of a run-time extent, `for r in
    /// range((k + 15) // 16 - 1)`, every tile is whole: `r * 16 + j < k`
    /// for `j < 16`. The loop's end is kept as a fact, and `16 * ((k + 15)
    /// // 16)` is bounded through `k`; both are forgotten with the loop.
    #[test]
    fn a_loop_over_the_tiles_of_a_run_time_extent_knows_its_end() {
        let ((r, re), (j, je), (k, ke)) = (var("r"), var("j"), var("k"));
        let mut an = Analyzer::new();
        an.bind_sizes(std::slice::from_ref(&k));
        an.bind(&j, 0, 15);
        let tiles = Expr::binary(BinOp::FloorDiv, ke.clone() + Expr::int(15), Expr::int(16));
        let whole = Expr::binary(BinOp::Lt, re.clone() * Expr::int(16) + je.clone(), ke.clone());
        an.bind_range(&r, &Expr::int(0), &(tiles.clone() - Expr::int(1)));
        assert_eq!(an.prove(&whole), Some(true));
        // The last tile may be partial.
        an.unbind(&r);
        an.bind_range(&r, &Expr::int(0), &tiles);
        assert_eq!(an.prove(&whole), None);
        an.unbind(&r);
        assert!(an.facts.is_empty(), "the loop's fact outlived it");
        // 16 * ((k + 15) // 16) - k is within [0, 15].
        let pad = tiles * Expr::int(16) - ke;
        assert_eq!(an.prove(&Expr::binary(BinOp::Le, pad.clone(), Expr::int(15))), Some(true));
        assert_eq!(an.prove(&Expr::binary(BinOp::Ge, pad, Expr::int(0))), Some(true));
    }
}
