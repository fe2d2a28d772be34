//! The tile GEMM vertex: `Y[rows, N] = X[rows, K] · W[K, N]` on one tile,
//! as a sequence of AMP launches ([`super::amp`]) driven by a supervisor
//! loop, the way poplibs' conv-partial supervisor walks its output groups
//! and input-channel passes.
//!
//! Operands are in *panel order*, the layout the AMP reads and writes
//! without any rearrangement (C input channels and K' output channels per
//! panel, both fixed by the [`AmpVariant`]):
//!
//! - input: `[k_groups][rows][C]`: panel `g` holds channels `g·C .. g·C+C`
//!   of every row, 32 bytes per row;
//! - weights: `[n_groups][k_groups][K'][C]`: one CCCS load per launch, in
//!   launch order, `panel[o][c] = W[g·C + c][j·K' + o]`;
//! - output: `[n_groups][rows][K']`: output group `j`, 32 bytes per row,
//!   groups [`TileGemm::group_stride`] bytes apart, group `j` at
//!   [`TileGemm::output_group`]`(j)`.
//!
//! For each output group the first launch overwrites (the AMP adds zeros)
//! and the other `k_groups - 1` accumulate, alternating between the two
//! halves of the group's buffer: each reads the partials where the previous
//! launch wrote them and writes the other half. In place, a bundle's store
//! (six words behind its load) would hit the bank of its own partials load
//! in interleaved memory, and a worker's store would overwrite partials the
//! next worker has not read yet; the second half starts 8 mod 16 bytes
//! after the first, so the two accesses differ in bank parity (poplibs
//! offsets its partials buffers by 8 mod 16 for the same reason). Each
//! launch has its own vertex state (six workers, three words each: the
//! three addresses packed as `tapack` packs them, and the rows,
//! [`AmpBlock::packed_states`]), 72 bytes per launch in launch order, so
//! the supervisor only advances two pointers:
//!
//! ```text
//!     setzi $m0, weights ; setzi $m2, states ; setzi $m1, ovw ; setzi $m6, acc
//!     setzi $m5, n_groups - 1
//! ng: put $CCCSLOAD, $m0 ; ld128putcs ×P ; runall $m1, $m2, 3 ; sync local
//!     add $m0, $m0, panel ; add $m2, $m2, 72 ; setzi $m4, k_groups - 2
//! kg: put $CCCSLOAD, $m0 ; ld128putcs ×P ; runall $m6, $m2, 3 ; sync local
//!     add $m0, $m0, panel ; add $m2, $m2, 72 ; brnzdec $m4, kg
//!     brnzdec $m5, ng
//! ```
//!
//! The loads of a launch run [`AmpBlock::READ_PAST_BYTES`] past the end of
//! its input and output panels; the caller keeps those bytes inside tile
//! memory. Input and output must lie in different 32 KiB element pairs of
//! interleaved memory, the weights in interleaved memory (16-byte aligned).

use ipuc_dialects::ipu::{Operand, SectionKind};
use ipuc_ipu_arch::encoding::Instr;
use ipuc_ipu_arch::pipeline::{launch_cycles_after, supervisor_schedule};
use ipuc_ipu_arch::MachineModel;

use super::amp::{AmpBlock, AmpMode, AmpVariant, PACKED_STATE_WORDS};
use super::emitter::{inst, op, Emitter};
use super::launch::WORKERS;
use super::program::Codelet;
use super::CodeletError;

/// Bytes of vertex state per launch: six workers, three words each
/// ([`AmpBlock::packed_states`]).
pub const STATE_BYTES_PER_LAUNCH: u32 = (WORKERS * PACKED_STATE_WORDS * 4) as u32;

/// One tile's GEMM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TileGemm {
    /// The AMP instruction.
    pub variant: AmpVariant,
    /// Rows of X and Y on this tile.
    pub rows: u32,
    /// Input-channel panels (K padded to a multiple of C, over C).
    pub k_groups: u32,
    /// Output-channel panels (N padded to a multiple of K', over K').
    pub n_groups: u32,
    /// X in panel order, 8-byte aligned.
    pub input: u32,
    /// The weight panels in launch order, 16-byte aligned.
    pub weights: u32,
    /// Y in panel order, 8-byte aligned.
    pub output: u32,
    /// Initial partials (a bias): `[n_groups][rows][K']` in the output's
    /// format, 32 bytes per row, at [`TileGemm::bias_group`]; `None` starts
    /// every group from zero. The first launch of each group then
    /// accumulates onto it instead of overwriting, which costs nothing.
    /// It must start 8 mod 16 bytes from the output (see the module doc).
    pub bias: Option<u32>,
    /// Whether the initial partials are in the output buffer: group `j`'s
    /// in the second half of output group `j` (which the first launch
    /// reads while it writes the first half), written there before the
    /// vertex runs ([`TileGemm::partials_in_output`]; a row broadcast, no
    /// block of their own). [`TileGemm::bias`] is then that of group 0.
    pub bias_in_output: bool,
}

