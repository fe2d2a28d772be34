// Unsupported TOSA ops are all reported at once, each at its own line, before
// anything is converted (as the ONNX importer lists unsupported operators).
// REQUIRES: upstream-mlir
// RUN: not ipu-opt %s --upstream --convert-tosa-to-nn 2>&1 | filecheck %s

// CHECK: errors.mlir:[[@LINE+6]]:8: error: cannot convert to nn: 2 unsupported ops (tosa.floor, tosa.reduce_min)
// CHECK: errors.mlir:[[@LINE+5]]:8: note: 'tosa.reduce_min' is not supported
// CHECK: errors.mlir:[[@LINE+5]]:8: note: 'tosa.floor' is not supported
func.func @main(%x: tensor<1x4x4x3xf32>) -> (tensor<1x4x4x3xf32>, tensor<1x4x4x1xf32>, tensor<1x4x4x3xf32>) {
  %zp = "tosa.const"() {values = dense<0.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %n = tosa.negate %x, %zp, %zp : (tensor<1x4x4x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x3xf32>
  %m = tosa.reduce_min %x {axis = 3 : i32} : (tensor<1x4x4x3xf32>) -> tensor<1x4x4x1xf32>
  %a = tosa.floor %x : (tensor<1x4x4x3xf32>) -> tensor<1x4x4x3xf32>
  return %n, %m, %a : tensor<1x4x4x3xf32>, tensor<1x4x4x1xf32>, tensor<1x4x4x3xf32>
}
