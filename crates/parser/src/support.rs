//! Helpers for the actions of `grammar.lalrpop`: building nodes with spans,
//! and the checks that the LR grammar does not express (what may be assigned
//! to, the order of arguments and parameters). A failed check pushes a
//! [`RawError::Check`] and the parse goes on, so that later errors are still
//! found.

use crate::ast::*;
use crate::error::ParseError;
use crate::lexer::Tok;

/// An error found while parsing, before it is given its final wording.
#[derive(Debug)]
pub enum RawError {
    /// A syntax error that the parser recovered from.
    Syntax(lalrpop_util::ParseError<usize, Tok, ()>),
    /// A failed check, already worded.
    Check(ParseError),
}

fn check(errors: &mut Vec<RawError>, message: impl Into<String>, span: Span) {
    errors.push(RawError::Check(ParseError::new(message, span)));
}

pub fn binary(l: usize, r: usize, op: BinOp, lhs: Expr, rhs: Expr) -> Expr {
    let kind = ExprKind::Binary { op, lhs: Box::new(lhs), rhs: Box::new(rhs) };
    Expr { kind, span: Span::new(l, r) }
}

pub fn unary(l: usize, r: usize, op: UnaryOp, operand: Expr) -> Expr {
    Expr { kind: ExprKind::Unary { op, operand: Box::new(operand) }, span: Span::new(l, r) }
}

pub fn bool_op(l: usize, r: usize, op: BoolOp, first: Expr, rest: Vec<Expr>) -> Expr {
    let mut operands = vec![first];
    operands.extend(rest);
    Expr { kind: ExprKind::BoolOp { op, operands }, span: Span::new(l, r) }
}

pub fn tuple(l: usize, r: usize, first: Expr, rest: Vec<Expr>) -> Expr {
    let mut items = vec![first];
    items.extend(rest);
    Expr { kind: ExprKind::Tuple(items), span: Span::new(l, r) }
}

pub fn slice(l: usize, r: usize, lo: Option<Expr>, hi: Option<Expr>, step: Option<Expr>) -> Expr {
    let kind = ExprKind::Slice { lo: lo.map(Box::new), hi: hi.map(Box::new), step: step.map(Box::new) };
    Expr { kind, span: Span::new(l, r) }
}

/// Where the last statement of a body ends.
pub fn body_end(body: &[Stmt]) -> Option<usize> {
    body.last().map(|s| s.span.end)
}

/// Attaches decorators to a `def` or `class` starting at `l`.
pub fn decorate(l: usize, decos: Vec<Expr>, mut def: Stmt) -> Stmt {
    match &mut def.kind {
        StmtKind::FunctionDef { decorators, .. } | StmtKind::ClassDef { decorators, .. } => {
            *decorators = decos;
        }
        _ => {}
    }
    def.span = Span::new(l.min(def.span.start), def.span.end);
    def
}

/// `a = b = c`: every expression but the last is a target.
pub fn assign(first: Expr, mut rest: Vec<Expr>, errors: &mut Vec<RawError>) -> StmtKind {
    let value = rest.pop().unwrap_or_else(|| first.clone());
    let mut targets = vec![first];
    targets.extend(rest);
    for t in &targets {
        check_target(t, TargetKind::Multiple, errors);
    }
    StmtKind::Assign { targets, value }
}

/// Whether a tuple or list of targets is allowed.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    Single,
    Multiple,
}

fn describe(e: &Expr) -> &'static str {
    match &e.kind {
        ExprKind::Call { .. } => "a function call",
        ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Str(_) => "a literal",
        ExprKind::Bool(_) | ExprKind::None => "a constant",
        ExprKind::Tuple(_) => "a tuple",
        ExprKind::List(_) => "a list",
        ExprKind::Dict(_) => "a dict",
        ExprKind::Lambda { .. } => "a lambda",
        ExprKind::Compare { .. } => "a comparison",
        ExprKind::IfExp { .. } => "a conditional expression",
        _ => "an expression",
    }
}

/// Pushes an error unless `e` can be assigned to.
pub fn check_target(e: &Expr, kind: TargetKind, errors: &mut Vec<RawError>) {
    match &e.kind {
        ExprKind::Name(_) | ExprKind::Attribute { .. } | ExprKind::Subscript { .. } => {}
        ExprKind::Tuple(items) | ExprKind::List(items) if kind == TargetKind::Multiple => {
            for item in items {
                check_target(item, TargetKind::Multiple, errors);
            }
        }
        _ => check(errors, format!("cannot assign to {}", describe(e)), e.span),
    }
}

/// Positional arguments come before keyword arguments; no keyword twice.
pub fn check_args(args: &[Arg], errors: &mut Vec<RawError>) {
    let mut seen_keyword = false;
    let mut names: Vec<&str> = Vec::new();
    for arg in args {
        match arg {
            Arg::Positional(e) if seen_keyword => check(errors, "positional argument follows keyword argument", e.span),
            Arg::Keyword(name, _) => {
                seen_keyword = true;
                if names.contains(&name.name.as_str()) {
                    check(errors, format!("keyword argument `{}` repeated", name.name), name.span);
                }
                names.push(&name.name);
            }
            Arg::DoubleStar(_) => seen_keyword = true,
            _ => {}
        }
    }
}

/// No parameter twice; once one has a default, all that follow have one.
pub fn check_params(params: &[Param], errors: &mut Vec<RawError>) {
    let mut seen_default = false;
    for (i, p) in params.iter().enumerate() {
        if params[..i].iter().any(|q| q.name.name == p.name.name) {
            check(errors, format!("duplicate parameter `{}`", p.name.name), p.name.span);
        }
        if p.default.is_some() {
            seen_default = true;
        } else if seen_default {
            check(errors, "parameter without a default follows parameter with a default", p.span);
        }
    }
}

/// A class's bases are positional arguments.
pub fn class_bases(args: Vec<Arg>, errors: &mut Vec<RawError>) -> Vec<Expr> {
    let mut bases = Vec::new();
    for arg in args {
        match arg {
            Arg::Positional(e) => bases.push(e),
            Arg::Keyword(name, _) => check(errors, "class keyword arguments are not supported", name.span),
            Arg::Star(e) | Arg::DoubleStar(e) => check(errors, "unpacking in class bases is not supported", e.span),
        }
    }
    bases
}
