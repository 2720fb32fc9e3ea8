//! The schedule interpreter: runs a `@tirc.schedule` script, the subset of
//! Python that TVM schedule scripts use, against a `Schedule`.
//!
//! Values are integers, strings, booleans, `None`, lists and tuples, loop
//! and block handles, lambdas (index maps) and the schedule itself. `sch.<primitive>(...)` calls
//! take TVM's argument names and order. Every error, whether the script's
//! own (an unknown name) or a primitive's refusal, is a diagnostic at the
//! span of the expression at fault.

use super::loop_kind::Target;
use super::registry::{self, Args, Kind, Out, Step};
use super::transform_layout::{BufferRef, IndexMap};
use super::Schedule;
use crate::common::pipeline;
use tirc_ir::diag::{did_you_mean, Diagnostic};
use tirc_ir::func::{Module, ParamValue, ScheduleDef};
use tirc_ir::{Attr, BinOp, Expr, Var};
use tirc_parser::ast::{self, Arg, ExprKind, Span, StmtKind};

#[derive(Clone, Debug)]
enum Value {
    None,
    Int(i64),
    /// A float is only passed on (`sample_categorical`'s `probs`, an
    /// annotation's value): a schedule computes with integers.
    Float(f64),
    Str(String),
    Bool(bool),
    List(Vec<Value>),
    Tuple(Vec<Value>),
    Loop(Var),
    Block(String),
    /// Where `sample_compute_location` puts a block when no loop does:
    /// at the root (`compute_at` to it changes nothing) or inlined
    /// (`compute_at` to it is `compute_inline`).
    Location(registry::Location),
    /// `lambda a, b: body`, turned into IR where a primitive takes it.
    Lambda(Vec<String>, Box<ast::Expr>),
    Sch,
}

impl Value {
    fn kind(&self) -> &'static str {
        match self {
            Value::None => "None",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a float",
            Value::Str(_) => "a string",
            Value::Bool(_) => "a boolean",
            Value::List(_) => "a list",
            Value::Tuple(_) => "a tuple",
            Value::Loop(_) => "a loop",
            Value::Block(_) => "a block",
            Value::Location(_) => "a compute location",
            Value::Lambda(..) => "a lambda",
            Value::Sch => "the schedule",
        }
    }

    /// Every handle of block `old`, in this value and the lists and tuples
    /// it holds, made a handle of block `new`.
    fn rename_block(&mut self, old: &str, new: &str) {
        match self {
            Value::Block(b) if b == old => *b = new.to_string(),
            Value::List(vs) | Value::Tuple(vs) => vs.iter_mut().for_each(|v| v.rename_block(old, new)),
            _ => {}
        }
    }
}

type R<T> = Result<T, Diagnostic>;

/// Positional and keyword arguments of a call, with their spans.
type CallArgs = (Vec<(Value, Span)>, Vec<(String, Value, Span)>);

/// Runs the schedule `def` on a fresh schedule of its function. `params`
/// override the script's parameter defaults.
pub fn run_schedule(module: &Module, def: &ScheduleDef, params: &[(String, String)]) -> R<Schedule> {
    run_schedule_observed(module, def, params, &mut |_, _| {})
}

/// Like `run_schedule`, calling `observe(step, function)` after every
/// primitive that changed the function, with the step as the trace prints
/// it.
pub fn run_schedule_observed(
    module: &Module,
    def: &ScheduleDef,
    params: &[(String, String)],
    observe: &mut dyn FnMut(&str, &tirc_ir::PrimFunc),
) -> R<Schedule> {
    let func = module.func(&def.func).ok_or_else(|| {
        did_you_mean(
            Diagnostic::at(
                def.span,
                format!("schedule `{}` is for `{}`, but the file has no prim_func of that name", def.name, def.func),
            ),
            &def.func,
            module.funcs.iter().map(|f| f.name.as_str()),
        )
    })?;
    let mut env: Vec<(String, Value)> = vec![(def.handle.clone(), Value::Sch)];
    for c in &module.constants {
        env.push((c.name.clone(), Value::Int(c.value)));
    }
    for (name, _) in params {
        if !def.params.iter().any(|p| &p.name == name) {
            let d = Diagnostic::new(format!("-p {name}: schedule `{}` has no parameter `{name}`", def.name));
            // A module constant given as a parameter: `-D` sets those.
            if module.constants.iter().any(|c| &c.name == name) {
                return Err(d.help(format!("`{name}` is a module constant: give it with `-D {name}=..`")));
            }
            return Err(did_you_mean(d, name, def.params.iter().map(|p| p.name.as_str())));
        }
    }
    for p in &def.params {
        let v = match params.iter().rev().find(|(n, _)| n == &p.name) {
            Some((_, raw)) => match (&p.default, raw.parse::<i64>()) {
                (ParamValue::Int(_), Ok(v)) => Value::Int(v),
                (ParamValue::Int(_), Err(_)) => {
                    return Err(Diagnostic::new(format!("-p {}={raw}: `{}` is an integer parameter", p.name, p.name)))
                }
                (ParamValue::Str(_), _) => Value::Str(raw.trim_matches('"').to_string()),
            },
            None => match &p.default {
                ParamValue::Int(v) => Value::Int(*v),
                ParamValue::Str(s) => Value::Str(s.clone()),
            },
        };
        env.push((p.name.clone(), v));
    }
    let mut it =
        Interp { sch: Schedule::new(func.clone()), handles: Vec::new(), env, observe, pipelines: Vec::new(), steps: 0 };
    it.block(&def.body)?;
    // Software pipeline annotations are checked against the loop body as
    // the schedule leaves it, and reported at the line that made them.
    let mut bad = None;
    it.sch.func.body.walk(&mut |s| {
        if let tirc_ir::Stmt::For(l) = s {
            if l.annotations.iter().any(|(k, _)| k == pipeline::STAGE) && bad.is_none() {
                if let Err(e) = pipeline::check(&it.sch.func.body, l, &it.sch.func.sizes) {
                    let span = it.pipelines.iter().rev().find(|(v, _)| v == &l.var).map_or(def.span, |(_, sp)| *sp);
                    bad = Some(e.or_at(span));
                }
            }
        }
    });
    match bad {
        Some(e) => Err(e),
        None => Ok(it.sch),
    }
}

