//! 2-D transpose: a row-major `[rows, cols]` matrix at `src` becomes the
//! row-major `[cols, rows]` matrix at `dst`, for 32-bit (f32) and 16-bit
//! (f16) elements.
//!
//! Workers take contiguous shares of destination rows (source columns).
//! Each destination row is one `rpt` loop walking down a source column with
//! a stepped load (the step immediate is the column count, so `cols` must
//! fit the signed 12-bit step) and along the destination row with a stepped
//! store:
//!
//! - f32, even `cols` and an 8-byte aligned source: a worker takes
//!   destination rows in pairs; `ld64step $a0:1` loads two adjacent
//!   elements of a source row, `st32` / `st32step` write one to each
//!   destination row: three issues per two elements.
//! - f32 otherwise: `ld32step $a0` (down the column) then `st32step $a0`
//!   (along the row): two issues per element.
//! - f16, even `cols`: a worker takes destination rows in pairs (a source
//!   column pair, one word wide). Per 2x2 block, two `ld32step` load the
//!   word of two adjacent source rows, `sort4x16lo` / `sort4x16hi` (aux
//!   slot, bundled with the loads and stores) pack the low halves (column
//!   c) and the high halves (column c+1), and two stores write one word of
//!   each destination row: four issues per four elements, software
//!   pipelined (the loads of block k+1 share bundles with the shuffles of
//!   block k; the last block is an epilogue, so nothing past the matrix is
//!   read).
//! - f16, odd `cols` (source rows not word-aligned): two vertically
//!   adjacent halves are loaded zero-extended into the MRF (`ldz16step`),
//!   packed (`shl`, `or`) and stored with `st32step`: five issues per two
//!   elements.
//!
//! The ISA table has no 16-bit store, so f16 destination rows must be whole
//! words: `rows` must be even.
//!
//! Every load and store is its own instruction, so no instruction makes two
//! accesses and no bank conflict can arise whatever the placement.

use super::emitter::{inst, load_state_word, op, Emitter};
use super::launch::{self, split, RowLaunchCounts, RowLoopCounts, WORKERS};
use super::program::Codelet;
use super::CodeletError;

/// Element width of a transpose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransposeElem {
    /// 16-bit elements (f16 bits; any 16-bit payload is moved exactly).
    F16,
    /// 32-bit elements (f32 bits).
    F32,
}

impl TransposeElem {
    /// Bytes per element.
    pub fn size(self) -> u32 {
        match self {
            TransposeElem::F16 => 2,
            TransposeElem::F32 => 4,
        }
    }

    fn name(self) -> &'static str {
        match self {
            TransposeElem::F16 => "f16",
            TransposeElem::F32 => "f32",
        }
    }
}

/// Largest column count: the load step is a signed 12-bit immediate.
pub const MAX_COLS: u32 = 2047;

/// One transpose launch.
#[derive(Clone, Debug)]
pub struct Transpose {
    /// Element width.
    pub elem: TransposeElem,
    /// Source rows (destination columns).
    pub rows: u32,
    /// Source columns (destination rows), at most [`MAX_COLS`].
    pub cols: u32,
    /// Source, aligned to the element size.
    pub src: u32,
    /// Destination, 4-byte aligned.
    pub dst: u32,
}

/// Vertex state words per worker: src, dst, work units, rpt count,
/// destination row bytes.
const STATE_WORDS: usize = 5;

/// How the worker moves elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Path {
    /// `ld32step` / `st32step`, one destination row per unit.
    F32,
    /// `ld64step` / 2 x `st32`, two destination rows per unit.
    F32Pair,
    /// MRF packing, one destination row per unit.
    F16Mrf,
    /// `sort4x16lo/hi`, two destination rows per unit.
    F16Sort,
}

impl Transpose {
    fn tag(&self) -> String {
        format!("transpose_{}", self.elem.name())
    }

    fn path(&self) -> Path {
        match self.elem {
            TransposeElem::F32 if self.cols.is_multiple_of(2) && self.src.is_multiple_of(8) => {
                Path::F32Pair
            }
            TransposeElem::F32 => Path::F32,
            TransposeElem::F16 if self.cols.is_multiple_of(2) => Path::F16Sort,
            TransposeElem::F16 => Path::F16Mrf,
        }
    }

