//! Resolve of one `@T.prim_func`: parameters, loops, blocks, stores and the
//! lowered forms, with lexical scopes for names.
//!
//! TVMScript's concise scoping is honoured: `x = T.launch_thread(..)`,
//! `x = T.decl_buffer(..)`, `x = T.allocate(..)` and `x: T.int32 = v` scope
//! over the statements that follow them in the same body.

use super::expr::{integer, is_literal, limit};
use super::{dotted, span_of_args};
use crate::buffer::{Buffer, Scope};
use crate::diag::{did_you_mean, Diagnostic};
use crate::dtype::DType;
use crate::expr::{Expr, Range, Var};
use crate::func::{Param, PrimFunc};
use crate::stmt::{Annotations, Attr, Block, BlockRealize, For, ForKind, Stmt, ThreadTag};
use tirc_parser::ast::{self, Arg, ExprKind, Span, StmtKind};

pub(crate) type R<T> = Result<T, Diagnostic>;

#[derive(Clone)]
pub(crate) enum Binding {
    Var(Var),
    Buffer(Buffer),
    /// A flat view `T.Buffer((n,), data=B.data)` of a buffer of another shape.
    View(Buffer, Vec<Expr>),
    /// `X = T.match_buffer(B[lo0:hi0, j], shape)` in a block: a window on
    /// `B` whose element `X[i]` is `B[lo0 + i, j]`. `mins` has one start per
    /// dimension of `B`; `dims[k]` is the dimension of `B` that `X`'s
    /// dimension `k` walks (the others are single elements).
    Region {
        base: Buffer,
        mins: Vec<Expr>,
        dims: Vec<usize>,
    },
    /// A `T.handle` parameter not yet matched to a buffer.
    Handle,
    /// `x = T.env_thread("threadIdx.x")`: a thread index that a later
    /// `T.launch_thread(x, extent)` launches.
    Thread(Var, ThreadTag),
}

pub(crate) struct FuncResolver<'a> {
    /// Module constants, then the function's size variables once given.
    pub consts: Vec<(String, i64)>,
    /// The `-D` values, for the function's size variables (`n: T.int32`,
    /// `m = T.int32()`), and the names among them that were used.
    pub(crate) sizes: &'a [(String, i64)],
    pub(crate) used_sizes: Vec<String>,
    /// Whether size variables stay variables (the default) or take their
    /// `-D` values.
    pub(crate) mode: SizeMode,
    /// The run-time size variables declared so far, in order, and where.
    pub(crate) size_vars: Vec<Var>,
    /// The scalar parameters (`alpha: T.float32`), in order.
    pub(crate) scalar_vars: Vec<Var>,
    pub(crate) size_spans: Vec<(String, Span)>,
    pub scopes: Vec<Vec<(String, Binding)>>,
    pub errors: Vec<Diagnostic>,
    pub(crate) attrs: Annotations,
    pub(crate) root_allocs: Vec<Buffer>,
    pub(crate) handles: Vec<(String, Option<Buffer>)>,
    /// Loops being resolved, outermost first, for `T.axis.remap`.
    /// The enclosing loops' variables and ranges, outermost first.
    pub(crate) loop_ranges: Vec<(Var, Range)>,
    /// How many conditions (`if`, a block's `T.where`) guard the statements
    /// being resolved: a guarded access may index past a buffer where the
    /// condition is false.
    pub(crate) guarded: usize,
    /// The spans of the `T.axis` bindings of the block being resolved.
    pub(crate) axis_spans: Vec<Span>,
    /// The keys of every block variable made so far: a block's body may
    /// use those of the blocks around it, not loop variables.
    pub(crate) block_vars: Vec<usize>,
    /// Stand-ins for parameters whose declaration was in error: their uses
    /// are not checked, so that one mistake is reported once.
    pub poisoned: Vec<Buffer>,
    /// Sizes declared in the body (`n = T.int32()`) that the parameters'
    /// shapes name, declared before the parameters as TVM 0.27 prints them
    /// (`def f(A: T.Buffer((n, 128), "float32")): n = T.int32()`): their
    /// declaration in the body is then already done.
    pub(crate) predeclared: Vec<String>,
}

