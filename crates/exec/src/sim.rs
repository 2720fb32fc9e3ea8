//! The CPU simulator: runs a lowered kernel the way a GPU would, block by
//! block, with the threads of a block in lockstep.
//!
//! Each statement runs for every active thread of the block before the next
//! one starts, which is the behaviour of barrier-synchronised code whose
//! control flow around barriers is uniform. Conditionals and loops with
//! thread-dependent bounds narrow the set of active threads; a barrier
//! reached by only some of the block's threads is an error, as it would hang
//! or misbehave on the GPU. Local buffers are per thread, shared buffers per
//! block, parameters global. Within a block, shared memory is checked for
//! races: an access by one thread to a word another thread wrote (or read,
//! for a write) since the last barrier is reported with the buffer, the
//! index and both threads.
//!
//! Float values are computed in f64 and rounded to the buffer's type when
//! stored, so a float32 kernel sees float32 storage; `f64_storage` keeps
//! every float at f64, for references.

use crate::data::HostData;
use smallvec::{smallvec, SmallVec};
use std::collections::HashMap;
use tirc_ir::{BinOp, Buffer, DType, Expr, Intrinsic, PrimFunc, Scope, Stmt};
use tirc_passes::transform::extract_launch::launch_config;

#[derive(Clone, Copy, Debug, Default)]
pub struct SimOptions {
    /// Keep floats at f64 in every buffer (for reference runs).
    pub f64_storage: bool,
    /// Do not report races on shared memory: for kernels whose barriers
    /// are not placed yet. Lockstep execution still gives the result the
    /// kernel means.
    pub ignore_races: bool,
}

/// Counts from one simulated launch.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SimStats {
    pub blocks: i64,
    pub threads_per_block: i64,
    pub barriers: u64,
}

/// An error in the simulated kernel: a race, an out-of-bounds access, a
/// barrier under divergent control flow.
pub type SimError = String;

/// Runs a lowered function. `args` hold the parameter buffers, in order; the
/// results are left in them.
pub fn run(f: &PrimFunc, args: &mut [HostData], opts: SimOptions) -> Result<SimStats, SimError> {
    if args.len() != f.params.len() {
        return Err(format!("{} has {} parameters but {} buffers were given", f.name, f.params.len(), args.len()));
    }
    let cfg = launch_config(f);
    let nthreads = cfg.threads_per_block() as usize;
    let mut global: Vec<Mem> = Vec::new();
    for (b, d) in f.params.iter().zip(args.iter()) {
        let n = b.num_elements().ok_or_else(|| format!("buffer {} has no constant size", b.name()))? as usize;
        if d.len() != n {
            return Err(format!("buffer {} needs {n} elements, {} given", b.name(), d.len()));
        }
        global.push(Mem { buffer: b.clone(), data: d.to_f64(), per_thread: 0, shared: false });
    }
    let mut m = Machine {
        opts,
        nthreads,
        tid: (0..nthreads)
            .map(|t| {
                let t = t as i64;
                [t % cfg.block[0], t / cfg.block[0] % cfg.block[1], t / (cfg.block[0] * cfg.block[1])]
            })
            .collect(),
        mems: global,
        vars: HashMap::new(),
        stats: SimStats { blocks: cfg.blocks(), threads_per_block: cfg.threads_per_block(), barriers: 0 },
        track: Vec::new(),
        open: vec![Vec::new(); nthreads],
        committed: vec![Default::default(); nthreads],
    };
    // The launch head: bind the built-in indices.
    let mut body = &f.body;
    let mut axes = Vec::new();
    while let Stmt::Launch { var, tag, body: b, .. } = body {
        axes.push((var.clone(), *tag));
        body = b;
    }
    let all: Vec<usize> = (0..nthreads).collect();
    for bz in 0..cfg.grid[2] {
        for by in 0..cfg.grid[1] {
            for bx in 0..cfg.grid[0] {
                let bidx = [bx, by, bz];
                for (v, tag) in &axes {
                    let col: Vec<i64> = if tag.is_block {
                        vec![bidx[tag.dim as usize]; nthreads]
                    } else {
                        m.tid.iter().map(|t| t[tag.dim as usize]).collect()
                    };
                    m.vars.insert(v.key(), Col::I(col.into()));
                }
                m.track.clear();
                m.open.iter_mut().for_each(Vec::clear);
                m.committed.iter_mut().for_each(|c| c.clear());
                m.exec(body, &all)?;
            }
        }
    }
    for (i, d) in args.iter_mut().enumerate() {
        let mem = &m.mems[i];
        write_back(d, &mem.data);
    }
    Ok(m.stats)
}

