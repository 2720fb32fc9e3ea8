//! `transform_block_layout(block, index_map)`: a block's iteration space
//! remapped by an index map, TVM's primitive of that name and arguments.
//!
//! The map takes the block's variables in order, `lambda i, j, k: (i //
//! 16, j // 16, k // 16, i % 16, j % 16, k % 16)`, and gives the new
//! variables: the block gets one variable per result (of the kind of the
//! variable it comes from, over the result's range), its body reads the old
//! variables through the inverse of the map, and the loops around it are
//! regenerated, one per new variable in the map's order. What the block
//! computes is unchanged; the order in which its instances run follows the
//! new loops (TVM uses this to bring a block into the shape a tensor
//! intrinsic describes).
//!
//! Preconditions, checked in this order:
//! 1. The block exists, with no predicate and no opaque variable (whose
//!    instances carry an order), and the loops directly around it
//!    are a perfect nest binding its variables one to one (`T.axis.remap`
//!    form, each loop from 0 over its variable's whole domain): the nest is
//!    what the primitive regenerates.
//! 2. The map takes as many indices as the block has variables.
//! 3. Each result depends on one variable, and the results of a variable
//!    are the digits of a mixed-radix decomposition of it (`v // 16`,
//!    `v % 16`, `v // 4 % 4`, `v` itself, in any order): checked value by
//!    value over the variable's domain (at most 2^20 values), which gives
//!    the inverse `v = sum(weight * digit)`. TVM takes any bijective affine
//!    map; maps that mix variables in one result (`i * 16 + j`) are refused.

use super::transform_layout::IndexMap;
use super::{BlockRV, Result, Schedule, ScheduleError};
use crate::arith::Analyzer;
use crate::common::tree::{fresh_name, get_loop, loop_names, replace_loop};
use tirc_ir::printer::print_expr;
use tirc_ir::region::infer_block_regions;
use tirc_ir::subst::substitute_stmt;
use tirc_ir::{Expr, For, ForKind, IterVar, Range, Stmt, Var};

/// The values of one variable's domain the decomposition is checked over.
const MAX_VALUES: i64 = 1 << 20;

