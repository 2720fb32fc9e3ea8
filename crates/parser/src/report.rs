//! Words the parser's syntax errors for people.
//!
//! lalrpop reports the token it could not take and the raw list of terminals
//! it would have taken. [`syntax_error`] turns that into "unexpected `:`,
//! expected `)` or `,`": it names the offending token by its text (or "end of
//! line", "end of file", "indent"), folds the many tokens that can start an
//! expression into "an expression", leaves out operators that could merely
//! continue the expression before the error, and points the span at the
//! offending token (at the last character for end of file).

use crate::ast::Span;
use crate::error::{line_col, ParseError};
use crate::lexer::{Tok, Token};

type LalrpopError = lalrpop_util::ParseError<usize, Tok, ()>;

/// Tokens that can start an expression (or an argument).
const STARTERS: &[&str] = &[
    "Name",
    "Int",
    "Float",
    "Str",
    "\"(\"",
    "\"[\"",
    "\"{\"",
    "\"-\"",
    "\"+\"",
    "\"~\"",
    "\"not\"",
    "\"lambda\"",
    "\"None\"",
    "\"True\"",
    "\"False\"",
    "\"*\"",
    "\"**\"",
];

/// Keywords that start a statement (an expression can start one too).
const STATEMENT_KEYWORDS: &[&str] = &[
    "\"import\"",
    "\"from\"",
    "\"def\"",
    "\"class\"",
    "\"for\"",
    "\"while\"",
    "\"if\"",
    "\"with\"",
    "\"return\"",
    "\"pass\"",
    "\"break\"",
    "\"continue\"",
    "\"assert\"",
    "\"@\"",
];

/// Groups of tokens that only continue an expression, each with the token
/// whose presence shows that the whole group is mere continuation.
const CONTINUATIONS: &[(&str, &[&str])] = &[
    ("\".\"", &["\".\"", "\"(\"", "\"[\""]),
    (
        "\"+\"",
        &[
            "\"+\"", "\"-\"", "\"*\"", "\"/\"", "\"//\"", "\"%\"", "\"@\"", "\"**\"", "\"<<\"", "\">>\"", "\"&\"",
            "\"^\"", "\"|\"",
        ],
    ),
    ("\"|\"", &["\"&\"", "\"^\"", "\"|\"", "\"<<\"", "\">>\""]),
    ("\"**\"", &["\"**\""]),
    ("\"==\"", &["\"==\"", "\"!=\"", "\"<\"", "\"<=\"", "\">\"", "\">=\"", "\"in\"", "\"not\"", "\"is\""]),
    ("\"or\"", &["\"or\"", "\"and\"", "\"if\""]),
    ("\"and\"", &["\"and\""]),
    ("AugOp", &["AugOp"]),
];

/// How an expected terminal is named.
fn friendly(terminal: &str) -> String {
    match terminal {
        "Name" => "a name".into(),
        "Int" => "an integer".into(),
        "Float" => "a number".into(),
        "Str" => "a string".into(),
        "AugOp" => "an augmented assignment".into(),
        "NEWLINE" => "end of line".into(),
        "INDENT" => "an indented block".into(),
        "DEDENT" => "end of block".into(),
        t => format!("`{}`", t.trim_matches('"')),
    }
}

fn rank(item: &str) -> usize {
    [
        "a statement",
        "a simple statement",
        "an expression",
        "`)`",
        "`]`",
        "`}`",
        "`:`",
        "`in`",
        "`import`",
        "`,`",
        "end of line",
    ]
    .iter()
    .position(|&r| r == item)
    .unwrap_or(100)
}

/// "an expression or `)`", or None when nothing useful can be said.
fn expected_phrase(expected: &[String]) -> Option<String> {
    let has = |t: &str| expected.iter().any(|e| e == t);
    if has("INDENT") {
        return Some("an indented block".into());
    }
    let expression = has("Name") && has("Int");
    let statement = expression && has("\"pass\"");
    let mut dropped: Vec<&str> = vec!["LEXERROR"];
    if expression {
        dropped.extend(STARTERS);
    }
    if statement {
        dropped.extend(STATEMENT_KEYWORDS);
    }
    for (marker, group) in CONTINUATIONS {
        if has(marker) && !(expression && STARTERS.contains(marker)) {
            dropped.extend(group.iter());
        }
    }
    let mut items: Vec<String> = Vec::new();
    if statement && !has("\"def\"") {
        // Only a simple statement may follow `;` or a compound statement's
        // colon on the same line.
        items.push("a simple statement".into());
    } else if statement {
        items.push("a statement".into());
    } else if expression {
        items.push("an expression".into());
    }
    for t in expected {
        let item = friendly(t);
        if !dropped.contains(&t.as_str()) && !items.contains(&item) {
            items.push(item);
        }
    }
    // `=` and `;` are possible after most statements; name them only alone.
    if items.len() > 1 {
        items.retain(|i| i != "`=`" && i != "`;`");
    }
    items.sort_by_key(|i| rank(i));
    let mut items: Vec<String> = items.into_iter().take(5).collect();
    let last = items.pop()?;
    Some(if items.is_empty() { last } else { format!("{} or {last}", items.join(", ")) })
}

