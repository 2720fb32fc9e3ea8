//! What values are: how a float is rounded to the type that holds it, how an
//! integer wraps, and what each operator and intrinsic computes. The
//! simulator computes floats in f64 and integers in i64, then narrows them
//! here, so that a float32 kernel sees float32 arithmetic.

use tirc_ir::{DType, Intrinsic};

/// How a float result is narrowed to its type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Precision {
    /// Kept as computed (float64, or every float under `f64_storage`).
    Exact,
    F32,
    F16,
    BF16,
    /// A bool buffer: 1 or 0.
    Bool,
    /// An integer buffer: the fraction dropped.
    Trunc,
}

impl Precision {
    /// The narrowing of a value stored into, or computed in, type `t`.
    pub(super) fn of(t: DType, f64_storage: bool) -> Precision {
        match t {
            DType::Float(32) if !f64_storage => Precision::F32,
            DType::Float(16) if !f64_storage => Precision::F16,
            DType::BFloat16 if !f64_storage => Precision::BF16,
            t if t.is_float() => Precision::Exact,
            DType::Bool => Precision::Bool,
            _ => Precision::Trunc,
        }
    }

    pub(super) fn round(self, x: f64) -> f64 {
        match self {
            Precision::Exact => x,
            Precision::F32 => x as f32 as f64,
            Precision::F16 => half::f16::from_f64(x).to_f64(),
            Precision::BF16 => half::bf16::from_f64(x).to_f64(),
            Precision::Bool => f64::from(u8::from(x != 0.0)),
            Precision::Trunc => x.trunc(),
        }
    }

    /// Narrows every value of `xs` in place.
    #[inline]
    pub(super) fn round_all(self, xs: &mut [f64]) {
        match self {
            Precision::Exact => {}
            Precision::F32 => xs.iter_mut().for_each(|x| *x = *x as f32 as f64),
            p => xs.iter_mut().for_each(|x| *x = p.round(*x)),
        }
    }
}

/// `x` (a float32) rounded to tf32, 10 bits of mantissa, to nearest with
/// ties away from zero (`cvt.rna.tf32.f32`); infinities and NaN stay.
pub fn tf32(x: f64) -> f64 {
    let f = x as f32;
    if !f.is_finite() {
        return f as f64;
    }
    f32::from_bits(f.to_bits().wrapping_add(0x1000) & !0x1fff) as f64
}

/// `x` (a float32) cut to tf32, its low 13 bits dropped (toward zero):
/// what `wgmma` does with float32 operands it reads from shared memory
/// (measured on an H100: 1 + 2^-11 times 1, 64 deep, gives 64, where
/// rounding to nearest gives 64.0625; `scripts/exp/wgmma_tf32_rounding.sh`).
pub(super) fn tf32_truncated(x: f64) -> f64 {
    let f = x as f32;
    if !f.is_finite() {
        return f as f64;
    }
    f32::from_bits(f.to_bits() & !0x1fff) as f64
}

/// Every value of `xs` wrapped to the width of integer type `t`, as a GPU's
/// registers hold it.
#[inline]
pub(super) fn wrap_to(t: DType, xs: &mut [i64]) {
    macro_rules! wrap {
        ($n:ty) => {
            xs.iter_mut().for_each(|x| *x = *x as $n as i64)
        };
    }
    match t {
        DType::Int(8) => wrap!(i8),
        DType::Int(16) => wrap!(i16),
        DType::Int(32) => wrap!(i32),
        DType::UInt(8) => wrap!(u8),
        DType::UInt(16) => wrap!(u16),
        DType::UInt(32) => wrap!(u32),
        _ => {}
    }
}

/// Floats converted to integer type `t` (each already truncated toward zero
/// and held as i64, NaN as 0), as the GPU converts them: a 32- or 64-bit
/// type takes the nearest value of its range (PTX's conversion clamps);
/// narrower types wrap, converted through int.
#[inline]
pub(super) fn float_to(t: DType, xs: &mut [i64]) {
    match t {
        DType::Int(32) => xs.iter_mut().for_each(|x| *x = (*x).clamp(i64::from(i32::MIN), i64::from(i32::MAX))),
        DType::UInt(32) => xs.iter_mut().for_each(|x| *x = (*x).clamp(0, i64::from(u32::MAX))),
        DType::UInt(64) => xs.iter_mut().for_each(|x| *x = (*x).max(0)),
        _ => wrap_to(t, xs),
    }
}

