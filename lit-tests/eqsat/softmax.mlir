// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(eqsat-fuse))' | filecheck %s

// CHECK-LABEL: func.func @softmax_shifted
// CHECK-NEXT: %[[S:.*]] = nn.softmax %arg0 {axis = 1 : i64} : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: return %[[S]]
func.func @softmax_shifted(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %m = nn.reduce_max %x {axes = array<i64: -1>} : tensor<4x8xf32> -> tensor<4x1xf32>
  %d = nn.sub %x, %m : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %e = nn.exp %d : tensor<4x8xf32> -> tensor<4x8xf32>
  %s = nn.reduce_sum %e {axes = array<i64: 1>} : tensor<4x8xf32> -> tensor<4x1xf32>
  %y = nn.div %e, %s : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @softmax_unshifted
// CHECK-NEXT: %[[S:.*]] = nn.softmax %arg0 {axis = 0 : i64}
// CHECK-NEXT: return %[[S]]
func.func @softmax_unshifted(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = nn.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %s = nn.reduce_sum %e {axes = array<i64: 0>} : tensor<4x8xf32> -> tensor<1x8xf32>
  %y = nn.div %e, %s : tensor<4x8xf32>, tensor<1x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// The max and the sum run over different axes: not a softmax of %x, but
// still a softmax (along 1) of the shifted value.
// CHECK-LABEL: func.func @softmax_mixed_axes
// CHECK-NEXT: %[[M:.*]] = nn.reduce_max %arg0 {axes = array<i64: 0>}
// CHECK-NEXT: %[[D:.*]] = nn.sub %arg0, %[[M]]
// CHECK-NEXT: nn.softmax %[[D]] {axis = 1 : i64}
func.func @softmax_mixed_axes(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %m = nn.reduce_max %x {axes = array<i64: 0>} : tensor<4x8xf32> -> tensor<1x8xf32>
  %d = nn.sub %x, %m : tensor<4x8xf32>, tensor<1x8xf32> -> tensor<4x8xf32>
  %e = nn.exp %d : tensor<4x8xf32> -> tensor<4x8xf32>
  %s = nn.reduce_sum %e {axes = array<i64: 1>} : tensor<4x8xf32> -> tensor<4x1xf32>
  %y = nn.div %e, %s : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
