//! Resolve of buffer declarations: parameters' `T.Buffer(...)`,
//! `T.match_buffer`, `T.alloc_buffer`, `T.decl_buffer`, `T.allocate`, and
//! views of another buffer's memory (`T.Buffer(shape, data=A.data)`).

use super::dotted;
use super::func::{Binding, FuncResolver, MAX_ELEMENTS, R};
use crate::buffer::{Buffer, DimAlign, Scope};
use crate::diag::{did_you_mean, Diagnostic};
use crate::dtype::DType;
use crate::expr::Expr;
use tirc_parser::ast::{self, Arg, ExprKind, Span, StmtKind};

impl FuncResolver<'_> {
    /// Reads `(shape, dtype, scope=.., data=..)` into a new buffer.
    pub(crate) fn buffer_decl(&mut self, name: &str, args: &[Arg], span: Span, scope: Scope) -> R<Buffer> {
        let mut shape = None;
        let mut dtype = DType::F32;
        let mut scope = scope;
        let mut strides = None;
        let mut dim_align = None;
        let mut swizzle = None;
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
                    "dim_align" => dim_align = Some(e),
                    "swizzle" => swizzle = Some(e),
                    // A constant offset other than 0 would move every element
                    // (TVM's element i is data[elem_offset + i]); tirc's
                    // views start where their data does. A name (a
                    // window's `A_elem_offset`) is the offset TVM leaves
                    // free, which tirc computes itself.
                    "elem_offset" => {
                        if let ExprKind::Int(v) = &e.kind {
                            if *v != 0 {
                                return Err(Diagnostic::at(
                                    e.span,
                                    format!("tirc does not take a buffer at an element offset ({v}) yet"),
                                )
                                .help("index the underlying buffer with the offset added"));
                            }
                        }
                    }
                    "data" | "align" | "offset_factor" | "buffer_type" | "axis_separators" => {}
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
        let mut b = Buffer::new(name, dtype, shape, scope);
        if let Some(e) = dim_align {
            let aligns = self.dim_align(e, b.ndim())?;
            b = b.with(|n| n.dim_align = aligns);
        }
        if let Some(e) = swizzle {
            // tirc's record of `sch.storage_swizzle`: the pattern's width.
            let bytes = self.expr(e)?.as_int().filter(|x| crate::buffer::SWIZZLES.contains(x));
            let Some(bytes) = bytes else {
                return Err(Diagnostic::at(e.span, "`swizzle=` takes the pattern's width in bytes: 32, 64 or 128"));
            };
            if b.scope() != Scope::Shared {
                return Err(Diagnostic::at(e.span, "only a buffer in shared memory can be swizzled"));
            }
            b = b.with(|n| n.swizzle = bytes);
        }
        Ok(b)
    }

    /// `dim_align=[[axis, factor, offset], ...]`: tirc's record of
    /// `sch.storage_align` on an allocated buffer.
    fn dim_align(&mut self, e: &ast::Expr, ndim: usize) -> R<Vec<DimAlign>> {
        let bad = |span: Span| {
            Diagnostic::at(span, "`dim_align=` takes a list of [axis, factor, offset] triples")
                .help("e.g. dim_align=[[0, 32, 1]] pads the stride of axis 0 to 1 modulo 32")
        };
        let (ExprKind::List(items) | ExprKind::Tuple(items)) = &e.kind else {
            return Err(bad(e.span));
        };
        let mut out: Vec<DimAlign> = Vec::new();
        for it in items {
            let (ExprKind::List(t) | ExprKind::Tuple(t)) = &it.kind else {
                return Err(bad(it.span));
            };
            let mut v = Vec::new();
            for x in t {
                match self.expr(x)?.as_int() {
                    Some(i) => v.push(i),
                    None => return Err(bad(x.span)),
                }
            }
            let [axis, factor, offset] = v[..] else {
                return Err(bad(it.span));
            };
            if axis < 0 || axis as usize >= ndim {
                return Err(Diagnostic::at(
                    it.span,
                    format!("axis {axis} is out of range for a {ndim}-dimensional buffer"),
                ));
            }
            if factor <= 0 || !(0..factor).contains(&offset) {
                return Err(Diagnostic::at(
                    it.span,
                    format!("factor {factor} and offset {offset}: need factor > 0 and 0 <= offset < factor"),
                ));
            }
            if out.iter().any(|a| a.axis == axis as usize) {
                return Err(Diagnostic::at(it.span, format!("axis {axis} is aligned twice")));
            }
            out.push(DimAlign { axis: axis as usize, factor, offset });
        }
        out.sort_by_key(|a| a.axis);
        Ok(out)
    }

    /// Parameters and views have the layout of memory tirc does not
    /// allocate: no padding.
    pub(crate) fn no_dim_align(&self, b: &Buffer, span: Span) -> R<()> {
        if b.dim_align().is_empty() {
            return Ok(());
        }
        Err(Diagnostic::at(span, format!("`{}` cannot take `dim_align=`: its memory is not allocated here", b.name()))
            .help("only buffers the function allocates (T.alloc_buffer, T.decl_buffer) can have padded strides"))
    }

    /// `strides=` must be those of a compact row-major buffer, the only
    /// layout tirc has (an empty list means the same).
    pub(crate) fn check_strides(&mut self, e: &ast::Expr, shape: &[Expr]) -> R<()> {
        self.check_strides_of(e, shape, &(0..shape.len()).collect::<Vec<_>>(), false)
    }

    /// `strides=` of a view that walks dimensions `dims` of a compact
    /// row-major buffer of shape `shape`: the strides of those dimensions
    /// (a window `T.match_buffer(A[i, 4:8], (4,), strides=[1])` of a
    /// (4, 8) buffer, or `A[i:i + 1, 4:8]` as (1, 4) with strides (8, 1),
    /// as TVM prints a window).
    pub(crate) fn check_strides_of(&mut self, e: &ast::Expr, shape: &[Expr], dims: &[usize], window: bool) -> R<()> {
        let items: Vec<&ast::Expr> = match &e.kind {
            ExprKind::Tuple(v) | ExprKind::List(v) => v.iter().collect(),
            _ => vec![e],
        };
        if items.is_empty() {
            return Ok(());
        }
        // Each stride as a product: its constant and its run-time sizes,
        // so that `n * 4` and `4 * n` are one stride.
        fn product(e: &Expr) -> Option<(i64, Vec<String>)> {
            match e {
                Expr::Int(v, _) => Some((*v, vec![])),
                Expr::Var(v) => Some((1, vec![v.name().to_string()])),
                Expr::Binary(crate::BinOp::Mul, a, b) => {
                    let ((x, mut u), (y, w)) = (product(a)?, product(b)?);
                    u.extend(w);
                    u.sort();
                    Some((x.checked_mul(y)?, u))
                }
                _ => None,
            }
        }
        let compact: Vec<Expr> = dims
            .iter()
            .map(|&d| {
                shape[d + 1..].iter().fold(Expr::int(1), |acc, x| match acc.as_int() {
                    Some(1) => x.clone(),
                    _ => Expr::folded(crate::BinOp::Mul, acc, x.clone()),
                })
            })
            .collect();
        let mut given = Vec::new();
        for it in &items {
            given.push(self.expr(it)?);
        }
        let same = |g: &Expr, c: &Expr| matches!((product(g), product(c)), (Some(x), Some(y)) if x == y);
        if given.len() != compact.len() || given.iter().zip(&compact).any(|(g, c)| !same(g, c)) {
            let want: Vec<String> = compact.iter().map(crate::printer::print_expr).collect();
            let (what, of) = if window {
                ("a window's strides are those of the buffer it looks into", "the dimensions it walks")
            } else {
                ("tirc supports compact row-major buffers only", "this shape")
            };
            return Err(Diagnostic::at(e.span, what)
                .help(format!("the strides of {of} are ({}), or leave `strides=` out", want.join(", "))));
        }
        Ok(())
    }

    pub(crate) fn shape(&mut self, e: &ast::Expr) -> R<Vec<Expr>> {
        let items: Vec<&ast::Expr> = match &e.kind {
            ExprKind::Tuple(v) | ExprKind::List(v) => v.iter().collect(),
            _ => vec![e],
        };
        let mut out = Vec::new();
        let mut elements: i64 = 1;
        for it in items {
            // TVM 0.27 quotes a shape expression that declares a size
            // (`T.Buffer(("n + 1", n))`): read as the expression.
            let quoted = match &it.kind {
                ExprKind::Str(text) => Some(parse_quoted_expr(text, it.span)?),
                _ => None,
            };
            let v = self.expr(quoted.as_ref().unwrap_or(it))?;
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
                // An extent over the run-time sizes (`m`, `2 * n`): its value
                // is checked when the function is run.
                None if v.is_size_expr(&self.size_vars) => out.push(v),
                None => {
                    return Err(Diagnostic::at(it.span, "buffer extents must be constants or sizes").help(
                        "define the size as a module constant (`M = 1024`) or a size variable (`m = T.int32()`)",
                    ))
                }
            }
        }
        Ok(out)
    }

    pub(crate) fn dtype_arg(&self, e: &ast::Expr) -> R<DType> {
        // `x: T.let[T.int32] = ...`, TVM's spelling of a typed let.
        if let ExprKind::Subscript { value, indices } = &e.kind {
            if let ([t], Some("T.let")) = (&indices[..], dotted(value).as_deref()) {
                return self.dtype_arg(t);
            }
        }
        let name = match &e.kind {
            ExprKind::Str(s) => s.clone(),
            _ => match dotted(e) {
                Some(d) if d.starts_with("T.") => d[2..].to_string(),
                _ => return Err(Diagnostic::at(e.span, "expected a data type such as \"float32\"")),
            },
        };
        DType::parse(&name).ok_or_else(|| {
            let names: Vec<String> = crate::dtype::TYPES.iter().map(|t| t.name.to_string()).collect();
            did_you_mean(
                Diagnostic::at(e.span, format!("unknown data type `{name}`")),
                &name,
                names.iter().map(|s| s.as_str()),
            )
        })
    }

    pub(crate) fn scope_arg(&self, e: &ast::Expr) -> R<Scope> {
        let ExprKind::Str(s) = &e.kind else {
            return Err(Diagnostic::at(e.span, "expected a storage scope such as \"shared\""));
        };
        // An empty scope is TVM's default: global memory.
        if s.is_empty() {
            return Ok(Scope::Global);
        }
        Scope::parse(s).ok_or_else(|| {
            did_you_mean(
                Diagnostic::at(e.span, format!("unknown storage scope `{s}`")),
                s,
                ["global", "shared", "local"],
            )
        })
    }

    /// `T.allocate([n], "float32", "shared")`.
    pub(crate) fn allocate_args(&mut self, name: &str, args: &[Arg], span: Span) -> R<Buffer> {
        self.buffer_decl(name, args, span, Scope::Global)
    }

    /// `X = T.Buffer(shape, data=Y.data)`: another name for `Y`'s memory.
    pub(crate) fn buffer_view(&mut self, name: &str, args: &[Arg], span: Span) -> R<Binding> {
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
        self.no_dim_align(&view, span)?;
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
        if !same_count(&view, &base) {
            let count = |b: &Buffer| {
                b.num_elements().map_or_else(
                    || {
                        b.shape()
                            .iter()
                            .map(|e| format!("({})", crate::printer::print_expr(e)))
                            .collect::<Vec<_>>()
                            .join(" * ")
                    },
                    |n| n.to_string(),
                )
            };
            return Err(Diagnostic::at(
                span,
                format!("`{name}` has {} elements, but `{}` has {}", count(&view), base.name(), count(&base)),
            )
            .help("a view must cover its buffer's memory exactly"));
        }
        // A shape of run-time sizes is the same only as written the same
        // way (`(n * 64,)` over `(n, 64)` is a flat view, not the buffer).
        let same_shape = match (view.const_shape(), base.const_shape()) {
            (Some(a), Some(b)) => a == b,
            _ => {
                view.shape().len() == base.shape().len()
                    && view.shape().iter().zip(base.shape()).all(|(a, b)| crate::structural_eq::same_expr(a, b))
            }
        };
        Ok(if same_shape { Binding::Buffer(base) } else { Binding::View(base, view.shape().to_vec()) })
    }
}

