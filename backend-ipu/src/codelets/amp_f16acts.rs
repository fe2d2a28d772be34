//! FP8-weight AMP block with FP16 activations and FP16 partials:
//! `out[N,16] = in[N,32] x W[16,32]^T (+ partials)` where `in` is f16 and
//! `W` is FP8 E4M3FNUZ.
//!
//! `f8v8hihov4amp` takes FP8 on both sides, so each worker first casts its
//! own rows of f16 activations to FP8 codes with a power-of-two scale
//! (`f16v4tof8 ..., s`: code = f8(x * 2^-s), RNE, saturating) into an FP8
//! staging buffer, in the same launch, then runs the FP8 AMP loop of
//! [`AmpBlock`] over the staging buffer. The cast is a software-pipelined
//! `rpt` loop of 2 bundles per 8 activations (`ld128step`, `st64step`, two
//! `f16v4tof8` in the aux slot): 8 issues per row next to the AMP's 4. It
//! reads 16 bytes past a worker's activations (the placement keeps them in
//! memory). A worker only reads staging rows it wrote itself (the AMP
//! loop's read-past bytes may belong to the next worker; their values do
//! not matter).
//!
//! The result is in the unscaled domain of the FP8 codes, as for
//! [`AmpVariant::F8`]: the true product is `2^(s + sw)` times it, where `sw`
//! is the weights' tensor scale.

use super::amp::{AmpBlock, AmpMode, AmpVariant};
use super::emitter::{inst, load_state_word, op, Emitter};
use super::launch::{StreamCounts, SupervisorCounts};
use super::program::Codelet;
use super::{check_alignment, CodeletError};
use half::f16;
use ipuc_ipu_arch::float8::encode_scaled;
use ipuc_ipu_arch::MachineModel;

/// Activations per row (the FP8 AMP's input channels).
pub const CHANNELS: usize = 32;
/// Bytes of f16 activations per row.
pub const ACT_ROW_BYTES: u32 = 64;
const SKIP: &str = ".Lamp_f8_f16acts_cast_skip";

/// One fused cast + FP8 AMP launch.
#[derive(Clone, Debug)]
pub struct AmpF8WeightsF16Acts {
    /// The FP8 AMP block; its `input` is the FP8 staging buffer.
    pub block: AmpBlock,
    /// f16 activations `[N, 32]`, 8-byte aligned.
    pub activations: u32,
    /// Power-of-two activation scale `s` in -31..=31 (codes hold `x * 2^-s`).
    pub act_scale: i32,
}

impl AmpF8WeightsF16Acts {
    /// A launch with its operands in the interleaved region: the FP8 block
    /// as [`AmpBlock::place`] puts it, the f16 activations after the
    /// weights.
    pub fn place(
        mode: AmpMode,
        rows: u32,
        act_scale: i32,
        machine: &MachineModel,
    ) -> Result<Self, CodeletError> {
        let block = AmpBlock::place(AmpVariant::F8, mode, rows, machine)?;
        let activations = block.weights + AmpVariant::F8.weight_bytes() as u32;
        let end = u64::from(activations)
            + u64::from(rows) * u64::from(ACT_ROW_BYTES)
            + u64::from(AmpBlock::READ_PAST_BYTES);
        if end > u64::from(machine.sram_end) {
            return Err(CodeletError::new(
                "amp_f8_f16acts",
                format!(
                    "{rows} rows need memory up to 0x{end:x}, the tile ends at 0x{:x}",
                    machine.sram_end
                ),
            ));
        }
        let c = AmpF8WeightsF16Acts {
            block,
            activations,
            act_scale,
        };
        c.validate()?;
        Ok(c)
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), CodeletError> {
        let err = |m: String| Err(CodeletError::new("amp_f8_f16acts", m));
        if self.block.variant != AmpVariant::F8 {
            return err(format!(
                "the block must use the FP8 AMP, got `{}`",
                self.block.variant.mnemonic()
            ));
        }
        if !(-31..=31).contains(&self.act_scale) {
            return err(format!(
                "activation scale {} is outside -31..=31",
                self.act_scale
            ));
        }
        check_alignment("amp_f8_f16acts", &[("activations", self.activations, 8)])?;
        self.block.validate()
    }

