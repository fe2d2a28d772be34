//! FP16 AMP matrix block: `out[N,16] = in[N,16] x W[16,16]^T + partials[N,16]`
//! with FP16 partials (`f16v4hihov4amp`, 64 MAC per tile cycle).
//!
//! The supervisor loads the 512-byte weight panel into the CCCS with 32
//! `ld128putcs`, starts six workers with `runall`, and joins them with
//! `sync TEXCH_SYNCZONE_LOCAL`. Each worker takes a contiguous share of the
//! N rows (output positions) and runs a `rpt` loop of
//! `{ ld2xst64pace ; f16v4hihov4amp }` bundles, four per row. Because AMP
//! results lag their inputs by four instructions and a bundle stores the
//! previous bundle's result, a worker runs 5 prologue bundles (loads and
//! AMPs, no stores) and then `rpt` over n rows of 4 storing bundles; the
//! last 5 input loads read past the worker's rows (harmless reads of at most
//! 40 bytes, which the caller must keep inside tile memory).

use half::f16;

/// Placement and size of one AMP block.
#[derive(Clone, Debug)]
pub struct AmpBlockF16 {
    /// Rows N (at least 6: every worker takes at least one row).
    pub rows: u32,
    /// Input `[N,16]` f16, 8-byte aligned.
    pub input: u32,
    /// Partials `[N,16]` f16, 8-byte aligned, in another memory bank than input and output.
    pub partials: u32,
    /// Output `[N,16]` f16, 8-byte aligned.
    pub output: u32,
    /// Weights `W[16,16]` f16 row-major (W[k][c]: output k, input c), 16-byte aligned, interleaved memory.
    pub weights: u32,
}

/// Workers of a tile.
const WORKERS: u32 = 6;
/// Worker issues outside the per-row loop: 4 `ld32` + `tapack` + 1 load + 5 prologue bundles + `rpt` + `exitz`.
pub const WORKER_FIXED_ISSUES: u64 = 13;
/// Supervisor instructions before the workers start: 2 + 32 `ld128putcs` + 2 + `runall`.
pub const SUPERVISOR_ISSUES_BEFORE_RUN: u64 = 37;

impl AmpBlockF16 {
    /// Rows per worker (the first `rows % 6` workers take one more).
    pub fn worker_rows(&self) -> [u32; 6] {
        std::array::from_fn(|w| self.rows / WORKERS + u32::from((w as u32) < self.rows % WORKERS))
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), String> {
        if self.rows < WORKERS {
            return Err(format!(
                "AMP block needs at least {WORKERS} rows, got {}",
                self.rows
            ));
        }
        if self.rows > 4096 {
            return Err(format!(
                "AMP block rows {} exceed the 12-bit rpt count",
                self.rows
            ));
        }
        for (what, a, align) in [
            ("input", self.input, 8),
            ("partials", self.partials, 8),
            ("output", self.output, 8),
            ("weights", self.weights, 16),
        ] {
            if a % align != 0 {
                return Err(format!(
                    "{what} address 0x{a:x} is not {align}-byte aligned"
                ));
            }
        }
        Ok(())
    }

    /// The codelet's assembly text (supervisor entry `main`).
    pub fn assembly(&self) -> Result<String, String> {
        self.validate()?;
        let mut s = String::new();
        s.push_str("    .section .text.amp_f16_supervisor, \"ax\"\n    .supervisor\n    .globl main\n    .type main, @function\nmain:\n");
        s.push_str(&format!(
            "    setzi $m0, 0x{:x}\n    put $CCCSLOAD, $m0\n",
            self.weights
        ));
        for i in 0..32 {
            s.push_str(&format!("    ld128putcs {}\n", 2 * i));
        }
        s.push_str("    setzi $m1, amp_f16_worker\n    setzi $m2, amp_f16_vertex_state\n    runall $m1, $m2, 4\n");
        s.push_str("    sync TEXCH_SYNCZONE_LOCAL\n    exitz $mzero\n    .size main, . - main\n\n");
        s.push_str("    .section .text.amp_f16_worker, \"ax\"\n    .worker\n    .align 8\n    .type amp_f16_worker, @function\namp_f16_worker:\n");
        s.push_str("    ld32 $m0, $mvertex_base, $mzero, 0   // input\n    ld32 $m1, $mvertex_base, $mzero, 1   // partials\n");
        s.push_str("    ld32 $m2, $mvertex_base, $mzero, 2   // output\n    ld32 $m3, $mvertex_base, $mzero, 3   // rows\n");
        s.push_str("    tapack $m4:5, $m0, $m1, $m2\n    ld2x64pace $a0:3, $m4:5+=, $mzero, 0\n");
        for phase in [0, 1, 2, 3, 0] {
            s.push_str(&format!("    {{ ld2x64pace $a0:3, $m4:5+=, $mzero, 0\n      f16v4hihov4amp $a4:5, $a0:1, $a2:3, TAMP_F16V4_E4_P{phase} }}\n"));
        }
        s.push_str("    { rpt $m3, (.Lamp_end - .Lamp_start)/8 - 1 ; fnop }\n.Lamp_start:\n");
        for phase in [1, 2, 3, 0] {
            s.push_str(&format!("    {{ ld2xst64pace $a0:3, $a4:5, $m4:5+=, $mzero, 0\n      f16v4hihov4amp $a4:5, $a0:1, $a2:3, TAMP_F16V4_E4_P{phase} }}\n"));
        }
        s.push_str(".Lamp_end:\n    exitz $mzero\n    .size amp_f16_worker, . - amp_f16_worker\n\n    .section .data\namp_f16_vertex_state:\n");
        let mut row = 0;
        for n in self.worker_rows() {
            let off = row * 32;
            s.push_str(&format!(
                "    .word 0x{:x}, 0x{:x}, 0x{:x}, {}\n",
                self.input + off,
                self.partials + off,
                self.output + off,
                n
            ));
            row += n;
        }
        Ok(s)
    }

    /// Estimated tile cycles from the instruction counts: the supervisor
    /// issues one instruction per cycle until `runall`; then each worker
    /// issues once per 6 cycles for `4n + 13` issues (the slowest worker
    /// decides); then the supervisor resumes and exits (2 cycles).
    pub fn estimate_cycles(&self) -> u64 {
        let n = u64::from(*self.worker_rows().iter().max().unwrap_or(&0));
        SUPERVISOR_ISSUES_BEFORE_RUN + 6 * (4 * n + WORKER_FIXED_ISSUES) + 2
    }

    /// Poplibs' estimate for the same work per worker, in worker
    /// instructions: about `37 + 4 (n - 3)` (ipu-machine.md section 6).
    pub fn poplibs_worker_estimate(&self) -> u64 {
        let n = u64::from(*self.worker_rows().iter().max().unwrap_or(&0));
        37 + 4 * n.saturating_sub(3)
    }
}

/// Float64 reference: `out[r][k] = partials[r][k] + sum_c in[r][c] * W[k][c]`.
pub fn reference(input: &[f16], weights: &[f16], partials: &[f16]) -> Vec<f64> {
    let rows = input.len() / 16;
    let mut out = vec![0.0; rows * 16];
    for r in 0..rows {
        for k in 0..16 {
            let mut acc = partials[r * 16 + k].to_f64();
            for c in 0..16 {
                acc += input[r * 16 + c].to_f64() * weights[k * 16 + c].to_f64();
            }
            out[r * 16 + k] = acc;
        }
    }
    out
}
