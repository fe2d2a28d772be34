// tosa.slice (start and size shapes) is nn.slice with ends = start + size.
// REQUIRES: upstream-mlir
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn | filecheck %s
// RUN: ipu-run %s --device reference --upstream --print-outputs | filecheck %s --check-prefix=VALUES
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn --emit=tosa | filecheck %s --check-prefix=TOSA

// CHECK-LABEL: func.func @main
// CHECK: nn.slice {{.*}}ends = array<i64: 2, 3>, starts = array<i64: 0, 1>
// CHECK-NOT: tosa.
// VALUES: output_0 = [-1.5000, -0.5000, 1.5000, 2.5000]
// TOSA: tosa.slice
func.func @main() -> tensor<2x2xf32> {
  %x = "tosa.const"() {values = dense<[[-2.5, -1.5, -0.5], [0.5, 1.5, 2.5]]> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
  %st = tosa.const_shape {values = dense<[0, 1]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %sz = tosa.const_shape {values = dense<[2, 2]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %r = tosa.slice %x, %st, %sz : (tensor<2x3xf32>, !tosa.shape<2>, !tosa.shape<2>) -> tensor<2x2xf32>
  return %r : tensor<2x2xf32>
}
