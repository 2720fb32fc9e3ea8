//! `relax_guards`: a per-thread buffer is updated on a whole tile, and only
//! the elements that are read back are guarded.
//!
//! At the edge of a shape, a partial tile guards the update of its
//! accumulator, `if by * 64 + ty * 8 + i < M and ..: C_local[i * 4 + j] =
//! C_local[i * 4 + j] + A_shared[..] * B_shared[..]`, in the innermost loop.
//! The CUDA compiler can then neither share the shared-memory loads between
//! the multiply-adds nor keep the tests out of the loop, and the boundary
//! tile runs several times slower than the others. Triton computes the whole
//! tile and masks only the loads and the final store; this pass does the
//! same where it is provably harmless.
//!
//! For a local buffer `L`, a conjunct `d` of the `if` directly around a
//! store `L[e(x)] = v` is dropped when:
//! - `d` depends only on the loop variables `x` of the index and on launch
//!   indices and run-time sizes (it says which *element* is written, not
//!   when);
//! - every read of `L` outside the updates of `L` (the write-back, a use in
//!   another buffer) is under a condition with a conjunct that is `d` once
//!   its index's variables are renamed to `x` (its index has the same form:
//!   the same launch part, the same coefficients over loops of the same
//!   ranges, distinct elements for distinct iterations); so an element for
//!   which `d` is false is never read out;
//! - each update of `L` reads `L` only at the element it writes, so the
//!   values of those never-read elements cannot flow into the others;
//! - `v` and `e(x)` are safe to compute where `d` is false: every load is
//!   proved in bounds of its buffer and stays within the span it reads
//!   under `d` (the next pipeline stage of a compacted shared tile may
//!   follow it, its copies landing) — shown by a bound `d` puts on the
//!   index's form or on one of its variables, or else, where the variables
//!   have a few thousand values, by trying each; there is no integer
//!   division by a non-constant, no
//!   intrinsic with an effect; and `v` reads no global memory, whose
//!   bandwidth the guard saves.
//!
//! The elements written where the guard is now false are never read, so the
//! results are the same. Other conjuncts (a bound on the reduction variable,
//! which says *when* an element is updated) stay.

use crate::arith::{conjuncts, Analyzer};
use std::collections::HashMap;
use tirc_ir::structural_eq::same_expr;
use tirc_ir::subst::substitute;
use tirc_ir::{BinOp, Buffer, DType, Diagnostic, Expr, Intrinsic, PrimFunc, Scope, Stmt, Var};

pub fn run(f: PrimFunc) -> Result<PrimFunc, Diagnostic> {
    relax(f, Loads::OnChip)
}

/// Which loads an update whose guard is dropped may make: only on-chip
/// ones proved in place (`relax_guards`), or global ones too, each clamped
/// into its buffer (`relax_edge_guards`, after `loop_partition`).
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Loads {
    #[default]
    OnChip,
    ClampGlobal,
}

pub(crate) fn relax(mut f: PrimFunc, mode: Loads) -> Result<PrimFunc, Diagnostic> {
    let mut locals = Vec::new();
    f.body.walk(&mut |s| {
        if let Stmt::Allocate { buffer, .. } = s {
            if buffer.scope() == Scope::Local {
                locals.push(buffer.clone());
            }
        }
    });
    // Past `loop_partition`, a kernel may branch once, at the top, between
    // its interior and its boundary tiles: a thread runs one of the two
    // copies, so each is also looked at alone (`Walk::branch`), the reads
    // of the other left out.
    let branches: &[Option<bool>] = match mode {
        Loads::OnChip => &[None],
        Loads::ClampGlobal => &[None, Some(true), Some(false)],
    };
    // A clamped load may read an element another thread writes: only
    // buffers the kernel never writes are clamped.
    let mut written = Vec::new();
    f.body.walk(&mut |s| match s {
        Stmt::Store { buffer, .. } => written.push(buffer.key()),
        Stmt::Wmma(w) => written.push(w.write().buffer.key()),
        _ => {}
    });
    for l in &locals {
        let mut drops: HashMap<usize, Vec<Expr>> = HashMap::new();
        let mut clamped: HashMap<usize, Expr> = HashMap::new();
        for &branch in branches {
            let mut sites = Sites::default();
            let mut scope = Walk { mode, branch, written: written.clone(), ..Walk::default() };
            // Run-time sizes are the same for every thread, as launch indices.
            scope.an.bind_sizes(&f.sizes);
            scope.launches.extend(f.sizes.iter().cloned());
            sites.launches.extend(f.sizes.iter().cloned());
            if gather(&f.body, l, &mut scope, &mut sites).is_none() {
                continue;
            }
            for (n, d) in decide(&sites, mode) {
                if d.is_empty() || drops.contains_key(&n) {
                    continue;
                }
                if let Some(Some(w)) = sites.writes.get(n) {
                    clamped.insert(n, w.clamped.clone());
                }
                drops.insert(n, d);
            }
        }
        if !drops.is_empty() {
            let mut counter = 0;
            f.body = rewrite(&f.body, l, &drops, &clamped, &mut counter);
        }
    }
    Ok(f)
}

