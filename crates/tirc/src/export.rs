//! What `tirc build` writes for the user's own program: the kernels as one
//! CUDA source with a host launch function, a C header declaring it, the
//! PTX and cubin NVRTC makes of the source, and `kernel.json`, which says
//! everything a launcher needs (kernels in launch order, grid, block,
//! dynamic shared memory, each argument's name, dtype, shape and strides).
//! A function of run-time sizes (`m = T.int32()`) takes them as `int`
//! arguments after its buffers; shapes, strides and grids that depend on
//! them are C expressions of them in `kernel.json`, and the launcher
//! computes the grid.
//!
//! The source compiles two ways. nvcc compiles it whole: the kernels and
//! `<name>_launch(args..., stream)`, which allocates the function's global
//! intermediates on the stream (`cudaMallocAsync`), raises the dynamic
//! shared-memory limit where a kernel needs more than 48 KB, launches each
//! kernel in order and frees the intermediates. NVRTC compiles the kernels
//! only: the launcher is under `#ifndef __CUDACC_RTC__`. The PTX and cubin
//! are for the driver API (`cuModuleLoadData`, then `cuLaunchKernel` as
//! `kernel.json` says).

use crate::compile::{Compiled, Request};
use crate::verify::access;
use serde_json::{json, Value};
use tirc_codegen::{ctype, sanitize, translation_unit, CudaKernel};
use tirc_ir::printer::print_expr;
use tirc_ir::{BinOp, Buffer, DType, Expr};

/// The files of a build, by file name, and notes for the user (what could
/// not be made, and why).
pub struct Build {
    pub files: Vec<(String, Vec<u8>)>,
    pub notes: Vec<String>,
    /// What is legal but likely unintended (ptxas spilling registers).
    pub warnings: Vec<String>,
    /// NVRTC refused the CUDA tirc wrote (a tirc bug: the files are still
    /// written, to look at, and the command fails).
    pub refused: Option<String>,
}

/// What `build` needs besides the compiled function.
pub struct Options<'a> {
    /// Base name of the files and of the launch function (`<name>_launch`).
    pub name: &'a str,
    /// GPU architecture of the PTX and cubin, e.g. "sm_90".
    pub arch: &'a str,
    /// The source file, for the record.
    pub source_file: &'a str,
}

/// One argument of the launch function: a parameter of the function, then
/// the global intermediates between its kernels (allocated by the launcher).
struct Arg {
    c_name: String,
    buffer: Buffer,
    access: &'static str,
}

/// A buffer's shape, each extent a number or (for a function of run-time
/// sizes) a C expression of them.
fn shape_of(b: &Buffer, names: &Names) -> Result<Vec<Value>, String> {
    b.shape()
        .iter()
        .map(|e| match e.as_int() {
            Some(n) => Ok(json!(n)),
            None => c_size_expr(e, names).map(Value::String),
        })
        .collect()
}

/// The number of elements of a buffer, as C (a number, or an expression of
/// the run-time sizes).
fn elements_c(b: &Buffer, names: &Names) -> Result<String, String> {
    if let Some(n) = b.num_elements() {
        return Ok(format!("{}ull", n.max(1)));
    }
    // Each size taken as 64 bits before the arithmetic: `n * n` of an int
    // `n` would overflow (and wrap past the launcher's check) in int.
    let dims: Vec<String> = b
        .shape()
        .iter()
        .map(|e| c_size_expr(&widened(e), names).map(|x| format!("(size_t)({x})")))
        .collect::<Result<_, _>>()?;
    Ok(dims.join(" * "))
}

/// `e` with each variable cast to int64, so that C computes it in 64 bits.
fn widened(e: &Expr) -> Expr {
    match e {
        Expr::Var(_) => Expr::Cast(tirc_ir::DType::I64, Box::new(e.clone())),
        _ => e.map_children(widened),
    }
}

/// Each run-time size and its name in C (the kernels' argument name).
type Names = [(tirc_ir::Var, String)];

