// RUN: ipu-opt %s --split-input-file --verify-diagnostics

func.func @matmul_contraction(%arg0: tensor<729x1152xf32>, %arg1: tensor<1024x4304xf32>) -> tensor<729x4304xf32> {
  // expected-error @+1 {{'nn.matmul' op contraction dimensions differ: 1152 vs 1024}}
  %0 = nn.matmul %arg0, %arg1 : tensor<729x1152xf32>, tensor<1024x4304xf32> -> tensor<729x4304xf32>
  return %0 : tensor<729x4304xf32>
}

// -----

func.func @matmul_batch(%arg0: tensor<2x4x8xf32>, %arg1: tensor<3x8x5xf32>) -> tensor<3x4x5xf32> {
  // expected-error @+1 {{'nn.matmul' op batch dimensions: shapes [2] and [3] are not broadcast-compatible: dimension 2 vs 3 at result axis 0}}
  %0 = nn.matmul %arg0, %arg1 : tensor<2x4x8xf32>, tensor<3x8x5xf32> -> tensor<3x4x5xf32>
  return %0 : tensor<3x4x5xf32>
}

// -----

func.func @add_result_type(%arg0: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{'nn.add' op result #0 has type 'tensor<3x2xf32>', but the inferred type is 'tensor<2x3xf32>'}}
  %0 = nn.add %arg0, %arg0 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @mul_broadcast(%arg0: tensor<2x3xf32>, %arg1: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'nn.mul' op shapes [2x3] and [4] are not broadcast-compatible: dimension 3 vs 4 at result axis 1}}
  %0 = nn.mul %arg0, %arg1 : tensor<2x3xf32>, tensor<4xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @sub_element_types(%arg0: tensor<2xf32>, %arg1: tensor<2xf16>) -> tensor<2xf32> {
  // expected-error @+1 {{'nn.sub' op operands have different element types: 'f32' vs 'f16'}}
  %0 = nn.sub %arg0, %arg1 : tensor<2xf32>, tensor<2xf16> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @exp_of_int(%arg0: tensor<2xi32>) -> tensor<2xi32> {
  // expected-error @+1 {{'nn.exp' op operand must have a floating-point element type, but got 'i32'}}
  %0 = nn.exp %arg0 : tensor<2xi32> -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

func.func @where_condition(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'nn.where' op operand #0 ('condition') must be ranked tensor of i1, but got 'tensor<2xf32>'}}
  %0 = nn.where %arg0, %arg0, %arg0 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @cast_target(%arg0: tensor<2xf32>) -> tensor<2xbf16> {
  // expected-error @+1 {{'nn.cast' op result #0 has type 'tensor<2xbf16>', but the inferred type is 'tensor<2xf16>'}}
  %0 = nn.cast %arg0 {to = f16} : tensor<2xf32> -> tensor<2xbf16>
  return %0 : tensor<2xbf16>
}

// -----

func.func @softmax_axis(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'nn.softmax' op axis 2 is out of range for rank 2 (expected [-2, 1])}}
  %0 = nn.softmax %arg0 {axis = 2 : i64} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @softmax_axis_kind(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'nn.softmax' op attribute 'axis' failed to satisfy constraint: 64-bit signless integer attribute}}
  %0 = nn.softmax %arg0 {axis = 1 : i32} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @gemm_operands(%arg0: tensor<2x3xf32>, %arg1: tensor<2xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'nn.gemm' op requires 2 to 3 operands, but found 4}}
  %0 = nn.gemm %arg0, %arg0, %arg1, %arg1 {transB = 1 : i64} : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

func.func @gemm_bias(%arg0: tensor<2x3xf32>, %arg1: tensor<3xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'nn.gemm' op C of shape [3] does not broadcast to the result shape [2x2]}}
  %0 = nn.gemm %arg0, %arg0, %arg1 {transB = 1 : i64} : tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xf32> -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

