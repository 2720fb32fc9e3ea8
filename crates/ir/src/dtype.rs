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

/// What a random input of a type holds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RandomRange {
    /// Floats uniform in [-1, 1), rounded to the type.
    Unit,
    /// Integers uniform in [lo, hi).
    Ints(i64, i64),
}

/// Everything a stage needs to know of one element type, in one place:
/// the parser (its name), code generation (its C type and header), host
/// data (`.npy` descriptor, random inputs, poison) and the checks (the
/// tolerance of results computed in it). Adding a type is adding a row to
/// [`TYPES`] (and a host representation in `tirc_exec::data`).
#[derive(Clone, Copy, Debug)]
pub struct TypeInfo {
    pub dtype: DType,
    /// The name TVMScript uses, e.g. `float32`.
    pub name: &'static str,
    /// The C type of an element in generated CUDA.
    pub c_type: &'static str,
    /// The CUDA header that declares `c_type`, when it is not built in.
    pub c_header: Option<&'static str>,
    /// NumPy's descriptor for an `.npy` file of it (bfloat16, which NumPy
    /// lacks, travels as its raw bits, `<u2`).
    pub npy: &'static str,
    /// The relative error a result computed in this type may have: its
    /// rounding, grown over an accumulation (0 for exact integer types).
    pub tolerance: f64,
    /// What random inputs hold: small enough that sums of products stay
    /// exact in integers and well inside the range of narrow floats.
    pub random: RandomRange,
}

const fn row(
    dtype: DType,
    name: &'static str,
    c_type: &'static str,
    npy: &'static str,
    tolerance: f64,
    random: RandomRange,
) -> TypeInfo {
    TypeInfo { dtype, name, c_type, c_header: None, npy, tolerance, random }
}

/// The types tirc runs, in the order the help text lists them.
pub const TYPES: [TypeInfo; 13] = [
    row(DType::Bool, "bool", "bool", "|b1", 0.0, RandomRange::Ints(0, 2)),
    row(DType::Int(8), "int8", "signed char", "|i1", 0.0, RandomRange::Ints(-8, 8)),
    row(DType::Int(16), "int16", "short", "<i2", 0.0, RandomRange::Ints(-8, 8)),
    row(DType::Int(32), "int32", "int", "<i4", 0.0, RandomRange::Ints(-8, 8)),
    row(DType::Int(64), "int64", "long long", "<i8", 0.0, RandomRange::Ints(-8, 8)),
    row(DType::UInt(8), "uint8", "unsigned char", "|u1", 0.0, RandomRange::Ints(0, 16)),
    row(DType::UInt(16), "uint16", "unsigned short", "<u2", 0.0, RandomRange::Ints(0, 16)),
    row(DType::UInt(32), "uint32", "unsigned int", "<u4", 0.0, RandomRange::Ints(0, 16)),
    row(DType::UInt(64), "uint64", "unsigned long long", "<u8", 0.0, RandomRange::Ints(0, 16)),
    TypeInfo {
        c_header: Some("cuda_fp16.h"),
        ..row(DType::Float(16), "float16", "half", "<f2", 1e-2, RandomRange::Unit)
    },
    TypeInfo {
        c_header: Some("cuda_bf16.h"),
        ..row(DType::BFloat16, "bfloat16", "nv_bfloat16", "<u2", 5e-2, RandomRange::Unit)
    },
    row(DType::Float(32), "float32", "float", "<f4", 1e-4, RandomRange::Unit),
    row(DType::Float(64), "float64", "double", "<f8", 1e-9, RandomRange::Unit),
];

impl DType {
    pub const I32: DType = DType::Int(32);
    pub const I64: DType = DType::Int(64);
    pub const F32: DType = DType::Float(32);
    pub const F16: DType = DType::Float(16);
    pub const F64: DType = DType::Float(64);

    /// This type's row of [`TYPES`]; None for a width tirc does not run
    /// (`float8`, `int4`).
    pub fn info(self) -> Option<&'static TypeInfo> {
        TYPES.iter().find(|t| t.dtype == self)
    }

    pub fn parse(s: &str) -> Option<DType> {
        TYPES.iter().find(|t| t.name == s).map(|t| t.dtype)
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::Float(_) | DType::BFloat16)
    }

    /// Half the distance from 1 to the next value of the type (2^-11 for
    /// float16, 2^-8 for bfloat16, 2^-24 for float32): the relative error
    /// of one rounding. None for a type that does not round (integers).
    pub fn unit_roundoff(self) -> Option<f64> {
        let mantissa = match self {
            DType::Float(16) => 10,
            DType::BFloat16 => 7,
            DType::Float(32) => 23,
            DType::Float(64) => 52,
            _ => return None,
        };
        Some(0.5f64.powi(mantissa + 1))
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
        match self.info() {
            Some(t) => t.name.to_string(),
            None => match self {
                DType::Bool => "bool".into(),
                DType::Int(b) => format!("int{b}"),
                DType::UInt(b) => format!("uint{b}"),
                DType::Float(b) => format!("float{b}"),
                DType::BFloat16 => "bfloat16".into(),
            },
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_names_each_type_once_and_round_trips() {
        for (i, t) in TYPES.iter().enumerate() {
            assert_eq!(DType::parse(t.name), Some(t.dtype));
            assert_eq!(t.dtype.name(), t.name);
            assert!(TYPES[..i].iter().all(|u| u.dtype != t.dtype && u.name != t.name), "{} twice", t.name);
            assert_eq!(t.tolerance == 0.0, !t.dtype.is_float(), "{}: exact iff an integer type", t.name);
        }
    }
}
