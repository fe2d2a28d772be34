// RUN: ipu-opt %s --split-input-file | filecheck %s
// RUN: ipu-opt %s --split-input-file --mlir-print-op-generic | ipu-opt --split-input-file | filecheck %s

// nn.max_pool and nn.average_pool, which ONNX MaxPool and AveragePool
// import to: the custom form and the generic form round-trip, the result
// shape is the ONNX one for 1, 2 and 3 spatial axes (floor and ceil mode,
// pads, strides, dilations), and bad windows are refused by the verifier.

// CHECK-LABEL: func.func @forms
func.func @forms(%x: tensor<1x3x32xf32>, %y: tensor<1x1x4x4xf32>, %z: tensor<2x1x32x32x32xf16>, %i: tensor<1x1x5x5xi8>) -> (tensor<1x3x31xf32>, tensor<1x1x2x2xf32>, tensor<2x1x9x9x9xf16>, tensor<1x1x3x3xi8>) {
  // CHECK-NEXT: %0 = nn.average_pool %arg0 {kernel_shape = array<i64: 2>} : tensor<1x3x32xf32> -> tensor<1x3x31xf32>
  %0 = nn.average_pool %x {kernel_shape = array<i64: 2>} : tensor<1x3x32xf32> -> tensor<1x3x31xf32>
  // Ceil mode: (4 - 3) / 2 rounds up to one more window.
  // CHECK-NEXT: %1 = nn.max_pool %arg1 {ceil_mode = 1 : i64, kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>} : tensor<1x1x4x4xf32> -> tensor<1x1x2x2xf32>
  %1 = nn.max_pool %y {ceil_mode = 1 : i64, kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>} : tensor<1x1x4x4xf32> -> tensor<1x1x2x2xf32>
  // Dilated 3-D in ceil mode: window 9, ceil((32 - 9) / 3) + 1 = 9.
  // CHECK-NEXT: %2 = nn.average_pool %arg2 {ceil_mode = 1 : i64, count_include_pad = 1 : i64, dilations = array<i64: 2, 2, 2>, kernel_shape = array<i64: 5, 5, 5>, strides = array<i64: 3, 3, 3>} : tensor<2x1x32x32x32xf16> -> tensor<2x1x9x9x9xf16>
  %2 = nn.average_pool %z {ceil_mode = 1 : i64, count_include_pad = 1 : i64, dilations = array<i64: 2, 2, 2>, kernel_shape = array<i64: 5, 5, 5>, strides = array<i64: 3, 3, 3>} : tensor<2x1x32x32x32xf16> -> tensor<2x1x9x9x9xf16>
  // The maximum takes integers; pads list all begins, then all ends.
  // CHECK-NEXT: %3 = nn.max_pool %arg3 {kernel_shape = array<i64: 2, 2>, pads = array<i64: 1, 0, 0, 1>, strides = array<i64: 2, 2>} : tensor<1x1x5x5xi8> -> tensor<1x1x3x3xi8>
  %3 = nn.max_pool %i {kernel_shape = array<i64: 2, 2>, pads = array<i64: 1, 0, 0, 1>, strides = array<i64: 2, 2>} : tensor<1x1x5x5xi8> -> tensor<1x1x3x3xi8>
  return %0, %1, %2, %3 : tensor<1x3x31xf32>, tensor<1x1x2x2xf32>, tensor<2x1x9x9x9xf16>, tensor<1x1x3x3xi8>
}
