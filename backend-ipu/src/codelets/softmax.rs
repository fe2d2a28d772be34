//! Softmax over the rows of an f16 matrix `[rows, C]` (C a multiple of 4),
//! f16 output, computed in f32.
//!
//! Per row (workers take contiguous shares of rows):
//! 1. The row maximum: `{ ld64step ; f16v4max }`, the lanes folded as in
//!    the row-max reduction.
//! 2. `e = exp(x - max)` for each element, written to the output as f16 and
//!    summed in f32: `x - max` in f32 (exact), then `f32exp` per lane, the
//!    instruction poplibs' float exponent kernel issues
//!    (`lib/popops/codelets/inlineAssemblerUnaryOps.hpp`), 3 issue slots
//!    each under poplibs' costs (`MachineModel::transcendental_issues`).
//!    Per word 8 bundles and 4 `f32exp`: 20 issues, against 49 for the
//!    polynomial (`q(u/64)^64`) the codelet used before. We keep f32 for
//!    `x - max` and `e` rather than poplibs' half kernel (`f16v2exp`, 1
//!    issue per element against 3 here): rounding `x - max` to f16 would
//!    cost up to `|x - max| 2^-11` of relative error in `e`.
//! 3. `1/sum`: `f32oox` (poplibs' INVERSE kernel), broadcast as f16.
//! 4. `out = e * (1/sum)` in f16, `{ ld64step ; f16v4mul } { st64step }`.
//!
//! The loads read 8 bytes past the input and the output of a worker's share.

use half::f16;

use super::emitter::{inst, ld64_next, load_state_word, op, st64_next, Emitter, Inst};
use super::launch::{self, split, RowLaunchCounts, RowLoopCounts, WORKERS};
use super::program::Codelet;
use super::{check_alignment, check_rows, CodeletError};

const TAG: &str = "softmax_f16";

/// Relative error bound of the exp step: `f32exp` rounds once to f32.
pub const EXP_MAX_REL_ERROR: f64 = 6e-8;

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

impl Softmax {
    /// Rows per worker.
    pub fn worker_rows(&self) -> [u32; WORKERS] {
        split(self.rows)
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), CodeletError> {
        let err = |m: String| Err(CodeletError::new(TAG, m));
        check_rows(TAG, self.rows, self.cols, 4)?;
        check_alignment(TAG, &[("input", self.input, 8), ("output", self.output, 8)])?;
        let bytes = self.rows * self.cols * 2;
        if self.input < self.output + bytes && self.output < self.input + bytes {
            return err("input and output overlap".into());
        }
        Ok(())
    }

    /// The exp pass's auxiliary instructions for one pair: `$a4:5 =
    /// exp(x - max)` of half `half` of `$a0:1` (`-max` in `$a10:11`),
    /// rounded to f16 into `$a{2 + half}`, added to the sum `$a8:9`.
    fn exp_pair_ops(half: u8) -> [Inst; 6] {
        let p = op::a_pair;
        [
            inst("f16v2tof32", [p(4), op::a(half)]),
            inst("f32v2add", [p(4), p(4), p(10)]),
            inst("f32exp", [op::a(4), op::a(4)]),
            inst("f32exp", [op::a(5), op::a(5)]),
            inst("f32v2tof16", [op::a(2 + half), p(4)]),
            inst("f32v2add", [p(8), p(8), p(4)]),
        ]
    }

