//! The transformer attention block on the tiles:
//! `y = x + attention(qkv(layer_norm(x))) W_o + b_o`, f16, one batch entry.
//!
//! **Heads padded to whole panels.** Each head's dimension `d` is padded
//! to `dp`, a multiple of 16 (so400m: 72 -> 80), in the weights: head
//! `h`'s channels are `h dp .. h dp + d`, zero columns (and bias) after
//! them. Every head then starts on an AMP output group, Q and K arrive at
//! the attention tiles as whole input panels and key rows, and the padded
//! channels are exact zeros all the way to the output product, whose
//! weight rows for them are zeros too.
//!
//! **Four products on disjoint tiles** ([`AttentionPlan`]), each planned
//! by the GEMM search on its share of the chip:
//!
//! - *qk*: `[m, c] x [c, 2 H dp]`, Q and K with their biases;
//! - *vt*: `V^T = W_v^T LN(x)^T`, `[H dp, c] x [c, m]`, the product
//!   swapped: the value weights are its constant input panels and
//!   LayerNorm's rows its weights, so its output groups (16 tokens by the
//!   value channels) are the value panels the attention's second product
//!   reads, with no transpose. The value bias is folded into the output
//!   bias: the probabilities of a row sum to 1, so `P (V + 1 b_v) W_o =
//!   P V W_o + b_v W_o`.
//! - *attention*: one tile per head and block of query rows
//!   ([`crate::codelets::attention::TileAttention`]), holding the head's
//!   whole K and V (the materialised form: every score of its rows on the
//!   tile, the softmax local);
//! - *out*: `[m, H dp] x [H dp, c]` with the folded bias, then `+ x`.
//!
//! Supersteps (every tile runs every sync): LayerNorm on the LN tiles;
//! exchange A (LayerNorm's rows to qk's input panels and vt's weight
//! panels, x's rows to the out tiles that own them); qk and vt with their
//! reductions; exchange B (Q panels, key rows and value panels to the
//! attention tiles); the attention; exchange C (the attention's output
//! to out's input panels); out, its reduction and the residual add.
//!
//! Rows and keys that pad a block to whole groups are never written by
//! an exchange: where a product would read them (vt's weight rows of the
//! padding tokens, the attention's key rows of the padding keys and query
//! rows past the last), constant zeros are loaded with the program, so no
//! stale word (a NaN times a zero probability) can reach a real result.
//!
//! Known limits, each a plan to lift: the four stages run on disjoint
//! tiles (a quarter of the chip each at best); every attention tile
//! receives its head's whole K and V, which for so400m (729 keys) is
//! 235 KB per tile and an exchange of about 60k cycles (splitting the keys
//! over tiles with a flash-style combination is the next step); f16 only.

use std::collections::BTreeMap;

use ipuc_dialects::ipu::{build, SectionKind, TensorPiece};
use ipuc_ipu_arch::MachineModel;
use ipuc_ir::{BlockId, Context, Diagnostic, FloatKind, Location, OpId, Type};

use super::attention_exchange::{exchange_a, exchange_b, exchange_c, ZeroRun};
use super::block::{emit_owned_adds, encode_f16, owned_rows_max, positions, LN_ROWS};
use super::block_exchange::residual_view;
use super::codegen::{
    emit_standalone, layout, replicated_constant, Calls, Constants, Frame, PlacedGemm, TileLayout,
};
use super::ln_tiles::LnTiles;
use super::plan::{plan_gemm, Epilogue, GemmPlan, GemmShape};
use super::reduce;
use super::schedule::schedule;
use crate::codelets::amp::AmpVariant;
use crate::codelets::attention::TileAttention;
use crate::codelets::elementwise::BinaryOp;
use crate::codelets::emitter::{inst, op, Emitter};
use crate::codelets::program::Codelet;
use crate::codelets::subroutine::emit_call;

/// The block's sizes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AttentionShape {
    /// Tokens.
    pub m: u32,
    /// Hidden size.
    pub c: u32,
    /// Heads.
    pub heads: u32,
    /// Head dimension (`c / heads`).
    pub head_dim: u32,
    /// LayerNorm's epsilon.
    pub eps: f32,
    /// The softmax scale.
    pub scale: f32,
}

impl AttentionShape {
    /// The head dimension padded to whole panels of 16.
    pub fn dp(&self) -> u32 {
        self.head_dim.next_multiple_of(16)
    }

