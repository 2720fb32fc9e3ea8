//! `inject_virtual_thread`: the iterations of a virtual thread interleaved.
//!
//! A loop bound to a virtual thread (`T.thread_binding(n,
//! thread="vthread.x")`, which the parser and `bind` keep as an unrolled
//! loop marked `tirc_ir::stmt::VTHREAD`) stands for `n` threads that one
//! real thread runs. Run one after the other, each would repeat what does
//! not depend on it: the cooperative copies into shared memory, the loop
//! over k-tiles around them. As TVM does, this pass interleaves them
//! instead. The loop goes down into its body, past every statement that
//! does not depend on its variable (loops, conditionals, lets, allocations
//! whose bounds and tests do not), to the statements that do, each of which
//! becomes an unrolled loop of its own:
//!
//! ```text
//! for v in vthread(2):                 for k in range(K):
//!     C_l = decl((4,))                     C_l = decl((2, 4))
//!     for k in range(K):           =>      S[..] = A[k, ..]
//!         S[..] = A[k, ..]                 for v in T.unroll(2):
//!         C_l[0] += S[v * 32]                  C_l[v, 0] += S[v * 32]
//! ```
//!
//! Contract, each part checked; where one cannot be shown the loop stays as
//! it was (unrolled, each virtual thread after the other, always correct)
//! and only loses its mark:
//! - A buffer declared inside the loop (a thread's accumulator or register
//!   tile, which `compact_buffers` declares where it is used) is private to
//!   each virtual thread: it gets a leading dimension of `n`, indexed by the
//!   loop variable, unless its declaration is itself inside a statement
//!   that is repeated whole. Only `"local"` buffers without a padded or
//!   swizzled layout are taken.
//! - A statement that neither uses the variable nor a private buffer runs
//!   once instead of `n` times. That gives what `n` runs give when it reads
//!   nothing the loop's body writes and no statement that depends on the
//!   variable writes what it writes.
//! - The statements that depend on the variable run in a new order (each
//!   for every virtual thread before the next), so the virtual threads must
//!   not meet: every buffer declared outside that those statements write is
//!   touched by them, in each virtual thread, inside a box (the bounds of
//!   the indices with the loops inside relaxed) that lies apart from every
//!   other virtual thread's box in some dimension.
//! - The body holds no barrier or asynchronous-copy group (none is placed
//!   before `insert_barriers`; lowered text may hold them).
//!
//! Runs after `compact_buffers` and before `inject_software_pipeline`: a
//! pipelined loop inside keeps its statements, one stage each.

use crate::bounds::relax;
use tirc_ir::stmt::VTHREAD;
use tirc_ir::subst::{substitute, substitute_stmt};
use tirc_ir::{Buffer, Diagnostic, Expr, For, ForKind, PrimFunc, Scope, Stmt, Var};

pub fn run(mut func: PrimFunc) -> Result<PrimFunc, Diagnostic> {
    // The range of every loop of the function, for the comparisons of
    // bounds that speak of the loops around a virtual thread.
    let ranges = crate::bounds::loop_ranges(&func.body);
    func.body = visit(&func.body, &ranges, false);
    Ok(func)
}

/// Inner virtual threads first: an outer one then goes down through the
/// unrolled loops they left. `stage`: `s` is a statement of a pipelined
/// loop's body, one stage, and stays one statement (a virtual thread that
/// interleaving would make several stays unrolled).
fn visit(s: &Stmt, ranges: &[(Var, Expr, Expr)], stage: bool) -> Stmt {
    let visited = match s {
        Stmt::For(f) if f.annotations.iter().any(|(k, _)| k == crate::common::pipeline::STAGE) => {
            let body = match &f.body {
                Stmt::Seq(items) => Stmt::Seq(items.iter().map(|c| visit(c, ranges, true)).collect()),
                b => visit(b, ranges, true),
            };
            Stmt::For(Box::new(f.with_body(body)))
        }
        _ => s.map_children(|c| visit(c, ranges, false)),
    };
    match visited {
        Stmt::For(l) if l.is_vthread() => {
            let mut plain = *l;
            plain.annotations.retain(|(k, _)| k != VTHREAD);
            match interleave(&plain, ranges) {
                Some(Stmt::Seq(v)) if stage && v.len() > 1 => Stmt::For(Box::new(plain)),
                Some(r) => r,
                None => Stmt::For(Box::new(plain)),
            }
        }
        s => s,
    }
}

