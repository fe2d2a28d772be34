//! Vectorisable f32 math for the hot kernels: the exponential, tanh, softmax
//! rows, LayerNorm rows and the tanh form of GELU, written as straight-line loops over slices that
//! the compiler vectorises, and run in AVX-512 or AVX2 code when the CPU has
//! it (chosen once at run time; the binary stays portable).
//!
//! Every path performs the same IEEE operations in the same order (no fused
//! multiply-add, no reassociation: Rust never contracts), so the results are
//! bit-identical whichever instruction set runs them, on every thread count.
//!
//! The exponential is Cephes' `expf` (Cody–Waite reduction by ln 2, a
//! degree-5 polynomial; within 2 ulp of the exact value, tested against f64
//! below) with results under `f32::MIN_POSITIVE` flushed to zero, where the
//! platform's `expf` is a call per element that the compiler cannot vectorise.

/// The widest vector unit of this CPU: 2 for AVX-512, 1 for AVX2, else 0
/// (detected once).
#[cfg(target_arch = "x86_64")]
fn vector_level() -> u8 {
    use std::sync::OnceLock;
    static LEVEL: OnceLock<u8> = OnceLock::new();
    *LEVEL.get_or_init(|| {
        if std::arch::is_x86_feature_detected!("avx512f") {
            2
        } else if std::arch::is_x86_feature_detected!("avx2") {
            1
        } else {
            0
        }
    })
}

/// Defines `fn NAME(ARGS)` whose body is compiled three times (AVX-512,
/// AVX2, baseline) and picks the widest the CPU runs. The body and the
/// helpers it calls are `#[inline(always)]`, so the loops inside are
/// vectorised for the enabled features (a closure handed to a
/// `#[target_feature]` function is not inlined into it reliably).
macro_rules! multiversioned {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block) => {
        $(#[$meta])*
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            fn body($($arg: $ty),*) $(-> $ret)? $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f")]
                unsafe fn avx512($($arg: $ty),*) $(-> $ret)? {
                    body($($arg),*)
                }
                #[target_feature(enable = "avx2")]
                unsafe fn avx2($($arg: $ty),*) $(-> $ret)? {
                    body($($arg),*)
                }
                match vector_level() {
                    // SAFETY: the CPU has the enabled features (detected).
                    2 => return unsafe { avx512($($arg),*) },
                    // SAFETY: as above.
                    1 => return unsafe { avx2($($arg),*) },
                    _ => {}
                }
            }
            body($($arg),*)
        }
    };
}

/// Lanes of the partial sums and maxima: enough independent accumulators
/// to fill an AVX-512 register of f64 and hide the adder's latency, in a
/// fixed order so the result does not depend on how the work is split.
const LANES: usize = 8;

/// `e^x` in f32 (see the module documentation). NaN stays NaN, `+inf` gives
/// `+inf`, `-inf` and anything below the smallest normal result give 0.
#[inline(always)]
pub(super) fn exp(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    // ln 2 split so that n * LN2_HI is exact for |n| < 2^9.
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // Adding 1.5 * 2^23 rounds to the nearest integer, which then sits in
    // the low mantissa bits.
    const ROUND: f32 = 12_582_912.0;
    const MAX: f32 = 88.722_83;
    const MIN: f32 = -87.336_55;
    let clamped = x.clamp(MIN, MAX);
    let shifted = clamped * LOG2E + ROUND;
    let n = shifted - ROUND;
    let r = clamped - n * LN2_HI - n * LN2_LO;
    let mut p = 1.987_569_1e-4_f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5;
    let y = p * r * r + r + 1.0;
    // 2^n from the integer in the low bits of `shifted` (n in [-126, 128]).
    let exponent = (shifted.to_bits() as i32).wrapping_sub(ROUND.to_bits() as i32);
    let scaled = if exponent > 127 {
        // Split 2^128 as 2^127 * 2 so the scale itself does not overflow.
        y * 2.0 * f32::from_bits(((exponent - 1 + 127) as u32) << 23)
    } else {
        y * f32::from_bits(((exponent + 127) as u32) << 23)
    };
    if x.is_nan() {
        x
    } else if x > MAX {
        f32::INFINITY
    } else if x < MIN {
        0.0
    } else {
        scaled
    }
}

/// The largest element (ignoring NaN, as `f32::max` does; `-inf` when empty).
#[inline(always)]
fn max(xs: &[f32]) -> f32 {
    let mut lanes = [f32::NEG_INFINITY; LANES];
    let mut chunks = xs.chunks_exact(LANES);
    for c in &mut chunks {
        for (l, &v) in lanes.iter_mut().zip(c) {
            *l = l.max(v);
        }
    }
    let tail = chunks.remainder().iter().copied();
    lanes
        .into_iter()
        .chain(tail)
        .fold(f32::NEG_INFINITY, f32::max)
}

