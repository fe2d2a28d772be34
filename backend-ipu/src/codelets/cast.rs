//! Conversion codelets: f32 -> f16, f16 -> FP8 (with a power-of-two tensor
//! scale), FP8 -> f16 (with its scale), and f16 rounded to the FP8 grid
//! (f16 -> FP8 -> f16, what `nn.cast` to `f8E4M3FNUZ` does to a value that
//! an f16 product then reads).
//!
//! Each worker streams a contiguous share. The narrowing casts read 16
//! bytes (`ld128step`, so the input must be 16-byte aligned in interleaved
//! memory) and write 8 per two bundles, one conversion in each bundle's
//! auxiliary half:
//! ```text
//! { st64step (previous result) ; convert low half }
//! { ld128step (next input)     ; convert high half }
//! ```
//! and read one input unit past a worker's share. The widening FP8 -> f16
//! cast reads 8 bytes and writes 16 per three bundles, each load and store
//! an instruction of its own (so the input and output may share a memory
//! element: no instruction accesses both):
//! ```text
//! { st64step (low result)  ; convert high half }
//! { ld64step (next input)  ; fnop }
//! { st64step (high result) ; convert next low half }
//! ```
//! The rounding reads 8 bytes and writes 8 per two bundles, in place or
//! not (each unit is loaded before its result is stored):
//! ```text
//! { ld64step (next input)  ; FP8 -> f16 (previous unit) }
//! { st64step (its result)  ; f16 -> FP8 (next unit) }
//! ```
//! The narrowing casts run at one conversion instruction per tile cycle,
//! the auxiliary pipeline's limit; the widening at two per three cycles,
//! the rounding at one (two per unit of four).
//!
//! Numerics are exact roundings (RNE; FP8 saturates to +-240, NaN and
//! infinities become the NaN code 0x80), so the reference is
//! bit-identical.

use half::f16;

use super::emitter::{inst, ld64_next, op, st64_next, Emitter};
use super::launch::{self, split, StreamCounts, WORKERS};
use super::program::Codelet;
use super::{check_alignment, CodeletError};
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
    /// f16 -> f16 on the FP8 grid: x' = f8(x * 2^-scale) * 2^scale
    /// (`f16v4tof8` then `f8v4tof16`), in place or not.
    F16RoundF8 {
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
            CastKind::F16RoundF8 { .. } => "round_f16_f8",
        }
    }

    /// Bytes per input and output element.
    pub fn sizes(self) -> (u32, u32) {
        match self {
            CastKind::F32ToF16 => (4, 2),
            CastKind::F16ToF8 { .. } => (2, 1),
            CastKind::F8ToF16 { .. } => (1, 2),
            CastKind::F16RoundF8 { .. } => (2, 2),
        }
    }

    /// Elements per loop iteration (two bundles).
    pub fn elements_per_iteration(self) -> u32 {
        match self {
            CastKind::F32ToF16 | CastKind::F16RoundF8 { .. } => 4,
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
    /// Input address (narrowing casts: 16-byte aligned, interleaved memory;
    /// the others 8-byte aligned).
    pub input: u32,
    /// Output address, 8-byte aligned (the rounding's may be the input's).
    pub output: u32,
}

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
        if let CastKind::F16ToF8 { scale }
        | CastKind::F8ToF16 { scale }
        | CastKind::F16RoundF8 { scale } = self.kind
        {
            if !SCALE_RANGE.contains(&scale) {
                return err(format!("FP8 scale {scale} is outside -31..=31"));
            }
        }
        let in_align = match self.kind {
            CastKind::F8ToF16 { .. } | CastKind::F16RoundF8 { .. } => 8,
            CastKind::F32ToF16 | CastKind::F16ToF8 { .. } => 16,
        };
        check_alignment(
            self.kind.name(),
            &[("input", self.input, in_align), ("output", self.output, 8)],
        )
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
            CastKind::F16RoundF8 { scale } => input
                .chunks_exact(2)
                .flat_map(|b| {
                    let h = f16::from_bits(u16::from_le_bytes([b[0], b[1]]));
                    round_f8(h.to_f64(), scale).to_bits().to_le_bytes()
                })
                .collect(),
        }
    }
}

