//! Resolve of expressions: names, literals, arithmetic with TVMScript's
//! typing rules, buffer accesses and `T.` functions.
//!
//! Typing: an integer literal is `int32`, a float literal `float32`; a
//! literal takes the type of the other operand when they differ; two typed
//! operands of different types are an error that asks for `T.Cast`.

use super::dotted;
use super::func::{plural, Binding, FuncResolver, R};
use crate::buffer::Buffer;
use crate::diag::{did_you_mean, Diagnostic};
use crate::dtype::DType;
use crate::expr::{BinOp, Expr, Intrinsic};
use tirc_parser::ast::{self, Arg, ExprKind, Span};

/// The `T.` functions an expression may call, for suggestions.
const T_FUNCS: [&str; 27] = [
    "T.float32",
    "T.float16",
    "T.int32",
    "T.int64",
    "T.min_value",
    "T.max_value",
    "T.ceildiv",
    "T.Cast",
    "T.cast",
    "T.max",
    "T.min",
    "T.floordiv",
    "T.floormod",
    "T.truncdiv",
    "T.truncmod",
    "T.isnan",
    "T.isinf",
    "T.isfinite",
    "T.if_then_else",
    "T.Select",
    "T.likely",
    "T.exp",
    "T.sqrt",
    "T.tanh",
    "T.fma",
    "T.bool",
    "T.uint8",
];

