// The reference executor's pooling against values the ONNX reference
// implementation computed in float64 (onnx 1.23 ReferenceEvaluator): pads
// that the maximum skips, ceil-mode windows cut at the end, averages with
// and without the padding counted, a dilated 1-D and a 3-D window.
// RUN: ipu-run %s --device reference --print-outputs | filecheck %s

// Max, 2x2 stride 2, ceil mode, pads top 1 and right 1.
// CHECK: output_0 = [3.5000, 2.2500, -2.7500, 4.0000, 5.5000, 2.0000, 2.5000, 3.0000, 1.5000]
// Average 3x3, strides 1x2, one pad all round, padding not counted ...
// CHECK: output_1 = [1.9375, 0.3750, -0.8125, 1.1667, 1.0556, -0.4167, 0.8333, 1.0000, 0.7083, -0.0625, 1.4167, 1.3125]
// ... and counted.
// CHECK: output_2 = [0.8611, 0.2500, -0.3611, 0.7778, 1.0556, -0.2778, 0.5556, 1.0000, 0.4722, -0.0278, 0.9444, 0.5833]
// Max over 1-D windows of two elements dilated by 2, two channels.
// CHECK: output_3 = [2.0000, 3.5000, 2.0000, 3.5000, 0.7500, 1.2500, 2.5000, 0.0000]
// Average over 2x2x2 windows.
// CHECK: output_4 = [-0.3750, 0.3750, -0.3750, 0.3750]
func.func @main() -> (tensor<1x1x3x3xf32>, tensor<1x1x4x3xf32>, tensor<1x1x4x3xf32>, tensor<1x2x4xf32>, tensor<1x1x1x2x2xf32>) {
  %x = nn.constant dense<[[[[3.5, -1.0, 2.25, 0.5, -2.75], [1.25, 4.0, -0.5, -3.0, 2.0], [-1.5, 0.75, 5.5, 1.0, -0.25], [2.5, -2.0, 0.25, 3.0, 1.5]]]]> : tensor<1x1x4x5xf32>
  %x1 = nn.constant dense<[[[0.5, -1.5, 2.0, 3.5, -0.25, 1.0], [-2.0, 1.25, 0.75, -3.5, 2.5, 0.0]]]> : tensor<1x2x6xf32>
  %x3 = nn.constant dense<[[[[[-6.0, 5.25, -4.5], [-3.75, 3.0, -2.25], [-1.5, 0.75, 0.0]], [[0.75, -1.5, 2.25], [3.0, -3.75, 4.5], [5.25, -6.0, 6.75]]]]]> : tensor<1x1x2x3x3xf32>
  %0 = nn.max_pool %x {ceil_mode = 1 : i64, kernel_shape = array<i64: 2, 2>, pads = array<i64: 1, 0, 0, 1>, strides = array<i64: 2, 2>} : tensor<1x1x4x5xf32> -> tensor<1x1x3x3xf32>
  %1 = nn.average_pool %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 2>} : tensor<1x1x4x5xf32> -> tensor<1x1x4x3xf32>
  %2 = nn.average_pool %x {count_include_pad = 1 : i64, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 2>} : tensor<1x1x4x5xf32> -> tensor<1x1x4x3xf32>
  %3 = nn.max_pool %x1 {dilations = array<i64: 2>, kernel_shape = array<i64: 2>} : tensor<1x2x6xf32> -> tensor<1x2x4xf32>
  %4 = nn.average_pool %x3 {kernel_shape = array<i64: 2, 2, 2>} : tensor<1x1x2x3x3xf32> -> tensor<1x1x1x2x2xf32>
  return %0, %1, %2, %3, %4 : tensor<1x1x3x3xf32>, tensor<1x1x4x3xf32>, tensor<1x1x4x3xf32>, tensor<1x2x4xf32>, tensor<1x1x1x2x2xf32>
}
