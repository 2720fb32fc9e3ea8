//! The software-pipeline annotations of a loop (`software_pipeline_stage`,
//! `_order`, `_async_stages`) checked against its body: which statements
//! run in which stage and order, the versions each buffer needs, and where
//! asynchronous copies are committed and waited for. `sch.annotate` checks
//! a schedule's annotations with `check`, so that a bad one is reported at
//! the schedule line; the lowering pass `inject_software_pipeline` expands
//! the loop from the `Plan` (see its file for the semantics).

use std::collections::HashSet;
use tirc_ir::{Attr, Buffer, BufferId, Diagnostic, For, ForKind, Scope, Stmt, Var};

pub const STAGE: &str = "software_pipeline_stage";
pub const ORDER: &str = "software_pipeline_order";
pub const ASYNC: &str = "software_pipeline_async_stages";

/// The deepest stage a pipeline may have: its prologue and epilogue are
/// written out, an iteration per stage.
pub const MAX_STAGE: i64 = 1024;

/// An integer list annotation of loop `l`.
fn int_list(l: &For, key: &str) -> Result<Option<Vec<i64>>, Diagnostic> {
    let Some((_, a)) = l.annotations.iter().find(|(k, _)| k == key) else { return Ok(None) };
    let bad = || Diagnostic::new(format!("`{key}` of loop `{}` must be a list of integers", l.var.name()));
    match a {
        Attr::List(v) => v.iter().map(|x| x.as_int().ok_or_else(bad)).collect::<Result<Vec<_>, _>>().map(Some),
        _ => Err(bad()),
    }
}

/// The statements of a loop body: sequences flattened, allocations taken
/// out into `hoisted`.
fn statements(s: &Stmt, hoisted: &mut Vec<Buffer>, out: &mut Vec<Stmt>) {
    match s {
        Stmt::Seq(v) => v.iter().for_each(|x| statements(x, hoisted, out)),
        Stmt::Allocate { buffer, body } => {
            hoisted.push(buffer.clone());
            statements(body, hoisted, out)
        }
        Stmt::NoOp => {}
        s => out.push(s.clone()),
    }
}

/// The buffers a statement reads and writes.
pub fn accesses(s: &Stmt) -> (HashSet<Buffer>, HashSet<Buffer>) {
    let (mut r, mut w) = (HashSet::new(), HashSet::new());
    // Loads, stores and tensor-core tiles alike.
    s.for_each_access(&mut |b, _, store| {
        if store {
            w.insert(b.clone());
        } else {
            r.insert(b.clone());
        }
    });
    (r, w)
}

/// How a statement is named in messages: by the buffers it writes.
pub fn describe(s: &Stmt) -> String {
    let (_, w) = accesses(s);
    let mut names: Vec<&str> = w.iter().map(|b| b.name()).collect();
    names.sort();
    names.dedup();
    match names.len() {
        0 => "a statement that writes nothing".to_string(),
        _ => format!("the statement writing `{}`", names.join("`, `")),
    }
}

/// What the annotations of a pipelined loop say, checked against its body.
pub struct Plan {
    pub stmts: Vec<Stmt>,
    pub hoisted: Vec<Buffer>,
    pub stages: Vec<i64>,
    pub order: Vec<i64>,
    pub async_stages: Vec<i64>,
    pub acc: Vec<(HashSet<Buffer>, HashSet<Buffer>)>,
    /// Buffers that need more than one version, with the count.
    pub versions: Vec<(Buffer, i64)>,
}

