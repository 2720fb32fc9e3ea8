//! `cache_read(block, read_buffer_index, storage_scope)` and
//! `cache_write(block, write_buffer_index, storage_scope)`: a copy of a
//! buffer in another memory scope, and a block that moves the data.
//!
//! `cache_read` makes `<buffer>_<scope>` (say `A_shared`), inserts a block
//! of that name copying the whole buffer into it just before the top-level
//! loop nest that holds `block`, and makes `block` read the copy. The copy
//! covers the whole buffer until `compute_at` moves it under a loop, which
//! shrinks it to the region needed there.
//!
//! `cache_write` makes `block` write (and, for a reduction, read) the copy,
//! `<buffer>_<scope>` (say `C_local`), and inserts a block of that name
//! after the block's top-level loop nest that writes the copy back to the
//! buffer; `reverse_compute_at` moves it under a loop.
//!
//! Preconditions, checked in this order:
//! 1. The scope is "global", "shared" or "local".
//! 2. The block is in the function, directly in the root block's scope.
//! 3. The index names one of the block's read (write) buffers.
//! 4. For `cache_write`, the buffer is written by no other block: the copy
//!    back would overwrite their results.
//! 5. For `cache_read`, no block of the loop nests from the first reader
//!    of the copy to the last writes the buffer (a reader itself included):
//!    the copy, placed before them, would read the buffer before it is
//!    written. One exception, as in TVM: a single writer in the readers'
//!    one nest, before them in a sequence of statements that holds both
//!    (a copy `compute_at` moved there: A_shared, then its copy into
//!    fragments): the new copy goes just after it, over the whole buffer,
//!    for `compute_at` to move deeper.
//! 6. For `cache_read` with `consumer_blocks` (TVM's argument: the blocks
//!    that read the copy; without it, `block` alone), each is a block of
//!    the root scope that reads the buffer. The copy is placed before the
//!    first of their loop nests.
//! 7. For `cache_write`, the block writes the buffer unconditionally (or an
//!    init writes every element it updates under a condition): the copy
//!    back writes every element of the region the block's loops write, the
//!    whole buffer unless they write less (a loop over part of it). A
//!    block that reads the buffer it writes has an init that writes every
//!    element first: the copy starts empty, not with the incoming values.
//! 8. For `cache_write`, no other block of the nest reads the buffer: the
//!    copy back, after the nest, would come after it.
//! 9. For `cache_write`, the block writes every element between the first
//!    and the last it writes, per dimension (found by running its loops
//!    where they are constant and not too many; the copy back covers that
//!    box): a stride or a predicate leaving holes would have the copy back
//!    overwrite them.
//!
//! The copy buffer is allocated by the root block; lowering places it at
//! the lowest loop that covers its uses and compacts it to what is used.

use super::{BlockRV, Result, Schedule, ScheduleError};
use crate::common::tree::{block_and_buffer_names, fresh_loop_name, fresh_name, name_marker};
use tirc_ir::region::block_buffers;
use tirc_ir::subst::replace_buffers_stmt;
use tirc_ir::{
    Block, BlockRealize, Buffer, BufferRegion, DType, Expr, For, ForKind, IterKind, IterVar, Range, Scope, Stmt, Var,
};

