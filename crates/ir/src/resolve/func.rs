//! Resolve of one `@T.prim_func`: parameters, loops, blocks, stores and the
//! lowered forms, with lexical scopes for names.
//!
//! TVMScript's concise scoping is honoured: `x = T.launch_thread(..)`,
//! `x = T.decl_buffer(..)`, `x = T.allocate(..)` and `x: T.int32 = v` scope
//! over the statements that follow them in the same body.

use super::{dotted, span_of_args};
use crate::buffer::{Buffer, Scope};
use crate::diag::{did_you_mean, Diagnostic};
use crate::dtype::DType;
use crate::expr::{Expr, Range, Var};
use crate::func::PrimFunc;
use crate::region::infer_block_regions;
use crate::stmt::{
    Annotations, Attr, Block, BlockRealize, BufferRegion, For, ForKind, IterKind, IterVar, Stmt, ThreadTag,
};
use tirc_parser::ast::{self, Arg, ExprKind, Span, StmtKind};

pub(crate) type R<T> = Result<T, Diagnostic>;

#[derive(Clone)]
pub(crate) enum Binding {
    Var(Var),
    Buffer(Buffer),
    /// A flat view `T.Buffer((n,), data=B.data)` of a buffer of another shape.
    View(Buffer, Vec<Expr>),
    /// A `T.handle` parameter not yet matched to a buffer.
    Handle,
    /// `x = T.env_thread("threadIdx.x")`: a thread index that a later
    /// `T.launch_thread(x, extent)` launches.
    Thread(Var, ThreadTag),
}

pub(crate) struct FuncResolver<'a> {
    pub consts: &'a [(String, i64)],
    pub scopes: Vec<Vec<(String, Binding)>>,
    pub errors: Vec<Diagnostic>,
    attrs: Annotations,
    root_allocs: Vec<Buffer>,
    handles: Vec<(String, Option<Buffer>)>,
    /// Loops being resolved, outermost first, for `T.axis.remap`.
    loop_extents: Vec<(Var, Expr)>,
    /// Stand-ins for parameters whose declaration was in error: their uses
    /// are not checked, so that one mistake is reported once.
    pub poisoned: Vec<Buffer>,
}

pub(crate) fn resolve_prim_func(s: &ast::Stmt, consts: &[(String, i64)]) -> Result<PrimFunc, Vec<Diagnostic>> {
    let StmtKind::FunctionDef { name, params, body, .. } = &s.kind else {
        return Err(vec![Diagnostic::at(s.span, "expected a function")]);
    };
    let mut r = FuncResolver {
        consts,
        scopes: vec![vec![]],
        errors: vec![],
        attrs: vec![],
        root_allocs: vec![],
        handles: vec![],
        loop_extents: vec![],
        poisoned: vec![],
    };
    let mut bufs = Vec::new();
    for p in params {
        match r.param(p) {
            Ok(Some(b)) => {
                r.bind(&p.name.name, Binding::Buffer(b.clone()));
                bufs.push(Some(b));
            }
            Ok(None) => {
                r.bind(&p.name.name, Binding::Handle);
                r.handles.push((p.name.name.clone(), None));
                bufs.push(None);
            }
            Err(e) => {
                // Keep the name known, so that its uses do not each report
                // it again.
                r.errors.push(e);
                let b = r.poison(&p.name.name);
                bufs.push(Some(b));
            }
        }
    }
    let body_stmt = r.stmts(body);
    // Handles take the buffer `T.match_buffer` gave them.
    let mut out_params = Vec::new();
    for (p, b) in params.iter().zip(bufs) {
        match b {
            Some(b) => out_params.push(b),
            None => match r.handles.iter().find(|(n, _)| *n == p.name.name) {
                Some((_, Some(b))) => out_params.push(b.clone()),
                _ => r.errors.push(
                    Diagnostic::at(p.span, format!("handle `{}` is never matched to a buffer", p.name.name))
                        .help(format!("add `X = T.match_buffer({}, (shape), \"float32\")`", p.name.name)),
                ),
            },
        }
    }
    if !r.errors.is_empty() {
        return Err(r.errors);
    }
    let has_blocks = !body_stmt.blocks().is_empty();
    let body = if has_blocks || !r.root_allocs.is_empty() {
        match body_stmt {
            Stmt::Block(mut b) if b.block.name == "root" && r.root_allocs.is_empty() && b.iter_values.is_empty() => {
                // The root block's signature is empty, as in TVM.
                b.block.reads.clear();
                b.block.writes.clear();
                Stmt::Block(b)
            }
            body => root_block(body, std::mem::take(&mut r.root_allocs)),
        }
    } else {
        body_stmt
    };
    Ok(PrimFunc { name: name.name.clone(), params: out_params, attrs: r.attrs, body })
}

/// The implicit root block that holds a function's body and its top-level
/// allocations.
pub fn root_block(body: Stmt, allocs: Vec<Buffer>) -> Stmt {
    let block = Block {
        name: "root".into(),
        iter_vars: vec![],
        reads: vec![],
        writes: vec![],
        init: None,
        alloc_buffers: allocs,
        annotations: vec![],
        body,
    };
    Stmt::Block(Box::new(BlockRealize { iter_values: vec![], predicate: Expr::bool(true), block }))
}

/// Names of the loop forms `for x in T.<name>(...)`.
const LOOP_FORMS: [&str; 7] = ["grid", "serial", "parallel", "vectorized", "unroll", "thread_binding", "range"];

