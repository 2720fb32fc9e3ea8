//! `tirc fmt FILE [--check]`: print the file in canonical form, each
//! `@T.prim_func` as tirc's printer writes it and everything else as it was;
//! with `--check`, print nothing and exit 1 when the file is not canonical.

use super::{read, report, FAIL};
use crate::compile::load;

#[derive(clap::Args)]
pub struct Args {
    /// The .tir file.
    pub file: std::path::PathBuf,
    /// Exit with status 1, naming the first line that differs, when the file is not in canonical form.
    #[arg(long)]
    pub check: bool,
}

pub fn main(a: Args) -> u8 {
    let src = match read(&a.file) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let module = match load(&src, &[]) {
        Ok(m) => m,
        Err(ds) => {
            report(&a.file, &src, &ds);
            return FAIL;
        }
    };
    // `load` succeeded, so the file parses.
    let defs = tirc_parser::parse(&src).map(|ast| tirc_ir::resolve::prim_func_defs(&ast)).unwrap_or_default();
    let text = tirc_ir::printer::format_file(&src, &defs, &module);
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
    eprintln!("{}:{}: not in canonical form (`tirc fmt` prints it)", a.file.display(), line + 1);
    FAIL
}
