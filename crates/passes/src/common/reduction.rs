//! Reductions: a reduction block split into an init block and an update
//! block (`decompose`, the rewrite behind the primitive
//! `decompose_reduction`, whose file states the preconditions, checked here
//! in its order, and the pass `lower_init`), and the form of an update that
//! combines with a known operator (`combiner`, `identity`: what
//! `rfactor` accepts; `combiners`, several such components in one block:
//! what `lower_cross_thread_reduction` accepts).

use super::error::{Result, ScheduleError};
use super::tree::{replace_block, replace_loop};
use crate::arith::{all_of, conjuncts};
use tirc_ir::region::infer_block_regions;
use tirc_ir::structural_eq::same_expr;
use tirc_ir::subst::{substitute, substitute_stmt};
use tirc_ir::{BinOp, Block, BlockRealize, Buffer, DType, Expr, For, IterKind, IterVar, Stmt, Var};

/// The body with the block decomposed at `at`, and the init block's name.
pub fn decompose(root: &Stmt, block: &str, at: &Var) -> Result<(Stmt, String)> {
    let r = root
        .find_block(block)
        .ok_or_else(|| ScheduleError::not_found(format!("block `{block}` is no longer in the function")))?
        .clone();
    // 1.
    let Some(init) = r.block.init.clone() else {
        return Err(ScheduleError::new(format!("block `{block}` has no init to decompose")));
    };
    // 2.
    let path = root.loops_above(block).unwrap_or_default();
    let Some(idx) = path.iter().position(|l| &l.var == at) else {
        return Err(ScheduleError::new(format!("loop `{}` is not around block `{block}`", at.name())));
    };
    let spatial_uses =
        |v: &Var| r.block.iter_vars.iter().zip(&r.iter_values).any(|(iv, e)| iv.kind != IterKind::Reduce && e.uses(v));
    let reduce_uses =
        |v: &Var| r.block.iter_vars.iter().zip(&r.iter_values).any(|(iv, e)| iv.kind == IterKind::Reduce && e.uses(v));
    // 3.
    if let Some(outer) = path[..idx].iter().find(|l| reduce_uses(&l.var)) {
        return Err(ScheduleError::new(format!(
            "loop `{}` is a reduction loop outside `{}`: the init would run once per iteration of it and lose the partial sums",
            outer.var.name(),
            at.name()
        ))
        .help(format!("decompose at `{}` or further out", outer.var.name())));
    }
    // 4.
    let inner = &path[idx..];
    // A loop under the init's place that no variable of the block depends
    // on repeats the whole reduction (`compute_at` under a consumer's
    // loop, copied by `rfactor`): its reduction starts again in each
    // iteration, which an init hoisted above it would do only once.
    // (A loop bound to threads runs its repetitions side by side, not one
    // after another: left to the checks of races.)
    let repeats = |l: &&&For| {
        !spatial_uses(&l.var)
            && !reduce_uses(&l.var)
            && l.extent.as_int() != Some(1)
            && !matches!(l.kind, tirc_ir::ForKind::ThreadBinding(_))
    };
    if let Some(rep) = inner.iter().find(repeats) {
        return Err(ScheduleError::new(format!(
            "loop `{}` repeats the whole reduction of block `{block}` (no variable of the block depends on it): an init hoisted above it would run once for all its repetitions",
            rep.var.name()
        ))
        .help(format!("decompose at a loop inside `{}`", rep.var.name())));
    }
    if let Some(both) = inner.iter().find(|l| spatial_uses(&l.var) && reduce_uses(&l.var)) {
        return Err(ScheduleError::new(format!(
            "loop `{}` feeds both a spatial and a reduction variable of block `{block}`",
            both.var.name()
        )));
    }
    // 6. The init, hoisted before the loop, runs before every other block
    // under it: none of them may read or write what it writes, but where
    // that cannot change what they see (below).
    let (init_reads, init_writes) = super::tree::stmt_regions(&init);
    let moved = super::hazard::Moved {
        block,
        reads: init_reads.into_iter().map(|g| g.buffer).collect(),
        writes: init_writes.into_iter().map(|g| g.buffer).collect(),
    };
    let nested = super::tree::nested_block_names(&r);
    let under = path[idx].body.blocks();
    let me = under.iter().position(|b| b.block.name == block).unwrap_or(0);
    // A block before the reduction in the loop's body would see the init's
    // values early; one after it sees them only where it reads what the
    // reduction of another iteration writes (a row's sum read by its own
    // row, as softmax does, is the same value either way).
    let lp_for = (*path[idx]).clone();
    let meet =
        moved.writes.iter().any(|b| super::hazard::iterations_meet(root, &lp_for, &|_| false, &|x| x == b).is_some());
    let others: Vec<&tirc_ir::BlockRealize> = under
        .iter()
        .enumerate()
        .filter(|(i, b)| b.block.name != block && !nested.contains(&b.block.name) && (*i < me || meet))
        .map(|(_, b)| *b)
        .collect();
    super::hazard::check_passed(root, &moved, &others, &|_, _, _| false, "decomposing the reduction here")?;
    let init_loops: Vec<&For> = inner.iter().copied().filter(|l| spatial_uses(&l.var)).collect();
    let red_loops: Vec<&Var> = inner.iter().filter(|l| reduce_uses(&l.var)).map(|l| &l.var).collect();
    // Fresh loop variables for the init's copies of the spatial loops.
    let loop_map: Vec<(Var, Expr)> = init_loops
        .iter()
        .map(|l| (l.var.clone(), Expr::var(&l.var.renamed(format!("{}_init", l.var.name())))))
        .collect();
    // 5.
    let mut kept = Vec::new();
    for c in conjuncts(&r.predicate) {
        let uses_red = red_loops.iter().any(|v| c.uses(v));
        let uses_spatial = init_loops.iter().any(|l| c.uses(&l.var));
        if uses_red && uses_spatial {
            return Err(ScheduleError::new(format!(
                "the predicate of block `{block}` mixes reduction and spatial loops"
            )));
        }
        if !uses_red {
            kept.push(substitute(&c, &loop_map));
        }
    }
    // The init block: the spatial variables only, fresh.
    let mut ivs = Vec::new();
    let mut values = Vec::new();
    let mut var_map = Vec::new();
    for (iv, e) in r.block.iter_vars.iter().zip(&r.iter_values) {
        if iv.kind != IterKind::Reduce {
            let nv = iv.var.renamed(iv.var.name());
            var_map.push((iv.var.clone(), Expr::var(&nv)));
            ivs.push(IterVar { var: nv, dom: iv.dom.clone(), kind: iv.kind });
            values.push(substitute(e, &loop_map));
        } else {
            // The init runs where every reduction variable is at the start
            // of its domain: an init that names one means that value.
            var_map.push((iv.var.clone(), iv.dom.min.clone()));
        }
    }
    let init_body = substitute_stmt(&init, &var_map);
    let mut init_block = Block {
        name: format!("{block}_init"),
        iter_vars: ivs,
        reads: vec![],
        writes: vec![],
        init: None,
        alloc_buffers: vec![],
        annotations: vec![],
        body: init_body,
        span: r.block.span,
    };
    let (_, writes) = infer_block_regions(&init_block);
    init_block.writes = writes;
    let init_name = init_block.name.clone();
    let mut nest =
        Stmt::Block(Box::new(BlockRealize { iter_values: values, predicate: all_of(kept), block: init_block }));
    for (l, (_, nv)) in init_loops.iter().zip(&loop_map).rev() {
        let Some(v) = nv.as_var() else { continue };
        nest = Stmt::For(Box::new(For {
            var: v.clone(),
            min: l.min.clone(),
            extent: l.extent.clone(),
            kind: l.kind,
            annotations: vec![],
            body: nest,
            span: l.span,
        }));
    }
    let body = replace_block(root, block, |r| {
        let mut r = r.clone();
        r.block.init = None;
        r.block.name = update_name(block);
        Ok(Stmt::Block(Box::new(r)))
    })?;
    let body = replace_loop(&body, at, |l| Ok(Stmt::Seq(vec![nest, Stmt::For(Box::new(l.clone()))])))?;
    Ok((body, init_name))
}

