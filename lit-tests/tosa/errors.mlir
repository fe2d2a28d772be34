// Unsupported TOSA ops are all reported at once, each at its own line, before
// anything is converted (as the ONNX importer lists unsupported operators).
// REQUIRES: upstream-mlir
// RUN: not ipu-opt %s --upstream --convert-tosa-to-nn 2>&1 | filecheck %s

// CHECK: errors.mlir:[[@LINE+6]]:8: error: cannot convert to nn: 2 unsupported ops (tosa.argmax, tosa.max_pool2d)
// CHECK: errors.mlir:[[@LINE+5]]:8: note: 'tosa.max_pool2d' is not supported
// CHECK: errors.mlir:[[@LINE+5]]:8: note: 'tosa.argmax' is not supported
func.func @main(%x: tensor<1x4x4x3xf32>) -> (tensor<1x4x4x3xf32>, tensor<1x2x2x3xf32>, tensor<1x4x4xi32>) {
  %zp = "tosa.const"() {values = dense<0.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %n = tosa.negate %x, %zp, %zp : (tensor<1x4x4x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x3xf32>
  %m = tosa.max_pool2d %x {kernel = array<i64: 2, 2>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<1x4x4x3xf32>) -> tensor<1x2x2x3xf32>
  %a = tosa.argmax %x {axis = 3 : i32} : (tensor<1x4x4x3xf32>) -> tensor<1x4x4xi32>
  return %n, %m, %a : tensor<1x4x4x3xf32>, tensor<1x2x2x3xf32>, tensor<1x4x4xi32>
}
