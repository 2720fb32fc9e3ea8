//! The whole pipeline, as one function: text to parsed module, to scheduled
//! function, to lowered kernel, to CUDA.

use tirc_codegen::CudaKernel;
use tirc_ir::diag::{did_you_mean, Diagnostic};
use tirc_ir::printer::print_func;
use tirc_ir::{Buffer, Module, PrimFunc};
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
    pub params: Vec<(String, String)>,
}

/// Everything compiling produced, for the commands to print or run.
pub struct Compiled {
    pub module: Module,
    /// The function before any schedule: the reference.
    pub original: PrimFunc,
    pub scheduled: PrimFunc,
    pub trace: Vec<String>,
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
}

/// One kernel of a compiled function.
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

    /// The CUDA source of every kernel, each headed by its launch.
    pub fn cuda_text(&self) -> String {
        let mut out = String::new();
        for k in &self.kernels {
            let (g, b) = (k.cuda.launch.grid, k.cuda.launch.block);
            out += &format!("// grid ({}, {}, {}), block ({}, {}, {})\n", g[0], g[1], g[2], b[0], b[1], b[2]);
            out += &k.cuda.source;
        }
        out
    }
}

/// Parses and resolves a source text.
pub fn load(src: &str, defines: &[(String, i64)]) -> Result<Module, Vec<Diagnostic>> {
    let ast = tirc_parser::parse(src).map_err(parse_diagnostics)?;
    tirc_ir::resolve::resolve_module(&ast, defines)
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
    let module = load(src, &req.defines)?;
    compile_module(module, req).map_err(|e| vec![e])
}

pub fn compile_module(module: Module, req: &Request) -> Result<Compiled, Diagnostic> {
    let (original, scheduled, trace, replay) = match &req.schedule {
        Some(name) => {
            let def = module.schedule(name).ok_or_else(|| {
                let d = Diagnostic::new(format!("the file has no schedule `{name}`"));
                did_you_mean(d, name, module.schedules.iter().map(|s| s.name.as_str()))
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
                        return Err(Diagnostic::new(format!(
                            "the file defines several prim_funcs ({}); name a schedule with --schedule",
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
    let (funcs, intermediates) = split_kernels(&scheduled);
    let mut kernels = Vec::new();
    let mut warnings = Vec::new();
    for f in funcs {
        let mut after = Vec::new();
        let lowered = transform::lower(f, |name, f| after.push((name, f.clone()))).map_err(here)?;
        let cuda = tirc_codegen::emit(&lowered).map_err(here)?;
        warnings.extend(transform::verify_local_indices::check(&lowered));
        kernels.push(Kernel { after, lowered, cuda });
    }
    Ok(Compiled { module, original, scheduled, trace, replay, kernels, intermediates, warnings })
}

/// `-D NAME=VALUE`: a module constant to override.
pub fn parse_define(s: &str) -> Result<(String, i64), String> {
    let (n, v) = s.split_once('=').ok_or_else(|| format!("expected NAME=VALUE, got `{s}`"))?;
    let v: i64 = v.trim().parse().map_err(|_| format!("`{v}` is not an integer"))?;
    Ok((n.trim().to_string(), v))
}

/// `-p NAME=VALUE`: a schedule parameter to override.
pub fn parse_param(s: &str) -> Result<(String, String), String> {
    let (n, v) = s.split_once('=').ok_or_else(|| format!("expected NAME=VALUE, got `{s}`"))?;
    Ok((n.trim().to_string(), v.trim().to_string()))
}
