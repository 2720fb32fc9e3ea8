//! A check of the scheduled function before lowering: local memory is
//! private to a thread.
//!
//! A block whose position depends on a loop bound to a thread axis (the
//! bindings of its spatial variables use that loop's variable) and that
//! writes a local buffer writes the elements that belong to that thread.
//! (A reduction variable bound to the threads does not count: the
//! cross-thread reduction leaves the total in every thread's copy.) Every other block that
//! reads the buffer must then run under a loop bound to the same axis too;
//! one that does not (a write-back placed by `reverse_compute_at` above the
//! thread loop, say) would read elements that other threads hold in their
//! own registers, and get garbage. The function is refused, naming the
//! buffer, both blocks and the axis. A block outside the thread loops that
//! only writes the buffer is fine: every thread runs it whole (a producer
//! computed into each thread's registers before the loop that reads it).
//!
//! Under the same thread loops, the blocks must also agree on which thread
//! holds which element: a thread that reads an element only other threads
//! write (a write-back re-split over the threads differently from the
//! computation) reads its own, unwritten copy. Where the loops that place
//! the accesses have constant bounds and few iterations (2^18 at most),
//! every access is enumerated and such a read refused. A loop bound to a
//! block index is enumerated at its first two values and its last (the
//! blocks between repeat the second's pattern, shifted); a part of a
//! block's predicate that names none of the loops placing its accesses (a
//! reduction's tail) is left out, since it holds at some iteration of its
//! own loops.
//!
//! Lowered text (no blocks: stores and loads under loops bound to threads
//! or launches, as `tirc lower` prints it) is checked the same way, each
//! store and each load that runs whenever its statement does counted as a
//! block's access, under the conditions of the `if`s around it.
//!
//! A tensor-core fragment (`wmma.*`, `warp`) is checked the same way: its
//! tiles live in the registers of the warp that holds them, the warps told
//! apart by the loops bound to `threadIdx.y`/`z` around the operations
//! (each operation's tile counted by its first element).

use std::collections::{HashMap, HashSet};
use tirc_ir::region::block_buffers;
use tirc_ir::stmt::IterKind;
use tirc_ir::subst::substitute;
use tirc_ir::{BlockRealize, Buffer, Diagnostic, Expr, For, ForKind, PrimFunc, Scope, Stmt, ThreadTag, Var};

/// A block touching a local buffer, with the thread-bound loops around it
/// and every loop around it, outermost first.
struct Use<'a> {
    block: &'a BlockRealize,
    around: Vec<(ThreadTag, Var)>,
    loops: Vec<&'a For>,
}

/// The most loop iterations enumerated for one block.
const MAX_ENUMERATED: i64 = 1 << 18;

