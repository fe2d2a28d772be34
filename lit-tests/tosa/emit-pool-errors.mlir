// Pools and index reductions TOSA cannot state are all reported, each with
// the reason, before anything is written.
// REQUIRES: upstream-mlir
// RUN: not ipu-opt %s --emit=tosa 2>&1 | filecheck %s

// CHECK: emit-pool-errors.mlir:[[@LINE+6]]:8: error: cannot write as TOSA: 4 ops without a TOSA form (nn.argmax, nn.argmin, nn.average_pool, nn.max_pool)
// CHECK: emit-pool-errors.mlir:[[@LINE+5]]:8: note: 'nn.max_pool' pools 1 spatial axes; TOSA pools two
// CHECK: emit-pool-errors.mlir:[[@LINE+5]]:8: note: 'nn.average_pool' has dilations; TOSA pools have none
// CHECK: emit-pool-errors.mlir:[[@LINE+5]]:8: note: 'nn.argmax' is an argmin or picks the last of equal elements; tosa.argmax picks the first largest
// CHECK: emit-pool-errors.mlir:[[@LINE+5]]:8: note: 'nn.argmin' is an argmin or picks the last of equal elements; tosa.argmax picks the first largest
func.func @main(%a: tensor<1x2x8xf32>, %b: tensor<1x1x6x6xf32>) -> (tensor<1x2x7xf32>, tensor<1x1x4x4xf32>, tensor<1x8xi64>, tensor<1x8xi64>) {
  %0 = nn.max_pool %a {kernel_shape = array<i64: 2>} : tensor<1x2x8xf32> -> tensor<1x2x7xf32>
  %1 = nn.average_pool %b {dilations = array<i64: 2, 2>, kernel_shape = array<i64: 2, 2>} : tensor<1x1x6x6xf32> -> tensor<1x1x4x4xf32>
  %2 = nn.argmax %a {axis = 1 : i64, keepdims = 0 : i64, select_last_index = 1 : i64} : tensor<1x2x8xf32> -> tensor<1x8xi64>
  %3 = nn.argmin %a {axis = 1 : i64, keepdims = 0 : i64} : tensor<1x2x8xf32> -> tensor<1x8xi64>
  return %0, %1, %2, %3 : tensor<1x2x7xf32>, tensor<1x1x4x4xf32>, tensor<1x8xi64>, tensor<1x8xi64>
}
