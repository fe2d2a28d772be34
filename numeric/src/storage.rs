//! Element-wise access to little-endian tensor storage of any [`ElementKind`].
//!
//! These are the conversions every executor and folder must agree on:
//! - float → narrower float rounds once, to nearest even, from the exact value;
//! - float → 8-bit float follows ONNX `Cast` `saturate` semantics ([`Float8Format`]);
//! - float → FLOAT4E2M1 rounds to nearest even and saturates ([`float4`]); float →
//!   FLOAT8E8M0 follows ONNX `Cast`'s `round_mode` and `saturate` ([`float8_e8m0`]);
//! - float → integer truncates toward zero and then clamps to the target range
//!   (NaN becomes 0). ONNX leaves out-of-range float→int casts undefined; clamping
//!   is Rust's `as` behaviour and is deterministic on every platform;
//! - float → 4- and 2-bit integer truncates toward zero and then wraps modulo 2^bits
//!   (NaN and ±Inf become 0): ONNX's reference (`ml_dtypes`) converts so, and the
//!   backend tests' expected outputs depend on it (`Cast(-9.0)` to INT4 is 7);
//! - integer → integer wraps modulo 2^bits (two's complement), as numpy and ONNX
//!   runtimes do;
//! - integer → float rounds once, to nearest even, even for 64-bit values that do not
//!   fit f64's 53-bit significand;
//! - anything → bool is `value != 0` (NaN is true, as in numpy).

use super::packing::widen_code;
use super::{bf16, f16, float4, float8_e8m0, rounding, E8M0Rounding, ElementKind, Float8Format};

fn read<const N: usize>(bytes: &[u8], index: usize) -> [u8; N] {
    bytes[index * N..index * N + N]
        .try_into()
        .expect("slice has length N")
}

/// Reads element `index` as an f64. Float kinds are exact; 64-bit integers beyond
/// 2^53 round to nearest even.
///
/// Panics if `index` is out of bounds of `bytes` for `kind`.
pub fn load_f64(kind: ElementKind, bytes: &[u8], index: usize) -> f64 {
    match kind {
        ElementKind::F32 => f64::from(f32::from_le_bytes(read(bytes, index))),
        ElementKind::F64 => f64::from_le_bytes(read(bytes, index)),
        ElementKind::F16 => f16::from_le_bytes(read(bytes, index)).to_f64(),
        ElementKind::BF16 => bf16::from_le_bytes(read(bytes, index)).to_f64(),
        ElementKind::F8E4M3FN
        | ElementKind::F8E5M2
        | ElementKind::F8E4M3FNUZ
        | ElementKind::F8E5M2FNUZ => float8(kind).decode_f64(bytes[index]),
        ElementKind::F4E2M1FN => float4::decode(bytes[index]),
        ElementKind::F8E8M0FNU => float8_e8m0::decode(bytes[index]),
        _ => load_i128(kind, bytes, index) as f64,
    }
}

/// Reads element `index` as an f32, rounding f64 storage and large integers once.
pub fn load_f32(kind: ElementKind, bytes: &[u8], index: usize) -> f32 {
    match kind {
        ElementKind::F32 => f32::from_le_bytes(read(bytes, index)),
        ElementKind::F64 => f64::from_le_bytes(read(bytes, index)) as f32,
        _ if kind.is_float() => load_f64(kind, bytes, index) as f32,
        // i128 -> f32 with `as` rounds once, to nearest even.
        _ => load_i128(kind, bytes, index) as f32,
    }
}

/// Reads element `index` as an integer. Float kinds truncate toward zero and clamp
/// to the i128 range (NaN is 0); `Bool` is 0 or 1.
pub fn load_i128(kind: ElementKind, bytes: &[u8], index: usize) -> i128 {
    match kind {
        ElementKind::Bool => i128::from(bytes[index] != 0),
        ElementKind::I8 => i128::from(bytes[index] as i8),
        ElementKind::U8 => i128::from(bytes[index]),
        ElementKind::I16 => i128::from(i16::from_le_bytes(read(bytes, index))),
        ElementKind::U16 => i128::from(u16::from_le_bytes(read(bytes, index))),
        ElementKind::I32 => i128::from(i32::from_le_bytes(read(bytes, index))),
        ElementKind::U32 => i128::from(u32::from_le_bytes(read(bytes, index))),
        ElementKind::I64 => i128::from(i64::from_le_bytes(read(bytes, index))),
        ElementKind::U64 => i128::from(u64::from_le_bytes(read(bytes, index))),
        // Only the low bits count: a byte written by anyone (sign-extended or not)
        // reads as the same element.
        ElementKind::I2 | ElementKind::I4 => i128::from(widen_code(kind, bytes[index]) as i8),
        ElementKind::U2 | ElementKind::U4 => i128::from(widen_code(kind, bytes[index])),
        _ => load_f64(kind, bytes, index) as i128,
    }
}