    /// The worker: its issues when it has no rows, its row loop's counts,
    /// and the `rpt` body issues of one row.
    fn emit_worker(&self, e: &mut Emitter) -> (u64, RowLoopCounts, u64) {
        e.solo(load_state_word(op::m(2), 2)); // rows
        let empty = launch::emit_start_row_count(e, TAG);
        for s in [
            load_state_word(op::m(0), 0), // x
            load_state_word(op::m(1), 1), // out
            load_state_word(op::m(3), 3), // C/4
            inst("sub", [op::m(4), op::m(3), op::imm(1)]),
        ] {
            e.solo(s);
        }
        e.aligned_label(&format!(".L{TAG}_row"));
        let setup = e.issues();
        // Pass 1: the row maximum.
        e.solo(inst("mov", [op::m(5), op::m(0)]));
        e.solo(ld64_next(0, 5));
        e.bundle(
            ld64_next(0, 5),
            inst("f16v4max", [op::a_pair(2), op::a_pair(0), op::a_pair(0)]),
        );
        let max_body = e.rpt(
            op::m(4),
            &format!("{TAG}_max"),
            vec![(
                ld64_next(0, 5),
                inst("f16v4max", [op::a_pair(2), op::a_pair(2), op::a_pair(0)]),
            )],
        );
        for s in [
            inst("mov", [op::a(4), op::a(3)]),
            inst("f16v4max", [op::a_pair(2), op::a_pair(2), op::a_pair(4)]),
            inst(
                "st32",
                [op::a(2), op::vertex_base(), op::mzero(), op::imm(4)],
            ),
            inst(
                "ldb16",
                [op::a(4), op::vertex_base(), op::mzero(), op::imm(9)],
            ),
            inst("f16v4max", [op::a_pair(2), op::a_pair(2), op::a_pair(4)]),
            inst("f16tof32", [op::a(10), op::a(2)]),
            inst("mov", [op::a(11), op::a(10)]),
            inst("f32v2sub", [op::a_pair(10), op::azeros(), op::a_pair(10)]), // -max, both lanes
            inst("mov", [op::a(8), op::azero()]),
            inst("mov", [op::a(9), op::azero()]), // sum = 0
            // Pass 2: exp and sum.
            inst("mov", [op::m(5), op::m(0)]),
            inst("mov", [op::m(6), op::m(1)]),
            ld64_next(0, 5),
        ] {
            e.solo(s);
        }
        // Main slots: the first half's store once it is rounded, the next
        // input word once the second pair has converted `$a1`, the second
        // half's store.
        let aux: Vec<Inst> = Self::exp_pair_ops(0)
            .into_iter()
            .chain(Self::exp_pair_ops(1))
            .collect();
        let mut main: Vec<Inst> = vec![inst("nop", []); aux.len()];
        main[5] = inst(
            "st32step",
            [op::a(2), op::mzero(), op::m_inc(1), op::imm(1)],
        );
        main[7] = ld64_next(0, 5);
        main[11] = inst(
            "st32step",
            [op::a(3), op::mzero(), op::m_inc(1), op::imm(1)],
        );
        let body: Vec<(Inst, Inst)> = main.into_iter().zip(aux).collect();
        let exp_body = e.rpt(op::m(3), &format!("{TAG}_exp"), body);
        for s in [
            inst("mov", [op::a(4), op::a(9)]),
            inst("f32v2add", [op::a_pair(8), op::a_pair(8), op::a_pair(4)]), // sum in $a8
        ] {
            e.solo(s);
        }
        // 1/sum, broadcast to four f16 lanes.
        e.solo(inst("f32oox", [op::a(6), op::a(8)]));
        e.solo(inst("mov", [op::a(7), op::a(6)]));
        e.solo(inst("f32v2tof16", [op::a(10), op::a_pair(6)]));
        e.solo(inst("mov", [op::a(11), op::a(10)]));
        // Pass 3: scale the row in place in the output.
        e.solo(inst("mov", [op::m(5), op::m(6)]));
        e.solo(ld64_next(0, 5));
        let scale_body = e.rpt(
            op::m(3),
            &format!("{TAG}_scale"),
            vec![
                (
                    ld64_next(0, 5),
                    inst("f16v4mul", [op::a_pair(2), op::a_pair(0), op::a_pair(10)]),
                ),
                (st64_next(2, 6), inst("fnop", [])),
            ],
        );
        e.solo(inst("shl", [op::m(9), op::m(3), op::imm(3)]));
        e.solo(inst("add", [op::m(0), op::m(0), op::m(9)]));
        let rows = launch::emit_end_row_loop(e, TAG, setup);
        // Per row: max passes w - 1, exp and scale passes w (w = C/4 words).
        let w = u64::from(self.cols / 4);
        (
            empty,
            rows,
            max_body * (w - 1) + (exp_body + scale_body) * w,
        )
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

impl Codelet for Softmax {
    type Counts = (RowLaunchCounts, u64);

    /// Emits the launch (supervisor entry `main`, six workers) and returns
    /// the issue counts its estimate is made of, with the `rpt` body issues
    /// of one row.
    fn emit(&self, e: &mut Emitter) -> Result<(RowLaunchCounts, u64), CodeletError> {
        self.validate()?;
        let supervisor = launch::emit_supervisor_and_worker_entry(e, TAG, 5);
        let (empty, rows, body) = self.emit_worker(e);
        // Input, output, rows, C/4 and a scratch word for the row maximum.
        let states = launch::worker_states(&self.worker_rows(), |first, count| {
            vec![
                self.input + first * self.cols * 2,
                self.output + first * self.cols * 2,
                count,
                self.cols / 4,
                0,
            ]
        });
        let counts = launch::end_row_launch(e, TAG, &states, supervisor, empty, rows);
        Ok((counts, body))
    }

    fn cycles(&self, counts: &(RowLaunchCounts, u64)) -> u64 {
        counts.0.cycles(&self.worker_rows(), counts.1)
    }
}
