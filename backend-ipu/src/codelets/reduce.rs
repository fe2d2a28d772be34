//! Row reductions of an f16 matrix `[rows, cols]` to one f32 per row: sum
//! (accumulated in f32) and max.
//!
//! Workers take contiguous shares of rows; rows are contiguous in memory so
//! one load stream runs through a worker's share, preloading the next row's
//! first vector during the current row's last iteration.
//! - Sum: `{ ld128step ; f16v8acc }` adds 8 halves per bundle into the
//!   eight f32 accumulators (`$AACC`); at the row end four `f32v2gina` read
//!   and clear them, three `f32v2add` and a lane move (`mov`) fold the lanes.
//!   The input must be 16-byte aligned in interleaved memory (`ld128`).
//! - Max: `{ ld64step ; f16v4max }` keeps four running maxima; the row end
//!   folds the four lanes (a register move for the upper pair, a store and
//!   `ldb16` broadcast for the last two) and widens to f32 (exact).
//!
//! Loads read one vector past each worker's share.

use half::f16;

use super::emitter::{inst, ld64_next, op, Emitter};
use super::launch::{self, split, RowLaunchCounts, WORKERS};
use super::program::Codelet;
use super::{check_alignment, CodeletError};
use ipuc_dialects::ipu::Operand;

/// The reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    /// Sum in f32.
    Sum,
    /// Maximum (IEEE maxNum: NaNs are ignored unless all are NaN).
    Max,
}

/// One row-reduction launch.
#[derive(Clone, Debug)]
pub struct RowReduce {
    /// Operation.
    pub op: ReduceOp,
    /// Rows.
    pub rows: u32,
    /// Columns (sum: a multiple of 8; max: of 4).
    pub cols: u32,
    /// Input f16 `[rows, cols]` (sum: 16-byte aligned, interleaved memory; max: 8-byte aligned).
    pub input: u32,
    /// Output f32 `[rows]`, 4-byte aligned.
    pub output: u32,
}

impl RowReduce {
    fn tag(&self) -> &'static str {
        match self.op {
            ReduceOp::Sum => "reduce_sum_rows_f16",
            ReduceOp::Max => "reduce_max_rows_f16",
        }
    }

    /// Halves per vector of the inner loop.
    fn lanes(&self) -> u32 {
        match self.op {
            ReduceOp::Sum => 8,
            ReduceOp::Max => 4,
        }
    }

    /// Rows per worker.
    pub fn worker_rows(&self) -> [u32; WORKERS] {
        split(self.rows)
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), CodeletError> {
        let err = |m: String| Err(CodeletError::new(self.tag(), m));
        if self.rows == 0 {
            return err("no rows".into());
        }
        let l = self.lanes();
        if self.cols == 0 || !self.cols.is_multiple_of(l) {
            return err(format!(
                "columns {} are not a positive multiple of {l} (pad the rows)",
                self.cols
            ));
        }
        let align = 2 * l;
        check_alignment(
            self.tag(),
            &[("input", self.input, align), ("output", self.output, 4)],
        )
    }

    /// The `rpt` count of a row: sum runs one bundle per 8 halves; max's
    /// first vector is in the row's first bundle.
    fn rpt_count(&self) -> u32 {
        match self.op {
            ReduceOp::Sum => self.cols / 8,
            ReduceOp::Max => self.cols / 4 - 1,
        }
    }

    /// Issues of a worker with `n` rows, from the emitted counts (one body
    /// bundle per `rpt` pass).
    pub fn worker_issues(&self, counts: &RowLaunchCounts, n: u32) -> u64 {
        counts.worker_issues(n, u64::from(self.rpt_count()))
    }

    /// Float64 reference per row, with the sum of absolute values (for the
    /// sum's error bound).
    pub fn reference(&self, input: &[f16]) -> Vec<(f64, f64)> {
        input
            .chunks_exact(self.cols as usize)
            .map(|row| {
                let mag = row.iter().map(|h| h.to_f64().abs()).sum();
                let v = match self.op {
                    ReduceOp::Sum => row.iter().map(|h| h.to_f64()).sum(),
                    ReduceOp::Max => row
                        .iter()
                        .map(|h| h.to_f64())
                        .fold(f64::NEG_INFINITY, f64::max),
                };
                (v, mag)
            })
            .collect()
    }

    /// Largest error against the reference: f32 accumulation of
    /// `cols / 8 + 3` terms per lane and the fold; max is exact.
    pub fn tolerance(&self, magnitude: f64) -> f64 {
        match self.op {
            ReduceOp::Sum => f64::from(self.cols / 8 + 4) * 2f64.powi(-24) * magnitude,
            ReduceOp::Max => 0.0,
        }
    }
}

