// tosa.identity is its operand: nothing is left of it.
// REQUIRES: upstream-mlir
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn | filecheck %s
// RUN: ipu-run %s --device reference --upstream --print-outputs | filecheck %s --check-prefix=VALUES

// CHECK-LABEL: func.func @main
// CHECK: nn.constant
// CHECK: return %0
// CHECK-NOT: tosa.
// VALUES: output_0 = [-1.5000, -0.5000, 0.5000, 2.0000]
func.func @main() -> tensor<4xf32> {
  %x = "tosa.const"() {values = dense<[-1.5, -0.5, 0.5, 2.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %r = tosa.identity %x : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
