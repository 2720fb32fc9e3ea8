//! Host-side buffer contents: typed element vectors, random inputs, poison,
//! and comparison against a reference.

use half::{bf16, f16};
use tirc_ir::DType;

/// The contents of one buffer on the host.
#[derive(Clone, Debug, PartialEq)]
pub enum HostData {
    F32(Vec<f32>),
    F64(Vec<f64>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    /// bool, int8 and uint8 elements, one byte each.
    U8(Vec<u8>),
    F16(Vec<f16>),
    BF16(Vec<bf16>),
}

impl HostData {
    /// `n` elements of poison (NaN for floats): an intermediate buffer
    /// before anything is written to it, so that a read of what was never
    /// written shows in the result.
    pub fn poisoned(t: DType, n: usize) -> Result<HostData, String> {
        let mut d = HostData::zeros(t, n)?;
        poison(&mut d);
        Ok(d)
    }

    /// Zero-filled contents for `n` elements of type `t`. Types without a
    /// host representation of their own (int16, float8) are refused.
    pub fn zeros(t: DType, n: usize) -> Result<HostData, String> {
        Ok(match t {
            DType::Float(16) => HostData::F16(vec![f16::ZERO; n]),
            DType::BFloat16 => HostData::BF16(vec![bf16::ZERO; n]),
            DType::Float(32) => HostData::F32(vec![0.0; n]),
            DType::Float(64) => HostData::F64(vec![0.0; n]),
            DType::Int(32) | DType::UInt(32) => HostData::I32(vec![0; n]),
            DType::Int(64) | DType::UInt(64) => HostData::I64(vec![0; n]),
            DType::Bool | DType::Int(8) | DType::UInt(8) => HostData::U8(vec![0; n]),
            t => return Err(format!("running functions over {t} buffers is not supported yet")),
        })
    }