impl FuncResolver<'_> {
    pub(crate) fn expr(&mut self, e: &ast::Expr) -> R<Expr> {
        match &e.kind {
            ExprKind::Int(v) => Ok(if i32::try_from(*v).is_ok() { Expr::int(*v) } else { Expr::Int(*v, DType::I64) }),
            ExprKind::Float(v) => Ok(Expr::Float(*v, DType::F32)),
            ExprKind::Bool(b) => Ok(Expr::bool(*b)),
            ExprKind::Name(n) => self.name(n, e.span),
            ExprKind::Unary { op, operand } => {
                let a = self.expr(operand)?;
                match op {
                    ast::UnaryOp::Neg => Ok(match a {
                        Expr::Int(v, t) => Expr::Int(-v, t),
                        Expr::Float(v, t) => Expr::Float(-v, t),
                        // A float is negated as TVM does, `x * -1`, which
                        // flips the sign of a zero (`0.0 - x` would make
                        // -(+0.0) +0.0: atan2 and division by it see it).
                        a if a.dtype().is_float() => {
                            let minus_one = Expr::Float(-1.0, a.dtype());
                            Expr::binary(BinOp::Mul, a, minus_one)
                        }
                        a => {
                            let zero = zero_of(a.dtype());
                            Expr::binary(BinOp::Sub, zero, a)
                        }
                    }),
                    ast::UnaryOp::Pos => Ok(a),
                    ast::UnaryOp::Not => Ok(Expr::Not(Box::new(self.to_bool(a, operand.span)?))),
                    ast::UnaryOp::Invert => invert(a, operand.span),
                }
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let a = self.expr(lhs)?;
                let b = self.expr(rhs)?;
                self.binary(*op, a, b, e.span)
            }
            ExprKind::Compare { first, rest } => {
                let mut lhs = self.expr(first)?;
                let mut out: Option<Expr> = None;
                for (op, r) in rest {
                    let rhs = self.expr(r)?;
                    let bop = match op {
                        ast::CmpOp::Eq => BinOp::Eq,
                        ast::CmpOp::Ne => BinOp::Ne,
                        ast::CmpOp::Lt => BinOp::Lt,
                        ast::CmpOp::Le => BinOp::Le,
                        ast::CmpOp::Gt => BinOp::Gt,
                        ast::CmpOp::Ge => BinOp::Ge,
                        _ => return Err(Diagnostic::at(e.span, "`in` and `is` are not allowed in a prim_func")),
                    };
                    let (a, b) = self.unify(lhs, rhs.clone(), e.span)?;
                    let c = Expr::binary(bop, a, b);
                    out = Some(match out {
                        Some(prev) => Expr::binary(BinOp::And, prev, c),
                        None => c,
                    });
                    lhs = rhs;
                }
                out.ok_or_else(|| Diagnostic::at(e.span, "empty comparison"))
            }
            ExprKind::BoolOp { op, operands } => {
                let bop = if *op == ast::BoolOp::And { BinOp::And } else { BinOp::Or };
                let mut it = operands.iter();
                let first = it.next().ok_or_else(|| Diagnostic::at(e.span, "empty boolean expression"))?;
                let mut acc = self.expr(first)?;
                acc = self.to_bool(acc, first.span)?;
                for o in it {
                    let x = self.expr(o)?;
                    let x = self.to_bool(x, o.span)?;
                    acc = Expr::binary(bop, acc, x);
                }
                Ok(acc)
            }
            ExprKind::IfExp { cond, then, orelse } => {
                let c = self.expr(cond)?;
                let c = self.to_bool(c, cond.span)?;
                let a = self.expr(then)?;
                let b = self.expr(orelse)?;
                let (a, b) = self.unify(a, b, e.span)?;
                Ok(Expr::Select(Box::new(c), Box::new(a), Box::new(b)))
            }
            ExprKind::Subscript { value, indices } => {
                let (buffer, idx) = self.access(value, indices, e.span)?;
                Ok(Expr::Load(buffer, idx))
            }
            ExprKind::Call { func, args } => self.call(func, args, e.span),
            ExprKind::Attribute { .. } => {
                Err(Diagnostic::at(e.span, format!("`{}` is not a value", dotted(e).unwrap_or_else(|| "this".into()))))
            }
            _ => Err(Diagnostic::at(e.span, "this expression is not allowed in a prim_func")),
        }
    }

    fn name(&mut self, n: &str, span: Span) -> R<Expr> {
        match self.lookup(n) {
            Some(Binding::Var(v) | Binding::Thread(v, _)) => Ok(Expr::Var(v.clone())),
            // The stand-in of a declaration already reported: any use goes,
            // as a value no check refuses (a size of 0 would be).
            Some(Binding::Buffer(b)) if self.poisoned.contains(b) => Ok(Expr::int(1)),
            Some(Binding::Buffer(_) | Binding::View(..) | Binding::Region { .. }) => {
                Err(Diagnostic::at(span, format!("`{n}` is a buffer, not a value"))
                    .help(format!("index it, e.g. `{n}[i, j]`")))
            }
            Some(Binding::Handle) => Err(Diagnostic::at(span, format!("`{n}` is a handle, not a value"))),
            None => match self.consts.iter().rev().find(|(c, _)| c == n) {
                Some((_, v)) => Ok(Expr::int(*v)),
                None => {
                    let names = self.visible_names();
                    Err(did_you_mean(Diagnostic::at(span, format!("unknown name `{n}`")), n, names))
                }
            },
        }
    }

    pub(crate) fn buffer_ref(&mut self, e: &ast::Expr) -> R<Buffer> {
        let ExprKind::Name(n) = &e.kind else {
            return Err(Diagnostic::at(e.span, "expected a buffer name"));
        };
        match self.lookup(n) {
            Some(Binding::Buffer(b)) => Ok(b.clone()),
            Some(Binding::View(b, _)) | Some(Binding::Region { base: b, .. }) => Ok(b.clone()),
            Some(_) => Err(Diagnostic::at(e.span, format!("`{n}` is not a buffer"))),
            None => {
                let names = self.visible_names();
                Err(did_you_mean(Diagnostic::at(e.span, format!("unknown buffer `{n}`")), n, names))
            }
        }
    }

    /// `B[i, j]`: the buffer and its indices, checked against its rank; a
    /// flat view's index is turned back into the indices of its buffer.
    fn access(&mut self, value: &ast::Expr, indices: &[ast::Expr], span: Span) -> R<(Buffer, Vec<Expr>)> {
        let binding = match &value.kind {
            ExprKind::Name(n) => self.lookup(n).cloned(),
            _ => None,
        };
        let buffer = self.buffer_ref(value)?;
        let mut idx = Vec::new();
        for i in element_indices(indices) {
            if let ExprKind::Slice { .. } = i.kind {
                return Err(Diagnostic::at(i.span, "a slice is not allowed here; name one element"));
            }
            idx.push(integer(self.expr(i)?, i.span, "an index must be an integer")?);
        }
        let count_error = |what: &str, n: usize| {
            Diagnostic::at(
                span,
                format!("this {what} has {n} dimension{}, but {} indices are given", plural(n), idx.len()),
            )
        };
        match binding {
            Some(Binding::View(base, shape)) => {
                if idx.len() != shape.len() {
                    return Err(count_error("view", shape.len()));
                }
                let idx = reindex(&idx, &shape, base.shape());
                Ok((base, idx))
            }
            // `X[i, ..]` of a window `X = T.match_buffer(B[region], shape)`:
            // the element of `B` at the region's start plus the indices.
            Some(Binding::Region { base, mins, dims }) => {
                if idx.len() != dims.len() {
                    return Err(count_error("window", dims.len()));
                }
                let mut at = mins.clone();
                for (x, &d) in idx.into_iter().zip(&dims) {
                    at[d] = if mins[d].as_int() == Some(0) { x } else { mins[d].clone() + x };
                }
                Ok((base, at))
            }
            _ => {
                if idx.len() != buffer.ndim() && !self.poisoned.contains(&buffer) {
                    return Err(self.rank_error(&buffer, idx.len(), span));
                }
                // A literal index outside a constant dimension reads or
                // writes memory that is not the buffer's.
                for ((x, n), i) in idx.iter().zip(buffer.shape()).zip(element_indices(indices)) {
                    if let (Some(v), Some(n)) = (x.as_int(), n.as_int()) {
                        if v < 0 || v >= n {
                            return Err(Diagnostic::at(
                                i.span,
                                format!("index {v} is outside `{}`, whose dimension has extent {n}", buffer.name()),
                            ));
                        }
                    }
                }
                Ok((buffer, idx))
            }
        }
    }

    pub(crate) fn store_target(&mut self, target: &ast::Expr) -> R<(Buffer, Vec<Expr>)> {
        let ExprKind::Subscript { value, indices } = &target.kind else {
            return Err(Diagnostic::at(target.span, "only buffer elements can be assigned"));
        };
        self.access(value, indices, target.span)
    }

    /// Brings two operands to one type by typing literals after the other.
    fn unify(&self, a: Expr, b: Expr, span: Span) -> R<(Expr, Expr)> {
        let (ta, tb) = (a.dtype(), b.dtype());
        if ta == tb {
            return Ok((a, b));
        }
        // An integer value beside a float literal (`vi * 2 + 0.5`) becomes
        // float32, as in TVM: the literal must not be truncated to an
        // integer.
        let float_literal = |e: &Expr| matches!(e, Expr::Float(..));
        if ta.is_int() && float_literal(&b) && !is_literal(&a) {
            return Ok((Expr::Cast(DType::F32, Box::new(a)), retype(b, DType::F32)));
        }
        if tb.is_int() && float_literal(&a) && !is_literal(&b) {
            return Ok((retype(a, DType::F32), Expr::Cast(DType::F32, Box::new(b))));
        }
        // An integer literal that the other operand's type cannot hold
        // (`v * T.int64(3000000000)` with `v` an int32 loop variable) widens
        // that operand instead of wrapping.
        let fits = |e: &Expr, t: DType| match (e, limit(t, false), limit(t, true)) {
            (Expr::Int(x, _), Some(Expr::Int(lo, _)), Some(Expr::Int(hi, _))) => lo <= *x && *x <= hi,
            _ => true,
        };
        if let (DType::Int(x), DType::Int(y)) = (ta, tb) {
            if is_literal(&a) && is_literal(&b) {
                return Ok(if x < y { (retype(a, tb), b) } else { (a, retype(b, ta)) });
            }
            if is_literal(&b) && x < y && !fits(&b, ta) {
                return Ok((Expr::Cast(tb, Box::new(a)), b));
            }
            if is_literal(&a) && y < x && !fits(&a, tb) {
                return Ok((a, Expr::Cast(ta, Box::new(b))));
            }
        }
        if is_literal(&b) {
            return Ok((a, retype(b, ta)));
        }
        if is_literal(&a) {
            return Ok((retype(a, tb), b));
        }
        // Signed integers of two widths meet in the wider, as TVM matches
        // them (`T.Cast("int64", tx) + i` with `i` an int32 loop variable):
        // widening keeps every value.
        if let (DType::Int(x), DType::Int(y)) = (ta, tb) {
            return Ok(if x < y { (Expr::Cast(tb, Box::new(a)), b) } else { (a, Expr::Cast(ta, Box::new(b))) });
        }
        Err(Diagnostic::at(span, format!("operands have different types, {ta} and {tb}"))
            .help(format!("convert one with `T.Cast(\"{ta}\", ...)`")))
    }

    /// The two operands of an integer division `f(a, b)`, of one type, `b`
    /// not a literal 0.
    fn divisor_operands(&mut self, f: &str, pos: &[&ast::Expr], span: Span) -> R<(Expr, Expr)> {
        let a = self.expr(pos[0])?;
        let b = self.expr(pos[1])?;
        let (a, b) = self.unify(a, b, span)?;
        if !a.dtype().is_int() {
            return Err(Diagnostic::at(span, format!("`{f}` needs integer operands, not {}", a.dtype())));
        }
        if b.as_int() == Some(0) {
            return Err(Diagnostic::at(pos[1].span, "division by zero"));
        }
        Ok((a, b))
    }

    pub(crate) fn binary(&self, op: ast::BinOp, a: Expr, b: Expr, span: Span) -> R<Expr> {
        use ast::BinOp as A;
        let (a, b) = self.unify(a, b, span)?;
        let t = a.dtype();
        let bop = match op {
            A::Add => BinOp::Add,
            A::Sub => BinOp::Sub,
            A::Mul => BinOp::Mul,
            A::Div => BinOp::Div,
            A::FloorDiv => BinOp::FloorDiv,
            A::Mod => BinOp::FloorMod,
            A::BitAnd => BinOp::BitAnd,
            A::BitOr => BinOp::BitOr,
            A::BitXor => BinOp::BitXor,
            A::Shl => BinOp::Shl,
            A::Shr => BinOp::Shr,
            _ => return Err(Diagnostic::at(span, "this operator is not supported in a prim_func")),
        };
        if bop.is_bitwise() {
            return bitwise(bop, a, b, span);
        }
        if t.is_bool() {
            return Err(Diagnostic::at(span, "arithmetic on booleans is not allowed"));
        }
        if matches!(bop, BinOp::FloorDiv | BinOp::FloorMod) && t.is_float() {
            return Ok(float_floor_div(bop, a, b));
        }
        if let (Some(0), BinOp::FloorDiv | BinOp::FloorMod | BinOp::Div) = (b.as_int(), bop) {
            return Err(Diagnostic::at(span, "division by zero"));
        }
        // Literals combine as Python's integers do (`N * N * 2` of module
        // constants is one number): past int32, the result is an int64
        // literal, not an int32 product that wraps.
        if let (Expr::Int(x, DType::Int(32)), Expr::Int(y, DType::Int(32))) = (&a, &b) {
            let wide = match bop {
                BinOp::Add => x.checked_add(*y),
                BinOp::Sub => x.checked_sub(*y),
                BinOp::Mul => x.checked_mul(*y),
                _ => None,
            };
            if let Some(v) = wide.filter(|v| i32::try_from(*v).is_err()) {
                return Ok(Expr::Int(v, DType::I64));
            }
        }
        Ok(Expr::folded(bop, a, b))
    }

    /// `e` as a value of type `t`: literals are retyped, other values must
    /// already have it.
    pub(crate) fn coerce(&self, e: Expr, t: DType, span: Span) -> R<Expr> {
        if e.dtype() == t {
            return Ok(e);
        }
        if is_literal(&e) {
            // A literal of an integer type holds a value of that type (TVM
            // refuses others too): stored as written, C would wrap what the
            // simulator would hold at the type's limit.
            if let Some((lo, hi)) = int_range(t) {
                let v = match e {
                    Expr::Int(v, _) => Some(v as f64),
                    Expr::Float(v, _) if v.fract() == 0.0 => Some(v),
                    _ => None,
                };
                match v {
                    Some(v) if v >= lo as f64 && v <= hi as f64 => {}
                    _ => {
                        let shown = match e {
                            Expr::Int(v, _) => v.to_string(),
                            Expr::Float(v, _) => format!("{v:?}"),
                            _ => String::new(),
                        };
                        return Err(Diagnostic::at(
                            span,
                            format!("the literal {shown} is no {t} value: {t} holds {lo} to {hi}"),
                        )
                        .help(format!("write a value of {t}, or convert a wider value with `T.Cast(\"{t}\", ...)`")));
                    }
                }
            }
            return Ok(retype(e, t));
        }
        // A signed integer widens to a wider one, every value kept: tirc
        // holds loop and block variables over `T.int64` extents as int32, so
        // TVM's `T_arange[v] = v` into an int64 buffer gives one.
        if let (DType::Int(x), DType::Int(y)) = (e.dtype(), t) {
            if x < y {
                return Ok(Expr::Cast(t, Box::new(e)));
            }
        }
        Err(Diagnostic::at(span, format!("expected a {t} value, found {}", e.dtype()))
            .help(format!("convert it with `T.Cast(\"{t}\", ...)`")))
    }

    pub(crate) fn to_bool(&self, e: Expr, span: Span) -> R<Expr> {
        match e.dtype() {
            DType::Bool => Ok(e),
            t if t.is_int() => Ok(Expr::binary(BinOp::Ne, e, Expr::Int(0, t))),
            t => Err(Diagnostic::at(span, format!("expected a condition, found a {t} value"))),
        }
    }

    fn call(&mut self, func: &ast::Expr, args: &[Arg], span: Span) -> R<Expr> {
        let f = dotted(func).unwrap_or_default();
        let mut pos = Vec::new();
        for a in args {
            match a {
                Arg::Positional(e) => pos.push(e),
                Arg::Keyword(k, _) if k.name == "dtype" => {}
                Arg::Keyword(k, _) => {
                    return Err(Diagnostic::at(k.span, format!("`{f}` takes no argument `{}`", k.name)))
                }
                Arg::Star(e) | Arg::DoubleStar(e) => {
                    return Err(Diagnostic::at(e.span, "`*` arguments are not allowed here"))
                }
            }
        }
        let arity = |n: usize| -> R<()> {
            if pos.len() == n {
                Ok(())
            } else {
                Err(Diagnostic::at(span, format!("`{f}` takes {n} argument{}, {} given", plural(n), pos.len())))
            }
        };
        let name = f.strip_prefix("T.").unwrap_or("");
        if let Some(t) = DType::parse(name) {
            arity(1)?;
            return self.typed_const(t, pos[0]);
        }
        match name {
            "Cast" | "cast" => {
                arity(2)?;
                let (t, v) = if name == "Cast" { (pos[0], pos[1]) } else { (pos[1], pos[0]) };
                let t = self.dtype_arg(t)?;
                let v = self.expr(v)?;
                Ok(if v.dtype() == t { v } else { Expr::Cast(t, Box::new(v)) })
            }
            // TVM's printer writes an operation as a call where the
            // operator would fold it (`T.Add(x, 0)`, `T.Mul(0, 16)`): read
            // as the operator it names.
            "Add" | "Sub" | "Mul" | "Div" | "FloorDiv" | "FloorMod" | "LT" | "LE" | "GT" | "GE" | "EQ" | "NE"
            | "And" | "Or" => {
                arity(2)?;
                let (a, b) = (Box::new(pos[0].clone()), Box::new(pos[1].clone()));
                let bin = |op| ExprKind::Binary { op, lhs: a.clone(), rhs: b.clone() };
                let cmp = |op| ExprKind::Compare { first: a.clone(), rest: vec![(op, (*b).clone())] };
                let kind = match name {
                    "Add" => bin(ast::BinOp::Add),
                    "Sub" => bin(ast::BinOp::Sub),
                    "Mul" => bin(ast::BinOp::Mul),
                    "Div" => bin(ast::BinOp::Div),
                    "FloorDiv" => bin(ast::BinOp::FloorDiv),
                    "FloorMod" => bin(ast::BinOp::Mod),
                    "LT" => cmp(ast::CmpOp::Lt),
                    "LE" => cmp(ast::CmpOp::Le),
                    "GT" => cmp(ast::CmpOp::Gt),
                    "GE" => cmp(ast::CmpOp::Ge),
                    "EQ" => cmp(ast::CmpOp::Eq),
                    "NE" => cmp(ast::CmpOp::Ne),
                    "And" => ExprKind::BoolOp { op: ast::BoolOp::And, operands: vec![(*a).clone(), (*b).clone()] },
                    _ => ExprKind::BoolOp { op: ast::BoolOp::Or, operands: vec![(*a).clone(), (*b).clone()] },
                };
                self.expr(&ast::Expr { kind, span })
            }
            "max" | "min" | "floordiv" | "floormod" | "truncdiv" => {
                arity(2)?;
                let a = self.expr(pos[0])?;
                let b = self.expr(pos[1])?;
                let (a, b) = self.unify(a, b, span)?;
                let op = match name {
                    "max" => BinOp::Max,
                    "min" => BinOp::Min,
                    "floordiv" => BinOp::FloorDiv,
                    "floormod" => BinOp::FloorMod,
                    _ => BinOp::Div,
                };
                if matches!(op, BinOp::FloorDiv | BinOp::FloorMod) && a.dtype().is_float() {
                    return Ok(float_floor_div(op, a, b));
                }
                if op != BinOp::Max && op != BinOp::Min {
                    if !a.dtype().is_int() {
                        return Err(Diagnostic::at(span, format!("`{f}` needs integer operands, not {}", a.dtype())));
                    }
                    if b.as_int() == Some(0) {
                        return Err(Diagnostic::at(pos[1].span, "division by zero"));
                    }
                }
                Ok(Expr::folded(op, a, b))
            }
            // C's remainder, with the sign of the dividend: `a - truncdiv(a,
            // b) * b`.
            "truncmod" => {
                arity(2)?;
                let (a, b) = self.divisor_operands(&f, &pos, span)?;
                let q = Expr::folded(BinOp::Div, a.clone(), b.clone());
                Ok(Expr::folded(BinOp::Sub, a, Expr::folded(BinOp::Mul, q, b)))
            }
            // A warp shuffle as `lower_cross_thread_reduction` prints it, in
            // TVM's form: `T.tvm_warp_shuffle_down(mask, v, delta, width,
            // 32)`. The mask must be every lane that reaches it
            // (`T.tvm_warp_activemask()`, or a constant).
            "tvm_warp_shuffle_down" => {
                arity(5)?;
                let mask_ok = match &pos[0].kind {
                    ExprKind::Call { func, args } => {
                        args.is_empty() && dotted(func).as_deref() == Some("T.tvm_warp_activemask")
                    }
                    // (Every lane: a warp's shuffles here are all its lanes'.)
                    _ => matches!(self.expr(pos[0])?.as_int(), Some(0xffff_ffff | -1)),
                };
                if !mask_ok {
                    return Err(Diagnostic::at(
                        pos[0].span,
                        "the mask of `T.tvm_warp_shuffle_down` is `T.tvm_warp_activemask()` or every lane's, 0xffffffff",
                    ));
                }
                let v = self.expr(pos[1])?;
                let mut konst = |i: usize, what: &str, ok: &dyn Fn(i64) -> bool| -> Result<Expr, Diagnostic> {
                    match self.expr(pos[i])?.as_int() {
                        Some(x) if ok(x) => Ok(Expr::int(x)),
                        _ => Err(Diagnostic::at(pos[i].span, format!("`T.tvm_warp_shuffle_down`'s {what}"))),
                    }
                };
                let width =
                    konst(3, "width is a constant power of two up to 32", &|w| w > 0 && w <= 32 && w & (w - 1) == 0)?;
                let w = width.as_int().unwrap_or(32);
                let delta = konst(2, "offset is a constant from 0 to its width", &|d| (0..w).contains(&d))?;
                konst(4, "warp size is 32", &|x| x == 32)?;
                if !(v.dtype().is_float() || v.dtype().is_int()) {
                    return Err(Diagnostic::at(pos[1].span, "`T.tvm_warp_shuffle_down` moves a number"));
                }
                Ok(Expr::Call(Intrinsic::WarpShuffleDown, vec![v, delta, width]))
            }
            // A bulk tensor copy as `warp_specialize` prints it: the first
            // element of the source box, then the box and the source's
            // shape, one integer per dimension each.
            "tma_load" => {
                let src = self.expr(pos.first().copied().ok_or_else(|| {
                    Diagnostic::at(
                        span,
                        "`T.tma_load` needs the source element, the box, the shape and the coordinates",
                    )
                })?)?;
                if !matches!(src, Expr::Load(..)) {
                    return Err(Diagnostic::at(pos[0].span, "`T.tma_load` copies from a buffer element, `G[..]`"));
                }
                let rank = (pos.len() - 1) / 3;
                if rank == 0 || pos.len() != 1 + 3 * rank {
                    return Err(Diagnostic::at(
                        span,
                        "`T.tma_load` takes the source element, then the box, the shape and the coordinates, as many of each",
                    ));
                }
                let mut xs = vec![src];
                for (i, p) in pos[1..].iter().enumerate() {
                    let e = self.expr(p)?;
                    if i >= 2 * rank {
                        xs.push(e);
                        continue;
                    }
                    match e.as_int() {
                        Some(v) if v > 0 => xs.push(Expr::int(v)),
                        _ => return Err(Diagnostic::at(p.span, "`T.tma_load`'s box and shape are positive integers")),
                    }
                }
                Ok(Expr::Call(Intrinsic::TmaLoad, xs))
            }
            // `T.fma(a, b, c)`: a * b + c (the CUDA compiler contracts it
            // into one fused instruction, as it does TVM's).
            "fma" => {
                arity(3)?;
                let a = self.expr(pos[0])?;
                let b = self.expr(pos[1])?;
                let c = self.expr(pos[2])?;
                let ab = self.binary(ast::BinOp::Mul, a, b, span)?;
                self.binary(ast::BinOp::Add, ab, c, span)
            }
            // Tests of a float, written with comparisons: a NaN is the one
            // value not equal to itself, and no NaN is below infinity.
            "isnan" | "isinf" | "isfinite" => {
                arity(1)?;
                let x = self.expr(pos[0])?;
                let t = x.dtype();
                // An integer is never a NaN nor infinite (TVM folds these).
                if t.is_int() {
                    return Ok(Expr::bool(name == "isfinite"));
                }
                if !t.is_float() {
                    return Err(Diagnostic::at(span, format!("`{f}` needs a number argument")));
                }
                let inf = Expr::Float(f64::INFINITY, t);
                let abs = Expr::Call(Intrinsic::Fabs, vec![x.clone()]);
                Ok(match name {
                    "isnan" => Expr::binary(BinOp::Ne, x.clone(), x),
                    "isinf" => Expr::binary(BinOp::Eq, abs, inf),
                    _ => Expr::binary(BinOp::Lt, abs, inf),
                })
            }
            "bitwise_and" | "bitwise_or" | "bitwise_xor" | "shift_left" | "shift_right" => {
                arity(2)?;
                let a = self.expr(pos[0])?;
                let b = self.expr(pos[1])?;
                let (a, b) = self.unify(a, b, span)?;
                let op = match name {
                    "bitwise_and" => BinOp::BitAnd,
                    "bitwise_or" => BinOp::BitOr,
                    "bitwise_xor" => BinOp::BitXor,
                    "shift_left" => BinOp::Shl,
                    _ => BinOp::Shr,
                };
                bitwise(op, a, b, span)
            }
            "bitwise_not" => {
                arity(1)?;
                let a = self.expr(pos[0])?;
                invert(a, pos[0].span)
            }
            "ceildiv" => {
                arity(2)?;
                let (a, b) = self.divisor_operands(&f, &pos, span)?;
                // ceil(a / b) = floor((a + b - 1) / b) for a positive divisor.
                let t = a.dtype();
                let num = Expr::folded(BinOp::Sub, Expr::folded(BinOp::Add, a, b.clone()), Expr::Int(1, t));
                Ok(Expr::folded(BinOp::FloorDiv, num, b))
            }
            "min_value" | "max_value" => {
                arity(1)?;
                let t = self.dtype_arg(pos[0])?;
                limit(t, name == "max_value")
                    .ok_or_else(|| Diagnostic::at(pos[0].span, format!("`{f}` of {t} is not supported")))
            }
            "if_then_else" | "Select" => {
                arity(3)?;
                let c = self.expr(pos[0])?;
                let c = self.to_bool(c, pos[0].span)?;
                let a = self.expr(pos[1])?;
                let b = self.expr(pos[2])?;
                let (a, b) = self.unify(a, b, span)?;
                Ok(Expr::Select(Box::new(c), Box::new(a), Box::new(b)))
            }
            _ => match Intrinsic::from_name(name) {
                Some(i) => {
                    arity(i.arity())?;
                    let mut xs = Vec::new();
                    for p in &pos {
                        xs.push(self.expr(p)?);
                    }
                    if i == Intrinsic::Likely {
                        xs[0] = self.to_bool(xs[0].clone(), pos[0].span)?;
                    } else if i == Intrinsic::Tf32Round && xs[0].dtype() != crate::DType::F32 {
                        return Err(Diagnostic::at(
                            span,
                            format!("`{f}` rounds a float32; its argument is {}", xs[0].dtype()),
                        ));
                    } else if !xs[0].dtype().is_float() && !matches!(i, Intrinsic::Abs) {
                        return Err(Diagnostic::at(span, format!("`{f}` needs a float argument")));
                    }
                    if let [a, b] = &xs[..] {
                        let (a, b) = self.unify(a.clone(), b.clone(), span)?;
                        xs = vec![a, b];
                    }
                    Ok(Expr::Call(i, xs))
                }
                None => Err(did_you_mean(
                    Diagnostic::at(func.span, format!("unknown function `{f}`")),
                    &f,
                    T_FUNCS.into_iter().chain(Intrinsic::ALL.iter().map(|i| i.name())),
                )),
            },
        }
    }

    /// `T.float32(0)`, `T.int64(5)`, `T.bool(True)`, `T.float32("inf")`, or a
    /// cast of a non-constant.
    fn typed_const(&mut self, t: DType, arg: &ast::Expr) -> R<Expr> {
        if let ExprKind::Str(s) = &arg.kind {
            let v = match s.as_str() {
                "inf" => f64::INFINITY,
                "-inf" => f64::NEG_INFINITY,
                "nan" => f64::NAN,
                _ => return Err(Diagnostic::at(arg.span, format!("cannot read `{s}` as a {t}"))),
            };
            return Ok(Expr::Float(v, t));
        }
        let v = self.expr(arg)?;
        // An integer literal must fit its type (`T.int8(300)` is refused, as
        // TVM refuses it): C would wrap it, the simulator would not.
        if let (Expr::Int(x, _), true) = (&v, t.is_int() && t != DType::I64) {
            if let (Some(lo), Some(hi)) = (limit(t, false), limit(t, true)) {
                if let (Expr::Int(lo, _), Expr::Int(hi, _)) = (lo, hi) {
                    if *x < lo || *x > hi {
                        return Err(Diagnostic::at(arg.span, format!("{x} is out of the range of {t} ({lo} to {hi})")));
                    }
                }
            }
        }
        Ok(if is_literal(&v) || v.dtype() == t { retype(v, t) } else { Expr::Cast(t, Box::new(v)) })
    }
}

