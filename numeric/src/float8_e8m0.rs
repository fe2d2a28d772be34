//! FLOAT8E8M0 (MLIR `f8E8M0FNU`, the OCP microscaling scale): a bare 8-bit exponent
//! with bias 127, no sign and no mantissa; code `c` is 2^(c - 127), 0xFF is NaN.
//!
//! Encoding follows ONNX `Cast` (opset 24+): the value is first converted to f32, as
//! ONNX's reference (`onnx.numpy_helper.to_float8e8m0`) does, and its f32 exponent
//! field becomes the code, adjusted by the `round_mode` attribute ([`E8M0Rounding`]).
//! The sign is ignored (ONNX leaves negative inputs unspecified). With `saturate`,
//! rounding never carries past the largest code 0xFE, and ±Inf gives 0xFE (the
//! spec's table: "Inf → E8M0_MAX"); without it a carry past 0xFE and ±Inf give NaN.
//! A zero or f32-subnormal input keeps the exponent field 0 (2^-127) unless rounding
//! carries, as the reference does.

/// NaN's code.
pub const NAN_CODE: u8 = 0xFF;
/// The largest finite code, 2^127.
pub const MAX_CODE: u8 = 0xFE;

/// How a value between two powers of two picks one: ONNX `Cast`'s `round_mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum E8M0Rounding {
    /// Away from zero (to the next power of two up): ONNX's default.
    #[default]
    Up,
    /// Toward zero (truncate the mantissa).
    Down,
    /// To nearest, ties up.
    Nearest,
}

impl E8M0Rounding {
    /// Parses ONNX's attribute value (`up`, `down`, `nearest`).
    pub fn from_onnx(name: &str) -> Option<E8M0Rounding> {
        match name {
            "up" => Some(E8M0Rounding::Up),
            "down" => Some(E8M0Rounding::Down),
            "nearest" => Some(E8M0Rounding::Nearest),
            _ => None,
        }
    }

    /// The ONNX attribute value.
    pub const fn onnx_name(self) -> &'static str {
        match self {
            E8M0Rounding::Up => "up",
            E8M0Rounding::Down => "down",
            E8M0Rounding::Nearest => "nearest",
        }
    }
}

/// Decodes a code: 2^(code - 127), or NaN for 0xFF.
pub fn decode(code: u8) -> f64 {
    if code == NAN_CODE {
        f64::NAN
    } else {
        super::rounding::pow2(i32::from(code) - 127)
    }
}

