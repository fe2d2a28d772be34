//! LayerNorm over the rows of an f16 matrix `[rows, C]`:
//! `out = (x - mean) / sqrt(var + eps) * gamma + beta` (f16 gamma, beta of
//! length C; mean and variance in f32).
//!
//! Per row, three passes over the row (workers take contiguous shares of rows):
//! 1. `{ ld128step ; f16v8acc }` sums 8 halves per bundle into `$AACC`; the
//!    lanes are folded (`f32v2gina`, `f32v2add`, a lane `mov`) and scaled by
//!    `1/C` to the mean; `-mean` is rounded to f16 and broadcast (`ldb16`).
//! 2. `{ ld64step ; f16v4add d = x - mean } { nop ; f16v4cmac d, d }`
//!    accumulates squared deviations in f32 (two-pass variance); or
//!    ([`Variance::Moments`], what the lowering takes for FP8 output)
//!    `{ ld64step ; f16v4cmac x, x }` accumulates `x^2` (exact products,
//!    f32 sums) and the variance is `E[x^2] - mean^2` in f32 (at least
//!    0), a bundle a word for two. Its cancellation costs about
//!    `(1 + mean^2 / var) 2^-24` relative in the variance, below the f16
//!    steps before the conversion unless `|mean|` is hundreds of times the
//!    spread, and far below FP8's `2^-4`.
//! 3. `1/sqrt(var + eps)`: `f32oorx`, the instruction poplibs' RSQRT
//!    kernel issues (`lib/popops/codelets/inlineAssemblerUnaryOps.hpp`),
//!    4 issue slots under poplibs' costs (`MachineModel::transcendental_issues`),
//!    in place of a bit-level initial guess and three Newton steps (19 issues).
//! 4. Apply, software-pipelined at 4 bundles per 4 halves:
//!    `d = x - mean`, `n = d * rstd`, `g = n * gamma`, `out = g + beta`,
//!    all f16 operations (four roundings).
//!
//! **FP8 output** ([`LayerNorm::output_f8_scale`] `= Some(s)`, the input of
//! the FP8 block's first product): the apply pass computes the same f16
//! `out` and converts each word with `f16v4tof8 ..., s` (code =
//! f8(out * 2^-s), RNE, saturating to +-240: one more rounding, exact
//! otherwise), storing 4 codes per word. The conversion is a fifth
//! auxiliary instruction per word, so the apply pass takes 5 bundles per
//! 4 values (the auxiliary slot is the limit; the loads and the `st32`
//! use 4 of the 5 main slots). The output is `[rows, C]` bytes, C per
//! row; since its rows are half as long as the input's, writing it over
//! the input would overwrite rows another worker has yet to read, so it
//! must not overlap the input.
//!
//! **Output as panels** ([`LayerNorm::output_panels`] `= Some(stride)`,
//! the input panels of the block's products as the exchange sends them):
//! each row's 32-byte pieces (16 f16 values or 32 FP8 codes: one AMP
//! input panel's share of the row) go `stride` bytes apart, the rows 32
//! bytes apart within each, so that one panel's rows of a tile are
//! contiguous and the exchange sends them with one `send`, not one per
//! row. The apply loop is unrolled over a piece (4 words, FP8 8), its
//! piece's last store stepping on to the next panel, and the row ends by
//! stepping back to the next row: one more issue a row, the same
//! bundles per word.
//!
//! **x's copy in groups** ([`LayerNorm::x_groups`], FP8 output panels
//! without scale and shift): the apply pass's conversion bundle leaves
//! its main slot free, and x's next word is in `$a0:1` there (loaded a
//! word ahead), so a `st64step` there copies x into 16-channel groups
//! (`stride` bytes apart, each row's 32 bytes at `32 r` in a group) at no
//! bundle's cost: the form the residual's exchange sends a group's rows
//! in, one chunk instead of one a row. The pointer steps a word within a
//! group and on to the next group after its last word; a row ends one
//! word past a slack group (the load ahead's word) and steps back.
//!
//! The input must be 16-byte aligned in interleaved memory with C a
//! multiple of 8; the loads read up to 16 bytes past the end of the input
//! and 8 bytes past gamma and beta.

