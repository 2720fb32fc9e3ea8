//! `extract_launch`: loops bound to GPU axes become the kernel's launch
//! configuration.
//!
//! Every loop bound to `blockIdx.x` (and so on) is replaced by its body, its
//! variable by the one launch variable of that axis; the launches wrap the
//! whole body, in order of first appearance, as
//! `blockIdx_x = T.launch_thread("blockIdx.x", 32)`. A bound loop shorter
//! than its axis' extent runs under `if v < extent`. Axes not bound launch
//! with extent 1. An existing `T.launch_thread` (pasted lowered code) fixes
//! its axis' extent. Refused: a loop longer than the launch of its axis, two
//! launches of one axis with different extents, and more than 1024 threads
//! in a block.
//!
//! An occupancy hint, the annotation `"min_blocks_per_sm": n` on a loop
//! bound to a GPU axis (`sch.annotate(loop, "min_blocks_per_sm", 2)`),
//! becomes the function attribute of that name, which code generation
//! writes as `__launch_bounds__(threads, n)`: the CUDA compiler then keeps
//! the registers a thread uses low enough for `n` blocks on one
//! multiprocessor (spilling if it must; `tirc run` warns of spills).
//! Refused: a value that is not a positive integer, two different values,
//! the annotation on a loop bound to nothing, and `n` blocks of the
//! kernel's threads more than the target keeps on one multiprocessor.
//!
//! Then a thread's own buffer (local, a fragment) indexed by the loops of
//! a thread axis, which `compact_buffers` had to size for every thread
//! where two loops of that axis used it, takes one thread's tile
//! (`compact_buffers::per_thread_after_launch`).

use super::PassContext;
use tirc_ir::printer::print_expr;
use tirc_ir::structural_eq::same_expr;
use tirc_ir::subst::substitute_stmt;
use tirc_ir::target::Target;
use tirc_ir::{BinOp, DType, Diagnostic, Expr, ForKind, PrimFunc, Stmt, ThreadTag, Var};

pub use tirc_ir::launch::{launch_config, LaunchConfig, MIN_BLOCKS_PER_SM};