pub fn run(f: &PrimFunc) -> Result<(), Diagnostic> {
    outside_blocks(f)?;
    let mut uses: Vec<(Buffer, Use)> = Vec::new();
    collect(&f.body, &mut Vec::new(), &mut Vec::new(), &mut uses);
    // Buffers written outside a thread loop that some block writes per
    // thread under it: allowed only where every access can be enumerated
    // (`owners_agree` then sees whose copy each read finds).
    let mut must_enumerate: Vec<(&Buffer, &Use, &Use, ThreadTag)> = Vec::new();
    for (b, u) in &uses {
        for (tag, var) in &u.around {
            // (A thread loop that feeds only reduction variables of a block
            // writing `b` is not in its `around`: see `collect`.)
            if !u.block.iter_values.iter().any(|v| v.uses(var)) {
                continue;
            }
            let outside_of = |w: &Use| !w.around.iter().any(|(t, _)| t == tag);
            // A block outside the thread loops runs whole in every thread:
            // what it only writes, every thread holds (a producer computed
            // into each thread's registers before the thread loop that
            // reads it), unless a thread's own write comes after it and
            // another thread reads that element: left to `owners_agree`.
            // A block under the thread loop that only reads finds in its
            // own copy what the blocks outside wrote whole.
            if !block_buffers(u.block, false).contains(b) {
                continue;
            }
            let reads = |w: &Use| block_buffers(w.block, true).contains(b);
            let outside = uses.iter().find(|(c, w)| c == b && outside_of(w) && reads(w));
            if outside.is_none() {
                if let Some((_, w)) = uses.iter().find(|(c, w)| c == b && outside_of(w)) {
                    must_enumerate.push((b, u, w, *tag));
                }
                continue;
            }
            if let Some((_, w)) = outside {
                return Err(Diagnostic::new(format!(
                    "{} is written per thread of {} by block `{}`, but block `{}` reads it outside every loop bound to {}: {}, so it would read what other threads hold",
                    what(b),
                    tag.name(),
                    u.block.block.name,
                    w.block.block.name,
                    tag.name(),
                    private_to(b)
                ))
                .help(format!(
                    "place block `{}` under the loop bound to {} (compute_at / reverse_compute_at at that loop or below), or use shared memory",
                    w.block.block.name,
                    tag.name()
                ))
                .or_at_ir(w.block.block.span, "this block reads it outside the loop"));
            }
        }
    }
    let mut buffers: Vec<&Buffer> = Vec::new();
    for (b, _) in &uses {
        if !buffers.contains(&b) {
            buffers.push(b);
        }
    }
    for b in buffers {
        let mine: Vec<&Use> = uses.iter().filter(|(c, _)| c == b).map(|(_, u)| u).collect();
        if mine.len() > 1 && mine.iter().any(|u| !u.around.is_empty()) {
            let checked = owners_agree(b, &mine)?;
            if let (false, Some((_, u, w, tag))) = (checked, must_enumerate.iter().find(|(x, ..)| *x == b)) {
                return Err(Diagnostic::new(format!(
                    "{} is written per thread of {} by block `{}` and whole by block `{}` outside every loop bound to {}, and tirc cannot tell which copy each read finds: {}",
                    what(b),
                    tag.name(),
                    u.block.block.name,
                    w.block.block.name,
                    tag.name(),
                    private_to(b)
                ))
                .help("give the loops that place these blocks constant bounds, or use shared memory")
                .or_at_ir(w.block.block.span, "this block writes it outside the loop"));
            }
        }
    }
    Ok(())
}

/// An access of a block: the element, the thread that makes it (its
/// thread indices by axis), whether it writes.
type Access = (Vec<i64>, Vec<(u8, i64)>, bool);

/// The threads (their indices by axis) that write each element.
type Writers<'a> = HashMap<&'a [i64], HashSet<&'a [(u8, i64)]>>;

/// Every element of `b` a thread reads is one that thread writes, where
/// some thread writes it (a read of what no block writes is not this
/// check's business), or one that only blocks under fewer thread loops
/// write (every thread runs those whole). Blocks whose accesses cannot be
/// enumerated are left alone: the result says whether they all could.
fn owners_agree(b: &Buffer, uses: &[&Use]) -> Result<bool, Diagnostic> {
    let mut all: Vec<(&Use, Vec<Access>)> = Vec::new();
    for u in uses {
        match accesses(b, u) {
            Some(a) => all.push((u, a)),
            None => return Ok(false),
        }
    }
    if let Some((u, (elem, thread, _))) = foreign_read(&all) {
        return Err(Diagnostic::new(format!(
            "{}: block `{}` reads element [{}] on the thread with {}, but only other threads write it: {}",
            what(b),
            u.block.block.name,
            list(elem),
            thread_name(thread),
            private_to(b)
        ))
        .help("split and bind the loops of the blocks that share a local buffer the same way, so that each thread reads what it wrote, or use shared memory")
        .or_at_ir(u.block.block.span, "this block reads it"));
    }
    Ok(true)
}

/// The first read, of the accesses of each user, of an element that some
/// thread writes but not the reading thread (its own copy holds nothing
/// written there), unless only writers under fewer thread loops write it
/// (every thread runs those whole).
fn foreign_read<T>(all: &[(T, Vec<Access>)]) -> Option<(&T, &Access)> {
    let mut writers: Writers = HashMap::new();
    for (elem, thread, _) in all.iter().flat_map(|(_, acc)| acc).filter(|a| a.2) {
        writers.entry(elem.as_slice()).or_default().insert(thread.as_slice());
    }
    for (u, acc) in all {
        for a in acc.iter().filter(|a| !a.2) {
            let (elem, thread, _) = a;
            let Some(w) = writers.get(elem.as_slice()) else { continue };
            // A writer under fewer thread loops runs in every thread of
            // the others' axes: its write is the reader's own where the
            // axes it is under agree.
            // (Where another thread also writes it per thread, which copy
            // is the last is not the same in every thread: the read is the
            // thread's own only if it writes the element itself.)
            let own = |wt: &&[(u8, i64)]| wt.iter().all(|x| thread.contains(x));
            if !w.contains(thread.as_slice()) && !w.iter().all(own) {
                return Some((u, a));
            }
        }
    }
    None
}