func.func @linear_bias(%arg0: tensor<2x8xf32>, %arg1: tensor<8x4xf32>, %arg2: tensor<8xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'nn.linear' op bias must have shape [4], but has shape [8]}}
  %0 = nn.linear %arg0, %arg1, %arg2 : tensor<2x8xf32>, tensor<8x4xf32>, tensor<8xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @conv_channels(%arg0: tensor<1x3x8x8xf32>, %arg1: tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+1 {{'nn.conv2d' op weight expects 2 input channels per group, but the input has 3 channels in 1 group(s)}}
  %0 = nn.conv2d %arg0, %arg1 : tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32> -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @conv_pads(%arg0: tensor<1x3x8x8xf32>, %arg1: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+1 {{'nn.conv2d' op 'pads' must have 4 elements, but has 2}}
  %0 = nn.conv2d %arg0, %arg1 {pads = array<i64: 1, 1>} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @reshape_count(%arg0: tensor<2x3xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{'nn.reshape' op cannot reshape [2x3] (6 elements) to [4x2] (8 elements)}}
  %0 = nn.reshape %arg0 {shape = array<i64: 4, 2>} : tensor<2x3xf32> -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @reshape_missing_shape(%arg0: tensor<2x3xf32>) -> tensor<6xf32> {
  // expected-error @+1 {{'nn.reshape' op requires attribute 'shape'}}
  %0 = nn.reshape %arg0 : tensor<2x3xf32> -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

func.func @transpose_perm(%arg0: tensor<2x3xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'nn.transpose' op 'perm' [0, 0] is not a permutation of 0..2}}
  %0 = nn.transpose %arg0 {perm = array<i64: 0, 0>} : tensor<2x3xf32> -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

func.func @concat_shapes(%arg0: tensor<2x3xf32>, %arg1: tensor<3x3xf32>) -> tensor<5x3xf32> {
  // expected-error @+1 {{'nn.concat' op operand #1 has shape [3x3], which differs from [2x3] outside axis 1}}
  %0 = nn.concat %arg0, %arg1 {axis = 1 : i64} : tensor<2x3xf32>, tensor<3x3xf32> -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}

// -----

func.func @split_sizes(%arg0: tensor<2x3xf32>) -> tensor<2x1xf32> {
  // expected-error @+1 {{'nn.split' op 'sizes' [1, 1] sum to 2, but axis 1 has size 3}}
  %0:2 = nn.split %arg0 {axis = 1 : i64, sizes = array<i64: 1, 1>} : tensor<2x3xf32> -> (tensor<2x1xf32>, tensor<2x1xf32>)
  return %0#0 : tensor<2x1xf32>
}

// -----

func.func @slice_step(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.slice' op slice step for axis 0 is zero}}
  %0 = nn.slice %arg0 {ends = array<i64: 4>, starts = array<i64: 0>, steps = array<i64: 0>} : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @gather_indices(%arg0: tensor<4xf32>, %arg1: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'nn.gather' op operand #1 ('indices') must be ranked tensor of integers, but got 'tensor<2xf32>'}}
  %0 = nn.gather %arg0, %arg1 : tensor<4xf32>, tensor<2xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @squeeze_axis(%arg0: tensor<1x3xf32>) -> tensor<1xf32> {
  // expected-error @+1 {{'nn.squeeze' op cannot squeeze axis 1 of size 3}}
  %0 = nn.squeeze %arg0 {axes = array<i64: 1>} : tensor<1x3xf32> -> tensor<1xf32>
  return %0 : tensor<1xf32>
}

// -----

func.func @pad_mode(%arg0: tensor<2x3xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'nn.pad' op 'mode' "reflect" is not supported (only "constant")}}
  %0 = nn.pad %arg0 {mode = "reflect", pads = array<i64: 0, 0, 1, 1>} : tensor<2x3xf32> -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @reduce_axes(%arg0: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'nn.reduce_sum' op axis -1 appears more than once in [1, -1]}}
  %0 = nn.reduce_sum %arg0 {axes = array<i64: 1, -1>, keepdims = 0 : i64} : tensor<2x3xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @layer_norm_scale(%arg0: tensor<2x3xf32>, %arg1: tensor<2xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'nn.layer_normalization' op scale of shape [2] does not broadcast to the normalized shape [3]}}
  %0 = nn.layer_normalization %arg0, %arg1 : tensor<2x3xf32>, tensor<2xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @gelu_mode(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'nn.gelu' op 'approximate' must be "none" or "tanh", but is "erf"}}
  %0 = nn.gelu %arg0 {approximate = "erf"} : tensor<2xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @attention_heads(%arg0: tensor<2x5x8xf32>) -> tensor<2x5x8xf32> {
  // expected-error @+1 {{'nn.attention' op query hidden size 8 is not divisible by 3 heads}}
  %0 = nn.attention %arg0, %arg0, %arg0 {heads = 3 : i64} : tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32> -> tensor<2x5x8xf32>
  return %0 : tensor<2x5x8xf32>
}

// -----

func.func @attention_mask(%arg0: tensor<2x5x8xf32>, %arg1: tensor<3x5xf32>) -> tensor<2x5x8xf32> {
  // expected-error @+1 {{'nn.attention' op mask of shape [3x5] does not broadcast to [batch, heads, seq_q, seq_kv] = [2x2x5x5]}}
  %0 = nn.attention %arg0, %arg0, %arg0, %arg1 {heads = 2 : i64} : tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<3x5xf32> -> tensor<2x5x8xf32>
  return %0 : tensor<2x5x8xf32>
}

