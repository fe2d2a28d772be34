//! Matrix-multiply blocks on the AMP (accumulating matrix product) units:
//! `out[N,K] = in[N,C] x W[K,C]^T (+ partials[N,K])` with one of the four AMP
//! instructions, in an accumulate form (partials read from memory) or an
//! overwrite form (no partials: the AMP adds `$azeros`).
//!
//! | variant | instruction | C | K | input | weights | partials, output | MAC/tile cycle |
//! |---|---|---|---|---|---|---|---|
//! | `F16` | `f16v4hihov4amp` | 16 | 16 | f16 | f16 | f16 | 64 |
//! | `F16F32Partials` | `f16v4sisoamp` | 16 | 8 | f16 | f16 | f32 | 32 |
//! | `F32` | `f32sisov2amp` | 8 | 8 | f32 | f32 | f32 | 16 |
//! | `F8` | `f8v8hihov4amp` | 32 | 16 | f8E4M3FNUZ | f8E4M3FNUZ | f16 | 128 |
//!
//! Every variant moves 32 bytes of input, partials and output per row, as
//! 4 64-bit words, one per AMP phase: a row is 4 bundles per worker.
//!
//! The supervisor loads the weight panel (row-major `W[K][C]`, which is
//! exactly the CCCS entry order) with `ld128putcs`, starts six workers with
//! `runall` and joins them with `sync TEXCH_SYNCZONE_LOCAL`, as poplibs'
//! conv-partial supervisor does. Each worker takes a contiguous share of the
//! rows and runs a `rpt` loop of `{ ld2xst64pace ; amp }` bundles (overwrite:
//! `{ ldst64pace ; amp }`). AMP results lag their inputs by four
//! instructions and a bundle stores the previous bundle's result, so a
//! worker first runs 5 prologue bundles that load and multiply without
//! storing. The loads run 6 words (48 bytes) past a worker's rows; the caller
//! keeps those bytes inside tile memory (their values do not matter).
//!
//! FP8: the AMP multiplies the unscaled FP8 codes' values. With tensor
//! scales `sa` (activations) and `sw` (weights), the true product is
//! `2^(sa+sw)` times the block's result; partials are in the same unscaled
//! domain and the consumer applies the scale once (e.g. in the FP8->FP16 or
//! scaled-add codelet). The modelled instruction takes FP8 on both sides, so
//! FP16 activations are cast to FP8 first: by the `cast` codelets, or fused
//! into the same launch by [`super::amp_f16acts::AmpF8WeightsF16Acts`].

use half::f16;

use ipuc_dialects::ipu::SectionKind;
use ipuc_ipu_arch::float8::{f8_to_f64, F8Encoder};
use ipuc_ipu_arch::MachineModel;

use super::emitter::{inst, ld2xst64_stream, ldst64_stream, op, Emitter};
use super::launch::{emit_launch_operands, emit_runall_and_exit, StreamCounts};
use super::program::Codelet;
use super::{check_alignment, CodeletError};

/// Which AMP instruction a block uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AmpVariant {
    /// `f16v4hihov4amp`: f16 inputs and weights, f16 partials.
    F16,
    /// `f16v4sisoamp`: f16 inputs and weights, f32 partials.
    F16F32Partials,
    /// `f32sisov2amp`: f32 everything.
    F32,
    /// `f8v8hihov4amp`: FP8 inputs and weights, f16 partials.
    F8,
}

/// Whether a block adds partials from memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AmpMode {
    /// `out = partials + in x W^T`.
    Accumulate,
    /// `out = in x W^T`.
    Overwrite,
}

/// Element types the blocks read and write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Elem {
    /// IEEE binary16.
    F16,
    /// IEEE binary32.
    F32,
    /// FP8 E4M3FNUZ code (unscaled).
    F8,
}

