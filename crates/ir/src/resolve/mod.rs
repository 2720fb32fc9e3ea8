//! Resolve: from the syntax tree to the IR module.
//!
//! Module level: constants (`M = 1024`, overridable by `-D`), `@T.prim_func`
//! functions (also inside an `@I.ir_module class`), and
//! `@tirc.schedule("func")` scripts, which stay syntax for the schedule
//! interpreter. Imports, docstrings and comments are ignored. Every error is a
//! `Diagnostic` with the span of the construct at fault; independent errors
//! (one per function or statement) are all collected.

mod block;
mod buffer;
mod expr;
mod func;

pub use block::{check_bound_accesses, sized_accesses, SizedAccess};
pub use func::{root_block, SizeMode};

use crate::diag::{did_you_mean, suggest, Diagnostic};
use crate::func::{Constant, Module, ParamValue, ScheduleDef, ScheduleParam};
use tirc_parser::ast::{self, Arg, ExprKind, Span, StmtKind};

/// Resolves a parsed file. `defines` override module constants (`-D M=64`);
/// naming a constant the file does not define is an error.
pub fn resolve_module(m: &ast::Module, defines: &[(String, i64)]) -> Result<Module, Vec<Diagnostic>> {
    resolve_module_with(m, defines, SizeMode::RunTime)
}

/// `resolve_module`, with size variables kept as run-time variables or
/// specialized to their `-D` values (`SizeMode`).
pub fn resolve_module_with(
    m: &ast::Module,
    defines: &[(String, i64)],
    mode: SizeMode,
) -> Result<Module, Vec<Diagnostic>> {
    let mut r = ModuleResolver { module: Module::default(), errors: Vec::new(), defines, mode, used_defines: vec![] };
    r.stmts(&m.body, false);
    for (name, _) in defines {
        if !r.used_defines.contains(name) {
            let known: Vec<&str> = r.module.constants.iter().map(|c| c.name.as_str()).collect();
            let listed = match known.len() {
                0 => " (it defines no module constant)".to_string(),
                _ => format!(" (its module constants: {})", known.join(", ")),
            };
            let d = Diagnostic::new(format!(
                "-D {name}: the file defines no module constant or size variable `{name}`{listed}"
            ));
            // A schedule's parameter given as a constant: `-p` sets those.
            let param = m.body.iter().any(|s| {
                matches!(&s.kind, ast::StmtKind::FunctionDef { params, decorators, .. }
                    if params.iter().any(|p| p.name.name == *name)
                        && decorators.iter().any(|d| decorator(d).is_some_and(|(n, _)| n == "tirc.schedule")))
            });
            if param {
                r.errors.push(d.help(format!("`{name}` is a parameter of a schedule: give it with `-p {name}=..`")));
            } else {
                r.errors.push(did_you_mean(d, name, known.iter().copied()));
            }
        }
    }
    if r.errors.is_empty() {
        Ok(r.module)
    } else {
        Err(r.errors)
    }
}

struct ModuleResolver<'a> {
    module: Module,
    errors: Vec<Diagnostic>,
    defines: &'a [(String, i64)],
    mode: SizeMode,
    used_defines: Vec<String>,
}

/// The dotted name of an expression such as `T.prim_func`, if it is one.
pub(crate) fn dotted(e: &ast::Expr) -> Option<String> {
    match &e.kind {
        ExprKind::Name(n) => Some(n.clone()),
        ExprKind::Attribute { value, attr } => Some(format!("{}.{}", dotted(value)?, attr.name)),
        _ => None,
    }
}

/// A decorator's name and its call arguments (`@a.b(x)` gives `a.b`, `[x]`).
fn decorator(e: &ast::Expr) -> Option<(String, &[Arg])> {
    match &e.kind {
        ExprKind::Call { func, args } => Some((dotted(func)?, args)),
        _ => Some((dotted(e)?, &[])),
    }
}

