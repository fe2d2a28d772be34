//! The interpreter's f16 <-> f32 conversions: exactly the IEEE conversions
//! of `half::f16::to_f32` and `half::f16::from_f32` (round to nearest even;
//! a NaN keeps its sign and top payload bits and comes out quiet), written
//! as a few integer and float operations the compiler inlines and, for the
//! four lanes of a 64-bit register, vectorises.
//!
//! `half` converts one element per call with a run-time CPU-feature test
//! (its F16C path) that the compiler cannot inline into a loop; the f16
//! vector and AMP instructions convert up to 16 elements per issue, and
//! those calls were a large part of the interpreter's time. The results are
//! bit-identical to `half`'s (checked on every f16 and, in the ignored
//! `exhaustive` test, on every f32 bit pattern), so no simulated output
//! changes.

/// The f32 value of the f16 bit pattern `h` (exact: every f16 is an f32).
#[inline(always)]
pub fn to_f32(h: u16) -> f32 {
    let h = u32::from(h);
    let sign = (h & 0x8000) << 16;
    let em = h & 0x7fff;
    // The f16's exponent and mantissa bits at an f32's positions read as
    // an f32 whose exponent is biased by 15 instead of 127: times 2^112 it
    // is the value, exactly, normal or subnormal (zero stays zero).
    let scaled = (f32::from_bits(em << 13) * f32::from_bits((127 + 112) << 23)).to_bits();
    // Infinity or NaN: the f32 exponent all ones, a NaN made quiet.
    let special = (em << 13) | 0x7f80_0000 | if em > 0x7c00 { 0x0040_0000 } else { 0 };
    let bits = if em >= 0x7c00 { special } else { scaled };
    f32::from_bits(bits | sign)
}

/// `a` where `c` holds, else `b`, as a mask (no branch: see [`from_f32`]).
#[inline(always)]
fn select(c: bool, a: u32, b: u32) -> u32 {
    let m = 0u32.wrapping_sub(u32::from(c));
    (a & m) | (b & !m)
}

/// The f16 bit pattern nearest `x` (ties to even; overflow to infinity).
/// Every case is computed and one selected by masks, without branches, so
/// that the lanes of [`pack4`] convert together in vector registers.
#[inline(always)]
pub fn from_f32(x: f32) -> u16 {
    from_f32_wide(x) as u16
}

/// [`from_f32`] in the low half of a u32 (lanes of one width vectorise).
#[inline(always)]
fn from_f32_wide(x: f32) -> u32 {
    let bits = x.to_bits();
    let sign = (bits >> 16) & 0x8000;
    let a = bits & 0x7fff_ffff;
    // NaN: quiet, the payload's top bits kept.
    let nan = 0x7e00 | ((a & 0x007f_ffff) >> 13);
    // Below 2^-14, f16's smallest normal: adding 0.5 rounds the magnitude
    // to a multiple of 2^-24 (0.5's ulp), to nearest even, in the float
    // unit; its low bits are then the f16 pattern (0x400, the smallest
    // normal, when it rounds up to it).
    let half = f32::from_bits(126 << 23);
    let subnormal = (f32::from_bits(a) + half).to_bits().wrapping_sub(126 << 23);
    // A normal f16: rebias, then round the 13 dropped bits to nearest even
    // (a carry out of the mantissa moves the exponent, up to infinity for
    // 65520 and above).
    let odd = (a >> 13) & 1;
    let normal = (a.wrapping_sub((127 - 15) << 23).wrapping_add(0xfff + odd)) >> 13;
    let out = select(a < 0x3880_0000, subnormal, normal);
    // At least 2^16 (or infinity): infinity.
    let out = select(a >= 0x4780_0000, 0x7c00, out);
    let out = select(a > 0x7f80_0000, nan, out);
    out | sign
}

/// The f16 bit pattern of `x` rounded to f32 first, then to f16: what
/// `half::f16::from_f64` computes on a host with F16C (its conversion goes
/// through f32 there, and is direct only on hosts without it), so the
/// simulator gives the same results whatever host it runs on.
#[inline(always)]
pub fn from_f64(x: f64) -> u16 {
    from_f32(x as f32)
}