/// The name `decompose` gives the update that block `block` becomes.
pub fn update_name(block: &str) -> String {
    format!("{block}_update")
}

/// Whether `e` is a load of `b` at exactly `idx`.
fn loads_element(e: &Expr, b: &Buffer, idx: &[Expr]) -> bool {
    matches!(e, Expr::Load(lb, i) if lb == b && i.len() == idx.len() && i.iter().zip(idx).all(|(x, y)| same_expr(x, y)))
}

/// The combiner of `C[i] = C[i] op v`: `op` and `v`.
pub fn combiner(store: &Stmt) -> Option<(Buffer, Vec<Expr>, BinOp, Expr)> {
    let Stmt::Store { buffer, indices, value } = store else { return None };
    let Expr::Binary(op, a, b) = value else { return None };
    if !matches!(op, BinOp::Add | BinOp::Mul | BinOp::Min | BinOp::Max) {
        return None;
    }
    let is_self = |e: &Expr| loads_element(e, buffer, indices);
    let reads_out = |e: &Expr| {
        let mut found = false;
        e.walk(&mut |x| found |= matches!(x, Expr::Load(lb, _) if lb == buffer));
        found
    };
    let v = if is_self(a) && !reads_out(b) {
        (**b).clone()
    } else if is_self(b) && !reads_out(a) {
        (**a).clone()
    } else {
        return None;
    };
    Some((buffer.clone(), indices.clone(), *op, v))
}

/// One component of a reduction's update, `out[idx] = out[idx] op value`.
#[derive(Clone, Debug)]
pub struct Combiner {
    pub out: Buffer,
    pub idx: Vec<Expr>,
    pub op: BinOp,
    pub value: Expr,
}

