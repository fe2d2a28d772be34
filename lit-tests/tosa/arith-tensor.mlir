// TOSA models carry arith.constant and static tensor reshapes and slices;
// they convert with the TOSA ops.
// REQUIRES: upstream-mlir
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn | filecheck %s
// RUN: ipu-run %s --device reference --upstream --print-outputs | filecheck %s --check-prefix=VALUES

// CHECK-LABEL: func.func @main
// CHECK: nn.constant
// CHECK: nn.reshape {{.*}} -> tensor<2x1x3xf32>
// CHECK: nn.reshape {{.*}} -> tensor<6xf32>
// CHECK: nn.slice {{.*}}ends = array<i64: 6>{{.*}}starts = array<i64: 1>, steps = array<i64: 2>
// CHECK: nn.concat
// CHECK-NOT: tensor.
// VALUES: output_0 = [1.0000, 3.0000, 5.0000, 0.0000, 1.0000, 2.0000, 3.0000, 4.0000, 5.0000]
func.func @main() -> tensor<9xf32> {
  %c = arith.constant dense<[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]> : tensor<2x3xf32>
  %e = tensor.expand_shape %c [[0], [1, 2]] output_shape [2, 1, 3] : tensor<2x3xf32> into tensor<2x1x3xf32>
  %f = tensor.collapse_shape %e [[0, 1, 2]] : tensor<2x1x3xf32> into tensor<6xf32>
  %s = tensor.extract_slice %f[1] [3] [2] : tensor<6xf32> to tensor<3xf32>
  %r = tensor.concat dim(0) %s, %f : (tensor<3xf32>, tensor<6xf32>) -> tensor<9xf32>
  return %r : tensor<9xf32>
}
