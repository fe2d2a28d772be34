//! Bit-exact encoding and decoding of the float formats the IR can hold,
//! used by the printer and parser for float attributes and dense elements.
//! The formats themselves live in [`crate::numeric`]; this module maps
//! [`FloatKind`] onto them.

use std::sync::Arc;

use crate::attributes::zeroed_bytes;
use crate::numeric::{float4, float8_e8m0, rounding, E8M0Rounding, Float8Format, Float8Table};
use crate::types::FloatKind;

fn float8(kind: FloatKind) -> Option<Float8Format> {
    Some(match kind {
        FloatKind::F8E4M3FN => Float8Format::E4M3FN,
        FloatKind::F8E5M2 => Float8Format::E5M2,
        FloatKind::F8E4M3FNUZ => Float8Format::E4M3FNUZ,
        FloatKind::F8E5M2FNUZ => Float8Format::E5M2FNUZ,
        _ => return None,
    })
}

/// Decodes `bytes` (little-endian storage of `kind`) to an `f64`.
pub fn decode(kind: FloatKind, bytes: &[u8]) -> f64 {
    match kind {
        FloatKind::F16 => half::f16::from_bits(u16::from_le_bytes([bytes[0], bytes[1]])).to_f64(),
        FloatKind::BF16 => half::bf16::from_bits(u16::from_le_bytes([bytes[0], bytes[1]])).to_f64(),
        FloatKind::F32 => f32::from_le_bytes(bytes[..4].try_into().expect("4 bytes")) as f64,
        FloatKind::F64 => f64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")),
        FloatKind::F4E2M1FN => float4::decode(bytes[0]),
        FloatKind::F8E8M0FNU => float8_e8m0::decode(bytes[0]),
        _ => float8(kind).expect("8-bit float").decode_f64(bytes[0]),
    }
}

/// Decodes every element of `bytes` (little-endian, `kind`'s storage
/// width each) in order: [`decode`] of each, with the kind matched once
/// and the 8-bit formats through a table of their 256 codes (a model's
/// weights go through here: so400m's 428 M).
pub fn decode_all(kind: FloatKind, bytes: &[u8]) -> Vec<f64> {
    let mut out = Vec::with_capacity(bytes.len() / kind.byte_size().max(1));
    decode_into(kind, bytes, &mut out);
    out
}

/// The largest magnitude among the elements of `bytes` (as
/// [`decode_all`] reads them), without collecting them: NaN if any is
/// NaN, 0 for none.
pub fn max_abs(kind: FloatKind, bytes: &[u8]) -> f64 {
    if kind == FloatKind::F32 {
        // On the bits: magnitudes order as their bit patterns do, and a
        // NaN's is above infinity's (one pass over so400m's 1.7 GB of
        // weights, vectorised, where decoding each is a branch).
        let magnitude = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) & 0x7FFF_FFFF;
        // Eight lanes over 32-byte blocks, words first (the compiler
        // vectorises this form: 2.3 times the speed of the plain fold),
        // then the rest.
        let mut lanes = [0u32; 8];
        let blocks = bytes.chunks_exact(32);
        let rest = blocks.remainder();
        for block in blocks {
            let words: [u32; 8] = std::array::from_fn(|i| magnitude(&block[4 * i..4 * i + 4]));
            for (lane, word) in lanes.iter_mut().zip(words) {
                *lane = if word > *lane { word } else { *lane };
            }
        }
        let top = rest
            .chunks_exact(4)
            .map(magnitude)
            .chain(lanes)
            .fold(0, u32::max);
        return if top > 0x7F80_0000 {
            f64::NAN
        } else {
            f64::from(f32::from_bits(top))
        };
    }
    fold_decoded(kind, bytes, 0.0, |m: f64, v| {
        if v.is_nan() || m.is_nan() {
            f64::NAN
        } else {
            m.max(v.abs())
        }
    })
}

