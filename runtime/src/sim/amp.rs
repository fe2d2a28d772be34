//! The accumulating matrix product (AMP) engine of one worker context.
//!
//! Semantics are those documented on the AMP entries of the ISA table
//! (`ipuc_ipu_arch::isa`): a position completes after phase 3 and
//! its results come out during the next four instructions (the 4-instruction
//! lag). Accumulation is in f32.
//!
//! The weight store (CCCS) holds raw 64-bit entries; [`WeightCache`] keeps
//! them decoded to f32 per format so that an AMP instruction does not
//! convert its 64 (or 128) weights on every issue. The cache is invalidated
//! whenever an entry is written.

use half::f16;
use ipuc_ipu_arch::float8::f8_to_f64;

use super::decode::AmpKind;

/// Weight-store entries the AMP instructions' semantics index (`$CWEI[k*4 + p]`
/// for 16 outputs k and 4 phases p); a machine model with another CCCS size
/// is refused at load.
pub const CCCS_ENTRIES: u32 = 64;
/// Instructions by which results lag their inputs: a position completes
/// after its fourth phase and comes out over the next four instructions. A
/// machine model with another AMP pipeline lag is refused at load.
pub const PIPELINE_LAG: u32 = 4;

/// Per-context AMP pipeline state.
#[derive(Clone, Debug, Default)]
pub struct AmpState {
    acc: [f32; 16],
    done: [f32; 16],
}

/// The CCCS entries decoded to f32, per weight format, computed on first use.
#[derive(Clone, Debug)]
pub struct WeightCache {
    f16: [[f32; 4]; 64],
    f32: [[f32; 2]; 64],
    f8: [[f32; 8]; 64],
    valid: u8,
}

const F16_VALID: u8 = 1;
const F32_VALID: u8 = 2;
const F8_VALID: u8 = 4;

impl Default for WeightCache {
    fn default() -> Self {
        WeightCache {
            f16: [[0.0; 4]; 64],
            f32: [[0.0; 2]; 64],
            f8: [[0.0; 8]; 64],
            valid: 0,
        }
    }
}

impl WeightCache {
    /// Forgets the decoded weights (the CCCS changed).
    #[inline(always)]
    pub fn invalidate(&mut self) {
        self.valid = 0;
    }

    fn f16(&mut self, cccs: &[u64; 64]) -> &[[f32; 4]; 64] {
        if self.valid & F16_VALID == 0 {
            for (d, &w) in self.f16.iter_mut().zip(cccs) {
                *d = halves(w);
            }
            self.valid |= F16_VALID;
        }
        &self.f16
    }

    fn f32(&mut self, cccs: &[u64; 64]) -> &[[f32; 2]; 64] {
        if self.valid & F32_VALID == 0 {
            for (d, &w) in self.f32.iter_mut().zip(cccs) {
                *d = floats(w);
            }
            self.valid |= F32_VALID;
        }
        &self.f32
    }

    fn f8(&mut self, cccs: &[u64; 64]) -> &[[f32; 8]; 64] {
        if self.valid & F8_VALID == 0 {
            for (d, &w) in self.f8.iter_mut().zip(cccs) {
                let t = f8_table();
                *d = std::array::from_fn(|i| t[((w >> (8 * i)) & 0xff) as usize]);
            }
            self.valid |= F8_VALID;
        }
        &self.f8
    }
}

/// The f32 value of every FP8 byte (a table: decoding is on the AMP hot path).
fn f8_table() -> &'static [f32; 256] {
    static TABLE: std::sync::OnceLock<[f32; 256]> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| std::array::from_fn(|q| f8_to_f64(q as u8) as f32))
}

#[inline(always)]
fn halves(v: u64) -> [f32; 4] {
    std::array::from_fn(|i| f16::from_bits((v >> (16 * i)) as u16).to_f32())
}