/// An expression of run-time sizes and literals as C, for the launcher
/// (the sizes are positive, so floor division is C's division).
fn c_size_expr(e: &Expr, names: &Names) -> Result<String, String> {
    Ok(match e {
        Expr::Int(v, _) => v.to_string(),
        Expr::Var(v) => names.iter().find(|(x, _)| x == v).map_or_else(|| sanitize(v.name()), |(_, n)| n.clone()),
        Expr::Cast(t, a) if *t == tirc_ir::DType::I64 => format!("((long long){})", c_size_expr(a, names)?),
        Expr::Binary(op, a, b) => {
            let (a, b) = (c_size_expr(a, names)?, c_size_expr(b, names)?);
            match op {
                BinOp::Add => format!("({a} + {b})"),
                BinOp::Sub => format!("({a} - {b})"),
                BinOp::Mul => format!("({a} * {b})"),
                BinOp::FloorDiv | BinOp::Div => format!("({a} / {b})"),
                BinOp::FloorMod => format!("({a} % {b})"),
                BinOp::Min => format!("(({a}) < ({b}) ? ({a}) : ({b}))"),
                BinOp::Max => format!("(({a}) > ({b}) ? ({a}) : ({b}))"),
                _ => return Err(format!("the size expression `{}` has no C form here", print_expr(e))),
            }
        }
        _ => return Err(format!("the size expression `{}` has no C form here", print_expr(e))),
    })
}

/// Strides of a row-major array of `shape`, as numbers or C expressions.
fn strides_of(shape: &[Value]) -> Vec<Value> {
    let mut strides = vec![json!(1); shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = match (&strides[d + 1], &shape[d + 1]) {
            (Value::Number(a), Value::Number(b)) => json!(a.as_i64().unwrap_or(0) * b.as_i64().unwrap_or(0)),
            (a, b) => {
                let text = |v: &Value| match v {
                    Value::String(s) => s.clone(),
                    v => v.to_string(),
                };
                Value::String(format!("({} * {})", text(a), text(b)))
            }
        };
    }
    strides
}

fn c_type(t: DType) -> Result<&'static str, String> {
    ctype(t).map_err(|d| d.message)
}

pub fn build(c: &Compiled, req: &Request, o: &Options) -> Result<Build, String> {
    let name = sanitize(o.name);
    let f = &c.original;
    let first = &c.first().cuda;
    let n = f.params.len();
    let args: Vec<Arg> = f
        .params
        .iter()
        .zip(access(f))
        .enumerate()
        .map(|(i, (b, a))| Arg { c_name: first.params[i].0.clone(), buffer: b.clone(), access: a.name() })
        .collect();
    let intermediates: Vec<Arg> = c
        .intermediates
        .iter()
        .enumerate()
        .map(|(i, b)| Arg { c_name: first.params[n + i].0.clone(), buffer: b.clone(), access: "readwrite" })
        .collect();
    let kernels: Vec<&CudaKernel> = c.kernels.iter().map(|k| &k.cuda).collect();
    let device = translation_unit(&kernels);
    // The sizes by the kernels' names for them (codegen renames a size
    // named like a C keyword), in the order the kernels take them.
    let names: Vec<(tirc_ir::Var, String)> =
        f.sizes.iter().cloned().zip(first.sizes.iter().map(|(n, _)| n.clone())).collect();
    let sizes: Vec<(String, DType)> = first.sizes.clone();
    let signature = launch_signature(&name, &args, &sizes, &first.scalars)?;
    let header = header(&name, c, req, o, &args, &signature, &names)?;
    let source = format!(
        "// {name}.cu: {}\n// nvcc compiles the kernels and the launcher; NVRTC the kernels only.\n{device}\n{}",
        provenance(c, req, o),
        launcher(&name, &kernels, &args, &intermediates, &LaunchSizes::of(f, &sizes, &names), &signature)?
    );
    let mut files =
        vec![(format!("{name}.cu"), source.clone().into_bytes()), (format!("{name}.h"), header.into_bytes())];
    let mut notes = Vec::new();
    let mut warnings = Vec::new();
    let (mut ptx_file, mut cubin_file) = (Value::Null, Value::Null);
    let mut refused = None;
    // What the PTX and cubin are for, and what nvcc must be told (sm_90a
    // where the kernels use wgmma or setmaxnreg).
    let arch = tirc_exec::gpu::compile_arch(&source, o.arch);
    match tirc_exec::gpu::nvrtc_build(&source, o.arch) {
        Ok(out) => {
            // The source holds every kernel; ptxas's report is the worst.
            let threads = c.kernels.iter().map(|k| k.cuda.launch.threads_per_block()).max().unwrap_or(1);
            let min_blocks = c.kernels.iter().filter_map(|k| k.cuda.min_blocks_per_sm).max();
            if let Some(w) = out.ptxas.and_then(|r| r.spill_warning(&name, threads, min_blocks)) {
                warnings.push(w);
            }
            files.push((format!("{name}.ptx"), out.ptx.into_bytes()));
            ptx_file = json!(format!("{name}.ptx"));
            match out.cubin {
                Some(bin) => {
                    files.push((format!("{name}.cubin"), bin));
                    cubin_file = json!(format!("{name}.cubin"));
                }
                None => notes.push(format!("NVRTC gave no cubin for {arch}: only the PTX is written")),
            }
        }
        // NVRTC there, but the source does not compile: tirc's fault.
        Err(e) if e.starts_with("NVRTC could not compile") || e.starts_with("NVRTC produced no PTX") => {
            refused = Some(e)
        }
        Err(e) => notes.push(format!("no PTX or cubin: {e}")),
    }
    let built = Options { name: o.name, arch: &arch, source_file: o.source_file };
    let meta = metadata(&name, c, req, &built, &args, &intermediates, &names, ptx_file, cubin_file)?;
    let text = serde_json::to_string_pretty(&meta).map_err(|e| e.to_string())? + "\n";
    files.push(("kernel.json".to_string(), text.into_bytes()));
    Ok(Build { files, notes, warnings, refused })
}