impl Codelet for RowReduce {
    type Counts = RowLaunchCounts;

    /// Emits the launch (supervisor entry `main`, six workers) and returns
    /// the issue counts its estimate is made of.
    fn emit(&self, e: &mut Emitter) -> Result<RowLaunchCounts, CodeletError> {
        self.validate()?;
        let tag = self.tag();
        let supervisor = launch::emit_supervisor_and_worker_entry(e, tag, 5);
        // Vertex state: input, output, rows, rpt count per row (and a scratch word).
        e.load_state(&[(0, 0), (1, 1), (2, 2), (3, 3)]);
        let empty = launch::emit_start_row_count(e, tag);
        let row = format!(".L{tag}_row");
        let setup;
        match self.op {
            ReduceOp::Sum => {
                let load = || {
                    inst(
                        "ld128step",
                        [op::a_quad(0), op::mzero(), op::m_inc(0), op::imm(1)],
                    )
                };
                e.solo(load());
                e.align_code();
                setup = e.issues();
                e.label(&row);
                e.rpt(
                    op::m(3),
                    tag,
                    vec![(load(), inst("f16v8acc", [op::a_quad(0)]))],
                );
                let gina =
                    |d: u8, k: i64| inst("f32v2gina", [op::a_pair(d), op::azeros(), op::imm(k)]);
                let add = || inst("f32v2add", [op::a_pair(4), op::a_pair(4), op::a_pair(6)]);
                e.solo(gina(4, 0));
                for k in 1..4 {
                    e.solo(gina(6, k));
                    e.solo(add());
                }
                e.solo(inst("mov", [op::a(6), op::a(5)]));
                e.solo(add());
                e.solo(inst(
                    "st32step",
                    [op::a(4), op::mzero(), op::m_inc(1), op::imm(1)],
                ));
                e.solo(inst("nop", []));
            }
            ReduceOp::Max => {
                let load = || ld64_next(0, 0);
                let max = |x: Operand, y: Operand| inst("f16v4max", [op::a_pair(2), x, y]);
                e.solo(load());
                e.align_code();
                setup = e.issues();
                e.label(&row);
                e.bundle(load(), max(op::a_pair(0), op::a_pair(0)));
                e.rpt(
                    op::m(3),
                    tag,
                    vec![(load(), max(op::a_pair(2), op::a_pair(0)))],
                );
                e.solo(inst("mov", [op::a(4), op::a(3)]));
                e.solo(max(op::a_pair(2), op::a_pair(4)));
                e.solo(inst(
                    "st32",
                    [op::a(2), op::vertex_base(), op::mzero(), op::imm(4)],
                ));
                e.solo(inst(
                    "ldb16",
                    [op::a(4), op::vertex_base(), op::mzero(), op::imm(9)],
                ));
                e.solo(max(op::a_pair(2), op::a_pair(4)));
                e.solo(inst("f16tof32", [op::a(6), op::a(2)]));
                e.solo(inst(
                    "st32step",
                    [op::a(6), op::mzero(), op::m_inc(1), op::imm(1)],
                ));
            }
        }
        let rows = launch::emit_end_row_loop(e, tag, setup);
        let states = launch::worker_states(&self.worker_rows(), |first, count| {
            vec![
                self.input + first * self.cols * 2,
                self.output + first * 4,
                count,
                self.rpt_count(),
                0,
            ]
        });
        Ok(launch::end_row_launch(
            e, tag, &states, supervisor, empty, rows,
        ))
    }

    fn cycles(&self, counts: &RowLaunchCounts) -> u64 {
        counts.cycles(&self.worker_rows(), u64::from(self.rpt_count()))
    }
}