fn write_back(d: &mut HostData, data: &[f64]) {
    match d {
        HostData::F32(v) => v.iter_mut().zip(data).for_each(|(x, y)| *x = *y as f32),
        HostData::F64(v) => v.copy_from_slice(data),
        HostData::I32(v) => v.iter_mut().zip(data).for_each(|(x, y)| *x = *y as i32),
        HostData::I64(v) => v.iter_mut().zip(data).for_each(|(x, y)| *x = *y as i64),
        HostData::U8(v) => v.iter_mut().zip(data).for_each(|(x, y)| *x = *y as u8),
        HostData::F16(v) => v.iter_mut().zip(data).for_each(|(x, y)| *x = half::f16::from_f64(*y)),
        HostData::BF16(v) => v.iter_mut().zip(data).for_each(|(x, y)| *x = half::bf16::from_f64(*y)),
    }
}

/// Values of one expression for the active threads, in their order.
#[derive(Clone, Debug)]
enum Col {
    I(Lanes<i64>),
    F(Lanes<f64>),
}

/// One value per active thread; a few live inline, without allocating (the
/// one-thread case of unlaunched functions is the common one).
type Lanes<T> = SmallVec<[T; 4]>;

impl Col {
    fn len(&self) -> usize {
        match self {
            Col::I(v) => v.len(),
            Col::F(v) => v.len(),
        }
    }

    fn f(&self, i: usize) -> f64 {
        match self {
            Col::I(v) => v[i] as f64,
            Col::F(v) => v[i],
        }
    }

    fn i(&self, i: usize) -> i64 {
        match self {
            Col::I(v) => v[i],
            Col::F(v) => v[i] as i64,
        }
    }
}

struct Mem {
    buffer: Buffer,
    data: Vec<f64>,
    /// Elements per thread for local buffers (0 for shared and global).
    per_thread: usize,
    shared: bool,
}

/// Who touched a shared word since the last barrier.
#[derive(Clone, Default)]
struct Access {
    writer: Option<usize>,
    readers: Vec<usize>,
}

struct Machine {
    opts: SimOptions,
    nthreads: usize,
    tid: Vec<[i64; 3]>,
    mems: Vec<Mem>,
    /// Variable values, one per thread of the block (indexed by thread id).
    vars: HashMap<usize, Col>,
    stats: SimStats,
    /// Race tracking per shared memory, per word.
    track: Vec<(usize, HashMap<usize, Access>)>,
    /// Per thread, its asynchronous copies not yet in a group: (memory,
    /// address, value).
    open: Vec<Vec<(usize, usize, f64)>>,
    /// Per thread, its committed groups of asynchronous copies, oldest
    /// first; they land in shared memory at the `wait_group` that covers
    /// them, so a kernel that reads before waiting sees stale data.
    committed: Vec<std::collections::VecDeque<Vec<(usize, usize, f64)>>>,
}

impl Machine {
    fn mem_index(&self, b: &Buffer) -> Result<usize, SimError> {
        self.mems
            .iter()
            .rposition(|m| &m.buffer == b)
            .ok_or_else(|| format!("buffer {} is used outside its allocation", b.name()))
    }

