// ipu-lower refuses a function it cannot lower yet with one error that
// lists every op it cannot handle (the first as the error, the rest as
// notes), so a user sees the whole gap at once.

// RUN: not ipu-opt %s --split-input-file --pass-pipeline='builtin.module(ipu-lower)' 2>&1 | filecheck %s

// CHECK: lower-errors.mlir:[[@LINE+3]]:8: error: 'nn.tanh' op cannot be lowered to the IPU yet (2 op(s) in this function cannot; the lowering handles one nn.matmul or nn.linear by an nn.constant, with a bias and GELU after it, so far)
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
