//! GELU on f16 tensors, in the erf form `x Phi(x) = x/2 (1 + erf(x / sqrt 2))`
//! or the tanh form `x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.
//!
//! **Tanh form**, with the transcendental poplibs' GELU kernel uses
//! (`lib/popnn/codelets/asm/NonLinearityLoop_gelu.S` issues `f16v2tanh`
//! and then `0.5 x (1 + tanh)`): we use the same identity in the form
//! `x/2 (1 + tanh(z/2)) = x sigmoid(z)` with
//! `z = x (c0 + c1 x^2)`, `c0 = 2 sqrt(2/pi)`, `c1 = 0.044715 c0`, and
//! issue `f16v2sigm`, which avoids the cancellation of `1 + tanh` for
//! negative x (poplibs' form loses all relative accuracy there). Per f32
//! pair: `f16v2tof32`, `x^2`, `c1 x^2 + c0` (`f32v2axpy`, `$TAS = c1`),
//! `* x`, `f32v2tof16`; then per word two `f16v2sigm` and one `f16v4mul`
//! by x: 11 bundles and 2 sigmoids (2 x 4 issue slots,
//! `MachineModel::transcendental_issues`), 19 issues per 4 halves
//! against 59 for the polynomial the codelet used before. Error: `z`
//! rounded to f16 (relative 2^-11, moving the sigmoid by
//! `|z| (1 - sigmoid(z))` times that), the sigmoid's and the product's f16
//! roundings ([`Gelu::tolerance`]; [`sequence_f32`] models it bit-exactly).
//! Software-pipelined: the first word runs before the `rpt`, which stores
//! the previous word's two result halves in its first two bundles.
//!
//! **Erf form**: `GELU(x) = (x + a s(a)) / 2` with `a = |x|` and
//! `s(a) = erf(a / sqrt 2)` a degree-10 polynomial `P` in `min(a, 4.5)`,
//! evaluated by Horner in f32, then clamped with `min(P, 1)`. `P`
//! interpolates `s(a) (1 + 2^-18) / s(4.5)` at the 11 Chebyshev-Lobatto
//! points of [0, 4.5]: the endpoint value is just above 1, so for
//! `|x| >= 4.5` the clamp gives exactly 1 and the result is exactly
//! `relu(x)` (the true GELU differs by at most `1.5e-5` there). Measured
//! maximum error of the f32 sequence against float64 over x in [-10, 10]
//! step 1/2000 and |x| up to 6e4: 2.4e-5 * max(1, |x|). Poplibs' erf GELU
//! is a compiled C++ vertex; its elementwise erf (`popops`
//! `elemwiseUnaryCodelets.cpp`, Hastings' approximation) issues `f32oox`
//! and `f32exp` per value plus a degree-5 polynomial, about 33 issues per
//! f32 pair under poplibs' costs against this polynomial's 29.5, so the
//! erf form keeps it. Per 64-bit word each of the two f32 pairs takes
//! `2 * 10 + 9` auxiliary instructions; the main slots load the next
//! constant one bundle before it is used, load the next input word and
//! store the results, so a word is `4 * 10 + 19` bundles.
//!
//! Loads read one input word past each worker's share.

use half::f16;

use super::emitter::{inst, ld64_next, op, Emitter, Inst};
use super::launch::{self, split, StreamCounts, WORKERS};
use super::program::Codelet;
use super::{check_alignment, CodeletError};
use ipuc_dialects::ipu::Operand;

/// Which GELU formula.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GeluForm {
    /// `x/2 (1 + erf(x / sqrt 2))` (ONNX `Gelu`, approximate="none").
    Erf,
    /// `x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))` (approximate="tanh").
    Tanh,
}

/// Polynomial degree.
pub const DEGREE: usize = 10;
/// Upper end of the fitted range; |x| is clamped to it.
pub const CLAMP: f32 = 4.5;