    fn exec(&mut self, s: &Stmt, active: &[usize]) -> Result<(), SimError> {
        if active.is_empty() {
            return Ok(());
        }
        match s {
            Stmt::Seq(v) => {
                for x in v {
                    self.exec(x, active)?;
                }
            }
            Stmt::NoOp => {}
            Stmt::Barrier => {
                if active.len() != self.nthreads {
                    return Err(format!(
                        "a barrier is reached by {} of the block's {} threads: barriers must not sit under thread-dependent control flow",
                        active.len(),
                        self.nthreads
                    ));
                }
                self.stats.barriers += 1;
                for (_, t) in &mut self.track {
                    t.clear();
                }
            }
            Stmt::AsyncCommit => {
                for &t in active {
                    let g = std::mem::take(&mut self.open[t]);
                    self.committed[t].push_back(g);
                }
            }
            Stmt::AsyncWait(n) => {
                for &t in active {
                    while self.committed[t].len() > *n as usize {
                        let Some(g) = self.committed[t].pop_front() else { break };
                        for (mi, a, v) in g {
                            self.touch(mi, a, t, true)?;
                            self.mems[mi].data[a] = v;
                        }
                    }
                }
            }
            Stmt::Store { buffer, indices, value: Expr::Call(Intrinsic::CpAsync, args) } if args.len() == 1 => {
                // Issued now, landing at a later wait: the write is checked
                // for races both now and when it lands.
                let v = self.eval(&args[0], active)?;
                let idx = self.linear_index(buffer, indices, active)?;
                let mi = self.mem_index(buffer)?;
                if !self.mems[mi].shared {
                    return Err(format!("an asynchronous copy into {}, which is not in shared memory", buffer.name()));
                }
                let round = rounder(buffer.dtype(), self.opts.f64_storage);
                for (k, &t) in active.iter().enumerate() {
                    let a = self.address(mi, idx.i(k), t)?;
                    self.touch(mi, a, t, true)?;
                    self.open[t].push((mi, a, round(v.f(k))));
                }
            }
            Stmt::Store { buffer, indices, value } => {
                let v = self.eval(value, active)?;
                let idx = self.linear_index(buffer, indices, active)?;
                let mi = self.mem_index(buffer)?;
                let round = rounder(buffer.dtype(), self.opts.f64_storage);
                for (k, &t) in active.iter().enumerate() {
                    let a = self.address(mi, idx.i(k), t)?;
                    if self.mems[mi].shared {
                        self.touch(mi, a, t, true)?;
                    }
                    self.mems[mi].data[a] = round(v.f(k));
                }
            }
            Stmt::If { cond, then, orelse } => {
                let c = self.eval(cond, active)?;
                let (yes, no) = split_lanes(&c, active);
                self.exec(then, &yes)?;
                if let Some(e) = orelse {
                    self.exec(e, &no)?;
                }
            }
            Stmt::For(l) => {
                let min = self.eval(&l.min, active)?;
                let ext = self.eval(&l.extent, active)?;
                let max_ext = (0..active.len()).map(|k| ext.i(k)).max().unwrap_or(0);
                let uniform = (0..active.len()).all(|k| ext.i(k) == max_ext);
                let key = l.var.key();
                for it in 0..max_ext {
                    let now: Vec<usize> = if uniform {
                        active.to_vec()
                    } else {
                        active.iter().enumerate().filter(|(k, _)| it < ext.i(*k)).map(|(_, t)| *t).collect()
                    };
                    let col = self.vars.entry(key).or_insert_with(|| Col::I(smallvec![0; 0]));
                    if col.len() != self.nthreads {
                        *col = Col::I(smallvec![0; self.nthreads]);
                    }
                    if let Col::I(v) = col {
                        for (k, &t) in active.iter().enumerate() {
                            v[t] = min.i(k) + it;
                        }
                    }
                    self.exec(&l.body, &now)?;
                }
            }
            Stmt::Let { var, value, body } => {
                let v = self.eval(value, active)?;
                let mut col = match &v {
                    Col::I(_) => Col::I(smallvec![0; self.nthreads]),
                    Col::F(_) => Col::F(smallvec![0.0; self.nthreads]),
                };
                for (k, &t) in active.iter().enumerate() {
                    match &mut col {
                        Col::I(c) => c[t] = v.i(k),
                        Col::F(c) => c[t] = v.f(k),
                    }
                }
                self.vars.insert(var.key(), col);
                self.exec(body, active)?;
            }
            Stmt::Allocate { buffer, body } => {
                let n = buffer.num_elements().ok_or_else(|| format!("buffer {} has no constant size", buffer.name()))?
                    as usize;
                let (per_thread, shared, size) = match buffer.scope() {
                    Scope::Local => (n, false, n * self.nthreads),
                    Scope::Shared => (0, true, n),
                    Scope::Global => (0, false, n),
                };
                // Uninitialised memory reads as NaN, so that a read of
                // something never written cannot go unnoticed.
                self.mems.push(Mem { buffer: buffer.clone(), data: vec![f64::NAN; size], per_thread, shared });
                let mi = self.mems.len() - 1;
                if shared {
                    self.track.push((mi, HashMap::new()));
                }
                let r = self.exec(body, active);
                if shared {
                    self.track.retain(|(i, _)| *i != mi);
                }
                self.mems.pop();
                r?;
            }
            Stmt::Launch { .. } => return Err("a launch inside the kernel body".into()),
            Stmt::Block(r) => self.block(r, active)?,
        }
        Ok(())
    }