/// An index `base + sum(coef * var)` over loop variables of constant range.
#[derive(Clone)]
struct Affine {
    base: Expr,
    /// `(coefficient, variable, min, extent)`.
    terms: Vec<(i64, Var, i64, i64)>,
}

/// A store to the buffer, with the conjuncts of the `if` directly around it.
struct Write {
    index: Affine,
    direct: Vec<Expr>,
    /// Whether computing the store unguarded is safe (see the header).
    safe: bool,
    /// The loads of other buffers in the stored value.
    loads: Vec<Expr>,
    /// The stored value with each global load that may leave its buffer
    /// where the guard is false clamped into it (`Loads::ClampGlobal`).
    clamped: Expr,
    /// The ranges known at the store.
    ranges: Analyzer,
}

/// A read of the buffer outside its updates, with every condition known to
/// hold there (`None` where the reach is not known: an `else` branch).
struct Read {
    index: Affine,
    guards: Option<Vec<Expr>>,
}

#[derive(Default)]
struct Sites {
    /// By the order of the stores to the buffer in the body.
    writes: Vec<Option<Write>>,
    reads: Vec<Read>,
    /// The launch indices of the kernel.
    launches: Vec<Var>,
}

/// What is known at a point of the walk.
#[derive(Default)]
struct Walk {
    an: Analyzer,
    /// Variables of loops with constant bounds: `(min, extent)`.
    loops: HashMap<usize, (i64, i64)>,
    launches: Vec<Var>,
    guards: Vec<Expr>,
    under_else: usize,
    mode: Loads,
    /// `Some(b)`: only the branch `b` of the kernel's first `if` on launch
    /// indices and sizes alone outside any loop is looked at (its stores
    /// may be relaxed, the other branch's reads are left out); stores
    /// elsewhere are recorded but never relaxed.
    branch: Option<bool>,
    /// Whether the walk is in that branch.
    in_branch: bool,
    /// Whether that `if` was met.
    branched: bool,
    /// Loops around the point of the walk.
    depth: usize,
    /// The buffers the kernel writes, by key.
    written: Vec<usize>,
}

impl Walk {
    /// Whether a load of `b` that may leave it can be clamped into it: a
    /// global buffer, flat, that no thread writes and that has an element
    /// (its length proved at least 1: a length of run-time sizes, `n - 1`,
    /// may be 0).
    fn clampable(&self, b: &Buffer) -> bool {
        self.mode == Loads::ClampGlobal
            && b.scope() == Scope::Global
            && !self.written.contains(&b.key())
            && matches!(b.shape(), [len] if matches!(self.an.bound(&self.an.simplify(len)), Some((lo, _)) if lo >= 1))
    }
}