/// What the pass needs to know of one virtual-thread loop.
struct Vt<'a> {
    l: &'a For,
    /// The buffers declared inside the loop.
    private: Vec<Buffer>,
}

impl Vt<'_> {
    /// Whether `s` depends on the virtual thread: uses its variable or a
    /// private buffer.
    fn depends(&self, s: &Stmt) -> bool {
        let v = &self.l.var;
        let mut found = false;
        s.walk(&mut |x| {
            if let Stmt::For(f) = x {
                found |= f.var == *v;
            }
            x.for_each_expr(|e| found |= e.uses(v));
        });
        found || self.private.iter().any(|b| s.uses_buffer(b))
    }

    /// Whether the loop goes down into `s` (a statement that depends on
    /// it) rather than repeating it whole.
    fn descends(&self, s: &Stmt) -> bool {
        let plain = |e: &Expr| !e.uses(&self.l.var) && !e.has_load();
        match s {
            Stmt::Seq(_) | Stmt::Allocate { .. } => true,
            Stmt::For(f) => {
                plain(&f.min) && plain(&f.extent) && !matches!(f.kind, ForKind::Vectorized | ForKind::Parallel)
            }
            Stmt::If { cond, .. } => plain(cond),
            Stmt::Let { value, .. } => plain(value),
            _ => false,
        }
    }

    /// The statements of `s` repeated for each virtual thread and those
    /// run once, each with the loops around it inside the virtual thread's
    /// loop and its place.
    fn parts<'s>(&self, s: &'s Stmt, at: &mut Place<'s>, out: &mut Parts<'s>) {
        if !self.depends(s) {
            out.once.push(Part { stmt: s, loops: at.loops.clone(), path: at.path.clone() });
            return;
        }
        if !self.descends(s) {
            out.each.push(Part { stmt: s, loops: at.loops.clone(), path: at.path.clone() });
            return;
        }
        match s {
            Stmt::For(f) => {
                at.loops.push(f);
                self.parts(&f.body, at, out);
                at.loops.pop();
            }
            Stmt::Seq(items) => {
                for (i, c) in items.iter().enumerate() {
                    at.path.push((s as *const Stmt, i, at.loops.len()));
                    self.parts(c, at, out);
                    at.path.pop();
                }
            }
            // A branch is a place of its own (index past any statement's:
            // what runs in it is no earlier statement of a sequence).
            Stmt::If { then, orelse, .. } => {
                at.path.push((s as *const Stmt, usize::MAX, at.loops.len()));
                self.parts(then, at, out);
                if let Some(e) = orelse {
                    self.parts(e, at, out);
                }
                at.path.pop();
            }
            Stmt::Allocate { body, .. } => self.parts(body, at, out),
            Stmt::Let { var, body, .. } => {
                out.lets.push(var.clone());
                self.parts(body, at, out)
            }
            _ => s.for_each_child(|c| self.parts(c, at, out)),
        }
    }

    /// `s` with the loop pushed down (see `parts`); `expanded` the private
    /// buffers declared above, each with its version of one more
    /// dimension.
    fn build(&self, s: &Stmt, expanded: &mut Vec<(Buffer, Buffer)>) -> Stmt {
        if !self.depends(s) {
            return s.clone();
        }
        if !self.descends(s) {
            return self.repeat(s, expanded);
        }
        match s {
            // Each statement of a sequence keeps its place (a pipelined
            // loop's stages are its statements).
            Stmt::Seq(items) => Stmt::Seq(items.iter().map(|c| self.build(c, expanded)).collect()),
            Stmt::Allocate { buffer, body } => {
                let n = self.l.extent.clone();
                let wide = buffer.with(|b| b.shape.insert(0, n));
                expanded.push((buffer.clone(), wide.clone()));
                let body = self.build(body, expanded);
                expanded.pop();
                Stmt::Allocate { buffer: wide, body: Box::new(body) }
            }
            _ => s.map_children(|c| self.build(c, expanded)),
        }
    }

    /// `s` run for each virtual thread: an unrolled loop of a fresh
    /// variable, the expanded private buffers indexed by it.
    fn repeat(&self, s: &Stmt, expanded: &[(Buffer, Buffer)]) -> Stmt {
        let l = self.l;
        let v = l.var.renamed(l.var.name());
        let body = substitute_stmt(s, &[(l.var.clone(), Expr::var(&v))]);
        let which = match l.min.as_int() {
            Some(0) => Expr::var(&v),
            _ => Expr::var(&v) - l.min.clone(),
        };
        let body = prefix_accesses(&body, expanded, &which);
        Stmt::For(Box::new(For {
            var: v,
            min: l.min.clone(),
            extent: l.extent.clone(),
            kind: ForKind::Unrolled,
            annotations: Vec::new(),
            body,
            span: l.span,
        }))
    }
}

