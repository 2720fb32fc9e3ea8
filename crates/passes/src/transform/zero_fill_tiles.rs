//! `zero_fill_tiles`: a tile copied into shared memory holds zeros where
//! its source is out of range, and the multiply-adds that read it need no
//! test along the reduction.
//!
//! At the edge of a shape, the copy of a tile skips the elements past the
//! end of its source (`if k_0 * 32 + c < K: A_shared[r, c] = A[..,
//! k_0 * 32 + c]`), and the update that reads the tile is guarded the same
//! way (`if k_0 * 32 + k_1 < K: C_local[..] = C_local[..] + A_shared[..,
//! k_1] * B_shared[k_1, ..]`), inside its innermost loop. This pass makes
//! the copy write a zero where it skipped (`A_shared[r, c] =
//! T.if_then_else(k_0 * 32 + c < K, A[.., k_0 * 32 + c], 0)`: a `cp.async`
//! with a source size of 0 once it is asynchronous, a select when it is
//! not), and drops the test from the update, which then adds `0 * 0` where
//! it used to do nothing.
//!
//! A copy is a perfect nest of loops of constant bounds around `[if g:]
//! S[d] = G[s]`, `S` in shared memory and `G` global, of one type. It must
//! also meet these conditions:
//! - it is the only store to `S` in the function;
//! - `d` depends on the nest's variables only, and `s - d` on none of
//!   them, on no thread index and on no load (the tile is the window of
//!   `G` at that offset, the same for every thread of the block);
//! - every conjunct of `g` is `s_k < G.shape[k]` or `s_k >= 0` for a
//!   dimension `k`;
//! - the nest writes every element of `S` (counted by running it).
//!
//! Then, once the copy has run, `S[e]` is `G[offset + e]` where that is in
//! range, and 0 where it is out of range in one of those dimensions.
//!
//! A later statement of the same sequence may hold an update `if c: L[i] =
//! L[i] + x` of a local buffer `L`, where `x` is a product of (cast) loads
//! of such tiles and at most one constant, finite in its type. The tile
//! must not be written again in between. A conjunct of `c` is dropped when,
//! for every load among the factors, it is the bound `offset_k + e_k <
//! G.shape[k]` of that tile in one of its zero-filled dimensions. Where it
//! is false, every loaded factor is 0 and `x` is 0 (not a NaN: no factor is
//! infinite). There must be one load at least. The update must also stay
//! inside its buffers where the conjunct is false. The other conjuncts
//! stay. A tile is filled with zeros only where every read of it in the
//! function is such an update: a zero where another reader expected what
//! was there before would change that reader's result. Tests are then
//! dropped with those tiles only (a first scan finds them, a second drops).
//! A copy is rewritten only where an update drops a conjunct thanks to it.
//!
//! Only a bound on a run-time extent (`K` a size variable) is dropped.
//! Inside a virtual thread, a copy whose tile every reader reads so is
//! filled with zeros even where no test is dropped: the copy then has no
//! test, and `inject_virtual_thread` can run it once for every virtual
//! thread (the updates keep their tests, so the zeros are never used).
//! Against a constant extent, `loop_partition` and the CUDA compiler already
//! run the partial tile's iterations, and only those, with no test (7 of 32
//! at K = 999); filling zeros would run all 32, and measured 4-7% slower
//! there (docs/benchmarks.md, "Zero-filled tiles").

use crate::arith::{all_of, conjuncts, eval, Analyzer};
use std::collections::HashMap;
use tirc_ir::structural_eq::same_expr;
use tirc_ir::{BinOp, Buffer, Diagnostic, Expr, For, ForKind, PrimFunc, Scope, Stmt, Var};

/// The most iterations of a copy's nest counted to check that it writes
/// its whole tile.
const MAX_COPY_ITERATIONS: i64 = 1 << 18;

pub fn run(mut f: PrimFunc) -> Result<PrimFunc, Diagnostic> {
    let mut cx = Context {
        an: Analyzer::new(),
        stores: HashMap::new(),
        loads: HashMap::new(),
        threads: Vec::new(),
        vthreads: 0,
    };
    cx.an.bind_sizes(&f.sizes);
    f.body.walk(&mut |s| {
        match s {
            Stmt::Store { buffer, .. } => *cx.stores.entry(buffer.key()).or_default() += 1,
            // A tensor-core operation reads (or writes) its tiles whole: a
            // read of a tile that no update of the accepted form makes.
            Stmt::Wmma(w) => w.tiles.iter().for_each(|t| *cx.loads.entry(t.buffer.key()).or_default() += 1),
            _ => {}
        }
        s.for_each_expr(|e| {
            e.walk(&mut |x| {
                if let Expr::Load(b, _) = x {
                    *cx.loads.entry(b.key()).or_default() += 1;
                }
            })
        });
    });
    f.body = walk(&f.body, &mut cx);
    Ok(f)
}

