//! Scaled softmax over the rows of a matrix held in AMP output panels:
//! attention's `P = softmax(scale * S)` between its two products, with no
//! rearrangement on either side.
//!
//! The input is what an AMP product writes ([`super::gemm::TileGemm`]),
//! the scores `S` in one of two element types ([`SoftmaxPanels::scores`]):
//! - f32 partials (`f16v4sisoamp`, 8 output channels per group): `S` as
//!   `[2 groups][rows][8]` f32, input group `h` row `r` at
//!   `input + h * input_stride + 32 r`;
//! - f16 partials (`f16v4hihov4amp`, 16 channels per group): `S` as
//!   `[groups][rows][16]` f16, group `g` row `r` at
//!   `input + g * input_stride + 32 r`, the output's own layout.
//!
//! The output is what the next product reads as its input panels (16
//! channels): `P` as `[groups][rows][16]` f16, at
//! `output + g * output_stride + 32 r`, output group `g` holding input
//! groups `2g` and `2g + 1` side by side (f32 scores) or input group `g`
//! (f16). Row `r`'s columns are the `16 * groups` values of every group's
//! row `r`:
//!
//! ```text
//! P[r, j] = exp(scale * (S[r, j] - m_r)) / sum_j' exp(scale * (S[r, j'] - m_r)),
//! m_r = max_j S[r, j]      (scale > 0, so m_r also maximises scale * S)
//! ```
//!
//! Columns that must not count (keys padded to a whole group, an additive
//! mask) are the caller's: a large negative input (the product's initial
//! partials, e.g. -1e30) makes `exp` exactly 0.
//!
//! Per row (workers take contiguous shares of rows), three passes over the
//! groups, each a `brnzdec` loop whose body handles one group's 16 values
//! with immediate offsets (no pointer steps inside a group, so nothing is
//! read outside the matrix). With f32 scores:
//! 1. the row maximum in f32: `ld64` and `f32v2max` per pair, software
//!    pipelined by one pair (a body reads input groups `2g` and `2g + 1`,
//!    the second at an immediate offset of one input stride);
//! 2. `e = exp(scale * (x - m))`: the exponent in f32 (`f32v2add` of
//!    `-m`, `f32v2mul` unless the scale is 1, as where the caller folded
//!    it into S's operands), rounded to f16 and exponentiated two lanes at a
//!    time (`f32v2tof16`, `f16v2exp`: 2 issue slots for two values, where
//!    two `f32exp` take 6), four pairs at a time summed in f32 into the
//!    accumulators (`f16v8acc`, read and cleared at the row's end with
//!    `f32v2gina`) and stored (`st64step`), the loads, stores and loop
//!    control in the arithmetic's bundles: 37 issue slots per 16 values
//!    with the scale folded (59 when each pair was converted back to f32
//!    and added, with solo stores);
//! 3. `P = e * (1/sum)` in f16 (`f32oox`, broadcast to four lanes),
//!    `ld64`/`f16v4mul`/`st64` in place in the output, two words in
//!    flight; skipped where [`SoftmaxPanels::normalise`] is off (P then
//!    holds the `e`s, and the statistics' sum divides later).
//!
//! With f16 scores the first two passes work on four lanes a word:
//! 1. `f16v4max` per word, the loads alternating between two registers
//!    in the arithmetic's bundles: 6 issue slots a group (10 in f32);
//! 2. `f16v4add` of `-m` (exact where it matters: `x - m` of nearby f16
//!    values is exact, Sterbenz), `f16v4mul` unless the scale is 1, two
//!    `f16v2exp`, `f16v8acc` per two words: 25 issue slots a group with
//!    the scale folded (29 with it); the `exp`s, which hold their worker
//!    for two slots each, are 16 of them.
//!
//! Accuracy. From f32 scores the maximum is subtracted before any
//! rounding: only the exponent `scale (x - m)` is rounded to f16, which
//! costs `|scale (x - m)| 2^-12` relative in each `e` (largest where `e`
//! is smallest). f16 scores were rounded by their product already (about
//! `|S| 2^-11` each, and the product's f16 accumulation) and a scale other
//! than 1 rounds again; the f16 `exp` then costs
//! `|scale (x - m)| 2^-11 + |scale| |S| 2^-11` relative. That is f16
//! attention's usual error, which the products' FP8 or f16 operands
//! outweigh; the f32 form is for where the scores are large.

