//! The AMP block shaped as poplibs' `ConvPartial1x1Out` vertex runs it: a
//! reference for what a general-purpose vertex costs beside the lean
//! [`super::amp::AmpBlock`], and the vertex whose simulated cycles are held
//! to poplibs' published cycle-estimate formula ([`poplibs_estimate`]).
//!
//! Work: `conv_groups` independent problems, each `out[g] = in x W[g]^T`
//! for `out_groups` groups g of 16 output channels, over N rows of 16 f16
//! input channels, with `f16v4hihov4amp` (f16 partials, one input-channel
//! group: the first and only pass zeroes the partials).
//!
//! Shape (the structure of poplibs' `conv_partial_1x1_supervisor.S` and its
//! half/half 16-unit worker, written anew for this ISA model):
//! - Poplar's control code calls the vertex (`call`) with the address of its
//!   supervisor state in `$m0`; the vertex returns with `br $lr`.
//! - The supervisor parses its state: pointers to the tables of input
//!   fields, weight panels and output fields, the worker partition table,
//!   and the loop counts.
//! - It loops over conv groups and, inside, over output groups; each pass
//!   waits for the previous pass's workers (`sync`), writes the shared
//!   worker vertex state, reloads the whole weight store (32 `ld128putcs`),
//!   starts six workers on the same vertex state (`runall ..., 0`) and
//!   points `$CCCSLOAD` at the next panel.
//! - Each worker finds its own entry in the partition table (out offset,
//!   rows, in offset: three halfwords) from its context number, forms its
//!   pointers and runs the lean block's row pipeline.

use ipuc_dialects::ipu::SectionKind;
use ipuc_ipu_arch::registers::{LR, SP};
use ipuc_ipu_arch::MachineModel;

use super::amp::{emit_row_pipeline, AmpBlock, AmpMode, AmpVariant};
use super::emitter::{inst, load_state_word, op, Emitter};
use super::launch::WORKERS;
use super::program::CodeletProgram;
use super::CodeletError;

const TAG: &str = "amp_poplibs";
/// Bytes of one weight panel (16 output x 16 input channels, f16).
const PANEL_BYTES: u32 = 512;
/// Bytes of one row of a field (16 f16 channels).
const ROW_BYTES: u32 = 32;
/// The supervisor's stack frame: the shared worker vertex state (input
/// field, output field, partition table, a spare word) and the two
/// callee-saved registers it uses, `$m9` and `$m10` (the two poplibs'
/// supervisor saves).
const FRAME_BYTES: u32 = 24;

/// One poplibs-shaped AMP vertex: its sizes and where its operands live.
#[derive(Clone, Debug)]
pub struct AmpPoplibsShaped {
    /// Rows N of every field.
    pub rows: u32,
    /// Independent problems.
    pub conv_groups: u32,
    /// Groups of 16 output channels per conv group (one weight-store
    /// reload and one worker launch each).
    pub out_groups: u32,
    /// Input fields `[N,16]` f16, one per conv group, consecutive with
    /// stride [`AmpPoplibsShaped::field_stride`]; 8-byte aligned.
    pub input: u32,
    /// Output fields `[N,16]` f16, conv-group major then out group.
    pub output: u32,
    /// Weight panels `W[16][16]` f16 row-major, conv-group major then out
    /// group, 512 bytes each; 16-byte aligned in interleaved memory.
    pub weights: u32,
}

impl AmpPoplibsShaped {
    /// Bytes between consecutive fields: the rows plus the pipeline's
    /// reads past them, rounded to a 32 KiB element pair so that the three
    /// accesses of one instruction never share a bank.
    pub fn field_stride(rows: u32, machine: &MachineModel) -> u32 {
        let pair = 2 * machine.element_bytes;
        (rows * ROW_BYTES + AmpBlock::READ_PAST_BYTES).div_ceil(pair) * pair
    }

