//! The simulator's first step: a lowered kernel compiled into a tree of
//! typed operations that the machine (`machine.rs`) runs.
//!
//! Compiling settles, once per kernel, what a tree walk over the IR would
//! decide at every step: each variable gets a slot in a table (one value per
//! thread), each buffer the memory that holds it (the innermost allocation
//! of that buffer around the access, as the IR scopes it), and each
//! expression its kind: an integer or a float, with the narrowing of every
//! float result chosen from its type. Errors that only show when a statement
//! runs (an access outside its allocation, a variable with no value) compile
//! to a node that reports them when it runs, so that dead code stays
//! harmless, as it is on the GPU.

use super::value::Precision;
use std::collections::HashMap;
use tirc_ir::{BinOp, Buffer, DType, Expr, Intrinsic, IterKind, PrimFunc, Scope, Stmt, ThreadTag, WmmaOp};

/// A slot of the integer or of the float variable table.
pub(super) type Slot = usize;

pub(super) struct Program {
    pub body: Node,
    /// The launch head's variables, bound once per thread block.
    pub launch: Vec<(Slot, ThreadTag)>,
    /// Every memory: the parameters first, in order, then one per
    /// allocation statement.
    pub mems: Vec<MemDecl>,
    pub int_slots: usize,
    pub float_slots: usize,
    /// Integer expressions of the launch indices alone that are not affine
    /// (`(blockIdx_x * 256 + threadIdx_x) // 512`): each is computed once
    /// per thread block, right after the launch head, into its slot,
    /// instead of at every use inside the loops. In dependency order.
    pub hoisted: Vec<(Slot, IExpr)>,
}

pub(super) struct MemDecl {
    pub name: String,
    pub scope: Scope,
    /// A global buffer the kernel both writes and reads: threads may pass
    /// values through it, so its accesses are checked for races like
    /// shared memory's.
    pub exchanged: bool,
    /// Its elements, or why it has no constant size.
    pub elements: Result<usize, String>,
    /// Its swizzle's width in bytes (0 for none) and its element size.
    pub swizzle: (i64, i64),
}

pub(super) enum Node {
    Seq(Vec<Node>),
    Nop,
    Barrier,
    AsyncCommit,
    AsyncWait(usize),
    Store {
        mem: usize,
        index: Index,
        value: FExpr,
        round: Precision,
        /// A `cp.async`: it lands at the `wait_group` covering its group.
        cp_async: bool,
    },
    If {
        cond: IExpr,
        then: Box<Node>,
        orelse: Option<Box<Node>>,
    },
    For {
        var: Slot,
        min: IExpr,
        extent: IExpr,
        body: Box<Node>,
    },
    LetInt {
        var: Slot,
        value: IExpr,
        body: Box<Node>,
    },
    LetFloat {
        var: Slot,
        value: FExpr,
        body: Box<Node>,
    },
    Alloc {
        mem: usize,
        body: Box<Node>,
    },
    Block(Box<BlockNode>),
    /// A warp-wide tensor-core operation (`tirc_ir::wmma`).
    Wmma(Box<WmmaNode>),
    /// A bulk tensor copy (`T.tma_load`): issued once for the block, it
    /// lands at once; the loop's mbarriers order it against the readers,
    /// so the words it writes start a fresh race record.
    TmaLoad(Box<TmaNode>),
    /// An error reported when the statement runs.
    Fail(String),
}

/// `dst[dst_index..] = the box `boxed` of src at `coords`, src of shape
/// `shape` (all outermost first), zeros past its edge.
pub(super) struct TmaNode {
    pub dst: usize,
    pub dst_index: Index,
    pub src: usize,
    pub coords: Vec<IExpr>,
    pub boxed: Vec<i64>,
    pub shape: Vec<i64>,
}

/// A tensor-core operation: its tiles (`tiles[0]` written), the value a
/// fill writes, the rounding of the written tile's type, and whether a
/// product's operands are first rounded to tf32.
pub(super) struct WmmaNode {
    pub op: WmmaOp,
    pub tiles: Vec<TileNode>,
    pub value: Option<FExpr>,
    pub round: Precision,
    pub tf32: bool,
    /// An `MmaStore`'s rows and columns stored (`Wmma::bound`).
    pub bound: Option<(IExpr, IExpr)>,
}

