//! Seeded random test data shared by tests and benchmarks.

use rand::Rng;

/// A value whose magnitude is drawn from `[lo, hi)`, with a random sign.
/// With `lo > 0` it is never zero: a zero would hide sign and scaling errors
/// in a kernel under test.
pub fn nonzero(rng: &mut impl Rng, lo: f64, hi: f64) -> f64 {
    let magnitude = rng.random_range(lo..hi);
    if rng.random_bool(0.5) {
        magnitude
    } else {
        -magnitude
    }
}

/// `n` values drawn as [`nonzero`] draws them.
pub fn nonzeros(rng: &mut impl Rng, n: usize, lo: f64, hi: f64) -> Vec<f64> {
    (0..n).map(|_| nonzero(rng, lo, hi)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn nonzeros_stay_in_range_take_both_signs_and_repeat_with_the_seed() {
        let draw = || nonzeros(&mut rand::rngs::StdRng::seed_from_u64(9), 1000, 0.5, 2.0);
        let v = draw();
        assert_eq!(v.len(), 1000);
        assert!(v.iter().all(|x| (0.5..2.0).contains(&x.abs())), "{v:?}");
        assert!(v.iter().any(|&x| x < 0.0) && v.iter().any(|&x| x > 0.0));
        assert_eq!(v, draw());
    }
}
