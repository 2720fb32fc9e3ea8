//! Statements: loops, blocks, stores, sequences, conditionals, allocations,
//! and the lowered forms (thread launches, barriers).
//!
//! Before lowering, computation lives in blocks (`BlockRealize`): a block has
//! its own iteration variables, bound to expressions of the surrounding loop
//! variables, and its body speaks only of its own variables. Schedule
//! primitives rewrite the loops around blocks; lowering then replaces blocks by
//! plain code.

use crate::buffer::Buffer;
use crate::expr::{Expr, Range, Var};
use tirc_parser::ast::Span;

/// `blockIdx.x` .. `threadIdx.z`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ThreadTag {
    pub is_block: bool,
    /// 0, 1, 2 for x, y, z.
    pub dim: u8,
}

impl ThreadTag {
    pub const ALL: [ThreadTag; 6] = [
        ThreadTag { is_block: true, dim: 0 },
        ThreadTag { is_block: true, dim: 1 },
        ThreadTag { is_block: true, dim: 2 },
        ThreadTag { is_block: false, dim: 0 },
        ThreadTag { is_block: false, dim: 1 },
        ThreadTag { is_block: false, dim: 2 },
    ];

    pub fn parse(s: &str) -> Option<ThreadTag> {
        ThreadTag::ALL.into_iter().find(|t| t.name() == s)
    }

    pub fn name(self) -> String {
        let d = ["x", "y", "z"][self.dim as usize];
        if self.is_block {
            format!("blockIdx.{d}")
        } else {
            format!("threadIdx.{d}")
        }
    }

    /// The variable name the lowered code uses: `blockIdx_x`.
    pub fn var_name(self) -> String {
        self.name().replace('.', "_")
    }

    /// The largest extent CUDA allows in this dimension.
    pub fn max_extent(self) -> i64 {
        match (self.is_block, self.dim) {
            (true, 0) => (1 << 31) - 1,
            (true, _) => 65535,
            (false, 2) => 64,
            (false, _) => 1024,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ForKind {
    Serial,
    Parallel,
    Vectorized,
    Unrolled,
    ThreadBinding(ThreadTag),
}

/// A value in an annotation: `annotations={"software_pipeline_stage": [0, 0, 1]}`.
#[derive(Clone, Debug, PartialEq)]
pub enum Attr {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
    List(Vec<Attr>),
    /// `{"key": value, ...}`, in the order written.
    Dict(Vec<(String, Attr)>),
    /// A buffer of the function, by name (TVM's `"layout_free_placeholders":
    /// [W]`): a hint that no pass reads, printed as it was written.
    Buffer(String),
    /// `T.target("cuda")` or `T.target({...})`, TVM's compile target as
    /// its printer puts it in `T.func_attr({"target": ..})`: kept and
    /// printed back; tirc compiles for its own `--arch`.
    Target(Box<Attr>),
}

impl Attr {
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Attr::Int(v) => Some(*v),
            _ => None,
        }
    }
}

pub type Annotations = Vec<(String, Attr)>;

/// The annotation that marks an unrolled loop as a virtual thread: its value
/// is the axis as written (`"vthread.x"`). The parser and `bind` put it on a
/// loop of `T.thread_binding(n, thread="vthread.x")`, the printer gives that
/// form back, and `inject_virtual_thread` interleaves the loop's iterations
/// and drops it. A pass that loses it leaves a plain unrolled loop, which
/// computes the same.
pub const VTHREAD: &str = "tirc.vthread";

/// Whether `s` names a virtual thread axis (`vthread`, `vthread.x/y/z`).
pub fn is_vthread_axis(s: &str) -> bool {
    s == "vthread" || s.strip_prefix("vthread.").is_some_and(|d| matches!(d, "x" | "y" | "z"))
}

#[derive(Clone, Debug)]
pub struct For {
    pub var: Var,
    pub min: Expr,
    pub extent: Expr,
    pub kind: ForKind,
    pub annotations: Annotations,
    pub body: Stmt,
    /// Where the loop comes from: the `for` of the source, or the schedule
    /// call that made it (`sch.split`, `sch.fuse`, `compute_at`'s copies).
    /// Not part of the loop's meaning (structural equality and the printer
    /// ignore it); lowering errors about the loop point here.
    pub span: Option<Span>,
}

impl For {
    /// Whether this loop is a virtual thread (see [`VTHREAD`]).
    pub fn is_vthread(&self) -> bool {
        self.kind == ForKind::Unrolled && self.annotations.iter().any(|(k, _)| k == VTHREAD)
    }

