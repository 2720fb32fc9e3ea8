//! `tirc._tirc`: the native half of the Python package. It compiles a
//! schedule (the pipeline of `tirc::compile`), runs the kernels on host
//! bytes through the simulator or on device pointers through the driver,
//! writes `tirc build`'s files, and runs `tirc run --json` and `tirc tune
//! --json` in-process. The checks a Python user sees as `TypeError` and
//! `ValueError` (dtype, shape, device, contiguity, argument count) are made
//! in `python/tirc/__init__.py`, which knows the arrays; this side checks
//! sizes again before any memory is touched.

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::cell::RefCell;
use tirc::compile::{compile, Compiled, Request};
use tirc_exec::data::HostData;
use tirc_exec::{gpu, sim};

create_exception!(_tirc, TircError, PyException, "A .tir file or schedule that tirc refuses, or a failed run.");

fn err(e: impl std::fmt::Display) -> PyErr {
    TircError::new_err(e.to_string())
}

/// A `TircError` holding diagnostics rendered against the source.
fn diagnostics(ds: &[tirc_ir::Diagnostic], filename: &str, source: &str) -> PyErr {
    err(ds.iter().map(|d| d.render(filename, source)).collect::<String>())
}

/// A parameter as Python sees it: (name, dtype, shape, access).
type Argument = (String, String, Vec<i64>, String);

/// A compiled schedule: its kernels, and, once called on GPU tensors, the
/// kernels loaded on that GPU.
#[pyclass(unsendable, module = "tirc._tirc")]
struct Kernel {
    /// Generic in the function's run-time sizes, if it has any.
    compiled: Compiled,
    request: Request,
    loaded: RefCell<Option<OnGpu>>,
    /// The compilation bound to the sizes of the last call's arrays
    /// (`Kernel::bind`), with those sizes; the source is `compiled`'s.
    bound: RefCell<Option<(Vec<i64>, Compiled)>>,
}

/// The kernels loaded on one GPU, with the device memory of the function's
/// intermediates (allocated once, reused by every call).
struct OnGpu {
    device: usize,
    gpu: gpu::Gpu,
    kernels: Vec<gpu::LoadedKernel>,
    intermediates: Vec<gpu::DeviceBuffer>,
    /// The element counts `intermediates` were allocated for.
    sized: Vec<i64>,
}

/// Compiles `source` (named `filename` in diagnostics) under a schedule.
#[pyfunction]
#[pyo3(signature = (source, filename, schedule=None, func=None, defines=vec![], params=vec![]))]
fn build_kernel(
    source: &str,
    filename: &str,
    schedule: Option<String>,
    func: Option<String>,
    defines: Vec<(String, i64)>,
    params: Vec<(String, String)>,
) -> PyResult<Kernel> {
    let request = Request { schedule, func, defines, params, specialize: false, ..Request::default() };
    // A function of run-time sizes (`m = T.int32()`) is compiled once; each
    // call binds the sizes its arrays have (`Kernel::bind`).
    let compiled = compile(source, &request).map_err(|ds| diagnostics(&ds, filename, source))?;
    Ok(Kernel { compiled, request, loaded: RefCell::new(None), bound: RefCell::new(None) })
}

/// The functions of a file and its schedules as (name, function, [(parameter, default)]).
#[pyfunction]
#[pyo3(signature = (source, filename, defines=vec![]))]
#[allow(clippy::type_complexity)]
fn describe(
    source: &str,
    filename: &str,
    defines: Vec<(String, i64)>,
) -> PyResult<(Vec<String>, Vec<(String, String, Vec<(String, String)>)>, Vec<(String, i64)>)> {
    let m = tirc::compile::load(source, &defines).map_err(|ds| diagnostics(&ds, filename, source))?;
    let funcs = m.funcs.iter().map(|f| f.name.clone()).collect();
    let schedules = m
        .schedules
        .iter()
        .map(|s| {
            let ps = s.params.iter().map(|p| (p.name.clone(), p.default.to_string())).collect();
            (s.name.clone(), s.func.clone(), ps)
        })
        .collect();
    let constants = m.constants.iter().map(|c| (c.name.clone(), c.value)).collect();
    Ok((funcs, schedules, constants))
}

