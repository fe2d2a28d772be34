//! GELU from the FP8 AMP's unscaled f16 output straight to FP8 input
//! panels: the FP8 MLP block's activation between its two products.
//!
//! The `f8v8hihov4amp` AMP multiplies unscaled FP8 codes, so its f16
//! output groups hold `u` with true `x = u * 2^e` (`e` =
//! [`GeluF8::input_exp`], known to the lowering). The next product wants
//! FP8 codes in panels of 32 channels, that is two 16-channel output
//! groups side by side: for pair `q` and row `r`, bytes 0..16 are the codes
//! of group `2q` row `r` and bytes 16..32 those of group `2q + 1`, each
//! `code = f8(gelu(x) * 2^-s)` with `s` = [`GeluF8::output_scale`].
//!
//! **Numerics, tanh form** ([`sequence`] models both forms bit-exactly;
//! [`GeluF8::tolerance`] bounds them against float64). FP8's 3 mantissa
//! bits (a step of 2^-4 relative) leave room for f16 arithmetic
//! throughout, in the form poplibs' GELU kernel uses
//! (`lib/popnn/codelets/asm/NonLinearityLoop_gelu.S`: `f16v2tanh`, then
//! `0.5 x (1 + tanh)`), on four lanes a word:
//! `x = u 2^e` (exact for a normal x), `z = x (c0 + c1 x^2)` with
//! `c0 = sqrt(2/pi)`, `c1 = 0.044715 c0` (f16 constants: four products
//! and an add, each rounded to f16), `t = tanh z` (`f16v2tanh`, rounded),
//! `h = x t + x` (two more roundings), and
//! `code = f8(h 2^-(s + 1))` (`f16v4tof8 ..., s + 1`: the 1/2 of GELU is in
//! the conversion's scale, exactly). `1 + tanh z` cancels for negative x,
//! where GELU is small: the error stays below `|x| 2^-10` absolute, under
//! FP8's resolution at those values (its subnormal spacing `2^(s-10)`)
//! wherever that matters. Where `x^2` overflows f16 (|x| >= 256), `z` is
//! infinite and `h` is `2x` or 0, GELU's limits; a true input beyond
//! f16's range (|x| > 65504, only where `e > 0`) becomes the NaN code, as
//! in the erf form. The f16 sigmoid form of
//! [`super::gelu`] (f32 polynomial, `f16v2sigm`) costs 20 issue slots a
//! word with the conversion; this one 12.
//!
//! **Numerics, erf form.** Its degree-10 polynomial cannot take the
//! exponent into its coefficients (`c10 2^(10e)` leaves f32 for the
//! exponents FP8 products have, e around -14), so each f32 pair is first
//! scaled to the true `x = u 2^e` (`f32v2mul`, exact in f32: `u` has 11
//! bits), then the f16 GELU's erf sequence runs on `x`, rounds to f16 and
//! converts with `f16v4tof8 ..., s`: the f16 erf GELU's roundings, then
//! one FP8 rounding. True values beyond f16's range (|x| > 65504) would
//! become the NaN code.
//!
//! **Work split.** Workers split the rows ([`split`]) and each loops over
//! all pairs (outer loop, `brnzdec`) with one `rpt` over 2 x its rows, so
//! one launch covers every pair. A `rpt` pass is half a row of the pair:
//! the 4 words of one group, each the f16 GELU's auxiliary instructions
//! plus the conversion, software-pipelined by one word (a word's first
//! free main slot stores the previous word's four codes with `st32step`,
//! its last bundle loads the next word), and one bundle that stores the
//! last word's codes. Passes alternate between the pair's two groups:
//! the last word of a pass swaps the two group pointers (three `mov`s in
//! free main slots) before it loads the next word, so the next pass reads
//! the other group, and the codes of the passes, in order, are the rows'
//! 32 output bytes, so the output pointer only steps. Tanh form per 16
//! values: 4 x (8 + 2 tanh) + 1 bundles, 4 x 12 + 1 = 49 issues, 3.06
//! per value (81 and 5.06 with the f16 GELU's sigmoid form and f32
//! polynomial). Erf form: 4 x
//! (2 x 30 + 1) + 1 = 245 issues per 16 values (`rpt` bodies hold at most
//! 256 bundles).
//!
//! **In place.** With `output == input` and `pair_stride == 2 *
//! group_stride`, pair `q`'s output overlays group `2q`: the store of a
//! row's word `k` lands in bytes `4k..4k+4` of group `2q`'s row, inside
//! its word `k/2`, which was loaded before (stores trail loads by one
//! word); group `2q + 1` is never written. Any other placement must not
//! overlap the input. Each pair's last load reads the word after the
//! worker's rows of the pair's first group, which lies inside the input
//! (the group stride is at least the rows); its value is not used.

