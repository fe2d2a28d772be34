//! Comparing an output with its expected value: the error metrics and the
//! numpy `allclose` tolerance test.

use serde::Serialize;

/// Tolerances of the comparison: numpy `allclose` (`|a - b| <= atol +
/// rtol·|b|` for every element), or, when `statistical` is set, the
/// whole-tensor criteria of a reduced-precision lowering (cosine and
/// relative L2 error; non-finite values must still match).
#[derive(Copy, Clone, Debug, PartialEq, Serialize)]
pub struct Tolerance {
    /// Absolute tolerance.
    pub atol: f64,
    /// Relative tolerance (relative to the expected value).
    pub rtol: f64,
    /// Whole-tensor criteria that replace the elementwise test.
    pub statistical: Option<Statistical>,
}

/// Whole-tensor acceptance: cosine similarity at least `min_cosine` and
/// relative L2 error at most `max_rel_l2`.
#[derive(Copy, Clone, Debug, PartialEq, Serialize)]
pub struct Statistical {
    /// Smallest accepted cosine similarity.
    pub min_cosine: f64,
    /// Largest accepted relative L2 error.
    pub max_rel_l2: f64,
}

impl Tolerance {
    /// Elementwise `allclose` tolerances.
    pub const fn allclose(atol: f64, rtol: f64) -> Tolerance {
        Tolerance {
            atol,
            rtol,
            statistical: None,
        }
    }

    /// Whether an output with metrics `m` passes.
    pub fn passes(&self, m: &Metrics) -> bool {
        match self.statistical {
            None => m.mismatches == 0,
            Some(s) => {
                m.non_finite_mismatches == 0
                    && m.cosine >= s.min_cosine
                    && m.rel_l2_err <= s.max_rel_l2
            }
        }
    }

    /// The criteria in words, for reports.
    pub fn describe(&self) -> String {
        match self.statistical {
            None => format!("atol {:e}, rtol {:e}", self.atol, self.rtol),
            Some(s) => format!(
                "cosine >= {}, relative L2 error <= {:e}",
                s.min_cosine, s.max_rel_l2
            ),
        }
    }
}

/// How far an output is from its expected value.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Metrics {
    /// Largest `|a - b|` over elements where both are finite.
    pub max_abs_err: f64,
    /// Largest `|a - b| / |b|` over elements where both are finite and `b != 0`.
    pub max_rel_err: f64,
    /// `‖a - b‖₂ / ‖b‖₂` over finite elements (0 when both norms are 0).
    pub rel_l2_err: f64,
    /// `a·b / (‖a‖₂‖b‖₂)` over finite elements (1 when both are all zero, 0 when one is).
    pub cosine: f64,
    /// Elements outside the tolerance (non-finite values must match exactly;
    /// NaN matches NaN).
    pub mismatches: usize,
    /// Of those, the non-finite ones.
    pub non_finite_mismatches: usize,
}

/// Compares `actual` with `expected` (same length) elementwise.
pub fn compare(actual: &[f64], expected: &[f64], tol: Tolerance) -> Metrics {
    assert_eq!(
        actual.len(),
        expected.len(),
        "compared tensors differ in size"
    );
    let mut m = Metrics {
        max_abs_err: 0.0,
        max_rel_err: 0.0,
        rel_l2_err: 0.0,
        cosine: 0.0,
        mismatches: 0,
        non_finite_mismatches: 0,
    };
    let (mut diff2, mut a2, mut b2, mut ab) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for (&a, &b) in actual.iter().zip(expected) {
        if !(a.is_finite() && b.is_finite()) {
            let same = (a.is_nan() && b.is_nan()) || a == b;
            m.mismatches += usize::from(!same);
            m.non_finite_mismatches += usize::from(!same);
            continue;
        }
        let d = (a - b).abs();
        m.max_abs_err = m.max_abs_err.max(d);
        if b != 0.0 {
            m.max_rel_err = m.max_rel_err.max(d / b.abs());
        }
        if d > tol.atol + tol.rtol * b.abs() {
            m.mismatches += 1;
        }
        diff2 += d * d;
        a2 += a * a;
        b2 += b * b;
        ab += a * b;
    }
    m.rel_l2_err = if b2 > 0.0 {
        (diff2 / b2).sqrt()
    } else if diff2 == 0.0 {
        0.0
    } else {
        f64::INFINITY
    };
    m.cosine = match (a2 > 0.0, b2 > 0.0) {
        // Rounding can push the quotient a hair past ±1.
        (true, true) => (ab / (a2.sqrt() * b2.sqrt())).clamp(-1.0, 1.0),
        (false, false) => 1.0,
        _ => 0.0,
    };
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOL: Tolerance = Tolerance::allclose(1e-4, 1e-3);

    #[test]
    fn metrics_of_a_known_difference() {
        let m = compare(&[1.0, 2.0, 3.0, 0.0], &[1.0, 2.5, 3.0, 0.0], TOL);
        assert_eq!(m.max_abs_err, 0.5);
        assert_eq!(m.max_rel_err, 0.2);
        // ‖(0, -0.5, 0, 0)‖ / ‖(1, 2.5, 3, 0)‖
        assert!((m.rel_l2_err - 0.5 / 16.25f64.sqrt()).abs() < 1e-15);
        let cos = (1.0 + 5.0 + 9.0) / (14.0f64.sqrt() * 16.25f64.sqrt());
        assert!((m.cosine - cos).abs() < 1e-15);
        assert_eq!(m.mismatches, 1);
    }

    #[test]
    fn tolerance_is_numpy_allclose() {
        // |a - b| <= 1e-4 + 1e-3 * |b|: at b = 100 the bound is 0.1001.
        assert_eq!(compare(&[100.1], &[100.0], TOL).mismatches, 0);
        assert_eq!(compare(&[100.11], &[100.0], TOL).mismatches, 1);
        assert_eq!(compare(&[1e-4], &[0.0], TOL).mismatches, 0);
        assert_eq!(compare(&[2e-4], &[0.0], TOL).mismatches, 1);
    }

    #[test]
    fn non_finite_values_must_match() {
        let m = compare(
            &[f64::NAN, f64::INFINITY, 1.0, f64::NAN],
            &[f64::NAN, f64::INFINITY, 1.0, 0.0],
            TOL,
        );
        assert_eq!(m.mismatches, 1);
        assert_eq!(m.max_abs_err, 0.0);
        assert_eq!(compare(&[0.0], &[0.0], TOL).cosine, 1.0);
        assert_eq!(compare(&[1.0], &[0.0], TOL).rel_l2_err, f64::INFINITY);
    }
}
