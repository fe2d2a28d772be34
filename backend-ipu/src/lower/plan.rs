//! Planning a matrix product `Y[M, N] = X[M, K] · W[K, N]` over the tiles:
//! which tiles compute which block of Y, found by search over the cost
//! model (the GEMM vertex's estimate from its emitted code, the exchange
//! at the machine's bytes per cycle, the syncs), under the tile-memory
//! constraint.
//!
//! The plan is a grid of `grid_rows × grid_cols × grid_k` tiles: tile
//! (i, j, k) computes rows `i·rows ..` and output groups `j·groups ..` of
//! Y over input panels `k·k_panels ..` of K. Each (i, k) X block enters on
//! tile (i, 0, k) and is broadcast to the tiles (i, j, k) (one multicast
//! per block); each tile keeps the weight panels of its (K part, column
//! block). With a K split (`grid_k` a power of two) the `grid_k` tiles of
//! an output block sum their partials by recursive halving
//! ([`super::reduce`]), after which each owns some of the block's rows.
//!
//! The search is exhaustive over the grid shapes (at most a few thousand
//! for 1472 tiles): cost = exchange + compute + syncs, ties broken by fewer
//! tiles; the best rejected candidates and why they lost are kept for the
//! plan report.

use std::fmt;

use ipuc_ipu_arch::MachineModel;

use super::bias_broadcast::{BiasBroadcast, BiasCounts};
use super::exchange::{arm_insts, first_send_cycle, received_by, send_insts, ARM_ISSUES};
use super::reduce::SYNCS_PER_ROUND;
use crate::codelets::amp::{AmpBlock, AmpVariant, Elem};
use crate::codelets::elementwise::{Binary, BinaryOp, VecType};
use crate::codelets::fill::Fill;
use crate::codelets::gelu::{Gelu, GeluForm};
use crate::codelets::gelu_f8::{GeluF8, GeluF8Counts};
use crate::codelets::gemm::{GemmCounts, TileGemm};
use crate::codelets::launch::{split, StreamCounts};
use crate::codelets::program::Codelet;
use crate::codelets::scale::ScaleF16;
use crate::codelets::subroutine::call_cycles;

/// What a product's tiles do to Y after the product, in place: a bias
/// added along N (the product's initial partials, free), then GELU on
/// every output group (f16 output), or on pairs of output groups into FP8
/// panels ([`F8Pairs`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Epilogue {
    /// Y starts from a bias row.
    pub bias: bool,
    /// The bias is one row per output group, which each tile broadcasts
    /// into its output groups' second halves ([`super::bias_broadcast`];
    /// [`TileGemm::bias_in_output`]) instead of keeping a block of
    /// initial partials in memory: 32 bytes an output group instead of 32
    /// a row, for the broadcast's cycles (about one a row of each group).
    /// Only for a bias that is the same on every row (`bias`); `None`
    /// keeps the block.
    pub bias_rows: Option<BiasRows>,
    /// The bias is a value per row of Y (along M), the same along N: its
    /// broadcast splats each row's value over the row in every output
    /// group ([`super::bias_broadcast`]; only with `bias_rows`). Else a
    /// value per column.
    pub per_row: bool,
    /// GELU on Y.
    pub gelu: Option<GeluForm>,
    /// The GELU writes FP8 codes, two output groups per 32-byte row (the
    /// next FP8 product's input panels, [`GeluF8`]); the plan's tiles then
    /// hold whole pairs of groups.
    pub f8_pairs: Option<F8Pairs>,
    /// Where the block lays the K split's reduction buffers
    /// ([`tile_bytes`]).
    pub reduction: ReductionPlace,
    /// The weights are streamed ([`super::stream`]): each tile keeps
    /// `1/rows` of its column block's weights and gathers the rest from
    /// the grid column's other tiles before the product, `(rows - 1) /
    /// rows` of its weights across its port, which the search charges
    /// with the input's broadcast (a grid with fewer rows gathers less)
    /// beyond the cycles given here: those of a gather beside other work
    /// (a chain's link into the block, beside LayerNorm,
    /// [`super::ln_tiles::beside_layer_norm_cycles`]) that cost nothing.
    pub gathered_weights: Option<u32>,
    /// Output columns the tiles multiply by a constant once Y is summed
    /// (after the K split's reduction, on the rows each tile owns),
    /// where the product cannot take it into its weights. Not with GELU
    /// (the scaling follows the GELU's launches).
    pub scaled: Option<ScaledColumns>,
}

/// Output columns `0..cols` of a product multiplied by a constant on its
/// tiles ([`ScaleF16`], which takes the constant as an f16 mantissa and a
/// power of two): the attention's FP8 Q, whose softmax scale and
/// `2^-2D` (its codes' domain and K's) lie below f16's normal range and
/// are applied once on qk's tiles instead of on each of the attention
/// tiles that receive the same rows of Q.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScaledColumns {
    /// The constant, as f32 bits.
    pub scale_bits: u32,
    /// Columns, a multiple of the output groups' width.
    pub cols: u32,
}

impl ScaledColumns {
    /// The constant.
    pub fn scale(&self) -> f32 {
        f32::from_bits(self.scale_bits)
    }

    /// The launches that scale `groups` output groups from global group
    /// `first_group` on, `rows` rows each, of a tile whose group `g` row
    /// `r` lies at `at(g, r)` with `lo` its first owned row: those groups
    /// below `cols` (a prefix), in one launch where they are contiguous
    /// (`contiguous`), one per group otherwise.
    pub fn launches(
        &self,
        (first_group, groups, width): (u32, u32, u32),
        rows: u32,
        contiguous: bool,
        at: impl Fn(u32) -> u32,
    ) -> Vec<ScaleF16> {
        let n = (0..groups)
            .filter(|g| (first_group + g) * width < self.cols)
            .count() as u32;
        if n == 0 || rows == 0 {
            return Vec::new();
        }
        let (launches, len) = if contiguous {
            (1, rows * width * n)
        } else {
            (n, rows * width)
        };
        (0..launches)
            .map(|g| ScaleF16 {
                len,
                at: at(g),
                scale: self.scale(),
            })
            .collect()
    }
}

/// Where a block lays a product's reduction buffers, which decides the
/// memory a plan needs ([`tile_bytes`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ReductionPlace {
    /// Beside X: a block that reads the product's result while the next
    /// product's input arrives. X + W + Y + R.
    #[default]
    BesideInput,
    /// Over X, dead once the AMP has read it ([`super::codegen::layout`]).
    /// W + Y + max(X, R).
    OverInput,
    /// Over X and the weights right below it, both dead once the AMP has
    /// read them: weights gathered into scratch ([`super::stream`]). X
    /// then lies right under Y's pairs, not in whole pairs of its own, the
    /// weights in its pairs ([`input_span`]).
    /// Y + max(X + W, R).
    OverInputAndWeights,
    /// Y at the top of its whole element pairs, the weights right below
    /// it (in the pairs' slack, spilling below them), X right below both
    /// and out of Y's pairs, the reduction's buffers over X and the
    /// weights below Y's pairs (dead once the AMP has run); where a block
    /// reads the result after the next product's input arrived over X
    /// and the result ends in the first result buffer (an odd number of
    /// rounds), that buffer below X ([`UnderOutput`]; the MLP block,
    /// [`super::block`]).
    UnderOutput {
        /// The result outlives X ([`UnderOutputProduct::keeps_result`]).
        keeps_result: bool,
    },
}