use half::f16;

use super::amp::Elem;
use super::emitter::{inst, load_state_word, op, Emitter, Inst};
use super::launch::{self, offsets, split, RowLaunchCounts, WORKERS};
use super::program::Codelet;
use super::{check_alignment, CodeletError};

const TAG: &str = "softmax_panels";

/// Values per group row (the AMP's output channels).
pub const GROUP: u32 = 16;
/// Bytes of one group row of the input (8 f32 or 16 f16 values).
const IN_ROW: u32 = 32;
/// f32 pairs per output group row: 4 from each of two input groups.
const PAIRS: u32 = 8;
/// Bytes of one group row of the f16 output.
const OUT_ROW: u32 = 32;
/// Pass 2's load registers (pairs), in rotation.
const EXP_LOADS: [u8; 3] = [4, 8, 12];

/// One launch.
#[derive(Clone, Debug)]
pub struct SoftmaxPanels {
    /// Rows (split over the workers).
    pub rows: u32,
    /// Output groups of 16 columns (pairs of input groups of 8).
    pub groups: u32,
    /// The scale (positive, finite; with f16 scores rounded to f16, and
    /// an f16 normal number then).
    pub scale: f32,
    /// The scores' element type: [`Elem::F32`] or [`Elem::F16`].
    pub scores: Elem,
    /// Input group 0 row 0, 8-byte aligned.
    pub input: u32,
    /// Bytes between input groups (of 8 f32 or 16 f16 columns): a
    /// multiple of 8, at least `32 * rows`, at most 16,376 (f32) or
    /// 32,752 (f16).
    pub input_stride: u32,
    /// Group 0 row 0 of the f16 output, 8-byte aligned.
    pub output: u32,
    /// Bytes between output groups: a multiple of 8, at least `32 * rows`.
    pub output_stride: u32,
    /// Where each row's statistics go, if anywhere: row `r`'s `(-m_r,
    /// sum_r)` as two f32 at `stats + 8 r` (8-byte aligned), `m_r` the
    /// row's maximum of S (unscaled) and `sum_r` the sum of its `exp`s,
    /// which is what combining several blocks of keys needs
    /// ([`super::attention_combine`]).
    pub stats: Option<u32>,
    /// Whether P is normalised (pass 3). Without it P holds each row's
    /// `exp(scale (S - m_r))` and the caller divides by `sum_r` later (a
    /// key-split attention's combination, which weights each block's
    /// output anyway: [`super::attention_combine::AttentionCombine::normalised`]).
    pub normalise: bool,
}

/// Issue counts of a launch, as emitted: the row loop's straight-line
/// issues and the issues of one group's body in each pass.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SoftmaxPanelsCounts {
    /// The launch's (per-row issues include one pass of each group body).
    pub launch: RowLaunchCounts,
    /// One group's body in the max, exp and normalising passes.
    pub group: [u64; 3],
}

impl SoftmaxPanelsCounts {
    /// Issues per row beyond the row loop's straight-line count: the other
    /// `groups - 1` passes of each group body.
    pub fn repeated(&self, groups: u32) -> u64 {
        u64::from(groups - 1) * self.group.iter().sum::<u64>()
    }
}

impl SoftmaxPanels {
    /// Rows per worker.
    pub fn worker_rows(&self) -> [u32; WORKERS] {
        split(self.rows)
    }

    fn span(start: u32, stride: u32, groups: u32, last: u32) -> (u64, u64) {
        let s = u64::from(start);
        (
            s,
            s + u64::from(stride) * u64::from(groups - 1) + u64::from(last),
        )
    }

