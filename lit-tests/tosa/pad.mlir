// tosa.pad pairs (before, after) per axis; nn.pad (ONNX) lists all befores, then all afters.
// REQUIRES: upstream-mlir
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn | filecheck %s
// RUN: ipu-run %s --device reference --upstream --print-outputs | filecheck %s --check-prefix=VALUES
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn --emit=tosa | filecheck %s --check-prefix=TOSA

// CHECK-LABEL: func.func @main
// CHECK: nn.pad {{.*}}pads = array<i64: 1, 0, 0, 2>{{.*}}value = 7.0
// CHECK-NOT: tosa.
// VALUES: output_0 = [7.0000, 7.0000, 7.0000, 7.0000, 7.0000, -2.5000, -1.5000, -0.5000, 7.0000, 7.0000, 0.5000, 1.5000, 2.5000, 7.0000, 7.0000]
// TOSA: tosa.pad
func.func @main() -> tensor<3x5xf32> {
  %x = "tosa.const"() {values = dense<[[-2.5, -1.5, -0.5], [0.5, 1.5, 2.5]]> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
  %p = tosa.const_shape {values = dense<[1, 0, 0, 2]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %v = "tosa.const"() {values = dense<7.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %r = tosa.pad %x, %p, %v : (tensor<2x3xf32>, !tosa.shape<4>, tensor<1xf32>) -> tensor<3x5xf32>
  return %r : tensor<3x5xf32>
}