/// The lowest (or highest) value of a type, as `T.min_value` gives it.
pub(crate) fn limit(t: DType, max: bool) -> Option<Expr> {
    let pick = |lo: f64, hi: f64| Expr::Float(if max { hi } else { lo }, t);
    Some(match t {
        DType::Float(16) => pick(-65504.0, 65504.0),
        DType::BFloat16 => pick(-3.3895313892515355e38, 3.3895313892515355e38),
        DType::Float(32) => pick(f32::MIN as f64, f32::MAX as f64),
        DType::Float(64) => pick(f64::MIN, f64::MAX),
        DType::Int(8) => Expr::Int(if max { i8::MAX as i64 } else { i8::MIN as i64 }, t),
        DType::Int(16) => Expr::Int(if max { i16::MAX as i64 } else { i16::MIN as i64 }, t),
        DType::Int(32) => Expr::Int(if max { i32::MAX as i64 } else { i32::MIN as i64 }, t),
        DType::Int(64) => Expr::Int(if max { i64::MAX } else { i64::MIN }, t),
        DType::UInt(b) if b < 64 => Expr::Int(if max { (1i64 << b) - 1 } else { 0 }, t),
        _ => return None,
    })
}

/// `x`, when it is an integer (an index, a bound, an extent); else the
/// error `"{what}, not float32"` at `span`.
pub(crate) fn integer(x: Expr, span: Span, what: &str) -> R<Expr> {
    if x.dtype().is_int() {
        Ok(x)
    } else {
        Err(Diagnostic::at(span, format!("{what}, not {}", x.dtype())))
    }
}

