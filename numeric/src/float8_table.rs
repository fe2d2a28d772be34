//! Table-driven encoding of whole `f32` and `f16` tensors, times a power of
//! two, into an 8-bit float format: the same codes as
//! [`Float8Format::encode_f64`] of `f64::from(x) * factor`, one table look-up
//! an element (a model's weights go through here: so400m's 428 M, quantised
//! to FP8 at their scale).
//!
//! Why a table is exact: an 8-bit format keeps at most 4 significant bits (1
//! implicit, 3 stored) and rounds at the bit below them, so of a normal
//! `f32`'s 24-bit significand (bits 23..0 of the magnitude, 23 implicit) the
//! code depends on bits 23..19 and on whether any lower bit is set (the
//! *sticky* bit of round to nearest even). Scaling by a power of two (exact
//! in `f64`) moves the exponent only, and the fewer bits a subnormal code
//! keeps move the rounding bit up, never down. So every normal `f32` whose
//! upper 16 bits are `hi` encodes as `hi << 16` does when its lower 16 bits
//! are zero, and as `hi << 16 | 1` does otherwise: the table holds those two
//! codes for each of the 65536 values of `hi`. Infinities and NaNs follow too
//! (NaN iff a mantissa bit is set; the code depends on the sign alone).
//! `f32` subnormals (exponent field 0) hold significant bits anywhere, so
//! they, and only they, take [`Float8Format::encode_f64`] itself. An `f16`
//! has 65536 values: its table holds each one's code.
//!
//! Building a table takes 131072 (65536) reference encodings, about a
//! millisecond; it pays for itself from a few hundred thousand elements.

use crate::float8::Float8Format;

/// Codes of one format at one scale, for `f32` or `f16` input.
pub struct Float8Table {
    format: Float8Format,
    factor: f64,
    saturate: bool,
    /// `f32`: entry `hi << 1 | sticky`; `f16`: entry `bits`.
    codes: Box<[u8]>,
}

impl Float8Table {
    /// The table of `format.encode_f64(f64::from(x) * factor, saturate)`
    /// for `f32` values `x`; `None` unless `factor` is a power of two (the
    /// product is then exact, which the table relies on).
    pub fn for_f32(format: Float8Format, factor: f64, saturate: bool) -> Option<Float8Table> {
        if !is_power_of_two(factor) {
            return None;
        }
        let codes = (0..1u32 << 17)
            .map(|i| {
                let bits = (i >> 1) << 16 | (i & 1);
                format.encode_f64(f64::from(f32::from_bits(bits)) * factor, saturate)
            })
            .collect();
        Some(Float8Table {
            format,
            factor,
            saturate,
            codes,
        })
    }

    /// The table of `format.encode_f64(x.to_f64() * factor, saturate)` for
    /// every `f16` value `x` (any `factor`: the table holds every value's
    /// own code).
    pub fn for_f16(format: Float8Format, factor: f64, saturate: bool) -> Float8Table {
        let codes = (0..=u16::MAX)
            .map(|bits| format.encode_f64(half::f16::from_bits(bits).to_f64() * factor, saturate))
            .collect();
        Float8Table {
            format,
            factor,
            saturate,
            codes,
        }
    }

    /// The code of the `f32` with bits `bits` (a table built by
    /// [`Self::for_f32`]).
    #[inline]
    pub fn encode_f32_bits(&self, bits: u32) -> u8 {
        if bits & 0x7F80_0000 == 0 {
            // Zero or subnormal: significant bits may sit below bit 16.
            let v = f64::from(f32::from_bits(bits)) * self.factor;
            return self.format.encode_f64(v, self.saturate);
        }
        let sticky = u32::from(bits & 0xFFFF != 0);
        self.codes[((bits >> 16) << 1 | sticky) as usize]
    }

    /// Encodes little-endian `f32` elements `src` into `dst` (one code per
    /// element; `dst.len() * 4 == src.len()`), with a table built by
    /// [`Self::for_f32`].
    pub fn encode_f32_bytes(&self, src: &[u8], dst: &mut [u8]) {
        assert_eq!(src.len(), dst.len() * 4, "one code per f32");
        for (d, s) in dst.iter_mut().zip(src.chunks_exact(4)) {
            *d = self.encode_f32_bits(u32::from_le_bytes([s[0], s[1], s[2], s[3]]));
        }
    }

    /// Encodes little-endian `f16` elements `src` into `dst` (one code per
    /// element; `dst.len() * 2 == src.len()`), with a table built by
    /// [`Self::for_f16`].
    pub fn encode_f16_bytes(&self, src: &[u8], dst: &mut [u8]) {
        assert_eq!(src.len(), dst.len() * 2, "one code per f16");
        for (d, s) in dst.iter_mut().zip(src.chunks_exact(2)) {
            *d = self.codes[usize::from(u16::from_le_bytes([s[0], s[1]]))];
        }
    }
}