/// Where a statement is in the virtual thread's body: the loops around it
/// (inside the virtual thread's loop) and, for each sequence on the way
/// down, the sequence, the statement's index in it and how many of those
/// loops are around the sequence.
#[derive(Default)]
struct Place<'s> {
    loops: Vec<&'s For>,
    path: Vec<(*const Stmt, usize, usize)>,
}

struct Part<'s> {
    stmt: &'s Stmt,
    loops: Vec<&'s For>,
    path: Vec<(*const Stmt, usize, usize)>,
}

#[derive(Default)]
struct Parts<'s> {
    /// Repeated for each virtual thread.
    each: Vec<Part<'s>>,
    /// Run once.
    once: Vec<Part<'s>>,
    /// Variables bound by lets the loop goes down through.
    lets: Vec<Var>,
}

/// The loop `l` (a virtual thread, its mark dropped) interleaved, or `None`
/// where the contract cannot be shown.
fn interleave(l: &For, ranges: &[(Var, Expr, Expr)]) -> Option<Stmt> {
    l.extent.as_int()?;
    let mut private = Vec::new();
    let mut sync = false;
    l.body.walk(&mut |s| match s {
        Stmt::Allocate { buffer, .. } => private.push(buffer.clone()),
        Stmt::Barrier | Stmt::AsyncCommit | Stmt::AsyncWait(_) | Stmt::Block(_) | Stmt::Launch { .. } => sync = true,
        _ => {}
    });
    if sync {
        return None;
    }
    let plain_local = |b: &Buffer| b.scope() == Scope::Local && b.swizzle() == 0 && b.dim_align().is_empty();
    if !private.iter().all(plain_local) {
        return None;
    }
    let vt = Vt { l, private };
    let mut parts = Parts::default();
    vt.parts(&l.body, &mut Place::default(), &mut parts);
    if parts.each.is_empty() {
        // Nothing depends on the virtual thread: every one does the same.
        return None;
    }
    // Accesses, per buffer declared outside: (written, indices, loops
    // around inside the virtual thread) of the repeated statements, and
    // the buffers the statements run once read and write.
    let outside = |b: &Buffer| !vt.private.contains(b);
    let (mut once_reads, mut once_writes) = (Vec::<Buffer>::new(), Vec::<Buffer>::new());
    for p in &parts.once {
        let s = p.stmt;
        let mut wmma = false;
        s.walk(&mut |x| wmma |= matches!(x, Stmt::Wmma(_)));
        if wmma {
            return None;
        }
        s.for_each_access(&mut |b, _, store| {
            let list = if store { &mut once_writes } else { &mut once_reads };
            if !list.contains(b) {
                list.push(b.clone());
            }
        });
    }
    let (mut each_reads, mut each_writes) = (Vec::<Buffer>::new(), Vec::<Buffer>::new());
    for p in &parts.each {
        p.stmt.for_each_access(&mut |b, _, store| {
            let list = if store { &mut each_writes } else { &mut each_reads };
            if outside(b) && !list.contains(b) {
                list.push(b.clone());
            }
        });
    }
    if once_writes.iter().any(|b| each_writes.contains(b) || once_reads.contains(b))
        || once_reads.iter().any(|b| each_writes.contains(b))
    {
        return None;
    }
    for b in &each_writes {
        if !apart(&vt, &parts, b) {
            return None;
        }
    }
    // What the statements run once write, the others read after it, in
    // the same pass over the body: run once, it is not written again for
    // the next virtual thread, which must not need it to be.
    for b in once_writes.iter().filter(|b| each_reads.contains(b)) {
        if !written_before_read(&vt, &parts, b, ranges) {
            return None;
        }
    }
    Some(vt.build(&l.body, &mut Vec::new()))
}

