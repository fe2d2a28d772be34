//! Combining the partial results of attention over blocks of keys: when a
//! head's keys are split over tiles, each tile `i` computes for its query
//! rows the softmax over its own keys ([`super::softmax_panels`] with
//! statistics) and `O_i = P_i V_i`, normalised over its keys alone, and
//! records each row's `(-m_i, s_i)`: the row's maximum score and its sum
//! of `exp(scale (S - m_i))`. The exact output over all the keys is
//!
//! ```text
//! M = max_i m_i,   u_i = s_i exp(scale (m_i - M)),   O = sum_i (u_i / sum_j u_j) O_i
//! ```
//!
//! (each `O_i` times its share of the whole row's sum of exponentials).
//! Partials left unnormalised ([`AttentionCombine::normalised`] off: a
//! key-split tile's `P_i V_i` with `P_i` the exponentials, `s_i O_i`)
//! take the weight `exp(scale (m_i - M)) / L`.
//!
//! Input: `parts` partials, partial `i` at `input + i * part_stride`,
//! holding its `groups` groups of 16 f16 channels (group `g`, row `r` at
//! offset `g group_stride + 32 r`) and its statistics (row `r`'s two f32
//! at offset `stats_offset + 8 r`). Packed (`group_stride = 32 rows`,
//! `stats_offset = 32 groups rows`, [`AttentionCombine::packed`]) that is
//! what one scheduled exchange leaves in a receive buffer, one slot per
//! sender (the key-split form); a flash-style tile's chunks leave each
//! partial where its product wrote it (the output groups'
//! [`super::gemm::TileGemm::group_stride`], the statistics after them).
//! Output: group `g`, row `r` at
//! `output + g output_stride + 32 r`, f16, the panel order the next
//! product reads.
//!
//! With `stats_output` the launch also writes each row's combined
//! statistics `(-M, L)` there, after its output row: what a flash-style
//! tile's *running* combination needs, which folds each chunk of keys
//! into an accumulator (partial 0, combined in place: `output` its
//! groups, `stats_output` its statistics) so that the tile keeps two
//! partials, not one per chunk. The combination is associative: the
//! accumulator's `(-M, L)` are those of every key folded into it.
//!
//! Per row (workers take contiguous shares of rows): the least `-m_i`
//! (pass 1), `L = sum_i u_i` in f32 (pass 2, `f32exp`), then per partial
//! its weight `u_i / L` as four f16 lanes and, per group, `O += w_i O_i`
//! in f16 (`ld64`/`f16v4mul`/`f16v4add`/`st64`, the loads bundled with
//! the arithmetic), the first partial writing `O`. Every loop is a
//! `brnzdec` loop with immediate offsets.

use super::emitter::{inst, load_state_word, op, Emitter};
use super::launch::{self, offsets, split, RowLaunchCounts, WORKERS};
use super::program::Codelet;
use super::{check_alignment, CodeletError};

const TAG: &str = "attention_combine";

/// Bytes of one group row (16 f16).
const ROW: u32 = 32;

/// One launch.
#[derive(Clone, Debug, PartialEq)]
pub struct AttentionCombine {
    /// Rows (split over the workers).
    pub rows: u32,
    /// Partial results, at least 2.
    pub parts: u32,
    /// Groups of 16 channels.
    pub groups: u32,
    /// The softmax scale the statistics were taken with (positive).
    pub scale: f32,
    /// Partial 0, 8-byte aligned.
    pub input: u32,
    /// Bytes between partials: a multiple of 8, at least
    /// [`AttentionCombine::part_bytes`], below 32,768.
    pub part_stride: u32,
    /// Bytes between a partial's groups: a multiple of 8, at least `32
    /// rows`, below 32,768.
    pub group_stride: u32,
    /// Bytes from a partial's group 0 to its statistics: a multiple of 8,
    /// past its last group's rows, below 32,768.
    pub stats_offset: u32,
    /// Group 0 row 0 of the output, 8-byte aligned.
    pub output: u32,
    /// Bytes between output groups: a multiple of 8, at least `32 rows`,
    /// below 32,768.
    pub output_stride: u32,
    /// Where each row's combined `(-M, L)` go (row `r` at `8 r`), 8-byte
    /// aligned, if anywhere: over partial 0's own statistics (in place)
    /// or apart from every partial.
    pub stats_output: Option<u32>,
    /// Whether each partial `O_i` is normalised over its keys (true), or
    /// is `P_i V_i` with `P_i` the exponentials alone
    /// ([`super::softmax_panels::SoftmaxPanels::normalise`] off): then
    /// `s_i O_i`, and its weight is `exp(scale (m_i - M)) / L`, which
    /// spares the softmax its normalising pass.
    pub normalised: bool,
}