impl Elem {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Elem::F16 => 2,
            Elem::F32 => 4,
            Elem::F8 => 1,
        }
    }

    /// Decodes little-endian elements to f64.
    pub fn decode(self, bytes: &[u8]) -> Vec<f64> {
        match self {
            Elem::F16 => bytes
                .chunks_exact(2)
                .map(|b| f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f64())
                .collect(),
            Elem::F32 => bytes
                .chunks_exact(4)
                .map(|b| f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])))
                .collect(),
            Elem::F8 => bytes.iter().map(|&q| f8_to_f64(q)).collect(),
        }
    }

    /// Encodes values to little-endian elements, rounding to nearest even
    /// (FP8: unscaled, saturating): [`ElemEncoder::push`] of each.
    pub fn encode(self, values: &[f64]) -> Vec<u8> {
        let mut out = Vec::with_capacity(values.len() * self.size());
        let mut encoder = self.encoder();
        values.iter().for_each(|&v| encoder.push(v, &mut out));
        out
    }

    /// An encoder of values one at a time ([`Self::encode`]'s rounding),
    /// for callers that produce them in order without collecting them.
    pub fn encoder(self) -> ElemEncoder {
        match self {
            Elem::F16 => ElemEncoder::F16,
            Elem::F32 => ElemEncoder::F32,
            Elem::F8 => ElemEncoder::F8(F8Encoder::new()),
        }
    }

    /// Unit roundoff of the format (half an ulp, relative).
    pub fn unit_roundoff(self) -> f64 {
        match self {
            Elem::F16 => 2f64.powi(-11),
            Elem::F32 => 2f64.powi(-24),
            Elem::F8 => 2f64.powi(-4),
        }
    }
}

/// [`Elem::encoder`]: appends values as little-endian elements of one
/// type (FP8 codes through a memo of the codes seen: a model's weights
/// take few distinct values).
pub enum ElemEncoder {
    /// [`Elem::F16`].
    F16,
    /// [`Elem::F32`].
    F32,
    /// [`Elem::F8`], with its memo.
    F8(F8Encoder),
}

impl ElemEncoder {
    /// Appends `v`'s element to `out`: rounded to nearest even (FP8:
    /// unscaled, saturating).
    #[inline]
    pub fn push(&mut self, v: f64, out: &mut Vec<u8>) {
        match self {
            ElemEncoder::F16 => out.extend_from_slice(&f16::from_f64(v).to_bits().to_le_bytes()),
            ElemEncoder::F32 => out.extend_from_slice(&(v as f32).to_le_bytes()),
            ElemEncoder::F8(f8) => out.push(f8.encode(v)),
        }
    }
}

impl AmpVariant {
    /// All variants.
    pub const ALL: [AmpVariant; 4] = [
        AmpVariant::F16,
        AmpVariant::F16F32Partials,
        AmpVariant::F32,
        AmpVariant::F8,
    ];