pub(crate) fn is_literal(e: &Expr) -> bool {
    matches!(e, Expr::Int(..) | Expr::Float(..))
}

/// The values of an integer type (not bool), lowest and highest.
fn int_range(t: DType) -> Option<(i64, i64)> {
    match t {
        DType::Int(b @ 8..=64) => Some((i64::MIN >> (64 - b), i64::MAX >> (64 - b))),
        DType::UInt(b @ 8..=32) => Some((0, (1i64 << b) - 1)),
        DType::UInt(64) => Some((0, i64::MAX)),
        _ => None,
    }
}

/// A literal of another type with the same value.
fn retype(e: Expr, t: DType) -> Expr {
    match e {
        Expr::Int(v, _) if t.is_float() => Expr::Float(v as f64, t),
        Expr::Int(v, _) if t.is_bool() => Expr::bool(v != 0),
        Expr::Int(v, _) => Expr::Int(v, t),
        Expr::Float(v, _) if t.is_float() => Expr::Float(v, t),
        Expr::Float(v, _) if t.is_bool() => Expr::bool(v != 0.0),
        Expr::Float(v, _) => Expr::Int(v as i64, t),
        e => e,
    }
}

fn zero_of(t: DType) -> Expr {
    if t.is_float() {
        Expr::Float(0.0, t)
    } else {
        Expr::Int(0, t)
    }
}