/// Issue counts of a launch, as emitted: the row loop's straight-line
/// issues (one pass of every loop body) and each loop body's issues.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct AttentionCombineCounts {
    /// The launch.
    pub launch: RowLaunchCounts,
    /// One turn of: the minimum, the sum, a group of the first partial, a
    /// group of another partial, another partial's weight and set-up.
    pub bodies: [u64; 5],
}

impl AttentionCombineCounts {
    /// Issues per row beyond the row loop's straight-line count.
    pub fn repeated(&self, parts: u32, groups: u32) -> u64 {
        let [min, sum, g0, ga, part] = self.bodies;
        let (p, g) = (u64::from(parts), u64::from(groups));
        (p - 2) * min + (p - 1) * sum + (g - 1) * g0 + (p - 2) * part + ((p - 1) * g - 1) * ga
    }
}

impl AttentionCombine {
    /// Partials packed as an exchange leaves them: each partial's groups
    /// end to end, then its statistics (`part_stride` still to set).
    #[allow(clippy::too_many_arguments)]
    pub fn packed(
        rows: u32,
        parts: u32,
        groups: u32,
        scale: f32,
        (input, part_stride): (u32, u32),
        (output, output_stride): (u32, u32),
    ) -> Self {
        AttentionCombine {
            rows,
            parts,
            groups,
            scale,
            input,
            part_stride,
            group_stride: rows * ROW,
            stats_offset: groups * rows * ROW,
            output,
            output_stride,
            stats_output: None,
            normalised: true,
        }
    }

    /// Whether the output is partial 0's groups, combined in place.
    pub fn in_place(&self) -> bool {
        self.output == self.input && self.output_stride == self.group_stride
    }

    /// Bytes of one partial: from group 0 to its statistics' end.
    pub fn part_bytes(&self) -> u32 {
        self.stats_offset + 8 * self.rows
    }

    /// Rows per worker.
    pub fn worker_rows(&self) -> [u32; WORKERS] {
        split(self.rows)
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), CodeletError> {
        let err = |m: String| Err(CodeletError::new(TAG, m));
        if self.rows == 0 || self.groups == 0 || self.parts < 2 {
            return err(format!(
                "needs a row, a group and two partials, got {} rows, {} groups, {} partials",
                self.rows, self.groups, self.parts
            ));
        }
        if !(self.scale.is_finite() && self.scale > 0.0) {
            return err(format!(
                "the scale must be positive and finite, got {}",
                self.scale
            ));
        }
        check_alignment(TAG, &[("input", self.input, 8), ("output", self.output, 8)])?;
        let most = i16::MAX as u32;
        let groups_end = (self.groups - 1) * self.group_stride + self.rows * ROW;
        for (what, stride, least) in [
            ("partial stride", self.part_stride, self.part_bytes()),
            ("partial's group stride", self.group_stride, self.rows * ROW),
            ("statistics' offset", self.stats_offset, groups_end),
            ("output group stride", self.output_stride, self.rows * ROW),
        ] {
            if stride < least || stride % 8 != 0 || stride > most {
                return err(format!(
                    "the {what} {stride} must be a multiple of 8, at least {least} and at most {most}"
                ));
            }
        }
        let input = (
            u64::from(self.input),
            u64::from(self.input)
                + u64::from(self.part_stride) * u64::from(self.parts - 1)
                + u64::from(self.part_bytes()),
        );
        let output = (
            u64::from(self.output),
            u64::from(self.output)
                + u64::from(self.output_stride) * u64::from(self.groups - 1)
                + u64::from(ROW * self.rows),
        );
        // In place, the output is partial 0's groups: only the other
        // partials must lie apart from it.
        let others = if self.in_place() {
            (input.0 + u64::from(self.part_stride), input.1)
        } else {
            input
        };
        if others.0 < output.1 && output.0 < others.1 {
            return err("the partials and the output overlap".into());
        }
        if let Some(at) = self.stats_output {
            check_alignment(TAG, &[("stats output", at, 8)])?;
            let own = self.input + self.stats_offset;
            let span = (u64::from(at), u64::from(at) + 8 * u64::from(self.rows));
            let apart = |(a, b): (u64, u64)| span.1 <= a || b <= span.0;
            if at != own && !(apart(input) && apart(output)) {
                return err(format!(
                    "the combined statistics at 0x{at:x} must be partial 0's own (0x{own:x}) or lie apart from the partials and the output"
                ));
            }
        }
        Ok(())
    }

