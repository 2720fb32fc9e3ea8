//! Running lowered kernels: on the CPU simulator (`sim`), or on an NVIDIA
//! GPU through NVRTC, the driver API and cuBLAS (`gpu`); host data, random
//! or from `.npy` files (`data`, `npy`).

pub mod data;
pub mod gpu;
pub mod npy;
pub mod reference;
pub mod sim;
