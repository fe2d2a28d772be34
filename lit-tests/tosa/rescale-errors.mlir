// tosa.rescale that is not a pure integer scale is refused at its location
// with the reason: quantized zero points, per-channel scales, unsigned
// values, and rounding that is left to the implementation.
// REQUIRES: upstream-mlir
// RUN: not ipu-opt %s --split-input-file --upstream --convert-tosa-to-nn 2>&1 | filecheck %s

// CHECK: rescale-errors.mlir:[[@LINE+4]]:8: error: 'tosa.rescale': the input zero point must be a constant zero (quantized TOSA is not supported)
func.func @main(%x: tensor<4xi8>, %m: tensor<1xi32>, %s: tensor<1xi8>) -> tensor<4xi32> {
  %zp = "tosa.const"() {values = dense<3> : tensor<1xi8>} : () -> tensor<1xi8>
  %z32 = "tosa.const"() {values = dense<0> : tensor<1xi32>} : () -> tensor<1xi32>
  %r = tosa.rescale %x, %m, %s, %zp, %z32 {input_unsigned = false, output_unsigned = false, per_channel = false, rounding_mode = SINGLE_ROUND, scale32 = true} : (tensor<4xi8>, tensor<1xi32>, tensor<1xi8>, tensor<1xi8>, tensor<1xi32>) -> tensor<4xi32>
  return %r : tensor<4xi32>
}

// -----

// CHECK: rescale-errors.mlir:[[@LINE+6]]:8: error: 'tosa.rescale': per-channel multipliers are not supported (one scale for the whole tensor is)
func.func @main(%x: tensor<1x2xi8>) -> tensor<1x2xi32> {
  %m = "tosa.const"() {values = dense<[3, 5]> : tensor<2xi32>} : () -> tensor<2xi32>
  %s = "tosa.const"() {values = dense<[1, 1]> : tensor<2xi8>} : () -> tensor<2xi8>
  %z8 = "tosa.const"() {values = dense<0> : tensor<1xi8>} : () -> tensor<1xi8>
  %z32 = "tosa.const"() {values = dense<0> : tensor<1xi32>} : () -> tensor<1xi32>
  %r = tosa.rescale %x, %m, %s, %z8, %z32 {input_unsigned = false, output_unsigned = false, per_channel = true, rounding_mode = SINGLE_ROUND, scale32 = true} : (tensor<1x2xi8>, tensor<2xi32>, tensor<2xi8>, tensor<1xi8>, tensor<1xi32>) -> tensor<1x2xi32>
  return %r : tensor<1x2xi32>
}

// -----

// CHECK: rescale-errors.mlir:[[@LINE+6]]:8: error: 'tosa.rescale' with input_unsigned = true is not supported (signed values are)
func.func @main(%x: tensor<4xi8>) -> tensor<4xi32> {
  %m = "tosa.const"() {values = dense<3> : tensor<1xi32>} : () -> tensor<1xi32>
  %s = "tosa.const"() {values = dense<1> : tensor<1xi8>} : () -> tensor<1xi8>
  %z8 = "tosa.const"() {values = dense<0> : tensor<1xi8>} : () -> tensor<1xi8>
  %z32 = "tosa.const"() {values = dense<0> : tensor<1xi32>} : () -> tensor<1xi32>
  %r = tosa.rescale %x, %m, %s, %z8, %z32 {input_unsigned = true, output_unsigned = false, per_channel = false, rounding_mode = SINGLE_ROUND, scale32 = true} : (tensor<4xi8>, tensor<1xi32>, tensor<1xi8>, tensor<1xi8>, tensor<1xi32>) -> tensor<4xi32>
  return %r : tensor<4xi32>
}

// -----

// CHECK: rescale-errors.mlir:[[@LINE+6]]:8: error: 'tosa.rescale': INEXACT_ROUND with multiplier 3 and shift 1 is not supported (SINGLE_ROUND is, DOUBLE_ROUND up to shift 31, and any mode for a whole scale)
func.func @main(%x: tensor<4xi8>) -> tensor<4xi32> {
  %m = "tosa.const"() {values = dense<3> : tensor<1xi32>} : () -> tensor<1xi32>
  %s = "tosa.const"() {values = dense<1> : tensor<1xi8>} : () -> tensor<1xi8>
  %z8 = "tosa.const"() {values = dense<0> : tensor<1xi8>} : () -> tensor<1xi8>
  %z32 = "tosa.const"() {values = dense<0> : tensor<1xi32>} : () -> tensor<1xi32>
  %r = tosa.rescale %x, %m, %s, %z8, %z32 {input_unsigned = false, output_unsigned = false, per_channel = false, rounding_mode = INEXACT_ROUND, scale32 = true} : (tensor<4xi8>, tensor<1xi32>, tensor<1xi8>, tensor<1xi8>, tensor<1xi32>) -> tensor<4xi32>
  return %r : tensor<4xi32>
}
