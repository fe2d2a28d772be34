//! A pass that replaces a constant leaves its old blob unreferenced, and
//! the pass manager drops it from the resource table after the pass
//! (`ResourceTable::prune_unreferenced`): a model's weights do not stay in
//! memory in every precision they passed through. This fails if the
//! manager stops pruning (the f32 blob stays in the table) or prunes a
//! blob the IR still refers to (the converted weights vanish from the
//! printed module).

use std::sync::Arc;

use ipuc_ir::pass::{parse_pipeline, PassManager, PassManagerOptions, PassRegistry};
use ipuc_ir::{parse_source, print_op, Context, PrintOptions};

/// `x (2x4) * w (4x3)` with `w` a resource blob (f32 1.0 .. 12.0) and a
/// second resource `b` the function keeps using as it is.
const SRC: &str = r#"
func.func @f(%x: tensor<2x4xf32>) -> (tensor<2x3xf32>, tensor<2xi32>) {
  %w = nn.constant dense_resource<w> : tensor<4x3xf32>
  %b = nn.constant dense_resource<b> : tensor<2xi32>
  %y = nn.matmul %x, %w : tensor<2x4xf32>, tensor<4x3xf32> -> tensor<2x3xf32>
  return %y, %b : tensor<2x3xf32>, tensor<2xi32>
}
{-#
  dialect_resources: {
    builtin: {
      w: "0x040000000000803F0000004000004040000080400000A0400000C0400000E0400000004100001041000020410000304100004041",
      b: "0x040000000700000009000000"
    }
  }
#-}
"#;

#[test]
fn converting_the_weights_to_fp8_frees_their_f32_blob() {
    let mut registry = PassRegistry::new();
    ipuc_passes::register_passes(&mut registry).unwrap();
    let mut dialects = ipuc_ir::DialectRegistry::new();
    ipuc_dialects::register_all(&mut dialects);
    let mut ctx = Context::new(Arc::new(dialects));
    let module = parse_source(&mut ctx, "f.mlir", SRC).unwrap().module;
    let f32_blob = ctx.resources().get("w").expect("parsed");
    assert_eq!(f32_blob.blob().map(|b| b.data.len()), Some(48));
    drop(f32_blob);

    let mut pm = PassManager::new(PassManagerOptions::default());
    let pipeline = parse_pipeline(&ipuc_passes::precision::precision_pipeline("fp8")).unwrap();
    pm.add_pipeline(&registry, &pipeline).unwrap();
    pm.run(&mut ctx, module).unwrap();

    let text = print_op(&ctx, module, &PrintOptions::default());
    assert!(
        ctx.resources().get("w").is_none(),
        "the f32 weights stay in the table after their conversion:\n{text}"
    );
    assert!(ctx.resources().get("b").is_some(), "b is still used");
    // The converted weights (small: inline elements) are the codes of
    // w * 2^4, which the module still holds.
    assert!(
        text.contains("[1.600000e+01, 3.200000e+01, 4.800000e+01]")
            && text.contains("{rhs_scale = -4 : i64}"),
        "{text}"
    );
}