    /// Padded channels of all heads.
    pub fn hp(&self) -> u32 {
        self.heads * self.dp()
    }

    /// Panels of 16 keys.
    pub fn key_panels(&self) -> u32 {
        self.m.div_ceil(16)
    }

    /// The padded channel of channel `ch` (of `c`).
    fn padded(&self, ch: usize) -> usize {
        let d = self.head_dim as usize;
        ch / d * self.dp() as usize + ch % d
    }
}

/// The block's constants, row-major, as the IR holds them.
#[derive(Clone, Debug, PartialEq)]
pub struct AttentionConstants {
    /// LayerNorm's scale `[c]`.
    pub gamma: Vec<f64>,
    /// LayerNorm's shift `[c]`.
    pub beta: Vec<f64>,
    /// The fused QKV weights `[c, 3 c]` (Q, K, V; head-major in each).
    pub w_qkv: Vec<f64>,
    /// Their bias `[3 c]`.
    pub b_qkv: Vec<f64>,
    /// The output weights `[c, c]`.
    pub w_o: Vec<f64>,
    /// Their bias `[c]`.
    pub b_o: Vec<f64>,
}

/// The attention tiles: one per head and block of query rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CorePlan {
    /// The first.
    pub first_tile: u32,
    /// Query rows per tile (the last block may hold fewer).
    pub rows: u32,
    /// Blocks of rows per head.
    pub blocks: u32,
}

impl CorePlan {
    /// The tile of head `h`, block `b`.
    pub fn tile(&self, h: u32, b: u32) -> u32 {
        self.first_tile + h * self.blocks + b
    }

    /// Real rows `[lo, hi)` of block `b`.
    pub fn rows_of(&self, b: u32, m: u32) -> (u32, u32) {
        let lo = b * self.rows;
        (lo, (lo + self.rows).min(m))
    }
}

/// Where the block's tensors live, per kind of tile.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AttentionLayout {
    /// qk's tiles.
    pub qk: TileLayout,
    /// vt's tiles.
    pub vt: TileLayout,
    /// out's tiles.
    pub out: TileLayout,
    /// The residual rows an out tile owns (region 0).
    pub residual: u32,
    /// `out + residual` (region 0, another bank).
    pub sum: u32,
    /// The attention tiles' tensors (sizes: every tile's).
    pub core: TileAttention,
    /// x's rows on an LN tile.
    pub x: u32,
    /// LayerNorm's output rows.
    pub ln_out: u32,
    /// gamma.
    pub gamma: u32,
    /// beta.
    pub beta: u32,
}

/// The block's plan.
#[derive(Clone, Debug)]
pub struct AttentionPlan {
    /// The sizes.
    pub shape: AttentionShape,
    /// Q and K.
    pub qk: GemmPlan,
    /// `V^T`.
    pub vt: GemmPlan,
    /// The attention tiles.
    pub core: CorePlan,
    /// The output product.
    pub out: GemmPlan,
    /// The LN tiles, one per [`LN_ROWS`] rows (the chip's last tiles).
    pub ln_tiles: Vec<u32>,
    /// Memory.
    pub layout: AttentionLayout,
}

impl AttentionPlan {
    /// Every tile the block uses, ascending.
    pub fn tiles(&self) -> Vec<u32> {
        let first = self.qk.first_tile;
        let mut t: Vec<u32> = (first..self.out.first_tile + self.out.tiles()).collect();
        t.extend(&self.ln_tiles);
        t
    }

