//! The simulator's second step: a compiled kernel run on one thread block
//! at a time, its threads in lockstep.
//!
//! Every node runs for all the active threads before the next one starts,
//! and every expression is evaluated as a column: one value per active
//! thread, computed by a tight loop per operation. `act` is the list of
//! active threads (thread ids in increasing order); columns are indexed by
//! position in it, variable tables by thread id.

use super::compile::{BlockNode, FExpr, IExpr, Index, Load, Node, Program, Term, WmmaNode};
use super::race::{Conflict, RaceTable};
use super::value::{float_to, intrinsic, tf32, tf32_truncated, wrap_to};
use super::{SimError, SimOptions, SimStats};
use std::collections::VecDeque;
use tirc_ir::expr::{floor_div, floor_mod};
use tirc_ir::wmma::TILE;
use tirc_ir::{BinOp, DType, Scope, WmmaOp};

mod scalar;

type R = Result<(), SimError>;

/// A copy issued by `cp.async`: (memory, address, value).
type AsyncCopy = (usize, usize, f64);

pub(super) struct Mem {
    pub data: Vec<f64>,
    /// Elements per thread for local memory (0 for shared and global).
    /// Local memory is laid out element by element, the threads of the
    /// block side by side (`index * threads + thread`), so that the threads
    /// reading one element (a register tile's unrolled access) read a
    /// contiguous run.
    per_thread: usize,
    /// Threads per block, the stride of local memory.
    threads: usize,
    shared: bool,
    race: RaceTable,
    /// A swizzled buffer's pattern width in bytes (0 for none) and its
    /// element size: each element index goes through
    /// `tirc_ir::swizzle_offset` to its slot, as the hardware lays it out.
    swizzle: (i64, i64),
    /// For a parameter whose writes are checked across blocks: the block
    /// (its number in the launch, plus 1; 0 for none) that last wrote each
    /// word, with `CHANGED` set once a write in the launch changed it.
    /// Empty where unchecked.
    pub owner: Vec<u32>,
    /// For a parameter the launch both reads and writes, checked across
    /// blocks: the block that read each word (`MANY` for several; 0 for
    /// none). Empty where unchecked.
    pub reader: Vec<u32>,
    /// For a global buffer whose words threads of a block do not pass to
    /// each other (not race-checked as shared memory is), checked among the
    /// threads of a block: the barrier interval (`Machine::epoch`, in the
    /// high 32 bits) and the thread that last wrote each word. Empty where
    /// unchecked.
    pub writer: Vec<u64>,
}

/// `Mem::owner`'s mark of a word a write of the launch changed.
pub(super) const CHANGED: u32 = 1 << 31;
/// `Mem::reader` of a word several blocks read.
const MANY: u32 = u32::MAX;

impl Mem {
    pub(super) fn global(data: Vec<f64>) -> Mem {
        Mem {
            data,
            per_thread: 0,
            threads: 0,
            shared: false,
            race: RaceTable::default(),
            swizzle: (0, 1),
            owner: Vec::new(),
            reader: Vec::new(),
            writer: Vec::new(),
        }
    }

    /// A fresh copy of global memory `m` (its data, and a race table of
    /// the same size where it has one).
    pub(super) fn copy_of(m: &Mem) -> Mem {
        let mut c = if m.shared { Mem::global_checked(m.data.clone()) } else { Mem::global(m.data.clone()) };
        c.owner = m.owner.clone();
        c.reader = m.reader.clone();
        c.writer = m.writer.clone();
        c
    }

    /// Checks this memory's writes among the threads of each block: two
    /// threads writing different values to one word between two barriers.
    pub(super) fn check_threads(&mut self) {
        if !self.shared {
            self.writer = vec![0; self.data.len()];
        }
    }

    /// Checks this memory's writes across the blocks of a launch, and, for
    /// a buffer the launch also reads (race-checked: `shared`), its reads
    /// of what other blocks write.
    pub(super) fn check_blocks(&mut self) {
        self.owner = vec![0; self.data.len()];
        if self.shared {
            self.reader = vec![0; self.data.len()];
        }
    }

    /// Records that block `me` reads word `a` (where reads are checked
    /// across blocks, `reader`): `Err` with the other block that changed it
    /// in this launch.
    #[inline(always)]
    fn note_read(&mut self, a: usize, me: u32) -> Result<(), u32> {
        if self.reader.is_empty() {
            return Ok(());
        }
        let o = self.owner[a];
        if o & CHANGED != 0 && o & !CHANGED != me {
            return Err(o & !CHANGED);
        }
        let r = &mut self.reader[a];
        if *r == 0 {
            *r = me;
        } else if *r != me {
            *r = MANY;
        }
        Ok(())
    }

    /// Global memory whose accesses are checked for races among the
    /// threads of a block, as shared memory's are.
    pub(super) fn global_checked(data: Vec<f64>) -> Mem {
        let mut race = RaceTable::default();
        race.reset(data.len());
        Mem {
            data,
            per_thread: 0,
            threads: 0,
            shared: true,
            race,
            swizzle: (0, 1),
            owner: Vec::new(),
            reader: Vec::new(),
            writer: Vec::new(),
        }
    }
}

/// An integer variable's values: one per thread, or one for all the threads
/// that bound it (a loop counter, a block index), which saves writing and
/// reading a column. Only threads in the binding's scope ever read it.
#[derive(Clone)]
struct IntVar {
    uniform: Option<i64>,
    col: Vec<i64>,
}

pub(super) struct Machine<'p> {
    prog: &'p Program,
    opts: SimOptions,
    /// Threads per block.
    n: usize,
    tid: Vec<[i64; 3]>,
    ivars: Vec<IntVar>,
    fvars: Vec<Vec<f64>>,
    pub mems: Vec<Mem>,
    /// The barrier interval shared-memory accesses are recorded in.
    epoch: u32,
    /// The block running (its number in the launch, plus 1) and the grid,
    /// for the check of writes across blocks (`Mem::owner`).
    block_no: u32,
    pub grid: [i64; 3],
    pub stats: SimStats,
    /// Per thread, its asynchronous copies not yet in a group.
    open: Vec<Vec<AsyncCopy>>,
    /// Per thread, its committed groups, oldest first; they land at the
    /// `wait_group` that covers them, so a read before the wait sees stale
    /// data.
    committed: Vec<VecDeque<Vec<AsyncCopy>>>,
    ipool: Vec<Vec<i64>>,
    fpool: Vec<Vec<f64>>,
    tpool: Vec<Vec<u32>>,
}