/// Whether the repeated statements touch `b` apart from one virtual
/// thread to the next.
fn apart(vt: &Vt, parts: &Parts, b: &Buffer) -> bool {
    let v = &vt.l.var;
    let mut boxes: Vec<Vec<(Expr, Expr)>> = Vec::new();
    let mut ok = true;
    for p in &parts.each {
        let s = p.stmt;
        // The loops inside the statement too.
        let mut inner: Vec<(Var, Expr, Expr)> =
            p.loops.iter().map(|f| (f.var.clone(), f.min.clone(), f.extent.clone())).collect();
        let mut bound: Vec<Var> = parts.lets.clone();
        s.walk(&mut |x| match x {
            Stmt::For(f) => inner.push((f.var.clone(), f.min.clone(), f.extent.clone())),
            Stmt::Let { var, .. } => bound.push(var.clone()),
            Stmt::Wmma(w) => ok &= !w.tiles.iter().any(|t| t.buffer == *b),
            _ => {}
        });
        s.for_each_access(&mut |x, idx, _| {
            if x != b || !ok {
                return;
            }
            if idx.iter().any(|e| e.has_load() || bound.iter().any(|w| e.uses(w))) {
                ok = false;
                return;
            }
            match idx.iter().map(|e| relax(e, &inner)).collect::<Option<Vec<_>>>() {
                Some(d) => boxes.push(d),
                None => ok = false,
            }
        });
    }
    if !ok || boxes.is_empty() {
        return ok;
    }
    // The box around every access: bounds that differ by constants.
    let an = crate::arith::Analyzer::new();
    let diff = |a: &Expr, b: &Expr| an.simplify(&(a.clone() - b.clone())).as_int();
    let mut hull = boxes[0].clone();
    for bx in &boxes[1..] {
        for ((lo, hi), (blo, bhi)) in hull.iter_mut().zip(bx) {
            match (diff(blo, lo), diff(bhi, hi)) {
                (Some(dl), Some(dh)) => {
                    if dl < 0 {
                        *lo = blo.clone();
                    }
                    if dh > 0 {
                        *hi = bhi.clone();
                    }
                }
                _ => return false,
            }
        }
    }
    // Each two virtual threads' boxes apart in some dimension (a fused
    // pair of virtual threads, `v // 2` and `v % 2`, moves along one
    // dimension or the other).
    let (Some(lo), Some(n)) = (vt.l.min.as_int(), vt.l.extent.as_int()) else { return false };
    if n > MAX_PAIRS_OF {
        return false;
    }
    let at = |x: i64| -> Vec<(Expr, Expr)> {
        let map = [(v.clone(), Expr::Int(x, v.dtype()))];
        hull.iter().map(|(l, h)| (substitute(l, &map), substitute(h, &map))).collect()
    };
    let boxes: Vec<Vec<(Expr, Expr)>> = (lo..lo + n).map(at).collect();
    (0..boxes.len()).all(|a| {
        (a + 1..boxes.len()).all(|c| {
            boxes[a].iter().zip(&boxes[c]).any(|((la, ha), (lc, hc))| {
                diff(lc, ha).is_some_and(|x| x >= 1) || diff(la, hc).is_some_and(|x| x >= 1)
            })
        })
    })
}

