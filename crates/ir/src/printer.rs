//! The printer: IR to TVMScript text, in the form TVM prints it.
//!
//! What it prints the parser reads back to a structurally equal IR
//! (`tests/roundtrip.rs`). Scheduled functions print with blocks, `T.grid`,
//! `T.axis.remap` and `T.thread_binding` as `mod.script()` does; lowered ones
//! with `T.launch_thread` and flat buffers, as TVM's lowered listings do.
//! Names are made unique: a second variable called `i` prints as `i_1`.

use crate::buffer::{Buffer, Scope};
use crate::dtype::DType;
use crate::expr::{BinOp, Expr, Var};
use crate::func::{Module, PrimFunc};
use crate::stmt::{Attr, Block, BlockRealize, ForKind, IterKind, Stmt};
use std::collections::{HashMap, HashSet};
use std::fmt::Write;

/// Prints one function, without the import header.
pub fn print_func(f: &PrimFunc) -> String {
    let mut p = Printer::default();
    p.func(f);
    p.out
}

/// Prints every function of a module, after the import line TVM prints.
pub fn print_module(m: &Module) -> String {
    let mut out = String::from("# from tvm.script import tir as T\n");
    for f in &m.funcs {
        out.push('\n');
        out.push_str(&print_func(f));
    }
    out
}

/// The canonical text of a whole file: `src` with each `@T.prim_func`
/// definition (`defs`: name and span, from `resolve::prim_func_defs`)
/// replaced by the print of the function of that name in `module`, indented
/// as the definition was. Everything else (comments, module constants,
/// schedules, an `@I.ir_module` class line) is kept as written. Sizes print
/// as numbers: a function that used module constants prints with their
/// values, as TVM prints it.
pub fn format_file(src: &str, defs: &[(String, tirc_parser::ast::Span)], module: &Module) -> String {
    let mut out = String::new();
    let mut at = 0;
    let mut used = vec![false; module.funcs.len()];
    for (name, span) in defs {
        // Functions of one name are matched in order.
        let Some(i) = module.funcs.iter().enumerate().position(|(i, f)| !used[i] && &f.name == name) else {
            continue;
        };
        used[i] = true;
        let (Some(before), Some(_)) = (src.get(at..span.start), src.get(span.start..span.end)) else {
            continue;
        };
        out.push_str(before);
        let line_start = src[..span.start].rfind('\n').map_or(0, |p| p + 1);
        // The function's own indentation as written (a tab stays a tab,
        // which counted as one space made text `check` refuses), or
        // spaces to its column where code comes before it on the line.
        let prefix = &src[line_start..span.start];
        let indent = if prefix.chars().all(|c| c == ' ' || c == '\t') {
            prefix.to_string()
        } else {
            " ".repeat(prefix.chars().count())
        };
        let text = print_func(&module.funcs[i]);
        for (n, line) in text.lines().enumerate() {
            if n > 0 {
                out.push('\n');
                if !line.is_empty() {
                    out.push_str(&indent);
                }
            }
            out.push_str(line);
        }
        at = span.end;
    }
    out.push_str(src.get(at..).unwrap_or(""));
    out
}

/// Prints one expression, naming variables as they are named.
pub fn print_expr(e: &Expr) -> String {
    let mut p = Printer::default();
    p.expr(e, 0)
}

/// Prints one statement at indentation zero.
pub fn print_stmt(s: &Stmt) -> String {
    let mut p = Printer::default();
    p.stmt(s, 0);
    p.out
}

#[derive(Default)]
struct Printer {
    out: String,
    var_names: HashMap<usize, String>,
    buf_names: HashMap<usize, String>,
    taken: HashSet<String>,
    /// Constant extents of the loops printed so far, for `T.axis.remap`.
    loop_extents: HashMap<usize, i64>,
}

fn python_float(v: f64) -> String {
    if v.is_nan() {
        "\"nan\"".into()
    } else if v.is_infinite() {
        if v > 0.0 { "\"inf\"" } else { "\"-inf\"" }.into()
    } else {
        let s = format!("{v:?}");
        if s.contains(['.', 'e', 'E']) {
            s
        } else {
            format!("{s}.0")
        }
    }
}