use half::f16;

use super::emitter::{inst, ld64_next, load_state_word, op, Emitter, Inst};
use super::gelu::{erf_table, erf_tolerance, sequence_f32, Gelu, GeluForm, DEGREE};
use super::launch::{self, split, SupervisorCounts, WORKERS};
use super::program::Codelet;
use super::{check_alignment, CodeletError};
use ipuc_ipu_arch::float8::{encode_scaled, SCALE_RANGE};

/// Bytes of one row of one group: 16 f16 (input) or 2 x 16 codes (output).
pub const ROW_BYTES: u32 = 32;
/// 64-bit words of one group's row: one `rpt` pass.
const WORDS_PER_PASS: usize = 4;
/// The erf form's table index of `2^e` (after [`erf_table`]'s entries).
const ERF_SCALE_INDEX: usize = DEGREE + 4;

/// One GELU launch from unscaled f16 output groups to FP8 panels.
#[derive(Clone, Debug)]
pub struct GeluF8 {
    /// Formula.
    pub form: GeluForm,
    /// Rows (split over the workers).
    pub rows: u32,
    /// Pairs of input groups (output panels).
    pub pairs: u32,
    /// Group `g` row `r` (16 f16) at `input + g * group_stride + 32 r`;
    /// 8-byte aligned.
    pub input: u32,
    /// Bytes between groups: a multiple of 8, at least `32 * rows`.
    pub group_stride: u32,
    /// The input's exponent: true `x = u * 2^input_exp`.
    pub input_exp: i32,
    /// Pair `q` row `r` (32 codes) at `output + q * pair_stride + 32 r`;
    /// 4-byte aligned.
    pub output: u32,
    /// Bytes between pairs: a multiple of 4, at least `32 * rows`.
    pub pair_stride: u32,
    /// The output's tensor scale: `code = f8(gelu(x) * 2^-output_scale)`.
    pub output_scale: i32,
}

/// Issue counts of a [`GeluF8`] launch, as emitted (independent of the
/// sizes, scales and addresses: the planner can take them from one probe
/// instance, [`GeluF8::probe_counts`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct GeluF8Counts {
    /// The supervisor's.
    pub supervisor: SupervisorCounts,
    /// A worker with no rows (it branches to its exit).
    pub empty: u64,
    /// Before the pair loop.
    pub setup: u64,
    /// Per pair, outside the `rpt` body.
    pub per_pair: u64,
    /// One pass of the `rpt` body: half a row of a pair (16 values).
    pub body: u64,
    /// After the pair loop.
    pub exit: u64,
}

impl GeluF8Counts {
    /// Issues of a worker with `rows` rows of each of `pairs` pairs.
    pub fn worker_issues(&self, rows: u32, pairs: u32) -> u64 {
        match rows {
            0 => self.empty,
            n => {
                self.setup
                    + self.exit
                    + u64::from(pairs) * (self.per_pair + 2 * u64::from(n) * self.body)
            }
        }
    }

    /// Tile cycles of a launch over `rows` rows (split over the workers)
    /// and `pairs` pairs.
    pub fn cycles(&self, rows: u32, pairs: u32) -> u64 {
        self.supervisor
            .cycles_per_worker(&split(rows).map(|n| self.worker_issues(n, pairs)))
    }
}

/// The tanh form's constants `(c0, c1)` in float64: `sqrt(2/pi)` and
/// `0.044715 sqrt(2/pi)` (`z = x (c0 + c1 x^2)` is the tanh argument).
fn tanh_form_constants_f64() -> (f64, f64) {
    let c0 = (2.0 / std::f64::consts::PI).sqrt();
    (c0, 0.044715 * c0)
}