/// Where the kernels come from, on one line.
fn provenance(c: &Compiled, req: &Request, o: &Options) -> String {
    let mut s =
        format!("generated by tirc {} from {}, function {}", env!("CARGO_PKG_VERSION"), o.source_file, c.original.name);
    if let Some(sch) = &req.schedule {
        s += &format!(", schedule {sch}");
    }
    for (k, v) in &req.params {
        s += &format!(" -p {k}={v}");
    }
    for (k, v) in &req.defines {
        s += &format!(" -D {k}={v}");
    }
    s
}

/// `cudaError_t <name>_launch(const float* A, ..., int m, float alpha,
/// cudaStream_t stream)`: the buffers, the run-time sizes, then the scalar
/// parameters.
fn launch_signature(
    name: &str,
    args: &[Arg],
    sizes: &[(String, DType)],
    scalars: &[(String, DType)],
) -> Result<String, String> {
    let mut ps = Vec::new();
    for a in args {
        let konst = if a.access == "read" || a.access == "unused" { "const " } else { "" };
        ps.push(format!("{konst}{}* {}", c_type(a.buffer.dtype())?, a.c_name));
    }
    for (n, t) in sizes.iter().chain(scalars) {
        ps.push(format!("{} {n}", c_type(*t)?));
    }
    ps.push("cudaStream_t stream".to_string());
    Ok(format!("cudaError_t {name}_launch({})", ps.join(", ")))
}

fn header(
    name: &str,
    c: &Compiled,
    req: &Request,
    o: &Options,
    args: &[Arg],
    sig: &str,
    names: &Names,
) -> Result<String, String> {
    let mut h = format!("// {name}.h: {}\n#pragma once\n#include <cuda_runtime.h>\n", provenance(c, req, o));
    let types: Vec<DType> =
        args.iter().map(|a| a.buffer.dtype()).chain(c.original.scalars.iter().map(|v| v.dtype())).collect();
    if types.contains(&DType::Float(16)) {
        h += "#include <cuda_fp16.h>\n";
    }
    if types.contains(&DType::BFloat16) {
        h += "#include <cuda_bf16.h>\n";
    }
    h += "\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
    let kernel_names: Vec<&str> = c.kernels.iter().map(|k| k.cuda.name.as_str()).collect();
    h += &format!(
        "// Runs {} on `stream`: {} ({}). Every pointer is device memory holding\n// a contiguous row-major array:\n",
        c.original.name,
        if kernel_names.len() == 1 {
            "one kernel".to_string()
        } else {
            format!("{} kernels in order", kernel_names.len())
        },
        kernel_names.join(", ")
    );
    for a in args {
        let dims: Vec<String> = shape_of(&a.buffer, names)?
            .iter()
            .map(|d| match d {
                Value::String(s) => s.clone(),
                d => d.to_string(),
            })
            .collect();
        h += &format!("//   {}: {}[{}], {}\n", a.c_name, a.buffer.dtype(), dims.join(", "), a.access);
    }
    if !c.original.sizes.is_empty() {
        let sizes: Vec<String> = names.iter().map(|(_, n)| n.clone()).collect();
        h += &format!(
            "// {} known only at run time: each at least 1 (else cudaErrorInvalidValue),\n// the grid computed from them.\n",
            sizes.join(", ")
        );
    }
    if !c.original.scalars.is_empty() {
        let scalars: Vec<String> = c.first().cuda.scalars.iter().map(|(n, t)| format!("{n} ({t})")).collect();
        h += &format!("// {}: scalar values, passed as they are.\n", scalars.join(", "));
    }
    h += "// Returns the first error of an allocation or a launch; an error while a\n// kernel runs shows at the next synchronization of the stream.\n";
    h += &format!("{sig};\n\n#ifdef __cplusplus\n}}\n#endif\n");
    Ok(h)
}

