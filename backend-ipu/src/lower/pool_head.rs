//! SigLIP's post-LayerNorm and attention-pooling head on the tiles, f16:
//! `y = LN(x)` (a result of its own, the model's last hidden state), then
//! one constant query attending over every token of `y`, `o =
//! attention(q, y W_k + b_k, y W_v + b_v)`, and the output projection `p =
//! o W_o + b_o`, a `[1, c]` row that the head's MLP block
//! ([`super::block`]) takes next in a chain ([`super::chain`]). Over a
//! batch of `N` images each attends over its own tokens: the LN tiles
//! hold every image's rows, sv's tokens are the images' in turn (each
//! padded to whole groups), there is a head tile per (image, head), and
//! out has a row per image.
//!
//! **The query is a constant**, so the keys are never computed. Head `h`'s
//! score of token `t` is `s·q_h·(y_t W_k,h + b_k,h) = y_t·a_h + s·q_h·b_k,h`
//! with `a_h = s W_k,h q_h` (`s` the softmax scale): the second term is the
//! same for every token and cancels in the softmax, and `a_h` is computed
//! at compile time in float64 ([`HeldPool::of`]). The scores cost
//! `m x c x heads` multiply-accumulates instead of the key projection's
//! `m x c x c` (so400m: 13 M against 956 M), and no keys cross the
//! exchange. The values need every token's projection, as in the
//! attention block: `V^T` comes from a swapped product with LayerNorm's
//! rows as its weights, whose output groups are the value panels the
//! attention's product reads. The value bias folds into the output bias
//! (the probabilities sum to 1), as in [`super::attention_block`].
//!
//! **One product for scores and values** (*sv*): `[sp + hp, c] x [c, m16]`,
//! its constant input the rows `a_h` (heads padded to `sp`, a multiple of
//! 16) over `W_v^T` (each head's channels padded to whole panels, `hp`),
//! its weights LayerNorm's rows (tokens padded to `m16`, a multiple of 16,
//! the padding rows zeroed beside LayerNorm: sv's weights are scratch).
//! Its bias row is 0 for the tokens and [`MASKED`] for the padding
//! tokens: their scores are far
//! below any real one, so their probabilities are exactly 0, and their
//! values (`MASKED` too) are finite, so `0 x value` stays 0.
//!
//! Supersteps (every tile runs every sync; each exchange follows a sync,
//! the compute after it follows at a fence), from the block's first tile:
//! sv's grid, the out grid, then the LN tiles (a chain's earlier blocks
//! run their widest from the first tile), and among them (a head tile
//! works after LayerNorm, in memory above the LN tiles' private rows)
//! the *head tiles*, [`head_parts`] a head, on a run that avoids the
//! tiles a chain names busy (its layers' LN tiles, whose residual sends
//! are the most exchange code a tile has, and a head tile's code is
//! large).
//!
//! 1. LayerNorm on the LN tiles ([`LnTiles`]); its rows stay there as the
//!    block's first output ([`PoolPlan::ln_output_pieces`]).
//! 2. Exchange A: LayerNorm's rows into sv's weight panels.
//! 3. sv, with its K split's reduction rounds.
//! 4. Exchange B: each head's row of scores, and its value channels, to
//!    its head tile.
//! 5. The head tiles ([`HeadTile`]): the softmax of the scores' row on
//!    every worker (the softmax over panels on rows of it, then their
//!    join), `(P V_h)^T` (a tile GEMM with 16 value channels as its rows
//!    and the probabilities as its one output column) and the transpose
//!    that makes that column a row.
//! 6. Exchange C: each head's output to out's input panels.
//! 7. out: `[1, hp] x [hp, c]` with the folded bias, and its rounds.
//!
//! With FP8 products (`PoolShape::fp8`, `--precision fp8`) sv's tiles
//! round their copy of LayerNorm's rows to the FP8 grid before sv (the LN
//! tiles keep the f16 rows, the block's first output), sv's initial
//! partials add the value bias to the value rows (it is not folded: the
//! heads' output is rounded with it), and the head tiles round their
//! output where the output product is FP8 ([`PoolPlan::head_roundings`]);
//! the weights stay f16 constants of their FP8 values (one head, a few
//! hundred KB).
//!
//! Known limits: a head runs on one tile (its product `kp` launches of
//! `dp` rows); the blocks of a chain do not share tiles.

use std::collections::{BTreeMap, BTreeSet};

use super::head_tile::HeadTile;
use super::ln_tiles::LnRows;
use super::reduce::SYNCS_PER_ROUND;
use super::stream::{home_pieces, piece_transfer, pieces_of, Weights};
use super::window::Window;
use ipuc_dialects::ipu::{build, TensorPiece};
use ipuc_ipu_arch::float8::{f64_to_f8, f8_to_f64};
use ipuc_ipu_arch::MachineModel;
use ipuc_ir::{BlockId, Context, Diagnostic, FloatKind, Location, OpId, Type};

use super::attention_block::AttentionShape;
use super::attention_constants::held_output;
use super::block::{encode_f16, positions, LN_ROWS};
use super::block_exchange::{owned_global, round_robin, weight_panel_transfers};
use super::codegen::{
    append_host_tensors, constant_tensor, emit_calls, emit_launches, launch_cycles, layout,
    replicated_constant, Calls, Constants, Frame, PlacedGemm, TileLayout, WeightCodes,
};
use super::ln_tiles::{layer_norm_reference, LnOutput, LnTiles};
use super::plan::{
    plan_gemm, Epilogue, GemmPlan, GemmShape, ReductionPlace, UnderOutput, UnderOutputProduct,
};
use super::schedule::{schedule, Chunk, Schedule, Transfer};
use crate::codelets::amp::AmpVariant;
use crate::codelets::cast::{Cast, CastKind};
use crate::codelets::emitter::{inst, op, Emitter};
use crate::codelets::fill::Fill;
use crate::codelets::instance_memo::InstanceMemo;
use crate::codelets::subroutine::{call_cycles, emit_call};

/// The scores' bias for tokens that pad the last group of 16: exact in
/// f16, far below any real score (`exp` of it is 0 in f32), and small
/// enough that a value accumulated onto it stays finite.
pub const MASKED: f64 = -16384.0;

/// The block's sizes: those of an attention block (tokens, hidden size,
/// heads, head dimension, the LayerNorm's epsilon, the softmax scale),
/// with one query row.
pub type PoolShape = AttentionShape;