impl FuncResolver<'_> {
    pub(crate) fn bind(&mut self, name: &str, b: Binding) {
        if let Some(scope) = self.scopes.last_mut() {
            scope.push((name.to_string(), b));
        }
    }

    /// Binds `name` to a stand-in buffer after the error in its
    /// declaration, so that its uses are not each reported again.
    pub(crate) fn poison(&mut self, name: &str) -> Buffer {
        let b = Buffer::new(name, DType::F32, vec![], Scope::Global);
        self.bind(name, Binding::Buffer(b.clone()));
        self.poisoned.push(b.clone());
        b
    }

    pub(crate) fn lookup(&self, name: &str) -> Option<&Binding> {
        self.scopes.iter().rev().flat_map(|s| s.iter().rev()).find(|(n, _)| n == name).map(|(_, b)| b)
    }

    pub(crate) fn visible_names(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.scopes.iter().flat_map(|s| s.iter().map(|(n, _)| n.as_str())).collect();
        v.extend(self.consts.iter().map(|(n, _)| n.as_str()));
        v
    }

    fn scoped<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        self.scopes.push(vec![]);
        let out = f(self);
        self.scopes.pop();
        out
    }

    /// `A: T.Buffer((M, K), "float32")` gives a buffer; `a: T.handle` none.
    fn param(&mut self, p: &ast::Param) -> R<Option<Buffer>> {
        let Some(ann) = &p.annotation else {
            return Err(Diagnostic::at(p.span, format!("parameter `{}` has no type", p.name.name))
                .help(format!("write `{}: T.Buffer((M, N), \"float32\")`", p.name.name)));
        };
        if dotted(ann).as_deref() == Some("T.handle") {
            return Ok(None);
        }
        let (args, span) = match &ann.kind {
            ExprKind::Call { func, args } if dotted(func).as_deref() == Some("T.Buffer") => (args.clone(), ann.span),
            ExprKind::Subscript { value, indices } if dotted(value).as_deref() == Some("T.Buffer") => {
                (indices.iter().cloned().map(Arg::Positional).collect(), ann.span)
            }
            _ => {
                return Err(Diagnostic::at(ann.span, "a parameter must be a `T.Buffer(...)` or a `T.handle`"));
            }
        };
        self.buffer_decl(&p.name.name, &args, span, Scope::Global).map(Some)
    }

    /// Reads `(shape, dtype, scope=.., data=..)` into a new buffer.
    pub(crate) fn buffer_decl(&mut self, name: &str, args: &[Arg], span: Span, scope: Scope) -> R<Buffer> {
        let mut shape = None;
        let mut dtype = DType::F32;
        let mut scope = scope;
        let mut strides = None;
        let mut pos = 0;
        for a in args {
            match a {
                Arg::Positional(e) => {
                    match pos {
                        0 => shape = Some(self.shape(e)?),
                        1 => dtype = self.dtype_arg(e)?,
                        2 => scope = self.scope_arg(e)?,
                        _ => return Err(Diagnostic::at(e.span, "too many arguments for a buffer declaration")),
                    }
                    pos += 1;
                }
                Arg::Keyword(k, e) => match k.name.as_str() {
                    "shape" => shape = Some(self.shape(e)?),
                    "dtype" => dtype = self.dtype_arg(e)?,
                    "scope" => scope = self.scope_arg(e)?,
                    "strides" => strides = Some(e),
                    "data" | "elem_offset" | "align" | "offset_factor" | "buffer_type" | "axis_separators" => {}
                    other => {
                        return Err(did_you_mean(
                            Diagnostic::at(k.span, format!("unknown buffer argument `{other}`")),
                            other,
                            ["shape", "dtype", "scope", "data", "strides", "elem_offset", "align", "offset_factor"],
                        ))
                    }
                },
                Arg::Star(e) | Arg::DoubleStar(e) => {
                    return Err(Diagnostic::at(e.span, "`*` arguments are not allowed here"))
                }
            }
        }
        let Some(shape) = shape else {
            return Err(Diagnostic::at(span, "a buffer needs a shape"));
        };
        if let Some(st) = strides {
            self.check_strides(st, &shape)?;
        }
        Ok(Buffer::new(name, dtype, shape, scope))
    }

    /// `strides=` must be those of a compact row-major buffer, the only
    /// layout tirc has (an empty list means the same).
    fn check_strides(&mut self, e: &ast::Expr, shape: &[Expr]) -> R<()> {
        let items: Vec<&ast::Expr> = match &e.kind {
            ExprKind::Tuple(v) | ExprKind::List(v) => v.iter().collect(),
            _ => vec![e],
        };
        if items.is_empty() {
            return Ok(());
        }
        let dims: Vec<i64> = shape.iter().filter_map(|d| d.as_int()).collect();
        let compact: Vec<i64> = (0..dims.len()).map(|d| dims[d + 1..].iter().product()).collect();
        let mut given = Vec::new();
        for it in &items {
            given.push(self.expr(it)?.as_int());
        }
        if given.len() != compact.len() || given.iter().zip(&compact).any(|(g, c)| *g != Some(*c)) {
            let want: Vec<String> = compact.iter().map(|c| c.to_string()).collect();
            return Err(Diagnostic::at(e.span, "tirc supports compact row-major buffers only")
                .help(format!("the strides of this shape are ({}), or leave `strides=` out", want.join(", "))));
        }
        Ok(())
    }

    fn shape(&mut self, e: &ast::Expr) -> R<Vec<Expr>> {
        let items: Vec<&ast::Expr> = match &e.kind {
            ExprKind::Tuple(v) | ExprKind::List(v) => v.iter().collect(),
            _ => vec![e],
        };
        let mut out = Vec::new();
        let mut elements: i64 = 1;
        for it in items {
            let v = self.expr(it)?;
            match v.as_int() {
                Some(n) if n > 0 => {
                    elements = match elements.checked_mul(n) {
                        Some(e) if e <= MAX_ELEMENTS => e,
                        _ => {
                            return Err(Diagnostic::at(e.span, "this buffer is too large")
                                .help(format!("a buffer may hold at most 2^40 ({MAX_ELEMENTS}) elements")))
                        }
                    };
                    out.push(Expr::int(n))
                }
                Some(n) => return Err(Diagnostic::at(it.span, format!("a buffer extent must be positive, not {n}"))),
                None => {
                    return Err(Diagnostic::at(it.span, "buffer extents must be constants")
                        .help("define the size as a module constant, e.g. `M = 1024`"))
                }
            }
        }
        Ok(out)
    }

    pub(crate) fn dtype_arg(&self, e: &ast::Expr) -> R<DType> {
        let name = match &e.kind {
            ExprKind::Str(s) => s.clone(),
            _ => match dotted(e) {
                Some(d) if d.starts_with("T.") => d[2..].to_string(),
                _ => return Err(Diagnostic::at(e.span, "expected a data type such as \"float32\"")),
            },
        };
        DType::parse(&name).ok_or_else(|| {
            let names: Vec<String> = DType::ALL.iter().map(|d| d.name()).collect();
            did_you_mean(
                Diagnostic::at(e.span, format!("unknown data type `{name}`")),
                &name,
                names.iter().map(|s| s.as_str()),
            )
        })
    }

    fn scope_arg(&self, e: &ast::Expr) -> R<Scope> {
        let ExprKind::Str(s) = &e.kind else {
            return Err(Diagnostic::at(e.span, "expected a storage scope such as \"shared\""));
        };
        Scope::parse(s).ok_or_else(|| {
            did_you_mean(
                Diagnostic::at(e.span, format!("unknown storage scope `{s}`")),
                s,
                ["global", "shared", "local"],
            )
        })
    }

    /// Resolves a body; errors are collected and the bad statement dropped.
    pub(crate) fn stmts(&mut self, body: &[ast::Stmt]) -> Stmt {
        self.scoped(|r| r.stmts_in_scope(body))
    }

    fn stmts_in_scope(&mut self, body: &[ast::Stmt]) -> Stmt {
        let mut out = Vec::new();
        for (i, s) in body.iter().enumerate() {
            match self.scoping_stmt(s, &body[i + 1..]) {
                Ok(Some(scoped)) => {
                    out.push(scoped);
                    return Stmt::seq(out);
                }
                Ok(None) => {}
                Err(e) => {
                    self.errors.push(e);
                    self.poison_target(s);
                    continue;
                }
            }
            match self.stmt(s) {
                Ok(st) => out.push(st),
                Err(e) => {
                    self.errors.push(e);
                    self.poison_target(s);
                }
            }
        }
        Stmt::seq(out)
    }

    /// After an error in `name = T.f(...)`, binds `name` to a stand-in.
    fn poison_target(&mut self, s: &ast::Stmt) {
        if let StmtKind::Assign { targets, value: ast::Expr { kind: ExprKind::Call { .. }, .. } } = &s.kind {
            if let [ast::Expr { kind: ExprKind::Name(n), .. }] = &targets[..] {
                if self.lookup(n).is_none() {
                    self.poison(n);
                }
            }
        }
    }

    /// A statement that scopes over the rest of its body, resolved together
    /// with that rest; `None` for any other statement.
    fn scoping_stmt(&mut self, s: &ast::Stmt, rest: &[ast::Stmt]) -> R<Option<Stmt>> {
        match &s.kind {
            StmtKind::Assign { targets, value } if targets.len() == 1 => {
                let ExprKind::Name(name) = &targets[0].kind else { return Ok(None) };
                let ExprKind::Call { func, args } = &value.kind else { return Ok(None) };
                let f = dotted(func).unwrap_or_default();
                match f.as_str() {
                    "T.launch_thread" => {
                        let (tag, extent, _) = self.launch_args(args, value.span)?;
                        let var = Var::new(name.clone(), DType::I32);
                        let body = self.scoped(|r| {
                            r.bind(name, Binding::Var(var.clone()));
                            r.stmts_in_scope(rest)
                        });
                        Ok(Some(Stmt::Launch { var, tag, extent, body: Box::new(body) }))
                    }
                    "T.decl_buffer" | "T.allocate" if !has_keyword(args, "data") => {
                        let buffer = if f == "T.allocate" {
                            self.allocate_args(name, args, value.span)?
                        } else {
                            self.buffer_decl(name, args, value.span, Scope::Global)?
                        };
                        let body = self.scoped(|r| {
                            r.bind(name, Binding::Buffer(buffer.clone()));
                            r.stmts_in_scope(rest)
                        });
                        Ok(Some(Stmt::Allocate { buffer, body: Box::new(body) }))
                    }
                    _ => Ok(None),
                }
            }
            StmtKind::Expr(ast::Expr { kind: ExprKind::Call { func, args }, span }) => match dotted(func).as_deref() {
                Some("T.launch_thread") => {
                    let (tag, extent, var) = self.launch_args(args, *span)?;
                    let Some(var) = var else {
                        return Err(Diagnostic::at(*span, "this launch gives its thread index no name")
                            .help("write `x = T.launch_thread(\"threadIdx.x\", n)`"));
                    };
                    let body = self.scoped(|r| r.stmts_in_scope(rest));
                    Ok(Some(Stmt::Launch { var, tag, extent, body: Box::new(body) }))
                }
                Some("T.attr") => {
                    let launch = self.attr_stmt(args, *span)?;
                    let body = self.scoped(|r| r.stmts_in_scope(rest));
                    Ok(Some(match launch {
                        Some((var, tag, extent)) => Stmt::Launch { var, tag, extent, body: Box::new(body) },
                        None => body,
                    }))
                }
                _ => Ok(None),
            },
            StmtKind::AnnAssign { target, annotation, value: Some(value) } => {
                let ExprKind::Name(name) = &target.kind else {
                    return Err(Diagnostic::at(target.span, "expected a name"));
                };
                let dtype = self.dtype_arg(annotation)?;
                let v = self.expr(value)?;
                let v = self.coerce(v, dtype, value.span)?;
                let var = Var::new(name.clone(), dtype);
                let body = self.scoped(|r| {
                    r.bind(name, Binding::Var(var.clone()));
                    r.stmts_in_scope(rest)
                });
                Ok(Some(Stmt::Let { var, value: v, body: Box::new(body) }))
            }
            _ => Ok(None),
        }
    }

    /// `T.launch_thread("threadIdx.x", n)` or `T.launch_thread(x, n)` of a
    /// thread `x` from `T.env_thread`: the tag, the extent, and the thread
    /// variable in the second form.
    fn launch_args(&mut self, args: &[Arg], span: Span) -> R<(ThreadTag, Expr, Option<Var>)> {
        let pos = positional(args, "T.launch_thread")?;
        let [tag_e, ext_e] = pos[..] else {
            return Err(Diagnostic::at(span, "T.launch_thread takes a thread tag and an extent"));
        };
        let (tag, var) = self.thread_ref(tag_e)?;
        let extent = self.expr(ext_e)?;
        if !extent.dtype().is_int() {
            return Err(Diagnostic::at(
                ext_e.span,
                format!("a thread extent must be an integer, not {}", extent.dtype()),
            ));
        }
        Ok((tag, extent, var))
    }

    /// A thread tag string, or the name of a thread from `T.env_thread`.
    fn thread_ref(&mut self, e: &ast::Expr) -> R<(ThreadTag, Option<Var>)> {
        if let ExprKind::Name(n) = &e.kind {
            return match self.lookup(n) {
                Some(Binding::Thread(v, t)) => Ok((*t, Some(v.clone()))),
                Some(_) => Err(Diagnostic::at(e.span, format!("`{n}` is not a thread from `T.env_thread`"))),
                None => {
                    let names = self.visible_names();
                    Err(did_you_mean(Diagnostic::at(e.span, format!("unknown thread `{n}`")), n, names))
                }
            };
        }
        Ok((self.thread_tag(e)?, None))
    }

    /// `T.attr(node, "key", value)`: a launch when the key is
    /// `thread_extent`; any other attribute is a hint that tirc drops.
    fn attr_stmt(&mut self, args: &[Arg], span: Span) -> R<Option<(Var, ThreadTag, Expr)>> {
        let pos = positional(args, "T.attr")?;
        let [node, key, value] = pos[..] else {
            return Err(Diagnostic::at(span, "T.attr takes a node, a key and a value"));
        };
        let ExprKind::Str(k) = &key.kind else {
            return Err(Diagnostic::at(key.span, "the key of `T.attr` must be a string"));
        };
        if k != "thread_extent" {
            return Ok(None);
        }
        let (tag, var) = self.thread_ref(node)?;
        let Some(var) = var else {
            return Err(Diagnostic::at(node.span, "`thread_extent` needs a thread from `T.env_thread`"));
        };
        let extent = self.expr(value)?;
        Ok(Some((var, tag, extent)))
    }

    pub(crate) fn thread_tag(&self, e: &ast::Expr) -> R<ThreadTag> {
        let ExprKind::Str(s) = &e.kind else {
            return Err(Diagnostic::at(e.span, "expected a thread tag such as \"threadIdx.x\""));
        };
        ThreadTag::parse(s).ok_or_else(|| {
            let names: Vec<String> = ThreadTag::ALL.iter().map(|t| t.name()).collect();
            did_you_mean(
                Diagnostic::at(e.span, format!("unknown thread tag `{s}`")),
                s,
                names.iter().map(|s| s.as_str()),
            )
        })
    }

    /// `T.allocate([n], "float32", "shared")`.
    fn allocate_args(&mut self, name: &str, args: &[Arg], span: Span) -> R<Buffer> {
        self.buffer_decl(name, args, span, Scope::Global)
    }

    fn stmt(&mut self, s: &ast::Stmt) -> R<Stmt> {
        match &s.kind {
            StmtKind::Pass => Ok(Stmt::NoOp),
            StmtKind::Expr(e) => self.expr_stmt(e),
            StmtKind::Assign { targets, value } => self.assign(s, targets, value),
            StmtKind::AugAssign { target, op, value } => {
                let (buffer, indices) = self.store_target(target)?;
                let cur = Expr::Load(buffer.clone(), indices.clone());
                let rhs = self.expr(value)?;
                let v = self.binary(*op, cur, rhs, s.span)?;
                let v = self.coerce(v, buffer.dtype(), value.span)?;
                Ok(Stmt::Store { buffer, indices, value: v })
            }
            StmtKind::For { target, iter, body } => self.for_loop(target, iter, body),
            StmtKind::If { cond, body, orelse } => {
                let c = self.expr(cond)?;
                let then = self.stmts(body);
                let orelse = if orelse.is_empty() { None } else { Some(Box::new(self.stmts(orelse))) };
                Ok(Stmt::If { cond: self.to_bool(c, cond.span)?, then: Box::new(then), orelse })
            }
            StmtKind::With { items, body } => self.with(s, items, body),
            _ => Err(Diagnostic::at(s.span, "this statement is not allowed in a prim_func")),
        }
    }

    fn expr_stmt(&mut self, e: &ast::Expr) -> R<Stmt> {
        let ExprKind::Call { func, args } = &e.kind else {
            if let ExprKind::Str(_) = e.kind {
                return Ok(Stmt::NoOp); // a docstring
            }
            return Err(Diagnostic::at(e.span, "an expression on its own does nothing here"));
        };
        let f = dotted(func).unwrap_or_default();
        match f.as_str() {
            "T.func_attr" => {
                let [Arg::Positional(d)] = &args[..] else {
                    return Err(Diagnostic::at(e.span, "T.func_attr takes one dict"));
                };
                self.attrs = self.attr_dict(d)?;
                Ok(Stmt::NoOp)
            }
            "T.evaluate" => Ok(Stmt::NoOp),
            "T.tvm_storage_sync" => Ok(Stmt::Barrier),
            "T.reads" | "T.writes" | "T.where" | "T.block_attr" | "T.sblock_attr" => {
                Err(Diagnostic::at(e.span, format!("`{f}` must come at the start of a block, before its body")))
            }
            "T.launch_thread" | "T.attr" => Err(Diagnostic::at(e.span, format!("`{f}` needs a body"))),
            _ => Err(did_you_mean(
                Diagnostic::at(func.span, format!("`{f}(...)` is not a statement tirc knows")),
                &f,
                ["T.func_attr", "T.evaluate", "T.tvm_storage_sync", "T.reads", "T.writes", "T.where", "T.block_attr"],
            )),
        }
    }

    fn assign(&mut self, s: &ast::Stmt, targets: &[ast::Expr], value: &ast::Expr) -> R<Stmt> {
        let [target] = targets else {
            return Err(Diagnostic::at(s.span, "chained assignment is not allowed in a prim_func"));
        };
        match &target.kind {
            ExprKind::Subscript { .. } => {
                let (buffer, indices) = self.store_target(target)?;
                let v = self.expr(value)?;
                let v = self.coerce(v, buffer.dtype(), value.span)?;
                Ok(Stmt::Store { buffer, indices, value: v })
            }
            ExprKind::Name(name) => {
                let ExprKind::Call { func, args } = &value.kind else {
                    return Err(Diagnostic::at(s.span, "only buffer elements can be assigned in a prim_func")
                        .help(format!("to name a value, write `{name}: T.int32 = ...`")));
                };
                let f = dotted(func).unwrap_or_default();
                match f.as_str() {
                    "T.match_buffer" => {
                        let (Some(Arg::Positional(h)), rest) = (args.first(), &args[1.min(args.len())..]) else {
                            return Err(Diagnostic::at(value.span, "T.match_buffer takes a handle and a shape"));
                        };
                        let ExprKind::Name(hname) = &h.kind else {
                            return Err(Diagnostic::at(h.span, "expected a handle parameter"));
                        };
                        let b = self.buffer_decl(name, rest, value.span, Scope::Global)?;
                        let Some(slot) = self.handles.iter_mut().find(|(n, _)| n == hname) else {
                            return Err(Diagnostic::at(h.span, format!("`{hname}` is not a handle parameter")));
                        };
                        slot.1 = Some(b.clone());
                        self.scopes[0].push((name.clone(), Binding::Buffer(b)));
                        Ok(Stmt::NoOp)
                    }
                    "T.alloc_buffer" | "T.sblock_alloc_buffer" => {
                        let b = self.buffer_decl(name, args, value.span, Scope::Global)?;
                        self.root_allocs.push(b.clone());
                        self.scopes[0].push((name.clone(), Binding::Buffer(b)));
                        Ok(Stmt::NoOp)
                    }
                    "T.Buffer" | "T.decl_buffer" => {
                        let b = self.buffer_view(name, args, value.span)?;
                        self.bind(name, b);
                        Ok(Stmt::NoOp)
                    }
                    "T.env_thread" => {
                        let pos = positional(args, "T.env_thread")?;
                        let [tag] = pos[..] else {
                            return Err(Diagnostic::at(value.span, "T.env_thread takes a thread tag"));
                        };
                        let tag = self.thread_tag(tag)?;
                        self.bind(name, Binding::Thread(Var::new(name.clone(), DType::I32), tag));
                        Ok(Stmt::NoOp)
                    }
                    _ => Err(did_you_mean(
                        Diagnostic::at(value.span, format!("`{f}(...)` cannot be assigned to a name here")),
                        &f,
                        ASSIGNABLE,
                    )),
                }
            }
            _ => Err(Diagnostic::at(target.span, "cannot assign to this")),
        }
    }

    /// `X = T.Buffer(shape, data=Y.data)`: another name for `Y`'s memory.
    fn buffer_view(&mut self, name: &str, args: &[Arg], span: Span) -> R<Binding> {
        let data = args.iter().find_map(|a| match a {
            Arg::Keyword(k, e) if k.name == "data" => Some(e),
            _ => None,
        });
        let Some(data) = data else {
            return Err(Diagnostic::at(span, "a buffer declared in a body needs `data=`"));
        };
        let base_name = match &data.kind {
            ExprKind::Attribute { value, attr } if attr.name == "data" => dotted(value),
            ExprKind::Name(n) => Some(n.clone()),
            _ => None,
        };
        let base = match base_name.as_deref().and_then(|n| self.lookup(n)) {
            Some(Binding::Buffer(b)) => b.clone(),
            Some(Binding::View(b, _)) => b.clone(),
            _ => return Err(Diagnostic::at(data.span, "`data=` must name a buffer's data")),
        };
        if self.poisoned.contains(&base) {
            return Ok(Binding::Buffer(base));
        }
        let view = self.buffer_decl(name, args, span, base.scope())?;
        if view.scope() != base.scope() {
            return Err(Diagnostic::at(
                span,
                format!(
                    "`{name}` is declared in {} memory, but the data of `{}` is in {} memory",
                    view.scope().name(),
                    base.name(),
                    base.scope().name()
                ),
            ));
        }
        if view.dtype() != base.dtype() {
            return Err(Diagnostic::at(span, format!("`{name}` has another data type than `{}`", base.name())));
        }
        if view.num_elements() != base.num_elements() {
            let count = |b: &Buffer| b.num_elements().map_or("a symbolic number of".to_string(), |n| n.to_string());
            return Err(Diagnostic::at(
                span,
                format!("`{name}` has {} elements, but `{}` has {}", count(&view), base.name(), count(&base)),
            )
            .help("a view must cover its buffer's memory exactly"));
        }
        let same_shape = view.const_shape() == base.const_shape();
        Ok(if same_shape { Binding::Buffer(base) } else { Binding::View(base, view.shape().to_vec()) })
    }

    fn for_loop(&mut self, target: &ast::Expr, iter: &ast::Expr, body: &[ast::Stmt]) -> R<Stmt> {
        let ExprKind::Call { func, args } = &iter.kind else {
            return Err(Diagnostic::at(
                iter.span,
                "a loop must run over `range(..)`, `T.grid(..)` or another `T.` loop form",
            ));
        };
        let f = dotted(func).unwrap_or_default();
        let form = f.strip_prefix("T.").unwrap_or(&f);
        if !LOOP_FORMS.contains(&form) || (f == "range") != (form == "range") {
            return Err(did_you_mean(
                Diagnostic::at(func.span, format!("unknown loop form `{f}`")),
                &f,
                ["range", "T.grid", "T.serial", "T.parallel", "T.vectorized", "T.unroll", "T.thread_binding"],
            ));
        }
        let names: Vec<&ast::Expr> = match &target.kind {
            ExprKind::Tuple(v) => v.iter().collect(),
            _ => vec![target],
        };
        let mut vars = Vec::new();
        for n in &names {
            let ExprKind::Name(n) = &n.kind else {
                return Err(Diagnostic::at(n.span, "a loop variable must be a name"));
            };
            vars.push(Var::new(n.clone(), DType::I32));
        }
        // (min, extent, kind, annotations) per loop, outermost first.
        let mut loops: Vec<(Expr, Expr, ForKind, Annotations)> = Vec::new();
        if form == "grid" {
            let mut exts = Vec::new();
            for a in args {
                let Arg::Positional(e) = a else {
                    return Err(Diagnostic::at(
                        span_of_args(std::slice::from_ref(a), iter.span),
                        "T.grid takes extents only",
                    ));
                };
                exts.push(self.expr(e)?);
            }
            if exts.len() != vars.len() {
                return Err(Diagnostic::at(
                    target.span,
                    format!("T.grid has {} extents but {} loop variables", exts.len(), vars.len()),
                ));
            }
            loops.extend(exts.into_iter().map(|e| (Expr::int(0), e, ForKind::Serial, vec![])));
        } else {
            if vars.len() != 1 {
                return Err(Diagnostic::at(target.span, format!("`{f}` defines one loop variable")));
            }
            let mut pos = Vec::new();
            let mut kind = match form {
                "parallel" => ForKind::Parallel,
                "vectorized" => ForKind::Vectorized,
                "unroll" => ForKind::Unrolled,
                _ => ForKind::Serial,
            };
            let mut ann = vec![];
            let mut thread = None;
            for a in args {
                match a {
                    Arg::Positional(e) => pos.push(self.expr(e)?),
                    Arg::Keyword(k, e) if k.name == "thread" && form == "thread_binding" => {
                        thread = Some(self.thread_tag(e)?)
                    }
                    Arg::Keyword(k, e) if k.name == "annotations" => ann = self.attr_dict(e)?,
                    Arg::Keyword(k, _) => {
                        return Err(Diagnostic::at(k.span, format!("`{f}` takes no argument `{}`", k.name)))
                    }
                    Arg::Star(e) | Arg::DoubleStar(e) => {
                        return Err(Diagnostic::at(e.span, "`*` arguments are not allowed here"))
                    }
                }
            }
            if form == "thread_binding" {
                let Some(t) = thread else {
                    return Err(Diagnostic::at(iter.span, "T.thread_binding needs `thread=\"...\"`"));
                };
                kind = ForKind::ThreadBinding(t);
            }
            let (min, extent) = match pos.len() {
                1 => (Expr::int(0), pos.remove(0)),
                2 => {
                    let (lo, hi) = (pos.remove(0), pos.remove(0));
                    let ext = match (lo.as_int(), hi.as_int()) {
                        (Some(a), Some(b)) => Expr::int(b - a),
                        _ => hi - lo.clone(),
                    };
                    (lo, ext)
                }
                _ => return Err(Diagnostic::at(iter.span, format!("`{f}` takes an extent, or a start and a stop"))),
            };
            loops.push((min, extent, kind, ann));
        }
        for (_, ext, _, _) in &loops {
            if let Some(e) = ext.as_int() {
                if e <= 0 {
                    return Err(Diagnostic::at(iter.span, format!("a loop must run at least once, not {e} times")));
                }
            }
        }
        let depth = self.loop_extents.len();
        self.loop_extents.extend(vars.iter().cloned().zip(loops.iter().map(|l| l.1.clone())));
        let body = self.scoped(|r| {
            for (n, v) in names.iter().zip(&vars) {
                if let ExprKind::Name(n) = &n.kind {
                    r.bind(n, Binding::Var(v.clone()));
                }
            }
            r.stmts(body)
        });
        self.loop_extents.truncate(depth);
        let mut s = body;
        for (var, (min, extent, kind, annotations)) in vars.into_iter().zip(loops).rev() {
            s = Stmt::For(Box::new(For { var, min, extent, kind, annotations, body: s }));
        }
        Ok(s)
    }

    fn with(&mut self, s: &ast::Stmt, items: &[ast::WithItem], body: &[ast::Stmt]) -> R<Stmt> {
        let [item] = items else {
            return Err(Diagnostic::at(s.span, "one context per `with` statement"));
        };
        let ExprKind::Call { func, args } = &item.context.kind else {
            return Err(Diagnostic::at(item.context.span, "expected `T.block(...)`"));
        };
        let f = dotted(func).unwrap_or_default();
        let target_name = match &item.target {
            Some(t) => match &t.kind {
                ExprKind::Name(n) => Some(n.clone()),
                _ => return Err(Diagnostic::at(t.span, "expected a name")),
            },
            None => None,
        };
        match f.as_str() {
            "T.block" | "T.sblock" => {
                let name = match args.first() {
                    Some(Arg::Positional(ast::Expr { kind: ExprKind::Str(n), .. })) => n.clone(),
                    None => "root".to_string(),
                    _ => return Err(Diagnostic::at(item.context.span, "a block's name must be a string")),
                };
                self.block(name, body, s.span)
            }
            "T.launch_thread" => {
                let (tag, extent, thread) = self.launch_args(args, item.context.span)?;
                let (var, n) = match (thread, target_name) {
                    (Some(v), None) => (v, None),
                    (None, Some(n)) => (Var::new(n.clone(), DType::I32), Some(n)),
                    (Some(_), Some(_)) => {
                        return Err(Diagnostic::at(s.span, "this launch names its thread twice")
                            .help("drop the `as` name: the thread variable is already named"))
                    }
                    (None, None) => return Err(Diagnostic::at(s.span, "write `with T.launch_thread(...) as name:`")),
                };
                let b = self.scoped(|r| {
                    if let Some(n) = &n {
                        r.bind(n, Binding::Var(var.clone()));
                    }
                    r.stmts(body)
                });
                Ok(Stmt::Launch { var, tag, extent, body: Box::new(b) })
            }
            "T.attr" => {
                let launch = self.attr_stmt(args, item.context.span)?;
                let b = self.stmts(body);
                Ok(match launch {
                    Some((var, tag, extent)) => Stmt::Launch { var, tag, extent, body: Box::new(b) },
                    None => b,
                })
            }
            "T.decl_buffer" | "T.allocate" => {
                let Some(n) = target_name else {
                    return Err(Diagnostic::at(s.span, format!("write `with {f}(...) as name:`")));
                };
                let buffer = self.buffer_decl(&n, args, item.context.span, Scope::Global)?;
                let b = self.scoped(|r| {
                    r.bind(&n, Binding::Buffer(buffer.clone()));
                    r.stmts(body)
                });
                Ok(Stmt::Allocate { buffer, body: Box::new(b) })
            }
            "T.LetStmt" => {
                let (Some(n), [Arg::Positional(v)]) = (target_name, &args[..]) else {
                    return Err(Diagnostic::at(s.span, "write `with T.LetStmt(value) as name:`"));
                };
                let value = self.expr(v)?;
                let var = Var::new(n.clone(), value.dtype());
                let b = self.scoped(|r| {
                    r.bind(&n, Binding::Var(var.clone()));
                    r.stmts(body)
                });
                Ok(Stmt::Let { var, value, body: Box::new(b) })
            }
            "T.init" => Err(Diagnostic::at(s.span, "`T.init()` belongs directly inside a block")),
            _ => Err(did_you_mean(
                Diagnostic::at(func.span, format!("unknown context `{f}`")),
                &f,
                [
                    "T.block",
                    "T.sblock",
                    "T.init",
                    "T.launch_thread",
                    "T.decl_buffer",
                    "T.allocate",
                    "T.attr",
                    "T.LetStmt",
                ],
            )),
        }
    }

    fn block(&mut self, name: String, body: &[ast::Stmt], span: Span) -> R<Stmt> {
        self.scopes.push(vec![]);
        let out = self.block_in_scope(name, body, span);
        self.scopes.pop();
        out
    }

    fn block_in_scope(&mut self, name: String, body: &[ast::Stmt], span: Span) -> R<Stmt> {
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
        let body = self.stmts(rest);
        let mut block =
            Block { name, iter_vars, reads: vec![], writes: vec![], init, alloc_buffers: allocs, annotations, body };
        let (r_inf, w_inf) = infer_block_regions(&block);
        self.check_declared(&block, &r_inf, &w_inf, reads.as_ref(), writes.as_ref())?;
        block.reads = reads.map_or(r_inf, |r| r.0);
        block.writes = writes.map_or(w_inf, |w| w.0);
        self.check_bindings(&block, &iter_values, &predicate, span)?;
        Ok(Stmt::Block(Box::new(BlockRealize { iter_values, predicate, block })))
    }

    /// Declared `T.reads`/`T.writes` must name every buffer the block
    /// accesses (a buffer the block writes may be left out of its reads, as
    /// TVM's `te.create_prim_func` leaves out the buffer a reduction updates).
    fn check_declared(
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
            if let Some(missing) = w_inf.iter().find(|w| !ws.iter().any(|d| d.buffer == w.buffer)) {
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
            let declared = |b: &Buffer| rs.iter().chain(declared_writes).any(|d| &d.buffer == b);
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
    fn check_bindings(&self, block: &Block, values: &[Expr], predicate: &Expr, span: Span) -> R<()> {
        for (iv, v) in block.iter_vars.iter().zip(values) {
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
            let (Some(ext), Some(dom)) =
                (v.as_var().and_then(|x| self.loop_extent_of(&Expr::Var(x.clone()))), iv.dom.extent.as_int())
            else {
                continue;
            };
            if let (Some(e), Some(0)) = (ext.as_int(), iv.dom.min.as_int()) {
                if e > dom && predicate.as_bool() == Some(true) {
                    return Err(Diagnostic::at(
                        span,
                        format!(
                            "block variable `{}` has domain 0..{dom}, but its loop `{}` runs {e} times",
                            iv.var.name(),
                            v.as_var().map_or("?", |x| x.name())
                        ),
                    )
                    .help("make the domain match the loop, or guard the block with `T.where`"));
                }
            }
        }
        Ok(())
    }

    /// Consumes one block-header statement; `false` when `s` starts the body.
    #[allow(clippy::too_many_arguments)]
    fn block_header_stmt(
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

    fn axis(
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
                let extent = self.loop_extent_of(&value).ok_or_else(|| {
                    Diagnostic::at(v.span, "T.axis.remap takes loop variables of the enclosing loops")
                })?;
                self.new_axis(n, kind, Range::from_extent(extent), value, iter_vars, iter_values)?;
            }
            return Ok(());
        }
        let kind = match kind {
            "spatial" | "S" => IterKind::Spatial,
            "reduce" | "R" => IterKind::Reduce,
            _ => {
                return Err(did_you_mean(
                    Diagnostic::at(span, format!("unknown axis kind `T.axis.{kind}`")),
                    kind,
                    ["spatial", "reduce", "remap"],
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
        let v = self.expr(value)?;
        self.new_axis(target, kind, dom, v, iter_vars, iter_values)
    }

    fn new_axis(
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
        iter_vars.push(IterVar { var, dom, kind });
        iter_values.push(value);
        Ok(())
    }

    /// The extent of the loop whose variable `e` is, found in the IR built
    /// so far by looking the variable up among the loops being resolved.
    fn loop_extent_of(&self, e: &Expr) -> Option<Expr> {
        let v = e.as_var()?;
        self.loop_extents.iter().rev().find(|(x, _)| x == v).map(|(_, e)| e.clone())
    }

    fn regions(&mut self, args: &[Arg]) -> R<Vec<BufferRegion>> {
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

    fn region(&mut self, e: &ast::Expr) -> R<BufferRegion> {
        let (buffer, parts) = match &e.kind {
            ExprKind::Subscript { value, indices } => (self.buffer_ref(value)?, indices.as_slice()),
            ExprKind::Name(_) => {
                let b = self.buffer_ref(e)?;
                let region = b.shape().iter().map(|d| Range::from_extent(d.clone())).collect();
                return Ok(BufferRegion { buffer: b, region });
            }
            _ => return Err(Diagnostic::at(e.span, "expected a buffer region such as `A[vi, 0:64]`")),
        };
        if parts.len() != buffer.ndim() {
            return Err(self.rank_error(&buffer, parts.len(), e.span));
        }
        let mut region = Vec::new();
        for p in parts {
            region.push(match &p.kind {
                ExprKind::Slice { lo, hi, step: None } => {
                    let lo = match lo {
                        Some(x) => self.expr(x)?,
                        None => Expr::int(0),
                    };
                    let Some(hi) = hi else {
                        return Err(Diagnostic::at(p.span, "a region slice needs an end"));
                    };
                    let hi = self.expr(hi)?;
                    let ext = match (lo.as_int(), hi.as_int()) {
                        (Some(a), Some(b)) => Expr::int(b - a),
                        _ => hi.clone() - lo.clone(),
                    };
                    Range::new(lo, ext)
                }
                _ => Range::new(self.expr(p)?, Expr::int(1)),
            });
        }
        Ok(BufferRegion { buffer, region })
    }

    pub(crate) fn rank_error(&self, b: &Buffer, given: usize, span: Span) -> Diagnostic {
        Diagnostic::at(
            span,
            format!(
                "buffer `{}` has {} dimension{}, but {} ind{} given",
                b.name(),
                b.ndim(),
                plural(b.ndim()),
                given,
                if given == 1 { "ex is" } else { "ices are" }
            ),
        )
        .label(format!("shape ({})", b.shape().iter().map(crate::printer::print_expr).collect::<Vec<_>>().join(", ")))
    }

    pub(crate) fn attr_dict(&mut self, e: &ast::Expr) -> R<Annotations> {
        let ExprKind::Dict(items) = &e.kind else {
            return Err(Diagnostic::at(e.span, "expected a dict"));
        };
        let mut out = Vec::new();
        for (k, v) in items {
            let ExprKind::Str(k) = &k.kind else {
                return Err(Diagnostic::at(k.span, "an annotation key must be a string"));
            };
            let k = k.replace("tirx.", "tir.");
            out.push((k, self.attr(v)?));
        }
        Ok(out)
    }

    fn attr(&mut self, e: &ast::Expr) -> R<Attr> {
        Ok(match &e.kind {
            ExprKind::Str(s) => Attr::Str(s.clone()),
            ExprKind::Bool(b) => Attr::Bool(*b),
            ExprKind::Float(f) => Attr::Float(*f),
            ExprKind::List(v) | ExprKind::Tuple(v) => Attr::List(v.iter().map(|x| self.attr(x)).collect::<R<_>>()?),
            _ => match self.expr(e)? {
                Expr::Int(v, crate::DType::Bool) => Attr::Bool(v != 0),
                Expr::Int(v, _) => Attr::Int(v),
                Expr::Float(v, _) => Attr::Float(v),
                _ => return Err(Diagnostic::at(e.span, "an annotation value must be a constant")),
            },
        })
    }
}

/// The most elements a buffer may hold, so that every index computed over
/// it fits in 64 bits.
const MAX_ELEMENTS: i64 = 1 << 40;

/// What `name = T.<f>(...)` may assign, for suggestions.
const ASSIGNABLE: [&str; 8] = [
    "T.match_buffer",
    "T.alloc_buffer",
    "T.sblock_alloc_buffer",
    "T.Buffer",
    "T.decl_buffer",
    "T.allocate",
    "T.env_thread",
    "T.launch_thread",
];

/// Whether a call passes the keyword argument `name`.
fn has_keyword(args: &[Arg], name: &str) -> bool {
    args.iter().any(|a| matches!(a, Arg::Keyword(k, _) if k.name == name))
}

/// The positional arguments of a call that takes no others.
fn positional<'a>(args: &'a [Arg], f: &str) -> R<Vec<&'a ast::Expr>> {
    args.iter()
        .map(|a| match a {
            Arg::Positional(e) => Ok(e),
            Arg::Keyword(k, _) => Err(Diagnostic::at(k.span, format!("`{f}` takes no argument `{}`", k.name))),
            Arg::Star(e) | Arg::DoubleStar(e) => Err(Diagnostic::at(e.span, "`*` arguments are not allowed here")),
        })
        .collect()
}

pub(crate) fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
