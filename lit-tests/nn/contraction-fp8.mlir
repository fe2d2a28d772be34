// Contractions of FP8 operands: FP8 is a storage format, so an 8-bit float
// left operand gives an f16 result (the FP8 AMP's products come out in
// f16), and the verifier accepts exactly that; the reference executor
// runs it (f32 accumulation, one rounding to f16).

// RUN: ipu-opt %s | filecheck %s
// RUN: ipu-run %s --device reference --function fp8_linear --print-outputs | filecheck %s --check-prefix=REF
// RUN: ipu-opt %S/Inputs/contraction-fp8-invalid.mlir --split-input-file --verify-diagnostics

// What convert-precision{precision=fp8} emits: FP8 on both sides with the
// weights' scale, an f16 bias, an f16 result; and the same product
// without the bias as nn.matmul.
// CHECK-LABEL: func.func @both_fp8(
// CHECK: nn.linear %{{.*}}, %{{.*}}, %{{.*}} {rhs_scale = -7 : i64} : tensor<2x4xf8E4M3FNUZ>, tensor<4x3xf8E4M3FNUZ>, tensor<3xf16> -> tensor<2x3xf16>
// CHECK: nn.matmul %{{.*}}, %{{.*}} {rhs_scale = -7 : i64} : tensor<2x4xf8E4M3FNUZ>, tensor<4x3xf8E4M3FNUZ> -> tensor<2x3xf16>
func.func @both_fp8(%x: tensor<2x4xf8E4M3FNUZ>, %w: tensor<4x3xf8E4M3FNUZ>, %b: tensor<3xf16>) -> (tensor<2x3xf16>, tensor<2x3xf16>) {
  %0 = nn.linear %x, %w, %b {rhs_scale = -7 : i64} : tensor<2x4xf8E4M3FNUZ>, tensor<4x3xf8E4M3FNUZ>, tensor<3xf16> -> tensor<2x3xf16>
  %1 = nn.matmul %x, %w {rhs_scale = -7 : i64} : tensor<2x4xf8E4M3FNUZ>, tensor<4x3xf8E4M3FNUZ> -> tensor<2x3xf16>
  return %0, %1 : tensor<2x3xf16>, tensor<2x3xf16>
}

// The rule is the left operand's format, whatever the right one's: an FP8
// lhs times f16 gives f16, other 8-bit formats and nn.gemm follow it, and
// an f16 lhs times FP8 weights stays f16 as before.
// CHECK-LABEL: func.func @other_forms(
// CHECK: nn.matmul {{.*}} : tensor<2x4xf8E5M2>, tensor<4x3xf16> -> tensor<2x3xf16>
// CHECK: nn.gemm {{.*}} : tensor<2x4xf8E4M3FN>, tensor<4x3xf8E4M3FN> -> tensor<2x3xf16>
// CHECK: nn.linear {{.*}} : tensor<2x4xf16>, tensor<4x3xf8E4M3FNUZ> -> tensor<2x3xf16>
func.func @other_forms(%a: tensor<2x4xf8E5M2>, %b: tensor<4x3xf16>, %c: tensor<2x4xf8E4M3FN>, %d: tensor<4x3xf8E4M3FN>, %e: tensor<2x4xf16>, %f: tensor<4x3xf8E4M3FNUZ>) -> (tensor<2x3xf16>, tensor<2x3xf16>, tensor<2x3xf16>) {
  %0 = nn.matmul %a, %b : tensor<2x4xf8E5M2>, tensor<4x3xf16> -> tensor<2x3xf16>
  %1 = nn.gemm %c, %d : tensor<2x4xf8E4M3FN>, tensor<4x3xf8E4M3FN> -> tensor<2x3xf16>
  %2 = nn.linear %e, %f {rhs_scale = -2 : i64} : tensor<2x4xf16>, tensor<4x3xf8E4M3FNUZ> -> tensor<2x3xf16>
  return %0, %1, %2 : tensor<2x3xf16>, tensor<2x3xf16>, tensor<2x3xf16>
}

// The reference executor on the converted form: x = [1, 3.3] casts to the
// FP8 codes [1, 3.25] (steps of 0.25 in [2, 4)); the weights are the codes
// [40, 128] at scale 2^-7, i.e. [0.3125, 1.0]; with the bias 0.5 the
// result is 0.3125 + 3.25 + 0.5 = 4.0625, exact in f16. Without the cast
// (f16 3.3 = 3.3008) it would be 4.1133.
// REF: output_0 = [4.0625]
func.func @fp8_linear() -> tensor<1x1xf16> {
  %x = nn.constant dense<[[1.0, 3.3]]> : tensor<1x2xf16>
  %q = nn.cast %x {to = f8E4M3FNUZ} : tensor<1x2xf16> -> tensor<1x2xf8E4M3FNUZ>
  %w = nn.constant dense<[[40.0], [128.0]]> : tensor<2x1xf8E4M3FNUZ>
  %b = nn.constant dense<0.5> : tensor<1xf16>
  %0 = nn.linear %q, %w, %b {rhs_scale = -7 : i64} : tensor<1x2xf8E4M3FNUZ>, tensor<2x1xf8E4M3FNUZ>, tensor<1xf16> -> tensor<1x1xf16>
  return %0 : tensor<1x1xf16>
}
