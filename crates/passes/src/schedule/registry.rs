//! Every schedule primitive tirc knows, one entry each: its TVM name, its
//! signature (parameter names in TVM's order, what each must be, which are
//! optional), whether it is a step (it changes the function and is recorded
//! in the trace) or a query, and the function that applies it.
//!
//! The interpreter (`interp.rs`) finds a call's entry here, matches the
//! call's arguments to the signature and checks each against its kind (a
//! loop where a loop is wanted, a list of integers where padding is), so
//! that `apply` receives typed `Args`; the primitive then checks its own
//! preconditions. A step applied is recorded as a `Step`: the primitive,
//! its arguments and what it returned, which prints as the line of a
//! schedule (`l0, l1 = sch.split(l, factors=[None, 32])`) and is what
//! `tirc lower --emit trace` replays.
//!
//! To add a primitive: write `<name>.rs` with its contract, add an entry to
//! `PRIMITIVES` (and remove its name from `NOT_YET`). Nothing else lists
//! primitives.

use super::loop_kind::Target;
use super::{
    add_unit_loop, bind, blockize, cache, compute_at, decompose_reduction, decompose_tf32x3, deps, fuse, get, inline,
    loop_kind, pad_einsum, reindex, reorder, reorder_block_iter_var, rfactor, sample, split, storage_align,
    storage_swizzle, tensorize, transform_block_layout, transform_layout, BlockRV, LoopRV, Result, Schedule,
    ScheduleError,
};
use std::fmt;
use tirc_ir::Attr;

/// What an argument must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Block,
    Loop,
    /// A block or a loop (`annotate`, `get_child_blocks`).
    BlockOrLoop,
    /// Every positional argument, each a loop or a list of loops
    /// (`fuse(*loops)`, `reorder(*loops)`).
    Loops,
    /// A list of blocks (`cache_read`'s `consumer_blocks`).
    Blocks,
    Int,
    /// `True` or `False`.
    Bool,
    /// A buffer of a block: `("read", i)`, `("write", i)` or its name.
    Buffer,
    /// `lambda i, j: (..)` from indices to indices.
    IndexMap,
    /// A list of integers (`pad_einsum`'s padding).
    Ints,
    /// A list of integers and at most one `None` (`split`'s factors).
    Factors,
    Str,
    /// Anything an annotation can hold.
    Value,
    /// Accepted for compatibility with TVM's signature, and not used.
    Ignored,
    /// TVM's, not implemented by tirc yet: refused when given.
    NotYet,
}

/// A parameter of a primitive's signature.
#[derive(Clone, Copy, Debug)]
pub struct Param {
    pub name: &'static str,
    pub kind: Kind,
    pub required: bool,
    /// Printed as `name=value` in the trace (`factors=[None, 32]`).
    pub keyword: bool,
}

const fn req(name: &'static str, kind: Kind) -> Param {
    Param { name, kind, required: true, keyword: false }
}

const fn kw(name: &'static str, kind: Kind) -> Param {
    Param { name, kind, required: true, keyword: true }
}

const fn opt(name: &'static str, kind: Kind) -> Param {
    Param { name, kind, required: false, keyword: false }
}

/// Optional, printed as `name=value`.
const fn opt_kw(name: &'static str, kind: Kind) -> Param {
    Param { name, kind, required: false, keyword: true }
}

/// An argument, checked against its parameter's kind.
#[derive(Clone, Debug)]
pub enum Arg {
    Block(BlockRV),
    Loop(LoopRV),
    Target(Target),
    Loops(Vec<LoopRV>),
    Blocks(Vec<BlockRV>),
    Int(i64),
    Bool(bool),
    Buffer(transform_layout::BufferRef),
    IndexMap(transform_layout::IndexMap),
    Ints(Vec<i64>),
    Factors(Vec<Option<i64>>),
    Str(String),
    Value(Attr),
}

/// The arguments of one call, in signature order; `None` where an optional
/// parameter was not given.
#[derive(Clone, Debug, Default)]
pub struct Args(pub Vec<Option<Arg>>);