/// Whether two buffers hold as many elements: as numbers, or, for shapes of
/// run-time sizes, at several values of the sizes.
fn same_count(a: &Buffer, b: &Buffer) -> bool {
    if let (Some(x), Some(y)) = (a.num_elements(), b.num_elements()) {
        return x == y;
    }
    let mut vars: Vec<crate::expr::Var> = Vec::new();
    for e in a.shape().iter().chain(b.shape()) {
        e.walk(&mut |x| {
            if let Expr::Var(v) = x {
                if !vars.contains(v) {
                    vars.push(v.clone());
                }
            }
        });
    }
    let count = |buf: &Buffer, at: &[(crate::expr::Var, Expr)]| -> Option<i64> {
        buf.shape().iter().try_fold(1i64, |n, e| {
            crate::expr::fold_constants(&crate::subst::substitute(e, at)).as_int().and_then(|d| n.checked_mul(d))
        })
    };
    [3, 7, 1000].iter().all(|&v| {
        let at: Vec<(crate::expr::Var, Expr)> = vars.iter().map(|x| (x.clone(), Expr::Int(v, x.dtype()))).collect();
        matches!((count(a, &at), count(b, &at)), (Some(x), Some(y)) if x == y)
    })
}

/// The expression a quoted shape extent holds (`"n + 1"`, as TVM 0.27
/// prints an extent that declares a size), every part of it at the
/// string's span.
pub(crate) fn parse_quoted_expr(text: &str, span: Span) -> R<ast::Expr> {
    let bad = || Diagnostic::at(span, format!("`{text}` is not an expression"));
    if text.contains('\n') {
        return Err(bad());
    }
    let module = tirc_parser::parse(&format!("__shape = {text}\n")).map_err(|_| bad())?;
    let [st] = &module.body[..] else { return Err(bad()) };
    let StmtKind::Assign { value, .. } = &st.kind else { return Err(bad()) };
    let mut e = value.clone();
    restamp(&mut e, span);
    Ok(e)
}

