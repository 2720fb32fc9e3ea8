//! The tirc driver as a library: the whole pipeline (`compile`), shared by
//! the command line and the tests.

pub mod compile;
pub mod export;
pub mod measure;
pub mod tune;
pub mod verify;
