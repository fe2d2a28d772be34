//! Code generation for a planned product: the `ipu.executable` that runs
//! `Y = X · W` on the plan's tiles.
//!
//! Every tile of the grid gets the same memory layout: the weight panels
//! of its column block at the start of interleaved memory (a `constant`
//! `ipu.tensor` per grid column, its value a resource blob, one piece per
//! grid row: the executable loads it with the program), Y and X each in
//! whole 32 KiB element pairs at the top of memory (X and Y never share a
//! pair, so the AMP's loads and stores never share a bank), code and the
//! vertex states in region 0 (placed by the assembler). After assembly
//! every tile is checked: the sections must end below the lowest tensor.
//!
//! Supersteps: with more than one grid column, the X block of each grid
//! row enters on the row's first tile (host input `input0`) and is
//! broadcast to the row ([`super::exchange`]); a sync closes the exchange;
//! then every tile runs the GEMM vertex. Y leaves as host output
//! `output0`, read where the vertex wrote it.

use std::cell::RefCell;
use std::collections::BTreeMap;

use ipuc_dialects::ipu::{self, build, SectionKind, TensorDirection, TensorPiece};
use ipuc_ipu_arch::float8::F8Encoder;
use ipuc_ipu_arch::MachineModel;
use ipuc_ir::attributes::{AttrKind, ResourceBlob};
use ipuc_ir::{Attribute, BlockId, Context, Diagnostic, FloatKind, Location, OpId, Type};

use super::bias_broadcast::BiasBroadcast;
use super::exchange::{
    arm_insts, disarm_insts, emit_insts, first_send_cycle, received_by, send_insts, timing,
    Broadcast,
};
use super::plan::{
    bias_offset, first_result_offset, gelu_f8, input_span, output_span, reduction_add,
    reduction_buffer, BiasRows, GemmPlan,
};
use super::reduce;
use super::schedule::delay;
use crate::codelets::amp::{AmpVariant, Elem};
use crate::codelets::cast::{Cast, CastKind};
use crate::codelets::emitter::{inst, op, Emitter};
use crate::codelets::gelu::Gelu;
use crate::codelets::gemm::TileGemm;
use crate::codelets::instance_memo::InstanceMemo;
use crate::codelets::program::Codelet;
use crate::codelets::subroutine::{call_cycles, emit_call};
use crate::emit::CONSTANT_SECTION_PREFIX;

/// Where a tile's tensors live (the same on every tile of the plan).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileLayout {
    /// The weight panels.
    pub weights: u32,
    /// Where the weights are kept when they are streamed in
    /// ([`super::stream`]): this tile's piece of its column block's
    /// weights, which the exchange before the product gathers at
    /// [`Self::weights`] on every tile of the block (`None`: every tile
    /// keeps its block's weights at [`Self::weights`]).
    pub home: Option<u32>,
    /// Where the weights are kept as FP8 codes, widened to f16 at
    /// [`Self::weights`] before the vertex runs
    /// ([`PlacedGemm::emit_widen`]; `None`: kept as the vertex reads
    /// them).
    pub codes: Option<WeightCodes>,
    /// The GEMM's vertex states, at the top of region 0.
    pub states: u32,
    /// X in panel order.
    pub input: u32,
    /// Y's buffer.
    pub output: u32,
    /// The bias block (initial partials), 8 mod 16 bytes after Y's buffer
    /// (`None` also where the bias is broadcast from
    /// [`Self::bias_rows`]).
    pub bias: Option<u32>,
    /// Where a plan whose bias is broadcast ([`super::plan::Epilogue::bias_rows`])
    /// keeps its source, on the K part 0 tiles its bias values, on the
    /// others zeros: 32 bytes per output group (a value per column:
    /// column block j's), or 2 per row in whole 8-byte words (a value per
    /// row, [`super::plan::Epilogue::per_row`]: an f16 value a row),
    /// written into each output group's second half before the vertex runs
    /// ([`super::bias_broadcast`]), where the first launch reads its
    /// initial partials.
    pub bias_rows: Option<u32>,
    /// With a K split: the reduction's receive buffer and its two result
    /// buffers. The receive buffer and the first result share element
    /// pairs of their own, the result 8 mod 16 bytes after the receive
    /// buffer ([`super::plan::reduction_buffer`]: an add reads two of the
    /// three and writes the third, and no two accesses of a bundle meet
    /// in one bank). The second result buffer is Y's ([`Self::output`]):
    /// the first round reads Y and writes the first result, so Y is free
    /// from the second round on.
    pub reduction: Option<[u32; 3]>,
    /// Lowest tensor address: sections must end at or below it.
    pub tensors_start: u32,
}

/// An f16 product's weights kept as FP8 codes (half the bytes), each
/// code standing for `code * 2^scale`: the IR's FP8 weights, which f16
/// holds exactly, so the widened product is the IR's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WeightCodes {
    /// The codes: the weight panels' elements in the vertex's order, one
    /// byte each, 8-byte aligned.
    pub at: u32,
    /// The tensor's scale exponent.
    pub scale: i32,
}

impl TileLayout {
    /// The lowest byte of Y's and the reduction's buffers.
    pub fn results_bottom(&self) -> u32 {
        self.reduction
            .into_iter()
            .flatten()
            .fold(self.output, u32::min)
    }

    /// The lowest byte of X's, Y's and the reduction's buffers (where all
    /// three are the product's scratch).
    pub fn buffers_bottom(&self) -> u32 {
        self.results_bottom().min(self.input)
    }
}

/// Lays out the plan's tensors from the top of tile memory: Y in whole
/// element pairs at the top, X in whole pairs below it, and the
/// reduction's receive and first result buffers over X (X is dead once
/// the product's AMP has run, and a reduction round starts after a sync).
pub fn layout(plan: &GemmPlan, machine: &MachineModel) -> TileLayout {
    let v = plan.vertex();
    // The plan fits the tile, so every size is below 4 GiB.
    let output = machine.sram_end - output_span(&v, machine) as u32;
    let input = output - input_span(&v, plan.shape.epilogue.reduction, machine) as u32;
    let bias = bias_block_at(&v, output);
    let buffer = reduction_buffer(&v, plan.grid_k, machine) as u32;
    let reduction =
        (buffer > 0).then(|| reduction_buffers(&v, plan.grid_k, output - buffer, output));
    let states = (machine.interleaved_base - v.state_bytes() as u32) & !7;
    TileLayout {
        weights: machine.interleaved_base,
        home: None,
        codes: None,
        bias_rows: None,
        states,
        input,
        output,
        bias,
        reduction,
        tensors_start: states,
    }
}

