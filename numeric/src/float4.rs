//! FLOAT4E2M1 (MLIR `f4E2M1FN`, the OCP MXFP4 element): 1 sign, 2 exponent (bias 1)
//! and 1 mantissa bit; eight magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6; no infinity, no NaN.
//!
//! Encoding rounds the exact input to nearest, ties to even, and always saturates:
//! ONNX's `saturate` attribute only speaks of 8-bit targets, and a format without
//! infinity or NaN has nothing else to give. Values that round above 6 (including
//! ±Inf) become ±6. NaN has no code: it becomes a zero whose sign is the opposite
//! of the NaN's, bit for bit what ONNX's reference (`ml_dtypes.float4_e2m1fn`,
//! which produced the backend tests' expected outputs) gives.
//!
//! A code lives in the low four bits of a byte (sign in bit 3).

use super::rounding::{floor_log2, pow2, round_to_precision};

const SIGN: u8 = 0x8;
const MANTISSA_BITS: u32 = 1;
const BIAS: i32 = 1;
/// The code of 6.0, the largest magnitude.
const MAX_CODE: u8 = 0x7;
/// The largest finite value.
pub const MAX: f64 = 6.0;

/// Decodes the low four bits of `code` to its exact value.
pub fn decode(code: u8) -> f64 {
    let exponent = i32::from((code >> MANTISSA_BITS) & 0x3);
    let mantissa = f64::from(code & 0x1);
    let magnitude = if exponent == 0 {
        // Subnormal: 0.m × 2^(1 - bias).
        mantissa * pow2(1 - BIAS - MANTISSA_BITS as i32)
    } else {
        (2.0 + mantissa) * pow2(exponent - BIAS - MANTISSA_BITS as i32)
    };
    if code & SIGN != 0 {
        -magnitude
    } else {
        magnitude
    }
}

/// Encodes `value` (round to nearest even, saturating; see the module documentation).
pub fn encode(value: f64) -> u8 {
    let sign = if value.is_sign_negative() { SIGN } else { 0 };
    if value.is_nan() {
        return sign ^ SIGN;
    }
    let rounded = round_to_precision(value.abs(), MANTISSA_BITS, 1 - BIAS);
    if rounded > MAX {
        return sign | MAX_CODE;
    }
    if rounded == 0.0 {
        return sign;
    }
    let exponent = floor_log2(rounded);
    let bits = if exponent < 1 - BIAS {
        // Subnormal: the mantissa counts multiples of 0.5.
        (rounded / pow2(-BIAS)) as u8
    } else {
        let fraction = (rounded / pow2(exponent - MANTISSA_BITS as i32)) as u8 - 2;
        (((exponent + BIAS) as u8) << MANTISSA_BITS) | fraction
    };
    sign | bits
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The nearest code by brute force over all 16, ties to the even code (mantissa
    /// bit 0), keeping the sign of zero; independent of the encoder's arithmetic.
    fn nearest_reference(value: f64) -> u8 {
        let mut best: Option<(f64, u8)> = None;
        for code in 0u8..16 {
            let v = decode(code);
            if v == 0.0 && (code & SIGN != 0) != value.is_sign_negative() {
                continue;
            }
            let d = (v - value).abs();
            best = match best {
                Some((bd, bc)) if d > bd || (d == bd && (code & 1 == 1 || bc & 1 == 0)) => {
                    Some((bd, bc))
                }
                _ => Some((d, code)),
            };
        }
        best.expect("16 codes").1
    }

    #[test]
    fn codes_decode_to_the_eight_magnitudes() {
        let magnitudes: Vec<f64> = (0u8..8).map(decode).collect();
        assert_eq!(magnitudes, [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]);
        for code in 0u8..8 {
            assert_eq!(decode(code | SIGN), -decode(code));
            assert_eq!(encode(decode(code | SIGN)), code | SIGN);
            assert_eq!(encode(decode(code)), code);
        }
    }

    #[test]
    fn specials_saturate_and_nan_becomes_zero_as_onnx_reference() {
        assert_eq!(encode(f64::INFINITY), 0x7);
        assert_eq!(encode(f64::NEG_INFINITY), 0xF);
        assert_eq!(encode(1e6), 0x7);
        assert_eq!(encode(-8.0), 0xF);
        // 7 is the tie between 6 and 8 (not representable): even is 8, which
        // saturates to 6; 5 ties between 4 and 6 and goes to the even 4.
        assert_eq!(encode(7.0), 0x7);
        assert_eq!(encode(5.0), 0x6);
        assert_eq!(encode(0.25), 0x0);
        assert_eq!(encode(0.26), 0x1);
        assert_eq!(encode(-0.0), 0x8);
        assert_eq!(encode(f64::NAN), 0x8);
        assert_eq!(encode(-f64::NAN), 0x0);
    }

    proptest! {
        #[test]
        fn rounding_matches_brute_force(bits in any::<u64>()) {
            let value = f64::from_bits(bits);
            prop_assume!(value.is_finite());
            let got = encode(value);
            if value.abs() <= MAX {
                prop_assert_eq!(got, nearest_reference(value), "{}", value);
            } else {
                prop_assert_eq!(got, (got & SIGN) | MAX_CODE);
            }
        }

        #[test]
        fn small_values_round_like_brute_force(value in -8.0f64..8.0) {
            let got = encode(value);
            if value.abs() <= MAX {
                prop_assert_eq!(got, nearest_reference(value), "{}", value);
            }
        }
    }
}