/// Folds `f` over the elements of `bytes` decoded in order, as
/// [`decode_all`] reads them (the kind matched once).
fn fold_decoded<B>(kind: FloatKind, bytes: &[u8], init: B, f: impl FnMut(B, f64) -> B) -> B {
    match kind {
        FloatKind::F16 => bytes
            .chunks_exact(2)
            .map(|b| half::f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f64())
            .fold(init, f),
        FloatKind::F32 => bytes
            .chunks_exact(4)
            .map(|b| f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])))
            .fold(init, f),
        FloatKind::F64 | FloatKind::BF16 => {
            let width = if kind == FloatKind::F64 { 8 } else { 2 };
            bytes
                .chunks_exact(width)
                .map(|b| decode(kind, b))
                .fold(init, f)
        }
        _ => {
            let table: Vec<f64> = (0..=255u8).map(|c| decode(kind, &[c])).collect();
            bytes.iter().map(|&c| table[usize::from(c)]).fold(init, f)
        }
    }
}

/// Rounds `v` to `kind` (nearest, ties to even; `f8E8M0FNU`, a bare exponent,
/// rounds to the nearest power of two, ties up) and returns the storage bits.
pub fn encode_bits(kind: FloatKind, v: f64) -> u64 {
    match kind {
        FloatKind::F16 => rounding::f16_from_f64(v).to_bits() as u64,
        FloatKind::BF16 => rounding::bf16_from_f64(v).to_bits() as u64,
        FloatKind::F32 => (v as f32).to_bits() as u64,
        FloatKind::F64 => v.to_bits(),
        FloatKind::F4E2M1FN => float4::encode(v) as u64,
        // Out-of-range values clamp, as for the other formats without infinity.
        FloatKind::F8E8M0FNU => float8_e8m0::encode(v, true, E8M0Rounding::Nearest) as u64,
        _ => {
            // Out-of-range values clamp to the largest finite value; an
            // infinity stays one where the format has them (E5M2).
            let keep_infinity = v.is_infinite() && kind == FloatKind::F8E5M2;
            float8(kind)
                .expect("8-bit float")
                .encode_f64(v, !keep_infinity) as u64
        }
    }
}

/// Decodes storage bits of `kind`.
pub fn decode_bits(kind: FloatKind, bits: u64) -> f64 {
    let bytes = bits.to_le_bytes();
    decode(kind, &bytes)
}

/// Rounds `v` to the nearest value representable in `kind`.
pub fn round_to(kind: FloatKind, v: f64) -> f64 {
    decode_bits(kind, encode_bits(kind, v))
}

/// The storage bytes of every value rounded to `kind`, in order:
/// [`push_bytes`] of each, with the kind matched once (a model's weights
/// go through here: so400m's 428 M to FP8).
pub fn encode_all(kind: FloatKind, values: &[f64]) -> Vec<u8> {
    let mut out = vec![0; values.len() * kind.byte_size().max(1)];
    encode_into(kind, values, &mut out);
    out
}

/// `encode_all(to, decode_all(from, bytes) * factor)` without the
/// decoded values in between, straight into one shared buffer (a blob's
/// data: no copy after), on the host's threads for large data (a model's
/// weights rounded to FP8 at their scale: so400m's 428 M). The same bytes
/// whatever the thread count: each thread encodes a run of whole elements
/// into its own part of the buffer.
///
/// `f32` and `f16` data to the saturating 8-bit formats (all but `f8E5M2`)
/// at a power-of-two `factor` (every FP8 scale) take a
/// [`Float8Table`]: one look-up an element, the same codes.
pub fn encode_scaled(from: FloatKind, bytes: &[u8], factor: f64, to: FloatKind) -> Arc<[u8]> {
    let width = from.byte_size().max(1);
    let to_width = to.byte_size().max(1);
    let elements = bytes.len() / width;
    let mut out = zeroed_bytes(elements * to_width);
    let dst = Arc::get_mut(&mut out).expect("a new buffer is unique");
    /// Elements from which a table pays for its 131072 encodings.
    const TABLE_FROM: usize = 1 << 16;
    let table = match (float8(to).filter(|_| to != FloatKind::F8E5M2), from) {
        (Some(format), FloatKind::F32) if elements >= TABLE_FROM => {
            Float8Table::for_f32(format, factor, true).map(|t| (t, true))
        }
        (Some(format), FloatKind::F16) if elements >= TABLE_FROM => {
            Some((Float8Table::for_f16(format, factor, true), false))
        }
        _ => None,
    };
    let encode_run = |src: &[u8], dst: &mut [u8]| match &table {
        Some((t, true)) => t.encode_f32_bytes(src, dst),
        Some((t, false)) => t.encode_f16_bytes(src, dst),
        None => encode_scaled_into(from, src, factor, to, dst),
    };
    /// Elements below which one thread encodes everything.
    const PARALLEL_FROM: usize = 1 << 20;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    if elements < PARALLEL_FROM || threads < 2 {
        encode_run(&bytes[..elements * width], dst);
        return out;
    }
    let per = elements.div_ceil(threads);
    std::thread::scope(|scope| {
        for (src, dst) in bytes[..elements * width]
            .chunks(per * width)
            .zip(dst.chunks_mut(per * to_width))
        {
            scope.spawn(move || encode_run(src, dst));
        }
    });
    out
}

