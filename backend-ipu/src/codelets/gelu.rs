//! GELU on f16 tensors, computed in f32, in the erf form
//! `x Phi(x) = x/2 (1 + erf(x / sqrt 2))` or the tanh form
//! `x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.
//!
//! The machine has no transcendental instructions in our ISA subset, so
//! both forms use one instruction sequence: with `a = |x|`,
//! `GELU(x) = (x + a * s(a)) / 2`, where `s(a) = erf(a / sqrt 2)` or
//! `tanh(sqrt(2/pi) (a + 0.044715 a^3))` (both odd forms of x s(|x|)).
//! `s` is a degree-10 polynomial `P` in `min(a, 4.5)`, evaluated by Horner
//! in f32, then clamped with `min(P, 1)`. `P` interpolates
//! `g(a) = s(a) (1 + 2^-18) / s(4.5)` at the 11 Chebyshev-Lobatto points of
//! [0, 4.5]: the endpoint value is just above 1, so for `|x| >= 4.5` the
//! clamp gives exactly 1 and the result is exactly `relu(x)` (the true
//! GELU differs by at most `1.5e-5` there and decays to 0).
//!
//! Measured maximum error of the f32 sequence against float64 GELU, over
//! x in [-10, 10] step 1/2000 and |x| up to 6e4:
//! erf form 2.4e-5 * max(1, |x|), tanh form 1.9e-5 * max(1, |x|)
//! ([`sequence_f32`] is the bit-exact Rust model of the sequence; a unit
//! test re-measures the bound). The f16 output adds one rounding.
//!
//! Schedule: per 64-bit word (4 halves) each of the two f32 pairs takes
//! `2 * 10 + 9` auxiliary instructions; the main slots load the next
//! constant (from a table in the codelet's data) one bundle before it is
//! used, load the next input word and store the results (`st32step` twice:
//! the second store takes one extra bundle), so a word is `4 * 10 + 19`
//! bundles. Loads read one input word past each worker's share.

use half::f16;

use super::emitter::{inst, op, Emitter, Inst};
use super::launch::{self, split, StreamCounts, WORKERS};
use super::program::Codelet;
use super::CodeletError;
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

/// Coefficients `c0..c10` of `P(a)` (monomial in a), erf form.
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

/// Coefficients `c0..c10`, tanh form.
const TANH_COEFFS: [f32; DEGREE + 1] = [
    1.075_528_6e-16,
    0.798_237_2,
    -0.005_138_419,
    -0.111_365_475,
    -0.043_656_282,
    0.065_789_16,
    -0.026_085_911,
    0.005_066_232,
    -0.000_487_573_15,
    1.644_322e-5,
    2.960_136e-7,
];

/// Documented bound: |error| <= this * max(1, |x|) for the f32 sequence.
pub const MAX_ERROR: f64 = 2.5e-5;

impl GeluForm {
    fn coeffs(self) -> &'static [f32; DEGREE + 1] {
        match self {
            GeluForm::Erf => &ERF_COEFFS,
            GeluForm::Tanh => &TANH_COEFFS,
        }
    }

    /// Float64 GELU.
    pub fn reference(self, x: f64) -> f64 {
        match self {
            GeluForm::Erf => 0.5 * x * (1.0 + libm::erf(x / std::f64::consts::SQRT_2)),
            GeluForm::Tanh => {
                let k = (2.0 / std::f64::consts::PI).sqrt();
                0.5 * x * (1.0 + (k * (x + 0.044715 * x * x * x)).tanh())
            }
        }
    }
}

