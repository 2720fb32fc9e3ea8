//! Running kernels on an NVIDIA GPU: NVRTC compiles the CUDA C that
//! `tirc_codegen::cuda` emits to PTX, the driver API loads, launches and
//! times it, and cuBLAS gives the SGEMM baseline. All of it goes through
//! `cudarc`, which loads `libcuda`, `libnvrtc` and `libcublas` at run time.
//!
//! Contract:
//! - Nothing here panics and nothing here unwraps a CUDA result. Every call
//!   that can fail returns `Err(String)` saying which step failed and with
//!   what CUDA / NVRTC / cuBLAS error. A missing library is an error, never
//!   a panic: the presence of each library is checked before any `cudarc`
//!   call that would load it (`cudarc` panics when it cannot load one), and
//!   every `cudarc` call is also run under `catch_unwind`, so a panic inside
//!   `cudarc` becomes an `Err` too (its message is still printed by the
//!   panic hook).
//! - [`nvrtc_compile`] needs NVRTC alone, no GPU and no driver.
//!   [`available`] and [`Gpu::open`] need the driver and a device;
//!   [`Gpu::load`] needs NVRTC as well; [`Gpu::cublas_sgemm`] needs cuBLAS.
//!   [`Gpu::resources`] reads a loaded kernel's registers, shared and local
//!   memory and its occupancy from the driver.
//! - A [`Gpu`] owns a context on device 0 (the primary one), one stream on
//!   which everything runs (uploads, downloads, launches, cuBLAS), and,
//!   created on first use, a cuBLAS handle bound to that stream. Because only
//!   that one stream is used, `cudarc`'s cross-stream event tracking is
//!   turned off for the context, so that launches are not wrapped in extra
//!   event records.
//! - Uploads, downloads and [`Gpu::launch`] are synchronous: they return once
//!   the work is done, with any error it raised. [`Gpu::time`] and
//!   [`Gpu::cublas_sgemm`] run `warmup` calls, synchronize (so that errors
//!   surface there), then enqueue `reps` calls back to back, each between
//!   its own pair of CUDA events, synchronize once, and return the
//!   milliseconds of each call, in order.
//! - An error during a kernel's execution (an illegal address, say) is sticky
//!   in CUDA: the context is unusable afterwards, and every later call on this
//!   [`Gpu`] fails. Open a new process to go on.
//! - Poisoning outputs, comparing results and taking medians are the
//!   caller's business.

use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use cudarc::cublas::{result as blas_result, sys as blas_sys};
use cudarc::driver::{
    result as drv_result, sys as drv_sys, CudaContext, CudaEvent, CudaFunction, CudaSlice, CudaStream, DevicePtr,
    DriverError, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::{result as nvrtc_result, sys as nvrtc_sys, Ptx};

use crate::data::HostData;
use tirc_ir::DType;

const NVRTC_MISSING: &str = "NVRTC library not found (libnvrtc.so; e.g. pip install nvidia-cuda-nvrtc==13.0.* and add \
                             its lib folder to LD_LIBRARY_PATH)";
const DRIVER_MISSING: &str = "no CUDA driver library (libcuda.so) found";
const CUBLAS_MISSING: &str = "cuBLAS library not found (libcublas.so)";

/// Dynamic shared memory above this many bytes needs the kernel's opt-in
/// attribute.
const DEFAULT_SHARED_LIMIT: usize = 48 * 1024;

/// Runs `f`, turning a panic inside it (from `cudarc`) into an error.
fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let msg = if let Some(s) = payload.downcast_ref::<&str>() {
                (*s).to_string()
            } else if let Some(s) = payload.downcast_ref::<String>() {
                s.clone()
            } else {
                "unknown panic".to_string()
            };
            Err(format!("{what}: cudarc panicked: {msg}"))
        }
    }
}

/// An error-mapping closure for a failed driver call.
fn drv(what: &'static str) -> impl Fn(DriverError) -> String {
    move |e| format!("{what} failed: {e}")
}

fn driver_present() -> bool {
    catch_unwind(|| unsafe { drv_sys::is_culib_present() }).unwrap_or(false)
}

fn cublas_present() -> bool {
    catch_unwind(|| unsafe { blas_sys::is_culib_present() }).unwrap_or(false)
}

/// Whether NVRTC can be loaded.
pub fn nvrtc_available() -> bool {
    catch_unwind(|| unsafe { nvrtc_sys::is_culib_present() }).unwrap_or(false)
}

/// Whether a GPU can be used: the driver library is present, it
/// initializes, and it sees at least one device. The error says why not.
pub fn available() -> Result<(), String> {
    if !driver_present() {
        return Err(DRIVER_MISSING.to_string());
    }
    guarded("checking for a CUDA device", || {
        match drv_result::init() {
            Ok(()) => {}
            Err(DriverError(drv_sys::CUresult::CUDA_ERROR_NO_DEVICE)) => return Err("no CUDA device".to_string()),
            Err(e) => return Err(format!("initializing the CUDA driver (cuInit) failed: {e}")),
        }
        let n = drv_result::device::get_count().map_err(drv("counting CUDA devices"))?;
        if n < 1 {
            return Err("no CUDA device".to_string());
        }
        Ok(())
    })
}