    /// Runs a block realize: binds its variables, applies its predicate,
    /// runs its init when every reduction variable is at its start, and
    /// allocates its buffers around its body.
    fn block(&mut self, r: &tirc_ir::BlockRealize, active: &[usize]) -> Result<(), SimError> {
        let mut at_start: Vec<bool> = vec![true; active.len()];
        for (iv, v) in r.block.iter_vars.iter().zip(&r.iter_values) {
            let val = self.eval(v, active)?;
            let mut col = vec![0i64; self.nthreads];
            for (k, &t) in active.iter().enumerate() {
                col[t] = val.i(k);
            }
            self.vars.insert(iv.var.key(), Col::I(col.into()));
            if iv.kind == tirc_ir::IterKind::Reduce {
                let min = self.eval(&iv.dom.min, active)?;
                for (k, s) in at_start.iter_mut().enumerate() {
                    *s &= val.i(k) == min.i(k);
                }
            }
        }
        let p = self.eval(&r.predicate, active)?;
        let on: Vec<usize> = active.iter().enumerate().filter(|(k, _)| p.i(*k) != 0).map(|(_, t)| *t).collect();
        if let Some(init) = &r.block.init {
            let first: Vec<usize> =
                active.iter().enumerate().filter(|(k, _)| p.i(*k) != 0 && at_start[*k]).map(|(_, t)| *t).collect();
            self.exec(init, &first)?;
        }
        if r.block.alloc_buffers.is_empty() {
            return self.exec(&r.block.body, &on);
        }
        let mut body = r.block.body.clone();
        for b in r.block.alloc_buffers.iter().rev() {
            body = Stmt::Allocate { buffer: b.clone(), body: Box::new(body) };
        }
        self.exec(&body, &on)
    }

    /// The row-major element index of an access, checked per dimension.
    fn linear_index(&mut self, b: &Buffer, idx: &[Expr], active: &[usize]) -> Result<Col, SimError> {
        if idx.len() == 1 {
            return self.eval(&idx[0], active);
        }
        let shape = b.const_shape().ok_or_else(|| format!("buffer {} has no constant shape", b.name()))?;
        if shape.len() != idx.len() {
            return Err(format!("buffer {} has {} dimensions, accessed with {}", b.name(), shape.len(), idx.len()));
        }
        let mut acc = vec![0i64; active.len()];
        for (d, e) in idx.iter().enumerate() {
            let c = self.eval(e, active)?;
            for (k, a) in acc.iter_mut().enumerate() {
                let v = c.i(k);
                if v < 0 || v >= shape[d] {
                    return Err(format!(
                        "out-of-bounds access: index {v} of dimension {d} of {} (extent {})",
                        b.name(),
                        shape[d]
                    ));
                }
                *a = *a * shape[d] + v;
            }
        }
        Ok(Col::I(acc.into()))
    }

    fn address(&self, mi: usize, idx: i64, thread: usize) -> Result<usize, SimError> {
        let m = &self.mems[mi];
        let n = if m.per_thread > 0 { m.per_thread } else { m.data.len() };
        if idx < 0 || idx as usize >= n {
            let t = self.tid[thread];
            return Err(format!(
                "out-of-bounds access: {}[{idx}] with {n} elements, by thread ({}, {}, {})",
                m.buffer.name(),
                t[0],
                t[1],
                t[2]
            ));
        }
        Ok(if m.per_thread > 0 { thread * m.per_thread + idx as usize } else { idx as usize })
    }

