// ipu-lower refuses a function it cannot lower yet with one error that
// lists every op it cannot handle (the first as the error, the rest as
// notes), so a user sees the whole gap at once.

// RUN: not ipu-opt %s --pass-pipeline='builtin.module(ipu-lower)' 2>&1 | filecheck %s

// CHECK: lower-errors.mlir:[[@LINE+3]]:8: error: 'nn.gelu' op cannot be lowered to the IPU yet (2 op(s) in this function cannot; the lowering handles one nn.matmul by an nn.constant so far)
// CHECK: lower-errors.mlir:[[@LINE+4]]:8: note: 'nn.add' cannot be lowered yet
func.func @block(%x: tensor<8x16xf16>) -> tensor<8x16xf16> {
  %g = nn.gelu %x : tensor<8x16xf16> -> tensor<8x16xf16>
  %w = nn.constant dense<0.5> : tensor<16x16xf16>
  %y = nn.add %g, %x : tensor<8x16xf16>, tensor<8x16xf16> -> tensor<8x16xf16>
  return %y : tensor<8x16xf16>
}
