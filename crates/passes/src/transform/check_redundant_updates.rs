//! A check of the lowered kernel: an update of shared or global memory is
//! not done by several threads at once.
//!
//! A store whose value reads the buffer it writes (`C[i] = C[i] + ..`) is
//! a read-modify-write. If its index does not name a launched thread axis
//! of more than one thread, and no condition around it does, every thread
//! along that axis updates the same element at once: a race, and a wrong
//! result. (A schedule that leaves a product unbound on an axis that a
//! copy binds, with its accumulator in global memory, lowers to that.) A
//! plain store of a value that does not read its target is only redundant:
//! each thread writes the same value, as a copy done in full by every
//! thread does — unless the value depends on that thread index (`B[0, j]
//! = A[tx, j]`): then the threads write different values to one element,
//! and which lands is a race, also refused. So is an update whose index
//! names the thread but provably sends two threads to one element
//! (`s[threadIdx_x // 2] += ..`). Across thread blocks, which run in no
//! order and meet at no barrier, an update of global memory is refused
//! where two neighbouring blocks provably update one element (a producer
//! computed at a loop bound to the block index, whose consumer reads a halo
//! of it). Run after the pipeline, when
//! accumulators that could live
//! in registers (`promote_accumulators`) do: the refusal names the buffer
//! and the axis.

use std::collections::HashSet;
use tirc_ir::{BinOp, Buffer, Diagnostic, Expr, PrimFunc, Scope, Stmt, Var};

/// Refuses a kernel whose thread blocks meet at an element of global
/// memory that one of them updates (`blocks_write`, `blocks_meet`). Run
/// before `promote_accumulators`, which turns an update of global memory
/// into a register's and a plain store.
pub fn blocks(f: &PrimFunc) -> Result<(), Diagnostic> {
    let mut writes = Vec::new();
    blocks_write(&f.body, &mut Vec::new(), &mut Vec::new(), &mut Vec::new(), &mut writes);
    match blocks_meet(&writes) {
        None => Ok(()),
        Some((buffer, which, element)) => Err(Diagnostic::new(format!(
            "thread blocks {which} both write `{buffer}` at [{element}], and one of them updates it (reads the \
             element it writes): thread blocks run in no order, so one block's writes can land between the \
             other's updates (a race, and a wrong result)"
        ))
        .help(
            "give each block its own copy of the buffer (set_scope to \"shared\" or \"local\"), or compute it \
             outside the loop bound to the block index (its own kernel)",
        )
        .or_at_ir(f.span, "in this function")),
    }
}

pub fn run(f: &PrimFunc) -> Result<(), Diagnostic> {
    let mut found = None;
    walk(&f.body, &mut Vec::new(), &mut Vec::new(), &mut Vec::new(), &mut found);
    match found {
        None => Ok(()),
        Some((buffer, axis, Race::Store)) => Err(Diagnostic::new(format!(
            "the kernel stores into `{buffer}` a value that depends on {axis} at an element that does not: every \
             thread along {axis} writes its own value to the same element, and which one lands is a race"
        ))
        .help(format!("index `{buffer}` by the loop bound to {axis}, or keep that loop serial"))
        .or_at_ir(f.span, "in this function")),
        Some((buffer, axis, Race::SharedIndex)) => Err(Diagnostic::new(format!(
            "the kernel updates `{buffer}` (reads the element it writes) from several threads along {axis} at \
             once: its index sends two threads to the same element"
        ))
        .help(
            "keep the accumulator in registers (cache_write to \"local\" under the thread loops), or bind the loops \
             so that each thread updates elements of its own",
        )
        .or_at_ir(f.span, "in this function")),
        Some((buffer, axis, Race::Update)) => Err(Diagnostic::new(format!(
            "the kernel updates `{buffer}` (reads the element it writes) from several threads along {axis} at \
             once: the element's index does not name {axis} and no guard keeps the update to one thread (no loop \
             bound to {axis} runs the block that updates it, or a condition lets several threads through)"
        ))
        .help(format!(
            "bind a loop of the updating block to {axis}, or keep its accumulator in registers (cache_write to \
             \"local\" under the thread loops)"
        ))
        .or_at_ir(f.span, "in this function")),
    }
}

