//! Element-wise access to little-endian tensor storage of any [`ElementKind`].
//!
//! These are the conversions every executor and folder must agree on:
//! - float → narrower float rounds once, to nearest even, from the exact value;
//! - float → 8-bit float follows ONNX `Cast` `saturate` semantics ([`Float8Format`]);
//! - float → integer truncates toward zero and then clamps to the target range
//!   (NaN becomes 0). ONNX leaves out-of-range float→int casts undefined; clamping
//!   is Rust's `as` behaviour and is deterministic on every platform;
//! - integer → integer wraps modulo 2^bits (two's complement), as numpy and ONNX
//!   runtimes do;
//! - integer → float rounds once, to nearest even, even for 64-bit values that do not
//!   fit f64's 53-bit significand;
//! - anything → bool is `value != 0` (NaN is true, as in numpy).

use super::{bf16, f16, rounding, ElementKind, Float8Format};

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
        _ => load_f64(kind, bytes, index) as i128,
    }
}

/// Writes `value` as element `index`, converting as the module documentation says.
/// `saturate` only matters for 8-bit float targets.
pub fn store_f64(kind: ElementKind, bytes: &mut [u8], index: usize, value: f64, saturate: bool) {
    match kind {
        ElementKind::F32 => write(bytes, index, &(value as f32).to_le_bytes()),
        ElementKind::F64 => write(bytes, index, &value.to_le_bytes()),
        ElementKind::F16 => write(bytes, index, &rounding::f16_from_f64(value).to_le_bytes()),
        ElementKind::BF16 => write(bytes, index, &rounding::bf16_from_f64(value).to_le_bytes()),
        ElementKind::F8E4M3FN
        | ElementKind::F8E5M2
        | ElementKind::F8E4M3FNUZ
        | ElementKind::F8E5M2FNUZ => bytes[index] = float8(kind).encode_f64(value, saturate),
        ElementKind::Bool => bytes[index] = u8::from(value != 0.0),
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
        ElementKind::I16 | ElementKind::U16 => write(bytes, index, &(value as u16).to_le_bytes()),
        ElementKind::I32 | ElementKind::U32 => write(bytes, index, &(value as u32).to_le_bytes()),
        ElementKind::I64 | ElementKind::U64 => write(bytes, index, &(value as u64).to_le_bytes()),
        ElementKind::F64 => write(bytes, index, &(value as f64).to_le_bytes()),
        ElementKind::F32 => write(bytes, index, &(value as f32).to_le_bytes()),
        _ => store_f64(kind, bytes, index, i128_to_f64_round_to_odd(value), true),
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
/// for 64-bit integers stored into f16/bf16/f8.
fn i128_to_f64_round_to_odd(value: i128) -> f64 {
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
                k if k.is_unsigned_integer() && v < 0.0 => 0.0,
                k if k.is_integer() => v.trunc(),
                _ => v,
            };
            for (i, v) in [1.0, -2.0, 0.5].into_iter().enumerate() {
                assert_eq!(load_f64(kind, &buf, i), expect(v), "{kind}[{i}]");
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