/// Coefficients `c0..c10` of the erf form's `P(a)` (monomial in a).
const ERF_COEFFS: [f32; DEGREE + 1] = [
    1.543_903_9e-16,
    0.798_214_6,
    -0.004_731_274_7,
    -0.112_681_41,
    -0.039_154_872,
    0.059_758_224,
    -0.022_178_974,
    0.003_678_709_3,
    -0.000_209_304_77,
    -1.324_752e-5,
    1.610_257_6e-6,
];

/// Documented bound: |error| <= this * max(1, |x|) for the erf form's f32 sequence.
pub const MAX_ERROR: f64 = 2.5e-5;

/// The tanh form's `c0 = 2 sqrt(2/pi)` and `c1 = 0.044715 c0` (`$TAS`):
/// `z = x (c0 + c1 x^2)` is twice the tanh argument.
fn tanh_form_constants() -> (f32, f32) {
    let c0 = 2.0 * (2.0 / std::f64::consts::PI).sqrt();
    (c0 as f32, (0.044715 * c0) as f32)
}

impl GeluForm {
    /// Float64 GELU (the tanh form as `x sigmoid(2 u)`, equal to
    /// `x/2 (1 + tanh u)` without its cancellation for negative x).
    pub fn reference(self, x: f64) -> f64 {
        match self {
            GeluForm::Erf => 0.5 * x * (1.0 + libm::erf(x / std::f64::consts::SQRT_2)),
            GeluForm::Tanh => {
                let k = (2.0 / std::f64::consts::PI).sqrt();
                x / (1.0 + (-2.0 * k * (x + 0.044715 * x * x * x)).exp())
            }
        }
    }
}

/// The codelet's instruction sequence on one value, operation by operation
/// as the simulator executes it. Erf form: f32 throughout. Tanh form: `x`
/// is an f16 value (the input), `z` in f32, rounded to f16 for
/// `f16v2sigm` (the float64 sigmoid rounded to f16), the product in f16.
pub fn sequence_f32(form: GeluForm, x: f32) -> f32 {
    match form {
        GeluForm::Erf => {
            let c = &ERF_COEFFS;
            let a = x.max(0.0 - x);
            let t = a.min(CLAMP);
            let mut p = t * c[DEGREE] + c[DEGREE - 1];
            for k in (0..DEGREE - 1).rev() {
                p = p * t + c[k];
            }
            ((p.min(1.0) * a) + x) * 0.5
        }
        GeluForm::Tanh => {
            let (c0, c1) = tanh_form_constants();
            let z = c1.mul_add(x * x, c0) * x;
            let z16 = f16::from_f32(z).to_f64();
            let s = f16::from_f64(1.0 / (1.0 + (-z16).exp()));
            f16::from_f32(s.to_f32() * x).to_f32()
        }
    }
}

/// The erf form's constant table, in the order [`Gelu::pair_ops`] indexes
/// it: the clamp, `c10..c0`, 1 and 0.5.
pub(super) fn erf_table() -> Vec<f32> {
    let mut table = vec![CLAMP];
    table.extend(ERF_COEFFS.iter().rev());
    table.extend([1.0, 0.5]);
    table
}

/// The erf form's bound at `x` (reference `want`) once rounded to f16:
/// the f32 sequence's [`MAX_ERROR`] bound, one f16 rounding, and half of
/// f16's subnormal spacing.
pub(super) fn erf_tolerance(x: f64, want: f64) -> f64 {
    let seq = MAX_ERROR * x.abs().max(1.0);
    seq + 2f64.powi(-11) * (want.abs() + seq) + 2f64.powi(-25)
}

/// The tanh form's relative error bound at `x` in f16 arithmetic (see
/// [`Gelu::tolerance`]): `z` rounded to f16 moves the sigmoid by
/// `|z| (1 - sigmoid(z))` relative roundings, the sigmoid and the product
/// round once each, and the f32 steps add a few 2^-24.
fn tanh_relative_error(x: f64) -> f64 {
    let (c0, c1) = tanh_form_constants();
    let z = x * (f64::from(c0) + f64::from(c1) * x * x);
    let sigmoid = 1.0 / (1.0 + (-z).exp());
    2f64.powi(-11) * (2.0 + z.abs() * (1.0 - sigmoid)) + 2f64.powi(-20)
}

