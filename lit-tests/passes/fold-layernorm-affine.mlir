// fold-layernorm-affine moves each LayerNorm's scale and shift into the
// constant products that read it: W' = diag(gamma) W, b' = b + beta W,
// the LayerNorm left with ones and zeros (which the IPU's LN tiles then
// skip). The reference executor gives the same outputs before and after.

// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(fold-layernorm-affine))' | filecheck %s
// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(fold-layernorm-affine))' -o %t.mlir
// RUN: ipu-run %s --device reference --function fold --print-outputs | filecheck %s --check-prefix=OUT
// RUN: ipu-run %t.mlir --device reference --function fold --print-outputs | filecheck %s --check-prefix=OUT
// RUN: ipu-run %s --device reference --function two_products --print-outputs | filecheck %s --check-prefix=TWO
// RUN: ipu-run %t.mlir --device reference --function two_products --print-outputs | filecheck %s --check-prefix=TWO
// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(fold-layernorm-affine))' --mlir-pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=STATS

// Dyadic values, so the folded constants are exact: row k of W times
// gamma[k], and the bias plus beta W (0.25 + 1 - 0.5, -0.5 + 0.5 + 0.0625).
// CHECK-LABEL: func.func @fold()
// One constant of ones and one of zeros per type, at the top of the body.
// CHECK-DAG: %[[ZEROS:.*]] = nn.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK-DAG: %[[ONES:.*]] = nn.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK: %[[LN:.*]] = nn.layer_normalization %{{.*}}, %[[ONES]], %[[ZEROS]]
// CHECK-NEXT: %[[W:.*]] = nn.constant dense<{{\[\[}}1.000000e+00, -5.000000e-01], [1.000000e+00, 5.000000e-01], [1.250000e-01, 1.000000e+00], [-1.000000e+00, 1.250000e-01]]> : tensor<4x2xf32>
// CHECK-NEXT: %[[B:.*]] = nn.constant dense<[7.500000e-01, 6.250000e-02]> : tensor<2xf32>
// CHECK-NEXT: nn.linear %[[LN]], %[[W]], %[[B]]
// OUT: output_0 = [-2.5021, 0.5404, 0.1881, 1.1121]
func.func @fold() -> tensor<2x2xf32> {
  %x = nn.constant dense<[[1.0, 2.0, 4.0, 8.0], [0.5, -1.0, 3.0, 0.0]]> : tensor<2x4xf32>
  %g = nn.constant dense<[2.0, 1.0, 0.5, 1.0]> : tensor<4xf32>
  %b = nn.constant dense<[0.0, 1.0, 0.0, 0.5]> : tensor<4xf32>
  %w = nn.constant dense<[[0.5, -0.25], [1.0, 0.5], [0.25, 2.0], [-1.0, 0.125]]> : tensor<4x2xf32>
  %c = nn.constant dense<[0.25, -0.5]> : tensor<2xf32>
  %0 = nn.layer_normalization %x, %g, %b {axis = -1 : i64, epsilon = 1.0e-06 : f32} : tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %1 = nn.linear %0, %w, %c : tensor<2x4xf32>, tensor<4x2xf32>, tensor<2xf32> -> tensor<2x2xf32>
  return %1 : tensor<2x2xf32>
}

