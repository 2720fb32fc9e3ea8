//! Buffers: named, typed, shaped arrays in one memory scope.
//!
//! Like variables, buffers have identity: a pass that changes a buffer's shape
//! makes a new `Buffer` and rewrites every access to it.

use crate::dtype::DType;
use crate::expr::Expr;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// Where a buffer lives on the GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Device memory, visible to every thread of the launch.
    Global,
    /// Per-block on-chip memory, shared by the threads of one block.
    Shared,
    /// Per-thread storage, registers where the compiler can keep it there.
    Local,
}

impl Scope {
    pub fn parse(s: &str) -> Option<Scope> {
        Some(match s {
            "global" => Scope::Global,
            "shared" | "shared.dyn" => Scope::Shared,
            "local" | "register" => Scope::Local,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Scope::Global => "global",
            Scope::Shared => "shared",
            Scope::Local => "local",
        }
    }
}

#[derive(Clone)]
pub struct Buffer(Arc<BufferNode>);

#[derive(Debug, Clone)]
pub struct BufferNode {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<Expr>,
    pub scope: Scope,
}

impl Buffer {
    pub fn new(name: impl Into<String>, dtype: DType, shape: Vec<Expr>, scope: Scope) -> Buffer {
        Buffer(Arc::new(BufferNode { name: name.into(), dtype, shape, scope }))
    }

    /// A new buffer with the fields of this one, changed by `f`.
    pub fn with(&self, f: impl FnOnce(&mut BufferNode)) -> Buffer {
        let mut node = (*self.0).clone();
        f(&mut node);
        Buffer(Arc::new(node))
    }

    pub fn name(&self) -> &str {
        &self.0.name
    }

    pub fn dtype(&self) -> DType {
        self.0.dtype
    }

    pub fn shape(&self) -> &[Expr] {
        &self.0.shape
    }

    pub fn scope(&self) -> Scope {
        self.0.scope
    }

    pub fn ndim(&self) -> usize {
        self.0.shape.len()
    }

    /// The shape as integers, when every extent is a constant.
    pub fn const_shape(&self) -> Option<Vec<i64>> {
        self.0.shape.iter().map(|e| e.as_int()).collect()
    }

    /// The number of elements, when the shape is constant.
    pub fn num_elements(&self) -> Option<i64> {
        self.const_shape().map(|s| s.iter().product())
    }

    pub fn key(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }
}

impl PartialEq for Buffer {
    fn eq(&self, other: &Buffer) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Buffer {}

impl Hash for Buffer {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.key().hash(h)
    }
}

impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{:x}", self.name(), self.key() & 0xffff)
    }
}
