//! Resolve of blocks: `T.block`/`T.sblock` with their header (`T.axis.*`,
//! `T.where`, `T.reads`/`T.writes`, `T.block_attr`, `T.alloc_buffer`,
//! `T.init`) and body. Regions that are not declared are inferred; declared
//! ones must name every buffer the body accesses, and block variables must be
//! bound consistently with their domains.

use super::dotted;
use super::expr::integer;
use super::func::{Binding, FuncResolver, R};
use super::span_of_args;
use crate::buffer::{Buffer, Scope};
use crate::diag::{did_you_mean, Diagnostic};
use crate::dtype::DType;
use crate::expr::{Expr, Range, Var};
use crate::region::infer_block_regions;
use crate::stmt::{Annotations, Block, BlockRealize, BufferRegion, IterKind, IterVar, Stmt};
use tirc_parser::ast::{self, Arg, ExprKind, Span, StmtKind};

impl FuncResolver<'_> {
    /// The block `with T.block(name):` + `body`; `span` is the whole
    /// statement, `head` the `T.block(..)` call, which the IR keeps.
    pub(crate) fn block(&mut self, name: String, body: &[ast::Stmt], span: Span, head: Span) -> R<Stmt> {
        self.scopes.push(vec![]);
        let out = self.block_in_scope(name, body, span, head);
        self.scopes.pop();
        out
    }

    pub(crate) fn block_in_scope(&mut self, name: String, body: &[ast::Stmt], span: Span, head: Span) -> R<Stmt> {
        let mut iter_vars = Vec::new();
        let mut iter_values = Vec::new();
        let mut predicate = Expr::bool(true);
        let mut reads = None;
        let mut writes = None;
        let mut annotations = vec![];
        let mut allocs = vec![];
        let mut init = None;
        let mut rest = body;
        while let Some((s, tail)) = rest.split_first() {
            // A window `X = T.match_buffer(B[..], ..)` may stand before
            // `T.init()` or the block's own buffers, as TVM prints
            // blockize's and tensorize's blocks: bound here, it is in scope
            // for the init and the body.
            if is_window(s) && tail.iter().any(|t| is_init(t) || is_block_alloc(t)) {
                if let Err(e) = self.stmt(s) {
                    self.errors.push(e);
                }
                rest = tail;
                continue;
            }
            if !self.block_header_stmt(
                s,
                &mut iter_vars,
                &mut iter_values,
                &mut predicate,
                &mut reads,
                &mut writes,
                &mut annotations,
                &mut allocs,
                &mut init,
            )? {
                break;
            }
            rest = tail;
        }
        // A block with no variables that declares empty `T.reads()` and
        // `T.writes()` (TVM's loop_partition writes its grouping blocks so)
        // declares nothing: its regions are inferred from its body.
        if iter_vars.is_empty() {
            reads = reads.filter(|(r, _)| !r.is_empty());
            writes = writes.filter(|(w, _)| !w.is_empty());
        }
        let axis_spans = std::mem::take(&mut self.axis_spans);
        let guard = usize::from(predicate.as_bool() != Some(true));
        self.guarded += guard;
        let body = self.stmts(rest);
        self.guarded -= guard;
        let mut block = Block {
            name,
            iter_vars,
            reads: vec![],
            writes: vec![],
            init,
            alloc_buffers: allocs,
            annotations,
            body,
            span: Some(head),
        };
        let (r_inf, w_inf) = infer_block_regions(&block);
        self.check_declared(&block, &r_inf, &w_inf, reads.as_ref(), writes.as_ref())?;
        block.reads = reads.map_or(r_inf, |r| r.0);
        block.writes = writes.map_or(w_inf, |w| w.0);
        // A predicate is of the loops around the block; one that names the
        // block's own variables (`T.where(vj < 4)`) means their bindings.
        let own: Vec<(Var, Expr)> =
            block.iter_vars.iter().map(|iv| iv.var.clone()).zip(iter_values.iter().cloned()).collect();
        let predicate = crate::subst::substitute(&predicate, &own);
        self.check_bindings(&block, &iter_values, &predicate, &axis_spans)?;
        if self.guarded == 0 && predicate.as_bool() == Some(true) {
            self.check_access_bounds(&block, &iter_values, span)?;
        }
        check_own_variables(&block, &self.block_vars, span)?;
        check_mixed_bindings(&block, &iter_values, span)?;
        check_iteration_order(&block, span)?;
        if self.guarded == 0 && predicate.as_bool() == Some(true) {
            check_one_writer(&block, span)?;
        }
        Ok(Stmt::Block(Box::new(BlockRealize { iter_values, predicate, block })))
    }

    /// Declared `T.reads`/`T.writes` must name every buffer the block
    /// accesses (a buffer the block writes may be left out of its reads, as
    /// TVM's `te.create_prim_func` leaves out the buffer a reduction updates).
    pub(crate) fn check_declared(
        &self,
        block: &Block,
        r_inf: &[BufferRegion],
        w_inf: &[BufferRegion],
        reads: Option<&(Vec<BufferRegion>, Span)>,
        writes: Option<&(Vec<BufferRegion>, Span)>,
    ) -> R<()> {
        if block.name == "root" && block.iter_vars.is_empty() {
            // The root block's signature is empty by convention.
            return Ok(());
        }
        let names = |v: &[BufferRegion]| v.iter().map(|r| r.buffer.name().to_string()).collect::<Vec<_>>().join(", ");
        let declared_writes: &[BufferRegion] = writes.map_or(w_inf, |w| &w.0[..]);
        if let Some((ws, span)) = writes {
            // A stand-in for a declaration already reported is not named.
            let undeclared =
                |w: &&BufferRegion| !ws.iter().any(|d| d.buffer == w.buffer) && !self.poisoned.contains(&w.buffer);
            if let Some(missing) = w_inf.iter().find(undeclared) {
                return Err(Diagnostic::at(
                    *span,
                    format!(
                        "block `{}` writes `{}`, but its `T.writes` does not name it",
                        block.name,
                        missing.buffer.name()
                    ),
                )
                .label(format!("declares: {}", names(ws)))
                .help(format!(
                    "add `{}` to `T.writes`, or leave `T.writes` out to have it inferred",
                    missing.buffer.name()
                )));
            }
        }
        if let Some((rs, span)) = reads {
            let declared =
                |b: &Buffer| rs.iter().chain(declared_writes).any(|d| &d.buffer == b) || self.poisoned.contains(b);
            if let Some(missing) = r_inf.iter().find(|r| !declared(&r.buffer)) {
                return Err(Diagnostic::at(
                    *span,
                    format!(
                        "block `{}` reads `{}`, but its `T.reads` does not name it",
                        block.name,
                        missing.buffer.name()
                    ),
                )
                .label(format!("declares: {}", names(rs)))
                .help(format!(
                    "add `{}` to `T.reads`, or leave `T.reads` out to have it inferred",
                    missing.buffer.name()
                )));
            }
        }
        Ok(())
    }

    /// Each block variable is bound to an integer expression of the
    /// enclosing loops (not of the block's own variables) that stays inside
    /// its domain where that can be seen at once: a plain loop variable whose
    /// constant extent is larger than the domain, without `T.where`, is an
    /// error.
    pub(crate) fn check_bindings(&self, block: &Block, values: &[Expr], predicate: &Expr, spans: &[Span]) -> R<()> {
        for (k, (iv, v)) in block.iter_vars.iter().zip(values).enumerate() {
            let span = spans.get(k).copied().unwrap_or_default();
            if !v.dtype().is_int() {
                return Err(Diagnostic::at(
                    span,
                    format!("block variable `{}` is bound to a {} value", iv.var.name(), v.dtype()),
                ));
            }
            if let Some(other) = block.iter_vars.iter().find(|o| v.uses(&o.var)) {
                return Err(Diagnostic::at(
                    span,
                    format!(
                        "block variable `{}` is bound to an expression of block variable `{}`",
                        iv.var.name(),
                        other.var.name()
                    ),
                )
                .help("bind block variables to expressions of the loops around the block"));
            }
            // A plain loop variable with constant bounds and no `T.where`:
            // every value the loop takes must lie in the domain.
            let Some(lr) = v.as_var().and_then(|x| self.loop_range_of(&Expr::Var(x.clone()))) else {
                continue;
            };
            let (Some(lo), Some(ext), Some(dlo), Some(dext)) =
                (lr.min.as_int(), lr.extent.as_int(), iv.dom.min.as_int(), iv.dom.extent.as_int())
            else {
                continue;
            };
            if predicate.as_bool() == Some(true) && (lo < dlo || lo + ext > dlo + dext) {
                let loop_name = v.as_var().map_or("?", |x| x.name());
                let runs = if lo == 0 { format!("runs {ext} times") } else { format!("runs over {lo}..{}", lo + ext) };
                return Err(Diagnostic::at(
                    span,
                    format!(
                        "block variable `{}` has domain {dlo}..{}, but its loop `{loop_name}` {runs}",
                        iv.var.name(),
                        dlo + dext
                    ),
                )
                .help("make the domain match the loop, or guard the block with `T.where`"));
            }
        }
        Ok(())
    }

    /// Consumes one block-header statement; `false` when `s` starts the body.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn block_header_stmt(
        &mut self,
        s: &ast::Stmt,
        iter_vars: &mut Vec<IterVar>,
        iter_values: &mut Vec<Expr>,
        predicate: &mut Expr,
        reads: &mut Option<(Vec<BufferRegion>, Span)>,
        writes: &mut Option<(Vec<BufferRegion>, Span)>,
        annotations: &mut Annotations,
        allocs: &mut Vec<Buffer>,
        init: &mut Option<Stmt>,
    ) -> R<bool> {
        match &s.kind {
            StmtKind::Assign { targets, value } if targets.len() == 1 => {
                let ExprKind::Call { func, args } = &value.kind else { return Ok(false) };
                let f = dotted(func).unwrap_or_default();
                if let Some(kind) = f.strip_prefix("T.axis.") {
                    self.axis(kind, &targets[0], args, value.span, iter_vars, iter_values)?;
                    return Ok(true);
                }
                if f == "T.alloc_buffer" || f == "T.sblock_alloc_buffer" {
                    let ExprKind::Name(n) = &targets[0].kind else {
                        return Err(Diagnostic::at(targets[0].span, "expected a name"));
                    };
                    let b = self.buffer_decl(n, args, value.span, Scope::Global)?;
                    self.bind(n, Binding::Buffer(b.clone()));
                    allocs.push(b);
                    return Ok(true);
                }
                Ok(false)
            }
            StmtKind::Expr(ast::Expr { kind: ExprKind::Call { func, args }, span }) => {
                let f = dotted(func).unwrap_or_default();
                match f.as_str() {
                    "T.where" => {
                        let [Arg::Positional(c)] = &args[..] else {
                            return Err(Diagnostic::at(*span, "T.where takes one condition"));
                        };
                        let c = self.expr(c)?;
                        *predicate = self.to_bool(c, *span)?;
                    }
                    "T.reads" => *reads = Some((self.regions(args)?, *span)),
                    "T.writes" => *writes = Some((self.regions(args)?, *span)),
                    "T.block_attr" | "T.sblock_attr" => {
                        let [Arg::Positional(d)] = &args[..] else {
                            return Err(Diagnostic::at(*span, "T.block_attr takes one dict"));
                        };
                        *annotations = self.attr_dict(d)?;
                    }
                    _ => return Ok(false),
                }
                Ok(true)
            }
            StmtKind::With { items, body } if items.len() == 1 => {
                let ExprKind::Call { func, .. } = &items[0].context.kind else { return Ok(false) };
                if dotted(func).as_deref() != Some("T.init") {
                    return Ok(false);
                }
                *init = Some(self.stmts(body));
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    pub(crate) fn axis(
        &mut self,
        kind: &str,
        target: &ast::Expr,
        args: &[Arg],
        span: Span,
        iter_vars: &mut Vec<IterVar>,
        iter_values: &mut Vec<Expr>,
    ) -> R<()> {
        let pos: Vec<&ast::Expr> = args
            .iter()
            .filter_map(|a| match a {
                Arg::Positional(e) => Some(e),
                _ => None,
            })
            .collect();
        if kind == "remap" {
            let [kinds, vals] = pos[..] else {
                return Err(Diagnostic::at(span, "T.axis.remap takes a kind string and a list of loop variables"));
            };
            let ExprKind::Str(ks) = &kinds.kind else {
                return Err(Diagnostic::at(kinds.span, "expected a string of S and R, such as \"SSR\""));
            };
            let (ExprKind::List(vs) | ExprKind::Tuple(vs)) = &vals.kind else {
                return Err(Diagnostic::at(vals.span, "expected a list of loop variables"));
            };
            let names: Vec<&ast::Expr> = match &target.kind {
                ExprKind::Tuple(v) => v.iter().collect(),
                _ => vec![target],
            };
            if ks.chars().count() != vs.len() || vs.len() != names.len() {
                return Err(Diagnostic::at(
                    span,
                    format!(
                        "T.axis.remap has {} kinds, {} values and {} variables; they must match",
                        ks.chars().count(),
                        vs.len(),
                        names.len()
                    ),
                ));
            }
            for ((k, v), n) in ks.chars().zip(vs).zip(names) {
                let kind = match k {
                    'S' => IterKind::Spatial,
                    'R' => IterKind::Reduce,
                    _ => return Err(Diagnostic::at(kinds.span, format!("unknown axis kind `{k}`: use S or R"))),
                };
                let value = self.expr(v)?;
                // The domain is the loop's range, its start included.
                let range = self.loop_range_of(&value).ok_or_else(|| {
                    Diagnostic::at(v.span, "T.axis.remap takes loop variables of the enclosing loops")
                })?;
                self.axis_spans.push(v.span);
                self.new_axis(n, kind, range, value, iter_vars, iter_values)?;
            }
            return Ok(());
        }
        let kind = match kind {
            "spatial" | "S" => IterKind::Spatial,
            "reduce" | "R" => IterKind::Reduce,
            "opaque" | "scan" => IterKind::Opaque,
            _ => {
                return Err(did_you_mean(
                    Diagnostic::at(span, format!("unknown axis kind `T.axis.{kind}`")),
                    kind,
                    ["spatial", "reduce", "opaque", "scan", "remap"],
                ))
            }
        };
        let [dom, value] = pos[..] else {
            return Err(Diagnostic::at(span, "T.axis.spatial takes a domain and a value"));
        };
        let dom = match &dom.kind {
            ExprKind::Tuple(v) if v.len() == 2 => {
                let lo = self.expr(&v[0])?;
                let hi = self.expr(&v[1])?;
                let ext = match (lo.as_int(), hi.as_int()) {
                    (Some(a), Some(b)) => Expr::int(b - a),
                    _ => hi - lo.clone(),
                };
                Range::new(lo, ext)
            }
            _ => Range::from_extent(self.expr(dom)?),
        };
        for x in [&dom.min, &dom.extent] {
            integer(x.clone(), span, "a block axis's domain must be an integer")?;
        }
        let v = integer(self.expr(value)?, span, "a block axis's value must be an integer")?;
        self.axis_spans.push(span);
        self.new_axis(target, kind, dom, v, iter_vars, iter_values)
    }

    pub(crate) fn new_axis(
        &mut self,
        name: &ast::Expr,
        kind: IterKind,
        dom: Range,
        value: Expr,
        iter_vars: &mut Vec<IterVar>,
        iter_values: &mut Vec<Expr>,
    ) -> R<()> {
        let ExprKind::Name(n) = &name.kind else {
            return Err(Diagnostic::at(name.span, "a block variable must be a name"));
        };
        let var = Var::new(n.clone(), DType::I32);
        self.bind(n, Binding::Var(var.clone()));
        self.block_vars.push(var.key());
        iter_vars.push(IterVar { var, dom, kind });
        iter_values.push(value);
        Ok(())
    }

    /// Every unguarded access of the block stays inside each constant
    /// dimension of its buffer, wherever its index is affine in loops of
    /// constant range (then its least and greatest values are reached), or
    /// takes at most 4096 values over them, each computed (TVM's own
    /// `v0 * v0 + v1` reaches 28 in a dimension of 14):
    /// `A[0, vi]` with `vi` up to 36 on a buffer of shape (37, 13) reads the
    /// next rows, which neither TVM nor the simulator would notice.
    fn check_access_bounds(&self, block: &Block, values: &[Expr], span: Span) -> R<()> {
        let bind: Vec<(Var, Expr)> =
            block.iter_vars.iter().map(|iv| iv.var.clone()).zip(values.iter().cloned()).collect();
        let ranges: Vec<LoopSpan> =
            self.loop_ranges.iter().filter_map(|(v, r)| loop_span(v, &r.min, &r.extent)).collect();
        for s in block.init.iter().chain(std::iter::once(&block.body)) {
            if let Some(o) = access_outside(s, &ranges, &bind) {
                return Err(Diagnostic::at(span, o.message(&format!("block `{}`", block.name)))
                    .help("keep the index inside the buffer, or guard the access (`T.where`, `T.if_then_else`)"));
            }
        }
        Ok(())
    }

    /// The range of the enclosing loop whose variable `e` is, found in the
    /// IR built so far among the loops being resolved.
    pub(crate) fn loop_range_of(&self, e: &Expr) -> Option<Range> {
        let v = e.as_var()?;
        self.loop_ranges.iter().rev().find(|(x, _)| x == v).map(|(_, r)| r.clone())
    }

    pub(crate) fn regions(&mut self, args: &[Arg]) -> R<Vec<BufferRegion>> {
        let mut out = Vec::new();
        for a in args {
            let Arg::Positional(e) = a else {
                return Err(Diagnostic::at(
                    span_of_args(std::slice::from_ref(a), Span::default()),
                    "expected a buffer region",
                ));
            };
            let items: Vec<&ast::Expr> = match &e.kind {
                ExprKind::List(v) | ExprKind::Tuple(v) => v.iter().collect(),
                _ => vec![e],
            };
            for it in items {
                out.push(self.region(it)?);
            }
        }
        Ok(out)
    }

    pub(crate) fn region(&mut self, e: &ast::Expr) -> R<BufferRegion> {
        let (buffer, parts) = match &e.kind {
            ExprKind::Subscript { value, indices } => {
                // A region of a window `X = T.match_buffer(B[region],
                // shape)` (TVM prints one in a blockized block's inner
                // block): the same region of `B`, from the window's start.
                if let ExprKind::Name(n) = &value.kind {
                    if let Some(super::func::Binding::Region { base, mins, dims }) = self.lookup(n).cloned() {
                        let parts = super::expr::element_indices(indices);
                        if parts.len() != dims.len() {
                            return Err(Diagnostic::at(
                                e.span,
                                format!(
                                    "this window has {} dimension{}, but {} are given",
                                    dims.len(),
                                    if dims.len() == 1 { "" } else { "s" },
                                    parts.len()
                                ),
                            ));
                        }
                        let mut region: Vec<Range> = mins.iter().map(|m| Range::new(m.clone(), Expr::int(1))).collect();
                        for (p, &d) in parts.iter().zip(&dims) {
                            let r = self.region_part(p)?;
                            let lo = if mins[d].as_int() == Some(0) { r.min } else { mins[d].clone() + r.min };
                            region[d] = Range::new(lo, r.extent);
                        }
                        return Ok(BufferRegion { buffer: base, region });
                    }
                }
                (self.buffer_ref(value)?, indices.as_slice())
            }
            ExprKind::Name(_) => {
                let b = self.buffer_ref(e)?;
                let region = b.shape().iter().map(|d| Range::from_extent(d.clone())).collect();
                return Ok(BufferRegion { buffer: b, region });
            }
            _ => return Err(Diagnostic::at(e.span, "expected a buffer region such as `A[vi, 0:64]`")),
        };
        let parts = super::expr::element_indices(parts);
        if parts.len() != buffer.ndim() {
            return Err(self.rank_error(&buffer, parts.len(), e.span));
        }
        let mut region = Vec::new();
        for p in parts {
            region.push(self.region_part(p)?);
        }
        Ok(BufferRegion { buffer, region })
    }

    /// One dimension of a region: `lo:hi` or an index (extent 1).
    fn region_part(&mut self, p: &ast::Expr) -> R<Range> {
        Ok({
            match &p.kind {
                ExprKind::Slice { lo, hi, step: None } => {
                    let lo = match lo {
                        Some(x) => self.expr(x)?,
                        None => Expr::int(0),
                    };
                    let Some(hi) = hi else {
                        return Err(Diagnostic::at(p.span, "a region slice needs an end"));
                    };
                    let hi = self.expr(hi)?;
                    for x in [&lo, &hi] {
                        integer(x.clone(), p.span, "a region's bounds must be integers")?;
                    }
                    // `lo:lo + e` (how regions print) has extent `e`: read
                    // back, it must not grow into `lo + e - lo`.
                    let ext = match (lo.as_int(), hi.as_int(), &hi) {
                        (Some(a), Some(b), _) => Expr::int(b - a),
                        (_, _, Expr::Binary(crate::BinOp::Add, x, e)) if crate::structural_eq::same_expr(x, &lo) => {
                            (**e).clone()
                        }
                        _ => {
                            let ext = hi.clone() - lo.clone();
                            constant_difference(&ext).map_or(ext, Expr::int)
                        }
                    };
                    Range::new(lo, ext)
                }
                _ => Range::new(integer(self.expr(p)?, p.span, "an index must be an integer")?, Expr::int(1)),
            }
        })
    }
}

/// Inside a block with axes, the body and the init name the iteration
/// through block variables (its own, or those of blocks around it), never
/// through the loops around it: primitives rewrite the loops and keep the
/// block's bindings up to date, so a loop variable used directly would go
/// stale (TVM's well-formedness check refuses it too).
/// A reduction variable bound only to loops that spatial variables are
/// bound to, each alone (`T.axis.remap("SR", [i, i])`), in a block with an
/// init: each output element then has one reduction step, at one value of
/// the reduction variable, and the init runs only where that value is its
/// start; the other elements add to what was never set. (A loop fused of a
/// spatial and a reduction loop, `vj = f // K` and `vk = f % K`, is not
/// this: each `vj` sees every `vk`.)
fn check_mixed_bindings(block: &Block, values: &[Expr], span: Span) -> R<()> {
    if block.init.is_none() {
        return Ok(());
    }
    let spatial: Vec<&Var> = block
        .iter_vars
        .iter()
        .zip(values)
        .filter_map(|(iv, v)| match v {
            Expr::Var(x) if iv.kind == IterKind::Spatial => Some(x),
            _ => None,
        })
        .collect();
    for (iv, v) in block.iter_vars.iter().zip(values) {
        if iv.kind != IterKind::Reduce {
            continue;
        }
        let mut loops: Vec<Var> = Vec::new();
        v.walk(&mut |e| {
            if let Expr::Var(x) = e {
                loops.push(x.clone());
            }
        });
        if let Some(l) = loops.first().filter(|_| loops.iter().all(|x| spatial.contains(&x))) {
            return Err(Diagnostic::at(
                span,
                format!(
                    "block `{}` binds its reduction variable `{}` to loop `{}` only, which also binds a spatial variable: each element gets one reduction step, and the init runs for one of them only",
                    block.name,
                    iv.var.name(),
                    l.name()
                ),
            )
            .help("bind each reduction variable to loops of its own"));
        }
    }
    Ok(())
}

fn check_own_variables(block: &Block, block_vars: &[usize], span: Span) -> R<()> {
    if block.iter_vars.is_empty() {
        return Ok(());
    }
    let stmts: Vec<&Stmt> = std::iter::once(&block.body).chain(block.init.as_ref()).collect();
    let mut inner: Vec<usize> = block.iter_vars.iter().map(|iv| iv.var.key()).collect();
    for st in &stmts {
        st.walk(&mut |x| match x {
            Stmt::For(l) => inner.push(l.var.key()),
            Stmt::Let { var, .. } => inner.push(var.key()),
            Stmt::Block(r) => inner.extend(r.block.iter_vars.iter().map(|iv| iv.var.key())),
            _ => {}
        });
    }
    let mut stray: Option<String> = None;
    for st in &stmts {
        st.walk(&mut |x| {
            x.for_each_expr(|e| {
                e.walk(&mut |v| {
                    if let Expr::Var(v) = v {
                        if stray.is_none() && !inner.contains(&v.key()) && !block_vars.contains(&v.key()) {
                            stray = Some(v.name().to_string());
                        }
                    }
                })
            })
        });
    }
    match stray {
        None => Ok(()),
        Some(v) => Err(Diagnostic::at(
            span,
            format!("block `{}` uses the loop variable `{v}` in its body", block.name),
        )
        .help(
            "inside a block, name the iteration with the block's own axes (T.axis.*), bound to the loops in its header",
        )),
    }
}

/// A block's iterations may run in any order along its spatial axes and in
/// any order of reduction steps (primitives reorder, bind and split them,
/// and the reference runs spatial iterations in parallel), so its body must
/// not depend on that order. Two forms that would are refused, for blocks
/// whose body is straight-line code (no loops, no nested blocks) and that
/// have no opaque axis:
/// - a read of a buffer the block writes, at other indices than it writes
///   (`B[vi, vj] = B[vj, vi]`): one iteration reads what another writes;
/// - in a block with a reduction axis, a store to an element that does not
///   depend on the reduction axis and that the body has not read before
///   (`C[vi] = 0.0` in the body instead of the init): every reduction step
///   but the last would be lost;
/// - a plain store (its value does not read the element it writes) whose
///   value depends on a spatial axis its indices do not (`B[0, vj] = A[vi,
///   vj]`): iterations along that axis write different values to one
///   element, and the last one in whatever order they run wins. (One that
///   accumulates, `B[0] = B[0] + A[vi, vj]`, is run in order by the
///   reference; bound to threads it is refused when lowered.)
///
/// The init may not read a buffer at an index that depends on a reduction
/// axis: it runs once, before the first reduction step, and primitives place
/// it apart from the body (a bias read at the output's indices is fine).
/// Nor may it write an element of a buffer the body writes elsewhere
/// (`B[0] = 0.0` for `B[vi] = B[vi] + ..`): it would reset another
/// iteration's result.
fn check_iteration_order(block: &Block, span: Span) -> R<()> {
    if block.iter_vars.is_empty() || block.iter_vars.iter().any(|iv| iv.kind == IterKind::Opaque) {
        return Ok(());
    }
    let mut nested = false;
    block.body.walk(&mut |s| nested |= matches!(s, Stmt::For(_) | Stmt::Block(_)));
    if nested {
        return Ok(());
    }
    let name = &block.name;
    let same = |a: &[Expr], b: &[Expr]| {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| crate::structural_eq::same_expr(x, y))
    };
    let reduce: Vec<&Var> = block.iter_vars.iter().filter(|iv| iv.kind == IterKind::Reduce).map(|iv| &iv.var).collect();
    if let Some(init) = &block.init {
        let mut read = None;
        init.walk(&mut |st| {
            st.for_each_expr(|e| {
                e.walk(&mut |x| {
                    if let (None, Expr::Load(b, idx)) = (&read, x) {
                        if let Some(v) = reduce.iter().find(|v| idx.iter().any(|i| i.uses(v))) {
                            read = Some((b.name().to_string(), v.name().to_string()));
                        }
                    }
                })
            })
        });
        if let Some((b, v)) = read {
            return Err(Diagnostic::at(
                span,
                format!("the init of block `{name}` reads `{b}` at an index that depends on the reduction axis `{v}`"),
            )
            .help("the init runs once, before the first reduction step: give it values that do not depend on the reduction axis"));
        }
        let mut init_nested = false;
        init.walk(&mut |s| init_nested |= matches!(s, Stmt::For(_) | Stmt::Block(_)));
        let mut body_stores: Vec<(&Buffer, &[Expr])> = Vec::new();
        block.body.walk(&mut |st| {
            if let Stmt::Store { buffer, indices, .. } = st {
                body_stores.push((buffer, indices));
            }
        });
        let mut stray = None;
        init.walk(&mut |st| {
            if let Stmt::Store { buffer, indices, .. } = st {
                let same_buffer: Vec<&[Expr]> =
                    body_stores.iter().filter(|(b, _)| *b == buffer).map(|(_, idx)| *idx).collect();
                let written = same_buffer.iter().any(|idx| same(idx, indices));
                // A buffer the body does not write keeps the init's value;
                // one it writes elsewhere would be reset under it.
                if stray.is_none() && !same_buffer.is_empty() && !written {
                    let at: Vec<String> = indices.iter().map(crate::printer::print_expr).collect();
                    stray = Some(format!("{}[{}]", buffer.name(), at.join(", ")));
                }
            }
        });
        if let (false, Some(elem)) = (init_nested, stray) {
            return Err(Diagnostic::at(
                span,
                format!("the init of block `{name}` writes `{elem}`, an element of a buffer its body writes elsewhere"),
            )
            .help("the init gives the reduction its starting value: write the elements the body accumulates into, at the same indices"));
        }
    }
    // Stores in program order, each with the loads that come before it or in it.
    let mut stores: Vec<(&Buffer, &[Expr])> = Vec::new();
    let mut loads: Vec<(&Buffer, &[Expr])> = Vec::new();
    let mut problem: Option<Diagnostic> = None;
    // Stores under a condition (as `lower_init` writes the init: `if vk ==
    // 0:`) need not happen at every step.
    let mut conditional: Vec<*const Stmt> = Vec::new();
    block.body.walk(&mut |st| {
        if let Stmt::If { then, orelse, .. } = st {
            then.walk(&mut |x| conditional.push(x as *const Stmt));
            if let Some(e) = orelse {
                e.walk(&mut |x| conditional.push(x as *const Stmt));
            }
        }
    });
    block.body.walk(&mut |st| {
        st.for_each_expr(|e| {
            e.walk(&mut |x| {
                if let Expr::Load(b, idx) = x {
                    loads.push((b, idx));
                }
            })
        });
        if let Stmt::Store { buffer, indices, .. } = st {
            let by_reduction = indices.iter().any(|i| reduce.iter().any(|v| i.uses(v)));
            let read_before = loads.iter().any(|(b, idx)| *b == buffer && same(idx, indices));
            let every_step = !conditional.contains(&(st as *const Stmt));
            if problem.is_none() && !reduce.is_empty() && every_step && !by_reduction && !read_before {
                problem = Some(
                    Diagnostic::at(
                        span,
                        format!(
                            "block `{name}` has the reduction axis `{}`, but its body overwrites `{}` without reading it: every reduction step but the last would be lost",
                            reduce[0].name(),
                            buffer.name()
                        ),
                    )
                    .help("give the starting value in `with T.init():` and update the element in the body"),
                );
            }
            stores.push((buffer, indices));
        }
    });
    if let Some(d) = problem {
        return Err(d);
    }
    // The values through the body's `let`s, to see which axes they use.
    let mut lets: Vec<(Var, Expr)> = Vec::new();
    let mut collided: Option<(String, String)> = None;
    // A buffer the block declares in its body (`T.decl_buffer`) is each
    // instance's own.
    let mut own: Vec<Buffer> = Vec::new();
    block.body.walk(&mut |st| {
        if let Stmt::Allocate { buffer, .. } = st {
            own.push(buffer.clone());
        }
    });
    block.body.walk(&mut |st| match st {
        Stmt::Let { var, value, .. } => lets.push((var.clone(), crate::subst::substitute(value, &lets))),
        Stmt::Store { buffer, indices, value } if collided.is_none() && !own.contains(buffer) => {
            let value = crate::subst::substitute(value, &lets);
            // (Indices through the lets too: `vj: T.let[T.int32] = vi;
            // B[vj] = A[vi]` stores at `vi`.)
            let indices: Vec<Expr> = indices.iter().map(|i| crate::subst::substitute(i, &lets)).collect();
            let indices = &indices;
            let mut accumulates = false;
            value.walk(&mut |x| accumulates |= matches!(x, Expr::Load(b, i) if b == buffer && same(i, indices)));
            let axis = block.iter_vars.iter().find(|iv| {
                iv.kind == IterKind::Spatial
                    && iv.dom.extent.as_int() != Some(1)
                    && value.uses(&iv.var)
                    && !indices.iter().any(|i| i.uses(&iv.var))
            });
            if let (false, Some(iv)) = (accumulates, axis) {
                collided = Some((buffer.name().to_string(), iv.var.name().to_string()));
            }
        }
        _ => {}
    });
    if let Some((b, v)) = collided {
        return Err(Diagnostic::at(
            span,
            format!(
                "block `{name}` stores into `{b}` a value that depends on its spatial axis `{v}`, at indices that do not: every iteration along `{v}` writes the same element, and which one lands would depend on their order"
            ),
        )
        .help(format!("index `{b}` by `{v}` too, or make `{v}` a reduction axis (\"R\") with an init")));
    }
    for (b, idx) in &loads {
        let written: Vec<&[Expr]> = stores.iter().filter(|(w, _)| w == b).map(|(_, i)| *i).collect();
        if !written.is_empty() && !written.iter().any(|w| same(w, idx)) {
            return Err(Diagnostic::at(
                span,
                format!(
                    "block `{name}` reads `{}` at other indices than it writes it: one iteration would read what another writes, and the result would depend on the order of the iterations, which the block's axes leave free",
                    b.name()
                ),
            )
            .help("read from another buffer (a copy), or declare the axis whose iterations must run in order with T.axis.opaque"));
        }
    }
    Ok(())
}

/// `X = T.match_buffer(B[..], ..)`: a window on a region.
fn is_window(s: &ast::Stmt) -> bool {
    let StmtKind::Assign { targets, value } = &s.kind else { return false };
    let ExprKind::Call { func, args } = &value.kind else { return false };
    targets.len() == 1
        && dotted(func).as_deref() == Some("T.match_buffer")
        && matches!(args.first(), Some(Arg::Positional(ast::Expr { kind: ExprKind::Subscript { .. }, .. })))
}

/// `with T.init():`.
fn is_init(s: &ast::Stmt) -> bool {
    let StmtKind::With { items, .. } = &s.kind else { return false };
    items.len() == 1
        && matches!(&items[0].context.kind, ExprKind::Call { func, .. } if dotted(func).as_deref() == Some("T.init"))
}

/// `X = T.alloc_buffer(..)` (or `T.sblock_alloc_buffer`): a buffer of the
/// block's own.
fn is_block_alloc(s: &ast::Stmt) -> bool {
    let StmtKind::Assign { value, .. } = &s.kind else { return false };
    let ExprKind::Call { func, .. } = &value.kind else { return false };
    matches!(dotted(func).as_deref(), Some("T.alloc_buffer" | "T.sblock_alloc_buffer"))
}

/// Instances of a block that differ in a spatial variable write different
/// elements, or the same value: a spatial variable says they are
/// independent, so that a schedule may run them in any order (split and
/// reorder them, bind them to threads), and the last writer would depend
/// on it. `check_iteration_order` refuses an index that leaves out a
/// spatial variable the value uses (`B[0, vj] = A[vi, vj]`); this refuses
/// one that takes one element for two instances whose values differ by a
/// variable it uses (`B[vi // 2] = A[vi]`, `B[vi % 32]`), checked over at
/// most 4096 instances, for the stores of the body outside conditions and
/// loops of its own that do not accumulate into their element.
fn check_one_writer(block: &Block, span: Span) -> R<()> {
    let spatial: Vec<(&Var, i64)> = block
        .iter_vars
        .iter()
        .filter(|iv| iv.kind == IterKind::Spatial)
        .filter_map(|iv| Some((&iv.var, iv.dom.extent.as_int()?)))
        .filter(|(_, e)| *e > 1)
        .collect();
    let Some(points) = spatial.iter().try_fold(1i64, |n, (_, e)| n.checked_mul(*e).filter(|n| *n <= 4096)) else {
        return Ok(());
    };
    if spatial.is_empty() {
        return Ok(());
    }
    type Store = (Buffer, Vec<Expr>, Expr);
    fn stores(s: &Stmt, lets: &mut Vec<(Var, Expr)>, out: &mut Vec<Store>) {
        let sub = |e: &Expr, lets: &[(Var, Expr)]| crate::subst::substitute(e, lets);
        match s {
            Stmt::Store { buffer, indices, value } => {
                out.push((buffer.clone(), indices.iter().map(|i| sub(i, lets)).collect(), sub(value, lets)))
            }
            Stmt::Seq(v) => v.iter().for_each(|x| stores(x, lets, out)),
            Stmt::Let { var, value, body } => {
                let v = sub(value, lets);
                lets.push((var.clone(), v));
                stores(body, lets, out);
                lets.pop();
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    stores(&block.body, &mut Vec::new(), &mut out);
    let only_spatial = |e: &Expr| {
        let mut ok = true;
        e.walk(&mut |x| {
            if let Expr::Var(v) = x {
                ok &= spatial.iter().any(|(s, _)| *s == v);
            }
        });
        ok
    };
    for (buf, idx, value) in out {
        let mut accumulates = false;
        value.walk(&mut |x| accumulates |= matches!(x, Expr::Load(b, i) if *b == buf && i.len() == idx.len() && i.iter().zip(&idx).all(|(a, b)| crate::structural_eq::same_expr(a, b))));
        if accumulates || !idx.iter().all(only_spatial) {
            continue;
        }
        let mut seen: std::collections::HashMap<Vec<i64>, Vec<i64>> = std::collections::HashMap::new();
        for p in 0..points {
            let mut rest = p;
            let mut at = vec![0; spatial.len()];
            for (k, (_, e)) in spatial.iter().enumerate().rev() {
                at[k] = rest % e;
                rest /= e;
            }
            let value_of = |v: &Var| spatial.iter().position(|(s, _)| *s == v).map(|k| at[k]);
            let Some(element) = idx.iter().map(|i| crate::expr::eval(i, &value_of)).collect::<Option<Vec<i64>>>()
            else {
                break;
            };
            let Some(first) = seen.get(&element) else {
                seen.insert(element, at);
                continue;
            };
            // Two instances at one element: a race where the value they
            // store differs with a variable they differ in.
            let differs = spatial.iter().zip(first.iter().zip(&at)).any(|((v, _), (a, b))| a != b && value.uses(v));
            if !differs {
                continue;
            }
            let show = |x: &[i64]| {
                let v: Vec<String> = spatial.iter().zip(x).map(|((s, _), x)| format!("{} = {x}", s.name())).collect();
                v.join(", ")
            };
            let shown: Vec<String> = idx.iter().map(crate::printer::print_expr).collect();
            return Err(Diagnostic::at(
                span,
                format!(
                    "block `{}` writes `{}[{}]` at one element for two of its instances ({} and {}), with values that differ: which lands last depends on the order they run in",
                    block.name,
                    buf.name(),
                    shown.join(", "),
                    show(first),
                    show(&at)
                ),
            )
            .help("index what the block writes so that each instance writes its own element"));
        }
    }
    Ok(())
}

/// Every unguarded access of every block of `f` stays inside its buffer,
/// as `check_access_bounds` checks each block while the text is read, for
/// a function whose sizes only became constants afterwards (run-time sizes
/// bound to their values: `for i in range(n): B[i]` with `B` of 8
/// elements at n = 100). Blocks under a condition or with a predicate are
/// not checked; neither are indices that are not affine in loops of
/// constant range. The error is at the block.
pub fn check_bound_accesses(f: &crate::func::PrimFunc) -> Result<(), Diagnostic> {
    let mut found: Option<Diagnostic> = None;
    each_block_statement(f, &mut |s, ranges, bind, who, span| {
        if found.is_some() {
            return;
        }
        if let Some(o) = access_outside(s, ranges, bind) {
            let msg = o.message(who);
            let d = match span {
                Some(sp) => Diagnostic::at(sp, msg),
                None => Diagnostic::new(msg),
            };
            found = Some(d.help(
                "keep the index inside the buffer at every size, or guard the access (`T.where`, `T.if_then_else`)",
            ));
        }
    });
    found.map_or(Ok(()), Err)
}

/// An unguarded access's index in one dimension of its buffer, where its
/// least or greatest value over the loops, or the dimension's extent, is
/// an expression of the function's run-time sizes.
#[derive(Clone, Debug)]
pub struct SizedAccess {
    /// The access as written: `B[i]`.
    pub access: String,
    pub dim: usize,
    /// The least and greatest values of the index, and the extent: each an
    /// expression of the sizes and literals.
    pub least: Expr,
    pub greatest: Expr,
    pub extent: Expr,
}

/// What `check_bound_accesses` checks once the sizes are known, kept as
/// expressions of the run-time sizes, for code that gets the sizes only
/// when it runs (the launcher of `tirc build`): every unguarded access
/// whose index is affine in the loops around it (their ranges expressions
/// of the sizes) and whose bounds, or whose dimension, depend on a size.
/// The access stays inside its buffer where `least >= 0` and `greatest <
/// extent`. Accesses whose bounds are constants were checked when the
/// text was read.
pub fn sized_accesses(f: &crate::func::PrimFunc) -> Vec<SizedAccess> {
    let sizes = &f.sizes;
    let of_sizes = |e: &Expr| {
        let mut ok = true;
        e.walk(&mut |x| {
            if let Expr::Var(v) = x {
                ok &= sizes.contains(v);
            }
        });
        ok
    };
    // Each size is its own least and greatest value (`B[n - 1 - vi]`).
    let own: Vec<LoopSpan> = sizes.iter().map(|v| (v.clone(), Expr::var(v), Expr::var(v))).collect();
    let mut out: Vec<SizedAccess> = Vec::new();
    each_block_statement(f, &mut |s, ranges, bind, _, _| {
        unguarded_accesses(s, &mut [&own[..], ranges].concat(), &mut |buf, idx, ranges| {
            for (dim, (x, n)) in idx.iter().zip(buf.shape()).enumerate() {
                let at = crate::expr::fold_constants(&crate::subst::substitute(x, bind));
                let Some((least, greatest)) = affine_bounds(&at, ranges) else { continue };
                let constant = least.as_int().is_some() && greatest.as_int().is_some() && n.as_int().is_some();
                if constant || !of_sizes(&least) || !of_sizes(&greatest) || !of_sizes(n) {
                    continue;
                }
                let shown: Vec<String> = idx.iter().map(crate::printer::print_expr).collect();
                let access = format!("{}[{}]", buf.name(), shown.join(", "));
                let a = SizedAccess { access, dim, least, greatest, extent: n.clone() };
                let same = |b: &SizedAccess| {
                    crate::structural_eq::expr_eq(&a.least, &b.least)
                        && crate::structural_eq::expr_eq(&a.greatest, &b.greatest)
                        && crate::structural_eq::expr_eq(&a.extent, &b.extent)
                };
                if !out.iter().any(same) {
                    out.push(a);
                }
            }
        });
    });
    out
}

/// Called on a statement with the loops around it, the block variables
/// as expressions of them, and who it is with its span.
type OnStatement<'a> = dyn FnMut(&Stmt, &[LoopSpan], &[(Var, Expr)], &str, Option<Span>) + 'a;

/// Calls `on` on every statement of `f` whose accesses `check_bound_accesses`
/// checks (the stores, outside nested blocks), with the ranges of the
/// loops around it, the block variables around it as expressions of those
/// loops, and who it is (a block, or the function) with its span. Blocks
/// under a condition or with a predicate are left out.
fn each_block_statement(f: &crate::func::PrimFunc, on: &mut OnStatement) {
    type On<'a> = OnStatement<'a>;
    fn walk(s: &Stmt, ranges: &mut Vec<LoopSpan>, bind: &[(Var, Expr)], cx: (&str, Option<Span>), on: &mut On) {
        match s {
            Stmt::If { .. } => {}
            Stmt::Store { .. } => on(s, ranges, bind, cx.0, cx.1),
            Stmt::For(l) => {
                let pushed = push_range(l, ranges);
                walk(&l.body, ranges, bind, cx, on);
                if pushed {
                    ranges.pop();
                }
            }
            Stmt::Block(r) => {
                if r.predicate.as_bool() != Some(true) {
                    return;
                }
                // The block's variables as expressions of the loops around
                // it, through the bindings of the blocks around it.
                let mut inner: Vec<(Var, Expr)> = r
                    .block
                    .iter_vars
                    .iter()
                    .zip(&r.iter_values)
                    .map(|(iv, v)| (iv.var.clone(), crate::subst::substitute(v, bind)))
                    .collect();
                inner.extend(bind.iter().cloned());
                let b = &r.block;
                let who = format!("block `{}`", b.name);
                let span = b.span.or(cx.1);
                for body in b.init.iter().chain(std::iter::once(&b.body)) {
                    walk(body, ranges, &inner, (&who, span), on);
                }
            }
            _ => s.for_each_child(|c| walk(c, ranges, bind, cx, on)),
        }
    }
    let who = format!("function `{}`", f.name);
    walk(&f.body, &mut Vec::new(), &[], (&who, f.span), on);
}

/// The least and greatest values of `e` over every point of `ranges`, where
/// they number at most `limit` and `e` folds to a constant at each.
fn enumerated_bounds(e: &Expr, ranges: &[LoopSpan], limit: i64) -> Option<(i64, i64)> {
    // Only the loops `e` depends on, each once (the innermost of a name),
    // each of constant range.
    let mut used: Vec<(Var, i64, i64)> = Vec::new();
    for (v, lo, hi) in ranges.iter().rev() {
        if e.uses(v) && !used.iter().any(|u| &u.0 == v) {
            used.push((v.clone(), lo.as_int()?, hi.as_int()?));
        }
    }
    let ranges = &used[..];
    let mut points: i64 = 1;
    for (_, lo, hi) in ranges {
        points = points.checked_mul(hi - lo + 1).filter(|p| *p <= limit)?;
    }
    let mut at: Vec<i64> = ranges.iter().map(|(_, lo, _)| *lo).collect();
    let (mut least, mut greatest) = (i64::MAX, i64::MIN);
    for _ in 0..points {
        let bind: Vec<(Var, Expr)> =
            ranges.iter().zip(&at).map(|((x, ..), v)| (x.clone(), Expr::Int(*v, x.dtype()))).collect();
        let x = crate::expr::fold_constants(&crate::subst::substitute(e, &bind)).as_int()?;
        least = least.min(x);
        greatest = greatest.max(x);
        // The next point, the last range fastest.
        for (k, (_, lo, hi)) in ranges.iter().enumerate().rev() {
            if at[k] < *hi {
                at[k] += 1;
                break;
            }
            at[k] = *lo;
        }
    }
    Some((least, greatest))
}

/// An access found outside a dimension of its buffer.
struct Outside {
    /// The access as written: `A[0, vi]`.
    access: String,
    dim: usize,
    lo: i64,
    hi: i64,
    extent: i64,
}

impl Outside {
    fn message(&self, who: &str) -> String {
        let Outside { access, dim, lo, hi, extent } = self;
        format!("{who} accesses `{access}`, whose index in dimension {dim} runs from {lo} to {hi}, outside its extent {extent}")
    }
}

/// The first unguarded access of `s` (`unguarded_accesses`) whose index,
/// with `bind` put in, leaves a constant dimension of its buffer over the
/// loops of `ranges` and those inside `s`: where the index is affine in
/// loops of constant range, or takes at most 4096 values over them.
fn access_outside(s: &Stmt, ranges: &[LoopSpan], bind: &[(Var, Expr)]) -> Option<Outside> {
    let mut found = None;
    unguarded_accesses(s, &mut ranges.to_vec(), &mut |buf, idx, ranges| {
        if found.is_some() {
            return;
        }
        for (dim, (x, n)) in idx.iter().zip(buf.shape()).enumerate() {
            let Some(extent) = n.as_int() else { continue };
            let at = crate::expr::fold_constants(&crate::subst::substitute(x, bind));
            let constant = affine_bounds(&at, ranges).and_then(|(lo, hi)| Some((lo.as_int()?, hi.as_int()?)));
            let Some((lo, hi)) = constant.or_else(|| enumerated_bounds(&at, ranges, 4096)) else {
                continue;
            };
            if lo < 0 || hi >= extent {
                let shown: Vec<String> = idx.iter().map(crate::printer::print_expr).collect();
                found = Some(Outside { access: format!("{}[{}]", buf.name(), shown.join(", ")), dim, lo, hi, extent });
                return;
            }
        }
    });
    found
}

/// A loop variable and its least and greatest values: literals where the
/// loop's range is constant, else expressions of what the range uses.
type LoopSpan = (Var, Expr, Expr);
/// Called on a buffer access with its indices and the loops around it.
type OnAccess<'a> = dyn FnMut(&Buffer, &[Expr], &[LoopSpan]) + 'a;

/// Calls `f` on every buffer access of `s` that no condition guards (not
/// under an `if`, a select's arms or the right of `and`/`or`, nor in a nested
/// block, which is checked on its own), with the ranges of the loops
/// around it.
fn unguarded_accesses(s: &Stmt, ranges: &mut Vec<LoopSpan>, f: &mut OnAccess) {
    fn expr(e: &Expr, ranges: &[LoopSpan], f: &mut OnAccess) {
        match e {
            Expr::Select(c, _, _) => expr(c, ranges, f),
            Expr::Binary(op, a, _) if op.is_logical() => expr(a, ranges, f),
            Expr::Load(b, idx) => {
                f(b, idx, ranges);
                for i in idx {
                    expr(i, ranges, f);
                }
            }
            _ => e.for_each_child(|c| expr(c, ranges, f)),
        }
    }
    match s {
        Stmt::Block(_) | Stmt::If { .. } => {}
        Stmt::Store { buffer, indices, value } => {
            f(buffer, indices, ranges);
            for i in indices {
                expr(i, ranges, f);
            }
            expr(value, ranges, f);
        }
        Stmt::For(l) => {
            let pushed = push_range(l, ranges);
            unguarded_accesses(&l.body, ranges, f);
            if pushed {
                ranges.pop();
            }
        }
        _ => s.for_each_child(|c| unguarded_accesses(c, ranges, f)),
    }
}

/// The range of a loop of variable `v` from `min` for `extent`
/// iterations, unless it is empty by its literal extent.
fn loop_span(v: &Var, min: &Expr, extent: &Expr) -> Option<LoopSpan> {
    if extent.as_int().is_some_and(|e| e <= 0) {
        return None;
    }
    let end = if min.as_int() == Some(0) { extent.clone() } else { min.clone() + extent.clone() };
    let last = end - Expr::Int(1, extent.dtype());
    Some((v.clone(), min.clone(), crate::expr::fold_constants(&last)))
}

/// Pushes the range of loop `l` onto `ranges` unless it is empty; whether
/// it did.
fn push_range(l: &crate::stmt::For, ranges: &mut Vec<LoopSpan>) -> bool {
    match loop_span(&l.var, &l.min, &l.extent) {
        Some(r) => {
            ranges.push(r);
            true
        }
        None => false,
    }
}

/// The least and greatest values of `e` where it is affine (sums of
/// constant multiples of variables of `ranges`, each variable once): then
/// both are reached. Literals where the ranges of the variables it uses
/// are constant; else expressions of their bounds (a positive multiple
/// takes its greatest value at the greatest of its variable's).
fn affine_bounds(e: &Expr, ranges: &[LoopSpan]) -> Option<(Expr, Expr)> {
    use crate::expr::BinOp;
    fn terms(e: &Expr, k: i64, out: &mut Vec<(Var, i64)>, c: &mut i64) -> Option<()> {
        match e {
            Expr::Int(v, _) => *c = c.checked_add(k.checked_mul(*v)?)?,
            Expr::Var(v) => out.push((v.clone(), k)),
            Expr::Binary(BinOp::Add, a, b) => {
                terms(a, k, out, c)?;
                terms(b, k, out, c)?;
            }
            Expr::Binary(BinOp::Sub, a, b) => {
                terms(a, k, out, c)?;
                terms(b, k.checked_neg()?, out, c)?;
            }
            Expr::Binary(BinOp::Mul, a, b) => match (a.as_int(), b.as_int()) {
                (_, Some(m)) => terms(a, k.checked_mul(m)?, out, c)?,
                (Some(m), _) => terms(b, k.checked_mul(m)?, out, c)?,
                _ => return None,
            },
            Expr::Cast(t, a) if t.is_int() => terms(a, k, out, c)?,
            _ => return None,
        }
        Some(())
    }
    let mut out = Vec::new();
    let mut c = 0i64;
    terms(e, 1, &mut out, &mut c)?;
    let (mut lo, mut hi) = (c, c);
    // The terms whose variable's range is not constant, as `k * bound`.
    let (mut lo_terms, mut hi_terms): (Vec<Expr>, Vec<Expr>) = (Vec::new(), Vec::new());
    for (i, (v, k)) in out.iter().enumerate() {
        if out[..i].iter().any(|(w, _)| w == v) {
            return None;
        }
        let (_, a, b) = ranges.iter().rev().find(|(w, _, _)| w == v)?;
        // A positive multiple is least at its variable's least value.
        let (at_lo, at_hi) = if *k >= 0 { (a, b) } else { (b, a) };
        for (bound, c, terms) in [(at_lo, &mut lo, &mut lo_terms), (at_hi, &mut hi, &mut hi_terms)] {
            match bound.as_int() {
                Some(x) => *c = c.checked_add(k.checked_mul(x)?)?,
                None => {
                    let x = Expr::Cast(DType::I64, Box::new(bound.clone()));
                    terms.push(if *k == 1 { x } else { Expr::Int(*k, DType::I64) * x });
                }
            }
        }
    }
    // The literal last, where it is not zero: `n - 1 + 4`.
    let sum = |c: i64, terms: Vec<Expr>| {
        let e = terms.into_iter().reduce(|acc, t| acc + t);
        match e {
            None => Expr::Int(c, DType::I64),
            Some(e) if c == 0 => e,
            Some(e) => e + Expr::Int(c, DType::I64),
        }
    };
    Some((sum(lo, lo_terms), sum(hi, hi_terms)))
}

/// The value of `e` where it is an affine sum of variables (literals, `+`,
/// `-`, and products with a literal) whose variables cancel: `4 * j + 5 -
/// (4 * j + 1)`, a region's extent written as stop minus start. Checked
/// at zero and at each variable's unit vector, which decides an affine sum.
fn constant_difference(e: &Expr) -> Option<i64> {
    fn affine(e: &Expr) -> bool {
        match e {
            Expr::Int(..) | Expr::Var(_) => true,
            Expr::Binary(crate::BinOp::Add | crate::BinOp::Sub, a, b) => affine(a) && affine(b),
            Expr::Binary(crate::BinOp::Mul, a, b) => {
                (a.as_int().is_some() && affine(b)) || (b.as_int().is_some() && affine(a))
            }
            _ => false,
        }
    }
    if !affine(e) {
        return None;
    }
    let mut vars: Vec<crate::Var> = Vec::new();
    e.walk(&mut |x| {
        if let Expr::Var(v) = x {
            if !vars.contains(v) {
                vars.push(v.clone());
            }
        }
    });
    let at = |one: Option<&crate::Var>| crate::expr::eval(e, &|v: &crate::Var| Some(i64::from(Some(v) == one)));
    let c = at(None)?;
    vars.iter().all(|v| at(Some(v)) == Some(c)).then_some(c)
}
