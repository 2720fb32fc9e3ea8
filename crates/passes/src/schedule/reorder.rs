//! `reorder(*loops)`: the given loops take the positions they hold in the
//! nest, in the order given; other loops of the nest stay where they are.
//!
//! Preconditions, checked in this order:
//! 1. Every loop is in the function, and none is given twice.
//! 2. The loops lie on one path of a nest, and every loop from the outermost
//!    to the innermost of them has a single child loop (no block or
//!    statement sits between them, which would run a different number of
//!    times after the reorder).
//! 3. No loop's extent depends on another loop of the nest.
//! 4. No block under them has an opaque variable bound to a given loop (its
//!    iterations carry an order: a prefix sum).
//! 5. No block under them reads what a block accumulates over a given loop
//!    (it reads partial sums, which the new order changes).
//! 6. No two iterations of a given loop meet in global memory (one writing
//!    an element another reads or writes), reductions over the given loops
//!    aside (`common::hazard::iterations_meet`).

use super::{LoopRV, Result, Schedule, ScheduleError};
use crate::common::tree::{get_loop, replace_loop};
use tirc_ir::region::block_buffers;
use tirc_ir::{For, IterKind, Stmt, Var};

pub fn reorder(sch: &mut Schedule, order: &[LoopRV]) -> Result<()> {
    // 1.
    for (i, l) in order.iter().enumerate() {
        get_loop(&sch.func.body, l)?;
        if order[..i].contains(l) {
            return Err(ScheduleError::bad_argument(format!("loop `{}` is given twice", l.name())));
        }
    }
    if order.len() < 2 {
        return Ok(());
    }
    // 2. The outermost given loop is the one that contains all the others.
    let outer = order
        .iter()
        .find(|o| {
            let l = get_loop(&sch.func.body, o).ok();
            l.is_some_and(|l| {
                let s = Stmt::For(Box::new(l.clone()));
                order.iter().all(|x| s.find_loop(x).is_some())
            })
        })
        .ok_or_else(|| {
            ScheduleError::new(format!("loops {} are not in one nest", names(order)))
                .help("reorder takes loops that are nested in one another")
        })?
        .clone();
    let mut chain: Vec<For> = vec![get_loop(&sch.func.body, &outer)?.clone()];
    let mut found = 1;
    while found < order.len() {
        let last = chain.last().cloned().unwrap_or_else(|| unreachable!());
        match &last.body {
            Stmt::For(inner) => {
                if order.contains(&inner.var) {
                    found += 1;
                }
                chain.push((**inner).clone());
            }
            _ => {
                let missing: Vec<&str> =
                    order.iter().filter(|o| !chain.iter().any(|c| &c.var == *o)).map(|o| o.name()).collect();
                return Err(ScheduleError::new(format!(
                    "reorder needs loops of one nest: loop `{}` holds more than one statement, so {} cannot move above it",
                    last.var.name(),
                    missing.join(", ")
                )));
            }
        }
    }
    // 3.
    for c in &chain {
        if chain.iter().any(|o| c.extent.uses(&o.var) || c.min.uses(&o.var)) {
            return Err(ScheduleError::new(format!(
                "the range of loop `{}` depends on another loop of the nest",
                c.var.name()
            )));
        }
    }
    // 4. and 5.
    let nest = Stmt::For(Box::new(chain[0].clone()));
    let moved = |v: &tirc_ir::Expr| order.iter().any(|o| v.uses(o));
    let blocks = nest.blocks();
    // Each loop of the nest in its new place (`swapped(a, b)`: `a` comes
    // after `b` once reordered). Loops not given keep their places, so a
    // given loop can pass one that is not (`reorder(jk1, i)` on `i, jk0,
    // jk1` gives `jk1, jk0, i`): every pair of the nest whose order changes
    // counts.
    let mut given = order.iter();
    let after: Vec<&Var> =
        chain.iter().map(|c| if order.contains(&c.var) { given.next().unwrap_or(&c.var) } else { &c.var }).collect();
    let place = |v: &Var| after.iter().position(|a| *a == v);
    let swapped = |a: &Var, b: &Var| place(a) > place(b);
    let mut rewrites: Vec<(String, Stmt)> = Vec::new();
    for r in &blocks {
        for (iv, v) in r.block.iter_vars.iter().zip(&r.iter_values) {
            if iv.kind == IterKind::Opaque && moved(v) {
                return Err(ScheduleError::new(format!(
                    "block `{}` has opaque variable `{}`, bound to a loop being reordered: its iterations must run in their order",
                    r.block.name,
                    iv.var.name()
                )));
            }
        }
        let reduces =
            r.block.iter_vars.iter().zip(&r.iter_values).any(|(iv, v)| iv.kind == IterKind::Reduce && moved(v));
        if !reduces {
            continue;
        }
        // A loop fused of a spatial and a reduction loop (`vj = f // K`, `vk
        // = f % K`) reordered with another loop of the reduction: an
        // element's steps no longer start at its init (`vk == 0`), which
        // then wipes the steps before it.
        if r.block.init.is_some() {
            let feeds = |l: &Var, kind: IterKind| {
                r.block.iter_vars.iter().zip(&r.iter_values).any(|(iv, v)| iv.kind == kind && v.uses(l))
            };
            let before: Vec<&Var> = chain.iter().map(|c| &c.var).filter(|v| feeds(v, IterKind::Reduce)).collect();
            let fused = before.iter().enumerate().find_map(|(i, a)| {
                before[i + 1..]
                    .iter()
                    .find(|b| swapped(a, b) && (feeds(a, IterKind::Spatial) || feeds(b, IterKind::Spatial)))
                    .map(|b| if feeds(a, IterKind::Spatial) { *a } else { *b })
            });
            if let Some(m) = fused {
                return Err(ScheduleError::new(format!(
                    "loop `{}` feeds both a spatial and a reduction variable of block `{}` (a fused loop): reordered with another loop of the reduction, an element's steps would not start at its init",
                    m.name(),
                    r.block.name
                ))
                .help("reorder before fusing the spatial and the reduction loop"));
            }
        }
        // Two loops of the reduction swapped: each element's steps run in
        // another order. A reduction tirc recognizes (a sum, a product, a
        // min or max, an argmax) does not see it, nor does an update that
        // only adds to, subtracts from or selects its element (`C = C - A`,
        // `C = C + A + B`, a masked sum); one that scales or transforms it
        // (`C = C * 3 + A`, `C = A - C`) would compute something else.
        let feeds_reduce = |l: &Var| {
            r.block.iter_vars.iter().zip(&r.iter_values).any(|(iv, v)| iv.kind == IterKind::Reduce && v.uses(l))
        };
        let steps: Vec<&Var> = chain.iter().map(|c| &c.var).filter(|v| feeds_reduce(v)).collect();
        let swaps_steps = steps.iter().enumerate().any(|(i, a)| steps[i + 1..].iter().any(|b| swapped(a, b)));
        // An argmax that keeps the first of equal values is rewritten to
        // break ties by the index (below), which any order keeps.
        let tie_broken = crate::common::reduction::tie_broken_update(&r.block).filter(|_| swaps_steps);
        if let Some(update) = tie_broken {
            rewrites.push((r.block.name.clone(), update));
        } else if let Some(why) =
            crate::common::reduction::order_dependence(&r.block.body, r.block.init.as_ref()).filter(|_| swaps_steps)
        {
            return Err(ScheduleError::new(format!(
                "block `{}` accumulates with an update that {why}: reordering the loops of its reduction changes the order of its steps, and so its result",
                r.block.name
            ))
            .help("keep the loops of the reduction in their order"));
        }
        let out = block_buffers(r, false);
        if let Some((other, b)) = blocks
            .iter()
            .filter(|o| o.block.name != r.block.name)
            .find_map(|o| block_buffers(o, true).into_iter().find(|b| out.contains(b)).map(|b| (o, b)))
        {
            return Err(ScheduleError::new(format!(
                "block `{}` reads `{}`, which block `{}` accumulates over a loop being reordered: it would see other partial sums",
                other.block.name,
                b.name(),
                r.block.name
            )));
        }
    }
    // 6.
    let reduces = |r: &tirc_ir::BlockRealize| {
        r.block.iter_vars.iter().zip(&r.iter_values).any(|(iv, v)| iv.kind == IterKind::Reduce && moved(v))
    };
    for c in chain.iter().filter(|c| order.contains(&c.var)) {
        if let Some(b) = crate::common::hazard::iterations_meet(&sch.func.body, c, &reduces, &|b| {
            b.scope() == tirc_ir::Scope::Global
        }) {
            return Err(ScheduleError::new(format!(
                "the iterations of loop `{}` meet in `{}` (one writes an element another reads or writes): in another order they would see other values",
                c.var.name(),
                b.name()
            )));
        }
    }
    let mut it = order.iter();
    let mut new_chain = Vec::new();
    for c in &chain {
        if order.contains(&c.var) {
            let want = it.next().unwrap_or_else(|| unreachable!());
            new_chain.push(chain.iter().find(|x| &x.var == want).cloned().unwrap_or_else(|| unreachable!()));
        } else {
            new_chain.push(c.clone());
        }
    }
    let mut body = chain[chain.len() - 1].body.clone();
    for mut l in new_chain.into_iter().rev() {
        l.body = body;
        body = Stmt::For(Box::new(l));
    }
    sch.func.body = replace_loop(&sch.func.body, &outer, |_| Ok(body))?;
    for (name, update) in rewrites {
        sch.func.body = crate::common::tree::replace_block(&sch.func.body, &name, |r| {
            let mut r = r.clone();
            r.block.body = update;
            Ok(Stmt::Block(Box::new(r)))
        })?;
    }
    Ok(())
}

fn names(v: &[LoopRV]) -> String {
    v.iter().map(|l| l.name()).collect::<Vec<_>>().join(", ")
}