/// Text from a NUL-terminated buffer that NVRTC filled.
fn c_text(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf.iter().map(|&c| c as u8).take_while(|&b| b != 0).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Destroys an NVRTC program when dropped.
struct NvrtcProgram(nvrtc_sys::nvrtcProgram);

impl Drop for NvrtcProgram {
    fn drop(&mut self) {
        let _ = catch_unwind(AssertUnwindSafe(|| unsafe { nvrtc_result::destroy_program(self.0) }));
    }
}

const CUDA_HEADERS_MISSING: &str = "the kernel uses float16 or bfloat16, whose types come from CUDA's headers \
(cuda_fp16.h, cuda_bf16.h), and none were found: set TIRC_CUDA_INCLUDE or CUDA_HOME, or pip install \
nvidia-cuda-runtime==13.0.* beside NVRTC";

/// The folder holding CUDA's `cuda_fp16.h`: `$TIRC_CUDA_INCLUDE`,
/// `$CUDA_HOME/include`, `$CUDA_PATH/include`, `/usr/local/cuda/include`, or
/// the `include` beside a `lib` folder on `LD_LIBRARY_PATH` (where pip puts
/// NVRTC and the runtime's headers).
pub fn cuda_include_dir() -> Option<std::path::PathBuf> {
    use std::path::PathBuf;
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(d) = std::env::var_os("TIRC_CUDA_INCLUDE") {
        candidates.push(d.into());
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(d) = std::env::var_os(var) {
            candidates.push(PathBuf::from(d).join("include"));
        }
    }
    candidates.push("/usr/local/cuda/include".into());
    if let Some(paths) = std::env::var_os("LD_LIBRARY_PATH") {
        for p in std::env::split_paths(&paths) {
            if let Some(parent) = p.parent() {
                candidates.push(parent.join("include"));
            }
        }
    }
    candidates.into_iter().find(|d| d.join("cuda_fp16.h").is_file())
}

/// Compiles CUDA source to PTX with NVRTC for `arch` (e.g. "sm_90"), with
/// `--gpu-architecture=<arch> -default-device --std=c++17 -lineinfo` and no
/// fast math, and CUDA's include folder when the kernel includes a header. Needs no GPU. Returns the PTX text, or an error holding
/// NVRTC's compile log.
pub fn nvrtc_compile(source: &str, arch: &str) -> Result<String, String> {
    nvrtc_build(source, arch).map(|b| b.ptx)
}

/// What NVRTC made of a source: the PTX, and the cubin (machine code for
/// `arch`, loadable by the driver without a JIT step) when NVRTC gave one,
/// with ptxas's report of the machine code.
pub struct NvrtcOutput {
    pub ptx: String,
    pub cubin: Option<Vec<u8>>,
    pub ptxas: Option<PtxasReport>,
}

/// What ptxas says of a kernel's machine code (`--ptxas-options=-v`), per
/// thread: the registers it uses, and the bytes it spills to local memory
/// because they did not fit (under `__launch_bounds__`, at most 65536 /
/// threads per block, and 255).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PtxasReport {
    pub registers: u32,
    pub spill_stores: u64,
    pub spill_loads: u64,
    pub stack_frame: u64,
}

impl PtxasReport {
    /// Reads ptxas's verbose lines (`0 bytes stack frame, 8 bytes spill
    /// stores, 8 bytes spill loads`, `Used 255 registers, ...`); `None`
    /// when the log has none.
    pub fn parse(log: &str) -> Option<PtxasReport> {
        let number_before = |line: &str, what: &str| -> Option<u64> {
            let at = line.find(what)?;
            line[..at].split(|c: char| !c.is_ascii_digit()).rfind(|w| !w.is_empty())?.parse().ok()
        };
        let mut r = PtxasReport::default();
        let mut seen = false;
        for line in log.lines() {
            if let Some(n) = number_before(line, " bytes spill stores") {
                r.spill_stores += n;
                r.spill_loads += number_before(line, " bytes spill loads").unwrap_or(0);
                r.stack_frame = r.stack_frame.max(number_before(line, " bytes stack frame").unwrap_or(0));
                seen = true;
            }
            if let Some(n) = number_before(line, " registers") {
                r.registers = r.registers.max(n as u32);
                seen = true;
            }
        }
        seen.then_some(r)
    }

    /// A warning when the kernel spills: correct, but its spilled values
    /// go through local memory, off the chip. `min_blocks` is the
    /// occupancy hint of its `__launch_bounds__`, if any.
    pub fn spill_warning(&self, kernel: &str, threads: i64, min_blocks: Option<i64>) -> Option<String> {
        (self.spill_stores + self.spill_loads > 0).then(|| {
            // A multiprocessor has 65536 registers; a thread, at most 255.
            let blocks = min_blocks.unwrap_or(1).max(1);
            let per_thread = (65536 / threads.max(1).saturating_mul(blocks)).min(255);
            let (bounds, fewer) = match min_blocks {
                Some(n) => (
                    format!("{threads}, {n}"),
                    format!(
                        ", or a smaller `min_blocks_per_sm` (at {n} blocks of {threads} threads, a thread may have \
                         {per_thread})"
                    ),
                ),
                None if per_thread < 255 => (
                    threads.to_string(),
                    format!(", or fewer threads per block (at {threads}, a thread may have {per_thread})"),
                ),
                None => (threads.to_string(), String::new()),
            };
            format!(
                "kernel {kernel} spills registers: {} bytes of spill stores and {} bytes of spill loads per thread \
                 (ptxas: {} registers, under __launch_bounds__({bounds})); the spilled values go through local \
                 memory, off the chip. Keep fewer values per thread (a smaller thread tile){fewer}",
                self.spill_stores, self.spill_loads, self.registers
            )
        })
    }
}

/// The architecture `source` is compiled for on a GPU of `arch`: a kernel
/// that issues wgmma or setmaxnreg (its source defines TIRC_SM90A) needs
/// the architecture-specific target of its Hopper GPU, sm_90a for sm_90.
pub fn compile_arch(source: &str, arch: &str) -> String {
    if source.contains("#define TIRC_SM90A") && arch == "sm_90" {
        format!("{arch}a")
    } else {
        arch.to_string()
    }
}

