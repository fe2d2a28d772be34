// tosa.conv2d is NHWC with [O, KH, KW, I] weights; nn.conv2d is NCHW with [O, I, KH, KW]: transposes go around it.
// REQUIRES: upstream-mlir
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn | filecheck %s
// RUN: ipu-run %s --device reference --upstream --print-outputs | filecheck %s --check-prefix=VALUES
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn --emit=tosa | filecheck %s --check-prefix=TOSA

// CHECK-LABEL: func.func @main
// CHECK: nn.transpose {{.*}}perm = array<i64: 0, 3, 1, 2>
// CHECK: nn.conv2d
// CHECK: nn.transpose {{.*}}perm = array<i64: 0, 2, 3, 1>
// CHECK-NOT: tosa.
// VALUES: output_0 = [5.3750, -3.1250, 3.6250, -0.8750, 0.1250, 3.6250, -1.6250, 5.8750]
// TOSA: tosa.conv2d
func.func @main() -> tensor<1x2x2x2xf32> {
  %x = "tosa.const"() {values = dense<[[[[-2.0, -1.75], [-1.5, -1.25], [-1.0, -0.75]], [[-0.5, -0.25], [0.0, 0.25], [0.5, 0.75]], [[1.0, 1.25], [1.5, 1.75], [2.0, 2.25]]]]> : tensor<1x3x3x2xf32>} : () -> tensor<1x3x3x2xf32>
  %w = "tosa.const"() {values = dense<[[[[-0.875, -0.75], [-0.625, -0.5]], [[-0.375, -0.25], [-0.125, 0.0]]], [[[0.125, 0.25], [0.375, 0.5]], [[0.625, 0.75], [0.875, 1.0]]]]> : tensor<2x2x2x2xf32>} : () -> tensor<2x2x2x2xf32>
  %b = "tosa.const"() {values = dense<[0.5, -1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %zp = "tosa.const"() {values = dense<0.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %r = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x3x3x2xf32>, tensor<2x2x2x2xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x2x2xf32>
  return %r : tensor<1x2x2x2xf32>
}