/// The value of a float intrinsic; `y` is the second argument where there
/// is one (`pow`, `atan2`, `hypot`, `copysign`, `fmod`).
pub(super) fn intrinsic(i: Intrinsic, x: f64, y: f64) -> f64 {
    match i {
        Intrinsic::Exp => x.exp(),
        Intrinsic::Log => x.ln(),
        Intrinsic::Sqrt => x.sqrt(),
        Intrinsic::Rsqrt => 1.0 / x.sqrt(),
        Intrinsic::Tanh => x.tanh(),
        Intrinsic::Sigmoid => 1.0 / (1.0 + (-x).exp()),
        Intrinsic::Abs | Intrinsic::Fabs => x.abs(),
        Intrinsic::Floor => x.floor(),
        Intrinsic::Ceil => x.ceil(),
        // CUDA's `round` rounds half away from zero, as Rust's does.
        Intrinsic::Round => x.round(),
        Intrinsic::Pow => x.powf(y),
        Intrinsic::Sin => x.sin(),
        Intrinsic::Cos => x.cos(),
        Intrinsic::Erf => erf(x),
        Intrinsic::Exp2 => x.exp2(),
        Intrinsic::Exp10 => 10f64.powf(x),
        Intrinsic::Log2 => x.log2(),
        Intrinsic::Log10 => x.log10(),
        Intrinsic::Log1p => x.ln_1p(),
        Intrinsic::Trunc => x.trunc(),
        // Round half to even, as CUDA's `nearbyint` in the default mode.
        Intrinsic::Nearbyint => x.round_ties_even(),
        Intrinsic::Tan => x.tan(),
        Intrinsic::Asin => x.asin(),
        Intrinsic::Acos => x.acos(),
        Intrinsic::Atan => x.atan(),
        Intrinsic::Sinh => x.sinh(),
        Intrinsic::Cosh => x.cosh(),
        Intrinsic::Asinh => x.asinh(),
        Intrinsic::Acosh => x.acosh(),
        Intrinsic::Atanh => x.atanh(),
        Intrinsic::Atan2 => x.atan2(y),
        Intrinsic::Hypot => x.hypot(y),
        Intrinsic::Copysign => x.copysign(y),
        // C's `fmod`: the remainder with the sign of `x`, as Rust's `%`.
        Intrinsic::Fmod => x % y,
        Intrinsic::Tf32Round => tf32(x),
        Intrinsic::Likely | Intrinsic::CpAsync | Intrinsic::TmaLoad | Intrinsic::WarpShuffleDown => x,
    }
}

/// The error function, to about 1e-7 (Numerical Recipes' `erfc` by
/// Chebyshev fit), enough for checking kernels.
fn erf(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.5 * x.abs());
    let y = 1.0
        - t * (-x * x - 1.26551223
            + t * (1.00002368
                + t * (0.37409196
                    + t * (0.09678418
                        + t * (-0.18628806
                            + t * (0.27886807
                                + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))))
            .exp();
    if x >= 0.0 {
        y
    } else {
        -y
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrowing_matches_the_types() {
        assert_eq!(Precision::F32.round(0.1), 0.1f32 as f64);
        assert_eq!(Precision::F16.round(65520.0), f64::INFINITY);
        // tf32: 10 bits of mantissa, to nearest, ties away from zero.
        assert_eq!(tf32(1.0 + 2f64.powi(-11)), 1.0 + 2f64.powi(-10));
        assert_eq!(tf32(-(1.0 + 2f64.powi(-11))), -(1.0 + 2f64.powi(-10)));
        assert_eq!(tf32(1.0 + 2f64.powi(-12)), 1.0);
        assert_eq!(tf32(1.0 + 3.0 * 2f64.powi(-10)), 1.0 + 3.0 * 2f64.powi(-10));
        assert!(tf32(f64::NAN).is_nan());
        assert_eq!(tf32_truncated(1.0 + 2f64.powi(-11)), 1.0);
        assert_eq!(tf32_truncated(-(1.0 + 3.0 * 2f64.powi(-12))), -1.0);
        // `T.tf32_round`, the same rounding: a float32 split into two tf32
        // parts keeps about 22 of its 24 bits.
        let x = 0.1f32 as f64;
        let hi = intrinsic(Intrinsic::Tf32Round, x, 0.0);
        let lo = intrinsic(Intrinsic::Tf32Round, (x as f32 - hi as f32) as f64, 0.0);
        assert_eq!(hi, tf32(x));
        assert!(hi != x && ((hi + lo - x) / x).abs() < 2f64.powi(-21));
        assert_eq!(Precision::Bool.round(-2.0), 1.0);
        assert_eq!(Precision::Trunc.round(-2.5), -2.0);
        let mut xs = [1 << 31, -1];
        wrap_to(DType::I32, &mut xs);
        assert_eq!(xs, [-(1 << 31), -1]);
        wrap_to(DType::UInt(8), &mut xs);
        assert_eq!(xs, [0, 255]);
    }
}
