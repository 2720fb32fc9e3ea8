//! The tuning database: a JSON Lines file, one object per measured
//! candidate, appended (and flushed) as soon as the candidate is measured,
//! so that an interrupted run loses nothing and a rerun resumes.
//!
//! A record is keyed by the file's content hash (FNV-1a, 64 bits, of the
//! text), the function, the schedule, every module constant after `-D`, every
//! schedule parameter, and the GPU's name. Besides the key it holds the
//! status (`ok`, `mismatch`, `rejected`, `crashed`), the median time, the
//! error against the reference and the compile time. Lines that do not
//! parse are skipped and counted, never fatal.

use serde_json::{json, Map, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use tirc_ir::func::ParamValue;

/// The database file used when none is named.
pub const DEFAULT_DB: &str = "tirc-tuning.jsonl";

/// FNV-1a, 64 bits: a content hash that is stable across Rust releases.
pub fn content_hash(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.as_bytes() {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("fnv1a64:{h:016x}")
}

/// What identifies a tuning problem, less the parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Key {
    pub file_hash: String,
    pub func: String,
    pub schedule: String,
    /// Every module constant, sorted by name.
    pub constants: Vec<(String, i64)>,
    pub gpu: String,
    /// `--aligned-copies` (`auto`, `always`, `never`): what the kernels
    /// were compiled with. Records written before it was kept are `auto`.
    pub aligned: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Checked and timed.
    Ok,
    /// Ran, but its result differs from the reference.
    Mismatch,
    /// The GPU refused it (compile or launch), or the schedule did.
    Rejected,
    /// It failed while running, leaving the GPU context unusable.
    Crashed,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Mismatch => "mismatch",
            Status::Rejected => "rejected",
            Status::Crashed => "crashed",
        }
    }

    fn parse(s: &str) -> Option<Status> {
        [Status::Ok, Status::Mismatch, Status::Rejected, Status::Crashed].into_iter().find(|x| x.name() == s)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub key: Key,
    pub params: Vec<(String, ParamValue)>,
    pub status: Status,
    pub reason: Option<String>,
    pub time_ms: Option<f64>,
    pub gflops: Option<f64>,
    pub rel_err: Option<f64>,
    pub compile_s: Option<f64>,
    pub cublas_ms: Option<f64>,
    /// Seconds since the Unix epoch when it was recorded.
    pub when: u64,
}

fn param_json(v: &ParamValue) -> Value {
    match v {
        ParamValue::Int(i) => json!(i),
        ParamValue::Str(s) => json!(s),
    }
}

fn opt(v: Option<f64>) -> Value {
    match v {
        Some(x) if x.is_finite() => json!(x),
        _ => Value::Null,
    }
}

impl Record {
    pub fn to_json(&self) -> Value {
        let consts: Map<String, Value> = self.key.constants.iter().map(|(n, v)| (n.clone(), json!(v))).collect();
        let params: Map<String, Value> = self.params.iter().map(|(n, v)| (n.clone(), param_json(v))).collect();
        json!({
            "file_hash": self.key.file_hash,
            "func": self.key.func,
            "schedule": self.key.schedule,
            "constants": consts,
            "params": params,
            "gpu": self.key.gpu,
            "aligned_copies": self.key.aligned,
            "status": self.status.name(),
            "reason": self.reason,
            "time_ms": opt(self.time_ms),
            "gflops": opt(self.gflops),
            "rel_err": opt(self.rel_err),
            "compile_s": opt(self.compile_s),
            "cublas_ms": opt(self.cublas_ms),
            "when": self.when,
        })
    }

