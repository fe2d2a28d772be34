//! LayerNorm over the rows of an f16 matrix `[rows, C]`:
//! `out = (x - mean) / sqrt(var + eps) * gamma + beta` (f16 gamma, beta of
//! length C; mean and variance in f32).
//!
//! Per row, three passes over the row (workers take contiguous shares of rows):
//! 1. `{ ld128step ; f16v8acc }` sums 8 halves per bundle into `$AACC`; the
//!    lanes are folded (`f32v2gina`, `f32v2add`, a lane `mov`) and scaled by
//!    `1/C` to the mean; `-mean` is rounded to f16 and broadcast (`ldb16`).
//! 2. `{ ld64step ; f16v4add d = x - mean } { nop ; f16v4cmac d, d }`
//!    accumulates squared deviations in f32 (two-pass variance).
//! 3. `1/sqrt(var + eps)`: the bit-level initial guess
//!    `0x5f3759df - (bits >> 1)` on the integer registers, then three
//!    Newton steps `y (1.5 - 0.5 v y^2)` in f32 (`f32v2axpy` with
//!    `$TAS = -0.5`): relative error below 1e-7.
//! 4. Apply, software-pipelined at 4 bundles per 4 halves:
//!    `d = x - mean`, `n = d * rstd`, `g = n * gamma`, `out = g + beta`,
//!    all f16 operations (four roundings).
//!
//! The input must be 16-byte aligned in interleaved memory with C a
//! multiple of 8; the loads read up to 16 bytes past the end of the input
//! and 8 bytes past gamma and beta.

use half::f16;

use super::launch::{self, offsets, split, TextEmitter, RowLoopCounts, WORKERS};
use super::CodeletError;

/// One LayerNorm launch.
#[derive(Clone, Debug)]
pub struct LayerNorm {
    /// Rows.
    pub rows: u32,
    /// Columns C (a multiple of 8).
    pub cols: u32,
    /// Epsilon added to the variance.
    pub eps: f32,
    /// Input f16 `[rows, C]`, 16-byte aligned, interleaved memory.
    pub input: u32,
    /// gamma f16 `[C]`, 8-byte aligned.
    pub gamma: u32,
    /// beta f16 `[C]`, 8-byte aligned.
    pub beta: u32,
    /// Output f16 `[rows, C]`, 8-byte aligned (may equal the input).
    pub output: u32,
}

const TAG: &str = "layernorm_f16";

impl LayerNorm {
    /// Rows per worker.
    pub fn worker_rows(&self) -> [u32; WORKERS] {
        split(self.rows)
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), CodeletError> {
        let err = |m: String| Err(CodeletError::new(TAG, m));
        if self.rows == 0 || self.cols == 0 || !self.cols.is_multiple_of(8) {
            return err(format!(
                "needs rows > 0 and columns a positive multiple of 8, got {}x{}",
                self.rows, self.cols
            ));
        }
        if !(self.eps >= 0.0 && self.eps.is_finite()) {
            return err(format!(
                "epsilon {} is not a finite non-negative number",
                self.eps
            ));
        }
        if !self.input.is_multiple_of(16) {
            return err(format!(
                "input address 0x{:x} is not 16-byte aligned",
                self.input
            ));
        }
        for (what, a) in [
            ("gamma", self.gamma),
            ("beta", self.beta),
            ("output", self.output),
        ] {
            if !a.is_multiple_of(8) {
                return err(format!("{what} address 0x{a:x} is not 8-byte aligned"));
            }
        }
        Ok(())
    }

