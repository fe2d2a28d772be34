use std::sync::Arc;

use ipuc_ir::interfaces::ElementWork;
use ipuc_ir::{DialectRegistry, Dictionary, FloatKind, Type};

use super::*;
use crate::codelets::amp::{AmpBlock, AmpMode};
use crate::codelets::amp_f16acts::AmpF8WeightsF16Acts;
use crate::codelets::program::Codelet;

fn registry() -> Arc<DialectRegistry> {
    ipuc_dialects::registry()
}

fn f8() -> Type {
    Type::float(FloatKind::F8E4M3FNUZ)
}

fn t(shape: &[i64], e: Type) -> Type {
    Type::tensor(shape, e)
}

/// The model's cycles for `name` on these types, with the op's registered
/// definition.
fn cycles(model: &IpuCostModel, name: &str, operands: &[Type], results: &[Type]) -> OpCycles {
    let registry = registry();
    let q = OpCostQuery {
        name,
        def: registry.op_def(name),
        operands,
        results,
        attributes: &Dictionary::new(),
    };
    model.cycles(&q)
}

fn cost(name: &str, operands: &[Type], results: &[Type]) -> f64 {
    let registry = registry();
    IpuCostModel::c600().op_cost(&OpCostQuery {
        name,
        def: registry.op_def(name),
        operands,
        results,
        attributes: &Dictionary::new(),
    })
}

/// A C600 cut down to `tiles` tiles.
fn machine(tiles: u32) -> MachineModel {
    MachineModel {
        tiles,
        ..MachineModel::c600()
    }
}

/// The AMP codelet's own estimate for one placed block.
fn amp_estimate(variant: AmpVariant, rows: u32) -> u64 {
    AmpBlock::place(variant, AmpMode::Overwrite, rows, &MachineModel::c600())
        .unwrap()
        .estimate_cycles()
        .unwrap()
}

fn ok(estimate: Result<u64, crate::codelets::CodeletError>) -> u64 {
    estimate.unwrap()
}

#[test]
fn a_matmul_costs_the_amp_codelets_estimate() {
    // One tile, one 16x16 f16 weight panel: one block of all 600 rows.
    let one_tile = IpuCostModel::new(machine(1));
    let (a, b) = (t(&[600, 16], Type::f16()), t(&[16, 16], Type::f16()));
    let c = t(&[600, 16], Type::f16());
    let got = cycles(&one_tile, "nn.matmul", &[a, b], std::slice::from_ref(&c));
    assert_eq!(got.compute, amp_estimate(AmpVariant::F16, 600) as f64);
    assert_eq!(got.total(), got.sync + got.compute + got.exchange);
    // Each row count is the codelet's, not a rate: 601 rows give one
    // worker one more row.
    for rows in [1, 6, 7, 601, 1000] {
        let a = t(&[rows, 16], Type::f16());
        let c = t(&[rows, 16], Type::f16());
        let b = t(&[16, 16], Type::f16());
        let got = cycles(&one_tile, "nn.matmul", &[a, b], &[c]).compute;
        assert_eq!(
            got,
            amp_estimate(AmpVariant::F16, rows as u32) as f64,
            "{rows} rows"
        );
    }
    // K = 48 and N = 32 make 3 x 2 panels: six blocks on the one tile.
    let (a, b) = (t(&[100, 48], Type::f16()), t(&[48, 32], Type::f16()));
    let got = cycles(
        &one_tile,
        "nn.matmul",
        &[a, b],
        &[t(&[100, 32], Type::f16())],
    );
    assert_eq!(got.compute, 6.0 * amp_estimate(AmpVariant::F16, 100) as f64);
}