/// The components of an update that combine independently: one
/// `C[i] = C[i] op v`, or several stores of that form (TVM's tuple
/// reductions, such as a layer norm's sum and sum of squares in one block),
/// their values possibly bound by `let`s first. Each component writes its own
/// buffer, and no value reads an output: a reducer whose components depend
/// on one another (argmax) is not one of these.
pub fn combiners(body: &Stmt) -> Option<Vec<Combiner>> {
    let stores: Vec<Stmt> = flatten_stores(body)?
        .into_iter()
        .map(|(buffer, indices, value)| Stmt::Store { buffer, indices, value })
        .collect();
    let parts: Vec<Combiner> = stores
        .iter()
        .map(|st| combiner(st).map(|(out, idx, op, value)| Combiner { out, idx, op, value }))
        .collect::<Option<_>>()?;
    for (n, c) in parts.iter().enumerate() {
        if parts[..n].iter().any(|p| p.out == c.out) {
            return None;
        }
        let mut coupled = false;
        c.value.walk(&mut |x| coupled |= matches!(x, Expr::Load(lb, _) if parts.iter().any(|p| &p.out == lb)));
        if coupled {
            return None;
        }
    }
    (!parts.is_empty()).then_some(parts)
}

/// A reduction as threads combine it: per component, its output element,
/// the value one iteration contributes (`elems`, in the block's variables),
/// the value a thread starts from, and `combine`, the component of the
/// combination of two partial results `lhs` and `rhs` (one variable each
/// component). `coupled` when a component's combination reads another's
/// (the components must then be assigned together).
#[derive(Clone, Debug)]
pub struct Reducer {
    pub outs: Vec<(Buffer, Vec<Expr>)>,
    pub elems: Vec<Expr>,
    pub start: Vec<Expr>,
    pub lhs: Vec<Var>,
    pub rhs: Vec<Var>,
    pub combine: Vec<Expr>,
    pub coupled: bool,
}

impl Reducer {
    /// `targets[c] = values[c]` for every component, the values computed
    /// first (as `let`s named `<prefix>_v<c>`) when the components are
    /// coupled, so that each reads the others' old values.
    pub fn assign(&self, targets: &[(Buffer, Vec<Expr>)], values: Vec<Expr>, prefix: &str) -> Stmt {
        let store =
            |(b, i): &(Buffer, Vec<Expr>), value: Expr| Stmt::Store { buffer: b.clone(), indices: i.clone(), value };
        if !self.coupled {
            return Stmt::seq(targets.iter().zip(values).map(|(t, v)| store(t, v)).collect());
        }
        let vars: Vec<Var> =
            targets.iter().enumerate().map(|(c, (b, _))| Var::new(format!("{prefix}_v{c}"), b.dtype())).collect();
        let mut s = Stmt::seq(targets.iter().zip(&vars).map(|(t, v)| store(t, Expr::var(v))).collect());
        for (v, value) in vars.iter().zip(values).rev() {
            s = Stmt::Let { var: v.clone(), value, body: Box::new(s) };
        }
        s
    }

    /// The combination of the partial results `a` and `b`, a component each.
    pub fn apply(&self, a: &[Expr], b: &[Expr]) -> Vec<Expr> {
        let map: Vec<(Var, Expr)> = self
            .lhs
            .iter()
            .cloned()
            .zip(a.iter().cloned())
            .chain(self.rhs.iter().cloned().zip(b.iter().cloned()))
            .collect();
        self.combine.iter().map(|e| substitute(e, &map)).collect()
    }
}

