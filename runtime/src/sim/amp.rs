//! The accumulating matrix product (AMP) engine of one worker context.
//!
//! Semantics are those documented on the AMP entries of the ISA table
//! (`ipuc_ipu_arch::isa`): a position completes after phase 3 and
//! its results come out during the next four instructions (the 4-instruction
//! lag). Accumulation is in f32.
//!
//! The weight store (CCCS) holds raw 64-bit entries; [`WeightStore`] keeps
//! them decoded to f32 per format as they are written, so that an AMP
//! instruction does not convert its 64 (or 128) weights on every issue.
//! The decoded weights are laid out input-major per phase (`[phase][input]
//! [output]`): a phase then adds each input times a row of 16 weights to
//! 16 sums, which the compiler turns into vector instructions, where the
//! output-major layout made 16 dot products of serial scalar additions (the
//! FP8 AMP's were most of the simulation time of an FP8 block). Each sum
//! adds its products in the order the dot products did, so every result is
//! bit-identical.

use ipuc_ipu_arch::float8::f8_to_f64;

use super::decode::AmpKind;
use super::f16;

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

/// Outputs a phase computes (an AMP instruction's widest: 16).
const OUTPUTS: usize = 16;
/// Phases of an AMP position.
const PHASES: usize = 4;

/// The weight store, its entries decoded to f32 for each weight format,
/// input-major per phase (nothing reads the raw entries back). Entry
/// `k * 4 + p` holds the weights of output `k` for phase `p`.
#[derive(Clone, Debug)]
pub struct WeightStore {
    f16: [[[f32; OUTPUTS]; 4]; PHASES],
    f32: [[[f32; OUTPUTS]; 2]; PHASES],
    f8: [[[f32; OUTPUTS]; 8]; PHASES],
}

impl Default for WeightStore {
    fn default() -> Self {
        WeightStore {
            f16: [[[0.0; OUTPUTS]; 4]; PHASES],
            f32: [[[0.0; OUTPUTS]; 2]; PHASES],
            f8: [[[0.0; OUTPUTS]; 8]; PHASES],
        }
    }
}

impl WeightStore {
    /// Writes entry `idx` (below [`CCCS_ENTRIES`]).
    #[inline]
    pub fn store(&mut self, idx: usize, v: u64) {
        let (k, p) = (idx / PHASES, idx % PHASES);
        for (i, w) in halves(v).into_iter().enumerate() {
            self.f16[p][i][k] = w;
        }
        for (i, w) in floats(v).into_iter().enumerate() {
            self.f32[p][i][k] = w;
        }
        let t = f8_table();
        for i in 0..8 {
            self.f8[p][i][k] = t[((v >> (8 * i)) & 0xff) as usize];
        }
    }
}

/// The f32 value of every FP8 byte (a table: decoding is on the AMP hot path).
fn f8_table() -> &'static [f32; 256] {
    static TABLE: std::sync::OnceLock<[f32; 256]> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| std::array::from_fn(|q| f8_to_f64(q as u8) as f32))
}

#[inline(always)]
fn halves(v: u64) -> [f32; 4] {
    f16::unpack4(v)
}

#[inline(always)]
fn pack_halves(v: &[f32]) -> u64 {
    f16::pack4([v[0], v[1], v[2], v[3]])
}

#[inline(always)]
fn floats(v: u64) -> [f32; 2] {
    [f32::from_bits(v as u32), f32::from_bits((v >> 32) as u32)]
}

#[inline(always)]
fn pack_floats(v: &[f32]) -> u64 {
    u64::from(v[0].to_bits()) | (u64::from(v[1].to_bits()) << 32)
}

/// How a phase's sum of products starts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum SumFrom {
    /// From 0.0, adding every product (the FP8 AMP).
    Zero,
    /// From the first product, adding the others.
    FirstProduct,
}

impl AmpState {
    /// One phase of an AMP instruction: returns the phase's `N` finished
    /// outputs packed into the destination word, adds the `N` partials in,
    /// then adds to each of the first `O` accumulators the sum of its
    /// weights for this phase times the `L` inputs, in input order. The
    /// variants differ in element formats and output counts only.
    #[inline(always)]
    fn phase<const N: usize, const L: usize, const O: usize>(
        &mut self,
        phase: usize,
        partials: [f32; N],
        pack: fn(&[f32]) -> u64,
        weights: &[[f32; OUTPUTS]; L],
        x: [f32; L],
        from: SumFrom,
    ) -> u64 {
        let out = pack(&self.done[N * phase..N * phase + N]);
        for (i, p) in partials.iter().enumerate() {
            self.acc[N * phase + i] += p;
        }
        // All 16 lanes are summed (what a vector unit does anyway); only
        // the instruction's `O` outputs are kept.
        let (mut sum, rest) = match from {
            SumFrom::Zero => ([0.0f32; OUTPUTS], 0),
            SumFrom::FirstProduct => (std::array::from_fn(|k| weights[0][k] * x[0]), 1),
        };
        for i in rest..L {
            let (w, xi) = (&weights[i], x[i]);
            for k in 0..OUTPUTS {
                sum[k] += w[k] * xi;
            }
        }
        for (a, s) in self.acc[..O].iter_mut().zip(&sum) {
            *a += s;
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
        w: &WeightStore,
        phase: usize,
        x: u64,
        partials: u64,
    ) -> u64 {
        use SumFrom::{FirstProduct, Zero};
        match kind {
            // `f16v4hihov4amp`: 4 f16 inputs, 16 outputs, f16 partials and results.
            AmpKind::F16HihoV4 => self.phase::<4, 4, 16>(
                phase,
                halves(partials),
                pack_halves,
                &w.f16[phase],
                halves(x),
                FirstProduct,
            ),
            // `f16v4sisoamp`: 8 outputs, f32 partials and results.
            AmpKind::F16Siso => self.phase::<2, 4, 8>(
                phase,
                floats(partials),
                pack_floats,
                &w.f16[phase],
                halves(x),
                FirstProduct,
            ),
            // `f32sisov2amp`: 2 f32 inputs, 8 outputs.
            AmpKind::F32SisoV2 => self.phase::<2, 2, 8>(
                phase,
                floats(partials),
                pack_floats,
                &w.f32[phase],
                floats(x),
                FirstProduct,
            ),
            // `f8v8hihov4amp`: 8 FP8 inputs, 16 outputs, f16 partials and results.
            AmpKind::F8HihoV4 => {
                let t = f8_table();
                let xs: [f32; 8] = std::array::from_fn(|i| t[((x >> (8 * i)) & 0xff) as usize]);
                self.phase::<4, 8, 16>(phase, halves(partials), pack_halves, &w.f8[phase], xs, Zero)
            }
        }
    }
}
