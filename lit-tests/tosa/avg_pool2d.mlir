// tosa.avg_pool2d divides by the data positions of each window, never the
// padding: nn.average_pool without count_include_pad, between NHWC/NCHW
// transposes. Values: the ONNX reference's AveragePool in float64.
// REQUIRES: upstream-mlir
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn | filecheck %s
// RUN: ipu-run %s --device reference --upstream --print-outputs | filecheck %s --check-prefix=VALUES
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn --emit=tosa | filecheck %s --check-prefix=TOSA

// CHECK-LABEL: func.func @main
// CHECK: nn.average_pool {{.*}}{kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 2>} : tensor<1x2x4x5xf32> -> tensor<1x2x4x3xf32>
// CHECK-NOT: tosa.
// VALUES: output_0 = [1.9375, -1.9375, 0.3750, -0.3750, -0.8125, 0.8125, 1.1667, -1.1667, 1.0556, -1.0556, -0.4167, 0.4167, 0.8333, -0.8333, 1.0000, -1.0000, 0.7083, -0.7083, -0.0625, 0.0625, 1.4167, -1.4167, 1.3125, -1.3125]
// TOSA: tosa.avg_pool2d {{.*}}{acc_type = f32, kernel = array<i64: 3, 3>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 2>}
func.func @main() -> tensor<1x4x3x2xf32> {
  %x = "tosa.const"() {values = dense<[[[[3.5, -3.5], [-1.0, 1.0], [2.25, -2.25], [0.5, -0.5], [-2.75, 2.75]], [[1.25, -1.25], [4.0, -4.0], [-0.5, 0.5], [-3.0, 3.0], [2.0, -2.0]], [[-1.5, 1.5], [0.75, -0.75], [5.5, -5.5], [1.0, -1.0], [-0.25, 0.25]], [[2.5, -2.5], [-2.0, 2.0], [0.25, -0.25], [3.0, -3.0], [1.5, -1.5]]]]> : tensor<1x4x5x2xf32>} : () -> tensor<1x4x5x2xf32>
  %zp = "tosa.const"() {values = dense<0.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %r = tosa.avg_pool2d %x, %zp, %zp {acc_type = f32, kernel = array<i64: 3, 3>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 2>} : (tensor<1x4x5x2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x3x2xf32>
  return %r : tensor<1x4x3x2xf32>
}
