// The element types ONNX stores but defines no arithmetic on (INT4, UINT4,
// INT2, UINT2, FLOAT4E2M1, FLOAT8E8M0) use upstream MLIR's spellings, so that
// what ipuc prints stays what upstream parses. The CHECK lines are upstream
// mlir-opt 22's printout of this file: ipuc must round-trip to the same text,
// including the rounding of literals (f4E2M1FN to nearest even and saturating,
// f8E8M0FNU to the nearest power of two with ties up, NaN printed as 0xFF) and
// the one-byte-per-element hex form of sub-byte integers.
// RUN: ipu-opt %s --allow-unregistered-dialect | filecheck %s
// RUN: ipu-opt %s --allow-unregistered-dialect | ipu-opt --allow-unregistered-dialect | filecheck %s
// RUN: ipu-opt %s --allow-unregistered-dialect --mlir-print-op-generic | filecheck %s

// CHECK: "test.types"() {a = i4, b = ui4, c = i2, d = ui2, e = f4E2M1FN, f = f8E8M0FNU, g = tensor<3x?xf4E2M1FN>} : () -> ()
"test.types"() {a = i4, b = ui4, c = i2, d = ui2, e = f4E2M1FN, f = f8E8M0FNU, g = tensor<3x?xf4E2M1FN>} : () -> ()

// CHECK: "test.dense"() {e = dense<[1.000000e+00, 1.250000e-01, 2.000000e+00, 4.000000e+00, 1.000000e+00, 0xFF]> : tensor<6xf8E8M0FNU>, f = dense<[5.000000e-01, -6.000000e+00, 1.500000e+00, 0.000000e+00, 4.000000e+00, 6.000000e+00]> : tensor<6xf4E2M1FN>, h = dense<[-1, 7]> : tensor<2xi4>, q = dense<[-8, -1, 0, 7]> : tensor<4xi4>, u = dense<[0, 3]> : tensor<2xui2>} : () -> ()
"test.dense"() {q = dense<[-8, -1, 0, 7]> : tensor<4xi4>, u = dense<[0, 3]> : tensor<2xui2>, f = dense<[0.5, -6.0, 1.5, 0.0, 5.0, 100.0]> : tensor<6xf4E2M1FN>, e = dense<[1.0, 0.125, 2.0, 3.0, 0x7F, 0xFF]> : tensor<6xf8E8M0FNU>, h = dense<"0x0F07"> : tensor<2xi4>} : () -> ()

// Ties: f4E2M1FN 0.25 -> 0, 0.75 -> 1, 1.25 -> 1, 1.75 -> 2, 2.5 -> 2, 3.5 -> 4,
// 5 -> 4, 7 -> 6 (saturated), -0.25 -> -0; f8E8M0FNU 3 -> 4, 1.5 -> 2, 0.75 -> 1.
// CHECK: "test.ties"() {e = dense<[4.000000e+00, 8.000000e+00, 1.600000e+01, 2.000000e+00, 2.000000e+00, 1.000000e+00]> : tensor<6xf8E8M0FNU>, f = dense<[0.000000e+00, 1.000000e+00, 1.000000e+00, 2.000000e+00, 2.000000e+00, 4.000000e+00, 4.000000e+00, 6.000000e+00, -0.000000e+00, 6.000000e+00, 5.000000e-01]> : tensor<11xf4E2M1FN>} : () -> ()
"test.ties"() {f = dense<[0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 7.0, -0.25, 5.5, 0.26]> : tensor<11xf4E2M1FN>, e = dense<[3.0, 6.0, 12.0, 1.5, 2.9, 0.75]> : tensor<6xf8E8M0FNU>} : () -> ()
