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
//!   touched by them, in each virtual thread, inside a box that the next
//!   virtual thread's box lies wholly past (the bounds of affine indices
//!   with the loops inside relaxed).
//! - The body holds no barrier or asynchronous-copy group (none is placed
//!   before `insert_barriers`; lowered text may hold them).
//!
//! Runs after `compact_buffers` and before `inject_software_pipeline`: a
//! pipelined loop inside keeps its statements, one stage each.

use crate::bounds::relax;
use tirc_ir::stmt::VTHREAD;
use tirc_ir::subst::substitute_stmt;
use tirc_ir::{Buffer, Diagnostic, Expr, For, ForKind, PrimFunc, Scope, Stmt, Var};

pub fn run(mut func: PrimFunc) -> Result<PrimFunc, Diagnostic> {
    func.body = visit(&func.body);
    Ok(func)
}

/// Inner virtual threads first: an outer one then goes down through the
/// unrolled loops they left.
fn visit(s: &Stmt) -> Stmt {
    match s.map_children(visit) {
        Stmt::For(l) if l.is_vthread() => {
            let mut plain = *l;
            plain.annotations.retain(|(k, _)| k != VTHREAD);
            interleave(&plain).unwrap_or_else(|| Stmt::For(Box::new(plain)))
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

    /// The statements of `s` repeated for each virtual thread (with the
    /// loops inside the virtual thread around each) and those run once.
    fn parts<'s>(&self, s: &'s Stmt, loops: &mut Vec<&'s For>, out: &mut Parts<'s>) {
        if !self.depends(s) {
            out.once.push(s);
            return;
        }
        if !self.descends(s) {
            out.each.push((s, loops.clone()));
            return;
        }
        match s {
            Stmt::For(f) => {
                loops.push(f);
                self.parts(&f.body, loops, out);
                loops.pop();
            }
            Stmt::Allocate { body, .. } => self.parts(body, loops, out),
            Stmt::Let { var, body, .. } => {
                out.lets.push(var.clone());
                self.parts(body, loops, out)
            }
            _ => s.for_each_child(|c| self.parts(c, loops, out)),
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
            Stmt::Seq(items) => {
                // Consecutive statements repeated whole share one loop.
                let mut out = Vec::new();
                let mut run: Vec<Stmt> = Vec::new();
                for c in items {
                    if self.depends(c) && !self.descends(c) {
                        run.push(c.clone());
                        continue;
                    }
                    if !run.is_empty() {
                        out.push(self.repeat(&Stmt::seq(std::mem::take(&mut run)), expanded));
                    }
                    out.push(self.build(c, expanded));
                }
                if !run.is_empty() {
                    out.push(self.repeat(&Stmt::seq(run), expanded));
                }
                Stmt::seq(out)
            }
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

#[derive(Default)]
struct Parts<'s> {
    /// Repeated for each virtual thread, with the loops around them inside
    /// the virtual thread's loop.
    each: Vec<(&'s Stmt, Vec<&'s For>)>,
    /// Run once.
    once: Vec<&'s Stmt>,
    /// Variables bound by lets the loop goes down through.
    lets: Vec<Var>,
}

/// The loop `l` (a virtual thread, its mark dropped) interleaved, or `None`
/// where the contract cannot be shown.
fn interleave(l: &For) -> Option<Stmt> {
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
    vt.parts(&l.body, &mut Vec::new(), &mut parts);
    if parts.each.is_empty() {
        // Nothing depends on the virtual thread: every one does the same.
        return None;
    }
    // Accesses, per buffer declared outside: (written, indices, loops
    // around inside the virtual thread) of the repeated statements, and
    // the buffers the statements run once read and write.
    let outside = |b: &Buffer| !vt.private.contains(b);
    let (mut once_reads, mut once_writes) = (Vec::<Buffer>::new(), Vec::<Buffer>::new());
    for s in &parts.once {
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
    let mut each_writes: Vec<Buffer> = Vec::new();
    for (s, _) in &parts.each {
        s.for_each_access(&mut |b, _, store| {
            if store && outside(b) && !each_writes.contains(b) {
                each_writes.push(b.clone());
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
    Some(vt.build(&l.body, &mut Vec::new()))
}

/// Whether the repeated statements touch `b` apart from one virtual
/// thread to the next.
fn apart(vt: &Vt, parts: &Parts, b: &Buffer) -> bool {
    let v = &vt.l.var;
    let mut boxes: Vec<Vec<(Expr, Expr)>> = Vec::new();
    let mut ok = true;
    for (s, loops) in &parts.each {
        // The loops inside the statement too.
        let mut inner: Vec<(Var, Expr, Expr)> =
            loops.iter().map(|f| (f.var.clone(), f.min.clone(), f.extent.clone())).collect();
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
    let listed: Vec<(&Buffer, &[(Expr, Expr)])> = boxes.iter().map(|d| (b, d.as_slice())).collect();
    crate::common::hazard::moves_apart(v, &listed, b, &hull)
}

/// `s` with each access of a buffer of `expanded` (old, new) made an
/// access of the new one, `which` its first index.
fn prefix_accesses(s: &Stmt, expanded: &[(Buffer, Buffer)], which: &Expr) -> Stmt {
    if expanded.is_empty() {
        return s.clone();
    }
    fn expr(e: &Expr, expanded: &[(Buffer, Buffer)], which: &Expr) -> Expr {
        let e = e.map_children(|c| expr(c, expanded, which));
        match e {
            Expr::Load(b, idx) => match expanded.iter().find(|(o, _)| *o == b) {
                Some((_, n)) => Expr::Load(n.clone(), std::iter::once(which.clone()).chain(idx).collect()),
                None => Expr::Load(b, idx),
            },
            e => e,
        }
    }
    let s = s.map_exprs(&mut |e| expr(e, expanded, which));
    s.rewrite(&mut |x| match x {
        Stmt::Store { buffer, indices, value } => {
            expanded.iter().find(|(o, _)| o == buffer).map(|(_, n)| Stmt::Store {
                buffer: n.clone(),
                indices: std::iter::once(which.clone()).chain(indices.iter().cloned()).collect(),
                value: value.clone(),
            })
        }
        _ => None,
    })
}
