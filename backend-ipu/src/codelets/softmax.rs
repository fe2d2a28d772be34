//! Softmax over the rows of an f16 matrix `[rows, C]` (C a multiple of 4),
//! f16 output, computed in f32.
//!
//! Per row (workers take contiguous shares of rows):
//! 1. The row maximum: `{ ld64step ; f16v4max }`, the lanes folded as in
//!    the row-max reduction.
//! 2. `e = exp(x - max)` for each element, written to the output as f16 and
//!    summed in f32. There is no exp instruction in our ISA subset, so
//!    `exp(u) = q(u / 64)^64` with `u = max(x - max, -64)`: `q` is a degree-6
//!    polynomial (Chebyshev interpolation of exp on [-1, 0], Horner in
//!    f32), raised to the 64th power by six squarings. Max relative error of
//!    the f32 sequence against float64 exp over [-64, 0]: 1.8e-5
//!    ([`exp_f32`] models it bit-exactly; a unit test re-measures it).
//!    `e^-64` stands for anything smaller (relative to the row maximum's
//!    weight 1, below f16 resolution). 24 auxiliary instructions per f32
//!    pair; constants are loaded one bundle ahead as in the GELU codelet.
//! 3. `1/sum`: integer initial guess `0x7ef311c3 - bits` and three Newton
//!    steps `r (2 - s r)` (`f32v2axpy` with `$TAS = -1`).
//! 4. `out = e * (1/sum)` in f16, `{ ld64step ; f16v4mul } { st64step }`.
//!
//! The loads read 8 bytes past the input and the output of a worker's share.

use half::f16;

use super::launch::{self, offsets, split, TextEmitter, RowLoopCounts, WORKERS};
use super::CodeletError;

const TAG: &str = "softmax_f16";

/// Polynomial `q(v) ~ exp(v)` on [-1, 0], coefficients c0..c6.
const EXP_COEFFS: [f32; 7] = [
    1.0,
    0.999_998_45,
    0.499_975_1,
    0.166_515_17,
    0.041_223_317,
    0.007_654_325,
    0.000_849_007_86,
];

/// Documented relative error bound of [`exp_f32`] on [-64, 0].
pub const EXP_MAX_REL_ERROR: f64 = 2e-5;

/// The codelet's exp sequence on one f32 value `u <= 0`, operation by
/// operation as the simulator executes it.
pub fn exp_f32(u: f32) -> f32 {
    let v = u.max(-64.0) * (1.0 / 64.0);
    let c = &EXP_COEFFS;
    let mut p = v * c[6] + c[5];
    for k in (0..5).rev() {
        p = p * v + c[k];
    }
    for _ in 0..6 {
        p *= p;
    }
    p
}

/// One softmax launch.
#[derive(Clone, Debug)]
pub struct Softmax {
    /// Rows.
    pub rows: u32,
    /// Columns C (a multiple of 4).
    pub cols: u32,
    /// Input f16 `[rows, C]`, 8-byte aligned.
    pub input: u32,
    /// Output f16 `[rows, C]`, 8-byte aligned, not overlapping the input.
    pub output: u32,
}

/// Auxiliary instructions per f32 pair in the exp pass.
const EXP_PAIR_OPS: usize = 24;

impl Softmax {
    /// Rows per worker.
    pub fn worker_rows(&self) -> [u32; WORKERS] {
        split(self.rows)
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), CodeletError> {
        let err = |m: String| Err(CodeletError::new(TAG, m));
        if self.rows == 0 || self.cols == 0 || !self.cols.is_multiple_of(4) {
            return err(format!(
                "needs rows > 0 and columns a positive multiple of 4, got {}x{}",
                self.rows, self.cols
            ));
        }
        for (what, a) in [("input", self.input), ("output", self.output)] {
            if !a.is_multiple_of(8) {
                return err(format!("{what} address 0x{a:x} is not 8-byte aligned"));
            }
        }
        let bytes = self.rows * self.cols * 2;
        if self.input < self.output + bytes && self.output < self.input + bytes {
            return err("input and output overlap".into());
        }
        Ok(())
    }

