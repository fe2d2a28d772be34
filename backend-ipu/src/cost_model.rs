//! The IPU's extraction cost model for `eqsat-fuse`: the cycles of one op
//! spread evenly over the chip's tiles. Compute cycles come from the
//! codelets' own estimates ([`crate::codelets::estimate`], the single source
//! of cycle costs), chosen through what the op says it does (its
//! interfaces, [`ipuc_ir::interfaces`]); the sync and the exchange come from
//! the machine model (`shared/ipu-machine.md`):
//!
//! - the products of a [`Contraction`] run on the AMP: each is cut into
//!   weight panels of the variant's input x output channels, the panels (or,
//!   with fewer panels than tiles, their rows) are spread over the tiles, and
//!   a tile pays the AMP codelet's estimate for its blocks. The variant
//!   follows the operand and accumulator types ([`amp_kernel`]);
//! - elementwise work (an [`Elementwise`] op's, and a reduction's work per
//!   element) runs on the vector unit: its flops as the binary elementwise
//!   codelet over `flops x elements`, its special functions as the GELU
//!   codelet's polynomial sequence over `special x elements` (the machine has
//!   no special-function instructions);
//! - each pass of a [`Reduction`] is one row-reduction codelet launch;
//! - every operand and result byte crosses the exchange once, and each op is
//!   one BSP superstep, paying the chip-wide sync.
//!
//! Views are free apart from a nominal cycle; ops that declare none of these
//! interfaces (transposes, concatenations, gathers) pay the sync and the
//! exchange. The model ranks alternative graphs; it is not a prediction of a
//! compiled program's cycles (the planner will choose distributions that an
//! even spread does not).
//!
//! [`Contraction`]: ipuc_ir::interfaces::Contraction
//! [`Elementwise`]: ipuc_ir::interfaces::Elementwise
//! [`Reduction`]: ipuc_ir::interfaces::Reduction

use ipuc_ir::interfaces::{CombiningKind, ContractionShape, ElementWork, ReductionShape};
use ipuc_ir::Type;
use ipuc_passes::eqsat::{CostModel, OpCostQuery};

use ipuc_ipu_arch::machine::MachineModel;

use crate::codelets::amp::{AmpVariant, MAX_ROWS};
use crate::codelets::elementwise::VecType;
use crate::codelets::estimate;
use crate::codelets::reduce::ReduceOp;
use crate::codelets::CodeletError;

/// The AMP codelet that computes a product.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AmpKernel {
    /// An [`crate::codelets::amp::AmpBlock`] with this instruction.
    Block(AmpVariant),
    /// FP8 weights with f16 activations cast in the same launch
    /// ([`crate::codelets::amp_f16acts::AmpF8WeightsF16Acts`]).
    F8WeightsF16Acts,
}

impl AmpKernel {
    /// The instruction the kernel's loop runs.
    pub fn variant(self) -> AmpVariant {
        match self {
            AmpKernel::Block(v) => v,
            AmpKernel::F8WeightsF16Acts => AmpVariant::F8,
        }
    }
    /// Tile cycles of one block of `rows` rows.
    fn block_cycles(self, rows: u32) -> u64 {
        known(match self {
            AmpKernel::Block(v) => estimate::amp_block_cycles(v, rows),
            AmpKernel::F8WeightsF16Acts => estimate::amp_f8_f16acts_cycles(rows),
        })
    }
}

/// The AMP kernel for a product, chosen by its input, weight and
/// accumulator element types (not by the result type alone):
///
/// | inputs | weights | accumulator | kernel | MAC/tile cycle |
/// |---|---|---|---|---|
/// | FP8 | FP8 | any | `F8` | 128 |
/// | f16 | FP8 | any | FP8 with the cast fused | 128 |
/// | f16 or FP8 | f16 or FP8 | f16 | `F16` | 64 |
/// | f16 or FP8 | f16 or FP8 | f32 | `F16F32Partials` | 32 |
/// | anything else | | | `F32` | 16 |
///
/// Without FP8 instructions (`has_fp8` false) FP8 operands are widened to
/// f16. Integer products have no AMP instruction; they are priced as f32.
pub fn amp_kernel(product: &ContractionShape, has_fp8: bool) -> AmpKernel {
    let bits = |t: &Type| t.is_float().then(|| t.int_or_float_bit_width()).flatten();
    match (
        bits(&product.lhs),
        bits(&product.rhs),
        bits(&product.result),
    ) {
        (Some(8), Some(8), _) if has_fp8 => AmpKernel::Block(AmpVariant::F8),
        (Some(16), Some(8), _) if has_fp8 => AmpKernel::F8WeightsF16Acts,
        (Some(8 | 16), Some(8 | 16), Some(32)) => AmpKernel::Block(AmpVariant::F16F32Partials),
        (Some(8 | 16), Some(8 | 16), Some(8 | 16)) => AmpKernel::Block(AmpVariant::F16),
        _ => AmpKernel::Block(AmpVariant::F32),
    }
}

/// `ceil(units / tiles)`: one tile's share of an even spread.
fn share(units: u64, tiles: u64) -> u64 {
    units.div_ceil(tiles.max(1))
}

/// A count as a codelet parameter (estimates of larger counts saturate).
fn param(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// A codelet's estimate. The model only asks for valid parameters, so an
/// error is a bug in it or in the codelet; it prices the op out of reach
/// rather than stopping the compile.
fn known(estimate: Result<u64, CodeletError>) -> u64 {
    estimate.unwrap_or_else(|e| {
        tracing::warn!("ipu cost model: no estimate: {e}");
        u64::MAX
    })
}

/// The cycles of an op, by where they go.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OpCycles {
    /// The BSP sync that ends the op's superstep.
    pub sync: f64,
    /// One tile's compute: the codelets' estimates for its share.
    pub compute: f64,
    /// Moving every operand and result byte once.
    pub exchange: f64,
}

