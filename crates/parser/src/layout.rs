//! `tirc fmt`: the file as written, with only its layout normalised.
//!
//! Every token keeps its spelling (names, numbers as written, strings with
//! their quotes), and so do comments; the formatter changes only the
//! whitespace between them:
//! - indentation: four spaces per block level, for code and for the
//!   comments above it; a line continued inside brackets keeps its breaks
//!   and its indentation relative to the line's start;
//! - spaces: one around binary operators, comparisons, `=` of assignments
//!   and `->`; none around `=` of keyword arguments, around `:` of slices,
//!   inside brackets, before `,` `:` `)` or after a unary `-`; one after `,`
//!   and after `:` elsewhere; none between a name and the `(` or `[` after
//!   it; two before an inline `#` comment;
//! - lines: no trailing whitespace, at most two blank lines in a row, none
//!   at the start or the end, one newline at the end.
//!
//! The result is checked to hold the same tokens as the input; a file whose
//! tokens do not survive (which would be a bug here) is an error, never a
//! changed program.

use crate::ast::Span;
use crate::error::ParseError;
use crate::lexer::{tokenize, Tok, Token};

const INDENT: &str = "    ";

/// Keywords that behave as operators or start clauses: a space on each side.
const WORDS: &[&str] = &[
    "and", "or", "not", "in", "is", "if", "else", "elif", "for", "while", "with", "as", "return", "def", "class",
    "lambda", "import", "from", "assert", "del", "yield", "pass", "break", "continue",
];

fn is_word(t: &str) -> bool {
    t.starts_with(|c: char| c.is_alphanumeric() || c == '_' || !c.is_ascii())
}

fn is_keyword(t: &str) -> bool {
    WORDS.contains(&t)
}

fn is_open(t: &str) -> bool {
    matches!(t, "(" | "[" | "{")
}

fn is_close(t: &str) -> bool {
    matches!(t, ")" | "]" | "}")
}

/// Whether `t` is an operator token (not a bracket, comma or name).
fn is_operator(t: &str) -> bool {
    !t.is_empty() && !is_word(t) && !is_open(t) && !is_close(t) && !matches!(t, "," | "." | ":" | ";") && !is_literal(t)
}

fn is_literal(t: &str) -> bool {
    t.starts_with(|c: char| c.is_ascii_digit() || c == '"' || c == '\'')
        || (t.starts_with('.') && t[1..].starts_with(|c: char| c.is_ascii_digit()))
        || t.starts_with(['r', 'R', 'b', 'B', 'u', 'U']) && t.contains(['"', '\''])
}

/// Whether a `-`, `+`, `~`, `*` or `**` after `prev` is unary (prefix).
fn unary_after(prev: Option<&str>) -> bool {
    match prev {
        None => true,
        Some(p) => is_open(p) || matches!(p, "," | ":" | ";" | "@") || is_operator(p) || is_keyword(p),
    }
}

/// Whether a space goes between `prev` and `next`. `brackets` holds the
/// brackets open at `next`; `prev_unary` says whether `prev` is a prefix
/// operator; `first` whether `prev` starts the line.
fn space(prev: &str, next: &str, brackets: &[&str], prev_unary: bool, before_prev: Option<&str>) -> bool {
    let inner = brackets.last().copied();
    if next == ":" {
        return prev == ",";
    }
    if is_close(next) || matches!(next, "," | ";" | ".") || next == ":" {
        return false;
    }
    if is_open(prev) || prev == "." {
        return false;
    }
    if prev == "@" && before_prev.is_none() {
        return false; // a decorator
    }
    if prev_unary {
        return false;
    }
    if prev == "," || prev == ";" {
        return true;
    }
    if prev == ":" {
        return inner != Some("[");
    }
    if prev == "=" || next == "=" {
        // Keyword arguments: `f(x=1)`; assignments and defaults elsewhere.
        return inner != Some("(");
    }
    if is_open(next) {
        // A call or a subscript: `f(x)`, `A[i]`, `f(x)(y)`; after an
        // operator or a keyword, a space.
        return !(is_close(prev) || (is_word(prev) && !is_keyword(prev)) || is_literal(prev));
    }
    true
}