/// The reducer of a reduction block's update and init: independent
/// components (`combiners`, each starting from its operator's identity), or
/// a selection of one partial result by a comparison both components share,
/// as an argmax writes it (`idx = Select(val >= x, idx, k)`, `val =
/// Select(val >= x, val, x)`): one ordering comparison of one component's
/// two sides, the same side taken by every component; starting from the
/// init's constants.
pub fn reducer(body: &Stmt, init: Option<&Stmt>) -> Option<Reducer> {
    let placeholders = |outs: &[(Buffer, Vec<Expr>)], side: &str| -> Vec<Var> {
        outs.iter().enumerate().map(|(c, (b, _))| Var::new(format!("{side}{c}"), b.dtype())).collect()
    };
    if let Some(parts) = combiners(body) {
        let outs: Vec<(Buffer, Vec<Expr>)> = parts.iter().map(|p| (p.out.clone(), p.idx.clone())).collect();
        let (lhs, rhs) = (placeholders(&outs, "lhs"), placeholders(&outs, "rhs"));
        let combine =
            parts.iter().enumerate().map(|(c, p)| Expr::binary(p.op, Expr::var(&lhs[c]), Expr::var(&rhs[c]))).collect();
        return Some(Reducer {
            elems: parts.iter().map(|p| p.value.clone()).collect(),
            start: parts.iter().map(|p| identity(p.op, p.out.dtype())).collect(),
            outs,
            lhs,
            rhs,
            combine,
            coupled: false,
        });
    }
    // A selection: every component `Select(cond, own, e)` (or the branches
    // the other way round), `own` its output element, `e` reading no output.
    let stores = flatten_stores(body)?;
    let outs: Vec<(Buffer, Vec<Expr>)> = stores.iter().map(|(b, i, _)| (b.clone(), i.clone())).collect();
    if outs.iter().enumerate().any(|(n, (b, _))| outs[..n].iter().any(|(x, _)| x == b)) {
        return None;
    }
    let is_out = |e: &Expr| matches!(e, Expr::Load(lb, _) if outs.iter().any(|(b, _)| b == lb));
    let reads_out = |e: &Expr| {
        let mut found = false;
        e.walk(&mut |x| found |= is_out(x));
        found
    };
    let own = |c: usize, e: &Expr| loads_element(e, &outs[c].0, &outs[c].1);
    let mut elems = Vec::new();
    for (c, (_, _, value)) in stores.iter().enumerate() {
        let Expr::Select(_, x, y) = value else { return None };
        let e = if own(c, x) && !reads_out(y) {
            (**y).clone()
        } else if own(c, y) && !reads_out(x) {
            (**x).clone()
        } else {
            return None;
        };
        elems.push(e);
    }
    let (lhs, rhs) = (placeholders(&outs, "lhs"), placeholders(&outs, "rhs"));
    // Each output element becomes its `lhs`, each contribution its `rhs`
    // (the component's own first: a min and a max of one value are two
    // contributions), whole expressions before their parts.
    fn replace(e: &Expr, order: &[(Expr, Var)], is_out: &dyn Fn(&Expr) -> Option<Var>) -> Expr {
        if let Some(v) = is_out(e) {
            return Expr::var(&v);
        }
        if let Some((_, v)) = order.iter().find(|(x, _)| same_expr(x, e)) {
            return Expr::var(v);
        }
        e.map_children(|c| replace(c, order, is_out))
    }
    let out_var =
        |e: &Expr| -> Option<Var> { outs.iter().position(|(b, idx)| loads_element(e, b, idx)).map(|c| lhs[c].clone()) };
    let mut combine = Vec::new();
    for (c, (_, _, value)) in stores.iter().enumerate() {
        let mut order = vec![(elems[c].clone(), rhs[c].clone())];
        order.extend(elems.iter().cloned().zip(rhs.iter().cloned()).filter(|(_, v)| *v != rhs[c]));
        let e = replace(value, &order, &out_var);
        // Closed: nothing left of the iteration but the placeholders.
        let mut closed = true;
        e.walk(&mut |x| match x {
            Expr::Load(..) => closed = false,
            Expr::Var(v) => closed &= lhs.contains(v) || rhs.contains(v),
            _ => {}
        });
        if !closed {
            return None;
        }
        combine.push(e);
    }
    // One comparison picks the whole left or the whole right partial result:
    // `lhs_k op rhs_k` (op one of < <= > >=) of one component k, the same
    // in every component, and every component takes the same side when it
    // holds. Anything else (two different conditions, a component taking
    // the other side) depends on the order of the elements.
    let is = |e: &Expr, v: &Var| matches!(e, Expr::Var(x) if x == v);
    let mut sides = Vec::new();
    for (c, e) in combine.iter().enumerate() {
        let Expr::Select(cond, x, y) = e else { return None };
        let left_first = if is(x, &lhs[c]) && is(y, &rhs[c]) {
            true
        } else if is(x, &rhs[c]) && is(y, &lhs[c]) {
            false
        } else {
            return None;
        };
        sides.push(((**cond).clone(), left_first));
    }
    // Every component takes the same side under one condition. The one
    // exception: the tie-broken condition in some components and its bare
    // comparison in the component it compares (TOPI's argmax: `idx = val >
    // x or (val == x and idx < k) ? idx : k`, `val = val > x ? val : x`),
    // where on a tie both sides of that component are equal, so either
    // condition picks the same value.
    let full = sides.iter().find(|(c, _)| tie_break(c).is_some()).map(|(c, _)| c.clone());
    let (cond, left_first) = sides.first()?.clone();
    let cond = full.unwrap_or(cond);
    for (c, (own, side)) in sides.iter().enumerate() {
        if *side != left_first {
            return None;
        }
        if same_expr(own, &cond) {
            continue;
        }
        let bare = tie_break(&cond).filter(|b| same_expr(b, own));
        let compares_itself = matches!(bare, Some(Expr::Binary(_, a, b))
            if (is(a, &lhs[c]) && is(b, &rhs[c])) || (is(a, &rhs[c]) && is(b, &lhs[c])));
        if !compares_itself {
            return None;
        }
    }
    let combine: Vec<Expr> = combine
        .into_iter()
        .map(|e| match e {
            Expr::Select(_, t, f) => Expr::Select(Box::new(cond.clone()), t, f),
            e => e,
        })
        .collect();
    let tie_broken = tie_break(&cond).is_some();
    let base = tie_break(&cond).unwrap_or(&cond).clone();
    let Expr::Binary(op, a, b) = &base else { return None };
    let ordered = (0..outs.len()).any(|k| (is(a, &lhs[k]) && is(b, &rhs[k])) || (is(a, &rhs[k]) && is(b, &lhs[k])));
    if !matches!(op, BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge) || !ordered {
        return None;
    }
    // Ties. In order, the update keeps the earlier element (`val >= x`
    // keeps `val`) or takes the later (`val > x`); combined out of order
    // (partial results of an `rfactor`, threads), the side that holds the
    // earlier element is not always the left. Where a component is the
    // element's index (a loop variable, as an argmax's), a tie is broken
    // by it: the smaller index where the update keeps the earlier element,
    // the larger where it takes the later, as in order.
    // (The index: an integer variable that another component's element
    // is loaded at, as an argmax's value is `X[vi, vk]` and its index `vk`.)
    let indexes =
        |c: usize, v: &Var| {
            let mut at = false;
            elems.iter().enumerate().filter(|(o, _)| *o != c).for_each(|(_, e)| {
                e.walk(&mut |x| at |= matches!(x, Expr::Load(_, idx) if idx.iter().any(|i| i.uses(v))))
            });
            at
        };
    let index =
        elems.iter().enumerate().position(|(c, e)| matches!(e, Expr::Var(v) if v.dtype().is_int() && indexes(c, v)));
    let combine = match index.filter(|_| !tie_broken) {
        Some(ix) => {
            let keeps_earlier = matches!(op, BinOp::Le | BinOp::Ge) == left_first;
            let strict = match op {
                BinOp::Le => BinOp::Lt,
                BinOp::Ge => BinOp::Gt,
                o => *o,
            };
            // `x`, what the select takes when its condition holds.
            let (x, y) = if left_first { (&lhs[ix], &rhs[ix]) } else { (&rhs[ix], &lhs[ix]) };
            let by_index = Expr::binary(if keeps_earlier { BinOp::Lt } else { BinOp::Gt }, Expr::var(x), Expr::var(y));
            let tie = Expr::binary(BinOp::And, Expr::binary(BinOp::Eq, (**a).clone(), (**b).clone()), by_index);
            let cond = Expr::binary(BinOp::Or, Expr::binary(strict, (**a).clone(), (**b).clone()), tie);
            combine
                .into_iter()
                .map(|e| match e {
                    Expr::Select(_, t, f) => Expr::Select(Box::new(cond.clone()), t, f),
                    e => e,
                })
                .collect()
        }
        None => combine,
    };
    // Each thread starts from the init's value, a constant.
    let init_stores = flatten_stores(init?)?;
    let mut start = Vec::new();
    for (b, _) in &outs {
        let (_, _, v) = init_stores.iter().find(|(x, _, _)| x == b)?;
        let mut constant = true;
        v.walk(&mut |x| constant &= !matches!(x, Expr::Load(..) | Expr::Var(_)));
        if !constant {
            return None;
        }
        start.push(v.clone());
    }
    Some(Reducer { outs, elems, start, lhs, rhs, combine, coupled: true })
}