    /// Records a shared-memory access and reports a race with an earlier
    /// one by another thread since the last barrier.
    fn touch(&mut self, mi: usize, addr: usize, t: usize, write: bool) -> Result<(), SimError> {
        if self.opts.ignore_races {
            return Ok(());
        }
        let Machine { track, tid, mems, .. } = self;
        let Some((_, table)) = track.iter_mut().find(|(i, _)| *i == mi) else { return Ok(()) };
        let acc = table.entry(addr).or_default();
        let show = |x: usize| format!("({}, {}, {})", tid[x][0], tid[x][1], tid[x][2]);
        let name = || mems[mi].buffer.name().to_string();
        if let Some(w) = acc.writer {
            if w != t {
                let what = if write { "writes" } else { "reads" };
                return Err(format!(
                    "race on shared memory: thread {} {what} {}[{addr}], which thread {} wrote since the last barrier",
                    show(t),
                    name(),
                    show(w)
                ));
            }
        }
        if write {
            if let Some(r) = acc.readers.iter().find(|r| **r != t) {
                return Err(format!(
                    "race on shared memory: thread {} writes {}[{addr}], which thread {} read since the last barrier",
                    show(t),
                    name(),
                    show(*r)
                ));
            }
            acc.writer = Some(t);
        } else if !acc.readers.contains(&t) {
            acc.readers.push(t);
        }
        Ok(())
    }

    fn eval(&mut self, e: &Expr, active: &[usize]) -> Result<Col, SimError> {
        let n = active.len();
        Ok(match e {
            Expr::Int(v, _) => Col::I(smallvec![*v; n]),
            Expr::Float(v, _) => Col::F(smallvec![*v; n]),
            Expr::Var(v) => {
                let col = self.vars.get(&v.key()).ok_or_else(|| format!("variable {} has no value", v.name()))?;
                match col {
                    Col::I(c) => Col::I(active.iter().map(|&t| c[t]).collect()),
                    Col::F(c) => Col::F(active.iter().map(|&t| c[t]).collect()),
                }
            }
            Expr::Not(a) => {
                let x = self.eval(a, active)?;
                Col::I((0..n).map(|k| i64::from(x.i(k) == 0)).collect())
            }
            // As CUDA's `?:` (and TVM's `if_then_else`), each thread
            // evaluates only the branch its condition picks: the other may
            // read out of bounds, as padding code does.
            Expr::Select(c, a, b) => {
                let c = self.eval(c, active)?;
                let (yes, no) = split_lanes(&c, active);
                let x = self.eval(a, &yes)?;
                let y = self.eval(b, &no)?;
                merge_lanes(&c, &x, &y)
            }
            // `&&` and `||` short-circuit in CUDA: `i < n && A[i] > 0` must
            // not read A out of bounds where `i < n` is false.
            Expr::Binary(op @ (BinOp::And | BinOp::Or), a, b) => {
                let x = self.eval(a, active)?;
                let (yes, no) = split_lanes(&x, active);
                let rest = if *op == BinOp::And { &yes } else { &no };
                let y = self.eval(b, rest)?;
                let y = Col::I((0..y.len()).map(|k| i64::from(y.i(k) != 0)).collect());
                let short = Col::I(smallvec![i64::from(*op == BinOp::Or); active.len() - rest.len()]);
                if *op == BinOp::And {
                    merge_lanes(&x, &y, &short)
                } else {
                    merge_lanes(&x, &short, &y)
                }
            }
            Expr::Binary(op, a, b) => {
                let x = self.eval(a, active)?;
                let y = self.eval(b, active)?;
                binary(*op, a.dtype(), &x, &y, self.opts.f64_storage)?
            }
            Expr::Cast(t, a) => {
                let x = self.eval(a, active)?;
                if t.is_float() {
                    let r = rounder(*t, self.opts.f64_storage);
                    Col::F((0..n).map(|k| r(x.f(k))).collect())
                } else if t.is_bool() {
                    Col::I((0..n).map(|k| i64::from(x.f(k) != 0.0)).collect())
                } else {
                    Col::I((0..n).map(|k| wrap_int(x.f(k).trunc() as i64, *t)).collect())
                }
            }
            Expr::Load(b, idx) => {
                let i = self.linear_index(b, idx, active)?;
                let mi = self.mem_index(b)?;
                let mut out: Lanes<f64> = SmallVec::with_capacity(n);
                for (k, &t) in active.iter().enumerate() {
                    let a = self.address(mi, i.i(k), t)?;
                    if self.mems[mi].shared {
                        self.touch(mi, a, t, false)?;
                    }
                    out.push(self.mems[mi].data[a]);
                }
                if b.dtype().is_float() {
                    Col::F(out)
                } else {
                    Col::I(out.into_iter().map(|x| x as i64).collect())
                }
            }
            Expr::Call(Intrinsic::Likely | Intrinsic::CpAsync, args) => self.eval(&args[0], active)?,
            Expr::Call(i, args) => {
                let x = self.eval(&args[0], active)?;
                let y = if args.len() > 1 { Some(self.eval(&args[1], active)?) } else { None };
                let r = rounder(args[0].dtype(), self.opts.f64_storage);
                if args[0].dtype().is_int() {
                    Col::I((0..n).map(|k| x.i(k).abs()).collect())
                } else {
                    Col::F((0..n).map(|k| r(intrinsic(*i, x.f(k), y.as_ref().map_or(0.0, |y| y.f(k))))).collect())
                }
            }
        })
    }
}