/// Where a vertex whose output is at `output` would keep its bias block:
/// 8 mod 16 bytes after Y's buffer; `None` without a bias block (no bias,
/// or the initial partials in the output buffer).
fn bias_block_at(v: &TileGemm, output: u32) -> Option<u32> {
    (v.bias_bytes() > 0).then(|| output + bias_offset(v) as u32)
}

/// The reduction's buffers `[receive, first result, second result]` of
/// `v`'s product split `grid_k` ways, its receive buffer at `at` (a pair
/// boundary), the first result in the same pairs
/// ([`super::plan::reduction_buffer`]), the second result Y's own buffer
/// at `output`.
fn reduction_buffers(v: &TileGemm, grid_k: u32, at: u32, output: u32) -> [u32; 3] {
    [at, at + first_result_offset(v, grid_k) as u32, output]
}

/// The constant operands of a product: the weights' element values,
/// row-major `[K, N]`, and the bias's `[N]` if the plan's epilogue has one.
#[derive(Clone, Copy, Debug)]
pub struct Constants<'a> {
    /// W, row-major `[K, N]`.
    pub weights: &'a [f64],
    /// b `[N]`.
    pub bias: Option<&'a [f64]>,
}

/// Where a tile's share of Y is: output group `g`'s row `r` (of the rows
/// the tile owns, from `lo`) at `base + g * group_stride + (r - lo) * 32`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct View {
    /// Group 0's row `lo`.
    pub base: u32,
    /// Bytes between groups.
    pub group_stride: u32,
    /// The first row the view holds.
    pub lo: u32,
}

impl View {
    /// Address of group `g`'s row `r`.
    pub fn at(&self, g: u32, r: u32) -> u32 {
        self.base + g * self.group_stride + (r - self.lo) * 32
    }

    /// Whether groups of `rows` rows follow one another with no gap, so
    /// that one launch can run over all of them as one block of rows.
    pub fn groups_contiguous(&self, rows: u32) -> bool {
        self.group_stride == rows * 32
    }
}

/// Calls `launches` in order as subroutines `{prefix}{n}` added to
/// `calls`; returns their estimated cycles ([`launch_cycles`]).
pub fn emit_launches<C: Codelet + Clone + std::fmt::Debug + 'static>(
    e: &mut Emitter,
    calls: &mut Calls,
    prefix: &str,
    launches: &[C],
    machine: &MachineModel,
) -> Result<u64, crate::codelets::CodeletError> {
    for (n, launch) in launches.iter().enumerate() {
        let name = format!("{prefix}{n}");
        emit_call(e, &name);
        calls.push((name, Box::new(launch.clone())));
    }
    launch_cycles(launches, machine)
}

/// The estimated cycles of calling `launches` one after another, the
/// calls included.
pub fn launch_cycles<C: Codelet + std::fmt::Debug + 'static>(
    launches: &[C],
    machine: &MachineModel,
) -> Result<u64, crate::codelets::CodeletError> {
    launches.iter().try_fold(0, |sum, l| {
        Ok(sum + l.estimate_cycles()? + call_cycles(machine))
    })
}

/// A planned product placed on its tiles: the plan, where its tensors are
/// on every tile, the vertex with those addresses, and a tag naming its
/// code and constants (several products share a program).
#[derive(Clone, Debug)]
pub struct PlacedGemm {
    /// The plan.
    pub plan: GemmPlan,
    /// The tensors' addresses (the same on every tile).
    pub lay: TileLayout,
    /// The vertex every tile runs.
    pub vertex: TileGemm,
    /// Names its code, subroutines and constants.
    pub tag: String,
}

/// The suffix of the name of a product's vertex states
/// ([`PlacedGemm::emit_states`]): words its plan alone makes (addresses
/// and counts), the same for every layer a loop runs the product for
/// ([`super::chain_loop`] archives none of them).
pub const VERTEX_STATES: &str = "_vertex_states";

/// The names of the attention tiles' masks (`attn_mask{key block}`): made
/// of the plan's shape alone, like [`VERTEX_STATES`].
pub const ATTENTION_MASK: &str = "attn_mask";

/// The names the zero runs of the blocks a loop repeats start with
/// ([`emit_zero_runs`]): zeros, the same in every layer.
pub const ZERO_RUNS: [&str; 2] = ["zero_pad", "attn_zeros"];

/// Whether the constant named `name` is made of its block's plan alone,
/// the same for every layer a loop runs the block for: a product's vertex
/// states ([`VERTEX_STATES`]), the attention's masks ([`ATTENTION_MASK`])
/// and zero runs ([`ZERO_RUNS`]). [`super::chain_loop`] archives none of
/// them.
/// (A chain prefixes its blocks' constants with the block's index,
/// `b{k}_`; the names keep their ends.)
pub fn plan_made(name: &str) -> bool {
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit());
    name.ends_with(VERTEX_STATES)
        || base.ends_with(ATTENTION_MASK)
        || ZERO_RUNS.iter().any(|z| base.ends_with(z))
}

/// Subroutines a tile program calls, emitted after its `main`.
pub type Calls = Vec<(String, Box<dyn Instance>)>;

impl PlacedGemm {
    /// Places `plan` at `lay`.
    pub fn new(plan: &GemmPlan, lay: TileLayout, tag: &str) -> Self {
        PlacedGemm {
            plan: plan.clone(),
            lay,
            vertex: {
                let v = TileGemm {
                    input: lay.input,
                    output: lay.output,
                    weights: lay.weights,
                    bias: lay.bias,
                    ..plan.vertex()
                };
                TileGemm {
                    bias: if v.bias_in_output {
                        Some(v.partials_in_output())
                    } else {
                        lay.bias
                    },
                    ..v
                }
            },
            tag: tag.to_string(),
        }
    }

    /// Where X's panel `g` (of K part k's), row `r` (of the block) is.
    pub fn input_at(&self, g: u32, r: u32) -> u32 {
        self.lay.input + (g * self.plan.rows + r) * 32
    }

    /// The rows (of the block's `plan.rows`) the tile at K part `k` owns
    /// after the reduction.
    pub fn owned(&self, k: u32) -> (u32, u32) {
        reduce::owned(k, self.plan.grid_k, self.plan.rows)
    }