impl<'p> Machine<'p> {
    pub(super) fn new(prog: &'p Program, opts: SimOptions, block: [i64; 3], params: Vec<Mem>) -> Machine<'p> {
        let n = block.iter().product::<i64>().max(1) as usize;
        let tid = (0..n as i64).map(|t| [t % block[0], t / block[0] % block[1], t / (block[0] * block[1])]).collect();
        let mut mems = params;
        mems.resize_with(prog.mems.len(), || Mem::global(Vec::new()));
        Machine {
            prog,
            opts,
            n,
            tid,
            ivars: vec![IntVar { uniform: Some(0), col: vec![0; n] }; prog.int_slots],
            fvars: vec![vec![0.0; n]; prog.float_slots],
            mems,
            epoch: 1,
            block_no: 0,
            grid: [1, 1, 1],
            stats: SimStats::default(),
            open: vec![Vec::new(); n],
            committed: vec![VecDeque::new(); n],
            ipool: Vec::new(),
            fpool: Vec::new(),
            tpool: Vec::new(),
        }
    }

    /// Runs the kernel body for the thread block at `bidx`, the launch's
    /// `no`th.
    pub(super) fn run_block(&mut self, no: i64, bidx: [i64; 3]) -> R {
        let prog = self.prog;
        self.block_no = u32::try_from(no + 1).unwrap_or(u32::MAX);
        for &(slot, tag) in &prog.launch {
            let d = tag.dim as usize;
            let var = &mut self.ivars[slot];
            if tag.is_block || self.tid.iter().all(|t| t[d] == 0) {
                var.uniform = Some(if tag.is_block { bidx[d] } else { 0 });
            } else {
                var.uniform = None;
                for (v, t) in var.col.iter_mut().zip(&self.tid) {
                    *v = t[d];
                }
            }
        }
        self.open.iter_mut().for_each(Vec::clear);
        self.committed.iter_mut().for_each(VecDeque::clear);
        self.next_epoch();
        let all: Vec<u32> = (0..self.n as u32).collect();
        for (slot, e) in &prog.hoisted {
            let mut col = vec![0; self.n];
            self.ie(e, &all, &mut col)?;
            let var = &mut self.ivars[*slot];
            if col.iter().all(|&x| x == col[0]) {
                var.uniform = Some(col[0]);
            } else {
                var.uniform = None;
                var.col = col;
            }
        }
        self.exec(&prog.body, &all)
    }

    /// Records that this block writes `v` to word `a` of memory `mi` (before
    /// the write): another block's write of a different value to it in this
    /// launch is a race, which a GPU resolves by whichever lands last and
    /// the simulator, running the blocks one after another, would not see.
    /// Thread `t` writing it: another thread of the block that wrote a
    /// different value to it since the last barrier races with it.
    #[inline(always)]
    fn claim(&mut self, mi: usize, a: usize, v: f64, t: u32) -> R {
        let m = &mut self.mems[mi];
        let differs = m.data[a].to_bits() != v.to_bits();
        if !m.writer.is_empty() {
            let (w, epoch) = (m.writer[a], u64::from(self.epoch));
            if w >> 32 == epoch && w as u32 != t && differs {
                let (first, second) = (self.show(w as u32), self.show(t));
                let m = &self.mems[mi];
                return Err(format!(
                    "a race between threads: threads {first} and {second} of block {} both write {}[{a}] since the last barrier, with different values ({} and {v}); a GPU keeps whichever lands last",
                    block_name(self.block_no, self.grid),
                    self.prog.mems[mi].name,
                    m.data[a]
                ));
            }
            self.mems[mi].writer[a] = epoch << 32 | u64::from(t);
        }
        let m = &mut self.mems[mi];
        if m.owner.is_empty() {
            return Ok(());
        }
        let o = m.owner[a];
        if o & !CHANGED != 0 && o & !CHANGED != self.block_no && differs {
            return Err(block_race(
                &self.prog.mems[mi].name,
                a,
                self.grid,
                (o & !CHANGED, m.data[a]),
                (self.block_no, v),
            ));
        }
        let changed = differs || o & CHANGED != 0;
        // A word another block read, changed here: on a GPU this write
        // may come before that read. (Writing the value the word holds is
        // no change: neighbouring blocks that both compute a halo element
        // write it alike, whichever comes first.)
        if differs && !m.reader.is_empty() && m.reader[a] != 0 && m.reader[a] != self.block_no {
            return Err(order_race(&self.prog.mems[mi].name, a, self.grid, m.reader[a], self.block_no, true));
        }
        m.owner[a] = self.block_no | if changed { CHANGED } else { 0 };
        Ok(())
    }

    /// Records that this block reads word `a` of memory `mi`, a buffer the
    /// launch both reads and writes: a word another block changed in this
    /// launch is a race (a GPU may run the read first), as is a word read
    /// here that another block changes later (`claim`).
    #[inline(always)]
    fn read_across(&mut self, mi: usize, a: usize) -> R {
        let me = self.block_no;
        self.mems[mi].note_read(a, me).map_err(|o| order_race(&self.prog.mems[mi].name, a, self.grid, o, me, false))
    }

    fn next_epoch(&mut self) {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            // Stamps of 2^32 intervals ago could match again: forget them.
            for m in self.mems.iter_mut() {
                if m.shared {
                    m.race.reset(m.data.len());
                }
                m.writer.iter_mut().for_each(|w| *w = 0);
            }
            self.epoch = 1;
        }
    }

    /// The value of an affine term when it is the same for every thread:
    /// a variable bound to one value, or an expression of such variables.
    fn uniform(&self, term: &Term) -> Option<i64> {
        match term {
            Term::Var(s) => self.ivars[*s].uniform,
            Term::Expr(e) => self.uniform_expr(e),
        }
    }

    fn uniform_expr(&self, e: &IExpr) -> Option<i64> {
        let one = |op: BinOp, t: DType, x: i64, y: i64| {
            let mut out = [x];
            int_op_const(op, t, &mut out, y).ok()?;
            Some(out[0])
        };
        match e {
            IExpr::Const(v) => Some(*v),
            IExpr::Var(s) => self.ivars[*s].uniform,
            IExpr::BinConst(op, t, a, c) => one(*op, *t, self.uniform_expr(a)?, *c),
            IExpr::Bin(op, t, a, b) => one(*op, *t, self.uniform_expr(a)?, self.uniform_expr(b)?),
            IExpr::Affine { terms, constant, t } => {
                let mut v = *constant;
                for (term, c) in terms {
                    v = v.wrapping_add(self.uniform(term)?.wrapping_mul(*c));
                }
                let mut out = [v];
                wrap_to(*t, &mut out);
                Some(out[0])
            }
            _ => None,
        }
    }

    /// The element index of an access when it is the same for every
    /// thread, each dimension checked; `None` when it varies.
    fn uniform_index(&self, index: &Index) -> Result<Option<i64>, SimError> {
        match index {
            Index::Flat(e) => Ok(self.uniform_expr(e)),
            Index::Dims(dims, name) => {
                let mut flat = 0;
                for (d, (e, extent)) in dims.iter().enumerate() {
                    let Some(v) = self.uniform_expr(e) else { return Ok(None) };
                    if v < 0 || v >= *extent {
                        return Err(dim_out_of_bounds(v, d, name, *extent));
                    }
                    flat = flat * extent + v;
                }
                Ok(Some(flat))
            }
        }
    }

    /// Binds an integer variable to `vals`, the values of the threads of
    /// `act`.
    fn set_int(&mut self, slot: usize, act: &[u32], vals: &[i64]) {
        let v = &mut self.ivars[slot];
        if vals.iter().all(|&x| x == vals[0]) {
            v.uniform = Some(vals[0]);
        } else {
            v.uniform = None;
            for (&x, &t) in vals.iter().zip(act) {
                v.col[t as usize] = x;
            }
        }
    }

    fn itake(&mut self, n: usize) -> Vec<i64> {
        // Every evaluation writes all of its output: only growth is filled.
        let mut v = self.ipool.pop().unwrap_or_default();
        v.resize(n, 0);
        v
    }

    fn ftake(&mut self, n: usize) -> Vec<f64> {
        let mut v = self.fpool.pop().unwrap_or_default();
        v.resize(n, 0.0);
        v
    }

    fn ttake(&mut self) -> Vec<u32> {
        let mut v = self.tpool.pop().unwrap_or_default();
        v.clear();
        v
    }

    /// The threads of `act` whose lane of `c` is true, and those whose is
    /// false.
    fn split(&mut self, c: &[i64], act: &[u32]) -> (Vec<u32>, Vec<u32>) {
        let (mut yes, mut no) = (self.ttake(), self.ttake());
        for (&x, &t) in c.iter().zip(act) {
            if x != 0 {
                yes.push(t)
            } else {
                no.push(t)
            }
        }
        (yes, no)
    }

    fn show(&self, t: u32) -> String {
        let t = self.tid[t as usize];
        format!("({}, {}, {})", t[0], t[1], t[2])
    }

    fn exec(&mut self, s: &Node, act: &[u32]) -> R {
        match act {
            [] => Ok(()),
            [t] if !self.opts.columns_only => self.exec1(s, *t),
            _ => self.exec_columns(s, act),
        }
    }