/// A thread as the messages name it: `x = 1, y = 0`.
fn thread_name(thread: &[(u8, i64)]) -> String {
    let parts: Vec<String> = thread.iter().map(|(d, v)| format!("{} = {v}", ["x", "y", "z"][*d as usize])).collect();
    parts.join(", ")
}

/// An element's indices, comma-separated.
fn list(elem: &[i64]) -> String {
    elem.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
}

/// The value of each enumerated loop's variable at one point.
type Values<'a> = dyn Fn(&Var) -> Option<i64> + 'a;

/// Calls `visit` at each point of `loops` (each over `values_of`, the
/// innermost fastest) with the value of each loop's variable there; `None`
/// where a loop cannot be enumerated, there are more than
/// `MAX_ENUMERATED` points, or `visit` says so.
fn enumerate(loops: &[&For], visit: &mut dyn FnMut(&Values) -> Option<()>) -> Option<()> {
    let choices: Vec<Vec<i64>> = loops.iter().map(|l| values_of(l)).collect::<Option<_>>()?;
    choices.iter().try_fold(1i64, |n, c| n.checked_mul(c.len() as i64).filter(|n| *n <= MAX_ENUMERATED))?;
    if choices.iter().any(Vec::is_empty) {
        return Some(());
    }
    let mut at: Vec<usize> = vec![0; loops.len()];
    loop {
        visit(&|v: &Var| loops.iter().position(|l| l.var == *v).map(|i| choices[i][at[i]]))?;
        let mut d = loops.len();
        loop {
            if d == 0 {
                return Some(());
            }
            d -= 1;
            at[d] += 1;
            if at[d] < choices[d].len() {
                break;
            }
            at[d] = 0;
        }
    }
}

/// The accesses of `b` by block `u`, by enumeration of the loops that
/// place them; `None` when a bound is not constant, an index is not an
/// integer expression of those loops, or there are too many iterations.
fn accesses(b: &Buffer, u: &Use) -> Option<Vec<Access>> {
    let r = u.block;
    let binds: Vec<(Var, Expr)> =
        r.block.iter_vars.iter().map(|iv| iv.var.clone()).zip(r.iter_values.iter().cloned()).collect();
    // Every store counts as a write (that only lets more reads through);
    // a load counts as a read only where it always runs, not in a branch
    // of a select or an `if`, which may be what keeps it from an element
    // the thread does not hold.
    let mut sites: Vec<(Vec<Expr>, bool)> = Vec::new();
    let mut stores = |s: &Stmt| {
        if let Stmt::Store { buffer, indices, .. } = s {
            if buffer == b {
                sites.push((indices.iter().map(|e| substitute(e, &binds)).collect(), true));
            }
        }
    };
    r.block.body.walk(&mut stores);
    if let Some(i) = &r.block.init {
        i.walk(&mut stores);
    }
    // A warp-wide operation's tiles of `b`, each by its first element:
    // written (its accumulators, for a product) or read.
    let mut tiles = |s: &Stmt| {
        if let Stmt::Wmma(w) = s {
            let written = w.op.wgmma_tiles().max(1);
            for (k, t) in w.tiles.iter().enumerate().filter(|(_, t)| &t.buffer == b) {
                let idx: Vec<Expr> = t.indices.iter().map(|e| substitute(e, &binds)).collect();
                if k < written {
                    sites.push((idx.clone(), true));
                }
                if w.reads().iter().any(|x| std::ptr::eq(x, t)) {
                    sites.push((idx, false));
                }
            }
        }
    };
    r.block.body.walk(&mut tiles);
    if let Some(i) = &r.block.init {
        i.walk(&mut tiles);
    }
    let mut reads = Vec::new();
    sure_loads(&r.block.body, b, &mut reads);
    if let Some(i) = &r.block.init {
        sure_loads(i, b, &mut reads);
    }
    sites.extend(reads.into_iter().map(|idx| (idx.iter().map(|e| substitute(e, &binds)).collect(), false)));
    // The loops whose variables the accesses or the thread indices use.
    let named = |l: &For| {
        sites.iter().any(|(idx, _)| idx.iter().any(|e| e.uses(&l.var))) || u.around.iter().any(|(_, t)| *t == l.var)
    };
    // Of the predicate, the parts that name one of them (with the other
    // loops they name): a part of other loops alone (a reduction's tail,
    // `k_0 * 4 + k_1 < 33`) holds at some of their iterations at each
    // point, so the point is accessed.
    let predicate = substitute(&r.predicate, &binds);
    let parts: Vec<Expr> = crate::arith::conjuncts(&predicate)
        .into_iter()
        .filter(|c| u.loops.iter().any(|l| named(l) && c.uses(&l.var)))
        .collect();
    let predicate = parts.into_iter().reduce(Expr::and).unwrap_or_else(|| Expr::bool(true));
    let used: Vec<&For> = u.loops.iter().copied().filter(|l| named(l) || predicate.uses(&l.var)).collect();
    let mut out = Vec::new();
    enumerate(&used, &mut |value| {
        if crate::arith::eval(&predicate, value)? != 0 {
            let mut thread: Vec<(u8, i64)> =
                u.around.iter().map(|(t, v)| value(v).map(|x| (t.dim, x))).collect::<Option<_>>()?;
            thread.sort();
            for (idx, write) in &sites {
                let elem: Vec<i64> = idx.iter().map(|e| crate::arith::eval(e, value)).collect::<Option<_>>()?;
                out.push((elem, thread.clone(), *write));
            }
        }
        Some(())
    })?;
    Some(out)
}

