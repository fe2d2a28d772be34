// RUN: ipu-opt %s --split-input-file --verify-diagnostics

// What the nn.bitcast verifier refuses, each with the reason.

func.func @width(%x: tensor<3xf32>) -> tensor<3xi64> {
  // expected-error @+1 {{'nn.bitcast' op 'f32' (32 bits) and 'i64' (64 bits) must have the same width}}
  %0 = nn.bitcast %x {to = i64} : tensor<3xf32> -> tensor<3xi64>
  return %0 : tensor<3xi64>
}

// -----

func.func @to_bool(%x: tensor<3xi8>) -> tensor<3xi1> {
  // expected-error @+1 {{'nn.bitcast' op a bitcast to 'i1' needs an 'i1' operand}}
  %0 = nn.bitcast %x {to = i1} : tensor<3xi8> -> tensor<3xi1>
  return %0 : tensor<3xi1>
}

// -----

func.func @index(%x: tensor<3xindex>) -> tensor<3xi64> {
  // expected-error @+1 {{'nn.bitcast' op operand and 'to' must be integer or float types, but got 'index' and 'i64'}}
  %0 = nn.bitcast %x {to = i64} : tensor<3xindex> -> tensor<3xi64>
  return %0 : tensor<3xi64>
}

// -----

func.func @shape(%x: tensor<3xf32>) -> tensor<4xi32> {
  // expected-error @+1 {{'nn.bitcast' op}}
  %0 = nn.bitcast %x {to = i32} : tensor<3xf32> -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// ONNX's BitCast counts a 4-bit element as four bits, though it takes a byte.
func.func @sub_byte_width(%x: tensor<3xi4>) -> tensor<3xi8> {
  // expected-error @+1 {{'nn.bitcast' op 'i4' (4 bits) and 'i8' (8 bits) must have the same width}}
  %0 = nn.bitcast %x {to = i8} : tensor<3xi4> -> tensor<3xi8>
  return %0 : tensor<3xi8>
}
