// nn.cast into and out of the storage-only element types, run on the
// reference executor. The expected values are ONNX's reference Cast (onnx
// 1.23: ml_dtypes for int4/uint2/float4_e2m1fn, onnx.numpy_helper.to_float8e8m0
// for each round_mode) on the same inputs:
// - float -> i4/ui2 truncates and wraps (-9 -> 7, 15.5 -> -1, 100 -> 4);
// - float -> f4E2M1FN rounds to nearest even and saturates at 6;
// - float -> f8E8M0FNU goes through f32 and rounds up (default), down or to
//   nearest (ties up); 1e-40 is an f32 subnormal: 2^-126 up, 2^-127 otherwise.
// The folder must agree where it folds (f4E2M1FN; float -> int casts out of
// range are undefined in ONNX and left to the executor; f8E8M0FNU depends on
// round_mode and is not folded).
// RUN: ipu-run %s --device reference --print-outputs | filecheck %s
// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(canonicalize))' | filecheck %s --check-prefix=FOLD

// CHECK: output_0 = [7.0000, -8.0000, -2.0000, 7.0000, -8.0000, -1.0000, 4.0000, 0.0000]
// CHECK: output_1 = [3.0000, 0.0000, 2.0000, 3.0000, 0.0000, 3.0000, 0.0000, 0.0000]
// CHECK: output_2 = [0.0000, 1.0000, 1.0000, 4.0000, 6.0000, -6.0000, 6.0000, -0.0000]
// CHECK: output_3 = [0.1250, 2.0000, 2.0000, 4.0000, 4.0000, 0.0000]
// CHECK: output_4 = [0.0625, 1.0000, 1.0000, 2.0000, 2.0000, 0.0000]
// CHECK: output_5 = [0.1250, 1.0000, 2.0000, 2.0000, 4.0000, 0.0000]
// CHECK: output_6 = [-8.0000, -1.0000, 3.0000, 7.0000]
// CHECK: output_7 = [64.0000, 128.0000]
// CHECK: output_8 = [8.0000, 15.0000, 3.0000, 7.0000]

// FOLD: nn.cast %{{.*}} {to = i4}
// FOLD: nn.constant dense<[0.000000e+00, 1.000000e+00, 1.000000e+00, 4.000000e+00, 6.000000e+00, -6.000000e+00, 6.000000e+00, -0.000000e+00]> : tensor<8xf4E2M1FN>
// FOLD: nn.cast %{{.*}} {to = f8E8M0FNU}
// FOLD: nn.constant dense<[-8.000000e+00, -1.000000e+00, 3.000000e+00, 7.000000e+00]> : tensor<4xf32>
func.func @main() -> (tensor<8xi4>, tensor<8xui2>, tensor<8xf4E2M1FN>, tensor<6xf8E8M0FNU>, tensor<6xf8E8M0FNU>, tensor<6xf8E8M0FNU>, tensor<4xf32>, tensor<2xf32>, tensor<4xf32>) {
  %x = nn.constant dense<[-9.0, -8.0, -2.7, 7.5, 8.0, 15.5, 100.0, 0.4]> : tensor<8xf32>
  %0 = nn.cast %x {to = i4} : tensor<8xf32> -> tensor<8xi4>
  %1 = nn.cast %x {to = ui2} : tensor<8xf32> -> tensor<8xui2>
  %f = nn.constant dense<[0.25, 0.75, 1.25, 5.0, 5.5, -7.0, 1.0e6, -0.1]> : tensor<8xf32>
  %2 = nn.cast %f {to = f4E2M1FN} : tensor<8xf32> -> tensor<8xf4E2M1FN>
  %e = nn.constant dense<[0.124, 1.1, 1.5, 2.9, 3.0, 1.0e-40]> : tensor<6xf32>
  %3 = nn.cast %e {to = f8E8M0FNU} : tensor<6xf32> -> tensor<6xf8E8M0FNU>
  %4 = nn.cast %e {to = f8E8M0FNU, round_mode = "down"} : tensor<6xf32> -> tensor<6xf8E8M0FNU>
  %5 = nn.cast %e {to = f8E8M0FNU, round_mode = "nearest"} : tensor<6xf32> -> tensor<6xf8E8M0FNU>
  %q = nn.constant dense<[-8, -1, 3, 7]> : tensor<4xi4>
  %6 = nn.cast %q {to = f32} : tensor<4xi4> -> tensor<4xf32>
  // Integers into f8E8M0FNU go through f32 too: 64 stays, 96 rounds up to 128.
  %b = nn.constant dense<[64, 96]> : tensor<2xui8>
  %s = nn.cast %b {to = f8E8M0FNU} : tensor<2xui8> -> tensor<2xf8E8M0FNU>
  %7 = nn.cast %s {to = f32} : tensor<2xf8E8M0FNU> -> tensor<2xf32>
  // nn.bitcast reinterprets the four bits: two's complement -8 is 8 unsigned.
  %u = nn.bitcast %q {to = ui4} : tensor<4xi4> -> tensor<4xui4>
  %8 = nn.cast %u {to = f32} : tensor<4xui4> -> tensor<4xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<8xi4>, tensor<8xui2>, tensor<8xf4E2M1FN>, tensor<6xf8E8M0FNU>, tensor<6xf8E8M0FNU>, tensor<6xf8E8M0FNU>, tensor<4xf32>, tensor<2xf32>, tensor<4xf32>
}
