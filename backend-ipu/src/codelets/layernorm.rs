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
//! 3. `1/sqrt(var + eps)`: `f32oorx`, the instruction poplibs' RSQRT
//!    kernel issues (`lib/popops/codelets/inlineAssemblerUnaryOps.hpp`),
//!    4 issue slots under poplibs' costs (`MachineModel::transcendental_issues`),
//!    in place of a bit-level initial guess and three Newton steps (19 issues).
//! 4. Apply, software-pipelined at 4 bundles per 4 halves:
//!    `d = x - mean`, `n = d * rstd`, `g = n * gamma`, `out = g + beta`,
//!    all f16 operations (four roundings).
//!
//! The input must be 16-byte aligned in interleaved memory with C a
//! multiple of 8; the loads read up to 16 bytes past the end of the input
//! and 8 bytes past gamma and beta.

use half::f16;

use super::emitter::{inst, ld64_next, load_state_word, op, st64_next, Emitter};
use super::launch::{self, offsets, split, RowLaunchCounts, RowLoopCounts, WORKERS};
use super::program::Codelet;
use super::{check_alignment, check_rows, CodeletError};

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
        check_rows(TAG, self.rows, self.cols, 8)?;
        if !(self.eps >= 0.0 && self.eps.is_finite()) {
            return err(format!(
                "epsilon {} is not a finite non-negative number",
                self.eps
            ));
        }
        check_alignment(
            TAG,
            &[
                ("input", self.input, 16),
                ("gamma", self.gamma, 8),
                ("beta", self.beta, 8),
                ("output", self.output, 8),
            ],
        )
    }

    /// The worker: its issues when it has no rows, and its row loop's counts.
    fn emit_worker(&self, e: &mut Emitter) -> (u64, RowLoopCounts) {
        e.solo(load_state_word(op::m(2), 2)); // rows
        e.solo(inst("brz", [op::m(2), op::sym(format!(".L{TAG}_done"))]));
        let empty = e.issues() + 1;
        for s in [
            inst("sub", [op::m(2), op::m(2), op::imm(1)]),
            load_state_word(op::m(0), 0), // x
            load_state_word(op::m(1), 1), // out
            load_state_word(op::m(3), 3), // C/8
            load_state_word(op::m(4), 4), // C/4
        ] {
            e.solo(s);
        }
        e.aligned_label(&format!(".L{TAG}_row"));
        let setup = e.issues();
        // Pass 1: the mean.
        e.solo(inst("mov", [op::m(5), op::m(0)]));
        e.solo(inst(
            "ld128step",
            [op::a_quad(0), op::mzero(), op::m_inc(5), op::imm(1)],
        ));
        e.rpt(
            op::m(3),
            &format!("{TAG}_sum"),
            vec![(
                inst(
                    "ld128step",
                    [op::a_quad(0), op::mzero(), op::m_inc(5), op::imm(1)],
                ),
                inst("f16v8acc", [op::a_quad(0)]),
            )],
        );
        for s in [
            inst("f32v2gina", [op::a_pair(4), op::azeros(), op::imm(0)]),
            inst("f32v2gina", [op::a_pair(6), op::azeros(), op::imm(1)]),
            inst("f32v2add", [op::a_pair(4), op::a_pair(4), op::a_pair(6)]),
            inst("f32v2gina", [op::a_pair(6), op::azeros(), op::imm(2)]),
            inst("f32v2add", [op::a_pair(4), op::a_pair(4), op::a_pair(6)]),
            inst("f32v2gina", [op::a_pair(6), op::azeros(), op::imm(3)]),
            inst("f32v2add", [op::a_pair(4), op::a_pair(4), op::a_pair(6)]),
            inst("mov", [op::a(6), op::a(5)]),
            inst("f32v2add", [op::a_pair(4), op::a_pair(4), op::a_pair(6)]),
            load_state_word(op::a(6), 7), // 1/C
            inst("f32v2mul", [op::a_pair(4), op::a_pair(4), op::a_pair(6)]),
            inst("f32v2sub", [op::a_pair(4), op::azeros(), op::a_pair(4)]),
            inst("f32tof16", [op::a(4), op::a(4)]),
            inst(
                "st32",
                [op::a(4), op::vertex_base(), op::mzero(), op::imm(9)],
            ),
            inst(
                "ldb16",
                [op::a(8), op::vertex_base(), op::mzero(), op::imm(18)],
            ),
            inst("mov", [op::a(9), op::a(8)]), // -mean, 4 lanes
            // Pass 2: the variance.
            inst("mov", [op::m(5), op::m(0)]),
            ld64_next(0, 5),
        ] {
            e.solo(s);
        }
        e.rpt(
            op::m(4),
            &format!("{TAG}_var"),
            vec![
                (
                    ld64_next(0, 5),
                    inst("f16v4add", [op::a_pair(6), op::a_pair(0), op::a_pair(8)]),
                ),
                (
                    inst("nop", []),
                    inst("f16v4cmac", [op::a_pair(6), op::a_pair(6)]),
                ),
            ],
        );
        for s in [
            inst("f32v2gina", [op::a_pair(4), op::azeros(), op::imm(0)]),
            inst("f32v2gina", [op::a_pair(6), op::azeros(), op::imm(1)]),
            inst("f32v2add", [op::a_pair(4), op::a_pair(4), op::a_pair(6)]),
            inst("mov", [op::a(6), op::a(5)]),
            inst("f32v2add", [op::a_pair(4), op::a_pair(4), op::a_pair(6)]),
            load_state_word(op::a(6), 7), // 1/C
            inst("f32v2mul", [op::a_pair(4), op::a_pair(4), op::a_pair(6)]),
            load_state_word(op::a(6), 8), // eps
            inst("f32v2add", [op::a_pair(4), op::a_pair(4), op::a_pair(6)]),
            // 1/sqrt(var + eps), broadcast to four f16 lanes below.
            inst("f32oorx", [op::a(6), op::a(4)]),
            inst("mov", [op::a(7), op::a(6)]),
        ] {
            e.solo(s);
        }
        for s in [
            inst("f32v2tof16", [op::a(10), op::a_pair(6)]),
            inst("mov", [op::a(11), op::a(10)]), // rstd, 4 lanes
            // Pass 3: apply.
            inst("mov", [op::m(5), op::m(0)]),
            load_state_word(op::m(6), 5), // gamma
            load_state_word(op::m(7), 6), // beta
        ] {
            e.solo(s);
        }
        e.bundle(ld64_next(0, 5), inst("fnop", []));
        e.bundle(ld64_next(2, 6), inst("fnop", []));
        e.bundle(
            ld64_next(4, 7),
            inst("f16v4add", [op::a_pair(6), op::a_pair(0), op::a_pair(8)]),
        );
        e.bundle(
            inst("nop", []),
            inst("f16v4mul", [op::a_pair(6), op::a_pair(6), op::a_pair(10)]),
        );
        e.rpt(
            op::m(4),
            &format!("{TAG}_apply"),
            vec![
                (
                    ld64_next(0, 5),
                    inst("f16v4mul", [op::a_pair(12), op::a_pair(6), op::a_pair(2)]),
                ),
                (
                    ld64_next(2, 6),
                    inst("f16v4add", [op::a_pair(12), op::a_pair(12), op::a_pair(4)]),
                ),
                (
                    ld64_next(4, 7),
                    inst("f16v4add", [op::a_pair(6), op::a_pair(0), op::a_pair(8)]),
                ),
                (
                    st64_next(12, 1),
                    inst("f16v4mul", [op::a_pair(6), op::a_pair(6), op::a_pair(10)]),
                ),
            ],
        );
        e.solo(inst("sub", [op::m(0), op::m(5), op::imm(8)]));
        (empty, launch::emit_end_row_loop(e, TAG, setup))
    }

    /// `rpt` body issues per row: C/8 sum bundles, 2 C/4 variance bundles
    /// and 4 C/4 apply bundles.
    fn body_issues_per_row(&self) -> u64 {
        u64::from(self.cols / 8) + 6 * u64::from(self.cols / 4)
    }

    /// Issues of a worker with `n` rows, from the emitted counts.
    pub fn worker_issues(&self, counts: &RowLaunchCounts, n: u32) -> u64 {
        counts.worker_issues(n, self.body_issues_per_row())
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

impl Codelet for LayerNorm {
    type Counts = RowLaunchCounts;

    /// Emits the launch (supervisor entry `main`, six workers) and returns
    /// the issue counts its estimate is made of.
    fn emit(&self, e: &mut Emitter) -> Result<RowLaunchCounts, CodeletError> {
        self.validate()?;
        let supervisor = launch::emit_supervisor_and_worker_entry(e, TAG, 10);
        let (empty, rows) = self.emit_worker(e);
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
                0, // scratch
            ]
        });
        Ok(launch::end_row_launch(
            e, TAG, &states, supervisor, empty, rows,
        ))
    }

    fn cycles(&self, counts: &RowLaunchCounts) -> u64 {
        counts.cycles(&self.worker_rows(), self.body_issues_per_row())
    }
}
