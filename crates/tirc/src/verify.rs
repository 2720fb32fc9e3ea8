//! Checking a function against its reference: random inputs, poisoned
//! outputs, the unscheduled function run in float64, and the error between
//! them. Used by `tirc run` and by the tests, which check every primitive
//! and pass by running the IR before and after it.

use tirc_exec::data::{ErrorStats, HostData};
use tirc_exec::{reference, sim};
use tirc_ir::{Buffer, PrimFunc, Stmt};

/// `f`'s run-time sizes paired with the values `defines` gives them (those
/// it gives none are left out): what `PrimFunc::specialize` takes to make
/// the function the simulator runs for those sizes.
pub fn size_values(f: &PrimFunc, defines: &[(String, i64)]) -> Vec<(tirc_ir::Var, i64)> {
    f.sizes
        .iter()
        .filter_map(|v| defines.iter().rev().find(|(n, _)| n == v.name()).map(|(_, x)| (v.clone(), *x)))
        .collect()
}

/// Buffers the function writes without reading first: they are poisoned.
pub fn outputs(f: &PrimFunc) -> Vec<bool> {
    let mut written = vec![false; f.params.len()];
    let mut read_without_init = vec![false; f.params.len()];
    for r in f.body.blocks() {
        for w in &r.block.writes {
            if let Some(i) = f.params.iter().position(|p| *p == w.buffer) {
                written[i] = true;
            }
        }
        let init_writes: Vec<&Buffer> = match &r.block.init {
            Some(init) => stores(init),
            None => vec![],
        };
        for rd in &r.block.reads {
            if let Some(i) = f.params.iter().position(|p| *p == rd.buffer) {
                if !init_writes.contains(&&rd.buffer) {
                    read_without_init[i] = true;
                }
            }
        }
    }
    written.iter().zip(&read_without_init).map(|(w, r)| *w && !r).collect()
}

/// The buffers `s` stores to, a tensor-core operation's written tile
/// (lowered text's `T.mma_store`) included.
fn stores(s: &Stmt) -> Vec<&Buffer> {
    let mut out = Vec::new();
    s.for_each_access(&mut |b, _, store| {
        if store {
            out.push(b);
        }
    });
    out
}

