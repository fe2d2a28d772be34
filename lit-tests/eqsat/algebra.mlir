// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(eqsat-fuse{rules=algebra}))' | filecheck %s

// x*1, x+0, x/1 and x-0 disappear; a splat computation folds.
// CHECK-LABEL: func.func @identities
// CHECK-NEXT: return %arg0
func.func @identities(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %one = nn.constant dense<1.0> : tensor<f32>
  %two = nn.constant dense<2.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<f32>
  %zero = nn.constant dense<0.0> : tensor<4x8xf32>
  %c = nn.mul %two, %half : tensor<f32>, tensor<f32> -> tensor<f32>
  %0 = nn.mul %x, %c : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %1 = nn.add %zero, %0 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %2 = nn.div %1, %one : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %3 = nn.sub %2, %zero : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %3 : tensor<4x8xf32>
}

// Broadcasting identities are kept: x + 0 with a larger zero changes the shape.
// CHECK-LABEL: func.func @broadcasting_add_zero
// CHECK: nn.add
func.func @broadcasting_add_zero(%x: tensor<8xf32>) -> tensor<4x8xf32> {
  %zero = nn.constant dense<0.0> : tensor<4x8xf32>
  %0 = nn.add %x, %zero : tensor<8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// Division by a constant becomes multiplication by its reciprocal.
// CHECK-LABEL: func.func @div_const
// CHECK-NEXT: %[[C:.*]] = nn.constant dense<2.500000e-01> : tensor<f32>
// CHECK-NEXT: nn.mul %arg0, %[[C]]
func.func @div_const(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %four = nn.constant dense<4.0> : tensor<f32>
  %0 = nn.div %x, %four : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// Two transposes compose; inverse ones cancel; reshape chains collapse.
// CHECK-LABEL: func.func @shapes
// CHECK-NEXT: %[[T:.*]] = nn.transpose %arg0 {perm = array<i64: 0, 2, 3, 1>}
// CHECK-NEXT: %[[R:.*]] = nn.reshape %arg1 {shape = array<i64: 4, 8>}
// CHECK-NEXT: return %[[T]], %arg0, %[[R]]
func.func @shapes(%x: tensor<1x2x3x4xf32>, %y: tensor<32xf32>) -> (tensor<1x3x4x2xf32>, tensor<1x2x3x4xf32>, tensor<4x8xf32>) {
  %0 = nn.transpose %x {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x3x4xf32> -> tensor<1x3x2x4xf32>
  %1 = nn.transpose %0 {perm = array<i64: 0, 1, 3, 2>} : tensor<1x3x2x4xf32> -> tensor<1x3x4x2xf32>
  %2 = nn.transpose %0 {perm = array<i64: 0, 2, 1, 3>} : tensor<1x3x2x4xf32> -> tensor<1x2x3x4xf32>
  %3 = nn.reshape %y {shape = array<i64: 2, 16>} : tensor<32xf32> -> tensor<2x16xf32>
  %4 = nn.reshape %3 {shape = array<i64: 4, 8>} : tensor<2x16xf32> -> tensor<4x8xf32>
  return %1, %2, %4 : tensor<1x3x4x2xf32>, tensor<1x2x3x4xf32>, tensor<4x8xf32>
}
