//! `warp_specialize`: a software-pipelined loop that also carries
//! `"tirc.warp_specialize"` (`sch.annotate(k0, "tirc.warp_specialize", 1)`
//! beside `software_pipeline_stage`) becomes a producer–consumer loop for
//! Hopper (sm_90): its stage-0 statements, copies of tiles from global into
//! shared memory, become bulk tensor copies (`T.tma_load`, Hopper's TMA)
//! that one producer thread issues for the whole block; the statements of
//! the later stages stay with the block's threads, the consumers. Part of
//! `inject_software_pipeline`, which hands such a loop here instead of
//! expanding it.
//!
//! The loop is not written out into a prologue and an epilogue: it stays
//! one loop, each iteration the copies of its tiles then the statements
//! that read them, as if synchronous. What makes it a pipeline is its
//! annotation, `"tirc.warp_specialized": V`, which code generation reads:
//! the kernel gets a producer (a warpgroup with `wgmma`, a warp without),
//! whose first thread runs the loop's copies up to `V` iterations ahead of
//! the consumers, each iteration's copies completing on an `mbarrier` the
//! consumers wait on
//! ("full"), each tile version released by the consumers on another
//! ("empty") once they have read it. No block-wide barrier remains in the
//! loop. The simulator runs the loop as written, the copies of an
//! iteration landing before its readers.
//!
//! Each copied tile gets `V` versions (a leading dimension, iteration `k`
//! using `(k - min) % V`): one per stage from the copy's to its last
//! reader's, and one to spare when a `wgmma` reads it (its products stay in
//! flight one iteration, as in `inject_software_pipeline`).
//!
//! A copy becomes bulk tensor copies when it is a nest of loops of constant
//! extents (threads and vector lanes included) around one
//! `S[..] = G[..]`, whose source `G` is a parameter of constant shape with
//! rows of a multiple of 16 bytes, and whose element map, enumerated, is a
//! dense box of `G` (its position a sum of terms of the loops outside the
//! nest, the same for every thread; loops of one iteration count as their
//! value) laid out in `S` row-major, by boxes of the swizzle's width
//! (`storage_swizzle`: one box per 128-byte column of rows at 128) or
//! whole. Guards in the nest may be of three kinds: a test of the loops
//! outside it alone, the same for every thread (a block past the last
//! tile), which stays around the copies; a test of the nest's own loops
//! alone (the remainder of a split of the tile's elements over threads
//! that do not divide them), whose points are not copied: the rest must
//! still be the box; and `G`'s index below its extent
//! in a dimension, which the copy's zero fill past the edge of `G` makes
//! (a zero where nothing was written: no reader uses those elements).
//! Anything else is refused with the reason: pad the shapes (`pad_einsum`)
//! where a tile does not divide them. That a copy's position and the tests
//! around it are the same for every thread is checked once the kernel is
//! lowered and its thread indices are known (`check_copies`, which checks
//! lowered text's copies too).
//!
//! Each copy announces its bytes on the "full" barrier just before it is
//! issued, and the producer arrives once an iteration after its copies, so
//! that a copy skipped by its guard is not waited for.

use crate::common::pipeline::{analyze, reads_async, Plan};
use std::collections::{HashMap, HashSet};
use tirc_ir::target::Target;
use tirc_ir::{Attr, BinOp, Buffer, BufferId, Diagnostic, Expr, For, ForKind, Intrinsic, Scope, Stmt, Var};

/// The schedule's annotation: this pipelined loop is to be warp-specialized.
pub const WARP_SPECIALIZE: &str = "tirc.warp_specialize";
pub use tirc_ir::launch::WARP_SPECIALIZED;

/// Whether loop `l` asks for warp specialization: its annotation 1 (or
/// true); 0 (or false), or none, is no.
pub(super) fn asked(l: &For) -> Result<bool, Diagnostic> {
    match l.annotations.iter().find(|(k, _)| k == WARP_SPECIALIZE).map(|(_, v)| v) {
        None | Some(Attr::Int(0)) | Some(Attr::Bool(false)) => Ok(false),
        Some(Attr::Int(1)) | Some(Attr::Bool(true)) => Ok(true),
        Some(_) => Err(Diagnostic::new(format!("`{WARP_SPECIALIZE}` takes 1 (on) or 0 (off)"))),
    }
}

