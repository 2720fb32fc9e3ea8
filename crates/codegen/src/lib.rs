//! Code generation from tirc's lowered kernel IR.

pub mod cuda;

pub use cuda::{emit, CudaKernel};