#[pymethods]
impl Kernel {
    /// The CUDA source of every kernel, each headed by its launch.
    #[getter]
    fn cuda_source(&self) -> String {
        self.compiled.cuda_text()
    }

    /// The lowered TensorIR of every kernel.
    #[getter]
    fn lowered(&self) -> String {
        self.compiled.lowered_text()
    }

    /// The TensorIR after the schedule, before lowering.
    #[getter]
    fn scheduled(&self) -> String {
        tirc_ir::printer::print_func(&self.compiled.scheduled)
    }

    /// The schedule's steps as applied.
    #[getter]
    fn trace(&self) -> Vec<String> {
        self.compiled.trace.iter().map(ToString::to_string).collect()
    }

    /// The schedule as applied, as a `@tirc.schedule` function that replays
    /// it (what `tirc lower --emit trace` prints); empty without a schedule.
    #[getter]
    fn replay(&self) -> String {
        match &self.request.schedule {
            Some(s) => self.compiled.replay_text(s),
            None => String::new(),
        }
    }

    /// The function's name.
    #[getter]
    fn name(&self) -> String {
        self.compiled.original.name.clone()
    }

    /// Each kernel as (name, grid, block, dynamic shared bytes), in launch order.
    #[getter]
    fn launch(&self) -> Vec<(String, [i64; 3], [i64; 3], usize)> {
        self.compiled
            .kernels
            .iter()
            .map(|k| (k.cuda.name.clone(), k.cuda.launch.grid, k.cuda.launch.block, k.cuda.dynamic_shared_bytes))
            .collect()
    }

    /// Each parameter as (name, dtype, shape, access: read/write/readwrite/unused);
    /// an extent of run-time sizes is -1 (each call takes it from the arrays).
    #[getter]
    fn arguments(&self) -> PyResult<Vec<Argument>> {
        let f = &self.compiled.original;
        Ok(f.params
            .iter()
            .zip(tirc::verify::access(f))
            .map(|(b, a)| {
                let shape = b.shape().iter().map(|e| e.as_int().unwrap_or(-1)).collect();
                (b.name().to_string(), b.dtype().to_string(), shape, a.name().to_string())
            })
            .collect())
    }

    /// The function's run-time sizes, by name, in the order kernels take them.
    #[getter]
    fn sizes(&self) -> Vec<String> {
        self.compiled.sizes().iter().map(|v| v.name().to_string()).collect()
    }

    /// The function's scalar parameters (`alpha: T.float32`) as (name,
    /// dtype), in the order the kernels take them.
    #[getter]
    fn scalars(&self) -> Vec<(String, String)> {
        self.compiled.original.scalars.iter().map(|v| (v.name().to_string(), v.dtype().to_string())).collect()
    }

