//! The transformer MLP block on the tiles:
//! `y = x + fc2(gelu(fc1(layer_norm(x))))`, f16, or with FP8 products
//! ([`Fp8Domains`]): then LayerNorm writes FP8 codes (32-channel panels,
//! the same 32 bytes per panel row as f16's 16 channels), fc1's inner size
//! is padded to whole pairs of output groups, GELU writes each pair of
//! fc1's output groups as one FP8 panel of fc2's input over the pair's
//! first group ([`crate::codelets::gelu_f8`]), exchange B sends one panel
//! per pair, and the residual add scales fc2's output back from its
//! unscaled domain.
//!
//! Supersteps (every tile runs every sync; an exchange follows a sync and
//! the compute after it follows the exchange at a fence, with no sync
//! between, as does each reduction round's adds):
//!
//! 1. **LayerNorm** on the *LN tiles*, [`LN_ROWS`] rows each (one per
//!    worker), x entering from the host in rows. The LN tiles are the last
//!    tiles of the chip, outside both products' grids.
//! 2. **Exchange A** ([`super::block_exchange`], scheduled by
//!    [`super::schedule`]): each LN tile multicasts its rows of every
//!    input panel of an fc1 K part to the fc1 tiles of that row block and
//!    K part (every column block), in one segmented transfer that the
//!    receivers lay out in panel order, the layout the AMP reads; and it
//!    sends its rows of x, a segment per output group of fc2, to the fc2
//!    tiles that own those rows after fc2's reduction (the residual): at
//!    FP8 from x's copy in 16-channel groups that LayerNorm's apply pass
//!    writes below x's rows ([`BlockLayout::x_groups`]), a group's rows one
//!    chunk, not one a row.
//! 3. **fc1**: the GEMM vertex, the K split's reduction rounds, the bias
//!    as the AMP's initial partials, GELU in place on the owned rows.
//! 4. **Exchange B**: each fc1 tile multicasts its owned rows of each
//!    output group, which is one input panel of fc2 (the AMP's output and
//!    input panels are both 16 channels of f16), to the fc2 tiles of that
//!    panel's K part and row block (every column block).
//! 5. **fc2**: the vertex and its reduction rounds, then on the owned rows
//!    `+ x` (received in step 2) and `+ b2` (a constant): fc2 has no
//!    in-place bias because its output overlays fc1's memory.
//!
//! Tile memory, from the top of interleaved memory
//! ([`ReductionPlace::UnderOutput`]): fc1's output (steps 1–4), then
//! fc2's over it (5); right below it the streamed weights, fc1's (1–3),
//! then fc2's over them (4–5); below both and out of the outputs' element
//! pairs fc1's input (1–3), then fc2's (4–5); each product's reduction
//! buffers below the outputs' pairs, over its dead input and weights,
//! except fc1's first result where its reduction ends there (an odd
//! number of rounds), which lies below the inputs (exchange B writes
//! fc2's input while it reads fc1's result). The LN tiles keep
//! LayerNorm's output at the top and x's rows in the element pair below
//! (they run no product); the resident weights of both products sit at
//! the bottom of interleaved memory.
//! Region 0 holds the vertex states and, in three different 16 KiB banks
//! (the add codelet's loads and store each need their own), the residual,
//! the sum and the bias rows.

use std::borrow::Cow;
use std::collections::BTreeMap;

use ipuc_dialects::ipu::TensorPiece;
use ipuc_ipu_arch::float8::{f64_to_f8, f8_to_f64};
use ipuc_ipu_arch::MachineModel;
use ipuc_ir::{BlockId, Context, Diagnostic, FloatKind, Location, OpId, Type};

use super::block_exchange::residual_view;
pub use super::block_exchange::{exchange_a, exchange_b, fc1_gather_before, schedules};
use super::codegen::{
    emit_calls, emit_launches, emit_standalone, launch_cycles, replicated_constant, Calls,
    Constants, Frame, PlacedGemm, TileLayout, View,
};
use super::ln_tiles::{LnOutput, LnTiles};
use super::plan::{
    evaluate, plan_gemm_where, Accept, BiasRows, Epilogue, F8Pairs, GemmPlan, GemmShape, Grid,
    ReductionPlace, Rejected, UnderOutput, UnderOutputProduct,
};
use super::reduce;
use super::reduce::SYNCS_PER_ROUND;
use super::squeeze::{Squeeze, MAX_SQUEEZES};
pub use super::stream::Weights;
use super::window::{Window, ADDS_FULL, ROWS_FULL};
use crate::codelets::amp::AmpVariant;
use crate::codelets::broadcast::RowBroadcast;
use crate::codelets::elementwise::{Binary, BinaryOp, VecType};
use crate::codelets::emitter::{inst, op, Emitter};
use crate::codelets::gelu::GeluForm;
use crate::codelets::gemm::TileGemm;
use crate::codelets::instance_memo::InstanceMemo;
use crate::codelets::program::Codelet;
use crate::codelets::subroutine::emit_call;

pub use super::ln_tiles::LN_ROWS;

/// An MLP block's sizes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MlpShape {
    /// Tokens (rows of x).
    pub m: u32,
    /// Hidden size (columns of x), a multiple of 16.
    pub c: u32,
    /// The MLP's inner size.
    pub h: u32,
    /// LayerNorm's epsilon.
    pub eps: f32,
    /// Whether LayerNorm's scale and shift do anything (false where they
    /// are ones and zeros, folded into fc1 by `fold-layernorm-affine`:
    /// the LN tiles skip them).
    pub ln_affine: bool,
    /// The GELU between the products.
    pub gelu: GeluForm,
    /// FP8 products (`None`: f16 products).
    pub fp8: Option<Fp8Domains>,
}

/// An FP8 block's numbers. Both products run `f8v8hihov4amp` on FP8 codes:
/// the activations' codes are their values (LayerNorm and GELU write
/// `f8(y)`, scale 0, the IR's `nn.cast` to `f8E4M3FNUZ`), the weights'
/// codes are `w * 2^D`. The AMP multiplies codes, so a product's f16
/// output, bias and reduction partials are in its *unscaled domain*:
/// `true = unscaled * 2^-D`. GELU reads fc1's unscaled output and writes
/// true-valued codes; the residual add brings fc2's back with `2^-D`.
///
/// `D` trades the weights' code range against the outputs' f16 range: the
/// partials overflow f16 where `|true| >= 65504 * 2^-D`, and weights below
/// `2^-7 * 2^-D` (the format's smallest normal) lose bits.
/// [`Fp8Domains::from_scales`] keeps the largest weight code at most 15
/// (4 binades below the format's top, 240): weights lose bits only where
/// they are below `2^-11` of the largest, and with weights of a trained
/// layer (largest around 0.1) outputs up to a few hundred fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fp8Domains {
    /// fc1's `D`.
    pub fc1: i32,
    /// fc2's `D`.
    pub fc2: i32,
}