#[test]
fn a_matmul_spreads_over_the_chip() {
    let c600 = IpuCostModel::c600();
    // One panel over 1472 tiles: 8832 rows are 6 per tile.
    let (a, b) = (t(&[8832, 16], Type::f16()), t(&[16, 16], Type::f16()));
    let got = cycles(&c600, "nn.matmul", &[a, b], &[t(&[8832, 16], Type::f16())]);
    assert_eq!(got.compute, amp_estimate(AmpVariant::F16, 6) as f64);
    // 2 x 2 panels: 368 tiles each, 24 rows per tile.
    let (a, b) = (t(&[8832, 32], Type::f16()), t(&[32, 32], Type::f16()));
    let got = cycles(&c600, "nn.matmul", &[a, b], &[t(&[8832, 32], Type::f16())]);
    assert_eq!(got.compute, amp_estimate(AmpVariant::F16, 24) as f64);
    // 2 batches of 46 x 32 panels (2944): two panels of all 10 rows per tile.
    let a = t(&[2, 10, 16 * 46], Type::f16());
    let b = t(&[2, 16 * 46, 16 * 32], Type::f16());
    let r = t(&[2, 10, 16 * 32], Type::f16());
    let got = cycles(&c600, "nn.matmul", &[a, b], &[r]);
    assert_eq!(got.compute, 2.0 * amp_estimate(AmpVariant::F16, 10) as f64);
}

fn product(lhs: Type, rhs: Type, result: Type) -> ContractionShape {
    ContractionShape {
        batch: 1,
        m: 2400,
        n: 256,
        k: 256,
        lhs,
        rhs,
        result,
    }
}

#[test]
fn the_amp_rate_follows_inputs_and_accumulator() {
    let (f16, f32) = (Type::f16(), Type::f32());
    let kernel =
        |l: &Type, r: &Type, o: &Type| amp_kernel(&product(l.clone(), r.clone(), o.clone()), true);
    // FP16 inputs with FP32 partials: 32 MAC/cycle, not f32's 16.
    let k = kernel(&f16, &f16, &f32);
    assert_eq!(k, AmpKernel::Block(AmpVariant::F16F32Partials));
    assert_eq!(k.variant().macs_per_tile_cycle(), 32);
    assert_eq!(kernel(&f16, &f16, &f16).variant().macs_per_tile_cycle(), 64);
    // FP8 inputs: 128, whatever the accumulator.
    for out in [f8(), f16.clone(), f32.clone()] {
        let k = kernel(&f8(), &f8(), &out);
        assert_eq!(k, AmpKernel::Block(AmpVariant::F8));
        assert_eq!(k.variant().macs_per_tile_cycle(), 128);
    }
    // f16 activations with FP8 weights: the FP8 AMP after a fused cast.
    assert_eq!(kernel(&f16, &f8(), &f16), AmpKernel::F8WeightsF16Acts);
    assert_eq!(kernel(&f32, &f32, &f32), AmpKernel::Block(AmpVariant::F32));
    assert_eq!(
        kernel(&Type::int(8), &Type::int(8), &Type::int(32)).variant(),
        AmpVariant::F32
    );
    // Without FP8 instructions FP8 is widened to f16.
    let bow = amp_kernel(&product(f8(), f8(), f16.clone()), false);
    assert_eq!(bow, AmpKernel::Block(AmpVariant::F16));
}

#[test]
fn contraction_cycles_use_the_chosen_kernels_estimate() {
    let one_tile = IpuCostModel::new(machine(1));
    let (f16, f32) = (Type::f16(), Type::f32());
    // 2400 rows, K = N = 256: the variant decides the panels.
    let panels = |v: AmpVariant| (256 / v.in_channels() as u64) * (256 / v.out_channels() as u64);
    for (l, r, o, v) in [
        (
            f16.clone(),
            f16.clone(),
            f32.clone(),
            AmpVariant::F16F32Partials,
        ),
        (f16.clone(), f16.clone(), f16.clone(), AmpVariant::F16),
        (f8(), f8(), f16.clone(), AmpVariant::F8),
        (f32.clone(), f32.clone(), f32.clone(), AmpVariant::F32),
    ] {
        let got = one_tile.contraction_cycles(&product(l, r, o));
        assert_eq!(got, panels(v) * amp_estimate(v, 2400), "{v:?}");
    }
    // The fused cast's estimate for f16 x FP8 (1200 rows fit a tile with
    // their f16 activations).
    let fused = AmpF8WeightsF16Acts::place(AmpMode::Overwrite, 1200, 0, &MachineModel::c600())
        .unwrap()
        .estimate_cycles()
        .unwrap();
    let got = one_tile.contraction_cycles(&ContractionShape {
        m: 1200,
        ..product(f16.clone(), f8(), f16.clone())
    });
    assert_eq!(got, panels(AmpVariant::F8) * fused);
    // Per MAC the rates are 128 : 64 : 32 : 16 up to the fixed issues.
    let per_mac = |l: Type, r: Type, o: Type| {
        let p = product(l, r, o);
        one_tile.contraction_cycles(&p) as f64 / p.macs() as f64
    };
    let f16_f32 = per_mac(f16.clone(), f16.clone(), f32.clone());
    let fp8 = per_mac(f8(), f8(), f16.clone());
    assert!((f16_f32 * 32.0 - 1.0).abs() < 0.02, "{f16_f32}");
    assert!((fp8 * 128.0 - 1.0).abs() < 0.02, "{fp8}");
}