    /// Where the tile at K part `k` holds its owned rows after the
    /// reduction.
    pub fn final_view(&self, k: u32) -> View {
        let mut view = View {
            base: self.vertex.output_group(0),
            group_stride: self.vertex.group_stride(),
            lo: 0,
        };
        for (t, round) in reduce::rounds(k, self.plan.grid_k, self.plan.rows)
            .iter()
            .enumerate()
        {
            let [_, res0, res1] = self.lay.reduction.expect("a K split has buffers");
            view = View {
                base: if t % 2 == 0 { res0 } else { res1 },
                group_stride: reduce::len(round.keep) * 32,
                lo: round.keep.0,
            };
        }
        view
    }

    /// Emits tile (i, j, k)'s part of the product into the open supervisor
    /// section: the zeros under its padding input panels (the last K
    /// part's, [`super::plan::padding_fill`]), the vertex, the K split's
    /// rounds (each a sync, the exchange, then the adds at a fence,
    /// [`super::reduce`]), and the epilogue's GELU on the rows the tile owns. The subroutines it calls go to `calls`.
    /// Returns where the owned rows are and the bytes of exchange code the
    /// rounds took.
    pub fn emit_compute(
        &self,
        e: &mut Emitter,
        (i, j, k): (u32, u32, u32),
        machine: &MachineModel,
        calls: &mut Calls,
    ) -> Result<(View, u64), crate::codelets::CodeletError> {
        let mut exchange_bytes = 0;
        let plan = &self.plan;
        let (v, tag) = (plan.shape.variant, &self.tag);
        let ko = v.out_channels() as u32;
        let groups = plan.groups_of(j);
        let tile = plan.tile(i, j, k);
        // Zeros under the padding panels the vertex reads (see
        // `padding_fill`).
        if let Some(fill) = super::plan::padding_fill(plan, k, self.lay.input) {
            let name = format!("{tag}_pad_fill");
            emit_call(e, &name);
            calls.push((name, Box::new(fill)));
        }
        // The initial partials, where the bias is broadcast here.
        if plan.shape.epilogue.bias_rows == Some(BiasRows::BeforeVertex) {
            self.emit_bias_broadcast(e, calls)?;
        }
        self.vertex.emit_supervisor_with(
            e,
            tag,
            op::imm(i64::from(self.lay.weights)),
            op::imm(i64::from(self.lay.states)),
        )?;
        let mut view = View {
            base: self.vertex.output_group(0),
            group_stride: self.vertex.group_stride(),
            lo: 0,
        };
        for (t, round) in reduce::rounds(k, plan.grid_k, plan.rows).iter().enumerate() {
            let [recv, res0, res1] = self.lay.reduction.expect("a K split has buffers");
            let result = if t % 2 == 0 { res0 } else { res1 };
            let (keep, give) = (reduce::len(round.keep), reduce::len(round.give));
            let partner = plan.tile(i, j, round.partner);
            // Compute, sync, exchange: every tile reaches the exchange
            // together.
            e.solo(inst("sync", [op::sym("TEXCH_SYNCZONE_INTERNAL")]));
            let before = e.issues();
            // This tile's code and its partner's (keep and give swapped:
            // the two own the same rows before the round, so the same
            // view), the adds following at a fence once the partner's
            // last word has landed.
            let code = |arm: Option<(u32, u32)>, first: u64, chunks: &[(u32, u32)]| {
                let mut insts = match arm {
                    Some((sender, words)) => arm_insts(sender, recv, words),
                    None => disarm_insts(machine),
                };
                insts.extend(send_insts(first, insts.len() as u64, chunks));
                insts
            };
            let chunks_of = |rows: (u32, u32)| -> Vec<(u32, u32)> {
                (0..groups)
                    .filter(|_| reduce::len(rows) > 0)
                    .map(|g| (view.at(g, rows.0), reduce::len(rows) * 8))
                    .collect()
            };
            let own = code(
                (keep > 0).then_some((partner, groups * keep * 8)),
                first_send_cycle(machine, tile, &[partner]),
                &chunks_of(round.give),
            );
            emit_insts(e, &own);
            if keep > 0 {
                let theirs = code(
                    (give > 0).then_some((tile, groups * give * 8)),
                    first_send_cycle(machine, partner, &[tile]),
                    &chunks_of(round.keep),
                );
                let landed = received_by(machine, &own, (partner, tile), &theirs);
                let end = timing(machine, &own).end;
                delay(
                    e,
                    machine,
                    landed.saturating_sub(end),
                    &format!(".Lw{tag}_{t}"),
                    None,
                );
            }
            exchange_bytes += 4 * (e.issues() - before);
            for g in (0..groups).filter(|_| keep > 0) {
                let add = reduction_add(
                    v,
                    keep,
                    view.at(g, round.keep.0),
                    recv + g * keep * 32,
                    result + g * keep * 32,
                );
                let name = format!("{tag}_red{t}_{g}");
                emit_call(e, &name);
                calls.push((name, Box::new(add)));
            }
            view = View {
                base: result,
                group_stride: keep * 32,
                lo: round.keep.0,
            };
        }
        debug_assert_eq!(view, self.final_view(k));
        let (lo, hi) = self.owned(k);
        if let (Some(form), Some(f8), true) = (
            plan.shape.epilogue.gelu,
            plan.shape.epilogue.f8_pairs,
            hi > lo,
        ) {
            // FP8: one launch over every pair of groups, in place.
            let gelu = gelu_f8(
                form,
                f8,
                (hi - lo, groups),
                view.at(0, lo),
                view.group_stride,
            );
            let name = format!("{tag}_gelu_f8");
            emit_call(e, &name);
            calls.push((name, Box::new(gelu)));
        } else if let (Some(form), true) = (plan.shape.epilogue.gelu, hi > lo) {
            // One launch over every group where they are contiguous (after
            // a reduction), one per group otherwise.
            let (launches, len) = if view.groups_contiguous(hi - lo) {
                (1, (hi - lo) * ko * groups)
            } else {
                (groups, (hi - lo) * ko)
            };
            for g in 0..launches {
                let at = view.at(g, lo);
                let gelu = Gelu {
                    form,
                    len,
                    input: at,
                    output: at,
                };
                let name = format!("{tag}_gelu{g}");
                emit_call(e, &name);
                calls.push((name, Box::new(gelu)));
            }
        }
        if let Some(scaled) = plan.shape.epilogue.scaled {
            debug_assert!(
                plan.shape.epilogue.gelu.is_none(),
                "a scaled product has no GELU (it would run first)"
            );
            let launches = scaled.launches(
                (j * plan.groups, groups, ko),
                hi.saturating_sub(lo),
                view.groups_contiguous(hi.saturating_sub(lo)),
                |g| view.at(g, lo),
            );
            for (g, launch) in launches.into_iter().enumerate() {
                let name = format!("{tag}_scale{g}");
                emit_call(e, &name);
                calls.push((name, Box::new(launch)));
            }
        }
        Ok((view, exchange_bytes))
    }

