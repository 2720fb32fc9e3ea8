//! Printing a tuning run: the table of candidates sorted by speed with the
//! cuBLAS ratio, the average and best per value of each swept parameter
//! (the seeds' Step 2 tables), the rejections counted by reason, the
//! failures, and where the time went. Or all of it as one JSON object.

use super::db::Status;
use super::eval::Trial;
use super::space::{raw, Space};
use super::{Outcome, Target};
use serde_json::{json, Map, Value};
use std::fmt::Write as _;

/// The correct, timed trials, fastest first.
pub fn ranked(o: &Outcome) -> Vec<&Trial> {
    let mut v: Vec<&Trial> = o.trials.iter().filter(|t| t.status == Status::Ok && t.time_ms.is_some()).collect();
    v.sort_by(|a, b| a.time_ms.unwrap_or(f64::MAX).total_cmp(&b.time_ms.unwrap_or(f64::MAX)));
    v
}

fn gflops(o: &Outcome, ms: f64) -> f64 {
    o.flops / (ms * 1e6)
}

/// A reason with its numbers blanked (not digits inside names), so that
/// rejections group by cause.
pub fn reason_class(r: &str) -> String {
    let mut out = String::new();
    let mut prev: Option<char> = None;
    let mut blanking = false;
    for ch in r.chars() {
        let in_name = prev.is_some_and(|p| p.is_ascii_alphanumeric() || p == '_');
        if ch.is_ascii_digit() && (blanking || !in_name) {
            if !blanking {
                out.push('N');
            }
            blanking = true;
        } else {
            blanking = false;
            out.push(ch);
        }
        prev = Some(ch);
    }
    out
}

/// Rejections by cause: (class, count, an example trial).
pub fn rejections(o: &Outcome) -> Vec<(String, usize, &Trial)> {
    let mut v: Vec<(String, usize, &Trial)> = Vec::new();
    for t in o.trials.iter().filter(|t| t.status == Status::Rejected) {
        let class = reason_class(t.reason.as_deref().unwrap_or("no reason given"));
        match v.iter_mut().find(|x| x.0 == class) {
            Some(x) => x.1 += 1,
            None => v.push((class, 1, t)),
        }
    }
    v.sort_by_key(|x| std::cmp::Reverse(x.1));
    v
}

/// One value of a parameter: the value, how many of its candidates were
/// correct, how many were tried, the average and the best GFLOPS.
pub type ValueRow = (String, usize, usize, Option<f64>, Option<f64>);

/// Per value of each swept parameter, a [`ValueRow`].
pub fn per_value(o: &Outcome) -> Vec<(String, Vec<ValueRow>)> {
    let mut out = Vec::new();
    for p in o.space.swept() {
        let (name, values) = &o.space.params[p];
        let mut rows = Vec::new();
        for (vi, v) in values.iter().enumerate() {
            let tried: Vec<&Trial> =
                o.trials.iter().filter(|t| t.cand[p] == vi && t.status != Status::Rejected).collect();
            let ok = tried.iter().filter(|t| t.status == Status::Ok).count();
            let g: Vec<f64> = tried
                .iter()
                .filter(|t| t.status == Status::Ok)
                .filter_map(|t| t.time_ms)
                .map(|ms| gflops(o, ms))
                .collect();
            let avg = (!g.is_empty()).then(|| g.iter().sum::<f64>() / g.len() as f64);
            let best = g.iter().copied().reduce(f64::max);
            rows.push((raw(v), ok, tried.len(), avg, best));
        }
        out.push((name.clone(), rows));
    }
    out
}

fn sizes(o: &Outcome) -> String {
    o.constants.iter().map(|(n, v)| format!("{n}={v}")).collect::<Vec<_>>().join(" ")
}

fn dims(space: &Space) -> String {
    let swept = space.swept();
    swept.iter().map(|&p| format!("{} {}", space.params[p].0, space.params[p].1.len())).collect::<Vec<_>>().join(" x ")
}