impl Args {
    fn get(&self, i: usize) -> Result<&Arg> {
        self.0.get(i).and_then(Option::as_ref).ok_or_else(|| internal(i))
    }

    pub fn block(&self, i: usize) -> Result<&BlockRV> {
        match self.get(i)? {
            Arg::Block(b) => Ok(b),
            _ => Err(internal(i)),
        }
    }

    pub fn lp(&self, i: usize) -> Result<&LoopRV> {
        match self.get(i)? {
            Arg::Loop(l) => Ok(l),
            _ => Err(internal(i)),
        }
    }

    pub fn target(&self, i: usize) -> Result<&Target> {
        match self.get(i)? {
            Arg::Target(t) => Ok(t),
            _ => Err(internal(i)),
        }
    }

    pub fn loops(&self, i: usize) -> Result<&[LoopRV]> {
        match self.get(i)? {
            Arg::Loops(l) => Ok(l),
            _ => Err(internal(i)),
        }
    }

    pub fn int(&self, i: usize) -> Result<i64> {
        match self.get(i)? {
            Arg::Int(v) => Ok(*v),
            _ => Err(internal(i)),
        }
    }

    pub fn buffer(&self, i: usize) -> Result<&transform_layout::BufferRef> {
        match self.get(i)? {
            Arg::Buffer(b) => Ok(b),
            _ => Err(internal(i)),
        }
    }

    pub fn index_map(&self, i: usize) -> Result<&transform_layout::IndexMap> {
        match self.get(i)? {
            Arg::IndexMap(m) => Ok(m),
            _ => Err(internal(i)),
        }
    }

    /// An optional boolean, `default` where it was not given.
    pub fn opt_bool(&self, i: usize, default: bool) -> Result<bool> {
        match self.0.get(i).and_then(Option::as_ref) {
            None => Ok(default),
            Some(Arg::Bool(b)) => Ok(*b),
            Some(_) => Err(internal(i)),
        }
    }

    pub fn ints(&self, i: usize) -> Result<&[i64]> {
        match self.get(i)? {
            Arg::Ints(v) => Ok(v),
            _ => Err(internal(i)),
        }
    }

    pub fn factors(&self, i: usize) -> Result<&[Option<i64>]> {
        match self.get(i)? {
            Arg::Factors(v) => Ok(v),
            _ => Err(internal(i)),
        }
    }

    /// An optional list of blocks: `None` where it was not given.
    pub fn opt_blocks(&self, i: usize) -> Result<Option<&[BlockRV]>> {
        match self.0.get(i).and_then(Option::as_ref) {
            None => Ok(None),
            Some(Arg::Blocks(b)) => Ok(Some(b)),
            Some(_) => Err(internal(i)),
        }
    }

    /// An optional integer.
    pub fn opt_int(&self, i: usize) -> Result<Option<i64>> {
        match self.0.get(i).and_then(Option::as_ref) {
            None => Ok(None),
            Some(Arg::Int(v)) => Ok(Some(*v)),
            Some(_) => Err(internal(i)),
        }
    }

    /// An optional list of integers.
    pub fn opt_ints(&self, i: usize) -> Result<Option<&[i64]>> {
        match self.0.get(i).and_then(Option::as_ref) {
            None => Ok(None),
            Some(Arg::Ints(v)) => Ok(Some(v)),
            Some(_) => Err(internal(i)),
        }
    }

    pub fn str(&self, i: usize) -> Result<&str> {
        match self.get(i)? {
            Arg::Str(s) => Ok(s),
            _ => Err(internal(i)),
        }
    }

    pub fn value(&self, i: usize) -> Result<&Attr> {
        match self.get(i)? {
            Arg::Value(v) => Ok(v),
            _ => Err(internal(i)),
        }
    }
}

/// An argument the interpreter should have checked: a bug of tirc, named
/// as such rather than a panic.
fn internal(i: usize) -> ScheduleError {
    ScheduleError::internal(format!("argument {i} does not have the kind its signature says"))
}

