// tosa.cast between floats (and from integers) is nn.cast.
// REQUIRES: upstream-mlir
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn | filecheck %s
// RUN: ipu-run %s --device reference --upstream --print-outputs | filecheck %s --check-prefix=VALUES
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn --emit=tosa | filecheck %s --check-prefix=TOSA

// CHECK-LABEL: func.func @main
// CHECK: nn.cast {{.*}}to = f16
// CHECK-NOT: tosa.
// VALUES: output_0 = [1.0000, -2.0000, 3.0000, 40000.0000]
// TOSA: tosa.cast
func.func @main() -> tensor<4xf16> {
  %x = "tosa.const"() {values = dense<[1, -2, 3, 40000]> : tensor<4xi32>} : () -> tensor<4xi32>
  %r = tosa.cast %x : (tensor<4xi32>) -> tensor<4xf16>
  return %r : tensor<4xf16>
}