    fn from_json(v: &Value) -> Option<Record> {
        let s = |k: &str| v.get(k)?.as_str().map(str::to_string);
        let f = |k: &str| v.get(k).and_then(Value::as_f64);
        let mut constants: Vec<(String, i64)> = v
            .get("constants")?
            .as_object()?
            .iter()
            .map(|(n, x)| Some((n.clone(), x.as_i64()?)))
            .collect::<Option<_>>()?;
        constants.sort();
        // serde_json's maps keep keys sorted, so the schedule's parameter
        // order is not kept: lookups compare parameters as sets.
        let params = v
            .get("params")?
            .as_object()?
            .iter()
            .map(|(n, x)| match x {
                Value::Number(i) => Some((n.clone(), ParamValue::Int(i.as_i64()?))),
                Value::String(t) => Some((n.clone(), ParamValue::Str(t.clone()))),
                _ => None,
            })
            .collect::<Option<_>>()?;
        Some(Record {
            key: Key {
                file_hash: s("file_hash")?,
                func: s("func")?,
                schedule: s("schedule")?,
                constants,
                gpu: s("gpu")?,
                aligned: s("aligned_copies").unwrap_or_else(|| "auto".into()),
            },
            params,
            status: Status::parse(&s("status")?)?,
            reason: s("reason"),
            time_ms: f("time_ms"),
            gflops: f("gflops"),
            rel_err: f("rel_err"),
            compile_s: f("compile_s"),
            cublas_ms: f("cublas_ms"),
            when: v.get("when").and_then(Value::as_u64).unwrap_or(0),
        })
    }

    /// Whether the record is of candidate `params` (every parameter equal,
    /// in any order).
    pub fn is_for(&self, params: &[(String, ParamValue)]) -> bool {
        self.params.len() == params.len() && params.iter().all(|p| self.params.contains(p))
    }
}

/// The records of a database file, in the order they were written.
pub struct Db {
    pub path: PathBuf,
    pub records: Vec<Record>,
    /// Lines that did not parse.
    pub skipped: usize,
}

impl Db {
    /// Reads `path`; a missing file is an empty database.
    pub fn open(path: &Path) -> Result<Db, String> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(format!("cannot read the tuning database {}: {e}", path.display())),
        };
        let mut records = Vec::new();
        let mut skipped = 0;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            match serde_json::from_str::<Value>(line).ok().as_ref().and_then(Record::from_json) {
                Some(r) => records.push(r),
                None => skipped += 1,
            }
        }
        Ok(Db { path: path.to_path_buf(), records, skipped })
    }

    /// The latest record of this candidate.
    pub fn find(&self, key: &Key, params: &[(String, ParamValue)]) -> Option<&Record> {
        self.records.iter().rev().find(|r| &r.key == key && r.is_for(params))
    }

    /// Appends a record to the file (flushed at once) and to memory.
    pub fn append(&mut self, r: Record) -> Result<(), String> {
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(|e| format!("cannot open the tuning database {}: {e}", self.path.display()))?;
        writeln!(f, "{}", r.to_json())
            .and_then(|_| f.flush())
            .map_err(|e| format!("cannot write the tuning database {}: {e}", self.path.display()))?;
        self.records.push(r);
        Ok(())
    }

    /// The fastest correct record for `key`; with `any_gpu`, `key.gpu` is
    /// ignored and the GPU of the problem's most recent record is used.
    pub fn best(&self, key: &Key, any_gpu: bool) -> Option<&Record> {
        let same = |r: &&Record| {
            r.key.file_hash == key.file_hash
                && r.key.func == key.func
                && r.key.schedule == key.schedule
                && r.key.constants == key.constants
                && r.key.aligned == key.aligned
        };
        let gpu = if any_gpu { self.records.iter().rev().find(same)?.key.gpu.clone() } else { key.gpu.clone() };
        self.records
            .iter()
            .filter(same)
            .filter(|r| r.key.gpu == gpu && r.status == Status::Ok)
            .filter(|r| r.time_ms.is_some())
            .min_by(|a, b| a.time_ms.unwrap_or(f64::MAX).total_cmp(&b.time_ms.unwrap_or(f64::MAX)))
    }
}

/// Seconds since the Unix epoch.
pub fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}
