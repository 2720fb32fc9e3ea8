//! The lexer of `.tir` text: logos for the raw tokens, then an indentation
//! layer that works like Python's tokenizer.
//!
//! [`tokenize`] never fails and never panics: it returns every token with its
//! byte span, plus the lexical errors. Each lexical error also leaves a
//! [`Tok::Error`] token in the stream at the place it happened, so that the
//! parser stops there and resynchronises instead of reporting a second,
//! confusing error for the same text.
//!
//! The indentation layer:
//! - emits `Newline` at the end of each logical line; blank lines and
//!   comment-only lines produce nothing; newlines inside `()`, `[]`, `{}` are
//!   ignored, and so is a backslash followed by a newline;
//! - at the first token of each logical line compares its column (a tab
//!   advances to the next multiple of 8) with the stack of open indentation
//!   levels and emits `Indent` (spanning that first token) or one `Dedent`
//!   per closed level (empty span at that token); a dedent to a column that
//!   matches no open level is an error, after which that column is taken as a
//!   level of its own (without tokens) so that the lines after it still line
//!   up;
//! - at the end emits a final `Newline` (if the last line had tokens) and one
//!   `Dedent` per open level, with empty spans at the end of the text.
//!
//! Limits, so that later recursive code cannot run out of stack: brackets
//! nest at most [`MAX_BRACKET_DEPTH`] deep, blocks at most
//! [`MAX_INDENT_LEVELS`], and one logical line holds at most
//! [`MAX_OPERATORS_PER_LINE`] operator tokens. Past a limit lexing stops
//! with an error.

use crate::ast::{BinOp, Span};
use crate::error::ParseError;
use logos::Logos;

/// Brackets may nest this deep.
pub const MAX_BRACKET_DEPTH: usize = 200;
/// Blocks may nest this deep.
pub const MAX_INDENT_LEVELS: usize = 100;
/// One logical line may hold this many operator tokens.
pub const MAX_OPERATORS_PER_LINE: usize = 1_000_000;

/// What went wrong inside logos; turned into a [`ParseError`] by the layer.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum LexError {
    /// No token starts here.
    #[default]
    Invalid,
    Unterminated {
        triple: bool,
    },
    IntOverflow,
    BadNumber,
    BadEscape(String),
}

/// A token. The parser's terminals are these variants.
#[derive(Logos, Clone, Debug, PartialEq)]
#[logos(error = LexError)]
#[logos(skip r"[ \t\f\r]+")]
#[logos(skip(r"#[^\n]*", allow_greedy = true))]
#[logos(skip r"\\\r?\n")]
pub enum Tok {
    #[regex(r"(?:[A-Za-z_]|[^\x00-\x7F])(?:[A-Za-z0-9_]|[^\x00-\x7F])*", |lex| lex.slice().to_string())]
    Name(String),
    #[regex(r"[0-9][0-9_]*", |lex| int(lex.slice(), 10))]
    #[regex(r"0[xX][0-9a-fA-F_]+", |lex| int(&lex.slice()[2..], 16))]
    #[regex(r"0[bB][01_]+", |lex| int(&lex.slice()[2..], 2))]
    #[regex(r"0[oO][0-7_]+", |lex| int(&lex.slice()[2..], 8))]
    #[regex(r"0[xXbBoO]", prefix_without_digits)]
    Int(i64),
    #[regex(r"[0-9][0-9_]*\.[0-9_]*(?:[eE][+-]?[0-9_]+)?", |lex| float(lex.slice()))]
    #[regex(r"\.[0-9][0-9_]*(?:[eE][+-]?[0-9_]+)?", |lex| float(lex.slice()))]
    #[regex(r"[0-9][0-9_]*[eE][+-]?[0-9_]+", |lex| float(lex.slice()))]
    Float(f64),
    #[regex(r#"(?:[rRuUbB]|[rR][bB]|[bB][rR])?["']"#, string)]
    Str(String),
    #[token("\n")]
    Newline,
    Indent,
    Dedent,
    /// Where a lexical error was; the error itself is reported separately.
    Error,