/// [`nvrtc_compile`], keeping the cubin too.
pub fn nvrtc_build(source: &str, arch: &str) -> Result<NvrtcOutput, String> {
    if !nvrtc_available() {
        return Err(NVRTC_MISSING.to_string());
    }
    let arch = compile_arch(source, arch);
    let arch = arch.as_str();
    if arch.is_empty() || !arch.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!("invalid GPU architecture {arch:?} (expected e.g. \"sm_90\")"));
    }
    let src = CString::new(source).map_err(|_| "the CUDA source contains a NUL byte".to_string())?;
    guarded("NVRTC", || {
        let prog = nvrtc_result::create_program(&src, Some(c"tirc_kernel.cu"))
            .map_err(|e| format!("creating the NVRTC program failed: {e}"))?;
        let prog = NvrtcProgram(prog);
        let mut options = vec![
            format!("--gpu-architecture={arch}"),
            "-default-device".to_string(),
            "--std=c++17".to_string(),
            "-lineinfo".to_string(),
            // ptxas's report: registers and spills (`PtxasReport`).
            "--ptxas-options=-v".to_string(),
        ];
        if source.contains("#include <cuda_") {
            let dir = cuda_include_dir().ok_or(CUDA_HEADERS_MISSING)?;
            options.push(format!("--include-path={}", dir.display()));
        }
        let compiled = unsafe { nvrtc_result::compile_program(prog.0, &options) };
        let log = match unsafe { nvrtc_result::get_program_log(prog.0) } {
            Ok(buf) => c_text(&buf),
            Err(e) => format!("(could not read the NVRTC log: {e})"),
        };
        if let Err(e) = compiled {
            return Err(format!(
                "NVRTC could not compile the kernel for {arch} ({e}) with options {}:\n{}",
                options.join(" "),
                log.trim_end()
            ));
        }
        let ptx =
            unsafe { nvrtc_result::get_ptx(prog.0) }.map_err(|e| format!("reading the PTX from NVRTC failed: {e}"))?;
        let ptx = c_text(&ptx);
        if ptx.is_empty() {
            return Err(format!("NVRTC produced no PTX; its log:\n{}", log.trim_end()));
        }
        let mut size = 0usize;
        let cubin = match unsafe { nvrtc_sys::nvrtcGetCUBINSize(prog.0, &mut size) } {
            nvrtc_sys::nvrtcResult::NVRTC_SUCCESS if size > 0 => {
                let mut buf = vec![0u8; size];
                match unsafe { nvrtc_sys::nvrtcGetCUBIN(prog.0, buf.as_mut_ptr() as *mut c_char) } {
                    nvrtc_sys::nvrtcResult::NVRTC_SUCCESS => Some(buf),
                    _ => None,
                }
            }
            _ => None,
        };
        // For a person finding out why a report is missing: NVRTC's log as
        // it came.
        if std::env::var_os("TIRC_NVRTC_LOG").is_some() {
            eprintln!("NVRTC log ({} bytes) for options {}:\n{log}", log.len(), options.join(" "));
        }
        Ok(NvrtcOutput { ptx, cubin, ptxas: PtxasReport::parse(&log) })
    })
}

/// A cuBLAS handle, destroyed when dropped.
struct Blas {
    handle: blas_sys::cublasHandle_t,
    ctx: Arc<CudaContext>,
}

// The handle is used only under the `Gpu`'s mutex, and cuBLAS handles may
// move between threads.
unsafe impl Send for Blas {}

impl Drop for Blas {
    fn drop(&mut self) {
        let _ = catch_unwind(AssertUnwindSafe(|| {
            let _ = self.ctx.bind_to_thread();
            let _ = unsafe { blas_result::destroy_handle(self.handle) };
        }));
    }
}

/// An open GPU: device 0's context, one stream, and a cuBLAS handle made on
/// first use.
pub struct Gpu {
    // Declared first so that it is dropped before the stream and context.
    blas: Mutex<Option<Blas>>,
    stream: Arc<CudaStream>,
    ctx: Arc<CudaContext>,
    name: String,
    arch: String,
    sm_count: i64,
    max_shared_optin: usize,
    max_threads_per_sm: i64,
}

/// A kernel loaded into a [`Gpu`]'s context, with its launch configuration.
pub struct LoadedKernel {
    /// What ptxas reported when NVRTC compiled it for this GPU (`load`).
    pub ptxas: Option<PtxasReport>,
    func: CudaFunction,
    name: String,
    cfg: LaunchConfig,
    num_params: usize,
    /// The kernel's global intermediates, allocated once when it is loaded
    /// and passed after the caller's buffers at every launch.
    scratch: Vec<DeviceBuffer>,
    /// The run-time sizes, passed after the scratch at every launch: one
    /// value each, as a 32- or 64-bit integer by the size's type (empty
    /// until `set_sizes` for a kernel loaded without values).
    sizes: Vec<ByValue>,
    /// The kernel's run-time sizes, by name and type.
    size_types: Vec<(String, DType)>,
    /// The scalar parameters' values, passed after the sizes (empty until
    /// `set_scalars` for a kernel loaded without values).
    scalars: Vec<ByValue>,
    /// The kernel's scalar parameters, by name and type.
    scalar_types: Vec<(String, DType)>,
    /// The tensor maps of its bulk tensor copies, passed after the scalars,
    /// encoded at each launch from the addresses of the buffers they read.
    tensor_maps: Vec<tirc_codegen::warp_specialized::TensorMap>,
}

