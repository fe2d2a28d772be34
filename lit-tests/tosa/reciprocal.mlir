// tosa.reciprocal is nn.reciprocal.
// REQUIRES: upstream-mlir
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn | filecheck %s
// RUN: ipu-run %s --device reference --upstream --print-outputs | filecheck %s --check-prefix=VALUES
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn --emit=tosa | filecheck %s --check-prefix=TOSA

// CHECK-LABEL: func.func @main
// CHECK: nn.reciprocal
// CHECK-NOT: tosa.
// VALUES: output_0 = [-0.6667, -2.0000, 2.0000, 0.5000]
// TOSA: tosa.reciprocal
func.func @main() -> tensor<4xf32> {
  %x = "tosa.const"() {values = dense<[-1.5, -0.5, 0.5, 2.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %r = tosa.reciprocal %x : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