/// Whether `grid_k`'s reduction ends in Y's buffer: an even number of
/// rounds (none included); the rounds alternate between the first
/// result buffer and Y's ([`super::codegen::PlacedGemm::final_view`]).
pub fn reduction_ends_in_output(grid_k: u32) -> bool {
    grid_k.trailing_zeros().is_multiple_of(2)
}

/// One product of a [`ReductionPlace::UnderOutput`] layout: its vertex,
/// K split, the weight bytes it gathers into the layout (0 where they
/// stay private), and whether its result must outlive X (the next
/// product's input arrives over X while the block reads it).
#[derive(Clone, Copy, Debug)]
pub struct UnderOutputProduct<'a> {
    /// The tile's vertex.
    pub vertex: &'a TileGemm,
    /// The plan's K split.
    pub grid_k: u32,
    /// Weight bytes in the layout.
    pub weights: u64,
    /// The result outlives X.
    pub keeps_result: bool,
}

/// Where [`ReductionPlace::UnderOutput`] lays out products that run one
/// after another in the same memory: bytes below the top of memory of
/// each piece's address (Y's, and each product's weights', X's, receive
/// and first result buffers) and of the lowest byte used. Y at the top of
/// the largest output's pairs (every product's result is live while the
/// next one's input and weights arrive); each product's weights right
/// below the largest output, its X right below them and out of those
/// pairs (the AMP reads X and Y's two halves in one instruction): a
/// product's weights and input lie over the earlier products' (dead once
/// their AMP has read them), so each goes only as deep as it needs. The
/// receive and first result buffers right below Y's pairs, 8
/// mod 16 bytes apart ([`reduction_buffer`]), except a first result that
/// outlives X, which lies below every product's X (the next product's
/// input arrives while the block reads the result; still 8 mod 16 bytes
/// from the receive buffer: a round loads one and stores the other,
/// [`reduction_buffer`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnderOutput {
    /// Y's address, below the top.
    pub output: u64,
    /// Each product's weights'.
    pub weights: Vec<u64>,
    /// Each product's X's.
    pub input: Vec<u64>,
    /// Each product's receive and first result buffers (`None`: no K
    /// split).
    pub reduction: Vec<Option<[u64; 2]>>,
    /// The lowest byte.
    pub bottom: u64,
}

impl UnderOutput {
    /// Lays out `products` ([`UnderOutputProduct`]).
    pub fn of(products: &[UnderOutputProduct], machine: &MachineModel) -> Self {
        let past = u64::from(AmpBlock::READ_PAST_BYTES);
        let max =
            |f: &dyn Fn(&UnderOutputProduct) -> u64| products.iter().map(f).max().unwrap_or(0);
        let used = max(&|p| output_used(p.vertex));
        // Every product's Y starts `used` below the top: the pairs any Y
        // touches are the largest output's.
        let span = max(&|p| output_span(p.vertex, machine));
        let weights: Vec<u64> = products
            .iter()
            .map(|p| (used + p.weights).next_multiple_of(16))
            .collect();
        let input: Vec<u64> = products
            .iter()
            .zip(&weights)
            .map(|(p, &w)| w.max(span) + (p.vertex.input_bytes() + past).next_multiple_of(16))
            .collect();
        let deepest_input = input.iter().copied().max().unwrap_or(0);
        let mut bottom = deepest_input;
        let reduction = products
            .iter()
            .map(|p| {
                let buf = reduction_buffer(p.vertex, p.grid_k, machine);
                if buf == 0 {
                    return None;
                }
                let recv = span + buf;
                let first = if p.keeps_result && !reduction_ends_in_output(p.grid_k) {
                    // Below every X and the receive buffer, 8 mod 16
                    // bytes from the receive buffer (`recv` is a multiple
                    // of 16).
                    let rows = reduction_rows_bytes(p.vertex, p.grid_k) + past;
                    (deepest_input.max(recv) + rows).next_multiple_of(16) + 8
                } else {
                    recv - first_result_offset(p.vertex, p.grid_k)
                };
                bottom = bottom.max(recv).max(first);
                Some([recv, first])
            })
            .collect();
        UnderOutput {
            output: used,
            weights,
            input,
            reduction,
            bottom,
        }
    }
}

/// When a product's tiles broadcast its bias rows into the initial
/// partials ([`Epilogue::bias_rows`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BiasRows {
    /// Right before the vertex: the product's compute counts it.
    BeforeVertex,
    /// In an earlier superstep of the block, where the product's tiles
    /// are idle (beside LayerNorm): the block places and counts it
    /// ([`super::codegen::PlacedGemm::emit_bias_broadcast`]).
    Early,
}

/// How an FP8 product's GELU epilogue scales: Y is in the product's
/// unscaled domain, `true = y * 2^input_exp`, and the codes it writes are
/// `f8(gelu(true) * 2^-output_scale)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct F8Pairs {
    /// The unscaled domain's exponent.
    pub input_exp: i32,
    /// The codes' scale.
    pub output_scale: i32,
}

/// The product to plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmShape {
    /// Rows of X and Y.
    pub m: u32,
    /// The contracted dimension.
    pub k: u32,
    /// Columns of W and Y.
    pub n: u32,
    /// The AMP instruction (from the element types).
    pub variant: AmpVariant,
    /// What follows the product on its tiles.
    pub epilogue: Epilogue,
}

impl GemmShape {
    /// Input-channel panels.
    pub fn k_groups(&self) -> u32 {
        self.k.div_ceil(self.variant.in_channels() as u32)
    }

    /// Output-channel groups.
    pub fn n_groups(&self) -> u32 {
        self.n.div_ceil(self.variant.out_channels() as u32)
    }
}

/// Estimated cycles of a plan, per part.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Estimate {
    /// The broadcast of X blocks (0 with one grid column) and the K
    /// split's exchanges.
    pub exchange: u64,
    /// Of `exchange`, the K split's rounds alone (what a block, whose own
    /// exchange replaces the broadcast, adds to the product's compute).
    pub rounds_exchange: u64,
    /// The GEMM vertex on the busiest tile.
    pub compute: u64,
    /// The K split's adds (recursive halving, every round).
    pub reduction: u64,
    /// The epilogue's launches after it (GELU per output group, with
    /// their calls).
    pub epilogue: u64,
    /// Syncs between the supersteps.
    pub sync: u64,
}

impl Estimate {
    /// All of it.
    pub fn total(&self) -> u64 {
        self.exchange + self.compute + self.reduction + self.epilogue + self.sync
    }
}

/// A choice of tiles for one product.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GemmPlan {
    /// The product.
    pub shape: GemmShape,
    /// Grid rows (blocks of M).
    pub grid_rows: u32,
    /// Grid columns (blocks of output groups).
    pub grid_cols: u32,
    /// Parts of K (a power of two; 1: no split).
    pub grid_k: u32,
    /// Input panels per K part (the last may hold fewer real ones).
    pub k_panels: u32,
    /// Rows of X and Y per tile (the last grid row may hold fewer real rows).
    pub rows: u32,
    /// Output groups per tile (the last grid column may hold fewer).
    pub groups: u32,
    /// Estimated cycles.
    pub estimate: Estimate,
    /// Bytes of the busiest tile.
    pub tile_bytes: u32,
    /// The grid's first tile: a block that runs several products on
    /// disjoint tiles places each at its own offset (0 from the search).
    pub first_tile: u32,
}

