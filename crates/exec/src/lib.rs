//! Running kernels.