/// Indices of a view of shape `view` turned into indices of a buffer of shape
/// `base` over the same row-major memory.
fn reindex(idx: &[Expr], view: &[Expr], base: &[Expr]) -> Vec<Expr> {
    let mut flat = Expr::int(0);
    for (i, (x, _)) in idx.iter().zip(view).enumerate() {
        let stride: i64 = view[i + 1..].iter().filter_map(|e| e.as_int()).product();
        let term = if stride == 1 { x.clone() } else { x.clone() * Expr::int(stride) };
        flat = if i == 0 { term } else { flat + term };
    }
    let mut out = Vec::new();
    for (d, ext) in base.iter().enumerate() {
        let stride: i64 = base[d + 1..].iter().filter_map(|e| e.as_int()).product();
        let mut e =
            if stride == 1 { flat.clone() } else { Expr::binary(BinOp::FloorDiv, flat.clone(), Expr::int(stride)) };
        if d > 0 {
            e = Expr::binary(BinOp::FloorMod, e, ext.clone());
        }
        out.push(e);
    }
    out
}

/// The indices of a subscript: `C[()]`, the element of a buffer of no
/// dimensions, has none.
pub(crate) fn element_indices(indices: &[ast::Expr]) -> &[ast::Expr] {
    match indices {
        [ast::Expr { kind: ExprKind::Tuple(items), .. }] if items.is_empty() => &[],
        _ => indices,
    }
}