    /// Destination rows per work unit: 2 on the paired paths (even `cols`;
    /// f32 also needs an 8-byte aligned source), else 1.
    pub fn rows_per_unit(&self) -> u32 {
        if matches!(self.path(), Path::F16Sort | Path::F32Pair) {
            2
        } else {
            1
        }
    }

    /// Work units (see [`Transpose::rows_per_unit`]) per worker.
    pub fn worker_rows(&self) -> [u32; WORKERS] {
        split(self.cols / self.rows_per_unit())
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), CodeletError> {
        let err = |m: String| Err(CodeletError::new(self.tag(), m));
        if self.rows == 0 || self.cols == 0 {
            return err(format!(
                "needs a non-empty matrix, got {} x {}",
                self.rows, self.cols
            ));
        }
        if self.cols > MAX_COLS {
            return err(format!(
                "{} columns exceed {MAX_COLS}, the largest signed 12-bit load step",
                self.cols
            ));
        }
        if self.elem == TransposeElem::F16 && !self.rows.is_multiple_of(2) {
            return err(format!(
                "f16 needs an even row count (destination rows are stored a word at a time), got {}",
                self.rows
            ));
        }
        if self.rpt_count() > u32::from(u16::MAX) {
            return err(format!("{} rows exceed the 16-bit rpt count", self.rows));
        }
        if !self.src.is_multiple_of(self.elem.size()) {
            return err(format!(
                "src 0x{:x} is not aligned to {} bytes",
                self.src,
                self.elem.size()
            ));
        }
        if !self.dst.is_multiple_of(4) {
            return err(format!("dst 0x{:x} is not a multiple of 4", self.dst));
        }
        let src_end = u64::from(self.src)
            + u64::from(self.rows) * u64::from(self.cols) * u64::from(self.elem.size());
        let dst_end = u64::from(self.dst)
            + u64::from(self.rows) * u64::from(self.cols) * u64::from(self.elem.size());
        if src_end > u64::from(u32::MAX) || dst_end > u64::from(u32::MAX) {
            return err("the matrix does not fit the 32-bit address space".into());
        }
        Ok(())
    }

    /// `rpt` iterations per work unit.
    fn rpt_count(&self) -> u32 {
        match self.path() {
            Path::F32 | Path::F32Pair => self.rows,
            Path::F16Mrf => self.rows / 2,
            // The last block pair is the epilogue.
            Path::F16Sort => (self.rows / 2).saturating_sub(1),
        }
    }