    /// `exec` over columns, one value per active thread.
    fn exec_columns(&mut self, s: &Node, act: &[u32]) -> R {
        if act.is_empty() {
            return Ok(());
        }
        match s {
            Node::Seq(v) => {
                for x in v {
                    self.exec(x, act)?;
                }
            }
            Node::Nop => {}
            Node::Barrier => {
                if act.len() != self.n {
                    return Err(format!(
                        "a barrier is reached by {} of the block's {} threads: barriers must not sit under thread-dependent control flow",
                        act.len(),
                        self.n
                    ));
                }
                self.stats.barriers += 1;
                self.next_epoch();
            }
            Node::TmaLoad(n) => {
                let one = &act[..1];
                let mut d = [0i64];
                self.index(&n.dst_index, one, &mut d)?;
                let rank = n.shape.len();
                let mut first = vec![0i64; rank];
                for (k, e) in n.coords.iter().enumerate() {
                    let mut c = [0i64];
                    self.ie(e, one, &mut c)?;
                    first[k] = c[0];
                }
                let count: i64 = n.boxed.iter().product();
                for e in 0..count {
                    let (mut rest, mut flat, mut inside) = (e, 0i64, true);
                    let mut local = vec![0i64; rank];
                    for k in (0..rank).rev() {
                        local[k] = rest % n.boxed[k];
                        rest /= n.boxed[k];
                    }
                    for k in 0..rank {
                        let c = first[k] + local[k];
                        inside &= (0..n.shape[k]).contains(&c);
                        flat = flat * n.shape[k] + c;
                    }
                    let v = if inside { self.mems[n.src].data[self.address(n.src, flat, act[0])?] } else { 0.0 };
                    let a = self.address(n.dst, d[0] + e, act[0])?;
                    self.mems[n.dst].data[a] = v;
                    // Ordered with the reads of the version before and
                    // after by the loop's mbarriers, not by a barrier: its
                    // words start afresh, the other words keep their
                    // records (no block-wide barrier runs in the loop).
                    self.mems[n.dst].race.forget(a);
                }
            }
            Node::AsyncCommit => {
                for &t in act {
                    let g = std::mem::take(&mut self.open[t as usize]);
                    self.committed[t as usize].push_back(g);
                }
            }
            Node::AsyncWait(n) => {
                for &t in act {
                    while self.committed[t as usize].len() > *n {
                        let Some(g) = self.committed[t as usize].pop_front() else { break };
                        for (mi, a, v) in g {
                            self.touch(mi, a, t, Some(v))?;
                            self.mems[mi].data[a] = v;
                        }
                    }
                }
            }
            Node::Store { mem, index, value, round, cp_async } => {
                let mut vals = self.ftake(act.len());
                self.fe(value, act, &mut vals)?;
                round.round_all(&mut vals);
                if !*cp_async && self.mems[*mem].per_thread > 0 {
                    if let Some(i) = self.uniform_index(index)? {
                        // Each thread's own copy of one element of a local
                        // array: checked once.
                        let a = self.address(*mem, i, act[0])? - act[0] as usize;
                        let m = &mut self.mems[*mem];
                        let row = &mut m.data[a..a + m.threads];
                        if act.len() == row.len() {
                            row.copy_from_slice(&vals);
                        } else {
                            act.iter().zip(&vals).for_each(|(&t, &v)| row[t as usize] = v);
                        }
                        self.fpool.push(vals);
                        return Ok(());
                    }
                }
                let mut idx = self.itake(act.len());
                self.index(index, act, &mut idx)?;
                let shared = self.mems[*mem].shared;
                if !shared && !*cp_async {
                    // The common case, one tight loop: addresses checked,
                    // then stored.
                    self.addresses(*mem, &mut idx, act)?;
                    let m = &self.mems[*mem];
                    if !m.owner.is_empty() || !m.writer.is_empty() {
                        // Each write checked against what the writes
                        // before it left (lanes of one store included).
                        for ((&a, &v), &t) in idx.iter().zip(&vals).zip(act) {
                            self.claim(*mem, a as usize, v, t)?;
                            self.mems[*mem].data[a as usize] = v;
                        }
                    } else {
                        let data = &mut self.mems[*mem].data;
                        for (&a, &v) in idx.iter().zip(&vals) {
                            data[a as usize] = v;
                        }
                    }
                } else {
                    for ((&i, &v), &t) in idx.iter().zip(&vals).zip(act) {
                        let a = self.address(*mem, i, t)?;
                        if shared {
                            self.touch(*mem, a, t, Some(v))?;
                        }
                        if *cp_async {
                            self.open[t as usize].push((*mem, a, v));
                        } else {
                            self.claim(*mem, a, v, t)?;
                            self.mems[*mem].data[a] = v;
                        }
                    }
                }
                self.fpool.push(vals);
                self.ipool.push(idx);
            }
            Node::If { cond, then, orelse } => {
                let mut c = self.itake(act.len());
                self.ie(cond, act, &mut c)?;
                if c.iter().all(|&x| x != 0) {
                    self.ipool.push(c);
                    self.exec(then, act)?;
                } else if c.iter().all(|&x| x == 0) {
                    self.ipool.push(c);
                    if let Some(e) = orelse {
                        self.exec(e, act)?;
                    }
                } else {
                    let (yes, no) = self.split(&c, act);
                    self.ipool.push(c);
                    self.exec(then, &yes)?;
                    if let Some(e) = orelse {
                        self.exec(e, &no)?;
                    }
                    self.tpool.push(yes);
                    self.tpool.push(no);
                }
            }
            Node::For { var, min, extent, body } => {
                let mut min_v = self.itake(act.len());
                self.ie(min, act, &mut min_v)?;
                let mut ext = self.itake(act.len());
                self.ie(extent, act, &mut ext)?;
                let max_ext = ext.iter().copied().max().unwrap_or(0);
                let uniform = ext.iter().all(|&e| e == max_ext);
                let mut now = self.ttake();
                let same_start = min_v.iter().all(|&m| m == min_v[0]);
                for it in 0..max_ext {
                    let v = &mut self.ivars[*var];
                    if same_start {
                        v.uniform = Some(min_v[0] + it);
                    } else {
                        v.uniform = None;
                        for (&m, &t) in min_v.iter().zip(act) {
                            v.col[t as usize] = m + it;
                        }
                    }
                    if uniform {
                        self.exec(body, act)?;
                    } else {
                        now.clear();
                        now.extend(act.iter().zip(&ext).filter(|(_, &e)| it < e).map(|(&t, _)| t));
                        self.exec(body, &now)?;
                    }
                }
                self.tpool.push(now);
                self.ipool.push(min_v);
                self.ipool.push(ext);
            }
            Node::LetInt { var, value, body } => {
                let mut v = self.itake(act.len());
                self.ie(value, act, &mut v)?;
                self.set_int(*var, act, &v);
                self.ipool.push(v);
                self.exec(body, act)?;
            }
            Node::LetFloat { var, value, body } => {
                let mut v = self.ftake(act.len());
                self.fe(value, act, &mut v)?;
                let col = &mut self.fvars[*var];
                for (&x, &t) in v.iter().zip(act) {
                    col[t as usize] = x;
                }
                self.fpool.push(v);
                self.exec(body, act)?;
            }
            Node::Alloc { mem, body } => {
                let decl = &self.prog.mems[*mem];
                let elements = decl.elements.clone()?;
                let (per_thread, shared, size) = match decl.scope {
                    // A fragment is a warp's: kept as a thread's local array,
                    // that of the warp's first thread (`Machine::wmma`).
                    Scope::Local | Scope::WmmaMatrixA | Scope::WmmaMatrixB | Scope::WmmaAccumulator | Scope::Warp => {
                        (elements, false, elements * self.n)
                    }
                    Scope::Shared => (0, true, elements),
                    Scope::Global => (0, false, elements),
                };
                let swizzle = decl.swizzle;
                if swizzle.0 != 0 && (size as i64 * swizzle.1) % tirc_ir::buffer::swizzle_atom(swizzle.0) != 0 {
                    return Err(format!(
                        "the swizzled buffer {} holds {} bytes, not whole groups of {} (8 lines of its {}-byte pattern)",
                        decl.name,
                        size as i64 * swizzle.1,
                        tirc_ir::buffer::swizzle_atom(swizzle.0),
                        swizzle.0
                    ));
                }
                let m = &mut self.mems[*mem];
                m.swizzle = swizzle;
                // Uninitialised memory reads as NaN, so that a read of
                // something never written cannot go unnoticed; a NaN of its
                // own, so that a result computed from it is known as such.
                m.data.clear();
                m.data.resize(size, crate::data::undefined());
                m.per_thread = per_thread;
                m.threads = self.n;
                m.shared = shared;
                if shared && !self.opts.ignore_races {
                    m.race.reset(size);
                }
                let r = self.exec(body, act);
                // Kept for the next time the statement runs.
                let m = &mut self.mems[*mem];
                m.data.clear();
                m.race.reset(0);
                r?;
            }
            Node::Block(b) => self.block(b, act)?,
            Node::Wmma(w) => self.wmma(w, act)?,
            Node::Fail(m) => return Err(m.clone()),
        }
        Ok(())
    }