/// A condition that already breaks ties by the index (`c or (a == b and
/// ..)`: `rfactor`'s write-back, built by `reducer`, and TOPI's argmax) and
/// its comparison `c`.
fn tie_break(cond: &Expr) -> Option<&Expr> {
    match cond {
        Expr::Binary(BinOp::Or, c, t) if matches!(&**t, Expr::Binary(BinOp::And, e, _) if matches!(&**e, Expr::Binary(BinOp::Eq, ..))) => {
            Some(c)
        }
        _ => None,
    }
}

/// A selection whose condition breaks ties by the index (`tie_break`).
fn is_tie_broken(e: &Expr) -> bool {
    matches!(e, Expr::Select(c, ..) if tie_break(c).is_some())
}

/// Whether an update of stores (`flatten_stores`) already breaks ties by
/// the index in one of its selections.
fn breaks_ties(body: &Stmt) -> bool {
    flatten_stores(body).is_some_and(|stores| stores.iter().any(|(_, _, v)| is_tie_broken(v)))
}

/// The update of a selection of several components with an index (an
/// argmax that keeps the first of equal values, `val >= x`), rewritten to
/// break ties by the index as `reducer` combines partial results (`val >
/// x or (val == x and idx < k)`): the same result in any order of the
/// steps, and the same as the update's in its own order. `None` where the
/// update is no such selection, already breaks ties, or has no index.
///
/// Exact only where the index is the block's one reduction variable (from
/// a minimum of 0 or more) and starts below every index (a negative init):
/// then the first (or last) of equal values in the order of the steps is
/// the one of the least (greatest) index, and an element equal to the
/// init's value loses to the init as it does in order. (A helper found
/// an index of the inner of two reduction variables, and an init of 16 as
/// "none", rewritten wrong.)
pub fn tie_broken_update(block: &Block) -> Option<Stmt> {
    let (body, init) = (&block.body, block.init.as_ref());
    let r = reducer(body, init)?;
    if !r.coupled || r.outs.len() < 2 || !r.combine.iter().any(is_tie_broken) || breaks_ties(body) {
        return None;
    }
    let reduce: Vec<&IterVar> = block.iter_vars.iter().filter(|iv| iv.kind == IterKind::Reduce).collect();
    let [k] = reduce[..] else { return None };
    if k.dom.min.as_int().is_none_or(|m| m < 0) {
        return None;
    }
    let index = r.elems.iter().position(|e| matches!(e, Expr::Var(v) if *v == k.var))?;
    if r.start[index].as_int().is_none_or(|x| x >= 0) {
        return None;
    }
    // Each component: the combination of what it holds (`lhs`) with the
    // step's element (`rhs`).
    let mut bind: Vec<(Var, Expr)> = Vec::new();
    for (c, (b, idx)) in r.outs.iter().enumerate() {
        bind.push((r.lhs[c].clone(), Expr::Load(b.clone(), idx.clone())));
        bind.push((r.rhs[c].clone(), r.elems[c].clone()));
    }
    let values = r.combine.iter().map(|e| substitute(e, &bind)).collect();
    Some(r.assign(&r.outs, values, "tie"))
}

