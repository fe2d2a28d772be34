//! Bit-exact encoding and decoding of the float formats the IR can hold,
//! used by the printer and parser for float attributes and dense elements.

use crate::types::FloatKind;

/// Parameters of an 8-bit float format.
struct MiniFloat {
    mantissa_bits: u32,
    exponent_bits: u32,
    bias: i32,
    /// NaN is 0x80 only, no negative zero, no infinities (FNUZ formats).
    fnuz: bool,
    /// No infinities; the all-ones pattern is NaN (E4M3FN).
    finite_only: bool,
}

fn minifloat(kind: FloatKind) -> Option<MiniFloat> {
    Some(match kind {
        FloatKind::F8E4M3FN => MiniFloat {
            mantissa_bits: 3,
            exponent_bits: 4,
            bias: 7,
            fnuz: false,
            finite_only: true,
        },
        FloatKind::F8E5M2 => MiniFloat {
            mantissa_bits: 2,
            exponent_bits: 5,
            bias: 15,
            fnuz: false,
            finite_only: false,
        },
        FloatKind::F8E4M3FNUZ => MiniFloat {
            mantissa_bits: 3,
            exponent_bits: 4,
            bias: 8,
            fnuz: true,
            finite_only: true,
        },
        FloatKind::F8E5M2FNUZ => MiniFloat {
            mantissa_bits: 2,
            exponent_bits: 5,
            bias: 16,
            fnuz: true,
            finite_only: true,
        },
        _ => return None,
    })
}

fn decode_mini(f: &MiniFloat, bits: u8) -> f64 {
    if f.fnuz && bits == 0x80 {
        return f64::NAN;
    }
    let sign = if bits & 0x80 != 0 { -1.0 } else { 1.0 };
    let exp_mask = (1u32 << f.exponent_bits) - 1;
    let exp = ((bits as u32) >> f.mantissa_bits) & exp_mask;
    let man = (bits as u32) & ((1 << f.mantissa_bits) - 1);
    if !f.fnuz {
        if f.finite_only {
            if exp == exp_mask && man == (1 << f.mantissa_bits) - 1 {
                return f64::NAN;
            }
        } else if exp == exp_mask {
            return if man == 0 {
                sign * f64::INFINITY
            } else {
                f64::NAN
            };
        }
    }
    let m = man as f64 / (1u32 << f.mantissa_bits) as f64;
    if exp == 0 {
        sign * m * 2f64.powi(1 - f.bias)
    } else {
        sign * (1.0 + m) * 2f64.powi(exp as i32 - f.bias)
    }
}

fn encode_mini(f: &MiniFloat, v: f64) -> u8 {
    // Exhaustive nearest search over the 256 codes: exact and simple, and
    // only used for attribute text, never in hot loops.
    if v.is_nan() {
        // FNUZ: the single NaN 0x80; E4M3FN and E5M2: 0x7f is a NaN.
        return if f.fnuz { 0x80 } else { 0x7f };
    }
    let mut best: Option<(f64, u8)> = None;
    for code in 0u16..=255 {
        let c = code as u8;
        let d = decode_mini(f, c);
        if d.is_nan() {
            continue;
        }
        if d == v && (d != 0.0 || d.is_sign_negative() == v.is_sign_negative() || f.fnuz) {
            return c;
        }
        let err = (d - v).abs();
        let better = match best {
            None => true,
            Some((e, b)) => err < e || (err == e && (c & 1) == 0 && (b & 1) == 1),
        };
        if better {
            best = Some((err, c));
        }
    }
    best.map_or(0, |(_, c)| c)
}

/// Decodes `bytes` (little-endian storage of `kind`) to an `f64`.
pub fn decode(kind: FloatKind, bytes: &[u8]) -> f64 {
    match kind {
        FloatKind::F16 => half::f16::from_bits(u16::from_le_bytes([bytes[0], bytes[1]])).to_f64(),
        FloatKind::BF16 => half::bf16::from_bits(u16::from_le_bytes([bytes[0], bytes[1]])).to_f64(),
        FloatKind::F32 => f32::from_le_bytes(bytes[..4].try_into().expect("4 bytes")) as f64,
        FloatKind::F64 => f64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")),
        _ => decode_mini(&minifloat(kind).expect("8-bit float"), bytes[0]),
    }
}

/// Rounds `v` to `kind` (nearest, ties to even) and returns the storage bits.
pub fn encode_bits(kind: FloatKind, v: f64) -> u64 {
    match kind {
        FloatKind::F16 => half::f16::from_f64(v).to_bits() as u64,
        FloatKind::BF16 => half::bf16::from_f64(v).to_bits() as u64,
        FloatKind::F32 => (v as f32).to_bits() as u64,
        FloatKind::F64 => v.to_bits(),
        _ => encode_mini(&minifloat(kind).expect("8-bit float"), v) as u64,
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

/// Appends the storage bytes of `v` rounded to `kind`.
pub fn push_bytes(kind: FloatKind, v: f64, out: &mut Vec<u8>) {
    let bits = encode_bits(kind, v);
    out.extend_from_slice(&bits.to_le_bytes()[..(kind.bit_width() / 8) as usize]);
}

#[cfg(test)]
mod tests {
    use super::*;

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