/// What the walk knows: the ranges, how many stores to and loads of each
/// buffer the function makes (by key), and the variables of the loops
/// bound to thread indices around the point of the walk.
struct Context {
    an: Analyzer,
    stores: HashMap<usize, usize>,
    loads: HashMap<usize, usize>,
    threads: Vec<Var>,
    /// How many virtual-thread loops are around the point of the walk.
    vthreads: usize,
}

/// A tile that a copy fills, zeros past the edge of its source.
struct Tile {
    buffer: Buffer,
    /// `source index - tile index`, per dimension.
    offset: Vec<Expr>,
    /// The dimensions whose bound the copy tests, with the source's extent.
    bounds: Vec<(usize, Expr)>,
}

fn walk(s: &Stmt, cx: &mut Context) -> Stmt {
    match s {
        Stmt::For(l) => {
            cx.an.bind_range(&l.var, &l.min, &l.extent);
            let thread = matches!(l.kind, ForKind::ThreadBinding(t) if !t.is_block);
            if thread {
                cx.threads.push(l.var.clone());
            }
            cx.vthreads += l.is_vthread() as usize;
            let body = walk(&l.body, cx);
            cx.vthreads -= l.is_vthread() as usize;
            if thread {
                cx.threads.pop();
            }
            cx.an.unbind(&l.var);
            Stmt::For(Box::new(l.with_body(body)))
        }
        Stmt::Launch { var, tag, extent, body } => {
            cx.an.bind_launch(var, extent);
            if !tag.is_block {
                cx.threads.push(var.clone());
            }
            let body = walk(body, cx);
            if !tag.is_block {
                cx.threads.pop();
            }
            cx.an.unbind(var);
            Stmt::Launch { var: var.clone(), tag: *tag, extent: extent.clone(), body: Box::new(body) }
        }
        Stmt::Seq(v) => sequence(v, cx),
        _ => s.map_children(|c| walk(c, cx)),
    }
}

/// The statements of a sequence, the copies that fill tiles followed by
/// the updates that read them. A first scan finds the tiles whose every
/// read in the function is an update of the accepted form (a zero where
/// another reader expected what was there before would change its
/// result); the second drops tests with those tiles only, so that a
/// dropped test never leans on a tile left unfilled.
fn sequence(v: &[Stmt], cx: &mut Context) -> Stmt {
    let out: Vec<Stmt> = v.iter().map(|s| walk(s, cx)).collect();
    let all = vec![true; out.len()];
    let (_, _, covered) = scan(&out, &all, cx);
    let eligible: Vec<bool> = out
        .iter()
        .zip(&covered)
        .map(|(s, n)| copy_target(s).is_some_and(|b| cx.loads.get(&b.key()) == Some(n)))
        .collect();
    let (mut out, used, _) = scan(&out, &eligible, cx);
    // Inside a virtual thread, every tile that may be is filled: a copy
    // with no test is one `inject_virtual_thread` can run once for all of
    // them (a tested one leaves elements that one virtual thread may find
    // as another left them).
    let vthread = cx.vthreads > 0;
    for ((s, used), eligible) in out.iter_mut().zip(used).zip(eligible) {
        if used || vthread && eligible && copy_tile(s, cx).is_some() {
            *s = zero_fill(s);
        }
    }
    Stmt::Seq(out)
}

