// tosa.log is nn.log (positive inputs).
// REQUIRES: upstream-mlir
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn | filecheck %s
// RUN: ipu-run %s --device reference --upstream --print-outputs | filecheck %s --check-prefix=VALUES
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn --emit=tosa | filecheck %s --check-prefix=TOSA

// CHECK-LABEL: func.func @main
// CHECK: nn.log
// CHECK-NOT: tosa.
// VALUES: output_0 = [-1.3863, 0.0000, 0.6931, 1.3863]
// TOSA: tosa.log
func.func @main() -> tensor<4xf32> {
  %x = "tosa.const"() {values = dense<[0.25, 1.0, 2.0, 4.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %r = tosa.log %x : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