/// The largest relative L2 error an FP8 block is allowed against float64
/// with the same FP8 roundings ([`reference_rows`]), where f16 blocks are
/// held to 1e-2. The f16 arithmetic before each rounding to FP8
/// (LayerNorm's, fc1's f16 partials, GELU's) differs from float64 by about
/// 1e-3 relative, which moves about 2 % of the values across an FP8
/// rounding boundary, each by a whole FP8 step (6–12 %): the random blocks
/// of the tests and `ipu-bench mlp`, whose MLP output is as large as the
/// residual, measure 1.5e-2 to 1.7e-2.
pub const FP8_MAX_REL_L2: f64 = 3e-2;

/// Binades between the format's largest value and the largest weight code
/// of [`Fp8Domains::from_scales`].
pub const FP8_WEIGHT_HEADROOM: i32 = 4;

impl Fp8Domains {
    /// The domains for weights whose per-tensor FP8 scales (the IR's
    /// `rhs_scale`: the smallest `s` with `max|w| * 2^-s <= 240`) are
    /// `s1` and `s2`.
    pub fn from_scales(s1: i32, s2: i32) -> Self {
        Fp8Domains {
            fc1: -s1 - FP8_WEIGHT_HEADROOM,
            fc2: -s2 - FP8_WEIGHT_HEADROOM,
        }
    }
}

impl MlpShape {
    /// The products' AMP instruction.
    pub fn variant(&self) -> AmpVariant {
        if self.fp8.is_some() {
            AmpVariant::F8
        } else {
            AmpVariant::F16
        }
    }

    /// The MLP's inner size as the products hold it: FP8 pads it to whole
    /// 32-channel panels of fc2 (two of fc1's 16-channel output groups
    /// each), with zero weights and bias.
    pub fn h_padded(&self) -> u32 {
        match self.fp8 {
            Some(_) => self.h.next_multiple_of(32),
            None => self.h,
        }
    }

    /// Bytes of one row of LayerNorm's output (f16, or FP8 codes).
    pub fn ln_row_bytes(&self) -> u32 {
        self.c * self.variant().input_elem().size() as u32
    }

    /// Bytes an LN tile's LayerNorm output takes ([`LN_ROWS`] rows and
    /// the read-past word, in 16-byte words).
    pub fn ln_out_bytes(&self) -> u32 {
        (LN_ROWS * self.ln_row_bytes() + 16).next_multiple_of(16)
    }
}

/// The block's constants, row-major.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MlpConstants {
    /// LayerNorm's scale `[c]`.
    pub gamma: Vec<f64>,
    /// LayerNorm's shift `[c]`.
    pub beta: Vec<f64>,
    /// fc1's weights `[c, h]`.
    pub w1: Vec<f64>,
    /// fc1's bias `[h]`.
    pub b1: Vec<f64>,
    /// fc2's weights `[h, c]`.
    pub w2: Vec<f64>,
    /// fc2's bias `[c]` (zeros without one).
    pub b2: Vec<f64>,
}

/// Where the block's tensors live on every tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockLayout {
    /// fc1's tensors.
    pub fc1: TileLayout,
    /// fc2's tensors.
    pub fc2: TileLayout,
    /// x's rows on an LN tile, row-major.
    pub x: u32,
    /// x's copy in 16-channel groups on an LN tile, below its rows
    /// ([`LnTiles::x_groups`]): what the residual's transfers send, a
    /// group's rows at once. FP8 blocks without LayerNorm's scale and
    /// shift (the apply pass that copies for free), where it fits.
    pub x_groups: Option<u32>,
    /// LayerNorm's output rows.
    pub ln_out: u32,
    /// gamma and beta.
    pub gamma: u32,
    /// beta.
    pub beta: u32,
    /// The residual rows an fc2 tile owns, in its final view's layout.
    pub residual: u32,
    /// `view + residual`.
    pub sum: u32,
    /// fc2's bias rows, in the same layout: written beside LayerNorm
    /// from [`Self::bias_src`] ([`fc2_bias_broadcast`]), not kept.
    pub bias: u32,
    /// fc2's bias as a tile keeps it: a 32-byte row (16 columns) per
    /// output group of its column block, in region 0.
    pub bias_src: u32,
    /// Lowest tensor address: sections must end at or below it.
    pub tensors_start: u32,
}

/// The block's plan: its products' plans, the LN tiles and the layout.
#[derive(Clone, Debug)]
pub struct MlpPlan {
    /// The sizes.
    pub shape: MlpShape,
    /// fc1 (with bias and GELU).
    pub fc1: GemmPlan,
    /// fc2 (no epilogue).
    pub fc2: GemmPlan,
    /// The best candidates each product's search rejected, and why (empty
    /// for a grid forced by the caller).
    pub rejected: [Vec<Rejected>; 2],
    /// The LN tiles, one per [`LN_ROWS`] rows.
    pub ln_tiles: Vec<u32>,
    /// Memory.
    pub layout: BlockLayout,
    /// What the block leaves of the memory it was planned in (the next
    /// block's window).
    pub next: Window,
    /// Whether fc1's streamed weights are gathered in the exchange before
    /// the block (a chain's link into it, [`fc1_gather_before`]) instead
    /// of exchange A. A chain sets it; false for a block alone.
    pub fc1_gathered_before: bool,
}

impl MlpPlan {
    /// Every tile the block uses, ascending.
    pub fn tiles(&self) -> Vec<u32> {
        let range = |p: &GemmPlan| p.first_tile..p.first_tile + p.tiles();
        let mut t: Vec<u32> = range(&self.fc1).chain(range(&self.fc2)).collect();
        t.extend(&self.ln_tiles);
        t.sort_unstable();
        t.dedup();
        t
    }

