//! Diagnostics: every error a user can cause, as a value with a span.
//!
//! A `Diagnostic` says what is wrong (`message`, lowercase, no trailing
//! period), where (`span`, with a short `label`), and, when a fix is obvious,
//! how (`help`). `render` draws it under the source line with miette.
//!
//! Most diagnostics are errors: the input is refused. A *warning* reports
//! something legal but likely unintended (a slow kernel): the commands
//! print it and go on, with the exit status unchanged.

use tirc_parser::ast::Span;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Severity {
    #[default]
    Error,
    Warning,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    pub message: String,
    pub span: Option<Span>,
    pub label: Option<String>,
    pub help: Option<String>,
    pub severity: Severity,
    /// The named kind of the error, where it has one
    /// (`schedule::not-found`): shown above the message, stable for tools
    /// and tests to match.
    pub code: Option<&'static str>,
}

pub type Result<T> = std::result::Result<T, Diagnostic>;

impl Diagnostic {
    pub fn new(message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            message: message.into(),
            span: None,
            label: None,
            help: None,
            severity: Severity::Error,
            code: None,
        }
    }

    /// A warning: legal input, reported, not refused.
    pub fn warning(message: impl Into<String>) -> Diagnostic {
        Diagnostic { severity: Severity::Warning, ..Diagnostic::new(message) }
    }

    pub fn is_warning(&self) -> bool {
        self.severity == Severity::Warning
    }

    pub fn at(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic { span: Some(span), ..Diagnostic::new(message) }
    }

    pub fn label(mut self, label: impl Into<String>) -> Diagnostic {
        self.label = Some(label.into());
        self
    }

    pub fn code(mut self, code: &'static str) -> Diagnostic {
        self.code = Some(code);
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    /// Gives the diagnostic the span `span` points at, with `label`, if it
    /// has none yet and `span` is known: where a lowering error found on a
    /// loop or block of the IR points at the source line that made it.
    pub fn or_at_ir(self, span: Option<Span>, label: &str) -> Diagnostic {
        match span {
            Some(s) if self.span.is_none() => Diagnostic { span: Some(s), label: Some(label.to_string()), ..self },
            _ => self,
        }
    }

    /// Gives the diagnostic a span if it has none yet.
    pub fn or_at(mut self, span: Span) -> Diagnostic {
        if self.span.is_none() {
            self.span = Some(span);
        }
        self
    }

    /// Renders the diagnostic against the source text, without colours.
    pub fn render(&self, file_name: &str, src: &str) -> String {
        // Lines as the parser counted them (a lone carriage return ends one).
        let normalized = tirc_parser::lexer::normalize_line_ends(src);
        let src: &str = &normalized;
        // miette lays a source line out in full (and fails on lines of some
        // megabytes): past a few thousand characters, the short form with
        // line and column says more than a snippet could.
        if let Some(s) = self.span {
            let start = src[..src.floor_char_boundary(s.start.min(src.len()))].rfind('\n').map_or(0, |i| i + 1);
            let end = src[start..].find('\n').map_or(src.len(), |i| start + i);
            if end - start > LONG_LINE {
                let kind = if self.is_warning() { "warning" } else { "error" };
                let mut out = format!("{kind}: {}\n", self.short(file_name, src));
                if let Some(h) = &self.help {
                    out.push_str(&format!("  help: {h}\n"));
                }
                return out;
            }
        }
        let report = Report { d: self, src: miette::NamedSource::new(file_name, src.to_string()) };
        let mut out = String::new();
        let handler =
            miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor()).with_width(100);
        if handler.render_report(&mut out, &report).is_err() {
            let kind = if self.is_warning() { "warning" } else { "error" };
            out = format!("{kind}: {}\n", self.message);
        }
        out
    }

    /// A one-line form, `file:line:col: message`, for logs and tests.
    pub fn short(&self, file_name: &str, src: &str) -> String {
        match self.span {
            Some(s) => {
                let (line, col) = line_col(src, s.start);
                format!("{file_name}:{line}:{col}: {}", self.message)
            }
            None => format!("{file_name}: {}", self.message),
        }
    }
}

/// 1-based line and column of a byte offset.
pub fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(src.len());
    let before = &src[..src.floor_char_boundary(offset)];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// Source lines longer than this are not drawn under a diagnostic.
const LONG_LINE: usize = 4000;

#[derive(Debug)]
struct Report<'a> {
    d: &'a Diagnostic,
    src: miette::NamedSource<String>,
}

impl std::fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.d.message)
    }
}

impl std::error::Error for Report<'_> {}

impl miette::Diagnostic for Report<'_> {
    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.d.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
        })
    }

    fn code<'b>(&'b self) -> Option<Box<dyn std::fmt::Display + 'b>> {
        self.d.code.map(|c| Box::new(c) as Box<dyn std::fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.d.span.map(|_| &self.src as &dyn miette::SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        let span = self.d.span?;
        let label = miette::LabeledSpan::new_with_span(self.d.label.clone(), span);
        Some(Box::new(std::iter::once(label)))
    }

    fn help<'b>(&'b self) -> Option<Box<dyn std::fmt::Display + 'b>> {
        self.d.help.as_ref().map(|h| Box::new(h.clone()) as Box<dyn std::fmt::Display>)
    }
}

/// The candidate nearest to `name` by edit distance, if it is near enough to
/// be a likely misspelling.
pub fn suggest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(1);
    // Ties go to the name of the closest length, then to the one listed
    // last (the most recently defined).
    let len = name.chars().count() as isize;
    candidates
        .into_iter()
        .enumerate()
        .map(|(i, c)| (edit_distance(name, c), (c.chars().count() as isize - len).abs(), usize::MAX - i, c))
        .filter(|(d, ..)| *d <= limit)
        .min_by_key(|(d, l, i, _)| (*d, *l, *i))
        .map(|(.., c)| c)
}

/// Edits (insert, delete, substitute, or swap two neighbours: `float23`
/// is one swap from `float32`) that turn `a` into `b`.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut before: Vec<usize> = Vec::new();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                cur[j] = cur[j].min(before[j - 2] + 1);
            }
        }
        before = std::mem::replace(&mut prev, cur);
    }
    prev[b.len()]
}

/// `help: did you mean `x`?` when a near name exists.
pub fn did_you_mean<'a>(d: Diagnostic, name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Diagnostic {
    match suggest(name, candidates) {
        Some(s) => d.help(format!("did you mean `{s}`?")),
        None => d,
    }
}
