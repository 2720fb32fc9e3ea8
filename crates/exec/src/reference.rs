//! The reference: the unscheduled function, lowered naively, for any
//! function.
//!
//! Each top-level loop nest of the function becomes its own kernel, run in
//! order (so a consumer sees its producer's whole result). In each, the
//! leading loops that only feed spatial block variables are fused and spread
//! over threads, one output element per thread, 256 threads per block;
//! reduction loops stay serial in the thread. With `f64`, every float buffer
//! and constant becomes float64, so the reference accumulates in double
//! precision on the simulator and on the GPU alike. Intermediate buffers
//! allocated at the function's top become global buffers of the plan.

use tirc_ir::resolve::root_block;
use tirc_ir::stmt::{BlockRealize, BufferRegion};
use tirc_ir::{Buffer, DType, Diagnostic, Expr, ForKind, Intrinsic, IterKind, PrimFunc, Range, Scope, Stmt, Var};
use tirc_passes::schedule::{bind::bind, fuse::fuse, split::split, Schedule};
use tirc_passes::transform;

/// Kernels to run in order over `params ++ intermediates`.
pub struct Plan {
    pub kernels: Vec<PrimFunc>,
    /// Buffers allocated at the function's top, passed to every kernel after
    /// the parameters.
    pub intermediates: Vec<Buffer>,
}

/// Threads per block of the reference kernels.
const THREADS: i64 = 256;

pub fn plan(f: &PrimFunc, f64: bool) -> Result<Plan, Diagnostic> {
    // A tensor-core operation is a warp's, and a bulk tensor copy a
    // producer's in a warp-specialized loop: the reference's one thread per
    // element cannot run them (a tensorized or lowered function printed as
    // text).
    // (Launched code is its own reference, run in the simulator's
    // lockstep: see `sequential`.)
    let (mut warp_op, mut launched) = (None, false);
    f.body.walk(&mut |s| match s {
        Stmt::Launch { .. } => launched = true,
        Stmt::Wmma(w) => {
            warp_op.get_or_insert(w.op.name());
        }
        Stmt::Store { value: Expr::Call(tirc_ir::Intrinsic::TmaLoad, _), .. } => {
            warp_op.get_or_insert("T.tma_load");
        }
        _ => {}
    });
    if let Some(op) = warp_op.filter(|_| !launched) {
        return Err(Diagnostic::new(format!(
            "the function as written runs warp-wide operations ({op}), which the reference (one thread an \
             element) cannot run: nothing to check"
        ))
        .help("check the schedule that made it instead (tirc run FILE -s SCHEDULE), whose reference is the unscheduled function"));
    }
    let f = if f64 { to_f64(f) } else { f.clone() };
    let f = sequential(&f);
    let (allocs, body) = match &f.body {
        Stmt::Block(r) if r.block.name == "root" => (r.block.alloc_buffers.clone(), r.block.body.clone()),
        b => (vec![], b.clone()),
    };
    let items = match body {
        Stmt::Seq(v) => v,
        s => vec![s],
    };
    // The root's buffers pass from kernel to kernel as global memory that
    // every reference thread sees (a scheduled function's shared tile at
    // the root included: its threads share it); their padding
    // (`storage_align`) is a layout the reference does not need.
    let moved: Vec<(Buffer, Buffer)> = allocs
        .iter()
        .map(|b| {
            let g = b.with(|n| {
                n.scope = Scope::Global;
                n.dim_align.clear();
            });
            (b.clone(), g)
        })
        .collect();
    let allocs: Vec<Buffer> = moved.iter().map(|(_, g)| g.clone()).collect();
    let items: Vec<Stmt> = items.iter().map(|s| tirc_ir::subst::replace_buffers_stmt(s, &moved)).collect();
    let mut params = f.params.clone();
    params.extend(allocs.iter().cloned());
    let mut kernels = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        let k = PrimFunc {
            name: format!("{}_ref{i}", f.name),
            params: params.clone(),
            sizes: f.sizes.clone(),
            scalars: f.scalars.clone(),
            attrs: vec![],
            signature: vec![],
            body: root_block(item, vec![]),
            span: f.span,
            facts: Default::default(),
        };
        let k = parallelize(k)?;
        kernels.push(transform::lower(k, &transform::PassContext::default(), |_, _| {})?);
    }
    Ok(Plan { kernels, intermediates: allocs })
}