    fn worker(&self) -> (String, RowLoopCounts) {
        let mut e = TextEmitter::default();
        e.solo("ld32 $m2, $mvertex_base, $mzero, 2   // rows");
        e.solo(&format!("brz $m2, .L{TAG}_done"));
        for s in [
            "sub $m2, $m2, 1",
            "ld32 $m0, $mvertex_base, $mzero, 0   // x",
            "ld32 $m1, $mvertex_base, $mzero, 1   // out",
            "ld32 $m3, $mvertex_base, $mzero, 3   // C/8",
            "ld32 $m4, $mvertex_base, $mzero, 4   // C/4",
            "setzi $m8, 0x5f375",
            "shl $m8, $m8, 12",
            "or $m8, $m8, 0x9df                   // 0x5f3759df",
            "ld32 $a12, $mvertex_base, $mzero, 10 // -0.5",
            "uput $TAS, $a12",
        ] {
            e.solo(s);
        }
        e.aligned_label(&format!(".L{TAG}_row"));
        let setup = e.issues;
        // Pass 1: the mean.
        e.solo("mov $m5, $m0");
        e.solo("ld128step $a0:3, $mzero, $m5+=, 1");
        e.rpt(
            "$m3",
            &format!("{TAG}_sum"),
            &[("ld128step $a0:3, $mzero, $m5+=, 1", "f16v8acc $a0:3")],
        );
        for s in [
            "f32v2gina $a4:5, $azeros, 0",
            "f32v2gina $a6:7, $azeros, 1",
            "f32v2add $a4:5, $a4:5, $a6:7",
            "f32v2gina $a6:7, $azeros, 2",
            "f32v2add $a4:5, $a4:5, $a6:7",
            "f32v2gina $a6:7, $azeros, 3",
            "f32v2add $a4:5, $a4:5, $a6:7",
            "mov $a6, $a5",
            "f32v2add $a4:5, $a4:5, $a6:7",
            "ld32 $a6, $mvertex_base, $mzero, 7   // 1/C",
            "f32v2mul $a4:5, $a4:5, $a6:7",
            "f32v2sub $a4:5, $azeros, $a4:5",
            "f32tof16 $a4, $a4",
            "st32 $a4, $mvertex_base, $mzero, 9",
            "ldb16 $a8, $mvertex_base, $mzero, 18",
            "mov $a9, $a8                         // -mean, 4 lanes",
            // Pass 2: the variance.
            "mov $m5, $m0",
            "ld64step $a0:1, $mzero, $m5+=, 1",
        ] {
            e.solo(s);
        }
        e.rpt(
            "$m4",
            &format!("{TAG}_var"),
            &[
                (
                    "ld64step $a0:1, $mzero, $m5+=, 1",
                    "f16v4add $a6:7, $a0:1, $a8:9",
                ),
                ("nop", "f16v4cmac $a6:7, $a6:7"),
            ],
        );
        for s in [
            "f32v2gina $a4:5, $azeros, 0",
            "f32v2gina $a6:7, $azeros, 1",
            "f32v2add $a4:5, $a4:5, $a6:7",
            "mov $a6, $a5",
            "f32v2add $a4:5, $a4:5, $a6:7",
            "ld32 $a6, $mvertex_base, $mzero, 7   // 1/C",
            "f32v2mul $a4:5, $a4:5, $a6:7",
            "ld32 $a6, $mvertex_base, $mzero, 8   // eps",
            "f32v2add $a4:5, $a4:5, $a6:7",
            "mov $a5, $a4                         // v = var + eps, both lanes",
            // 1/sqrt(v): initial guess on the integer registers, three Newton steps.
            "atom $m9, $a4",
            "shr $m9, $m9, 1",
            "sub $m9, $m8, $m9",
            "st32 $m9, $mvertex_base, $mzero, 9",
            "ld32 $a6, $mvertex_base, $mzero, 9",
            "mov $a7, $a6",
            "ld32 $a10, $mvertex_base, $mzero, 11 // 1.5",
            "mov $a11, $a10",
        ] {
            e.solo(s);
        }
        for _ in 0..3 {
            for s in [
                "f32v2mul $a0:1, $a6:7, $a6:7",
                "f32v2mul $a0:1, $a0:1, $a4:5",
                "f32v2axpy $a0:1, $a0:1, $a10:11",
                "f32v2mul $a6:7, $a6:7, $a0:1",
            ] {
                e.solo(s);
            }
        }
        for s in [
            "f32v2tof16 $a10, $a6:7",
            "mov $a11, $a10                       // rstd, 4 lanes",
            // Pass 3: apply.
            "mov $m5, $m0",
            "ld32 $m6, $mvertex_base, $mzero, 5   // gamma",
            "ld32 $m7, $mvertex_base, $mzero, 6   // beta",
        ] {
            e.solo(s);
        }
        e.bundle("ld64step $a0:1, $mzero, $m5+=, 1", "fnop");
        e.bundle("ld64step $a2:3, $mzero, $m6+=, 1", "fnop");
        e.bundle(
            "ld64step $a4:5, $mzero, $m7+=, 1",
            "f16v4add $a6:7, $a0:1, $a8:9",
        );
        e.bundle("nop", "f16v4mul $a6:7, $a6:7, $a10:11");
        e.rpt(
            "$m4",
            &format!("{TAG}_apply"),
            &[
                (
                    "ld64step $a0:1, $mzero, $m5+=, 1",
                    "f16v4mul $a12:13, $a6:7, $a2:3",
                ),
                (
                    "ld64step $a2:3, $mzero, $m6+=, 1",
                    "f16v4add $a12:13, $a12:13, $a4:5",
                ),
                (
                    "ld64step $a4:5, $mzero, $m7+=, 1",
                    "f16v4add $a6:7, $a0:1, $a8:9",
                ),
                (
                    "st64step $a12:13, $mzero, $m1+=, 1",
                    "f16v4mul $a6:7, $a6:7, $a10:11",
                ),
            ],
        );
        e.solo("sub $m0, $m5, 8");
        launch::end_row_loop(e, TAG, setup)
    }