    /// Input groups of `scores` per output group.
    fn inputs_per_group(&self) -> u32 {
        match self.scores {
            Elem::F16 => 1,
            _ => 2,
        }
    }

    /// The scale as four f16 lanes' bits (f16 scores).
    fn scale_f16_bits(&self) -> u32 {
        u32::from(f16::from_f32(self.scale).to_bits()) * 0x1_0001
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), CodeletError> {
        let err = |m: String| Err(CodeletError::new(TAG, m));
        if self.rows == 0 || self.groups == 0 {
            return err(format!(
                "needs at least one row and one group, got {} rows and {} groups",
                self.rows, self.groups
            ));
        }
        if !(self.scale.is_finite() && self.scale > 0.0) {
            return err(format!(
                "the scale must be positive and finite, got {}",
                self.scale
            ));
        }
        match self.scores {
            Elem::F32 => {}
            Elem::F16 if f16::from_f32(self.scale).is_normal() => {}
            Elem::F16 => {
                return err(format!(
                "with f16 scores the scale is an f16 lane and must be a normal f16 number, got {}",
                self.scale
            ))
            }
            Elem::F8 => return err("the scores must be f32 or f16, not FP8".into()),
        }
        check_alignment(TAG, &[("input", self.input, 8), ("output", self.output, 8)])?;
        if let Some(at) = self.stats {
            check_alignment(TAG, &[("stats", at, 8)])?;
        }
        // Steps of `inputs_per_group` input strides and of one output
        // stride are `add` immediates (16 bits, signed).
        let most = 2 * ((i16::MAX as u32 / 2) & !7);
        let per = self.inputs_per_group();
        for (what, stride, row, most) in [
            ("input", self.input_stride, IN_ROW, most / per),
            ("output", self.output_stride, OUT_ROW, most),
        ] {
            let least = u64::from(row) * u64::from(self.rows);
            if u64::from(stride) < least || stride % 8 != 0 || stride > most {
                return err(format!(
                    "the {what} group stride {stride} must be a multiple of 8, at least \
                     {least} ({} rows of {row} bytes) and at most {most}",
                    self.rows,
                ));
            }
        }
        let a = Self::span(
            self.input,
            self.input_stride,
            per * self.groups,
            IN_ROW * self.rows,
        );
        let b = Self::span(
            self.output,
            self.output_stride,
            self.groups,
            OUT_ROW * self.rows,
        );
        // f16 scores may be overwritten in place: a group's words are
        // all read before any is written.
        let in_place = self.scores == Elem::F16
            && self.input == self.output
            && self.input_stride == self.output_stride;
        if a.0 < b.1 && b.0 < a.1 && !in_place {
            return err(
                "the input and output spans overlap (f16 scores may be the output itself, at the same stride)"
                    .into(),
            );
        }
        Ok(())
    }

    /// The `ld64` of pair `w` (of [`PAIRS`]) of an output group's row of
    /// input at `$m5`: the first four from input group `2g`, the others
    /// one input stride further.
    fn ld_pair(&self, pair: u8, w: u32) -> Inst {
        let word = if w < PAIRS / 2 {
            w
        } else {
            self.input_stride / 8 + w - PAIRS / 2
        };
        Self::ld64(pair, 5, word)
    }

    /// `ld64 $aPAIR, $mBASE, $mzero, word`.
    fn ld64(pair: u8, base: u8, word: u32) -> Inst {
        inst(
            "ld64",
            [
                op::a_pair(pair),
                op::m(base),
                op::mzero(),
                op::imm(i64::from(word)),
            ],
        )
    }

    /// `add $m5, $m5, 2 * input_stride`: the next output group's input.
    fn next_input(&self) -> Inst {
        inst(
            "add",
            [
                op::m(5),
                op::m(5),
                op::imm(i64::from(2 * self.input_stride)),
            ],
        )
    }