impl TileGemm {
    fn err(&self, msg: String) -> CodeletError {
        CodeletError::new(format!("gemm_{}", self.variant.name()), msg)
    }

    /// Launches: one per (output group, input panel).
    pub fn launches(&self) -> u32 {
        self.n_groups * self.k_groups
    }

    /// Bytes of X in panel order.
    pub fn input_bytes(&self) -> u64 {
        u64::from(self.k_groups) * u64::from(self.rows) * 32
    }

    /// Bytes of the weight panels.
    pub fn weight_bytes(&self) -> u64 {
        u64::from(self.n_groups) * u64::from(self.k_groups) * self.variant.weight_bytes() as u64
    }

    /// Bytes of one half of a group's buffer: its rows and one word, so
    /// the second half starts 8 mod 16 bytes after the first.
    fn half(&self) -> u32 {
        self.rows * 32 + 8
    }

    /// Bytes between output groups (16-byte multiples).
    pub fn group_stride(&self) -> u32 {
        2 * self.half() + 8
    }

    /// Offset from a group's base of the half launch `g` writes.
    fn write_offset(&self, g: u32) -> u32 {
        if g.is_multiple_of(2) {
            0
        } else {
            self.half()
        }
    }

    /// Address of output group `j`'s result: `rows` rows of 32 bytes.
    pub fn output_group(&self, j: u32) -> u32 {
        self.output + j * self.group_stride() + self.write_offset(self.k_groups - 1)
    }

    /// Bytes of the output buffer.
    pub fn output_bytes(&self) -> u64 {
        u64::from(self.n_groups) * u64::from(self.group_stride())
    }

    /// Bytes of the vertex states.
    pub fn state_bytes(&self) -> u64 {
        u64::from(self.n_groups) * u64::from(self.k_groups) * u64::from(STATE_BYTES_PER_LAUNCH)
    }

    /// Multiply-accumulates, padding included.
    pub fn macs(&self) -> u64 {
        u64::from(self.launches()) * u64::from(self.rows) * self.variant.macs_per_row()
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), CodeletError> {
        if self.k_groups == 0 || self.n_groups == 0 {
            return Err(self.err(format!(
                "needs at least one panel, got {} input and {} output groups",
                self.k_groups, self.n_groups
            )));
        }
        // The loop counters are set with `setzi` (20 bits).
        if self.k_groups > 1 << 19 || self.n_groups > 1 << 19 {
            return Err(self.err("too many panels for the supervisor's loop counters".into()));
        }
        if self.bias_in_output && self.bias != Some(self.partials_in_output()) {
            return Err(self.err(format!(
                "initial partials in the output buffer must be at its second half 0x{:x}, got {:?}",
                self.partials_in_output(),
                self.bias
            )));
        }
        self.block(0, 0).validate()
    }

    /// Bytes between the bias block's groups: a group's rows and one word,
    /// so that (like the output groups, [`TileGemm::group_stride`]) they
    /// alternate 8 mod 16 and each stays 8 mod 16 from its output group.
    fn bias_stride(&self) -> u32 {
        self.rows * 32 + 8
    }

    /// Address of output group `j`'s initial partials, if there is a bias.
    pub fn bias_group(&self, j: u32) -> Option<u32> {
        let stride = if self.bias_in_output {
            self.group_stride()
        } else {
            self.bias_stride()
        };
        self.bias.map(|b| b + j * stride)
    }

    /// This vertex with its initial partials in its output buffer (if
    /// `yes` and it has a bias): [`TileGemm::bias`] at
    /// [`TileGemm::partials_in_output`].
    pub fn with_partials_in_output(self, yes: bool) -> TileGemm {
        if !yes || self.bias.is_none() {
            return self;
        }
        TileGemm {
            bias: Some(self.partials_in_output()),
            bias_in_output: true,
            ..self
        }
    }

    /// Where group 0's initial partials are when they are in the output
    /// buffer ([`TileGemm::bias_in_output`]): the second half of its
    /// buffer.
    pub fn partials_in_output(&self) -> u32 {
        self.output + self.half()
    }