/// One pass over a sequence with the copies at the positions `allowed`
/// lets fill tiles: the statements with the tests those tiles make
/// needless dropped, and per position whether its copy made one so and how
/// many loads of its tile the updates of the accepted form make.
fn scan(v: &[Stmt], allowed: &[bool], cx: &mut Context) -> (Vec<Stmt>, Vec<bool>, Vec<usize>) {
    let mut out = v.to_vec();
    // The tiles filled so far, by the position of their copy.
    let mut live: Vec<(usize, Tile)> = Vec::new();
    let mut used = vec![false; out.len()];
    let mut covered = vec![0usize; out.len()];
    for (i, s) in out.iter_mut().enumerate() {
        // A statement that writes a tile ends what is known of it, for
        // its own reads too.
        let written = writes(s);
        live.retain(|(_, t)| !written.contains(&t.buffer.key()));
        if !live.is_empty() {
            let tiles: Vec<&Tile> = live.iter().map(|(_, t)| t).collect();
            let mut seen = Seen { hits: vec![false; tiles.len()], loads: vec![0; tiles.len()] };
            *s = drop_guards(s, &tiles, &mut seen, &mut cx.an);
            for (k, (copy, _)) in live.iter().enumerate() {
                used[*copy] |= seen.hits[k];
                covered[*copy] += seen.loads[k];
            }
        }
        if allowed[i] {
            if let Some(t) = copy_tile(s, cx) {
                live.push((i, t));
            }
        }
    }
    (out, used, covered)
}

/// The buffers a statement stores to, by key.
fn writes(s: &Stmt) -> Vec<usize> {
    let mut out = Vec::new();
    s.walk(&mut |x| match x {
        Stmt::Store { buffer, .. } => out.push(buffer.key()),
        Stmt::Wmma(w) => out.push(w.write().buffer.key()),
        _ => {}
    });
    out
}

/// The loops of a perfect nest and the statement inside it.
fn nest(s: &Stmt) -> (Vec<&For>, &Stmt) {
    let (mut loops, mut cur) = (Vec::new(), s);
    while let Stmt::For(l) = cur {
        loops.push(&**l);
        cur = &l.body;
    }
    (loops, cur)
}

/// The buffer a copy of the form `copy_tile` takes writes.
fn copy_target(s: &Stmt) -> Option<&Buffer> {
    let (_, inner) = nest(s);
    match inner {
        Stmt::If { then, orelse: None, .. } => match &**then {
            Stmt::Store { buffer, .. } => Some(buffer),
            _ => None,
        },
        _ => None,
    }
}

/// The tile `s` fills, when it is a copy of the form in the header, the
/// only store to its tile in the function, at an offset of no thread
/// index (other threads write the elements one thread reads) and no load.
fn copy_tile(s: &Stmt, cx: &mut Context) -> Option<Tile> {
    let (loops, inner) = nest(s);
    let Stmt::If { cond, then, orelse: None } = inner else { return None };
    let Stmt::Store { buffer, indices, value: Expr::Load(src, sidx) } = &**then else { return None };
    let numeric = buffer.dtype().is_float() || buffer.dtype().is_int() && !buffer.dtype().is_bool();
    if cx.stores.get(&buffer.key()) != Some(&1) {
        return None;
    }
    let an = &mut cx.an;
    let threads = &cx.threads;
    if buffer.scope() != Scope::Shared
        || src.scope() != Scope::Global
        || src.dtype() != buffer.dtype()
        || !numeric
        || sidx.len() != indices.len()
        || src.shape().len() != indices.len()
    {
        return None;
    }
    let shape: Vec<i64> = buffer.shape().iter().map(Expr::as_int).collect::<Option<_>>()?;
    let mut ranges = Vec::new();
    for l in &loops {
        ranges.push((l.var.clone(), l.min.as_int()?, l.extent.as_int()?));
    }
    for l in &loops {
        an.bind_range(&l.var, &l.min, &l.extent);
    }
    let tile = (|| {
        let inside = |e: &Expr| ranges.iter().any(|(v, _, _)| e.uses(v)) || threads.iter().any(|v| e.uses(v));
        let mut offset = Vec::new();
        for (d, s) in indices.iter().zip(sidx) {
            let o = an.simplify(&(s.clone() - d.clone()));
            let mut loads = false;
            o.walk(&mut |x| loads |= matches!(x, Expr::Load(..)));
            if inside(&o) || loads {
                return None;
            }
            offset.push(o);
        }
        let mut bounds = Vec::new();
        for c in conjuncts(cond) {
            // `s_k >= 0`, which run-time shapes add, is a bound too.
            if let Expr::Binary(BinOp::Ge, a, z) = &c {
                if z.is_zero() && (0..sidx.len()).any(|k| zero(an, &(a.as_ref().clone() - sidx[k].clone()))) {
                    continue;
                }
            }
            let Expr::Binary(BinOp::Lt, a, b) = &c else { return None };
            let k = (0..sidx.len()).find(|&k| {
                zero(an, &(a.as_ref().clone() - sidx[k].clone()))
                    && zero(an, &(b.as_ref().clone() - src.shape()[k].clone()))
            })?;
            bounds.push((k, src.shape()[k].clone()));
        }
        (!bounds.is_empty()).then_some(Tile { buffer: buffer.clone(), offset, bounds })
    })();
    for l in &loops {
        an.unbind(&l.var);
    }
    let tile = tile?;
    covers(indices, &ranges, &shape).then_some(tile)
}

