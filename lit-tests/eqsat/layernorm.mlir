// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(eqsat-fuse))' | filecheck %s

// The opset-14 decomposition with the affine part.
// CHECK-LABEL: func.func @layernorm_affine
// CHECK-NEXT: %[[N:.*]] = nn.layer_normalization %arg0, %arg1, %arg2 {axis = 2 : i64, epsilon = 1.000000e-06 : f32} : tensor<1x16x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<1x16x64xf32>
// CHECK-NEXT: return %[[N]]
func.func @layernorm_affine(%x: tensor<1x16x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<1x16x64xf32> {
  %two = nn.constant dense<2.0> : tensor<f32>
  %eps = nn.constant dense<1.0e-6> : tensor<f32>
  %m = nn.reduce_mean %x {axes = array<i64: -1>} : tensor<1x16x64xf32> -> tensor<1x16x1xf32>
  %d = nn.sub %x, %m : tensor<1x16x64xf32>, tensor<1x16x1xf32> -> tensor<1x16x64xf32>
  %p = nn.pow %d, %two : tensor<1x16x64xf32>, tensor<f32> -> tensor<1x16x64xf32>
  %v = nn.reduce_mean %p {axes = array<i64: -1>} : tensor<1x16x64xf32> -> tensor<1x16x1xf32>
  %ve = nn.add %v, %eps : tensor<1x16x1xf32>, tensor<f32> -> tensor<1x16x1xf32>
  %s = nn.sqrt %ve : tensor<1x16x1xf32> -> tensor<1x16x1xf32>
  %n = nn.div %d, %s : tensor<1x16x64xf32>, tensor<1x16x1xf32> -> tensor<1x16x64xf32>
  %y = nn.mul %n, %g : tensor<1x16x64xf32>, tensor<64xf32> -> tensor<1x16x64xf32>
  %z = nn.add %y, %b : tensor<1x16x64xf32>, tensor<64xf32> -> tensor<1x16x64xf32>
  return %z : tensor<1x16x64xf32>
}

// Without the affine part: a unit scale is materialized; (x-m)*(x-m)
// stands for the square.
// CHECK-LABEL: func.func @layernorm_plain
// CHECK-NEXT: %[[ONE:.*]] = nn.constant dense<1.000000e+00> : tensor<8xf32>
// CHECK-NEXT: %[[N:.*]] = nn.layer_normalization %arg0, %[[ONE]] {axis = 1 : i64, epsilon = 1.000000e-05 : f32}
// CHECK-NEXT: return %[[N]]
func.func @layernorm_plain(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %eps = nn.constant dense<1.0e-5> : tensor<f32>
  %m = nn.reduce_mean %x {axes = array<i64: 1>} : tensor<4x8xf32> -> tensor<4x1xf32>
  %d = nn.sub %x, %m : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %p = nn.mul %d, %d : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %v = nn.reduce_mean %p {axes = array<i64: 1>} : tensor<4x8xf32> -> tensor<4x1xf32>
  %ve = nn.add %eps, %v : tensor<f32>, tensor<4x1xf32> -> tensor<4x1xf32>
  %s = nn.sqrt %ve : tensor<4x1xf32> -> tensor<4x1xf32>
  %n = nn.div %d, %s : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}

// Negative: statistics over axis 1 of a rank-3 tensor are not over the
// trailing axes.
// CHECK-LABEL: func.func @layernorm_wrong_axis
// CHECK-NOT: nn.layer_normalization
// CHECK: return
func.func @layernorm_wrong_axis(%x: tensor<1x16x64xf32>) -> tensor<1x16x64xf32> {
  %two = nn.constant dense<2.0> : tensor<f32>
  %eps = nn.constant dense<1.0e-6> : tensor<f32>
  %m = nn.reduce_mean %x {axes = array<i64: 1>} : tensor<1x16x64xf32> -> tensor<1x1x64xf32>
  %d = nn.sub %x, %m : tensor<1x16x64xf32>, tensor<1x1x64xf32> -> tensor<1x16x64xf32>
  %p = nn.pow %d, %two : tensor<1x16x64xf32>, tensor<f32> -> tensor<1x16x64xf32>
  %v = nn.reduce_mean %p {axes = array<i64: 1>} : tensor<1x16x64xf32> -> tensor<1x1x64xf32>
  %ve = nn.add %v, %eps : tensor<1x1x64xf32>, tensor<f32> -> tensor<1x1x64xf32>
  %s = nn.sqrt %ve : tensor<1x1x64xf32> -> tensor<1x1x64xf32>
  %n = nn.div %d, %s : tensor<1x16x64xf32>, tensor<1x1x64xf32> -> tensor<1x16x64xf32>
  return %n : tensor<1x16x64xf32>
}

// Negative: epsilon added after the square root.
// CHECK-LABEL: func.func @layernorm_eps_outside_sqrt
// CHECK-NOT: nn.layer_normalization
// CHECK: return
func.func @layernorm_eps_outside_sqrt(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %two = nn.constant dense<2.0> : tensor<f32>
  %eps = nn.constant dense<1.0e-5> : tensor<f32>
  %m = nn.reduce_mean %x {axes = array<i64: 1>} : tensor<4x8xf32> -> tensor<4x1xf32>
  %d = nn.sub %x, %m : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %p = nn.pow %d, %two : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %v = nn.reduce_mean %p {axes = array<i64: 1>} : tensor<4x8xf32> -> tensor<4x1xf32>
  %s = nn.sqrt %v : tensor<4x1xf32> -> tensor<4x1xf32>
  %se = nn.add %s, %eps : tensor<4x1xf32>, tensor<f32> -> tensor<4x1xf32>
  %n = nn.div %d, %se : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}