    /// Emits the vertex's worker code (once per tile program).
    pub fn emit_worker_code(&self, e: &mut Emitter) {
        self.vertex.emit_worker_code(e, &self.tag);
    }

    /// Appends the vertex states (the same words on every tile of the
    /// plan) to the executable's body.
    pub fn emit_states(&self, ctx: &mut Context, exe_body: BlockId, loc: &Location) {
        let plan = &self.plan;
        let every_tile: Vec<u32> = (plan.first_tile..plan.first_tile + plan.tiles()).collect();
        let words = self.vertex.state_words();
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let t = replicated_constant(
            ctx,
            &format!("{}{VERTEX_STATES}", self.tag),
            (Type::i32(), 4, 8),
            bytes,
            (&every_tile, self.lay.states),
            loc.clone(),
        );
        ctx.append_op(exe_body, t);
    }

    /// Emits the launch that puts the bias rows into the vertex's initial
    /// partials ([`Self::bias_broadcast`]; nothing without one) and
    /// returns its estimated cycles, the call included. The product emits
    /// it before its vertex ([`BiasRows::BeforeVertex`]); a block whose
    /// product's tiles are idle in an earlier superstep calls it there
    /// ([`BiasRows::Early`]).
    pub fn emit_bias_broadcast(
        &self,
        e: &mut Emitter,
        calls: &mut Calls,
    ) -> Result<u64, crate::codelets::CodeletError> {
        let Some(b) = self.bias_broadcast() else {
            return Ok(0);
        };
        let cycles = b.estimate_cycles()?;
        let name = format!("{}_bias_broadcast", self.tag);
        emit_call(e, &name);
        calls.push((name, b.instance()));
        Ok(cycles)
    }

    /// The launch that puts the bias rows into the vertex's initial
    /// partials (`None` unless the bias is broadcast,
    /// [`super::plan::Epilogue::bias_rows`]).
    pub fn bias_broadcast(&self) -> Option<BiasBroadcast> {
        let at = self.lay.bias_rows?;
        BiasBroadcast::of(&self.vertex, self.plan.shape.epilogue.per_row, at)
    }

    /// Appends the bias blocks (if the plan's epilogue has a bias): column
    /// block j's bias rows on the K part 0 tiles, zeros on the others (the
    /// bias is added once), the same on every grid row; where the bias is
    /// broadcast ([`TileLayout::bias_rows`]) one row per output group
    /// instead of the block. `b` is `[N]`.
    pub fn emit_bias(&self, ctx: &mut Context, exe_body: BlockId, b: &[f64], loc: &Location) {
        let (plan, vertex, tag) = (&self.plan, &self.vertex, &self.tag);
        let (at, broadcast) = match (self.lay.bias, self.lay.bias_rows) {
            (Some(at), _) if !vertex.bias_in_output => (at, false),
            (_, Some(at)) if vertex.bias_in_output => (at, true),
            (None, None) => return,
            _ => unreachable!("a bias block with a broadcast bias, or rows without one"),
        };
        let v = plan.shape.variant;
        let ko = v.out_channels() as u32;
        let out = v.output_elem();
        for j in 0..plan.grid_cols {
            for k in 0..plan.grid_k {
                let first = (j * plan.groups * ko) as usize;
                let cols = if k == 0 {
                    b.get(first..).unwrap_or(&[])
                } else {
                    &[]
                };
                let values = if broadcast {
                    (0..(vertex.n_groups * ko) as usize)
                        .map(|c| cols.get(c).copied().unwrap_or(0.0))
                        .collect()
                } else {
                    vertex.bias_block(cols)
                };
                let t = replicated_constant(
                    ctx,
                    &format!(
                        "{tag}_bias{}_{}",
                        if broadcast { "_rows" } else { "" },
                        self.suffix(j, k)
                    ),
                    (output_type(v), out.size(), 8),
                    out.encode(&values),
                    (&self.tiles_of(j, k), at),
                    loc.clone(),
                );
                ctx.append_op(exe_body, t);
            }
        }
    }

    /// Appends the values of a bias that is a value per row of Y
    /// ([`super::plan::Epilogue::per_row`]; `b` is `[M]`), which the
    /// splat writes into every output group ([`BiasBroadcast::Splat`]):
    /// on the K part 0 tiles of grid row i, `b`'s values of its rows as
    /// f16 (zero past M), one constant per grid row over its column
    /// blocks; returns the zero values of the other K parts' tiles (the
    /// bias is added once), for the caller to emit with its zero runs
    /// ([`emit_zero_runs`]). Nothing without a per-row bias.
    pub fn emit_bias_values(
        &self,
        ctx: &mut Context,
        exe_body: BlockId,
        b: &[f64],
        loc: &Location,
    ) -> Vec<ZeroRun> {
        let (plan, vertex, tag) = (&self.plan, &self.vertex, &self.tag);
        let Some(at) = self.lay.bias_rows.filter(|_| plan.shape.epilogue.per_row) else {
            return Vec::new();
        };
        let v = plan.shape.variant;
        let out = v.output_elem();
        debug_assert_eq!(out.size(), 2, "a row splat writes f16 partials");
        let bytes = BiasBroadcast::source_bytes(vertex, true);
        let mut zeros = Vec::new();
        for i in 0..plan.grid_rows {
            let values: Vec<f64> = (0..bytes / 2)
                .map(|r| {
                    (r < vertex.rows)
                        .then(|| b.get((i * plan.rows + r) as usize).copied())
                        .flatten()
                        .unwrap_or(0.0)
                })
                .collect();
            let tiles: Vec<u32> = (0..plan.grid_cols).map(|j| plan.tile(i, j, 0)).collect();
            let t = replicated_constant(
                ctx,
                &format!("{tag}_bias_values_row{i}"),
                (output_type(v), out.size(), 8),
                out.encode(&values),
                (&tiles, at),
                loc.clone(),
            );
            ctx.append_op(exe_body, t);
            for j in 0..plan.grid_cols {
                for k in 1..plan.grid_k {
                    zeros.push(ZeroRun {
                        tile: plan.tile(i, j, k),
                        address: at,
                        bytes,
                    });
                }
            }
        }
        zeros
    }

