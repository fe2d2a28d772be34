// RUN: ipu-opt %s --split-input-file | filecheck %s
// RUN: ipu-opt %s --split-input-file --mlir-print-op-generic | ipu-opt --split-input-file | filecheck %s
// RUN: ipu-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(canonicalize))' | filecheck %s --check-prefix=FOLD

// The bit operations ONNX BitwiseAnd/Or/Xor/Not and BitShift import to:
// custom form, generic round trip, and folding on constants, where values
// wrap to the element width.

// CHECK-LABEL: func.func @bitwise
func.func @bitwise(%a: tensor<2x3xui8>, %b: tensor<3xui8>) -> (tensor<2x3xui8>, tensor<2x3xui8>, tensor<2x3xui8>) {
  // CHECK-NEXT: %0 = nn.bitwise_and %arg0, %arg1 : tensor<2x3xui8>, tensor<3xui8> -> tensor<2x3xui8>
  %0 = nn.bitwise_and %a, %b : tensor<2x3xui8>, tensor<3xui8> -> tensor<2x3xui8>
  // CHECK-NEXT: %1 = nn.shift_left %0, %arg1 : tensor<2x3xui8>, tensor<3xui8> -> tensor<2x3xui8>
  %1 = nn.shift_left %0, %b : tensor<2x3xui8>, tensor<3xui8> -> tensor<2x3xui8>
  // CHECK-NEXT: %2 = nn.bitwise_not %1 : tensor<2x3xui8> -> tensor<2x3xui8>
  %2 = nn.bitwise_not %1 : tensor<2x3xui8> -> tensor<2x3xui8>
  return %0, %1, %2 : tensor<2x3xui8>, tensor<2x3xui8>, tensor<2x3xui8>
}

// -----

// Unsigned: the left shift drops bits past 8, the right shift is logical,
// not flips all eight bits.
// FOLD-LABEL: func.func @unsigned
func.func @unsigned() -> (tensor<3xui8>, tensor<3xui8>, tensor<3xui8>, tensor<3xui8>) {
  %x = nn.constant dense<[200, 3, 255]> : tensor<3xui8>
  %s = nn.constant dense<[1, 2, 8]> : tensor<3xui8>
  %0 = nn.shift_left %x, %s : tensor<3xui8>, tensor<3xui8> -> tensor<3xui8>
  %1 = nn.shift_right %x, %s : tensor<3xui8>, tensor<3xui8> -> tensor<3xui8>
  %2 = nn.bitwise_not %x : tensor<3xui8> -> tensor<3xui8>
  %3 = nn.bitwise_xor %x, %s : tensor<3xui8>, tensor<3xui8> -> tensor<3xui8>
  // FOLD-DAG: dense<[144, 12, 0]> : tensor<3xui8>
  // FOLD-DAG: dense<[100, 0, 0]> : tensor<3xui8>
  // FOLD-DAG: dense<[55, 252, 0]> : tensor<3xui8>
  // FOLD-DAG: dense<[201, 1, 247]> : tensor<3xui8>
  // FOLD-NOT: nn.shift
  return %0, %1, %2, %3 : tensor<3xui8>, tensor<3xui8>, tensor<3xui8>, tensor<3xui8>
}

// -----

// Signed: and/or of negative values in two's complement.
// FOLD-LABEL: func.func @signed
func.func @signed() -> (tensor<2xi16>, tensor<2xi16>) {
  %x = nn.constant dense<[-1, -256]> : tensor<2xi16>
  %y = nn.constant dense<[255, 15]> : tensor<2xi16>
  %0 = nn.bitwise_and %x, %y : tensor<2xi16>, tensor<2xi16> -> tensor<2xi16>
  %1 = nn.bitwise_or %x, %y : tensor<2xi16>, tensor<2xi16> -> tensor<2xi16>
  // FOLD-DAG: dense<[255, 0]> : tensor<2xi16>
  // FOLD-DAG: dense<[-1, -241]> : tensor<2xi16>
  return %0, %1 : tensor<2xi16>, tensor<2xi16>
}