/// The tensor map `m` over the buffer at device address `ptr`
/// (`cuTensorMapEncodeTiled`): its dimensions and box innermost first,
/// elements one apart, the swizzle of the tile it fills.
fn encode_tensor_map(m: &tirc_codegen::warp_specialized::TensorMap, ptr: u64) -> Result<drv_sys::CUtensorMap, String> {
    use drv_sys::CUtensorMapDataType_enum as T;
    use drv_sys::CUtensorMapSwizzle_enum as S;
    let dtype = match m.dtype {
        DType::Float(16) => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        DType::BFloat16 => T::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        DType::Float(32) => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        DType::Float(64) => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
        DType::Int(32) => T::CU_TENSOR_MAP_DATA_TYPE_INT32,
        DType::Int(64) => T::CU_TENSOR_MAP_DATA_TYPE_INT64,
        DType::Int(8) | DType::UInt(8) => T::CU_TENSOR_MAP_DATA_TYPE_UINT8,
        DType::UInt(16) | DType::Int(16) => T::CU_TENSOR_MAP_DATA_TYPE_UINT16,
        DType::UInt(32) => T::CU_TENSOR_MAP_DATA_TYPE_UINT32,
        t => return Err(format!("no tensor map for elements of {t}")),
    };
    let swizzle = match m.swizzle {
        0 => S::CU_TENSOR_MAP_SWIZZLE_NONE,
        32 => S::CU_TENSOR_MAP_SWIZZLE_32B,
        64 => S::CU_TENSOR_MAP_SWIZZLE_64B,
        128 => S::CU_TENSOR_MAP_SWIZZLE_128B,
        n => return Err(format!("no tensor map swizzles by {n} bytes")),
    };
    let dims: Vec<u64> = m.shape.iter().rev().map(|&n| n as u64).collect();
    let elem = m.dtype.bytes() as u64;
    let strides: Vec<u64> = (1..dims.len()).map(|d| dims[..d].iter().product::<u64>() * elem).collect();
    let boxed: Vec<u32> = m.boxed.iter().rev().map(|&n| n as u32).collect();
    let ones = vec![1u32; dims.len()];
    let mut map = std::mem::MaybeUninit::<drv_sys::CUtensorMap>::zeroed();
    let r = unsafe {
        drv_sys::cuTensorMapEncodeTiled(
            map.as_mut_ptr(),
            dtype,
            dims.len() as u32,
            ptr as *mut std::ffi::c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxed.as_ptr(),
            ones.as_ptr(),
            drv_sys::CUtensorMapInterleave_enum::CU_TENSOR_MAP_INTERLEAVE_NONE,
            swizzle,
            drv_sys::CUtensorMapL2promotion_enum::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            drv_sys::CUtensorMapFloatOOBfill_enum::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    if r != drv_sys::CUresult::CUDA_SUCCESS {
        return Err(format!("encoding the tensor map of shape {:?}, box {:?} failed: {r:?}", m.shape, m.boxed));
    }
    Ok(unsafe { map.assume_init() })
}

/// The size arguments of `k` for `values`, each checked against its type.
fn size_args(k: &tirc_codegen::CudaKernel, values: &[i64]) -> Result<Vec<ByValue>, String> {
    size_args_of(&k.name, &k.sizes, values)
}

fn size_args_of(name: &str, sizes: &[(String, DType)], values: &[i64]) -> Result<Vec<ByValue>, String> {
    if values.len() != sizes.len() {
        return Err(format!("kernel {name} takes {} run-time sizes, {} given", sizes.len(), values.len()));
    }
    sizes
        .iter()
        .zip(values)
        .map(|((n, t), v)| match t.bytes() {
            8 => Ok(ByValue::I64(*v)),
            _ => i32::try_from(*v).map(ByValue::I32).map_err(|_| format!("size {n} = {v} does not fit its type {t}")),
        })
        .collect()
}

/// A kernel argument passed by value, in its parameter's type: a run-time
/// size (a 32- or 64-bit integer) or a scalar parameter's value
/// (`alpha: T.float32`; a float16 or bfloat16 as its 16 bits).
#[derive(Clone, Copy, Debug)]
enum ByValue {
    I32(i32),
    I64(i64),
    F32(f32),
    F64(f64),
    Bits16(u16),
}

impl ByValue {
    /// The address of the value, as the driver takes kernel arguments.
    fn as_param(&mut self) -> *mut std::ffi::c_void {
        match self {
            ByValue::I32(x) => x as *mut i32 as *mut std::ffi::c_void,
            ByValue::I64(x) => x as *mut i64 as *mut std::ffi::c_void,
            ByValue::F32(x) => x as *mut f32 as *mut std::ffi::c_void,
            ByValue::F64(x) => x as *mut f64 as *mut std::ffi::c_void,
            ByValue::Bits16(x) => x as *mut u16 as *mut std::ffi::c_void,
        }
    }
}

/// The scalar arguments of kernel `name` for `values`, one per parameter
/// of `types`, each rounded to its type.
fn scalar_args_of(name: &str, types: &[(String, DType)], values: &[f64]) -> Result<Vec<ByValue>, String> {
    if values.len() != types.len() {
        return Err(format!("kernel {name} takes {} scalar values, {} given", types.len(), values.len()));
    }
    types
        .iter()
        .zip(values)
        .map(|((n, t), v)| match t {
            DType::Float(32) => Ok(ByValue::F32(*v as f32)),
            DType::Float(64) => Ok(ByValue::F64(*v)),
            DType::Float(16) => Ok(ByValue::Bits16(half::f16::from_f64(*v).to_bits())),
            DType::BFloat16 => Ok(ByValue::Bits16(half::bf16::from_f64(*v).to_bits())),
            t => Err(format!("kernel {name}: scalar parameter {n} of type {t} cannot be passed")),
        })
        .collect()
}

impl LoadedKernel {
    /// The kernel's entry point.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn grid(&self) -> [u32; 3] {
        let (x, y, z) = self.cfg.grid_dim;
        [x, y, z]
    }

    pub fn block(&self) -> [u32; 3] {
        let (x, y, z) = self.cfg.block_dim;
        [x, y, z]
    }

    /// Bytes of dynamic shared memory each launch requests.
    pub fn shared_bytes(&self) -> u32 {
        self.cfg.shared_mem_bytes
    }

    /// How many buffers a launch takes.
    pub fn num_params(&self) -> usize {
        self.num_params
    }

    /// The grid and the run-time sizes of the next launches of a generic
    /// kernel (`CudaKernel::sizes`), each checked against its type and the
    /// grid against CUDA's limits.
    pub fn set_sizes(&mut self, grid: [i64; 3], values: &[i64]) -> Result<(), String> {
        self.sizes = size_args_of(&self.name, &self.size_types, values)?;
        let name = &self.name;
        self.cfg.grid_dim =
            (dim(grid[0], "grid x", name)?, dim(grid[1], "grid y", name)?, dim(grid[2], "grid z", name)?);
        Ok(())
    }

    /// The values of the scalar parameters (`CudaKernel::scalars`) for the
    /// next launches, each rounded to its type.
    pub fn set_scalars(&mut self, values: &[f64]) -> Result<(), String> {
        self.scalars = scalar_args_of(&self.name, &self.scalar_types, values)?;
        Ok(())
    }

    fn check_sizes(&self) -> Result<(), String> {
        if self.scalars.len() != self.scalar_types.len() {
            let names: Vec<&str> = self.scalar_types.iter().map(|(n, _)| n.as_str()).collect();
            return Err(format!(
                "kernel {} takes scalar values ({}) that were given none",
                self.name,
                names.join(", ")
            ));
        }
        if self.sizes.len() != self.size_types.len() {
            let names: Vec<&str> = self.size_types.iter().map(|(n, _)| n.as_str()).collect();
            return Err(format!(
                "kernel {} takes run-time sizes ({}) that were given no values",
                self.name,
                names.join(", ")
            ));
        }
        Ok(())
    }
}

/// What a loaded kernel uses of an SM, as the driver reports it, and how
/// many of its blocks fit on one SM at once.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KernelResources {
    pub registers_per_thread: i32,
    /// Shared memory declared in the kernel (`__shared__` arrays), bytes.
    pub static_shared_bytes: i32,
    /// Shared memory each launch requests dynamically, bytes.
    pub dynamic_shared_bytes: u32,
    /// Local memory per thread (spilled or dynamically indexed arrays), bytes.
    pub local_bytes_per_thread: i32,
    pub threads_per_block: u32,
    /// `cuOccupancyMaxActiveBlocksPerMultiprocessor` for the launch's block
    /// size and dynamic shared memory.
    pub max_active_blocks_per_sm: u32,
    /// The device's limit of resident threads per SM.
    pub max_threads_per_sm: i64,
}

