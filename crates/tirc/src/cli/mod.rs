//! The subcommands, and what they share: reading the file, parsing `-D` and
//! `-p`, printing diagnostics.

pub mod bench;
pub mod build;
pub mod check;
pub mod fmt;
pub mod lower;
pub mod run;
pub mod tune;

use crate::compile::{parse_number_define, parse_param, Number};
use tirc_ir::Diagnostic;

/// Exit status for bad input or a mismatch.
pub const FAIL: u8 = 1;
/// Exit status for a usage error.
pub const USAGE: u8 = 2;

/// Arguments every compiling subcommand takes.
#[derive(clap::Args, Clone, Debug)]
pub struct Common {
    /// The .tir file.
    pub file: std::path::PathBuf,
    /// The schedule to apply (a `@tirc.schedule` function of the file).
    #[arg(long, short = 's')]
    pub schedule: Option<String>,
    /// The prim_func to use when no schedule is named.
    #[arg(long)]
    pub func: Option<String>,
    /// Override a module constant (compile-time: the kernel is specialized to it), give a size variable (`n: T.int32`, `m = T.int32()`) its run-time value (the kernel takes it as an argument; see --specialize), or give a scalar parameter (`alpha: T.float32`) its value (a kernel argument; without -D, `run` draws it from --seed): -D M=64 -D m=1000 -D alpha=0.5. A name given twice takes its last value.
    #[arg(short = 'D', value_name = "NAME=VALUE", value_parser = parse_number_define)]
    pub define: Vec<(String, Number)>,
    /// Override a schedule parameter: -p BM=64. A name given twice takes its last value.
    #[arg(short = 'p', value_name = "NAME=VALUE", value_parser = parse_param)]
    pub param: Vec<(String, String)>,
    /// Compile size variables as the constants their -D values give (one kernel per size) instead of as run-time arguments.
    #[arg(long)]
    pub specialize: bool,
    /// The GPU architecture to compile for (sm_80, sm_90, sm_90a, ...): lowering checks threads per block, shared memory and instructions against it, and `lower --emit ptx` and `build` compile for it.
    #[arg(long, value_name = "SM", default_value = "sm_90", value_parser = parse_arch)]
    pub arch: tirc_ir::target::Target,
    /// Copy an input whose rows are not aligned (a row of 4097 floats), and which the kernels read many times, into a buffer whose rows are, before the kernels that read it: `auto` where the loads that miss their alignment run at least 2^26 times and 32 times the input's elements (a count known when compiling) and the rows are 1024 bytes or more, `always` wherever one does, `never` to read every input as given. Kernels whose tiles TMA copies are left alone.
    #[arg(long, value_name = "WHEN", default_value = "auto", value_parser = crate::compile::AlignMode::parse)]
    pub aligned_copies: crate::compile::AlignMode,
}

fn parse_arch(s: &str) -> Result<tirc_ir::target::Target, String> {
    tirc_ir::target::Target::from_arch(s)
}

/// Parses `argv` (`run FILE ...`, without the program name) as the
/// subcommand `name` whose arguments are `A`: for running a subcommand in
/// this process (the tests, the Python package).
pub fn parse_subcommand<A: clap::Args + clap::FromArgMatches>(
    name: &'static str,
    argv: &[&str],
) -> Result<A, clap::Error> {
    let sub = A::augment_args(clap::Command::new(name));
    let top = clap::Command::new("tirc").subcommand(sub).subcommand_required(true);
    let m = top.try_get_matches_from(std::iter::once("tirc").chain(argv.iter().copied()))?;
    match m.subcommand() {
        Some((_, sub)) => A::from_arg_matches(sub),
        None => Err(clap::Error::new(clap::error::ErrorKind::MissingSubcommand)),
    }
}

/// Reads the file, or says why it cannot.
pub fn read(path: &std::path::Path) -> Result<String, u8> {
    std::fs::read_to_string(path).map_err(|e| {
        eprintln!("error: cannot read {}: {e}", path.display());
        FAIL
    })
}

/// Prints diagnostics (errors or warnings) against the source on stderr.
pub fn report(path: &std::path::Path, src: &str, diags: &[Diagnostic]) {
    let name = path.display().to_string();
    for d in diags {
        eprint!("{}", d.render(&name, src));
    }
}

/// `NAME=VALUE` pairs with each name once, at its last value, in the
/// order of those last values (`-D M=4 -D M=8` is M = 8, as `-p` gives it).
pub fn last_of_each<T: Clone>(pairs: &[(String, T)]) -> Vec<(String, T)> {
    pairs
        .iter()
        .enumerate()
        .filter(|(i, (n, _))| !pairs[i + 1..].iter().any(|(m, _)| m == n))
        .map(|(_, p)| p.clone())
        .collect()
}

/// The `-D` values that are not whole numbers, by name.
pub type Fractions = Vec<(String, f64)>;

impl Common {
    /// The integer `-D` values (module constants, sizes, and scalar
    /// parameters given a whole number), and the others (scalar parameters
    /// only).
    /// A name given twice takes its last value, for `-D` as for `-p`.
    pub fn split_defines(&self) -> (Vec<(String, i64)>, Fractions) {
        let (mut ints, mut fractions) = (Vec::new(), Vec::new());
        for (n, v) in last_of_each(&self.define) {
            match v {
                Number::Int(i) => ints.push((n, i)),
                Number::Fraction(x) => fractions.push((n, x)),
            }
        }
        (ints, fractions)
    }

    pub fn request(&self) -> crate::compile::Request {
        let (defines, fractions) = self.split_defines();
        crate::compile::Request {
            schedule: self.schedule.clone(),
            func: self.func.clone(),
            defines,
            fractions,
            params: last_of_each(&self.param),
            specialize: self.specialize,
            target: self.arch.clone(),
            aligned_copies: self.aligned_copies,
        }
    }
}
