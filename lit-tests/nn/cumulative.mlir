// RUN: ipu-opt %s --split-input-file | filecheck %s
// RUN: ipu-opt %s --split-input-file --mlir-print-op-generic | ipu-opt --split-input-file | filecheck %s
// RUN: ipu-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(canonicalize))' | filecheck %s --check-prefix=FOLD

// nn.cumsum / nn.cumprod (ONNX CumSum / CumProd): custom form, generic
// round trip, and folding on constants with `exclusive` and `reverse`.

// CHECK-LABEL: func.func @scan
func.func @scan(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  // CHECK-NEXT: %0 = nn.cumsum %arg0 {axis = 1 : i64} : tensor<2x3xf32> -> tensor<2x3xf32>
  %0 = nn.cumsum %x {axis = 1 : i64} : tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK-NEXT: %1 = nn.cumprod %0 {axis = -2 : i64, exclusive = 1 : i64, reverse = 1 : i64} : tensor<2x3xf32> -> tensor<2x3xf32>
  %1 = nn.cumprod %0 {axis = -2 : i64, exclusive = 1 : i64, reverse = 1 : i64} : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// Along the rows of [[1, 2, 3], [4, 5, 6]]: inclusive, exclusive (each
// element leaves itself out), reversed, and a product down the columns.
// FOLD-LABEL: func.func @folded
func.func @folded() -> (tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x3xi32>) {
  %x = nn.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %0 = nn.cumsum %x {axis = 1 : i64} : tensor<2x3xi32> -> tensor<2x3xi32>
  %1 = nn.cumsum %x {axis = 1 : i64, exclusive = 1 : i64} : tensor<2x3xi32> -> tensor<2x3xi32>
  %2 = nn.cumsum %x {axis = 1 : i64, reverse = 1 : i64} : tensor<2x3xi32> -> tensor<2x3xi32>
  %3 = nn.cumprod %x {axis = 0 : i64} : tensor<2x3xi32> -> tensor<2x3xi32>
  // FOLD-DAG: dense<{{\[\[}}1, 3, 6], [4, 9, 15]]> : tensor<2x3xi32>
  // FOLD-DAG: dense<{{\[\[}}0, 1, 3], [0, 4, 9]]> : tensor<2x3xi32>
  // FOLD-DAG: dense<{{\[\[}}6, 5, 3], [15, 11, 6]]> : tensor<2x3xi32>
  // FOLD-DAG: dense<{{\[\[}}1, 2, 3], [4, 10, 18]]> : tensor<2x3xi32>
  // FOLD-NOT: nn.cumsum
  // FOLD-NOT: nn.cumprod
  return %0, %1, %2, %3 : tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x3xi32>
}