    /// Bytes of the bias block (zero without one, or with the initial
    /// partials in the output buffer).
    pub fn bias_bytes(&self) -> u64 {
        match self.bias {
            Some(_) if !self.bias_in_output => {
                u64::from(self.n_groups) * u64::from(self.bias_stride())
            }
            _ => 0,
        }
    }

    /// The bias block's elements (output format) from the bias values of
    /// this tile's columns (`b[j·K' + o]`, zero past its end): each group's
    /// row repeated `rows` times, zeros in the word between groups.
    pub fn bias_block(&self, b: &[f64]) -> Vec<f64> {
        self.bias_block_with(|_, col| b.get(col).copied().unwrap_or(0.0))
    }

    /// The bias block whose row `r`, column `col` (of this tile's rows and
    /// columns) starts at `value(r, col)`: initial partials that differ
    /// from row to row (a bias plus a per-token table, say).
    pub fn bias_block_with(&self, value: impl Fn(usize, usize) -> f64) -> Vec<f64> {
        let ko = self.variant.out_channels();
        let gap = 8 / self.variant.output_elem().size();
        let mut out = Vec::with_capacity(self.bias_bytes() as usize);
        for j in 0..self.n_groups as usize {
            for r in 0..self.rows as usize {
                out.extend((0..ko).map(|o| value(r, j * ko + o)));
            }
            out.extend(std::iter::repeat_n(0.0, gap));
        }
        out
    }

    /// The AMP block of launch (`j`, `g`): output group `j`, input panel `g`.
    pub fn block(&self, j: u32, g: u32) -> AmpBlock {
        let base = self.output + j * self.group_stride();
        let partials = match (g, self.bias_group(j)) {
            (0, Some(b)) => b,
            (0, None) => base,
            _ => base + self.write_offset(g - 1),
        };
        AmpBlock {
            variant: self.variant,
            mode: if g == 0 && self.bias.is_none() {
                AmpMode::Overwrite
            } else {
                AmpMode::Accumulate
            },
            rows: self.rows,
            input: self.input + g * self.rows * 32,
            partials,
            output: base + self.write_offset(g),
            weights: self.weights + (j * self.k_groups + g) * self.variant.weight_bytes() as u32,
        }
    }

    /// The weight panels in launch order from `w`, the row-major `[K, N]`
    /// weights as elements (any type: the caller encodes them), zero past
    /// `k` rows and `n` columns.
    pub fn weight_panels<T: Copy>(&self, w: &[T], k: usize, n: usize, zero: T) -> Vec<T> {
        let mut out = Vec::with_capacity(self.weight_bytes() as usize);
        self.for_each_weight(k, n, |at| {
            out.push(at.map_or(zero, |(kk, nn)| w[kk * n + nn]));
        });
        out
    }

    /// Visits the weight panels' elements in launch order, as
    /// [`Self::weight_panels`] lays them out: `Some((row, column))` of the
    /// `[k, n]` weights, `None` for the zero padding past them (the
    /// lowering encodes each weight as it comes, without collecting the
    /// values first).
    pub fn for_each_weight(
        &self,
        k: usize,
        n: usize,
        mut visit: impl FnMut(Option<(usize, usize)>),
    ) {
        let (c, ko) = (self.variant.in_channels(), self.variant.out_channels());
        for j in 0..self.n_groups as usize {
            for g in 0..self.k_groups as usize {
                for o in 0..ko {
                    let nn = j * ko + o;
                    for i in 0..c {
                        let kk = g * c + i;
                        visit((kk < k && nn < n).then_some((kk, nn)));
                    }
                }
            }
        }
    }

    /// Emits the supervisor's launch loop into the open supervisor section
    /// (no entry label, no exit: the caller's program runs it where the
    /// compute set belongs). [`TileGemm::emit_workers`] emits what it runs.
    pub fn emit_supervisor(
        &self,
        e: &mut Emitter,
        tag: &str,
    ) -> Result<GemmSupervisorCounts, CodeletError> {
        self.emit_supervisor_with(
            e,
            tag,
            op::imm(i64::from(self.weights)),
            op::sym(format!("{tag}_vertex_state")),
        )
    }

    /// [`TileGemm::emit_supervisor`] with the addresses of the weights and
    /// of the vertex states ([`TileGemm::state_words`]) given as operands
    /// (labels, or immediates where the caller placed them).
    pub fn emit_supervisor_with(
        &self,
        e: &mut Emitter,
        tag: &str,
        weights: Operand,
        states: Operand,
    ) -> Result<GemmSupervisorCounts, CodeletError> {
        let panel = self.variant.weight_bytes() as u32;
        self.emit_supervisor_stepping(e, tag, (weights, panel), states)
    }

