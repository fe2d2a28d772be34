// convert-precision rewrites an nn function to fp16 or fp8; the reference
// executor runs the converted IR as it is, so its numbers are the
// precision's, not f32's.

// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(convert-precision))' | filecheck %s --check-prefix=FP16
// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(convert-precision{precision=fp16 keep-interface=false}))' | filecheck %s --check-prefix=SIG
// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(convert-precision{precision=fp8}))' | filecheck %s --check-prefix=FP8
// RUN: ipu-opt %s --precision fp8 | filecheck %s --check-prefix=FP8
// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(convert-precision{precision=fp8}))' -o %t.fp8.mlir
// RUN: ipu-run %t.fp8.mlir --device reference --function quantized_weights --print-outputs | filecheck %s --check-prefix=RUN8
// RUN: ipu-run %s --device reference --function quantized_weights --precision fp16 --print-outputs | filecheck %s --check-prefix=RUN16
// RUN: ipu-run %t.fp8.mlir --device reference --function quantized_activations --print-outputs | filecheck %s --check-prefix=RUNACT
// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(convert-precision{precision=fp8 fp8-activations=false}))' | filecheck %s --check-prefix=WEIGHTS
// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(convert-precision{precision=fp8 fp8-activations=false}))' -o %t.fp8w.mlir
// RUN: ipu-run %t.fp8w.mlir --device reference --function quantized_activations --print-outputs | filecheck %s --check-prefix=RUNW
// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(convert-precision{precision=fp16 fp8-activations=true}))' | filecheck %s --check-prefix=FP16
// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(convert-precision{precision=fp8 fp8-scales=per-tensor}))' | filecheck %s --check-prefix=OWN
// RUN: not ipu-opt %s --pass-pipeline='builtin.module(func.func(convert-precision{precision=fp8 fp8-scales=per-layer}))' 2>&1 | filecheck %s --check-prefix=BADSCALES
// RUN: not ipu-opt %s --pass-pipeline='builtin.module(func.func(convert-precision{precision=bf16}))' 2>&1 | filecheck %s --check-prefix=BAD
// RUN: ipu-opt %S/Inputs/precision-attributes-invalid.mlir --split-input-file --verify-diagnostics
// RUN: not ipu-opt %S/Inputs/precision-unknown-op.mlir --precision fp16 2>&1 | filecheck %s --check-prefix=OPAQUE
// RUN: not ipu-opt %S/Inputs/precision-nan-weight.mlir --precision fp8 2>&1 | filecheck %s --check-prefix=NAN
// RUN: ipu-opt --list-passes | filecheck %s --check-prefix=LIST
// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(convert-precision{fp8-activations=false precision=fp8}))' --dump-pass-pipeline 2>&1 >/dev/null | filecheck %s --check-prefix=DUMP
// RUN: ipu-opt %s --precision fp8 --mlir-pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=STATS

// An encoder-like function: the interface stays f32 (cast at entry and
// return), every constant and value becomes f16, and the ops whose row
// reductions need it (LayerNorm, softmax, attention) state an f32
// accumulator; the linear does not (its accumulator is the target's).
// FP16-LABEL: func.func @block(%arg0: tensor<2x4xf32>) -> tensor<2x4xf32>
// FP16-NEXT: %[[X:.*]] = nn.cast %arg0 {to = f16} : tensor<2x4xf32> -> tensor<2x4xf16>
// FP16-NEXT: %[[G:.*]] = nn.constant dense<1.000000e+00> : tensor<4xf16>
// FP16-NEXT: %[[W:.*]] = nn.constant dense<{{\[\[}}5.000000e-01, -2.500000e-01, 1.250000e-01, 1.000000e+00]
// FP16-SAME: tensor<4x4xf16>
// FP16-NEXT: %[[LN:.*]] = nn.layer_normalization %[[X]], %[[G]] {acc_type = f32, axis = -1 : i64, epsilon = 1.000000e-06 : f32} : tensor<2x4xf16>, tensor<4xf16> -> tensor<2x4xf16>
// FP16-NEXT: %[[L:.*]] = nn.linear %[[LN]], %[[W]] : tensor<2x4xf16>, tensor<4x4xf16> -> tensor<2x4xf16>
// FP16-NEXT: %[[S:.*]] = nn.softmax %[[L]] {acc_type = f32, axis = -1 : i64} : tensor<2x4xf16> -> tensor<2x4xf16>
// FP16-NEXT: %[[C:.*]] = nn.cast %[[S]] {to = f32} : tensor<2x4xf16> -> tensor<2x4xf32>
// FP16-NEXT: return %[[C]] : tensor<2x4xf32>
func.func @block(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %g = nn.constant dense<1.0> : tensor<4xf32>
  %w = nn.constant dense<[[0.5, -0.25, 0.125, 1.0], [1.0, 0.5, 0.25, 0.125], [0.0, 1.0, 0.0, 1.0], [0.5, 0.5, 0.5, 0.5]]> : tensor<4x4xf32>
  %0 = nn.layer_normalization %x, %g {axis = -1 : i64, epsilon = 1.0e-06 : f32} : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %1 = nn.linear %0, %w : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %2 = nn.softmax %1 {axis = -1 : i64} : tensor<2x4xf32> -> tensor<2x4xf32>
  return %2 : tensor<2x4xf32>
}

