//! Expressions: constants, variables, arithmetic, buffer loads and calls of
//! intrinsics.
//!
//! Variables and buffers have identity: two `Var`s are the same variable only
//! when they are the same allocation, whatever their names. Names are for
//! printing; the printer makes them unique.

use crate::buffer::Buffer;
use crate::dtype::DType;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// A variable: a loop variable, a block iteration variable, a thread index or
/// a let-bound name.
#[derive(Clone)]
pub struct Var(Arc<VarNode>);

#[derive(Debug)]
pub struct VarNode {
    pub name: String,
    pub dtype: DType,
}

impl Var {
    pub fn new(name: impl Into<String>, dtype: DType) -> Var {
        Var(Arc::new(VarNode { name: name.into(), dtype }))
    }

    pub fn name(&self) -> &str {
        &self.0.name
    }

    pub fn dtype(&self) -> DType {
        self.0.dtype
    }

    /// A fresh variable of the same type with another name.
    pub fn renamed(&self, name: impl Into<String>) -> Var {
        Var::new(name, self.dtype())
    }

    /// A stable key for maps keyed by identity.
    pub fn key(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }
}

impl PartialEq for Var {
    fn eq(&self, other: &Var) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Var {}

impl Hash for Var {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.key().hash(h)
    }
}

impl fmt::Debug for Var {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{:x}", self.name(), self.key() & 0xffff)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    /// Division with the operand type's meaning: true division for floats,
    /// truncating division for integers (C's `/`).
    Div,
    /// Division rounding towards negative infinity (`T.floordiv`, `//`).
    FloorDiv,
    /// The remainder that goes with `FloorDiv` (`T.floormod`, `%`).
    FloorMod,
    Min,
    Max,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
    /// Integer bitwise operations (`&`, `|`, `^`; `T.bitwise_and` and the
    /// like), and shifts (`<<`, `>>`; `T.shift_left`, `T.shift_right`): a
    /// right shift of a signed type keeps its sign, of an unsigned type
    /// fills zeros; the result wraps to the operands' type.
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
}

impl BinOp {
    pub fn is_compare(self) -> bool {
        matches!(self, BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge)
    }

    pub fn is_logical(self) -> bool {
        matches!(self, BinOp::And | BinOp::Or)
    }

    pub fn is_bitwise(self) -> bool {
        matches!(self, BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr)
    }
}

/// `x op y` for a bitwise operation or a shift on 64-bit integers (the
/// caller wraps the result to its type). A shift by a negative amount or
/// by 64 or more is `None`: C leaves it undefined.
pub fn bitwise(op: BinOp, x: i64, y: i64) -> Option<i64> {
    match op {
        BinOp::BitAnd => Some(x & y),
        BinOp::BitOr => Some(x | y),
        BinOp::BitXor => Some(x ^ y),
        BinOp::Shl if (0..64).contains(&y) => Some(x.wrapping_shl(y as u32)),
        BinOp::Shr if (0..64).contains(&y) => Some(x >> y),
        _ => None,
    }
}

/// Built-in functions that can be called in an expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Intrinsic {
    Exp,
    Log,
    Sqrt,
    Rsqrt,
    Tanh,
    Sigmoid,
    Abs,
    Fabs,
    Floor,
    Ceil,
    Round,
    Pow,
    Sin,
    Cos,
    Erf,
    Exp2,
    Exp10,
    Log2,
    Log10,
    Log1p,
    Trunc,
    Nearbyint,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Asinh,
    Acosh,
    Atanh,
    Atan2,
    Hypot,
    Copysign,
    Fmod,
    /// `T.tf32_round(x)`: the float32 `x` rounded to the nearest tf32 value
    /// (10 bits of mantissa, ties away from zero, as `cvt.rna.tf32.f32`),
    /// still a float32. A tf32 tensor-core product of such values is exact;
    /// `decompose_tf32x3` splits float32 operands into two of them. A tirc
    /// intrinsic: TVM has none.
    Tf32Round,
    /// `T.likely(cond)`: a hint that `cond` is usually true; its value is `cond`.
    Likely,
    /// `S[..] = T.cp_async(G[..])`: a copy from global to shared memory
    /// that completes asynchronously, by the `T.ptx_wait_group` that covers
    /// the group it was committed in (`cp.async` on sm_80 and newer). Its
    /// value is its argument's.
    CpAsync,
    /// `S[..] = T.tma_load(G[..], b.., s.., c..)`: one bulk tensor copy
    /// (Hopper's TMA, `cp.async.bulk.tensor`) of the box `b_0 × .. × b_r-1`
    /// of `G` whose first element is at coordinates `c_0, .., c_r-1` (the
    /// element `G[..]`, which stays an element of `G` when `G` is
    /// flattened) into shared memory, row-major from `S[..]`; `s_0, ..,
    /// s_r-1` is `G`'s shape (the tensor map's), all outermost first.
    /// Elements past `G`'s shape are zeros. Issued by one thread for the
    /// whole block, in a warp-specialized loop (`warp_specialize`); it
    /// lands when the loop's consumers wait for it.
    TmaLoad,
    /// `T.tvm_warp_shuffle_down(mask, v, delta, width, 32)`, TVM's name and
    /// arguments, held as `[v, delta, width]` (delta and width constants,
    /// width a power of two up to 32): `v` of the thread `delta` lanes up
    /// in the same segment of `width` lanes of the warp, or the thread's own
    /// `v` where that lane is past the segment (`__shfl_down_sync`). Every
    /// thread of the warp must reach it together: `lower_cross_thread_reduction`
    /// writes it where no condition on the thread stands around it.
    WarpShuffleDown,
}