/// One GELU launch over f16 data.
#[derive(Clone, Debug)]
pub struct Gelu {
    /// Formula.
    pub form: GeluForm,
    /// Elements (a multiple of 4).
    pub len: u32,
    /// Input f16, 8-byte aligned.
    pub input: u32,
    /// Output f16, 4-byte aligned (may equal the input: in place).
    pub output: u32,
}

impl Gelu {
    fn tag(&self) -> &'static str {
        match self.form {
            GeluForm::Erf => "gelu_erf_f16",
            GeluForm::Tanh => "gelu_tanh_f16",
        }
    }

    /// Words (4 elements) per worker.
    pub fn worker_words(&self) -> [u32; WORKERS] {
        split(self.len / 4)
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), CodeletError> {
        let err = |m: String| Err(CodeletError::new(self.tag(), m));
        if self.len == 0 || !self.len.is_multiple_of(4) {
            return err(format!(
                "length {} is not a positive multiple of 4 (pad the tensor)",
                self.len
            ));
        }
        check_alignment(
            self.tag(),
            &[("input", self.input, 8), ("output", self.output, 4)],
        )
    }

    /// The auxiliary instruction sequence of one f32 pair with, for each,
    /// the constant-table index it reads through `$a12:13` (if any).
    pub(super) fn pair_ops(half: u8) -> Vec<(Inst, Option<usize>)> {
        let f32v2 = |m: &'static str, d: u8, x: Operand, y: Operand| inst(m, [op::a_pair(d), x, y]);
        let (c, p) = (|| op::a_pair(12), op::a_pair);
        let mut ops = vec![
            (inst("f16v2tof32", [op::a_pair(4), op::a(half)]), None),
            (f32v2("f32v2sub", 8, op::azeros(), p(4)), None),
            (f32v2("f32v2max", 6, p(4), p(8)), None),
            (f32v2("f32v2min", 8, p(6), c()), Some(0)),
            (f32v2("f32v2mul", 10, p(8), c()), Some(1)),
            (f32v2("f32v2add", 10, p(10), c()), Some(2)),
        ];
        // Table index k holds c(DEGREE + 1 - k): indices 3..=DEGREE+1 are c8..c0.
        for k in 3..=DEGREE + 1 {
            ops.push((f32v2("f32v2mul", 10, p(10), p(8)), None));
            ops.push((f32v2("f32v2add", 10, p(10), c()), Some(k)));
        }
        ops.push((f32v2("f32v2min", 10, p(10), c()), Some(DEGREE + 2)));
        ops.push((f32v2("f32v2mul", 10, p(10), p(6)), None));
        ops.push((f32v2("f32v2add", 10, p(10), p(4)), None));
        ops.push((f32v2("f32v2mul", 10, p(10), c()), Some(DEGREE + 3)));
        ops.push((inst("f32v2tof16", [op::a(2 + half), p(10)]), None));
        ops
    }

    /// Float64 reference of one f16 element.
    pub fn reference(&self, x: f16) -> f64 {
        self.form.reference(x.to_f64())
    }

    /// Largest difference from [`Gelu::reference`] the f16 output for
    /// input `x` (reference `want`) may have. Erf form: the sequence's
    /// bound plus one f16 rounding. Tanh form: `z` rounded to f16 moves
    /// the sigmoid by `|z| (1 - sigmoid(z))` relative roundings, the
    /// sigmoid and the product round once each, f16's subnormal spacing
    /// bounds both absolutely, and the f32 steps add a few 2^-24.
    pub fn tolerance(&self, x: f16, want: f64) -> f64 {
        let x = x.to_f64();
        match self.form {
            GeluForm::Erf => erf_tolerance(x, want),
            GeluForm::Tanh => {
                tanh_relative_error(x) * want.abs() + 2f64.powi(-25) * (x.abs() + 1.0)
            }
        }
    }

    /// The erf form's worker after the vertex state is loaded (`$m0` input,
    /// `$m2` output, `$m3` words, `$m1` the constant table): the word loop.
    /// Returns the `rpt` body's issues.
    fn emit_erf_loop(e: &mut Emitter, tag: &str) -> u64 {
        let mut aux = Self::pair_ops(0);
        let second = aux.len();
        aux.extend(Self::pair_ops(1));
        // Main slots: the constant the next bundle reads, or data movement.
        let mut main: Vec<Inst> = vec![inst("nop", []); aux.len()];
        for (slot, next) in main.iter_mut().zip(aux.iter().skip(1)) {
            if let Some(k) = next.1 {
                *slot = inst(
                    "ld64",
                    [op::a_pair(12), op::m(1), op::mzero(), op::imm(k as i64)],
                );
            }
        }
        // The first pair's constant for bundle 0 comes from the last bundle
        // of the previous iteration (and from the prologue): none is needed.
        debug_assert!(aux[0].1.is_none());
        debug_assert!(main[second].mnemonic == "nop" && main[second + 1].mnemonic == "nop");
        main[second] = ld64_next(0, 0);
        main[second + 1] = inst(
            "st32step",
            [op::a(2), op::mzero(), op::m_inc(2), op::imm(1)],
        );
        e.solo(ld64_next(0, 0));
        let mut body: Vec<(Inst, Inst)> = main
            .into_iter()
            .zip(aux.into_iter().map(|(a, _)| a))
            .collect();
        body.push((
            inst(
                "st32step",
                [op::a(3), op::mzero(), op::m_inc(2), op::imm(1)],
            ),
            inst("fnop", []),
        ));
        e.rpt(op::m(3), tag, body)
    }

    /// The tanh form's per-word auxiliary sequence: `z` for both pairs of
    /// `$a0:1` into `$a8`, `$a9` as f16, their sigmoids, the product by x
    /// into `$a8:9`.
    fn tanh_word_ops() -> Vec<Inst> {
        let p = op::a_pair;
        let mut ops = Vec::new();
        for half in 0..2 {
            ops.extend([
                inst("f16v2tof32", [p(2), op::a(half)]),
                inst("f32v2mul", [p(4), p(2), p(2)]),
                inst("f32v2axpy", [p(4), p(4), p(6)]),
                inst("f32v2mul", [p(4), p(4), p(2)]),
                inst("f32v2tof16", [op::a(8 + half), p(4)]),
            ]);
        }
        ops.push(inst("f16v2sigm", [op::a(8), op::a(8)]));
        ops.push(inst("f16v2sigm", [op::a(9), op::a(9)]));
        ops.push(inst("f16v4mul", [p(8), p(8), p(0)]));
        ops
    }

    /// The tanh form's worker after the vertex state is loaded: constants
    /// (`$TAS = c1`, `$a6:7 = c0`), the first word, the `rpt` over the
    /// rest (storing the previous word's halves in its first two bundles
    /// and loading the next word with the product), the last word's
    /// stores. Returns the `rpt` body's issues.
    fn emit_tanh_loop(e: &mut Emitter, tag: &str) -> u64 {
        let next_word = || ld64_next(0, 0);
        let store = |r: u8| {
            inst(
                "st32step",
                [op::a(r), op::mzero(), op::m_inc(2), op::imm(1)],
            )
        };
        for s in [
            inst("ld32", [op::a(6), op::m(1), op::mzero(), op::imm(0)]),
            inst("uput", [op::csr("TAS"), op::a(6)]),
            inst("ld64", [op::a_pair(6), op::m(1), op::mzero(), op::imm(1)]),
            inst("sub", [op::m(3), op::m(3), op::imm(1)]),
            next_word(),
        ] {
            e.solo(s);
        }
        let ops = Self::tanh_word_ops();
        let last = ops.len() - 1;
        let main = |i: usize, first: bool| match i {
            0 | 1 if !first => store(8 + i as u8),
            i if i == last => next_word(),
            _ => inst("nop", []),
        };
        for (i, a) in ops.iter().enumerate() {
            e.bundle(main(i, true), a.clone());
        }
        let body = ops
            .iter()
            .enumerate()
            .map(|(i, a)| (main(i, false), a.clone()))
            .collect();
        let body = e.rpt(op::m(3), tag, body);
        e.solo(store(8));
        e.solo(store(9));
        body
    }
}

