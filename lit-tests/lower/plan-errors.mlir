// ipu-plan refuses what it cannot plan with the reason, at the op.

// RUN: ipu-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(func.func(ipu-plan))'

// In f32 the MLP up-projection's weights, replicated on every grid row
// (plans do not split K yet), fit no grid.
func.func @f32_mlp_up(%x: tensor<729x1152xf32>) -> tensor<729x4304xf32> {
  %w = nn.constant dense<0.5> : tensor<1152x4304xf32>
  // expected-error @+1 {{'nn.matmul' op no tile grid fits}}
  %y = nn.matmul %x, %w : tensor<729x1152xf32>, tensor<1152x4304xf32> -> tensor<729x4304xf32>
  return %y : tensor<729x4304xf32>
}

// -----

// Mixed formats have no AMP block yet.
func.func @mixed(%x: tensor<8x16xf16>, %w: tensor<16x16xf32>) -> tensor<8x16xf16> {
  // expected-error @+1 {{can only lower f16 x f16 and f32 x f32 products to the IPU yet, not tensor<8x16xf16> x tensor<16x16xf32>}}
  %y = nn.matmul %x, %w : tensor<8x16xf16>, tensor<16x16xf32> -> tensor<8x16xf16>
  return %y : tensor<8x16xf16>
}

// -----

// A user-forced grid must exist.
func.func @forced(%x: tensor<8x16xf16>) -> tensor<8x16xf16> {
  %w = nn.constant dense<0.5> : tensor<16x16xf16>
  // expected-error @+1 {{'ipu.plan' grid 9x1 is not possible: rows in 1..=8, columns in 1..=1, at most 1472 tiles}}
  %y = nn.matmul %x, %w {ipu.plan = {grid = array<i64: 9, 1>}} : tensor<8x16xf16>, tensor<16x16xf16> -> tensor<8x16xf16>
  return %y : tensor<8x16xf16>
}