// -----

func.func @constant_type() -> tensor<3xf32> {
  // expected-error @+1 {{'nn.constant' op result #0 has type 'tensor<3xf32>', but the inferred type is 'tensor<2xf32>'}}
  %0 = "nn.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @and_needs_i1(%arg0: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'nn.and' op 'nn.and' requires i1 operands, got 'f32'}}
  %0 = nn.and %arg0, %arg0 : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @not_needs_i1(%arg0: tensor<3xi32>) -> tensor<3xi32> {
  // expected-error @+1 {{'nn.not' op operand must be a tensor of i1, but got 'tensor<3xi32>'}}
  %0 = nn.not %arg0 : tensor<3xi32> -> tensor<3xi32>
  return %0 : tensor<3xi32>
}

// -----

// nn.gather_elements: data and indices must have the same rank.
func.func @gather_elements_rank(%arg0: tensor<3x4xf32>, %arg1: tensor<4xi64>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.gather_elements' op data and indices must have the same rank >= 1, but have ranks 2 and 1}}
  %0 = nn.gather_elements %arg0, %arg1 {axis = 0 : i64} : tensor<3x4xf32>, tensor<4xi64> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// nn.argmax: the result is i64, whatever the operand's element type.
func.func @argmax_result_type(%arg0: tensor<3x4xf32>) -> tensor<3x1xf32> {
  // expected-error @+1 {{'nn.argmax' op result #0 has type 'tensor<3x1xf32>', but the inferred type is 'tensor<3x1xi64>'}}
  %0 = nn.argmax %arg0 {axis = 1 : i64} : tensor<3x4xf32> -> tensor<3x1xf32>
  return %0 : tensor<3x1xf32>
}

// -----

// nn.argmin: the axis must index the operand.
func.func @argmin_axis(%arg0: tensor<3x4xf32>) -> tensor<3xi64> {
  // expected-error @+1 {{'nn.argmin' op axis 2 is out of range for rank 2 (expected [-2, 1])}}
  %0 = nn.argmin %arg0 {axis = 2 : i64, keepdims = 0 : i64} : tensor<3x4xf32> -> tensor<3xi64>
  return %0 : tensor<3xi64>
}

// -----

func.func @bitwise_on_floats(%arg0: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'nn.bitwise_and' op 'nn.bitwise_and' requires integer operands, got 'f32'}}
  %0 = nn.bitwise_and %arg0, %arg0 : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @bitwise_not_on_i1(%arg0: tensor<3xi1>) -> tensor<3xi1> {
  // expected-error @+1 {{'nn.bitwise_not' op operand must have an integer element type, but got 'i1'}}
  %0 = nn.bitwise_not %arg0 : tensor<3xi1> -> tensor<3xi1>
  return %0 : tensor<3xi1>
}

// -----

func.func @sin_on_integers(%arg0: tensor<3xi32>) -> tensor<3xi32> {
  // expected-error @+1 {{'nn.sin' op operand must have a floating-point element type, but got 'i32'}}
  %0 = nn.sin %arg0 : tensor<3xi32> -> tensor<3xi32>
  return %0 : tensor<3xi32>
}

// -----

func.func @cumsum_axis(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'nn.cumsum' op axis 2 is out of range for rank 2 (expected [-2, 1])}}
  %0 = nn.cumsum %arg0 {axis = 2 : i64} : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Storage-only element types are converted and moved, never computed on.
func.func @add_int4(%arg0: tensor<4xi4>) -> tensor<4xi4> {
  // expected-error @+1 {{'nn.add' op operand #0 has element type 'i4', a storage format with no arithmetic; convert it with nn.cast first}}
  %0 = nn.add %arg0, %arg0 : tensor<4xi4>, tensor<4xi4> -> tensor<4xi4>
  return %0 : tensor<4xi4>
}

// -----

func.func @matmul_float4(%arg0: tensor<2x4xf32>, %arg1: tensor<4x3xf4E2M1FN>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'nn.matmul' op operand #1 has element type 'f4E2M1FN', a storage format with no arithmetic; convert it with nn.cast first}}
  %0 = nn.matmul %arg0, %arg1 : tensor<2x4xf32>, tensor<4x3xf4E2M1FN> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @cast_round_mode(%arg0: tensor<4xf32>) -> tensor<4xf8E8M0FNU> {
  // expected-error @+1 {{'nn.cast' op 'round_mode' must be "up", "down" or "nearest", but is "odd"}}
  %0 = nn.cast %arg0 {to = f8E8M0FNU, round_mode = "odd"} : tensor<4xf32> -> tensor<4xf8E8M0FNU>
  return %0 : tensor<4xf8E8M0FNU>
}