/// Why the result of a reduction block's update (`body`, after `init`)
/// depends on the order of its steps, if it does; `None` where any order
/// gives the same result (up to rounding), so that a schedule may change
/// it (`reorder` of its reduction loops, `compute_at`'s rebuilt loops,
/// `transform_block_layout`):
/// - a reduction `reducer` recognizes is independent of the order, except
///   a selection of several components (an argmax) whose condition breaks
///   no tie by the index: which of equal values it keeps is the first or
///   the last in the order of the steps;
/// - any other update must read its element only as a term it adds
///   (`C = C - A * B`, `C = C + A + B`), as an operand of one min, max or
///   bitwise operation, kept or not by a selection (a masked sum), or
///   compared. Mixed (`max(C + A, 0)`), scaled (`C * 3 + A`), subtracted
///   (`A - C`), overwritten (`C = A`, or a selection of `A` that compares
///   it with nothing), or read by another component's update (`S = S +
///   C`), the steps compute something else in another order.
pub fn order_dependence(body: &Stmt, init: Option<&Stmt>) -> Option<&'static str> {
    if let Some(r) = reducer(body, init) {
        return (r.coupled && r.outs.len() > 1 && !breaks_ties(body)).then_some(
            "keeps one of equal values by the order of its steps (its selection breaks no tie by the index)",
        );
    }
    /// Where an accumulated element is read.
    #[derive(Clone, Copy, PartialEq)]
    enum At {
        /// The update's value, or under one kind of operation: the family
        /// (`Add` for `+` and the left of `-`, `Max`, `Min`, a bitwise op).
        Top,
        Family(BinOp),
        /// An operand of a comparison (or a condition).
        Compared,
        Transformed,
    }
    fn family(op: BinOp) -> Option<BinOp> {
        match op {
            BinOp::Add | BinOp::Sub => Some(BinOp::Add),
            BinOp::Mul | BinOp::Max | BinOp::Min | BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => Some(op),
            _ => None,
        }
    }
    struct Walk<'a> {
        /// The elements the update writes; `own` is the one whose value is
        /// walked (`None` where each is its own: the update is not a
        /// sequence of stores).
        outs: &'a [(Buffer, Vec<Expr>)],
        own: Option<usize>,
        found: Option<&'static str>,
    }
    impl Walk<'_> {
        fn which(&self, e: &Expr) -> Option<usize> {
            self.outs.iter().position(|(b, idx)| loads_element(e, b, idx))
        }
        fn reads_own(&self, e: &Expr) -> bool {
            let mut r = false;
            e.walk(&mut |x| r |= self.which(x).is_some_and(|c| self.own.is_none_or(|o| o == c)));
            r
        }
        /// How many times `e` reads its element on the way through the
        /// branches of its selections that reads it most (not counting
        /// conditions).
        fn count_own(&self, e: &Expr) -> usize {
            if self.which(e).is_some_and(|c| self.own.is_none_or(|o| o == c)) {
                return 1;
            }
            match e {
                Expr::Select(_, x, y) => self.count_own(x).max(self.count_own(y)),
                Expr::Binary(BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne, ..) => 0,
                e => {
                    let mut n = 0;
                    e.for_each_child(|c| n += self.count_own(c));
                    n
                }
            }
        }
        /// The family of the operation that combines the element in `e`
        /// (through selections and casts); `None` for the element itself.
        fn family_of(&self, e: &Expr) -> Option<BinOp> {
            match e {
                Expr::Cast(_, x) => self.family_of(x),
                Expr::Select(_, x, y) => self.family_of(x).or_else(|| self.family_of(y)),
                Expr::Binary(op, x, y) if family(*op).is_some() && (self.reads_own(x) || self.reads_own(y)) => {
                    family(*op)
                }
                _ => None,
            }
        }
        fn go(&mut self, e: &Expr, at: At) {
            if self.found.is_some() {
                return;
            }
            if let Some(c) = self.which(e) {
                let own = self.own.is_none_or(|o| o == c);
                if at == At::Transformed || (!own && at != At::Compared) {
                    self.found = Some(if own {
                        "transforms what it has accumulated (not only adds to it, or takes a min, max or bitwise operation of it)"
                    } else {
                        "reads what another of its components accumulates"
                    });
                }
                return;
            }
            let inner = |op: BinOp| match (at, family(op)) {
                (At::Top, Some(f)) => At::Family(f),
                (At::Family(g), Some(f)) if g == f => At::Family(f),
                _ => At::Transformed,
            };
            let compared = if at == At::Transformed { At::Transformed } else { At::Compared };
            match e {
                Expr::Binary(BinOp::Sub, x, y) => {
                    self.go(x, inner(BinOp::Sub));
                    self.go(y, At::Transformed);
                }
                Expr::Binary(op, x, y) if family(*op).is_some() => {
                    self.go(x, inner(*op));
                    self.go(y, inner(*op));
                }
                Expr::Binary(op, x, y)
                    if op.is_logical()
                        || matches!(op, BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne) =>
                {
                    self.go(x, compared);
                    self.go(y, compared);
                }
                Expr::Not(x) => self.go(x, compared),
                Expr::Select(c, x, y) => {
                    // One branch keeps the element, the other replaces it:
                    // only by a comparison of the two (a max written as a
                    // selection).
                    let (kx, ky) = (self.reads_own(x), self.reads_own(y));
                    // Both keep it (a masked sum): by one kind of
                    // operation, under a mask that reads no accumulator.
                    if kx && ky && at != At::Compared {
                        if let (Some(f), Some(g)) = (self.family_of(x), self.family_of(y)) {
                            if f != g {
                                self.found = Some("combines what it has accumulated in two ways by a selection");
                                return;
                            }
                        }
                        self.go(c, At::Transformed);
                        self.go(x, at);
                        self.go(y, at);
                        return;
                    }
                    if kx != ky && at != At::Compared {
                        let new = if kx { y } else { x };
                        let compares = |a: &Expr, b: &Expr| {
                            (self.reads_own(a) && same_expr(b, new)) || (self.reads_own(b) && same_expr(a, new))
                        };
                        let base = tie_break(c).unwrap_or(c);
                        let ordering = |op: &BinOp| matches!(op, BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge);
                        let ok = matches!(base, Expr::Binary(op, a, b) if ordering(op) && compares(a, b));
                        if !ok {
                            // Chosen by another component's comparison (an
                            // argmax written with `if`): ties.
                            let mut others = false;
                            c.walk(&mut |e| others |= self.which(e).is_some());
                            self.found = Some(if others {
                                "keeps one of equal values by the order of its steps (its selection breaks no tie by the index)"
                            } else {
                                "keeps the last of the values it selects, not the least or greatest"
                            });
                            return;
                        }
                    }
                    self.go(c, compared);
                    self.go(x, at);
                    self.go(y, at);
                }
                Expr::Cast(_, x) => self.go(x, at),
                e => e.for_each_child(|c| self.go(c, At::Transformed)),
            }
        }
    }
    let mut stores = Vec::new();
    if updates(body, &mut Vec::new(), &mut stores).is_some() {
        let outs: Vec<(Buffer, Vec<Expr>)> = stores.iter().map(|(b, i, _)| (b.clone(), i.clone())).collect();
        for (c, (_, _, value)) in stores.iter().enumerate() {
            let mut w = Walk { outs: &outs, own: Some(c), found: None };
            if !w.reads_own(value) {
                return Some("overwrites what it has accumulated");
            }
            if w.count_own(value) > 1 {
                return Some("takes what it has accumulated more than once (`C + C + A`)");
            }
            w.go(value, At::Top);
            if w.found.is_some() {
                return w.found;
            }
        }
        return None;
    }
    // Another body (conditions, loops): every expression, each element
    // its own.
    let mut outs = Vec::new();
    body.walk(&mut |s| {
        if let Stmt::Store { buffer, indices, .. } = s {
            outs.push((buffer.clone(), indices.clone()));
        }
    });
    let mut w = Walk { outs: &outs, own: None, found: None };
    body.walk(&mut |s| s.for_each_expr(|e| w.go(e, At::Top)));
    w.found
}