impl Codelet for Gelu {
    type Counts = StreamCounts;

    /// Emits the launch (supervisor entry `main`, six workers) and returns
    /// the issue counts its estimate is made of.
    fn emit(&self, e: &mut Emitter) -> Result<StreamCounts, CodeletError> {
        self.validate()?;
        let tag = self.tag();
        let supervisor = launch::emit_supervisor_and_worker_entry(e, tag, 3);
        let done = format!(".L{tag}_done");
        // Vertex state: input, output, words.
        e.load_state(&[(0, 0), (2, 1), (3, 2)]);
        e.solo(inst(
            "setzi",
            [op::m(1), op::sym(format!("{tag}_constants"))],
        ));
        e.solo(inst("brz", [op::m(3), op::sym(done.clone())]));
        let empty = e.issues() + 1;
        let (body, prologue_units) = match self.form {
            GeluForm::Erf => (Self::emit_erf_loop(e, tag), 0),
            GeluForm::Tanh => (Self::emit_tanh_loop(e, tag), 1),
        };
        e.label(&done);
        e.solo(inst("exitz", [op::mzero()]));
        let worker = e.issues();
        let shares = self.worker_words();
        let offs = launch::offsets(&shares);
        let states: [Vec<u32>; WORKERS] = std::array::from_fn(|w| {
            vec![
                self.input + offs[w] * 8,
                self.output + offs[w] * 8,
                shares[w],
            ]
        });
        launch::emit_vertex_state(e, tag, &states);
        e.directive("align", &[op::imm(8)]);
        e.label(&format!("{tag}_constants"));
        match self.form {
            // Each value twice (one per lane): clamp, c10..c0, 1, 0.5.
            GeluForm::Erf => {
                for v in erf_table() {
                    e.words(&[v.to_bits(), v.to_bits()]);
                }
            }
            // c1 (for `$TAS`), padding, c0 twice.
            GeluForm::Tanh => {
                let (c0, c1) = tanh_form_constants();
                e.words(&[c1.to_bits(), 0, c0.to_bits(), c0.to_bits()]);
            }
        }
        Ok(StreamCounts {
            supervisor,
            empty,
            worker,
            body,
            prologue_units,
        })
    }