/// Checks the pipeline annotations of loop `l` against its body: what
/// `sch.annotate` runs at the end of a schedule, so that a bad annotation
/// is reported at the schedule line that made it.
pub fn check(root: &Stmt, l: &For, sizes: &[Var]) -> Result<(), Diagnostic> {
    let plan = analyze(l, &[])?;
    // A buffer kept in versions by iteration must pass no value from one
    // iteration to another: the reader would find another version.
    let reduces_over = |r: &tirc_ir::BlockRealize| {
        r.block
            .iter_vars
            .iter()
            .zip(&r.iter_values)
            .any(|(iv, v)| iv.kind == tirc_ir::IterKind::Reduce && v.uses(&l.var))
    };
    // (Shared and local buffers: a tensor-core block declares its warp
    // tile's whole region, wider than one iteration's elements.)
    for (b, _) in plan.versions.iter().filter(|(b, v)| *v > 1 && matches!(b.scope(), Scope::Shared | Scope::Local)) {
        if super::hazard::iterations_meet_when_run(root, l, &reduces_over, &|x| x == b).is_some() {
            return Err(Diagnostic::new(format!(
                "software pipeline of loop `{}`: one iteration reads or writes an element of `{}` that another writes, but the stages keep a version of it per iteration, so the value would not pass between them",
                l.var.name(),
                b.name()
            ))
            .help("put every statement that uses it in one stage"));
        }
    }
    check_extent(l, sizes)
}

/// The extent of a pipelined loop is a constant or an expression of the
/// function's run-time sizes (`sizes`): the same for every thread, so that
/// the tests of it around the prologue and epilogue, with barriers under
/// them, send a whole block one way.
pub fn check_extent(l: &For, sizes: &[Var]) -> Result<(), Diagnostic> {
    if l.extent.as_int().is_some() || l.extent.is_size_expr(sizes) {
        return Ok(());
    }
    Err(Diagnostic::new(format!(
        "software pipeline of loop `{}`: its extent `{}` depends on a loop variable or a load, not only on the function's sizes",
        l.var.name(),
        tirc_ir::printer::print_expr(&l.extent)
    ))
    .help("pipeline a loop whose extent is a constant or an expression of the function's sizes"))
}

pub use tirc_ir::launch::WGMMA_IN_FLIGHT;

/// Whether `s` holds a `wgmma` that reads `b`.
pub fn reads_async(s: &Stmt, b: &Buffer) -> bool {
    let mut found = false;
    s.walk(&mut |x| {
        if let Stmt::Wmma(w) = x {
            let t = w.op.wgmma_tiles();
            found |= t > 0 && w.tiles[t..].iter().any(|x| x.buffer == *b);
        }
    });
    found
}