/// A scheduled function as the sequential program it stands for: loops
/// bound to GPU axes run as plain loops, loop annotations (software
/// pipelines, unrolling) are dropped, and shared buffers become local, so
/// that spreading the function over reference threads gives each thread its
/// own copy. Lowered code with `T.launch_thread` is kept as it is: its
/// threads meet at barriers, and only the simulator's lockstep runs it.
fn sequential(f: &PrimFunc) -> PrimFunc {
    let mut launched = false;
    f.body.walk(&mut |s| launched |= matches!(s, Stmt::Launch { .. }));
    if launched {
        return f.clone();
    }
    let mut map: Vec<(Buffer, Buffer)> = Vec::new();
    let mut rescope = |b: &Buffer| -> Buffer {
        if b.scope() != Scope::Shared {
            return b.clone();
        }
        if let Some((_, n)) = map.iter().find(|(o, _)| o == b) {
            return n.clone();
        }
        let n = b.with(|n| n.scope = Scope::Local);
        map.push((b.clone(), n.clone()));
        n
    };
    let body = unbind(&stmt(&f.body, &mut rescope, false));
    PrimFunc { body, ..f.clone() }
}

/// Loops bound to GPU axes made serial, loop annotations and storage
/// alignment dropped; asynchronous copies become plain stores (run in order, a copy has
/// landed before anything after it reads it), their commits and waits
/// nothing.
fn unbind(s: &Stmt) -> Stmt {
    match s.map_children(unbind) {
        Stmt::For(mut l) => {
            if matches!(l.kind, ForKind::ThreadBinding(_)) {
                l.kind = ForKind::Serial;
            }
            l.annotations.clear();
            Stmt::For(l)
        }
        Stmt::Store { buffer, indices, value: Expr::Call(tirc_ir::Intrinsic::CpAsync, mut args) }
            if args.len() == 1 =>
        {
            Stmt::Store { buffer, indices, value: args.remove(0) }
        }
        Stmt::AsyncCommit | Stmt::AsyncWait(_) => Stmt::NoOp,
        // Padding a tile against bank conflicts is a layout the reference
        // does not need (and its tiles are global buffers there).
        Stmt::Block(mut r) => {
            r.block.annotations.retain(|(k, _)| k != "buffer_dim_align");
            Stmt::Block(r)
        }
        s => s,
    }
}

/// Whether a store outside any block sits in `s`.
fn bare_store(s: &Stmt) -> bool {
    match s {
        Stmt::Block(_) => false,
        Stmt::Store { .. } => true,
        _ => {
            let mut found = false;
            s.for_each_child(|c| found |= bare_store(c));
            found
        }
    }
}

/// Spreads the leading spatial loops of the function's single nest over
/// threads.
fn parallelize(f: PrimFunc) -> Result<PrimFunc, Diagnostic> {
    let Stmt::Block(root) = &f.body else { return Ok(f) };
    let blocks: Vec<&BlockRealize> = root.block.body.blocks();
    let mut chain = Vec::new();
    let mut s = &root.block.body;
    while let Stmt::For(l) = s {
        // A block is independent across the loop's iterations only where a
        // spatial variable of it follows the loop; an opaque block (no such
        // variable) may carry values from one iteration to the next.
        // Nor is a block whose writes do not follow the loop (a "spatial"
        // variable that accumulates into one element).
        let reduces = blocks.iter().any(|r| {
            let vars = || r.block.iter_vars.iter().zip(&r.iter_values);
            let follow: Vec<&tirc_ir::Var> = vars()
                .filter(|(iv, v)| iv.kind == IterKind::Spatial && v.uses(&l.var))
                .map(|(iv, _)| &iv.var)
                .collect();
            let written_along =
                r.block.writes.iter().all(|w| w.region.iter().any(|g| follow.iter().any(|v| g.min.uses(v))));
            vars().any(|(iv, v)| iv.kind != IterKind::Spatial && v.uses(&l.var)) || follow.is_empty() || !written_along
        });
        // A store outside any block may depend on other iterations
        // (`A[i + 1] = A[i] + 1`): such a loop stays serial, as does one
        // whose blocks read what another iteration writes.
        if reduces
            || bare_store(&l.body)
            || !iterations_apart(l)
            || l.extent.as_int().is_none()
            || l.kind != tirc_ir::ForKind::Serial
        {
            break;
        }
        chain.push(l.var.clone());
        s = &l.body;
    }
    if chain.is_empty() {
        return Ok(f);
    }
    // Where the schedule's own checks see the iterations meet after all
    // (a buffer `sequential` made local, written under a loop of its own),
    // the reference runs in order: slower, and what the function says.
    let spread = |f: PrimFunc| -> Result<PrimFunc, tirc_passes::schedule::ScheduleError> {
        let mut sch = Schedule::new(f);
        let fused = fuse(&mut sch, &chain)?;
        let ext = sch.func.body.find_loop(&fused).and_then(|l| l.extent.as_int()).unwrap_or(1);
        if ext > THREADS {
            let parts = split(&mut sch, &fused, &[None, Some(THREADS)])?;
            bind(&mut sch, &parts[0], "blockIdx.x")?;
            bind(&mut sch, &parts[1], "threadIdx.x")?;
        } else {
            bind(&mut sch, &fused, "threadIdx.x")?;
        }
        Ok(sch.func)
    };
    Ok(spread(f.clone()).unwrap_or(f))
}