impl KernelResources {
    /// Active warps over the most warps an SM can hold, in [0, 1].
    pub fn occupancy(&self) -> f64 {
        let warps_per_block = self.threads_per_block.div_ceil(32) as i64;
        let max_warps = self.max_threads_per_sm / 32;
        if max_warps <= 0 {
            return 0.0;
        }
        (self.max_active_blocks_per_sm as i64 * warps_per_block) as f64 / max_warps as f64
    }
}

/// A device allocation and the number of bytes it holds.
pub struct DeviceBuffer {
    // At least one byte is allocated, so that empty buffers are valid
    // allocations too.
    slice: CudaSlice<u8>,
    bytes: usize,
}

impl DeviceBuffer {
    /// Bytes of data (the allocation may be larger by one for empty buffers).
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

fn dim(v: i64, what: &str, kernel: &str) -> Result<u32, String> {
    if v < 1 || v > u32::MAX as i64 {
        return Err(format!("kernel {kernel}: {what} extent {v} is out of range"));
    }
    Ok(v as u32)
}

impl Gpu {
    /// Opens device 0.
    pub fn open() -> Result<Gpu, String> {
        Gpu::open_on(0)
    }

    /// Opens device `ordinal` (its primary context, the one the CUDA
    /// runtime, PyTorch and CuPy use too).
    pub fn open_on(ordinal: usize) -> Result<Gpu, String> {
        available()?;
        let count = CudaContext::device_count().map_err(drv("counting the CUDA devices"))?;
        if ordinal >= count.max(0) as usize {
            return Err(format!("there is no CUDA device {ordinal}: this machine has {count}"));
        }
        guarded("opening the GPU", || {
            let ctx = CudaContext::new(ordinal)
                .map_err(|e| format!("creating a CUDA context on device {ordinal} failed: {e}"))?;
            // Everything runs on the one stream below, so the context needs
            // not order work between streams with events.
            unsafe { ctx.disable_event_tracking() };
            let stream = ctx.new_stream().map_err(drv("creating a CUDA stream"))?;
            let name = ctx.name().map_err(drv("reading the device name"))?;
            let (major, minor) = ctx.compute_capability().map_err(drv("reading the compute capability"))?;
            let attr = drv_sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT;
            let sm_count = ctx.attribute(attr).map_err(drv("reading the multiprocessor count"))?;
            let attr = drv_sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN;
            let optin = ctx.attribute(attr).map_err(drv("reading the opt-in shared memory per block"))?;
            let attr = drv_sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR;
            let max_threads_per_sm = ctx.attribute(attr).map_err(drv("reading the threads per multiprocessor"))?;
            Ok(Gpu {
                blas: Mutex::new(None),
                stream,
                ctx,
                name,
                arch: format!("sm_{major}{minor}"),
                sm_count: sm_count as i64,
                max_shared_optin: optin.max(0) as usize,
                max_threads_per_sm: max_threads_per_sm as i64,
            })
        })
    }

    /// The device's name, e.g. "NVIDIA H100 80GB HBM3".
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// The architecture NVRTC compiles for, from the compute capability,
    /// e.g. "sm_90".
    pub fn arch(&self) -> String {
        self.arch.clone()
    }

    pub fn sm_count(&self) -> i64 {
        self.sm_count
    }

    /// The most shared memory one block may use, opting in, in bytes.
    pub fn max_shared_per_block_optin(&self) -> usize {
        self.max_shared_optin
    }

    /// Compiles `k` with NVRTC for this device's architecture, loads the
    /// module and finds the kernel. Kernels that ask for more than 48 KiB of
    /// dynamic shared memory get the attribute that allows it.
    pub fn load(&self, k: &tirc_codegen::CudaKernel) -> Result<LoadedKernel, String> {
        let out = nvrtc_build(&k.source, &self.arch)?;
        let mut loaded = self.load_ptx(k, out.ptx)?;
        loaded.ptxas = out.ptxas;
        Ok(loaded)
    }

    /// [`Gpu::load`] of a kernel already compiled to PTX (for this GPU's
    /// architecture, or an older one: the driver compiles PTX for the GPU
    /// it loads on), so that one compilation serves several GPUs.
    pub fn load_ptx(&self, k: &tirc_codegen::CudaKernel, ptx: String) -> Result<LoadedKernel, String> {
        let name = &k.name;
        let grid = [
            dim(k.launch.grid[0], "grid x", name)?,
            dim(k.launch.grid[1], "grid y", name)?,
            dim(k.launch.grid[2], "grid z", name)?,
        ];
        let block = [
            dim(k.launch.block[0], "block x", name)?,
            dim(k.launch.block[1], "block y", name)?,
            dim(k.launch.block[2], "block z", name)?,
        ];
        let shared = k.dynamic_shared_bytes;
        if shared > DEFAULT_SHARED_LIMIT && shared > self.max_shared_optin {
            return Err(format!(
                "kernel {name} needs {shared} bytes of dynamic shared memory, more than the {} a block may have on {}",
                self.max_shared_optin, self.name
            ));
        }
        let shared_u32 = u32::try_from(shared)
            .map_err(|_| format!("kernel {name}: {shared} bytes of shared memory is out of range"))?;
        if name.contains('\0') {
            return Err(format!("kernel name {name:?} contains a NUL byte"));
        }
        // A generic kernel loads without values; `set_sizes` gives them.
        let sizes = if k.size_values.len() == k.sizes.len() { size_args(k, &k.size_values)? } else { Vec::new() };
        let scalars = if k.scalar_values.len() == k.scalars.len() {
            scalar_args_of(&k.name, &k.scalars, &k.scalar_values)?
        } else {
            Vec::new()
        };
        let scratch = k
            .scratch
            .iter()
            .map(|(_, t, n)| self.upload(&HostData::poisoned(*t, *n)?))
            .collect::<Result<Vec<_>, String>>()?;
        guarded("loading the kernel", || {
            let module = self
                .ctx
                .load_module(Ptx::from_src(ptx))
                .map_err(|e| format!("loading the PTX module of kernel {name} failed: {e}"))?;
            let func =
                module.load_function(name).map_err(|e| format!("finding kernel {name} in its module failed: {e}"))?;
            if shared > DEFAULT_SHARED_LIMIT {
                self.ctx.bind_to_thread().map_err(drv("binding the CUDA context"))?;
                let attr = drv_sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
                func.set_attribute(attr, shared as i32).map_err(|e| {
                    format!("allowing kernel {name} {shared} bytes of dynamic shared memory failed: {e}")
                })?;
            }
            Ok(LoadedKernel {
                ptxas: None,
                func,
                name: name.clone(),
                cfg: LaunchConfig {
                    grid_dim: (grid[0], grid[1], grid[2]),
                    block_dim: (block[0], block[1], block[2]),
                    shared_mem_bytes: shared_u32,
                },
                num_params: k.params.len(),
                scratch,
                sizes,
                size_types: k.sizes.clone(),
                scalars,
                scalar_types: k.scalars.clone(),
                tensor_maps: k.tensor_maps.clone(),
            })
        })
    }

