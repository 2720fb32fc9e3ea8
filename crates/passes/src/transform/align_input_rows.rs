//! `align_input_rows`: an input whose rows are not aligned, and which the
//! kernels read many times, is copied once into a buffer whose rows are.
//!
//! A row of 4097 floats starts 4 bytes further into a 128-byte line than
//! the row before it. A warp that reads 32 consecutive elements of such a
//! row touches two lines instead of one, and a 16-byte vector copy of it
//! falls back to four 4-byte loads. No schedule of the kernel can change
//! where the caller's rows start, but one copy can: TVM leaves this to the
//! user (a padded `cache_read` into global memory), cuBLAS takes a slower
//! path. Measured on the H100 (docs/benchmarks.md, "Aligned copies of the
//! inputs"), the copy gives back what the misaligned rows cost.
//!
//! Contract. Runs on the scheduled function, before `split_kernels`. For
//! every parameter `P` of two or more dimensions and constant shape that
//! the function only reads, it looks at each load of `P` in a loop nest
//! bound to GPU threads, with the number of times it runs (the product of
//! the loops around it), and the alignment it wants of a row:
//! - 16 bytes, a vector, where the load is copied element for element
//!   (a block that stores the load, as `cache_read` makes) along a
//!   vectorized loop;
//! - 128 bytes, a line, where consecutive threads (`threadIdx.x`, a line's
//!   worth of them at least) read consecutive elements of a row, in a copy
//!   or in the computation;
//! - nothing otherwise (a row read by one thread, or broadcast), and
//!   nothing for a copy into global memory (`pad_einsum`'s): it is the
//!   copy an aligned one would make, read once.
//!
//! Where the rows of `P` (its last extent times the element size) miss the
//! alignment some load wants, and those loads run at least `MIN_READS`
//! times and `MIN_REUSE` times the elements of `P` (so that the copy, which
//! reads and writes `P` once, costs a few percent at most), `P` is copied
//! into `P_aligned` (global memory, the last extent padded to the next
//! multiple of 128 bytes, the padding zero), and every access to `P` reads
//! `P_aligned` instead. Indices do not change, so what is computed does not
//! change. The copy is a nest of its own at the top of the function, bound
//! to `blockIdx.x` and 256 threads: it becomes the first kernel.
//! `Mode::Always` copies wherever a load misses its alignment, whatever the
//! count (for tests, and for a user who knows better); `Mode::Never` leaves
//! the function as it is. A size known only at run time leaves the count
//! unknown: `Mode::Auto` then copies nothing. A kernel that copies its
//! tiles by TMA (`tirc.warp_specialize`) is left alone: it checks its
//! tiles' bounds against the buffer it copies from.

use crate::schedule::cache::{copy_block_nest, root_stmts, set_root};
use crate::schedule::{bind::bind, fuse::fuse, get, split::split, Schedule};
use tirc_ir::subst::{replace_buffers_stmt, substitute};
use tirc_ir::{BinOp, Buffer, Expr, ForKind, PrimFunc, Range, Scope, Stmt, Var};

/// Whether to copy misaligned inputs (`--aligned-copies`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// Where the loads that miss their alignment run often enough.
    #[default]
    Auto,
    /// Wherever a load misses its alignment.
    Always,
    /// Never.
    Never,
}

impl Mode {
    pub fn parse(s: &str) -> Result<Mode, String> {
        match s {
            "auto" => Ok(Mode::Auto),
            "always" => Ok(Mode::Always),
            "never" => Ok(Mode::Never),
            _ => Err(format!("`{s}` is not one of auto, always, never")),
        }
    }

    /// The name `parse` reads.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Auto => "auto",
            Mode::Always => "always",
            Mode::Never => "never",
        }
    }
}

/// A line of global memory: what a warp's consecutive loads want.
pub const LINE: usize = 128;
/// A vector load: what a vectorized copy wants.
pub const VECTOR: usize = 16;
/// `Mode::Auto` copies only for loads that run this many times...
pub const MIN_READS: u128 = 1 << 26;
/// ... and this many times the elements of the input.
pub const MIN_REUSE: u128 = 32;
/// ... and only rows of this many bytes at least, which the padding grows
/// by an eighth at most.
pub const MIN_ROW: usize = 8 * LINE;
/// Threads per block of the copy.
const THREADS: i64 = 256;