/// Whether the iterations of `l` touch disjoint parts of every buffer
/// that a block under it writes: for each such buffer, one dimension where
/// the first writer's region in one iteration (its inner loops over their
/// ranges) moves past itself from one iteration to the next, and every
/// access of the buffer under the loop stays inside that region. Two
/// blocks in one loop body (`X[i] = C[0]` then `C[i] = ..`) where one reads
/// what another iteration writes fail it, and their loop runs in order.
fn iterations_apart(l: &tirc_ir::For) -> bool {
    use tirc_passes::common::hazard::{iteration_boxes, moves_apart};
    let Some(all) = iteration_boxes(l, &|_| false, &|_| true) else { return false };
    let Some(boxes) = all.iter().map(|b| Some((&b.buffer, b.dims.as_deref()?))).collect::<Option<Vec<_>>>() else {
        return false;
    };
    all.iter().zip(&boxes).filter(|(b, _)| b.written).all(|(_, (buf, first))| moves_apart(&l.var, &boxes, buf, first))
}

/// The function with every float buffer and float constant at float64;
/// unchanged where it holds tensor-core operations (lowered text that has
/// them), whose instructions take their own types, and whose copies feed
/// them at those types.
pub fn to_f64(f: &PrimFunc) -> PrimFunc {
    let mut wmma = false;
    f.body.walk(&mut |s| wmma |= matches!(s, Stmt::Wmma(_)));
    if wmma {
        return f.clone();
    }
    let mut map: Vec<(Buffer, Buffer)> = Vec::new();
    let mut retype = |b: &Buffer| -> Buffer {
        if let Some((_, n)) = map.iter().find(|(o, _)| o == b) {
            return n.clone();
        }
        let n = if b.dtype().is_float() { b.with(|n| n.dtype = DType::F64) } else { b.clone() };
        map.push((b.clone(), n.clone()));
        n
    };
    let params: Vec<Buffer> = f.params.iter().map(&mut retype).collect();
    let body = stmt(&f.body, &mut retype, true);
    PrimFunc { params, body, ..f.clone() }
}