// Every product reading the LayerNorm gets its own folded weights (a
// product without a bias takes a scale alone: no shift here).
// CHECK-LABEL: func.func @two_products()
// CHECK: nn.layer_normalization %{{.*}}, %[[ONES2:.*]] {
// CHECK: %[[W1:.*]] = nn.constant dense<{{\[\[}}2.000000e+00], [4.000000e+00]]>
// CHECK-NEXT: nn.linear %{{.*}}, %[[W1]] :
// CHECK: %[[W2:.*]] = nn.constant dense<{{\[\[}}-2.000000e+00], [1.000000e+00]]>
// CHECK-NEXT: nn.linear %{{.*}}, %[[W2]] :
// TWO: output_0 = [2.0000, -2.0000]
// TWO: output_1 = [3.0000, -3.0000]
func.func @two_products() -> (tensor<2x1xf32>, tensor<2x1xf32>) {
  %x = nn.constant dense<[[1.0, 3.0], [2.0, 0.0]]> : tensor<2x2xf32>
  %g = nn.constant dense<[2.0, 4.0]> : tensor<2xf32>
  %w1 = nn.constant dense<[[1.0], [1.0]]> : tensor<2x1xf32>
  %w2 = nn.constant dense<[[-1.0], [0.25]]> : tensor<2x1xf32>
  %0 = nn.layer_normalization %x, %g {axis = -1 : i64, epsilon = 0.0 : f32} : tensor<2x2xf32>, tensor<2xf32> -> tensor<2x2xf32>
  %1 = nn.linear %0, %w1 : tensor<2x2xf32>, tensor<2x1xf32> -> tensor<2x1xf32>
  %2 = nn.linear %0, %w2 : tensor<2x2xf32>, tensor<2x1xf32> -> tensor<2x1xf32>
  return %1, %2 : tensor<2x1xf32>, tensor<2x1xf32>
}

// Left alone: a LayerNorm that is returned (an encoder's post-LayerNorm,
// its output), one read by anything but a product's input, a shift with
// a product that has no bias to take it, and one already folded.
// CHECK-LABEL: func.func @kept(
// CHECK: %[[G3:.*]] = nn.constant dense<[2.000000e+00, 1.000000e+00]>
// CHECK: nn.layer_normalization %arg0, %[[G3]] {
// CHECK: %[[G4:.*]] = nn.constant dense<[3.000000e+00, 1.000000e+00]>
// CHECK: nn.layer_normalization %arg0, %[[G4]] {
// CHECK: %[[G5:.*]] = nn.constant dense<[4.000000e+00, 1.000000e+00]>
// CHECK: %[[B5:.*]] = nn.constant dense<[1.000000e+00, 0.000000e+00]>
// CHECK: nn.layer_normalization %arg0, %[[G5]], %[[B5]] {
// CHECK: %[[W5:.*]] = nn.constant dense<{{\[\[}}1.000000e+00], [2.000000e+00]]>
// CHECK: nn.layer_normalization %arg0, %[[ONE:.*]] {
func.func @kept(%x: tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x1xf32>, tensor<2x1xf32>) {
  %w = nn.constant dense<[[1.0], [2.0]]> : tensor<2x1xf32>
  %g3 = nn.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %0 = nn.layer_normalization %x, %g3 {axis = -1 : i64, epsilon = 1.0e-06 : f32} : tensor<2x2xf32>, tensor<2xf32> -> tensor<2x2xf32>
  %1 = nn.linear %0, %w : tensor<2x2xf32>, tensor<2x1xf32> -> tensor<2x1xf32>
  %g4 = nn.constant dense<[3.0, 1.0]> : tensor<2xf32>
  %2 = nn.layer_normalization %x, %g4 {axis = -1 : i64, epsilon = 1.0e-06 : f32} : tensor<2x2xf32>, tensor<2xf32> -> tensor<2x2xf32>
  %3 = nn.add %2, %x : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
  %g5 = nn.constant dense<[4.0, 1.0]> : tensor<2xf32>
  %b5 = nn.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %4 = nn.layer_normalization %x, %g5, %b5 {axis = -1 : i64, epsilon = 1.0e-06 : f32} : tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<2x2xf32>
  %w5 = nn.constant dense<[[1.0], [2.0]]> : tensor<2x1xf32>
  %5 = nn.linear %4, %w5 : tensor<2x2xf32>, tensor<2x1xf32> -> tensor<2x1xf32>
  %one = nn.constant dense<1.0> : tensor<2xf32>
  %6 = nn.layer_normalization %x, %one {axis = -1 : i64, epsilon = 1.0e-06 : f32} : tensor<2x2xf32>, tensor<2xf32> -> tensor<2x2xf32>
  %7 = nn.linear %6, %w : tensor<2x2xf32>, tensor<2x1xf32> -> tensor<2x1xf32>
  return %0, %1, %3, %5, %7 : tensor<2x2xf32>, tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x1xf32>, tensor<2x1xf32>
}

// STATS: fold-layernorm-affine
// STATS-DAG: 2 num-folded-layernorms
// STATS-DAG: 3 num-folded-products