    /// The instruction's mnemonic.
    pub fn mnemonic(self) -> &'static str {
        match self {
            AmpVariant::F16 => "f16v4hihov4amp",
            AmpVariant::F16F32Partials => "f16v4sisoamp",
            AmpVariant::F32 => "f32sisov2amp",
            AmpVariant::F8 => "f8v8hihov4amp",
        }
    }

    /// A short name for symbols and reports.
    pub fn name(self) -> &'static str {
        match self {
            AmpVariant::F16 => "f16",
            AmpVariant::F16F32Partials => "f16_f32p",
            AmpVariant::F32 => "f32",
            AmpVariant::F8 => "f8",
        }
    }

    /// Input channels per row (C).
    pub fn in_channels(self) -> usize {
        32 / self.input_elem().size()
    }

    /// Output channels per row (K).
    pub fn out_channels(self) -> usize {
        32 / self.output_elem().size()
    }

    /// Input (and weight) element type.
    pub fn input_elem(self) -> Elem {
        match self {
            AmpVariant::F16 | AmpVariant::F16F32Partials => Elem::F16,
            AmpVariant::F32 => Elem::F32,
            AmpVariant::F8 => Elem::F8,
        }
    }

    /// Partials and output element type.
    pub fn output_elem(self) -> Elem {
        match self {
            AmpVariant::F16 | AmpVariant::F8 => Elem::F16,
            AmpVariant::F16F32Partials | AmpVariant::F32 => Elem::F32,
        }
    }

    /// Bytes of the weight panel `W[K][C]`.
    pub fn weight_bytes(self) -> usize {
        self.out_channels() * self.in_channels() * self.input_elem().size()
    }

    /// Multiply-accumulates per row.
    pub fn macs_per_row(self) -> u64 {
        (self.in_channels() * self.out_channels()) as u64
    }

    /// Multiply-accumulates per tile cycle at full issue (one AMP per
    /// cycle: 4 per row): the AMP throughput row of `ipu-machine.md`.
    pub fn macs_per_tile_cycle(self) -> u64 {
        self.macs_per_row() / 4
    }

    /// The machine's peak FLOP/s with this instruction on every tile.
    pub fn peak_flops(self, machine: &MachineModel) -> f64 {
        2.0 * self.macs_per_tile_cycle() as f64 * f64::from(machine.tiles) * machine.clock_hz
    }

    /// Whether the machine must have FP8.
    pub fn needs_fp8(self) -> bool {
        self == AmpVariant::F8
    }

    /// Float64 reference: `out[r][k] = partials[r][k] + sum_c in[r][c] * W[k][c]`
    /// over little-endian bytes, with the sum of the absolute terms (for
    /// error bounds). `partials` is `None` in overwrite mode.
    pub fn reference(
        self,
        input: &[u8],
        weights: &[u8],
        partials: Option<&[u8]>,
    ) -> Vec<(f64, f64)> {
        let (c, k) = (self.in_channels(), self.out_channels());
        let x = self.input_elem().decode(input);
        let w = self.input_elem().decode(weights);
        let p = partials.map(|p| self.output_elem().decode(p));
        let rows = x.len() / c;
        let mut out = Vec::with_capacity(rows * k);
        for r in 0..rows {
            for o in 0..k {
                let p0 = p.as_ref().map_or(0.0, |p| p[r * k + o]);
                let (mut acc, mut mag) = (p0, p0.abs());
                for i in 0..c {
                    let t = x[r * c + i] * w[o * c + i];
                    acc += t;
                    mag += t.abs();
                }
                out.push((acc, mag));
            }
        }
        out
    }

    /// The largest error the simulated block may have against the float64
    /// reference value `want` whose terms sum to `magnitude` in absolute
    /// value: f32 accumulation (one rounding per term, at most C + 1
    /// terms) plus one rounding to the output type.
    pub fn tolerance(self, want: f64, magnitude: f64) -> f64 {
        let terms = (self.in_channels() + 1) as f64;
        let accumulate = terms * 2f64.powi(-24) * magnitude;
        // A subnormal f16 result is rounded to a multiple of 2^-24.
        // Rounding the f32 sum (within `accumulate` of `want`) to the output type.
        let u = self.output_elem().unit_roundoff();
        accumulate * (1.0 + u) + u * want.abs() + 2f64.powi(-25)
    }
}

/// Placement and size of one AMP block.
#[derive(Clone, Debug)]
pub struct AmpBlock {
    /// The AMP instruction.
    pub variant: AmpVariant,
    /// Accumulate or overwrite.
    pub mode: AmpMode,
    /// Rows N (at least 1; the first `N % 6` workers take one row more).
    pub rows: u32,
    /// Input `[N,C]`, 8-byte aligned.
    pub input: u32,
    /// Partials `[N,K]`, 8-byte aligned (ignored in overwrite mode).
    pub partials: u32,
    /// Output `[N,K]`, 8-byte aligned.
    pub output: u32,
    /// Weights `W[K,C]` row-major, 16-byte aligned, in interleaved memory.
    pub weights: u32,
}

/// Workers of a tile.
const WORKERS: u32 = 6;
/// Words of a worker's packed vertex state ([`AmpBlock::packed_states`]).
pub const PACKED_STATE_WORDS: usize = 3;
/// Largest row count (the worker's `rpt` count register is 16-bit on ipu2/21).
pub const MAX_ROWS: u32 = 6 * 0xffff;