/// The codelet's instruction sequence on one f32 value, operation by
/// operation in f32 as the simulator executes it.
pub fn sequence_f32(form: GeluForm, x: f32) -> f32 {
    let c = form.coeffs();
    let a = x.max(0.0 - x);
    let t = a.min(CLAMP);
    let mut p = t * c[DEGREE] + c[DEGREE - 1];
    for k in (0..DEGREE - 1).rev() {
        p = p * t + c[k];
    }
    ((p.min(1.0) * a) + x) * 0.5
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
        if !self.input.is_multiple_of(8) {
            return err(format!(
                "input address 0x{:x} is not 8-byte aligned",
                self.input
            ));
        }
        if !self.output.is_multiple_of(4) {
            return err(format!(
                "output address 0x{:x} is not 4-byte aligned",
                self.output
            ));
        }
        Ok(())
    }

    /// The auxiliary instruction sequence of one f32 pair with, for each,
    /// the constant-table index it reads through `$a12:13` (if any).
    fn pair_ops(half: u8) -> Vec<(Inst, Option<usize>)> {
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
    /// input `x` (reference `want`) may have: the sequence's bound plus one
    /// f16 rounding.
    pub fn tolerance(&self, x: f16, want: f64) -> f64 {
        let seq = MAX_ERROR * x.to_f64().abs().max(1.0);
        seq + 2f64.powi(-11) * (want.abs() + seq) + 2f64.powi(-25)
    }
}

impl Codelet for Gelu {
    type Counts = StreamCounts;

    /// Emits the launch (supervisor entry `main`, six workers) and returns
    /// the issue counts its estimate is made of.
    fn emit(&self, e: &mut Emitter) -> Result<StreamCounts, CodeletError> {
        self.validate()?;
        let tag = self.tag();
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
        main[second] = inst(
            "ld64step",
            [op::a_pair(0), op::mzero(), op::m_inc(0), op::imm(1)],
        );
        main[second + 1] = inst(
            "st32step",
            [op::a(2), op::mzero(), op::m_inc(2), op::imm(1)],
        );
        let supervisor = launch::emit_supervisor_and_worker_entry(e, tag, 3);
        let done = format!(".L{tag}_done");
        // Vertex state: input, output, words.
        for (reg, word) in [(0, 0), (2, 1), (3, 2)] {
            e.solo(inst(
                "ld32",
                [op::m(reg), op::vertex_base(), op::mzero(), op::imm(word)],
            ));
        }
        e.solo(inst(
            "setzi",
            [op::m(1), op::sym(format!("{tag}_constants"))],
        ));
        e.solo(inst("brz", [op::m(3), op::sym(done.clone())]));
        let empty = e.issues() + 1;
        e.solo(inst(
            "ld64step",
            [op::a_pair(0), op::mzero(), op::m_inc(0), op::imm(1)],
        ));
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
        let body = e.rpt(op::m(3), tag, body);
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
        // Constant table, each value twice (one per lane): clamp, c10..c0, 1, 0.5.
        let c = self.form.coeffs();
        let mut table = vec![CLAMP];
        table.extend(c.iter().rev());
        table.extend([1.0, 0.5]);
        e.directive("align", &[op::imm(8)]);
        e.label(&format!("{tag}_constants"));
        for v in table {
            e.words(&[v.to_bits(), v.to_bits()]);
        }
        Ok(StreamCounts {
            supervisor,
            empty,
            worker,
            body,
            prologue_units: 0,
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
    fn the_f32_sequence_meets_the_documented_bound() {
        for form in [GeluForm::Erf, GeluForm::Tanh] {
            let mut worst: f64 = 0.0;
            let mut xs: Vec<f64> = (-20_000..=20_000).map(|i| f64::from(i) / 2000.0).collect();
            xs.extend([-6e4, -1e4, -600.0, -50.0, 50.0, 600.0, 1e4, 6e4]);
            for x in xs {
                let x32 = x as f32;
                let got = f64::from(sequence_f32(form, x32));
                let want = form.reference(f64::from(x32));
                worst = worst.max((got - want).abs() / f64::from(x32).abs().max(1.0));
            }
            assert!(worst <= MAX_ERROR, "{form:?}: {worst:e}");
            assert!(worst > 1e-7, "{form:?}: suspiciously exact ({worst:e})");
        }
    }
}
