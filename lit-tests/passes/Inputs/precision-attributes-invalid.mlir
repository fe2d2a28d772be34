// The attributes convert-precision writes, misused: the nn verifiers
// reject them with a located error.

func.func @rhs_scale_on_f16(%x: tensor<2x4xf16>, %w: tensor<4x3xf16>) -> tensor<2x3xf16> {
  // expected-error @+1 {{'nn.linear' op 'rhs_scale' scales 8-bit float weights, but the right operand is 'tensor<4x3xf16>'}}
  %0 = nn.linear %x, %w {rhs_scale = -3 : i64} : tensor<2x4xf16>, tensor<4x3xf16> -> tensor<2x3xf16>
  return %0 : tensor<2x3xf16>
}

// -----

func.func @narrow_accumulator(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'nn.softmax' op 'acc_type' f16 is narrower than the input's element type f32}}
  %0 = nn.softmax %x {acc_type = f16} : tensor<2x4xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @integer_accumulator(%x: tensor<2x4xf16>, %g: tensor<4xf16>) -> tensor<2x4xf16> {
  // expected-error @+1 {{'nn.layer_normalization' op 'acc_type' must be a float type for a float input, but is 'i32'}}
  %0 = nn.layer_normalization %x, %g {acc_type = i32} : tensor<2x4xf16>, tensor<4xf16> -> tensor<2x4xf16>
  return %0 : tensor<2x4xf16>
}