    /// A vertex with its operands placed in the interleaved region.
    pub fn place(
        rows: u32,
        conv_groups: u32,
        out_groups: u32,
        machine: &MachineModel,
    ) -> Result<Self, CodeletError> {
        let err = |m: String| Err(CodeletError::new(TAG, m));
        if rows == 0 || rows > super::amp::MAX_ROWS {
            return err(format!(
                "rows must be in 1..={}, got {rows}",
                super::amp::MAX_ROWS
            ));
        }
        if conv_groups == 0 || out_groups == 0 || conv_groups > 0x1_0000 || out_groups > 0x1_0000 {
            return err(format!(
                "conv groups and out groups must be in 1..=65536, got {conv_groups} and {out_groups}"
            ));
        }
        let stride = u64::from(Self::field_stride(rows, machine));
        let base = u64::from(machine.interleaved_base);
        let fields = u64::from(conv_groups) * (1 + u64::from(out_groups));
        let end =
            base + fields * stride + u64::from(conv_groups * out_groups) * u64::from(PANEL_BYTES);
        if end > u64::from(machine.sram_end) {
            return err(format!(
                "{rows} rows, {conv_groups} conv groups and {out_groups} out groups need 0x{:x} bytes of interleaved memory, the tile has 0x{:x}",
                end - base,
                machine.sram_end - machine.interleaved_base
            ));
        }
        let inputs = u64::from(conv_groups) * stride;
        Ok(AmpPoplibsShaped {
            rows,
            conv_groups,
            out_groups,
            input: base as u32,
            output: (base + inputs) as u32,
            weights: (base + fields * stride) as u32,
        })
    }

    /// Rows per worker: the first `N % 6` take one more.
    pub fn worker_rows(&self) -> [u32; WORKERS] {
        let w = WORKERS as u32;
        std::array::from_fn(|i| self.rows / w + u32::from((i as u32) < self.rows % w))
    }

    /// Address of conv group `c`'s input field.
    pub fn input_field(&self, c: u32, machine: &MachineModel) -> u32 {
        self.input + c * Self::field_stride(self.rows, machine)
    }

    /// Address of the output field of conv group `c`, out group `g`.
    pub fn output_field(&self, c: u32, g: u32, machine: &MachineModel) -> u32 {
        self.output + (c * self.out_groups + g) * Self::field_stride(self.rows, machine)
    }

    /// Address of the weight panel of conv group `c`, out group `g`.
    pub fn panel(&self, c: u32, g: u32) -> u32 {
        self.weights + (c * self.out_groups + g) * PANEL_BYTES
    }

    /// Multiply-accumulates of the vertex.
    pub fn macs(&self) -> u64 {
        u64::from(self.rows)
            * u64::from(self.conv_groups * self.out_groups)
            * AmpVariant::F16.macs_per_row()
    }

    /// The vertex as a program on `tile` of `machine` (supervisor entry
    /// `main`).
    pub fn program(
        &self,
        tile: u32,
        machine: &MachineModel,
    ) -> Result<CodeletProgram, CodeletError> {
        Ok(CodeletProgram::build(tile, machine, |e| self.emit(e, machine))?.0)
    }

    fn emit(&self, e: &mut Emitter, machine: &MachineModel) -> Result<(), CodeletError> {
        let worker = format!("{TAG}_worker");
        let state = format!("{TAG}_state");
        // Poplar's control code: call the vertex with its state in $m0.
        e.code_section(&format!(".text.{TAG}_main"), SectionKind::Supervisor);
        e.function("main");
        e.solo(inst("setzi", [op::m(0), op::sym(&state)]));
        e.solo(inst("call", [op::m(LR), op::sym(TAG)]));
        e.solo(inst("exitz", [op::mzero()]));
        e.size_of("main");
        self.emit_supervisor(e, &worker);
        emit_worker(e, &worker);
        self.emit_state(e, machine, &state);
        Ok(())
    }