    /// Readies the kernels for arrays of these shapes (one per parameter):
    /// each run-time size is read off the first extent that is the size
    /// alone, then every shape must be what the sizes make. Returns the
    /// shapes the parameters have; a mismatch is a ValueError naming it.
    fn bind(&self, shapes: Vec<Vec<i64>>) -> PyResult<Vec<Vec<i64>>> {
        self.check_count(shapes.len())?;
        let f = &self.compiled.original;
        let mut values: Vec<(String, i64)> = Vec::new();
        for (b, shape) in f.params.iter().zip(&shapes) {
            if shape.len() != b.ndim() {
                return Err(PyValueError::new_err(format!(
                    "{}: expected {} dimensions, got {}",
                    b.name(),
                    b.ndim(),
                    shape.len()
                )));
            }
            for (e, n) in b.shape().iter().zip(shape) {
                if let tirc_ir::Expr::Var(v) = e {
                    if f.sizes.contains(v) && !values.iter().any(|(x, _)| x == v.name()) {
                        values.push((v.name().to_string(), *n));
                    }
                }
            }
        }
        // A size no extent gives alone (`n` used only in loops, `(2 * n,)`)
        // takes the value the kernel was built with (`defines`).
        for v in &f.sizes {
            if !values.iter().any(|(x, _)| x == v.name()) {
                if let Some((_, x)) = self.request.defines.iter().rev().find(|(d, _)| d == v.name()) {
                    values.push((v.name().to_string(), *x));
                }
            }
        }
        let key: Vec<i64> =
            f.sizes.iter().map(|v| values.iter().find(|(n, _)| n == v.name()).map_or(0, |(_, x)| *x)).collect();
        let fresh = self.bound.borrow().as_ref().is_none_or(|(k, _)| *k != key);
        if fresh {
            let b = self.compiled.clone().bind_sizes(&values).map_err(|d| {
                let hint = if values.len() < f.sizes.len() {
                    " (an array extent that is the size alone gives it, else defines= at tirc.load)"
                } else {
                    ""
                };
                PyValueError::new_err(format!("{}{hint}", d.message))
            })?;
            *self.bound.borrow_mut() = Some((key, b));
        }
        let bound = self.bound.borrow();
        let Some((_, b)) = bound.as_ref() else { return Err(err("no binding")) };
        let mut out = Vec::new();
        for ((p, want), shape) in f.params.iter().zip(&b.original.params).zip(&shapes) {
            let want = want.const_shape().ok_or_else(|| err(format!("buffer {} has no shape", p.name())))?;
            if want != *shape {
                return Err(PyValueError::new_err(format!("{}: expected shape {want:?}, got {shape:?}", p.name())));
            }
            out.push(want);
        }
        Ok(out)
    }

