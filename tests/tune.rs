//! `tirc tune`: every point of every example's space is correct on the
//! simulator; bad input exits 1 with a message that says which and why; the
//! tuning database round-trips and `run --tuned` finds the best record; the
//! model-guided search beats random sampling on a cost proxy of the seeds'
//! Step 2 space.
//!
//! The command runs in-process (`tirc::tune::cli::run_argv`), with the same
//! argument parsing and exit codes as the binary.

use std::path::PathBuf;
use tirc::tune::db::{content_hash, Db, Key, Record, Status};
use tirc::tune::search::{replay, Strategy};
use tirc::tune::space::{parse_space_args, raw, Space};
use tirc_ir::func::ParamValue;
use tirc_tests::{examples, read, root};

/// Runs `tirc tune ARGS` from the repository root; exit code, stdout, stderr.
fn tune(args: &[&str]) -> (u8, String, String) {
    let mut out = Vec::new();
    let mut err = Vec::new();
    let mut argv = vec!["tune"];
    argv.extend_from_slice(args);
    std::env::set_current_dir(root()).expect("the repository root exists");
    let code = tirc::tune::cli::run_argv(&argv, &mut out, &mut err);
    (code, String::from_utf8_lossy(&out).into_owned(), String::from_utf8_lossy(&err).into_owned())
}

fn data(name: &str) -> String {
    format!("tests/data/tune/{name}")
}

/// CI's proof that every point of every example's space is correct: each
/// schedule with a space is swept on the simulator at the file's
/// `# test-sizes:`.
#[test]
fn every_point_of_every_example_space_is_correct_on_the_simulator() {
    let mut swept = 0;
    for ex in examples() {
        let src = read(&ex);
        let module = tirc::compile::load(&src, &tirc::tune::test_sizes(&src)).expect("the examples load");
        for s in module.schedules.iter().filter(|s| !s.space.is_empty()) {
            let file = ex.display().to_string();
            let (code, out, err) = tune(&[&file, "-s", &s.name, "--target", "sim", "--seed", "11", "--no-progress"]);
            assert_eq!(code, 0, "{file} {}:\n{out}\n{err}", s.name);
            assert!(out.contains(" 0 mismatch, 0 crashed"), "{out}");
            swept += 1;
        }
    }
    assert!(swept > 0, "no example declares a space");
}

#[test]
fn bad_input_exits_1_and_says_which_and_why() {
    let sweep = "ir-examples/matmul_sweep.tir";
    let cases: &[(&[&str], &str)] = &[
        (&[sweep, "-s", "step2", "--space", ""], "--space is empty"),
        (&[sweep, "-s", "step2", "--space", "BM"], "--space `BM` is malformed: expected NAME=V1,V2"),
        (&[sweep, "-s", "step2", "--space", "BM="], "a value of `BM` is empty"),
        (&[sweep, "-s", "step2", "--space", "BM=32,,64"], "a value of `BM` is empty"),
        (&[sweep, "-s", "step2", "--space", "BM=32;BM=64"], "--space names `BM` twice"),
        (&[sweep, "-s", "step2", "--space", "BX=32,64"], "schedule `step2` has no parameter `BX`"),
        (&[sweep, "-s", "step2", "--space", "BM=big"], "`big` is not an integer"),
        (&[sweep, "-s", "step2", "--space", "BM=32,32"], "lists the value 32 of `BM` twice"),
        (&[sweep, "-s", "step2", "-p", "BM=32", "--space", "BM=32,64"], "given both by -p"),
        (&[sweep, "-s", "step2", "-p", "BX=1"], "-p: schedule `step2` has no parameter `BX`"),
        (&[sweep, "-s", "nope"], "the file has no schedule `nope`"),
        (&["ir-examples/matmul.tir", "-s", "step1"], "declares no space and --space gives none"),
        (&[sweep, "-s", "step2", "--budget", "0"], "--budget 0 measures nothing"),
        (&[sweep, "-s", "step2", "--space", "BM=128;BN=128;TM=2;TN=2"], "every candidate of the space was rejected"),
        (&[&data("all_rejected.tir"), "-s", "threads"], "every candidate of the space was rejected: 2 x loop"),
        (&[&data("wrong_type.tir"), "-s", "threads"], "gives `TX` the value \"wide\", but its default 32"),
        (&[&data("empty_values.tir"), "-s", "threads"], "the space gives `TX` no values"),
        (&[&data("unknown_param.tir"), "-s", "threads"], "the space names `TY`, which is not a parameter"),
        (&["tests/data/tune/missing.tir", "-s", "x"], "cannot read"),
        (
            &["ir-examples/matmul_dynamic.tir", "-s", "step6_async", "--space", "BK=16", "--sizes", "17", "-D", "m=8"],
            "-D m=8 and --sizes both give `m`",
        ),
    ];
    for (args, want) in cases {
        let mut a = args.to_vec();
        a.extend(["--target", "sim", "--no-progress", "--seed", "3"]);
        let (code, out, err) = tune(&a);
        assert_eq!(code, 1, "tirc tune {}: expected exit 1, got {code}\n{out}\n{err}", a.join(" "));
        assert!(err.contains(want), "tirc tune {}: stderr lacks `{want}`:\n{err}", a.join(" "));
    }
}

