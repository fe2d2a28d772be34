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

use super::launch::{self, offsets, split, WORKERS};
use super::CodeletError;

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
        if !self.input.is_multiple_of(align) {
            return err(format!(
                "input address 0x{:x} is not {align}-byte aligned",
                self.input
            ));
        }
        if !self.output.is_multiple_of(4) {
            return err(format!(
                "output address 0x{:x} is not 4-byte aligned",
                self.output
            ));
        }
        Ok(())
    }

    /// The codelet's assembly text (supervisor entry `main`).
    pub fn assembly(&self) -> Result<String, CodeletError> {
        self.validate()?;
        let tag = self.tag();
        let mut s = launch::supervisor_and_worker_header(tag, 5);
        s.push_str(
            "    ld32 $m0, $mvertex_base, $mzero, 0   // input\n    ld32 $m1, $mvertex_base, $mzero, 1   // output\n\
             \x20   ld32 $m2, $mvertex_base, $mzero, 2   // rows\n    ld32 $m3, $mvertex_base, $mzero, 3   // rpt count per row\n",
        );
        s.push_str(&format!("    brz $m2, .L{tag}_done\n    sub $m2, $m2, 1\n"));
        match self.op {
            ReduceOp::Sum => s.push_str(&format!(
                "    ld128step $a0:3, $mzero, $m0+=, 1\n    nop\n.L{tag}_row:\n\
                 \x20   {{ rpt $m3, (.L{tag}_end - .L{tag}_start)/8 - 1 ; fnop }}\n.L{tag}_start:\n\
                 \x20   {{ ld128step $a0:3, $mzero, $m0+=, 1 ; f16v8acc $a0:3 }}\n.L{tag}_end:\n\
                 \x20   f32v2gina $a4:5, $azeros, 0\n    f32v2gina $a6:7, $azeros, 1\n    f32v2add $a4:5, $a4:5, $a6:7\n\
                 \x20   f32v2gina $a6:7, $azeros, 2\n    f32v2add $a4:5, $a4:5, $a6:7\n\
                 \x20   f32v2gina $a6:7, $azeros, 3\n    f32v2add $a4:5, $a4:5, $a6:7\n\
                 \x20   mov $a6, $a5\n    f32v2add $a4:5, $a4:5, $a6:7\n    st32step $a4, $mzero, $m1+=, 1\n\
                 \x20   nop\n    brnzdec $m2, .L{tag}_row\n"
            )),
            ReduceOp::Max => s.push_str(&format!(
                "    ld64step $a0:1, $mzero, $m0+=, 1\n    nop\n.L{tag}_row:\n\
                 \x20   {{ ld64step $a0:1, $mzero, $m0+=, 1 ; f16v4max $a2:3, $a0:1, $a0:1 }}\n\
                 \x20   {{ rpt $m3, (.L{tag}_end - .L{tag}_start)/8 - 1 ; fnop }}\n.L{tag}_start:\n\
                 \x20   {{ ld64step $a0:1, $mzero, $m0+=, 1 ; f16v4max $a2:3, $a2:3, $a0:1 }}\n.L{tag}_end:\n\
                 \x20   mov $a4, $a3\n    f16v4max $a2:3, $a2:3, $a4:5\n    st32 $a2, $mvertex_base, $mzero, 4\n\
                 \x20   ldb16 $a4, $mvertex_base, $mzero, 9\n    f16v4max $a2:3, $a2:3, $a4:5\n    f16tof32 $a6, $a2\n\
                 \x20   st32step $a6, $mzero, $m1+=, 1\n    brnzdec $m2, .L{tag}_row\n"
            )),
        }
        s.push_str(&format!(".L{tag}_done:\n    exitz $mzero\n"));
        let shares = self.worker_rows();
        let offs = offsets(&shares);
        let count = match self.op {
            ReduceOp::Sum => self.cols / 8,
            ReduceOp::Max => self.cols / 4 - 1,
        };
        let states: [Vec<u32>; WORKERS] = std::array::from_fn(|w| {
            vec![
                self.input + offs[w] * self.cols * 2,
                self.output + offs[w] * 4,
                shares[w],
                count,
                0,
            ]
        });
        s.push_str(&launch::vertex_state(tag, &states));
        Ok(s)
    }

    /// Issues of a worker with `n` rows.
    pub fn worker_issues(&self, n: u32) -> u64 {
        if n == 0 {
            // 4 `ld32`, `brz`, `exitz`.
            return 6;
        }
        let n = u64::from(n);
        // Setup: 4 `ld32`, `brz`, `sub`, first load, `nop`; then `exitz`.
        let fixed = 9;
        let per_row = match self.op {
            // `rpt`, cols/8 bundles, 12 fold/store/branch instructions.
            ReduceOp::Sum => 13 + u64::from(self.cols / 8),
            // first bundle, `rpt`, cols/4 - 1 bundles, 8 fold/store/branch.
            ReduceOp::Max => 9 + u64::from(self.cols / 4),
        };
        fixed + n * per_row
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
