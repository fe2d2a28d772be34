//! Joining the rows of a softmax into one: the softmax of one long row
//! computed on all six workers. [`super::softmax_panels`] gives each
//! worker whole rows, so a single row of scores (the pooling head's one
//! query over every token) would run on one worker; laid out instead as
//! `rows` rows of `16 groups` scores (any order of the scores: the caller
//! places them), its softmax with statistics and without normalising
//! ([`super::softmax_panels::SoftmaxPanels::normalise`] off) leaves row
//! `r`'s exponentials `e = exp(scale (x - m_r))` and `(-m_r, s_r)`. This
//! launch turns them, in place, into the probabilities over every row:
//!
//! ```text
//! M = max_r m_r,   L = sum_r s_r exp(scale (m_r - M)),
//! p = e exp(scale (m_r - M)) / L      (every value of row r)
//! ```
//!
//! the same weights [`super::attention_combine`] gives its unnormalised
//! partials.
//!
//! Layout: row `r` of group `g` (16 f16 values) at `data + g stride + 32
//! r`, as the softmax over panels writes them; with `stride = 32 rows`
//! the data is one run in row-major order of `(g, r)`. Row `r`'s
//! statistics are two f32 at `stats + 8 r`.
//!
//! Per worker: the least `-m_r` of every row (a `brnzdec` loop of
//! `f32v2min`), `L` over every row (`f32exp` per row) and `1/L`
//! (`f32oox`): each worker reads every row's statistics, which spares a
//! second launch; then per own row its weight as four f16 lanes and, per
//! group, `p = w e` in f16 (`ld64`/`f16v4mul`/`st64`, two words in
//! flight). A worker with no rows exits at once.

use super::emitter::{inst, load_state_word, op, Emitter};
use super::launch::{self, offsets, split, RowLaunchCounts, WORKERS};
use super::program::Codelet;
use super::{check_alignment, CodeletError};

const TAG: &str = "softmax_join";

/// Bytes of one group row (16 f16).
const ROW: u32 = 32;

/// One launch.
#[derive(Clone, Debug, PartialEq)]
pub struct SoftmaxJoin {
    /// Rows joined, at least 2 (split over the workers).
    pub rows: u32,
    /// Groups of 16 values per row.
    pub groups: u32,
    /// The scale the statistics were taken with (positive, finite).
    pub scale: f32,
    /// Group 0 row 0 of the exponentials, rewritten in place; 8-byte
    /// aligned.
    pub data: u32,
    /// Bytes between groups: a multiple of 8, at least `32 rows`, at
    /// most 32,767.
    pub stride: u32,
    /// Row 0's `(-m, s)`, two f32; 8-byte aligned, apart from the data.
    pub stats: u32,
}

/// Issue counts of a launch, as emitted: the row loop's straight-line
/// issues (one pass of every loop body) and each loop body's issues.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SoftmaxJoinCounts {
    /// The launch.
    pub launch: RowLaunchCounts,
    /// One turn of: the minimum, the sum, a group.
    pub bodies: [u64; 3],
}

impl SoftmaxJoinCounts {
    /// Issues a worker with rows runs once beyond the straight-line count:
    /// the minimum's and the sum's further turns over every row.
    pub fn fixed(&self, rows: u32) -> u64 {
        let [min, sum, _] = self.bodies;
        u64::from(rows - 2) * min + u64::from(rows - 1) * sum
    }

    /// Issues per own row beyond the row loop's straight-line count.
    pub fn repeated(&self, groups: u32) -> u64 {
        u64::from(groups - 1) * self.bodies[2]
    }

    /// Issues of a worker with `n` of `rows` rows.
    pub fn worker_issues(&self, n: u32, rows: u32, groups: u32) -> u64 {
        match n {
            0 => self.launch.empty,
            n => self.launch.worker_issues(n, self.repeated(groups)) + self.fixed(rows),
        }
    }
}

