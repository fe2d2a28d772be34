// tosa.concat is nn.concat.
// REQUIRES: upstream-mlir
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn | filecheck %s
// RUN: ipu-run %s --device reference --upstream --print-outputs | filecheck %s --check-prefix=VALUES
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn --emit=tosa | filecheck %s --check-prefix=TOSA

// CHECK-LABEL: func.func @main
// CHECK: nn.concat {{.*}}axis = 0
// CHECK-NOT: tosa.
// VALUES: output_0 = [-2.5000, -1.5000, -0.5000, 0.5000, 1.5000, 2.5000, 9.0000, 8.0000, 7.0000]
// TOSA: tosa.concat
func.func @main() -> tensor<3x3xf32> {
  %a = "tosa.const"() {values = dense<[[-2.5, -1.5, -0.5], [0.5, 1.5, 2.5]]> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
  %b = "tosa.const"() {values = dense<[[9.0, 8.0, 7.0]]> : tensor<1x3xf32>} : () -> tensor<1x3xf32>
  %r = tosa.concat %a, %b {axis = 0 : i32} : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<3x3xf32>
  return %r : tensor<3x3xf32>
}
