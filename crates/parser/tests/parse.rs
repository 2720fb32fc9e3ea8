//! Data-driven tests of the parser.
//!
//! - every `data/ok/*.tir` parses; its tree, as s-expressions, is snapshotted,
//!   and every token, statement, expression and name span lies within the
//!   source, on char boundaries, and inside the span of its parent;
//! - every `data/err/*.tir` fails; its errors, rendered one per line as
//!   `line:col: message`, are snapshotted (the source is in the snapshot's
//!   description), so that a worse message is a failing snapshot;
//! - thousands of deterministic mutants of the ok files (characters, tokens
//!   and lines deleted, duplicated or swapped; truncations) never panic.

use std::path::Path;
use tirc_parser::ast::{Arg, Expr, ExprKind, Module, Span, Stmt, StmtKind};
use tirc_parser::{lexer, parse, render_errors, sexpr};

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn numbered(src: &str) -> String {
    src.lines().enumerate().map(|(i, l)| format!("{:>3} | {l}\n", i + 1)).collect()
}

#[test]
fn ok_files_parse() {
    insta::glob!("data/ok/*.tir", |path| {
        let src = read(path);
        let module = match parse(&src) {
            Ok(m) => m,
            Err(e) => panic!("{} failed:\n{}", path.display(), render_errors(&src, &e)),
        };
        check_token_spans(&src);
        SpanCheck { src: &src }.module(&module);
        insta::assert_snapshot!(sexpr::module(&module));
    });
}

#[test]
fn err_files_fail_with_good_messages() {
    insta::glob!("data/err/*.tir", |path| {
        let src = read(path);
        let errors = match parse(&src) {
            Ok(_) => panic!("{} parsed, but it has errors", path.display()),
            Err(e) => e,
        };
        assert!(!errors.is_empty());
        check_token_spans(&src);
        for e in &errors {
            assert!(in_source(&src, e.span), "{}: error span {:?} outside the source", path.display(), e.span);
            assert!(!e.message.ends_with('.'), "message ends with a period: {}", e.message);
            assert!(!e.message.starts_with(char::is_uppercase), "message not lowercase: {}", e.message);
        }
        let starts: Vec<usize> = errors.iter().map(|e| e.span.start).collect();
        assert!(starts.windows(2).all(|w| w[0] < w[1]), "errors not in source order or duplicated");
        insta::with_settings!({ description => numbered(&src) }, {
            insta::assert_snapshot!(render_errors(&src, &errors));
        });
    });
}

fn in_source(src: &str, span: Span) -> bool {
    span.start <= span.end
        && span.end <= src.len()
        && src.is_char_boundary(span.start)
        && src.is_char_boundary(span.end)
}

fn check_token_spans(src: &str) {
    let lexed = lexer::tokenize(src);
    let mut last = 0;
    for t in &lexed.tokens {
        assert!(in_source(src, t.span), "token {:?} at {:?} outside the source", t.tok, t.span);
        assert!(t.span.start >= last, "tokens out of order at {:?}", t.span);
        last = t.span.start;
    }
    for e in &lexed.errors {
        assert!(in_source(src, e.span), "lex error {:?} outside the source", e);
    }
}

struct SpanCheck<'s> {
    src: &'s str,
}

impl SpanCheck<'_> {
    fn span(&self, span: Span, parent: Span, what: &str) {
        assert!(in_source(self.src, span), "{what} span {span:?} outside the source");
        assert!(
            parent.start <= span.start && span.end <= parent.end,
            "{what} span {span:?} ({:?}) outside its parent {parent:?} ({:?})",
            &self.src[span.start..span.end],
            &self.src[parent.start..parent.end],
        );
    }

    fn module(&self, m: &Module) {
        let all = Span::new(0, self.src.len());
        for s in &m.body {
            self.stmt(s, all);
        }
    }

    fn stmt(&self, s: &Stmt, parent: Span) {
        self.span(s.span, parent, "statement");
        assert!(s.span.start < s.span.end, "empty statement span");
        match &s.kind {
            StmtKind::FunctionDef { name, params, .. } => {
                self.span(name.span, s.span, "function name");
                for p in params {
                    self.span(p.span, s.span, "parameter");
                    self.span(p.name.span, p.span, "parameter name");
                }
            }
            StmtKind::ClassDef { name, .. } => self.span(name.span, s.span, "class name"),
            StmtKind::Import { text } => assert_eq!(text, &self.src[s.span.start..s.span.end]),
            _ => {}
        }
        for e in s.exprs() {
            self.expr(e, s.span);
        }
        for block in s.blocks() {
            for inner in block {
                self.stmt(inner, s.span);
            }
        }
    }

    fn expr(&self, e: &Expr, parent: Span) {
        self.span(e.span, parent, "expression");
        assert!(e.span.start < e.span.end, "empty expression span");
        match &e.kind {
            ExprKind::Attribute { attr, .. } => self.span(attr.span, e.span, "attribute name"),
            ExprKind::Lambda { params, .. } => {
                for p in params {
                    self.span(p.span, e.span, "lambda parameter");
                }
            }
            ExprKind::Call { args, .. } => {
                for a in args {
                    if let Arg::Keyword(k, _) = a {
                        self.span(k.span, e.span, "keyword");
                    }
                }
            }
            _ => {}
        }
        for c in e.children() {
            self.expr(c, e.span);
        }
    }
}