pub fn analyze(l: &For, doubled: &[BufferId]) -> Result<Plan, Diagnostic> {
    let name = l.var.name();
    let err = |m: String| Diagnostic::new(format!("software pipeline of loop `{name}`: {m}"));
    let stages = int_list(l, STAGE)?.unwrap_or_default();
    let mut hoisted = Vec::new();
    let mut stmts = Vec::new();
    statements(&l.body, &mut hoisted, &mut stmts);
    let n = stmts.len();
    let listing =
        || stmts.iter().enumerate().map(|(j, s)| format!("{j}: {}", describe(s))).collect::<Vec<_>>().join("; ");
    if stages.len() != n {
        return Err(err(format!("`{STAGE}` has {} entries but the loop body has {n} statements", stages.len()))
            .help(format!("give one stage per statement of the body ({})", listing())));
    }
    let order = int_list(l, ORDER)?.unwrap_or_else(|| (0..n as i64).collect());
    if order.len() != n {
        return Err(err(format!("`{ORDER}` has {} entries but the loop body has {n} statements", order.len()))
            .help(format!("give one position per statement of the body ({})", listing())));
    }
    let mut sorted = order.clone();
    sorted.sort();
    if sorted != (0..n as i64).collect::<Vec<_>>() {
        return Err(err(format!("`{ORDER}` {order:?} is not a permutation of 0..{n}")));
    }
    if let Some(s) = stages.iter().find(|s| **s < 0) {
        return Err(err(format!("stage {s} is negative")));
    }
    // Each stage past the first writes out one more iteration before and
    // after the loop.
    if let Some(s) = stages.iter().find(|s| **s > MAX_STAGE) {
        return Err(err(format!("stage {s} makes a pipeline deeper than tirc writes out ({MAX_STAGE} stages)")));
    }
    let async_stages = int_list(l, ASYNC)?.unwrap_or_default();
    if let Some(s) = async_stages.iter().find(|s| !stages.contains(s)) {
        return Err(err(format!("`{ASYNC}` names stage {s}, which no statement is in")));
    }
    if l.kind != ForKind::Serial {
        return Err(err("only a serial loop can be pipelined".into()));
    }
    // The extent may be known only at run time (`inject_software_pipeline`
    // writes the prologue and epilogue out under tests of it).
    if l.min.as_int().is_none() {
        return Err(err("the loop's start must be a constant".into()));
    };

    // Dependences between statements, and the versions each buffer needs.
    let acc: Vec<_> = stmts.iter().map(accesses).collect();
    let mut buffers: Vec<Buffer> = Vec::new();
    for (r, w) in &acc {
        for b in r.iter().chain(w) {
            if !buffers.contains(b) {
                buffers.push(b.clone());
            }
        }
    }
    let mut versions: Vec<(Buffer, i64)> = Vec::new();
    for b in &buffers {
        let writers: Vec<usize> = (0..n).filter(|&j| acc[j].1.contains(b)).collect();
        let users: Vec<usize> = (0..n).filter(|&j| acc[j].0.contains(b) || acc[j].1.contains(b)).collect();
        // In program order, a write and a later access of the same buffer
        // keep their order.
        for &x in &users {
            for &y in users.iter().filter(|&&y| y > x) {
                if !writers.contains(&x) && !writers.contains(&y) {
                    continue;
                }
                if stages[y] < stages[x] {
                    return Err(err(format!(
                        "{} uses `{}` after {} in the loop body, but is in stage {}, earlier than stage {}",
                        describe(&stmts[y]),
                        b.name(),
                        describe(&stmts[x]),
                        stages[y],
                        stages[x]
                    ))
                    .help("a consumer's stage must be at least its producer's"));
                }
                if stages[y] == stages[x] && order[y] < order[x] {
                    return Err(err(format!(
                        "`{ORDER}` puts {} before {} in stage {}, but it uses `{}` after it",
                        describe(&stmts[y]),
                        describe(&stmts[x]),
                        stages[x],
                        b.name()
                    )));
                }
            }
        }
        let first_stage = users.iter().map(|&j| stages[j]).min().unwrap_or(0);
        if users.iter().all(|&j| stages[j] == first_stage) {
            continue;
        }
        // Read in several stages and written by none of the loop's
        // statements: one value for every iteration, nothing to keep.
        if writers.is_empty() {
            continue;
        }
        // Across stages: one writer, whose value the others read in the
        // same iteration, after it.
        // (Its writer reading it before writing it, as an accumulator
        // `C[i] = C[i] + ..` does, carries it too: with versions, an
        // iteration would add to the copy of two iterations before.)
        let carried = writers.len() > 1
            || users.iter().any(|&j| j < writers[0] && acc[j].0.contains(b))
            || first_access_reads(&stmts[writers[0]], b) == Some(true);
        if carried {
            return Err(err(format!(
                "`{}` is written by more than one statement or read before it is written, so it carries values from one iteration to the next; the statements that use it are in different stages",
                b.name()
            ))
            .help("put every statement that uses it in one stage"));
        }
        let p = writers[0];
        let mut v = users.iter().filter(|&&c| c != p).map(|&c| stages[c] - stages[p] + 1).max().unwrap_or(1).max(1);
        // A wgmma keeps reading its shared operands after it is issued:
        // one more version, so that a product may stay in flight while the
        // next iteration's copy refills the version before it
        // (`WGMMA_IN_FLIGHT`).
        if v > 1 && users.iter().any(|&c| reads_async(&stmts[c], b)) {
            v += 1;
        }
        if v > 1 {
            if b.scope() == Scope::Global {
                return Err(err(format!(
                    "`{}` lives in global memory and cannot be multi-buffered, but its producer and a consumer are in different stages",
                    b.name()
                )));
            }
            versions.push((b.clone(), v));
        }
    }

    // `double_buffer_scope` asks for two copies at least.
    for b in &buffers {
        if doubled.contains(&b.id()) && !versions.iter().any(|(x, _)| x == b) && b.scope() != Scope::Global {
            versions.push((b.clone(), 2));
        }
    }
    // An asynchronous copy must be waited for, in a later stage.
    let is_async: Vec<bool> = stages.iter().map(|s| async_stages.contains(s)).collect();
    let mut in_order: Vec<usize> = (0..n).collect();
    in_order.sort_by_key(|&j| order[j]);
    if let Some((p, c)) = AsyncPlan::new(&in_order, &stages, &is_async, &acc).same_stage_consumer {
        return Err(err(format!(
            "{} reads what the asynchronous copies of {} write, in the same stage {}",
            describe(&stmts[c]),
            describe(&stmts[p]),
            stages[p]
        ))
        .help("put the consumer in a later stage than the asynchronous copies, so that it can wait for them"));
    }
    Ok(Plan { stmts, hoisted, stages, order, async_stages, acc, versions })
}