/// The active threads whose lane of `c` is true, and those whose is false.
fn split_lanes(c: &Col, active: &[usize]) -> (Vec<usize>, Vec<usize>) {
    let (mut yes, mut no) = (Vec::new(), Vec::new());
    for (k, &t) in active.iter().enumerate() {
        if c.i(k) != 0 {
            yes.push(t)
        } else {
            no.push(t)
        }
    }
    (yes, no)
}

/// Lane by lane, the next value of `x` where `c` is true and of `y` where it
/// is false; `x` and `y` hold only the lanes of their side.
fn merge_lanes(c: &Col, x: &Col, y: &Col) -> Col {
    let n = c.len();
    let (mut i, mut j) = (0, 0);
    let mut pick = |k: usize| {
        if c.i(k) != 0 {
            i += 1;
            (true, i - 1)
        } else {
            j += 1;
            (false, j - 1)
        }
    };
    match (x, y) {
        (Col::I(_), Col::I(_)) => Col::I(
            (0..n)
                .map(|k| match pick(k) {
                    (true, a) => x.i(a),
                    (false, b) => y.i(b),
                })
                .collect(),
        ),
        _ => Col::F(
            (0..n)
                .map(|k| match pick(k) {
                    (true, a) => x.f(a),
                    (false, b) => y.f(b),
                })
                .collect(),
        ),
    }
}

/// Rounds a value to what a buffer of type `t` holds.
fn rounder(t: DType, f64_storage: bool) -> fn(f64) -> f64 {
    match t {
        DType::Float(32) if !f64_storage => |x| x as f32 as f64,
        DType::Float(16) if !f64_storage => |x| half::f16::from_f64(x).to_f64(),
        DType::BFloat16 if !f64_storage => |x| half::bf16::from_f64(x).to_f64(),
        DType::Float(64) => |x| x,
        t if t.is_float() => |x| x,
        DType::Bool => |x| if x != 0.0 { 1.0 } else { 0.0 },
        _ => |x| x.trunc(),
    }
}

fn wrap_int(v: i64, t: DType) -> i64 {
    match t {
        DType::Int(8) => v as i8 as i64,
        DType::Int(16) => v as i16 as i64,
        DType::Int(32) => v as i32 as i64,
        DType::UInt(8) => v as u8 as i64,
        DType::UInt(16) => v as u16 as i64,
        DType::UInt(32) => v as u32 as i64,
        _ => v,
    }
}