pub fn transform_block_layout(sch: &mut Schedule, block: &BlockRV, map: &IndexMap) -> Result<()> {
    // 1.
    let loops = super::get::get_loops(sch, block)?;
    let r = sch
        .func
        .body
        .find_block(block)
        .ok_or_else(|| ScheduleError::not_found(format!("block `{block}` is not in the function")))?
        .clone();
    if r.predicate.as_bool() != Some(true) {
        return Err(ScheduleError::new(format!(
            "block `{block}` has a predicate: its instances are not the whole box of its variables"
        )));
    }
    if let Some(iv) = r.block.iter_vars.iter().find(|iv| iv.kind == tirc_ir::IterKind::Opaque) {
        return Err(ScheduleError::new(format!(
            "block `{block}` has opaque variable `{}`: its instances run in an order that new loops would not keep",
            iv.var.name()
        )));
    }
    let n = r.block.iter_vars.len();
    if n == 0 || loops.len() < n {
        return Err(ScheduleError::new(format!(
            "block `{block}` does not sit under one loop per variable ({} variables, {} loops)",
            n,
            loops.len()
        )));
    }
    let nest: Vec<For> =
        loops[loops.len() - n..].iter().map(|l| get_loop(&sch.func.body, l).cloned()).collect::<Result<_>>()?;
    let not_remap = || {
        ScheduleError::new(format!(
            "the loops around block `{block}` are not a nest binding its variables one to one from 0 over their domains"
        ))
        .help("transform_block_layout regenerates that nest; split, fuse or reorder afterwards instead")
    };
    for (k, l) in nest.iter().enumerate() {
        let inner_is_next = match (&l.body, nest.get(k + 1)) {
            (Stmt::For(x), Some(next)) => x.var == next.var,
            (Stmt::Block(b), None) => b.block.name == *block,
            _ => false,
        };
        if !inner_is_next || l.min.as_int() != Some(0) {
            return Err(not_remap());
        }
    }
    let mut extents = Vec::new();
    for (iv, v) in r.block.iter_vars.iter().zip(&r.iter_values) {
        let Some(l) = nest.iter().find(|l| v.as_var() == Some(&l.var)) else { return Err(not_remap()) };
        let e = iv.dom.extent.as_int().filter(|_| iv.dom.min.as_int() == Some(0));
        if e.is_none() || l.extent.as_int() != e {
            return Err(not_remap());
        }
        extents.push(e.unwrap_or(0));
    }
    let distinct =
        r.iter_values.iter().enumerate().all(|(a, x)| r.iter_values[..a].iter().all(|y| y.as_var() != x.as_var()));
    if !distinct {
        return Err(not_remap());
    }
    // 2.
    if map.params.len() != n {
        return Err(ScheduleError::bad_argument(format!(
            "the index map takes {} indices, but block `{block}` has {n} variables",
            map.params.len()
        )));
    }
    // 3. Per variable, its digits: (result, weight, range).
    let refuse = |why: String| ScheduleError::unsupported(format!("the index map `{map}`: {why}"));
    let mut owner = Vec::new();
    for (k, res) in map.results.iter().enumerate() {
        let used: Vec<usize> = (0..n).filter(|&p| res.uses(&map.params[p])).collect();
        match used[..] {
            [p] => owner.push(p),
            [] => return Err(refuse(format!("result {k} ({}) uses no index", print_expr(res)))),
            _ => {
                return Err(refuse(format!(
                    "result {k} ({}) mixes several indices; tirc takes maps whose results each split one index",
                    print_expr(res)
                )))
            }
        }
    }
    let mut digits: Vec<(usize, i64, i64)> = Vec::new(); // (result, weight, range)
    for (p, &e) in extents.iter().enumerate() {
        let ks: Vec<usize> = (0..map.results.len()).filter(|&k| owner[k] == p).collect();
        if ks.is_empty() {
            if e == 1 {
                continue;
            }
            return Err(refuse(format!("no result uses `{}`, which takes {e} values", map.params[p].name())));
        }
        if e > MAX_VALUES {
            return Err(refuse(format!(
                "`{}` takes {e} values; tirc checks the map value by value, up to {MAX_VALUES}",
                map.params[p].name()
            )));
        }
        let value = |k: usize, v: i64| eval1(&map.results[k], &map.params[p], v);
        let mut table: Vec<Vec<i64>> = Vec::with_capacity(e as usize);
        for v in 0..e {
            let row = ks.iter().map(|&k| value(k, v)).collect::<Option<Vec<i64>>>().ok_or_else(|| {
                refuse("its results are not integer expressions tirc can evaluate (+ - * // %)".into())
            })?;
            table.push(row);
        }
        let mut weights = Vec::new();
        for (c, &k) in ks.iter().enumerate() {
            let range = table.iter().map(|r| r[c]).max().unwrap_or(0) + 1;
            if table.iter().any(|r| r[c] < 0) {
                return Err(refuse(format!("result {k} is negative for some `{}`", map.params[p].name())));
            }
            // The value of the index where this digit is 1 and the others 0.
            let w = if range == 1 {
                0
            } else {
                (0..e)
                    .find(|&v| table[v as usize].iter().enumerate().all(|(d, &x)| x == i64::from(d == c)))
                    .ok_or_else(|| {
                        refuse(format!(
                            "the results of `{}` are not the digits of a mixed-radix number",
                            map.params[p].name()
                        ))
                    })?
            };
            weights.push((k, w, range));
        }
        let product: i64 = weights.iter().map(|(_, _, r)| r).product();
        let exact =
            (0..e).all(|v| table[v as usize].iter().zip(&weights).map(|(x, (_, w, _))| x * w).sum::<i64>() == v);
        if !exact || product != e {
            return Err(refuse(format!(
                "the results of `{}` are not a decomposition of its {e} values into digits (a bijection onto their box)",
                map.params[p].name()
            )));
        }
        digits.extend(weights);
    }
    digits.sort_by_key(|d| d.0);
    // The new loops visit the digits in the order of the results. Where the
    // update depends on the order of its steps, they must visit each
    // element's steps as the loops did: the digits of the reduction's
    // variables in the order of their loops, each variable's from the
    // heaviest (an identity, or `k // 4, k % 4`; not `k % 4, k // 4`).
    if let Some(why) = crate::common::reduction::order_dependence(&r.block.body, r.block.init.as_ref()) {
        let place = |p: usize| nest.iter().position(|l| r.iter_values[p].as_var() == Some(&l.var));
        let steps: Vec<(Option<usize>, i64)> = digits
            .iter()
            .filter(|(res, _, range)| *range > 1 && r.block.iter_vars[owner[*res]].kind == tirc_ir::IterKind::Reduce)
            .map(|(res, w, _)| (place(owner[*res]), *w))
            .collect();
        let kept = steps.windows(2).all(|w| w[0].0 < w[1].0 || (w[0].0 == w[1].0 && w[0].1 > w[1].1));
        if !kept {
            return Err(ScheduleError::new(format!(
                "block `{block}` accumulates with an update that {why}: the new loops would visit its steps in another order than its loops, and change its result"
            )));
        }
    }

    // The new variables, one per result, and the loops over them.
    let taken = loop_names(&sch.func.body);
    let mut new_ivs = Vec::new();
    let mut new_loops = Vec::new();
    let mut inverse: Vec<Expr> = vec![Expr::int(0); n];
    for (k, &(res, weight, range)) in digits.iter().enumerate() {
        let p = owner[res];
        let old = &r.block.iter_vars[p];
        let v = Var::new(format!("{}_{k}", old.var.name()), old.var.dtype());
        let name = fresh_name(&taken, &format!("ax{k}"));
        let lv = Var::new(name, old.var.dtype());
        inverse[p] = Expr::folded(tirc_ir::BinOp::Add, inverse[p].clone(), Expr::var(&v) * Expr::int(weight));
        new_ivs.push(IterVar { var: v, dom: Range::new(Expr::int(0), Expr::int(range)), kind: old.kind });
        new_loops.push((lv, range));
    }
    let an = Analyzer::new();
    let bind: Vec<(Var, Expr)> =
        r.block.iter_vars.iter().zip(&inverse).map(|(iv, e)| (iv.var.clone(), an.simplify(e))).collect();
    let rewritten = |s: &Stmt| substitute_stmt(s, &bind).map_exprs(&mut |e| an.simplify(e));
    let mut b = r.clone();
    b.block.body = rewritten(&r.block.body);
    b.block.init = r.block.init.as_ref().map(rewritten);
    b.block.iter_vars = new_ivs;
    b.iter_values = new_loops.iter().map(|(v, _)| Expr::var(v)).collect();
    let (reads, writes) = infer_block_regions(&b.block);
    b.block.reads = reads;
    b.block.writes = writes;
    let mut s = Stmt::Block(Box::new(b));
    for (v, range) in new_loops.into_iter().rev() {
        s = Stmt::For(Box::new(For {
            var: v,
            min: Expr::int(0),
            extent: Expr::int(range),
            kind: ForKind::Serial,
            annotations: vec![],
            body: s,
            span: None,
        }));
    }
    let outer = &loops[loops.len() - n];
    sch.func.body = replace_loop(&sch.func.body, outer, |_| Ok(s))?;
    Ok(())
}

/// The value of `e`, an expression of `p` alone, at `p = v`.
fn eval1(e: &Expr, p: &Var, v: i64) -> Option<i64> {
    super::transform_layout::eval(e, std::slice::from_ref(p), &[v])
}