impl Intrinsic {
    pub const ALL: [Intrinsic; 40] = [
        Intrinsic::Exp,
        Intrinsic::Log,
        Intrinsic::Sqrt,
        Intrinsic::Rsqrt,
        Intrinsic::Tanh,
        Intrinsic::Sigmoid,
        Intrinsic::Abs,
        Intrinsic::Fabs,
        Intrinsic::Floor,
        Intrinsic::Ceil,
        Intrinsic::Round,
        Intrinsic::Pow,
        Intrinsic::Sin,
        Intrinsic::Cos,
        Intrinsic::Erf,
        Intrinsic::Exp2,
        Intrinsic::Exp10,
        Intrinsic::Log2,
        Intrinsic::Log10,
        Intrinsic::Log1p,
        Intrinsic::Trunc,
        Intrinsic::Nearbyint,
        Intrinsic::Tan,
        Intrinsic::Asin,
        Intrinsic::Acos,
        Intrinsic::Atan,
        Intrinsic::Sinh,
        Intrinsic::Cosh,
        Intrinsic::Asinh,
        Intrinsic::Acosh,
        Intrinsic::Atanh,
        Intrinsic::Atan2,
        Intrinsic::Hypot,
        Intrinsic::Copysign,
        Intrinsic::Fmod,
        Intrinsic::Tf32Round,
        Intrinsic::Likely,
        Intrinsic::CpAsync,
        Intrinsic::TmaLoad,
        Intrinsic::WarpShuffleDown,
    ];

    /// The name after `T.` in TVMScript.
    pub fn name(self) -> &'static str {
        match self {
            Intrinsic::Exp => "exp",
            Intrinsic::Log => "log",
            Intrinsic::Sqrt => "sqrt",
            Intrinsic::Rsqrt => "rsqrt",
            Intrinsic::Tanh => "tanh",
            Intrinsic::Sigmoid => "sigmoid",
            Intrinsic::Abs => "abs",
            Intrinsic::Fabs => "fabs",
            Intrinsic::Floor => "floor",
            Intrinsic::Ceil => "ceil",
            Intrinsic::Round => "round",
            Intrinsic::Pow => "pow",
            Intrinsic::Sin => "sin",
            Intrinsic::Cos => "cos",
            Intrinsic::Erf => "erf",
            Intrinsic::Exp2 => "exp2",
            Intrinsic::Exp10 => "exp10",
            Intrinsic::Log2 => "log2",
            Intrinsic::Log10 => "log10",
            Intrinsic::Log1p => "log1p",
            Intrinsic::Trunc => "trunc",
            Intrinsic::Nearbyint => "nearbyint",
            Intrinsic::Tan => "tan",
            Intrinsic::Asin => "asin",
            Intrinsic::Acos => "acos",
            Intrinsic::Atan => "atan",
            Intrinsic::Sinh => "sinh",
            Intrinsic::Cosh => "cosh",
            Intrinsic::Asinh => "asinh",
            Intrinsic::Acosh => "acosh",
            Intrinsic::Atanh => "atanh",
            Intrinsic::Atan2 => "atan2",
            Intrinsic::Hypot => "hypot",
            Intrinsic::Copysign => "copysign",
            Intrinsic::Fmod => "fmod",
            Intrinsic::Tf32Round => "tf32_round",
            Intrinsic::Likely => "likely",
            Intrinsic::CpAsync => "cp_async",
            Intrinsic::TmaLoad => "tma_load",
            Intrinsic::WarpShuffleDown => "tvm_warp_shuffle_down",
        }
    }

    pub fn from_name(s: &str) -> Option<Intrinsic> {
        Intrinsic::ALL.into_iter().find(|i| i.name() == s)
    }

    pub fn arity(self) -> usize {
        match self {
            Intrinsic::Pow | Intrinsic::Atan2 | Intrinsic::Hypot | Intrinsic::Copysign | Intrinsic::Fmod => 2,
            _ => 1,
        }
    }
}