    /// The registers, shared and local memory `k` uses, and how many of its
    /// blocks one SM holds at once (its occupancy).
    pub fn resources(&self, k: &LoadedKernel) -> Result<KernelResources, String> {
        let name = &k.name;
        guarded("reading the kernel's resources", || {
            let f = &k.func;
            let what = |w: &'static str| move |e: DriverError| format!("reading the {w} of kernel {name} failed: {e}");
            let (x, y, z) = k.cfg.block_dim;
            let threads = x.saturating_mul(y).saturating_mul(z);
            let dynamic = k.cfg.shared_mem_bytes;
            self.ctx.bind_to_thread().map_err(drv("binding the CUDA context"))?;
            let blocks = f
                .occupancy_max_active_blocks_per_multiprocessor(threads, dynamic as usize, None)
                .map_err(what("occupancy (cuOccupancyMaxActiveBlocksPerMultiprocessor)"))?;
            Ok(KernelResources {
                registers_per_thread: f.num_regs().map_err(what("registers per thread"))?,
                static_shared_bytes: f.shared_size_bytes().map_err(what("static shared memory"))?,
                dynamic_shared_bytes: dynamic,
                local_bytes_per_thread: f.local_size_bytes().map_err(what("local memory per thread"))?,
                threads_per_block: threads,
                max_active_blocks_per_sm: blocks,
                max_threads_per_sm: self.max_threads_per_sm,
            })
        })
    }

    /// Copies `d` to a new device allocation.
    pub fn upload(&self, d: &HostData) -> Result<DeviceBuffer, String> {
        let bytes = d.as_bytes();
        guarded("uploading a buffer", || {
            let n = bytes.len();
            let mut slice = unsafe { self.stream.alloc::<u8>(n.max(1)) }
                .map_err(|e| format!("allocating {n} bytes on the GPU failed: {e}"))?;
            if n > 0 {
                let mut view = slice.slice_mut(0..n);
                self.stream
                    .memcpy_htod(&bytes[..], &mut view)
                    .map_err(|e| format!("copying {n} bytes to the GPU failed: {e}"))?;
            }
            self.stream.synchronize().map_err(drv("synchronizing after an upload"))?;
            Ok(DeviceBuffer { slice, bytes: n })
        })
    }

    /// Copies `b` back into `into`, whose length and element type must make
    /// up exactly `b`'s bytes.
    pub fn download(&self, b: &DeviceBuffer, into: &mut HostData) -> Result<(), String> {
        let want = into.len() * into.elem_bytes();
        if want != b.bytes {
            return Err(format!("downloading a {}-byte device buffer into {want} bytes of host data", b.bytes));
        }
        let bytes = guarded("downloading a buffer", || {
            let mut host = vec![0u8; b.slice.len()];
            self.stream
                .memcpy_dtoh(&b.slice, &mut host)
                .map_err(|e| format!("copying {} bytes from the GPU failed: {e}", b.bytes))?;
            self.stream.synchronize().map_err(drv("synchronizing after a download"))?;
            host.truncate(b.bytes);
            Ok(host)
        })?;
        into.set_bytes(&bytes);
        Ok(())
    }

    /// Enqueues one launch, without synchronizing.
    fn enqueue(&self, k: &LoadedKernel, bufs: &[&DeviceBuffer]) -> Result<(), String> {
        if !k.tensor_maps.is_empty() {
            let ptrs: Vec<u64> = bufs.iter().map(|b| self.device_ptr(b)).collect();
            return unsafe { self.launch_on(k, &ptrs, self.stream.cu_stream()) };
        }
        let mut args = self.stream.launch_builder(&k.func);
        for b in bufs.iter().copied().chain(&k.scratch) {
            args.arg(&b.slice);
        }
        for v in k.sizes.iter().chain(&k.scalars) {
            match v {
                ByValue::I32(x) => args.arg(x),
                ByValue::I64(x) => args.arg(x),
                ByValue::F32(x) => args.arg(x),
                ByValue::F64(x) => args.arg(x),
                ByValue::Bits16(x) => args.arg(x),
            };
        }
        unsafe { args.launch(k.cfg) }.map(|_| ()).map_err(|e| format!("launching kernel {} failed: {e}", k.name))
    }

    fn check_args(&self, k: &LoadedKernel, bufs: &[&DeviceBuffer]) -> Result<(), String> {
        k.check_sizes()?;
        if bufs.len() != k.num_params {
            return Err(format!("kernel {} takes {} buffers, {} given", k.name, k.num_params, bufs.len()));
        }
        Ok(())
    }

    /// One launch with these buffers as the kernel's arguments in order;
    /// synchronizes and returns any launch or execution error.
    pub fn launch(&self, k: &LoadedKernel, bufs: &[&DeviceBuffer]) -> Result<(), String> {
        self.check_args(k, bufs)?;
        guarded("launching a kernel", || {
            self.enqueue(k, bufs)?;
            self.stream.synchronize().map_err(|e| format!("kernel {} failed while running: {e}", k.name))
        })
    }

    /// Waits until all work on this GPU's context is done (every stream,
    /// a caller's included): before memory in use by earlier launches is
    /// freed.
    pub fn synchronize_device(&self) -> Result<(), String> {
        guarded("synchronizing the GPU", || {
            self.ctx.bind_to_thread().map_err(drv("binding the CUDA context"))?;
            self.ctx.synchronize().map_err(|e| format!("waiting for the GPU failed: {e}"))
        })
    }

    /// The device address of `b`, for a kernel argument.
    pub fn device_ptr(&self, b: &DeviceBuffer) -> u64 {
        let (p, _record) = b.slice.device_ptr(&self.stream);
        p
    }