    /// This loop's header (variable, bounds, kind, annotations) around
    /// `body`: a copy of the loop that does not clone its body.
    pub fn with_body(&self, body: Stmt) -> For {
        For {
            var: self.var.clone(),
            min: self.min.clone(),
            extent: self.extent.clone(),
            kind: self.kind,
            annotations: self.annotations.clone(),
            body,
            span: self.span,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IterKind {
    /// `S`: each value of the variable is computed independently.
    Spatial,
    /// `R`: the block accumulates over the variable.
    Reduce,
    /// `T.axis.opaque` (or `T.axis.scan`): neither; its iterations depend
    /// on each other in a way tirc does not know, so they run in order.
    Opaque,
}

#[derive(Clone, Debug)]
pub struct IterVar {
    pub var: Var,
    pub dom: Range,
    pub kind: IterKind,
}

/// A rectangular part of a buffer: one range per dimension.
#[derive(Clone, Debug)]
pub struct BufferRegion {
    pub buffer: Buffer,
    pub region: Vec<Range>,
}

#[derive(Clone, Debug)]
pub struct Block {
    pub name: String,
    pub iter_vars: Vec<IterVar>,
    pub reads: Vec<BufferRegion>,
    pub writes: Vec<BufferRegion>,
    /// Run once for each value of the spatial variables, before the first
    /// reduction step.
    pub init: Option<Stmt>,
    pub alloc_buffers: Vec<Buffer>,
    pub annotations: Annotations,
    pub body: Stmt,
    /// Where the block comes from: its `with T.block(..)` in the source, or
    /// the schedule call that made it (`cache_read`, `decompose_reduction`).
    /// Ignored by structural equality and the printer.
    pub span: Option<Span>,
}

/// A block together with the values of its iteration variables at this
/// point of the loop nest, and the predicate under which it runs (`T.where`).
#[derive(Clone, Debug)]
pub struct BlockRealize {
    pub iter_values: Vec<Expr>,
    pub predicate: Expr,
    pub block: Block,
}

#[derive(Clone, Debug)]
pub enum Stmt {
    For(Box<For>),
    Block(Box<BlockRealize>),
    Store {
        buffer: Buffer,
        indices: Vec<Expr>,
        value: Expr,
    },
    Seq(Vec<Stmt>),
    If {
        cond: Expr,
        then: Box<Stmt>,
        orelse: Option<Box<Stmt>>,
    },
    Let {
        var: Var,
        value: Expr,
        body: Box<Stmt>,
    },
    /// A buffer allocated for the extent of `body` (lowered code).
    Allocate {
        buffer: Buffer,
        body: Box<Stmt>,
    },
    /// `var = T.launch_thread("threadIdx.x", extent)`, covering `body`.
    Launch {
        var: Var,
        tag: ThreadTag,
        extent: Expr,
        body: Box<Stmt>,
    },
    /// `__syncthreads()`: every thread of the block waits here.
    Barrier,
    /// `T.ptx_commit_group()`: the asynchronous copies this thread issued
    /// since the last commit form one group.
    AsyncCommit,
    /// `T.ptx_wait_group(n)`: this thread waits until at most `n` of its
    /// groups of asynchronous copies are still in flight.
    AsyncWait(i64),
    /// A warp-wide tensor-core operation on 16×16 tiles (`crate::wmma`).
    Wmma(Box<crate::wmma::Wmma>),
    /// Does nothing.
    NoOp,
}

/// What the function given to `Stmt::rewrite_owned` does with a statement.
pub enum Rewrite {
    /// Use this in its place, as it is.
    Done(Stmt),
    /// Keep this statement and rewrite its children.
    Descend(Stmt),
}

/// One statement of a kernel's launch head: `var = T.launch_thread(tag,
/// extent)`.
pub type LaunchAxis = (Var, ThreadTag, Expr);

impl Stmt {
    /// The launch head of a lowered kernel (its `Launch` statements at the
    /// top, outermost first) and the body below it. The one place that
    /// peels the head, for the passes, code generation and the simulator.
    pub fn launch_head(&self) -> (Vec<(&Var, ThreadTag, &Expr)>, &Stmt) {
        let mut head = Vec::new();
        let mut body = self;
        while let Stmt::Launch { var, tag, extent, body: b } = body {
            head.push((var, *tag, extent));
            body = b;
        }
        (head, body)
    }

    /// `launch_head`, owning: for a pass that rewrites the body and puts the
    /// head back with `with_launch_head`.
    pub fn split_launch_head(self) -> (Vec<LaunchAxis>, Stmt) {
        let mut head = Vec::new();
        let mut body = self;
        while let Stmt::Launch { var, tag, extent, body: b } = body {
            head.push((var, tag, extent));
            body = *b;
        }
        (head, body)
    }

    /// `body` under the launch head `head` (outermost first).
    pub fn with_launch_head(head: Vec<LaunchAxis>, body: Stmt) -> Stmt {
        head.into_iter().rev().fold(body, |b, (var, tag, extent)| Stmt::Launch { var, tag, extent, body: Box::new(b) })
    }

    pub fn seq(mut stmts: Vec<Stmt>) -> Stmt {
        stmts.retain(|s| !matches!(s, Stmt::NoOp));
        let mut flat = Vec::with_capacity(stmts.len());
        for s in stmts {
            match s {
                Stmt::Seq(inner) => flat.extend(inner),
                s => flat.push(s),
            }
        }
        match flat.len() {
            0 => Stmt::NoOp,
            1 => flat.pop().unwrap_or(Stmt::NoOp),
            _ => Stmt::Seq(flat),
        }
    }

    pub fn if_then(cond: Expr, then: Stmt) -> Stmt {
        match cond.as_bool() {
            Some(true) => then,
            Some(false) => Stmt::NoOp,
            None => Stmt::If { cond, then: Box::new(then), orelse: None },
        }
    }

    /// Calls `f` on each direct child statement.
    pub fn for_each_child<'a>(&'a self, mut f: impl FnMut(&'a Stmt)) {
        match self {
            Stmt::For(l) => f(&l.body),
            Stmt::Block(r) => {
                if let Some(init) = &r.block.init {
                    f(init)
                }
                f(&r.block.body)
            }
            Stmt::Seq(v) => v.iter().for_each(f),
            Stmt::If { then, orelse, .. } => {
                f(then);
                if let Some(e) = orelse {
                    f(e)
                }
            }
            Stmt::Let { body, .. } | Stmt::Allocate { body, .. } | Stmt::Launch { body, .. } => f(body),
            Stmt::Store { .. }
            | Stmt::Wmma(_)
            | Stmt::Barrier
            | Stmt::AsyncCommit
            | Stmt::AsyncWait(_)
            | Stmt::NoOp => {}
        }
    }

    /// Rebuilds the statement with each direct child statement replaced by
    /// `f(child)`; expressions are kept. Only this node's own fields are
    /// copied: the children are what `f` returns, never a clone of them.
    pub fn map_children(&self, mut f: impl FnMut(&Stmt) -> Stmt) -> Stmt {
        match self {
            Stmt::For(l) => Stmt::For(Box::new(l.with_body(f(&l.body)))),
            Stmt::Block(r) => {
                let b = &r.block;
                Stmt::Block(Box::new(BlockRealize {
                    iter_values: r.iter_values.clone(),
                    predicate: r.predicate.clone(),
                    block: Block {
                        name: b.name.clone(),
                        iter_vars: b.iter_vars.clone(),
                        reads: b.reads.clone(),
                        writes: b.writes.clone(),
                        init: b.init.as_ref().map(&mut f),
                        alloc_buffers: b.alloc_buffers.clone(),
                        annotations: b.annotations.clone(),
                        body: f(&b.body),
                        span: b.span,
                    },
                }))
            }
            Stmt::Seq(v) => Stmt::seq(v.iter().map(f).collect()),
            Stmt::If { cond, then, orelse } => Stmt::If {
                cond: cond.clone(),
                then: Box::new(f(then)),
                orelse: orelse.as_ref().map(|e| Box::new(f(e))),
            },
            Stmt::Let { var, value, body } => {
                Stmt::Let { var: var.clone(), value: value.clone(), body: Box::new(f(body)) }
            }
            Stmt::Allocate { buffer, body } => Stmt::Allocate { buffer: buffer.clone(), body: Box::new(f(body)) },
            Stmt::Launch { var, tag, extent, body } => {
                Stmt::Launch { var: var.clone(), tag: *tag, extent: extent.clone(), body: Box::new(f(body)) }
            }
            Stmt::Store { .. }
            | Stmt::Wmma(_)
            | Stmt::Barrier
            | Stmt::AsyncCommit
            | Stmt::AsyncWait(_)
            | Stmt::NoOp => self.clone(),
        }
    }

    /// `map_children`, owning: each child is moved into `f` and replaced by
    /// what it returns; nothing is cloned.
    pub fn map_children_owned(self, mut f: impl FnMut(Stmt) -> Stmt) -> Stmt {
        match self {
            Stmt::For(mut l) => {
                l.body = f(std::mem::replace(&mut l.body, Stmt::NoOp));
                Stmt::For(l)
            }
            Stmt::Block(mut r) => {
                r.block.init = r.block.init.take().map(&mut f);
                r.block.body = f(std::mem::replace(&mut r.block.body, Stmt::NoOp));
                Stmt::Block(r)
            }
            Stmt::Seq(v) => Stmt::seq(v.into_iter().map(f).collect()),
            Stmt::If { cond, then, orelse } => {
                Stmt::If { cond, then: Box::new(f(*then)), orelse: orelse.map(|e| Box::new(f(*e))) }
            }
            Stmt::Let { var, value, body } => Stmt::Let { var, value, body: Box::new(f(*body)) },
            Stmt::Allocate { buffer, body } => Stmt::Allocate { buffer, body: Box::new(f(*body)) },
            Stmt::Launch { var, tag, extent, body } => Stmt::Launch { var, tag, extent, body: Box::new(f(*body)) },
            s @ (Stmt::Store { .. }
            | Stmt::Wmma(_)
            | Stmt::Barrier
            | Stmt::AsyncCommit
            | Stmt::AsyncWait(_)
            | Stmt::NoOp) => s,
        }
    }

    /// Rewrites `self` top-down: where `f` returns a replacement, it is used
    /// and not descended into; elsewhere the children are rewritten. The
    /// parts `f` does not replace are copied once, node by node.
    pub fn rewrite(&self, f: &mut dyn FnMut(&Stmt) -> Option<Stmt>) -> Stmt {
        match f(self) {
            Some(r) => r,
            None => self.map_children(|c| c.rewrite(f)),
        }
    }

    /// `rewrite`, owning: `f` takes each statement and either gives back a
    /// replacement (`Rewrite::Done`, not descended into) or the statement
    /// itself (`Rewrite::Descend`), whose children are then rewritten.
    /// Nothing is cloned.
    pub fn rewrite_owned(self, f: &mut dyn FnMut(Stmt) -> Rewrite) -> Stmt {
        match f(self) {
            Rewrite::Done(r) => r,
            Rewrite::Descend(s) => s.map_children_owned(|c| c.rewrite_owned(f)),
        }
    }

    /// The first loop of variable `v` in `self`, outermost first.
    pub fn find_loop(&self, v: &Var) -> Option<&For> {
        let mut found = None;
        self.walk(&mut |x| {
            if let Stmt::For(l) = x {
                if &l.var == v && found.is_none() {
                    found = Some(&**l);
                }
            }
        });
        found
    }

    /// The block realize of the block named `name`.
    pub fn find_block(&self, name: &str) -> Option<&BlockRealize> {
        self.blocks().into_iter().find(|r| r.block.name == name)
    }

    /// The loops between the block named `name` and the block that
    /// encloses it (or the root), outermost first; `None` when there is no
    /// such block.
    pub fn loops_above(&self, name: &str) -> Option<Vec<&For>> {
        fn go<'a>(s: &'a Stmt, name: &str, path: &mut Vec<&'a For>) -> Option<Vec<&'a For>> {
            match s {
                Stmt::Block(r) if r.block.name == name => return Some(path.clone()),
                Stmt::Block(r) => {
                    // A nested scope: loops above it do not count.
                    let saved = std::mem::take(path);
                    let mut out = None;
                    if let Some(i) = &r.block.init {
                        out = go(i, name, path);
                    }
                    if out.is_none() {
                        out = go(&r.block.body, name, path);
                    }
                    *path = saved;
                    return out;
                }
                Stmt::For(l) => {
                    path.push(l);
                    let out = go(&l.body, name, path);
                    path.pop();
                    return out;
                }
                _ => {}
            }
            let mut out = None;
            s.for_each_child(|c| {
                if out.is_none() {
                    out = go(c, name, path);
                }
            });
            out
        }
        go(self, name, &mut Vec::new())
    }

    /// Calls `f` on each direct child statement, mutably.
    pub fn for_each_child_mut(&mut self, mut f: impl FnMut(&mut Stmt)) {
        match self {
            Stmt::For(l) => f(&mut l.body),
            Stmt::Block(r) => {
                if let Some(init) = &mut r.block.init {
                    f(init)
                }
                f(&mut r.block.body)
            }
            Stmt::Seq(v) => v.iter_mut().for_each(f),
            Stmt::If { then, orelse, .. } => {
                f(then);
                if let Some(e) = orelse {
                    f(e)
                }
            }
            Stmt::Let { body, .. } | Stmt::Allocate { body, .. } | Stmt::Launch { body, .. } => f(body),
            Stmt::Store { .. }
            | Stmt::Wmma(_)
            | Stmt::Barrier
            | Stmt::AsyncCommit
            | Stmt::AsyncWait(_)
            | Stmt::NoOp => {}
        }
    }

    /// `walk`, mutably: `f` may change each statement's own fields; it
    /// runs on a parent before its children.
    pub fn walk_mut(&mut self, f: &mut impl FnMut(&mut Stmt)) {
        f(self);
        self.for_each_child_mut(|c| c.walk_mut(f));
    }

    /// Gives every loop and block (but the root block) that has no span
    /// yet the span `span`: what a schedule step does to the loops and
    /// blocks it made.
    pub fn stamp_spans(&mut self, span: Span) {
        self.walk_mut(&mut |s| match s {
            Stmt::For(l) if l.span.is_none() => l.span = Some(span),
            Stmt::Block(r) if r.block.span.is_none() && r.block.name != "root" => r.block.span = Some(span),
            _ => {}
        });
    }

    /// Visits this statement and every statement below it, parents first.
    pub fn walk<'a>(&'a self, f: &mut impl FnMut(&'a Stmt)) {
        f(self);
        self.for_each_child(|c| c.walk(f));
    }

    /// Calls `f(buffer, indices, is_store)` on every store and every load in
    /// this statement and below it (loads inside indices and values too),
    /// and on the tiles of tensor-core operations (by their first element:
    /// a tile covers 16×16 from there, `crate::wmma`).
    pub fn for_each_access<'a>(&'a self, f: &mut impl FnMut(&'a Buffer, &'a [Expr], bool)) {
        self.walk(&mut |x| {
            if let Stmt::Store { buffer, indices, .. } = x {
                f(buffer, indices, true);
            }
            // A tensor-core operation's tiles, each by its first element.
            if let Stmt::Wmma(w) = x {
                w.reads().iter().for_each(|t| f(&t.buffer, &t.indices, false));
                f(&w.write().buffer, &w.write().indices, true);
            }
            x.for_each_expr(|e| {
                e.walk(&mut |y| {
                    if let Expr::Load(b, idx) = y {
                        f(b, idx, false);
                    }
                })
            });
        });
    }

    /// Whether a store in `self` writes `b`.
    pub fn stores_to(&self, b: &Buffer) -> bool {
        let mut found = false;
        self.for_each_access(&mut |x, _, store| found |= store && x == b);
        found
    }

    /// Whether an expression in `self` loads from `b`.
    pub fn loads_from(&self, b: &Buffer) -> bool {
        let mut found = false;
        self.for_each_access(&mut |x, _, store| found |= !store && x == b);
        found
    }

    /// Whether anything in `self` reads or writes `b` (loads, stores,
    /// blocks' declared regions).
    pub fn uses_buffer(&self, b: &Buffer) -> bool {
        let mut found = false;
        self.for_each_access(&mut |x, _, _| found |= x == b);
        self.walk(&mut |x| {
            if let Stmt::Block(r) = x {
                found |= r.block.reads.iter().chain(&r.block.writes).any(|g| &g.buffer == b);
            }
        });
        found
    }

    /// Calls `f` on every expression directly held by this statement (not by
    /// its children).
    pub fn for_each_expr<'a>(&'a self, mut f: impl FnMut(&'a Expr)) {
        match self {
            Stmt::For(l) => {
                f(&l.min);
                f(&l.extent)
            }
            Stmt::Block(r) => {
                r.iter_values.iter().for_each(&mut f);
                f(&r.predicate);
                for iv in &r.block.iter_vars {
                    f(&iv.dom.min);
                    f(&iv.dom.extent);
                }
            }
            Stmt::Store { indices, value, .. } => {
                indices.iter().for_each(&mut f);
                f(value)
            }
            Stmt::If { cond, .. } => f(cond),
            Stmt::Let { value, .. } => f(value),
            Stmt::Launch { extent, .. } => f(extent),
            Stmt::Wmma(w) => w.exprs().for_each(f),
            Stmt::Seq(_)
            | Stmt::Allocate { .. }
            | Stmt::Barrier
            | Stmt::AsyncCommit
            | Stmt::AsyncWait(_)
            | Stmt::NoOp => {}
        }
    }

    /// Rebuilds this statement and everything below it with every expression
    /// replaced by `f(expr)`, bottom-up over statements.
    pub fn map_exprs(&self, f: &mut impl FnMut(&Expr) -> Expr) -> Stmt {
        let s = self.map_children(|c| c.map_exprs(f));
        match s {
            Stmt::For(mut l) => {
                l.min = f(&l.min);
                l.extent = f(&l.extent);
                Stmt::For(l)
            }
            Stmt::Block(mut r) => {
                r.iter_values = r.iter_values.iter().map(&mut *f).collect();
                r.predicate = f(&r.predicate);
                for iv in &mut r.block.iter_vars {
                    iv.dom = Range::new(f(&iv.dom.min), f(&iv.dom.extent));
                }
                for reg in r.block.reads.iter_mut().chain(r.block.writes.iter_mut()) {
                    for rg in &mut reg.region {
                        *rg = Range::new(f(&rg.min), f(&rg.extent));
                    }
                }
                Stmt::Block(r)
            }
            Stmt::Store { buffer, indices, value } => {
                Stmt::Store { buffer, indices: indices.iter().map(&mut *f).collect(), value: f(&value) }
            }
            Stmt::If { cond, then, orelse } => Stmt::If { cond: f(&cond), then, orelse },
            Stmt::Let { var, value, body } => Stmt::Let { var, value: f(&value), body },
            Stmt::Launch { var, tag, extent, body } => Stmt::Launch { var, tag, extent: f(&extent), body },
            Stmt::Wmma(w) => Stmt::Wmma(Box::new(w.map_exprs(f))),
            s => s,
        }
    }

    /// Calls `f` on every buffer this statement and its children allocate,
    /// store to, load from or name in a block's regions (repeats included).
    pub fn for_each_buffer(&self, f: &mut impl FnMut(&Buffer)) {
        self.walk(&mut |s| {
            match s {
                Stmt::Allocate { buffer, .. } | Stmt::Store { buffer, .. } => f(buffer),
                Stmt::Wmma(w) => w.tiles.iter().for_each(|t| f(&t.buffer)),
                Stmt::Block(r) => {
                    r.block.alloc_buffers.iter().for_each(&mut *f);
                    r.block.reads.iter().chain(&r.block.writes).for_each(|reg| f(&reg.buffer));
                }
                _ => {}
            }
            s.for_each_expr(|e| {
                e.walk(&mut |x| {
                    if let Expr::Load(b, _) = x {
                        f(b)
                    }
                })
            });
        });
    }

    /// Rebuilds this statement with every allocated buffer (`Allocate`,
    /// a block's `alloc_buffers`) for which `f` gives a replacement
    /// replaced; accesses are left to `subst::replace_buffers_stmt`.
    pub fn map_buffers(&self, f: &mut impl FnMut(&Buffer) -> Option<Buffer>) -> Stmt {
        match self.map_children(|c| c.map_buffers(f)) {
            Stmt::Allocate { buffer, body } => Stmt::Allocate { buffer: f(&buffer).unwrap_or(buffer), body },
            Stmt::Block(mut r) => {
                for b in r.block.alloc_buffers.iter_mut() {
                    if let Some(n) = f(b) {
                        *b = n;
                    }
                }
                Stmt::Block(r)
            }
            s => s,
        }
    }

    /// Every block realize in this statement, outermost first.
    pub fn blocks(&self) -> Vec<&BlockRealize> {
        let mut out = Vec::new();
        collect_blocks(self, &mut out);
        out
    }
}

fn collect_blocks<'a>(s: &'a Stmt, out: &mut Vec<&'a BlockRealize>) {
    if let Stmt::Block(r) = s {
        out.push(r);
    }
    s.for_each_child(|c| collect_blocks(c, out));
}