/// Whether `x` is a positive (normal) power of two.
fn is_power_of_two(x: f64) -> bool {
    x.is_normal() && x > 0.0 && x.to_bits() & ((1u64 << 52) - 1) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scales that move values across binades, into subnormal codes and
    /// beyond the largest finite value (2^-9 .. 2^11, and 2^140, which
    /// lifts f32 subnormals into range).
    fn factors() -> Vec<f64> {
        [0, -2, -9, 6, 11, 140].map(|e| 2f64.powi(e)).to_vec()
    }

    fn formats() -> impl Iterator<Item = (Float8Format, bool)> {
        Float8Format::ALL
            .into_iter()
            .flat_map(|f| [(f, true), (f, false)])
    }

    #[test]
    fn every_f16_encodes_as_the_reference() {
        let src: Vec<u8> = (0..=u16::MAX).flat_map(|b| b.to_le_bytes()).collect();
        let mut dst = vec![0u8; 1 << 16];
        for (format, saturate) in formats() {
            for factor in factors() {
                let table = Float8Table::for_f16(format, factor, saturate);
                table.encode_f16_bytes(&src, &mut dst);
                for bits in 0..=u16::MAX {
                    let v = half::f16::from_bits(bits).to_f64() * factor;
                    assert_eq!(
                        dst[usize::from(bits)],
                        format.encode_f64(v, saturate),
                        "{format} {bits:#06x} x {factor}"
                    );
                }
            }
        }
    }

    /// f32 bit patterns the table could get wrong: every upper half with
    /// lower halves 0, 1, 0x8000 (the rounding bit of nothing), 0xFFFF and
    /// a pseudo-random one, and every pattern whose lower 16 bits are
    /// nonzero around the ties of the E4M3 formats' rounding bit (upper
    /// halves with bit 19 set).
    fn f32_patterns() -> Vec<u32> {
        let mut out = Vec::with_capacity(6 << 16);
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        for hi in 0..=u32::from(u16::MAX) {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            for lo in [0, 1, 0x8000, 0xFFFF, (rng as u32) & 0xFFFF] {
                out.push(hi << 16 | lo);
            }
        }
        out
    }

    fn check_f32(patterns: &[u32], factors: &[f64]) {
        let src: Vec<u8> = patterns.iter().flat_map(|b| b.to_le_bytes()).collect();
        let mut dst = vec![0u8; patterns.len()];
        for (format, saturate) in formats() {
            for &factor in factors {
                let table = Float8Table::for_f32(format, factor, saturate).expect("a power of two");
                table.encode_f32_bytes(&src, &mut dst);
                for (&bits, &got) in patterns.iter().zip(&dst) {
                    let v = f64::from(f32::from_bits(bits)) * factor;
                    assert_eq!(
                        got,
                        format.encode_f64(v, saturate),
                        "{format} {bits:#010x} x {factor}"
                    );
                }
            }
        }
    }

    #[test]
    fn f32_bit_patterns_encode_as_the_reference() {
        check_f32(&f32_patterns(), &factors());
    }

    #[test]
    fn a_sweep_of_f32_values_encodes_as_the_reference() {
        // Every 4099th f32 pattern (about a million: each exponent, both
        // signs, subnormals, infinities and NaNs), at the weights' usual
        // scales.
        let patterns: Vec<u32> = (0..=u32::MAX).step_by(4099).collect();
        check_f32(&patterns, &[1.0, 2048.0, 4096.0, 1.0 / 8.0]);
    }

    #[test]
    fn ties_and_the_top_of_the_range_encode_as_the_reference() {
        // Midpoints between neighbouring codes (ties), one f32 ulp either
        // side, and values around 240, 448 and 57344, for every format.
        let mut values: Vec<f32> = Vec::new();
        for format in Float8Format::ALL {
            let finite: Vec<f64> = (0u8..=0x7F)
                .map(|c| format.decode_f64(c))
                .filter(|v| v.is_finite())
                .collect();
            for pair in finite.windows(2) {
                let mid = ((pair[0] + pair[1]) / 2.0) as f32;
                values.extend([mid, f32::from_bits(mid.to_bits() + 1), pair[0] as f32]);
                if mid.to_bits() > 0 {
                    values.push(f32::from_bits(mid.to_bits() - 1));
                }
            }
            let max = format.max_finite() as f32;
            for d in -70i32..70 {
                values.push(f32::from_bits(max.to_bits().wrapping_add_signed(d << 12)));
            }
        }
        let patterns: Vec<u32> = values
            .iter()
            .flat_map(|v| [v.to_bits(), (-v).to_bits()])
            .collect();
        check_f32(&patterns, &[1.0]);
    }

    #[test]
    fn f32_factors_must_be_powers_of_two() {
        assert!(Float8Table::for_f32(Float8Format::E4M3FNUZ, 3.0, true).is_none());
        assert!(is_power_of_two(0.25) && is_power_of_two(1.0) && is_power_of_two(2048.0));
        assert!(!is_power_of_two(3.0) && !is_power_of_two(0.0) && !is_power_of_two(-2.0));
        assert!(!is_power_of_two(f64::INFINITY) && !is_power_of_two(f64::NAN));
    }
}