/// [`encode_scaled`]'s element by element path: the elements of `src`
/// (`from`) times `factor`, rounded to `to` into `dst` (`to`'s storage
/// width an element).
fn encode_scaled_into(from: FloatKind, src: &[u8], factor: f64, to: FloatKind, dst: &mut [u8]) {
    match float8(to).filter(|_| to != FloatKind::F8E5M2) {
        Some(format) => {
            let rest = fold_decoded(from, src, dst.iter_mut(), |mut out, v| {
                *out.next().expect("a code per element") = format.encode_f64(v * factor, true);
                out
            });
            debug_assert_eq!(rest.len(), 0, "a code for every element");
        }
        None => {
            let to_width = to.byte_size().max(1);
            let rest = fold_decoded(from, src, dst.chunks_exact_mut(to_width), |mut out, v| {
                let bits = encode_bits(to, v * factor).to_le_bytes();
                out.next()
                    .expect("room per element")
                    .copy_from_slice(&bits[..to_width]);
                out
            });
            debug_assert_eq!(rest.len(), 0, "bytes for every element");
        }
    }
}

/// Decodes the elements of `bytes` into `out` (cleared first), as
/// [`decode_all`] does: for a caller that decodes a large tensor a piece
/// at a time into one buffer.
pub fn decode_into(kind: FloatKind, bytes: &[u8], out: &mut Vec<f64>) {
    out.clear();
    let buffer = std::mem::take(out);
    *out = fold_decoded(kind, bytes, buffer, |mut out, v| {
        out.push(v);
        out
    });
}

/// The storage bytes of `values` rounded to `kind`, written into `out`
/// (`kind`'s storage width an element): [`encode_all`] without a new
/// buffer.
pub fn encode_into(kind: FloatKind, values: &[f64], out: &mut [u8]) {
    let width = kind.byte_size().max(1);
    assert_eq!(out.len(), values.len() * width, "room for every value");
    match (kind, float8(kind)) {
        (FloatKind::F32, _) => {
            for (o, &v) in out.chunks_exact_mut(4).zip(values) {
                o.copy_from_slice(&(v as f32).to_le_bytes());
            }
        }
        (_, Some(format)) if kind != FloatKind::F8E5M2 => {
            for (o, &v) in out.iter_mut().zip(values) {
                *o = format.encode_f64(v, true);
            }
        }
        _ => {
            for (o, &v) in out.chunks_exact_mut(width).zip(values) {
                o.copy_from_slice(&encode_bits(kind, v).to_le_bytes()[..width]);
            }
        }
    }
}

