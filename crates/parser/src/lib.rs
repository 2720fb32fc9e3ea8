//! Parsing `.tir` text into a syntax tree with spans.
//!
//! `parse(src)` runs the indentation-aware lexer (`lexer.rs`) and the lalrpop
//! grammar (`grammar.lalrpop`) and returns the `ast::Module`, or every syntax
//! error it could find, each with the span it concerns, in source order and
//! without two errors at the same place. It never panics, whatever the input.
//!
//! The tree it returns is at most [`MAX_EXPR_DEPTH`] expressions deep (and
//! blocks nest at most `lexer::MAX_INDENT_LEVELS` deep), so that code which
//! walks it recursively cannot run out of stack. Parsing itself runs on a
//! thread of its own with a large stack, so that dropping a deep half-built
//! tree after an error cannot overflow the caller's stack either.

pub mod ast;
pub mod error;
pub mod layout;
pub mod lexer;
mod report;
pub mod sexpr;
mod support;

/// The parser lalrpop generated from `grammar.lalrpop`, committed
/// (`scripts/gen_parser.sh` regenerates it after a grammar change).
#[allow(clippy::all, clippy::pedantic, unused, dead_code)]
#[rustfmt::skip]
mod grammar;
#[cfg(test)]
mod fingerprint;

#[cfg(test)]
mod grammar_is_generated {
    /// `grammar.rs` was generated from the grammar as it is now.
    #[test]
    fn from_the_grammar_as_it_is() {
        let grammar = include_bytes!("grammar.lalrpop");
        let recorded = include_str!("grammar.fingerprint").trim();
        assert_eq!(
            format!("{:016x}", super::fingerprint::fingerprint(grammar)),
            recorded,
            "src/grammar.lalrpop changed but src/grammar.rs was not regenerated: run scripts/gen_parser.sh"
        );
    }
}

pub use error::{line_col, render_errors, ParseError};

use ast::{Expr, Module, Span, Stmt};
use support::RawError;

/// Expressions nest at most this deep in a tree that [`parse`] returns.
pub const MAX_EXPR_DEPTH: usize = 500;

/// The stack of the thread that parses.
const PARSER_STACK_BYTES: usize = 256 << 20;

/// Parses a whole `.tir` file.
pub fn parse(src: &str) -> Result<Module, Vec<ParseError>> {
    std::thread::scope(|scope| {
        let spawned = std::thread::Builder::new()
            .name("tirc-parser".into())
            .stack_size(PARSER_STACK_BYTES)
            .spawn_scoped(scope, || parse_here(src));
        match spawned {
            Ok(handle) => handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(_) => parse_here(src),
        }
    })
}

/// [`parse`], on the calling thread.
fn parse_here(src: &str) -> Result<Module, Vec<ParseError>> {
    let normalized = lexer::normalize_line_ends(src);
    let src: &str = &normalized;
    let lexed = lexer::tokenize(src);
    let mut raw: Vec<RawError> = Vec::new();
    let tokens = lexed.tokens.iter().map(|t| Ok::<_, ()>((t.span.start, t.tok.clone(), t.span.end)));
    let result = grammar::ModuleParser::new().parse(src, &mut raw, tokens);

    let mut errors = lexed.errors;
    let mut syntax = Vec::new();
    for e in raw {
        match e {
            RawError::Syntax(e) => syntax.extend(report::syntax_error(src, &lexed.tokens, e)),
            RawError::Check(e) => errors.push(e),
        }
    }
    let module = match result {
        Ok(module) => Some(module),
        Err(e) => {
            syntax.extend(report::syntax_error(src, &lexed.tokens, e));
            None
        }
    };
    if let Some(open) = &lexed.unclosed {
        if !syntax.iter().chain(&errors).any(|e| e.span.start >= open.span.start) {
            errors.push(report::unclosed(src, open));
        }
    }
    // A syntax error inside text already blamed on a lexical error is a
    // consequence of that error.
    syntax.retain(|e| !lexed.covered.iter().any(|c| c.start < e.span.start && e.span.start < c.end));
    errors.extend(syntax);
    if let Some(module) = module {
        if errors.is_empty() {
            return match too_deep(&module.body) {
                None => Ok(module),
                Some(span) => Err(vec![ParseError::new("expression nested too deeply", span)
                    .with_help(format!("expressions may nest at most {MAX_EXPR_DEPTH} deep"))]),
            };
        }
    }
    errors.sort_by_key(|e| e.span.start);
    errors.dedup_by_key(|e| e.span.start);
    Err(errors)
}

/// The span of an expression nested deeper than [`MAX_EXPR_DEPTH`], if any.
fn too_deep(body: &[Stmt]) -> Option<Span> {
    fn expr(e: &Expr, depth: usize) -> Option<Span> {
        if depth > MAX_EXPR_DEPTH {
            return Some(e.span);
        }
        // `a and b and ...` and `a < b < ...` are one node here but a chain
        // of binary operations once resolved: each operand counts a level.
        let chain = match &e.kind {
            crate::ast::ExprKind::BoolOp { operands, .. } => operands.len(),
            crate::ast::ExprKind::Compare { rest, .. } => rest.len() + 1,
            _ => 1,
        };
        if depth + chain > MAX_EXPR_DEPTH + 1 {
            return Some(e.span);
        }
        e.children().into_iter().find_map(|c| expr(c, depth + chain))
    }
    body.iter().find_map(|s| {
        s.exprs().into_iter().find_map(|e| expr(e, 1)).or_else(|| s.blocks().into_iter().find_map(too_deep))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_and_chains_count_each_operand() {
        let src = format!("x = {}\n", vec!["a"; 20_000].join(" and "));
        let errors = parse(&src).unwrap_err();
        assert!(errors[0].message.contains("nested too deeply"), "{:?}", errors[0]);
        let src = format!("x = {}\n", vec!["a"; 20_000].join(" < "));
        assert!(parse(&src).is_err());
        assert!(parse(&format!("x = {}\n", vec!["a"; 100].join(" and "))).is_ok());
    }

    #[test]
    fn deep_unary_chain_is_an_error_not_a_crash() {
        let src = format!("x = {}1\n", "-".repeat(20_000));
        let errors = parse(&src).unwrap_err();
        assert_eq!(errors[0].message, "expression nested too deeply");
    }

    #[test]
    fn deep_brackets_are_an_error() {
        let src = format!("x = {}1{}\n", "(".repeat(1000), ")".repeat(1000));
        let errors = parse(&src).unwrap_err();
        assert_eq!(errors[0].message, "expression nested too deeply");
    }
}