// Attention accumulates its softmax in f32 too; a cast to f32 in the model
// (the exporter's no-op casts) becomes a cast to f16 and disappears, and
// integer tensors (the gather indices) stay as they are.
// FP16-LABEL: func.func @attention(
// FP16: nn.attention {{.*}}acc_type = f32
// FP16-NOT: nn.cast {{.*}} -> tensor<1x2x4xf32>
// FP16: nn.gather {{.*}} : tensor<1x2x4xf16>, tensor<1xi64> -> tensor<1x1x4xf16>
func.func @attention(%q: tensor<1x2x4xf32>) -> tensor<1x1x4xf32> {
  %0 = nn.attention %q, %q, %q {heads = 2 : i64} : tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32> -> tensor<1x2x4xf32>
  %1 = nn.cast %0 {to = f32} : tensor<1x2x4xf32> -> tensor<1x2x4xf32>
  %i = nn.constant dense<[1]> : tensor<1xi64>
  %2 = nn.gather %1, %i {axis = 1 : i64} : tensor<1x2x4xf32>, tensor<1xi64> -> tensor<1x1x4xf32>
  return %2 : tensor<1x1x4xf32>
}

// keep-interface=false converts the signature instead of casting.
// SIG-LABEL: func.func @block(%arg0: tensor<2x4xf16>) -> tensor<2x4xf16>
// SIG-NOT: nn.cast
// SIG: return %{{.*}} : tensor<2x4xf16>

// fp8: the linear's constant weights become f8E4M3FNUZ codes with the
// smallest power-of-two scale that keeps max |w| = 1.0 within 240:
// 2^-7 (1.0 * 2^7 = 128), recorded as rhs_scale. The activation it
// multiplies is cast to FP8 at scale 0 right before it (the FP8 AMP takes
// FP8 on both sides, and the reference must quantize as the backend
// does), and the product comes out in f16; the other values stay f16.
// FP8-LABEL: func.func @block(
// FP8: %[[LN:.*]] = nn.layer_normalization {{.*}} -> tensor<2x4xf16>
// FP8-NEXT: %[[Q:.*]] = nn.constant dense<{{\[\[}}6.400000e+01, -3.200000e+01, 1.600000e+01, 1.280000e+02]{{.*}} : tensor<4x4xf8E4M3FNUZ>
// FP8-NEXT: %[[A:.*]] = nn.cast %[[LN]] {to = f8E4M3FNUZ} : tensor<2x4xf16> -> tensor<2x4xf8E4M3FNUZ>
// FP8-NEXT: %[[L:.*]] = nn.linear %[[A]], %[[Q]] {rhs_scale = -7 : i64} : tensor<2x4xf8E4M3FNUZ>, tensor<4x4xf8E4M3FNUZ> -> tensor<2x4xf16>
// FP8-NEXT: nn.softmax %[[L]] {acc_type = f32, axis = -1 : i64} : tensor<2x4xf16> -> tensor<2x4xf16>

// fp8-activations=false: the weights as above, the activation left f16
// (an f16 x FP8 product; whoever runs it on the FP8 AMP quantizes the
// activations outside the IR).
// WEIGHTS-LABEL: func.func @block(
// WEIGHTS-NOT: to = f8E4M3FNUZ
// WEIGHTS: nn.linear %{{.*}}, %{{.*}} {rhs_scale = -7 : i64} : tensor<2x4xf16>, tensor<4x4xf8E4M3FNUZ> -> tensor<2x4xf16>
// WEIGHTS-NOT: to = f8E4M3FNUZ

