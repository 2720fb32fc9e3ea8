//! The IR verifier: what the lowering passes guarantee each other, checked
//! after every pass of `lower`.
//!
//! At every stage:
//! - every variable an expression reads is bound around it, by a loop, a
//!   `let`, a launch, or (inside a block, and in its regions) the block's
//!   iteration variables;
//! - every buffer a statement loads from or stores to is a parameter of the
//!   function or allocated around the access (`Allocate`, or a block's
//!   `alloc_buffers`).
//!
//! Types, at every stage: indices, loop bounds and launch extents are
//! integers, conditions and block predicates booleans, and a store writes
//! a value of its buffer's type.
//!
//! From `lower_blocks` on, no block is left. From `flatten_buffers` on,
//! every access has one index. From `extract_launch` on, the launch
//! statements are the head of the body, each axis at most once, with a
//! constant extent (a blockIdx may have an extent of the function's
//! run-time sizes, which are bound everywhere) within CUDA's limit for the
//! axis, at most the target's threads per block, and no loop is bound to a thread
//! axis any more.
//!
//! Across a pass (`Axes`): each GPU axis a constant extent was bound to
//! before the pass (a loop bound to it, or a launch) is launched after it,
//! when the pass is `extract_launch` or later, with at least the largest
//! such extent, so that no iteration of a loop a launch replaced is lost
//! (an axis of extent 1 may go).
//!
//! A violation is a bug of the pass that ran last, not of the user's
//! program: it is reported as an internal error that names that pass, so
//! that a wrong IR never reaches code generation or the GPU.

use super::PIPELINE;
use std::collections::HashMap;
use tirc_ir::printer::print_expr;
use tirc_ir::target::Target;
use tirc_ir::{Buffer, Diagnostic, Expr, ForKind, PrimFunc, Stmt, ThreadTag};

/// The GPU axes of a function and the largest constant extent each is
/// bound to (by loops or launches), taken before a pass to check it after.
pub struct Axes(Vec<(ThreadTag, i64)>);

impl Axes {
    pub fn of(f: &PrimFunc) -> Axes {
        let mut axes: Vec<(ThreadTag, i64)> = Vec::new();
        let mut note = |tag: ThreadTag, extent: &Expr| {
            let Some(e) = extent.as_int() else { return };
            match axes.iter_mut().find(|(t, _)| *t == tag) {
                Some((_, m)) => *m = (*m).max(e),
                None => axes.push((tag, e)),
            }
        };
        f.body.walk(&mut |s| match s {
            Stmt::For(l) => {
                if let ForKind::ThreadBinding(tag) = l.kind {
                    note(tag, &l.extent);
                }
            }
            Stmt::Launch { tag, extent, .. } => note(*tag, extent),
            _ => {}
        });
        Axes(axes)
    }

    /// Checks that `f`, the result of pass `pass` on a function whose axes
    /// were `self`, launches each of them wide enough.
    pub fn covered_by(&self, pass: &str, f: &PrimFunc) -> Result<(), Diagnostic> {
        let at = |name: &str| PIPELINE.iter().position(|q| q.name == name);
        if !matches!((at(pass), at("extract_launch")), (Some(a), Some(b)) if a >= b) {
            return Ok(());
        }
        let head = f.body.launch_head().0;
        for &(tag, e) in &self.0 {
            let launched = head.iter().find(|(_, t, _)| *t == tag).map(|(_, _, x)| x.as_int());
            let problem = match launched {
                None if e > 1 => {
                    format!("{} is not launched, but a loop or launch of extent {e} was bound to it", tag.name())
                }
                Some(Some(x)) if x < e => {
                    format!(
                        "{} is launched with extent {x}, but a loop or launch of extent {e} was bound to it",
                        tag.name()
                    )
                }
                _ => continue,
            };
            return Err(internal(pass, &problem));
        }
        Ok(())
    }
}

fn internal(pass: &str, problem: &str) -> Diagnostic {
    Diagnostic::new(format!(
        "internal error: after the lowering pass `{pass}`, {problem}. This is a bug in tirc, not in the program: please report it with the input"
    ))
}

