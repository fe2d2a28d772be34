//! The accumulating matrix product (AMP) engine of one worker context.
//!
//! Semantics are those documented on the AMP entries of the ISA table
//! (`ipuc_backend_ipu::target::isa`): a position completes after phase 3 and
//! its results come out during the next four instructions (the 4-instruction
//! lag). Accumulation is in f32.

use half::f16;
use ipuc_backend_ipu::target::float8::f8_to_f64;

/// Per-context AMP pipeline state.
#[derive(Clone, Debug, Default)]
pub struct AmpState {
    acc: [f32; 16],
    done: [f32; 16],
}

fn halves(v: u64) -> [f32; 4] {
    std::array::from_fn(|i| f16::from_bits((v >> (16 * i)) as u16).to_f32())
}

fn pack_halves(v: &[f32]) -> u64 {
    v.iter().enumerate().fold(0u64, |acc, (i, x)| {
        acc | (u64::from(f16::from_f32(*x).to_bits()) << (16 * i))
    })
}

fn floats(v: u64) -> [f32; 2] {
    [f32::from_bits(v as u32), f32::from_bits((v >> 32) as u32)]
}

fn pack_floats(v: &[f32]) -> u64 {
    u64::from(v[0].to_bits()) | (u64::from(v[1].to_bits()) << 32)
}

impl AmpState {
    fn finish_phase(&mut self, phase: usize) {
        if phase == 3 {
            self.done = self.acc;
            self.acc = [0.0; 16];
        }
    }

    /// `f16v4hihov4amp`: returns the 64-bit dst value.
    pub fn f16v4hihov4(&mut self, cccs: &[u64; 64], phase: usize, x: u64, partials: u64) -> u64 {
        let out = pack_halves(&self.done[4 * phase..4 * phase + 4]);
        let x = halves(x);
        for (i, p) in halves(partials).iter().enumerate() {
            self.acc[4 * phase + i] += p;
        }
        for k in 0..16 {
            let w = halves(cccs[k * 4 + phase]);
            self.acc[k] += w[0] * x[0] + w[1] * x[1] + w[2] * x[2] + w[3] * x[3];
        }
        self.finish_phase(phase);
        out
    }

    /// `f16v4sisoamp`: 8 outputs, f32 partials and results.
    pub fn f16v4siso(&mut self, cccs: &[u64; 64], phase: usize, x: u64, partials: u64) -> u64 {
        let out = pack_floats(&self.done[2 * phase..2 * phase + 2]);
        let x = halves(x);
        for (i, p) in floats(partials).iter().enumerate() {
            self.acc[2 * phase + i] += p;
        }
        for k in 0..8 {
            let w = halves(cccs[k * 4 + phase]);
            self.acc[k] += w[0] * x[0] + w[1] * x[1] + w[2] * x[2] + w[3] * x[3];
        }
        self.finish_phase(phase);
        out
    }

    /// `f32sisov2amp`: 2 f32 inputs, 8 outputs.
    pub fn f32sisov2(&mut self, cccs: &[u64; 64], phase: usize, x: u64, partials: u64) -> u64 {
        let out = pack_floats(&self.done[2 * phase..2 * phase + 2]);
        let x = floats(x);
        for (i, p) in floats(partials).iter().enumerate() {
            self.acc[2 * phase + i] += p;
        }
        for k in 0..8 {
            let w = floats(cccs[k * 4 + phase]);
            self.acc[k] += w[0] * x[0] + w[1] * x[1];
        }
        self.finish_phase(phase);
        out
    }

    /// `f8v8hihov4amp`: 8 FP8 inputs, 16 outputs, f16 partials and results.
    pub fn f8v8hihov4(&mut self, cccs: &[u64; 64], phase: usize, x: u64, partials: u64) -> u64 {
        let out = pack_halves(&self.done[4 * phase..4 * phase + 4]);
        let xs: [f32; 8] = std::array::from_fn(|i| f8_to_f64((x >> (8 * i)) as u8) as f32);
        for (i, p) in halves(partials).iter().enumerate() {
            self.acc[4 * phase + i] += p;
        }
        for k in 0..16 {
            let w = cccs[k * 4 + phase];
            let mut s = 0.0f32;
            for (i, xi) in xs.iter().enumerate() {
                s += f8_to_f64((w >> (8 * i)) as u8) as f32 * xi;
            }
            self.acc[k] += s;
        }
        self.finish_phase(phase);
        out
    }
}