    /// [`TileGemm::emit_supervisor_with`] with each launch's weights
    /// `step` bytes after the last one's (a multiple of 16), not a whole
    /// panel after: a launch's CCCS load reads the panel's bytes from
    /// there, so consecutive panels overlap where `step` is less than a
    /// panel. A product whose weights are one column, each launch's row
    /// 0 of its panel, lays them end to end this way (the pooling head's
    /// probabilities, [`crate::lower::pool_head`]): its other output
    /// channels take the rows that follow, which the caller leaves
    /// finite and ignores.
    pub fn emit_supervisor_stepping(
        &self,
        e: &mut Emitter,
        tag: &str,
        (weights, step): (Operand, u32),
        states: Operand,
    ) -> Result<GemmSupervisorCounts, CodeletError> {
        self.validate()?;
        if step == 0 || !step.is_multiple_of(16) {
            return Err(self.err(format!(
                "the weights' step must be a positive multiple of 16 bytes, got {step}"
            )));
        }
        let panel = i64::from(step);
        let loads = self.variant.weight_bytes() / 16;
        let state_step = i64::from(STATE_BYTES_PER_LAUNCH);
        let (ovw, acc) = (format!("{tag}_ovw"), format!("{tag}_acc"));
        let start = e.issues();
        let code_start = e.supervisor_code().len();
        e.solo(inst("setzi", [op::m(0), weights]));
        e.solo(inst("setzi", [op::m(2), states]));
        // With a bias, every launch accumulates.
        let first = if self.bias.is_some() { &acc } else { &ovw };
        e.solo(inst(
            "setzi",
            [op::m(1), op::sym(format!("{first}_worker"))],
        ));
        e.solo(inst("setzi", [op::m(6), op::sym(format!("{acc}_worker"))]));
        e.solo(inst(
            "setzi",
            [op::m(5), op::imm(i64::from(self.n_groups - 1))],
        ));
        let setup = e.issues() - start;
        let launch = |e: &mut Emitter, entry: u8| {
            e.solo(inst("put", [op::csr("CCCSLOAD"), op::m(0)]));
            for i in 0..loads {
                e.solo(inst("ld128putcs", [op::imm(2 * i as i64)]));
            }
            e.solo(inst(
                "runall",
                [op::m(entry), op::m(2), op::imm(PACKED_STATE_WORDS as i64)],
            ));
            e.solo(inst("sync", [op::sym("TEXCH_SYNCZONE_LOCAL")]));
            e.solo(inst("add", [op::m(0), op::m(0), op::imm(panel)]));
            e.solo(inst("add", [op::m(2), op::m(2), op::imm(state_step)]));
        };
        let ng = e.fresh_label(&format!(".L{tag}_ng"));
        e.label(&ng);
        let before = e.issues();
        launch(e, 1);
        let per_launch = e.issues() - before;
        let code = e.supervisor_code();
        let base = code.len() - (per_launch as usize);
        // [put, ld128putcs x P, runall] and [sync, add, add].
        let prologue = code[base..base + 2 + loads].to_vec();
        let epilogue = code[base + 2 + loads..].to_vec();
        let setup_code = code[code_start..base].to_vec();
        if self.k_groups > 1 {
            e.solo(inst(
                "setzi",
                [op::m(4), op::imm(i64::from(self.k_groups - 2))],
            ));
            let kg = e.fresh_label(&format!(".L{tag}_kg"));
            e.label(&kg);
            launch(e, 6);
            e.solo(inst("brnzdec", [op::m(4), op::sym(kg)]));
        }
        e.solo(inst("brnzdec", [op::m(5), op::sym(ng)]));
        Ok(GemmSupervisorCounts {
            setup,
            per_launch,
            setup_code,
            prologue,
            epilogue,
        })
    }

    /// Emits the two workers (overwrite and accumulate, each in its own
    /// section) and the vertex states at `{tag}_vertex_state` in `.data`.
    pub fn emit_workers(&self, e: &mut Emitter, tag: &str) -> GemmWorkerCounts {
        let counts = self.emit_worker_code(e, tag);
        e.data_section(".data");
        e.directive("align", &[op::imm(8)]);
        e.label(&format!("{tag}_vertex_state"));
        e.words(&self.state_words());
        counts
    }

