//! Shared helpers of the integration tests: the example corpus, the small
//! sizes each example is tested at, and the golden file layout.

use std::path::{Path, PathBuf};

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `ir-examples/*.tir`, sorted.
pub fn examples() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("ir-examples"))
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "tir")).collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

pub fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
}

/// The small sizes an example is checked at on the simulator, from its
/// `# test-sizes: M=64 N=48 K=40` line (what `tirc tune --target sim` uses).
pub use tirc::tune::test_sizes;

/// The schedule parameters a schedule is checked with on the simulator,
/// from its `# test-params: v4 BX=16 BY=8` lines.
pub use tirc::tune::test_params;

/// `golden/<example>/<schedule>.<ext>`.
pub fn golden_path(example: &Path, schedule: &str, ext: &str) -> PathBuf {
    let stem = example.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
    root().join("golden").join(stem).join(format!("{schedule}.{ext}"))
}

/// Whether expectations should be rewritten (`TIRC_BLESS=1`).
pub fn bless() -> bool {
    std::env::var("TIRC_BLESS").is_ok_and(|v| v == "1")
}

/// The request that applies schedule `schedule` of an example's source at
/// its `# test-sizes:` and `# test-params:`.
pub fn schedule_request(src: &str, schedule: &str) -> tirc::compile::Request {
    tirc::compile::Request {
        schedule: Some(schedule.to_string()),
        defines: test_sizes(src),
        params: test_params(src, schedule),
        ..tirc::compile::Request::default()
    }
}