/// The sum of the elements in f64, in `LANES` interleaved partial sums.
#[inline(always)]
fn sum_f64(xs: &[f32]) -> f64 {
    let mut lanes = [0f64; LANES];
    let mut chunks = xs.chunks_exact(LANES);
    for c in &mut chunks {
        for (l, &v) in lanes.iter_mut().zip(c) {
            *l += f64::from(v);
        }
    }
    let tail: f64 = chunks.remainder().iter().map(|&v| f64::from(v)).sum();
    lanes.iter().sum::<f64>() + tail
}

multiversioned! {
    /// Softmax of `scale · row` in place: the maximum subtracted,
    /// exponentials in f32, their sum in f64 and each quotient rounded once
    /// to f32. (`scale · x` in f32 equals the f64 product rounded once: the
    /// product of two f32 values is exact in f64.)
    pub(super) fn softmax_row(row: &mut [f32], scale: f32) {
        if scale != 1.0 {
            row.iter_mut().for_each(|v| *v *= scale);
        }
        let m = max(row);
        row.iter_mut().for_each(|v| *v = exp(*v - m));
        let inv = 1.0 / sum_f64(row);
        row.iter_mut()
            .for_each(|v| *v = (f64::from(*v) * inv) as f32);
    }
}

multiversioned! {
    /// The mean and the population variance of a row, accumulated in f64.
    pub(super) fn mean_variance(row: &[f32]) -> (f64, f64) {
        let n = row.len() as f64;
        let mean = sum_f64(row) / n;
        let mut lanes = [0f64; LANES];
        let mut chunks = row.chunks_exact(LANES);
        for c in &mut chunks {
            for (l, &v) in lanes.iter_mut().zip(c) {
                let d = f64::from(v) - mean;
                *l += d * d;
            }
        }
        let tail: f64 = chunks
            .remainder()
            .iter()
            .map(|&v| (f64::from(v) - mean) * (f64::from(v) - mean))
            .sum();
        (mean, (lanes.iter().sum::<f64>() + tail) / n)
    }
}

multiversioned! {
    /// One normalised LayerNorm row: `out = (x - mean) · inv · gamma (+ beta)`
    /// in f64, rounded once to f32.
    pub(super) fn normalize_row(
        xs: &[f32],
        out: &mut [f32],
        mean: f64,
        inv: f64,
        gamma: &[f64],
        beta: Option<&[f64]>,
    ) {
        match beta {
            Some(beta) => out
                .iter_mut()
                .zip(xs)
                .zip(gamma.iter().zip(beta))
                .for_each(|((o, &a), (g, b))| *o = ((f64::from(a) - mean) * inv * g + b) as f32),
            None => out
                .iter_mut()
                .zip(xs)
                .zip(gamma)
                .for_each(|((o, &a), g)| *o = ((f64::from(a) - mean) * inv * g + 0.0) as f32),
        }
    }
}

multiversioned! {
    /// GELU, tanh approximation, in f32:
    /// `x/2 · (1 + tanh(√(2/π) · (x + 0.044715 x³)))`, computed as the equal
    /// `x / (1 + e^(-2u))` with `u` the tanh argument, which keeps its
    /// relative accuracy where the tanh form cancels (large negative `x`).
    pub(super) fn gelu_tanh(xs: &[f32], out: &mut [f32]) {
        const C: f32 = 0.797_884_6; // √(2/π)
        out.iter_mut().zip(xs).for_each(|(o, &x)| {
            let u = C * (x + 0.044_715 * x * x * x);
            *o = x / (1.0 + exp(-2.0 * u));
        })
    }
}

