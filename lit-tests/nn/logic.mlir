// RUN: ipu-opt %s --split-input-file | filecheck %s
// RUN: ipu-opt %s --split-input-file --mlir-print-op-generic | ipu-opt --split-input-file | filecheck %s
// RUN: ipu-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(canonicalize))' | filecheck %s --check-prefix=FOLD

// The logical ops (nn.and, nn.or, nn.xor, nn.not on i1) and the comparisons
// nn.less_equal / nn.greater_equal that ONNX And/Or/Xor/Not and
// LessOrEqual/GreaterOrEqual import to: custom form, generic round trip,
// and folding on constants (numpy broadcasting, i1 results).

// CHECK-LABEL: func.func @logic
// FOLD-LABEL: func.func @logic
func.func @logic(%a: tensor<2x2xi1>, %b: tensor<2xi1>) -> (tensor<2x2xi1>, tensor<2x2xi1>, tensor<2x2xi1>, tensor<2x2xi1>) {
  // CHECK-NEXT: %0 = nn.and %arg0, %arg1 : tensor<2x2xi1>, tensor<2xi1> -> tensor<2x2xi1>
  %0 = nn.and %a, %b : tensor<2x2xi1>, tensor<2xi1> -> tensor<2x2xi1>
  // CHECK-NEXT: %1 = nn.or %arg0, %arg1 : tensor<2x2xi1>, tensor<2xi1> -> tensor<2x2xi1>
  %1 = nn.or %a, %b : tensor<2x2xi1>, tensor<2xi1> -> tensor<2x2xi1>
  // CHECK-NEXT: %2 = nn.xor %arg0, %arg1 : tensor<2x2xi1>, tensor<2xi1> -> tensor<2x2xi1>
  %2 = nn.xor %a, %b : tensor<2x2xi1>, tensor<2xi1> -> tensor<2x2xi1>
  // CHECK-NEXT: %3 = nn.not %2 : tensor<2x2xi1> -> tensor<2x2xi1>
  %3 = nn.not %2 : tensor<2x2xi1> -> tensor<2x2xi1>
  return %0, %1, %2, %3 : tensor<2x2xi1>, tensor<2x2xi1>, tensor<2x2xi1>, tensor<2x2xi1>
}

// -----

// Truth tables, folded: rows of %a against the broadcast %b = [true, false].
// FOLD-LABEL: func.func @truth_tables
func.func @truth_tables() -> (tensor<2x2xi1>, tensor<2x2xi1>, tensor<2x2xi1>, tensor<2x2xi1>) {
  %a = nn.constant dense<[[true, true], [false, false]]> : tensor<2x2xi1>
  %b = nn.constant dense<[true, false]> : tensor<2xi1>
  %0 = nn.and %a, %b : tensor<2x2xi1>, tensor<2xi1> -> tensor<2x2xi1>
  %1 = nn.or %a, %b : tensor<2x2xi1>, tensor<2xi1> -> tensor<2x2xi1>
  %2 = nn.xor %a, %b : tensor<2x2xi1>, tensor<2xi1> -> tensor<2x2xi1>
  %3 = nn.not %2 : tensor<2x2xi1> -> tensor<2x2xi1>
  // FOLD-DAG: dense<{{\[\[}}true, false], [false, false]]> : tensor<2x2xi1>
  // FOLD-DAG: dense<{{\[\[}}true, true], [true, false]]> : tensor<2x2xi1>
  // FOLD-DAG: dense<{{\[\[}}false, true], [true, false]]> : tensor<2x2xi1>
  // FOLD-DAG: dense<{{\[\[}}true, false], [false, true]]> : tensor<2x2xi1>
  // FOLD-NOT: nn.and
  // FOLD-NOT: nn.not
  return %0, %1, %2, %3 : tensor<2x2xi1>, tensor<2x2xi1>, tensor<2x2xi1>, tensor<2x2xi1>
}

// -----

// Equal operands are where <= and >= differ from < and >.
// CHECK-LABEL: func.func @ordered
// FOLD-LABEL: func.func @ordered
func.func @ordered() -> (tensor<3xi1>, tensor<3xi1>) {
  %x = nn.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %y = nn.constant dense<2.0> : tensor<f32>
  // CHECK: nn.less_equal %{{.*}}, %{{.*}} : tensor<3xf32>, tensor<f32> -> tensor<3xi1>
  %0 = nn.less_equal %x, %y : tensor<3xf32>, tensor<f32> -> tensor<3xi1>
  // CHECK: nn.greater_equal %{{.*}}, %{{.*}} : tensor<3xf32>, tensor<f32> -> tensor<3xi1>
  %1 = nn.greater_equal %x, %y : tensor<3xf32>, tensor<f32> -> tensor<3xi1>
  // FOLD-DAG: dense<[true, true, false]> : tensor<3xi1>
  // FOLD-DAG: dense<[false, true, true]> : tensor<3xi1>
  return %0, %1 : tensor<3xi1>, tensor<3xi1>
}