#[test]
fn elementwise_and_reductions_cost_their_codelets() {
    let one_tile = IpuCostModel::new(machine(1));
    let x = t(&[96, 64], Type::f16());
    let one = std::slice::from_ref(&x);
    // A flop per element: one binary launch over the elements.
    let add = cycles(&one_tile, "nn.add", &[x.clone(), x.clone()], one).compute;
    assert_eq!(
        add,
        ok(estimate::binary_cycles(VecType::F16, 96 * 64)) as f64
    );
    // A special function: the GELU codelet's polynomial sequence.
    let exp = cycles(&one_tile, "nn.exp", one, one).compute;
    assert_eq!(exp, ok(estimate::gelu_cycles(96 * 64)) as f64);
    // gelu (erf form): 4 flops and a special function per element.
    let gelu = cycles(&one_tile, "nn.gelu", one, one).compute;
    let want =
        ok(estimate::binary_cycles(VecType::F16, 4 * 96 * 64)) + ok(estimate::gelu_cycles(96 * 64));
    assert_eq!(gelu, want as f64);
    // A row sum: one row-reduction launch.
    let r = t(&[96, 1], Type::f16());
    let registry = registry();
    let attrs =
        Dictionary::from_entries([("axes".into(), ipuc_ir::Attribute::dense_i64_array(&[1]))]);
    let q = OpCostQuery {
        name: "nn.reduce_sum",
        def: registry.op_def("nn.reduce_sum"),
        operands: one,
        results: std::slice::from_ref(&r),
        attributes: &attrs,
    };
    let sum = one_tile.cycles(&q).compute;
    assert_eq!(
        sum,
        ok(estimate::row_reduce_cycles(ReduceOp::Sum, 96, 64)) as f64
    );
    // Softmax: a max and a sum pass, then 2 flops and an exp per element.
    let q = OpCostQuery {
        name: "nn.softmax",
        def: registry.op_def("nn.softmax"),
        operands: one,
        results: one,
        attributes: &Dictionary::new(),
    };
    let softmax = one_tile.cycles(&q).compute;
    let want = ok(estimate::row_reduce_cycles(ReduceOp::Max, 96, 64))
        + ok(estimate::row_reduce_cycles(ReduceOp::Sum, 96, 64))
        + one_tile.elementwise_cycles(
            ElementWork::flops(2) + ElementWork::special(1),
            96 * 64,
            &Type::f16(),
        );
    assert_eq!(softmax, want as f64);
}

#[test]
fn fusion_saves_a_sync_and_views_are_free() {
    let x = t(&[729, 4304], Type::f32());
    let one = std::slice::from_ref(&x);
    let tanh = cost("nn.tanh", one, one);
    let gelu = cost("nn.gelu", one, one);
    let mul = cost("nn.mul", &[x.clone(), x.clone()], one);
    assert!(gelu < tanh + 6.0 * mul);
    let r = t(&[729, 4, 1076], Type::f32());
    assert_eq!(cost("nn.reshape", one, std::slice::from_ref(&r)), 1.0);
    // An op without interfaces pays the sync and the exchange only.
    let tr = t(&[4304, 729], Type::f32());
    let got = cycles(&IpuCostModel::c600(), "nn.transpose", one, &[tr]);
    assert_eq!(got.compute, 0.0);
    assert_eq!(got.sync, 600.0);
    // An unregistered op has no interfaces either.
    let q = OpCostQuery {
        name: "nn.frobnicate",
        def: None,
        operands: one,
        results: one,
        attributes: &Dictionary::new(),
    };
    assert_eq!(IpuCostModel::c600().cycles(&q).compute, 0.0);
}