    fn block(&mut self, b: &BlockNode, act: &[u32]) -> R {
        let n = act.len();
        let mut at_start = vec![true; n];
        let mut v = self.itake(n);
        let mut start = self.itake(n);
        for (slot, value, min) in &b.binds {
            self.ie(value, act, &mut v)?;
            self.set_int(*slot, act, &v);
            if let Some(min) = min {
                self.ie(min, act, &mut start)?;
                for ((s, x), m) in at_start.iter_mut().zip(&v).zip(&start) {
                    *s &= x == m;
                }
            }
        }
        self.ie(&b.predicate, act, &mut v)?;
        let on: Vec<u32> = act.iter().zip(&v).filter(|(_, &p)| p != 0).map(|(&t, _)| t).collect();
        if let Some(init) = &b.init {
            let first: Vec<u32> =
                act.iter().zip(&v).zip(&at_start).filter(|((_, &p), &s)| p != 0 && s).map(|((&t, _), _)| t).collect();
            self.exec(init, &first)?;
        }
        self.ipool.push(v);
        self.ipool.push(start);
        self.exec(&b.body, &on)
    }

    /// A tensor-core operation, once per warp of `act`: every thread of a
    /// warp takes part (a warp with some threads inactive is an error) and
    /// names the same tiles. A fragment is held in the local array of the
    /// warp's first thread. Products are exact and summed in f64, the
    /// result rounded to the accumulator's type once per operation.
    fn wmma(&mut self, w: &WmmaNode, act: &[u32]) -> R {
        const WARP: usize = 32;
        const T: usize = TILE as usize;
        // A function not yet lowered runs its loops bound to threads in
        // one thread; a launched kernel runs the warps the GPU would.
        if !self.n.is_multiple_of(WARP) && !self.prog.launch.is_empty() {
            return Err(format!(
                "a tensor-core operation ({}) in a block of {} threads: it needs whole warps of {WARP}",
                w.op.name(),
                self.n
            ));
        }
        let n = act.len();
        let mut bases = Vec::new();
        let mut strides = Vec::new();
        for t in &w.tiles {
            let mut b = self.itake(n);
            self.index(&t.base, act, &mut b)?;
            let mut s = self.itake(n);
            self.ie(&t.stride, act, &mut s)?;
            bases.push(b);
            strides.push(s);
        }
        let mut value = self.ftake(n);
        if let Some(v) = &w.value {
            self.fe(v, act, &mut value)?;
        }
        // A partial store's rows and columns: those of the first thread
        // of each warp (checked the same across the warp below).
        let mut kept = (self.itake(n), self.itake(n));
        if let Some((r, c)) = &w.bound {
            self.ie(r, act, &mut kept.0)?;
            self.ie(c, act, &mut kept.1)?;
        }
        if w.op.wgmma_tiles() > 0 && !self.prog.launch.is_empty() {
            self.check_warpgroups(w, act, &bases, &strides)?;
        }
        let mut k = 0;
        while k < n {
            let warp = act[k] as usize / WARP;
            let leader = (warp * WARP) as u32;
            let lanes = (self.n - warp * WARP).min(WARP);
            let end = k + act[k..].iter().take_while(|&&t| t as usize / WARP == warp).count();
            if end - k != lanes {
                return Err(format!(
                    "a tensor-core operation ({}) is reached by {} of the {lanes} threads of warp {warp}: every thread of a warp must take part",
                    w.op.name(),
                    end - k
                ));
            }
            for (b, s) in bases.iter().zip(&strides) {
                if b[k..end].iter().any(|&x| x != b[k]) || s[k..end].iter().any(|&x| x != s[k]) {
                    return Err(format!(
                        "the threads of warp {warp} name different tiles in a tensor-core operation ({})",
                        w.op.name()
                    ));
                }
            }
            // A partial store writes the elements (r, c) with r < rows and
            // c < cols of its destination tile; the others it never
            // addresses (they may lie past the buffer).
            let (rows_kept, cols_kept) = match w.bound {
                Some(_) => {
                    let (r, c) = (&kept.0[k..end], &kept.1[k..end]);
                    if r.iter().any(|&x| x != r[0]) || c.iter().any(|&x| x != c[0]) {
                        return Err(format!(
                            "the threads of warp {warp} store different parts of a tile in a tensor-core operation ({})",
                            w.op.name()
                        ));
                    }
                    (r[0], c[0])
                }
                None => (0, 0),
            };
            let stored = |i: usize, r: usize, c: usize| {
                i != 0 || w.bound.is_none() || ((r as i64) < rows_kept && (c as i64) < cols_kept)
            };
            // The 256 addresses of each tile (16×16, or 32 lanes × 8);
            // `usize::MAX` for an element a partial store leaves alone.
            let mut addr: Vec<[usize; T * T]> = Vec::new();
            for (i, t) in w.tiles.iter().enumerate() {
                let mut a = [usize::MAX; T * T];
                let (rows, cols) = t.extent;
                for r in 0..rows {
                    for c in 0..cols {
                        if stored(i, r, c) {
                            let e = bases[i][k] + r as i64 * strides[i][k] + c as i64;
                            a[r * cols + c] = self.address(t.mem, e, leader)?;
                        }
                    }
                }
                addr.push(a);
            }
            let read = |m: &mut Self, i: usize| -> Result<[f64; T * T], SimError> {
                let mut v = [0.0; T * T];
                for (x, &a) in v.iter_mut().zip(&addr[i]) {
                    m.touch(w.tiles[i].mem, a, leader, None)?;
                    *x = m.mems[w.tiles[i].mem].data[a];
                }
                Ok(v)
            };
            if let WmmaOp::Wgmma { trans_b, .. } = w.op {
                // Each of the warp's accumulator tiles: its 16 rows of A
                // times 16 columns of B (stored n × k with trans_b, else
                // k × n).
                let t = w.op.wgmma_tiles();
                // float32 operands cut to tf32, as wgmma reads them (not
                // rounded, as mma.sync's `cvt.rna` operands are).
                let round = |x: [f64; T * T]| if w.tf32 { x.map(tf32_truncated) } else { x };
                let a = round(read(self, t)?);
                for (j, tile) in addr[..t].iter().enumerate() {
                    let acc = from_warp(&read(self, j)?);
                    let b = round(read(self, t + 1 + j)?);
                    let bt = |x: usize, c: usize| if trans_b { b[c * T + x] } else { b[x * T + c] };
                    let v = tile_product(&acc, |r, x| a[r * T + x], bt, w.round);
                    for (&ad, &x) in tile.iter().zip(&to_warp(&v)) {
                        self.touch(w.tiles[j].mem, ad, leader, Some(x))?;
                        self.claim(w.tiles[j].mem, ad, x, leader)?;
                        self.mems[w.tiles[j].mem].data[ad] = x;
                    }
                }
                k = end;
                continue;
            }
            let out: [f64; T * T] = match w.op {
                WmmaOp::Fill => [w.round.round(value[k]); T * T],
                // The fragment holds the tile as memory lays it out; the
                // layout only tells the hardware how to read it.
                WmmaOp::Load { .. } => read(self, 1)?,
                WmmaOp::Mma { b_trans } => {
                    let (acc, a, b) = (read(self, 0)?, read(self, 1)?, read(self, 2)?);
                    let bk = |x: usize, c: usize| if b_trans { b[c * T + x] } else { b[x * T + c] };
                    tile_product(&acc, |r, x| a[r * T + x], bk, w.round)
                }
                WmmaOp::Store => read(self, 1)?.map(|x| w.round.round(x)),
                // Warp tiles, lane by lane: element (i, j) of the 16×16
                // tile is element `warp_layout(i, j)` of the warp tile.
                WmmaOp::LdMatrix { .. } => to_warp(&read(self, 1)?),
                WmmaOp::MmaFill => [w.round.round(value[k]); T * T],
                WmmaOp::MmaStore => from_warp(&read(self, 1)?).map(|x| w.round.round(x)),
                WmmaOp::MmaSync { trans_a, trans_b } => {
                    let acc = from_warp(&read(self, 0)?);
                    // The operands as stored: A[i, k] or A[k, i], B[k, j] or B[j, k].
                    let (mut a, mut b) = (from_warp(&read(self, 1)?), from_warp(&read(self, 2)?));
                    if w.tf32 {
                        for x in a.iter_mut().chain(b.iter_mut()) {
                            *x = tf32(*x);
                        }
                    }
                    let at = |i: usize, x: usize| if trans_a { a[x * T + i] } else { a[i * T + x] };
                    let bt = |x: usize, j: usize| if trans_b { b[j * T + x] } else { b[x * T + j] };
                    to_warp(&tile_product(&acc, at, bt, w.round))
                }
                WmmaOp::Wgmma { .. } => return Err("a wgmma reached the warp-level operations".into()),
            };
            for (&a, &v) in addr[0].iter().zip(&out).filter(|(&a, _)| a != usize::MAX) {
                self.touch(w.tiles[0].mem, a, leader, Some(v))?;
                self.claim(w.tiles[0].mem, a, v, leader)?;
                self.mems[w.tiles[0].mem].data[a] = v;
            }
            k = end;
        }
        for b in bases.into_iter().chain(strides).chain([kept.0, kept.1]) {
            self.ipool.push(b);
        }
        self.fpool.push(value);
        Ok(())
    }