/// Records every access to `l`; `None` when an access has a form this pass
/// does not reason about.
fn gather(s: &Stmt, l: &Buffer, sc: &mut Walk, out: &mut Sites) -> Option<()> {
    match s {
        Stmt::For(f) => {
            sc.an.bind_range(&f.var, &f.min, &f.extent);
            if let (Some(m), Some(e)) = (f.min.as_int(), f.extent.as_int()) {
                sc.loops.insert(f.var.key(), (m, e));
            }
            sc.depth += 1;
            let r = gather(&f.body, l, sc, out);
            sc.depth -= 1;
            sc.loops.remove(&f.var.key());
            sc.an.unbind(&f.var);
            r
        }
        Stmt::Launch { var, extent, body, .. } => {
            sc.an.bind_launch(var, extent);
            sc.launches.push(var.clone());
            out.launches.push(var.clone());
            let r = gather(body, l, sc, out);
            sc.launches.pop();
            sc.an.unbind(var);
            r
        }
        Stmt::Let { var, value, body } => {
            reads_in(value, l, sc, out)?;
            if let Some((lo, hi)) = sc.an.bound(value) {
                sc.an.bind(var, lo, hi);
            }
            let r = gather(body, l, sc, out);
            sc.an.unbind(var);
            r
        }
        Stmt::If { cond, then, orelse: Some(orelse) }
            if sc.branch.is_some() && !sc.branched && sc.depth == 0 && {
                let mut uniform = true;
                cond.walk(&mut |x| {
                    uniform &= !matches!(x, Expr::Load(..)) && x.as_var().is_none_or(|v| sc.launches.contains(v))
                });
                uniform
            } =>
        {
            reads_in(cond, l, sc, out)?;
            sc.branched = true;
            // The stores of the branch left out are counted, in order.
            let skip = |s: &Stmt, out: &mut Sites| {
                s.walk(&mut |x| {
                    if matches!(x, Stmt::Store { buffer, .. } if buffer.key() == l.key()) {
                        out.writes.push(None);
                    }
                })
            };
            sc.in_branch = true;
            let r = if sc.branch == Some(true) {
                let r = gather(then, l, sc, out);
                skip(orelse, out);
                r
            } else {
                skip(then, out);
                gather(orelse, l, sc, out)
            };
            sc.in_branch = false;
            r
        }
        Stmt::If { cond, then, orelse } => {
            reads_in(cond, l, sc, out)?;
            let parts = conjuncts(cond);
            let n = parts.len();
            sc.guards.extend(parts);
            let direct = match &**then {
                Stmt::Store { buffer, indices, value } if buffer.key() == l.key() && orelse.is_none() => {
                    let conds = sc.guards[sc.guards.len() - n..].to_vec();
                    Some(store(indices, value, l, conds, sc, out))
                }
                _ => None,
            };
            let r = match direct {
                Some(r) => r,
                None => gather(then, l, sc, out),
            };
            sc.guards.truncate(sc.guards.len() - n);
            r?;
            if let Some(e) = orelse {
                sc.under_else += 1;
                let r = gather(e, l, sc, out);
                sc.under_else -= 1;
                r?;
            }
            Some(())
        }
        Stmt::Store { buffer, indices, value } if buffer.key() == l.key() => {
            store(indices, value, l, Vec::new(), sc, out)
        }
        Stmt::Store { indices, value, .. } => {
            for i in indices {
                reads_in(i, l, sc, out)?;
            }
            reads_in(value, l, sc, out)
        }
        _ => {
            let mut r = Some(());
            s.for_each_expr(|e| {
                if r.is_some() {
                    r = reads_in(e, l, sc, out);
                }
            });
            s.for_each_child(|c| {
                if r.is_some() {
                    r = gather(c, l, sc, out);
                }
            });
            r
        }
    }
}

/// A store to `l`: its value may read `l` only at the element it writes.
fn store(indices: &[Expr], value: &Expr, l: &Buffer, direct: Vec<Expr>, sc: &Walk, out: &mut Sites) -> Option<()> {
    let [index] = indices else { return None };
    let mut same_element = true;
    value.walk(&mut |e| {
        if let Expr::Load(b, idx) = e {
            if b.key() == l.key() && !(idx.len() == 1 && same_expr(&idx[0], index)) {
                same_element = false;
            }
        }
    });
    if !same_element || mentions(index, l) {
        return None;
    }
    let mut loads = Vec::new();
    value.walk(&mut |e| {
        if matches!(e, Expr::Load(b, _) if b.key() != l.key()) {
            loads.push(e.clone());
        }
    });
    // Looking at one branch, the stores outside it stay as they are.
    if sc.branch.is_some() && !sc.in_branch {
        out.writes.push(None);
        return Some(());
    }
    let write = affine(index, sc).map(|a| Write {
        index: a,
        direct,
        safe: safe(value, sc) && safe(index, sc) && in_bounds(l, index, sc),
        loads,
        clamped: clamp_global_loads(value, sc),
        ranges: sc.an.clone(),
    });
    out.writes.push(write);
    Some(())
}

