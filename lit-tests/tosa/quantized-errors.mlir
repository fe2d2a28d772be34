// Non-zero zero points mean quantized arithmetic nn does not model: the op
// is refused with the reason, at its location.
// REQUIRES: upstream-mlir
// RUN: not ipu-opt %s --upstream --convert-tosa-to-nn 2>&1 | filecheck %s

// CHECK: quantized-errors.mlir:[[@LINE+4]]:8: error: 'tosa.negate': the input zero point must be a constant zero (quantized TOSA is not supported)
func.func @main(%x: tensor<4xi8>) -> tensor<4xi8> {
  %zp = "tosa.const"() {values = dense<3> : tensor<1xi8>} : () -> tensor<1xi8>
  %z0 = "tosa.const"() {values = dense<0> : tensor<1xi8>} : () -> tensor<1xi8>
  %r = tosa.negate %x, %zp, %z0 : (tensor<4xi8>, tensor<1xi8>, tensor<1xi8>) -> tensor<4xi8>
  return %r : tensor<4xi8>
}