/// Whether every index is proved inside its dimension of `b`.
fn in_bounds(b: &Buffer, idx: &[Expr], an: &Analyzer) -> bool {
    idx.len() == b.shape().len()
        && idx.iter().zip(b.shape()).all(|(i, n)| {
            an.prove(&Expr::binary(BinOp::Ge, i.clone(), Expr::int(0))) == Some(true)
                && an.prove(&Expr::binary(BinOp::Lt, i.clone(), n.clone())) == Some(true)
        })
}

fn zero(an: &Analyzer, e: &Expr) -> bool {
    an.simplify(e).as_int() == Some(0)
}

/// Whether the indices, over every iteration of the loops, reach every
/// element of a buffer of this shape (and no element outside it).
fn covers(indices: &[Expr], ranges: &[(Var, i64, i64)], shape: &[i64]) -> bool {
    let total: i64 = ranges.iter().map(|r| r.2.max(0)).product();
    let elements: i64 = shape.iter().product();
    if total > MAX_COPY_ITERATIONS || total < elements || elements <= 0 {
        return false;
    }
    let mut seen = vec![false; elements as usize];
    let mut at: Vec<i64> = ranges.iter().map(|r| r.1).collect();
    let by_key: HashMap<usize, usize> = ranges.iter().enumerate().map(|(n, r)| (r.0.key(), n)).collect();
    for _ in 0..total {
        let mut flat = 0;
        for (e, &extent) in indices.iter().zip(shape) {
            let Some(x) = eval(e, &|v| by_key.get(&v.key()).map(|&n| at[n])) else { return false };
            if !(0..extent).contains(&x) {
                return false;
            }
            flat = flat * extent + x;
        }
        seen[flat as usize] = true;
        for n in (0..at.len()).rev() {
            at[n] += 1;
            if at[n] < ranges[n].1 + ranges[n].2 {
                break;
            }
            at[n] = ranges[n].1;
        }
    }
    seen.into_iter().all(|x| x)
}

/// What `drop_guards` found, per tile: whether an update dropped a test
/// thanks to it, and how many loads of it the updates of the accepted form
/// make.
struct Seen {
    hits: Vec<bool>,
    loads: Vec<usize>,
}

/// `s` with the tests of its updates that the tiles make needless dropped.
fn drop_guards(s: &Stmt, tiles: &[&Tile], seen: &mut Seen, an: &mut Analyzer) -> Stmt {
    match s {
        Stmt::For(l) => {
            an.bind_range(&l.var, &l.min, &l.extent);
            let body = drop_guards(&l.body, tiles, seen, an);
            an.unbind(&l.var);
            Stmt::For(Box::new(l.with_body(body)))
        }
        Stmt::Store { buffer, indices, value } if buffer.scope() == Scope::Local => {
            // An update with no test reads the tiles where it did before.
            if let Some(loads) = update_loads(buffer, indices, value, tiles) {
                loads.iter().for_each(|(t, _)| seen.loads[*t] += 1);
            }
            s.clone()
        }
        Stmt::If { cond, then, orelse: None } => {
            if let Stmt::Store { buffer, indices, value } = &**then {
                if buffer.scope() == Scope::Local {
                    let loads = update_loads(buffer, indices, value, tiles);
                    // Run where the test fails, the update must still stay
                    // inside its buffers (a compacted tile may be shorter
                    // than the loop that reads it).
                    let inside = |b: &Buffer, idx: &[Expr]| in_bounds(b, idx, an);
                    if let Some(loads) = loads.filter(|ls| {
                        inside(buffer, indices) && ls.iter().all(|(t, idx)| inside(&tiles[*t].buffer, idx))
                    }) {
                        loads.iter().for_each(|(t, _)| seen.loads[*t] += 1);
                        let mut kept = Vec::new();
                        for c in conjuncts(cond) {
                            let by: Option<Vec<usize>> = loads
                                .iter()
                                .map(|(t, idx)| zero_where_false(&c, tiles[*t], idx, an).then_some(*t))
                                .collect();
                            match by {
                                Some(ts) if !ts.is_empty() => ts.into_iter().for_each(|t| seen.hits[t] = true),
                                _ => kept.push(c),
                            }
                        }
                        let store = (**then).clone();
                        return if kept.is_empty() {
                            store
                        } else {
                            Stmt::If { cond: all_of(kept), then: Box::new(store), orelse: None }
                        };
                    }
                }
            }
            s.map_children(|c| drop_guards(c, tiles, seen, an))
        }
        _ => s.map_children(|c| drop_guards(c, tiles, seen, an)),
    }
}

