//! Row broadcast: `groups` groups of `rows` rows of 32 bytes, every row of
//! group `g` a copy of the 32 bytes at `src + 32 g`, group `g` at `dst + g
//! group_stride` (a product's bias rows into the initial partials of its
//! output groups, [`super::gemm::TileGemm::bias_in_output`]).
//!
//! Each worker takes a contiguous share of the rows of every group. Per
//! group it loads the group's row into four register pairs once and
//! stores them over its rows in one `rpt` of four `st64step`s a row: one
//! store per bundle, the machine model's one-store-per-cycle limit, with
//! nothing loaded in the loop (a strided copy with a source stride of 0
//! does the same work at a row loop's cost per row: about three times the
//! issues for 32-byte rows). The loads and the stores are in different
//! instructions, so no bank rule ties the source to the destination.
//!
//! ```text
//!     ld32 $m0..  (state: src, dst of the first row, rows, groups - 1, group stride)
//!     brz $m2, done
//! group:
//!     ld64 $a0:1, $m0, $mzero, 0 ... ld64 $a6:7, $m0, $mzero, 3
//!     mov $m4, $m1
//!     rpt $m2 { st64step $a0:1, $mzero, $m4+=, 1 ... $a6:7 }
//!     add $m0, $m0, 32 ; add $m1, $m1, $m6 ; brnzdec $m3, group
//! done:
//!     exitz $mzero
//! ```

use super::emitter::{inst, op, Emitter};
use super::launch::{self, split, SupervisorCounts, WORKERS};
use super::program::Codelet;
use super::{check_alignment, CodeletError};

/// The launch's tag: its labels and sections are named after it.
pub const TAG: &str = "broadcast_rows";

/// Bytes of a row.
pub const ROW_BYTES: u32 = 32;

/// One row-broadcast launch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowBroadcast {
    /// Groups (at least one).
    pub groups: u32,
    /// Rows of each group (at least one).
    pub rows: u32,
    /// The groups' rows, 32 bytes each, end to end; 8-byte aligned.
    pub src: u32,
    /// Group 0's first row, 8-byte aligned.
    pub dst: u32,
    /// Bytes between groups (a multiple of 8, at least a group's rows).
    pub group_stride: u32,
}

/// The launch's issue counts, as emitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BroadcastCounts {
    /// The supervisor's.
    pub supervisor: SupervisorCounts,
    /// A worker with no rows (it branches to its exit).
    pub empty: u64,
    /// A worker's issues before its first group and after its last.
    pub setup: u64,
    /// Issues per group outside the `rpt` body.
    pub per_group: u64,
    /// Issues of one pass of the `rpt` body (one row).
    pub per_row: u64,
}

impl RowBroadcast {
    /// Rows per worker (of each group).
    pub fn worker_rows(&self) -> [u32; WORKERS] {
        split(self.rows)
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), CodeletError> {
        let err = |m: String| Err(CodeletError::new(TAG, m));
        if self.groups == 0 || self.rows == 0 {
            return err(format!(
                "needs at least one group and one row, got {} groups of {} rows",
                self.groups, self.rows
            ));
        }
        if self.groups > 1 && self.group_stride < self.rows * ROW_BYTES {
            return err(format!(
                "groups {} bytes apart overlap their {} rows of {ROW_BYTES} bytes",
                self.group_stride, self.rows
            ));
        }
        check_alignment(
            TAG,
            &[
                ("source", self.src, 8),
                ("destination", self.dst, 8),
                ("group stride", self.group_stride, 8),
            ],
        )
    }

    /// Issues of a worker with `n` rows of each group, from the emitted
    /// counts.
    pub fn worker_issues(&self, counts: &BroadcastCounts, n: u32) -> u64 {
        if n == 0 {
            counts.empty
        } else {
            counts.setup
                + u64::from(self.groups) * (counts.per_group + u64::from(n) * counts.per_row)
        }
    }

    /// Reference: the destination image after the broadcast, given the
    /// source rows (`src_mem` starts at `src`) and the destination memory
    /// before (`dst_mem` starts at `dst`).
    pub fn reference(&self, src_mem: &[u8], dst_mem: &[u8]) -> Vec<u8> {
        let mut out = dst_mem.to_vec();
        let n = ROW_BYTES as usize;
        for g in 0..self.groups as usize {
            let row = &src_mem[g * n..(g + 1) * n];
            for r in 0..self.rows as usize {
                let d = g * self.group_stride as usize + r * n;
                out[d..d + n].copy_from_slice(row);
            }
        }
        out
    }
}

impl Codelet for RowBroadcast {
    type Counts = BroadcastCounts;

    /// Emits the launch (supervisor entry `main`, six workers) and returns
    /// the issue counts its estimate is made of.
    fn emit(&self, e: &mut Emitter) -> Result<BroadcastCounts, CodeletError> {
        self.validate()?;
        let supervisor = launch::emit_supervisor_and_worker_entry(e, TAG, 5);
        let done = format!(".L{TAG}_done");
        // Vertex state: src, dst, rows, groups - 1, group stride.
        e.load_state(&[(0, 0), (1, 1), (2, 2), (3, 3), (6, 4)]);
        e.solo(inst("brz", [op::m(2), op::sym(done.clone())]));
        let at_branch = e.issues();
        let group = format!(".L{TAG}_group");
        e.aligned_label(&group);
        let group_start = e.issues();
        for p in 0..4u8 {
            e.solo(inst(
                "ld64",
                [
                    op::a_pair(2 * p),
                    op::m(0),
                    op::mzero(),
                    op::imm(i64::from(p)),
                ],
            ));
        }
        e.solo(inst("add", [op::m(4), op::m(1), op::imm(0)]));
        let store = |p: u8| {
            (
                inst(
                    "st64step",
                    [op::a_pair(2 * p), op::mzero(), op::m_inc(4), op::imm(1)],
                ),
                inst("fnop", []),
            )
        };
        // (`issues` leaves out the `rpt` body: `per_row`.)
        let per_row = e.rpt(op::m(2), TAG, (0..4).map(store).collect());
        e.solo(inst(
            "add",
            [op::m(0), op::m(0), op::imm(i64::from(ROW_BYTES))],
        ));
        e.solo(inst("add", [op::m(1), op::m(1), op::m(6)]));
        e.solo(inst("brnzdec", [op::m(3), op::sym(group)]));
        let per_group = e.issues() - group_start;
        e.label(&done);
        e.solo(inst("exitz", [op::mzero()]));
        let setup = e.issues() - per_group;
        let shares = self.worker_rows();
        let offs = launch::offsets(&shares);
        let states: [Vec<u32>; WORKERS] = std::array::from_fn(|w| {
            vec![
                self.src,
                self.dst + offs[w] * ROW_BYTES,
                shares[w],
                self.groups - 1,
                self.group_stride,
            ]
        });
        launch::emit_vertex_state(e, TAG, &states);
        Ok(BroadcastCounts {
            supervisor,
            empty: at_branch + 1,
            setup,
            per_group,
            per_row,
        })
    }

    fn cycles(&self, counts: &BroadcastCounts) -> u64 {
        let issues = self.worker_rows().map(|n| self.worker_issues(counts, n));
        counts.supervisor.cycles_per_worker(&issues)
    }
}