    /// The cycles each tile spends beside LayerNorm (tiles with none left
    /// out): fc1's bias broadcast ([`super::plan::BiasRows::Early`]) and
    /// fc2's ([`fc2_bias_broadcast`]), as the block's estimate counts
    /// them. The link into the block is scheduled with them
    /// ([`super::schedule::schedule_before`]).
    pub fn beside_ln(
        &self,
        machine: &MachineModel,
    ) -> Result<BTreeMap<u32, u64>, crate::codelets::CodeletError> {
        let (fc1, _) = placed(self);
        let first = match fc1.bias_broadcast() {
            Some(b) => b.estimate_cycles()?,
            None => 0,
        };
        let mut beside: BTreeMap<u32, u64> = BTreeMap::new();
        for &t in positions(&self.fc1).keys() {
            beside.insert(t, first);
        }
        for (&t, &(_, j, k)) in &positions(&self.fc2) {
            if let Some(b) = fc2_bias_broadcast(self, j, k) {
                *beside.entry(t).or_default() += launch_cycles(&[b], machine)?;
            }
        }
        beside.retain(|_, c| *c > 0);
        Ok(beside)
    }

    /// The LN tiles.
    pub fn ln(&self) -> LnTiles<'_> {
        let lay = &self.layout;
        LnTiles {
            tiles: &self.ln_tiles,
            rows_per_tile: LN_ROWS,
            m: self.shape.m,
            c: self.shape.c,
            eps: self.shape.eps,
            affine: self.shape.ln_affine,
            x: lay.x,
            ln_out: lay.ln_out,
            gamma: lay.gamma,
            beta: lay.beta,
            output: match self.shape.fp8 {
                Some(_) => LnOutput::F8Codes(0),
                None => LnOutput::F16,
            },
            panels: true,
            x_groups: lay.x_groups,
        }
    }

    /// Where x enters: each row on its LN tile.
    pub fn input_pieces(&self) -> Vec<TensorPiece> {
        self.ln().input_pieces()
    }

    /// Where y is when the block ends: each fc2 tile's owned rows of its
    /// output groups (the residual's buffer, where the last add writes).
    pub fn output_pieces(&self) -> Vec<TensorPiece> {
        let (_, fc2) = placed(self);
        positions(&self.fc2)
            .into_values()
            .flat_map(|(i, j, k)| {
                let res = residual_view(&self.fc2, self.layout.residual, k);
                fc2.output_pieces((i, j, k), res)
            })
            .collect()
    }

    /// The plan report's line on streamed weights ([`super::stream`]):
    /// empty with every weight resident.
    pub fn weights_report(&self) -> String {
        let products = [
            (
                "fc1",
                &self.fc1,
                &self.layout.fc1,
                match self.fc1_gathered_before {
                    true => "the link into the block",
                    false => "exchange A",
                },
            ),
            ("fc2", &self.fc2, &self.layout.fc2, "exchange B"),
        ];
        let streamed: Vec<String> = products
            .iter()
            .filter(|(.., lay, _)| lay.home.is_some())
            .map(|(name, p, _, exchange)| {
                format!("{name}'s {}", super::stream::report(p, false, exchange))
            })
            .collect();
        if streamed.is_empty() {
            String::new()
        } else {
            format!("  weights streamed in: {}\n", streamed.join("; "))
        }
    }

    /// Syncs every tile of the block runs: one before each exchange (the
    /// compute after it follows at a fence) and two per reduction round.
    pub fn syncs(&self) -> u32 {
        2 + SYNCS_PER_ROUND * (self.fc1.grid_k.trailing_zeros() + self.fc2.grid_k.trailing_zeros())
    }
}

/// Plans the block: each product by its own search over the tiles left
/// after the LN tiles, and the layout of [`block_layout`].
pub fn plan_mlp(shape: MlpShape, machine: &MachineModel) -> Result<MlpPlan, String> {
    plan_mlp_with(shape, machine, (None, None))
}

/// [`plan_mlp`], with fc1's and fc2's grids forced where given: the
/// weights resident where they fit, else streamed in
/// ([`super::stream`]).
pub fn plan_mlp_with(
    shape: MlpShape,
    machine: &MachineModel,
    grids: (Option<Grid>, Option<Grid>),
) -> Result<MlpPlan, String> {
    let alone = |weights| {
        plan_mlp_in(
            shape,
            machine,
            grids,
            (0, machine.tiles),
            Window::alone(machine),
            weights,
        )
    };
    alone(Weights::Resident).or_else(|resident| {
        alone(Weights::Streamed)
            .map_err(|streamed| format!("{resident}; with the weights streamed in: {streamed}"))
    })
}

