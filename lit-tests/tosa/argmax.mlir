// tosa.argmax drops the axis and gives the first largest position, as
// nn.argmax {keepdims = 0}; i32 positions are a cast of nn's i64 ones.
// Ties (2.0, 2.0 and 4.0, 4.0 and 0.0, 0.0, 0.0) pick the first.
// REQUIRES: upstream-mlir
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn | filecheck %s
// RUN: ipu-run %s --device reference --upstream --print-outputs | filecheck %s --check-prefix=VALUES
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn --emit=tosa | filecheck %s --check-prefix=TOSA

// CHECK-LABEL: func.func @main
// CHECK: nn.argmax {{.*}}{axis = 1 : i64, keepdims = 0 : i64, select_last_index = 0 : i64} : tensor<2x3x4xf32> -> tensor<2x4xi64>
// CHECK: nn.cast {{.*}} : tensor<2x4xi64> -> tensor<2x4xi32>
// CHECK-NOT: tosa.
// VALUES: output_0 = [1.0000, 0.0000, 1.0000, 0.0000, 0.0000, 2.0000, 0.0000, 2.0000]
// TOSA: tosa.argmax {{.*}}{axis = 1 : i32} : (tensor<2x3x4xf32>) -> tensor<2x4xi64>
// TOSA: tosa.cast {{.*}} : (tensor<2x4xi64>) -> tensor<2x4xi32>
func.func @main() -> tensor<2x4xi32> {
  %x = "tosa.const"() {values = dense<[[[0.5, 2.0, -1.0, 3.0], [1.5, 2.0, -0.5, -3.0], [-2.0, 0.25, -0.5, 1.0]], [[4.0, -1.0, 0.0, 0.0], [4.0, 1.0, 0.0, -1.0], [1.0, 1.5, 0.0, 2.0]]]> : tensor<2x3x4xf32>} : () -> tensor<2x3x4xf32>
  %r = tosa.argmax %x {axis = 1 : i32} : (tensor<2x3x4xf32>) -> tensor<2x4xi32>
  return %r : tensor<2x4xi32>
}
