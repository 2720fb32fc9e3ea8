//! Schedule primitives (`schedule/`) and lowering passes (`transform/`)
//! over tirc's IR, with the integer arithmetic they share (`arith`).

pub mod arith;
pub mod bounds;
pub mod schedule;
pub mod transform;
