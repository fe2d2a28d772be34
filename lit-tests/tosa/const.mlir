// tosa.const is nn.constant, its values attribute unchanged.
// REQUIRES: upstream-mlir
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn | filecheck %s
// RUN: ipu-run %s --device reference --upstream --print-outputs | filecheck %s --check-prefix=VALUES
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn --emit=tosa | filecheck %s --check-prefix=TOSA

// CHECK-LABEL: func.func @main
// CHECK: nn.constant dense<{{\[\[}}-2.5
// CHECK-NOT: tosa.
// VALUES: output_0 = [-2.5000, -1.5000, -0.5000, 0.5000, 1.5000, 2.5000]
// TOSA: tosa.const
func.func @main() -> tensor<2x3xf32> {
  %r = "tosa.const"() {values = dense<[[-2.5, -1.5, -0.5], [0.5, 1.5, 2.5]]> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}