    fn cycles(&self, counts: &StreamCounts) -> u64 {
        counts.cycles(&self.worker_words())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_erf_sequence_meets_the_documented_bound() {
        let form = GeluForm::Erf;
        let mut worst: f64 = 0.0;
        let mut xs: Vec<f64> = (-20_000..=20_000).map(|i| f64::from(i) / 2000.0).collect();
        xs.extend([-6e4, -1e4, -600.0, -50.0, 50.0, 600.0, 1e4, 6e4]);
        for x in xs {
            let x32 = x as f32;
            let got = f64::from(sequence_f32(form, x32));
            let want = form.reference(f64::from(x32));
            worst = worst.max((got - want).abs() / f64::from(x32).abs().max(1.0));
        }
        assert!(worst <= MAX_ERROR, "{worst:e}");
        assert!(worst > 1e-7, "suspiciously exact ({worst:e})");
    }

    #[test]
    fn the_tanh_sequence_meets_its_tolerance_on_every_f16() {
        // Every finite f16 input; the tolerance is not trivially loose:
        // somewhere the error uses more than a quarter of it.
        let g = Gelu {
            form: GeluForm::Tanh,
            len: 4,
            input: 0,
            output: 0,
        };
        let mut used: f64 = 0.0;
        for bits in 0..=u16::MAX {
            let x = f16::from_bits(bits);
            if !x.is_finite() {
                continue;
            }
            let got = f64::from(sequence_f32(GeluForm::Tanh, x.to_f32()));
            let want = g.reference(x);
            let tol = g.tolerance(x, want);
            assert!(
                (got - want).abs() <= tol,
                "gelu({x}) = {got}, want {want}, tolerance {tol:e}"
            );
            used = used.max((got - want).abs() / tol);
        }
        assert!(used > 0.25, "the tolerance is never approached ({used})");
    }
}