/// The four f16 lanes of a 64-bit register word, lane 0 lowest.
#[inline(always)]
pub fn unpack4(v: u64) -> [f32; 4] {
    [
        to_f32(v as u16),
        to_f32((v >> 16) as u16),
        to_f32((v >> 32) as u16),
        to_f32((v >> 48) as u16),
    ]
}

/// Four values packed as f16 lanes of a 64-bit word, lane 0 lowest.
#[inline(always)]
pub fn pack4(v: [f32; 4]) -> u64 {
    let h: [u32; 4] = std::array::from_fn(|i| from_f32_wide(v[i]));
    u64::from(h[0]) | (u64::from(h[1]) << 16) | (u64::from(h[2]) << 32) | (u64::from(h[3]) << 48)
}

/// The two f16 lanes of a 32-bit register word, lane 0 low.
#[inline(always)]
pub fn unpack2(v: u32) -> [f32; 2] {
    [to_f32(v as u16), to_f32((v >> 16) as u16)]
}

/// Two values packed as f16 lanes of a 32-bit word, lane 0 low.
#[inline(always)]
pub fn pack2(a: f32, b: f32) -> u32 {
    u32::from(from_f32(a)) | (u32::from(from_f32(b)) << 16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::f16;

    #[test]
    fn every_f16_converts_as_half_does() {
        for h in 0..=u16::MAX {
            let want = f16::from_bits(h).to_f32().to_bits();
            assert_eq!(to_f32(h).to_bits(), want, "{h:#06x}");
            // And back: every f16 value round-trips (NaNs come out quiet).
            let back = f16::from_f32(f32::from_bits(want)).to_bits();
            assert_eq!(from_f32(f32::from_bits(want)), back, "{h:#06x}");
        }
    }

    /// On a host with F16C, where `half` rounds through f32 (elsewhere it
    /// rounds directly, and double rounding differs at a few ties).
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn f64_to_f16_rounds_as_half_does_with_f16c() {
        if !std::arch::is_x86_feature_detected!("f16c") {
            return;
        }
        // Every f16, the midpoints between neighbours, and just off them.
        for h in 0..=u16::MAX {
            let x = f64::from(f16::from_bits(h).to_f32());
            let next = f64::from(f16::from_bits(h.wrapping_add(1)).to_f32());
            let mid = (x + next) / 2.0;
            for v in [x, mid, mid * (1.0 + 1e-12), mid * (1.0 - 1e-12)] {
                assert_eq!(from_f64(v), f16::from_f64(v).to_bits(), "{v:e}");
            }
        }
    }

    fn check_from_f32(bits: u32) {
        let x = f32::from_bits(bits);
        assert_eq!(
            from_f32(x),
            f16::from_f32(x).to_bits(),
            "{bits:#010x} ({x:e})"
        );
    }

    #[test]
    fn f32_to_f16_rounds_as_half_does() {
        // Every pattern around the boundaries (the subnormal, normal and
        // overflow thresholds, ties, infinity and NaN) and a dense stride
        // of the rest, both signs.
        for s in [0u32, 0x8000_0000] {
            for edge in [
                0u32,
                0x3280_0000, // 2^-26
                0x3300_0000, // 2^-25, half the smallest subnormal
                0x3380_0000, // 2^-24, the smallest subnormal
                0x3880_0000, // 2^-14, the smallest normal
                0x477f_e000, // 65504, the largest finite
                0x477f_f000, // 65520, rounds to infinity
                0x4780_0000, // 2^16
                0x7f80_0000, // infinity
                0x7fc0_0000, // quiet NaN
            ] {
                for d in 0..0x4000 {
                    check_from_f32(s | edge.wrapping_add(d));
                    check_from_f32(s | edge.wrapping_sub(d));
                }
            }
            for k in 0..(1u32 << 22) {
                check_from_f32(s | (k * 0x1ff));
            }
        }
    }

    /// Every f32 bit pattern (about 20 s in a release build: `cargo test
    /// --release -p ipuc-runtime sim::f16 -- --ignored` after changing
    /// [`from_f32`]).
    #[test]
    #[ignore]
    fn exhaustive() {
        for bits in 0..=u32::MAX {
            check_from_f32(bits);
        }
    }
}
