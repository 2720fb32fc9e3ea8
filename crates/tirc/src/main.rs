//! `tirc`: the command line. Each subcommand is a file of the library's
//! `cli/` (so that the Python package can run them too); the pipeline they
//! share is `compile.rs`.
//!
//! Exit status: 0 on success, 1 when the input is bad or a result does not
//! match its reference, 2 for usage errors.

use clap::{Parser, Subcommand};
use std::process::ExitCode;
use tirc::cli as commands;

#[derive(Parser)]
#[command(name = "tirc", version, about = "A TensorIR compiler: schedule, lower, emit CUDA, run and check")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Print the lowered IR (or CUDA) of a function under a schedule.
    Lower(commands::lower::Args),
    /// Run a function under a schedule on the GPU or the simulator, check it, time it.
    Run(commands::run::Args),
    /// Time a schedule at several sizes against a baseline, as a table and a chart.
    Bench(commands::bench::Args),
    /// Write the kernels for your own program: CUDA source with a launch
    /// function, C header, PTX, cubin and kernel.json.
    Build(commands::build::Args),
    /// Parse and validate a file; print nothing when it is good.
    Check(commands::check::Args),
    /// Normalise the file's layout (or print it in canonical form: --canonical); --check, --write.
    Fmt(commands::fmt::Args),
    /// Sweep or search a schedule's parameters; check and time every candidate.
    Tune(tirc::tune::cli::Args),
}

/// A closed pipe on stdout (`tirc lower ... | head`) ends the process
/// quietly, as it does other command-line tools, instead of making every
/// print panic: SIGPIPE back to its default action (Rust starts with it
/// ignored).
#[cfg(unix)]
fn default_sigpipe() {
    unsafe extern "C" {
        fn signal(signum: i32, handler: usize) -> usize;
    }
    const SIGPIPE: i32 = 13;
    const SIG_DFL: usize = 0;
    // SAFETY: signal(2) with SIG_DFL installs no handler of ours; it runs
    // before any thread is started.
    unsafe {
        signal(SIGPIPE, SIG_DFL);
    }
}

#[cfg(not(unix))]
fn default_sigpipe() {}

fn main() -> ExitCode {
    default_sigpipe();
    let cli = Cli::parse();
    // Deeply nested programs (long chains of `let`s, expressions at the
    // parser's depth limit) recurse deep in every stage: the command runs on
    // a thread with the simulator workers' large stack, not the 8 MiB main
    // one.
    match std::thread::Builder::new().stack_size(tirc_exec::sim::WORKER_STACK).spawn(move || run(cli)) {
        Ok(t) => t.join().unwrap_or_else(|_| ExitCode::from(101)),
        Err(_) => run(Cli::parse()),
    }
}

fn run(cli: Cli) -> ExitCode {
    let code = match cli.cmd {
        Cmd::Lower(a) => commands::lower::main(a),
        Cmd::Run(a) => commands::run::main(a),
        Cmd::Bench(a) => commands::bench::main(a),
        Cmd::Build(a) => commands::build::main(a),
        Cmd::Check(a) => commands::check::main(a),
        Cmd::Fmt(a) => commands::fmt::main(a),
        Cmd::Tune(a) => commands::tune::main(a),
    };
    ExitCode::from(code)
}
