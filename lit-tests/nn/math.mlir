// RUN: ipu-opt %s --split-input-file | filecheck %s
// RUN: ipu-opt %s --split-input-file --mlir-print-op-generic | ipu-opt --split-input-file | filecheck %s
// RUN: ipu-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(canonicalize))' | filecheck %s --check-prefix=FOLD

// The unary math ops ONNX Sin/Cos/Tan, their inverses, the hyperbolic
// functions and Floor/Ceil/Round import to: custom form, generic round
// trip, and folding on constants (the folder and the reference executor
// share `UnaryKind::apply_f64`).

// CHECK-LABEL: func.func @math
func.func @math(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  // CHECK-NEXT: %0 = nn.sin %arg0 : tensor<3xf32> -> tensor<3xf32>
  %0 = nn.sin %x : tensor<3xf32> -> tensor<3xf32>
  // CHECK-NEXT: %1 = nn.acosh %0 : tensor<3xf32> -> tensor<3xf32>
  %1 = nn.acosh %0 : tensor<3xf32> -> tensor<3xf32>
  // CHECK-NEXT: %2 = nn.atanh %1 : tensor<3xf32> -> tensor<3xf32>
  %2 = nn.atanh %1 : tensor<3xf32> -> tensor<3xf32>
  // CHECK-NEXT: %3 = nn.round %2 : tensor<3xf32> -> tensor<3xf32>
  %3 = nn.round %2 : tensor<3xf32> -> tensor<3xf32>
  return %0, %1, %2, %3 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// Rounding: floor and ceil toward -inf/+inf, round halves to even (as numpy,
// not away from zero as C's round).
// FOLD-LABEL: func.func @rounding
func.func @rounding() -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %x = nn.constant dense<[-1.5, -0.5, 0.5, 2.5]> : tensor<4xf32>
  %0 = nn.floor %x : tensor<4xf32> -> tensor<4xf32>
  %1 = nn.ceil %x : tensor<4xf32> -> tensor<4xf32>
  %2 = nn.round %x : tensor<4xf32> -> tensor<4xf32>
  // FOLD-DAG: dense<[-2.000000e+00, -1.000000e+00, 0.000000e+00, 2.000000e+00]> : tensor<4xf32>
  // FOLD-DAG: dense<[-1.000000e+00, -0.000000e+00, 1.000000e+00, 3.000000e+00]> : tensor<4xf32>
  // FOLD-DAG: dense<[-2.000000e+00, -0.000000e+00, 0.000000e+00, 2.000000e+00]> : tensor<4xf32>
  // FOLD-NOT: nn.round
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Trigonometry folded at points with exact f32 results.
// FOLD-LABEL: func.func @trig
func.func @trig() -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
  %z = nn.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %0 = nn.cos %z : tensor<2xf32> -> tensor<2xf32>
  %1 = nn.acos %z : tensor<2xf32> -> tensor<2xf32>
  %2 = nn.cosh %z : tensor<2xf32> -> tensor<2xf32>
  %3 = nn.tan %z : tensor<2xf32> -> tensor<2xf32>
  // FOLD-DAG: dense<[1.000000e+00, 5.403023e-1]> : tensor<2xf32>
  // FOLD-DAG: dense<[1.5707964, 0.000000e+00]> : tensor<2xf32>
  // FOLD-DAG: dense<[1.000000e+00, 1.5430807]> : tensor<2xf32>
  // FOLD-DAG: dense<[0.000000e+00, 1.5574077]> : tensor<2xf32>
  // FOLD-NOT: nn.cos
  return %0, %1, %2, %3 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}