    /// The tiles of column block `j` and K part `k`, one per grid row.
    fn tiles_of(&self, j: u32, k: u32) -> Vec<u32> {
        (0..self.plan.grid_rows)
            .map(|i| self.plan.tile(i, j, k))
            .collect()
    }

    /// The name suffix of column block `j` and K part `k`'s constants.
    pub fn suffix(&self, j: u32, k: u32) -> String {
        if self.plan.grid_k > 1 {
            format!("col{j}_k{k}")
        } else {
            format!("col{j}")
        }
    }

    /// Appends the product's constants to the executable's body: the
    /// vertex states (the same words on every tile), the bias blocks and
    /// the weight panels of each column block and K part.
    pub fn emit_constants(
        &self,
        ctx: &mut Context,
        exe_body: BlockId,
        constants: Constants<'_>,
        loc: &Location,
    ) {
        let (plan, tag) = (&self.plan, &self.tag);
        let v = plan.shape.variant;
        self.emit_states(ctx, exe_body, loc);
        if let Some(b) = constants.bias {
            self.emit_bias(ctx, exe_body, b, loc);
        }
        if let Some(home) = self.lay.home {
            super::stream::emit_homes(self, ctx, exe_body, constants.weights, home, loc);
            return;
        }
        for j in 0..plan.grid_cols {
            for k in 0..plan.grid_k {
                // The weight panels of column block j and K part k on
                // every grid row, as the vertex reads them or as codes.
                let (ty, bytes, at) = match self.lay.codes {
                    Some(c) => (
                        (Type::float(FloatKind::F8E4M3FNUZ), 1, 16),
                        self.weight_codes(constants.weights, (j, k), c.scale),
                        c.at,
                    ),
                    None => (
                        (element_type(v), v.input_elem().size(), 16),
                        self.weight_block(constants.weights, (j, k)),
                        self.lay.weights,
                    ),
                };
                let t = replicated_constant(
                    ctx,
                    &format!("{tag}_weights_{}", self.suffix(j, k)),
                    ty,
                    bytes,
                    (&self.tiles_of(j, k), at),
                    loc.clone(),
                );
                ctx.append_op(exe_body, t);
            }
        }
    }

    /// The launch that widens the weights' FP8 codes into the panels the
    /// vertex reads, if they are kept as codes ([`TileLayout::codes`]).
    pub fn widen(&self) -> Option<Cast> {
        self.lay.codes.map(|c| Cast {
            kind: CastKind::F8ToF16 { scale: c.scale },
            len: self.vertex.weight_bytes() as u32 / 2,
            input: c.at,
            output: self.lay.weights,
        })
    }

    /// Calls [`Self::widen`]'s launch (a subroutine added to `calls`),
    /// where the weights are kept as codes; the caller places it before
    /// the vertex, where nothing else lives at [`TileLayout::weights`].
    /// Returns its estimated cycles, the call's included.
    pub fn emit_widen(
        &self,
        e: &mut Emitter,
        machine: &MachineModel,
        calls: &mut Calls,
    ) -> Result<u64, crate::codelets::CodeletError> {
        let Some(cast) = self.widen() else {
            return Ok(0);
        };
        let cycles = launch_cycles(std::slice::from_ref(&cast), machine)?;
        let name = format!("{}_widen", self.tag);
        emit_call(e, &name);
        calls.push((name, Box::new(cast)));
        Ok(cycles)
    }

    /// [`Self::weight_block`] as FP8 codes at `scale` (one byte per f16
    /// element: the widened codes are the block).
    pub fn weight_codes(&self, weights: &[f64], (j, k): (u32, u32), scale: i32) -> Vec<u8> {
        // encode_scaled(w, scale), the codes remembered.
        let (mut f8, factor) = (F8Encoder::new(), 2f64.powi(-scale));
        let mut out = Vec::with_capacity(self.vertex.weight_bytes() as usize / 2);
        self.for_each_panel_weight(weights, (j, k), |w| out.push(f8.encode(w * factor)));
        out
    }

    /// The bytes of column block j's and K part k's weight panels as every
    /// tile of the block reads them ([`TileGemm::weight_panels`], zero
    /// padded to the vertex's [`TileGemm::weight_bytes`]), from `weights`
    /// (row-major `[K, N]`).
    pub fn weight_block(&self, weights: &[f64], (j, k): (u32, u32)) -> Vec<u8> {
        let mut encoder = self.plan.shape.variant.input_elem().encoder();
        let mut out = Vec::with_capacity(self.vertex.weight_bytes() as usize);
        self.for_each_panel_weight(weights, (j, k), |w| encoder.push(w, &mut out));
        out
    }

    /// Visits the values of [`Self::weight_block`] in order, before their
    /// encoding (so400m's 428 M weights pass here: no copies of them).
    fn for_each_panel_weight(
        &self,
        weights: &[f64],
        (j, k): (u32, u32),
        mut visit: impl FnMut(f64),
    ) {
        let (plan, vertex) = (&self.plan, &self.vertex);
        let shape = plan.shape;
        let v = shape.variant;
        let (c, ko) = (v.in_channels() as u32, v.out_channels() as u32);
        let first_col = (j * plan.groups * ko) as usize;
        let cols = ((plan.groups_of(j) * ko) as usize).min(shape.n as usize - first_col);
        let first_row = (k * plan.k_panels * c) as usize;
        let k_rows = ((plan.k_panels_of(k) * c) as usize).min(shape.k as usize - first_row);
        let n = shape.n as usize;
        vertex.for_each_weight(k_rows, cols, |at| {
            visit(at.map_or(0.0, |(kk, nn)| {
                weights[(first_row + kk) * n + first_col + nn]
            }));
        });
    }

