// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(eqsat-fuse{rules=linear,qkv}))' | filecheck %s

// Three projections of one input become one linear over the concatenated
// weights and biases, and a split.
// CHECK-LABEL: func.func @qkv
// CHECK-DAG: %[[W:.*]] = nn.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00], [1.000000e+00, 2.000000e+00, 3.000000e+00]]> : tensor<2x3xf32>
// CHECK-DAG: %[[B:.*]] = nn.constant dense<[1.000000e-01, 2.000000e-01, 3.000000e-01]> : tensor<3xf32>
// CHECK: %[[L:.*]] = nn.linear %arg0, %[[W]], %[[B]] : tensor<4x2xf32>, tensor<2x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
// CHECK-NEXT: %[[S:.*]]:3 = nn.split %[[L]] {axis = 1 : i64, sizes = array<i64: 1, 1, 1>}
// CHECK-NEXT: return %[[S]]#0, %[[S]]#1, %[[S]]#2
func.func @qkv(%x: tensor<4x2xf32>) -> (tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>) {
  %wq = nn.constant dense<1.0> : tensor<2x1xf32>
  %wk = nn.constant dense<2.0> : tensor<2x1xf32>
  %wv = nn.constant dense<3.0> : tensor<2x1xf32>
  %bq = nn.constant dense<0.1> : tensor<1xf32>
  %bk = nn.constant dense<0.2> : tensor<1xf32>
  %bv = nn.constant dense<0.3> : tensor<1xf32>
  %q = nn.linear %x, %wq, %bq : tensor<4x2xf32>, tensor<2x1xf32>, tensor<1xf32> -> tensor<4x1xf32>
  %k = nn.linear %x, %wk, %bk : tensor<4x2xf32>, tensor<2x1xf32>, tensor<1xf32> -> tensor<4x1xf32>
  %v = nn.linear %x, %wv, %bv : tensor<4x2xf32>, tensor<2x1xf32>, tensor<1xf32> -> tensor<4x1xf32>
  return %q, %k, %v : tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>
}

// Negative: weights that are not constants are left alone, and so are
// linears of different inputs.
// CHECK-LABEL: func.func @not_shared
// CHECK-NOT: nn.split
// CHECK: return
func.func @not_shared(%x: tensor<4x2xf32>, %y: tensor<4x2xf32>, %w: tensor<2x1xf32>) -> (tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>) {
  %wq = nn.constant dense<1.0> : tensor<2x1xf32>
  %q = nn.linear %x, %wq : tensor<4x2xf32>, tensor<2x1xf32> -> tensor<4x1xf32>
  %k = nn.linear %x, %w : tensor<4x2xf32>, tensor<2x1xf32> -> tensor<4x1xf32>
  %v = nn.linear %y, %wq : tensor<4x2xf32>, tensor<2x1xf32> -> tensor<4x1xf32>
  return %q, %k, %v : tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>
}