/// `a op b` for a bitwise operation or a shift: integers only (`&`, `|` and
/// `^` of two conditions are `and`, `or` and `!=`), folded on literals.
fn bitwise(op: BinOp, a: Expr, b: Expr, span: Span) -> R<Expr> {
    let t = a.dtype();
    if t.is_bool() {
        return match op {
            BinOp::BitAnd => Ok(Expr::binary(BinOp::And, a, b)),
            BinOp::BitOr => Ok(Expr::binary(BinOp::Or, a, b)),
            BinOp::BitXor => Ok(Expr::binary(BinOp::Ne, a, b)),
            _ => Err(Diagnostic::at(span, "a shift of a boolean is not allowed")),
        };
    }
    if !t.is_int() {
        return Err(Diagnostic::at(span, format!("bitwise operations and shifts need integer operands, not {t}")));
    }
    if let (BinOp::Shl | BinOp::Shr, Some(s)) = (op, b.as_int()) {
        let bits = t.bytes() as i64 * 8;
        if !(0..bits).contains(&s) {
            return Err(Diagnostic::at(
                span,
                format!("shifting {t} by {s}: the amount must be from 0 to {}", bits - 1),
            ));
        }
    }
    Ok(Expr::folded(op, a, b))
}

/// `~a`: every bit of an integer flipped (`a ^ all ones`), `not` of a
/// condition.
fn invert(a: Expr, span: Span) -> R<Expr> {
    let t = a.dtype();
    if t.is_bool() {
        return Ok(Expr::Not(Box::new(a)));
    }
    if !t.is_int() {
        return Err(Diagnostic::at(span, format!("`~` needs an integer operand, not {t}")));
    }
    let ones = match t {
        DType::UInt(bits) if bits < 64 => (1i64 << bits) - 1,
        _ => -1,
    };
    Ok(Expr::folded(BinOp::BitXor, a, Expr::Int(ones, t)))
}

/// Floor division and its remainder of floats, as TVM defines them:
/// `floordiv(a, b) = floor(a / b)`, `floormod(a, b) = a - floor(a / b) * b`.
fn float_floor_div(op: BinOp, a: Expr, b: Expr) -> Expr {
    let q = Expr::Call(crate::expr::Intrinsic::Floor, vec![Expr::binary(BinOp::Div, a.clone(), b.clone())]);
    match op {
        BinOp::FloorMod => Expr::binary(BinOp::Sub, a, Expr::binary(BinOp::Mul, q, b)),
        _ => q,
    }
}
