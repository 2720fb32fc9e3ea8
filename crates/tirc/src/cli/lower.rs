//! `tirc lower FILE`: print the lowered IR, the CUDA source, the PTX that
//! NVRTC makes of it, the block dependence graph (DOT), or the IR after
//! each pass.

use super::{read, report, Common, FAIL, USAGE};
use crate::compile::compile;
use tirc_ir::printer::print_func;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq)]
pub enum Emit {
    /// The lowered TensorIR.
    Tir,
    /// The scheduled TensorIR, before lowering.
    Scheduled,
    /// The CUDA C source.
    Cuda,
    /// The PTX that NVRTC compiles the CUDA source to, for --arch (needs
    /// the NVRTC library, not a GPU).
    Ptx,
    /// The block dependence graph of the scheduled function, in Graphviz's
    /// DOT (`| dot -Tsvg > blocks.svg`).
    Dot,
    /// The schedule as applied, as a `@tirc.schedule` function that replays
    /// it (parameters resolved, blocks and loops taken by name).
    Trace,
}

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub common: Common,
    /// What to print [default: tir]. With --print-after, printed after the
    /// IR of the passes (the lowered TIR is the IR after the last pass).
    #[arg(long, value_enum)]
    pub emit: Option<Emit>,
    /// Print the IR after every pass, each headed by the pass name.
    #[arg(long)]
    pub print_after_all: bool,
    /// Print the IR after the named pass.
    #[arg(long, value_name = "PASS")]
    pub print_after: Vec<String>,
}

pub fn main(a: Args) -> u8 {
    let names = tirc_passes::transform::pass_names();
    for p in &a.print_after {
        if !names.contains(&p.as_str()) && p != "schedule" && p != "align_input_rows" {
            eprintln!("error: unknown pass `{p}`; the passes are: schedule, align_input_rows, {}", names.join(", "));
            return USAGE;
        }
    }
    let src = match read(&a.common.file) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let c = match compile(&src, &a.common.request()) {
        Ok(c) => c,
        Err(ds) => {
            report(&a.common.file, &src, &ds);
            return FAIL;
        }
    };
    report(&a.common.file, &src, &c.warnings);
    // Sizes known at run time given with -D: checked as `run` checks them.
    if let Err(d) = crate::compile::check_given_sizes(&c, &a.common.request().defines) {
        report(&a.common.file, &src, &[d]);
        return FAIL;
    }
    let want = |n: &str| a.print_after_all || a.print_after.iter().any(|p| p == n);
    if a.print_after_all || !a.print_after.is_empty() {
        if want("schedule") {
            println!("# after schedule");
            print!("{}", print_func(&c.as_scheduled));
        }
        if want("align_input_rows") {
            println!("# after align_input_rows");
            for line in &c.aligned {
                println!("# aligned: {line}");
            }
            print!("{}", print_func(&c.scheduled));
        }
        for (i, k) in c.kernels.iter().enumerate() {
            for (name, f) in &k.after {
                if want(name) {
                    match c.kernels.len() {
                        1 => println!("# after {name}"),
                        n => println!("# after {name} (kernel {} of {n})", i + 1),
                    }
                    print!("{}", print_func(f));
                }
            }
        }
        // What --emit asks for besides (the lowered TIR is already there).
        if matches!(a.emit, None | Some(Emit::Tir)) {
            return 0;
        }
        println!("# --emit {}", a.emit.map(|e| format!("{e:?}").to_lowercase()).unwrap_or_default());
    }
    match a.emit.unwrap_or(Emit::Tir) {
        Emit::Tir => {
            // Why the function has a kernel more than its schedule made.
            for line in &c.aligned {
                println!("# aligned: {line}");
            }
            print!("{}", c.lowered_text())
        }
        Emit::Scheduled => print!("{}", print_func(&c.scheduled)),
        Emit::Cuda => {
            for line in &c.aligned {
                println!("// aligned: {line}");
            }
            print!("{}", c.cuda_text())
        }
        Emit::Dot => print!("{}", tirc_passes::schedule::deps::dot(&c.scheduled)),
        Emit::Trace => match &a.common.schedule {
            Some(s) => print!("{}", c.replay_text(s)),
            None => {
                eprintln!("error: --emit trace needs --schedule: the trace is of a schedule");
                return USAGE;
            }
        },
        Emit::Ptx => {
            if !tirc_exec::gpu::nvrtc_available() {
                eprintln!(
                    "error: --emit ptx needs the NVRTC library, which cannot be loaded (libnvrtc.so: pip install \
                     nvidia-cuda-nvrtc==13.0.* and put its nvidia/cu13/lib on LD_LIBRARY_PATH)"
                );
                return FAIL;
            }
            for k in &c.kernels {
                match tirc_exec::gpu::nvrtc_build(&k.cuda.source, &a.common.arch.arch()) {
                    Ok(out) => {
                        let threads = k.cuda.launch.threads_per_block();
                        if let Some(w) =
                            out.ptxas.and_then(|r| r.spill_warning(&k.cuda.name, threads, k.cuda.min_blocks_per_sm))
                        {
                            eprintln!("warning: {w}");
                        }
                        print!("{}", out.ptx)
                    }
                    Err(e) => {
                        eprintln!("error: {e}");
                        return FAIL;
                    }
                }
            }
        }
    }
    0
}