/// A store found racing: the buffer, the thread axis, and how.
type Found = Option<(String, String, Race)>;

enum Race {
    /// A plain store of a value that depends on the thread, to an element
    /// that does not.
    Store,
    /// An update (reads what it writes) of an element that does not depend
    /// on the thread.
    Update,
    /// An update whose index sends two threads to one element.
    SharedIndex,
}

fn walk(
    s: &Stmt,
    threads: &mut Vec<(Var, String, Option<i64>)>,
    conds: &mut Vec<Expr>,
    lets: &mut Vec<(Var, Expr)>,
    found: &mut Found,
) {
    if found.is_some() {
        return;
    }
    match s {
        Stmt::Let { var, value, body } => {
            lets.push((var.clone(), tirc_ir::subst::substitute(value, lets)));
            walk(body, threads, conds, lets, found);
            lets.pop();
        }
        Stmt::Launch { var, tag, extent, body } => {
            let many = !tag.is_block && extent.as_int() != Some(1);
            if many {
                threads.push((var.clone(), tag.name(), extent.as_int()));
            }
            walk(body, threads, conds, lets, found);
            if many {
                threads.pop();
            }
        }
        Stmt::If { cond, then, orelse } => {
            conds.push(cond.clone());
            walk(then, threads, conds, lets, found);
            conds.pop();
            if let Some(e) = orelse {
                conds.push(Expr::Not(Box::new(cond.clone())));
                walk(e, threads, conds, lets, found);
                conds.pop();
            }
        }
        Stmt::Store { buffer, indices, value } if matches!(buffer.scope(), Scope::Global | Scope::Shared) => {
            // Through the lets (`cse_var_1: T.int32 = threadIdx_x`, as TVM's
            // common-subexpression pass prints; `t = S[i] + x; S[i] = t`),
            // the value, indices and conditions.
            let value = tirc_ir::subst::substitute(value, lets);
            let mut reads = false;
            value.walk(&mut |e| reads |= matches!(e, Expr::Load(b, _) if b.key() == buffer.key()));
            let indices: Vec<Expr> = indices.iter().map(|i| tirc_ir::subst::substitute(i, lets)).collect();
            let conds: Vec<Expr> = conds.iter().map(|c| tirc_ir::subst::substitute(c, lets)).collect();
            for (v, name, extent) in threads.iter() {
                if !indices.iter().any(|i| i.uses(v)) && several_pass(v, *extent, &conds) && (reads || value.uses(v)) {
                    let race = if reads { Race::Update } else { Race::Store };
                    *found = Some((buffer.name().to_string(), name.clone(), race));
                    return;
                }
                // An update whose index names the thread but maps two
                // threads to one element (`s[threadIdx_x // 2]`).
                if reads && indices.iter().any(|i| i.uses(v)) && two_threads_meet(v, *extent, &indices, &conds) {
                    *found = Some((buffer.name().to_string(), name.clone(), Race::SharedIndex));
                    return;
                }
            }
        }
        _ => s.for_each_child(|c| walk(c, threads, conds, lets, found)),
    }
}