impl AmpBlock {
    /// Rows per worker.
    pub fn worker_rows(&self) -> [u32; 6] {
        std::array::from_fn(|w| self.rows / WORKERS + u32::from((w as u32) < self.rows % WORKERS))
    }

    fn err(&self, msg: String) -> CodeletError {
        CodeletError::new(format!("amp_{}", self.variant.name()), msg)
    }

    /// A block with its operands placed in the interleaved region of
    /// `machine`'s tile memory: input, partials and output each start on a
    /// 32 KiB element pair and take whole pairs (so the three accesses of
    /// one instruction never share a bank), the weights follow.
    pub fn place(
        variant: AmpVariant,
        mode: AmpMode,
        rows: u32,
        machine: &MachineModel,
    ) -> Result<AmpBlock, CodeletError> {
        let pair = 2 * machine.element_bytes;
        let span = (u64::from(rows) * 32 + u64::from(Self::READ_PAST_BYTES))
            .div_ceil(u64::from(pair))
            * u64::from(pair);
        let base = u64::from(machine.interleaved_base);
        let end = base + 3 * span + variant.weight_bytes() as u64;
        if end > u64::from(machine.sram_end) {
            return Err(CodeletError::new(
                format!("amp_{}", variant.name()),
                format!(
                    "{rows} rows need 0x{:x} bytes of interleaved memory, the tile has 0x{:x}",
                    end - base,
                    machine.sram_end - machine.interleaved_base
                ),
            ));
        }
        let block = AmpBlock {
            variant,
            mode,
            rows,
            input: base as u32,
            partials: (base + span) as u32,
            output: (base + 2 * span) as u32,
            weights: (base + 3 * span) as u32,
        };
        block.validate()?;
        Ok(block)
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), CodeletError> {
        if self.rows == 0 || self.rows > MAX_ROWS {
            return Err(self.err(format!("rows must be in 1..={MAX_ROWS}, got {}", self.rows)));
        }
        // Overwrite mode reads no partials, so their address is free.
        let partials_align = match self.mode {
            AmpMode::Accumulate => 8,
            AmpMode::Overwrite => 1,
        };
        check_alignment(
            &format!("amp_{}", self.variant.name()),
            &[
                ("input", self.input, 8),
                ("partials", self.partials, partials_align),
                ("output", self.output, 8),
                ("weights", self.weights, 16),
            ],
        )
    }

    fn tag(&self, suffix: &str) -> String {
        format!(
            "amp_{}{suffix}_{}",
            self.variant.name(),
            match self.mode {
                AmpMode::Accumulate => "acc",
                AmpMode::Overwrite => "ovw",
            }
        )
    }

    /// Emits the launch with `prepass` run by every worker before its AMP
    /// loop (free to use `$m0..$m9` and `$a0..$a7`; it must leave the code
    /// 8-byte aligned) and `extra_state[w]` appended to worker w's vertex
    /// state (after the block's 4 words; every worker the same length).
    /// `tag_suffix` keeps the symbols distinct. The block's counts exclude
    /// the prepass's issues.
    pub(crate) fn emit_with_prepass<T>(
        &self,
        e: &mut Emitter,
        tag_suffix: &str,
        prepass: impl FnOnce(&mut Emitter) -> T,
        extra_state: &[Vec<u32>; 6],
    ) -> Result<(StreamCounts, T), CodeletError> {
        self.validate()?;
        let v = self.variant;
        let state_words = 4 + extra_state[0].len();
        let tag = self.tag(tag_suffix);
        // Supervisor: load the weight panel into the CCCS, start the workers.
        e.code_section(&format!(".text.{tag}_supervisor"), SectionKind::Supervisor);
        e.function("main");
        // All three `setzi` first: `put` then waits only for the first
        // (results are readable 6 cycles after they issue) and `runall`
        // for none.
        e.solo(inst("setzi", [op::m(0), op::imm(i64::from(self.weights))]));
        emit_launch_operands(e, &tag);
        e.solo(inst("put", [op::csr("CCCSLOAD"), op::m(0)]));
        for i in 0..v.weight_bytes() / 16 {
            e.solo(inst("ld128putcs", [op::imm(2 * i as i64)]));
        }
        let supervisor = emit_runall_and_exit(e, state_words);
        // Workers.
        let (worker, body, pre) = self.emit_worker(e, &tag, prepass);
        e.data_section(".data");
        e.directive("align", &[op::imm(4)]);
        e.label(&format!("{tag}_vertex_state"));
        for (w, words) in self.vertex_states().into_iter().enumerate() {
            let mut words = words.to_vec();
            words.extend(&extra_state[w]);
            e.words(&words);
        }
        Ok((
            StreamCounts {
                supervisor,
                // No rows: the `rpt` runs zero times; the code is the same.
                empty: worker,
                worker,
                body,
                prologue_units: 0,
            },
            pre,
        ))
    }

