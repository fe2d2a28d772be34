// tosa.exp is nn.exp.
// REQUIRES: upstream-mlir
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn | filecheck %s
// RUN: ipu-run %s --device reference --upstream --print-outputs | filecheck %s --check-prefix=VALUES
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn --emit=tosa | filecheck %s --check-prefix=TOSA

// CHECK-LABEL: func.func @main
// CHECK: nn.exp
// CHECK-NOT: tosa.
// VALUES: output_0 = [0.2231, 0.6065, 1.6487, 7.3891]
// TOSA: tosa.exp
func.func @main() -> tensor<4xf32> {
  %x = "tosa.const"() {values = dense<[-1.5, -0.5, 0.5, 2.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %r = tosa.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
