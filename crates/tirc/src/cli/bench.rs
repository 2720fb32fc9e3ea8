//! `tirc bench FILE -s S --sizes 1024,2048,4096 [--compare cublas|copy]
//! [--plot perf.svg]`: `tirc run --bench` at each size, in one process (the
//! same protocol: warm-up, CUDA events, median, result checked), a table of
//! tirc against the baseline, and a chart of both.
//!
//! A size is a number, given to every module constant not fixed with `-D`
//! (`1024`: M = N = K = 1024), or constants joined by `:`
//! (`M=1000:N=1100:K=999`).

use super::{read, Common, FAIL, USAGE};
use crate::cli::run::Baseline;
use serde_json::Value;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub common: Common,
    /// The sizes, comma-separated: numbers, or NAME=V:NAME=V.
    #[arg(long, value_delimiter = ',', required = true)]
    pub sizes: Vec<String>,
    /// Time a library kernel on the same inputs at each size.
    #[arg(long, value_enum)]
    pub compare: Option<Baseline>,
    /// Draw tirc (and the baseline) against size into this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<std::path::PathBuf>,
    /// Print one JSON array (each size's `tirc run --json` object) instead of the table.
    #[arg(long)]
    pub json: bool,
    #[arg(long, default_value_t = crate::measure::DEFAULT_REPEAT)]
    pub repeat: usize,
    #[arg(long, default_value_t = crate::measure::DEFAULT_WARMUP)]
    pub warmup: usize,
    #[arg(long)]
    pub seed: Option<u64>,
}

/// The constants a size item sets.
fn assignments(item: &str, varying: &[String]) -> Result<Vec<(String, i64)>, String> {
    if let Ok(n) = item.trim().parse::<i64>() {
        return Ok(varying.iter().map(|c| (c.clone(), n)).collect());
    }
    item.split(':')
        .map(|kv| {
            let (k, v) =
                kv.split_once('=').ok_or_else(|| format!("size `{item}`: expected a number or NAME=V:NAME=V"))?;
            let v = v.trim().parse::<i64>().map_err(|_| format!("size `{item}`: `{v}` is not an integer"))?;
            Ok((k.trim().to_string(), v))
        })
        .collect()
}

/// The x coordinate of a size: its value, or the geometric mean of its values.
fn x_of(sizes: &[(String, i64)]) -> f64 {
    if sizes.is_empty() {
        return f64::NAN;
    }
    (sizes.iter().map(|(_, v)| (*v as f64).ln()).sum::<f64>() / sizes.len() as f64).exp()
}

pub fn main(a: Args) -> u8 {
    let src = match read(&a.common.file) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let module = match crate::compile::load(&src, &[]) {
        Ok(m) => m,
        Err(ds) => {
            super::report(&a.common.file, &src, &ds);
            return FAIL;
        }
    };
    let varying: Vec<String> = module
        .constants
        .iter()
        .map(|c| c.name.clone())
        .filter(|n| !a.common.define.iter().any(|(d, _)| d == n))
        .collect();
    let mut rows: Vec<(Vec<(String, i64)>, Value)> = Vec::new();
    let mut failed = false;
    for item in &a.sizes {
        let sizes = match assignments(item, &varying) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("error: {e}");
                return USAGE;
            }
        };
        let mut argv: Vec<String> = vec!["run".into(), a.common.file.display().to_string()];
        if let Some(s) = &a.common.schedule {
            argv.extend(["-s".into(), s.clone()]);
        }
        if let Some(f) = &a.common.func {
            argv.extend(["--func".into(), f.clone()]);
        }
        let given: Vec<(String, crate::compile::Number)> =
            sizes.iter().map(|(k, v)| (k.clone(), crate::compile::Number::Int(*v))).collect();
        for (k, v) in a.common.define.iter().chain(&given) {
            argv.extend(["-D".into(), format!("{k}={v}")]);
        }
        for (k, v) in &a.common.param {
            argv.extend(["-p".into(), format!("{k}={v}")]);
        }
        argv.extend(["--target", "cuda", "--bench"].map(String::from));
        argv.extend(["--repeat".into(), a.repeat.to_string(), "--warmup".into(), a.warmup.to_string()]);
        if let Some(b) = a.compare {
            argv.extend(["--compare".into(), if b == Baseline::Cublas { "cublas" } else { "copy" }.into()]);
        }
        if let Some(seed) = a.seed {
            argv.extend(["--seed".into(), seed.to_string()]);
        }
        let args: Vec<&str> = argv.iter().map(String::as_str).collect();
        let (code, text) = crate::cli::run::json(&args);
        let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if v["status"] == "error" {
            eprintln!("error: at {item}: {}", v["error"].as_str().unwrap_or(&text));
            return FAIL;
        }
        failed |= code != 0;
        rows.push((sizes, v));
    }
    if a.json {
        let all: Vec<&Value> = rows.iter().map(|r| &r.1).collect();
        println!("{}", serde_json::to_string_pretty(&all).unwrap_or_default());
    } else {
        print_table(&a, &rows);
    }
    if let Some(path) = &a.plot {
        if let Err(e) = plot(&a, &rows, path) {
            eprintln!("error: {e}");
            return FAIL;
        }
        eprintln!("wrote {}", path.display());
    }
    if failed {
        FAIL
    } else {
        0
    }
}