/// `e` with its buffers replaced by `rt`, and with `widen`, every float
/// computed at float64.
fn expr(e: &Expr, rt: &mut dyn FnMut(&Buffer) -> Buffer, widen: bool) -> Expr {
    if !widen {
        return match e {
            Expr::Load(b, idx) => Expr::Load(rt(b), idx.iter().map(|i| expr(i, rt, false)).collect()),
            _ => e.map_children(|c| expr(c, rt, false)),
        };
    }
    // A value of a narrower float type as the kernel holds it, where a step
    // that is not continuous reads it: at float64 `0.35f * 10` is 3.4999999,
    // in float32 it is 3.5, and `round` turns that ulp into a unit.
    let narrow = |t: DType| matches!(t, DType::Float(16) | DType::Float(32) | DType::BFloat16);
    // `x` rounded to `t` and held at float64 again.
    let rounded = |t: DType, x: Expr| Expr::Cast(DType::F64, Box::new(Expr::Cast(t, Box::new(x))));
    let held = |a: &Expr, rt: &mut dyn FnMut(&Buffer) -> Buffer| {
        let x = expr(a, rt, true);
        if narrow(a.dtype()) {
            rounded(a.dtype(), x)
        } else {
            x
        }
    };
    match e {
        // A literal keeps the value of its type (`T.float16(1.0001)` is 1).
        Expr::Float(v, t) => Expr::Float(crate::sim::round_to(*t, *v), DType::F64),
        Expr::Call(
            i @ (Intrinsic::Floor
            | Intrinsic::Ceil
            | Intrinsic::Round
            | Intrinsic::Trunc
            | Intrinsic::Nearbyint
            | Intrinsic::Tf32Round),
            args,
        ) if args.len() == 1 => Expr::Call(*i, vec![held(&args[0], rt)]),
        Expr::Cast(t, a) if !t.is_float() && a.dtype().is_float() => Expr::Cast(*t, Box::new(held(a, rt))),
        Expr::Binary(op, a, b) if op.is_compare() && a.dtype().is_float() => {
            Expr::binary(*op, held(a, rt), held(b, rt))
        }
        // An explicit cast to a narrower float type rounds there, as in the
        // kernel: `T.Cast("float16", 1e5)` is infinite, not 1e5.
        Expr::Cast(t, a) if narrow(*t) => rounded(*t, expr(a, rt, true)),
        Expr::Cast(t, a) if t.is_float() => Expr::Cast(DType::F64, Box::new(expr(a, rt, true))),
        Expr::Load(b, idx) => Expr::Load(rt(b), idx.iter().map(|i| expr(i, rt, true)).collect()),
        _ => e.map_children(|c| expr(c, rt, true)),
    }
}

fn region(r: &BufferRegion, rt: &mut dyn FnMut(&Buffer) -> Buffer) -> BufferRegion {
    BufferRegion {
        buffer: rt(&r.buffer),
        region: r.region.iter().map(|g| Range::new(g.min.clone(), g.extent.clone())).collect(),
    }
}

fn stmt(s: &Stmt, rt: &mut dyn FnMut(&Buffer) -> Buffer, widen: bool) -> Stmt {
    let s = s.map_children(|c| stmt(c, rt, widen));
    match s {
        Stmt::Store { buffer, indices, value } => Stmt::Store {
            buffer: rt(&buffer),
            indices: indices.iter().map(|i| expr(i, rt, widen)).collect(),
            value: expr(&value, rt, widen),
        },
        Stmt::Allocate { buffer, body } => Stmt::Allocate { buffer: rt(&buffer), body },
        Stmt::If { cond, then, orelse } => Stmt::If { cond: expr(&cond, rt, widen), then, orelse },
        // A float `let` (`m: T.let[T.float32] = ..`) holds its value at
        // float64 too.
        Stmt::Let { var, value, body } if widen && var.dtype().is_float() && var.dtype() != DType::F64 => {
            let wide = Var::new(var.name(), DType::F64);
            let body = Box::new(tirc_ir::subst::substitute_stmt(&body, &[(var, Expr::var(&wide))]));
            Stmt::Let { var: wide, value: expr(&value, rt, widen), body }
        }
        Stmt::Let { var, value, body } => Stmt::Let { var, value: expr(&value, rt, widen), body },
        Stmt::Block(mut r) => {
            r.block.alloc_buffers = r.block.alloc_buffers.iter().map(&mut *rt).collect();
            r.block.reads = r.block.reads.iter().map(|x| region(x, rt)).collect();
            r.block.writes = r.block.writes.iter().map(|x| region(x, rt)).collect();
            r.predicate = expr(&r.predicate, rt, widen);
            Stmt::Block(r)
        }
        s => s,
    }
}

/// Floating-point operations of one run: each store's float additions,
/// multiplications and divisions times the iterations around it (a
/// multiply-add counts two). Block inits are not counted.
pub fn flops(f: &PrimFunc) -> f64 {
    fn go(s: &Stmt, trips: f64, total: &mut f64) {
        match s {
            Stmt::For(l) => go(&l.body, trips * l.extent.as_int().unwrap_or(1) as f64, total),
            Stmt::Block(r) => go(&r.block.body, trips, total),
            Stmt::Store { value, .. } => {
                let mut n = 0.0;
                value.walk(&mut |y| {
                    if let Expr::Binary(op, a, _) = y {
                        if a.dtype().is_float() && !op.is_compare() {
                            n += 1.0;
                        }
                    }
                });
                *total += trips * n;
            }
            _ => s.for_each_child(|c| go(c, trips, total)),
        }
    }
    let mut t = 0.0;
    go(&f.body, 1.0, &mut t);
    t
}
