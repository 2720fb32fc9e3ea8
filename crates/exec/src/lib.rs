//! Running lowered kernels: on the CPU simulator (`sim`), or on an NVIDIA
//! GPU through NVRTC, the driver API and cuBLAS (`gpu`).

pub mod data;
pub mod gpu;
pub mod reference;
pub mod sim;