pub fn run(mut f: PrimFunc, ctx: &PassContext) -> Result<PrimFunc, Diagnostic> {
    let target = &ctx.target;
    // The extent of each axis: the one of an existing launch, which is
    // fixed, else the largest loop bound to it.
    let mut launched: Vec<(ThreadTag, i64)> = Vec::new();
    // Block axes whose extent is an expression of the run-time sizes (a
    // launch as `tirc lower` prints one of a kernel of run-time sizes, or a
    // loop of that many iterations).
    let mut sized: Vec<(ThreadTag, Expr)> = Vec::new();
    let mut err = None;
    f.body.walk(&mut |s| {
        if let Stmt::Launch { tag, extent, .. } = s {
            match (extent.as_int(), launched.iter().find(|(x, _)| x == tag)) {
                (Some(e), Some((_, old))) if *old != e => {
                    err = Some(Diagnostic::new(format!(
                        "{} is launched twice, with extents {old} and {e}: a kernel has one extent per axis",
                        tag.name()
                    )))
                }
                (Some(e), None) => launched.push((*tag, e)),
                (Some(_), Some(_)) => {}
                (None, _) if tag.is_block && extent.is_size_expr(&f.sizes) => {
                    match sized.iter().find(|(x, _)| x == tag) {
                        Some((_, old)) if !same_expr(old, extent) => {
                            err = Some(Diagnostic::new(format!(
                                "{} is launched twice, with extents {} and {}: a kernel has one extent per axis",
                                tag.name(),
                                print_expr(old),
                                print_expr(extent)
                            )))
                        }
                        Some(_) => {}
                        None => sized.push((*tag, extent.clone())),
                    }
                }
                (None, _) => {
                    err = Some(Diagnostic::new(format!("the launch of {} has no constant extent", tag.name())))
                }
            }
        }
    });
    let mut axes = launched.clone();
    f.body.walk(&mut |s| {
        if let Stmt::For(l) = s {
            if let ForKind::ThreadBinding(t) = l.kind {
                match (l.extent.as_int(), launched.iter().find(|(x, _)| *x == t)) {
                    (Some(e), Some((_, fixed))) if e > *fixed => {
                        err = Some(
                            Diagnostic::new(format!(
                                "the loop `{}` bound to {} runs {e} iterations, but {} is launched with {fixed}",
                                l.var.name(),
                                t.name(),
                                t.name()
                            ))
                            .or_at_ir(l.span, "this loop"),
                        )
                    }
                    (Some(e), _) => match axes.iter_mut().find(|(x, _)| *x == t) {
                        Some((_, old)) => *old = (*old).max(e),
                        None => axes.push((t, e)),
                    },
                    (None, None) if t.is_block && l.extent.is_size_expr(&f.sizes) => {
                        match sized.iter().find(|(x, _)| *x == t) {
                            Some((_, old)) if !same_expr(old, &l.extent) => {
                                err = Some(
                                    Diagnostic::new(format!(
                                        "two loops bound to {} run {} and {} iterations: a kernel has one grid",
                                        t.name(),
                                        print_expr(old),
                                        print_expr(&l.extent)
                                    ))
                                    .or_at_ir(l.span, "this loop"),
                                )
                            }
                            Some(_) => {}
                            None => sized.push((t, l.extent.clone())),
                        }
                    }
                    (None, _) => {
                        err = Some(
                            Diagnostic::new(format!("the loop bound to {} has no constant extent", t.name()))
                                .or_at_ir(l.span, "this loop"),
                        )
                    }
                }
            }
        }
    });
    if let Some((t, e)) = sized.iter().find(|(t, _)| axes.iter().any(|(x, _)| x == t)) {
        err = Some(Diagnostic::new(format!(
            "{} is bound both to loops of constant extent and to a loop of {} iterations, known at run time",
            t.name(),
            print_expr(e)
        )));
    }
    if let Some(e) = err {
        return Err(e);
    }
    let threads: i64 = axes.iter().filter(|(t, _)| !t.is_block).map(|(_, e)| *e).fold(1, i64::saturating_mul);
    if threads > target.max_threads_per_block {
        // Point at the largest loop bound to a thread axis.
        let mut widest: Option<(i64, Option<tirc_parser::ast::Span>)> = None;
        f.body.walk(&mut |s| {
            if let Stmt::For(l) = s {
                if let (ForKind::ThreadBinding(t), Some(e)) = (l.kind, l.extent.as_int()) {
                    if !t.is_block && widest.is_none_or(|(w, _)| e > w) {
                        widest = Some((e, l.span));
                    }
                }
            }
        });
        return Err(Diagnostic::new(format!(
            "the kernel launches {threads} threads per block; {} allows {}",
            target.arch(),
            target.max_threads_per_block
        ))
        .or_at_ir(widest.and_then(|w| w.1), "the widest loop bound to a thread axis"));
    }
    check_shared_memory(&f, target)?;
    min_blocks_per_sm(&mut f, threads, target)?;
    // In order of first appearance, run-time extents included.
    let mut order: Vec<ThreadTag> = Vec::new();
    f.body.walk(&mut |s| {
        if let Stmt::Launch { tag, .. } = s {
            if !order.contains(tag) {
                order.push(*tag);
            }
        }
    });
    f.body.walk(&mut |s| {
        if let Stmt::For(l) = s {
            if let ForKind::ThreadBinding(t) = l.kind {
                if !order.contains(&t) {
                    order.push(t);
                }
            }
        }
    });
    let vars: Vec<(ThreadTag, Var, Expr)> = order
        .iter()
        .filter_map(|t| {
            let e = axes.iter().find(|(x, _)| x == t).map(|(_, e)| Expr::int(*e));
            let e = e.or_else(|| sized.iter().find(|(x, _)| x == t).map(|(_, e)| e.clone()))?;
            Some((*t, Var::new(t.var_name(), DType::I32), e))
        })
        .collect();
    // Existing launches (pasted lowered code) are unwrapped and merged too.
    let body = extract(&f.body, &vars);
    let mut out = body;
    for (tag, v, e) in vars.iter().rev() {
        out = Stmt::Launch { var: v.clone(), tag: *tag, extent: e.clone(), body: Box::new(out) };
    }
    f.body = out;
    // Loops bound to one thread axis are now one variable: a thread's own
    // buffer that they indexed takes one thread's tile.
    Ok(super::compact_buffers::per_thread_after_launch(f))
}