/// A 16×16 tile: element `(r, c)` is element `base + r * stride + c` of its
/// memory (row-major, `base` the first element's index).
pub(super) struct TileNode {
    pub mem: usize,
    pub base: Index,
    pub stride: IExpr,
    /// The rows and columns it covers: 16×16, or a warp tile's 32 lanes
    /// of 8 elements.
    pub extent: (usize, usize),
}

/// A block realize: its variables bound, its predicate, its init run where
/// every reduction variable is at its start, and its body with its buffers
/// allocated around it.
pub(super) struct BlockNode {
    /// Each variable's slot, its value, and for a reduction variable the
    /// start of its domain.
    pub binds: Vec<(Slot, IExpr, Option<IExpr>)>,
    pub predicate: IExpr,
    pub init: Option<Node>,
    pub body: Node,
}

/// Where an access goes, as an element index of its memory.
pub(super) enum Index {
    /// Already flat: checked against the memory's size only.
    Flat(IExpr),
    /// Row-major over a constant shape, each index checked against its
    /// dimension's extent.
    Dims(Vec<(IExpr, i64)>, String),
}

pub(super) struct Load {
    pub mem: usize,
    pub index: Index,
}

/// An expression whose value is an integer (or a bool, as 0 and 1).
pub(super) enum IExpr {
    Const(i64),
    Var(Slot),
    /// Integer arithmetic or comparison; arithmetic wraps to the type.
    Bin(BinOp, DType, Box<IExpr>, Box<IExpr>),
    BinConst(BinOp, DType, Box<IExpr>, i64),
    FloatCompare(BinOp, Box<FExpr>, Box<FExpr>),
    Not(Box<IExpr>),
    /// `&&` and `||`: the right side is evaluated only by the threads
    /// whose left side does not decide.
    And(Box<IExpr>, Box<IExpr>),
    Or(Box<IExpr>, Box<IExpr>),
    Select(Box<IExpr>, Box<IExpr>, Box<IExpr>),
    /// A cast to a narrower integer type.
    Wrap(Box<IExpr>, DType),
    /// `constant + Σ coefficient × term`, wrapped to `t`: a sum of
    /// products with literals, all computed in one type, as index
    /// arithmetic is. Wrapping once at the end gives what wrapping every
    /// step gives (integers modulo 2^bits are a ring).
    Affine {
        terms: Vec<(Term, i64)>,
        constant: i64,
        t: DType,
    },
    /// A cast to bool.
    NonZero(Box<IExpr>),
    FloatNonZero(Box<FExpr>),
    /// A float truncated toward zero, then wrapped to a type if one is given.
    Trunc(Box<FExpr>, Option<DType>),
    Abs(Box<IExpr>),
    /// `T.tvm_warp_shuffle_down`: the value, the offset and the width.
    Shuffle(Box<IExpr>, u32, u32),
    Load(Box<Load>),
    Fail(String),
}

/// A term of an affine sum: a variable, or any other integer expression.
pub(super) enum Term {
    Var(Slot),
    Expr(IExpr),
}

/// An expression whose value is a float, computed in f64.
pub(super) enum FExpr {
    Const(f64),
    Var(Slot),
    Bin(BinOp, Precision, Box<FExpr>, Box<FExpr>),
    FromInt(Box<IExpr>),
    Round(Box<FExpr>, Precision),
    Select(Box<IExpr>, Box<FExpr>, Box<FExpr>),
    Call(Intrinsic, Precision, Box<FExpr>, Option<Box<FExpr>>),
    /// `T.tvm_warp_shuffle_down`: the value, the offset and the width.
    Shuffle(Box<FExpr>, u32, u32),
    Load(Box<Load>),
    Fail(String),
}

enum Compiled {
    I(IExpr),
    F(FExpr),
}

impl Compiled {
    fn int(self) -> IExpr {
        match self {
            Compiled::I(e) => e,
            Compiled::F(e) => IExpr::Trunc(Box::new(e), None),
        }
    }