    /// A `wgmma` is one instruction of a warpgroup, four consecutive
    /// warps: all of them issue it, naming the four consecutive 16-row
    /// tiles of one 64-row tile of A and the same tiles of B, and each
    /// operand's rows are one line of its buffer's swizzle, the layout its
    /// descriptor describes (`tirc_ir::wmma`).
    fn check_warpgroups(&self, w: &WmmaNode, act: &[u32], bases: &[Vec<i64>], strides: &[Vec<i64>]) -> R {
        const GROUP: usize = 128;
        let name = w.op.name();
        if !self.n.is_multiple_of(GROUP) {
            return Err(format!("{name} is issued by warpgroups of {GROUP} threads, and the block has {}", self.n));
        }
        let t = w.op.wgmma_tiles();
        for (i, what) in [(t, "A"), (t + 1, "B")] {
            let m = &self.mems[w.tiles[i].mem];
            let line = strides[i][0] * m.swizzle.1;
            if m.swizzle.0 == 0 || line != m.swizzle.0 {
                return Err(format!(
                    "{name} reads its {what} operand {} through a descriptor of K-major rows of one swizzle line: the rows are {line} bytes, the swizzle {} bytes",
                    self.prog.mems[w.tiles[i].mem].name,
                    m.swizzle.0
                ));
            }
        }
        let mut k = 0;
        while k < act.len() {
            let group = act[k] as usize / GROUP;
            let end = k + act[k..].iter().take_while(|&&x| x as usize / GROUP == group).count();
            if end - k != GROUP {
                return Err(format!(
                    "{name} is reached by {} of the 128 threads of warpgroup {group}: the four warps issue it together",
                    end - k
                ));
            }
            for q in 1..4 {
                let (first, this) = (k, k + 32 * q);
                let a_ok = bases[t][this] == bases[t][first] + 16 * q as i64 * strides[t][first]
                    && strides[t][this] == strides[t][first];
                let b_ok = (t + 1..w.tiles.len())
                    .all(|i| bases[i][this] == bases[i][first] && strides[i][this] == strides[i][first]);
                if !a_ok || !b_ok {
                    return Err(format!(
                        "the warps of warpgroup {group} name {} in {name}: warp {q} of the group must take the 16 rows of A after warp {}'s, and the same tiles of B",
                        if a_ok { "different tiles of B" } else { "rows of A that are not consecutive" },
                        q - 1
                    ));
                }
            }
            k = end;
        }
        Ok(())
    }

    /// The element indices of an access, each dimension checked.
    fn index(&mut self, index: &Index, act: &[u32], out: &mut [i64]) -> R {
        match index {
            Index::Flat(e) => self.ie(e, act, out),
            Index::Dims(dims, name) => {
                out.fill(0);
                let mut c = self.itake(act.len());
                for (d, (e, extent)) in dims.iter().enumerate() {
                    self.ie(e, act, &mut c)?;
                    for (a, &v) in out.iter_mut().zip(&c) {
                        if v < 0 || v >= *extent {
                            return Err(dim_out_of_bounds(v, d, name, *extent));
                        }
                        *a = *a * extent + v;
                    }
                }
                self.ipool.push(c);
                Ok(())
            }
        }
    }

    /// Turns the element indices `idx` of memory `mi`, one per thread of
    /// `act`, into addresses in its data, each checked against the memory's
    /// size (a thread's own part, for local memory).
    fn addresses(&self, mi: usize, idx: &mut [i64], act: &[u32]) -> R {
        let m = &self.mems[mi];
        if m.per_thread > 0 {
            for (i, &t) in idx.iter_mut().zip(act) {
                match usize::try_from(*i) {
                    Ok(a) if a < m.per_thread => *i = (a * m.threads + t as usize) as i64,
                    _ => return Err(self.out_of_bounds(mi, *i, t)),
                }
            }
        } else {
            let n = m.data.len();
            if let Some(k) = idx.iter().position(|&i| usize::try_from(i).map_or(true, |a| a >= n)) {
                return Err(self.out_of_bounds(mi, idx[k], act[k]));
            }
            if m.swizzle.0 != 0 {
                for i in idx.iter_mut() {
                    *i = tirc_ir::swizzle_offset(*i, m.swizzle.1, m.swizzle.0);
                }
            }
        }
        Ok(())
    }

    /// The address of element `idx` of memory `mi` for thread `t`, checked
    /// against the memory's size (a thread's own part, for local memory).
    #[inline(always)]
    fn address(&self, mi: usize, idx: i64, t: u32) -> Result<usize, SimError> {
        let m = &self.mems[mi];
        if m.per_thread > 0 {
            match usize::try_from(idx) {
                Ok(i) if i < m.per_thread => Ok(i * m.threads + t as usize),
                _ => Err(self.out_of_bounds(mi, idx, t)),
            }
        } else {
            match usize::try_from(idx) {
                Ok(i) if i < m.data.len() && m.swizzle.0 == 0 => Ok(i),
                Ok(i) if i < m.data.len() => Ok(tirc_ir::swizzle_offset(idx, m.swizzle.1, m.swizzle.0) as usize),
                _ => Err(self.out_of_bounds(mi, idx, t)),
            }
        }
    }

    #[cold]
    fn out_of_bounds(&self, mi: usize, idx: i64, t: u32) -> SimError {
        let m = &self.mems[mi];
        let n = if m.per_thread > 0 { m.per_thread } else { m.data.len() };
        format!(
            "out-of-bounds access: {}[{idx}] with {n} elements, by thread {}",
            self.prog.mems[mi].name,
            self.show(t)
        )
    }

    /// Records a shared-memory write of `value` (a read, for `None`) and
    /// reports a race with an earlier access by another thread since the
    /// last barrier.
    #[inline]
    fn touch(&mut self, mi: usize, addr: usize, t: u32, value: Option<f64>) -> R {
        if self.opts.ignore_races || !self.mems[mi].shared {
            return Ok(());
        }
        let epoch = self.epoch;
        let race = &mut self.mems[mi].race;
        let r = match value {
            Some(v) => race.write(addr, t, v, epoch),
            None => race.read(addr, t, epoch),
        };
        r.map_err(|c| self.race_error(mi, addr, t, value.is_some(), c))?;
        if value.is_none() {
            self.read_across(mi, addr)?;
        }
        Ok(())
    }