/// The indices of the loads of `b` in `s` that run whenever `s` does.
fn sure_loads(s: &Stmt, b: &Buffer, out: &mut Vec<Vec<Expr>>) {
    fn expr(e: &Expr, b: &Buffer, out: &mut Vec<Vec<Expr>>) {
        match e {
            Expr::Load(lb, idx) => {
                if lb == b {
                    out.push(idx.clone());
                }
                idx.iter().for_each(|i| expr(i, b, out));
            }
            Expr::Select(c, _, _) => expr(c, b, out),
            Expr::Call(..) => {}
            e => e.for_each_child(|c| expr(c, b, out)),
        }
    }
    match s {
        Stmt::If { cond, .. } => expr(cond, b, out),
        Stmt::Block(_) => {}
        s => {
            s.for_each_expr(|e| expr(e, b, out));
            s.for_each_child(|c| sure_loads(c, b, out));
        }
    }
}

fn collect<'a>(
    s: &'a Stmt,
    around: &mut Vec<(ThreadTag, Var)>,
    loops: &mut Vec<&'a For>,
    out: &mut Vec<(Buffer, Use<'a>)>,
) {
    match s {
        Stmt::For(l) => {
            let thread = match l.kind {
                ForKind::ThreadBinding(t) if !t.is_block => Some(t),
                _ => None,
            };
            if let Some(t) = thread {
                around.push((t, l.var.clone()));
            }
            loops.push(l);
            collect(&l.body, around, loops, out);
            loops.pop();
            if thread.is_some() {
                around.pop();
            }
        }
        Stmt::Block(r) => {
            let mut local: Vec<&Buffer> = Vec::new();
            // Only blocks that touch the buffer themselves, not the blocks
            // that hold them (whose regions cover their children's).
            let mut leaf = true;
            r.block.body.walk(&mut |x| leaf &= !matches!(x, Stmt::Block(_)));
            for reg in r.block.reads.iter().chain(&r.block.writes) {
                if private(&reg.buffer) && !local.contains(&&reg.buffer) {
                    local.push(&reg.buffer);
                }
            }
            // A thread loop that feeds only reduction variables of the block
            // makes a cross-thread reduction, whose total every thread of
            // that axis holds (`lower_cross_thread_reduction`): the block
            // counts as run by each of them whole, as one outside the loop
            // is, so that every thread may read it after the loop (TVM's
            // GEMV and RMSNorm).
            let reduced_only = |v: &Var| {
                let kinds: Vec<bool> = r
                    .block
                    .iter_vars
                    .iter()
                    .zip(&r.iter_values)
                    .filter(|(_, e)| e.uses(v))
                    .map(|(iv, _)| iv.kind == IterKind::Reduce)
                    .collect();
                !kinds.is_empty() && kinds.iter().all(|k| *k)
            };
            let mine: Vec<(ThreadTag, Var)> = around.iter().filter(|(_, v)| !reduced_only(v)).cloned().collect();
            // (Only for what the block writes: the reduction reads its
            // per-thread inputs, an rfactor's partial results, per thread.)
            for b in local.into_iter().filter(|_| leaf) {
                let written = r.block.writes.iter().any(|w| &w.buffer == b);
                let around = if written { mine.clone() } else { around.clone() };
                out.push((b.clone(), Use { block: r, around, loops: loops.clone() }));
            }
            if let Some(i) = &r.block.init {
                collect(i, around, loops, out);
            }
            collect(&r.block.body, around, loops, out);
        }
        _ => s.for_each_child(|c| collect(c, around, loops, out)),
    }
}