    /// Pass 1's group body: the f32 maximum of the group's 8 pairs into
    /// `$a2:3` (read at `$m5`, which then steps to the next group).
    fn emit_max_group(&self, e: &mut Emitter) -> u64 {
        let before = e.issues();
        let max = || inst("f32v2max", [op::a_pair(2), op::a_pair(2), op::a_pair(0)]);
        e.bundle(self.ld_pair(0, 0), inst("fnop", []));
        for w in 1..PAIRS {
            e.bundle(self.ld_pair(0, w), max());
        }
        e.bundle(self.next_input(), max());
        e.solo(inst("brnzdec", [op::m(3), op::sym(format!(".L{TAG}_max"))]));
        e.issues() - before
    }

    /// Pass 2's group body: per pair `e = exp(scale (x - m))` (`-m` in
    /// `$a10:11`, the scale in `$a6:7`), four pairs' `e`s at a time in
    /// `$a0:3`, summed into `$AACC` (`f16v8acc`) and stored with
    /// `st64step` at `$m6`; both pointers step to the next group.
    ///
    /// Software-pipelined one pair ahead: pair `w + 1`'s load issues with
    /// pair `w`'s subtraction, into the next of three registers
    /// ([`EXP_LOADS`]), so no bundle writes a register its other half
    /// reads; the stores, the input step and the loop branch take main
    /// slots beside the arithmetic. A group takes 37 issue slots (45 with
    /// a scale): 4 per pair (`f32v2add`, `f32v2tof16`, `f16v2exp`'s two),
    /// 2 `f16v8acc`, the first load, the last store and the branch.
    fn emit_exp_group(&self, e: &mut Emitter) -> u64 {
        let before = e.issues();
        let p = op::a_pair;
        let load = |w: u32| EXP_LOADS[w as usize % EXP_LOADS.len()];
        let nop = || inst("nop", []);
        let fnop = || inst("fnop", []);
        // `st64step $aQ:Q+1, $mzero, $m6+=, step`: half a quad of `e`s.
        let store = |q: u8, step: i64| {
            inst(
                "st64step",
                [op::a_pair(q), op::mzero(), op::m_inc(6), op::imm(step)],
            )
        };
        let acc = || inst("f16v8acc", [op::a_quad(0)]);
        // The next group's output, from the last store's address.
        let next_group = i64::from(self.output_stride / 8) - 3;
        e.bundle(self.ld_pair(load(0), 0), fnop());
        for w in 0..PAIRS {
            let (x, q) = (load(w), (w % 4) as u8);
            let next = if w + 1 < PAIRS {
                self.ld_pair(load(w + 1), w + 1)
            } else {
                nop()
            };
            e.bundle(next, inst("f32v2add", [p(x), p(x), p(10)]));
            if self.scale != 1.0 {
                e.bundle(nop(), inst("f32v2mul", [p(x), p(x), p(6)]));
            }
            let beside = match w {
                // The first quad's second half, before pair 6 overwrites it.
                4 => store(2, 1),
                // Pair 7's load issued with pair 6's subtraction.
                6 => self.next_input(),
                _ => nop(),
            };
            e.bundle(beside, inst("f32v2tof16", [op::a(q), p(x)]));
            e.bundle(nop(), inst("f16v2exp", [op::a(q), op::a(q)]));
            if q == 3 {
                // The quad's first half, before pair w + 1 overwrites it.
                e.bundle(store(0, 1), acc());
            }
        }
        e.bundle(store(2, next_group), fnop());
        e.bundle(
            inst("brnzdec", [op::m(3), op::sym(format!(".L{TAG}_exp"))]),
            fnop(),
        );
        e.issues() - before
    }

