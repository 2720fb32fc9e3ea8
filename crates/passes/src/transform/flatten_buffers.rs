//! `flatten_buffers`: every buffer becomes one-dimensional, row-major.
//!
//! `C[i, j]` of a `(M, N)` buffer becomes `C[i * N + j]` of a `(M * N,)`
//! buffer, for parameters and allocations alike. The indices are left for
//! `simplify` to put in canonical form.
//!
//! A buffer with padded strides (`dim_align`, from `sch.storage_align`) is
//! laid out with them: `S[i, j]` of a `(32, 32)` buffer whose row stride is
//! padded to 33 becomes `S[i * 33 + j]` of a `(1056,)` buffer (the outermost
//! stride times the outermost extent). Its shape must be constant then.
//!
//! A tensor-core tile (`tirc_ir::wmma`) becomes the offset of its first
//! element and gets its row stride (`ldm`), which the shape held until now.

use tirc_ir::{Buffer, Diagnostic, Expr, PrimFunc, Stmt};

pub fn run(mut f: PrimFunc) -> Result<PrimFunc, Diagnostic> {
    let mut map: Vec<(Buffer, Buffer)> = Vec::new();
    let mut bad = None;
    let mut flat = |b: &Buffer, map: &mut Vec<(Buffer, Buffer)>| -> Buffer {
        if let Some((_, n)) = map.iter().find(|(o, _)| o == b) {
            return n.clone();
        }
        let n = if !b.dim_align().is_empty() {
            match b.alloc_elements() {
                Some(size) => b.with(|n| {
                    n.shape = vec![Expr::int(size)];
                    n.dim_align.clear();
                }),
                None => {
                    bad.get_or_insert_with(|| {
                        Diagnostic::new(format!(
                            "`{}` has padded strides (storage_align) but no constant shape to lay them out on",
                            b.name()
                        ))
                    });
                    b.clone()
                }
            }
        } else if b.ndim() == 1 {
            b.clone()
        } else {
            let size = b.shape().iter().cloned().reduce(|a, x| a * x).unwrap_or(Expr::int(1));
            let size = crate::arith::Analyzer::new().simplify(&size);
            b.with(|n| n.shape = vec![size])
        };
        map.push((b.clone(), n.clone()));
        n
    };
    f.params = f.params.iter().map(|b| flat(b, &mut map)).collect();
    let mut err = None;
    f.body = f.body.rewrite(&mut |s| {
        if let Stmt::Allocate { buffer, .. } = s {
            flat(buffer, &mut map);
        }
        if let Stmt::Block(_) = s {
            err = Some(Diagnostic::new("flatten_buffers runs after lower_blocks: blocks are left"));
        }
        None
    });
    if let Some(e) = err.or(bad) {
        return Err(e);
    }
    f.body = rewrite_accesses(&f.body, &map);
    Ok(f)
}

/// The distance between consecutive rows (the second-to-last index) of `b`.
fn row_stride(b: &Buffer) -> Option<Expr> {
    if b.ndim() < 2 {
        return None;
    }
    if let (false, Some(strides)) = (b.dim_align().is_empty(), b.strides()) {
        return Some(Expr::int(strides[strides.len() - 2]));
    }
    b.shape().last().cloned()
}

fn linear(b: &Buffer, idx: &[Expr]) -> Vec<Expr> {
    if let (false, Some(strides)) = (b.dim_align().is_empty(), b.strides()) {
        let terms = idx.iter().zip(strides).map(|(i, s)| if s == 1 { i.clone() } else { i.clone() * Expr::int(s) });
        return vec![terms.reduce(|a, t| a + t).unwrap_or(Expr::int(0))];
    }
    if idx.is_empty() {
        // A buffer of no dimensions holds one element.
        return vec![Expr::int(0)];
    }
    if idx.len() == 1 {
        return idx.to_vec();
    }
    let mut acc = idx[0].clone();
    for (i, d) in idx.iter().zip(b.shape()).skip(1) {
        acc = acc * d.clone() + i.clone();
    }
    vec![acc]
}

fn expr(e: &Expr, map: &[(Buffer, Buffer)]) -> Expr {
    match e {
        Expr::Load(b, idx) => {
            let idx: Vec<Expr> = idx.iter().map(|i| expr(i, map)).collect();
            match map.iter().find(|(o, _)| o == b) {
                Some((o, n)) => Expr::Load(n.clone(), linear(o, &idx)),
                None => Expr::Load(b.clone(), idx),
            }
        }
        _ => e.map_children(|c| expr(c, map)),
    }
}

fn rewrite_accesses(s: &Stmt, map: &[(Buffer, Buffer)]) -> Stmt {
    let s = s.map_children(|c| rewrite_accesses(c, map));
    let s = match s {
        Stmt::Store { buffer, indices, value } => match map.iter().find(|(o, _)| *o == buffer) {
            Some((o, n)) => Stmt::Store { buffer: n.clone(), indices: linear(o, &indices), value },
            None => Stmt::Store { buffer, indices, value },
        },
        Stmt::Allocate { buffer, body } => match map.iter().find(|(o, _)| *o == buffer) {
            Some((_, n)) => Stmt::Allocate { buffer: n.clone(), body },
            None => Stmt::Allocate { buffer, body },
        },
        // A tensor-core tile: its first element's offset, and the distance
        // between its rows made explicit.
        Stmt::Wmma(mut w) => {
            for t in &mut w.tiles {
                t.indices = t.indices.iter().map(|i| expr(i, map)).collect();
                if let Some((o, n)) = map.iter().find(|(o, _)| *o == t.buffer) {
                    if t.ldm.is_none() {
                        t.ldm = row_stride(o);
                    }
                    t.indices = linear(o, &t.indices);
                    t.buffer = n.clone();
                }
            }
            Stmt::Wmma(w)
        }
        s => s,
    };
    // Expressions of this statement only; children are done.
    match s {
        Stmt::Store { buffer, indices, value } => {
            Stmt::Store { buffer, indices: indices.iter().map(|i| expr(i, map)).collect(), value: expr(&value, map) }
        }
        Stmt::If { cond, then, orelse } => Stmt::If { cond: expr(&cond, map), then, orelse },
        Stmt::Let { var, value, body } => Stmt::Let { var, value: expr(&value, map), body },
        Stmt::For(mut l) => {
            l.min = expr(&l.min, map);
            l.extent = expr(&l.extent, map);
            Stmt::For(l)
        }
        s => s,
    }
}
