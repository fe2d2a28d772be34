// RUN: ipu-opt %s --split-input-file | filecheck %s
// RUN: ipu-opt %s --split-input-file --mlir-print-op-generic | ipu-opt --split-input-file | filecheck %s
// RUN: ipu-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(canonicalize))' | filecheck %s --check-prefix=FOLD

// nn.bitcast (ONNX BitCast): custom form, generic round trip, and folding
// on constants (the same bytes read as the new type).

// CHECK-LABEL: func.func @views
func.func @views(%x: tensor<3xf32>, %b: tensor<4xi1>) -> (tensor<3xi32>, tensor<4xui8>) {
  // CHECK-NEXT: %0 = nn.bitcast %arg0 {to = i32} : tensor<3xf32> -> tensor<3xi32>
  %0 = nn.bitcast %x {to = i32} : tensor<3xf32> -> tensor<3xi32>
  // A bool is the byte ONNX stores it in.
  // CHECK-NEXT: %1 = nn.bitcast %arg1 {to = ui8} : tensor<4xi1> -> tensor<4xui8>
  %1 = nn.bitcast %b {to = ui8} : tensor<4xi1> -> tensor<4xui8>
  return %0, %1 : tensor<3xi32>, tensor<4xui8>
}

// -----

// 1.0f is 0x3F800000 and -2.0f 0xC0000000; -1 as i16 is 65535 as ui16; a
// bitcast to the operand's own type is the operand.
// FOLD-LABEL: func.func @folded
func.func @folded(%x: tensor<2xf32>) -> (tensor<2xi32>, tensor<2xui16>, tensor<2xf32>) {
  %c = nn.constant dense<[1.0, -2.0]> : tensor<2xf32>
  %0 = nn.bitcast %c {to = i32} : tensor<2xf32> -> tensor<2xi32>
  %s = nn.constant dense<[-1, 2]> : tensor<2xi16>
  %1 = nn.bitcast %s {to = ui16} : tensor<2xi16> -> tensor<2xui16>
  %2 = nn.bitcast %x {to = f32} : tensor<2xf32> -> tensor<2xf32>
  // FOLD-DAG: dense<[1065353216, -1073741824]> : tensor<2xi32>
  // FOLD-DAG: dense<[65535, 2]> : tensor<2xui16>
  // FOLD-NOT: nn.bitcast
  // FOLD: return %{{.*}}, %{{.*}}, %arg0
  return %0, %1, %2 : tensor<2xi32>, tensor<2xui16>, tensor<2xf32>
}