    /// Emits the worker `{tag}_worker` (its own code section): `prepass`,
    /// then the AMP loop over the rows its vertex state names. The code
    /// depends only on the variant and mode, so one copy serves every launch
    /// on a tile. Returns the worker's issues outside the `rpt` (without the
    /// prepass's), the `rpt` body's issues per row, and what `prepass`
    /// returned.
    pub(crate) fn emit_worker<T>(
        &self,
        e: &mut Emitter,
        tag: &str,
        prepass: impl FnOnce(&mut Emitter) -> T,
    ) -> (u64, u64, T) {
        let v = self.variant;
        e.code_section(&format!(".text.{tag}_worker"), SectionKind::Worker);
        e.worker_entry(&format!("{tag}_worker"));
        let pre = prepass(e);
        let after_prepass = e.issues();
        // Vertex state: input, partials (overwrite: output), output, rows.
        e.load_state(&[(0, 0), (1, 1), (2, 2), (3, 3)]);
        e.solo(inst(
            "tapack",
            [op::m_pair(4), op::m(0), op::m(1), op::m(2)],
        ));
        let body = emit_row_pipeline(e, v, self.mode, tag);
        e.solo(inst("exitz", [op::mzero()]));
        let worker = e.issues() - after_prepass;
        e.size_of(&format!("{tag}_worker"));
        (worker, body, pre)
    }

    /// Emits the worker of [`AmpBlock::packed_states`]: its three
    /// addresses already packed in the vertex state, which spares each
    /// worker of each launch the separate addresses' loads and the
    /// `tapack` (two issues of a worker's 14 or so around its rows). The
    /// tile GEMM's launches use it ([`super::gemm::TileGemm`]). Returns
    /// the worker's issues outside its `rpt` and the body's per row.
    pub(crate) fn emit_worker_packed(&self, e: &mut Emitter, tag: &str) -> (u64, u64) {
        e.code_section(&format!(".text.{tag}_worker"), SectionKind::Worker);
        e.worker_entry(&format!("{tag}_worker"));
        let start = e.issues();
        // Vertex state: the packed addresses, rows.
        e.load_state(&[(4, 0), (5, 1), (3, 2)]);
        let body = emit_row_pipeline(e, self.variant, self.mode, tag);
        e.solo(inst("exitz", [op::mzero()]));
        let worker = e.issues() - start;
        e.size_of(&format!("{tag}_worker"));
        (worker, body)
    }

    /// The packed vertex state of each worker
    /// (the tile GEMM's worker): input, partials (overwrite: the
    /// output) and output as `tapack` packs them (21 bits each, from bit
    /// 0), in two words, then the rows; each worker starts at its first
    /// row.
    pub fn packed_states(&self) -> [[u32; PACKED_STATE_WORDS]; 6] {
        self.vertex_states().map(|[input, partials, output, rows]| {
            // Tile memory ends below 2^21 (validated addresses fit).
            let field = |a: u32| {
                debug_assert!(a <= 0x1f_ffff, "address 0x{a:x} past 21 bits");
                u64::from(a & 0x1f_ffff)
            };
            let p = field(input) | (field(partials) << 21) | (field(output) << 42);
            [p as u32, (p >> 32) as u32, rows]
        })
    }

