//! Functions and modules.

use crate::buffer::Buffer;
use crate::expr::{Expr, Var};
use crate::stmt::{Annotations, Stmt};
use crate::subst::substitute;
use tirc_parser::ast;

/// The largest value of a run-time size (`PrimFunc::sizes`): kernels of
/// run-time sizes index in 32 bits, and a size up to 2^30 leaves room for
/// the tile arithmetic around it (`blockIdx_y * 64 + 64 <= m`, `(m + 63) //
/// 64`). The passes' range analysis assumes it; binding a value checks it.
pub const MAX_RUNTIME_SIZE: i64 = 1 << 30;

/// A `@T.prim_func`: buffers in, buffers out, a body of statements.
#[derive(Clone, Debug)]
pub struct PrimFunc {
    pub name: String,
    pub params: Vec<Buffer>,
    /// Sizes known only at run time (`n: T.int32` parameters, `m =
    /// T.int32()` declarations), in the order they were declared: each is
    /// a scalar argument of the kernel, after its buffers, and may appear
    /// in buffer shapes, loop extents and the grid.
    pub sizes: Vec<Var>,
    /// Scalar parameters of the computation (`alpha: T.float32`), in the
    /// order they were declared: values the caller passes, never sizes (a
    /// float cannot index, bound a loop or shape a buffer). Each is a
    /// by-value argument of every kernel, after its sizes.
    pub scalars: Vec<Var>,
    pub attrs: Annotations,
    /// The parameters in the order the source listed them, so that the
    /// printer writes the signature back as it was (`def f(n: T.int32, A:
    /// T.Buffer((n,), ...), off: T.int32)`); empty for a function made
    /// otherwise, printed as its buffers, then its scalars.
    pub signature: Vec<Param>,
    pub body: Stmt,
    /// The function's name in the source, where an error found while
    /// lowering it is reported when no loop or block it concerns has a span
    /// of its own (`For::span`, `Block::span`).
    pub span: Option<ast::Span>,
    /// What a lowering pass tells a later one; not part of the printed IR.
    pub facts: PassFacts,
}

/// A parameter of the source's signature: an index into the function's
/// `params`, `sizes` or `scalars`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param {
    Buffer(usize),
    Size(usize),
    Scalar(usize),
}

/// What one lowering pass tells a later one about the function's buffers,
/// by buffer identity (a name is only for printing): typed, so that the
/// reader and the writer agree, and out of the function's attributes, so
/// that it never shows in printed IR.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PassFacts {
    /// The buffers a block's `double_buffer_scope` annotation asks to
    /// double: written by `lower_blocks` (which removes the blocks), read
    /// by `inject_software_pipeline`.
    pub double_buffered: Vec<crate::buffer::BufferId>,
    /// The multi-buffered shared buffers whose barriers
    /// `inject_software_pipeline` placed by version: `insert_barriers`
    /// leaves them alone.
    pub pipeline_synced: Vec<crate::buffer::BufferId>,
    /// Buffers that carry values across the iterations of loops, with those
    /// loops: what a block with a reduction or opaque variable writes,
    /// across the loops that feed that variable (a running sum, an
    /// accumulator read inside its reduction loop). Written by
    /// `lower_blocks`, read by `compact_buffers`, which keeps their
    /// allocations outside those loops.
    pub carried: Vec<(crate::buffer::BufferId, Vec<crate::expr::Var>)>,
    /// `lower_blocks` lowered blocks of the text, and `carried` lists what
    /// they carry. Where not (lowered text, whose allocations are where the
    /// text put them and whose buffers no block describes),
    /// `compact_buffers` finds the buffers that carry values itself.
    pub from_blocks: bool,
}

impl PrimFunc {
    /// Whether the function is written without blocks (lowered text, as
    /// `tirc lower` prints it): at most a root block around plain
    /// statements.
    pub fn is_lowered_text(&self) -> bool {
        self.body.blocks().iter().all(|r| r.block.name == "root")
    }

    /// This function with its run-time sizes replaced by the given values
    /// (sizes not given stay symbolic): every expression, buffer shape and
    /// block region. The kernel of a size-generic function run with these
    /// values computes exactly what this specialized copy computes, which is
    /// how the simulator and the reference run it.
    pub fn specialize(&self, values: &[(Var, i64)]) -> PrimFunc {
        let map: Vec<(Var, Expr)> = values
            .iter()
            .filter(|(v, _)| self.sizes.contains(v))
            .map(|(v, x)| (v.clone(), Expr::Int(*x, v.dtype())))
            .collect();
        if map.is_empty() {
            return self.clone();
        }
        let fold = |e: &Expr| crate::expr::fold_constants(&substitute(e, &map));
        // Every buffer whose shape speaks of a size, in the order met.
        let mut buffers: Vec<(Buffer, Buffer)> = Vec::new();
        let mut note = |b: &Buffer| {
            if !buffers.iter().any(|(x, _)| x == b) && b.shape().iter().any(|e| map.iter().any(|(v, _)| e.uses(v))) {
                buffers.push((b.clone(), b.specialize(values)));
            }
        };
        self.params.iter().for_each(&mut note);
        self.body.for_each_buffer(&mut note);
        let body = self.body.map_exprs(&mut |e| fold(e));
        let body = crate::subst::replace_buffers_stmt(&body, &buffers);
        let body = body.map_buffers(&mut |b| buffers.iter().find(|(x, _)| x == b).map(|(_, y)| y.clone()));
        let swap = |b: &Buffer| buffers.iter().find(|(x, _)| x == b).map_or(b.clone(), |(_, y)| y.clone());
        let bound = |v: &Var| map.iter().any(|(x, _)| x == v);
        PrimFunc {
            params: self.params.iter().map(swap).collect(),
            sizes: self.sizes.iter().filter(|v| !bound(v)).cloned().collect(),
            signature: self.signature_without(|p| matches!(p, Param::Size(i) if self.sizes.get(i).is_some_and(bound))),
            body,
            ..self.clone()
        }
    }

