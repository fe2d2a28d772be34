// ipu-plan refuses what it cannot plan with the reason, at the op.

// RUN: ipu-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(func.func(ipu-plan))'

// 16 GiB of f32 weights fit no grid, however K and N are split.
func.func @huge(%x: tensor<8x65536xf32>) -> tensor<8x65536xf32> {
  %w = nn.constant dense<0.5> : tensor<65536x65536xf32>
  // expected-error @+1 {{'nn.matmul' op no tile grid fits}}
  %y = nn.matmul %x, %w : tensor<8x65536xf32>, tensor<65536x65536xf32> -> tensor<8x65536xf32>
  return %y : tensor<8x65536xf32>
}

// -----

// Mixed formats have no AMP block yet.
func.func @mixed(%x: tensor<8x16xf16>, %w: tensor<16x16xf32>) -> tensor<8x16xf16> {
  // expected-error @+1 {{can only lower f16 x f16, f32 x f32 and (in an MLP block) f8E4M3FNUZ x f8E4M3FNUZ products to the IPU yet, not tensor<8x16xf16> x tensor<16x16xf32>}}
  %y = nn.matmul %x, %w : tensor<8x16xf16>, tensor<16x16xf32> -> tensor<8x16xf16>
  return %y : tensor<8x16xf16>
}

// -----

// A user-forced grid must exist.
func.func @forced(%x: tensor<8x16xf16>) -> tensor<8x16xf16> {
  %w = nn.constant dense<0.5> : tensor<16x16xf16>
  // expected-error @+1 {{'ipu.plan' grid 9x1x1 is not possible: rows in 1..=8, columns in 1..=1, K parts in 1..=1, at most 1472 tiles}}
  %y = nn.matmul %x, %w {ipu.plan = {grid = array<i64: 9, 1>}} : tensor<8x16xf16>, tensor<16x16xf16> -> tensor<8x16xf16>
  return %y : tensor<8x16xf16>
}

// -----

// A K split's parts sum their partials pairwise, so their number must be a
// power of two: 5 input panels in 3 parts are refused with the reason.
func.func @split3(%x: tensor<8x80xf16>) -> tensor<8x16xf16> {
  %w = nn.constant dense<0.5> : tensor<80x16xf16>
  // expected-error @+1 {{'ipu.plan' grid 1x1x3: a K split must be a power of two of at most 5 (the input panels)}}
  %y = nn.matmul %x, %w {ipu.plan = {grid = array<i64: 1, 1, 3>}} : tensor<8x80xf16>, tensor<80x16xf16> -> tensor<8x16xf16>
  return %y : tensor<8x16xf16>
}

// -----

// 5 input panels in 4 parts of 2 make 3 parts, not a power of two.
func.func @split4of5(%x: tensor<8x80xf16>) -> tensor<8x16xf16> {
  %w = nn.constant dense<0.5> : tensor<80x16xf16>
  // expected-error @+1 {{'ipu.plan' grid 1x1x4: 5 input panels in parts of 2 make 3 parts, not a power of two}}
  %y = nn.matmul %x, %w {ipu.plan = {grid = array<i64: 1, 1, 4>}} : tensor<8x80xf16>, tensor<80x16xf16> -> tensor<8x16xf16>
  return %y : tensor<8x16xf16>
}