use half::f16;

use super::emitter::{inst, ld64_next, load_state_word, op, Emitter, Inst};
use super::launch::{self, split, RowLaunchCounts, RowLoopCounts, WORKERS};
use super::program::Codelet;
use super::{check_alignment, check_rows, CodeletError};
use ipuc_ipu_arch::float8::SCALE_RANGE;

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
    /// Whether the scale and shift apply: false for a LayerNorm whose
    /// scale is ones and shift zeros (folded into the next product by
    /// `fold-layernorm-affine`), which reads neither.
    pub affine: bool,
    /// gamma f16 `[C]`, 8-byte aligned (unread without [`LayerNorm::affine`]).
    pub gamma: u32,
    /// beta f16 `[C]`, 8-byte aligned (unread without [`LayerNorm::affine`]).
    pub beta: u32,
    /// Output `[rows, C]`: f16, 8-byte aligned (may equal the input); or
    /// with [`LayerNorm::output_f8_scale`], FP8 codes, 4-byte aligned, not
    /// overlapping the input.
    pub output: u32,
    /// `None`: f16 output. `Some(s)`: f8E4M3FNUZ output with tensor scale
    /// `s` in -31..=31 (code = f8(out * 2^-s)).
    pub output_f8_scale: Option<i32>,
    /// How the variance is taken ([`Variance`]).
    pub variance: Variance,
    /// `None`: rows of the output contiguous. `Some(stride)`: each row's
    /// 32-byte pieces `stride` bytes apart (a multiple of 32, at least
    /// `rows * 32`), row `r`'s at `r * 32` in each: element `(r, c)` at
    /// `output + (c e / 32) stride + 32 r + c e % 32` (`e` bytes per
    /// element).
    pub output_panels: Option<u32>,
    /// `Some((address, stride))`: the apply pass also copies x into
    /// 16-channel groups, `stride` bytes apart (a multiple of 32, at least
    /// `rows * 32`), row `r`'s 32 bytes of group `g` at `address + g *
    /// stride + 32 r` (what the residual's exchange sends a group at a
    /// time), in the main slot the FP8 apply pass without scale and shift
    /// leaves free: no bundle more ([`LayerNorm::x_copy_bytes`] holds one
    /// word past each row, the load ahead's). Only with FP8 output
    /// panels and no scale and shift.
    pub x_groups: Option<(u32, u32)>,
}

/// Bytes of x's copy in groups ([`LayerNorm::x_groups`]) of `rows` rows
/// of `cols` channels, groups `stride` bytes apart: every group's rows,
/// and a word of each row past the last group (the apply pass's load
/// ahead, stored with the rest).
pub fn x_copy_bytes(cols: u32, rows: u32, stride: u32) -> u32 {
    (cols / 16) * stride + (rows - 1) * PIECE_BYTES + 8
}

/// Bytes of a row's piece in [`LayerNorm::output_panels`] (an AMP input
/// panel's share of one row).
pub const PIECE_BYTES: u32 = 32;

/// How [`LayerNorm`] takes a row's variance (the module doc's pass 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variance {
    /// The mean of `(x - mean)^2`, `x - mean` in f16 (two bundles a
    /// word): the f16 output's.
    Deviations,
    /// `E[x^2] - mean^2` in f32 (one bundle a word): where the output is
    /// FP8, whose `2^-4` steps dwarf the cancellation.
    Moments,
}

impl Variance {
    /// The form for an output in FP8 (`fp8`) or f16.
    pub fn for_output(fp8: bool) -> Self {
        match fp8 {
            true => Variance::Moments,
            false => Variance::Deviations,
        }
    }
}

const TAG: &str = "layernorm_f16";
const TAG_F8: &str = "layernorm_f16_f8";