    /// The exp pass's auxiliary instructions for one pair, with the
    /// constant-table index each reads through `$a12:13`.
    fn exp_pair_ops(half: usize) -> Vec<(String, Option<usize>)> {
        let mut ops: Vec<(String, Option<usize>)> = vec![
            (format!("f16v2tof32 $a4:5, $a{half}"), None),
            ("f32v2add $a4:5, $a4:5, $a10:11".into(), None),
            ("f32v2max $a4:5, $a4:5, $a12:13".into(), Some(0)),
            ("f32v2mul $a4:5, $a4:5, $a12:13".into(), Some(1)),
            ("f32v2mul $a6:7, $a4:5, $a12:13".into(), Some(2)),
            ("f32v2add $a6:7, $a6:7, $a12:13".into(), Some(3)),
        ];
        // Table index 2 + (6 - k) holds c_k: indices 4..=8 are c4..c0.
        for idx in 4..=8 {
            ops.push(("f32v2mul $a6:7, $a6:7, $a4:5".into(), None));
            ops.push(("f32v2add $a6:7, $a6:7, $a12:13".into(), Some(idx)));
        }
        for _ in 0..6 {
            ops.push(("f32v2mul $a6:7, $a6:7, $a6:7".into(), None));
        }
        ops.push(("f32v2add $a8:9, $a8:9, $a6:7".into(), None));
        ops.push((format!("f32v2tof16 $a{}, $a6:7", 2 + half), None));
        debug_assert_eq!(ops.len(), EXP_PAIR_OPS);
        ops
    }

    fn worker(&self) -> (String, RowLoopCounts) {
        let mut e = TextEmitter::default();
        for s in [
            "ld32 $m2, $mvertex_base, $mzero, 2   // rows".to_string(),
            format!("brz $m2, .L{TAG}_done"),
            "sub $m2, $m2, 1".into(),
            "ld32 $m0, $mvertex_base, $mzero, 0   // x".into(),
            "ld32 $m1, $mvertex_base, $mzero, 1   // out".into(),
            "ld32 $m3, $mvertex_base, $mzero, 3   // C/4".into(),
            "sub $m4, $m3, 1".into(),
            format!("setzi $m7, {TAG}_constants"),
            "setzi $m8, 0x7ef31".into(),
            "shl $m8, $m8, 12".into(),
            "or $m8, $m8, 0x1c3                   // 0x7ef311c3".into(),
            "ld32 $a12, $mvertex_base, $mzero, 5  // -1".into(),
            "uput $TAS, $a12".into(),
        ] {
            e.solo(&s);
        }
        e.aligned_label(&format!(".L{TAG}_row"));
        let setup = e.issues;
        // Pass 1: the row maximum.
        e.solo("mov $m5, $m0");
        e.solo("ld64step $a0:1, $mzero, $m5+=, 1");
        e.bundle(
            "ld64step $a0:1, $mzero, $m5+=, 1",
            "f16v4max $a2:3, $a0:1, $a0:1",
        );
        e.rpt(
            "$m4",
            &format!("{TAG}_max"),
            &[(
                "ld64step $a0:1, $mzero, $m5+=, 1",
                "f16v4max $a2:3, $a2:3, $a0:1",
            )],
        );
        for s in [
            "mov $a4, $a3",
            "f16v4max $a2:3, $a2:3, $a4:5",
            "st32 $a2, $mvertex_base, $mzero, 4",
            "ldb16 $a4, $mvertex_base, $mzero, 9",
            "f16v4max $a2:3, $a2:3, $a4:5",
            "f16tof32 $a10, $a2",
            "mov $a11, $a10",
            "f32v2sub $a10:11, $azeros, $a10:11   // -max, both lanes",
            "mov $a8, $azero",
            "mov $a9, $azero                      // sum = 0",
            // Pass 2: exp and sum.
            "mov $m5, $m0",
            "mov $m6, $m1",
            "ld64step $a0:1, $mzero, $m5+=, 1",
        ] {
            e.solo(s);
        }
        let mut aux = Self::exp_pair_ops(0);
        let second = aux.len();
        aux.extend(Self::exp_pair_ops(1));
        let mut main: Vec<String> = vec!["nop".into(); aux.len()];
        for (slot, next) in main.iter_mut().zip(aux.iter().skip(1)) {
            if let Some(k) = next.1 {
                *slot = format!("ld64 $a12:13, $m7, $mzero, {k}");
            }
        }
        // The next input word once the second pair has converted `$a1`, and
        // the first result half once the first pair has produced it.
        debug_assert_eq!(main[second], "nop");
        main[second] = "ld64step $a0:1, $mzero, $m5+=, 1".into();
        let free = (second + 1..aux.len())
            .find(|&i| main[i] == "nop")
            .unwrap_or(second + 1);
        main[free] = "st32step $a2, $mzero, $m1+=, 1".into();
        let mut body: Vec<(&str, &str)> = main
            .iter()
            .zip(&aux)
            .map(|(m, a)| (m.as_str(), a.0.as_str()))
            .collect();
        body.push(("st32step $a3, $mzero, $m1+=, 1", "fnop"));
        e.rpt("$m3", &format!("{TAG}_exp"), &body);
        for s in [
            "mov $a4, $a9",
            "f32v2add $a8:9, $a8:9, $a4:5",
            "mov $a9, $a8                         // sum, both lanes",
            // 1/sum: integer initial guess, three Newton steps.
            "atom $m9, $a8",
            "sub $m9, $m8, $m9",
            "st32 $m9, $mvertex_base, $mzero, 4",
            "ld32 $a6, $mvertex_base, $mzero, 4",
            "mov $a7, $a6",
            "ld32 $a10, $mvertex_base, $mzero, 6  // 2.0",
            "mov $a11, $a10",
        ] {
            e.solo(s);
        }
        for _ in 0..3 {
            for s in [
                "f32v2mul $a4:5, $a8:9, $a6:7",
                "f32v2axpy $a4:5, $a4:5, $a10:11",
                "f32v2mul $a6:7, $a6:7, $a4:5",
            ] {
                e.solo(s);
            }
        }
        e.solo("f32v2tof16 $a10, $a6:7");
        e.solo("mov $a11, $a10                       // 1/sum, 4 lanes");
        // Pass 3: scale the row in place in the output.
        e.solo("mov $m5, $m6");
        e.solo("ld64step $a0:1, $mzero, $m5+=, 1");
        e.rpt(
            "$m3",
            &format!("{TAG}_scale"),
            &[
                (
                    "ld64step $a0:1, $mzero, $m5+=, 1",
                    "f16v4mul $a2:3, $a0:1, $a10:11",
                ),
                ("st64step $a2:3, $mzero, $m6+=, 1", "fnop"),
            ],
        );
        e.solo("shl $m9, $m3, 3");
        e.solo("add $m0, $m0, $m9");
        launch::end_row_loop(e, TAG, setup)
    }

