//! The four 8-bit float formats and their exact conversions.
//!
//! Encoding rounds the exact input value to nearest, ties to even. What happens to
//! values beyond the largest finite value follows the ONNX `Cast` operator
//! (opset 19+) for its `saturate` attribute:
//!
//! | input          | saturate = 1  | saturate = 0: E4M3FN | E5M2 | FNUZ formats |
//! |----------------|---------------|----------------------|------|--------------|
//! | NaN            | NaN           | NaN                  | NaN  | NaN (0x80)   |
//! | ±Inf           | ±max finite   | ±NaN                 | ±Inf | NaN (0x80)   |
//! | \|x\| rounds above max | ±max finite | ±NaN          | ±Inf | NaN (0x80)   |
//!
//! "Rounds above max" is decided after rounding: E4M3FN's max is 448 and 464 (the
//! midpoint to the next, unrepresentable, step 480) still rounds to 448 by ties-to-even.
//! The FNUZ formats have no negative zero: negative values that round to zero encode
//! as +0 (0x00), because 0x80 is their only NaN.

use std::fmt;

use super::rounding::pow2;

/// An 8-bit floating-point format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Float8Format {
    /// 1 sign, 4 exponent (bias 7), 3 mantissa; finite only; NaN = S.1111.111; max 448.
    E4M3FN,
    /// 1 sign, 5 exponent (bias 15), 2 mantissa; IEEE-like with ±Inf; max 57344.
    E5M2,
    /// 1 sign, 4 exponent (bias 8), 3 mantissa; no Inf, no -0, NaN = 0x80; max 240.
    /// This is the Graphcore IPU's F143 format.
    E4M3FNUZ,
    /// 1 sign, 5 exponent (bias 16), 2 mantissa; no Inf, no -0, NaN = 0x80; max 57344.
    E5M2FNUZ,
}

/// How a format spends its special codes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Specials {
    /// Exponent all ones and mantissa all ones is NaN (both signs); everything else finite.
    FiniteNanAllOnes,
    /// IEEE: exponent all ones is Inf (mantissa 0) or NaN.
    Ieee,
    /// 0x80 is the only NaN; no -0, no Inf.
    NegativeZeroIsNan,
}

impl Float8Format {
    /// All four formats.
    pub const ALL: [Float8Format; 4] = [
        Float8Format::E4M3FN,
        Float8Format::E5M2,
        Float8Format::E4M3FNUZ,
        Float8Format::E5M2FNUZ,
    ];

    /// Number of mantissa (fraction) bits.
    pub const fn mantissa_bits(self) -> u32 {
        match self {
            Float8Format::E4M3FN | Float8Format::E4M3FNUZ => 3,
            Float8Format::E5M2 | Float8Format::E5M2FNUZ => 2,
        }
    }

    /// Number of exponent bits.
    pub const fn exponent_bits(self) -> u32 {
        7 - self.mantissa_bits()
    }

    /// Exponent bias.
    pub const fn exponent_bias(self) -> i32 {
        match self {
            Float8Format::E4M3FN => 7,
            Float8Format::E5M2 => 15,
            Float8Format::E4M3FNUZ => 8,
            Float8Format::E5M2FNUZ => 16,
        }
    }

    const fn specials(self) -> Specials {
        match self {
            Float8Format::E4M3FN => Specials::FiniteNanAllOnes,
            Float8Format::E5M2 => Specials::Ieee,
            Float8Format::E4M3FNUZ | Float8Format::E5M2FNUZ => Specials::NegativeZeroIsNan,
        }
    }