    /// Initial partials that differ from row to row, where the plan's
    /// epilogue has a bias: `rows` is `[M, N]` row-major, and tile
    /// (i, j, 0) starts its rows of column block j from them (the other K
    /// parts from zero: the partials are added once). Emitted instead of a
    /// per-column bias ([`Constants::bias`] `None`); one constant per tile.
    pub fn emit_row_bias(
        &self,
        ctx: &mut Context,
        exe_body: BlockId,
        rows: &[f64],
        loc: &Location,
    ) {
        let (plan, vertex, tag) = (&self.plan, &self.vertex, &self.tag);
        let Some(at) = self.lay.bias else {
            return;
        };
        let v = plan.shape.variant;
        let (ko, n) = (v.out_channels(), plan.shape.n as usize);
        let out = v.output_elem();
        for i in 0..plan.grid_rows {
            for j in 0..plan.grid_cols {
                for k in 0..plan.grid_k {
                    let values = vertex.bias_block_with(|r, col| {
                        let (row, col) = (
                            (i * plan.rows) as usize + r,
                            (j * plan.groups) as usize * ko + col,
                        );
                        let real = k == 0 && row < plan.shape.m as usize && col < n;
                        if real {
                            rows[row * n + col]
                        } else {
                            0.0
                        }
                    });
                    let t = replicated_constant(
                        ctx,
                        &format!("{tag}_row_bias_{i}_{j}_{k}"),
                        (output_type(v), out.size(), 8),
                        out.encode(&values),
                        (&[plan.tile(i, j, k)], at),
                        loc.clone(),
                    );
                    ctx.append_op(exe_body, t);
                }
            }
        }
    }

    /// The host output pieces of Y held by tile (i, j, k) (its owned rows
    /// of its column block) in `view`.
    pub fn output_pieces(&self, (i, j, k): (u32, u32, u32), view: View) -> Vec<TensorPiece> {
        let plan = &self.plan;
        let shape = plan.shape;
        let ko = shape.variant.out_channels() as u32;
        let (lo, hi) = self.owned(k);
        let mut out = Vec::new();
        for g in 0..plan.groups_of(j) {
            let col = (j * plan.groups + g) * ko;
            for r in lo..hi.min(plan.rows_of(i)) {
                let first = u64::from(i * plan.rows + r) * u64::from(shape.n) + u64::from(col);
                out.push(TensorPiece {
                    tile: i64::from(plan.tile(i, j, k)),
                    address: i64::from(view.at(g, r)),
                    first: first as i64,
                    count: i64::from(ko.min(shape.n - col)),
                });
            }
        }
        out
    }
}

/// Builds the `ipu.executable` for `plan` with its constants, appended to
/// `block`; the host tensors get types `x_ty` and `y_ty`.
pub fn emit_gemm(
    ctx: &mut Context,
    block: BlockId,
    plan: &GemmPlan,
    constants: Constants<'_>,
    (x_ty, y_ty): (Type, Type),
    machine: &MachineModel,
    loc: Location,
) -> Result<Lowered, Diagnostic> {
    let shape = plan.shape;
    let v = shape.variant;
    let c = v.in_channels() as u32;
    let placed = PlacedGemm::new(plan, layout(plan, machine), "gemm0");
    let (lay, vertex) = (placed.lay, &placed.vertex);
    let (exe, exe_body) = build::executable(ctx, &machine.name, loc.clone());
    ctx.append_op(block, exe);
    let fail = |err: crate::codelets::CodeletError| Diagnostic::error(loc.clone(), err.to_string());
    let mut input_pieces = Vec::new();
    let mut output_pieces = Vec::new();
    let mut memo = InstanceMemo::new();
    let mut exchange_code_bytes_max = 0;
    for i in 0..plan.grid_rows {
        let rows = plan.rows_of(i);
        for k in 0..plan.grid_k {
            // X[rows of i, panels of k] enters on tile (i, 0, k).
            let home = plan.tile(i, 0, k);
            for g in 0..plan.k_panels_of(k) {
                let panel = k * plan.k_panels + g;
                for r in 0..rows {
                    let first =
                        u64::from(i * plan.rows + r) * u64::from(shape.k) + u64::from(panel * c);
                    input_pieces.push(TensorPiece {
                        tile: i64::from(home),
                        address: i64::from(placed.input_at(g, r)),
                        first: first as i64,
                        count: i64::from(c.min(shape.k - panel * c)),
                    });
                }
            }
        }
        for j in 0..plan.grid_cols {
            for k in 0..plan.grid_k {
                let tile = plan.tile(i, j, k);
                let (tile_op, tile_body) = build::tile(ctx, tile, None, loc.clone());
                ctx.append_op(exe_body, tile_op);
                let mut e = Emitter::new(ctx, tile_body, loc.clone());
                e.code_section(".text.main", SectionKind::Supervisor);
                e.function("main");
                let before = e.issues();
                if plan.grid_cols > 1 {
                    let broadcast = Broadcast {
                        sender: plan.tile(i, 0, k),
                        receivers: (1..plan.grid_cols).map(|jj| plan.tile(i, jj, k)).collect(),
                        address: lay.input,
                        bytes: vertex.input_bytes() as u32,
                    };
                    if j == 0 {
                        broadcast.emit_send(&mut e, machine);
                    } else {
                        broadcast.emit_receive(&mut e);
                    }
                    e.solo(inst("sync", [op::sym("TEXCH_SYNCZONE_INTERNAL")]));
                }
                let broadcast_bytes = 4 * (e.issues() - before);
                let mut calls = Calls::new();
                let (view, rounds_bytes) = placed
                    .emit_compute(&mut e, (i, j, k), machine, &mut calls)
                    .map_err(fail)?;
                exchange_code_bytes_max =
                    exchange_code_bytes_max.max(broadcast_bytes + rounds_bytes);
                e.solo(inst("exitz", [op::mzero()]));
                e.size_of("main");
                placed.emit_worker_code(&mut e);
                emit_calls(&mut e, &calls, &mut memo).map_err(fail)?;
                output_pieces.extend(placed.output_pieces((i, j, k), view));
            }
        }
    }
    memo.finish(ctx);
    placed.emit_constants(ctx, exe_body, constants, &loc);
    append_host_tensors(
        ctx,
        exe_body,
        (vec![(x_ty, input_pieces)], vec![(y_ty, output_pieces)]),
        &loc,
    );
    Ok(Lowered {
        executable: exe,
        exchange_code_bytes_max,
        block_estimate: None,
        chain_estimates: Vec::new(),
        chain_links: Vec::new(),
        loop_copies: 0,
        loop_start_copies: 0,
    })
}