/// The run-time sizes as `long long` in C, for what a launcher computes of
/// them in 64 bits: copies of each (`tirc_size_n = n`), then, in a scope
/// within, each name over its copy, so that the kernels' expressions of
/// the sizes can be written as they are.
fn sizes_as_long_long(sizes: &[(String, DType)]) -> (String, String) {
    let copies: Vec<String> = sizes.iter().map(|(n, _)| format!("const long long tirc_size_{n} = {n};")).collect();
    let wide: Vec<String> =
        sizes.iter().map(|(n, _)| format!("const long long {n} = tirc_size_{n}; (void){n};")).collect();
    (copies.join(" "), wide.join(" "))
}

/// The run-time sizes as the launcher has them: their C names and types,
/// each size's name in C, and the conditions on them that keep every
/// access of the function inside its buffer (C of the sizes as `long
/// long`, each true where an access would leave its buffer).
struct LaunchSizes<'a> {
    sizes: &'a [(String, DType)],
    names: &'a Names,
    outside: Vec<String>,
}

impl<'a> LaunchSizes<'a> {
    /// `f`'s sizes, with the conditions of its accesses whose bounds
    /// depend on them (`tirc_ir::resolve::sized_accesses`): what `tirc run`
    /// checks when it binds the sizes. An access whose bounds have no C
    /// form is left out.
    fn of(f: &tirc_ir::PrimFunc, sizes: &'a [(String, DType)], names: &'a Names) -> Self {
        let mut outside = Vec::new();
        for a in tirc_ir::resolve::sized_accesses(f) {
            let c = |e: &Expr| c_size_expr(e, names).ok();
            let (Some(least), Some(greatest), Some(extent)) = (c(&a.least), c(&a.greatest), c(&a.extent)) else {
                continue;
            };
            let low =
                if a.least.as_int().is_some_and(|x| x >= 0) { String::new() } else { format!("({least}) < 0 || ") };
            outside.push(format!("{low}({greatest}) >= ({extent}) /* {} */", a.access.replace("*/", "* /")));
        }
        // And every loop of the function at least once, as `run` checks
        // (`range(n - 1)` at n = 1).
        f.body.walk(&mut |s| {
            if let tirc_ir::Stmt::For(l) = s {
                let of_sizes = l.extent.as_int().is_none() && l.extent.is_size_expr(&f.sizes);
                if let Some(e) = c_size_expr(&l.extent, names).ok().filter(|_| of_sizes) {
                    let t = format!("({e}) < 1 /* loop {} */", l.var.name().replace("*/", "* /"));
                    if !outside.contains(&t) {
                        outside.push(t);
                    }
                }
            }
        });
        LaunchSizes { sizes, names, outside }
    }
}

