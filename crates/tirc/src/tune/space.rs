//! The space a tuning run searches: for every parameter of the schedule, the
//! values it may take.
//!
//! A parameter's values come, in order of precedence, from `-p NAME=V` (one
//! value), from `--space NAME=V1,V2,...`, from the schedule's own
//! `space={...}`, and else from its default (one value). Every value is
//! checked against the parameter's type (the type of its default). A point of
//! the space, a [`Candidate`], is one index per parameter.

use tirc_ir::diag::suggest;
use tirc_ir::func::{ParamValue, ScheduleDef};

/// Spaces larger than this are refused rather than enumerated.
pub const MAX_CANDIDATES: usize = 1_000_000;

/// Every parameter of a schedule with its candidate values, in the order
/// the schedule declares its parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Space {
    pub params: Vec<(String, Vec<ParamValue>)>,
}

/// One point of a [`Space`]: the index of each parameter's value.
pub type Candidate = Vec<usize>;

/// Parses `--space` arguments: each is `NAME=V1,V2,...`, several joined by
/// `;`, and a parameter may be named once in all of them.
pub fn parse_space_args(args: &[String]) -> Result<Vec<(String, Vec<String>)>, String> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for arg in args {
        if arg.trim().is_empty() {
            return Err("--space is empty: expected NAME=V1,V2,... (several joined by `;`)".into());
        }
        for part in arg.split(';') {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let Some((name, values)) = part.split_once('=') else {
                return Err(format!("--space `{part}` is malformed: expected NAME=V1,V2,..."));
            };
            let name = name.trim();
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!("--space `{part}` is malformed: `{name}` is not a parameter name"));
            }
            let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
            if values.iter().any(|v| v.is_empty()) {
                return Err(format!("--space `{part}` is malformed: a value of `{name}` is empty"));
            }
            if out.iter().any(|(n, _)| n == name) {
                return Err(format!("--space names `{name}` twice"));
            }
            out.push((name.to_string(), values));
        }
    }
    Ok(out)
}

/// A value given as text, typed by the parameter's default.
fn typed(def: &ScheduleDef, name: &str, raw: &str, default: &ParamValue, from: &str) -> Result<ParamValue, String> {
    match default {
        ParamValue::Int(_) => raw.parse::<i64>().map(ParamValue::Int).map_err(|_| {
            format!("{from}: `{raw}` is not an integer, and parameter `{name}` of `{}` is an integer", def.name)
        }),
        ParamValue::Str(_) => {
            let s = raw.strip_prefix('"').and_then(|s| s.strip_suffix('"')).unwrap_or(raw);
            Ok(ParamValue::Str(s.to_string()))
        }
    }
}

fn unknown(def: &ScheduleDef, name: &str, from: &str) -> String {
    let names: Vec<&str> = def.params.iter().map(|p| p.name.as_str()).collect();
    let mut m = if names.is_empty() {
        format!("{from}: schedule `{}` has no parameter `{name}`; it has no parameters", def.name)
    } else {
        format!("{from}: schedule `{}` has no parameter `{name}`; its parameters are {}", def.name, names.join(", "))
    };
    if let Some(s) = suggest(name, names.iter().copied()) {
        m.push_str(&format!(" (did you mean `{s}`?)"));
    }
    m
}