/// Records the reads of `l` in `e`, which is not an update of `l`.
fn reads_in(e: &Expr, l: &Buffer, sc: &Walk, out: &mut Sites) -> Option<()> {
    let mut ok = true;
    e.walk(&mut |x| {
        if let Expr::Load(b, idx) = x {
            if b.key() == l.key() {
                match (idx.as_slice(), ok) {
                    ([i], true) => match affine(i, sc) {
                        Some(index) => {
                            out.reads.push(Read { index, guards: (sc.under_else == 0).then(|| sc.guards.clone()) })
                        }
                        None => ok = false,
                    },
                    _ => ok = false,
                }
            }
        }
    });
    ok.then_some(())
}

fn mentions(e: &Expr, l: &Buffer) -> bool {
    let mut found = false;
    e.walk(&mut |x| found |= matches!(x, Expr::Load(b, _) if b.key() == l.key()));
    found
}

/// `e` as a launch part plus loop variables times constants.
fn affine(e: &Expr, sc: &Walk) -> Option<Affine> {
    let e = sc.an.simplify(e);
    let mut terms = Vec::new();
    let mut base = Vec::new();
    split_sum(&e, 1, &mut |coef, t| match t {
        Expr::Var(v) if sc.loops.contains_key(&v.key()) => {
            let (m, n) = sc.loops[&v.key()];
            terms.push((coef, v.clone(), m, n));
            true
        }
        _ => {
            let mut only_launch = true;
            t.walk(&mut |x| {
                if let Expr::Var(v) = x {
                    only_launch &= sc.launches.contains(v);
                }
            });
            base.push(Expr::folded(BinOp::Mul, t.clone(), Expr::Int(coef, t.dtype())));
            only_launch
        }
    })
    .then_some(())?;
    let base = base.into_iter().reduce(|a, b| Expr::binary(BinOp::Add, a, b)).unwrap_or(Expr::Int(0, e.dtype()));
    Some(Affine { base: sc.an.simplify(&base), terms })
}

/// Calls `f(coef, term)` for each term of a sum; false if any call is.
fn split_sum(e: &Expr, coef: i64, f: &mut impl FnMut(i64, &Expr) -> bool) -> bool {
    match e {
        Expr::Binary(BinOp::Add, a, b) => split_sum(a, coef, f) && split_sum(b, coef, f),
        Expr::Binary(BinOp::Sub, a, b) => split_sum(a, coef, f) && split_sum(b, -coef, f),
        Expr::Binary(BinOp::Mul, a, b) => match (a.as_int(), b.as_int()) {
            (_, Some(c)) => split_sum(a, coef * c, f),
            (Some(c), _) => split_sum(b, coef * c, f),
            _ => f(coef, e),
        },
        _ => f(coef, e),
    }
}

/// Distinct iterations give distinct elements: positive coefficients that
/// form a mixed radix over the loop ranges.
fn injective(a: &Affine) -> bool {
    let mut t: Vec<_> = a.terms.iter().map(|(c, _, _, n)| (*c, *n)).collect();
    t.sort();
    let mut reach = 0i64;
    for (c, n) in t {
        if c <= reach || c <= 0 {
            return false;
        }
        reach += c * (n - 1);
    }
    true
}