fn launcher(
    name: &str,
    kernels: &[&CudaKernel],
    args: &[Arg],
    intermediates: &[Arg],
    run_time: &LaunchSizes,
    sig: &str,
) -> Result<String, String> {
    let (sizes, names) = (run_time.sizes, run_time.names);
    let mut s = format!("#ifndef __CUDACC_RTC__\n#include \"{name}.h\"\n\n");
    if kernels.iter().any(|k| !k.tensor_maps.is_empty()) {
        s += TENSOR_MAP_ENCODER;
    }
    s += &format!("extern \"C\" {sig} {{\n  cudaError_t err = cudaSuccess;\n");
    if !sizes.is_empty() {
        // Each size in [1, 2^30], and each buffer within 32-bit indices:
        // what `tirc run` checks when it binds the sizes.
        let mut bad: Vec<String> =
            sizes.iter().map(|(n, _)| format!("{n} < 1 || {n} > {}", tirc_ir::func::MAX_RUNTIME_SIZE)).collect();
        for a in args.iter().chain(intermediates).filter(|a| a.buffer.num_elements().is_none()) {
            // Every extent at least 1 (`n - 1` at n = 1 would launch an
            // empty grid), as `tirc run` checks.
            for e in a.buffer.shape().iter().filter(|e| e.as_int().is_none() && !matches!(e, Expr::Var(_))) {
                bad.push(format!("(long long)({}) < 1", c_size_expr(&widened(e), names)?));
            }
            bad.push(format!("{} > 2147483647ull", elements_c(&a.buffer, names)?));
        }
        s += &format!("  if ({}) return cudaErrorInvalidValue;\n", bad.join(" || "));
        // Each step of an extent of the sizes within int, in which the
        // kernels compute it (computed here in 64 bits, the sizes as
        // `long long`, as the grid below).
        // And every access of the function inside its buffer at these
        // sizes (`range(n)` over a buffer of 64 elements).
        let terms: Vec<String> = kernels
            .iter()
            .flat_map(|k| &k.extent_terms)
            .map(|t| format!("({t}) > 2147483647LL"))
            .chain(run_time.outside.iter().cloned())
            .collect();
        if !terms.is_empty() {
            let (copies, wide) = sizes_as_long_long(sizes);
            s += &format!(
                "  {{\n    {copies}\n    {{\n      {wide}\n      if ({}) return cudaErrorInvalidValue;\n    }}\n  }}\n",
                terms.join(" || ")
            );
        }
    }
    // Every buffer the launcher allocates: the intermediates between the
    // kernels, then each kernel's own (counts as C, of the sizes).
    let mut allocs: Vec<(String, DType, String)> = Vec::new();
    for a in intermediates {
        allocs.push((a.c_name.clone(), a.buffer.dtype(), elements_c(&a.buffer, names)?));
    }
    let mut scratch_names = Vec::new();
    for (i, k) in kernels.iter().enumerate() {
        let mut names = Vec::new();
        for (sn, t, count) in &k.scratch {
            let c_name = format!("k{i}_{sn}");
            if *count == 0 && !sizes.is_empty() {
                return Err(format!(
                    "kernel {}'s scratch buffer {sn} has a size of run-time sizes, which tirc build does not count yet",
                    k.name
                ));
            }
            allocs.push((c_name.clone(), *t, format!("{}ull", (*count).max(1))));
            names.push(c_name);
        }
        scratch_names.push(names);
    }
    for (n, t, _) in &allocs {
        s += &format!("  {}* {n} = nullptr;\n", c_type(*t)?);
    }
    for (n, t, count) in &allocs {
        s += &format!(
            "  if ((err = cudaMallocAsync((void**)&{n}, {count} * sizeof({}), stream)) != cudaSuccess) goto done;\n",
            c_type(*t)?
        );
    }
    for (k, scratch) in kernels.iter().zip(&scratch_names) {
        let (g, b) = (&k.grid_exprs, k.launch.block);
        let dynamic = k.dynamic_shared_bytes;
        if dynamic > 48 * 1024 {
            s += &format!(
                "  if ((err = cudaFuncSetAttribute({}, cudaFuncAttributeMaxDynamicSharedMemorySize, {dynamic})) != cudaSuccess) goto done;\n",
                k.name
            );
        }
        // A grid of run-time sizes is computed in 64 bits (`(m * n + 255) /
        // 256` passes int's range near 2^31 elements) from copies of the
        // sizes as `long long`, and checked against CUDA's limits.
        let dynamic_grid = g.iter().any(|e| e.parse::<i64>().is_err());
        let g: Vec<String> = if dynamic_grid {
            let (copies, wide) = sizes_as_long_long(sizes);
            s += &format!(
                "  {{\n    long long tirc_grid[3];\n    {{\n      {copies}\n      {{\n        {wide}\n        tirc_grid[0] = {}; tirc_grid[1] = {}; tirc_grid[2] = {};\n      }}\n    }}\n",
                g[0],
                g[1],
                g[2]
            );
            s += "    if (tirc_grid[0] < 1 || tirc_grid[0] > 2147483647LL || tirc_grid[1] < 1 || tirc_grid[1] > 65535 || tirc_grid[2] < 1 || tirc_grid[2] > 65535) { err = cudaErrorInvalidConfiguration; goto done; }\n";
            (0..3).map(|d| format!("(unsigned)tirc_grid[{d}]")).collect()
        } else {
            g.to_vec()
        };
        // The tensor maps of a warp-specialized kernel's bulk tensor
        // copies, encoded from the addresses of the buffers they read.
        let buffers: Vec<&Arg> = args.iter().chain(intermediates).collect();
        let mut maps = Vec::new();
        for (j, m) in k.tensor_maps.iter().enumerate() {
            let map = format!("tirc_tmap_{}_{j}", sanitize(&k.name));
            let arg = buffers.get(m.param).ok_or_else(|| format!("kernel {}: a tensor map of no argument", k.name))?;
            let dims: Vec<String> = m.shape.iter().rev().map(|n| format!("{n}ull")).collect();
            let elem = m.dtype.bytes() as i64;
            let strides: Vec<String> = (1..m.shape.len())
                .map(|d| format!("{}ull", m.shape[m.shape.len() - d..].iter().product::<i64>() * elem))
                .chain(std::iter::once("0ull".to_string()))
                .collect();
            let boxed: Vec<String> = m.boxed.iter().rev().map(|n| format!("{n}u")).collect();
            let dtype =
                tensor_map_dtype(m.dtype).ok_or_else(|| format!("no tensor map for elements of {}", m.dtype))?;
            let swizzle = match m.swizzle {
                0 => 0,
                32 => 1,
                64 => 2,
                _ => 3,
            };
            s += &format!(
                "  tirc_tensor_map {map};\n  {{\n    const unsigned long long dims[] = {{{}}}, strides[] = {{{}}};\n    const unsigned box[] = {{{}}};\n    if ((err = tirc_encode_tensor_map(&{map}, {dtype}, {}, (void*){}, dims, strides, box, {swizzle})) != cudaSuccess) goto done;\n  }}\n",
                dims.join(", "),
                strides.join(", "),
                boxed.join(", "),
                m.shape.len(),
                arg.c_name
            );
            maps.push(map);
        }
        let call: Vec<&str> = args
            .iter()
            .chain(intermediates)
            .map(|a| a.c_name.as_str())
            .chain(scratch.iter().map(String::as_str))
            .chain(k.sizes.iter().map(|(n, _)| n.as_str()))
            .chain(k.scalars.iter().map(|(n, _)| n.as_str()))
            .chain(maps.iter().map(String::as_str))
            .collect();
        s += &format!(
            "  {}<<<dim3({}, {}, {}), dim3({}, {}, {}), {dynamic}, stream>>>({});\n  if ((err = cudaGetLastError()) != cudaSuccess) goto done;\n{}",
            k.name,
            g[0],
            g[1],
            g[2],
            b[0],
            b[1],
            b[2],
            call.join(", "),
            if dynamic_grid { "  }\n" } else { "" }
        );
    }
    s += "done:\n";
    for (n, _, _) in allocs.iter().rev() {
        s += &format!("  if ({n}) cudaFreeAsync({n}, stream);\n");
    }
    s += "  return err;\n}\n#endif  // __CUDACC_RTC__\n";
    Ok(s)
}