impl GemmPlan {
    /// Tiles used.
    pub fn tiles(&self) -> u32 {
        self.grid_rows * self.grid_cols * self.grid_k
    }

    /// Tile number of grid position (i, j, k): row-major from tile 0, the
    /// K parts of one output block adjacent (the reduction's partners are
    /// near each other).
    pub fn tile(&self, i: u32, j: u32, k: u32) -> u32 {
        self.first_tile + (i * self.grid_cols + j) * self.grid_k + k
    }

    /// The plan on the tiles from `first`.
    pub fn placed_at(self, first: u32) -> Self {
        GemmPlan {
            first_tile: first,
            ..self
        }
    }

    /// The grid shape.
    pub fn grid(&self) -> Grid {
        Grid {
            rows: self.grid_rows,
            cols: self.grid_cols,
            k: self.grid_k,
        }
    }

    /// Real input panels of K part `k`.
    pub fn k_panels_of(&self, k: u32) -> u32 {
        self.k_panels.min(self.shape.k_groups() - k * self.k_panels)
    }

    /// Real rows of grid row `i`.
    pub fn rows_of(&self, i: u32) -> u32 {
        self.rows.min(self.shape.m - i * self.rows)
    }

    /// Real output groups of grid column `j`.
    pub fn groups_of(&self, j: u32) -> u32 {
        self.groups.min(self.shape.n_groups() - j * self.groups)
    }

    /// The GEMM vertex every tile runs (addresses zero: placement comes later).
    pub fn vertex(&self) -> TileGemm {
        TileGemm {
            variant: self.shape.variant,
            rows: self.rows,
            k_groups: self.k_panels,
            n_groups: self.groups,
            input: 0,
            weights: 0,
            output: 0,
            bias: self.shape.epilogue.bias.then_some(0),
            bias_in_output: false,
        }
        .with_partials_in_output(
            self.shape.epilogue.bias && self.shape.epilogue.bias_rows.is_some(),
        )
    }
}

/// A grid shape that lost, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    /// Grid rows × columns × K parts.
    pub grid: Grid,
    /// Its estimate, when it fits.
    pub estimate: Option<Estimate>,
    /// Why it lost.
    pub reason: String,
}

impl Rejected {
    /// `grid`, which cannot be used at all (no estimate), for `reason`.
    fn unusable(grid: Grid, reason: String) -> Self {
        Rejected {
            grid,
            estimate: None,
            reason,
        }
    }
}

/// The chosen plan and the best of the rest.
#[derive(Clone, Debug)]
pub struct PlanChoice {
    /// The chosen plan.
    pub plan: GemmPlan,
    /// The next best candidates (by estimate) and the first few that did
    /// not fit.
    pub rejected: Vec<Rejected>,
}

/// Why no plan exists.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// Even the smallest blocks do not fit a tile.
    #[error("no tile grid fits: the smallest blocks need {needed} bytes of interleaved memory per tile (their weights, input, output and reduction buffers; a column block's weights are on every grid row), {available} are free (above what earlier blocks keep)")]
    DoesNotFit {
        /// Interleaved bytes the smallest candidate needs.
        needed: u64,
        /// Interleaved bytes a tile offers.
        available: u64,
    },
    /// Every grid that fits a tile was refused by the caller
    /// ([`plan_gemm_where`]): why the one it was least short of memory
    /// for was.
    #[error("no tile grid fits beside the block's other buffers; the closest, {closest}")]
    Refused {
        /// The grid the caller was least short of memory for, and why
        /// it refused it.
        closest: String,
    },
    /// The shape is empty.
    #[error("the product {m}x{k}x{n} is empty")]
    Empty {
        /// M.
        m: u32,
        /// K.
        k: u32,
        /// N.
        n: u32,
    },
}

/// Bytes a tile offers for code, vertex state and stacks before tensors:
/// the planner keeps this much of region 0 free (the code of one GEMM
/// vertex and its supervisor is under 2 KiB).
pub const RESERVED_CODE_BYTES: u32 = 8 * 1024;

/// The tile bytes a plan needs: X, the output's two halves and the weights
/// in whole 32 KiB element pairs of interleaved memory (X and Y must not
/// share a pair), with a K split the reduction's receive buffer and its
/// first result buffer (whole pairs of their own, shared by the two:
/// [`reduction_buffer`]; the second result is Y's buffer,
/// [`super::codegen::TileLayout::reduction`]), the vertex states in
/// region 0. The reduction's buffers are counted where `place` says the
/// block lays them ([`Epilogue::reduction`]).
pub fn tile_bytes(
    g: &TileGemm,
    grid_k: u32,
    place: ReductionPlace,
    machine: &MachineModel,
) -> (u64, u64) {
    let (input, weights) = (input_span(g, place, machine), g.weight_bytes());
    let reduction = reduction_buffer(g, grid_k, machine);
    let interleaved = output_span(g, machine)
        + match place {
            ReductionPlace::BesideInput => input + weights + reduction,
            ReductionPlace::OverInput => weights + input.max(reduction),
            ReductionPlace::OverInputAndWeights => (input + weights).max(reduction),
            ReductionPlace::UnderOutput { keeps_result } => {
                let under = UnderOutput::of(
                    &[UnderOutputProduct {
                        vertex: g,
                        grid_k,
                        weights,
                        keeps_result,
                    }],
                    machine,
                );
                under.bottom - output_span(g, machine)
            }
        };
    let region0 = g.state_bytes() + u64::from(RESERVED_CODE_BYTES);
    (interleaved, region0)
}

/// Bytes from X's address to Y's ([`super::codegen::layout`]): X in
/// whole element pairs of its own, or where the block gathers the weights
/// right below X ([`ReductionPlace::OverInputAndWeights`]), X with the
/// AMP's read-past bytes right under Y's pairs, the weights packed below
/// it in the same pairs (the supervisor loads a weight panel while no
/// worker reads X).
pub fn input_span(g: &TileGemm, place: ReductionPlace, machine: &MachineModel) -> u64 {
    match place {
        ReductionPlace::OverInputAndWeights => {
            (g.input_bytes() + u64::from(AmpBlock::READ_PAST_BYTES)).next_multiple_of(16)
        }
        _ => whole_pairs(g.input_bytes(), machine),
    }
}

/// `bytes` and the AMP's read-past bytes, in whole element pairs.
pub fn whole_pairs(bytes: u64, machine: &MachineModel) -> u64 {
    let pair = u64::from(2 * machine.element_bytes);
    (bytes + u64::from(AmpBlock::READ_PAST_BYTES)).div_ceil(pair) * pair
}

/// Bytes of the reduction's receive buffer, and of its first result
/// buffer: every output group's rows that a tile keeps in a round, 32
/// bytes per row (zero without a K split).
pub fn reduction_rows_bytes(g: &TileGemm, grid_k: u32) -> u64 {
    u64::from(g.n_groups) * u64::from(super::reduce::max_keep(grid_k, g.rows)) * 32
}

/// Offset of the first result buffer from the receive buffer, in the
/// pairs the two share ([`reduction_buffer`]): after the receive buffer,
/// 8 mod 16 bytes from it.
pub fn first_result_offset(g: &TileGemm, grid_k: u32) -> u64 {
    reduction_rows_bytes(g, grid_k).next_multiple_of(16) + 8
}