    /// The LN tiles.
    pub fn ln(&self) -> LnTiles<'_> {
        let lay = &self.layout;
        LnTiles {
            tiles: &self.ln_tiles,
            m: self.shape.m,
            c: self.shape.c,
            eps: self.shape.eps,
            x: lay.x,
            ln_out: lay.ln_out,
            gamma: lay.gamma,
            beta: lay.beta,
            output_f8_scale: None,
        }
    }

    /// Where x enters: each row on its LN tile.
    pub fn input_pieces(&self) -> Vec<TensorPiece> {
        self.ln().input_pieces()
    }

    /// Where y is when the block ends: each out tile's owned rows of its
    /// output groups (the sum's buffer).
    pub fn output_pieces(&self) -> Vec<TensorPiece> {
        let [_, _, out] = self.placed();
        positions(&self.out)
            .into_values()
            .flat_map(|(i, j, k)| {
                let sum = residual_view(&self.out, self.layout.sum, k);
                out.output_pieces((i, j, k), sum)
            })
            .collect()
    }

    /// Syncs every tile of the block runs.
    pub fn syncs(&self) -> u32 {
        let r = |p: &GemmPlan| p.grid_k.trailing_zeros();
        6 + 2 * (r(&self.qk).max(r(&self.vt)) + r(&self.out))
    }

    /// The products placed at their layouts.
    pub fn placed(&self) -> [PlacedGemm; 3] {
        let l = &self.layout;
        [
            PlacedGemm::new(&self.qk, l.qk, "qk"),
            PlacedGemm::new(&self.vt, l.vt, "vt"),
            PlacedGemm::new(&self.out, l.out, "out"),
        ]
    }

    /// The report: each stage's tiles and estimate.
    pub fn report(&self, machine: &MachineModel) -> String {
        let s = &self.shape;
        let core = &self.layout.core;
        let est = core
            .estimate_cycles()
            .map_or_else(|e| e.to_string(), |c| c.to_string());
        let (a, b, c) = self.schedules(machine);
        format!(
            "attention block {}x{}, {} heads of {} (padded to {}): LayerNorm on tiles {}..={} ({} rows each)\n  qk: {}\n  vt: {}\n  attention: tiles {}..={} ({} per head, {} query rows x {} keys each, materialised): {est} cycles per tile\n  out: {}\n  exchange A {} cycles, exchange B {} cycles, exchange C {} cycles (scheduled)\n",
            s.m,
            s.c,
            s.heads,
            s.head_dim,
            s.dp(),
            self.ln_tiles.first().copied().unwrap_or(0),
            self.ln_tiles.last().copied().unwrap_or(0),
            LN_ROWS,
            self.qk,
            self.vt,
            self.core.first_tile,
            self.core.first_tile + s.heads * self.core.blocks - 1,
            self.core.blocks,
            self.core.rows,
            s.m,
            self.out,
            a.cycles,
            b.cycles,
            c.cycles,
        )
    }

    /// The three exchanges' schedules.
    pub fn schedules(
        &self,
        machine: &MachineModel,
    ) -> (
        super::schedule::Schedule,
        super::schedule::Schedule,
        super::schedule::Schedule,
    ) {
        let tiles = self.tiles();
        (
            schedule(machine, &tiles, &exchange_a(self)),
            schedule(machine, &tiles, &exchange_b(self)),
            schedule(machine, &tiles, &exchange_c(self)),
        )
    }
}

/// A product planned by the search on `tiles` tiles from `first`.
fn plan_on(
    name: &str,
    shape: GemmShape,
    machine: &MachineModel,
    first: u32,
    tiles: u32,
) -> Result<GemmPlan, String> {
    let part = MachineModel {
        tiles: tiles.max(1),
        ..machine.clone()
    };
    plan_gemm(shape, &part)
        .map(|c| c.plan.placed_at(first))
        .map_err(|e| {
            format!("{name} (on {tiles} tiles from tile {first}, its share of the tiles the attention tiles leave): {e}")
        })
}

/// Plans the block (see the module doc): the tiles after the LN tiles
/// shared by the four stages in proportion to their multiply-accumulates.
pub fn plan_attention(
    shape: AttentionShape,
    machine: &MachineModel,
) -> Result<AttentionPlan, String> {
    plan_attention_in(shape, machine, (0, machine.tiles))
}