    /// The worker: its issues when idle, its row loop's counts and the
    /// issues of one pass of its `rpt` body.
    fn emit_worker(&self, e: &mut Emitter) -> (u64, RowLoopCounts, u64) {
        let tag = self.tag();
        let cols = i64::from(self.cols);
        e.solo(load_state_word(op::m(0), 0)); // src column
        e.solo(load_state_word(op::m(1), 1)); // dst row
        e.solo(load_state_word(op::m(2), 2)); // dst rows
        e.solo(load_state_word(op::m(3), 3)); // rpt count
        e.solo(load_state_word(op::m(4), 4)); // destination row bytes
        let empty = launch::emit_start_row_count(e, &tag);
        let setup = e.issues();
        e.label(&format!(".L{tag}_row"));
        e.solo(inst("setzi", [op::m(5), op::imm(0)])); // offset down the source column
        e.solo(inst("setzi", [op::m(6), op::imm(0)])); // offset along the destination row
        let (step, half_step) = (op::imm(cols), op::imm(cols / 2));
        let body = match self.path() {
            Path::F32 => e.rpt(
                op::m(3),
                &format!("{tag}_col"),
                vec![
                    (
                        inst("ld32step", [op::a(0), op::m(0), op::m_inc(5), step.clone()]),
                        inst("fnop", []),
                    ),
                    (
                        inst("st32step", [op::a(0), op::m(1), op::m_inc(6), op::imm(1)]),
                        inst("fnop", []),
                    ),
                ],
            ),
            Path::F16Mrf => e.rpt(
                op::m(3),
                &format!("{tag}_col"),
                vec![
                    (
                        inst(
                            "ldz16step",
                            [op::m(7), op::m(0), op::m_inc(5), step.clone()],
                        ),
                        inst("fnop", []),
                    ),
                    (
                        inst(
                            "ldz16step",
                            [op::m(8), op::m(0), op::m_inc(5), step.clone()],
                        ),
                        inst("fnop", []),
                    ),
                    (
                        inst("shl", [op::m(8), op::m(8), op::imm(16)]),
                        inst("fnop", []),
                    ),
                    (inst("or", [op::m(7), op::m(7), op::m(8)]), inst("fnop", [])),
                    (
                        inst("st32step", [op::m(7), op::m(1), op::m_inc(6), op::imm(1)]),
                        inst("fnop", []),
                    ),
                ],
            ),
            Path::F32Pair => {
                e.solo(inst("add", [op::m(9), op::m(1), op::m(4)])); // the second destination row
                let body = e.rpt(
                    op::m(3),
                    &format!("{tag}_col"),
                    vec![
                        (
                            inst(
                                "ld64step",
                                [op::a_pair(0), op::m(0), op::m_inc(5), half_step.clone()],
                            ),
                            inst("fnop", []),
                        ),
                        (
                            inst("st32", [op::a(0), op::m(1), op::m(6), op::imm(0)]),
                            inst("fnop", []),
                        ),
                        (
                            inst("st32step", [op::a(1), op::m(9), op::m_inc(6), op::imm(1)]),
                            inst("fnop", []),
                        ),
                    ],
                );
                body
            }
            Path::F16Sort => {
                e.solo(inst("add", [op::m(9), op::m(1), op::m(4)])); // the second destination row
                                                                     // Block 0 (rows 0, 1 of the column pair) before the loop.
                e.solo(inst(
                    "ld32step",
                    [op::a(0), op::m(0), op::m_inc(5), half_step.clone()],
                ));
                e.solo(inst(
                    "ld32step",
                    [op::a(1), op::m(0), op::m_inc(5), half_step.clone()],
                ));
                // $a0, $a1 hold block k; load block k+1 into $a4, $a1
                // while shuffling block k (a bundle reads before it writes).
                let body = e.rpt(
                    op::m(3),
                    &format!("{tag}_col"),
                    vec![
                        (
                            inst(
                                "ld32step",
                                [op::a(4), op::m(0), op::m_inc(5), half_step.clone()],
                            ),
                            inst("sort4x16lo", [op::a(2), op::a(0), op::a(1)]),
                        ),
                        (
                            inst(
                                "ld32step",
                                [op::a(1), op::m(0), op::m_inc(5), half_step.clone()],
                            ),
                            inst("sort4x16hi", [op::a(3), op::a(0), op::a(1)]),
                        ),
                        (
                            inst("st32", [op::a(2), op::m(1), op::m(6), op::imm(0)]),
                            inst("mov", [op::a(0), op::a(4)]),
                        ),
                        (
                            inst("st32step", [op::a(3), op::m(9), op::m_inc(6), op::imm(1)]),
                            inst("fnop", []),
                        ),
                    ],
                );
                e.bundle(
                    inst("nop", []),
                    inst("sort4x16lo", [op::a(2), op::a(0), op::a(1)]),
                );
                e.bundle(
                    inst("st32", [op::a(2), op::m(1), op::m(6), op::imm(0)]),
                    inst("sort4x16hi", [op::a(3), op::a(0), op::a(1)]),
                );
                e.solo(inst(
                    "st32step",
                    [op::a(3), op::m(9), op::m_inc(6), op::imm(1)],
                ));
                body
            }
        };
        match self.path() {
            Path::F16Sort | Path::F32Pair => {
                // Next source column pair.
                e.solo(inst(
                    "add",
                    [op::m(0), op::m(0), op::imm(i64::from(2 * self.elem.size()))],
                ));
                e.solo(inst("add", [op::m(1), op::m(9), op::m(6)])); // next destination row pair
            }
            _ => {
                // Next source column.
                e.solo(inst(
                    "add",
                    [op::m(0), op::m(0), op::imm(i64::from(self.elem.size()))],
                ));
                e.solo(inst("add", [op::m(1), op::m(1), op::m(6)])); // next destination row
            }
        }
        let rows = launch::emit_end_row_loop(e, &tag, setup);
        (empty, rows, body)
    }