    pub fn len(&self) -> usize {
        match self {
            HostData::F32(v) => v.len(),
            HostData::F64(v) => v.len(),
            HostData::I32(v) => v.len(),
            HostData::I64(v) => v.len(),
            HostData::U8(v) => v.len(),
            HostData::F16(v) => v.len(),
            HostData::BF16(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes per element.
    pub fn elem_bytes(&self) -> usize {
        match self {
            HostData::F32(_) | HostData::I32(_) => 4,
            HostData::F64(_) | HostData::I64(_) => 8,
            HostData::U8(_) => 1,
            HostData::F16(_) | HostData::BF16(_) => 2,
        }
    }

    /// Element `i` as f64.
    pub fn get(&self, i: usize) -> f64 {
        match self {
            HostData::F32(v) => v[i] as f64,
            HostData::F64(v) => v[i],
            HostData::I32(v) => v[i] as f64,
            HostData::I64(v) => v[i] as f64,
            HostData::U8(v) => v[i] as f64,
            HostData::F16(v) => v[i].to_f64(),
            HostData::BF16(v) => v[i].to_f64(),
        }
    }

    /// Every element as f64.
    pub fn to_f64(&self) -> Vec<f64> {
        (0..self.len()).map(|i| self.get(i)).collect()
    }

    /// The raw bytes, little-endian, for copying to a device.
    pub fn as_bytes(&self) -> Vec<u8> {
        match self {
            HostData::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            HostData::F64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            HostData::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            HostData::I64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            HostData::U8(v) => v.clone(),
            HostData::F16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            HostData::BF16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        }
    }

    /// Replaces the contents with `bytes` read as this type.
    pub fn set_bytes(&mut self, bytes: &[u8]) {
        fn chunks<const N: usize>(b: &[u8]) -> impl Iterator<Item = [u8; N]> + '_ {
            b.chunks_exact(N).map(|c| {
                let mut a = [0u8; N];
                a.copy_from_slice(c);
                a
            })
        }
        match self {
            HostData::F32(v) => *v = chunks::<4>(bytes).map(f32::from_le_bytes).collect(),
            HostData::F64(v) => *v = chunks::<8>(bytes).map(f64::from_le_bytes).collect(),
            HostData::I32(v) => *v = chunks::<4>(bytes).map(i32::from_le_bytes).collect(),
            HostData::I64(v) => *v = chunks::<8>(bytes).map(i64::from_le_bytes).collect(),
            HostData::U8(v) => *v = bytes.to_vec(),
            HostData::F16(v) => *v = chunks::<2>(bytes).map(f16::from_le_bytes).collect(),
            HostData::BF16(v) => *v = chunks::<2>(bytes).map(bf16::from_le_bytes).collect(),
        }
    }
}

/// A small, fast, seedable generator (xorshift64*), so that runs can be
/// repeated with `--seed`.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in [-1, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
}

/// Random contents: floats uniform in [-1, 1), integers in [-8, 8), bools
/// and bytes in [0, 2).
pub fn random(t: DType, n: usize, rng: &mut Rng) -> Result<HostData, String> {
    let mut d = HostData::zeros(t, n)?;
    match &mut d {
        HostData::F32(v) => v.iter_mut().for_each(|x| *x = rng.uniform() as f32),
        HostData::F64(v) => v.iter_mut().for_each(|x| *x = rng.uniform()),
        HostData::I32(v) => v.iter_mut().for_each(|x| *x = (rng.next_u64() % 16) as i32 - 8),
        HostData::I64(v) => v.iter_mut().for_each(|x| *x = (rng.next_u64() % 16) as i64 - 8),
        HostData::U8(v) => v.iter_mut().for_each(|x| *x = (rng.next_u64() % 2) as u8),
        HostData::F16(v) => v.iter_mut().for_each(|x| *x = f16::from_f64(rng.uniform())),
        HostData::BF16(v) => v.iter_mut().for_each(|x| *x = bf16::from_f64(rng.uniform())),
    }
    Ok(d)
}

/// Poison: NaN for floats, a large sentinel for integers, so that an element
/// the kernel never writes cannot pass the comparison.
pub fn poison(d: &mut HostData) {
    match d {
        HostData::F32(v) => v.iter_mut().for_each(|x| *x = f32::NAN),
        HostData::F64(v) => v.iter_mut().for_each(|x| *x = f64::NAN),
        HostData::I32(v) => v.iter_mut().for_each(|x| *x = i32::MIN + 7),
        HostData::I64(v) => v.iter_mut().for_each(|x| *x = i64::MIN + 7),
        HostData::U8(v) => v.iter_mut().for_each(|x| *x = 0xA5),
        HostData::F16(v) => v.iter_mut().for_each(|x| *x = f16::NAN),
        HostData::BF16(v) => v.iter_mut().for_each(|x| *x = bf16::NAN),
    }
}

/// How far a result is from its reference.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ErrorStats {
    /// ‖out − ref‖ / ‖ref‖ (‖out − ref‖ when the reference is zero).
    pub rel_err: f64,
    pub max_abs_err: f64,
    /// Elements that are NaN or infinite in the output but not the reference.
    pub non_finite: usize,
}

pub fn compare(out: &HostData, reference: &[f64]) -> ErrorStats {
    let mut diff2 = 0.0;
    let mut ref2 = 0.0;
    let mut max_abs: f64 = 0.0;
    let mut non_finite = 0;
    for (i, r) in reference.iter().enumerate() {
        let o = out.get(i);
        // Poison the function itself leaves in place (an output it writes
        // only in part) is not an error of the kernel.
        if o.is_nan() && r.is_nan() {
            continue;
        }
        if !o.is_finite() && r.is_finite() {
            non_finite += 1;
            continue;
        }
        let d = o - r;
        diff2 += d * d;
        ref2 += r * r;
        max_abs = max_abs.max(d.abs());
    }
    let rel = if ref2 > 0.0 { (diff2 / ref2).sqrt() } else { diff2.sqrt() };
    ErrorStats { rel_err: if non_finite > 0 { f64::INFINITY } else { rel }, max_abs_err: max_abs, non_finite }
}