/// [`plan_attention`] on the `count` tiles from `first` (a block of a
/// program whose blocks run on tiles of their own).
pub fn plan_attention_in(
    shape: AttentionShape,
    whole: &MachineModel,
    (first, count): (u32, u32),
) -> Result<AttentionPlan, String> {
    let machine = &MachineModel {
        tiles: count,
        ..whole.clone()
    };
    let s = shape;
    if s.m == 0 || s.c == 0 || s.heads == 0 {
        return Err("the block has an empty dimension".into());
    }
    if !s.c.is_multiple_of(16) {
        return Err(format!(
            "the hidden size {} is not a multiple of 16, which the attention block lowering needs yet (the products' input panels come whole from LayerNorm's rows)",
            s.c
        ));
    }
    let n_ln = s.m.div_ceil(LN_ROWS);
    let Some(avail) = machine.tiles.checked_sub(n_ln).filter(|&t| t >= 4) else {
        return Err(format!(
            "{} rows need {n_ln} LayerNorm tiles and the four stages at least one tile each: the machine has {}",
            s.m, machine.tiles
        ));
    };
    let (m, c, hp) = (u64::from(s.m), u64::from(s.c), u64::from(s.hp()));
    let keys = u64::from(s.key_panels() * 16);
    // The attention tiles first: their share of the multiply-accumulates,
    // at most one row each, at least as many as the rows that fit a tile
    // need. The products share the rest in proportion to theirs.
    let macs = [2 * m * c * hp, m * c * hp, m * hp * c];
    let core_macs = 2 * m * keys * hp;
    let total: u64 = macs.iter().sum::<u64>() + core_macs;
    let fit = rows_that_fit(s, machine)?;
    let core_share = (u64::from(avail) * core_macs / total) as u32;
    let per_head = (core_share / s.heads).clamp(s.m.div_ceil(fit), s.m);
    let rows = s.m.div_ceil(per_head);
    let blocks = s.m.div_ceil(rows);
    let Some(rest) = avail.checked_sub(s.heads * blocks).filter(|&r| r >= 3) else {
        return Err(format!(
            "the attention needs {} tiles ({} heads x {blocks} blocks of at most {fit} query rows, what fits a tile), which leaves the three products fewer than 3 of the {avail} tiles before the {n_ln} LayerNorm tiles",
            s.heads * blocks,
            s.heads
        ));
    };
    let products: u64 = macs.iter().sum();
    let share = |i: usize| ((u64::from(rest) * macs[i] / products) as u32).max(1);
    let f16 = AmpVariant::F16;
    let with_bias = Epilogue {
        bias: true,
        ..Epilogue::default()
    };
    let qk = plan_on(
        "qk",
        GemmShape {
            m: s.m,
            k: s.c,
            n: 2 * s.hp(),
            variant: f16,
            epilogue: with_bias,
        },
        machine,
        first,
        share(0),
    )?;
    let vt_first = first + qk.tiles();
    let vt = plan_on(
        "vt",
        GemmShape {
            m: s.hp(),
            k: s.c,
            n: s.m,
            variant: f16,
            epilogue: Epilogue::default(),
        },
        machine,
        vt_first,
        share(1),
    )?;
    let core = CorePlan {
        first_tile: vt_first + vt.tiles(),
        rows,
        blocks,
    };
    let out_first = core.first_tile + s.heads * blocks;
    let out = plan_on(
        "out",
        GemmShape {
            m: s.m,
            k: s.hp(),
            n: s.c,
            variant: f16,
            epilogue: with_bias,
        },
        machine,
        out_first,
        (first + avail)
            .saturating_sub(out_first)
            .min(share(2).max(1)),
    )?;
    debug_assert!(out.first_tile + out.tiles() <= first + avail);
    let ln_tiles: Vec<u32> = (first + machine.tiles - n_ln..first + machine.tiles).collect();
    let layout = attention_layout(s, [&qk, &vt, &out], core, machine)?;
    Ok(AttentionPlan {
        shape,
        qk,
        vt,
        core,
        out,
        ln_tiles,
        layout,
    })
}

/// One attention tile's tensors for `rows` query rows: the key and value
/// panels from the bottom of interleaved memory; from the top, S (with its
/// mask) and O in element pairs of their own, Q and P in others (each
/// product's input and output in different pairs).
pub fn core_tile(
    s: AttentionShape,
    rows: u32,
    machine: &MachineModel,
) -> Result<TileAttention, String> {
    TileAttention::packed((rows, s.dp(), s.m, s.dp()), s.scale, machine)
}