/// Bytes of the reduction's buffers (zero without a K split): the receive
/// buffer and the first result buffer share whole element pairs, the
/// result 8 mod 16 bytes after the receive buffer, with the AMP's
/// read-past bytes. A round's add (`{ ld2xst64pace ; f16v4add }`,
/// [`crate::codelets::elementwise`]) loads word `i` of its two inputs and
/// stores word `i - 2` of its result: in the first round it reads Y
/// (pairs of its own) and the receive buffer and writes the first result,
/// whose store is then 8 mod 16 bytes from the receive buffer's load
/// (the pairs' two banks); in the second it reads the first result and
/// the receive buffer at one index (8 mod 16 apart again) and writes Y.
/// One buffer of whole pairs instead of two.
pub fn reduction_buffer(g: &TileGemm, grid_k: u32, machine: &MachineModel) -> u64 {
    match reduction_rows_bytes(g, grid_k) {
        0 => 0,
        rows => whole_pairs(first_result_offset(g, grid_k) + rows, machine),
    }
}

/// Bytes from Y's address to the end of its whole element pairs: Y's
/// buffer, then the bias block (if any) 8 mod 16 bytes after it (its loads
/// and Y's stores share bundles), each with the AMP's read-past bytes.
pub fn output_span(g: &TileGemm, machine: &MachineModel) -> u64 {
    let pair = u64::from(2 * machine.element_bytes);
    output_used(g).div_ceil(pair) * pair
}

/// Bytes from Y's address that Y, its bias block and the AMP's read-past
/// bytes use, in whole 16-byte words ([`output_span`] without the pairs'
/// slack).
pub fn output_used(g: &TileGemm) -> u64 {
    let past = u64::from(AmpBlock::READ_PAST_BYTES);
    (bias_offset(g) + g.bias_bytes() + past).next_multiple_of(16)
}

/// Offset of the bias block from Y's address (where it would start).
pub fn bias_offset(g: &TileGemm) -> u64 {
    (g.output_bytes() + u64::from(AmpBlock::READ_PAST_BYTES)).next_multiple_of(16) + 8
}

/// Cycles of the epilogue on one tile of `plan`: the GELU launches, each
/// called as a subroutine, one over every group where the groups are
/// contiguous (`reduced`: after a reduction), else one per group.
pub fn epilogue_cycles(
    shape: &GemmShape,
    (rows, groups): (u32, u32),
    reduced: bool,
    gelu: &StreamCounts,
) -> u64 {
    if shape.epilogue.gelu.is_none() {
        return 0;
    }
    let words = rows * shape.variant.out_channels() as u32 / 4;
    let machine = MachineModel::c600();
    let (launches, words) = if reduced {
        (1, words * groups)
    } else {
        (groups, words)
    };
    u64::from(launches) * (gelu.cycles(&split(words)) + call_cycles(&machine))
}

/// Cycles of an FP8 pairs epilogue ([`F8Pairs`]) on one tile holding
/// `rows` rows of `groups` output groups: one [`GeluF8`] launch over every
/// pair, called (its counts do not depend on the strides).
pub fn gelu_f8_cycles(counts: &GeluF8Counts, (rows, groups): (u32, u32)) -> u64 {
    if rows == 0 || groups == 0 {
        return 0;
    }
    counts.cycles(rows, groups / 2) + call_cycles(&MachineModel::c600())
}

/// The FP8 pairs GELU over `groups` (even) output groups of `rows` rows
/// from `base`, `group_stride` apart, in place: pair `q`'s panel rows
/// overlay group `2q`'s rows.
pub fn gelu_f8(
    form: GeluForm,
    f8: F8Pairs,
    (rows, groups): (u32, u32),
    base: u32,
    group_stride: u32,
) -> GeluF8 {
    GeluF8 {
        form,
        rows,
        pairs: groups / 2,
        input: base,
        group_stride,
        input_exp: f8.input_exp,
        output: base,
        pair_stride: 2 * group_stride,
        output_scale: f8.output_scale,
    }
}

/// The GELU codelet's issue counts (independent of the length).
pub fn gelu_counts(form: GeluForm) -> StreamCounts {
    Gelu {
        form,
        len: 4,
        input: 0x80000,
        output: 0x80000,
    }
    .counts()
    .expect("the probe's parameters are valid")
}

/// The issue counts a plan's estimate is made of.
pub struct PlanCounts {
    /// The GEMM vertex's.
    pub gemm: GemmCounts,
    /// The GELU codelet's, if the epilogue has one.
    pub gelu: Option<StreamCounts>,
    /// The FP8 pairs GELU's, if the epilogue has one ([`F8Pairs`]).
    pub gelu_f8: Option<GeluF8Counts>,
    /// The add codelet's (the K split's reduction).
    pub add: StreamCounts,
    /// The scaling's ([`Epilogue::scaled`]), if the epilogue has one.
    pub scale: Option<StreamCounts>,
    /// The zero fill's (the last K part's padding panels).
    pub fill: StreamCounts,
    /// The bias broadcasts' (the bias into the initial partials).
    pub broadcast: BiasCounts,
}

impl PlanCounts {
    /// The counts for `shape`.
    pub fn of(shape: &GemmShape) -> Self {
        PlanCounts {
            gemm: vertex_counts(shape.variant),
            gelu: shape
                .epilogue
                .gelu
                .filter(|_| shape.epilogue.f8_pairs.is_none())
                .map(gelu_counts),
            gelu_f8: shape
                .epilogue
                .gelu
                .filter(|_| shape.epilogue.f8_pairs.is_some())
                .map(|form| GeluF8::probe_counts(form).expect("the probe's parameters are valid")),
            add: reduction_add(shape.variant, 1, 0x80000, 0x90000, 0xa0000)
                .counts()
                .expect("the probe's parameters are valid"),
            scale: shape.epilogue.scaled.map(|s| {
                ScaleF16 {
                    len: 8,
                    at: 0x80000,
                    scale: s.scale(),
                }
                .counts()
                .expect("the probe's parameters are valid")
            }),
            fill: Fill {
                bytes: 8,
                dst: 0x80000,
            }
            .counts()
            .expect("the probe's parameters are valid"),
            broadcast: BiasCounts::probe(),
        }
    }

    /// Cycles of broadcasting the bias rows into the initial partials of
    /// a tile of `plan` ([`super::bias_broadcast`]), the call included, where
    /// the product's compute does it ([`BiasRows::BeforeVertex`]); else 0.
    pub fn bias_cycles(&self, plan: &GemmPlan) -> u64 {
        if plan.shape.epilogue.bias_rows != Some(BiasRows::BeforeVertex) {
            return 0;
        }
        self.broadcast_cycles(plan)
    }

    /// Cycles of broadcasting the bias rows into the initial partials of
    /// a tile of `plan`, the call included, wherever it is done; 0
    /// without a broadcast bias.
    pub fn broadcast_cycles(&self, plan: &GemmPlan) -> u64 {
        BiasBroadcast::of(&plan.vertex(), plan.shape.epilogue.per_row, 0)
            .map_or(0, |b| b.cycles(&self.broadcast))
    }

    /// Cycles of zeroing `plan`'s padding input panels on the tiles of its
    /// last K part ([`padding_fill`]), the call included; 0 without any.
    pub fn fill_cycles(&self, plan: &GemmPlan) -> u64 {
        padding_fill(plan, plan.grid_k - 1, 0).map_or(0, |f| {
            self.fill.cycles(&f.worker_words()) + call_cycles(&MachineModel::c600())
        })
    }