/// `a // b` as TVM's `floordiv` computes it: rounded toward negative
/// infinity, for either sign of `b` (which is not zero). The one definition
/// that constant folding, the schedule interpreter and the simulator share.
pub fn floor_div(a: i64, b: i64) -> i64 {
    // Wrapping, as 64-bit hardware division does: `i64::MIN // -1` is
    // `i64::MIN`, not a panic.
    a.wrapping_div_euclid(b).wrapping_sub(i64::from(b < 0 && a.wrapping_rem_euclid(b) != 0))
}

/// `a % b` as TVM's `floormod` computes it: `a - b * floor_div(a, b)`, with
/// the sign of `b`.
pub fn floor_mod(a: i64, b: i64) -> i64 {
    a.wrapping_sub(b.wrapping_mul(floor_div(a, b)))
}

/// The greatest common divisor of two numbers, not negative (0 for 0 and
/// 0; 1 where it would not fit, a divisor of both still).
pub fn gcd(a: i64, b: i64) -> i64 {
    let (mut x, mut y) = (a, b);
    while y != 0 {
        (x, y) = (y, x.wrapping_rem(y));
    }
    x.checked_abs().unwrap_or(1)
}

/// The least common multiple of two positive numbers.
pub fn lcm(a: i64, b: i64) -> i64 {
    a / gcd(a, b) * b
}

#[derive(Clone, Debug)]
pub enum Expr {
    Int(i64, DType),
    Float(f64, DType),
    Var(Var),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    /// `T.Select(cond, a, b)` / `T.if_then_else(cond, a, b)`.
    Select(Box<Expr>, Box<Expr>, Box<Expr>),
    Cast(DType, Box<Expr>),
    Load(Buffer, Vec<Expr>),
    Call(Intrinsic, Vec<Expr>),
}

impl Expr {
    pub fn int(v: i64) -> Expr {
        Expr::Int(v, DType::I32)
    }

    pub fn bool(v: bool) -> Expr {
        Expr::Int(v as i64, DType::Bool)
    }

    pub fn var(v: &Var) -> Expr {
        Expr::Var(v.clone())
    }

    pub fn binary(op: BinOp, a: Expr, b: Expr) -> Expr {
        Expr::Binary(op, Box::new(a), Box::new(b))
    }

    /// `a op b`, computed when both are integer literals of one type and the
    /// result fits; TVM folds such constants as it builds expressions too.
    pub fn folded(op: BinOp, a: Expr, b: Expr) -> Expr {
        if let (Expr::Int(x, t), Expr::Int(y, u)) = (&a, &b) {
            if t == u && matches!(t, DType::Int(32) | DType::Int(64)) {
                let (x, y) = (*x, *y);
                let v = match op {
                    BinOp::Add => x.checked_add(y),
                    BinOp::Sub => x.checked_sub(y),
                    BinOp::Mul => x.checked_mul(y),
                    BinOp::FloorDiv if y != 0 => Some(floor_div(x, y)),
                    BinOp::FloorMod if y != 0 => Some(floor_mod(x, y)),
                    BinOp::Min => Some(x.min(y)),
                    BinOp::Max => Some(x.max(y)),
                    op if op.is_bitwise() => bitwise(op, x, y),
                    _ => None,
                };
                let fits = |v: i64| match t {
                    DType::Int(32) => i32::try_from(v).is_ok(),
                    _ => true,
                };
                if let Some(v) = v.filter(|v| fits(*v)) {
                    return Expr::Int(v, *t);
                }
            }
        }
        Expr::binary(op, a, b)
    }

    pub fn and(a: Expr, b: Expr) -> Expr {
        if a.as_bool() == Some(true) {
            return b;
        }
        if b.as_bool() == Some(true) {
            return a;
        }
        Expr::binary(BinOp::And, a, b)
    }

    pub fn dtype(&self) -> DType {
        match self {
            Expr::Int(_, t) | Expr::Float(_, t) | Expr::Cast(t, _) => *t,
            Expr::Var(v) => v.dtype(),
            Expr::Binary(op, a, _) => {
                if op.is_compare() || op.is_logical() {
                    DType::Bool
                } else {
                    a.dtype()
                }
            }
            Expr::Not(_) => DType::Bool,
            Expr::Select(_, a, _) => a.dtype(),
            Expr::Load(b, _) => b.dtype(),
            Expr::Call(Intrinsic::Likely, _) => DType::Bool,
            Expr::Call(_, args) => args.first().map_or(DType::F32, |a| a.dtype()),
        }
    }