/// A buffer each thread (a fragment: each warp) holds its own copy of.
fn private(b: &Buffer) -> bool {
    b.scope() == Scope::Local || b.scope().is_fragment()
}

/// The buffer, as the messages name it.
fn what(b: &Buffer) -> String {
    if b.scope() == Scope::Local {
        format!("local buffer `{}`", b.name())
    } else {
        format!("`{}` fragment `{}`", b.scope().name(), b.name())
    }
}

/// Why a thread may not read another's copy.
fn private_to(b: &Buffer) -> &'static str {
    if b.scope() == Scope::Local {
        "local memory is private to each thread"
    } else {
        "a fragment lives in the registers of the warp that holds it"
    }
}

/// A loop's values as the check enumerates them: all of them, but for a
/// loop bound to a block index its first two and its last (the blocks
/// inside repeat the second's pattern, shifted; the edge differs).
fn values_of(l: &For) -> Option<Vec<i64>> {
    let (m, e) = (l.min.as_int()?, l.extent.as_int()?);
    Some(match l.kind {
        ForKind::ThreadBinding(t) if t.is_block && e > 3 => vec![m, m + 1, m + e - 1],
        _ => (m..m + e).collect(),
    })
}

/// One store or load of a private buffer outside every block (lowered
/// text): its indices, whether it writes, the loops around it (launches
/// as loops), outermost first, and the conditions of the `if`s around it
/// (`None` for an `else`, whose condition the check does not follow).
struct Site<'a> {
    indices: &'a [Expr],
    write: bool,
    loops: Vec<For>,
    guards: Vec<Option<&'a Expr>>,
}

/// Lowered text, whose accesses no block holds: each store and each load
/// that runs whenever its statement does, of a buffer private to a thread
/// (or warp), is enumerated over the loops that place it, as a block's
/// accesses are, and a read of an element that only other threads write
/// is refused.
fn outside_blocks(f: &PrimFunc) -> Result<(), Diagnostic> {
    let mut sites: Vec<(Buffer, Site)> = Vec::new();
    gather(&f.body, &mut Vec::new(), &mut Vec::new(), &mut sites);
    let mut buffers: Vec<&Buffer> = Vec::new();
    for (b, _) in &sites {
        if !buffers.contains(&b) {
            buffers.push(b);
        }
    }
    for b in buffers {
        let mine: Vec<&Site> = sites.iter().filter(|(c, _)| c == b).map(|(_, s)| s).collect();
        let threads = |s: &Site| s.loops.iter().any(|l| matches!(l.kind, ForKind::ThreadBinding(t) if !t.is_block));
        if !mine.iter().any(|s| threads(s)) {
            continue;
        }
        let mut all = Vec::new();
        for s in &mine {
            // A buffer some access of which cannot be enumerated is left alone.
            let Some(acc) = site_accesses(s) else { break };
            all.push((*s, acc));
        }
        if all.len() < mine.len() {
            continue;
        }
        if let Some((site, (elem, thread, _))) = foreign_read(&all) {
            let span = site.loops.iter().rev().find_map(|l| l.span);
            return Err(Diagnostic::new(format!(
                "{}: a read of element [{}] on the thread with {} finds what only other threads write: {}",
                what(b),
                list(elem),
                thread_name(thread),
                private_to(b)
            ))
            .help("index the buffer the same way where it is written and where it is read, so that each thread reads what it wrote, or use shared memory")
            .or_at_ir(span, "under this loop"));
        }
    }
    Ok(())
}

