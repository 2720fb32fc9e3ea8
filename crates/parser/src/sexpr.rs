//! A compact s-expression rendering of a syntax tree, for tests and
//! debugging: `x = T.grid(M, N)` is `(= x (call (attr T grid) M N))`.
//!
//! One statement per line; the statements of a block follow their header,
//! indented two more spaces, and the block closes with its header's `)`.
//! Strings print with Rust escapes, floats always with a `.` or exponent.
//! Spans are not shown.

use crate::ast::*;

/// The whole module, one top-level statement (with its blocks) after another.
pub fn module(m: &Module) -> String {
    let mut out = String::new();
    for s in &m.body {
        stmt(&mut out, s, 0);
    }
    out
}

fn block(out: &mut String, label: &str, body: &[Stmt], indent: usize) {
    out.push_str(&format!("{}{label}\n", "  ".repeat(indent)));
    for s in body {
        stmt(out, s, indent + 1);
    }
}

fn stmt(out: &mut String, s: &Stmt, indent: usize) {
    let pad = "  ".repeat(indent);
    let head = match &s.kind {
        StmtKind::Expr(e) => format!("(expr {})", expr(e)),
        StmtKind::Assign { targets, value } => {
            let targets: Vec<String> = targets.iter().map(expr).collect();
            format!("(= {} {})", targets.join(" "), expr(value))
        }
        StmtKind::AugAssign { target, op, value } => {
            format!("({}= {} {})", bin_op(*op), expr(target), expr(value))
        }
        StmtKind::AnnAssign { target, annotation, value } => match value {
            Some(v) => format!("(ann {} {} {})", expr(target), expr(annotation), expr(v)),
            None => format!("(ann {} {})", expr(target), expr(annotation)),
        },
        StmtKind::Return(None) => "(return)".into(),
        StmtKind::Return(Some(e)) => format!("(return {})", expr(e)),
        StmtKind::Assert { cond, msg: None } => format!("(assert {})", expr(cond)),
        StmtKind::Assert { cond, msg: Some(m) } => format!("(assert {} {})", expr(cond), expr(m)),
        StmtKind::Pass => "(pass)".into(),
        StmtKind::Break => "(break)".into(),
        StmtKind::Continue => "(continue)".into(),
        StmtKind::Import { text } => format!("(import {text:?})"),
        StmtKind::For { target, iter, body } => {
            out.push_str(&format!("{pad}(for {} {}\n", expr(target), expr(iter)));
            return close(out, body, &[], indent);
        }
        StmtKind::While { cond, body } => {
            out.push_str(&format!("{pad}(while {}\n", expr(cond)));
            return close(out, body, &[], indent);
        }
        StmtKind::If { cond, body, orelse } => {
            out.push_str(&format!("{pad}(if {}\n", expr(cond)));
            return close(out, body, orelse, indent);
        }
        StmtKind::With { items, body } => {
            let items: Vec<String> = items
                .iter()
                .map(|i| match &i.target {
                    Some(t) => format!("(as {} {})", expr(&i.context), expr(t)),
                    None => expr(&i.context),
                })
                .collect();
            out.push_str(&format!("{pad}(with {}\n", items.join(" ")));
            return close(out, body, &[], indent);
        }
        StmtKind::FunctionDef { name, params, decorators, returns, body } => {
            let params: Vec<String> = params.iter().map(param).collect();
            let mut head = format!("{pad}(def {} ({})", name.name, params.join(" "));
            for d in decorators {
                head.push_str(&format!(" (@ {})", expr(d)));
            }
            if let Some(r) = returns {
                head.push_str(&format!(" (-> {})", expr(r)));
            }
            out.push_str(&head);
            out.push('\n');
            return close(out, body, &[], indent);
        }
        StmtKind::ClassDef { name, bases, decorators, body } => {
            let bases: Vec<String> = bases.iter().map(expr).collect();
            let mut head = format!("{pad}(class {} ({})", name.name, bases.join(" "));
            for d in decorators {
                head.push_str(&format!(" (@ {})", expr(d)));
            }
            out.push_str(&head);
            out.push('\n');
            return close(out, body, &[], indent);
        }
    };
    out.push_str(&format!("{pad}{head}\n"));
}

fn close(out: &mut String, body: &[Stmt], orelse: &[Stmt], indent: usize) {
    for s in body {
        stmt(out, s, indent + 1);
    }
    if !orelse.is_empty() {
        block(out, "else", orelse, indent);
    }
    out.push_str(&format!("{})\n", "  ".repeat(indent)));
}