/// For `L[i] = L[i] + x` (or `x + L[i]`) with `x` a product of finite
/// constants and (cast) loads of the tiles, the loads: `(tile, indices)`.
fn update_loads(l: &Buffer, at: &[Expr], value: &Expr, tiles: &[&Tile]) -> Option<Vec<(usize, Vec<Expr>)>> {
    let Expr::Binary(BinOp::Add, a, b) = value else { return None };
    let is_self = |e: &Expr| matches!(e, Expr::Load(b, idx) if b == l && idx.len() == at.len() && idx.iter().zip(at).all(|(x, y)| same_expr(x, y)));
    let x = if is_self(a) {
        b
    } else if is_self(b) {
        a
    } else {
        return None;
    };
    let mut loads = Vec::new();
    factors(x, tiles, &mut loads, &mut 0)?;
    Some(loads)
}

/// The factors of a product: loads of the tiles, each maybe cast to a
/// number type, and at most one constant, finite in its own type (so that
/// no product of constants overflows to infinity before it meets a 0).
fn factors(e: &Expr, tiles: &[&Tile], out: &mut Vec<(usize, Vec<Expr>)>, constants: &mut usize) -> Option<()> {
    let load = |x: &Expr, out: &mut Vec<(usize, Vec<Expr>)>| match x {
        Expr::Load(b, idx) => {
            let t = tiles.iter().position(|t| t.buffer == *b)?;
            out.push((t, idx.clone()));
            Some(())
        }
        _ => None,
    };
    match e {
        Expr::Binary(BinOp::Mul, a, b) => {
            factors(a, tiles, out, constants)?;
            factors(b, tiles, out, constants)
        }
        Expr::Cast(t, x) if t.is_float() || t.is_int() && !t.is_bool() => load(x, out),
        Expr::Float(v, t) if *constants == 0 && finite_in(*v, *t) => {
            *constants += 1;
            Some(())
        }
        Expr::Int(..) if *constants == 0 && !e.dtype().is_bool() => {
            *constants += 1;
            Some(())
        }
        x => load(x, out),
    }
}

/// Whether `v` is finite once rounded to the float type `t`.
fn finite_in(v: f64, t: tirc_ir::DType) -> bool {
    let max = match t.bytes() {
        2 if t == tirc_ir::DType::F16 => 65504.0,
        2 => 3.389_531_389_251_535_5e38,
        4 => f32::MAX as f64,
        _ => f64::MAX,
    };
    v.is_finite() && v.abs() <= max
}

/// Whether `c` is `offset_k + idx_k < extent_k` for a dimension `k` the
/// tile fills with zeros past its source's edge: where `c` is false, the
/// element `idx` of the tile is 0.
fn zero_where_false(c: &Expr, t: &Tile, idx: &[Expr], an: &Analyzer) -> bool {
    let Expr::Binary(BinOp::Lt, a, b) = c else { return false };
    if idx.len() != t.offset.len() {
        return false;
    }
    t.bounds.iter().any(|(k, extent)| {
        extent.as_int().is_none()
            && zero(an, &(a.as_ref().clone() - (t.offset[*k].clone() + idx[*k].clone())))
            && zero(an, &(b.as_ref().clone() - extent.clone()))
    })
}

/// The copy `s` (of the form `copy_tile` takes) storing a zero where its
/// test fails, instead of skipping the element.
fn zero_fill(s: &Stmt) -> Stmt {
    match s {
        Stmt::For(l) => Stmt::For(Box::new(l.with_body(zero_fill(&l.body)))),
        Stmt::If { cond, then, orelse: None } => match &**then {
            Stmt::Store { buffer, indices, value } => {
                let zero = Expr::zero(buffer.dtype());
                let value = Expr::Select(Box::new(cond.clone()), Box::new(value.clone()), Box::new(zero));
                Stmt::Store { buffer: buffer.clone(), indices: indices.clone(), value }
            }
            _ => s.clone(),
        },
        _ => s.clone(),
    }
}
