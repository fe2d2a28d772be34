// nn.matmul written as TOSA, verified by upstream, read back and run (values
// computed by hand). A right operand without batch dimensions (a linear
// layer's weight) takes the left operand's batch into its rows: one
// [1, B*M, K] x [1, K, N] product, no tosa.tile (tiling the weight per batch
// cost so400m's sequence-first pooling head 7.7 GB). A right operand with a
// batch of its own still broadcasts the left one by a tile.
// REQUIRES: upstream-mlir
// RUN: ipu-opt %s --emit=tosa -o %t.mlir
// RUN: filecheck %s < %t.mlir
// RUN: ipu-run %t.mlir --device reference --upstream --print-outputs | filecheck %s --check-prefix=VALUES

// CHECK-LABEL: func.func @main
// CHECK-NOT: tosa.tile
// CHECK: tosa.matmul {{.*}} : (tensor<1x3x2xf32>, tensor<1x2x2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x3x2xf32>
// CHECK: tosa.tile
// CHECK: tosa.matmul {{.*}} : (tensor<2x1x2xf32>, tensor<2x2x2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x1x2xf32>
// VALUES: output_0 = [2.0000, 3.0000, 5.0000, 5.0000, -0.7500, 2.0000]
// VALUES: output_1 = [1.0000, 2.0000, 4.0000, -1.0000]
func.func @main() -> (tensor<3x1x2xf32>, tensor<2x1x2xf32>) {
  %x = nn.constant dense<[[[1.0, 2.0]], [[3.0, 4.0]], [[-1.0, 0.5]]]> : tensor<3x1x2xf32>
  %w = nn.constant dense<[[1.0, -1.0], [0.5, 2.0]]> : tensor<2x2xf32>
  %0 = nn.matmul %x, %w : tensor<3x1x2xf32>, tensor<2x2xf32> -> tensor<3x1x2xf32>
  %a = nn.constant dense<[[[1.0, 2.0]]]> : tensor<1x1x2xf32>
  %b = nn.constant dense<[[[1.0, 0.0], [0.0, 1.0]], [[2.0, 1.0], [1.0, -1.0]]]> : tensor<2x2x2xf32>
  %1 = nn.matmul %a, %b : tensor<1x1x2xf32>, tensor<2x2x2xf32> -> tensor<2x1x2xf32>
  return %0, %1 : tensor<3x1x2xf32>, tensor<2x1x2xf32>
}