/// [`plan_mlp_with`] on the `count` tiles from `first`, in the memory
/// `window` leaves (a block of a program of several, [`super::window`]),
/// its products' weights kept as `weights` says.
pub fn plan_mlp_in(
    shape: MlpShape,
    whole: &MachineModel,
    (grid1, grid2): (Option<Grid>, Option<Grid>),
    (first, count): (u32, u32),
    window: Window,
    weights: Weights,
) -> Result<MlpPlan, String> {
    let machine = &MachineModel {
        tiles: count,
        ..whole.clone()
    };
    if shape.m == 0 || shape.c == 0 || shape.h == 0 {
        return Err("the block has an empty dimension".into());
    }
    let variant = shape.variant();
    let panel = variant.in_channels() as u32;
    if !shape.c.is_multiple_of(panel) {
        return Err(format!(
            "the hidden size {} is not a multiple of {panel}, which the {} block lowering needs yet (fc1's input panels come whole from LayerNorm's rows)",
            shape.c,
            if shape.fp8.is_some() { "FP8" } else { "f16" }
        ));
    }
    let beside_ln = match weights {
        Weights::Streamed => Some(
            super::ln_tiles::beside_layer_norm_cycles(shape.c, shape.fp8.is_some())
                .map_err(|e| e.to_string())?,
        ),
        Weights::Resident => None,
    };
    let fc1_shape = GemmShape {
        m: shape.m,
        k: shape.c,
        n: shape.h_padded(),
        variant,
        epilogue: Epilogue {
            bias: true,
            // Broadcast beside LayerNorm, where fc1's tiles are idle.
            bias_rows: Some(BiasRows::Early),
            // The block's layout ([`block_layout`]): fc1's result
            // outlives its input (exchange B writes fc2's input over it
            // while it reads fc1's result).
            reduction: ReductionPlace::UnderOutput { keeps_result: true },
            per_row: false,
            gelu: Some(shape.gelu),
            f8_pairs: shape.fp8.map(|d| F8Pairs {
                input_exp: -d.fc1,
                output_scale: 0,
            }),
            // Streamed, a chain gathers fc1's weights in the link into the
            // block, beside LayerNorm (`MlpPlan::fc1_gathered_before`).
            gathered_weights: beside_ln,
            scaled: None,
        },
    };
    let fc2_shape = GemmShape {
        m: shape.m,
        k: shape.h_padded(),
        n: shape.c,
        variant,
        // The block's layout ([`block_layout`]).
        epilogue: Epilogue {
            reduction: ReductionPlace::UnderOutput {
                keeps_result: false,
            },
            gathered_weights: (weights == Weights::Streamed).then_some(0),
            ..Epilogue::default()
        },
    };
    let n_ln = shape.m.div_ceil(LN_ROWS);
    // The LN tiles are the last tiles, outside both products' grids: in
    // exchange A they only send and the products' tiles only receive, so
    // no supervisor both sends and switches its mux (a `send` holds the
    // supervisor, and a multicast waits for its slowest receiver).
    let Some(gemm_tiles) = machine.tiles.checked_sub(n_ln).filter(|&t| t > 0) else {
        return Err(format!(
            "{} rows need {n_ln} LayerNorm tiles, and the products need tiles of their own: the machine has {}",
            shape.m, machine.tiles
        ));
    };
    // The search sees the interleaved memory earlier blocks left, less
    // what the block's layout found missing on an earlier try: the search
    // fits each product alone, the block holds both products' buffers,
    // the LN rows and any streamed weights at once.
    let start = window;
    let mut squeeze = Squeeze::default();
    let mut short: Option<String> = None;
    let room = machine.sram_end - start.base;
    // fc2's search sees the memory earlier blocks left: the layout beside
    // fc1's decides (`beside`).
    let whole_scratch = MachineModel {
        tiles: gemm_tiles,
        ..machine.clone()
    };
    for _ in 0..MAX_SQUEEZES {
        let products = MachineModel {
            tiles: gemm_tiles,
            interleaved_base: start.base + squeeze.bytes,
            ..machine.clone()
        };
        let plan = |name: &str,
                    shape: GemmShape,
                    grid: Option<Grid>,
                    within: &MachineModel,
                    accept: &Accept| {
            match grid {
                Some(g) => evaluate(shape, g, within)
                    .map_err(|r| r.reason)
                    .and_then(|p| accept(&p).map(|()| (p, Vec::new())).map_err(|(_, e)| e))
                    .map_err(|reason| {
                        format!(
                            "{name}: grid {g}: {reason} (the block's products share the first {gemm_tiles} tiles)"
                        )
                    }),
                None => plan_gemm_where(shape, within, accept)
                    .map(|c| (c.plan, c.rejected))
                    .map_err(|e| format!("{name}: {e}")),
            }
        };
        // fc1 alone, then fc2 among the grids whose layout beside fc1's
        // fits the block (each search alone would pick each product's
        // fastest grid, and the two together may not fit).
        let searched = plan("fc1", fc1_shape, grid1, &products, &|_| Ok(()))
            .map_err(|e| (1, e))
            .and_then(|p1| {
                // A grid whose rows the add columns lack is the closest
                // only where every grid is refused so: the chain then
                // widens the columns' room for rows (region 0 a loop's
                // archive would hold), else memory is what is short.
                let beside = |p2: &GemmPlan| {
                    let mut w = start;
                    block_layout(shape, (&p1.0, p2, weights), machine, &mut w)
                        .map(|_| ())
                        .map_err(|(e, missing)| {
                            let columns = e.starts_with(ROWS_FULL) || e.starts_with(ADDS_FULL);
                            (if columns { u32::MAX } else { missing }, e)
                        })
                };
                plan("fc2", fc2_shape, grid2, &whole_scratch, &beside)
                    .map(|p2| (p1, p2))
                    .map_err(|e| (2, e))
            });
        let ((fc1, rejected1), (fc2, rejected2)) = match searched {
            Ok(found) => found,
            // fc1 has no grid after a squeeze: searched again with less
            // taken away; where that cannot be, the layout's reason
            // stands.
            Err((1, e)) => match short.take() {
                Some(layout_error) if squeeze.back_off() => {
                    tracing::debug!(
                        target: "ipu-lower",
                        "MLP block: no plan after the squeeze ({e}): searching again with {} bytes less memory",
                        squeeze.bytes
                    );
                    short = Some(layout_error);
                    continue;
                }
                Some(layout_error) => return Err(layout_error),
                None => return Err(e),
            },
            // fc2 fits no grid beside fc1's: fc1 searched again with less
            // memory.
            Err((_, e)) if grid1.is_none() && squeeze.grow(1, room) => {
                tracing::debug!(
                    target: "ipu-lower",
                    "MLP block: {e}: searching fc1 again with {} bytes less memory",
                    squeeze.bytes
                );
                short = Some(e);
                continue;
            }
            Err((_, e)) => return Err(e),
        };
        squeeze.found();
        // Products small enough to sit side by side do: each tile keeps
        // one product's weights ([`block_layout`]).
        let fc2_first = if fc1.tiles() + fc2.tiles() <= gemm_tiles {
            first + fc1.tiles()
        } else {
            first
        };
        let (fc1, fc2) = (fc1.placed_at(first), fc2.placed_at(fc2_first));
        let mut w = start;
        match block_layout(shape, (&fc1, &fc2, weights), machine, &mut w) {
            Ok(layout) => {
                return Ok(MlpPlan {
                    shape,
                    fc1,
                    fc2,
                    rejected: [rejected1, rejected2],
                    ln_tiles: (first + gemm_tiles..first + machine.tiles).collect(),
                    layout,
                    next: w.after_block(),
                    fc1_gathered_before: false,
                })
            }
            Err((e, missing))
                if missing > 0
                    && (grid1.is_none() || grid2.is_none())
                    && squeeze.grow(missing, room) =>
            {
                tracing::debug!(
                    target: "ipu-lower",
                    "MLP block short of {missing} bytes: searching the products again with {} bytes less memory",
                    squeeze.bytes
                );
                short = Some(e);
            }
            Err((e, _)) => return Err(e),
        }
    }
    Err(short.unwrap_or_default())
}