    /// The MLIR spelling (`f8E4M3FN`, ...).
    pub const fn mlir_name(self) -> &'static str {
        match self {
            Float8Format::E4M3FN => "f8E4M3FN",
            Float8Format::E5M2 => "f8E5M2",
            Float8Format::E4M3FNUZ => "f8E4M3FNUZ",
            Float8Format::E5M2FNUZ => "f8E5M2FNUZ",
        }
    }

    /// The code of the largest finite value (positive sign).
    pub const fn max_finite_code(self) -> u8 {
        match self.specials() {
            Specials::FiniteNanAllOnes => 0x7E,
            Specials::Ieee => 0x7B,
            Specials::NegativeZeroIsNan => 0x7F,
        }
    }

    /// The largest finite value: 448, 57344, 240, 57344.
    pub fn max_finite(self) -> f64 {
        self.decode_f64(self.max_finite_code())
    }

    /// The canonical NaN code for a NaN of the given sign (sign is dropped by the
    /// FNUZ formats, whose only NaN is 0x80).
    pub const fn nan_code(self, negative: bool) -> u8 {
        let sign = if negative { 0x80 } else { 0 };
        match self.specials() {
            Specials::FiniteNanAllOnes => 0x7F | sign,
            // The quiet-NaN pattern (mantissa MSB set), as an f32 quiet NaN truncates
            // to; this is what ONNX's reference (ml_dtypes) and onnxruntime produce.
            Specials::Ieee => 0x7E | sign,
            Specials::NegativeZeroIsNan => 0x80,
        }
    }

    /// True if `code` is a NaN in this format.
    pub const fn is_nan(self, code: u8) -> bool {
        match self.specials() {
            Specials::FiniteNanAllOnes => code & 0x7F == 0x7F,
            Specials::Ieee => code & 0x7C == 0x7C && code & 0x03 != 0,
            Specials::NegativeZeroIsNan => code == 0x80,
        }
    }

    /// Decodes a code to its exact value (every f8 value is exact in f32 and f64).
    pub fn decode_f64(self, code: u8) -> f64 {
        if self.is_nan(code) {
            return f64::NAN;
        }
        let negative = code & 0x80 != 0;
        let m_bits = self.mantissa_bits();
        let exponent = i32::from((code & 0x7F) >> m_bits);
        let mantissa = f64::from(code & ((1 << m_bits) - 1));
        let magnitude =
            if self.specials() == Specials::Ieee && exponent == (1 << self.exponent_bits()) - 1 {
                f64::INFINITY
            } else if exponent == 0 {
                // Subnormal: 0.mantissa × 2^(1 - bias).
                mantissa * pow2(1 - self.exponent_bias() - m_bits as i32)
            } else {
                (f64::from(1u32 << m_bits) + mantissa)
                    * pow2(exponent - self.exponent_bias() - m_bits as i32)
            };
        if negative {
            -magnitude
        } else {
            magnitude
        }
    }

    /// Decodes a code to f32 (exact).
    pub fn decode_f32(self, code: u8) -> f32 {
        // Every value of every f8 format is exactly representable in f32.
        self.decode_f64(code) as f32
    }

    /// Encodes an f32 with round-to-nearest-even and ONNX `saturate` semantics.
    pub fn encode_f32(self, value: f32, saturate: bool) -> u8 {
        // f32 -> f64 is exact, so rounding from the f64 is rounding from the f32.
        self.encode_f64(f64::from(value), saturate)
    }

    /// Encodes an f64 with round-to-nearest-even and ONNX `saturate` semantics
    /// (see the module documentation for the overflow table).
    ///
    /// On the bits: the magnitude's 53-bit significand `M` (`|value| = M
    /// 2^(e-52)`) counted in quanta of the code's spacing `2^q`, `q =
    /// max(e, 1 - bias) - m`, is `M >> s` with `s = 52 + q - e`, rounded to
    /// nearest even by the bits shifted out. Counted so, the codes of one
    /// sign are consecutive integers: `r` quanta of a subnormal are code `r`
    /// (and `2^m` quanta the smallest normal), and in binade `e` code
    /// `((e - (1 - bias)) << m) + r` (a carry to `2^(m+1)` quanta is the
    /// next binade's first code). Weights of whole models go through here
    /// (so400m: 428 M), so no float rounding calls.
    pub fn encode_f64(self, value: f64, saturate: bool) -> u8 {
        let negative = value.is_sign_negative();
        let sign: u8 = if negative { 0x80 } else { 0 };
        if value.is_nan() {
            return self.nan_code(negative);
        }
        let overflow = || {
            if saturate {
                sign | self.max_finite_code()
            } else {
                match self.specials() {
                    Specials::Ieee => sign | 0x7C,
                    _ => self.nan_code(negative),
                }
            }
        };
        let zero = || match self.specials() {
            Specials::NegativeZeroIsNan => 0x00,
            _ => sign,
        };
        let bits = value.to_bits() & !(1u64 << 63);
        let biased = (bits >> 52) as i32;
        if biased == 0x7FF {
            return overflow();
        }
        if biased == 0 {
            // f64 zeros and subnormals: far below every format's
            // smallest subnormal's half.
            return zero();
        }
        let m_bits = self.mantissa_bits() as i32;
        let min_normal_exponent = 1 - self.exponent_bias();
        let e = biased - 1023;
        let significand = (bits & ((1u64 << 52) - 1)) | (1u64 << 52);
        let q = e.max(min_normal_exponent) - m_bits;
        let shift = 52 + q - e;
        if shift > 53 {
            // Below half the smallest subnormal.
            return zero();
        }
        let shift = shift as u32;
        let kept = significand >> shift;
        let rest = significand & ((1u64 << shift) - 1);
        let half = 1u64 << (shift - 1);
        let quanta = kept + u64::from(rest > half || (rest == half && kept & 1 == 1));
        if quanta == 0 {
            return zero();
        }
        let code =
            ((e.max(min_normal_exponent) - min_normal_exponent) as u64) * (1 << m_bits) + quanta;
        if code > u64::from(self.max_finite_code()) {
            return overflow();
        }
        sign | code as u8
    }
}