impl OpCycles {
    /// The sum.
    pub fn total(&self) -> f64 {
        self.sync + self.compute + self.exchange
    }
}

/// Cycle estimates on one IPU.
#[derive(Clone, Debug)]
pub struct IpuCostModel {
    machine: MachineModel,
}

impl IpuCostModel {
    /// The model of `machine`.
    pub fn new(machine: MachineModel) -> Self {
        IpuCostModel { machine }
    }
    /// The default machine (C600).
    pub fn c600() -> Self {
        Self::new(MachineModel::c600())
    }

    fn tiles(&self) -> u64 {
        u64::from(self.machine.tiles)
    }

    /// One tile's AMP cycles for `product`: `batch x ceil(K / C) x
    /// ceil(N / K_out)` weight panels, each applied to all M rows. With at
    /// least as many panels as tiles a tile runs its share of the panels
    /// over all rows; with fewer, the tiles of a panel split its rows. A
    /// block holds at most [`MAX_ROWS`] rows.
    pub fn contraction_cycles(&self, product: &ContractionShape) -> u64 {
        let kernel = amp_kernel(product, self.machine.has_fp8);
        let v = kernel.variant();
        let panels = product
            .batch
            .saturating_mul(product.k.div_ceil(v.in_channels() as u64))
            .saturating_mul(product.n.div_ceil(v.out_channels() as u64));
        if panels == 0 || product.m == 0 {
            return 0;
        }
        let tiles = self.tiles();
        let (blocks, rows) = if panels >= tiles {
            (share(panels, tiles), product.m)
        } else {
            (1, share(product.m, tiles / panels))
        };
        let max = u64::from(MAX_ROWS);
        let full = (rows - 1) / max;
        let last = rows - full * max;
        let per_panel = full
            .saturating_mul(kernel.block_cycles(MAX_ROWS))
            .saturating_add(kernel.block_cycles(param(last)));
        blocks.saturating_mul(per_panel)
    }

    /// One tile's vector cycles for `work` on each of `elements` elements of
    /// type `element`.
    pub fn elementwise_cycles(&self, work: ElementWork, elements: u64, element: &Type) -> u64 {
        let per_tile = share(elements, self.tiles());
        let ty = match element.int_or_float_bit_width() {
            Some(w) if w <= 16 => VecType::F16,
            _ => VecType::F32,
        };
        let mut cycles = 0u64;
        if work.flops > 0 && per_tile > 0 {
            let len = per_tile.saturating_mul(u64::from(work.flops));
            cycles = cycles.saturating_add(known(estimate::binary_cycles(ty, param(len))));
        }
        if work.special > 0 && per_tile > 0 {
            let len = per_tile.saturating_mul(u64::from(work.special));
            cycles = cycles.saturating_add(known(estimate::gelu_cycles(param(len))));
        }
        cycles
    }

    /// One tile's cycles for `reduction` over elements of type `element`:
    /// a row-reduction launch per pass over its share of the rows (with
    /// fewer rows than tiles, the tiles of a row split it; combining their
    /// partial results is exchange), then the work per element.
    pub fn reduction_cycles(&self, reduction: &ReductionShape, element: &Type) -> u64 {
        if reduction.outer == 0 || reduction.inner == 0 {
            return 0;
        }
        let tiles = self.tiles();
        let (rows, cols) = if reduction.outer >= tiles {
            (share(reduction.outer, tiles), reduction.inner)
        } else {
            (1, share(reduction.inner, tiles / reduction.outer))
        };
        let passes = reduction.passes.iter().fold(0u64, |acc, pass| {
            let op = match pass {
                CombiningKind::Add | CombiningKind::Mul => ReduceOp::Sum,
                CombiningKind::Max | CombiningKind::Min => ReduceOp::Max,
            };
            let launch = estimate::row_reduce_cycles(op, param(rows), param(cols));
            acc.saturating_add(known(launch))
        });
        let per_element =
            self.elementwise_cycles(reduction.per_element, reduction.elements(), element);
        passes.saturating_add(per_element)
    }

    /// The cycles of `op`, by where they go.
    pub fn cycles(&self, op: &OpCostQuery<'_>) -> OpCycles {
        let element = op
            .results
            .first()
            .and_then(|t| t.element_type())
            .cloned()
            .unwrap_or_else(Type::f32);
        let mut compute = op.contractions().iter().fold(0u64, |acc, p| {
            acc.saturating_add(self.contraction_cycles(p))
        });
        if let Some(work) = op.element_work() {
            let elementwise = self.elementwise_cycles(work, op.result_elements(0), &element);
            compute = compute.saturating_add(elementwise);
        }
        if let Some(r) = op.reduction() {
            let input = op
                .operands
                .first()
                .and_then(|t| t.element_type())
                .unwrap_or(&element);
            compute = compute.saturating_add(self.reduction_cycles(&r, input));
        }
        let bytes = op.bytes_moved();
        let tiles = self.tiles() as f64;
        OpCycles {
            sync: f64::from(self.machine.sync_latency),
            compute: compute as f64,
            exchange: bytes as f64 / (tiles * f64::from(self.machine.exchange_bytes_per_cycle)),
        }
    }
}

impl CostModel for IpuCostModel {
    fn name(&self) -> &str {
        "ipu"
    }

    fn op_cost(&self, op: &OpCostQuery<'_>) -> f64 {
        if op.is_view() {
            return 1.0;
        }
        self.cycles(op).total()
    }
}

#[cfg(test)]
mod tests;