    #[token("def")]
    Def,
    #[token("class")]
    Class,
    #[token("for")]
    For,
    #[token("in")]
    In,
    #[token("if")]
    If,
    #[token("elif")]
    Elif,
    #[token("else")]
    Else,
    #[token("while")]
    While,
    #[token("with")]
    With,
    #[token("as")]
    As,
    #[token("return")]
    Return,
    #[token("pass")]
    Pass,
    #[token("break")]
    Break,
    #[token("continue")]
    Continue,
    #[token("and")]
    And,
    #[token("or")]
    Or,
    #[token("not")]
    Not,
    #[token("is")]
    Is,
    #[token("None")]
    None,
    #[token("True")]
    True,
    #[token("False")]
    False,
    #[token("import")]
    Import,
    #[token("from")]
    From,
    #[token("lambda")]
    Lambda,
    #[token("assert")]
    Assert,

    #[token("+")]
    Plus,
    #[token("-")]
    Minus,
    #[token("*")]
    Star,
    #[token("/")]
    Slash,
    #[token("//")]
    DoubleSlash,
    #[token("%")]
    Percent,
    #[token("**")]
    DoubleStar,
    #[token("@")]
    At,
    #[token("&")]
    Amp,
    #[token("|")]
    Pipe,
    #[token("^")]
    Caret,
    #[token("~")]
    Tilde,
    #[token("<<")]
    Shl,
    #[token(">>")]
    Shr,
    #[token("==")]
    EqEq,
    #[token("!=")]
    NotEq,
    #[token("<")]
    Lt,
    #[token("<=")]
    Le,
    #[token(">")]
    Gt,
    #[token(">=")]
    Ge,
    #[token("=")]
    Assign,
    /// `+=` and the other augmented assignments, with their operator.
    #[token("+=", |_| BinOp::Add)]
    #[token("-=", |_| BinOp::Sub)]
    #[token("*=", |_| BinOp::Mul)]
    #[token("/=", |_| BinOp::Div)]
    #[token("//=", |_| BinOp::FloorDiv)]
    #[token("%=", |_| BinOp::Mod)]
    #[token("**=", |_| BinOp::Pow)]
    #[token("@=", |_| BinOp::MatMul)]
    #[token("&=", |_| BinOp::BitAnd)]
    #[token("|=", |_| BinOp::BitOr)]
    #[token("^=", |_| BinOp::BitXor)]
    #[token("<<=", |_| BinOp::Shl)]
    #[token(">>=", |_| BinOp::Shr)]
    AugAssign(BinOp),
    #[token("->")]
    Arrow,
    #[token(":")]
    Colon,
    #[token(",")]
    Comma,
    #[token(".")]
    Dot,
    #[token(";")]
    Semi,
    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
}

/// A token and where it is.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    pub tok: Tok,
    pub span: Span,
}

/// Everything [`tokenize`] found.
#[derive(Clone, Debug, Default)]
pub struct Lexed {
    pub tokens: Vec<Token>,
    /// Lexical errors in source order; each left a [`Tok::Error`] token.
    pub errors: Vec<ParseError>,
    /// The outermost bracket still open at the end of the text. It is an
    /// error of its own only when the parser found nothing wrong after it.
    pub unclosed: Option<Token>,
    /// Stretches of text already blamed on a lexical error (from a bracket
    /// never closed to where lexing resynchronised); syntax errors inside
    /// them are consequences, not worth reporting.
    pub covered: Vec<Span>,
}

/// Parses an integer literal's digits (prefix already removed).
fn int(digits: &str, radix: u32) -> Result<i64, LexError> {
    if digits.starts_with('_') && radix == 10 || digits.ends_with('_') || digits.contains("__") {
        return Err(LexError::BadNumber);
    }
    let clean: String = digits.chars().filter(|&c| c != '_').collect();
    if clean.is_empty() {
        return Err(LexError::BadNumber);
    }
    i64::from_str_radix(&clean, radix).map_err(|e| match e.kind() {
        std::num::IntErrorKind::PosOverflow => LexError::IntOverflow,
        _ => LexError::BadNumber,
    })
}