impl SoftmaxJoin {
    /// Rows per worker.
    pub fn worker_rows(&self) -> [u32; WORKERS] {
        split(self.rows)
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), CodeletError> {
        let err = |m: String| Err(CodeletError::new(TAG, m));
        if self.rows < 2 || self.groups == 0 {
            return err(format!(
                "needs two rows and a group, got {} rows and {} groups (one row's softmax normalises itself)",
                self.rows, self.groups
            ));
        }
        if !(self.scale.is_finite() && self.scale > 0.0) {
            return err(format!(
                "the scale must be positive and finite, got {}",
                self.scale
            ));
        }
        check_alignment(TAG, &[("data", self.data, 8), ("stats", self.stats, 8)])?;
        let least = ROW * self.rows;
        if self.stride < least || !self.stride.is_multiple_of(8) || self.stride > i16::MAX as u32 {
            return err(format!(
                "the group stride {} must be a multiple of 8, at least {least} and at most {}",
                self.stride,
                i16::MAX
            ));
        }
        let data = (
            u64::from(self.data),
            u64::from(self.data)
                + u64::from(self.stride) * u64::from(self.groups - 1)
                + u64::from(least),
        );
        let stats = (
            u64::from(self.stats),
            u64::from(self.stats) + 8 * u64::from(self.rows),
        );
        if stats.0 < data.1 && data.0 < stats.1 {
            return err("the statistics overlap the data".into());
        }
        Ok(())
    }

    fn add(reg: u8, bytes: u32) -> super::emitter::Inst {
        inst("add", [op::m(reg), op::m(reg), op::imm(i64::from(bytes))])
    }

    /// The statistics at `$m5` in `$a0:1`, and `exp(scale (m_r - M))` in
    /// `$a5` (`-M` in `$a2`, the scale in `$a6:7`).
    fn emit_exp(e: &mut Emitter, stats: u8) {
        let p = op::a_pair;
        for i in [
            inst("ld64", [p(0), op::m(stats), op::mzero(), op::imm(0)]),
            inst("f32v2sub", [p(4), p(2), p(0)]),
            inst("f32v2mul", [p(4), p(4), p(6)]),
            inst("f32exp", [op::a(5), op::a(4)]),
        ] {
            e.solo(i);
        }
    }

    /// One group's row (4 words at `$m10`) times the weight in `$a12:13`,
    /// in place, two words in flight; `$m10` steps to the next group.
    /// Returns the body's issues.
    fn emit_group(&self, e: &mut Emitter, label: &str) -> u64 {
        let p = op::a_pair;
        let ld = |pair: u8, w: i64| inst("ld64", [p(pair), op::m(10), op::mzero(), op::imm(w)]);
        let st = |pair: u8, w: i64| inst("st64", [p(pair), op::m(10), op::mzero(), op::imm(w)]);
        let mul = |pair: u8| inst("f16v4mul", [p(pair), p(pair), p(12)]);
        e.aligned_label(label);
        let before = e.issues();
        for h in 0..i64::from(ROW / 16) {
            let (w0, w1) = (2 * h, 2 * h + 1);
            e.solo(ld(0, w0));
            e.bundle(ld(4, w1), mul(0));
            e.bundle(st(0, w0), mul(4));
            e.solo(st(4, w1));
        }
        e.solo(Self::add(10, self.stride));
        e.solo(inst("brnzdec", [op::m(8), op::sym(label)]));
        e.issues() - before
    }