    /// Enqueues one launch of `k` on the raw CUDA stream `stream` (0: the
    /// legacy default stream) with device pointers the caller owns, in the
    /// kernel's parameter order; the kernel's own scratch buffers follow.
    /// Does not synchronize: the caller orders its work by the stream.
    ///
    /// # Safety
    /// Each pointer must address memory of this GPU's context holding at
    /// least the bytes of the kernel's parameter in its place, alive until
    /// the kernel has run; `stream` must be a stream of this context or 0.
    pub unsafe fn launch_raw(&self, k: &LoadedKernel, ptrs: &[u64], stream: u64) -> Result<(), String> {
        k.check_sizes()?;
        if ptrs.len() != k.num_params {
            return Err(format!("kernel {} takes {} buffers, {} given", k.name, k.num_params, ptrs.len()));
        }
        guarded("launching a kernel", || unsafe { self.launch_on(k, ptrs, stream as drv_sys::CUstream) })
    }

    /// One launch of `k` with the buffers at `ptrs` (its parameters, in
    /// order), its scratch, sizes, scalars and tensor maps, on `stream`.
    ///
    /// # Safety
    /// As `launch_raw`.
    unsafe fn launch_on(&self, k: &LoadedKernel, ptrs: &[u64], stream: drv_sys::CUstream) -> Result<(), String> {
        {
            self.ctx.bind_to_thread().map_err(drv("binding the CUDA context"))?;
            let mut maps = Vec::with_capacity(k.tensor_maps.len());
            for m in &k.tensor_maps {
                let ptr = *ptrs.get(m.param).ok_or("a tensor map of a parameter that is not given")?;
                maps.push(encode_tensor_map(m, ptr)?);
            }
            let mut values: Vec<u64> = ptrs.to_vec();
            let mut guards = Vec::new();
            for b in &k.scratch {
                let (p, g) = b.slice.device_ptr(&self.stream);
                values.push(p);
                guards.push(g);
            }
            let mut by_value: Vec<ByValue> = k.sizes.iter().chain(&k.scalars).copied().collect();
            let mut params: Vec<*mut std::ffi::c_void> =
                values.iter_mut().map(|v| v as *mut u64 as *mut std::ffi::c_void).collect();
            params.extend(by_value.iter_mut().map(ByValue::as_param));
            params.extend(maps.iter_mut().map(|m| m as *mut drv_sys::CUtensorMap as *mut std::ffi::c_void));
            let cfg = k.cfg;
            unsafe {
                drv_result::launch_kernel(
                    k.func.cu_function(),
                    cfg.grid_dim,
                    cfg.block_dim,
                    cfg.shared_mem_bytes,
                    stream,
                    &mut params,
                )
            }
            .map_err(|e| format!("launching kernel {} failed: {e}", k.name))
        }
    }

    /// Runs `warmup` calls of `call`, synchronizes, then times `reps` calls,
    /// each between its own pair of events; milliseconds per call.
    fn time_calls(
        &self,
        what: &str,
        warmup: usize,
        reps: usize,
        call: &mut dyn FnMut() -> Result<(), String>,
    ) -> Result<Vec<f64>, String> {
        for _ in 0..warmup {
            call()?;
        }
        self.stream.synchronize().map_err(|e| format!("{what} failed during the warm-up runs: {e}"))?;
        let flags = Some(drv_sys::CUevent_flags::CU_EVENT_DEFAULT);
        let mut events: Vec<(CudaEvent, CudaEvent)> = Vec::with_capacity(reps);
        for _ in 0..reps {
            let start = self.ctx.new_event(flags).map_err(drv("creating a CUDA event"))?;
            let end = self.ctx.new_event(flags).map_err(drv("creating a CUDA event"))?;
            events.push((start, end));
        }
        for (start, end) in &events {
            start.record(&self.stream).map_err(drv("recording a CUDA event"))?;
            call()?;
            end.record(&self.stream).map_err(drv("recording a CUDA event"))?;
        }
        self.stream.synchronize().map_err(|e| format!("{what} failed during the timed runs: {e}"))?;
        events
            .iter()
            .map(|(start, end)| {
                start.elapsed_ms(end).map(|ms| ms as f64).map_err(drv("reading the time between two CUDA events"))
            })
            .collect()
    }

    /// Times `reps` launches after `warmup` launches, each timed alone with
    /// a pair of CUDA events; returns milliseconds per launch, in order.
    pub fn time(
        &self,
        k: &LoadedKernel,
        bufs: &[&DeviceBuffer],
        warmup: usize,
        reps: usize,
    ) -> Result<Vec<f64>, String> {
        self.time_all(std::slice::from_ref(k), bufs, warmup, reps)
    }

    /// [`Gpu::time`] for kernels launched one after another on the same
    /// buffers (a function of several kernels): one call launches them all.
    pub fn time_all(
        &self,
        ks: &[LoadedKernel],
        bufs: &[&DeviceBuffer],
        warmup: usize,
        reps: usize,
    ) -> Result<Vec<f64>, String> {
        for k in ks {
            self.check_args(k, bufs)?;
        }
        let name = ks.iter().map(|k| k.name.as_str()).collect::<Vec<_>>().join(" + ");
        guarded("timing a kernel", || {
            self.time_calls(&format!("kernel {name}"), warmup, reps, &mut || {
                ks.iter().try_for_each(|k| self.enqueue(k, bufs))
            })
        })
    }

    /// The memory-bound baseline: a device-to-device copy of `bytes` bytes
    /// (`cuMemcpyDtoDAsync`, which reads and writes each byte once), timed
    /// by the protocol of [`Gpu::time`]; milliseconds per copy.
    pub fn time_copy(&self, bytes: usize, warmup: usize, reps: usize) -> Result<Vec<f64>, String> {
        guarded("timing a device copy", || {
            let n = bytes.max(1);
            let src = self.stream.alloc_zeros::<u8>(n).map_err(|e| format!("allocating {n} bytes failed: {e}"))?;
            let mut dst = self.stream.alloc_zeros::<u8>(n).map_err(|e| format!("allocating {n} bytes failed: {e}"))?;
            self.time_calls("the device-to-device copy", warmup, reps, &mut || {
                self.stream.memcpy_dtod(&src, &mut dst).map_err(|e| format!("copying {n} bytes on the GPU failed: {e}"))
            })
        })
    }