impl LayerNorm {
    fn tag(&self) -> &'static str {
        match self.output_f8_scale {
            None => TAG,
            Some(_) => TAG_F8,
        }
    }

    /// Bytes per output element (2 for f16, 1 for FP8).
    pub fn output_elem_bytes(&self) -> u32 {
        match self.output_f8_scale {
            None => 2,
            Some(_) => 1,
        }
    }

    /// Rows per worker.
    pub fn worker_rows(&self) -> [u32; WORKERS] {
        split(self.rows)
    }

    /// Bytes of the output: its rows, or its pieces up to the last row's
    /// last piece.
    pub fn output_bytes(&self) -> u64 {
        let row = u64::from(self.cols) * u64::from(self.output_elem_bytes());
        match self.output_panels {
            None => u64::from(self.rows) * row,
            Some(stride) => {
                (row / u64::from(PIECE_BYTES) - 1) * u64::from(stride)
                    + u64::from(self.rows) * u64::from(PIECE_BYTES)
            }
        }
    }

    /// Bytes from [`LayerNorm::x_groups`]' address that its copy writes:
    /// every group's rows, and a word of each row past the last group (the
    /// apply pass's load ahead, stored with the rest).
    pub fn x_copy_bytes(&self) -> u32 {
        self.x_groups
            .map_or(0, |(_, stride)| x_copy_bytes(self.cols, self.rows, stride))
    }

    /// With [`LayerNorm::x_groups`] `stride` bytes apart, the bytes a
    /// row's copy pointer steps back at the row's end: from a word past
    /// the slack group's row (the row's words and the one loaded ahead) to
    /// the next row's first.
    fn x_copy_back(&self, stride: u32) -> u32 {
        (self.cols / 16) * stride + 8 - PIECE_BYTES
    }

    /// With [`LayerNorm::x_groups`], the copy's store step after word `w`
    /// of an apply piece (8-byte units): on within a group, to the next
    /// group after a group's last word. The store in word `w`'s bundles
    /// is of the word after it (loaded a word ahead), so the group ends
    /// after words 2 and 6 of a piece of 8.
    fn x_copy_step(&self, w: u32) -> i64 {
        match self.x_groups {
            Some((_, stride)) if (w + 2).is_multiple_of(4) => i64::from((stride - 24) / 8),
            _ => 1,
        }
    }

    /// Where element `(r, c)` of the output is.
    pub fn output_at(&self, r: u32, c: u32) -> u32 {
        let e = self.output_elem_bytes();
        match self.output_panels {
            None => self.output + (r * self.cols + c) * e,
            Some(stride) => {
                self.output + (c * e / PIECE_BYTES) * stride + r * PIECE_BYTES + c * e % PIECE_BYTES
            }
        }
    }

    /// With the output as panels, the store step after a piece's last word
    /// (in store units: 8 bytes, FP8 4), on to the row's piece in the next
    /// panel, and the bytes a row steps back at its end, from past its
    /// last piece to the next row's first.
    fn panel_steps(&self) -> Option<(u32, u32)> {
        let stride = self.output_panels?;
        let unit = 4 * self.output_elem_bytes();
        let pieces = self.cols * self.output_elem_bytes() / PIECE_BYTES;
        Some((
            (stride + unit).saturating_sub(PIECE_BYTES) / unit,
            pieces.saturating_mul(stride).saturating_sub(PIECE_BYTES),
        ))
    }

    /// Apply-loop words per output piece when the output is panels: 4
    /// (f16 words of 8 bytes) or 8 (4 FP8 codes each); 1 for rows.
    fn words_per_piece(&self) -> u32 {
        match self.output_panels {
            None => 1,
            Some(_) => PIECE_BYTES / (4 * self.output_elem_bytes()),
        }
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), CodeletError> {
        let tag = self.tag();
        let err = |m: String| Err(CodeletError::new(tag, m));
        check_rows(tag, self.rows, self.cols, 8)?;
        if !(self.eps >= 0.0 && self.eps.is_finite()) {
            return err(format!(
                "epsilon {} is not a finite non-negative number",
                self.eps
            ));
        }
        if let Some(stride) = self.output_panels {
            let row = self.cols * self.output_elem_bytes();
            if !row.is_multiple_of(PIECE_BYTES)
                || !stride.is_multiple_of(PIECE_BYTES)
                || stride < self.rows * PIECE_BYTES
            {
                return err(format!(
                    "output panels need rows of whole {PIECE_BYTES}-byte pieces and a stride of whole pieces past the {} rows: {row} bytes a row, stride {stride}",
                    self.rows
                ));
            }
            // The store steps (12-bit words) and the row's step back
            // (a 16-bit immediate).
            let (jump, back) = self.panel_steps().expect("output panels");
            if jump > 2047 || back > i16::MAX as u32 {
                return err(format!(
                    "output panels {stride} bytes apart over {row}-byte rows are too far apart for the stores' steps"
                ));
            }
        }
        if let Some((address, stride)) = self.x_groups {
            if self.affine || self.output_f8_scale.is_none() || self.output_panels.is_none() {
                return err(
                    "x's copy in groups needs FP8 output panels and no scale and shift (the apply pass's free slot)".into(),
                );
            }
            if !self.cols.is_multiple_of(16)
                || !stride.is_multiple_of(PIECE_BYTES)
                || stride < self.rows * PIECE_BYTES
                || !address.is_multiple_of(8)
                || (stride - 24) / 8 > 2047
            {
                return err(format!(
                    "x's copy in groups needs rows of whole groups of 16, an 8-byte aligned address and a stride of whole 32-byte pieces past the {} rows (at most 16,400 bytes): {} columns, address 0x{address:x}, stride {stride}",
                    self.rows, self.cols
                ));
            }
            if self.x_copy_back(stride) > i16::MAX as u32 {
                return err(format!(
                    "x's copy in groups {stride} bytes apart over {} columns is too far for the row's step back",
                    self.cols
                ));
            }
        }
        if let Some(scale) = self.output_f8_scale {
            if !SCALE_RANGE.contains(&scale) {
                return err(format!(
                    "FP8 output scale {scale} is outside {SCALE_RANGE:?}"
                ));
            }
            let bytes = u64::from(self.rows) * u64::from(self.cols);
            let input_end = u64::from(self.input) + 2 * bytes;
            let output_end = u64::from(self.output) + self.output_bytes();
            if u64::from(self.output) < input_end && u64::from(self.input) < output_end {
                return err(format!(
                    "the FP8 output 0x{:x}..0x{output_end:x} overlaps the input \
                     0x{:x}..0x{input_end:x} (its rows are shorter: place it apart)",
                    self.output, self.input
                ));
            }
        }
        check_alignment(
            tag,
            &[
                ("input", self.input, 16),
                ("output", self.output, 4 * self.output_elem_bytes()),
            ],
        )?;
        if self.affine {
            check_alignment(tag, &[("gamma", self.gamma, 8), ("beta", self.beta, 8)])?;
        }
        Ok(())
    }

    /// The worker: its issues when it has no rows, and its row loop's counts.
    fn emit_worker(&self, e: &mut Emitter) -> (u64, RowLoopCounts) {
        let tag = self.tag();
        e.solo(load_state_word(op::m(2), 2)); // rows
        let empty = launch::emit_start_row_count(e, tag);
        for s in [
            load_state_word(op::m(0), 0), // x
            load_state_word(op::m(1), 1), // out
            load_state_word(op::m(3), 3), // C/8
            load_state_word(op::m(4), 4), // C/4
        ] {
            e.solo(s);
        }
        // The apply loop's iterations: a piece each when unrolled.
        let apply_count = if self.output_panels.is_some() {
            e.solo(load_state_word(op::m(8), 10));
            op::m(8)
        } else {
            op::m(4)
        };
        // x's copy in groups: its pointer, carried from row to row.
        if self.x_groups.is_some() {
            e.solo(load_state_word(op::m(6), 11));
        }
        e.aligned_label(&format!(".L{tag}_row"));
        let setup = e.issues();
        // Pass 1: the mean.
        e.solo(inst("mov", [op::m(5), op::m(0)]));
        e.solo(inst(
            "ld128step",
            [op::a_quad(0), op::mzero(), op::m_inc(5), op::imm(1)],
        ));
        e.rpt(
            op::m(3),
            &format!("{tag}_sum"),
            vec![(
                inst(
                    "ld128step",
                    [op::a_quad(0), op::mzero(), op::m_inc(5), op::imm(1)],
                ),
                inst("f16v8acc", [op::a_quad(0)]),
            )],
        );
        let moments = self.variance == Variance::Moments;
        // -mean in f32, kept for the moments' variance.
        let keep_mean = Some(inst("mov", [op::a(12), op::a(4)])).filter(|_| moments);
        for s in row_mean_of_accumulators(4)
            .into_iter()
            .chain([inst(
                "f32v2sub",
                [op::a_pair(4), op::azeros(), op::a_pair(4)],
            )])
            .chain(keep_mean)
            .chain([
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
            ])
        {
            e.solo(s);
        }
        let var_body = if moments {
            // x^2 accumulated (exact products), a word a bundle.
            vec![(
                ld64_next(0, 5),
                inst("f16v4cmac", [op::a_pair(0), op::a_pair(0)]),
            )]
        } else {
            vec![
                (
                    ld64_next(0, 5),
                    inst("f16v4add", [op::a_pair(6), op::a_pair(0), op::a_pair(8)]),
                ),
                (
                    inst("nop", []),
                    inst("f16v4cmac", [op::a_pair(6), op::a_pair(6)]),
                ),
            ]
        };
        e.rpt(op::m(4), &format!("{tag}_var"), var_body);
        let from_moments = [
            // E[x^2] - mean^2, at least 0.
            inst("mov", [op::a(13), op::a(12)]),
            inst("f32v2mul", [op::a_pair(12), op::a_pair(12), op::a_pair(12)]),
            inst("f32v2sub", [op::a_pair(4), op::a_pair(4), op::a_pair(12)]),
            inst("f32v2max", [op::a_pair(4), op::a_pair(4), op::azeros()]),
        ];
        let variance = row_mean_of_accumulators(2)
            .into_iter()
            .chain(from_moments.into_iter().filter(|_| moments));
        for s in variance.chain([
            load_state_word(op::a(6), 8), // eps
            inst("f32v2add", [op::a_pair(4), op::a_pair(4), op::a_pair(6)]),
            // 1/sqrt(var + eps), broadcast to four f16 lanes below.
            inst("f32oorx", [op::a(6), op::a(4)]),
            inst("mov", [op::a(7), op::a(6)]),
        ]) {
            e.solo(s);
        }
        for s in [
            inst("f32v2tof16", [op::a(10), op::a_pair(6)]),
            inst("mov", [op::a(11), op::a(10)]), // rstd, 4 lanes
            // Pass 3: apply.
            inst("mov", [op::m(5), op::m(0)]),
        ] {
            e.solo(s);
        }
        let jump = self.panel_steps().map_or(1, |(jump, _)| i64::from(jump));
        if !self.affine {
            self.emit_apply_plain(e, apply_count, jump);
            return (empty, self.end_row(e, setup));
        }
        e.solo(load_state_word(op::m(6), 5)); // gamma
        e.solo(load_state_word(op::m(7), 6)); // beta
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
        let normalise = (
            ld64_next(0, 5),
            inst("f16v4mul", [op::a_pair(12), op::a_pair(6), op::a_pair(2)]),
        );
        let shift = (
            ld64_next(2, 6),
            inst("f16v4add", [op::a_pair(12), op::a_pair(12), op::a_pair(4)]),
        );
        let centre_next = (
            ld64_next(4, 7),
            inst("f16v4add", [op::a_pair(6), op::a_pair(0), op::a_pair(8)]),
        );
        let scale_next = inst("f16v4mul", [op::a_pair(6), op::a_pair(6), op::a_pair(10)]);
        // The output pointer's step after a piece's last word (`jump`): on
        // to the same row's piece in the next panel.
        let store_f16 = |step: i64| {
            inst(
                "st64step",
                [op::a_pair(12), op::mzero(), op::m_inc(1), op::imm(step)],
            )
        };
        let store_f8 = |step: i64| {
            inst(
                "st32step",
                [op::a(12), op::mzero(), op::m_inc(1), op::imm(step)],
            )
        };
        let word = |step: i64| match self.output_f8_scale {
            None => vec![
                normalise.clone(),
                shift.clone(),
                centre_next.clone(),
                (store_f16(step), scale_next.clone()),
            ],
            // The word's four codes into $a12, stored in the next bundle.
            Some(scale) => vec![
                normalise.clone(),
                shift.clone(),
                centre_next.clone(),
                (
                    inst("nop", []),
                    inst(
                        "f16v4tof8",
                        [op::a(12), op::a_pair(12), op::imm(i64::from(scale))],
                    ),
                ),
                (store_f8(step), scale_next.clone()),
            ],
        };
        let n = self.words_per_piece();
        let apply: Vec<(Inst, Inst)> = (0..n)
            .flat_map(|w| word(if w + 1 == n { jump } else { 1 }))
            .collect();
        e.rpt(apply_count, &format!("{tag}_apply"), apply);
        (empty, self.end_row(e, setup))
    }

    /// The apply pass without scale and shift: `n = (x - mean) rstd`
    /// (and its FP8 codes), software-pipelined one word ahead like the
    /// affine pass: per word the next word's load beside `n`, then the
    /// conversion (FP8), then the store beside the next word's centring.
    fn emit_apply_plain(&self, e: &mut Emitter, count: ipuc_dialects::ipu::Operand, jump: i64) {
        let tag = self.tag();
        let p = op::a_pair;
        let centre = || inst("f16v4add", [p(6), p(0), p(8)]);
        // x's copy in groups stores `$a0:1`, the word just loaded, in the
        // main slots that are free (`nop` without it).
        let copy = |step: i64| match self.x_groups {
            Some(_) => inst("st64step", [p(0), op::mzero(), op::m_inc(6), op::imm(step)]),
            None => inst("nop", []),
        };
        e.bundle(ld64_next(0, 5), inst("fnop", []));
        e.bundle(copy(1), centre());
        let scale = (ld64_next(0, 5), inst("f16v4mul", [p(12), p(6), p(10)]));
        let word = |w: u32, step: i64| match self.output_f8_scale {
            None => vec![
                scale.clone(),
                (
                    inst(
                        "st64step",
                        [p(12), op::mzero(), op::m_inc(1), op::imm(step)],
                    ),
                    centre(),
                ),
            ],
            Some(s) => vec![
                scale.clone(),
                (
                    copy(self.x_copy_step(w)),
                    inst("f16v4tof8", [op::a(12), p(12), op::imm(i64::from(s))]),
                ),
                (
                    inst(
                        "st32step",
                        [op::a(12), op::mzero(), op::m_inc(1), op::imm(step)],
                    ),
                    centre(),
                ),
            ],
        };
        let n = self.words_per_piece();
        let apply: Vec<(Inst, Inst)> = (0..n)
            .flat_map(|w| word(w, if w + 1 == n { jump } else { 1 }))
            .collect();
        e.rpt(count, &format!("{tag}_apply"), apply);
    }

    /// The row's end: the input pointer back from one word past the row
    /// (the apply pass loads a word ahead), the output's back to the next
    /// row's first piece (panels), and the row loop's branch.
    fn end_row(&self, e: &mut Emitter, setup: u64) -> RowLoopCounts {
        e.solo(inst("sub", [op::m(0), op::m(5), op::imm(8)]));
        if let Some((_, back)) = self.panel_steps() {
            // Back from past the row's last piece to the next row's first.
            e.solo(inst("sub", [op::m(1), op::m(1), op::imm(i64::from(back))]));
        }
        if let Some((_, stride)) = self.x_groups {
            // x's copy: on to the next row's first word.
            let back = self.x_copy_back(stride);
            e.solo(inst("sub", [op::m(6), op::m(6), op::imm(i64::from(back))]));
        }
        launch::emit_end_row_loop(e, self.tag(), setup)
    }

    /// Bundles of the apply pass per word (4 values): 4, or 5 with the
    /// FP8 conversion; without scale and shift 2, or 3.
    pub fn apply_bundles_per_word(&self) -> u64 {
        let f8 = u64::from(self.output_f8_scale.is_some());
        if self.affine {
            4 + f8
        } else {
            2 + f8
        }
    }

    /// Bundles of the variance pass per word: 1 from the moments, else 2.
    pub fn variance_bundles_per_word(&self) -> u64 {
        match self.variance {
            Variance::Moments => 1,
            Variance::Deviations => 2,
        }
    }

    /// `rpt` body issues per row: C/8 sum bundles, 2 (moments: 1) C/4
    /// variance bundles and 4 (5 with FP8 output) C/4 apply bundles.
    fn body_issues_per_row(&self) -> u64 {
        u64::from(self.cols / 8)
            + (self.variance_bundles_per_word() + self.apply_bundles_per_word())
                * u64::from(self.cols / 4)
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

    /// Largest error against the reference `want` (magnitude `mag`) of
    /// the FP8 output's value `code * 2^s`: [`LayerNorm::tolerance`], then
    /// the conversion's one rounding, half a step of the 3 mantissa bits
    /// (2^-4 relative) or of the subnormal spacing (2^(s-10)). Saturation
    /// (|out| beyond 240 * 2^s) is not covered: the scale must leave room.
    pub fn tolerance_f8(&self, want: f64, mag: f64) -> f64 {
        let s = self.output_f8_scale.unwrap_or(0);
        let tol = self.tolerance(mag);
        tol + 2f64.powi(-4) * (want.abs() + tol) + 2f64.powi(s - 11)
    }
}

