//! A lowered kernel's launch configuration: the grid and block extents that
//! the `T.launch_thread` statements at the head of its body give (written
//! by the pass `extract_launch`; read by code generation, the simulator and
//! the runtimes).

use crate::func::PrimFunc;

/// A kernel's launch: grid and block extents, x, y, z.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    pub grid: [i64; 3],
    pub block: [i64; 3],
}

impl LaunchConfig {
    pub fn threads_per_block(&self) -> i64 {
        self.block.iter().product()
    }

    pub fn blocks(&self) -> i64 {
        self.grid.iter().product()
    }
}

/// The launch configuration of a lowered function: the `Launch` statements
/// at the head of its body.
pub fn launch_config(f: &PrimFunc) -> LaunchConfig {
    let mut cfg = LaunchConfig { grid: [1; 3], block: [1; 3] };
    for (_, tag, extent) in f.body.launch_head().0 {
        let e = extent.as_int().unwrap_or(1);
        if tag.is_block {
            cfg.grid[tag.dim as usize] = e;
        } else {
            cfg.block[tag.dim as usize] = e;
        }
    }
    cfg
}