/// One input copied: the parameter, its aligned copy, and why.
#[derive(Clone, Debug)]
pub struct Copied {
    pub input: Buffer,
    pub copy: Buffer,
    /// How many times the loads that missed their alignment run (`None`
    /// where a size is known only at run time).
    pub reads: Option<u128>,
    /// The alignment those loads want, in bytes.
    pub want: usize,
}

impl Copied {
    /// One line for the user: what was copied, and why.
    pub fn describe(&self) -> String {
        let shape = |b: &Buffer| b.shape().iter().map(tirc_ir::printer::print_expr).collect::<Vec<_>>().join(", ");
        let row = self.input.shape().last().and_then(Expr::as_int).unwrap_or(0) as usize * self.input.dtype().bytes();
        let reads = match self.reads {
            Some(n) => format!("loads run up to {n} times"),
            None => "loads".into(),
        };
        format!(
            "`{}` [{}] copied to `{}` [{}]: its rows of {row} bytes miss the {}-byte alignment of {reads}",
            self.input.name(),
            shape(&self.input),
            self.copy.name(),
            shape(&self.copy),
            self.want
        )
    }
}

/// The function with its misaligned inputs copied, what was copied, and
/// why copies that were due could not be made (a warning for the user).
pub fn run(f: &PrimFunc, mode: Mode) -> (PrimFunc, Vec<Copied>, Option<String>) {
    if mode == Mode::Never || warp_specialized(&f.body) {
        return (f.clone(), vec![], None);
    }
    let mut loads = Vec::new();
    scan(&f.body, Some(1), &mut Env::default(), &mut loads);
    let mut chosen = Vec::new();
    for p in &f.params {
        let Some(row) = row_bytes(p) else { continue };
        if f.body.stores_to(p) || written_by_a_block(&f.body, p) {
            continue;
        }
        let missed: Vec<&Load> = loads.iter().filter(|l| l.buffer == *p && l.want > 0 && row % l.want != 0).collect();
        if missed.is_empty() {
            continue;
        }
        let want = missed.iter().map(|l| l.want).max().unwrap_or(LINE);
        let reads = missed.iter().try_fold(0u128, |acc, l| l.count.map(|c| acc.saturating_add(c)));
        let elements: u128 = p.shape().iter().filter_map(Expr::as_int).map(|n| n as u128).product();
        // Rows shorter than `MIN_ROW` would grow by more than an eighth.
        let often = row >= MIN_ROW && reads.is_some_and(|n| n >= MIN_READS && n >= MIN_REUSE.saturating_mul(elements));
        if mode == Mode::Always || often {
            chosen.push((p.clone(), reads, want));
        }
    }
    if chosen.is_empty() {
        return (f.clone(), vec![], None);
    }
    match copy(f, &chosen) {
        Ok((g, copied)) => (g, copied, None),
        // The copy is a few schedule steps on a nest this pass built; should
        // one of them refuse, the function stays as it was (slower, not
        // wrong), and the user is told.
        Err(why) => {
            let names: Vec<&str> = chosen.iter().map(|(p, ..)| p.name()).collect();
            (f.clone(), vec![], Some(format!("the aligned copies of {} were not made: {why}", names.join(", "))))
        }
    }
}

/// A kernel whose copies TMA makes (`tirc.warp_specialize`) tests its
/// tiles against the buffer it copies from: it is left to read its inputs
/// as given, and to say so where their rows do not suit TMA.
fn warp_specialized(body: &Stmt) -> bool {
    let mut found = false;
    body.walk(&mut |s| {
        if let Stmt::For(l) = s {
            // A value lowering refuses counts as asking: it is refused there.
            found |= super::warp_specialize::asked(l).unwrap_or(true);
        }
    });
    found
}

/// The bytes of one row of `p`: its last extent times its element size,
/// for a buffer of two or more dimensions and constant shape.
fn row_bytes(p: &Buffer) -> Option<usize> {
    if p.shape().len() < 2 || p.scope() != Scope::Global {
        return None;
    }
    let dims: Option<Vec<i64>> = p.shape().iter().map(Expr::as_int).collect();
    let last = *dims?.last()?;
    (last > 0).then(|| last as usize * p.dtype().bytes())
}

fn written_by_a_block(body: &Stmt, p: &Buffer) -> bool {
    body.blocks().iter().any(|r| r.block.writes.iter().any(|w| w.buffer == *p))
}