    /// Cycles of the scaling ([`Epilogue::scaled`]) on the busiest tile of
    /// `plan` owning `rows` rows of `groups` groups (every group scaled),
    /// the calls included: one launch after a reduction (the groups are
    /// contiguous), one per group otherwise; 0 without one.
    pub fn scale_cycles(&self, plan: &GemmPlan, rows: u32, groups: u32) -> u64 {
        let (Some(counts), Some(scaled)) = (self.scale.as_ref(), plan.shape.epilogue.scaled) else {
            return 0;
        };
        let width = plan.shape.variant.out_channels() as u32;
        let everything = ScaledColumns {
            cols: u32::MAX,
            ..scaled
        };
        everything
            .launches((0, groups, width), rows, plan.grid_k > 1, |_| 0)
            .iter()
            .map(|l| counts.cycles(&l.worker_pairs()) + call_cycles(&MachineModel::c600()))
            .sum()
    }

    /// Cycles of one reduction round's adds on a tile keeping `rows` rows
    /// of `groups` output groups: one add launch per group, each called.
    pub fn reduction_cycles(&self, shape: GemmShape, rows: u32, groups: u32) -> u64 {
        let add = reduction_add(shape.variant, rows, 0, 0, 0);
        let machine = MachineModel::c600();
        u64::from(groups) * (self.add.cycles(&add.worker_words()) + call_cycles(&machine))
    }
}

/// The zero fill of the input panels of K part `k` past its real ones
/// (the last part's, where the K panels do not divide evenly), for the
/// input at `input`: no exchange writes them and their weights are zero,
/// but a NaN or infinity left there by an earlier block (for FP8 inputs
/// any byte 0x80) times zero is NaN. `None` where the part has none.
pub fn padding_fill(plan: &GemmPlan, k: u32, input: u32) -> Option<Fill> {
    let pad = plan.k_panels - plan.k_panels_of(k);
    (pad > 0).then(|| Fill {
        bytes: pad * plan.rows * 32,
        dst: input + plan.k_panels_of(k) * plan.rows * 32,
    })
}

/// The add of one output group's `rows` rows in a reduction round:
/// `out = x + y` in the product's output format.
pub fn reduction_add(variant: AmpVariant, rows: u32, x: u32, y: u32, out: u32) -> Binary {
    let ty = match variant.output_elem() {
        Elem::F32 => VecType::F32,
        _ => VecType::F16,
    };
    Binary {
        op: BinaryOp::Add,
        ty,
        len: rows * variant.out_channels() as u32,
        x,
        y,
        out,
    }
}

/// The GEMM vertex's issue counts (they do not depend on the sizes: one
/// small instance is emitted and counted).
pub fn vertex_counts(variant: AmpVariant) -> GemmCounts {
    let probe = TileGemm {
        variant,
        rows: 6,
        k_groups: 2,
        n_groups: 1,
        input: 0x80000,
        weights: 0x90000,
        output: 0xa0000,
        bias: None,
        bias_in_output: false,
    };
    probe
        .counts()
        .expect("the probe's parameters are valid for every variant")
}

/// A grid shape: blocks of M, of output groups and of K.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Grid {
    /// Blocks of M.
    pub rows: u32,
    /// Blocks of output groups.
    pub cols: u32,
    /// Parts of K (a power of two).
    pub k: u32,
}

impl fmt::Display for Grid {
    /// `RxC`, or `RxCxK` with a K split.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.rows, self.cols)?;
        if self.k > 1 {
            write!(f, "x{}", self.k)?;
        }
        Ok(())
    }
}

/// Syncs the planner charges each reduction round past the first beyond
/// its real one ([`SYNCS_PER_ROUND`]): a margin kept from when a round
/// took two syncs. Without it the search prefers deeper K splits for a
/// few hundred cycles, and the pooling head's products so picked keep
/// their weights' home pieces on fewer tiles (34 KB of private memory a
/// tile against 25 KB): so400m's loop body then no longer fits beside
/// its archive (measured). so400m's encoder blocks plan the same either
/// way (alone: attention 156,535 cycles, MLP 123,922). The real syncs
/// are in each block's estimate (`syncs()`); this only orders the
/// search.
pub const PLANNER_ROUND_MARGIN: u64 = 1;

/// Plans `shape` on `machine`, searching every grid shape: blocks of M and
/// of output groups without empty blocks, and K splits in powers of two.
pub fn plan_gemm(shape: GemmShape, machine: &MachineModel) -> Result<PlanChoice, PlanError> {
    plan_gemm_where(shape, machine, &|_| Ok(()))
}

/// A caller's acceptance of a grid ([`plan_gemm_where`]): `Err` with the
/// bytes it is short of and why.
pub type Accept<'a> = dyn Fn(&GemmPlan) -> Result<(), (u32, String)> + 'a;

/// [`plan_gemm`] among the grids that fit a tile and that `accept` takes
/// (a block that lays out the product beside others checks the whole
/// layout: [`super::block`]); `Err` from `accept` is how many bytes the
/// grid is short of and why it refused it.
pub fn plan_gemm_where(
    shape: GemmShape,
    machine: &MachineModel,
    accept: &Accept,
) -> Result<PlanChoice, PlanError> {
    if shape.m == 0 || shape.k == 0 || shape.n == 0 {
        return Err(PlanError::Empty {
            m: shape.m,
            k: shape.k,
            n: shape.n,
        });
    }
    let counts = PlanCounts::of(&shape);
    let (ng, kg) = (shape.n_groups(), shape.k_groups());
    let mut fits: Vec<GemmPlan> = Vec::new();
    let mut too_big: Vec<Rejected> = Vec::new();
    let mut smallest_need = u64::MAX;
    let mut refused: Option<(u32, String)> = None;
    let splits = (0..)
        .map(|e| 1u32 << e)
        .take_while(|&k| k <= kg && k <= machine.tiles);
    for grid_k in splits {
        // Every K part holds at least one real panel.
        if kg.div_ceil(kg.div_ceil(grid_k)) != grid_k {
            continue;
        }
        for grid_rows in 1..=shape.m.min(machine.tiles / grid_k) {
            // Only grids without empty rows or columns: the same blocks with
            // fewer grid rows or columns are the same plan.
            if shape.m.div_ceil(shape.m.div_ceil(grid_rows)) != grid_rows {
                continue;
            }
            for grid_cols in 1..=ng.min(machine.tiles / (grid_rows * grid_k)) {
                if ng.div_ceil(ng.div_ceil(grid_cols)) != grid_cols {
                    continue;
                }
                let grid = Grid {
                    rows: grid_rows,
                    cols: grid_cols,
                    k: grid_k,
                };
                match evaluate_with(shape, grid, machine, &counts) {
                    Ok(p) => match accept(&p) {
                        Ok(()) => fits.push(p),
                        Err((short, reason)) => {
                            if refused.as_ref().is_none_or(|(s, _)| short < *s) {
                                refused = Some((short, format!("grid {grid}: {reason}")));
                            }
                        }
                    },
                    Err((need, r)) => {
                        smallest_need = smallest_need.min(need);
                        if too_big.len() < 3 {
                            too_big.push(r);
                        }
                    }
                }
            }
        }
    }
    fits.sort_by_key(|p| (p.estimate.total(), p.tiles(), p.grid_k, p.grid_rows));
    let Some(best) = fits.first().cloned() else {
        if let Some((_, closest)) = refused {
            return Err(PlanError::Refused { closest });
        }
        return Err(PlanError::DoesNotFit {
            needed: smallest_need,
            available: u64::from(machine.sram_end.saturating_sub(machine.interleaved_base)),
        });
    };
    let mut rejected: Vec<Rejected> = fits
        .iter()
        .skip(1)
        .take(4)
        .map(|p| Rejected {
            grid: p.grid(),
            estimate: Some(p.estimate),
            reason: format!(
                "{} cycles more than the chosen plan",
                p.estimate.total() - best.estimate.total()
            ),
        })
        .collect();
    rejected.extend(too_big);
    Ok(PlanChoice {
        plan: best,
        rejected,
    })
}