/// Where the groups of asynchronous copies are committed and how many may
/// still be in flight before each statement.
pub struct AsyncPlan {
    /// Positions (in the expanded order) after which a group is committed:
    /// after the last statement of each asynchronous stage.
    pub commits_at: Vec<usize>,
    /// For each statement, the asynchronous statements whose copies it
    /// reads, with their stage distance.
    pub needs: Vec<Vec<(usize, i64)>>,
    pub stage_commit: Vec<Option<usize>>,
    pub same_stage_consumer: Option<(usize, usize)>,
}

impl AsyncPlan {
    pub fn new(
        in_order: &[usize],
        stages: &[i64],
        is_async: &[bool],
        acc: &[(HashSet<Buffer>, HashSet<Buffer>)],
    ) -> AsyncPlan {
        let n = stages.len();
        let mut pos = vec![0; n];
        for (p, &j) in in_order.iter().enumerate() {
            pos[j] = p;
        }
        // The commit of stage s follows its last statement in the order.
        let mut stage_commit = vec![None; n];
        let mut commits_at = Vec::new();
        for j in 0..n {
            if is_async[j] {
                let last = (0..n).filter(|&x| is_async[x] && stages[x] == stages[j]).map(|x| pos[x]).max();
                stage_commit[j] = last;
                if let Some(l) = last {
                    if !commits_at.contains(&l) {
                        commits_at.push(l);
                    }
                }
            }
        }
        commits_at.sort();
        let mut needs = vec![Vec::new(); n];
        let mut same_stage_consumer = None;
        for c in 0..n {
            for p in 0..n {
                if p == c || !is_async[p] {
                    continue;
                }
                let shared_written: Vec<&Buffer> = acc[p].1.iter().filter(|b| b.scope() == Scope::Shared).collect();
                if shared_written.iter().any(|b| acc[c].0.contains(*b)) {
                    let d = stages[c] - stages[p];
                    if d <= 0 {
                        same_stage_consumer.get_or_insert((p, c));
                    } else {
                        needs[c].push((p, d));
                    }
                }
            }
        }
        AsyncPlan { commits_at, needs, stage_commit, same_stage_consumer }
    }

    /// The `n` of the `wait_group(n)` statement `j` (at position `at`)
    /// needs: the fewest groups committed after one it reads from.
    pub fn wait_before(&self, j: usize, at: usize) -> Option<i64> {
        let per_iteration = self.commits_at.len() as i64;
        self.needs[j]
            .iter()
            .filter_map(|&(p, d)| {
                let commit = self.stage_commit[p]?;
                let after_in_its_iteration = self.commits_at.iter().filter(|&&c| c > commit).count() as i64;
                let before_here = self.commits_at.iter().filter(|&&c| c < at).count() as i64;
                Some(after_in_its_iteration + (d - 1) * per_iteration + before_here)
            })
            .min()
    }
}