pub fn cache_read(
    sch: &mut Schedule,
    block: &BlockRV,
    index: i64,
    scope: &str,
    consumers: Option<&[BlockRV]>,
) -> Result<BlockRV> {
    let (sc, top, r) = prepare(sch, block, scope)?;
    let reads = block_buffers(&r, true);
    let buf = pick(&reads, index, block, "reads")?;
    // 6.
    let consumers: Vec<BlockRV> = match consumers {
        None => vec![block.clone()],
        Some(list) => list.to_vec(),
    };
    let stmts = root_stmts(&sch.func.body);
    let mut tops = Vec::new();
    for c in &consumers {
        let reads_buf = sch.func.body.find_block(c).is_some_and(|x| block_buffers(x, true).contains(&buf));
        let at = stmts.iter().position(|s| s.blocks().iter().any(|b| b.block.name == *c));
        match at {
            Some(t) if reads_buf && top_level_owner(&sch.func.body, c).as_deref() == Some("root") => tops.push(t),
            _ => {
                return Err(ScheduleError::bad_argument(format!(
                    "consumer block `{c}` is not a block of the root scope that reads `{}`",
                    buf.name()
                )))
            }
        }
    }
    let first = tops.iter().copied().min().unwrap_or(top);
    let last = tops.iter().copied().max().unwrap_or(top);
    // 5. A writer inside the consumers' one nest (a copy already moved
    // there by compute_at): the new copy goes just after it, in the
    // innermost sequence of statements that holds both.
    if first == last {
        let writers: Vec<String> = stmts[first]
            .blocks()
            .iter()
            .filter(|o| block_buffers(o, false).contains(&buf))
            .map(|o| o.block.name.clone())
            .collect();
        if let [writer] = &writers[..] {
            if !consumers.contains(writer) {
                if let Some(lp) = loop_after_writer(&stmts[first], writer, &consumers, None) {
                    // The copy is made at the root, before the nest, and
                    // moved under the loop after the writer: there it covers
                    // what the readers read in one iteration of the loop
                    // (TVM's region), not the whole buffer, which other
                    // iterations (other thread blocks) have not written.
                    let before = sch.func.clone();
                    let (copy, name) = new_copy(sch, &buf, sc);
                    let nest = copy_nest(&sch.func.body, &name, &buf, &copy, true);
                    let mut body = stmts.clone();
                    body[first] = consumers.iter().fold(body[first].clone(), |s, c| redirect_block(&s, c, &buf, &copy));
                    body.insert(first, nest);
                    set_root(sch, body, vec![copy]);
                    if let Err(e) = super::compute_at::compute_copy_after_writer(sch, &name, &lp, &buf) {
                        sch.func = before;
                        return Err(ScheduleError::new(format!(
                            "cannot cache the reads of `{}` by block `{block}` under loop `{}`, where block `{writer}` writes it: {}",
                            buf.name(),
                            lp.name(),
                            e.message
                        )));
                    }
                    return Ok(name);
                }
            }
        }
    }
    for s in &stmts[first..=last] {
        if let Some(w) = s.blocks().iter().find(|o| block_buffers(o, false).contains(&buf)) {
            return Err(ScheduleError::new(format!(
                "cannot cache the reads of `{}` by block `{block}`: block `{}` writes it in a loop nest that reads the copy, and the copy would be made before that nest runs",
                buf.name(),
                w.block.name
            ))
            .help(format!("cache the reads of `{}` before the schedule moves its producer into this nest", buf.name())));
        }
    }
    let (copy, name) = new_copy(sch, &buf, sc);
    let nest = copy_nest(&sch.func.body, &name, &buf, &copy, true);
    let mut body = Vec::new();
    for (i, mut s) in stmts.into_iter().enumerate() {
        if i == first {
            body.push(nest.clone());
        }
        for c in &consumers {
            if tops.contains(&i) {
                s = redirect_block(&s, c, &buf, &copy);
            }
        }
        body.push(s);
    }
    set_root(sch, body, vec![copy]);
    Ok(name)
}

