//! `tirc build FILE -s S -o DIR`: the kernels for the user's own program —
//! a CUDA source with a launch function, its C header, the PTX and cubin
//! (when NVRTC is there) and `kernel.json` (see `crate::export`).

use super::{read, report, Common, FAIL};
use crate::compile::compile;
use crate::export::{build, Options};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub common: Common,
    /// The folder to write into (made if missing).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: std::path::PathBuf,
    /// Base name of the files and of the launch function `<NAME>_launch`
    /// (default: the function's name).
    #[arg(long)]
    pub name: Option<String>,
}

pub fn main(a: Args) -> u8 {
    let src = match read(&a.common.file) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let req = a.common.request();
    let c = match compile(&src, &req) {
        Ok(c) => c,
        Err(ds) => {
            report(&a.common.file, &src, &ds);
            return FAIL;
        }
    };
    report(&a.common.file, &src, &c.warnings);
    // Sizes known at run time given with -D: checked as `run` checks them.
    if let Err(d) = crate::compile::check_given_sizes(&c, &req.defines) {
        report(&a.common.file, &src, &[d]);
        return FAIL;
    }
    let name = a.name.clone().unwrap_or_else(|| c.original.name.clone());
    let file = a.common.file.display().to_string();
    let b = match build(&c, &req, &Options { name: &name, arch: &a.common.arch.arch(), source_file: &file }) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {e}");
            return FAIL;
        }
    };
    if let Err(e) = std::fs::create_dir_all(&a.out) {
        eprintln!("error: cannot make {}: {e}", a.out.display());
        return FAIL;
    }
    for (f, bytes) in &b.files {
        let path = a.out.join(f);
        if let Err(e) = std::fs::write(&path, bytes) {
            eprintln!("error: cannot write {}: {e}", path.display());
            return FAIL;
        }
        println!("wrote {}", path.display());
    }
    for n in &b.notes {
        eprintln!("note: {n}");
    }
    for w in &b.warnings {
        eprintln!("warning: {w}");
    }
    if let Some(e) = &b.refused {
        eprintln!("error: the CUDA tirc wrote does not compile (a tirc bug; the source is written above): {e}");
        return FAIL;
    }
    0
}