/// Appends the executable's host tensors: `input0`, `input1`, ... and
/// `output0`, `output1`, ... of the given types, at the given pieces (the
/// runner binds a function's arguments and results to them in order).
pub fn append_host_tensors(
    ctx: &mut Context,
    exe_body: BlockId,
    (inputs, outputs): (Vec<HostTensor>, Vec<HostTensor>),
    loc: &Location,
) {
    let named = |prefix: &'static str, direction, list: Vec<HostTensor>| {
        list.into_iter()
            .enumerate()
            .map(move |(k, (ty, pieces))| (format!("{prefix}{k}"), ty, direction, pieces))
    };
    for (name, ty, direction, pieces) in named("input", TensorDirection::Input, inputs)
        .chain(named("output", TensorDirection::Output, outputs))
    {
        let t = build::tensor(ctx, &name, ty, direction, &pieces, loc.clone());
        ctx.append_op(exe_body, t);
    }
}

/// A host tensor of an executable: its type and where its elements are.
pub type HostTensor = (Type, Vec<TensorPiece>);

/// Where a block's tile programs sit in a larger program whose blocks run
/// one after another ([`super::chain`]): the executable to emit into, what
/// each of the block's tiles runs after the block's supersteps (the
/// exchange to the next block), the tiles' bodies earlier blocks opened,
/// and where the program goes after the block.
pub struct Frame<'a> {
    /// The program's `ipu.executable`.
    pub executable: OpId,
    /// Its body.
    pub exe_body: BlockId,
    /// Emits what tile `t` runs after the block (adding any subroutine it
    /// calls to the tile's calls); returns the bytes of exchange code it
    /// emitted.
    pub after: &'a dyn Fn(&mut Emitter, u32, &mut Calls) -> u64,
    /// Emits what tile `t` runs first when it enters the block's `main`,
    /// before the block's own code (a layer loop's copies of the coming
    /// layer's constants, [`super::chain_loop::emit_loop_start`]).
    pub before: &'a dyn Fn(&mut Emitter, u32),
    /// The bodies of the tiles' `ipu.tile` ops so far, when several blocks
    /// share the tiles: a block appends to a tile's body instead of
    /// opening a new `ipu.tile`.
    pub tiles: Option<&'a RefCell<BTreeMap<u32, BlockId>>>,
    /// The label the block's program branches to when it ends (the next
    /// block's `main`); `None`: it ends the program (`exitz`).
    pub next: Option<&'a str>,
    /// Each tile's bytes of exchange code so far, when several blocks
    /// share the tiles ([`Frame::count_exchange`] adds a block's).
    pub exchange: Option<&'a RefCell<BTreeMap<u32, u64>>>,
}

impl<'a> Frame<'a> {
    /// Adds `bytes` of exchange code to tile `t`'s count, where the frame
    /// keeps one.
    pub fn count_exchange(&self, t: u32, bytes: u64) {
        if let Some(m) = self.exchange {
            *m.borrow_mut().entry(t).or_default() += bytes;
        }
    }

    /// A frame for a block that is the whole program.
    pub fn alone(executable: OpId, exe_body: BlockId) -> Frame<'static> {
        Frame {
            executable,
            exe_body,
            after: &|_, _, _| 0,
            before: &|_, _| {},
            tiles: None,
            next: None,
            exchange: None,
        }
    }

    /// Tile `t`'s body: the one an earlier block opened when the frame
    /// shares tiles, else a new `ipu.tile` appended to the executable.
    pub fn tile_body(&self, ctx: &mut Context, t: u32, loc: &Location) -> BlockId {
        if let Some(body) = self.tiles.and_then(|m| m.borrow().get(&t).copied()) {
            return body;
        }
        let (tile_op, tile_body) = build::tile(ctx, t, None, loc.clone());
        ctx.append_op(self.exe_body, tile_op);
        if let Some(m) = self.tiles {
            m.borrow_mut().insert(t, tile_body);
        }
        tile_body
    }

    /// Opens tile `t`'s program: an emitter on its body in section
    /// `.text.main` at its `main`.
    pub fn open_tile<'c>(&self, ctx: &'c mut Context, t: u32, loc: &Location) -> Emitter<'c> {
        let tile_body = self.tile_body(ctx, t, loc);
        let mut e = Emitter::new(ctx, tile_body, loc.clone());
        e.code_section(".text.main", SectionKind::Supervisor);
        e.function("main");
        (self.before)(&mut e, t);
        e
    }

    /// Closes tile `t`'s `main`: what the tile runs after the block, then
    /// `exitz`, or a branch to the next block. Returns the bytes of
    /// exchange code emitted.
    pub fn close_tile(&self, e: &mut Emitter, t: u32, calls: &mut Calls) -> u64 {
        let xcode = (self.after)(e, t, calls);
        match self.next {
            Some(label) => e.solo(inst("bri", [op::sym(label)])),
            None => e.solo(inst("exitz", [op::mzero()])),
        }
        e.size_of("main");
        xcode
    }
}

/// Emits a block as a program of its own: a new `ipu.executable`
/// appended to `block`, the block's code through `emit` with a frame that
/// adds nothing, and host tensors `input0` and `output0` of types `x_ty`
/// and `y_ty` at the block's input and output pieces.
pub fn emit_standalone<T>(
    ctx: &mut Context,
    block: BlockId,
    machine: &MachineModel,
    loc: &Location,
    [(x_ty, input), (y_ty, output)]: [(Type, Vec<TensorPiece>); 2],
    emit: impl FnOnce(&mut Context, &Frame<'_>) -> Result<T, Diagnostic>,
) -> Result<T, Diagnostic> {
    let (executable, exe_body) = build::executable(ctx, &machine.name, loc.clone());
    ctx.append_op(block, executable);
    let frame = Frame::alone(executable, exe_body);
    let lowered = emit(ctx, &frame)?;
    append_host_tensors(
        ctx,
        exe_body,
        (vec![(x_ty, input)], vec![(y_ty, output)]),
        loc,
    );
    Ok(lowered)
}

/// A lowered function: its `ipu.executable` and figures of its code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lowered {
    /// The `ipu.executable` op.
    pub executable: OpId,
    /// The most bytes of exchange code (sends, receive arming, mux
    /// switches and their delays) on one tile.
    pub exchange_code_bytes_max: u64,
    /// A block's estimate per step (profiles compare it with the
    /// simulated cycles); `None` for a lone product, whose estimate is its
    /// plan's.
    pub block_estimate: Option<StepEstimates>,
    /// A chain's blocks' estimates, by block (`None` for a patch
    /// embedding, whose estimate is its plan's, `PatchPlan::estimate`);
    /// empty for a function that is not a chain.
    pub chain_estimates: Vec<Option<StepEstimates>>,
    /// A chain's links' scheduled cycles, in order (empty for a function
    /// that is not a chain).
    pub chain_links: Vec<u64>,
    /// A chain loop's end on its busiest tile, the copies of the next
    /// layer's constants and the supervisor code around them (0 without a
    /// loop, [`super::chain_loop`]), on the tiles the link back writes
    /// (0 where none of them holds constants).
    pub loop_copies: u64,
    /// The same at the body's start on its busiest tile (every other
    /// tile's copies, beside the body's first block's first superstep).
    pub loop_start_copies: u64,
}