    /// The vertex state of each worker: input, partials (overwrite: the
    /// output, read but never advanced), output, rows; each worker starts
    /// at its first row.
    pub fn vertex_states(&self) -> [[u32; 4]; 6] {
        let rows = self.worker_rows();
        let mut first = 0;
        std::array::from_fn(|w| {
            let off = first * 32;
            first += rows[w];
            let partials = match self.mode {
                AmpMode::Accumulate => self.partials + off,
                AmpMode::Overwrite => self.output + off,
            };
            [self.input + off, partials, self.output + off, rows[w]]
        })
    }

    /// The block's assembly, printed from its ops (supervisor entry `main`).
    pub fn assembly(&self) -> Result<String, CodeletError> {
        Ok(self.program(0, &MachineModel::c600())?.0.assembly())
    }

    /// Multiply-accumulates of the block.
    pub fn macs(&self) -> u64 {
        u64::from(self.rows) * self.variant.macs_per_row()
    }

    /// Poplibs' estimate for the same work per worker, in worker
    /// instructions: about `37 + 4 (n - 3)` (ipu-machine.md section 6).
    pub fn poplibs_worker_estimate(&self) -> u64 {
        let n = u64::from(*self.worker_rows().iter().max().unwrap_or(&0));
        37 + 4 * n.saturating_sub(3)
    }

    /// Bytes past the end of each operand that the workers' loads touch.
    pub const READ_PAST_BYTES: u32 = 48;
}

/// Emits a worker's AMP row pipeline: the loads that fill the AMP, the
/// `rpt` loop over the rows (each 4 bundles that load the next row and
/// store the previous row's result) and nothing after it. Expects the
/// packed addresses of input, partials (overwrite: the output, read and
/// never advanced) and output in `$m4:5` and the row count in `$m3`; reads
/// [`AmpBlock::READ_PAST_BYTES`] past the rows. Returns the loop body's
/// issues per row. Shared by [`AmpBlock`] and the poplibs-shaped vertex.
pub(crate) fn emit_row_pipeline(
    e: &mut Emitter,
    variant: AmpVariant,
    mode: AmpMode,
    tag: &str,
) -> u64 {
    // Overwrite: the second packed address (the output) is read but never advanced.
    let (prologue_sel, partials) = match mode {
        AmpMode::Accumulate => (0, op::a_pair(2)),
        AmpMode::Overwrite => (0b1100, op::azeros()),
    };
    let load = || {
        inst(
            "ld2x64pace",
            [
                op::a_quad(0),
                op::m_pair_inc(4),
                op::mzero(),
                op::imm(prologue_sel),
            ],
        )
    };
    let amp = |phase: u8| {
        inst(
            variant.mnemonic(),
            [
                op::a_pair(4),
                op::a_pair(0),
                partials.clone(),
                op::sym(format!("TAMP_F16V4_E4_P{phase}")),
            ],
        )
    };
    e.solo(load());
    for phase in [0, 1, 2, 3, 0] {
        e.bundle(load(), amp(phase));
    }
    let mem = || match mode {
        AmpMode::Accumulate => ld2xst64_stream(),
        AmpMode::Overwrite => ldst64_stream(0, 4),
    };
    e.rpt(
        op::m(3),
        tag,
        [1, 2, 3, 0].map(|phase| (mem(), amp(phase))).to_vec(),
    )
}

impl Codelet for AmpBlock {
    type Counts = StreamCounts;

    /// Emits the launch (supervisor entry `main`, six workers) and returns
    /// the issue counts its estimate is made of.
    fn emit(&self, e: &mut Emitter) -> Result<StreamCounts, CodeletError> {
        Ok(self
            .emit_with_prepass(e, "", |_| (), &Default::default())?
            .0)
    }

    /// The supervisor's code until `runall` under the pipeline rules, each
    /// worker's issues once per barrel round, then the `sync` completes and
    /// the supervisor exits.
    fn cycles(&self, counts: &StreamCounts) -> u64 {
        counts.cycles(&self.worker_rows())
    }
}
