// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(canonicalize))' | filecheck %s

// Constant folding of nn ops: the folded value is materialized as
// nn.constant and the dead inputs disappear.

// CHECK-LABEL: func.func @arith_broadcast
func.func @arith_broadcast() -> tensor<2x3xf32> {
  %0 = nn.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %1 = nn.constant dense<[10.0, 20.0, 30.0]> : tensor<3xf32>
  %2 = nn.constant dense<2.0> : tensor<f32>
  %3 = nn.add %0, %1 : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %4 = nn.mul %3, %2 : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
  // CHECK-NEXT: [[C:%.*]] = nn.constant dense<{{\[\[}}2.200000e+01, 4.400000e+01, 6.600000e+01], [2.800000e+01, 5.000000e+01, 7.200000e+01]]> : tensor<2x3xf32>
  // CHECK-NEXT: return [[C]] : tensor<2x3xf32>
  return %4 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @integer_mod
func.func @integer_mod() -> tensor<4xi32> {
  %0 = nn.constant dense<[7, -7, 7, -7]> : tensor<4xi32>
  %1 = nn.constant dense<[2, 2, -2, -2]> : tensor<4xi32>
  %2 = nn.mod %0, %1 : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  // CHECK-NEXT: [[C:%.*]] = nn.constant dense<[1, 1, -1, -1]> : tensor<4xi32>
  // CHECK-NEXT: return [[C]]
  return %2 : tensor<4xi32>
}

// Float mod without fmod is Python's %: the divisor's sign, also for zero.
// CHECK-LABEL: func.func @float_mod
func.func @float_mod() -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = nn.constant dense<[4.5, -4.5, 4.5, -4.0]> : tensor<4xf32>
  %1 = nn.constant dense<[2.0, 2.0, -2.0, -2.0]> : tensor<4xf32>
  %2 = nn.mod %0, %1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %3 = nn.mod %0, %1 {fmod = 1 : i64} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  // CHECK-NEXT: [[P:%.*]] = nn.constant dense<[5.000000e-01, 1.500000e+00, -1.500000e+00, -0.000000e+00]> : tensor<4xf32>
  // CHECK-NEXT: [[C:%.*]] = nn.constant dense<[5.000000e-01, -5.000000e-01, 5.000000e-01, -0.000000e+00]> : tensor<4xf32>
  // CHECK-NEXT: return [[P]], [[C]]
  return %2, %3 : tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @compare_and_select
func.func @compare_and_select() -> tensor<3xf32> {
  %0 = nn.constant dense<[1.0, 5.0, 3.0]> : tensor<3xf32>
  %1 = nn.constant dense<[2.0, 2.0, 3.0]> : tensor<3xf32>
  %2 = nn.greater %0, %1 : tensor<3xf32>, tensor<3xf32> -> tensor<3xi1>
  %3 = nn.where %2, %0, %1 : tensor<3xi1>, tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  // CHECK-NEXT: [[C:%.*]] = nn.constant dense<[2.000000e+00, 5.000000e+00, 3.000000e+00]> : tensor<3xf32>
  // CHECK-NEXT: return [[C]]
  return %3 : tensor<3xf32>
}

// CHECK-LABEL: func.func @cast_to_fp8_saturates
func.func @cast_to_fp8_saturates() -> tensor<2xf8E4M3FNUZ> {
  %0 = nn.constant dense<[1000.0, 3.7]> : tensor<2xf32>
  %1 = nn.cast %0 {to = f8E4M3FNUZ} : tensor<2xf32> -> tensor<2xf8E4M3FNUZ>
  // CHECK-NEXT: [[C:%.*]] = nn.constant dense<[2.400000e+02, 3.750000e+00]> : tensor<2xf8E4M3FNUZ>
  // CHECK-NEXT: return [[C]]
  return %1 : tensor<2xf8E4M3FNUZ>
}

// CHECK-LABEL: func.func @shape_ops
func.func @shape_ops() -> (tensor<3x2xi32>, tensor<2x1xi32>, tensor<4xi32>) {
  %0 = nn.constant dense<[[0, 1, 2], [3, 4, 5]]> : tensor<2x3xi32>
  %1 = nn.transpose %0 {perm = array<i64: 1, 0>} : tensor<2x3xi32> -> tensor<3x2xi32>
  %2 = nn.slice %0 {axes = array<i64: 1>, ends = array<i64: 3>, starts = array<i64: 2>} : tensor<2x3xi32> -> tensor<2x1xi32>
  %3 = nn.constant dense<[2, -1]> : tensor<2xi64>
  %4 = nn.reshape %0 {shape = array<i64: 6>} : tensor<2x3xi32> -> tensor<6xi32>
  %5 = nn.gather %4, %3 {axis = 0 : i64} : tensor<6xi32>, tensor<2xi64> -> tensor<2xi32>
  %6 = nn.concat %5, %5 {axis = 0 : i64} : tensor<2xi32>, tensor<2xi32> -> tensor<4xi32>
  // CHECK-DAG: [[T:%.*]] = nn.constant dense<{{\[\[}}0, 3], [1, 4], [2, 5]]> : tensor<3x2xi32>
  // CHECK-DAG: [[S:%.*]] = nn.constant dense<{{\[\[}}2], [5]]> : tensor<2x1xi32>
  // CHECK-DAG: [[G:%.*]] = nn.constant dense<[2, 5, 2, 5]> : tensor<4xi32>
  // CHECK: return [[T]], [[S]], [[G]]
  return %1, %2, %6 : tensor<3x2xi32>, tensor<2x1xi32>, tensor<4xi32>
}

// CHECK-LABEL: func.func @splats_stay_splats
func.func @splats_stay_splats() -> tensor<3x2xf32> {
  %0 = nn.constant dense<1.5> : tensor<2x3xf32>
  %1 = nn.exp %0 : tensor<2x3xf32> -> tensor<2x3xf32>
  %2 = nn.reshape %1 {shape = array<i64: 3, 2>} : tensor<2x3xf32> -> tensor<3x2xf32>
  // CHECK-NEXT: [[C:%.*]] = nn.constant dense<4.481689> : tensor<3x2xf32>
  // CHECK-NEXT: return [[C]]
  return %2 : tensor<3x2xf32>
}

// CHECK-LABEL: func.func @no_op_shape_ops
// CHECK-SAME: ([[X:%.*]]: tensor<2x3xf32>)
func.func @no_op_shape_ops(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = nn.identity %arg0 : tensor<2x3xf32> -> tensor<2x3xf32>
  %1 = nn.transpose %0 {perm = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<2x3xf32>
  %2 = nn.reshape %1 {shape = array<i64: 2, 3>} : tensor<2x3xf32> -> tensor<2x3xf32>
  %3 = nn.cast %2 {to = f32} : tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK-NEXT: return [[X]] : tensor<2x3xf32>
  return %3 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @division_by_zero_is_not_folded
func.func @division_by_zero_is_not_folded() -> tensor<2xi32> {
  %0 = nn.constant dense<[1, 2]> : tensor<2xi32>
  %1 = nn.constant dense<0> : tensor<2xi32>
  // CHECK: nn.div
  %2 = nn.div %0, %1 : tensor<2xi32>, tensor<2xi32> -> tensor<2xi32>
  return %2 : tensor<2xi32>
}
