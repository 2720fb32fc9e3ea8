//! Code generation from tirc's lowered kernel IR.

pub mod cuda;
pub mod warp_specialized;

pub use cuda::{ctype, emit, sanitize, translation_unit, CudaKernel};
