//! The command line's tests, built as one binary: each file of `tests/` is
//! a module of it (`cargo test -p tirc --test it cli::` runs one file's).

mod build_cli;
mod cli;
mod fmt_cli;
mod io_cli;
mod metrics;
