// Upstream's verifier checks TOSA on the way in; its errors keep the input's
// file:line:col and show the line.
// REQUIRES: upstream-mlir
// RUN: not ipu-opt %s --upstream 2>&1 | filecheck %s
// RUN: not ipu-run %s --device reference --upstream 2>&1 | filecheck %s

// CHECK: upstream-verifier-errors.mlir:[[@LINE+3]]:8: error: upstream MLIR: 'tosa.add' op
// CHECK-NEXT: %r = tosa.add
func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>) -> tensor<2x3xf32> {
  %r = tosa.add %a, %b : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}
