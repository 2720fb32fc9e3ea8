//! The whole pipeline, as one function: text to parsed module, to scheduled
//! function, to lowered kernel, to CUDA.

use tirc_codegen::CudaKernel;
use tirc_ir::diag::{did_you_mean, Diagnostic};
use tirc_ir::{Module, PrimFunc};
use tirc_passes::schedule::interp::run_schedule;
use tirc_passes::transform;

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
    /// The IR after each pass, by pass name.
    pub after: Vec<(&'static str, PrimFunc)>,
    pub lowered: PrimFunc,
    pub kernel: CudaKernel,
    /// Warnings about the lowered kernel: it is correct, but likely slower
    /// than meant (`verify_local_indices`).
    pub warnings: Vec<Diagnostic>,
}

/// Parses and resolves a source text.
pub fn load(src: &str, defines: &[(String, i64)]) -> Result<Module, Vec<Diagnostic>> {
    let ast = tirc_parser::parse(src).map_err(|es| {
        es.into_iter()
            .map(|e| {
                let d = Diagnostic::at(e.span, e.message);
                match e.help {
                    Some(h) => d.help(h),
                    None => d,
                }
            })
            .collect::<Vec<_>>()
    })?;
    tirc_ir::resolve::resolve_module(&ast, defines)
}

pub fn compile(src: &str, req: &Request) -> Result<Compiled, Vec<Diagnostic>> {
    let module = load(src, &req.defines)?;
    compile_module(module, req).map_err(|e| vec![e])
}

pub fn compile_module(module: Module, req: &Request) -> Result<Compiled, Diagnostic> {
    let (original, scheduled, trace) = match &req.schedule {
        Some(name) => {
            let def = module.schedule(name).ok_or_else(|| {
                let d = Diagnostic::new(format!("the file has no schedule `{name}`"));
                did_you_mean(d, name, module.schedules.iter().map(|s| s.name.as_str()))
            })?;
            let sch = run_schedule(&module, def, &req.params)?;
            let original = module.func(&def.func).cloned().ok_or_else(|| Diagnostic::new("no function"))?;
            (original, sch.func, sch.trace)
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
            (f.clone(), f, vec![])
        }
    };
    let mut after = Vec::new();
    // Lowering and code generation know no finer place than the function.
    let here = |d: Diagnostic| match original.span {
        Some(s) if d.span.is_none() => d.or_at(s).label("while lowering this function"),
        _ => d,
    };
    let lowered = transform::lower(scheduled.clone(), |name, f| after.push((name, f.clone()))).map_err(here)?;
    let kernel = tirc_codegen::emit(&lowered).map_err(here)?;
    let warnings = transform::verify_local_indices::check(&lowered);
    Ok(Compiled { module, original, scheduled, trace, after, lowered, kernel, warnings })
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