    fn scope_name(&self, mi: usize) -> &'static str {
        if self.prog.mems[mi].scope == Scope::Global {
            "global"
        } else {
            "shared"
        }
    }

    #[cold]
    fn race_error(&self, mi: usize, addr: usize, t: u32, write: bool, c: Conflict) -> SimError {
        let name = &self.prog.mems[mi].name;
        let (me, other) = (self.show(t), self.show(c.thread));
        if c.wrote {
            let what = if write { "writes" } else { "reads" };
            format!("race on {} memory: thread {me} {what} {name}[{addr}], which thread {other} wrote since the last barrier", self.scope_name(mi))
        } else {
            format!("race on {} memory: thread {me} writes {name}[{addr}], which thread {other} read since the last barrier", self.scope_name(mi))
        }
    }

    fn load(&mut self, l: &Load, act: &[u32], out: &mut [f64]) -> R {
        if let Some(i) = self.uniform_index(&l.index)? {
            // One element for every thread (a register tile's unrolled
            // access, a broadcast): checked once.
            let m = &self.mems[l.mem];
            let shared = m.shared && !self.opts.ignore_races;
            if m.per_thread > 0 {
                let a = self.address(l.mem, i, act[0])? - act[0] as usize;
                let row = &m.data[a..a + m.threads];
                if act.len() == m.threads {
                    out.copy_from_slice(row);
                } else {
                    out.iter_mut().zip(act).for_each(|(o, &t)| *o = row[t as usize]);
                }
                return Ok(());
            } else if !shared {
                let a = self.address(l.mem, i, act[0])?;
                out.fill(self.mems[l.mem].data[a]);
                return Ok(());
            }
        }
        let mut idx = self.itake(act.len());
        self.index(&l.index, act, &mut idx)?;
        let mi = l.mem;
        let m = &mut self.mems[mi];
        if m.shared && !self.opts.ignore_races {
            // One loop with the bounds check and the race record inlined:
            // the inner loop of a tiled kernel reads shared memory.
            let epoch = self.epoch;
            let me = self.block_no;
            let mut failed = None;
            let swizzle = m.swizzle;
            for (k, (&i, &t)) in idx.iter().zip(act).enumerate() {
                match usize::try_from(i) {
                    Ok(a) if a < m.data.len() => {
                        let a = match swizzle {
                            (0, _) => a,
                            (bytes, elem) => tirc_ir::swizzle_offset(i, elem, bytes) as usize,
                        };
                        match m.race.read(a, t, epoch) {
                            Ok(()) => out[k] = m.data[a],
                            Err(c) => {
                                failed = Some(self.race_error(mi, a, t, false, c));
                                break;
                            }
                        }
                        if let Err(o) = m.note_read(a, me) {
                            failed = Some(order_race(&self.prog.mems[mi].name, a, self.grid, o, me, false));
                            break;
                        }
                    }
                    _ => {
                        failed = Some(self.out_of_bounds(mi, i, t));
                        break;
                    }
                }
            }
            if let Some(e) = failed {
                return Err(e);
            }
        } else {
            let m = &self.mems[mi];
            if m.per_thread == 0 && m.swizzle.0 == 0 {
                // Checked and gathered in one loop.
                let data = &m.data;
                for (k, (o, &i)) in out.iter_mut().zip(&idx).enumerate() {
                    match usize::try_from(i).ok().and_then(|a| data.get(a)) {
                        Some(&v) => *o = v,
                        None => return Err(self.out_of_bounds(mi, i, act[k])),
                    }
                }
            } else {
                self.addresses(mi, &mut idx, act)?;
                let data = &self.mems[mi].data;
                for (o, &a) in out.iter_mut().zip(&idx) {
                    *o = data[a as usize];
                }
            }
        }
        self.ipool.push(idx);
        Ok(())
    }

    /// `c ? a : b` of integers or floats (`eval` evaluates one side). Each
    /// thread evaluates only the side its condition picks, as CUDA's `?:`
    /// does: the other may read out of bounds, as padding code does.
    fn select<E, T: Copy + Default>(
        &mut self,
        c: &IExpr,
        a: &E,
        b: &E,
        act: &[u32],
        out: &mut [T],
        eval: fn(&mut Self, &E, &[u32], &mut [T]) -> R,
    ) -> R {
        let mut cv = self.itake(act.len());
        self.ie(c, act, &mut cv)?;
        if cv.iter().all(|&x| x != 0) {
            eval(self, a, act, out)?;
        } else if cv.iter().all(|&x| x == 0) {
            eval(self, b, act, out)?;
        } else {
            let (yes, no) = self.split(&cv, act);
            let (mut x, mut y) = (vec![T::default(); yes.len()], vec![T::default(); no.len()]);
            eval(self, a, &yes, &mut x)?;
            eval(self, b, &no, &mut y)?;
            merge(&cv, &x, &y, out);
            self.tpool.push(yes);
            self.tpool.push(no);
        }
        self.ipool.push(cv);
        Ok(())
    }

    /// Evaluates an integer expression for the threads of `act` into `out`.
    fn ie(&mut self, e: &IExpr, act: &[u32], out: &mut [i64]) -> R {
        match e {
            IExpr::Const(v) => out.fill(*v),
            IExpr::Var(s) => {
                let v = &self.ivars[*s];
                if let Some(x) = v.uniform {
                    out.fill(x);
                } else if act.len() == self.n {
                    out.copy_from_slice(&v.col);
                } else {
                    for (o, &t) in out.iter_mut().zip(act) {
                        *o = v.col[t as usize];
                    }
                }
            }
            IExpr::BinConst(op, t, a, c) => {
                self.ie(a, act, out)?;
                int_op_const(*op, *t, out, *c)?;
            }
            IExpr::Bin(op, t, a, b) => {
                self.ie(a, act, out)?;
                let mut y = self.itake(act.len());
                self.ie(b, act, &mut y)?;
                int_op(*op, *t, out, &y)?;
                self.ipool.push(y);
            }
            IExpr::FloatCompare(op, a, b) => {
                let mut x = self.ftake(act.len());
                let mut y = self.ftake(act.len());
                self.fe(a, act, &mut x)?;
                self.fe(b, act, &mut y)?;
                let cmp: fn(f64, f64) -> bool = match op {
                    BinOp::Eq => |a, b| a == b,
                    BinOp::Ne => |a, b| a != b,
                    BinOp::Lt => |a, b| a < b,
                    BinOp::Le => |a, b| a <= b,
                    BinOp::Gt => |a, b| a > b,
                    _ => |a, b| a >= b,
                };
                for ((o, &a), &b) in out.iter_mut().zip(&x).zip(&y) {
                    *o = i64::from(cmp(a, b));
                }
                self.fpool.push(x);
                self.fpool.push(y);
            }
            IExpr::Not(a) => {
                self.ie(a, act, out)?;
                out.iter_mut().for_each(|x| *x = i64::from(*x == 0));
            }
            IExpr::And(a, b) | IExpr::Or(a, b) => {
                let and = matches!(e, IExpr::And(..));
                self.ie(a, act, out)?;
                // The threads whose left side does not decide the result.
                let undecided = |x: i64| (x != 0) == and;
                if out.iter().all(|&x| undecided(x)) {
                    self.ie(b, act, out)?;
                    out.iter_mut().for_each(|x| *x = i64::from(*x != 0));
                } else if out.iter().any(|&x| undecided(x)) {
                    let (yes, no) = self.split(out, act);
                    let rest = if and { &yes } else { &no };
                    let mut y = self.itake(rest.len());
                    self.ie(b, rest, &mut y)?;
                    let mut j = 0;
                    for x in out.iter_mut() {
                        if undecided(*x) {
                            *x = i64::from(y[j] != 0);
                            j += 1;
                        } else {
                            *x = i64::from(!and);
                        }
                    }
                    self.ipool.push(y);
                    self.tpool.push(yes);
                    self.tpool.push(no);
                } else {
                    out.fill(i64::from(!and));
                }
            }
            IExpr::Select(c, a, b) => self.select(c, &**a, &**b, act, out, Self::ie)?,
            IExpr::Wrap(a, t) => {
                self.ie(a, act, out)?;
                wrap_to(*t, out);
            }
            IExpr::Affine { terms, constant, t } => {
                // The terms that are one value for every thread fold into
                // the constant; the others add a column each, the first
                // one written over the constant rather than added to it.
                let mut base = *constant;
                let mut varying = [0usize; 8];
                let mut nv = 0;
                for (k, (term, c)) in terms.iter().enumerate() {
                    match self.uniform(term) {
                        Some(x) => base = base.wrapping_add(x.wrapping_mul(*c)),
                        None if nv < varying.len() => {
                            varying[nv] = k;
                            nv += 1;
                        }
                        None => return self.affine_slow(terms, *constant, *t, act, out),
                    }
                }
                if nv == 0 {
                    out.fill(base);
                }
                let full = act.len() == self.n;
                for (j, &k) in varying[..nv].iter().enumerate() {
                    let (term, c) = (&terms[k].0, terms[k].1);
                    let add = |o: &mut i64, v: i64| {
                        let x = v.wrapping_mul(c);
                        *o = if j == 0 { base.wrapping_add(x) } else { o.wrapping_add(x) };
                    };
                    match term {
                        Term::Var(s) => {
                            let col = &self.ivars[*s].col;
                            if full {
                                out.iter_mut().zip(col).for_each(|(o, &v)| add(o, v));
                            } else {
                                out.iter_mut().zip(act).for_each(|(o, &t)| add(o, col[t as usize]));
                            }
                        }
                        Term::Expr(e) => {
                            let mut x = self.itake(act.len());
                            self.ie(e, act, &mut x)?;
                            out.iter_mut().zip(&x).for_each(|(o, &v)| add(o, v));
                            self.ipool.push(x);
                        }
                    }
                }
                wrap_to(*t, out);
            }
            IExpr::NonZero(a) => {
                self.ie(a, act, out)?;
                out.iter_mut().for_each(|x| *x = i64::from(*x != 0));
            }
            IExpr::FloatNonZero(a) => {
                let mut x = self.ftake(act.len());
                self.fe(a, act, &mut x)?;
                out.iter_mut().zip(&x).for_each(|(o, v)| *o = i64::from(*v != 0.0));
                self.fpool.push(x);
            }
            IExpr::Trunc(a, t) => {
                let mut x = self.ftake(act.len());
                self.fe(a, act, &mut x)?;
                out.iter_mut().zip(&x).for_each(|(o, v)| *o = *v as i64);
                if let Some(t) = t {
                    float_to(*t, out);
                }
                self.fpool.push(x);
            }
            IExpr::Shuffle(a, delta, width) => {
                self.ie(a, act, out)?;
                self.shuffle(act, *delta, *width, out)?;
            }
            IExpr::Abs(a) => {
                self.ie(a, act, out)?;
                out.iter_mut().for_each(|x| *x = x.wrapping_abs());
            }
            IExpr::Load(l) => {
                let mut x = self.ftake(act.len());
                self.load(l, act, &mut x)?;
                out.iter_mut().zip(&x).for_each(|(o, v)| *o = *v as i64);
                self.fpool.push(x);
            }
            IExpr::Fail(m) => return Err(m.clone()),
        }
        Ok(())
    }

    /// An affine sum with more varying terms than `ie` keeps track of:
    /// each term evaluated as a column and added.
    #[cold]
    fn affine_slow(&mut self, terms: &[(Term, i64)], constant: i64, t: DType, act: &[u32], out: &mut [i64]) -> R {
        out.fill(constant);
        let mut x = self.itake(act.len());
        for (term, c) in terms {
            match term {
                Term::Var(s) => self.ie(&IExpr::Var(*s), act, &mut x)?,
                Term::Expr(e) => self.ie(e, act, &mut x)?,
            }
            out.iter_mut().zip(&x).for_each(|(o, &v)| *o = o.wrapping_add(v.wrapping_mul(*c)));
        }
        self.ipool.push(x);
        wrap_to(t, out);
        Ok(())
    }

    /// Evaluates a float expression for the threads of `act` into `out`.
    fn fe(&mut self, e: &FExpr, act: &[u32], out: &mut [f64]) -> R {
        match e {
            FExpr::Const(v) => out.fill(*v),
            FExpr::Var(s) => {
                let col = &self.fvars[*s];
                if act.len() == self.n {
                    out.copy_from_slice(col);
                } else {
                    for (o, &t) in out.iter_mut().zip(act) {
                        *o = col[t as usize];
                    }
                }
            }
            FExpr::Bin(op, p, a, b) => {
                self.fe(a, act, out)?;
                let mut y = self.ftake(act.len());
                self.fe(b, act, &mut y)?;
                float_op(*op, out, &y)?;
                p.round_all(out);
                self.fpool.push(y);
            }
            FExpr::FromInt(a) => {
                let mut x = self.itake(act.len());
                self.ie(a, act, &mut x)?;
                out.iter_mut().zip(&x).for_each(|(o, v)| *o = *v as f64);
                self.ipool.push(x);
            }
            FExpr::Round(a, p) => {
                self.fe(a, act, out)?;
                p.round_all(out);
            }
            FExpr::Select(c, a, b) => self.select(c, &**a, &**b, act, out, Self::fe)?,
            FExpr::Call(i, p, a, b) => {
                self.fe(a, act, out)?;
                let mut y = self.ftake(act.len());
                if let Some(b) = b {
                    self.fe(b, act, &mut y)?;
                }
                for (o, &y) in out.iter_mut().zip(&y) {
                    *o = p.round(intrinsic(*i, *o, y));
                }
                self.fpool.push(y);
            }
            FExpr::Shuffle(a, delta, width) => {
                self.fe(a, act, out)?;
                self.shuffle(act, *delta, *width, out)?;
            }
            FExpr::Load(l) => self.load(l, act, out)?,
            FExpr::Fail(m) => return Err(m.clone()),
        }
        Ok(())
    }

    /// `vals`, one per active thread, shuffled down by `delta` within
    /// segments of `width` lanes (`shuffle_sources`).
    fn shuffle<T: Copy>(&self, act: &[u32], delta: u32, width: u32, vals: &mut [T]) -> R {
        let from = self.shuffle_sources(act, delta, width)?;
        let moved: Vec<T> = from.iter().map(|&j| vals[j]).collect();
        vals.copy_from_slice(&moved);
        Ok(())
    }

    /// For each active thread of a warp shuffle down by `delta` within
    /// segments of `width` lanes, the place in `act` of the thread whose
    /// value it takes (its own where the lane would leave the segment).
    /// Every thread of a warp that reaches it must reach it together, as
    /// `__shfl_down_sync` with the warp's mask requires.
    pub(super) fn shuffle_sources(&self, act: &[u32], delta: u32, width: u32) -> Result<Vec<usize>, SimError> {
        let mut at = vec![usize::MAX; self.n];
        for (i, &t) in act.iter().enumerate() {
            at[t as usize] = i;
        }
        let lanes = |t: u32| (t / 32 * 32) as usize..((t / 32 * 32 + 32) as usize).min(self.n);
        act.iter()
            .enumerate()
            .map(|(i, &t)| {
                if let Some(u) = lanes(t).find(|&u| at[u] == usize::MAX) {
                    return Err(SimError::from(format!(
                        "a warp shuffle is reached by thread {} but not by thread {} of the same warp: a shuffle must not sit under thread-dependent control flow",
                        self.show(t),
                        self.show(u as u32)
                    )));
                }
                if (t % 32) % width + delta >= width {
                    return Ok(i);
                }
                let src = (t + delta) as usize;
                if src >= self.n {
                    return Err(SimError::from(format!(
                        "a warp shuffle in thread {} reads lane {} of a warp the block does not fill",
                        self.show(t),
                        src % 32
                    )));
                }
                Ok(at[src])
            })
            .collect()
    }
}