/// Resolves a `@T.prim_func`. `sizes` gives the values of its size
/// variables; the names it used are added to `used`.
pub(crate) fn resolve_prim_func(
    s: &ast::Stmt,
    consts: &[(String, i64)],
    sizes: &[(String, i64)],
    mode: SizeMode,
    used: &mut Vec<String>,
    size_spans: &mut Vec<(String, String, Span)>,
) -> Result<PrimFunc, Vec<Diagnostic>> {
    let StmtKind::FunctionDef { name, params, body, .. } = &s.kind else {
        return Err(vec![Diagnostic::at(s.span, "expected a function")]);
    };
    let mut r = FuncResolver {
        consts: consts.to_vec(),
        sizes,
        used_sizes: vec![],
        mode,
        size_vars: vec![],
        scalar_vars: vec![],
        size_spans: vec![],
        scopes: vec![vec![]],
        errors: vec![],
        attrs: vec![],
        root_allocs: vec![],
        handles: vec![],
        loop_ranges: vec![],
        guarded: 0,
        axis_spans: vec![],
        block_vars: vec![],
        poisoned: vec![],
        predeclared: vec![],
    };
    // Sizes the body declares and the parameters' shapes already name.
    let mut named = Vec::new();
    for p in params {
        if let Some(a) = &p.annotation {
            names_in(a, &mut named);
        }
    }
    for st in body {
        let StmtKind::Assign { targets, value } = &st.kind else { continue };
        let ([t], ExprKind::Call { func, args }) = (&targets[..], &value.kind) else { continue };
        let (ExprKind::Name(n), Some(f)) = (&t.kind, dotted(func)) else { continue };
        if is_size_declaration(&f, args) && named.contains(n) && !params.iter().any(|p| &p.name.name == n) {
            match r.size_variable(n, size_declaration_dtype(&f, args), st.span) {
                Ok(()) => r.predeclared.push(n.clone()),
                Err(e) => r.errors.push(e),
            }
        }
    }
    // A size parameter that an earlier parameter's shape names (TVM's
    // `def f(A: T.Buffer(("n",), "float32"), n: T.int32)`).
    for (k, p) in params.iter().enumerate() {
        let mut earlier = Vec::new();
        for q in &params[..k] {
            if let Some(a) = &q.annotation {
                names_in(a, &mut earlier);
            }
        }
        if is_size_annotation(p.annotation.as_ref()) && earlier.contains(&p.name.name) {
            match r.size_variable(&p.name.name, size_dtype(p.annotation.as_ref()), p.span) {
                Ok(()) => r.predeclared.push(p.name.name.clone()),
                Err(e) => r.errors.push(e),
            }
        }
    }
    let mut bufs = Vec::new();
    for p in params {
        match r.param(p) {
            Ok(Some(b)) => {
                r.bind(&p.name.name, Binding::Buffer(b.clone()));
                bufs.push(Some(b));
            }
            Ok(None) if is_size_annotation(p.annotation.as_ref()) => {
                let dtype = size_dtype(p.annotation.as_ref());
                if let Some(i) = r.predeclared.iter().position(|n| *n == p.name.name) {
                    r.predeclared.remove(i);
                } else if let Err(e) = r.size_variable(&p.name.name, dtype, p.span) {
                    r.errors.push(e);
                }
                bufs.push(Some(Buffer::new("", DType::I32, vec![], Scope::Global)));
            }
            Ok(None) if scalar_type(p.annotation.as_ref()).is_some() => {
                // A value the caller passes (`alpha: T.float32`): usable in
                // any block, as a size is.
                let dtype = scalar_type(p.annotation.as_ref()).unwrap_or(DType::F32);
                let v = Var::new(&p.name.name, dtype);
                // A whole-number `-D` gives it its value when it runs.
                if r.sizes.iter().any(|(n, _)| *n == p.name.name) {
                    r.used_sizes.push(p.name.name.clone());
                }
                r.block_vars.push(v.key());
                r.bind(&p.name.name, Binding::Var(v.clone()));
                r.scalar_vars.push(v);
                bufs.push(Some(Buffer::new("", dtype, vec![], Scope::Global)));
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
    used.extend(r.used_sizes.iter().cloned());
    size_spans.extend(r.size_spans.iter().map(|(n, sp)| (name.name.clone(), n.clone(), *sp)));
    // Handles take the buffer `T.match_buffer` gave them; size parameters
    // are gone, specialized to their values.
    let mut out_params = Vec::new();
    let mut signature = Vec::new();
    for (p, b) in params.iter().zip(bufs) {
        match b {
            Some(b)
                if (is_size_annotation(p.annotation.as_ref()) || scalar_type(p.annotation.as_ref()).is_some())
                    && b.name().is_empty() =>
            {
                if let Some(i) = r.size_vars.iter().position(|v| v.name() == p.name.name) {
                    signature.push(Param::Size(i));
                } else if let Some(i) = r.scalar_vars.iter().position(|v| v.name() == p.name.name) {
                    signature.push(Param::Scalar(i));
                }
            }
            Some(b) => {
                signature.push(Param::Buffer(out_params.len()));
                out_params.push(b)
            }
            None => match r.handles.iter().find(|(n, _)| *n == p.name.name) {
                Some((_, Some(b))) => {
                    signature.push(Param::Buffer(out_params.len()));
                    out_params.push(b.clone())
                }
                _ => r.errors.push(
                    Diagnostic::at(p.span, format!("handle `{}` is never matched to a buffer", p.name.name))
                        .help(format!("add `X = T.match_buffer({}, (shape), \"float32\")`", p.name.name)),
                ),
            },
        }
    }
    if !r.errors.is_empty() {
        // A declaration resolved twice (a size variable the parameters
        // name, declared first for them) reports its error once.
        let mut seen: Vec<(String, Option<Span>)> = Vec::new();
        r.errors.retain(|d| {
            let key = (d.message.clone(), d.span);
            let fresh = !seen.contains(&key);
            seen.push(key);
            fresh
        });
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
    Ok(PrimFunc {
        name: name.name.clone(),
        params: out_params,
        sizes: r.size_vars,
        scalars: r.scalar_vars,
        attrs: r.attrs,
        signature,
        body,
        span: Some(name.span),
        facts: Default::default(),
    })
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
        span: None,
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

    /// A size variable (`n: T.int32` or `n = T.int32()`). By default it is
    /// known only at run time, as in TVM: a variable of the function
    /// (`PrimFunc::sizes`), a scalar argument of its kernels, whose value a
    /// `-D n=..` gives when the function is run. With `SizeMode::Specialize`
    /// the function is instead specialized to the `-D` value; without one,
    /// the error names it, and its uses resolve to a stand-in so that they
    /// are not reported again.
    pub(crate) fn size_variable(&mut self, name: &str, dtype: DType, span: Span) -> R<()> {
        // A `-D` of a name that is both a module constant and, shadowing
        // it here, a size variable would set both: ambiguous.
        if self.sizes.iter().any(|(n, _)| n == name) && self.consts.iter().any(|(n, _)| n == name) {
            return Err(Diagnostic::at(
                span,
                format!(
                    "`-D {name}` names both the module constant `{name}` and this size variable, which shadows it: it would set both"
                ),
            )
            .help(format!("rename the size variable or the module constant, so that `-D {name}` means one of them")));
        }
        if self.mode == SizeMode::RunTime {
            if self.sizes.iter().any(|(n, _)| n == name) {
                self.used_sizes.push(name.to_string());
            }
            if self.size_vars.iter().any(|v| v.name() == name) {
                return Err(Diagnostic::at(span, format!("the size `{name}` is declared twice")));
            }
            // tirc indexes a kernel of run-time sizes in 32 bits (a size
            // past 2^31 - 1 is refused when bound), so an `int64` size is an
            // int32 variable, as its literals are: index arithmetic mixes
            // it freely with the loop variables.
            let _ = dtype;
            let v = Var::new(name, DType::I32);
            self.size_spans.push((name.to_string(), span));
            self.block_vars.push(v.key());
            self.bind(name, Binding::Var(v.clone()));
            self.size_vars.push(v);
            return Ok(());
        }
        match self.sizes.iter().find(|(n, _)| n == name) {
            Some((_, v)) if *v < 1 => {
                self.used_sizes.push(name.to_string());
                self.consts.push((name.to_string(), 1));
                Err(Diagnostic::at(span, format!("`{name}` is a size: -D {name}={v} gives it no element"))
                    .help(format!("give a positive value, e.g. `-D {name}=1024`")))
            }
            Some((_, v)) => {
                self.used_sizes.push(name.to_string());
                self.consts.push((name.to_string(), *v));
                Ok(())
            }
            None => {
                self.consts.push((name.to_string(), 1));
                Err(Diagnostic::at(
                    span,
                    format!("`{name}` is a size variable; --specialize needs its value: `-D {name}=<value>`"),
                )
                .help("--specialize compiles the function for the sizes it is given: every size variable needs a -D"))
            }
        }
    }

    /// `X = T.match_buffer(B[region], shape)`: `X` walks the last
    /// dimensions of the region (the ones before must have extent 1), or
    /// else those whose extent is not 1, in order; its shape must be their
    /// extents.
    fn match_region(&mut self, name: &str, region: &ast::Expr, rest: &[Arg], span: Span) -> R<Binding> {
        let r = self.region(region)?;
        // A window's strides are those of the buffer it looks into, checked
        // below once the dimensions it walks are known.
        let strides = rest.iter().find_map(|a| match a {
            Arg::Keyword(k, e) if k.name == "strides" => Some(e),
            _ => None,
        });
        let others: Vec<Arg> =
            rest.iter().filter(|a| !matches!(a, Arg::Keyword(k, _) if k.name == "strides")).cloned().collect();
        let view = self.buffer_decl(name, &others, span, r.buffer.scope())?;
        let shape: Vec<Option<i64>> = view.shape().iter().map(|e| e.as_int()).collect();
        let extents: Vec<Option<i64>> = r.region.iter().map(|x| x.extent.as_int()).collect();
        let fits = |dims: &[usize]| {
            dims.len() == shape.len() && dims.iter().zip(&shape).all(|(&d, s)| s.is_some() && extents[d] == *s)
        };
        let lead = extents.len().saturating_sub(shape.len());
        let trailing: Vec<usize> = (lead..extents.len()).collect();
        let non_unit: Vec<usize> = (0..extents.len()).filter(|&d| extents[d] != Some(1)).collect();
        let dims = if extents[..lead].iter().all(|e| *e == Some(1)) && fits(&trailing) {
            trailing
        } else if fits(&non_unit) {
            non_unit
        } else {
            let show = |v: &[Option<i64>]| {
                v.iter().map(|x| x.map_or("?".to_string(), |n| n.to_string())).collect::<Vec<_>>().join(", ")
            };
            return Err(Diagnostic::at(
                span,
                format!("the shape ({}) does not match the region's extents ({})", show(&shape), show(&extents)),
            ));
        };
        if view.dtype() != r.buffer.dtype() {
            return Err(Diagnostic::at(
                span,
                format!("`{name}` is {} but `{}` is {}", view.dtype(), r.buffer.name(), r.buffer.dtype()),
            ));
        }
        if let Some(st) = strides {
            self.check_strides_of(st, r.buffer.shape(), &dims, true)?;
        }
        Ok(Binding::Region { base: r.buffer, mins: r.region.into_iter().map(|x| x.min).collect(), dims })
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

    pub(crate) fn scoped<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
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
        if dotted(ann).as_deref() == Some("T.handle")
            || is_size_annotation(Some(ann))
            || scalar_type(Some(ann)).is_some()
        {
            return Ok(None);
        }
        if let Some(t) = dotted(ann).and_then(|d| d.strip_prefix("T.").map(str::to_string)) {
            if DType::parse(&t).is_some() {
                return Err(Diagnostic::at(
                    ann.span,
                    format!(
                        "a scalar parameter of type {t} is not supported: integer sizes and floating-point values are"
                    ),
                )
                .help("pass the value in a one-element buffer, or make it a module constant"));
            }
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
        let b = self.buffer_decl(&p.name.name, &args, span, Scope::Global)?;
        self.no_dim_align(&b, span)?;
        Ok(Some(b))
    }

    /// Resolves a body; errors are collected and the bad statement dropped.
    pub(crate) fn stmts(&mut self, body: &[ast::Stmt]) -> Stmt {
        self.scoped(|r| r.stmts_in_scope(body))
    }

    pub(crate) fn stmts_in_scope(&mut self, body: &[ast::Stmt]) -> Stmt {
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
                if self.lookup(n).is_none() && !self.consts.iter().any(|(c, _)| c == n) {
                    self.poison(n);
                }
            }
        }
    }

    /// A statement that scopes over the rest of its body, resolved together
    /// with that rest; `None` for any other statement.
    /// Whether `x = value` names a value (a let) rather than declaring a
    /// buffer, a thread, a launch or a size: any expression but a call of
    /// those forms.
    fn is_plain_value(&self, value: &ast::Expr) -> bool {
        match &value.kind {
            ExprKind::Call { func, args } => {
                let f = dotted(func).unwrap_or_default();
                let declares = ASSIGNABLE.contains(&f.as_str())
                    || f.starts_with("T.axis.")
                    || matches!(f.as_str(), "T.launch_thread" | "T.decl_buffer" | "T.allocate" | "T.env_thread")
                    || is_size_declaration(&f, args);
                !declares && f.starts_with("T.")
            }
            // A tuple or list is a declaration of several sizes, refused
            // with its own message; a name may be a buffer's alias, but a
            // variable's is a let (`j = i`).
            ExprKind::Name(n) => matches!(self.lookup(n), Some(Binding::Var(_) | Binding::Thread(..))),
            ExprKind::Tuple(_) | ExprKind::List(_) => false,
            _ => true,
        }
    }

    fn scoping_stmt(&mut self, s: &ast::Stmt, rest: &[ast::Stmt]) -> R<Option<Stmt>> {
        match &s.kind {
            StmtKind::Assign { targets, value } if targets.len() == 1 && self.is_plain_value(value) => {
                // `x = expr`: TVMScript's let, typed by its value; `x =
                // T.bind(expr)` is how TVM's parser spells it too.
                let ExprKind::Name(name) = &targets[0].kind else { return Ok(None) };
                let value = match &value.kind {
                    ExprKind::Call { func, args } if dotted(func).as_deref() == Some("T.bind") => match &args[..] {
                        [Arg::Positional(v)] => v,
                        _ => return Err(Diagnostic::at(value.span, "`T.bind` takes one value")),
                    },
                    _ => value,
                };
                let v = self.expr(value)?;
                let var = Var::new(name.clone(), v.dtype());
                let body = self.scoped(|r| {
                    r.bind(name, Binding::Var(var.clone()));
                    r.stmts_in_scope(rest)
                });
                Ok(Some(Stmt::Let { var, value: v, body: Box::new(body) }))
            }
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
        let extent = integer(self.expr(ext_e)?, ext_e.span, "a thread extent must be an integer")?;
        positive_extent(&extent, ext_e.span)?;
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
        positive_extent(&extent, value.span)?;
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

    pub(crate) fn stmt(&mut self, s: &ast::Stmt) -> R<Stmt> {
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
                check_float_literals(&v, value.span)?;
                Ok(Stmt::Store { buffer, indices, value: v })
            }
            StmtKind::For { target, iter, body } => self.for_loop(target, iter, body),
            StmtKind::If { cond, body, orelse } => {
                let c = self.expr(cond)?;
                self.guarded += 1;
                let then = self.stmts(body);
                let orelse = if orelse.is_empty() { None } else { Some(Box::new(self.stmts(orelse))) };
                self.guarded -= 1;
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
            // `T.evaluate(0)` does nothing; a call inside is the statement
            // it names. Anything else would be dropped, and with it what
            // the program means: refused.
            "T.evaluate" => {
                match &args[..] {
                    [Arg::Positional(x)] => match &x.kind {
                        ExprKind::Int(_) => Ok(Stmt::NoOp),
                        ExprKind::Call { func: inner, .. }
                            if matches!(
                                dotted(inner).as_deref(),
                                Some("T.tvm_storage_sync" | "T.ptx_commit_group" | "T.ptx_wait_group")
                            ) =>
                        {
                            self.expr_stmt(x)
                        }
                        // `T.assume(cond)` is a fact for the optimizer; a
                        // pointer (`A.access_ptr(..)`) evaluated for nothing
                        // marks an opaque access in TVM's tests. Neither does
                        // anything when run.
                        ExprKind::Call { func: inner, .. }
                            if dotted(inner).is_some_and(|n| n == "T.assume" || n.ends_with(".access_ptr")) =>
                        {
                            Ok(Stmt::NoOp)
                        }
                        ExprKind::Call { func: inner, .. } => {
                            let name = dotted(inner).unwrap_or_default();
                            let d = Diagnostic::at(
                            x.span,
                            format!("`T.evaluate({name}(...))` is not supported: tirc cannot run this call as a statement"),
                        );
                            Err(if name == "T.tvm_thread_allreduce" {
                                d.help("a cross-thread reduction is written as a reduction block whose reduction loop is bound to threadIdx (lower_cross_thread_reduction then lowers it)")
                            } else {
                                d
                            })
                        }
                        // A value evaluated for nothing (`T.evaluate(A[0])`, as
                        // TVM's tests write a statement that does nothing): it
                        // must still read as a value, then does nothing.
                        _ => {
                            self.expr(x)?;
                            Ok(Stmt::NoOp)
                        }
                    },
                    _ => Err(Diagnostic::at(e.span, "T.evaluate takes one expression")),
                }
            }
            "T.tvm_storage_sync" => Ok(Stmt::Barrier),
            n if n.strip_prefix("T.").and_then(crate::wmma::WmmaOp::from_name).is_some() => self.wmma(e, n, args),
            "T.ptx_commit_group" => match &args[..] {
                [] => Ok(Stmt::AsyncCommit),
                _ => Err(Diagnostic::at(e.span, "T.ptx_commit_group takes no arguments")),
            },
            "T.ptx_wait_group" => {
                let n = match &args[..] {
                    [Arg::Positional(n)] => match &n.kind {
                        ExprKind::Int(v) if *v >= 0 => Some(*v),
                        _ => None,
                    },
                    _ => None,
                };
                n.map(Stmt::AsyncWait)
                    .ok_or_else(|| Diagnostic::at(e.span, "T.ptx_wait_group takes one non-negative integer literal"))
            }
            "T.reads" | "T.writes" | "T.where" | "T.block_attr" | "T.sblock_attr" => {
                Err(Diagnostic::at(e.span, format!("`{f}` must come at the start of a block, before its body")))
            }
            "T.launch_thread" | "T.attr" => Err(Diagnostic::at(e.span, format!("`{f}` needs a body"))),
            _ => Err(did_you_mean(
                Diagnostic::at(func.span, format!("`{f}(...)` is not a statement tirc knows")),
                &f,
                [
                    "T.func_attr",
                    "T.evaluate",
                    "T.tvm_storage_sync",
                    "T.ptx_commit_group",
                    "T.ptx_wait_group",
                    "T.reads",
                    "T.writes",
                    "T.where",
                    "T.block_attr",
                ],
            )),
        }
    }

    /// `T.wmma_<op>(tile, .., [value], ["row_major"], ["b_trans"], [ldm=[..]])`
    /// or `T.mma_<op>(tile, .., [value], ["a" | "b"], ["trans"], ["trans_a"], ["trans_b"], [ldm=[..]], [bound=[r, c]])`, as the
    /// printer writes a tensor-core operation (`crate::wmma`): each tile an
    /// access to its first element.
    fn wmma(&mut self, e: &ast::Expr, name: &str, args: &[Arg]) -> R<Stmt> {
        use crate::wmma::{Tile, Wmma, WmmaOp};
        let mut op = WmmaOp::from_name(&name[2..]).unwrap_or(WmmaOp::Fill);
        let mut tiles = Vec::new();
        let mut value = None;
        let mut ldm = None;
        let mut bound = None;
        for a in args {
            match a {
                // wgmma's width comes first.
                Arg::Positional(x) if op == (WmmaOp::Wgmma { n: 0, trans_b: false }) && tiles.is_empty() => {
                    match self.expr(x)?.as_int() {
                        Some(n) if n > 0 => op = WmmaOp::Wgmma { n, trans_b: false },
                        _ => return Err(Diagnostic::at(x.span, "wgmma takes its width (the columns of B) first")),
                    }
                }
                Arg::Positional(x) if tiles.len() < op.arity() => match self.expr(x)? {
                    Expr::Load(buffer, indices) => tiles.push(Tile { buffer, indices, ldm: None }),
                    _ => {
                        return Err(Diagnostic::at(
                            x.span,
                            format!("{name} takes its tiles as `B[i, j]`, the tile's first element"),
                        ))
                    }
                },
                Arg::Positional(x) => match (&x.kind, &op) {
                    (ExprKind::Str(l), WmmaOp::Load { .. }) if l == "row_major" || l == "col_major" => {
                        op = WmmaOp::Load { col_major: l == "col_major" }
                    }
                    (ExprKind::Str(l), WmmaOp::Mma { .. }) if l == "b_trans" => op = WmmaOp::Mma { b_trans: true },
                    (ExprKind::Str(l), WmmaOp::Wgmma { n, .. }) if l == "trans_b" => {
                        op = WmmaOp::Wgmma { n: *n, trans_b: true }
                    }
                    (ExprKind::Str(l), WmmaOp::MmaSync { trans_a, trans_b }) if l == "trans_a" || l == "trans_b" => {
                        op =
                            WmmaOp::MmaSync { trans_a: *trans_a || l == "trans_a", trans_b: *trans_b || l == "trans_b" }
                    }
                    (ExprKind::Str(l), WmmaOp::LdMatrix { trans, .. }) if l == "a" || l == "b" => {
                        op = WmmaOp::LdMatrix { b: l == "b", trans: *trans }
                    }
                    (ExprKind::Str(l), WmmaOp::LdMatrix { b, .. }) if l == "trans" => {
                        op = WmmaOp::LdMatrix { b: *b, trans: true }
                    }
                    (_, WmmaOp::Fill | WmmaOp::MmaFill) if value.is_none() => value = Some(self.expr(x)?),
                    _ => return Err(Diagnostic::at(x.span, format!("{name} does not take this argument"))),
                },
                Arg::Keyword(k, x) if k.name == "ldm" => {
                    let ExprKind::List(items) = &x.kind else {
                        return Err(Diagnostic::at(x.span, "ldm is a list, one row stride per tile"));
                    };
                    ldm = Some(items.iter().map(|i| self.expr(i)).collect::<R<Vec<_>>>()?);
                }
                Arg::Keyword(k, x) if k.name == "bound" && op == WmmaOp::MmaStore => {
                    let ExprKind::List(items) = &x.kind else {
                        return Err(Diagnostic::at(x.span, "bound is a list: the rows and the columns stored"));
                    };
                    let [r, c] = &items[..] else {
                        return Err(Diagnostic::at(x.span, "bound is a list: the rows and the columns stored"));
                    };
                    bound = Some((self.expr(r)?, self.expr(c)?));
                }
                _ => return Err(Diagnostic::at(e.span, format!("{name} does not take this argument"))),
            }
        }
        if let Some(ldm) = ldm {
            if ldm.len() != tiles.len() {
                return Err(Diagnostic::at(e.span, "ldm gives one row stride per tile"));
            }
            for (t, l) in tiles.iter_mut().zip(ldm) {
                t.ldm = Some(l);
            }
        }
        if matches!(op, WmmaOp::Fill | WmmaOp::MmaFill) && value.is_none() {
            return Err(Diagnostic::at(e.span, format!("{name} takes the value to fill with")));
        }
        let w = Wmma { op, tiles, value, bound };
        w.check().map_err(|m| Diagnostic::at(e.span, m))?;
        Ok(Stmt::Wmma(Box::new(w)))
    }

    fn assign(&mut self, s: &ast::Stmt, targets: &[ast::Expr], value: &ast::Expr) -> R<Stmt> {
        let [target] = targets else {
            return Err(Diagnostic::at(s.span, "chained assignment is not allowed in a prim_func"));
        };
        match &target.kind {
            // `n, m = T.int64(), T.int64()`: several size declarations.
            ExprKind::Tuple(names) if matches!(&value.kind, ExprKind::Tuple(vs) if vs.len() == names.len()) => {
                let ExprKind::Tuple(values) = &value.kind else { unreachable!() };
                for (n, v) in names.iter().zip(values) {
                    let decl = match (&n.kind, &v.kind) {
                        (ExprKind::Name(name), ExprKind::Call { func, args }) => {
                            let f = dotted(func).unwrap_or_default();
                            is_size_declaration(&f, args).then(|| (name, size_declaration_dtype(&f, args)))
                        }
                        _ => None,
                    };
                    let Some((name, dtype)) = decl else {
                        return Err(Diagnostic::at(target.span, "cannot assign to this")
                            .help("a tuple is assigned only size declarations: `n, m = T.int32(), T.int32()`"));
                    };
                    self.size_variable(name, dtype, s.span)?;
                }
                Ok(Stmt::NoOp)
            }
            ExprKind::Subscript { .. } => {
                let (buffer, indices) = self.store_target(target)?;
                let v = self.expr(value)?;
                // An integer stored into a float buffer is converted, as
                // TVM's parser does (`A[vi] = vi + 1`).
                let v = match (v.dtype(), buffer.dtype()) {
                    (from, to) if from.is_int() && from != DType::Bool && to.is_float() && !is_literal(&v) => {
                        Expr::Cast(to, Box::new(v))
                    }
                    _ => self.coerce(v, buffer.dtype(), value.span)?,
                };
                check_float_literals(&v, value.span)?;
                Ok(Stmt::Store { buffer, indices, value: v })
            }
            ExprKind::Name(name) => {
                let ExprKind::Call { func, args } = &value.kind else {
                    return Err(Diagnostic::at(s.span, "only buffer elements can be assigned in a prim_func")
                        .help(format!("to name a value, write `{name}: T.int32 = ...`")));
                };
                let f = dotted(func).unwrap_or_default();
                if is_size_declaration(&f, args) {
                    if let Some(i) = self.predeclared.iter().position(|n| n == name) {
                        self.predeclared.remove(i);
                        return Ok(Stmt::NoOp);
                    }
                    let dtype = size_declaration_dtype(&f, args);
                    self.size_variable(name, dtype, s.span)?;
                    return Ok(Stmt::NoOp);
                }
                match f.as_str() {
                    "T.match_buffer" => {
                        let (Some(Arg::Positional(h)), rest) = (args.first(), &args[1.min(args.len())..]) else {
                            return Err(Diagnostic::at(value.span, "T.match_buffer takes a handle and a shape"));
                        };
                        if let ExprKind::Subscript { .. } = &h.kind {
                            let binding = self.match_region(name, h, rest, value.span)?;
                            self.bind(name, binding);
                            return Ok(Stmt::NoOp);
                        }
                        let ExprKind::Name(hname) = &h.kind else {
                            return Err(Diagnostic::at(h.span, "expected a handle parameter"));
                        };
                        if !self.handles.iter().any(|(n, _)| n == hname) {
                            return Err(Diagnostic::at(h.span, format!("`{hname}` is not a handle parameter")));
                        }
                        if let Some((_, Some(old))) = self.handles.iter().find(|(n, _)| n == hname) {
                            return Err(Diagnostic::at(
                                h.span,
                                format!("handle `{hname}` is already matched to buffer `{}`", old.name()),
                            )
                            .help("match each handle once; for another view of the same memory, write `T.Buffer(shape, data=...)`"));
                        }
                        let b = match self
                            .buffer_decl(name, rest, value.span, Scope::Global)
                            .and_then(|b| self.no_dim_align(&b, value.span).map(|_| b))
                        {
                            Ok(b) => b,
                            Err(e) => {
                                // The handle is matched, to a stand-in.
                                let stand_in = self.poison(name);
                                if let Some(slot) = self.handles.iter_mut().find(|(n, _)| n == hname) {
                                    slot.1 = Some(stand_in);
                                }
                                return Err(e);
                            }
                        };
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
            let mut tag: Option<&ast::Expr> = None;
            let mut vthread: Option<String> = None;
            for a in args {
                match a {
                    // TVM's positional form: `T.thread_binding(0, n, "threadIdx.x")`.
                    Arg::Positional(e) if form == "thread_binding" && matches!(e.kind, ExprKind::Str(_)) => {
                        tag = Some(e)
                    }
                    Arg::Keyword(k, e) if k.name == "thread" && form == "thread_binding" => tag = Some(e),
                    Arg::Positional(e) => pos.push(self.expr(e)?),
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
                let Some(t) = tag else {
                    return Err(Diagnostic::at(iter.span, "T.thread_binding needs `thread=\"...\"`"));
                };
                // A virtual thread (`vthread.x`) runs inside each real
                // thread: an unrolled loop marked as one, whose iterations
                // `inject_virtual_thread` interleaves, as TVM lowers it.
                kind = match &t.kind {
                    ExprKind::Str(s) if s == "vthread" || s.starts_with("vthread.") => {
                        vthread = Some(s.clone());
                        ForKind::Unrolled
                    }
                    _ => ForKind::ThreadBinding(self.thread_tag(t)?),
                };
            }
            let (min, extent) = match pos.len() {
                1 => (Expr::int(0), pos.remove(0)),
                2 => {
                    let (lo, hi) = (pos.remove(0), pos.remove(0));
                    let ext = match (lo.as_int(), hi.as_int(), &hi) {
                        (Some(a), Some(b), _) => Expr::int(b - a),
                        // `T.serial(lo, lo + n)`, as the printer writes a
                        // loop of run-time extent `n` from `lo`: extent `n`.
                        (_, _, Expr::Binary(crate::BinOp::Add, a, n)) if crate::structural_eq::same_expr(a, &lo) => {
                            (**n).clone()
                        }
                        _ => hi - lo.clone(),
                    };
                    (lo, ext)
                }
                _ => return Err(Diagnostic::at(iter.span, format!("`{f}` takes an extent, or a start and a stop"))),
            };
            if let Some(axis) = vthread {
                ann.retain(|(k, _)| k != crate::stmt::VTHREAD);
                ann.insert(0, (crate::stmt::VTHREAD.to_string(), crate::stmt::Attr::Str(axis)));
            }
            loops.push((min, extent, kind, ann));
        }
        for (var, (min, ext, _, _)) in vars.iter().zip(&loops) {
            for x in [min, ext] {
                integer(x.clone(), iter.span, "a loop's bounds must be integers")?;
            }
            if let Some(e) = ext.as_int() {
                if e <= 0 {
                    return Err(Diagnostic::at(iter.span, format!("a loop must run at least once, not {e} times")));
                }
                // (Its variable would wrap in the kernel's `int`.)
                let last = min.as_int().and_then(|m| m.checked_add(e - 1));
                if var.dtype() == crate::DType::I32
                    && last.is_none_or(|x| x > i32::MAX as i64)
                    && min.as_int().is_some()
                {
                    return Err(Diagnostic::at(
                        iter.span,
                        format!(
                            "loop `{}` runs {e} times, past what its int32 variable can count (2^31 - 1)",
                            var.name()
                        ),
                    )
                    .help("write the bounds as T.int64(..) for a 64-bit loop variable"));
                }
            }
        }
        let depth = self.loop_ranges.len();
        self.loop_ranges.extend(vars.iter().cloned().zip(loops.iter().map(|l| Range::new(l.0.clone(), l.1.clone()))));
        let body = self.scoped(|r| {
            for (n, v) in names.iter().zip(&vars) {
                if let ExprKind::Name(n) = &n.kind {
                    r.bind(n, Binding::Var(v.clone()));
                }
            }
            r.stmts(body)
        });
        self.loop_ranges.truncate(depth);
        let mut s = body;
        // Each loop of the statement points at it: `for i, j in T.grid(..)`
        // up to the end of its range.
        let span = Some(target.span.to(iter.span));
        for (var, (min, extent, kind, annotations)) in vars.into_iter().zip(loops).rev() {
            s = Stmt::For(Box::new(For { var, min, extent, kind, annotations, body: s, span }));
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
                self.block(name, body, s.span, item.context.span)
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
            ExprKind::Dict(_) => Attr::Dict(self.attr_dict(e)?),
            ExprKind::Name(n) if matches!(self.lookup(n), Some(Binding::Buffer(_))) => Attr::Buffer(n.clone()),
            ExprKind::Call { func, args } if dotted(func).as_deref() == Some("T.target") => match &args[..] {
                [Arg::Positional(t)] if matches!(t.kind, ExprKind::Str(_) | ExprKind::Dict(_)) => {
                    Attr::Target(Box::new(self.attr(t)?))
                }
                _ => return Err(Diagnostic::at(e.span, "`T.target` takes a target's name or its dict")),
            },
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
pub(crate) const MAX_ELEMENTS: i64 = 1 << 40;

/// What `name = T.<f>(...)` may assign, for suggestions.
/// Whether a function's size variables are known only at run time (TVM's
/// meaning, the default) or take their `-D` values at compile time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SizeMode {
    #[default]
    RunTime,
    Specialize,
}

/// The integer type of a size parameter's annotation (`n: T.int64`).
fn size_dtype(ann: Option<&ast::Expr>) -> DType {
    ann.and_then(dotted).and_then(|d| d.strip_prefix("T.").and_then(DType::parse)).unwrap_or(DType::I32)
}

/// The integer type of a size declaration (`T.int64()`, `T.var("int64")`).
fn size_declaration_dtype(f: &str, args: &[Arg]) -> DType {
    match (f.strip_prefix("T."), args) {
        (Some("var"), [Arg::Positional(e)]) => match &e.kind {
            ExprKind::Str(t) => DType::parse(t).unwrap_or(DType::I32),
            _ => DType::I32,
        },
        (Some(t), _) => DType::parse(t).unwrap_or(DType::I32),
        _ => DType::I32,
    }
}

/// `n: T.int32` (or another integer type) as a parameter's annotation.
fn is_size_annotation(ann: Option<&ast::Expr>) -> bool {
    ann.and_then(dotted)
        .and_then(|d| d.strip_prefix("T.").and_then(DType::parse))
        .is_some_and(|t| t.is_int() && t != DType::Bool)
}

/// The type of a scalar value parameter, `alpha: T.float32` (or another
/// floating-point type).
fn scalar_type(ann: Option<&ast::Expr>) -> Option<DType> {
    ann.and_then(dotted)
        .and_then(|d| d.strip_prefix("T.").and_then(DType::parse))
        .filter(|t| matches!(t, DType::Float(16 | 32 | 64) | DType::BFloat16))
}

/// `T.int32()`, `T.int64()`, or TVM's older `T.var("int32")`.
/// Every name in `e`, those of quoted shape expressions (`"n + 1"`)
/// included.
fn names_in(e: &ast::Expr, out: &mut Vec<String>) {
    match &e.kind {
        ExprKind::Name(n) => out.push(n.clone()),
        ExprKind::Str(text) => {
            if let Ok(x) = super::buffer::parse_quoted_expr(text, e.span) {
                names_in(&x, out);
            }
        }
        _ => {
            for c in e.children() {
                names_in(c, out);
            }
        }
    }
}

fn is_size_declaration(f: &str, args: &[Arg]) -> bool {
    let int = |t: &str| DType::parse(t).is_some_and(|t| t.is_int() && t != DType::Bool);
    match (f.strip_prefix("T."), args) {
        (Some(t), []) => int(t),
        (Some("var"), [Arg::Positional(a)]) => matches!(&a.kind, ExprKind::Str(t) if int(t)),
        _ => false,
    }
}

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

/// A float literal must fit its type: `1e40` as a float32 would be
/// infinity (TVM's parser refuses it too).
fn check_float_literals(v: &Expr, span: ast::Span) -> R<()> {
    let mut bad = None;
    v.walk(&mut |x| {
        if let Expr::Float(f, t) = x {
            let max = match limit(*t, true) {
                Some(Expr::Float(m, _)) => m,
                _ => f64::MAX,
            };
            if bad.is_none() && f.is_finite() && f.abs() > max {
                bad = Some((*f, *t, max));
            }
        }
    });
    match bad {
        None => Ok(()),
        Some((f, t, max)) => Err(Diagnostic::at(span, format!("the literal {f:e} does not fit in {t}: its largest value is {max:e}"))
            .help("write it in a wider type (T.float64(..)), or use T.max_value / T.float32(\"inf\") if that is what is meant")),
    }
}

/// A launch runs at least one thread or block: a constant extent below 1 is
/// refused where it is written.
fn positive_extent(extent: &Expr, span: Span) -> R<()> {
    match extent.as_int() {
        Some(v) if v < 1 => Err(Diagnostic::at(span, format!("a thread extent must be at least 1, not {v}"))),
        _ => Ok(()),
    }
}