#[test]
fn usage_errors_exit_2() {
    let (code, _, err) = tune(&["ir-examples/matmul_sweep.tir", "--target", "sim"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--schedule"), "{err}");
}

#[test]
fn rejected_candidates_are_counted_and_the_rest_checked() {
    let (code, out, err) =
        tune(&[&data("some_rejected.tir"), "-s", "threads", "--target", "sim", "--no-progress", "--seed", "5"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("2 tried: 1 ok, 0 mismatch, 0 crashed, 1 rejected"), "{out}");
    assert!(out.contains("1  loop `i_1` has N iterations but threadIdx.x allows at most N"), "{out}");
}

#[test]
fn space_overrides_and_json() {
    let (code, out, err) = tune(&[
        "ir-examples/matmul_sweep.tir",
        "-s",
        "step2",
        "--space",
        "BM=32,64;TM=4,8",
        "--space",
        "order=k_innermost,standard",
        "-p",
        "BK=32",
        "--target",
        "sim",
        "--json",
        "--seed",
        "2",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
    // BN and TN keep the file's space (2 and 3 values); BK is held at 32.
    assert_eq!(v["space_size"], 2 * 2 * 2 * 3 * 2);
    assert_eq!(v["status"], "ok");
    assert_eq!(v["target"], "sim");
    let cands = v["candidates"].as_array().expect("candidates");
    assert_eq!(cands.len(), 48);
    assert!(cands.iter().all(|c| c["params"]["BK"] == 32 && c["status"] == "ok"));
    assert_eq!(v["summary"]["order"]["standard"]["ok"], 24);
}

#[test]
fn budget_on_the_simulator_covers_every_value() {
    let (code, out, err) = tune(&[
        "ir-examples/matmul_sweep.tir",
        "-s",
        "step2",
        "--budget",
        "9",
        "--target",
        "sim",
        "--no-progress",
        "--seed",
        "4",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("strategy model; 9 tried: 9 ok"), "{out}");
    // The covering design shows every value of every parameter.
    assert!(!out.contains(" 0 / 0"), "{out}");
}

#[test]
fn space_arguments_parse() {
    let p = parse_space_args(&["BM=32,64; TM=4,8".into(), "order=\"k_innermost\"".into()]).expect("parses");
    assert_eq!(p[0], ("BM".to_string(), vec!["32".to_string(), "64".to_string()]));
    assert_eq!(p[1].0, "TM");
    assert_eq!(p[2], ("order".to_string(), vec!["\"k_innermost\"".to_string()]));
    let src = read(&root().join("ir-examples/matmul_sweep.tir"));
    let m = tirc::compile::load(&src, &[]).expect("loads");
    let def = m.schedule("step2").expect("step2");
    let s = Space::resolve(def, &p, &[]).expect("resolves");
    assert_eq!(s.params[5].1, vec![ParamValue::Str("k_innermost".into())]);
    assert_eq!(s.size(), Some(2 * 2 * 2 * 2 * 3));
    let c = s.candidates();
    assert_eq!(c.len(), 48);
    assert_eq!(s.label(&c[0]), "BM=32 BN=32 BK=32 TM=4 TN=2");
}

fn record(key: &Key, bm: i64, status: Status, ms: Option<f64>) -> Record {
    Record {
        key: key.clone(),
        params: vec![("BM".into(), ParamValue::Int(bm)), ("order".into(), ParamValue::Str("k_innermost".into()))],
        status,
        reason: None,
        time_ms: ms,
        gflops: None,
        rel_err: Some(1e-7),
        compile_s: Some(0.5),
        cublas_ms: None,
        when: 1,
    }
}

#[test]
fn the_database_round_trips_and_gives_the_best_correct_record() {
    let dir = std::env::temp_dir().join(format!("tirc-tune-test-{}", std::process::id()));
    let path: PathBuf = dir.join("db.jsonl");
    let _ = std::fs::remove_file(&path);
    let src = read(&root().join("ir-examples/matmul_sweep.tir"));
    let m = tirc::compile::load(&src, &[]).expect("loads");
    let auto = tirc::compile::AlignMode::Auto;
    let key = tirc::tune::key(&src, &m, "matmul", "step2", "Test GPU", &[], auto);
    let mut db = Db::open(&path).expect("a missing file is an empty database");
    db.append(record(&key, 32, Status::Ok, Some(2.0))).expect("writes");
    db.append(record(&key, 64, Status::Mismatch, Some(0.1))).expect("writes");
    db.append(record(&key, 128, Status::Ok, Some(1.5))).expect("writes");
    std::fs::write(&path, std::fs::read_to_string(&path).expect("reads") + "not json\n").expect("writes");
    let db = Db::open(&path).expect("reads");
    assert_eq!(db.records.len(), 3);
    assert_eq!(db.skipped, 1);
    let want = [("order".to_string(), ParamValue::Str("k_innermost".into())), ("BM".to_string(), ParamValue::Int(64))];
    assert_eq!(db.find(&key, &want).map(|r| r.status), Some(Status::Mismatch));
    // The fastest record is wrong: the best is the fastest correct one.
    let best = db.best(&key, false).expect("a best record");
    assert_eq!(best.params[0].1, ParamValue::Int(128));
    let other = Key { gpu: "Other GPU".into(), ..key.clone() };
    assert!(db.best(&other, false).is_none());
    assert!(db.best(&other, true).is_some(), "on the simulator any GPU's tuning serves");
    // `tirc run --tuned` reads the same record; another file content does not.
    let (params, r) = tirc::tune::tuned_params(&path, &src, &[], "step2", Some("Test GPU"), auto).expect("tuned");
    assert_eq!(params, vec![("BM".to_string(), "128".to_string()), ("order".to_string(), "k_innermost".to_string())]);
    assert_eq!(r.time_ms, Some(1.5));
    let edited = src.clone() + "\n# edited\n";
    let e = tirc::tune::tuned_params(&path, &edited, &[], "step2", None, auto).expect_err("another file");
    assert!(e.contains("holds no correct, timed candidate"), "{e}");
    let e = tirc::tune::tuned_params(&path, &src, &[("M".into(), 4096)], "step2", None, auto).expect_err("other sizes");
    assert!(e.contains("at these sizes"), "{e}");
    // Records tuned with another `--aligned-copies` are another problem's;
    // a record written before the mode was kept is `auto`'s.
    let never = tirc::compile::AlignMode::Never;
    let e = tirc::tune::tuned_params(&path, &src, &[], "step2", None, never).expect_err("another mode");
    assert!(e.contains("aligned-copies never"), "{e}");
    let line = std::fs::read_to_string(&path).expect("reads").lines().next().unwrap_or_default().to_string();
    assert!(line.contains("\"aligned_copies\":\"auto\""), "{line}");
    let old = line.replace(",\"aligned_copies\":\"auto\"", "").replace("\"aligned_copies\":\"auto\",", "");
    let old_db = dir.join("old.jsonl");
    std::fs::write(&old_db, old + "\n").expect("writes");
    let (_, r) = tirc::tune::tuned_params(&old_db, &src, &[], "step2", None, auto).expect("an old record is auto's");
    assert_eq!(r.key.aligned, "auto");
    assert!(content_hash("a") != content_hash("b"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A cost proxy of the seeds' Step 2 space at 1024^3 on an H100-like GPU, for
/// comparing search strategies without a GPU. It is a rough roofline with
/// occupancy, not a measurement: k_innermost keeps the tile of C in
/// registers (each loaded element serves TM or TN FMAs), the other orders
/// reload operands per FMA; register use grows with TM*TN and limits
/// blocks per SM; the grid is quantised into waves over 132 SMs; a fixed
/// pseudo-random +-10% stands for everything else.
fn proxy_ms(v: &[(String, ParamValue)]) -> Option<f64> {
    let get = |n: &str| match v.iter().find(|(m, _)| m == n).map(|x| &x.1) {
        Some(ParamValue::Int(i)) => *i as f64,
        _ => 0.0,
    };
    let order = v.iter().find(|(n, _)| n == "order").map(|x| raw(&x.1)).unwrap_or_default();
    let (bm, bn, bk, tm, tn) = (get("BM"), get("BN"), get("BK"), get("TM"), get("TN"));
    let threads = (bm / tm) * (bn / tn);
    let regs = tm * tn + tm + tn + 24.0;
    let per_sm = (2048.0 / threads).min(65536.0 / (threads * regs)).min(32.0).floor();
    if threads > 1024.0 || per_sm < 1.0 {
        return None;
    }
    let occupancy = per_sm * threads / 2048.0;
    let loads_per_fma = if order == "k_innermost" { (tm + tn) / (tm * tn) } else { 2.0 + 8.0 / bk };
    let fma_per_thread = bm * bn * 1024.0 / threads;
    let blocks = (1024.0 / bm) * (1024.0 / bn);
    let waves = (blocks / (132.0 * per_sm)).ceil();
    let hide = (occupancy * 2.0 * (tm * tn).sqrt() / 2.0).min(1.0);
    let per_block = fma_per_thread * (1.0 + 4.0 * loads_per_fma) / hide * (1.0 + bk / 1024.0);
    let h = content_hash(&format!("{v:?}"));
    let noise = 0.9 + 0.2 * (u64::from_str_radix(&h[h.len() - 4..], 16).unwrap_or(0) as f64 / 65535.0);
    Some(waves * per_block * noise * 1e-6)
}

#[test]
fn model_guided_search_beats_random_sampling_on_the_step2_proxy() {
    let src = read(&root().join("ir-examples/matmul_sweep.tir"));
    let m = tirc::compile::load(&src, &[]).expect("loads");
    let space = Space::resolve(m.schedule("step2").expect("step2"), &[], &[]).expect("space");
    let all = space.candidates();
    let time = |c: &Vec<usize>| proxy_ms(&space.values(c));
    let mut lines = Vec::new();
    for budget in [12, 24, 48] {
        let model = replay(Strategy::Model, &space, &all, &time, budget, 4, 60);
        let random = replay(Strategy::Random, &space, &all, &time, budget, 4, 60);
        lines.push(format!(
            "budget {budget:>3}: model {:.3} ({:.0}% optimum), random {:.3} ({:.0}% optimum)",
            model.mean_ratio,
            model.found_best * 100.0,
            random.mean_ratio,
            random.found_best * 100.0
        ));
        assert!(model.mean_ratio < random.mean_ratio, "{}", lines.join("\n"));
    }
    println!("best found / optimum, mean of 60 replays on the proxy:\n{}", lines.join("\n"));
}

/// The GPU report, on made-up times: sorted by speed, the cuBLAS ratio, the
/// per-value average and best, and a fast wrong kernel never ranked.
#[test]
fn the_report_ranks_correct_candidates_only() {
    use tirc::tune::eval::Trial;
    use tirc::tune::{report, Outcome, Target};
    let src = read(&root().join("ir-examples/matmul_sweep.tir"));
    let m = tirc::compile::load(&src, &[]).expect("loads");
    let sp = parse_space_args(&["BM=32,64;order=k_innermost,standard".into()]).expect("parses");
    let space = Space::resolve(m.schedule("step2").expect("step2"), &sp, &[("TN".into(), "4".into())]).expect("space");
    let all = space.candidates();
    let trial = |i: usize, status: Status, ms: Option<f64>| Trial {
        cand: all[i].clone(),
        status,
        reason: (status != Status::Ok).then(|| "rel_err 1e0 is above the tolerance".to_string()),
        time_ms: ms,
        rel_err: Some(1e-7),
        compile_s: Some(0.1),
        block: Some([4, 8, 1]),
        resumed: false,
        reached_device: true,
    };
    // The first four candidates: TM 2 and 4, each with both orders.
    let trials = vec![
        trial(0, Status::Ok, Some(2.0)),
        trial(1, Status::Ok, Some(8.0)),
        trial(2, Status::Mismatch, Some(0.5)),
        trial(3, Status::Ok, Some(1.0)),
    ];
    let o = Outcome {
        target: Target::Cuda,
        device: Some("Test GPU".into()),
        func: "matmul".into(),
        constants: vec![("K".into(), 1024), ("M".into(), 1024), ("N".into(), 1024)],
        space_size: all.len(),
        space,
        strategy: Strategy::Exhaustive,
        trials,
        flops: 2.0 * 1024f64.powi(3),
        reference_on: "cuda",
        cublas_ms: Some(0.5),
        wall_s: 10.0,
        compile_wall_s: 4.0,
        measure_s: 6.0,
        aborted: None,
        db_path: None,
        notes: vec![],
    };
    let ranked = report::ranked(&o);
    assert_eq!(ranked.iter().map(|t| t.time_ms).collect::<Vec<_>>(), vec![Some(1.0), Some(2.0), Some(8.0)]);
    let text = report::text(&o, "ir-examples/matmul_sweep.tir", "step2");
    println!("{text}");
    let first = text.lines().find(|l| l.trim_start().starts_with("1 ")).expect("a first row");
    assert!(first.contains("1.0000") && first.contains("0.500"), "{text}");
    assert!(text.contains("WRONG RESULTS (1)"), "{text}");
    assert!(text.contains("cuBLAS SGEMM: 0.5000 ms"), "{text}");
    let per = report::per_value(&o);
    let order = per.iter().find(|(n, _)| n == "order").expect("order row");
    // k_innermost: candidates 0 and 2 (the wrong one is not averaged).
    let k = &order.1[0];
    assert_eq!((k.1, k.2), (1, 2));
    assert!((k.3.unwrap_or(0.0) - o.flops / 2.0e6).abs() < 1e-6);
}

/// `--sizes`: a function of run-time sizes is tuned at each value, one
/// report each, then the summary of one kernel for all (on the simulator,
/// which times nothing, it says there is nothing to choose).
#[test]
fn run_time_sizes_are_tuned_at_each_value() {
    let f = "ir-examples/matmul_dynamic.tir";
    let fixed = ["-p", "BM=16", "-p", "BN=16", "-p", "BK=16", "-p", "TN=4"];
    let mut args = vec![f, "-s", "step2", "--target", "sim", "--space", "TM=4,8", "--sizes", "1,m=40", "--seed", "3"];
    args.extend_from_slice(&fixed);
    args.push("--no-progress");
    let (code, out, err) = tune(&args);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("== at m=1\n") && out.contains("== at m=40\n"), "{out}");
    assert_eq!(out.matches("2 tried: 2 ok, 0 mismatch").count(), 2, "{out}");
    assert!(out.contains("== one kernel for every size"), "{out}");
    let (code, _, err) = tune(&["ir-examples/matmul.tir", "-s", "step2", "--target", "sim", "--sizes", "64"]);
    assert_eq!(code, 1);
    assert!(err.contains("this function has none"), "{err}");
    let (code, _, err) = tune(&[f, "-s", "step2", "--target", "sim", "--sizes", "m=x"]);
    assert_eq!(code, 1);
    assert!(err.contains("`x` is not an integer"), "{err}");
}

/// A function of several kernels whose intermediates have run-time sizes
/// (`pad_einsum`'s padded copies, sized at launch) tunes: its
/// intermediates take the sizes the candidates run at.
#[test]
fn several_kernels_of_run_time_sizes_tune() {
    let file = "ir-examples/linear_dynamic.tir";
    let space = "BM=32;BN=32;BK=16,32";
    let (code, out, err) = tune(&[file, "-s", "step6_padded", "--target", "sim", "--space", space, "--no-progress"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("2 ok, 0 mismatch, 0 crashed, 0 rejected"), "{out}");
}