/// The tanh form's constants as the codelet holds them, rounded to f16.
pub fn tanh_f16_constants() -> (f16, f16) {
    let (c0, c1) = tanh_form_constants_f64();
    (f16::from_f64(c0), f16::from_f64(c1))
}

/// `2^e` as an f16 (normal or subnormal: a power of two is exact down to
/// `2^-24`), the tanh form's scaling of the input.
fn f16_power(e: i32) -> Option<f16> {
    (-24..=15).contains(&e).then(|| f16::from_f64(2f64.powi(e)))
}

/// `2^e` as an f32, if it is a normal one (the erf form's scaling).
fn f32_power(e: i32) -> Option<f32> {
    (-126..=127).contains(&e).then(|| 2f32.powi(e))
}

/// The codelet's instruction sequence on one unscaled input `u`,
/// operation by operation as the simulator executes it (see the module
/// doc); returns the code. The parameters must be valid
/// ([`GeluF8::validate`]).
pub fn sequence(form: GeluForm, u: f16, input_exp: i32, output_scale: i32) -> u8 {
    match form {
        GeluForm::Tanh => {
            let h16 = |v: f64| f16::from_f64(v).to_f64();
            let (c0, c1) = tanh_f16_constants();
            let scale = f16_power(input_exp).expect("valid parameters have an f16 2^e");
            let x = h16(u.to_f64() * scale.to_f64());
            let p = h16(h16(h16(x * x) * c1.to_f64()) + c0.to_f64());
            let t = h16(h16(p * x).tanh());
            let h = h16(h16(x * t) + x);
            encode_scaled(h, output_scale + 1)
        }
        GeluForm::Erf => {
            let scale = f32_power(input_exp).expect("valid parameters have a normal 2^e");
            let x = u.to_f32() * scale;
            let v = f16::from_f32(sequence_f32(GeluForm::Erf, x));
            encode_scaled(v.to_f64(), output_scale)
        }
    }
}