    /// The vertex states of every launch in launch order (six workers, four
    /// words each): the same on every tile with the same layout, so a
    /// lowering can place them once as a replicated constant.
    pub fn state_words(&self) -> Vec<u32> {
        let mut words = Vec::with_capacity(self.state_bytes() as usize / 4);
        for j in 0..self.n_groups {
            for g in 0..self.k_groups {
                for w in self.block(j, g).packed_states() {
                    words.extend(w);
                }
            }
        }
        words
    }

    /// Emits the two workers (overwrite and accumulate), each in its own
    /// section, without the vertex states.
    pub fn emit_worker_code(&self, e: &mut Emitter, tag: &str) -> GemmWorkerCounts {
        let (ovw, acc) = (format!("{tag}_ovw"), format!("{tag}_acc"));
        let block = self.block(0, 0);
        let (worker, body) = block.emit_worker_packed(e, &ovw);
        let (acc_worker, _) = AmpBlock {
            mode: AmpMode::Accumulate,
            ..block.clone()
        }
        .emit_worker_packed(e, &acc);
        GemmWorkerCounts {
            worker: worker.max(acc_worker),
            body,
        }
    }
}

/// Supervisor issue counts of a tile GEMM, as emitted, with the code the
/// estimate schedules under the pipeline rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GemmSupervisorCounts {
    /// Issues before the loops.
    pub setup: u64,
    /// Issues of one launch, the `sync` included (the loop's `setzi` and
    /// `brnzdec`s are added per pass).
    pub per_launch: u64,
    /// The setup's instructions.
    pub setup_code: Vec<Instr>,
    /// A launch's instructions up to `runall`.
    pub prologue: Vec<Instr>,
    /// A launch's instructions from `sync` on.
    pub epilogue: Vec<Instr>,
}

/// Worker issue counts of a tile GEMM, as emitted.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct GemmWorkerCounts {
    /// A worker's issues outside its `rpt` (the larger of the two workers).
    pub worker: u64,
    /// `rpt` body issues per row.
    pub body: u64,
}

/// Issue counts of a tile GEMM, as emitted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GemmCounts {
    /// The supervisor's.
    pub supervisor: GemmSupervisorCounts,
    /// The workers'.
    pub workers: GemmWorkerCounts,
}

impl GemmCounts {
    /// Tile cycles of `gemm` from these counts, under the pipeline rules
    /// (`ipuc_ipu_arch::pipeline`). A launch: the supervisor's CCCS loads
    /// and `runall` scheduled from a ready pipeline (every launch but the
    /// first follows a taken `brnzdec`, whose refill hides the hazards),
    /// the workers from their start, each issuing once per barrel round,
    /// then the `sync`, the pointer updates and the loop branch with its
    /// refill. The setup runs once before. The last launch's branches fall
    /// through, which the estimate charges as taken: a few cycles over.
    pub fn cycles(&self, gemm: &TileGemm, machine: &MachineModel) -> u64 {
        let s = &self.supervisor;
        let rows = gemm.block(0, 0).worker_rows();
        let workers: [u64; WORKERS] =
            std::array::from_fn(|w| self.workers.worker + u64::from(rows[w]) * self.workers.body);
        let last = |code: &[Instr]| {
            supervisor_schedule(code, machine)
                .issue
                .last()
                .map_or(0, |&c| c + 1)
        };
        let runall = last(&s.prologue).saturating_sub(1);
        // After `sync`: the two `add`s and the loop's `brnzdec` (taken),
        // whose refill the next launch waits for.
        let epilogue = last(&s.epilogue[1..]) + u64::from(machine.branch_refill_cycles);
        let launch = launch_cycles_after(runall, &workers, epilogue, machine) - 1;
        let launches = u64::from(gemm.launches());
        last(&s.setup_code) + launches * launch
    }
}

impl Codelet for TileGemm {
    type Counts = GemmCounts;

    /// The launch loop as a whole program: entry `main`, the loop, `exitz`,
    /// then the workers and vertex states.
    fn emit(&self, e: &mut Emitter) -> Result<GemmCounts, CodeletError> {
        let tag = format!("gemm_{}", self.variant.name());
        e.code_section(&format!(".text.{tag}_supervisor"), SectionKind::Supervisor);
        e.function("main");
        let supervisor = self.emit_supervisor(e, &tag)?;
        e.solo(inst("exitz", [op::mzero()]));
        e.size_of("main");
        let workers = self.emit_workers(e, &tag);
        Ok(GemmCounts {
            supervisor,
            workers,
        })
    }

    fn cycles(&self, c: &GemmCounts) -> u64 {
        // `exitz` after the loops.
        c.cycles(self, &MachineModel::c600()) + 1
    }
}