/// The plan of `shape` on `grid` (the blocks are the even split; a grid
/// with empty blocks shrinks to the grid its blocks need), with its
/// estimate; `Err` with the reason when it does not fit a tile or the K
/// split is not a power of two.
pub fn evaluate(
    shape: GemmShape,
    grid: Grid,
    machine: &MachineModel,
) -> Result<GemmPlan, Rejected> {
    if !grid.k.is_power_of_two() || grid.k > shape.k_groups() {
        return Err(Rejected::unusable(
            grid,
            format!(
                "a K split must be a power of two of at most {} (the input panels)",
                shape.k_groups()
            ),
        ));
    }
    evaluate_with(shape, grid, machine, &PlanCounts::of(&shape)).map_err(|(_, r)| r)
}

fn evaluate_with(
    shape: GemmShape,
    grid: Grid,
    machine: &MachineModel,
    counts: &PlanCounts,
) -> Result<GemmPlan, (u64, Rejected)> {
    let rows = shape.m.div_ceil(grid.rows);
    let mut groups = shape.n_groups().div_ceil(grid.cols);
    if shape.epilogue.f8_pairs.is_some() {
        // Whole pairs of output groups per tile (the GELU writes a pair's
        // rows as one 32-byte FP8 panel row).
        groups = groups.next_multiple_of(2);
    }
    let k_panels = shape.k_groups().div_ceil(grid.k);
    let plan = GemmPlan {
        shape,
        grid_rows: shape.m.div_ceil(rows),
        grid_cols: shape.n_groups().div_ceil(groups),
        grid_k: shape.k_groups().div_ceil(k_panels),
        k_panels,
        rows,
        groups,
        estimate: Estimate::default(),
        tile_bytes: 0,
        first_tile: 0,
    };
    let grid = plan.grid();
    if !plan.grid_k.is_power_of_two() {
        // E.g. 5 panels in 4 parts: 2+2+1, three parts.
        return Err((
            0,
            Rejected::unusable(
                grid,
                format!(
                    "{} input panels in parts of {} make {} parts, not a power of two",
                    shape.k_groups(),
                    k_panels,
                    plan.grid_k
                ),
            ),
        ));
    }
    if plan.tiles() > machine.tiles {
        // Only a forced grid can ask for more: the search stays within.
        return Err((
            0,
            Rejected::unusable(
                grid,
                format!(
                    "needs {} tiles, {} are available",
                    plan.tiles(),
                    machine.tiles
                ),
            ),
        ));
    }
    let vertex = plan.vertex();
    let (inter, r0) = tile_bytes(&vertex, plan.grid_k, shape.epilogue.reduction, machine);
    let interleaved_avail = u64::from(machine.sram_end.saturating_sub(machine.interleaved_base));
    let region0_avail = u64::from(machine.interleaved_base - machine.sram_base);
    if inter > interleaved_avail || r0 > region0_avail {
        return Err((
            inter,
            Rejected::unusable(
                grid,
                format!(
                    "does not fit: {inter} bytes of interleaved memory (of {interleaved_avail}) and {r0} of region 0 (of {region0_avail}) per tile"
                ),
            ),
        ));
    }
    let bpc = u64::from(machine.exchange_bytes_per_cycle);
    let mut exchange = if plan.grid_cols > 1 {
        // The block's home tile sends it once (multicast), four bytes per
        // cycle, after the farthest latency.
        vertex.input_bytes().div_ceil(bpc) + machine.exchange_latency(0, machine.tiles - 1)
    } else {
        0
    };
    if let (Some(hidden), true) = (shape.epilogue.gathered_weights, plan.grid_rows > 1) {
        let rows = u64::from(plan.grid_rows);
        let gather = (vertex.weight_bytes() * (rows - 1) / rows).div_ceil(bpc);
        exchange += gather.saturating_sub(u64::from(hidden));
    }
    // The broadcast's superstep ends in a sync; each reduction round is a
    // sync, the exchange and the adds at a fence ([`super::reduce`]). The
    // search charges each round past the first one more sync
    // ([`PLANNER_ROUND_MARGIN`]).
    let rounds = u64::from(plan.grid_k.trailing_zeros());
    let syncs = u64::from(plan.grid_cols > 1)
        + rounds * u64::from(SYNCS_PER_ROUND)
        + rounds.saturating_sub(1) * PLANNER_ROUND_MARGIN;
    let mut reduction = 0;
    let mut rounds_exchange = 0;
    let mut keep = rows;
    for t in 0..rounds {
        keep = keep.div_ceil(2);
        let bytes = u64::from(groups) * u64::from(keep) * 32;
        // Until the partner's last word has landed: both tiles arm, then
        // send a chunk a group (the code the lowering emits).
        let words = (bytes / 4) as u32 / groups.max(1);
        let partner = (1u32 << t).min(machine.tiles - 1);
        let chunks: Vec<(u32, u32)> = (0..groups).map(|g| (g * 8 * (words + 1), words)).collect();
        let mut code = arm_insts(partner, 0, groups * words);
        code.extend(send_insts(
            first_send_cycle(machine, partner, &[0]),
            ARM_ISSUES,
            &chunks,
        ));
        rounds_exchange += received_by(machine, &code, (partner, 0), &code);
        reduction += counts.reduction_cycles(shape, keep, groups);
    }
    exchange += rounds_exchange;
    Ok(GemmPlan {
        estimate: Estimate {
            exchange,
            rounds_exchange,
            compute: counts.gemm.cycles(&vertex, machine)
                + counts.fill_cycles(&plan)
                + counts.bias_cycles(&plan),
            reduction,
            epilogue: {
                let owned = if rounds == 0 { rows } else { keep };
                counts.scale_cycles(&plan, owned, groups)
                    + match (counts.gelu.as_ref(), counts.gelu_f8.as_ref()) {
                        (_, Some(g)) => gelu_f8_cycles(g, (owned, groups)),
                        (Some(g), None) => epilogue_cycles(&shape, (owned, groups), rounds > 0, g),
                        (None, None) => 0,
                    }
            },
            sync: syncs * u64::from(machine.sync_latency),
        },
        tile_bytes: (inter + r0) as u32,
        ..plan
    })
}

impl fmt::Display for Estimate {
    /// `T cycles (exchange E, compute C, epilogue P, sync S)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} cycles (exchange {}, compute {}, reduction {}, epilogue {}, sync {})",
            self.total(),
            self.exchange,
            self.compute,
            self.reduction,
            self.epilogue,
            self.sync
        )
    }
}

impl fmt::Display for Epilogue {
    /// ` + bias`, ` + GELU (erf)`, nothing for none.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.bias {
            write!(f, " + bias")?;
            if self.per_row {
                write!(f, " per row")?;
            }
        }
        if let Some(s) = self.scaled {
            write!(f, ", columns 0..{} times {:e}", s.cols, s.scale())?;
        }
        match self.gelu {
            Some(GeluForm::Erf) => write!(f, ", GELU (erf)"),
            Some(GeluForm::Tanh) => write!(f, ", GELU (tanh)"),
            None => Ok(()),
        }
    }
}

