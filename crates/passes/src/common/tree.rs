//! Finding and replacing loops and blocks in a function body.

use super::error::{Result, ScheduleError};
use tirc_ir::{BlockRealize, For, Stmt, Var};

/// Rewrites `s` top-down (`Stmt::rewrite`).
pub fn rewrite(s: &Stmt, f: &mut dyn FnMut(&Stmt) -> Option<Stmt>) -> Stmt {
    s.rewrite(f)
}

/// Like `rewrite`, for replacements that can fail.
pub fn try_rewrite(s: &Stmt, f: &mut dyn FnMut(&Stmt) -> Option<Result<Stmt>>) -> Result<Stmt> {
    let mut err = None;
    let out = rewrite(s, &mut |x| match f(x) {
        Some(Ok(r)) => Some(r),
        Some(Err(e)) => {
            err.get_or_insert(e);
            Some(x.clone())
        }
        None => None,
    });
    match err {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

pub fn find_loop<'a>(s: &'a Stmt, v: &Var) -> Option<&'a For> {
    s.find_loop(v)
}

pub fn find_block<'a>(s: &'a Stmt, name: &str) -> Option<&'a BlockRealize> {
    s.find_block(name)
}

/// The loop, or an error naming it.
pub fn get_loop<'a>(s: &'a Stmt, v: &Var) -> Result<&'a For> {
    find_loop(s, v).ok_or_else(|| {
        ScheduleError::not_found(format!("loop `{}` is no longer in the function", v.name()))
            .help("a loop that was split, fused or decomposed is replaced by the new loops it returned")
    })
}

/// Replaces the loop of variable `v` by `f(loop)`.
pub fn replace_loop(s: &Stmt, v: &Var, f: impl FnOnce(&For) -> Result<Stmt>) -> Result<Stmt> {
    let mut f = Some(f);
    try_rewrite(s, &mut |x| match x {
        Stmt::For(l) if &l.var == v => f.take().map(|f| f(l)),
        _ => None,
    })
}

/// Replaces the block named `name` (with its realize) by `f(realize)`.
pub fn replace_block(s: &Stmt, name: &str, f: impl FnOnce(&BlockRealize) -> Result<Stmt>) -> Result<Stmt> {
    let mut f = Some(f);
    try_rewrite(s, &mut |x| match x {
        Stmt::Block(r) if r.block.name == name => f.take().map(|f| f(r)),
        _ => None,
    })
}

/// The loops between the block's parent block and the block, outermost
/// first (`Stmt::loops_above`).
pub fn loops_above<'a>(s: &'a Stmt, name: &str) -> Option<Vec<&'a For>> {
    s.loops_above(name)
}

/// The blocks directly under `s` (not inside another block).
pub fn child_blocks(s: &Stmt) -> Vec<&BlockRealize> {
    fn go<'a>(s: &'a Stmt, out: &mut Vec<&'a BlockRealize>) {
        if let Stmt::Block(r) = s {
            out.push(r);
            return;
        }
        s.for_each_child(|c| go(c, out));
    }
    let mut out = Vec::new();
    s.for_each_child(|c| go(c, &mut out));
    if let Stmt::Block(r) = s {
        let _ = r;
    }
    out
}

/// Every block under `s`, at any depth, including `s` itself.
pub fn all_blocks(s: &Stmt) -> Vec<&BlockRealize> {
    s.blocks()
}

/// A fresh name for a loop derived from `base` that no loop of the function
/// has yet.
pub fn fresh_loop_name(root: &Stmt, base: &str) -> String {
    let mut names = std::collections::HashSet::new();
    root.walk(&mut |x| {
        if let Stmt::For(l) = x {
            names.insert(l.var.name().to_string());
        }
    });
    if !names.contains(base) {
        return base.to_string();
    }
    (1..).map(|i| format!("{base}_{i}")).find(|n| !names.contains(n)).unwrap_or_default()
}
