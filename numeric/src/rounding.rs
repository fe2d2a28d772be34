//! Correct rounding of an f64 to a narrower binary float format.
//!
//! The `half` crate's `f16::from_f64`/`bf16::from_f64` round through an intermediate
//! step and can round twice (1 + 2^-11 + 2^-40 becomes 1.0 instead of 1 + 2^-10), so
//! every narrowing conversion here rounds with [`round_to_precision`] first; the
//! result is then exactly representable and any exact conversion finishes the job.

/// 2^e as an f64, exact for normal-range exponents (-1022..=1023).
pub fn pow2(e: i32) -> f64 {
    f64::from_bits(((e + 1023) as u64) << 52)
}

/// floor(log2(x)) for a finite positive f64 (normal or subnormal).
pub fn floor_log2(x: f64) -> i32 {
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7FF) as i32;
    if biased == 0 {
        let mantissa = bits & ((1u64 << 52) - 1);
        -1074 + (63 - mantissa.leading_zeros() as i32)
    } else {
        biased - 1023
    }
}

/// Rounds a non-negative magnitude to nearest, ties to even, on the grid of a binary
/// float format with `mantissa_bits` fraction bits and smallest normal exponent
/// `min_normal_exponent` (subnormals below it share the spacing of the smallest
/// binade). The exponent range is unbounded above: the caller decides overflow by
/// comparing with its largest finite value. NaN and infinity pass through.
pub fn round_to_precision(magnitude: f64, mantissa_bits: u32, min_normal_exponent: i32) -> f64 {
    if !magnitude.is_finite() || magnitude == 0.0 {
        return magnitude;
    }
    // Spacing of representable values around `magnitude`: 2^(e - m) in the binade
    // [2^e, 2^(e+1)), and the subnormal spacing below the smallest normal.
    let exponent = floor_log2(magnitude).max(min_normal_exponent);
    let quantum_exponent = exponent - mantissa_bits as i32;
    // Scale by powers of two in two exact steps (each within f64's normal range for
    // every format used here), round once, and scale back exactly.
    let scaled = magnitude * pow2(-quantum_exponent);
    scaled.round_ties_even() * pow2(quantum_exponent)
}

/// Correctly rounded f64 → f16 (IEEE overflow to ±Inf, NaN preserved).
pub fn f16_from_f64(value: f64) -> half::f16 {
    let rounded = round_to_precision(value.abs(), 10, -14).copysign(value);
    // `rounded` is exactly an f16 value or beyond f16's range (which `from_f64` maps to
    // ±Inf: the smallest overflowing rounded value is 65536 > 65504 + 16).
    half::f16::from_f64(rounded)
}

/// Correctly rounded f64 → bf16 (IEEE overflow to ±Inf, NaN preserved).
pub fn bf16_from_f64(value: f64) -> half::bf16 {
    let rounded = round_to_precision(value.abs(), 7, -126).copysign(value);
    half::bf16::from_f64(rounded)
}
