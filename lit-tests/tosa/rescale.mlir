// tosa.rescale of signed integers with zero points 0 and one multiplier
// and shift is exact i64 arithmetic in nn: a whole scale (2^shift divides
// the multiplier) is a product, any other scale rounds half up through an
// exact floor division by 2^shift; then the clamp to the output type.
// Values: the TOSA specification's apply_scale_32 on Python integers.
// REQUIRES: upstream-mlir
// RUN: ipu-opt %s --upstream --convert-tosa-to-nn | filecheck %s
// RUN: ipu-run %s --device reference --upstream --print-outputs | filecheck %s --check-prefix=VALUES

// CHECK-LABEL: func.func @main
// Scale 3 * 2^-1 = 1.5, rounding half up: -383 >> 1 = -192.
// CHECK: nn.cast {{.*}} : tensor<9xi8> -> tensor<9xi64>
// CHECK: nn.mul
// CHECK: nn.add
// CHECK: nn.mod
// CHECK: nn.sub
// CHECK: nn.div
// CHECK: nn.min
// CHECK: nn.max
// CHECK: nn.cast {{.*}} : tensor<9xi64> -> tensor<9xi32>
// CHECK-NOT: tosa.
// VALUES: output_0 = [-192.0000, -10.0000, -3.0000, -1.0000, 0.0000, 2.0000, 3.0000, 8.0000, 191.0000]
// Scale 2^30 * 2^-28 = 4 into i8: saturates at both ends.
// VALUES: output_1 = [-128.0000, -28.0000, -8.0000, -4.0000, 0.0000, 4.0000, 8.0000, 20.0000, 127.0000]
// Scale 2^-2, a rounding right shift: -7 / 4 = -1.75 rounds to -2, 2 / 4 = 0.5 up to 1.
// VALUES: output_2 = [-32.0000, -2.0000, 0.0000, 0.0000, 0.0000, 0.0000, 1.0000, 1.0000, 32.0000]
func.func @main() -> (tensor<9xi32>, tensor<9xi8>, tensor<9xi16>) {
  %x = "tosa.const"() {values = dense<[-128, -7, -2, -1, 0, 1, 2, 5, 127]> : tensor<9xi8>} : () -> tensor<9xi8>
  %z8 = "tosa.const"() {values = dense<0> : tensor<1xi8>} : () -> tensor<1xi8>
  %z16 = "tosa.const"() {values = dense<0> : tensor<1xi16>} : () -> tensor<1xi16>
  %z32 = "tosa.const"() {values = dense<0> : tensor<1xi32>} : () -> tensor<1xi32>
  %m3 = "tosa.const"() {values = dense<3> : tensor<1xi32>} : () -> tensor<1xi32>
  %s1 = "tosa.const"() {values = dense<1> : tensor<1xi8>} : () -> tensor<1xi8>
  %0 = tosa.rescale %x, %m3, %s1, %z8, %z32 {input_unsigned = false, output_unsigned = false, per_channel = false, rounding_mode = SINGLE_ROUND, scale32 = true} : (tensor<9xi8>, tensor<1xi32>, tensor<1xi8>, tensor<1xi8>, tensor<1xi32>) -> tensor<9xi32>
  %m4 = "tosa.const"() {values = dense<1073741824> : tensor<1xi32>} : () -> tensor<1xi32>
  %s28 = "tosa.const"() {values = dense<28> : tensor<1xi8>} : () -> tensor<1xi8>
  %1 = tosa.rescale %x, %m4, %s28, %z8, %z8 {input_unsigned = false, output_unsigned = false, per_channel = false, rounding_mode = INEXACT_ROUND, scale32 = true} : (tensor<9xi8>, tensor<1xi32>, tensor<1xi8>, tensor<1xi8>, tensor<1xi8>) -> tensor<9xi8>
  %m1 = "tosa.const"() {values = dense<1> : tensor<1xi16>} : () -> tensor<1xi16>
  %s2 = "tosa.const"() {values = dense<2> : tensor<1xi8>} : () -> tensor<1xi8>
  %2 = tosa.rescale %x, %m1, %s2, %z8, %z16 {input_unsigned = false, output_unsigned = false, per_channel = false, rounding_mode = DOUBLE_ROUND, scale32 = false} : (tensor<9xi8>, tensor<1xi16>, tensor<1xi8>, tensor<1xi8>, tensor<1xi16>) -> tensor<9xi16>
  return %0, %1, %2 : tensor<9xi32>, tensor<9xi8>, tensor<9xi16>
}