/// Lays out the block's tensors in `window` ([`super::window`]): the
/// weights (streamed: their homes, [`super::stream`]) private; the
/// products' buffers, streamed weights, LayerNorm's output and x's rows
/// on the LN tiles (written by the host or the exchange before the block)
/// shared scratch from the top; the residual, sum and fc2's bias rows in
/// the add columns; the vertex states, gamma, beta, fc1's bias rows
/// (broadcast into its initial partials beside LayerNorm,
/// [`BiasRows::Early`]) and fc2's bias (a row per output group, broadcast
/// over the owned rows beside LayerNorm, [`fc2_bias_broadcast`]) private
/// in region 0.
pub fn block_layout(
    shape: MlpShape,
    (fc1_plan, fc2_plan, weights): (&GemmPlan, &GemmPlan, Weights),
    machine: &MachineModel,
    window: &mut Window,
) -> Result<BlockLayout, (String, u32)> {
    let (fc1, fc2) = (fc1_plan, fc2_plan);
    let (v1, v2) = (fc1.vertex(), fc2.vertex());
    let private_start = window.base;
    // Each product's weights, or with them streamed its home piece, and
    // fc1's bias (a block of initial partials, or rows it broadcasts);
    // where the products' tiles are disjoint ([`plan_mlp_in`]), fc2's at
    // the same addresses as fc1's.
    let w1 = window.private(weights.kept_bytes(fc1, false));
    let bias1 = (v1.bias_bytes() > 0).then(|| window.private(v1.bias_bytes() as u32));
    let kept2 = weights.kept_bytes(fc2, false);
    let w2 = if disjoint(fc1, fc2) {
        window.base = window.base.max(w1 + kept2);
        w1
    } else {
        window.private(kept2)
    };
    let row_bytes = shape.c * 2;
    let ln_bytes = (LN_ROWS * row_bytes + 16).next_multiple_of(16);
    let private_end = window.base;
    let top = machine.sram_end;
    // The LN tiles (they run no product: the two sets of tiles are
    // disjoint, [`plan_mlp_in`]): LayerNorm's output rows at the top of
    // scratch, x's rows in the element pair below (LayerNorm reads one and
    // writes the other). The link before the block writes x's rows after
    // the block before it ran; exchange A reads both.
    let ln_out = (top - shape.ln_out_bytes()) & !15;
    let pair = 2 * machine.element_bytes;
    let x = (ln_out / pair * pair - ln_bytes) & !15;
    // x's copy in groups right below its rows, in the scratch the LN tiles
    // leave (they run no product); LayerNorm writes it, exchange A reads
    // it. Where it does not fit above private memory, x's rows are sent.
    let copies = shape.fp8.is_some() && !shape.ln_affine;
    let x_groups = LnTiles::x_groups_below(x, shape.c, copies, window.scratch_floor());
    // Region 0: the add columns, then the states, gamma and beta.
    let span = owned_rows_bytes(fc2_plan);
    let [residual, sum, bias] = window.adds(span, 3, machine).map_err(|e| (e, 0))?[..] else {
        unreachable!("three columns asked for")
    };
    let states1 = window.region0_beside_rows(v1.state_bytes() as u32);
    let states2 = window.region0_beside_rows(v2.state_bytes() as u32);
    let vec_bytes = (row_bytes + 8).next_multiple_of(8);
    let gamma = window.region0_beside_rows(vec_bytes);
    let beta = window.region0_beside_rows(vec_bytes);
    let bias_rows1 = v1.bias_in_output.then(|| window.region0(v1.n_groups * 32));
    let bias_src = window.region0(v2.n_groups * 32);
    let tensors_start = window.region0;
    // The products' buffers from the top ([`ReductionPlace::UnderOutput`]):
    // Y at the top (fc1's, then fc2's over it: exchange B has read fc1's
    // result by then), the streamed weights right below it (fc1's in
    // exchange A, fc2's over them in exchange B: fc1's vertex has read
    // fc1's), the inputs below both (fc1's, then fc2's over it, out of
    // Y's pairs), each product's reduction buffers below Y's pairs over
    // its input and weights, fc1's first result below fc2's input where
    // fc1's result ends there. LayerNorm's output rows lie at the top of
    // the LN tiles, which run no product.
    let gathered = |p: &GemmPlan, v: &TileGemm| {
        if weights.streams(p) {
            v.weight_bytes()
        } else {
            0
        }
    };
    let under = UnderOutput::of(
        &[
            UnderOutputProduct {
                vertex: &v1,
                grid_k: fc1.grid_k,
                weights: gathered(fc1, &v1),
                keeps_result: true,
            },
            UnderOutputProduct {
                vertex: &v2,
                grid_k: fc2.grid_k,
                weights: gathered(fc2, &v2),
                keeps_result: false,
            },
        ],
        machine,
    );
    let Some(bottom) = u64::from(top)
        .checked_sub(under.bottom)
        .map(|b| b.min(u64::from(x)))
        .filter(|&b| b >= u64::from(window.scratch_floor()))
    else {
        let gathers = under.weights.iter().any(|&w| w > under.output);
        let streamed = if gathers {
            " (the weights streamed in among them)".to_string()
        } else {
            String::new()
        };
        let total = u64::from(window.scratch_floor() - machine.interleaved_base) + under.bottom;
        let available = u64::from(top - machine.interleaved_base);
        let missing = u32::try_from(total.saturating_sub(available)).unwrap_or(u32::MAX);
        return Err((format!(
            "the block does not fit a tile's interleaved memory: fc1 and fc2 need {} bytes for their {}, bias and input rows (above {} bytes earlier blocks keep), {} for their outputs, inputs and reductions{streamed}, {total} in all, against {available}{}",
            private_end - private_start,
            if gathers { "weights' home pieces" } else { "weights" },
            private_start - machine.interleaved_base,
            under.bottom,
            window.floor_note()
        ), missing.max(1)));
    };
    // Every offset is at most `under.bottom`, which fits below the top.
    let at = |below: u64| top - below as u32;
    // A product's weights: streamed into the layout from its home, else
    // kept.
    let placed_weights = |n: usize, p: &GemmPlan, kept: u32| {
        if weights.streams(p) {
            (at(under.weights[n]), Some(kept))
        } else {
            (kept, None)
        }
    };
    let ((w1, home1), (w2, home2)) = (placed_weights(0, fc1, w1), placed_weights(1, fc2, w2));
    let output = at(under.output);
    let reduction =
        |n: usize| under.reduction[n].map(|[recv, first]| [at(recv), at(first), output]);
    let fc1 = TileLayout {
        weights: w1,
        home: home1,
        states: states1,
        input: at(under.input[0]),
        output,
        codes: None,
        bias: bias1,
        bias_rows: bias_rows1,
        reduction: reduction(0),
        tensors_start: 0,
    };
    // fc2's bias is added with the residual (no bias block of its own).
    let fc2 = TileLayout {
        weights: w2,
        home: home2,
        states: states2,
        input: at(under.input[1]),
        output,
        codes: None,
        bias: None,
        bias_rows: None,
        reduction: reduction(1),
        tensors_start: 0,
    };
    window.use_scratch(x_groups.map_or(bottom as u32, |at| at.min(bottom as u32)));
    Ok(BlockLayout {
        fc1: TileLayout {
            tensors_start,
            ..fc1
        },
        fc2: TileLayout {
            tensors_start,
            ..fc2
        },
        x,
        x_groups,
        ln_out,
        gamma,
        beta,
        residual,
        sum,
        bias,
        bias_src,
        tensors_start,
    })
}

