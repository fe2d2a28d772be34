// tosa.reduce_max keeps the reduced axis, as nn.reduce_max with keepdims.
// REQUIRES: upstream-mlir
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn | filecheck %s
// RUN: ipu-run %s --device reference --upstream --print-outputs | filecheck %s --check-prefix=VALUES
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn --emit=tosa | filecheck %s --check-prefix=TOSA

// CHECK-LABEL: func.func @main
// CHECK: nn.reduce_max {{.*}}axes = array<i64: 0>, keepdims = 1
// CHECK-NOT: tosa.
// VALUES: output_0 = [0.5000, 1.5000, 2.5000]
// TOSA: tosa.reduce_max
func.func @main() -> tensor<1x3xf32> {
  %x = "tosa.const"() {values = dense<[[-2.5, -1.5, -0.5], [0.5, 1.5, 2.5]]> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
  %r = tosa.reduce_max %x {axis = 0 : i32} : (tensor<2x3xf32>) -> tensor<1x3xf32>
  return %r : tensor<1x3xf32>
}