/// Whether more than one value of the thread index `v` (of `extent`
/// threads) passes the conditions: each that names `v` must bound it by a
/// constant (`v < 8`, `not v < 8`, `v == 0`); one of another form may pin a
/// single thread, and counts as passing one.
fn several_pass(v: &Var, extent: Option<i64>, conds: &[Expr]) -> bool {
    let Some(mut hi) = extent else { return false };
    let mut lo = 0i64;
    for c in conds.iter().flat_map(crate::arith::conjuncts) {
        if !c.uses(v) {
            continue;
        }
        let (negated, inner) = match &c {
            Expr::Not(x) => (true, (**x).clone()),
            x => (false, x.clone()),
        };
        let Expr::Binary(op, a, b) = &inner else { return false };
        // `v op k`, the variable on the left.
        let (op, k) = match (&**a, &**b) {
            (Expr::Var(x), k) if x == v => (*op, k.as_int()),
            (k, Expr::Var(x)) if x == v => (
                match op {
                    BinOp::Lt => BinOp::Gt,
                    BinOp::Le => BinOp::Ge,
                    BinOp::Gt => BinOp::Lt,
                    BinOp::Ge => BinOp::Le,
                    o => *o,
                },
                k.as_int(),
            ),
            _ => return false,
        };
        let Some(k) = k else { return false };
        let op = if negated {
            match op {
                BinOp::Lt => BinOp::Ge,
                BinOp::Le => BinOp::Gt,
                BinOp::Gt => BinOp::Le,
                BinOp::Ge => BinOp::Lt,
                BinOp::Eq => BinOp::Ne,
                BinOp::Ne => BinOp::Eq,
                _ => return false,
            }
        } else {
            op
        };
        match op {
            BinOp::Lt => hi = hi.min(k),
            BinOp::Le => hi = hi.min(k + 1),
            BinOp::Gt => lo = lo.max(k + 1),
            BinOp::Ge => lo = lo.max(k),
            BinOp::Eq => {
                lo = lo.max(k);
                hi = hi.min(k + 1);
            }
            // All but one still leaves several, where there were three.
            BinOp::Ne => {}
            _ => return false,
        }
    }
    hi - lo > 1
}

/// Whether thread 0 and another thread `t` along `v` (`t` < 64) both pass
/// `conds` and provably update the same element: each index, with `v` at
/// 0 and at `t`, simplifies to one expression. Unprovable pairs do not
/// count, so that nothing is refused on a guess.
fn two_threads_meet(v: &Var, extent: Option<i64>, indices: &[Expr], conds: &[Expr]) -> bool {
    let Some(extent) = extent else { return false };
    let an = crate::arith::Analyzer::new();
    let at = |e: &Expr, t: i64| an.simplify(&tirc_ir::subst::substitute(e, &[(v.clone(), Expr::Int(t, v.dtype()))]));
    let passes = |t: i64| conds.iter().all(|c| !c.uses(v) || an.prove(&at(c, t)) == Some(true));
    if !passes(0) {
        return false;
    }
    let first: Vec<Expr> = indices.iter().map(|i| at(i, 0)).collect();
    (1..extent.min(64)).any(|t| {
        passes(t)
            && indices.iter().zip(&first).all(|(i, f)| {
                let d = an.simplify(&(at(i, t) - f.clone()));
                d.as_int() == Some(0)
            })
    })
}

/// What a loop, a thread or a block index ranges over, for `blocks_write`.
enum Axis {
    /// A loop from its minimum, or a thread index from 0, `extent` values
    /// (`None`: not a constant).
    Counted { min: Option<i64>, extent: Option<i64> },
    /// A block index, named for the message, and its extent (`None`: not
    /// a constant).
    Block(String, Option<i64>),
}

/// What the stores into one global buffer write at each of a few blocks
/// (`block_points`), over every loop and thread around them, and what of
/// it they update (their value reads the element they write); `sets` is
/// `None` where some store's elements could not be computed.
struct BlockWrites {
    buffer: Buffer,
    /// The block indices' names, outermost launch first.
    axes: Vec<String>,
    points: Vec<Vec<i64>>,
    /// Written and updated elements at each point.
    sets: Option<Vec<(Elements, Elements)>>,
}

/// A set of elements of a buffer, each its indices.
type Elements = HashSet<Vec<i64>>;

