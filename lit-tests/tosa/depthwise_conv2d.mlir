// tosa.depthwise_conv2d ([KH, KW, C, M] weights) is nn.conv2d with one group per channel; padding and strides carry over.
// REQUIRES: upstream-mlir
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn | filecheck %s
// RUN: ipu-run %s --device reference --upstream --print-outputs | filecheck %s --check-prefix=VALUES
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn --emit=tosa | filecheck %s --check-prefix=TOSA

// CHECK-LABEL: func.func @main
// CHECK: nn.conv2d {{.*}}groups = 2 : i64, pads = array<i64: 0, 0, 1, 1>, strides = array<i64: 2, 2>
// CHECK-NOT: tosa.
// VALUES: output_0 = [2.7500, 0.0000, 1.8750, -0.2500, -0.1250, -1.6250, -0.5000, -2.1250]
// TOSA: tosa.depthwise_conv2d
func.func @main() -> tensor<1x2x2x2xf32> {
  %x = "tosa.const"() {values = dense<[[[[-2.0, -1.75], [-1.5, -1.25], [-1.0, -0.75]], [[-0.5, -0.25], [0.0, 0.25], [0.5, 0.75]], [[1.0, 1.25], [1.5, 1.75], [2.0, 2.25]]]]> : tensor<1x3x3x2xf32>} : () -> tensor<1x3x3x2xf32>
  %w = "tosa.const"() {values = dense<[[[[-0.75], [-0.5]], [[-0.25], [0.0]]], [[[0.25], [0.5]], [[0.75], [1.0]]]]> : tensor<2x2x2x1xf32>} : () -> tensor<2x2x2x1xf32>
  %b = "tosa.const"() {values = dense<[1.0, -1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %zp = "tosa.const"() {values = dense<0.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %r = tosa.depthwise_conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 1, 0, 1>, stride = array<i64: 2, 2>} : (tensor<1x3x3x2xf32>, tensor<2x2x2x1xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x2x2xf32>
  return %r : tensor<1x2x2x2xf32>
}
