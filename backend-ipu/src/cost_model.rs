//! The IPU's extraction cost model for `eqsat-fuse`: estimated cycles of
//! one `nn` op spread over the whole chip, from the machine model
//! (`shared/ipu-machine.md`):
//!
//! - matrix work at the AMP rate: per tile per cycle 64 MAC for FP16, 16 for
//!   FP32, 128 for FP8 (E4M3) weights with FP16 partials;
//! - elementwise work at the vector rate: 2 f32 or 4 f16 lanes per tile per
//!   cycle, times a per-function instruction count;
//! - every operand and result byte crosses the exchange once, at 4 bytes per
//!   cycle per tile;
//! - each op is one BSP superstep, paying the chip-wide sync.
//!
//! Views (reshape, split, ...) are free apart from a nominal cycle: the
//! planner picks layouts so that they move nothing. The model is for ranking
//! alternative graphs, not a prediction of a compiled program's cycles.

use ipuc_ir::Type;
use ipuc_passes::eqsat::cost::{is_view, tensor_bytes};
use ipuc_passes::eqsat::{CostModel, OpCostQuery};

use ipuc_ipu_arch::machine::MachineModel;

/// AMP multiply-accumulates per tile per cycle for an input element type.
fn amp_macs_per_cycle(input: &Type, weight: &Type, has_fp8: bool) -> f64 {
    let bits = |t: &Type| t.int_or_float_bit_width().unwrap_or(32);
    match (bits(input), bits(weight)) {
        (8, 8) if has_fp8 => 128.0,
        (16 | 8, 16 | 8) => 64.0,
        _ => 16.0,
    }
}

/// Vector lanes per tile per cycle for an element type (2 f32, 4 f16).
fn vector_lanes(element: &Type) -> f64 {
    match element.int_or_float_bit_width() {
        Some(w) if w <= 16 => 4.0,
        _ => 2.0,
    }
}

/// Vector instructions per element of an op (transcendentals take several).
fn instructions_per_element(name: &str) -> f64 {
    match name {
        "nn.exp" | "nn.tanh" | "nn.erf" | "nn.log" | "nn.sigmoid" | "nn.pow" => 8.0,
        "nn.sqrt" | "nn.div" | "nn.reciprocal" => 4.0,
        // max, subtract, exp, sum, scale.
        "nn.softmax" => 12.0,
        // the tanh form's polynomial and tanh.
        "nn.gelu" => 12.0,
        // mean, centre, square, mean, rsqrt, scale, shift.
        "nn.layer_normalization" => 8.0,
        _ => 1.0,
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
}

impl CostModel for IpuCostModel {
    fn name(&self) -> &str {
        "ipu"
    }

    fn op_cost(&self, op: &OpCostQuery<'_>) -> f64 {
        if is_view(op.name) {
            return 1.0;
        }
        let tiles = f64::from(self.machine.tiles);
        let element = op
            .results
            .first()
            .and_then(|t| t.element_type())
            .cloned()
            .unwrap_or_else(Type::f32);
        let macs = op.macs() as f64;
        let matrix = if macs > 0.0 {
            let weight = op
                .operands
                .get(1)
                .and_then(|t| t.element_type())
                .cloned()
                .unwrap_or_else(|| element.clone());
            macs / (tiles * amp_macs_per_cycle(&element, &weight, self.machine.has_fp8))
        } else {
            0.0
        };
        // Contractions run on the AMP; their elementwise epilogue (a bias)
        // overlaps with it.
        let vector = if macs > 0.0 {
            0.0
        } else {
            op.result_elements(0) as f64 * instructions_per_element(op.name)
                / (tiles * vector_lanes(&element))
        };
        let bytes: u64 = op.operands.iter().chain(op.results).map(tensor_bytes).sum();
        let exchange = bytes as f64 / (tiles * f64::from(self.machine.exchange_bytes_per_cycle));
        f64::from(self.machine.sync_latency) + matrix + vector + exchange
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ipuc_ir::Dictionary;

    fn cost(name: &str, operands: &[Type], results: &[Type]) -> f64 {
        IpuCostModel::c600().op_cost(&OpCostQuery {
            name,
            operands,
            results,
            attributes: &Dictionary::new(),
        })
    }

    #[test]
    fn matmul_runs_at_the_amp_rate() {
        let a = Type::tensor(&[1472, 64], Type::f16());
        let b = Type::tensor(&[64, 64], Type::f16());
        let c = Type::tensor(&[1472, 64], Type::f16());
        // 1472*64*64 MACs at 64 MAC/cycle/tile over 1472 tiles: 64 cycles.
        let bytes = (1472 * 64 + 64 * 64 + 1472 * 64) * 2;
        let want = 600.0 + 64.0 + bytes as f64 / (1472.0 * 4.0);
        let got = cost(
            "nn.matmul",
            &[a.clone(), b.clone()],
            std::slice::from_ref(&c),
        );
        assert!((got - want).abs() < 1e-9, "{got} vs {want}");
        // FP32 is four times slower on the AMP.
        let f = |t: &Type| Type::tensor(t.shape().unwrap(), Type::f32());
        let got32 = cost("nn.matmul", &[f(&a), f(&b)], &[f(&c)]);
        assert!(got32 > got + 3.0 * 64.0 - 1e-9);
    }

    #[test]
    fn fusion_saves_a_sync_and_views_are_free() {
        let x = Type::tensor(&[729, 4304], Type::f32());
        let one = std::slice::from_ref(&x);
        let tanh = cost("nn.tanh", one, one);
        let gelu = cost("nn.gelu", one, one);
        let mul = cost("nn.mul", &[x.clone(), x.clone()], one);
        assert!(gelu < tanh + 6.0 * mul);
        let r = Type::tensor(&[729, 4, 1076], Type::f32());
        assert_eq!(cost("nn.reshape", &[x], &[r]), 1.0);
    }
}