/// The first `count` elements, each read as [`load_f64`] reads it.
pub fn load_all_f64(kind: ElementKind, bytes: &[u8], count: usize) -> Vec<f64> {
    (0..count).map(|i| load_f64(kind, bytes, i)).collect()
}

/// The first `count` elements, each read as [`load_i128`] reads it.
pub fn load_all_i128(kind: ElementKind, bytes: &[u8], count: usize) -> Vec<i128> {
    (0..count).map(|i| load_i128(kind, bytes, i)).collect()
}

/// The first `count` elements as 64-bit integers (shape-like values): each read as
/// [`load_i128`] reads it, then cut to its low 64 bits as `as` casts (a `u64` above
/// `i64::MAX` wraps negative).
pub fn load_all_i64(kind: ElementKind, bytes: &[u8], count: usize) -> Vec<i64> {
    (0..count)
        .map(|i| load_i128(kind, bytes, i) as i64)
        .collect()
}

/// Writes `value` as element `index`, converting as the module documentation says.
/// `saturate` only matters for 8-bit float targets; FLOAT8E8M0 rounds up (ONNX's
/// default `round_mode`, see [`store_f64_rounding`]).
pub fn store_f64(kind: ElementKind, bytes: &mut [u8], index: usize, value: f64, saturate: bool) {
    store_f64_rounding(kind, bytes, index, value, saturate, E8M0Rounding::Up);
}

/// [`store_f64`] with ONNX `Cast`'s `round_mode` for FLOAT8E8M0 targets (ignored
/// for every other kind).
pub fn store_f64_rounding(
    kind: ElementKind,
    bytes: &mut [u8],
    index: usize,
    value: f64,
    saturate: bool,
    e8m0_rounding: E8M0Rounding,
) {
    match kind {
        ElementKind::F32 => write(bytes, index, &(value as f32).to_le_bytes()),
        ElementKind::F64 => write(bytes, index, &value.to_le_bytes()),
        ElementKind::F16 => write(bytes, index, &rounding::f16_from_f64(value).to_le_bytes()),
        ElementKind::BF16 => write(bytes, index, &rounding::bf16_from_f64(value).to_le_bytes()),
        ElementKind::F8E4M3FN
        | ElementKind::F8E5M2
        | ElementKind::F8E4M3FNUZ
        | ElementKind::F8E5M2FNUZ => bytes[index] = float8(kind).encode_f64(value, saturate),
        ElementKind::F4E2M1FN => bytes[index] = float4::encode(value),
        ElementKind::F8E8M0FNU => {
            bytes[index] = float8_e8m0::encode(value, saturate, e8m0_rounding);
        }
        ElementKind::Bool => bytes[index] = u8::from(value != 0.0),
        ElementKind::I2 | ElementKind::I4 | ElementKind::U2 | ElementKind::U4 => {
            store_i128(kind, bytes, index, truncate_for_wrapping(value));
        }
        _ => {
            let (lo, hi) = kind.integer_range().expect("integer kind");
            // `as i128` truncates toward zero and maps NaN to 0.
            store_i128(kind, bytes, index, (value as i128).clamp(lo, hi));
        }
    }
}

/// Writes an integer `value` as element `index`: integer targets wrap modulo their
/// width, float targets round once to nearest even, `Bool` is `value != 0`.
pub fn store_i128(kind: ElementKind, bytes: &mut [u8], index: usize, value: i128) {
    match kind {
        ElementKind::Bool => bytes[index] = u8::from(value != 0),
        ElementKind::I8 | ElementKind::U8 => bytes[index] = value as u8,
        ElementKind::I2 | ElementKind::I4 | ElementKind::U2 | ElementKind::U4 => {
            bytes[index] = widen_code(kind, value as u8);
        }
        ElementKind::I16 | ElementKind::U16 => write(bytes, index, &(value as u16).to_le_bytes()),
        ElementKind::I32 | ElementKind::U32 => write(bytes, index, &(value as u32).to_le_bytes()),
        ElementKind::I64 | ElementKind::U64 => write(bytes, index, &(value as u64).to_le_bytes()),
        ElementKind::F64 => write(bytes, index, &(value as f64).to_le_bytes()),
        ElementKind::F32 => write(bytes, index, &(value as f32).to_le_bytes()),
        _ => store_f64(kind, bytes, index, i128_to_f64_round_to_odd(value), true),
    }
}