/// A deterministic xorshift generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// Mutants of `src`: pieces (chars, tokens, lines) deleted, duplicated,
/// swapped, or a bracket or other tricky character inserted; and
/// truncations every 7 bytes.
fn mutants(src: &str, rng: &mut Rng, count: usize) -> Vec<String> {
    let chars: Vec<(usize, char)> = src.char_indices().collect();
    let char_spans: Vec<Span> = chars.iter().map(|&(i, c)| Span::new(i, i + c.len_utf8())).collect();
    let token_spans: Vec<Span> =
        lexer::tokenize(src).tokens.iter().map(|t| t.span).filter(|s| s.start < s.end).collect();
    let mut line_spans = Vec::new();
    let mut start = 0;
    for line in src.split_inclusive('\n') {
        line_spans.push(Span::new(start, start + line.len()));
        start += line.len();
    }
    let mut out = Vec::new();
    for cut in (0..src.len()).step_by(7) {
        if src.is_char_boundary(cut) {
            out.push(src[..cut].to_string());
        }
    }
    let tricky =
        ["(", ")", "[", "]", "{", "}", ":", ",", "\n", "\t", "    ", "\"", "'''", "\\", "#", "=", "@", "é", "**"];
    for _ in 0..count {
        let pieces = match rng.below(3) {
            0 => &char_spans,
            1 => &token_spans,
            _ => &line_spans,
        };
        if pieces.is_empty() {
            continue;
        }
        let a = pieces[rng.below(pieces.len())];
        let b = pieces[rng.below(pieces.len())];
        let piece = |s: Span| &src[s.start..s.end];
        let mutant = match rng.below(4) {
            0 => format!("{}{}", &src[..a.start], &src[a.end..]),
            1 => format!("{}{}{}", &src[..a.end], piece(a), &src[a.end..]),
            2 => {
                let (x, y) = if a.end <= b.start {
                    (a, b)
                } else if b.end <= a.start {
                    (b, a)
                } else {
                    continue;
                };
                format!("{}{}{}{}{}", &src[..x.start], piece(y), &src[x.end..y.start], piece(x), &src[y.end..])
            }
            _ => format!("{}{}{}", &src[..a.start], tricky[rng.below(tricky.len())], &src[a.start..]),
        };
        out.push(mutant);
    }
    out
}

#[test]
fn mutants_never_panic() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/ok");
    let mut paths: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    paths.sort();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut total = 0;
    for path in paths {
        let src = read(&path);
        for mutant in mutants(&src, &mut rng, 800) {
            total += 1;
            let result = std::panic::catch_unwind(|| parse(&mutant));
            match result {
                Err(_) => panic!("parse panicked on a mutant of {}:\n{mutant}", path.display()),
                Ok(Err(errors)) => {
                    for e in errors {
                        assert!(in_source(&mutant, e.span), "error span {:?} outside mutant:\n{mutant}", e.span);
                    }
                }
                Ok(Ok(m)) => SpanCheck { src: &mutant }.module(&m),
            }
        }
    }
    assert!(total >= 3000, "only {total} mutants");
}

#[test]
fn precedence() {
    let cases = [
        ("-2**2", "(- (** 2 2))"),
        ("2**-1", "(** 2 (- 1))"),
        ("a**b**c", "(** a (** b c))"),
        ("a - b - c", "(- (- a b) c)"),
        ("a + b * c", "(+ a (* b c))"),
        ("not a == b", "(not (cmp a == b))"),
        ("a or b and c", "(or a (and b c))"),
        ("a | b ^ c & d", "(| a (^ b (& c d)))"),
        ("a << 1 + 2", "(<< a (+ 1 2))"),
        ("a if b else c if d else e", "(if-expr b a (if-expr d c e))"),
        ("lambda x: x if x else y", "(lambda (x) (if-expr x x y))"),
        ("-a.b[1](2)", "(- (call (index (attr a b) 1) 2))"),
        ("a is not b not in c", "(cmp a is-not b not-in c)"),
    ];
    for (src, want) in cases {
        let m = parse(&format!("{src}\n")).unwrap_or_else(|e| panic!("{src}: {e:?}"));
        assert_eq!(sexpr::module(&m).trim(), format!("(expr {want})"), "{src}");
    }
}

#[test]
fn empty_and_blank_sources() {
    for src in ["", "\n", "# only a comment", "\n\n   \n# c\n  # indented comment\n"] {
        assert_eq!(parse(src).map(|m| m.body.len()), Ok(0), "{src:?}");
    }
}

#[test]
fn crlf_line_ends_and_byte_order_mark() {
    let m = parse("\u{feff}if x:\r\n    y = 1\r\nelse:\r\n    y = 2\r\n").unwrap();
    assert_eq!(sexpr::module(&m), "(if x\n  (= y 1)\nelse\n  (= y 2)\n)\n");
}

#[test]
fn elif_chain_nests_in_orelse() {
    let m = parse("if a:\n    x = 1\nelif b:\n    x = 2\nelse:\n    x = 3\n").unwrap();
    let want = "(if a\n  (= x 1)\nelse\n  (if b\n    (= x 2)\n  else\n    (= x 3)\n  )\n)\n";
    assert_eq!(sexpr::module(&m), want);
}

/// A lone carriage return ends a line, as in Python: a file of old Mac line
/// ends parses as the same file with line feeds, and formats to it (it was
/// one line, a comment when the file began with one, and `fmt --write`
/// emptied the file).
#[test]
fn a_lone_carriage_return_ends_a_line() {
    let lf = "# a comment\n@T.prim_func\ndef f(A: T.Buffer((8,), \"float32\")):\n    for i in range(8):\n        A[i] = 1.0\n";
    let cr = lf.replace('\n', "\r");
    let (a, b) = (tirc_parser::parse(lf), tirc_parser::parse(&cr));
    let (a, b) = (a.expect("LF parses"), b.expect("CR parses"));
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
    let formatted = tirc_parser::layout::format(&cr).expect("CR formats");
    assert_eq!(formatted, tirc_parser::layout::format(lf).expect("LF formats"));
    assert!(formatted.contains("def f"), "{formatted}");
}