    /// Pass 1's group body with f16 scores: the maximum of the group's 4
    /// words into the four lanes of `$a2:3` (read at `$m5`, which then
    /// steps to the next group), the loads alternating between `$a0:1`
    /// and `$a4:5` one word ahead of the `f16v4max`.
    fn emit_max_group_f16(&self, e: &mut Emitter) -> u64 {
        let before = e.issues();
        let p = op::a_pair;
        let max = |x: u8| inst("f16v4max", [p(2), p(2), p(x)]);
        let load = |w: u32| Self::ld64(if w.is_multiple_of(2) { 0 } else { 4 }, 5, w);
        e.bundle(load(0), inst("fnop", []));
        for w in 1..4 {
            e.bundle(load(w), max(if w % 2 == 1 { 0 } else { 4 }));
        }
        e.bundle(
            inst(
                "add",
                [op::m(5), op::m(5), op::imm(i64::from(self.input_stride))],
            ),
            max(4),
        );
        e.solo(inst("brnzdec", [op::m(3), op::sym(format!(".L{TAG}_max"))]));
        e.issues() - before
    }

    /// Pass 2's group body with f16 scores: per word `e = exp(scale (x -
    /// m))` in four f16 lanes (`-m` in `$a8:9`, the scale in `$a12:13`),
    /// two words at a time a quad (`$a0:3`, then `$a4:7`) summed into
    /// `$AACC` (`f16v8acc`) and stored with `st64step` at `$m6`; all four
    /// words are loaded before the first store (so P may be S itself) and
    /// both pointers step to the next group.
    fn emit_exp_group_f16(&self, e: &mut Emitter) -> u64 {
        let before = e.issues();
        let p = op::a_pair;
        let nop = || inst("nop", []);
        let store = |q: u8, step: i64| {
            inst(
                "st64step",
                [op::a_pair(q), op::mzero(), op::m_inc(6), op::imm(step)],
            )
        };
        let next_group = i64::from(self.output_stride / 8) - 3;
        let scaled = f16::from_f32(self.scale) != f16::ONE;
        // Word `w` in `$a(2w):(2w+1)`: `- m`, the scale, the two `exp`s;
        // `main` beside each in turn (a main-slot instruction or `nop`).
        let word = |e: &mut Emitter, w: u8, main: &mut dyn FnMut(usize) -> Inst| {
            let r = 2 * w;
            let mut aux = vec![inst("f16v4add", [p(r), p(r), p(8)])];
            if scaled {
                aux.push(inst("f16v4mul", [p(r), p(r), p(12)]));
            }
            aux.push(inst("f16v2exp", [op::a(r), op::a(r)]));
            aux.push(inst("f16v2exp", [op::a(r + 1), op::a(r + 1)]));
            for (k, a) in aux.into_iter().enumerate() {
                e.bundle(main(k), a);
            }
        };
        e.bundle(Self::ld64(0, 5, 0), inst("fnop", []));
        // Word 0's arithmetic beside the other three words' loads and the
        // input's step.
        let mut loads = vec![
            Self::ld64(2, 5, 1),
            Self::ld64(4, 5, 2),
            Self::ld64(6, 5, 3),
            inst(
                "add",
                [op::m(5), op::m(5), op::imm(i64::from(self.input_stride))],
            ),
        ]
        .into_iter();
        let mut first = |_| loads.next().unwrap_or_else(nop);
        word(e, 0, &mut first);
        let rest: Vec<Inst> = loads.collect();
        let mut rest = rest.into_iter();
        word(e, 1, &mut |_| rest.next().unwrap_or_else(nop));
        e.bundle(store(0, 1), inst("f16v8acc", [op::a_quad(0)]));
        let mut second = Some(store(2, 1));
        word(e, 2, &mut |_| second.take().unwrap_or_else(nop));
        word(e, 3, &mut |_| nop());
        e.bundle(store(4, 1), inst("f16v8acc", [op::a_quad(4)]));
        e.bundle(store(6, next_group), inst("fnop", []));
        e.bundle(
            inst("brnzdec", [op::m(3), op::sym(format!(".L{TAG}_exp"))]),
            inst("fnop", []),
        );
        e.issues() - before
    }

