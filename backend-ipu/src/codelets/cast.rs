//! Conversion codelets: f32 -> f16, f16 -> FP8 (with a power-of-two tensor
//! scale) and FP8 -> f16 (with its scale).
//!
//! Each worker streams a contiguous share. The narrowing casts read 16
//! bytes (`ld128step`, so the input must be 16-byte aligned in interleaved
//! memory) and write 8 per two bundles, one conversion in each bundle's
//! auxiliary half:
//! ```text
//! { st64step (previous result) ; convert low half }
//! { ld128step (next input)     ; convert high half }
//! ```
//! The widening FP8 -> f16 cast reads 8 bytes and writes 16 per two bundles
//! (`ldst64pace` loads the next input and stores one result word,
//! `st64step` the other). Both run at one conversion instruction per tile
//! cycle, the auxiliary pipeline's limit. Loads read one input unit past a
//! worker's share.
//!
//! Numerics are exact roundings (RNE; FP8 saturates to +-240, NaN and
//! infinities become the NaN code 0x80), so the reference is
//! bit-identical.

use half::f16;

use super::launch::{self, split, WORKERS};
use super::CodeletError;
use ipuc_ipu_arch::float8::{decode_scaled, encode_scaled, SCALE_RANGE};

/// Which conversion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CastKind {
    /// f32 -> f16 (`f32v2tof16`).
    F32ToF16,
    /// f16 -> FP8 E4M3FNUZ: byte = f8(x * 2^-scale) (`f16v4tof8`).
    F16ToF8 {
        /// Tensor scale exponent, -31..=31.
        scale: i32,
    },
    /// FP8 E4M3FNUZ -> f16: x = f8 * 2^scale (`f8v4tof16`).
    F8ToF16 {
        /// Tensor scale exponent, -31..=31.
        scale: i32,
    },
}

impl CastKind {
    fn name(self) -> &'static str {
        match self {
            CastKind::F32ToF16 => "cast_f32_f16",
            CastKind::F16ToF8 { .. } => "cast_f16_f8",
            CastKind::F8ToF16 { .. } => "cast_f8_f16",
        }
    }

    /// Bytes per input and output element.
    pub fn sizes(self) -> (u32, u32) {
        match self {
            CastKind::F32ToF16 => (4, 2),
            CastKind::F16ToF8 { .. } => (2, 1),
            CastKind::F8ToF16 { .. } => (1, 2),
        }
    }

    /// Elements per loop iteration (two bundles).
    pub fn elements_per_iteration(self) -> u32 {
        match self {
            CastKind::F32ToF16 => 4,
            CastKind::F16ToF8 { .. } | CastKind::F8ToF16 { .. } => 8,
        }
    }

    /// Whether it needs the FP8 instructions.
    pub fn needs_fp8(self) -> bool {
        !matches!(self, CastKind::F32ToF16)
    }
}

/// One cast launch.
#[derive(Clone, Debug)]
pub struct Cast {
    /// The conversion.
    pub kind: CastKind,
    /// Elements (a multiple of [`CastKind::elements_per_iteration`]).
    pub len: u32,
    /// Input address (narrowing casts: 16-byte aligned, interleaved memory).
    pub input: u32,
    /// Output address, 8-byte aligned, in another bank than the input.
    pub output: u32,
}

/// Worker issues besides the 2 bundles per iteration, for n >= 1 iterations.
/// Narrowing: 3 `ld32`, `brz`, first load, `sub`, 2 prologue bundles, `rpt`,
/// last store, `exitz` = 11 minus the 2 bundles of the first iteration.
const NARROW_FIXED: u64 = 9;
/// Widening: 3 `ld32`, `brz`, `sub`, `shl`, first load, 3 address setups,
/// `tapack`, `nop` (bundle alignment), 2 prologue bundles, `rpt`, 2 last
/// stores, `exitz` = 18, minus the 2 bundles of the first iteration.
const WIDEN_FIXED: u64 = 16;
/// A worker with nothing to do: 3 `ld32`, `brz`, `exitz`.
const EMPTY_ISSUES: u64 = 5;

impl Cast {
    /// Iterations per worker.
    pub fn worker_iterations(&self) -> [u32; WORKERS] {
        split(self.len / self.kind.elements_per_iteration())
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), CodeletError> {
        let err = |m: String| Err(CodeletError::new(self.kind.name(), m));
        let per = self.kind.elements_per_iteration();
        if self.len == 0 || !self.len.is_multiple_of(per) {
            return err(format!(
                "length {} is not a positive multiple of {per} (pad the tensor)",
                self.len
            ));
        }
        if let CastKind::F16ToF8 { scale } | CastKind::F8ToF16 { scale } = self.kind {
            if !SCALE_RANGE.contains(&scale) {
                return err(format!("FP8 scale {scale} is outside -31..=31"));
            }
        }
        let in_align = if matches!(self.kind, CastKind::F8ToF16 { .. }) {
            8
        } else {
            16
        };
        if !self.input.is_multiple_of(in_align) {
            return err(format!(
                "input address 0x{:x} is not {in_align}-byte aligned",
                self.input
            ));
        }
        if !self.output.is_multiple_of(8) {
            return err(format!(
                "output address 0x{:x} is not 8-byte aligned",
                self.output
            ));
        }
        Ok(())
    }