    /// Runs the kernels on the simulator over the parameters' contents,
    /// given as little-endian bytes in parameter order, with the scalar
    /// parameters' values in order; returns every parameter's bytes after
    /// the run.
    #[pyo3(signature = (data, scalars=vec![]))]
    fn run_host<'py>(
        &self,
        py: Python<'py>,
        data: Vec<Bound<'py, PyBytes>>,
        scalars: Vec<f64>,
    ) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let bound = self.bound.borrow();
        let compiled = self.ready(bound.as_ref())?;
        let f = &compiled.original;
        self.check_count(data.len())?;
        let values = self.scalar_values(&scalars)?;
        let mut args = Vec::new();
        for (b, bytes) in f.params.iter().zip(&data) {
            let n = b.num_elements().unwrap_or(0) as usize;
            let bytes = bytes.as_bytes();
            if bytes.len() != n * b.dtype().bytes() {
                return Err(PyValueError::new_err(format!(
                    "{}: {} bytes given, the buffer holds {n} elements of {}",
                    b.name(),
                    bytes.len(),
                    b.dtype()
                )));
            }
            let mut d = HostData::zeros(b.dtype(), n).map_err(err)?;
            d.set_bytes(bytes);
            args.push(d);
        }
        for b in &compiled.intermediates {
            let n = b.num_elements().ok_or_else(|| err(format!("buffer {} has no constant size", b.name())))?;
            args.push(HostData::poisoned(b.dtype(), n as usize).map_err(err)?);
        }
        for k in &compiled.kernels {
            sim::run(&k.lowered.bind_scalars(&values), &mut args, sim::SimOptions::default())
                .map_err(|e| err(format!("simulating kernel {}: {e}", k.cuda.name)))?;
        }
        Ok(args.iter().take(f.params.len()).map(|d| PyBytes::new(py, &d.as_bytes())).collect())
    }

    /// Enqueues the kernels on GPU `device`'s raw stream `stream` with the
    /// parameters' device pointers, in parameter order (the function's
    /// intermediates are allocated once, when the kernels are loaded).
    #[pyo3(signature = (ptrs, device, stream, scalars=vec![]))]
    fn run_device(&self, ptrs: Vec<u64>, device: usize, stream: u64, scalars: Vec<f64>) -> PyResult<()> {
        self.check_count(ptrs.len())?;
        let values: Vec<f64> = self.scalar_values(&scalars)?.into_iter().map(|(_, x)| x).collect();
        let bound = self.bound.borrow();
        let compiled = self.ready(bound.as_ref())?;
        // A kernel's own scratch is allocated when it is loaded, once: one
        // whose size depends on the run-time sizes cannot follow them.
        if let Some(k) =
            self.compiled.kernels.iter().find(|k| !k.cuda.sizes.is_empty() && k.cuda.scratch.iter().any(|s| s.2 == 0))
        {
            return Err(err(format!(
                "kernel {} has a scratch buffer whose size depends on the run-time sizes; the Python package cannot run it on the GPU yet (tirc run can)",
                k.cuda.name
            )));
        }
        let mut loaded = self.loaded.borrow_mut();
        if loaded.as_ref().is_none_or(|l| l.device != device) {
            // The kernels are compiled and loaded once, generic in the sizes.
            let g = gpu::Gpu::open_on(device).map_err(err)?;
            let kernels =
                self.compiled.kernels.iter().map(|k| g.load(&k.cuda)).collect::<Result<Vec<_>, _>>().map_err(err)?;
            *loaded = Some(OnGpu { device, gpu: g, kernels, intermediates: Vec::new(), sized: Vec::new() });
        }
        let Some(l) = loaded.as_mut() else { return Err(err("no kernels loaded")) };
        // Each call's sizes: the grid and the size arguments, and the
        // intermediates (reallocated when their sizes change).
        for (lk, k) in l.kernels.iter_mut().zip(&compiled.kernels) {
            lk.set_sizes(k.cuda.launch.grid, &k.cuda.size_values).map_err(err)?;
            lk.set_scalars(&values).map_err(err)?;
        }
        let counts: Vec<i64> = compiled.intermediates.iter().map(|b| b.num_elements().unwrap_or(0)).collect();
        if l.sized != counts || l.intermediates.len() != counts.len() {
            // Earlier calls on the caller's stream may still use the old
            // buffers: wait for them before they are freed.
            if !l.intermediates.is_empty() {
                l.gpu.synchronize_device().map_err(err)?;
            }
            let mut intermediates = Vec::new();
            for (b, n) in compiled.intermediates.iter().zip(&counts) {
                intermediates
                    .push(l.gpu.upload(&HostData::poisoned(b.dtype(), *n as usize).map_err(err)?).map_err(err)?);
            }
            l.intermediates = intermediates;
            l.sized = counts;
        }
        let l = &*l;
        let mut all = ptrs;
        all.extend(l.intermediates.iter().map(|b| l.gpu.device_ptr(b)));
        for k in &l.kernels {
            // Safety: the Python side checked each tensor's device, dtype,
            // shape and contiguity against its parameter; the intermediates
            // are this GPU's allocations, kept alive with the kernels.
            unsafe { l.gpu.launch_raw(k, &all, stream) }.map_err(err)?;
        }
        Ok(())
    }

    /// Writes `tirc build`'s files into `out_dir`; returns their paths.
    #[pyo3(signature = (out_dir, name=None, arch="sm_90".to_string(), source_file="<python>".to_string()))]
    fn build(&self, out_dir: &str, name: Option<String>, arch: String, source_file: String) -> PyResult<Vec<String>> {
        let name = name.unwrap_or_else(|| self.compiled.original.name.clone());
        let b = tirc::export::build(
            &self.compiled,
            &self.request,
            &tirc::export::Options { name: &name, arch: &arch, source_file: &source_file },
        )
        .map_err(err)?;
        std::fs::create_dir_all(out_dir).map_err(|e| err(format!("cannot make {out_dir}: {e}")))?;
        let mut paths = Vec::new();
        for (file, bytes) in &b.files {
            let p = std::path::Path::new(out_dir).join(file);
            std::fs::write(&p, bytes).map_err(|e| err(format!("cannot write {}: {e}", p.display())))?;
            paths.push(p.display().to_string());
        }
        Ok(paths)
    }
}