    /// The supervisor vertex. Registers: $m0 state, $m1 input field, $m2
    /// output field, $m3 partition table then conv-group count, $m4 worker
    /// entry, $m5 out-group count, $m6 link, $m7 `$sp`, $m8..$m10 table
    /// cursors (weights, inputs, outputs), $m14 next panel.
    ///
    /// As poplibs' supervisor does, it keeps the shared worker vertex
    /// state in a frame on its own stack ([`FRAME_BYTES`]: the four state
    /// words at `$sp`, then the callee-saved `$m9` and `$m10`, which it
    /// uses as cursors and restores before returning), so that a vertex
    /// called by control code leaves `$sp` and the caller's registers as
    /// it found them.
    fn emit_supervisor(&self, e: &mut Emitter, worker: &str) {
        let cg_loop = format!(".L{TAG}_conv_groups");
        let og_loop = format!(".L{TAG}_out_groups");
        let ld32 =
            |d: u8, word: i64| inst("ld32", [op::m(d), op::m(0), op::mzero(), op::imm(word)]);
        let step = |d: u8, cursor: u8| {
            inst(
                "ld32step",
                [op::m(d), op::mzero(), op::m_inc(cursor), op::imm(1)],
            )
        };
        e.code_section(&format!(".text.{TAG}"), SectionKind::Supervisor);
        e.function(TAG);
        let sp = op::m(SP);
        let frame = i64::from(FRAME_BYTES);
        // `st32` or `ld32` of `$m{d}` to or from word `word` of the frame.
        let frame_word = |mnemonic: &'static str, d: u8, word: i64| {
            inst(mnemonic, [op::m(d), sp.clone(), op::mzero(), op::imm(word)])
        };
        // Open the frame and parse the state; independent loads first so
        // that each result has left the pipeline when it is read.
        e.solo(inst("add", [sp.clone(), sp.clone(), op::imm(-frame)]));
        e.solo(ld32(8, 1));
        e.solo(ld32(3, 3));
        e.solo(inst("setzi", [op::m(4), op::sym(worker)]));
        e.solo(step(14, 8));
        e.solo(frame_word("st32", 9, 4));
        e.solo(frame_word("st32", 10, 5));
        e.solo(ld32(9, 0));
        e.solo(ld32(10, 2));
        e.solo(frame_word("st32", 3, 2));
        e.solo(inst("ldz16", [op::m(3), op::m(0), op::mzero(), op::imm(8)]));
        e.solo(inst("put", [op::csr("CCCSLOAD"), op::m(14)]));
        e.label(&cg_loop);
        e.solo(step(1, 9));
        e.solo(inst("ldz16", [op::m(5), op::m(0), op::mzero(), op::imm(9)]));
        e.label(&og_loop);
        e.solo(step(2, 10));
        // The panel after this one (the table ends with a spare entry).
        e.solo(step(14, 8));
        // The previous pass's workers must be done with the weight store
        // and the worker state before either is rewritten.
        e.solo(inst("sync", [op::sym("TEXCH_SYNCZONE_LOCAL")]));
        e.solo(frame_word("st32", 1, 0));
        for k in 0..32 {
            if k == 16 {
                e.solo(frame_word("st32", 2, 1));
            }
            e.solo(inst("ld128putcs", [op::imm(2 * k)]));
        }
        e.solo(inst("runall", [op::m(4), sp.clone(), op::imm(0)]));
        e.solo(inst("put", [op::csr("CCCSLOAD"), op::m(14)]));
        e.solo(inst("brnzdec", [op::m(5), op::sym(&og_loop)]));
        e.solo(inst("brnzdec", [op::m(3), op::sym(&cg_loop)]));
        e.solo(inst("sync", [op::sym("TEXCH_SYNCZONE_LOCAL")]));
        // Restore the caller's registers and close the frame.
        e.solo(frame_word("ld32", 9, 4));
        e.solo(frame_word("ld32", 10, 5));
        e.solo(inst("add", [sp.clone(), sp.clone(), op::imm(frame)]));
        e.solo(inst("br", [op::m(LR)]));
        e.size_of(TAG);
    }

    /// The supervisor state, its tables and the shared worker state.
    fn emit_state(&self, e: &mut Emitter, machine: &MachineModel, state: &str) {
        let (ins, panels, outs, partition) = (
            format!("{TAG}_inputs"),
            format!("{TAG}_panels"),
            format!("{TAG}_outputs"),
            format!("{TAG}_partition"),
        );
        e.data_section(".data");
        e.directive("align", &[op::imm(8)]);
        e.label(state);
        e.directive(
            "word",
            &[
                op::sym(&ins),
                op::sym(&panels),
                op::sym(&outs),
                op::sym(&partition),
            ],
        );
        e.words(&[(self.conv_groups - 1) | ((self.out_groups - 1) << 16)]);
        // The supervisor's stack, which holds its frame.
        let (stack_lo, stack_top) = (format!("{TAG}_stack"), format!("{TAG}_stack_top"));
        e.directive("align", &[op::imm(8)]);
        e.label(&stack_lo);
        e.words(&[0; (FRAME_BYTES / 4) as usize]);
        e.label(&stack_top);
        e.directive(
            "stack",
            &[
                op::sym("supervisor"),
                op::sym(&stack_top),
                op::imm(i64::from(FRAME_BYTES)),
            ],
        );
        // Tables; the input and panel tables carry a spare last entry for
        // the supervisor's read-ahead.
        e.label(&ins);
        let mut v: Vec<u32> = (0..self.conv_groups)
            .map(|c| self.input_field(c, machine))
            .collect();
        v.push(*v.last().unwrap_or(&0));
        e.words(&v);
        e.label(&panels);
        let mut v: Vec<u32> = (0..self.conv_groups)
            .flat_map(|c| (0..self.out_groups).map(move |g| (c, g)))
            .map(|(c, g)| self.panel(c, g))
            .collect();
        v.push(*v.last().unwrap_or(&0));
        e.words(&v);
        e.label(&outs);
        let v: Vec<u32> = (0..self.conv_groups)
            .flat_map(|c| (0..self.out_groups).map(move |g| (c, g)))
            .map(|(c, g)| self.output_field(c, g, machine))
            .collect();
        e.words(&v);
        // Partition: (out offset, rows, in offset) in rows, as halfwords.
        e.label(&partition);
        let mut halves = Vec::new();
        let mut start = 0;
        for n in self.worker_rows() {
            halves.extend([start, n, start]);
            start += n;
        }
        let words: Vec<u32> = halves.chunks(2).map(|h| h[0] | (h[1] << 16)).collect();
        e.words(&words);
    }

    /// Float64 reference of conv group `c`, out group `g`: `(value, sum of
    /// |terms|)` per output element.
    pub fn reference(input: &[u8], panel: &[u8]) -> Vec<(f64, f64)> {
        AmpVariant::F16.reference(input, panel, None)
    }

    /// Poplibs' estimate for this vertex ([`poplibs_estimate`] with one
    /// input-channel group of 16 channels and 16 output channels per group).
    pub fn poplibs_estimate(&self) -> u64 {
        poplibs_estimate(
            &self.worker_rows(),
            self.conv_groups,
            1,
            self.out_groups,
            16,
        )
    }
}