/// The blocks compared: each block index at 0, 1 and 2 (those its extent
/// has), every combination.
fn block_points(extents: &[Option<i64>]) -> Vec<Vec<i64>> {
    let mut points = vec![Vec::new()];
    for e in extents {
        let n = e.map_or(3, |e| e.clamp(1, 3));
        points = points.iter().flat_map(|p| (0..n).map(move |v| [p.clone(), vec![v]].concat())).collect();
    }
    points
}

/// Collects `BlockWrites` of every store into global memory under a block
/// index. Each store's elements are enumerated over the loops and threads
/// around it (constant extents, at most 2^16 points, every condition
/// computable); a store where that fails leaves its buffer undecided (as
/// run-time sizes do).
fn blocks_write(
    s: &Stmt,
    scope: &mut Vec<(Var, Axis)>,
    conds: &mut Vec<Expr>,
    lets: &mut Vec<(Var, Expr)>,
    out: &mut Vec<BlockWrites>,
) {
    match s {
        Stmt::Let { var, value, body } => {
            lets.push((var.clone(), tirc_ir::subst::substitute(value, lets)));
            blocks_write(body, scope, conds, lets, out);
            lets.pop();
        }
        Stmt::Launch { var, tag, extent, body } => {
            let axis = if tag.is_block {
                Axis::Block(tag.name(), extent.as_int())
            } else {
                Axis::Counted { min: Some(0), extent: extent.as_int() }
            };
            scope.push((var.clone(), axis));
            blocks_write(body, scope, conds, lets, out);
            scope.pop();
        }
        Stmt::For(l) => {
            let min = tirc_ir::subst::substitute(&l.min, lets).as_int();
            let extent = tirc_ir::subst::substitute(&l.extent, lets).as_int();
            scope.push((l.var.clone(), Axis::Counted { min, extent }));
            blocks_write(&l.body, scope, conds, lets, out);
            scope.pop();
        }
        Stmt::If { cond, then, orelse } => {
            conds.push(tirc_ir::subst::substitute(cond, lets));
            blocks_write(then, scope, conds, lets, out);
            conds.pop();
            if let Some(e) = orelse {
                conds.push(Expr::Not(Box::new(tirc_ir::subst::substitute(cond, lets))));
                blocks_write(e, scope, conds, lets, out);
                conds.pop();
            }
        }
        Stmt::Store { buffer, indices, value } if buffer.scope() == Scope::Global => {
            let value = tirc_ir::subst::substitute(value, lets);
            let mut reads = false;
            value.walk(&mut |e| reads |= matches!(e, Expr::Load(b, _) if b.key() == buffer.key()));
            let indices: Vec<Expr> = indices.iter().map(|i| tirc_ir::subst::substitute(i, lets)).collect();
            let blocks: Vec<(&Var, &String, Option<i64>)> = scope
                .iter()
                .filter_map(|(v, a)| match a {
                    Axis::Block(name, extent) => Some((v, name, *extent)),
                    Axis::Counted { .. } => None,
                })
                .collect();
            if blocks.is_empty() {
                return;
            }
            let i = match out.iter().position(|w| w.buffer.key() == buffer.key()) {
                Some(i) => i,
                None => {
                    let points = block_points(&blocks.iter().map(|b| b.2).collect::<Vec<_>>());
                    let sets = Some(points.iter().map(|_| (HashSet::new(), HashSet::new())).collect());
                    let axes = blocks.iter().map(|b| b.1.clone()).collect();
                    out.push(BlockWrites { buffer: buffer.clone(), axes, points, sets });
                    out.len() - 1
                }
            };
            let w = &mut out[i];
            let found: Option<Vec<Elements>> = w
                .points
                .iter()
                .map(|p| {
                    let at: Vec<(usize, i64)> = blocks.iter().zip(p).map(|(b, &v)| (b.0.key(), v)).collect();
                    elements(scope, &at, &indices, conds)
                })
                .collect();
            match (&mut w.sets, found) {
                (Some(sets), Some(found)) if found.len() == sets.len() => {
                    for (set, new) in sets.iter_mut().zip(found) {
                        if reads {
                            set.1.extend(new.iter().cloned());
                        }
                        set.0.extend(new);
                    }
                }
                (sets, _) => *sets = None,
            }
        }
        _ => s.for_each_child(|c| blocks_write(c, scope, conds, lets, out)),
    }
}

