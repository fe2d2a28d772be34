// RUN: ipu-opt %s --split-input-file | filecheck %s
// RUN: ipu-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(canonicalize))' | filecheck %s --check-prefix=FOLD

// nn.reduce_min and nn.reduce_prod, which ONNX ReduceMin and ReduceProd
// import to: the custom form round-trips, and both fold on constants
// (floats and integers; the empty product is 1, the empty float minimum +inf).

// CHECK-LABEL: func.func @forms
func.func @forms(%x: tensor<2x3xf32>) -> (tensor<2x1xf32>, tensor<3xf32>) {
  // CHECK-NEXT: %0 = nn.reduce_min %arg0 {axes = array<i64: 1>} : tensor<2x3xf32> -> tensor<2x1xf32>
  %0 = nn.reduce_min %x {axes = array<i64: 1>} : tensor<2x3xf32> -> tensor<2x1xf32>
  // CHECK-NEXT: %1 = nn.reduce_prod %arg0 {axes = array<i64: 0>, keepdims = 0 : i64} : tensor<2x3xf32> -> tensor<3xf32>
  %1 = nn.reduce_prod %x {axes = array<i64: 0>, keepdims = 0 : i64} : tensor<2x3xf32> -> tensor<3xf32>
  return %0, %1 : tensor<2x1xf32>, tensor<3xf32>
}

// -----

// FOLD-LABEL: func.func @folded
func.func @folded() -> (tensor<2x1xf32>, tensor<3xi32>, tensor<1xf32>) {
  %x = nn.constant dense<[[3.0, -1.0, 2.0], [0.5, 4.0, 8.0]]> : tensor<2x3xf32>
  %i = nn.constant dense<[[2, -3, 4], [5, 6, -1]]> : tensor<2x3xi32>
  %e = nn.constant dense<> : tensor<0x1xf32>
  // FOLD-DAG: dense<{{\[}}[-1.000000e+00], [5.000000e-01]]> : tensor<2x1xf32>
  %0 = nn.reduce_min %x {axes = array<i64: 1>} : tensor<2x3xf32> -> tensor<2x1xf32>
  // FOLD-DAG: dense<[10, -18, -4]> : tensor<3xi32>
  %1 = nn.reduce_prod %i {axes = array<i64: 0>, keepdims = 0 : i64} : tensor<2x3xi32> -> tensor<3xi32>
  // FOLD-DAG: dense<[1.000000e+00]> : tensor<1xf32>
  %2 = nn.reduce_prod %e {axes = array<i64: 0>, keepdims = 0 : i64} : tensor<0x1xf32> -> tensor<1xf32>
  // FOLD-NOT: nn.reduce
  return %0, %1, %2 : tensor<2x1xf32>, tensor<3xi32>, tensor<1xf32>
}