/// sv's rows of scores: the heads padded to a multiple of 16.
pub fn score_rows(s: PoolShape) -> u32 {
    s.heads.next_multiple_of(16)
}

/// Tokens (of one image) padded to whole groups of 16.
pub fn tokens_padded(s: PoolShape) -> u32 {
    s.key_panels() * 16
}

/// sv's tokens (its output columns): every image's, padded, image after
/// image.
pub fn sv_tokens(s: PoolShape) -> u32 {
    s.images * tokens_padded(s)
}

/// Head tiles per head: one per group of 16 of its value channels.
pub fn head_parts(s: PoolShape) -> u32 {
    s.dp() / 16
}

/// Head tiles: one per (image, head, group of 16 value channels).
pub fn head_tile_count(s: PoolShape) -> u32 {
    s.image_heads() * head_parts(s)
}

/// The block's constants, row-major, as the model defines them.
#[derive(Clone, Debug, PartialEq)]
pub struct PoolConstants {
    /// The post-LayerNorm's scale `[c]`.
    pub gamma: Vec<f64>,
    /// Its shift `[c]`.
    pub beta: Vec<f64>,
    /// The query `[c]` (the probe times the query projection, plus its
    /// bias).
    pub query: Vec<f64>,
    /// The key projection `[c, c]` (input channel major).
    pub w_k: Vec<f64>,
    /// Its bias `[c]`.
    pub b_k: Vec<f64>,
    /// The value projection `[c, c]`.
    pub w_v: Vec<f64>,
    /// Its bias `[c]`.
    pub b_v: Vec<f64>,
    /// The output projection `[c, c]` (input channel major).
    pub w_o: Vec<f64>,
    /// Its bias `[c]`.
    pub b_o: Vec<f64>,
}

/// The products' constants as the tiles hold them (see the module doc).
pub struct HeldPool {
    /// sv's input `[sp + hp, c]`: the rows `a_h`, then `W_v^T` padded.
    pub sv_input: Vec<f64>,
    /// sv's bias `[images m16]`: 0, [`MASKED`] for the padding tokens.
    pub sv_bias: Vec<f64>,
    /// out's weights `[hp, c]`.
    pub w_out: Vec<f64>,
    /// out's bias `[c]`: `b_o + b_v W_o` (f16), `b_o` (FP8).
    pub b_out: Vec<f64>,
    /// FP8: the value bias `[hp]` (padded), in sv's initial partials of
    /// the value rows instead (the attention's output is rounded to FP8
    /// with it).
    pub b_v: Vec<f64>,
}

impl HeldPool {
    /// From the model's constants, in float64.
    pub fn of(s: PoolShape, k: &PoolConstants) -> Self {
        let (c, d, hp) = (s.c as usize, s.head_dim as usize, s.hp() as usize);
        let rows = score_rows(s) as usize + hp;
        let mut sv_input = vec![0.0; rows * c];
        let scale = f64::from(s.scale);
        for h in 0..s.heads as usize {
            for r in 0..c {
                let a: f64 = (h * d..(h + 1) * d)
                    .map(|e| k.w_k[r * c + e] * k.query[e])
                    .sum();
                sv_input[h * c + r] = scale * a;
            }
        }
        for ch in 0..c {
            let row = score_rows(s) as usize + s.padded(ch);
            for r in 0..c {
                sv_input[row * c + r] = k.w_v[r * c + ch];
            }
        }
        let sv_bias = (0..sv_tokens(s))
            .map(|t| {
                if t % tokens_padded(s) < s.m {
                    0.0
                } else {
                    MASKED
                }
            })
            .collect();
        let (w_out, b_out, b_v) = held_output(s, s.dp(), &k.w_o, &k.b_o, &k.b_v);
        HeldPool {
            sv_input,
            sv_bias,
            w_out,
            b_out,
            b_v,
        }
    }
}

/// Where the block's tensors live, per kind of tile.
#[derive(Clone, Debug, PartialEq)]
pub struct PoolLayout {
    /// sv's tiles.
    pub sv: TileLayout,
    /// out's tiles.
    pub out: TileLayout,
    /// The head tiles (every one's).
    pub head: HeadTile,
    /// x's rows on an LN tile.
    pub x: u32,
    /// LayerNorm's output rows (the block's first output).
    pub ln_out: u32,
    /// gamma.
    pub gamma: u32,
    /// beta.
    pub beta: u32,
    /// Where sv's constant input is streamed in ([`Weights::Streamed`]
    /// and several grid columns): each grid row block and K part's input
    /// kept once, in pieces over its grid columns at this home (private),
    /// and gathered in exchange A into sv's input buffer (scratch, whole
    /// element pairs), as [`super::stream`] does for weights over grid
    /// rows. `None`: every grid column keeps the whole input (private).
    pub sv_input_home: Option<u32>,
}

/// The block's plan.
#[derive(Clone, Debug)]
pub struct PoolPlan {
    /// The sizes.
    pub shape: PoolShape,
    /// Scores and `V^T`.
    pub sv: GemmPlan,
    /// The first head tile: head `h`'s value channels `16 j ..` on
    /// `first_head + h parts + j` ([`head_parts`]).
    pub first_head: u32,
    /// The output projection.
    pub out: GemmPlan,
    /// The LN tiles, one per [`PoolPlan::ln_rows`] rows: the range's
    /// last tiles but the head tiles, ascending.
    pub ln_tiles: Vec<u32>,
    /// Rows per LN tile: [`LN_ROWS`], or (weights streamed) as many as
    /// keep the least private memory a tile (their rows stay, the
    /// post-LayerNorm output, while every other block runs).
    pub ln_rows: u32,
    /// Memory.
    pub layout: PoolLayout,
    /// What the block leaves of the memory it was planned in (the next
    /// block's window).
    pub next: Window,
}

/// The block's estimated cycles, step by step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PoolEstimate {
    /// LayerNorm.
    pub layer_norm: u64,
    /// Exchange A (scheduled).
    pub exchange_a: u64,
    /// sv with its reduction.
    pub sv: u64,
    /// Exchange B (scheduled).
    pub exchange_b: u64,
    /// The head tiles: softmax and `P V_h`.
    pub heads: u64,
    /// Exchange C (scheduled).
    pub exchange_c: u64,
    /// out with its reduction.
    pub out: u64,
    /// The syncs between the steps.
    pub sync: u64,
}