    /// The codelet's assembly text (supervisor entry `main`).
    pub fn assembly(&self) -> Result<String, CodeletError> {
        self.validate()?;
        let mut s = launch::supervisor_and_worker_header(TAG, 8);
        s.push_str(&self.worker().0);
        let shares = self.worker_rows();
        let offs = offsets(&shares);
        let states: [Vec<u32>; WORKERS] = std::array::from_fn(|w| {
            vec![
                self.input + offs[w] * self.cols * 2,
                self.output + offs[w] * self.cols * 2,
                shares[w],
                self.cols / 4,
                0,
                (-1.0f32).to_bits(),
                2.0f32.to_bits(),
                0,
            ]
        });
        s.push_str(&launch::vertex_state(TAG, &states));
        let mut table = vec![-64.0f32, 1.0 / 64.0];
        table.extend(EXP_COEFFS.iter().rev());
        s.push_str(&format!("    .align 8\n{TAG}_constants:\n"));
        for v in table {
            s.push_str(&format!("    .word 0x{0:08x}, 0x{0:08x}\n", v.to_bits()));
        }
        Ok(s)
    }

    /// Issues of a worker with `n` rows.
    pub fn worker_issues(&self, n: u32) -> u64 {
        if n == 0 {
            // `ld32`, `brz`, `exitz`.
            return 3;
        }
        let c = self.worker().1;
        let w = u64::from(self.cols / 4);
        // rpt bodies: max w - 1, exp (2 pairs + a store) per word, scale 2 per word.
        let body = (w - 1) + (2 * EXP_PAIR_OPS as u64 + 1) * w + 2 * w;
        c.worker_issues(n, body)
    }

    /// Estimated tile cycles from the instruction counts.
    pub fn estimate_cycles(&self) -> u64 {
        let worst = self
            .worker_rows()
            .iter()
            .map(|&n| self.worker_issues(n))
            .max()
            .unwrap_or(0);
        launch::launch_cycles(worst)
    }

    /// Float64 reference.
    pub fn reference(&self, x: &[f16]) -> Vec<f64> {
        let mut out = Vec::with_capacity(x.len());
        for row in x.chunks_exact(self.cols as usize) {
            let v: Vec<f64> = row.iter().map(|h| h.to_f64()).collect();
            let m = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = v.iter().map(|x| (x - m).exp()).collect();
            let s: f64 = e.iter().sum();
            out.extend(e.iter().map(|e| e / s));
        }
        out
    }

    /// Largest error of an output against the reference `want`: the exp
    /// sequence, three f16 roundings (e, 1/sum, the product) and f16's
    /// subnormal spacing.
    pub fn tolerance(&self, want: f64) -> f64 {
        (EXP_MAX_REL_ERROR + 4.0 * 2f64.powi(-11)) * want + 2f64.powi(-24)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exp_sequence_meets_its_documented_bound() {
        let mut worst: f64 = 0.0;
        for i in 0..=64_000 {
            let u = -(i as f32) / 1000.0;
            let got = f64::from(exp_f32(u));
            let want = f64::from(u).exp();
            worst = worst.max((got - want).abs() / want);
        }
        assert!(worst <= EXP_MAX_REL_ERROR, "{worst:e}");
        assert!(worst > 1e-7, "suspiciously exact: {worst:e}");
    }
}