/// A load of a parameter: how many times it runs, and the alignment of a
/// row it wants (0: none).
struct Load {
    buffer: Buffer,
    count: Option<u128>,
    want: usize,
}

#[derive(Default)]
struct Env {
    /// The loops around, with their kinds and constant extents.
    loops: Vec<(Var, ForKind, Option<i64>)>,
    /// Block variables in terms of the loops.
    subst: Vec<(Var, Expr)>,
    /// Whether the statement is inside a block that copies a load.
    copy: bool,
    /// ... into global memory: a copy already (`pad_einsum`'s, a
    /// `cache_read` into global memory), whose reads an aligned copy would
    /// only double.
    global_copy: bool,
}

fn scan(s: &Stmt, count: Option<u128>, env: &mut Env, out: &mut Vec<Load>) {
    match s {
        Stmt::For(l) => {
            // A loop bound to a thread axis that a loop around it is bound
            // to too is the same threads, not more of them.
            let again = matches!(&l.kind, ForKind::ThreadBinding(t)
                if env.loops.iter().any(|(_, k, _)| matches!(k, ForKind::ThreadBinding(u) if u == t)));
            let n = match again {
                true => Some(1),
                false => l.extent.as_int().filter(|n| *n >= 0).map(|n| n as u128),
            };
            let inner = count.zip(n).map(|(c, n)| c.saturating_mul(n));
            env.loops.push((l.var.clone(), l.kind, l.extent.as_int()));
            scan(&l.body, inner, env, out);
            env.loops.pop();
        }
        Stmt::Block(r) => {
            let depth = env.subst.len();
            for (iv, v) in r.block.iter_vars.iter().zip(&r.iter_values) {
                let v = substitute(v, &env.subst);
                env.subst.push((iv.var.clone(), v));
            }
            let was = (env.copy, env.global_copy);
            env.copy = is_copy(&r.block.body) && r.block.init.is_none();
            env.global_copy =
                env.copy && matches!(&r.block.body, Stmt::Store { buffer, .. } if buffer.scope() == Scope::Global);
            r.predicate.walk(&mut |e| note(e, count, env, out));
            if let Some(init) = &r.block.init {
                scan(init, count, env, out);
            }
            scan(&r.block.body, count, env, out);
            (env.copy, env.global_copy) = was;
            env.subst.truncate(depth);
        }
        s => {
            s.for_each_expr(|e| e.walk(&mut |x| note(x, count, env, out)));
            s.for_each_child(|c| scan(c, count, env, out));
        }
    }
}

/// A store whose value is a load (or a load or zero: a zero-filled copy).
fn is_copy(body: &Stmt) -> bool {
    match body {
        Stmt::Store { value, .. } => matches!(value, Expr::Load(..)) || value.as_zero_fill().is_some(),
        _ => false,
    }
}

fn note(e: &Expr, count: Option<u128>, env: &Env, out: &mut Vec<Load>) {
    let Expr::Load(b, idx) = e else { return };
    if b.scope() != Scope::Global || idx.len() < 2 {
        return;
    }
    // Only loads that GPU threads run.
    if !env.loops.iter().any(|(_, k, _)| matches!(k, ForKind::ThreadBinding(_))) {
        return;
    }
    let last = substitute(&idx[idx.len() - 1], &env.subst);
    let bytes = b.dtype().bytes().max(1);
    // The loop along which consecutive elements are read: a vector's
    // lanes in a copy, else the threads of a warp.
    let vector = env.loops.iter().find(|(v, k, _)| env.copy && *k == ForKind::Vectorized && last.uses(v));
    let threads = env
        .loops
        .iter()
        .find(|(v, k, _)| matches!(k, ForKind::ThreadBinding(t) if !t.is_block && t.dim == 0) && last.uses(v));
    let want = match (vector, threads) {
        _ if env.global_copy => 0,
        (Some((v, ..)), _) if starts_aligned(&last, v, VECTOR / bytes) => VECTOR,
        // The threads must span a line at least: three threads along a
        // row of three floats gain nothing from a line of their own.
        (None, Some((v, _, Some(n)))) if *n as usize * bytes >= LINE && starts_aligned(&last, v, LINE / bytes) => LINE,
        _ => 0,
    };
    out.push(Load { buffer: b.clone(), count, want });
}