/// The worker: find this context's partition entry, form the pointers and
/// run the row pipeline (overwrite: the first and only input-channel pass
/// zeroes the partials).
fn emit_worker(e: &mut Emitter, worker: &str) {
    e.code_section(&format!(".text.{worker}"), SectionKind::Worker);
    e.worker_entry(worker);
    let vs = |d: u8, word: i64| load_state_word(op::m(d), word);
    let half = |d: u8, k: i64| inst("ldz16", [op::m(d), op::m(2), op::mzero(), op::imm(k)]);
    // The context number from the worker status register, as poplibs'
    // worker reads it (not from `$mworker_base`, which only the
    // simulator's `runall` sets to it); entry w is three halfwords at
    // partition + 6 w.
    e.solo(inst("get", [op::m(6), op::csr("WSR")]));
    e.solo(inst(
        "and",
        [
            op::m(6),
            op::m(6),
            op::imm(i64::from(ipuc_ipu_arch::csr::WSR_CTXTID_M1_MASK)),
        ],
    ));
    e.solo(inst("mul", [op::m(6), op::m(6), op::imm(6)]));
    e.solo(vs(2, 2));
    e.solo(vs(0, 0));
    e.solo(vs(1, 1));
    e.solo(inst("add", [op::m(2), op::m(2), op::m(6)]));
    e.solo(half(7, 0));
    e.solo(half(3, 1));
    e.solo(half(6, 2));
    e.solo(inst("shl", [op::m(7), op::m(7), op::imm(5)]));
    e.solo(inst("shl", [op::m(6), op::m(6), op::imm(5)]));
    e.solo(inst("add", [op::m(1), op::m(1), op::m(7)]));
    e.solo(inst("add", [op::m(0), op::m(0), op::m(6)]));
    e.solo(inst(
        "tapack",
        [op::m_pair(4), op::m(0), op::m(1), op::m(1)],
    ));
    emit_row_pipeline(e, AmpVariant::F16, AmpMode::Overwrite, worker);
    e.solo(inst("exitz", [op::mzero()]));
    e.size_of(worker);
}