    /// The cast pre-pass: f16 activations to FP8 codes in the AMP's input
    /// buffer, 8 activations per `rpt` pass. Returns its counts (a pass is
    /// a 16-byte block; a worker with `n` rows runs `4 n` blocks, one of
    /// them outside the `rpt`).
    fn emit_prepass(&self, e: &mut Emitter) -> StreamCounts {
        let s = op::imm(i64::from(self.act_scale));
        let start = e.issues();
        let cast = |dst: u8, src: u8| inst("f16v4tof8", [op::a(dst), op::a_pair(src), s.clone()]);
        let load = || {
            inst(
                "ld128step",
                [op::a_quad(0), op::m(0), op::m_inc(8), op::imm(1)],
            )
        };
        let store = || {
            inst(
                "st64step",
                [op::a_pair(4), op::m(1), op::m_inc(9), op::imm(1)],
            )
        };
        e.solo(load_state_word(op::m(0), 4)); // f16 activations
        e.solo(load_state_word(op::m(1), 0)); // FP8 staging (the AMP input)
        e.solo(load_state_word(op::m(2), 5)); // 16-byte blocks (4 per row)
        e.solo(inst("setzi", [op::m(8), op::imm(0)]));
        e.solo(inst("setzi", [op::m(9), op::imm(0)]));
        e.solo(inst("brz", [op::m(2), op::sym(SKIP)]));
        let empty = e.issues() - start;
        // The last block is stored after the loop.
        e.solo(inst("sub", [op::m(2), op::m(2), op::imm(1)]));
        // Software pipeline: entering the loop, $a0:3 holds block k+1 and
        // $a4:5 the codes of block k (a bundle reads before it writes).
        e.solo(load());
        e.bundle(inst("nop", []), cast(4, 0));
        e.bundle(load(), cast(5, 2));
        let body = e.rpt(
            op::m(2),
            "amp_f8_f16acts_cast",
            vec![(store(), cast(4, 0)), (load(), cast(5, 2))],
        );
        // A bundle, so the AMP code after the label stays 8-byte aligned.
        e.bundle(store(), inst("fnop", []));
        e.label(SKIP);
        StreamCounts {
            // The supervisor is the block's; the pre-pass has none of its own.
            supervisor: SupervisorCounts {
                runall: 0,
                epilogue: 0,
            },
            empty,
            worker: e.issues() - start,
            body,
            prologue_units: 1,
        }
    }

    /// The launch's assembly, printed from its ops (supervisor entry `main`).
    pub fn assembly(&self) -> Result<String, CodeletError> {
        Ok(self.program(0, &MachineModel::c600())?.0.assembly())
    }

    /// Issues of a worker with `n` rows: its cast pre-pass (`4 n` blocks)
    /// and its AMP loop, from the emitted counts.
    pub fn worker_issues(counts: &(StreamCounts, StreamCounts), n: u32) -> u64 {
        let (block, cast) = counts;
        block.worker_issues(n) + cast.worker_issues(4 * n)
    }

    /// The FP8 codes the cast produces from little-endian f16 activations,
    /// exactly as `f16v4tof8` rounds them.
    pub fn quantise(&self, activations: &[u8]) -> Vec<u8> {
        activations
            .chunks_exact(2)
            .map(|b| {
                let x = f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f64();
                encode_scaled(x, self.act_scale)
            })
            .collect()
    }

    /// Float64 reference over the quantised activations (unscaled FP8
    /// domain), with the sum of absolute terms per output; `partials` is
    /// `None` in overwrite mode.
    pub fn reference(
        &self,
        activations: &[u8],
        weights: &[u8],
        partials: Option<&[u8]>,
    ) -> Vec<(f64, f64)> {
        AmpVariant::F8.reference(&self.quantise(activations), weights, partials)
    }
}

impl Codelet for AmpF8WeightsF16Acts {
    type Counts = (StreamCounts, StreamCounts);

    /// Emits the launch and returns the block's counts and the pre-pass's.
    fn emit(&self, e: &mut Emitter) -> Result<(StreamCounts, StreamCounts), CodeletError> {
        self.validate()?;
        let mut row = 0;
        let extra: [Vec<u32>; 6] = std::array::from_fn(|w| {
            let n = self.block.worker_rows()[w];
            let v = vec![self.activations + row * ACT_ROW_BYTES, 4 * n];
            row += n;
            v
        });
        self.block
            .emit_with_prepass(e, "_f16acts", |e| self.emit_prepass(e), &extra)
    }

    /// The block's launch with each worker's cast pre-pass and AMP loop.
    fn cycles(&self, counts: &(StreamCounts, StreamCounts)) -> u64 {
        let issues = self
            .block
            .worker_rows()
            .map(|n| Self::worker_issues(counts, n));
        counts.0.supervisor.cycles_per_worker(&issues)
    }
}
