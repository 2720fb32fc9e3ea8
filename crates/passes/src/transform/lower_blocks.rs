//! `lower_blocks`: blocks become plain code.
//!
//! Each block's iteration variables are replaced by the values they are
//! bound to, its predicate (`T.where`) becomes an `if` around its body, and
//! its allocated buffers become allocations around the body. Blocks must
//! have no init left (`lower_init` runs first). After this pass the function
//! holds loops, stores, conditionals and allocations only.
//!
//! A block's `buffer_dim_align` annotation (from `sch.storage_align`) would
//! go with the block, so it moves onto the buffer it names first: the
//! buffer written at that index gets the padding as its `dim_align`, for
//! `flatten_buffers` to lay it out with. A malformed annotation, or one that
//! names a parameter, is an error. Likewise a `double_buffer_scope`
//! annotation leaves the buffer it doubles in the function's
//! `facts.double_buffered`, for `inject_software_pipeline`, and the
//! buffers that carry values across loops (what a block with a reduction or
//! opaque variable writes, across the loops feeding it) are left in
//! `facts.carried`, for `compact_buffers`.

use tirc_ir::buffer::DIM_ALIGN_KEY as KEY;
use tirc_ir::region::block_buffers;
use tirc_ir::subst::{replace_buffers_stmt, substitute_stmt};
use tirc_ir::{Attr, BlockRealize, Buffer, BufferId, Diagnostic, DimAlign, Expr, IterKind, PrimFunc, Scope, Stmt, Var};

pub fn run(mut f: PrimFunc) -> Result<PrimFunc, Diagnostic> {
    let aligned = aligned_buffers(&f)?;
    for b in double_buffered(&f)? {
        if !f.facts.double_buffered.contains(&b) {
            f.facts.double_buffered.push(b);
        }
    }
    f.facts.carried = carried(&f);
    f.facts.from_blocks = !f.is_lowered_text();
    f.body = lower(&f.body);
    if !aligned.is_empty() {
        f.body = replace_allocs(&replace_buffers_stmt(&f.body, &aligned), &aligned);
    }
    Ok(f)
}

/// `s` with the allocations of the buffers of `map` replaced.
fn replace_allocs(s: &Stmt, map: &[(Buffer, Buffer)]) -> Stmt {
    s.rewrite(&mut |x| match x {
        Stmt::Allocate { buffer, body } => {
            let b = map.iter().find(|(o, _)| o == buffer).map_or(buffer.clone(), |(_, n)| n.clone());
            Some(Stmt::Allocate { buffer: b, body: Box::new(replace_allocs(body, map)) })
        }
        _ => None,
    })
}

/// Each buffer named by a `buffer_dim_align` annotation, and the same
/// buffer with the padding recorded on it.
fn aligned_buffers(f: &PrimFunc) -> Result<Vec<(Buffer, Buffer)>, Diagnostic> {
    let mut requests: Vec<(Buffer, Vec<DimAlign>)> = Vec::new();
    for r in f.body.blocks() {
        let Some((_, ann)) = r.block.annotations.iter().find(|(k, _)| k == KEY) else { continue };
        let bad = |why: String| {
            Diagnostic::new(format!("block `{}`: annotation \"{KEY}\" {why}", r.block.name))
                .help("it is a list of [buffer_index, axis, factor, offset], as sch.storage_align writes it")
                .or_at_ir(r.block.span, "this block")
        };
        let Attr::List(entries) = ann else { return Err(bad("is not a list".into())) };
        for e in entries {
            let ints: Option<Vec<i64>> = match e {
                Attr::List(v) => v.iter().map(Attr::as_int).collect(),
                _ => None,
            };
            let Some(&[index, axis, factor, offset]) = ints.as_deref() else {
                return Err(bad("has an entry that is not four integers".into()));
            };
            let b =
                written(r, index).ok_or_else(|| bad(format!("names write buffer {index}, which the block lacks")))?;
            // Padding never changes what a kernel computes. A buffer in
            // global memory keeps the compact layout its caller (or
            // tirc's runtime, for an intermediate) gives it: the request
            // is left out, and `unpadded_global_buffers` names it for a
            // warning.
            if b.scope() == Scope::Global || f.params.contains(&b) {
                continue;
            }
            let ndim = b.ndim() as i64;
            let axis = if axis < 0 { axis + ndim } else { axis };
            if !(0..ndim).contains(&axis) || factor <= 0 || !(0..factor).contains(&offset) {
                return Err(bad(format!(
                    "has a bad entry for `{}`: axis {axis}, factor {factor}, offset {offset}",
                    b.name()
                )));
            }
            let a = DimAlign { axis: axis as usize, factor, offset };
            match requests.iter_mut().find(|(x, _)| *x == b) {
                Some((_, v)) => {
                    v.retain(|x| x.axis != a.axis);
                    v.push(a);
                }
                None => {
                    let mut v: Vec<DimAlign> = b.dim_align().iter().filter(|x| x.axis != a.axis).copied().collect();
                    v.push(a);
                    requests.push((b, v));
                }
            }
        }
    }
    Ok(requests
        .into_iter()
        .map(|(b, mut v)| {
            v.sort_by_key(|a| a.axis);
            let n = b.with(|n| n.dim_align = v);
            (b, n)
        })
        .collect())
}