/// What a primitive returns.
#[derive(Clone, Debug)]
pub enum Out {
    None,
    Block(BlockRV),
    Blocks(Vec<BlockRV>),
    Loop(LoopRV),
    Loops(Vec<LoopRV>),
    /// A sampled value (`sample_categorical`).
    Int(i64),
    /// Sampled values (`sample_perfect_tile`'s factors).
    Ints(Vec<i64>),
    /// A compute location that is no loop (`sample_compute_location`).
    Location(Location),
}

/// `sample_compute_location`'s decisions -1 and -2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    Root,
    Inline,
}

/// One entry of the registry.
pub struct Primitive {
    pub name: &'static str,
    pub params: &'static [Param],
    /// A step changes the function and is recorded in the trace; a query
    /// (`get_loops`) does not.
    pub step: bool,
    pub apply: fn(&mut Schedule, &Args) -> Result<Out>,
}

/// A step applied, as the trace holds it.
#[derive(Clone, Debug)]
pub struct Step {
    pub primitive: &'static Primitive,
    pub args: Args,
    pub out: Out,
}

impl fmt::Debug for Primitive {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.name)
    }
}

/// The step as a line of a schedule, blocks and loops by name.
impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let outs: Vec<String> = match &self.out {
            Out::None => vec![],
            Out::Block(b) => vec![b.clone()],
            Out::Blocks(bs) => bs.clone(),
            Out::Loop(l) => vec![l.name().to_string()],
            Out::Loops(ls) => ls.iter().map(|l| l.name().to_string()).collect(),
            Out::Int(v) => vec![v.to_string()],
            Out::Location(l) => vec![format!("{l:?}").to_lowercase()],
            Out::Ints(vs) => vs.iter().map(|v| v.to_string()).collect(),
        };
        if !outs.is_empty() {
            write!(f, "{} = ", outs.join(", "))?;
        }
        let mut args = Vec::new();
        for (p, a) in self.primitive.params.iter().zip(&self.args.0) {
            let Some(a) = a else { continue };
            let text = match a {
                Arg::Block(b) => b.clone(),
                Arg::Loop(l) => l.name().to_string(),
                Arg::Target(Target::Block(b)) => b.clone(),
                Arg::Target(Target::Loop(l)) => l.name().to_string(),
                Arg::Loops(ls) => ls.iter().map(|l| l.name()).collect::<Vec<_>>().join(", "),
                // By name, as TVM takes them too: a replay needs no handle.
                Arg::Blocks(bs) => {
                    format!("[{}]", bs.iter().map(|b| format!("\"{b}\"")).collect::<Vec<_>>().join(", "))
                }
                Arg::Int(v) => v.to_string(),
                Arg::Bool(b) => if *b { "True" } else { "False" }.to_string(),
                Arg::Buffer(b) => b.to_string(),
                Arg::IndexMap(m) => m.to_string(),
                Arg::Ints(v) => format!("{v:?}"),
                Arg::Factors(v) => {
                    let items: Vec<String> = v.iter().map(|x| x.map_or("None".into(), |i| i.to_string())).collect();
                    format!("[{}]", items.join(", "))
                }
                Arg::Str(s) => format!("\"{s}\""),
                Arg::Value(v) => loop_kind::python(v),
            };
            args.push(if p.keyword { format!("{}={text}", p.name) } else { text });
        }
        write!(f, "sch.{}({})", self.primitive.name, args.join(", "))
    }
}

/// The primitive named `name`.
pub fn find(name: &str) -> Option<&'static Primitive> {
    PRIMITIVES.iter().find(|p| p.name == name)
}

/// TVM's primitives that tirc does not implement yet: named as such when a
/// schedule calls one, not taken for a misspelling.
pub const NOT_YET: &[&str] = &[
    "merge",
    "loop_partition",
    "decompose_padding",
    "can_decompose_padding",
    "rolling_buffer",
    "cache_inplace",
    "cache_index",
    "reindex_cache_read",
    "reindex_cache_write",
    "set_axis_separator",
    "unsafe_set_dtype",
    "annotate_buffer_access",
    "unsafe_hide_buffer_access",
    "fuse_reduction_epilogue",
    "read_at",
    "write_at",
    "sample_partitioned_tile",
];

fn none<T>(r: Result<T>) -> Result<Out> {
    r.map(|_| Out::None)
}

