//! tirc's intermediate representation: a TensorIR of functions over buffers,
//! with blocks, loops and the lowered forms, plus its printer, structural
//! equality, and `resolve`, which builds it from the parser's syntax tree.

pub mod buffer;
pub mod diag;
pub mod dtype;
pub mod expr;
pub mod func;
pub mod launch;
pub mod printer;
pub mod region;
pub mod resolve;
pub mod stmt;
pub mod structural_eq;
pub mod subst;
pub mod target;
pub mod wmma;

pub use buffer::{swizzle_offset, Buffer, BufferId, DimAlign, Scope};
pub use diag::Diagnostic;
pub use dtype::DType;
pub use expr::{BinOp, Expr, Intrinsic, Range, Var};
pub use func::{Module, PassFacts, PrimFunc, ScheduleDef};
pub use stmt::{Attr, Block, BlockRealize, BufferRegion, For, ForKind, IterKind, IterVar, Rewrite, Stmt, ThreadTag};
pub use wmma::{Tile, Wmma, WmmaOp};