/// The most elements a copy nest may have for its map to be enumerated.
const MAX_POINTS: i64 = 1 << 18;

/// The loop `l` as a warp-specialized loop; the versioned tiles are
/// recorded in `versioned` (old, new), those `insert_barriers` is to leave
/// alone in `synced`, and those a wgmma reads in `spared`.
pub(super) fn expand(
    l: &For,
    target: &Target,
    params: &[Buffer],
    unit_loops: &[(Var, Expr)],
    versioned: &mut Vec<(Buffer, Buffer)>,
    synced: &mut Vec<BufferId>,
    spared: &mut Vec<BufferId>,
) -> Result<Stmt, Diagnostic> {
    let name = l.var.name();
    let refuse = |why: String| Diagnostic::new(format!("warp specialization of loop `{name}`: {why}"));
    if target.sm < 90 {
        return Err(refuse(format!(
            "bulk tensor copies (TMA) and mbarriers need sm_90 or newer; {} has neither",
            target.arch()
        ))
        .help("compile for sm_90a (--arch), or leave out the annotation"));
    }
    let Plan { stmts, hoisted, stages, versions, .. } = analyze(l, &[])?;
    let (Some(min), Some(_)) = (l.min.as_int(), l.extent.as_int()) else {
        return Err(refuse("its bounds are not constants".into())
            .help("warp specialization is built for loops of constant extent; leave out the annotation"));
    };
    let max_stage = stages.iter().copied().max().unwrap_or(0);
    if max_stage == 0 {
        return Err(refuse("every statement is in stage 0: there is nothing to consume the copies".into())
            .help("put the copies in stage 0 and the statements that read them in a later stage"));
    }
    // The copies, each as its bulk tensor copies under the copy's loops
    // bound to threads (they keep the block's threads; each copy is issued
    // once for the block all the same).
    let mut copies: Vec<Stmt> = Vec::new();
    let mut tiles: Vec<Buffer> = Vec::new();
    for (s, _) in stmts.iter().zip(&stages).filter(|(_, st)| **st == 0) {
        let pinned = tirc_ir::subst::substitute_stmt(s, unit_loops);
        let (boxes, bound, guard) = tma_boxes(&pinned, params).map_err(|why| {
            refuse(format!("{} is not a copy that bulk tensor copies can make: {why}", crate::common::pipeline::describe(s)))
                .help("stage 0 holds the copies of whole tiles from a parameter into shared memory; pad the shapes (pad_einsum) where the tiles do not divide them")
        })?;
        let mut stores = Vec::new();
        for (buffer, indices, value) in boxes {
            if !tiles.contains(&buffer) {
                tiles.push(buffer.clone());
            }
            stores.push(Stmt::Store { buffer, indices, value });
        }
        let mut copy = Stmt::seq(stores);
        if let Some(g) = guard {
            copy = Stmt::If { cond: g, then: Box::new(copy), orelse: None };
        }
        for l in bound.into_iter().rev() {
            copy = Stmt::For(Box::new(l.with_body(copy)));
        }
        copies.push(copy);
    }
    let consumers: Vec<&Stmt> = stmts.iter().zip(&stages).filter(|(_, st)| **st > 0).map(|(s, _)| s).collect();
    for t in &tiles {
        if consumers.iter().any(|s| s.stores_to(t)) || !consumers.iter().any(|s| s.loads_from(t) || reads_async(s, t)) {
            return Err(refuse(format!("`{}` is copied in stage 0 but not only read by the later stages", t.name())));
        }
    }
    // Only the copied tiles pass between the stages: the consumers run in
    // order, one iteration after the other.
    if let Some((b, _)) = versions.iter().find(|(b, v)| *v > 1 && !tiles.contains(b)) {
        return Err(refuse(format!(
            "`{}` passes from one stage to a later one, but only the copies of stage 0 may (they are the producer's)",
            b.name()
        ))
        .help("put every statement but the copies in the last stage"));
    }
    // Versions: a stage's worth each, and one to spare for wgmma.
    let wgmma = tiles.iter().any(|t| consumers.iter().any(|s| reads_async(s, t)));
    let v = max_stage + 1 + i64::from(wgmma);
    let mut map = Vec::new();
    for t in &tiles {
        let nb = super::inject_software_pipeline::with_versions(t, v);
        synced.push(nb.id());
        if wgmma {
            spared.push(nb.id());
        }
        versioned.push((t.clone(), nb.clone()));
        map.push((t.clone(), nb, v));
    }
    let k = Expr::var(&l.var);
    let from_min = if min == 0 { k } else { k - Expr::Int(min, l.var.dtype()) };
    let slot = |n: i64| Expr::binary(BinOp::FloorMod, from_min.clone(), Expr::int(n));
    let mut body: Vec<Stmt> = copies.iter().map(|s| super::inject_software_pipeline::version(s, &map, &slot)).collect();
    body.extend(consumers.iter().map(|s| super::inject_software_pipeline::version(s, &map, &slot)));
    let mut body = Stmt::seq(body);
    for b in hoisted.into_iter().rev() {
        body = Stmt::Allocate { buffer: b, body: Box::new(body) };
    }
    let mut out = l.with_body(body);
    out.kind = ForKind::Serial;
    out.annotations = vec![(WARP_SPECIALIZED.to_string(), Attr::Int(v))];
    if let Some(p) = tirc_ir::launch::promote_every(l).map_err(Diagnostic::new)? {
        out.annotations.push((tirc_ir::launch::PROMOTE_EVERY.to_string(), Attr::Int(p)));
    }
    Ok(Stmt::For(Box::new(out)))
}