    fn float(self) -> FExpr {
        match self {
            Compiled::I(IExpr::Const(v)) => FExpr::Const(v as f64),
            Compiled::I(e) => FExpr::FromInt(Box::new(e)),
            Compiled::F(e) => e,
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Int,
    Float,
}

struct Compiler {
    f64_storage: bool,
    /// Each variable's slot, by its key: the binding met last in program
    /// order.
    vars: HashMap<usize, (Kind, Slot)>,
    int_slots: usize,
    float_slots: usize,
    mems: Vec<MemDecl>,
    /// The buffers in scope and their memories, innermost last.
    scope: Vec<(Buffer, usize)>,
    /// The launch variables, by key: what a hoisted expression may read.
    launch_vars: Vec<usize>,
    hoisted: Vec<(Slot, IExpr)>,
    /// The hoisted expressions by their printed form, for reuse.
    hoisted_by_text: HashMap<String, Slot>,
}

/// Compiles a lowered function: its launch head binds the block and thread
/// indices, the rest runs on every thread of every block.
pub(super) fn compile(f: &PrimFunc, f64_storage: bool) -> Program {
    let mut c = Compiler {
        f64_storage,
        vars: HashMap::new(),
        int_slots: 0,
        float_slots: 0,
        mems: Vec::new(),
        scope: Vec::new(),
        launch_vars: Vec::new(),
        hoisted: Vec::new(),
        hoisted_by_text: HashMap::new(),
    };
    for b in &f.params {
        let m = c.declare(b);
        c.scope.push((b.clone(), m));
    }
    let (head, body) = f.body.launch_head();
    let launch = head.into_iter().map(|(var, tag, _)| (c.bind(var.key(), Kind::Int), tag)).collect();
    c.launch_vars = f.body.launch_head().0.iter().map(|(v, _, _)| v.key()).collect();
    let body = c.stmt(body);
    let mut mems = c.mems;
    for (m, b) in mems.iter_mut().zip(&f.params) {
        m.exchanged = b.scope() == Scope::Global && f.body.stores_to(b) && f.body.loads_from(b);
    }
    Program { body, launch, mems, int_slots: c.int_slots, float_slots: c.float_slots, hoisted: c.hoisted }
}

/// An affine sum as an expression.
fn affine_expr((terms, constant): (Vec<(Term, i64)>, i64), t: DType) -> IExpr {
    if terms.is_empty() {
        let mut c = [constant];
        super::value::wrap_to(t, &mut c);
        return IExpr::Const(c[0]);
    }
    IExpr::Affine { terms, constant, t }
}

impl Compiler {
    fn declare(&mut self, b: &Buffer) -> usize {
        let elements = b
            .num_elements()
            .map(|n| n.max(0) as usize)
            .ok_or_else(|| format!("buffer {} has no constant size", b.name()));
        self.mems.push(MemDecl {
            name: b.name().to_string(),
            scope: b.scope(),
            exchanged: false,
            elements,
            swizzle: (b.swizzle(), b.dtype().bytes() as i64),
        });
        self.mems.len() - 1
    }

    fn bind(&mut self, key: usize, kind: Kind) -> Slot {
        if let Some((k, s)) = self.vars.get(&key) {
            if *k == kind {
                return *s;
            }
        }
        let slot = match kind {
            Kind::Int => {
                self.int_slots += 1;
                self.int_slots - 1
            }
            Kind::Float => {
                self.float_slots += 1;
                self.float_slots - 1
            }
        };
        self.vars.insert(key, (kind, slot));
        slot
    }

    fn memory(&self, b: &Buffer) -> Result<usize, String> {
        self.scope
            .iter()
            .rev()
            .find(|(x, _)| x == b)
            .map(|(_, m)| *m)
            .ok_or_else(|| format!("buffer {} is used outside its allocation", b.name()))
    }

    fn stmt(&mut self, s: &Stmt) -> Node {
        match s {
            Stmt::Seq(v) => Node::Seq(v.iter().map(|x| self.stmt(x)).collect()),
            Stmt::NoOp => Node::Nop,
            Stmt::Barrier => Node::Barrier,
            Stmt::AsyncCommit => Node::AsyncCommit,
            Stmt::AsyncWait(n) => Node::AsyncWait((*n).max(0) as usize),
            Stmt::Store { buffer, indices, value: Expr::Call(Intrinsic::TmaLoad, args) } => {
                match self.tma_load(buffer, indices, args) {
                    Ok(n) => Node::TmaLoad(Box::new(n)),
                    Err(e) => Node::Fail(e),
                }
            }
            Stmt::Store { buffer, indices, value } => {
                let (value, cp_async) = match value {
                    Expr::Call(Intrinsic::CpAsync, args) if args.len() == 1 => (&args[0], true),
                    v => (v, false),
                };
                let value = self.expr(value).float();
                let index = match self.index(buffer, indices) {
                    Ok(i) => i,
                    Err(e) => return Node::Fail(e),
                };
                let mem = match self.memory(buffer) {
                    Ok(m) => m,
                    Err(e) => return Node::Fail(e),
                };
                if cp_async && self.mems[mem].scope != Scope::Shared {
                    return Node::Fail(format!(
                        "an asynchronous copy into {}, which is not in shared memory",
                        buffer.name()
                    ));
                }
                let round = Precision::of(buffer.dtype(), self.f64_storage);
                Node::Store { mem, index, value, round, cp_async }
            }
            Stmt::If { cond, then, orelse } => Node::If {
                cond: self.expr(cond).int(),
                then: Box::new(self.stmt(then)),
                orelse: orelse.as_ref().map(|e| Box::new(self.stmt(e))),
            },
            Stmt::For(l) => {
                let min = self.expr(&l.min).int();
                let extent = self.expr(&l.extent).int();
                let var = self.bind(l.var.key(), Kind::Int);
                Node::For { var, min, extent, body: Box::new(self.stmt(&l.body)) }
            }
            Stmt::Let { var, value, body } => match self.expr(value) {
                Compiled::I(value) => {
                    let var = self.bind(var.key(), Kind::Int);
                    Node::LetInt { var, value, body: Box::new(self.stmt(body)) }
                }
                Compiled::F(value) => {
                    let var = self.bind(var.key(), Kind::Float);
                    Node::LetFloat { var, value, body: Box::new(self.stmt(body)) }
                }
            },
            Stmt::Allocate { buffer, body } => self.allocate(std::slice::from_ref(buffer), body),
            Stmt::Launch { .. } => Node::Fail("a launch inside the kernel body".into()),
            Stmt::Wmma(w) => {
                let mut tiles = Vec::new();
                for t in &w.tiles {
                    let stride = match &t.ldm {
                        Some(l) => self.expr(l).int(),
                        None => match t.buffer.const_shape().and_then(|s| s.last().copied()) {
                            Some(n) => IExpr::Const(n),
                            None => {
                                return Node::Fail(format!("tile of {} has no constant row length", t.buffer.name()))
                            }
                        },
                    };
                    let base = match self.index(&t.buffer, &t.indices) {
                        Ok(i) => i,
                        Err(e) => return Node::Fail(e),
                    };
                    let mem = match self.memory(&t.buffer) {
                        Ok(m) => m,
                        Err(e) => return Node::Fail(e),
                    };
                    let (rows, cols) = t.extent();
                    tiles.push(TileNode { mem, base, stride, extent: (rows as usize, cols as usize) });
                }
                let value = w.value.as_ref().map(|v| self.expr(v).float());
                let round = Precision::of(w.tiles[0].buffer.dtype(), self.f64_storage);
                let tf32 = w.is_tf32() && !self.f64_storage;
                let bound = w.bound.as_ref().map(|(r, c)| (self.expr(r).int(), self.expr(c).int()));
                Node::Wmma(Box::new(WmmaNode { op: w.op.clone(), tiles, value, round, tf32, bound }))
            }
            Stmt::Block(r) => {
                let mut binds = Vec::new();
                for (iv, v) in r.block.iter_vars.iter().zip(&r.iter_values) {
                    let value = self.expr(v).int();
                    let start = (iv.kind == IterKind::Reduce).then(|| self.expr(&iv.dom.min).int());
                    binds.push((self.bind(iv.var.key(), Kind::Int), value, start));
                }
                let predicate = self.expr(&r.predicate).int();
                let init = r.block.init.as_ref().map(|i| self.stmt(i));
                let body = self.allocate(&r.block.alloc_buffers, &r.block.body);
                Node::Block(Box::new(BlockNode { binds, predicate, init, body }))
            }
        }
    }

    /// `body` with `buffers` allocated around it, the first outermost.
    fn allocate(&mut self, buffers: &[Buffer], body: &Stmt) -> Node {
        let Some((b, rest)) = buffers.split_first() else { return self.stmt(body) };
        let mem = self.declare(b);
        self.scope.push((b.clone(), mem));
        let inner = self.allocate(rest, body);
        self.scope.pop();
        Node::Alloc { mem, body: Box::new(inner) }
    }

    fn tma_load(&mut self, dst: &Buffer, indices: &[Expr], args: &[Expr]) -> Result<TmaNode, String> {
        let Some((Expr::Load(src, _), rest)) = args.split_first() else {
            return Err("a tma_load without its source element".into());
        };
        let rank = rest.len() / 3;
        let dims: Vec<i64> = rest[..2 * rank].iter().filter_map(Expr::as_int).collect();
        if dims.len() != 2 * rank {
            return Err("a tma_load whose box or shape is not constant".into());
        }
        let (boxed, shape) = dims.split_at(rank);
        let dst_mem = self.memory(dst)?;
        if self.mems[dst_mem].scope != Scope::Shared {
            return Err(format!("a bulk tensor copy into {}, which is not in shared memory", dst.name()));
        }
        Ok(TmaNode {
            dst: dst_mem,
            dst_index: self.index(dst, indices)?,
            src: self.memory(src)?,
            coords: rest[2 * rank..].iter().map(|e| self.expr(e).int()).collect(),
            boxed: boxed.to_vec(),
            shape: shape.to_vec(),
        })
    }

    fn index(&mut self, b: &Buffer, idx: &[Expr]) -> Result<Index, String> {
        if idx.len() == 1 {
            return Ok(Index::Flat(self.expr(&idx[0]).int()));
        }
        let shape = b.const_shape().ok_or_else(|| format!("buffer {} has no constant shape", b.name()))?;
        if shape.len() != idx.len() {
            return Err(format!("buffer {} has {} dimensions, accessed with {}", b.name(), shape.len(), idx.len()));
        }
        let dims = idx.iter().zip(shape).map(|(e, n)| (self.expr(e).int(), n)).collect();
        Ok(Index::Dims(dims, b.name().to_string()))
    }

    fn load(&mut self, b: &Buffer, idx: &[Expr]) -> Result<Load, String> {
        let index = self.index(b, idx)?;
        Ok(Load { mem: self.memory(b)?, index })
    }

    /// `e` as `constant + Σ coefficient × term`, where the terms are the
    /// integer variables and the operands other than `+`, `-` and products
    /// with a literal; every operation of the sum is in type `t`.
    fn affine(&mut self, e: &Expr, t: DType) -> (Vec<(Term, i64)>, i64) {
        let scale = |(terms, c): (Vec<(Term, i64)>, i64), k: i64| {
            (terms.into_iter().map(|(s, x)| (s, x.wrapping_mul(k))).collect::<Vec<_>>(), c.wrapping_mul(k))
        };
        match e {
            Expr::Int(v, _) => (vec![], *v),
            Expr::Var(v) if matches!(self.vars.get(&v.key()), Some((Kind::Int, _))) => {
                (vec![(Term::Var(self.vars[&v.key()].1), 1)], 0)
            }
            Expr::Binary(op @ (BinOp::Add | BinOp::Sub | BinOp::Mul), a, b) if a.dtype() == t => {
                let (x, y) = (self.affine(a, t), self.affine(b, t));
                match op {
                    BinOp::Mul if x.0.is_empty() => scale(y, x.1),
                    BinOp::Mul if y.0.is_empty() => scale(x, y.1),
                    BinOp::Mul => {
                        let (x, y) = (Box::new(affine_expr(x, t)), Box::new(affine_expr(y, t)));
                        (vec![(Term::Expr(IExpr::Bin(BinOp::Mul, t, x, y)), 1)], 0)
                    }
                    _ => {
                        let y = if *op == BinOp::Sub { scale(y, -1) } else { y };
                        let mut terms = x.0;
                        for (term, c) in y.0 {
                            let same = terms
                                .iter_mut()
                                .find(|(u, _)| matches!((u, &term), (Term::Var(a), Term::Var(b)) if a == b));
                            match same {
                                Some((_, d)) => *d = d.wrapping_add(c),
                                None => terms.push((term, c)),
                            }
                        }
                        terms.retain(|(_, c)| *c != 0);
                        (terms, x.1.wrapping_add(y.1))
                    }
                }
            }
            e => (vec![(Term::Expr(self.expr(e).int()), 1)], 0),
        }
    }

    /// Whether `e` is an integer division or remainder by a non-zero
    /// literal of an expression of the launch variables, sums and products
    /// only: it has one value per thread for the whole block, and computing
    /// it cannot fail, so it can be hoisted to the block's start.
    fn hoistable(&self, e: &Expr) -> bool {
        fn pure(e: &Expr, launch: &[usize]) -> bool {
            match e {
                Expr::Int(..) => true,
                Expr::Var(v) => launch.contains(&v.key()),
                Expr::Binary(BinOp::Add | BinOp::Sub | BinOp::Mul, a, b) => pure(a, launch) && pure(b, launch),
                Expr::Binary(BinOp::FloorDiv | BinOp::FloorMod | BinOp::Div, a, b) => {
                    matches!(**b, Expr::Int(d, _) if d != 0) && pure(a, launch)
                }
                _ => false,
            }
        }
        matches!(e, Expr::Binary(BinOp::FloorDiv | BinOp::FloorMod | BinOp::Div, _, _))
            && e.dtype().is_int()
            && pure(e, &self.launch_vars)
    }

    fn expr(&mut self, e: &Expr) -> Compiled {
        if !self.launch_vars.is_empty() && self.hoistable(e) {
            let text = tirc_ir::printer::print_expr(e);
            if let Some(&slot) = self.hoisted_by_text.get(&text) {
                return Compiled::I(IExpr::Var(slot));
            }
            let value = self.expr_here(e).int();
            self.int_slots += 1;
            let slot = self.int_slots - 1;
            self.hoisted.push((slot, value));
            self.hoisted_by_text.insert(text, slot);
            return Compiled::I(IExpr::Var(slot));
        }
        self.expr_here(e)
    }

    /// `e` compiled where it stands (its subexpressions may be hoisted).
    fn expr_here(&mut self, e: &Expr) -> Compiled {
        use Compiled::{F, I};
        let bx = |e: IExpr| Box::new(e);
        match e {
            Expr::Int(v, _) => I(IExpr::Const(*v)),
            // A literal is a value of its type (`T.float16(1.0001)` is 1),
            // as the CUDA compiler makes it.
            Expr::Float(v, t) => F(FExpr::Const(super::round_to(*t, *v))),
            Expr::Var(v) => match self.vars.get(&v.key()) {
                Some((Kind::Int, s)) => I(IExpr::Var(*s)),
                Some((Kind::Float, s)) => F(FExpr::Var(*s)),
                None if v.dtype().is_float() => F(FExpr::Fail(format!("variable {} has no value", v.name()))),
                None => I(IExpr::Fail(format!("variable {} has no value", v.name()))),
            },
            Expr::Not(a) => I(IExpr::Not(bx(self.expr(a).int()))),
            Expr::Select(c, a, b) => {
                let c = bx(self.expr(c).int());
                match (self.expr(a), self.expr(b)) {
                    (I(a), I(b)) => I(IExpr::Select(c, bx(a), bx(b))),
                    (a, b) => F(FExpr::Select(c, Box::new(a.float()), Box::new(b.float()))),
                }
            }
            Expr::Binary(op @ (BinOp::And | BinOp::Or), a, b) => {
                let (a, b) = (bx(self.expr(a).int()), bx(self.expr(b).int()));
                I(if *op == BinOp::And { IExpr::And(a, b) } else { IExpr::Or(a, b) })
            }
            Expr::Binary(BinOp::Add | BinOp::Sub | BinOp::Mul, a, _)
                if matches!(a.dtype(), DType::Int(_) | DType::UInt(_)) =>
            {
                I(affine_expr(self.affine(e, a.dtype()), a.dtype()))
            }
            Expr::Binary(op, a, b) => {
                let t = a.dtype();
                let (x, y) = (self.expr(a), self.expr(b));
                if t.is_float() {
                    let (x, y) = (Box::new(x.float()), Box::new(y.float()));
                    if op.is_compare() {
                        I(IExpr::FloatCompare(*op, x, y))
                    } else {
                        F(FExpr::Bin(*op, Precision::of(t, self.f64_storage), x, y))
                    }
                } else {
                    match y.int() {
                        IExpr::Const(c) => I(IExpr::BinConst(*op, t, bx(x.int()), c)),
                        y => I(IExpr::Bin(*op, t, bx(x.int()), bx(y))),
                    }
                }
            }
            Expr::Cast(t, a) => {
                let x = self.expr(a);
                if t.is_float() {
                    // An explicit cast rounds to its type even where every
                    // float is held at f64: the reference (`to_f64`) casts
                    // to float32 on purpose, to read a value as the kernel
                    // holds it.
                    F(FExpr::Round(Box::new(x.float()), Precision::of(*t, false)))
                } else {
                    I(match (t.is_bool(), x) {
                        (true, I(x)) => IExpr::NonZero(bx(x)),
                        (true, F(x)) => IExpr::FloatNonZero(Box::new(x)),
                        (false, I(x)) => IExpr::Wrap(bx(x), *t),
                        (false, F(x)) => IExpr::Trunc(Box::new(x), Some(*t)),
                    })
                }
            }
            Expr::Load(b, idx) => match (self.load(b, idx), b.dtype().is_float()) {
                (Ok(l), true) => F(FExpr::Load(Box::new(l))),
                (Ok(l), false) => I(IExpr::Load(Box::new(l))),
                (Err(m), true) => F(FExpr::Fail(m)),
                (Err(m), false) => I(IExpr::Fail(m)),
            },
            Expr::Call(Intrinsic::Likely | Intrinsic::CpAsync, args) => self.expr(&args[0]),
            Expr::Call(Intrinsic::WarpShuffleDown, args) => {
                let konst = |i: usize| args.get(i).and_then(Expr::as_int).and_then(|x| u32::try_from(x).ok());
                let (Some(delta), Some(width)) = (konst(1), konst(2)) else {
                    return F(FExpr::Fail("a warp shuffle without a constant offset and width".into()));
                };
                match self.expr(&args[0]) {
                    I(x) => I(IExpr::Shuffle(bx(x), delta, width)),
                    F(x) => F(FExpr::Shuffle(Box::new(x), delta, width)),
                }
            }
            Expr::Call(Intrinsic::Abs | Intrinsic::Fabs, args) if args[0].dtype().is_int() => {
                // The magnitude wraps in the argument's type, as C's `abs`
                // does: abs(INT32_MIN) is INT32_MIN, abs(-128i8) is -128.
                let abs = IExpr::Abs(bx(self.expr(&args[0]).int()));
                match args[0].dtype() {
                    t @ (DType::Int(8 | 16 | 32) | DType::UInt(_)) => I(IExpr::Wrap(bx(abs), t)),
                    _ => I(abs),
                }
            }
            Expr::Call(i, args) => {
                // A float intrinsic's result has its argument's type; one of
                // an integer is computed as float64.
                let t = args[0].dtype();
                let p = if t.is_float() { Precision::of(t, self.f64_storage) } else { Precision::Exact };
                let x = Box::new(self.expr(&args[0]).float());
                let y = args.get(1).map(|y| Box::new(self.expr(y).float()));
                F(FExpr::Call(*i, p, x, y))
            }
        }
    }
}