#[cold]
fn dim_out_of_bounds(v: i64, d: usize, name: &str, extent: i64) -> SimError {
    format!("out-of-bounds access: index {v} of dimension {d} of {name} (extent {extent})")
}

/// Lane by lane, the next value of `x` where `c` is true and of `y` where it
/// is false; `x` and `y` hold only the lanes of their side.
fn merge<T: Copy>(c: &[i64], x: &[T], y: &[T], out: &mut [T]) {
    let (mut i, mut j) = (0, 0);
    for (o, &c) in out.iter_mut().zip(c) {
        if c != 0 {
            *o = x[i];
            i += 1;
        } else {
            *o = y[j];
            j += 1;
        }
    }
}

fn float_op(op: BinOp, out: &mut [f64], y: &[f64]) -> R {
    let lanes = out.iter_mut().zip(y);
    match op {
        BinOp::Add => lanes.for_each(|(a, b)| *a += b),
        BinOp::Sub => lanes.for_each(|(a, b)| *a -= b),
        BinOp::Mul => lanes.for_each(|(a, b)| *a *= b),
        BinOp::Div => lanes.for_each(|(a, b)| *a /= b),
        BinOp::Min => lanes.for_each(|(a, b)| *a = a.min(*b)),
        BinOp::Max => lanes.for_each(|(a, b)| *a = a.max(*b)),
        BinOp::FloorDiv => lanes.for_each(|(a, b)| *a = (*a / b).floor()),
        BinOp::FloorMod => lanes.for_each(|(a, b)| *a -= b * (*a / b).floor()),
        _ => return Err("a logical operator on floats".into()),
    }
    Ok(())
}

