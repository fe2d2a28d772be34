//! Row broadcast: `groups` groups of `rows` rows of 32 bytes, every row of
//! group `g` a copy of the 32 bytes at `src + 32 g`, group `g` at `dst + g
//! group_stride` (a product's bias rows into the initial partials of its
//! output groups, [`super::gemm::TileGemm::bias_in_output`]); and its
//! transpose, the row splat ([`SplatRows`]): row `r` of every group
//! sixteen copies of the f16 at `src + 2 r` (a bias that is a value per
//! row).
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
        check_groups(TAG, self.groups, self.rows, self.group_stride)?;
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

/// Checks the shape both launches write: at least one group and one row,
/// and groups `group_stride` bytes apart that do not overlap their rows.
fn check_groups(tag: &str, groups: u32, rows: u32, group_stride: u32) -> Result<(), CodeletError> {
    let err = |m: String| Err(CodeletError::new(tag, m));
    if groups == 0 || rows == 0 {
        return err(format!(
            "needs at least one group and one row, got {groups} groups of {rows} rows"
        ));
    }
    if groups > 1 && group_stride < rows * ROW_BYTES {
        return err(format!(
            "groups {group_stride} bytes apart overlap their {rows} rows of {ROW_BYTES} bytes"
        ));
    }
    Ok(())
}

/// The tag of [`SplatRows`]' launch.
pub const SPLAT_TAG: &str = "splat_rows";

/// Row splat: `groups` groups of `rows` rows of 32 bytes, row `r` of
/// every group sixteen copies of the f16 at `src + 2 r`, group `g` at
/// `dst + g group_stride` (a bias that is a value per row of Y, written
/// into the initial partials of every output group from the values
/// alone: [`super::super::lower::bias_broadcast`]).
///
/// Each worker takes a contiguous share of the rows. Per row it loads
/// the value into both halves of a register pair twice (`ldb16`), then
/// stores the pair four times into each group in one `rpt` (the fourth
/// `st64step` steps to the next group's row): one store per bundle, the
/// machine model's one-store-per-cycle limit.
///
/// ```text
///     ld32 $m0..  (state: src and dst of the first row, rows, groups)
///     brz $m2, done ; add $m2, $m2, -1
/// row:
///     ldb16 $a0, $m0, $mzero, 0 ; ldb16 $a1, $m0, $mzero, 0
///     add $m0, $m0, 2 ; mov $m4, $m1
///     rpt $m3 { st64step $a0:1, $mzero, $m4+=, 1 (x3), ..., (stride - 24) / 8 }
///     add $m1, $m1, 32 ; brnzdec $m2, row
/// done:
///     exitz $mzero
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplatRows {
    /// Groups (at least one).
    pub groups: u32,
    /// Rows of each group (at least one).
    pub rows: u32,
    /// The rows' f16 values, end to end; 2-byte aligned.
    pub src: u32,
    /// Group 0's first row, 8-byte aligned.
    pub dst: u32,
    /// Bytes between groups (a multiple of 8, at least a group's rows,
    /// at most what one `st64step` steps: 2047 words past a row).
    pub group_stride: u32,
}

/// [`SplatRows`]' issue counts, as emitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplatCounts {
    /// The supervisor's.
    pub supervisor: SupervisorCounts,
    /// A worker with no rows (it branches to its exit).
    pub empty: u64,
    /// A worker's issues outside its rows.
    pub setup: u64,
    /// Issues per row outside the `rpt` body.
    pub per_row: u64,
    /// Issues of one pass of the `rpt` body (one group's row).
    pub per_group_row: u64,
}

impl SplatRows {
    /// Rows per worker.
    pub fn worker_rows(&self) -> [u32; WORKERS] {
        split(self.rows)
    }

    /// The fourth store's step, in words: from a row's last word to the
    /// next group's row.
    fn group_step(&self) -> i64 {
        (i64::from(self.group_stride) - 24) / 8
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), CodeletError> {
        check_groups(SPLAT_TAG, self.groups, self.rows, self.group_stride)?;
        if self.group_step() > 2047 {
            return Err(CodeletError::new(
                SPLAT_TAG,
                format!(
                    "groups {} bytes apart are farther than one store steps (2047 words)",
                    self.group_stride
                ),
            ));
        }
        check_alignment(
            SPLAT_TAG,
            &[
                ("source", self.src, 2),
                ("destination", self.dst, 8),
                ("group stride", self.group_stride, 8),
            ],
        )
    }