fn f(v: &Value) -> Option<f64> {
    v.as_f64()
}

fn size_text(sizes: &[(String, i64)]) -> String {
    sizes.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
}

fn print_table(a: &Args, rows: &[(Vec<(String, i64)>, Value)]) {
    let base = match a.compare {
        Some(Baseline::Cublas) => Some(("cuBLAS", "cublas_time_ms", "ratio_vs_cublas")),
        Some(Baseline::Copy) => Some(("copy", "copy_time_ms", "ratio_vs_copy")),
        None => None,
    };
    let width = rows.iter().map(|r| size_text(&r.0).len()).max().unwrap_or(4).max(4);
    let mut head = format!("{:width$}  {:>10}  {:>9}  {:>9}", "size", "tirc ms", "GFLOPS", "GB/s");
    if let Some((name, _, _)) = base {
        head += &format!("  {:>10}  {:>6}", format!("{name} ms"), "ratio");
    }
    println!("{head}  check");
    for (sizes, v) in rows {
        let num = |x: Option<f64>, p: usize| x.map_or("-".to_string(), |x| format!("{x:.p$}"));
        let mut line = format!(
            "{:width$}  {:>10}  {:>9}  {:>9}",
            size_text(sizes),
            num(f(&v["time_ms"]), 4),
            num(f(&v["gflops"]), 1),
            num(f(&v["gbps"]), 1)
        );
        if let Some((_, t, r)) = base {
            line += &format!("  {:>10}  {:>6}", num(f(&v[t]), 4), num(f(&v[r]), 3));
        }
        println!("{line}  {}", v["status"].as_str().unwrap_or("?"));
    }
}

fn plot(a: &Args, rows: &[(Vec<(String, i64)>, Value)], path: &std::path::Path) -> Result<(), String> {
    // GFLOPS when the kernel computes, else GB/s.
    let computes = rows.iter().any(|r| f(&r.1["gflops"]).is_some());
    let (metric, unit) = if computes { ("gflops", "GFLOPS") } else { ("gbps", "GB/s") };
    let schedule = a.common.schedule.clone().unwrap_or_else(|| "unscheduled".into());
    let mut series = vec![crate::plot::Series {
        name: format!("tirc {schedule}"),
        points: rows.iter().filter_map(|(s, v)| Some((x_of(s), f(&v[metric])?))).collect(),
    }];
    match a.compare {
        Some(Baseline::Cublas) => series.push(crate::plot::Series {
            name: "cuBLAS".into(),
            points: rows.iter().filter_map(|(s, v)| Some((x_of(s), f(&v["cublas_gflops"])?))).collect(),
        }),
        Some(Baseline::Copy) => series.push(crate::plot::Series {
            name: "device copy".into(),
            points: rows.iter().filter_map(|(s, v)| Some((x_of(s), f(&v["copy_gbps"])?))).collect(),
        }),
        None => {}
    }
    let device = rows.first().and_then(|r| r.1["device"].as_str()).unwrap_or("GPU").to_string();
    let file = a.common.file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    crate::plot::lines(path, &format!("{file} -s {schedule} on {device}"), "size", unit, &series)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_numbers_for_every_constant_or_named_values() {
        let varying = vec!["M".to_string(), "N".to_string()];
        assert_eq!(assignments("64", &varying).unwrap(), vec![("M".into(), 64), ("N".into(), 64)]);
        assert_eq!(assignments("M=3:N=5", &varying).unwrap(), vec![("M".into(), 3), ("N".into(), 5)]);
        assert!(assignments("M=x", &varying).unwrap_err().contains("not an integer"));
        assert!(assignments("big", &varying).unwrap_err().contains("expected a number"));
        assert!((x_of(&[("M".into(), 1000), ("N".into(), 1000)]) - 1000.0).abs() < 1e-9);
    }
}
