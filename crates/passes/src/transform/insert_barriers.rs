//! `insert_barriers`: `__syncthreads()` wherever a thread may read shared
//! memory that another thread wrote, or overwrite what another thread may
//! still read, since the last barrier.
//!
//! The kernel body is walked in program order with the sets of shared
//! buffers written and read since the last barrier. A statement that reads a
//! buffer written since then (read after write), or writes one read since
//! then (write after read: a tile overwritten while it is still in use),
//! gets a barrier before it, and the sets start again. A loop whose bounds
//! are the same for every thread and whose body both writes and reads some
//! shared buffer is entered: its body is walked twice, the second time with
//! what the end of the body left, so that a conflict between the end of one
//! iteration and the start of the next gets its barrier too. A conditional
//! whose test is the same for every thread (no thread index, no value
//! derived from one, no load) is entered too, each branch walked from the
//! state before it. Other statements are taken whole — in particular
//! conditionals that depend on the thread, so that no barrier lands where
//! only some threads would reach it. A buffer is
//! tracked as a whole, so two threads touching different words of one
//! buffer still get a barrier between them. Asynchronous copies
//! (`T.cp_async`) write when issued and again, as far as other threads can
//! tell, at every `T.ptx_wait_group` until a `wait_group(0)`: a read after
//! a wait gets a barrier after the wait. Runs after `extract_launch`.
//!
//! A global buffer that the kernel both writes and reads with different
//! maps from threads to elements (an intermediate one thread writes and
//! another reads, as in a function whose nests share a `threadIdx` loop)
//! is tracked like shared memory: a barrier orders global memory among the
//! threads of a block too. One whose every access has the same
//! coefficients of the thread indices (`C[i, j] +=` in place) stays with
//! the thread that owns the element and is not, unless some thread index
//! is in none of its indices (`S[blockIdx.x]`, written by one thread and
//! read by all), or unless each thread's elements reach those of the next
//! (`P[tx]` written, `P[tx + 1]` read: a halo).

use std::collections::HashSet;
use tirc_ir::{Buffer, BufferId, Diagnostic, Expr, Intrinsic, PrimFunc, Scope, Stmt, Var};

pub fn run(mut f: PrimFunc) -> Result<PrimFunc, Diagnostic> {
    let (heads, body) = f.body.clone().split_launch_head();
    let threads: Vec<Var> = heads.iter().filter(|(_, t, _)| !t.is_block).map(|(v, _, _)| v.clone()).collect();
    // Multi-buffered tiles of a software pipeline got their barriers there.
    let skip = std::mem::take(&mut f.facts.pipeline_synced);
    let blocks: Vec<Var> = heads.iter().filter(|(_, t, _)| t.is_block).map(|(v, _, _)| v.clone()).collect();
    let globals = if threads.is_empty() { HashSet::new() } else { exchanged_globals(&body, &threads, &blocks) };
    let varying = varying_vars(&body, &threads);
    let cx = Cx { skip, globals, varying };
    let mut st = State::default();
    f.body = Stmt::with_launch_head(heads, sync(&body, &mut st, &cx));
    Ok(f)
}

#[derive(Clone, Default)]
struct State {
    written: HashSet<Buffer>,
    read: HashSet<Buffer>,
    /// Buffers with asynchronous copies in flight: they count as written
    /// again at every `wait_group`, where the copies land, and stay in
    /// flight across barriers until a `wait_group(0)`.
    pending: HashSet<Buffer>,
}

struct Cx {
    /// Buffers whose barriers another pass placed.
    skip: Vec<BufferId>,
    /// Global buffers that pass values between threads.
    globals: HashSet<BufferId>,
    /// The thread indices and the variables whose values may differ from
    /// one thread to another (a `let` of one, a loop bounded by one).
    varying: Vec<Var>,
}

impl Cx {
    fn tracked(&self, b: &Buffer) -> bool {
        (b.scope() == Scope::Shared || self.globals.contains(&b.id())) && !self.skip.contains(&b.id())
    }
}