impl GeluF8 {
    fn tag(&self) -> &'static str {
        match self.form {
            GeluForm::Erf => "gelu_erf_f8",
            GeluForm::Tanh => "gelu_tanh_f8",
        }
    }

    /// The scale of the conversion: `output_scale + 1` for the tanh form
    /// (its f16 result is twice GELU), `output_scale` for erf.
    pub fn conversion_scale(&self) -> i32 {
        match self.form {
            GeluForm::Tanh => self.output_scale + 1,
            GeluForm::Erf => self.output_scale,
        }
    }

    /// Rows per worker.
    pub fn worker_rows(&self) -> [u32; WORKERS] {
        split(self.rows)
    }

    /// Whether the output overlays the input as the in-place form allows.
    pub fn in_place(&self) -> bool {
        self.output == self.input && u64::from(self.pair_stride) == 2 * u64::from(self.group_stride)
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), CodeletError> {
        let tag = self.tag();
        let err = |m: String| Err(CodeletError::new(tag, m));
        if self.rows == 0 || self.pairs == 0 {
            return err(format!(
                "needs rows > 0 and pairs > 0, got {} rows and {} pairs",
                self.rows, self.pairs
            ));
        }
        // The `rpt` count (two passes per row) is 16 bits.
        if 2 * self.worker_rows()[0] > 0xffff {
            return err(format!("{} rows give a worker over 32767", self.rows));
        }
        if !SCALE_RANGE.contains(&self.conversion_scale()) {
            return err(format!(
                "the conversion's scale {} (output scale {}, input exponent {}) \
                 is outside {SCALE_RANGE:?}",
                self.conversion_scale(),
                self.output_scale,
                self.input_exp
            ));
        }
        let representable = match self.form {
            GeluForm::Tanh => f16_power(self.input_exp).is_some(),
            GeluForm::Erf => f32_power(self.input_exp).is_some(),
        };
        if !representable {
            return err(format!(
                "input exponent {} leaves the range of the input's scaling (the tanh form's 2^e \
                 in f16: -24..=15; the erf form's in f32's normal range)",
                self.input_exp
            ));
        }
        let row_span = u64::from(ROW_BYTES) * u64::from(self.rows);
        for (what, stride, align) in [
            ("group", self.group_stride, 8),
            ("pair", self.pair_stride, 4),
        ] {
            if u64::from(stride) < row_span || !stride.is_multiple_of(align) {
                return err(format!(
                    "{what} stride {stride} must be a multiple of {align} and \
                     at least 32 x {} rows = {row_span} bytes",
                    self.rows
                ));
            }
        }
        let input_end = u64::from(self.input)
            + (2 * u64::from(self.pairs) - 1) * u64::from(self.group_stride)
            + row_span;
        let output_end = u64::from(self.output)
            + (u64::from(self.pairs) - 1) * u64::from(self.pair_stride)
            + row_span;
        let overlap = u64::from(self.output) < input_end && u64::from(self.input) < output_end;
        if overlap && !self.in_place() {
            return err(format!(
                "the output 0x{:x}..0x{output_end:x} overlaps the input \
                 0x{:x}..0x{input_end:x}: place it apart, or exactly in place \
                 (output = input, pair stride = 2 x group stride)",
                self.output, self.input
            ));
        }
        check_alignment(tag, &[("input", self.input, 8), ("output", self.output, 4)])
    }

    /// The issue counts of `form` (they do not depend on the sizes,
    /// scales or addresses: one small instance is emitted and counted).
    pub fn probe_counts(form: GeluForm) -> Result<GeluF8Counts, CodeletError> {
        GeluF8 {
            form,
            rows: 1,
            pairs: 1,
            input: 0x80000,
            group_stride: ROW_BYTES,
            input_exp: 0,
            output: 0x80000,
            pair_stride: 2 * ROW_BYTES,
            output_scale: 0,
        }
        .counts()
    }

    /// Float64 GELU of the true input `u * 2^input_exp`.
    pub fn reference(&self, u: f16) -> f64 {
        self.form.reference(u.to_f64() * 2f64.powi(self.input_exp))
    }

    /// Largest difference from [`GeluF8::reference`] (`want`) the decoded
    /// output (`code * 2^output_scale`) may have for input `u`, before the
    /// FP8 rounding: for the tanh form (the module doc's sequence, at
    /// `x = u 2^e` and `z` its tanh argument) `z`'s six relative roundings
    /// (four operations, two constants) moving `tanh` by `|z| sech^2 z`
    /// times them, `tanh`'s own rounding and the two of `h`, halved, and
    /// the input's f16 subnormal spacing; for erf the f16 erf GELU's bound
    /// at `x`. Then the FP8 rounding: half a step of its 3 mantissa bits
    /// (2^-4 relative) or of its subnormal spacing (2^(s-10)). Saturation
    /// (|gelu| beyond 240 * 2^s) is not covered: the scale must leave room.
    pub fn tolerance(&self, u: f16, want: f64) -> f64 {
        let x = u.to_f64() * 2f64.powi(self.input_exp);
        let tol16 = match self.form {
            GeluForm::Tanh => {
                let (c0, c1) = tanh_form_constants_f64();
                let z = x * (c0 + c1 * x * x);
                let sech2 = if z.abs() > 20.0 {
                    0.0
                } else {
                    1.0 / z.cosh().powi(2)
                };
                x.abs() * (3.0 * 2f64.powi(-11) * z.abs() * sech2 + 2f64.powi(-11))
                    + want.abs() * 2f64.powi(-11)
                    + 2f64.powi(-24)
            }
            GeluForm::Erf => erf_tolerance(x, want),
        };
        tol16 + 2f64.powi(-4) * (want.abs() + tol16) + 2f64.powi(self.output_scale - 11)
    }

    /// One word's auxiliary instructions, each with the constant-table
    /// index it reads through `$a12:13`, ending with the conversion; and
    /// the register the word's four codes end in.
    fn word_ops(&self) -> (Vec<(Inst, Option<usize>)>, u8) {
        let scale = op::imm(i64::from(self.conversion_scale()));
        match self.form {
            GeluForm::Tanh => {
                // u in $a0:1; 2^e, c1, c0 in four lanes of $a6:7,
                // $a10:11, $a12:13; x in $a2:3, z and t in $a4:5, h in
                // $a8:9.
                let p = op::a_pair;
                let f16v4 = |m: &'static str, d: u8, a: u8, b: u8| inst(m, [p(d), p(a), p(b)]);
                let ops = vec![
                    f16v4("f16v4mul", 2, 0, 6),
                    f16v4("f16v4mul", 4, 2, 2),
                    f16v4("f16v4mul", 4, 4, 10),
                    f16v4("f16v4add", 4, 4, 12),
                    f16v4("f16v4mul", 4, 4, 2),
                    inst("f16v2tanh", [op::a(4), op::a(4)]),
                    inst("f16v2tanh", [op::a(5), op::a(5)]),
                    f16v4("f16v4mul", 4, 4, 2),
                    f16v4("f16v4add", 8, 4, 2),
                    inst("f16v4tof8", [op::a(8), p(8), scale]),
                ];
                (ops.into_iter().map(|i| (i, None)).collect(), 8)
            }
            GeluForm::Erf => {
                let mut ops = Vec::new();
                for half in 0..2 {
                    let mut pair = Gelu::pair_ops(half).into_iter();
                    // The f16 -> f32 conversion, then x = u 2^e in f32.
                    ops.extend(pair.next());
                    ops.push((
                        inst("f32v2mul", [op::a_pair(4), op::a_pair(4), op::a_pair(12)]),
                        Some(ERF_SCALE_INDEX),
                    ));
                    ops.extend(pair);
                }
                ops.push((inst("f16v4tof8", [op::a(2), op::a_pair(2), scale]), None));
                (ops, 2)
            }
        }
    }

    /// The `rpt` body: one pass of [`WORDS_PER_PASS`] words (`$m5` the
    /// group being read, `$m6` the other, `$m7` the output, `$m4` the
    /// constant table, the first word in `$a0:1`), then the last word's
    /// store.
    fn pass_body(&self) -> Vec<(Inst, Inst)> {
        let (ops, code) = self.word_ops();
        let store = || {
            inst(
                "st32step",
                [op::a(code), op::mzero(), op::m_inc(7), op::imm(1)],
            )
        };
        let nop = || inst("nop", []);
        let last = ops.len() - 1;
        let mut body = Vec::new();
        for k in 0..WORDS_PER_PASS {
            // Main slots: the constant the next bundle reads, the next
            // word in the last one, the previous word's store and (in the
            // pass's last word) the pointer swap in the first free ones.
            let mut main: Vec<Option<Inst>> = (0..ops.len())
                .map(|j| {
                    let constant = ops.get(j + 1).and_then(|(_, c)| *c);
                    constant.map(|k| {
                        inst(
                            "ld64",
                            [op::a_pair(12), op::m(4), op::mzero(), op::imm(k as i64)],
                        )
                    })
                })
                .collect();
            debug_assert!(main[last].is_none() && ops[0].1.is_none());
            main[last] = Some(ld64_next(0, 5));
            let mut extra = Vec::new();
            if k > 0 {
                extra.push(store());
            }
            if k == WORDS_PER_PASS - 1 {
                extra.extend([
                    inst("mov", [op::m(11), op::m(5)]),
                    inst("mov", [op::m(5), op::m(6)]),
                    inst("mov", [op::m(6), op::m(11)]),
                ]);
            }
            let mut extra = extra.into_iter();
            for slot in main.iter_mut().filter(|m| m.is_none()) {
                match extra.next() {
                    Some(i) => *slot = Some(i),
                    None => break,
                }
            }
            debug_assert!(extra.next().is_none());
            body.extend(
                main.into_iter()
                    .zip(&ops)
                    .map(|(m, (a, _))| (m.unwrap_or_else(nop), a.clone())),
            );
        }
        body.push((store(), inst("fnop", [])));
        body
    }
}

