//! Code generation from tirc's lowered kernel IR.

pub mod cuda;

pub use cuda::{ctype, emit, sanitize, translation_unit, CudaKernel};