/// `x` rounded to the FP8 grid at `scale` and back to f16: `f8(x *
/// 2^-scale) * 2^scale`, RNE, saturating at `+-240 * 2^scale`, NaN for
/// NaN and infinities (what [`CastKind::F16RoundF8`] computes).
pub fn round_f8(x: f64, scale: i32) -> f16 {
    f16::from_f64(decode_scaled(encode_scaled(x, scale), scale))
}

impl Codelet for Cast {
    type Counts = StreamCounts;

    /// Emits the launch (supervisor entry `main`, six workers) and returns
    /// the issue counts its estimate is made of.
    fn emit(&self, e: &mut Emitter) -> Result<StreamCounts, CodeletError> {
        self.validate()?;
        let tag = self.kind.name();
        let supervisor = launch::emit_supervisor_and_worker_entry(e, tag, 3);
        let done = format!(".L{tag}_done");
        // Vertex state: input, output, iterations.
        e.load_state(&[(0, 0), (2, 1), (3, 2)]);
        e.solo(inst("brz", [op::m(3), op::sym(done.clone())]));
        let at_branch = e.issues();
        e.solo(inst("sub", [op::m(3), op::m(3), op::imm(1)]));
        let body = match self.kind {
            CastKind::F32ToF16 | CastKind::F16ToF8 { .. } => {
                // Two 64-bit results per 128-bit load: `lo` converts the
                // low pair, `hi` the high one.
                let convert = |dst: u8, src: u8| match self.kind {
                    CastKind::F16ToF8 { scale } => inst(
                        "f16v4tof8",
                        [op::a(dst), op::a_pair(src), op::imm(i64::from(scale))],
                    ),
                    _ => inst("f32v2tof16", [op::a(dst), op::a_pair(src)]),
                };
                let load = || {
                    inst(
                        "ld128step",
                        [op::a_quad(0), op::mzero(), op::m_inc(0), op::imm(1)],
                    )
                };
                let store = || st64_next(4, 2);
                e.solo(load());
                e.bundle(inst("nop", []), convert(4, 0));
                e.bundle(load(), convert(5, 2));
                let body = e.rpt(
                    op::m(3),
                    tag,
                    vec![(store(), convert(4, 0)), (load(), convert(5, 2))],
                );
                e.solo(store());
                body
            }
            CastKind::F8ToF16 { scale } => {
                let scale = op::imm(i64::from(scale));
                let lo = || inst("f8v4tof16", [op::a_pair(2), op::a(0), scale.clone()]);
                let hi = || inst("f8v4tof16", [op::a_pair(4), op::a(1), scale.clone()]);
                e.solo(ld64_next(0, 0));
                e.bundle(inst("nop", []), lo());
                let body = e.rpt(
                    op::m(3),
                    tag,
                    vec![
                        (st64_next(2, 2), hi()),
                        (ld64_next(0, 0), inst("fnop", [])),
                        (st64_next(4, 2), lo()),
                    ],
                );
                e.bundle(st64_next(2, 2), hi());
                e.solo(st64_next(4, 2));
                body
            }
            CastKind::F16RoundF8 { scale } => {
                let scale = op::imm(i64::from(scale));
                let narrow = || inst("f16v4tof8", [op::a(2), op::a_pair(0), scale.clone()]);
                let widen = || inst("f8v4tof16", [op::a_pair(4), op::a(2), scale.clone()]);
                e.solo(ld64_next(0, 0));
                e.bundle(inst("nop", []), narrow());
                let body = e.rpt(
                    op::m(3),
                    tag,
                    vec![(ld64_next(0, 0), widen()), (st64_next(4, 2), narrow())],
                );
                e.bundle(inst("nop", []), widen());
                e.solo(st64_next(4, 2));
                body
            }
        };
        e.label(&done);
        e.solo(inst("exitz", [op::mzero()]));
        let worker = e.issues();
        let shares = self.worker_iterations();
        let offs = launch::offsets(&shares);
        let (isz, osz) = self.kind.sizes();
        let per = self.kind.elements_per_iteration();
        let states: [Vec<u32>; WORKERS] = std::array::from_fn(|w| {
            let e = offs[w] * per;
            vec![self.input + e * isz, self.output + e * osz, shares[w]]
        });
        Ok(launch::end_stream_launch(
            e, tag, &states, supervisor, at_branch, worker, body,
        ))
    }

    fn cycles(&self, counts: &StreamCounts) -> u64 {
        counts.cycles(&self.worker_iterations())
    }
}