fn gather<'a>(
    s: &'a Stmt,
    loops: &mut Vec<For>,
    guards: &mut Vec<Option<&'a Expr>>,
    out: &mut Vec<(Buffer, Site<'a>)>,
) {
    let loads = |e: &'a Expr, loops: &Vec<For>, guards: &Vec<Option<&'a Expr>>, out: &mut Vec<(Buffer, Site<'a>)>| {
        fn walk<'a>(e: &'a Expr, f: &mut dyn FnMut(&'a Buffer, &'a [Expr])) {
            match e {
                Expr::Load(b, idx) => {
                    f(b, idx);
                    idx.iter().for_each(|i| walk(i, f));
                }
                Expr::Select(c, _, _) => walk(c, f),
                Expr::Call(..) => {}
                e => e.for_each_child(|c| walk(c, f)),
            }
        }
        walk(e, &mut |b, idx| {
            if private(b) {
                out.push((
                    b.clone(),
                    Site { indices: idx, write: false, loops: loops.clone(), guards: guards.clone() },
                ));
            }
        });
    };
    match s {
        Stmt::Block(_) => {}
        Stmt::For(l) => {
            loops.push(For { body: Stmt::NoOp, ..(**l).clone() });
            gather(&l.body, loops, guards, out);
            loops.pop();
        }
        Stmt::Launch { var, tag, extent, body } => {
            loops.push(super::compact_buffers::launch_loop(var, tag, extent));
            gather(body, loops, guards, out);
            loops.pop();
        }
        Stmt::If { cond, then, orelse } => {
            loads(cond, loops, guards, out);
            guards.push(Some(cond));
            gather(then, loops, guards, out);
            guards.pop();
            if let Some(e) = orelse {
                guards.push(None);
                gather(e, loops, guards, out);
                guards.pop();
            }
        }
        Stmt::Store { buffer, indices, value } => {
            indices.iter().for_each(|i| loads(i, loops, guards, out));
            loads(value, loops, guards, out);
            if private(buffer) {
                out.push((buffer.clone(), Site { indices, write: true, loops: loops.clone(), guards: guards.clone() }));
            }
        }
        _ => {
            s.for_each_expr(|e| loads(e, loops, guards, out));
            s.for_each_child(|c| gather(c, loops, guards, out));
        }
    }
}

/// The accesses of one site, enumerated as `accesses` does a block's: a
/// read under a condition that cannot be evaluated (an `else`, a test of
/// memory) is left out, a write counts wherever it may run (its
/// conditions left out).
fn site_accesses(s: &Site) -> Option<Vec<Access>> {
    let around: Vec<(u8, &Var)> = s
        .loops
        .iter()
        .filter_map(|l| match l.kind {
            ForKind::ThreadBinding(t) if !t.is_block => Some((t.dim, &l.var)),
            _ => None,
        })
        .collect();
    let named = |l: &For| s.indices.iter().any(|e| e.uses(&l.var)) || around.iter().any(|(_, v)| **v == l.var);
    // A write counts wherever it would run but for its conditions: a
    // thread whose write a test of the edge leaves out (a tile past the
    // matrix) still reads that element, unconditionally, into a value the
    // same test then throws away (`tirc lower`'s own text of a tile at an
    // edge), which is not another thread's register.
    let mut parts: Vec<Expr> = Vec::new();
    for g in s.guards.iter().filter(|_| !s.write) {
        match g {
            Some(c) => parts.extend(
                crate::arith::conjuncts(c).into_iter().filter(|p| s.loops.iter().any(|l| named(l) && p.uses(&l.var))),
            ),
            None => return Some(Vec::new()),
        }
    }
    let used: Vec<&For> = s.loops.iter().filter(|l| named(l) || parts.iter().any(|p| p.uses(&l.var))).collect();
    let mut out = Vec::new();
    enumerate(&used, &mut |value| {
        let runs = parts.iter().map(|p| crate::arith::eval(p, value).map(|x| x != 0)).collect::<Option<Vec<bool>>>();
        // (A condition the enumeration cannot evaluate: the write counts,
        // the read does not.)
        let runs = match runs {
            Some(r) => r.iter().all(|x| *x),
            None => s.write,
        };
        if runs {
            let mut thread: Vec<(u8, i64)> =
                around.iter().map(|(d, v)| value(v).map(|x| (*d, x))).collect::<Option<_>>()?;
            thread.sort();
            let elem: Vec<i64> = s.indices.iter().map(|e| crate::arith::eval(e, value)).collect::<Option<_>>()?;
            out.push((elem, thread, s.write));
        }
        Some(())
    })?;
    Some(out)
}
