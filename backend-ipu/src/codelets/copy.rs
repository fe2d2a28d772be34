//! Strided copies: `rows` rows of `row_bytes` bytes from `src + r *
//! src_stride` to `dst + r * dst_stride` (row gathers, slices, padding
//! removal and the row-level rearrangements between layouts).
//!
//! Workers take contiguous shares of rows. Each row is a `rpt` loop of
//! `ldst64pace` (load the next word, store the previous one): one 64-bit
//! word per bundle, the machine model's one-store-per-cycle limit, with no
//! read past the row. A load and a store share each instruction, so the
//! source and destination words of one instruction (`src + 8(k+1)` and
//! `dst + 8k`) must be in different banks; the simulator reports a
//! conflict otherwise.

use super::emitter::{inst, ldst64_stream, op, Emitter};
use super::launch::{self, split, RowLaunchCounts, WORKERS};
use super::program::Codelet;
use super::CodeletError;

/// One strided-copy launch.
#[derive(Clone, Debug)]
pub struct StridedCopy {
    /// Rows.
    pub rows: u32,
    /// Bytes per row (a positive multiple of 8).
    pub row_bytes: u32,
    /// Source, 8-byte aligned.
    pub src: u32,
    /// Bytes between source rows (a multiple of 8).
    pub src_stride: u32,
    /// Destination, 8-byte aligned.
    pub dst: u32,
    /// Bytes between destination rows (a multiple of 8).
    pub dst_stride: u32,
}

/// The launch's tag: its labels and sections are named after it.
pub const TAG: &str = "copy_strided";

impl StridedCopy {
    /// Rows per worker.
    pub fn worker_rows(&self) -> [u32; WORKERS] {
        split(self.rows)
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), CodeletError> {
        let err = |m: String| Err(CodeletError::new(TAG, m));
        if self.rows == 0 || self.row_bytes == 0 || !self.row_bytes.is_multiple_of(8) {
            return err(format!(
                "needs rows > 0 and a positive multiple of 8 bytes per row, got {} rows of {} bytes",
                self.rows, self.row_bytes
            ));
        }
        for (what, v) in [
            ("src", self.src),
            ("dst", self.dst),
            ("source stride", self.src_stride),
            ("destination stride", self.dst_stride),
        ] {
            if v % 8 != 0 {
                return err(format!("{what} 0x{v:x} is not a multiple of 8"));
            }
        }
        Ok(())
    }

    /// `rpt` body issues per row: one bundle per word after the first.
    pub fn body_issues_per_row(&self) -> u64 {
        u64::from(self.row_bytes / 8 - 1)
    }

    /// Issues of a worker with `n` rows, from the emitted counts.
    pub fn worker_issues(&self, counts: &RowLaunchCounts, n: u32) -> u64 {
        counts.worker_issues(n, self.body_issues_per_row())
    }

    /// Reference: the destination image after the copy, given the source
    /// memory (`src_mem` starts at `src`) and the destination memory before
    /// (`dst_mem` starts at `dst`).
    pub fn reference(&self, src_mem: &[u8], dst_mem: &[u8]) -> Vec<u8> {
        let mut out = dst_mem.to_vec();
        let n = self.row_bytes as usize;
        for r in 0..self.rows as usize {
            let s = r * self.src_stride as usize;
            let d = r * self.dst_stride as usize;
            out[d..d + n].copy_from_slice(&src_mem[s..s + n]);
        }
        out
    }
}

impl Codelet for StridedCopy {
    type Counts = RowLaunchCounts;

    /// Emits the launch (supervisor entry `main`, six workers) and returns
    /// the issue counts its estimate is made of.
    fn emit(&self, e: &mut Emitter) -> Result<RowLaunchCounts, CodeletError> {
        self.validate()?;
        let supervisor = launch::emit_supervisor_and_worker_entry(e, TAG, 6);
        // Vertex state: src, dst, rows, words per row - 1, src stride, dst stride.
        e.load_state(&[(0, 0), (1, 1), (2, 2), (3, 3), (6, 4), (7, 5)]);
        let empty = launch::emit_start_row_count(e, TAG);
        let setup = e.issues();
        e.label(&format!(".L{TAG}_row"));
        e.solo(inst("add", [op::m(8), op::m(0), op::imm(8)]));
        e.solo(inst(
            "tapack",
            [op::m_pair(4), op::m(8), op::mzero(), op::m(1)],
        ));
        e.solo(inst(
            "ld64",
            [op::a_pair(0), op::m(0), op::mzero(), op::imm(0)],
        ));
        e.rpt(op::m(3), TAG, vec![(ldst64_stream(0, 0), inst("fnop", []))]);
        e.solo(inst(
            "st64",
            [op::a_pair(0), op::m(1), op::mzero(), op::m(3)],
        ));
        e.solo(inst("add", [op::m(0), op::m(0), op::m(6)]));
        e.solo(inst("add", [op::m(1), op::m(1), op::m(7)]));
        let rows = launch::emit_end_row_loop(e, TAG, setup);
        let states = launch::worker_states(&self.worker_rows(), |first, count| {
            vec![
                self.src + first * self.src_stride,
                self.dst + first * self.dst_stride,
                count,
                self.row_bytes / 8 - 1,
                self.src_stride,
                self.dst_stride,
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
