//! `verify_local_indices`: local buffers must be indexed by values known at
//! compile time, or they leave the registers.
//!
//! Contract: a check, not a pass — it reads the lowered kernel (after
//! `unroll_loops`) and returns warnings, changing nothing. A GPU keeps a
//! per-thread array in registers only when, once unrolled loops are
//! replicated, every index into it is a constant; otherwise nvcc places the
//! array in "local memory", which is off-chip and far slower, though the
//! kernel stays correct. So each index into a `local` buffer may depend only
//! on constants and on variables of loops that are unrolled (`T.unroll`) or
//! vectorized. An index that depends on the variable of any other loop, on a
//! thread or block index, or on a value loaded from memory is reported, as a
//! warning naming the buffer, the index and what it depends on:
//! - for loops, one warning per buffer, at its first such access, whose
//!   help line names every loop to unroll (`unroll loop `k_1``);
//! - for thread indices and loaded values, one warning per buffer and
//!   cause.
//!
//! Variables bound by `T.LetStmt` carry the dependencies of their value.
//! Warnings have no span: the lowered kernel has none to point at.

use tirc_ir::printer::print_expr;
use tirc_ir::{Buffer, Diagnostic, Expr, ForKind, PrimFunc, Scope, Stmt, Var};

/// What an index depends on that is not known at compile time.
#[derive(Clone, Debug, PartialEq)]
enum Cause {
    /// The variable of a loop that is not unrolled.
    Loop(Var),
    /// `threadIdx.x` .. `blockIdx.z`.
    Thread(String),
    /// A value read from the named buffer.
    Load(String),
}

/// One offending access: the buffer, the index as printed, the cause.
struct Finding {
    buffer: Buffer,
    index: String,
    cause: Cause,
}

pub fn check(f: &PrimFunc) -> Vec<Diagnostic> {
    let mut w = Walker { scope: Vec::new(), found: Vec::new() };
    w.stmt(&f.body);
    report(w.found, &f.body)
}

/// The variables in scope and what their values depend on: nothing for a
/// compile-time value (an unrolled loop's variable).
type Scoped = Vec<(Var, Vec<Cause>)>;

struct Walker {
    scope: Scoped,
    found: Vec<Finding>,
}

impl Walker {
    fn causes(&self, e: &Expr) -> Vec<Cause> {
        let mut out: Vec<Cause> = Vec::new();
        let add = |c: Cause, out: &mut Vec<Cause>| {
            if !out.contains(&c) {
                out.push(c)
            }
        };
        e.walk(&mut |x| match x {
            Expr::Var(v) => {
                if let Some((_, cs)) = self.scope.iter().rev().find(|(s, _)| s == v) {
                    for c in cs {
                        add(c.clone(), &mut out);
                    }
                }
            }
            Expr::Load(b, _) => add(Cause::Load(b.name().to_string()), &mut out),
            _ => {}
        });
        out
    }

    fn access(&mut self, b: &Buffer, idx: &[Expr]) {
        if b.scope() != Scope::Local {
            return;
        }
        for i in idx {
            for cause in self.causes(i) {
                self.found.push(Finding { buffer: b.clone(), index: print_expr(i), cause });
            }
        }
    }

    fn expr(&mut self, e: &Expr) {
        e.walk(&mut |x| {
            if let Expr::Load(b, idx) = x {
                self.access(b, idx);
            }
        });
    }

    fn stmt(&mut self, s: &Stmt) {
        s.for_each_expr(|e| self.expr(e));
        if let Stmt::Store { buffer, indices, .. } = s {
            self.access(buffer, indices);
        }
        let bound = match s {
            Stmt::For(l) => Some((
                l.var.clone(),
                match l.kind {
                    ForKind::Unrolled | ForKind::Vectorized => vec![],
                    ForKind::ThreadBinding(t) => vec![Cause::Thread(t.name())],
                    ForKind::Serial | ForKind::Parallel => vec![Cause::Loop(l.var.clone())],
                },
            )),
            Stmt::Launch { var, tag, .. } => Some((var.clone(), vec![Cause::Thread(tag.name())])),
            Stmt::Let { var, value, .. } => Some((var.clone(), self.causes(value))),
            _ => None,
        };
        let pushed = bound.is_some();
        if let Some(b) = bound {
            self.scope.push(b);
        }
        s.for_each_child(|c| self.stmt(c));
        if pushed {
            self.scope.pop();
        }
    }
}

fn report(found: Vec<Finding>, body: &Stmt) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut buffers: Vec<Buffer> = Vec::new();
    for f in &found {
        if !buffers.contains(&f.buffer) {
            buffers.push(f.buffer.clone());
        }
    }
    let why = |b: &Buffer| {
        format!(
            "the CUDA compiler keeps `{}` in registers only when every index is a constant after unrolling; \
             otherwise it goes to local memory, which is off-chip and slow",
            b.name()
        )
    };
    for b in buffers {
        let mine: Vec<&Finding> = found.iter().filter(|f| f.buffer == b).collect();
        let loops: Vec<&Finding> = mine.iter().copied().filter(|f| matches!(f.cause, Cause::Loop(_))).collect();
        if let Some(first) = loops.first() {
            let mut names: Vec<String> = Vec::new();
            for f in &loops {
                if let Cause::Loop(v) = &f.cause {
                    let n = format!("`{}`", v.name());
                    if !names.contains(&n) {
                        names.push(n);
                    }
                }
            }
            let Cause::Loop(v) = &first.cause else { continue };
            let list = match &names[..] {
                [init @ .., last] if !init.is_empty() => format!("loops {} and {last}", init.join(", ")),
                _ => format!("loop {}", names.join("")),
            };
            let init = if names.iter().any(|n| n.ends_with("_init`")) {
                " (a loop `x_init` follows the loop `x` it was made from)"
            } else {
                ""
            };
            let help = format!("unroll {list} with sch.unroll{init}");
            out.push(
                Diagnostic::warning(format!(
                    "local buffer `{}` is indexed by `{}`, which depends on loop `{}`, and that loop is not unrolled",
                    b.name(),
                    first.index,
                    v.name()
                ))
                .help(format!("{help}; {}", why(&b)))
                .or_at_ir(body.find_loop(v).and_then(|l| l.span), "this loop is not unrolled"),
            );
        }
        let mut seen: Vec<&Cause> = Vec::new();
        for f in mine.iter().filter(|f| !matches!(f.cause, Cause::Loop(_))) {
            if seen.contains(&&f.cause) {
                continue;
            }
            seen.push(&f.cause);
            let what = match &f.cause {
                Cause::Thread(t) => format!("the thread index {t}"),
                Cause::Load(x) => format!("a value loaded from `{x}`"),
                Cause::Loop(_) => continue,
            };
            out.push(
                Diagnostic::warning(format!(
                    "local buffer `{}` is indexed by `{}`, which depends on {what}, unknown at compile time",
                    b.name(),
                    f.index
                ))
                .help(format!("index local buffers by constants and unrolled loop variables only; {}", why(&b))),
            );
        }
    }
    out
}