impl Kernel {
    /// The compilation to run: the one bound to the last call's sizes, for
    /// a function of run-time sizes.
    fn ready<'a>(&'a self, bound: Option<&'a (Vec<i64>, Compiled)>) -> PyResult<&'a Compiled> {
        if self.compiled.sizes().is_empty() {
            return Ok(&self.compiled);
        }
        bound.map(|(_, c)| c).ok_or_else(|| err("the kernel's run-time sizes are not bound: call bind(shapes) first"))
    }

    /// The scalar parameters paired with a call's values, one each, in
    /// order (the Python side matched them to the names), each rounded to
    /// its type.
    fn scalar_values(&self, given: &[f64]) -> PyResult<Vec<(tirc_ir::Var, f64)>> {
        let f = &self.compiled.original;
        if given.len() != f.scalars.len() {
            return Err(PyValueError::new_err(format!(
                "{} takes {} scalar values, {} given",
                f.name,
                f.scalars.len(),
                given.len()
            )));
        }
        Ok(f.scalars.iter().zip(given).map(|(v, x)| (v.clone(), tirc::compile::round_to(v.dtype(), *x))).collect())
    }

    /// A call gives one array per parameter of the function.
    fn check_count(&self, given: usize) -> PyResult<()> {
        let f = &self.compiled.original;
        if given != f.params.len() {
            return Err(PyValueError::new_err(format!("{} takes {} arrays, {given} given", f.name, f.params.len())));
        }
        Ok(())
    }
}

/// `tirc run ARGV... --json` in this process: (exit status, JSON text).
#[pyfunction]
fn run_json(argv: Vec<String>) -> (u8, String) {
    let args: Vec<&str> = argv.iter().map(String::as_str).collect();
    tirc::cli::run::json(&args)
}

/// `tirc tune ARGV...` in this process: (exit status, stdout, stderr).
#[pyfunction]
fn tune_cli(argv: Vec<String>) -> (u8, String, String) {
    let args: Vec<&str> = argv.iter().map(String::as_str).collect();
    let (mut out, mut errs) = (Vec::new(), Vec::new());
    let code = tirc::tune::cli::run_argv(&args, &mut out, &mut errs);
    (code, String::from_utf8_lossy(&out).into_owned(), String::from_utf8_lossy(&errs).into_owned())
}

/// The candidates of a schedule's tuning space (its `space={...}`, narrowed
/// by `space` and `params` as `--space` and `-p` do), each as `-p` pairs.
#[pyfunction]
#[pyo3(signature = (source, filename, schedule, defines=vec![], params=vec![], space=vec![]))]
fn tune_space(
    source: &str,
    filename: &str,
    schedule: &str,
    defines: Vec<(String, i64)>,
    params: Vec<(String, String)>,
    space: Vec<String>,
) -> PyResult<Vec<Vec<(String, String)>>> {
    let m = tirc::compile::load(source, &defines).map_err(|ds| diagnostics(&ds, filename, source))?;
    let def = m.schedule(schedule).ok_or_else(|| err(format!("the file has no schedule `{schedule}`")))?;
    let parsed = tirc::tune::space::parse_space_args(&space).map_err(err)?;
    let s = tirc::tune::space::Space::resolve(def, &parsed, &params).map_err(err)?;
    Ok(s.candidates().iter().map(|c| s.overrides(c)).collect())
}

/// Whether a CUDA driver and device are present (else the reason).
#[pyfunction]
fn gpu_available() -> (bool, String) {
    match gpu::available() {
        Ok(()) => (true, String::new()),
        Err(e) => (false, e),
    }
}

#[pymodule]
fn _tirc(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("TircError", m.py().get_type::<TircError>())?;
    m.add_class::<Kernel>()?;
    m.add_function(wrap_pyfunction!(build_kernel, m)?)?;
    m.add_function(wrap_pyfunction!(describe, m)?)?;
    m.add_function(wrap_pyfunction!(run_json, m)?)?;
    m.add_function(wrap_pyfunction!(tune_cli, m)?)?;
    m.add_function(wrap_pyfunction!(tune_space, m)?)?;
    m.add_function(wrap_pyfunction!(gpu_available, m)?)?;
    Ok(())
}
