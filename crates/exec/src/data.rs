//! Host-side buffer contents: typed element vectors, random inputs, poison,
//! and comparison against a reference.

use half::{bf16, f16};
use tirc_ir::dtype::RandomRange;
use tirc_ir::DType;

/// The contents of one buffer on the host: one variant per storage, each
/// element type in its own (`zeros` says which type uses which).
#[derive(Clone, Debug, PartialEq)]
pub enum HostData {
    F32(Vec<f32>),
    F64(Vec<f64>),
    F16(Vec<f16>),
    BF16(Vec<bf16>),
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    /// bool and uint8 elements, one byte each.
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
}

/// An element of host data: its conversions, bytes and poison.
trait Elem: Copy {
    /// What an element holds before anything writes it: NaN for floats, a
    /// large sentinel for integers, so that a read of what was never
    /// written cannot pass the comparison.
    const POISON: Self;
    /// Whether this is [`Elem::POISON`], bit for bit (a NaN a kernel
    /// computes is another NaN).
    fn is_poison(self) -> bool;
    fn to_f64(self) -> f64;
    /// The nearest element (integers saturate, as Rust's `as` does).
    fn from_f64(x: f64) -> Self;
    fn put_le(self, out: &mut Vec<u8>);
    fn from_le(b: &[u8]) -> Self;
}

macro_rules! elem {
    ($($t:ty = $poison:expr),*) => {$(
        impl Elem for $t {
            const POISON: Self = $poison;
            fn is_poison(self) -> bool {
                self.to_le_bytes() == Self::POISON.to_le_bytes()
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn from_f64(x: f64) -> Self {
                x as $t
            }
            fn put_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes())
            }
            fn from_le(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(b);
                <$t>::from_le_bytes(a)
            }
        }
    )*};
}

// Float poison is a quiet NaN with a payload of its own, so that an element
// left unwritten is told from a NaN the function computes.
elem!(
    f64 = f64::from_bits(0x7FFC_A5A5_A5A5_A5A5),
    i8 = i8::MIN + 7,
    i16 = i16::MIN + 7,
    i32 = i32::MIN + 7,
    i64 = i64::MIN + 7,
    u8 = 0xA5,
    u16 = u16::MAX - 7,
    u32 = u32::MAX - 7,
    u64 = u64::MAX - 7
);

// float32 by hand: a NaN's payload goes to and from the high mantissa bits
// of float64 as the hardware's conversions take it, where `as` leaves it
// unspecified (the poison must survive the simulator's float64 memory).
impl Elem for f32 {
    const POISON: Self = f32::from_bits(0x7FE5_A5A5);
    fn is_poison(self) -> bool {
        self.to_bits() == Self::POISON.to_bits()
    }
    fn to_f64(self) -> f64 {
        if self.is_nan() {
            let b = self.to_bits() as u64;
            f64::from_bits(((b & 0x8000_0000) << 32) | 0x7FF8_0000_0000_0000 | ((b & 0x003F_FFFF) << 29))
        } else {
            self as f64
        }
    }
    fn from_f64(x: f64) -> Self {
        if x.is_nan() {
            let b = x.to_bits();
            f32::from_bits((((b >> 32) & 0x8000_0000) | 0x7FC0_0000 | ((b >> 29) & 0x003F_FFFF)) as u32)
        } else {
            x as f32
        }
    }
    fn put_le(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes())
    }
    fn from_le(b: &[u8]) -> Self {
        f32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }
}

macro_rules! half_elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            const POISON: Self = <$t>::from_bits(0x7FE5);
            fn is_poison(self) -> bool {
                self.to_bits() == Self::POISON.to_bits()
            }
            fn to_f64(self) -> f64 {
                <$t>::to_f64(self)
            }
            fn from_f64(x: f64) -> Self {
                <$t>::from_f64(x)
            }
            fn put_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes())
            }
            fn from_le(b: &[u8]) -> Self {
                <$t>::from_le_bytes([b[0], b[1]])
            }
        }
    )*};
}

half_elem!(f16, bf16);

/// `$body` with `$v` bound to the element vector of whichever variant `$d` is.
macro_rules! each {
    ($d:expr, $v:ident => $body:expr) => {
        match $d {
            HostData::F32($v) => $body,
            HostData::F64($v) => $body,
            HostData::F16($v) => $body,
            HostData::BF16($v) => $body,
            HostData::I8($v) => $body,
            HostData::I16($v) => $body,
            HostData::I32($v) => $body,
            HostData::I64($v) => $body,
            HostData::U8($v) => $body,
            HostData::U16($v) => $body,
            HostData::U32($v) => $body,
            HostData::U64($v) => $body,
        }
    };
}