    pub fn as_int(&self) -> Option<i64> {
        match self {
            Expr::Int(v, t) if *t != DType::Bool => Some(*v),
            _ => None,
        }
    }

    /// The literal 0 of a number type.
    pub fn zero(t: DType) -> Expr {
        if t.is_float() {
            Expr::Float(0.0, t)
        } else {
            Expr::Int(0, t)
        }
    }

    /// `(c, load)` for `T.if_then_else(c, load, 0)` with `load` a buffer
    /// load: a copy that fills zeros past the edge of its source
    /// (`zero_fill_tiles`).
    pub fn as_zero_fill(&self) -> Option<(&Expr, &Expr)> {
        match self {
            Expr::Select(c, a, z) if z.is_zero() && matches!(**a, Expr::Load(..)) => Some((c, a)),
            _ => None,
        }
    }

    /// Whether this is the literal 0 (or 0.0) of a number type.
    pub fn is_zero(&self) -> bool {
        match self {
            Expr::Int(v, t) => *t != DType::Bool && *v == 0,
            Expr::Float(v, _) => *v == 0.0,
            _ => false,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Expr::Int(v, DType::Bool) => Some(*v != 0),
            _ => None,
        }
    }

    pub fn as_var(&self) -> Option<&Var> {
        match self {
            Expr::Var(v) => Some(v),
            _ => None,
        }
    }

    /// Calls `f` on each direct child expression.
    pub fn for_each_child<'a>(&'a self, mut f: impl FnMut(&'a Expr)) {
        match self {
            Expr::Int(..) | Expr::Float(..) | Expr::Var(_) => {}
            Expr::Binary(_, a, b) => {
                f(a);
                f(b)
            }
            Expr::Not(a) | Expr::Cast(_, a) => f(a),
            Expr::Select(c, a, b) => {
                f(c);
                f(a);
                f(b)
            }
            Expr::Load(_, idx) | Expr::Call(_, idx) => idx.iter().for_each(f),
        }
    }

    /// Rebuilds the expression with each direct child replaced by `f(child)`.
    pub fn map_children(&self, mut f: impl FnMut(&Expr) -> Expr) -> Expr {
        match self {
            Expr::Int(..) | Expr::Float(..) | Expr::Var(_) => self.clone(),
            Expr::Binary(op, a, b) => Expr::binary(*op, f(a), f(b)),
            Expr::Not(a) => Expr::Not(Box::new(f(a))),
            Expr::Cast(t, a) => Expr::Cast(*t, Box::new(f(a))),
            Expr::Select(c, a, b) => Expr::Select(Box::new(f(c)), Box::new(f(a)), Box::new(f(b))),
            Expr::Load(buf, idx) => Expr::Load(buf.clone(), idx.iter().map(f).collect()),
            Expr::Call(i, args) => Expr::Call(*i, args.iter().map(f).collect()),
        }
    }

    /// Visits this expression and every sub-expression, parents first.
    pub fn walk<'a>(&'a self, f: &mut impl FnMut(&'a Expr)) {
        f(self);
        self.for_each_child(|c| c.walk(f));
    }

    /// Whether `v` occurs in the expression.
    pub fn uses(&self, v: &Var) -> bool {
        let mut found = false;
        self.walk(&mut |e| {
            if let Expr::Var(x) = e {
                found |= x == v;
            }
        });
        found
    }

    /// Whether this is an integer expression of the run-time sizes `sizes`
    /// (`PrimFunc::sizes`) and literals only: no loop variable, no load.
    pub fn is_size_expr(&self, sizes: &[Var]) -> bool {
        let mut ok = self.dtype().is_int();
        self.walk(&mut |x| match x {
            Expr::Var(v) => ok &= sizes.contains(v),
            Expr::Int(..) | Expr::Binary(..) => {}
            _ => ok = false,
        });
        ok
    }

    /// Whether any variable occurs in the expression.
    pub fn has_var(&self) -> bool {
        let mut found = false;
        self.walk(&mut |e| found |= matches!(e, Expr::Var(_)));
        found
    }

    /// Whether any buffer is read.
    pub fn has_load(&self) -> bool {
        let mut found = false;
        self.walk(&mut |e| found |= matches!(e, Expr::Load(..)));
        found
    }
}

impl std::ops::Add for Expr {
    type Output = Expr;
    fn add(self, rhs: Expr) -> Expr {
        Expr::folded(BinOp::Add, self, rhs)
    }
}

