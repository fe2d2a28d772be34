// tosa.negate carries zero points; zero ones make it nn.neg.
// REQUIRES: upstream-mlir
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn | filecheck %s
// RUN: ipu-run %s --device reference --upstream --print-outputs | filecheck %s --check-prefix=VALUES
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn --emit=tosa | filecheck %s --check-prefix=TOSA

// CHECK-LABEL: func.func @main
// CHECK: nn.neg
// CHECK-NOT: tosa.
// VALUES: output_0 = [1.5000, 0.5000, -0.5000, -2.0000]
// TOSA: tosa.negate
func.func @main() -> tensor<4xf32> {
  %x = "tosa.const"() {values = dense<[-1.5, -0.5, 0.5, 2.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %zp = "tosa.const"() {values = dense<0.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %r = tosa.negate %x, %zp, %zp : (tensor<4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