    /// Issues of a worker with `n` rows, from the emitted counts.
    pub fn worker_issues(&self, counts: &SplatCounts, n: u32) -> u64 {
        if n == 0 {
            counts.empty
        } else {
            counts.setup
                + u64::from(n) * (counts.per_row + u64::from(self.groups) * counts.per_group_row)
        }
    }

    /// Reference: the destination image after the splat, given the
    /// values (`src_mem` starts at `src`) and the destination memory
    /// before (`dst_mem` starts at `dst`).
    pub fn reference(&self, src_mem: &[u8], dst_mem: &[u8]) -> Vec<u8> {
        let mut out = dst_mem.to_vec();
        for r in 0..self.rows as usize {
            let value = &src_mem[2 * r..2 * r + 2];
            for g in 0..self.groups as usize {
                let d = g * self.group_stride as usize + r * ROW_BYTES as usize;
                for c in 0..16 {
                    out[d + 2 * c..d + 2 * c + 2].copy_from_slice(value);
                }
            }
        }
        out
    }
}

impl Codelet for SplatRows {
    type Counts = SplatCounts;

    /// Emits the launch (supervisor entry `main`, six workers) and returns
    /// the issue counts its estimate is made of.
    fn emit(&self, e: &mut Emitter) -> Result<SplatCounts, CodeletError> {
        self.validate()?;
        let tag = SPLAT_TAG;
        let supervisor = launch::emit_supervisor_and_worker_entry(e, tag, 4);
        let done = format!(".L{tag}_done");
        // Vertex state: src, dst, rows, groups.
        e.load_state(&[(0, 0), (1, 1), (2, 2), (3, 3)]);
        e.solo(inst("brz", [op::m(2), op::sym(done.clone())]));
        let at_branch = e.issues();
        e.solo(inst("add", [op::m(2), op::m(2), op::imm(-1)]));
        let row = format!(".L{tag}_row");
        e.aligned_label(&row);
        let row_start = e.issues();
        for a in 0..2u8 {
            e.solo(inst("ldb16", [op::a(a), op::m(0), op::mzero(), op::imm(0)]));
        }
        e.solo(inst("add", [op::m(0), op::m(0), op::imm(2)]));
        e.solo(inst("add", [op::m(4), op::m(1), op::imm(0)]));
        let step = self.group_step();
        let store = |s: i64| {
            (
                inst(
                    "st64step",
                    [op::a_pair(0), op::mzero(), op::m_inc(4), op::imm(s)],
                ),
                inst("fnop", []),
            )
        };
        // (`issues` leaves out the `rpt` body: `per_group_row`.)
        let per_group_row = e.rpt(
            op::m(3),
            tag,
            vec![store(1), store(1), store(1), store(step)],
        );
        e.solo(inst(
            "add",
            [op::m(1), op::m(1), op::imm(i64::from(ROW_BYTES))],
        ));
        e.solo(inst("brnzdec", [op::m(2), op::sym(row)]));
        let per_row = e.issues() - row_start;
        e.label(&done);
        e.solo(inst("exitz", [op::mzero()]));
        let setup = e.issues() - per_row;
        let shares = self.worker_rows();
        let offs = launch::offsets(&shares);
        let states: [Vec<u32>; WORKERS] = std::array::from_fn(|w| {
            vec![
                self.src + 2 * offs[w],
                self.dst + offs[w] * ROW_BYTES,
                shares[w],
                self.groups,
            ]
        });
        launch::emit_vertex_state(e, tag, &states);
        Ok(SplatCounts {
            supervisor,
            empty: at_branch + 1,
            setup,
            per_row,
            per_group_row,
        })
    }

    fn cycles(&self, counts: &SplatCounts) -> u64 {
        let issues = self.worker_rows().map(|n| self.worker_issues(counts, n));
        counts.supervisor.cycles_per_worker(&issues)
    }
}