/// The most query rows an attention tile holds (see [`core_tile`]), if
/// one row fits.
fn rows_that_fit(s: AttentionShape, machine: &MachineModel) -> Result<u32, String> {
    core_tile(s, 1, machine)?;
    // The softmax's group stride (64 rows + 24 bytes) must stay an `add`
    // immediate: at most 255 rows.
    let (mut lo, mut hi) = (1, s.m.min(255));
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if core_tile(s, mid, machine).is_ok() {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Ok(lo)
}

/// Lays out every kind of tile (see [`AttentionLayout`]).
fn attention_layout(
    s: AttentionShape,
    [qk, vt, out]: [&GemmPlan; 3],
    core: CorePlan,
    machine: &MachineModel,
) -> Result<AttentionLayout, String> {
    let bank = machine.element_bytes;
    let out_lay = layout(out, machine);
    // Region 0 of the out tiles: the residual and the sum, each in whole
    // banks below the vertex states (the add's loads and store each need
    // their own bank).
    let owned_bytes = owned_rows_max(out) * out.vertex().n_groups * 32 + 8;
    let span = owned_bytes.next_multiple_of(bank);
    let residual = (out_lay.states & !(bank - 1)) - span;
    let sum = residual - span;
    let att = core_tile(s, core.rows, machine)?;
    // LN tiles: x's rows, LayerNorm's output, gamma and beta.
    let row_bytes = s.c * 2;
    let x = machine.interleaved_base;
    let ln_out = (x + LN_ROWS * row_bytes + 16).next_multiple_of(16);
    let gamma = (ln_out + LN_ROWS * row_bytes + 16).next_multiple_of(16);
    let beta = gamma + row_bytes.next_multiple_of(8);
    Ok(AttentionLayout {
        qk: layout(qk, machine),
        vt: layout(vt, machine),
        out: TileLayout {
            tensors_start: sum,
            ..out_lay
        },
        residual,
        sum,
        core: att,
        x,
        ln_out,
        gamma,
        beta,
    })
}

/// The block's estimated cycles, step by step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct AttentionEstimate {
    /// LayerNorm.
    pub layer_norm: u64,
    /// Exchange A (scheduled).
    pub exchange_a: u64,
    /// qk and vt (the slower), with their reductions.
    pub qkv: u64,
    /// Exchange B (scheduled).
    pub exchange_b: u64,
    /// The attention tiles.
    pub attention: u64,
    /// Exchange C (scheduled).
    pub exchange_c: u64,
    /// out, its reduction and the residual add.
    pub out: u64,
    /// The syncs between the steps.
    pub sync: u64,
}

impl AttentionEstimate {
    /// All of it.
    pub fn total(&self) -> u64 {
        self.layer_norm
            + self.exchange_a
            + self.qkv
            + self.exchange_b
            + self.attention
            + self.exchange_c
            + self.out
            + self.sync
    }
}

impl std::fmt::Display for AttentionEstimate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} cycles (layer norm {}, exchange A {}, qkv {}, exchange B {}, attention {}, exchange C {}, out {}, sync {})",
            self.total(),
            self.layer_norm,
            self.exchange_a,
            self.qkv,
            self.exchange_b,
            self.attention,
            self.exchange_c,
            self.out,
            self.sync
        )
    }
}

/// The lowered block.
#[derive(Clone, Debug)]
pub struct LoweredAttention {
    /// The `ipu.executable`.
    pub executable: OpId,
    /// Estimated cycles.
    pub estimate: AttentionEstimate,
    /// The most bytes of exchange code on a tile.
    pub exchange_code_bytes_max: u64,
}

/// The products' constants as their tiles hold them (heads padded, the
/// value bias folded into the output bias).
pub struct HeldConstants {
    /// qk's weights `[c, 2 hp]`.
    pub w_qk: Vec<f64>,
    /// qk's bias `[2 hp]`.
    pub b_qk: Vec<f64>,
    /// vt's input: `W_v^T` padded, `[hp, c]`.
    pub w_vt: Vec<f64>,
    /// out's weights `[hp, c]`.
    pub w_out: Vec<f64>,
    /// out's bias `[c]`: `b_o + b_v W_o`.
    pub b_out: Vec<f64>,
}

impl HeldConstants {
    /// From the IR's constants.
    pub fn of(s: AttentionShape, k: &AttentionConstants) -> Self {
        let (c, hp) = (s.c as usize, s.hp() as usize);
        let mut w_qk = vec![0.0; c * 2 * hp];
        let mut b_qk = vec![0.0; 2 * hp];
        let mut w_vt = vec![0.0; hp * c];
        for part in 0..2 {
            for ch in 0..c {
                let col = part * hp + s.padded(ch);
                b_qk[col] = k.b_qkv[part * c + ch];
                for r in 0..c {
                    w_qk[r * 2 * hp + col] = k.w_qkv[r * 3 * c + part * c + ch];
                }
            }
        }
        for ch in 0..c {
            let row = s.padded(ch);
            for r in 0..c {
                w_vt[row * c + r] = k.w_qkv[r * 3 * c + 2 * c + ch];
            }
        }
        let mut w_out = vec![0.0; hp * c];
        let mut b_out = k.b_o.clone();
        for ch in 0..c {
            let row = s.padded(ch);
            let bv = k.b_qkv[2 * c + ch];
            for o in 0..c {
                let w = k.w_o[ch * c + o];
                w_out[row * c + o] = w;
                b_out[o] += bv * w;
            }
        }
        HeldConstants {
            w_qk,
            b_qk,
            w_vt,
            w_out,
            b_out,
        }
    }
}