impl PoolEstimate {
    /// All of it.
    pub fn total(&self) -> u64 {
        self.layer_norm
            + self.exchange_a
            + self.sv
            + self.exchange_b
            + self.heads
            + self.exchange_c
            + self.out
            + self.sync
    }
}

impl std::fmt::Display for PoolEstimate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} cycles (layer norm {}, exchange A {}, sv {}, exchange B {}, heads {}, exchange C {}, out {}, sync {})",
            self.total(),
            self.layer_norm,
            self.exchange_a,
            self.sv,
            self.exchange_b,
            self.heads,
            self.exchange_c,
            self.out,
            self.sync
        )
    }
}

impl PoolPlan {
    /// Every tile the block uses, ascending.
    pub fn tiles(&self) -> Vec<u32> {
        // sv's grid, out's after it, then the LN tiles with the head
        // tiles among them.
        let mut t: Vec<u32> =
            (self.sv.first_tile..self.out.first_tile + self.out.tiles()).collect();
        t.extend(self.head_tiles());
        t.extend(&self.ln_tiles);
        t.sort_unstable();
        t.dedup();
        t
    }

    /// The head tiles.
    pub fn head_tiles(&self) -> std::ops::Range<u32> {
        self.first_head..self.first_head + head_tile_count(self.shape)
    }

    /// The LN tiles.
    pub fn ln(&self) -> LnTiles<'_> {
        let lay = &self.layout;
        LnTiles {
            tiles: &self.ln_tiles,
            rows_per_tile: self.ln_rows,
            m: self.shape.rows(),
            c: self.shape.c,
            eps: self.shape.eps,
            affine: self.shape.ln_affine,
            x: lay.x,
            ln_out: lay.ln_out,
            gamma: lay.gamma,
            beta: lay.beta,
            output: LnOutput::F16,
            panels: false,
            x_groups: None,
        }
    }

    /// The products placed at their layouts.
    pub fn placed(&self) -> [PlacedGemm; 2] {
        [
            PlacedGemm::new(&self.sv, self.layout.sv, "sv"),
            PlacedGemm::new(&self.out, self.layout.out, "out"),
        ]
    }

    /// Where x enters: each row on its LN tile.
    pub fn input_pieces(&self) -> Vec<TensorPiece> {
        self.ln().input_pieces()
    }

    /// Where the post-LayerNorm's rows are when the block ends: on the LN
    /// tiles, where LayerNorm wrote them.
    pub fn ln_output_pieces(&self) -> Vec<TensorPiece> {
        self.ln()
            .input_pieces()
            .into_iter()
            .map(|p| TensorPiece {
                address: p.address - i64::from(self.layout.x) + i64::from(self.layout.ln_out),
                ..p
            })
            .collect()
    }

    /// Where the pooled row `[1, c]` is when the block ends: out's owned
    /// rows of its output groups.
    pub fn output_pieces(&self) -> Vec<TensorPiece> {
        let [_, out] = self.placed();
        positions(&self.out)
            .into_values()
            .flat_map(|pos| out.output_pieces(pos, out.final_view(pos.2)))
            .collect()
    }

    /// Syncs every tile of the block runs.
    pub fn syncs(&self) -> u32 {
        let r = |p: &GemmPlan| p.grid_k.trailing_zeros();
        3 + SYNCS_PER_ROUND * (r(&self.sv) + r(&self.out))
    }

    /// The three exchanges' schedules.
    pub fn schedules(&self, machine: &MachineModel) -> [Schedule; 3] {
        let tiles = self.tiles();
        [exchange_a(self), exchange_b(self), exchange_c(self)]
            .map(|transfers| schedule(machine, &tiles, &transfers))
    }

    /// The block's estimate per step.
    pub fn estimate(
        &self,
        machine: &MachineModel,
    ) -> Result<PoolEstimate, crate::codelets::CodeletError> {
        self.estimate_with(machine, &self.schedules(machine))
    }

    /// [`Self::estimate`] with [`Self::schedules`] already made (the
    /// lowering has them; scheduling them again took seconds on so400m).
    fn estimate_with(
        &self,
        machine: &MachineModel,
        [a, b, c]: &[Schedule; 3],
    ) -> Result<PoolEstimate, crate::codelets::CodeletError> {
        let est =
            |p: &GemmPlan| p.estimate.compute + p.estimate.rounds_exchange + p.estimate.reduction;
        Ok(PoolEstimate {
            layer_norm: self
                .sv_zero_tokens()
                .values()
                .try_fold(self.ln().estimate(machine)?, |most, fills| {
                    Ok(most.max(launch_cycles(fills, machine)?))
                })?,
            exchange_a: a.cycles,
            sv: launch_cycles(self.sv_rounding().as_slice(), machine)? + est(&self.sv),
            exchange_b: b.cycles,
            heads: (self.layout.head.estimate(machine)?
                + launch_cycles(&self.head_roundings(), machine)?)
            .max(match self.out_widening() {
                Some(cast) => launch_cycles(&[cast], machine)? + call_cycles(machine),
                None => 0,
            }),
            exchange_c: c.cycles,
            out: est(&self.out),
            sync: u64::from(self.syncs()) * u64::from(machine.sync_latency),
        })
    }

    /// FP8: the widening of out's weights from their codes on an out
    /// tile, while the head tiles run ([`super::codegen::PlacedGemm::widen`]).
    pub fn out_widening(&self) -> Option<Cast> {
        self.placed()[1].widen()
    }

    /// The zero fills of the padding tokens' rows of sv's weights (each
    /// image's last token group's panels, whole; exchange A then writes
    /// the real tokens' rows), beside LayerNorm, per tile that runs them:
    /// the column block that holds such a group, every grid row and K
    /// part. sv's weights are scratch, which an earlier block may have
    /// left anything in. Empty when the tokens fill whole groups.
    pub fn sv_zero_tokens(&self) -> BTreeMap<u32, Vec<Fill>> {
        let (s, p) = (self.shape, &self.sv);
        let mut out: BTreeMap<u32, Vec<Fill>> = BTreeMap::new();
        if s.m.is_multiple_of(16) {
            return out;
        }
        for image in 0..s.images {
            let group = image * s.key_panels() + s.m / 16;
            let (j, local) = (group / p.groups, group % p.groups);
            let fill = Fill {
                bytes: p.k_panels * 16 * 32,
                dst: self.layout.sv.weights + local * p.k_panels * 16 * 32,
            };
            for (i, k) in (0..p.grid_rows).flat_map(|i| (0..p.grid_k).map(move |k| (i, k))) {
                out.entry(p.tile(i, j, k)).or_default().push(fill.clone());
            }
        }
        out
    }

    /// With FP8 products, the rounding of sv's weights (LayerNorm's rows,
    /// which stay f16 on the LN tiles as the block's first output) to the
    /// FP8 grid on an sv tile, before its vertex: what the IR's cast
    /// before the key/value product does.
    pub fn sv_rounding(&self) -> Option<Cast> {
        let w = self.layout.sv.weights;
        self.shape.fp8.map(|_| Cast {
            kind: CastKind::F16RoundF8 { scale: 0 },
            len: self.sv.vertex().weight_bytes() as u32 / 2,
            input: w,
            output: w,
        })
    }

    /// With FP8 products, the rounding of a head tile's output (its 16
    /// channels, [`HeadTile::output`]'s row 0) to the FP8 grid before
    /// exchange C (the IR's cast before the output product).
    pub fn head_roundings(&self) -> Vec<Cast> {
        let head = &self.layout.head;
        match self.shape.fp8.and_then(|f| f.out_scale) {
            Some(_) => vec![Cast {
                kind: CastKind::F16RoundF8 { scale: 0 },
                len: 16,
                input: head.output,
                output: head.output,
            }],
            None => Vec::new(),
        }
    }

    /// The report: each stage's tiles and the estimate per step.
    pub fn report(&self, machine: &MachineModel) -> String {
        let s = &self.shape;
        let estimate = self
            .estimate(machine)
            .map_or_else(|e| e.to_string(), |e| e.to_string());
        format!(
            "pooling head {}x{}, {} heads of {} (padded to {}), a constant query: LayerNorm on tiles {}..={} ({} rows each, kept as the post-LayerNorm output)\n  sv (scores and V^T): {}\n  heads: tiles {}..={}, {} a head (softmax over {} tokens, P V of 16 of its {} channels a tile)\n  out: {}\n  estimate {estimate}\n",
            s.m,
            s.c,
            s.heads,
            s.head_dim,
            s.dp(),
            self.ln_tiles.first().copied().unwrap_or(0),
            self.ln_tiles.last().copied().unwrap_or(0),
            self.ln_rows,
            self.sv,
            self.first_head,
            self.first_head + head_tile_count(*s) - 1,
            head_parts(*s),
            s.m,
            s.dp(),
            self.out,
        )
    }
}

