//! Planning a matrix product `Y[M, N] = X[M, K] · W[K, N]` over the tiles:
//! which tiles compute which block of Y, found by search over the cost
//! model (the GEMM vertex's estimate from its emitted code, the exchange
//! at the machine's bytes per cycle, the syncs), under the tile-memory
//! constraint.
//!
//! The plan is output-stationary with no split of K: a grid of `grid_rows
//! × grid_cols` tiles, tile (i, j) computing rows `i·rows ..` and output
//! groups `j·groups ..` of Y. Each grid row's X block enters on the row's
//! first tile and is broadcast to the others (one multicast per grid row);
//! each tile keeps the weight panels of its column block.
//!
//! The search is exhaustive over the grid shapes (at most a few thousand
//! for 1472 tiles): cost = exchange + compute + syncs, ties broken by fewer
//! tiles; the best rejected candidates and why they lost are kept for the
//! plan report.

use std::fmt;

use ipuc_ipu_arch::MachineModel;

use crate::codelets::amp::{AmpBlock, AmpVariant};
use crate::codelets::gelu::{Gelu, GeluForm};
use crate::codelets::gemm::{GemmCounts, TileGemm};
use crate::codelets::launch::{split, StreamCounts};
use crate::codelets::program::Codelet;
use crate::codelets::subroutine::call_cycles;

/// What a product's tiles do to Y after the product, in place: a bias
/// added along N (the product's initial partials, free), then GELU on
/// every output group (f16 only).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Epilogue {
    /// Y starts from a bias row.
    pub bias: bool,
    /// GELU on Y.
    pub gelu: Option<GeluForm>,
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Estimate {
    /// The broadcast of X blocks (0 with one grid column).
    pub exchange: u64,
    /// The GEMM vertex on the busiest tile.
    pub compute: u64,
    /// The epilogue's launches after it (GELU per output group, with
    /// their calls).
    pub epilogue: u64,
    /// Syncs between the supersteps.
    pub sync: u64,
}

impl Estimate {
    /// All of it.
    pub fn total(&self) -> u64 {
        self.exchange + self.compute + self.epilogue + self.sync
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
    /// Rows of X and Y per tile (the last grid row may hold fewer real rows).
    pub rows: u32,
    /// Output groups per tile (the last grid column may hold fewer).
    pub groups: u32,
    /// Estimated cycles.
    pub estimate: Estimate,
    /// Bytes of the busiest tile.
    pub tile_bytes: u32,
}

impl GemmPlan {
    /// Tiles used.
    pub fn tiles(&self) -> u32 {
        self.grid_rows * self.grid_cols
    }

    /// Tile number of grid position (i, j): row-major from tile 0.
    pub fn tile(&self, i: u32, j: u32) -> u32 {
        i * self.grid_cols + j
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
            k_groups: self.shape.k_groups(),
            n_groups: self.groups,
            input: 0,
            weights: 0,
            output: 0,
            bias: self.shape.epilogue.bias.then_some(0),
        }
    }
}

