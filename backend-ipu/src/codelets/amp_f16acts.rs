//! FP8-weight AMP block with FP16 activations and FP16 partials:
//! `out[N,16] = in[N,32] x W[16,32]^T (+ partials)` where `in` is f16 and
//! `W` is FP8 E4M3FNUZ.
//!
//! `f8v8hihov4amp` takes FP8 on both sides, so each worker first casts its
//! own rows of f16 activations to FP8 codes with a power-of-two scale
//! (`f16v4tof8 ..., s`: code = f8(x * 2^-s), RNE, saturating) into an FP8
//! staging buffer, in the same launch, then runs the FP8 AMP loop of
//! [`AmpBlock`] over the staging buffer. The cast is a `rpt` loop of 4
//! bundles per 8 activations (two `ld64step`, two `f16v4tof8` in the aux
//! slot, one `st64step`): 16 issues per row next to the AMP's 4. A worker
//! only reads staging rows it wrote itself (the AMP loop's read-past bytes
//! may belong to the next worker; their values do not matter).
//!
//! The result is in the unscaled domain of the FP8 codes, as for
//! [`AmpVariant::F8`]: the true product is `2^(s + sw)` times it, where `sw`
//! is the weights' tensor scale.

use super::amp::{AmpBlock, AmpMode, AmpVariant};
use super::launch::Emitter;
use super::CodeletError;
use crate::target::float8::encode_scaled;
use crate::target::MachineModel;
use half::f16;

/// Activations per row (the FP8 AMP's input channels).
pub const CHANNELS: usize = 32;
/// Bytes of f16 activations per row.
pub const ACT_ROW_BYTES: u32 = 64;
/// Worker issues of the cast pre-pass outside its `rpt` body: 3 `ld32`,
/// 2 `setzi`, an alignment `nop`, the `rpt` bundle.
pub const CAST_FIXED_ISSUES: u64 = 7;
/// Cast issues per row: 4 passes of a 4-bundle body.
pub const CAST_ISSUES_PER_ROW: u64 = 16;

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
        if !self.activations.is_multiple_of(8) {
            return err(format!(
                "activations address 0x{:x} is not 8-byte aligned",
                self.activations
            ));
        }
        self.block.validate()
    }

    fn prepass(&self) -> Emitter {
        let s = self.act_scale;
        let mut e = Emitter::default();
        e.solo("ld32 $m0, $mvertex_base, $mzero, 4   // f16 activations");
        e.solo("ld32 $m1, $mvertex_base, $mzero, 0   // FP8 staging (the AMP input)");
        e.solo("ld32 $m2, $mvertex_base, $mzero, 5   // cast passes (4 per row)");
        e.solo("setzi $m8, 0");
        e.solo("setzi $m9, 0");
        e.rpt(
            "$m2",
            "amp_f8_f16acts_cast",
            &[
                ("ld64step $a0:1, $m0, $m8+=, 1", "fnop"),
                (
                    "ld64step $a2:3, $m0, $m8+=, 1",
                    &format!("f16v4tof8 $a4, $a0:1, {s}"),
                ),
                ("nop", &format!("f16v4tof8 $a5, $a2:3, {s}")),
                ("st64step $a4:5, $m1, $m9+=, 1", "fnop"),
            ],
        );
        e
    }

    /// The codelet's assembly text (supervisor entry `main`).
    pub fn assembly(&self) -> Result<String, CodeletError> {
        self.validate()?;
        let pre = self.prepass();
        debug_assert_eq!(pre.issues, CAST_FIXED_ISSUES);
        let mut row = 0;
        let extra: [Vec<u32>; 6] = std::array::from_fn(|w| {
            let n = self.block.worker_rows()[w];
            let v = vec![self.activations + row * ACT_ROW_BYTES, 4 * n];
            row += n;
            v
        });
        self.block
            .assembly_with_prepass("_f16acts", &pre.text, &extra)
    }

    /// Estimated tile cycles: the FP8 block's estimate plus six cycles per
    /// cast issue of the slowest worker.
    pub fn estimate_cycles(&self) -> u64 {
        let n = u64::from(*self.block.worker_rows().iter().max().unwrap_or(&0));
        self.block.estimate_cycles() + 6 * (CAST_FIXED_ISSUES + CAST_ISSUES_PER_ROW * n)
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