pub fn cache_write(sch: &mut Schedule, block: &BlockRV, index: i64, scope: &str) -> Result<BlockRV> {
    let (sc, top, r) = prepare(sch, block, scope)?;
    let writes = block_buffers(&r, false);
    let buf = pick(&writes, index, block, "writes")?;
    // 4. (The blocks nested in `block`, as `blockize` leaves them, write
    // through it.)
    let nested = crate::common::tree::nested_block_names(&r);
    for other in sch.func.body.blocks() {
        if other.block.name != *block
            && other.block.name != "root"
            && !nested.contains(&other.block.name)
            && block_buffers(other, false).contains(&buf)
        {
            return Err(ScheduleError::new(format!(
                "block `{}` writes `{}` too; the copy back from `{block}`'s cache would overwrite its results",
                other.block.name,
                buf.name()
            )));
        }
    }
    // 7.
    let writes_all = |s: &Stmt| s.stores_to(&buf) && !crate::common::tree::accessed_under_condition(s, &buf);
    if crate::common::tree::accessed_under_condition(&r.block.body, &buf)
        && !r.block.init.as_ref().is_some_and(writes_all)
    {
        return Err(ScheduleError::new(format!(
            "block `{block}` writes `{}` only under a condition: the copy back would overwrite the elements it leaves alone",
            buf.name()
        )));
    }
    // 7b. A block that reads what it writes without an init to start it
    // (`C = 2 * C + A`, a reduction into C's incoming values) would read the
    // copy, which nothing fills with those values.
    let reads_own = r.block.body.loads_from(&buf);
    if reads_own && r.block.init.as_ref().is_none_or(|i| !writes_all(i)) {
        return Err(ScheduleError::new(format!(
            "block `{block}` reads `{}`'s incoming values (it has no init that writes them first): the copy would start without them",
            buf.name()
        ))
        .help("cache it with cache_read as well, or give the reduction an init"));
    }
    let stmts = root_stmts(&sch.func.body);
    // 8.
    if let Some(reader) = stmts[top]
        .blocks()
        .into_iter()
        .find(|o| o.block.name != *block && !nested.contains(&o.block.name) && block_buffers(o, true).contains(&buf))
    {
        return Err(ScheduleError::new(format!(
            "block `{}` reads `{}` in the loop nest of block `{block}`: the copy back, made after that nest, would come after it",
            reader.block.name,
            buf.name()
        )));
    }
    // 9. Where the loops can be run here, the box is that of the points
    // written, and must be full; else the region inferred from the loops.
    let region = match written_points(&sch.func.body, &r, &buf) {
        Some(points) => {
            let Some(bbox) = bounding_box(&points) else {
                return Err(ScheduleError::new(format!("block `{block}` writes no element of `{}`", buf.name())));
            };
            let size: usize = bbox.iter().map(|(lo, hi)| (hi - lo) as usize).product();
            if points.len() < size {
                return Err(ScheduleError::new(format!(
                    "block `{block}` writes {} of the {size} elements of `{}` between the first and the last it writes (a stride, or a predicate): the copy back would overwrite the others",
                    points.len(),
                    buf.name()
                )));
            }
            let whole = bbox.iter().zip(buf.shape()).all(|((lo, hi), n)| *lo == 0 && Some(*hi) == n.as_int());
            (!whole).then_some(bbox)
        }
        None => written_region(&stmts[top], &buf),
    };
    let (copy, name) = new_copy(sch, &buf, sc);
    let nest = match region {
        Some(region) => {
            let box_: Vec<Range> =
                region.iter().map(|(lo, hi)| Range::new(Expr::int(*lo), Expr::int(hi - lo))).collect();
            copy_block_nest(&mut sch.func.body.clone(), &name, &box_, "ax", &buf, &copy, &|load, _| load)
        }
        None => copy_nest(&sch.func.body, &name, &buf, &copy, false),
    };
    let mut body = Vec::new();
    for (i, s) in stmts.into_iter().enumerate() {
        if i == top {
            body.push(redirect_block(&s, block, &buf, &copy));
            body.push(nest.clone());
        } else {
            body.push(s);
        }
    }
    set_root(sch, body, vec![copy]);
    Ok(name)
}

/// Checks 1 and 2; the scope, the index of the block's top-level statement
/// in the root body, and the block.
fn prepare(sch: &Schedule, block: &str, scope: &str) -> Result<(Scope, usize, BlockRealize)> {
    // 1.
    let sc = Scope::parse(scope).ok_or_else(|| {
        ScheduleError::bad_argument(format!("unknown storage scope \"{scope}\""))
            .help("use \"shared\", \"local\" or \"global\"")
    })?;
    // 2.
    let (top, r) = root_scope_block(sch, block, "caches")?;
    Ok((sc, top, r))
}

