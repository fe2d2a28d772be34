// tosa.max_pool2d (NHWC, pad = [top, bottom, left, right]) is nn.max_pool
// (NCHW, pads = [top, left, bottom, right]) between transposes; padding
// never wins. Values: the ONNX reference's MaxPool in float64.
// REQUIRES: upstream-mlir
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn | filecheck %s
// RUN: ipu-run %s --device reference --upstream --print-outputs | filecheck %s --check-prefix=VALUES
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn --emit=tosa | filecheck %s --check-prefix=TOSA

// CHECK-LABEL: func.func @main
// CHECK: nn.transpose {{.*}}perm = array<i64: 0, 3, 1, 2>
// CHECK: nn.max_pool {{.*}}{kernel_shape = array<i64: 2, 2>, pads = array<i64: 1, 0, 1, 1>, strides = array<i64: 2, 2>} : tensor<1x2x4x5xf32> -> tensor<1x2x3x3xf32>
// CHECK: nn.transpose {{.*}}perm = array<i64: 0, 2, 3, 1>
// CHECK-NOT: tosa.
// VALUES: output_0 = [3.5000, 1.0000, 2.2500, -0.5000, -2.7500, 2.7500, 4.0000, 1.5000, 5.5000, 3.0000, 2.0000, 0.2500, 2.5000, 2.0000, 3.0000, -0.2500, 1.5000, -1.5000]
// TOSA: tosa.max_pool2d {{.*}}{kernel = array<i64: 2, 2>, pad = array<i64: 1, 1, 0, 1>, stride = array<i64: 2, 2>}
func.func @main() -> tensor<1x3x3x2xf32> {
  %x = "tosa.const"() {values = dense<[[[[3.5, -3.5], [-1.0, 1.0], [2.25, -2.25], [0.5, -0.5], [-2.75, 2.75]], [[1.25, -1.25], [4.0, -4.0], [-0.5, 0.5], [-3.0, 3.0], [2.0, -2.0]], [[-1.5, 1.5], [0.75, -0.75], [5.5, -5.5], [1.0, -1.0], [-0.25, 0.25]], [[2.5, -2.5], [-2.0, 2.0], [0.25, -0.25], [3.0, -3.0], [1.5, -1.5]]]]> : tensor<1x4x5x2xf32>} : () -> tensor<1x4x5x2xf32>
  %r = tosa.max_pool2d %x {kernel = array<i64: 2, 2>, pad = array<i64: 1, 1, 0, 1>, stride = array<i64: 2, 2>} : (tensor<1x4x5x2xf32>) -> tensor<1x3x3x2xf32>
  return %r : tensor<1x3x3x2xf32>
}