/// The terms of a sum, each with its sign.
fn terms(e: &Expr, sign: bool, out: &mut Vec<(bool, Expr)>) {
    match e {
        Expr::Binary(BinOp::Add, a, b) => {
            terms(a, sign, out);
            terms(b, sign, out);
        }
        Expr::Binary(BinOp::Sub, a, b) => {
            terms(a, sign, out);
            terms(b, !sign, out);
        }
        e => out.push((sign, e.clone())),
    }
}

fn vars_of(e: &Expr) -> Vec<Var> {
    let mut out = Vec::new();
    e.walk(&mut |x| {
        if let Expr::Var(v) = x {
            if !out.contains(v) {
                out.push(v.clone());
            }
        }
    });
    out
}

/// `e` as (the part of no loop of `inner`, the part of those loops alone);
/// `None` when a term mixes both.
fn split(e: &Expr, inner: &[Var]) -> Option<(Expr, Expr)> {
    let mut ts = Vec::new();
    terms(e, true, &mut ts);
    let (mut outer, mut local) = (Expr::int(0), Expr::int(0));
    for (sign, t) in ts {
        let vs = vars_of(&t);
        let ins = vs.iter().filter(|v| inner.contains(v)).count();
        let part = if ins == 0 {
            &mut outer
        } else if ins == vs.len() {
            &mut local
        } else {
            return None;
        };
        let before = std::mem::replace(part, Expr::int(0));
        *part = match (before.as_int(), sign) {
            (Some(0), true) => t,
            (_, true) => Expr::folded(BinOp::Add, before, t),
            (_, false) => Expr::folded(BinOp::Sub, before, t),
        };
    }
    Some((outer, local))
}

/// The tiles' copies of a copy nest: for each, the destination, the index of its
/// first element and the `tma_load` value.
type Boxes = Vec<(Buffer, Vec<Expr>, Expr)>;

