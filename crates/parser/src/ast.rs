//! The syntax tree of a `.tir` file: the Python subset that TVMScript and
//! TVM schedule scripts are written in.
//!
//! The parser knows nothing of TensorIR: `T.grid(...)` is a call of an
//! attribute of a name, like any other. Giving it meaning is the job of the
//! `resolve` step in the `ir` crate. Every node carries the byte range of the
//! source text it came from, so that every later error can point at it.

/// A byte range `start..end` in the source text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }

    /// The smallest span that covers both.
    pub fn to(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }
}

impl From<Span> for miette::SourceSpan {
    fn from(s: Span) -> miette::SourceSpan {
        (s.start, s.end.saturating_sub(s.start)).into()
    }
}

/// A name as written, with where it was written.
#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

/// A whole file: its top-level statements in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Module {
    pub body: Vec<Stmt>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// An expression on its own line, e.g. `sch.bind(i, "blockIdx.x")`.
    Expr(Expr),
    /// `target = value`; `a, b = f()` has a `Tuple` target. `a = b = c` has
    /// two targets, outermost first.
    Assign {
        targets: Vec<Expr>,
        value: Expr,
    },
    /// `target op= value`.
    AugAssign {
        target: Expr,
        op: BinOp,
        value: Expr,
    },
    /// `target: annotation` or `target: annotation = value`.
    AnnAssign {
        target: Expr,
        annotation: Expr,
        value: Option<Expr>,
    },
    /// `for target in iter:`.
    For {
        target: Expr,
        iter: Expr,
        body: Vec<Stmt>,
    },
    /// `while cond:`.
    While {
        cond: Expr,
        body: Vec<Stmt>,
    },
    /// `if cond: ... elif ...: ... else: ...`; an `elif` is an `If` alone in
    /// `orelse`.
    If {
        cond: Expr,
        body: Vec<Stmt>,
        orelse: Vec<Stmt>,
    },
    /// `with a as x, b:`.
    With {
        items: Vec<WithItem>,
        body: Vec<Stmt>,
    },
    /// `@decorators def name(params) -> returns: body`.
    FunctionDef {
        name: Ident,
        params: Vec<Param>,
        decorators: Vec<Expr>,
        returns: Option<Expr>,
        body: Vec<Stmt>,
    },
    /// `@decorators class name(bases): body`.
    ClassDef {
        name: Ident,
        bases: Vec<Expr>,
        decorators: Vec<Expr>,
        body: Vec<Stmt>,
    },
    Return(Option<Expr>),
    Assert {
        cond: Expr,
        msg: Option<Expr>,
    },
    Pass,
    Break,
    Continue,
    /// `import a.b as c` or `from a.b import c as d, e`; kept so that tools
    /// can see them, ignored by resolve.
    Import {
        text: String,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct WithItem {
    pub context: Expr,
    pub target: Option<Expr>,
}

/// A function parameter: `name`, `name: annotation`, `name=default`,
/// `name: annotation = default`.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: Ident,
    pub annotation: Option<Expr>,
    pub default: Option<Expr>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Name(String),
    Int(i64),
    Float(f64),
    Str(String),
    Bool(bool),
    None,
    /// `value.attr`.
    Attribute {
        value: Box<Expr>,
        attr: Ident,
    },
    /// `func(args)`.
    Call {
        func: Box<Expr>,
        args: Vec<Arg>,
    },
    /// `value[i, j:k]`: one entry per comma-separated index; a slice is an
    /// `ExprKind::Slice`. `a[x]` has one index, `a[x, y]` two, `a[(x, y)]`
    /// one `Tuple` index.
    Subscript {
        value: Box<Expr>,
        indices: Vec<Expr>,
    },
    /// `lo:hi:step`, only as an index.
    Slice {
        lo: Option<Box<Expr>>,
        hi: Option<Box<Expr>>,
        step: Option<Box<Expr>>,
    },
    Tuple(Vec<Expr>),
    /// `*e` as an element of a tuple: its items unpacked in place.
    Starred(Box<Expr>),
    List(Vec<Expr>),
    Dict(Vec<(Expr, Expr)>),
    Unary {
        op: UnaryOp,
        operand: Box<Expr>,
    },
    Binary {
        op: BinOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// `a < b <= c` is `Compare { first: a, rest: [(Lt, b), (Le, c)] }`.
    Compare {
        first: Box<Expr>,
        rest: Vec<(CmpOp, Expr)>,
    },
    /// `a and b and c` is one `BoolOp` with three operands.
    BoolOp {
        op: BoolOp,
        operands: Vec<Expr>,
    },
    /// `then if cond else orelse`.
    IfExp {
        cond: Box<Expr>,
        then: Box<Expr>,
        orelse: Box<Expr>,
    },
    /// `lambda a, b: body`.
    Lambda {
        params: Vec<Ident>,
        body: Box<Expr>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    Positional(Expr),
    Keyword(Ident, Expr),
    /// `*expr`.
    Star(Expr),
    /// `**expr`.
    DoubleStar(Expr),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    Neg,
    Pos,
    Not,
    Invert,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
    Pow,
    MatMul,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    In,
    NotIn,
    Is,
    IsNot,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoolOp {
    And,
    Or,
}

impl Expr {
    /// The expressions directly inside this one, in source order.
    pub fn children(&self) -> Vec<&Expr> {
        match &self.kind {
            ExprKind::Name(_)
            | ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Str(_)
            | ExprKind::Bool(_)
            | ExprKind::None => vec![],
            ExprKind::Attribute { value, .. } => vec![value],
            ExprKind::Call { func, args } => {
                let mut v = vec![&**func];
                v.extend(args.iter().map(Arg::value));
                v
            }
            ExprKind::Subscript { value, indices } => {
                let mut v = vec![&**value];
                v.extend(indices);
                v
            }
            ExprKind::Slice { lo, hi, step } => [lo, hi, step].into_iter().flatten().map(|e| &**e).collect(),
            ExprKind::Tuple(items) | ExprKind::List(items) => items.iter().collect(),
            ExprKind::Dict(items) => items.iter().flat_map(|(k, v)| [k, v]).collect(),
            ExprKind::Unary { operand, .. } | ExprKind::Starred(operand) => vec![operand],
            ExprKind::Binary { lhs, rhs, .. } => vec![lhs, rhs],
            ExprKind::Compare { first, rest } => {
                let mut v = vec![&**first];
                v.extend(rest.iter().map(|(_, e)| e));
                v
            }
            ExprKind::BoolOp { operands, .. } => operands.iter().collect(),
            ExprKind::IfExp { cond, then, orelse } => vec![then, cond, orelse],
            ExprKind::Lambda { body, .. } => vec![body],
        }
    }
}

impl Arg {
    /// The argument's expression, whatever its kind.
    pub fn value(&self) -> &Expr {
        match self {
            Arg::Positional(e) | Arg::Keyword(_, e) | Arg::Star(e) | Arg::DoubleStar(e) => e,
        }
    }
}

impl Stmt {
    /// The expressions directly in this statement (not in its nested
    /// statements), in source order.
    pub fn exprs(&self) -> Vec<&Expr> {
        match &self.kind {
            StmtKind::Expr(e) => vec![e],
            StmtKind::Assign { targets, value } => targets.iter().chain([value]).collect(),
            StmtKind::AugAssign { target, value, .. } => vec![target, value],
            StmtKind::AnnAssign { target, annotation, value } => {
                [Some(target), Some(annotation), value.as_ref()].into_iter().flatten().collect()
            }
            StmtKind::For { target, iter, .. } => vec![target, iter],
            StmtKind::While { cond, .. } | StmtKind::If { cond, .. } => vec![cond],
            StmtKind::With { items, .. } => {
                items.iter().flat_map(|i| [Some(&i.context), i.target.as_ref()]).flatten().collect()
            }
            StmtKind::FunctionDef { params, decorators, returns, .. } => {
                let mut v: Vec<&Expr> = decorators.iter().collect();
                for p in params {
                    v.extend(p.annotation.iter().chain(p.default.iter()));
                }
                v.extend(returns);
                v
            }
            StmtKind::ClassDef { bases, decorators, .. } => decorators.iter().chain(bases).collect(),
            StmtKind::Return(e) => e.iter().collect(),
            StmtKind::Assert { cond, msg } => [Some(cond), msg.as_ref()].into_iter().flatten().collect(),
            StmtKind::Pass | StmtKind::Break | StmtKind::Continue | StmtKind::Import { .. } => {
                vec![]
            }
        }
    }

    /// The statement blocks nested in this statement: a body, and an
    /// `else` block when there is one.
    pub fn blocks(&self) -> Vec<&[Stmt]> {
        match &self.kind {
            StmtKind::For { body, .. }
            | StmtKind::While { body, .. }
            | StmtKind::With { body, .. }
            | StmtKind::FunctionDef { body, .. }
            | StmtKind::ClassDef { body, .. } => vec![body],
            StmtKind::If { body, orelse, .. } => vec![body, orelse],
            _ => vec![],
        }
    }
}