/// Reads the first `pairs` f32 accumulator pairs (`f32v2gina`) and sums
/// them, then their two lanes, into `$a4`, times `1/C` (vertex state word
/// 7): the row's mean of what the pass accumulated, x for the mean and
/// (x - mean)^2 for the variance.
fn row_mean_of_accumulators(pairs: i64) -> Vec<Inst> {
    let add = || inst("f32v2add", [op::a_pair(4), op::a_pair(4), op::a_pair(6)]);
    let mut s = vec![inst("f32v2gina", [op::a_pair(4), op::azeros(), op::imm(0)])];
    for k in 1..pairs {
        s.push(inst("f32v2gina", [op::a_pair(6), op::azeros(), op::imm(k)]));
        s.push(add());
    }
    s.extend([
        inst("mov", [op::a(6), op::a(5)]),
        add(),
        load_state_word(op::a(6), 7), // 1/C
        inst("f32v2mul", [op::a_pair(4), op::a_pair(4), op::a_pair(6)]),
    ]);
    s
}

impl Codelet for LayerNorm {
    type Counts = RowLaunchCounts;

    /// Emits the launch (supervisor entry `main`, six workers) and returns
    /// the issue counts its estimate is made of.
    fn emit(&self, e: &mut Emitter) -> Result<RowLaunchCounts, CodeletError> {
        self.validate()?;
        let words = 11 + usize::from(self.x_groups.is_some());
        let supervisor = launch::emit_supervisor_and_worker_entry(e, self.tag(), words);
        let (empty, rows) = self.emit_worker(e);
        let states = launch::worker_states(&self.worker_rows(), |first, count| {
            vec![
                self.input + first * self.cols * 2,
                self.output_at(first, 0),
                count,
                self.cols / 8,
                self.cols / 4,
                self.gamma,
                self.beta,
                (1.0 / self.cols as f32).to_bits(),
                self.eps.to_bits(),
                0, // scratch
                self.cols / 4 / self.words_per_piece(),
            ]
            .into_iter()
            .chain(self.x_groups.map(|(address, _)| address + first * 32))
            .collect()
        });
        Ok(launch::end_row_launch(
            e,
            self.tag(),
            &states,
            supervisor,
            empty,
            rows,
        ))
    }

    fn cycles(&self, counts: &RowLaunchCounts) -> u64 {
        counts.cycles(&self.worker_rows(), self.body_issues_per_row())
    }
}