    /// Vertex state words per worker.
    fn state_words(&self) -> usize {
        if self.stats_output.is_some() {
            6
        } else {
            5
        }
    }

    fn add(reg: u8, bytes: u32) -> super::emitter::Inst {
        inst("add", [op::m(reg), op::m(reg), op::imm(i64::from(bytes))])
    }

    /// Partial `i`'s weight `u_i / L` (unnormalised partials: `u_i / (s_i
    /// L)`) as four f16 lanes in `$a12:13`, its statistics at `$m5` (`-M`
    /// in `$a2:3`, the scale in `$a6:7`, `1/L` in `$a10:11`); with `sum`,
    /// `u_i` is added to `$a9` instead.
    fn emit_weight(&self, e: &mut Emitter, sum: bool) {
        let p = op::a_pair;
        for i in [
            inst("ld64", [p(0), op::m(5), op::mzero(), op::imm(0)]),
            inst("f32v2sub", [p(4), p(2), p(0)]),
            inst("f32v2mul", [p(4), p(4), p(6)]),
            inst("f32exp", [op::a(5), op::a(4)]),
        ] {
            e.solo(i);
        }
        if sum || self.normalised {
            e.solo(inst("f32v2mul", [p(4), p(4), p(0)]));
        }
        let rest = if sum {
            vec![inst("f32v2add", [p(8), p(8), p(4)])]
        } else {
            vec![
                inst("mov", [op::a(4), op::a(5)]),
                inst("f32v2mul", [p(4), p(4), p(10)]),
                inst("f32v2tof16", [op::a(12), p(4)]),
                inst("mov", [op::a(13), op::a(12)]),
            ]
        };
        for i in rest {
            e.solo(i);
        }
    }

    /// A group's row of a partial (at `$m10`) times the weight, written
    /// (`first`) or added to the output's row (at `$m9`); both pointers
    /// step to the next group. Two words in flight (`$a0:1` and `$a8:9`,
    /// `$a4:5` the output's), each load bundled with the arithmetic of the
    /// word before. Returns the body's issues.
    fn emit_group(&self, e: &mut Emitter, first: bool, label: &str) -> u64 {
        let p = op::a_pair;
        let ld = |pair: u8, base: u8, w: i64| {
            inst("ld64", [p(pair), op::m(base), op::mzero(), op::imm(w)])
        };
        let st = |pair: u8, w: i64| inst("st64", [p(pair), op::m(9), op::mzero(), op::imm(w)]);
        let mul = |pair: u8| inst("f16v4mul", [p(pair), p(pair), p(12)]);
        let add = |pair: u8| inst("f16v4add", [p(pair), p(pair), p(4)]);
        e.aligned_label(label);
        let before = e.issues();
        // Words 2h and 2h + 1 in $a0:1 and $a8:9.
        for h in 0..i64::from(ROW / 16) {
            let (w0, w1) = (2 * h, 2 * h + 1);
            e.solo(ld(0, 10, w0));
            if first {
                e.bundle(ld(8, 10, w1), mul(0));
                e.bundle(st(0, w0), mul(8));
                e.solo(st(8, w1));
            } else {
                e.bundle(ld(4, 9, w0), mul(0));
                e.bundle(ld(8, 10, w1), add(0));
                e.bundle(ld(4, 9, w1), mul(8));
                e.bundle(st(0, w0), add(8));
                e.solo(st(8, w1));
            }
        }
        e.solo(Self::add(10, self.group_stride));
        e.solo(Self::add(9, self.output_stride));
        e.solo(inst("brnzdec", [op::m(8), op::sym(label)]));
        e.issues() - before
    }

