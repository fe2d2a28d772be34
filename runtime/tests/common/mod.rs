//! Helpers shared by the runtime's test binaries.

// Each test binary compiles this module and uses a part of it.
#![allow(dead_code)]

/// Deterministic values in [-1, 1) (xorshift): inputs that reproduce
/// without a random-number crate and differ per `seed`.
pub fn pseudo_random(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// Every element of `got` within `atol + rtol·|want|` of `want`, and as
/// many of them.
pub fn assert_close(got: &[f64], want: &[f64], atol: f64, rtol: f64) {
    assert_eq!(got.len(), want.len(), "element count");
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        assert!(
            (a - b).abs() <= atol + rtol * b.abs(),
            "element {i}: got {a}, want {b}"
        );
    }
}
