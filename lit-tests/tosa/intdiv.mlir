// tosa.intdiv (i32, truncating) is nn.div on integers.
// REQUIRES: upstream-mlir
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn | filecheck %s
// RUN: ipu-run %s --device reference --upstream --print-outputs | filecheck %s --check-prefix=VALUES
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn --emit=tosa | filecheck %s --check-prefix=TOSA

// CHECK-LABEL: func.func @main
// CHECK: nn.div
// CHECK-NOT: tosa.
// VALUES: output_0 = [3.0000, -3.0000, -2.0000, 14.0000]
// TOSA: tosa.intdiv
func.func @main() -> tensor<4xi32> {
  %a = "tosa.const"() {values = dense<[7, -7, 9, 100]> : tensor<4xi32>} : () -> tensor<4xi32>
  %b = "tosa.const"() {values = dense<[2, 2, -4, 7]> : tensor<4xi32>} : () -> tensor<4xi32>
  %r = tosa.intdiv %a, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %r : tensor<4xi32>
}
