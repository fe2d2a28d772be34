// tosa.pow is nn.pow (positive bases).
// REQUIRES: upstream-mlir
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn | filecheck %s
// RUN: ipu-run %s --device reference --upstream --print-outputs | filecheck %s --check-prefix=VALUES
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn --emit=tosa | filecheck %s --check-prefix=TOSA

// CHECK-LABEL: func.func @main
// CHECK: nn.pow
// CHECK-NOT: tosa.
// VALUES: output_0 = [0.0625, 1.0000, 0.5000, 64.0000]
// TOSA: tosa.pow
func.func @main() -> tensor<4xf32> {
  %a = "tosa.const"() {values = dense<[0.25, 1.0, 2.0, 4.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %b = "tosa.const"() {values = dense<[2.0, 0.5, -1.0, 3.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %r = tosa.pow %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