/// The buffer, the two blocks (as the message names them) and the least
/// element that one of two different blocks updates and the other writes:
/// one block's writes land among the other's updates, in no order.
/// (Elements both only write are not: they hold one value whichever lands
/// last, as where each block recomputes the halo it reads.)
fn blocks_meet(writes: &[BlockWrites]) -> Option<(String, String, String)> {
    for w in writes {
        let Some(sets) = &w.sets else { continue };
        let mut best: Option<(Vec<i64>, usize, usize)> = None;
        for (a, (_, ua)) in sets.iter().enumerate() {
            for (b, (wb, _)) in sets.iter().enumerate() {
                if a == b {
                    continue;
                }
                if let Some(e) = ua.iter().filter(|e| wb.contains(*e)).min() {
                    if best.as_ref().is_none_or(|x| *e < x.0) {
                        best = Some((e.clone(), a.min(b), a.max(b)));
                    }
                }
            }
        }
        if let Some((e, a, b)) = best {
            let element = e.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ");
            let show = |p: &[i64]| p.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ");
            let (pa, pb) = (&w.points[a], &w.points[b]);
            // One axis that differs, the others at 0: `blockIdx.x = 0 and
            // blockIdx.x = 1`; else every axis.
            let differing: Vec<usize> = (0..pa.len()).filter(|&k| pa[k] != pb[k]).collect();
            let which = if differing.len() == 1 && (0..pa.len()).all(|k| differing.contains(&k) || pa[k] == 0) {
                let k = differing[0];
                format!("{} = {} and {} = {}", w.axes[k], pa[k], w.axes[k], pb[k])
            } else {
                let names = w.axes.join(", ");
                format!("({names}) = ({}) and ({})", show(pa), show(pb))
            };
            return Some((w.buffer.name().to_string(), which, element));
        }
    }
    None
}

/// The elements `indices` names where the block indices are as `blocks`
/// says (by key), over every point of the loops and threads of `scope`
/// that passes `conds`; `None` where that cannot be computed.
fn elements(scope: &[(Var, Axis)], blocks: &[(usize, i64)], indices: &[Expr], conds: &[Expr]) -> Option<Elements> {
    let mut ranges = Vec::new();
    let mut fixed: Vec<(usize, i64)> = Vec::new();
    for (v, axis) in scope {
        match axis {
            Axis::Block(..) => fixed.push((v.key(), blocks.iter().find(|b| b.0 == v.key()).map_or(0, |b| b.1))),
            Axis::Counted { min, extent } => ranges.push((v.key(), (*min)?, (*extent)?)),
        }
    }
    let points = ranges.iter().try_fold(1i64, |n, r| n.checked_mul(r.2.max(0)))?;
    if points > 1 << 16 {
        return None;
    }
    let mut out = HashSet::new();
    let mut at: Vec<i64> = ranges.iter().map(|r| r.1).collect();
    for _ in 0..points {
        let lookup = |v: &Var| {
            let k = v.key();
            fixed.iter().find(|f| f.0 == k).map(|f| f.1).or_else(|| ranges.iter().position(|r| r.0 == k).map(|i| at[i]))
        };
        let mut pass = true;
        for c in conds {
            if tirc_ir::expr::eval(c, &lookup)? == 0 {
                pass = false;
                break;
            }
        }
        if pass {
            out.insert(indices.iter().map(|i| tirc_ir::expr::eval(i, &lookup)).collect::<Option<Vec<i64>>>()?);
        }
        // The next point, the innermost axis fastest.
        for i in (0..at.len()).rev() {
            at[i] += 1;
            if at[i] < ranges[i].1 + ranges[i].2 {
                break;
            }
            at[i] = ranges[i].1;
        }
    }
    Some(out)
}