struct Interp<'o> {
    sch: Schedule,
    /// The handles the replay script has given so far: a loop's name and
    /// the loop it names (a name can come back for a new loop), or a
    /// block's name (`None`). The variable itself is held, not its address:
    /// a freed variable's address can come back for a new loop of the same
    /// name, which then looked as if it had its handle already.
    handles: Vec<(String, Option<Var>)>,
    env: Vec<(String, Value)>,
    observe: &'o mut dyn FnMut(&str, &tirc_ir::PrimFunc),
    /// The loops given software pipeline annotations, with the span of the
    /// `sch.annotate` call.
    pipelines: Vec<(Var, Span)>,
    /// Statements run so far, against [`MAX_STEPS`].
    steps: u64,
}

/// The most statements a schedule may run: a schedule is a short script,
/// and one that loops past this is refused rather than left to run for
/// hours.
const MAX_STEPS: u64 = 2_000_000;

enum Flow {
    Next,
    Break,
    Continue,
    Return,
}

impl Interp<'_> {
    fn block(&mut self, body: &[ast::Stmt]) -> R<Flow> {
        for s in body {
            match self.stmt(s)? {
                Flow::Next => {}
                f => return Ok(f),
            }
        }
        Ok(Flow::Next)
    }

    fn stmt(&mut self, s: &ast::Stmt) -> R<Flow> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return Err(Diagnostic::at(s.span, format!("the schedule runs more than {MAX_STEPS} statements"))
                .help("a schedule is a script of primitives: loop over the blocks and loops it names, not over data"));
        }
        match &s.kind {
            StmtKind::Expr(e) => {
                self.expr(e)?;
            }
            StmtKind::Assign { targets, value } => {
                let v = self.expr(value)?;
                for t in targets {
                    self.assign(t, v.clone())?;
                }
            }
            StmtKind::AugAssign { target, op, value } => {
                let cur = self.expr(target)?;
                let rhs = self.expr(value)?;
                let v = self.arith(*op, cur, rhs, s.span)?;
                self.assign(target, v)?;
            }
            StmtKind::For { target, iter, body } => {
                let items = match self.expr(iter)? {
                    Value::List(v) | Value::Tuple(v) => v,
                    other => return Err(Diagnostic::at(iter.span, format!("cannot loop over {}", other.kind()))),
                };
                for item in items {
                    self.assign(target, item)?;
                    match self.block(body)? {
                        Flow::Break => break,
                        Flow::Return => return Ok(Flow::Return),
                        _ => {}
                    }
                }
            }
            StmtKind::If { cond, body, orelse } => {
                let c = self.expr(cond)?;
                return if truthy(&c) { self.block(body) } else { self.block(orelse) };
            }
            StmtKind::Assert { cond, msg } => {
                if !truthy(&self.expr(cond)?) {
                    let m = match msg {
                        Some(m) => match self.expr(m)? {
                            Value::Str(s) => s,
                            v => format!("{v:?}"),
                        },
                        None => "assertion failed".into(),
                    };
                    return Err(Diagnostic::at(s.span, m));
                }
            }
            StmtKind::Pass | StmtKind::Import { .. } => {}
            StmtKind::Break => return Ok(Flow::Break),
            StmtKind::Continue => return Ok(Flow::Continue),
            StmtKind::Return(_) => return Ok(Flow::Return),
            _ => return Err(Diagnostic::at(s.span, "this statement is not allowed in a schedule")),
        }
        Ok(Flow::Next)
    }

    fn assign(&mut self, t: &ast::Expr, v: Value) -> R<()> {
        match &t.kind {
            // A name assigned again takes its new value in place (one flat
            // scope): pushed each time, a loop's names would make every
            // lookup of an older one, `sch`, slower (10^5 iterations took
            // 14 s).
            ExprKind::Name(n) => {
                match self.env.iter_mut().rev().find(|(k, _)| k == n) {
                    Some(slot) => slot.1 = v,
                    None => self.env.push((n.clone(), v)),
                }
                Ok(())
            }
            ExprKind::Tuple(ts) | ExprKind::List(ts) => {
                let items = match v {
                    Value::List(x) | Value::Tuple(x) => x,
                    other => {
                        return Err(Diagnostic::at(
                            t.span,
                            format!("cannot unpack {} into {} names", other.kind(), ts.len()),
                        ))
                    }
                };
                if items.len() != ts.len() {
                    return Err(Diagnostic::at(
                        t.span,
                        format!("{} values to unpack into {} names", items.len(), ts.len()),
                    ));
                }
                for (t, v) in ts.iter().zip(items) {
                    self.assign(t, v)?;
                }
                Ok(())
            }
            _ => Err(Diagnostic::at(t.span, "cannot assign to this")),
        }
    }

    fn lookup(&self, n: &str, span: Span) -> R<Value> {
        match self.env.iter().rev().find(|(k, _)| k == n) {
            Some((_, v)) => Ok(v.clone()),
            None => {
                let names = self.env.iter().map(|(k, _)| k.as_str());
                Err(did_you_mean(Diagnostic::at(span, format!("unknown name `{n}`")), n, names))
            }
        }
    }

    fn expr(&mut self, e: &ast::Expr) -> R<Value> {
        match &e.kind {
            ExprKind::Int(v) => Ok(Value::Int(*v)),
            ExprKind::Str(s) => Ok(Value::Str(s.clone())),
            ExprKind::Bool(b) => Ok(Value::Bool(*b)),
            ExprKind::None => Ok(Value::None),
            ExprKind::Float(v) => Ok(Value::Float(*v)),
            ExprKind::Name(n) => self.lookup(n, e.span),
            ExprKind::List(v) => Ok(Value::List(self.exprs(v)?)),
            ExprKind::Tuple(v) => Ok(Value::Tuple(self.exprs(v)?)),
            ExprKind::Unary { op, operand } => {
                let v = self.expr(operand)?;
                match (op, v) {
                    (ast::UnaryOp::Neg, Value::Int(i)) => {
                        i.checked_neg().map(Value::Int).ok_or_else(|| Diagnostic::at(e.span, "integer overflow"))
                    }
                    (ast::UnaryOp::Pos, Value::Int(i)) => Ok(Value::Int(i)),
                    (ast::UnaryOp::Neg, Value::Float(x)) => Ok(Value::Float(-x)),
                    (ast::UnaryOp::Pos, Value::Float(x)) => Ok(Value::Float(x)),
                    (ast::UnaryOp::Not, v) => Ok(Value::Bool(!truthy(&v))),
                    (_, v) => Err(Diagnostic::at(e.span, format!("cannot negate {}", v.kind()))),
                }
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let a = self.expr(lhs)?;
                let b = self.expr(rhs)?;
                self.arith(*op, a, b, e.span)
            }
            ExprKind::Compare { first, rest } => {
                let mut lhs = self.expr(first)?;
                for (op, r) in rest {
                    let rhs = self.expr(r)?;
                    if !compare(*op, &lhs, &rhs).ok_or_else(|| Diagnostic::at(e.span, "cannot compare these values"))? {
                        return Ok(Value::Bool(false));
                    }
                    lhs = rhs;
                }
                Ok(Value::Bool(true))
            }
            ExprKind::BoolOp { op, operands } => {
                let mut last = Value::Bool(*op == ast::BoolOp::And);
                for o in operands {
                    last = self.expr(o)?;
                    if truthy(&last) != (*op == ast::BoolOp::And) {
                        return Ok(last);
                    }
                }
                Ok(last)
            }
            ExprKind::Lambda { params, body } => {
                Ok(Value::Lambda(params.iter().map(|p| p.name.clone()).collect(), body.clone()))
            }
            ExprKind::IfExp { cond, then, orelse } => {
                if truthy(&self.expr(cond)?) {
                    self.expr(then)
                } else {
                    self.expr(orelse)
                }
            }
            ExprKind::Subscript { value, indices } => {
                let v = self.expr(value)?;
                let [idx] = &indices[..] else {
                    return Err(Diagnostic::at(e.span, "index with one value or slice"));
                };
                self.subscript(v, idx)
            }
            ExprKind::Call { func, args } => self.call(func, args, e.span),
            _ => Err(Diagnostic::at(e.span, "this expression is not allowed in a schedule")),
        }
    }

    /// The values of a tuple's or a list's items, `*e` unpacked in place.
    fn exprs(&mut self, v: &[ast::Expr]) -> R<Vec<Value>> {
        let mut out = Vec::new();
        for x in v {
            match &x.kind {
                ExprKind::Starred(inner) => match self.expr(inner)? {
                    Value::List(items) | Value::Tuple(items) => out.extend(items),
                    o => return Err(Diagnostic::at(x.span, format!("cannot unpack {} with `*`", o.kind()))),
                },
                _ => out.push(self.expr(x)?),
            }
        }
        Ok(out)
    }

    fn subscript(&mut self, v: Value, idx: &ast::Expr) -> R<Value> {
        let (Value::List(items) | Value::Tuple(items)) = &v else {
            return Err(Diagnostic::at(idx.span, format!("cannot index {}", v.kind())));
        };
        let n = items.len() as i64;
        let norm = |i: i64| if i < 0 { i + n } else { i };
        if let ExprKind::Slice { lo, hi, step } = &idx.kind {
            let step = match step {
                Some(s) => match self.expr(s)? {
                    Value::Int(0) => return Err(Diagnostic::at(s.span, "a slice step cannot be zero")),
                    Value::Int(i) => i,
                    _ => 1,
                },
                None => 1,
            };
            let mut get = |x: &Option<Box<ast::Expr>>, d: i64| -> R<i64> {
                match x {
                    Some(x) => match self.expr(x)? {
                        Value::Int(i) => Ok(norm(i).clamp(0, n)),
                        Value::None => Ok(d),
                        o => Err(Diagnostic::at(x.span, format!("a slice bound must be an integer, not {}", o.kind()))),
                    },
                    None => Ok(d),
                }
            };
            let out: Vec<Value> = if step > 0 {
                let (a, b) = (get(lo, 0)?, get(hi, n)?);
                (a..b.max(a)).step_by(step as usize).map(|i| items[i as usize].clone()).collect()
            } else {
                let a = get(lo, n - 1)?.min(n - 1);
                let b = get(hi, -1)?;
                let mut v = Vec::new();
                let mut i = a;
                while i > b && i >= 0 {
                    v.push(items[i as usize].clone());
                    i += step;
                }
                v
            };
            return Ok(Value::List(out));
        }
        match self.expr(idx)? {
            Value::Int(i) if (0..n).contains(&norm(i)) => Ok(items[norm(i) as usize].clone()),
            Value::Int(i) => Err(Diagnostic::at(idx.span, format!("index {i} is out of range for {n} items"))),
            o => Err(Diagnostic::at(idx.span, format!("an index must be an integer, not {}", o.kind()))),
        }
    }

    /// A lambda as an index map: its parameters become variables, its body
    /// (a tuple, or one expression) integer IR over them; other names are
    /// looked up and must be integers.
    fn index_map(&self, params: &[String], body: &ast::Expr) -> R<IndexMap> {
        let vars: Vec<Var> = params.iter().map(|p| Var::new(p.clone(), tirc_ir::DType::I32)).collect();
        let items: Vec<&ast::Expr> = match &body.kind {
            ExprKind::Tuple(v) | ExprKind::List(v) => v.iter().collect(),
            _ => vec![body],
        };
        let mut results = Vec::new();
        for e in items {
            match &e.kind {
                ExprKind::Starred(inner) => results.extend(self.layout_call(inner, &vars)?),
                _ => results.push(self.index_expr(e, &vars)?),
            }
        }
        Ok(IndexMap { params: vars, results })
    }

    /// `*shared_16x16_to_ldmatrix_32x8_layout(i, j)` in an index map (TVM's
    /// `tvm.tir.tensor_intrin.cuda` helper, under any module path): the
    /// lane and the element of a 16×16 tile's `(i, j)` in a `[32, 8]` warp
    /// tile (`tirc_ir::wmma::warp_layout`); or `*(a, b)`.
    fn layout_call(&self, e: &ast::Expr, vars: &[Var]) -> R<Vec<Expr>> {
        const LAYOUT: &str = "shared_16x16_to_ldmatrix_32x8_layout";
        match &e.kind {
            ExprKind::Tuple(items) => items.iter().map(|x| self.index_expr(x, vars)).collect(),
            ExprKind::Call { func, args } if matches!(&func.kind, ExprKind::Name(n) | ExprKind::Attribute { attr: tirc_parser::ast::Ident { name: n, .. }, .. } if n == LAYOUT) =>
            {
                let [ast::Arg::Positional(i), ast::Arg::Positional(j)] = &args[..] else {
                    return Err(Diagnostic::at(e.span, format!("{LAYOUT} takes two indices, (i, j) of a 16x16 tile")));
                };
                let (i, j) = (self.index_expr(i, vars)?, self.index_expr(j, vars)?);
                let (lane, elem) = tirc_ir::wmma::warp_layout_exprs(i, j);
                Ok(vec![lane, elem])
            }
            _ => Err(Diagnostic::at(
                e.span,
                format!("an index map unpacks (`*`) a tuple or {LAYOUT}(i, j), nothing else"),
            )),
        }
    }

    fn index_expr(&self, e: &ast::Expr, vars: &[Var]) -> R<Expr> {
        use ast::BinOp as B;
        match &e.kind {
            ExprKind::Int(v) => Ok(Expr::int(*v)),
            ExprKind::Name(n) => match vars.iter().find(|v| v.name() == n) {
                Some(v) => Ok(Expr::var(v)),
                None => match self.lookup(n, e.span)? {
                    Value::Int(i) => Ok(Expr::int(i)),
                    v => {
                        Err(Diagnostic::at(e.span, format!("`{n}` is {} here; an index map takes integers", v.kind())))
                    }
                },
            },
            ExprKind::Unary { op: ast::UnaryOp::Neg, operand } => {
                Ok(Expr::folded(BinOp::Sub, Expr::int(0), self.index_expr(operand, vars)?))
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let op = match op {
                    B::Add => BinOp::Add,
                    B::Sub => BinOp::Sub,
                    B::Mul => BinOp::Mul,
                    B::FloorDiv => BinOp::FloorDiv,
                    B::Mod => BinOp::FloorMod,
                    _ => return Err(Diagnostic::at(e.span, "an index map takes + - * // % only")),
                };
                Ok(Expr::folded(op, self.index_expr(lhs, vars)?, self.index_expr(rhs, vars)?))
            }
            _ => Err(Diagnostic::at(e.span, "an index map's results are integer expressions of its parameters")),
        }
    }

    fn arith(&self, op: ast::BinOp, a: Value, b: Value, span: Span) -> R<Value> {
        use ast::BinOp as B;
        match (op, a, b) {
            (_, Value::Int(x), Value::Int(y)) => {
                let r = match op {
                    B::Add => x.checked_add(y),
                    B::Sub => x.checked_sub(y),
                    B::Mul => x.checked_mul(y),
                    B::FloorDiv | B::Mod if y == 0 => return Err(Diagnostic::at(span, "division by zero")),
                    B::FloorDiv => x.checked_div(y).map(|_| tirc_ir::expr::floor_div(x, y)),
                    B::Mod => Some(tirc_ir::expr::floor_mod(x, y)),
                    B::Pow if (0..63).contains(&y) => x.checked_pow(y as u32),
                    _ => return Err(Diagnostic::at(span, "this operator is not supported in a schedule")),
                };
                r.map(Value::Int).ok_or_else(|| Diagnostic::at(span, "integer overflow"))
            }
            (B::Add, Value::List(x), Value::List(y)) => Ok(Value::List([x, y].concat())),
            (B::Add, Value::Tuple(x), Value::Tuple(y)) => Ok(Value::Tuple([x, y].concat())),
            (B::Add, Value::Str(x), Value::Str(y)) => Ok(Value::Str(x + &y)),
            (_, a, b) => Err(Diagnostic::at(span, format!("cannot combine {} and {}", a.kind(), b.kind()))),
        }
    }

    /// Evaluates call arguments, expanding `*list`.
    fn args(&mut self, args: &[Arg]) -> R<CallArgs> {
        let mut pos = Vec::new();
        let mut kw = Vec::new();
        for a in args {
            match a {
                Arg::Positional(e) => pos.push((self.expr(e)?, e.span)),
                Arg::Star(e) => match self.expr(e)? {
                    Value::List(v) | Value::Tuple(v) => pos.extend(v.into_iter().map(|x| (x, e.span))),
                    o => return Err(Diagnostic::at(e.span, format!("cannot expand {} with `*`", o.kind()))),
                },
                Arg::Keyword(k, e) => kw.push((k.name.clone(), self.expr(e)?, k.span.to(e.span))),
                Arg::DoubleStar(e) => return Err(Diagnostic::at(e.span, "`**` arguments are not supported")),
            }
        }
        Ok((pos, kw))
    }

    fn call(&mut self, func: &ast::Expr, args: &[Arg], span: Span) -> R<Value> {
        if let ExprKind::Attribute { value, attr } = &func.kind {
            if let Value::Sch = self.expr(value)? {
                let (pos, kw) = self.args(args)?;
                // The handles a replay needs for this step, from the function
                // as it is before the step.
                let mut defs = Vec::new();
                let mut handles = self.handles.clone();
                for v in pos.iter().map(|p| &p.0).chain(kw.iter().map(|k| &k.1)) {
                    self.define(v, &mut handles, &mut defs);
                }
                let (out, step) = self.primitive(&attr.name, attr.span, pos, kw, span)?;
                if let Some(step) = step {
                    // The loops and blocks the step made point at its line.
                    self.sch.func.body.stamp_spans(span);
                    self.handles = handles;
                    self.sch.replay.extend(defs);
                    self.assigned(&step.out);
                    let line = step.to_string();
                    self.sch.replay.push(line.clone());
                    self.sch.trace.push(step);
                    (self.observe)(&line, &self.sch.func);
                }
                return Ok(out);
            }
        }
        let ExprKind::Name(name) = &func.kind else {
            return Err(Diagnostic::at(func.span, "only schedule primitives and a few built-ins can be called here"));
        };
        let (pos, _) = self.args(args)?;
        let ints = |pos: &[(Value, Span)]| -> R<Vec<i64>> {
            pos.iter()
                .map(|(v, s)| match v {
                    Value::Int(i) => Ok(*i),
                    o => Err(Diagnostic::at(*s, format!("expected an integer, not {}", o.kind()))),
                })
                .collect()
        };
        match name.as_str() {
            "range" => {
                let v = ints(&pos)?;
                let (a, b, st) = match v[..] {
                    [b] => (0, b, 1),
                    [a, b] => (a, b, 1),
                    [a, b, s] if s != 0 => (a, b, s),
                    _ => return Err(Diagnostic::at(span, "range takes 1 to 3 integers, and a non-zero step")),
                };
                let mut out = Vec::new();
                let mut i = a;
                while (st > 0 && i < b) || (st < 0 && i > b) {
                    out.push(Value::Int(i));
                    i += st;
                    if out.len() > 1_000_000 {
                        return Err(Diagnostic::at(span, "range is too long"));
                    }
                }
                Ok(Value::List(out))
            }
            "len" => match &pos[..] {
                [(Value::List(v) | Value::Tuple(v), _)] => Ok(Value::Int(v.len() as i64)),
                [(Value::Str(s), _)] => Ok(Value::Int(s.chars().count() as i64)),
                _ => Err(Diagnostic::at(span, "len takes one list")),
            },
            "min" | "max" => {
                let v = ints(&pos)?;
                let r = if name == "min" { v.iter().min() } else { v.iter().max() };
                r.map(|x| Value::Int(*x)).ok_or_else(|| Diagnostic::at(span, format!("{name} needs arguments")))
            }
            "list" | "tuple" => match pos.into_iter().next() {
                Some((Value::List(v) | Value::Tuple(v), _)) => {
                    Ok(if name == "list" { Value::List(v) } else { Value::Tuple(v) })
                }
                None => Ok(Value::List(vec![])),
                Some((o, s)) => Err(Diagnostic::at(s, format!("cannot make a list of {}", o.kind()))),
            },
            "print" => Ok(Value::None),
            // An intrinsic's name built from a parameter: "wgmma_m64n" + str(BN) + ...
            "str" => match &pos[..] {
                [(Value::Int(i), _)] => Ok(Value::Str(i.to_string())),
                [(Value::Str(s), _)] => Ok(Value::Str(s.clone())),
                _ => Err(Diagnostic::at(span, "str takes one integer or string")),
            },
            _ => Err(did_you_mean(
                Diagnostic::at(func.span, format!("unknown function `{name}`")),
                name,
                ["range", "len", "min", "max", "list", "tuple", "print", "str"],
            )),
        }
    }

    /// Applies the primitive `name` (found in the registry) to the call's
    /// arguments, checked against its signature; gives its value to the
    /// script and, for a step, the `Step` to record.
    fn primitive(
        &mut self,
        name: &str,
        name_span: Span,
        pos: Vec<(Value, Span)>,
        kw: Vec<(String, Value, Span)>,
        span: Span,
    ) -> R<(Value, Option<Step>)> {
        // `compute_at` to a location `sample_compute_location` gave: at the
        // root nothing moves; inlined, the block is inlined.
        if matches!(name, "compute_at" | "reverse_compute_at") {
            let loc = pos.iter().map(|p| &p.0).chain(kw.iter().map(|k| &k.1)).find_map(|v| match v {
                Value::Location(l) => Some(*l),
                _ => None,
            });
            match loc {
                Some(registry::Location::Root) => return Ok((Value::None, None)),
                Some(registry::Location::Inline) => {
                    let block: Vec<(Value, Span)> = match kw.iter().find(|k| k.0 == "block") {
                        Some((_, v, s)) => vec![(v.clone(), *s)],
                        None => pos.into_iter().take(1).collect(),
                    };
                    let inline = if name == "compute_at" { "compute_inline" } else { "reverse_compute_inline" };
                    return self.primitive(inline, name_span, block, vec![], span);
                }
                None => {}
            }
        }
        let Some(prim) = registry::find(name) else {
            if registry::NOT_YET.contains(&name) {
                return Err(Diagnostic::at(name_span, format!("tirc does not implement `sch.{name}` yet"))
                    .code(super::ErrorKind::Unsupported.code()));
            }
            return Err(did_you_mean(
                Diagnostic::at(name_span, format!("unknown schedule primitive `{name}`")),
                name,
                registry::PRIMITIVES.iter().map(|p| p.name),
            ));
        };
        let args = self.check_args(prim, pos, kw, span)?;
        if name == "annotate" {
            if let (Some(registry::Arg::Target(Target::Loop(l))), Some(registry::Arg::Str(key))) =
                (&args.0[0], &args.0[1])
            {
                if key.starts_with("software_pipeline") {
                    self.pipelines.push((l.clone(), span));
                }
            }
        }
        let out = (prim.apply)(&mut self.sch, &args).map_err(|e| {
            let d = Diagnostic::at(span, e.message).code(e.kind.code());
            match e.help {
                Some(h) => d.help(h),
                None => d,
            }
        })?;
        // Handles follow the blocks the primitive renamed.
        for (old, new) in std::mem::take(&mut self.sch.renamed) {
            for (_, v) in self.env.iter_mut() {
                v.rename_block(&old, &new);
            }
        }
        let value = match &out {
            Out::None => Value::None,
            Out::Block(b) => Value::Block(b.clone()),
            Out::Blocks(bs) => Value::List(bs.iter().cloned().map(Value::Block).collect()),
            Out::Loop(l) => Value::Loop(l.clone()),
            Out::Loops(ls) => Value::List(ls.iter().cloned().map(Value::Loop).collect()),
            Out::Int(v) => Value::Int(*v),
            Out::Ints(vs) => Value::List(vs.iter().copied().map(Value::Int).collect()),
            Out::Location(l) => Value::Location(*l),
        };
        let step = prim.step.then_some(Step { primitive: prim, args, out });
        Ok((value, step))
    }

    /// Matches a call's arguments to the primitive's signature and checks
    /// each against its kind.
    fn check_args(
        &self,
        prim: &registry::Primitive,
        pos: Vec<(Value, Span)>,
        kw: Vec<(String, Value, Span)>,
        span: Span,
    ) -> R<Args> {
        let name = prim.name;
        let bad = |s: Span, m: String| Diagnostic::at(s, m).code(super::ErrorKind::BadArgument.code());
        // A variadic primitive: every positional argument is a loop or a
        // list of loops.
        let (pos, kw) = if prim.params.first().is_some_and(|p| p.kind == Kind::Loops) {
            let mut loops = Vec::new();
            for (v, s) in &pos {
                match v {
                    Value::Loop(l) => loops.push(l.clone()),
                    Value::List(items) | Value::Tuple(items) => {
                        for it in items {
                            loops.push(self.as_loop(it, *s)?);
                        }
                    }
                    o => return Err(bad(*s, format!("expected a loop, not {}", o.kind()))),
                }
            }
            (vec![(Value::List(loops.into_iter().map(Value::Loop).collect()), span)], kw)
        } else {
            (pos, kw)
        };
        let sig: Vec<&str> = prim.params.iter().map(|p| p.name).collect();
        let given = bind_args(name, &sig, pos, kw, span)?;
        let mut args = Vec::new();
        for (p, a) in prim.params.iter().zip(given) {
            let Some((v, s)) = a else {
                if p.required {
                    return Err(bad(span, format!("`{name}` needs the argument `{}`", p.name)));
                }
                args.push(None);
                continue;
            };
            let want = |what: &str| bad(s, format!("`{}` must be {what}, not {}", p.name, v.kind()));
            let arg = match (p.kind, &v) {
                (Kind::Ignored, _) => {
                    args.push(None);
                    continue;
                }
                // An argument tirc does not take yet, given its default
                // (`pad_value=None`, as TVM's traces print it).
                (Kind::NotYet, Value::None) => {
                    args.push(None);
                    continue;
                }
                (Kind::NotYet, _) => {
                    return Err(Diagnostic::at(s, format!("tirc does not take `{}` of `{name}` yet", p.name))
                        .code(super::ErrorKind::Unsupported.code()))
                }
                (Kind::Block, Value::Block(b) | Value::Str(b)) => registry::Arg::Block(b.clone()),
                (Kind::Block, _) => return Err(want("a block")),
                (Kind::Loop, Value::Loop(l)) => registry::Arg::Loop(l.clone()),
                (Kind::Loop, _) => return Err(want("a loop")),
                (Kind::BlockOrLoop, Value::Block(b)) => registry::Arg::Target(Target::Block(b.clone())),
                (Kind::BlockOrLoop, Value::Loop(l)) => registry::Arg::Target(Target::Loop(l.clone())),
                (Kind::BlockOrLoop, _) => return Err(want("a block or a loop")),
                (Kind::Loops, Value::List(items)) => {
                    registry::Arg::Loops(items.iter().map(|x| self.as_loop(x, s)).collect::<R<_>>()?)
                }
                (Kind::Loops, _) => return Err(want("a list of loops")),
                (Kind::Blocks, Value::List(items) | Value::Tuple(items)) => registry::Arg::Blocks(
                    items
                        .iter()
                        .map(|x| match x {
                            Value::Block(b) | Value::Str(b) => Ok(b.clone()),
                            o => Err(bad(s, format!("`{}` must be a list of blocks; it holds {}", p.name, o.kind()))),
                        })
                        .collect::<R<_>>()?,
                ),
                (Kind::Blocks, _) => return Err(want("a list of blocks")),
                (Kind::Int, Value::Int(i)) => registry::Arg::Int(*i),
                (Kind::Int, _) => return Err(want("an integer")),
                (Kind::Bool, Value::Bool(b)) => registry::Arg::Bool(*b),
                (Kind::Bool, _) => return Err(want("True or False")),
                (Kind::Buffer, Value::Str(n)) => registry::Arg::Buffer(BufferRef::Name(n.clone())),
                (Kind::Buffer, Value::Tuple(t) | Value::List(t)) => match &t[..] {
                    [Value::Str(k), Value::Int(i)] if k == "read" && *i >= 0 => {
                        registry::Arg::Buffer(BufferRef::Read(*i as usize))
                    }
                    [Value::Str(k), Value::Int(i)] if k == "write" && *i >= 0 => {
                        registry::Arg::Buffer(BufferRef::Write(*i as usize))
                    }
                    _ => return Err(want("(\"read\", i), (\"write\", i) or a buffer's name")),
                },
                (Kind::Buffer, _) => return Err(want("(\"read\", i), (\"write\", i) or a buffer's name")),
                (Kind::IndexMap, Value::Lambda(params, body)) => registry::Arg::IndexMap(self.index_map(params, body)?),
                (Kind::IndexMap, _) => return Err(want("a lambda such as `lambda i, j: (j, i)`")),
                (Kind::Str, Value::Str(t)) => registry::Arg::Str(t.clone()),
                (Kind::Str, _) => return Err(want("a string")),
                (Kind::Ints, Value::List(items) | Value::Tuple(items)) => registry::Arg::Ints(
                    items
                        .iter()
                        .map(|x| match x {
                            Value::Int(i) => Ok(*i),
                            o => Err(bad(s, format!("`{}` must be a list of integers; it holds {}", p.name, o.kind()))),
                        })
                        .collect::<R<_>>()?,
                ),
                (Kind::Ints, _) => return Err(want("a list of integers")),
                (Kind::Factors, Value::List(items) | Value::Tuple(items)) => registry::Arg::Factors(
                    items
                        .iter()
                        .map(|x| match x {
                            Value::None | Value::Int(-1) => Ok(None),
                            Value::Int(i) => Ok(Some(*i)),
                            o => Err(bad(s, format!("a factor must be an integer or None, not {}", o.kind()))),
                        })
                        .collect::<R<_>>()?,
                ),
                (Kind::Factors, _) => return Err(bad(s, "factors must be a list such as [None, 32]".into())),
                (Kind::Value, v) => registry::Arg::Value(
                    to_attr(v).ok_or_else(|| bad(s, format!("{} cannot be an annotation value", v.kind())))?,
                ),
            };
            args.push(Some(arg));
        }
        Ok(Args(args))
    }

    /// Adds to `defs` the lines that give the blocks and loops of `v` a
    /// handle in the replay script, unless they have one.
    fn define(&self, v: &Value, handles: &mut Vec<(String, Option<Var>)>, defs: &mut Vec<String>) {
        let root = &self.sch.func.body;
        match v {
            Value::List(items) | Value::Tuple(items) => items.iter().for_each(|x| self.define(x, handles, defs)),
            Value::Block(b) if !handles.iter().any(|(n, k)| n == b && k.is_none()) => {
                handles.push((b.clone(), None));
                defs.push(format!("{b} = sch.get_block(\"{b}\")"));
            }
            Value::Loop(l) => {
                if handles.iter().any(|(n, k)| n == l.name() && k.as_ref() == Some(l)) {
                    return;
                }
                // A block under the loop, and the loop's place above it.
                let Some(lp) = root.find_loop(l) else { return };
                let place = lp.body.blocks().into_iter().find_map(|r| {
                    let above = root.loops_above(&r.block.name)?;
                    above.iter().position(|x| x.var == *l).map(|i| (r.block.name.clone(), i))
                });
                let Some((b, i)) = place else { return };
                self.define(&Value::Block(b.clone()), handles, defs);
                handles.retain(|(n, _)| n != l.name());
                handles.push((l.name().to_string(), Some(l.clone())));
                defs.push(format!("{} = sch.get_loops({b})[{i}]", l.name()));
            }
            _ => {}
        }
    }

    /// Records the handles a step's results give (`a, b = sch.split(..)`).
    fn assigned(&mut self, out: &Out) {
        let mut named: Vec<(String, Option<Var>)> = Vec::new();
        match out {
            Out::None | Out::Int(_) | Out::Ints(_) | Out::Location(_) => {}
            Out::Block(b) => named.push((b.clone(), None)),
            Out::Blocks(bs) => named.extend(bs.iter().map(|b| (b.clone(), None))),
            Out::Loop(l) => named.push((l.name().to_string(), Some(l.clone()))),
            Out::Loops(ls) => named.extend(ls.iter().map(|l| (l.name().to_string(), Some(l.clone())))),
        }
        for (name, v) in named {
            self.handles.retain(|(n, _)| n != &name);
            self.handles.push((name, v));
        }
    }

    fn as_loop(&self, v: &Value, s: Span) -> R<Var> {
        match v {
            Value::Loop(l) => Ok(l.clone()),
            o => Err(Diagnostic::at(s, format!("expected a loop, not {}", o.kind()))),
        }
    }
}