/// Whether two products' tiles are disjoint.
fn disjoint(a: &GemmPlan, b: &GemmPlan) -> bool {
    a.first_tile + a.tiles() <= b.first_tile || b.first_tile + b.tiles() <= a.first_tile
}

/// Emits elementwise f16 steps over the rows `(lo, hi)` a product's tile
/// owns of its `groups` output groups, `view` being where its product left
/// them: each `(op, x, y, out)` of `steps` computes `out = op(x, y)` (views
/// of the same rows), in order. One launch covers every group where
/// `view`'s groups are contiguous (after a reduction, as the residual's
/// are), one per group otherwise; each is called as subroutine
/// `name(step, launch)`. Returns each step's first launch (for estimates).
pub(super) fn emit_owned_adds(
    e: &mut Emitter,
    calls: &mut Calls,
    (view, (lo, hi), groups): (View, (u32, u32), u32),
    steps: &[(BinaryOp, View, View, View)],
    name: &dyn Fn(usize, u32) -> String,
) -> Vec<Binary> {
    if hi <= lo {
        return Vec::new();
    }
    let (launches, rows) = if view.groups_contiguous(hi - lo) {
        (1, (hi - lo) * groups)
    } else {
        (groups, hi - lo)
    };
    let mut firsts = Vec::new();
    for g in 0..launches {
        for (n, &(op, x, y, out)) in steps.iter().enumerate() {
            let add = Binary {
                op,
                ty: VecType::F16,
                len: rows * 16,
                x: x.at(g, lo),
                y: y.at(g, lo),
                out: out.at(g, lo),
            };
            if g == 0 {
                firsts.push(add.clone());
            }
            let name = name(n, g);
            emit_call(e, &name);
            calls.push((name, Box::new(add)));
        }
    }
    firsts
}

/// The most rows a tile of `plan` owns after its reduction.
pub fn owned_rows_max(plan: &GemmPlan) -> u32 {
    (0..plan.grid_k)
        .map(|k| reduce::len(reduce::owned(k, plan.grid_k, plan.rows)))
        .max()
        .unwrap_or(0)
}

/// The bytes of the rows a product's tile owns after its reduction, as
/// the owned adds read and write them (eight past the last row: the
/// adds' pipelined loads read ahead).
pub fn owned_rows_bytes(plan: &GemmPlan) -> u32 {
    owned_rows_max(plan) * plan.vertex().n_groups * 32 + 8
}

/// Tile → grid position of a product's tiles.
pub(super) fn positions(plan: &GemmPlan) -> BTreeMap<u32, (u32, u32, u32)> {
    let mut out = BTreeMap::new();
    for i in 0..plan.grid_rows {
        for j in 0..plan.grid_cols {
            for k in 0..plan.grid_k {
                out.insert(plan.tile(i, j, k), (i, j, k));
            }
        }
    }
    out
}

/// The products placed at the block's layout.
pub fn placed(plan: &MlpPlan) -> (PlacedGemm, PlacedGemm) {
    (
        PlacedGemm::new(&plan.fc1, plan.layout.fc1, "fc1"),
        PlacedGemm::new(&plan.fc2, plan.layout.fc2, "fc2"),
    )
}

/// The block's estimated cycles, superstep by superstep.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct BlockEstimate {
    /// LayerNorm on the LN tiles.
    pub layer_norm: u64,
    /// Exchange A (scheduled).
    pub exchange_a: u64,
    /// fc1's vertex, its K split's rounds (exchanges and adds) and GELU.
    pub fc1: u64,
    /// Exchange B (scheduled).
    pub exchange_b: u64,
    /// fc2's vertex, its K split's rounds (exchanges and adds), the residual
    /// and bias adds.
    pub fc2: u64,
    /// The syncs between the steps.
    pub sync: u64,
}

impl BlockEstimate {
    /// All of it.
    pub fn total(&self) -> u64 {
        self.layer_norm + self.exchange_a + self.fc1 + self.exchange_b + self.fc2 + self.sync
    }
}

impl std::fmt::Display for BlockEstimate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} cycles (layer norm {}, exchange A {}, fc1 {}, exchange B {}, fc2 {}, sync {})",
            self.total(),
            self.layer_norm,
            self.exchange_a,
            self.fc1,
            self.exchange_b,
            self.fc2,
            self.sync
        )
    }
}

/// The lowered block: its executable op and estimate.
#[derive(Clone, Debug)]
pub struct LoweredMlp {
    /// The `ipu.executable`.
    pub executable: OpId,
    /// Estimated cycles.
    pub estimate: BlockEstimate,
    /// The most bytes of exchange code (the two scheduled exchanges and the
    /// reductions' rounds) on a tile.
    pub exchange_code_bytes_max: u64,
}

/// Builds the block's `ipu.executable` (see the module doc), appended to
/// `block`; the host tensors get types `x_ty` and `y_ty`.
#[allow(clippy::too_many_arguments)]
pub fn emit_mlp(
    ctx: &mut Context,
    block: BlockId,
    plan: &MlpPlan,
    constants: &MlpConstants,
    (x_ty, y_ty): (Type, Type),
    machine: &MachineModel,
    loc: Location,
) -> Result<LoweredMlp, Diagnostic> {
    emit_standalone(
        ctx,
        block,
        machine,
        &loc.clone(),
        [(x_ty, plan.input_pieces()), (y_ty, plan.output_pieces())],
        |ctx, frame| emit_mlp_in(ctx, frame, plan, constants, machine, loc),
    )
}