impl Codelet for GeluF8 {
    type Counts = GeluF8Counts;

    /// Emits the launch (supervisor entry `main`, six workers) and returns
    /// the issue counts its estimate is made of.
    fn emit(&self, e: &mut Emitter) -> Result<GeluF8Counts, CodeletError> {
        self.validate()?;
        let tag = self.tag();
        let supervisor = launch::emit_supervisor_and_worker_entry(e, tag, 6);
        let done = format!(".L{tag}_done");
        let pair = format!(".L{tag}_pair");
        // Vertex state: input and output of the worker's first row, rows,
        // pairs, group stride, pair stride.
        e.solo(load_state_word(op::m(2), 2));
        e.solo(inst("brz", [op::m(2), op::sym(done.clone())]));
        let empty = e.issues() + 1;
        e.load_state(&[(0, 0), (1, 1), (3, 3), (10, 5)]);
        for s in [
            // Two passes per row; then $m2 is the group stride.
            inst("add", [op::m(8), op::m(2), op::m(2)]),
            load_state_word(op::m(2), 4),
            inst("add", [op::m(9), op::m(2), op::m(2)]),
            inst("sub", [op::m(3), op::m(3), op::imm(1)]),
            inst("setzi", [op::m(4), op::sym(format!("{tag}_constants"))]),
        ] {
            e.solo(s);
        }
        if self.form == GeluForm::Tanh {
            // 2^e, c1 and c0 in four f16 lanes each.
            for (k, pair) in [6u8, 10, 12].into_iter().enumerate() {
                e.solo(inst(
                    "ld64",
                    [op::a_pair(pair), op::m(4), op::mzero(), op::imm(k as i64)],
                ));
            }
        }
        e.aligned_label(&pair);
        let setup = e.issues();
        for s in [
            inst("mov", [op::m(5), op::m(0)]),
            inst("add", [op::m(6), op::m(0), op::m(2)]),
            inst("mov", [op::m(7), op::m(1)]),
            ld64_next(0, 5),
        ] {
            e.solo(s);
        }
        let body = e.rpt(op::m(8), tag, self.pass_body());
        for s in [
            inst("add", [op::m(0), op::m(0), op::m(9)]),
            inst("add", [op::m(1), op::m(1), op::m(10)]),
            inst("brnzdec", [op::m(3), op::sym(pair)]),
        ] {
            e.solo(s);
        }
        let per_pair = e.issues() - setup;
        e.label(&done);
        e.solo(inst("exitz", [op::mzero()]));
        let exit = e.issues() - setup - per_pair;
        let states = launch::worker_states(&self.worker_rows(), |first, count| {
            vec![
                self.input + first * ROW_BYTES,
                self.output + first * ROW_BYTES,
                count,
                self.pairs,
                self.group_stride,
                self.pair_stride,
            ]
        });
        launch::emit_vertex_state(e, tag, &states);
        e.directive("align", &[op::imm(8)]);
        e.label(&format!("{tag}_constants"));
        match self.form {
            GeluForm::Tanh => {
                let (c0, c1) = tanh_f16_constants();
                let lanes = |h: f16| u32::from(h.to_bits()) * 0x1_0001;
                let power = f16_power(self.input_exp).expect("validated");
                for v in [power, c1, c0] {
                    e.words(&[lanes(v), lanes(v)]);
                }
            }
            GeluForm::Erf => {
                // Each value twice (one per lane), 2^e last.
                let mut table = erf_table();
                debug_assert_eq!(table.len(), ERF_SCALE_INDEX);
                table.push(f32_power(self.input_exp).expect("validated"));
                for v in table {
                    e.words(&[v.to_bits(), v.to_bits()]);
                }
            }
        }
        Ok(GeluF8Counts {
            supervisor,
            empty,
            setup,
            per_pair,
            body,
            exit,
        })
    }

