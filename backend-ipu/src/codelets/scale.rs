//! Scaling an f16 tensor in place by a constant: `x = c * x`.
//!
//! The attention's FP8 products leave Q and K `2^D` times too large (their
//! weight codes' domain, [`crate::lower::attention_block::AttentionFp8`]),
//! which f16 scores `Q K^T` would overflow; the attention tile scales its Q
//! by the softmax scale and `2^-2D` first ([`super::attention::TileAttention::q_scale`]).
//!
//! Each worker takes a contiguous share of pairs of 64-bit words (4 f16
//! lanes each) and runs a `rpt` loop over them, two words in flight: a
//! word's load issues beside the previous word's `f16v4mul` and its store
//! (`st64step`) alone, as loads and stores at the same addresses cannot
//! share a bundle's memory access (a paced `ldst64pace` needs two banks),
//! so a word takes two issue slots. The loads run one word past a
//! worker's share (the next share's first word, or one past the tensor);
//! that word's value is not used.
//!
//! Numerics: each lane is one IEEE f16 multiply by `c` rounded to f16
//! (the constant itself rounded to f16 first), round to nearest even.

use half::f16;

use super::emitter::{inst, op, Emitter};
use super::launch::{self, split, StreamCounts, WORKERS};
use super::program::Codelet;
use super::{check_alignment, CodeletError};

const TAG: &str = "scale_f16";

/// Bytes each worker's loads read past its share.
pub const READ_PAST_BYTES: u32 = 8;

/// One launch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScaleF16 {
    /// Elements: a positive multiple of 8 (whole pairs of words).
    pub len: u32,
    /// The tensor, 8-byte aligned.
    pub at: u32,
    /// The constant (rounded to f16: a finite f16 number).
    pub scale: f32,
}

impl ScaleF16 {
    /// Pairs of words per worker.
    pub fn worker_pairs(&self) -> [u32; WORKERS] {
        split(self.len / 8)
    }

    /// The constant as the codelet multiplies by it.
    pub fn applied(&self) -> f16 {
        f16::from_f32(self.scale)
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
        if !self.applied().is_finite() {
            return err(format!(
                "the constant {} is not a finite f16 number",
                self.scale
            ));
        }
        check_alignment(TAG, &[("the tensor", self.at, 8)])
    }

    /// Float64 reference: each value times the f16 constant, rounded to f16.
    pub fn reference(&self, x: &[f64]) -> Vec<f64> {
        let c = self.applied().to_f64();
        x.iter().map(|&v| f16::from_f64(v * c).to_f64()).collect()
    }
}

impl Codelet for ScaleF16 {
    type Counts = StreamCounts;

    /// Emits the launch (supervisor entry `main`, six workers).
    fn emit(&self, e: &mut Emitter) -> Result<StreamCounts, CodeletError> {
        self.validate()?;
        let supervisor = launch::emit_supervisor_and_worker_entry(e, TAG, 3);
        let done = format!(".L{TAG}_done");
        // Vertex state: the share's first word, its pairs, the constant's
        // f16 bits in both halves.
        e.load_state(&[(0, 0), (1, 1)]);
        e.solo(inst("brz", [op::m(1), op::sym(done.clone())]));
        let at_branch = e.issues();
        e.solo(super::emitter::load_state_word(op::a(2), 2));
        e.solo(inst("mov", [op::a(3), op::a(2)]));
        e.solo(inst(
            "ld64",
            [op::a_pair(0), op::m(0), op::mzero(), op::imm(0)],
        ));
        let p = op::a_pair;
        let mul = |r: u8| inst("f16v4mul", [p(r), p(r), p(2)]);
        let load = |r: u8| inst("ld64", [p(r), op::m(0), op::mzero(), op::imm(1)]);
        let store = |r: u8| super::emitter::st64_next(r, 0);
        let fnop = || inst("fnop", []);
        let body = e.rpt(
            op::m(1),
            TAG,
            vec![
                (load(4), mul(0)),
                (store(0), fnop()),
                (load(0), mul(4)),
                (store(4), fnop()),
            ],
        );
        e.label(&done);
        e.solo(inst("exitz", [op::mzero()]));
        let worker = e.issues();
        let shares = self.worker_pairs();
        let offs = launch::offsets(&shares);
        let bits = u32::from(self.applied().to_bits()) * 0x1_0001;
        let states: [Vec<u32>; WORKERS] =
            std::array::from_fn(|w| vec![self.at + offs[w] * 16, shares[w], bits]);
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
