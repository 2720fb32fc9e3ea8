//! What a kernel is compiled for: the facts of the GPU that lowering and
//! code generation check a function against (threads and shared memory a
//! thread block may have, the warp size, which instructions exist).
//!
//! `Target::from_arch("sm_80")` gives the facts of a compute capability
//! from NVIDIA's tables; the default is the H100's, `sm_90`. The command
//! line's `--arch` picks one.

/// A CUDA GPU architecture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// Compute capability as `major * 10 + minor` (90 for `sm_90`).
    pub sm: u32,
    /// `sm_90a`: the architecture-specific features (wgmma, setmaxnreg).
    pub arch_specific: bool,
    /// Threads a thread block may have.
    pub max_threads_per_block: i64,
    /// Threads of a warp.
    pub warp_size: i64,
    /// Bytes of shared memory one thread block may use, with the opt-in
    /// above the 48 KiB of a static allocation.
    pub max_shared_per_block: usize,
    /// Registers one thread may use.
    pub max_registers_per_thread: u32,
    /// Threads resident on one multiprocessor at once (what bounds
    /// `__launch_bounds__`'s blocks per multiprocessor).
    pub max_threads_per_sm: i64,
}

impl Default for Target {
    fn default() -> Target {
        Target::sm(90)
    }
}

impl Target {
    /// The facts of compute capability `sm` (`major * 10 + minor`).
    fn sm(sm: u32) -> Target {
        // CUDA C Programming Guide, "Technical Specifications per Compute
        // Capability": maximum shared memory per thread block, and
        // threads per multiprocessor below.
        let shared_kib = match sm {
            90.. => 227,
            87 => 163,
            86 | 89 => 99,
            80 => 163,
            75 => 64,
            70 | 72 => 96,
            _ => 48,
        };
        Target {
            sm,
            arch_specific: false,
            max_threads_per_block: 1024,
            warp_size: 32,
            max_shared_per_block: shared_kib * 1024,
            max_registers_per_thread: 255,
            max_threads_per_sm: match sm {
                75 => 1024,
                86 | 89 | 120.. => 1536,
                _ => 2048,
            },
        }
    }

    /// `sm_90`, `sm_90a`, `sm_80`, ...: compute capability 5.0 and newer.
    pub fn from_arch(arch: &str) -> Result<Target, String> {
        let bad = || {
            format!(
                "unknown GPU architecture `{arch}`: expected sm_XY with a compute capability, such as sm_80 or sm_90a"
            )
        };
        let rest = arch.strip_prefix("sm_").ok_or_else(bad)?;
        let (digits, specific) = match rest.strip_suffix('a') {
            Some(d) => (d, true),
            None => (rest, false),
        };
        if digits.len() < 2 || !digits.chars().all(|c| c.is_ascii_digit()) {
            return Err(bad());
        }
        let sm: u32 = digits.parse().map_err(|_| bad())?;
        if sm < 50 {
            return Err(format!("`{arch}` is older than tirc supports: compute capability 5.0 (sm_50) or newer"));
        }
        if specific && sm < 90 {
            return Err(format!("`{arch}`: only sm_90 and newer have an architecture-specific `a` variant"));
        }
        Ok(Target { arch_specific: specific, ..Target::sm(sm) })
    }

    /// The name NVRTC takes: `sm_90`, `sm_90a`.
    pub fn arch(&self) -> String {
        format!("sm_{}{}", self.sm, if self.arch_specific { "a" } else { "" })
    }

    /// Whether `cp.async` (asynchronous copies to shared memory) exists.
    pub fn has_cp_async(&self) -> bool {
        self.sm >= 80
    }

    /// Tensor cores' `wmma` on float16 tiles: Volta (sm_70) and newer.
    pub fn has_wmma(&self) -> bool {
        self.sm >= 70
    }

    /// `mma.sync.m16n8k16` on float16 (with `ldmatrix`): Ampere (sm_80)
    /// and newer.
    pub fn has_mma_m16n8k16(&self) -> bool {
        self.sm >= 80
    }
}

#[cfg(test)]
mod tests {
    use super::Target;

    #[test]
    fn architectures_parse_with_their_limits() {
        let h100 = Target::from_arch("sm_90").unwrap_or_default();
        assert_eq!((h100.sm, h100.max_shared_per_block, h100.arch()), (90, 227 * 1024, "sm_90".to_string()));
        assert_eq!(Target::from_arch("sm_90a").map(|t| t.arch()), Ok("sm_90a".into()));
        assert_eq!(Target::from_arch("sm_86").map(|t| t.max_shared_per_block), Ok(99 * 1024));
        assert!(Target::from_arch("sm_75").is_ok_and(|t| !t.has_cp_async()));
        for bad in ["90", "sm_", "sm_9x", "sm_35", "sm_80a", "compute_90"] {
            assert!(Target::from_arch(bad).is_err(), "{bad}");
        }
    }
}