    /// Points `$m10`/`$m9` at the partial's and the output's row and sets
    /// the group counter.
    fn emit_group_setup(&self, e: &mut Emitter) {
        e.solo(inst("mov", [op::m(10), op::m(6)]));
        e.solo(inst("mov", [op::m(9), op::m(4)]));
        e.solo(inst(
            "setzi",
            [op::m(8), op::imm(i64::from(self.groups - 1))],
        ));
    }

    fn emit_worker(&self, e: &mut Emitter) -> (u64, launch::RowLoopCounts, [u64; 5]) {
        let p = op::a_pair;
        let ps = self.part_stride;
        e.solo(load_state_word(op::m(2), 2)); // rows
        e.solo(inst("brz", [op::m(2), op::sym(format!(".L{TAG}_done"))]));
        let empty = e.issues() + 1;
        for s in [
            inst("sub", [op::m(2), op::m(2), op::imm(1)]),
            load_state_word(op::m(0), 0), // partial 0's row
            load_state_word(op::m(1), 1), // its statistics' row
            load_state_word(op::a(6), 3), // the scale
            inst("mov", [op::a(7), op::a(6)]),
            load_state_word(op::m(4), 4), // the output's row
        ] {
            e.solo(s);
        }
        if self.stats_output.is_some() {
            e.solo(load_state_word(op::m(7), 5)); // the statistics' row
        }
        e.aligned_label(&format!(".L{TAG}_row"));
        let setup = e.issues();
        // Pass 1: the least -m_i into $a2.
        e.solo(inst("ld64", [p(2), op::m(1), op::mzero(), op::imm(0)]));
        e.solo(inst("add", [op::m(5), op::m(1), op::imm(i64::from(ps))]));
        e.solo(inst(
            "setzi",
            [op::m(3), op::imm(i64::from(self.parts - 2))],
        ));
        e.aligned_label(&format!(".L{TAG}_min"));
        let before = e.issues();
        e.solo(inst("ld64", [p(0), op::m(5), op::mzero(), op::imm(0)]));
        e.solo(inst("f32v2min", [p(2), p(2), p(0)]));
        e.solo(Self::add(5, ps));
        e.solo(inst("brnzdec", [op::m(3), op::sym(format!(".L{TAG}_min"))]));
        let min = e.issues() - before;
        // Pass 2: L into $a9, 1/L into $a10:11 ($a3 is a lane no result
        // reads: it keeps L for the statistics' store).
        for s in [
            inst("mov", [op::a(3), op::a(2)]),
            inst("mov", [op::a(8), op::azero()]),
            inst("mov", [op::a(9), op::azero()]),
            inst("mov", [op::m(5), op::m(1)]),
            inst("setzi", [op::m(3), op::imm(i64::from(self.parts - 1))]),
        ] {
            e.solo(s);
        }
        e.aligned_label(&format!(".L{TAG}_sum"));
        let before = e.issues();
        self.emit_weight(e, true);
        e.solo(Self::add(5, ps));
        e.solo(inst("brnzdec", [op::m(3), op::sym(format!(".L{TAG}_sum"))]));
        let sum = e.issues() - before;
        for s in [
            inst("f32oox", [op::a(10), op::a(9)]),
            inst("mov", [op::a(11), op::a(10)]),
            inst("mov", [op::m(5), op::m(1)]),
            inst("mov", [op::m(6), op::m(0)]),
        ] {
            e.solo(s);
        }
        if self.stats_output.is_some() {
            e.solo(inst("mov", [op::a(3), op::a(9)]));
        }
        // Pass 3: the first partial writes the output, the others add.
        self.emit_weight(e, false);
        self.emit_group_setup(e);
        let g0 = self.emit_group(e, true, &format!(".L{TAG}_g0"));
        e.solo(Self::add(5, ps));
        e.solo(Self::add(6, ps));
        e.solo(inst(
            "setzi",
            [op::m(3), op::imm(i64::from(self.parts - 2))],
        ));
        e.aligned_label(&format!(".L{TAG}_part"));
        let before = e.issues();
        self.emit_weight(e, false);
        self.emit_group_setup(e);
        let ga = self.emit_group(e, false, &format!(".L{TAG}_ga"));
        e.solo(Self::add(5, ps));
        e.solo(Self::add(6, ps));
        e.solo(inst(
            "brnzdec",
            [op::m(3), op::sym(format!(".L{TAG}_part"))],
        ));
        let part = e.issues() - before - ga;
        e.solo(Self::add(0, ROW));
        e.solo(Self::add(1, 8));
        e.solo(Self::add(4, ROW));
        if self.stats_output.is_some() {
            // (-M, L), after every partial's statistics were read (in
            // place, partial 0's are overwritten).
            e.solo(inst("st64", [p(2), op::m(7), op::mzero(), op::imm(0)]));
            e.solo(Self::add(7, 8));
        }
        let rows = launch::emit_end_row_loop(e, TAG, setup);
        (empty, rows, [min, sum, g0, ga, part])
    }