/// `bytes` of zeros at each `run` as constants (see the module doc).
fn emit_zero_runs(
    ctx: &mut Context,
    exe_body: BlockId,
    runs: &[ZeroRun],
    name: &str,
    loc: &Location,
) {
    // One constant per distinct (address, bytes), on every tile that
    // needs it.
    let mut by_place: BTreeMap<(u32, u32), Vec<u32>> = BTreeMap::new();
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

/// Builds the block's `ipu.executable` (see the module doc), appended to
/// `block`; the host tensors get types `x_ty` and `y_ty`.
#[allow(clippy::too_many_arguments)]
pub fn emit_attention(
    ctx: &mut Context,
    block: BlockId,
    plan: &AttentionPlan,
    constants: &AttentionConstants,
    (x_ty, y_ty): (Type, Type),
    machine: &MachineModel,
    loc: Location,
) -> Result<LoweredAttention, Diagnostic> {
    emit_standalone(
        ctx,
        block,
        machine,
        &loc.clone(),
        [(x_ty, plan.input_pieces()), (y_ty, plan.output_pieces())],
        |ctx, frame| emit_attention_in(ctx, frame, plan, constants, machine, loc),
    )
}

/// [`emit_attention`] into `frame`'s executable, without host tensors
/// (the block's input and output are [`AttentionPlan::input_pieces`] and
/// [`AttentionPlan::output_pieces`]).
pub fn emit_attention_in(
    ctx: &mut Context,
    frame: &Frame<'_>,
    plan: &AttentionPlan,
    constants: &AttentionConstants,
    machine: &MachineModel,
    loc: Location,
) -> Result<LoweredAttention, Diagnostic> {
    let s = plan.shape;
    let lay = plan.layout;
    let [qk, vt, out] = plan.placed();
    let fail = |err: crate::codelets::CodeletError| Diagnostic::error(loc.clone(), err.to_string());
    let tiles = plan.tiles();
    let (a, b, c) = plan.schedules(machine);
    let (at_qk, at_vt, at_out) = (
        positions(&plan.qk),
        positions(&plan.vt),
        positions(&plan.out),
    );
    let ln = plan.ln();
    let ln_of = ln.index();
    let core_end = plan.core.first_tile + s.heads * plan.core.blocks;
    let rounds = |p: &GemmPlan| p.grid_k.trailing_zeros();
    let qkv_rounds = rounds(&plan.qk).max(rounds(&plan.vt));
    let (exe, exe_body) = (frame.executable, frame.exe_body);
    let sync = |e: &mut Emitter| e.solo(inst("sync", [op::sym("TEXCH_SYNCZONE_INTERNAL")]));
    let mut add_cycles = 0u64;
    let mut exchange_code_bytes_max = 0;
    let att = lay.core;
    let (scores, softmax, values) = (att.scores(), att.softmax(), att.values());
    for &t in &tiles {
        let (tile_op, tile_body) = build::tile(ctx, t, None, loc.clone());
        ctx.append_op(exe_body, tile_op);
        let mut e = Emitter::new(ctx, tile_body, loc.clone());
        e.code_section(".text.main", SectionKind::Supervisor);
        e.function("main");
        let mut xcode = (frame.around)(&mut e, t, false);
        let mut calls = Calls::new();
        ln.emit_call(&mut e, ln_of.get(&t).copied(), &mut calls);
        sync(&mut e);
        xcode += a.emit(&mut e, machine, t, "a");
        sync(&mut e);
        // qk and vt on their tiles, the rounds of the one with fewer
        // padded with syncs.
        let own = if let Some(&pos) = at_qk.get(&t) {
            xcode += qk
                .emit_compute(&mut e, pos, machine, &mut calls)
                .map_err(fail)?
                .1;
            rounds(&plan.qk)
        } else if let Some(&pos) = at_vt.get(&t) {
            xcode += vt
                .emit_compute(&mut e, pos, machine, &mut calls)
                .map_err(fail)?
                .1;
            rounds(&plan.vt)
        } else {
            0
        };
        (0..2 * (qkv_rounds - own)).for_each(|_| sync(&mut e));
        sync(&mut e);
        xcode += b.emit(&mut e, machine, t, "b");
        sync(&mut e);
        let is_core = (plan.core.first_tile..core_end).contains(&t);
        if is_core {
            scores.emit_supervisor(&mut e, "attn_s").map_err(fail)?;
            emit_call(&mut e, "attn_softmax");
            calls.push(("attn_softmax".into(), Box::new(softmax.clone())));
            values.emit_supervisor(&mut e, "attn_pv").map_err(fail)?;
        }
        sync(&mut e);
        xcode += c.emit(&mut e, machine, t, "c");
        sync(&mut e);
        match at_out.get(&t) {
            Some(&(i, j, k)) => {
                let (view, rounds_bytes) = out
                    .emit_compute(&mut e, (i, j, k), machine, &mut calls)
                    .map_err(fail)?;
                xcode += rounds_bytes;
                let (lo, hi) = reduce::owned(k, plan.out.grid_k, plan.out.rows);
                let [res, sum] =
                    [lay.residual, lay.sum].map(|base| residual_view(&plan.out, base, k));
                let firsts = emit_owned_adds(
                    &mut e,
                    &mut calls,
                    (view, (lo, hi), plan.out.groups_of(j)),
                    &[(BinaryOp::Add, view, res, sum)],
                    &|_, g| format!("residual_{g}"),
                );
                if let (Some(add), 0) = (firsts.first(), add_cycles) {
                    add_cycles = add.estimate_cycles().map_err(fail)?;
                }
            }
            None => (0..2 * rounds(&plan.out)).for_each(|_| sync(&mut e)),
        }
        xcode += (frame.around)(&mut e, t, true);
        exchange_code_bytes_max = exchange_code_bytes_max.max(xcode);
        e.solo(inst("exitz", [op::mzero()]));
        e.size_of("main");
        if at_qk.contains_key(&t) {
            qk.emit_worker_code(&mut e);
        }
        if at_vt.contains_key(&t) {
            vt.emit_worker_code(&mut e);
        }
        if at_out.contains_key(&t) {
            out.emit_worker_code(&mut e);
        }
        if is_core {
            scores.emit_workers(&mut e, "attn_s");
            values.emit_workers(&mut e, "attn_pv");
        }
        for (name, instance) in &calls {
            instance.emit_as(&mut e, name).map_err(fail)?;
        }
    }
    let held = HeldConstants::of(s, constants);
    qk.emit_constants(
        ctx,
        exe_body,
        Constants {
            weights: &held.w_qk,
            bias: Some(&held.b_qk),
        },
        &loc,
    );
    out.emit_constants(
        ctx,
        exe_body,
        Constants {
            weights: &held.w_out,
            bias: Some(&held.b_out),
        },
        &loc,
    );
    emit_vt_input(ctx, exe_body, plan, &vt, &held.w_vt, &loc);
    ln.emit_constants(ctx, exe_body, (&constants.gamma, &constants.beta), &loc);
    // The attention tiles' masks (the same on every one).
    let core_tiles: Vec<u32> = (plan.core.first_tile..core_end).collect();
    let mask: Vec<u8> = att
        .mask_block()
        .iter()
        .flat_map(|&v| (v as f32).to_le_bytes())
        .collect();
    let t = replicated_constant(
        ctx,
        "attn_mask",
        (Type::float(FloatKind::F32), 4, 8),
        mask,
        (&core_tiles, att.mask),
        loc.clone(),
    );
    ctx.append_op(exe_body, t);
    emit_zero_runs(
        ctx,
        exe_body,
        &super::attention_exchange::zero_runs(plan),
        "zero_pad",
        &loc,
    );
    let est = |p: &GemmPlan| p.estimate.compute + p.estimate.rounds_exchange + p.estimate.reduction;
    let estimate = AttentionEstimate {
        layer_norm: ln.estimate(machine).map_err(fail)?,
        exchange_a: a.cycles,
        qkv: est(&plan.qk).max(est(&plan.vt)),
        exchange_b: b.cycles,
        attention: att.estimate_cycles().map_err(fail)?,
        exchange_c: c.cycles,
        out: est(&plan.out) + add_cycles,
        // Every superstep's sync, the reduction rounds' included.
        sync: u64::from(plan.syncs()) * u64::from(machine.sync_latency),
    };
    Ok(LoweredAttention {
        executable: exe,
        estimate,
        exchange_code_bytes_max,
    })
}

/// vt's input panels: `W_v^T`'s rows of each grid row block and K part,
/// on every grid column.
fn emit_vt_input(
    ctx: &mut Context,
    exe_body: BlockId,
    plan: &AttentionPlan,
    vt: &PlacedGemm,
    w_vt: &[f64],
    loc: &Location,
) {
    let p = &plan.vt;
    vt.emit_states(ctx, exe_body, loc);
    let c = plan.shape.c as usize;
    for i in 0..p.grid_rows {
        for k in 0..p.grid_k {
            let mut values = Vec::with_capacity((p.k_panels * p.rows * 16) as usize);
            for g in 0..p.k_panels {
                let panel = k * p.k_panels + g;
                for r in 0..p.rows {
                    let row = (i * p.rows + r) as usize;
                    values.extend((0..16).map(|ch| {
                        let col = (panel * 16) as usize + ch;
                        if row < plan.shape.hp() as usize && col < c {
                            w_vt[row * c + col]
                        } else {
                            0.0
                        }
                    }));
                }
            }
            let tiles: Vec<u32> = (0..p.grid_cols).map(|j| p.tile(i, j, k)).collect();
            let t = replicated_constant(
                ctx,
                &format!("vt_input_row{i}_k{k}"),
                (Type::float(FloatKind::F16), 2, 8),
                encode_f16(&values),
                (&tiles, vt.lay.input),
                loc.clone(),
            );
            ctx.append_op(exe_body, t);
        }
    }
}

/// The block in float64 (`x` `[m, c]`, f16 values): what a lowered block
/// is checked against.
pub fn reference(s: AttentionShape, x: &[f64], k: &AttentionConstants) -> Vec<f64> {
    reference_rows(s, x, k, &(0..s.m as usize).collect::<Vec<_>>())
}

/// [`reference`] for rows `rows` only (every row's keys and values are
/// still computed), row after row.
pub fn reference_rows(
    s: AttentionShape,
    x: &[f64],
    k: &AttentionConstants,
    rows: &[usize],
) -> Vec<f64> {
    let (m, c, d) = (s.m as usize, s.c as usize, s.head_dim as usize);
    let mut qkv = vec![0.0; m * 3 * c];
    for r in 0..m {
        let row = &x[r * c..(r + 1) * c];
        let mean = row.iter().sum::<f64>() / c as f64;
        let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / c as f64;
        let rstd = 1.0 / (var + f64::from(s.eps)).sqrt();
        let out = &mut qkv[r * 3 * c..(r + 1) * 3 * c];
        out.copy_from_slice(&k.b_qkv);
        for (i, (&v, w_row)) in row.iter().zip(k.w_qkv.chunks_exact(3 * c)).enumerate() {
            let ln = (v - mean) * rstd * k.gamma[i] + k.beta[i];
            for (o, w) in out.iter_mut().zip(w_row) {
                *o += ln * w;
            }
        }
    }
    let scale = f64::from(s.scale);
    let mut y = Vec::with_capacity(rows.len() * c);
    for &r in rows {
        let mut att = vec![0.0; c];
        for h in 0..s.heads as usize {
            let q = &qkv[r * 3 * c + h * d..r * 3 * c + (h + 1) * d];
            let key = |t: usize| &qkv[t * 3 * c + c + h * d..t * 3 * c + c + (h + 1) * d];
            let sc: Vec<f64> = (0..m)
                .map(|t| scale * q.iter().zip(key(t)).map(|(a, b)| a * b).sum::<f64>())
                .collect();
            let mx = sc.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = sc.iter().map(|v| (v - mx).exp()).collect();
            let sum: f64 = e.iter().sum();
            for (t, e) in e.iter().enumerate() {
                let v = &qkv[t * 3 * c + 2 * c + h * d..t * 3 * c + 2 * c + (h + 1) * d];
                for (o, v) in att[h * d..(h + 1) * d].iter_mut().zip(v) {
                    *o += e / sum * v;
                }
            }
        }
        let mut out: Vec<f64> = (0..c).map(|o| x[r * c + o] + k.b_o[o]).collect();
        for (i, a) in att.iter().enumerate() {
            for (o, w) in out.iter_mut().zip(&k.w_o[i * c..(i + 1) * c]) {
                *o += a * w;
            }
        }
        y.extend(out);
    }
    y
}