    /// Pass 3's group body: the group's 16 f16 at `$m6` times `1/sum`
    /// (`$a10:11`, four f16 lanes), in place; `$m6` steps to the next group.
    /// Two words in flight (`$a0:1`, `$a2:3`): each word's load, product
    /// and store in three bundles, the loads and stores (8 main slots) the
    /// limit, 10 issue slots a group with the step and the branch.
    fn emit_norm_group(&self, e: &mut Emitter) -> u64 {
        let before = e.issues();
        let p = op::a_pair;
        let fnop = || inst("fnop", []);
        let mul = |q: u8| inst("f16v4mul", [p(q), p(q), p(10)]);
        let st = |q: u8, w: u32| inst("st64", [p(q), op::m(6), op::mzero(), op::imm(i64::from(w))]);
        e.bundle(Self::ld64(0, 6, 0), fnop());
        e.bundle(Self::ld64(2, 6, 1), mul(0));
        e.bundle(st(0, 0), mul(2));
        e.bundle(Self::ld64(0, 6, 2), fnop());
        e.bundle(st(2, 1), mul(0));
        e.bundle(Self::ld64(2, 6, 3), fnop());
        e.bundle(st(0, 2), mul(2));
        e.bundle(st(2, 3), fnop());
        e.bundle(
            inst(
                "add",
                [op::m(6), op::m(6), op::imm(i64::from(self.output_stride))],
            ),
            fnop(),
        );
        e.bundle(
            inst("brnzdec", [op::m(3), op::sym(format!(".L{TAG}_norm"))]),
            fnop(),
        );
        e.issues() - before
    }

