// Contraction results the verifier rejects under the 8-bit float rule
// (lit-tests/nn/contraction-fp8.mlir runs this file).

// An FP8 result would keep 3 significand bits of every sum: the result of
// an FP8 product is f16.
func.func @fp8_result(%x: tensor<2x4xf8E4M3FNUZ>, %w: tensor<4x3xf8E4M3FNUZ>) -> tensor<2x3xf8E4M3FNUZ> {
  // expected-error @+1 {{'nn.matmul' op result #0 has type 'tensor<2x3xf8E4M3FNUZ>', but the inferred type is 'tensor<2x3xf16>'}}
  %0 = nn.matmul %x, %w : tensor<2x4xf8E4M3FNUZ>, tensor<4x3xf8E4M3FNUZ> -> tensor<2x3xf8E4M3FNUZ>
  return %0 : tensor<2x3xf8E4M3FNUZ>
}

// -----

// f16, not any wider float: the rule names one result type, so IR that
// means f32 outputs says so with a cast.
func.func @f32_result(%x: tensor<2x4xf8E4M3FNUZ>, %w: tensor<4x3xf8E4M3FNUZ>, %b: tensor<3xf16>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'nn.linear' op result #0 has type 'tensor<2x3xf32>', but the inferred type is 'tensor<2x3xf16>'}}
  %0 = nn.linear %x, %w, %b {rhs_scale = -7 : i64} : tensor<2x4xf8E4M3FNUZ>, tensor<4x3xf8E4M3FNUZ>, tensor<3xf16> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// nn.gemm follows the same rule.
func.func @gemm_fp8_result(%a: tensor<2x4xf8E5M2>, %b: tensor<4x3xf8E5M2>) -> tensor<2x3xf8E5M2> {
  // expected-error @+1 {{'nn.gemm' op result #0 has type 'tensor<2x3xf8E5M2>', but the inferred type is 'tensor<2x3xf16>'}}
  %0 = nn.gemm %a, %b : tensor<2x4xf8E5M2>, tensor<4x3xf8E5M2> -> tensor<2x3xf8E5M2>
  return %0 : tensor<2x3xf8E5M2>
}