impl fmt::Display for GemmPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}x{}x{} {}{}: grid {} ({} tiles{}), {} rows x {} groups{} per tile; {}, {} bytes on the busiest tile",
            self.shape.m,
            self.shape.k,
            self.shape.n,
            self.shape.variant.mnemonic(),
            self.shape.epilogue,
            self.grid(),
            self.tiles(),
            if self.first_tile > 0 {
                format!(" from tile {}", self.first_tile)
            } else {
                String::new()
            },
            self.rows,
            self.groups,
            if self.grid_k > 1 {
                format!(" x {} input panels", self.k_panels)
            } else {
                String::new()
            },
            self.estimate,
            self.tile_bytes
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(m: u32, k: u32, n: u32) -> GemmShape {
        GemmShape {
            m,
            k,
            n,
            variant: AmpVariant::F16,
            epilogue: Epilogue::default(),
        }
    }

    #[test]
    fn a_streamed_products_gather_is_charged_beyond_what_lies_beside_other_work() {
        // fc1 of so400m on 7 grid rows: each tile gathers 6/7 of its 9
        // panels x 6 groups of FP8 weights (27,648 bytes), 23,698 bytes
        // at 4 bytes a cycle.
        let m = MachineModel::c600();
        let grid = Grid {
            rows: 7,
            cols: 45,
            k: 4,
        };
        let with = |gathered_weights| {
            let shape = GemmShape {
                variant: AmpVariant::F8,
                epilogue: Epilogue {
                    gathered_weights,
                    ..Epilogue::default()
                },
                ..shape(729, 1152, 4320)
            };
            evaluate(shape, grid, &m).unwrap().estimate.exchange
        };
        let resident = with(None);
        assert_eq!(with(Some(0)), resident + 23_698u64.div_ceil(4));
        assert_eq!(with(Some(5_000)), resident + 23_698u64.div_ceil(4) - 5_000);
        // All of it beside LayerNorm: nothing.
        assert_eq!(with(Some(10_000)), resident);
    }

    #[test]
    fn scaled_columns_launch_on_the_groups_below_their_end() {
        // Q's 64 columns of qk's 128: a tile of column block 1 (groups 2
        // and 3 of 16 columns) holds Q's last group and K's first.
        let q = ScaledColumns {
            scale_bits: 0.25f32.to_bits(),
            cols: 48,
        };
        let at = |g: u32| 0x80000 + g * 0x1000;
        // After a reduction the owned rows of every group are contiguous:
        // one launch over the Q groups, from the first.
        let one = q.launches((0, 2, 16), 6, true, at);
        assert_eq!(one.len(), 1);
        assert_eq!(
            (one[0].len, one[0].at, one[0].scale),
            (6 * 16 * 2, 0x80000, 0.25)
        );
        // Without one, a launch per Q group.
        let each = q.launches((0, 2, 16), 6, false, at);
        assert_eq!(
            each.iter().map(|l| (l.len, l.at)).collect::<Vec<_>>(),
            [(96, 0x80000), (96, 0x81000)]
        );
        // Block 1: its group 0 (global 2) is Q's, its group 1 K's.
        let mixed = q.launches((2, 2, 16), 6, false, at);
        assert_eq!(mixed.iter().map(|l| l.at).collect::<Vec<_>>(), [0x80000]);
        // K's block, and a tile that owns no rows: nothing.
        assert!(q.launches((4, 2, 16), 6, true, at).is_empty());
        assert!(q.launches((0, 2, 16), 0, true, at).is_empty());
    }

    #[test]
    fn the_reduction_counts_where_the_block_lays_it() {
        // A K split of 4 keeps a reduction buffer of whole element pairs;
        // beside X it adds to X, over X it needs the larger, over X and
        // gathered weights X packs under Y (no whole pairs of its own) and
        // the weights below it share its pairs.
        let m = MachineModel::c600();
        let grid = Grid {
            rows: 7,
            cols: 32,
            k: 4,
        };
        let plan = evaluate(shape(729, 1152, 2560), grid, &m).unwrap();
        let v = plan.vertex();
        let (x, w) = (v.input_bytes(), v.weight_bytes());
        let r = reduction_buffer(&v, 4, &m);
        let y = output_span(&v, &m);
        assert!(r > 0);
        let bytes = |place| tile_bytes(&v, 4, place, &m).0;
        assert_eq!(
            bytes(ReductionPlace::BesideInput),
            y + whole_pairs(x, &m) + w + r
        );
        assert_eq!(
            bytes(ReductionPlace::OverInput),
            y + w + whole_pairs(x, &m).max(r)
        );
        let packed = (x + u64::from(AmpBlock::READ_PAST_BYTES)).next_multiple_of(16);
        assert_eq!(
            input_span(&v, ReductionPlace::OverInputAndWeights, &m),
            packed
        );
        assert_eq!(
            bytes(ReductionPlace::OverInputAndWeights),
            y + (packed + w).max(r)
        );
        assert!(bytes(ReductionPlace::OverInputAndWeights) < bytes(ReductionPlace::OverInput));
        assert!(bytes(ReductionPlace::OverInput) < bytes(ReductionPlace::BesideInput));
    }

    #[test]
    fn under_output_keeps_x_out_of_y_pairs_and_a_kept_result_below_x() {
        // so400m's fc1 on 7 grid rows, K split 2, 4 and 8 (1, 2 and 3
        // reduction rounds), its weights gathered into the layout: Y at the
        // top, the weights right below it, X below both and out of Y's
        // pairs, the receive buffer below Y's pairs and the first result
        // 8 mod 16 bytes from it, below X where the result outlives X and
        // ends there (an odd number of rounds).
        let m = MachineModel::c600();
        for k in [2u32, 4, 8] {
            let grid = Grid {
                rows: 7,
                cols: 180 / k,
                k,
            };
            let plan = evaluate(shape(729, 1152, 4320), grid, &m).unwrap();
            let v = plan.vertex();
            let span = output_span(&v, &m);
            let rows = reduction_rows_bytes(&v, k);
            for keeps_result in [false, true] {
                let product = UnderOutputProduct {
                    vertex: &v,
                    grid_k: k,
                    weights: v.weight_bytes(),
                    keeps_result,
                };
                let u = UnderOutput::of(&[product], &m);
                assert!(u.output >= v.output_bytes());
                assert!(u.weights[0] - v.weight_bytes() >= u.output);
                assert!(u.input[0] - v.input_bytes() >= u.weights[0].max(span));
                let [recv, first] = u.reduction[0].expect("a K split");
                assert!(recv - rows >= span, "k = {k}");
                // Addresses are the top less these: the first result's is
                // 8 mod 16 bytes from the receive buffer's, either way.
                let apart = i128::from(recv) - i128::from(first);
                assert_eq!(apart.rem_euclid(16), 8, "k = {k}");
                if keeps_result && !reduction_ends_in_output(k) {
                    assert!(first - rows >= u.input[0].max(recv), "k = {k}");
                } else {
                    assert!(first - rows >= span && first <= recv - rows, "k = {k}");
                }
                assert_eq!(u.bottom, u.input[0].max(recv).max(first));
                let place = ReductionPlace::UnderOutput { keeps_result };
                assert_eq!(tile_bytes(&v, k, place, &m).0, u.bottom);
            }
        }
    }

    #[test]
    fn every_input_stays_out_of_the_largest_outputs_pairs() {
        // so400m's FP8 fc1 (a tile's Y over one element pair) then fc2
        // (a tile's Y under one), weights resident: both outputs start
        // where the larger ends below the top, so fc2's X must stay out
        // of every pair either Y touches, not just out of fc2's own
        // (the AMP loads X and its partials in one instruction: the
        // simulator's bank check caught a layout that did not).
        let m = MachineModel::c600();
        let grid = |rows, cols, k| Grid { rows, cols, k };
        let fp8 = |m, k, n| GemmShape {
            variant: AmpVariant::F8,
            ..shape(m, k, n)
        };
        let fc1 = evaluate(fp8(729, 1152, 4320), grid(7, 45, 4), &m).unwrap();
        let fc2 = evaluate(fp8(729, 4320, 1152), grid(7, 24, 8), &m).unwrap();
        let (v1, v2) = (fc1.vertex(), fc2.vertex());
        assert!(output_used(&v1) > 2 * u64::from(m.element_bytes));
        let u = UnderOutput::of(
            &[
                UnderOutputProduct {
                    vertex: &v1,
                    grid_k: 4,
                    weights: 0,
                    keeps_result: true,
                },
                UnderOutputProduct {
                    vertex: &v2,
                    grid_k: 8,
                    weights: 0,
                    keeps_result: false,
                },
            ],
            &m,
        );
        let span = output_span(&v1, &m).max(output_span(&v2, &m));
        for (n, v) in [&v1, &v2].into_iter().enumerate() {
            assert!(u.input[n] - v.input_bytes() >= span, "product {n}");
        }
    }

    #[test]
    fn the_search_chooses_among_the_grids_the_caller_accepts() {
        // A block that lays a product out beside others refuses grids
        // whose layout does not fit: the search takes the best it
        // accepts, and says why where it accepts none.
        let m = MachineModel::c600();
        let s = shape(729, 1152, 2560);
        let best = plan_gemm(s, &m).unwrap().plan;
        let other = plan_gemm_where(s, &m, &|p| {
            if p.grid() == best.grid() {
                Err((1, "refused".into()))
            } else {
                Ok(())
            }
        })
        .unwrap()
        .plan;
        assert_ne!(other.grid(), best.grid());
        assert!(other.estimate.total() >= best.estimate.total());
        // Refusing every grid: the error names the one refused for the
        // fewest missing bytes.
        let least = std::cell::Cell::new(u32::MAX);
        let e = plan_gemm_where(s, &m, &|p| {
            let short = p.tiles();
            least.set(least.get().min(short));
            Err((short, format!("short of {short} bytes")))
        })
        .unwrap_err();
        assert!(matches!(e, PlanError::Refused { .. }), "{e}");
        let closest = format!("short of {} bytes", least.get());
        assert!(e.to_string().ends_with(&closest), "{e}");
    }

    #[test]
    fn the_first_result_shares_the_receive_buffers_pairs() {
        // The receive buffer and the first result share one element pair
        // (two before), the result 8 mod 16 bytes after the receive buffer
        // so a round's load of one and store of the other meet different
        // banks; neither overlaps the other, Y, or the read-past bytes.
        // The simulator's bank checks run them (`lower_gemm`'s K splits).
        let m = MachineModel::c600();
        for k in [2, 4, 8] {
            let grid = Grid {
                rows: 7,
                cols: 128 / k,
                k,
            };
            let plan = evaluate(shape(729, 1152, 2560), grid, &m).unwrap();
            let v = plan.vertex();
            let lay = super::super::codegen::layout(&plan, &m);
            let [recv, first, second] = lay.reduction.expect("a K split");
            let rows = reduction_rows_bytes(&v, k) as u32;
            assert_eq!(second, lay.output);
            assert_eq!((first - recv) % 16, 8);
            assert!(recv + rows <= first);
            assert!(first + rows + AmpBlock::READ_PAST_BYTES <= lay.output);
            // Never more than the two buffers of whole pairs each; where
            // both fit one pair (qk's 5 groups), one.
            let pairs = u64::from(lay.output - recv);
            assert!(pairs <= 2 * whole_pairs(u64::from(rows), &m));
            if 2 * rows + 64 <= 2 * m.element_bytes {
                assert_eq!(pairs, u64::from(2 * m.element_bytes), "k = {k}");
            }
            assert_eq!(u64::from(lay.output - recv), reduction_buffer(&v, k, &m));
        }
    }

    #[test]
    fn a_tiny_product_splits_rows_but_never_broadcasts() {
        // A broadcast and its sync cost more than the compute they save;
        // splitting rows costs nothing (each row block enters on its tile).
        let c = plan_gemm(shape(7, 40, 20), &MachineModel::c600()).unwrap();
        assert_eq!(c.plan.grid_cols, 1, "{}", c.plan);
        assert_eq!(c.plan.estimate.sync, 0);
        assert!(c.plan.grid_rows > 1, "{}", c.plan);
    }

    #[test]
    fn the_mlp_up_projection_spreads_over_the_chip() {
        let m = MachineModel::c600();
        let c = plan_gemm(shape(729, 1152, 4304), &m).unwrap();
        let p = &c.plan;
        assert!(p.tiles() > m.tiles / 2, "{p}");
        assert!(p.tiles() <= m.tiles);
        // Every row and group is covered, none twice.
        assert!(p.grid_rows * p.rows >= 729 && (p.grid_rows - 1) * p.rows < 729);
        assert!(p.grid_cols * p.groups >= 269 && (p.grid_cols - 1) * p.groups < 269);
        assert!(!c.rejected.is_empty());
        // The compute alone at the AMP's peak on every tile.
        let peak = 729 * 1152 * 4304 / (64 * u64::from(m.tiles));
        assert!(p.estimate.compute >= peak, "{p}");
    }

    #[test]
    fn a_forced_grid_larger_than_the_machine_is_rejected() {
        let m = MachineModel::c600();
        let r = evaluate(
            shape(729, 4304, 1152),
            Grid {
                rows: 4,
                cols: 24,
                k: 16,
            },
            &m,
        )
        .unwrap_err();
        assert_eq!(r.reason, "needs 1536 tiles, 1472 are available");
        assert!(evaluate(
            shape(729, 4304, 1152),
            Grid {
                rows: 7,
                cols: 12,
                k: 16
            },
            &m
        )
        .is_ok());
    }

    #[test]
    fn a_product_whose_weights_cannot_fit_is_an_error() {
        let e = plan_gemm(shape(1, 1 << 16, 1 << 16), &MachineModel::c600()).unwrap_err();
        let PlanError::DoesNotFit { needed, available } = e else {
            panic!("{e}")
        };
        // The interleaved region: what the plan's buffers and weights use.
        assert_eq!(available, 0xe8000 - 0x80000);
        assert!(needed > available);
        // Above what earlier blocks keep, less is free.
        let m = MachineModel {
            interleaved_base: 0xe0000,
            ..MachineModel::c600()
        };
        let e = plan_gemm(shape(64, 1024, 1024), &m).unwrap_err();
        assert!(e.to_string().contains("32768 are free"), "{e}");
        assert!(plan_gemm(shape(0, 4, 4), &MachineModel::c600()).is_err());
    }
}