/// A product planned by the search on `tiles` tiles from `first`.
fn plan_on(
    name: &str,
    shape: GemmShape,
    machine: &MachineModel,
    (first, tiles): (u32, u32),
) -> Result<GemmPlan, String> {
    let part = MachineModel {
        tiles: tiles.max(1),
        ..machine.clone()
    };
    plan_gemm(shape, &part)
        .map(|c| c.plan.placed_at(first))
        .map_err(|e| format!("{name} (on {tiles} tiles from tile {first}): {e}"))
}

/// Plans the block on the `count` tiles from `first`: the LN tiles last,
/// a head tile per head, and the products on the rest, out on a quarter
/// (it has one row: its weights, not its work, set its tiles). With
/// `weights` streamed, sv's constant input is kept once per grid column
/// set and gathered before sv ([`PoolLayout::sv_input_home`]), and the
/// LN tiles take as many rows each ([`PoolPlan::ln_rows`], 1 to
/// [`LN_ROWS`]), and out a quarter or a third of the products' tiles, as
/// leave the least private memory a tile (so400m: 2 rows a tile, and out
/// on a third, where its weights in K parts of 4 keep 10 KB a tile
/// instead of 20; ties take more rows, fewer LN tiles, and a quarter).
///
/// The head tiles go on a run of tiles among the block's last (with the
/// LN tiles) that holds none of `busy`: a chain passes its earlier
/// blocks' LN tiles, whose exchange code (the residual's sends) is the
/// most a tile has, and a head tile's (its tokens' receives) is the
/// block's most. Where there is no such run they go last.
pub fn plan_pool_in(
    shape: PoolShape,
    whole: &MachineModel,
    range: (u32, u32),
    window: Window,
    (weights, busy): (Weights, &BTreeSet<u32>),
) -> Result<PoolPlan, String> {
    let plan_rows = |rows, out_share| {
        plan_pool_rows(
            shape,
            whole,
            range,
            window,
            (weights, rows, out_share),
            busy,
        )
    };
    if weights == Weights::Resident {
        return plan_rows(LN_ROWS, 4);
    }
    let mut best: Option<PoolPlan> = None;
    let mut first_err = None;
    for rows in (1..=LN_ROWS).rev() {
        for out_share in [4, 3] {
            match plan_rows(rows, out_share) {
                Ok(p) if best.as_ref().is_none_or(|b| p.next.base < b.next.base) => best = Some(p),
                Ok(_) => {}
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
    }
    best.ok_or_else(|| first_err.unwrap_or_default())
}

/// The first of the last run of `n` tiles in `tail` that holds none of
/// `busy`, or `None`.
fn quiet_run(tail: std::ops::Range<u32>, n: u32, busy: &BTreeSet<u32>) -> Option<u32> {
    let end = tail.end.checked_sub(n)?;
    (tail.start..=end)
        .rev()
        .find(|&t| (t..t + n).all(|u| !busy.contains(&u)))
}

/// [`plan_pool_in`] with `ln_rows` rows per LN tile, out on one
/// `out_share`th of the products' tiles.
fn plan_pool_rows(
    shape: PoolShape,
    whole: &MachineModel,
    (first, count): (u32, u32),
    mut window: Window,
    (weights, ln_rows, out_share): (Weights, u32, u32),
    busy: &BTreeSet<u32>,
) -> Result<PoolPlan, String> {
    // The products' search sees the interleaved memory earlier blocks
    // left.
    let machine = &MachineModel {
        tiles: count,
        interleaved_base: window.base,
        ..whole.clone()
    };
    let s = shape;
    if s.images == 0 || s.m == 0 || s.c == 0 || s.heads == 0 || s.head_dim == 0 {
        return Err("the block has an empty dimension".into());
    }
    if !s.c.is_multiple_of(16) {
        return Err(format!(
            "the hidden size {} is not a multiple of 16, which the pooling head lowering needs yet (sv's weight panels come whole from LayerNorm's rows)",
            s.c
        ));
    }
    let n_ln = s.rows().div_ceil(ln_rows);
    let n_heads = head_tile_count(s);
    let Some(avail) = count.checked_sub(n_ln.max(n_heads)).filter(|&t| t >= 2) else {
        return Err(format!(
            "{} rows need {n_ln} LayerNorm tiles and {} heads {} tiles each (one per 16 value channels, among the LN tiles), and the two products at least one tile each: the block has {count}",
            s.rows(),
            s.image_heads(),
            head_parts(s)
        ));
    };
    let base = window.base.next_multiple_of(16);
    let head = HeadTile::packed(s, machine, base)?;
    let f16 = AmpVariant::F16;
    let with_bias = Epilogue {
        bias: true,
        ..Epilogue::default()
    };
    let out_tiles = (avail / out_share).max(1);
    // Streamed, sv's input is scratch too: the three buffers laid out
    // under its output ([`UnderOutput`]).
    let sv_place = match weights {
        Weights::Streamed => ReductionPlace::UnderOutput {
            keeps_result: false,
        },
        Weights::Resident => ReductionPlace::default(),
    };
    let sv = plan_on(
        "sv",
        GemmShape {
            m: score_rows(s) + s.hp(),
            k: s.c,
            n: sv_tokens(s),
            variant: f16,
            epilogue: Epilogue {
                reduction: sv_place,
                ..with_bias
            },
        },
        machine,
        (first, avail - out_tiles),
    )?;
    // The LN tiles last, after the products': a chain's earlier blocks
    // run their widest (an attention block's heads) from the first tile.
    // The head tiles among them (or past them, where there are more head
    // tiles than LN tiles), on the last run of tiles that holds none of
    // `busy`: a head tile's exchange code is large.
    let tail = first + avail..first + count;
    let first_head = quiet_run(tail.clone(), n_heads, busy).unwrap_or(tail.end - n_heads);
    let ln_tiles: Vec<u32> = (tail.end - n_ln..tail.end).collect();
    let out = plan_on(
        "out",
        GemmShape {
            m: s.images,
            k: s.hp(),
            n: s.c,
            variant: f16,
            epilogue: with_bias,
        },
        machine,
        (first + sv.tiles(), out_tiles),
    )?;
    // Private memory, each role's from the base (sv's, out's and the LN
    // tiles' are different tiles): sv's bias and its constant input (or,
    // streamed, its home piece of it); out's weights and bias; the LN
    // tiles' rows (the post-LayerNorm's a host output, read at the end),
    // gamma and beta. The products' buffers are shared scratch, sv's
    // weights (the LayerNorm rows exchange A writes, below sv's buffers;
    // the padding tokens' rows zeroed beside LayerNorm,
    // [`PoolPlan::sv_zero_tokens`]), its streamed input and the head
    // tiles' tensors too ([`HeadTile`]).
    let (v_sv, v_out) = (sv.vertex(), out.vertex());
    let (mut l_sv, mut l_out) = (layout(&sv, whole), layout(&out, whole));
    let after = |at: u32, bytes: u64| (at + bytes as u32).next_multiple_of(16);
    l_sv.bias = v_sv.bias.map(|_| base);
    let below_input = l_sv.bias.map_or(base, |b| after(b, v_sv.bias_bytes()));
    let sv_input_home = (weights == Weights::Streamed && sv.grid_cols > 1).then_some(below_input);
    let sv_end = match sv_input_home {
        Some(home) => after(home, u64::from(sv_input_piece(&sv))),
        None => {
            // sv's input starts an element pair of its own: the AMP loads
            // it in the same instructions as the bias block (the initial
            // partials).
            let pair = 2 * whole.element_bytes;
            l_sv.input = below_input.next_multiple_of(pair);
            after(l_sv.input, v_sv.input_bytes())
        }
    };
    // FP8: out's weights (values on the FP8 grid) kept as codes, one byte
    // each, and widened to f16 below out's buffers while the head tiles
    // run.
    let out_codes = s.fp8.and_then(|f| f.out_scale);
    let out_kept = match out_codes {
        Some(_) => v_out.weight_bytes() / 2,
        None => v_out.weight_bytes(),
    };
    l_out.weights = base;
    l_out.bias = v_out.bias.map(|_| after(base, out_kept));
    let out_end = match l_out.bias {
        Some(b) => after(b, v_out.bias_bytes()),
        None => after(base, out_kept),
    };
    let out_bottom = match out_codes {
        Some(scale) => {
            l_out.codes = Some(WeightCodes { at: base, scale });
            l_out.weights = l_out
                .buffers_bottom()
                .saturating_sub(v_out.weight_bytes() as u32)
                & !15;
            l_out.weights
        }
        None => l_out.buffers_bottom(),
    };
    let ln = LnRows::at(base, s.c, ln_rows);
    let private_end = sv_end.max(out_end).max(ln.end);
    let sv_bottom = match sv_input_home {
        Some(_) => {
            // Y at the top, the weights (LayerNorm's rows) in its pairs'
            // slack, the gathered input below both and out of Y's pairs,
            // the reduction's buffers over the input and the weights.
            let under = UnderOutput::of(
                &[UnderOutputProduct {
                    vertex: &v_sv,
                    grid_k: sv.grid_k,
                    weights: v_sv.weight_bytes(),
                    keeps_result: false,
                }],
                whole,
            );
            let top = u64::from(whole.sram_end);
            let at = |offset: u64| top.saturating_sub(offset) as u32;
            l_sv.output = at(under.output);
            l_sv.weights = at(under.weights[0]);
            l_sv.input = at(under.input[0]);
            l_sv.reduction = under.reduction[0].map(|[r, f]| [at(r), at(f), l_sv.output]);
            // The AMP loads the input and the bias block (private, at the
            // base) in one instruction: they must not share an element
            // pair.
            let pair = 2 * whole.element_bytes;
            let bias_end = after(base, v_sv.bias_bytes());
            if l_sv.bias.is_some() && l_sv.input / pair <= (bias_end - 1) / pair {
                return Err(format!(
                    "sv's input at 0x{:x} would share an element pair with its bias block at 0x{base:x}..0x{bias_end:x}",
                    l_sv.input
                ));
            }
            at(under.bottom)
        }
        None => {
            let bottom = l_sv.results_bottom();
            l_sv.weights = bottom.saturating_sub(v_sv.weight_bytes() as u32) & !15;
            l_sv.weights
        }
    };
    let shared_bottom = sv_bottom.min(out_bottom).min(head.bottom);
    let kept = window.base;
    window.base = private_end;
    if shared_bottom < window.scratch_floor() {
        return Err(format!(
            "the pooling head does not fit a tile's interleaved memory: its weights, bias blocks, sv's input{} and the LayerNorm rows take {} bytes (above {} bytes earlier blocks keep), its products' and head tiles' buffers {}, against {}{}",
            if sv_input_home.is_some() { "'s home pieces" } else { "" },
            private_end - kept,
            kept - whole.interleaved_base,
            whole.sram_end - shared_bottom,
            whole.sram_end - whole.interleaved_base,
            window.floor_note()
        ));
    }
    window.use_scratch(shared_bottom);
    let states = window.region0_beside_rows(v_sv.state_bytes().max(v_out.state_bytes()) as u32);
    l_sv.states = states;
    l_out.states = states;
    l_sv.tensors_start = window.region0;
    l_out.tensors_start = window.region0;
    let layout = PoolLayout {
        sv: l_sv,
        out: l_out,
        head,
        x: ln.x,
        ln_out: ln.ln_out,
        gamma: ln.gamma,
        beta: ln.beta,
        sv_input_home,
    };
    Ok(PoolPlan {
        shape,
        sv,
        first_head,
        out,
        ln_tiles,
        ln_rows,
        layout,
        next: window.after_block(),
    })
}

/// Bytes of each piece of sv's streamed input: a grid row block and K
/// part's input panels over its grid columns, in whole 16-byte lines.
pub fn sv_input_piece(sv: &GemmPlan) -> u32 {
    pieces_of(sv.vertex().input_bytes() as u32, sv.grid_cols)
}

/// The tiles of sv's grid row block `i`, K part `k`: one per grid column,
/// which keep its streamed input's pieces in order.
fn sv_row_group(sv: &GemmPlan, i: u32, k: u32) -> Vec<u32> {
    (0..sv.grid_cols).map(|j| sv.tile(i, j, k)).collect()
}

/// Exchange A: sv's streamed input (where it is, longest first: every
/// tile of a grid row block and K part multicasts its piece to the
/// others', [`PoolLayout::sv_input_home`]), then LayerNorm's rows into
/// sv's weight panels.
pub fn exchange_a(plan: &PoolPlan) -> Vec<Transfer> {
    let [sv, _] = plan.placed();
    let mut out = Vec::new();
    if let Some(home) = plan.layout.sv_input_home {
        let p = &plan.sv;
        let (piece, block) = (sv_input_piece(p), p.vertex().input_bytes() as u32);
        for i in 0..p.grid_rows {
            for k in 0..p.grid_k {
                let group = sv_row_group(p, i, k);
                out.extend((0..p.grid_cols).filter_map(|n| {
                    piece_transfer(&group, n, (home, sv.lay.input), (piece, block))
                }));
            }
        }
    }
    out.extend(weight_panel_transfers(&sv, &plan.ln(), |r| {
        plan.shape.padded_token(r)
    }));
    out
}

/// Exchange B: each head's row of scores (sv's row `h`, every token
/// group) to its head tile's scores at `16 x group`; each head's value
/// channels (sv's rows from `sp`) to its head tile's value panels, token
/// group `g` of value group `j` at panel `(j, g)`. An image's token groups
/// go to its own head tiles, as its groups from 0.
pub fn exchange_b(plan: &PoolPlan) -> Vec<Transfer> {
    let s = plan.shape;
    let [sv, _] = plan.placed();
    let p = &plan.sv;
    let head = &plan.layout.head;
    let (sp, dp, kp) = (score_rows(s), s.dp(), s.key_panels());
    let mut out = Vec::new();
    for i in 0..p.grid_rows {
        for j in 0..p.grid_cols {
            for k in 0..p.grid_k {
                let (a, b) = owned_global(p, i, k);
                let view = sv.final_view(k);
                let sender = p.tile(i, j, k);
                for g in 0..p.groups_of(j) {
                    // The image's group of tokens, to the image's head
                    // tiles.
                    let (image, group) = ((j * p.groups + g) / kp, (j * p.groups + g) % kp);
                    let parts = head_parts(s);
                    let first = plan.first_head + image * s.heads * parts;
                    let src = |r: u32| view.at(g, r - i * p.rows);
                    for r in a..b.min(s.heads) {
                        out.push(Transfer {
                            sender,
                            chunks: vec![Chunk {
                                address: src(r),
                                words: 8,
                            }],
                            receivers: (0..parts)
                                .map(|j| (first + r * parts + j, head.scores() + group * 32))
                                .collect(),
                            segment: None,
                        });
                    }
                    // Value channel `e` of head `h`: row `sp + h dp + e`,
                    // to row `e % 16` of input panel `group` on the head's
                    // tile for its group of 16 channels; cut where those
                    // groups end.
                    let mut lo = a.max(sp);
                    while lo < b.min(sp + s.hp()) {
                        let e = lo - sp;
                        let hi = (sp + (e / 16 + 1) * 16).min(b);
                        let tile = first + (e / dp) * parts + (e % dp) / 16;
                        let v = &head.values;
                        out.push(Transfer {
                            sender,
                            chunks: vec![Chunk {
                                address: src(lo),
                                words: 8 * (hi - lo),
                            }],
                            receivers: vec![(tile, v.input + (group * 16 + e % 16) * 32)],
                            segment: None,
                        });
                        lo = hi;
                    }
                }
            }
        }
    }
    round_robin(out)
}

/// Exchange C: head `h`'s output channels `16 j ..` (row 0 of its tile
/// `j`'s transposed output) to out's input panel `h dp / 16 + j`, on
/// every column block of its K part, as the row of the head tile's
/// image.
pub fn exchange_c(plan: &PoolPlan) -> Vec<Transfer> {
    let s = plan.shape;
    let [_, out] = plan.placed();
    let po = &plan.out;
    let head = &plan.layout.head;
    let np = s.dp() / 16;
    let mut transfers = Vec::new();
    for ih in 0..s.image_heads() {
        // The image's row of out's input.
        let (image, h) = (ih / s.heads, ih % s.heads);
        let (i, row) = (image / po.rows, image % po.rows);
        for jd in 0..np {
            let panel = h * np + jd;
            let (k, g) = (panel / po.k_panels, panel % po.k_panels);
            transfers.push(Transfer {
                sender: plan.first_head + ih * np + jd,
                chunks: vec![Chunk {
                    address: head.output,
                    words: 8,
                }],
                receivers: (0..po.grid_cols)
                    .map(|j| (po.tile(i, j, k), out.input_at(g, row)))
                    .collect(),
                segment: None,
            });
        }
    }
    transfers
}

/// The lowered block.
#[derive(Clone, Debug)]
pub struct LoweredPool {
    /// The `ipu.executable`.
    pub executable: OpId,
    /// Estimated cycles.
    pub estimate: PoolEstimate,
    /// The most bytes of exchange code on a tile.
    pub exchange_code_bytes_max: u64,
}

/// Builds the block as a program of its own, appended to `block`: host
/// tensors `input0` (x, of type `x_ty`), `output0` (the post-LayerNorm's
/// rows, `ln_ty`) and `output1` (the pooled row, `y_ty`).
#[allow(clippy::too_many_arguments)]
pub fn emit_pool(
    ctx: &mut Context,
    block: BlockId,
    plan: &PoolPlan,
    constants: &PoolConstants,
    (x_ty, ln_ty, y_ty): (Type, Type, Type),
    machine: &MachineModel,
    loc: Location,
) -> Result<LoweredPool, Diagnostic> {
    let (executable, exe_body) = build::executable(ctx, &machine.name, loc.clone());
    ctx.append_op(block, executable);
    let frame = Frame::alone(executable, exe_body);
    let lowered = emit_pool_in(ctx, &frame, plan, constants, machine, loc.clone())?;
    append_host_tensors(
        ctx,
        exe_body,
        (
            vec![(x_ty, plan.input_pieces())],
            vec![
                (ln_ty, plan.ln_output_pieces()),
                (y_ty, plan.output_pieces()),
            ],
        ),
        &loc,
    );
    Ok(lowered)
}

/// [`emit_pool`] into `frame`'s executable, without host tensors (the
/// block's input and outputs are [`PoolPlan::input_pieces`],
/// [`PoolPlan::ln_output_pieces`] and [`PoolPlan::output_pieces`]).
pub fn emit_pool_in(
    ctx: &mut Context,
    frame: &Frame<'_>,
    plan: &PoolPlan,
    constants: &PoolConstants,
    machine: &MachineModel,
    loc: Location,
) -> Result<LoweredPool, Diagnostic> {
    let s = plan.shape;
    let fail = |err: crate::codelets::CodeletError| Diagnostic::error(loc.clone(), err.to_string());
    let [sv, out] = plan.placed();
    let schedules = plan.schedules(machine);
    let [a, b, c] = &schedules;
    let (at_sv, at_out) = (positions(&plan.sv), positions(&plan.out));
    let ln = plan.ln();
    let ln_of = ln.index();
    let head = &plan.layout.head;
    let rounds = |p: &GemmPlan| p.grid_k.trailing_zeros();
    let sync = |e: &mut Emitter| e.solo(inst("sync", [op::sym("TEXCH_SYNCZONE_INTERNAL")]));
    let mut exchange_code_bytes_max = 0;
    let zero_tokens = plan.sv_zero_tokens();
    let mut memo = InstanceMemo::new();
    for t in plan.tiles() {
        let mut e = frame.open_tile(ctx, t, &loc);
        let mut xcode = 0;
        let mut calls = Calls::new();
        ln.emit_call(&mut e, ln_of.get(&t).copied(), &mut calls);
        if let Some(fills) = zero_tokens.get(&t) {
            emit_launches(&mut e, &mut calls, "sv_zero_tokens", fills, machine).map_err(fail)?;
        }
        // Each exchange's compute follows it at a fence.
        sync(&mut e);
        xcode += a.emit(&mut e, machine, (t, "a"), Some(&mut calls));
        match at_sv.get(&t) {
            Some(&pos) => {
                if let Some(round) = plan.sv_rounding() {
                    emit_call(&mut e, "sv_round");
                    calls.push(("sv_round".into(), Box::new(round)));
                }
                xcode += sv
                    .emit_compute(&mut e, pos, machine, &mut calls)
                    .map_err(fail)?
                    .1
            }
            None => (0..rounds(&plan.sv) * SYNCS_PER_ROUND).for_each(|_| sync(&mut e)),
        }
        sync(&mut e);
        xcode += b.emit(&mut e, machine, (t, "b"), Some(&mut calls));
        let is_head = plan.head_tiles().contains(&t);
        if is_head {
            for (name, launch) in head.before_product() {
                emit_call(&mut e, name);
                calls.push((name.into(), launch));
            }
            head.values
                .emit_supervisor_stepping(
                    &mut e,
                    "pool_pv",
                    (op::imm(i64::from(head.values.weights)), 32),
                    op::sym("pool_pv_vertex_state"),
                )
                .map_err(fail)?;
            emit_call(&mut e, "pool_transpose");
            calls.push(("pool_transpose".into(), Box::new(head.transpose())));
            emit_launches(
                &mut e,
                &mut calls,
                "pool_round",
                &plan.head_roundings(),
                machine,
            )
            .map_err(fail)?;
        }
        if at_out.contains_key(&t) {
            out.emit_widen(&mut e, machine, &mut calls).map_err(fail)?;
        }
        sync(&mut e);
        xcode += c.emit(&mut e, machine, (t, "c"), Some(&mut calls));
        match at_out.get(&t) {
            Some(&pos) => {
                xcode += out
                    .emit_compute(&mut e, pos, machine, &mut calls)
                    .map_err(fail)?
                    .1
            }
            None => (0..rounds(&plan.out) * SYNCS_PER_ROUND).for_each(|_| sync(&mut e)),
        }
        xcode += frame.close_tile(&mut e, t, &mut calls);
        exchange_code_bytes_max = exchange_code_bytes_max.max(xcode);
        frame.count_exchange(t, xcode);
        if at_sv.contains_key(&t) {
            sv.emit_worker_code(&mut e);
        }
        if at_out.contains_key(&t) {
            out.emit_worker_code(&mut e);
        }
        if is_head {
            head.values.emit_workers(&mut e, "pool_pv");
        }
        emit_calls(&mut e, &calls, &mut memo).map_err(fail)?;
    }
    memo.finish(ctx);
    let held = HeldPool::of(s, constants);
    emit_sv_input(ctx, frame.exe_body, plan, &sv, &held, &loc);
    out.emit_constants(
        ctx,
        frame.exe_body,
        Constants {
            weights: &held.w_out,
            bias: Some(&held.b_out),
        },
        &loc,
    );
    ln.emit_constants(
        ctx,
        frame.exe_body,
        (&constants.gamma, &constants.beta),
        &loc,
    );
    Ok(LoweredPool {
        executable: frame.executable,
        estimate: plan.estimate_with(machine, &schedules).map_err(fail)?,
        exchange_code_bytes_max,
    })
}

/// sv's constants: the vertex states, its bias rows and its input panels
/// (the rows `a_h` and `W_v^T` of each grid row block and K part, on
/// every grid column, or their pieces where streamed). The padding
/// tokens' weight rows are zeroed at run time ([`PoolPlan::sv_zero_tokens`]).
fn emit_sv_input(
    ctx: &mut Context,
    exe_body: BlockId,
    plan: &PoolPlan,
    sv: &PlacedGemm,
    held: &HeldPool,
    loc: &Location,
) {
    let p = &plan.sv;
    let s = plan.shape;
    let c = s.c as usize;
    let rows = (score_rows(s) + s.hp()) as usize;
    // The states and the bias; the weights come from exchange A.
    sv.emit_states(ctx, exe_body, loc);
    if s.fp8.is_some() {
        // Each token's scores from its bias, its values from the value
        // bias too.
        let sp = score_rows(s) as usize;
        let bias: Vec<f64> = (0..p.shape.m as usize)
            .flat_map(|r| {
                let v = r.checked_sub(sp).map_or(0.0, |v| held.b_v[v]);
                held.sv_bias.iter().map(move |&b| b + v)
            })
            .collect();
        sv.emit_row_bias(ctx, exe_body, &bias, loc);
    } else {
        sv.emit_bias(ctx, exe_body, &held.sv_bias, loc);
    }
    let half = Type::float(FloatKind::F16);
    for i in 0..p.grid_rows {
        for k in 0..p.grid_k {
            let mut values = Vec::with_capacity((p.k_panels * p.rows * 16) as usize);
            for g in 0..p.k_panels {
                let panel = k * p.k_panels + g;
                for r in 0..p.rows {
                    let row = (i * p.rows + r) as usize;
                    values.extend((0..16).map(|ch| {
                        let col = (panel * 16) as usize + ch;
                        if row < rows && col < c {
                            held.sv_input[row * c + col]
                        } else {
                            0.0
                        }
                    }));
                }
            }
            let name = format!("sv_input_row{i}_k{k}");
            let bytes = encode_f16(&values);
            let t = match plan.layout.sv_input_home {
                // Streamed: a piece on each grid column's tile.
                Some(home) => {
                    let pieces = home_pieces(
                        &sv_row_group(p, i, k),
                        home,
                        sv_input_piece(p),
                        (bytes.len() as u32, 2),
                    );
                    constant_tensor(
                        ctx,
                        &name,
                        (half.clone(), 2, 16),
                        bytes,
                        &pieces,
                        loc.clone(),
                    )
                }
                None => replicated_constant(
                    ctx,
                    &name,
                    (half.clone(), 2, 8),
                    bytes,
                    (&sv_row_group(p, i, k), sv.lay.input),
                    loc.clone(),
                ),
            };
            ctx.append_op(exe_body, t);
        }
    }
}

/// The block in float64 (`x` `[images m, c]`, f16 values), computed as
/// the model defines it (keys included), image by image: the
/// post-LayerNorm's rows `[images m, c]` and the pooled rows `[images,
/// c]`.
pub fn reference(s: PoolShape, x: &[f64], k: &PoolConstants) -> (Vec<f64>, Vec<f64>) {
    let (mut y, mut pooled) = (Vec::new(), Vec::new());
    for image in x.chunks_exact((s.m * s.c) as usize) {
        let (yi, pi) = reference_image(s, image, k);
        y.extend(yi);
        pooled.extend(pi);
    }
    (y, pooled)
}

/// [`reference()`] of one image.
fn reference_image(s: PoolShape, x: &[f64], k: &PoolConstants) -> (Vec<f64>, Vec<f64>) {
    let (m, c, d) = (s.m as usize, s.c as usize, s.head_dim as usize);
    let mut y = Vec::with_capacity(m * c);
    for row in x.chunks_exact(c) {
        y.extend(layer_norm_reference(row, &k.gamma, &k.beta, s.eps));
    }
    // FP8 products multiply the post-LayerNorm's and the attention's
    // outputs as FP8 values (the IR's casts).
    let on_grid = |v: f64| match s.fp8 {
        Some(_) => f8_to_f64(f64_to_f8(v)),
        None => v,
    };
    let out_on_grid = |v: f64| match s.fp8.and_then(|f| f.out_scale) {
        Some(_) => on_grid(v),
        None => v,
    };
    let project = |w: &[f64], b: &[f64]| -> Vec<f64> {
        let mut out = Vec::with_capacity(m * c);
        for row in y.chunks_exact(c) {
            let mut o = b.to_vec();
            for (a, w_row) in row.iter().zip(w.chunks_exact(c)) {
                let a = on_grid(*a);
                o.iter_mut().zip(w_row).for_each(|(o, w)| *o += a * w);
            }
            out.extend(o);
        }
        out
    };
    let (keys, values) = (project(&k.w_k, &k.b_k), project(&k.w_v, &k.b_v));
    let mut att = vec![0.0; c];
    for h in 0..s.heads as usize {
        let q = &k.query[h * d..(h + 1) * d];
        let scores: Vec<f64> = (0..m)
            .map(|t| {
                f64::from(s.scale)
                    * q.iter()
                        .zip(&keys[t * c + h * d..t * c + (h + 1) * d])
                        .map(|(a, b)| a * b)
                        .sum::<f64>()
            })
            .collect();
        let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = scores.iter().map(|v| (v - max).exp()).collect();
        let sum: f64 = e.iter().sum();
        for (t, e) in e.iter().enumerate() {
            for (o, v) in att[h * d..(h + 1) * d]
                .iter_mut()
                .zip(&values[t * c + h * d..t * c + (h + 1) * d])
            {
                *o += e / sum * v;
            }
        }
    }
    let mut pooled = k.b_o.clone();
    for (a, w_row) in att.iter().zip(k.w_o.chunks_exact(c)) {
        let a = out_on_grid(*a);
        pooled.iter_mut().zip(w_row).for_each(|(o, w)| *o += a * w);
    }
    (y, pooled)
}
