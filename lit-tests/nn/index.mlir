// RUN: ipu-opt %s --split-input-file | filecheck %s
// RUN: ipu-opt %s --split-input-file --mlir-print-op-generic | ipu-opt --split-input-file | filecheck %s

// The index ops ONNX GatherElements and ArgMax/ArgMin import to: custom
// form and generic round trip, with the result types their rules infer
// (gather_elements: the indices' shape and the data's element type;
// argmax/argmin: i64, the axis kept as 1 or dropped).

// CHECK-LABEL: func.func @index_ops
func.func @index_ops(%x: tensor<3x4xf32>, %i: tensor<2x4xi64>) -> (tensor<2x4xf32>, tensor<3x1xi64>, tensor<4xi64>) {
  // CHECK-NEXT: %0 = nn.gather_elements %arg0, %arg1 {axis = 0 : i64} : tensor<3x4xf32>, tensor<2x4xi64> -> tensor<2x4xf32>
  %0 = nn.gather_elements %x, %i {axis = 0 : i64} : tensor<3x4xf32>, tensor<2x4xi64> -> tensor<2x4xf32>
  // CHECK-NEXT: %1 = nn.argmax %arg0 {axis = 1 : i64, keepdims = 1 : i64, select_last_index = 0 : i64} : tensor<3x4xf32> -> tensor<3x1xi64>
  %1 = nn.argmax %x {axis = 1 : i64, keepdims = 1 : i64, select_last_index = 0 : i64} : tensor<3x4xf32> -> tensor<3x1xi64>
  // CHECK-NEXT: %2 = nn.argmin %arg0 {axis = -2 : i64, keepdims = 0 : i64, select_last_index = 1 : i64} : tensor<3x4xf32> -> tensor<4xi64>
  %2 = nn.argmin %x {axis = -2 : i64, keepdims = 0 : i64, select_last_index = 1 : i64} : tensor<3x4xf32> -> tensor<4xi64>
  return %0, %1, %2 : tensor<2x4xf32>, tensor<3x1xi64>, tensor<4xi64>
}