    /// Row-major `C[m,n] = A[m,k] @ B[k,n]` in float32 with cuBLAS SGEMM in
    /// the default math mode (set explicitly: no TF32 for SGEMM, unless the
    /// environment forces it with `NVIDIA_TF32_OVERRIDE=1`). Row-major
    /// through the column-major identity `C^T = B^T A^T`:
    /// `sgemm(N, N, n, m, k, 1, B, n, A, k, 0, C, n)`. Returns the
    /// milliseconds of each timed call (the protocol of [`Gpu::time`]) and
    /// leaves the product in `c`.
    #[allow(clippy::too_many_arguments)]
    pub fn cublas_sgemm(
        &self,
        m: usize,
        n: usize,
        k: usize,
        a: &DeviceBuffer,
        b: &DeviceBuffer,
        c: &DeviceBuffer,
        warmup: usize,
        reps: usize,
    ) -> Result<Vec<f64>, String> {
        self.cublas_gemm(m, n, k, tirc_ir::DType::F32, false, false, a, b, c, warmup, reps)
    }

    /// [`Gpu::cublas_sgemm`] for float32 `input`s, or with float16 or
    /// bfloat16 A and B (`cublasGemmEx`, float32 C and accumulation, tensor
    /// cores allowed as cuBLAS chooses); `b_trans`: B is stored `n x k` and the product is
    /// `A @ B^T` (`gemm(T, N, n, m, k, 1, B, k, A, k, 0, C, n)`).
    #[allow(clippy::too_many_arguments)]
    pub fn cublas_gemm(
        &self,
        m: usize,
        n: usize,
        k: usize,
        input: tirc_ir::DType,
        tf32: bool,
        b_trans: bool,
        a: &DeviceBuffer,
        b: &DeviceBuffer,
        c: &DeviceBuffer,
        warmup: usize,
        reps: usize,
    ) -> Result<Vec<f64>, String> {
        use blas_sys::cudaDataType::{CUDA_R_16BF, CUDA_R_16F, CUDA_R_32F};
        // float32 through cublasGemmEx with TF32 math when `tf32`, else SGEMM.
        let (in_bytes, in_type) = match input {
            tirc_ir::DType::F32 if tf32 => (4, Some(CUDA_R_32F)),
            tirc_ir::DType::F32 => (4, None),
            tirc_ir::DType::F16 => (2, Some(CUDA_R_16F)),
            tirc_ir::DType::BFloat16 => (2, Some(CUDA_R_16BF)),
            t => return Err(format!("cuBLAS GEMM: no {t} inputs (float32, float16 or bfloat16)")),
        };
        let to_int = |v: usize, what: &str| {
            i32::try_from(v).map_err(|_| format!("cuBLAS SGEMM: {what} = {v} does not fit a 32-bit int"))
        };
        let (mi, ni, ki) = (to_int(m, "m")?, to_int(n, "n")?, to_int(k, "k")?);
        let (b_rows, b_cols) = if b_trans { (n, k) } else { (k, n) };
        for (buf, rows, cols, what, bytes) in
            [(a, m, k, "A", in_bytes), (b, b_rows, b_cols, "B", in_bytes), (c, m, n, "C", 4)]
        {
            let need = rows.checked_mul(cols).and_then(|e| e.checked_mul(bytes));
            if need.is_none_or(|need| buf.bytes < need) {
                return Err(format!(
                    "cuBLAS GEMM: {what} must hold {rows}x{cols} elements of {bytes} bytes, its buffer has {} bytes",
                    buf.bytes
                ));
            }
        }
        if !cublas_present() {
            return Err(CUBLAS_MISSING.to_string());
        }
        guarded("cuBLAS SGEMM", || {
            let mut blas = self.blas.lock().map_err(|_| "the cuBLAS handle's lock is poisoned".to_string())?;
            if blas.is_none() {
                *blas = Some(self.new_blas()?);
            }
            let Some(blas) = blas.as_ref() else {
                return Err("no cuBLAS handle".to_string());
            };
            let handle = blas.handle;
            let (pa, _ra) = a.slice.device_ptr(&self.stream);
            let (pb, _rb) = b.slice.device_ptr(&self.stream);
            let (pc, _rc) = c.slice.device_ptr(&self.stream);
            let (alpha, beta) = (1.0f32, 0.0f32);
            let op = blas_sys::cublasOperation_t::CUBLAS_OP_N;
            let (op_b, ld_b) = if b_trans { (blas_sys::cublasOperation_t::CUBLAS_OP_T, ki) } else { (op, ni) };
            let mut call = || {
                self.ctx.bind_to_thread().map_err(drv("binding the CUDA context"))?;
                if let Some(in_type) = in_type {
                    return unsafe {
                        blas_result::gemm_ex(
                            handle,
                            op_b,
                            op,
                            ni,
                            mi,
                            ki,
                            &alpha as *const f32 as *const _,
                            pb as *const _,
                            in_type,
                            ld_b.max(1),
                            pa as *const _,
                            in_type,
                            ki.max(1),
                            &beta as *const f32 as *const _,
                            pc as *mut _,
                            CUDA_R_32F,
                            ni.max(1),
                            if tf32 {
                                blas_sys::cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32
                            } else {
                                blas_sys::cublasComputeType_t::CUBLAS_COMPUTE_32F
                            },
                            blas_sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
                        )
                    }
                    .map_err(|e| {
                        let math = if tf32 { " (TF32 math)" } else { "" };
                        format!("cublasGemmEx ({m}x{n}x{k}, {input} in, float32 out{math}) failed: {e}")
                    });
                }
                unsafe {
                    blas_result::sgemm(
                        handle,
                        op_b,
                        op,
                        ni,
                        mi,
                        ki,
                        &alpha,
                        pb as *const f32,
                        ld_b.max(1),
                        pa as *const f32,
                        ki.max(1),
                        &beta,
                        pc as *mut f32,
                        ni.max(1),
                    )
                }
                .map_err(|e| format!("cublasSgemm ({m}x{n}x{k}) failed: {e}"))
            };
            self.time_calls("cuBLAS SGEMM", warmup, reps, &mut call)
        })
    }

    /// A cuBLAS handle on this GPU's stream, in the default math mode.
    fn new_blas(&self) -> Result<Blas, String> {
        self.ctx.bind_to_thread().map_err(drv("binding the CUDA context"))?;
        let handle = blas_result::create_handle().map_err(|e| format!("creating a cuBLAS handle failed: {e}"))?;
        let blas = Blas { handle, ctx: self.ctx.clone() };
        unsafe { blas_result::set_stream(handle, self.stream.cu_stream() as _) }
            .map_err(|e| format!("setting the cuBLAS stream failed: {e}"))?;
        unsafe { blas_sys::cublasSetMathMode(handle, blas_sys::cublasMath_t::CUBLAS_DEFAULT_MATH) }
            .result()
            .map_err(|e| format!("setting the cuBLAS math mode failed: {e}"))?;
        Ok(blas)
    }
}