/// Whether `e` can be evaluated where its guard is false: loads in bounds,
/// no integer division by a variable, no effect.
fn safe(e: &Expr, sc: &Walk) -> bool {
    let mut ok = true;
    e.walk(&mut |x| match x {
        // A global load is clamped into its buffer in this mode.
        Expr::Load(b, idx) if sc.clampable(b) => ok &= idx.len() == 1,
        // Past its guard, a load of a global buffer the kernel writes could
        // read what another thread is writing.
        Expr::Load(b, _) if sc.mode == Loads::ClampGlobal && b.scope() == Scope::Global => ok = false,
        Expr::Load(b, idx) => ok &= idx.len() == 1 && in_bounds(b, &idx[0], sc),
        Expr::Binary(BinOp::Div | BinOp::FloorDiv | BinOp::FloorMod, _, d) if x.dtype().is_int() => {
            ok &= matches!(d.as_int(), Some(c) if c != 0)
        }
        Expr::Call(i, _) => ok &= !matches!(i, Intrinsic::CpAsync),
        _ => {}
    });
    ok
}

/// `e` with each global load whose index is not proved within its buffer
/// reading at the index clamped to `[0, elements - 1]`. The value read
/// there is never used (see the header), so any element will do; the
/// clamp only keeps the read inside the buffer.
fn clamp_global_loads(e: &Expr, sc: &Walk) -> Expr {
    let inner = e.map_children(|c| clamp_global_loads(c, sc));
    let Expr::Load(b, idx) = &inner else { return inner };
    let ([i], [len]) = (idx.as_slice(), b.shape()) else { return inner };
    if !sc.clampable(b) || in_bounds(b, i, sc) {
        return inner;
    }
    let t = i.dtype();
    let mut i = i.clone();
    if !matches!(sc.an.bound(&sc.an.simplify(&i)), Some((lo, _)) if lo >= 0) {
        i = Expr::binary(BinOp::Max, i, Expr::Int(0, t));
    }
    let last = sc.an.simplify(&Expr::binary(BinOp::Sub, len.clone(), Expr::Int(1, len.dtype())));
    // Past the edge the index may leave int32 before the clamp brings it
    // back (rows of a tile past the last row of a buffer of nearly 2^31
    // elements): unless its bound proves it cannot, it is computed in 64
    // bits and clamped there.
    if t == DType::I32 && !matches!(sc.an.bound(&sc.an.simplify(&i)), Some((_, hi)) if hi <= i64::from(i32::MAX)) {
        let wide = Expr::binary(BinOp::Min, widened(&i), widened(&last));
        return Expr::Load(b.clone(), vec![Expr::Cast(t, Box::new(wide))]);
    }
    let last = if last.dtype() == t { last } else { Expr::Cast(t, Box::new(last)) };
    Expr::Load(b.clone(), vec![Expr::binary(BinOp::Min, i, last)])
}

/// `e` computed in 64 bits: each int32 variable cast, each literal widened.
fn widened(e: &Expr) -> Expr {
    match e {
        Expr::Var(v) if v.dtype() == DType::I32 => Expr::Cast(DType::I64, Box::new(e.clone())),
        Expr::Int(n, DType::I32) => Expr::Int(*n, DType::I64),
        _ => e.map_children(widened),
    }
}

fn in_bounds(b: &Buffer, index: &Expr, sc: &Walk) -> bool {
    match (b.alloc_elements().or_else(|| b.num_elements()), sc.an.bound(&sc.an.simplify(index))) {
        (Some(n), Some((lo, hi))) => lo >= 0 && hi < n,
        _ => false,
    }
}

/// For each write (by order), the conjuncts of its direct guard to drop.
fn decide(sites: &Sites, mode: Loads) -> HashMap<usize, Vec<Expr>> {
    let mut drops = HashMap::new();
    for (n, w) in sites.writes.iter().enumerate() {
        let Some(w) = w else { continue };
        if !w.safe || w.direct.is_empty() || !injective(&w.index) {
            continue;
        }
        let element_vars: Vec<&Var> = w.index.terms.iter().map(|t| &t.1).collect();
        let droppable: Vec<Expr> = w
            .direct
            .iter()
            .filter(|d| only_uses(d, &element_vars, &sites.launches))
            // With global loads, a condition on launch indices alone stays:
            // it spares whole threads (whole warps, often) the loads.
            .filter(|d| mode == Loads::OnChip || element_vars.iter().any(|v| d.uses(v)))
            .filter(|d| sites.reads.iter().all(|r| read_implies(r, &w.index, d)))
            .cloned()
            .collect();
        if !loads_stay_in_place(w, &droppable, mode) {
            continue;
        }
        drops.insert(n, droppable);
    }
    drops
}

