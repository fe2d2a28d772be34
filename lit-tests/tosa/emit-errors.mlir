// nn ops without a TOSA form are all reported, each with the reason, before
// anything is written.
// REQUIRES: upstream-mlir
// RUN: not ipu-opt %s --emit=tosa 2>&1 | filecheck %s

// CHECK: emit-errors.mlir:[[@LINE+5]]:8: error: cannot write as TOSA: 2 ops without a TOSA form (nn.mod, nn.slice)
// CHECK: emit-errors.mlir:[[@LINE+4]]:8: note: 'nn.mod' has no TOSA form
// CHECK: emit-errors.mlir:[[@LINE+4]]:8: note: 'nn.slice' has steps other than 1; tosa.slice has none
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<2xf32>, tensor<4xf32>) {
  %s = nn.add %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %m = nn.mod %a, %b {fmod = 1 : i64} : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %t = nn.slice %a {starts = array<i64: 0>, ends = array<i64: 4>, steps = array<i64: 2>} : tensor<4xf32> -> tensor<2xf32>
  return %s, %t, %m : tensor<4xf32>, tensor<2xf32>, tensor<4xf32>
}