fn elem_size<T>(_: &[T]) -> usize {
    std::mem::size_of::<T>()
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

    /// Zero-filled contents for `n` elements of type `t`. Types tirc does
    /// not run (no row in `tirc_ir::dtype::TYPES`) are refused.
    pub fn zeros(t: DType, n: usize) -> Result<HostData, String> {
        Ok(match t {
            DType::Float(16) => HostData::F16(vec![f16::ZERO; n]),
            DType::BFloat16 => HostData::BF16(vec![bf16::ZERO; n]),
            DType::Float(32) => HostData::F32(vec![0.0; n]),
            DType::Float(64) => HostData::F64(vec![0.0; n]),
            DType::Int(8) => HostData::I8(vec![0; n]),
            DType::Int(16) => HostData::I16(vec![0; n]),
            DType::Int(32) => HostData::I32(vec![0; n]),
            DType::Int(64) => HostData::I64(vec![0; n]),
            DType::Bool | DType::UInt(8) => HostData::U8(vec![0; n]),
            DType::UInt(16) => HostData::U16(vec![0; n]),
            DType::UInt(32) => HostData::U32(vec![0; n]),
            DType::UInt(64) => HostData::U64(vec![0; n]),
            t => return Err(format!("running functions over {t} buffers is not supported yet")),
        })
    }

    pub fn len(&self) -> usize {
        each!(self, v => v.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes per element.
    pub fn elem_bytes(&self) -> usize {
        each!(self, v => elem_size(v))
    }

    /// Element `i` as f64.
    pub fn get(&self, i: usize) -> f64 {
        each!(self, v => v[i].to_f64())
    }

    /// Whether element `i` still holds the poison it was filled with.
    pub fn is_poison(&self, i: usize) -> bool {
        each!(self, v => v[i].is_poison())
    }

    /// The poison of this data's type, as the float64 the reference holds.
    pub fn poison_f64(&self) -> f64 {
        fn of<T: Elem>(_: &[T]) -> f64 {
            T::POISON.to_f64()
        }
        each!(self, v => of(v))
    }

    /// Every element as f64.
    pub fn to_f64(&self) -> Vec<f64> {
        each!(self, v => v.iter().map(|x| x.to_f64()).collect())
    }

    /// Replaces the elements with `data`, each rounded to this type (the
    /// simulator's results, held as f64).
    pub fn set_f64(&mut self, data: &[f64]) {
        each!(self, v => v.iter_mut().zip(data).for_each(|(x, y)| *x = Elem::from_f64(*y)))
    }

    /// The raw bytes, little-endian, for copying to a device.
    pub fn as_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len() * self.elem_bytes());
        each!(self, v => v.iter().for_each(|x| x.put_le(&mut out)));
        out
    }

    /// Replaces the contents with `bytes` read as this type.
    pub fn set_bytes(&mut self, bytes: &[u8]) {
        let n = self.elem_bytes();
        each!(self, v => *v = bytes.chunks_exact(n).map(Elem::from_le).collect())
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

/// Random contents, as the type's row of `tirc_ir::dtype::TYPES` says:
/// floats uniform in [-1, 1), integers uniform in a small range.
pub fn random(t: DType, n: usize, rng: &mut Rng) -> Result<HostData, String> {
    let mut d = HostData::zeros(t, n)?;
    let range = t.info().map_or(RandomRange::Unit, |i| i.random);
    let mut draw = || match range {
        RandomRange::Unit => rng.uniform(),
        RandomRange::Ints(lo, hi) => (lo + (rng.next_u64() % (hi - lo) as u64) as i64) as f64,
    };
    each!(&mut d, v => v.iter_mut().for_each(|x| *x = Elem::from_f64(draw())));
    Ok(d)
}

/// Random integers uniform in [lo, hi), as elements of `t` (the indices a
/// gather reads from an index buffer must stay in range).
pub fn random_in(t: DType, n: usize, lo: i64, hi: i64, rng: &mut Rng) -> Result<HostData, String> {
    let mut d = HostData::zeros(t, n)?;
    let span = (hi - lo).max(1) as u64;
    each!(&mut d, v => v.iter_mut().for_each(|x| *x = Elem::from_f64((lo + (rng.next_u64() % span) as i64) as f64)));
    Ok(d)
}

/// Poison: NaN for floats, a large sentinel for integers, so that an element
/// the kernel never writes cannot pass the comparison.
/// The payload, in mantissa bits 29 to 50, of the NaN that stands for
/// memory nothing wrote in the float64 reference ([`undefined`]): bits that
/// arithmetic carries from a NaN operand to its result, and a float32 round
/// trip keeps, so that a result computed from such memory is known by it.
const UNDEFINED_PAYLOAD: u64 = 0x2B_5AD5;

/// A NaN marking memory that nothing wrote: what the reference's
/// intermediates and the simulator's allocations start as.
pub fn undefined() -> f64 {
    f64::from_bits(0x7FF8_0000_0000_0000 | (UNDEFINED_PAYLOAD << 29))
}

/// Whether `x` is [`undefined`], or a value computed from it.
pub fn is_undefined(x: f64) -> bool {
    x.is_nan() && (x.to_bits() >> 29) & 0x3F_FFFF == UNDEFINED_PAYLOAD
}

pub fn poison(d: &mut HostData) {
    fn fill<T: Elem>(v: &mut [T]) {
        v.iter_mut().for_each(|x| *x = T::POISON)
    }
    each!(d, v => fill(v))
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
    // The norms are taken of values divided by the largest one, so that
    // squares of values past 1e154 do not overflow (rel_err was NaN).
    let scale = reference
        .iter()
        .enumerate()
        .flat_map(|(i, r)| [*r, out.get(i)])
        .filter(|v| v.is_finite())
        .fold(0.0f64, |m, v| m.max(v.abs()));
    let scale = if scale > 0.0 { scale } else { 1.0 };
    let mut diff2 = 0.0;
    let mut ref2 = 0.0;
    let mut max_abs: f64 = 0.0;
    let mut non_finite = 0;
    let poison = out.poison_f64();
    for (i, r) in reference.iter().enumerate() {
        let o = out.get(i);
        // Poison the function itself leaves in place (an output it writes
        // only in part, or an intermediate it never writes, which the
        // reference holds as `undefined`) is not an error of the kernel;
        // poison where the reference computed a NaN is an element the
        // kernel never wrote.
        if o.is_nan() && r.is_nan() {
            if out.is_poison(i) && r.to_bits() != poison.to_bits() && !is_undefined(*r) {
                non_finite += 1;
            }
            continue;
        }
        // An infinity the reference has too (a division by zero both
        // compute) is right; its difference would be NaN.
        if o.is_infinite() && o == *r {
            continue;
        }
        if !o.is_finite() && r.is_finite() {
            non_finite += 1;
            continue;
        }
        let d = o - r;
        diff2 += (d / scale) * (d / scale);
        ref2 += (r / scale) * (r / scale);
        max_abs = max_abs.max(d.abs());
    }
    let rel = if ref2 > 0.0 { (diff2 / ref2).sqrt() } else { diff2.sqrt() * scale };
    ErrorStats { rel_err: if non_finite > 0 { f64::INFINITY } else { rel }, max_abs_err: max_abs, non_finite }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An element the kernel leaves unwritten fails the comparison even
    /// where the reference computes a NaN (`log` of a negative number);
    /// poison the reference leaves in place too, and NaN both compute,
    /// pass.
    #[test]
    fn an_unwritten_element_fails_where_the_reference_is_nan() {
        for t in [DType::Float(32), DType::Float(16), DType::BFloat16, DType::Float(64)] {
            let mut out = HostData::poisoned(t, 3).unwrap();
            let computed_nan = (-1.0f64).ln();
            let left = out.poison_f64();
            out.set_f64(&[left, computed_nan, left]);
            // The round trip through f64 keeps the poison's bits.
            assert!(out.is_poison(0) && !out.is_poison(1) && out.is_poison(2), "{t}");
            // Element 0: unwritten where the reference is NaN; 1: NaN in
            // both; 2: poison in both.
            let s = compare(&out, &[computed_nan, computed_nan, left]);
            assert_eq!(s.non_finite, 1, "{t}");
            let s = compare(&out, &[left, computed_nan, left]);
            assert_eq!(s.non_finite, 0, "{t}");
            // An intermediate the function never writes: the reference
            // (float64 memory) holds `undefined` there, the kernel poison.
            let s = compare(&out, &[undefined(), computed_nan, undefined()]);
            assert_eq!(s.non_finite, 0, "{t}");
        }
    }

    #[test]
    fn a_result_computed_from_undefined_memory_is_known() {
        // As the simulator computes: on values known only at run time.
        let u = std::hint::black_box(undefined());
        assert!(is_undefined(u));
        assert!(!is_undefined(f64::NAN) && !is_undefined(f64::INFINITY - f64::INFINITY));
        for x in [u + 1.0, 2.0 * u, -u, (u as f32) as f64, (u * 3.0).sqrt(), 1.5 - u] {
            assert!(is_undefined(x), "{:x}", x.to_bits());
        }
    }

    /// Values past 1e154, whose squares overflow, still give a relative
    /// error (it was NaN).
    #[test]
    fn errors_of_huge_values_are_finite() {
        let out = HostData::F64(vec![1e200, -2e200]);
        let e = compare(&out, &[1e200, -2e200]);
        assert_eq!(e.rel_err, 0.0);
        let e = compare(&out, &[1e200, -2.2e200]);
        // 0.2e200 / sqrt(1e400 + 4.84e400) = 0.2 / sqrt(5.84).
        assert!((e.rel_err - 0.2 / 5.84f64.sqrt()).abs() < 1e-12, "{e:?}");
    }

    /// Every type of the table has host data of its own width, whose
    /// random inputs follow the table and whose values survive the trip
    /// through f64 (the simulator's) and through bytes (the GPU's).
    #[test]
    fn each_type_has_storage_of_its_width_and_sign() {
        let mut rng = Rng::new(5);
        for info in tirc_ir::dtype::TYPES.iter() {
            let t = info.dtype;
            let d = random(t, 256, &mut rng).unwrap_or_else(|e| panic!("{t}: {e}"));
            assert_eq!(d.elem_bytes(), t.bytes(), "{t}");
            let vals = d.to_f64();
            match info.random {
                // Rounding to a narrow type may reach 1.
                RandomRange::Unit => assert!(vals.iter().all(|v| (-1.0..=1.0).contains(v)), "{t}"),
                RandomRange::Ints(lo, hi) => {
                    assert!(vals.iter().all(|v| (lo as f64..hi as f64).contains(v)), "{t}");
                    // Signed types get negative inputs, and read them back negative.
                    assert_eq!(vals.iter().any(|v| *v < 0.0), lo < 0, "{t}");
                }
            }
            let mut back = HostData::zeros(t, 256).unwrap_or_else(|e| panic!("{e}"));
            back.set_f64(&vals);
            assert_eq!(back, d, "{t}: through f64");
            back.set_bytes(&d.as_bytes());
            assert_eq!(back, d, "{t}: through bytes");
        }
    }

    /// An infinity where the reference has the same one is right; one of
    /// the other sign, or where the reference is finite, is not.
    #[test]
    fn equal_infinities_compare_equal() {
        let mut d = HostData::zeros(DType::F32, 3).unwrap_or_else(|e| panic!("{e}"));
        d.set_f64(&[f64::INFINITY, f64::NEG_INFINITY, 1.0]);
        let ok = compare(&d, &[f64::INFINITY, f64::NEG_INFINITY, 1.0]);
        assert_eq!((ok.rel_err, ok.non_finite), (0.0, 0));
        let bad = compare(&d, &[f64::NEG_INFINITY, f64::NEG_INFINITY, 1.0]);
        assert!(bad.rel_err.is_nan() || bad.rel_err > 1e-3, "{bad:?}");
        let finite = compare(&d, &[1.0, f64::NEG_INFINITY, 1.0]);
        assert_eq!(finite.non_finite, 1);
    }

    #[test]
    fn narrow_integers_keep_their_sign_and_range() {
        let mut d = HostData::zeros(DType::Int(8), 2).unwrap_or_else(|e| panic!("{e}"));
        d.set_bytes(&[0xFF, 0x80]);
        assert_eq!(d.to_f64(), [-1.0, -128.0]);
        let mut u = HostData::zeros(DType::UInt(32), 1).unwrap_or_else(|e| panic!("{e}"));
        u.set_bytes(&u32::MAX.to_le_bytes());
        assert_eq!(u.get(0), 4294967295.0);
    }
}