/// For each parameter, the bound its values must stay under because the
/// function indexes a buffer with them (`A[B[i], j]`, a gather), directly
/// or through copies (`B_shared[i] = B[i]`, then `A[B_shared[i], j]`): its
/// elements must lie in [0, the extent of that dimension), the smallest
/// over its uses. None where no index reads it.
pub fn index_bounds(f: &PrimFunc) -> Vec<Option<i64>> {
    let unwrap = |e: &tirc_ir::Expr| -> Option<Buffer> {
        let inner = match e {
            tirc_ir::Expr::Cast(t, a) if t.is_int() => a.as_ref(),
            e => e,
        };
        match inner {
            tirc_ir::Expr::Load(x, _) if x.dtype().is_int() => Some(x.clone()),
            _ => None,
        }
    };
    // Buffers (by identity) and their bounds; copies between integer buffers.
    let mut bounds: Vec<(Buffer, i64)> = Vec::new();
    let mut copies: Vec<(Buffer, Buffer)> = Vec::new();
    let note = |bounds: &mut Vec<(Buffer, i64)>, buf: &Buffer, idx: &[tirc_ir::Expr]| {
        for (d, e) in idx.iter().enumerate() {
            if let (Some(x), Some(ext)) = (unwrap(e), buf.shape().get(d).and_then(|s| s.as_int())) {
                match bounds.iter_mut().find(|(b, _)| b.id() == x.id()) {
                    Some((_, b)) => *b = (*b).min(ext),
                    None => bounds.push((x, ext)),
                }
            }
        }
    };
    f.body.for_each_access(&mut |b, idx, _| note(&mut bounds, b, idx));
    f.body.walk(&mut |s| {
        if let Stmt::Store { buffer, value, .. } = s {
            if let Some(src) = unwrap(value) {
                copies.push((buffer.clone(), src));
            }
        }
    });
    // A copy's source carries its destination's bound.
    for _ in 0..=copies.len() {
        let mut changed = false;
        for (dst, src) in &copies {
            let Some(&(_, b)) = bounds.iter().find(|(x, _)| x.id() == dst.id()) else { continue };
            match bounds.iter_mut().find(|(x, _)| x.id() == src.id()) {
                Some((_, s)) if *s <= b => {}
                Some((_, s)) => {
                    *s = b;
                    changed = true;
                }
                None => {
                    bounds.push((src.clone(), b));
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    f.params.iter().map(|p| bounds.iter().find(|(b, _)| b.id() == p.id()).map(|(_, x)| *x)).collect()
}

pub fn sizes(f: &PrimFunc) -> Result<Vec<usize>, String> {
    f.params
        .iter()
        .map(|b| {
            b.num_elements().map(|n| n as usize).ok_or_else(|| format!("buffer {} has no constant size", b.name()))
        })
        .collect()
}

/// The relative error a result may have: by the narrowest float type the
/// function computes in — its parameters, its intermediate buffers, its
/// casts (an accumulation in it rounds at every step), and tf32 products
/// (float16's 10 bits of mantissa) unless their operands are tf32 values
/// already (`decompose_tf32x3`'s split copies: see [`Tf32Values`]).
pub fn default_tolerance(f: &PrimFunc) -> f64 {
    tolerance_of(f, &Tf32Values::of(f, &[f]))
}

/// The tolerance of a function run as `kernels`: the loosest of theirs and
/// the original's, the tf32 values followed from kernel to kernel.
pub fn function_tolerance<'a>(original: &'a PrimFunc, kernels: impl IntoIterator<Item = &'a PrimFunc> + Clone) -> f64 {
    let mut all: Vec<&PrimFunc> = vec![original];
    all.extend(kernels.clone());
    let exact = Tf32Values::of(original, &all);
    kernels.into_iter().map(|k| tolerance_of(k, &exact)).fold(tolerance_of(original, &exact), f64::max)
}

/// Whether `kernels` multiply float32 as tf32 anywhere on operands that are
/// not tf32 values already: their result is tf32's, and cuBLAS is compared
/// with its TF32 math; where every tf32 product reads split operands
/// (`decompose_tf32x3`), the result is float32's and SGEMM is the rival.
pub fn multiplies_as_tf32<'a>(original: &PrimFunc, kernels: impl IntoIterator<Item = &'a PrimFunc> + Clone) -> bool {
    let all: Vec<&PrimFunc> = kernels.clone().into_iter().collect();
    let exact = Tf32Values::of(original, &all);
    let mut inexact = false;
    for k in kernels {
        k.body.walk(&mut |s| inexact |= matches!(s, Stmt::Wmma(w) if w.is_tf32() && !exact.operands_of(w)));
    }
    inexact
}

/// The buffers (by name, across the kernels of one function) whose every
/// write is a tf32 value: `T.tf32_round(..)`, a choice between such values,
/// a literal tf32 holds exactly (the zeros of padding), or a copy of such a
/// buffer (plain, `cp.async`, bulk tensor copy, `ldmatrix`). A tf32
/// product of such operands is exact. Found from nothing up, so a buffer
/// counts only once all that writes it does; never a parameter of the
/// function, which holds what its caller gave until (and where) it is
/// written.
pub struct Tf32Values(std::collections::HashSet<String>);

impl Tf32Values {
    pub fn of(original: &PrimFunc, funcs: &[&PrimFunc]) -> Tf32Values {
        use tirc_ir::WmmaOp;
        let mut set: std::collections::HashSet<String> = std::collections::HashSet::new();
        loop {
            // Each written buffer: whether all its writes so far are tf32.
            let mut writes: std::collections::HashMap<String, bool> = std::collections::HashMap::new();
            for f in funcs {
                f.body.walk(&mut |s| {
                    let (dst, ok) = match s {
                        Stmt::Store { buffer, value, .. } => (buffer.name().to_string(), holds_tf32(value, &set)),
                        Stmt::Wmma(w) if !w.tiles.is_empty() => {
                            let copy = matches!(w.op, WmmaOp::Load { .. } | WmmaOp::LdMatrix { .. });
                            let ok = copy && w.tiles.get(1).is_some_and(|t| set.contains(t.buffer.name()));
                            (w.tiles[0].buffer.name().to_string(), ok)
                        }
                        _ => return,
                    };
                    *writes.entry(dst).or_insert(true) &= ok;
                });
            }
            let given = |n: &str| original.params.iter().any(|p| p.name() == n);
            let next: std::collections::HashSet<String> =
                writes.into_iter().filter(|(n, ok)| *ok && !given(n)).map(|(n, _)| n).collect();
            if next == set {
                return Tf32Values(set);
            }
            set = next;
        }
    }

    /// Whether both operands of a tf32 product hold tf32 values.
    pub fn operands_of(&self, w: &tirc_ir::Wmma) -> bool {
        let operands: &[tirc_ir::Tile] = match w.op {
            tirc_ir::WmmaOp::MmaSync { .. } => w.tiles.get(1..3).unwrap_or(&[]),
            tirc_ir::WmmaOp::Wgmma { .. } => w.tiles.get(w.op.wgmma_tiles()..).unwrap_or(&[]),
            _ => &[],
        };
        !operands.is_empty() && operands.iter().all(|t| self.0.contains(t.buffer.name()))
    }
}

/// Whether `e` is a tf32 value, given the buffers `set` known to hold them.
fn holds_tf32(e: &tirc_ir::Expr, set: &std::collections::HashSet<String>) -> bool {
    use tirc_ir::{Expr, Intrinsic};
    match e {
        Expr::Call(Intrinsic::Tf32Round, _) => true,
        Expr::Call(Intrinsic::CpAsync | Intrinsic::TmaLoad, args) => args.first().is_some_and(|a| holds_tf32(a, set)),
        Expr::Select(_, a, b) => holds_tf32(a, set) && holds_tf32(b, set),
        Expr::Load(b, _) => set.contains(b.name()),
        Expr::Float(v, _) => sim::tf32(*v) == *v,
        _ => false,
    }
}

fn tolerance_of(f: &PrimFunc, exact: &Tf32Values) -> f64 {
    let mut types: Vec<tirc_ir::DType> = f.params.iter().map(|b| b.dtype()).collect();
    let mut accumulations = 0.0f64;
    f.body.walk(&mut |s| {
        match s {
            Stmt::Block(r) => {
                types.extend(r.block.alloc_buffers.iter().map(|b| b.dtype()));
                accumulations = accumulations.max(accumulation_error(&r.block));
            }
            Stmt::Allocate { buffer, .. } => types.push(buffer.dtype()),
            Stmt::Wmma(w) if w.is_tf32() && !exact.operands_of(w) => types.push(tirc_ir::DType::F16),
            _ => {}
        }
        s.for_each_expr(|e| {
            e.walk(&mut |x| {
                if let tirc_ir::Expr::Cast(t, _) = x {
                    types.push(*t);
                }
            })
        });
    });
    // Integer types are exact (0), float64 is the reference's own (1e-9):
    // the loosest float type present sets the bar.
    types.iter().filter_map(|t| t.info()).map(|i| i.tolerance).fold(accumulations, f64::max)
}

/// The error a reduction block accumulates in its own type: a sum of n
/// random terms rounded at every step is off by about sqrt(n) roundings
/// relative to its size (the errors, like the terms, add up as a random
/// walk). It matters for narrow types only: float16 over 10 000 terms
/// (0.049) is past float16's own 1e-2, float32 over a million (6e-5) is
/// not past 1e-4. 0 for a block that is not a reduction, or whose length
/// is not a constant.
fn accumulation_error(block: &tirc_ir::Block) -> f64 {
    let reduce = block.iter_vars.iter().filter(|v| v.kind == tirc_ir::IterKind::Reduce);
    let Some(n) = reduce.map(|v| v.dom.extent.as_int()).try_fold(1i64, |n, e| e.map(|e| n.saturating_mul(e))) else {
        return 0.0;
    };
    if n <= 1 {
        return 0.0;
    }
    let roundoff = block.writes.iter().filter_map(|w| w.buffer.dtype().unit_roundoff()).fold(0.0, f64::max);
    (n as f64).sqrt() * roundoff
}

/// Float inputs widened to float64 for the reference.
pub fn widen(inputs: &[HostData], f: &PrimFunc) -> Result<Vec<HostData>, String> {
    let f64f = reference::to_f64(f);
    inputs
        .iter()
        .zip(&f64f.params)
        .map(|(d, b)| match (d, b.dtype()) {
            (HostData::F32(_) | HostData::F16(_) | HostData::BF16(_), tirc_ir::DType::Float(64)) => {
                Ok(HostData::F64(d.to_f64()))
            }
            (d, _) => Ok(d.clone()),
        })
        .collect()
}

/// What the float64 reference leaves: the contents of every parameter, then
/// of every global intermediate (`intermediates`, in order), as f64.
#[derive(Clone, Debug)]
pub struct Reference {
    pub values: Vec<Vec<f64>>,
    pub intermediates: Vec<Buffer>,
}

/// Runs the float64 reference on the simulator.
pub fn reference_sim(f: &PrimFunc, inputs: &[HostData]) -> Result<Reference, String> {
    reference_sim_observed(f, inputs, &mut |_, _| {})
}

/// [`reference_sim`] with progress over the blocks of its kernels (see
/// `sim::run_observed`).
pub fn reference_sim_observed(
    f: &PrimFunc,
    inputs: &[HostData],
    progress: &mut dyn FnMut(i64, i64),
) -> Result<Reference, String> {
    let plan = reference::plan(f, true).map_err(|d| d.message)?;
    let mut bufs = widen(inputs, f)?;
    for b in &plan.intermediates {
        let n = b.num_elements().unwrap_or(0) as usize;
        bufs.push(match b.dtype() {
            tirc_ir::DType::Float(64) => HostData::F64(vec![tirc_exec::data::undefined(); n]),
            t => HostData::poisoned(t, n)?,
        });
    }
    // The reference's threads are copies of one sequential program run in
    // lockstep: they share no memory but its global buffers, whose
    // cross-thread uses are a limit of how the reference is spread over
    // threads (`tirc_exec::reference`), not a race of the kernel under test.
    let opts = sim::SimOptions { f64_storage: true, ignore_races: true, ..Default::default() };
    for k in &plan.kernels {
        sim::run_observed(k, &mut bufs, opts, progress).map_err(|e| format!("simulating the reference: {e}"))?;
    }
    // An output computed from memory nothing wrote (a shared tile read
    // where no thread of the block stored) is undefined: NaN in the
    // reference and in the kernel alike, which would compare as equal.
    for ((b, d), w) in f.params.iter().zip(&bufs).zip(written(f)) {
        if !w {
            continue;
        }
        if let Some(i) = d.to_f64().iter().position(|x| tirc_exec::data::is_undefined(*x)) {
            return Err(format!(
                "the function computes `{}` at element {i} from memory that nothing wrote: what it computes there is undefined: nothing to check",
                b.name()
            ));
        }
    }
    Ok(Reference { values: bufs.iter().map(|d| d.to_f64()).collect(), intermediates: plan.intermediates })
}

/// Runs `candidate` (the function at any stage: scheduled, after any pass,
/// lowered) on the simulator with fresh inputs from `seed`, and compares
/// every buffer `original` writes with the reference. Returns the worst
/// error and the tolerance it must meet.
pub fn sim_check(original: &PrimFunc, candidate: &PrimFunc, seed: u64) -> Result<(ErrorStats, f64), String> {
    sim_check_with(original, candidate, seed, sim::SimOptions::default())
}

/// `sim_check` with simulator options (to skip race checks on a kernel whose
/// barriers are not placed yet).
pub fn sim_check_with(
    original: &PrimFunc,
    candidate: &PrimFunc,
    seed: u64,
    opts: sim::SimOptions,
) -> Result<(ErrorStats, f64), String> {
    // A kernel takes the function's global intermediates after its
    // parameters (`split_kernels`); a function before that keeps them in
    // its root, where the run would not show them: they are lifted.
    if candidate.params.len() > original.params.len() {
        let intermediates = &candidate.params[original.params.len()..];
        return check_kernels(original, std::slice::from_ref(candidate), intermediates, seed, opts);
    }
    let (lifted, intermediates) = tirc_passes::transform::split_kernels::lift_root_globals(candidate);
    check_kernels(original, &[lifted], &intermediates, seed, opts)
}

/// `sim_check` of a function compiled to several kernels: they run in
/// order on the parameters and the intermediates (poisoned) after them.
pub fn sim_check_kernels(
    original: &PrimFunc,
    kernels: &[PrimFunc],
    intermediates: &[Buffer],
    seed: u64,
) -> Result<(ErrorStats, f64), String> {
    check_kernels(original, kernels, intermediates, seed, sim::SimOptions::default())
}

/// `sim_check_kernels` with simulator options.
pub fn sim_check_kernels_with(
    original: &PrimFunc,
    kernels: &[PrimFunc],
    intermediates: &[Buffer],
    seed: u64,
    opts: sim::SimOptions,
) -> Result<(ErrorStats, f64), String> {
    check_kernels(original, kernels, intermediates, seed, opts)
}

fn check_kernels(
    original: &PrimFunc,
    kernels: &[PrimFunc],
    intermediates: &[Buffer],
    seed: u64,
    opts: sim::SimOptions,
) -> Result<(ErrorStats, f64), String> {
    crate::measure::check_sim_memory(original, intermediates)?;
    let mut args = crate::measure::prepare(original, seed)?.args;
    // The reference starts from the same poisoned outputs, so that what
    // the function leaves unwritten is poison in both.
    let start = args.clone();
    for b in intermediates {
        args.push(HostData::poisoned(b.dtype(), b.num_elements().unwrap_or(0) as usize)?);
    }
    for k in kernels {
        sim::run(k, &mut args, opts)?;
    }
    let reference = reference_sim(original, &start)?;
    let w = crate::measure::worst_error(original, &args, intermediates, &reference)?;
    Ok((w, function_tolerance(original, kernels)))
}

/// Buffers the function allocates and reads but nothing writes: what is
/// read from them is undefined (TVM leaves it so), and so is every result
/// computed from it.
pub fn undefined_reads(f: &PrimFunc) -> Vec<Buffer> {
    let mut allocated: Vec<Buffer> = Vec::new();
    let mut loaded: Vec<Buffer> = Vec::new();
    let mut stored: Vec<Buffer> = Vec::new();
    f.body.walk(&mut |s| match s {
        Stmt::Block(r) => {
            allocated.extend(r.block.alloc_buffers.iter().cloned());
            stored.extend(r.block.writes.iter().map(|w| w.buffer.clone()));
        }
        Stmt::Allocate { buffer, .. } => allocated.push(buffer.clone()),
        _ => {}
    });
    f.body.for_each_access(&mut |b, _, store| if store { stored.push(b.clone()) } else { loaded.push(b.clone()) });
    let mut out: Vec<Buffer> = Vec::new();
    for b in allocated {
        let same = |x: &Buffer| x.id() == b.id();
        if loaded.iter().any(same) && !stored.iter().any(same) && !out.iter().any(same) {
            out.push(b);
        }
    }
    out
}

/// Buffers the function writes.
pub fn written(f: &PrimFunc) -> Vec<bool> {
    let st = stores(&f.body);
    f.params
        .iter()
        .map(|p| f.body.blocks().iter().any(|r| r.block.writes.iter().any(|w| w.buffer == *p)) || st.contains(&p))
        .collect()
}

/// How a function uses one of its parameter buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// Its contents before the run are read (an output the function
    /// initializes before reading, such as a matmul's C, is not).
    pub reads: bool,
    pub writes: bool,
}

impl Access {
    /// Times the buffer crosses global memory at the least: read once, written once.
    pub fn transfers(self) -> usize {
        self.reads as usize + self.writes as usize
    }

    /// "read", "write" or "readwrite" (nothing: "unused").
    pub fn name(self) -> &'static str {
        match (self.reads, self.writes) {
            (true, true) => "readwrite",
            (true, false) => "read",
            (false, true) => "write",
            (false, false) => "unused",
        }
    }
}

/// How `f` uses each of its parameters, in order.
pub fn access(f: &PrimFunc) -> Vec<Access> {
    let outs = outputs(f);
    let wr = written(f);
    let mut loaded = vec![false; f.params.len()];
    let mut mark = |b: &Buffer| {
        if let Some(i) = f.params.iter().position(|p| p == b) {
            loaded[i] = true;
        }
    };
    for r in f.body.blocks() {
        r.block.reads.iter().for_each(|x| mark(&x.buffer));
    }
    f.body.walk(&mut |s| {
        s.for_each_expr(|e| {
            e.walk(&mut |x| {
                if let tirc_ir::Expr::Load(b, _) = x {
                    mark(b)
                }
            })
        })
    });
    (0..f.params.len()).map(|i| Access { reads: loaded[i] && !outs[i], writes: wr[i] }).collect()
}