/// The buffers written at the index of a block's `double_buffer_scope`
/// annotation (as TVM's `sch.annotate(block, "double_buffer_scope", 0)`
/// asks).
fn double_buffered(f: &PrimFunc) -> Result<Vec<BufferId>, Diagnostic> {
    let mut names = Vec::new();
    for r in f.body.blocks() {
        let Some((_, ann)) = r.block.annotations.iter().find(|(k, _)| k == "double_buffer_scope") else { continue };
        let bad = |why: String| {
            Diagnostic::new(format!("block `{}`: \"double_buffer_scope\" {why}", r.block.name))
                .or_at_ir(r.block.span, "this block")
        };
        let index = ann.as_int().ok_or_else(|| bad("must be the index of a buffer the block writes".into()))?;
        let b = written(r, index).ok_or_else(|| bad(format!("names write buffer {index}, which the block lacks")))?;
        if f.params.contains(&b) {
            return Err(bad(format!("names `{}`, a parameter, which cannot be doubled", b.name())));
        }
        if !names.contains(&b.id()) {
            names.push(b.id());
        }
    }
    Ok(names)
}

/// Each buffer a block with a reduction or opaque variable writes, with
/// the loops that feed those variables: its value passes from one of their
/// iterations to the next (TVM keeps such a buffer's allocation above them).
fn carried(f: &PrimFunc) -> Vec<(BufferId, Vec<Var>)> {
    let mut out: Vec<(BufferId, Vec<Var>)> = Vec::new();
    for r in f.body.blocks() {
        let mut loops: Vec<Var> = Vec::new();
        for (iv, v) in r.block.iter_vars.iter().zip(&r.iter_values) {
            if iv.kind != IterKind::Spatial {
                v.walk(&mut |e| {
                    if let Expr::Var(x) = e {
                        if !loops.contains(x) {
                            loops.push(x.clone());
                        }
                    }
                });
            }
        }
        if loops.is_empty() {
            continue;
        }
        for b in block_buffers(r, false) {
            match out.iter_mut().find(|(id, _)| *id == b.id()) {
                Some((_, l)) => l.extend(loops.iter().filter(|x| !l.contains(x)).cloned().collect::<Vec<_>>()),
                None => out.push((b.id(), loops.clone())),
            }
        }
    }
    out
}

/// The buffers in global memory that a block's `buffer_dim_align`
/// annotation asks to pad (TVM's own tests pad a global intermediate),
/// with the block: the padding is not applied (see `aligned_buffers`).
pub fn unpadded_global_buffers(f: &PrimFunc) -> Vec<(Buffer, BlockRealize)> {
    let mut out = Vec::new();
    for r in f.body.blocks() {
        let Some((_, Attr::List(entries))) = r.block.annotations.iter().find(|(k, _)| k == KEY) else { continue };
        for e in entries {
            let index = match e {
                Attr::List(v) => v.first().and_then(Attr::as_int),
                _ => None,
            };
            if let Some(b) = index.and_then(|i| written(r, i)) {
                if b.scope() == Scope::Global && !out.iter().any(|(x, _): &(Buffer, _)| *x == b) {
                    out.push((b, r.clone()));
                }
            }
        }
    }
    out
}

fn written(r: &BlockRealize, index: i64) -> Option<Buffer> {
    let writes = block_buffers(r, false);
    usize::try_from(index).ok().and_then(|i| writes.get(i)).cloned()
}

fn lower(s: &Stmt) -> Stmt {
    s.rewrite(&mut |x| match x {
        Stmt::Block(r) => {
            let b = &r.block;
            let map: Vec<_> = b.iter_vars.iter().map(|iv| iv.var.clone()).zip(r.iter_values.iter().cloned()).collect();
            let mut body = substitute_stmt(&lower(&b.body), &map);
            if let Some(init) = &b.init {
                // Kept only when lower_init did not run: be correct anyway.
                body = Stmt::seq(vec![substitute_stmt(&lower(init), &map), body]);
            }
            for buf in b.alloc_buffers.iter().rev() {
                body = Stmt::Allocate { buffer: buf.clone(), body: Box::new(body) };
            }
            Some(Stmt::if_then(r.predicate.clone(), body))
        }
        _ => None,
    })
}
