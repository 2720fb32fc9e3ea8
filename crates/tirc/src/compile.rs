//! The whole pipeline, as one function: text to parsed module, to scheduled
//! function, to lowered kernel, to CUDA.

use tirc_codegen::CudaKernel;
use tirc_ir::diag::{did_you_mean, Diagnostic};
use tirc_ir::launch::launch_config;
use tirc_ir::printer::print_func;
use tirc_ir::resolve::SizeMode;
use tirc_ir::{Buffer, DType, Module, PrimFunc, Var};
use tirc_passes::schedule::interp::run_schedule;
use tirc_passes::transform;
use tirc_passes::transform::split_kernels::split_kernels;

/// What the user asked to compile.
#[derive(Clone, Debug, Default)]
pub struct Request {
    pub schedule: Option<String>,
    /// The function to use when no schedule is named.
    pub func: Option<String>,
    pub defines: Vec<(String, i64)>,
    /// The `-D` values that are not integers (`-D alpha=0.5`): for the
    /// function's scalar parameters (`alpha: T.float32`) only. An integer
    /// `-D` gives a scalar parameter its value too.
    pub fractions: Vec<(String, f64)>,
    pub params: Vec<(String, String)>,
    /// Compile size variables (`m = T.int32()`) as the constants their
    /// `-D` values give, instead of as run-time kernel arguments.
    pub specialize: bool,
    /// The GPU the kernels are for (`--arch`; the H100's sm_90 by default):
    /// lowering checks threads, shared memory and instructions against it.
    pub target: tirc_ir::target::Target,
    /// Whether inputs whose rows are not aligned are copied into aligned
    /// rows first (`--aligned-copies`, `transform::align_input_rows`).
    pub aligned_copies: AlignMode,
}

pub use tirc_passes::transform::align_input_rows::Mode as AlignMode;

/// Everything compiling produced, for the commands to print or run.
#[derive(Clone)]
pub struct Compiled {
    pub module: Module,
    /// The function before any schedule: the reference.
    pub original: PrimFunc,
    /// The function as scheduled, with the aligned copies of its inputs
    /// (`aligned`) at its top: what the kernels are split from.
    pub scheduled: PrimFunc,
    /// The inputs copied into aligned rows (`align_input_rows`), each with
    /// a line that says why.
    pub aligned: Vec<String>,
    /// The function as the schedule left it, before those copies
    /// (`--print-after schedule`).
    pub as_scheduled: PrimFunc,
    /// The steps applied, in order (`registry::Step`: the primitive, its
    /// arguments, its results; each prints as a schedule line).
    pub trace: Vec<tirc_passes::schedule::registry::Step>,
    /// The schedule as applied, as a script that replays it
    /// (`Schedule::replay`); empty without a schedule.
    pub replay: Vec<String>,
    /// The kernels, in launch order: one, unless the function's loop nests
    /// are bound to GPU threads separately (`split_kernels`).
    pub kernels: Vec<Kernel>,
    /// Global buffers between the kernels, passed to each after the
    /// function's parameters; empty for one kernel.
    pub intermediates: Vec<Buffer>,
    /// Warnings about the lowered kernels: they are correct, but likely
    /// slower than meant (`verify_local_indices`).
    pub warnings: Vec<Diagnostic>,
    /// The values `bind_scalars` gave the function's scalar parameters, and
    /// whether each was drawn at random (no `-D` gave it).
    pub scalar_values: Vec<(Var, f64, bool)>,
}

/// One kernel of a compiled function.
#[derive(Clone)]
pub struct Kernel {
    /// The IR after each pass, by pass name.
    pub after: Vec<(&'static str, PrimFunc)>,
    pub lowered: PrimFunc,
    pub cuda: CudaKernel,
}

impl Compiled {
    /// The first kernel: the only one of most functions.
    pub fn first(&self) -> &Kernel {
        &self.kernels[0]
    }