/// Checks `f` as it must be after the pass named `pass` has run.
pub fn after(pass: &str, f: &PrimFunc, target: &Target) -> Result<(), Diagnostic> {
    let reached = |p: &str| {
        let at = |name: &str| PIPELINE.iter().position(|q| q.name == name);
        matches!((at(pass), at(p)), (Some(a), Some(b)) if a >= b)
    };
    let mut v = Verifier {
        no_blocks: reached("lower_blocks"),
        flat: reached("flatten_buffers"),
        launched: reached("extract_launch"),
        vars: HashMap::new(),
        buffers: f.params.clone(),
        problem: None,
    };
    for s in f.sizes.iter().chain(&f.scalars) {
        v.bind(s.key());
    }
    let mut body = &f.body;
    if v.launched {
        let (head, below) = f.body.launch_head();
        let mut seen: Vec<ThreadTag> = Vec::new();
        for (var, tag, extent) in head {
            if seen.contains(&tag) {
                v.fail(format!("{} is launched twice", tag.name()));
            }
            let sized = tag.is_block && extent.is_size_expr(&f.sizes);
            if extent.as_int().is_none() && !sized {
                v.fail(format!("the extent of {} is not a constant", tag.name()));
            }
            if let Some(e) = extent.as_int() {
                if e < 1 || e > tag.max_extent() {
                    v.fail(format!("{} is launched with extent {e}, outside 1..={}", tag.name(), tag.max_extent()));
                }
            }
            seen.push(tag);
            v.bind(var.key());
        }
        let threads: i64 = f
            .body
            .launch_head()
            .0
            .iter()
            .filter(|(_, t, _)| !t.is_block)
            .filter_map(|(_, _, e)| e.as_int())
            .fold(1, i64::saturating_mul);
        if threads > target.max_threads_per_block {
            v.fail(format!("the kernel launches {threads} threads per block"));
        }
        body = below;
    }
    v.stmt(body);
    match v.problem {
        None => Ok(()),
        Some(p) => Err(internal(pass, &p)),
    }
}

struct Verifier {
    no_blocks: bool,
    flat: bool,
    launched: bool,
    /// The variables bound here, by key, with how many binders are open.
    vars: HashMap<usize, u32>,
    /// The buffers accessible here, innermost last.
    buffers: Vec<Buffer>,
    /// The first violation found.
    problem: Option<String>,
}

impl Verifier {
    fn fail(&mut self, what: String) {
        self.problem.get_or_insert(what);
    }

    fn bind(&mut self, key: usize) {
        *self.vars.entry(key).or_insert(0) += 1;
    }

    fn unbind(&mut self, key: usize) {
        if let Some(n) = self.vars.get_mut(&key) {
            *n -= 1;
            if *n == 0 {
                self.vars.remove(&key);
            }
        }
    }

    /// `e` must be of an integer type (`what` names it).
    fn int(&mut self, e: &Expr, what: &str) {
        if !e.dtype().is_int() {
            self.fail(format!("{what} {} is of type {}, not an integer", print_expr(e), e.dtype()));
        }
    }

    fn boolean(&mut self, e: &Expr, what: &str) {
        if !e.dtype().is_bool() {
            self.fail(format!("{what} {} is of type {}, not bool", print_expr(e), e.dtype()));
        }
    }

    fn access(&mut self, b: &Buffer, indices: &[Expr], what: &str) {
        for i in indices {
            self.int(i, &format!("an index of {what} {}", b.name()));
        }
        if !self.buffers.contains(b) {
            self.fail(format!("{what} {} outside its allocation", b.name()));
        }
        if self.flat && indices.len() != 1 {
            self.fail(format!(
                "{what} {} with {} indices (buffers are flat from flatten_buffers on)",
                b.name(),
                indices.len()
            ));
        }
    }

    fn expr(&mut self, e: &Expr) {
        e.walk(&mut |x| match x {
            Expr::Var(v) if !self.vars.contains_key(&v.key()) => {
                self.problem.get_or_insert(format!("the variable {} is read where nothing binds it", v.name()));
            }
            Expr::Load(b, idx) => self.access(b, idx, "a load from"),
            _ => {}
        });
    }