impl ModuleResolver<'_> {
    fn stmts(&mut self, body: &[ast::Stmt], in_class: bool) {
        for s in body {
            self.stmt(s, in_class);
        }
    }

    fn stmt(&mut self, s: &ast::Stmt, in_class: bool) {
        match &s.kind {
            StmtKind::Import { .. } | StmtKind::Pass => {}
            StmtKind::Expr(e) if matches!(e.kind, ExprKind::Str(_)) => {}
            StmtKind::Assign { targets, value } if !in_class => self.constant(s, targets, value),
            StmtKind::ClassDef { decorators, body, name, .. } => {
                let is_module = decorators.iter().any(|d| {
                    decorator(d).is_some_and(|(n, _)| matches!(n.as_str(), "I.ir_module" | "tvm.script.ir_module"))
                });
                if !is_module {
                    self.errors.push(
                        Diagnostic::at(name.span, format!("class `{}` is not an IR module", name.name))
                            .help("decorate it with `@I.ir_module`"),
                    );
                    return;
                }
                self.stmts(body, true);
            }
            StmtKind::FunctionDef { name, decorators, .. } => {
                let kinds: Vec<(String, &[Arg])> = decorators.iter().filter_map(decorator).collect();
                if let Some((_, args)) = kinds.iter().find(|(n, _)| is_prim_func_decorator(n)) {
                    let _ = args;
                    let consts: Vec<(String, i64)> =
                        self.module.constants.iter().map(|c| (c.name.clone(), c.value)).collect();
                    match func::resolve_prim_func(
                        s,
                        &consts,
                        self.defines,
                        self.mode,
                        &mut self.used_defines,
                        &mut self.module.size_spans,
                    ) {
                        Ok(f) if self.module.funcs.iter().any(|g| g.name == f.name) => self.errors.push(
                            Diagnostic::at(name.span, format!("a prim_func named `{}` is already defined", f.name))
                                .help("give each function of the module its own name"),
                        ),
                        Ok(f) => self.module.funcs.push(f),
                        Err(mut es) => self.errors.append(&mut es),
                    }
                } else if let Some((_, args)) = kinds.iter().find(|(n, _)| n == "tirc.schedule") {
                    match self.schedule(s, args) {
                        Ok(sd) if self.module.schedules.iter().any(|o| o.name == sd.name) => self.errors.push(
                            Diagnostic::at(name.span, format!("a schedule named `{}` is already defined", sd.name))
                                .help("give each schedule its own name: `-s` picks one by name"),
                        ),
                        Ok(sd) => self.module.schedules.push(sd),
                        Err(e) => self.errors.push(e),
                    }
                } else {
                    let d = Diagnostic::at(
                        name.span,
                        format!("function `{}` is neither a prim_func nor a schedule", name.name),
                    );
                    // A misspelt decorator gets its correction; no
                    // decorator gets both choices.
                    let near = kinds.iter().find_map(|(n, _)| suggest(n, ["T.prim_func", "tirc.schedule"]));
                    self.errors.push(match (near, decorators.first()) {
                        (Some(near), Some(dec)) => {
                            Diagnostic::at(dec.span, format!("unknown decorator on `{}`", name.name))
                                .help(format!("did you mean `@{near}`?"))
                        }
                        _ => d.help("decorate it with `@T.prim_func` or `@tirc.schedule(\"<prim_func name>\")`"),
                    });
                }
            }
            _ => self.errors.push(Diagnostic::at(s.span, "unexpected statement at module level").help(
                "a module holds constants (`M = 1024`), `@T.prim_func` functions and `@tirc.schedule` functions",
            )),
        }
    }

    fn constant(&mut self, s: &ast::Stmt, targets: &[ast::Expr], value: &ast::Expr) {
        let [target] = targets else {
            self.errors.push(Diagnostic::at(s.span, "a module constant is assigned one name at a time"));
            return;
        };
        let ExprKind::Name(name) = &target.kind else {
            self.errors.push(Diagnostic::at(target.span, "a module constant must be a plain name"));
            return;
        };
        let consts: Vec<(String, i64)> = self.module.constants.iter().map(|c| (c.name.clone(), c.value)).collect();
        let v = match const_int(value, &consts) {
            Ok(v) => v,
            Err(e) => {
                self.errors.push(e);
                return;
            }
        };
        let v = match self.defines.iter().find(|(n, _)| n == name) {
            Some((_, d)) => {
                self.used_defines.push(name.clone());
                *d
            }
            None => v,
        };
        self.module.constants.retain(|c| &c.name != name);
        self.module.constants.push(Constant { name: name.clone(), value: v, span: s.span });
    }

    fn schedule(&mut self, s: &ast::Stmt, dec_args: &[Arg]) -> Result<ScheduleDef, Diagnostic> {
        let StmtKind::FunctionDef { name, params, body, .. } = &s.kind else {
            return Err(Diagnostic::at(s.span, "expected a function"));
        };
        let mut func_name = None;
        let mut space = Vec::new();
        for a in dec_args {
            match a {
                Arg::Positional(e) => match &e.kind {
                    ExprKind::Str(f) if func_name.is_none() => func_name = Some(f.clone()),
                    _ => return Err(Diagnostic::at(e.span, "expected the name of a prim_func, as a string")),
                },
                Arg::Keyword(k, v) if k.name == "space" => space = self.space(v)?,
                Arg::Keyword(k, _) => {
                    return Err(did_you_mean(
                        Diagnostic::at(k.span, format!("unknown argument `{}` of tirc.schedule", k.name)),
                        &k.name,
                        ["space"],
                    ))
                }
                Arg::Star(e) | Arg::DoubleStar(e) => {
                    return Err(Diagnostic::at(e.span, "tirc.schedule takes no `*` arguments"))
                }
            }
        }
        let Some(func_name) = func_name else {
            return Err(Diagnostic::at(name.span, "the schedule does not say which prim_func it schedules")
                .help("write `@tirc.schedule(\"<prim_func name>\")`"));
        };
        let Some(first) = params.first() else {
            return Err(Diagnostic::at(name.span, "a schedule takes the schedule handle as its first parameter")
                .help(format!("write `def {}(sch):`", name.name)));
        };
        let consts: Vec<(String, i64)> = self.module.constants.iter().map(|c| (c.name.clone(), c.value)).collect();
        let mut out_params = Vec::new();
        for p in &params[1..] {
            let Some(default) = &p.default else {
                return Err(Diagnostic::at(
                    p.span,
                    format!("schedule parameter `{}` has no default value", p.name.name),
                )
                .help(format!("give it one, e.g. `{}=32`", p.name.name)));
            };
            let default = match &default.kind {
                ExprKind::Str(v) => ParamValue::Str(v.clone()),
                _ => ParamValue::Int(const_int(default, &consts)?),
            };
            out_params.push(ScheduleParam { name: p.name.name.clone(), default, span: p.span });
        }
        for (pname, _) in &space {
            if !out_params.iter().any(|p| &p.name == pname) {
                return Err(Diagnostic::at(
                    s.span,
                    format!("the space names `{pname}`, which is not a parameter of `{}`", name.name),
                ));
            }
        }
        Ok(ScheduleDef {
            name: name.name.clone(),
            func: func_name,
            handle: first.name.name.clone(),
            params: out_params,
            space,
            body: body.clone(),
            span: name.span,
        })
    }

    fn space(&self, e: &ast::Expr) -> Result<Vec<(String, Vec<ParamValue>)>, Diagnostic> {
        let ExprKind::Dict(items) = &e.kind else {
            return Err(Diagnostic::at(e.span, "`space` must be a dict of parameter names to lists of values"));
        };
        let consts: Vec<(String, i64)> = self.module.constants.iter().map(|c| (c.name.clone(), c.value)).collect();
        let mut out = Vec::new();
        for (k, v) in items {
            let ExprKind::Str(name) = &k.kind else {
                return Err(Diagnostic::at(k.span, "a space key must be a parameter name, as a string"));
            };
            let (ExprKind::List(vals) | ExprKind::Tuple(vals)) = &v.kind else {
                return Err(Diagnostic::at(v.span, format!("the values of `{name}` must be a list")));
            };
            if vals.is_empty() {
                return Err(Diagnostic::at(v.span, format!("the space gives `{name}` no values")));
            }
            let mut list = Vec::new();
            for x in vals {
                list.push(match &x.kind {
                    ExprKind::Str(s) => ParamValue::Str(s.clone()),
                    _ => ParamValue::Int(const_int(x, &consts)?),
                });
            }
            out.push((name.clone(), list));
        }
        Ok(out)
    }
}

