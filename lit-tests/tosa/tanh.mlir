// tosa.tanh is nn.tanh.
// REQUIRES: upstream-mlir
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn | filecheck %s
// RUN: ipu-run %s --device reference --upstream --print-outputs | filecheck %s --check-prefix=VALUES
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn --emit=tosa | filecheck %s --check-prefix=TOSA

// CHECK-LABEL: func.func @main
// CHECK: nn.tanh
// CHECK-NOT: tosa.
// VALUES: output_0 = [-0.9051, -0.4621, 0.4621, 0.9640]
// TOSA: tosa.tanh
func.func @main() -> tensor<4xf32> {
  %x = "tosa.const"() {values = dense<[-1.5, -0.5, 0.5, 2.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %r = tosa.tanh %x : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
