// tosa.reduce_sum keeps the reduced axis, as nn.reduce_sum with keepdims.
// REQUIRES: upstream-mlir
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn | filecheck %s
// RUN: ipu-run %s --device reference --upstream --print-outputs | filecheck %s --check-prefix=VALUES
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn --emit=tosa | filecheck %s --check-prefix=TOSA

// CHECK-LABEL: func.func @main
// CHECK: nn.reduce_sum {{.*}}axes = array<i64: 1>, keepdims = 1
// CHECK-NOT: tosa.
// VALUES: output_0 = [-4.5000, 4.5000]
// TOSA: tosa.reduce_sum
func.func @main() -> tensor<2x1xf32> {
  %x = "tosa.const"() {values = dense<[[-2.5, -1.5, -0.5], [0.5, 1.5, 2.5]]> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
  %r = tosa.reduce_sum %x {axis = 1 : i32} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  return %r : tensor<2x1xf32>
}