/// Moves the `min_blocks_per_sm` annotations of bound loops into the
/// function's attribute of that name, after checking them (see the top of
/// this file).
fn min_blocks_per_sm(f: &mut PrimFunc, threads: i64, target: &Target) -> Result<(), Diagnostic> {
    let mut found: Option<(i64, Option<tirc_parser::ast::Span>)> =
        f.attrs.iter().find(|(k, _)| k == MIN_BLOCKS_PER_SM).map(|(_, v)| (v.as_int().unwrap_or(0), f.span));
    let mut err = None;
    f.body.walk(&mut |s| {
        let Stmt::For(l) = s else { return };
        let Some((_, v)) = l.annotations.iter().find(|(k, _)| k == MIN_BLOCKS_PER_SM) else { return };
        let n = v.as_int().unwrap_or(0);
        let bad = if !matches!(l.kind, ForKind::ThreadBinding(_)) {
            Some(format!(
                "`{MIN_BLOCKS_PER_SM}` annotates the loop `{}`, which is bound to no GPU axis: it is a hint for the \
                 kernel's launch, given on a loop bound to blockIdx or threadIdx",
                l.var.name()
            ))
        } else {
            match found {
                Some((old, _)) if old != n => Some(format!("`{MIN_BLOCKS_PER_SM}` is given twice, as {old} and {n}")),
                _ => None,
            }
        };
        if let Some(msg) = bad {
            err.get_or_insert(Diagnostic::new(msg).or_at_ir(l.span, "this loop"));
        }
        found = Some((n, l.span));
    });
    if let Some(e) = err {
        return Err(e);
    }
    let Some((n, span)) = found else { return Ok(()) };
    if n < 1 {
        return Err(Diagnostic::new(format!("`{MIN_BLOCKS_PER_SM}` must be a positive integer"))
            .or_at_ir(span, "the annotated loop"));
    }
    if threads.saturating_mul(n) > target.max_threads_per_sm {
        return Err(Diagnostic::new(format!(
            "`{MIN_BLOCKS_PER_SM}` asks for {n} blocks of {threads} threads on one multiprocessor; {} keeps at most \
             {} threads on one",
            target.arch(),
            target.max_threads_per_sm
        ))
        .or_at_ir(span, "the annotated loop"));
    }
    f.body = strip_hint(&f.body);
    f.attrs.retain(|(k, _)| k != MIN_BLOCKS_PER_SM);
    f.attrs.push((MIN_BLOCKS_PER_SM.to_string(), tirc_ir::Attr::Int(n)));
    Ok(())
}

/// `s` without the `min_blocks_per_sm` annotations of its loops.
fn strip_hint(s: &Stmt) -> Stmt {
    match s {
        Stmt::For(l) if l.annotations.iter().any(|(k, _)| k == MIN_BLOCKS_PER_SM) => {
            let mut l = l.with_body(strip_hint(&l.body));
            l.annotations.retain(|(k, _)| k != MIN_BLOCKS_PER_SM);
            Stmt::For(Box::new(l))
        }
        _ => s.map_children(strip_hint),
    }
}

/// The shared memory the kernel allocates (each buffer at a 16-byte
/// aligned offset, as code generation lays them out) must fit in what one
/// thread block may have on the target.
fn check_shared_memory(f: &PrimFunc, target: &Target) -> Result<(), Diagnostic> {
    let (layout, tiles) = tirc_ir::launch::shared_layout(&f.body);
    // A warp-specialized kernel's mbarriers, after the tiles.
    let barriers = tirc_ir::launch::mbarrier_bytes(&f.body);
    let total = if barriers > 0 { tiles.div_ceil(8) * 8 + barriers } else { tiles };
    if total <= target.max_shared_per_block {
        return Ok(());
    }
    // Each buffer's bytes (the branches of a partitioned kernel share
    // their space, so offsets alone do not say).
    let mut list: Vec<String> = layout
        .iter()
        .map(|(b, _)| format!("`{}` {}", b.name(), b.num_elements().unwrap_or(0).max(0) as usize * b.dtype().bytes()))
        .collect();
    if barriers > 0 {
        list.push(format!("the warp-specialized loop's mbarriers {barriers}"));
    }
    Err(Diagnostic::new(format!(
        "the kernel needs {total} bytes of shared memory ({}), more than the {} a thread block can have on {}",
        list.join(", "),
        target.max_shared_per_block,
        target.arch()
    ))
    .help("use smaller tiles or fewer pipeline stages, or compile for a GPU with more shared memory (--arch)"))
}

/// `s` with every bound loop and launch replaced by its body, speaking of
/// the launch variables.
fn extract(s: &Stmt, vars: &[(ThreadTag, Var, Expr)]) -> Stmt {
    let axis = |t: &ThreadTag| vars.iter().find(|(x, _, _)| x == t);
    match s {
        Stmt::For(l) => {
            let ForKind::ThreadBinding(t) = l.kind else {
                return s.map_children(|c| extract(c, vars));
            };
            let Some((_, v, ext)) = axis(&t) else { return s.clone() };
            // A loop from `min` (`T.thread_binding(3, 16, ..)`) runs its
            // iteration `min + i` on thread `i`.
            let at = if l.min.as_int() == Some(0) { Expr::var(v) } else { Expr::var(v) + l.min.clone() };
            let body = substitute_stmt(&extract(&l.body, vars), &[(l.var.clone(), at)]);
            match (l.extent.as_int(), ext.as_int()) {
                (Some(e), Some(x)) if e < x => Stmt::if_then(Expr::binary(BinOp::Lt, Expr::var(v), Expr::int(e)), body),
                _ => body,
            }
        }
        Stmt::Launch { var, tag, body, .. } => {
            let Some((_, v, _)) = axis(tag) else { return s.clone() };
            substitute_stmt(&extract(body, vars), &[(var.clone(), Expr::var(v))])
        }
        _ => s.map_children(|c| extract(c, vars)),
    }
}
