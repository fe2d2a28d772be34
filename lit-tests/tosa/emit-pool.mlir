// nn pools written as TOSA, verified by upstream, read back and run: the
// values are those of lit-tests/nn/pool-run.mlir (the ONNX reference in
// float64). TOSA windows must end on the padded edge: a ceil-mode window
// gets end padding (skipped by both TOSA pools, as ONNX skips positions
// past the padding), floor-mode windows that stop short get the input
// trimmed, and an average that counts its padding gets it as zeros of a
// tosa.pad.
// REQUIRES: upstream-mlir
// RUN: ipu-opt %s --emit=tosa -o %t.mlir
// RUN: filecheck %s < %t.mlir
// RUN: ipu-run %t.mlir --device reference --upstream --print-outputs | filecheck %s --check-prefix=VALUES

// Ceil mode: the bottom pad grows from 0 to 1.
// CHECK: tosa.max_pool2d {{.*}}{kernel = array<i64: 2, 2>, pad = array<i64: 1, 1, 0, 1>, stride = array<i64: 2, 2>}
// CHECK: tosa.avg_pool2d {{.*}}pad = array<i64: 1, 1, 1, 1>
// Counted padding: zeros first, then a pool without padding.
// CHECK: tosa.pad
// CHECK: tosa.avg_pool2d {{.*}}pad = array<i64: 0, 0, 0, 0>
// Floor mode: rows 2 and 3 are read by no window.
// CHECK: tosa.slice {{.*}} -> tensor<1x1x2x5xf32>
// CHECK: tosa.max_pool2d {{.*}}pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 3, 3>}
// VALUES: output_0 = [3.5000, 2.2500, -2.7500, 4.0000, 5.5000, 2.0000, 2.5000, 3.0000, 1.5000]
// VALUES: output_1 = [1.9375, 0.3750, -0.8125, 1.1667, 1.0556, -0.4167, 0.8333, 1.0000, 0.7083, -0.0625, 1.4167, 1.3125]
// VALUES: output_2 = [0.8611, 0.2500, -0.3611, 0.7778, 1.0556, -0.2778, 0.5556, 1.0000, 0.4722, -0.0278, 0.9444, 0.5833]
// VALUES: output_3 = [4.0000, 2.0000]
func.func @main() -> (tensor<1x1x3x3xf32>, tensor<1x1x4x3xf32>, tensor<1x1x4x3xf32>, tensor<1x1x1x2xf32>) {
  %x = nn.constant dense<[[[[3.5, -1.0, 2.25, 0.5, -2.75], [1.25, 4.0, -0.5, -3.0, 2.0], [-1.5, 0.75, 5.5, 1.0, -0.25], [2.5, -2.0, 0.25, 3.0, 1.5]]]]> : tensor<1x1x4x5xf32>
  %0 = nn.max_pool %x {ceil_mode = 1 : i64, kernel_shape = array<i64: 2, 2>, pads = array<i64: 1, 0, 0, 1>, strides = array<i64: 2, 2>} : tensor<1x1x4x5xf32> -> tensor<1x1x3x3xf32>
  %1 = nn.average_pool %x {kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 2>} : tensor<1x1x4x5xf32> -> tensor<1x1x4x3xf32>
  %2 = nn.average_pool %x {count_include_pad = 1 : i64, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 2>} : tensor<1x1x4x5xf32> -> tensor<1x1x4x3xf32>
  %3 = nn.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 3, 3>} : tensor<1x1x4x5xf32> -> tensor<1x1x1x2xf32>
  return %0, %1, %2, %3 : tensor<1x1x3x3xf32>, tensor<1x1x4x3xf32>, tensor<1x1x4x3xf32>, tensor<1x1x1x2xf32>
}