/// The stores of an update of `let`s, stores and conditions as one value
/// each, in terms of what the elements held before it: the lets' values
/// and earlier stores put in, a store under `if c` the selection `c ? v :
/// old` (`if A > 0: B = A` is `B = A > 0 ? A : B`). `None` for other
/// statements (loops).
fn updates(s: &Stmt, lets: &mut Vec<(Var, Expr)>, out: &mut Vec<(Buffer, Vec<Expr>, Expr)>) -> Option<()> {
    /// `e` with the lets and the values stored so far put in.
    fn now(e: &Expr, lets: &[(Var, Expr)], out: &[(Buffer, Vec<Expr>, Expr)]) -> Expr {
        fn put(e: &Expr, out: &[(Buffer, Vec<Expr>, Expr)]) -> Expr {
            if let Some((_, _, v)) = out.iter().find(|(b, i, _)| loads_element(e, b, i)) {
                return v.clone();
            }
            e.map_children(|c| put(c, out))
        }
        put(&substitute(e, lets), out)
    }
    let set = |out: &mut Vec<(Buffer, Vec<Expr>, Expr)>, b: &Buffer, idx: Vec<Expr>, v: Expr| match out
        .iter_mut()
        .find(|(x, i, _)| x == b && same(i, &idx))
    {
        Some(slot) => slot.2 = v,
        None => out.push((b.clone(), idx, v)),
    };
    match s {
        Stmt::Let { var, value, body } => {
            let v = now(value, lets, out);
            lets.push((var.clone(), v));
            let r = updates(body, lets, out);
            lets.pop();
            r
        }
        Stmt::Seq(items) => items.iter().try_for_each(|x| updates(x, lets, out)),
        Stmt::Store { buffer, indices, value } => {
            let idx: Vec<Expr> = indices.iter().map(|i| substitute(i, lets)).collect();
            let v = now(value, lets, out);
            set(out, buffer, idx, v);
            Some(())
        }
        Stmt::If { cond, then, orelse } => {
            let c = now(cond, lets, out);
            let (mut a, mut b) = (out.clone(), out.clone());
            updates(then, &mut lets.clone(), &mut a)?;
            if let Some(e) = orelse {
                updates(e, &mut lets.clone(), &mut b)?;
            }
            let mut elements: Vec<(Buffer, Vec<Expr>)> = Vec::new();
            for (x, i, _) in a.iter().chain(&b) {
                if !elements.iter().any(|(y, j)| y == x && same(i, j)) {
                    elements.push((x.clone(), i.clone()));
                }
            }
            for (x, i) in elements {
                let value = |o: &[(Buffer, Vec<Expr>, Expr)]| {
                    o.iter()
                        .find(|(y, j, _)| *y == x && same(i.as_slice(), j))
                        .map_or_else(|| Expr::Load(x.clone(), i.clone()), |(_, _, v)| v.clone())
                };
                let v = Expr::Select(Box::new(c.clone()), Box::new(value(&a)), Box::new(value(&b)));
                set(out, &x, i, v);
            }
            Some(())
        }
        _ => None,
    }
}

