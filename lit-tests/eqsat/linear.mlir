// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(eqsat-fuse))' --mlir-print-debuginfo | filecheck %s

// The bias first; the fused op carries both locations, the op whose value
// it replaces (the add) first: a diagnostic or a profile names the fused op
// by its location's first part.
// CHECK-LABEL: func.func @linear
// CHECK-NEXT: %[[L:.*]] = nn.linear %arg0, %arg1, %arg2 : tensor<2x16x8xf32>, tensor<8x4xf32>, tensor<4xf32> -> tensor<2x16x4xf32> loc(fused["bias", "mm"])
// CHECK-NEXT: return %[[L]]
func.func @linear(%x: tensor<2x16x8xf32>, %w: tensor<8x4xf32>, %b: tensor<4xf32>) -> tensor<2x16x4xf32> {
  %0 = nn.matmul %x, %w : tensor<2x16x8xf32>, tensor<8x4xf32> -> tensor<2x16x4xf32> loc("mm")
  %1 = nn.add %b, %0 : tensor<4xf32>, tensor<2x16x4xf32> -> tensor<2x16x4xf32> loc("bias")
  return %1 : tensor<2x16x4xf32>
}

// Negative: a 2-D bias is not nn.linear's [N] bias.
// CHECK-LABEL: func.func @matrix_bias
// CHECK-NOT: nn.linear
// CHECK: return
func.func @matrix_bias(%x: tensor<16x8xf32>, %w: tensor<8x4xf32>, %b: tensor<16x4xf32>) -> tensor<16x4xf32> {
  %0 = nn.matmul %x, %w : tensor<16x8xf32>, tensor<8x4xf32> -> tensor<16x4xf32>
  %1 = nn.add %0, %b : tensor<16x4xf32>, tensor<16x4xf32> -> tensor<16x4xf32>
  return %1 : tensor<16x4xf32>
}