/// Whether every read of `b` (written by statements run once) by a
/// statement repeated for each virtual thread reads what a statement run
/// once wrote before it in the same iteration of the loops around both: a
/// statement of the same sequence, earlier, under no condition, whose box
/// (or that of several such, side by side) holds the read's box for every
/// virtual thread. A read of a value left by an earlier iteration (a
/// buffer filled after it is read, or for the next iteration) would find,
/// interleaved, what the last virtual thread left, not its own.
fn written_before_read(vt: &Vt, parts: &Parts, b: &Buffer, ranges: &[(Var, Expr, Expr)]) -> bool {
    let an = crate::arith::Analyzer::new();
    let diff = |a: &Expr, c: &Expr| an.simplify(&(a.clone() - c.clone())).as_int();
    let le = |a: &Expr, c: &Expr| crate::bounds::provably_le(&an, a, c, ranges);
    let range = |f: &For| (f.var.clone(), f.min.clone(), f.extent.clone());
    let inner = |s: &Stmt, out: &mut Vec<(Var, Expr, Expr)>| {
        s.walk(&mut |x| {
            if let Stmt::For(f) = x {
                out.push(range(f));
            }
        })
    };
    let index_ok = |e: &Expr| !e.has_load() && !parts.lets.iter().any(|w| e.uses(w));
    for r in &parts.each {
        let mut reads: Vec<&[Expr]> = Vec::new();
        r.stmt.for_each_access(&mut |x, idx, store| {
            if !store && x == b {
                reads.push(idx);
            }
        });
        if reads.is_empty() {
            continue;
        }
        // The boxes the statements run once before it write, at each
        // sequence on its way down.
        let mut boxes: Vec<Vec<(Expr, Expr)>> = Vec::new();
        for (k, &(seq, i, _)) in r.path.iter().enumerate() {
            for w in parts.once.iter().filter(|w| {
                w.path.len() == k + 1 && w.path[..k] == r.path[..k] && w.path[k].0 == seq && w.path[k].1 < i
            }) {
                // Under no condition: no test, and no loop that may run
                // no iteration.
                let mut guarded = false;
                w.stmt.walk(&mut |x| match x {
                    Stmt::If { .. } | Stmt::Let { .. } => guarded = true,
                    Stmt::For(f) => guarded |= !le(&Expr::int(1), &f.extent),
                    _ => {}
                });
                if guarded {
                    continue;
                }
                let mut relaxed = Vec::new();
                inner(w.stmt, &mut relaxed);
                w.stmt.for_each_access(&mut |x, idx, store| {
                    if store && x == b && idx.iter().all(index_ok) {
                        if let Some(d) = idx.iter().map(|e| relax(e, &relaxed)).collect::<Option<Vec<_>>>() {
                            boxes.push(d);
                        }
                    }
                });
            }
        }
        let boxes = merge_adjacent(boxes, &diff);
        // The read's box over the virtual thread, the statement's own loops
        // and those between it and a sequence on its way down (any: a
        // writer's box does not depend on the loops below its sequence, so
        // a read held in it for each of their values is held in it).
        for idx in reads {
            if !idx.iter().all(index_ok) {
                return false;
            }
            let covered = r.path.iter().any(|&(_, _, nloops)| {
                let mut relaxed: Vec<(Var, Expr, Expr)> = r.loops[nloops..].iter().map(|f| range(f)).collect();
                inner(r.stmt, &mut relaxed);
                relaxed.push(range(vt.l));
                let Some(rd) = idx.iter().map(|e| relax(e, &relaxed)).collect::<Option<Vec<_>>>() else { return false };
                boxes.iter().any(|w| {
                    w.len() == rd.len() && w.iter().zip(&rd).all(|((wl, wh), (rl, rh))| le(wl, rl) && le(rh, wh))
                })
            });
            if !covered {
                return false;
            }
        }
    }
    true
}

/// `boxes` with each two that differ in one dimension only, where they
/// meet or touch, made one.
fn merge_adjacent(
    mut boxes: Vec<Vec<(Expr, Expr)>>,
    diff: &dyn Fn(&Expr, &Expr) -> Option<i64>,
) -> Vec<Vec<(Expr, Expr)>> {
    loop {
        let mut merged = None;
        'find: for a in 0..boxes.len() {
            for c in a + 1..boxes.len() {
                let (x, y) = (&boxes[a], &boxes[c]);
                if x.len() != y.len() {
                    continue;
                }
                let differ: Vec<usize> = (0..x.len())
                    .filter(|&d| diff(&x[d].0, &y[d].0) != Some(0) || diff(&x[d].1, &y[d].1) != Some(0))
                    .collect();
                let [d] = differ[..] else { continue };
                // [lo, hi] of the two, if they meet or touch.
                let (first, second) = match diff(&y[d].0, &x[d].0) {
                    Some(k) if k >= 0 => (x, y),
                    Some(_) => (y, x),
                    None => continue,
                };
                if diff(&second[d].0, &first[d].1).is_some_and(|k| k <= 1) {
                    let hi = match diff(&second[d].1, &first[d].1) {
                        Some(k) if k >= 0 => second[d].1.clone(),
                        Some(_) => first[d].1.clone(),
                        None => continue,
                    };
                    let mut m = first.clone();
                    m[d].1 = hi;
                    merged = Some((a, c, m));
                    break 'find;
                }
            }
        }
        let Some((a, c, m)) = merged else { return boxes };
        boxes.remove(c);
        boxes[a] = m;
    }
}

/// The most virtual threads whose boxes are compared two by two.
const MAX_PAIRS_OF: i64 = 256;

/// `s` with each access of a buffer of `expanded` (old, new) made an
/// access of the new one, `which` its first index.
fn prefix_accesses(s: &Stmt, expanded: &[(Buffer, Buffer)], which: &Expr) -> Stmt {
    let prefix = |idx: &[Expr]| std::iter::once(which.clone()).chain(idx.iter().cloned()).collect();
    expanded.iter().fold(s.clone(), |s, (old, new)| crate::common::tree::reindex_buffer(&s, old, new, &prefix))
}