/// Whether the run of elements that `along` walks starts at a multiple of
/// `unit` elements from its row's start, whatever the other variables:
/// `along` steps the index by one, and every other variable, set to 1 or 2
/// with the rest at 0, moves it by a multiple of `unit`. (`x + s` with `s`
/// a loop of the filter window does not: its runs start anywhere in a
/// line, however the rows are laid out, and aligning them gains nothing.)
fn starts_aligned(index: &Expr, along: &Var, unit: usize) -> bool {
    let unit = unit.max(1) as i64;
    let mut vars: Vec<Var> = Vec::new();
    index.walk(&mut |e| {
        if let Expr::Var(v) = e {
            if !vars.contains(v) {
                vars.push(v.clone());
            }
        }
    });
    let at = |which: Option<&Var>, value: i64| {
        tirc_ir::expr::eval(index, &|v| Some(if Some(v) == which { value } else { 0 }))
    };
    let Some(base) = at(None, 0) else { return false };
    if base % unit != 0 || at(Some(along), 1) != Some(base + 1) {
        return false;
    }
    vars.iter()
        .filter(|v| *v != along)
        .all(|v| [1, 2].iter().all(|&x| at(Some(v), x).is_some_and(|e| (e - base) % unit == 0)))
}

/// The function with each of `chosen` copied at its top and read from the
/// copy; the reason where a schedule step refused.
fn copy(f: &PrimFunc, chosen: &[(Buffer, Option<u128>, usize)]) -> Result<(PrimFunc, Vec<Copied>), String> {
    // Fresh against buffers and blocks, and against the scalar parameters
    // and sizes, whose names are the kernels' arguments too.
    let mut taken = crate::common::tree::block_and_buffer_names(f);
    taken.extend(f.scalars.iter().chain(&f.sizes).map(|v| v.name().to_string()));
    let mut root = f.body.clone();
    let mut nests = Vec::new();
    let mut map = Vec::new();
    let mut copied = Vec::new();
    for (p, reads, want) in chosen {
        let name = crate::common::tree::fresh_name(&taken, &format!("{}_aligned", p.name()));
        taken.push(name.clone());
        let per_line = (LINE / p.dtype().bytes().max(1)) as i64;
        let mut shape = p.shape().to_vec();
        let last = p.shape().last().and_then(Expr::as_int).ok_or("a shape not known")?;
        let padded = (last + per_line - 1) / per_line * per_line;
        if let Some(l) = shape.last_mut() {
            *l = Expr::int(padded);
        }
        let q = Buffer::new(name.clone(), p.dtype(), shape.clone(), Scope::Global);
        let zero = Expr::zero(p.dtype());
        let value = |load: Expr, idx: &[Expr]| {
            let inside = Expr::binary(BinOp::Lt, idx[idx.len() - 1].clone(), Expr::int(last));
            Expr::Select(Box::new(inside), Box::new(load), Box::new(zero.clone()))
        };
        let ranges: Vec<Range> = shape.iter().map(|n| Range::from_extent(n.clone())).collect();
        nests.push((name.clone(), copy_block_nest(&mut root, &name, &ranges, "ax", &q, p, &value)));
        map.push((p.clone(), q.clone()));
        copied.push(Copied { input: p.clone(), copy: q, reads: *reads, want: *want });
    }
    let rest: Vec<Stmt> = root_stmts(&f.body).iter().map(|s| replace_buffers_stmt(s, &map)).collect();
    let mut stmts: Vec<Stmt> = nests.iter().map(|(_, s)| s.clone()).collect();
    stmts.extend(rest);
    let mut sch = Schedule::new(f.clone());
    set_root(&mut sch, stmts, map.iter().map(|(_, q)| q.clone()).collect());
    for (name, _) in &nests {
        let why = |e: crate::schedule::ScheduleError| e.message;
        let block = get::get_block(&sch, name).map_err(why)?;
        let loops = get::get_loops(&sch, &block).map_err(why)?;
        let fused = fuse(&mut sch, &loops).map_err(why)?;
        let parts = split(&mut sch, &fused, &[None, Some(THREADS)]).map_err(why)?;
        bind(&mut sch, &parts[0], "blockIdx.x").map_err(why)?;
        bind(&mut sch, &parts[1], "threadIdx.x").map_err(why)?;
    }
    Ok((sch.func, copied))
}