fn prefix_without_digits(_: &mut logos::Lexer<'_, Tok>) -> Result<i64, LexError> {
    Err(LexError::BadNumber)
}

fn float(text: &str) -> Result<f64, LexError> {
    if text.contains("__") || text.contains("_.") || text.contains("._") || text.ends_with('_') {
        return Err(LexError::BadNumber);
    }
    let clean: String = text.chars().filter(|&c| c != '_').collect();
    clean.parse::<f64>().map_err(|_| LexError::BadNumber)
}

/// Lexes the rest of a string literal whose prefix and opening quote are the
/// current slice; returns its value.
fn string(lex: &mut logos::Lexer<'_, Tok>) -> Result<String, LexError> {
    let prefix = lex.slice();
    let raw = prefix.contains(['r', 'R']);
    let quote = if prefix.ends_with('"') { '"' } else { '\'' };
    let rest = lex.remainder();
    let triple_quote: String = [quote; 3].iter().collect();
    let triple = rest.starts_with(&triple_quote[..2]);
    let body = if triple { &rest[2..] } else { rest };
    let skip = rest.len() - body.len();
    let mut out = String::new();
    let mut bad: Option<String> = None;
    let mut chars = body.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if triple && body[i..].starts_with(&triple_quote) {
            lex.bump(skip + i + 3);
            return bad.map_or(Ok(out), |m| Err(LexError::BadEscape(m)));
        }
        if !triple && c == quote {
            lex.bump(skip + i + 1);
            return bad.map_or(Ok(out), |m| Err(LexError::BadEscape(m)));
        }
        if c == '\n' && !triple {
            lex.bump(skip + i);
            return Err(LexError::Unterminated { triple });
        }
        if c == '\r' && body[i..].starts_with("\r\n") {
            continue; // CRLF line ends read as LF, as in Python
        }
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(&(_, mut n)) = chars.peek() else {
            break;
        };
        chars.next();
        if n == '\r' && chars.peek().is_some_and(|&(_, d)| d == '\n') {
            chars.next();
            n = '\n';
        }
        if raw {
            out.push('\\');
            out.push(n);
            continue;
        }
        match n {
            '\n' => {}
            '\\' | '\'' | '"' => out.push(n),
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'f' => out.push('\x0c'),
            'v' => out.push('\x0b'),
            '0'..='7' => {
                let mut value = n.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|&(_, d)| d.to_digit(8)) {
                        Some(d) => {
                            value = value * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(value).unwrap_or('\u{fffd}'));
            }
            'x' | 'u' | 'U' => {
                let len = match n {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let mut value: u32 = 0;
                let mut ok = true;
                for _ in 0..len {
                    match chars.peek().and_then(|&(_, d)| d.to_digit(16)) {
                        Some(d) => {
                            value = value.wrapping_mul(16).wrapping_add(d);
                            chars.next();
                        }
                        None => {
                            ok = false;
                            break;
                        }
                    }
                }
                match char::from_u32(value).filter(|_| ok) {
                    Some(ch) => out.push(ch),
                    None => {
                        bad.get_or_insert(format!("invalid `\\{n}` escape: expected {len} hexadecimal digits"));
                    }
                }
            }
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    lex.bump(rest.len());
    Err(LexError::Unterminated { triple })
}

/// The indentation column of the token at byte `pos`, which is the first
/// token of its line.
fn column(src: &str, pos: usize) -> usize {
    let before = src.get(..pos).unwrap_or("");
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let mut col = 0;
    for c in before[line_start..].chars() {
        match c {
            '\t' => col = (col / 8 + 1) * 8,
            '\x0c' => col = 0,
            '\r' | '\u{feff}' => {}
            _ => col += 1,
        }
    }
    col
}

fn char_span(src: &str, start: usize) -> Span {
    let len = src.get(start..).and_then(|s| s.chars().next()).map_or(0, char::len_utf8);
    Span::new(start, start + len)
}

fn char_name(c: char) -> String {
    if c.is_control() || c.is_whitespace() {
        format!("U+{:04X}", c as u32)
    } else {
        format!("`{c}`")
    }
}

fn lex_error(src: &str, err: LexError, span: Span) -> ParseError {
    match err {
        LexError::Invalid => {
            let c = src.get(span.start..).and_then(|s| s.chars().next()).unwrap_or(' ');
            let e = ParseError::new(format!("invalid character {}", char_name(c)), char_span(src, span.start));
            match c {
                '\\' => e.with_help("a `\\` outside a string must be the last character of its line"),
                '!' => e.with_help("use `not` for logical negation"),
                '“' | '”' | '‘' | '’' => e.with_help("quote strings with `\"` or `'`"),
                '$' | '?' | '`' => e,
                _ if !c.is_ascii() => e.with_help("names may hold letters, digits and `_`"),
                _ => e,
            }
        }
        LexError::Unterminated { triple: false } => ParseError::new("unterminated string literal", span),
        LexError::Unterminated { triple: true } => ParseError::new("unterminated triple-quoted string literal", span),
        LexError::IntOverflow => ParseError::new("integer literal is too large", span)
            .with_help(format!("integers must fit in 64 bits (at most {})", i64::MAX)),
        LexError::BadNumber => ParseError::new("invalid number literal", span),
        LexError::BadEscape(m) => ParseError::new(m, span),
    }
}

/// True for tokens that can grow the depth of a syntax tree.
fn is_operator(tok: &Tok) -> bool {
    !matches!(
        tok,
        Tok::Name(_)
            | Tok::Int(_)
            | Tok::Float(_)
            | Tok::Str(_)
            | Tok::Comma
            | Tok::RParen
            | Tok::RBracket
            | Tok::RBrace
            | Tok::None
            | Tok::True
            | Tok::False
    )
}

/// Keywords that start a statement and cannot appear inside brackets.
/// (`for` could, in a comprehension, but the grammar has none.)
fn starts_statement(tok: &Tok) -> bool {
    matches!(
        tok,
        Tok::Def
            | Tok::Class
            | Tok::Return
            | Tok::Pass
            | Tok::Break
            | Tok::Continue
            | Tok::Import
            | Tok::From
            | Tok::Assert
            | Tok::While
            | Tok::With
            | Tok::Elif
            | Tok::For
    )
}

struct Layer<'s> {
    src: &'s str,
    out: Lexed,
    /// Open indentation levels: column, and whether it has an `Indent`.
    levels: Vec<(usize, bool)>,
    /// "too many levels of indentation" was said.
    too_deep: bool,
    brackets: Vec<Token>,
    at_line_start: bool,
    /// A newline was seen inside brackets since the last token.
    new_line_in_brackets: bool,
    operators: usize,
}

impl Layer<'_> {
    fn push(&mut self, tok: Tok, span: Span) {
        self.out.tokens.push(Token { tok, span });
    }

    fn error(&mut self, e: ParseError, span: Span) {
        self.out.errors.push(e);
        self.push(Tok::Error, span);
    }

    /// Handles the first token of a logical line.
    fn indentation(&mut self, span: Span) {
        let col = column(self.src, span.start);
        let top = self.levels.last().map_or(0, |l| l.0);
        if col > top {
            if self.levels.len() > MAX_INDENT_LEVELS {
                // Said once, at the first line too deep: one error a line
                // of a deeper file would take time quadratic in them.
                self.levels.push((col, false));
                if !self.too_deep {
                    self.too_deep = true;
                    self.error(ParseError::new("too many levels of indentation", span), span);
                } else {
                    self.push(Tok::Error, span);
                }
            } else {
                self.levels.push((col, true));
                self.push(Tok::Indent, span);
            }
            return;
        }
        while self.levels.last().is_some_and(|l| l.0 > col) {
            if let Some((_, true)) = self.levels.pop() {
                self.push(Tok::Dedent, Span::new(span.start, span.start));
            }
        }
        if self.levels.last().map_or(0, |l| l.0) != col {
            let e = ParseError::new("unindent does not match any outer indentation level", span);
            self.levels.push((col, false));
            self.error(e, span);
        }
    }

    /// A keyword that starts a statement, first on a line inside brackets:
    /// the brackets were surely left open by mistake. Reports the innermost
    /// and ends the logical line before this token.
    fn close_forgotten_brackets(&mut self, span: Span) {
        let Some(open) = self.brackets.last().cloned() else {
            return;
        };
        let text = self.src.get(open.span.start..open.span.end).unwrap_or("(");
        let e = ParseError::new(format!("`{text}` was never closed"), open.span);
        self.error(e, Span::new(span.start, span.start));
        self.out.covered.push(Span::new(open.span.start, span.start));
        self.brackets.clear();
        self.push(Tok::Newline, Span::new(span.start, span.start));
        self.at_line_start = true;
        self.operators = 0;
    }

    /// Handles a closing bracket; false when it is an error.
    fn close_bracket(&mut self, tok: &Tok, span: Span) -> bool {
        let text = self.src.get(span.start..span.end).unwrap_or(")");
        let Some(open) = self.brackets.pop() else {
            self.error(ParseError::new(format!("unmatched `{text}`"), span), span);
            return false;
        };
        let matching = matches!(
            (&open.tok, tok),
            (Tok::LParen, Tok::RParen) | (Tok::LBracket, Tok::RBracket) | (Tok::LBrace, Tok::RBrace)
        );
        if !matching {
            let open_text = self.src.get(open.span.start..open.span.end).unwrap_or("(");
            let (line, col) = crate::error::line_col(self.src, open.span.start);
            let e = ParseError::new(format!("closing `{text}` does not match `{open_text}`"), span)
                .with_help(format!("the `{open_text}` is at {line}:{col}"));
            self.error(e, span);
        }
        matching
    }

    /// Handles one raw token; false when lexing must stop.
    fn token(&mut self, tok: Tok, span: Span) -> bool {
        if tok == Tok::Newline {
            if self.brackets.is_empty() && !self.at_line_start {
                self.push(Tok::Newline, span);
                self.at_line_start = true;
                self.operators = 0;
            }
            self.new_line_in_brackets = !self.brackets.is_empty();
            return true;
        }
        if std::mem::take(&mut self.new_line_in_brackets) && starts_statement(&tok) {
            self.close_forgotten_brackets(span);
        }
        if self.at_line_start {
            self.at_line_start = false;
            self.indentation(span);
        }
        if is_operator(&tok) {
            self.operators += 1;
            if self.operators > MAX_OPERATORS_PER_LINE {
                let e = ParseError::new("statement is too long", span)
                    .with_help(format!("a line may hold at most {MAX_OPERATORS_PER_LINE} operators"));
                self.error(e, span);
                return false;
            }
        }
        match tok {
            Tok::LParen | Tok::LBracket | Tok::LBrace => {
                if self.brackets.len() >= MAX_BRACKET_DEPTH {
                    let e = ParseError::new("expression nested too deeply", span)
                        .with_help(format!("brackets may nest at most {MAX_BRACKET_DEPTH} deep"));
                    self.error(e, span);
                    return false;
                }
                self.brackets.push(Token { tok: tok.clone(), span });
            }
            Tok::RParen | Tok::RBracket | Tok::RBrace if !self.close_bracket(&tok, span) => {
                return true;
            }
            _ => {}
        }
        self.push(tok, span);
        true
    }

    fn finish(mut self) -> Lexed {
        let end = Span::new(self.src.len(), self.src.len());
        if !self.at_line_start {
            self.push(Tok::Newline, end);
        }
        while let Some((_, real)) = self.levels.pop() {
            if real && !self.levels.is_empty() {
                self.push(Tok::Dedent, end);
            }
        }
        self.out.unclosed = self.brackets.first().cloned();
        self.out
    }
}