/// `CUtensorMapDataType`'s value for elements of `t`.
fn tensor_map_dtype(t: DType) -> Option<i32> {
    Some(match t {
        DType::Int(8) | DType::UInt(8) => 0,
        DType::Int(16) | DType::UInt(16) => 1,
        DType::UInt(32) => 2,
        DType::Int(32) => 3,
        DType::Int(64) => 5,
        DType::Float(16) => 6,
        DType::Float(32) => 7,
        DType::Float(64) => 8,
        DType::BFloat16 => 9,
        _ => return None,
    })
}

/// The launcher's encoder of tensor maps: the driver's
/// `cuTensorMapEncodeTiled`, found through the runtime (no `-lcuda`), with
/// elements one apart, no interleave, L2 promotion of 256 bytes and no
/// fill of out-of-range elements but zeros.
const TENSOR_MAP_ENCODER: &str = r#"typedef int (*tirc_encode_tiled_t)(void*, int, unsigned, void*, const unsigned long long*, const unsigned long long*, const unsigned*, const unsigned*, int, int, int, int);
static cudaError_t tirc_encode_tensor_map(tirc_tensor_map* m, int dtype, unsigned rank, void* p, const unsigned long long* dims, const unsigned long long* strides, const unsigned* box, int swizzle) {
  static void* fn = nullptr;
  if (!fn) {
    cudaDriverEntryPointQueryResult found;
#if CUDART_VERSION >= 12050
    cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found);
#else
    cudaError_t e = cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &fn, cudaEnableDefault, &found);