/// Matches positional and keyword arguments to a signature.
fn bind_args(
    name: &str,
    sig: &[&str],
    pos: Vec<(Value, Span)>,
    kw: Vec<(String, Value, Span)>,
    span: Span,
) -> R<Vec<Option<(Value, Span)>>> {
    let mut out: Vec<Option<(Value, Span)>> = vec![None; sig.len()];
    if pos.len() > sig.len() {
        return Err(Diagnostic::at(pos[sig.len()].1, format!("`{name}` takes at most {} arguments", sig.len())));
    }
    for (i, p) in pos.into_iter().enumerate() {
        out[i] = Some(p);
    }
    for (k, v, s) in kw {
        let Some(i) = sig.iter().position(|x| *x == k) else {
            return Err(did_you_mean(
                Diagnostic::at(s, format!("`{name}` takes no argument `{k}`")),
                &k,
                sig.iter().copied(),
            ));
        };
        if out[i].is_some() {
            return Err(Diagnostic::at(s, format!("argument `{k}` is given twice")));
        }
        out[i] = Some((v, s));
    }
    let _ = span;
    Ok(out)
}

fn to_attr(v: &Value) -> Option<Attr> {
    Some(match v {
        Value::Int(i) => Attr::Int(*i),
        Value::Float(f) => Attr::Float(*f),
        Value::Bool(b) => Attr::Bool(*b),
        Value::Str(s) => Attr::Str(s.clone()),
        Value::List(x) | Value::Tuple(x) => Attr::List(x.iter().map(to_attr).collect::<Option<_>>()?),
        _ => return None,
    })
}

