//! tirc's integration tests, built as one binary: each file of `tests/` is
//! a module of it (`cargo test --test it diagnostics::` runs one file's
//! tests). Snapshots are named `it__<file>__<test>`.

mod barriers;
mod blockize;
mod boundary;
mod conformance;
mod diagnostics;
mod fmt;
mod fuzz;
mod golden;
mod lower;
mod metaschedule;
mod nvrtc_golden;
mod registry;
mod roundtrip;
mod scalars;
mod schedules;
mod semantics;
mod simulator;
mod sizes;
mod spans;
mod target;
mod tensor_cores;
mod trace;
mod tune;
mod tvm_text;
mod verify_ir;
mod warnings;