/// The name and the source span (decorators included) of every
/// `@T.prim_func` definition of a file, at top level or in an
/// `@I.ir_module` class, in source order.
pub fn prim_func_defs(m: &ast::Module) -> Vec<(String, Span)> {
    fn walk(body: &[ast::Stmt], out: &mut Vec<(String, Span)>) {
        for s in body {
            match &s.kind {
                StmtKind::FunctionDef { name, decorators, .. }
                    if decorators.iter().filter_map(decorator).any(|(n, _)| is_prim_func_decorator(&n)) =>
                {
                    out.push((name.name.clone(), s.span))
                }
                StmtKind::ClassDef { body, .. } => walk(body, out),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(&m.body, &mut out);
    out
}

fn is_prim_func_decorator(n: &str) -> bool {
    matches!(n, "T.prim_func" | "tvm.script.tir.prim_func" | "tir.prim_func")
}

/// Evaluates an integer expression over module constants: literals, names,
/// `+ - * // %`, unary minus and parentheses.
pub(crate) fn const_int(e: &ast::Expr, consts: &[(String, i64)]) -> Result<i64, Diagnostic> {
    use ast::{BinOp as B, UnaryOp as U};
    let err = |msg: &str| Diagnostic::at(e.span, msg.to_string());
    match &e.kind {
        ExprKind::Int(v) => Ok(*v),
        ExprKind::Name(n) => match consts.iter().rev().find(|(c, _)| c == n) {
            Some((_, v)) => Ok(*v),
            None => Err(did_you_mean(
                Diagnostic::at(e.span, format!("unknown constant `{n}`")),
                n,
                consts.iter().map(|(c, _)| c.as_str()),
            )),
        },
        ExprKind::Unary { op: U::Neg, operand } => Ok(-const_int(operand, consts)?),
        ExprKind::Unary { op: U::Pos, operand } => const_int(operand, consts),
        ExprKind::Binary { op, lhs, rhs } => {
            let (a, b) = (const_int(lhs, consts)?, const_int(rhs, consts)?);
            let r = match op {
                B::Add => a.checked_add(b),
                B::Sub => a.checked_sub(b),
                B::Mul => a.checked_mul(b),
                B::FloorDiv if b != 0 => Some(crate::expr::floor_div(a, b)),
                B::Mod if b != 0 => Some(crate::expr::floor_mod(a, b)),
                B::Pow if (0..63).contains(&b) => a.checked_pow(b as u32),
                B::FloorDiv | B::Mod => return Err(err("division by zero")),
                _ => return Err(err("only + - * // % ** are allowed in a constant")),
            };
            r.ok_or_else(|| err("integer overflow"))
        }
        _ => Err(err("expected an integer constant")),
    }
}

pub(crate) fn span_of_args(args: &[Arg], fallback: Span) -> Span {
    args.iter()
        .map(|a| match a {
            Arg::Positional(e) | Arg::Keyword(_, e) | Arg::Star(e) | Arg::DoubleStar(e) => e.span,
        })
        .reduce(|a, b| a.to(b))
        .unwrap_or(fallback)
}