/// `e` with every span set to `span`.
fn restamp(e: &mut ast::Expr, span: Span) {
    e.span = span;
    let arg = |a: &mut Arg| match a {
        Arg::Positional(x) | Arg::Star(x) | Arg::DoubleStar(x) => restamp(x, span),
        Arg::Keyword(_, x) => restamp(x, span),
    };
    match &mut e.kind {
        ExprKind::Attribute { value, .. } => restamp(value, span),
        ExprKind::Call { func, args } => {
            restamp(func, span);
            args.iter_mut().for_each(arg);
        }
        ExprKind::Subscript { value, indices } => {
            restamp(value, span);
            indices.iter_mut().for_each(|x| restamp(x, span));
        }
        ExprKind::Slice { lo, hi, step } => {
            for x in [lo, hi, step].into_iter().flatten() {
                restamp(x, span);
            }
        }
        ExprKind::Tuple(v) | ExprKind::List(v) => v.iter_mut().for_each(|x| restamp(x, span)),
        ExprKind::Starred(x) => restamp(x, span),
        ExprKind::Dict(v) => v.iter_mut().for_each(|(a, b)| {
            restamp(a, span);
            restamp(b, span);
        }),
        ExprKind::Unary { operand, .. } => restamp(operand, span),
        ExprKind::Binary { lhs, rhs, .. } => {
            restamp(lhs, span);
            restamp(rhs, span);
        }
        ExprKind::Compare { first, rest } => {
            restamp(first, span);
            rest.iter_mut().for_each(|(_, x)| restamp(x, span));
        }
        ExprKind::BoolOp { operands, .. } => operands.iter_mut().for_each(|x| restamp(x, span)),
        ExprKind::IfExp { cond, then, orelse } => {
            restamp(cond, span);
            restamp(then, span);
            restamp(orelse, span);
        }
        ExprKind::Lambda { body, .. } => restamp(body, span),
        ExprKind::Name(_)
        | ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::Str(_)
        | ExprKind::Bool(_)
        | ExprKind::None => {}
    }
}
