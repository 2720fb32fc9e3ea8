//! `tirc check FILE`: parse, resolve, and run every schedule of the file;
//! report every problem with its span.

use super::{read, report, FAIL};
use crate::compile::{compile_module, load, Request};

#[derive(clap::Args)]
pub struct Args {
    /// The .tir file.
    pub file: std::path::PathBuf,
    /// Override a module constant or give a size variable (`n: T.int32`, `m = T.int32()`) its value: -D M=64. All are compile-time: the kernel is specialized to them.
    #[arg(short = 'D', value_name = "NAME=VALUE", value_parser = super::parse_define)]
    pub define: Vec<(String, i64)>,
}

pub fn main(a: Args) -> u8 {
    let src = match read(&a.file) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let module = match load(&src, &a.define) {
        Ok(m) => m,
        Err(ds) => {
            report(&a.file, &src, &ds);
            return FAIL;
        }
    };
    let mut errors = Vec::new();
    for s in &module.schedules {
        let req = Request { schedule: Some(s.name.clone()), ..Request::default() };
        if let Err(d) = compile_module(module.clone(), &req) {
            errors.push(d);
        }
    }
    if module.schedules.is_empty() {
        for f in &module.funcs {
            let req = Request { func: Some(f.name.clone()), ..Request::default() };
            if let Err(d) = compile_module(module.clone(), &req) {
                errors.push(d);
            }
        }
    }
    report(&a.file, &src, &errors);
    if errors.is_empty() {
        0
    } else {
        FAIL
    }
}