    /// The index of the first kernel of the function itself: the aligned
    /// copies of its inputs (`aligned`) run before it.
    pub fn main_index(&self) -> usize {
        self.aligned.len().min(self.kernels.len() - 1)
    }

    /// The kernel `--json` and the resource report describe: the first of
    /// the function's own.
    pub fn main(&self) -> &Kernel {
        &self.kernels[self.main_index()]
    }

    /// The relative error its result may have: the function's types, and
    /// what the kernels compute in (tf32 products).
    pub fn tolerance(&self) -> f64 {
        crate::verify::function_tolerance(&self.original, self.kernels.iter().map(|k| &k.lowered))
    }

    /// Whether a kernel multiplies float32 as tf32 (`mma_tf32*`): cuBLAS is
    /// then compared with its TF32 math. Not where the function splits its
    /// operands into tf32 parts for float32's accuracy (`decompose_tf32x3`):
    /// its rival is SGEMM.
    pub fn uses_tf32(&self) -> bool {
        crate::verify::multiplies_as_tf32(&self.original, self.kernels.iter().map(|k| &k.lowered))
    }

    /// The lowered IR of every kernel, in launch order.
    pub fn lowered_text(&self) -> String {
        self.kernels.iter().map(|k| print_func(&k.lowered)).collect::<Vec<_>>().join("\n")
    }

    /// The schedule as applied, as a `@tirc.schedule` function named
    /// `<schedule>_replay` that replays it with every parameter resolved.
    pub fn replay_text(&self, schedule: &str) -> String {
        let mut out = format!(
            "# The schedule `{schedule}` as applied: each step with its parameters resolved, each\n# block and loop taken by name.\n@tirc.schedule(\"{}\")\ndef {schedule}_replay(sch):\n",
            self.original.name
        );
        if self.replay.is_empty() {
            out += "    pass\n";
        }
        for l in &self.replay {
            out += &format!("    {l}\n");
        }
        out
    }

    /// The CUDA source of every kernel, each headed by its launch (a grid
    /// of run-time sizes as the expressions its launcher computes).
    pub fn cuda_text(&self) -> String {
        let mut out = String::new();
        for k in &self.kernels {
            let (g, b) = (&k.cuda.grid_exprs, k.cuda.launch.block);
            out += &format!("// grid ({}, {}, {}), block ({}, {}, {})\n", g[0], g[1], g[2], b[0], b[1], b[2]);
            out += &k.cuda.source;
        }
        out
    }

    /// The function's run-time sizes (`m = T.int32()`, `n: T.int32`), in
    /// the order its kernels take them.
    pub fn sizes(&self) -> &[Var] {
        &self.original.sizes
    }