/// The token's own text when it is short, else what kind of token it is.
fn describe(src: &str, tok: &Tok, span: Span) -> String {
    if *tok == Tok::Newline {
        return if span.start >= src.len() { "end of file".into() } else { "end of line".into() };
    }
    match src.get(span.start..span.end) {
        Some(text) if !text.is_empty() && text.chars().count() <= 24 && !text.contains('\n') => {
            format!("`{text}`")
        }
        _ => match tok {
            Tok::Str(_) => "string literal".into(),
            Tok::Name(_) => "name".into(),
            Tok::Int(_) | Tok::Float(_) => "number".into(),
            _ => "token".into(),
        },
    }
}

/// The span of the last character, where "end of file" errors point.
fn eof_span(src: &str) -> Span {
    src.char_indices().next_back().map_or(Span::new(0, 0), |(i, c)| Span::new(i, i + c.len_utf8()))
}

/// The innermost bracket open before byte `pos` in its logical line, if
/// any. Scans back from `pos` to the line's start only.
fn open_bracket(tokens: &[Token], pos: usize) -> Option<&Token> {
    let before = tokens.partition_point(|t| t.span.start < pos);
    let mut closed = 0usize;
    for t in tokens[..before].iter().rev() {
        match t.tok {
            Tok::RParen | Tok::RBracket | Tok::RBrace => closed += 1,
            Tok::LParen | Tok::LBracket | Tok::LBrace if closed == 0 => return Some(t),
            Tok::LParen | Tok::LBracket | Tok::LBrace => closed -= 1,
            Tok::Newline => return None,
            _ => {}
        }
    }
    None
}

/// A help line when the error lies on a later line than a bracket that is
/// still open: the newlines in between were taken as inside the brackets.
fn bracket_help(src: &str, tokens: &[Token], pos: usize) -> Option<String> {
    let open = open_bracket(tokens, pos)?;
    let (open_line, open_col) = line_col(src, open.span.start);
    let (line, _) = line_col(src, pos);
    let text = src.get(open.span.start..open.span.end).unwrap_or("(");
    (line > open_line).then(|| format!("the `{text}` at {open_line}:{open_col} is not closed"))
}

/// Words one syntax error, or None when it is at a token the lexer already
/// reported.
pub fn syntax_error(src: &str, tokens: &[Token], err: LalrpopError) -> Option<ParseError> {
    let (tok, mut span, expected) = match err {
        LalrpopError::UnrecognizedToken { token: (l, tok, r), expected } => (Some(tok), Span::new(l, r), expected),
        LalrpopError::UnrecognizedEof { expected, .. } => (None, eof_span(src), expected),
        LalrpopError::ExtraToken { token: (l, tok, r) } => (Some(tok), Span::new(l, r), vec![]),
        LalrpopError::InvalidToken { location } => (None, Span::new(location, location), vec![]),
        LalrpopError::User { .. } => return None,
    };
    let mut tok = tok;
    match tok {
        Some(Tok::Error) => return None,
        Some(Tok::Indent) => return Some(ParseError::new("unexpected indent", span)),
        Some(Tok::Dedent) => {
            // Name what follows the dedent.
            let start = tokens.partition_point(|t| t.span.start < span.start);
            let next = tokens[start.min(tokens.len())..].iter().find(|t| !matches!(t.tok, Tok::Dedent | Tok::Indent));
            tok = next.map(|t| t.tok.clone());
            span = next.map_or(Span::new(src.len(), src.len()), |t| t.span);
        }
        _ => {}
    }
    let what = match &tok {
        Some(t) if span.start < src.len() => describe(src, t, span),
        _ => {
            span = eof_span(src);
            "end of file".to_string()
        }
    };
    let message = match expected_phrase(&expected) {
        Some(phrase) => format!("unexpected {what}, expected {phrase}"),
        None => format!("unexpected {what}"),
    };
    let error = ParseError::new(message, span);
    Some(match bracket_help(src, tokens, span.start) {
        Some(help) => error.with_help(help),
        None => error,
    })
}

/// The error for a bracket never closed before the end of the text.
pub fn unclosed(src: &str, open: &Token) -> ParseError {
    let text = src.get(open.span.start..open.span.end).unwrap_or("(");
    ParseError::new(format!("`{text}` was never closed"), open.span)
}