impl std::ops::Sub for Expr {
    type Output = Expr;
    fn sub(self, rhs: Expr) -> Expr {
        Expr::folded(BinOp::Sub, self, rhs)
    }
}

impl std::ops::Mul for Expr {
    type Output = Expr;
    fn mul(self, rhs: Expr) -> Expr {
        Expr::folded(BinOp::Mul, self, rhs)
    }
}

/// The integer value of `e` (a comparison: 1 or 0) with its variables'
/// values from `value`; `None` for what it does not compute.
pub fn eval(e: &Expr, value: &dyn Fn(&Var) -> Option<i64>) -> Option<i64> {
    match e {
        Expr::Int(v, _) => Some(*v),
        Expr::Var(v) => value(v),
        Expr::Not(a) => Some((eval(a, value)? == 0) as i64),
        Expr::Binary(op, a, b) => {
            let (x, y) = (eval(a, value)?, eval(b, value)?);
            Some(match op {
                BinOp::Add => x.checked_add(y)?,
                BinOp::Sub => x.checked_sub(y)?,
                BinOp::Mul => x.checked_mul(y)?,
                BinOp::FloorDiv if y != 0 => floor_div(x, y),
                BinOp::FloorMod if y != 0 => floor_mod(x, y),
                BinOp::Div if y != 0 => x.checked_div(y)?,
                BinOp::Min => x.min(y),
                BinOp::Max => x.max(y),
                BinOp::Lt => (x < y) as i64,
                BinOp::Le => (x <= y) as i64,
                BinOp::Gt => (x > y) as i64,
                BinOp::Ge => (x >= y) as i64,
                BinOp::Eq => (x == y) as i64,
                BinOp::Ne => (x != y) as i64,
                BinOp::And => (x != 0 && y != 0) as i64,
                BinOp::Or => (x != 0 || y != 0) as i64,
                // A left shift that leaves its 32 bits would wrap: unknown.
                op if op.is_bitwise() => {
                    let r = bitwise(*op, x, y)?;
                    if a.dtype() == DType::I32 && i32::try_from(r).is_err() {
                        return None;
                    }
                    r
                }
                _ => return None,
            })
        }
        _ => None,
    }
}

/// `e` with every integer operation on literals computed (`Expr::folded`),
/// bottom-up: what a size-generic expression becomes once its sizes are
/// substituted by values.
pub fn fold_constants(e: &Expr) -> Expr {
    match e {
        Expr::Binary(op, a, b) => {
            let (a, b) = (fold_constants(a), fold_constants(b));
            // Literals of two integer types (`n * 32` with `n` an int64
            // size) fold in the wider one.
            match (&a, &b) {
                (Expr::Int(x, t), Expr::Int(y, u))
                    if t != u && t.is_int() && u.is_int() && !t.is_bool() && !u.is_bool() =>
                {
                    let w = if t.bytes() >= u.bytes() { *t } else { *u };
                    Expr::folded(*op, Expr::Int(*x, w), Expr::Int(*y, w))
                }
                _ => Expr::folded(*op, a, b),
            }
        }
        Expr::Cast(t, a) if t.is_int() && !t.is_bool() => match fold_constants(a) {
            // Only to int32 and int64, where the value fits (a narrower
            // type would wrap it).
            Expr::Int(v, u)
                if u.is_int()
                    && !u.is_bool()
                    && (*t == DType::I64 || (*t == DType::I32 && i32::try_from(v).is_ok())) =>
            {
                Expr::Int(v, *t)
            }
            a => Expr::Cast(*t, Box::new(a)),
        },
        _ => e.map_children(fold_constants),
    }
}

/// A half-open range `[min, min + extent)`.
#[derive(Clone, Debug)]
pub struct Range {
    pub min: Expr,
    pub extent: Expr,
}

impl Range {
    pub fn new(min: Expr, extent: Expr) -> Range {
        Range { min, extent }
    }

    pub fn from_extent(extent: Expr) -> Range {
        Range { min: Expr::int(0), extent }
    }
}

#[cfg(test)]
mod floor_tests {
    use super::{floor_div, floor_mod};

    #[test]
    fn floor_division_rounds_toward_negative_infinity() {
        assert_eq!((floor_div(7, 2), floor_mod(7, 2)), (3, 1));
        assert_eq!((floor_div(-7, 2), floor_mod(-7, 2)), (-4, 1));
        assert_eq!((floor_div(7, -2), floor_mod(7, -2)), (-4, -1));
        assert_eq!((floor_div(-7, -2), floor_mod(-7, -2)), (3, -1));
    }
}