    /// The codelet's assembly text (supervisor entry `main`).
    pub fn assembly(&self) -> Result<String, CodeletError> {
        self.validate()?;
        let tag = self.kind.name();
        let mut s = launch::supervisor_and_worker_header(tag, 3);
        s.push_str(
            "    ld32 $m0, $mvertex_base, $mzero, 0   // input\n    ld32 $m2, $mvertex_base, $mzero, 1   // output\n\
             \x20   ld32 $m3, $mvertex_base, $mzero, 2   // iterations\n",
        );
        s.push_str(&format!("    brz $m3, .L{tag}_done\n    sub $m3, $m3, 1\n"));
        let body = match self.kind {
            CastKind::F32ToF16 | CastKind::F16ToF8 { .. } => {
                let (lo, hi) = match self.kind {
                    CastKind::F32ToF16 => (
                        "f32v2tof16 $a4, $a0:1".to_string(),
                        "f32v2tof16 $a5, $a2:3".to_string(),
                    ),
                    CastKind::F16ToF8 { scale } => (
                        format!("f16v4tof8 $a4, $a0:1, {scale}"),
                        format!("f16v4tof8 $a5, $a2:3, {scale}"),
                    ),
                    CastKind::F8ToF16 { .. } => unreachable!("widening cast"),
                };
                format!(
                    "    ld128step $a0:3, $mzero, $m0+=, 1\n\
                     \x20   {{ nop ; {lo} }}\n\
                     \x20   {{ ld128step $a0:3, $mzero, $m0+=, 1 ; {hi} }}\n\
                     \x20   {{ rpt $m3, (.L{tag}_end - .L{tag}_start)/8 - 1 ; fnop }}\n.L{tag}_start:\n\
                     \x20   {{ st64step $a4:5, $mzero, $m2+=, 1 ; {lo} }}\n\
                     \x20   {{ ld128step $a0:3, $mzero, $m0+=, 1 ; {hi} }}\n.L{tag}_end:\n\
                     \x20   st64step $a4:5, $mzero, $m2+=, 1\n"
                )
            }
            CastKind::F8ToF16 { scale } => {
                let lo = format!("f8v4tof16 $a2:3, $a0, {scale}");
                let hi = format!("f8v4tof16 $a4:5, $a1, {scale}");
                // Packed addresses: 0 = the next input word (+1 word),
                // 2 = the low result word (+2 words); `$m6` walks the high words.
                format!(
                    "    shl $m7, $m3, 1\n    ld64 $a0:1, $m0, $mzero, 0\n\
                     \x20   add $m9, $m0, 16\n    add $m6, $m2, 8\n    setzi $m8, 2\n\
                     \x20   tapack $m4:5, $m9, $mzero, $m2\n    nop\n\
                     \x20   {{ nop ; {lo} }}\n\
                     \x20   {{ ld64 $a0:1, $m0, $mzero, 1 ; {hi} }}\n\
                     \x20   {{ rpt $m3, (.L{tag}_end - .L{tag}_start)/8 - 1 ; fnop }}\n.L{tag}_start:\n\
                     \x20   {{ st64step $a4:5, $mzero, $m6+=, 2 ; {hi} }}\n\
                     \x20   {{ ldst64pace $a0:1, $a2:3, $m4:5+=, $m8, 0b0100 ; {lo} }}\n.L{tag}_end:\n\
                     \x20   st64step $a4:5, $mzero, $m6+=, 2\n    st64 $a2:3, $m2, $mzero, $m7\n"
                )
            }
        };
        s.push_str(&body);
        s.push_str(&format!(".L{tag}_done:\n    exitz $mzero\n"));
        let shares = self.worker_iterations();
        let offs = launch::offsets(&shares);
        let (isz, osz) = self.kind.sizes();
        let per = self.kind.elements_per_iteration();
        let states: [Vec<u32>; WORKERS] = std::array::from_fn(|w| {
            let e = offs[w] * per;
            vec![self.input + e * isz, self.output + e * osz, shares[w]]
        });
        s.push_str(&launch::vertex_state(tag, &states));
        Ok(s)
    }

    /// Issues of a worker with `n` iterations.
    pub fn worker_issues(&self, n: u32) -> u64 {
        if n == 0 {
            return EMPTY_ISSUES;
        }
        let fixed = match self.kind {
            CastKind::F8ToF16 { .. } => WIDEN_FIXED,
            _ => NARROW_FIXED,
        };
        2 * u64::from(n) + fixed
    }

    /// Estimated tile cycles from the instruction counts.
    pub fn estimate_cycles(&self) -> u64 {
        let worst = self
            .worker_iterations()
            .iter()
            .map(|&n| self.worker_issues(n))
            .max()
            .unwrap_or(0);
        launch::launch_cycles(worst)
    }

    /// The exact reference: output bytes for the input bytes.
    pub fn reference(&self, input: &[u8]) -> Vec<u8> {
        match self.kind {
            CastKind::F32ToF16 => input
                .chunks_exact(4)
                .flat_map(|b| {
                    let v = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                    f16::from_f64(f64::from(v)).to_bits().to_le_bytes()
                })
                .collect(),
            CastKind::F16ToF8 { scale } => input
                .chunks_exact(2)
                .map(|b| {
                    let h = f16::from_bits(u16::from_le_bytes([b[0], b[1]]));
                    encode_scaled(h.to_f64(), scale)
                })
                .collect(),
            CastKind::F8ToF16 { scale } => input
                .iter()
                .flat_map(|&q| {
                    f16::from_f64(decode_scaled(q, scale))
                        .to_bits()
                        .to_le_bytes()
                })
                .collect(),
        }
    }
}
