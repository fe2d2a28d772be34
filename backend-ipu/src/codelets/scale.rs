//! Scaling an f16 tensor in place by a constant: `x = c * x`.
//!
//! The attention's FP8 products leave Q and K `2^D` times too large (their
//! weight codes' domain, [`crate::lower::attention_block::AttentionFp8`]),
//! which f16 scores `Q K^T` would overflow; Q is scaled by the softmax
//! scale and `2^-2D` first, a constant below f16's normal range: by qk's
//! tiles on the rows each owns once the K split is summed (the lowering's
//! `Epilogue::scaled`), or by an attention tile itself
//! ([`super::attention::TileAttention::q_scale`]).
//!
//! The constant `c` is taken as `m 2^k` with `m` in `[1/2, 1)` rounded to
//! f16 and `2^k` an f16 power of two (`k` in -24..=15, subnormal powers
//! exact too), and each lane is multiplied by `m`, then by `2^k`: so a
//! constant no f16 can hold still costs one rounding of `m` (2^-12
//! relative), where rounding `c` itself would lose its bits to f16's
//! subnormal spacing, and the first product never exceeds `|x|` (no
//! overflow before the power of two brings it down).
//!
//! Each worker takes a contiguous share of pairs of 64-bit words (4 f16
//! lanes each) and runs a `rpt` loop over them, two words in flight: a
//! word's load issues beside the previous word's second multiply, its
//! store beside the next word's first, as loads and stores at the same
//! addresses cannot share a bundle's memory access (a paced `ldst64pace`
//! needs two banks): a word takes two issue slots. The loads run one word
//! past a worker's share (the next share's first word, or one past the
//! tensor); that word's value is not used.
//!
//! Numerics: each lane is `(x m) 2^k`, both IEEE f16 multiplies rounded
//! to nearest even (the second exact unless the result is subnormal).

use half::f16;

use super::emitter::{inst, op, Emitter};
use super::launch::{self, split, StreamCounts, WORKERS};
use super::program::Codelet;
use super::{check_alignment, CodeletError};

const TAG: &str = "scale_f16";

/// One launch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScaleF16 {
    /// Elements: a positive multiple of 8 (whole pairs of words).
    pub len: u32,
    /// The tensor, 8-byte aligned.
    pub at: u32,
    /// The constant: positive, `m 2^k` (`m` in `[1/2, 1)`) with `k` in
    /// -24..=15 (see the module doc).
    pub scale: f32,
}

impl ScaleF16 {
    /// Pairs of words per worker.
    pub fn worker_pairs(&self) -> [u32; WORKERS] {
        split(self.len / 8)
    }

    /// The constant's two factors as the codelet multiplies by them:
    /// `m` in `[1/2, 1)` rounded to f16 (1 where it rounds up) and `2^k`.
    pub fn factors(&self) -> (f16, f16) {
        let k = self.exponent().clamp(-25, 16);
        (
            f16::from_f64(f64::from(self.scale) * 2f64.powi(-k)),
            f16::from_f64(2f64.powi(k)),
        )
    }

    /// The power of two's exponent `k` (0 for a constant that is not
    /// positive and finite, which [`ScaleF16::validate`] refuses).
    fn exponent(&self) -> i32 {
        let c = f64::from(self.scale);
        if c > 0.0 && c.is_finite() {
            c.log2().floor() as i32 + 1
        } else {
            0
        }
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), CodeletError> {
        let err = |m: String| Err(CodeletError::new(TAG, m));
        if self.len == 0 || !self.len.is_multiple_of(8) {
            return err(format!(
                "length {} is not a positive multiple of 8 (two words of four lanes)",
                self.len
            ));
        }
        if !(self.scale > 0.0 && self.scale.is_finite() && (-24..=15).contains(&self.exponent())) {
            return err(format!(
                "the constant {} is not positive with a power of two in f16's range (2^-24..=2^15)",
                self.scale
            ));
        }
        check_alignment(TAG, &[("the tensor", self.at, 8)])
    }

    /// Float64 reference: each value times `m`, rounded to f16, times
    /// `2^k`, rounded to f16.
    pub fn reference(&self, x: &[f64]) -> Vec<f64> {
        let (m, p) = self.factors();
        let r = |v: f64| f16::from_f64(v).to_f64();
        x.iter()
            .map(|&v| r(r(v * m.to_f64()) * p.to_f64()))
            .collect()
    }
}

impl Codelet for ScaleF16 {
    type Counts = StreamCounts;

    /// Emits the launch (supervisor entry `main`, six workers).
    fn emit(&self, e: &mut Emitter) -> Result<StreamCounts, CodeletError> {
        self.validate()?;
        let supervisor = launch::emit_supervisor_and_worker_entry(e, TAG, 4);
        let done = format!(".L{TAG}_done");
        // Vertex state: the share's first word, its pairs, the factors'
        // f16 bits in both halves.
        e.load_state(&[(0, 0), (1, 1)]);
        e.solo(inst("brz", [op::m(1), op::sym(done.clone())]));
        let at_branch = e.issues();
        let p = op::a_pair;
        for s in [
            super::emitter::load_state_word(op::a(2), 2),
            inst("mov", [op::a(3), op::a(2)]),
            super::emitter::load_state_word(op::a(6), 3),
            inst("mov", [op::a(7), op::a(6)]),
            inst("ld64", [p(0), op::m(0), op::mzero(), op::imm(0)]),
            inst("f16v4mul", [p(0), p(0), p(2)]),
        ] {
            e.solo(s);
        }
        // m in $a2:3, 2^k in $a6:7; words in $a0:1 and $a4:5 alternately.
        let mul = |r: u8, by: u8| inst("f16v4mul", [p(r), p(r), p(by)]);
        let load = |r: u8| inst("ld64", [p(r), op::m(0), op::mzero(), op::imm(1)]);
        let store = |r: u8| super::emitter::st64_next(r, 0);
        let body = e.rpt(
            op::m(1),
            TAG,
            vec![
                (load(4), mul(0, 6)),
                (store(0), mul(4, 2)),
                (load(0), mul(4, 6)),
                (store(4), mul(0, 2)),
            ],
        );
        e.label(&done);
        e.solo(inst("exitz", [op::mzero()]));
        let worker = e.issues();
        let shares = self.worker_pairs();
        let offs = launch::offsets(&shares);
        let (m, power) = self.factors();
        let lanes = |h: f16| u32::from(h.to_bits()) * 0x1_0001;
        let states: [Vec<u32>; WORKERS] = std::array::from_fn(|w| {
            vec![self.at + offs[w] * 16, shares[w], lanes(m), lanes(power)]
        });
        let counts =
            launch::end_stream_launch(e, TAG, &states, supervisor, at_branch, worker, body);
        // The `rpt` does every pair: no unit is the prologue's.
        Ok(StreamCounts {
            prologue_units: 0,
            ..counts
        })
    }

    fn cycles(&self, counts: &StreamCounts) -> u64 {
        counts.cycles(&self.worker_pairs())
    }
}