/// The text report.
pub fn text(o: &Outcome, file: &str, schedule: &str) -> String {
    let mut s = String::new();
    let on = match (&o.target, &o.device) {
        (Target::Cuda, Some(d)) => format!("on {d}"),
        _ => "on the simulator (checked, not timed)".to_string(),
    };
    let _ = writeln!(s, "tune {schedule} of {file} {on}, {}", sizes(o));
    let counts = |st: Status| o.trials.iter().filter(|t| t.status == st).count();
    let resumed = o.trials.iter().filter(|t| t.resumed).count();
    let _ = writeln!(
        s,
        "space: {} candidates ({}); strategy {}; {} tried: {} ok, {} mismatch, {} crashed, {} rejected{}",
        o.space_size,
        dims(&o.space),
        o.strategy.name(),
        o.trials.len(),
        counts(Status::Ok),
        counts(Status::Mismatch),
        counts(Status::Crashed),
        counts(Status::Rejected),
        if resumed > 0 { format!(" ({resumed} taken from the tuning database)") } else { String::new() }
    );
    let _ = writeln!(
        s,
        "checked against the unscheduled function in float64 on the {}",
        if o.reference_on == "cuda" { "GPU" } else { "simulator" }
    );
    if let Some(c) = o.cublas_ms {
        let _ = writeln!(s, "cuBLAS SGEMM: {c:.4} ms, {:.1} GFLOPS", gflops(o, c));
    }
    let swept = o.space.swept();
    if o.target == Target::Cuda {
        let ranked = ranked(o);
        if !ranked.is_empty() {
            let _ = writeln!(s);
            let mut head = String::from("rank");
            for &p in &swept {
                let _ = write!(head, "  {:>w$}", o.space.params[p].0, w = width(o, p));
            }
            let _ = write!(head, "  {:>9}  {:>8}  {:>8}  {:>9}  block", "time ms", "GFLOPS", "x cuBLAS", "rel_err");
            let _ = writeln!(s, "{head}");
            for (i, t) in ranked.iter().enumerate() {
                let mut line = format!("{:>4}", i + 1);
                for &p in &swept {
                    let _ = write!(line, "  {:>w$}", raw(&o.space.params[p].1[t.cand[p]]), w = width(o, p));
                }
                let ms = t.time_ms.unwrap_or(f64::NAN);
                let ratio = o.cublas_ms.map_or("-".to_string(), |c| format!("{:.3}", c / ms));
                let block = t.block.map_or("-".to_string(), |b| format!("{}x{}x{}", b[0], b[1], b[2]));
                let _ = writeln!(
                    line,
                    "  {ms:>9.4}  {:>8.1}  {ratio:>8}  {:>9.2e}  {block}",
                    gflops(o, ms),
                    t.rel_err.unwrap_or(f64::NAN)
                );
                s.push_str(&line);
            }
        }
    }
    let _ = writeln!(s);
    if o.target == Target::Cuda {
        let _ = writeln!(s, "per parameter value (GFLOPS of the correct candidates):");
    } else {
        let _ = writeln!(s, "per parameter value (correct / checked):");
    }
    for (name, rows) in per_value(o) {
        for (v, ok, tried, avg, best) in rows {
            let f = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.1}"));
            if o.target == Target::Cuda {
                let _ = writeln!(s, "  {name:>8} = {v:<16} avg {:>9}  best {:>9}  ({ok} of {tried})", f(avg), f(best));
            } else {
                let _ = writeln!(s, "  {name:>8} = {v:<16} {ok} / {tried}");
            }
        }
    }
    let rej = rejections(o);
    if !rej.is_empty() {
        let _ = writeln!(s);
        let _ = writeln!(s, "rejected, by reason:");
        for (class, n, ex) in rej {
            let _ = writeln!(
                s,
                "  {n:>5}  {class}  (e.g. {}: {})",
                o.space.label(&ex.cand),
                ex.reason.as_deref().unwrap_or("")
            );
        }
    }
    let bad: Vec<&Trial> = o.trials.iter().filter(|t| matches!(t.status, Status::Mismatch | Status::Crashed)).collect();
    if !bad.is_empty() {
        let _ = writeln!(s);
        let _ = writeln!(s, "WRONG RESULTS ({}): these kernels are not ranked; each is a tirc bug", bad.len());
        for t in bad {
            let _ =
                writeln!(s, "  {} {}: {}", t.status.name(), o.space.label(&t.cand), t.reason.as_deref().unwrap_or(""));
        }
    }
    let _ = writeln!(s);
    let compile_cpu: f64 = o.trials.iter().filter(|t| !t.resumed).filter_map(|t| t.compile_s).sum();
    let _ = writeln!(
        s,
        "time: {:.1} s in all; building {:.1} s wall ({compile_cpu:.1} s summed over threads){}",
        o.wall_s,
        o.compile_wall_s,
        if o.target == Target::Cuda {
            format!("; checking and timing {:.1} s", o.measure_s)
        } else {
            " (includes simulating)".into()
        }
    );
    for n in &o.notes {
        let _ = writeln!(s, "note: {n}");
    }
    if let Some(best) = ranked(o).first() {
        let ps: Vec<String> = o.space.values(&best.cand).iter().map(|(n, v)| format!("-p {n}={}", raw(v))).collect();
        let _ = writeln!(s, "best: {}", ps.join(" "));
        if let Some(db) = &o.db_path {
            let _ = writeln!(s, "recorded in {}; `tirc run {file} -s {schedule} --tuned` uses it", db.display());
        }
    }
    if let Some(a) = &o.aborted {
        let _ = writeln!(s, "stopped early: {a}");
    }
    s
}