#endif
    if (e != cudaSuccess || found != cudaDriverEntryPointSuccess || !fn) return cudaErrorNotSupported;
  }
  const unsigned ones[5] = {1, 1, 1, 1, 1};
  return ((tirc_encode_tiled_t)fn)(m, dtype, rank, p, dims, strides, box, ones, 0, swizzle, 3, 0) == 0 ? cudaSuccess : cudaErrorInvalidValue;
}

"#;

#[allow(clippy::too_many_arguments)]
fn metadata(
    name: &str,
    c: &Compiled,
    req: &Request,
    o: &Options,
    args: &[Arg],
    intermediates: &[Arg],
    names: &Names,
    ptx: Value,
    cubin: Value,
) -> Result<Value, String> {
    let buffer = |a: &Arg| -> Result<Value, String> {
        let shape = shape_of(&a.buffer, names)?;
        Ok(json!({
            "name": a.c_name,
            "dtype": a.buffer.dtype().to_string(),
            "shape": shape,
            "strides": strides_of(&shape),
            "access": a.access,
        }))
    };
    let arguments: Vec<Value> = args.iter().map(buffer).collect::<Result<_, _>>()?;
    let inter: Vec<Value> = intermediates.iter().map(buffer).collect::<Result<_, _>>()?;
    let kernels: Vec<Value> = c
        .kernels
        .iter()
        .map(|k| {
            let k = &k.cuda;
            let grid: Vec<Value> = k
                .grid_exprs
                .iter()
                .zip(k.launch.grid)
                .map(|(e, g)| match e.parse::<i64>() {
                    Ok(_) => json!(g),
                    Err(_) => json!(e),
                })
                .collect();
            json!({
                "name": k.name,
                // A number, or a C expression of the sizes.
                "grid": grid,
                "block": k.launch.block,
                "dynamic_shared_bytes": k.dynamic_shared_bytes,
                // Its arguments: the function's, the intermediates', then
                // its own scratch buffers, which the launcher allocates.
                "arguments": args.iter().chain(intermediates).map(|a| a.c_name.clone()).collect::<Vec<_>>(),
                // After the arguments and the scratch buffers, by value.
                "sizes": k.sizes.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>(),
                // Then the scalar parameters, by value.
                "scalars": k.scalars.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>(),
                "scratch": k.scratch.iter().map(|(n, t, count)| json!({"name": n, "dtype": t.to_string(), "elements": count})).collect::<Vec<_>>(),
                // Then the tensor maps of its bulk tensor copies, by value
                // (CUtensorMap, 128 bytes): each over an argument (its index),
                // shape and box outermost first, the swizzle in bytes.
                "tensor_maps": k.tensor_maps.iter().map(|m| json!({"argument": m.param, "dtype": m.dtype.to_string(), "shape": m.shape, "box": m.boxed, "swizzle": m.swizzle})).collect::<Vec<_>>(),
            })
        })
        .collect();
    // (A run-time size's -D value is not compiled in: not a define.)
    let defines: serde_json::Map<String, Value> = req
        .defines
        .iter()
        .filter(|(k, _)| !c.original.sizes.iter().any(|v| v.name() == k))
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    let params: serde_json::Map<String, Value> = req.params.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
    Ok(json!({
        "tirc_version": env!("CARGO_PKG_VERSION"),
        "source_file": o.source_file,
        "function": c.original.name,
        "schedule": req.schedule,
        "params": params,
        "defines": defines,
        "arch": o.arch,
        "cuda_source": format!("{name}.cu"),
        "header": format!("{name}.h"),
        "launch_function": format!("{name}_launch"),
        "ptx": ptx,
        "cubin": cubin,
        "arguments": arguments,
        // Scalar arguments known at run time, after the buffers (and each
        // kernel's scratch), in this order.
        "sizes": names.iter().map(|(v, n)| json!({"name": n, "dtype": v.dtype().to_string()})).collect::<Vec<_>>(),
        // Then the scalar parameters (`alpha: T.float32`), by value.
        "scalars": c.first().cuda.scalars.iter().map(|(n, t)| json!({"name": n, "dtype": t.to_string()})).collect::<Vec<_>>(),
        "intermediates": inter,
        "kernels": kernels,
    }))
}