/// Two index lists the same, expression by expression.
fn same(a: &[Expr], b: &[Expr]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_expr(x, y))
}

/// The stores of a body of `let`s and stores, the lets' values substituted.
pub fn flatten_stores(body: &Stmt) -> Option<Vec<(Buffer, Vec<Expr>, Expr)>> {
    fn go(s: &Stmt, lets: &mut Vec<(Var, Expr)>, out: &mut Vec<(Buffer, Vec<Expr>, Expr)>) -> Option<()> {
        match s {
            Stmt::Let { var, value, body } => {
                let v = substitute(value, lets);
                lets.push((var.clone(), v));
                go(body, lets, out)
            }
            Stmt::Seq(items) => items.iter().try_for_each(|x| go(x, lets, out)),
            Stmt::Store { buffer, indices, value } => {
                out.push((
                    buffer.clone(),
                    indices.iter().map(|i| substitute(i, lets)).collect(),
                    substitute(value, lets),
                ));
                Some(())
            }
            _ => None,
        }
    }
    let mut out = Vec::new();
    go(body, &mut Vec::new(), &mut out)?;
    Some(out)
}

/// The identity of `op` at type `t`.
pub fn identity(op: BinOp, t: DType) -> Expr {
    let (lo, hi) = if t.is_float() {
        (Expr::Float(f64::NEG_INFINITY, t), Expr::Float(f64::INFINITY, t))
    } else {
        let bits = (t.bytes() * 8).min(63) as u32;
        if t.is_int() && !matches!(t, DType::UInt(_)) {
            (Expr::Int(-(1i64 << (bits - 1)), t), Expr::Int((1i64 << (bits - 1)) - 1, t))
        } else {
            (Expr::Int(0, t), Expr::Int(((1u64 << bits) - 1) as i64, t))
        }
    };
    match op {
        BinOp::Add => {
            if t.is_float() {
                Expr::Float(0.0, t)
            } else {
                Expr::Int(0, t)
            }
        }
        BinOp::Mul => {
            if t.is_float() {
                Expr::Float(1.0, t)
            } else {
                Expr::Int(1, t)
            }
        }
        BinOp::Max => lo,
        _ => hi,
    }
}