    /// Issues of a worker with `n` work units, from the emitted counts: per
    /// unit the bookkeeping plus the `rpt` body repeated.
    pub fn worker_issues(&self, counts: &(RowLaunchCounts, u64), n: u32) -> u64 {
        let (launch, body) = counts;
        launch.worker_issues(n, body * u64::from(self.rpt_count()))
    }

    /// Reference: the `[cols, rows]` destination bytes from the `[rows,
    /// cols]` source bytes.
    pub fn reference(&self, src: &[u8]) -> Vec<u8> {
        let (rows, cols, size) = (
            self.rows as usize,
            self.cols as usize,
            self.elem.size() as usize,
        );
        let mut out = vec![0u8; rows * cols * size];
        for r in 0..rows {
            for c in 0..cols {
                let s = (r * cols + c) * size;
                let d = (c * rows + r) * size;
                out[d..d + size].copy_from_slice(&src[s..s + size]);
            }
        }
        out
    }
}

impl Codelet for Transpose {
    type Counts = (RowLaunchCounts, u64);

    /// Emits the launch (supervisor entry `main`, six workers) and returns
    /// the issue counts its estimate is made of, with the issues of one
    /// pass of the `rpt` body.
    fn emit(&self, e: &mut Emitter) -> Result<(RowLaunchCounts, u64), CodeletError> {
        self.validate()?;
        let tag = self.tag();
        let supervisor = launch::emit_supervisor_and_worker_entry(e, &tag, STATE_WORDS);
        let (empty, rows, body) = self.emit_worker(e);
        let size = self.elem.size();
        let per = self.rows_per_unit();
        let states = launch::worker_states(&self.worker_rows(), |first, count| {
            vec![
                self.src + first * per * size,
                self.dst + first * per * self.rows * size,
                count,
                self.rpt_count(),
                self.rows * size,
            ]
        });
        let counts = launch::end_row_launch(e, &tag, &states, supervisor, empty, rows);
        Ok((counts, body))
    }

    fn cycles(&self, counts: &(RowLaunchCounts, u64)) -> u64 {
        counts
            .0
            .cycles(&self.worker_rows(), counts.1 * u64::from(self.rpt_count()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ipuc_ipu_arch::MachineModel;

    fn t(elem: TransposeElem, rows: u32, cols: u32) -> Transpose {
        Transpose {
            elem,
            rows,
            cols,
            src: 0x80000,
            dst: 0xa0000,
        }
    }

    #[test]
    fn reference_transposes() {
        let c = t(TransposeElem::F16, 2, 3);
        let src: Vec<u8> = (0..12).collect();
        // [[0,1,2],[3,4,5]] (element indices) -> [[0,3],[1,4],[2,5]].
        let want: Vec<u8> = [0, 3, 1, 4, 2, 5]
            .iter()
            .flat_map(|&i: &u8| [2 * i, 2 * i + 1])
            .collect();
        assert_eq!(c.reference(&src), want);
    }

    #[test]
    fn bad_parameters_are_errors() {
        for (c, msg) in [
            (t(TransposeElem::F16, 3, 4), "even row count"),
            (t(TransposeElem::F32, 0, 4), "non-empty"),
            (t(TransposeElem::F32, 4, 4096), "signed 12-bit"),
            (
                Transpose {
                    dst: 0xa0002,
                    ..t(TransposeElem::F32, 4, 4)
                },
                "multiple of 4",
            ),
        ] {
            let e = c
                .program(0, &MachineModel::c600())
                .err()
                .unwrap()
                .to_string();
            assert!(e.contains(msg), "{e}");
        }
    }
}