    /// Float64 reference: the output row-major `[rows, 16 groups]` from
    /// each partial's `O_i` (row-major `[rows, 16 groups]`) and statistics
    /// (`(-m_i, s_i)` per row).
    pub fn reference(&self, o: &[Vec<f64>], stats: &[Vec<(f64, f64)>]) -> Vec<f64> {
        let cols = (self.groups * 16) as usize;
        let scale = f64::from(self.scale);
        let mut out = vec![0.0; self.rows as usize * cols];
        for r in 0..self.rows as usize {
            let big = stats
                .iter()
                .map(|s| -s[r].0)
                .fold(f64::NEG_INFINITY, f64::max);
            let u: Vec<f64> = stats
                .iter()
                .map(|s| s[r].1 * (scale * (-s[r].0 - big)).exp())
                .collect();
            let total: f64 = u.iter().sum();
            for ((oi, ui), si) in o.iter().zip(&u).zip(stats) {
                let w = if self.normalised {
                    ui / total
                } else {
                    ui / si[r].1 / total
                };
                for c in 0..cols {
                    out[r * cols + c] += w * oi[r * cols + c];
                }
            }
        }
        out
    }
}

impl Codelet for AttentionCombine {
    type Counts = AttentionCombineCounts;

    /// Emits the launch (supervisor entry `main`, six workers).
    fn emit(&self, e: &mut Emitter) -> Result<AttentionCombineCounts, CodeletError> {
        self.validate()?;
        let supervisor = launch::emit_supervisor_and_worker_entry(e, TAG, self.state_words());
        let (empty, rows, bodies) = self.emit_worker(e);
        let shares = self.worker_rows();
        let offs = offsets(&shares);
        // Partial 0's row, its statistics' row, rows, the scale, the
        // output's row.
        let states: [Vec<u32>; WORKERS] = std::array::from_fn(|w| {
            let mut words = vec![
                self.input + offs[w] * ROW,
                self.input + self.stats_offset + offs[w] * 8,
                shares[w],
                self.scale.to_bits(),
                self.output + offs[w] * ROW,
            ];
            words.extend(self.stats_output.map(|at| at + offs[w] * 8));
            words
        });
        let launch = launch::end_row_launch(e, TAG, &states, supervisor, empty, rows);
        Ok(AttentionCombineCounts { launch, bodies })
    }

    fn cycles(&self, counts: &AttentionCombineCounts) -> u64 {
        counts.launch.cycles(
            &self.worker_rows(),
            counts.repeated(self.parts, self.groups),
        )
    }
}