/// How a statement first touches a buffer, along each path through it.
#[derive(Clone, Copy, PartialEq)]
enum First {
    /// Some path reads it before any write.
    Read,
    /// Every path writes it before reading it.
    Write,
    /// Some paths write it first, the others do not touch it.
    SomeWrite,
    /// No path touches it.
    Nothing,
}

/// `a` then `b`, in program order.
fn then_first(a: First, b: First) -> First {
    match (a, b) {
        (First::Read | First::Write, _) => a,
        // The paths that did not write meet `b`.
        (First::SomeWrite, First::Read) => First::Read,
        (First::SomeWrite, First::Write) => First::Write,
        (First::SomeWrite, _) => First::SomeWrite,
        (First::Nothing, _) => b,
    }
}

/// Whether some path through `s` reads `b` before writing it (what an
/// earlier iteration left is used): `Some(true)`; `Some(false)` when every
/// path that touches it writes first; `None` when `s` does not touch it. A
/// store's indices and value are read before it writes.
fn first_access_reads(s: &Stmt, b: &Buffer) -> Option<bool> {
    match first_access(s, b, &mut Vec::new()) {
        First::Read => Some(true),
        First::Write | First::SomeWrite => Some(false),
        First::Nothing => None,
    }
}

/// `firsts`: the loops inside the statement around `s`, each at its first
/// value: a test true there (a reduction's init, `if k == 0`) is taken on
/// every path's first pass.
fn first_access(s: &Stmt, b: &Buffer, firsts: &mut Vec<(Var, tirc_ir::Expr)>) -> First {
    let loads = |e: &tirc_ir::Expr| {
        let mut found = false;
        e.walk(&mut |x| found |= matches!(x, tirc_ir::Expr::Load(lb, _) if lb == b));
        found
    };
    let read_or = |read: bool, rest: First| if read { First::Read } else { rest };
    match s {
        Stmt::Store { buffer, indices, value } => {
            read_or(indices.iter().any(loads) || loads(value), if buffer == b { First::Write } else { First::Nothing })
        }
        Stmt::Seq(v) => v.iter().fold(First::Nothing, |acc, c| then_first(acc, first_access(c, b, firsts))),
        Stmt::For(l) => {
            firsts.push((l.var.clone(), l.min.clone()));
            let body = first_access(&l.body, b, firsts);
            firsts.pop();
            // A loop that may run no iteration writes on some paths only.
            let body =
                if body == First::Write && l.extent.as_int().is_none_or(|e| e < 1) { First::SomeWrite } else { body };
            read_or(loads(&l.min) || loads(&l.extent), body)
        }
        Stmt::If { cond, then, orelse } => {
            let a = first_access(then, b, firsts);
            let c = orelse.as_ref().map_or(First::Nothing, |e| first_access(e, b, firsts));
            // True where every loop inside the statement starts: the first
            // pass takes `then`.
            let first = tirc_ir::expr::fold_constants(&tirc_ir::subst::substitute(cond, firsts));
            if first.as_bool() == Some(true) && !loads(cond) {
                return a;
            }
            let both = match (a, c) {
                (First::Read, _) | (_, First::Read) => First::Read,
                (First::Write, First::Write) => First::Write,
                (First::Nothing, First::Nothing) => First::Nothing,
                _ => First::SomeWrite,
            };
            read_or(loads(cond), both)
        }
        Stmt::Let { value, body, .. } => read_or(loads(value), first_access(body, b, firsts)),
        Stmt::Allocate { body, .. } | Stmt::Launch { body, .. } => first_access(body, b, firsts),
        other => {
            // Anything else (a tensor-core operation, a block): reads if
            // any of its expressions or its parts reads `b`.
            let mut read = false;
            other.for_each_expr(|e| read |= loads(e));
            other.walk(&mut |x| x.for_each_expr(|e| read |= loads(e)));
            let mut touched = false;
            other.walk(&mut |x| touched |= matches!(x, Stmt::Store { buffer, .. } if buffer == b));
            read_or(read, if touched { First::Write } else { First::Nothing })
        }
    }
}