    fn stmt(&mut self, s: &Stmt) {
        if self.problem.is_some() {
            return;
        }
        match s {
            Stmt::For(l) => {
                self.expr(&l.min);
                self.expr(&l.extent);
                self.int(&l.min, &format!("the start of loop {}", l.var.name()));
                self.int(&l.extent, &format!("the extent of loop {}", l.var.name()));
                if let (true, ForKind::ThreadBinding(tag)) = (self.launched, l.kind) {
                    self.fail(format!(
                        "the loop {} is still bound to {} after extract_launch",
                        l.var.name(),
                        tag.name()
                    ));
                }
                self.bind(l.var.key());
                self.stmt(&l.body);
                self.unbind(l.var.key());
            }
            Stmt::Block(r) => {
                if self.no_blocks {
                    self.fail(format!("the block {} is left after lower_blocks", r.block.name));
                }
                r.iter_values.iter().for_each(|e| self.expr(e));
                self.expr(&r.predicate);
                self.boolean(&r.predicate, &format!("the predicate of block {}", r.block.name));
                for iv in &r.block.iter_vars {
                    self.expr(&iv.dom.min);
                    self.expr(&iv.dom.extent);
                }
                r.block.iter_vars.iter().for_each(|iv| self.bind(iv.var.key()));
                for reg in r.block.reads.iter().chain(&r.block.writes) {
                    for rg in &reg.region {
                        self.expr(&rg.min);
                        self.expr(&rg.extent);
                    }
                }
                if let Some(init) = &r.block.init {
                    self.stmt(init);
                }
                let n = self.buffers.len();
                self.buffers.extend(r.block.alloc_buffers.iter().cloned());
                self.stmt(&r.block.body);
                self.buffers.truncate(n);
                r.block.iter_vars.iter().for_each(|iv| self.unbind(iv.var.key()));
            }
            Stmt::Store { buffer, indices, value } => {
                indices.iter().for_each(|e| self.expr(e));
                self.expr(value);
                if value.dtype() != buffer.dtype() {
                    self.fail(format!(
                        "a store of {} ({}) to {} ({})",
                        print_expr(value),
                        value.dtype(),
                        buffer.name(),
                        buffer.dtype()
                    ));
                }
                self.access(buffer, indices, "a store to");
            }
            Stmt::Seq(v) => v.iter().for_each(|x| self.stmt(x)),
            Stmt::If { cond, then, orelse } => {
                self.expr(cond);
                self.boolean(cond, "the condition");
                self.stmt(then);
                if let Some(e) = orelse {
                    self.stmt(e);
                }
            }
            Stmt::Let { var, value, body } => {
                self.expr(value);
                self.bind(var.key());
                self.stmt(body);
                self.unbind(var.key());
            }
            Stmt::Allocate { buffer, body } => {
                self.buffers.push(buffer.clone());
                self.stmt(body);
                self.buffers.pop();
            }
            Stmt::Launch { var, tag, extent, body } => {
                if self.launched {
                    self.fail(format!("a launch of {} inside the kernel body, below its head", tag.name()));
                }
                self.expr(extent);
                self.int(extent, &format!("the extent of {}", tag.name()));
                self.bind(var.key());
                self.stmt(body);
                self.unbind(var.key());
            }
            Stmt::Wmma(w) => {
                w.exprs().for_each(|e| self.expr(e));
                for t in &w.tiles {
                    self.access(&t.buffer, &t.indices, "a tensor-core tile of");
                    if self.flat && t.ldm.is_none() {
                        self.fail(format!(
                            "a tensor-core tile of {} has no row stride after flatten_buffers",
                            t.buffer.name()
                        ));
                    }
                }
                if let Err(m) = w.check() {
                    self.fail(m);
                }
            }
            Stmt::Barrier | Stmt::AsyncCommit | Stmt::AsyncWait(_) | Stmt::NoOp => {}
        }
    }
}