/// For each token, whether it is the `:` of a slice with a complex operand
/// (`A[vi - 1 : vi + 2]`, as black and TVM's printer write it; `A[0:4]`
/// keeps its colon tight). Such a colon gets a space on each side that has
/// an operand.
fn spaced_colons(line: &[Piece]) -> Vec<bool> {
    let t: Vec<&str> = line.iter().map(|p| p.text).collect();
    let mut out = vec![false; t.len()];
    let mut stack: Vec<(&str, usize)> = Vec::new();
    for (i, x) in t.iter().enumerate() {
        if is_open(x) {
            stack.push((x, i));
        } else if is_close(x) {
            stack.pop();
        } else if *x == ":" && stack.last().is_some_and(|(b, _)| *b == "[") {
            let simple = |seg: &[&str]| {
                let seg = match seg.first() {
                    Some(&"-") | Some(&"+") => &seg[1..],
                    _ => seg,
                };
                seg.iter().all(|y| (is_word(y) && !is_keyword(y)) || is_literal(y) || *y == ".")
            };
            // The operands: back to the `[` or `,` and on to the `]`, `,` or
            // `:` of this subscript.
            let mut depth = 0i32;
            let mut lo = i;
            while lo > 0 {
                let y = t[lo - 1];
                if is_close(y) {
                    depth += 1;
                } else if is_open(y) {
                    if depth == 0 {
                        break;
                    }
                    depth -= 1;
                } else if depth == 0 && matches!(y, "," | ":") {
                    break;
                }
                lo -= 1;
            }
            let mut hi = i + 1;
            depth = 0;
            while hi < t.len() {
                let y = t[hi];
                if is_open(y) {
                    depth += 1;
                } else if is_close(y) {
                    if depth == 0 {
                        break;
                    }
                    depth -= 1;
                } else if depth == 0 && matches!(y, "," | ":") {
                    break;
                }
                hi += 1;
            }
            out[i] = !simple(&t[lo..i]) || !simple(&t[i + 1..hi]);
        }
    }
    out
}

/// One token with its text.
struct Piece<'a> {
    text: &'a str,
    span: Span,
}