/// [`emit_mlp`] into `frame`'s executable, without host tensors (the
/// block's input and output are [`MlpPlan::input_pieces`] and
/// [`MlpPlan::output_pieces`]).
pub fn emit_mlp_in(
    ctx: &mut Context,
    frame: &Frame<'_>,
    plan: &MlpPlan,
    constants: &MlpConstants,
    machine: &MachineModel,
    loc: Location,
) -> Result<LoweredMlp, Diagnostic> {
    let shape = plan.shape;
    let lay = plan.layout;
    let (fc1, fc2) = placed(plan);
    let (p1, p2) = (&plan.fc1, &plan.fc2);
    let fail = |err: crate::codelets::CodeletError| Diagnostic::error(loc.clone(), err.to_string());
    let tiles = plan.tiles();
    let (a, b, _) = schedules(plan, machine);
    let (at1, at2) = (positions(p1), positions(p2));
    let ln = plan.ln();
    let ln_of = ln.index();
    let rounds = |p: &GemmPlan| p.grid_k.trailing_zeros();
    let (exe, exe_body) = (frame.executable, frame.exe_body);
    let sync = |e: &mut Emitter| e.solo(inst("sync", [op::sym("TEXCH_SYNCZONE_INTERNAL")]));
    let mut adds = [0u64; 2];
    let mut exchange_code_bytes_max = 0;
    let beside = plan.beside_ln(machine).map_err(fail)?;
    let beside_ln = beside.values().copied().max().unwrap_or(0);
    let mut memo = InstanceMemo::new();
    for &t in &tiles {
        let mut e = frame.open_tile(ctx, t, &loc);
        let mut xcode = 0;
        let mut calls = Calls::new();
        ln.emit_call(&mut e, ln_of.get(&t).copied(), &mut calls);
        let mut emitted = 0;
        if at1.contains_key(&t) {
            emitted += fc1.emit_bias_broadcast(&mut e, &mut calls).map_err(fail)?;
        }
        if let Some(b) = at2
            .get(&t)
            .and_then(|&(_, j, k)| fc2_bias_broadcast(plan, j, k))
        {
            emitted += emit_launches(&mut e, &mut calls, "fc2_bias_broadcast", &[b], machine)
                .map_err(fail)?;
        }
        debug_assert_eq!(emitted, beside.get(&t).copied().unwrap_or(0));
        // Each exchange's schedule ends a receiver's code after its last
        // word (the mux closes after it): the launches after it need no
        // sync (a fence, see the simulator's module doc).
        sync(&mut e);
        xcode += a.emit(&mut e, machine, (t, "a"), Some(&mut calls));
        match at1.get(&t) {
            Some(&pos) => {
                xcode += fc1
                    .emit_compute(&mut e, pos, machine, &mut calls)
                    .map_err(fail)?
                    .1;
            }
            None => (0..rounds(p1) * SYNCS_PER_ROUND).for_each(|_| sync(&mut e)),
        }
        sync(&mut e);
        xcode += b.emit(&mut e, machine, (t, "b"), Some(&mut calls));
        match at2.get(&t) {
            Some(&(i, j, k)) => {
                let (view, rounds_bytes) = fc2
                    .emit_compute(&mut e, (i, j, k), machine, &mut calls)
                    .map_err(fail)?;
                xcode += rounds_bytes;
                let (lo, hi) = reduce::owned(k, p2.grid_k, p2.rows);
                let [res, sum, bias] =
                    [lay.residual, lay.sum, lay.bias].map(|base| residual_view(p2, base, k));
                // FP8: fc2's output is unscaled (see `Fp8Domains`).
                let first = match shape.fp8 {
                    Some(d) => BinaryOp::ScaledAdd(-d.fc2),
                    None => BinaryOp::Add,
                };
                let firsts = emit_owned_adds(
                    &mut e,
                    &mut calls,
                    (view, (lo, hi), p2.groups_of(j)),
                    &[(first, view, res, sum), (BinaryOp::Add, sum, bias, res)],
                    &|n, g| format!("out{n}_{g}"),
                );
                for (n, add) in firsts.iter().enumerate() {
                    if t == 0 || adds[n] == 0 {
                        adds[n] = adds[n].max(add.estimate_cycles().map_err(fail)?);
                    }
                }
            }
            None => (0..rounds(p2) * SYNCS_PER_ROUND).for_each(|_| sync(&mut e)),
        }
        xcode += frame.close_tile(&mut e, t, &mut calls);
        exchange_code_bytes_max = exchange_code_bytes_max.max(xcode);
        frame.count_exchange(t, xcode);
        if at1.contains_key(&t) {
            fc1.emit_worker_code(&mut e);
        }
        if at2.contains_key(&t) {
            fc2.emit_worker_code(&mut e);
        }
        emit_calls(&mut e, &calls, &mut memo).map_err(fail)?;
    }
    memo.finish(ctx);
    emit_mlp_constants(ctx, exe_body, plan, constants, &loc);
    let sync_cycles = u64::from(machine.sync_latency);
    let estimate = BlockEstimate {
        layer_norm: ln.estimate(machine).map_err(fail)?.max(beside_ln),
        exchange_a: a.cycles,
        fc1: p1.estimate.compute
            + p1.estimate.rounds_exchange
            + p1.estimate.reduction
            + p1.estimate.epilogue,
        exchange_b: b.cycles,
        fc2: p2.estimate.compute
            + p2.estimate.rounds_exchange
            + p2.estimate.reduction
            + adds[0]
            + adds[1],
        // Every superstep's sync: the block's two and two per reduction
        // round of either product.
        sync: u64::from(plan.syncs()) * sync_cycles,
    };
    Ok(LoweredMlp {
        executable: exe,
        estimate,
        exchange_code_bytes_max,
    })
}