fn intrinsic(i: Intrinsic, x: f64, y: f64) -> f64 {
    match i {
        Intrinsic::Exp => x.exp(),
        Intrinsic::Log => x.ln(),
        Intrinsic::Sqrt => x.sqrt(),
        Intrinsic::Rsqrt => 1.0 / x.sqrt(),
        Intrinsic::Tanh => x.tanh(),
        Intrinsic::Sigmoid => 1.0 / (1.0 + (-x).exp()),
        Intrinsic::Abs | Intrinsic::Fabs => x.abs(),
        Intrinsic::Floor => x.floor(),
        Intrinsic::Ceil => x.ceil(),
        // CUDA's `round` rounds half away from zero, as Rust's does.
        Intrinsic::Round => x.round(),
        Intrinsic::Pow => x.powf(y),
        Intrinsic::Sin => x.sin(),
        Intrinsic::Cos => x.cos(),
        Intrinsic::Erf => erf(x),
        Intrinsic::Likely | Intrinsic::CpAsync => x,
    }
}

/// The error function, to about 1e-7 (Abramowitz and Stegun 7.1.26 refined
/// by one Newton step is overkill here; the series below is enough for
/// checking kernels).
fn erf(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.5 * x.abs());
    let y = 1.0
        - t * (-x * x - 1.26551223
            + t * (1.00002368
                + t * (0.37409196
                    + t * (0.09678418
                        + t * (-0.18628806
                            + t * (0.27886807
                                + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))))
            .exp();
    if x >= 0.0 {
        y
    } else {
        -y
    }
}

fn binary(op: BinOp, t: DType, x: &Col, y: &Col, f64_storage: bool) -> Result<Col, SimError> {
    let n = x.len();
    if t.is_float() {
        let r = rounder(t, f64_storage);
        let f = |g: fn(f64, f64) -> f64| Col::F((0..n).map(|k| r(g(x.f(k), y.f(k)))).collect());
        let c = |g: fn(f64, f64) -> bool| Col::I((0..n).map(|k| i64::from(g(x.f(k), y.f(k)))).collect());
        return Ok(match op {
            BinOp::Add => f(|a, b| a + b),
            BinOp::Sub => f(|a, b| a - b),
            BinOp::Mul => f(|a, b| a * b),
            BinOp::Div => f(|a, b| a / b),
            BinOp::Min => f(f64::min),
            BinOp::Max => f(f64::max),
            BinOp::FloorDiv => f(|a, b| (a / b).floor()),
            BinOp::FloorMod => f(|a, b| a - b * (a / b).floor()),
            BinOp::Eq => c(|a, b| a == b),
            BinOp::Ne => c(|a, b| a != b),
            BinOp::Lt => c(|a, b| a < b),
            BinOp::Le => c(|a, b| a <= b),
            BinOp::Gt => c(|a, b| a > b),
            BinOp::Ge => c(|a, b| a >= b),
            BinOp::And | BinOp::Or => return Err("a logical operator on floats".into()),
        });
    }
    let mut out: Lanes<i64> = SmallVec::with_capacity(n);
    for k in 0..n {
        let (a, b) = (x.i(k), y.i(k));
        let v = match op {
            BinOp::Add => a.wrapping_add(b),
            BinOp::Sub => a.wrapping_sub(b),
            BinOp::Mul => a.wrapping_mul(b),
            BinOp::Div | BinOp::FloorDiv | BinOp::FloorMod if b == 0 => return Err("integer division by zero".into()),
            BinOp::Div => a.wrapping_div(b),
            BinOp::FloorDiv => a.div_euclid(b) - i64::from(b < 0 && a.rem_euclid(b) != 0),
            BinOp::FloorMod => a - b * (a.div_euclid(b) - i64::from(b < 0 && a.rem_euclid(b) != 0)),
            BinOp::Min => a.min(b),
            BinOp::Max => a.max(b),
            BinOp::Eq => i64::from(a == b),
            BinOp::Ne => i64::from(a != b),
            BinOp::Lt => i64::from(a < b),
            BinOp::Le => i64::from(a <= b),
            BinOp::Gt => i64::from(a > b),
            BinOp::Ge => i64::from(a >= b),
            BinOp::And => i64::from(a != 0 && b != 0),
            BinOp::Or => i64::from(a != 0 || b != 0),
        };
        out.push(if op.is_compare() || op.is_logical() { v } else { wrap_int(v, t) });
    }
    Ok(Col::I(out))
}