    /// The codelet's assembly text (supervisor entry `main`).
    pub fn assembly(&self) -> Result<String, CodeletError> {
        self.validate()?;
        let mut s = launch::supervisor_and_worker_header(TAG, 12);
        s.push_str(&self.worker().0);
        let shares = self.worker_rows();
        let offs = offsets(&shares);
        let states: [Vec<u32>; WORKERS] = std::array::from_fn(|w| {
            vec![
                self.input + offs[w] * self.cols * 2,
                self.output + offs[w] * self.cols * 2,
                shares[w],
                self.cols / 8,
                self.cols / 4,
                self.gamma,
                self.beta,
                (1.0 / self.cols as f32).to_bits(),
                self.eps.to_bits(),
                0,
                (-0.5f32).to_bits(),
                1.5f32.to_bits(),
            ]
        });
        s.push_str(&launch::vertex_state(TAG, &states));
        Ok(s)
    }

    /// Issues of a worker with `n` rows.
    pub fn worker_issues(&self, n: u32) -> u64 {
        let c = self.worker().1;
        if n == 0 {
            // `ld32`, `brz`, `exitz`.
            return 3;
        }
        // Per row, besides the fixed part: C/8 sum bundles, 2 C/4 variance
        // bundles and 4 C/4 apply bundles.
        let body = u64::from(self.cols / 8) + 6 * u64::from(self.cols / 4);
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

    /// Float64 reference per element, with the magnitude
    /// `|n gamma| + |beta| + |mean| rstd |gamma|` that the f16 apply
    /// chain's error scales with (the last term: `-mean` is rounded to f16).
    pub fn reference(&self, x: &[f16], gamma: &[f16], beta: &[f16]) -> Vec<(f64, f64)> {
        let c = self.cols as usize;
        let mut out = Vec::with_capacity(x.len());
        for row in x.chunks_exact(c) {
            let v: Vec<f64> = row.iter().map(|h| h.to_f64()).collect();
            let mean = v.iter().sum::<f64>() / c as f64;
            let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / c as f64;
            let rstd = 1.0 / (var + f64::from(self.eps)).sqrt();
            for (i, x) in v.iter().enumerate() {
                let g = gamma[i].to_f64();
                let b = beta[i].to_f64();
                let n = (x - mean) * rstd;
                out.push((
                    n * g + b,
                    (n * g).abs() + b.abs() + mean.abs() * rstd * g.abs(),
                ));
            }
        }
        out
    }

    /// Largest error against the reference for an element of magnitude
    /// `mag`: six f16 roundings (`-mean`, d, rstd, n, g, out) relative to
    /// the magnitude.
    pub fn tolerance(&self, mag: f64) -> f64 {
        6.0 * 2f64.powi(-11) * mag + 2f64.powi(-20)
    }
}
