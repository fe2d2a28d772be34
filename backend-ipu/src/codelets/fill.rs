//! Zero fill: `bytes` bytes from `dst` set to zero, without a source (the
//! padding a product reads as zeros where no exchange writes it).
//!
//! Each worker takes a contiguous share of 64-bit words and stores
//! `$azeros` to each: one `st64step` per bundle, the machine model's
//! one-store-per-cycle limit. Nothing is read, so no bank rule applies.

use super::emitter::{inst, op, Emitter};
use super::launch::{self, split, StreamCounts, WORKERS};
use super::program::Codelet;
use super::{check_alignment, CodeletError};

/// The launch's tag: its labels and sections are named after it.
pub const TAG: &str = "fill_zero";

/// One zero-fill launch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fill {
    /// Bytes (a positive multiple of 8).
    pub bytes: u32,
    /// Destination, 8-byte aligned.
    pub dst: u32,
}

impl Fill {
    /// Words per worker.
    pub fn worker_words(&self) -> [u32; WORKERS] {
        split(self.bytes / 8)
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), CodeletError> {
        if self.bytes == 0 || !self.bytes.is_multiple_of(8) {
            return Err(CodeletError::new(
                TAG,
                format!("needs a positive multiple of 8 bytes, got {}", self.bytes),
            ));
        }
        check_alignment(TAG, &[("destination", self.dst, 8)])
    }
}

impl Codelet for Fill {
    type Counts = StreamCounts;

    /// Emits the launch (supervisor entry `main`, six workers) and returns
    /// the issue counts its estimate is made of.
    fn emit(&self, e: &mut Emitter) -> Result<StreamCounts, CodeletError> {
        self.validate()?;
        let supervisor = launch::emit_supervisor_and_worker_entry(e, TAG, 2);
        let done = format!(".L{TAG}_done");
        // Vertex state: destination, words.
        e.load_state(&[(0, 0), (3, 1)]);
        e.solo(inst("brz", [op::m(3), op::sym(done.clone())]));
        let at_branch = e.issues();
        e.solo(inst("sub", [op::m(3), op::m(3), op::imm(1)]));
        let store = || {
            inst(
                "st64step",
                [op::azeros(), op::mzero(), op::m_inc(0), op::imm(1)],
            )
        };
        e.solo(store());
        let body = e.rpt(op::m(3), TAG, vec![(store(), inst("fnop", []))]);
        e.label(&done);
        e.solo(inst("exitz", [op::mzero()]));
        let worker = e.issues();
        let shares = self.worker_words();
        let offs = launch::offsets(&shares);
        let states: [Vec<u32>; WORKERS] =
            std::array::from_fn(|w| vec![self.dst + 8 * offs[w], shares[w]]);
        Ok(launch::end_stream_launch(
            e, TAG, &states, supervisor, at_branch, worker, body,
        ))
    }

    fn cycles(&self, counts: &StreamCounts) -> u64 {
        counts.cycles(&self.worker_words())
    }
}