/// `value` truncated toward zero, as an integer that is congruent to it modulo 2^8
/// (all the sub-byte targets need): exact below 2^64, and 0 above, where every f64 is
/// a multiple of 2^12. NaN and ±Inf are 0.
fn truncate_for_wrapping(value: f64) -> i128 {
    if !value.is_finite() || value.abs() >= 2f64.powi(64) {
        0
    } else {
        value.trunc() as i128
    }
}

fn write(bytes: &mut [u8], index: usize, le: &[u8]) {
    let n = le.len();
    bytes[index * n..index * n + n].copy_from_slice(le);
}

fn float8(kind: ElementKind) -> Float8Format {
    kind.float8_format().expect("8-bit float kind")
}

/// Converts to f64 rounding to odd (truncate, then set the last bit if anything was
/// dropped). Rounding that result to any format with at most 51 significand bits gives
/// the correctly rounded value of the original integer, which avoids double rounding
/// for 64-bit integers stored into f32/f16/bf16/f8.
pub fn i128_to_f64_round_to_odd(value: i128) -> f64 {
    let magnitude = value.unsigned_abs();
    let significant_bits = 128 - magnitude.leading_zeros();
    let result = if significant_bits <= 53 {
        magnitude as f64
    } else {
        let shift = significant_bits - 53;
        let kept = magnitude >> shift;
        let sticky = u128::from(magnitude & ((1u128 << shift) - 1) != 0);
        // `kept | sticky` has 53 bits, exact in f64; scale back by 2^shift exactly.
        ((kept | sticky) as f64) * 2f64.powi(shift as i32)
    };
    if value < 0 {
        -result
    } else {
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_all_i64_truncates_floats_and_wraps_u64() {
        let floats: Vec<u8> = [-2.7f32, 3.9, 0.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(load_all_i64(ElementKind::F32, &floats, 3), [-2, 3, 0]);
        let big: Vec<u8> = [u64::MAX, 5].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(load_all_i64(ElementKind::U64, &big, 2), [-1, 5]);
        // Only the first `count` elements are read.
        assert_eq!(load_all_i64(ElementKind::U64, &big, 1), [-1]);
    }

    /// Correct rounding of `x` to f16, by exact comparison with the two neighbours of
    /// a candidate: independent of how `half` implements `from_f64`.
    fn f16_reference(x: f64) -> f16 {
        // IEEE overflow: at or beyond max + half an ulp (65504 + 16) is ±Inf.
        if x.abs() >= 65520.0 {
            return if x < 0.0 {
                f16::NEG_INFINITY
            } else {
                f16::INFINITY
            };
        }
        let candidate = f16::from_f32(x as f32);
        let mut best = candidate;
        for neighbour in [
            candidate.to_bits().wrapping_sub(1),
            candidate.to_bits().wrapping_add(1),
        ] {
            let n = f16::from_bits(neighbour);
            if !n.is_finite() || n.is_sign_negative() != x.is_sign_negative() {
                continue;
            }
            let (dn, db) = ((n.to_f64() - x).abs(), (best.to_f64() - x).abs());
            if dn < db || (dn == db && neighbour & 1 == 0) {
                best = n;
            }
        }
        best
    }

    #[test]
    fn f16_from_f64_rounds_once() {
        // Values that round differently through f32 (double rounding): an f16 midpoint
        // plus a tiny bit that f32 loses.
        let one_plus_half_ulp = 1.0 + 2f64.powi(-11);
        let tricky = one_plus_half_ulp + 2f64.powi(-40);
        assert_eq!(
            rounding::f16_from_f64(tricky).to_f64(),
            1.0 + 2f64.powi(-10)
        );
        let mut rng = 0x1234_5678_9ABC_DEF1u64;
        for _ in 0..200_000 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let x =
                f64::from_bits((rng & 0x800F_FFFF_FFFF_FFFF) | (((rng >> 52) % 40 + 1000) << 52));
            assert_eq!(
                rounding::f16_from_f64(x).to_bits(),
                f16_reference(x).to_bits(),
                "{x:e}"
            );
        }
    }

    #[test]
    fn load_store_round_trip_every_kind() {
        for kind in ElementKind::ALL {
            let mut buf = vec![0u8; kind.byte_size() * 3];
            for (i, v) in [1.0, -2.0, 0.5].into_iter().enumerate() {
                store_f64(kind, &mut buf, i, v, true);
            }
            let expect = |v: f64| match kind {
                ElementKind::Bool => f64::from(v != 0.0),
                // Sub-byte unsigned targets wrap, wider ones clamp.
                ElementKind::U2 | ElementKind::U4 if v < 0.0 => {
                    v + f64::from(1u32 << kind.bit_width())
                }
                k if k.is_unsigned_integer() && v < 0.0 => 0.0,
                // A bare exponent has no sign.
                ElementKind::F8E8M0FNU => v.abs(),
                k if k.is_integer() => v.trunc(),
                _ => v,
            };
            for (i, v) in [1.0, -2.0, 0.5].into_iter().enumerate() {
                assert_eq!(load_f64(kind, &buf, i), expect(v), "{kind}[{i}]");
            }
        }
    }

    #[test]
    fn sub_byte_integers_wrap_from_floats_and_integers() {
        let mut buf = [0u8; 1];
        // float -> int4 wraps (ONNX reference): -9 -> 7, 8 -> -8, 15.5 -> -1.
        for (kind, value, want) in [
            (ElementKind::I4, -9.0, 7),
            (ElementKind::I4, 8.0, -8),
            (ElementKind::I4, 15.5, -1),
            (ElementKind::I4, -2.7, -2),
            (ElementKind::U4, -1.0, 15),
            (ElementKind::U4, 1e30, 0),
            (ElementKind::I2, 2.0, -2),
            (ElementKind::U2, -3.0, 1),
            (ElementKind::I4, f64::NAN, 0),
            (ElementKind::U4, f64::INFINITY, 0),
        ] {
            store_f64(kind, &mut buf, 0, value, true);
            assert_eq!(load_i128(kind, &buf, 0), want, "{kind} {value}");
        }
        store_i128(ElementKind::I4, &mut buf, 0, 200);
        assert_eq!((buf[0], load_i128(ElementKind::I4, &buf, 0)), (0xF8, -8));
        // Loads only look at the low bits.
        assert_eq!(load_i128(ElementKind::I4, &[0x0F], 0), -1);
        assert_eq!(load_i128(ElementKind::U2, &[0xFF], 0), 3);
    }

    #[test]
    fn wrapping_from_floats_is_exact_modulo_the_width() {
        // Against i128 arithmetic on values that are exact in f64, up to 2^70.
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        let mut buf = [0u8; 1];
        for _ in 0..20_000 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let exponent = (rng % 70) as i32;
            let value = ((rng >> 8) as f64 / (1u64 << 56) as f64) * 2f64.powi(exponent);
            let value = if rng & 1 == 0 { value } else { -value };
            for kind in [
                ElementKind::I4,
                ElementKind::U4,
                ElementKind::I2,
                ElementKind::U2,
            ] {
                store_f64(kind, &mut buf, 0, value, true);
                let bits = kind.bit_width();
                let exact = if value.abs() < 2f64.powi(100) {
                    value.trunc() as i128
                } else {
                    0
                };
                let modulus = 1i128 << bits;
                assert_eq!(
                    load_i128(kind, &buf, 0).rem_euclid(modulus),
                    exact.rem_euclid(modulus),
                    "{kind} {value}"
                );
            }
        }
    }

    #[test]
    fn integer_stores_wrap_and_float_to_int_clamps() {
        let mut buf = [0u8; 1];
        store_i128(ElementKind::I8, &mut buf, 0, 200);
        assert_eq!(load_i128(ElementKind::I8, &buf, 0), -56);
        store_f64(ElementKind::I8, &mut buf, 0, 1e10, true);
        assert_eq!(load_i128(ElementKind::I8, &buf, 0), 127);
        store_f64(ElementKind::U8, &mut buf, 0, f64::NAN, true);
        assert_eq!(load_i128(ElementKind::U8, &buf, 0), 0);
        store_f64(ElementKind::I8, &mut buf, 0, -3.9, true);
        assert_eq!(load_i128(ElementKind::I8, &buf, 0), -3);
    }

    #[test]
    fn large_integers_round_once_into_narrow_floats() {
        // bf16 keeps 8 significant bits: around 2^60 its spacing is 2^53.
        let mut buf = [0u8; 2];
        let cases: [(i128, f64); 3] = [
            // An exact tie rounds to the even neighbour (2^60).
            ((1 << 60) + (1 << 52), 2f64.powi(60)),
            // One above the tie rounds up. Through f64 first this would become the tie
            // (61 significant bits -> 53) and then round down: double rounding.
            ((1 << 60) + (1 << 52) + 1, 2f64.powi(60) + 2f64.powi(53)),
            (-(1 << 60) - (1 << 52) - 1, -(2f64.powi(60) + 2f64.powi(53))),
        ];
        for (value, want) in cases {
            store_i128(ElementKind::BF16, &mut buf, 0, value);
            assert_eq!(load_f64(ElementKind::BF16, &buf, 0), want, "{value}");
        }
    }
}
