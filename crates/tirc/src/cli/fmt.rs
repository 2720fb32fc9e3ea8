//! `tirc fmt FILE [--check | --write]`: the file with its layout normalised
//! and everything else as written — module constants, names, numbers,
//! comments, the schedules (`tirc_parser::layout`). `--check` prints
//! nothing and exits 1, naming the first line that differs, when the file
//! is not formatted; `--write` rewrites it in place.
//!
//! `--canonical` prints instead each `@T.prim_func` as tirc's printer
//! writes its IR (constants folded, loops and blocks as TVM prints them,
//! `T.reads`/`T.writes` made explicit), the rest as written: the form the
//! golden files are in, and what `tirc lower --emit scheduled` prints.

use super::{read, report, FAIL};
use crate::compile::{load, parse_diagnostics};
use tirc_ir::Diagnostic;

#[derive(clap::Args)]
pub struct Args {
    /// The .tir file.
    pub file: std::path::PathBuf,
    /// Exit with status 1, naming the first line that differs, when the file is not formatted.
    #[arg(long, conflicts_with = "write")]
    pub check: bool,
    /// Rewrite the file in place (when it changes).
    #[arg(long)]
    pub write: bool,
    /// Print the functions as tirc's printer writes their IR (constants
    /// folded, reads and writes explicit) instead of normalising the layout.
    #[arg(long)]
    pub canonical: bool,
}

pub fn main(a: Args) -> u8 {
    let src = match read(&a.file) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let text = match if a.canonical { canonical(&src) } else { layout(&src) } {
        Ok(t) => t,
        Err(ds) => {
            report(&a.file, &src, &ds);
            return FAIL;
        }
    };
    if a.write {
        if text != src {
            if let Err(e) = std::fs::write(&a.file, &text) {
                eprintln!("error: cannot write {}: {e}", a.file.display());
                return FAIL;
            }
            eprintln!("formatted {}", a.file.display());
        }
        return 0;
    }
    if !a.check {
        print!("{text}");
        return 0;
    }
    if text == src {
        return 0;
    }
    let line = src
        .lines()
        .zip(text.lines())
        .position(|(x, y)| x != y)
        .unwrap_or(src.lines().count().min(text.lines().count()));
    let what = if a.canonical {
        "not in canonical form (`tirc fmt --canonical` prints it)"
    } else {
        "not formatted (`tirc fmt --write` formats it)"
    };
    eprintln!("{}:{}: {what}", a.file.display(), line + 1);
    FAIL
}

/// The layout formatter; the file must parse (it need not resolve).
fn layout(src: &str) -> Result<String, Vec<Diagnostic>> {
    tirc_parser::parse(src).map_err(parse_diagnostics)?;
    tirc_parser::layout::format(src).map_err(parse_diagnostics)
}

/// The IR printer's form of every function.
fn canonical(src: &str) -> Result<String, Vec<Diagnostic>> {
    let module = load(src, &[])?;
    // `load` succeeded, so the file parses.
    let defs = tirc_parser::parse(src).map(|ast| tirc_ir::resolve::prim_func_defs(&ast)).unwrap_or_default();
    Ok(tirc_ir::printer::format_file(src, &defs, &module))
}
