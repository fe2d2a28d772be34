// nn has no clamp: tosa.clamp becomes min with the upper then max with the lower bound.
// REQUIRES: upstream-mlir
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn | filecheck %s
// RUN: ipu-run %s --device reference --upstream --print-outputs | filecheck %s --check-prefix=VALUES
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn --emit=tosa | filecheck %s --check-prefix=TOSA

// CHECK-LABEL: func.func @main
// CHECK: nn.min
// CHECK: nn.max
// CHECK-NOT: tosa.
// VALUES: output_0 = [-1.0000, -0.5000, 0.5000, 1.0000]
// TOSA: tosa.minimum
// TOSA: tosa.maximum
func.func @main() -> tensor<4xf32> {
  %x = "tosa.const"() {values = dense<[-1.5, -0.5, 0.5, 2.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %r = tosa.clamp %x {min_val = -1.0 : f32, max_val = 1.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