    /// The worker: its issues when it has no rows, its row loop's counts
    /// and the three group bodies' issues.
    fn emit_worker(&self, e: &mut Emitter) -> (u64, launch::RowLoopCounts, [u64; 3]) {
        let p = op::a_pair;
        let groups_minus_one = i64::from(self.groups - 1);
        e.solo(load_state_word(op::m(2), 2)); // rows
        e.solo(inst("brz", [op::m(2), op::sym(format!(".L{TAG}_done"))]));
        let empty = e.issues() + 1;
        // The scale: f32 in `$a6:7`, or four f16 lanes in `$a12:13`.
        let scale = if self.scores == Elem::F16 { 12 } else { 6 };
        for s in [
            inst("sub", [op::m(2), op::m(2), op::imm(1)]),
            load_state_word(op::m(0), 0), // S row 0
            load_state_word(op::m(1), 1), // P row 0
            load_state_word(op::a(scale), 3),
            inst("mov", [op::a(scale + 1), op::a(scale)]),
        ] {
            e.solo(s);
        }
        // Pass 2 sums into `$AACC`, which a row leaves clear: clear it
        // for the first (an earlier launch may have left it in use).
        for k in 0..4 {
            e.solo(inst("f32v2gina", [op::a_pair(4), op::azeros(), op::imm(k)]));
        }
        if self.stats.is_some() {
            e.solo(load_state_word(op::m(4), 4)); // the stats row
        }
        e.aligned_label(&format!(".L{TAG}_row"));
        let setup = e.issues();
        // Pass 1: the maximum, from the row's first pair.
        e.solo(Self::ld64(2, 0, 0));
        e.solo(inst("mov", [op::m(5), op::m(0)]));
        e.solo(inst("setzi", [op::m(3), op::imm(groups_minus_one)]));
        e.aligned_label(&format!(".L{TAG}_max"));
        let f16_scores = self.scores == Elem::F16;
        let max = if f16_scores {
            self.emit_max_group_f16(e)
        } else {
            self.emit_max_group(e)
        };
        let negate = if f16_scores {
            vec![
                // The four lanes to the row's maximum in f32 (exact), both
                // lanes of $a4:5; negated into $a10:11, and as four f16
                // lanes into $a8:9 (exact: it was an f16 value).
                inst("f16v2tof32", [p(4), op::a(2)]),
                inst("f16v2tof32", [p(6), op::a(3)]),
                inst("f32v2max", [p(4), p(4), p(6)]),
                inst("mov", [op::a(6), op::a(5)]),
                inst("mov", [op::a(7), op::a(4)]),
                inst("f32v2max", [p(4), p(4), p(6)]),
                inst("f32v2sub", [p(10), op::azeros(), p(4)]),
                inst("f32v2tof16", [op::a(8), p(10)]),
                inst("mov", [op::a(9), op::a(8)]),
            ]
        } else {
            vec![
                // Both lanes to the row's maximum, negated into $a10:11.
                inst("mov", [op::a(4), op::a(3)]),
                inst("mov", [op::a(5), op::a(2)]),
                inst("f32v2max", [p(2), p(2), p(4)]),
                inst("f32v2sub", [p(10), op::azeros(), p(2)]),
            ]
        };
        for s in negate.into_iter().chain([
            inst("mov", [op::m(5), op::m(0)]),
            inst("mov", [op::m(6), op::m(1)]),
            inst("setzi", [op::m(3), op::imm(groups_minus_one)]),
        ]) {
            e.solo(s);
        }
        // Pass 2: exp and sum.
        e.aligned_label(&format!(".L{TAG}_exp"));
        let exp = if f16_scores {
            self.emit_exp_group_f16(e)
        } else {
            self.emit_exp_group(e)
        };
        for s in [
            // The sum of the accumulators (clearing them for the next
            // row) and of both lanes, its reciprocal as four f16 lanes.
            inst("f32v2gina", [p(8), op::azeros(), op::imm(0)]),
            inst("f32v2gina", [p(4), op::azeros(), op::imm(1)]),
            inst("f32v2add", [p(8), p(8), p(4)]),
            inst("f32v2gina", [p(4), op::azeros(), op::imm(2)]),
            inst("f32v2add", [p(8), p(8), p(4)]),
            inst("f32v2gina", [p(4), op::azeros(), op::imm(3)]),
            inst("f32v2add", [p(8), p(8), p(4)]),
            inst("mov", [op::a(4), op::a(9)]),
            inst("f32v2add", [p(8), p(8), p(4)]),
        ] {
            e.solo(s);
        }
        if self.stats.is_some() {
            // (-m, sum) while both are in registers.
            for s in [
                inst("mov", [op::a(11), op::a(8)]),
                inst("st64", [p(10), op::m(4), op::mzero(), op::imm(0)]),
                inst("add", [op::m(4), op::m(4), op::imm(8)]),
            ] {
                e.solo(s);
            }
        }
        let norm = if self.normalise {
            for s in [
                inst("f32oox", [op::a(4), op::a(8)]),
                inst("mov", [op::a(5), op::a(4)]),
                inst("f32v2tof16", [op::a(10), p(4)]),
                inst("mov", [op::a(11), op::a(10)]),
                inst("mov", [op::m(6), op::m(1)]),
                inst("setzi", [op::m(3), op::imm(groups_minus_one)]),
            ] {
                e.solo(s);
            }
            // Pass 3: normalise in place.
            e.aligned_label(&format!(".L{TAG}_norm"));
            self.emit_norm_group(e)
        } else {
            0
        };
        e.solo(inst(
            "add",
            [op::m(0), op::m(0), op::imm(i64::from(IN_ROW))],
        ));
        e.solo(inst(
            "add",
            [op::m(1), op::m(1), op::imm(i64::from(OUT_ROW))],
        ));
        let rows = launch::emit_end_row_loop(e, TAG, setup);
        (empty, rows, [max, exp, norm])
    }

    /// Index into S (the input's order, without gaps) of row `r`, column
    /// `j`.
    fn s_index(&self) -> impl Fn(usize, usize) -> usize {
        let rows = self.rows as usize;
        let w = match self.scores {
            Elem::F16 => 16,
            _ => 8,
        };
        move |r, j| (j / w * rows + r) * w + j % w
    }

    /// The scale the codelet multiplies by: f16 lanes with f16 scores.
    fn applied_scale(&self) -> f64 {
        match self.scores {
            Elem::F16 => f16::from_f32(self.scale).to_f64(),
            _ => f64::from(self.scale),
        }
    }