// An MLP block (LayerNorm, fc1 + bias, GELU, fc2 + bias): each linear's
// activation gets its own cast (the LayerNorm output, then the GELU
// output), the biases stay f16 and join the f16 products, GELU runs on
// the f16 result of fc1.
// FP8-LABEL: func.func @mlp(
// FP8: %[[LN:.*]] = nn.layer_normalization
// FP8-NEXT: %[[W1:.*]] = nn.constant {{.*}} : tensor<4x8xf8E4M3FNUZ>
// FP8-NEXT: %[[A1:.*]] = nn.cast %[[LN]] {to = f8E4M3FNUZ} : tensor<3x4xf16> -> tensor<3x4xf8E4M3FNUZ>
// FP8-NEXT: %[[H:.*]] = nn.linear %[[A1]], %[[W1]], %{{.*}} {rhs_scale = -6 : i64} : tensor<3x4xf8E4M3FNUZ>, tensor<4x8xf8E4M3FNUZ>, tensor<8xf16> -> tensor<3x8xf16>
// FP8-NEXT: %[[G:.*]] = nn.gelu %[[H]] {{.*}}: tensor<3x8xf16> -> tensor<3x8xf16>
// FP8-NEXT: %[[W2:.*]] = nn.constant {{.*}} : tensor<8x4xf8E4M3FNUZ>
// FP8-NEXT: %[[A2:.*]] = nn.cast %[[G]] {to = f8E4M3FNUZ} : tensor<3x8xf16> -> tensor<3x8xf8E4M3FNUZ>
// FP8-NEXT: nn.linear %[[A2]], %[[W2]], %{{.*}} {rhs_scale = -5 : i64} : tensor<3x8xf8E4M3FNUZ>, tensor<8x4xf8E4M3FNUZ>, tensor<4xf16> -> tensor<3x4xf16>
func.func @mlp(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %g = nn.constant dense<1.0> : tensor<4xf32>
  %w1 = nn.constant dense<[[1.0, -2.0, 3.0, 0.5, 1.0, -1.0, 0.25, 2.0], [0.5, 1.0, -0.5, 1.0, 2.0, 1.0, -1.0, 0.5], [2.0, 0.5, 1.0, -3.0, 0.5, 0.25, 1.0, 1.0], [-1.0, 1.0, 0.5, 1.0, -2.0, 3.5, 0.5, 1.5]]> : tensor<4x8xf32>
  %b1 = nn.constant dense<[0.1, 0.2, 0.3, 0.4, -0.1, -0.2, -0.3, -0.4]> : tensor<8xf32>
  %w2 = nn.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 1.0], [-1.0, -2.0, 0.5, 0.25], [1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0], [2.0, 2.0, -2.0, 2.0], [0.5, 0.5, 0.5, 0.5], [1.0, -1.0, 1.0, -1.0]]> : tensor<8x4xf32>
  %b2 = nn.constant dense<[1.0, -1.0, 0.5, -0.5]> : tensor<4xf32>
  %0 = nn.layer_normalization %x, %g {axis = -1 : i64, epsilon = 1.0e-06 : f32} : tensor<3x4xf32>, tensor<4xf32> -> tensor<3x4xf32>
  %1 = nn.linear %0, %w1, %b1 : tensor<3x4xf32>, tensor<4x8xf32>, tensor<8xf32> -> tensor<3x8xf32>
  %2 = nn.gelu %1 {approximate = "tanh"} : tensor<3x8xf32> -> tensor<3x8xf32>
  %3 = nn.linear %2, %w2, %b2 : tensor<3x8xf32>, tensor<8x4xf32>, tensor<4xf32> -> tensor<3x4xf32>
  return %3 : tensor<3x4xf32>
}

// One activation feeding two FP8 contractions (the QKV projections of one
// LayerNorm output) is cast once, before the first, and both use it.
// The two weights have one shape, so by default (fp8-scales=shared) they
// share the larger scale: wk's max |w| = 2.0 needs 2^-6, so wq (max 1.0,
// 2^-7 alone) takes 2^-6 too and its codes are half as large (1.0 -> 64).
// FP8-LABEL: func.func @shared(
// FP8: nn.constant dense<{{\[\[}}6.400000e+01, 3.200000e+01]{{.*}} : tensor<4x2xf8E4M3FNUZ>
// FP8-NEXT: %[[A:.*]] = nn.cast %{{.*}} {to = f8E4M3FNUZ} : tensor<2x4xf16> -> tensor<2x4xf8E4M3FNUZ>
// FP8-NEXT: nn.linear %[[A]], %{{.*}} {rhs_scale = -6 : i64} : tensor<2x4xf8E4M3FNUZ>
// FP8-NOT: to = f8E4M3FNUZ
// FP8: nn.matmul %[[A]], %{{.*}} {rhs_scale = -6 : i64} : tensor<2x4xf8E4M3FNUZ>
// FP8-NOT: to = f8E4M3FNUZ
// fp8-scales=per-tensor: each its own.
// OWN-LABEL: func.func @shared(
// OWN: nn.constant dense<{{\[\[}}1.280000e+02, 6.400000e+01]{{.*}} : tensor<4x2xf8E4M3FNUZ>
// OWN: nn.linear {{.*}} {rhs_scale = -7 : i64}
// OWN: nn.matmul {{.*}} {rhs_scale = -6 : i64}
// BADSCALES: unknown fp8-scales 'per-layer' (choices: shared, per-tensor)
// FP8-LABEL: func.func @activations(
func.func @shared(%x: tensor<2x4xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  %wq = nn.constant dense<[[1.0, 0.5], [0.25, -1.0], [0.5, 0.5], [1.0, 0.0]]> : tensor<4x2xf32>
  %wk = nn.constant dense<[[2.0, 0.5], [0.25, -1.0], [0.5, 0.5], [1.0, 0.0]]> : tensor<4x2xf32>
  %0 = nn.linear %x, %wq : tensor<2x4xf32>, tensor<4x2xf32> -> tensor<2x2xf32>
  %1 = nn.matmul %x, %wk : tensor<2x4xf32>, tensor<4x2xf32> -> tensor<2x2xf32>
  return %0, %1 : tensor<2x2xf32>, tensor<2x2xf32>
}