/// The bulk tensor copies that make the copy nest `s`, the nest's loops
/// bound to threads (bodies to be replaced), and the guard of the whole
/// copy, if it has one.
fn tma_boxes(s: &Stmt, params: &[Buffer]) -> Result<(Boxes, Vec<For>, Option<Expr>), String> {
    // The nest: loops of constant bounds down to one store, guards
    // anywhere in it.
    let mut loops: Vec<(Var, i64, i64)> = Vec::new();
    let mut bound: Vec<For> = Vec::new();
    let mut guards: Vec<Expr> = Vec::new();
    let mut cur = s;
    let (dst, didx, src, sidx) = loop {
        match cur {
            Stmt::For(l) => {
                let (Some(a), Some(n)) = (l.min.as_int(), l.extent.as_int()) else {
                    return Err(format!("loop `{}` has bounds that are not constants", l.var.name()));
                };
                loops.push((l.var.clone(), a, n));
                if matches!(l.kind, ForKind::ThreadBinding(_)) {
                    bound.push(l.with_body(Stmt::NoOp));
                }
                cur = &l.body;
            }
            Stmt::Seq(v) if v.len() == 1 => cur = &v[0],
            Stmt::Store { buffer, indices, value: Expr::Load(src, sidx) } => break (buffer, indices, src, sidx),
            Stmt::Store { .. } => return Err("its value is not a plain element of a buffer".into()),
            Stmt::If { cond, then, orelse: None } => {
                guards.extend(crate::arith::conjuncts(cond));
                cur = then;
            }
            _ => return Err("it is not a nest of loops around one store".into()),
        }
    };
    if dst.scope() != Scope::Shared {
        return Err(format!("it writes `{}`, which is not in shared memory", dst.name()));
    }
    if !dst.dim_align().is_empty() {
        return Err(format!(
            "`{}`'s rows are padded (storage_align), and a bulk tensor copy writes its box densely; swizzle the tile instead (storage_swizzle)",
            dst.name()
        ));
    }
    if src.scope() != Scope::Global || !params.contains(src) {
        return Err(format!("it reads `{}`, which is not a parameter of the function", src.name()));
    }
    if src.dtype() != dst.dtype() {
        return Err("it converts between types".into());
    }
    let elem = dst.dtype().bytes() as i64;
    let Some(shape) = src.const_shape() else {
        return Err(format!("`{}` has no constant shape (a tensor map is built for one)", src.name()));
    };
    let Some(dshape) = dst.const_shape() else {
        return Err(format!("`{}` has no constant shape", dst.name()));
    };
    if shape.is_empty() || shape.len() > 5 {
        return Err(format!("`{}` has {} dimensions; bulk tensor copies take 1 to 5", src.name(), shape.len()));
    }
    if shape.len() > 1 && shape[shape.len() - 1] * elem % 16 != 0 {
        return Err(format!(
            "the rows of `{}` are {} bytes long; a tensor map needs a multiple of 16",
            src.name(),
            shape[shape.len() - 1] * elem
        ));
    }
    let inner: Vec<Var> = loops.iter().map(|(v, _, _)| v.clone()).collect();
    for e in didx {
        if vars_of(e).iter().any(|v| !inner.contains(v)) {
            return Err(format!("where it writes in `{}` depends on loops outside the copy", dst.name()));
        }
    }
    let mut outer = Vec::new();
    let mut local = Vec::new();
    for e in sidx {
        let Some((o, i)) = split(e, &inner) else {
            return Err(format!("an index of `{}` mixes the copy's loops with the loops around it", src.name()));
        };
        outer.push(o);
        local.push(i);
    }
    // Guards: of the whole copy, of the copy's own loops alone (the
    // remainder of a split of its elements over the threads: the points
    // it skips are not copied), or the source's bounds (zero-filled).
    let mut whole: Vec<Expr> = Vec::new();
    let mut own: Vec<Expr> = Vec::new();
    for g in guards {
        // (A test or position that depends on the thread is refused once
        // lowered, where the threads are known: `check_copies`.)
        let used = vars_of(&g);
        if !used.iter().any(|v| inner.contains(v)) {
            whole.push(g);
            continue;
        }
        if used.iter().all(|v| inner.contains(v)) {
            own.push(g);
            continue;
        }
        let in_bounds = match &g {
            Expr::Binary(BinOp::Lt, e, n) => {
                sidx.iter().zip(&shape).any(|(i, d)| n.as_int() == Some(*d) && tirc_ir::structural_eq::expr_eq(e, i))
            }
            _ => false,
        };
        if !in_bounds {
            return Err(format!(
                "it is guarded by `{}`, which is neither a test of the whole copy nor a bound of `{}`",
                tirc_ir::printer::print_expr(&g),
                src.name()
            ));
        }
    }
    let points: i64 = loops.iter().map(|(_, _, n)| *n).product();
    if points > MAX_POINTS {
        return Err(format!("its {points} elements are more than tirc enumerates ({MAX_POINTS})"));
    }
    // Every element of the nest: where it lands (flat) and what it reads
    // (relative to the tile's position).
    let mut values: Vec<(Var, i64)> = loops.iter().map(|(v, a, _)| (v.clone(), *a)).collect();
    let mut copied: Vec<(i64, Vec<i64>)> = Vec::with_capacity(points as usize);
    let eval = |e: &Expr, values: &[(Var, i64)]| {
        tirc_ir::expr::eval(e, &|v: &Var| values.iter().find(|(x, _)| x == v).map(|(_, n)| *n))
    };
    'point: for p in 0..points {
        let mut rest = p;
        for (k, (_, a, n)) in loops.iter().enumerate().rev() {
            values[k].1 = a + rest % n;
            rest /= n;
        }
        for g in &own {
            match eval(g, &values) {
                Some(0) => continue 'point,
                Some(_) => {}
                None => return Err("a test of its loops is not computable".into()),
            }
        }
        let mut flat = 0;
        for (e, n) in didx.iter().zip(&dshape) {
            let x = eval(e, &values).ok_or("an index of the destination is not computable")?;
            if !(0..*n).contains(&x) {
                return Err(format!(
                    "its loops reach past `{}` (a tile sized to a shape smaller than the copy's loops); a bulk tensor copy writes its whole box",
                    dst.name()
                ));
            }
            flat = flat * n + x;
        }
        let o: Option<Vec<i64>> = local.iter().map(|e| eval(e, &values)).collect();
        copied.push((flat, o.ok_or("an index of the source is not computable")?));
    }
    let rank = shape.len();
    let lo: Vec<i64> = (0..rank).map(|d| copied.iter().map(|(_, o)| o[d]).min().unwrap_or(0)).collect();
    let hi: Vec<i64> = (0..rank).map(|d| copied.iter().map(|(_, o)| o[d]).max().unwrap_or(0)).collect();
    let extent: Vec<i64> = (0..rank).map(|d| hi[d] - lo[d] + 1).collect();
    let distinct: HashSet<&Vec<i64>> = copied.iter().map(|(_, o)| o).collect();
    let written: HashSet<i64> = copied.iter().map(|(f, _)| *f).collect();
    let copies = copied.len();
    if distinct.len() != copies || written.len() != copies || extent.iter().product::<i64>() != copies as i64 {
        return Err(format!("the elements it reads are not one dense box of `{}`, each copied once", src.name()));
    }
    let swizzle = dst.swizzle();
    let last = rank - 1;
    let width = if swizzle > 0 { swizzle / elem } else { extent[last] };
    if extent[last] % width != 0 {
        return Err(format!(
            "its rows of {} elements are not whole {}-byte columns of the swizzle",
            extent[last], swizzle
        ));
    }
    let mut boxed = extent.clone();
    boxed[last] = width;
    if width * elem % 16 != 0 || boxed.iter().any(|b| *b > 256) {
        return Err(format!(
            "its box {boxed:?} is not one a tensor map takes (at most 256 a dimension, rows of a multiple of 16 bytes)"
        ));
    }
    // One box per column of `width`: where each starts in the destination.
    let align = if swizzle > 0 { 1024 } else { 128 };
    let mut starts: HashMap<i64, i64> = HashMap::new();
    for (f, o) in &copied {
        if o.iter().zip(&lo).enumerate().all(|(d, (x, l))| if d == last { (x - l) % width == 0 } else { x == l }) {
            starts.insert((o[last] - lo[last]) / width, *f);
        }
    }
    for (f, o) in &copied {
        let t = (o[last] - lo[last]) / width;
        let Some(&(mut want)) = starts.get(&t) else {
            return Err(format!("a column of its box has no first element in `{}`", dst.name()));
        };
        let mut stride = 1;
        for d in (0..rank).rev() {
            let l = if d == last { o[d] - lo[d] - t * width } else { o[d] - lo[d] };
            want += l * stride;
            stride *= boxed[d];
        }
        if want != *f {
            return Err(format!(
                "it lays the box out in `{}` otherwise than row-major (a bulk tensor copy writes its box row after row)",
                dst.name()
            ));
        }
    }
    let tile_bytes = dshape.iter().product::<i64>() * elem;
    let mut out = Vec::new();
    let mut ts: Vec<(&i64, &i64)> = starts.iter().collect();
    ts.sort();
    for (&t, &start) in ts {
        if start * elem % align != 0 {
            return Err(format!(
                "a box would start {} bytes into `{}`, not at a multiple of {align}",
                start * elem,
                dst.name()
            ));
        }
        if tile_bytes % align != 0 {
            return Err(format!(
                "`{}` is {tile_bytes} bytes, not a multiple of {align}: its versions would not start where a bulk tensor copy can write",
                dst.name()
            ));
        }
        let mut idx = Vec::new();
        let mut rest = start;
        for n in dshape.iter().rev() {
            idx.push(Expr::Int(rest % n, didx[0].dtype()));
            rest /= n;
        }
        idx.reverse();
        let first: Vec<Expr> = (0..rank)
            .map(|d| {
                let off = lo[d] + if d == last { t * width } else { 0 };
                crate::arith::Analyzer::new().simplify(&(outer[d].clone() + Expr::Int(off, outer[d].dtype())))
            })
            .collect();
        let mut args = vec![Expr::Load(src.clone(), first.clone())];
        args.extend(boxed.iter().chain(&shape).map(|n| Expr::int(*n)));
        args.extend(first);
        out.push((dst.clone(), idx, Expr::Call(Intrinsic::TmaLoad, args)));
    }
    Ok((out, bound, (!whole.is_empty()).then(|| crate::arith::all_of(whole))))
}