impl fmt::Display for Float8Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.mlir_name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Independent reference: the nearest finite code by brute force over all codes,
    /// ties broken towards the code with an even mantissa (the even neighbour).
    fn nearest_code_reference(format: Float8Format, value: f64) -> Option<u8> {
        let mut best: Option<(f64, u8)> = None;
        for code in 0u8..=0xFF {
            let v = format.decode_f64(code);
            if !v.is_finite() {
                continue;
            }
            // FNUZ formats have only +0; the others keep the sign of zero.
            if v == 0.0
                && format.specials() != Specials::NegativeZeroIsNan
                && (code & 0x80 != 0) != value.is_sign_negative()
            {
                continue;
            }
            let d = (v - value).abs();
            match best {
                None => best = Some((d, code)),
                Some((bd, bc)) => {
                    if d < bd || (d == bd && code & 1 == 0 && bc & 1 == 1) {
                        best = Some((d, code));
                    }
                }
            }
        }
        best.map(|(_, code)| code)
    }

    #[test]
    fn max_values_match_the_format_definitions() {
        assert_eq!(Float8Format::E4M3FN.max_finite(), 448.0);
        assert_eq!(Float8Format::E5M2.max_finite(), 57344.0);
        assert_eq!(Float8Format::E4M3FNUZ.max_finite(), 240.0);
        assert_eq!(Float8Format::E5M2FNUZ.max_finite(), 57344.0);
    }

    #[test]
    fn every_code_round_trips() {
        for format in Float8Format::ALL {
            for code in 0u8..=0xFF {
                let v = format.decode_f32(code);
                if format.is_nan(code) {
                    assert!(v.is_nan());
                    assert!(format.is_nan(format.encode_f32(v, true)));
                    continue;
                }
                if format.specials() == Specials::NegativeZeroIsNan && code == 0 {
                    assert_eq!(format.encode_f32(-0.0, true), 0, "{format}: -0 -> +0");
                }
                if v.is_infinite() {
                    // Only E5M2 has infinities; saturation clamps them to ±max.
                    assert_eq!(format.encode_f32(v, false), code);
                    assert_eq!(
                        format.encode_f32(v, true),
                        (code & 0x80) | format.max_finite_code()
                    );
                    continue;
                }
                for saturate in [true, false] {
                    assert_eq!(
                        format.encode_f32(v, saturate),
                        code,
                        "{format} code {code:#04x} value {v} saturate={saturate}"
                    );
                }
            }
        }
    }

    #[test]
    fn specific_codes_decode_as_specified() {
        // F143 (E4M3FNUZ): 1.0 = exponent 8 (bias 8), smallest subnormal 2^-10.
        assert_eq!(Float8Format::E4M3FNUZ.decode_f64(0x40), 1.0);
        assert_eq!(Float8Format::E4M3FNUZ.decode_f64(0x01), 2f64.powi(-10));
        assert_eq!(Float8Format::E4M3FN.decode_f64(0x38), 1.0);
        assert_eq!(Float8Format::E4M3FN.decode_f64(0x01), 2f64.powi(-9));
        assert_eq!(Float8Format::E5M2.decode_f64(0x3C), 1.0);
        assert_eq!(Float8Format::E5M2.decode_f64(0x7C), f64::INFINITY);
        assert_eq!(Float8Format::E5M2.decode_f64(0xFC), f64::NEG_INFINITY);
        assert_eq!(Float8Format::E5M2FNUZ.decode_f64(0x40), 1.0);
        assert!(Float8Format::E5M2FNUZ.decode_f64(0x80).is_nan());
        assert_eq!(Float8Format::E4M3FN.decode_f64(0x80), 0.0);
        assert!(Float8Format::E4M3FN.decode_f64(0x80).is_sign_negative());
    }

    #[test]
    fn rounding_matches_brute_force_nearest_even() {
        // Midpoints between neighbours, points just off them, and a deterministic sweep.
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        for format in Float8Format::ALL {
            let mut values = Vec::new();
            let finite: Vec<f64> = (0u8..=0x7F)
                .map(|c| format.decode_f64(c))
                .filter(|v| v.is_finite())
                .collect();
            for pair in finite.windows(2) {
                let mid = (pair[0] + pair[1]) / 2.0;
                values.extend([mid, mid * (1.0 + 1e-12), mid * (1.0 - 1e-12), pair[0]]);
            }
            // Far below the smallest subnormal's half, at it, just above
            // it, and f64 subnormals.
            let tiny = format.decode_f64(1);
            values.extend([
                tiny / 2.0,
                tiny / 2.0 * (1.0 + 1e-12),
                tiny / 4.0,
                1e-300,
                f64::from_bits(1),
            ]);
            for _ in 0..20_000 {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let unit = (rng >> 11) as f64 / (1u64 << 53) as f64;
                values.push(format.max_finite() * unit * 1.02);
            }
            for v in values {
                for value in [v, -v] {
                    let got = format.encode_f64(value, true);
                    let rounded = format.decode_f64(got);
                    // Within range, the result must be the brute-force nearest-even code.
                    if value.abs() < format.max_finite() {
                        let want = nearest_code_reference(format, value).unwrap();
                        assert_eq!(got, want, "{format}: {value}");
                    } else {
                        assert_eq!(rounded.abs(), format.max_finite(), "{format}: {value}");
                    }
                }
            }
        }
    }

    #[test]
    fn overflow_follows_onnx_saturate_semantics() {
        use Float8Format::*;
        // Saturating: everything beyond range (including infinities) clamps.
        for format in Float8Format::ALL {
            let max = format.max_finite_code();
            assert_eq!(format.encode_f64(f64::INFINITY, true), max);
            assert_eq!(format.encode_f64(f64::NEG_INFINITY, true), 0x80 | max);
            assert_eq!(format.encode_f64(1e9, true), max);
            assert_eq!(format.encode_f64(-1e9, true), 0x80 | max);
        }
        // Non-saturating.
        assert_eq!(E4M3FN.encode_f64(f64::INFINITY, false), 0x7F);
        assert_eq!(E4M3FN.encode_f64(-1e9, false), 0xFF);
        assert_eq!(E5M2.encode_f64(f64::INFINITY, false), 0x7C);
        assert_eq!(E5M2.encode_f64(-1e9, false), 0xFC);
        assert_eq!(E4M3FNUZ.encode_f64(f64::INFINITY, false), 0x80);
        assert_eq!(E5M2FNUZ.encode_f64(-1e9, false), 0x80);
        // Ties at the top: 464 sits between 448 (even mantissa) and 480 (not
        // representable): ties-to-even keeps 448; anything above overflows.
        assert_eq!(E4M3FN.encode_f64(464.0, false), 0x7E);
        assert_eq!(E4M3FN.encode_f64(464.0001, false), 0x7F);
        // F143: 240 = 1.111 × 2^7; 248 would be the odd-mantissa neighbour's midpoint.
        assert_eq!(E4M3FNUZ.encode_f64(247.9, false), 0x7F);
        assert_eq!(E4M3FNUZ.encode_f64(248.0, false), 0x80);
        // Negative values rounding to zero become +0 in FNUZ formats, -0 elsewhere.
        assert_eq!(E4M3FNUZ.encode_f64(-1e-9, true), 0x00);
        assert_eq!(E4M3FN.encode_f64(-1e-9, true), 0x80);
        assert_eq!(E5M2.encode_f64(-0.0, false), 0x80);
    }
}