/// Whether each load of the store (none of them global), with the
/// `dropped` conditions no longer tested, stays within the span of elements it reads under them: the
/// elements of a partial tile at the end of a compacted shared buffer are
/// followed by the next pipeline stage's, which other threads may be
/// writing. The span under the conditions is found by narrowing the range
/// of each variable that a condition bounds by itself.
fn loads_stay_in_place(w: &Write, dropped: &[Expr], mode: Loads) -> bool {
    if dropped.is_empty() {
        return true;
    }
    let narrowed = narrow(&w.ranges, dropped);
    w.loads.iter().all(|load| {
        let Expr::Load(b, idx) = load else { return false };
        // A global load costs bandwidth that the guard saves; past
        // `loop_partition`, in the tiles at the edge, it is clamped instead.
        if b.scope() == Scope::Global {
            return mode == Loads::ClampGlobal;
        }
        idx.iter().all(|i| {
            let i = w.ranges.simplify(i);
            match (w.ranges.bound(&i), narrowed.bound(&i)) {
                (Some((lo, hi)), Some((nlo, nhi))) => {
                    // A condition over several variables (`bx * 32 + tx * 4
                    // + j < 31`) bounds their sum, which narrowing each
                    // variable alone does not see.
                    let under: Vec<Option<(Option<i64>, Option<i64>)>> =
                        dropped.iter().map(|d| bounds_under(&w.ranges, &i, d)).collect();
                    let inside = under
                        .iter()
                        .flatten()
                        .all(|(jlo, jhi)| jlo.is_none_or(|m| m <= lo) && jhi.is_none_or(|m| hi <= m));
                    // A condition that says something of the index's
                    // variables must be seen to bound it: by a form the
                    // index shares (`joint`), or by narrowing one of its
                    // variables. One it cannot be related to (the index a
                    // division of the sum the condition bounds) proves
                    // nothing: the load may then leave its span (into a
                    // tile's next stage, which copies may be filling).
                    // (Where neither shows, and the variables have few
                    // values, every point is tried; where they have not, a
                    // run-time size, it is left as it was.)
                    let related = dropped.iter().zip(&under).all(|(d, u)| {
                        !d.has_var()
                            || !i.has_var()
                            || u.is_some()
                            || always_true(&w.ranges, d)
                            || tightens(&w.ranges, d, &i)
                            || stays_by_enumeration(&w.ranges, &i, d) != Some(false)
                    });
                    related && nlo <= lo && hi <= nhi && inside
                }
                _ => false,
            }
        })
    })
}

/// Whether, over every point of the ranges of the variables of `i` and `d`,
/// the values `i` takes where `d` fails lie within those it takes where `d`
/// holds. `None` where the points cannot be counted (a variable without a
/// constant range, more than 2^16 points) or `i` or `d` not computed.
fn stays_by_enumeration(an: &Analyzer, i: &Expr, d: &Expr) -> Option<bool> {
    let mut vars: Vec<Var> = Vec::new();
    for e in [i, d] {
        e.walk(&mut |x| {
            if let Expr::Var(v) = x {
                if !vars.contains(v) {
                    vars.push(v.clone());
                }
            }
        });
    }
    let loops: Vec<(Var, i64, i64)> = vars
        .into_iter()
        .map(|v| an.bound(&Expr::var(&v)).map(|(lo, hi)| (v, lo, hi - lo + 1)))
        .collect::<Option<_>>()?;
    let (mut inside, mut outside) = ((i64::MAX, i64::MIN), Vec::new());
    crate::common::tree::for_each_point(&loops, 1 << 16, &mut |value| {
        let x = crate::arith::eval(i, value)?;
        if crate::arith::eval(d, value)? != 0 {
            inside = (inside.0.min(x), inside.1.max(x));
        } else {
            outside.push(x);
        }
        Some(())
    })?;
    Some(outside.iter().all(|x| inside.0 <= *x && *x <= inside.1))
}