/// Poplibs' cycle estimate for `ConvPartial1x1Out` with half activations,
/// half partials and 16 AMP units (`f16v4hihov4amp`), as derived in
/// `ipu-arch/TIMING.md` from graphcore/poplibs
/// `lib/poplin/PerformanceEstimation.hpp`
/// (`getConvPartial1x1SupervisorInnerLoopCycleEstimateHalfFloat`,
/// `getConvPartial1x1SupervisorOuterLoopCycleEstimateHalfFloat`,
/// `getConvPartialAmpSupervisorWeightLoadCycleEstimate`,
/// `conv1x1WorkerRetentionSavings`): `worker_rows[w]` output positions per
/// worker, `in_groups` input-channel groups of 16, `out_chans_per_group`
/// output channels per group (a multiple of 16).
pub fn poplibs_estimate(
    worker_rows: &[u32; WORKERS],
    conv_groups: u32,
    in_groups: u32,
    out_groups: u32,
    out_chans_per_group: u32,
) -> u64 {
    let contexts = WORKERS as u64;
    // State retention saves 7 worker cycles per call, 3 of them from the
    // input-channel pointer (half activations on 16 units).
    let (retained_total, retained_in_chan) = (7u64, 3u64);
    // Per worker (one worklist entry of n output positions), zeroing or
    // accumulating: the half-activation 16-unit code path.
    let worker = |n: u64, zeroing: bool| -> u64 {
        let tail = if zeroing { 1 } else { 2 };
        let c = match n {
            0 => 20 + tail,
            1 => 31 + tail,
            2 => 40 + tail,
            _ => (if zeroing { 37 } else { 38 }) + (n - 3) * 4,
        };
        c - retained_total
    };
    let inner = |zeroing: bool| -> u64 {
        let cycles: Vec<u64> = worker_rows
            .iter()
            .map(|&n| contexts * worker(u64::from(n), zeroing))
            .collect();
        let max = cycles.iter().copied().max().unwrap_or(0);
        let min = cycles.iter().copied().min().unwrap_or(0);
        // The supervisor's work after `runall` lands on the first worker to finish.
        max.max(min + 14)
    };
    // 512 bytes of weights at 16 bytes per cycle (ld128putcs).
    let loads = 16 * 32 / 16;
    let passes = u64::from(out_chans_per_group.div_ceil(16));
    let (c, i, g) = (
        u64::from(conv_groups),
        u64::from(in_groups),
        u64::from(out_groups),
    );
    // Half activations on 16 units take the common half/float-partials
    // path: one cycle more per conv group, one less per group loop.
    let common = 1;
    50 + contexts * (retained_total + retained_in_chan * (i * c - 1))
        + c * (12
            + common
            + (i - 1) * (15 - common + 1 + g * (19 + passes * (6 + loads + inner(false))))
            + (10 + 1 + g * (19 - common + passes * (7 + loads + inner(true)))))
}
