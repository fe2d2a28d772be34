//! `fold-layernorm-affine` on weights held in resources (a model's): each
//! is folded a row at a time from its stored bytes, into a new blob or the
//! released blob of weights folded before. The folded bytes must be those
//! of the whole-matrix arithmetic (`fold_into` over the decoded weights,
//! rounded once to f32), the replaced blobs freed, and the names of the
//! new ones what they were when every blob stayed until the end.

use std::sync::Arc;

use ipuc_dialects::nn::{self, elements};
use ipuc_ir::float_format;
use ipuc_ir::pass::{parse_pipeline, PassManager, PassManagerOptions, PassRegistry};
use ipuc_ir::types::FloatKind;
use ipuc_ir::{parse_source, print_op, Context, PrintOptions, Type, WalkOrder};
use ipuc_passes::fold_layernorm::fold_into;

const C: usize = 12;
const N: usize = 10;

/// Deterministic f32 values of varied magnitude (products round).
fn values(seed: u32, n: usize) -> Vec<f64> {
    (0..n as u32)
        .map(|i| {
            let h = (i.wrapping_add(seed).wrapping_mul(2_654_435_761) >> 8) as f64;
            f64::from(((h / 16_777_216.0 - 0.5) * 3.7) as f32)
        })
        .collect()
}

fn hex(values: &[f64]) -> String {
    let bytes = float_format::encode_all(FloatKind::F32, values);
    let mut s = String::from("0x04000000");
    for b in bytes {
        s.push_str(&format!("{b:02X}"));
    }
    s
}

#[test]
fn resource_weights_fold_as_the_whole_matrix_arithmetic() {
    // Two LayerNorms, each read by one product of the same shape: the
    // second product's folded weights reuse the first's released blob.
    let gammas = [values(1, C), values(2, C)];
    let betas = [values(3, C), values(4, C)];
    let ws = [values(5, C * N), values(6, C * N)];
    let bs = [values(7, N), values(8, N)];
    let src = format!(
        r#"
func.func @f(%x: tensor<2x{C}xf32>) -> (tensor<2x{N}xf32>, tensor<2x{N}xf32>) {{
  %g0 = nn.constant dense_resource<g0> : tensor<{C}xf32>
  %s0 = nn.constant dense_resource<s0> : tensor<{C}xf32>
  %w0 = nn.constant dense_resource<w0> : tensor<{C}x{N}xf32>
  %b0 = nn.constant dense_resource<b0> : tensor<{N}xf32>
  %g1 = nn.constant dense_resource<g1> : tensor<{C}xf32>
  %s1 = nn.constant dense_resource<s1> : tensor<{C}xf32>
  %w1 = nn.constant dense_resource<w1> : tensor<{C}x{N}xf32>
  %b1 = nn.constant dense_resource<b1> : tensor<{N}xf32>
  %0 = nn.layer_normalization %x, %g0, %s0 {{axis = -1 : i64, epsilon = 1.0e-06 : f32}} : tensor<2x{C}xf32>, tensor<{C}xf32>, tensor<{C}xf32> -> tensor<2x{C}xf32>
  %1 = nn.linear %0, %w0, %b0 : tensor<2x{C}xf32>, tensor<{C}x{N}xf32>, tensor<{N}xf32> -> tensor<2x{N}xf32>
  %2 = nn.layer_normalization %x, %g1, %s1 {{axis = -1 : i64, epsilon = 1.0e-06 : f32}} : tensor<2x{C}xf32>, tensor<{C}xf32>, tensor<{C}xf32> -> tensor<2x{C}xf32>
  %3 = nn.linear %2, %w1, %b1 : tensor<2x{C}xf32>, tensor<{C}x{N}xf32>, tensor<{N}xf32> -> tensor<2x{N}xf32>
  return %1, %3 : tensor<2x{N}xf32>, tensor<2x{N}xf32>
}}
{{-#
  dialect_resources: {{
    builtin: {{
      g0: "{}", s0: "{}", w0: "{}", b0: "{}",
      g1: "{}", s1: "{}", w1: "{}", b1: "{}"
    }}
  }}
#-}}
"#,
        hex(&gammas[0]),
        hex(&betas[0]),
        hex(&ws[0]),
        hex(&bs[0]),
        hex(&gammas[1]),
        hex(&betas[1]),
        hex(&ws[1]),
        hex(&bs[1]),
    );
    let mut registry = PassRegistry::new();
    ipuc_passes::register_passes(&mut registry).unwrap();
    let mut dialects = ipuc_ir::DialectRegistry::new();
    ipuc_dialects::register_all(&mut dialects);
    let mut ctx = Context::new(Arc::new(dialects));
    let module = parse_source(&mut ctx, "f.mlir", &src).unwrap().module;
    let mut pm = PassManager::new(PassManagerOptions::default());
    let pipeline = parse_pipeline("builtin.module(func.func(fold-layernorm-affine))").unwrap();
    pm.add_pipeline(&registry, &pipeline).unwrap();
    pm.run(&mut ctx, module).unwrap();
    let text = print_op(&ctx, module, &PrintOptions::default());

    // The products' biases, in order.
    let mut biases = Vec::new();
    ctx.walk(module, WalkOrder::PreOrder, &mut |ctx, op| {
        if ctx.name_str(op) == nn::LINEAR {
            let d = ctx.defining_op(ctx.operand(op, 2)).expect("a constant");
            biases.push(ctx.attr(d, "value").expect("a value").clone());
        }
    });

    // The replaced weights are gone; the folded ones have the names they
    // had when every replaced blob stayed in the table until the end.
    for name in ["w0", "w1"] {
        assert!(ctx.resources().get(name).is_none(), "{name} stays:\n{text}");
    }
    for (i, name) in ["folded_w", "folded_w_1"].into_iter().enumerate() {
        let blob = ctx.resources().get(name).expect("folded weights");
        let data = &blob.blob().expect("with data").data;
        let mut w = ws[i].clone();
        let mut b = bs[i].clone();
        fold_into(&gammas[i], &betas[i], &mut w, &mut b);
        assert_eq!(
            data[..],
            float_format::encode_all(FloatKind::F32, &w)[..],
            "{name}"
        );
        // The bias (10 elements: inline) holds the whole-matrix sums.
        let want = elements::from_floats(&Type::tensor(&[N as i64], Type::f32()), &b)
            .expect("f32 elements");
        assert!(biases.contains(&want), "{name}: {want} not in\n{text}");
    }
}
