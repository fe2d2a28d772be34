// ipu-lower refuses a function it cannot lower yet with one error that
// lists every op it cannot handle (the first as the error, the rest as
// notes), so a user sees the whole gap at once.

// RUN: not ipu-opt %s --split-input-file --pass-pipeline='builtin.module(ipu-lower)' 2>&1 | filecheck %s

// CHECK: lower-errors.mlir:[[@LINE+3]]:8: error: 'nn.tanh' op cannot be lowered to the IPU yet (2 op(s) in this function cannot; the lowering handles one nn.matmul or nn.linear by an nn.constant with a bias and GELU after it, the MLP and attention blocks, and chains of blocks: a SigLIP encoder from its patch embedding to its pooling head)
// CHECK: lower-errors.mlir:[[@LINE+4]]:8: note: 'nn.mul' cannot be lowered yet
func.func @block(%x: tensor<8x16xf16>) -> tensor<8x16xf16> {
  %g = nn.tanh %x : tensor<8x16xf16> -> tensor<8x16xf16>
  %w = nn.constant dense<0.5> : tensor<16x16xf16>
  %y = nn.mul %g, %x : tensor<8x16xf16>, tensor<8x16xf16> -> tensor<8x16xf16>
  return %y : tensor<8x16xf16>
}

// -----

// Ops the lowering knows are refused where they are not the product's
// epilogue: here the GELU runs on the input, before the product.
// CHECK: lower-errors.mlir:[[@LINE+3]]:8: error: 'nn.gelu' op is not part of the product's epilogue (a bias row, then GELU), which is all the lowering runs after a product yet
func.func @gelu_first(%x: tensor<8x16xf16>) -> tensor<8x16xf16> {
  %w = nn.constant dense<0.5> : tensor<16x16xf16>
  %g = nn.gelu %x : tensor<8x16xf16> -> tensor<8x16xf16>
  %y = nn.matmul %x, %w : tensor<8x16xf16>, tensor<16x16xf16> -> tensor<8x16xf16>
  return %y : tensor<8x16xf16>
}

// -----

// The GELU codelet is f16: an f32 product followed by GELU is refused at
// the GELU, with what to do.
// CHECK: lower-errors.mlir:[[@LINE+4]]:8: error: 'nn.gelu' op GELU after a product lowers to the IPU in f16 only yet (convert the function with --precision fp16)
func.func @gelu_f32(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %w = nn.constant dense<0.5> : tensor<16x16xf32>
  %y = nn.matmul %x, %w : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
  %g = nn.gelu %y : tensor<8x16xf32> -> tensor<8x16xf32>
  return %g : tensor<8x16xf32>
}

// -----