/// Whether `d` holds over the whole of the ranges.
fn always_true(an: &Analyzer, d: &Expr) -> bool {
    as_negative(d).and_then(|x| an.bound(&an.simplify(&x))).is_some_and(|(_, hi)| hi < 0)
}

/// Whether narrowing by `d` alone tightens the range of a variable of `i`.
fn tightens(an: &Analyzer, d: &Expr, i: &Expr) -> bool {
    let narrowed = narrow(an, std::slice::from_ref(d));
    let mut found = false;
    i.walk(&mut |x| {
        if let Expr::Var(v) = x {
            let e = Expr::var(v);
            found |= an.bound(&e) != narrowed.bound(&e);
        }
    });
    found
}

/// The condition `c` as `x < 0`, for the integer comparisons.
fn as_negative(c: &Expr) -> Option<Expr> {
    let one = |a: &Expr| Expr::Int(1, a.dtype());
    let x = match c {
        Expr::Binary(BinOp::Lt, a, b) => Expr::binary(BinOp::Sub, (**a).clone(), (**b).clone()),
        Expr::Binary(BinOp::Le, a, b) => {
            Expr::binary(BinOp::Sub, Expr::binary(BinOp::Sub, (**a).clone(), (**b).clone()), one(a))
        }
        Expr::Binary(BinOp::Gt, a, b) => Expr::binary(BinOp::Sub, (**b).clone(), (**a).clone()),
        Expr::Binary(BinOp::Ge, a, b) => {
            Expr::binary(BinOp::Sub, Expr::binary(BinOp::Sub, (**b).clone(), (**a).clone()), one(a))
        }
        _ => return None,
    };
    x.dtype().is_int().then_some(x)
}

/// Bounds of the index `i` where `cond` holds, where `i` is `lambda` times
/// `cond`'s linear form plus terms of other variables: with `cond` as `x <
/// 0` (so `x <= -1`), `i = lambda * x + rest` is at most `max(rest) -
/// lambda` for a positive `lambda` (an upper bound), at least `min(rest) -
/// lambda` for a negative one (a lower bound). `None` where `i` does not
/// hold the form so.
fn bounds_under(an: &Analyzer, i: &Expr, cond: &Expr) -> Option<(Option<i64>, Option<i64>)> {
    let x = an.simplify(&as_negative(cond)?);
    let mut form: Vec<(i64, Var)> = Vec::new();
    let plain = split_sum(&x, 1, &mut |c, t| match t {
        Expr::Var(v) => {
            form.push((c, v.clone()));
            true
        }
        t => t.as_int().is_some(),
    });
    let mut index: Vec<(i64, Var)> = Vec::new();
    split_sum(i, 1, &mut |c, t| {
        if let Expr::Var(v) = t {
            index.push((c, v.clone()));
        }
        true
    });
    if !plain || form.is_empty() {
        return None;
    }
    let coef = |v: &Var| index.iter().filter(|(_, u)| u == v).try_fold(0i64, |acc, (c, _)| acc.checked_add(*c));
    let (a, v) = form.iter().find(|(a, v)| *a != 0 && coef(v).is_some_and(|c| c != 0))?;
    let b = coef(v)?;
    if b % a != 0 {
        return None;
    }
    let lambda = b / a;
    if form.iter().any(|(a, v)| coef(v).is_none_or(|c| c != 0 && Some(c) != lambda.checked_mul(*a))) {
        return None;
    }
    let t = x.dtype();
    let rest = an.simplify(&Expr::binary(BinOp::Sub, i.clone(), Expr::binary(BinOp::Mul, Expr::Int(lambda, t), x)));
    if form.iter().any(|(_, v)| coef(v) != Some(0) && rest.uses(v)) {
        return None;
    }
    let (lo, hi) = an.bound(&rest)?;
    Some(match lambda > 0 {
        true => (None, Some(hi.checked_sub(lambda)?)),
        false => (Some(lo.checked_sub(lambda)?), None),
    })
}