/// A block directly in the root block's scope, and the index of the
/// root body's statement that holds it; refused otherwise, with what the
/// primitive `does` (say "caches") to blocks of the root scope only.
pub(crate) fn root_scope_block(sch: &Schedule, block: &str, does: &str) -> Result<(usize, BlockRealize)> {
    let r = sch
        .func
        .body
        .find_block(block)
        .ok_or_else(|| ScheduleError::not_found(format!("block `{block}` is no longer in the function")))?
        .clone();
    let top = root_stmts(&sch.func.body).iter().position(|s| s.blocks().iter().any(|b| b.block.name == block));
    let top = match top {
        Some(t) if block != "root" => t,
        _ => return Err(ScheduleError::new(format!("block `{block}` is not inside the function's root block"))),
    };
    if top_level_owner(&sch.func.body, block).as_deref() != Some("root") {
        return Err(ScheduleError::unsupported(format!(
            "block `{block}` is nested in another block; tirc {does} buffers of blocks of the root scope only"
        )));
    }
    Ok((top, r))
}

/// Check 3.
fn pick(bufs: &[Buffer], index: i64, block: &str, what: &str) -> Result<Buffer> {
    if index < 0 || index as usize >= bufs.len() {
        let names: Vec<&str> = bufs.iter().map(|b| b.name()).collect();
        return Err(ScheduleError::bad_argument(format!(
            "block `{block}` {what} {} buffer(s), so index {index} names none of them",
            bufs.len()
        ))
        .help(format!(
            "it {what}: {}",
            names.iter().enumerate().map(|(i, n)| format!("{i}: {n}")).collect::<Vec<_>>().join(", ")
        )));
    }
    Ok(bufs[index as usize].clone())
}

/// A new buffer `<buf>_<scope>` (made unique) and the copy block's name.
fn new_copy(sch: &Schedule, buf: &Buffer, sc: Scope) -> (Buffer, String) {
    let taken = block_and_buffer_names(&sch.func);
    // A scope with a dot (`wmma.accumulator`) names a Python identifier
    // with an underscore.
    let name = fresh_name(&taken, &format!("{}_{}", buf.name(), sc.name().replace('.', "_")));
    let copy = buf.derive(|n| {
        n.name = name.clone();
        n.scope = sc;
    });
    (copy, name)
}

/// `for ax0, ax1.. : with T.block(name): dst[v] = src[v]` over the whole
/// buffer; `read` says whether the copy reads `buf` (cache_read) or writes it.
fn copy_nest(root: &Stmt, name: &str, buf: &Buffer, copy: &Buffer, read: bool) -> Stmt {
    let (src, dst) = if read { (buf, copy) } else { (copy, buf) };
    let whole: Vec<Range> = buf.shape().iter().map(|n| Range::from_extent(n.clone())).collect();
    copy_block_nest(&mut root.clone(), name, &whole, "ax", dst, src, &|load, _| load)
}

/// A loop nest over the box `ranges` of a buffer (loops `<prefix>0,
/// <prefix>1..`, fresh against `root`, which then holds them too, so that a
/// later nest's names stay fresh) around one block `name` with variables
/// `v0, v1..` over those ranges that stores `dst[v] = value(src[v], v)`.
pub(crate) fn copy_block_nest(
    root: &mut Stmt,
    name: &str,
    ranges: &[Range],
    prefix: &str,
    dst: &Buffer,
    src: &Buffer,
    value: &dyn Fn(Expr, &[Expr]) -> Expr,
) -> Stmt {
    let typed: Vec<(Range, DType)> = ranges.iter().map(|r| (r.clone(), DType::I32)).collect();
    block_nest(root, &typed, prefix, |iter_vars| {
        let idx: Vec<Expr> = iter_vars.iter().map(|iv| Expr::var(&iv.var)).collect();
        let point = |b: &Buffer| BufferRegion {
            buffer: b.clone(),
            region: idx.iter().map(|i| Range::new(i.clone(), Expr::int(1))).collect(),
        };
        Block {
            name: name.to_string(),
            iter_vars,
            reads: vec![point(src)],
            writes: vec![point(dst)],
            init: None,
            alloc_buffers: vec![],
            annotations: vec![],
            body: Stmt::Store {
                buffer: dst.clone(),
                indices: idx.clone(),
                value: value(Expr::Load(src.clone(), idx.clone()), &idx),
            },
            span: None,
        }
    })
}