    /// This compilation made ready to run with the run-time sizes that
    /// `defines` gives (`-D m=1000`): the reference, the scheduled function
    /// and every kernel's IR specialized to them (what the simulator runs:
    /// the same statements the generic kernel executes for these values),
    /// the intermediates sized, and each CUDA kernel given the values and
    /// the grid they make. The CUDA source is not changed: it is compiled
    /// once, for any size. A size without a value, or with one that is not
    /// positive or does not fit its type, is an error that names it.
    pub fn bind_sizes(mut self, defines: &[(String, i64)]) -> Result<Compiled, Diagnostic> {
        if self.original.sizes.is_empty() {
            return Ok(self);
        }
        let values = size_values_checked(&self.module, &self.original, defines)?;
        let span = self.original.span;
        let at = |d: Diagnostic| match span {
            Some(s) => d.or_at(s).label("the function whose size this is"),
            None => d,
        };
        // A buffer with no elements at these sizes (an extent `n - 1` at
        // n = 1) would launch an empty grid, or none: named with the sizes.
        for b in &self.original.params {
            let sized = b.specialize(&values);
            for (e, x) in b.shape().iter().zip(sized.shape()) {
                if let Some(x) = x.as_int().filter(|x| *x < 1) {
                    let given: Vec<String> =
                        values.iter().filter(|(v, _)| e.uses(v)).map(|(v, x)| format!("{} = {x}", v.name())).collect();
                    return Err(at(Diagnostic::new(format!(
                        "with {} buffer `{}` has no elements: its extent `{}` is {x}",
                        given.join(", "),
                        b.name(),
                        tirc_ir::printer::print_expr(e)
                    ))
                    .help("give sizes that leave every buffer at least one element")));
                }
            }
        }
        // A loop of the function that runs no time at these sizes (`range(n
        // - 1)` at n = 1), as `--specialize` refuses it, named with them.
        // Lowered text (no block) is code tirc made: its peeled and
        // pipelined loops run no iteration at some sizes by design.
        let bind: Vec<(Var, tirc_ir::Expr)> =
            values.iter().map(|(v, x)| (v.clone(), tirc_ir::Expr::Int(*x, v.dtype()))).collect();
        let mut empty = None;
        let lowered_text = self.original.is_lowered_text();
        self.original.body.walk(&mut |s| {
            if lowered_text {
                return;
            }
            if let tirc_ir::Stmt::For(l) = s {
                let n = tirc_ir::expr::fold_constants(&tirc_ir::subst::substitute(&l.extent, &bind));
                if let Some(x) = n.as_int().filter(|x| *x < 1 && empty.is_none()) {
                    let given: Vec<String> = values
                        .iter()
                        .filter(|(v, _)| l.extent.uses(v))
                        .map(|(v, x)| format!("{} = {x}", v.name()))
                        .collect();
                    let msg = format!(
                        "with {} loop `{}` runs {x} times: its extent `{}` must be at least 1",
                        given.join(", "),
                        l.var.name(),
                        tirc_ir::printer::print_expr(&l.extent)
                    );
                    let d = match l.span {
                        Some(sp) => Diagnostic::at(sp, msg),
                        None => Diagnostic::new(msg),
                    };
                    empty = Some(d.help("give sizes that leave every loop of the function at least one iteration"));
                }
            }
        });
        if let Some(d) = empty {
            return Err(if d.span.is_some() { d } else { at(d) });
        }
        let specialized = self.original.specialize(&values);
        check_bound(&specialized).map_err(|m| at(Diagnostic::new(m)))?;
        // An access that these sizes take outside its buffer (`B[i]` for i
        // up to n - 1, with `B` of 8 elements), named with the sizes.
        tirc_ir::resolve::check_bound_accesses(&specialized).map_err(|mut d| {
            let given: Vec<String> = values.iter().map(|(v, x)| format!("{} = {x}", v.name())).collect();
            d.message = format!("with {}, {}", given.join(", "), d.message);
            if d.span.is_some() {
                d
            } else {
                at(d)
            }
        })?;
        self.original = specialized;
        self.scheduled = self.scheduled.specialize(&values);
        self.as_scheduled = self.as_scheduled.specialize(&values);
        self.intermediates = self.intermediates.iter().map(|b| b.specialize(&values)).collect();
        for b in &self.intermediates {
            check_buffer(b).map_err(|m| at(Diagnostic::new(m)))?;
        }
        for k in &mut self.kernels {
            k.lowered = bind_kernel(&k.lowered, &mut k.cuda, &values).map_err(|m| at(Diagnostic::new(m)))?;
            for (_, f) in &mut k.after {
                *f = f.specialize(&values);
            }
        }
        Ok(self)
    }
}

impl Compiled {
    /// This compilation with every scalar parameter (`alpha: T.float32`)
    /// given its value: the one a `-D` gives (`defines`, then `fractions`),
    /// else one drawn from `seed` uniformly in [-1, 1), as the inputs are;
    /// each rounded to its type. The reference, the scheduled function and
    /// every kernel's IR take the values as constants (what the simulator
    /// runs); each CUDA kernel is given them as arguments, its source
    /// unchanged.
    pub fn bind_scalars(mut self, defines: &[(String, i64)], fractions: &[(String, f64)], seed: u64) -> Compiled {
        if self.original.scalars.is_empty() {
            return self;
        }
        let values = scalar_values(&self.original, defines, fractions, seed);
        let bound: Vec<(Var, f64)> = values.iter().map(|(v, x, _)| (v.clone(), *x)).collect();
        self.original = self.original.bind_scalars(&bound);
        self.scheduled = self.scheduled.bind_scalars(&bound);
        self.as_scheduled = self.as_scheduled.bind_scalars(&bound);
        for k in &mut self.kernels {
            k.lowered = bind_kernel_scalars(&k.lowered, &mut k.cuda, &bound);
            for (_, f) in &mut k.after {
                *f = f.bind_scalars(&bound);
            }
        }
        self.scalar_values = values;
        self
    }
}

/// The value of each scalar parameter of `f` (`alpha: T.float32`): the one
/// a `-D` gives (`fractions`, then `defines`), else one drawn from `seed`
/// uniformly in [-1, 1), as the inputs are; each rounded to its type, and
/// whether it was drawn.
pub fn scalar_values(
    f: &PrimFunc,
    defines: &[(String, i64)],
    fractions: &[(String, f64)],
    seed: u64,
) -> Vec<(Var, f64, bool)> {
    let mut rng = tirc_exec::data::Rng::new(seed ^ 0x5ca1_a25e_ed00_0001);
    let mut values = Vec::new();
    for v in &f.scalars {
        let given = given_value(v, defines, fractions);
        let x = given.unwrap_or_else(|| rng.uniform());
        values.push((v.clone(), round_to(v.dtype(), x), given.is_none()));
    }
    values
}

/// The value the last `-D` for scalar parameter `v` gives it: a fraction,
/// else a whole number.
fn given_value(v: &Var, defines: &[(String, i64)], fractions: &[(String, f64)]) -> Option<f64> {
    fractions
        .iter()
        .rev()
        .find(|(n, _)| n == v.name())
        .map(|(_, x)| *x)
        .or_else(|| defines.iter().rev().find(|(n, _)| n == v.name()).map(|(_, x)| *x as f64))
}

/// One kernel given the values of its scalar parameters: its CUDA kernel
/// takes them as arguments; the IR returned has them as constants (what
/// the simulator runs).
pub fn bind_kernel_scalars(lowered: &PrimFunc, cuda: &mut CudaKernel, values: &[(Var, f64)]) -> PrimFunc {
    cuda.scalar_values =
        lowered.scalars.iter().map(|v| values.iter().find(|(x, _)| x == v).map_or(0.0, |(_, x)| *x)).collect();
    lowered.bind_scalars(values)
}

/// `x` as the nearest value of the floating-point type `t` (a scalar
/// parameter's value as the kernel receives it).
pub fn round_to(t: DType, x: f64) -> f64 {
    match tirc_exec::data::HostData::zeros(t, 1) {
        Ok(mut d) => {
            d.set_f64(&[x]);
            d.get(0)
        }
        Err(_) => x,
    }
}

/// `-D` values of run-time sizes given to a command that does not run the
/// kernel (`lower`, `build`): checked as `run` checks them (each given, at
/// least 1, every buffer and extent within its bounds), though the kernel
/// stays generic. Nothing to check where none is given.
pub fn check_given_sizes(c: &Compiled, defines: &[(String, i64)]) -> Result<(), Diagnostic> {
    if !c.original.sizes.iter().any(|v| defines.iter().any(|(n, _)| n == v.name())) {
        return Ok(());
    }
    c.clone().bind_sizes(defines).map(|_| ())
}

/// The largest value tirc takes for a run-time size.
pub use tirc_ir::func::MAX_RUNTIME_SIZE as MAX_SIZE;

/// The values `defines` gives `f`'s run-time sizes, each checked: given,
/// at least 1, at most [`MAX_SIZE`]; an error points at the size's
/// declaration in `module`.
pub fn size_values_checked(
    module: &Module,
    f: &PrimFunc,
    defines: &[(String, i64)],
) -> Result<Vec<(Var, i64)>, Diagnostic> {
    let mut values = Vec::new();
    for v in &f.sizes {
        let n = v.name();
        let at = |d: Diagnostic| match (module.size_span(&f.name, n), f.span) {
            (Some(s), _) => d.or_at(s).label("declared here"),
            (None, Some(s)) => d.or_at(s).label("the function whose size this is"),
            (None, None) => d,
        };
        match defines.iter().rev().find(|(d, _)| d == n) {
            None => {
                return Err(at(Diagnostic::new(format!(
                    "`{n}` is a size known only at run time, and nothing gives its value"
                ))
                .help(format!("give it with `-D {n}=<value>`: the kernel is compiled once, for any {n}"))))
            }
            Some((_, x)) if *x < 1 => {
                return Err(at(Diagnostic::new(format!("-D {n}={x}: the size `{n}` must be at least 1"))
                    .help("a size of no elements would launch an empty grid")))
            }
            Some((_, x)) if *x > MAX_SIZE => {
                return Err(at(Diagnostic::new(format!("-D {n}={x}: a run-time size is at most 2^30 ({MAX_SIZE})"))
                    .help("kernels of run-time sizes index in 32 bits; give a larger size as a module constant")))
            }
            Some((_, x)) => values.push((v.clone(), *x)),
        }
    }
    Ok(values)
}

/// A buffer of a function bound to its sizes: every extent a non-negative
/// constant, and the elements within 32-bit indexing.
fn check_buffer(b: &Buffer) -> Result<(), String> {
    let mut n: i64 = 1;
    for e in b.shape() {
        match e.as_int() {
            Some(x) if x >= 0 => n = n.saturating_mul(x),
            Some(x) => return Err(format!("with these sizes buffer `{}` has an extent of {x}", b.name())),
            None => {
                return Err(format!(
                    "with these sizes an extent of buffer `{}` ({}) is past the 32-bit indices of a kernel of run-time sizes",
                    b.name(),
                    tirc_ir::printer::print_expr(e)
                ))
            }
        }
    }
    if n > i32::MAX as i64 {
        return Err(format!(
            "with these sizes buffer `{}` has {n} elements; a kernel of run-time sizes indexes in 32 bits (at most {})",
            b.name(),
            i32::MAX
        ));
    }
    Ok(())
}

/// A function bound to its sizes: its buffers pass `check_buffer`, and
/// every loop and launch extent is a constant (one that does not fold no
/// longer fits in 32 bits: `m * m` for m = 50000).
fn check_bound(f: &PrimFunc) -> Result<(), String> {
    for b in &f.params {
        check_buffer(b)?;
    }
    let mut problem = None;
    f.body.walk(&mut |s| {
        if problem.is_some() {
            return;
        }
        let extent = match s {
            tirc_ir::Stmt::For(l) if l.extent.as_int().is_none() && !l.extent.has_var() => Some(&l.extent),
            tirc_ir::Stmt::Launch { extent, .. } if extent.as_int().is_none() => Some(extent),
            tirc_ir::Stmt::Allocate { buffer, .. } => {
                if let Err(e) = check_buffer(buffer) {
                    problem = Some(e);
                }
                None
            }
            _ => None,
        };
        if let Some(e) = extent {
            problem = Some(format!(
                "with these sizes the extent `{}` is past the 32-bit indices of a kernel of run-time sizes",
                tirc_ir::printer::print_expr(e)
            ));
        }
    });
    problem.map_or(Ok(()), Err)
}

/// Readies one generic kernel for the sizes `values`: its CUDA kernel gets
/// the values and the grid they make (its source is unchanged), and the
/// returned IR is the lowered function specialized to them (what the
/// simulator runs). A grid outside CUDA's limits is an error.
pub fn bind_kernel(lowered: &PrimFunc, cuda: &mut CudaKernel, values: &[(Var, i64)]) -> Result<PrimFunc, String> {
    if lowered.sizes.is_empty() {
        return Ok(lowered.clone());
    }
    let bound = lowered.specialize(values);
    check_bound(&bound)?;
    cuda.launch = launch_config(&bound);
    for (d, g) in cuda.launch.grid.iter().enumerate() {
        let limit = if d == 0 { i32::MAX as i64 } else { 65535 };
        if *g < 1 || *g > limit {
            let axis = ["x", "y", "z"][d];
            return Err(format!(
                "with these sizes kernel {} needs a grid of {g} blocks along {axis} ({}); CUDA allows 1 to {limit}",
                cuda.name, cuda.grid_exprs[d]
            ));
        }
    }
    // By position: the kernel takes the sizes in `PrimFunc::sizes` order
    // (its C names may differ: a size named like a C keyword is renamed).
    cuda.size_values = lowered
        .sizes
        .iter()
        .map(|v| values.iter().find(|(x, _)| x == v).map(|(_, x)| *x))
        .collect::<Option<Vec<i64>>>()
        .ok_or_else(|| format!("kernel {} has a run-time size with no value", cuda.name))?;
    cuda.scratch = scratch_sizes(&bound, &cuda.scratch);
    Ok(bound)
}

/// The element count of each global intermediate of a kernel whose sizes
/// are bound (its `Allocate`s in global memory, in order).
fn scratch_sizes(lowered: &PrimFunc, scratch: &[(String, DType, usize)]) -> Vec<(String, DType, usize)> {
    let mut counts = Vec::new();
    lowered.body.walk(&mut |s| {
        if let tirc_ir::Stmt::Allocate { buffer, .. } = s {
            if buffer.scope() == tirc_ir::Scope::Global {
                counts.push(buffer.num_elements().unwrap_or(0).max(0) as usize);
            }
        }
    });
    scratch
        .iter()
        .zip(counts.into_iter().chain(std::iter::repeat(0)))
        .map(|((n, t, _), c)| (n.clone(), *t, c))
        .collect()
}

/// Parses and resolves a source text.
pub fn load(src: &str, defines: &[(String, i64)]) -> Result<Module, Vec<Diagnostic>> {
    load_with(src, defines, false)
}

/// `load`, with size variables specialized to their `-D` values when
/// `specialize` is set (`Request::specialize`).
pub fn load_with(src: &str, defines: &[(String, i64)], specialize: bool) -> Result<Module, Vec<Diagnostic>> {
    let ast = tirc_parser::parse(src).map_err(parse_diagnostics)?;
    let mode = if specialize { SizeMode::Specialize } else { SizeMode::RunTime };
    tirc_ir::resolve::resolve_module_with(&ast, defines, mode)
}

/// The parser's errors as diagnostics.
pub fn parse_diagnostics(es: Vec<tirc_parser::ParseError>) -> Vec<Diagnostic> {
    es.into_iter()
        .map(|e| {
            let d = Diagnostic::at(e.span, e.message);
            match e.help {
                Some(h) => d.help(h),
                None => d,
            }
        })
        .collect()
}

pub fn compile(src: &str, req: &Request) -> Result<Compiled, Vec<Diagnostic>> {
    let module = load_with(src, &req.defines, req.specialize)?;
    compile_module(module, req).map_err(|e| vec![e])
}

pub fn compile_module(module: Module, req: &Request) -> Result<Compiled, Diagnostic> {
    let (original, scheduled, trace, replay) = match &req.schedule {
        Some(name) => {
            let def = module.schedule(name).ok_or_else(|| {
                let names: Vec<&str> = module.schedules.iter().map(|s| s.name.as_str()).collect();
                let d = Diagnostic::new(format!("the file has no schedule `{name}`"));
                let mut d = did_you_mean(d, name, names.iter().copied());
                if d.help.is_none() {
                    d = d.help(match names.len() {
                        0 => "the file defines no schedule: leave out --schedule to run its function as written".into(),
                        _ => format!("its schedules: {}", names.join(", ")),
                    });
                }
                // Where the file's schedules are (or its first function).
                match (module.schedules.first(), module.funcs.first().and_then(|f| f.span)) {
                    (Some(first), _) => d.or_at(first.span).label("the file's first schedule"),
                    (None, Some(s)) => d.or_at(s).label("the file's function"),
                    (None, None) => d,
                }
            })?;
            let sch = run_schedule(&module, def, &req.params)?;
            let original = module.func(&def.func).cloned().ok_or_else(|| Diagnostic::new("no function"))?;
            (original, sch.func, sch.trace, sch.replay)
        }
        None => {
            if !req.params.is_empty() {
                return Err(Diagnostic::new("-p sets schedule parameters: name the schedule with --schedule"));
            }
            let f = match &req.func {
                Some(n) => module.func(n).cloned().ok_or_else(|| {
                    did_you_mean(
                        Diagnostic::new(format!("the file has no prim_func `{n}`")),
                        n,
                        module.funcs.iter().map(|f| f.name.as_str()),
                    )
                })?,
                None => match &module.funcs[..] {
                    [f] => f.clone(),
                    [] => return Err(Diagnostic::new("the file defines no prim_func")),
                    fs => {
                        let names: Vec<&str> = fs.iter().map(|f| f.name.as_str()).collect();
                        let how = if module.schedules.is_empty() {
                            "name one with --func"
                        } else {
                            "name a schedule with --schedule, or a prim_func with --func"
                        };
                        return Err(Diagnostic::new(format!(
                            "the file defines several prim_funcs ({}); {how}",
                            names.join(", ")
                        )));
                    }
                },
            };
            (f.clone(), f, vec![], vec![])
        }
    };
    // Lowering and code generation know no finer place than the function.
    let here = |d: Diagnostic| match original.span {
        Some(s) if d.span.is_none() => d.or_at(s).label("while lowering this function"),
        _ => d,
    };
    let as_scheduled = scheduled.clone();
    let (scheduled, aligned, refused) = transform::align_input_rows::run(&scheduled, req.aligned_copies);
    let aligned: Vec<String> = aligned.iter().map(|c| c.describe()).collect();
    let (funcs, intermediates) = split_kernels(&scheduled);
    let mut kernels = Vec::new();
    let mut warnings: Vec<Diagnostic> = crate::verify::undefined_reads(&original)
        .iter()
        .map(|b| {
            let d = Diagnostic::warning(format!(
                "`{}` is read, but nothing writes it: what is read from it is undefined",
                b.name()
            ))
            .help("write it before reading it, or make it a parameter");
            match original.span {
                Some(s) => d.or_at(s).label("in this function"),
                None => d,
            }
        })
        .collect();
    if let Some(why) = refused {
        warnings.push(Diagnostic::warning(why).help("--aligned-copies never reads every input as given"));
    }
    for (b, r) in transform::lower_blocks::unpadded_global_buffers(&scheduled) {
        let d = Diagnostic::warning(format!(
            "block `{}` asks to pad `{}` (buffer_dim_align), which is in global memory: it keeps its compact layout",
            r.block.name,
            b.name()
        ))
        .help("padding applies to shared and local buffers: cache the buffer there (cache_read/cache_write) and pad the cache");
        warnings.push(match r.block.span.or(original.span) {
            Some(s) => d.or_at(s).label("this block"),
            None => d,
        });
    }
    let ctx = transform::PassContext { target: req.target.clone() };
    for f in funcs {
        let mut after = Vec::new();
        let lowered = transform::lower(f, &ctx, |name, f| after.push((name, f.clone()))).map_err(here)?;
        let cuda = tirc_codegen::emit(&lowered).map_err(here)?;
        warnings.extend(transform::verify_local_indices::check(&lowered));
        kernels.push(Kernel { after, lowered, cuda });
    }
    check_fractions(&original, &req.fractions)?;
    check_scalar_range(&original, &req.defines, &req.fractions)?;
    Ok(Compiled {
        module,
        original,
        scheduled,
        aligned,
        as_scheduled,
        trace,
        replay,
        kernels,
        intermediates,
        warnings,
        scalar_values: vec![],
    })
}

/// A `-D` that is not an integer names a scalar parameter of `f`: module
/// constants and sizes are integers.
fn check_fractions(f: &PrimFunc, fractions: &[(String, f64)]) -> Result<(), Diagnostic> {
    for (n, x) in fractions {
        if !f.scalars.iter().any(|v| v.name() == n) {
            let d = Diagnostic::new(format!(
                "-D {n}={x}: `{n}` is not a scalar parameter of `{}`; module constants and sizes are integers",
                f.name
            ));
            return Err(did_you_mean(d, n, f.scalars.iter().map(|v| v.name())));
        }
    }
    Ok(())
}

/// A `-D` value for a scalar parameter that its type cannot hold (`-D
/// alpha=1e40` for a float32 rounds to infinity; 70000 for a float16):
/// refused, not run as infinity.
fn check_scalar_range(f: &PrimFunc, defines: &[(String, i64)], fractions: &[(String, f64)]) -> Result<(), Diagnostic> {
    for v in &f.scalars {
        let given = given_value(v, defines, fractions);
        let Some(x) = given else { continue };
        if x.is_finite() && !round_to(v.dtype(), x).is_finite() {
            let d = Diagnostic::new(format!(
                "-D {}={x:?}: `{}` is a {}, which cannot hold {x:?} (it would be infinity)",
                v.name(),
                v.name(),
                v.dtype()
            ))
            .help("give a value within the type's range");
            return Err(match f.span {
                Some(s) => d.or_at(s).label("the function whose parameter this is"),
                None => d,
            });
        }
    }
    Ok(())
}

/// `-D NAME=VALUE`: a module constant to override.
pub fn parse_define(s: &str) -> Result<(String, i64), String> {
    let (n, v) = s.split_once('=').ok_or_else(|| format!("expected NAME=VALUE, got `{s}`"))?;
    let v: i64 = v.trim().parse().map_err(|_| format!("`{v}` is not an integer"))?;
    Ok((n.trim().to_string(), v))
}

/// A `-D` value: an integer, or a number with a fraction or an exponent
/// (`-D alpha=0.5`), for a scalar parameter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Number {
    Int(i64),
    Fraction(f64),
}

impl std::fmt::Display for Number {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Number::Int(i) => write!(f, "{i}"),
            Number::Fraction(x) => write!(f, "{x:?}"),
        }
    }
}

/// `-D NAME=VALUE` where VALUE may be any finite number.
pub fn parse_number_define(s: &str) -> Result<(String, Number), String> {
    let (n, v) = s.split_once('=').ok_or_else(|| format!("expected NAME=VALUE, got `{s}`"))?;
    let t = v.trim();
    let x = match t.parse::<i64>() {
        Ok(i) => Number::Int(i),
        Err(_) => match t.parse::<f64>() {
            Ok(x) if x.is_finite() => Number::Fraction(x),
            _ => return Err(format!("`{v}` is not a number")),
        },
    };
    Ok((n.trim().to_string(), x))
}

/// `-p NAME=VALUE`: a schedule parameter to override.
pub fn parse_param(s: &str) -> Result<(String, String), String> {
    let (n, v) = s.split_once('=').ok_or_else(|| format!("expected NAME=VALUE, got `{s}`"))?;
    Ok((n.trim().to_string(), v.trim().to_string()))
}
