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
use super::launch::TextEmitter;
use super::CodeletError;
use half::f16;
use ipuc_ipu_arch::float8::encode_scaled;
use ipuc_ipu_arch::MachineModel;

/// Activations per row (the FP8 AMP's input channels).
pub const CHANNELS: usize = 32;
/// Bytes of f16 activations per row.
pub const ACT_ROW_BYTES: u32 = 64;
/// Worker issues of the cast pre-pass of a worker with rows, beyond
/// [`CAST_ISSUES_PER_ROW`] per row: 3 `ld32`, 2 `setzi`, `brz`, `sub`, 3
/// prologue loads/casts, the `rpt` bundle and the final store (12), less
/// the one 2-bundle body pass that the prologue and the final store replace.
pub const CAST_FIXED_ISSUES: u64 = 10;
/// Cast issues per row: 4 passes of a 2-bundle body (one `ld128step` and
/// one `st64step` per 8 activations, the casts in the aux slot).
pub const CAST_ISSUES_PER_ROW: u64 = 8;
/// Cast issues of a worker without rows: 3 `ld32`, 2 `setzi`, `brz`.
pub const CAST_IDLE_ISSUES: u64 = 6;

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
        if !self.activations.is_multiple_of(8) {
            return err(format!(
                "activations address 0x{:x} is not 8-byte aligned",
                self.activations
            ));
        }
        self.block.validate()
    }

    fn prepass(&self) -> TextEmitter {
        let s = self.act_scale;
        let mut e = TextEmitter::default();
        e.solo("ld32 $m0, $mvertex_base, $mzero, 4   // f16 activations");
        e.solo("ld32 $m1, $mvertex_base, $mzero, 0   // FP8 staging (the AMP input)");
        e.solo("ld32 $m2, $mvertex_base, $mzero, 5   // 16-byte blocks (4 per row)");
        e.solo("setzi $m8, 0");
        e.solo("setzi $m9, 0");
        e.solo(&format!("brz $m2, {SKIP}"));
        e.solo("sub $m2, $m2, 1   // the last block is stored after the loop");
        // Software pipeline: entering the loop, $a0:3 holds block k+1 and
        // $a4:5 the codes of block k (a bundle reads before it writes).
        e.solo("ld128step $a0:3, $m0, $m8+=, 1");
        e.bundle("nop", &format!("f16v4tof8 $a4, $a0:1, {s}"));
        e.bundle(
            "ld128step $a0:3, $m0, $m8+=, 1",
            &format!("f16v4tof8 $a5, $a2:3, {s}"),
        );
        e.rpt(
            "$m2",
            "amp_f8_f16acts_cast",
            &[
                (
                    "st64step $a4:5, $m1, $m9+=, 1",
                    &format!("f16v4tof8 $a4, $a0:1, {s}"),
                ),
                (
                    "ld128step $a0:3, $m0, $m8+=, 1",
                    &format!("f16v4tof8 $a5, $a2:3, {s}"),
                ),
            ],
        );
        // A bundle, so the AMP code after the label stays 8-byte aligned.
        e.bundle("st64step $a4:5, $m1, $m9+=, 1", "fnop");
        e.label(SKIP);
        e
    }

    /// The codelet's assembly text (supervisor entry `main`).
    pub fn assembly(&self) -> Result<String, CodeletError> {
        self.validate()?;
        let pre = self.prepass();
        debug_assert_eq!(pre.issues, CAST_FIXED_ISSUES + 2);
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

    /// Cast pre-pass issues of a worker with `n` rows.
    pub fn cast_issues(n: u32) -> u64 {
        if n == 0 {
            CAST_IDLE_ISSUES
        } else {
            CAST_FIXED_ISSUES + CAST_ISSUES_PER_ROW * u64::from(n)
        }
    }

    /// Estimated tile cycles: the FP8 block's estimate plus six cycles per
    /// cast issue of the slowest worker.
    pub fn estimate_cycles(&self) -> u64 {
        let n = *self.block.worker_rows().iter().max().unwrap_or(&0);
        self.block.estimate_cycles() + 6 * Self::cast_issues(n)
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