    /// Each row's maximum and its `exp`s `exp(scale (S[r, j] - m_r))`.
    fn exps(&self, s: &[f64]) -> Vec<(f64, Vec<f64>)> {
        let cols = (self.groups * GROUP) as usize;
        let s_at = self.s_index();
        let scale = self.applied_scale();
        (0..self.rows as usize)
            .map(|r| {
                let m = (0..cols)
                    .map(|j| s[s_at(r, j)])
                    .fold(f64::NEG_INFINITY, f64::max);
                let e = (0..cols)
                    .map(|j| (scale * (s[s_at(r, j)] - m)).exp())
                    .collect();
                (m, e)
            })
            .collect()
    }

    /// Float64 reference of `s` (the input's order without gaps:
    /// `[2 groups][rows][8]` f32 scores, `[groups][rows][16]` f16), in the
    /// output's order (`[groups][rows][16]`). Unnormalised (each row's
    /// `exp`s) where [`Self::normalise`] is off.
    pub fn reference(&self, s: &[f64]) -> Vec<f64> {
        let rows = self.rows as usize;
        let p_at = |r: usize, j: usize| (j / 16 * rows + r) * 16 + j % 16;
        let mut out = vec![0.0; s.len()];
        for (r, (_, e)) in self.exps(s).into_iter().enumerate() {
            let sum: f64 = if self.normalise { e.iter().sum() } else { 1.0 };
            for (j, e) in e.iter().enumerate() {
                out[p_at(r, j)] = e / sum;
            }
        }
        out
    }

    /// Float64 reference of the statistics of `s` (as [`SoftmaxPanels::reference`]
    /// takes it): per row `(-m_r, sum_j exp(scale (S[r, j] - m_r)))`.
    pub fn reference_stats(&self, s: &[f64]) -> Vec<(f64, f64)> {
        self.exps(s)
            .into_iter()
            .map(|(m, e)| (-m, e.iter().sum()))
            .collect()
    }

    /// Largest error of an output against the reference `want`, when the
    /// exponents `scale * (x - m)` are at most `spread` in magnitude: their
    /// f16 rounding (f32 scores: once, `spread 2^-12` relative in `e`, and
    /// in the sum; f16 scores: `x - m` and the scale's product, twice
    /// `spread 2^-11`), `f16v2exp`'s rounding, three f16 roundings (1/sum,
    /// the product, one ulp of slack) and f16's subnormal spacing.
    pub fn tolerance(&self, want: f64, spread: f64) -> f64 {
        let exponent = match self.scores {
            Elem::F16 => 2.0 * 2f64.powi(-10),
            _ => 2f64.powi(-12),
        };
        (2.0 * spread * exponent + 4.0 * 2f64.powi(-11)) * want + 2f64.powi(-24)
    }
}

impl Codelet for SoftmaxPanels {
    type Counts = SoftmaxPanelsCounts;

    /// Emits the launch (supervisor entry `main`, six workers).
    fn emit(&self, e: &mut Emitter) -> Result<SoftmaxPanelsCounts, CodeletError> {
        self.validate()?;
        let words = 4 + usize::from(self.stats.is_some());
        let supervisor = launch::emit_supervisor_and_worker_entry(e, TAG, words);
        let (empty, rows, group) = self.emit_worker(e);
        let shares = self.worker_rows();
        let offs = offsets(&shares);
        // S row, P row, rows, the scale (and the stats row).
        let states: [Vec<u32>; WORKERS] = std::array::from_fn(|w| {
            let mut words = vec![
                self.input + offs[w] * IN_ROW,
                self.output + offs[w] * OUT_ROW,
                shares[w],
                match self.scores {
                    Elem::F16 => self.scale_f16_bits(),
                    _ => self.scale.to_bits(),
                },
            ];
            words.extend(self.stats.map(|at| at + offs[w] * 8));
            words
        });
        let launch = launch::end_row_launch(e, TAG, &states, supervisor, empty, rows);
        Ok(SoftmaxPanelsCounts { launch, group })
    }

    fn cycles(&self, counts: &SoftmaxPanelsCounts) -> u64 {
        counts
            .launch
            .cycles(&self.worker_rows(), counts.repeated(self.groups))
    }
}
