//! Data types of values and buffer elements, named as TVMScript names them.

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    Bool,
    Int(u8),
    UInt(u8),
    Float(u8),
    BFloat16,
}

impl DType {
    pub const I32: DType = DType::Int(32);
    pub const I64: DType = DType::Int(64);
    pub const F32: DType = DType::Float(32);
    pub const F64: DType = DType::Float(64);

    /// Every type a `.tir` file may name, in the order the help text lists them.
    pub const ALL: [DType; 11] = [
        DType::Bool,
        DType::Int(8),
        DType::Int(16),
        DType::Int(32),
        DType::Int(64),
        DType::UInt(8),
        DType::UInt(16),
        DType::UInt(32),
        DType::Float(16),
        DType::BFloat16,
        DType::Float(32),
    ];

    pub fn parse(s: &str) -> Option<DType> {
        Some(match s {
            "bool" => DType::Bool,
            "int8" => DType::Int(8),
            "int16" => DType::Int(16),
            "int32" => DType::Int(32),
            "int64" => DType::Int(64),
            "uint8" => DType::UInt(8),
            "uint16" => DType::UInt(16),
            "uint32" => DType::UInt(32),
            "uint64" => DType::UInt(64),
            "float16" => DType::Float(16),
            "bfloat16" => DType::BFloat16,
            "float32" => DType::Float(32),
            "float64" => DType::Float(64),
            _ => return None,
        })
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::Float(_) | DType::BFloat16)
    }

    pub fn is_int(self) -> bool {
        matches!(self, DType::Int(_) | DType::UInt(_))
    }

    pub fn is_bool(self) -> bool {
        self == DType::Bool
    }

    /// Size of one element in bytes (a bool takes one byte).
    pub fn bytes(self) -> usize {
        match self {
            DType::Bool => 1,
            DType::Int(b) | DType::UInt(b) | DType::Float(b) => b as usize / 8,
            DType::BFloat16 => 2,
        }
    }

    /// The name TVMScript uses, e.g. `float32`.
    pub fn name(self) -> String {
        match self {
            DType::Bool => "bool".into(),
            DType::Int(b) => format!("int{b}"),
            DType::UInt(b) => format!("uint{b}"),
            DType::Float(b) => format!("float{b}"),
            DType::BFloat16 => "bfloat16".into(),
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}
