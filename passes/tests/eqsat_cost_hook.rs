//! `eqsat-fuse` prices its extraction with the cost model installed on its
//! `cost-model` hook, and with `DefaultCostModel` when none is installed.

use std::sync::Arc;

use ipuc_ir::pass::{parse_pipeline, PassManager, PassManagerOptions, PassRegistry};
use ipuc_ir::{parse_source, print_op, Context, PrintOptions};
use ipuc_passes::eqsat::{CostModel, DefaultCostModel, OpCostQuery, COST_MODEL};

/// The default model, except that a fused `nn.linear` costs more than anything.
struct NoLinear;

impl CostModel for NoLinear {
    fn name(&self) -> &str {
        "no-linear"
    }
    fn op_cost(&self, op: &OpCostQuery<'_>) -> f64 {
        if op.name == "nn.linear" {
            1e30
        } else {
            DefaultCostModel.op_cost(op)
        }
    }
}

const SRC: &str = r#"
func.func @f(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  %0 = nn.matmul %x, %w : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xf32>
  %1 = nn.add %0, %b : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}
"#;

fn fuse(registry: &PassRegistry) -> String {
    let mut ctx = Context::new(ipuc_dialects::registry());
    let module = parse_source(&mut ctx, "f.mlir", SRC).unwrap().module;
    let pipeline = parse_pipeline("builtin.module(func.func(eqsat-fuse))").unwrap();
    let mut pm = PassManager::new(PassManagerOptions::default());
    pm.add_pipeline(registry, &pipeline).unwrap();
    pm.run(&mut ctx, module).unwrap();
    print_op(&ctx, module, &PrintOptions::default())
}

#[test]
fn extraction_uses_the_installed_cost_model() {
    let mut registry = PassRegistry::new();
    ipuc_passes::register_passes(&mut registry).unwrap();
    let fused = fuse(&registry);
    assert!(fused.contains("nn.linear"), "{fused}");

    registry
        .install_hook(&COST_MODEL, "no-linear", Arc::new(NoLinear))
        .unwrap();
    let kept = fuse(&registry);
    assert!(!kept.contains("nn.linear"), "{kept}");
    assert!(kept.contains("nn.matmul"), "{kept}");
    assert!(registry
        .help()
        .contains("hook cost-model = no-linear - Prices each op"));
}
