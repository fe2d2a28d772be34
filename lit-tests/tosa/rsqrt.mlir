// nn has no rsqrt: tosa.rsqrt becomes 1/sqrt(x), and is written back as tosa.rsqrt + tosa.reciprocal of nn.sqrt.
// REQUIRES: upstream-mlir
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn | filecheck %s
// RUN: ipu-run %s --device reference --upstream --print-outputs | filecheck %s --check-prefix=VALUES
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn --emit=tosa | filecheck %s --check-prefix=TOSA

// CHECK-LABEL: func.func @main
// CHECK: nn.sqrt
// CHECK: nn.reciprocal
// CHECK-NOT: tosa.
// VALUES: output_0 = [2.0000, 1.0000, 0.7071, 0.5000]
// TOSA: tosa.rsqrt
// TOSA: tosa.reciprocal
func.func @main() -> tensor<4xf32> {
  %x = "tosa.const"() {values = dense<[0.25, 1.0, 2.0, 4.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %r = tosa.rsqrt %x : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
