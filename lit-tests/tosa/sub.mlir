// tosa.sub is nn.sub.
// REQUIRES: upstream-mlir
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn | filecheck %s
// RUN: ipu-run %s --device reference --upstream --print-outputs | filecheck %s --check-prefix=VALUES
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn --emit=tosa | filecheck %s --check-prefix=TOSA

// CHECK-LABEL: func.func @main
// CHECK: nn.sub
// CHECK-NOT: tosa.
// VALUES: output_0 = [-1.7500, -1.5000, -1.5000, -2.0000]
// TOSA: tosa.sub
func.func @main() -> tensor<4xf32> {
  %a = "tosa.const"() {values = dense<[-1.5, -0.5, 0.5, 2.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %b = "tosa.const"() {values = dense<[0.25, 1.0, 2.0, 4.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %r = tosa.sub %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
