//! Schedule primitives (`schedule/`) and lowering passes (`transform/`)
//! over tirc's IR, with what they share: the integer arithmetic (`arith`,
//! `bounds`) and the tree utilities and analyses of `common/`. Neither
//! `schedule/` nor `transform/` imports the other.

pub mod arith;
pub mod bounds;
pub mod common;
pub mod schedule;
pub mod transform;
