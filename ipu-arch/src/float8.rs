//! The IPU's FP8 format "F143" = `f8E4M3FNUZ`: 1 sign, 4 exponent bits
//! (bias 8), 3 mantissa bits; largest value 240; no infinities; the only
//! NaN is 0x80 (there is no negative zero). Tensors carry a power-of-two
//! scale s in -31..=31: the value of byte q is `decode(q) * 2^s`.

use ipuc_numeric::Float8Format;

/// The largest finite value.
pub const F8_MAX: f64 = 240.0;
/// The NaN encoding.
pub const F8_NAN: u8 = 0x80;
/// Allowed range of the per-tensor scale.
pub const SCALE_RANGE: std::ops::RangeInclusive<i32> = -31..=31;

/// Decodes one byte (NaN for 0x80).
pub fn f8_to_f64(q: u8) -> f64 {
    Float8Format::E4M3FNUZ.decode_f64(q)
}

/// Encodes a value: round to nearest, ties to even; finite values beyond
/// the range saturate to +-240; NaN and infinities become 0x80 (the IPU's
/// conversion; the rounding itself is `ipuc_numeric`'s).
pub fn f64_to_f8(v: f64) -> u8 {
    if !v.is_finite() {
        return F8_NAN;
    }
    Float8Format::E4M3FNUZ.encode_f64(v, true)
}

/// [`f64_to_f8`] over many values, each value's code remembered in a
/// small direct-mapped table keyed by its bits. A model's weights reach the
/// lowering as values decoded from FP8 codes (scaled by a power of two):
/// a few hundred distinct values among millions, so nearly every value is
/// a hit. Any value gives exactly [`f64_to_f8`]'s code.
pub struct F8Encoder {
    /// `(bits, code)` of the last value seen in each slot.
    table: Box<[Option<(u64, u8)>; F8Encoder::SLOTS]>,
}

impl F8Encoder {
    const SLOTS: usize = 512;

    /// An encoder that remembers nothing yet.
    pub fn new() -> Self {
        F8Encoder {
            table: Box::new([None; F8Encoder::SLOTS]),
        }
    }

    /// The table slot of a value's bits: its sign, its exponent's low 5
    /// bits and its top 3 mantissa bits, distinct for the values of the
    /// FP8 codes of one scale (18 binades) and of either sign. (Without
    /// the sign, `v` and `-v` shared a slot and weights of random sign
    /// missed about half the time.)
    #[inline]
    fn slot(bits: u64) -> usize {
        (((bits >> 63) << 8) | ((bits >> 49) & 0xff)) as usize
    }

    /// `f64_to_f8(v)`.
    #[inline]
    pub fn encode(&mut self, v: f64) -> u8 {
        let bits = v.to_bits();
        let slot = Self::slot(bits);
        match self.table[slot] {
            Some((b, code)) if b == bits => code,
            _ => {
                let code = f64_to_f8(v);
                self.table[slot] = Some((bits, code));
                code
            }
        }
    }
}

impl Default for F8Encoder {
    fn default() -> Self {
        Self::new()
    }
}

/// Encodes with a tensor scale: `f64_to_f8(v * 2^-scale)`.
pub fn encode_scaled(v: f64, scale: i32) -> u8 {
    f64_to_f8(v * 2f64.powi(-scale))
}

/// Decodes with a tensor scale: `f8_to_f64(q) * 2^scale`.
pub fn decode_scaled(q: u8, scale: i32) -> f64 {
    f8_to_f64(q) * 2f64.powi(scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The memo gives f64_to_f8's code for every value: the values of all
    /// codes at every scale (the hits), values between them (ties
    /// included), and the specials.
    #[test]
    fn the_encoders_memo_changes_no_code() {
        let mut e = F8Encoder::new();
        let mut values = vec![
            f64::NAN,
            f64::INFINITY,
            -f64::INFINITY,
            0.0,
            -0.0,
            1e300,
            -1e-300,
        ];
        for scale in SCALE_RANGE {
            for q in 0..=255u8 {
                let v = decode_scaled(q, scale);
                values.extend([v, v * 1.03125, v * 1.0625, -v * 0.96875]);
            }
        }
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(f64::from_bits(x) % 512.0);
        }
        // Twice: the second pass answers from the table.
        for _ in 0..2 {
            for &v in &values {
                assert_eq!(e.encode(v), f64_to_f8(v), "{v:e} ({:#x})", v.to_bits());
            }
        }
    }

    /// The values of one scale's codes, of either sign, take distinct
    /// slots: a stream of weights misses once per code at most.
    #[test]
    fn one_scales_codes_take_distinct_slots() {
        for scale in SCALE_RANGE {
            let mut seen = std::collections::HashMap::new();
            for q in (0..=255u8).filter(|&q| q != 0 && q != F8_NAN) {
                let slot = F8Encoder::slot(decode_scaled(q, scale).to_bits());
                assert!(slot < F8Encoder::SLOTS);
                if let Some(other) = seen.insert(slot, q) {
                    panic!("codes {other:#x} and {q:#x} share slot {slot} at scale {scale}");
                }
            }
        }
    }

    #[test]
    fn known_values() {
        assert_eq!(f8_to_f64(0x7f), 240.0);
        assert_eq!(f8_to_f64(0x01), 2f64.powi(-10));
        assert_eq!(f8_to_f64(0x40), 1.0);
        assert!(f8_to_f64(0x80).is_nan());
        assert_eq!(f64_to_f8(1.0), 0x40);
        assert_eq!(f64_to_f8(-1.0), 0xc0);
        assert_eq!(f64_to_f8(1000.0), 0x7f);
        assert_eq!(f64_to_f8(-1000.0), 0xff);
        assert_eq!(f64_to_f8(f64::INFINITY), 0x80);
        assert_eq!(f64_to_f8(-0.0), 0);
        assert_eq!(f64_to_f8(-1e-9), 0);
        // 1 + 1/16 is a tie between 1 and 1.125: even mantissa (1.0) wins.
        assert_eq!(f64_to_f8(1.0625), 0x40);
        // 1 + 3/16 ties between 1.125 and 1.25: even is 1.25.
        assert_eq!(f64_to_f8(1.1875), 0x42);
    }

    #[test]
    fn every_code_round_trips_and_rounding_is_nearest() {
        let codes: Vec<(u8, f64)> = (0u8..=255)
            .filter(|&q| q != F8_NAN)
            .map(|q| (q, f8_to_f64(q)))
            .collect();
        for &(q, v) in &codes {
            let back = f64_to_f8(v);
            assert!(back == q || (v == 0.0 && back == 0), "{q:#x}");
        }
        // Brute force nearest for a sweep of values.
        let mut x = -250.0;
        while x < 250.0 {
            let q = f64_to_f8(x);
            let got = f8_to_f64(q);
            let clamped = x.clamp(-F8_MAX, F8_MAX);
            let best = codes
                .iter()
                .map(|c| (c.1 - clamped).abs())
                .fold(f64::INFINITY, f64::min);
            assert!(
                ((got - clamped).abs() - best).abs() < 1e-12,
                "x={x} got={got}"
            );
            x += 0.0137;
        }
    }
}