/// `an` with the range of each variable tightened by the conditions
/// `sum(c * v) + rest < 0` (or `<=`, `>`, `>=`) that bound it alone.
fn narrow(an: &Analyzer, conds: &[Expr]) -> Analyzer {
    let mut out = an.clone();
    for c in conds {
        let Some(x) = as_negative(c) else { continue };
        let mut terms: Vec<(i64, Expr)> = Vec::new();
        split_sum(&an.simplify(&x), 1, &mut |c, t| {
            terms.push((c, t.clone()));
            true
        });
        for (k, (c, t)) in terms.iter().enumerate() {
            let Expr::Var(v) = t else { continue };
            // The smallest value of the other terms.
            let mut rest = 0i64;
            let mut known = true;
            for (j, (c2, t2)) in terms.iter().enumerate() {
                if j == k {
                    continue;
                }
                match out.bound(t2) {
                    Some((lo, hi)) => rest += (c2 * lo).min(c2 * hi),
                    None => known = false,
                }
            }
            let Some((lo, hi)) = out.bound(t) else { continue };
            if !known || *c == 0 {
                continue;
            }
            // c * v < -rest
            let (lo, hi) =
                if *c > 0 { (lo, hi.min((-rest - 1).div_euclid(*c))) } else { (lo.max(rest.div_euclid(-c) + 1), hi) };
            if lo <= hi {
                out.bind(v, lo, hi);
            }
        }
    }
    out
}

/// Whether `d` uses no variable but the element's loop variables and the
/// launch indices.
fn only_uses(d: &Expr, vars: &[&Var], launches: &[Var]) -> bool {
    let mut ok = true;
    d.walk(&mut |x| {
        if let Expr::Var(v) = x {
            ok &= vars.contains(&v) || launches.contains(v);
        }
    });
    ok
}

/// Whether the read `r`, at the element of the write index `w`, holds only
/// where `d` does: its index has `w`'s form and one of its guards is `d`
/// with its variables renamed.
fn read_implies(r: &Read, w: &Affine, d: &Expr) -> bool {
    let Some(guards) = &r.guards else { return false };
    if !same_expr(&r.index.base, &w.base) || r.index.terms.len() != w.terms.len() {
        return false;
    }
    let mut rename = Vec::new();
    for (c, v, m, n) in &r.index.terms {
        let Some((_, wv, wm, wn)) = w.terms.iter().find(|t| t.0 == *c) else { return false };
        if (m, n) != (wm, wn) || rename.iter().any(|(_, x): &(Var, Expr)| x.as_var() == Some(wv)) {
            return false;
        }
        rename.push((v.clone(), Expr::var(wv)));
    }
    let an = Analyzer::new();
    let d = an.simplify(d);
    guards.iter().any(|g| same_expr(&an.simplify(&substitute(g, &rename)), &d))
}

/// Drops the decided conjuncts from the guards of the stores to `l`.
fn rewrite(
    s: &Stmt,
    l: &Buffer,
    drops: &HashMap<usize, Vec<Expr>>,
    clamped: &HashMap<usize, Expr>,
    counter: &mut usize,
) -> Stmt {
    match s {
        Stmt::If { cond, then, orelse: None } if matches!(&**then, Stmt::Store { buffer, .. } if buffer.key() == l.key()) =>
        {
            let n = *counter;
            *counter += 1;
            let Some(drop) = drops.get(&n) else { return s.clone() };
            let kept: Vec<Expr> =
                conjuncts(cond).into_iter().filter(|c| !drop.iter().any(|d| same_expr(c, d))).collect();
            // The value with its global loads clamped (the same value
            // where no global load can leave its buffer).
            let then = match (&**then, clamped.get(&n)) {
                (Stmt::Store { buffer, indices, .. }, Some(value)) => {
                    Stmt::Store { buffer: buffer.clone(), indices: indices.clone(), value: value.clone() }
                }
                _ => (**then).clone(),
            };
            match kept.into_iter().reduce(Expr::and) {
                Some(cond) => Stmt::If { cond, then: Box::new(then), orelse: None },
                None => then,
            }
        }
        Stmt::Store { buffer, .. } if buffer.key() == l.key() => {
            *counter += 1;
            s.clone()
        }
        _ => s.map_children(|c| rewrite(c, l, drops, clamped, counter)),
    }
}