    /// This function with its scalar parameters replaced by the given
    /// values (those not given stay parameters): what the simulator and the
    /// reference run, as the kernel computes with the values it is passed
    /// (each already rounded to its type).
    pub fn bind_scalars(&self, values: &[(Var, f64)]) -> PrimFunc {
        let map: Vec<(Var, Expr)> = values
            .iter()
            .filter(|(v, _)| self.scalars.contains(v))
            .map(|(v, x)| (v.clone(), Expr::Float(*x, v.dtype())))
            .collect();
        if map.is_empty() {
            return self.clone();
        }
        let bound = |v: &Var| map.iter().any(|(x, _)| x == v);
        PrimFunc {
            body: self.body.map_exprs(&mut |e| substitute(e, &map)),
            scalars: self.scalars.iter().filter(|v| !bound(v)).cloned().collect(),
            signature: self
                .signature_without(|p| matches!(p, Param::Scalar(i) if self.scalars.get(i).is_some_and(bound))),
            ..self.clone()
        }
    }

    /// The signature with the parameters `gone` says are removed, the
    /// indices after each renumbered.
    fn signature_without(&self, gone: impl Fn(Param) -> bool) -> Vec<Param> {
        let removed: Vec<Param> = self.signature.iter().copied().filter(|p| gone(*p)).collect();
        let before = |p: Param| {
            removed
                .iter()
                .filter(|r| std::mem::discriminant(*r) == std::mem::discriminant(&p) && index(**r) < index(p))
                .count()
        };
        fn index(p: Param) -> usize {
            match p {
                Param::Buffer(i) | Param::Size(i) | Param::Scalar(i) => i,
            }
        }
        self.signature
            .iter()
            .copied()
            .filter(|p| !gone(*p))
            .map(|p| match p {
                Param::Buffer(i) => Param::Buffer(i - before(p)),
                Param::Size(i) => Param::Size(i - before(p)),
                Param::Scalar(i) => Param::Scalar(i - before(p)),
            })
            .collect()
    }

    /// The block named `name`, if there is one.
    pub fn find_block(&self, name: &str) -> Option<&crate::stmt::BlockRealize> {
        self.body.blocks().into_iter().find(|r| r.block.name == name)
    }
}

/// A module constant such as `M = 1024`.
#[derive(Clone, Debug)]
pub struct Constant {
    pub name: String,
    pub value: i64,
    pub span: ast::Span,
}

/// A schedule parameter with its default: `BM=32` or `order="k_innermost"`.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamValue {
    Int(i64),
    Str(String),
}

impl std::fmt::Display for ParamValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParamValue::Int(v) => write!(f, "{v}"),
            ParamValue::Str(s) => write!(f, "{s:?}"),
        }
    }
}

#[derive(Clone, Debug)]
pub struct ScheduleParam {
    pub name: String,
    pub default: ParamValue,
    pub span: ast::Span,
}

/// A `@tirc.schedule("func")` function: a script of schedule primitives, kept
/// as syntax and run by the schedule interpreter.
#[derive(Clone, Debug)]
pub struct ScheduleDef {
    pub name: String,
    pub func: String,
    /// The name the script gives the schedule handle (`sch`).
    pub handle: String,
    pub params: Vec<ScheduleParam>,
    /// Candidate values per parameter, from `space={...}`.
    pub space: Vec<(String, Vec<ParamValue>)>,
    pub body: Vec<ast::Stmt>,
    pub span: ast::Span,
}

/// Everything a `.tir` file defines.
#[derive(Clone, Debug, Default)]
pub struct Module {
    pub constants: Vec<Constant>,
    pub funcs: Vec<PrimFunc>,
    pub schedules: Vec<ScheduleDef>,
    /// Where each run-time size is declared: (function, size, span), for
    /// the errors about its value.
    pub size_spans: Vec<(String, String, ast::Span)>,
}

impl Module {
    /// Where the size `size` of function `func` is declared.
    pub fn size_span(&self, func: &str, size: &str) -> Option<ast::Span> {
        self.size_spans.iter().find(|(f, s, _)| f == func && s == size).map(|(_, _, sp)| *sp)
    }

    pub fn func(&self, name: &str) -> Option<&PrimFunc> {
        self.funcs.iter().find(|f| f.name == name)
    }

    pub fn schedule(&self, name: &str) -> Option<&ScheduleDef> {
        self.schedules.iter().find(|s| s.name == name)
    }
}