fn binop_syntax(op: BinOp, dtype: DType) -> Option<(&'static str, u8)> {
    // Python precedence levels, higher binds tighter.
    Some(match op {
        BinOp::Or => (" or ", 1),
        BinOp::And => (" and ", 2),
        BinOp::Eq => (" == ", 4),
        BinOp::Ne => (" != ", 4),
        BinOp::Lt => (" < ", 4),
        BinOp::Le => (" <= ", 4),
        BinOp::Gt => (" > ", 4),
        BinOp::Ge => (" >= ", 4),
        BinOp::Add => (" + ", 6),
        BinOp::Sub => (" - ", 6),
        BinOp::Mul => (" * ", 7),
        BinOp::Div if dtype.is_float() => (" / ", 7),
        BinOp::FloorDiv => (" // ", 7),
        BinOp::FloorMod => (" % ", 7),
        BinOp::Div | BinOp::Min | BinOp::Max => return None,
        // Printed as TVM's functions: no precedence to get wrong.
        BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr => return None,
    })
}

impl Printer {
    fn fresh(&mut self, base: &str) -> String {
        let base = if base.is_empty() { "v" } else { base };
        let mut name = base.to_string();
        let mut n = 1;
        while self.taken.contains(&name) || is_reserved(&name) {
            name = format!("{base}_{n}");
            n += 1;
        }
        self.taken.insert(name.clone());
        name
    }

    fn def_var(&mut self, v: &Var) -> String {
        if let Some(n) = self.var_names.get(&v.key()) {
            return n.clone();
        }
        let n = self.fresh(v.name());
        self.var_names.insert(v.key(), n.clone());
        n
    }

    fn var(&mut self, v: &Var) -> String {
        self.def_var(v)
    }

    fn buf(&mut self, b: &Buffer) -> String {
        if let Some(n) = self.buf_names.get(&b.key()) {
            return n.clone();
        }
        let n = self.fresh(b.name());
        self.buf_names.insert(b.key(), n.clone());
        n
    }