multiversioned! {
    /// `out = tanh(xs)` in f32: Cephes' `tanhf`, an odd polynomial below
    /// |x| = 0.625 and `1 - 2 / (e^2|x| + 1)` (no cancellation there) above;
    /// within a few ulp of the exact value (tested against f64 below).
    pub(super) fn tanh(xs: &[f32], out: &mut [f32]) {
        out.iter_mut().zip(xs).for_each(|(o, &x)| {
            let a = x.abs();
            let s = x * x;
            let small = ((((-5.704_988_7e-3 * s + 2.063_909e-2) * s - 5.373_971_6e-2) * s
                + 1.333_144_2e-1)
                * s
                - 3.333_328e-1)
                * s
                * x
                + x;
            let large = (1.0 - 2.0 / (exp(a + a) + 1.0)).copysign(x);
            *o = if a < 0.625 { small } else { large };
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The distance in units in the last place between `got` and the exact
    /// `want`, measured at `want`'s magnitude.
    fn ulps(got: f32, want: f64) -> f64 {
        let w = want as f32;
        let ulp = (f32::from_bits(w.abs().to_bits() + 1) - w.abs()) as f64;
        (f64::from(got) - want).abs() / ulp
    }

    #[test]
    fn exp_is_within_two_ulp_of_f64() {
        let mut worst = 0f64;
        let mut x = -87.3f32;
        while x < 88.7 {
            let got = exp(x);
            worst = worst.max(ulps(got, f64::from(x).exp()));
            x += 0.000_731;
        }
        assert!(worst <= 2.0, "worst error {worst} ulp");
    }

    #[test]
    fn exp_edges() {
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp(-1000.0), 0.0);
        assert_eq!(exp(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp(89.0), f32::INFINITY);
        assert!(exp(f32::NAN).is_nan());
        // The largest finite results.
        assert!(ulps(exp(88.72), f64::from(88.72f32).exp()) <= 2.0);
        assert!(exp(88.72).is_finite());
    }

    #[test]
    fn vectorized_and_scalar_paths_agree_bit_for_bit() {
        let xs: Vec<f32> = (0..10_007).map(|i| (i as f32 - 5000.0) * 0.0191).collect();
        // gelu_tanh runs the exponential in the widest vector code; the
        // same formula element by element here is scalar code.
        let mut v = vec![0f32; xs.len()];
        gelu_tanh(&xs, &mut v);
        for (x, got) in xs.iter().zip(&v) {
            let u = 0.797_884_6f32 * (x + 0.044_715 * x * x * x);
            let want = x / (1.0 + std::hint::black_box(exp)(-2.0 * u));
            assert_eq!(got.to_bits(), want.to_bits(), "{x}");
        }
    }

    #[test]
    fn tanh_is_within_three_ulp_of_f64() {
        let xs: Vec<f32> = (0..200_001)
            .map(|i| (i as f32 - 100_000.0) * 0.000_2)
            .chain([
                1e-30,
                -1e-20,
                1e-8,
                0.624_999_9,
                0.625,
                9.0,
                50.0,
                -100.0,
                0.0,
            ])
            .collect();
        let mut out = vec![0f32; xs.len()];
        tanh(&xs, &mut out);
        let mut worst = 0f64;
        for (&x, &got) in xs.iter().zip(&out) {
            let want = f64::from(x).tanh();
            if want == 0.0 {
                assert_eq!(got, 0.0);
                continue;
            }
            worst = worst.max(ulps(got, want));
        }
        assert!(worst <= 3.0, "worst error {worst} ulp");
        let mut edges = [0f32; 3];
        tanh(&[f32::INFINITY, f32::NEG_INFINITY, f32::NAN], &mut edges);
        assert_eq!(&edges[..2], &[1.0, -1.0]);
        assert!(edges[2].is_nan());
    }

    #[test]
    fn softmax_row_matches_f64() {
        for n in [1usize, 7, 8, 9, 729, 1000] {
            let mut row: Vec<f32> = (0..n)
                .map(|i| ((i * 7919) % 113) as f32 * 0.37 - 20.0)
                .collect();
            row[n / 2] = f32::NEG_INFINITY.max(-1e30);
            let x: Vec<f64> = row.iter().map(|&v| f64::from(v)).collect();
            let m = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let s: f64 = x.iter().map(|v| (v - m).exp()).sum();
            softmax_row(&mut row, 1.0);
            for (got, xi) in row.iter().zip(&x) {
                let want = (xi - m).exp() / s;
                // A few ulp, plus the rounding of x - max to f32 (half an
                // ulp of |x - max|), which the exponential turns into a
                // relative error.
                let tolerance = (4e-7 + 6e-8 * (xi - m).abs()) * want + 1e-30;
                assert!(
                    (f64::from(*got) - want).abs() <= tolerance,
                    "n={n}: {got} vs {want}"
                );
            }
        }
    }

    #[test]
    fn mean_variance_matches_f64() {
        let row: Vec<f32> = (0..1153)
            .map(|i| (i as f32 * 0.173).sin() * 3.0 + 1.5)
            .collect();
        let x: Vec<f64> = row.iter().map(|&v| f64::from(v)).collect();
        let mean = x.iter().sum::<f64>() / x.len() as f64;
        let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / x.len() as f64;
        let (m, v) = mean_variance(&row);
        assert!((m - mean).abs() <= 1e-14 * mean.abs());
        assert!((v - var).abs() <= 1e-13 * var);
    }

    #[test]
    fn gelu_tanh_matches_f64() {
        let xs: Vec<f32> = (0..20_001)
            .map(|i| (i as f32 - 10_000.0) * 0.0013)
            .collect();
        let mut out = vec![0f32; xs.len()];
        gelu_tanh(&xs, &mut out);
        let c = (2.0 / std::f64::consts::PI).sqrt();
        for (&x, &got) in xs.iter().zip(&out) {
            let v = f64::from(x);
            let u = c * (v + 0.044715 * v * v * v);
            // x/2 · (1 + tanh u) in the form that does not cancel in f64
            // either where tanh u is near -1.
            let want = v / (1.0 + (-2.0 * u).exp());
            // A few ulp, plus the f32 argument's own rounding (~2 ulp of u)
            // amplified by the exponential: e^(-2u) carries a relative
            // error of about |2u| times that of u.
            let tolerance = 4e-7 * (1.0 + 2.0 * u.abs()) * want.abs() + 1e-37;
            assert!(
                (f64::from(got) - want).abs() <= tolerance,
                "{x}: {got} vs {want}"
            );
        }
    }
}