/// The block's constants (weights, bias blocks and rows, the
/// LayerNorm's scale and shift, the vertex states) as `constant` tensors
/// appended to `exe_body`: what [`emit_mlp_in`] loads with the program,
/// and what a loop over identical layers archives for each later layer
/// ([`super::chain_loop`]).
pub fn emit_mlp_constants(
    ctx: &mut Context,
    exe_body: BlockId,
    plan: &MlpPlan,
    constants: &MlpConstants,
    loc: &Location,
) {
    let (shape, lay) = (plan.shape, plan.layout);
    let (fc1, fc2) = placed(plan);
    let p2 = &plan.fc2;
    let ln = plan.ln();
    let loc = loc.clone();
    let held = ProductConstants::of(shape, constants);
    fc1.emit_constants(
        ctx,
        exe_body,
        Constants {
            weights: &held.w1,
            bias: Some(&held.b1),
        },
        &loc,
    );
    fc2.emit_constants(
        ctx,
        exe_body,
        Constants {
            weights: &held.w2,
            bias: None,
        },
        &loc,
    );
    ln.emit_constants(ctx, exe_body, (&constants.gamma, &constants.beta), &loc);
    let half_ty = Type::float(FloatKind::F16);
    // fc2's bias: column block j's, a row per output group, on every
    // tile that owns rows of it ([`fc2_bias_broadcast`] writes the rows).
    for j in 0..p2.grid_cols {
        let values: Vec<f64> = (0..p2.groups_of(j) * 16)
            .map(|c| {
                let col = (j * p2.groups * 16 + c) as usize;
                constants.b2.get(col).copied().unwrap_or(0.0)
            })
            .collect();
        let tiles: Vec<u32> = (0..p2.grid_k)
            .filter(|&k| fc2_bias_broadcast(plan, j, k).is_some())
            .flat_map(|k| (0..p2.grid_rows).map(move |i| p2.tile(i, j, k)))
            .collect();
        if tiles.is_empty() {
            continue;
        }
        let t = replicated_constant(
            ctx,
            &format!("fc2_bias_col{j}"),
            (half_ty.clone(), 2, 8),
            encode_f16(&values),
            (&tiles, lay.bias_src),
            loc.clone(),
        );
        ctx.append_op(exe_body, t);
    }
}

/// fc2's bias rows on the tiles of column block `j`, K part `k`: the
/// tile's row of each output group ([`BlockLayout::bias_src`]) over the
/// rows it owns, in the bias column's layout (group after group, a
/// 32-byte row each), before the residual add reads them. Kept as rows,
/// fc2's bias would take a row per owned row of each group (about 1.5 KB
/// a tile on so400m, copied into every later layer's loop archive); the
/// broadcast runs beside LayerNorm, where fc2's tiles are idle. `None`
/// where the tile owns no rows.
pub fn fc2_bias_broadcast(plan: &MlpPlan, j: u32, k: u32) -> Option<RowBroadcast> {
    let p2 = &plan.fc2;
    let (lo, hi) = reduce::owned(k, p2.grid_k, p2.rows);
    (hi > lo).then(|| RowBroadcast {
        groups: p2.groups_of(j),
        rows: hi - lo,
        src: plan.layout.bias_src,
        dst: plan.layout.bias,
        group_stride: (hi - lo) * 32,
    })
}

/// The products' constants as their tiles hold them: f16 as given
/// (borrowed); FP8 in each product's unscaled domain (times `2^D`, see
/// [`Fp8Domains`]), the inner size padded to [`MlpShape::h_padded`] with
/// zeros.
struct ProductConstants<'a> {
    w1: Cow<'a, [f64]>,
    b1: Cow<'a, [f64]>,
    w2: Cow<'a, [f64]>,
}

impl<'a> ProductConstants<'a> {
    fn of(shape: MlpShape, k: &'a MlpConstants) -> Self {
        let Some(d) = shape.fp8 else {
            return ProductConstants {
                w1: Cow::Borrowed(&k.w1),
                b1: Cow::Borrowed(&k.b1),
                w2: Cow::Borrowed(&k.w2),
            };
        };
        let (c, h, hp) = (
            shape.c as usize,
            shape.h as usize,
            shape.h_padded() as usize,
        );
        let (s1, s2) = (2f64.powi(d.fc1), 2f64.powi(d.fc2));
        let mut w1 = vec![0.0; c * hp];
        for (row, src) in w1.chunks_exact_mut(hp).zip(k.w1.chunks_exact(h)) {
            row[..h].iter_mut().zip(src).for_each(|(o, w)| *o = w * s1);
        }
        let mut b1 = vec![0.0; hp];
        b1[..h].iter_mut().zip(&k.b1).for_each(|(o, b)| *o = b * s1);
        let mut w2 = vec![0.0; hp * c];
        w2[..h * c]
            .iter_mut()
            .zip(&k.w2)
            .for_each(|(o, w)| *o = w * s2);
        ProductConstants {
            w1: Cow::Owned(w1),
            b1: Cow::Owned(b1),
            w2: Cow::Owned(w2),
        }
    }
}

/// f16 bytes of `values`, little-endian.
pub(super) fn encode_f16(values: &[f64]) -> Vec<u8> {
    values
        .iter()
        .flat_map(|&v| half::f16::from_f64(v).to_bits().to_le_bytes())
        .collect()
}

/// The block in float64 for rows `rows` of `x` (`[m, c]`, f16 values):
/// what a lowered block is checked against. FP8 blocks quantize
/// LayerNorm's and GELU's outputs to FP8 codes (scale 0) as the IR's casts
/// do; their weights are taken as given (FP8 values already).
pub fn reference_rows(shape: MlpShape, x: &[f64], k: &MlpConstants, rows: &[usize]) -> Vec<f64> {
    let (c, h) = (shape.c as usize, shape.h as usize);
    let quantize = |v: f64| match shape.fp8 {
        Some(_) => f8_to_f64(f64_to_f8(v)),
        None => v,
    };
    let mut y = Vec::with_capacity(rows.len() * c);
    for &r in rows {
        let row = &x[r * c..(r + 1) * c];
        let ln: Vec<f64> = super::ln_tiles::layer_norm_reference(row, &k.gamma, &k.beta, shape.eps)
            .into_iter()
            .map(quantize)
            .collect();
        let mut hidden: Vec<f64> = k.b1.to_vec();
        for (i, &a) in ln.iter().enumerate() {
            for (o, w) in hidden.iter_mut().zip(&k.w1[i * h..(i + 1) * h]) {
                *o += a * w;
            }
        }
        for z in &mut hidden {
            *z = match shape.gelu {
                GeluForm::Tanh => {
                    let u = (2.0 / std::f64::consts::PI).sqrt() * (*z + 0.044715 * z.powi(3));
                    0.5 * *z * (1.0 + u.tanh())
                }
                GeluForm::Erf => 0.5 * *z * (1.0 + libm::erf(*z / std::f64::consts::SQRT_2)),
            };
            *z = quantize(*z);
        }
        let mut out: Vec<f64> = (0..c).map(|i| row[i] + k.b2[i]).collect();
        for (j, &a) in hidden.iter().enumerate() {
            for (o, w) in out.iter_mut().zip(&k.w2[j * c..(j + 1) * c]) {
                *o += a * w;
            }
        }
        y.extend(out);
    }
    y
}