/// A loop nest over `ranges` (loops `<prefix>0, <prefix>1..` of the given
/// types, fresh against `root`, which then holds them too) around one
/// block: `block` makes it from its spatial variables `v0, v1..`, one per
/// range and of its type, each bound to its loop.
pub(crate) fn block_nest(
    root: &mut Stmt,
    ranges: &[(Range, DType)],
    prefix: &str,
    block: impl FnOnce(Vec<IterVar>) -> Block,
) -> Stmt {
    let mut loops = Vec::new();
    let mut iter_vars = Vec::new();
    for (d, (range, t)) in ranges.iter().enumerate() {
        let lv = Var::new(fresh_loop_name(root, &format!("{prefix}{d}")), *t);
        *root = Stmt::seq(vec![root.clone(), name_marker(&lv)]);
        loops.push((lv, range.clone()));
        iter_vars.push(IterVar { var: Var::new(format!("v{d}"), *t), dom: range.clone(), kind: IterKind::Spatial });
    }
    let mut s = Stmt::Block(Box::new(BlockRealize {
        iter_values: loops.iter().map(|(v, _)| Expr::var(v)).collect(),
        predicate: Expr::bool(true),
        block: block(iter_vars),
    }));
    for (v, range) in loops.into_iter().rev() {
        s = Stmt::For(Box::new(For {
            var: v,
            min: range.min,
            extent: range.extent,
            kind: ForKind::Serial,
            annotations: vec![],
            body: s,
            span: None,
        }));
    }
    s
}

/// The part of `buf` that the loop nest `nest` writes, where it is less than
/// the whole buffer and known as constants: each dimension's range, relaxed
/// over the nest's loops and kept inside the buffer. `None` for the whole
/// buffer (or a range not known as constants).
fn written_region(nest: &Stmt, buf: &Buffer) -> Option<Vec<(i64, i64)>> {
    let (_, writes) = crate::common::tree::stmt_regions(nest);
    let reg = writes.into_iter().find(|w| w.buffer == *buf)?;
    let mut out = Vec::new();
    for (rg, n) in reg.region.iter().zip(buf.shape()) {
        let a = crate::arith::Analyzer::new();
        let (lo, ext, n) = (a.simplify(&rg.min).as_int()?, a.simplify(&rg.extent).as_int()?, n.as_int()?);
        let (lo, hi) = (lo.max(0), (lo + ext).min(n));
        if lo >= hi {
            return None;
        }
        out.push((lo, hi));
    }
    let whole = out.iter().zip(buf.shape()).all(|((lo, hi), n)| *lo == 0 && Some(*hi) == n.as_int());
    (!whole).then_some(out)
}

/// The elements of `buf` the block writes, found by running its loops
/// (constant, and at most 2^20 iterations; `None` otherwise): its predicate
/// and bindings give each iteration's point.
fn written_points(root: &Stmt, r: &BlockRealize, buf: &Buffer) -> Option<std::collections::HashSet<Vec<i64>>> {
    use crate::arith::eval;
    let loops: Vec<(Var, i64, i64)> = root
        .loops_above(&r.block.name)?
        .into_iter()
        .map(|l| Some((l.var.clone(), l.min.as_int()?, l.extent.as_int()?)))
        .collect::<Option<_>>()?;
    let mut stores: Vec<Vec<Expr>> = Vec::new();
    let mut plain = true;
    for s in r.block.init.iter().chain(std::iter::once(&r.block.body)) {
        s.walk(&mut |x| match x {
            Stmt::Store { buffer, indices, .. } if buffer == buf => stores.push(indices.clone()),
            Stmt::For(_) | Stmt::Block(_) | Stmt::Let { .. } => plain = false,
            _ => {}
        });
    }
    if !plain || stores.is_empty() {
        return None;
    }
    let mut seen = std::collections::HashSet::new();
    crate::common::tree::run_block_iterations(r, &loops, 1 << 20, &mut |vals, on| {
        let var_value = |v: &Var| r.block.iter_vars.iter().position(|iv| iv.var == *v).map(|k| vals[k]);
        if on {
            for idx in &stores {
                seen.insert(idx.iter().map(|e| eval(e, &var_value)).collect::<Option<Vec<i64>>>()?);
            }
        }
        Some(())
    })?;
    Some(seen)
}