/// A grid shape that lost, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    /// Grid rows × columns.
    pub grid: (u32, u32),
    /// Its estimate, when it fits.
    pub estimate: Option<Estimate>,
    /// Why it lost.
    pub reason: String,
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
    #[error("no tile grid fits: the smallest blocks need {needed} bytes per tile, {available} are available (plans do not split K yet, so the weights of a column block are replicated on every grid row)")]
    DoesNotFit {
        /// Bytes the smallest candidate needs.
        needed: u64,
        /// Bytes a tile offers.
        available: u64,
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
/// share a pair), the vertex states in region 0.
pub fn tile_bytes(g: &TileGemm, machine: &MachineModel) -> (u64, u64) {
    let pair = u64::from(2 * machine.element_bytes);
    let past = u64::from(AmpBlock::READ_PAST_BYTES);
    let whole = |b: u64| (b + past).div_ceil(pair) * pair;
    let interleaved = whole(g.input_bytes()) + output_span(g, machine) + g.weight_bytes();
    let region0 = g.state_bytes() + u64::from(RESERVED_CODE_BYTES);
    (interleaved, region0)
}

/// Bytes from Y's address to the end of its whole element pairs: Y's
/// buffer, then the bias block (if any) 8 mod 16 bytes after it (its loads
/// and Y's stores share bundles), each with the AMP's read-past bytes.
pub fn output_span(g: &TileGemm, machine: &MachineModel) -> u64 {
    let pair = u64::from(2 * machine.element_bytes);
    let past = u64::from(AmpBlock::READ_PAST_BYTES);
    (bias_offset(g) + g.bias_bytes() + past).div_ceil(pair) * pair
}

/// Offset of the bias block from Y's address (where it would start).
pub fn bias_offset(g: &TileGemm) -> u64 {
    (g.output_bytes() + u64::from(AmpBlock::READ_PAST_BYTES)).next_multiple_of(16) + 8
}

/// Cycles of the epilogue on one tile of `plan` (the GELU launches, one
/// per output group, each called as a subroutine).
pub fn epilogue_cycles(shape: &GemmShape, rows: u32, groups: u32, gelu: &StreamCounts) -> u64 {
    if shape.epilogue.gelu.is_none() {
        return 0;
    }
    let words = rows * shape.variant.out_channels() as u32 / 4;
    let machine = MachineModel::c600();
    u64::from(groups) * (gelu.cycles(&split(words)) + call_cycles(&machine))
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
}

impl PlanCounts {
    /// The counts for `shape`.
    pub fn of(shape: &GemmShape) -> Self {
        PlanCounts {
            gemm: vertex_counts(shape.variant),
            gelu: shape.epilogue.gelu.map(gelu_counts),
        }
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
    };
    probe
        .counts()
        .expect("the probe's parameters are valid for every variant")
}

/// Plans `shape` on `machine`, searching every grid shape.
pub fn plan_gemm(shape: GemmShape, machine: &MachineModel) -> Result<PlanChoice, PlanError> {
    if shape.m == 0 || shape.k == 0 || shape.n == 0 {
        return Err(PlanError::Empty {
            m: shape.m,
            k: shape.k,
            n: shape.n,
        });
    }
    let counts = PlanCounts::of(&shape);
    let ng = shape.n_groups();
    let mut fits: Vec<GemmPlan> = Vec::new();
    let mut too_big: Vec<Rejected> = Vec::new();
    let mut smallest_need = u64::MAX;
    for grid_rows in 1..=shape.m.min(machine.tiles) {
        // Only grids without empty rows or columns: the same blocks with
        // fewer grid rows or columns are the same plan.
        if shape.m.div_ceil(shape.m.div_ceil(grid_rows)) != grid_rows {
            continue;
        }
        for grid_cols in 1..=ng.min(machine.tiles / grid_rows) {
            if ng.div_ceil(ng.div_ceil(grid_cols)) != grid_cols {
                continue;
            }
            match evaluate_with(shape, grid_rows, grid_cols, machine, &counts) {
                Ok(p) => fits.push(p),
                Err((need, r)) => {
                    smallest_need = smallest_need.min(need);
                    if too_big.len() < 3 {
                        too_big.push(r);
                    }
                }
            }
        }
    }
    fits.sort_by_key(|p| (p.estimate.total(), p.tiles(), p.grid_rows));
    let Some(best) = fits.first().cloned() else {
        return Err(PlanError::DoesNotFit {
            needed: smallest_need,
            available: u64::from(machine.sram_end - machine.sram_base),
        });
    };
    let mut rejected: Vec<Rejected> = fits
        .iter()
        .skip(1)
        .take(4)
        .map(|p| Rejected {
            grid: (p.grid_rows, p.grid_cols),
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

/// The plan of `shape` on a `grid_rows x grid_cols` grid (the blocks are
/// the even split; a grid with empty rows or columns shrinks to the grid
/// its blocks need), with its estimate; `Err` with the reason when it does
/// not fit a tile.
pub fn evaluate(
    shape: GemmShape,
    grid_rows: u32,
    grid_cols: u32,
    machine: &MachineModel,
) -> Result<GemmPlan, Rejected> {
    evaluate_with(
        shape,
        grid_rows,
        grid_cols,
        machine,
        &PlanCounts::of(&shape),
    )
    .map_err(|(_, r)| r)
}

fn evaluate_with(
    shape: GemmShape,
    grid_rows: u32,
    grid_cols: u32,
    machine: &MachineModel,
    counts: &PlanCounts,
) -> Result<GemmPlan, (u64, Rejected)> {
    let rows = shape.m.div_ceil(grid_rows);
    let groups = shape.n_groups().div_ceil(grid_cols);
    let (grid_rows, grid_cols) = (shape.m.div_ceil(rows), shape.n_groups().div_ceil(groups));
    let plan = GemmPlan {
        shape,
        grid_rows,
        grid_cols,
        rows,
        groups,
        estimate: Estimate::default(),
        tile_bytes: 0,
    };
    let vertex = plan.vertex();
    let (inter, r0) = tile_bytes(&vertex, machine);
    let interleaved_avail = u64::from(machine.sram_end - machine.interleaved_base);
    let region0_avail = u64::from(machine.interleaved_base - machine.sram_base);
    if inter > interleaved_avail || r0 > region0_avail {
        return Err((
            inter + r0,
            Rejected {
                grid: (grid_rows, grid_cols),
                estimate: None,
                reason: format!(
                    "does not fit: {inter} bytes of interleaved memory (of {interleaved_avail}) and {r0} of region 0 (of {region0_avail}) per tile"
                ),
            },
        ));
    }
    let exchange = if grid_cols > 1 {
        // The row's first tile sends the block once (multicast), four
        // bytes per cycle, after the farthest latency.
        vertex
            .input_bytes()
            .div_ceil(u64::from(machine.exchange_bytes_per_cycle))
            + machine.exchange_latency(0, machine.tiles - 1)
    } else {
        0
    };
    // The exchange superstep ends in a sync; the compute ends the program.
    let syncs = u64::from(grid_cols > 1);
    Ok(GemmPlan {
        estimate: Estimate {
            exchange,
            compute: counts.gemm.cycles(&vertex, machine),
            epilogue: counts
                .gelu
                .as_ref()
                .map_or(0, |g| epilogue_cycles(&shape, rows, groups, g)),
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
            "{} cycles (exchange {}, compute {}, epilogue {}, sync {})",
            self.total(),
            self.exchange,
            self.compute,
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
            "{}x{}x{} {}{}: grid {}x{} ({} tiles), {} rows x {} groups per tile; {}, {} bytes on the busiest tile",
            self.shape.m,
            self.shape.k,
            self.shape.n,
            self.shape.variant.mnemonic(),
            self.shape.epilogue,
            self.grid_rows,
            self.grid_cols,
            self.tiles(),
            self.rows,
            self.groups,
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
    fn a_product_whose_weights_cannot_fit_is_an_error() {
        let e = plan_gemm(shape(1, 1 << 16, 1 << 16), &MachineModel::c600()).unwrap_err();
        assert!(matches!(e, PlanError::DoesNotFit { .. }), "{e}");
        assert!(plan_gemm(shape(0, 4, 4), &MachineModel::c600()).is_err());
    }
}