    fn emit_worker(&self, e: &mut Emitter) -> (u64, launch::RowLoopCounts, [u64; 3]) {
        let p = op::a_pair;
        e.solo(load_state_word(op::m(2), 2)); // own rows
        e.solo(inst("brz", [op::m(2), op::sym(format!(".L{TAG}_done"))]));
        let empty = e.issues() + 1;
        for s in [
            inst("sub", [op::m(2), op::m(2), op::imm(1)]),
            load_state_word(op::m(0), 0), // own first row's data
            load_state_word(op::m(1), 1), // its statistics
            load_state_word(op::a(6), 3), // the scale
            inst("mov", [op::a(7), op::a(6)]),
            load_state_word(op::m(4), 4), // row 0's statistics
            // Pass 1: the least -m_r into $a2.
            inst("ld64", [p(2), op::m(4), op::mzero(), op::imm(0)]),
            Self::add_to(5, 4, 8),
            inst("setzi", [op::m(3), op::imm(i64::from(self.rows - 2))]),
        ] {
            e.solo(s);
        }
        e.aligned_label(&format!(".L{TAG}_min"));
        let before = e.issues();
        e.solo(inst("ld64", [p(0), op::m(5), op::mzero(), op::imm(0)]));
        e.solo(inst("f32v2min", [p(2), p(2), p(0)]));
        e.solo(Self::add(5, 8));
        e.solo(inst("brnzdec", [op::m(3), op::sym(format!(".L{TAG}_min"))]));
        let min = e.issues() - before;
        // Pass 2: L into $a9 (lane 1: s_r times the exponential).
        for s in [
            inst("mov", [op::a(8), op::azero()]),
            inst("mov", [op::a(9), op::azero()]),
            inst("mov", [op::m(5), op::m(4)]),
            inst("setzi", [op::m(3), op::imm(i64::from(self.rows - 1))]),
        ] {
            e.solo(s);
        }
        e.aligned_label(&format!(".L{TAG}_sum"));
        let before = e.issues();
        Self::emit_exp(e, 5);
        e.solo(inst("f32v2mul", [p(4), p(4), p(0)]));
        e.solo(inst("f32v2add", [p(8), p(8), p(4)]));
        e.solo(Self::add(5, 8));
        e.solo(inst("brnzdec", [op::m(3), op::sym(format!(".L{TAG}_sum"))]));
        let sum = e.issues() - before;
        e.solo(inst("f32oox", [op::a(10), op::a(9)]));
        e.solo(inst("mov", [op::a(11), op::a(10)]));
        // Pass 3, per own row: its weight in four f16 lanes, then its
        // groups.
        e.aligned_label(&format!(".L{TAG}_row"));
        let setup = e.issues();
        Self::emit_exp(e, 1);
        for s in [
            inst("mov", [op::a(4), op::a(5)]),
            inst("f32v2mul", [p(4), p(4), p(10)]),
            inst("f32v2tof16", [op::a(12), p(4)]),
            inst("mov", [op::a(13), op::a(12)]),
            inst("mov", [op::m(10), op::m(0)]),
            inst("setzi", [op::m(8), op::imm(i64::from(self.groups - 1))]),
        ] {
            e.solo(s);
        }
        let group = self.emit_group(e, &format!(".L{TAG}_g"));
        e.solo(Self::add(0, ROW));
        e.solo(Self::add(1, 8));
        let rows = launch::emit_end_row_loop(e, TAG, setup);
        (empty, rows, [min, sum, group])
    }

    /// `add $m{dst}, $m{src}, bytes`.
    fn add_to(dst: u8, src: u8, bytes: u32) -> super::emitter::Inst {
        inst("add", [op::m(dst), op::m(src), op::imm(i64::from(bytes))])
    }

    /// Float64 reference: the probabilities, row-major `[rows, 16 groups]`
    /// (row `r`'s values in group order), from the exponentials `e` in the
    /// same order and each row's `(-m_r, s_r)`.
    pub fn reference(&self, e: &[f64], stats: &[(f64, f64)]) -> Vec<f64> {
        let cols = (self.groups * 16) as usize;
        let scale = f64::from(self.scale);
        let neg_big = stats.iter().map(|s| s.0).fold(f64::INFINITY, f64::min);
        let w: Vec<f64> = stats
            .iter()
            .map(|&(neg_m, _)| (scale * (neg_big - neg_m)).exp())
            .collect();
        let total: f64 = stats.iter().zip(&w).map(|(s, w)| s.1 * w).sum();
        e.iter()
            .enumerate()
            .map(|(i, &v)| v * w[i / cols] / total)
            .collect()
    }
}

impl Codelet for SoftmaxJoin {
    type Counts = SoftmaxJoinCounts;

    /// Emits the launch (supervisor entry `main`, six workers).
    fn emit(&self, e: &mut Emitter) -> Result<SoftmaxJoinCounts, CodeletError> {
        self.validate()?;
        let supervisor = launch::emit_supervisor_and_worker_entry(e, TAG, 5);
        let (empty, rows, bodies) = self.emit_worker(e);
        let shares = self.worker_rows();
        let offs = offsets(&shares);
        // Own first row's data, its statistics, own rows, the scale, row
        // 0's statistics.
        let states: [Vec<u32>; WORKERS] = std::array::from_fn(|w| {
            vec![
                self.data + offs[w] * ROW,
                self.stats + offs[w] * 8,
                shares[w],
                self.scale.to_bits(),
                self.stats,
            ]
        });
        let launch = launch::end_row_launch(e, TAG, &states, supervisor, empty, rows);
        Ok(SoftmaxJoinCounts { launch, bodies })
    }

    fn cycles(&self, counts: &SoftmaxJoinCounts) -> u64 {
        counts.launch.supervisor.cycles_per_worker(
            &self
                .worker_rows()
                .map(|n| counts.worker_issues(n, self.rows, self.groups)),
        )
    }
}
