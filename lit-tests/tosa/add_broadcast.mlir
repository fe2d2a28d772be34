// TOSA broadcasts along unit dimensions of equal-rank operands; nn broadcasts the same way.
// REQUIRES: upstream-mlir
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn | filecheck %s
// RUN: ipu-run %s --device reference --upstream --print-outputs | filecheck %s --check-prefix=VALUES
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn --emit=tosa | filecheck %s --check-prefix=TOSA

// CHECK-LABEL: func.func @main
// CHECK: nn.add {{.*}} : tensor<2x3xf32>, tensor<1x3xf32> -> tensor<2x3xf32>
// CHECK-NOT: tosa.
// VALUES: output_0 = [11.0000, 22.0000, 33.0000, 14.0000, 25.0000, 36.0000]
// TOSA: tosa.add
func.func @main() -> tensor<2x3xf32> {
  %a = "tosa.const"() {values = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
  %b = "tosa.const"() {values = dense<[[10.0, 20.0, 30.0]]> : tensor<1x3xf32>} : () -> tensor<1x3xf32>
  %r = tosa.add %a, %b : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}