/// The global buffers `body` both writes and reads where some access maps
/// the threads onto the elements differently from another (the
/// coefficients of `threads` in its index differ, or are not constants),
/// or where one map lets two threads meet: each thread's elements, the part
/// of each index that does not depend on the thread (the thread and block
/// indices at 0) over the loops around it, span more than the distance
/// between two threads' (`P[tx]` written and `P[tx + 1]` read).
fn exchanged_globals(body: &Stmt, threads: &[Var], blocks: &[Var]) -> HashSet<BufferId> {
    type Mapping = Vec<Vec<Option<i64>>>;
    struct Seen {
        buffer: Buffer,
        written: bool,
        read: bool,
        maps: Vec<Mapping>,
        /// Each access's indices, the thread and block indices at 0.
        rests: Vec<Vec<Expr>>,
        /// The distinct `canonical` forms of those.
        keys: Vec<String>,
    }
    let uniform: Vec<(Var, Expr)> =
        threads.iter().chain(blocks).map(|v| (v.clone(), Expr::Int(0, v.dtype()))).collect();
    // The ranges of the loops (constant ones), for the spans.
    let mut an = crate::arith::Analyzer::new();
    let mut loops: Vec<(Var, i64, i64)> = Vec::new();
    body.walk(&mut |x| {
        if let Stmt::For(l) = x {
            if let (Some(min), Some(extent)) = (l.min.as_int(), l.extent.as_int()) {
                if extent > 0 {
                    an.bind(&l.var, min, min + extent - 1);
                    loops.push((l.var.clone(), min, extent));
                }
            }
        }
    });
    // An access's indices with its loops named by their place and range
    // (`C[i * 48 + j]` of one nest and `C[i_1 * 48 + j_1]` of another over
    // the same ranges read alike).
    let canonical = |rest: &[Expr]| -> String {
        let mut names: Vec<(Var, Expr)> = Vec::new();
        for e in rest {
            e.walk(&mut |x| {
                if let Expr::Var(v) = x {
                    if let Some((_, min, extent)) = loops.iter().find(|l| l.0 == *v) {
                        if !names.iter().any(|n| n.0 == *v) {
                            let name = format!("loop{}_{min}_{extent}", names.len());
                            names.push((v.clone(), Expr::Var(Var::new(name, v.dtype()))));
                        }
                    }
                }
            });
        }
        rest.iter()
            .map(|e| tirc_ir::printer::print_expr(&tirc_ir::subst::substitute(e, &names)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut seen: Vec<Seen> = Vec::new();
    let mut note = |b: &Buffer, idx: &[Expr], store: bool| {
        if b.scope() != Scope::Global {
            return;
        }
        let mapping: Mapping =
            idx.iter().map(|e| threads.iter().map(|t| tirc_ir::region::coefficient(e, t)).collect()).collect();
        let i = match seen.iter().position(|x| x.buffer.id() == b.id()) {
            Some(i) => i,
            None => {
                seen.push(Seen {
                    buffer: b.clone(),
                    written: false,
                    read: false,
                    maps: Vec::new(),
                    rests: Vec::new(),
                    keys: Vec::new(),
                });
                seen.len() - 1
            }
        };
        let e = &mut seen[i];
        if store {
            e.written = true;
        } else {
            e.read = true;
        }
        if !e.maps.contains(&mapping) {
            e.maps.push(mapping);
        }
        let rest: Vec<Expr> = idx.iter().map(|x| tirc_ir::subst::substitute(x, &uniform)).collect();
        let key = canonical(&rest);
        if !e.keys.contains(&key) {
            e.keys.push(key);
        }
        e.rests.push(rest);
    };
    body.for_each_access(&mut |b, idx, store| note(b, idx, store));
    // One map, affine in every thread index: each element stays with one
    // thread, unless some thread index is in none of the indices (all the
    // threads along it touch the same element: a value one writes and the
    // others read).
    let shared_along = |m: &Mapping| (0..threads.len()).any(|t| m.iter().all(|dim| dim[t] == Some(0)));
    let exchanged =
        |m: &[Mapping]| m.len() > 1 || m.iter().flatten().flatten().any(Option::is_none) || m.iter().any(shared_along);
    // Under one map, accesses that name the same elements of each thread
    // (one `canonical` form: an update in place, a nest and another over
    // the same ranges) keep each element with its thread, as before this
    // test. Others keep threads `t` apart along a thread index only by a
    // dimension that it alone indexes (coefficient `c`) where every
    // thread's elements span at most `|c|`: with no such dimension (two
    // thread indices in one flat index), or a span that cannot be bounded
    // (a run-time window, a `let`), the threads may meet.
    let meet = |x: &Seen| {
        if x.keys.len() <= 1 {
            return false;
        }
        let Some(m) = x.maps.first() else { return false };
        (0..threads.len()).any(|t| {
            let dims: Vec<(usize, i64)> = (0..m.len())
                .filter_map(|d| match m[d][t] {
                    Some(c) if c != 0 && (0..threads.len()).all(|u| u == t || m[d][u] == Some(0)) => Some((d, c)),
                    _ => None,
                })
                .collect();
            dims.iter().all(|&(d, c)| {
                let bounds: Option<Vec<(i64, i64)>> = x.rests.iter().map(|r| an.bound(&r[d])).collect();
                bounds.is_none_or(|b| {
                    let lo = b.iter().map(|p| p.0).min().unwrap_or(0);
                    let hi = b.iter().map(|p| p.1).max().unwrap_or(0);
                    hi - lo + 1 > c.abs()
                })
            })
        })
    };
    seen.into_iter().filter(|x| x.written && x.read && (exchanged(&x.maps) || meet(x))).map(|x| x.buffer.id()).collect()
}

/// The shared buffers `s` reads and writes.
fn accesses(s: &Stmt, cx: &Cx) -> (HashSet<Buffer>, HashSet<Buffer>) {
    let mut r = HashSet::new();
    let mut w = HashSet::new();
    s.walk(&mut |x| {
        x.for_each_expr(|e| {
            e.walk(&mut |y| {
                if let Expr::Load(b, _) = y {
                    if cx.tracked(b) {
                        r.insert(b.clone());
                    }
                }
            })
        });
        if let Stmt::Store { buffer, .. } = x {
            if cx.tracked(buffer) {
                w.insert(buffer.clone());
            }
        }
        // A tensor-core operation reads and writes whole tiles, across the
        // threads of a warp.
        if let Stmt::Wmma(op) = x {
            r.extend(op.reads().iter().map(|t| &t.buffer).filter(|b| cx.tracked(b)).cloned());
            if cx.tracked(&op.write().buffer) {
                w.insert(op.write().buffer.clone());
            }
        }
    });
    (r, w)
}

fn sync(s: &Stmt, st: &mut State, cx: &Cx) -> Stmt {
    match s {
        Stmt::Seq(v) => Stmt::seq(v.iter().map(|c| sync(c, st, cx)).collect()),
        Stmt::Allocate { buffer, body } => {
            Stmt::Allocate { buffer: buffer.clone(), body: Box::new(sync(body, st, cx)) }
        }
        Stmt::Let { var, value, body } => {
            // The value is read before the body runs: a barrier goes before
            // the `let` when it reads what another thread wrote.
            let mut r = HashSet::new();
            value.walk(&mut |y| {
                if let Expr::Load(b, _) = y {
                    if cx.tracked(b) {
                        r.insert(b.clone());
                    }
                }
            });
            let barrier = r.iter().any(|b| st.written.contains(b));
            if barrier {
                st.written.clear();
                st.read.clear();
            }
            st.read.extend(r);
            let s = Stmt::Let { var: var.clone(), value: value.clone(), body: Box::new(sync(body, st, cx)) };
            if barrier {
                Stmt::seq(vec![Stmt::Barrier, s])
            } else {
                s
            }
        }
        Stmt::If { cond, then, orelse } if uniform(cond, cx) => {
            // Every thread takes the same branch: barriers may go inside.
            let before = st.clone();
            let then = Box::new(sync(then, st, cx));
            let mut other = before;
            let orelse = orelse.as_ref().map(|e| Box::new(sync(e, &mut other, cx)));
            st.written.extend(other.written);
            st.read.extend(other.read);
            st.pending.extend(other.pending);
            Stmt::If { cond: cond.clone(), then, orelse }
        }
        Stmt::For(l) if enter(l, cx) => {
            let mut first = st.clone();
            let _ = sync(&l.body, &mut first, cx);
            let mut second = State {
                written: st.written.union(&first.written).cloned().collect(),
                read: st.read.union(&first.read).cloned().collect(),
                pending: st.pending.union(&first.pending).cloned().collect(),
            };
            let body = sync(&l.body, &mut second, cx);
            // The loop may also run no iteration at all.
            st.written.extend(second.written);
            st.read.extend(second.read);
            st.pending.extend(second.pending);
            let mut l = (**l).clone();
            l.body = body;
            Stmt::For(Box::new(l))
        }
        Stmt::AsyncWait(n) => {
            st.written.extend(st.pending.iter().cloned());
            if *n == 0 {
                st.pending.clear();
            }
            s.clone()
        }
        Stmt::Barrier => {
            st.written.clear();
            st.read.clear();
            s.clone()
        }
        _ => {
            let (r, w) = accesses(s, cx);
            let mut copies = HashSet::new();
            s.walk(&mut |x| {
                if let Stmt::Store { buffer, value: Expr::Call(Intrinsic::CpAsync, _), .. } = x {
                    if !cx.skip.contains(&buffer.id()) {
                        copies.insert(buffer.clone());
                    }
                }
            });
            st.pending.extend(copies);
            if r.iter().any(|b| st.written.contains(b)) || w.iter().any(|b| st.read.contains(b)) {
                st.written = w;
                st.read = r;
                return Stmt::seq(vec![Stmt::Barrier, s.clone()]);
            }
            st.written.extend(w);
            st.read.extend(r);
            s.clone()
        }
    }
}

/// Whether to walk into a loop: its bounds are uniform across threads and
/// its body both writes and reads some shared buffer.
fn enter(l: &tirc_ir::For, cx: &Cx) -> bool {
    if uses_any(&l.min, &cx.varying) || uses_any(&l.extent, &cx.varying) {
        return false;
    }
    let (r, w) = accesses(&l.body, cx);
    r.intersection(&w).next().is_some()
}

/// Whether every thread computes the same value of `cond`: it reads no
/// memory and no variable that may differ between threads.
fn uniform(cond: &Expr, cx: &Cx) -> bool {
    let mut loads = false;
    cond.walk(&mut |e| loads |= matches!(e, Expr::Load(..)));
    !loads && !uses_any(cond, &cx.varying)
}

/// The thread indices and every variable bound from one of them or from a
/// load, directly or through other such variables: `let` values and loop
/// bounds, to a fixed point.
fn varying_vars(body: &Stmt, threads: &[Var]) -> Vec<Var> {
    let mut varying = threads.to_vec();
    loop {
        let mut added = Vec::new();
        let depends = |e: &Expr, varying: &[Var]| {
            let mut loads = false;
            e.walk(&mut |x| loads |= matches!(x, Expr::Load(..)));
            loads || uses_any(e, varying)
        };
        body.walk(&mut |s| match s {
            Stmt::Let { var, value, .. } if !varying.contains(var) && depends(value, &varying) => {
                added.push(var.clone())
            }
            Stmt::For(l)
                if !varying.contains(&l.var) && (depends(&l.min, &varying) || depends(&l.extent, &varying)) =>
            {
                added.push(l.var.clone())
            }
            _ => {}
        });
        if added.is_empty() {
            return varying;
        }
        varying.extend(added);
    }
}

fn uses_any(e: &Expr, vars: &[Var]) -> bool {
    vars.iter().any(|v| e.uses(v))
}