    fn cycles(&self, counts: &GeluF8Counts) -> u64 {
        counts.cycles(self.rows, self.pairs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(form: GeluForm, input_exp: i32, output_scale: i32) -> GeluF8 {
        GeluF8 {
            form,
            rows: 1,
            pairs: 1,
            input: 0x80000,
            group_stride: 32,
            input_exp,
            output: 0x90000,
            pair_stride: 32,
            output_scale,
        }
    }

    #[test]
    fn the_sequences_meet_their_tolerance_on_every_f16() {
        // Every finite f16 input at exponents that scale down (as FP8
        // products do), not at all and up; the tolerance is approached
        // somewhere, so it is not loose.
        for form in [GeluForm::Tanh, GeluForm::Erf] {
            for (input_exp, output_scale) in [(-14, -5), (-4, -2), (0, 0), (3, 4)] {
                let g = launch(form, input_exp, output_scale);
                g.validate().unwrap();
                let mut used: f64 = 0.0;
                for bits in 0..=u16::MAX {
                    let u = f16::from_bits(bits);
                    let want = g.reference(u);
                    // Saturated codes and f16 overflow of the true value
                    // are outside the tolerance's scope.
                    let x = u.to_f64() * 2f64.powi(input_exp);
                    if !u.is_finite()
                        || want.abs() > 200.0 * 2f64.powi(output_scale)
                        || x.abs() > 65504.0
                    {
                        continue;
                    }
                    let code = sequence(form, u, input_exp, output_scale);
                    let got = ipuc_ipu_arch::float8::decode_scaled(code, output_scale);
                    let tol = g.tolerance(u, want);
                    assert!(
                        (got - want).abs() <= tol,
                        "{form:?} e {input_exp} s {output_scale}: gelu({u} * 2^e) = {got}, \
                         want {want}, tolerance {tol:e}"
                    );
                    used = used.max((got - want).abs() / tol);
                }
                assert!(
                    used > 0.5,
                    "{form:?}: the tolerance is never approached ({used})"
                );
            }
        }
    }

    #[test]
    fn the_tanh_sequence_depends_on_the_true_input_alone() {
        // The tanh form scales u to x = u 2^e first (exact where x is a
        // normal f16), so the code is the same for every (u, e) giving
        // that x: the unscaled AMP output and a true input agree.
        for e in [-14, -3, 2] {
            let mut compared = 0;
            for bits in (0..=u16::MAX).step_by(7) {
                let u = f16::from_bits(bits);
                let x = f16::from_f64(u.to_f64() * 2f64.powi(e));
                if !u.is_finite() || !x.is_normal() || x.to_f64() != u.to_f64() * 2f64.powi(e) {
                    continue;
                }
                assert_eq!(
                    sequence(GeluForm::Tanh, u, e, -3),
                    sequence(GeluForm::Tanh, x, 0, -3),
                    "u {u}, e {e}"
                );
                compared += 1;
            }
            assert!(compared > 3000, "{compared}");
        }
    }

    #[test]
    fn parameters_are_checked() {
        let tanh = |e, s| launch(GeluForm::Tanh, e, s);
        // The unscaled tanh launch with one field changed.
        let edited = |edit: fn(&mut GeluF8)| {
            let mut g = tanh(0, 0);
            edit(&mut g);
            g
        };
        // The erf form converts true values: its scale is the output's.
        launch(GeluForm::Erf, -20, 12).validate().unwrap();
        // Exactly in place is allowed.
        GeluF8 {
            output: 0x80000,
            pair_stride: 64,
            ..tanh(0, 0)
        }
        .validate()
        .unwrap();
        for (g, want) in [
            (tanh(-20, 31), "outside -31..=31"),
            (launch(GeluForm::Erf, -20, 32), "outside -31..=31"),
            (tanh(16, 20), "the tanh form's 2^e"),
            (launch(GeluForm::Erf, -130, 0), "normal range"),
            (edited(|g| g.rows = 2), "at least 32 x 2 rows"),
            (edited(|g| g.pairs = 0), "pairs > 0"),
            (edited(|g| g.output = 0x80010), "overlaps the input"),
            (edited(|g| g.output = 0x90002), "4-byte aligned"),
        ] {
            let message = g.validate().expect_err(want).to_string();
            assert!(message.contains(want), "{message}");
        }
    }

    #[test]
    fn the_probe_counts_serve_every_size() {
        // The planner's counts from the probe equal those of a large
        // instance, and give its estimate.
        for form in [GeluForm::Tanh, GeluForm::Erf] {
            let g = GeluF8 {
                form,
                rows: 50,
                pairs: 3,
                input: 0x80000,
                group_stride: 1600,
                input_exp: -13,
                output: 0x90000,
                pair_stride: 1604,
                output_scale: -4,
            };
            let probe = GeluF8::probe_counts(form).unwrap();
            assert_eq!(probe, g.counts().unwrap());
            assert_eq!(probe.cycles(50, 3), g.estimate_cycles().unwrap());
        }
    }
}