/// `src` with each carriage return that no line feed follows (old Mac line
/// ends, which Python reads as line ends) turned into a line feed: the
/// same length, so spans into one are spans into the other. Without it a
/// file of such lines was one line, a comment if it started with one.
pub fn normalize_line_ends(src: &str) -> std::borrow::Cow<'_, str> {
    let lone = |(i, _): &(usize, &str)| !src[i + 1..].starts_with('\n');
    if !src.match_indices('\r').any(|m| lone(&m)) {
        return std::borrow::Cow::Borrowed(src);
    }
    let mut out = String::with_capacity(src.len());
    let mut rest = src.char_indices().peekable();
    while let Some((_, c)) = rest.next() {
        if c == '\r' && rest.peek().is_none_or(|&(_, d)| d != '\n') {
            out.push('\n');
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Splits `src` into tokens, with `Newline`, `Indent` and `Dedent` tokens.
/// A lone carriage return ends a line (`normalize_line_ends`).
pub fn tokenize(src: &str) -> Lexed {
    let normalized = normalize_line_ends(src);
    let src: &str = &normalized;
    let mut layer = Layer {
        src,
        out: Lexed::default(),
        levels: vec![(0, true)],
        too_deep: false,
        brackets: Vec::new(),
        at_line_start: true,
        new_line_in_brackets: false,
        operators: 0,
    };
    let mut lex = Tok::lexer(src);
    if src.starts_with('\u{feff}') {
        // A byte order mark is not part of the text.
        lex.bump('\u{feff}'.len_utf8());
    }
    while let Some(result) = lex.next() {
        let span = Span::new(lex.span().start, lex.span().end);
        let keep_going = match result {
            Ok(Tok::Name(name)) => match name.char_indices().find(|&(_, c)| !c.is_ascii() && !c.is_alphanumeric()) {
                None => layer.token(Tok::Name(name), span),
                Some((i, _)) => {
                    let ok = layer.token(Tok::Error, span);
                    let e = lex_error(src, LexError::Invalid, Span::new(span.start + i, span.end));
                    layer.out.errors.push(e);
                    ok
                }
            },
            Ok(tok) => layer.token(tok, span),
            Err(err) => {
                let ok = layer.token(Tok::Error, span);
                layer.out.errors.push(lex_error(src, err, span));
                ok
            }
        };
        if !keep_going {
            break;
        }
    }
    layer.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<Tok> {
        tokenize(src).tokens.into_iter().map(|t| t.tok).collect()
    }

    /// Past the deepest indentation, one error, at the first line too
    /// deep (one a line made a file of 5000 levels take 87 s to report).
    #[test]
    fn too_deep_indentation_is_one_error() {
        let mut src = String::new();
        for d in 0..300 {
            src += &format!("{}for i{d} in range(1):\n", " ".repeat(d));
        }
        let errors = tokenize(&src).errors;
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].message.contains("too many levels of indentation"));
    }

    #[test]
    fn indentation_tokens() {
        use Tok::*;
        let toks = kinds("if x:\n    y\n\n  # c\nz\n");
        assert_eq!(
            toks,
            vec![
                If,
                Name("x".into()),
                Colon,
                Newline,
                Indent,
                Name("y".into()),
                Newline,
                Dedent,
                Name("z".into()),
                Newline
            ]
        );
    }

    #[test]
    fn literals() {
        use Tok::*;
        let toks = kinds("0x1F 1_000 0b101 0o17 1. .5 1e-5 2.5E+3 r'\\n' 'a\\x41\\n'");
        assert_eq!(
            toks,
            vec![
                Int(31),
                Int(1000),
                Int(5),
                Int(15),
                Float(1.0),
                Float(0.5),
                Float(1e-5),
                Float(2500.0),
                Str("\\n".into()),
                Str("aA\n".into()),
                Newline
            ]
        );
    }

    #[test]
    fn strings() {
        use Tok::*;
        let toks = kinds("'''a\r\nb''' 'c\\\r\nd' r'e\\\nf' \"\\101\\u00e9\\q\"");
        let want = vec![Str("a\nb".into()), Str("cd".into()), Str("e\\\nf".into()), Str("A\u{e9}\\q".into()), Newline];
        assert_eq!(toks, want);
    }

    #[test]
    fn errors_leave_error_tokens() {
        let lexed = tokenize("x = $\ny = 99999999999999999999\n");
        assert_eq!(lexed.errors.len(), 2);
        assert_eq!(lexed.errors[0].message, "invalid character `$`");
        assert_eq!(lexed.errors[1].message, "integer literal is too large");
        assert_eq!(lexed.tokens.iter().filter(|t| t.tok == Tok::Error).count(), 2);
    }
}