/// Appends the storage bytes of `v` rounded to `kind`.
pub fn push_bytes(kind: FloatKind, v: f64, out: &mut Vec<u8>) {
    let bits = encode_bits(kind, v);
    out.extend_from_slice(&bits.to_le_bytes()[..kind.byte_size()]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaled_encoding_is_decoding_scaling_and_encoding() {
        // Every f16 pattern (and f32 values around FP8's range and ties),
        // at scales that move values across binades and out of range; past
        // the parallel threshold too (the same bytes as one thread's).
        let f16_bytes: Vec<u8> = (0..=u16::MAX).flat_map(|b| b.to_le_bytes()).collect();
        let f32_bytes: Vec<u8> = (0..(3 << 20) as u32)
            .map(|i| ((i as f32) - 1.5e6) * 1.7e-4)
            .flat_map(|v| v.to_le_bytes())
            .collect();
        for (from, bytes) in [(FloatKind::F16, &f16_bytes), (FloatKind::F32, &f32_bytes)] {
            for factor in [1.0, 0.25, 2f64.powi(-9), 64.0] {
                for to in [FloatKind::F8E4M3FNUZ, FloatKind::F16, FloatKind::F8E5M2] {
                    let scaled: Vec<f64> =
                        decode_all(from, bytes).iter().map(|v| v * factor).collect();
                    let want = encode_all(to, &scaled);
                    assert!(
                        encode_scaled(from, bytes, factor, to)[..] == want[..],
                        "{from:?} -> {to:?} at {factor}"
                    );
                }
            }
        }
    }

    #[test]
    fn decoding_all_at_once_matches_decoding_each() {
        // Every byte value at every offset, for every kind (NaNs compared
        // by being NaN).
        let bytes: Vec<u8> = (0..4096u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for kind in FloatKind::ALL {
            let width = match kind {
                FloatKind::F16 | FloatKind::BF16 => 2,
                FloatKind::F32 => 4,
                FloatKind::F64 => 8,
                _ => 1,
            };
            let each: Vec<f64> = bytes.chunks_exact(width).map(|b| decode(kind, b)).collect();
            let all = decode_all(kind, &bytes);
            assert_eq!(all.len(), each.len(), "{kind:?}");
            for (i, (a, e)) in all.iter().zip(&each).enumerate() {
                assert!(
                    a.to_bits() == e.to_bits() || (a.is_nan() && e.is_nan()),
                    "{kind:?} {i}"
                );
            }
        }
    }

    #[test]
    fn the_largest_magnitude_is_that_of_the_decoded_elements() {
        let bytes: Vec<u8> = (0..4096u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for kind in FloatKind::ALL {
            let all = decode_all(kind, &bytes);
            let want = if all.iter().any(|v| v.is_nan()) {
                f64::NAN
            } else {
                all.iter().fold(0.0, |m: f64, v| m.max(v.abs()))
            };
            let got = max_abs(kind, &bytes);
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "{kind:?}: {got} vs {want}"
            );
        }
        // The f32 scan's blocks and its remainder: every length in words.
        for words in 0..bytes.len() / 4 {
            let part = &bytes[4 * (bytes.len() / 4 - words)..];
            let all = decode_all(FloatKind::F32, part);
            let want = if all.iter().any(|v| v.is_nan()) {
                f64::NAN
            } else {
                all.iter().fold(0.0, |m: f64, v| m.max(v.abs()))
            };
            let got = max_abs(FloatKind::F32, part);
            assert!(got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()));
        }
        // One NaN among finite values makes it NaN; none makes it 0.
        let mut f32s: Vec<u8> = [1.5f32, -3.0, f32::NAN, 2.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert!(max_abs(FloatKind::F32, &f32s).is_nan());
        f32s.truncate(8);
        assert_eq!(max_abs(FloatKind::F32, &f32s), 3.0);
        assert_eq!(max_abs(FloatKind::F32, &[]), 0.0);
    }

    #[test]
    fn encoding_all_at_once_matches_encoding_each() {
        // Values across every format's range: subnormals, ties, beyond
        // the largest finite, infinities and NaN.
        let mut values: Vec<f64> = (0..2000)
            .map(|i| {
                let x = f64::from(i) * 0.37 - 370.0;
                x * 2f64.powi(i % 41 - 20)
            })
            .collect();
        values.extend([0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 1e300]);
        for kind in FloatKind::ALL {
            let mut each = Vec::new();
            for &v in &values {
                push_bytes(kind, v, &mut each);
            }
            assert_eq!(encode_all(kind, &values), each, "{kind:?}");
        }
    }

    /// The buffers' encoders and decoder (which `encode_all` and
    /// `decode_all` are) against the element-at-a-time `push_bytes` and
    /// `decode`.
    #[test]
    fn encoding_and_decoding_into_buffers_match_one_element_at_a_time() {
        let mut values: Vec<f64> = (0..3000)
            .map(|i| (f64::from(i) * 0.37 - 555.0) * 2f64.powi(i % 47 - 23))
            .collect();
        values.extend([0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 1e300]);
        let mut decoded = vec![7.0; 3];
        for kind in FloatKind::ALL {
            let mut want = Vec::new();
            values.iter().for_each(|&v| push_bytes(kind, v, &mut want));
            let mut got = vec![0xAA; want.len()];
            encode_into(kind, &values, &mut got);
            assert_eq!(got, want, "{kind:?}");
            decode_into(kind, &want, &mut decoded);
            let width = kind.byte_size();
            assert_eq!(decoded.len(), want.len() / width, "{kind:?}");
            for (b, d) in want.chunks_exact(width).zip(&decoded) {
                let a = decode(kind, b);
                assert!(a.to_bits() == d.to_bits() || (a.is_nan() && d.is_nan()));
            }
        }
    }

    #[test]
    fn microscaling_formats_round_trip_every_code() {
        for code in 0u64..16 {
            let v = decode_bits(FloatKind::F4E2M1FN, code);
            assert_eq!(encode_bits(FloatKind::F4E2M1FN, v), code);
        }
        assert_eq!(round_to(FloatKind::F4E2M1FN, 5.5), 6.0);
        assert_eq!(round_to(FloatKind::F4E2M1FN, 100.0), 6.0);
        for code in 0u64..255 {
            let v = decode_bits(FloatKind::F8E8M0FNU, code);
            assert_eq!(encode_bits(FloatKind::F8E8M0FNU, v), code);
        }
        assert!(decode_bits(FloatKind::F8E8M0FNU, 0xFF).is_nan());
        assert_eq!(round_to(FloatKind::F8E8M0FNU, 3.0), 4.0);
        assert_eq!(round_to(FloatKind::F8E8M0FNU, 2.9), 2.0);
        let mut bytes = Vec::new();
        push_bytes(FloatKind::F4E2M1FN, -6.0, &mut bytes);
        assert_eq!(bytes, [0x0F]);
    }

    #[test]
    fn f8e4m3fnuz_extremes() {
        let k = FloatKind::F8E4M3FNUZ;
        assert_eq!(decode_bits(k, 0x7f), 240.0);
        assert!(decode_bits(k, 0x80).is_nan());
        assert_eq!(decode_bits(k, 0x01), 2f64.powi(-10));
        for code in 0u64..256 {
            let v = decode_bits(k, code);
            if !v.is_nan() {
                assert_eq!(encode_bits(k, v), if code == 0x80 { 0 } else { code });
            }
        }
    }

    #[test]
    fn f8e4m3fn_and_e5m2_extremes() {
        assert_eq!(decode_bits(FloatKind::F8E4M3FN, 0x7e), 448.0);
        assert!(decode_bits(FloatKind::F8E4M3FN, 0x7f).is_nan());
        assert_eq!(decode_bits(FloatKind::F8E5M2, 0x7b), 57344.0);
        assert!(decode_bits(FloatKind::F8E5M2, 0x7c).is_infinite());
        assert_eq!(decode_bits(FloatKind::F8E5M2FNUZ, 0x7f), 57344.0);
    }

    #[test]
    fn ties_round_to_even() {
        // 1.0625 is halfway between 1.0 (mantissa 000) and 1.125 (001) in E4M3.
        assert_eq!(round_to(FloatKind::F8E4M3FNUZ, 1.0625), 1.0);
        assert_eq!(round_to(FloatKind::F8E4M3FNUZ, 1.1875), 1.25);
    }
}
