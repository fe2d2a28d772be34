// tosa.select is nn.where.
// REQUIRES: upstream-mlir
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn | filecheck %s
// RUN: ipu-run %s --device reference --upstream --print-outputs | filecheck %s --check-prefix=VALUES
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn --emit=tosa | filecheck %s --check-prefix=TOSA

// CHECK-LABEL: func.func @main
// CHECK: nn.where
// CHECK-NOT: tosa.
// VALUES: output_0 = [-1.5000, 1.0000, 0.5000, 4.0000]
// TOSA: tosa.select
func.func @main() -> tensor<4xf32> {
  %a = "tosa.const"() {values = dense<[-1.5, -0.5, 0.5, 2.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %b = "tosa.const"() {values = dense<[0.25, 1.0, 2.0, 4.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %c = "tosa.const"() {values = dense<[1, 0, 1, 0]> : tensor<4xi1>} : () -> tensor<4xi1>
  %r = tosa.select %c, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