fn truthy(v: &Value) -> bool {
    match v {
        Value::None => false,
        Value::Int(i) => *i != 0,
        Value::Bool(b) => *b,
        Value::Str(s) => !s.is_empty(),
        Value::List(x) | Value::Tuple(x) => !x.is_empty(),
        _ => true,
    }
}

fn compare(op: ast::CmpOp, a: &Value, b: &Value) -> Option<bool> {
    use ast::CmpOp as C;
    Some(match (a, b) {
        (Value::Int(x), Value::Int(y)) => match op {
            C::Eq | C::Is => x == y,
            C::Ne | C::IsNot => x != y,
            C::Lt => x < y,
            C::Le => x <= y,
            C::Gt => x > y,
            C::Ge => x >= y,
            _ => return None,
        },
        (Value::Str(x), Value::Str(y)) => match op {
            C::Eq => x == y,
            C::Ne => x != y,
            C::In => y.contains(x.as_str()),
            C::NotIn => !y.contains(x.as_str()),
            _ => return None,
        },
        (Value::None, Value::None) => matches!(op, C::Eq | C::Is),
        (_, Value::None) | (Value::None, _) => matches!(op, C::Ne | C::IsNot),
        // Handles: the same block or loop.
        (Value::Block(x), Value::Block(y)) if matches!(op, C::Eq | C::Ne | C::Is | C::IsNot) => {
            (x == y) == matches!(op, C::Eq | C::Is)
        }
        (Value::Loop(x), Value::Loop(y)) if matches!(op, C::Eq | C::Ne | C::Is | C::IsNot) => {
            (x == y) == matches!(op, C::Eq | C::Is)
        }
        // Lists and tuples, element by element.
        (Value::List(x) | Value::Tuple(x), Value::List(y) | Value::Tuple(y)) if matches!(op, C::Eq | C::Ne) => {
            let same = x.len() == y.len() && x.iter().zip(y).all(|(a, b)| compare(C::Eq, a, b) == Some(true));
            same == (op == C::Eq)
        }
        (x, Value::List(items) | Value::Tuple(items)) if matches!(op, C::In | C::NotIn) => {
            let found = items.iter().any(|it| compare(C::Eq, x, it) == Some(true));
            found == (op == C::In)
        }
        _ => return None,
    })
}