/// A lowered block's estimate, step by step, by the kind of block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepEstimates {
    /// An MLP block's.
    Mlp(super::block::BlockEstimate),
    /// An attention block's.
    Attention(super::attention_block::AttentionEstimate),
    /// A pooling head's.
    Pool(super::pool_head::PoolEstimate),
}

/// A codelet instance a tile's program calls: emitted as a subroutine.
pub trait Instance {
    /// Emits the instance as subroutine `name`, through `memo` (a copy of
    /// an identical instance on an earlier tile where there is one).
    fn emit_as(
        &self,
        e: &mut Emitter,
        name: &str,
        memo: &mut InstanceMemo,
    ) -> Result<(), crate::codelets::CodeletError>;
}

impl<C: Codelet + std::fmt::Debug + 'static> Instance for C {
    fn emit_as(
        &self,
        e: &mut Emitter,
        name: &str,
        memo: &mut InstanceMemo,
    ) -> Result<(), crate::codelets::CodeletError> {
        memo.emit(e, name, self)
    }
}

/// Emits a tile's `calls` in order, each as its subroutine (see
/// [`Instance`]).
pub fn emit_calls(
    e: &mut Emitter,
    calls: &Calls,
    memo: &mut InstanceMemo,
) -> Result<(), crate::codelets::CodeletError> {
    calls
        .iter()
        .try_for_each(|(name, instance)| instance.emit_as(e, name, memo))
}

/// A `constant` `ipu.tensor` named `name` of `bytes` (elements of type
/// `element`, `size` bytes each) in a resource blob aligned to `alignment`,
/// one piece of all of it at `address` on each of `tiles`.
pub fn replicated_constant(
    ctx: &mut Context,
    name: &str,
    element: (Type, usize, u32),
    bytes: Vec<u8>,
    (tiles, address): (&[u32], u32),
    loc: Location,
) -> OpId {
    let count = (bytes.len() / element.1) as i64;
    let pieces: Vec<TensorPiece> = tiles
        .iter()
        .map(|&tile| TensorPiece {
            tile: i64::from(tile),
            address: i64::from(address),
            first: 0,
            count,
        })
        .collect();
    constant_tensor(ctx, name, element, bytes, &pieces, loc)
}

/// A `constant` `ipu.tensor` named `name` of `bytes` (elements of type
/// `element`, `size` bytes each) in a resource blob aligned to
/// `alignment`, placed as `pieces` say.
pub fn constant_tensor(
    ctx: &mut Context,
    name: &str,
    (element, size, alignment): (Type, usize, u32),
    bytes: Vec<u8>,
    pieces: &[TensorPiece],
    loc: Location,
) -> OpId {
    let ty = Type::tensor(&[(bytes.len() / size) as i64], element);
    let resource = ctx.resources().insert_unique(
        name,
        ResourceBlob {
            alignment,
            data: bytes.into(),
        },
    );
    let value = Attribute::new(AttrKind::DenseResource {
        resource,
        ty: ty.clone(),
    });
    let t = build::tensor(ctx, name, ty, TensorDirection::Constant, pieces, loc);
    ctx.set_attr(t, "value", value);
    t
}

/// The IR element type of the AMP's input format.
fn element_type(v: AmpVariant) -> Type {
    elem_type(v.input_elem())
}

/// The IR element type of the AMP's output (and partials) format.
fn output_type(v: AmpVariant) -> Type {
    elem_type(v.output_elem())
}

/// The IR element type of `e`.
pub(super) fn elem_type(e: Elem) -> Type {
    Type::float(match e {
        Elem::F16 => FloatKind::F16,
        Elem::F32 => FloatKind::F32,
        Elem::F8 => FloatKind::F8E4M3FNUZ,
    })
}

/// Checks that every tile's code and data sections end below the tensors
/// of `lay` (constant sections are the weights, placed there on purpose).
pub fn check_fits(exe: &ipuc_ipu_arch::Executable, lay: &TileLayout) -> Result<(), String> {
    for t in &exe.tiles {
        if let Some(s) = t
            .image
            .sections
            .iter()
            .filter(|s| !s.name.starts_with(CONSTANT_SECTION_PREFIX))
            .find(|s| s.end() > lay.tensors_start)
        {
            return Err(format!(
                "tile {}: section `{}` ends at 0x{:x}, past the first tensor at 0x{:x}",
                t.tile,
                s.name,
                s.end(),
                lay.tensors_start
            ));
        }
    }
    Ok(())
}

/// The `ipu.executable` ops of a module body, for callers that look them up.
pub fn executables(ctx: &Context, block: BlockId) -> Vec<OpId> {
    ctx.block_ops_vec(block)
        .into_iter()
        .filter(|&o| ctx.name_str(o) == ipu::EXECUTABLE)
        .collect()
}

/// Bytes no exchange writes that a product reads (padding rows, columns
/// and keys): zeros loaded with the program, so no stale word (a NaN times
/// a zero weight or probability) reaches a real result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZeroRun {
    /// The tile.
    pub tile: u32,
    /// Where.
    pub address: u32,
    /// How many (a multiple of 4).
    pub bytes: u32,
}

/// `runs` as `constant` `ipu.tensor`s named `{name}{n}`: one per distinct
/// (address, bytes), on every tile that needs it.
pub fn emit_zero_runs(
    ctx: &mut Context,
    exe_body: BlockId,
    runs: &[ZeroRun],
    name: &str,
    loc: &Location,
) {
    let mut by_place: std::collections::BTreeMap<(u32, u32), Vec<u32>> =
        std::collections::BTreeMap::new();
    for r in runs {
        by_place
            .entry((r.address, r.bytes))
            .or_default()
            .push(r.tile);
    }
    for (n, ((address, bytes), tiles)) in by_place.into_iter().enumerate() {
        let t = replicated_constant(
            ctx,
            &format!("{name}{n}"),
            (Type::i32(), 4, 8),
            vec![0; bytes as usize],
            (&tiles, address),
            loc.clone(),
        );
        ctx.append_op(exe_body, t);
    }
}