fn param(p: &Param) -> String {
    match (&p.annotation, &p.default) {
        (None, None) => p.name.name.clone(),
        (Some(a), None) => format!("({} {})", p.name.name, expr(a)),
        (None, Some(d)) => format!("({} = {})", p.name.name, expr(d)),
        (Some(a), Some(d)) => format!("({} {} = {})", p.name.name, expr(a), expr(d)),
    }
}

fn bin_op(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "+",
        BinOp::Sub => "-",
        BinOp::Mul => "*",
        BinOp::Div => "/",
        BinOp::FloorDiv => "//",
        BinOp::Mod => "%",
        BinOp::Pow => "**",
        BinOp::MatMul => "@",
        BinOp::BitAnd => "&",
        BinOp::BitOr => "|",
        BinOp::BitXor => "^",
        BinOp::Shl => "<<",
        BinOp::Shr => ">>",
    }
}

fn cmp_op(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Eq => "==",
        CmpOp::Ne => "!=",
        CmpOp::Lt => "<",
        CmpOp::Le => "<=",
        CmpOp::Gt => ">",
        CmpOp::Ge => ">=",
        CmpOp::In => "in",
        CmpOp::NotIn => "not-in",
        CmpOp::Is => "is",
        CmpOp::IsNot => "is-not",
    }
}

fn list(head: &str, items: &[Expr]) -> String {
    let mut s = format!("({head}");
    for e in items {
        s.push(' ');
        s.push_str(&expr(e));
    }
    s.push(')');
    s
}

fn opt(e: &Option<Box<Expr>>) -> String {
    e.as_ref().map_or_else(|| "_".to_string(), |e| expr(e))
}

/// One expression.
pub fn expr(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Name(n) => n.clone(),
        ExprKind::Int(v) => v.to_string(),
        ExprKind::Float(v) => format!("{v:?}"),
        ExprKind::Str(s) => format!("{s:?}"),
        ExprKind::Bool(true) => "True".into(),
        ExprKind::Bool(false) => "False".into(),
        ExprKind::None => "None".into(),
        ExprKind::Attribute { value, attr } => format!("(attr {} {})", expr(value), attr.name),
        ExprKind::Call { func, args } => {
            let mut s = format!("(call {}", expr(func));
            for a in args {
                s.push(' ');
                match a {
                    Arg::Positional(e) => s.push_str(&expr(e)),
                    Arg::Keyword(k, e) => s.push_str(&format!("{}={}", k.name, expr(e))),
                    Arg::Star(e) => s.push_str(&format!("*{}", expr(e))),
                    Arg::DoubleStar(e) => s.push_str(&format!("**{}", expr(e))),
                }
            }
            s.push(')');
            s
        }
        ExprKind::Subscript { value, indices } => {
            let mut s = format!("(index {}", expr(value));
            for i in indices {
                s.push(' ');
                s.push_str(&expr(i));
            }
            s.push(')');
            s
        }
        ExprKind::Slice { lo, hi, step } => {
            format!("(slice {} {} {})", opt(lo), opt(hi), opt(step))
        }
        ExprKind::Tuple(items) => list("tuple", items),
        ExprKind::Starred(e) => format!("(star {})", expr(e)),
        ExprKind::List(items) => list("list", items),
        ExprKind::Dict(items) => {
            let items: Vec<String> = items.iter().map(|(k, v)| format!("({} {})", expr(k), expr(v))).collect();
            format!("(dict{}{})", if items.is_empty() { "" } else { " " }, items.join(" "))
        }
        ExprKind::Unary { op, operand } => {
            let op = match op {
                UnaryOp::Neg => "-",
                UnaryOp::Pos => "+",
                UnaryOp::Not => "not",
                UnaryOp::Invert => "~",
            };
            format!("({op} {})", expr(operand))
        }
        ExprKind::Binary { op, lhs, rhs } => {
            format!("({} {} {})", bin_op(*op), expr(lhs), expr(rhs))
        }
        ExprKind::Compare { first, rest } => {
            let mut s = format!("(cmp {}", expr(first));
            for (op, e) in rest {
                s.push_str(&format!(" {} {}", cmp_op(*op), expr(e)));
            }
            s.push(')');
            s
        }
        ExprKind::BoolOp { op, operands } => list(if *op == BoolOp::And { "and" } else { "or" }, operands),
        ExprKind::IfExp { cond, then, orelse } => {
            format!("(if-expr {} {} {})", expr(cond), expr(then), expr(orelse))
        }
        ExprKind::Lambda { params, body } => {
            let params: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
            format!("(lambda ({}) {})", params.join(" "), expr(body))
        }
    }
}