impl Space {
    /// The space to search for schedule `def`, from its `space={...}`, the
    /// command line's `--space` (parsed) and `-p` values.
    pub fn resolve(
        def: &ScheduleDef,
        space_args: &[(String, Vec<String>)],
        fixed: &[(String, String)],
    ) -> Result<Space, String> {
        for (name, _) in space_args {
            if !def.params.iter().any(|p| &p.name == name) {
                return Err(unknown(def, name, "--space"));
            }
        }
        for (name, _) in fixed {
            if !def.params.iter().any(|p| &p.name == name) {
                return Err(unknown(def, name, "-p"));
            }
            if space_args.iter().any(|(n, _)| n == name) {
                return Err(format!("`{name}` is given both by -p (one value) and by --space (several): give one"));
            }
        }
        if def.space.is_empty() && space_args.is_empty() {
            return Err(format!(
                "schedule `{}` declares no space and --space gives none: there is nothing to tune (write \
                 `@tirc.schedule(\"{}\", space={{\"NAME\": [V1, V2]}})` or pass --space NAME=V1,V2)",
                def.name, def.func
            ));
        }
        let mut params = Vec::new();
        for p in &def.params {
            let values = if let Some((_, raw)) = fixed.iter().rev().find(|(n, _)| n == &p.name) {
                vec![typed(def, &p.name, raw, &p.default, &format!("-p {}", p.name))?]
            } else if let Some((_, raws)) = space_args.iter().find(|(n, _)| n == &p.name) {
                let from = format!("--space {}", p.name);
                raws.iter().map(|r| typed(def, &p.name, r, &p.default, &from)).collect::<Result<Vec<_>, _>>()?
            } else if let Some((_, vs)) = def.space.iter().find(|(n, _)| n == &p.name) {
                for v in vs {
                    if std::mem::discriminant(v) != std::mem::discriminant(&p.default) {
                        return Err(format!(
                            "the space of `{}` gives `{}` the value {v}, but its default {} is of another type",
                            def.name, p.name, p.default
                        ));
                    }
                }
                vs.clone()
            } else {
                vec![p.default.clone()]
            };
            if values.is_empty() {
                return Err(format!("the space gives `{}` no values", p.name));
            }
            for (i, v) in values.iter().enumerate() {
                if values[..i].contains(v) {
                    return Err(format!("the space lists the value {v} of `{}` twice", p.name));
                }
            }
            params.push((p.name.clone(), values));
        }
        for (name, _) in &def.space {
            if !def.params.iter().any(|p| &p.name == name) {
                return Err(unknown(def, name, "space"));
            }
        }
        let space = Space { params };
        if space.size().is_none() {
            return Err(format!("the space has more than {MAX_CANDIDATES} candidates: narrow it with --space or -p"));
        }
        Ok(space)
    }

    /// The number of candidates, or `None` above [`MAX_CANDIDATES`].
    pub fn size(&self) -> Option<usize> {
        let mut n: usize = 1;
        for (_, vs) in &self.params {
            n = n.checked_mul(vs.len()).filter(|n| *n <= MAX_CANDIDATES)?;
        }
        Some(n)
    }

    /// Every candidate, the last parameter varying fastest.
    pub fn candidates(&self) -> Vec<Candidate> {
        let mut out = vec![vec![]];
        for (_, vs) in &self.params {
            let mut next = Vec::with_capacity(out.len() * vs.len());
            for c in &out {
                for i in 0..vs.len() {
                    let mut c = c.clone();
                    c.push(i);
                    next.push(c);
                }
            }
            out = next;
        }
        out
    }

    /// The value of each parameter at `c`.
    pub fn values(&self, c: &Candidate) -> Vec<(String, ParamValue)> {
        self.params.iter().zip(c).map(|((n, vs), i)| (n.clone(), vs[*i].clone())).collect()
    }

    /// The candidate as `-p` overrides for the compile pipeline.
    pub fn overrides(&self, c: &Candidate) -> Vec<(String, String)> {
        self.values(c).into_iter().map(|(n, v)| (n, raw(&v))).collect()
    }

    /// The parameters that take more than one value: the ones the tables
    /// show.
    pub fn swept(&self) -> Vec<usize> {
        (0..self.params.len()).filter(|i| self.params[*i].1.len() > 1).collect()
    }

    /// `BM=32 TM=8 order=k_innermost`, the swept parameters only.
    pub fn label(&self, c: &Candidate) -> String {
        self.swept()
            .iter()
            .map(|&p| format!("{}={}", self.params[p].0, raw(&self.params[p].1[c[p]])))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The candidate whose values are `vals` (by name), if it is a point of
    /// the space.
    pub fn find(&self, vals: &[(String, ParamValue)]) -> Option<Candidate> {
        self.params
            .iter()
            .map(|(n, vs)| {
                let v = &vals.iter().find(|(m, _)| m == n)?.1;
                vs.iter().position(|x| x == v)
            })
            .collect()
    }
}

/// A value as `-p` takes it.
pub fn raw(v: &ParamValue) -> String {
    match v {
        ParamValue::Int(i) => i.to_string(),
        ParamValue::Str(s) => s.clone(),
    }
}