// A LayerNorm makes the function an MLP block candidate; the block's input
// must be f16 (after --precision fp16 or fp8), and an f32 one is refused
// at the LayerNorm.
// CHECK: lower-errors.mlir:[[@LINE+4]]:9: error: 'nn.layer_normalization' op the MLP block's input must be f16 (convert the function with --precision fp16 or fp8)
func.func @mlp_f32(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %g = nn.constant dense<1.0> : tensor<16xf32>
  %b = nn.constant dense<0.0> : tensor<16xf32>
  %ln = nn.layer_normalization %x, %g, %b {axis = -1 : i64, epsilon = 1.000000e-06 : f32} : tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<4x16xf32>
  %w1 = nn.constant dense<0.5> : tensor<16x32xf32>
  %b1 = nn.constant dense<0.1> : tensor<32xf32>
  %h = nn.linear %ln, %w1, %b1 : tensor<4x16xf32>, tensor<16x32xf32>, tensor<32xf32> -> tensor<4x32xf32>
  %a = nn.gelu %h : tensor<4x32xf32> -> tensor<4x32xf32>
  %w2 = nn.constant dense<0.5> : tensor<32x16xf32>
  %y = nn.linear %a, %w2 : tensor<4x32xf32>, tensor<32x16xf32> -> tensor<4x16xf32>
  %r = nn.add %x, %y : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

// -----

// Without the residual add the function is not an MLP block: the error
// names the op where the pattern stops.
// CHECK: lower-errors.mlir:[[@LINE+10]]:8: error: 'nn.linear' op fc2's result is not added to the LayerNorm's input; the lowering takes LayerNorm, fc1 (bias, GELU), fc2, and the residual add of the LayerNorm's input as an MLP block
func.func @mlp_no_residual(%x: tensor<4x16xf16>) -> tensor<4x16xf16> {
  %g = nn.constant dense<1.0> : tensor<16xf16>
  %b = nn.constant dense<0.0> : tensor<16xf16>
  %ln = nn.layer_normalization %x, %g, %b {axis = -1 : i64, epsilon = 1.000000e-06 : f32} : tensor<4x16xf16>, tensor<16xf16>, tensor<16xf16> -> tensor<4x16xf16>
  %w1 = nn.constant dense<0.5> : tensor<16x32xf16>
  %b1 = nn.constant dense<0.1> : tensor<32xf16>
  %h = nn.linear %ln, %w1, %b1 : tensor<4x16xf16>, tensor<16x32xf16>, tensor<32xf16> -> tensor<4x32xf16>
  %a = nn.gelu %h : tensor<4x32xf16> -> tensor<4x32xf16>
  %w2 = nn.constant dense<0.5> : tensor<32x16xf16>
  %y = nn.linear %a, %w2 : tensor<4x32xf16>, tensor<32x16xf16> -> tensor<4x16xf16>
  return %y : tensor<4x16xf16>
}

// -----

// The hidden size must be a multiple of 16 (LayerNorm's rows feed fc1's
// 16-channel panels whole).
// CHECK: lower-errors.mlir:[[@LINE+4]]:9: error: 'nn.layer_normalization' op cannot plan the MLP block: the hidden size 24 is not a multiple of 16
func.func @mlp_hidden_24(%x: tensor<4x24xf16>) -> tensor<4x24xf16> {
  %g = nn.constant dense<1.0> : tensor<24xf16>
  %b = nn.constant dense<0.0> : tensor<24xf16>
  %ln = nn.layer_normalization %x, %g, %b {axis = -1 : i64, epsilon = 1.000000e-06 : f32} : tensor<4x24xf16>, tensor<24xf16>, tensor<24xf16> -> tensor<4x24xf16>
  %w1 = nn.constant dense<0.5> : tensor<24x32xf16>
  %b1 = nn.constant dense<0.1> : tensor<32xf16>
  %h = nn.linear %ln, %w1, %b1 : tensor<4x24xf16>, tensor<24x32xf16>, tensor<32xf16> -> tensor<4x32xf16>
  %a = nn.gelu %h : tensor<4x32xf16> -> tensor<4x32xf16>
  %w2 = nn.constant dense<0.5> : tensor<32x24xf16>
  %y = nn.linear %a, %w2 : tensor<4x32xf16>, tensor<32x24xf16> -> tensor<4x24xf16>
  %r = nn.add %x, %y : tensor<4x24xf16>, tensor<4x24xf16> -> tensor<4x24xf16>
  return %r : tensor<4x24xf16>
}

// -----

// FP8 products lower inside an MLP block only: a lone one (its scale would
// have no consumer to undo it) is refused at the product.
// CHECK: lower-errors.mlir:[[@LINE+4]]:8: error: 'nn.matmul' op FP8 products lower to the IPU inside an MLP block only yet
func.func @fp8_alone(%x: tensor<8x32xf16>) -> tensor<8x16xf16> {
  %a = nn.cast %x {to = f8E4M3FNUZ} : tensor<8x32xf16> -> tensor<8x32xf8E4M3FNUZ>
  %w = nn.constant dense<0.5> : tensor<32x16xf8E4M3FNUZ>
  %y = nn.matmul %a, %w {rhs_scale = -3 : i64} : tensor<8x32xf8E4M3FNUZ>, tensor<32x16xf8E4M3FNUZ> -> tensor<8x16xf16>
  return %y : tensor<8x16xf16>
}

// -----

// FP8 weights with f16 activations (convert-precision with
// fp8-activations=false): the FP8 AMP needs FP8 on both sides.
// CHECK: lower-errors.mlir:[[@LINE+3]]:8: error: 'nn.matmul' op FP8 weights with f16 activations do not lower to the IPU yet
func.func @fp8_weights_f16_activations(%x: tensor<8x32xf16>) -> tensor<8x16xf16> {
  %w = nn.constant dense<0.5> : tensor<32x16xf8E4M3FNUZ>
  %y = nn.matmul %x, %w {rhs_scale = -3 : i64} : tensor<8x32xf16>, tensor<32x16xf8E4M3FNUZ> -> tensor<8x16xf16>
  return %y : tensor<8x16xf16>
}