fn width(o: &Outcome, p: usize) -> usize {
    let (n, vs) = &o.space.params[p];
    vs.iter().map(|v| raw(v).len()).chain([n.len()]).max().unwrap_or(1)
}

fn num(x: Option<f64>) -> Value {
    match x {
        Some(v) if v.is_finite() => json!(v),
        _ => Value::Null,
    }
}

/// The JSON report: one object.
pub fn json(o: &Outcome, file: &str, schedule: &str, status: &str) -> Value {
    let params = |t: &Trial| -> Value {
        let m: Map<String, Value> = o
            .space
            .values(&t.cand)
            .into_iter()
            .map(|(n, v)| {
                (
                    n,
                    match v {
                        tirc_ir::func::ParamValue::Int(i) => json!(i),
                        tirc_ir::func::ParamValue::Str(s) => json!(s),
                    },
                )
            })
            .collect();
        Value::Object(m)
    };
    let mut trials: Vec<&Trial> = o.trials.iter().collect();
    trials.sort_by(|a, b| a.time_ms.unwrap_or(f64::MAX).total_cmp(&b.time_ms.unwrap_or(f64::MAX)));
    let cands: Vec<Value> = trials
        .iter()
        .map(|t| {
            json!({
                "params": params(t),
                "status": t.status.name(),
                "reason": t.reason,
                "time_ms": num(t.time_ms),
                "gflops": num(t.time_ms.map(|ms| gflops(o, ms))),
                "ratio_vs_cublas": num(o.cublas_ms.zip(t.time_ms).map(|(c, ms)| c / ms)),
                "rel_err": num(t.rel_err),
                "compile_s": num(t.compile_s),
                "block": t.block,
                "resumed": t.resumed,
            })
        })
        .collect();
    let summary: Map<String, Value> = per_value(o)
        .into_iter()
        .map(|(name, rows)| {
            let m: Map<String, Value> = rows
                .into_iter()
                .map(|(v, ok, tried, avg, best)| {
                    (v, json!({"ok": ok, "tried": tried, "avg_gflops": num(avg), "best_gflops": num(best)}))
                })
                .collect();
            (name, Value::Object(m))
        })
        .collect();
    let rejected: Vec<Value> =
        rejections(o).into_iter().map(|(c, n, ex)| json!({"reason": c, "count": n, "example": ex.reason})).collect();
    let best = ranked(o).first().map(|t| params(t));
    json!({
        "status": status,
        "file": file,
        "schedule": schedule,
        "func": o.func,
        "target": if o.target == Target::Cuda { "cuda" } else { "sim" },
        "device": o.device,
        "constants": o.constants.iter().map(|(n, v)| (n.clone(), json!(v))).collect::<Map<String, Value>>(),
        "space_size": o.space_size,
        "strategy": o.strategy.name(),
        "cublas_time_ms": num(o.cublas_ms),
        "cublas_gflops": num(o.cublas_ms.map(|c| gflops(o, c))),
        "best": best,
        "candidates": cands,
        "summary": summary,
        "rejected": rejected,
        "wall_s": o.wall_s,
        "compile_wall_s": o.compile_wall_s,
        "measure_s": o.measure_s,
        "aborted": o.aborted,
        "notes": o.notes,
    })
}