/// Formats `src`. Errors are the file's lexical errors (the formatter
/// reads only files that lex), or a token that would not survive.
pub fn format(src: &str) -> Result<String, Vec<ParseError>> {
    let normalized = crate::lexer::normalize_line_ends(src);
    let src: &str = &normalized;
    let lexed = tokenize(src);
    if !lexed.errors.is_empty() {
        return Err(lexed.errors);
    }
    let mut out = String::new();
    let mut level = 0usize;
    let mut line: Vec<Piece> = Vec::new();
    // Where the text not yet written starts.
    let mut cursor = 0usize;
    let mut blank_run = 0usize;
    for Token { tok, span } in &lexed.tokens {
        match tok {
            Tok::Indent => level += 1,
            Tok::Dedent => level = level.saturating_sub(1),
            Tok::Newline => {
                if !line.is_empty() {
                    cursor = emit_line(src, &line, level, cursor, &mut out, &mut blank_run);
                    line.clear();
                }
            }
            _ => line.push(Piece { text: &src[span.start..span.end], span: *span }),
        }
    }
    if !line.is_empty() {
        cursor = emit_line(src, &line, level, cursor, &mut out, &mut blank_run);
    }
    // Comments after the last line of code (the last of them ended as if
    // the file ended with a newline: `emit_gap` takes the text after the
    // last one for the next line's indentation).
    let tail = &src[cursor..];
    if tail.ends_with('\n') {
        emit_gap(tail, 0, &mut out, &mut blank_run);
    } else {
        emit_gap(&format!("{tail}\n"), 0, &mut out, &mut blank_run);
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    check_same_tokens(src, &out)?;
    Ok(out)
}

/// Writes the comments and blank lines of `gap` (text between two logical
/// lines) at indentation `level`.
fn emit_gap(gap: &str, level: usize, out: &mut String, blank_run: &mut usize) {
    let mut lines: Vec<&str> = gap.split('\n').collect();
    // The first piece ends the previous line (its trailing comment was
    // written with it); the last one is the indentation before the next
    // token.
    if !out.is_empty() {
        lines.remove(0);
    }
    lines.pop();
    for l in lines {
        let t = l.trim();
        if t.is_empty() {
            if !out.is_empty() && *blank_run < 2 {
                out.push('\n');
                *blank_run += 1;
            }
        } else {
            out.push_str(&INDENT.repeat(level));
            out.push_str(t);
            out.push('\n');
            *blank_run = 0;
        }
    }
}

/// The comment in `gap` (text between two tokens of one physical line or at
/// its end), if any.
fn comment(gap: &str) -> Option<&str> {
    gap.find('#').map(|i| gap[i..].trim_end())
}

/// Writes one logical line (and the comments and blank lines before it);
/// returns where the text after it starts.
fn emit_line(src: &str, line: &[Piece], level: usize, cursor: usize, out: &mut String, blank_run: &mut usize) -> usize {
    let first = &line[0];
    emit_gap(&src[cursor..first.span.start], level, out, blank_run);
    *blank_run = 0;
    let base = INDENT.repeat(level);
    let line_start = src[..first.span.start].rfind('\n').map_or(0, |i| i + 1);
    let first_col = first.span.start - line_start;
    out.push_str(&base);
    let spaced = spaced_colons(line);
    let mut brackets: Vec<&str> = Vec::new();
    let mut prev: Option<&str> = None;
    let mut before_prev: Option<&str> = None;
    let mut prev_unary = false;
    for (i, p) in line.iter().enumerate() {
        if i > 0 {
            let gap = &src[line[i - 1].span.end..p.span.start];
            if gap.contains('\n') {
                // A line continued inside brackets (or after `\`): keep
                // the break, any comment before it, and the indentation
                // relative to the line's start.
                if let Some(c) = comment(gap.split('\n').next().unwrap_or("")) {
                    out.push_str("  ");
                    out.push_str(c);
                }
                let mut parts: Vec<&str> = gap.split('\n').collect();
                let last = parts.pop().unwrap_or("");
                if gap.trim_start().starts_with('\\') || src[..p.span.start].trim_end().ends_with('\\') {
                    out.push_str(" \\");
                }
                out.push('\n');
                // Comment lines inside the brackets.
                for mid in parts.iter().skip(1) {
                    let t = mid.trim();
                    if !t.is_empty() {
                        let col = mid.len() - mid.trim_start().len();
                        out.push_str(&base);
                        out.push_str(&" ".repeat(col.saturating_sub(first_col)));
                        out.push_str(t);
                        out.push('\n');
                    }
                }
                let col = last.chars().take_while(|c| *c == ' ' || *c == '\t').count();
                out.push_str(&base);
                out.push_str(&" ".repeat(col.saturating_sub(first_col)));
            } else {
                let slice_colon = (spaced[i] && !matches!(line[i - 1].text, "[" | ","))
                    || (spaced[i - 1] && !matches!(p.text, "," | "]"));
                if slice_colon || space(prev.unwrap_or(""), p.text, &brackets, prev_unary, before_prev) {
                    out.push(' ');
                }
            }
        }
        out.push_str(p.text);
        let unary = matches!(p.text, "-" | "+" | "~" | "*" | "**") && unary_after(prev);
        if is_open(p.text) {
            brackets.push(p.text);
        } else if is_close(p.text) {
            brackets.pop();
        }
        before_prev = prev;
        prev = Some(p.text);
        prev_unary = unary;
    }
    // A comment at the end of the line.
    let last = &line[line.len() - 1];
    let rest = &src[last.span.end..];
    let eol = rest.find('\n').unwrap_or(rest.len());
    if let Some(c) = comment(&rest[..eol]) {
        out.push_str("  ");
        out.push_str(c);
    }
    out.push('\n');
    last.span.end + eol
}

/// The formatted text must lex to the same tokens as the source.
fn check_same_tokens(src: &str, out: &str) -> Result<(), Vec<ParseError>> {
    let a = tokenize(src);
    let b = tokenize(out);
    let kinds = |l: &crate::lexer::Lexed, s: &str| -> Vec<(String, String)> {
        l.tokens
            .iter()
            .filter(|t| !matches!(t.tok, Tok::Indent | Tok::Dedent | Tok::Newline))
            .map(|t| (format!("{:?}", t.tok), s[t.span.start..t.span.end].to_string()))
            .collect()
    };
    let structure = |l: &crate::lexer::Lexed| -> Vec<String> {
        l.tokens.iter().map(|t| format!("{:?}", std::mem::discriminant(&t.tok))).collect()
    };
    if kinds(&a, src) != kinds(&b, out) || structure(&a) != structure(&b) || !b.errors.is_empty() {
        return Err(vec![ParseError {
            span: Span { start: 0, end: 0 },
            message: "internal error: formatting would change the file's tokens; the file is left as it is".into(),
            help: None,
        }]);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::format;

    fn f(s: &str) -> String {
        format(s).unwrap_or_else(|e| panic!("{e:?}"))
    }

    #[test]
    fn spaces_are_normalised_and_spellings_kept() {
        let src = "M  =  1_024\n@T.prim_func\ndef f(A : T.Buffer((M,K),\"float32\"),B: T.Buffer((M ,), 'float32')) ->None :\n  for i,j in T.grid( M,K ):\n     with T.block( \"B\" ):\n        vi,vj=T.axis.remap(\"SS\",[i,j])\n        B[vi]=B[vi]+A[vi,vj]*T.float32( -1e30 )\n";
        let want = "M = 1_024\n@T.prim_func\ndef f(A: T.Buffer((M, K), \"float32\"), B: T.Buffer((M,), 'float32')) -> None:\n    for i, j in T.grid(M, K):\n        with T.block(\"B\"):\n            vi, vj = T.axis.remap(\"SS\", [i, j])\n            B[vi] = B[vi] + A[vi, vj] * T.float32(-1e30)\n";
        assert_eq!(f(src), want);
        assert_eq!(f(want), want, "formatting is idempotent");
    }

    #[test]
    fn keyword_arguments_slices_and_unary_minus() {
        let src = "x = f(a = 1, b=- 2)\ny = A[0 : 4, i+1]\nz = -x ** 2 if not y else (x - 1)\n";
        assert_eq!(f(src), "x = f(a=1, b=-2)\ny = A[0:4, i + 1]\nz = -x ** 2 if not y else (x - 1)\n");
    }

    #[test]
    fn slices_with_complex_bounds_space_their_colon() {
        let src = "T.reads(A[vi - 1:vi + 2, 0:4, vj * 16:vj * 16 + 16, :n, x+1:])\n";
        assert_eq!(f(src), "T.reads(A[vi - 1 : vi + 2, 0:4, vj * 16 : vj * 16 + 16, :n, x + 1 :])\n");
    }

    #[test]
    fn comments_and_blank_lines_are_kept_and_reindented() {
        let src = "# header\n\n\n\n# about f\ndef f():\n  # inside\n  x = 1   # one\n\n  return x\n# trailing\n";
        assert_eq!(
            f(src),
            "# header\n\n\n# about f\ndef f():\n    # inside\n    x = 1  # one\n\n    return x\n# trailing\n"
        );
    }

    /// A last comment with no newline after it is kept (a helper found it
    /// dropped, so that `fmt --write` deleted it), and so is a file of one
    /// such comment.
    #[test]
    fn a_last_comment_without_a_newline_is_kept() {
        assert_eq!(f("M = 4\n# last"), "M = 4\n# last\n");
        assert_eq!(f("M = 4\n\n# last"), "M = 4\n\n# last\n");
        assert_eq!(f("# only"), "# only\n");
        assert_eq!(f("M = 4  # same line"), "M = 4  # same line\n");
    }

    #[test]
    fn continued_lines_keep_their_breaks() {
        let src = "def f(sch,\n      BM=32,  # rows\n      BN=32):\n  pass\n";
        assert_eq!(f(src), "def f(sch,\n      BM=32,  # rows\n      BN=32):\n    pass\n");
    }

    #[test]
    fn decorators_calls_and_attribute_chains() {
        let src = "@tirc.schedule( \"f\" )\ndef s(sch, v = 3):\n    b = sch.get_block ( \"C\" )\n    i, j = sch.get_loops(b)[ 0 ], 1\n";
        assert_eq!(
            f(src),
            "@tirc.schedule(\"f\")\ndef s(sch, v=3):\n    b = sch.get_block(\"C\")\n    i, j = sch.get_loops(b)[0], 1\n"
        );
    }

    #[test]
    fn lexical_errors_are_reported_not_formatted() {
        assert!(format("x = \"open\n").is_err());
    }
}