// A product of two activations has no weights to quantize, so neither
// operand is cast to FP8 either.
// FP8: nn.matmul %{{.*}}, %{{.*}} : tensor<2x4xf16>, tensor<4x2xf16> -> tensor<2x2xf16>
// FP8-NOT: to = f8E4M3FNUZ
// FP8-LABEL: func.func @quantized_weights(
func.func @activations(%a: tensor<2x4xf32>, %b: tensor<4x2xf32>) -> tensor<2x2xf32> {
  %0 = nn.matmul %a, %b : tensor<2x4xf32>, tensor<4x2xf32> -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// The reference executor applies the scale: x = [1, 2] times w = [0.3, 1.0]
// is 2.3 in f32, but 0.3 is the FP8 code 40 at scale 2^-7 (0.3125: the
// codes between 32 and 64 are 4 apart), so the fp8 result is 2.3125. In
// fp16 (0.30004883) it rounds to 2.3008 (f16 steps of 2^-9 near 2.3).
// FP8: nn.constant dense<{{\[\[}}4.000000e+01], [1.280000e+02]]> : tensor<2x1xf8E4M3FNUZ>
// FP8: nn.matmul {{.*}} {rhs_scale = -7 : i64}
// RUN8: output_0 = [2.3125]
// RUN16: output_0 = [2.3008]
func.func @quantized_weights() -> tensor<1x1xf32> {
  %x = nn.constant dense<[[1.0, 2.0]]> : tensor<1x2xf32>
  %w = nn.constant dense<[[0.3], [1.0]]> : tensor<2x1xf32>
  %0 = nn.matmul %x, %w : tensor<1x2xf32>, tensor<2x1xf32> -> tensor<1x1xf32>
  return %0 : tensor<1x1xf32>
}

// The reference executor runs the activation cast: x = [1, 3.3] has the
// FP8 codes [1, 3.25] (steps of 0.25 in [2, 4)), so with the weights
// [0.3125, 1.0] of the case above the fp8 result is 3.5625; with
// fp8-activations=false the f16 3.3 (3.3008) stays and gives 3.6133.
// RUNACT: output_0 = [3.5625]
// RUNW: output_0 = [3.6133]
func.func @quantized_activations() -> tensor<1x1xf32> {
  %x = nn.constant dense<[[1.0, 3.3]]> : tensor<1x2xf32>
  %w = nn.constant dense<[[0.3], [1.0]]> : tensor<2x1xf32>
  %0 = nn.matmul %x, %w : tensor<1x2xf32>, tensor<2x1xf32> -> tensor<1x1xf32>
  return %0 : tensor<1x1xf32>
}

// NAN: precision-nan-weight.mlir:4:8: error: 'nn.constant' op holds a NaN or infinite weight, which no FP8 scale represents
// OPAQUE: precision-unknown-op.mlir:4:8: error: 'test.opaque' op convert-precision converts nn ops only; this op's float tensors cannot be retyped
// BAD: unknown precision 'bf16' (precisions: fp16, fp8)
// LIST: --convert-precision
// LIST-NEXT: precision=<string>
// LIST-NEXT: keep-interface=<bool>
// LIST-NEXT: fp8-activations=<bool>
// LIST-NEXT: fp8-scales=<string>
// The option prints in the pipeline (in declaration order) when it is not
// the default.
// DUMP: builtin.module(func.func(convert-precision{precision=fp8 fp8-activations=false}))

// Seven weights in this file become FP8 (one in @block, two each in @mlp
// and @shared, one each in the two run cases), but only six activation
// casts: @shared's two contractions share one.
// STATS: (S) 7 num-fp8-weights - Weights converted to FP8 with a scale
// STATS-NEXT: (S) 6 num-fp8-activation-casts - Activations cast to FP8 (one per distinct value)
