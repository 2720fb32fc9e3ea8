//! Syntax errors of `.tir` text.
//!
//! A [`ParseError`] is a message (lowercase, no trailing period, naming what
//! is wrong with friendly token names such as "unexpected `:`, expected `)`
//! or `,`"), the byte span of the offending text, and an optional help line.
//! [`line_col`] and [`render_errors`] turn spans into `line:col` positions for
//! people; [`ParseError`] also implements `miette::Diagnostic` so callers can
//! attach the source and print a labelled report.

use crate::ast::Span;
use std::fmt;

/// One syntax error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub message: String,
    pub span: Span,
    pub help: Option<String>,
}

impl ParseError {
    pub fn new(message: impl Into<String>, span: Span) -> ParseError {
        ParseError { message: message.into(), span, help: None }
    }

    /// The same error with a help line.
    pub fn with_help(mut self, help: impl Into<String>) -> ParseError {
        self.help = Some(help.into());
        self
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ParseError {}

impl miette::Diagnostic for ParseError {
    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help.as_ref().map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        let label = miette::LabeledSpan::new_with_span(Some("here".to_string()), self.span);
        Some(Box::new(std::iter::once(label)))
    }
}

/// The 1-based line and column (counted in characters) of byte `offset` in
/// `src`. An offset past the end, or inside a character, is clamped.
pub fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(src.len());
    while offset > 0 && !src.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &src[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let col = before[line_start..].chars().count() + 1;
    (line, col)
}

/// One line per error: `line:col: message`, and ` (help: ...)` when the error
/// has a help line.
pub fn render_errors(src: &str, errors: &[ParseError]) -> String {
    let mut out = String::new();
    for e in errors {
        let (line, col) = line_col(src, e.span.start);
        out.push_str(&format!("{line}:{col}: {}", e.message));
        if let Some(help) = &e.help {
            out.push_str(&format!(" (help: {help})"));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_chars() {
        let src = "ab\ncé d\n";
        assert_eq!(line_col(src, 0), (1, 1));
        assert_eq!(line_col(src, 3), (2, 1));
        assert_eq!(line_col(src, 6), (2, 3));
        assert_eq!(line_col(src, 5), (2, 2)); // inside `é`: clamped
        assert_eq!(line_col(src, 100), (3, 1));
    }
}