#[inline(always)]
fn pack_halves(v: &[f32]) -> u64 {
    v.iter().enumerate().fold(0u64, |acc, (i, x)| {
        acc | (u64::from(f16::from_f32(*x).to_bits()) << (16 * i))
    })
}

#[inline(always)]
fn floats(v: u64) -> [f32; 2] {
    [f32::from_bits(v as u32), f32::from_bits((v >> 32) as u32)]
}

#[inline(always)]
fn pack_floats(v: &[f32]) -> u64 {
    u64::from(v[0].to_bits()) | (u64::from(v[1].to_bits()) << 32)
}

impl AmpState {
    /// One phase of an AMP instruction: returns the phase's `N` finished
    /// outputs packed into the destination word, adds the `N` partials in,
    /// then adds to each of `outputs` accumulators the `dot` product of its
    /// weights for this phase (row `k * 4 + phase` of the weight cache)
    /// with the input. The variants differ in element formats and output
    /// counts only.
    #[inline(always)]
    fn phase<const N: usize, const L: usize>(
        &mut self,
        phase: usize,
        partials: [f32; N],
        pack: fn(&[f32]) -> u64,
        outputs: usize,
        weights: &[[f32; L]; 64],
        dot: impl Fn(&[f32; L]) -> f32,
    ) -> u64 {
        let out = pack(&self.done[N * phase..N * phase + N]);
        for (i, p) in partials.iter().enumerate() {
            self.acc[N * phase + i] += p;
        }
        for k in 0..outputs {
            self.acc[k] += dot(&weights[k * 4 + phase]);
        }
        self.finish_phase(phase);
        out
    }

    #[inline(always)]
    fn finish_phase(&mut self, phase: usize) {
        if phase == 3 {
            self.done = self.acc;
            self.acc = [0.0; 16];
        }
    }

    /// Executes phase `phase` of the AMP instruction `kind` on the input
    /// word `x` and the partials word `partials`; returns the 64-bit
    /// destination value.
    #[inline(always)]
    pub fn exec(
        &mut self,
        kind: AmpKind,
        wc: &mut WeightCache,
        cccs: &[u64; 64],
        phase: usize,
        x: u64,
        partials: u64,
    ) -> u64 {
        match kind {
            // `f16v4hihov4amp`: 4 f16 inputs, 16 outputs, f16 partials and results.
            AmpKind::F16HihoV4 => {
                let x = halves(x);
                self.phase(
                    phase,
                    halves(partials),
                    pack_halves,
                    16,
                    wc.f16(cccs),
                    |w| w[0] * x[0] + w[1] * x[1] + w[2] * x[2] + w[3] * x[3],
                )
            }
            // `f16v4sisoamp`: 8 outputs, f32 partials and results.
            AmpKind::F16Siso => {
                let x = halves(x);
                self.phase(phase, floats(partials), pack_floats, 8, wc.f16(cccs), |w| {
                    w[0] * x[0] + w[1] * x[1] + w[2] * x[2] + w[3] * x[3]
                })
            }
            // `f32sisov2amp`: 2 f32 inputs, 8 outputs.
            AmpKind::F32SisoV2 => {
                let x = floats(x);
                self.phase(phase, floats(partials), pack_floats, 8, wc.f32(cccs), |w| {
                    w[0] * x[0] + w[1] * x[1]
                })
            }
            // `f8v8hihov4amp`: 8 FP8 inputs, 16 outputs, f16 partials and results.
            AmpKind::F8HihoV4 => {
                let t = f8_table();
                let xs: [f32; 8] = std::array::from_fn(|i| t[((x >> (8 * i)) & 0xff) as usize]);
                self.phase(phase, halves(partials), pack_halves, 16, wc.f8(cccs), |w| {
                    let mut s = 0.0f32;
                    for (wi, xi) in w.iter().zip(&xs) {
                        s += wi * xi;
                    }
                    s
                })
            }
        }
    }
}