/// Signatures that two primitives share.
const GET_BLOCK: &[Param] = &[req("name", Kind::Str), opt("func_name", Kind::Ignored)];
const ONE_BLOCK: &[Param] = &[req("block", Kind::Block)];
const ONE_LOOP: &[Param] = &[req("loop", Kind::Loop)];
const AT_LOOP: &[Param] = &[
    req("block", Kind::Block),
    req("loop", Kind::Loop),
    opt_kw("preserve_unit_loops", Kind::Bool),
    opt_kw("index", Kind::Int),
];

pub static PRIMITIVES: &[Primitive] = &[
    Primitive {
        name: "get_block",
        params: GET_BLOCK,
        step: false,
        apply: |s, a| get::get_block(s, a.str(0)?).map(Out::Block),
    },
    Primitive {
        name: "get_sblock",
        params: GET_BLOCK,
        step: false,
        apply: |s, a| get::get_block(s, a.str(0)?).map(Out::Block),
    },
    Primitive {
        name: "get_loops",
        params: ONE_BLOCK,
        step: false,
        apply: |s, a| get::get_loops(s, a.block(0)?).map(Out::Loops),
    },
    Primitive {
        name: "get_child_blocks",
        params: &[req("block_or_loop", Kind::BlockOrLoop)],
        step: false,
        apply: |s, a| {
            let parent = match a.target(0)? {
                Target::Block(b) => get::Parent::Block(b.clone()),
                Target::Loop(l) => get::Parent::Loop(l.clone()),
            };
            get::get_child_blocks(s, parent).map(Out::Blocks)
        },
    },
    Primitive {
        name: "get_output_blocks",
        params: &[req("scope_block", Kind::Block)],
        step: false,
        apply: |s, a| get::get_output_blocks(s, a.block(0)?).map(Out::Blocks),
    },
    Primitive {
        name: "sample_perfect_tile",
        params: &[
            req("loop", Kind::Loop),
            req("n", Kind::Int),
            opt("max_innermost_factor", Kind::Int),
            opt("decision", Kind::Ints),
        ],
        step: false,
        apply: |s, a| sample::sample_perfect_tile(s, a.lp(0)?, a.int(1)?, a.opt_int(2)?, a.opt_ints(3)?).map(Out::Ints),
    },
    Primitive {
        name: "sample_categorical",
        params: &[req("candidates", Kind::Ints), opt("probs", Kind::Value), opt("decision", Kind::Int)],
        step: false,
        apply: |_, a| {
            let probs = match a.0.get(1).and_then(Option::as_ref) {
                Some(Arg::Value(v)) => Some(v),
                _ => None,
            };
            sample::sample_categorical(a.ints(0)?, probs, a.opt_int(2)?).map(Out::Int)
        },
    },
    Primitive {
        name: "sample_compute_location",
        params: &[req("block", Kind::Block), opt("decision", Kind::Int)],
        step: false,
        apply: |s, a| {
            Ok(match sample::sample_compute_location(s, a.block(0)?, a.opt_int(1)?)? {
                sample::Place::Loop(l) => Out::Loop(l),
                sample::Place::Root => Out::Location(Location::Root),
                sample::Place::Inline => Out::Location(Location::Inline),
            })
        },
    },
    Primitive { name: "enter_postproc", params: &[], step: false, apply: |_, _| Ok(Out::None) },
    Primitive {
        name: "get_producers",
        params: ONE_BLOCK,
        step: false,
        apply: |s, a| deps::get_producers(s, a.block(0)?).map(Out::Blocks),
    },
    Primitive {
        name: "get_consumers",
        params: ONE_BLOCK,
        step: false,
        apply: |s, a| deps::get_consumers(s, a.block(0)?).map(Out::Blocks),
    },
    Primitive { name: "work_on", params: &[req("func_name", Kind::Ignored)], step: false, apply: |_, _| Ok(Out::None) },
    Primitive {
        name: "split",
        params: &[
            req("loop", Kind::Loop),
            kw("factors", Kind::Factors),
            opt("preserve_unit_iters", Kind::Ignored),
            opt("disable_predication", Kind::Ignored),
        ],
        step: true,
        apply: |s, a| split::split(s, a.lp(0)?, a.factors(1)?).map(Out::Loops),
    },
    Primitive {
        name: "fuse",
        params: &[req("loops", Kind::Loops), opt("preserve_unit_iters", Kind::Ignored)],
        step: true,
        apply: |s, a| fuse::fuse(s, a.loops(0)?).map(Out::Loop),
    },
    Primitive {
        name: "add_unit_loop",
        params: &[req("block_or_loop", Kind::BlockOrLoop)],
        step: true,
        apply: |s, a| add_unit_loop::add_unit_loop(s, a.target(0)?).map(Out::Loop),
    },
    Primitive {
        name: "reorder_block_iter_var",
        params: &[req("block", Kind::Block), req("new_order", Kind::Ints)],
        step: true,
        apply: |s, a| none(reorder_block_iter_var::reorder_block_iter_var(s, a.block(0)?, a.ints(1)?)),
    },
    Primitive {
        name: "reorder",
        params: &[req("loops", Kind::Loops)],
        step: true,
        apply: |s, a| none(reorder::reorder(s, a.loops(0)?)),
    },
    Primitive {
        name: "bind",
        params: &[req("loop", Kind::Loop), req("thread_axis", Kind::Str)],
        step: true,
        apply: |s, a| none(bind::bind(s, a.lp(0)?, a.str(1)?)),
    },
    Primitive { name: "parallel", params: ONE_LOOP, step: true, apply: |s, a| none(loop_kind::parallel(s, a.lp(0)?)) },
    Primitive {
        name: "vectorize",
        params: ONE_LOOP,
        step: true,
        apply: |s, a| none(loop_kind::vectorize(s, a.lp(0)?)),
    },
    Primitive { name: "unroll", params: ONE_LOOP, step: true, apply: |s, a| none(loop_kind::unroll(s, a.lp(0)?)) },
    Primitive {
        name: "annotate",
        params: &[req("block_or_loop", Kind::BlockOrLoop), req("ann_key", Kind::Str), req("ann_val", Kind::Value)],
        step: true,
        apply: |s, a| none(loop_kind::annotate(s, a.target(0)?, a.str(1)?, a.value(2)?.clone())),
    },
    Primitive {
        name: "unannotate",
        params: &[req("block_or_loop", Kind::BlockOrLoop), req("ann_key", Kind::Str)],
        step: true,
        apply: |s, a| none(loop_kind::unannotate(s, a.target(0)?, a.str(1)?)),
    },
    Primitive {
        name: "decompose_reduction",
        params: &[req("block", Kind::Block), req("loop", Kind::Loop)],
        step: true,
        apply: |s, a| decompose_reduction::decompose_reduction(s, a.block(0)?, a.lp(1)?).map(Out::Block),
    },
    Primitive {
        name: "compute_inline",
        params: ONE_BLOCK,
        step: true,
        apply: |s, a| none(inline::compute_inline(s, a.block(0)?)),
    },
    Primitive {
        name: "reverse_compute_inline",
        params: ONE_BLOCK,
        step: true,
        apply: |s, a| none(inline::reverse_compute_inline(s, a.block(0)?)),
    },
    Primitive {
        name: "set_scope",
        params: &[req("block", Kind::Block), req("buffer_index", Kind::Int), req("storage_scope", Kind::Str)],
        step: true,
        apply: |s, a| none(inline::set_scope(s, a.block(0)?, a.int(1)?, a.str(2)?)),
    },
    Primitive {
        name: "cache_read",
        params: &[
            req("block", Kind::Block),
            req("read_buffer_index", Kind::Int),
            req("storage_scope", Kind::Str),
            opt_kw("consumer_blocks", Kind::Blocks),
        ],
        step: true,
        apply: |s, a| cache::cache_read(s, a.block(0)?, a.int(1)?, a.str(2)?, a.opt_blocks(3)?).map(Out::Block),
    },
    Primitive {
        name: "cache_write",
        params: &[
            req("block", Kind::Block),
            req("write_buffer_index", Kind::Int),
            req("storage_scope", Kind::Str),
            opt("consumer_blocks", Kind::NotYet),
        ],
        step: true,
        apply: |s, a| cache::cache_write(s, a.block(0)?, a.int(1)?, a.str(2)?).map(Out::Block),
    },
    Primitive {
        name: "compute_at",
        params: AT_LOOP,
        step: true,
        apply: |s, a| {
            none(compute_at::compute_at(s, a.block(0)?, a.lp(1)?, a.opt_bool(2, true)?, a.opt_int(3)?.unwrap_or(-1)))
        },
    },
    Primitive {
        name: "reverse_compute_at",
        params: AT_LOOP,
        step: true,
        apply: |s, a| {
            none(compute_at::reverse_compute_at(
                s,
                a.block(0)?,
                a.lp(1)?,
                a.opt_bool(2, true)?,
                a.opt_int(3)?.unwrap_or(-1),
            ))
        },
    },
    Primitive {
        name: "storage_align",
        params: &[
            req("block", Kind::Block),
            req("buffer_index", Kind::Int),
            req("axis", Kind::Int),
            req("factor", Kind::Int),
            req("offset", Kind::Int),
        ],
        step: true,
        apply: |s, a| none(storage_align::storage_align(s, a.block(0)?, a.int(1)?, a.int(2)?, a.int(3)?, a.int(4)?)),
    },
    Primitive {
        name: "storage_swizzle",
        params: &[req("block", Kind::Block), req("buffer_index", Kind::Int), req("swizzle_bytes", Kind::Int)],
        step: true,
        apply: |s, a| none(storage_swizzle::storage_swizzle(s, a.block(0)?, a.int(1)?, a.int(2)?)),
    },
    Primitive {
        name: "rfactor",
        params: &[req("loop", Kind::Loop), req("factor_axis", Kind::Int)],
        step: true,
        apply: |s, a| rfactor::rfactor(s, a.lp(0)?, a.int(1)?).map(Out::Block),
    },
    Primitive {
        name: "blockize",
        params: &[req("target", Kind::Loop), opt("preserve_unit_iters", Kind::Bool)],
        step: true,
        apply: |s, a| blockize::blockize(s, a.lp(0)?, a.opt_bool(1, true)?).map(Out::Block),
    },
    Primitive {
        name: "tensorize",
        params: &[
            req("block_or_loop", Kind::BlockOrLoop),
            req("tensor_intrin", Kind::Str),
            opt("preserve_unit_iters", Kind::Bool),
        ],
        step: true,
        apply: |s, a| none(tensorize::tensorize(s, a.target(0)?, a.str(1)?, a.opt_bool(2, true)?)),
    },
    Primitive {
        name: "transform_layout",
        params: &[
            req("block", Kind::Block),
            req("buffer", Kind::Buffer),
            req("index_map", Kind::IndexMap),
            opt("pad_value", Kind::NotYet),
            // A hint that the map is injective: tirc checks it anyway.
            opt("assume_injective_transform", Kind::Ignored),
        ],
        step: true,
        apply: |s, a| none(transform_layout::transform_layout(s, a.block(0)?, a.buffer(1)?, a.index_map(2)?)),
    },
    Primitive {
        name: "reindex",
        params: &[req("block", Kind::Block), req("buffer", Kind::Buffer)],
        step: true,
        apply: |s, a| reindex::reindex(s, a.block(0)?, a.buffer(1)?).map(Out::Block),
    },
    Primitive {
        name: "transform_block_layout",
        params: &[req("block", Kind::Block), req("index_map", Kind::IndexMap)],
        step: true,
        apply: |s, a| none(transform_block_layout::transform_block_layout(s, a.block(0)?, a.index_map(1)?)),
    },
    Primitive {
        name: "decompose_tf32x3",
        params: &[req("block", Kind::Block)],
        step: true,
        apply: |s, a| decompose_tf32x3::decompose_tf32x3(s, a.block(0)?).map(Out::Blocks),
    },
    Primitive {
        name: "pad_einsum",
        params: &[req("block", Kind::Block), req("padding", Kind::Ints)],
        step: true,
        apply: |s, a| none(pad_einsum::pad_einsum(s, a.block(0)?, a.ints(1)?)),
    },
];
