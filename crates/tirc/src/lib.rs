//! The tirc driver as a library: the whole pipeline (`compile`), shared by
//! the command line, the Python package and the tests; the subcommands
//! themselves (`cli`).

pub mod cli;
pub mod compile;
pub mod export;
pub mod measure;
pub mod plot;
pub mod tune;
pub mod verify;
