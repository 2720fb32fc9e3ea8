//! `split_kernels`: a function whose loop nests are bound to GPU threads
//! separately becomes several kernels, launched in order.
//!
//! Thread blocks of one kernel cannot wait for one another, so a nest that
//! reads what another nest wrote must start after that nest has finished on
//! every block: TVM launches one kernel per such region. When
//! `check_one_kernel` (below) finds that the function needs more
//! than one kernel, each top-level statement of its root block (a loop nest)
//! becomes a function of its own, in order. The root's global buffers (the
//! intermediates between nests) become parameters of every kernel, after the
//! function's own, which the launcher allocates once; its other buffers
//! (shared, local) go to the kernel that uses them, or, where two kernels
//! use one, to global memory as an intermediate. A nest bound to no GPU
//! axis runs on one thread. A function one kernel can run stays one
//! kernel; its root's global buffers are intermediates all the same
//! (allocated by the launcher, kept after the run, so that a function whose
//! results stay in them can be checked).

use tirc_ir::resolve::root_block;
use tirc_ir::subst::replace_buffers_stmt;
use tirc_ir::{Buffer, Diagnostic, ForKind, PrimFunc, Scope, Stmt};

/// The kernels of `f` in launch order, and the intermediates each takes
/// after `f`'s parameters.
pub fn split_kernels(f: &PrimFunc) -> (Vec<PrimFunc>, Vec<Buffer>) {
    if check_one_kernel(f).is_ok() {
        let (k, globals) = lift_root_globals(f);
        return (vec![k], globals);
    }
    let (allocs, body) = match &f.body {
        Stmt::Block(root) if root.block.name == "root" => (root.block.alloc_buffers.clone(), &root.block.body),
        body => (vec![], body),
    };
    let mut items = Vec::new();
    flatten(body, &mut items);
    // A shared or local buffer that two kernels use must outlive the first:
    // it moves to global memory, as an intermediate.
    let mut moved: Vec<(Buffer, Buffer)> = Vec::new();
    let mut intermediates = Vec::new();
    let mut local = Vec::new();
    for b in allocs {
        if b.scope() == Scope::Global {
            intermediates.push(b);
        } else if items.iter().filter(|s| s.uses_buffer(&b)).count() > 1 {
            let g = b.with(|n| n.scope = Scope::Global);
            moved.push((b, g.clone()));
            intermediates.push(g);
        } else {
            local.push(b);
        }
    }
    if !moved.is_empty() {
        items = items.iter().map(|s| replace_buffers_stmt(s, &moved)).collect();
    }
    let mut params = f.params.clone();
    params.extend(intermediates.iter().cloned());
    let kernels = items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let used: Vec<Buffer> = local.iter().filter(|b| item.uses_buffer(b)).cloned().collect();
            PrimFunc {
                name: if i == 0 { f.name.clone() } else { format!("{}_{i}", f.name) },
                params: params.clone(),
                sizes: f.sizes.clone(),
                scalars: f.scalars.clone(),
                attrs: f.attrs.clone(),
                signature: f.signature.clone(),
                body: root_block(item, used),
                span: f.span,
                facts: f.facts.clone(),
            }
        })
        .collect();
    (kernels, intermediates)
}

/// `f` as one kernel that takes its root's global buffers as parameters
/// after its own, and those buffers.
pub fn lift_root_globals(f: &PrimFunc) -> (PrimFunc, Vec<Buffer>) {
    let Stmt::Block(root) = &f.body else { return (f.clone(), vec![]) };
    if root.block.name != "root" || root.block.alloc_buffers.iter().all(|b| b.scope() != Scope::Global) {
        return (f.clone(), vec![]);
    }
    let (globals, rest): (Vec<Buffer>, Vec<Buffer>) =
        root.block.alloc_buffers.iter().cloned().partition(|b| b.scope() == Scope::Global);
    let mut root = root.clone();
    root.block.alloc_buffers = rest;
    let mut params = f.params.clone();
    params.extend(globals.iter().cloned());
    (PrimFunc { params, body: Stmt::Block(root), ..f.clone() }, globals)
}

fn flatten(s: &Stmt, out: &mut Vec<Stmt>) {
    match s {
        Stmt::Seq(v) => v.iter().for_each(|x| flatten(x, out)),
        Stmt::NoOp => {}
        s => out.push(s.clone()),
    }
}

/// The function's top-level statements, under its allocations: the loop
/// nests that run one after another.
fn top_level(s: &Stmt) -> Vec<&Stmt> {
    match s {
        Stmt::Seq(v) => v.iter().flat_map(top_level).collect(),
        Stmt::Allocate { body, .. } | Stmt::Let { body, .. } => top_level(body),
        Stmt::Block(r) if r.block.name == "root" => top_level(&r.block.body),
        Stmt::NoOp => vec![],
        s => vec![s],
    }
}

/// The first loop bound to a GPU axis in `s`, by name, or a launch.
fn first_binding(s: &Stmt) -> Option<String> {
    let mut found = None;
    s.walk(&mut |x| {
        if found.is_none() {
            match x {
                Stmt::For(l) if matches!(l.kind, ForKind::ThreadBinding(_)) => {
                    found = Some(format!("`{}`", l.var.name()))
                }
                Stmt::Launch { tag, .. } => found = Some(tag.name().to_string()),
                _ => {}
            }
        }
    });
    found
}

/// One kernel cannot hold loop nests that must finish one before the next
/// starts on every thread block: a nest bound to GPU axes beside another
/// nest (bound or not) would read what other blocks have not yet written.
pub fn check_one_kernel(f: &PrimFunc) -> Result<(), Diagnostic> {
    let items = top_level(&f.body);
    let bound: Vec<(usize, String)> =
        items.iter().enumerate().filter_map(|(i, s)| first_binding(s).map(|b| (i, b))).collect();
    if bound.is_empty() || items.len() == 1 {
        return Ok(());
    }
    let what = |s: &Stmt| {
        let mut blocks = Vec::new();
        s.walk(&mut |x| {
            if let Stmt::Block(r) = x {
                blocks.push(format!("`{}`", r.block.name));
            }
        });
        match (s, blocks.is_empty()) {
            (_, false) => format!("the loop nest of block {}", blocks.join(", ")),
            (Stmt::For(l), true) => format!("the loop nest of `{}`", l.var.name()),
            _ => "a statement".to_string(),
        }
    };
    let (first, b) = &bound[0];
    let other = items.iter().enumerate().find(|(i, _)| i != first).map(|(_, s)| what(s)).unwrap_or_default();
    let span = match items[*first] {
        Stmt::For(l) => l.span,
        s => s.blocks().first().and_then(|r| r.block.span),
    };
    Err(Diagnostic::new(format!(
        "{} is bound to GPU threads ({b}) and runs beside {other}: these need one kernel each, launched in \
         order, and this function cannot be split into kernels here",
        what(items[*first]),
    ))
    .help("put the nests under one bound loop (compute_at, fuse), or at the top of the function")
    .or_at_ir(span, "this nest"))
}
