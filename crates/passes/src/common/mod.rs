//! What schedule primitives (`schedule/`) and lowering passes
//! (`transform/`) share, so that neither imports the other: finding and
//! replacing loops and blocks (`tree`), the refusal type (`error`), the
//! decomposition of a reduction into an init and an update (`reduction`:
//! the primitive `decompose_reduction` and the pass `lower_init`), and the
//! analysis of software-pipeline annotations (`pipeline`: checked when a
//! schedule annotates a loop, expanded by `inject_software_pipeline`), and
//! whether moving a block past others keeps what they read (`hazard`).
//! The arithmetic both use is in `arith` and `bounds`.

pub mod error;
pub mod hazard;
pub mod pipeline;
pub mod reduction;
pub mod tree;