/// `out[k] = out[k] op y[k]` on integers of type `t`.
fn int_op(op: BinOp, t: DType, out: &mut [i64], y: &[i64]) -> R {
    macro_rules! lanes {
        ($f:expr) => {
            out.iter_mut().zip(y).for_each(|(a, &b)| *a = $f(*a, b))
        };
    }
    match op {
        BinOp::Add => lanes!(i64::wrapping_add),
        BinOp::Sub => lanes!(i64::wrapping_sub),
        BinOp::Mul => lanes!(i64::wrapping_mul),
        BinOp::Div | BinOp::FloorDiv | BinOp::FloorMod if y.contains(&0) => {
            return Err("integer division by zero".into())
        }
        BinOp::Div => lanes!(i64::wrapping_div),
        BinOp::FloorDiv => lanes!(floor_div),
        BinOp::FloorMod => lanes!(floor_mod),
        BinOp::Min => lanes!(i64::min),
        BinOp::Max => lanes!(i64::max),
        BinOp::Eq => lanes!(|a, b| i64::from(a == b)),
        BinOp::Ne => lanes!(|a, b| i64::from(a != b)),
        BinOp::Lt => lanes!(|a, b| i64::from(a < b)),
        BinOp::Le => lanes!(|a, b| i64::from(a <= b)),
        BinOp::Gt => lanes!(|a, b| i64::from(a > b)),
        BinOp::Ge => lanes!(|a, b| i64::from(a >= b)),
        BinOp::And => lanes!(|a, b| i64::from(a != 0 && b != 0)),
        BinOp::Or => lanes!(|a, b| i64::from(a != 0 || b != 0)),
        BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr => {
            for (a, &b) in out.iter_mut().zip(y) {
                *a = bitwise(op, *a, b, t)?;
            }
        }
    }
    wrap_all(op, t, out);
    Ok(())
}

/// A bitwise operation or a shift; a shift by a negative amount or by the
/// type's width or more is an error (C leaves its result undefined).
fn bitwise(op: BinOp, a: i64, b: i64, t: DType) -> Result<i64, SimError> {
    let bits = t.bytes() as i64 * 8;
    if matches!(op, BinOp::Shl | BinOp::Shr) && !(0..bits).contains(&b) {
        return Err(format!("shifting {t} by {b}, not from 0 to {}", bits - 1));
    }
    tirc_ir::expr::bitwise(op, a, b).ok_or_else(|| format!("a shift by {b}"))
}

/// `out[k] = out[k] op c` on integers of type `t`.
fn int_op_const(op: BinOp, t: DType, out: &mut [i64], c: i64) -> R {
    macro_rules! lanes {
        ($f:expr) => {
            out.iter_mut().for_each(|a| *a = $f(*a, c))
        };
    }
    match op {
        BinOp::Add => lanes!(i64::wrapping_add),
        BinOp::Sub => lanes!(i64::wrapping_sub),
        BinOp::Mul => lanes!(i64::wrapping_mul),
        BinOp::Div | BinOp::FloorDiv | BinOp::FloorMod if c == 0 => return Err("integer division by zero".into()),
        BinOp::Div => lanes!(i64::wrapping_div),
        BinOp::FloorDiv if c > 0 => lanes!(i64::div_euclid),
        BinOp::FloorMod if c > 0 => lanes!(i64::rem_euclid),
        BinOp::FloorDiv => lanes!(floor_div),
        BinOp::FloorMod => lanes!(floor_mod),
        BinOp::Min => lanes!(i64::min),
        BinOp::Max => lanes!(i64::max),
        BinOp::Eq => lanes!(|a, b| i64::from(a == b)),
        BinOp::Ne => lanes!(|a, b| i64::from(a != b)),
        BinOp::Lt => lanes!(|a, b| i64::from(a < b)),
        BinOp::Le => lanes!(|a, b| i64::from(a <= b)),
        BinOp::Gt => lanes!(|a, b| i64::from(a > b)),
        BinOp::Ge => lanes!(|a, b| i64::from(a >= b)),
        BinOp::And => lanes!(|a, b| i64::from(a != 0 && b != 0)),
        BinOp::Or => lanes!(|a, b| i64::from(a != 0 || b != 0)),
        BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr => {
            for a in out.iter_mut() {
                *a = bitwise(op, *a, c, t)?;
            }
        }
    }
    wrap_all(op, t, out);
    Ok(())
}

/// Arithmetic results wrapped to the width of `t` (comparisons are 0 or 1).
fn wrap_all(op: BinOp, t: DType, out: &mut [i64]) {
    if !(op.is_compare() || op.is_logical()) {
        wrap_to(t, out);
    }
}

/// A 16×16 tile, row by row, as the warp tile that holds it: lane by lane,
/// 8 elements each (`tirc_ir::wmma::warp_layout`).
fn to_warp(tile: &[f64; 256]) -> [f64; 256] {
    let mut out = [0.0; 256];
    for (i, x) in out.iter_mut().enumerate() {
        let (r, c) = tirc_ir::wmma::warp_layout_inverse(i as i64 / 8, i as i64 % 8);
        *x = tile[(r * 16 + c) as usize];
    }
    out
}

/// `acc + a · b` on 16×16 tiles, row by row: products exact, summed in
/// f64, each element rounded once to the accumulator's type.
fn tile_product(
    acc: &[f64; 256],
    a: impl Fn(usize, usize) -> f64,
    b: impl Fn(usize, usize) -> f64,
    round: super::value::Precision,
) -> [f64; 256] {
    const T: usize = 16;
    let mut v = [0.0; T * T];
    for r in 0..T {
        for c in 0..T {
            let dot: f64 = (0..T).map(|x| a(r, x) * b(x, c)).sum();
            v[r * T + c] = round.round(acc[r * T + c] + dot);
        }
    }
    v
}

/// The 16×16 tile a warp tile holds, row by row.
fn from_warp(warp: &[f64; 256]) -> [f64; 256] {
    let mut out = [0.0; 256];
    for (i, x) in out.iter_mut().enumerate() {
        let (l, e) = tirc_ir::wmma::warp_layout(i as i64 / 16, i as i64 % 16);
        *x = warp[(l * 8 + e) as usize];
    }
    out
}

/// Block `no` of a launch (its number plus 1) as `(x, y, z)`.
fn block_name(no: u32, grid: [i64; 3]) -> String {
    let b = i64::from(no) - 1;
    let [x, y, _] = grid;
    let (x, y) = (x.max(1), y.max(1));
    format!("({}, {}, {})", b % x, b / x % y, b / (x * y))
}

/// A word one block of a launch reads and another changes: a GPU runs the
/// blocks in any order, so the read may see either value. `write`: the
/// second block's write comes after the first's read here (else its read
/// after the first's write).
#[cold]
pub(super) fn order_race(name: &str, a: usize, grid: [i64; 3], first: u32, second: u32, write: bool) -> SimError {
    let block = |no: u32| block_name(no, grid);
    let (what, earlier) = if write { ("changes", "read") } else { ("reads", "changed") };
    let who = if first == MANY { "other blocks".to_string() } else { format!("block {}", block(first)) };
    format!(
        "a race between blocks: block {} {what} {name}[{a}], which {who} {earlier} in the same launch; a GPU runs the blocks in any order, so it may see either value (split the kernel there, or keep each block to the elements it writes)",
        block(second)
    )
}

/// Two blocks of one launch writing different values to one word.
#[cold]
pub(super) fn block_race(name: &str, a: usize, grid: [i64; 3], first: (u32, f64), second: (u32, f64)) -> SimError {
    let block = |no: u32| block_name(no, grid);
    format!(
        "a race between blocks: blocks {} and {} both write {name}[{a}], with different values ({} and {}); a GPU keeps whichever lands last",
        block(first.0),
        block(second.0),
        first.1,
        second.1
    )
}