    fn line(&mut self, indent: usize, text: &str) {
        for _ in 0..indent {
            self.out.push_str("    ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn shape(&mut self, b: &Buffer) -> String {
        let dims: Vec<String> = b.shape().iter().map(|e| self.expr(e, 0)).collect();
        if dims.len() == 1 {
            format!("({},)", dims[0])
        } else {
            format!("({})", dims.join(", "))
        }
    }

    fn buffer_decl(&mut self, b: &Buffer) -> String {
        let shape = self.shape(b);
        let mut s = format!("{shape}, \"{}\"", b.dtype());
        if b.scope() != Scope::Global {
            let _ = write!(s, ", scope=\"{}\"", b.scope().name());
        }
        if !b.dim_align().is_empty() {
            // tirc's own keyword: the padding `sch.storage_align` asked for,
            // kept until `flatten_buffers` lays the buffer out with it.
            let items: Vec<String> =
                b.dim_align().iter().map(|a| format!("[{}, {}, {}]", a.axis, a.factor, a.offset)).collect();
            let _ = write!(s, ", dim_align=[{}]", items.join(", "));
        }
        if b.swizzle() != 0 {
            // tirc's own keyword: the layout `sch.storage_swizzle` asked
            // for, applied to each element's address.
            let _ = write!(s, ", swizzle={}", b.swizzle());
        }
        s
    }

    fn func(&mut self, f: &PrimFunc) {
        use crate::func::Param;
        // The parameters in the source's order (a size or a scalar given as
        // a parameter stays one), then any the signature does not name (a
        // pass's additions), buffers before scalars.
        let mut order: Vec<Param> = f
            .signature
            .iter()
            .copied()
            .filter(|p| match *p {
                Param::Buffer(i) => i < f.params.len(),
                Param::Size(i) => i < f.sizes.len(),
                Param::Scalar(i) => i < f.scalars.len(),
            })
            .collect();
        for (i, _) in f.params.iter().enumerate() {
            if !order.contains(&Param::Buffer(i)) {
                order.push(Param::Buffer(i));
            }
        }
        for (i, _) in f.scalars.iter().enumerate() {
            if !order.contains(&Param::Scalar(i)) {
                order.push(Param::Scalar(i));
            }
        }
        // As TVM prints a function of run-time sizes: the sizes that are no
        // parameter are declared first in the body, and a buffer whose shape
        // names one of them (or a size parameter listed after it) is a
        // handle, matched after the declarations.
        let sizes: Vec<String> = f
            .sizes
            .iter()
            .enumerate()
            .filter(|(i, _)| !order.contains(&Param::Size(*i)))
            .map(|(_, v)| format!("{} = T.{}()", self.var(v), v.dtype()))
            .collect();
        let mut params = Vec::new();
        let mut matched = Vec::new();
        let mut listed: Vec<&crate::expr::Var> = Vec::new();
        for p in order {
            match p {
                Param::Buffer(i) => {
                    let b = &f.params[i];
                    let name = self.buf(b);
                    let decl = self.buffer_decl(b);
                    let unlisted = |e: &Expr| f.sizes.iter().any(|v| e.uses(v) && !listed.contains(&v));
                    if b.shape().iter().any(unlisted) {
                        params.push(format!("var_{name}: T.handle"));
                        matched.push(format!("{name} = T.match_buffer(var_{name}, {decl})"));
                    } else {
                        params.push(format!("{name}: T.Buffer({decl})"));
                    }
                }
                Param::Size(i) => {
                    let v = &f.sizes[i];
                    params.push(format!("{}: T.{}", self.var(v), v.dtype()));
                    listed.push(v);
                }
                Param::Scalar(i) => {
                    let v = &f.scalars[i];
                    params.push(format!("{}: T.{}", self.var(v), v.dtype()));
                }
            }
        }
        self.line(0, "@T.prim_func");
        self.line(0, &format!("def {}({}):", f.name, params.join(", ")));
        if !f.attrs.is_empty() {
            let a = self.attr_dict(&f.attrs);
            self.line(1, &format!("T.func_attr({a})"));
        }
        for l in sizes.iter().chain(&matched) {
            self.line(1, l);
        }
        match &f.body {
            Stmt::Block(r) if r.block.name == "root" && is_plain_root(r) => {
                for b in &r.block.alloc_buffers {
                    let name = self.buf(b);
                    let decl = self.buffer_decl(b);
                    self.line(1, &format!("{name} = T.alloc_buffer({decl})"));
                }
                self.stmt(&r.block.body, 1);
            }
            body => self.stmt(body, 1),
        }
    }

    fn attr(&mut self, a: &Attr) -> String {
        match a {
            Attr::Int(v) => v.to_string(),
            Attr::Float(v) => python_float(*v),
            Attr::Bool(b) => format!("T.bool({})", if *b { "True" } else { "False" }),
            Attr::Str(s) => format!("{s:?}"),
            Attr::List(v) => {
                let items: Vec<String> = v.iter().map(|x| self.attr(x)).collect();
                format!("[{}]", items.join(", "))
            }
            Attr::Dict(d) => self.attr_dict(d),
            Attr::Buffer(n) => n.clone(),
            Attr::Target(t) => format!("T.target({})", self.attr(t)),
        }
    }

    fn attr_dict(&mut self, attrs: &[(String, Attr)]) -> String {
        let items: Vec<String> = attrs.iter().map(|(k, v)| format!("{k:?}: {}", self.attr(v))).collect();
        format!("{{{}}}", items.join(", "))
    }

    /// Prints `s`; a sequence prints its items in order.
    fn stmt(&mut self, s: &Stmt, ind: usize) {
        match s {
            Stmt::Seq(items) => {
                for (i, item) in items.iter().enumerate() {
                    let last = i + 1 == items.len();
                    self.stmt_in_seq(item, ind, last);
                }
            }
            _ => self.stmt_in_seq(s, ind, true),
        }
    }

    /// Prints one statement; `last` says whether it ends its sequence, so
    /// that scoped statements can print in TVM's concise form, their body
    /// following at the same indentation.
    fn stmt_in_seq(&mut self, s: &Stmt, ind: usize, last: bool) {
        match s {
            Stmt::Seq(_) => self.stmt(s, ind),
            Stmt::NoOp => self.line(ind, "T.evaluate(0)"),
            Stmt::Barrier => self.line(ind, "T.tvm_storage_sync(\"shared\")"),
            Stmt::AsyncCommit => self.line(ind, "T.ptx_commit_group()"),
            Stmt::AsyncWait(n) => self.line(ind, &format!("T.ptx_wait_group({n})")),
            Stmt::Wmma(w) => {
                let mut args: Vec<String> = Vec::new();
                if let crate::wmma::WmmaOp::Wgmma { n, .. } = w.op {
                    args.push(n.to_string());
                }
                args.extend(w.tiles.iter().map(|t| {
                    let b = self.buf(&t.buffer);
                    format!("{b}[{}]", self.subscript(&t.indices))
                }));
                if let Some(v) = &w.value {
                    args.push(self.expr(v, 0));
                }
                if let crate::wmma::WmmaOp::Load { col_major } = w.op {
                    args.push(format!("\"{}\"", if col_major { "col_major" } else { "row_major" }));
                }
                if w.op == (crate::wmma::WmmaOp::Mma { b_trans: true }) {
                    args.push("\"b_trans\"".into());
                }
                if let crate::wmma::WmmaOp::Wgmma { trans_b: true, .. } = w.op {
                    args.push("\"trans_b\"".into());
                }
                if let crate::wmma::WmmaOp::MmaSync { trans_a, trans_b } = w.op {
                    for (flag, name) in [(trans_a, "trans_a"), (trans_b, "trans_b")] {
                        if flag {
                            args.push(format!("\"{name}\""));
                        }
                    }
                }
                if let crate::wmma::WmmaOp::LdMatrix { b, trans } = w.op {
                    args.push(format!("\"{}\"", if b { "b" } else { "a" }));
                    if trans {
                        args.push("\"trans\"".into());
                    }
                }
                let ldm: Vec<String> = w.tiles.iter().filter_map(|t| t.ldm.as_ref()).map(|e| self.expr(e, 0)).collect();
                if !ldm.is_empty() {
                    args.push(format!("ldm=[{}]", ldm.join(", ")));
                }
                if let Some((r, c)) = &w.bound {
                    args.push(format!("bound=[{}, {}]", self.expr(r, 0), self.expr(c, 0)));
                }
                self.line(ind, &format!("T.{}({})", w.op.name(), args.join(", ")));
            }
            Stmt::Store { buffer, indices, value } => {
                let b = self.buf(buffer);
                let idx = self.subscript(indices);
                let v = self.expr(value, 0);
                self.line(ind, &format!("{b}[{idx}] = {v}"));
            }
            Stmt::If { cond, then, orelse } => {
                let c = self.expr(cond, 0);
                self.line(ind, &format!("if {c}:"));
                self.stmt(then, ind + 1);
                if let Some(e) = orelse {
                    self.line(ind, "else:");
                    self.stmt(e, ind + 1);
                }
            }
            Stmt::Let { var, value, body } => {
                let v = self.expr(value, 0);
                let n = self.def_var(var);
                let t = var.dtype();
                if last {
                    self.line(ind, &format!("{n}: T.{t} = {v}"));
                    self.stmt(body, ind);
                } else {
                    self.line(ind, &format!("with T.LetStmt({v}) as {n}:"));
                    self.stmt(body, ind + 1);
                }
            }
            Stmt::Allocate { buffer, body } => {
                let n = self.buf(buffer);
                let decl = self.buffer_decl(buffer);
                if last {
                    self.line(ind, &format!("{n} = T.decl_buffer({decl})"));
                    self.stmt(body, ind);
                } else {
                    self.line(ind, &format!("with T.decl_buffer({decl}) as {n}:"));
                    self.stmt(body, ind + 1);
                }
            }
            Stmt::Launch { var, tag, extent, body } => {
                let e = self.expr(extent, 0);
                let n = self.def_var(var);
                let tag = tag.name();
                if last {
                    self.line(ind, &format!("{n} = T.launch_thread(\"{tag}\", {e})"));
                    self.stmt(body, ind);
                } else {
                    self.line(ind, &format!("with T.launch_thread(\"{tag}\", {e}) as {n}:"));
                    self.stmt(body, ind + 1);
                }
            }
            Stmt::For(_) => self.loops(s, ind),
            Stmt::Block(r) => self.block(r, ind),
        }
    }

    fn loops(&mut self, s: &Stmt, ind: usize) {
        let Stmt::For(l) = s else { return };
        let plain =
            |l: &crate::stmt::For| l.kind == ForKind::Serial && l.annotations.is_empty() && l.min.as_int() == Some(0);
        if plain(l) {
            // Collapse a chain of plain serial loops into `T.grid`.
            let mut chain = vec![&**l];
            while let Stmt::For(inner) = &chain[chain.len() - 1].body {
                if !plain(inner) || chain.iter().any(|o| inner.extent.uses(&o.var)) {
                    break;
                }
                chain.push(inner);
            }
            let exts: Vec<String> = chain.iter().map(|l| self.expr(&l.extent, 0)).collect();
            let names: Vec<String> = chain.iter().map(|l| self.def_var(&l.var)).collect();
            for l in &chain {
                if let Some(e) = l.extent.as_int() {
                    self.loop_extents.insert(l.var.key(), e);
                }
            }
            if chain.len() == 1 {
                self.line(ind, &format!("for {} in range({}):", names[0], exts[0]));
            } else {
                self.line(ind, &format!("for {} in T.grid({}):", names.join(", "), exts.join(", ")));
            }
            let body = &chain[chain.len() - 1].body;
            self.stmt(body, ind + 1);
            return;
        }
        let min = self.expr(&l.min, 0);
        let ext = self.expr(&l.extent, 0);
        let n = self.def_var(&l.var);
        if let Some(e) = l.extent.as_int() {
            self.loop_extents.insert(l.var.key(), e);
        }
        let mut args = if l.min.as_int() == Some(0) {
            ext
        } else {
            let end = self.expr(&(l.min.clone() + l.extent.clone()), 0);
            format!("{min}, {end}")
        };
        // A virtual thread prints as TVM writes it (the annotation that
        // marks it is tirc's: crate::stmt::VTHREAD).
        let vthread = match (l.kind, l.annotations.first()) {
            (ForKind::Unrolled, Some((k, crate::stmt::Attr::Str(axis)))) if k == crate::stmt::VTHREAD => Some(axis),
            _ => None,
        };
        let func = match l.kind {
            _ if vthread.is_some() => {
                let _ = write!(args, ", thread=\"{}\"", vthread.map_or("", |a| a.as_str()));
                "thread_binding"
            }
            ForKind::Serial => "serial",
            ForKind::Parallel => "parallel",
            ForKind::Vectorized => "vectorized",
            ForKind::Unrolled => "unroll",
            ForKind::ThreadBinding(t) => {
                let _ = write!(args, ", thread=\"{}\"", t.name());
                "thread_binding"
            }
        };
        let rest = &l.annotations[vthread.is_some() as usize..];
        if !rest.is_empty() {
            let a = self.attr_dict(rest);
            let _ = write!(args, ", annotations={a}");
        }
        self.line(ind, &format!("for {n} in T.{func}({args}):"));
        self.stmt(&l.body, ind + 1);
    }

    fn block(&mut self, r: &BlockRealize, ind: usize) {
        let b = &r.block;
        self.line(ind, &format!("with T.block({:?}):", b.name));
        let ind = ind + 1;
        self.axes(r, ind);
        if r.predicate.as_bool() != Some(true) {
            let p = self.expr(&r.predicate, 0);
            self.line(ind, &format!("T.where({p})"));
        }
        self.block_signature(b, ind);
        if let Some(init) = &b.init {
            self.line(ind, "with T.init():");
            self.stmt(init, ind + 1);
        }
        self.stmt(&b.body, ind);
    }

    fn block_signature(&mut self, b: &Block, ind: usize) {
        let reads: Vec<String> = b.reads.iter().map(|r| self.region(r)).collect();
        self.line(ind, &format!("T.reads({})", reads.join(", ")));
        let writes: Vec<String> = b.writes.iter().map(|r| self.region(r)).collect();
        self.line(ind, &format!("T.writes({})", writes.join(", ")));
        if !b.annotations.is_empty() {
            let a = self.attr_dict(&b.annotations);
            self.line(ind, &format!("T.block_attr({a})"));
        }
        for buf in &b.alloc_buffers {
            let n = self.buf(buf);
            let decl = self.buffer_decl(buf);
            self.line(ind, &format!("{n} = T.alloc_buffer({decl})"));
        }
    }

    fn axes(&mut self, r: &BlockRealize, ind: usize) {
        let b = &r.block;
        // `T.axis.remap` when every value is a distinct loop variable and
        // every domain starts at zero.
        let remap = !b.iter_vars.is_empty()
            && b.iter_vars.iter().zip(&r.iter_values).all(|(iv, v)| {
                iv.dom.min.as_int() == Some(0)
                    && v.as_var().is_some_and(|x| {
                        iv.dom.extent.as_int().is_some()
                            && self.loop_extents.get(&x.key()) == iv.dom.extent.as_int().as_ref()
                    })
            })
            && b.iter_vars.iter().all(|iv| iv.kind != IterKind::Opaque);
        if remap {
            let kinds: String =
                b.iter_vars.iter().map(|iv| if iv.kind == IterKind::Spatial { 'S' } else { 'R' }).collect();
            let vals: Vec<String> = r.iter_values.iter().map(|v| self.expr(v, 0)).collect();
            let names: Vec<String> = b.iter_vars.iter().map(|iv| self.def_var(&iv.var)).collect();
            self.line(ind, &format!("{} = T.axis.remap(\"{kinds}\", [{}])", names.join(", "), vals.join(", ")));
            return;
        }
        for (iv, v) in b.iter_vars.iter().zip(&r.iter_values) {
            let kind = match iv.kind {
                IterKind::Spatial => "spatial",
                IterKind::Reduce => "reduce",
                IterKind::Opaque => "opaque",
            };
            let dom = if iv.dom.min.as_int() == Some(0) {
                self.expr(&iv.dom.extent, 0)
            } else {
                let lo = self.expr(&iv.dom.min, 0);
                let hi = self.expr(&(iv.dom.min.clone() + iv.dom.extent.clone()), 0);
                format!("({lo}, {hi})")
            };
            let val = self.expr(v, 0);
            let n = self.def_var(&iv.var);
            self.line(ind, &format!("{n} = T.axis.{kind}({dom}, {val})"));
        }
    }

    fn region(&mut self, r: &crate::stmt::BufferRegion) -> String {
        let b = self.buf(&r.buffer);
        let parts: Vec<String> = r
            .region
            .iter()
            .map(|rg| {
                if rg.extent.as_int() == Some(1) {
                    self.expr(&rg.min, 0)
                } else {
                    let lo = self.expr(&rg.min, 0);
                    let hi = self.expr(&(rg.min.clone() + rg.extent.clone()), 0);
                    format!("{lo}:{hi}")
                }
            })
            .collect();
        if parts.is_empty() {
            return format!("{b}[()]");
        }
        format!("{b}[{}]", parts.join(", "))
    }

    fn indices(&mut self, idx: &[Expr]) -> String {
        idx.iter().map(|e| self.expr(e, 0)).collect::<Vec<_>>().join(", ")
    }

    /// The indices between brackets: `()` for a buffer of no dimensions,
    /// as TVM writes `C[()]`.
    fn subscript(&mut self, idx: &[Expr]) -> String {
        if idx.is_empty() {
            return "()".into();
        }
        self.indices(idx)
    }

    /// Prints `e`; parenthesised when its precedence is below `prec`.
    fn expr(&mut self, e: &Expr, prec: u8) -> String {
        match e {
            Expr::Int(v, t) => match t {
                DType::Bool => format!("T.bool({})", if *v != 0 { "True" } else { "False" }),
                DType::Int(32) if *v >= 0 || prec <= 6 => v.to_string(),
                DType::Int(32) => format!("({v})"),
                // 2^63 is not a literal of 64 bits: the least int64 is
                // written as the difference that makes it.
                t if *v == i64::MIN => format!("T.{t}(-9223372036854775807 - 1)"),
                t => format!("T.{t}({v})"),
            },
            Expr::Float(v, t) => format!("T.{t}({})", python_float(*v)),
            Expr::Var(v) => self.var(v),
            Expr::Binary(op, a, b) => match binop_syntax(*op, a.dtype()) {
                Some((sym, p)) => {
                    // Left-associative: the right operand needs parentheses
                    // at equal precedence. Comparisons never chain.
                    let lp = if p == 4 { p + 1 } else { p };
                    let l = self.expr(a, lp);
                    let r = self.expr(b, p + 1);
                    let s = format!("{l}{sym}{r}");
                    if p < prec {
                        format!("({s})")
                    } else {
                        s
                    }
                }
                None => {
                    let name = match op {
                        BinOp::Min => "T.min",
                        BinOp::Max => "T.max",
                        BinOp::BitAnd => "T.bitwise_and",
                        BinOp::BitOr => "T.bitwise_or",
                        BinOp::BitXor => "T.bitwise_xor",
                        BinOp::Shl => "T.shift_left",
                        BinOp::Shr => "T.shift_right",
                        _ => "T.truncdiv",
                    };
                    let l = self.expr(a, 0);
                    let r = self.expr(b, 0);
                    format!("{name}({l}, {r})")
                }
            },
            Expr::Not(a) => {
                let s = format!("not {}", self.expr(a, 3));
                if prec > 3 {
                    format!("({s})")
                } else {
                    s
                }
            }
            Expr::Select(c, a, b) => {
                let (c, a, b) = (self.expr(c, 0), self.expr(a, 0), self.expr(b, 0));
                format!("T.if_then_else({c}, {a}, {b})")
            }
            Expr::Cast(t, a) => format!("T.Cast(\"{t}\", {})", self.expr(a, 0)),
            Expr::Load(b, idx) => {
                let n = self.buf(b);
                format!("{n}[{}]", self.subscript(idx))
            }
            // TVM's arguments: the mask of the lanes taking part, the value,
            // the offset, the segment's width and the warp's.
            Expr::Call(crate::Intrinsic::WarpShuffleDown, args) if args.len() == 3 => format!(
                "T.tvm_warp_shuffle_down(T.tvm_warp_activemask(), {}, {}, {}, 32)",
                self.expr(&args[0], 0),
                self.expr(&args[1], 0),
                self.expr(&args[2], 0)
            ),
            Expr::Call(i, args) => format!("T.{}({})", i.name(), self.indices(args)),
        }
    }
}

/// A root block that holds nothing but allocations prints as the
/// allocations alone, as TVM prints it.
fn is_plain_root(r: &BlockRealize) -> bool {
    r.iter_values.is_empty()
        && r.block.init.is_none()
        && r.block.annotations.is_empty()
        && r.predicate.as_bool() == Some(true)
}

fn is_reserved(name: &str) -> bool {
    matches!(
        name,
        "T" | "I"
            | "for"
            | "in"
            | "if"
            | "else"
            | "with"
            | "as"
            | "def"
            | "and"
            | "or"
            | "not"
            | "range"
            | "None"
            | "True"
            | "False"
            | "lambda"
            | "return"
            | "pass"
            | "class"
            | "is"
            | "while"
    )
}