/// Encodes `value` as the module documentation says.
pub fn encode(value: f64, saturate: bool, rounding: E8M0Rounding) -> u8 {
    // The reference converts to f32 first (round to nearest even, overflow to Inf).
    let bits = (value as f32).to_bits();
    let exponent = (bits >> 23) & 0xFF;
    let fraction = bits & 0x7F_FFFF;
    if exponent == 0xFF {
        let infinite = fraction == 0;
        return if infinite && saturate {
            MAX_CODE
        } else {
            NAN_CODE
        };
    }
    let round_up = match rounding {
        E8M0Rounding::Down => false,
        E8M0Rounding::Up => fraction != 0,
        E8M0Rounding::Nearest => {
            // Guard, round and sticky bits of the f32 mantissa; the implicit leading
            // bit of a normal number counts as the "odd" bit, so its ties go up.
            let guard = fraction & 0x40_0000 != 0;
            let round = fraction & 0x20_0000 != 0;
            let sticky = fraction & 0x1F_FFFF != 0;
            guard && (round || sticky || exponent > 0)
        }
    };
    if round_up && saturate && exponent == u32::from(MAX_CODE) {
        return MAX_CODE;
    }
    // Without saturation, a carry out of 0xFE lands on 0xFF: NaN.
    (exponent + u32::from(round_up)) as u8
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The code an f64-exact search picks for a normal f32 magnitude `x`: the
    /// largest power of two at most `x` (down), the smallest at least `x` (up), or
    /// the nearer of the two, ties up (nearest). Past 2^127 the power above is
    /// 2^128, which has no code: NaN.
    fn reference(x: f64, rounding: E8M0Rounding) -> u8 {
        let below = (0u8..=MAX_CODE).rev().find(|&c| decode(c) <= x).unwrap();
        let above = (0u8..=MAX_CODE).find(|&c| decode(c) >= x);
        let above_value = above.map_or(2f64.powi(128), decode);
        let above = above.unwrap_or(NAN_CODE);
        match rounding {
            E8M0Rounding::Down => below,
            E8M0Rounding::Up => above,
            E8M0Rounding::Nearest if x - decode(below) < above_value - x => below,
            E8M0Rounding::Nearest => above,
        }
    }

    #[test]
    fn codes_are_powers_of_two() {
        assert_eq!(decode(127), 1.0);
        assert_eq!(decode(0), 2f64.powi(-127));
        assert_eq!(decode(MAX_CODE), 2f64.powi(127));
        assert!(decode(NAN_CODE).is_nan());
        for code in 0..=MAX_CODE {
            for rounding in [E8M0Rounding::Up, E8M0Rounding::Down, E8M0Rounding::Nearest] {
                // 2^-127 is an f32 subnormal with a nonzero fraction field, which the
                // reference's `up` rounds to the next code.
                let want = if code == 0 && rounding == E8M0Rounding::Up {
                    1
                } else {
                    code
                };
                assert_eq!(encode(decode(code), true, rounding), want);
            }
        }
    }

    #[test]
    fn onnx_backend_test_values() {
        // test_cast_e8m0_FLOAT_to_FLOAT8E8M0: round up, saturate.
        let input = [0.0, 0.124, 0.25, 0.5, 1.1, 2.0, 4.0, 8.0];
        let want = [0u8, 124, 125, 126, 128, 128, 129, 130];
        for (x, w) in input.into_iter().zip(want) {
            assert_eq!(encode(x, true, E8M0Rounding::Up), w, "{x}");
        }
    }

    #[test]
    fn specials_and_saturation() {
        let max = decode(MAX_CODE);
        assert_eq!(encode(f64::NAN, true, E8M0Rounding::Up), NAN_CODE);
        assert_eq!(encode(f64::INFINITY, true, E8M0Rounding::Up), MAX_CODE);
        assert_eq!(encode(f64::INFINITY, false, E8M0Rounding::Up), NAN_CODE);
        assert_eq!(encode(max * 1.5, true, E8M0Rounding::Up), MAX_CODE);
        assert_eq!(encode(max * 1.5, false, E8M0Rounding::Up), NAN_CODE);
        assert_eq!(encode(max * 1.5, false, E8M0Rounding::Down), MAX_CODE);
        assert_eq!(encode(3.0, true, E8M0Rounding::Nearest), 129);
        assert_eq!(encode(2.9, true, E8M0Rounding::Nearest), 128);
        assert_eq!(encode(-2.0, true, E8M0Rounding::Up), 128);
        assert_eq!(
            E8M0Rounding::from_onnx("nearest"),
            Some(E8M0Rounding::Nearest)
        );
        assert_eq!(E8M0Rounding::from_onnx("odd"), None);
    }

    proptest! {
        #[test]
        fn normal_f32_magnitudes_round_like_an_exact_search(
            bits in 0x0080_0000u32..0x7F80_0000,
            saturate in any::<bool>(),
        ) {
            let x = f64::from(f32::from_bits(bits));
            for rounding in [E8M0Rounding::Up, E8M0Rounding::Down, E8M0Rounding::Nearest] {
                let want = reference(x, rounding);
                let want = if saturate && want == NAN_CODE { MAX_CODE } else { want };
                prop_assert_eq!(encode(x, saturate, rounding), want, "{} {:?}", x, rounding);
            }
        }
    }
}
