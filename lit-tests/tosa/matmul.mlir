// tosa.matmul (3-D, zero points 0) is nn.matmul; written back, nn.matmul's batch broadcast becomes tosa.tile.
// REQUIRES: upstream-mlir
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn | filecheck %s
// RUN: ipu-run %s --device reference --upstream --print-outputs | filecheck %s --check-prefix=VALUES
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn --emit=tosa | filecheck %s --check-prefix=TOSA

// CHECK-LABEL: func.func @main
// CHECK: nn.matmul
// CHECK-NOT: tosa.
// VALUES: output_0 = [1.0000, 1.7500, 1.0000, 4.0000]
// TOSA: tosa.matmul
func.func @main() -> tensor<1x2x2xf32> {
  %a = "tosa.const"() {values = dense<[[[0.0, 0.25, 0.5], [0.75, 1.0, 1.25]]]> : tensor<1x2x3xf32>} : () -> tensor<1x2x3xf32>
  %b = "tosa.const"() {values = dense<[[[-2.0, -1.0], [0.0, 1.0], [2.0, 3.0]]]> : tensor<1x3x2xf32>} : () -> tensor<1x3x2xf32>
  %zp = "tosa.const"() {values = dense<0.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %r = tosa.matmul %a, %b, %zp, %zp : (tensor<1x2x3xf32>, tensor<1x3x2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x2xf32>
  return %r : tensor<1x2x2xf32>
}