/// Checks the bulk tensor copies of a lowered function (the pass's own, or
/// ones lowered text holds): each inside a warp-specialized loop, from a
/// parameter into shared memory, a box a tensor map takes that fits its
/// tile, on a target that has them; and the producer's threads within the
/// block's limit. The refusal points at the loop.
pub fn check_copies(f: &tirc_ir::PrimFunc, target: &Target) -> Result<(), Diagnostic> {
    /// Where a copy stands: its loop, the last span seen, the variables
    /// whose values differ between threads (thread indices and `let`s of
    /// them) and whether a test or a loop bound of one is around it.
    struct At<'a> {
        within: Option<&'a For>,
        last: Option<tirc_parser::ast::Span>,
        varying: Vec<tirc_ir::Var>,
        under_varying: bool,
    }
    fn go<'a>(s: &'a Stmt, at_: &mut At<'a>, f: &tirc_ir::PrimFunc, target: &Target) -> Result<(), Diagnostic> {
        let saved = (at_.within, at_.under_varying, at_.varying.len());
        if let Stmt::For(l) = s {
            at_.last = l.span.or(at_.last);
            if tirc_ir::launch::warp_specialized(l).is_some() {
                at_.within = Some(&**l);
            }
        }
        let mut uses_varying = false;
        s.for_each_expr(|e| uses_varying |= at_.varying.iter().any(|v| e.uses(v)));
        match s {
            Stmt::If { .. } | Stmt::For(_) => at_.under_varying |= uses_varying,
            Stmt::Let { var, .. } if uses_varying => at_.varying.push(var.clone()),
            _ => {}
        }
        let (within, last) = (at_.within, at_.last);
        if let Stmt::Store { buffer, value: Expr::Call(Intrinsic::TmaLoad, args), .. } = s {
            let at = |d: Diagnostic| d.or_at_ir(within.and_then(|l| l.span).or(last), "this loop");
            let Some(l) = within else {
                return Err(at(Diagnostic::new(format!(
                    "a bulk tensor copy into `{}` outside a warp-specialized loop: only such a loop's producer issues them",
                    buffer.name()
                ))));
            };
            if target.sm < 90 {
                return Err(at(Diagnostic::new(format!(
                    "bulk tensor copies (T.tma_load) need sm_90 or newer; {} has none",
                    target.arch()
                )))
                .help("compile for sm_90a (--arch)"));
            }
            let rank = (args.len() - 1) / 3;
            let ints: Option<Vec<i64>> = args[1..1 + 2 * rank].iter().map(Expr::as_int).collect();
            // (The copy's own loops bound to threads are around it too:
            // only its coordinates and the tests around it count.)
            let coords_vary = args[1 + 2 * rank..].iter().any(|e| at_.varying.iter().any(|v| e.uses(v)));
            let why = match (&args[0], ints) {
                _ if at_.under_varying || coords_vary => Some(
                    "its box or a test around it depends on the thread, but the producer's one thread issues it for the block"
                        .to_string(),
                ),
                _ if buffer.scope() != Scope::Shared => {
                    Some(format!("it writes `{}`, which is not in shared memory", buffer.name()))
                }
                (Expr::Load(src, _), _) if src.scope() != Scope::Global || !f.params.contains(src) => {
                    Some(format!("it reads `{}`, which is not a parameter of the kernel", src.name()))
                }
                (Expr::Load(src, _), Some(dims)) => {
                    let (boxed, shape) = dims.split_at(rank);
                    let elems: i64 = boxed.iter().product();
                    let row = shape.last().copied().unwrap_or(0) * src.dtype().bytes() as i64;
                    if rank > 5
                        || boxed.iter().any(|b| *b > 256)
                        || boxed.last().copied().unwrap_or(0) * src.dtype().bytes() as i64 % 16 != 0
                    {
                        Some(format!("its box {boxed:?} is not one a tensor map takes (1 to 5 dimensions, at most 256 each, rows of a multiple of 16 bytes)"))
                    } else if rank > 1 && row % 16 != 0 {
                        Some(format!(
                            "the rows of `{}` are {row} bytes long; a tensor map needs a multiple of 16",
                            src.name()
                        ))
                    } else if buffer.num_elements().is_some_and(|n| n < elems) || src.dtype() != buffer.dtype() {
                        Some(format!("its box of {elems} elements of {} does not fit `{}`", src.dtype(), buffer.name()))
                    } else {
                        None
                    }
                }
                _ => Some("its box and shape are not constants".into()),
            };
            if let Some(why) = why {
                return Err(at(Diagnostic::new(format!("bulk tensor copy of loop `{}`: {why}", l.var.name()))));
            }
        }
        let mut r = Ok(());
        s.for_each_child(|c| {
            if r.is_ok() {
                r = go(c, at_, f, target);
            }
        });
        (at_.within, at_.under_varying) = (saved.0, saved.1);
        at_.varying.truncate(saved.2);
        r
    }
    let (head, body) = f.body.launch_head();
    let threads = head.iter().filter(|(_, t, _)| !t.is_block).map(|(v, _, _)| (*v).clone()).collect();
    go(body, &mut At { within: None, last: None, varying: threads, under_varying: false }, f, target)?;
    if let Some(l) = tirc_ir::launch::warp_specialized_loops(&f.body).first() {
        let consumers = tirc_ir::launch::launch_config(f).threads_per_block();
        let threads = consumers + tirc_ir::launch::producer_threads(super::has_warp_tiles(&f.body), consumers);
        if threads > target.max_threads_per_block {
            return Err(Diagnostic::new(format!(
                "with the producer of its warp-specialized loop the kernel would launch {threads} threads per block, more than the {} {} allows",
                target.max_threads_per_block,
                target.arch()
            ))
            .help("bind fewer threads: the producer adds a warp (a warpgroup with wgmma or mma.sync)")
            .or_at_ir(l.span, "this loop"));
        }
    }
    Ok(())
}