/// Per dimension, the first and one past the last of `points`.
fn bounding_box(points: &std::collections::HashSet<Vec<i64>>) -> Option<Vec<(i64, i64)>> {
    let mut it = points.iter();
    let first = it.next()?;
    let mut bbox: Vec<(i64, i64)> = first.iter().map(|&x| (x, x + 1)).collect();
    for p in it {
        for (b, &x) in bbox.iter_mut().zip(p) {
            *b = (b.0.min(x), b.1.max(x + 1));
        }
    }
    Some(bbox)
}

/// `s` with the block named `block` (and the blocks in it) accessing `copy`
/// instead of `buf`.
fn redirect_block(s: &Stmt, block: &str, buf: &Buffer, copy: &Buffer) -> Stmt {
    s.rewrite(&mut |x| match x {
        Stmt::Block(r) if r.block.name == block => Some(replace_buffers_stmt(x, &[(buf.clone(), copy.clone())])),
        _ => None,
    })
}

/// The loop whose body holds the innermost sequence of statements in which
/// block `writer`'s statement comes before every block of `consumers` (and
/// which holds nothing else that writes between): where `cache_read` puts
/// the copy of what the writer wrote. `None` where no sequence orders them
/// so, or where that sequence is in no loop.
fn loop_after_writer(s: &Stmt, writer: &str, consumers: &[BlockRV], around: Option<&Var>) -> Option<Var> {
    let holds = |x: &Stmt, b: &str| x.blocks().iter().any(|r| r.block.name == b);
    match s {
        Stmt::For(l) => loop_after_writer(&l.body, writer, consumers, Some(&l.var)),
        Stmt::Seq(items) => {
            let w = items.iter().position(|x| holds(x, writer))?;
            let cs: Vec<usize> =
                consumers.iter().map(|c| items.iter().position(|x| holds(x, c))).collect::<Option<_>>()?;
            if cs.iter().all(|&c| c == w) {
                return loop_after_writer(&items[w], writer, consumers, around);
            }
            if cs.iter().any(|&c| c <= w) {
                return None;
            }
            around.cloned()
        }
        _ => None,
    }
}

/// The statements of the root block's body.
pub(crate) fn root_stmts(body: &Stmt) -> Vec<Stmt> {
    let inner = match body {
        Stmt::Block(r) if r.block.name == "root" => &r.block.body,
        s => s,
    };
    match inner {
        Stmt::Seq(v) => v.clone(),
        s => vec![s.clone()],
    }
}

/// Replaces the root block's body by `stmts` and allocates `allocs` there.
pub(crate) fn set_root(sch: &mut Schedule, stmts: Vec<Stmt>, allocs: Vec<Buffer>) {
    let body = Stmt::seq(stmts);
    sch.func.body = match &sch.func.body {
        Stmt::Block(r) if r.block.name == "root" => {
            let mut r = (**r).clone();
            r.block.body = body;
            r.block.alloc_buffers.extend(allocs);
            Stmt::Block(Box::new(r))
        }
        _ => tirc_ir::resolve::root_block(body, allocs),
    };
}

/// The name of the block whose scope directly holds `block`.
pub(crate) fn top_level_owner(s: &Stmt, block: &str) -> Option<String> {
    fn go(s: &Stmt, block: &str, owner: &str) -> Option<String> {
        match s {
            Stmt::Block(r) if r.block.name == block => Some(owner.to_string()),
            Stmt::Block(r) => {
                let mut out = None;
                r.block.init.iter().chain(std::iter::once(&r.block.body)).for_each(|c| {
                    if out.is_none() {
                        out = go(c, block, &r.block.name);
                    }
                });
                out
            }
            _ => {
                let mut out = None;
                s.for_each_child(|c| {
                    if out.is_none() {
                        out = go(c, block, owner);
                    }
                });
                out
            }
        }
    }
    match s {
        Stmt::Block(r) if r.block.name == "root" => go(&r.block.body, block, "root"),
        s => go(s, block, "root"),
    }
}
